//! `bci report` on coverage data, checked by the real consumers: xmllint against JaCoCo's
//! report.dtd and against JaCoCo's own XML for the same run (Debian libjacoco-java), xmllint
//! and the data for Cobertura, genhtml for LCOV, headless Chromium for the HTML report.
//! The program is test-classes/coverage/CovBasics.java, instrumented offline and run with the
//! runtime jar under -Xverify:all.
/// The agent's test helpers: `agent_lib()` builds the cdylib.
#[path = "../../agent/tests/common/mod.rs"]
mod agent_common;
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::coverage::analysis::{analyze, Class};
use bci_rewriter::coverage::class_hash;
use bci_rewriter::coverage::data::CovData;
use bci_rewriter::coverage::lcov::line_count;
use bci_rewriter::flow::Split;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BCI: &str = env!("CARGO_BIN_EXE_bci");

/// Programs of test-classes/coverage compiled, instrumented, each run once into one data
/// file: the data and CovBasics's analysis.
struct Run {
    work: PathBuf,
    orig: PathBuf,
    src_dir: PathBuf,
    data: PathBuf,
    programs: Vec<&'static str>,
    /// CovBasics analysed.
    class: Class,
}

impl Drop for Run {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
}

/// An empty directory target/test-out/reports-{tag}-{pid} with a `classes` directory in it.
fn fresh_work(tag: &str) -> PathBuf {
    let work = common::workspace().join(format!(
        "target/test-out/reports-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("classes")).unwrap();
    work
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn bci(args: &[&std::ffi::OsStr]) -> Output {
    let o = Command::new(BCI).args(args).output().unwrap();
    assert!(o.status.success(), "bci {args:?}: {}", text(&o));
    o
}

fn os<T: AsRef<std::ffi::OsStr> + ?Sized>(s: &T) -> &std::ffi::OsStr {
    s.as_ref()
}

fn setup(tag: &str, programs: &[&'static str]) -> Run {
    let ws = common::workspace();
    let work = ws.join(format!(
        "target/test-out/reports-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    let (orig, inst) = (work.join("orig"), work.join("inst"));
    std::fs::create_dir_all(&orig).unwrap();
    let src_dir = ws.join("test-classes/coverage");
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-d")
        .arg(&orig)
        .args(programs.iter().map(|p| src_dir.join(format!("{p}.java"))))
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
    bci(&[os("instrument"), os("--coverage"), os(&orig), os(&inst)]);
    let rt = work.join("bci-runtime.jar");
    bci(&[os("runtime-jar"), os(&rt)]);
    let data = work.join("run.cov");
    for p in programs {
        let o = Command::new(common::java_home().join("bin/java"))
            .arg("-Xverify:all")
            .arg(format!("-Dbci.covfile={}", data.display()))
            .arg("-cp")
            .arg(format!("{}:{}", inst.display(), rt.display()))
            .arg(p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{p}: {}", text(&o));
    }
    let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    let bytes = std::fs::read(orig.join("CovBasics.class")).unwrap();
    let counts = d.counts("CovBasics", class_hash(&bytes));
    assert!(counts.is_some(), "no data for CovBasics");
    let class = analyze(&bytes, counts, Split::AfterCalls).unwrap();
    Run {
        work,
        orig,
        src_dir,
        data,
        programs: programs.to_vec(),
        class,
    }
}

/// Attribute `name="..."` of an XML start tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let p = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[p..].find('"')?;
    Some(&tag[p..p + end])
}

/// The start tags named `el` in `xml`, in order.
fn tags<'a>(xml: &'a str, el: &str) -> Vec<&'a str> {
    let open = format!("<{el} ");
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(p) = xml[at..].find(&open) {
        let s = at + p;
        let e = s + xml[s..].find('>').unwrap();
        out.push(&xml[s..=e]);
        at = e;
    }
    out
}

/// Per line `nr -> (mi, ci, mb, cb)` of a JaCoCo XML report.
fn jacoco_lines(xml: &str) -> BTreeMap<u32, [u64; 4]> {
    tags(xml, "line")
        .into_iter()
        .map(|t| {
            let n = |a| attr(t, a).unwrap().parse::<u64>().unwrap();
            (n("nr") as u32, [n("mi"), n("ci"), n("mb"), n("cb")])
        })
        .collect()
}

/// Per method `name+desc -> (first line, its counters as written)` of a JaCoCo XML report.
fn jacoco_methods(xml: &str) -> BTreeMap<String, (Option<u32>, String)> {
    let mut out = BTreeMap::new();
    for part in xml.split("<method ").skip(1) {
        let tag = format!("<method {}", &part[..part.find('>').unwrap() + 1]);
        let body = &part[..part.find("</method>").unwrap()];
        let counters = body[body.find('>').unwrap() + 1..].to_string();
        let key = format!(
            "{}{}",
            attr(&tag, "name").unwrap(),
            attr(&tag, "desc").unwrap()
        );
        let line = attr(&tag, "line").map(|l| l.parse().unwrap());
        out.insert(key, (line, counters));
    }
    out
}

fn jacoco_jar(name: &str) -> PathBuf {
    PathBuf::from("/usr/share/java").join(name)
}

/// JaCoCo's XML for CovBasics run under JaCoCo 0.8.6's agent (Debian libjacoco-java), made by
/// JaCoCo's report API (cli/tests/fixtures/jacoco/JacocoXml.java).
fn jacoco_xml(r: &Run) -> String {
    jacoco_xml_of(&r.work, &r.orig, &r.programs, &[])
}

/// JaCoCo's XML for the classes `orig`, each of `programs` run once with `args` under JaCoCo
/// 0.8.6's agent (work files in `work/jacoco`).
fn jacoco_xml_of(work: &Path, orig: &Path, programs: &[&str], args: &[&str]) -> String {
    let tools = work.join("jacoco");
    std::fs::create_dir_all(&tools).unwrap();
    let st = Command::new("unzip")
        .args(["-q", "-o"])
        .arg(jacoco_jar("org.jacoco.agent.jar"))
        .arg("jacocoagent.jar")
        .arg("-d")
        .arg(&tools)
        .status()
        .unwrap();
    assert!(st.success(), "unzip jacocoagent.jar");
    let cp = [
        "org.jacoco.core.jar",
        "org.jacoco.report.jar",
        "asm.jar",
        "asm-commons.jar",
        "asm-tree.jar",
    ]
    .map(|j| jacoco_jar(j).display().to_string())
    .join(":");
    let src = common::workspace().join("cli/tests/fixtures/jacoco/JacocoXml.java");
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-cp")
        .arg(&cp)
        .arg("-d")
        .arg(&tools)
        .arg(src)
        .status()
        .unwrap();
    assert!(st.success(), "javac JacocoXml");
    let exec = tools.join("jacoco.exec");
    for p in programs {
        let o = Command::new(common::java_home().join("bin/java"))
            .arg(format!(
                "-javaagent:{}=destfile={}",
                tools.join("jacocoagent.jar").display(),
                exec.display()
            ))
            .arg("-cp")
            .arg(orig)
            .arg(p)
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{p}: {}", text(&o));
    }
    let out = tools.join("jacoco.xml");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg("-cp")
        .arg(format!("{cp}:{}", tools.display()))
        .arg("JacocoXml")
        .arg(&exec)
        .arg(orig)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read_to_string(out).unwrap()
}

/// Where bci and JaCoCo 0.8.6 differ by definition, per method (`Class.name(desc)`): these
/// methods' lines are compared no further.
const DIFFERENT_BY_DEFINITION: [(&str, &str); 9] = [
    (
        "CovFlow.<clinit>()V",
        "assert: bci filters $assertionsDisabled, JaCoCo 0.8.6 has no such filter",
    ),
    (
        "CovFlow.checked(I)I",
        "assert: bci filters its branch and throw",
    ),
    (
        "CovFlow.onlyThrows(I)I",
        "a line cut short by a call that throws: bci partly covered (it ran), JaCoCo missed",
    ),
    (
        "CovFlow.main([Ljava/lang/String;)V",
        "lines cut short by a call that throws",
    ),
    (
        "CovTypes.main([Ljava/lang/String;)V",
        "a line cut short by a constructor that throws",
    ),
    (
        "CovSwitch.colorExpression(LCovSwitch$Color;)Ljava/lang/String;",
        "the default javac adds to an exhaustive switch: bci filters it",
    ),
    ("CovTypes$Point.x()I", "record accessor: bci filters it"),
    ("CovTypes$Point.y()I", "record accessor: bci filters it"),
    ("CovTypes$Square.side()D", "record accessor: bci filters it"),
];

/// Per source file and line, `(mi, ci, mb, cb)` of a JaCoCo XML report.
fn jacoco_file_lines(xml: &str) -> BTreeMap<(String, u32), [u64; 4]> {
    let mut out = BTreeMap::new();
    for part in xml.split("<sourcefile ").skip(1) {
        let name = attr(&format!(" {part}"), "name").unwrap().to_string();
        let body = &part[..part.find("</sourcefile>").unwrap()];
        for (nr, v) in jacoco_lines(body) {
            out.insert((name.clone(), nr), v);
        }
    }
    out
}

/// Per `Class.method(desc)`: (first line, counters as written) of a JaCoCo XML report.
fn jacoco_class_methods(xml: &str) -> BTreeMap<String, (Option<u32>, String)> {
    let mut out = BTreeMap::new();
    for part in xml.split("<class ").skip(1) {
        let class = attr(&format!(" {part}"), "name").unwrap().to_string();
        let body = &part[..part.find("</class>").unwrap()];
        for (m, v) in jacoco_methods(body) {
            out.insert(
                format!("{class}.{m}")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">"),
                v,
            );
        }
    }
    out
}

#[test]
fn jacoco_xml_is_valid_and_agrees_with_jacocos_own() {
    if !jacoco_jar("org.jacoco.report.jar").exists() {
        eprintln!("skipped: /usr/share/java/org.jacoco.report.jar absent (apt-get install libjacoco-java)");
        return;
    }
    let r = setup(
        "jacoco",
        &["CovBasics", "CovFlow", "CovSwitch", "CovTry", "CovTypes"],
    );
    let ours = r.work.join("bci.xml");
    bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--xml"),
        os(&ours),
        os("--title"),
        os("CovBasics <run>"),
    ]);
    // report.dtd from JaCoCo's own jar; xmllint validates against it.
    let dtd = r.work.join("report.dtd");
    let o = Command::new("unzip")
        .arg("-p")
        .arg(jacoco_jar("org.jacoco.report.jar"))
        .arg("org/jacoco/report/xml/report.dtd")
        .output()
        .unwrap();
    assert!(o.status.success() && !o.stdout.is_empty());
    std::fs::write(&dtd, &o.stdout).unwrap();
    let o = Command::new("xmllint")
        .args(["--noout", "--nonet"])
        .arg("--dtdvalid")
        .arg(&dtd)
        .arg(&ours)
        .output()
        .expect("xmllint (Debian libxml2-utils, in cli/ci-packages.txt)");
    assert!(o.status.success(), "{}", text(&o));
    let xml = std::fs::read_to_string(&ours).unwrap();
    assert!(
        xml.contains("<report name=\"CovBasics &lt;run&gt;\">"),
        "{xml}"
    );
    assert_eq!(tags(&xml, "sessioninfo").len(), r.programs.len(), "{xml}");

    let theirs = jacoco_xml(&r);
    let (mine, jac) = (jacoco_class_methods(&xml), jacoco_class_methods(&theirs));
    let known = |m: &str| DIFFERENT_BY_DEFINITION.iter().any(|(k, _)| *k == m);
    // Lines of the methods that differ by definition (bci's lines, and JaCoCo's first line of
    // a method bci filters out).
    let data = CovData::parse(&std::fs::read(&r.data).unwrap()).unwrap();
    let mut skip = std::collections::BTreeSet::new();
    for f in common::class_files(&r.orig) {
        let bytes = std::fs::read(&f).unwrap();
        let name = bci::ClassFile::parse(&bytes)
            .unwrap()
            .name()
            .unwrap()
            .into_owned();
        let c = analyze(
            &bytes,
            data.counts(&name, class_hash(&bytes)),
            Split::AfterCalls,
        )
        .unwrap();
        for m in &c.methods {
            if known(&format!("{}.{}{}", c.name, m.name, m.desc)) {
                let sf = c.source_file.clone().unwrap();
                skip.extend(m.lines.keys().map(|l| (sf.clone(), *l)));
            }
        }
    }
    let mut wrong = Vec::new();
    let mut methods = 0;
    for k in mine
        .keys()
        .chain(jac.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        if known(k) {
            if let Some((Some(l), _)) = jac.get(k) {
                let class = k.split('.').next().unwrap();
                let outer = class.split('$').next().unwrap();
                skip.insert((format!("{outer}.java"), *l));
            }
            continue;
        }
        methods += 1;
        if mine.get(k) != jac.get(k) {
            wrong.push(format!(
                "method {k}: bci {:?}, JaCoCo {:?}",
                mine.get(k),
                jac.get(k)
            ));
        }
    }
    let (ml, jl) = (jacoco_file_lines(&xml), jacoco_file_lines(&theirs));
    let mut compared = 0;
    let all: std::collections::BTreeSet<&(String, u32)> = ml.keys().chain(jl.keys()).collect();
    for k in all {
        if skip.contains(k) {
            continue;
        }
        compared += 1;
        if ml.get(k) != jl.get(k) {
            wrong.push(format!(
                "{}:{}: bci {:?}, JaCoCo {:?}",
                k.0,
                k.1,
                ml.get(k),
                jl.get(k)
            ));
        }
    }
    eprintln!("compared with JaCoCo 0.8.6: {compared} lines, {methods} methods");
    assert!(
        compared > 150 && methods > 40,
        "only {compared} lines, {methods} methods compared"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // CovBasics, where none differs: every class counter, METHOD and CLASS included.
    let class_counters = |x: &str| -> Vec<String> {
        let c = &x[x.find("<class name=\"CovBasics\"").unwrap()..];
        let c = &c[..c.find("</class>").unwrap()];
        let c = &c[c.rfind("</method>").unwrap()..];
        tags(c, "counter").into_iter().map(String::from).collect()
    };
    assert_eq!(class_counters(&xml), class_counters(&theirs));
    assert_eq!(class_counters(&xml).len(), 6);
}

/// The source line (1-based) of CovBasics.java that contains `needle`.
fn line_of(r: &Run, needle: &str) -> u32 {
    let text = std::fs::read_to_string(r.src_dir.join("CovBasics.java")).unwrap();
    1 + text.lines().position(|l| l.contains(needle)).unwrap() as u32
}

/// Two data files of one run: every count doubled in Cobertura (line hits), LCOV (genhtml
/// accepts it with no warning) and CSV (JaCoCo's columns); the console has a row per package.
#[test]
fn cobertura_lcov_csv_and_console_from_two_data_files() {
    let r = setup("formats", &["CovBasics"]);
    // the same counts as from another JVM (one run's data given twice is refused)
    let copy = r.work.join("copy.cov");
    let mut other = CovData::parse(&std::fs::read(&r.data).unwrap()).unwrap();
    for s in &mut other.sessions {
        s.id.push_str("-other");
    }
    std::fs::write(&copy, other.to_bytes()).unwrap();
    let (cob, info, csv) = (
        r.work.join("out/cobertura.xml"),
        r.work.join("out/cov.info"),
        r.work.join("out/cov.csv"),
    );
    let o = bci(&[
        os("report"),
        os(&r.data),
        os(&copy),
        os("--classes"),
        os(&r.orig),
        os("--sources"),
        os(&r.src_dir),
        os("--cobertura"),
        os(&cob),
        os("--lcov"),
        os(&info),
        os("--csv"),
        os(&csv),
    ]);
    let console = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        console.contains("1 class analysed, 1 with data; 2 sessions"),
        "{console}"
    );
    let k = &r.class.counters;
    for row in ["(default) ", "total "] {
        let l = console.lines().find(|l| l.starts_with(row)).unwrap();
        for c in [k.instructions, k.branches, k.lines, k.methods, k.classes] {
            assert!(l.contains(&format!("({}/{})", c.covered, c.total())), "{l}");
        }
    }

    // Cobertura: well formed; the class's per-line hits are the data's, doubled.
    let o = Command::new("xmllint")
        .args(["--noout", "--nonet"])
        .arg(&cob)
        .output()
        .expect("xmllint (Debian libxml2-utils)");
    assert!(o.status.success(), "{}", text(&o));
    let xml = std::fs::read_to_string(&cob).unwrap();
    let class_lines = &xml[xml.find("</methods>").unwrap()..xml.find("</class>").unwrap()];
    let got: BTreeMap<u32, (u64, Option<String>)> = tags(class_lines, "line")
        .into_iter()
        .map(|t| {
            (
                attr(t, "number").unwrap().parse().unwrap(),
                (
                    attr(t, "hits").unwrap().parse().unwrap(),
                    attr(t, "condition-coverage").map(String::from),
                ),
            )
        })
        .collect();
    let want: BTreeMap<u32, (u64, Option<String>)> = r
        .class
        .lines
        .iter()
        .filter(|(_, l)| l.instructions.total() > 0)
        .map(|(n, l)| {
            let b = l.branches;
            let cc = (b.total() > 0).then(|| {
                format!(
                    "{}% ({}/{})",
                    b.covered * 100 / b.total(),
                    b.covered,
                    b.total()
                )
            });
            (*n, (2 * line_count(l), cc))
        })
        .collect();
    assert_eq!(got, want);
    let body = line_of(&r, "s += i; // hits=30");
    assert_eq!(got[&body].0, 60);
    let both = line_of(&r, "return a && b;");
    assert_eq!(got[&both].1.as_deref(), Some("100% (4/4)"));
    assert!(xml.contains("filename=\"CovBasics.java\""), "{xml}");

    // LCOV: doubled counts; genhtml renders it with no warning.
    let lcov = std::fs::read_to_string(&info).unwrap();
    assert!(lcov.contains("FNDA:6,CovBasics.loop(I)I"), "{lcov}");
    assert!(lcov.contains(&format!("DA:{body},60\n")), "{lcov}");
    assert!(
        lcov.contains(&format!(
            "SF:{}\n",
            r.src_dir.join("CovBasics.java").display()
        )),
        "{lcov}"
    );
    assert!(lcov.starts_with("TN:bci_coverage\n"), "{lcov}");
    for (key, v) in [
        ("FNF", k.methods.total()),
        ("FNH", k.methods.covered),
        ("BRF", k.branches.total()),
        ("BRH", k.branches.covered),
        ("LF", k.lines.total()),
        ("LH", k.lines.covered),
    ] {
        assert!(
            lcov.contains(&format!("\n{key}:{v}\n")),
            "{key}:{v} in {lcov}"
        );
    }
    let o = Command::new("genhtml")
        .arg("--branch-coverage")
        .arg("-o")
        .arg(r.work.join("genhtml"))
        .arg(&info)
        .output()
        .expect("genhtml (Debian lcov)");
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).to_lowercase().contains("warning"), "{}", text(&o));

    // CSV: JaCoCo's header and one row with the class's counters.
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(rows[0].starts_with("GROUP,PACKAGE,CLASS,INSTRUCTION_MISSED,"));
    let want = format!(
        "bci coverage,,CovBasics,{},{},{},{},{},{},{},{},{},{}",
        k.instructions.missed,
        k.instructions.covered,
        k.branches.missed,
        k.branches.covered,
        k.lines.missed,
        k.lines.covered,
        k.complexity.missed,
        k.complexity.covered,
        k.methods.missed,
        k.methods.covered
    );
    assert_eq!(rows[1], want);
}

/// --include/--exclude select classes; a class under no --classes path is named; a bad glob
/// is refused by name. (Stale data: `stale_data_is_named_and_each_build_gets_its_own_counts`.)
#[test]
fn class_filters() {
    let r = setup("filters", &["CovBasics"]);
    let report = |classes: &Path, extra: &[&str]| -> String {
        let mut args = vec![os("report"), os(&r.data), os("--classes"), os(classes)];
        args.extend(extra.iter().map(os));
        String::from_utf8_lossy(&bci(&args).stdout).into_owned()
    };
    // globs that select none of the data's classes: an error on stderr, exit 1 (it was exit 0)
    let filtered = |extra: &[&str]| {
        let mut args = vec![os("report"), os(&r.data), os("--classes"), os(&r.orig)];
        args.extend(extra.iter().map(os));
        run_bci(&args)
    };
    let (code, s, err) = filtered(&["--exclude", "Cov*"]);
    assert_eq!(code, Some(1), "{s}{err}");
    assert!(s.contains("0 classes analysed"), "{s}");
    assert!(!s.contains("note:"), "excluded, not missing: {s}");
    assert!(
        err.starts_with("bci: error: --exclude leaves out every one of the data's 1 class"),
        "{err}"
    );
    let empty = r.work.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    // none of the data's classes there: an error on stderr, exit 1
    let (code, s, err) = run_bci(&[os("report"), os(&r.data), os("--classes"), os(&empty)]);
    assert_eq!(code, Some(1), "{s}{err}");
    assert!(
        s.contains("note: 1 class in the data is under no --classes path: CovBasics\n"),
        "{s}"
    );
    assert!(
        err.starts_with("bci: error: the 1 class in the data is not"),
        "{err}"
    );
    let (code, s, err) = filtered(&["--include", "Nothing.*"]);
    assert_eq!(code, Some(1), "{s}{err}");
    assert!(s.contains("0 classes analysed"), "{s}");
    assert!(
        err.starts_with("bci: error: --include selects none of the data's 1 class"),
        "{err}"
    );
    // per-test counts: the agent records them too, not only offline-instrumented classes
    let s = report(&r.orig, &["--per-test"]);
    assert!(
        s.ends_with(
            "\nper test: the data has no per-test counts (a run records them between \
             bci.runtime.Cov.begin and end, which the runtime jar's JUnit listener calls for each \
             test when the jar is on the test class path; offline-instrumented or under the \
             agent)\n"
        ),
        "{s}"
    );
    assert!(!s.contains("CovBasics.java:"), "{s}");
    let s = report(&r.orig, &["--include", "Cov*", "--exclude", "x.*"]);
    assert!(s.contains("1 class analysed, 1 with data"), "{s}");

    let o = Command::new(BCI)
        .arg("report")
        .arg(&r.data)
        .arg("--classes")
        .arg(&r.orig)
        .args(["--include", "a.[b]"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--include 'a.[b]': bad glob"),
        "{}",
        text(&o)
    );
}

/// bci's own runtime under --classes (the runtime jar in the lib directory the program ran
/// with) is left out: its classes are never instrumented, so never have data, and counted as
/// missed they drowned the program's coverage (`bci.runtime 0.0% (0/11633)`; found by the
/// new-user hunt). The report equals the one without the runtime jar.
#[test]
fn the_runtime_jar_under_classes_is_left_out() {
    let r = setup("runtime-jar", &["CovBasics"]);
    let rt = r.work.join("bci-runtime.jar");
    let alone = bci(&[os("report"), os(&r.data), os("--classes"), os(&r.orig)]);
    let with_rt = bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--classes"),
        os(&rt),
    ]);
    let s = text(&with_rt);
    assert!(!s.contains("bci.runtime"), "{s}");
    assert_eq!(s, text(&alone));
}

/// The `(covered/total)` pairs of the console row starting with `name` (instructions,
/// branches, lines, methods, classes).
fn row(console: &str, name: &str) -> Vec<(u64, u64)> {
    let l = console
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name}: {console}"));
    l.split('(')
        .skip(1)
        .map(|c| {
            let (a, b) = c[..c.find(')').unwrap()].split_once('/').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

/// `bci report` (or merge) run to its end: exit status, stdout, stderr.
fn run_bci(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let o = Command::new(BCI).args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Another build of CovBasics: the same code without local variable tables (other bytes, the
/// same instructions, branches, lines and methods), instrumented and run into its own data
/// file.
struct OtherBuild {
    classes: PathBuf,
    data: PathBuf,
    /// The console's counters (covered, total) of CovBasics run once, and not run.
    run_counts: Vec<(u64, u64)>,
    not_run: Vec<(u64, u64)>,
}

fn other_build(r: &Run) -> OtherBuild {
    let other = r.work.join("other");
    let other_inst = r.work.join("other-inst");
    std::fs::create_dir_all(&other).unwrap();
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g:source,lines")
        .arg("-d")
        .arg(&other)
        .arg(r.src_dir.join("CovBasics.java"))
        .status()
        .unwrap();
    assert!(st.success());
    bci(&[
        os("instrument"),
        os("--coverage"),
        os(&other),
        os(&other_inst),
    ]);
    let other_data = r.work.join("other.cov");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!("-Dbci.covfile={}", other_data.display()))
        .arg("-cp")
        .arg(format!(
            "{}:{}",
            other_inst.display(),
            r.work.join("bci-runtime.jar").display()
        ))
        .arg("CovBasics")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let k = &r.class.counters;
    let run_counts: Vec<(u64, u64)> = [k.instructions, k.branches, k.lines, k.methods, k.classes]
        .iter()
        .map(|c| (c.covered, c.total()))
        .collect();
    let not_run: Vec<(u64, u64)> = run_counts.iter().map(|&(_, t)| (0, t)).collect();
    OtherBuild {
        classes: other,
        data: other_data,
        run_counts,
        not_run,
    }
}

/// The line `bci report` writes on stderr when `data` holds CovBasics of another build.
fn stale_line(data: &Path) -> String {
    format!(
        "stale: CovBasics: the data in {} is from another build of this class (left out of the \
         counts)\n",
        data.display()
    )
}

/// Data of another build only: the class given is reported, nothing of it covered (as JaCoCo
/// does), and stderr names the class and the file whose data is stale.
#[test]
fn stale_data_alone_reports_the_class_as_not_covered() {
    let r = setup("stale-alone", &["CovBasics"]);
    let OtherBuild {
        classes: other,
        not_run,
        ..
    } = other_build(&r);
    let (code, out, err) = run_bci(&[os("report"), os(&r.data), os("--classes"), os(&other)]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(err, stale_line(&r.data));
    assert_eq!(row(&out, "total"), not_run, "{out}");
    assert!(
        out.contains(&format!(
            "\n1 class analysed, 0 with data; 1 session in {}\n",
            r.data.display()
        )),
        "{out}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("stale:")),
        "stale lines go to stderr: {out}"
    );
}

/// Data of both builds: each build's class gets its own build's counts, exactly, and stderr
/// names the other file's data as stale. `bci merge` of the two is an error naming the class,
/// or with --ignore-stale keeps the first file's build and names what it left out.
#[test]
fn stale_data_next_to_the_builds_own_is_named_and_left_out() {
    let r = setup("stale-both", &["CovBasics"]);
    let OtherBuild {
        classes: other,
        data: other_data,
        run_counts,
        ..
    } = other_build(&r);
    // the class of each build: its own build's data counted (LCOV, hits included, as with its
    // own data alone), the other file named
    for (classes, own, stale) in [
        (&r.orig, &r.data, &other_data),
        (&other, &other_data, &r.data),
    ] {
        let (both_info, own_info) = (r.work.join("both.info"), r.work.join("own.info"));
        let (code, out, err) = run_bci(&[
            os("report"),
            os(&r.data),
            os(&other_data),
            os("--classes"),
            os(classes),
            os("--lcov"),
            os(&both_info),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert_eq!(err, stale_line(stale));
        assert_eq!(row(&out, "total"), run_counts, "{out}");
        assert!(
            out.contains(&format!(
                "\n1 class analysed, 1 with data; 2 sessions in {}, {}\n",
                r.data.display(),
                other_data.display()
            )),
            "{out}"
        );
        let (code, _, err) = run_bci(&[
            os("report"),
            os(own),
            os("--classes"),
            os(classes),
            os("--lcov"),
            os(&own_info),
        ]);
        assert_eq!((code, err.as_str()), (Some(0), ""));
        let both = std::fs::read_to_string(&both_info).unwrap();
        assert!(both.contains("DA:"), "{both}");
        assert_eq!(both, std::fs::read_to_string(&own_info).unwrap());
    }

    // bci merge
    let merged = r.work.join("merged.cov");
    let (code, _, err) = run_bci(&[
        os("merge"),
        os(&r.data),
        os(&other_data),
        os("-o"),
        os(&merged),
    ]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        format!(
            "bci: class CovBasics: data from two different builds (hashes differ): build \
             {:016x} in {}, build {:016x} in {}; merge data of one build, or --ignore-stale\n",
            class_hash(&std::fs::read(r.orig.join("CovBasics.class")).unwrap()),
            r.data.display(),
            class_hash(&std::fs::read(other.join("CovBasics.class")).unwrap()),
            other_data.display()
        )
    );
    assert!(!merged.exists());
    // one file with both builds (a covfile both ran into): named once, with both builds
    let mut both = CovData::parse(&std::fs::read(&r.data).unwrap()).unwrap();
    both.add_all(&CovData::parse(&std::fs::read(&other_data).unwrap()).unwrap())
        .unwrap();
    let both_file = r.work.join("both-builds.cov");
    std::fs::write(&both_file, both.to_bytes()).unwrap();
    let (code, _, err) = run_bci(&[os("merge"), os(&both_file), os("-o"), os(&merged)]);
    assert_eq!(code, Some(2));
    let mut hashes = [
        class_hash(&std::fs::read(r.orig.join("CovBasics.class")).unwrap()),
        class_hash(&std::fs::read(other.join("CovBasics.class")).unwrap()),
    ];
    hashes.sort();
    assert_eq!(
        err,
        format!(
            "bci: class CovBasics: data from two different builds (hashes differ): builds \
             {:016x} and {:016x} both in {}; merge data of one build, or --ignore-stale \
             --classes PATH with the classes whose build to keep\n",
            hashes[0],
            hashes[1],
            both_file.display()
        )
    );
    assert!(!merged.exists());
    // which the message's advice does (--ignore-stale alone is refused for one such file)
    let (code, _, err) = run_bci(&[
        os("merge"),
        os(&both_file),
        os("-o"),
        os(&merged),
        os("--ignore-stale"),
        os("--classes"),
        os(&r.orig),
    ]);
    assert_eq!(code, Some(0), "{err}");
    std::fs::remove_file(&merged).unwrap();
    let (code, _, err) = run_bci(&[
        os("merge"),
        os(&r.data),
        os(&other_data),
        os("-o"),
        os(&merged),
        os("--ignore-stale"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err,
        format!(
            "bci: {}: CovBasics: data of build {:016x} left out; kept: build {:016x} (of {}, the \
             first input that has the class)\nbci: wrote {}: 1 class, 2 sessions (a session \
             whose data was left out stays listed: its other classes keep their counts)\n",
            other_data.display(),
            class_hash(&std::fs::read(other.join("CovBasics.class")).unwrap()),
            class_hash(&std::fs::read(r.orig.join("CovBasics.class")).unwrap()),
            r.data.display(),
            merged.display()
        )
    );
    let (code, out, err) = run_bci(&[os("report"), os(&merged), os("--classes"), os(&r.orig)]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert_eq!(row(&out, "total"), run_counts, "{out}");
}

/// A class in several `--classes` paths (a stale jar of another build given first): the copy
/// whose build the data has is reported with its counts, whatever the order, and the other
/// path is named in a warning (it was `error: …: the first one is reported`, the class shown
/// not run and called stale, exit 0). Data of neither build: the first path's copy, stale. A
/// class that cannot be analysed is an `error:` line and exit 1.
#[test]
fn a_class_in_two_class_paths_is_reported_from_the_build_the_data_has() {
    let r = setup("two-paths", &["CovBasics"]);
    let OtherBuild {
        classes: other,
        run_counts,
        not_run,
        ..
    } = other_build(&r);
    for (a, b) in [(&other, &r.orig), (&r.orig, &other)] {
        let (code, out, err) = run_bci(&[
            os("report"),
            os(&r.data),
            os("--classes"),
            os(a),
            os("--classes"),
            os(b),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert_eq!(
            err,
            format!(
                "bci: warning: CovBasics: another build of it is in {}; the one in {} is \
                 reported (the build the data has)\n",
                other.display(),
                r.orig.display()
            )
        );
        assert_eq!(row(&out, "total"), run_counts, "{out}");
        assert!(!out.contains("error"), "{out}");
    }
    // the same build twice: nothing to say
    let copy = r.work.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(r.orig.join("CovBasics.class"), copy.join("CovBasics.class")).unwrap();
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&copy),
        os("--classes"),
        os(&r.orig),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!err.contains("warning"), "{err}");
    // data of neither build: the first path's copy, not run, its data named stale
    let third = r.work.join("third");
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g:none")
        .arg("-d")
        .arg(&third)
        .arg(r.src_dir.join("CovBasics.java"))
        .status()
        .unwrap();
    assert!(st.success());
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&other),
        os("--classes"),
        os(&third),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        err,
        format!(
            "bci: warning: CovBasics: another build of it is in {}; the one in {} is reported \
             (the data is of none of them: the first --classes path that has it)\n{}",
            third.display(),
            other.display(),
            stale_line(&r.data)
        )
    );
    assert_eq!(row(&out, "total"), not_run, "{out}");
    // a class file that cannot be read: an error, and exit 1 (the report is incomplete)
    std::fs::write(third.join("Bad.class"), b"garbage").unwrap();
    let (code, out, err) = run_bci(&[os("report"), os(&r.data), os("--classes"), os(&third)]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.contains(&format!(
            "error: {}: Bad.class: not a class file\n",
            third.display()
        )),
        "{out}"
    );
}

/// A multi-release jar: mr/Ver in the base (Java 8), META-INF/versions/11/ and /17/, each with
/// its own code; mr/Main calls it. Writes the zip `jar` with `entries` (name, file) and a
/// manifest that says Multi-Release unless `multi` is false.
fn zip_jar(jar: &Path, multi: bool, entries: &[(&str, PathBuf)]) {
    use std::io::Write;
    let mut z = zip::ZipWriter::new(std::fs::File::create(jar).unwrap());
    let o = zip::write::SimpleFileOptions::default();
    z.start_file("META-INF/MANIFEST.MF", o).unwrap();
    let mf = if multi {
        "Manifest-Version: 1.0\r\nMulti-Release: true\r\n\r\n"
    } else {
        "Manifest-Version: 1.0\r\n\r\n"
    };
    z.write_all(mf.as_bytes()).unwrap();
    for (name, file) in entries {
        z.start_file(*name, o).unwrap();
        z.write_all(&std::fs::read(file).unwrap()).unwrap();
    }
    z.finish().unwrap();
}

/// The console's (covered, total) per counter of one class analysed with `counts`.
fn counters_of(bytes: &[u8], counts: Option<&[u64]>) -> Vec<(u64, u64)> {
    let k = analyze(bytes, counts, Split::AfterCalls).unwrap().counters;
    [k.instructions, k.branches, k.lines, k.methods, k.classes]
        .iter()
        .map(|c| (c.covered, c.total()))
        .collect()
}

/// `bci report --classes` of a multi-release jar (or the same tree as a directory) analyses
/// the entry of mr/Ver that ran (the data's hash: the base on a JVM that does not read the
/// versions, META-INF/versions/17/ on JDK 17), never a versioned entry as a second class;
/// data of two entries (runs that loaded different ones) reports the highest release and
/// names the other's data as left out; data of another build is stale, and the class is then
/// reported not run from the base entry, or from the highest release without a base.
#[test]
fn multi_release_jar_reports_the_entry_that_ran() {
    let ws = common::workspace();
    let work = ws.join(format!(
        "target/test-out/reports-multi-release-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    let java = |release: &str, dir: &str, srcs: &[(&str, &str)], extra: &[&str]| -> PathBuf {
        let src = work.join("src").join(dir);
        let out = work.join("classes").join(dir);
        std::fs::create_dir_all(src.join("mr")).unwrap();
        let mut files = Vec::new();
        for (name, text) in srcs {
            let f = src.join(format!("mr/{name}.java"));
            std::fs::write(&f, text).unwrap();
            files.push(f);
        }
        let st = Command::new(common::java_home().join("bin/javac"))
            .args(["--release", release, "-cp"])
            .arg(work.join("classes/base"))
            .args(extra)
            .arg("-d")
            .arg(&out)
            .args(&files)
            .status()
            .unwrap();
        assert!(st.success(), "javac {dir}");
        out.join("mr")
    };
    let main =
        "package mr;\npublic class Main {\n    public static void main(String[] a) {\n        \
                for (int i = 0; i < 3; i++) System.out.println(Ver.which());\n    }\n}\n";
    let base_ver = "package mr;\npublic class Ver {\n    public static String which() {\n        \
                    return \"base\";\n    }\n}\n";
    let base = java("8", "base", &[("Main", main), ("Ver", base_ver)], &[]);
    let v11 = java(
        "11",
        "v11",
        &[(
            "Ver",
            "package mr;\npublic class Ver {\n    public static String which() {\n        \
             return \"v11:\" + helper();\n    }\n    static String helper() {\n        \
             return \"h\";\n    }\n}\n",
        )],
        &[],
    );
    let v17 = java(
        "17",
        "v17",
        &[(
            "Ver",
            "package mr;\npublic class Ver {\n    public static String which() {\n        \
             return \"v17:\" + rec(3);\n    }\n    static int rec(int n) {\n        \
             return n == 0 ? 0 : n + rec(n - 1);\n    }\n}\n",
        )],
        &[],
    );
    // another build of the base: no debug information
    let other = java(
        "8",
        "other",
        &[("Main", main), ("Ver", base_ver)],
        &["-g:none"],
    );
    let (m, b, e11, e17) = (
        ("mr/Main.class", base.join("Main.class")),
        ("mr/Ver.class", base.join("Ver.class")),
        ("META-INF/versions/11/mr/Ver.class", v11.join("Ver.class")),
        ("META-INF/versions/17/mr/Ver.class", v17.join("Ver.class")),
    );
    let mr = work.join("mr.jar");
    zip_jar(&mr, true, &[m.clone(), b.clone(), e11.clone(), e17.clone()]);
    // the same tree as a directory (a build's classes directory)
    let dir = work.join("mr-dir");
    for (name, file) in [&m, &b, &e11, &e17] {
        let to = dir.join(name);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(file, to).unwrap();
    }
    let rt = work.join("bci-runtime.jar");
    bci(&[os("runtime-jar"), os(&rt)]);
    // Each jar instrumented and run on JDK 17 into its own data file.
    let run = |tag: &str, multi: bool, entries: &[(&str, PathBuf)], says: &str| -> PathBuf {
        let (jar, cov, data) = (
            work.join(format!("{tag}.jar")),
            work.join(format!("{tag}-c.jar")),
            work.join(format!("{tag}.cov")),
        );
        if !jar.exists() {
            zip_jar(&jar, multi, entries);
        }
        bci(&[os("instrument"), os("--coverage"), os(&jar), os(&cov)]);
        let o = Command::new(common::java_home().join("bin/java"))
            .arg(format!("-Dbci.covfile={}", data.display()))
            .arg("-cp")
            .arg(format!("{}:{}", cov.display(), rt.display()))
            .arg("mr.Main")
            .output()
            .unwrap();
        assert!(o.status.success(), "{tag}: {}", text(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            format!("{says}\n").repeat(3)
        );
        data
    };
    let all = [m.clone(), b.clone(), e11.clone(), e17.clone()];
    let d17 = run("mr", true, &all, "v17:6");
    let dbase = run("plain", false, &all, "base");
    let d11 = run("mr11", true, &[m.clone(), b.clone(), e11.clone()], "v11:h");
    let dother = run(
        "other",
        false,
        &[
            ("mr/Main.class", other.join("Main.class")),
            ("mr/Ver.class", other.join("Ver.class")),
        ],
        "base",
    );
    let vonly = work.join("vonly.jar");
    zip_jar(&vonly, true, &[m.clone(), e11.clone(), e17.clone()]);

    // The expected counters of an entry with the data of a file (None: not run).
    let expect = |entry: &PathBuf, data: Option<&PathBuf>| -> Vec<(u64, u64)> {
        let bytes = std::fs::read(entry).unwrap();
        let d = data.map(|p| CovData::parse(&std::fs::read(p).unwrap()).unwrap());
        let counts = d.as_ref().map(|d| {
            d.counts("mr/Ver", class_hash(&bytes))
                .unwrap_or_else(|| panic!("no data for {}", entry.display()))
        });
        counters_of(&bytes, counts)
    };
    let report = |data: &[&PathBuf], classes: &Path, extra: &[&str]| {
        let mut args = vec![os("report")];
        args.extend(data.iter().map(os));
        args.extend([os("--classes"), os(classes), os("--include"), os("mr.Ver")]);
        args.extend(extra.iter().map(os));
        run_bci(&args)
    };
    let stale = format!(
        "stale: mr/Ver: the data in {} is from another build of this class (left out of the \
         counts)\n",
        dother.display()
    );
    for (data, classes, err, want, with_data) in [
        (
            vec![&d17],
            &mr,
            String::new(),
            expect(&e17.1, Some(&d17)),
            1,
        ),
        (
            vec![&d17],
            &dir,
            String::new(),
            expect(&e17.1, Some(&d17)),
            1,
        ),
        (
            vec![&dbase],
            &mr,
            String::new(),
            expect(&b.1, Some(&dbase)),
            1,
        ),
        (
            vec![&d11],
            &mr,
            String::new(),
            expect(&e11.1, Some(&d11)),
            1,
        ),
        (
            vec![&d11, &d17],
            &mr,
            format!(
                "left out: mr/Ver: the data in {} of META-INF/versions/11/mr/Ver.class (another \
                 build of this class there: not counted); the report shows \
                 META-INF/versions/17/mr/Ver.class (one build of a class per report: --classes \
                 with that build alone reports it)\n",
                d11.display()
            ),
            expect(&e17.1, Some(&d17)),
            1,
        ),
        (vec![&dother], &mr, stale.clone(), expect(&b.1, None), 0),
        (
            vec![&dother],
            &vonly,
            stale.clone(),
            expect(&e17.1, None),
            0,
        ),
    ] {
        let (code, out, e) = report(&data, classes, &[]);
        assert_eq!(
            (code, e.as_str()),
            (Some(0), err.as_str()),
            "{data:?} {out}"
        );
        assert_eq!(row(&out, "total"), want, "{data:?} {out}");
        assert!(
            out.contains(&format!("\n1 class analysed, {with_data} with data;")),
            "{out}"
        );
    }
    assert!(expect(&e17.1, Some(&d17))[0].0 > 0);

    // Never a second class: both classes once in LCOV and JaCoCo XML.
    let (info, xml) = (work.join("mr.info"), work.join("mr.xml"));
    let (code, out, e) = run_bci(&[
        os("report"),
        os(&d11),
        os(&d17),
        os("--classes"),
        os(&mr),
        os("--lcov"),
        os(&info),
        os("--xml"),
        os(&xml),
    ]);
    assert_eq!(code, Some(0), "{out}{e}");
    assert!(
        out.contains("\n2 classes analysed, 2 with data; 2 sessions in"),
        "{out}"
    );
    let info = std::fs::read_to_string(&info).unwrap();
    let sf: Vec<&str> = info.lines().filter(|l| l.starts_with("SF:")).collect();
    assert_eq!(sf, ["SF:mr/Main.java", "SF:mr/Ver.java"], "{info}");
    let xml = std::fs::read_to_string(&xml).unwrap();
    let classes: Vec<&str> = tags(&xml, "class")
        .iter()
        .filter_map(|t| attr(t, "name"))
        .collect();
    assert_eq!(classes, ["mr/Main", "mr/Ver"], "{xml}");
    let _ = std::fs::remove_dir_all(&work);
}

/// Several classes of one name loaded side by side in one run (JRuby's JIT: a class named after
/// the file for each hot method of a script it cannot compile whole), kept apart by classdump=
/// (`prog.<hash>.class`): builds under one --classes path that each have data and declare
/// different methods are each reported as a class of their own, `name#hash` (distinct XML,
/// CSV rows and HTML pages), their source file's lines combined (hits summed) in LCOV. Before,
/// one build was reported (the first by entry name) and the others' data "left out" (found by
/// the languages hunt: fib, safe_call and the worker block gone from JRuby's LCOV). Builds
/// declaring the same methods and fields may be a redefinition's versions: one build per
/// report, as before.
#[test]
fn classes_of_one_name_loaded_side_by_side_are_each_reported() {
    let work = fresh_work("side-by-side");
    let src = |body: &str| format!("package rb;\npublic class Prog {{\n{body}\n}}\n");
    let builds = [
        (
            "v1",
            src("  static int fib(int n) {\n    return n + 1;\n  }"),
        ),
        (
            "v2",
            src("\n\n  static int risky(int n) {\n    return n * 2;\n  }"),
        ),
        // the methods of v1, another body: what a redefinition may make of v1
        (
            "v3",
            src("  static int fib(int n) {\n    return n + 2;\n  }"),
        ),
    ];
    let mut files = Vec::new();
    for (tag, text) in &builds {
        let out = work.join(tag);
        javac_into(
            &work.join(format!("src-{tag}")),
            &out,
            &[("rb/Prog.java", text)],
        );
        files.push(std::fs::read(out.join("rb/Prog.class")).unwrap());
    }
    // one run's data of some builds: every counter of v1 3, of v2 5, of v3 7
    let counts: Vec<Vec<u64>> = (files.iter().zip([3, 5, 7]))
        .map(|(b, k)| {
            let plan = bci_rewriter::coverage::plan_class(b, Split::AfterCalls).unwrap();
            vec![k; plan.counters as usize]
        })
        .collect();
    let run = |name: &str, which: &[usize]| -> PathBuf {
        let mut d = CovData::default();
        d.sessions.push(bci_rewriter::coverage::data::Session {
            id: format!("host-1-{name}"),
            start_ms: 1,
            dump_ms: 2,
            jvm: "17".into(),
            command: "jruby prog.rb".into(),
        });
        for &i in which {
            d.add_class("rb/Prog", class_hash(&files[i]), &counts[i])
                .unwrap();
        }
        let data = work.join(name);
        std::fs::write(&data, d.to_bytes()).unwrap();
        data
    };
    // a classdump= directory of two builds
    let dump = |name: &str, which: &[usize]| -> PathBuf {
        let dir = work.join(name).join("rb");
        std::fs::create_dir_all(&dir).unwrap();
        for &i in which {
            let h = class_hash(&files[i]);
            std::fs::write(dir.join(format!("Prog.{h:016x}.class")), &files[i]).unwrap();
        }
        dir.parent().unwrap().to_path_buf()
    };
    let (h1, h2, h3) = (
        class_hash(&files[0]),
        class_hash(&files[1]),
        class_hash(&files[2]),
    );

    let (side, data) = (dump("side", &[0, 1]), run("side.cov", &[0, 1]));
    let (info, xml, csv, html) = (
        work.join("s.info"),
        work.join("s.xml"),
        work.join("s.csv"),
        work.join("html"),
    );
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&side),
        os("--lcov"),
        os(&info),
        os("--xml"),
        os(&xml),
        os("--csv"),
        os(&csv),
        os("--html"),
        os(&html),
    ]);
    let (n1, n2) = (format!("rb/Prog#{h1:016x}"), format!("rb/Prog#{h2:016x}"));
    let mut names = [n1.clone(), n2.clone()];
    names.sort();
    assert_eq!(
        (code, err.as_str()),
        (
            Some(0),
            format!(
                "bci: note: rb/Prog: 2 builds in {} have data (classes loaded side by side \
                 under one name, e.g. JRuby's JIT compiling each method of a file into a class \
                 of its own): each reported as a class of its own ({}, {}); their source \
                 file's lines are combined\n",
                side.display(),
                names[0],
                names[1]
            )
            .as_str()
        ),
        "{out}"
    );
    assert!(
        out.contains("\n2 classes analysed, 2 with data; 1 session in"),
        "{out}"
    );
    let xml = std::fs::read_to_string(&xml).unwrap();
    let classes: Vec<&str> = tags(&xml, "class")
        .iter()
        .filter_map(|t| attr(t, "name"))
        .collect();
    assert_eq!(classes, names, "{xml}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    for n in &names {
        let simple = n.strip_prefix("rb/").unwrap();
        assert!(csv.contains(&format!(",rb,{simple},")), "{csv}");
    }
    // a page of each build, one of the source file
    let mut pages: Vec<String> = std::fs::read_dir(html.join("rb"))
        .unwrap()
        .map(|e| percent_decode(&e.unwrap().file_name().to_string_lossy()))
        .collect();
    pages.sort();
    let mut want_pages: Vec<String> = (names.iter())
        .map(|n| format!("{}.html", n.strip_prefix("rb/").unwrap()))
        .chain(["Prog.java.html".into(), "index.html".into()])
        .collect();
    want_pages.sort();
    assert_eq!(pages, want_pages);
    // LCOV: one record of Prog.java, each line's hits summed over the builds that have it
    let mut want: BTreeMap<u32, u64> = BTreeMap::new();
    for i in [0, 1] {
        let c = analyze(&files[i], Some(&counts[i]), Split::AfterCalls).unwrap();
        for (l, x) in &c.lines {
            *want.entry(*l).or_default() += line_count(x);
        }
    }
    assert!(want.keys().eq(&[2, 4, 6]) && want[&2] > 0);
    assert_eq!(lcov_da(&info), want);
    let text = std::fs::read_to_string(&info).unwrap();
    let sf: Vec<&str> = text.lines().filter(|l| l.starts_with("SF:")).collect();
    assert_eq!(sf, ["SF:rb/Prog.java"], "{text}");
    for m in ["fib(I)I", "risky(I)I"] {
        assert!(text.contains(m), "{m}: {text}");
    }

    // the same methods and fields (a redefinition's versions): one build, the other left out
    let (redefined, data) = (dump("redefined", &[0, 2]), run("redefined.cov", &[0, 2]));
    let (first, second) = if h1 < h3 { (h1, h3) } else { (h3, h1) };
    let (code, out, err) = run_bci(&[os("report"), os(&data), os("--classes"), os(&redefined)]);
    assert_eq!(
        (code, err.as_str()),
        (
            Some(0),
            format!(
                "left out: rb/Prog: the data in {} of rb/Prog.{second:016x}.class (another build \
                 of this class there: not counted); the report shows rb/Prog.{first:016x}.class \
                 (one build of a class per report: --classes with that build alone reports it)\n",
                data.display()
            )
            .as_str()
        ),
        "{out}"
    );
    assert!(
        out.contains("\n1 class analysed, 1 with data; 1 session in"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// Paths after one --classes are data files to the parser: a jar, a directory or a class file
/// given as data says it looks like a class path and that --classes takes one path per flag,
/// wherever it stands (also first, also after --classes), instead of "bad magic".
#[test]
fn a_class_path_given_as_data_is_named_as_one() {
    let work = fresh_work("classpath-as-data");
    let data = work.join("a.cov");
    std::fs::write(&data, CovData::default().to_bytes()).unwrap();
    let jar = work.join("lib.jar");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&jar).unwrap());
    z.start_file(
        "META-INF/MANIFEST.MF",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    std::io::Write::write_all(&mut z, b"Manifest-Version: 1.0\r\n\r\n").unwrap();
    z.finish().unwrap();
    let class = work.join("A.class");
    std::fs::write(&class, [0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 61]).unwrap();
    let dir = work.join("classes");
    let hint = "it looks like a class path; --classes takes one path per flag (--classes a.jar \
                --classes b.jar)";
    for (args, bad, what) in [
        (
            vec![os(&data), os(&jar), os("--classes"), os(&dir)],
            &jar,
            "a jar",
        ),
        (
            vec![os("--classes"), os(&dir), os(&jar), os(&data)],
            &jar,
            "a jar",
        ),
        (
            vec![os(&data), os("--classes"), os(&jar), os(&dir)],
            &dir,
            "a directory",
        ),
        (
            vec![os(&data), os(&class), os("--classes"), os(&dir)],
            &class,
            "a class file",
        ),
    ] {
        let mut a = vec![os("report")];
        a.extend(args);
        let (code, out, err) = run_bci(&a);
        assert_eq!(code, Some(2), "{a:?}: {out}{err}");
        assert_eq!(
            err,
            format!(
                "bci: {}: {what}, not a coverage data file: {hint}\n",
                bad.display()
            ),
            "{a:?}"
        );
    }
    // one path per flag, repeated: both read
    // no --classes at all: the jar was given in the data's place
    let (code, out, err) = run_bci(&[os("report"), os(&jar)]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(
        err,
        format!(
            "bci: {j}: a jar, not a coverage data file: give the data file a run wrote first, \
             then the classes with --classes (bci report bci.cov --classes {j})\n",
            j = jar.display()
        )
    );
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&jar),
        os("--classes"),
        os(&dir),
    ]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert!(
        out.contains("\n0 classes analysed, 0 with data; 0 sessions in"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// The data of one run (session `id`) of a class `a/B` (hash 7) whose first counter is `count`.
fn one_class_run(id: &str, count: u64) -> CovData {
    let mut d = CovData::default();
    d.sessions.push(bci_rewriter::coverage::data::Session {
        id: id.into(),
        start_ms: 1,
        dump_ms: 2,
        jvm: "17".into(),
        command: "java Main".into(),
    });
    d.add_class("a/B", 7, &[count, 0]).unwrap();
    d
}

/// One run's data given twice (the same file twice, or a merged file next to one of its parts,
/// e.g. a `*.cov` glob that picks up an earlier `bci merge` output) would count that run twice:
/// `bci merge` and `bci report` refuse it, naming both files and the session, and write
/// nothing. Data of distinct runs merges as before.
#[test]
fn one_runs_data_given_twice_is_refused() {
    let work = fresh_work("session-twice");
    let classes = work.join("classes");
    let run = one_class_run;
    let (a, b) = (work.join("a.cov"), work.join("b.cov"));
    std::fs::write(&a, run("host-10-1", 4001).to_bytes()).unwrap();
    std::fs::write(&b, run("host-11-1", 5).to_bytes()).unwrap();
    // distinct runs: counts add up, two sessions
    let all = work.join("all.cov");
    let (code, out, err) = run_bci(&[os("merge"), os(&a), os(&b), os("-o"), os(&all)]);
    assert_eq!(code, Some(0), "{out}{err}");
    let d = CovData::parse(&std::fs::read(&all).unwrap()).unwrap();
    assert_eq!(d.counts("a/B", 7).unwrap(), &[4006, 0]);
    assert_eq!(d.sessions.len(), 2);
    let out_file = work.join("twice.cov");
    for (inputs, first, second) in [
        (vec![&a, &a], &a, &a),
        (vec![&all, &a], &all, &a),
        (vec![&b, &all], &b, &all),
    ] {
        let session = if first == &b {
            "host-11-1"
        } else {
            "host-10-1"
        };
        let want = if first == second {
            format!(
                "bci: {} is given twice: its counts would be added twice\n",
                first.display()
            )
        } else {
            format!(
                "bci: {} and {} both hold session {session}: that run's counts would be \
                 added twice; give each run's data once (not a merged file next to a file \
                 merged into it)\n",
                first.display(),
                second.display()
            )
        };
        let mut m = vec![os("merge")];
        m.extend(inputs.iter().map(os));
        m.extend([os("-o"), os(&out_file)]);
        let (code, out, err) = run_bci(&m);
        assert_eq!(
            (code, err.as_str()),
            (Some(2), want.as_str()),
            "{m:?}: {out}"
        );
        assert!(!out_file.exists(), "{m:?}");
        let mut r = vec![os("report")];
        r.extend(inputs.iter().map(os));
        r.extend([os("--classes"), os(&classes)]);
        let (code, out, err) = run_bci(&r);
        assert_eq!(
            (code, err.as_str()),
            (Some(2), want.as_str()),
            "{r:?}: {out}"
        );
    }
    // a file that holds one session twice (an older bci's merge of a file with itself): its
    // counts are doubled already; read, with a warning naming it
    let mut doubled = run("host-10-1", 4001);
    doubled.merge(&run("host-12-1", 4001), false).unwrap();
    doubled.sessions[1].id = "host-10-1".into();
    let twice = work.join("old-twice.cov");
    std::fs::write(&twice, doubled.to_bytes()).unwrap();
    let (code, out, err) = run_bci(&[os("report"), os(&twice), os("--classes"), os(&classes)]);
    // (exit 1: a/B is not under --classes, said after the warning)
    assert_eq!(code, Some(1), "{out}{err}");
    assert_eq!(
        err,
        format!(
            "bci: {}: session host-10-1 is in it twice: that run's counts are likely counted \
             twice (a merge of data with itself); remake it from the files it was merged from\n\
             bci: error: the 1 class in the data is not under the --classes paths ({}): \
             no class was analysed; give the directories or jars of the classes that ran (a.B)\n",
            twice.display(),
            classes.display()
        )
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// An output of `bci report` that is one of its inputs (a data file, a `--classes` jar), or
/// the path of another output, is refused before anything is written, naming both: the path
/// as given, through `./`, `sub/..` (of a directory not there yet) and a symbolic link alike
/// (`--xml DATA` silently overwrote the data; `--lcov r.out --xml r.out` kept one of the two
/// reports). `bci merge a.cov b.cov -o a.cov` reads every input before it writes and stays
/// allowed.
#[test]
fn report_outputs_that_are_an_input_or_another_output_are_refused() {
    let work = fresh_work("out-is-in");
    let data = one_class_run;
    let (a, b) = (work.join("a.cov"), work.join("b.cov"));
    std::fs::write(&a, data("host-10-1", 4).to_bytes()).unwrap();
    std::fs::write(&b, data("host-11-1", 5).to_bytes()).unwrap();
    let a_bytes = std::fs::read(&a).unwrap();
    let jar = work.join("app.jar");
    zip_jar(&jar, false, &[]);
    let jar_bytes = std::fs::read(&jar).unwrap();
    std::os::unix::fs::symlink(&a, work.join("link.xml")).unwrap();
    // run in `work`, paths relative to it
    let run = |args: &[&str]| {
        let o = Command::new(BCI)
            .current_dir(&work)
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let is_input = |opt: &str, out: &str, what: &str, input: &str| {
        format!(
            "bci: {opt} {out} is the {what} {input}: the report would overwrite it; write it \
             elsewhere\n"
        )
    };
    let one_file = |o1: &str, p1: &str, o2: &str, p2: &str| {
        format!(
            "bci: {o1} {p1} and {o2} {p2} are one file: one report would overwrite the other; \
             give each its own path\n"
        )
    };
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["a.cov", "--classes", "classes", "--xml", "a.cov"],
            is_input("--xml", "a.cov", "data file", "a.cov"),
        ),
        (
            vec![
                "b.cov",
                "a.cov",
                "--classes",
                "classes",
                "--lcov",
                "./a.cov",
            ],
            is_input("--lcov", "./a.cov", "data file", "a.cov"),
        ),
        (
            vec!["a.cov", "--classes", "classes", "--cobertura", "link.xml"],
            is_input("--cobertura", "link.xml", "data file", "a.cov"),
        ),
        (
            vec!["a.cov", "--classes", "classes", "-o", "classes/../a.cov"],
            is_input("-o", "classes/../a.cov", "data file", "a.cov"),
        ),
        (
            vec!["a.cov", "--classes", "app.jar", "--csv", "app.jar"],
            is_input("--csv", "app.jar", "--classes path", "app.jar"),
        ),
        (
            vec!["a.cov", "--classes", "classes", "--html", "classes"],
            is_input("--html", "classes", "--classes path", "classes"),
        ),
        (
            vec![
                "a.cov",
                "--classes",
                "classes",
                "--lcov",
                "r.out",
                "--xml",
                "r.out",
            ],
            one_file("--xml", "r.out", "--lcov", "r.out"),
        ),
        (
            vec![
                "a.cov",
                "--classes",
                "classes",
                "--csv",
                "new/r.csv",
                "-o",
                "new/./x/../r.csv",
            ],
            one_file("--csv", "new/r.csv", "-o", "new/./x/../r.csv"),
        ),
    ];
    for (args, want) in &cases {
        let mut full = vec!["report"];
        full.extend(args);
        let (code, out, err) = run(&full);
        assert_eq!(
            (code, err.as_str()),
            (Some(2), want.as_str()),
            "{full:?}: {out}"
        );
        assert_eq!(
            std::fs::read(&a).unwrap(),
            a_bytes,
            "{full:?}: a.cov changed"
        );
        assert_eq!(
            std::fs::read(&jar).unwrap(),
            jar_bytes,
            "{full:?}: app.jar changed"
        );
        for f in ["r.out", "new"] {
            assert!(!work.join(f).exists(), "{full:?}: {f} written");
        }
    }
    // cpu=times data: -o onto the data file is refused the same way
    let prof = work.join("bci.data");
    let prof_text =
        "bci-data\t1\nclock\twall\nthread\tmain\ndata\t2\t0\t0\t0\t0\t0\t9\t3\t1000000\t0\t0\n";
    std::fs::write(&prof, prof_text).unwrap();
    let (code, out, err) = run(&["report", "bci.data", "thread=n", "-o", "./bci.data"]);
    assert_eq!(
        (code, err.as_str()),
        (
            Some(2),
            is_input("-o", "./bci.data", "data file", "bci.data").as_str()
        ),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&prof).unwrap(), prof_text);
    // distinct paths still work
    let (code, out, err) = run(&[
        "report",
        "a.cov",
        "--classes",
        "classes",
        "--xml",
        "r.xml",
        "--lcov",
        "r.info",
    ]);
    // (exit 1 only because the data's class a/B is not under --classes)
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.starts_with("bci: error: the 1 class in the data is not under the --classes"),
        "{err}"
    );
    assert!(work.join("r.xml").is_file() && work.join("r.info").is_file());
    // merge into one of its inputs: every input is read before the output is written
    let (code, out, err) = run(&["merge", "a.cov", "b.cov", "-o", "a.cov"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let merged = CovData::parse(&std::fs::read(&a).unwrap()).unwrap();
    assert_eq!(merged.counts("a/B", 7).unwrap(), &[9, 0]);
    let (code, out, err) = run(&["merge", "b.cov", "-o", "./b.cov"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let again = CovData::parse(&std::fs::read(&b).unwrap()).unwrap();
    assert_eq!(again, data("host-11-1", 5));
    let _ = std::fs::remove_dir_all(&work);
}

/// Headless Chromium (Debian chromium) on a `file://` address: `--dump-dom` (the page after
/// its scripts ran) or, with `shot`, a screenshot into that file.
fn chromium(work: &Path, url: &str, shot: Option<&Path>) -> Option<String> {
    let profile = work.join(format!("chromium-profile-{}", url.len()));
    let _ = std::fs::remove_dir_all(&profile);
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    match shot {
        Some(p) => c
            .arg(format!("--screenshot={}", p.display()))
            .arg("--window-size=1280,900"),
        None => c.arg("--dump-dom"),
    };
    let o = c.arg(url).output().ok()?;
    assert!(o.status.success(), "chromium {url}: {}", text(&o));
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The `href` of the first link whose text is `label`.
fn link<'a>(dom: &'a str, label: &str) -> &'a str {
    let end = dom
        .find(&format!("\">{label}</a>"))
        .unwrap_or_else(|| panic!("no link {label} in {dom}"));
    let start = dom[..end].rfind("href=\"").unwrap() + 6;
    &dom[start..end]
}

/// The HTML report opened from file:// in headless Chromium: the index shows the totals, the
/// links lead through the package and the class to the source page, where a line's gutter has
/// its hit count and a switch's branch marker says how many branches were missed; a table
/// sorts by a column.
#[test]
fn html_report_in_headless_chromium() {
    if Command::new("chromium").arg("--version").output().is_err() {
        eprintln!("skipped: chromium is not installed (apt-get install -y chromium)");
        return;
    }
    let r = setup("html", &["CovBasics"]);
    let html = r.work.join("html");
    bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--sources"),
        os(&r.src_dir),
        os("--html"),
        os(&html),
        os("--title"),
        os("CovBasics run"),
    ]);
    // Nothing the pages load comes from the network.
    for e in walk(&html) {
        let t = std::fs::read_to_string(&e).unwrap();
        assert!(
            !t.contains("http://") && !t.contains("https://"),
            "{}",
            e.display()
        );
    }
    let url = |p: &Path| format!("file://{}", p.display());
    let index = html.join("index.html");
    let shot = r.work.join("index.png");
    chromium(&r.work, &url(&index), Some(&shot)).unwrap();
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 1000,
        "screenshot"
    );

    let dom = chromium(&r.work, &url(&index), None).unwrap();
    let k = &r.class.counters;
    let foot = &dom[dom.find("<tfoot>").unwrap()..dom.find("</tfoot>").unwrap()];
    assert!(foot.contains("Total"), "{foot}");
    for c in [k.instructions, k.branches, k.lines, k.methods, k.classes] {
        assert!(
            foot.contains(&format!(">{} of {}<", c.missed, c.total())),
            "{c:?} in {foot}"
        );
    }
    let pct = k.lines.covered as f64 * 100.0 / k.lines.total() as f64;
    assert!(foot.contains(&format!("{pct:.1}%")), "{foot}");

    // index -> package -> class -> source, by the links' addresses.
    let pkg = html.join(link(&dom, "(default)"));
    let dom = chromium(&r.work, &url(&pkg), None).unwrap();
    let class = pkg.parent().unwrap().join(link(&dom, "CovBasics"));
    let dom = chromium(&r.work, &url(&class), None).unwrap();
    let href = link(&dom, "loop(I)I");
    let (file, frag) = href.split_once('#').unwrap();
    assert_eq!(frag, format!("L{}", line_of(&r, "int s = 0; // hits=3")));
    let src = class.parent().unwrap().join(file);
    let dom = chromium(&r.work, &format!("{}#{frag}", url(&src)), None).unwrap();
    let row = |nr: u32| -> String {
        let s = dom.find(&format!("<tr id=\"L{nr}\"")).unwrap();
        dom[s..s + dom[s..].find("</tr>").unwrap()].to_string()
    };
    let body = row(line_of(&r, "s += i; // hits=30"));
    assert!(body.contains("class=\"fc\""), "{body}");
    assert!(body.contains("<td class=\"hits\">30</td>"), "{body}");
    assert!(body.contains("s += i;"), "{body}");
    let switch = row(line_of(&r, "switch (k) { // hits=6 br=3/4"));
    assert!(switch.contains("class=\"pc\""), "{switch}");
    assert!(
        switch.contains("title=\"1 of 4 branches missed\""),
        "{switch}"
    );
    let never = r.class.methods.iter().find(|m| m.name == "never").unwrap();
    let never = row(never.first_line.unwrap());
    assert!(
        never.contains("class=\"nc\"") && never.contains("<td class=\"hits\">0</td>"),
        "{never}"
    );

    // Sorting (the script ran): methods by entries, most first.
    let dom = chromium(&r.work, &format!("{}#sort=-9", url(&class)), None).unwrap();
    let first = &dom[dom.find("<tbody>").unwrap()..];
    let most = r.class.methods.iter().map(|m| m.entries).max().unwrap();
    assert!(most > 1000);
    let first_row = &first[..first.find("</tr>").unwrap()];
    assert!(
        first_row.ends_with(&format!("<td data-v=\"{most}\">{most}</td>")),
        "{first_row}"
    );
}

/// The HTML report draws a bar only for a counter with something to count: a method without
/// branches has `-` and `0 of 0`, no bar (a bar's red background would show it all missed);
/// a counter with a total has its bar, as wide as the share covered.
#[test]
fn html_report_has_no_bar_for_a_counter_without_total() {
    let r = setup("html-bars", &["CovBasics"]);
    let html = r.work.join("html");
    bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--html"),
        os(&html),
    ]);
    let page = std::fs::read_to_string(html.join("default/CovBasics.html")).unwrap();
    let never = r.class.methods.iter().find(|m| m.name == "never").unwrap();
    assert_eq!(never.counters.branches.total(), 0);
    let row = &page[page
        .find(&format!(">never{}</a></td>", never.desc))
        .unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    let k = &never.counters;
    let (i, l, m) = (k.instructions, k.lines, k.methods);
    assert_eq!((i.covered, l.covered, m.covered), (0, 0, 0));
    assert_eq!(
        row,
        format!(
            ">never{}</a></td>\
             <td data-v=\"0.000\"><span class=\"bar\"><span style=\"width:0%\"></span></span> 0.0%</td>\
             <td data-v=\"{}\">{} of {}</td>\
             <td data-v=\"-1.000\">-</td><td data-v=\"0\">0 of 0</td>\
             <td data-v=\"0.000\"><span class=\"bar\"><span style=\"width:0%\"></span></span> 0.0%</td>\
             <td data-v=\"{}\">{} of {}</td>\
             <td data-v=\"0.000\"><span class=\"bar\"><span style=\"width:0%\"></span></span> 0.0%</td>\
             <td data-v=\"1\">1 of 1</td>\
             <td data-v=\"0\">0</td>",
            never.desc,
            i.missed,
            i.missed,
            i.total(),
            l.missed,
            l.missed,
            l.total()
        )
    );
    // no page has a bar next to a `-`
    for p in walk(&html) {
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(!t.contains("</span></span> -</td>"), "{}", p.display());
    }
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

const JUNIT: &str = "/usr/share/java/junit-platform-console-standalone.jar";

/// Per-test coverage: three JUnit 5 tests (cli/tests/fixtures/pertest/ShapesTest.java) over
/// one class, offline-instrumented or under the agent (`coverage=y`), run twice by Debian
/// junit5's console launcher with the runtime jar on the class path (its listener found through
/// ServiceLoader): `bci report --per-test` lists for every line exactly the tests its
/// `// tests=` comment names, on the console and in the HTML tooltips; the LCOV has one TN:
/// section per test (each test's counts from both runs) plus one for what ran outside the
/// tests, and genhtml reads it.
#[test]
fn per_test_coverage_under_junit5() {
    per_test(false);
}

#[test]
fn per_test_coverage_under_junit5_with_the_agent() {
    per_test(true);
}

/// Per-test fixtures under `work`: cli/tests/fixtures/pertest/Shapes.java compiled into
/// `orig` and covered offline into `inst`, the JUnit 5 test class `test_file` compiled into
/// `tests`, and the runtime jar: (orig, inst, tests, runtime jar).
fn pertest_build(work: &Path, test_file: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let (orig, inst, tests) = (work.join("orig"), work.join("inst"), work.join("tests"));
    for d in [&orig, &tests] {
        std::fs::create_dir_all(d).unwrap();
    }
    let src = common::workspace().join("cli/tests/fixtures/pertest");
    for (cp, out, file) in [
        (String::new(), &orig, "Shapes.java"),
        (format!("{}:{JUNIT}", orig.display()), &tests, test_file),
    ] {
        let st = Command::new(common::java_home().join("bin/javac"))
            .args(["-g", "-cp", &cp, "-d"])
            .arg(out)
            .arg(src.join(file))
            .status()
            .unwrap();
        assert!(st.success(), "javac {file}");
    }
    bci(&[os("instrument"), os("--coverage"), os(&orig), os(&inst)]);
    let rt = work.join("bci-runtime.jar");
    bci(&[os("runtime-jar"), os(&rt)]);
    (orig, inst, tests, rt)
}

fn per_test(agent: bool) {
    if !Path::new(JUNIT).exists() {
        eprintln!("skipped: {JUNIT} absent (apt-get install -y junit5)");
        return;
    }
    let ws = common::workspace();
    let work = ws.join(format!(
        "target/test-out/reports-pertest-{agent}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    let build = pertest_build(&work, "ShapesTest.java");
    let orig = build.0.clone();
    let src = ws.join("cli/tests/fixtures/pertest");
    let data = work.join("run.cov");
    for _ in 0..2 {
        let o = run_junit(
            &build,
            agent,
            &data,
            &["-Xverify:all"],
            &["--select-class", "ShapesTest", "--disable-banner"],
        );
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("3 tests successful"), "{}", text(&o));
        // run one at a time: nothing said (no overlap, no parallel execution)
        assert!(!text(&o).contains("bci: per-test coverage"), "{}", text(&o));
    }
    let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    assert_eq!(d.sessions.len(), 2);
    assert_eq!(
        d.tests.keys().collect::<Vec<_>>(),
        [
            "ShapesTest#areaTest()",
            "ShapesTest#bothTest()",
            "ShapesTest#perimeterTest()"
        ]
    );

    let (info, html) = (work.join("pertest.info"), work.join("html"));
    let o = bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&orig),
        os("--sources"),
        os(&src),
        os("--per-test"),
        os("--lcov"),
        os(&info),
        os("--html"),
        os(&html),
    ]);
    let console = String::from_utf8_lossy(&o.stdout).into_owned();
    // tests one at a time: nothing said of tests that overlap
    assert!(!console.contains("same time"), "{console}");
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    let page = std::fs::read_to_string(html.join("default/Shapes.java.html")).unwrap();
    let text_src = std::fs::read_to_string(src.join("Shapes.java")).unwrap();
    let mut checked = 0;
    for (i, line) in text_src.lines().enumerate() {
        let Some(p) = line.find("// tests=") else {
            continue;
        };
        let nr = i + 1;
        let outside = line[p + 9..].contains("(outside)");
        let mut want: Vec<String> = line[p + 9..]
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty() && *t != "(outside)")
            .map(|t| format!("ShapesTest#{t}()"))
            .collect();
        want.sort();
        // a line run outside the tests (@BeforeAll) is told from one never run
        let listed = match (want.is_empty(), outside) {
            (true, false) => "-".to_string(),
            (true, true) => "(outside tests)".to_string(),
            (false, false) => want.join(" "),
            (false, true) => format!("{} (outside tests)", want.join(" ")),
        };
        assert!(
            console.contains(&format!("\nShapes.java:{nr}\t{listed}\n")),
            "line {nr}: want {listed} in\n{console}"
        );
        let tip = match (want.is_empty(), outside) {
            (true, false) => "Run by no test".to_string(),
            (true, true) => "Run outside tests only".to_string(),
            (false, o) => format!(
                "Run by {} test(s): {}{}",
                want.len(),
                want.join(", "),
                if o { "; and outside tests" } else { "" }
            ),
        };
        let row = &page[page.find(&format!("<tr id=\"L{nr}\"")).unwrap()..];
        let row = &row[..row.find('>').unwrap()];
        assert!(
            row.contains(&format!("title=\"{tip}\"")),
            "line {nr}: {row}"
        );
        checked += 1;
    }
    assert_eq!(checked, 8);

    // LCOV: a section per test and one outside them; bothTest ran the throw line once a run.
    let lcov = std::fs::read_to_string(&info).unwrap();
    let sections: Vec<&str> = lcov.lines().filter_map(|l| l.strip_prefix("TN:")).collect();
    assert_eq!(
        sections,
        [
            "ShapesTest_areaTest__",
            "ShapesTest_bothTest__",
            "ShapesTest_perimeterTest__",
            "outside_tests"
        ]
    );
    let throw_line = 1 + text_src
        .lines()
        .position(|l| l.contains("throw new"))
        .unwrap();
    let both = &lcov[lcov.find("TN:ShapesTest_bothTest__").unwrap()..];
    let both = &both[..both.find("end_of_record").unwrap()];
    assert!(both.contains(&format!("DA:{throw_line},2\n")), "{both}");
    let area = &lcov[lcov.find("TN:ShapesTest_areaTest__").unwrap()..];
    let area = &area[..area.find("end_of_record").unwrap()];
    assert!(area.contains(&format!("DA:{throw_line},0\n")), "{area}");
    let o = Command::new("genhtml")
        .arg("--branch-coverage")
        .arg("-o")
        .arg(work.join("genhtml"))
        .arg(&info)
        .output()
        .expect("genhtml (Debian lcov)");
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).to_lowercase().contains("warning"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&work);
}

/// Under the JUnit Platform each invocation of a parameterized or repeated test and each
/// dynamic test of a test factory is a test of its own, named by its method and its
/// invocation indexes (cli/tests/fixtures/pertest/InvocationsTest.java: 7 tests, as JUnit
/// counts them). Before: they were named by their method alone, `per test: 4 tests`, each
/// method's invocations one test.
#[test]
fn per_test_names_each_invocation_apart() {
    if !Path::new(JUNIT).exists() {
        eprintln!("skipped: {JUNIT} absent (apt-get install -y junit5)");
        return;
    }
    let work = fresh_work("pertest-invocations");
    let (orig, inst, tests, rt) = pertest_build(&work, "InvocationsTest.java");
    let data = work.join("run.cov");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-jar")
        .arg(JUNIT)
        .arg("-cp")
        .arg(format!(
            "{}:{}:{}",
            inst.display(),
            tests.display(),
            rt.display()
        ))
        .args(["--select-class", "InvocationsTest", "--disable-banner"])
        .output()
        .unwrap();
    assert!(text(&o).contains("7 tests successful"), "{}", text(&o));
    let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    assert_eq!(
        d.tests.keys().collect::<Vec<_>>(),
        [
            "InvocationsTest#dynamic()[1]",
            "InvocationsTest#dynamic()[2][1]",
            "InvocationsTest#param(int)[1]",
            "InvocationsTest#param(int)[2]",
            "InvocationsTest#plain()",
            "InvocationsTest#repeated()[1]",
            "InvocationsTest#repeated()[2]",
        ]
    );
    let o = bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&orig),
        os("--per-test"),
    ]);
    let console = String::from_utf8_lossy(&o.stdout);
    assert!(console.contains("\nper test: 7 tests;"), "{console}");
    let _ = std::fs::remove_dir_all(&work);
}

/// An LCOV tracefile merged as genhtml and `lcov -a` merge its `TN:` sections: per source file
/// (`SF:`), each line's `DA` count and each branch outcome's `BRDA` count (`-` is 0) summed over
/// the sections.
#[derive(Debug, Default, PartialEq)]
struct LcovTotals {
    /// SF -> line -> hits.
    lines: BTreeMap<String, BTreeMap<u32, u64>>,
    /// SF -> (line, block, branch) -> taken.
    branches: BTreeMap<String, BTreeMap<(u32, u32, u32), u64>>,
}

impl LcovTotals {
    fn parse(text: &str) -> LcovTotals {
        let mut t = LcovTotals::default();
        let mut sf = String::new();
        for l in text.lines() {
            if let Some(f) = l.strip_prefix("SF:") {
                sf = f.to_string();
                t.lines.entry(sf.clone()).or_default();
                t.branches.entry(sf.clone()).or_default();
            } else if let Some(d) = l.strip_prefix("DA:") {
                let (line, hits) = d.split_once(',').unwrap();
                *t.lines
                    .get_mut(&sf)
                    .unwrap()
                    .entry(line.parse().unwrap())
                    .or_default() += hits.parse::<u64>().unwrap();
            } else if let Some(b) = l.strip_prefix("BRDA:") {
                let f: Vec<&str> = b.split(',').collect();
                let key = (
                    f[0].parse().unwrap(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                );
                *t.branches.get_mut(&sf).unwrap().entry(key).or_default() +=
                    f[3].parse::<u64>().unwrap_or(0);
            }
        }
        t
    }

    /// (LF, LH, BRF, BRH) over every file.
    fn sums(&self) -> [usize; 4] {
        fn all<K>(m: &BTreeMap<String, BTreeMap<K, u64>>) -> (usize, usize) {
            m.values().fold((0, 0), |(n, hit), f| {
                (n + f.len(), hit + f.values().filter(|&&c| c > 0).count())
            })
        }
        let (lf, lh) = all(&self.lines);
        let (brf, brh) = all(&self.branches);
        [lf, lh, brf, brh]
    }
}

/// `--per-test` LCOV: the TN: sections (one per test and `outside_tests`) add up to the whole
/// run, classes that never ran included (with zero counts, in `outside_tests`): the same SF
/// files, line and branch counts as the LCOV without `--per-test` (a class with no data was
/// left out, so genhtml showed untested files as absent and the coverage as higher).
#[test]
fn per_test_lcov_keeps_the_classes_that_never_ran() {
    use bci_rewriter::coverage::data::Session;
    let r = setup("pertest-unrun", &["CovBasics"]);
    // CovFlow is compiled next to CovBasics and never runs
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-d")
        .arg(&r.orig)
        .arg(r.src_dir.join("CovFlow.java"))
        .status()
        .unwrap();
    assert!(st.success(), "javac CovFlow");
    // Per-test data: the run's counts once inside a test and once outside any (two sessions).
    let run = CovData::parse(&std::fs::read(&r.data).unwrap()).unwrap();
    let mut d = CovData::default();
    d.add_all(&run).unwrap();
    let mut second = run.clone();
    second.sessions = vec![Session {
        id: "host-2-2".into(),
        ..run.sessions[0].clone()
    }];
    d.add_all(&second).unwrap();
    for ((name, hash), counts) in &run.classes {
        d.add_test_class("CovTest#t()", name, *hash, counts)
            .unwrap();
    }
    let data = r.work.join("pertest.cov");
    std::fs::write(&data, d.to_bytes()).unwrap();
    let (whole, per_test) = (r.work.join("whole.info"), r.work.join("pertest.info"));
    let report = |extra: &[&std::ffi::OsStr]| {
        let mut args = vec![
            os("report"),
            os(&data),
            os("--classes"),
            os(&r.orig),
            os("--sources"),
            os(&r.src_dir),
        ];
        args.extend(extra);
        bci(&args);
    };
    report(&[os("--lcov"), os(&whole)]);
    report(&[os("--per-test"), os("--lcov"), os(&per_test)]);
    let whole = LcovTotals::parse(&std::fs::read_to_string(&whole).unwrap());
    let per_test_text = std::fs::read_to_string(&per_test).unwrap();
    let merged = LcovTotals::parse(&per_test_text);
    let flow = r.src_dir.join("CovFlow.java").display().to_string();
    assert!(
        whole.lines.get(&flow).is_some_and(|l| !l.is_empty()),
        "{whole:?}"
    );
    assert_eq!(
        merged.lines.keys().collect::<Vec<_>>(),
        whole.lines.keys().collect::<Vec<_>>(),
        "SF files"
    );
    assert_eq!(merged.sums(), whole.sums(), "LF, LH, BRF, BRH");
    assert_eq!(merged, whole, "per line and branch outcome");
    // the class that never ran is in the section for code outside the tests
    let outside = &per_test_text[per_test_text.find("TN:outside_tests").unwrap()..];
    assert!(outside.contains(&format!("SF:{flow}\n")), "{per_test_text}");
}

/// The records of each `TN:` section of a tracefile of one source file: (DA line -> hits,
/// BRDA (line, block, branch) -> taken, FNDA method -> entries).
type Sections = BTreeMap<
    String,
    (
        BTreeMap<u32, u64>,
        BTreeMap<(u32, u32, u32), u64>,
        BTreeMap<String, u64>,
    ),
>;

fn lcov_sections(text: &str) -> Sections {
    let mut out = Sections::new();
    let mut tn = String::new();
    for l in text.lines() {
        if let Some(t) = l.strip_prefix("TN:") {
            tn = t.to_string();
        }
        let (da, brda, fnda) = out.entry(tn.clone()).or_default();
        if let Some(d) = l.strip_prefix("DA:") {
            let (line, hits) = d.split_once(',').unwrap();
            *da.entry(line.parse().unwrap()).or_default() += hits.parse::<u64>().unwrap();
        } else if let Some(b) = l.strip_prefix("BRDA:") {
            let f: Vec<&str> = b.split(',').collect();
            let key = (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            );
            *brda.entry(key).or_default() += f[3].parse::<u64>().unwrap_or(0);
        } else if let Some(f) = l.strip_prefix("FNDA:") {
            let (n, name) = f.split_once(',').unwrap();
            *fnda.entry(name.to_string()).or_default() += n.parse::<u64>().unwrap();
        }
    }
    out
}

/// A program that brackets its own tests (cli/tests/fixtures/pertest/Harness.java: `main`
/// calls `Cov.begin`/`Cov.end` around calls to `a` and `b`): main's call spans every window,
/// and its counters in each window break flow conservation. main's counts are not split: they
/// are outside the tests, whole, in every per-test output (LCOV, console, HTML), and the `TN:`
/// sections add up to the whole run for every DA, BRDA and FNDA record; `a` and `b`, called
/// whole inside a window, keep their exact counts there. Before: main's lines were derived
/// from clamped counters, `DA` of the loop line 3 in testA plus 1 outside for a line that ran
/// once, and `b(1); b(2);` (run in testB) listed under testA only.
#[test]
fn per_test_a_method_whose_call_spans_tests_is_outside_them_whole() {
    let work = fresh_work("pertest-harness");
    let (orig, inst) = (work.join("orig"), work.join("inst"));
    let rt = work.join("bci-runtime.jar");
    bci(&[os("runtime-jar"), os(&rt)]);
    let src = common::workspace().join("cli/tests/fixtures/pertest");
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-cp")
        .arg(&rt)
        .arg("-d")
        .arg(&orig)
        .arg(src.join("Harness.java"))
        .status()
        .unwrap();
    assert!(st.success(), "javac Harness.java");
    bci(&[os("instrument"), os("--coverage"), os(&orig), os(&inst)]);
    let data = work.join("run.cov");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg("-Xverify:all")
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("Harness")
        .output()
        .unwrap();
    assert!(
        o.status.success() && text(&o).contains("ok"),
        "{}",
        text(&o)
    );
    let (whole, per_test, html) = (
        work.join("whole.info"),
        work.join("pertest.info"),
        work.join("html"),
    );
    let report = |extra: &[&std::ffi::OsStr]| {
        let mut args = vec![
            os("report"),
            os(&data),
            os("--classes"),
            os(&orig),
            os("--sources"),
            os(&src),
        ];
        args.extend(extra);
        bci(&args)
    };
    report(&[os("--lcov"), os(&whole)]);
    let o = report(&[
        os("--per-test"),
        os("--lcov"),
        os(&per_test),
        os("--html"),
        os(&html),
    ]);
    let console = String::from_utf8_lossy(&o.stdout).into_owned();
    let whole = lcov_sections(&std::fs::read_to_string(&whole).unwrap());
    let whole = whole.values().next().unwrap();
    let per_test_text = std::fs::read_to_string(&per_test).unwrap();
    let sections = lcov_sections(&per_test_text);
    assert_eq!(
        sections.keys().collect::<Vec<_>>(),
        ["Harness_testA__", "Harness_testB__", "outside_tests"],
        "{per_test_text}"
    );
    // (1) the sections add up to the whole run, record by record (no line of this program
    // has code in pieces that ran without its first piece)
    let mut sum = whole.clone();
    sum.0.values_mut().for_each(|v| *v = 0);
    sum.1.values_mut().for_each(|v| *v = 0);
    sum.2.values_mut().for_each(|v| *v = 0);
    for (da, brda, fnda) in sections.values() {
        for (k, v) in da {
            *sum.0.get_mut(k).expect("a DA line of the whole run") += v;
        }
        for (k, v) in brda {
            *sum.1.get_mut(k).expect("a BRDA of the whole run") += v;
        }
        for (k, v) in fnda {
            *sum.2.get_mut(k).expect("an FNDA of the whole run") += v;
        }
    }
    assert_eq!(
        &sum, whole,
        "sections summed, then the whole run\n{per_test_text}"
    );
    // (2), (3): each marked line under exactly the sections its comment names, with its counts
    let text_src = std::fs::read_to_string(src.join("Harness.java")).unwrap();
    let page = std::fs::read_to_string(html.join("default/Harness.java.html")).unwrap();
    let mut checked = 0;
    for (i, line) in text_src.lines().enumerate() {
        let nr = (i + 1) as u32;
        let want: BTreeMap<&str, u64> = if line.ends_with("// main") {
            [("outside_tests", 1)].into()
        } else if line.ends_with("// a: 3 in testA, 1 outside") {
            [("Harness_testA__", 3), ("outside_tests", 1)].into()
        } else if let Some(p) = line.find("// b: ") {
            [("Harness_testB__", line[p + 6..p + 7].parse().unwrap())].into()
        } else {
            continue;
        };
        for (tn, (da, _, _)) in &sections {
            let w = want.get(tn.as_str()).copied().unwrap_or(0);
            assert_eq!(da.get(&nr), Some(&w), "line {nr} in {tn}\n{per_test_text}");
        }
        let (listed, tip) = if line.ends_with("// main") {
            ("(outside tests)", "Run outside tests only".to_string())
        } else if line.contains("// a:") {
            (
                "Harness#testA() (outside tests)",
                "Run by 1 test(s): Harness#testA(); and outside tests".to_string(),
            )
        } else {
            (
                "Harness#testB()",
                "Run by 1 test(s): Harness#testB()".to_string(),
            )
        };
        assert!(
            console.contains(&format!("\nHarness.java:{nr}\t{listed}\n")),
            "line {nr}: want {listed} in\n{console}"
        );
        let row = &page[page.find(&format!("<tr id=\"L{nr}\"")).unwrap()..];
        let row = &row[..row.find('>').unwrap()];
        assert!(
            row.contains(&format!("title=\"{tip}\"")),
            "line {nr}: {row}"
        );
        checked += 1;
    }
    assert_eq!(checked, 12);
    // entries: main's one call outside, b's two calls in testB
    let fnda = |tn: &str, m: &str| sections[tn].2[&format!("Harness.{m}")];
    assert_eq!(fnda("outside_tests", "main([Ljava/lang/String;)V"), 1);
    assert_eq!(fnda("Harness_testA__", "main([Ljava/lang/String;)V"), 0);
    assert_eq!(fnda("Harness_testB__", "b(I)I"), 2);
    let _ = std::fs::remove_dir_all(&work);
}

/// `--per-test` LCOV: each test has a `TN:` name of its own, though names are made of letters,
/// digits and `_` only: a test whose name so made is an earlier test's (or `outside_tests`)
/// gets `_2`, `_3`, …, the first free, in the order of the tests' full names. Before:
/// `a.T#x$y()` and `a.T#x_y()` were both `TN:a_T_x_y__`, and genhtml merged the two tests.
#[test]
fn per_test_lcov_names_each_test_apart() {
    let r = setup("pertest-tn", &["CovBasics"]);
    let run = CovData::parse(&std::fs::read(&r.data).unwrap()).unwrap();
    let mut d = CovData::default();
    d.add_all(&run).unwrap();
    let tests = [
        "com.acme.ColTest#x$y()",
        "com.acme.ColTest#x_y()",
        "com.acme.ColTest#x_y()_2",
        "outside tests",
    ];
    for t in tests {
        for ((name, hash), counts) in &run.classes {
            let third: Vec<u64> = counts.iter().map(|c| c / 3).collect();
            d.add_test_class(t, name, *hash, &third).unwrap();
        }
    }
    let data = r.work.join("pertest.cov");
    std::fs::write(&data, d.to_bytes()).unwrap();
    let info = r.work.join("pertest.info");
    bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&r.orig),
        os("--sources"),
        os(&r.src_dir),
        os("--per-test"),
        os("--lcov"),
        os(&info),
    ]);
    let lcov = std::fs::read_to_string(&info).unwrap();
    let sections: Vec<&str> = lcov.lines().filter_map(|l| l.strip_prefix("TN:")).collect();
    assert_eq!(
        sections,
        [
            "com_acme_ColTest_x_y__",
            "com_acme_ColTest_x_y___2",
            "com_acme_ColTest_x_y___2_2",
            "outside_tests_2",
            "outside_tests"
        ]
    );
    let o = Command::new("genhtml")
        .arg("-o")
        .arg(r.work.join("genhtml"))
        .arg(&info)
        .output()
        .expect("genhtml (Debian lcov)");
    assert!(o.status.success(), "{}", text(&o));
}

/// A `--sources` root that is not a directory is named once on stderr (only each HTML page
/// said so, as "not found under the --sources roots"); the report is still made, and a root
/// that exists next to it is used.
#[test]
fn a_missing_source_root_is_named_once_on_stderr() {
    let r = setup("sources-missing", &["CovBasics"]);
    let missing = r.work.join("no/such/src");
    let file = r.work.join("bci-runtime.jar");
    let (html, info, cob) = (
        r.work.join("html"),
        r.work.join("c.info"),
        r.work.join("cob.xml"),
    );
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--sources"),
        os(&missing),
        os("--sources"),
        os(&r.src_dir),
        os("--sources"),
        os(&file),
        os("--html"),
        os(&html),
        os("--lcov"),
        os(&info),
        os("--cobertura"),
        os(&cob),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        err,
        format!(
            "bci: warning: --sources {}: no such directory (no source is read from it)\n\
             bci: warning: --sources {}: not a directory (no source is read from it)\n",
            missing.display(),
            file.display()
        )
    );
    // the existing root is used: the source page has the text, LCOV names the file in it
    let page = std::fs::read_to_string(html.join("default/CovBasics.java.html")).unwrap();
    assert!(
        !page.contains("not found under the --sources roots"),
        "{page}"
    );
    let lcov = std::fs::read_to_string(&info).unwrap();
    assert!(
        lcov.contains(&format!(
            "SF:{}\n",
            r.src_dir.join("CovBasics.java").display()
        )),
        "{lcov}"
    );
    // a missing root alone: the same one line, whatever the number of pages, and when it is
    // given twice (it was named twice)
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--sources"),
        os(&missing),
        os("--html"),
        os(&html),
        os("--sources"),
        os(&missing),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        err,
        format!(
            "bci: warning: --sources {}: no such directory (no source is read from it)\n",
            missing.display()
        )
    );
}

/// Sources not laid out by package (usual in Scala and Kotlin projects: src/Calc.java declares
/// `package com.acme`): the one file of that name under the --sources roots is used (HTML text,
/// LCOV `SF` the root joined with where it is, Cobertura's filename relative to the root).
/// Before, every page said "not found", LCOV got `SF:com/acme/Calc.java` (genhtml could not
/// read it) and nothing was said (found by the languages hunt). Two files of the name, or none:
/// not found, named in one note on stderr (exit 0).
#[test]
fn sources_not_laid_out_by_package_are_found_by_name() {
    let work = fresh_work("sources-by-name");
    let classes = work.join("classes");
    let text = "package com.acme;\npublic class Calc {\n  int f() { return 1; }\n}\n";
    javac_into(&work, &classes, &[("Calc.java", text)]);
    let data = work.join("run.cov");
    let file = classes.join("com/acme/Calc.class");
    std::fs::write(&data, loaded_data("host-1-1", &[&file]).to_bytes()).unwrap();
    let src = work.join("src");
    let report = |roots: &[&Path]| {
        let (html, info, cob) = (work.join("html"), work.join("c.info"), work.join("c.xml"));
        let mut args = vec![os("report"), os(&data), os("--classes"), os(&classes)];
        for r in roots {
            args.extend([os("--sources"), os(*r)]);
        }
        args.extend([
            os("--html"),
            os(&html),
            os("--lcov"),
            os(&info),
            os("--cobertura"),
            os(&cob),
        ]);
        let (code, out, err) = run_bci(&args);
        assert_eq!(code, Some(0), "{out}{err}");
        let page = std::fs::read_to_string(html.join("com.acme/Calc.java.html")).unwrap();
        let sf: Vec<String> = (std::fs::read_to_string(&info).unwrap().lines())
            .filter_map(|l| l.strip_prefix("SF:").map(String::from))
            .collect();
        let cob = std::fs::read_to_string(&cob).unwrap();
        let names: Vec<String> = tags(&cob, "class")
            .iter()
            .filter_map(|t| attr(t, "filename").map(String::from))
            .collect();
        (
            err,
            page.contains("not found under the --sources roots"),
            sf,
            names,
        )
    };
    // the one Calc.java, under the root itself, and a root given twice (one file)
    for roots in [vec![src.as_path()], vec![src.as_path(), src.as_path()]] {
        assert_eq!(
            report(&roots),
            (
                String::new(),
                false,
                vec![src.join("Calc.java").display().to_string()],
                vec!["Calc.java".to_string()]
            )
        );
    }
    // a second Calc.java in another root: which one is meant cannot be told
    let other = work.join("other");
    std::fs::create_dir_all(other.join("x")).unwrap();
    std::fs::write(other.join("x/Calc.java"), text).unwrap();
    assert_eq!(
        report(&[&src, &other]),
        (
            "bci: note: 1 source file not found under the --sources roots (neither at its \
             package path nor as the one file of its name): HTML source pages without text, \
             LCOV and Cobertura name it by package path: com/acme/Calc.java\n"
                .to_string(),
            true,
            vec!["com/acme/Calc.java".to_string()],
            vec!["com/acme/Calc.java".to_string()]
        )
    );
    // at its package path it is found there, whatever files of its name are elsewhere
    std::fs::create_dir_all(other.join("com/acme")).unwrap();
    std::fs::write(other.join("com/acme/Calc.java"), text).unwrap();
    assert_eq!(
        report(&[&src, &other]),
        (
            String::new(),
            false,
            vec![other.join("com/acme/Calc.java").display().to_string()],
            vec!["com/acme/Calc.java".to_string()]
        )
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// The console summary's headings start where their columns do: each counter's cell (its
/// percentage, then covered/total) begins under its heading (the headings were right-aligned
/// over the counts: "package  instructions" over "com.acme 88.4%").
#[test]
fn console_headings_line_up_with_their_columns() {
    let r = setup("console-columns", &["CovBasics"]);
    let (code, out, err) = run_bci(&[os("report"), os(&r.data), os("--classes"), os(&r.orig)]);
    assert_eq!(code, Some(0), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("package "))
        .unwrap_or_else(|| panic!("no heading: {out}"));
    let columns: Vec<(usize, &str)> = ["instructions", "branches", "lines", "methods", "classes"]
        .iter()
        .map(|h| {
            (
                lines[head].find(h).unwrap_or_else(|| panic!("{h}: {out}")),
                *h,
            )
        })
        .collect();
    let rows: Vec<&str> = lines[head + 1..]
        .iter()
        .copied()
        .take_while(|l| l.contains('('))
        .collect();
    assert!(rows.iter().any(|l| l.starts_with("total ")), "{out}");
    for row in rows {
        for &(col, h) in &columns {
            // two spaces before the cell; the percentage (right-aligned in 6) or "-", then
            // (covered/total)
            let cell = row.get(col..).unwrap_or("");
            let pct = cell.get(..6).unwrap_or("").trim();
            assert!(
                row.get(col - 2..col) == Some("  ")
                    && (pct.ends_with('%') || pct == "-")
                    && cell[6..].trim_start().starts_with('('),
                "{h} at column {col} in {row:?}:\n{out}"
            );
        }
    }
}

/// Every output path of `bci report` and `bci merge` gets its missing parent directories, as
/// `--xml` and `--html` always did (`-o` of report and of merge failed: No such file or
/// directory).
#[test]
fn report_and_merge_outputs_get_their_missing_directories() {
    let r = setup("out-dirs", &["CovBasics"]);
    let new = r.work.join("new");
    assert!(!new.exists());
    let console = bci(&[os("report"), os(&r.data), os("--classes"), os(&r.orig)]);
    let files: Vec<(&str, PathBuf)> = [
        ("-o", "summary.txt"),
        ("--xml", "jacoco.xml"),
        ("--cobertura", "cobertura.xml"),
        ("--lcov", "coverage.info"),
        ("--csv", "coverage.csv"),
        ("--html", "html"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (opt, f))| (*opt, new.join(format!("report{i}/deeper")).join(f)))
    .collect();
    let mut args = vec![os("report"), os(&r.data), os("--classes"), os(&r.orig)];
    for (opt, f) in &files {
        args.extend([os(*opt), os(f)]);
    }
    let (report_code, _, report_err) = run_bci(&args);
    let merged = new.join("merged/deeper/all.cov");
    let (merge_code, _, merge_err) = run_bci(&[os("merge"), os(&r.data), os("-o"), os(&merged)]);
    assert_eq!(
        (report_code, merge_code),
        (Some(0), Some(0)),
        "report: {report_err}\nmerge: {merge_err}"
    );
    assert_eq!(
        std::fs::read_to_string(&files[0].1).unwrap(),
        String::from_utf8_lossy(&console.stdout),
        "-o holds the console summary"
    );
    for (opt, f) in &files[1..5] {
        let t = std::fs::read_to_string(f).unwrap_or_default();
        assert!(t.contains("CovBasics"), "{opt} {}: {t}", f.display());
    }
    assert!(files[5].1.join("index.html").is_file());
    // merging one data file gives its data
    assert_eq!(
        CovData::parse(&std::fs::read(&merged).unwrap()).unwrap(),
        CovData::parse(&std::fs::read(&r.data).unwrap()).unwrap()
    );
}

/// `bci merge a.cov b.cov -o a.cov` keeps a.cov's permissions (the merged data is written to a
/// temporary file renamed over it, which had the default mode: a file kept private, 0600,
/// became readable by all, 0644).
#[test]
fn merge_into_an_input_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let work = fresh_work("merge-mode");
    let (a, b) = (work.join("a.cov"), work.join("b.cov"));
    std::fs::write(&a, one_class_run("host-20-1", 1).to_bytes()).unwrap();
    std::fs::write(&b, one_class_run("host-21-1", 1).to_bytes()).unwrap();
    for mode in [0o600, 0o664] {
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(mode)).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_bci"))
            .args(["merge", "a.cov", "b.cov", "-o", "a.cov"])
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let got = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "a.cov's mode after the merge: {got:o}");
        std::fs::write(&a, one_class_run("host-20-1", 1).to_bytes()).unwrap();
    }
}

/// `bci merge a.cov b.cov -o a.cov` replaces a.cov only once the merged data is written whole:
/// a write that fails partway (here the file size limit of `ulimit -f`, as a full disk would)
/// leaves the input as it was and no temporary file (before: a.cov was truncated at the limit).
#[test]
fn merge_into_an_input_that_cannot_be_written_whole_keeps_it() {
    let work = fresh_work("merge-partial");
    let data = |id: &str| {
        let mut d = one_class_run(id, 1);
        d.add_class("a/C", 9, &vec![3; 20_000]).unwrap();
        d
    };
    let (a, b) = (work.join("a.cov"), work.join("b.cov"));
    std::fs::write(&a, data("host-10-1").to_bytes()).unwrap();
    std::fs::write(&b, data("host-11-1").to_bytes()).unwrap();
    let before = std::fs::read(&a).unwrap();
    assert!(before.len() > 32 << 10, "{} bytes", before.len());
    // SIGXFSZ ignored: the write past the limit fails with EFBIG instead of killing bci
    let o = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 16; exec \"$0\" merge a.cov b.cov -o a.cov")
        .arg(env!("CARGO_BIN_EXE_bci"))
        .current_dir(&work)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("a.cov"), "{err}");
    assert!(std::fs::read(&a).unwrap() == before, "a.cov changed: {err}");
    let left: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // without the limit the merge goes through, into the input
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .args(["merge", "a.cov", "b.cov", "-o", "a.cov"])
        .current_dir(&work)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let merged = CovData::parse(&std::fs::read(&a).unwrap()).unwrap();
    assert_eq!(merged.sessions.len(), 2);
}

/// Every file under `d` (hidden ones included) with its bytes, by path relative to `d`.
fn tree(d: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walk(d)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p.strip_prefix(d).unwrap().to_path_buf(), bytes)
        })
        .collect()
}

/// `bci report --html DIR` writes the report whole or not at all: a page that cannot be
/// written (here: past the file size limit of `ulimit -f`, 8 KB, as on a full disk: the class
/// page, after the index pages, the style sheet and the script) exits 2 naming the page and
/// leaves DIR as it was: absent (with the directories made on the way to it), or the previous
/// report unchanged, with no temporary file. Before: the pages written until then stayed (a
/// report without its class and source pages, dead links, and a page cut at the limit).
#[test]
fn html_report_that_fails_partway_leaves_the_directory_as_it_was() {
    let r = setup("html-partial", &["CovBasics"]);
    let (out, html) = (r.work.join("out"), r.work.join("out/deeper/html"));
    let report = |title: &str, limited: bool| -> (Option<i32>, String) {
        let mut c = Command::new("sh");
        c.arg("-c");
        // SIGXFSZ ignored: the write past the limit fails with EFBIG instead of killing bci
        let limit = if limited { "ulimit -f 16; " } else { "" };
        c.arg(format!("trap '' XFSZ; {limit}exec \"$0\" \"$@\""))
            .arg(BCI)
            .args([os("report"), os(&r.data), os("--classes"), os(&r.orig)])
            .args([os("--sources"), os(&r.src_dir), os("--title"), os(title)])
            .args([os("--html"), os(&html)]);
        let o = c.output().unwrap();
        (o.status.code(), text(&o))
    };
    let refused = |code: Option<i32>, err: &str| {
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "bci: --html {h}: {h}/default/CovBasics.html: File too large",
                h = html.display()
            )),
            "{err}"
        );
        assert!(
            err.contains(&format!("{} is as it was", html.display())),
            "{err}"
        );
    };
    // no report there yet: none made, nor the directories on the way to it
    let (code, err) = report("new", true);
    assert!(!out.exists(), "{err}{:?}", walk(&out));
    refused(code, &err);
    // a previous report: left whole, byte for byte, nothing added
    let (code, err) = report("old", false);
    assert_eq!(code, Some(0), "{err}");
    let before = tree(&html);
    assert!(before.len() >= 6, "{:?}", before.keys());
    assert!(before[Path::new("default/CovBasics.java.html")].len() > 16 << 10);
    let (code, err) = report("new", true);
    let after = tree(&html);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "{err}"
    );
    assert!(after == before, "the previous report changed: {err}");
    refused(code, &err);
    assert_eq!(
        std::fs::read_dir(html.parent().unwrap()).unwrap().count(),
        1,
        "files beside the report"
    );
    // without the limit the new report replaces it, no file of the attempts left
    let (code, err) = report("new", false);
    assert_eq!(code, Some(0), "{err}");
    let now = tree(&html);
    assert_eq!(
        now.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let index = String::from_utf8_lossy(&now[Path::new("index.html")]).into_owned();
    assert!(index.contains("<title>new</title>"), "{index}");
}

/// A report file (`--xml` here; `--lcov`, `--csv`, `--cobertura`, `-o` alike) whose write
/// fails partway leaves the previous file whole: each is written to a temporary file renamed
/// over it (before: truncated at the failure).
#[test]
fn report_file_that_fails_partway_leaves_the_previous_one() {
    let r = setup("xml-partial", &["CovBasics"]);
    let xml = r.work.join("out/report.xml");
    let report = |title: &str, limited: bool| -> (Option<i32>, String) {
        let mut c = Command::new("sh");
        c.arg("-c");
        // SIGXFSZ ignored: the write past the limit fails with EFBIG instead of killing bci
        let limit = if limited { "ulimit -f 8; " } else { "" };
        c.arg(format!("trap '' XFSZ; {limit}exec \"$0\" \"$@\""))
            .arg(BCI)
            .args([os("report"), os(&r.data), os("--classes"), os(&r.orig)])
            .args([os("--title"), os(title), os("--xml"), os(&xml)]);
        let o = c.output().unwrap();
        (o.status.code(), text(&o))
    };
    let (code, err) = report("old", false);
    assert_eq!(code, Some(0), "{err}");
    let before = std::fs::read(&xml).unwrap();
    assert!(
        before.len() > 8 << 10,
        "{} bytes: too small for the test",
        before.len()
    );
    let (code, err) = report("new", true);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert!(
        std::fs::read(&xml).unwrap() == before,
        "the previous report changed: {err}"
    );
    let beside: Vec<_> = std::fs::read_dir(xml.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside.len(), 1, "files beside the report: {beside:?}");
}

/// An output that is a symbolic link is written through it: the link stays and its final
/// target gets the report (replaced atomically in the target's directory, as any report file),
/// a link to nothing yet included, for every output (`--xml`, `--cobertura`, `--lcov`, `--csv`,
/// `-o`, an HTML page, `bci merge -o`). An existing output that is not a regular file (a fifo,
/// a pipe through `/dev/fd/N`) is opened and written as it is. Before: each link to nothing was
/// replaced by a regular file (the target never written), a fifo was replaced by a regular
/// file, and `/dev/fd/N` failed (a temporary file in /proc/self/fd).
#[test]
fn outputs_are_written_through_links_and_into_fifos_and_pipes() {
    use std::os::unix::fs::{symlink, FileTypeExt};
    let r = setup("through-links", &["CovBasics"]);
    let (lt, real) = (r.work.join("lt"), r.work.join("real"));
    std::fs::create_dir_all(&lt).unwrap();
    let outs = [
        ("--xml", "xml"),
        ("--cobertura", "cobertura"),
        ("--lcov", "lcov"),
        ("--csv", "csv"),
        ("-o", "o"),
    ];
    for (_, n) in outs {
        // relative, to a directory not there yet: taken from the link's directory
        symlink(format!("../real/{n}.out"), lt.join(format!("{n}.lnk"))).unwrap();
    }
    let links: Vec<PathBuf> = outs
        .iter()
        .map(|(_, n)| lt.join(format!("{n}.lnk")))
        .collect();
    let report = |title: &str| {
        let mut args = vec![os("report"), os(&r.data), os("--classes"), os(&r.orig)];
        args.extend([os("--title"), os(title)]);
        for ((opt, _), l) in outs.iter().zip(&links) {
            args.extend([os(*opt), os(l)]);
        }
        bci(&args)
    };
    for title in ["first", "second"] {
        report(title);
        for (opt, n) in outs {
            let link = lt.join(format!("{n}.lnk"));
            assert!(link.is_symlink(), "{opt}: the link was replaced");
            let t = std::fs::read_to_string(real.join(format!("{n}.out"))).unwrap();
            // (the console summary, -o, names packages and counts)
            let want = if opt == "-o" {
                "(default)"
            } else {
                "CovBasics"
            };
            assert!(t.contains(want), "{opt}: {t}");
            if opt == "--xml" {
                assert!(t.contains(title), "{opt}: not the {title} report");
            }
        }
    }
    let names: Vec<String> = std::fs::read_dir(&real)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".out"))
        .collect();
    assert!(names.is_empty(), "left beside the targets: {names:?}");
    // bci merge -o a link to nothing
    let m = lt.join("m.lnk");
    symlink(real.join("sub/m.cov"), &m).unwrap();
    bci(&[os("merge"), os(&r.data), os("-o"), os(&m)]);
    assert!(m.is_symlink());
    assert_eq!(
        std::fs::read(real.join("sub/m.cov")).unwrap(),
        std::fs::read(&r.data).unwrap()
    );
    // an HTML page that is a link: its target replaced
    let html = r.work.join("html");
    std::fs::create_dir_all(&html).unwrap();
    symlink("../real/index.html", html.join("index.html")).unwrap();
    bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--html"),
        os(&html),
    ]);
    assert!(html.join("index.html").is_symlink());
    let index = std::fs::read_to_string(real.join("index.html")).unwrap();
    assert!(index.contains("<html"), "{index}");
    // a link to an output given as well, and a link to an input: refused as before
    let (code, _, err) = run_bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--csv"),
        os(&lt.join("csv.lnk")),
        os("--lcov"),
        os(&real.join("csv.out")),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("are one file"), "{err}");
    let to_data = lt.join("data.lnk");
    symlink(&r.data, &to_data).unwrap();
    let (code, _, err) = run_bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--lcov"),
        os(&to_data),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is the data file"), "{err}");
    // a fifo is written, and stays a fifo; so is a link to one (its reader opened first,
    // not blocking: the report fits in the pipe's buffer)
    let fifo = r.work.join("fifo");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    symlink(&fifo, lt.join("fifo.lnk")).unwrap();
    for out in [fifo.clone(), lt.join("fifo.lnk")] {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(0o4000) // O_NONBLOCK
            .open(&fifo)
            .unwrap();
        bci(&[
            os("report"),
            os(&r.data),
            os("--classes"),
            os(&r.orig),
            os("--lcov"),
            os(&out),
        ]);
        let mut got = String::new();
        let _ = reader.read_to_string(&mut got);
        assert!(
            got.contains("SF:") && got.contains("end_of_record"),
            "{got}"
        );
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo(),
            "the fifo was replaced"
        );
    }
    // the pipe of the child's stdout through /dev/fd/1 (a shell's `>(…)` is /dev/fd/63)
    let o = bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--csv"),
        os("/dev/fd/1"),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("GROUP,PACKAGE,CLASS"), "{out}");
    // the console goes to stderr: the pipe holds the CSV alone
    assert!(!out.contains("class analysed"), "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("class analysed"), "{err}");
}

/// An output that is the process's stdout redirected to a file (a link to /proc/self/fd/1, as
/// `/dev/stdout` is) is written through stdout, at its offset, and the console goes to stderr:
/// the file holds exactly the report. Before: the path was reopened and written at offset 0,
/// and the console summary, written to stdout after it, overwrote the report's first bytes
/// (`bci report … --lcov /dev/stdout > f`, `bci merge … -o /dev/stdout > f`), exit 0.
#[test]
fn an_output_that_is_stdout_redirected_to_a_file_holds_the_report_alone() {
    let r = setup("stdout-file", &["CovBasics"]);
    let so = r.work.join("stdout.lnk");
    std::os::unix::fs::symlink("/proc/self/fd/1", &so).unwrap();
    let plain = r.work.join("plain.info");
    let (code, out, _) = run_bci(&[
        os("report"),
        os(&r.data),
        os("--classes"),
        os(&r.orig),
        os("--lcov"),
        os(&plain),
    ]);
    assert_eq!(code, Some(0));
    let lcov = std::fs::read_to_string(&plain).unwrap();
    assert!(lcov.starts_with("TN:"), "{lcov}");
    let run_into = |file: &Path, args: &[&std::ffi::OsStr]| {
        let o = Command::new(BCI)
            .args(args)
            .stdout(std::fs::File::create(file).unwrap())
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let sink = r.work.join("sink.info");
    let (code, err) = run_into(
        &sink,
        &[
            os("report"),
            os(&r.data),
            os("--classes"),
            os(&r.orig),
            os("--lcov"),
            os(&so),
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&sink).unwrap(), lcov);
    assert_eq!(err, out, "the console summary, on stderr");
    // bci merge -o: the merged data alone, its "wrote" line on stderr
    let sink = r.work.join("sink.cov");
    let (code, err) = run_into(&sink, &[os("merge"), os(&r.data), os("-o"), os(&so)]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read(&sink).unwrap(),
        std::fs::read(&r.data).unwrap()
    );
    assert!(err.starts_with("bci: wrote "), "{err}");
}

/// Every output path is checked before any is written, and a bad one is named with its
/// option: a report with one output that cannot be made writes none (before: `--xml
/// nodir/sub/x.xml --lcov notadir/x.info` wrote the XML, then failed on the LCOV with
/// `notadir: a file, not a directory`).
#[test]
fn an_output_that_cannot_be_made_is_named_before_anything_is_written() {
    let r = setup("out-check", &["CovBasics"]);
    let notadir = r.work.join("notadir");
    std::fs::write(&notadir, "x").unwrap();
    let dir = r.work.join("out/html");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |extra: &[(&str, &str)]| {
        let mut c = Command::new(BCI);
        c.current_dir(&r.work)
            .args([os("report"), os(&r.data), os("--classes"), os(&r.orig)]);
        for (o, p) in extra {
            c.args([o, p]);
        }
        let o = c.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let cases: [(&[(&str, &str)], &str); 4] = [
        (
            &[("--xml", "nodir/sub/x.xml"), ("--lcov", "notadir/x.info")],
            "bci: --lcov notadir/x.info: notadir is a file, not a directory\n",
        ),
        (
            &[("--csv", "nodir/c.csv"), ("--lcov", "out/html")],
            "bci: --lcov out/html: is a directory\n",
        ),
        (
            &[("--xml", "nodir/x.xml"), ("--html", "notadir/h")],
            "bci: --html notadir/h: notadir is a file, not a directory\n",
        ),
        (
            &[("--html", "nodir/h"), ("-o", "notadir/sub/s.txt")],
            "bci: -o notadir/sub/s.txt: notadir is a file, not a directory\n",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(run(args), (Some(2), want.to_string()), "{args:?}");
        assert!(!r.work.join("nodir").exists(), "{args:?}: written");
    }
}

/// Dup.class from cli/tests/fixtures/asm/GenDup.java (ASM, Debian libasm-java) written into
/// `out`; `mode` "samepc" adds a second LineNumberTable entry for pc 0.
fn gen_dup(work: &Path, out: &Path, mode: &str) {
    asm_gen(work, "GenDup", out, mode);
}

/// Runs the ASM generator cli/tests/fixtures/asm/`generator`.java with `out` and `mode`.
fn asm_gen(work: &Path, generator: &str, out: &Path, mode: &str) {
    let tools = work.join("gen");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::create_dir_all(out).unwrap();
    let asm = "/usr/share/java/asm.jar";
    let src = common::workspace().join(format!("cli/tests/fixtures/asm/{generator}.java"));
    let st = Command::new(common::java_home().join("bin/javac"))
        .args(["-cp", asm, "-d"])
        .arg(&tools)
        .arg(src)
        .status()
        .unwrap();
    assert!(st.success(), "javac GenDup");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg("-cp")
        .arg(format!("{asm}:{}", tools.display()))
        .arg(generator)
        .arg(out)
        .arg(mode)
        .output()
        .unwrap();
    assert!(o.status.success(), "{generator}: {}", text(&o));
}

/// The classes `orig` (Dup) instrumented offline, run once per `(data file, arguments)`.
fn run_dup(work: &Path, orig: &Path, runs: &[(&Path, &[&str])]) {
    let inst = work.join("inst");
    bci(&[os("instrument"), os("--coverage"), os(orig), os(&inst)]);
    let rt = work.join("bci-runtime.jar");
    bci(&[os("runtime-jar"), os(&rt)]);
    for (data, args) in runs {
        let o = Command::new(common::java_home().join("bin/java"))
            .arg(format!("-Dbci.covfile={}", data.display()))
            .arg("-cp")
            .arg(format!("{}:{}", inst.display(), rt.display()))
            .arg("Dup")
            .args(*args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
}

/// `line: hits` of the `DA` records of an LCOV file.
fn lcov_da(info: &Path) -> BTreeMap<u32, u64> {
    std::fs::read_to_string(info)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("DA:"))
        .map(|l| {
            let (n, h) = l.split_once(',').unwrap();
            (n.parse().unwrap(), h.parse().unwrap())
        })
        .collect()
}

/// A line whose code is in several pieces (scalac's pattern matches: line 79 at pc 5, 15 and
/// 22, lines 80-82 between them) counts the runs of its first instruction in pc order, and when
/// that never ran though a later piece did, the runs of its most-run instruction: a line that
/// ran is never written as 0 (issue 10: "a line that ran must never be reported missed"). The
/// price: such a line's count in a report of merged data is not the sum of the runs' (run a
/// ran the first piece 3 times, run b only a later piece once: 3, 1, merged 3); every other
/// line adds up.
#[test]
fn a_line_in_pieces_that_ran_is_never_written_as_zero() {
    let work = fresh_work("line-pieces");
    let orig = work.join("classes");
    gen_dup(&work, &orig, "split");
    let (a, b, ab) = (work.join("a.cov"), work.join("b.cov"), work.join("ab.cov"));
    run_dup(&work, &orig, &[(&a, &["1", "1", "1"]), (&b, &["2"])]);
    bci(&[os("merge"), os(&a), os(&b), os("-o"), os(&ab)]);
    let da = |data: &Path| {
        let info = data.with_extension("info");
        bci(&[
            os("report"),
            os(data),
            os("--classes"),
            os(&orig),
            os("--lcov"),
            os(&info),
        ]);
        lcov_da(&info)
    };
    let (la, lb, lab) = (da(&a), da(&b), da(&ab));
    assert_eq!((la[&79], lb[&79], lab[&79]), (3, 1, 3));
    for (l, n) in lab.iter().filter(|(l, _)| **l != 79) {
        assert_eq!(la[l] + lb[l], *n, "line {l}: {la:?} + {lb:?} != {lab:?}");
    }
    let bytes = std::fs::read(orig.join("Dup.class")).unwrap();
    let d = CovData::parse(&std::fs::read(&b).unwrap()).unwrap();
    let c = analyze(
        &bytes,
        d.counts("Dup", class_hash(&bytes)),
        Split::AfterCalls,
    )
    .unwrap();
    let l79 = &c.lines[&79];
    assert_eq!((l79.hits, l79.max_hits), (0, 1));
    assert_eq!(
        l79.status(),
        bci_rewriter::coverage::analysis::Status::PartlyCovered
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A Code attribute with two LineNumberTables (JVMS 4.7.12 allows several; ASM, so JaCoCo, reads
/// them all): the report gives every line of both, with the counts it gives when the entries
/// are in one table (before, only the first table was read: lines 81 and 82 were missing and
/// their code counted as line 79's).
#[test]
fn every_line_number_table_of_a_method_is_read() {
    let work = fresh_work("two-tables");
    let args: &[&str] = &["1", "2", "3", "3"];
    let lcov = |mode: &str| {
        let w = work.join(mode);
        let orig = w.join("classes");
        gen_dup(&w, &orig, mode);
        let data = w.join("run.cov");
        run_dup(&w, &orig, &[(&data, args)]);
        let info = w.join("run.info");
        bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(&orig),
            os("--lcov"),
            os(&info),
        ]);
        let text = std::fs::read_to_string(&info).unwrap();
        let records: Vec<String> = text
            .lines()
            .filter(|l| {
                ["DA:", "BRDA:", "FN:", "FNDA:", "LF:", "LH:"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(str::to_string)
            .collect();
        (lcov_da(&info), records)
    };
    let (one, one_records) = lcov("split");
    let (two, two_records) = lcov("twotables");
    assert!(one.contains_key(&81) && one.contains_key(&82), "{one:?}");
    assert_eq!(two, one);
    assert_eq!(two_records, one_records);
    let _ = std::fs::remove_dir_all(&work);
}

/// Two LineNumberTable entries for one pc (scalac: `line 80: 0`, then `line 79: 0`): the later
/// one gives the pc its line, as in JaCoCo (ASM visits a pc's entries in table order, and each
/// sets the current line), so the XML's `<line>` elements and the methods' first lines are
/// JaCoCo's own.
#[test]
fn two_line_numbers_for_one_pc_the_later_one_wins_as_in_jacoco() {
    if !jacoco_jar("org.jacoco.report.jar").exists() {
        eprintln!("skipped: /usr/share/java/org.jacoco.report.jar absent (apt-get install libjacoco-java)");
        return;
    }
    let work = fresh_work("same-pc-lines");
    let orig = work.join("classes");
    gen_dup(&work, &orig, "samepc");
    let args = ["1", "1", "3"];
    let data = work.join("run.cov");
    run_dup(&work, &orig, &[(&data, &args)]);
    let ours = work.join("bci.xml");
    bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&orig),
        os("--xml"),
        os(&ours),
    ]);
    let ours = std::fs::read_to_string(&ours).unwrap();
    let theirs = jacoco_xml_of(&work, &orig, &["Dup"], &args);
    let lines = jacoco_lines(&ours);
    assert!(
        lines.contains_key(&79) && !lines.contains_key(&80),
        "{lines:?}"
    );
    assert_eq!(
        lines,
        jacoco_lines(&theirs),
        "bci (left) and JaCoCo (right)"
    );
    assert_eq!(jacoco_methods(&ours), jacoco_methods(&theirs));
    let _ = std::fs::remove_dir_all(&work);
}

/// `%XX` escapes of a URL path decoded.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Names from class files that make bad file names (a SourceFile with `/`, Jython's
/// `compiler/__init__.py`; a package `..`; a class or SourceFile `index`, whose page would be
/// its package's index.html; a `%` and a space) are escaped into page names: the HTML report is
/// written whole (it failed on the subdirectory `compiler/` that was never made), nothing is
/// written outside its directory, the package index is not overwritten, and every link
/// between the pages leads to a page that exists.
#[test]
fn html_page_names_from_class_files_are_escaped() {
    let work = fresh_work("html-names");
    let orig = work.join("classes");
    asm_gen(&work, "GenOddNames", &orig, "");
    let mut d = CovData::default();
    d.sessions.push(bci_rewriter::coverage::data::Session {
        id: "host-1-1".into(),
        start_ms: 1,
        dump_ms: 2,
        jvm: "17".into(),
        command: "java Main".into(),
    });
    let data = work.join("run.cov");
    std::fs::write(&data, d.to_bytes()).unwrap();
    let html = work.join("out/html");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&orig),
        os("--html"),
        os(&html),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    // nothing outside the report's directory
    let outside: Vec<_> = walk(&work.join("out"))
        .into_iter()
        .filter(|p| !p.starts_with(&html))
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    let pages = walk(&html);
    for want in [
        "default/compiler%2F__init__.py.html",
        "default/compiler$py.html",
        "%2E%2E/..%2F..%2FEvil.java.html",
        "a/%69ndex.html",
        "a/index%2E.html",
        "a/50%25%20done.java.html",
    ] {
        assert!(pages.contains(&html.join(want)), "{want}: {pages:?}");
    }
    let index = std::fs::read_to_string(html.join("a/index.html")).unwrap();
    assert!(
        index.contains("Source file"),
        "a/index.html overwritten: {index}"
    );
    // every link leads to a page
    let mut links = 0;
    for p in pages
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
    {
        let text = std::fs::read_to_string(p).unwrap();
        for part in text.split("href=\"").skip(1) {
            let h = &part[..part.find('"').unwrap()];
            let h = h.split('#').next().unwrap().replace("&amp;", "&");
            let target = p.parent().unwrap().join(percent_decode(&h));
            assert!(target.is_file(), "{}: link {h} to no page", p.display());
            links += 1;
        }
    }
    assert!(links > 20, "{links} links");
    let _ = std::fs::remove_dir_all(&work);
}

/// Classes without line numbers (javac -g:none, ProGuard output) have nothing to show per line:
/// LCOV leaves them out (a record without `DA` lines would have an invented `SF:` and `FN:0`
/// entries, and genhtml drops it, or refuses the file when every record is such) and one note
/// on stderr names them; the other reports and the console still count them. genhtml reads the
/// LCOV with no warning.
#[test]
fn lcov_leaves_out_classes_without_line_numbers_and_says_so() {
    let work = fresh_work("lcov-no-lines");
    let (src, orig, inst) = (work.join("src"), work.join("classes"), work.join("inst"));
    std::fs::create_dir_all(src.join("p")).unwrap();
    let files = [
        (
            "A",
            "package p;\npublic class A {\n    public static void main(String[] a) {\n        \
             System.out.println(B.f(a.length) + C.g());\n    }\n}\n",
        ),
        (
            "B",
            "package p;\npublic class B {\n    static int f(int x) {\n        \
             return x > 0 ? 1 : 2;\n    }\n}\n",
        ),
        (
            "C",
            "package p;\npublic class C {\n    static int g() {\n        return 3;\n    }\n}\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(src.join(format!("p/{name}.java")), text).unwrap();
    }
    let javac = |debug: &str, names: &[&str]| {
        let st = Command::new(common::java_home().join("bin/javac"))
            .arg(debug)
            .arg("-cp")
            .arg(&orig)
            .arg("-d")
            .arg(&orig)
            .args(names.iter().map(|n| src.join(format!("p/{n}.java"))))
            .status()
            .unwrap();
        assert!(st.success(), "javac {names:?}");
    };
    javac("-g:none", &["B", "C"]);
    javac("-g", &["A"]);
    bci(&[os("instrument"), os("--coverage"), os(&orig), os(&inst)]);
    let rt = work.join("bci-runtime.jar");
    bci(&[os("runtime-jar"), os(&rt)]);
    let data = work.join("run.cov");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("p.A")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let info = work.join("run.info");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&orig),
        os("--sources"),
        os(&src),
        os("--lcov"),
        os(&info),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let lcov = std::fs::read_to_string(&info).unwrap();
    assert!(lcov.contains("/p/A.java\n"), "{lcov}");
    assert!(
        !lcov.contains("B.java") && !lcov.contains("C.java"),
        "{lcov}"
    );
    assert!(!lcov.contains("FN:0,"), "{lcov}");
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("line numbers")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("2 classes") && notes[0].contains("p.B") && notes[0].contains("p.C"),
        "{err}"
    );
    // the console still counts them: 3 classes, 2 of them run (A, B; C too), 5 methods
    assert!(out.contains("3 classes analysed"), "{out}");
    let o = Command::new("genhtml")
        .arg("-o")
        .arg(work.join("genhtml"))
        .arg(&info)
        .output()
        .expect("genhtml (Debian lcov)");
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("WARNING"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&work);
}

/// Compiles `sources` (path under `work/src`, text) with `javac -g` into `out`.
fn javac_into(work: &Path, out: &Path, sources: &[(&str, &str)]) {
    let src = work.join("src");
    let mut files = Vec::new();
    for (path, text) in sources {
        let f = src.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, text).unwrap();
        files.push(f);
    }
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-d")
        .arg(out)
        .args(&files)
        .status()
        .unwrap();
    assert!(st.success(), "javac {sources:?}");
}

/// `com.acme.Calc` compiled into `work`/classes and a data file (run.cov) of it loaded, never
/// run: (the classes directory, Calc's class file, the data file).
fn calc_with_data(work: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let classes = work.join("classes");
    javac_into(
        work,
        &classes,
        &[(
            "com/acme/Calc.java",
            "package com.acme; public class Calc { int f() { return 1; } }",
        )],
    );
    let file = classes.join("com/acme/Calc.class");
    let data = work.join("run.cov");
    std::fs::write(&data, loaded_data("host-1-1", &[&file]).to_bytes()).unwrap();
    (classes, file, data)
}

/// A class file under --classes that is no class file (cut short) is an error naming it, and
/// its class is not also said to be "under no --classes path" (its file is there).
#[test]
fn an_unreadable_class_file_is_not_called_absent() {
    let work = fresh_work("unreadable-class");
    let (classes, file, data) = calc_with_data(&work);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..40]).unwrap();
    let (code, out, err) = run_bci(&[os("report"), os(&data), os("--classes"), os(&classes)]);
    assert_eq!((code, err.as_str()), (Some(1), ""), "{out}");
    assert!(
        out.contains(&format!(
            "\nerror: {}: com/acme/Calc.class: not a class file\n",
            classes.display()
        )),
        "{out}"
    );
    assert!(!out.contains("under no --classes path"), "{out}");
    assert!(
        out.contains("\n0 classes analysed, 0 with data; 1 session in"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A `--classes` path that is one class file (a classdump= file, to report one build of a class)
/// is read as a class, as `bci verify` takes one: before, it was read as a zip ("not a zip
/// archive", exit 2; found by the languages hunt). A file that is neither says what
/// `--classes` takes.
#[test]
fn a_class_file_given_as_classes_is_read() {
    let work = fresh_work("class-file-as-classes");
    let (_, file, data) = calc_with_data(&work);
    // also under a classdump= name, and under a name that is no .class
    let dumped = work.join("Calc.0123456789abcdef.class");
    let plain = work.join("Calc.bin");
    for to in [&dumped, &plain] {
        std::fs::copy(&file, to).unwrap();
    }
    for f in [&file, &dumped, &plain] {
        let (code, out, err) = run_bci(&[os("report"), os(&data), os("--classes"), os(f)]);
        assert_eq!(
            (code, err.as_str()),
            (Some(0), ""),
            "{}: {out}",
            f.display()
        );
        assert!(
            out.contains("\n1 class analysed, 1 with data; 1 session in"),
            "{out}"
        );
    }
    let text = work.join("notes.txt");
    std::fs::write(&text, "not a class\n").unwrap();
    let (code, out, err) = run_bci(&[os("report"), os(&data), os("--classes"), os(&text)]);
    assert_eq!(
        (code, err.as_str()),
        (
            Some(2),
            format!(
                "bci: {}: not a zip archive (no end-of-central-directory record: not a zip, or \
                 one cut short) (--classes takes a directory, a jar or a class file)\n",
                text.display()
            )
            .as_str()
        ),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// Data of one run (session `id`) in which each class file of `classes` was loaded and none of
/// its code ran (every counter 0): each class is "with data", under the hash of its bytes.
fn loaded_data(id: &str, classes: &[&Path]) -> CovData {
    let mut d = CovData::default();
    d.sessions.push(bci_rewriter::coverage::data::Session {
        id: id.into(),
        start_ms: 1,
        dump_ms: 2,
        jvm: "17".into(),
        command: "java Main".into(),
    });
    for c in classes {
        let bytes = std::fs::read(c).unwrap();
        let plan = bci_rewriter::coverage::plan_class(&bytes, Split::AfterCalls).unwrap();
        d.add_class(
            &plan.name,
            class_hash(&bytes),
            &vec![0; plan.counters as usize],
        )
        .unwrap();
    }
    d
}

/// Writes the zip `jar` with `entries` (name, bytes), stored or deflated.
fn zip_bytes(jar: &Path, entries: &[(&str, Vec<u8>)]) {
    use std::io::Write;
    std::fs::create_dir_all(jar.parent().unwrap()).unwrap();
    let mut z = zip::ZipWriter::new(std::fs::File::create(jar).unwrap());
    for (name, bytes) in entries {
        z.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

/// `--classes DIR` reads the jars in the directory (build/libs, target/lib), at any depth, and
/// the jars nested in a jar (a Spring Boot fat jar's BOOT-INF/lib/*.jar, a war's WEB-INF/lib),
/// recursively, as jacococli's --classfiles does: it read neither (0 classes analysed, exit 0).
/// A report that finds none of the data's classes under its --classes paths says so on stderr
/// and exits 1.
#[test]
fn jars_in_class_directories_and_nested_jars_are_read() {
    let work = fresh_work("nested-jars");
    let classes = work.join("classes");
    javac_into(
        &work,
        &classes,
        &[
            (
                "p/A.java",
                "package p;\npublic class A {\n    public static int f(int x) {\n        \
                 return x > 0 ? 1 : 2;\n    }\n}\n",
            ),
            (
                "q/B.java",
                "package q;\npublic class B {\n    public static int g() {\n        return 3;\n    }\n}\n",
            ),
            (
                "r/C.java",
                "package r;\npublic class C {\n    public static int h() {\n        return 4;\n    }\n}\n",
            ),
        ],
    );
    let (a, b, c) = (
        classes.join("p/A.class"),
        classes.join("q/B.class"),
        classes.join("r/C.class"),
    );
    let read = |p: &Path| std::fs::read(p).unwrap();
    let data = work.join("run.cov");
    std::fs::write(&data, loaded_data("host-1-1", &[&a, &b, &c]).to_bytes()).unwrap();
    // a directory of jars, one in a subdirectory, and a loose class next to them
    let libs = work.join("libs");
    zip_bytes(&libs.join("a.jar"), &[("p/A.class", read(&a))]);
    zip_bytes(&libs.join("sub/b.jar"), &[("q/B.class", read(&b))]);
    std::fs::create_dir_all(libs.join("r")).unwrap();
    std::fs::copy(&c, libs.join("r/C.class")).unwrap();
    // a fat jar: its own classes under BOOT-INF/classes/, libraries under BOOT-INF/lib/, one of
    // them holding another jar
    let inner = work.join("inner.jar");
    zip_bytes(&inner, &[("r/C.class", read(&c))]);
    let outer = work.join("outer.jar");
    zip_bytes(
        &outer,
        &[
            (
                "META-INF/MANIFEST.MF",
                b"Manifest-Version: 1.0\r\n\r\n".to_vec(),
            ),
            ("lib/inner.jar", read(&inner)),
        ],
    );
    let lib = work.join("b.jar");
    zip_bytes(&lib, &[("q/B.class", read(&b))]);
    let fat = work.join("app-fat.jar");
    zip_bytes(
        &fat,
        &[
            ("BOOT-INF/classes/p/A.class", read(&a)),
            ("BOOT-INF/lib/b.jar", read(&lib)),
            ("WEB-INF/lib/outer.jar", read(&outer)),
        ],
    );
    for path in [&libs, &fat] {
        let (code, out, err) = run_bci(&[os("report"), os(&data), os("--classes"), os(path)]);
        assert_eq!(
            (code, err.as_str()),
            (Some(0), ""),
            "{}: {out}",
            path.display()
        );
        assert!(
            out.contains("\n3 classes analysed, 3 with data; 1 session in"),
            "{}: {out}",
            path.display()
        );
        assert!(!out.contains("note:"), "{out}");
    }
    // none of the data's classes under --classes: said on stderr, exit 1 (reports written)
    let empty = work.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let csv = work.join("empty.csv");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&empty),
        os("--csv"),
        os(&csv),
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("\n0 classes analysed, 0 with data;"), "{out}");
    assert_eq!(
        err,
        format!(
            "bci: error: none of the 3 classes in the data is under the --classes paths \
             ({}): no class was analysed; give the directories or jars of the classes that \
             ran (p.A, q.B, r.C)\n",
            empty.display()
        )
    );
    assert!(csv.exists());
    let _ = std::fs::remove_dir_all(&work);
}

/// `--classes` naming what `bci instrument` wrote (app-cov.jar) instead of its input: every
/// class was called stale and reported 0%, exit 0. Instrumented copies carry the
/// BciInstrumented marker: they are never analysed, and a path of them is an error on stderr
/// that says what to give instead (exit 1); next to the originals, they are left out with a
/// warning.
#[test]
fn instrumented_copies_given_as_classes_are_refused() {
    let work = fresh_work("instrumented-classes");
    let orig = work.join("classes");
    javac_into(
        &work,
        &orig,
        &[(
            "p/A.java",
            "package p;\npublic class A {\n    public static int f(int x) {\n        \
             return x > 0 ? 1 : 2;\n    }\n}\n",
        )],
    );
    let (cov, cpu) = (work.join("app-cov.jar"), work.join("app-cpu"));
    bci(&[os("instrument"), os("--coverage"), os(&orig), os(&cov)]);
    bci(&[os("instrument"), os(&orig), os(&cpu)]);
    let data = work.join("run.cov");
    std::fs::write(
        &data,
        loaded_data("host-1-1", &[&orig.join("p/A.class")]).to_bytes(),
    )
    .unwrap();
    for (copy, kind) in [(&cov, "coverage counters"), (&cpu, "cpu=times probes")] {
        let (code, out, err) = run_bci(&[os("report"), os(&data), os("--classes"), os(copy)]);
        assert_eq!(code, Some(1), "{out}{err}");
        assert_eq!(
            err,
            format!(
                "bci: error: {}: 1 class instrumented by bci instrument (with {kind}), not \
                 the original class: it cannot be analysed and is left out (p.A; the data \
                 is of its original build); give --classes the classes bci instrument read\n",
                copy.display()
            )
        );
        assert!(out.contains("\n0 classes analysed, 0 with data;"), "{out}");
        assert!(!out.contains("note:"), "{out}");
        // next to the original classes: left out, said once
        let (code, out, err) = run_bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(copy),
            os("--classes"),
            os(&orig),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert_eq!(
            err,
            format!(
                "bci: warning: {}: 1 class instrumented by bci instrument left out (p.A): \
                 the original class is reported\n",
                copy.display()
            )
        );
        assert!(out.contains("\n1 class analysed, 1 with data;"), "{out}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// A class that would need more than 32768 coverage counters is never instrumented (bci
/// instrument and the agent leave it original): the report showed it 0% with no word of why,
/// and the agent said "method left original: h/Big: no coverage: h/Big: 35209 coverage
/// counters (at most 32768)" of a whole class. Now the console and the HTML report say which
/// classes these are and why they show as not run, and both instrumenters say the class is
/// left without coverage.
#[test]
fn a_class_past_the_counter_limit_is_named_in_the_report() {
    let work = fresh_work("counter-limit");
    let classes = work.join("classes");
    // four conditions a statement: about four counters each
    let mut big = String::from(
        "package h;\npublic class Big {\n    static int s;\n    public static void main(String[] a) \
         {\n        Small.hi();\n    }\n",
    );
    for m in 0..9 {
        big.push_str(&format!(
            "    static void m{m}(int x, int y, int z, int w) {{\n"
        ));
        for k in 0..1000 {
            big.push_str(&format!(
                "        if (x == {k} || y == {k} || z == {k} || w == {k}) s++;\n"
            ));
        }
        big.push_str("    }\n");
    }
    big.push_str("}\n");
    javac_into(
        &work,
        &classes,
        &[
            ("h/Big.java", &big),
            (
                "h/Small.java",
                "package h;\npublic class Small {\n    static void hi() {\n        \
                 System.out.println(\"hi\");\n    }\n}\n",
            ),
        ],
    );
    let bytes = std::fs::read(classes.join("h/Big.class")).unwrap();
    let n = bci_rewriter::coverage::plan_class(&bytes, Split::AfterCalls)
        .unwrap()
        .counters;
    assert!(n > 32768, "{n}");
    let why = format!("needs {n} coverage counters, more than a class may have (32768)");
    // bci instrument
    let (code, out, err) = run_bci(&[
        os("instrument"),
        os("--coverage"),
        os(&classes),
        os(&work.join("inst")),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains(&format!("bci: h/Big.class: left original: {why}\n")),
        "{err}"
    );
    // the agent
    let data = work.join("run.cov");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!(
            "-agentpath:{}=coverage=y,include=h.*,covfile={}",
            agent_common::agent_lib().display(),
            data.display()
        ))
        .arg("-cp")
        .arg(&classes)
        .arg("h.Big")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "bciagent: h/Big: class left without coverage: {why}\n"
        )),
        "{err}"
    );
    assert!(!err.contains("method left original"), "{err}");
    // the report: console and HTML
    let html = work.join("html");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&classes),
        os("--html"),
        os(&html),
    ]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert!(out.contains("\n2 classes analysed, 1 with data;"), "{out}");
    let note = format!(
        "note: 1 class would need more coverage counters than a class may have (32768): never \
         instrumented (bci instrument and the agent leave it without coverage), it shows as \
         not run: h.Big ({n} counters)\n"
    );
    assert!(out.contains(&note), "{out}");
    for page in ["index.html", "h/Big.html"] {
        let t = std::fs::read_to_string(html.join(page)).unwrap();
        assert!(
            t.contains(&format!("{n} ")) && t.contains("than a class may have (32768)"),
            "{page}: {t}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// The text of the `<td class="code">` cells of an HTML source page, in order (unescaped
/// enough for the sources below).
fn code_cells(page: &str) -> Vec<String> {
    page.split("<td class=\"code\">")
        .skip(1)
        .map(|c| c[..c.find("</td>").unwrap()].replace("&quot;", "\""))
        .collect()
}

/// A source file whose lines end in a lone CR (classic Mac line ends; Java and javac's
/// LineNumberTable count a lone CR as a line end) is shown line by line on its HTML page, each
/// line next to its own status (before: line 1 held the whole file, the other rows were empty);
/// CRLF and LF mixed in alike.
#[test]
fn a_source_file_with_cr_line_ends_is_shown_line_by_line() {
    let work = fresh_work("cr-lines");
    let classes = work.join("classes");
    let lines = [
        "package cr;",
        "public class Cr {",
        "    static int f(int x) {",
        "        if (x != 0) {",
        "            return 1;",
        "        }",
        "        return 0;",
        "    }",
        "    public static void main(String[] a) {",
        "        f(1);",
        "    }",
        "}",
    ];
    // lone CRs, then a CRLF and an LF
    let mut text = lines[..10].join("\r") + "\r";
    text += &format!("{}\r\n{}\n", lines[10], lines[11]);
    javac_into(&work, &classes, &[("cr/Cr.java", &text)]);
    let data = work.join("run.cov");
    std::fs::write(
        &data,
        loaded_data("host-1-1", &[&classes.join("cr/Cr.class")]).to_bytes(),
    )
    .unwrap();
    let html = work.join("html");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&classes),
        os("--sources"),
        os(&work.join("src")),
        os("--html"),
        os(&html),
    ]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    let page = std::fs::read_to_string(html.join("cr/Cr.java.html")).unwrap();
    assert_eq!(code_cells(&page), lines);
    // `return 1;` is line 5 of the class's line table: its row holds its text, not run
    let row = &page[page.find("<tr id=\"L5\"").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(
        row.contains("class=\"nc\"") && row.contains("return 1;"),
        "{row}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A Latin-1 source file (javac -encoding ISO-8859-1; CRLF line ends) was "not found under the
/// --sources roots" in the HTML report, its text left out, while LCOV and Cobertura named it.
/// Without --source-encoding a file that is not UTF-8 is read as windows-1252 (Latin-1), with
/// one warning naming it; --source-encoding NAME (as javac's -encoding) reads it as that;
/// "not found" is said only of a file that is not there.
#[test]
fn a_source_file_that_is_not_utf8_is_shown_decoded() {
    let work = fresh_work("source-encoding");
    let (src, classes) = (work.join("src"), work.join("classes"));
    std::fs::create_dir_all(src.join("e")).unwrap();
    let text = "package e;\r\n// Grüße, café: \u{a7}5\r\npublic class Lat {\r\n    \
                public static String s() {\r\n        return \"é\";\r\n    }\r\n}\r\n";
    let latin1: Vec<u8> = text.chars().map(|c| c as u32 as u8).collect();
    std::fs::write(src.join("e/Lat.java"), &latin1).unwrap();
    let st = Command::new(common::java_home().join("bin/javac"))
        .args(["-g", "-encoding", "ISO-8859-1", "-d"])
        .arg(&classes)
        .arg(src.join("e/Lat.java"))
        .status()
        .unwrap();
    assert!(st.success());
    let data = work.join("run.cov");
    std::fs::write(
        &data,
        loaded_data("host-1-1", &[&classes.join("e/Lat.class")]).to_bytes(),
    )
    .unwrap();
    let want: Vec<String> = text.lines().map(str::to_string).collect();
    let html = work.join("html");
    let report = |extra: &[&str]| {
        let mut args = vec![
            os("report"),
            os(&data),
            os("--classes"),
            os(&classes),
            os("--sources"),
            os(&src),
            os("--html"),
            os(&html),
        ];
        args.extend(extra.iter().map(os));
        let (code, out, err) = run_bci(&args);
        let page = std::fs::read_to_string(html.join("e/Lat.java.html")).unwrap_or_default();
        (code, out, err, page)
    };
    let (code, out, err, page) = report(&[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(
        err,
        format!(
            "bci: warning: --html {}: 1 source file is not UTF-8, read as windows-1252 \
             (Latin-1): {}; give --source-encoding NAME (as javac's -encoding) if it is in \
             another\n",
            html.display(),
            src.join("e/Lat.java").display()
        )
    );
    assert!(!page.contains("not found"), "{page}");
    assert_eq!(code_cells(&page), want);
    for name in ["ISO-8859-1", "latin1", "Cp1252", "windows-1252"] {
        let (code, out, err, page) = report(&["--source-encoding", name]);
        assert_eq!((code, err.as_str()), (Some(0), ""), "{name}: {out}");
        assert_eq!(code_cells(&page), want, "{name}");
    }
    // said to be UTF-8: shown with U+FFFD for the bytes that are not, and said
    let (code, out, err, page) = report(&["--source-encoding", "UTF-8"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("not valid UTF-8"), "{err}");
    assert!(code_cells(&page)[1].contains('\u{fffd}'), "{page}");
    // UTF-8 with a byte order mark: the mark is not text
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(text.as_bytes());
    std::fs::write(src.join("e/Lat.java"), &bom).unwrap();
    let (code, out, err, page) = report(&[]);
    assert_eq!((code, err.as_str()), (Some(0), ""), "{out}");
    assert_eq!(code_cells(&page), want);
    // an unknown encoding is refused before anything is written
    let (code, _, err, _) = report(&["--source-encoding", "EBCDIC"]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(
            "bci: --source-encoding 'EBCDIC': unknown encoding; bci knows UTF-8, \
                         ISO-8859-1 (latin1), windows-1252 (Cp1252) and US-ASCII"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// `bci merge --ignore-stale` of data holding two builds of a class: it kept the build seen
/// first, which in one file (a covfile the old and the new build both ran into) was the lower
/// hash, whatever ran last, and said only "stale (another build), skipped". Now: of files, the
/// first input's build (said, with both hashes); of one file, which build is newer cannot be
/// told, so it is an error naming both hashes and the way out: `--classes PATH` keeps the
/// build found there (the one to report).
#[test]
fn merge_ignore_stale_keeps_a_build_it_names() {
    let work = fresh_work("ignore-stale");
    let (old, new) = (work.join("old"), work.join("new"));
    let src = |text: &str| {
        format!(
            "package p;\npublic class A {{\n    public static void main(String[] a) {{\n        \
             System.out.println(\"{text}\");\n    }}\n}}\n"
        )
    };
    javac_into(&work.join("o"), &old, &[("p/A.java", &src("old"))]);
    javac_into(&work.join("n"), &new, &[("p/A.java", &src("new"))]);
    let hash = |d: &Path| class_hash(&std::fs::read(d.join("p/A.class")).unwrap());
    let (h_old, h_new) = (hash(&old), hash(&new));
    let a_old = loaded_data("host-1-1", &[&old.join("p/A.class")]);
    let a_new = loaded_data("host-2-2", &[&new.join("p/A.class")]);
    let (f_old, f_new, both) = (
        work.join("old.cov"),
        work.join("new.cov"),
        work.join("both.cov"),
    );
    std::fs::write(&f_old, a_old.to_bytes()).unwrap();
    std::fs::write(&f_new, a_new.to_bytes()).unwrap();
    let mut one = a_old.clone();
    one.add_all(&a_new).unwrap();
    std::fs::write(&both, one.to_bytes()).unwrap();
    let merged = work.join("m.cov");
    let kept = |p: &Path| -> Vec<u64> {
        let d = CovData::parse(&std::fs::read(p).unwrap()).unwrap();
        d.classes.keys().map(|(_, h)| *h).collect()
    };
    // files: the first input's build, whichever it is, named with the one left out
    for (first, second, h1, h2) in [
        (&f_old, &f_new, h_old, h_new),
        (&f_new, &f_old, h_new, h_old),
    ] {
        let (code, out, err) = run_bci(&[
            os("merge"),
            os(first),
            os(second),
            os("-o"),
            os(&merged),
            os("--ignore-stale"),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert_eq!(
            err,
            format!(
                "bci: {}: p/A: data of build {h2:016x} left out; kept: build {h1:016x} (of {}, \
                 the first input that has the class)\nbci: wrote {}: 1 class, 2 sessions (a \
                 session whose data was left out stays listed: its other classes keep their \
                 counts)\n",
                second.display(),
                first.display(),
                merged.display()
            )
        );
        assert_eq!(kept(&merged), [h1]);
    }
    // one file of both builds: an error naming both, nothing written
    std::fs::remove_file(&merged).unwrap();
    let (code, out, err) = run_bci(&[
        os("merge"),
        os(&both),
        os("-o"),
        os(&merged),
        os("--ignore-stale"),
    ]);
    assert_eq!(code, Some(2), "{out}{err}");
    let (lo, hi) = (h_old.min(h_new), h_old.max(h_new));
    assert_eq!(
        err,
        format!(
            "bci: {}: p/A: data of two builds ({lo:016x}, {hi:016x}) in this one file: which \
             is newer cannot be told from the data; give --classes PATH with the classes whose \
             build to keep, or merge data of one build\n",
            both.display()
        )
    );
    assert!(!merged.exists());
    // --classes chooses: the build found there, in one file or in several
    for (classes, h, gone) in [(&old, h_old, h_new), (&new, h_new, h_old)] {
        for inputs in [vec![&both], vec![&f_old, &f_new]] {
            let mut args = vec![os("merge")];
            args.extend(inputs.iter().map(os));
            args.extend([
                os("-o"),
                os(&merged),
                os("--ignore-stale"),
                os("--classes"),
                os(classes),
            ]);
            let (code, out, err) = run_bci(&args);
            assert_eq!(code, Some(0), "{out}{err}");
            assert!(
                err.starts_with(&format!(
                    "bci: {}: p/A: data of build {gone:016x} left out; kept: build {h:016x} (the \
                     one under --classes)\n",
                    if inputs.len() == 1 {
                        &both
                    } else if gone == h_old {
                        &f_old
                    } else {
                        &f_new
                    }
                    .display()
                )),
                "{err}"
            );
            assert_eq!(kept(&merged), [h]);
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// Per-test coverage under JUnit's parallel execution (cli/tests/fixtures/pertest/ParTest.java:
/// two tests that wait for each other), offline-instrumented and under the agent: the counts of
/// tests that run at the same time cannot be told apart (every thread's counts go to the
/// window open), and were silently misattributed. The runtime now tells that a test ended
/// after another began (the JUnit listener ends each test by its name), says so on stderr once,
/// and records it with the test's counts; `bci report --per-test` names those tests on the
/// console and on stderr.
#[test]
fn per_test_coverage_of_tests_run_in_parallel_says_they_overlap() {
    if !Path::new(JUNIT).exists() {
        eprintln!("skipped: {JUNIT} absent (apt-get install -y junit5)");
        return;
    }
    let work = fresh_work("partests");
    let build = pertest_build(&work, "ParTest.java");
    let orig = build.0.clone();
    for agent in [false, true] {
        let data = work.join(format!("run-{agent}.cov"));
        let out = run_junit_parallel(
            &build,
            agent,
            &data,
            &[
                "--select-class",
                "ParTest",
                "--config=junit.jupiter.execution.parallel.mode.default=concurrent",
            ],
        );
        // said once: the listener tells the runtime the plan runs in parallel first
        let said: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("bci: per-test coverage:"))
            .collect();
        assert_eq!(said.len(), 1, "agent {agent}: {out}");
        assert!(said[0].contains(PARALLEL_SAID), "{out}");
        let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
        for t in ["ParTest#one()", "ParTest#two()"] {
            let k = d.tests[t]
                .get(&(bci_rewriter::coverage::data::OVERLAP_CLASS.to_string(), 0))
                .unwrap_or_else(|| panic!("agent {agent}: {t}: {:?}", d.tests[t].keys()));
            assert!(k[0] >= 1, "{t}: {k:?}");
        }
        let (code, console, err) = run_bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(&orig),
            os("--per-test"),
        ]);
        assert_eq!(code, Some(0), "{console}{err}");
        let note = "2 of the 2 tests ran at the same time as another (parallel execution?): \
                    their per-test counts are not separable (each can hold the other's); the \
                    run's totals are exact: ParTest#one(), ParTest#two()";
        assert_eq!(
            err,
            format!("bci: warning: per test: {note}\n"),
            "agent {agent}"
        );
        assert!(
            console.contains(&format!("\nper test: {note}\n")),
            "{console}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// JUnit's console launcher (JVM options `jvm`, launcher arguments `args`) over the classes of
/// `build` ([`pertest_build`]): the agent's coverage of the original classes, or the
/// offline-covered ones with the runtime jar, into `data`.
fn run_junit(
    build: &(PathBuf, PathBuf, PathBuf, PathBuf),
    agent: bool,
    data: &Path,
    jvm: &[&str],
    args: &[&str],
) -> std::process::Output {
    let (orig, inst, tests, rt) = build;
    let mut java = Command::new(common::java_home().join("bin/java"));
    java.args(jvm);
    let classes = if agent {
        java.arg(format!(
            "-agentpath:{}=coverage=y,include=Shapes,covfile={}",
            agent_common::agent_lib().display(),
            data.display()
        ));
        orig
    } else {
        java.arg(format!("-Dbci.covfile={}", data.display()));
        inst
    };
    java.arg("-jar")
        .arg(JUNIT)
        .arg("-cp")
        .arg(format!(
            "{}:{}:{}",
            classes.display(),
            tests.display(),
            rt.display()
        ))
        .args(args)
        .output()
        .unwrap()
}

/// [`run_junit`] with parallel execution (2 threads) and `args`; asserts the run succeeded
/// with 2 tests; its output.
fn run_junit_parallel(
    build: &(PathBuf, PathBuf, PathBuf, PathBuf),
    agent: bool,
    data: &Path,
    args: &[&str],
) -> String {
    let mut all = args.to_vec();
    all.extend([
        "--disable-banner",
        "--config=junit.jupiter.execution.parallel.enabled=true",
        "--config=junit.jupiter.execution.parallel.config.strategy=fixed",
        "--config=junit.jupiter.execution.parallel.config.fixed.parallelism=2",
    ]);
    let o = run_junit(build, agent, data, &[], &all);
    let out = text(&o);
    assert!(o.status.success(), "agent {agent}: {out}");
    assert!(out.contains("2 tests successful"), "{out}");
    out
}

/// What the JVM says once under JUnit's parallel execution (the runtime jar's and the agent's
/// runtime alike).
const PARALLEL_SAID: &str = "bci: per-test coverage: tests run in parallel \
    (junit.jupiter.execution.parallel.enabled=true): code other threads run during a test \
    (other tests, another class's @BeforeAll, test instances' constructors) counts as its, so \
    per-test counts are not separable; run tests one at a time for exact per-test coverage \
    (JUnit: junit.jupiter.execution.parallel.enabled=false)";

/// Per-test coverage under JUnit's parallel execution (classes concurrent) whose tests do not
/// overlap (cli/tests/fixtures/pertest/ParSetupTest.java): one class's `@BeforeAll` runs during
/// the other's test, and its code counted as that test's without a word (the overlap warning
/// needs two tests at once). The JUnit listener now tells the runtime when the test plan is
/// configured for parallel execution (or runs on more than one thread): said once on stderr,
/// every test recorded as overlapping, and `bci report --per-test` names them; offline and
/// under the agent. Found by the T hunt.
#[test]
fn per_test_coverage_under_parallel_execution_is_said_without_overlapping_tests() {
    if !Path::new(JUNIT).exists() {
        eprintln!("skipped: {JUNIT} absent (apt-get install -y junit5)");
        return;
    }
    let work = fresh_work("parsetup");
    let build = pertest_build(&work, "ParSetupTest.java");
    let orig = build.0.clone();
    for agent in [false, true] {
        let data = work.join(format!("run-{agent}.cov"));
        let out = run_junit_parallel(
            &build,
            agent,
            &data,
            &[
                "--select-class",
                "ParSetupTest",
                "--select-class",
                "ParSetupOther",
                "--config=junit.jupiter.execution.parallel.mode.classes.default=concurrent",
            ],
        );
        let said: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("bci: per-test coverage:"))
            .collect();
        assert_eq!(said, [PARALLEL_SAID], "agent {agent}: {out}");
        let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
        for t in ["ParSetupOther#after()", "ParSetupTest#slow()"] {
            let k = d.tests[t]
                .get(&(bci_rewriter::coverage::data::OVERLAP_CLASS.to_string(), 0))
                .unwrap_or_else(|| panic!("agent {agent}: {t}: {:?}", d.tests[t].keys()));
            assert!(k[0] >= 1, "{t}: {k:?}");
        }
        let (code, console, err) = run_bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(&orig),
            os("--per-test"),
        ]);
        assert_eq!(code, Some(0), "{console}{err}");
        assert!(
            err.contains("bci: warning: per test: 2 of the 2 tests ran at the same time"),
            "agent {agent}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}
