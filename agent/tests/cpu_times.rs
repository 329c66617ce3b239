//! End-to-end: compile test-classes/ with javac, run them with `-agentpath:libbciagent.so=...`,
//! and check the report against the `// expect:` comments in the sources.
//!
//! Needs a JDK (JAVA_HOME, or /usr/lib/jvm/java-17-openjdk-amd64, or java/javac on PATH).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
mod common;
use common::{agent_lib, jdk_tool, repo};

fn tmp(name: &str) -> PathBuf {
    common::tmp("test", name)
}

/// test-classes/*.java compiled once into a temp dir.
fn classes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = tmp("classes");
        let mut cmd = Command::new(jdk_tool("javac"));
        cmd.arg("-g").arg("-d").arg(&out);
        for e in std::fs::read_dir(repo().join("test-classes")).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "java") {
                cmd.arg(p);
            }
        }
        let o = cmd.output().unwrap();
        assert!(
            o.status.success(),
            "javac: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    })
}

fn java(cp: &Path, main: &str, opts: &str, extra: &[&str]) -> Output {
    java_env(cp, main, opts, extra, &[])
}

fn java_env(cp: &Path, main: &str, opts: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg(format!("-agentpath:{}={}", agent_lib().display(), opts));
    cmd.args(extra).arg("-cp").arg(cp).arg(main);
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

struct Expect {
    method: String,
    count: u64,
}

struct ExpectPath {
    frames: Vec<String>,
    count: u64,
    /// a known gap: reported, not asserted
    todo: bool,
}

fn expectations(program: &str) -> (Vec<Expect>, Vec<ExpectPath>) {
    let src = std::fs::read_to_string(repo().join("test-classes").join(format!("{program}.java")))
        .unwrap();
    let mut e = Vec::new();
    let mut p = Vec::new();
    for line in src.lines() {
        let line = line.trim();
        let parse = |rest: &str| -> (String, u64) {
            let (what, count) = rest
                .trim()
                .rsplit_once(" count=")
                .unwrap_or_else(|| panic!("bad expect: {line}"));
            (what.trim().to_string(), count.trim().parse().unwrap())
        };
        if let Some(rest) = line.strip_prefix("// expect:") {
            let (method, count) = parse(rest);
            e.push(Expect { method, count });
        } else if let Some(rest) = line.strip_prefix("// expect-path:") {
            let (path, count) = parse(rest);
            let frames = path.split(" < ").map(|s| s.trim().to_string()).collect();
            p.push(ExpectPath {
                frames,
                count,
                todo: false,
            });
        } else if let Some(rest) = line.strip_prefix("// expect-path-todo:") {
            let (path, count) = parse(rest);
            let frames = path.split(" < ").map(|s| s.trim().to_string()).collect();
            p.push(ExpectPath {
                frames,
                count,
                todo: true,
            });
        }
    }
    assert!(!e.is_empty(), "{program}: no expectations");
    (e, p)
}

#[derive(Debug, Clone)]
struct MethodRow {
    key: String, // Class.name(desc)
    count: u64,
    self_ms: f64,
    total_ms: f64,
}

struct Report {
    text: String,
    methods: Vec<MethodRow>,
    /// trace frames (top first, "Class.method") -> count
    traces: Vec<(Vec<String>, u64)>,
    cpu_total_ms: u64,
    last_accum: f64,
}

fn parse_report(text: &str) -> Report {
    let mut methods = Vec::new();
    let mut trace_frames: HashMap<u64, Vec<String>> = HashMap::new();
    let mut traces = Vec::new();
    let mut cpu_total_ms = 0;
    let mut last_accum = 0.0;
    let mut section = "";
    let mut current: Option<u64> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("TRACE ") {
            let serial: u64 = rest.split(':').next().unwrap().trim().parse().unwrap();
            trace_frames.insert(serial, Vec::new());
            current = Some(serial);
            continue;
        }
        if let (Some(s), Some(frame)) = (current, line.strip_prefix('\t')) {
            let f = frame.split('(').next().unwrap().to_string();
            trace_frames.get_mut(&s).unwrap().push(f);
            continue;
        }
        current = None;
        if line.starts_with("CPU TIME (ms) BEGIN") {
            section = "cpu";
            let t = line
                .split("total = ")
                .nth(1)
                .unwrap()
                .split(')')
                .next()
                .unwrap();
            cpu_total_ms = t.parse().unwrap();
            continue;
        }
        if line.starts_with("METHODS BEGIN") {
            section = "methods";
            continue;
        }
        if line.starts_with("CPU TIME (ms) END")
            || line.starts_with("METHODS END")
            || line.starts_with("rank")
        {
            if !line.starts_with("rank") {
                section = "";
            }
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        match section {
            "cpu" if cols.len() == 6 => {
                last_accum = cols[2].trim_end_matches('%').parse().unwrap();
                let count: u64 = cols[3].parse().unwrap();
                let serial: u64 = cols[4].parse().unwrap();
                let frames = trace_frames.get(&serial).cloned().unwrap_or_default();
                traces.push((frames, count));
            }
            "methods" if cols.len() == 7 => methods.push(MethodRow {
                key: cols[6].to_string(),
                count: cols[3].parse().unwrap(),
                self_ms: cols[4].parse().unwrap(),
                total_ms: cols[5].parse().unwrap(),
            }),
            _ => {}
        }
    }
    Report {
        text: text.to_string(),
        methods,
        traces,
        cpu_total_ms,
        last_accum,
    }
}

impl Report {
    /// Sum of counts of rows matching `Class.name` (all overloads) or `Class.name(desc)`.
    fn count(&self, method: &str) -> u64 {
        self.methods
            .iter()
            .filter(|r| {
                if method.contains('(') {
                    r.key == method
                } else {
                    r.key.split('(').next() == Some(method)
                }
            })
            .map(|r| r.count)
            .sum()
    }

    fn path_count(&self, frames: &[String]) -> u64 {
        self.traces
            .iter()
            .filter(|(f, _)| f.len() >= frames.len() && f[..frames.len()] == *frames)
            .map(|(_, c)| c)
            .sum()
    }

    fn exact_trace_count(&self, frames: &[&str]) -> u64 {
        self.traces
            .iter()
            .filter(|(f, _)| f.iter().map(String::as_str).eq(frames.iter().copied()))
            .map(|(_, c)| c)
            .sum()
    }

    fn per_method_counts(&self, prefix: &[&str]) -> HashMap<String, u64> {
        self.methods
            .iter()
            .filter(|r| prefix.iter().any(|p| r.key.starts_with(p)))
            .map(|r| (r.key.clone(), r.count))
            .collect()
    }

    fn check_invariants(&self, what: &str) {
        for r in &self.methods {
            assert!(
                r.self_ms <= r.total_ms + 0.0015,
                "{what}: self > total: {r:?}"
            );
        }
        let sum_self: f64 = self.methods.iter().map(|r| r.self_ms).sum();
        // each row is rounded to 0.001 ms, the total to 1 ms
        let tolerance = 1.0 + 0.0005 * self.methods.len() as f64;
        assert!(
            (sum_self - self.cpu_total_ms as f64).abs() <= tolerance,
            "{what}: sum of self {sum_self} != total {}",
            self.cpu_total_ms
        );
        if self.cpu_total_ms > 0 {
            assert!(
                (self.last_accum - 100.0).abs() < 0.02,
                "{what}: accum ends at {}",
                self.last_accum
            );
        }
    }
}

fn run_program(program: &str, opts: &str) -> (Report, Output) {
    run_program_env(program, opts, &[])
}

fn run_program_env(program: &str, opts: &str, env: &[(&str, &str)]) -> (Report, Output) {
    run_program_in(classes(), program, opts, &[], env)
}

/// [`run_program_env`] with the classes at `cp` and JVM options `extra` (besides
/// -Xverify:all).
fn run_program_in(
    cp: &Path,
    program: &str,
    opts: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Report, Output) {
    let tag = env
        .iter()
        .map(|(k, _)| *k)
        .chain(extra.iter().copied())
        .collect::<Vec<_>>()
        .join("_")
        .replace([':', '=', '+'], "_");
    let dir = tmp(&format!(
        "{program}-{}{tag}",
        opts.replace([',', '=', '/', ':', '*'], "_")
    ));
    let file = dir.join("out.txt");
    let mut args = vec!["-Xverify:all"];
    args.extend_from_slice(extra);
    let o = java_env(
        cp,
        program,
        &format!("file={},cutoff=0,{opts}", file.display()),
        &args,
        env,
    );
    assert!(
        o.status.success(),
        "{program} ({opts}) failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{program}: no report: {e}"));
    (parse_report(&text), o)
}

fn check_program(program: &str, opts: &str) -> Report {
    check_program_env(program, opts, &[])
}

fn check_program_env(program: &str, opts: &str, env: &[(&str, &str)]) -> Report {
    check_program_in(classes(), program, program, opts, &[], env)
}

/// [`check_program_env`] of the program compiled into `cp` from test-classes/`source`.java,
/// with JVM options `extra`.
fn check_program_in(
    cp: &Path,
    source: &str,
    program: &str,
    opts: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Report {
    let (r, _) = run_program_in(cp, program, opts, extra, env);
    let (exp, paths) = expectations(source);
    let mut bad = Vec::new();
    for e in &exp {
        let got = r.count(&e.method);
        if got != e.count {
            bad.push(format!(
                "{}: expected count={} got {}",
                e.method, e.count, got
            ));
        }
    }
    for p in &paths {
        let got = r.path_count(&p.frames);
        if p.todo {
            eprintln!(
                "{program}: todo path {}: expected count={} got {got}",
                p.frames.join(" < "),
                p.count
            );
            continue;
        }
        if got != p.count {
            bad.push(format!(
                "path {}: expected count={} got {}",
                p.frames.join(" < "),
                p.count,
                got
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{program} ({opts} {extra:?}):\n{}",
        bad.join("\n")
    );
    r.check_invariants(program);
    r
}

/// test-classes/intrinsics/ compiled once (apart from test-classes/: its expectations name
/// JDK methods, which `bci instrument` does not count).
fn intrinsics_classes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = tmp("intrinsics-classes");
        let o = Command::new(jdk_tool("javac"))
            .arg("-g")
            .arg("-d")
            .arg(&out)
            .arg(repo().join("test-classes/intrinsics/Intrinsics.java"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "javac: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    })
}

const INTRINSICS_OPTS: &str =
    "include=Intrinsics:java.lang.Integer:java.lang.Math:java.lang.StrictMath";

/// HotSpot intrinsics (Integer.bitCount, Math.abs, Math.sqrt, Integer.reverseBytes, Math.addExact
/// overflowing, …) are counted exactly, with their call paths, at their call sites: with C2
/// (the loop runs 300,000 times), in the interpreter (which runs Math.sqrt through a special
/// entry, never its bytecode) and with C1 only. Before, their body probes missed the calls
/// C1/C2 made to the intrinsic (Math.abs, Integer.bitCount and reverseBytes 323,583 of
/// 2,000,000) and every call of Math.sqrt.
#[test]
fn intrinsics_counted_at_call_sites() {
    check_program_in(
        intrinsics_classes(),
        "intrinsics/Intrinsics",
        "Intrinsics",
        INTRINSICS_OPTS,
        &[],
        &[],
    );
}
#[test]
fn intrinsics_counted_at_call_sites_interpreted() {
    check_program_in(
        intrinsics_classes(),
        "intrinsics/Intrinsics",
        "Intrinsics",
        INTRINSICS_OPTS,
        &["-Xint"],
        &[],
    );
}
#[test]
fn intrinsics_counted_at_call_sites_c1() {
    check_program_in(
        intrinsics_classes(),
        "intrinsics/Intrinsics",
        "Intrinsics",
        INTRINSICS_OPTS,
        &["-XX:TieredStopAtLevel=1"],
        &[],
    );
}

const PROGRAMS: &[&str] = &[
    "Recursion",
    "Threads",
    "Exceptions",
    "Ctors",
    "CtorPaths",
    "StaticInit",
    "Interfaces",
    "Lambdas",
    "Enums",
    "Inner",
    "Sync",
];

#[test]
fn recursion() {
    let r = check_program("Recursion", "");
    // the built-in runtime exists from early VMStart: JDK classes loaded before VMInit count too
    assert!(r.text.contains("left original: 0."), "header");
    assert!(r.count("java.lang.String.hashCode") > 0);
    assert!(r.count("java.util.HashMap.put") > 0);
    // every class, java.lang.Object included
    assert!(r.count("java.lang.Object.<init>") > 0);
}
#[test]
fn threads() {
    check_program("Threads", "");
}
/// 8 threads x 10M calls of a leaf: exact per-thread counts at full speed.
#[test]
fn parallel_leaf() {
    check_program("ParallelLeaf", "");
}

/// The probes find a thread's state in a field the agent adds to java.lang.Thread: package-
/// private, transient and synthetic, so not among Thread's public fields. Without it
/// (BCIAGENT_NO_THREAD_FIELDS) the runtime build that looks threads up by hash gives the same
/// exact counts.
#[test]
fn thread_state_field_and_fallback() {
    let dir = tmp("thread-field");
    std::fs::write(
        dir.join("Field.java"),
        r#"
import java.lang.reflect.*;
public class Field {
    public static void main(String[] a) throws Exception {
        java.lang.reflect.Field f = Thread.class.getDeclaredField("bci$t");
        int m = f.getModifiers();
        System.out.println("type=" + f.getType().getName() + " transient=" + Modifier.isTransient(m)
            + " synthetic=" + f.isSynthetic() + " public=" + Modifier.isPublic(m)
            + " static=" + Modifier.isStatic(m));
        for (java.lang.reflect.Field g : Thread.class.getFields()) {
            if (g.getName().startsWith("bci")) System.out.println("public field " + g);
        }
    }
}
"#,
    )
    .unwrap();
    let o = Command::new(jdk_tool("javac"))
        .arg("-d")
        .arg(&dir)
        .arg(dir.join("Field.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.join("out.txt");
    let o = java(
        &dir,
        "Field",
        &format!("file={},verbose=y", out.display()),
        &[],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.trim(),
        "type=java.lang.BciProbes$T transient=true synthetic=true public=false static=false",
        "{stderr}"
    );
    assert!(!stderr.contains("no runtime fields"), "{stderr}");
    // without the field: the hash-lookup build, announced in the log, same exact counts
    let o = java_env(
        &dir,
        "Field",
        &format!("file={},verbose=y", out.display()),
        &[],
        &[("BCIAGENT_NO_THREAD_FIELDS", "1")],
    );
    assert!(!o.status.success(), "Thread has no bci$t field now");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("java/lang/Thread has no runtime fields"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    check_program_env("Threads", "", &[("BCIAGENT_NO_THREAD_FIELDS", "1")]);
    check_program_env("Exceptions", "", &[("BCIAGENT_NO_THREAD_FIELDS", "1")]);
}
#[test]
fn exceptions() {
    check_program("Exceptions", "");
}
#[test]
fn constructors() {
    check_program("Ctors", "");
}
/// A constructor's frame is entered before its super() call: the superclass constructor and
/// the super() argument's code are its callees; a super() that throws leaves no frame above
/// the caller's handler.
#[test]
fn constructor_call_paths() {
    check_program("CtorPaths", "");
}
#[test]
fn static_initializers() {
    check_program("StaticInit", "");
}
#[test]
fn interfaces() {
    check_program("Interfaces", "");
}
#[test]
fn lambdas() {
    check_program("Lambdas", "");
}
#[test]
fn enums() {
    check_program("Enums", "");
}
#[test]
fn inner_classes() {
    check_program("Inner", "");
}
#[test]
fn synchronized_methods() {
    check_program("Sync", "");
}

#[test]
fn fib_micro_counts() {
    check_program("Fib", "");
}

/// Per-method counts do not depend on the trace depth (or on the clock).
#[test]
fn counts_same_for_depth_1_and_8_and_clocks() {
    for program in ["Recursion", "Exceptions", "Threads"] {
        let prefix = [
            format!("{program}.").leak() as &str,
            format!("{program}$").leak() as &str,
        ];
        let base = run_program(program, "depth=4").0.per_method_counts(&prefix);
        assert!(!base.is_empty());
        for opts in ["depth=1", "depth=8", "clock=wall", "clock=cpu,depth=2"] {
            let r = run_program(program, opts).0;
            r.check_invariants(&format!("{program} {opts}"));
            assert_eq!(r.per_method_counts(&prefix), base, "{program} with {opts}");
        }
    }
}

#[test]
fn thread_split_and_header() {
    let (r, _) = run_program("Threads", "thread=y,clock=wall");
    assert!(r.text.contains("clock=wall"), "header names the clock");
    assert!(r.text.contains("THREAD START"), "thread records");
    assert!(r
        .text
        .lines()
        .any(|l| l.starts_with("TRACE ") && l.contains("(thread=")));
    // leaf is split over 8 threads: 8 traces of leaf<work<lambda, 20000 each
    let per: Vec<u64> = r
        .traces
        .iter()
        .filter(|(f, _)| f.first().map(String::as_str) == Some("Threads.leaf"))
        .map(|(_, c)| *c)
        .collect();
    assert_eq!(per.len(), 8, "{per:?}");
    assert!(per.iter().all(|c| *c == 20000), "{per:?}");
    assert_eq!(r.count("Threads.leaf"), 160000);
}

#[test]
fn collapsed_and_methods_formats() {
    let dir = tmp("formats");
    let f = dir.join("c.txt");
    let o = java(
        classes(),
        "Recursion",
        &format!("file={},format=collapsed,clock=wall", f.display()),
        &[],
    );
    assert!(o.status.success());
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("Recursion.main;Recursion.fib")),
        "{text}"
    );
    for l in text.lines() {
        let (stack, w) = l.rsplit_once(' ').unwrap();
        assert!(!stack.is_empty());
        w.parse::<u64>().unwrap();
    }
    let f = dir.join("m.txt");
    let o = java(
        classes(),
        "Recursion",
        &format!("file={},format=methods", f.display()),
        &[],
    );
    assert!(o.status.success());
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.starts_with("METHODS BEGIN"), "{text}");
    assert_eq!(parse_report(&text).count("Recursion.fib"), 218910);
}

/// One class file loaded by two class loaders (a web application redeployed), calls in both:
/// one row per method, the counts summed, in every format (before, two identical rows, 101
/// and 100 of doGet, found by the server hunt).
#[test]
fn a_class_loaded_by_two_loaders_gives_one_row_per_method() {
    let dir = tmp("two-loaders");
    let (app, main) = (dir.join("app"), dir.join("main"));
    let src = |name: &str, text: &str| {
        let f = dir.join(format!("{name}.java"));
        std::fs::write(&f, text).unwrap();
        f
    };
    for (out, file) in [
        (
            &app,
            src(
                "Work",
                "public class Work {\n\
                 static int leaf(int i) { return i * 3; }\n\
                 public static int run(int n) { int s = 0; for (int i = 0; i < n; i++) s += leaf(i); return s; }\n\
                 }\n",
            ),
        ),
        (
            &main,
            src(
                "TwoLoaders",
                "import java.net.*;\n\
                 public class TwoLoaders {\n\
                 public static void main(String[] a) throws Exception {\n\
                 URL[] u = { new java.io.File(System.getProperty(\"app\")).toURI().toURL() };\n\
                 for (int n : new int[] { 101, 100 }) {\n\
                 ClassLoader l = new URLClassLoader(u, ClassLoader.getPlatformClassLoader());\n\
                 l.loadClass(\"Work\").getMethod(\"run\", int.class).invoke(null, n);\n\
                 }\n}\n}\n",
            ),
        ),
    ] {
        let o = Command::new(jdk_tool("javac"))
            .arg("-g")
            .arg("-d")
            .arg(out)
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let app_dir = format!("-Dapp={}/", app.display());
    // (hprof: every TRACE row, whatever its time)
    for (format, more, leaf) in [
        ("methods", "", " Work.leaf(I)I\n"),
        ("hprof", ",cutoff=0", " Work.leaf\n"),
        ("collapsed", "", "Work.run;Work.leaf "),
    ] {
        let f = dir.join(format!("{format}.txt"));
        let o = java(
            &main,
            "TwoLoaders",
            &format!("file={},format={format},clock=wall{more}", f.display()),
            &[&app_dir],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(&f).unwrap();
        assert_eq!(text.matches(leaf).count(), 1, "{format}:\n{text}");
        if format == "methods" {
            assert_eq!(parse_report(&text).count("Work.leaf"), 201, "{text}");
            assert_eq!(parse_report(&text).count("Work.run"), 2, "{text}");
        }
    }
}

fn stderr_of(opts: &str) -> (bool, String) {
    let o = java(classes(), "Recursion", opts, &[]);
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bad_options_stop_the_jvm() {
    let trace = tmp("trace-only").join("t.jsonl");
    let rules = format!("rules={},tracefile={}", trace_only_rules(), trace.display());
    let trace_depth = format!("{rules},depth=8");
    let trace_lineno = format!("lineno=n,{rules}");
    let trace_methods = format!("{rules},format=methods");
    for (opts, needles) in [
        ("depht=3", &["unknown option 'depht'", "depth"][..]),
        ("clock=sundial", &["clock", "sample, wall, cpu"][..]),
        ("cpu=samples", &["cpu", "times"][..]),
        ("depth=zero", &["depth", "integer"][..]),
        ("doe=maybe", &["doe", "y, n"][..]),
        ("format=xml", &["format", "hprof, collapsed, methods"][..]),
        // a repeated option won silently, the first one ignored
        (
            "cpu=times,clock=sample,clock=wall",
            &["option clock given twice (clock=sample and clock=wall)"][..],
        ),
        // a glob this matcher does not have would profile nothing (it was accepted without
        // coverage=y, and the run profiled nothing)
        (
            "include=Rec[u]rsion",
            &["include/exclude 'Rec[u]rsion'", "'['"][..],
        ),
        (
            "exclude=java.{util}.*",
            &["include/exclude 'java.{util}.*'", "'{'"][..],
        ),
        // nor does a glob with an empty package level or a control character
        (
            "include=com..acme.*",
            &["include/exclude 'com..acme.*'", "an empty package level"][..],
        ),
        (
            "coverage=y,exclude=a\tb",
            &["include/exclude 'a\tb'", "control character U+0009"][..],
        ),
        // options this run would ignore (accepted silently before)
        (
            "cpu=times,clock=wall,interval=5",
            &["interval=5 is the sampling interval of clock=sample"][..],
        ),
        (
            "coverage=y,depth=8",
            &["depth=8 shapes the cpu=times profile"][..],
        ),
        ("help=x", &["option help takes no value (help=x)"][..]),
        // a rules file with tracing rules only writes no profile: depth= shaped nothing
        (
            trace_depth.as_str(),
            &[
                "depth=8 shapes the cpu=times profile",
                "has tracing rules only",
            ][..],
        ),
        (
            trace_lineno.as_str(),
            &["lineno=n shapes the cpu=times profile"][..],
        ),
        (
            trace_methods.as_str(),
            &["format=methods shapes the cpu=times profile"][..],
        ),
    ] {
        let (ok, err) = stderr_of(opts);
        assert!(!ok, "{opts} should stop the JVM");
        for n in needles {
            assert!(err.contains(n), "{opts}: stderr lacks {n:?}: {err}");
        }
    }
    // with cpu=times the profile runs next to the tracing rules: depth= shapes it
    let (ok, err) = stderr_of(&format!("cpu=times,depth=8,{rules}"));
    assert!(ok, "{err}");
}

/// The shipped example rules file, which has one tracing rule and no probe rule.
fn trace_only_rules() -> String {
    format!(
        "{}/../rules/examples/hashmap-resize.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn bad_rules_file_names_line_and_column() {
    let dir = tmp("rules");
    let rules = dir.join("bad.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nclass = \"java.*\"\nprobes = [\"enter\"\n",
    )
    .unwrap();
    let (ok, err) = stderr_of(&format!("rules={}", rules.display()));
    assert!(!ok, "bad rules must stop the JVM");
    let needle = format!("{}:", rules.display());
    let line = err
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no file:line:col in {err}"));
    let rest = &line[line.find(&needle).unwrap() + needle.len()..];
    let mut it = rest.split(':');
    it.next()
        .unwrap()
        .trim()
        .parse::<u32>()
        .unwrap_or_else(|_| panic!("no line in {line}"));
    it.next()
        .unwrap()
        .trim()
        .parse::<u32>()
        .unwrap_or_else(|_| panic!("no column in {line}"));
    let (ok, err) = stderr_of(&format!("rules={}", dir.join("missing.toml").display()));
    assert!(!ok && err.contains("missing.toml"), "{err}");
    // a file that is not UTF-8: the first bad byte's position (it said only "stream did not
    // contain valid UTF-8"; found by the hostile-inputs hunt Z, F3)
    let utf = dir.join("utf.toml");
    std::fs::write(
        &utf,
        b"[[rule]]\nname=\"a\"\nclass=\"X\"\ncount=true\nmethod=\"f\xff\"\n",
    )
    .unwrap();
    let (ok, err) = stderr_of(&format!("rules={}", utf.display()));
    let want = format!("{}:5:10: not UTF-8: byte 0xFF", utf.display());
    assert!(!ok && err.contains(&want), "{want} in {err}");
}

/// A method whose code is just under 64 KiB cannot take the probes: that method stays
/// original (the log and the report header name it, with the reason), the class's other
/// methods are counted (the whole class was left original, and the header said 0), the
/// program runs.
#[test]
fn oversized_method_left_original_others_counted() {
    let dir = tmp("big");
    let mut src = String::from("public class Big {\n  static int big(int x) {\n");
    // each statement: iload_0 sipush imul sipush iadd istore_0 = 10 bytes; 6553 of them and
    // iload_0 ireturn make 65532 bytes of code, 3 below the limit
    for i in 0..6553 {
        src.push_str(&format!(
            "    x = x * {} + {};\n",
            1000 + i % 1000,
            2000 + i % 1000
        ));
    }
    src.push_str("    return x;\n  }\n  static int small(int x) { return x + 1; }\n  public static void main(String[] a) {\n    int s = 0;\n    for (int i = 0; i < 5; i++) s += small(i);\n    System.out.println(\"big \" + big(s));\n  }\n}\n");
    std::fs::write(dir.join("Big.java"), src).unwrap();
    let o = Command::new(jdk_tool("javac"))
        .arg("-d")
        .arg(&dir)
        .arg(dir.join("Big.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = dir.join("out.txt");
    let o = java(&dir, "Big", &format!("file={}", f.display()), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("big "));
    assert!(
        err.lines()
            .any(|l| l.contains("Big") && l.contains("left original")),
        "{err}"
    );
    let r = parse_report(&std::fs::read_to_string(&f).unwrap());
    assert_eq!(r.count("Big.big"), 0);
    assert_eq!(r.count("Big.small"), 5);
    assert_eq!(r.count("Big.main"), 1);
    assert!(
        r.text
            .contains("Could not be instrumented and so left original: 0 classes, 1 methods:\n  method Big.big(I)I"),
        "{}",
        r.text
    );
}

/// doe=n: nothing at exit; a SIGQUIT (DataDumpRequest) writes the profile while running.
#[test]
fn sigquit_dumps() {
    let dir = tmp("quit");
    std::fs::write(
        dir.join("Quit.java"),
        r#"
public class Quit {
    static int f(int x) { return x + 1; }
    public static void main(String[] a) throws Exception {
        int s = 0;
        for (int i = 0; i < 777; i++) s += f(i);
        long pid = ProcessHandle.current().pid();
        new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
        java.nio.file.Path p = java.nio.file.Path.of(a[0]);
        for (int i = 0; i < 100 && !(java.nio.file.Files.exists(p) && java.nio.file.Files.readString(p).contains("METHODS END")); i++) Thread.sleep(50);
        System.out.println("quit " + s);
    }
}
"#,
    )
    .unwrap();
    let o = Command::new(jdk_tool("javac"))
        .arg("-d")
        .arg(&dir)
        .arg(dir.join("Quit.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = dir.join("out.txt");
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg(format!(
        "-agentpath:{}=file={},doe=n",
        agent_lib().display(),
        f.display()
    ))
    .arg("-cp")
    .arg(&dir)
    .arg("Quit")
    .arg(&f);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = parse_report(&std::fs::read_to_string(&f).unwrap());
    assert_eq!(r.count("Quit.f"), 777);
    assert!(r.text.contains("CPU TIME (ms) END"));
}

/// The runtime on its own: hand-written probe calls (no rewriter involved).
#[test]
fn hand_written_probes() {
    let dir = tmp("hand");
    let src = repo().join("test-classes/hand");
    let probes = repo().join("agent/java/bci/runtime/Probes.java");
    std::fs::write(
        dir.join("Hand.java"),
        r#"
import bci.runtime.Probes;
public class Hand {
    static int fib(int n) {
        Probes.enter(1);
        try { int r = n < 2 ? n : fib(n - 1) + fib(n - 2); Probes.exit(1); return r; }
        catch (Throwable t) { Probes.unwind(1); throw t; }
    }
    static void thrower(int d) {
        Probes.enter(2);
        try { if (d == 0) throw new RuntimeException(); thrower(d - 1); Probes.exit(2); }
        catch (Throwable t) { Probes.unwind(2); throw t; }
    }
    public static void main(String[] a) {
        for (int i = 0; i < 3; i++) fib(15);
        for (int i = 0; i < 10; i++) { try { thrower(3); } catch (RuntimeException e) { } }
        fib(1);
    }
}
"#,
    )
    .unwrap();
    let _ = src;
    let o = Command::new(jdk_tool("javac"))
        .args([
            "--add-exports",
            "java.base/jdk.internal.vm.annotation=ALL-UNNAMED",
        ])
        .arg("-d")
        .arg(&dir)
        .arg(dir.join("Hand.java"))
        .arg(&probes)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(dir.join("bci")).unwrap();
    let f = dir.join("out.txt");
    // rules naming the VMInit runtime bci/runtime/Probes and selecting no class: only the
    // hand-written probes record
    let rules = dir.join("none.toml");
    std::fs::write(
        &rules,
        "[runtime]\nclass = \"bci/runtime/Probes\"\n\n[[rule]]\nclasses = [\"NoSuchClass\"]\nprobes = [\"enter\"]\n",
    )
    .unwrap();
    let o = java(
        &dir,
        "Hand",
        &format!("file={},cutoff=0,rules={}", f.display(), rules.display()),
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = parse_report(&std::fs::read_to_string(&f).unwrap());
    assert_eq!(r.count("unknown.m1"), 3 * 1973 + 1);
    assert_eq!(r.count("unknown.m2"), 40);
    // after the exceptions the stack is empty again: fib(1) is a root path
    assert_eq!(r.exact_trace_count(&["unknown.m1"]), 3 + 1);
    r.check_invariants("hand");
    let _ = PROGRAMS;
}

/// Transparency: javac (every class it loads after VMInit instrumented, JDK included, with
/// -Xverify:all) compiles six java/util sources from the JDK's src.zip (Debian package
/// openjdk-17-source, see agent/ci-packages.txt) to byte-identical class files, and the report
/// names javac's methods with the counts the compilation implies.
#[test]
fn javac_output_identical_under_agent() {
    let java_home = jdk_tool("java")
        .parent()
        .and_then(|p| p.parent())
        .map(Path::to_path_buf)
        .unwrap();
    let src_zip = java_home.join("lib/src.zip");
    assert!(
        src_zip.exists(),
        "{} missing: install openjdk-17-source",
        src_zip.display()
    );
    let dir = tmp("javac");
    let files = [
        "ArrayList",
        "HashMap",
        "TreeMap",
        "LinkedList",
        "ArrayDeque",
        "Collections",
    ];
    let mut unzip = Command::new("unzip");
    unzip.arg("-q").arg(&src_zip);
    for f in files {
        unzip.arg(format!("java.base/java/util/{f}.java"));
    }
    let o = unzip.current_dir(&dir).output().unwrap();
    assert!(
        o.status.success(),
        "unzip: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let compile = |out: &str, agent: Option<&Path>| {
        let out = dir.join(out);
        std::fs::create_dir_all(&out).unwrap();
        let mut cmd = Command::new(jdk_tool("javac"));
        if let Some(report) = agent {
            cmd.arg("-J-Xverify:all");
            cmd.arg(format!(
                "-J-agentpath:{}=file={},cutoff=0",
                agent_lib().display(),
                report.display()
            ));
        }
        cmd.args(["-nowarn", "--patch-module"])
            .arg(format!("java.base={}", dir.join("java.base").display()));
        cmd.arg("-d").arg(&out);
        for f in files {
            cmd.arg(dir.join(format!("java.base/java/util/{f}.java")));
        }
        let o = cmd.output().unwrap();
        assert!(
            o.status.success(),
            "javac: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!String::from_utf8_lossy(&o.stderr).contains("VerifyError"));
        out
    };
    let bare = compile("bare", None);
    let report = dir.join("javac.txt");
    let inst = compile("inst", Some(&report));
    let mut classes = Vec::new();
    for e in std::fs::read_dir(bare.join("java/util")).unwrap() {
        classes.push(e.unwrap().file_name());
    }
    classes.sort();
    assert!(classes.len() > 50, "{} classes", classes.len());
    for c in &classes {
        let a = std::fs::read(bare.join("java/util").join(c)).unwrap();
        let b = std::fs::read(inst.join("java/util").join(c)).unwrap_or_default();
        assert!(a == b, "{c:?} differs under the agent");
    }
    assert_eq!(
        std::fs::read_dir(inst.join("java/util")).unwrap().count(),
        classes.len()
    );
    let r = parse_report(&std::fs::read_to_string(&report).unwrap());
    assert_eq!(
        r.count("com.sun.tools.javac.parser.JavacParser.parseCompilationUnit"),
        files.len() as u64
    );
    assert_eq!(
        r.count("com.sun.tools.javac.jvm.ClassWriter.writeClass"),
        classes.len() as u64
    );
    assert_eq!(r.count("com.sun.tools.javac.main.JavaCompiler.compile"), 1);
    // (every report ended with "# 1 probe exits did not match the shadow stack": the Reference
    // Handler and Common-Cleaner threads returning from methods entered before recording)
    assert!(
        !r.text.contains("did not match the shadow stack"),
        "mismatched probe exits in javac's report"
    );
    r.check_invariants("javac");
}

/// A named module defined after VMInit (a new ModuleLayer) can call the runtime: the hook
/// adds its read edge before its classes load.
#[test]
fn module_layer_defined_later() {
    let dir = tmp("layer");
    let m = dir.join("src/m.lib/lib");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(
        dir.join("src/m.lib/module-info.java"),
        "module m.lib { exports lib; }\n",
    )
    .unwrap();
    std::fs::write(
        m.join("Lib.java"),
        "package lib;\npublic class Lib {\n    public static int f(int x) { return g(x) + 1; }\n    static int g(int x) { return x * 2; }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("Layer.java"),
        r#"
import java.lang.module.*;
import java.nio.file.*;
import java.util.*;
public class Layer {
    public static void main(String[] a) throws Exception {
        Configuration cf = ModuleLayer.boot().configuration().resolve(ModuleFinder.of(Path.of(a[0])), ModuleFinder.of(), Set.of("m.lib"));
        ModuleLayer layer = ModuleLayer.boot().defineModulesWithOneLoader(cf, ClassLoader.getSystemClassLoader());
        Class<?> c = layer.findLoader("m.lib").loadClass("lib.Lib");
        int s = 0;
        for (int i = 0; i < 10; i++) s += (int) c.getMethod("f", int.class).invoke(null, i);
        System.out.println("layer " + s + " " + c.getModule());
    }
}
"#,
    )
    .unwrap();
    let javac = |args: &[&str]| {
        let o = Command::new(jdk_tool("javac"))
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    javac(&[
        "-d",
        "mods/m.lib",
        "src/m.lib/module-info.java",
        "src/m.lib/lib/Lib.java",
    ]);
    javac(&["-d", "app", "Layer.java"]);
    let f = dir.join("out.txt");
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg(format!(
        "-agentpath:{}=file={},cutoff=0",
        agent_lib().display(),
        f.display()
    ))
    .args(["-Xverify:all", "-cp"])
    .arg(dir.join("app"))
    .arg("Layer")
    .arg(dir.join("mods"));
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("layer 100 module m.lib"));
    let r = parse_report(&std::fs::read_to_string(&f).unwrap());
    assert_eq!(r.count("lib.Lib.f"), 10);
    assert_eq!(r.count("lib.Lib.g"), 10);
}

/// A rule file (rules=) selecting one class, with the `timer` probe too: the runtime provides
/// now()J/timed(IJ)V and the report gets a TIMER block; other classes stay original.
#[test]
fn rules_file_with_timer_probe() {
    let dir = tmp("timer");
    let rules = dir.join("r.toml");
    std::fs::write(
        &rules,
        "[runtime]\nclass = \"bci/runtime/Probes\"\n\n[[rule]]\nname = \"rec\"\nclasses = [\"Recursion\"]\nmethods = [\"*\"]\nprobes = [\"enter\", \"exit\", \"unwind\", \"timer\"]\n",
    )
    .unwrap();
    let f = dir.join("out.txt");
    let o = java(
        classes(),
        "Recursion",
        &format!("file={},cutoff=0,rules={}", f.display(), rules.display()),
        &["-Xverify:all"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&f).unwrap();
    let r = parse_report(&text);
    assert_eq!(r.count("Recursion.fib"), 218910);
    assert!(
        r.methods.iter().all(|m| m.key.starts_with("Recursion.")),
        "only Recursion is selected"
    );
    let timer: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("TIMER BEGIN"))
        .take_while(|l| !l.starts_with("TIMER END"))
        .collect();
    let fib = timer
        .iter()
        .find(|l| l.ends_with("Recursion.fib(I)I"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(fib.split_whitespace().next().unwrap(), "218910");
}

/// A pure leaf gets no shadow frame (leafEnter/leafExit), yet clock=sample charges its CPU
/// time to it: most of LeafTime's time is in `spin`, little is `main`'s own.
#[test]
fn leaf_time_sampled() {
    let r = check_program("LeafTime", "");
    let row = |m: &str| {
        r.methods
            .iter()
            .find(|row| row.key.starts_with(&format!("{m}(")))
            .cloned()
            .unwrap_or_else(|| panic!("{m} missing"))
    };
    let (spin, main) = (row("LeafTime.spin"), row("LeafTime.main"));
    assert!(
        spin.self_ms > 0.5 * r.cpu_total_ms as f64 && spin.self_ms > 4.0 * main.self_ms,
        "spin {spin:?} main {main:?} total {} ms",
        r.cpu_total_ms
    );
    assert!(main.total_ms >= spin.total_ms, "{main:?} {spin:?}");
}

/// Leaf probes and frame tokens change nothing in the counts: every program's own methods and
/// call paths are the same with frames checked by method id (BCIAGENT_NO_FRAME_TOKENS) and
/// with plain enter/exit probes everywhere (BCIAGENT_NO_LEAF_PROBES as well), but for
/// constructors (entered before their super()/this() call only with tokens).
#[test]
fn leaf_probes_and_frame_tokens_same_counts_and_paths() {
    for program in ["Recursion", "Threads", "Exceptions", "Ctors", "Fib"] {
        let own = |f: &String| {
            f.starts_with(&format!("{program}.")) || f.starts_with(&format!("{program}$"))
        };
        let paths = |r: &Report| {
            let mut v: Vec<(Vec<String>, u64)> = r
                .traces
                .iter()
                .filter(|(f, _)| f.iter().all(own))
                .cloned()
                .collect();
            v.sort();
            v
        };
        let prefix = [
            format!("{program}.").leak() as &str,
            format!("{program}$").leak() as &str,
        ];
        let leaf = run_program(program, "").0;
        let no_tokens = ("BCIAGENT_NO_FRAME_TOKENS", "1");
        let by_id = run_program_env(program, "", &[no_tokens]).0;
        let plain = run_program_env(program, "", &[("BCIAGENT_NO_LEAF_PROBES", "1"), no_tokens]).0;
        assert!(!paths(&leaf).is_empty(), "{program}");
        if program == "Ctors" {
            // With tokens a constructor's frame is entered before its super()/this() call,
            // without them right after it: the paths under constructors differ (CtorPaths
            // checks the token form's), and so does the count of a constructor whose super()
            // argument threw (entered only with tokens). The two forms without tokens are the
            // same; the token form's other methods have their counts.
            let others = |r: &Report| {
                let mut m = r.per_method_counts(&prefix);
                m.retain(|k, _| !k.contains(".<init>("));
                m
            };
            assert_eq!(paths(&by_id), paths(&plain), "{program}");
            assert_eq!(
                by_id.per_method_counts(&prefix),
                plain.per_method_counts(&prefix),
                "{program}"
            );
            assert_eq!(others(&leaf), others(&by_id), "{program}");
            continue;
        }
        for (name, other) in [("by id", &by_id), ("plain", &plain)] {
            assert_eq!(paths(&leaf), paths(other), "{program} {name}");
            assert_eq!(
                leaf.per_method_counts(&prefix),
                other.per_method_counts(&prefix),
                "{program} {name}"
            );
        }
    }
}

/// Many call paths (more than the per-thread direct-mapped cache holds at first): entries are
/// replaced and the cache grows while calls are counted in it; every count stays exact.
#[test]
fn many_paths_exact_counts() {
    let dir = tmp("many-paths");
    const N: usize = 600;
    const R: u64 = 300;
    let mut src = String::from("public class Many {\n");
    for k in 0..N {
        src += &format!("    static int m{k}(int x) {{ return x * 31 + {k}; }}\n");
        src += &format!("    static int n{k}(int x) {{ return m{k}(x) + 1; }}\n");
    }
    src += "    public static void main(String[] a) {\n        int acc = 0;\n";
    src += &format!("        for (int r = 0; r < {R}; r++) {{\n");
    for k in 0..N {
        src += &format!("            acc = n{k}(acc);\n");
        if k % 3 == 0 {
            src += &format!("            acc = m{k}(acc);\n");
        }
    }
    src += "        }\n        System.out.println(acc);\n    }\n}\n";
    std::fs::write(dir.join("Many.java"), src).unwrap();
    let o = Command::new(jdk_tool("javac"))
        .arg("-d")
        .arg(&dir)
        .arg(dir.join("Many.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = dir.join("out.txt");
    let o = java(
        &dir,
        "Many",
        &format!("file={},cutoff=0,verbose=y", f.display()),
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = parse_report(&std::fs::read_to_string(&f).unwrap());
    r.check_invariants("many");
    for k in 0..N {
        let (m, n) = (format!("Many.m{k}"), format!("Many.n{k}"));
        assert_eq!(r.count(&n), R, "{n}");
        let direct = if k % 3 == 0 { R } else { 0 };
        assert_eq!(r.count(&m), R + direct, "{m}");
        assert_eq!(r.exact_trace_count(&[&m, &n, "Many.main"]), R, "{m} < {n}");
        assert_eq!(
            r.exact_trace_count(&[&m, "Many.main"]),
            direct,
            "{m} < main"
        );
    }
    // the run really went through the cache's slow path (entries replaced)
    let stderr = String::from_utf8_lossy(&o.stderr);
    let off: u64 = stderr
        .lines()
        .find_map(|l| l.split(" calls (").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no call statistics in {stderr}"));
    assert!(off > 65_536, "only {off} calls off the inlined path");
}

/// A runtime that cannot link (here: the build that reads Thread.bci$t defined although Thread
/// has no such field, BCIAGENT_TEST_WRONG_BUILD) fails its self-test when the agent switches it
/// on: the log says so and the program runs to its end without recording. Without the
/// self-test every probe threw and the JVM aborted.
#[test]
fn runtime_that_cannot_link_stays_off() {
    let dir = tmp("wrong-build");
    let f = dir.join("out.txt");
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg(format!(
        "-agentpath:{}=file={}",
        agent_lib().display(),
        f.display()
    ))
    .arg("-cp")
    .arg(classes())
    .arg("Recursion")
    .env("BCIAGENT_NO_THREAD_FIELDS", "1")
    .env("BCIAGENT_TEST_WRONG_BUILD", "1")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the JVM did not end within 120 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot switch the runtime on") && stderr.contains("NoSuchFieldError"),
        "{stderr}"
    );
    // the program's own output is complete
    let bare = Command::new(jdk_tool("java"))
        .arg("-cp")
        .arg(classes())
        .arg("Recursion")
        .output()
        .unwrap();
    assert_eq!(o.stdout, bare.stdout);
}

/// verbose=y counts the classes the rules do not select and the time the class-load hook spends
/// on them (the issue-13 budget is 1 us a class: a benchmark figure, printed, not asserted).
#[test]
fn hook_cost_of_unselected_classes_is_reported() {
    let dir = tmp("hook-cost");
    let f = dir.join("out.txt");
    let o = java(
        classes(),
        "Fib",
        &format!("file={},include=Fib,verbose=y", f.display()),
        &[],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("class-load hook: "))
        .unwrap_or_else(|| panic!("no hook line in: {stderr}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    let (n, ns) = (nums[0], nums[1]);
    // every JDK class the program loads after the runtime is up goes through the hook
    assert!(n >= 100, "{line}");
    assert!(ns > 0, "{line}");
    eprintln!("{line}");
    let r = std::fs::read_to_string(&f).unwrap();
    assert!(r.contains("Fib.fib"), "{r}");
    assert!(!r.contains("java.lang.String."), "{r}");
}

/// total(ms) of the METHODS row whose method starts with `m` (e.g. `InFlight.spin(`).
fn methods_total_ms(text: &str, m: &str) -> Option<f64> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() == 7 && w[6].starts_with(m))
        .map(|w| w[5].parse().unwrap())
}

/// Writes `<class>.java` with `src` into `dir` and compiles it there.
fn compile_source(dir: &Path, class: &str, src: &str) {
    let file = dir.join(format!("{class}.java"));
    std::fs::write(&file, src).unwrap();
    let o = Command::new(jdk_tool("javac"))
        .arg("-d")
        .arg(dir)
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Timed clocks: a SIGQUIT snapshot charges the frames still on the stack up to the dump (as
/// clock=sample does), without changing the thread's state: the exit dump charges the
/// method's time once. (Before: the snapshot had no line for the spinning method at all.)
#[test]
fn timed_clocks_snapshot_charges_open_frames() {
    let dir = tmp("inflight-quit");
    compile_source(
        &dir,
        "InFlight",
        r#"
import java.nio.file.*;
public class InFlight {
    static long spin(String f) throws Exception {
        long t0 = System.nanoTime(), x = 0;
        while (System.nanoTime() - t0 < 1_200_000_000L) x++;
        long pid = ProcessHandle.current().pid();
        new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
        Path p = Path.of(f);
        for (int i = 0; i < 200 && !(Files.exists(p) && Files.size(p) > 0); i++) Thread.sleep(50);
        Thread.sleep(200);
        while (System.nanoTime() - t0 < 2_000_000_000L) x++;
        return x;
    }
    public static void main(String[] a) throws Exception {
        System.out.println("spun " + (spin(System.getProperty("out")) > 0));
    }
}
"#,
    );
    for clock in ["wall", "cpu"] {
        let f = dir.join(format!("{clock}.txt"));
        let o = java(
            &dir,
            "InFlight",
            &format!("file={},format=methods,clock={clock}", f.display()),
            &[&format!("-Dout={}", f.display())],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // methods: the exit dump is appended to the SIGQUIT one
        let text = std::fs::read_to_string(&f).unwrap();
        let parts: Vec<&str> = text.split("METHODS BEGIN").skip(1).collect();
        assert_eq!(parts.len(), 2, "clock={clock}: two dumps: {text}");
        let (snap, last) = (parts[0], parts[1]);
        let s = methods_total_ms(snap, "InFlight.spin(").unwrap_or(0.0);
        let m = methods_total_ms(snap, "InFlight.main(").unwrap_or(0.0);
        // (clock=cpu: the CPU time the spinning thread got, which a busy machine can make
        // much less than the 1.2 s of wall time it spun: only more than none)
        let least = if clock == "wall" { 1000.0 } else { 0.001 };
        assert!(
            s >= least,
            "clock={clock}: snapshot lacks spin's time so far: {snap}"
        );
        assert!(
            m >= s,
            "clock={clock}: main's total includes spin's: {snap}"
        );
        // the exit dump: spin's whole time, once (not its in-flight part a second time)
        // (clock=cpu: less than the 2 s of wall time, spin waits for the dump in sleeps)
        let e = methods_total_ms(last, "InFlight.spin(").unwrap_or(0.0);
        let low = if clock == "wall" { 1900.0 } else { s };
        assert!(
            (low..2700.0).contains(&e),
            "clock={clock}: spin's total at exit {e} ms: {last}"
        );
    }
    // the same with format=collapsed: the snapshot has spin's call path with its time so far
    let f = dir.join("c.txt");
    let o = java(
        &dir,
        "InFlight",
        &format!("file={},format=collapsed,clock=wall", f.display()),
        &[&format!("-Dout={}.1", f.display())],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let snap = std::fs::read_to_string(dir.join("c.txt.1")).unwrap();
    let w: u64 = snap
        .lines()
        .find_map(|l| l.strip_prefix("InFlight.main;InFlight.spin "))
        .unwrap_or_else(|| panic!("no spin line in the snapshot: {snap:?}"))
        .parse()
        .unwrap();
    assert!(w >= 1_000_000, "{snap}");
}

/// Timed clocks: System.exit from deep frames charges the frames still open at the exit dump
/// (HPROF charged a thread's open frames when it ended). Before: main and deep showed 0 ms.
#[test]
fn timed_clocks_exit_charges_open_frames() {
    let dir = tmp("inflight-exit");
    let o = Command::new(jdk_tool("javac"))
        .arg("-d")
        .arg(&dir)
        .arg(repo().join("test-classes/timed/DeepExit.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for clock in ["wall", "cpu"] {
        let f = dir.join(format!("{clock}.txt"));
        let o = java(
            &dir,
            "DeepExit",
            &format!("file={},format=methods,clock={clock}", f.display()),
            &[],
        );
        assert_eq!(
            o.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let t = std::fs::read_to_string(&f).unwrap();
        let m = methods_total_ms(&t, "DeepExit.main(").unwrap_or(0.0);
        let d = methods_total_ms(&t, "DeepExit.deep(").unwrap_or(0.0);
        let sp = methods_total_ms(&t, "DeepExit.spin(").unwrap_or(0.0);
        // main's total holds spin's (both calls), deep's at least a part of it
        assert!(
            sp > if clock == "wall" { 500.0 } else { 0.0 } && m >= sp - 0.01,
            "clock={clock}: main {m} ms: {t}"
        );
        assert!(d > 0.0 && d <= m + 0.001, "clock={clock}: deep {d} ms: {t}");
        if clock == "wall" {
            // about the run's length (CPU time can be less on a busy machine)
            assert!(
                (550.0..3000.0).contains(&m),
                "clock={clock}: main {m} ms: {t}"
            );
            assert!(d >= 250.0, "clock={clock}: deep {d} ms: {t}");
        }
    }
}

/// What `bci instrument` does with its built-in rules (cli/src/main.rs): every class of `from`
/// into `to`, method ids handed out at run time by bci/runtime/Offline; the runtime jar's
/// classes (`bci runtime-jar`) into `rt`.
fn instrument_offline(from: &Path, to: &Path, rt: &Path) {
    use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};
    std::fs::create_dir_all(to).unwrap();
    let opts = Options {
        marker: true,
        runtime_ids: true,
        leaf_probes: true,
        frame_tokens: true,
        ..Default::default()
    };
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "class") {
            let bytes = std::fs::read(&p).unwrap();
            let out =
                match instrument_with(&bytes, &Rules::cpu_times(), &mut SequentialIds(0), &opts)
                    .unwrap()
                {
                    Outcome::Rewritten(b) => b,
                    Outcome::Unchanged => bytes,
                };
            std::fs::write(to.join(p.file_name().unwrap()), out).unwrap();
        }
    }
    for (path, bytes) in bciagent::runtime_jar::CLASSES {
        let f = rt.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, bytes).unwrap();
    }
}

/// test-classes/timed/DeepExit.java instrumented offline in `dir`: (classes, runtime).
fn deep_exit_offline(dir: &Path) -> (PathBuf, PathBuf) {
    let classes = dir.join("classes");
    let o = Command::new(jdk_tool("javac"))
        .arg("-d")
        .arg(&classes)
        .arg(repo().join("test-classes/timed/DeepExit.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    (inst, rt)
}

/// `java PROPS -cp inst:rt MAIN` without the agent: the runtime jar records.
fn java_offline(inst: &Path, rt: &Path, props: &[&str], main: &str) -> Output {
    Command::new(jdk_tool("java"))
        .args(props)
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg(main)
        .output()
        .unwrap()
}

/// Offline `-Dbci.depth=` takes the agent's range, 1 to 64 (options::MAX_DEPTH): out of it
/// the program stops at its first instrumented class (exit 2), as for every bad -Dbci.*
/// value. Before: `-Dbci.depth=200` was accepted (call paths of 103 frames in the data).
#[test]
fn offline_depth_has_the_agents_range() {
    let dir = tmp("offline-depth");
    let (inst, rt) = deep_exit_offline(&dir);
    for bad in ["0", "65", "200", "-1", "x"] {
        let o = java_offline(
            &inst,
            &rt,
            &[
                &format!("-Dbci.depth={bad}"),
                &format!("-Dbci.file={}", dir.join("bad.data").display()),
            ],
            "DeepExit",
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "depth={bad}: {err}");
        assert!(
            err.starts_with(&format!(
                "bci: -Dbci.depth={bad}: expected a positive integer from 1 to {} (runtime options:",
                bciagent::options::MAX_DEPTH
            )),
            "depth={bad}: {err}"
        );
        assert!(!dir.join("bad.data").exists(), "depth={bad}");
    }
    for good in ["1", "64"] {
        let data = dir.join(format!("d{good}.data"));
        let o = java_offline(
            &inst,
            &rt,
            &[
                &format!("-Dbci.depth={good}"),
                &format!("-Dbci.file={}", data.display()),
            ],
            "DeepExit",
        );
        assert_eq!(
            o.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let d = std::fs::read_to_string(&data).unwrap();
        assert!(d.contains(&format!("\ndepth\t{good}\n")), "{d}");
    }
}

/// Self time (ns) per method of an offline data file (`bci.data`), by `Class.method`: the
/// `self` of every call-path node (`data` rows: nodes, then (prefix, method, count, self) per
/// node) added up over the file's threads.
fn offline_self_ns(data: &str) -> HashMap<String, u64> {
    let mut names = HashMap::new();
    let mut out = HashMap::new();
    for l in data.lines() {
        let w: Vec<&str> = l.split('\t').collect();
        match w[0] {
            "method" => {
                names.insert(w[1].parse::<u64>().unwrap(), format!("{}.{}", w[2], w[3]));
            }
            "data" => {
                let v: Vec<u64> = w[1..].iter().map(|x| x.parse().unwrap()).collect();
                for n in v[1..1 + 4 * v[0] as usize].chunks(4).skip(1) {
                    if let Some(m) = names.get(&n[1]) {
                        *out.entry(m.clone()).or_insert(0) += n[3];
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Offline, -Dbci.clock=wall: the frames still open at System.exit (main, deep × 5) are
/// charged up to the start of the runtime's dump, not to the end of its own work before the
/// snapshot (the data file's header, its date through String.format, the method table):
/// deep's self time is the few moments between System.exit and the shutdown hook, far below
/// the 600 ms spin ran. Before: deep got 52-99 ms of self time it never spent (the agent with
/// clock=wall: 0.08 ms).
#[test]
fn offline_exit_charges_open_frames_up_to_the_dump() {
    let dir = tmp("offline-exit-charge");
    let (inst, rt) = deep_exit_offline(&dir);
    let data = dir.join("wall.data");
    let o = java_offline(
        &inst,
        &rt,
        &[
            "-Dbci.clock=wall",
            &format!("-Dbci.file={}", data.display()),
        ],
        "DeepExit",
    );
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let d = std::fs::read_to_string(&data).unwrap();
    let s = offline_self_ns(&d);
    let (deep, spin) = (s["DeepExit.deep"], s["DeepExit.spin"]);
    eprintln!(
        "deep {deep} ns, spin {spin} ns, main {}",
        s["DeepExit.main"]
    );
    assert!(spin >= 600_000_000, "{s:?}");
    assert!(deep < spin / 20, "deep's self time {deep} ns: {s:?}");
}

/// Offline `-Dbci.file=` expands `%p` (the process id), `%t` (the start time, UTC,
/// `YYYY-MM-DD_HH-MM-SS`) and `%%` as the agent's `file=` does (outfile::expand); another
/// `%` sequence stops the program (exit 2) saying which. Before: a file literally named
/// `p-%p.data`.
#[test]
fn offline_file_expands_pid_and_start_time() {
    let dir = tmp("offline-file-pattern");
    let (inst, rt) = deep_exit_offline(&dir);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let pattern = format!("{}/p-%p-%t-%%.data", out.display());
    let secs = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let before = secs();
    let child = Command::new(jdk_tool("java"))
        .arg("-Dbci.clock=wall")
        .arg(format!("-Dbci.file={pattern}"))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("DeepExit")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let o = child.wait_with_output().unwrap();
    let after = secs();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(3), "{err}");
    let written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    let want: Vec<String> = (before.saturating_sub(1)..=after)
        .map(|t| bciagent::outfile::expand(&pattern, pid, t).unwrap())
        .collect();
    assert!(
        want.contains(&written[0]),
        "{} is none of {want:?}",
        written[0]
    );
    assert!(err.contains(&format!("written to {}", written[0])), "{err}");
    let o = java_offline(
        &inst,
        &rt,
        &[&format!("-Dbci.file={}/x-%q.data", out.display())],
        "DeepExit",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(&format!(
            "bci: -Dbci.file={}/x-%q.data: unknown '%q' (valid: %p = process id, %t = start \
             time, %% = %) (runtime options:",
            out.display()
        )),
        "{err}"
    );
}

/// clock=sample: the CPU time a thread used since its last sample is charged when it ends
/// (JVMTI ThreadEnd) and, for the threads still live, at VM death, to its current frames or,
/// when its stack is already empty, to those of its last sample; and a platform thread is
/// sampled soon after it starts, not only at the next interval. SampleTail: four threads one
/// after the other and then main each burn 200 ms of CPU time, with interval=500. Before:
/// burn() showed 0-20 % of it and so did the total (every thread's time since its last sample
/// was lost, and a thread shorter than the interval was never sampled), now nearly all of it.
#[test]
fn sampled_time_of_ended_threads() {
    let dir = tmp("sample-tail");
    let f = dir.join("r.txt");
    let o = java(
        classes(),
        "SampleTail",
        &format!("cpu=times,interval=500,format=methods,file={}", f.display()),
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let burnt: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("burnt ms "))
        .unwrap_or_else(|| panic!("no burnt time: {out}"))
        .trim()
        .parse()
        .unwrap();
    let text = std::fs::read_to_string(&f).unwrap();
    let burn = methods_total_ms(&text, "SampleTail.burn(").unwrap_or(0.0);
    let total: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("METHODS BEGIN (total = "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no METHODS total:\n{text}"));
    // every thread's time is charged: the four threads' to burn() (each was sampled soon
    // after it started), main's last 200 ms at VM death to burn() or, if its last sample
    // came before (the sampler's rounds after t3 ended found main still in join(), a busy
    // machine), to join(): in the total either way
    assert!(
        burn >= 0.75 * burnt && burn <= 1.1 * burnt + 20.0 && total >= 0.95 * burnt,
        "burn() {burn} ms (all threads: {total} ms) of the {burnt} ms it used:\n{text}"
    );
}

/// A class redefined by another agent (Instrumentation.redefineClasses, what an IDE's HotSwap
/// does) gets its probes again: the new version's calls are counted under the same method
/// ids, one row per method (before, the hook left redefined classes alone: 300 calls instead
/// of 700). Retransformation keeps the probes (the 200 calls between).
#[test]
fn redefined_classes_are_profiled_under_the_same_ids() {
    let dir = tmp("redefine");
    let program = common::redefine_program(&dir);
    let file = dir.join("out.txt");
    let o = common::run_redefine(
        &format!("cpu=times,cutoff=0,file={}", file.display()),
        &program,
    );
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{out}\n{err}");
    // the second version ran
    assert!(out.contains("s=151500"), "{out}\n{err}");
    target_rows_count(&file, 700);
}

/// Target.f and Target.g (test-classes/redefine) have one row each in report `file`, with
/// `count` calls.
fn target_rows_count(file: &Path, count: u64) {
    let r = parse_report(&std::fs::read_to_string(file).unwrap());
    for m in ["Target.f(I)I", "Target.g(I)I"] {
        let rows: Vec<_> = r.methods.iter().filter(|x| x.key == m).collect();
        assert_eq!(rows.len(), 1, "{m}: one row: {rows:?}");
        assert_eq!(rows[0].count, count, "{m}");
    }
}

/// A class redefined with the bytes a retransformation-capable transformer read back (Byte
/// Buddy's ClassFileLocator.AgentBased, then redefineClasses): they carry this agent's probes,
/// and are left as they are: 300 calls, one row (before, they were instrumented a second time
/// and each call after the redefinition counted twice: 500).
#[test]
fn bytes_read_back_with_the_probes_are_not_instrumented_again() {
    let dir = tmp("reread");
    let program = common::redefine_program(&dir);
    let file = dir.join("out.txt");
    let err = common::run_reread(
        &format!("cpu=times,cutoff=0,verbose=y,file={}", file.display()),
        &program,
    );
    target_rows_count(&file, 300);
    assert!(
        err.contains("Target: carries this agent's probes already"),
        "{err}"
    );
}
