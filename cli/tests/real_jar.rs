//! A real program from a jar: Debian's rhino (Mozilla's JavaScript engine), instrumented offline
//! jar-to-jar with enter/exit/unwind probes, checked by our verifier, then run under
//! `java -Xverify:all` on a script: same output as the original, and every entry matched by an
//! exit or an unwind (single-threaded script, so the counts must balance exactly).
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

const RHINO: &str = "/usr/share/java/rhino.jar";

#[test]
fn rhino_jar_instrumented_runs_a_script_with_balanced_probes() {
    if !Path::new(RHINO).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{RHINO} missing under CI (package rhino)"
        );
        eprintln!("SKIPPED: {RHINO} not installed (apt-get install rhino)");
        return;
    }
    let jh = common::java_home();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let out = common::workspace().join("target/test-out/rhino");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let probe = out.join("probe");
    assert!(Command::new(jh.join("bin/javac"))
        .arg("-d")
        .arg(&probe)
        .arg(fx.join("CountProbe.java"))
        .status()
        .unwrap()
        .success());
    let inst = out.join("rhino-instrumented.jar");
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("instrument")
        .arg(RHINO)
        .arg(&inst)
        .args(["--runtime", "CountProbe", "--strict"])
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{summary}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("{summary}");
    // Our verifier on the instrumented jar (rhino's own classes + the JDK as hierarchy).
    let v = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("verify")
        .arg(&inst)
        .output()
        .unwrap();
    assert!(
        v.status.success(),
        "bci verify: {}{}",
        String::from_utf8_lossy(&v.stdout),
        String::from_utf8_lossy(&v.stderr)
    );
    let script = "function fib(n){return n<2?n:fib(n-1)+fib(n-2)}; var s=0; for (var i=0;i<5;i++) s+=fib(15); \
                  try { null.x } catch (e) { s += 1 }; print('result ' + s + ' ' + [3,1,2].sort().join(','));";
    let run = |cp: &str| {
        let o = Command::new(jh.join("bin/java"))
            .args([
                "-Xverify:all",
                "-cp",
                cp,
                "org.mozilla.javascript.tools.shell.Main",
                "-e",
                script,
            ])
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (ok0, out0, err0) = run(RHINO);
    assert!(ok0, "original rhino failed: {err0}");
    assert_eq!(out0.trim(), "result 3051 1,2,3");
    let cp = format!("{}:{}", inst.display(), probe.display());
    let (ok1, out1, err1) = run(&cp);
    assert!(ok1, "instrumented rhino failed: {err1}");
    assert_eq!(out1, out0, "instrumented output differs");
    let line = err1
        .lines()
        .find(|l| l.starts_with("probes: "))
        .unwrap_or_else(|| panic!("no probe summary: {err1}"));
    let num = |k: &str| -> u64 {
        line.split(&format!("{k}="))
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (enter, exit, unwind) = (num("enter"), num("exit"), num("unwind"));
    eprintln!("{line}");
    assert!(enter > 10_000, "{line}");
    // Main returns through frames that are still open when the shutdown hook prints (main's own
    // frame and the launcher's): allow those few; everything else balances.
    assert!(
        enter >= exit + unwind && enter - exit - unwind <= 3,
        "{line}"
    );
    assert!(unwind > 0, "the script throws (null.x): {line}");
}
