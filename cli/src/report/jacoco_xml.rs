//! JaCoCo's XML report (`report.dtd`, "-//JACOCO//DTD Report 1.1//EN"): sessions, packages
//! (VM names), classes with their methods, source files with per-line `mi ci mb cb`, and at
//! each level the counters whose total is not 0, in JaCoCo's order. Hit counts have no place
//! in this DTD; they are in the LCOV, Cobertura and HTML reports.

use super::{esc, line_counter, Package, Report};
use bci_rewriter::coverage::analysis::{Counter, Counters, Status};
use std::fmt::Write;

fn counters(out: &mut String, c: &Counters, class: bool) {
    let all = [
        ("INSTRUCTION", c.instructions),
        ("BRANCH", c.branches),
        ("LINE", c.lines),
        ("COMPLEXITY", c.complexity),
        ("METHOD", c.methods),
        ("CLASS", if class { c.classes } else { Counter::default() }),
    ];
    for (t, k) in all {
        if k.total() > 0 {
            let _ = write!(
                out,
                "<counter type=\"{t}\" missed=\"{}\" covered=\"{}\"/>",
                k.missed, k.covered
            );
        }
    }
}

pub fn write(r: &Report, packages: &[Package<'_>]) -> String {
    let mut o = String::new();
    o.push_str(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
         <!DOCTYPE report PUBLIC \"-//JACOCO//DTD Report 1.1//EN\" \"report.dtd\">",
    );
    let _ = write!(o, "<report name=\"{}\">", esc(&r.title));
    for s in &r.sessions {
        let _ = write!(
            o,
            "<sessioninfo id=\"{}\" start=\"{}\" dump=\"{}\"/>",
            esc(&s.id),
            s.start_ms,
            s.dump_ms
        );
    }
    for p in packages {
        let _ = write!(o, "<package name=\"{}\">", esc(&p.name));
        for c in &p.classes {
            let _ = write!(o, "<class name=\"{}\"", esc(&c.name));
            if let Some(sf) = &c.source_file {
                let _ = write!(o, " sourcefilename=\"{}\"", esc(sf));
            }
            o.push('>');
            for m in &c.methods {
                let _ = write!(
                    o,
                    "<method name=\"{}\" desc=\"{}\"",
                    esc(&m.name),
                    esc(&m.desc)
                );
                if let Some(l) = m.first_line {
                    let _ = write!(o, " line=\"{l}\"");
                }
                o.push('>');
                let mut mc = m.counters.clone();
                mc.lines = line_counter(&m.lines);
                counters(&mut o, &mc, false);
                o.push_str("</method>");
            }
            counters(&mut o, &c.counters, true);
            o.push_str("</class>");
        }
        for f in &p.files {
            let _ = write!(o, "<sourcefile name=\"{}\">", esc(&f.name));
            for (nr, l) in &f.lines {
                if l.status() == Status::Empty {
                    continue;
                }
                let _ = write!(
                    o,
                    "<line nr=\"{nr}\" mi=\"{}\" ci=\"{}\" mb=\"{}\" cb=\"{}\"/>",
                    l.instructions.missed,
                    l.instructions.covered,
                    l.branches.missed,
                    l.branches.covered
                );
            }
            counters(&mut o, &f.counters, true);
            o.push_str("</sourcefile>");
        }
        counters(&mut o, &p.counters, true);
        o.push_str("</package>");
    }
    counters(&mut o, &Report::total(packages), true);
    o.push_str("</report>");
    o
}
