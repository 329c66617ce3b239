//! Coverage in the agent (`coverage=y`): the same data as offline instrumentation, composable
//! with cpu=times, offline-covered classes under the agent, the data file written at exit, on
//! SIGQUIT and on SIGTERM, and JVMs sharing one file.
//!
//! Needs a JDK (JAVA_HOME, or /usr/lib/jvm/java-17-openjdk-amd64, or java/javac on PATH).

use bci_rewriter::coverage::data::CovData;
use bci_rewriter::coverage::{entry_counter, plan_class, ClassId, Options};
use bci_rewriter::flow::Split;
use bci_rewriter::Outcome;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
mod common;
use common::{agent_lib, jdk_tool, repo};

fn tmp(name: &str) -> PathBuf {
    common::tmp("cov", name)
}

fn javac(dir: &Path, srcs: &[PathBuf]) {
    let o = Command::new(jdk_tool("javac"))
        .arg("-g")
        .arg("-d")
        .arg(dir)
        .args(srcs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn java(cp: &str, opts: Option<&str>, main: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg("-Xverify:all");
    if let Some(o) = opts {
        cmd.arg(format!("-agentpath:{}={o}", agent_lib().display()));
    }
    cmd.arg("-cp").arg(cp).arg(main).args(args);
    cmd
}

/// Class `class` of source `src` compiled into `dir`/classes (its source in `dir`); returns
/// that directory.
fn compiled(dir: &Path, class: &str, src: &str) -> PathBuf {
    let classes = dir.join("classes");
    std::fs::create_dir_all(&classes).unwrap();
    let file = dir.join(format!("{class}.java"));
    std::fs::write(&file, src).unwrap();
    javac(&classes, &[file]);
    classes
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn read(p: &Path) -> CovData {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    CovData::parse(&b).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The counts of class `name` (one hash) in `d`.
fn class_counts<'d>(d: &'d CovData, name: &str) -> (u64, &'d [u64]) {
    let mut it = d.classes.iter().filter(|((n, _), _)| n == name);
    let ((_, h), v) = it.next().unwrap_or_else(|| panic!("no data for {name}"));
    assert!(it.next().is_none(), "{name} under two hashes");
    (*h, v)
}

/// Entries of `method` of the class compiled into `dir`, from the data.
fn entries(d: &CovData, dir: &Path, class: &str, method: &str) -> u64 {
    let bytes = std::fs::read(dir.join(format!("{class}.class"))).unwrap();
    let plan = plan_class(&bytes, Split::AfterCalls).unwrap();
    let (h, counts) = class_counts(d, class);
    assert_eq!(h, plan.hash, "{class}: hash of the original bytes");
    assert_eq!(counts.len(), plan.counters as usize, "{class}: counters");
    let m = plan
        .methods
        .iter()
        .find(|m| m.name == method)
        .unwrap_or_else(|| panic!("{class}.{method}"));
    counts[entry_counter(m).unwrap() as usize]
}

/// What `bci instrument --coverage` does (cli/src/coverage.rs): every class of `from` into
/// `to`, registered at run time with bci/runtime/Cov; the runtime jar's classes into `rt`.
fn instrument_offline(from: &Path, to: &Path, rt: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "class") {
            let bytes = std::fs::read(&p).unwrap();
            let opts = Options {
                runtime: "bci/runtime/Cov",
                split: Split::AfterCalls,
                class_id: ClassId::Registered {
                    module_reads: false,
                },
            };
            let out = match bci_rewriter::coverage::instrument(&bytes, &opts).unwrap().0 {
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

/// `java` running classes covered offline (`inst`, with the runtime jar's classes in `rt`),
/// writing `covfile`; the caller adds the main class.
fn offline_java(covfile: &Path, inst: &Path, rt: &Path) -> Command {
    let mut c = Command::new(jdk_tool("java"));
    c.arg(format!("-Dbci.covfile={}", covfile.display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()));
    c
}

fn cov_basics(dir: &Path) -> PathBuf {
    let classes = dir.join("classes");
    javac(
        &classes,
        &[
            repo().join("test-classes/coverage/CovBasics.java"),
            repo().join("test-classes/coverage/CovOwner.java"),
        ],
    );
    classes
}

/// classdump=DIR keeps the original bytes of every class the agent covers, including one
/// defined at run time from bytes on no class path (test-classes/coverage-gen), as
/// `DIR/<name>.<hash>.class`, the hash the data keys the class by, so that `bci report
/// --classes DIR` can analyse it (before, such a class's counts could not be reported). The
/// option needs coverage=y, and a directory that cannot be made stops the JVM at start.
#[test]
fn classdump_keeps_the_classes_covered_including_generated_ones() {
    let dir = tmp("classdump");
    let (classes, gen) = (dir.join("classes"), dir.join("gen"));
    let src = repo().join("test-classes/coverage-gen");
    javac(&classes, &[src.join("CovGenLoad.java")]);
    javac(&gen, &[src.join("Gen.java")]);
    let gen_bytes = std::fs::read(gen.join("Gen.class")).unwrap();
    let (cov, dump) = (dir.join("c.cov"), dir.join("dump"));
    let _ = std::fs::remove_dir_all(&dump);
    let cp = classes.display().to_string();
    let arg = gen.join("Gen.class").display().to_string();
    let o = ok(java(
        &cp,
        Some(&format!(
            "coverage=y,include=CovGenLoad*:Gen,covfile={},classdump={}",
            cov.display(),
            dump.display()
        )),
        "CovGenLoad",
        &[&arg],
    )
    .output()
    .unwrap());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "18\n");
    let d = read(&cov);
    let (hash, counts) = class_counts(&d, "Gen");
    assert!(counts.iter().any(|&c| c > 0), "Gen's counts: {counts:?}");
    let kept = dump.join(format!("Gen.{hash:016x}.class"));
    assert_eq!(
        std::fs::read(&kept).unwrap_or_else(|e| panic!("{}: {e}", kept.display())),
        gen_bytes,
        "the original bytes"
    );
    // the classes from the class path too, under their package directories
    let loader = d
        .classes
        .keys()
        .find(|(n, _)| n == "CovGenLoad$Loader")
        .map(|(_, h)| *h)
        .expect("CovGenLoad$Loader covered");
    assert!(dump
        .join(format!("CovGenLoad$Loader.{loader:016x}.class"))
        .is_file());
    // a class defined without a name (`defineClass(null, …)`: the hook gets none) is covered
    // under the name its bytes give (before: left uncovered)
    let cov2 = dir.join("c2.cov");
    let o = ok(java(
        &cp,
        Some(&format!(
            "coverage=y,include=Gen,covfile={}",
            cov2.display()
        )),
        "CovGenLoad",
        &[&arg, "unnamed"],
    )
    .output()
    .unwrap());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "18\n");
    let d2 = read(&cov2);
    let (h2, counts2) = class_counts(&d2, "Gen");
    assert_eq!(
        (h2, &counts2),
        (hash, &counts),
        "the same data as the named class's"
    );
    // what the option needs: coverage, and a directory it can make
    let o = java(&cp, Some("classdump=x"), "CovGenLoad", &[&arg])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("classdump= keeps the classes that coverage=y covers"),
        "{err}"
    );
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = java(
        &cp,
        Some(&format!(
            "coverage=y,covfile={},classdump={}/sub",
            cov.display(),
            file.display()
        )),
        "CovGenLoad",
        &[&arg],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("classdump=") && err.contains("cannot write there"),
        "{err}"
    );
}

/// Code that runs before its class's static initializer (test-classes/coverage-init:
/// Base's <clinit> makes a Sub while Sub is being initialized) is counted offline as by the
/// agent: Sub.<init> twice. Offline classes keep their id in a static field that <clinit>
/// sets; the lookup's slow half read 0 there and counted in class 0's array (the call lost,
/// or an ArrayIndexOutOfBoundsException: jython.jar instrumented offline did not start).
#[test]
fn code_before_its_class_initializer_counts_offline_as_with_the_agent() {
    let dir = tmp("init-order");
    let classes = dir.join("classes");
    javac(
        &classes,
        &[repo().join("test-classes/coverage-init/CovInitOrder.java")],
    );
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let agent = dir.join("agent.cov");
    let out_agent = ok(java(
        &classes.display().to_string(),
        Some(&format!(
            "coverage=y,include=CovInitOrder*,covfile={}",
            agent.display()
        )),
        "CovInitOrder",
        &[],
    )
    .output()
    .unwrap());
    let offline = dir.join("offline.cov");
    let out_offline = ok(offline_java(&offline, &inst, &rt)
        .arg("-Xverify:all")
        .arg("CovInitOrder")
        .output()
        .unwrap());
    assert_eq!(String::from_utf8_lossy(&out_agent.stdout), "4 1 2\n");
    assert_eq!(out_agent.stdout, out_offline.stdout);
    let (a, o) = (read(&agent), read(&offline));
    for class in ["CovInitOrder$Sub", "CovInitOrder$Base", "CovInitOrder"] {
        assert_eq!(class_counts(&a, class), class_counts(&o, class), "{class}");
    }
    assert_eq!(entries(&o, &classes, "CovInitOrder$Sub", "<init>"), 2);
}

/// CovBasics through the agent (every class covered, JDK included) and through offline
/// instrumentation with the runtime jar: the same class hash and identical counts; with
/// cpu=times as well, the same coverage and the same cpu=times counts as cpu=times alone.
#[test]
fn agent_and_offline_give_identical_data() {
    let dir = tmp("identical");
    let classes = cov_basics(&dir);
    let cp = classes.display().to_string();
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    // program `main` with the agent and offline (-Xverify:all): outputs and data files
    let both_ways = |main: &str| {
        let agent = dir.join(format!("{main}-agent.cov"));
        let out_agent = ok(java(
            &cp,
            Some(&format!("coverage=y,covfile={}", agent.display())),
            main,
            &[],
        )
        .output()
        .unwrap());
        let offline = dir.join(format!("{main}-offline.cov"));
        let out_offline = ok(offline_java(&offline, &inst, &rt)
            .arg("-Xverify:all")
            .arg(main)
            .output()
            .unwrap());
        (out_agent, out_offline, agent, offline)
    };
    let (out_agent, out_offline, agent, offline) = both_ways("CovBasics");
    assert_eq!(out_agent.stdout, out_offline.stdout);
    // CovOwner: a class initialized by a thread that ends keeps that thread's array in its
    // static finals (the owner's path); later threads count apart: the agent sums the owned
    // array once (it never folds it), exactly as the runtime jar does
    let (_, _, owner_agent, owner_offline) = both_ways("CovOwner");
    let (a, o) = (read(&owner_agent), read(&owner_offline));
    for class in ["CovOwner", "CovOwner$Owned"] {
        assert_eq!(class_counts(&a, class), class_counts(&o, class), "{class}");
    }
    assert_eq!(entries(&a, &classes, "CovOwner$Owned", "hit"), 1750);
    let (a, o) = (read(&agent), read(&offline));
    let (ha, ca) = class_counts(&a, "CovBasics");
    let (ho, co) = class_counts(&o, "CovBasics");
    assert_eq!(ha, ho);
    assert_eq!(ca, co);
    assert!(ca.iter().any(|&c| c > 1), "counts: {ca:?}");
    // JDK classes were covered too (include= not given: every class)
    assert!(
        a.classes.keys().any(|(n, _)| n == "java/util/ArrayList"),
        "no JDK class in the agent's data"
    );
    assert_eq!(a.sessions.len(), 1);
    assert!(
        a.sessions[0].command.contains("CovBasics"),
        "{:?}",
        a.sessions
    );
    assert!(a.sessions[0].jvm.contains("VM"), "{:?}", a.sessions);
    assert!(a.sessions[0].dump_ms >= a.sessions[0].start_ms);

    // cpu=times and coverage in one run
    let both = dir.join("both.cov");
    let prof_both = dir.join("both.txt");
    ok(java(
        &cp,
        Some(&format!(
            "cpu=times,coverage=y,covfile={},file={}",
            both.display(),
            prof_both.display()
        )),
        "CovBasics",
        &[],
    )
    .output()
    .unwrap());
    let prof_cpu = dir.join("cpu.txt");
    ok(java(
        &cp,
        Some(&format!("cpu=times,file={}", prof_cpu.display())),
        "CovBasics",
        &[],
    )
    .output()
    .unwrap());
    assert_eq!(class_counts(&read(&both), "CovBasics").1, ca);
    let rows = |p: &Path| method_rows(p, "CovBasics");
    let (rb, rc) = (rows(&prof_both), rows(&prof_cpu));
    assert!(rc.len() >= 10, "{rc:?}");
    assert_eq!(rb, rc, "cpu=times counts with coverage differ");

    // classes covered offline, profiled by the agent (cpu=times alone, the runtime jar on the
    // class path): the same cpu=times counts as the original classes', and the runtime jar's
    // coverage data as without the agent (they were left out of the profile before)
    let prof_off = dir.join("offline-cpu.txt");
    let cov_off = dir.join("offline-cpu.cov");
    ok(Command::new(jdk_tool("java"))
        .arg("-Xverify:all")
        .arg(format!("-Dbci.covfile={}", cov_off.display()))
        .arg(format!(
            "-agentpath:{}=cpu=times,file={}",
            agent_lib().display(),
            prof_off.display()
        ))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("CovBasics")
        .output()
        .unwrap());
    assert_eq!(
        rows(&prof_off),
        rc,
        "cpu=times counts of classes covered offline"
    );
    assert_eq!(class_counts(&read(&cov_off), "CovBasics").1, co);

    // and traced by rules= (they were left out: "no method ran"): the same counts as the
    // original classes give
    let rules = dir.join("trace.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"sign\"\nclass = \"CovBasics\"\nmethod = \"sign\"\ncount = true\ntime = true\n",
    )
    .unwrap();
    let traced = |cp: &str, tag: &str| -> String {
        let out = dir.join(format!("trace-{tag}.txt"));
        ok(Command::new(jdk_tool("java"))
            .arg("-Xverify:all")
            .arg(format!("-Dbci.covfile={}", dir.join("trace.cov").display()))
            .arg(format!(
                "-agentpath:{}=rules={},file={}",
                agent_lib().display(),
                rules.display(),
                out.display()
            ))
            .arg("-cp")
            .arg(cp)
            .arg("CovBasics")
            .output()
            .unwrap());
        let t = std::fs::read_to_string(&out).unwrap();
        let row = t
            .lines()
            .find(|l| l.split_whitespace().next() == Some("sign"))
            .unwrap_or_else(|| panic!("no sign row: {t}"));
        row.split_whitespace().nth(1).unwrap().to_string()
    };
    let plain = traced(&cp, "plain");
    assert!(plain.parse::<u64>().is_ok_and(|n| n > 0), "{plain}");
    assert_eq!(
        traced(&format!("{}:{}", inst.display(), rt.display()), "covered"),
        plain,
        "tracing of classes covered offline"
    );
}

/// The rows of a cpu=times report's METHODS table whose method starts with `prefix`:
/// (method, count), sorted.
fn method_rows(p: &Path, prefix: &str) -> Vec<(String, String)> {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut inside = false;
    let mut v = Vec::new();
    for l in t.lines() {
        if l.starts_with("METHODS BEGIN") {
            inside = true;
            continue;
        }
        if l.starts_with("METHODS END") {
            inside = false;
        }
        let c: Vec<&str> = l.split_whitespace().collect();
        if inside && c.len() == 7 && c[6].starts_with(prefix) {
            v.push((c[6].to_string(), c[3].to_string()));
        }
    }
    v.sort();
    v
}

const SOE: &str = r#"
public class CovSoe {
    static long[] calls = new long[5];
    static void rec(int t) { calls[t]++; rec(t); }
    public static void main(String[] a) throws Exception {
        for (int k = 0; k < 20; k++) { try { rec(4); } catch (StackOverflowError e) { } }
        Thread[] ts = new Thread[4];
        for (int i = 0; i < ts.length; i++) {
            final int t = i;
            ts[i] = new Thread(null, () -> {
                for (int k = 0; k < 5; k++) { try { rec(t); } catch (StackOverflowError e) { } }
            }, "deep" + i, 256 * 1024);
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        long n = 0;
        for (long c : calls) n += c;
        System.out.println("rec=" + n);
    }
}
"#;

/// cpu=times with coverage=y, a method recursing to StackOverflowError on main and on four
/// threads with 256 KB stacks: its cpu=times count and its coverage entries are its own count
/// of its calls, compiled and interpreted, with the sampling and a per-call clock. Before,
/// `enterT` ran before the coverage lookup, whose slow half (threads that do not own the
/// class's array) reaches deeper: it threw after the call was counted, one call more per
/// overflow on each thread (26,280 for 26,260 interpreted).
#[test]
fn stack_overflow_counts_the_same_with_coverage_and_cpu_times() {
    let dir = tmp("soe");
    let classes = compiled(&dir, "CovSoe", SOE);
    let cp = classes.display().to_string();
    for (mode, jvm) in [("compiled", ""), ("interpreted", "-Xint")] {
        for clock in ["sample", "wall"] {
            let (cov, prof) = (
                dir.join(format!("{mode}-{clock}.cov")),
                dir.join(format!("{mode}-{clock}.txt")),
            );
            let mut cmd = java(
                &cp,
                Some(&format!(
                    "cpu=times,coverage=y,clock={clock},include=CovSoe*,covfile={},file={}",
                    cov.display(),
                    prof.display()
                )),
                "CovSoe",
                &[],
            );
            if !jvm.is_empty() {
                cmd.env("JDK_JAVA_OPTIONS", jvm);
            }
            let o = ok(cmd.output().unwrap());
            let out = String::from_utf8_lossy(&o.stdout);
            let n: u64 = out
                .trim()
                .strip_prefix("rec=")
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{mode} {clock}: {out}"));
            assert_eq!(
                method_rows(&prof, "CovSoe.rec"),
                [("CovSoe.rec(I)V".to_string(), n.to_string())],
                "{mode} {clock}: cpu=times"
            );
            assert_eq!(
                entries(&read(&cov), &classes, "CovSoe", "rec"),
                n,
                "{mode} {clock}: coverage"
            );
        }
    }
}

/// CovBasics run with the agent (coverage of CovBasics only) into `file`; returns `file`.
fn agent_reference(classes: &Path, file: &Path) -> PathBuf {
    ok(java(
        &classes.display().to_string(),
        Some(&format!(
            "coverage=y,include=CovBasics,covfile={}",
            file.display()
        )),
        "CovBasics",
        &[],
    )
    .output()
    .unwrap());
    file.to_path_buf()
}

/// `include=` patterns that match no JDK class: the agent does without the early class hook,
/// so the JVM keeps class-data sharing (`-Xshare:on`, which refuses to start without it,
/// starts), and threads find their counters through a ThreadLocal instead of a field in
/// java.lang.Thread: the same counts as with the early hook, exact with eight threads.
#[test]
fn late_hook_keeps_class_data_sharing_and_counts_exactly() {
    let dir = tmp("late-hook");
    let classes = cov_basics(&dir);
    let cp = classes.display().to_string();
    let run = |main: &str, early: bool| {
        let data = dir.join(format!("{main}-{early}.cov"));
        let opts = format!(
            "coverage=y,include=CovBasics*:CovOwner*,verbose=y,covfile={}",
            data.display()
        );
        let mut cmd = Command::new(jdk_tool("java"));
        if early {
            cmd.env("BCIAGENT_EARLY_HOOK", "1").arg("-Xverify:all");
        } else {
            // -Xshare:on: CDS or no start (and -Xverify:all would turn CDS off)
            cmd.arg("-Xshare:on");
        }
        let o = ok(cmd
            .arg(format!("-agentpath:{}={opts}", agent_lib().display()))
            .arg("-cp")
            .arg(&cp)
            .arg(main)
            .output()
            .unwrap());
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(err.contains("no early class hook"), !early, "{err}");
        (read(&data), o.stdout)
    };
    let bare = Command::new(jdk_tool("java"))
        .args(["-Xshare:on", "-cp", &cp, "CovBasics"])
        .output()
        .unwrap();
    assert!(
        bare.status.success(),
        "this JDK cannot run with -Xshare:on even without the agent: {}",
        String::from_utf8_lossy(&bare.stderr)
    );
    let ((late, out_late), (early, out_early)) = (run("CovBasics", false), run("CovBasics", true));
    assert_eq!(out_late, bare.stdout);
    assert_eq!(out_early, bare.stdout);
    assert_eq!(
        class_counts(&late, "CovBasics"),
        class_counts(&early, "CovBasics")
    );
    // 8 threads x 50,000 calls, racy() unsynchronized
    for m in ["racy", "bump"] {
        assert_eq!(entries(&late, &classes, "CovBasics", m), 400_000, "{m}");
    }
    // no JDK class covered
    assert!(late.classes.keys().all(|(n, _)| n.starts_with("Cov")));
    // a class initialized by a thread that ends (its owner), run later by two other threads
    let ((late, _), (early, _)) = (run("CovOwner", false), run("CovOwner", true));
    for class in ["CovOwner", "CovOwner$Owned"] {
        assert_eq!(
            class_counts(&late, class),
            class_counts(&early, class),
            "{class}"
        );
    }
    assert_eq!(entries(&late, &classes, "CovOwner$Owned", "hit"), 1750);
}

const VCOV: &str = r#"
import java.util.ArrayList;
import java.util.List;

public class VCov {
    static int work(int i) { return i + 1; }

    public static void main(String[] a) throws Exception {
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < 10000; t++) {
            ts.add(Thread.ofVirtual().start(() -> {
                for (int i = 0; i < 100; i++) work(i);
                try { Thread.sleep(1); } catch (InterruptedException e) { }
                for (int i = 0; i < 100; i++) work(i);
            }));
        }
        for (Thread t : ts) t.join();
    }
}
"#;

/// JDK 25 (only when /usr/lib/jvm/temurin-25-jdk-amd64 exists): 10,000 virtual threads, each
/// parked once between its calls, without the early hook: each finds its arrays through the
/// ThreadLocal (on whatever carrier), VirtualThreadEnd folds them; exact.
#[test]
fn late_hook_virtual_threads_count_exactly() {
    let jdk = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64");
    if !jdk.join("bin/java").exists() {
        eprintln!("skipped: no JDK 25");
        return;
    }
    let dir = tmp("late-virtual");
    let src = dir.join("src/VCov.java");
    std::fs::create_dir_all(src.parent().unwrap()).unwrap();
    std::fs::write(&src, VCOV).unwrap();
    let classes = dir.join("classes");
    let o = Command::new(jdk.join("bin/javac"))
        .arg("-d")
        .arg(&classes)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = dir.join("v.cov");
    let o = ok(Command::new(jdk.join("bin/java"))
        .arg("-Xshare:on")
        .arg(format!(
            "-agentpath:{}=coverage=y,include=VCov*,verbose=y,covfile={}",
            agent_lib().display(),
            data.display()
        ))
        .arg("-cp")
        .arg(&classes)
        .arg("VCov")
        .output()
        .unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no early class hook"), "{err}");
    let d = read(&data);
    assert_eq!(entries(&d, &classes, "VCov", "work"), 2_000_000);
    assert_eq!(entries(&d, &classes, "VCov", "lambda$main$0"), 10_000);
}

const VLOCK: &str = r#"
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class VLock {
    static final AtomicLong n = new AtomicLong();
    static int work(int x) { return x * 7 + 1; }
    static void task(int k) throws InterruptedException {
        for (int i = 0; i < 10; i++) {
            work(k + i);
            n.incrementAndGet();
            if (i % 3 == 0) Thread.sleep(1);
        }
    }
    static synchronized void locked(int k) throws InterruptedException {
        work(k);
        Thread.sleep(0, 100);
    }

    public static void main(String[] a) throws Exception {
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 5000; i++) {
                final int k = i;
                ex.submit(() -> { task(k); return null; });
            }
        }
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            final int k = i;
            ts.add(Thread.ofVirtual().start(() -> {
                try { locked(k); } catch (InterruptedException e) { }
            }));
        }
        for (Thread t : ts) t.join();
        System.out.println("n=" + n);
    }
}
"#;

/// JDK 25 (only when /usr/lib/jvm/temurin-25-jdk-amd64 exists), the JDK covered (default
/// include=): 5,000 virtual threads that sleep, then 200 that sleep in a synchronized method.
/// Since JDK 24 a virtual thread waiting for a monitor unmounts, and the VirtualThread-unblocker
/// thread and the carriers that resume it run covered JDK code, whose first call into a class
/// takes BciCov's lock: when that lock was a `synchronized` one, every thread ended up waiting
/// for it (3 of 4 runs of a user's program hung at 0% CPU). BciCov takes it through JNI (a
/// waiting virtual thread stays mounted). Five runs, each killed and failed after 90 s.
#[test]
fn jdk_covered_virtual_threads_do_not_deadlock() {
    let jdk = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64");
    if !jdk.join("bin/java").exists() {
        eprintln!("skipped: no JDK 25");
        return;
    }
    let dir = tmp("vt-lock");
    let src = dir.join("src/VLock.java");
    std::fs::create_dir_all(src.parent().unwrap()).unwrap();
    std::fs::write(&src, VLOCK).unwrap();
    let classes = dir.join("classes");
    let o = Command::new(jdk.join("bin/javac"))
        .arg("-d")
        .arg(&classes)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for run in 0..5 {
        let data = dir.join(format!("v{run}.cov"));
        let _ = std::fs::remove_file(&data);
        let (out, err) = (dir.join("out.txt"), dir.join("err.txt"));
        let mut child = Command::new(jdk.join("bin/java"))
            .arg("-Xmx512m")
            .arg(format!(
                "-agentpath:{}=coverage=y,covfile={}",
                agent_lib().display(),
                data.display()
            ))
            .arg("-cp")
            .arg(&classes)
            .arg("VLock")
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > std::time::Duration::from_secs(90) {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "run {run} hung (killed after 90 s)\nstderr:\n{}",
                    std::fs::read_to_string(&err).unwrap_or_default()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        let stdout = std::fs::read_to_string(&out).unwrap();
        assert!(
            status.success() && stdout.contains("n=50000"),
            "run {run}: {status}\nstdout:\n{stdout}\nstderr:\n{}",
            std::fs::read_to_string(&err).unwrap_or_default()
        );
        let d = read(&data);
        assert_eq!(entries(&d, &classes, "VLock", "work"), 50_200, "run {run}");
        assert_eq!(entries(&d, &classes, "VLock", "task"), 5_000, "run {run}");
        assert_eq!(entries(&d, &classes, "VLock", "locked"), 200, "run {run}");
        // the JDK was covered
        assert!(d
            .classes
            .keys()
            .any(|(n, _)| n == "java/lang/VirtualThread"));
    }
}

/// Classes instrumented offline (marked BciInstrumented) under the agent: not instrumented
/// again, registered with the agent's runtime, their counts in the agent's file once.
#[test]
fn offline_classes_under_the_agent_count_once() {
    let dir = tmp("offline-agent");
    let classes = cov_basics(&dir);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let reference = agent_reference(&classes, &dir.join("agent.cov"));
    let data = dir.join("mixed.cov");
    let o = ok(java(
        &format!("{}:{}", inst.display(), rt.display()),
        Some(&format!("coverage=y,verbose=y,covfile={}", data.display())),
        "CovBasics",
        &[],
    )
    .output()
    .unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CovBasics: instrumented offline for coverage"),
        "{err}"
    );
    // the runtime jar's writer did not run (the agent's forwarder replaced its Cov)
    assert!(!dir.join("bci.cov").exists() && !Path::new("bci.cov").exists());
    let d = read(&data);
    assert_eq!(
        class_counts(&d, "CovBasics").1,
        class_counts(&read(&reference), "CovBasics").1
    );
}

/// A child-first class loader (Tomcat's web-app loader looks in WEB-INF/lib first) holding the
/// offline-covered classes and the runtime jar: its own copy of bci/runtime/Cov is given the
/// agent's forwarder bytes, so the counts go into the agent's file (before, that copy counted
/// on its own: the agent wrote "coverage data of 0 classes", found by the server hunt).
#[test]
fn offline_classes_in_a_child_first_loader_count_with_the_agent() {
    let dir = tmp("offline-child-first");
    let classes = cov_basics(&dir);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let reference = agent_reference(&classes, &dir.join("agent.cov"));
    let main = dir.join("main");
    std::fs::create_dir_all(&main).unwrap();
    let src = dir.join("ChildFirst.java");
    std::fs::write(
        &src,
        r#"import java.net.*;
public class ChildFirst extends URLClassLoader {
    ChildFirst(URL[] urls) { super(urls, ChildFirst.class.getClassLoader()); }
    @Override protected Class<?> loadClass(String name, boolean resolve)
            throws ClassNotFoundException {
        synchronized (getClassLoadingLock(name)) {
            Class<?> c = findLoadedClass(name);
            if (c == null && !name.startsWith("java.")) {
                try { c = findClass(name); } catch (ClassNotFoundException e) { }
            }
            if (c == null) return super.loadClass(name, resolve);
            return c;
        }
    }
    public static void main(String[] args) throws Exception {
        URL[] urls = { new java.io.File(args[0]).toURI().toURL(),
                       new java.io.File(args[1]).toURI().toURL() };
        ChildFirst l = new ChildFirst(urls);
        Class<?> cov = l.loadClass("bci.runtime.Cov");
        if (cov.getClassLoader() != l) throw new AssertionError("Cov not child-first");
        l.loadClass("CovBasics").getMethod("main", String[].class)
            .invoke(null, (Object) new String[0]);
    }
}
"#,
    )
    .unwrap();
    javac(&main, &[src]);
    let data = dir.join("child-first.cov");
    let o = ok(java(
        &main.display().to_string(),
        Some(&format!("coverage=y,covfile={}", data.display())),
        "ChildFirst",
        &[
            &format!("{}/", inst.display()),
            &format!("{}/", rt.display()),
        ],
    )
    .current_dir(&dir)
    .output()
    .unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    // the loader's copy of the runtime jar's Cov did not record (nor write its own file)
    assert!(!dir.join("bci.cov").exists(), "{err}");
    assert_eq!(
        class_counts(&read(&data), "CovBasics").1,
        class_counts(&read(&reference), "CovBasics").1,
        "{err}"
    );
}

/// Classes instrumented offline for cpu=times (`bci instrument` without --coverage) cannot take
/// coverage counters under `coverage=y`: the agent says so (once, and their number at exit)
/// instead of writing a data file without them in silence.
#[test]
fn offline_cpu_times_classes_under_coverage_are_named() {
    let dir = tmp("offline-cpu-agent");
    let classes = cov_basics(&dir);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    std::fs::create_dir_all(&inst).unwrap();
    let rules = bci_rewriter::Rules::cpu_times();
    let opts = bci_rewriter::Options {
        marker: true,
        runtime_ids: true,
        leaf_probes: true,
        frame_tokens: true,
        ..Default::default()
    };
    let mut ids = bci_rewriter::SequentialIds(0);
    let mut marked = 0;
    for e in std::fs::read_dir(&classes).unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        let out = match bci_rewriter::instrument_with(&bytes, &rules, &mut ids, &opts).unwrap() {
            Outcome::Rewritten(b) => {
                marked += 1;
                b
            }
            Outcome::Unchanged => bytes,
        };
        std::fs::write(inst.join(p.file_name().unwrap()), out).unwrap();
    }
    assert!(marked >= 2, "{marked} classes instrumented");
    for (path, bytes) in bciagent::runtime_jar::CLASSES {
        let f = rt.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, bytes).unwrap();
    }
    let data = dir.join("cpu-marked.cov");
    let o = ok(java(
        &format!("{}:{}", inst.display(), rt.display()),
        Some(&format!("coverage=y,covfile={}", data.display())),
        "CovBasics",
        &[],
    )
    .current_dir(&dir) // (the runtime jar writes its profile, bci.data, there)
    .output()
    .unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    let first: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("without --coverage: it gets no coverage counters"))
        .collect();
    assert_eq!(first.len(), 1, "one line for the first such class:\n{err}");
    // CovBasics runs alone (CovOwner, also instrumented, is not loaded)
    assert!(
        err.contains("1 class instrumented offline without --coverage has no coverage data"),
        "{err}"
    );
    // without the runtime jar, coverage=y alone defines no cpu=times runtime: the class stops
    // at its first use, and the agent's line said why and what to do
    let o = java(
        &inst.display().to_string(),
        Some(&format!(
            "coverage=y,covfile={}",
            dir.join("no-rt.cov").display()
        )),
        "CovBasics",
        &[],
    )
    .current_dir(&dir)
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("NoClassDefFoundError: bci/runtime/Offline"),
        "{err}"
    );
    assert!(
        err.contains(
            "it needs the runtime jar (`bci runtime-jar`) on the class path, or cpu=times"
        ),
        "{err}"
    );
}

/// The mirror case: classes instrumented `--coverage` offline under `cpu=times` alone call the
/// runtime jar's bci/runtime/Cov, which the agent defines only with coverage=y. Without the jar
/// on the class path the agent says so at the first such class (before: only
/// NoClassDefFoundError: bci/runtime/Cov, no hint); with it, nothing is said.
#[test]
fn offline_coverage_classes_under_cpu_times_name_the_runtime_jar() {
    let dir = tmp("offline-cov-cpu");
    let classes = cov_basics(&dir);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let hint = "its counters call bci/runtime/Cov, which cpu=times does not define (coverage=y \
                does) and which the class path (java.class.path) does not have";
    let run = |cp: String| {
        java(
            &cp,
            Some(&format!(
                "cpu=times,file={}",
                dir.join("prof.txt").display()
            )),
            "CovBasics",
            &[],
        )
        .current_dir(&dir)
        .output()
        .unwrap()
    };
    let o = run(inst.display().to_string());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("NoClassDefFoundError: bci/runtime/Cov"),
        "{err}"
    );
    assert_eq!(err.matches(hint).count(), 1, "{err}");
    let o = ok(run(format!("{}:{}", inst.display(), rt.display())));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains(hint), "{err}");
}

/// A JVM with the runtime jar (offline-instrumented classes) and a JVM with the agent, at once,
/// on one data file: both take the same lock (fcntl on `<file>.lck`), the counts add up.
#[test]
fn agent_and_runtime_jar_share_one_file() {
    let dir = tmp("mixed-writers");
    let classes = cov_basics(&dir);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let reference = agent_reference(&classes, &dir.join("one.cov"));
    let one = class_counts(&read(&reference), "CovBasics").1.to_vec();
    let shared = dir.join("shared.cov");
    for _ in 0..2 {
        let offline = offline_java(&shared, &inst, &rt)
            .arg("CovBasics")
            .spawn()
            .unwrap();
        let agent = java(
            &classes.display().to_string(),
            Some(&format!(
                "coverage=y,include=CovBasics,covfile={}",
                shared.display()
            )),
            "CovBasics",
            &[],
        )
        .spawn()
        .unwrap();
        ok(offline.wait_with_output().unwrap());
        ok(agent.wait_with_output().unwrap());
    }
    let d = read(&shared);
    assert_eq!(d.sessions.len(), 4, "{:?}", d.sessions);
    let want: Vec<u64> = one.iter().map(|c| 4 * c).collect();
    assert_eq!(class_counts(&d, "CovBasics").1, want.as_slice());
}

/// A covfile that is a symbolic link (here to a file not there yet, by a relative target) is
/// written to the link's target, by the agent's `covfile=` and the runtime jar's
/// `-Dbci.covfile=` alike: the two runs add up in the target, the lock is `<target>.lck`, and
/// the link stays a link. So is the agent's report `file=`. Before: the link was replaced by a
/// regular file (the target never got the data), the lock was `<link>.lck`, and `file=` to a
/// link to nothing stopped the JVM ("No such file or directory").
#[test]
fn covfile_and_file_through_a_link_are_written_to_its_target() {
    use std::os::unix::fs::symlink;
    let dir = tmp("covfile-link");
    let classes = cov_basics(&dir);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let (links, real) = (dir.join("links"), dir.join("real"));
    std::fs::create_dir_all(&links).unwrap();
    std::fs::create_dir_all(&real).unwrap();
    let (cov, prof) = (links.join("a.cov"), links.join("prof.txt"));
    symlink("../real/a.cov", &cov).unwrap();
    symlink("../real/prof.txt", &prof).unwrap();
    ok(java(
        &classes.display().to_string(),
        Some(&format!(
            "coverage=y,include=CovBasics,covfile={}",
            cov.display()
        )),
        "CovBasics",
        &[],
    )
    .output()
    .unwrap());
    ok(offline_java(&cov, &inst, &rt)
        .arg("CovBasics")
        .output()
        .unwrap());
    assert!(cov.is_symlink(), "the covfile link was replaced");
    let d = read(&real.join("a.cov"));
    assert_eq!(d.sessions.len(), 2, "{:?}", d.sessions);
    class_counts(&d, "CovBasics");
    assert!(real.join("a.cov.lck").is_file());
    assert!(
        !links.join("a.cov.lck").exists(),
        "the lock beside the link"
    );
    ok(java(
        &classes.display().to_string(),
        Some(&format!("cpu=times,file={}", prof.display())),
        "CovBasics",
        &[],
    )
    .output()
    .unwrap());
    assert!(prof.is_symlink(), "the file= link was replaced");
    let report = std::fs::read_to_string(real.join("prof.txt")).unwrap();
    assert!(report.contains("CPU TIME (ms) BEGIN"), "{report}");
    let mut left: Vec<String> = std::fs::read_dir(&links)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["a.cov", "prof.txt"]);
}

/// The session id is `<host>-<pid>-<start ms>` with the machine's host name
/// (/proc/sys/kernel/hostname), from the agent and from the runtime jar's writer alike, whether
/// or not the shell exported $HOSTNAME (bash does not). Before: both read $HOSTNAME only and
/// wrote `host-<pid>-<ms>`.
#[test]
fn session_ids_name_the_real_host() {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    assert!(!host.is_empty());
    let dir = tmp("session-host");
    let classes = cov_basics(&dir);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let shared = dir.join("shared.cov");
    let mut pids = Vec::new();
    // (not exported, and exported with another name: the machine's name wins)
    for env in [None, Some("not-the-host")] {
        let mut offline = offline_java(&shared, &inst, &rt);
        offline.arg("CovBasics");
        let mut agent = java(
            &classes.display().to_string(),
            Some(&format!(
                "coverage=y,include=CovBasics,covfile={}",
                shared.display()
            )),
            "CovBasics",
            &[],
        );
        for cmd in [&mut offline, &mut agent] {
            match env {
                None => cmd.env_remove("HOSTNAME"),
                Some(h) => cmd.env("HOSTNAME", h),
            };
            let child = cmd.spawn().unwrap();
            pids.push(child.id());
            ok(child.wait_with_output().unwrap());
        }
    }
    let d = read(&shared);
    let ids: Vec<&str> = d.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(d.sessions.len(), 4, "{ids:?}");
    for (s, pid) in d.sessions.iter().zip(&pids) {
        assert_eq!(s.id, format!("{host}-{pid}-{}", s.start_ms), "{ids:?}");
    }
}

const SIG: &str = r#"
import java.io.File;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;

public class CovSig {
    static int work(int i) { return i * 2; }

    public static void main(String[] a) throws Exception {
        long s = 0;
        for (int i = 0; i < 1000; i++) s += work(i);
        if (a[0].equals("quit")) {
            File f = new File(a[1]);
            long pid = ProcessHandle.current().pid();
            new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
            for (int k = 0; k < 400 && !f.exists(); k++) Thread.sleep(25);
            Files.copy(f.toPath(), new File(a[2]).toPath(), StandardCopyOption.REPLACE_EXISTING);
            for (int i = 0; i < 500; i++) s += work(i);
        } else if (a[0].equals("term")) {
            System.out.println("ready " + s);
            System.out.flush();
            Thread.sleep(60_000);
        } else if (a[0].equals("threads")) {
            Thread[] t = new Thread[8];
            for (int k = 0; k < t.length; k++) {
                t[k] = new Thread(() -> { for (int i = 0; i < 100_000; i++) work(i); });
                t[k].start();
            }
            for (Thread x : t) x.join();
        }
        System.out.println("done " + s);
    }
}
"#;

fn cov_sig(dir: &Path) -> PathBuf {
    compiled(dir, "CovSig", SIG)
}

/// SIGQUIT writes the data and the JVM runs on; the exit dump adds only what ran since, so
/// the file holds the run's counts once (one session).
#[test]
fn sigquit_dump_then_exit() {
    let dir = tmp("sigquit");
    let classes = cov_sig(&dir);
    let data = dir.join("q.cov");
    let snap = dir.join("snap.cov");
    ok(java(
        &classes.display().to_string(),
        Some(&format!("coverage=y,covfile={}", data.display())),
        "CovSig",
        &[
            "quit",
            &data.display().to_string(),
            &snap.display().to_string(),
        ],
    )
    .output()
    .unwrap());
    assert_eq!(entries(&read(&snap), &classes, "CovSig", "work"), 1000);
    let end = read(&data);
    assert_eq!(entries(&end, &classes, "CovSig", "work"), 1500);
    assert_eq!(entries(&end, &classes, "CovSig", "main"), 1);
    assert_eq!(end.sessions.len(), 1, "{:?}", end.sessions);
}

const INFLIGHT: &str = r#"
import java.io.File;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.LinkedBlockingQueue;

public class CovInflight {
    static final LinkedBlockingQueue<String> q = new LinkedBlockingQueue<>();
    static int n;

    static void consume() throws InterruptedException {
        String s = q.take();
        n += s.length(); // AFTER_TAKE: never runs (nothing is put)
    }

    static void snapshot(String data, String copy) throws Exception {
        File f = new File(data);
        long pid = ProcessHandle.current().pid();
        new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
        for (int k = 0; k < 400 && !f.exists(); k++) Thread.sleep(25);
        Thread.sleep(200);
        Files.copy(f.toPath(), new File(copy).toPath(), StandardCopyOption.REPLACE_EXISTING);
    }

    public static void main(String[] a) throws Exception {
        Thread t = new Thread(() -> {
            try {
                consume();
            } catch (InterruptedException e) {
            }
        });
        t.setDaemon(true);
        t.start();
        while (t.getState() != Thread.State.WAITING) Thread.sleep(5);
        snapshot(a[0], a[1]);
        n++; // AFTER_SNAPSHOT: runs once, after the snapshot was taken
        if (a[2].equals("exit")) {
            System.exit(0);
        }
        n++; // AFTER_EXIT: runs only without System.exit
    }
}
"#;

/// Hits of the line of `CovInflight.java` that ends with `// <mark>...`.
fn inflight_hits(d: &CovData, classes: &Path, mark: &str) -> u64 {
    line_hits(d, classes, INFLIGHT, "CovInflight", mark)
}

/// Hits of the line of `source` that ends with `// <mark>...`, in class `class` of `classes`.
fn line_hits(d: &CovData, classes: &Path, source: &str, class: &str, mark: &str) -> u64 {
    let line = source
        .lines()
        .position(|l| l.contains(&format!("// {mark}")))
        .unwrap_or_else(|| panic!("{mark}")) as u32
        + 1;
    let bytes = std::fs::read(classes.join(format!("{class}.class"))).unwrap();
    let (_, counts) = class_counts(d, class);
    let c =
        bci_rewriter::coverage::analysis::analyze(&bytes, Some(counts), Split::AfterCalls).unwrap();
    c.lines
        .get(&line)
        .unwrap_or_else(|| panic!("line {line}"))
        .hits
}

/// Calls still running when the data is written do not count as returned: a daemon thread
/// blocked in `take()` at exit, `main` inside `System.exit`, and `main` inside the call that
/// waits for a SIGQUIT snapshot. The code after each call shows as not run (before, the
/// count after a call, derived as its block's minus its exits, counted them as run once);
/// the snapshot's in-flight count is taken back at the next dump, so the final data is exact.
#[test]
fn calls_still_running_at_a_dump_do_not_count_as_returned() {
    let dir = tmp("inflight");
    let classes = compiled(&dir, "CovInflight", INFLIGHT);
    for how in ["exit", "return"] {
        let data = dir.join(format!("{how}.cov"));
        let snap = dir.join(format!("{how}-snap.cov"));
        let _ = std::fs::remove_file(&data);
        ok(java(
            &classes.display().to_string(),
            Some(&format!(
                "coverage=y,include=CovInflight,covfile={}",
                data.display()
            )),
            "CovInflight",
            &[
                &data.display().to_string(),
                &snap.display().to_string(),
                how,
            ],
        )
        .output()
        .unwrap());
        let (mid, end) = (read(&snap), read(&data));
        assert_eq!(
            inflight_hits(&mid, &classes, "AFTER_TAKE"),
            0,
            "{how}: snapshot"
        );
        assert_eq!(
            inflight_hits(&mid, &classes, "AFTER_SNAPSHOT"),
            0,
            "{how}: snapshot"
        );
        assert_eq!(inflight_hits(&end, &classes, "AFTER_TAKE"), 0, "{how}");
        assert_eq!(inflight_hits(&end, &classes, "AFTER_SNAPSHOT"), 1, "{how}");
        let after_exit = (how == "return") as u64;
        assert_eq!(
            inflight_hits(&end, &classes, "AFTER_EXIT"),
            after_exit,
            "{how}"
        );
        assert_eq!(
            entries(&end, &classes, "CovInflight", "consume"),
            1,
            "{how}"
        );
    }
}

/// CovRenumbered.go is retransformed by a java agent with ASM's AdviceAdapter, whose new
/// locals come first (LocalVariablesSorter: every local of the method renumbered), then runs
/// into System.exit. At the exit dump the call still running is found in the rewritten code:
/// its exit local by what is written to it (before: the slot the class hook kept, now another
/// local, was read, and the line after the call showed 6 runs for 5).
const RENUMBER: &str = r#"
import java.lang.instrument.*;
import org.objectweb.asm.*;
import org.objectweb.asm.commons.AdviceAdapter;

public class CovRenumber {
    public static int entries;

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 5; i++) CovRenumbered.go(i);
        ClassFileTransformer t = new ClassFileTransformer() {
            public byte[] transform(ClassLoader l, String name, Class<?> c,
                    java.security.ProtectionDomain pd, byte[] b) {
                if (!"CovRenumbered".equals(name)) return null;
                ClassReader r = new ClassReader(b);
                ClassWriter w = new ClassWriter(r, ClassWriter.COMPUTE_FRAMES);
                r.accept(new ClassVisitor(Opcodes.ASM9, w) {
                    public MethodVisitor visitMethod(int acc, String n, String d, String s, String[] e) {
                        MethodVisitor mv = super.visitMethod(acc, n, d, s, e);
                        if (!n.equals("go")) return mv;
                        return new AdviceAdapter(Opcodes.ASM9, mv, acc, n, d) {
                            protected void onMethodEnter() {
                                int k = newLocal(Type.LONG_TYPE);
                                visitInsn(LCONST_1);
                                visitVarInsn(LSTORE, k);
                                int l = newLocal(Type.INT_TYPE);
                                visitFieldInsn(GETSTATIC, "CovRenumber", "entries", "I");
                                visitInsn(ICONST_1);
                                visitInsn(IADD);
                                visitVarInsn(ISTORE, l);
                                visitVarInsn(ILOAD, l);
                                visitFieldInsn(PUTSTATIC, "CovRenumber", "entries", "I");
                            }
                        };
                    }
                }, ClassReader.EXPAND_FRAMES);
                return w.toByteArray();
            }
        };
        RedefAgent.inst.addTransformer(t, true);
        RedefAgent.inst.retransformClasses(CovRenumbered.class);
        CovRenumbered.go(500);
    }
}

class CovRenumbered {
    static int sink;

    static void go(int n) {
        int a = n + 1;
        sink = a;
        if (n > 100) {
            System.out.println("entries " + CovRenumber.entries);
            System.exit(0);
        }
        sink += a; // AFTER_EXIT: runs 5 times
    }
}
"#;

#[test]
fn calls_running_in_code_a_retransformation_renumbered_are_found() {
    let asm: Vec<PathBuf> = ["asm", "asm-commons", "asm-tree"]
        .iter()
        .map(|j| PathBuf::from(format!("/usr/share/java/{j}.jar")))
        .collect();
    if let Some(j) = asm.iter().find(|j| !j.exists()) {
        eprintln!(
            "skipped: {} not installed (apt-get install libasm-java)",
            j.display()
        );
        return;
    }
    let dir = tmp("renumber");
    let (classes, _, jar) = common::redefine_program(&dir);
    let src = dir.join("CovRenumber.java");
    std::fs::write(&src, RENUMBER).unwrap();
    let cp = std::iter::once(&classes)
        .chain(&asm)
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let o = Command::new(jdk_tool("javac"))
        .args(["-g", "-cp", &cp, "-d"])
        .arg(&classes)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let data = dir.join("run.cov");
    let o = ok(java(
        &cp,
        Some(&format!(
            "coverage=y,verbose=y,include=CovRenumbered,covfile={}",
            data.display()
        )),
        "CovRenumber",
        &[],
    )
    .env("JAVA_TOOL_OPTIONS", format!("-javaagent:{}", jar.display()))
    .output()
    .unwrap());
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    // the retransformation ran (its advice counted the last call)
    assert!(out.contains("entries 1"), "{out}\n{err}");
    let d = read(&data);
    assert_eq!(
        line_hits(&d, &classes, RENUMBER, "CovRenumbered", "AFTER_EXIT"),
        5,
        "{err}"
    );
    assert!(
        err.contains("coverage: 1 calls still running counted as their blocks' exits"),
        "{err}"
    );
}

/// doe=n: nothing is written at exit, for every output: no coverage data, no report; only a
/// SIGQUIT dumps. A report file made at start to check it can be written is not left behind
/// empty (one there before is left as it was). Before: coverage=y,doe=n wrote the coverage
/// data at exit anyway, and cpu=times,doe=n left an empty report file.
#[test]
fn doe_n_writes_only_on_sigquit() {
    let dir = tmp("doe-n");
    let classes = cov_sig(&dir);
    let cp = classes.display().to_string();
    let (data, prof) = (dir.join("n.cov"), dir.join("n.txt"));
    for opts in [
        format!(
            "cpu=times,coverage=y,doe=n,covfile={},file={}",
            data.display(),
            prof.display()
        ),
        format!("coverage=y,doe=n,covfile={}", data.display()),
        format!("cpu=times,doe=n,file={}", prof.display()),
        format!("cpu=times,doe=n,format=collapsed,file={}", prof.display()),
    ] {
        let o = ok(java(&cp, Some(&opts), "CovSig", &["run"]).output().unwrap());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !data.exists(),
            "{opts}: coverage data written at exit: {err}"
        );
        assert!(!prof.exists(), "{opts}: report file left: {err}");
    }
    // a report file that was there before: left as it was
    std::fs::write(&prof, "earlier\n").unwrap();
    ok(java(
        &cp,
        Some(&format!("cpu=times,doe=n,file={}", prof.display())),
        "CovSig",
        &["run"],
    )
    .output()
    .unwrap());
    assert_eq!(std::fs::read_to_string(&prof).unwrap(), "earlier\n");
    // SIGQUIT: its dumps, nothing added at exit (the data file as it was at the dump)
    let (data, prof, snap) = (dir.join("q.cov"), dir.join("q.txt"), dir.join("snap.cov"));
    ok(java(
        &cp,
        Some(&format!(
            "cpu=times,coverage=y,doe=n,covfile={},file={}",
            data.display(),
            prof.display()
        )),
        "CovSig",
        &[
            "quit",
            &data.display().to_string(),
            &snap.display().to_string(),
        ],
    )
    .output()
    .unwrap());
    assert_eq!(std::fs::read(&data).unwrap(), std::fs::read(&snap).unwrap());
    assert_eq!(entries(&read(&data), &classes, "CovSig", "work"), 1000);
    let report = std::fs::read_to_string(&prof).unwrap();
    assert_eq!(report.matches("CPU TIME (ms) BEGIN").count(), 1, "{report}");
}

/// SIGTERM ends the JVM through its exit path: the data is written.
#[test]
fn sigterm_writes_the_data() {
    let dir = tmp("sigterm");
    let classes = cov_sig(&dir);
    let data = dir.join("t.cov");
    let mut child = java(
        &classes.display().to_string(),
        Some(&format!("coverage=y,covfile={}", data.display())),
        "CovSig",
        &["term"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("ready"), "{line:?}");
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success(), "killed by SIGTERM: {:?}", o.status);
    let d = read(&data);
    assert_eq!(entries(&d, &classes, "CovSig", "work"), 1000);
    assert_eq!(entries(&d, &classes, "CovSig", "main"), 1);
}

const OPEN_TEST: &str = r#"
import bci.runtime.Cov;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;

public class CovOpenTest {
    static int work(int i) { return i * 2; }

    public static void main(String[] a) throws Exception {
        long s = 0;
        Cov.begin("t1");
        for (int i = 0; i < 10; i++) s += work(i);
        Cov.end("t1");
        Cov.begin("t2");
        for (int i = 0; i < 20; i++) s += work(i);
        if (a[0].equals("exit")) {
            System.exit(3);
        } else if (a[0].equals("term")) {
            System.out.println("ready " + s);
            System.out.flush();
            Thread.sleep(60_000);
        } else if (a[0].equals("quit")) {
            File f = new File(a[1]);
            long pid = ProcessHandle.current().pid();
            new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
            for (int k = 0; k < 400 && !f.exists(); k++) Thread.sleep(25);
            Thread.sleep(200);
            Files.copy(f.toPath(), new File(a[2]).toPath(), StandardCopyOption.REPLACE_EXISTING);
            for (int i = 0; i < 5; i++) s += work(i);
            Cov.end("t2");
        }
        System.out.println("done " + s);
    }
}
"#;

/// Entries of `CovOpenTest.work` in test `test`'s counts (0 when the test is absent).
fn test_entries(d: &CovData, classes: &Path, test: &str) -> u64 {
    let Some(t) = d.tests.get(test) else {
        return 0;
    };
    let one = CovData {
        classes: t.clone(),
        ..CovData::default()
    };
    entries(&one, classes, "CovOpenTest", "work")
}

/// A test still running when the JVM exits (`System.exit` in it, or SIGTERM, as a build tool's
/// fork timeout sends) keeps the counts since its begin, with the agent as offline (whose exit
/// ends it, Cov.writeAtExit). The agent's exit dump left it open: the test was missing from the
/// per-test data (1 test for 2) and its counts were "(outside tests)". A SIGQUIT snapshot in
/// the middle of a test leaves it running: the snapshot has no counts for it yet, and it gets
/// all of them when it ends.
#[test]
fn a_test_running_at_exit_keeps_its_counts() {
    let dir = tmp("open-test");
    let (classes, inst, rt) = (dir.join("classes"), dir.join("inst"), dir.join("rt"));
    for (path, bytes) in bciagent::runtime_jar::CLASSES {
        let f = rt.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, bytes).unwrap();
    }
    std::fs::create_dir_all(&classes).unwrap();
    let src = dir.join("CovOpenTest.java");
    std::fs::write(&src, OPEN_TEST).unwrap();
    let o = Command::new(jdk_tool("javac"))
        .args(["-g", "-cp"])
        .arg(&rt)
        .arg("-d")
        .arg(&classes)
        .arg(&src)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    instrument_offline(&classes, &inst, &rt);
    let cp = format!("{}:{}", classes.display(), rt.display());
    for how in ["exit", "term"] {
        for agent in [true, false] {
            let data = dir.join(format!("{how}-{agent}.cov"));
            let mut cmd = if agent {
                java(
                    &cp,
                    Some(&format!(
                        "coverage=y,include=CovOpenTest,covfile={}",
                        data.display()
                    )),
                    "CovOpenTest",
                    &[how],
                )
            } else {
                let mut c = offline_java(&data, &inst, &rt);
                c.args(["CovOpenTest", how]);
                c
            };
            let mut child = cmd
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            if how == "term" {
                let mut line = String::new();
                std::io::BufRead::read_line(
                    &mut std::io::BufReader::new(child.stdout.take().unwrap()),
                    &mut line,
                )
                .unwrap();
                assert!(line.starts_with("ready"), "{line:?}");
                let st = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status()
                    .unwrap();
                assert!(st.success());
            }
            let o = child.wait_with_output().unwrap();
            assert!(!o.status.success(), "{how}: {:?}", o.status);
            let err = String::from_utf8_lossy(&o.stderr);
            let d = read(&data);
            let what = format!("{how}, agent={agent}: {:?}\n{err}", d.tests.keys());
            assert_eq!(d.tests.keys().collect::<Vec<_>>(), ["t1", "t2"], "{what}");
            assert_eq!(test_entries(&d, &classes, "t1"), 10, "{what}");
            assert_eq!(test_entries(&d, &classes, "t2"), 20, "{what}");
            assert_eq!(entries(&d, &classes, "CovOpenTest", "work"), 30, "{what}");
        }
    }
    // SIGQUIT in the middle of t2 (agent): the snapshot has t1 only; t2 runs on and ends with
    // every count since its begin
    let (data, snap) = (dir.join("quit.cov"), dir.join("snap.cov"));
    ok(java(
        &cp,
        Some(&format!(
            "coverage=y,include=CovOpenTest,covfile={}",
            data.display()
        )),
        "CovOpenTest",
        &[
            "quit",
            &data.display().to_string(),
            &snap.display().to_string(),
        ],
    )
    .output()
    .unwrap());
    let s = read(&snap);
    assert_eq!(s.tests.keys().collect::<Vec<_>>(), ["t1"]);
    assert_eq!(entries(&s, &classes, "CovOpenTest", "work"), 30);
    let d = read(&data);
    assert_eq!(d.tests.keys().collect::<Vec<_>>(), ["t1", "t2"]);
    assert_eq!(test_entries(&d, &classes, "t1"), 10);
    assert_eq!(test_entries(&d, &classes, "t2"), 25);
    assert_eq!(entries(&d, &classes, "CovOpenTest", "work"), 35);
}

/// A program that holds every file descriptor it can get at exit (`ulimit -n 256`): the data
/// is written. The dump opened `<covfile>.lck`, the data and a temporary file then, and the
/// data was lost ("x.cov.lck: Too many open files") while the cpu=times report, opened at
/// start, was written; the lock file is now kept open from start, and two descriptors are
/// held in reserve for the dump.
#[test]
fn data_is_written_when_the_program_holds_every_descriptor() {
    let dir = tmp("fds");
    std::fs::write(
        dir.join("CovFds.java"),
        r#"
import java.io.*;
import java.util.*;
public class CovFds {
    static int f(int x) { return x + 1; }
    public static void main(String[] a) throws Exception {
        List<FileInputStream> l = new ArrayList<>();
        try { while (true) l.add(new FileInputStream("/dev/null")); }
        catch (IOException e) { System.out.println("exhausted " + (e.getMessage().contains("Too many open files"))); }
        long s = 0;
        for (int i = 0; i < 1000; i++) s += f(i);
        System.out.println("s=" + s);
    }
}
"#,
    )
    .unwrap();
    javac(&dir, &[dir.join("CovFds.java")]);
    let data = dir.join("fds.cov");
    let o = ok(Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$@\"")
        .arg("sh")
        .arg(jdk_tool("java"))
        .arg(format!(
            "-agentpath:{}=coverage=y,include=CovFds,covfile={}",
            agent_lib().display(),
            data.display()
        ))
        .arg("-cp")
        .arg(&dir)
        .arg("CovFds")
        .output()
        .unwrap());
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(out.starts_with("exhausted true\ns=500500"), "{out}");
    assert!(!err.contains("cannot write"), "{err}");
    let d = read(&data);
    assert_eq!(entries(&d, &dir, "CovFds", "f"), 1000, "{err}");
    assert_eq!(entries(&d, &dir, "CovFds", "main"), 1);
}

/// Two JVMs at once on one covfile: the file holds the sum and both sessions; eight threads
/// counting one method: exact.
#[test]
fn two_jvms_one_file_add_up_and_threads_count_exactly() {
    let dir = tmp("two");
    let classes = cov_sig(&dir);
    let data = dir.join("two.cov");
    let cp = classes.display().to_string();
    let opts = format!("coverage=y,covfile={}", data.display());
    let a = java(&cp, Some(&opts), "CovSig", &["threads"])
        .spawn()
        .unwrap();
    let b = java(&cp, Some(&opts), "CovSig", &["threads"])
        .spawn()
        .unwrap();
    ok(a.wait_with_output().unwrap());
    ok(b.wait_with_output().unwrap());
    let d = read(&data);
    assert_eq!(d.sessions.len(), 2, "{:?}", d.sessions);
    assert_eq!(
        entries(&d, &classes, "CovSig", "work"),
        2 * (1000 + 8 * 100_000)
    );
    assert_eq!(entries(&d, &classes, "CovSig", "main"), 2);
}

/// A covfile in a directory that does not exist stops the JVM at start, naming it.
#[test]
fn unwritable_covfile_refused_at_start() {
    let dir = tmp("unwritable");
    let classes = cov_sig(&dir);
    let o = java(
        &classes.display().to_string(),
        Some("coverage=y,covfile=/nonexistent-bci-dir/x.cov"),
        "CovSig",
        &["plain"],
    )
    .output()
    .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/nonexistent-bci-dir/x.cov"), "{err}");
}

/// Out of memory: a thread's first call into a covered class, when not even a spare array can
/// be allocated, runs on (its counts are lost, and the agent says so) instead of throwing
/// from the counters (test-classes/coverage-oom/CovOom.java).
#[test]
fn first_call_when_memory_is_exhausted_runs_on() {
    let dir = tmp("oom");
    javac(
        &dir,
        &[repo().join("test-classes/coverage-oom/CovOom.java")],
    );
    let data = dir.join("oom.cov");
    let opts = format!("coverage=y,include=CovOom*,covfile={}", data.display());
    let o = Command::new(jdk_tool("java"))
        .arg("-Xmx32m")
        .arg(format!("-agentpath:{}={opts}", agent_lib().display()))
        .arg("-cp")
        .arg(&dir)
        .arg("CovOom")
        .output()
        .unwrap();
    let o = ok(o);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "ok");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("could not be allocated"), "{err}");
    let d = read(&data);
    let (_, counts) = class_counts(&d, "CovOom$Target");
    assert!(counts.iter().any(|&c| c > 0), "{counts:?}");
}

/// Transparency: javac compiling the java/util sources of the JDK's src.zip (Debian package
/// openjdk-17-source, see agent/ci-packages.txt) with every class covered, JDK included, and
/// -Xverify:all gives byte-identical class files to a bare run; also with cpu=times. The data
/// holds javac's and java.util's classes with counts.
#[test]
fn javac_output_identical_with_coverage() {
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
    let o = Command::new("unzip")
        .arg("-q")
        .arg(&src_zip)
        .arg("java.base/java/util/*")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "unzip: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // the top-level java/util sources (what scripts/bench-coverage.sh compiles)
    let util = dir.join("java.base/java/util");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&util)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    sources.sort();
    assert!(sources.len() > 100, "{} sources", sources.len());
    let compile = |out: &str, agent: Option<String>| {
        let out = dir.join(out);
        std::fs::create_dir_all(&out).unwrap();
        let mut cmd = Command::new(jdk_tool("javac"));
        if let Some(opts) = agent {
            cmd.arg("-J-Xverify:all");
            cmd.arg(format!("-J-agentpath:{}={opts}", agent_lib().display()));
        }
        cmd.args(["-nowarn", "-XDignore.symbol.file", "--patch-module"])
            .arg(format!("java.base={}", dir.join("java.base").display()));
        cmd.arg("-d").arg(&out).args(&sources);
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "javac: {err}");
        assert!(
            !err.contains("VerifyError") && !err.contains("left original"),
            "{err}"
        );
        out
    };
    let bare = compile("bare", None);
    let cov = dir.join("javac.cov");
    let covered = compile(
        "cov",
        Some(format!("coverage=y,include=*,covfile={}", cov.display())),
    );
    let both = compile(
        "both",
        Some(format!(
            "cpu=times,coverage=y,include=*,covfile={},file={}",
            dir.join("both.cov").display(),
            dir.join("both.txt").display()
        )),
    );
    // every class file javac wrote (sources it pulled in through --patch-module included)
    fn files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let list = |root: &Path| {
        let mut v = Vec::new();
        files(root, root, &mut v);
        v.sort();
        v
    };
    let classes = list(&bare);
    assert!(classes.len() > 300, "{} classes", classes.len());
    for other in [&covered, &both] {
        assert_eq!(list(other), classes, "{}", other.display());
        for c in &classes {
            let a = std::fs::read(bare.join(c)).unwrap();
            let b = std::fs::read(other.join(c)).unwrap();
            assert!(
                a == b,
                "{c:?} differs under the agent ({})",
                other.display()
            );
        }
    }
    let d = read(&cov);
    let ran = |name: &str| {
        d.classes
            .iter()
            .any(|((c, _), v)| c == name && v.iter().any(|&x| x > 0))
    };
    assert!(ran("com/sun/tools/javac/parser/JavacParser"));
    assert!(ran("java/util/HashMap"));
    assert!(ran("java/lang/String"));
}

/// A method the counters grow past HotSpot's 8000-byte compile limit (`HugeMethodLimit`) is
/// still JIT-compiled: the agent turns `-XX:+DontCompileHugeMethods` off when such a method
/// loads (compilehuge=y, the default), and with compilehuge=n leaves the flag and names the
/// method. Seen in -XX:+PrintCompilation, which lists every compiled method.
#[test]
fn methods_past_the_jit_size_limit_are_still_compiled() {
    let dir = tmp("huge");
    javac(
        &dir,
        &[repo().join("test-classes/coverage-huge/CovHuge.java")],
    );
    // the precondition: under the limit before, over it with the counters
    let bytes = std::fs::read(dir.join("CovHuge.class")).unwrap();
    let opts = Options {
        runtime: "java/lang/BciCov",
        split: Split::AfterCalls,
        class_id: ClassId::Constant(1),
    };
    let (_, cov) = bci_rewriter::coverage::instrument(&bytes, &opts).unwrap();
    assert_eq!(cov.huge.len(), 1, "{:?}", cov.huge);
    let (name, _, before, after) = &cov.huge[0];
    assert_eq!(name, "big");
    assert!(
        *before > 4000 && *before <= 8000 && *after > 8000,
        "{before} -> {after}"
    );
    let expect = "sum 28776000";
    let run = |agent: Option<&str>| -> (String, String) {
        let mut cmd = Command::new(jdk_tool("java"));
        cmd.arg("-XX:+PrintCompilation");
        if let Some(o) = agent {
            cmd.arg(format!(
                "-agentpath:{}=coverage=y,include=CovHuge,covfile={},{o}",
                agent_lib().display(),
                dir.join("huge.cov").display()
            ));
        }
        let o = ok(cmd.arg("-cp").arg(&dir).arg("CovHuge").output().unwrap());
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(out.contains(expect), "wrong output: {out}");
        (out, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let compiled = |out: &str| out.lines().any(|l| l.contains("CovHuge::big "));
    let (out, _) = run(None);
    assert!(compiled(&out), "bare: CovHuge.big not compiled:\n{out}");
    let (out, err) = run(Some("compilehuge=y"));
    assert!(
        compiled(&out),
        "covered: CovHuge.big not compiled:\n{out}\n{err}"
    );
    assert!(
        err.contains("CovHuge.big(I)I") && err.contains("DontCompileHugeMethods turned off"),
        "{err}"
    );
    let (out, err) = run(Some("compilehuge=n"));
    assert!(
        !compiled(&out),
        "compilehuge=n: CovHuge.big compiled:\n{out}"
    );
    assert!(
        err.contains(&format!(
            "CovHuge.big(I)I: coverage counters grow its code from {before} to {after} bytes"
        )) && err.contains("-XX:-DontCompileHugeMethods"),
        "{err}"
    );
}

/// Reflection and deserialization with every class covered (the default include): on JDK 17
/// the classes the JDK generates for them (jdk.internal.reflect.Generated*) failed to
/// initialize once they had counters (NoClassDefFoundError at the 16th Method.invoke, jython
/// and rhino died of it); they are left out of coverage, as JaCoCo leaves them out.
#[test]
fn reflection_and_serialization_run_under_coverage() {
    let dir = tmp("reflect");
    javac(
        &dir,
        &[repo().join("test-classes/coverage-reflect/CovReflect.java")],
    );
    let cp = dir.display().to_string();
    for (what, expect) in [
        ("method", "method ok 210"),
        ("ctor", "ctor ok 20"),
        ("serial", "serial ok 3"),
    ] {
        let data = dir.join(format!("{what}.cov"));
        let o = ok(java(
            &cp,
            Some(&format!("coverage=y,covfile={}", data.display())),
            "CovReflect",
            &[what],
        )
        .output()
        .unwrap());
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.lines().any(|l| l == expect), "{what}: {out}");
        let d = read(&data);
        assert!(
            !d.classes.keys().any(|(n, _)| n.contains("/Generated")),
            "{what}: a generated accessor has counters"
        );
        if what == "method" {
            assert_eq!(entries(&d, &dir, "CovReflect", "t"), 20);
        }
    }
}

/// JFR next to coverage of every class: JFR checks that each of its event classes and its
/// mirror (jdk.jfr.events.*, jdk.internal.event.*) declare the same fields, and the
/// serialVersionUID coverage added to one of a pair stopped the JVM at start ("Found
/// additional fields in mirror class [serialVersionUID]"; found by the JVM-configurations
/// hunt). Those classes are left out of coverage; the program is covered and JFR records.
#[test]
fn flight_recorder_starts_under_coverage() {
    let dir = tmp("jfr");
    let classes = compiled(
        &dir,
        "CovJfr",
        "public class CovJfr { static int f(int x) { return x * 2; }\n\
         public static void main(String[] a) { int s = 0; for (int i = 0; i < 7; i++) s += f(i);\n\
         System.out.println(\"jfr \" + s); } }\n",
    );
    let data = dir.join("jfr.cov");
    let rec = dir.join("rec.jfr");
    let mut cmd = java(
        classes.to_str().unwrap(),
        Some(&format!("coverage=y,covfile={}", data.display())),
        "CovJfr",
        &[],
    );
    cmd.env(
        "JDK_JAVA_OPTIONS",
        format!(
            "-XX:StartFlightRecording=filename={},dumponexit=true",
            rec.display()
        ),
    );
    let o = ok(cmd.output().unwrap());
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("jfr 42"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(rec.metadata().is_ok_and(|m| m.len() > 0), "no recording");
    let d = read(&data);
    assert_eq!(entries(&d, &classes, "CovJfr", "f"), 7);
    assert!(
        !d.classes
            .keys()
            .any(|(n, _)| n.starts_with("jdk/jfr/events/") || n.starts_with("jdk/internal/event/")),
        "a JFR event class has counters"
    );
}

/// `src` (class `main`, in `main`.java) compiled into `dir/classes` and run bare, under
/// coverage=y of its classes and instrumented offline with the runtime jar's classes. Returns
/// the classes, the three outputs (each run must succeed) and the agent's and the offline data.
fn bare_agent_offline(
    dir: &Path,
    main: &str,
    src: &str,
) -> (PathBuf, [String; 3], CovData, CovData) {
    let file = dir.join(format!("src/{main}.java"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, src).unwrap();
    let classes = dir.join("classes");
    javac(&classes, &[file]);
    let (inst, rt) = (dir.join("inst"), dir.join("rt"));
    instrument_offline(&classes, &inst, &rt);
    let (agent, offline) = (dir.join("agent.cov"), dir.join("offline.cov"));
    let cp = classes.display().to_string();
    let bare = ok(java(&cp, None, main, &[]).output().unwrap());
    let opts = format!("coverage=y,include={main}*,covfile={}", agent.display());
    let covered = ok(java(&cp, Some(&opts), main, &[]).output().unwrap());
    let off = ok(offline_java(&offline, &inst, &rt)
        .arg("-Xverify:all")
        .arg(main)
        .output()
        .unwrap());
    let out = [bare, covered, off].map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    (classes, out, read(&agent), read(&offline))
}

const COV_ANN: &str = r#"
import java.lang.annotation.*;
import java.util.*;
public class CovAnn {
    @Retention(RetentionPolicy.RUNTIME) @interface Tag {
        String value() default "d";
        int[] nums() default {1, 2};
        List<String> REG = new ArrayList<>(List.of("r"));
    }
    @Tag(value = "x", nums = {3}) static class A {}
    @Tag static class B {}
    @Tag static class C {}
    public static void main(String[] a) {
        Tag t = A.class.getAnnotation(Tag.class), u = B.class.getAnnotation(Tag.class);
        Tag v = C.class.getAnnotation(Tag.class);
        System.out.println(t.value() + Arrays.toString(t.nums()) + " " + Tag.REG + " eq="
            + t.equals(u) + " " + u.equals(v) + " hash=" + (u.hashCode() == v.hashCode()) + " " + u);
    }
}
"#;

/// An annotation type with code (a static initializer), covered: its annotations compare and
/// hash as bare, under the agent and offline. Before, it got the lookup helper `bci$a(I)[J`,
/// and the JDK takes a method of an annotation type with parameters for a malformed element:
/// `equals` threw AnnotationFormatError ("Malformed method on an annotation type"). It asks the
/// runtime's `arr` now, as interfaces before Java 8 do; its `<clinit>` counts once.
#[test]
fn annotation_types_with_code_keep_equals_and_hash_code() {
    let dir = tmp("annotation");
    let (classes, out, agent, offline) = bare_agent_offline(&dir, "CovAnn", COV_ANN);
    assert!(
        out[0].starts_with("x[3] [r] eq=false true hash=true @"),
        "{}",
        out[0]
    );
    assert_eq!(out[1], out[0], "under the agent");
    assert_eq!(out[2], out[0], "offline");
    for d in [&agent, &offline] {
        assert_eq!(entries(d, &classes, "CovAnn$Tag", "<clinit>"), 1);
    }
}

const COV_SUID: &str = r#"
import java.io.*;
public class CovSuid {
    // names of a character above U+FFFF (U+1D49C, a surrogate pair) and one of U+E000..U+FFFF
    // (U+FF21): String.compareTo and the order of their UTF-8 bytes disagree
    static class U implements Serializable {
        int \uFF21 = 1;
        int \uD835\uDC9C = 2;
        void \uFF21() {}
        void \uD835\uDC9C() {}
    }
    public static void main(String[] a) {
        new U();
        System.out.println("suid=" + ObjectStreamClass.lookup(U.class).getSerialVersionUID());
    }
}
"#;

/// A Serializable class without serialVersionUID that coverage gives a `<clinit>`: the one it
/// declares is the JDK's default of the original class (ObjectStreamClass.lookup, bare), under
/// the agent and offline, for member names that sort differently by UTF-16 code units (the
/// JDK's String order) and by UTF-8 bytes. Before, members were sorted by their bytes: another
/// value, and objects written bare did not deserialize covered.
#[test]
fn default_serial_version_uid_sorts_names_as_the_jdk() {
    let dir = tmp("suid");
    let (classes, out, agent, _) = bare_agent_offline(&dir, "CovSuid", COV_SUID);
    assert!(out[0].starts_with("suid="), "{}", out[0]);
    assert_eq!(out[1], out[0], "under the agent");
    assert_eq!(out[2], out[0], "offline");
    // the class was covered (so it got a <clinit> and the field)
    assert_eq!(entries(&agent, &classes, "CovSuid$U", "<init>"), 1);
}

/// A class redefined by another agent (Instrumentation.redefineClasses, an IDE's HotSwap)
/// with different code: the redefinition succeeds (before, the new bytes lacked the fields and
/// methods coverage gave the loaded version, and the JVM refused them: "attempted to change
/// the schema"), and the new version counts into its own data, under the hash of its own bytes
/// (its counters are numbered for its code), none in the first version's counters; the first
/// version keeps its counts from before, retransformation included.
#[test]
fn redefined_classes_count_into_their_own_data() {
    redefined_counts("redefine", |b| b.to_vec());
}

/// test-classes/redefine under coverage=y, its second version of Target given as `v2` makes
/// it: both versions count exactly, each into its own data.
fn redefined_counts(name: &str, v2_bytes: impl Fn(&[u8]) -> Vec<u8>) {
    let dir = tmp(name);
    let program = common::redefine_program(&dir);
    let (classes, v2, _) = &program;
    let target = v2.join("Target.class");
    std::fs::write(&target, v2_bytes(&std::fs::read(&target).unwrap())).unwrap();
    let file = dir.join("r.cov");
    let o = ok(common::run_redefine(
        &format!("coverage=y,include=Target,covfile={}", file.display()),
        &program,
    ));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("s=151500"), "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("Target"), "{err}");
    let d = read(&file);
    for (from, calls) in [(classes, 300), (v2, 400)] {
        let bytes = std::fs::read(from.join("Target.class")).unwrap();
        let plan = plan_class(&bytes, Split::AfterCalls).unwrap();
        let counts = d
            .classes
            .iter()
            .find(|((n, h), _)| n == "Target" && *h == plan.hash)
            .unwrap_or_else(|| panic!("no data for Target of {}", from.display()))
            .1;
        assert_eq!(counts.len(), plan.counters as usize);
        for name in ["f", "g"] {
            let m = plan.methods.iter().find(|m| m.name == name).unwrap();
            assert_eq!(
                counts[entry_counter(m).unwrap() as usize],
                calls,
                "Target.{name} of {}",
                from.display()
            );
        }
    }
    assert_eq!(d.classes.keys().filter(|(n, _)| n == "Target").count(), 2);
}

/// A redefinition with bytes that declare the loaded version's coverage fields, `bci$s` and
/// `bci$o`, but not its helpers or added `<clinit>`: what Byte Buddy makes from a loaded class
/// (`new ByteBuddy().redefine(Foo.class)`: fields as reflection shows them, methods from the
/// class file). Instrumented with those fields, the new version has the loaded one's members:
/// the redefinition succeeds and counts as any other. Before, adding the fields again failed
/// ("field bci$s [J exists already"), the bytes were left as given, and the JVM refused them
/// ("attempted to delete a method"): the program died.
#[test]
fn redefinitions_declaring_the_coverage_fields_keep_the_loaded_members() {
    use bci::class::{ACC_FINAL, ACC_PRIVATE, ACC_STATIC, ACC_SYNTHETIC};
    redefined_counts("redefine-fields", |b| {
        let cf = bci::ClassFile::parse(b).unwrap();
        let mut w = bci::ClassWriter::new(&cf);
        let access = ACC_PRIVATE | ACC_STATIC | ACC_FINAL | ACC_SYNTHETIC;
        w.add_field(access, "bci$s", "[J").unwrap();
        w.add_field(access, "bci$o", "Ljava/lang/Object;").unwrap();
        w.finish().unwrap()
    });
}

/// The hook's engine on a redefinition: the new bytes get coverage only when the loaded version
/// has it, and only with the loaded version's fields; otherwise they are left as given (the
/// redefinition then does what it would without the agent), with the reason, and the class id
/// reserved for them is forgotten (no empty entry in the data).
#[test]
fn a_redefinition_never_changes_the_loaded_fields() {
    use bciagent::coverage::CovRegistry;
    use bciagent::registry::Registry;
    use bciagent::rewrite::Engine;
    let dir = tmp("redefine-engine");
    let (_, v2, _) = common::redefine_program(&dir);
    let bytes = std::fs::read(v2.join("Target.class")).unwrap();
    let opts = bciagent::options::parse(Some("coverage=y,include=Target")).unwrap();
    let engine = Engine::new(&opts).unwrap();
    let (reg, cov) = (Registry::new(), CovRegistry::new());
    let fields = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let run = |loaded: &[String]| {
        engine
            .instrument("Target", &bytes, &reg, &cov, false, Some(loaded))
            .unwrap()
    };
    // loaded with coverage: the same fields, a class id of its own
    let r = run(&fields(&["bci$s", "bci$o"]));
    let out = r.bytes.expect("instrumented");
    let cf = bci::ClassFile::parse(&out).unwrap();
    let mut names: Vec<String> = cf
        .fields
        .iter()
        .map(|f| cf.member_name(f).into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["bci$o", "bci$s"]);
    assert!(r.cov_id.is_some() && r.left.is_empty(), "{:?}", r.left);
    assert_eq!(cov.len(), 1);
    // loaded without coverage (it failed, or the class was loaded before the hook): none now
    let r = run(&[]);
    assert!(r.bytes.is_none() && r.cov_id.is_none());
    // fields that would differ anyway: left as given, said why, the id forgotten
    let r = run(&fields(&["bci$s"]));
    assert!(r.bytes.is_none() && r.cov_id.is_none());
    assert!(
        r.left.iter().any(|l| l.starts_with("Target: redefined: ")),
        "{:?}",
        r.left
    );
    assert_eq!(cov.len(), 1);
}
