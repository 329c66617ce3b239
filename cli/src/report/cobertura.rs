//! Cobertura's XML report (coverage-04.dtd): packages (dotted), classes with their methods
//! and lines. `line@hits` is the exact count of the line (its first instruction; a line that
//! ran is never 0), `branch="true"` with `condition-coverage="50% (1/2)"` on lines with
//! branches. Rates are covered/valid (1 when there is nothing to cover), complexity is
//! JaCoCo's cyclomatic complexity. File names are package paths relative to the `<source>`
//! roots (the `--sources` directories), or, for a source file not at its package path, where
//! the one file of its name under them is ([`Report::source_rel`]).

use super::{esc, Package, Report};
use bci_rewriter::coverage::analysis::{Counter, Line};
use bci_rewriter::coverage::lcov::line_count;
use std::collections::BTreeMap;
use std::fmt::Write;

fn rate(c: Counter) -> String {
    if c.total() == 0 {
        "1".into()
    } else {
        format!("{:.4}", c.covered as f64 / c.total() as f64)
    }
}

/// (lines covered/valid, branches covered/valid) of a set of lines, as Cobertura counts them
/// (a line is covered when its hits are not 0).
fn line_branch(lines: &BTreeMap<u32, Line>) -> (Counter, Counter) {
    let (mut l, mut b) = (Counter::default(), Counter::default());
    for x in lines.values().filter(|x| x.instructions.total() > 0) {
        if line_count(x) > 0 {
            l.covered += 1;
        } else {
            l.missed += 1;
        }
        b.add(x.branches);
    }
    (l, b)
}

fn lines(o: &mut String, lines: &BTreeMap<u32, Line>) {
    o.push_str("<lines>");
    for (nr, x) in lines.iter().filter(|(_, x)| x.instructions.total() > 0) {
        let _ = write!(o, "<line number=\"{nr}\" hits=\"{}\"", line_count(x));
        let b = x.branches;
        if b.total() > 0 {
            let _ = write!(
                o,
                " branch=\"true\" condition-coverage=\"{}% ({}/{})\"",
                b.covered * 100 / b.total(),
                b.covered,
                b.total()
            );
        } else {
            o.push_str(" branch=\"false\"");
        }
        o.push_str("/>");
    }
    o.push_str("</lines>");
}

pub fn write(r: &Report, packages: &[Package<'_>]) -> String {
    let (mut tl, mut tb) = (Counter::default(), Counter::default());
    let mut o = String::new();
    let mut body = String::new();
    for p in packages {
        // A package's (and the report's) lines are its source files' lines, a line of two
        // classes (an anonymous class's `new` line) once, as the other formats count them;
        // then the lines of classes without a source file.
        let (mut l, mut b) = (Counter::default(), Counter::default());
        for f in &p.files {
            let (fl, fb) = line_branch(&f.lines);
            l.add(fl);
            b.add(fb);
        }
        // Classes with lines but no SourceFile attribute are left out: their file is not
        // known (LCOV leaves them out too, and the note on stderr names them); one without
        // either has no line to add.
        tl.add(l);
        tb.add(b);
        let _ = write!(
            body,
            "<package name=\"{}\" line-rate=\"{}\" branch-rate=\"{}\" complexity=\"{}\"><classes>",
            esc(&p.name.replace('/', ".")),
            rate(l),
            rate(b),
            p.counters.complexity.total()
        );
        let unknown = bci_rewriter::coverage::lcov::without_source(&p.classes);
        for c in (p.classes.iter()).filter(|c| !unknown.iter().any(|u| std::ptr::eq(*u, **c))) {
            let (l, b) = line_branch(&c.lines);
            // Relative to the <source> roots, as Cobertura writes it.
            let file = r.source_rel(&bci_rewriter::coverage::lcov::source_path(c));
            let _ = write!(
                body,
                "<class name=\"{}\" filename=\"{}\" line-rate=\"{}\" branch-rate=\"{}\" complexity=\"{}\"><methods>",
                esc(&c.name.replace('/', ".")),
                esc(&file),
                rate(l),
                rate(b),
                c.counters.complexity.total()
            );
            for m in &c.methods {
                let (l, b) = line_branch(&m.lines);
                let _ = write!(
                    body,
                    "<method name=\"{}\" signature=\"{}\" line-rate=\"{}\" branch-rate=\"{}\" complexity=\"{}\">",
                    esc(&m.name),
                    esc(&m.desc),
                    rate(l),
                    rate(b),
                    m.counters.complexity.total()
                );
                lines(&mut body, &m.lines);
                body.push_str("</method>");
            }
            body.push_str("</methods>");
            lines(&mut body, &c.lines);
            body.push_str("</class>");
        }
        body.push_str("</classes></package>");
    }
    let (l, b) = (tl, tb);
    let stamp = r.sessions.iter().map(|s| s.dump_ms).max().unwrap_or(0);
    let total = Report::total(packages);
    o.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    o.push_str(
        "<!DOCTYPE coverage SYSTEM \"http://cobertura.sourceforge.net/xml/coverage-04.dtd\">\n",
    );
    let _ = write!(
        o,
        "<coverage line-rate=\"{}\" branch-rate=\"{}\" lines-covered=\"{}\" lines-valid=\"{}\" \
         branches-covered=\"{}\" branches-valid=\"{}\" complexity=\"{}\" version=\"bci {}\" \
         timestamp=\"{stamp}\"><sources>",
        rate(l),
        rate(b),
        l.covered,
        l.total(),
        b.covered,
        b.total(),
        total.complexity.total(),
        env!("CARGO_PKG_VERSION")
    );
    for s in &r.sources {
        let _ = write!(o, "<source>{}</source>", esc(&s.display().to_string()));
    }
    o.push_str("</sources><packages>");
    o.push_str(&body);
    o.push_str("</packages></coverage>\n");
    o
}
