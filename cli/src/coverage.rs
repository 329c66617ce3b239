//! Coverage in the CLI: `bci instrument --coverage` for one class, data files, `bci merge`
//! (`bci report` is in [`crate::report`]).

use bci_rewriter::coverage::data::{CovData, MAGIC};
use bci_rewriter::flow::Split;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `bci instrument --coverage` for one class: counters in every method of a class the rules'
/// filters select, class ids registered at run time with bci/runtime/Cov. Methods left original
/// are named through `say`, and counted: the second value.
pub fn instrument(
    bytes: &[u8],
    filter: &bci_rewriter::Rules,
    module_reads: bool,
    say: &dyn Fn(&str),
) -> Result<(bci_rewriter::Outcome, usize), bci::Error> {
    let cf = bci::ClassFile::parse(bytes)?;
    if !filter.selects_class(&cf.name()?) {
        return Ok((bci_rewriter::Outcome::Unchanged, 0));
    }
    let (out, cov) = bci_rewriter::coverage::instrument(bytes, &options(module_reads))?;
    let mut left = 0;
    for (m, d, why) in &cov.skipped {
        if let bci_rewriter::coverage::Skipped::Error(e) = why {
            left += 1;
            // the editor's errors name the method already: once is enough
            let at = format!("{}.{m}{d}", cov.name);
            let e = e.strip_prefix(&format!("{at}: ")).unwrap_or(e);
            say(&format!("bci: {at}: left without counters: {e}"));
        }
    }
    for (m, d, before, after) in &cov.huge {
        say(&format!(
            "bci: {}",
            bci_rewriter::coverage::huge_note(&cov.name, m, d, *before, *after)
        ));
    }
    Ok((out, left))
}

/// The options of `bci instrument --coverage`; `bci report` plans classes with them
/// ([`bci_rewriter::coverage::analysis::instrumented_plan`]): the methods left without
/// counters are the same.
pub fn options(module_reads: bool) -> bci_rewriter::coverage::Options<'static> {
    bci_rewriter::coverage::Options {
        runtime: RUNTIME,
        split: Split::AfterCalls,
        class_id: bci_rewriter::coverage::ClassId::Registered { module_reads },
    }
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

/// `bci merge`: sums the inputs into `output`. Data of two builds of a class is an error; with
/// `ignore_stale` one build of it is kept ([`choose_builds`]) and the others are left out,
/// each named.
pub fn merge(
    inputs: &[PathBuf],
    output: &Path,
    ignore_stale: bool,
    classes: &[PathBuf],
) -> Result<String, String> {
    let mut notes = String::new();
    let mut sessions = Sessions::default();
    let mut read_all = Vec::with_capacity(inputs.len());
    for p in inputs {
        let d = read(p)?;
        if let Some(note) = sessions.add(p, &d)? {
            let _ = writeln!(notes, "{note}");
        }
        read_all.push(d);
    }
    let mut all = CovData::default();
    let mut left_out = false;
    if ignore_stale {
        let gone = choose_builds(inputs, &read_all, classes, &mut notes)?;
        left_out = !gone.is_empty();
        for (i, d) in read_all.iter().enumerate() {
            let keep = |(name, hash): &(String, u64)| !gone.contains(&(i, name.clone(), *hash));
            let mut kept = CovData {
                sessions: d.sessions.clone(),
                ..CovData::default()
            };
            kept.classes = d
                .classes
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (t, cs) in &d.tests {
                let cs: std::collections::BTreeMap<_, _> = cs
                    .iter()
                    .filter(|(k, _)| keep(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !cs.is_empty() {
                    kept.tests.insert(t.clone(), cs);
                }
            }
            all.add_all(&kept)
                .map_err(|e| format!("{}: {e}", inputs[i].display()))?;
        }
    } else {
        // the same class from two builds: an error naming both inputs and both builds
        let mut first: std::collections::BTreeMap<&str, (u64, usize)> = Default::default();
        for (i, d) in read_all.iter().enumerate() {
            for (name, hash) in d.classes.keys() {
                match first.get(name.as_str()) {
                    None => {
                        first.insert(name, (*hash, i));
                    }
                    Some(&(h, j)) if h != *hash => {
                        let (a, b) = (inputs[j].display(), inputs[i].display());
                        // one file's two builds: which is newer cannot be told from the data,
                        // --ignore-stale needs --classes to choose
                        return Err(format!(
                            "class {name}: data from two different builds (hashes differ): {}; \
                             merge data of one build, or {}",
                            if i == j {
                                format!("builds {h:016x} and {hash:016x} both in {a}")
                            } else {
                                format!("build {h:016x} in {a}, build {hash:016x} in {b}")
                            },
                            if i == j {
                                "--ignore-stale --classes PATH with the classes whose build to keep"
                            } else {
                                "--ignore-stale"
                            }
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        for (p, d) in inputs.iter().zip(&read_all) {
            all.merge(d, false)
                .map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    crate::io::write_replacing(output, &all.to_bytes())?;
    let _ = writeln!(
        notes,
        "bci: wrote {}: {}, {}{}",
        output.display(),
        crate::io::count(all.classes.len(), "class", "classes"),
        crate::io::count(all.sessions.len(), "session", "sessions"),
        if left_out {
            " (a session whose data was left out stays listed: its other classes keep their \
             counts)"
        } else {
            ""
        }
    );
    Ok(notes)
}

/// `bci merge --ignore-stale`: of each class with data of several builds, the build to keep:
/// the one under the `classes` paths (the classes the report will be made of), else the
/// build of the first input that has the class; an input that itself holds two builds of it
/// (one covfile both builds ran into) cannot tell which is newer: an error, unless `classes`
/// chooses. Returns what is left out, as (input index, class, hash), each named in `notes`.
fn choose_builds(
    inputs: &[PathBuf],
    data: &[CovData],
    classes: &[PathBuf],
    notes: &mut String,
) -> Result<std::collections::BTreeSet<(usize, String, u64)>, String> {
    use std::collections::{BTreeMap, BTreeSet};
    // class -> hash -> the inputs that hold it
    let mut builds: BTreeMap<&str, BTreeMap<u64, Vec<usize>>> = BTreeMap::new();
    for (i, d) in data.iter().enumerate() {
        for (name, hash) in d.classes.keys() {
            builds
                .entry(name)
                .or_default()
                .entry(*hash)
                .or_default()
                .push(i);
        }
    }
    let under = builds_under(classes)?;
    let mut gone = BTreeSet::new();
    for (name, bs) in builds.iter().filter(|(_, bs)| bs.len() > 1) {
        let there: Vec<u64> = under
            .get(*name)
            .map(|hs| bs.keys().filter(|h| hs.contains(h)).copied().collect())
            .unwrap_or_default();
        let (kept, why): (Vec<u64>, String) = if !there.is_empty() {
            (there, "the one under --classes".into())
        } else {
            let first = bs.values().map(|f| f[0]).min().unwrap_or(0);
            let of_first: Vec<u64> = bs
                .iter()
                .filter(|(_, f)| f.contains(&first))
                .map(|(h, _)| *h)
                .collect();
            if of_first.len() > 1 {
                let hs: Vec<String> = of_first.iter().map(|h| format!("{h:016x}")).collect();
                return Err(format!(
                    "{}: {name}: data of two builds ({}) in this one file: which is newer cannot \
                     be told from the data; give --classes PATH with the classes whose build \
                     to keep, or merge data of one build",
                    inputs[first].display(),
                    hs.join(", ")
                ));
            }
            // --classes given that holds neither build: said, so that it is not taken for
            // the build under --classes
            let not_there = match (classes.is_empty(), under.contains_key(*name)) {
                (true, _) => "",
                (false, true) => {
                    ": the --classes paths hold another build of it, which the data has none of"
                }
                (false, false) => ": it is under no --classes path",
            };
            (
                of_first,
                format!(
                    "of {}, the first input that has the class{not_there}",
                    inputs[first].display()
                ),
            )
        };
        let kept_s: Vec<String> = kept.iter().map(|h| format!("{h:016x}")).collect();
        for (h, files) in bs.iter().filter(|(h, _)| !kept.contains(h)) {
            for &i in files {
                let _ = writeln!(
                    notes,
                    "bci: {}: {name}: data of build {h:016x} left out; kept: build {} ({why})",
                    inputs[i].display(),
                    kept_s.join(", ")
                );
                gone.insert((i, name.to_string(), *h));
            }
        }
    }
    Ok(gone)
}

/// The data's hashes of the classes under `bci merge --classes` paths, by class name: of the
/// original classes, and of copies `bci instrument` wrote (their marker says of which build).
fn builds_under(
    classes: &[PathBuf],
) -> Result<std::collections::BTreeMap<String, std::collections::BTreeSet<u64>>, String> {
    let mut out: std::collections::BTreeMap<String, std::collections::BTreeSet<u64>> =
        Default::default();
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    for root in classes {
        for c in crate::report::classpath::read(root, &mut errors, &mut warnings)? {
            for (_, bytes) in c.classes {
                if let Some((name, hash)) = crate::report::data_key(&bytes) {
                    out.entry(name).or_default().insert(hash);
                }
            }
        }
    }
    if let Some(e) = errors.first() {
        return Err(format!("--classes: {e}"));
    }
    Ok(out)
}
