//! Agent memory with many threads (issue 9): ended threads are folded into a shared aggregate,
//! so programs that start thousands of short threads run under a small heap, with exact
//! counts; thread=y bounds its rows; a runtime that runs out of room stops recording and says
//! so. Programs: test-classes/ManyThreads.java (JDK 17) and test-classes/jdk21/VirtualThreads.java
//! (only when /usr/lib/jvm/temurin-25-jdk-amd64 exists).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
mod common;
use common::{agent_lib, jdk17, jdk25, repo};

fn tmp(name: &str) -> PathBuf {
    common::tmp("threads", name)
}

/// Held by the tests that start 100,000 virtual threads, so that two of them do not run at
/// once: on 2 cores their JVMs slowed each other until nearly all 100,000 threads were parked
/// at once, more thread states than a quarter of the heap holds.
static HUNDRED_THOUSAND: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Compiles test-classes/`rel` with `jdk`'s javac into a new temp dir.
fn compile(jdk: &Path, rel: &str, tag: &str) -> PathBuf {
    let out = tmp(tag);
    javac_into(jdk, &repo().join("test-classes").join(rel), &out);
    out
}

/// Compiles the source file `src` with `jdk`'s javac (`-g`) into `out`; panics with javac's
/// messages on failure.
fn javac_into(jdk: &Path, src: &Path, out: &Path) {
    let o = Command::new(jdk.join("bin/javac"))
        .arg("-g")
        .arg("-d")
        .arg(out)
        .arg(src)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "javac {}: {}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `main` under the agent with `opts` and `-Xmx256m`; returns the report and the output.
fn run(jdk: &Path, cp: &Path, main: &str, args: &[&str], opts: &str) -> (String, Output) {
    run_heap(jdk, cp, main, args, opts, "-Xmx256m")
}

fn run_heap(
    jdk: &Path,
    cp: &Path,
    main: &str,
    args: &[&str],
    opts: &str,
    heap: &str,
) -> (String, Output) {
    run_jvm(jdk, cp, &[heap], main, args, opts)
}

/// Runs `main` under the agent with `opts` and the JVM options `jvm`.
fn run_jvm(
    jdk: &Path,
    cp: &Path,
    jvm: &[&str],
    main: &str,
    args: &[&str],
    opts: &str,
) -> (String, Output) {
    run_jvm_env(jdk, cp, jvm, main, args, opts, &[])
}

/// [`run_jvm`] with environment variables `env`.
fn run_jvm_env(
    jdk: &Path,
    cp: &Path,
    jvm: &[&str],
    main: &str,
    args: &[&str],
    opts: &str,
    env: &[(&str, &str)],
) -> (String, Output) {
    let file = cp.join(format!("{}.txt", opts.replace([',', '='], "_")));
    let o = Command::new(jdk.join("bin/java"))
        .envs(env.iter().copied())
        .args(jvm)
        .arg(format!(
            "-agentpath:{}=file={},cutoff=0{}{}",
            agent_lib().display(),
            file.display(),
            if opts.is_empty() { "" } else { "," },
            opts
        ))
        .arg("-cp")
        .arg(cp)
        .arg(main)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{main} {args:?} ({opts}) failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{main} ({opts}): no report {}: {e}", file.display()));
    (text, o)
}

/// METHODS table: `Class.name` (all overloads) -> count.
fn method_counts(text: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("METHODS BEGIN") {
            inside = true;
            continue;
        }
        if line.starts_with("METHODS END") {
            inside = false;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if inside && cols.len() == 7 {
            if let Ok(c) = cols[3].parse::<u64>() {
                let key = cols[6].split('(').next().unwrap().to_string();
                *m.entry(key).or_insert(0) += c;
            }
        }
    }
    m
}

/// Sum of CPU TIME rows whose TRACE starts with `frames` (top first, `Class.method`).
fn path_count(text: &str, frames: &[&str]) -> u64 {
    let mut traces: HashMap<String, Vec<String>> = HashMap::new();
    let mut cur: Option<String> = None;
    let mut total = 0;
    let mut in_cpu = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("TRACE ") {
            let serial = rest.split(':').next().unwrap().trim().to_string();
            traces.insert(serial.clone(), Vec::new());
            cur = Some(serial);
            continue;
        }
        if let (Some(s), Some(f)) = (&cur, line.strip_prefix('\t')) {
            let name = f.split('(').next().unwrap().to_string();
            traces.get_mut(s).unwrap().push(name);
            continue;
        }
        cur = None;
        if line.starts_with("CPU TIME (ms) BEGIN") {
            in_cpu = true;
            continue;
        }
        if line.starts_with("CPU TIME (ms) END") {
            in_cpu = false;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if in_cpu && cols.len() == 6 {
            if let (Ok(c), Some(f)) = (cols[3].parse::<u64>(), traces.get(cols[4])) {
                if f.len() >= frames.len() && f.iter().zip(frames).all(|(a, b)| a == b) {
                    total += c;
                }
            }
        }
    }
    total
}

/// The `// expect:` and `// expect-path:` lines of a test program, scaled from the
/// program's default thread count to `n` threads.
fn check_expectations(rel: &str, text: &str, default_n: u64, n: u64) {
    let src = std::fs::read_to_string(repo().join("test-classes").join(rel)).unwrap();
    let counts = method_counts(text);
    let mut bad = Vec::new();
    for line in src.lines() {
        let line = line.trim();
        let (rest, is_path) = if let Some(r) = line.strip_prefix("// expect:") {
            (r, false)
        } else if let Some(r) = line.strip_prefix("// expect-path:") {
            (r, true)
        } else {
            continue;
        };
        let (what, count) = rest.trim().rsplit_once(" count=").unwrap();
        let mut want: u64 = count.trim().parse().unwrap();
        if want >= default_n {
            want = want / default_n * n; // per-thread counts scale with the thread count
        }
        let got = if is_path {
            let frames: Vec<&str> = what.split(" < ").map(str::trim).collect();
            path_count(text, &frames)
        } else {
            counts.get(what.trim()).copied().unwrap_or(0)
        };
        if got != want {
            bad.push(format!("{what}: expected count={want} got {got}"));
        }
    }
    assert!(bad.is_empty(), "{rel}:\n{}", bad.join("\n"));
    assert!(
        !text.contains("RECORDING STOPPED"),
        "{rel}: recording stopped:\n{}",
        text.lines()
            .filter(|l| l.contains("RECORDING STOPPED"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// 10,000 short platform threads under -Xmx256m: ran out of memory under the agent, with no
/// report, before ended threads were folded (bare, the program needs a few MB).
#[test]
fn ten_thousand_platform_threads() {
    let cp = compile(&jdk17(), "ManyThreads.java", "many");
    for opts in ["", "clock=wall"] {
        let (text, _) = run(&jdk17(), &cp, "ManyThreads", &[], opts);
        check_expectations("ManyThreads.java", &text, 10000, 10000);
    }
}

/// thread=y keeps one row set per thread for the first 256 threads; the others share the
/// "other threads" row, with their counts.
#[test]
fn thread_rows_bounded() {
    let cp = compile(&jdk17(), "ManyThreads.java", "rows");
    let (text, _) = run(&jdk17(), &cp, "ManyThreads", &["1000"], "thread=y");
    let starts = text
        .lines()
        .filter(|l| l.starts_with("THREAD START"))
        .count();
    assert!(
        starts <= 257,
        "{starts} thread records (at most 256 + other threads)"
    );
    assert!(
        text.contains("name=\"other threads\""),
        "no other-threads row"
    );
    check_expectations("ManyThreads.java", &text, 10000, 1000);
    // every per-thread row of body() counts 1, the shared row the rest
    let rows: Vec<u64> = text
        .lines()
        .filter(|l| l.ends_with(" ManyThreads.body"))
        .filter_map(|l| l.split_whitespace().nth(3)?.parse().ok())
        .collect();
    assert_eq!(rows.iter().sum::<u64>(), 1000, "{rows:?}");
    assert!(rows.iter().filter(|&&c| c == 1).count() >= 200, "{rows:?}");
}

/// A heap too small for the profile: recording stops (the report says so), the program
/// finishes and the report is written.
#[test]
fn no_room_stops_recording() {
    let cp = compile(&jdk17(), "ManyThreads.java", "noroom");
    let file = cp.join("out.txt");
    let o = Command::new(jdk17().join("bin/java"))
        .arg("-Xmx24m")
        .arg(format!(
            "-agentpath:{}=file={},clock=wall",
            agent_lib().display(),
            file.display()
        ))
        .arg("-cp")
        .arg(&cp)
        .arg("ManyThreads")
        .arg("3000")
        .env("BCIAGENT_TEST_BUDGET", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("threads 3000"),
        "{err}"
    );
    let text = std::fs::read_to_string(&file).expect("report written");
    assert!(text.contains("RECORDING STOPPED: "), "{text}");
    assert!(text.contains("# recording stopped: "), "{text}");
    assert!(err.contains("recording stopped"), "{err}");
}

/// JDK 25: virtual threads are measured and each one's data is folded when it ends
/// (VirtualThreadEnd): 10,000 of them counted exactly, and the dump holds the aggregate and the
/// few threads still live, not one entry per virtual thread. (-Xmx1g: under the agent several
/// thousand are live at once; see hundred_thousand_virtual_threads_exact.) Virtual threads are
/// kept apart from the sampler's table of platform threads: it read every one of them every
/// interval (none has CPU time of its own), under the runtime's lock, with a slot table as
/// large as the most virtual threads live at once (before: all 10,000 slots in one table).
#[test]
fn virtual_threads_counted_and_folded() {
    let Some(jdk) = jdk25() else { return };
    let cp = compile(&jdk, "jdk21/VirtualThreads.java", "virtual-small");
    let (text, o) = run_heap(
        &jdk,
        &cp,
        "VirtualThreads",
        &["10000"],
        "verbose=y",
        "-Xmx1g",
    );
    check_expectations("jdk21/VirtualThreads.java", &text, 100000, 10000);
    assert_no_mismatch(&text, "10,000 virtual threads");
    // the header says where clock=sample puts virtual threads' time (found by the
    // profile-outputs hunt O: runContinuation on top, the threads' own methods at 0 ms)
    let head = &text[..text.find("CPU TIME (ms) BEGIN").unwrap_or(text.len())];
    assert!(
        head.contains("Virtual threads are not sampled")
            && head.contains("java.lang.VirtualThread.runContinuation"),
        "{head}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let entries: usize = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("bciagent: ")?
                .split(" threads, ")
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no thread count in the log"));
    assert!(entries < 100, "{entries} thread entries at the dump");
    let sampled = memory_number(&err, " sampled (platform threads)");
    let virt = memory_number(&err, " virtual threads");
    assert!(sampled < 100, "{sampled} slots in the sampler's table");
    assert!(virt > 100, "{virt} slots for virtual threads");
}

/// JDK 25: a virtual thread's call paths stay whole across unmount and mount. VtPaths' threads
/// block in five ways that unmount them (sleep, parkNanos, a queue's take, Object.wait, a
/// contended monitor) and resume on any of 4 carriers; every call after a resume is counted
/// under its full path (depth 4), and no probe exit misses its frame, on the virtual threads'
/// stacks or the carriers'. Before: VirtualThread.mount/unmount switch Thread.currentThread()
/// between their entry and exit, and Continuation.run's exit (on the virtual thread) popped the
/// continuation's frames, so c() showed under `Continuation.run < VirtualThread.unmount` and
/// the report ended with ~80,000 mismatched exits.
#[test]
fn virtual_thread_paths_survive_unmount() {
    let Some(jdk) = jdk25() else { return };
    let cp = compile(&jdk, "jdk21/VtPaths.java", "vtpaths");
    for opts in ["", "clock=wall"] {
        let (text, _) = run_jvm(
            &jdk,
            &cp,
            &["-Xmx256m", "-Djdk.virtualThreadScheduler.parallelism=4"],
            "VtPaths",
            &["2000"],
            opts,
        );
        check_expectations("jdk21/VtPaths.java", &text, 1000, 2000);
        assert_no_mismatch(&text, opts);
    }
    // the runtime build without Thread's field (threads looked up by hash): a virtual thread
    // runs JDK code after its end event (Continuation.finish), which registered it again as a
    // new thread never folded: ~2,000 states live at the dump (and one mismatch each)
    let (text, o) = run_jvm_env(
        &jdk,
        &cp,
        &["-Xmx256m", "-Djdk.virtualThreadScheduler.parallelism=4"],
        "VtPaths",
        &["2000"],
        "verbose=y",
        &[("BCIAGENT_NO_THREAD_FIELDS", "1")],
    );
    check_expectations("jdk21/VtPaths.java", &text, 1000, 2000);
    let live = memory_number(&String::from_utf8_lossy(&o.stderr), " live threads");
    assert!(
        live < 100,
        "{live} live threads at the dump (fallback build)"
    );
}

/// The number before `after` in the log's "runtime memory:" line (verbose=y).
fn memory_number(err: &str, after: &str) -> u64 {
    let line = err
        .lines()
        .find_map(|l| l.strip_prefix("bciagent: runtime memory: "))
        .unwrap_or_else(|| panic!("no runtime memory line in the log:\n{err}"));
    let i = line
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in {line}"));
    line[..i]
        .split_whitespace()
        .last()
        .and_then(|w| w.trim_start_matches('(').parse().ok())
        .unwrap_or_else(|| panic!("number before {after:?} in {line}"))
}

/// The report has no "probe exits did not match the shadow stack" line.
fn assert_no_mismatch(text: &str, what: &str) {
    let mism: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("did not match the shadow stack"))
        .collect();
    assert!(mism.is_empty(), "({what}) {}", mism.join("\n"));
}

/// A thread attaching through JNI runs its own Thread constructor, whose probes register it;
/// if the runtime's lock was taken by another thread then, HotSpot (JDK 19+) crashed
/// (SIGSEGV in java_lang_Thread::set_thread_status: the BLOCKED state goes to the Thread's
/// FieldHolder, still null). Seen at exit, when the launcher's DestroyJavaVM thread attaches
/// while carriers fold ended virtual threads. Made certain here: a thread holds the runtime
/// class's monitor from the moment main ends until after DestroyJavaVM has attached.
#[test]
fn attaching_thread_while_the_runtime_lock_is_held() {
    let dir = tmp("attach");
    std::fs::write(
        dir.join("HoldLock.java"),
        r#"
public class HoldLock {
    public static void main(String[] a) throws Exception {
        Class<?> rt = Class.forName("java.lang.BciProbes");
        Thread main = Thread.currentThread();
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(1);
                main.join();
                synchronized (rt) {
                    Thread.sleep(500);
                }
            } catch (InterruptedException e) {
            }
        });
        t.start();
        Thread.sleep(50);
        System.out.println("main returns");
    }
}
"#,
    )
    .unwrap();
    let jdks: Vec<PathBuf> = std::iter::once(jdk17()).chain(jdk25()).collect();
    for jdk in jdks {
        let cp = dir.join(jdk.file_name().unwrap());
        std::fs::create_dir_all(&cp).unwrap();
        javac_into(&jdk, &dir.join("HoldLock.java"), &cp);
        // run() asserts the exit status and reads the report
        let (text, o) = run_jvm(
            &jdk,
            &cp,
            &["-XX:-CreateCoredumpOnCrash"],
            "HoldLock",
            &[],
            "",
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("main returns"),
            "{}",
            jdk.display()
        );
        assert!(text.contains("CPU TIME (ms) END"), "{}", jdk.display());
    }
}

/// Parked.java compiled into a fresh directory `name`: `main(n [depth])` starts n virtual
/// threads that each call `work` once and park for good (`depth` calls deep, else directly in
/// `body`), and exits 500 ms later.
fn parked_program(jdk: &Path, name: &str) -> PathBuf {
    let dir = tmp(name);
    std::fs::write(
        dir.join("Parked.java"),
        r#"
import java.util.concurrent.locks.LockSupport;
public class Parked {
    static volatile long sink;
    static int work(int x) { return x * 7 + 1; }
    static void body(int i) {
        sink += work(i);
        LockSupport.park();
    }
    static void deep(int i, int depth) {
        if (depth == 0) body(i); else deep(i, depth - 1);
    }
    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        int depth = a.length > 1 ? Integer.parseInt(a[1]) : 0;
        for (int i = 0; i < n; i++) {
            final int k = i;
            Thread.ofVirtual().start(() -> deep(k, depth));
        }
        Thread.sleep(500);
    }
}
"#,
    )
    .unwrap();
    javac_into(jdk, &dir.join("Parked.java"), &dir);
    dir
}

/// JDK 25: the memory budget counts the live threads' own states. It counted them at the
/// average size of the threads that had ended: here the few threads that end early have large
/// caches (depth=40: many contexts), and 2,000 parked virtual threads (~1 KB of state each)
/// were taken for 146 MB against a 128 MB budget: recording stopped, counts lost.
#[test]
fn parked_virtual_threads_are_counted_at_their_size() {
    let Some(jdk) = jdk25() else { return };
    let dir = parked_program(&jdk, "parked");
    let (text, _) = run_jvm(&jdk, &dir, &["-Xmx512m"], "Parked", &["2000"], "depth=40");
    assert!(
        !text.contains("RECORDING STOPPED"),
        "{}",
        text.lines()
            .find(|l| l.contains("RECORDING STOPPED"))
            .unwrap_or("")
    );
    let counts = method_counts(&text);
    assert_eq!(counts.get("Parked.work"), Some(&2000), "work() count");
}

/// JDK 25: the budget charges a live thread's state only beyond a per-thread allowance (a
/// thread's own heap grows with the number of threads too). 5,000 parked virtual threads
/// (~0.6 KB of state each, 3 MB in all) under a 3 MB budget: recording goes on, counts exact.
/// Before, every byte was charged and recording stopped at ~4,000 threads: in CI, 100,000
/// virtual threads of which ~80,000 were parked at once stopped recording (work() 13,581 of
/// 300,000 counted).
#[test]
fn parked_virtual_threads_within_the_allowance_keep_recording() {
    let Some(jdk) = jdk25() else { return };
    let dir = parked_program(&jdk, "parked-allowance");
    let env = [("BCIAGENT_TEST_BUDGET", "3000000")];
    let (text, _) = run_jvm_env(&jdk, &dir, &["-Xmx512m"], "Parked", &["5000"], "", &env);
    assert!(!text.contains("RECORDING STOPPED"), "{text}");
    let counts = method_counts(&text);
    assert_eq!(counts.get("Parked.work"), Some(&5000), "work() count");
}

/// JDK 25: what a live thread's state takes beyond the allowance is charged: the same 5,000
/// parked virtual threads, each 200 calls deep (~3.3 KB of shadow frames), stop recording
/// under the 3 MB budget, and the report says so.
#[test]
fn deep_parked_virtual_threads_are_charged() {
    let Some(jdk) = jdk25() else { return };
    let dir = parked_program(&jdk, "parked-deep");
    let env = [("BCIAGENT_TEST_BUDGET", "3000000")];
    let (text, o) = run_jvm_env(
        &jdk,
        &dir,
        &["-Xmx512m"],
        "Parked",
        &["5000", "200"],
        "",
        &env,
    );
    assert!(text.contains("RECORDING STOPPED: "), "{text}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("recording stopped"), "{err}");
}

/// JDK 25: 10,000 virtual threads, counts exact and no mismatch with both clocks (the sampled
/// and the timed frames), and the verbose log's count of queues drained under the lock.
#[test]
fn virtual_threads_exact_with_both_clocks() {
    let Some(jdk) = jdk25() else { return };
    let cp = compile(&jdk, "jdk21/VirtualThreads.java", "virtual-queue");
    for opts in ["verbose=y", "verbose=y,clock=wall"] {
        let (text, o) = run_heap(&jdk, &cp, "VirtualThreads", &["10000"], opts, "-Xmx1g");
        check_expectations("jdk21/VirtualThreads.java", &text, 100000, 10000);
        assert_no_mismatch(&text, opts);
        let err = String::from_utf8_lossy(&o.stderr);
        let drains = memory_number(&err, " queues drained under the lock");
        assert!(drains > 0, "({opts}) no queue drained: {err}");
    }
}

/// JDK 25: virtual threads use their carrier's call-path cache while mounted
/// (`Probes.mounted`, called at the end of `VirtualThread.mount`): 10,000 short virtual threads
/// miss the cache ~16 times each and move their queue under the runtime's lock ~2,000-12,000 times in
/// all (with clock=sample), with exact counts and no mismatch under both clocks. Before, each started with a cold
/// cache of its own: ~90 misses each and ~170,000 queues drained (seen with
/// `BCIAGENT_NO_MOUNT_HOOK=1`, which this test also runs and expects to be slower in both).
#[test]
fn virtual_threads_share_their_carriers_cache() {
    let Some(jdk) = jdk25() else { return };
    let cp = compile(&jdk, "jdk21/VirtualThreads.java", "virtual-carrier-cache");
    let n = 10000u64;
    let stats = |opts: &str, env: &[(&str, &str)]| {
        let (text, o) = run_jvm_env(
            &jdk,
            &cp,
            &["-Xmx1g"],
            "VirtualThreads",
            &["10000"],
            opts,
            env,
        );
        check_expectations("jdk21/VirtualThreads.java", &text, 100000, n);
        assert_no_mismatch(&text, opts);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let misses: u64 = err
            .lines()
            .find_map(|l| {
                let l = l.strip_prefix("bciagent: ")?;
                let i = l.find(" callee-cache misses")?;
                l[..i].rsplit(' ').next()?.parse().ok()
            })
            .unwrap_or_else(|| panic!("no cache misses in the log:\n{err}"));
        let drains = memory_number(&err, " queues drained under the lock");
        (misses, drains)
    };
    for opts in ["verbose=y", "verbose=y,clock=wall"] {
        let (misses, drains) = stats(opts, &[]);
        assert!(
            misses < 40 * n,
            "({opts}) {misses} cache misses for {n} threads"
        );
        // (with a timed clock every frame also queues its time: drains follow the calls)
        // The drains vary with how the threads interleave on the carriers: 20 runs each of two
        // builds (2026-11-27) gave 2,189-11,438 and 3,090-11,925, 1 and 3 of them above n; a
        // cache of their own drains ~170,000.
        if !opts.contains("clock") {
            assert!(
                drains < 3 * n,
                "({opts}) {drains} queues drained for {n} threads"
            );
        }
        if opts == "verbose=y" {
            let (own_misses, own_drains) = stats(opts, &[("BCIAGENT_NO_MOUNT_HOOK", "1")]);
            assert!(
                own_misses > misses && own_drains > drains,
                "a cache of their own: {own_misses} misses, {own_drains} drains; \
                 the carrier's: {misses}, {drains}"
            );
        }
    }
}

/// JDK 25: a parked virtual thread's state is small (issue 9: 100,000 virtual threads within
/// 1.5x of bare's heap): 2,000 virtual threads parked at exit, the runtime's own account of
/// its live thread states (verbose=y) is under 600 bytes a thread (616 with a first shadow
/// stack of 16 frames, 524 with 10). Shadow frames are 2 longs
/// (the timed clocks' start and callee times are in an array of their own, allocated only
/// with clock=wall|cpu) and a virtual thread's queue is allocated only if it needs one. Before:
/// 4-long frames, 16 of them, a cache of 4 entries and an 8-long queue: at least 864 bytes.
#[test]
fn parked_virtual_thread_states_are_small() {
    let Some(jdk) = jdk25() else { return };
    let dir = parked_program(&jdk, "parked-small");
    let (text, o) = run_jvm(&jdk, &dir, &["-Xmx512m"], "Parked", &["2000"], "verbose=y");
    let counts = method_counts(&text);
    assert_eq!(counts.get("Parked.work"), Some(&2000), "work() count");
    let err = String::from_utf8_lossy(&o.stderr);
    let live = memory_number(&err, " live threads");
    let bytes = memory_number(&err, " bytes of thread state");
    assert!(live >= 2000, "{live} live threads at the dump");
    assert!(
        bytes / live < 600,
        "{bytes} bytes of thread state for {live} live threads"
    );
}

/// JDK 25: 100,000 virtual threads under -Xmx256m finish and the report is written (before
/// the fix the JVM ran out of memory inside the agent and hung). Their counts are exact unless
/// recording stopped for lack of room, which the report then says.
#[test]
fn hundred_thousand_virtual_threads_finish() {
    let Some(jdk) = jdk25() else { return };
    let _one = HUNDRED_THOUSAND.lock().unwrap_or_else(|e| e.into_inner());
    let cp = compile(&jdk, "jdk21/VirtualThreads.java", "virtual-finish");
    let (text, o) = run(&jdk, &cp, "VirtualThreads", &[], "");
    assert!(String::from_utf8_lossy(&o.stdout).contains("virtual threads 100000"));
    assert!(text.contains("CPU TIME (ms) END"), "{text}");
    if !text.contains("RECORDING STOPPED") {
        check_expectations("jdk21/VirtualThreads.java", &text, 100000, 100000);
    }
}

/// JDK 25: 100,000 virtual threads under -Xmx256m with exact counts (issue 9's goal) and whole
/// call paths. Was ignored (passed 5 of 7): with ~59,000 virtual threads parked at once the
/// budget check, which took live threads at the average size of the ended ones, stopped
/// recording. Live states are now counted at their size (~0.86 KB each) and the sampler no
/// longer reads virtual threads: passed 8 of 8 runs in a row here (load average ~8). The
/// margin was thin on a busy machine: the most seen live at once, 75,812, was ~62 MiB of
/// states against the 64 MiB budget (a quarter of the heap); run next to the other
/// 100,000-thread test it failed (see HUNDRED_THOUSAND). With 2-long shadow frames and
/// virtual threads queueing through their carriers: 8 of 8 again, at most 39,870-47,573 live
/// at once, ~0.55 KB each (~22-27 MB of the budget). Failed in CI once more (work() 13,581 of
/// 300,000: ~80,000 parked at once went over the budget): a live state's first KB is no longer
/// charged (see `parked_virtual_threads_within_the_allowance_keep_recording`).
#[test]
fn hundred_thousand_virtual_threads_exact() {
    let Some(jdk) = jdk25() else { return };
    let _one = HUNDRED_THOUSAND.lock().unwrap_or_else(|e| e.into_inner());
    let cp = compile(&jdk, "jdk21/VirtualThreads.java", "virtual");
    let (text, _) = run(&jdk, &cp, "VirtualThreads", &[], "");
    check_expectations("jdk21/VirtualThreads.java", &text, 100000, 100000);
}

/// SIGTERM ends a program whose profile stopped for lack of room, and the report is written
/// (before issue 9's fix, a JVM out of memory inside the agent ignored SIGTERM).
#[test]
fn sigterm_after_recording_stopped_writes_the_report() {
    let dir = tmp("term");
    std::fs::write(
        dir.join("Forever.java"),
        r#"
public class Forever {
    static int f(int x) { return x + 1; }
    public static void main(String[] a) throws Exception {
        java.nio.file.Path ready = java.nio.file.Path.of(a[0]);
        for (int round = 0; ; round++) {
            Thread[] ts = new Thread[100];
            for (int i = 0; i < ts.length; i++) {
                ts[i] = new Thread(() -> { int s = 0; for (int k = 0; k < 1000; k++) s += f(k); if (s == 1) System.out.println(s); });
                ts[i].start();
            }
            for (Thread t : ts) t.join();
            if (round == 5) java.nio.file.Files.writeString(ready, "ready");
        }
    }
}
"#,
    )
    .unwrap();
    javac_into(&jdk17(), &dir.join("Forever.java"), &dir);
    let file = dir.join("out.txt");
    let ready = dir.join("ready");
    let mut child = Command::new(jdk17().join("bin/java"))
        .arg("-Xmx64m")
        .arg(format!(
            "-agentpath:{}=file={}",
            agent_lib().display(),
            file.display()
        ))
        .arg("-cp")
        .arg(&dir)
        .arg("Forever")
        .arg(&ready)
        .env("BCIAGENT_TEST_BUDGET", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        if ready.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(ready.exists(), "the program did not get going");
    let kill = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(kill.success());
    // ends within 60 s (a hang fails here instead of blocking the test run)
    let mut status = None;
    for _ in 0..600 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if status.is_none() {
        let _ = child.kill();
        panic!("the JVM did not end after SIGTERM");
    }
    let text = std::fs::read_to_string(&file).expect("report written");
    assert!(text.contains("RECORDING STOPPED: "), "{text}");
    assert!(text.contains("CPU TIME (ms) END"), "{text}");
}

/// Memory follows the call paths, not the threads: 2,000 platform threads run one after the
/// other (each joined before the next starts; JVMTI ThreadEnd comes before join returns) reuse
/// the state of the thread before them instead of each allocating one, and the shared tree
/// holds each distinct call path once. Read from the runtime's own account (verbose=y log),
/// not from timings. Before: every thread allocated its state and its own call-path tree.
#[test]
fn sequential_threads_reuse_states() {
    let dir = tmp("sequential");
    std::fs::write(
        dir.join("Sequential.java"),
        r#"
public class Sequential {
    static int work(int x) { return x * 7 + 1; }
    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        for (int i = 0; i < n; i++) {
            final int k = i;
            Thread t = new Thread(() -> { int s = work(k) + work(k + 1); if (s == 1) System.out.println(s); });
            t.start();
            t.join();
        }
        System.out.println("threads " + n);
    }
}
"#,
    )
    .unwrap();
    javac_into(&jdk17(), &dir.join("Sequential.java"), &dir);
    // (made, nodes) for n threads
    let account = |n: u64| -> (u64, u64) {
        let (text, o) = run(&jdk17(), &dir, "Sequential", &[&n.to_string()], "verbose=y");
        let counts = method_counts(&text);
        assert_eq!(
            counts.get("Sequential.work"),
            Some(&(2 * n)),
            "work() count"
        );
        let err = String::from_utf8_lossy(&o.stderr);
        (
            memory_number(&err, " thread states made"),
            memory_number(&err, " shared call-path nodes"),
        )
    };
    let (made_small, nodes_small) = account(200);
    let (made, nodes) = account(2000);
    // a few JDK threads (finalizer, cleaner, ...) and the main thread have states of their own
    assert!(
        made < 50,
        "{made} thread states made for 2,000 sequential threads"
    );
    assert!(
        made_small < 50,
        "{made_small} thread states made for 200 sequential threads"
    );
    // ten times the threads, the same call paths: the tree does not grow with the threads
    assert!(
        nodes < nodes_small + nodes_small / 2,
        "call-path nodes: {nodes_small} for 200 threads, {nodes} for 2,000"
    );
}

/// `(self ms, total ms)` of the METHODS row whose method starts with `m`, 0 if absent.
fn methods_ms(text: &str, m: &str) -> (f64, f64) {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() == 7 && w[6].starts_with(m))
        .map(|w| (w[4].parse().unwrap(), w[5].parse().unwrap()))
        .unwrap_or((0.0, 0.0))
}

/// JDK 25, clock=cpu: a virtual thread's clock is its own CPU time, running only while it is
/// mounted, and a carrier's frames are not charged the time of the virtual threads it runs.
/// VtCpuClock: one virtual thread sleeps 500 ms while another spins 400 ms on the one carrier.
/// Before: the probes read the carrier's CPU clock, so sleeper() was charged the spinner's
/// time (~390 ms), and so were yieldContinuation (self) and the carrier's runContinuation
/// (self): the total was ~1.4 s for a process that used ~1 s. With include= naming the
/// program only, VirtualThread still gets its mount hooks (it was left alone, and each
/// virtual thread was charged its carrier's CPU time: 70 s for a process that used 1.4 s).
#[test]
fn virtual_thread_cpu_clock_is_its_own() {
    let Some(jdk) = jdk25() else { return };
    let cp = compile(&jdk, "jdk21/VtCpuClock.java", "vt-cpu-clock");
    for opts in ["clock=cpu", "clock=cpu,include=VtCpuClock"] {
        vt_cpu_clock_run(&jdk, &cp, opts);
    }
}

fn vt_cpu_clock_run(jdk: &Path, cp: &Path, opts: &str) {
    let (text, o) = run_jvm(
        jdk,
        cp,
        &["-Xmx256m", "-Djdk.virtualThreadScheduler.parallelism=1"],
        "VtCpuClock",
        &[],
        opts,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let process: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("process cpu ms "))
        .unwrap_or_else(|| panic!("no process CPU time: {out}"))
        .trim()
        .parse()
        .unwrap();
    let (_, sleeper) = methods_ms(&text, "VtCpuClock.sleeper(");
    let (_, spinner) = methods_ms(&text, "VtCpuClock.spinner(");
    let (yield_self, _) = methods_ms(&text, "java.lang.VirtualThread.yieldContinuation(");
    let (run_self, _) = methods_ms(&text, "java.lang.VirtualThread.runContinuation(");
    // (the spinner gets less than 400 ms of CPU on a busy machine, never the sleeper's share)
    assert!(
        sleeper < 20.0 && sleeper * 5.0 < spinner,
        "{opts}: sleeper {sleeper} ms, spinner {spinner} ms:\n{text}"
    );
    assert!(
        yield_self < 20.0 && run_self < 50.0,
        "yieldContinuation self {yield_self} ms, runContinuation self {run_self} ms:\n{text}"
    );
    let total: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("METHODS BEGIN (total = "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no METHODS total:\n{text}"));
    // the report is written after the program measured itself: a margin for the exit
    assert!(
        total <= process + 100.0,
        "{opts}: total {total} ms, the process used {process} ms:\n{text}"
    );
}
