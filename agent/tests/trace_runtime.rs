//! The tracing runtime's numbers (agent/java/bci/runtime/Trace.java):
//! test-classes/trace/TraceRuntime.java run under rule files written here, one case per run
//! (its first argument).

use std::path::{Path, PathBuf};
use std::process::Command;
mod common;
use common::{agent_lib, jdk_tool, repo};

/// TraceRuntime compiled once per test binary.
fn classes() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let out = common::tmp("trace-runtime", "classes");
        let o = Command::new(jdk_tool("javac"))
            .arg("-g")
            .arg("-d")
            .arg(&out)
            .arg(repo().join("test-classes/trace/TraceRuntime.java"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    })
}

struct Run {
    /// The trace file's lines.
    lines: Vec<String>,
    report: String,
    stdout: String,
    stderr: String,
}

/// Runs the case `arg` under `rules` (a rule file's text) with the trace file `tracefile`
/// (None: one in the run's directory; none without a trace rule), `extra` agent options and
/// environment `env`.
fn run(
    name: &str,
    rules: &str,
    arg: &str,
    tracefile: Option<&str>,
    extra: &str,
    env: &[(&str, &str)],
) -> Run {
    let dir = common::tmp("trace-runtime", name);
    let toml = dir.join("rules.toml");
    std::fs::write(&toml, rules).unwrap();
    let ev = dir.join("events.jsonl");
    let tf = tracefile.map_or(ev.clone(), PathBuf::from);
    let prof = dir.join("prof.txt");
    let _ = std::fs::remove_file(&ev);
    let _ = std::fs::remove_file(&prof);
    // (tracefile= only with a trace rule: refused without)
    let tf = if rules.contains("trace = true") {
        format!(",tracefile={}", tf.display())
    } else {
        String::new()
    };
    let o = Command::new(jdk_tool("java"))
        .envs(env.iter().copied())
        .arg(format!(
            "-agentpath:{}=rules={}{tf},file={}{extra}",
            agent_lib().display(),
            toml.display(),
            prof.display()
        ))
        .arg("-cp")
        .arg(classes())
        .arg("TraceRuntime")
        .arg(arg)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{name}: {stderr}");
    Run {
        lines: std::fs::read_to_string(&ev)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect(),
        report: std::fs::read_to_string(&prof).unwrap(),
        stdout: String::from_utf8_lossy(&o.stdout).to_string(),
        stderr,
    }
}

fn summary(report: &str) -> &str {
    &report[report.find("TRACE SUMMARY").expect(report)..]
}

/// The summary row of `rule`: count, total, self, min, avg, max (times in µs).
fn row(report: &str, rule: &str) -> Vec<f64> {
    let s = summary(report);
    let row = s
        .lines()
        .find(|l| l.split_whitespace().next() == Some(rule))
        .unwrap_or_else(|| panic!("no row {rule}: {s}"));
    row.split_whitespace()
        .skip(1)
        .map(|w| w.parse().unwrap())
        .collect()
}

/// The `slowest` lines under the row of `rule`.
fn slowest<'a>(report: &'a str, rule: &str) -> Vec<&'a str> {
    summary(report)
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some(rule))
        .skip(1)
        .take_while(|l| l.starts_with("    slowest"))
        .collect()
}

/// The summary's event numbers: written, dropped (buffer full), not written (tracemax= or a
/// write error), could not be made.
fn accounting(report: &str) -> (u64, u64, u64, u64) {
    let line = report
        .lines()
        .find(|l| l.starts_with("trace events: "))
        .unwrap_or_else(|| panic!("no trace events line: {report}"));
    let before = |what: &str| -> u64 {
        line.match_indices(what)
            .map(|(i, _)| {
                line[..i]
                    .rsplit([' ', ':'])
                    .find(|w| !w.is_empty())
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum()
    };
    (
        before(" written to "),
        before(" dropped (buffer full)"),
        before(" not written ("),
        before(" could not be made"),
    )
}

const TIME_A: &str =
    "[[rule]]\nname = \"timeA\"\nclass = \"TraceRuntime\"\nmethod = \"a\"\ntime = true\n";
const TRACE_A: &str = "[[rule]]\nname = \"traceA\"\nclass = \"TraceRuntime\"\nmethod = \"a\"\ntrace = true\ntostring = true\nstack = 8\n";
const CALLER: &str =
    "[[rule]]\nname = \"caller\"\nclass = \"TraceRuntime\"\nmethod = \"caller\"\ntime = true\n";
const TRACE_B: &str = "[[rule]]\nname = \"traceB\"\nclass = \"TraceRuntime\"\nmethod = \"b\"\ntrace = true\ntostring = true\n";

/// A rule's times are the program's, never the runtime's work (formatting an event, its
/// toString() calls and stack): a time rule on a method that a trace rule also traces, listed
/// before or after it, and a caller of a traced method. Each event of a and b calls a
/// toString() of 50 ms; the calls themselves take microseconds. Before, the time rule listed
/// first (its frame enclosing the trace rule's) timed the trace rule's event, and the caller's
/// time (and self time) held its callee's event.
#[test]
fn times_exclude_the_runtimes_work_in_any_rule_order() {
    for (name, rules) in [
        (
            "work-time-first",
            format!("{TIME_A}{TRACE_A}{CALLER}{TRACE_B}"),
        ),
        (
            "work-trace-first",
            format!("{TRACE_A}{TIME_A}{TRACE_B}{CALLER}"),
        ),
    ] {
        let r = run(name, &rules, "work", None, "", &[]);
        assert_eq!(r.lines.len(), 6, "{:#?}", r.lines);
        for rule in ["timeA", "caller"] {
            let v = row(&r.report, rule);
            assert_eq!(v[0], 3.0, "{name} {rule}: {}", summary(&r.report));
            // total and self far below one toString() (50,000 µs)
            assert!(
                v[1] < 25_000.0 && v[2] < 25_000.0,
                "{name} {rule}: {}",
                summary(&r.report)
            );
        }
        // 6 events, each with a 50 ms toString(), called once (the slowest list takes the
        // event's description)
        assert!(r.stdout.contains("toString calls: 6"), "{}", r.stdout);
    }
}

const AB: &str =
    "[[rule]]\nname = \"ab\"\nclass = \"TraceRuntime\"\nmethod = \"/sleepy|quick/\"\ntime = true\n";

/// The slowest lines are the rule's slowest calls, all of them (5) from one method when it
/// has them. Before, 3 were kept per method and thread: sleepy's 3 slowest, then quick's.
#[test]
fn slowest_lines_are_the_rules_slowest_calls() {
    let r = run("slowest", AB, "slowest", None, "", &[]);
    let s = slowest(&r.report, "ab");
    assert_eq!(s.len(), 5, "{}", summary(&r.report));
    for l in &s {
        assert!(
            l.contains("TraceRuntime.sleepy(I)V"),
            "{}",
            summary(&r.report)
        );
    }
    let d: Vec<f64> = s
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(d[4] >= 10_000.0, "{}", summary(&r.report));
}

const PARITY: &str =
    "[[rule]]\nname = \"parity\"\nclass = \"TraceRuntime\"\nmethod = \"/even|odd/\"\ntime = true\n";

/// A rule's total counts the calls with no enclosing call of the same rule on the thread: a
/// mutual recursion (even and odd calling each other 20 deep, 100 ms at the bottom) totals
/// its outermost call, the rule's slowest (max). Before, each method's outermost call was
/// counted: twice the program's time.
#[test]
fn mutual_recursion_in_one_rule_counts_the_outermost_call() {
    let r = run("mutual", PARITY, "mutual", None, "", &[]);
    let v = row(&r.report, "parity");
    assert_eq!(v[0], 21.0, "{}", summary(&r.report));
    assert!(v[5] >= 100_000.0, "{}", summary(&r.report));
    // the total is the outermost call (max), to the printed precision
    assert!((v[1] - v[5]).abs() <= 0.2, "{}", summary(&r.report));
}

const OUTER: &str =
    "[[rule]]\nname = \"outer\"\nclass = \"TraceRuntime\"\nmethod = \"/outer|sleepy/\"\ntime = true\n";

/// A call still running when the summary is made (System.exit inside it; a SIGQUIT snapshot
/// while it runs) counts in the total up to the summary, and the summary says so: outer calls
/// sleepy(50) twice, then exits or dumps. Before, the total counted only outermost calls that
/// had ended: 0.0, with 100,000 µs of self time (found by the tracing-on-real-programs hunt:
/// javac, which calls System.exit in Main.main, showed self 26,770,522 µs for a total of 15,140).
#[test]
fn calls_still_running_count_in_the_total_up_to_the_summary() {
    for case in ["exit", "sigquit"] {
        let r = run(case, OUTER, case, None, "", &[]);
        // the first summary: the SIGQUIT snapshot, or the exit's
        let v = row(&r.report, "outer");
        let s = summary(&r.report);
        let s = &s[..s[1..].find("TRACE SUMMARY").map_or(s.len(), |i| i + 1)];
        assert_eq!(v[0], 3.0, "{case}: {s}");
        let (total, self_, max) = (v[1], v[2], v[5]);
        assert!(self_ >= 100_000.0, "{case}: {s}");
        assert!(total >= self_ && total >= max, "{case}: {s}");
        let still = s
            .lines()
            .skip_while(|l| l.split_whitespace().next() != Some("outer"))
            .find(|l| l.starts_with("    still running: "));
        assert!(
            still.is_some_and(|l| l.starts_with("    still running: 1 call (")),
            "{case}: {s}"
        );
    }
    // a rule whose only call is still running (outer, not sleepy): its total is that call's
    // time so far (two sleepy(50) calls), self to max are of ended calls only. Before, the row
    // was the count alone, under a note saying the total counts the running call (found by the
    // exactness hunt E, F3).
    let r = run(
        "exit-only",
        &OUTER.replace("/outer|sleepy/", "outer"),
        "exit",
        None,
        "",
        &[],
    );
    let s = summary(&r.report);
    let line = (s.lines())
        .find(|l| l.split_whitespace().next() == Some("outer"))
        .unwrap_or_else(|| panic!("{s}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(w.len(), 7, "{s}");
    assert_eq!((w[1], &w[3..]), ("1", &["-"; 4][..]), "{s}");
    assert!(w[2].parse::<f64>().unwrap() >= 100_000.0, "{s}");
}

const SAMPLED: &str = "[[rule]]\nname = \"ab\"\nclass = \"TraceRuntime\"\nmethod = \"/a|b/\"\ntrace = true\nsample = 50\n";

/// `sample = N` counts the rule's calls on a thread, whatever the method: 2 x 2032 calls give
/// 4064 / 50 = 81 events. Before, each method had its counter (2 x 40 = 80).
#[test]
fn sample_counts_the_rules_calls_per_thread() {
    let r = run("sample", SAMPLED, "calls", None, "", &[]);
    assert_eq!(row(&r.report, "ab")[0], 4064.0, "{}", r.report);
    assert_eq!(r.lines.len(), 81, "{}", r.report);
}

const TRACED: &str =
    "[[rule]]\nname = \"ab\"\nclass = \"TraceRuntime\"\nmethod = \"/a|b/\"\ntrace = true\n";

/// A write error on the trace file (/dev/full): nothing is counted as written, and written +
/// dropped + not written + could not be made is still every event. Before, what the file's
/// buffer had taken counted as written, and the events after the error were in no number.
#[test]
fn write_errors_leave_the_accounting_true() {
    let r = run("devfull", TRACED, "calls", Some("/dev/full"), "", &[]);
    assert!(r.stderr.contains("/dev/full"), "{}", r.stderr);
    let (w, d, x, f) = accounting(&r.report);
    assert_eq!(w, 0, "{}", r.report);
    assert_eq!(w + d + x + f, 4064, "{}", r.report);
    assert!(
        r.report.contains("not written (write error"),
        "{}",
        r.report
    );
}

/// A full buffer: stderr says so once, when it first happens, and the trace holds a marker
/// where events were lost (here at the end: the writer is held back, 5 events fit).
#[test]
fn full_buffer_is_reported_and_marked_in_the_trace() {
    let env = [
        ("BCIAGENT_TEST_TRACE_BUFFER", "5"),
        ("BCIAGENT_TEST_TRACE_HOLD", "1"),
    ];
    let r = run("dropped", TRACED, "calls", None, "", &env);
    let (w, d, _, _) = accounting(&r.report);
    assert_eq!((w, d), (5, 4059), "{}", r.report);
    assert_eq!(r.stderr.matches("buffer full").count(), 1, "{}", r.stderr);
    assert_eq!(r.lines.len(), 6, "{:#?}", r.lines);
    assert_eq!(
        r.lines[5], "{\"dropped\":4059,\"reason\":\"buffer full\"}",
        "{:#?}",
        r.lines
    );
    let t = run(
        "dropped-text",
        TRACED,
        "calls",
        None,
        ",traceformat=text",
        &env,
    );
    assert_eq!(t.lines.len(), 6, "{:#?}", t.lines);
    assert_eq!(
        t.lines[5], "# 4059 events dropped here (buffer full)",
        "{:#?}",
        t.lines
    );
}

const STRINGS: &str = "[[rule]]\nname = \"s\"\nclass = \"TraceRuntime\"\nmethod = \"s\"\nat = [\"entry\"]\ntrace = true\nmax_string = 3\n";

/// Strings never lose half of a surrogate pair to max_string, and a lone surrogate is
/// escaped (\uXXXX), not written as `?` (UTF-8 has no encoding for it).
#[test]
fn strings_keep_surrogate_pairs_and_escape_lone_ones() {
    let r = run("strings", STRINGS, "strings", None, "", &[]);
    let args: Vec<&str> = r
        .lines
        .iter()
        .map(|l| l.split("\"args\":").nth(1).unwrap().trim_end_matches('}'))
        .collect();
    assert_eq!(
        args,
        ["[\"ab...\"]", "[\"x\\ud800y\"]", "[\"\\udc00\"]"],
        "{:#?}",
        r.lines
    );
    let t = run(
        "strings-text",
        STRINGS,
        "strings",
        None,
        ",traceformat=text",
        &[],
    );
    assert!(
        t.lines[1].ends_with(" args=[\"x\\ud800y\"]"),
        "{:#?}",
        t.lines
    );
}

const STRINGS_TRACED: &str =
    "[[rule]]\nname = \"s\"\nclass = \"TraceRuntime\"\nmethod = \"s\"\ntrace = true\n";

/// The summary's slowest lines keep a supplementary character (an emoji) of an argument: the
/// agent decodes the JVM's modified UTF-8 (the character as two 3-byte surrogates), which it
/// read as UTF-8, six U+FFFD in its place (found by the tracing-on-real-programs hunt).
#[test]
fn summary_keeps_supplementary_characters_of_arguments() {
    let r = run("strings-summary", STRINGS_TRACED, "strings", None, "", &[]);
    let s = slowest(&r.report, "s");
    assert!(
        s.iter().any(|l| l.contains("args=[\"ab\u{1F600}cd\"]")),
        "{}",
        summary(&r.report)
    );
    assert!(!r.report.contains('\u{FFFD}'), "{}", r.report);
}

/// The summary says whether it is final (at exit) or a snapshot (SIGQUIT); a slowest line
/// names its thread's id (a virtual thread has no name).
#[test]
fn summary_is_marked_final_and_slowest_lines_name_the_tid() {
    let r = run("final", AB, "slowest", None, "", &[]);
    assert!(
        summary(&r.report).lines().next().unwrap().contains("final"),
        "{}",
        r.report
    );
    for l in slowest(&r.report, "ab") {
        assert!(l.contains(" thread=main tid=1"), "{l}");
    }
}

const TOSTRING_FILTERED: &str = "[[rule]]\nname = \"a\"\nclass = \"TraceRuntime\"\nmethod = \"a\"\ntrace = true\ntostring = true\nmin_duration = \"10s\"\nsample = 1000\n";

/// `tostring = true` calls no toString() for a call whose event is not written (min_duration,
/// sample): before, each call that entered the slowest list called it, for its description.
#[test]
fn tostring_is_not_called_for_events_not_written() {
    let r = run("tostring", TOSTRING_FILTERED, "tostring", None, "", &[]);
    assert!(r.stdout.contains("toString calls: 0"), "{}", r.stdout);
    assert!(r.lines.is_empty(), "{:#?}", r.lines);
    assert_eq!(row(&r.report, "a")[0], 10.0, "{}", r.report);
}

/// A rule name longer than the summary's name column (24) widens the column for every row, so
/// the numbers stay under their headings (they were shifted right on the long name's row).
#[test]
fn long_rule_names_keep_the_summary_columns_aligned() {
    let long = "a-very-long-rule-name-that-exceeds-the-column-width";
    let rules = format!(
        "[[rule]]\nname = \"{long}\"\nclass = \"TraceRuntime\"\nmethod = \"a\"\ntime = true\n\
         [[rule]]\nname = \"short\"\nclass = \"TraceRuntime\"\nmethod = \"b\"\ntime = true\n"
    );
    let r = run("long-names", &rules, "calls", None, "", &[]);
    let s = summary(&r.report);
    let end_of = |prefix: &str, word: &str| {
        let l = s
            .lines()
            .find(|l| l.split_whitespace().next() == Some(prefix))
            .unwrap_or_else(|| panic!("no row {prefix}: {s}"));
        let w = l.split_whitespace().nth(1).unwrap();
        assert!(word.is_empty() || w == word, "{l}");
        l.find(w).unwrap() + w.len()
    };
    // the count column ends where its heading ends, on every row
    let heading = end_of("rule", "count");
    assert_eq!(end_of(long, ""), heading, "{s}");
    assert_eq!(end_of("short", ""), heading, "{s}");
    assert_eq!(row(&r.report, long)[0], 2032.0, "{s}");
}
