//! End-to-end checks of the agent's reliability: the report file (checked at start, never
//! shared by two JVMs), nothing on the program's stdout, collapsed snapshots, classes and
//! methods left original, constructors with several initialization calls.
//!
//! Needs a JDK (JAVA_HOME, or /usr/lib/jvm/java-17-openjdk-amd64, or java/javac on PATH).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
mod common;
use common::{agent_lib, jdk_tool};

fn tmp(name: &str) -> PathBuf {
    common::tmp("rel", name)
}

/// Writes `src` as `<dir>/<class>.java` and compiles it into `dir`.
fn compile(dir: &Path, class: &str, src: &str, cp: &[&str]) {
    let f = dir.join(format!("{class}.java"));
    std::fs::write(&f, src).unwrap();
    let mut cmd = Command::new(jdk_tool("javac"));
    cmd.arg("-g").arg("-d").arg(dir);
    if !cp.is_empty() {
        cmd.arg("-cp").arg(cp.join(":"));
    }
    let o = cmd.arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn java(cp: &str, main: &str, opts: &str, extra: &[&str], args: &[&str]) -> Output {
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg(format!("-agentpath:{}={}", agent_lib().display(), opts));
    cmd.args(extra).arg("-cp").arg(cp).arg(main).args(args);
    cmd.output().unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Count of `method` (e.g. `Two.f(I)I`) in a report's METHODS table, 0 if absent.
fn method_count(report: &str, method: &str) -> u64 {
    let mut inside = false;
    for l in report.lines() {
        if l.starts_with("METHODS BEGIN") {
            inside = true;
            continue;
        }
        if l.starts_with("METHODS END") {
            inside = false;
        }
        let cols: Vec<&str> = l.split_whitespace().collect();
        if inside && cols.len() == 7 && cols[6] == method {
            return cols[3].parse().unwrap();
        }
    }
    0
}

const SMALL: &str = r#"
public class Small {
    static int f(int x) { return x + 1; }
    public static void main(String[] a) {
        int s = 0;
        for (int i = 0; i < 321; i++) s += f(i);
        System.out.println("small " + s);
    }
}
"#;

/// An unwritable `file=` stops the JVM at start, naming the path and the OS error (it was
/// found only at exit, the run's data lost and the exit status 0).
#[test]
fn unwritable_file_refused_at_start() {
    let dir = tmp("unwritable");
    compile(&dir, "Small", SMALL, &[]);
    let bad = dir.join("no-such-dir").join("out.txt");
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("file={}", bad.display()),
        &[],
        &[],
    );
    let (out, err) = text(&o);
    assert!(!o.status.success(), "must not start: {out}{err}");
    assert!(!out.contains("small"), "the program ran: {out}");
    assert!(
        err.contains(&bad.display().to_string()) && err.contains("No such file or directory"),
        "{err}"
    );
    // a bad % sequence is a bad option too
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("file={}/x%q", dir.display()),
        &[],
        &[],
    );
    let (_, err) = text(&o);
    assert!(!o.status.success() && err.contains("%q"), "{err}");
}

/// `java` as [`java`] does, killed after `secs` seconds: None if it had to be.
fn java_within(secs: u64, cp: &str, main: &str, opts: &str) -> Option<Output> {
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg(format!("-agentpath:{}={}", agent_lib().display(), opts));
    cmd.arg("-cp").arg(cp).arg(main);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(child.wait_with_output().unwrap())
}

/// A `covfile=` that is not a regular file stops the JVM at start, saying what it is: the data
/// is read, added to and replaced by rename. Before, a FIFO hung the JVM at exit (its open for
/// reading blocked; SIGTERM did nothing), and a device (a private mknod copy of /dev/null) was
/// replaced by a regular file, with `<device>.lck` made beside it (found by the output-files
/// hunt). The mknod case is skipped, said on stderr, where mknod is not permitted.
#[test]
fn covfile_not_a_regular_file_refused_at_start() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tmp("covfile-special");
    compile(&dir, "Small", SMALL, &[]);
    for (tool, args, what) in [
        ("mkfifo", &[][..], "a FIFO (named pipe)"),
        ("mknod", &["c", "1", "3"][..], "a character device"),
    ] {
        let cf = dir.join(format!("{tool}.cov"));
        let _ = std::fs::remove_file(&cf);
        let _ = std::fs::remove_file(dir.join(format!("{tool}.cov.lck")));
        let made = Command::new(tool).arg(&cf).args(args).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("{tool} not permitted here: the {what} case is skipped");
            continue;
        }
        let o = java_within(
            30,
            dir.to_str().unwrap(),
            "Small",
            &format!("coverage=y,include=Small,covfile={}", cf.display()),
        )
        .unwrap_or_else(|| panic!("{what}: the JVM hung"));
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{what}: must not start: {out}{err}");
        assert!(!out.contains("small"), "the program ran: {out}");
        assert!(
            err.contains(&format!(
                "covfile={} is {what}, not a regular file",
                cf.display()
            )),
            "{err}"
        );
        let t = std::fs::symlink_metadata(&cf).unwrap().file_type();
        assert!(t.is_fifo() || t.is_char_device(), "{what}: replaced: {t:?}");
        assert!(!dir.join(format!("{tool}.cov.lck")).exists());
    }
}

/// A `covfile=` name whose lock file can be made but whose temporary file (`<name>.tmp<pid>`,
/// renamed over the data at a dump) cannot stops the JVM at start: with a 250-byte name the
/// run went on and its data was lost at exit ("File name too long", exit status 0; found by
/// the output-files hunt).
#[test]
fn covfile_whose_temporary_file_cannot_be_made_refused_at_start() {
    let dir = tmp("covfile-long");
    compile(&dir, "Small", SMALL, &[]);
    let cf = dir.join(format!("{}.cov", "x".repeat(246)));
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("coverage=y,include=Small,covfile={}", cf.display()),
        &[],
        &[],
    );
    let (out, err) = text(&o);
    assert!(!o.status.success(), "must not start: {out}{err}");
    assert!(!out.contains("small"), "the program ran: {out}");
    assert!(
        err.contains(&format!(
            "covfile={}: cannot write {}.tmp",
            cf.display(),
            cf.display()
        )) && err.contains("File name too long"),
        "{err}"
    );
}

/// A JVM whose dump waits for `<covfile>.lck`, held by another process, says so on stderr
/// after about 2 s, once, with the path and the holder's pid, and waits on: its data is
/// written when the lock is released. Before, it waited without a word (found by the
/// output-files hunt). Skipped, said on stderr, without python3 (the other holder).
#[test]
fn covfile_lock_held_elsewhere_is_said_and_waited_for() {
    let dir = tmp("covfile-lockheld");
    compile(&dir, "Small", SMALL, &[]);
    let cf = dir.join("c.cov");
    let _ = std::fs::remove_file(&cf);
    let lck = dir.join("c.cov.lck");
    let holder = Command::new("python3")
        .arg("-c")
        .arg(
            "import fcntl,sys,time\n\
             f=open(sys.argv[1],'a'); fcntl.lockf(f, fcntl.LOCK_EX)\n\
             print('locked', flush=True); time.sleep(5)",
        )
        .arg(&lck)
        .stdout(std::process::Stdio::piped())
        .spawn();
    let Ok(mut holder) = holder else {
        eprintln!("no python3: covfile_lock_held_elsewhere_is_said_and_waited_for skipped");
        return;
    };
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("coverage=y,include=Small,covfile={}", cf.display()),
        &[],
        &[],
    );
    let _ = holder.wait();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let said = format!(
        "waiting for the lock on {}, held by another process (pid {})",
        lck.display(),
        holder.id()
    );
    assert_eq!(err.matches(&said).count(), 1, "{err}");
    assert!(
        err.contains(&format!("written to {}", cf.display())),
        "{err}"
    );
    assert!(std::fs::metadata(&cf).unwrap().len() > 0);
}

/// The JDK 25 `java`, None (skipped, said on stderr) where it is not installed.
fn java25() -> Option<PathBuf> {
    common::jdk25().map(|j| j.join("bin/java"))
}

/// `java` (a given JDK's) with the agent and JVM options `extra`, run in `dir` with the class
/// path `cp` (relative to `dir`).
fn java_in(java: &Path, dir: &Path, cp: &str, main: &str, opts: &str, extra: &[&str]) -> Output {
    Command::new(java)
        .current_dir(dir)
        .args(extra)
        .arg(format!("-agentpath:{}={}", agent_lib().display(), opts))
        .arg("-cp")
        .arg(cp)
        .arg(main)
        .output()
        .unwrap()
}

/// JDK 25: an AOT cache training run (`-XX:AOTMode=record`, `-XX:AOTCacheOutput=`) with the
/// classes the agent rewrites (java.lang.Thread: cpu=times, coverage with the early hook) made
/// HotSpot's archive writer crash at exit (SIGSEGV in ArchiveBuilder, rc 134, hs_err, the
/// report left empty). It stops the JVM at start, naming the flag and what to do; a rules= file
/// alone and coverage without the early hook (Thread unchanged) train as before.
#[test]
fn aot_cache_training_run_refused_where_it_would_crash() {
    let Some(java) = java25() else { return };
    let dir = tmp("aotrecord");
    compile(&dir, "Small", SMALL, &[]);
    // (an AOT cache takes no non-empty directory on the class path: a jar)
    let cp = "small.jar";
    let jar = Command::new(jdk_tool("jar"))
        .current_dir(&dir)
        .args(["cf", cp, "Small.class"])
        .output()
        .unwrap();
    assert!(
        jar.status.success(),
        "{}",
        String::from_utf8_lossy(&jar.stderr)
    );
    for (opts, flags) in [
        (
            "cpu=times,file=p.txt",
            &["-XX:AOTMode=record", "-XX:AOTConfiguration=a.conf"][..],
        ),
        (
            "coverage=y,covfile=c.cov",
            &["-XX:AOTCacheOutput=a.aot"][..],
        ),
    ] {
        let o = java_in(&java, &dir, cp, "Small", opts, flags);
        let (out, err) = text(&o);
        assert!(
            !o.status.success(),
            "{opts} {flags:?} must not start: {out}{err}"
        );
        assert!(!out.contains("small"), "the program ran: {out}");
        assert!(
            err.contains(&format!("bciagent: {}", flags[0]))
                && err.contains("crashes")
                && err.contains("without the agent"),
            "{err}"
        );
        assert!(!dir.join("p.txt").exists() && !dir.join("c.cov.lck").exists());
    }
    let rules = dir.join("r.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"f\"\nclass = \"Small\"\nmethod = \"f\"\ncount = true\n",
    )
    .unwrap();
    for opts in [
        format!("rules={}", rules.display()),
        "coverage=y,include=Small,covfile=c.cov".to_string(),
    ] {
        let o = java_in(
            &java,
            &dir,
            cp,
            "Small",
            &opts,
            &["-XX:AOTMode=record", "-XX:AOTConfiguration=b.conf"],
        );
        let (out, err) = text(&o);
        assert!(
            o.status.success() && out.contains("small 51681"),
            "{opts}: {out}{err}"
        );
        assert!(!err.contains("AOTMode"), "{err}");
    }
}

/// `-Xshare:on` (and JDK 25's `-XX:AOTMode=on`) with the early class hook, which turns CDS
/// off: the JVM failed to start, JDK 25 saying only "Unable to map shared spaces". It stops at
/// start naming the flag and the way out; `-Xshare:on` overridden by a later `-Xshare:auto`,
/// and coverage of application classes only (no early hook), run.
#[test]
fn xshare_on_with_the_early_hook_refused_at_start() {
    let dir = tmp("xshareon");
    compile(&dir, "Small", SMALL, &[]);
    let default = jdk_tool("java");
    let java25 = java25();
    for java in std::iter::once(&default).chain(java25.as_ref()) {
        for (opts, flags, hint) in [
            ("cpu=times,file=p.txt", &["-Xshare:on"][..], false),
            ("coverage=y,covfile=c.cov", &["-Xshare:on"][..], true),
        ] {
            let o = java_in(java, &dir, ".", "Small", opts, flags);
            let (out, err) = text(&o);
            assert!(!o.status.success() && !out.contains("small"), "{out}{err}");
            assert!(
                err.contains("bciagent: -Xshare:on: this agent's early class hook")
                    && err.contains("-Xshare:auto")
                    && err.contains("include=") == hint,
                "{java:?} {opts}: {err}"
            );
        }
        for (opts, flags) in [
            ("cpu=times,file=p.txt", &["-Xshare:on", "-Xshare:auto"][..]),
            (
                "coverage=y,include=Small,covfile=c.cov",
                &["-Xshare:on"][..],
            ),
        ] {
            let o = java_in(java, &dir, ".", "Small", opts, flags);
            let (out, err) = text(&o);
            assert!(
                o.status.success() && out == "small 51681\n",
                "{java:?} {opts}: {out}{err}"
            );
        }
    }
    let Some(java) = java25 else { return };
    let o = java_in(
        &java,
        &dir,
        ".",
        "Small",
        "cpu=times,file=p.txt",
        &["-XX:AOTMode=on"],
    );
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}{err}");
    assert!(
        err.contains("bciagent: -XX:AOTMode=on: this agent's early class hook"),
        "{err}"
    );
}

/// `-XX:+ExitOnOutOfMemoryError` (and CrashOnOutOfMemoryError): HotSpot leaves with
/// os::_exit when the heap runs out, before any JVMTI event (ResourceExhausted comes after,
/// VMDeath never), so nothing can be written: said on stderr at start, and only then.
#[test]
fn exit_on_out_of_memory_error_warned_at_start() {
    let dir = tmp("exitoom");
    compile(&dir, "Small", SMALL, &[]);
    let java = jdk_tool("java");
    for (flags, warned) in [
        (&["-XX:+ExitOnOutOfMemoryError"][..], Some("exits")),
        (&["-XX:+CrashOnOutOfMemoryError"][..], Some("crashes")),
        (&[][..], None),
        (&["-XX:-ExitOnOutOfMemoryError"][..], None),
    ] {
        let o = java_in(&java, &dir, ".", "Small", "cpu=times,file=p.txt", flags);
        let (out, err) = text(&o);
        assert!(o.status.success() && out == "small 51681\n", "{out}{err}");
        let line = warned.map(|how| {
            format!(
                "bciagent: {}: if the heap runs out, the JVM {how} without telling agents: no \
                 report/coverage data is written\n",
                flags[0]
            )
        });
        assert_eq!(
            err.lines()
                .find(|l| l.contains("OutOfMemoryError"))
                .map(|l| format!("{l}\n")),
            line,
            "{err}"
        );
    }
}

/// `-Xrs` and `-XX:+ReduceSignalUsage` (the flag -Xrs sets): HotSpot leaves SIGTERM, SIGINT
/// and SIGHUP to their default action (the JVM ends without VMDeath: no report, no coverage
/// data) and SIGQUIT kills it: said on stderr at start, and only then. Before, nothing was said
/// (found by the lifecycle and signals hunt).
#[test]
fn reduce_signal_usage_warned_at_start() {
    let dir = tmp("xrs");
    compile(&dir, "Small", SMALL, &[]);
    let java = jdk_tool("java");
    for (flags, warned) in [
        (&["-Xrs"][..], true),
        (&["-XX:+ReduceSignalUsage"][..], true),
        (&[][..], false),
    ] {
        let o = java_in(&java, &dir, ".", "Small", "cpu=times,file=p.txt", flags);
        let (out, err) = text(&o);
        assert!(o.status.success() && out == "small 51681\n", "{out}{err}");
        let line = "bciagent: -Xrs (-XX:+ReduceSignalUsage): SIGTERM, SIGINT (Ctrl-C) and SIGHUP \
                    end the JVM without telling agents (no report/coverage data is written), \
                    and SIGQUIT kills it (no snapshot)\n";
        assert_eq!(
            err.matches(line).count(),
            usize::from(warned),
            "{flags:?}: {err}"
        );
    }
}

/// Two JVMs running at the same time with the same `file=`: both reports are kept (the second
/// writes `<file>.<pid>` and says so); `%p` gives each JVM its own file.
#[test]
fn two_jvms_same_file_both_reports_kept() {
    let dir = tmp("twojvms");
    // each JVM announces itself, then waits until the other has started too: both agents
    // hold their report files at the same time
    compile(
        &dir,
        "Two",
        r#"
import java.nio.file.*;
public class Two {
    static int f(int x) { return x + 1; }
    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[1]);
        int s = 0;
        for (int i = 0; i < n; i++) s += f(i);
        Path dir = Path.of(a[0]);
        Files.writeString(dir.resolve("started-" + n), "");
        for (int i = 0; i < 600; i++) {
            long k;
            try (var st = Files.list(dir)) { k = st.filter(p -> p.getFileName().toString().startsWith("started-")).count(); }
            if (k >= 2) break;
            Thread.sleep(50);
        }
        System.out.println("two " + s);
    }
}
"#,
        &[],
    );
    let rep = dir.join("reports");
    std::fs::create_dir_all(&rep).unwrap();
    let sync = dir.join("sync");
    std::fs::create_dir_all(&sync).unwrap();
    let file = rep.join("out.txt");
    let spawn = |n: &str| {
        let mut cmd = Command::new(jdk_tool("java"));
        cmd.arg(format!(
            "-agentpath:{}=file={}",
            agent_lib().display(),
            file.display()
        ))
        .arg("-cp")
        .arg(&dir)
        .arg("Two")
        .arg(&sync)
        .arg(n)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    };
    let a = spawn("111");
    let b = spawn("222");
    let (oa, ob) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(oa.status.success() && ob.status.success());
    let warned = [&oa, &ob]
        .iter()
        .filter(|o| text(o).1.contains("in use by another running JVM"))
        .count();
    assert_eq!(warned, 1, "exactly one JVM is told to use another file");
    let mut counts = Vec::new();
    for e in std::fs::read_dir(&rep).unwrap() {
        let r = std::fs::read_to_string(e.unwrap().path()).unwrap();
        counts.push(method_count(&r, "Two.f(I)I"));
    }
    counts.sort();
    assert_eq!(counts, vec![111, 222], "one report per JVM");

    // %p: one file per process id
    let o = java(
        dir.to_str().unwrap(),
        "Two",
        &format!("file={}/p-%p.txt", rep.display()),
        &[],
        &[sync.to_str().unwrap(), "5"],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let named: Vec<String> = std::fs::read_dir(&rep)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("p-"))
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
    let pid = named[0]
        .trim_start_matches("p-")
        .trim_end_matches(".txt")
        .parse::<u32>();
    assert!(pid.is_ok(), "{named:?}");
}

/// Tracing rules alone: `file=` holds their summary, and the message for a file in use by
/// another JVM (here: locked by this test) names it so. Before, it said "this JVM writes its
/// profile to …" (found by the lifecycle and signals hunt).
#[test]
fn trace_only_file_in_use_names_the_trace_summary() {
    let dir = tmp("traceinuse");
    compile(&dir, "Small", SMALL, &[]);
    let rules = dir.join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"f\"\nclass = \"Small\"\nmethod = \"f\"\ncount = true\n",
    )
    .unwrap();
    let f = dir.join("s.txt");
    let held = std::fs::File::create(&f).unwrap();
    held.lock().unwrap();
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("rules={},file={}", rules.display(), f.display()),
        &[],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success() && out == "small 51681\n", "{out}{err}");
    assert!(
        err.contains(&format!(
            "file={} is in use by another running JVM; this JVM writes its trace summary to {}.",
            f.display(),
            f.display()
        )),
        "{err}"
    );
    drop(held);
}

/// clock=cpu: the program's stdout holds only the program's output (HotSpot printed
/// "Re-registering of platform native method: java.lang.BciProbes.cpuNanos()J" there when the
/// agent registered the native), and the CPU clock still works.
#[test]
fn clock_cpu_writes_nothing_to_stdout() {
    let dir = tmp("cpustdout");
    compile(&dir, "Small", SMALL, &[]);
    let f = dir.join("out.txt");
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("file={},clock=cpu", f.display()),
        &[],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(out, "small 51681\n", "stderr: {err}");
    let r = std::fs::read_to_string(&f).unwrap();
    assert_eq!(method_count(&r, "Small.f(I)I"), 321);
    let total: f64 = r
        .lines()
        .find(|l| l.starts_with("METHODS BEGIN"))
        .and_then(|l| l.split("total = ").nth(1))
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap();
    assert!(total > 0.0, "the CPU clock read nothing: {r}");
}

/// format=collapsed: a SIGQUIT dump is a file of its own (`<file>.1`), the dump at exit is
/// `<file>` (snapshots were appended to one file, which flame-graph tools add up); stacks are
/// whole by default (depth=4 cut them, making every cut stack a root).
#[test]
fn collapsed_one_snapshot_per_file_full_stacks() {
    let dir = tmp("collapsed");
    compile(
        &dir,
        "Chain",
        r#"
import java.nio.file.*;
public class Chain {
    static long e(int n) { long s = 0; for (int i = 0; i < n; i++) s += i ^ (s >>> 3); return s; }
    static long d(int n) { return e(n) + 1; }
    static long c(int n) { return d(n) + 1; }
    static long b(int n) { return c(n) + 1; }
    static long a(int n) { return b(n) + 1; }
    public static void main(String[] args) throws Exception {
        long s = 0;
        for (int i = 0; i < 50; i++) s += a(100000);
        long pid = ProcessHandle.current().pid();
        new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
        Path p = Path.of(args[0] + ".1");
        for (int i = 0; i < 200 && !(Files.exists(p) && Files.size(p) > 0); i++) Thread.sleep(50);
        Thread.sleep(200);
        for (int i = 0; i < 50; i++) s += a(100000);
        System.out.println("chain " + s);
    }
}
"#,
        &[],
    );
    let f = dir.join("out.txt");
    let o = java(
        dir.to_str().unwrap(),
        "Chain",
        &format!("file={},format=collapsed,clock=wall", f.display()),
        &[],
        &[f.to_str().unwrap()],
    );
    let (out, err) = text(&o);
    // (stdout also has the JVM's own SIGQUIT thread dump)
    assert!(o.status.success() && out.contains("chain "), "{err}");
    let first = std::fs::read_to_string(dir.join("out.txt.1")).expect("SIGQUIT dump in out.txt.1");
    let last = std::fs::read_to_string(&f).unwrap();
    assert!(!dir.join("out.txt.2").exists());
    let whole = "Chain.main;Chain.a;Chain.b;Chain.c;Chain.d;Chain.e ";
    for (what, t) in [("out.txt.1", &first), ("out.txt", &last)] {
        let lines: Vec<&str> = t.lines().filter(|l| l.contains("Chain.e ")).collect();
        assert_eq!(
            lines.len(),
            1,
            "{what}: one line for e, its whole stack: {t}"
        );
        assert!(lines[0].starts_with(whole), "{what}: {}", lines[0]);
        // one snapshot: every stack once
        let mut stacks: Vec<&str> = t.lines().map(|l| l.rsplit_once(' ').unwrap().0).collect();
        let n = stacks.len();
        stacks.sort();
        stacks.dedup();
        assert_eq!(stacks.len(), n, "{what}: a stack appears twice");
        assert!(
            !t.lines().any(|l| l.starts_with("Chain.b;")),
            "{what}: cut stack"
        );
    }
    let weight = |t: &str| -> u64 {
        let l = t.lines().find(|l| l.starts_with(whole)).unwrap();
        l.rsplit_once(' ').unwrap().1.parse().unwrap()
    };
    assert!(
        weight(&last) > weight(&first),
        "the exit snapshot includes the later calls"
    );
}

/// `Deep <file> <depth> <quit>`: a recursion `depth` calls deep doing work at each level;
/// `quit`: `none`, or a SIGQUIT to itself and then `sleep` (2 s) or `gone2` (until `<file>.2`
/// is gone, at most 10 s).
const DEEP: &str = r#"
import java.nio.file.*;
public class Deep {
    static long work(int n) { long s = 0; for (int i = 0; i < 20000; i++) s += i ^ (s >>> 3) ^ n; return s; }
    static long down(int n) { return n == 0 ? work(n) : work(n) + down(n - 1); }
    public static void main(String[] args) throws Exception {
        long s = 0;
        for (int i = 0; i < 20; i++) s += down(Integer.parseInt(args[1]));
        if (!args[2].equals("none")) {
            long pid = ProcessHandle.current().pid();
            new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
            if (args[2].equals("sleep")) Thread.sleep(2000);
            Path p = Path.of(args[0] + ".2");
            for (int i = 0; i < 200 && args[2].equals("gone2") && Files.exists(p); i++) Thread.sleep(50);
            Thread.sleep(200);
        }
        System.out.println("deep " + s);
    }
}
"#;

/// format=collapsed with stacks deeper than depth= (64, the most): the agent says, for each
/// file it writes, that its stacks are cut and start mid-stack, as `bci report` does (it said
/// nothing, and a flame graph drew the cut stacks as roots of their own; found by the
/// profile-outputs hunt O); a shallow program gets no such line.
#[test]
fn collapsed_stacks_cut_at_depth_are_warned() {
    let dir = tmp("collapseddepth");
    compile(&dir, "Deep", DEEP, &[]);
    let f = dir.join("d.col");
    let run = |depth: &str, opts: &str| {
        let o = java(
            dir.to_str().unwrap(),
            "Deep",
            &format!("file={},format=collapsed,clock=wall{opts}", f.display()),
            &[],
            &[f.to_str().unwrap(), depth, "none"],
        );
        let (out, err) = text(&o);
        assert!(o.status.success() && out.starts_with("deep "), "{err}");
        err
    };
    let err = run("100", "");
    assert!(
        err.contains(&format!(
            "bciagent: {} holds call paths of the top 64 frames (depth=64) and some reached \
             that depth: each collapsed stack deeper than that is cut there and starts at a \
             frame that is not the program's root; 64 frames is the most recorded",
            f.display()
        )),
        "{err}"
    );
    let err = run("20", ",depth=8");
    assert!(
        err.contains("(depth=8) and some reached that depth")
            && err.contains("give depth=64 for whole stacks up to that depth"),
        "{err}"
    );
    let err = run("20", "");
    assert!(!err.contains("holds call paths"), "{err}");
}

/// A collapsed SIGQUIT snapshot that cannot be written (a full disk; here a 4 KiB file-size
/// limit with SIGXFSZ ignored) leaves no `<file>.1`: it was written in place and left cut
/// mid-line, a 4096-byte file a flame-graph tool reads as a smaller profile (found by the
/// profile-outputs hunt O). Now it is written to `<file>.1.tmp<pid>`, renamed over it.
#[test]
fn a_failed_collapsed_snapshot_leaves_no_torn_file() {
    let dir = tmp("collapsedfull");
    compile(&dir, "Deep", DEEP, &[]);
    let f = dir.join("d.col");
    // an earlier run's snapshots, which the start warns will go at this run's first snapshot:
    // they go although it fails (before, they stayed, taken for this run's)
    for n in [1, 2] {
        std::fs::write(format!("{}.{n}", f.display()), "Old.run 7\n").unwrap();
    }
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 4; exec '{}' -XX:-UsePerfData \
             '-agentpath:{}=file={},format=collapsed,clock=wall' -cp '{}' Deep '{}' 60 sleep",
            jdk_tool("java").display(),
            agent_lib().display(),
            f.display(),
            dir.display(),
            f.display()
        ))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success() && out.contains("deep "), "{err}");
    let snap = format!("{}.1", f.display());
    assert!(
        err.contains(&format!("bciagent: cannot write {snap}: ")),
        "{err}"
    );
    let old2 = format!("{}.2", f.display());
    assert!(!Path::new(&old2).exists(), "{old2} left: {err}");
    assert!(
        !Path::new(&snap).exists(),
        "{} bytes left: {err}",
        std::fs::metadata(&snap).map_or(0, |m| m.len())
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// An earlier run's collapsed snapshots `<file>.1` … `<file>.3` are named at start and go at
/// this run's first snapshot (its `<file>.1` replaced the first and `.2`, `.3` stayed, taken
/// for this run's; nothing was said; found by the profile-outputs hunt O); `<file>.5`, past
/// the first missing number, is not one of them.
#[test]
fn an_earlier_runs_snapshots_are_named_and_removed_at_the_first() {
    let dir = tmp("collapsedold");
    compile(&dir, "Deep", DEEP, &[]);
    let f = dir.join("d.col");
    let old = |n: u32| PathBuf::from(format!("{}.{n}", f.display()));
    for n in [1, 2, 3, 5] {
        std::fs::write(old(n), "Old.run 7\n").unwrap();
    }
    let o = java(
        dir.to_str().unwrap(),
        "Deep",
        &format!("file={},format=collapsed,clock=wall,doe=n", f.display()),
        &[],
        &[f.to_str().unwrap(), "5", "gone2"],
    );
    let (out, err) = text(&o);
    assert!(o.status.success() && out.contains("deep "), "{err}");
    assert!(
        err.contains(&format!(
            "bciagent: {} … {} (SIGQUIT snapshots of an earlier run) will be removed at this \
             run's first snapshot, which is written to {}",
            old(1).display(),
            old(3).display(),
            old(1).display()
        )),
        "{err}"
    );
    let first = std::fs::read_to_string(old(1)).unwrap();
    assert!(first.contains("Deep.main;Deep.down"), "{first}");
    assert!(!old(2).exists() && !old(3).exists(), "{err}");
    assert_eq!(std::fs::read_to_string(old(5)).unwrap(), "Old.run 7\n");
}

/// A SIGQUIT dump that VMDeath overtakes writes both its snapshots or neither: the coverage
/// data and the profile were each checked for the exit on their own, and an exit beginning
/// between the two wrote the SIGQUIT's coverage data but dropped its profile without a word
/// (found by the lifecycle and signals hunt; 2 runs in 6 there). BCIAGENT_TEST_QUIT_PAUSE_MS
/// holds the dump between its two snapshots while System.exit begins the exit (returning from
/// main did not: HotSpot's DestroyJavaVM waited for the dump): now the exit waits for it.
#[test]
fn sigquit_overtaken_by_the_exit_writes_both_snapshots() {
    let dir = tmp("quitexit");
    compile(
        &dir,
        "QuitExit",
        r#"
public class QuitExit {
    static int f(int x) { return x + 1; }
    public static void main(String[] a) throws Exception {
        int s = 0;
        for (int i = 0; i < 1000; i++) s += f(i);
        long pid = ProcessHandle.current().pid();
        new ProcessBuilder("kill", "-QUIT", Long.toString(pid)).inheritIO().start().waitFor();
        Thread.sleep(300);
        System.out.println("quitexit " + s);
        System.exit(0);
    }
}
"#,
        &[],
    );
    let (report, cov) = (dir.join("p.txt"), dir.join("c.cov"));
    let mut cmd = Command::new(jdk_tool("java"));
    cmd.arg(format!(
        "-agentpath:{}=cpu=times,coverage=y,include=QuitExit*,file={},covfile={}",
        agent_lib().display(),
        report.display(),
        cov.display()
    ));
    cmd.env("BCIAGENT_TEST_QUIT_PAUSE_MS", "1500");
    let o = cmd.arg("-cp").arg(&dir).arg("QuitExit").output().unwrap();
    let (out, err) = text(&o);
    assert!(
        o.status.success() && out.contains("quitexit 500500"),
        "{err}"
    );
    let r = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        err.matches("bciagent: coverage data of 1 class written")
            .count(),
        2,
        "{err}"
    );
    assert_eq!(r.matches("METHODS BEGIN").count(), 2, "{err}\n{r}");
    assert_eq!(method_count(&r, "QuitExit.f(I)I"), 1000, "{r}");
}

/// Generates `Alt.class` with ASM (Debian's libasm-java): constructors in which different
/// branches call different initialization calls, as Groovy emits when the delegate
/// constructor is chosen at run time:
/// - `Alt(Z)V`: `if (b) super() else super()` (two `Object.<init>` calls), then `check(b)`,
///   which throws when `b` is false (an exceptional exit after initialization);
/// - `Alt(I)V`: `if (i > 0) this(true) else this(i == 0)` (two `this(...)` calls).
const GEN_ALT: &str = r#"
import org.objectweb.asm.*;
import static org.objectweb.asm.Opcodes.*;
public class GenAlt {
    public static void main(String[] a) throws Exception {
        ClassWriter cw = new ClassWriter(ClassWriter.COMPUTE_FRAMES | ClassWriter.COMPUTE_MAXS);
        cw.visit(V11, ACC_PUBLIC | ACC_SUPER, "Alt", null, "java/lang/Object", null);
        cw.visitSource("Alt.java", null);
        MethodVisitor m = cw.visitMethod(ACC_PUBLIC, "<init>", "(Z)V", null, null);
        m.visitCode();
        Label other = new Label(), joined = new Label();
        m.visitVarInsn(ILOAD, 1);
        m.visitJumpInsn(IFEQ, other);
        m.visitVarInsn(ALOAD, 0);
        m.visitMethodInsn(INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
        m.visitJumpInsn(GOTO, joined);
        m.visitLabel(other);
        m.visitVarInsn(ALOAD, 0);
        m.visitMethodInsn(INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
        m.visitLabel(joined);
        m.visitVarInsn(ALOAD, 0);
        m.visitVarInsn(ILOAD, 1);
        m.visitMethodInsn(INVOKEVIRTUAL, "Alt", "check", "(Z)V", false);
        m.visitInsn(RETURN);
        m.visitMaxs(0, 0);
        m.visitEnd();
        m = cw.visitMethod(ACC_PUBLIC, "<init>", "(I)V", null, null);
        m.visitCode();
        Label neg = new Label(), done = new Label();
        m.visitVarInsn(ILOAD, 1);
        m.visitJumpInsn(IFLE, neg);
        m.visitVarInsn(ALOAD, 0);
        m.visitInsn(ICONST_1);
        m.visitMethodInsn(INVOKESPECIAL, "Alt", "<init>", "(Z)V", false);
        m.visitJumpInsn(GOTO, done);
        m.visitLabel(neg);
        m.visitVarInsn(ALOAD, 0);
        m.visitVarInsn(ILOAD, 1);
        Label nz = new Label(), pushed = new Label();
        m.visitJumpInsn(IFNE, nz);
        m.visitInsn(ICONST_1);
        m.visitJumpInsn(GOTO, pushed);
        m.visitLabel(nz);
        m.visitInsn(ICONST_0);
        m.visitLabel(pushed);
        m.visitMethodInsn(INVOKESPECIAL, "Alt", "<init>", "(Z)V", false);
        m.visitLabel(done);
        m.visitInsn(RETURN);
        m.visitMaxs(0, 0);
        m.visitEnd();
        m = cw.visitMethod(0, "check", "(Z)V", null, null);
        m.visitCode();
        Label ok = new Label();
        m.visitVarInsn(ILOAD, 1);
        m.visitJumpInsn(IFNE, ok);
        m.visitTypeInsn(NEW, "java/lang/IllegalStateException");
        m.visitInsn(DUP);
        m.visitMethodInsn(INVOKESPECIAL, "java/lang/IllegalStateException", "<init>", "()V", false);
        m.visitInsn(ATHROW);
        m.visitLabel(ok);
        m.visitInsn(RETURN);
        m.visitMaxs(0, 0);
        m.visitEnd();
        cw.visitEnd();
        java.nio.file.Files.write(java.nio.file.Path.of(a[0], "Alt.class"), cw.toByteArray());
    }
}
"#;

const ALT_MAIN: &str = r#"
public class AltMain {
    public static void main(String[] a) {
        int made = 0, failed = 0;
        for (int i = 0; i < 3; i++) { new Alt(true); made++; }
        for (int i = 0; i < 2; i++) {
            try { new Alt(false); } catch (IllegalStateException e) { failed++; }
        }
        for (int i = 0; i < 4; i++) { new Alt(7); made++; }
        for (int i = 0; i < 5; i++) {
            try { new Alt(-1); } catch (IllegalStateException e) { failed++; }
        }
        new Alt(0);
        made++;
        System.out.println("alt " + made + " " + failed);
    }
}
"#;

/// Builds Alt.class (ASM) and AltMain.class in a fresh directory; None (with the reason
/// printed) without Debian's libasm-java.
fn alt_classes(name: &str) -> Option<PathBuf> {
    let asm = Path::new("/usr/share/java/asm.jar");
    if !asm.exists() {
        eprintln!(
            "skipped: {} not installed (apt-get install libasm-java)",
            asm.display()
        );
        return None;
    }
    let dir = tmp(name);
    let gen = dir.join("gen");
    std::fs::create_dir_all(&gen).unwrap();
    compile(&gen, "GenAlt", GEN_ALT, &[asm.to_str().unwrap()]);
    let o = Command::new(jdk_tool("java"))
        .arg("-cp")
        .arg(format!("{}:{}", gen.display(), asm.display()))
        .arg("GenAlt")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    compile(&dir, "AltMain", ALT_MAIN, &[dir.to_str().unwrap()]);
    Some(dir)
}

/// Constructors whose branches call different super()/this() constructors: HotSpot
/// (-Xverify:all) accepts the instrumented class (the catch-all covered code where `this` was
/// uninitialized: VerifyError "flagThisUninit"), every constructor run is counted once and
/// every exit matches its entry, exceptional exits after initialization included.
#[test]
fn constructor_with_alternative_super_calls() {
    let Some(dir) = alt_classes("altctor") else {
        return;
    };
    // bare run: the generated class is valid to begin with
    let o = Command::new(jdk_tool("java"))
        .args(["-Xverify:all", "-cp"])
        .arg(&dir)
        .arg("AltMain")
        .output()
        .unwrap();
    assert_eq!(text(&o).0, "alt 8 7\n", "{}", text(&o).1);
    let f = dir.join("out.txt");
    let o = java(
        dir.to_str().unwrap(),
        "AltMain",
        &format!("file={},verbose=y", f.display()),
        &["-Xverify:all"],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert_eq!(out, "alt 8 7\n", "{err}");
    assert!(
        err.lines().any(|l| l.contains("Alt: instrumented")),
        "Alt instrumented: {err}"
    );
    assert!(
        !err.lines()
            .any(|l| l.contains("Alt") && l.contains("left original")),
        "{err}"
    );
    let r = std::fs::read_to_string(&f).unwrap();
    // (Z)V: 3 + 2 direct, plus one per (I)V run (4 + 5 + 1)
    assert_eq!(method_count(&r, "Alt.<init>(Z)V"), 15, "{r}");
    // (I)V: every run (4 + 5 + 1), the 5 in which this(false) threw included: its frame is
    // entered at its first instruction (frame tokens), and main's handler drops it
    assert_eq!(method_count(&r, "Alt.<init>(I)V"), 10, "{r}");
    assert_eq!(method_count(&r, "Alt.check(Z)V"), 15, "{r}");
    assert!(!r.contains("did not match the shadow stack"), "{r}");
}

/// Threads that ran before recording started (Reference Handler, Common-Cleaner) return later
/// from methods entered then: those exits match no frame and are not mismatches (every javac
/// report ended with "# 1 probe exits did not match the shadow stack", this among them).
#[test]
fn exits_of_frames_entered_before_recording_are_not_mismatches() {
    let dir = tmp("early");
    compile(
        &dir,
        "Early",
        r#"
import java.lang.ref.*;
public class Early {
    static Object keep;
    public static void main(String[] a) throws Exception {
        ReferenceQueue<Object> q = new ReferenceQueue<>();
        WeakReference<Object> w = new WeakReference<>(new Object(), q);
        for (int i = 0; i < 50; i++) {
            // garbage the common cleaner handles (Inflater registers with it)
            new java.util.zip.Inflater();
        }
        Reference<?> r = null;
        for (int i = 0; i < 20 && r == null; i++) {
            System.gc();
            r = q.remove(100);
        }
        Thread.sleep(300);
        System.out.println("early " + (r == w));
    }
}
"#,
        &[],
    );
    let f = dir.join("out.txt");
    let o = java(
        dir.to_str().unwrap(),
        "Early",
        &format!("file={}", f.display()),
        &[],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(out, "early true\n", "the reference was enqueued: {err}");
    let r = std::fs::read_to_string(&f).unwrap();
    // the Reference Handler ran: it enqueued w
    assert!(
        method_count(&r, "java.lang.ref.Reference.enqueueFromPending()V") > 0
            || method_count(
                &r,
                "java.lang.ref.ReferenceQueue.enqueue(Ljava/lang/ref/Reference;)Z"
            ) > 0,
        "{r}"
    );
    assert!(!r.contains("did not match the shadow stack"), "{r}");
}

/// The agent given twice with the same options: the second instance does nothing, and opens
/// no report file of its own (it found the first one's file locked and wrote an empty
/// `<file>.<pid>`). With other options the JVM stops, naming both (the second's coverage=y was
/// dropped silently: no coverage data; found by the JVM-configurations hunt).
#[test]
fn loaded_twice_one_report() {
    let dir = tmp("twice");
    compile(&dir, "Small", SMALL, &[]);
    let f = dir.join("out.txt");
    let agent = format!("-agentpath:{}=file={}", agent_lib().display(), f.display());
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("file={}", f.display()),
        &[&agent],
        &[],
    );
    let (out, err) = text(&o);
    assert_eq!(out, "small 51681\n", "{err}");
    assert!(err.contains("loaded twice"), "{err}");
    let files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("out.txt"))
        .collect();
    assert_eq!(files, vec!["out.txt".to_string()]);
    assert_eq!(
        method_count(&std::fs::read_to_string(&f).unwrap(), "Small.f(I)I"),
        321
    );
    let cov = dir.join("c.cov");
    let o = java(
        dir.to_str().unwrap(),
        "Small",
        &format!("coverage=y,covfile={}", cov.display()),
        &[&agent],
        &[],
    );
    let (out, err) = text(&o);
    assert!(!o.status.success() && !out.contains("small"), "{out}{err}");
    for n in [
        "loaded twice with different options",
        &format!("file={}", f.display()),
        "coverage=y,covfile=",
    ] {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

/// thread=y: a thread attaching through JNI (the launcher's DestroyJavaVM, which runs the
/// shutdown hooks) has its real name in both outputs. It registers at its first probe, inside
/// its own Thread constructor's callees, before the JVM names it: the name taken then was ""
/// (`THREAD START (… name="", …)`), which collapsed output called `thread-2`. The name is read
/// again when a dump is taken and when the thread ends.
#[test]
fn threads_attached_through_jni_are_named_in_every_format() {
    let dir = tmp("jniname");
    compile(
        &dir,
        "Hook",
        r#"
public class Hook {
    static int work(int x) { return x + 1; }
    static void inHook() { for (int i = 0; i < 1000; i++) work(i); }
    public static void main(String[] a) {
        Runtime.getRuntime().addShutdownHook(new Thread(Hook::inHook, "hook"));
        for (int i = 0; i < 10; i++) work(i);
    }
}
"#,
        &[],
    );
    let cp = dir.display().to_string();
    let hprof = dir.join("h.txt");
    let o = java(
        &cp,
        "Hook",
        &format!("cpu=times,thread=y,cutoff=0,file={}", hprof.display()),
        &[],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let report = std::fs::read_to_string(&hprof).unwrap();
    let starts: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("THREAD START"))
        .collect();
    assert!(
        starts.iter().any(|l| l.contains("name=\"DestroyJavaVM\"")),
        "{starts:#?}"
    );
    assert!(
        !starts.iter().any(|l| l.contains("name=\"\"")),
        "{starts:#?}"
    );
    // wall time: the thread waits for the hook, so it has self time (a line) for sure
    let collapsed = dir.join("c.txt");
    let o = java(
        &cp,
        "Hook",
        &format!(
            "cpu=times,thread=y,clock=wall,format=collapsed,file={}",
            collapsed.display()
        ),
        &[],
        &[],
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let c = std::fs::read_to_string(&collapsed).unwrap();
    assert!(c.lines().any(|l| l.starts_with("DestroyJavaVM;")), "{c}");
    assert!(!c.lines().any(|l| l.starts_with("thread-")), "{c}");
}

/// doe=n writes nothing at exit: the start-up warning about a file left by an earlier run
/// says it is replaced only by a SIGQUIT dump (collapsed: not at all, its dumps are files of
/// their own), and the file is indeed left as it was. Before, it said "will be replaced by
/// this run's profile", which doe=n never did without a dump.
#[test]
fn doe_n_warning_says_when_the_file_is_replaced() {
    let dir = tmp("doen");
    compile(
        &dir,
        "Short",
        "public class Short { public static void main(String[] a) { } }",
        &[],
    );
    let cp = dir.display().to_string();
    let file = dir.join("pre.txt");
    for (format, expect) in [
        (
            "hprof",
            Some("will be replaced if a dump is requested (SIGQUIT"),
        ),
        ("collapsed", None),
    ] {
        std::fs::write(&file, "earlier run\n").unwrap();
        let o = java(
            &cp,
            "Short",
            &format!("cpu=times,doe=n,format={format},file={}", file.display()),
            &[],
            &[],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}\n{err}");
        assert!(
            !err.contains("replaced by this run's profile"),
            "{format}: {err}"
        );
        match expect {
            Some(e) => assert!(err.contains(e), "{format}: {err}"),
            None => assert!(!err.contains("exists"), "{format}: {err}"),
        }
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "earlier run\n",
            "{format}"
        );
    }
}

const OVERFLOW: &str = r#"
public class Overflow {
    static long[] n = new long[3];
    static int rec(int t) { n[t]++; return rec(t) + 1; }
    public static void main(String[] a) throws Exception {
        Thread[] ts = new Thread[3];
        for (int i = 0; i < ts.length; i++) {
            final int t = i;
            ts[i] = new Thread(null, () -> {
                for (int r = 0; r < 8; r++) {
                    try { rec(t); } catch (StackOverflowError e) { }
                }
            }, "deep" + i, (256L << i) * 1024);
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        System.out.println("rec=" + (n[0] + n[1] + n[2]));
    }
}
"#;

/// A recursion to StackOverflowError on threads of their own: every call counted with every
/// clock, and self time within total. With clock=wall/cpu the error was thrown inside a
/// timed exit (the catch-all's unwindT at the deepest frames) while a full queue was added to
/// the sink: the queue, emptied first, lost its counts (195,922 calls of 1 MB stacks, 20 runs:
/// 114,508 reported), and a frame charged before the error was charged again by the next exit
/// (self above total).
#[test]
fn stack_overflow_on_threads_loses_no_counts() {
    let dir = tmp("overflow");
    compile(&dir, "Overflow", OVERFLOW, &[]);
    let cp = dir.display().to_string();
    for clock in ["wall", "cpu", "sample"] {
        let report = dir.join(format!("{clock}.txt"));
        let o = java(
            &cp,
            "Overflow",
            &format!("cpu=times,clock={clock},file={}", report.display()),
            &["-Xmx256m"],
            &[],
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{clock}: {err}");
        let n: u64 = out
            .trim()
            .strip_prefix("rec=")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{clock}: {out}"));
        let r = std::fs::read_to_string(&report).unwrap();
        assert_eq!(method_count(&r, "Overflow.rec(I)I"), n, "{clock}:\n{r}");
        // self <= total, every method (METHODS: rank, self %, total %, count, self, total, method)
        let mut inside = false;
        for l in r.lines() {
            if l.starts_with("METHODS BEGIN") {
                inside = true;
                continue;
            }
            if l.starts_with("METHODS END") {
                break;
            }
            let c: Vec<&str> = l.split_whitespace().collect();
            if inside && c.len() == 7 && c[0].parse::<u64>().is_ok() {
                let (s, t): (f64, f64) = (c[4].parse().unwrap(), c[5].parse().unwrap());
                assert!(s <= t, "{clock}: self above total: {l}");
            }
        }
    }
}

const DAEMONS: &str = r#"
public class Daemons {
    static volatile long sink;
    static int f(int x) { sink += x; return x + 1; }
    static void g(int n) { for (int i = 0; i < n; i++) f(i); }
    public static void main(String[] a) throws Exception {
        for (int k = 0; k < 2; k++) {
            Thread t = new Thread(() -> { while (true) g(1000); });
            t.setDaemon(true);
            t.start();
        }
        Thread.sleep(300);
        System.out.println("main returns");
    }
}
"#;

/// cpu=times with coverage=y, two daemon threads calling `f` when main returns: both outputs
/// count `f` up to about the same moment. Before, VMDeath wrote the coverage data (the lock,
/// the merge, the file) and only then stopped the profile's recording, and the threads' calls
/// meanwhile reached the profile only: 18.6 M against 16.7 M in one run (found by the
/// lifecycle and signals hunt). Now the counts are read and recording stops back to back (a
/// few thousand of 18 M apart in quiet runs). The gap left is timing (the exiting thread can
/// be descheduled between the two), so the test widens the old one instead:
/// BCIAGENT_TEST_EXIT_PAUSE_MS pauses 400 ms once the coverage data is written, when the old
/// code still recorded (the gap was then larger than the 300 ms count itself) and the new one
/// no longer does.
#[test]
fn threads_running_at_exit_count_alike_in_profile_and_coverage() {
    use bci_rewriter::coverage::data::CovData;
    use bci_rewriter::coverage::{entry_counter, plan_class};
    let dir = tmp("daemons");
    compile(&dir, "Daemons", DAEMONS, &[]);
    let cp = dir.display().to_string();
    let plan = plan_class(
        &std::fs::read(dir.join("Daemons.class")).unwrap(),
        bci_rewriter::flow::Split::AfterCalls,
    )
    .unwrap();
    let m = plan.methods.iter().find(|m| m.name == "f").unwrap();
    let entry = entry_counter(m).unwrap() as usize;
    for run in 0..3 {
        let (report, cov) = (
            dir.join(format!("p{run}.txt")),
            dir.join(format!("c{run}.cov")),
        );
        let mut cmd = Command::new(jdk_tool("java"));
        cmd.arg(format!(
            "-agentpath:{}=cpu=times,coverage=y,include=Daemons*,file={},covfile={}",
            agent_lib().display(),
            report.display(),
            cov.display()
        ))
        .args(["-cp", &cp, "Daemons"])
        .env("BCIAGENT_TEST_EXIT_PAUSE_MS", "400");
        let o = cmd.output().unwrap();
        let (out, err) = text(&o);
        assert!(o.status.success() && out == "main returns\n", "{out}{err}");
        let prof = method_count(&std::fs::read_to_string(&report).unwrap(), "Daemons.f(I)I");
        let d = CovData::parse(&std::fs::read(&cov).unwrap()).unwrap();
        let (_, counts) = d
            .classes
            .iter()
            .find(|((n, _), _)| n == "Daemons")
            .expect("coverage of Daemons");
        let covered = counts[entry];
        let gap = prof.abs_diff(covered);
        assert!(
            prof > 1_000_000 && gap * 10 < prof,
            "run {run}: cpu=times {prof} calls of f, coverage {covered}"
        );
    }
}

#[test]
fn scratch_directories_of_ended_test_processes_are_swept() {
    assert_eq!(
        common::scratch_pid("bciagent-cov-1437-annotation"),
        Some(1437)
    );
    assert_eq!(
        common::scratch_pid("bciagent-trace-88-TraceBasics-3"),
        Some(88)
    );
    assert_eq!(common::scratch_pid("bciagent-cov2-x"), None);
    assert_eq!(common::scratch_pid("bci-oracle-cache"), None);
    let root = std::env::temp_dir().join(format!("bciagent-sweep-{}-root", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    // no process has pid 4194305 (above Linux's pid_max limit)
    let (gone, live) = (
        root.join("bciagent-t-4194305-x"),
        root.join(format!("bciagent-t-{}-x", std::process::id())),
    );
    let file = root.join("bciagent-t-4194305-file");
    std::fs::create_dir_all(gone.join("sub")).unwrap();
    std::fs::create_dir_all(&live).unwrap();
    std::fs::write(&file, b"kept: not a directory").unwrap();
    common::sweep_scratch(&root);
    assert!(!gone.exists() && live.exists() && file.exists());
    std::fs::remove_dir_all(&root).unwrap();
}
