//! The profile's memory: a profile as large as the heap allows is still written (the dump reads
//! the runtime's data where it is, with no second copy on the Java heap), a call-path tree that
//! grows past the memory budget stops recording instead of the program (counts recorded before
//! the stop exact), and the notice says so in every format. Programs: test-classes/memory/.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
mod common;
use common::{agent_lib, jdk_tool, repo};

fn tmp(name: &str) -> PathBuf {
    common::tmp("memory", name)
}

/// test-classes/memory/*.java compiled into a new temp dir.
fn compile(tag: &str) -> PathBuf {
    let out = tmp(tag);
    let dir = repo().join("test-classes/memory");
    let mut cmd = Command::new(jdk_tool("javac"));
    cmd.arg("-g").arg("-d").arg(&out);
    for e in std::fs::read_dir(&dir).unwrap() {
        cmd.arg(e.unwrap().path());
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "javac: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// `java <jvm> -agentpath:…=file=<file>,<opts> -cp <cp> <main> <args>` with `env`.
fn java(
    cp: &Path,
    jvm: &[&str],
    file: &Path,
    opts: &str,
    main: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Command {
    let mut c = Command::new(jdk_tool("java"));
    c.envs(env.iter().copied())
        .args(jvm)
        .arg(format!(
            "-agentpath:{}=file={},{opts}",
            agent_lib().display(),
            file.display()
        ))
        .arg("-cp")
        .arg(cp)
        .arg(main)
        .args(args);
    c
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Nothing of ours on the program's stderr but the agent's own log lines: no Java exception
/// (an OutOfMemoryError of the dump printed as if it were the program's), no lost profile.
fn assert_clean_stderr(err: &str) {
    assert!(!err.contains("Exception in thread"), "{err}");
    assert!(!err.contains("OutOfMemoryError"), "{err}");
    assert!(!err.contains("cannot read the profile"), "{err}");
}

/// Collapsed lines `stack weight`: every line parses, and some stack runs through Paths.
fn assert_collapsed_profile(text: &str, what: &str) {
    assert!(
        text.lines().any(|l| l.starts_with("Paths.main;Paths.")),
        "{what}: no Paths stacks:\n{}",
        &text[..text.len().min(2000)]
    );
    for l in text.lines() {
        let (stack, w) = l
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("{what}: {l:?}"));
        assert!(!stack.is_empty() && !stack.contains(' '), "{what}: {l:?}");
        w.parse::<u64>()
            .unwrap_or_else(|_| panic!("{what}: weight of {l:?}"));
    }
}

/// A profile of ~1,065,000 call paths (tree ~21 MB, aggregate ~8.6 MB on the Java heap) in a
/// 44 MB heap, with the budget lifted so that recording runs to the end: the SIGQUIT dump
/// (while the profile is live) and the exit dump are both written, whole. Before, the dump
/// copied the aggregate on the heap first (BciProbes.snapshot -> A.copy -> NodeMap.copy):
/// the copy ran out of memory, its OutOfMemoryError was printed on the program's stderr
/// ("Exception in thread "DestroyJavaVM" java.lang.OutOfMemoryError ... at
/// java.lang.BciProbes$NodeMap.copy"), nothing was written and the file was removed.
#[test]
fn a_profile_larger_than_a_copy_fits_is_written() {
    let cp = compile("big");
    let file = cp.join("big.txt");
    let ready = cp.join("ready");
    let go = cp.join("go");
    let mut child = java(
        &cp,
        &["-Xmx44m"],
        &file,
        "cpu=times,format=collapsed,include=Paths",
        "BigProfile",
        &[
            "40000",
            &ready.display().to_string(),
            &go.display().to_string(),
        ],
        &[("BCIAGENT_TEST_BUDGET", "4000000000")],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    for _ in 0..1200 {
        if ready.exists() || child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(ready.exists(), "the program did not get there");
    let quit = Command::new("kill")
        .arg("-QUIT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(quit.success());
    // the SIGQUIT dump is complete once its file stops growing (the agent writes it whole,
    // then the program goes on)
    let snap = PathBuf::from(format!("{}.1", file.display()));
    let mut last = None;
    for _ in 0..300 {
        std::thread::sleep(Duration::from_millis(200));
        let len = std::fs::metadata(&snap).map(|m| m.len()).ok();
        if len.is_some_and(|l| l > 0) && len == last {
            break;
        }
        last = len;
    }
    std::fs::write(&go, "go").unwrap();
    let o = child.wait_with_output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("calls=1640000"), "{out}");
    assert_clean_stderr(&err);
    let dumped = std::fs::read_to_string(&snap).expect("SIGQUIT dump written");
    let exit = std::fs::read_to_string(&file).expect("exit dump written");
    for (t, what) in [(&dumped, "SIGQUIT dump"), (&exit, "exit dump")] {
        assert_collapsed_profile(t, what);
        assert!(!t.contains("RECORDING_STOPPED"), "{what}: {t}");
    }
}

/// The budget (a quarter of the heap, 16 MB at -Xmx64m) holds while one thread grows the
/// call-path tree (~30 MB of tree and aggregate by the end): recording stops there and the
/// program runs on with its heap (Alloc keeps 20 MB live afterwards). Before, the budget was
/// checked only when a thread registered: the program died of OutOfMemoryError at Alloc.main.
/// The collapsed report's first line is the notice, a one-frame stack of weight 0.
#[test]
fn a_growing_tree_stops_at_the_budget_and_the_program_runs_on() {
    let cp = compile("alloc");
    let file = cp.join("alloc.txt");
    let o = java(
        &cp,
        &["-Xmx64m"],
        &file,
        "cpu=times,format=collapsed,include=Paths",
        "Alloc",
        &["40000", "20"],
        &[],
    )
    .output()
    .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("alloc ok"), "{out}\n{err}");
    assert_clean_stderr(&err);
    assert!(err.contains("would pass the budget"), "{err}");
    let report = std::fs::read_to_string(&file).expect("report written");
    let first = report.lines().next().unwrap_or("");
    assert!(
        first.starts_with("RECORDING_STOPPED:_the_profile_data_") && first.ends_with(" 0"),
        "{first}"
    );
    assert!(first.contains("budget"), "{first}");
    assert_collapsed_profile(&report, "budget");
}

/// Counts recorded before recording stops at the budget stay exact, those after it are not
/// counted: warm() 5000 on main, work() 777 on a thread parked meanwhile (its counts still in
/// its own cache when recording stops: moved to the report, not dropped), late() and the
/// worker's 100 later calls not at all. METHODS table (format=methods, depth=64 so that the
/// tree grows with every call path), under -Xmx64m; the program finishes and allocates. No
/// include=: the JDK is instrumented too, so a JDK method called by the runtime's own budget
/// check would come back into the probes (Math.max in the count of the live states did, and
/// javac under -Xmx48m ended in StackOverflowError).
#[test]
fn counts_before_the_budget_stop_are_exact() {
    let cp = compile("exact");
    let file = cp.join("exact.txt");
    let o = java(
        &cp,
        &["-Xmx64m"],
        &file,
        "cpu=times,format=methods,depth=64",
        "BudgetStop",
        &["40000", "20"],
        &[],
    )
    .output()
    .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(out.contains("alloc ok"), "{out}\n{err}");
    assert_clean_stderr(&err);
    let report = std::fs::read_to_string(&file).expect("report written");
    let count = |m: &str| -> Option<u64> {
        report
            .lines()
            .find(|l| l.contains(&format!(" BudgetStop.{m}(")))
            .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
    };
    assert_eq!(count("warm"), Some(5000), "{report}");
    assert_eq!(count("work"), Some(777), "{report}");
    assert_eq!(count("main"), Some(1), "{report}");
    assert_eq!(count("late"), None, "{report}");
    assert!(
        report.contains("# recording stopped: the profile data"),
        "{report}"
    );
}
