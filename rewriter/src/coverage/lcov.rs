//! LCOV tracefile (geninfo(1) format): `TN`, `SF`, `FN`/`FNDA` (entries), `DA` (line hits),
//! `BRDA` (hits per branch outcome), and the `FNF/FNH/BRF/BRH/LF/LH` totals, one record per
//! source file that has line numbers (a class without any has nothing to show per line).
//! Counts are exact: `DA` is the line's [`Line::hits`] (its first instruction), or, if that
//! never ran but another instruction of the line did, [`Line::max_hits`] — a line that ran is
//! never written as 0.

use super::analysis::{Class, Line};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The source path of a class: its package directory and SourceFile (`a/b/C.java`); without a
/// SourceFile attribute, the class name with `.java`.
pub fn source_path(c: &Class) -> String {
    let pkg = c.name.rfind('/').map_or("", |i| &c.name[..=i]);
    match &c.source_file {
        Some(f) => format!("{pkg}{f}"),
        None => {
            let outer = c.name.split('$').next().unwrap_or(&c.name);
            format!("{outer}.java")
        }
    }
}

/// The count written in `DA` for a line.
pub fn line_count(l: &Line) -> u64 {
    if l.hits > 0 {
        l.hits
    } else {
        l.max_hits
    }
}

/// Whether any of a source file's classes has a line with code: LCOV's records are per line
/// (genhtml drops a record without `DA` lines, and refuses a file of only such records).
fn has_lines(cs: &[&Class]) -> bool {
    cs.iter()
        .any(|c| c.lines.values().any(|l| l.instructions.total() > 0))
}

/// The classes with code that [`write`] leaves out for having no line number: those of source
/// files without any (compiled with `javac -g:none` or stripped, e.g. by ProGuard), and those
/// without a SourceFile attribute that have none.
pub fn without_lines(classes: &[Class]) -> Vec<&Class> {
    let mut by_file: BTreeMap<String, Vec<&Class>> = BTreeMap::new();
    for c in classes {
        by_file.entry(source_path(c)).or_default().push(c);
    }
    by_file
        .into_values()
        .flat_map(|cs| {
            // a class without a SourceFile is of no file: its own lines alone count
            let file_has_lines = has_lines(&cs);
            cs.into_iter().filter(move |c| {
                !(if c.source_file.is_some() {
                    file_has_lines
                } else {
                    has_lines(&[c])
                })
            })
        })
        .filter(|c| c.counters.instructions.total() > 0)
        .collect()
}

/// The classes with line numbers but no SourceFile attribute (the Clojure compiler's
/// `ns__init`, Rhino's compiled scripts) that [`write`] leaves out: their source file is not
/// known, and a record naming a made-up one (`a/B.java`) stops genhtml. JaCoCo's XML has no
/// source file for them either.
pub fn without_source<C: std::borrow::Borrow<Class>>(classes: &[C]) -> Vec<&Class> {
    classes
        .iter()
        .map(|c| c.borrow())
        .filter(|c| c.source_file.is_none() && has_lines(&[c]))
        .collect()
}

/// Writes one record per source file that has lines ([`without_lines`] and
/// [`without_source`] are left out). `path` maps a class's [`source_path`] to what `SF:` says
/// (e.g. joined to a source root); `test` names the test (`TN:`).
pub fn write(classes: &[Class], test: &str, path: &dyn Fn(&str) -> String) -> String {
    let mut by_file: BTreeMap<String, Vec<&Class>> = BTreeMap::new();
    for c in classes.iter().filter(|c| c.source_file.is_some()) {
        by_file.entry(source_path(c)).or_default().push(c);
    }
    let mut out = String::new();
    for (file, cs) in by_file {
        if !has_lines(&cs) {
            continue;
        }
        let _ = writeln!(out, "TN:{}", sanitize(test));
        let _ = writeln!(out, "SF:{}", path(&file));
        let (mut fnf, mut fnh) = (0, 0);
        let mut fns = String::new();
        for c in &cs {
            let simple = c.name.rsplit('/').next().unwrap_or(&c.name);
            for m in &c.methods {
                let name = format!("{simple}.{}{}", m.name, m.desc);
                let line = m.first_line.unwrap_or(0);
                let _ = writeln!(out, "FN:{line},{name}");
                let _ = writeln!(fns, "FNDA:{},{name}", m.entries);
                fnf += 1;
                fnh += (m.entries > 0) as u32;
            }
        }
        out.push_str(&fns);
        let _ = writeln!(out, "FNF:{fnf}");
        let _ = writeln!(out, "FNH:{fnh}");
        // Branches in line order; the block number is the decision's index within its line.
        let mut brs: Vec<(u32, u32, &Vec<u64>, bool)> = Vec::new();
        let mut lines: BTreeMap<u32, Line> = BTreeMap::new();
        for c in &cs {
            for m in &c.methods {
                for b in &m.branches {
                    let Some(l) = b.line else { continue };
                    let ran = m.lines.get(&l).is_some_and(|x| x.max_hits > 0);
                    brs.push((l, b.pc, &b.counts, ran));
                }
            }
            for (l, x) in &c.lines {
                lines.entry(*l).or_default().add(x);
            }
        }
        brs.sort_by_key(|b| (b.0, b.1));
        let (mut brf, mut brh) = (0, 0);
        let mut block = 0;
        let mut last_line = None;
        for (l, _, counts, ran) in brs {
            if last_line == Some(l) {
                block += 1;
            } else {
                block = 0;
                last_line = Some(l);
            }
            for (k, c) in counts.iter().enumerate() {
                brf += 1;
                brh += (*c > 0) as u32;
                if ran {
                    let _ = writeln!(out, "BRDA:{l},{block},{k},{c}");
                } else {
                    let _ = writeln!(out, "BRDA:{l},{block},{k},-");
                }
            }
        }
        let _ = writeln!(out, "BRF:{brf}");
        let _ = writeln!(out, "BRH:{brh}");
        let (mut lf, mut lh) = (0, 0);
        for (l, x) in &lines {
            if x.instructions.total() == 0 {
                continue;
            }
            let n = line_count(x);
            let _ = writeln!(out, "DA:{l},{n}");
            lf += 1;
            lh += (n > 0) as u32;
        }
        let _ = writeln!(out, "LF:{lf}");
        let _ = writeln!(out, "LH:{lh}");
        out.push_str("end_of_record\n");
    }
    out
}

/// LCOV test names may hold letters, digits and underscores only.
/// The name of the per-test section of what ran outside every test (`TN:outside_tests`).
pub const OUTSIDE_TESTS: &str = "outside tests";

/// The `TN:` names of tests (in the order given; `bci report` gives them sorted by full
/// name), one per test and each its own: the name with every character other than an ASCII
/// letter, digit or `_` made `_` (what lcov accepts), and when that is the name of an earlier
/// test or of [`OUTSIDE_TESTS`]' section (`a.T#x$y()` and `a.T#x_y()` are both
/// `a_T_x_y__`), `_2`, `_3`, … appended, the first suffix free; genhtml would merge two
/// sections of one name.
pub fn test_names<S: AsRef<str>>(tests: &[S]) -> Vec<String> {
    let mut taken: std::collections::HashSet<String> =
        std::iter::once(sanitize(OUTSIDE_TESTS)).collect();
    tests
        .iter()
        .map(|t| {
            let base = sanitize(t.as_ref());
            let mut name = base.clone();
            let mut k = 1;
            while !taken.insert(name.clone()) {
                k += 1;
                name = format!("{base}_{k}");
            }
            name
        })
        .collect()
}

fn sanitize(t: &str) -> String {
    t.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
