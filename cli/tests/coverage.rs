//! Coverage end to end: test-classes/coverage/*.java compiled by javac, every class
//! instrumented with coverage counters, run under HotSpot -Xverify:all with the Java runtime
//! (agent/java/bci/runtime/Cov.java), counters solved back into per-line counts, and every
//! `// hits=N` written in the sources asserted exactly.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::coverage::analysis::{analyze, analyze_plan, Class, Line, Status};
use bci_rewriter::coverage::data::CovData;
use bci_rewriter::coverage::{class_hash, instrument, ClassId, Options, Skipped};
use bci_rewriter::flow::Split;
use bci_rewriter::Outcome;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn javac_with(jh: &Path, args: &[&str], out: &Path, sources: &[std::path::PathBuf]) {
    let st = Command::new(jh.join("bin/javac"))
        .args(args)
        .arg("-d")
        .arg(out)
        .args(sources)
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
}

/// test-classes/coverage/*.java compiled with debug information into `out`: (the source
/// directory, the sources).
fn compile_sources(out: &Path) -> (PathBuf, Vec<PathBuf>) {
    compile_sources_with(&common::java_home(), out)
}

fn compile_sources_with(jh: &Path, out: &Path) -> (PathBuf, Vec<PathBuf>) {
    compile_dir(jh, "test-classes/coverage", out)
}

/// The .java files of `dir` (in the workspace) compiled with debug information into `out`.
fn compile_dir(jh: &Path, dir: &str, out: &Path) -> (PathBuf, Vec<PathBuf>) {
    let src_dir = common::workspace().join(dir);
    let sources: Vec<_> = std::fs::read_dir(&src_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    javac_with(jh, &["-g"], out, &sources);
    (src_dir, sources)
}

/// What a source line's comment says: `// hits=N`, optionally `br=C/T` (covered and total
/// branch outcomes on the line) and `st=full|partly|not` (JaCoCo's line status). Without
/// `st=`, the status follows from the rest: not covered when `hits=0`, partly when a branch
/// was missed, else fully covered.
#[derive(Debug)]
struct Expect {
    hits: u64,
    branches: Option<(u64, u64)>,
    status: Status,
}

/// The classes `bci report` counts: those with code left after the filters (JaCoCo leaves out
/// classes without code, e.g. interfaces with only abstract methods and `$SwitchMap$` holders).
fn classes_with_code(dir: &Path) -> Vec<String> {
    common::class_files(dir)
        .iter()
        .map(|f| analyze(&std::fs::read(f).unwrap(), None, Split::AfterCalls).unwrap())
        .filter(|c| c.counters.instructions.total() > 0)
        .map(|c| c.name)
        .collect()
}

fn number(s: &str) -> Option<u64> {
    let n: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    n.parse().ok()
}

/// `line -> expectation` of a source file.
fn expectations(src: &Path) -> BTreeMap<u32, Expect> {
    let text = std::fs::read_to_string(src).unwrap();
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let Some(p) = line.find("// hits=") else {
            continue;
        };
        let Some(hits) = number(&line[p + 8..]) else {
            continue;
        };
        let branches = line.find(" br=").and_then(|q| {
            let (c, t) = line[q + 4..].split_once('/')?;
            Some((number(c)?, number(t)?))
        });
        let status = match line.find(" st=").map(|q| &line[q + 4..]) {
            Some(w) if w.starts_with("full") => Status::FullyCovered,
            Some(w) if w.starts_with("partly") => Status::PartlyCovered,
            Some(w) if w.starts_with("not") => Status::NotCovered,
            Some(w) => panic!("{}:{}: unknown status {w}", src.display(), i + 1),
            None if hits == 0 => Status::NotCovered,
            None if branches.is_some_and(|(c, t)| c < t) => Status::PartlyCovered,
            None => Status::FullyCovered,
        };
        out.insert(
            i as u32 + 1,
            Expect {
                hits,
                branches,
                status,
            },
        );
    }
    out
}

/// Every `// hits=` and `br=` of the sources against the analysis (hits times `runs`).
fn check_sources(analyzed: &[Class], sources: &[PathBuf], runs: u64) {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for src in sources {
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let mut got: BTreeMap<u32, Line> = BTreeMap::new();
        for c in analyzed
            .iter()
            .filter(|c| c.source_file.as_deref() == Some(&name))
        {
            for (l, x) in &c.lines {
                let e = got.entry(*l).or_default();
                e.hits += x.hits;
                e.branches.add(x.branches);
                e.instructions.add(x.instructions);
            }
        }
        let want_all = expectations(src);
        // `@every-line`: every line with code after the filters carries an expectation (code
        // the filters should have removed shows up here).
        if std::fs::read_to_string(src)
            .unwrap()
            .contains("@every-line")
        {
            for (l, g) in &got {
                if g.status() != Status::Empty && !want_all.contains_key(l) {
                    wrong.push(format!(
                        "{name}:{l}: {:?} (hits {}, branches {}/{}) but no expectation",
                        g.status(),
                        g.hits,
                        g.branches.covered,
                        g.branches.total()
                    ));
                }
            }
        }
        for (line, want) in want_all {
            let g = got.get(&line).cloned().unwrap_or_default();
            if g.status() != want.status {
                wrong.push(format!(
                    "{name}:{line}: {:?}, expected {:?}",
                    g.status(),
                    want.status
                ));
            }
            if g.hits != want.hits * runs {
                wrong.push(format!(
                    "{name}:{line}: hits {}, expected {}",
                    g.hits,
                    want.hits * runs
                ));
            }
            if let Some((c, t)) = want.branches {
                if (g.branches.covered, g.branches.total()) != (c, t) {
                    wrong.push(format!(
                        "{name}:{line}: branches {}/{}, expected {c}/{t}",
                        g.branches.covered,
                        g.branches.total()
                    ));
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} expectations");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One run of every program of test-classes/coverage, compiled and run by the JDK at `jh`.
struct Run {
    work: PathBuf,
    orig: PathBuf,
    src_dir: PathBuf,
    sources: Vec<PathBuf>,
    classes: Vec<(Vec<u8>, bci_rewriter::coverage::ClassCoverage)>,
    data: CovData,
    analyzed: Vec<Class>,
}

/// Compiles test-classes/coverage with `jh`'s javac, instruments every class, runs each program
/// (the class named like its source file) under `jh`'s java -Xverify:all and analyses the
/// summed counts.
fn run_programs(jh: &Path, tag: &str) -> Run {
    run_programs_in(jh, tag, "test-classes/coverage")
}

/// [`run_programs`] for the sources of another directory.
fn run_programs_in(jh: &Path, tag: &str, dir: &str) -> Run {
    let ws = common::workspace();
    let work = ws.join(format!(
        "target/test-out/coverage-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    let (orig, inst, rt) = (work.join("orig"), work.join("inst"), work.join("rt"));
    for d in [&orig, &inst, &rt] {
        std::fs::create_dir_all(d).unwrap();
    }
    let (src_dir, sources) = compile_dir(jh, dir, &orig);
    // the runtime jar's classes (Cov, and Offline whose expand reads -Dbci.covfile=), as
    // `bci runtime-jar` writes them
    for (path, bytes) in bciagent::runtime_jar::CLASSES {
        let f = rt.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, bytes).unwrap();
    }

    // Instrument every class; class ids in file order, from 1.
    let mut classes = Vec::new();
    for (k, f) in common::class_files(&orig).iter().enumerate() {
        let bytes = std::fs::read(f).unwrap();
        let opts = Options {
            runtime: "bci/runtime/Cov",
            split: Split::AfterCalls,
            class_id: ClassId::Constant(k as i32 + 1),
        };
        let (out, cov) = instrument(&bytes, &opts).unwrap();
        for (m, d, why) in &cov.skipped {
            assert!(
                !matches!(why, Skipped::Error(_)),
                "{}.{m}{d} left original: {why:?}",
                cov.name
            );
        }
        let dst = inst.join(f.strip_prefix(&orig).unwrap());
        match out {
            Outcome::Rewritten(b) => std::fs::write(&dst, b).unwrap(),
            Outcome::Unchanged => std::fs::write(&dst, &bytes).unwrap(),
        }
        classes.push((bytes, cov));
    }
    assert!(!classes.is_empty());

    // Run each program (the class named like its source file) under -Xverify:all; the counts
    // of the runs add up.
    let mut counts: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for src in &sources {
        let main = src.file_stem().unwrap().to_string_lossy().into_owned();
        let dump = work.join(format!("counts-{main}.txt"));
        let st = Command::new(jh.join("bin/java"))
            .arg("-Xverify:all")
            .arg(format!("-Dbci.cov.dump={}", dump.display()))
            .arg("-cp")
            .arg(format!("{}:{}", inst.display(), rt.display()))
            .arg(&main)
            .status()
            .unwrap();
        assert!(st.success(), "instrumented {main} failed");
        let text = std::fs::read_to_string(&dump).unwrap();
        assert!(!text.contains("# lost"), "{text}");
        for line in text.lines() {
            let (cid, vals) = line.split_once('\t').unwrap();
            let vals: Vec<u64> = vals.split(',').map(|v| v.parse().unwrap()).collect();
            let e = counts
                .entry(cid.parse().unwrap())
                .or_insert_with(|| vec![0; vals.len()]);
            e.iter_mut().zip(vals).for_each(|(a, b)| *a += b);
        }
    }

    // The runtime's counts as a data file (through its binary form), keyed by class hash.
    let mut data = CovData::default();
    for (k, (_, cov)) in classes.iter().enumerate() {
        if let Some(c) = counts.get(&(k + 1)) {
            data.add_class(&cov.name, cov.hash, c).unwrap();
        }
    }
    let data = CovData::parse(&data.to_bytes()).unwrap();

    // Per source file: the analysis's lines against the expectations.
    let mut analyzed = Vec::new();
    for (bytes, cov) in &classes {
        let c = data.counts(&cov.name, class_hash(bytes));
        analyzed.push(analyze_plan(bytes, cov, c).unwrap());
    }
    Run {
        work,
        orig,
        src_dir,
        sources,
        classes,
        data,
        analyzed,
    }
}

#[test]
fn coverage_counts_match_the_sources_exactly() {
    let Run {
        work,
        orig,
        src_dir,
        sources,
        classes,
        data,
        analyzed,
    } = run_programs(&common::java_home(), "17");
    check_sources(&analyzed, &sources, 1);

    // `fallthrough` is counted through a switch trampoline (and exactly, above).
    let (_, cov) = classes.iter().find(|(_, c)| c.name == "CovBasics").unwrap();
    let ft = cov
        .methods
        .iter()
        .find(|m| m.name == "fallthrough")
        .unwrap();
    assert!(
        (0..ft.plan.counters.len()).any(|i| matches!(
            ft.plan.site(&ft.cfg, i),
            Some(bci_rewriter::flow::Site::Trampoline(_))
        )),
        "no trampoline in fallthrough"
    );

    // Methods: entries exact; `never` not covered; filters.
    let main = analyzed.iter().find(|c| c.name == "CovBasics").unwrap();
    let method = |n: &str| main.methods.iter().find(|m| m.name == n).unwrap();
    assert_eq!(method("loop").entries, 3);
    assert_eq!(method("racy").entries, 400_000);
    assert_eq!(method("never").entries, 0);
    assert_eq!(method("never").counters.methods.missed, 1);
    assert!(main.methods.iter().any(|m| m.name.starts_with("lambda$")));

    // LCOV, read back by genhtml (Debian lcov) when installed: no warning, no error.
    let lcov = bci_rewriter::coverage::lcov::write(&analyzed, "CovBasics run", &|p| {
        src_dir.join(p).display().to_string()
    });
    assert!(lcov.contains("FNDA:3,CovBasics.loop(I)I"), "{lcov}");
    check_lcov(&lcov, &analyzed);
    if std::env::var("SHOW_LCOV").is_ok() {
        println!("{lcov}");
    }
    let text = std::fs::read_to_string(src_dir.join("CovBasics.java")).unwrap();
    let body = 1 + text
        .lines()
        .position(|l| l.contains("s += i; // hits=30"))
        .unwrap();
    assert!(lcov.contains(&format!("DA:{body},30\n")), "{lcov}");
    let info = work.join("cov.info");
    std::fs::write(&info, &lcov).unwrap();
    let html = work.join("html");
    let out = Command::new("genhtml")
        .arg("--branch-coverage")
        .arg("-o")
        .arg(&html)
        .arg(&info)
        .output()
        .expect("genhtml (Debian package lcov, in cli/ci-packages.txt)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(!text.to_lowercase().contains("warning"), "{text}");
    assert!(html.join("index.html").exists());

    // bci merge of two runs with the same counts (one file given twice is refused) doubles
    // every count; bci report reads the merged data against the original classes and writes
    // the LCOV.
    let bci = env!("CARGO_BIN_EXE_bci");
    let run = work.join("run.cov");
    std::fs::write(&run, data.to_bytes()).unwrap();
    let again = work.join("run-again.cov");
    std::fs::write(&again, data.to_bytes()).unwrap();
    let merged = work.join("merged.cov");
    let st = Command::new(bci)
        .args(["merge"])
        .arg(&run)
        .arg(&again)
        .arg("-o")
        .arg(&merged)
        .status()
        .unwrap();
    assert!(st.success());
    let m = CovData::parse(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(m.classes.len(), data.classes.len());
    for (k, v) in &data.classes {
        let doubled: Vec<u64> = v.iter().map(|c| 2 * c).collect();
        assert_eq!(m.classes[k], doubled, "{k:?}");
    }
    let info2 = work.join("merged.info");
    let out = Command::new(bci)
        .arg("report")
        .arg(&merged)
        .arg("--classes")
        .arg(&orig)
        .arg("--sources")
        .arg(&src_dir)
        .arg("--lcov")
        .arg(&info2)
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{console}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let with_code = classes_with_code(&orig);
    let with_data = with_code
        .iter()
        .filter(|n| data.classes.keys().any(|(k, _)| k == *n))
        .count();
    assert!(
        console.contains(&format!(
            "{} classes analysed, {with_data} with data",
            with_code.len()
        )),
        "{console}"
    );
    let total = console.lines().find(|l| l.starts_with("total")).unwrap();
    let mut methods = bci_rewriter::coverage::analysis::Counter::default();
    analyzed
        .iter()
        .for_each(|c| methods.add(c.counters.methods));
    assert!(
        total.contains(&format!("({}/{})", methods.covered, methods.total())),
        "{console}"
    );
    let lcov2 = std::fs::read_to_string(&info2).unwrap();
    assert!(lcov2.contains("FNDA:6,CovBasics.loop(I)I"), "{lcov2}");
    assert!(lcov2.contains(&format!("DA:{body},60\n")), "{lcov2}");
    let _ = std::fs::remove_dir_all(&work);
}

/// The same programs compiled and run by JDK 25, when installed: javac 25's shapes (exhaustive
/// switches throw MatchException, class files 69.0) give the same coverage, line by line.
#[test]
fn coverage_counts_match_with_jdk25_javac_when_installed() {
    let Some(jh) = common::jdk25_home() else {
        eprintln!("SKIPPED: no JDK 25 at /usr/lib/jvm/temurin-25-jdk-amd64");
        return;
    };
    let run = run_programs(&jh, "25");
    check_sources(&run.analyzed, &run.sources, 1);
    let _ = std::fs::remove_dir_all(&run.work);
}

/// Record patterns (test-classes/coverage-jdk21, javac 21+), compiled and run by JDK 25 when
/// installed: the handler javac wraps around a pattern's accessor calls (catch Throwable, throw
/// MatchException) is no code of the source, also when an accessor throws.
#[test]
fn record_patterns_with_jdk25_javac_when_installed() {
    let Some(jh) = common::jdk25_home() else {
        eprintln!("SKIPPED: no JDK 25 at /usr/lib/jvm/temurin-25-jdk-amd64");
        return;
    };
    let run = run_programs_in(&jh, "patterns", "test-classes/coverage-jdk21");
    check_sources(&run.analyzed, &run.sources, 1);
    let _ = std::fs::remove_dir_all(&run.work);
}

const JACOCO_CORE: &str = "/usr/share/java/org.jacoco.core.jar";
const JACOCO_AGENT: &str = "/usr/share/java/org.jacoco.agent.jar";

/// `st c/t` of a line, JaCoCo's words.
fn line_words(l: &Line) -> String {
    let st = match l.status() {
        Status::Empty => "empty",
        Status::NotCovered => "not",
        Status::PartlyCovered => "partly",
        Status::FullyCovered => "full",
    };
    format!("{st} {}/{}", l.branches.covered, l.branches.total())
}

/// JaCoCo 0.8.6 (Debian's libjacoco-java) runs the same programs with its agent and analyses
/// them with its own filters: every line's status and branch counter is the same as ours,
/// except lines whose source says `jacoco=STATUS C/T (why)`: filters JaCoCo 0.8.6 lacks (assert,
/// exhaustive switch default, record accessors) and lines cut short by an exception, which
/// JaCoCo reports as not covered although they ran.
#[test]
fn line_status_and_branches_agree_with_jacoco() {
    if !Path::new(JACOCO_CORE).exists() || !Path::new(JACOCO_AGENT).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{JACOCO_CORE} missing under CI (package libjacoco-java)"
        );
        eprintln!("SKIPPED: JaCoCo not installed (apt-get install libjacoco-java)");
        return;
    }
    let jh = common::java_home();
    let run = run_programs(&jh, "jacoco");
    // jacocoagent.jar ships inside org.jacoco.agent.jar.
    let agent = run.work.join("jacocoagent.jar");
    {
        use std::io::Read;
        let mut z = zip::ZipArchive::new(std::fs::File::open(JACOCO_AGENT).unwrap()).unwrap();
        let mut e = z.by_name("jacocoagent.jar").unwrap();
        let mut b = Vec::new();
        e.read_to_end(&mut b).unwrap();
        std::fs::write(&agent, b).unwrap();
    }
    let exec = run.work.join("jacoco.exec");
    for src in &run.sources {
        let main = src.file_stem().unwrap().to_string_lossy().into_owned();
        let st = Command::new(jh.join("bin/java"))
            .arg(format!(
                "-javaagent:{}=destfile={},append=true",
                agent.display(),
                exec.display()
            ))
            .arg("-cp")
            .arg(&run.orig)
            .arg(&main)
            .status()
            .unwrap();
        assert!(st.success(), "{main} under JaCoCo failed");
    }
    let cp = [
        JACOCO_CORE,
        "/usr/share/java/asm.jar",
        "/usr/share/java/asm-tree.jar",
        "/usr/share/java/asm-commons.jar",
        "/usr/share/java/asm-analysis.jar",
    ]
    .join(":");
    let tool = run.work.join("jacoco-lines");
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/JacocoLines.java");
    javac_with(&jh, &["-cp", &cp], &tool, &[fx]);
    let out = Command::new(jh.join("bin/java"))
        .arg("-cp")
        .arg(format!("{}:{cp}", tool.display()))
        .arg("JacocoLines")
        .arg(&exec)
        .arg(&run.orig)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut wrong = Vec::new();
    let mut compared = 0;
    for src in &run.sources {
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let mut ours: BTreeMap<u32, Line> = BTreeMap::new();
        for c in run
            .analyzed
            .iter()
            .filter(|c| c.source_file.as_deref() == Some(&name))
        {
            for (l, x) in &c.lines {
                let e = ours.entry(*l).or_default();
                e.instructions.add(x.instructions);
                e.branches.add(x.branches);
            }
        }
        let text = std::fs::read_to_string(src).unwrap();
        for (i, line) in text.lines().enumerate() {
            let l = i as u32 + 1;
            let mine = line_words(&ours.get(&l).cloned().unwrap_or_default());
            let want = match line.find("jacoco=") {
                Some(p) => {
                    let w: Vec<&str> = line[p + 7..].split_whitespace().take(2).collect();
                    w.join(" ")
                }
                None => mine.clone(),
            };
            let got = theirs
                .get(&format!("{name}:{l}"))
                .cloned()
                .unwrap_or_else(|| "empty 0/0".into());
            if got != want {
                wrong.push(format!(
                    "{name}:{l}: JaCoCo {got}, expected {want} (bci: {mine})"
                ));
            }
            compared += (got != "empty 0/0") as usize;
        }
    }
    eprintln!("{compared} lines compared with JaCoCo");
    assert!(compared > 200, "only {compared} lines");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let _ = std::fs::remove_dir_all(&run.work);
}

/// Exceptions leaving blocks that end in calls are counted by the handlers
/// (test-classes/coverage-exits): implicit exceptions after a call never count as the call's
/// exit, calls before this() keep a counter after them, loops of calls only stay exact.
#[test]
fn exceptional_exits_of_calls_are_counted_exactly() {
    let run = run_programs_in(&common::java_home(), "exits", "test-classes/coverage-exits");
    check_sources(&run.analyzed, &run.sources, 1);
    // the counted exits are the handlers' (no counter after those calls)
    let (_, cov) = run
        .classes
        .iter()
        .find(|(_, c)| c.name == "CovExits")
        .unwrap();
    let m = cov
        .methods
        .iter()
        .find(|m| m.name == "inCallBlock")
        .unwrap();
    assert!(
        (0..m.plan.counters.len()).any(|i| matches!(
            m.plan.site(&m.cfg, i),
            Some(bci_rewriter::flow::Site::Thrown(_))
        )),
        "inCallBlock: no exceptional exit counted"
    );
    let _ = std::fs::remove_dir_all(&run.work);
}

/// Instructions that throw implicitly end their block, with an exit counted by the handlers,
/// only where they can throw (test-classes/coverage/CovImplicit.java): not a field of
/// `this`, a cast after `instanceof`, an array initializer; and once per line.
#[test]
fn implicit_exits_only_where_an_exception_can_happen() {
    let work = common::workspace().join(format!(
        "target/test-out/coverage-implicit-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let src = common::workspace().join("test-classes/coverage/CovImplicit.java");
    javac_with(&common::java_home(), &["-g"], &work, &[src]);
    let bytes = std::fs::read(work.join("CovImplicit.class")).unwrap();
    let cov = bci_rewriter::coverage::plan_class(&bytes, Split::AfterCalls).unwrap();
    // per method: exits of blocks that fall through (not after a call)
    let implicit = |name: &str| {
        let m = cov.methods.iter().find(|m| m.name == name).unwrap();
        (0..m.plan.counters.len())
            .filter(|&i| match m.plan.site(&m.cfg, i) {
                Some(bci_rewriter::flow::Site::Thrown(b)) => m.cfg.out[b as usize]
                    .iter()
                    .any(|&e| m.cfg.edges[e as usize].kind == bci_rewriter::flow::EdgeKind::Fall),
                _ => false,
            })
            .count()
    };
    // the division; the load; the load and the field of null; the division (before ifle)
    assert_eq!(implicit("ratio"), 1);
    assert_eq!(implicit("element"), 1);
    assert_eq!(implicit("mixed"), 2);
    assert_eq!(implicit("cond"), 1);
    // the division only (`this.f` cannot throw)
    assert_eq!(implicit("own"), 1);
    // the division only (the cast follows instanceof; `{1, 2, 3}` cannot throw; `a[2]` ends
    // the method on its line)
    assert_eq!(implicit("known"), 1);
    let _ = std::fs::remove_dir_all(&work);
}

/// Compiles the sources of `dir` into `<work>/orig`, covers them with `bci instrument
/// --coverage` into `<work>/inst` and writes the runtime jar `<work>/rt.jar`: (work, orig,
/// inst, rt).
fn covered_offline(tag: &str, dir: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let work = common::workspace().join(format!(
        "target/test-out/coverage-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    let (orig, inst) = (work.join("orig"), work.join("inst"));
    std::fs::create_dir_all(&orig).unwrap();
    compile_dir(&common::java_home(), dir, &orig);
    let rt = work.join("rt.jar");
    for args in [
        vec![
            "instrument".as_ref(),
            "--coverage".as_ref(),
            orig.as_os_str(),
            inst.as_os_str(),
        ],
        vec!["runtime-jar".as_ref(), rt.as_os_str()],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_bci"))
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    (work, orig, inst, rt)
}

/// Out of memory, offline: a thread's first call into a covered class, when not even a spare
/// array can be allocated, runs on (its counts are lost) instead of throwing from the
/// counters or the runtime's lookup (test-classes/coverage-oom/CovOom.java).
#[test]
fn offline_first_call_when_memory_is_exhausted_runs_on() {
    let (work, _, inst, rt) = covered_offline("oom", "test-classes/coverage-oom");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg("-Xmx32m")
        .arg(format!("-Dbci.covfile={}", work.join("oom.cov").display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("CovOom")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "ok");
    let _ = std::fs::remove_dir_all(&work);
}

/// A -Dbci.covfile= that cannot be written stops the program at its first covered class (exit
/// 2, before it runs), with the file and the OS's reason, as the agent refuses such a
/// covfile= at start (it failed only at exit, exit status 0, the run's counts lost).
#[test]
fn unwritable_coverage_file_stops_the_program_at_its_first_covered_class() {
    let (work, _, inst, rt) = covered_offline("covfile", "test-classes/coverage-c1");
    let cp = format!("{}:{}", inst.display(), rt.display());
    let run = |covfile: &Path| {
        Command::new(common::java_home().join("bin/java"))
            .arg(format!("-Dbci.covfile={}", covfile.display()))
            .arg("-cp")
            .arg(&cp)
            .arg("CovSelfCover")
            .output()
            .unwrap()
    };
    let missing = work.join("missing/dir/x.cov");
    let o = run(&missing);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "", "the program ran");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "bci: cannot open -Dbci.covfile={p} for the coverage data: {p}.lck: No such file or \
             directory\n",
            p = missing.display()
        )
    );
    assert!(!work.join("missing").exists());
    // a FIFO (as a device) cannot be read, added to and replaced by rename: refused at start,
    // no lock file made beside it (the exit hung on opening it for reading; a copy of /dev/null
    // was replaced by a regular file; found by the file-systems hunt)
    let fifo = work.join("fifo.cov");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let o = run(&fifo);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "bci: cannot open -Dbci.covfile={p} for the coverage data: {p}: not a regular file \
             (the data file is read, added to and replaced by rename): give the path of a file\n",
            p = fifo.display()
        )
    );
    assert!(!work.join("fifo.cov.lck").exists());
    // a writable path: the program runs and the data is written at exit, no file of the
    // check's left but the lock file the write uses
    let good = work.join("good.cov");
    let o = run(&good);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        CovData::parse(&std::fs::read(&good).unwrap())
            .unwrap()
            .sessions
            .len(),
        1
    );
    let mut left: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("good.cov"))
        .collect();
    left.sort();
    assert_eq!(left, ["good.cov", "good.cov.lck"]);
    let _ = std::fs::remove_dir_all(&work);
}

/// Offline `-Dbci.covfile=` expands `%p` (the process id), `%t` (the start time, UTC,
/// `YYYY-MM-DD_HH-MM-SS`) and `%%` as the agent's `covfile=` and the runtime's `-Dbci.file=`
/// do (outfile::expand); another `%` sequence (or a `%` at the end) stops the program at its
/// first covered class (exit 2, before it runs) saying which, and creates nothing. Before: a
/// file literally named `c-%p-%t-%%.cov` (and `x-%q.cov`), exit 0.
#[test]
fn offline_covfile_expands_pid_and_start_time() {
    let (work, _, inst, rt) = covered_offline("covfile-pattern", "test-classes/coverage-c1");
    let cp = format!("{}:{}", inst.display(), rt.display());
    let out = work.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let listing = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let pattern = format!("{}/c-%p-%t-%%.cov", out.display());
    let secs = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let before = secs();
    let child = Command::new(common::java_home().join("bin/java"))
        .arg(format!("-Dbci.covfile={pattern}"))
        .arg("-cp")
        .arg(&cp)
        .arg("CovSelfCover")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let after = secs();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    let written = listing();
    let data: Vec<&String> = written.iter().filter(|n| !n.ends_with(".lck")).collect();
    assert_eq!(data.len(), 1, "{written:?}");
    let path = out.join(data[0]).display().to_string();
    let want: Vec<String> = (before.saturating_sub(1)..=after)
        .map(|t| bciagent::outfile::expand(&pattern, pid, t).unwrap())
        .collect();
    assert!(want.contains(&path), "{path} is none of {want:?}");
    assert_eq!(written, [data[0].clone(), format!("{}.lck", data[0])]);
    assert!(
        err.contains(&format!("bci: coverage data written to {path}\n")),
        "{err}"
    );
    assert_eq!(
        CovData::parse(&std::fs::read(&path).unwrap())
            .unwrap()
            .sessions
            .len(),
        1
    );
    // an unknown sequence, and a `%` at the end: refused before the program runs
    for (bad, seq) in [("x-%q.cov", "%q"), ("x-%", "%")] {
        let value = format!("{}/{bad}", out.display());
        let o = Command::new(common::java_home().join("bin/java"))
            .arg(format!("-Dbci.covfile={value}"))
            .arg("-cp")
            .arg(&cp)
            .arg("CovSelfCover")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "",
            "{bad}: the program ran"
        );
        assert_eq!(
            err,
            format!(
                "bci: -Dbci.covfile={value}: unknown '{seq}' (valid: %p = process id, %t = start \
                 time, %% = %)\n"
            )
        );
        assert_eq!(listing(), written, "{bad}: files made");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// javac's `synchronized` code (and some of its `finally` code) has a catch-any row that
/// covers its own handler's first instructions; the counter update inserted before them must
/// stay out of the row. Else C1 refuses the method ("COMPILE SKIPPED: exception handler covers itself") and it
/// stays interpreted: 109 of javac's methods did, its tokenizer's `readToken` among them.
/// Each method of the covered class is compiled by C1 at its first call (-Xcomp).
#[test]
fn covered_self_covering_handlers_compile_in_c1() {
    let (work, orig, inst, rt) = covered_offline("c1", "test-classes/coverage-c1");
    let run = |cp: String| {
        let o = Command::new(common::java_home().join("bin/java"))
            .args([
                "-Xcomp",
                "-XX:TieredStopAtLevel=1",
                "-XX:+PrintCompilation",
                "-XX:CompileCommand=quiet",
                "-XX:CompileCommand=compileonly,CovSelfCover::*",
            ])
            .arg(format!("-Dbci.covfile={}", work.join("c1.cov").display()))
            .arg("-cp")
            .arg(cp)
            .arg("CovSelfCover")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    // the original: javac's rows as they are, compiled
    let bare = run(orig.display().to_string());
    let covered = run(format!("{}:{}", inst.display(), rt.display()));
    for (what, out) in [("original", &bare), ("covered", &covered)] {
        for m in ["CovSelfCover::sync", "CovSelfCover::fin"] {
            assert!(out.contains(m), "{what}: {m} not compiled:\n{out}");
        }
        assert!(!out.contains("COMPILE SKIPPED"), "{what}:\n{out}");
    }
    // the same result: 8 calls of each, 4 of fin throwing
    let result = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.trim().parse::<i64>().is_ok())
            .map(String::from)
            .collect()
    };
    assert_eq!(result(&bare).len(), 1, "{bare}");
    assert_eq!(result(&bare), result(&covered));
    // the original really has the self-covering catch-any row
    let cf_bytes = std::fs::read(inst.join("CovSelfCover.class")).unwrap();
    let cf = bci::ClassFile::parse(&cf_bytes).unwrap();
    let orig_bytes = std::fs::read(orig.join("CovSelfCover.class")).unwrap();
    let of = bci::ClassFile::parse(&orig_bytes).unwrap();
    let self_covering = |cf: &bci::ClassFile<'_>, name: &str| {
        let code = cf.method_code(name, None).unwrap().unwrap();
        code.handlers
            .iter()
            .filter(|h| h.start <= h.handler && h.handler < h.end)
            .count()
    };
    assert!(self_covering(&of, "sync") > 0, "javac's pattern changed");
    // after: a row may still cover its handler's own first instruction (javac's `astore`),
    // never the counter update inserted before it
    for name in ["sync"] {
        let code = cf.method_code(name, None).unwrap().unwrap();
        let mut seen = 0;
        for h in &code.handlers {
            if h.start <= h.handler && h.handler < h.end {
                let first = code.code[h.handler as usize];
                let astore = first == bci::opcodes::op::ASTORE
                    || (bci::opcodes::op::ASTORE_0..=bci::opcodes::op::ASTORE_3).contains(&first);
                assert!(
                    astore,
                    "{name}: a row covers the code inserted at its handler"
                );
                seen += 1;
            }
        }
        assert!(seen > 0, "{name}: javac's self-covering row is gone");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// `java [-Xverify:all] -Dbci.covfile=DATA -cp INST:RT CovBasics`.
fn run_cov_basics(inst: &Path, rt: &Path, data: &Path, verify: bool) -> std::process::Output {
    let mut c = Command::new(common::java_home().join("bin/java"));
    if verify {
        c.arg("-Xverify:all");
    }
    c.arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("CovBasics")
        .output()
        .unwrap()
}

/// The offline workflow as a user runs it: `bci instrument --coverage`, the runtime jar, two
/// JVMs writing one data file (their counts add up), `bci report`. Every class passes
/// -Xverify:all; instrumenting the output again changes nothing.
#[test]
fn offline_coverage_with_the_runtime_jar() {
    let ws = common::workspace();
    let work = ws.join(format!(
        "target/test-out/coverage-offline-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    let (orig, inst) = (work.join("orig"), work.join("inst"));
    std::fs::create_dir_all(&orig).unwrap();
    let (_, sources) = compile_sources(&orig);
    let bci = env!("CARGO_BIN_EXE_bci");
    let run = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(bci).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "bci {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    run(&[
        "instrument".as_ref(),
        "--coverage".as_ref(),
        orig.as_os_str(),
        inst.as_os_str(),
    ]);
    let rt = work.join("bci-runtime.jar");
    run(&["runtime-jar".as_ref(), rt.as_os_str()]);
    // Instrumenting the output again leaves it as it is.
    let again = work.join("again");
    run(&[
        "instrument".as_ref(),
        "--coverage".as_ref(),
        inst.as_os_str(),
        again.as_os_str(),
    ]);
    for f in common::class_files(&inst) {
        let g = again.join(f.strip_prefix(&inst).unwrap());
        assert_eq!(
            std::fs::read(&f).unwrap(),
            std::fs::read(&g).unwrap(),
            "{}",
            f.display()
        );
    }
    let data = work.join("run.cov");
    let o = run_cov_basics(&inst, &rt, &data, true);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    assert_eq!(one.sessions.len(), 1);
    // Each class's data is keyed by the hash of its original bytes.
    let mut analyzed = Vec::new();
    for f in common::class_files(&orig) {
        let bytes = std::fs::read(&f).unwrap();
        let cf = bci::ClassFile::parse(&bytes).unwrap();
        let counts = one.counts(&cf.name().unwrap(), class_hash(&bytes));
        if cf.name().unwrap() == "CovBasics" {
            assert!(counts.is_some(), "no data for {}", f.display());
        }
        analyzed.push(analyze(&bytes, counts, Split::AfterCalls).unwrap());
    }
    // This run is CovBasics only.
    let basics: Vec<PathBuf> = sources
        .iter()
        .filter(|p| p.ends_with("CovBasics.java"))
        .cloned()
        .collect();
    check_sources(&analyzed, &basics, 1);
    // Two more JVMs at once on the same file: nothing lost, three sessions.
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (inst, rt, data) = (inst.clone(), rt.clone(), data.clone());
            std::thread::spawn(move || run_cov_basics(&inst, &rt, &data, false))
        })
        .collect();
    for t in threads {
        let o = t.join().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let three = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    assert_eq!(three.sessions.len(), 3);
    for (k, v) in &one.classes {
        let tripled: Vec<u64> = v.iter().map(|c| 3 * c).collect();
        assert_eq!(three.classes[k], tripled, "{k:?}");
    }
    let out = run(&[
        "report".as_ref(),
        data.as_os_str(),
        "--classes".as_ref(),
        orig.as_os_str(),
    ]);
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        console.contains(&format!(
            "{} classes analysed, 1 with data; 3 sessions",
            classes_with_code(&orig).len()
        )),
        "{console}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// LCOV agrees with the analysis line by line: `DA` is the line's count, and its `BRDA`
/// entries are exactly the line's branches after the filters (covered = taken > 0).
fn check_lcov(lcov: &str, analyzed: &[Class]) {
    use bci_rewriter::coverage::lcov::{line_count, source_path};
    let mut want: BTreeMap<(String, u32), Line> = BTreeMap::new();
    for c in analyzed {
        let file = source_path(c);
        for (l, x) in &c.lines {
            let e = want.entry((file.clone(), *l)).or_default();
            e.instructions.add(x.instructions);
            e.branches.add(x.branches);
            e.hits += x.hits;
            e.max_hits = e.max_hits.max(x.max_hits);
        }
    }
    let mut da: BTreeMap<(String, u32), u64> = BTreeMap::new();
    let mut brda: BTreeMap<(String, u32), (u64, u64)> = BTreeMap::new();
    let mut file = String::new();
    for l in lcov.lines() {
        if let Some(f) = l.strip_prefix("SF:") {
            file = Path::new(f)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
        } else if let Some(d) = l.strip_prefix("DA:") {
            let (line, n) = d.split_once(',').unwrap();
            da.insert((file.clone(), line.parse().unwrap()), n.parse().unwrap());
        } else if let Some(b) = l.strip_prefix("BRDA:") {
            let f: Vec<&str> = b.split(',').collect();
            let e = brda
                .entry((file.clone(), f[0].parse().unwrap()))
                .or_default();
            e.1 += 1;
            e.0 += (f[3] != "-" && f[3] != "0") as u64;
        }
    }
    let mut wrong = Vec::new();
    for ((f, l), x) in &want {
        let key = (f.rsplit('/').next().unwrap().to_string(), *l);
        if x.instructions.total() > 0 && da.get(&key) != Some(&line_count(x)) {
            wrong.push(format!(
                "{f}:{l}: DA {:?}, expected {}",
                da.get(&key),
                line_count(x)
            ));
        }
        let b = brda.get(&key).copied().unwrap_or_default();
        if b != (x.branches.covered, x.branches.total()) {
            wrong.push(format!(
                "{f}:{l}: BRDA {b:?}, expected {:?}",
                (x.branches.covered, x.branches.total())
            ));
        }
    }
    assert_eq!(
        da.len(),
        want.values().filter(|x| x.instructions.total() > 0).count()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `bci instrument --coverage` names each method the counters grow past HotSpot's 8000-byte
/// compile limit, with its sizes and the JVM flag that keeps it compilable
/// (test-classes/coverage-huge/CovHuge.java: `big` crosses it, `main` does not).
#[test]
fn methods_past_the_jit_size_limit_are_named() {
    let work = common::workspace().join(format!(
        "target/test-out/coverage-huge-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    let (orig, inst) = (work.join("orig"), work.join("inst"));
    std::fs::create_dir_all(&orig).unwrap();
    compile_dir(&common::java_home(), "test-classes/coverage-huge", &orig);
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .args([
            "instrument".as_ref(),
            "--coverage".as_ref(),
            orig.as_os_str(),
            inst.as_os_str(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let named: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("compile limit"))
        .collect();
    assert_eq!(named.len(), 1, "{err}");
    assert!(
        named[0].starts_with("bci: CovHuge.big(I)I: coverage counters grow its code from 4940 to ")
            && named[0].contains("-XX:-DontCompileHugeMethods"),
        "{}",
        named[0]
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// The runtime jar's writer and a covfile that fails to parse partway (a valid start, a
/// truncated end): the file is left as it is and this JVM's data goes to `<covfile>.<pid>`
/// with this run's counts only. The counts read before the failure were added in as well (so
/// another run's partial counts went out under this JVM's session).
#[test]
fn runtime_jar_covfile_failing_partway_adds_nothing_from_it() {
    let (work, _, inst, rt) = covered_offline("partial", "test-classes/coverage");
    // a clean run: this run's counts alone
    let clean = work.join("clean.cov");
    let o = run_cov_basics(&inst, &rt, &clean, false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one = CovData::parse(&std::fs::read(&clean).unwrap()).unwrap();
    let (key, v) = one
        .classes
        .iter()
        .find(|(k, _)| k.0 == "CovBasics")
        .expect("CovBasics in the clean run");
    // the bad file: CovBasics (parses) with large counts, then a class cut short
    let mut bad = CovData {
        sessions: one.sessions.clone(),
        ..Default::default()
    };
    bad.add_class(&key.0, key.1, &vec![1000; v.len()]).unwrap();
    bad.add_class("ZzzLast", 1, &[5, 5, 5, 5]).unwrap();
    let mut bytes = bad.to_bytes();
    bytes.truncate(bytes.len() - 12);
    let path = work.join("bad.cov");
    std::fs::write(&path, &bytes).unwrap();
    let o = run_cov_basics(&inst, &rt, &path, false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    // where and what (an EOFException's message is null: it said "null")
    assert!(
        err.contains(&format!(
            "bci: {}: offset {}: truncated class record; left as it is, data written to {}.",
            path.display(),
            bytes.len(),
            path.display()
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the bad file was changed"
    );
    // a file that is not coverage data at all is named so, as bci report names it (it was
    // "offset 8: not bci coverage data (version 1 or 2)"; found by the README hunt G)
    let text_file = work.join("notes.cov");
    std::fs::write(&text_file, "these are my notes, not coverage data\n").unwrap();
    let o = run_cov_basics(&inst, &rt, &text_file, false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "bci: {}: not a bci coverage file (bad magic); left as it is, data written to {}.",
            text_file.display(),
            text_file.display()
        )),
        "{err}"
    );
    let fallback: Vec<PathBuf> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .strip_prefix("bad.cov.")
                .is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    assert_eq!(fallback.len(), 1, "{fallback:?}");
    let got = CovData::parse(&std::fs::read(&fallback[0]).unwrap()).unwrap();
    assert_eq!(got.sessions.len(), 1);
    assert_eq!(got.classes.get(key), Some(v), "{:?}", got.classes);
    assert!(!got.classes.keys().any(|k| k.0 == "ZzzLast"));
    let _ = std::fs::remove_dir_all(&work);
}
