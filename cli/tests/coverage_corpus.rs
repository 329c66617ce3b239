//! A jar corpus under coverage (issue 10, "What it must show" 2): Debian's guava and rhino
//! instrumented jar-to-jar with `bci instrument --coverage`; every instrumented class passes our
//! verifier (`bci verify`) and HotSpot `-Xverify:all` (each class linked without running its
//! `<clinit>`); no method is left without counters; rhino runs a script under coverage with the
//! runtime jar, and the data file it writes decodes and the analysis of every rhino class (and
//! of every guava class, without data) succeeds.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::coverage::analysis::analyze;
use bci_rewriter::coverage::data::CovData;
use bci_rewriter::coverage::{class_hash, plan_class};
use bci_rewriter::flow::Split;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const GUAVA: &str = "/usr/share/java/guava.jar";
const RHINO: &str = "/usr/share/java/rhino.jar";
/// Guava's compile-time annotation dependencies (Debian packages of libguava-java's depends):
/// on the class path so that HotSpot and our verifier can load what guava's classes name.
const GUAVA_DEPS: &[&str] = &[
    "/usr/share/java/error_prone_annotations.jar",
    "/usr/share/java/jsr305.jar",
];

fn bci(args: &[&std::ffi::OsStr]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_bci"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bci {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The `.class` entries of a jar outside META-INF: (entry name, bytes).
fn jar_classes(jar: &Path) -> Vec<(String, Vec<u8>)> {
    use std::io::Read;
    let mut z = zip::ZipArchive::new(std::fs::File::open(jar).unwrap()).unwrap();
    let mut out = Vec::new();
    for i in 0..z.len() {
        let mut e = z.by_index(i).unwrap();
        let name = e.name().to_string();
        if !name.ends_with(".class") || name.starts_with("META-INF/") {
            continue;
        }
        let mut b = Vec::new();
        e.read_to_end(&mut b).unwrap();
        out.push((name, b));
    }
    out
}

/// Writes the classes of a jar under `dir` (what the HotSpot harness loads).
fn extract(jar: &Path, dir: &Path) -> usize {
    let classes = jar_classes(jar);
    for (name, b) in &classes {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b).unwrap();
    }
    classes.len()
}

/// `bci instrument --coverage JAR OUT`: (classes, instrumented, left original) from its
/// summary line, and the lines naming methods left without counters.
fn instrument(jar: &Path, out: &Path) -> (usize, usize, usize, Vec<String>) {
    let o = bci(&[
        "instrument".as_ref(),
        "--coverage".as_ref(),
        jar.as_os_str(),
        out.as_os_str(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let summary = text
        .lines()
        .find(|l| l.contains("instrumented with coverage counters"))
        .unwrap_or_else(|| panic!("no summary: {text}"));
    eprintln!("{}: {summary}", jar.display());
    let nums: Vec<usize> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let left: Vec<String> = text
        .lines()
        .filter(|l| l.contains("left without counters") || l.contains("left original:"))
        .map(String::from)
        .collect();
    (nums[0], nums[1], nums[2], left)
}

/// HotSpot -Xverify:all on every class under `dir`: (linked and verified, total); asserts none
/// is rejected (VerifyError, ClassFormatError).
fn hotspot(dir: &Path, cp: &[PathBuf]) -> (usize, usize) {
    let verdicts =
        bci_verify::oracle::run_hotspot(&common::java_home(), dir, false, cp).expect("oracle ran");
    let ok = verdicts.iter().filter(|v| v.ok).count();
    let rejected: Vec<String> = verdicts
        .iter()
        .filter(|v| v.rejected())
        .map(|v| format!("{}: {}", v.class, v.message))
        .collect();
    let other: Vec<_> = verdicts.iter().filter(|v| !v.ok && !v.rejected()).collect();
    eprintln!(
        "hotspot {}: {} classes, {ok} linked and verified, {} rejected, {} other",
        dir.display(),
        verdicts.len(),
        rejected.len(),
        other.len()
    );
    for v in other.iter().take(5) {
        eprintln!("  other: {} {:?}: {}", v.class, v.kind, v.message);
    }
    assert!(
        rejected.is_empty(),
        "{} rejected:\n{}",
        rejected.len(),
        rejected[..rejected.len().min(20)].join("\n")
    );
    (ok, verdicts.len())
}

#[test]
fn guava_and_rhino_under_coverage_verify_and_run() {
    for jar in [GUAVA, RHINO] {
        if !Path::new(jar).exists() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{jar} missing under CI (packages libguava-java, rhino)"
            );
            eprintln!("SKIPPED: {jar} not installed (apt-get install libguava-java rhino)");
            return;
        }
    }
    let work = common::workspace().join("target/test-out/coverage-corpus");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let rt = work.join("bci-runtime.jar");
    bci(&["runtime-jar".as_ref(), rt.as_os_str()]);
    let deps: Vec<PathBuf> = GUAVA_DEPS
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .collect();

    for (jar, extra) in [(GUAVA, &deps[..]), (RHINO, &[][..])] {
        let jar = Path::new(jar);
        let stem = jar.file_stem().unwrap().to_string_lossy().into_owned();
        let inst = work.join(format!("{stem}-cov.jar"));
        let (classes, instrumented, left, why) = instrument(jar, &inst);
        // Every class with code gets counters, every method with code too.
        assert!(classes > 400, "{stem}: only {classes} classes");
        assert_eq!(
            left,
            0,
            "{stem}: {left} classes left original:\n{}",
            why.join("\n")
        );
        assert!(why.is_empty(), "{stem}:\n{}", why.join("\n"));
        // Every class with a method with code is instrumented (the rest: interfaces and
        // annotations without code).
        let with_code = jar_classes(jar)
            .iter()
            .filter(|(name, b)| {
                let p = plan_class(b, Split::AfterCalls)
                    .unwrap_or_else(|e| panic!("{stem}: {name}: {e}"));
                !p.methods.is_empty()
            })
            .count();
        assert_eq!(
            instrumented, with_code,
            "{stem}: {instrumented} of {classes} instrumented"
        );

        // Our verifier: the instrumented jar, its dependencies and the runtime jar as hierarchy.
        let mut cp: Vec<PathBuf> = extra.to_vec();
        cp.push(rt.clone());
        let cp_arg = std::env::join_paths(&cp).unwrap();
        bci(&[
            "verify".as_ref(),
            inst.as_os_str(),
            "--classpath".as_ref(),
            cp_arg.as_os_str(),
        ]);

        // HotSpot -Xverify:all links every instrumented class.
        let dir = work.join(format!("{stem}-classes"));
        let n = extract(&inst, &dir);
        assert_eq!(n, jar_classes(jar).len(), "{stem}: classes lost");
        let (ok, total) = hotspot(&dir, &cp);
        assert_eq!(total, n);
        // Link failures unrelated to verification (an optional dependency absent) stay rare.
        assert!(
            ok * 100 >= total * 98,
            "{stem}: only {ok} of {total} linked"
        );

        // The analysis of every original class succeeds (no data: everything missed).
        let mut analysed = 0;
        for (name, bytes) in jar_classes(jar) {
            let c = analyze(&bytes, None, Split::AfterCalls)
                .unwrap_or_else(|e| panic!("{stem}: {name}: {e}"));
            assert_eq!(c.counters.instructions.covered, 0, "{name}");
            analysed += 1;
        }
        assert_eq!(analysed, n);
    }

    // Rhino runs a script under coverage with the runtime jar: same output as bare, a data file
    // that decodes, and every rhino class analysed against it.
    let jh = common::java_home();
    let script = "function fib(n){return n<2?n:fib(n-1)+fib(n-2)}; var s=0; for (var i=0;i<5;i++) s+=fib(15); \
                  try { null.x } catch (e) { s += 1 }; print('result ' + s + ' ' + [3,1,2].sort().join(','));";
    let data = work.join("rhino.cov");
    let run = |cp: &str, cov: bool| {
        let mut c = Command::new(jh.join("bin/java"));
        c.arg("-Xverify:all");
        if cov {
            c.arg(format!("-Dbci.covfile={}", data.display()));
        }
        let o = c
            .args([
                "-cp",
                cp,
                "org.mozilla.javascript.tools.shell.Main",
                "-e",
                script,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let bare = run(RHINO, false);
    assert_eq!(bare.trim(), "result 3051 1,2,3");
    let inst = work.join("rhino-cov.jar");
    let covered = run(&format!("{}:{}", inst.display(), rt.display()), true);
    assert_eq!(covered, bare);
    let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    assert_eq!(d.sessions.len(), 1);
    let (mut with_data, mut ran, mut methods_ran) = (0, 0, 0);
    for (name, bytes) in jar_classes(Path::new(RHINO)) {
        let cf = bci::ClassFile::parse(&bytes).unwrap();
        let counts = d.counts(&cf.name().unwrap(), class_hash(&bytes));
        with_data += counts.is_some() as usize;
        let c = analyze(&bytes, counts, Split::AfterCalls)
            .unwrap_or_else(|e| panic!("rhino: {name}: {e}"));
        ran += (c.counters.classes.covered > 0) as usize;
        methods_ran += c.counters.methods.covered;
    }
    eprintln!(
        "rhino run: {} classes in the data file, {with_data} matched, {ran} classes and {methods_ran} methods ran",
        d.classes.len()
    );
    // Every class in the data file is a rhino class of this build.
    assert_eq!(with_data, d.classes.len());
    assert!(
        ran > 100 && methods_ran > 1000,
        "{ran} classes, {methods_ran} methods ran"
    );
}

/// The analysis (filters included) of every JDK 17 class succeeds: no error, no panic.
#[test]
fn every_jdk_class_analyses() {
    let src = common::jdk_corpus();
    let (mut classes, mut methods) = (0usize, 0usize);
    let mut filtered: std::collections::BTreeMap<&'static str, usize> = Default::default();
    let mut errors = Vec::new();
    for f in common::class_files(&src) {
        let bytes = std::fs::read(&f).unwrap();
        match analyze(&bytes, None, Split::AfterCalls) {
            Ok(c) => {
                classes += 1;
                methods += c.methods.len();
                for (_, _, why) in c.filtered {
                    *filtered.entry(why).or_default() += 1;
                }
            }
            Err(e) => errors.push(format!("{}: {e}", f.display())),
        }
    }
    eprintln!("JDK: {classes} classes analysed, {methods} methods, filtered: {filtered:?}");
    assert!(
        errors.is_empty(),
        "{} errors:\n{}",
        errors.len(),
        errors[..errors.len().min(20)].join("\n")
    );
    assert!(classes > 20_000 && methods > 150_000);
    for why in [
        "synthetic",
        "bridge",
        "record member",
        "enum values/valueOf",
    ] {
        assert!(
            filtered.get(why).is_some_and(|&n| n > 0),
            "no {why} in the JDK"
        );
    }
}
