//! Running offline-instrumented programs: `bci instrument` output run with the runtime jar
//! (`bci runtime-jar`) and no agent writes a data file that `bci report` renders with the
//! methods named and their counts exact; a modular jar runs (read edge to the runtime);
//! instrumenting the output again changes nothing; output = input is refused. Every run uses
//! HotSpot -Xverify:all, and our verifier checks the instrumented classes.
/// The agent's test helpers: `agent_lib()` builds the cdylib (`cargo test` builds only the rlib).
#[path = "../../agent/tests/common/mod.rs"]
mod agent_common;
#[path = "../../bci/tests/common/mod.rs"]
mod common;
use agent_common::agent_lib;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bci(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bci"));
    for a in args {
        c.arg(a);
    }
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/offline")
}

fn fresh(name: &str) -> PathBuf {
    let out = common::workspace()
        .join("target/test-out/offline")
        .join(name);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    out
}

fn javac(out: &Path, srcs: &[PathBuf]) {
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-d")
        .arg(out)
        .args(srcs)
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
}

/// Every file under `dir`, relative name -> bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                m.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    m
}

/// The METHODS table of a report: "Class.method" -> count.
fn method_counts(report: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let mut inside = false;
    for l in report.lines() {
        if l.starts_with("METHODS BEGIN") {
            inside = true;
            continue;
        }
        if l.starts_with("METHODS END") {
            break;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        if inside && f.len() == 7 && f[0].parse::<u32>().is_ok() {
            let name = f[6].split('(').next().unwrap().to_string();
            *m.entry(name).or_insert(0) += f[3].parse::<u64>().unwrap();
        }
    }
    m
}

/// The METHODS table of a report: "Class.method(descriptor)" -> count.
fn method_counts_with_descriptors(report: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let mut inside = false;
    for l in report.lines() {
        inside = (inside || l.starts_with("METHODS BEGIN")) && !l.starts_with("METHODS END");
        let f: Vec<&str> = l.split_whitespace().collect();
        if inside && f.len() == 7 && f[0].parse::<u32>().is_ok() {
            m.insert(f[6].to_string(), f[3].parse::<u64>().unwrap());
        }
    }
    m
}

fn java(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(common::java_home().join("bin/java"));
    c.arg("-Xverify:all");
    for a in args {
        c.arg(a);
    }
    c.output().unwrap()
}

fn runtime_jar(out: &Path) -> PathBuf {
    let rt = out.join("bci-runtime.jar");
    let o = bci(&[&"runtime-jar", &rt]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    rt
}

/// Instrumenting the output of `bci instrument` again leaves every file as it is (no probes
/// added twice), names each such class once on stderr; output = input is refused.
#[test]
fn instrumenting_twice_leaves_the_output_equal_to_the_first() {
    let out = fresh("twice");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("Offl.java")]);
    let first = out.join("first");
    let second = out.join("second");
    let o = bci(&[&"instrument", &classes, &first, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = bci(&[&"instrument", &first, &second, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let a = files(&first);
    let b = files(&second);
    assert_eq!(a.len(), 4, "{:?}", a.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(b.get(name) == Some(bytes), "{name}: second output differs");
    }
    let err = text(&o.stderr);
    for c in a.keys() {
        assert_eq!(
            err.matches(&format!("{c}: already instrumented by bci"))
                .count(),
            1,
            "{err}"
        );
    }
    // the same through jars
    let j1 = out.join("first.jar");
    let j2 = out.join("second.jar");
    assert!(bci(&[&"instrument", &classes, &j1]).status.success());
    assert!(bci(&[&"instrument", &j1, &j2]).status.success());
    let unzip = |j: &Path, d: &Path| {
        let mut z = zip::ZipArchive::new(std::fs::File::open(j).unwrap()).unwrap();
        z.extract(d).unwrap();
    };
    unzip(&j1, &out.join("j1"));
    unzip(&j2, &out.join("j2"));
    assert_eq!(files(&out.join("j1")), files(&out.join("j2")));
    // output = input: refused, nothing written
    for (inp, outp) in [
        (first.clone(), first.clone()),
        (j1.clone(), out.join(".").join("first.jar")),
    ] {
        let before = std::fs::metadata(&inp).unwrap().modified().unwrap();
        let o = bci(&[&"instrument", &inp, &outp]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("output is the input"),
            "{}",
            text(&o.stderr)
        );
        assert_eq!(std::fs::metadata(&inp).unwrap().modified().unwrap(), before);
    }
    assert_eq!(files(&first), a);
    // coverage asked of classes instrumented for cpu=times (and the reverse): they cannot take
    // it, are copied as they are, named so, and --strict fails (what was asked is missing)
    let cov = out.join("cov");
    let o = bci(&[&"instrument", &"--coverage", &classes, &cov]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for (inp, extra) in [(&first, Some("--coverage")), (&cov, None)] {
        let dest = out.join(format!("other-{}", extra.is_some()));
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"instrument"];
        if let Some(x) = &extra {
            args.push(x);
        }
        args.extend([inp as &dyn AsRef<std::ffi::OsStr>, &dest]);
        let o = bci(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let err = text(&o.stderr);
        assert_eq!(
            err.matches("left as it is, without").count(),
            a.len(),
            "{err}"
        );
        args.push(&"--strict");
        let _ = std::fs::remove_dir_all(&dest);
        assert_eq!(bci(&args).status.code(), Some(1), "--strict {extra:?}");
    }
}

/// An offline-instrumented program run with the shipped runtime jar and no agent writes its
/// data at exit; `bci report` names every method with its exact count. The main class and the
/// others are instrumented by two separate runs (both number their methods from 0): the ids
/// handed out at run time keep them apart.
#[test]
fn offline_program_runs_with_the_runtime_jar_and_the_report_names_its_methods() {
    let out = fresh("run");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("Offl.java")]);
    let bare = java(&[&"-cp", &classes, &"Offl"]);
    assert!(bare.status.success(), "{}", text(&bare.stderr));
    // run 1: Offl only; run 2: the nested classes
    let a = out.join("a");
    let b = out.join("b");
    let o = bci(&[
        &"instrument",
        &classes,
        &a,
        &"--include",
        &"Offl",
        &"--strict",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = bci(&[
        &"instrument",
        &classes,
        &b,
        &"--exclude",
        &"Offl",
        &"--strict",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for f in files(&a).keys().filter(|f| *f != "Offl.class") {
        std::fs::remove_file(a.join(f)).unwrap();
    }
    let rt = runtime_jar(&out);
    for dir in [&a, &b] {
        let o = bci(&[
            &"verify",
            dir,
            &"--classpath",
            &format!("{}:{}", b.display(), rt.display()),
        ]);
        assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    }
    let data = out.join("prof.data");
    let cp = format!("{}:{}:{}", a.display(), b.display(), rt.display());
    let run = java(&[
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &cp,
        &"Offl",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(
        text(&run.stdout),
        text(&bare.stdout),
        "program output changed"
    );
    assert!(
        text(&run.stderr).contains("bci report"),
        "{}",
        text(&run.stderr)
    );
    let o = bci(&[&"report", &data]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = text(&o.stdout);
    assert!(
        report.contains("clock=sample") && report.contains("ThreadMXBean"),
        "{report}"
    );
    assert!(
        report.contains("Header for the bci runtime jar"),
        "{report}"
    );
    assert!(!report.contains("unknown."), "{report}");
    assert!(report.contains("CPU TIME (ms) BEGIN"), "{report}");
    assert!(report.contains("\tOffl.main(Offl.java:"), "{report}");
    let counts = method_counts(&report);
    let expect: BTreeMap<String, u64> = [
        ("Offl.main", 1),
        ("Offl.<clinit>", 1),
        ("Offl.fib", 177),
        ("Offl.thrower", 9),
        ("Offl$Sq.<init>", 5),
        ("Offl$Sq.area", 5),
        ("Offl$Shape.unit", 1),
        ("Offl$Shape.describe", 1),
        ("Offl$Color.<clinit>", 1),
        ("Offl$Color.<init>", 2),
        ("Offl$Color.valueOf", 1),
        ("Offl$Color.$values", 1),
        ("Offl$Color.values", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(counts, expect, "{report}");
    // clock=wall: same counts
    let wall = out.join("wall.data");
    let run = java(&[
        &format!("-Dbci.file={}", wall.display()),
        &"-Dbci.clock=wall",
        &"-cp",
        &cp,
        &"Offl",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let o = bci(&[&"report", &wall]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("clock=wall"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(method_counts(&text(&o.stdout)), expect);
    // a bad runtime option stops the program at its first instrumented class, naming it
    for (opt, want) in [
        (
            "-Dbci.clock=cpu",
            "-Dbci.clock=cpu: expected sample or wall",
        ),
        (
            "-Dbci.depth=0",
            "-Dbci.depth=0: expected a positive integer",
        ),
        (
            "-Dbci.interval=x",
            "-Dbci.interval=x: expected a positive integer",
        ),
    ] {
        let run = java(&[&opt, &"-cp", &cp, &"Offl"]);
        assert_eq!(run.status.code(), Some(2), "{opt}");
        assert!(
            text(&run.stderr).contains(want),
            "{opt}: {}",
            text(&run.stderr)
        );
        assert_eq!(text(&run.stdout), "", "{opt}");
    }
    // report options in the agent's syntax
    let o = bci(&[
        &"report",
        &data,
        &"format=methods",
        &"-o",
        &out.join("m.txt"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let m = std::fs::read_to_string(out.join("m.txt")).unwrap();
    assert_eq!(method_counts(&m), expect);
    assert!(!m.contains("CPU TIME"));
    let o = bci(&[&"report", &data, &"depth=2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("depth="), "{}", text(&o.stderr));
}

/// Classes of a named module call the runtime after a read edge their <clinit> adds: the
/// runtime jar on the class path or on the module path.
#[test]
fn modular_jar_instrumented_and_run() {
    let out = fresh("module");
    let classes = out.join("classes");
    let m = fixtures().join("mod");
    javac(
        &classes,
        &[m.join("module-info.java"), m.join("com/acme/Main.java")],
    );
    let jar = out.join("acme.jar");
    let st = Command::new(common::java_home().join("bin/jar"))
        .arg("cf")
        .arg(&jar)
        .arg("-C")
        .arg(&classes)
        .arg(".")
        .status()
        .unwrap();
    assert!(st.success());
    let inst = out.join("acme-instrumented.jar");
    let o = bci(&[&"instrument", &jar, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let o = bci(&[&"verify", &inst, &"--classpath", &rt]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    let mp_rt = format!("{}:{}", inst.display(), rt.display());
    for (k, args) in [
        vec!["-p", inst.to_str().unwrap(), "-cp", rt.to_str().unwrap()],
        vec!["-p", &mp_rt, "--add-modules", "bci.runtime"],
    ]
    .into_iter()
    .enumerate()
    {
        let data = out.join(format!("run{k}.data"));
        let mut c = Command::new(common::java_home().join("bin/java"));
        c.arg("-Xverify:all")
            .arg(format!("-Dbci.file={}", data.display()))
            .args(&args)
            .args(["-m", "com.acme/com.acme.Main"]);
        let run = c.output().unwrap();
        assert!(run.status.success(), "{args:?}: {}", text(&run.stderr));
        assert_eq!(text(&run.stdout), "sum 20\n");
        let o = bci(&[&"report", &data]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let counts = method_counts(&text(&o.stdout));
        assert_eq!(counts.get("com.acme.Main.twice"), Some(&5), "{counts:?}");
        assert_eq!(counts.get("com.acme.Main.main"), Some(&1), "{counts:?}");
    }
}

/// A classes directory in the module layout (`javac -d DIR --module-source-path …`:
/// DIR/com.acme/module-info.class) is modular too: its classes, cpu=times probes or coverage
/// counters, get the read edge to the runtime (they failed with IllegalAccessError: module
/// com.acme does not read unnamed module; found by the new-user hunt).
#[test]
fn module_layout_directory_instrumented_and_run() {
    let out = fresh("module-layout");
    let mods = out.join("mods");
    let m = fixtures().join("mod");
    javac(
        &mods.join("com.acme"),
        &[m.join("module-info.java"), m.join("com/acme/Main.java")],
    );
    let rt = runtime_jar(&out);
    for (kind, prop) in [("", "bci.file"), ("--coverage", "bci.covfile")] {
        let inst = out.join(format!("inst{kind}"));
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"instrument", &mods, &inst];
        if !kind.is_empty() {
            args.push(&kind);
        }
        let o = bci(&args);
        assert!(o.status.success(), "{kind}: {}", text(&o.stderr));
        let data = out.join(format!("run{kind}.data"));
        let run = Command::new(common::java_home().join("bin/java"))
            .arg("-Xverify:all")
            .arg(format!("-D{prop}={}", data.display()))
            .arg("-p")
            .arg(&inst)
            .arg("-cp")
            .arg(&rt)
            .args(["-m", "com.acme/com.acme.Main"])
            .output()
            .unwrap();
        assert!(run.status.success(), "{kind}: {}", text(&run.stderr));
        assert_eq!(text(&run.stdout), "sum 20\n", "{kind}");
        assert!(data.is_file(), "{kind}: no data written");
    }
    let o = bci(&[&"report", &out.join("run.data")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let counts = method_counts(&text(&o.stdout));
    assert_eq!(counts.get("com.acme.Main.twice"), Some(&5), "{counts:?}");
}

/// Offline-instrumented classes run under the agent: the agent leaves them as they are (one
/// verbose line each), their `<clinit>` registers their methods in the agent's table, and the
/// agent's report names them with exact counts (no probe added twice, no `unknown.mN`); the
/// runtime jar on the class path stays unused (no data file).
#[test]
fn offline_classes_under_the_agent_are_named_and_counted_once() {
    let out = fresh("agent");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("Offl.java")]);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let lib = agent_lib();
    let rules = out.join("rules.toml");
    std::fs::write(
        &rules,
        "[runtime]\nclass = \"bci/runtime/Probes\"\n\n[[rule]]\nprobes = [\"enter\", \"exit\", \"unwind\"]\n",
    )
    .unwrap();
    // the built-in rules (runtime java.lang.BciProbes: bci/runtime/Probes forwards to it) and
    // rules naming bci/runtime/Probes (the agent's own copy of it)
    for opt in [String::new(), format!("rules={},", rules.display())] {
        check_under_agent(&out, &lib, &opt, &inst, &rt);
    }
}

fn check_under_agent(out: &Path, lib: &Path, opt: &str, inst: &Path, rt: &Path) {
    let report = out.join("java.hprof.txt");
    let data = out.join("unused.data");
    let _ = std::fs::remove_file(&report);
    let run = java(&[
        &format!(
            "-agentpath:{}={opt}file={},verbose=y",
            lib.display(),
            report.display()
        ),
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &format!("{}:{}", inst.display(), rt.display()),
        &"Offl",
    ]);
    assert!(run.status.success(), "{opt}: {}", text(&run.stderr));
    let err = text(&run.stderr);
    for c in ["Offl", "Offl$Sq", "Offl$Shape", "Offl$Color"] {
        assert_eq!(
            err.matches(&format!(
                "bciagent: {c}: instrumented already (bci instrument)"
            ))
            .count(),
            1,
            "{err}"
        );
    }
    assert!(!data.exists(), "the standalone runtime recorded too");
    let r = std::fs::read_to_string(&report).unwrap();
    assert!(!r.contains("unknown."), "{opt}: {r}");
    let counts: BTreeMap<String, u64> = method_counts(&r)
        .into_iter()
        .filter(|(k, _)| k.starts_with("Offl"))
        .collect();
    assert_eq!(counts.get("Offl.fib"), Some(&177), "{counts:?}");
    assert_eq!(counts.get("Offl.thrower"), Some(&9), "{counts:?}");
    assert_eq!(counts.get("Offl$Sq.<init>"), Some(&5), "{counts:?}");
    assert_eq!(counts.get("Offl$Shape.describe"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("Offl.main"), Some(&1), "{counts:?}");
    assert_eq!(counts.len(), 13, "{opt}: {counts:?}");
}

/// A real jar (Debian's rhino, 549 classes) instrumented offline with ids handed out at run
/// time, run with the runtime jar: same output, our verifier and -Xverify:all pass, the report
/// names its methods; instrumenting the output again leaves every class as it is.
#[test]
fn rhino_offline_with_the_runtime_jar() {
    const RHINO: &str = "/usr/share/java/rhino.jar";
    if !Path::new(RHINO).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{RHINO} missing under CI (package rhino)"
        );
        eprintln!("SKIPPED: {RHINO} not installed (apt-get install rhino)");
        return;
    }
    let out = fresh("rhino");
    let inst = out.join("rhino-instrumented.jar");
    let o = bci(&[&"instrument", &RHINO, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let o = bci(&[&"verify", &inst, &"--classpath", &rt]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    // every class, loaded or not, through HotSpot -Xverify:all (linked without <clinit>)
    let tree = out.join("tree");
    zip::ZipArchive::new(std::fs::File::open(&inst).unwrap())
        .unwrap()
        .extract(&tree)
        .unwrap();
    let v = bci_verify::oracle::run_hotspot(
        &common::java_home(),
        &tree,
        false,
        std::slice::from_ref(&rt),
    )
    .unwrap();
    let rejected: Vec<String> = v
        .iter()
        .filter(|v| v.rejected())
        .map(|v| format!("{}: {}", v.class, v.message))
        .collect();
    assert!(rejected.is_empty(), "{}", rejected.join("\n"));
    let ok = v.iter().filter(|v| v.ok).count();
    eprintln!("hotspot: {} classes, {ok} linked and verified", v.len());
    assert!(ok * 100 >= v.len() * 98, "only {ok} of {} linked", v.len());
    let script = "function fib(n){return n<2?n:fib(n-1)+fib(n-2)}; var s=0; for (var i=0;i<5;i++) s+=fib(15); \
                  try { null.x } catch (e) { s += 1 }; print('result ' + s);";
    let data = out.join("rhino.data");
    let run = java(&[
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &format!("{}:{}", inst.display(), rt.display()),
        &"org.mozilla.javascript.tools.shell.Main",
        &"-e",
        &script,
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(text(&run.stdout).trim(), "result 3051");
    let o = bci(&[&"report", &data]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = text(&o.stdout);
    assert!(!r.contains("unknown."), "{r}");
    let counts = method_counts(&r);
    assert_eq!(
        counts.get("org.mozilla.javascript.tools.shell.Main.main"),
        Some(&1),
        "{r}"
    );
    assert!(counts.len() > 500, "{} methods ran", counts.len());
    let again = out.join("again.jar");
    let o = bci(&[&"instrument", &inst, &again]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("0 instrumented (0 methods)"),
        "{}",
        text(&o.stdout)
    );
}

/// Runtime ids add a `<clinit>` (and, in interfaces, a public field), which would change the
/// serialVersionUID that serialization computes for classes declaring none: the rewriter
/// declares the original value, so instrumented and original classes read each other's objects.
#[test]
fn serial_version_uids_stay_as_they_were() {
    let out = fresh("suid");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("Suids.java")]);
    let bare = java(&[&"-cp", &classes, &"Suids"]);
    assert!(bare.status.success(), "{}", text(&bare.stderr));
    assert_eq!(text(&bare.stdout).lines().count(), 6);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let run = java(&[
        &format!("-Dbci.file={}", out.join("s.data").display()),
        &"-cp",
        &format!("{}:{}", inst.display(), rt.display()),
        &"Suids",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(text(&run.stdout), text(&bare.stdout));
}

/// A data file that is not one, or is cut short or corrupted, gives an error naming the file and
/// line (exit 2), never a panic; so do options that belong to the run.
#[test]
fn report_rejects_bad_data_files_with_their_line() {
    let out = fresh("bad-data");
    let cases: &[(&str, &str)] = &[
        // an empty file is neither kind of data: said as such, not as a missing header
        ("", ": empty file: no data was written to it"),
        ("\n", ":1: not a bci data file"),
        ("bci-data\t9\n", ":1: unsupported data version"),
        ("bci-data\t1\nclock\tfast\n", ":2: unknown clock"),
        (
            "bci-data\t1\nmethod\t0\ta\n",
            ":2: method line with fewer than 7 fields",
        ),
        (
            "bci-data\t1\nmethod\t5\ta\tb\t()V\t\t-1\t0\n",
            ":2: method id 5, expected 0",
        ),
        (
            "bci-data\t1\nthread\tmain\ndata\t3\t0\n",
            ":3: malformed thread data",
        ),
        (
            "bci-data\t1\nthread\tmain\ndata\tx\n",
            ":3: bad number in thread data",
        ),
        (
            "bci-data\t1\nthread\tmain\ndata\t2\t0\t0\t0\t0\t7\t0\t5\t0\t0\n",
            ":3: malformed thread data",
        ),
        ("bci-data\t1\nwhat\n", ":2: unknown record \"what\""),
        (
            "bci-data\t1\nper-thread\tyes\n",
            ":2: bad per-thread record (expected y or n)",
        ),
    ];
    for (k, (content, want)) in cases.iter().enumerate() {
        let f = out.join(format!("bad{k}.data"));
        std::fs::write(&f, content).unwrap();
        let o = bci(&[&"report", &f]);
        assert_eq!(o.status.code(), Some(2), "{content:?}: {}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("{}{want}", f.display())),
            "{content:?}: {err}"
        );
    }
    // a valid file with a node naming a method id the table lacks: rendered, not a panic
    let f = out.join("unknown-id.data");
    std::fs::write(
        &f,
        "bci-data\t1\nclock\twall\nthread\tmain\ndata\t2\t0\t0\t0\t0\t0\t9\t3\t1000000\t0\t0\n",
    )
    .unwrap();
    let o = bci(&[&"report", &f]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("unknown.m9"),
        "{}",
        text(&o.stdout)
    );
    let o = bci(&[&"report", &f, &"clock=cpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("clock= is set when the program runs"),
        "{}",
        text(&o.stderr)
    );
    let o = bci(&[&"report", &out.join("missing.data")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("missing.data"),
        "{}",
        text(&o.stderr)
    );
}

/// `bci report` of cpu=times data takes `-o` and the report options in the agent's syntax
/// (thread=, format=, cutoff=, lineno=); the coverage report's options, a second data file,
/// and options that steer the run are refused with what applies (they were ignored: the HPROF
/// text printed, exit 0, no file written), and so are the agent-syntax options next to
/// coverage data.
#[test]
fn report_takes_only_the_options_of_its_kind_of_data() {
    let out = fresh("report-options");
    let data = out.join("bci.data");
    std::fs::write(
        &data,
        "bci-data\t1\nclock\twall\nthread\tmain\ndata\t2\t0\t0\t0\t0\t0\t9\t3\t1000000\t0\t0\n",
    )
    .unwrap();
    let applies = "a cpu=times report takes -o FILE and one argument of options in the \
                   agent's syntax: thread=y|n, format=hprof|collapsed|methods, cutoff=N, \
                   lineno=y|n (e.g. thread=y,format=collapsed)";
    let (x, l, c, cob, h) = (
        out.join("x.xml"),
        out.join("l.info"),
        out.join("c.csv"),
        out.join("cob.xml"),
        out.join("h"),
    );
    let all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"report",
        &data,
        &"--xml",
        &x,
        &"--lcov",
        &l,
        &"--csv",
        &c,
        &"--cobertura",
        &cob,
        &"--html",
        &h,
        &"--per-test",
        &"--title",
        &"T",
    ];
    let o = bci(&all);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        format!(
            "bci: {}: cpu=times data: --title, --xml, --cobertura, --lcov, --csv, --html, \
             --per-test apply to coverage data (bci.cov) only; {applies}\n",
            data.display()
        )
    );
    assert_eq!(text(&o.stdout), "");
    for f in [&x, &l, &c, &cob, &h] {
        assert!(!f.exists(), "{}", f.display());
    }
    let classes = out.join("classes");
    std::fs::create_dir_all(&classes).unwrap();
    for (opt, v) in [
        ("--classes", classes.to_str().unwrap()),
        ("--sources", "src"),
        ("--include", "a.*"),
        ("--exclude", "a.*"),
    ] {
        let o = bci(&[&"report", &data, &opt, &v]);
        assert_eq!(o.status.code(), Some(2), "{opt}");
        assert_eq!(
            text(&o.stderr),
            format!(
                "bci: {}: cpu=times data: {opt} applies to coverage data (bci.cov) only; \
                 {applies}\n",
                data.display()
            )
        );
    }
    // two profiles
    let o = bci(&[&"report", &data, &data]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "bci: {}: a second data file: bci report renders one cpu=times data file \
             (profiles are not merged; report each on its own); {applies}\n",
            data.display()
        )
    );
    // two arguments of options: say so once, with the one argument they make (the usage
    // text was given twice in one message)
    let o = bci(&[&"report", &data, &"thread=n", &"format=hprof"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "bci: {}: 2 arguments of options, not one: {applies}; write them as one, \
             comma-separated (thread=n,format=hprof)\n",
            data.display()
        )
    );
    // a combination that would be refused as one is not suggested (found by the manuals
    // hunt: format=methods thread=y was answered with format=methods,thread=y), and the two
    // errors are said apart (found by the README hunt G: they ran together in one parenthesis)
    for args in [
        ["format=methods", "thread=y"],
        ["thread=n", "format=methods"],
    ] {
        let o = bci(&[&"report", &data, &args[0], &args[1]]);
        assert_eq!(o.status.code(), Some(2));
        let thread = if args[0] == "thread=n" {
            "thread=n"
        } else {
            "thread=y"
        };
        assert_eq!(
            text(&o.stderr),
            format!(
                "bci: {}: 2 arguments of options, not one: bci report takes its options as \
                 one comma-separated argument; and together these are refused: {thread}: \
                 thread= chooses whether format=hprof and format=collapsed split their stacks \
                 by thread; format=methods has one row per method, all threads together: leave \
                 it out (or give format=hprof or format=collapsed)\n",
                data.display()
            ),
            "{args:?}"
        );
    }
    // bci merge takes coverage data: cpu=times data is named as what it is (it was "not a bci
    // coverage file (bad magic)")
    let merged = out.join("m.cov");
    let o = bci(&[&"merge", &data, &"-o", &merged]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "bci: {}: cpu=times profile data (the runtime jar's bci.data), not coverage data: \
             bci merge and coverage reports take coverage data (bci.cov); render a profile \
             with bci report {}\n",
            data.display(),
            data.display()
        )
    );
    assert!(!merged.exists());
    // options that steer the run, and unknown ones
    for (opts, want) in [
        (
            "covfile=x",
            "option covfile= is set when the program runs, not in the report",
        ),
        (
            "coverage=y",
            "option coverage= is set when the program runs, not in the report",
        ),
        (
            "verbose=y",
            "option verbose= is set when the program runs, not in the report",
        ),
        (
            "thread=n,tracemax=1k",
            "option tracemax= is set when the program runs, not in the report",
        ),
        ("help", "help: the report's options are these"),
        ("thred=y", "unknown report option 'thred'"),
    ] {
        let o = bci(&[&"report", &data, &opts]);
        assert_eq!(o.status.code(), Some(2), "{opts}");
        assert_eq!(
            text(&o.stderr),
            format!("bci: {want}; {applies}\n"),
            "{opts}"
        );
    }
    // options the chosen format would ignore, refused as the agent refuses them (accepted
    // silently before: cutoff= and lineno= shape format=hprof's TRACE rows only)
    for (opts, want) in [
        (
            "format=methods,cutoff=0",
            "cutoff=0 cuts the TRACE rows of format=hprof; format=methods has none",
        ),
        (
            "lineno=n,format=collapsed",
            "lineno=n says whether the TRACE frames of format=hprof show lines; \
             format=collapsed has none",
        ),
        (
            "thread=n,format=methods",
            "thread=n: thread= chooses whether format=hprof and format=collapsed split their \
             stacks by thread",
        ),
    ] {
        let o = bci(&[&"report", &data, &opts]);
        assert_eq!(o.status.code(), Some(2), "{opts}");
        assert!(
            text(&o.stderr).contains(want),
            "{opts}: {}",
            text(&o.stderr)
        );
    }
    let o = bci(&[&"report", &data, &"thread=n,format=hprof,cutoff=0,lineno=n"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = bci(&[&"report", &data, &"format=methods"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // the other way round: the agent's options next to coverage data
    let cov = out.join("a.cov");
    std::fs::write(&cov, b"BCICOV\0\n\0\x01\0\0\0\0\0\0\0\0").unwrap();
    let o = bci(&[&"report", &cov, &"thread=y", &"--classes", &classes]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        "bci: thread=y: options in the agent's syntax apply to cpu=times data (bci.data) only; \
         a coverage report takes --classes, --sources, --include, --exclude, --title, --xml, \
         --cobertura, --lcov, --csv, --html, --per-test, --source-encoding, -o\n"
    );
    let o = bci(&[&"report", &cov, &data, &"--classes", &classes]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        text(&o.stderr),
        format!(
            "bci: {}: cpu=times data, not coverage data: report it on its own (bci report {})\n",
            data.display(),
            data.display()
        )
    );
    let o = bci(&[&"report", &cov, &"--classes", &classes]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Every program of test-classes/ instrumented offline and run with the runtime jar (no agent,
/// -Xverify:all): each `// expect: Class.method count=N` in its source (the counts the agent
/// test checks) equals the count in `bci report`, and so does each `// expect-path:` whose
/// frames are all the program's own (the JDK's classes are not instrumented offline): the sum
/// of the report's call paths whose top frames they are.
#[test]
fn test_classes_counts_offline() {
    let out = fresh("test-classes");
    let src = common::workspace().join("test-classes");
    type Counts = Vec<(String, u64)>;
    type Paths = Vec<(Vec<String>, u64)>;
    let mut progs: Vec<(String, Counts, Paths)> = Vec::new();
    let mut srcs = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "java") {
            continue;
        }
        srcs.push(p.clone());
        let text = std::fs::read_to_string(&p).unwrap();
        let expects: Counts = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("// expect:"))
            .map(|r| {
                let (m, c) = r.trim().rsplit_once(" count=").unwrap();
                (m.trim().to_string(), c.trim().parse().unwrap())
            })
            .collect();
        if !expects.is_empty() {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let own =
                |f: &str| f.starts_with(&format!("{name}.")) || f.starts_with(&format!("{name}$"));
            let paths: Paths = text
                .lines()
                .filter_map(|l| l.trim().strip_prefix("// expect-path:"))
                .map(|r| {
                    let (path, c) = r.trim().rsplit_once(" count=").unwrap();
                    let frames = path.split(" < ").map(|f| f.trim().to_string()).collect();
                    (frames, c.trim().parse().unwrap())
                })
                .filter(|(frames, _): &(Vec<String>, u64)| frames.iter().all(|f| own(f)))
                .collect();
            progs.push((name, expects, paths));
        }
    }
    progs.sort();
    assert!(progs.len() >= 10, "{} programs", progs.len());
    let classes = out.join("classes");
    javac(&classes, &srcs);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let cp = format!("{}:{}", inst.display(), rt.display());
    let mut bad = Vec::new();
    let mut paths_checked = 0;
    for (prog, expects, paths) in &progs {
        let data = out.join(format!("{prog}.data"));
        let run = java(&[&format!("-Dbci.file={}", data.display()), &"-cp", &cp, prog]);
        assert!(run.status.success(), "{prog}: {}", text(&run.stderr));
        let o = bci(&[&"report", &data]);
        assert!(o.status.success(), "{prog}: {}", text(&o.stderr));
        let report = text(&o.stdout);
        let counts = method_counts(&report);
        let full = method_counts_with_descriptors(&report);
        for (m, n) in expects {
            let got = if m.contains('(') {
                full.get(m)
            } else {
                counts.get(m)
            };
            if got != Some(n) {
                bad.push(format!(
                    "{prog}: {m}: expected {n}, got {:?}",
                    counts.get(m)
                ));
            }
        }
        // every call path (the report's default cutoff leaves out rows of little self time)
        let o = bci(&[&"report", &data, &"cutoff=0"]);
        assert!(o.status.success(), "{prog}: {}", text(&o.stderr));
        let traces = trace_counts(&text(&o.stdout));
        for (frames, n) in paths {
            // a report frame is `Class.method(File.java:line)`
            let got: u64 = traces
                .iter()
                .filter(|(t, _)| {
                    t.len() >= frames.len()
                        && t.iter()
                            .zip(frames)
                            .all(|(t, f)| t.split('(').next() == Some(f))
                })
                .map(|(_, c)| c)
                .sum();
            if got != *n {
                bad.push(format!(
                    "{prog}: path {}: expected {n}, got {got}",
                    frames.join(" < ")
                ));
            }
            paths_checked += 1;
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(paths_checked >= 10, "{paths_checked} paths");
}

/// A `thread=y` report (hprof): `(thread name, Class.method) -> count`, from its THREAD START
/// records, the thread of each TRACE and the CPU TIME rows.
fn thread_counts(report: &str) -> BTreeMap<(String, String), u64> {
    let mut names = BTreeMap::new();
    let mut trace_thread = BTreeMap::new();
    let mut m = BTreeMap::new();
    let mut rows = false;
    for l in report.lines() {
        if let Some(r) = l.strip_prefix("THREAD START (obj=0, id = ") {
            let (id, rest) = r.split_once(", name=\"").unwrap();
            let name = rest.split_once("\", group=").unwrap().0;
            names.insert(id.to_string(), name.to_string());
        } else if let Some(r) = l.strip_prefix("TRACE ") {
            let (trace, rest) = r.split_once(": (thread=").unwrap();
            trace_thread.insert(trace.to_string(), rest.trim_end_matches(')').to_string());
        } else if l.starts_with("CPU TIME (ms) BEGIN") {
            rows = true;
        } else if l.starts_with("CPU TIME (ms) END") {
            rows = false;
        } else if rows && !l.starts_with("rank ") {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = names[&trace_thread[f[4]]].clone();
            *m.entry((name, f[5].to_string())).or_insert(0) += f[3].parse::<u64>().unwrap();
        }
    }
    m
}

/// The CPU TIME rows of a report: `(trace frames, top first) -> count`.
fn trace_counts(report: &str) -> BTreeMap<Vec<String>, u64> {
    let mut frames: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cur = None;
    let mut m = BTreeMap::new();
    let mut rows = false;
    for l in report.lines() {
        if let Some(r) = l.strip_prefix("TRACE ") {
            let t = r.split(':').next().unwrap().to_string();
            frames.insert(t.clone(), Vec::new());
            cur = Some(t);
        } else if let (Some(f), Some(t)) = (l.strip_prefix('\t'), &cur) {
            frames.get_mut(t).unwrap().push(f.to_string());
        } else if l.starts_with("CPU TIME (ms) BEGIN") {
            cur = None;
            rows = true;
        } else if l.starts_with("CPU TIME (ms) END") {
            rows = false;
        } else if rows && !l.starts_with("rank ") {
            let f: Vec<&str> = l.split_whitespace().collect();
            let prev = m.insert(frames[f[4]].clone(), f[3].parse::<u64>().unwrap());
            assert!(prev.is_none(), "two rows of one path: {l}");
        }
    }
    m
}

/// OfflThreads instrumented, with the runtime jar: (output directory, class path).
fn offl_threads(name: &str) -> (PathBuf, String) {
    let out = fresh(name);
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("OfflThreads.java")]);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let cp = format!("{}:{}", inst.display(), rt.display());
    (out, cp)
}

/// -Dbci.thread=y keeps each thread's rows (the first 256 threads; later ones share "other
/// threads", as the agent's thread=y), and `bci report` lists them by thread with their exact
/// counts (by default, and with thread=y); thread=n merges them into the rows of a run without
/// it. Without -Dbci.thread=y the threads are one row: `bci report … thread=y` refuses, saying
/// how to record them (it listed one thread "ended threads" with every thread's counts).
#[test]
fn offline_threads_keep_their_rows_with_bci_thread_y() {
    let (out, cp) = offl_threads("threads");
    let run = |data: &Path, opts: &[&str], args: &[&str]| {
        let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = Vec::new();
        let file = format!("-Dbci.file={}", data.display());
        a.push(&file);
        for o in opts {
            a.push(o);
        }
        a.push(&"-cp");
        a.push(&cp);
        a.push(&"OfflThreads");
        for x in args {
            a.push(x);
        }
        let o = java(&a);
        assert!(o.status.success(), "{}", text(&o.stderr));
        o
    };
    let report = |data: &Path, opts: &str| {
        let o = bci(&[&"report", &data, &opts]);
        assert!(o.status.success(), "{opts}: {}", text(&o.stderr));
        text(&o.stdout)
    };
    let owned = |v: &[(&str, &str, u64)]| -> BTreeMap<(String, String), u64> {
        v.iter()
            .map(|(t, m, c)| ((t.to_string(), m.to_string()), *c))
            .collect()
    };
    let mut expect = owned(&[("main", "OfflThreads.main", 1)]);
    for k in 0..4u64 {
        let t = format!("worker-{k}");
        for (m, c) in [
            ("OfflThreads.lambda$main$0", 1),
            ("OfflThreads.loop", 1),
            ("OfflThreads.work", 100_000 * (k + 1)),
        ] {
            expect.insert((t.clone(), m.to_string()), c);
        }
    }
    let merged: BTreeMap<String, u64> = [
        ("OfflThreads.main", 1),
        ("OfflThreads.lambda$main$0", 4),
        ("OfflThreads.loop", 4),
        ("OfflThreads.work", 1_000_000),
    ]
    .into_iter()
    .map(|(m, c)| (m.to_string(), c))
    .collect();
    // recorded per thread: a report of the data is by thread unless told thread=n
    let y = out.join("y.data");
    run(&y, &["-Dbci.thread=y"], &[]);
    for opts in ["cutoff=0", "thread=y,cutoff=0"] {
        let r = report(&y, opts);
        assert_eq!(r.matches("THREAD START").count(), 5, "{opts}: {r}");
        assert!(r.contains(", per thread (the first 256 threads;"), "{r}");
        assert_eq!(thread_counts(&r), expect, "{opts}: {r}");
    }
    let by_y = report(&y, "thread=n,cutoff=0");
    assert!(!by_y.contains("THREAD START"), "{by_y}");
    assert_eq!(method_counts(&by_y), merged, "{by_y}");
    // recorded without it: the threads are one row
    let n = out.join("n.data");
    run(&n, &[], &[]);
    let o = bci(&[&"report", &n, &"thread=y,cutoff=0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        format!(
            "bci: thread=y: {} holds all threads in one row (recorded without \
             -Dbci.thread=y); run the program with -Dbci.thread=y to record each thread's rows\n",
            n.display()
        )
    );
    assert_eq!(text(&o.stdout), "");
    let by_n = report(&n, "cutoff=0");
    assert!(!by_n.contains("THREAD START"), "{by_n}");
    assert_eq!(method_counts(&by_n), merged, "{by_n}");
    // thread=n of per-thread data: the same rows as data recorded without it
    assert_eq!(trace_counts(&by_y), trace_counts(&by_n), "{by_y}\n{by_n}");
    assert_eq!(trace_counts(&by_n).len(), 4, "{by_n}");
    // 300 more threads: main, the 4 workers and extra-0 to extra-250 keep rows (256), the
    // last 49 share "other threads"
    let many = out.join("many.data");
    run(&many, &["-Dbci.thread=y"], &["300"]);
    let r = report(&many, "cutoff=0");
    assert_eq!(r.matches("THREAD START").count(), 257, "{r}");
    for i in 0..251 {
        for m in [
            "OfflThreads.lambda$main$1",
            "OfflThreads.loop",
            "OfflThreads.work",
        ] {
            expect.insert((format!("extra-{i}"), m.to_string()), 1);
        }
    }
    for m in [
        "OfflThreads.lambda$main$1",
        "OfflThreads.loop",
        "OfflThreads.work",
    ] {
        expect.insert(("other threads".to_string(), m.to_string()), 49);
    }
    assert_eq!(thread_counts(&r), expect, "{r}");
    // a bad value stops the program at its first instrumented class
    let o = java(&[&"-Dbci.thread=yes", &"-cp", &cp, &"OfflThreads"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stdout), "");
    assert!(
        text(&o.stderr).starts_with("bci: -Dbci.thread=yes: expected y or n (runtime options:"),
        "{}",
        text(&o.stderr)
    );
}

/// A -Dbci.file= that cannot be written stops the program at its first instrumented class
/// (exit 2, before it runs), with the path and the OS's reason, as the agent refuses such a
/// file= at start (it failed only at exit, exit status 0, the run's data lost). The check
/// leaves no file behind; a writable path gets the data at exit.
#[test]
fn unwritable_data_file_stops_the_program_at_its_first_instrumented_class() {
    let (out, cp) = offl_threads("unwritable");
    let missing = out.join("missing/dir/x.data");
    for (path, why) in [
        (missing.clone(), "No such file or directory"),
        (out.clone(), "Is a directory"),
    ] {
        let o = java(&[
            &format!("-Dbci.file={}", path.display()),
            &"-cp",
            &cp,
            &"OfflThreads",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout), "", "the program ran");
        assert_eq!(
            text(&o.stderr),
            format!(
                "bci: cannot open -Dbci.file={} for the profile data: {why}\n",
                path.display()
            )
        );
    }
    assert!(!out.join("missing").exists());
    // a new file: the check removes what it created (a program that halts, never running its
    // shutdown hooks, leaves no empty data file), the data is written at exit
    let new = out.join("new.data");
    let file = format!("-Dbci.file={}", new.display());
    let o = java(&[&file, &"-cp", &cp, &"OfflThreads", &"halt"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "");
    assert!(!new.exists());
    let o = java(&[&file, &"-cp", &cp, &"OfflThreads"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let data = std::fs::read_to_string(&new).unwrap();
    assert!(data.starts_with("bci-data\t1\n"), "{data}");
}

/// Offline, nothing reports a thread's end (the agent has JVMTI's ThreadEnd): the runtime
/// folds the data of ended threads itself (every 50 ms, in the sampler or, with clock=wall, a
/// thread of its own), so a program that starts 20,000 short threads one after another keeps
/// no state per thread (it kept 22 MB of heap with clock=sample and 36 MB with clock=wall
/// against 4 MB bare) and its counts stay exact.
#[test]
fn ended_threads_are_folded_offline() {
    let out = fresh("leak");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("OfflLeak.java")]);
    let heap_kb = |o: &Output| -> u64 {
        let s = text(&o.stdout);
        s.lines()
            .find_map(|l| l.strip_prefix("heap-kb "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no heap line in {s}"))
    };
    let bare = java(&[&"-cp", &classes, &"OfflLeak", &"20000"]);
    assert!(bare.status.success(), "{}", text(&bare.stderr));
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    for clock in ["sample", "wall"] {
        let data = out.join(format!("{clock}.data"));
        let run = java(&[
            &format!("-Dbci.clock={clock}"),
            &format!("-Dbci.file={}", data.display()),
            &"-cp",
            &format!("{}:{}", inst.display(), rt.display()),
            &"OfflLeak",
            &"20000",
        ]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        // ~1 KB kept per ended thread would be 20 MB more than bare
        assert!(
            heap_kb(&run) < heap_kb(&bare) + 8 * 1024,
            "clock={clock}: {} KB of heap after GC, bare {} KB",
            heap_kb(&run),
            heap_kb(&bare)
        );
        let o = bci(&[&"report", &data, &"format=methods"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let report = text(&o.stdout);
        let count = |m: &str| -> u64 {
            report
                .lines()
                .find(|l| l.ends_with(m))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("clock={clock}: no row for {m}:\n{report}"))
        };
        assert_eq!(count("OfflLeak.work(I)I"), 2_000_000, "clock={clock}");
        assert_eq!(count("OfflLeak.lambda$main$0()V"), 20_000, "clock={clock}");
    }
}

/// A class whose method table passes a String constant's 65,535 bytes (1,400 methods with
/// long names; scala-reflect's SymbolTable has 1,288) is instrumented offline like any other
/// (it was left original: "Utf8 constant longer than 65535 bytes"): the table is joined from
/// parts in `<clinit>`, and every method is counted under its own name.
#[test]
fn classes_with_a_method_table_past_64k_are_instrumented() {
    let out = fresh("bigtable");
    let src = out.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut source = String::from("public class BigTable {\n");
    for k in 0..1400 {
        source.push_str(&format!(
            "    static int method_with_a_rather_long_descriptive_name_{k:05}(java.util.Map<String, Integer> a, StringBuilder b) {{ return {k}; }}\n"
        ));
    }
    source.push_str("    public static void main(String[] args) {\n        long s = 0;\n");
    for k in [0, 700, 1399] {
        source.push_str(&format!(
            "        for (int i = 0; i < {}; i++) s += method_with_a_rather_long_descriptive_name_{k:05}(null, null);\n",
            k + 1
        ));
    }
    source.push_str("        System.out.println(\"sum \" + s);\n    }\n}\n");
    let file = src.join("BigTable.java");
    std::fs::write(&file, source).unwrap();
    let classes = out.join("classes");
    javac(&classes, &[file]);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        !text(&o.stderr).contains("left original"),
        "{}",
        text(&o.stderr)
    );
    let rt = runtime_jar(&out);
    let data = out.join("b.data");
    let run = java(&[
        &"-Xverify:all",
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &format!("{}:{}", inst.display(), rt.display()),
        &"BigTable",
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(
        text(&run.stdout).contains("sum 2449300"),
        "{}",
        text(&run.stdout)
    );
    let o = bci(&[&"report", &data, &"format=methods"]);
    let report = text(&o.stdout);
    for (k, n) in [(0, 1), (700, 701), (1399, 1400)] {
        let m = format!("BigTable.method_with_a_rather_long_descriptive_name_{k:05}(");
        let row = report
            .lines()
            .find(|l| l.contains(&m))
            .unwrap_or_else(|| panic!("no row for {m}:\n{report}"));
        assert_eq!(
            row.split_whitespace().nth(3),
            Some(n.to_string().as_str()),
            "{row}"
        );
    }
}

/// A method that cannot take probes (max_stack 65,535: NoProbes.full and full2; a `<clinit>`
/// whose exit probes would pass 65,535 bytes: NoProbesInit) stays original and the class's
/// other methods are counted, as under the agent; each such method is named and counted in
/// the summary (found by the B hunt: the whole class was left original, naming only `full`).
/// The classes come from cli/tests/fixtures/asm/GenNoProbes.java (ASM, Debian libasm-java).
#[test]
fn methods_that_cannot_take_probes_leave_only_themselves_original() {
    let out = fresh("noprobes");
    let (tools, classes, inst) = (out.join("gen"), out.join("classes"), out.join("inst"));
    let asm = "/usr/share/java/asm.jar";
    let src = fixtures().join("../asm/GenNoProbes.java");
    let st = Command::new(common::java_home().join("bin/javac"))
        .args(["-cp", asm, "-d"])
        .arg(&tools)
        .arg(src)
        .status()
        .unwrap();
    assert!(st.success(), "javac GenNoProbes");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg("-cp")
        .arg(format!("{asm}:{}", tools.display()))
        .arg("GenNoProbes")
        .arg(&classes)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = bci(&[&"instrument", &classes, &inst]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).lines().next().unwrap(),
        "bci: 2 classes, 2 instrumented (6 methods), 0 left original, 3 methods left without \
         probes"
    );
    let err = text(&o.stderr);
    for m in [
        "NoProbes.full()V: max_stack over 65535",
        "NoProbes.full2(I)I: max_stack over 65535",
        "NoProbesInit.<clinit>()V: code would be",
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("method left original: {m}"))),
            "{m}: {err}"
        );
    }
    let rt = runtime_jar(&out);
    for (main, printed, want) in [
        (
            "NoProbes",
            "0\n1\n2\n",
            &[("NoProbes.id", 6), ("NoProbes.main", 1)][..],
        ),
        (
            "NoProbesInit",
            "4024\n",
            &[("NoProbesInit.twice", 2), ("NoProbesInit.main", 1)][..],
        ),
    ] {
        let data = out.join(format!("{main}.data"));
        let run = java(&[
            &format!("-Dbci.file={}", data.display()),
            &"-cp",
            &format!("{}:{}", inst.display(), rt.display()),
            &main,
        ]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        assert_eq!(text(&run.stdout), printed);
        let o = bci(&[&"report", &data, &"format=methods"]);
        let counts = method_counts(&text(&o.stdout));
        let want: BTreeMap<String, u64> = want.iter().map(|(m, n)| (m.to_string(), *n)).collect();
        assert_eq!(counts, want, "{}", text(&o.stdout));
    }
}

/// A directory with a dangling symbolic link, a link back to a parent (a loop) and a fifo
/// next to its classes: `bci instrument` skips each with a line on stderr and instruments
/// the rest (the dangling link failed the whole run, the loop failed it after 40 levels and
/// the fifo made it hang).
#[test]
fn odd_directory_entries_are_skipped_not_fatal() {
    let out = fresh("oddfiles");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("Suids.java")]);
    std::os::unix::fs::symlink(out.join("nowhere"), classes.join("dangling.class")).unwrap();
    std::os::unix::fs::symlink(&classes, classes.join("loop")).unwrap();
    std::os::unix::fs::symlink(classes.join("Suids.class"), classes.join("Alias.class")).unwrap();
    let fifo = classes.join("pipe");
    let o = Command::new("mkfifo").arg(&fifo).output().unwrap();
    assert!(o.status.success());
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    for skipped in ["dangling.class", "loop", "pipe"] {
        assert!(
            err.lines()
                .any(|l| l.contains(skipped) && l.contains("skipped (not a regular file")),
            "{skipped}: {err}"
        );
    }
    assert!(inst.join("Suids.class").exists() && inst.join("Alias.class").exists());
    assert!(!inst.join("dangling.class").exists() && !inst.join("pipe").exists());
}

/// `bci report bci.data -o DIR/FILE` creates the missing directories, as every output of a
/// coverage report does (it failed: No such file or directory).
#[test]
fn report_output_gets_its_missing_directories() {
    let out = fresh("report-output-dirs");
    let data = out.join("bci.data");
    std::fs::write(
        &data,
        "bci-data\t1\nclock\twall\nthread\tmain\ndata\t2\t0\t0\t0\t0\t0\t9\t3\t1000000\t0\t0\n",
    )
    .unwrap();
    let o = bci(&[&"report", &data]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let file = out.join("new/deeper/java.hprof.txt");
    let o2 = bci(&[&"report", &data, &"-o", &file]);
    assert!(o2.status.success(), "{}", text(&o2.stderr));
    assert_eq!(std::fs::read(&file).unwrap(), o.stdout);
}

/// The runtime jar records call paths of -Dbci.depth frames (4 by default, for HPROF's
/// traces) whatever report comes later: a collapsed report of data in which some path reached
/// that depth says that its stacks are cut (each deeper stack would otherwise look like a root
/// of its own in a flame graph), whatever the depth: with -Dbci.depth=64 and a recursion 100
/// deep it said nothing. Data whose paths all stay below the depth renders without the
/// warning (it warned for any depth below 64).
#[test]
fn collapsed_report_of_cut_call_paths_says_so() {
    let out = fresh("collapsed-depth");
    // a thread whose call path is `frames` calls of method 0 deep (a recursion)
    let data = |name: &str, depth: usize, frames: usize| {
        let mut row = format!("data\t{}\t0\t0\t0\t0", frames + 1);
        for k in 1..=frames {
            row.push_str(&format!("\t{}\t0\t1\t10", k - 1));
        }
        row.push_str("\t1\t1000\t0\t0");
        let p = out.join(name);
        std::fs::write(
            &p,
            format!(
                "bci-data\t1\nclock\twall\ndepth\t{depth}\n\
                 method\t0\tDeep\trec\t(I)J\t\t\nthread\tmain\n{row}\n"
            ),
        )
        .unwrap();
        p
    };
    let collapsed = |p: &Path| {
        let o = bci(&[&"report", &p, &"format=collapsed"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        text(&o.stderr)
    };
    // the depth reached: cut, said, with how to record whole stacks
    let err = collapsed(&data("cut4.data", 4, 4));
    assert!(
        err.contains("holds call paths of the top 4 frames") && err.contains("-Dbci.depth=64"),
        "{err}"
    );
    let err = collapsed(&data("cut64.data", 64, 64));
    assert!(
        err.contains("holds call paths of the top 64 frames")
            && err.contains("64 frames is the most recorded"),
        "{err}"
    );
    // every path shorter than the depth: whole stacks, nothing to say
    for (name, depth, frames) in [("short4.data", 4, 3), ("short64.data", 64, 10)] {
        let err = collapsed(&data(name, depth, frames));
        assert!(!err.contains("warning"), "{name}: {err}");
    }
    // an HPROF report of 4-frame traces is what they are for: no warning
    let o = bci(&[&"report", &out.join("cut4.data")]);
    assert!(!text(&o.stderr).contains("warning"), "{}", text(&o.stderr));
}

/// -Dbci.clock=wall: System.exit from deep frames charges the frames still open when the data
/// is written (the shutdown hook's snapshot), as HPROF charged a thread's open frames. Before:
/// main and deep showed 0.000 ms.
#[test]
fn system_exit_charges_open_frames_offline() {
    let out = fresh("deep-exit");
    let classes = out.join("classes");
    javac(
        &classes,
        &[common::workspace().join("test-classes/timed/DeepExit.java")],
    );
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let data = out.join("wall.data");
    let run = java(&[
        &"-Dbci.clock=wall",
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &format!("{}:{}", inst.display(), rt.display()),
        &"DeepExit",
    ]);
    assert_eq!(run.status.code(), Some(3), "{}", text(&run.stderr));
    let o = bci(&[&"report", &data, &"format=methods"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = text(&o.stdout);
    let total = |m: &str| -> f64 {
        report
            .lines()
            .find(|l| l.ends_with(m))
            .and_then(|l| l.split_whitespace().nth(5))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no row for {m}:\n{report}"))
    };
    let (m, d) = (
        total("DeepExit.main([Ljava/lang/String;)V"),
        total("DeepExit.deep(I)V"),
    );
    assert!((550.0..3000.0).contains(&m), "main {m} ms:\n{report}");
    assert!(d >= 250.0 && d <= m, "deep {d} ms:\n{report}");
}

/// With the runtime jar (no agent) the first class to register got base id 0, which its
/// bci$r reads as "not registered yet": every call of its methods registered it again (a
/// synchronized lookup per call; fib(27) as the only class 0.47-0.56 s against 0.32 s as the
/// second). No class gets base 0 now; the report is as before (the placeholder id 0 counts
/// nothing and is not shown).
#[test]
fn the_first_class_registered_offline_gets_a_base_id_other_than_0() {
    let out = fresh("base0");
    let src = out.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("Fib.java"),
        "public class Fib {\n    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n}\n",
    )
    .unwrap();
    std::fs::write(
        src.join("Peek.java"),
        "public class Peek {\n    public static void main(String[] a) throws Exception {\n        \
         System.out.println(Fib.fib(10));\n        \
         java.lang.reflect.Field f = Fib.class.getDeclaredField(\"bci$base\");\n        \
         f.setAccessible(true);\n        System.out.println(\"base \" + f.getInt(null));\n    }\n}\n",
    )
    .unwrap();
    let classes = out.join("classes");
    javac(&classes, &[src.join("Fib.java"), src.join("Peek.java")]);
    // Fib instrumented, Peek (which reads Fib's base) not
    let one = out.join("one");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::copy(classes.join("Fib.class"), one.join("Fib.class")).unwrap();
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &one, &inst, &"--strict"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rt = runtime_jar(&out);
    let data = out.join("bci.data");
    let o = java(&[
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &format!("{}:{}:{}", inst.display(), classes.display(), rt.display()),
        &"Peek",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let base = text(&o.stdout);
    assert!(base.starts_with("55\nbase "), "{base}");
    assert_ne!(base, "55\nbase 0\n", "{}", text(&o.stderr));
    let report = out.join("report.txt");
    let o = bci(&[&"report", &data, &"-o", &report]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = std::fs::read_to_string(&report).unwrap();
    assert_eq!(method_counts(&r).get("Fib.fib"), Some(&177), "{r}");
    assert!(!r.contains("id 0"), "{r}");
}

/// Work the program's own shutdown hooks do is counted by the runtime jar, cpu=times and
/// coverage alike: the runtime's hook waits for the program's other threads (the JVM starts
/// every hook at once), here a hook that spins ~300 ms before it calls work() 1000 times and
/// one that runs a thread of its own (work() 500 times); before, both were missed (work 10).
/// With System.exit and a non-daemon thread parked forever the wait ends once nothing
/// progresses (the run ends; the counts are the same).
#[test]
fn work_in_the_programs_shutdown_hooks_is_counted() {
    let out = fresh("hooks");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("OfflHook.java")]);
    let rt = runtime_jar(&out);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let cov = out.join("cov");
    let o = bci(&[&"instrument", &"--coverage", &classes, &cov]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for mode in ["end", "exit"] {
        let data = out.join(format!("{mode}.data"));
        let run = java(&[
            &format!("-Dbci.file={}", data.display()),
            &"-cp",
            &format!("{}:{}", inst.display(), rt.display()),
            &"OfflHook",
            &mode,
        ]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        let o = bci(&[&"report", &data, &"format=methods"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let counts = method_counts(&text(&o.stdout));
        assert_eq!(
            counts.get("OfflHook.work"),
            Some(&1510),
            "{mode}: {counts:?}"
        );
        assert_eq!(
            counts.get("OfflHook.inHook"),
            Some(&1),
            "{mode}: {counts:?}"
        );

        let covdata = out.join(format!("{mode}.cov"));
        let run = java(&[
            &format!("-Dbci.covfile={}", covdata.display()),
            &"-cp",
            &format!("{}:{}", cov.display(), rt.display()),
            &"OfflHook",
            &mode,
        ]);
        assert!(run.status.success(), "{}", text(&run.stderr));
        let lcov = out.join(format!("{mode}.info"));
        let o = bci(&[
            &"report",
            &covdata,
            &"--classes",
            &classes,
            &"--lcov",
            &lcov,
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let lcov = std::fs::read_to_string(&lcov).unwrap();
        assert!(
            lcov.contains("FNDA:1510,OfflHook.work(I)I"),
            "{mode}: {lcov}"
        );
        assert!(lcov.contains("FNDA:1,OfflHook.inHook()V"), "{mode}: {lcov}");
    }
}

/// A library whose first use is in the program's shutdown hook (only it instrumented): the
/// runtime registers while the JVM shuts down, when no shutdown hook can be added. Before, the
/// runtimes' Runtime.addShutdownHook threw IllegalStateException ("Shutdown in progress") out of
/// the library's `<clinit>` and the program's hook died (ExceptionInInitializerError); now the
/// program prints what it prints bare and the data is written once the hook has ended.
#[test]
fn classes_first_used_in_a_shutdown_hook_are_counted() {
    let out = fresh("late-hook");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("OfflLateHook.java")]);
    let rt = runtime_jar(&out);
    let cp = |dir: &Path| format!("{}:{}", dir.display(), rt.display());
    for (kind, flags) in [("cpu", &[][..]), ("cov", &["--coverage"][..])] {
        let inst = out.join(kind);
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"instrument"];
        for f in flags {
            args.push(f);
        }
        args.extend([
            &classes as &dyn AsRef<std::ffi::OsStr>,
            &inst,
            &"--exclude",
            &"OfflLateHook*",
        ]);
        let o = bci(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        for mode in ["end", "exit"] {
            let bare = java(&[&"-cp", &classes, &"OfflLateHook", &mode]);
            let data = out.join(format!("{kind}-{mode}.data"));
            let prop = if kind == "cpu" {
                "bci.file"
            } else {
                "bci.covfile"
            };
            let run = java(&[
                &format!("-D{prop}={}", data.display()),
                &"-cp",
                &cp(&inst),
                &"OfflLateHook",
                &mode,
            ]);
            let err = text(&run.stderr);
            assert!(run.status.success(), "{kind} {mode}: {err}");
            assert_eq!(
                text(&run.stdout),
                text(&bare.stdout),
                "{kind} {mode}: {err}"
            );
            assert!(!err.contains("Exception"), "{kind} {mode}: {err}");
            if kind == "cpu" {
                let o = bci(&[&"report", &data, &"format=methods"]);
                assert!(o.status.success(), "{kind} {mode}: {}", text(&o.stderr));
                let counts = method_counts(&text(&o.stdout));
                assert_eq!(
                    counts.get("OfflLate.work"),
                    Some(&1500),
                    "{mode}: {counts:?}"
                );
            } else {
                let lcov = out.join(format!("{mode}.info"));
                let o = bci(&[&"report", &data, &"--classes", &classes, &"--lcov", &lcov]);
                assert!(o.status.success(), "{kind} {mode}: {}", text(&o.stderr));
                let lcov = std::fs::read_to_string(&lcov).unwrap();
                assert!(
                    lcov.contains("FNDA:1500,OfflLate.work(I)I"),
                    "{mode}: {lcov}"
                );
            }
        }
    }
}

/// An instrumented system class loader (`-Djava.system.class.loader=`) registers while the VM
/// makes it, when java.management cannot start. Before, the clock=sample sampler started it
/// there: "clock=sample not available (... during VM init); using clock=wall", and the program
/// then died with NoClassDefFoundError (ManagementFactory left broken). Now the sampler waits
/// for the loader: the program prints what it prints bare, recorded with clock=sample.
#[test]
fn an_instrumented_system_class_loader_keeps_management_and_clock_sample() {
    let out = fresh("sysloader");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("OfflSysLoader.java")]);
    let rt = runtime_jar(&out);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let loader = "-Djava.system.class.loader=OfflSysLoader";
    let bare = java(&[&"-Xshare:off", &loader, &"-cp", &classes, &"OfflSysLoader"]);
    assert!(bare.status.success(), "{}", text(&bare.stderr));
    let data = out.join("bci.data");
    let run = java(&[
        &"-Xshare:off",
        &loader,
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &format!("{}:{}", inst.display(), rt.display()),
        &"OfflSysLoader",
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert_eq!(text(&run.stdout), text(&bare.stdout), "{err}");
    assert!(!err.contains("not available"), "{err}");
    let o = bci(&[&"report", &data, &"format=methods"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = text(&o.stdout);
    assert!(report.contains("clock = sample"), "{report}");
    let counts = method_counts(&report);
    assert_eq!(counts.get("OfflSysLoader.work"), Some(&100), "{counts:?}");
}

/// A program that interrupts every thread it sees (Thread.getAllStackTraces lists the
/// runtime's) keeps its times: before, the sampler's sleep returned on the first interrupt and
/// the thread ended, so OfflInterrupt.spin, run after the interrupts, had no time at all.
#[test]
fn the_programs_interrupts_do_not_stop_the_sampler() {
    let out = fresh("interrupts");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("OfflInterrupt.java")]);
    let rt = runtime_jar(&out);
    let inst = out.join("inst");
    let o = bci(&[&"instrument", &classes, &inst]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let data = out.join("bci.data");
    let run = java(&[
        &format!("-Dbci.file={}", data.display()),
        &"-cp",
        &format!("{}:{}", inst.display(), rt.display()),
        &"OfflInterrupt",
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert_eq!(text(&run.stdout), "done\n", "{err}");
    let o = bci(&[&"report", &data, &"format=methods"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = text(&o.stdout);
    assert!(report.contains("clock = sample"), "{report}");
    // rank self total count self(ms) total(ms) method
    let self_ms: f64 = report
        .lines()
        .find(|l| l.ends_with(" OfflInterrupt.spin()V"))
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no row for spin: {report}"));
    assert!(self_ms > 0.0, "spin has no sampled time: {report}");
}

/// `classes` instrumented into `out/<kind>` (`cov`: `--coverage`, else cpu=times), leaving out
/// the classes `exclude` names (the program that loads them through its own loaders).
fn instrument_kind(classes: &Path, out: &Path, kind: &str, exclude: &str) -> PathBuf {
    let inst = out.join(kind);
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"instrument"];
    if kind == "cov" {
        args.push(&"--coverage");
    }
    args.extend([
        &classes as &dyn AsRef<std::ffi::OsStr>,
        &inst,
        &"--exclude",
        &exclude,
    ]);
    let o = bci(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    inst
}

/// Several copies of the runtime jar in one JVM, one per class loader (a web application's
/// WEB-INF/lib), each loading the instrumented OfflDep: nothing is lost. Before, coverage
/// copies failed on the file lock (`cannot write coverage data to ...:
/// OverlappingFileLockException`, FNDA 1 of 3) and cpu=times copies overwrote one data file
/// (count 1 of 3). Now coverage copies add to the file one after another, each its own
/// session; cpu=times copies write a file each, named on stderr.
#[test]
fn runtime_copies_in_several_class_loaders_keep_every_count() {
    let out = fresh("loaders");
    let classes = out.join("classes");
    let fx = fixtures();
    javac(
        &classes,
        &[fx.join("OfflLoaders.java"), fx.join("OfflDep.java")],
    );
    let rt = runtime_jar(&out);
    for (kind, prop) in [("cpu", "bci.file"), ("cov", "bci.covfile")] {
        let inst = instrument_kind(&classes, &out, kind, "OfflLoaders*");
        let data = out.join(format!("x.{kind}"));
        let run = java(&[
            &format!("-D{prop}={}", data.display()),
            &"-cp",
            &classes,
            &"OfflLoaders",
            &"3",
            &inst,
            &rt,
        ]);
        let err = text(&run.stderr);
        assert!(run.status.success(), "{kind}: {err}");
        assert_eq!(text(&run.stdout), "done 3: 9\n", "{kind}: {err}");
        assert!(!err.contains("cannot write"), "{kind}: {err}");
        if kind == "cov" {
            let lcov = out.join("x.info");
            let o = bci(&[&"report", &data, &"--classes", &classes, &"--lcov", &lcov]);
            assert!(o.status.success(), "{}", text(&o.stderr));
            assert!(
                text(&o.stdout).contains("3 sessions in"),
                "{}",
                text(&o.stdout)
            );
            let lcov = std::fs::read_to_string(&lcov).unwrap();
            assert!(lcov.contains("FNDA:3,OfflDep.hello(I)I"), "{lcov}");
            continue;
        }
        // each copy's file, named on stderr: the data file and two beside it
        let files: Vec<&str> = err
            .lines()
            .filter_map(|l| l.split(" written to ").nth(1)?.split(';').next())
            .collect();
        assert_eq!(files.len(), 3, "{err}");
        // (the copies' exit hooks run at once: any of them may finish first)
        assert!(
            files.contains(&data.display().to_string().as_str()),
            "{err}"
        );
        let distinct: std::collections::BTreeSet<&&str> = files.iter().collect();
        assert_eq!(distinct.len(), 3, "one file each: {err}");
        for f in &files {
            let o = bci(&[&"report", f, &"format=methods"]);
            assert!(o.status.success(), "{f}: {}", text(&o.stderr));
            let counts = method_counts(&text(&o.stdout));
            assert_eq!(counts.get("OfflDep.hello"), Some(&1), "{f}: {counts:?}");
        }
    }
}

/// The runtime jar in a class loader that the program stops before it exits, as Tomcat stops a
/// web application's loader (the jar in WEB-INF/lib) before the JVM runs the shutdown hooks:
/// from then on that loader's loadClass refuses every name. The data is written with exact
/// counts, coverage and cpu=times. Before, the exit hooks resolved classes lazily through the
/// stopped loader and died (`NoClassDefFoundError: java/io/PrintStream` in Cov.writeAtExit,
/// `java/lang/StringBuilder` in Offline.dump; found by the server hunt): no data file at all.
#[test]
fn runtime_in_a_class_loader_stopped_before_exit_writes_its_data() {
    let out = fresh("stopped");
    let classes = out.join("classes");
    let fx = fixtures();
    javac(
        &classes,
        &[fx.join("OfflClosed.java"), fx.join("OfflDep.java")],
    );
    let rt = runtime_jar(&out);
    for (kind, prop) in [("cpu", "bci.file"), ("cov", "bci.covfile")] {
        let inst = instrument_kind(&classes, &out, kind, "OfflClosed*");
        let data = out.join(format!("x.{kind}"));
        let run = java(&[
            &format!("-D{prop}={}", data.display()),
            &"-cp",
            &classes,
            &"OfflClosed",
            &inst,
            &rt,
        ]);
        let err = text(&run.stderr);
        assert!(run.status.success(), "{kind}: {err}");
        assert_eq!(text(&run.stdout), "done: 32\n", "{kind}: {err}");
        assert!(!err.contains("Exception"), "{kind}: {err}");
        assert!(data.is_file(), "{kind}: no data file: {err}");
        if kind == "cov" {
            let lcov = out.join("x.info");
            let o = bci(&[&"report", &data, &"--classes", &classes, &"--lcov", &lcov]);
            assert!(o.status.success(), "{}", text(&o.stderr));
            let lcov = std::fs::read_to_string(&lcov).unwrap();
            assert!(lcov.contains("FNDA:8,OfflDep.hello(I)I"), "{lcov}");
        } else {
            let o = bci(&[&"report", &data, &"format=methods"]);
            assert!(o.status.success(), "{}", text(&o.stderr));
            let counts = method_counts(&text(&o.stdout));
            assert_eq!(counts.get("OfflDep.hello"), Some(&8), "{counts:?}");
        }
    }
}

/// Under a SecurityManager (JDK 17 `-Djava.security.manager`) whose policy grants the runtime
/// jar AllPermission and the program nothing: the program runs as bare (still confined:
/// `user.home denied`) and the data is written. Before, the first instrumented class died in
/// `<clinit>` with AccessControlException reading "bci.file" (cpu) or "bci.cov.dump" (coverage):
/// the runtime's own work ran with the program's permissions.
#[test]
fn a_security_policy_granting_the_runtime_jar_is_enough() {
    let out = fresh("secure");
    let classes = out.join("classes");
    javac(&classes, &[fixtures().join("OfflSecure.java")]);
    let rt = runtime_jar(&out);
    let policy = out.join("rt.policy");
    std::fs::write(
        &policy,
        format!(
            "grant codeBase \"file:{}\" {{ permission java.security.AllPermission; }};\n",
            rt.display()
        ),
    )
    .unwrap();
    let sm = "-Djava.security.manager";
    let pol = format!("-Djava.security.policy={}", policy.display());
    let bare = java(&[&sm, &pol, &"-cp", &classes, &"OfflSecure"]);
    assert!(bare.status.success(), "{}", text(&bare.stderr));
    assert_eq!(text(&bare.stdout), "sum 55\nuser.home denied\n");
    for (kind, prop) in [("cpu", "bci.file"), ("cov", "bci.covfile")] {
        let inst = out.join(kind);
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"instrument"];
        if kind == "cov" {
            args.push(&"--coverage");
        }
        args.extend([&classes as &dyn AsRef<std::ffi::OsStr>, &inst]);
        let o = bci(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let data = out.join(format!("x.{kind}"));
        let run = java(&[
            &sm,
            &pol,
            &format!("-D{prop}={}", data.display()),
            &"-cp",
            &format!("{}:{}", inst.display(), rt.display()),
            &"OfflSecure",
        ]);
        let err = text(&run.stderr);
        assert!(run.status.success(), "{kind}: {err}");
        assert_eq!(text(&run.stdout), text(&bare.stdout), "{kind}: {err}");
        if kind == "cpu" {
            let o = bci(&[&"report", &data, &"format=methods"]);
            assert!(o.status.success(), "{}", text(&o.stderr));
            let counts = method_counts(&text(&o.stdout));
            assert_eq!(counts.get("OfflSecure.work"), Some(&10), "{counts:?}");
        } else {
            let lcov = out.join("x.info");
            let o = bci(&[&"report", &data, &"--classes", &classes, &"--lcov", &lcov]);
            assert!(o.status.success(), "{}", text(&o.stderr));
            let lcov = std::fs::read_to_string(&lcov).unwrap();
            assert!(lcov.contains("FNDA:10,OfflSecure.work(I)I"), "{lcov}");
        }
    }
}

/// The summary of `bci instrument` adds up: every class is instrumented, left original, or
/// named for why it was copied as it is (an interface without code: nothing to count; left
/// out by --exclude; instrumented already), and a count of 1 is singular. Before: `3 classes,
/// 1 instrumented with coverage counters, 0 left original` for a class, an interface without
/// code and a class excluded, and `1 classes were instrumented already`.
#[test]
fn instrument_summary_adds_up() {
    let out = fresh("summary");
    let (classes, cov, again) = (out.join("classes"), out.join("cov"), out.join("again"));
    let src = out.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for (f, t) in [
        ("A.java", "public class A { int f() { return 1; } }"),
        ("B.java", "public class B { int g() { return 2; } }"),
        ("I.java", "public interface I { int f(); }"),
    ] {
        std::fs::write(src.join(f), t).unwrap();
    }
    javac(
        &classes,
        &["A.java", "B.java", "I.java"].map(|f| src.join(f)),
    );
    let o = bci(&[
        &"instrument",
        &"--coverage",
        &classes,
        &cov,
        &"--exclude",
        &"B",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).lines().next().unwrap(),
        "bci: 3 classes, 1 instrumented with coverage counters, 1 without code to count, 1 not \
         selected by --include/--exclude, 0 left original"
    );
    let o = bci(&[&"instrument", &"--coverage", &cov, &again]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "bci: 3 classes, 1 instrumented with coverage counters, 1 without code to count, 1 \
         instrumented already, 0 left original\n\
         bci: run it with the runtime jar (bci runtime-jar bci-runtime.jar) on the class path; \
         it writes bci.cov at exit for bci report\n\
         bci: 1 class was instrumented already and was copied as it is\n"
    );
    // cpu=times probes: the interface has nothing to probe
    let o = bci(&[&"instrument", &classes, &out.join("cpu")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).lines().next().unwrap(),
        "bci: 3 classes, 2 instrumented (4 methods), 1 without code to probe, 0 left original"
    );
}
