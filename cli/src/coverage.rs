//! `bci report` for coverage data files and `bci merge`.

use bci_rewriter::coverage::analysis::{analyze, Class, Counter, Counters};
use bci_rewriter::coverage::data::{CovData, MAGIC};
use bci_rewriter::coverage::{class_hash, lcov};
use bci_rewriter::flow::Split;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `bci instrument --coverage` for one class: counters in every method of a class the rules'
/// filters select, class ids registered at run time with bci/runtime/Cov. Methods left original
/// are named through `say`.
pub fn instrument(
    bytes: &[u8],
    filter: &bci_rewriter::Rules,
    module_reads: bool,
    say: &dyn Fn(&str),
) -> Result<bci_rewriter::Outcome, bci::Error> {
    let cf = bci::ClassFile::parse(bytes)?;
    if !filter.selects_class(&cf.name()?) {
        return Ok(bci_rewriter::Outcome::Unchanged);
    }
    let opts = bci_rewriter::coverage::Options {
        runtime: RUNTIME,
        split: Split::AfterCalls,
        class_id: bci_rewriter::coverage::ClassId::Registered { module_reads },
    };
    let (out, cov) = bci_rewriter::coverage::instrument(bytes, &opts)?;
    for (m, d, why) in &cov.skipped {
        if let bci_rewriter::coverage::Skipped::Error(e) = why {
            say(&format!(
                "bci: {}.{m}{d}: left without counters: {e}",
                cov.name
            ));
        }
    }
    Ok(out)
}

/// The coverage runtime class in the runtime jar.
pub const RUNTIME: &str = "bci/runtime/Cov";

/// Whether a file starts like a coverage data file.
pub fn is_coverage_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC)
}

pub fn read(path: &Path) -> Result<CovData, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    CovData::parse(&b).map_err(|e| format!("{}: {e}", path.display()))
}

/// `bci merge`: sums the inputs into `output`.
pub fn merge(inputs: &[PathBuf], output: &Path, ignore_stale: bool) -> Result<String, String> {
    let mut all = CovData::default();
    let mut notes = String::new();
    for p in inputs {
        let d = read(p)?;
        let skipped = all
            .merge(&d, ignore_stale)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        for c in skipped {
            let _ = writeln!(
                notes,
                "bci: {}: {c}: stale (another build), skipped",
                p.display()
            );
        }
    }
    std::fs::write(output, all.to_bytes()).map_err(|e| format!("{}: {e}", output.display()))?;
    let _ = writeln!(
        notes,
        "bci: wrote {}: {} classes, {} sessions",
        output.display(),
        all.classes.len(),
        all.sessions.len()
    );
    Ok(notes)
}

/// What `bci report` needs for coverage.
pub struct ReportArgs<'a> {
    pub data: &'a Path,
    pub classes: &'a [PathBuf],
    pub sources: &'a [PathBuf],
    pub lcov: Option<&'a Path>,
}

fn pct(c: Counter) -> String {
    if c.total() == 0 {
        "     -".to_string()
    } else {
        format!("{:5.1}%", c.covered as f64 * 100.0 / c.total() as f64)
    }
}

fn cell(c: Counter) -> String {
    format!(
        "{} {:>13}",
        pct(c),
        format!("({}/{})", c.covered, c.total())
    )
}

/// Analyses every class of `classes` (directories or jars of the original classes) against
/// the data; returns the console summary. Classes whose data comes from another build are
/// listed as stale and reported as not run.
pub fn report(a: &ReportArgs<'_>) -> Result<String, String> {
    let data = read(a.data)?;
    if a.classes.is_empty() {
        return Err("--classes: name the directories or jars of the classes that ran".into());
    }
    let mut analyzed: Vec<Class> = Vec::new();
    let mut stale = Vec::new();
    let mut errors = Vec::new();
    let mut matched = 0usize;
    for root in a.classes {
        let all = bci_verify::ClassPath::read_all(root)
            .map_err(|e| format!("{}: {e}", root.display()))?;
        for (entry, bytes) in all {
            if entry.starts_with("META-INF/") || entry.ends_with("module-info.class") {
                continue;
            }
            let Ok(cf) = bci::ClassFile::parse(&bytes) else {
                errors.push(format!("{}: {entry}: not a class file", root.display()));
                continue;
            };
            let Ok(name) = cf.name().map(|n| n.into_owned()) else {
                continue;
            };
            let hash = class_hash(&bytes);
            let counts = data.counts(&name, hash);
            if counts.is_none() && data.is_stale(&name, hash) {
                stale.push(name.clone());
            }
            matched += counts.is_some() as usize;
            match analyze(&bytes, counts, Split::AfterCalls) {
                Ok(c) => analyzed.push(c),
                Err(e) => errors.push(format!("{}: {name}: {e}", root.display())),
            }
        }
    }
    analyzed.sort_by(|x, y| x.name.cmp(&y.name));
    if let Some(out) = a.lcov {
        let roots = a.sources;
        let text = lcov::write(&analyzed, "bci", &|rel| {
            roots
                .iter()
                .map(|r| r.join(rel))
                .find(|p| p.exists())
                .unwrap_or_else(|| PathBuf::from(rel))
                .display()
                .to_string()
        });
        std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let mut by_pkg: BTreeMap<String, Counters> = BTreeMap::new();
    let mut total = Counters::default();
    for c in &analyzed {
        let pkg = c.name.rfind('/').map_or("(default)", |i| &c.name[..i]);
        by_pkg
            .entry(pkg.replace('/', "."))
            .or_default()
            .add(&c.counters);
        total.add(&c.counters);
    }
    let mut s = String::new();
    let w = by_pkg.keys().map(|k| k.len()).max().unwrap_or(7).max(7);
    let _ = writeln!(
        s,
        "{:w$}  {:>20}  {:>20}  {:>20}  {:>20}  {:>20}",
        "package", "instructions", "branches", "lines", "methods", "classes"
    );
    let row = |s: &mut String, name: &str, c: &Counters| {
        let _ = writeln!(
            s,
            "{name:w$}  {:>20}  {:>20}  {:>20}  {:>20}  {:>20}",
            cell(c.instructions),
            cell(c.branches),
            cell(c.lines),
            cell(c.methods),
            cell(c.classes)
        );
    };
    for (p, c) in &by_pkg {
        row(&mut s, p, c);
    }
    row(&mut s, "total", &total);
    let _ = writeln!(
        s,
        "{} classes analysed, {matched} with data; {} sessions in {}",
        analyzed.len(),
        data.sessions.len(),
        a.data.display()
    );
    for c in &stale {
        let _ = writeln!(
            s,
            "stale: {c}: the data is from another build of this class"
        );
    }
    for e in &errors {
        let _ = writeln!(s, "error: {e}");
    }
    Ok(s)
}
