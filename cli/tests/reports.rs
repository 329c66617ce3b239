//! `bci report` on coverage data, checked by the real consumers: xmllint against JaCoCo's
//! report.dtd and against JaCoCo's own XML for the same run (Debian libjacoco-java), xmllint
//! and the data for Cobertura, genhtml for LCOV, headless Chromium for the HTML report.
//! The program is test-classes/coverage/CovBasics.java, instrumented offline and run with the
//! runtime jar under -Xverify:all.
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

/// CovBasics compiled, instrumented, run once: the data file and the analysis of it.
struct Run {
    work: PathBuf,
    orig: PathBuf,
    src_dir: PathBuf,
    data: PathBuf,
    class: Class,
}

impl Drop for Run {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.work);
        }
    }
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

fn setup(tag: &str) -> Run {
    let ws = common::workspace();
    let work = ws.join(format!("target/test-out/reports-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let (orig, inst) = (work.join("orig"), work.join("inst"));
    std::fs::create_dir_all(&orig).unwrap();
    let src_dir = ws.join("test-classes/coverage");
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-d")
        .arg(&orig)
        .arg(src_dir.join("CovBasics.java"))
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
    bci(&[os("instrument"), os("--coverage"), os(&orig), os(&inst)]);
    let rt = work.join("bci-runtime.jar");
    bci(&[os("runtime-jar"), os(&rt)]);
    let data = work.join("run.cov");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg("-Xverify:all")
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("CovBasics")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
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
    let tools = r.work.join("jacoco");
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
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!(
            "-javaagent:{}=destfile={}",
            tools.join("jacocoagent.jar").display(),
            exec.display()
        ))
        .arg("-cp")
        .arg(&r.orig)
        .arg("CovBasics")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = tools.join("jacoco.xml");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg("-cp")
        .arg(format!("{cp}:{}", tools.display()))
        .arg("JacocoXml")
        .arg(&exec)
        .arg(&r.orig)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    std::fs::read_to_string(out).unwrap()
}

/// Methods where JaCoCo 0.8.6 filters compiler-generated code that bci's analysis does not
/// filter yet, so the two differ by definition: `caught` (javac's copies of a `finally`
/// block) and `strings` (the hash dispatch of a string switch).
const JACOCO_FILTERS: [&str; 2] = ["caught(I)I", "strings(Ljava/lang/String;)I"];

#[test]
fn jacoco_xml_is_valid_and_agrees_with_jacocos_own() {
    if !jacoco_jar("org.jacoco.report.jar").exists() {
        eprintln!("skipped: /usr/share/java/org.jacoco.report.jar absent (apt-get install libjacoco-java)");
        return;
    }
    let r = setup("jacoco");
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
        .arg("--noout")
        .arg("--dtdvalid")
        .arg(&dtd)
        .arg(&ours)
        .output()
        .expect("xmllint (Debian libxml2-utils, in cli/ci-packages.txt)");
    assert!(o.status.success(), "{}", text(&o));
    let xml = std::fs::read_to_string(&ours).unwrap();
    assert!(xml.contains("<report name=\"CovBasics &lt;run&gt;\">"), "{xml}");
    assert_eq!(tags(&xml, "sessioninfo").len(), 1, "{xml}");

    let theirs = jacoco_xml(&r);
    let (mine, jac) = (jacoco_methods(&xml), jacoco_methods(&theirs));
    assert_eq!(
        mine.keys().collect::<Vec<_>>(),
        jac.keys().collect::<Vec<_>>(),
        "the same methods"
    );
    // Lines of the methods JaCoCo filters, which are compared no further.
    let mut skip = Vec::new();
    for m in JACOCO_FILTERS {
        let am = r
            .class
            .methods
            .iter()
            .find(|x| format!("{}{}", x.name, x.desc) == m)
            .unwrap();
        skip.extend(am.lines.keys().copied());
    }
    let mut wrong = Vec::new();
    for (k, v) in &jac {
        if !JACOCO_FILTERS.contains(&k.as_str()) && mine[k] != *v {
            wrong.push(format!("method {k}: bci {:?}, JaCoCo {v:?}", mine[k]));
        }
    }
    let (ml, jl) = (jacoco_lines(&xml), jacoco_lines(&theirs));
    let mut compared = 0;
    let all: std::collections::BTreeSet<u32> = ml.keys().chain(jl.keys()).copied().collect();
    for nr in &all {
        if skip.contains(nr) {
            continue;
        }
        compared += 1;
        if ml.get(nr) != jl.get(nr) {
            wrong.push(format!(
                "line {nr}: bci {:?}, JaCoCo {:?}",
                ml.get(nr),
                jl.get(nr)
            ));
        }
    }
    assert!(compared > 60, "only {compared} lines compared");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Class-level METHOD and CLASS counters agree too (the filters change no method count).
    let class_counters = |x: &str| -> Vec<String> {
        let c = &x[x.rfind("</method>").unwrap()..x.find("</class>").unwrap()];
        tags(c, "counter")
            .into_iter()
            .filter(|t| matches!(attr(t, "type"), Some("METHOD" | "CLASS")))
            .map(String::from)
            .collect()
    };
    assert_eq!(class_counters(&xml), class_counters(&theirs));
    assert_eq!(class_counters(&xml).len(), 2);
}
