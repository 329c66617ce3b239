//! Shared test support: the JDK 17 class corpus, extracted once with `jimage extract` into
//! <workspace>/target/corpus/jdk17 (atomically renamed into place).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn java_home() -> PathBuf {
    if let Ok(h) = std::env::var("JAVA_HOME") {
        let p = PathBuf::from(h);
        if p.join("bin/jimage").exists() {
            return p;
        }
    }
    PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64")
}

/// Cache directory name for an image: keyed by the `modules` file's size and mtime, so a JDK
/// update (apt upgrades it in place) gets a fresh extraction.
fn image_dir(jh: &Path, prefix: &str) -> PathBuf {
    let m = std::fs::metadata(jh.join("lib/modules")).expect("JDK lib/modules");
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    workspace()
        .join("target/corpus")
        .join(format!("{prefix}-{}-{mtime}", m.len()))
}

/// The extracted JDK image (dir/<module>/<pkg>/X.class). `target/corpus/jdk17` is kept as a
/// symlink to the current extraction for scripts and benches. Tests of one binary run as
/// threads: the first call extracts, the others wait for it.
pub fn jdk_corpus() -> PathBuf {
    static ONCE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(make_jdk_corpus).clone()
}

fn make_jdk_corpus() -> PathBuf {
    let jh = java_home();
    let root = workspace().join("target/corpus");
    let dst = image_dir(&jh, "jdk17");
    if !dst.exists() {
        extract(&jh, &root, &dst);
    }
    let link = root.join("jdk17");
    if std::fs::read_link(&link).ok().as_deref() != Some(dst.as_path()) {
        let tmp_link = root.join(format!("jdk17-link-{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp_link);
        if std::os::unix::fs::symlink(&dst, &tmp_link).is_ok() {
            if link.is_dir() && std::fs::read_link(&link).is_err() {
                let _ = std::fs::remove_dir_all(&link);
            }
            let _ = std::fs::rename(&tmp_link, &link);
        }
    }
    dst
}

fn extract(jh: &Path, root: &Path, dst: &Path) {
    std::fs::create_dir_all(root).unwrap();
    let tmp = root.join(format!(
        "tmp-{}-{}",
        std::process::id(),
        dst.file_name().and_then(|n| n.to_str()).unwrap_or("x")
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    let st = Command::new(jh.join("bin/jimage"))
        .arg("extract")
        .arg("--dir")
        .arg(&tmp)
        .arg(jh.join("lib/modules"))
        .status()
        .expect("run jimage");
    assert!(st.success(), "jimage extract failed");
    if std::fs::rename(&tmp, dst).is_err() {
        // Another test won the race.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    assert!(dst.exists());
}

/// The Temurin JDK 25 home, if this machine has one (optional extra tests: class files 69.0).
pub fn jdk25_home() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64");
    p.join("bin/jimage").exists().then_some(p)
}

/// The extracted JDK 25 image, when JDK 25 is installed.
pub fn jdk25_corpus() -> Option<PathBuf> {
    static ONCE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    ONCE.get_or_init(make_jdk25_corpus).clone()
}

fn make_jdk25_corpus() -> Option<PathBuf> {
    let jh = jdk25_home()?;
    let root = workspace().join("target/corpus");
    let dst = image_dir(&jh, "jdk25");
    if !dst.exists() {
        extract(&jh, &root, &dst);
    }
    Some(dst)
}

/// Every .class file under `dir`, sorted.
pub fn class_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "class") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}
