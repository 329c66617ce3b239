//! The console summary: one row per package and the total (instructions, branches, lines,
//! methods, classes: % covered and covered/total), then notes and errors (stale data is named
//! on stderr: [`super::run`]).

use super::{dotted_package, Package, Report};
use crate::io::count;
use bci_rewriter::coverage::analysis::{Counter, Counters, Status};
use std::fmt::Write;

/// A counter's cell: the percentage (its `%` signs one under another) and (covered/total), as
/// wide as [`CELL`]; its heading starts where the cell does.
fn cell(c: Counter) -> String {
    let p = if c.total() == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", c.covered as f64 * 100.0 / c.total() as f64)
    };
    format!("{p:>6} {:<13}", format!("({}/{})", c.covered, c.total()))
}

/// The width of a counter's column.
const CELL: usize = 20;

pub fn write(r: &Report, packages: &[Package<'_>]) -> String {
    let mut s = String::new();
    let names: Vec<String> = packages.iter().map(|p| dotted_package(&p.name)).collect();
    let w = names.iter().map(|k| k.len()).max().unwrap_or(7).max(7);
    let _ = writeln!(s, "{}", r.title);
    let _ = writeln!(
        s,
        "{:w$}  {:CELL$}  {:CELL$}  {:CELL$}  {:CELL$}  classes",
        "package", "instructions", "branches", "lines", "methods"
    );
    let row = |s: &mut String, name: &str, c: &Counters| {
        let _ = writeln!(
            s,
            "{name:w$}  {:CELL$}  {:CELL$}  {:CELL$}  {:CELL$}  {}",
            cell(c.instructions),
            cell(c.branches),
            cell(c.lines),
            cell(c.methods),
            cell(c.classes).trim_end()
        );
    };
    for (p, n) in packages.iter().zip(&names) {
        row(&mut s, n, &p.counters);
    }
    row(&mut s, "total", &Report::total(packages));
    let files: Vec<String> = r
        .data_files
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let _ = writeln!(
        s,
        "{} analysed, {} with data; {} in {}",
        count(r.classes.len(), "class", "classes"),
        r.with_data,
        count(r.sessions.len(), "session", "sessions"),
        files.join(", ")
    );
    if !r.not_found.is_empty() {
        let some: Vec<String> = r
            .not_found
            .iter()
            .take(5)
            .map(|c| c.replace('/', "."))
            .collect();
        let _ = writeln!(
            s,
            "note: {} in the data {} under no --classes path: {}{}",
            count(r.not_found.len(), "class", "classes"),
            if r.not_found.len() == 1 { "is" } else { "are" },
            some.join(", "),
            if r.not_found.len() > 5 { ", …" } else { "" }
        );
    }
    if let Some(note) = r.too_big_note() {
        let _ = writeln!(s, "note: {note}");
    }
    if let Some(note) = r.uncovered_note() {
        let _ = writeln!(s, "note: {note}");
    }
    let intrinsic = |why: &str| why == bci_rewriter::coverage::INTRINSIC_NOTE;
    let not_analysed: Vec<String> = r
        .classes
        .iter()
        .flat_map(|c| {
            c.not_analysed
                .iter()
                .filter(|(_, _, why)| !intrinsic(why))
                .map(move |(m, d, why)| format!("{}.{m}{d}: {why}", c.name.replace('/', ".")))
        })
        .collect();
    // HotSpot intrinsics: one reason, one line per class
    let intrinsics: Vec<(String, Vec<String>)> = r
        .classes
        .iter()
        .filter_map(|c| {
            let ms: Vec<String> = c
                .not_analysed
                .iter()
                .filter(|(_, _, why)| intrinsic(why))
                .map(|(m, d, _)| format!("{m}{d}"))
                .collect();
            (!ms.is_empty()).then(|| (c.name.replace('/', "."), ms))
        })
        .collect();
    if !intrinsics.is_empty() {
        let n: usize = intrinsics.iter().map(|(_, ms)| ms.len()).sum();
        let _ = writeln!(
            s,
            "note: {} HotSpot {} no counters and {} in no count above ({}):",
            n,
            if n == 1 {
                "intrinsic has"
            } else {
                "intrinsics have"
            },
            if n == 1 { "is" } else { "are" },
            bci_rewriter::coverage::INTRINSIC_NOTE
                .strip_prefix("a HotSpot intrinsic: ")
                .unwrap_or(bci_rewriter::coverage::INTRINSIC_NOTE)
        );
        for (c, ms) in intrinsics.iter().take(20) {
            let _ = writeln!(s, "  {c}: {}", ms.join(", "));
        }
        if intrinsics.len() > 20 {
            let _ = writeln!(s, "  …");
        }
    }
    if !not_analysed.is_empty() {
        let _ = writeln!(
            s,
            "note: {} could take no counters and {} in no count above (neither covered nor \
             missed):",
            count(not_analysed.len(), "method", "methods"),
            if not_analysed.len() == 1 { "is" } else { "are" }
        );
        for m in not_analysed.iter().take(20) {
            let _ = writeln!(s, "  {m}");
        }
        if not_analysed.len() > 20 {
            let _ = writeln!(s, "  …");
        }
    }
    for e in &r.errors {
        let _ = writeln!(s, "error: {e}");
    }
    if r.per_test.as_ref().is_some_and(|pt| pt.tests.is_empty()) {
        let _ = writeln!(
            s,
            "per test: the data has no per-test counts (a run records them between \
             bci.runtime.Cov.begin and end, which the runtime jar's JUnit listener calls for each \
             test when the jar is on the test class path; offline-instrumented or under the agent)"
        );
    } else if let Some(pt) = &r.per_test {
        let _ = writeln!(
            s,
            "per test: {}; each line with code and the tests that ran it ((outside tests): \
             also run outside every test, e.g. by a @BeforeAll; - for a line never run):",
            count(pt.tests.len(), "test", "tests")
        );
        if let Some(note) = pt.overlap_note() {
            let _ = writeln!(s, "per test: {note}");
        }
        for p in packages {
            for f in &p.files {
                for (nr, l) in &f.lines {
                    if l.status() == Status::Empty {
                        continue;
                    }
                    let mut t = pt.tests_of(&f.path, *nr);
                    if pt.ran_outside(&f.path, *nr) {
                        t.push("(outside tests)");
                    }
                    let t = if t.is_empty() {
                        "-".to_string()
                    } else {
                        t.join(" ")
                    };
                    let _ = writeln!(s, "{}:{nr}\t{t}", f.path);
                }
            }
        }
    }
    s
}
