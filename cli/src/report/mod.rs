//! `bci report` for coverage data: data files merged, the original classes analysed
//! ([`bci_rewriter::coverage::analysis`]), then written as a console summary (always), JaCoCo
//! XML, Cobertura XML, LCOV, CSV and an HTML directory.
//!
//! The model follows JaCoCo's: a package's counters are the sum of its source files' (lines
//! merged over the classes of one file) plus those of classes without a source file; the
//! report's the sum of its packages'. Classes without code (interfaces with only abstract
//! methods) are left out, as JaCoCo does. Data is matched to a class by name and the hash of
//! its bytes: data of another build of the class (stale) never counts for it and is named on
//! stderr; a class with no data of its own build is reported as not run, as JaCoCo does. The
//! `META-INF/versions/N/` entries of a multi-release jar are builds of the class of the base
//! entry: the one the data has is reported ([`choose`]), never a second class of that name.

pub mod classpath;
mod cobertura;
mod console;
mod csv;
mod encoding;
mod html;
mod jacoco_xml;
mod staged;

use crate::progress::Progress;
use bci_rewriter::coverage::analysis::{
    analyze_plan, instrumented_plan_or_why, Class, Counter, Counters, Line, Status,
};
use bci_rewriter::coverage::data::{CovData, Session, OVERLAP_CLASS};
use bci_rewriter::coverage::{class_hash, lcov};
use bci_rewriter::Glob;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What `bci report` was asked for.
pub struct Args<'a> {
    pub data: &'a [PathBuf],
    pub classes: &'a [PathBuf],
    pub sources: &'a [PathBuf],
    pub include: &'a [String],
    pub exclude: &'a [String],
    pub title: Option<&'a str>,
    pub xml: Option<&'a Path>,
    pub cobertura: Option<&'a Path>,
    pub lcov: Option<&'a Path>,
    pub csv: Option<&'a Path>,
    pub html: Option<&'a Path>,
    /// Per-test coverage: which tests ran each line.
    pub per_test: bool,
    /// The source files' encoding (`--source-encoding`; default UTF-8, else windows-1252).
    pub source_encoding: Option<&'a str>,
}

/// Per-test coverage (data version 2): each test's classes analysed with the counts while it
/// ran.
#[derive(Default)]
pub struct PerTest {
    /// Test names, sorted.
    pub tests: Vec<String>,
    /// Per test (same order): the classes it ran, analysed with its counts.
    pub classes: Vec<Vec<Class>>,
    /// The counts outside every test (the total less the tests'), analysed: what ran before,
    /// between or after the tests (class loading, a `main`).
    pub outside: Vec<Class>,
    /// (source path `a/b/C.java`, line) -> indexes into `tests` of the tests that ran it.
    pub lines: BTreeMap<(String, u32), Vec<usize>>,
    /// (source path, line) of the lines run outside every test (`outside`'s lines with hits):
    /// told apart from lines never run.
    pub outside_lines: std::collections::BTreeSet<(String, u32)>,
    /// Indexes into `tests` of the tests whose window overlapped another test's (run in
    /// parallel: the data's [`OVERLAP_CLASS`] record).
    pub overlapped: Vec<usize>,
}

impl PerTest {
    /// The note on tests that ran at the same time, if any did.
    pub fn overlap_note(&self) -> Option<String> {
        if self.overlapped.is_empty() {
            return None;
        }
        let mut some: Vec<&str> = self
            .overlapped
            .iter()
            .take(5)
            .map(|&t| self.tests[t].as_str())
            .collect();
        if self.overlapped.len() > 5 {
            some.push("…");
        }
        Some(format!(
            "{} of the {} tests ran at the same time as another (parallel execution?): their \
             per-test counts are not separable (each can hold the other's); the run's totals \
             are exact: {}",
            self.overlapped.len(),
            self.tests.len(),
            some.join(", ")
        ))
    }

    /// Whether a line ran outside every test (before, between or after them: a
    /// `@BeforeAll`, class loading, a `main`).
    pub fn ran_outside(&self, path: &str, line: u32) -> bool {
        self.outside_lines.contains(&(path.to_string(), line))
    }

    /// The names of the tests that ran a line.
    pub fn tests_of(&self, path: &str, line: u32) -> Vec<&str> {
        self.lines
            .get(&(path.to_string(), line))
            .map_or(Vec::new(), |v| {
                v.iter().map(|&i| self.tests[i].as_str()).collect()
            })
    }
}

/// The analysed classes and what is known about the run.
pub struct Report {
    pub title: String,
    pub sessions: Vec<Session>,
    /// Classes with code, sorted by name.
    pub classes: Vec<Class>,
    /// Classes with data of another build (left out of the counts), sorted by class name.
    pub stale: Vec<Stale>,
    /// Classes that could not be analysed (the report is incomplete: exit 1).
    pub errors: Vec<String>,
    /// What makes the report wrong as a whole (`--classes` that holds none of the data's
    /// classes): said on stderr as `bci: error: …`, exit 1 (the reports are still written).
    pub input_errors: Vec<String>,
    /// Named on stderr; the report is whole.
    pub warnings: Vec<String>,
    /// Said on stderr (`bci: note:`): what the report did that a reader should know.
    pub notes: Vec<String>,
    /// Classes that had data.
    pub with_data: usize,
    /// Classes without data that would need more counters than a class may have
    /// ([`bci_rewriter::coverage::MAX_COUNTERS`]): never instrumented, so never run as far as
    /// the data knows (internal name, counters), sorted.
    pub too_big: Vec<(String, u32)>,
    /// Synthetic classes (left out, as JaCoCo leaves them) with a method other than
    /// `<clinit>` that ran ([`Class::synthetic_ran`]): named in a note.
    pub synthetic_ran: Vec<String>,
    /// Classes without data that `bci instrument --coverage` (and the agent) leave original
    /// for another class-level reason (no room in the constant pool or the method table for
    /// what the counters add): (internal name, why), sorted; they show as not run.
    pub uncovered: Vec<(String, String)>,
    /// Classes in the data that are under none of the `--classes` paths (sorted).
    pub not_found: Vec<String>,
    pub sources: Vec<PathBuf>,
    /// The files under the source roots by name ([`Report::source_index`]).
    source_index: std::cell::OnceCell<BTreeMap<String, Vec<(usize, PathBuf)>>>,
    /// The reported classes' packages and source paths ([`Report::owned`]).
    owned: std::cell::OnceCell<Owned>,
    /// `--source-encoding`.
    pub source_encoding: Option<encoding::Encoding>,
    pub data_files: Vec<PathBuf>,
    /// With `--per-test`.
    pub per_test: Option<PerTest>,
}

/// Data of another build of a class given: never counted for it.
pub struct Stale {
    /// Internal name.
    pub class: String,
    /// The data files that hold it.
    pub files: Vec<PathBuf>,
    /// When the data is of another entry of the same multi-release jar or directory (another
    /// `META-INF/versions/N/` build of the class): that entry and the one reported.
    pub other_entry: Option<(String, String)>,
    /// When `files` also hold data of the build reported (one covfile both builds ran into):
    /// (the reported build's hash, the other builds' hashes), named in the line.
    pub both: Option<(u64, Vec<u64>)>,
}

impl Stale {
    /// The line on stderr.
    pub fn line(&self) -> String {
        let files: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
        let hex = |hs: &[u64]| -> String {
            let v: Vec<String> = hs.iter().map(|h| format!("{h:016x}")).collect();
            v.join(", ")
        };
        match (&self.other_entry, &self.both) {
            (None, Some((kept, gone))) => format!(
                "stale: {}: {} {} data of two builds of this class: build {} (another build: \
                 left out of the counts) and build {} (the one under --classes: reported)",
                self.class,
                files.join(", "),
                if self.files.len() == 1 {
                    "holds"
                } else {
                    "hold"
                },
                hex(gone),
                hex(&[*kept])
            ),
            (None, None) => format!(
                "stale: {}: the data in {} is from another build of this class (left out of the \
                 counts)",
                self.class,
                files.join(", ")
            ),
            (Some((theirs, shown)), _) => format!(
                "left out: {}: the data in {} of {theirs} (another build of this class there: \
                 not counted); the report shows {shown} (one build of a class per report: \
                 --classes with that build alone reports it)",
                self.class,
                files.join(", ")
            ),
        }
    }
}

/// The reported classes' packages (`a/b`) and source paths (`a/b/C.java`): a file found by
/// name must be of neither another package nor another class ([`Report::locate_source`]).
#[derive(Default)]
struct Owned {
    packages: std::collections::BTreeSet<String>,
    paths: std::collections::BTreeSet<String>,
}

/// The package a source file declares (`a/b`), if its first lines (after comments and file
/// annotations) are `package` clauses: Java's, Kotlin's, Groovy's, Scala's (chained clauses
/// joined). None when it declares none or cannot be read.
fn declared_package(file: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(file)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut head)
        .ok()?;
    let text = String::from_utf8_lossy(&head);
    let mut rest: &str = &text;
    let mut parts: Vec<String> = Vec::new();
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, r)| r);
        } else if rest.starts_with("@file:") || rest.starts_with("#!") {
            rest = rest.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(r) = rest.strip_prefix("package") {
            if !r.starts_with(|c: char| c.is_whitespace()) {
                break;
            }
            let r = r.trim_start();
            let end = r
                .find(|c: char| {
                    !(c.is_alphanumeric() || c == '_' || c == '.' || c == '$' || c == '`')
                })
                .unwrap_or(r.len());
            let name = r[..end].replace('`', "");
            if name.is_empty() || name == "object" {
                break;
            }
            parts.push(name);
            rest = &r[end..];
            rest = rest.trim_start_matches([' ', '\t', ';']);
        } else {
            break;
        }
    }
    (!parts.is_empty()).then(|| parts.join(".").replace('.', "/"))
}

/// A class file under a `--classes` path.
struct Entry {
    /// Index into the containers read from the `--classes` paths (a path, or a jar in or
    /// under it: [`classpath::read`]), in `--classes` order.
    root: usize,
    /// Its name in the jar or directory.
    path: String,
    /// N of a multi-release jar's `META-INF/versions/N/` entry; None for the base entry.
    release: Option<u32>,
    bytes: Vec<u8>,
    hash: u64,
}

/// A class under a `--classes` path that `bci instrument` wrote (it has the `BciInstrumented`
/// marker): never analysed.
struct Copy {
    /// Internal name.
    name: String,
    /// The data's key of its original build ([`original_hash`]).
    original: u64,
    /// Instrumented with coverage counters (else cpu=times probes).
    coverage: bool,
}

/// The data's hash of a class ([`class_hash`]) from the hash of its bytes alone
/// (`bci_rewriter::offline::class_hash`, FNV-1a 64 without the layout tag, in the marker of a
/// class `bci instrument` gave cpu=times probes): the coverage hash goes on from the same
/// state through [`bci_rewriter::coverage::LAYOUT_TAG`].
fn original_hash(marker_hash: u64) -> u64 {
    bci_rewriter::coverage::LAYOUT_TAG
        .iter()
        .fold(marker_hash, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// The data's key (internal name, hash) of a class file: of its bytes, or for a copy `bci
/// instrument` wrote, of its original (from the marker). None for bytes that are no class.
pub fn data_key(bytes: &[u8]) -> Option<(String, u64)> {
    let cf = bci::ClassFile::parse(bytes).ok()?;
    let name = cf.name().ok()?.into_owned();
    let hash = match bci_rewriter::offline::marker(bytes) {
        Ok(Some(m)) if m.coverage => m.hash,
        Ok(Some(m)) => original_hash(m.hash),
        _ => class_hash(bytes),
    };
    Some((name, hash))
}

/// Which of one path's entries of a class is reported: the build that ran (the entry whose
/// hash the data has; of several, the highest release), else the base entry (what JaCoCo and
/// a JVM before 9 read), else the highest release (what the newest JVM loads). None for no
/// entries.
fn choose(entries: &[Entry], has_data: impl Fn(u64) -> bool) -> Option<usize> {
    // Base entries first (release None sorts lowest), then by release; the first entry of a
    // release wins over a later duplicate.
    let best = |pick: &dyn Fn(&Entry) -> bool| {
        entries
            .iter()
            .enumerate()
            .filter(|(_, e)| pick(e))
            .max_by(|(i, x), (j, y)| x.release.cmp(&y.release).then(j.cmp(i)))
            .map(|(i, _)| i)
    };
    best(&|e| has_data(e.hash))
        .or_else(|| best(&|e| e.release.is_none()))
        .or_else(|| best(&|_| true))
}

/// The entries of one path that are builds of a class loaded side by side under one name in a
/// run (JRuby's JIT makes a class of each hot method of a file it cannot compile whole, all
/// named after the file; `classdump=` keeps each): base entries (no multi-release
/// `META-INF/versions/N/` entry) of distinct names and hashes, each with data, whose methods
/// or fields differ. A redefinition cannot change a class's methods or fields, so builds that
/// all declare the same ones may be versions of one class that replaced one another: those
/// keep the one-build rule ([`choose`]), as do a multi-release jar's entries. Empty when not
/// side by side; else the indexes of the builds, in entry order.
fn side_by_side(entries: &[Entry], has_data: impl Fn(u64) -> bool) -> Vec<usize> {
    let mut picked: Vec<usize> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.release.is_none()
            && has_data(e.hash)
            && !(picked.iter()).any(|&k| entries[k].hash == e.hash || entries[k].path == e.path)
        {
            picked.push(i);
        }
    }
    if picked.len() < 2 {
        return Vec::new();
    }
    let members = |b: &[u8]| -> Option<[Vec<(String, String)>; 2]> {
        let cf = bci::ClassFile::parse(b).ok()?;
        let list = |ms: &[bci::class::Member<'_>]| {
            let mut v: Vec<(String, String)> = (ms.iter())
                .map(|m| {
                    (
                        cf.member_name(m).into_owned(),
                        cf.member_desc(m).into_owned(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        Some([list(&cf.methods), list(&cf.fields)])
    };
    let first = members(&entries[picked[0]].bytes);
    if (picked[1..].iter()).all(|&k| members(&entries[k].bytes) == first) {
        return Vec::new();
    }
    picked
}

/// One source file of a package: its classes and their lines merged.
pub struct SourceFile<'a> {
    /// `SourceFile` attribute (`C.java`).
    pub name: String,
    /// Package path and name (`a/b/C.java`).
    pub path: String,
    pub classes: Vec<&'a Class>,
    pub lines: BTreeMap<u32, Line>,
    pub counters: Counters,
}

pub struct Package<'a> {
    /// Internal form (`a/b`; `""` for the default package).
    pub name: String,
    pub classes: Vec<&'a Class>,
    pub files: Vec<SourceFile<'a>>,
    pub counters: Counters,
}

/// JaCoCo's LINE counter of a set of lines.
pub fn line_counter(lines: &BTreeMap<u32, Line>) -> Counter {
    let mut c = Counter::default();
    for l in lines.values() {
        match l.status() {
            Status::Empty => {}
            Status::NotCovered => c.missed += 1,
            _ => c.covered += 1,
        }
    }
    c
}

/// A test's name as the reports show it: a control character is escaped (`\t`, `\n`, `\r`,
/// else `\u{1b}`), and so is `\` (`\\`), so that a name is one line without tabs (the
/// console's per-line listing is tab-separated) and two names stay two.
pub fn printable(name: &str) -> String {
    if !name.chars().any(|c| c.is_control() || c == '\\') {
        return name.to_string();
    }
    let mut s = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '\t' => s.push_str("\\t"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            c if c.is_control() => s.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => s.push(c),
        }
    }
    s
}

/// The package of an internal class name (`a/b` of `a/b/C`).
pub fn package_of(class: &str) -> &str {
    class.rfind('/').map_or("", |i| &class[..i])
}

/// The package in dotted form; the default package is `(default)`.
pub fn dotted_package(p: &str) -> String {
    if p.is_empty() {
        "(default)".into()
    } else {
        p.replace('/', ".")
    }
}

/// The simple name of a class as Java writes it (`Outer.Inner`). Names whose `$` is not
/// javac's nesting separator are kept as they are: a Scala `object` (`Circle$`), or names
/// with `$$` (Scala's and code generators' `$$anon`, `$$Lambda`): with every `$` made a dot
/// they read as `Circle.` or `A..anon`.
pub fn simple_name(class: &str) -> String {
    let simple = class.rsplit('/').next().unwrap_or(class);
    if simple.starts_with('$') || simple.ends_with('$') || simple.contains("$$") {
        simple.to_string()
    } else {
        simple.replace('$', ".")
    }
}

impl Report {
    /// Reads and merges the data files, reads and analyses the classes.
    pub fn build(a: &Args<'_>, progress: &Progress) -> Result<Report, String> {
        for (opt, pats) in [("--include", a.include), ("--exclude", a.exclude)] {
            for p in pats {
                Glob::check(p).map_err(|e| format!("{opt} '{p}': bad glob: {e}"))?;
            }
        }
        let source_encoding = a
            .source_encoding
            .map(encoding::Encoding::parse)
            .transpose()?;
        let include: Vec<Glob> = a.include.iter().map(|p| Glob::class(p)).collect();
        let exclude: Vec<Glob> = a.exclude.iter().map(|p| Glob::class(p)).collect();
        // Data of several files: counts of one (class, hash) add up; the same class under two
        // hashes stays apart (each build's class is matched by its own hash). `from`: the
        // files (indexes into a.data) each (class, hash) came from, to name stale data by file.
        let mut data = CovData::default();
        let mut from: BTreeMap<(String, u64), Vec<usize>> = BTreeMap::new();
        let mut sessions = crate::coverage::Sessions::default();
        for (i, p) in a.data.iter().enumerate() {
            if let Some(what) = crate::coverage::class_path_kind(p) {
                if a.classes.is_empty() {
                    // no --classes at all: the classes were given in the data's place
                    return Err(format!(
                        "{}: {what}, not a coverage data file: give the data file a run \
                         wrote first, then the classes with --classes (bci report bci.cov \
                         --classes {})",
                        p.display(),
                        p.display()
                    ));
                }
                return Err(format!(
                    "{}: {what}, not a coverage data file: it looks like a class path; \
                     --classes takes one path per flag (--classes a.jar --classes b.jar)",
                    p.display()
                ));
            }
            let d = crate::coverage::read(p)?;
            if let Some(note) = sessions.add(p, &d)? {
                progress.line(&note);
            }
            data.add_all(&d)
                .map_err(|e| format!("{}: {e}", p.display()))?;
            for key in d.classes.keys() {
                from.entry(key.clone()).or_default().push(i);
            }
        }
        if a.classes.is_empty() {
            return Err("--classes: name the directories or jars of the classes that ran".into());
        }
        let mut per_test = a.per_test.then(|| PerTest {
            tests: data.tests.keys().map(|t| printable(t)).collect(),
            classes: vec![Vec::new(); data.tests.len()],
            overlapped: (data.tests.values().enumerate())
                .filter(|(_, cs)| {
                    cs.get(&(OVERLAP_CLASS.to_string(), 0))
                        .is_some_and(|v| v.iter().any(|&k| k > 0))
                })
                .map(|(t, _)| t)
                .collect(),
            ..PerTest::default()
        });
        // Every class file of every --classes path, grouped by class name (in --classes order,
        // then by entry name): a multi-release jar's META-INF/versions/N/ entries are builds of
        // the same class as its base entry.
        let mut by_name: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
        let mut r = Report {
            title: a.title.unwrap_or("bci coverage").to_string(),
            sessions: data.sessions.clone(),
            classes: Vec::new(),
            stale: Vec::new(),
            errors: Vec::new(),
            input_errors: Vec::new(),
            warnings: Vec::new(),
            notes: Vec::new(),
            with_data: 0,
            too_big: Vec::new(),
            synthetic_ran: Vec::new(),
            uncovered: Vec::new(),
            not_found: Vec::new(),
            sources: a.sources.to_vec(),
            source_index: std::cell::OnceCell::new(),
            owned: std::cell::OnceCell::new(),
            source_encoding,
            data_files: a.data.to_vec(),
            per_test: None,
        };
        let mut containers: Vec<String> = Vec::new();
        // names of class files that are no class file (an error each, said above)
        let mut unreadable = std::collections::BTreeSet::new();
        let mut copies: BTreeMap<usize, Vec<Copy>> = BTreeMap::new();
        for root in a.classes {
            for c in classpath::read(root, &mut r.errors, &mut r.warnings)? {
                let ri = containers.len();
                containers.push(c.name);
                let root = &containers[ri];
                for (entry, bytes) in c.classes {
                    if entry.ends_with("module-info.class") {
                        continue;
                    }
                    let release = crate::io::release_of(&entry);
                    if release.is_none() && entry.starts_with("META-INF/") {
                        continue;
                    }
                    let Ok(cf) = bci::ClassFile::parse(&bytes) else {
                        r.errors.push(format!("{root}: {entry}: not a class file"));
                        // the class its path names is there, if unreadable: not "under no
                        // --classes path"
                        let rel = match release {
                            Some(_) => entry.splitn(4, '/').nth(3).unwrap_or(&entry),
                            None => entry.as_str(),
                        };
                        if let Some(n) = rel.strip_suffix(".class") {
                            unreadable.insert(n.to_string());
                        }
                        continue;
                    };
                    let Ok(name) = cf.name().map(|n| n.into_owned()) else {
                        r.errors.push(format!("{root}: {entry}: no class name"));
                        continue;
                    };
                    // bci's own runtime (the runtime jar in the lib directory the program
                    // ran with): never instrumented, by bci instrument or the agent, so never
                    // with data; it counted as missed (`bci.runtime 0.0%`)
                    if name.starts_with("bci/runtime/") {
                        continue;
                    }
                    // what `bci instrument` wrote, not an original: never analysed
                    if let Ok(Some(m)) = bci_rewriter::offline::marker(&bytes) {
                        copies.entry(ri).or_default().push(Copy {
                            name,
                            // a coverage marker has the data's hash; a cpu=times one the
                            // hash of the bytes alone
                            original: if m.coverage {
                                m.hash
                            } else {
                                original_hash(m.hash)
                            },
                            coverage: m.coverage,
                        });
                        continue;
                    }
                    let hash = class_hash(&bytes);
                    by_name.entry(name).or_default().push(Entry {
                        root: ri,
                        path: entry,
                        release,
                        bytes,
                        hash,
                    });
                }
            }
        }
        // Instrumented copies: left out, said once per path; an error (exit 1) unless the
        // originals of them all are under --classes too.
        let mut present = std::collections::BTreeSet::new();
        for (ri, cs) in &copies {
            let mut names: Vec<String> = cs.iter().map(|c| c.name.replace('/', ".")).collect();
            names.sort();
            names.dedup();
            let n = names.len();
            if names.len() > 5 {
                names.truncate(5);
                names.push("…".into());
            }
            if cs.iter().all(|c| by_name.contains_key(&c.name)) {
                r.warnings.push(format!(
                    "{}: {} instrumented by bci instrument left out ({}): the original {} \
                     reported",
                    containers[*ri],
                    crate::io::count(n, "class", "classes"),
                    names.join(", "),
                    if n == 1 { "class is" } else { "classes are" }
                ));
                continue;
            }
            let kind = match (cs.iter().any(|c| c.coverage), cs.iter().all(|c| c.coverage)) {
                (true, true) => "with coverage counters",
                (false, _) => "with cpu=times probes",
                (true, false) => "with coverage counters or cpu=times probes",
            };
            let matches = cs
                .iter()
                .filter(|c| data.counts(&c.name, c.original).is_some())
                .count();
            let of_data = if matches == 0 {
                ""
            } else if matches == cs.len() {
                if n == 1 {
                    "; the data is of its original build"
                } else {
                    "; the data is of their original build"
                }
            } else {
                "; the data is of the original build of some"
            };
            r.input_errors.push(format!(
                "{}: {} instrumented by bci instrument ({kind}), not the original \
                 {}: {} cannot be analysed and {} left out ({}{of_data}); give \
                 --classes the classes bci instrument read",
                containers[*ri],
                crate::io::count(n, "class", "classes"),
                if n == 1 { "class" } else { "classes" },
                if n == 1 { "it" } else { "they" },
                if n == 1 { "is" } else { "are" },
                names.join(", ")
            ));
            present.extend(cs.iter().map(|c| c.name.clone()));
        }
        // --include/--exclude: the classes reported, and the data's classes looked for
        let selected = |name: &str| {
            (include.is_empty() || include.iter().any(|g| g.matches(name)))
                && !exclude.iter().any(|g| g.matches(name))
        };
        progress.start(by_name.len());
        for (name, entries) in by_name {
            progress.inc();
            present.insert(name.clone());
            if !selected(&name) {
                continue;
            }
            // The hashes the data has for this class, with the files each came from.
            let in_data: Vec<(u64, &Vec<usize>)> = from
                .range((name.clone(), 0)..=(name.clone(), u64::MAX))
                .map(|((_, h), f)| (*h, f))
                .collect();
            let has_data = |h: u64| in_data.iter().any(|(x, _)| *x == h);
            // Several --classes paths with the class: the first (in --classes order) with the
            // build the data has is reported, else the first. Another path's copy of another
            // build is named (a warning); an identical copy is the same build.
            let mut roots: Vec<usize> = entries.iter().map(|e| e.root).collect();
            roots.dedup();
            let first = roots
                .iter()
                .copied()
                .find(|&ri| entries.iter().any(|e| e.root == ri && has_data(e.hash)))
                .unwrap_or(roots[0]);
            let hashes = |ri: usize| -> std::collections::BTreeSet<u64> {
                entries
                    .iter()
                    .filter(|e| e.root == ri)
                    .map(|e| e.hash)
                    .collect()
            };
            let others: Vec<String> = roots
                .iter()
                .filter(|&&o| o != first && hashes(o) != hashes(first))
                .map(|&o| containers[o].clone())
                .collect();
            if !others.is_empty() {
                let why = if entries.iter().any(|e| has_data(e.hash)) {
                    "the build the data has"
                } else if in_data.is_empty() {
                    "no data of any build: the first --classes path that has it"
                } else {
                    "the data is of none of them: the first --classes path that has it"
                };
                r.warnings.push(format!(
                    "{name}: another build of it is in {}; the one in {} is reported ({why})",
                    others.join(", "),
                    containers[first]
                ));
            }
            let entries: Vec<Entry> = entries.into_iter().filter(|e| e.root == first).collect();
            let Some(chosen) = choose(&entries, has_data) else {
                continue;
            };
            // Builds loaded side by side under one name: each reported as a class of its own,
            // named `name#hash` (the hash of its data and classdump= file name); else one.
            let side = side_by_side(&entries, has_data);
            if !side.is_empty() {
                let named: Vec<String> = (side.iter())
                    .map(|&k| format!("{name}#{:016x}", entries[k].hash))
                    .collect();
                r.notes.push(format!(
                    "{name}: {} builds in {} have data (classes loaded side by side under one \
                     name, e.g. JRuby's JIT compiling each method of a file into a class of its \
                     own): each reported as a class of its own ({}); their source file's lines \
                     are combined",
                    side.len(),
                    containers[first],
                    named.join(", ")
                ));
            }
            let reported: Vec<usize> = if side.is_empty() { vec![chosen] } else { side };
            let Entry { hash, path, .. } = &entries[chosen];
            let hash = *hash;
            // Data of other builds of the class: named, never counted for this one (without
            // data of its own build the class is reported as not run). Data of another entry
            // of the same multi-release jar is that build's, but one build of a class is
            // reported.
            let names = |f: &[usize]| -> Vec<PathBuf> {
                let mut f = f.to_vec();
                f.sort_unstable();
                f.dedup();
                f.into_iter().map(|i| a.data[i].clone()).collect()
            };
            let mut stale_files = Vec::new();
            // the files that hold data of the build reported too, with the other builds'
            // hashes: named apart (their data of this build is counted)
            let is_reported = |h: u64| reported.iter().any(|&k| entries[k].hash == h);
            let with_this: Vec<usize> = (in_data.iter())
                .filter(|(h, _)| is_reported(*h))
                .flat_map(|(_, f)| f.iter().copied())
                .collect();
            let mut both: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
            for (h, files) in &in_data {
                if is_reported(*h) {
                    continue;
                }
                match entries.iter().find(|e| e.hash == *h) {
                    Some(e) => r.stale.push(Stale {
                        class: name.clone(),
                        files: names(files),
                        other_entry: Some((e.path.clone(), path.clone())),
                        both: None,
                    }),
                    None => {
                        for &f in files.iter() {
                            if with_this.contains(&f) {
                                both.entry(f).or_default().push(*h);
                            } else {
                                stale_files.push(f);
                            }
                        }
                    }
                }
            }
            if !stale_files.is_empty() {
                r.stale.push(Stale {
                    class: name.clone(),
                    files: names(&stale_files),
                    other_entry: None,
                    both: None,
                });
            }
            for (f, mut gone) in both {
                gone.sort_unstable();
                gone.dedup();
                // the build reported that this file has data of (of builds side by side, one)
                let kept = (in_data.iter())
                    .find(|(h, fs)| is_reported(*h) && fs.contains(&f))
                    .map_or(hash, |(h, _)| *h);
                r.stale.push(Stale {
                    class: name.clone(),
                    files: names(&[f]),
                    other_entry: None,
                    both: Some((kept, gone)),
                });
            }
            let root = &containers[first];
            for &k in &reported {
                let (bytes, hash) = (entries[k].bytes.as_slice(), entries[k].hash);
                let counts = data.counts(&name, hash);
                // the name the report gives it: a build side by side with others has its hash
                let shown = if reported.len() > 1 {
                    format!("{name}#{hash:016x}")
                } else {
                    name.clone()
                };
                let named = |mut c: Class| {
                    c.name = shown.clone();
                    c
                };
                // as `bci instrument --coverage` (and the agent) planned it: a method it left
                // without counters is named as such, not reported as never run
                let (plan, why) =
                    match instrumented_plan_or_why(bytes, &crate::coverage::options(false)) {
                        Ok(p) => p,
                        Err(e) => {
                            r.errors.push(format!("{root}: {shown}: {e}"));
                            continue;
                        }
                    };
                match analyze_plan(bytes, &plan, counts) {
                    Ok(c) if c.counters.instructions.total() > 0 => {
                        r.with_data += counts.is_some() as usize;
                        if counts.is_none() && plan.counters > bci_rewriter::coverage::MAX_COUNTERS
                        {
                            r.too_big.push((shown.clone(), plan.counters));
                        } else if let (None, Some(why)) = (counts, why) {
                            // the instrumenter's errors start with the class's name
                            let why = why.strip_prefix(&format!("{name}: ")).unwrap_or(&why);
                            r.uncovered.push((shown.clone(), why.to_string()));
                        }
                        r.classes.push(named(c));
                    }
                    Ok(c) => {
                        if c.synthetic_ran {
                            r.synthetic_ran.push(shown.clone());
                        }
                        continue;
                    }
                    Err(e) => {
                        r.errors.push(format!("{root}: {shown}: {e}"));
                        continue;
                    }
                }
                // Per test: a class with no data (never run) is in the section outside the tests,
                // with zero counts, so that the sections add up to the whole report.
                let per_test_total = match (per_test.as_mut(), counts) {
                    (Some(pt), None) => {
                        pt.outside.extend(r.classes.last().cloned());
                        None
                    }
                    (Some(pt), Some(total)) => Some((pt, total)),
                    (None, _) => None,
                };
                if let Some((pt, total)) = per_test_total {
                    // split by the one rule every per-test output shows: a method whose call
                    // spans a test's begin or end is outside the tests, whole
                    let key = (name.clone(), hash);
                    let tests: Vec<Option<&[u64]>> = (data.tests.values())
                        .map(|classes| classes.get(&key).map(Vec::as_slice))
                        .collect();
                    let w = bci_rewriter::coverage::split_windows(&plan, total, &tests);
                    for (t, tc) in w.tests.iter().enumerate() {
                        let Some(tc) = tc else {
                            continue;
                        };
                        match analyze_plan(bytes, &plan, Some(tc)) {
                            Ok(c) => pt.classes[t].push(named(c)),
                            Err(e) => r
                                .errors
                                .push(format!("{root}: {shown}: test {}: {e}", pt.tests[t])),
                        }
                    }
                    match analyze_plan(bytes, &plan, Some(&w.outside)) {
                        Ok(c) => pt.outside.push(named(c)),
                        Err(e) => r.errors.push(format!("{root}: {shown}: {e}")),
                    }
                }
            }
        }
        progress.finish();
        r.not_found = data
            .classes
            .keys()
            .map(|(n, _)| n)
            .filter(|n| selected(n) && !present.contains(*n) && !unreadable.contains(*n))
            .cloned()
            .collect();
        r.not_found.dedup();
        // --classes that holds none of the data's classes (selected by --include/--exclude):
        // a directory of jars before they were read, the wrong module; a report of nothing of
        // the data, which CI would take for a pass, whatever other classes it has
        let mut in_data: Vec<&str> = (data.classes.keys())
            .map(|(n, _)| n.as_str())
            .filter(|n| selected(n))
            .collect();
        in_data.dedup();
        let mut all: Vec<&str> = data.classes.keys().map(|(n, _)| n.as_str()).collect();
        all.dedup();
        if in_data.is_empty() && !all.is_empty() {
            // the globs select none of the data's classes (a typo): a report of nothing of it
            let mut some: Vec<String> = all.iter().take(5).map(|c| c.replace('/', ".")).collect();
            if all.len() > 5 {
                some.push("…".into());
            }
            let opts = match (a.include.is_empty(), a.exclude.is_empty()) {
                (false, true) => "--include selects none",
                (true, false) => "--exclude leaves out every one",
                _ => "--include/--exclude select none",
            };
            r.input_errors.push(format!(
                "{opts} of the data's {}: no class of the data was analysed; give globs that \
                 select classes that ran ({})",
                crate::io::count(all.len(), "class", "classes"),
                some.join(", ")
            ));
        } else if !in_data.is_empty() && r.not_found.len() == in_data.len() {
            let mut some: Vec<String> = in_data
                .iter()
                .take(5)
                .map(|c| c.replace('/', "."))
                .collect();
            if in_data.len() > 5 {
                some.push("…".into());
            }
            let paths: Vec<String> = a.classes.iter().map(|p| p.display().to_string()).collect();
            r.input_errors.push(format!(
                "{} under the --classes paths ({}): no class {}was analysed; give the \
                 directories or jars of the classes that ran ({})",
                match in_data.len() {
                    1 => "the 1 class in the data is not".to_string(),
                    n => format!("none of the {n} classes in the data is"),
                },
                paths.join(", "),
                if r.classes.is_empty() {
                    ""
                } else {
                    "of the data "
                },
                some.join(", ")
            ));
        }
        r.classes.sort_by(|x, y| x.name.cmp(&y.name));
        r.stale.sort_by(|x, y| x.class.cmp(&y.class));
        r.uncovered.sort();
        if let Some(mut pt) = per_test {
            for (t, classes) in pt.classes.iter_mut().enumerate() {
                classes.sort_by(|x, y| x.name.cmp(&y.name));
                for c in classes.iter() {
                    let path = lcov::source_path(c);
                    for (l, x) in &c.lines {
                        if x.max_hits > 0 {
                            let v = pt.lines.entry((path.clone(), *l)).or_default();
                            if v.last() != Some(&t) {
                                v.push(t);
                            }
                        }
                    }
                }
            }
            pt.outside.sort_by(|x, y| x.name.cmp(&y.name));
            for c in &pt.outside {
                let path = lcov::source_path(c);
                for (l, x) in &c.lines {
                    if x.max_hits > 0 {
                        pt.outside_lines.insert((path.clone(), *l));
                    }
                }
            }
            r.per_test = Some(pt);
        }
        Ok(r)
    }

    /// Packages (sorted by name) with their source files and counters.
    pub fn packages(&self) -> Vec<Package<'_>> {
        let mut by: BTreeMap<&str, Vec<&Class>> = BTreeMap::new();
        for c in &self.classes {
            by.entry(package_of(&c.name)).or_default().push(c);
        }
        by.into_iter()
            .map(|(name, classes)| {
                let mut files: BTreeMap<String, SourceFile<'_>> = BTreeMap::new();
                let mut counters = Counters::default();
                for c in &classes {
                    let Some(sf) = &c.source_file else {
                        counters.add(&c.counters);
                        continue;
                    };
                    let f = files.entry(sf.clone()).or_insert_with(|| SourceFile {
                        name: sf.clone(),
                        path: lcov::source_path(c),
                        classes: Vec::new(),
                        lines: BTreeMap::new(),
                        counters: Counters::default(),
                    });
                    f.classes.push(c);
                    f.counters.add(&c.counters);
                    for (l, x) in &c.lines {
                        f.lines.entry(*l).or_default().add(x);
                    }
                }
                let files: Vec<SourceFile<'_>> = files
                    .into_values()
                    .map(|mut f| {
                        f.counters.lines = line_counter(&f.lines);
                        counters.add(&f.counters);
                        f
                    })
                    .collect();
                Package {
                    name: name.to_string(),
                    classes,
                    files,
                    counters,
                }
            })
            .collect()
    }

    /// The sum of the packages' counters.
    pub fn total(packages: &[Package<'_>]) -> Counters {
        let mut t = Counters::default();
        for p in packages {
            t.add(&p.counters);
        }
        t
    }

    /// The line that says which classes are never instrumented for their size
    /// ([`Report::too_big`]), if any.
    pub fn too_big_note(&self) -> Option<String> {
        if self.too_big.is_empty() {
            return None;
        }
        let mut some: Vec<String> = self
            .too_big
            .iter()
            .take(5)
            .map(|(c, n)| format!("{} ({n} counters)", c.replace('/', ".")))
            .collect();
        if self.too_big.len() > 5 {
            some.push("…".into());
        }
        Some(format!(
            "{} more coverage counters than a class may have ({}): never \
             instrumented (bci instrument and the agent leave {} without coverage), {} \
             as not run: {}",
            match self.too_big.len() {
                1 => "1 class would need".to_string(),
                n => format!("{n} classes would need"),
            },
            bci_rewriter::coverage::MAX_COUNTERS,
            if self.too_big.len() == 1 {
                "it"
            } else {
                "them"
            },
            if self.too_big.len() == 1 {
                "it shows"
            } else {
                "they show"
            },
            some.join(", ")
        ))
    }

    /// The line that names the classes left without coverage for another class-level reason
    /// ([`Report::uncovered`]), if any.
    pub fn uncovered_note(&self) -> Option<String> {
        if self.uncovered.is_empty() {
            return None;
        }
        let mut some: Vec<String> = (self.uncovered.iter().take(5))
            .map(|(c, why)| format!("{} ({why})", c.replace('/', ".")))
            .collect();
        if self.uncovered.len() > 5 {
            some.push("…".into());
        }
        Some(format!(
            "{} no room for the coverage counters: never instrumented (bci instrument and the \
             agent leave {} without coverage), {} as not run: {}",
            match self.uncovered.len() {
                1 => "1 class has".to_string(),
                n => format!("{n} classes have"),
            },
            if self.uncovered.len() == 1 {
                "it"
            } else {
                "them"
            },
            if self.uncovered.len() == 1 {
                "it shows"
            } else {
                "they show"
            },
            some.join(", ")
        ))
    }

    /// Where a source file (`a/b/C.java`) is under the source roots, if it is: (index of the
    /// root, path under it). At its package path under the first root that has it, else
    /// (sources not laid out by package, usual in Scala and Kotlin projects) the one file of
    /// its name anywhere under the roots, if exactly one is.
    ///
    /// The one file of its name is not taken when it is another package's: it declares
    /// another package, or it sits at the package path of another reported package (and not
    /// at its own), or it is another reported class's source at its package path
    /// (`src/drv2/StringUtils.java` is not `org.apache.commons.lang3.StringUtils`'s source).
    fn locate_source(&self, path: &str) -> Option<(usize, PathBuf)> {
        if let Some(i) = (0..self.sources.len()).find(|&i| self.sources[i].join(path).is_file()) {
            return Some((i, PathBuf::from(path)));
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let (i, rel) = match self.source_index().get(name).map(Vec::as_slice) {
            Some([one]) => one.clone(),
            _ => return None,
        };
        let pkg = package_of(path);
        let rel_s = rel.to_string_lossy().replace('\\', "/");
        let dir = package_of(&rel_s);
        let at = |p: &str| dir == p || dir.ends_with(&format!("/{p}"));
        let owned = self.owned();
        let others = (pkg.is_empty() || !at(pkg))
            && (owned.packages.iter()).any(|p| !p.is_empty() && p != pkg && at(p));
        let taken = owned.paths.contains(&rel_s) && rel_s != path;
        let declared = declared_package(&self.sources[i].join(&rel));
        if others || taken || declared.is_some_and(|d| d != pkg) {
            return None;
        }
        Some((i, rel))
    }

    /// The reported classes' packages and source paths: read once, when a file is not at its
    /// package path.
    fn owned(&self) -> &Owned {
        self.owned.get_or_init(|| {
            let mut o = Owned::default();
            for c in &self.classes {
                o.packages.insert(package_of(&c.name).to_string());
                if c.source_file.is_some() {
                    o.paths.insert(lcov::source_path(c));
                }
            }
            o
        })
    }

    /// The files under the source roots by file name (the same file through two roots, one in
    /// the other, once): read once, when a file is not at its package path.
    fn source_index(&self) -> &BTreeMap<String, Vec<(usize, PathBuf)>> {
        self.source_index.get_or_init(|| {
            let mut index: BTreeMap<String, Vec<(usize, PathBuf)>> = BTreeMap::new();
            let mut seen = std::collections::BTreeSet::new();
            for (i, root) in self.sources.iter().enumerate() {
                let mut dirs = vec![PathBuf::new()];
                while let Some(rel) = dirs.pop() {
                    let Ok(rd) = std::fs::read_dir(root.join(&rel)) else {
                        continue;
                    };
                    let mut entries: Vec<_> = rd.flatten().collect();
                    entries.sort_by_key(|e| e.file_name());
                    for e in entries {
                        let (name, sub) = (e.file_name(), rel.join(e.file_name()));
                        // symbolic links to directories are not followed (no loops)
                        match e.file_type() {
                            Ok(t) if t.is_dir() => dirs.push(sub),
                            Ok(_) if e.path().is_file() => {
                                let real = std::fs::canonicalize(e.path()).unwrap_or(e.path());
                                if seen.insert(real) {
                                    let v = index.entry(name.to_string_lossy().into_owned());
                                    v.or_default().push((i, sub));
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            index
        })
    }

    /// Where a source file (`a/b/C.java`) is under the source roots, if it is
    /// ([`Report::locate_source`]).
    pub fn find_source(&self, path: &str) -> Option<PathBuf> {
        self.locate_source(path)
            .map(|(i, rel)| self.sources[i].join(rel))
    }

    /// The path LCOV names a source file by: the file found under the source roots (the root
    /// as given joined with its package path, or with where the one file of its name is),
    /// else the package path.
    pub fn source_name(&self, path: &str) -> String {
        self.find_source(path)
            .unwrap_or_else(|| PathBuf::from(path))
            .display()
            .to_string()
    }

    /// The path Cobertura names a source file by, relative to its `<source>` root: where it
    /// was found under it, else the package path.
    pub fn source_rel(&self, path: &str) -> String {
        self.locate_source(path)
            .map_or_else(|| path.to_string(), |(_, rel)| rel.display().to_string())
    }

    /// The line that names the source files not found under the `--sources` roots, if any
    /// is not (and a root is a directory: roots that are not are named apart).
    pub fn sources_not_found_note(&self, packages: &[Package<'_>]) -> Option<String> {
        if !self.sources.iter().any(|r| r.is_dir()) {
            return None;
        }
        let missing: Vec<&str> = (packages.iter())
            .flat_map(|p| &p.files)
            .map(|f| f.path.as_str())
            .filter(|p| self.locate_source(p).is_none())
            .collect();
        if missing.is_empty() {
            return None;
        }
        let mut some: Vec<&str> = missing.iter().copied().take(5).collect();
        if missing.len() > 5 {
            some.push("…");
        }
        Some(format!(
            "{} not found under the --sources roots (neither at {} package path nor as the \
             one file of {} name): HTML source pages without text, LCOV and Cobertura name {} \
             by package path: {}",
            crate::io::count(missing.len(), "source file", "source files"),
            if missing.len() == 1 { "its" } else { "their" },
            if missing.len() == 1 { "its" } else { "their" },
            if missing.len() == 1 { "it" } else { "them" },
            some.join(", ")
        ))
    }
}

/// `bci report` on coverage data: writes the files asked for, returns the console summary and
/// whether a class could not be analysed (its `error:` lines end the summary) or the inputs
/// are wrong as a whole (said on stderr): exit 1.
pub fn run(a: &Args<'_>) -> Result<(String, bool), String> {
    let progress = Progress::new("classes");
    let r = Report::build(a, &progress)?;
    // a source root that cannot be read: said once here, not only on each HTML page (and once
    // when it is given twice)
    for (k, root) in a.sources.iter().enumerate() {
        if !root.is_dir() && !a.sources[..k].contains(root) {
            progress.line(&format!(
                "bci: warning: --sources {}: {} (no source is read from it)",
                root.display(),
                if root.exists() {
                    "not a directory"
                } else {
                    "no such directory"
                }
            ));
        }
    }
    for w in &r.warnings {
        progress.line(&format!("bci: warning: {w}"));
    }
    for n in &r.notes {
        progress.line(&format!("bci: note: {n}"));
    }
    for s in &r.stale {
        progress.line(&s.line());
    }
    for e in &r.input_errors {
        progress.line(&format!("bci: error: {e}"));
    }
    if let Some(note) = r.per_test.as_ref().and_then(PerTest::overlap_note) {
        progress.line(&format!("bci: warning: per test: {note}"));
    }
    let packages = r.packages();
    if a.html.is_some() || a.lcov.is_some() || a.cobertura.is_some() {
        if let Some(note) = r.sources_not_found_note(&packages) {
            progress.line(&format!("bci: note: {note}"));
        }
    }
    // classes with lines but no SourceFile attribute: of no known file, so in no LCOV record
    // and no Cobertura class (a made-up `a/B.java` stops genhtml)
    let files: Vec<String> = [a.lcov, a.cobertura]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect();
    let unknown = lcov::without_source(&r.classes);
    if !files.is_empty() && !unknown.is_empty() {
        let mut names: Vec<String> = (unknown.iter().take(5))
            .map(|c| c.name.replace('/', "."))
            .collect();
        if unknown.len() > 5 {
            names.push(format!("and {} more", unknown.len() - 5));
        }
        progress.line(&format!(
            "bci: note: {} with line numbers but no SourceFile attribute (the Clojure \
             compiler's __init classes, compiled scripts): source file not known, left out of \
             {}; the other reports count {}: {}",
            crate::io::count(unknown.len(), "class", "classes"),
            files.join(" and "),
            if unknown.len() == 1 { "it" } else { "them" },
            names.join(", ")
        ));
    }
    // Every report file is written to a temporary file first, then the HTML directory (whole
    // or not at all), and only then are the files put in place: a report that cannot be
    // written leaves every output as it was.
    let mut staged = Vec::new();
    let mut stage = |opt: &str, p: &Path, text: String| -> Result<(), String> {
        let f = crate::io::stage(p, text.into_bytes()).map_err(|e| format!("{opt} {e}"))?;
        staged.push((opt.to_string(), f));
        Ok(())
    };
    if let Some(p) = a.xml {
        stage("--xml", p, jacoco_xml::write(&r, &packages))?;
    }
    if let Some(p) = a.cobertura {
        stage("--cobertura", p, cobertura::write(&r, &packages))?;
    }
    if let Some(p) = a.lcov {
        let path = |rel: &str| r.source_name(rel);
        let text = match &r.per_test {
            // One TN: section per test, and one for what ran outside the tests: the sections
            // add up to the whole run.
            Some(pt) => {
                let mut t = String::new();
                let names = lcov::test_names(&pt.tests);
                for (name, classes) in names.iter().zip(&pt.classes) {
                    t.push_str(&lcov::write(classes, name, &path));
                }
                t.push_str(&lcov::write(&pt.outside, lcov::OUTSIDE_TESTS, &path));
                t
            }
            None => lcov::write(&r.classes, &r.title, &path),
        };
        stage("--lcov", p, text)?;
    }
    if let Some(p) = a.csv {
        stage("--csv", p, csv::write(&r, &packages))?;
    }
    if let Some(d) = a.html {
        for w in html::write(&r, &packages, d)? {
            progress.line(&format!("bci: warning: --html {}: {w}", d.display()));
        }
    }
    for (opt, f) in staged {
        f.commit().map_err(|e| format!("{opt} {e}"))?;
    }
    let synthetic = &r.synthetic_ran;
    if !synthetic.is_empty() {
        let mut names: Vec<&str> = synthetic.iter().take(5).map(String::as_str).collect();
        let more = format!("and {} more", synthetic.len().saturating_sub(5));
        if synthetic.len() > 5 {
            names.push(&more);
        }
        progress.line(&format!(
            "bci: note: {} synthetic {} ran and {} in no count (compiler-generated classes are \
             left out, as JaCoCo leaves them; Groovy keeps a trait's methods in one, \
             `…$Trait$Helper`): {}",
            synthetic.len(),
            if synthetic.len() == 1 {
                "class"
            } else {
                "classes"
            },
            if synthetic.len() == 1 { "is" } else { "are" },
            names.join(", ")
        ));
    }
    if let Some(p) = a.lcov {
        let left = lcov::without_lines(&r.classes);
        if !left.is_empty() {
            let mut names: Vec<String> = left
                .iter()
                .take(5)
                .map(|c| c.name.replace('/', "."))
                .collect();
            if left.len() > 5 {
                names.push(format!("and {} more", left.len() - 5));
            }
            progress.line(&format!(
                "bci: note: {} {} without line numbers (javac -g:none, ProGuard) left out of {}: \
                 LCOV records are per line (genhtml drops a record without lines); the other \
                 reports count {}: {}",
                left.len(),
                if left.len() == 1 { "class" } else { "classes" },
                p.display(),
                if left.len() == 1 { "it" } else { "them" },
                names.join(", ")
            ));
        }
    }
    Ok((
        console::write(&r, &packages),
        !r.errors.is_empty() || !r.input_errors.is_empty(),
    ))
}

/// Escapes text for XML and HTML (content and double-quoted attributes).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => {}
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::simple_name;

    #[test]
    fn the_data_hash_of_an_original_follows_from_its_marker_hash() {
        for b in [&b""[..], b"\xca\xfe\xba\xbe", b"any bytes at all"] {
            assert_eq!(
                super::original_hash(bci_rewriter::offline::class_hash(b)),
                bci_rewriter::coverage::class_hash(b)
            );
        }
    }

    #[test]
    fn simple_names_keep_dollars_that_do_not_nest() {
        assert_eq!(simple_name("a/b/Outer$Inner"), "Outer.Inner");
        assert_eq!(simple_name("Outer$Inner$1"), "Outer.Inner.1");
        // a Scala object and its companion class
        assert_eq!(simple_name("shapes/Circle$"), "Circle$");
        assert_eq!(simple_name("shapes/Circle"), "Circle");
        assert_eq!(simple_name("a/Main$$anon$1"), "Main$$anon$1");
        assert_eq!(simple_name("a/$Proxy3"), "$Proxy3");
    }
}
