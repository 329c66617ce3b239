//! JaCoCo's CSV report: one row per class with missed/covered instructions, branches, lines,
//! complexity and methods.

use super::{dotted_package, simple_name, Package, Report};
use std::fmt::Write;

/// A CSV field, quoted when it needs to be.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn write(r: &Report, packages: &[Package<'_>]) -> String {
    let mut o = String::from(
        "GROUP,PACKAGE,CLASS,INSTRUCTION_MISSED,INSTRUCTION_COVERED,BRANCH_MISSED,\
         BRANCH_COVERED,LINE_MISSED,LINE_COVERED,COMPLEXITY_MISSED,COMPLEXITY_COVERED,\
         METHOD_MISSED,METHOD_COVERED\n",
    );
    for p in packages {
        let pkg = if p.name.is_empty() {
            String::new()
        } else {
            dotted_package(&p.name)
        };
        for c in &p.classes {
            let k = &c.counters;
            let _ = writeln!(
                o,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&r.title),
                field(&pkg),
                field(&simple_name(&c.name)),
                k.instructions.missed,
                k.instructions.covered,
                k.branches.missed,
                k.branches.covered,
                k.lines.missed,
                k.lines.covered,
                k.complexity.missed,
                k.complexity.covered,
                k.methods.missed,
                k.methods.covered
            );
        }
    }
    o
}
