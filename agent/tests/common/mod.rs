//! Helpers the agent's integration tests share: the repository, JDK tools, the agent cdylib
//! and scratch directories.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A JDK 17 home: $JAVA_HOME if it has bin/java, else Debian's.
pub fn jdk17() -> PathBuf {
    match std::env::var("JAVA_HOME") {
        Ok(h) if Path::new(&h).join("bin/java").exists() => PathBuf::from(h),
        _ => PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64"),
    }
}

/// The Temurin JDK 25 home, None (the test skips, said on stderr) where it is not installed.
pub fn jdk25() -> Option<PathBuf> {
    let jdk = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64");
    if jdk.join("bin/java").exists() {
        Some(jdk)
    } else {
        eprintln!("skipped: no JDK 25 at {}", jdk.display());
        None
    }
}

/// A JDK tool (java, javac …): $JAVA_HOME/bin, Debian's JDK 17, else the PATH.
pub fn jdk_tool(name: &str) -> PathBuf {
    let p = jdk17().join("bin").join(name);
    if p.exists() {
        p
    } else {
        PathBuf::from(name)
    }
}

/// The cdylib in the test binary's target directory. `cargo test` builds only the rlib for
/// integration tests, so the first call runs `cargo build --lib` for the same profile and
/// target directory (a no-op when up to date).
pub fn agent_lib() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap();
        let target_dir = profile_dir.parent().unwrap();
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--lib", "-p", "bci-agent"])
            .env("CARGO_TARGET_DIR", target_dir);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let o = cmd.output().unwrap();
        let p = profile_dir.join("libbciagent.so");
        // a failed build with an existing library (a sibling crate mid-edit) still tests it
        assert!(
            o.status.success() || p.exists(),
            "cargo build: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        p
    })
    .clone()
}

/// A fresh scratch directory `bciagent-<tag>-<pid>-<name>` under the temp dir. A failed test
/// leaves its directory for a look; the first call of each test process removes the
/// directories of test processes that are gone (a full test run made ~1,100 of them).
pub fn tmp(tag: &str, name: &str) -> PathBuf {
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| sweep_scratch(&std::env::temp_dir()));
    let d = std::env::temp_dir().join(format!("bciagent-{tag}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The pid a scratch directory name `bciagent-<tag>-<pid>-<name>` holds: its first part of
/// digits only (tags and names may have digits, never a part of digits alone before the pid).
pub fn scratch_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("bciagent-")?;
    rest.split('-')
        .find(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
}

/// Removes the scratch directories under `root` whose test process no longer runs.
pub fn sweep_scratch(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(scratch_pid) else {
            continue;
        };
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// test-classes/redefine compiled into `dir`: the programs (`Redef`, `Reread`, the first `Target`) into
/// `dir/classes`, the second version of `Target` into `dir/v2` (Redef's argument), and the java
/// agent that gives Redef its Instrumentation into `dir/redef-agent.jar` (built with the JDK's
/// `jar`). Returns (classes, v2, jar).
pub fn redefine_program(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let src = repo().join("test-classes/redefine");
    let (classes, v2, jar) = (
        dir.join("classes"),
        dir.join("v2"),
        dir.join("redef-agent.jar"),
    );
    let javac = |out: &Path, files: &[PathBuf]| {
        let o = Command::new(jdk_tool("javac"))
            .arg("-g")
            .arg("-d")
            .arg(out)
            .args(files)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    javac(
        &classes,
        &[
            "Redef.java",
            "Reread.java",
            "Target.java",
            "RedefAgent.java",
        ]
        .map(|f| src.join(f)),
    );
    javac(&v2, &[src.join("v2/Target.java")]);
    let manifest = dir.join("MANIFEST.MF");
    std::fs::write(
        &manifest,
        "Premain-Class: RedefAgent\nCan-Redefine-Classes: true\nCan-Retransform-Classes: true\n",
    )
    .unwrap();
    let o = Command::new(jdk_tool("jar"))
        .arg("cfm")
        .arg(&jar)
        .arg(&manifest)
        .arg("-C")
        .arg(&classes)
        .arg("RedefAgent.class")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (classes, v2, jar)
}

/// Runs the program of [`redefine_program`] (`classes`, `v2`, `jar`) under the agent with
/// `opts`, its java agent redefining Target, with -Xverify:all.
pub fn run_redefine(opts: &str, program: &(PathBuf, PathBuf, PathBuf)) -> std::process::Output {
    run_redefine_main(opts, program, "Redef")
}

/// Runs `Reread` of [`redefine_program`] under the agent with `opts` (see Reread.java), checks
/// that it ran to its end, and returns its stderr.
pub fn run_reread(opts: &str, program: &(PathBuf, PathBuf, PathBuf)) -> String {
    let o = run_redefine_main(opts, program, "Reread");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("s=50300"), "{out}\n{err}");
    err
}

/// [`run_redefine`] with another main class of test-classes/redefine (`Reread`).
pub fn run_redefine_main(
    opts: &str,
    (classes, v2, jar): &(PathBuf, PathBuf, PathBuf),
    main: &str,
) -> std::process::Output {
    Command::new(jdk_tool("java"))
        .arg(format!("-agentpath:{}={opts}", agent_lib().display()))
        .arg(format!("-javaagent:{}", jar.display()))
        .arg("-Xverify:all")
        .arg("-cp")
        .arg(classes)
        .arg(main)
        .arg(v2)
        .output()
        .unwrap()
}
