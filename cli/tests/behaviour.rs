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
        String::from_utf8_lossy(&o.stdout).contains("1 instrumented (14 methods)"),
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
        lines[0], "-2,5,4,-1,sevenother,3,1,38,5,iae",
        "program results changed"
    );
    let expected = [
        ">loopAtStart <loopAtStart",
        ">tryFinally <tryFinally >tryFinally <tryFinally",
        ">catcher >thrower >thrower >thrower !thrower !thrower !thrower <catcher",
        ">sw <sw >sw <sw",
        // constructors enter right after their super()/this() call
        ">init(I) <init(I) >init(Z) <init(Z) >init() <init() >sync <sync",
        ">emptyLoop <emptyLoop",
        ">init(I) <init(I) >init(Z) <init(Z)",
        ">leaf <leaf >init(I) <init(I) >getV <getV",
        // this(check(x) + y) throws before this(): the constructor never entered, no stale frame
        ">check !check",
    ]
    .join(" ");
    assert_eq!(lines[1], expected);
    // Methods that cannot throw get no catch-all handler; the others do.
    let b = std::fs::read(inst.join("Subject.class")).unwrap();
    let cf = bci::ClassFile::parse(&b).unwrap();
    for m in &cf.methods {
        let (_, a) = cf.find_attr(&m.attributes, "Code").unwrap();
        let code = bci::CodeAttr::parse(&cf, a).unwrap();
        let name = cf.member_name(m);
        let catch_all = code.handlers.iter().any(|h| {
            h.catch_type == 0
                && h.handler as usize + 8 >= code.code.len()
                && code.code.last() == Some(&0xbf)
        });
        let expect = !matches!(&*name, "leaf" | "getV" | "loopAtStart" | "emptyLoop");
        assert_eq!(
            catch_all,
            expect,
            "{}: catch-all handler",
            cf.method_path(m)
        );
    }
}

/// Class files before version 50 have no StackMapTable and may use jsr/ret. A method calling a
/// subroutine, in a class downgraded to 49.0, is instrumented and must run (old verifier,
/// -Xverify:all) with the same result and exact probes.
#[test]
fn old_class_with_jsr_ret_is_instrumented_and_runs() {
    let jh = common::java_home();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let out = common::workspace().join("target/test-out/old");
    let _ = std::fs::remove_dir_all(&out);
    let classes = out.join("classes");
    let st = Command::new(jh.join("bin/javac"))
        .args(["--release", "8", "-d"])
        .arg(&classes)
        .args(["Probe.java", "Old.java"].map(|f| fx.join(f)))
        .status()
        .unwrap();
    assert!(st.success());
    // f: iconst_0; istore_1; jsr SUB; iload_0; iload_1; iadd; ireturn;
    //    SUB: astore_2; iinc 1 10; ret 2
    let code: [u8; 15] = [
        0x03, 0x3c, 0xa8, 0x00, 0x07, 0x1a, 0x1b, 0x60, 0xac, 0x4d, 0x84, 0x01, 0x0a, 0xa9, 0x02,
    ];
    let path = classes.join("Old.class");
    let bytes = std::fs::read(&path).unwrap();
    let cf = bci::ClassFile::parse(&bytes).unwrap();
    let k = cf
        .methods
        .iter()
        .position(|m| cf.member_name(m) == "f")
        .unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(&2u16.to_be_bytes()); // max_stack
    body.extend_from_slice(&3u16.to_be_bytes()); // max_locals
    body.extend_from_slice(&(code.len() as u32).to_be_bytes());
    body.extend_from_slice(&code);
    body.extend_from_slice(&[0, 0, 0, 0]); // no handlers, no attributes
    let mut w = bci::ClassWriter::new(&cf);
    w.set_code(k, body).unwrap();
    let mut old = w.finish().unwrap();
    old[6..8].copy_from_slice(&49u16.to_be_bytes());
    let old_cf = bci::ClassFile::parse(&old).unwrap();
    assert_eq!(old_cf.major, 49);
    old_cf.check().unwrap();
    std::fs::write(&path, &old).unwrap();
    // Uninstrumented, it runs and prints 15.
    let cp = classes.display().to_string();
    let run = Command::new(jh.join("bin/java"))
        .args(["-Xverify:all", "-cp", &cp, "Old"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).lines().next(),
        Some("15"),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Instrumented: same result; f entered and exited once, main entered.
    let inst = out.join("inst");
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("instrument")
        .arg(&classes)
        .arg(&inst)
        .args(["--runtime", "Probe", "--include", "Old", "--strict"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let icp = format!("{}:{}", inst.display(), classes.display());
    let run = Command::new(jh.join("bin/java"))
        .args(["-Xverify:all", "-cp", &icp, "Old"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "15");
    // ids: 0 = <init>, 1 = f, 2 = main (class-file order); main's exit comes after the print.
    assert_eq!(lines[1], ">#2 >#1 <#1");
    let inst_cf_bytes = std::fs::read(inst.join("Old.class")).unwrap();
    let inst_cf = bci::ClassFile::parse(&inst_cf_bytes).unwrap();
    assert_eq!(inst_cf.major, 49);
    inst_cf.check().unwrap();

    // Coverage: f (a subroutine) takes no counters; the report names it (it was left out of
    // every count silently, which made the class look better covered than it is)
    let cinst = out.join("cov");
    let rt = out.join("rt.jar");
    let data = out.join("c.cov");
    for args in [
        vec![
            "instrument".to_string(),
            "--coverage".into(),
            cp.clone(),
            cinst.display().to_string(),
        ],
        vec!["runtime-jar".to_string(), rt.display().to_string()],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_bci"))
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // the summary counts the method left without counters, and --strict fails for it (it
    // said "2 classes, 2 instrumented with coverage counters, 0 left original", exit 0)
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .args(["instrument", "--coverage", "--strict"])
        .arg(&classes)
        .arg(out.join("cov-strict"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().next(),
        Some(
            "bci: 2 classes, 2 instrumented with coverage counters, 0 left original, 1 method \
             left without counters"
        )
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bci: Old.f(I)I: left without counters: "),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = Command::new(jh.join("bin/java"))
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-cp")
        .arg(format!("{}:{}", cinst.display(), rt.display()))
        .arg("Old")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("report")
        .arg(&data)
        .arg("--classes")
        .arg(&classes)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        report.contains("note: 1 method could take no counters and is in no count")
            && report.lines().any(|l| l.starts_with("  Old.f(I)I: ")),
        "{report}"
    );
}
