//! Coverage in the agent (`coverage=y`): the classes instrumented (by id), and the data file.
//! Safe Rust without JVM pointers; the counts come from java.lang.BciCov (runtime.rs).
//!
//! Class ids are handed out here: by the class hook for each class it instruments (a constant in
//! the class's code), and through `bci/runtime/Cov.register` for classes instrumented offline
//! (the agent's forwarder). Data is keyed by class name and the hash of its original bytes, so
//! the file equals what offline instrumentation of the same program writes.

use std::collections::HashMap;
use std::sync::Mutex;

/// A class with coverage counters: internal name, hash of its original bytes, counter count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassRec {
    pub name: String,
    pub hash: u64,
    pub counters: u32,
    /// Each method with an exit local ([`bci_rewriter::coverage::MethodCoverage::exit_local`]):
    /// at a dump, its frames in a call count as that block's exit ([`InFlight`]). Empty for
    /// classes registered offline.
    pub exits: Vec<Exit>,
}

/// A method's exit local, the fingerprint of the code the agent gave it
/// ([`bci_rewriter::coverage::inflight::fingerprint`]: the local is that code's), and the hash
/// of what that code writes to the local
/// ([`bci_rewriter::coverage::inflight::exit_stores`]), to find it in code another agent
/// rewrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    pub name: String,
    pub desc: String,
    pub slot: u16,
    pub code: (u32, u64),
    pub stores: Option<u64>,
}

/// The classes' methods by class name, to find the exit local of a frame's method at a dump.
pub struct InFlight<'a> {
    classes: &'a [Option<ClassRec>],
    by_name: HashMap<&'a str, Vec<usize>>,
}

impl<'a> InFlight<'a> {
    pub fn new(classes: &'a [Option<ClassRec>]) -> InFlight<'a> {
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        for (id, c) in classes.iter().enumerate() {
            if let Some(c) = c.as_ref().filter(|c| !c.exits.is_empty()) {
                by_name.entry(c.name.as_str()).or_default().push(id);
            }
        }
        InFlight { classes, by_name }
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The class id, counter count and exit of method `name desc` of class `class` (internal
    /// name): None if no instrumented class of that name has it, or if classes of that name from
    /// different builds (other hashes: two class loaders, a redefinition) have it, which the
    /// name cannot tell apart.
    pub fn find(&self, class: &str, name: &str, desc: &str) -> Option<(usize, u32, &'a Exit)> {
        let mut found: Option<(usize, u32, &Exit, u64)> = None;
        for &id in self.by_name.get(class)? {
            let Some(c) = &self.classes[id] else { continue };
            let Some(e) = c.exits.iter().find(|e| e.name == name && e.desc == desc) else {
                continue;
            };
            match found {
                Some((_, _, _, h)) if h != c.hash => return None,
                Some(_) => {}
                None => found = Some((id, c.counters, e, c.hash)),
            }
        }
        found.map(|(id, n, e, _)| (id, n, e))
    }
}

/// Class ids (index; 0 is never used) to their classes.
#[derive(Default)]
pub struct CovRegistry {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    classes: Vec<Option<ClassRec>>,
    /// Ids of classes registered offline, by (name, hash): a class loaded by two loaders
    /// registers twice and gets one id, as with the runtime jar.
    offline: HashMap<(String, u64), i32>,
}

impl CovRegistry {
    pub fn new() -> CovRegistry {
        CovRegistry {
            inner: Mutex::new(Inner {
                classes: vec![None],
                offline: HashMap::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new id for a class about to be instrumented ([`CovRegistry::set`] names it once it is).
    pub fn reserve(&self) -> i32 {
        let mut g = self.lock();
        g.classes.push(None);
        (g.classes.len() - 1) as i32
    }

    pub fn set(&self, id: i32, rec: ClassRec) {
        let mut g = self.lock();
        if let Some(slot) = g.classes.get_mut(id as usize) {
            *slot = Some(rec);
        }
    }

    /// Forgets class `id` (a redefinition whose instrumented bytes were not used).
    pub fn clear(&self, id: i32) {
        let mut g = self.lock();
        if let Some(slot) = g.classes.get_mut(id as usize) {
            *slot = None;
        }
    }

    /// `bci/runtime/Cov.register` of an offline-instrumented class: its id.
    pub fn register(&self, rec: ClassRec) -> i32 {
        let mut g = self.lock();
        let key = (rec.name.clone(), rec.hash);
        if let Some(&id) = g.offline.get(&key) {
            return id;
        }
        g.classes.push(Some(rec));
        let id = (g.classes.len() - 1) as i32;
        g.offline.insert(key, id);
        id
    }

    /// Every class by id.
    pub fn snapshot(&self) -> Vec<Option<ClassRec>> {
        self.lock().classes.clone()
    }

    pub fn len(&self) -> usize {
        self.lock().classes.iter().filter(|c| c.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The host part of a coverage session's id (`<host>-<pid>-<start ms>`): the machine's name
/// (/proc/sys/kernel/hostname, what gethostname(2) returns), else `$HOSTNAME` (which bash sets
/// but does not export), else `host`. The runtime jar's writer (Cov.hostName) asks the same
/// sources in the same order, so both write ids of one form.
pub fn host_name() -> String {
    let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    [proc, std::env::var("HOSTNAME").ok()]
        .into_iter()
        .flatten()
        .map(|h| h.trim().to_string())
        .find(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// Splits BciCov.snapshot's flat array (`cid, n, counts × n` …, then `-1` if counts were lost)
/// into counts by class id; the flag says whether counts were lost.
pub fn parse_snapshot(flat: &[i64]) -> Result<(HashMap<usize, Vec<u64>>, bool), String> {
    let mut out = HashMap::new();
    let mut k = 0;
    while k < flat.len() {
        let cid = flat[k];
        if cid == -1 && k + 1 == flat.len() {
            return Ok((out, true));
        }
        let n = *flat
            .get(k + 1)
            .ok_or_else(|| format!("coverage snapshot: truncated at {k}"))?;
        if cid < 0 || n < 0 || (n as usize) > flat.len() - k - 2 {
            return Err(format!(
                "coverage snapshot: bad entry at {k} (class id {cid}, {n} counters)"
            ));
        }
        let v = flat[k + 2..k + 2 + n as usize]
            .iter()
            .map(|&x| x.max(0) as u64)
            .collect();
        out.insert(cid as usize, v);
        k += 2 + n as usize;
    }
    Ok((out, false))
}

/// Splits BciCov.tests's flat array (per test `-2, length, chars × length`, then its classes as
/// in [`parse_snapshot`]) into (test name, counts by class id), in order.
pub type TestCounts = Vec<(String, HashMap<usize, Vec<u64>>)>;

pub fn parse_tests(flat: &[i64]) -> Result<TestCounts, String> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < flat.len() {
        let len = match (flat[k], flat.get(k + 1)) {
            (-2, Some(&n)) if n >= 0 && (n as usize) <= flat.len() - k - 2 => n as usize,
            _ => return Err(format!("coverage tests: bad test header at {k}")),
        };
        let units: Vec<u16> = flat[k + 2..k + 2 + len]
            .iter()
            .map(|&c| c.clamp(0, 0xffff) as u16)
            .collect();
        let name = String::from_utf16_lossy(&units);
        k += 2 + len;
        let end = flat[k..]
            .iter()
            .position(|&x| x == -2)
            .map_or(flat.len(), |p| k + p);
        // ids, lengths and counts are never negative: -2 starts the next test
        let (counts, _) = parse_snapshot(&flat[k..end])?;
        out.push((name, counts));
        k = end;
    }
    Ok(out)
}

/// What a path that is not a regular file is, for messages: "a character device", "a FIFO
/// (named pipe)", ….
pub fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The temporary file a dump writes beside `target` and renames over it.
pub fn temp_name(target: &str, pid: u32) -> String {
    format!("{target}.tmp{pid}")
}

/// The start-up check of `covfile=` `p` (expanded, links followed), so that a dump at exit
/// cannot fail for a reason known now: `p`, if it exists, is a regular file (the data is read,
/// added to and replaced by rename: a device would be replaced by a file, `/dev/zero` read
/// without end, a FIFO's open for reading would block), `<p>.lck` can be made (it stays: see
/// agent/README.md), and so can the temporary file a dump renames over `p` (made and removed
/// here: a name one byte short of the limit passed the lock file's check).
pub fn check_covfile(p: &str, pid: u32) -> Result<(), String> {
    if let Ok(m) = std::fs::metadata(p) {
        if !m.is_file() {
            return Err(format!(
                "covfile={p} is {}, not a regular file: coverage data is read, added to and \
                 replaced by rename, which needs a regular file (give a file's path)",
                kind_of(&m.file_type())
            ));
        }
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(format!("{p}.lck"))
        .map_err(|e| format!("covfile={p}: cannot write {p}.lck: {e}"))?;
    let tmp = temp_name(p, pid);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&tmp)
        .and_then(|_| std::fs::remove_file(&tmp))
        .map_err(|e| {
            format!(
                "covfile={p}: cannot write {tmp} (the temporary file a dump renames over it): {e}"
            )
        })
}

/// The most of a data file a dump reads (a larger file is left as it is, as one that is not
/// coverage data).
pub const MAX_DATA_FILE: u64 = 2 << 30;

#[cfg(feature = "rewriter")]
pub use data_file::CovFile;

#[cfg(feature = "rewriter")]
mod data_file {
    use super::*;
    use bci_rewriter::coverage::data::{CovData, Session};
    use std::io::{Read, Write};

    // open(2) flags: a FIFO or terminal opened to be read must neither block nor become the
    // controlling terminal (Linux values)
    const O_NONBLOCK: i32 = 0o4000;
    const O_NOCTTY: i32 = 0o400;

    /// The data file and what this JVM has added to it so far: each dump adds only the counts
    /// since the previous one (a SIGQUIT dump, then the exit dump: the file holds the run's
    /// counts once), and updates this JVM's session instead of adding another.
    pub struct CovFile {
        pub path: String,
        session: Session,
        written: HashMap<(String, u64), Vec<u64>>,
        /// Per test, what was written of it (per-test coverage).
        written_tests: HashMap<String, HashMap<(String, u64), Vec<u64>>>,
        /// Whether this JVM's session is in the file already.
        in_file: bool,
        /// `<path>.<pid>` once the file was found not to be coverage data: this and every
        /// later dump write the whole run there (what this JVM had added to the file went
        /// with it), so that one run's data is in one file, whole.
        fallback: Option<String>,
        /// `<path>.lck`, opened here and kept open, and descriptors held in reserve for the
        /// files a dump opens (the data read, the temporary file written): a program that
        /// holds every descriptor at exit lost the data ("Too many open files"). The dump
        /// frees the reserve for its own opens and takes it again after.
        lock: Option<std::fs::File>,
        spare: Vec<std::fs::File>,
    }

    /// How long a dump waits for `<covfile>.lck` before it says it is waiting (it waits on).
    const LOCK_NOTE_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

    /// Descriptors a dump needs besides the lock file's (see `CovFile::spare`).
    const SPARE_FDS: usize = 2;

    fn reserve() -> Vec<std::fs::File> {
        (0..SPARE_FDS)
            .filter_map(|_| std::fs::File::open("/dev/null").ok())
            .collect()
    }

    impl CovFile {
        /// `path` empty: no coverage data (nothing opened).
        pub fn new(path: &str, session: Session) -> CovFile {
            let lock = (!path.is_empty()).then(|| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(format!("{path}.lck"))
                    .ok()
            });
            CovFile {
                path: path.to_string(),
                session,
                written: HashMap::new(),
                written_tests: HashMap::new(),
                in_file: false,
                fallback: None,
                lock: lock.flatten(),
                spare: if path.is_empty() {
                    Vec::new()
                } else {
                    reserve()
                },
            }
        }

        /// This JVM's session (JVM and command line are filled in at dump time).
        pub fn session_mut(&mut self) -> &mut Session {
            &mut self.session
        }

        /// This run's data: every class instrumented (counts of classes that never ran: 0),
        /// counts summed over classes with the same name and hash (two class loaders).
        pub fn run_data(
            classes: &[Option<ClassRec>],
            counts: &HashMap<usize, Vec<u64>>,
        ) -> CovData {
            let mut d = CovData::default();
            for (id, c) in classes.iter().enumerate() {
                let Some(c) = c else { continue };
                let mut v = counts.get(&id).cloned().unwrap_or_default();
                v.resize(c.counters as usize, 0);
                // one id, one class: the counter count is the class's, cannot differ
                let _ = d.add_class(&c.name, c.hash, &v);
            }
            d
        }

        /// Adds per-test counts ([`super::parse_tests`]) to this run's data.
        pub fn add_tests(
            run: &mut CovData,
            classes: &[Option<ClassRec>],
            tests: &super::TestCounts,
        ) {
            for (name, counts) in tests {
                for (id, v) in counts {
                    if *id == 0 {
                        // no class has id 0: BciCov counts there the times the test overlapped
                        // another (tests run in parallel)
                        let _ = run.add_test_class(
                            name,
                            bci_rewriter::coverage::data::OVERLAP_CLASS,
                            0,
                            &v[..v.len().min(1)],
                        );
                        continue;
                    }
                    let Some(Some(c)) = classes.get(*id) else {
                        continue;
                    };
                    let mut v = v.clone();
                    v.resize(c.counters as usize, 0);
                    let _ = run.add_test_class(name, &c.name, c.hash, &v);
                }
            }
        }

        /// Adds this run's counts since the last dump to the file, under a lock on
        /// `<path>.lck` (the lock the runtime jar's writer takes too: JVMs sharing the file add
        /// up). A file that is not coverage data is left alone and the whole run goes to
        /// `<path>.<pid>`, now and at every later dump. Returns where the data went.
        pub fn dump(&mut self, run: &CovData, dump_ms: i64) -> Result<String, String> {
            self.spare.clear();
            let r = self.dump_unreserved(run, dump_ms);
            self.spare = reserve();
            r
        }

        /// [`dump`](Self::dump), the reserved descriptors free.
        fn dump_unreserved(&mut self, run: &CovData, dump_ms: i64) -> Result<String, String> {
            self.session.dump_ms = dump_ms;
            if let Some(f) = &self.fallback {
                return self.write_whole_run(run, f.clone());
            }
            let mut delta = CovData::default();
            // what an earlier dump wrote in excess: calls it counted as their blocks' exits
            // while they ran (InFlight), which have returned since
            let mut back = CovData::default();
            for ((name, hash), v) in &run.classes {
                let d: Vec<u64> = match self.written.get(&(name.clone(), *hash)) {
                    Some(w) => {
                        let w = w.iter().chain(std::iter::repeat(&0));
                        let b: Vec<u64> = v
                            .iter()
                            .zip(w.clone())
                            .map(|(a, b)| b.saturating_sub(*a))
                            .collect();
                        if b.iter().any(|&x| x > 0) {
                            let _ = back.add_class(name, *hash, &b);
                        }
                        v.iter().zip(w).map(|(a, b)| a.saturating_sub(*b)).collect()
                    }
                    None => v.clone(),
                };
                let _ = delta.add_class(name, *hash, &d);
            }
            for (test, classes) in &run.tests {
                let w = self.written_tests.get(test);
                for ((name, hash), v) in classes {
                    let d: Vec<u64> = match w.and_then(|w| w.get(&(name.clone(), *hash))) {
                        Some(w) => v
                            .iter()
                            .zip(w.iter().chain(std::iter::repeat(&0)))
                            .map(|(a, b)| a.saturating_sub(*b))
                            .collect(),
                        None => v.clone(),
                    };
                    let _ = delta.add_test_class(test, name, *hash, &d);
                }
            }
            let lck = format!("{}.lck", self.path);
            // the one kept open (else opened now: closed, it is unlocked, at the end)
            let opened;
            let lock = match &self.lock {
                Some(f) => f,
                None => {
                    opened = std::fs::OpenOptions::new()
                        .create(true)
                        .truncate(false)
                        .write(true)
                        .open(&lck)
                        .map_err(|e| format!("{lck}: {e}"))?;
                    &opened
                }
            };
            crate::sys::lock_whole_file_noting(lock, LOCK_NOTE_AFTER, |pid| {
                crate::callbacks::log(&format!(
                    "waiting for the lock on {lck}, held by another process{} (a JVM writing \
                     the same covfile, or one stopped); the data is written once it is released",
                    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                ))
            })
            .map_err(|e| format!("{lck}: lock: {e}"))?;
            let merged = self.merge_into_file(&delta, &back);
            let _ = crate::sys::unlock_whole_file(lock);
            let at = match merged? {
                Some(at) => at,
                None => {
                    let f = format!("{}.{}", self.path, std::process::id());
                    self.fallback = Some(f.clone());
                    return self.write_whole_run(run, f);
                }
            };
            for (k, v) in &run.classes {
                self.written.insert(k.clone(), v.clone());
            }
            for (t, classes) in &run.tests {
                let w = self.written_tests.entry(t.clone()).or_default();
                for (k, v) in classes {
                    w.insert(k.clone(), v.clone());
                }
            }
            self.in_file = true;
            Ok(at)
        }

        /// `<path>.<pid>`: this run's data as a whole and its session (written, not added to:
        /// the file holds this JVM's data only).
        fn write_whole_run(&self, run: &CovData, target: String) -> Result<String, String> {
            let mut data = run.clone();
            data.sessions = vec![self.session.clone()];
            Self::replace(&data, &target)?;
            Ok(target)
        }

        /// Writes `data` to `target` through a temporary file renamed over it. A target that
        /// is there already must be a regular file (a device is never replaced by a file); the
        /// new file keeps its permission bits and group (and, run as root, its owner).
        fn replace(data: &CovData, target: &str) -> Result<(), String> {
            let tmp = temp_name(target, std::process::id());
            let before = match std::fs::metadata(target) {
                Ok(m) if !m.is_file() => {
                    return Err(format!(
                        "{target}: {}, not a regular file: not replaced",
                        kind_of(&m.file_type())
                    ))
                }
                m => m.ok(),
            };
            let write = || -> std::io::Result<()> {
                let mut f = std::fs::File::create(&tmp)?;
                if let Some(m) = &before {
                    Self::keep_owner_and_mode(&f, m);
                }
                f.write_all(&data.to_bytes())?;
                f.sync_all()?;
                std::fs::rename(&tmp, target)
            };
            write().map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("{target}: {e}")
            })
        }

        /// Gives `f` the permission bits and group of `m` (a file it replaces), and its owner
        /// when this process may (root); what cannot be given is left as made.
        fn keep_owner_and_mode(f: &std::fs::File, m: &std::fs::Metadata) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let root = crate::sys::effective_uid() == 0;
            let _ = std::os::unix::fs::fchown(f, root.then_some(m.uid()), Some(m.gid()));
            // after the chown, which clears set-id bits
            let _ = f.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777));
        }

        /// Adds the counts to the file; `None` if it is not coverage data (left as it is, and
        /// said once).
        fn merge_into_file(
            &self,
            delta: &CovData,
            back: &CovData,
        ) -> Result<Option<String>, String> {
            let mut data = CovData::default();
            let target = self.path.clone();
            let mut bytes = Vec::new();
            // only a regular file is read (checked at start, but the path may have changed
            // since): a FIFO's open would block, /dev/zero's read never end; opened without
            // blocking, its type checked on the descriptor, read up to its size
            let left = |why: String| {
                crate::callbacks::log(&format!(
                    "{}: {why}; left as it is, coverage data written to {}.{} (this run's, \
                     whole, at every dump)",
                    self.path,
                    self.path,
                    std::process::id()
                ));
                Ok(None)
            };
            let opened = match std::fs::metadata(&self.path) {
                Ok(m) if !m.is_file() => return left(kind_of(&m.file_type()).to_string()),
                _ => {
                    use std::os::unix::fs::OpenOptionsExt;
                    std::fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(O_NONBLOCK | O_NOCTTY)
                        .open(&self.path)
                }
            };
            let existing = match opened {
                Ok(f) => {
                    let m = f.metadata().map_err(|e| format!("{}: {e}", self.path))?;
                    if !m.is_file() {
                        return left(kind_of(&m.file_type()).to_string());
                    }
                    if m.len() > MAX_DATA_FILE {
                        return left(format!("{} bytes, more than a dump reads", m.len()));
                    }
                    f.take(m.len())
                        .read_to_end(&mut bytes)
                        .map_err(|e| format!("{}: {e}", self.path))
                        .map(|_| !bytes.is_empty())?
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => return Err(format!("{}: {e}", self.path)),
            };
            if existing {
                match CovData::parse(&bytes) {
                    Ok(d) => data = d,
                    Err(e) => {
                        crate::callbacks::log(&format!(
                            "{}: {e}; left as it is, coverage data written to {}.{} (this \
                             run's, whole, at every dump)",
                            self.path,
                            self.path,
                            std::process::id()
                        ));
                        return Ok(None);
                    }
                }
            }
            // same name and hash add up; the same name under another hash (another build)
            // stays next to it, as the runtime jar's writer does (bci report says it is stale)
            for ((name, hash), v) in &delta.classes {
                data.add_class(name, *hash, v)
                    .map_err(|e| format!("{target}: {e}"))?;
            }
            for ((name, hash), v) in &back.classes {
                data.take_back(name, *hash, v);
            }
            for (test, classes) in &delta.tests {
                for ((name, hash), v) in classes {
                    data.add_test_class(test, name, *hash, v)
                        .map_err(|e| format!("{target}: {e}"))?;
                }
            }
            match data.sessions.iter_mut().find(|s| s.id == self.session.id) {
                Some(s) if self.in_file => *s = self.session.clone(),
                _ => data.sessions.push(self.session.clone()),
            }
            Self::replace(&data, &target)?;
            Ok(Some(target))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_ids_and_offline_dedup() {
        let r = CovRegistry::new();
        let a = r.reserve();
        assert_eq!(a, 1);
        let rec = |n: &str| ClassRec {
            name: n.into(),
            hash: 7,
            counters: 3,
            exits: Vec::new(),
        };
        r.set(a, rec("A"));
        let b = r.register(rec("B"));
        assert_eq!(r.register(rec("B")), b);
        assert_ne!(a, b);
        assert_eq!(r.len(), 2);
        assert_eq!(r.snapshot()[b as usize], Some(rec("B")));
    }

    #[test]
    fn test_parsing() {
        let flat = [-2, 2, 'a' as i64, 'b' as i64, 1, 2, 5, 6, -2, 1, 'c' as i64];
        let t = parse_tests(&flat).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].0, "ab");
        assert_eq!(t[0].1[&1], vec![5, 6]);
        assert_eq!(t[1].0, "c");
        assert!(t[1].1.is_empty());
        assert!(parse_tests(&[-2, 5, 1]).is_err());
        assert!(parse_tests(&[3, 1, 1]).is_err());
        assert!(parse_tests(&[-2, 0, 1, 9, 0]).is_err());
    }

    #[test]
    fn snapshot_parsing_refuses_bad_input() {
        let (m, lost) = parse_snapshot(&[1, 2, 5, 6, 3, 0, -1]).unwrap();
        assert!(lost);
        assert_eq!(m[&1], vec![5, 6]);
        assert_eq!(m[&3], Vec::<u64>::new());
        assert!(parse_snapshot(&[1, 5, 0]).is_err());
        assert!(parse_snapshot(&[1]).is_err());
        assert!(parse_snapshot(&[-2, 0]).is_err());
    }

    /// A fresh scratch directory of this test process, `bciagent-cov-<tag>-<pid>`.
    #[cfg(feature = "rewriter")]
    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("bciagent-cov-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// The class table of one class `A` (id 1, hash 1) with `counters` counters.
    #[cfg(feature = "rewriter")]
    fn class_a(counters: u32) -> Vec<Option<ClassRec>> {
        vec![
            None,
            Some(ClassRec {
                name: "A".into(),
                hash: 1,
                counters,
                exits: Vec::new(),
            }),
        ]
    }

    #[cfg(feature = "rewriter")]
    #[test]
    fn dumps_add_deltas_and_jvms_add_up() {
        use bci_rewriter::coverage::data::{CovData, Session};
        let d = std::env::temp_dir().join(format!("bciagent-cov-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        let p = d.join("x.cov").display().to_string();
        let _ = std::fs::remove_file(&p);
        let classes = vec![
            None,
            Some(ClassRec {
                name: "A".into(),
                hash: 1,
                counters: 2,
                exits: Vec::new(),
            }),
            Some(ClassRec {
                name: "B".into(),
                hash: 2,
                counters: 1,
                exits: Vec::new(),
            }),
        ];
        let session = |id: &str| Session {
            id: id.into(),
            ..Default::default()
        };
        let mut f = CovFile::new(&p, session("one"));
        let counts = HashMap::from([(1, vec![3, 4])]);
        f.dump(&CovFile::run_data(&classes, &counts), 1).unwrap();
        let counts = HashMap::from([(1, vec![5, 4]), (2, vec![1])]);
        f.dump(&CovFile::run_data(&classes, &counts), 2).unwrap();
        let got = CovData::parse(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(got.counts("A", 1).unwrap(), &[5, 4]);
        assert_eq!(got.counts("B", 2).unwrap(), &[1]);
        assert_eq!(got.sessions.len(), 1);
        assert_eq!(got.sessions[0].dump_ms, 2);
        let mut g = CovFile::new(&p, session("two"));
        g.dump(&CovFile::run_data(&classes, &counts), 3).unwrap();
        let got = CovData::parse(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(got.counts("A", 1).unwrap(), &[10, 8]);
        assert_eq!(got.sessions.len(), 2);
        std::fs::write(&p, b"not coverage").unwrap();
        let at = g.dump(&CovFile::run_data(&classes, &counts), 4).unwrap();
        assert_eq!(at, format!("{p}.{}", std::process::id()));
        assert_eq!(std::fs::read(&p).unwrap(), b"not coverage");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A covfile that is not coverage data (replaced between two dumps, or never one): the
    /// JVM's data goes to `<covfile>.<pid>`, whole (what it had in covfile went with it), and
    /// every later dump replaces that file with the whole run so far. One run's data is then
    /// in one file: never split over two (which `bci merge` would refuse as one session
    /// given twice), and no dump's counts are lost.
    #[cfg(feature = "rewriter")]
    #[test]
    fn a_fallback_file_holds_the_whole_run() {
        use bci_rewriter::coverage::data::{CovData, Session};
        let d = std::env::temp_dir().join(format!("bciagent-cov-fb-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        let p = d.join("x.cov").display().to_string();
        let fallback = format!("{p}.{}", std::process::id());
        let _ = std::fs::remove_file(&p);
        let _ = std::fs::remove_file(&fallback);
        let classes = class_a(2);
        let run = |a: u64, b: u64| CovFile::run_data(&classes, &HashMap::from([(1, vec![a, b])]));
        let session = Session {
            id: "one".into(),
            ..Default::default()
        };
        let mut f = CovFile::new(&p, session);
        assert_eq!(f.dump(&run(3, 4), 1).unwrap(), p);
        std::fs::write(&p, b"not coverage").unwrap();
        let read = |path: &str| CovData::parse(&std::fs::read(path).unwrap()).unwrap();
        for (k, (a, b)) in [(5, 4), (9, 6)].into_iter().enumerate() {
            assert_eq!(f.dump(&run(a, b), 2 + k as i64).unwrap(), fallback);
            let got = read(&fallback);
            assert_eq!(got.counts("A", 1).unwrap(), &[a, b], "dump {k}");
            assert_eq!(got.sessions.len(), 1);
            assert_eq!(got.sessions[0].dump_ms, 2 + k as i64);
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"not coverage");
        // covfile usable again: the run stays in its one file
        std::fs::remove_file(&p).unwrap();
        assert_eq!(f.dump(&run(10, 6), 4).unwrap(), fallback);
        assert_eq!(read(&fallback).counts("A", 1).unwrap(), &[10, 6]);
        assert!(!std::path::Path::new(&p).exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A covfile replaced mid-run by a FIFO or a device (the start-up check refuses them, the
    /// path may change after): the dump neither blocks opening the FIFO (the JVM hung at exit,
    /// deaf to SIGTERM) nor renames a file over the device (a private copy of /dev/null was
    /// replaced by a regular file); the run goes to `<covfile>.<pid>`, as for a file that is
    /// not coverage data (found by the output-files hunt).
    #[cfg(feature = "rewriter")]
    #[test]
    fn a_covfile_become_a_fifo_or_device_is_neither_read_nor_replaced() {
        use bci_rewriter::coverage::data::Session;
        use std::os::unix::fs::FileTypeExt;
        let d = scratch("special");
        let classes = class_a(1);
        let run = CovFile::run_data(&classes, &HashMap::from([(1, vec![3])]));
        let mknod = |kind: &str, p: &str, args: &[&str]| {
            let made = std::process::Command::new(kind)
                .arg(p)
                .args(args)
                .status()
                .is_ok_and(|s| s.success());
            if !made {
                eprintln!("{kind} {p} not permitted here: that case is skipped");
            }
            made
        };
        for (kind, args) in [("mkfifo", &[][..]), ("mknod", &["c", "1", "3"][..])] {
            let p = d.join(format!("{kind}.cov")).display().to_string();
            if !mknod(kind, &p, args) {
                continue;
            }
            let mut f = CovFile::new(&p, Session::default());
            // on a thread: before, the FIFO's open blocked for good
            let (tx, rx) = std::sync::mpsc::channel();
            let run = run.clone();
            std::thread::spawn(move || {
                let _ = tx.send(f.dump(&run, 1));
            });
            let at = rx
                .recv_timeout(std::time::Duration::from_secs(10))
                .expect("the dump blocked on the FIFO");
            assert_eq!(at.unwrap(), format!("{p}.{}", std::process::id()), "{kind}");
            let t = std::fs::symlink_metadata(&p).unwrap().file_type();
            assert!(t.is_fifo() || t.is_char_device(), "{kind}: replaced: {t:?}");
            let got = bci_rewriter::coverage::data::CovData::parse(
                &std::fs::read(format!("{p}.{}", std::process::id())).unwrap(),
            )
            .unwrap();
            assert_eq!(got.counts("A", 1).unwrap(), &[3]);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Replacing a covfile keeps its permission bits (a group-shared 0664 file came back 0644
    /// with umask 022) and, run as root, its owner and group (found by the output-files
    /// hunt).
    #[cfg(feature = "rewriter")]
    #[test]
    fn a_replaced_covfile_keeps_its_mode_and_owner() {
        use bci_rewriter::coverage::data::Session;
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let d = scratch("mode");
        let p = d.join("x.cov").display().to_string();
        std::fs::write(&p, b"").unwrap();
        // a mode no umask gives a new file
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o604)).unwrap();
        let root = crate::sys::effective_uid() == 0;
        if root {
            std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        }
        let classes = class_a(1);
        let mut f = CovFile::new(&p, Session::default());
        let run = CovFile::run_data(&classes, &HashMap::from([(1, vec![3])]));
        assert_eq!(f.dump(&run, 1).unwrap(), p);
        let m = std::fs::metadata(&p).unwrap();
        assert!(m.len() > 0);
        assert_eq!(m.mode() & 0o7777, 0o604);
        if root {
            assert_eq!((m.uid(), m.gid()), (65534, 65534));
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
