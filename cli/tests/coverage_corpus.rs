//! A jar corpus under coverage (issue 10, "What it must show" 2): Debian's guava and rhino
//! instrumented jar-to-jar with `bci instrument --coverage`; every instrumented class passes our
//! verifier (`bci verify`) and HotSpot `-Xverify:all` (each class linked without running its
//! `<clinit>`); no method is left without counters; rhino runs a script under coverage with the
//! runtime jar, and the data file it writes decodes and the analysis of every rhino class (and
//! of every guava class, without data) succeeds.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::coverage::analysis::{analyze, Line, Status};
use bci_rewriter::coverage::data::CovData;
use bci_rewriter::coverage::lcov::source_path;
use bci_rewriter::coverage::{class_hash, plan_class};
use bci_rewriter::flow::Split;
use std::collections::BTreeMap;
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
    // (the classes without code to count come between: the last count is those left original)
    (nums[0], nums[1], *nums.last().unwrap(), left)
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

const JACOCO_CORE: &str = "/usr/share/java/org.jacoco.core.jar";

/// `pkg/File.java:LINE` of every line that holds an `assert`'s instructions (a read of
/// `$assertionsDisabled` or `Class.desiredAssertionStatus()`).
fn assert_lines(classes: &[(String, Vec<u8>)]) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for (_, b) in classes {
        let cf = bci::ClassFile::parse(b).unwrap();
        let name = cf.name().unwrap().into_owned();
        let pkg = name.rfind('/').map_or("", |i| &name[..=i]);
        let Some(file) = cf.source_file() else {
            continue;
        };
        for m in &cf.methods {
            let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
                continue;
            };
            let code = bci::CodeAttr::parse(&cf, a).unwrap();
            let mut table = match cf.find_attr(&code.attributes, "LineNumberTable") {
                Some((_, l)) => bci::attrs::LineNumbers::parse(l.data, 0).unwrap().entries,
                None => continue,
            };
            table.sort();
            for i in code.decode_all().unwrap() {
                let Some(r) = i.cp_index(code.code).and_then(|c| cf.cp.member_ref(c).ok()) else {
                    continue;
                };
                if r.name == "$assertionsDisabled" || r.name == "desiredAssertionStatus" {
                    let at = table.partition_point(|&(p, _)| p as u32 <= i.pc);
                    if at > 0 {
                        out.insert(format!("{pkg}{file}:{}", table[at - 1].1));
                    }
                }
            }
        }
    }
    out
}

/// Every line of a jar's classes as JaCoCo 0.8.6 (Debian's libjacoco-java) analyses them
/// without data (`pkg/File.java:LINE -> "not 0/T"`): which lines have code after its filters,
/// and their branch counts.
fn jacoco_lines(jar: &Path, dir: &Path, work: &Path) -> BTreeMap<String, String> {
    let jh = common::java_home();
    let cp = [
        JACOCO_CORE,
        "/usr/share/java/asm.jar",
        "/usr/share/java/asm-tree.jar",
        "/usr/share/java/asm-commons.jar",
        "/usr/share/java/asm-analysis.jar",
    ]
    .join(":");
    let tool = work.join("jacoco-lines");
    if !tool.join("JacocoLines.class").exists() {
        let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/JacocoLines.java");
        let st = Command::new(jh.join("bin/javac"))
            .args(["-cp", &cp, "-d"])
            .arg(&tool)
            .arg(fx)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let out = Command::new(jh.join("bin/java"))
        .arg("-cp")
        .arg(format!("{}:{cp}", tool.display()))
        .args(["JacocoLines", "-"])
        .arg(dir)
        .arg("--package")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        jar.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Our analysis of the same classes without data, in [`jacoco_lines`]' words.
fn our_lines(classes: &[(String, Vec<u8>)]) -> BTreeMap<String, String> {
    let mut lines: BTreeMap<(String, u32), Line> = BTreeMap::new();
    for (name, b) in classes {
        let c = analyze(b, None, Split::AfterCalls).unwrap_or_else(|e| panic!("{name}: {e}"));
        let p = source_path(&c);
        for (l, x) in &c.lines {
            let e = lines.entry((p.clone(), *l)).or_default();
            e.instructions.add(x.instructions);
            e.branches.add(x.branches);
        }
    }
    lines
        .into_iter()
        .filter(|(_, x)| x.status() != Status::Empty)
        .map(|((p, l), x)| {
            let st = match x.status() {
                Status::NotCovered => "not",
                Status::PartlyCovered => "partly",
                _ => "full",
            };
            (
                format!("{p}:{l}"),
                format!("{st} {}/{}", x.branches.covered, x.branches.total()),
            )
        })
        .collect()
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

        // The same lines as JaCoCo 0.8.6 finds, with the same branch counts, but on lines of
        // an `assert` (0.8.6 has no assert filter; later JaCoCo has ours).
        if Path::new(JACOCO_CORE).exists() {
            let orig = work.join(format!("{stem}-orig"));
            extract(jar, &orig);
            let classes = jar_classes(jar);
            let theirs = jacoco_lines(jar, &orig, &work);
            let ours = our_lines(&classes);
            let asserts = assert_lines(&classes);
            let mut wrong = Vec::new();
            let mut on_asserts = 0;
            let keys: std::collections::BTreeSet<&String> =
                theirs.keys().chain(ours.keys()).collect();
            for k in keys {
                let (t, o) = (theirs.get(k), ours.get(k));
                if t != o {
                    if asserts.contains(k.as_str()) {
                        on_asserts += 1;
                    } else {
                        wrong.push(format!("{k}: JaCoCo {t:?}, bci {o:?}"));
                    }
                }
            }
            eprintln!(
                "{stem}: {} lines, {} by JaCoCo 0.8.6; differ on {} assert lines, {} others",
                ours.len(),
                theirs.len(),
                on_asserts,
                wrong.len()
            );
            assert!(
                theirs.len() > 10_000,
                "{stem}: JaCoCo found {} lines",
                theirs.len()
            );
            assert!(
                wrong.is_empty(),
                "{}",
                wrong[..wrong.len().min(30)].join("\n")
            );
        } else {
            assert!(
                std::env::var_os("CI").is_none(),
                "{JACOCO_CORE} missing under CI (package libjacoco-java)"
            );
            eprintln!("SKIPPED: the comparison with JaCoCo (apt-get install libjacoco-java)");
        }
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
