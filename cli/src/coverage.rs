//! Coverage in the CLI: `bci instrument --coverage` for one class, data files, `bci merge`
//! (`bci report` is in [`crate::report`]).

use bci_rewriter::coverage::data::{CovData, MAGIC};
use bci_rewriter::flow::Split;
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
    for (m, d, before, after) in &cov.huge {
        say(&format!(
            "bci: {}",
            bci_rewriter::coverage::huge_note(&cov.name, m, d, *before, *after)
        ));
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

/// What a path given as a data file is when it looks like a class path entry instead: "a
/// directory", "a jar" (zip) or "a class file" (a mistaken `--classes a.jar b.jar`).
pub fn class_path_kind(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    if path.is_dir() {
        return Some("a directory");
    }
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .ok()?;
    match &head {
        b"PK\x03\x04" | b"PK\x05\x06" => Some("a jar"),
        [0xca, 0xfe, 0xba, 0xbe] => Some("a class file"),
        _ => None,
    }
}

pub fn read(path: &Path) -> Result<CovData, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if b.starts_with(b"bci-data\t") {
        // the other kind of data: say what it is rather than which header it lacks
        return Err(format!(
            "{}: cpu=times profile data (the runtime jar's bci.data), not coverage data: bci \
             merge and coverage reports take coverage data (bci.cov); render a profile with \
             bci report {}",
            path.display(),
            path.display()
        ));
    }
    CovData::parse(&b).map_err(|e| format!("{}: {e}", path.display()))
}

/// The inputs each session came from, so that one run's data given twice (the same file
/// twice, a merged file next to one of its parts: a `*.cov` glob that picks up an earlier
/// `bci merge` output) is refused naming both files, before its counts are added twice.
#[derive(Default)]
pub struct Sessions {
    by_id: std::collections::HashMap<String, PathBuf>,
    /// The inputs so far (data without sessions given twice is refused too).
    paths: Vec<PathBuf>,
}

impl Sessions {
    /// Takes the sessions of `d`, read from `path`: an error if an earlier input holds one of
    /// them; a note (returned) if `d` lists one twice itself (its counts are doubled already:
    /// a merge of a file with itself by an older bci).
    pub fn add(&mut self, path: &Path, d: &CovData) -> Result<Option<String>, String> {
        let shared = d.sessions.iter().find_map(|s| {
            self.by_id
                .get(&s.id)
                .map(|first| (first.as_path(), Some(s.id.as_str())))
        });
        let same_file = || {
            self.paths
                .iter()
                .find(|p| p.as_path() == path || crate::offline::same_path(p, path))
                .map(|first| (first.as_path(), None))
        };
        if let Some((first, id)) = shared.or_else(same_file) {
            return Err(if first == path {
                format!(
                    "{} is given twice: its counts would be added twice",
                    path.display()
                )
            } else if crate::offline::same_path(first, path) {
                format!(
                    "{} and {} are one file: its counts would be added twice",
                    first.display(),
                    path.display()
                )
            } else {
                format!(
                    "{} and {} both hold session {}: that run's counts would be added \
                         twice; give each run's data once (not a merged file next to a file \
                         merged into it)",
                    first.display(),
                    path.display(),
                    id.unwrap_or_default()
                )
            });
        }
        for s in &d.sessions {
            self.by_id.insert(s.id.clone(), path.to_path_buf());
        }
        self.paths.push(path.to_path_buf());
        let twice = d.repeated_sessions();
        Ok((!twice.is_empty()).then(|| {
            format!(
                "bci: {}: session {} {} in it twice: that run's counts are likely counted \
                 twice (a merge of data with itself); remake it from the files it was merged \
                 from",
                path.display(),
                twice.join(", "),
                if twice.len() == 1 { "is" } else { "are" }
            )
        }))
    }
}

/// `bci merge`: sums the inputs into `output`.
pub fn merge(inputs: &[PathBuf], output: &Path, ignore_stale: bool) -> Result<String, String> {
    let mut all = CovData::default();
    let mut notes = String::new();
    let mut sessions = Sessions::default();
    for p in inputs {
        let d = read(p)?;
        if let Some(note) = sessions.add(p, &d)? {
            let _ = writeln!(notes, "{note}");
        }
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
    crate::io::create_parent(output)?;
    crate::io::write_replacing(output, &all.to_bytes())?;
    let _ = writeln!(
        notes,
        "bci: wrote {}: {} classes, {} sessions",
        output.display(),
        all.classes.len(),
        all.sessions.len()
    );
    Ok(notes)
}
