#![allow(dead_code)]
use std::path::{Path, PathBuf};

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Return the path if it exists; otherwise skip loudly (None) outside CI, fail under CI.
pub fn require(path: &Path, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path.to_path_buf());
    }
    if in_ci() {
        panic!(
            "{what} missing at {} (CI=true: install verify/ci-packages.txt)",
            path.display()
        );
    }
    eprintln!(
        "\n!!!!!! SKIPPING: {what} not found at {} (install verify/ci-packages.txt) !!!!!!\n",
        path.display()
    );
    None
}

pub fn java_home() -> Option<PathBuf> {
    bci_verify::hierarchy::find_java_home()
}

/// `<workspace>/target/corpus/jdk17`, made with `jimage extract` into a temp dir and renamed atomically
/// (once per test process; another process or crate may win the rename race, which is fine).
pub fn jdk_corpus() -> Option<PathBuf> {
    static ONCE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    ONCE.get_or_init(make_jdk_corpus).clone()
}

fn make_jdk_corpus() -> Option<PathBuf> {
    let dest = workspace().join("target/corpus/jdk17");
    if dest.is_dir() {
        return Some(dest);
    }
    let home = match java_home() {
        Some(h) => h,
        None => {
            require(Path::new("/usr/lib/jvm/java-17-openjdk-amd64"), "JDK 17")?;
            return None;
        }
    };
    let base = workspace().join("target/corpus");
    std::fs::create_dir_all(&base).unwrap();
    let tmp = base.join(format!("tmp-verify-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let st = std::process::Command::new(home.join("bin/jimage"))
        .arg("extract")
        .arg("--dir")
        .arg(&tmp)
        .arg(home.join("lib/modules"))
        .status()
        .expect("run jimage");
    assert!(st.success(), "jimage extract failed");
    if std::fs::rename(&tmp, &dest).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    assert!(dest.is_dir());
    Some(dest)
}

/// The two third-party jars the tests use (Debian's libguava-java and rhino), or None (skipped
/// loudly; a failure under CI=true).
pub fn guava_and_rhino() -> Option<(PathBuf, PathBuf)> {
    let guava = require(
        Path::new("/usr/share/java/guava.jar"),
        "guava (libguava-java)",
    )?;
    let rhino = require(Path::new("/usr/share/java/js.jar"), "rhino (librhino-java)")?;
    Some((guava, rhino))
}
