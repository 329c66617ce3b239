//! Instrumented code must behave exactly as before and fire each probe exactly once per event:
//! offline `bci instrument` of cli/tests/fixtures/Subject.java with enter/exit/unwind probes,
//! run under `java -Xverify:all`; the program's output and the probe log are compared with
//! what the source implies.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn probes_fire_exactly_once_per_entry_exit_and_unwind() {
    let jh = common::java_home();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let out = common::workspace().join("target/test-out/behaviour");
    let _ = std::fs::remove_dir_all(&out);
    let classes = out.join("classes");
    let st = Command::new(jh.join("bin/javac"))
        .arg("-d")
        .arg(&classes)
        .args(["Probe.java", "Subject.java", "Main.java"].map(|f| fx.join(f)))
        .status()
        .unwrap();
    assert!(st.success());
    let inst = out.join("inst");
    let map = out.join("probes.tsv");
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("instrument")
        .arg(&classes)
        .arg(&inst)
        .args([
            "--runtime",
            "Probe",
            "--include",
            "Subject",
            "--strict",
            "--map",
        ])
        .arg(&map)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 instrumented (10 methods)"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // Probe ids -> readable names: "init(Z)" for constructors, the method name otherwise.
    let names: Vec<String> = std::fs::read_to_string(&map)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            if f[2] == "<init>" {
                format!("init{}", &f[3][..f[3].find(')').unwrap() + 1])
            } else {
                f[2].to_string()
            }
        })
        .collect();
    let names_file = out.join("names.txt");
    std::fs::write(&names_file, names.join("\n")).unwrap();
    let cp = format!("{}:{}", inst.display(), classes.display());
    let run = Command::new(jh.join("bin/java"))
        .args(["-Xverify:all", "-cp", &cp, "Main"])
        .arg(&names_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0], "-2,5,4,-1,sevenother,3,1",
        "program results changed"
    );
    let expected = [
        ">loopAtStart <loopAtStart",
        ">tryFinally <tryFinally >tryFinally <tryFinally",
        ">catcher >thrower >thrower >thrower !thrower !thrower !thrower <catcher",
        ">sw <sw >sw <sw",
        ">init() >init(Z) >init(I) <init(I) <init(Z) <init() >sync <sync",
        ">emptyLoop <emptyLoop",
        ">init(Z) >init(I) <init(I) <init(Z)",
    ]
    .join(" ");
    assert_eq!(lines[1], expected);
}
