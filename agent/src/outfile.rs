//! The report file (`file=`): opened and locked when the agent loads, so that a path that
//! cannot be written stops the JVM at start, and two JVMs given the same path never write
//! into one file.
//!
//! Rules (agent/README.md): `%p` in the path becomes the process id, `%t` the start time
//! (UTC, `YYYY-MM-DD_HH-MM-SS`), `%%` a `%`. The file is created (not yet emptied) at start and
//! locked (advisory `flock`) for the life of the JVM; if this JVM created it and never wrote a
//! dump to it (doe=n without SIGQUIT), it is removed at VM death. If another running JVM holds the lock,
//! this JVM writes to `<path>.<pid>` instead and says so. A file left by an earlier run is
//! replaced at the first dump, with a warning at start. A dump to a file (not a device or
//! pipe) is written to `<path>.tmp<pid>` and renamed over it: a failed write leaves the
//! previous file whole. `format=hprof|methods`: later dumps (SIGQUIT) are appended (to a
//! copy); `format=collapsed`: each SIGQUIT dump is a file of its own,
//! `<path>.1`, `<path>.2`, …, and the dump at exit is `<path>`: one snapshot per file.

use crate::options::Format;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Seek, SeekFrom, Write};

/// Expands `%p`, `%t` and `%%` in a `file=` value. Any other `%` sequence is an error.
pub fn expand(pattern: &str, pid: u32, unix_secs: u64) -> Result<String, String> {
    expand_option("file", pattern, pid, unix_secs)
}

/// [`expand`] for the value of option `option` (`file`, `covfile`, `tracefile`), which an
/// error names.
pub fn expand_option(
    option: &str,
    pattern: &str,
    pid: u32,
    unix_secs: u64,
) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('p') => out.push_str(&pid.to_string()),
            Some('t') => out.push_str(&utc_stamp(unix_secs)),
            Some('%') => out.push('%'),
            other => {
                return Err(format!(
                "bad value for option {option}: '{pattern}': unknown '%{}' (valid: %p = process id, \
                     %t = start time, %% = %)",
                other.map(String::from).unwrap_or_default()
            ))
            }
        }
    }
    Ok(out)
}

/// An output path (`file=`, `covfile=`, after `%p`/`%t` expansion) with its symbolic links
/// followed to the final target (a link to nothing: where its target would be; up to 40
/// links, as the kernel follows them; a relative target taken from its link's directory), so
/// that the files made beside it (`<covfile>.lck`, the temporary file renamed over the data)
/// are the target's and the link stays a link. A chain that reaches one of the kernel's links
/// to an open file (`/dev/stderr`, `/proc/self/fd/N`) leaves the path as given.
pub fn follow_links(path: &str) -> String {
    let p = follow(std::path::Path::new(path));
    if is_fd_link(&p) {
        return path.to_string();
    }
    match p.into_os_string().into_string() {
        Ok(s) => s,
        Err(_) => path.to_string(),
    }
}

/// Whether `p` is one of the kernel's links to an open file (`/proc/<pid>/fd/N`,
/// `/proc/self/fd/N`, `/dev/fd/N`): what it names is the open file itself (a pipe, a
/// terminal, the file stdout was redirected to), not a path to replace.
pub fn is_fd_link(p: &std::path::Path) -> bool {
    p.parent()
        .and_then(std::path::Path::file_name)
        .is_some_and(|d| d == "fd")
        && (p.starts_with("/proc") || p.starts_with("/dev/fd"))
}

/// The path a write to `path` reaches: its symbolic links followed to the final target (a
/// link to nothing: where its target would be; up to 40 links in a row, as the kernel follows
/// them), each relative target taken from its link's directory; a chain stops at a link
/// through `/dev/fd/N` or `/proc/…/fd/N` ([`is_fd_link`]), which it returns.
pub fn follow(path: &std::path::Path) -> std::path::PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        if is_fd_link(&p) {
            break;
        }
        let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        let Some(target) = is_link.then(|| std::fs::read_link(&p).ok()).flatten() else {
            break;
        };
        p = match p.parent() {
            Some(d) if target.is_relative() => d.join(target),
            _ => target,
        };
    }
    p
}

/// (year, month, day) of a day counted from 1970-01-01, proleptic Gregorian (H. Hinnant,
/// "chrono-Compatible Low-Level Date Algorithms", civil_from_days).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DD_HH-MM-SS` in UTC.
fn utc_stamp(secs: u64) -> String {
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!(
        "{y:04}-{m:02}-{d:02}_{:02}-{:02}-{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The open, locked report file.
pub struct OutFile {
    pub path: String,
    file: File,
    /// Dumps written so far.
    dumps: usize,
    /// format=collapsed: SIGQUIT snapshots written so far (`<path>.N`; the exit dump, written
    /// to the path itself, takes no number).
    snapshots: usize,
    /// This JVM created the file when it opened it (it was not there before).
    created: bool,
    /// A dump was written to the file itself (not only collapsed snapshots beside it).
    wrote: bool,
}

/// Opens `path` for writing, creating it if absent; whether it was created here. `option`
/// and `what` name it in an error (`file`, `the profile`).
fn open_unlocked(path: &str, option: &str, what: &str) -> Result<(File, bool), String> {
    let err = |e| format!("cannot open {option}={path} for {what}: {e}");
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => Ok((f, true)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => OpenOptions::new()
            .write(true)
            .open(path)
            .map(|f| (f, false))
            .map_err(err),
        Err(e) => Err(err(e)),
    }
}

/// When a dump writes the report file itself, replacing what an earlier run left there (the
/// start-up warning says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replaces {
    /// At VM death (doe=y).
    AtExit,
    /// Only if a dump is asked for with SIGQUIT (doe=n; hprof and methods formats).
    OnDump,
    /// Never (doe=n with format=collapsed: its SIGQUIT dumps are files of their own).
    Never,
}

impl Replaces {
    pub fn of(doe: bool, format: Format) -> Replaces {
        match (doe, format) {
            (true, _) => Replaces::AtExit,
            (false, Format::Collapsed) => Replaces::Never,
            (false, _) => Replaces::OnDump,
        }
    }
}

impl OutFile {
    /// Opens (creates) and locks the file for `path`, already expanded, for reports written
    /// at exit. Returns the file and the warnings to log (another JVM holds the path; an
    /// existing file will be replaced).
    pub fn open(path: &str, pid: u32) -> Result<(OutFile, Vec<String>), String> {
        OutFile::open_with(path, pid, Replaces::AtExit)
    }

    /// [`open`](Self::open), for reports written `when`: the warning about an existing file
    /// says when it is replaced.
    pub fn open_with(
        path: &str,
        pid: u32,
        when: Replaces,
    ) -> Result<(OutFile, Vec<String>), String> {
        OutFile::open_for("file", "profile", path, pid, when)
    }

    /// [`open_with`](Self::open_with) for the file of option `option` (`file`, `tracefile`),
    /// which holds this JVM's `what` (`profile`, `trace events`): errors and warnings name
    /// both. The trace file is opened and locked here the same way, so that two JVMs given
    /// one `tracefile=` never write into one file (the second writes `<path>.<pid>`).
    pub fn open_for(
        option: &str,
        what: &str,
        path: &str,
        pid: u32,
        when: Replaces,
    ) -> Result<(OutFile, Vec<String>), String> {
        let mut warnings = Vec::new();
        let mut path = path.to_string();
        let (mut file, mut created) = open_unlocked(&path, option, &format!("the {what}"))?;
        // a device or pipe (/dev/null, /dev/stderr) is not locked: JVMs share it as they
        // share a terminal, and `<device>.<pid>` could not be made
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        match if regular { file.try_lock() } else { Ok(()) } {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let alt = format!("{path}.{pid}");
                warnings.push(format!(
                    "{option}={path} is in use by another running JVM; this JVM writes its \
                     {what} to {alt} (use %p in {option}= for one file per JVM)"
                ));
                // (path stays, even if this JVM created it: the JVM holding it writes it)
                (file, created) = open_unlocked(&alt, option, &format!("the {what}"))?;
                if let Err(TryLockError::WouldBlock) = file.try_lock() {
                    return Err(format!("cannot lock {option}={alt}: in use by another JVM"));
                }
                path = alt;
            }
            Err(TryLockError::Error(e)) => warnings.push(format!(
                "cannot lock {option}={path} ({e}); another JVM given the same file could \
                 replace this one's {what}"
            )),
        }
        // the report is renamed over a file from <path>.tmp<pid> (OutFile::replace): that name
        // must be possible too (a 250-byte name is, <name>.tmp<pid> is not), known now rather
        // than with the report lost at exit
        if option == "file" && file.metadata().is_ok_and(|m| m.is_file()) {
            let tmp = crate::coverage::temp_name(&path, std::process::id());
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)
                .and_then(|_| std::fs::remove_file(&tmp))
                .map_err(|e| {
                    if created {
                        let _ = std::fs::remove_file(&path);
                    }
                    format!(
                        "cannot open {option}={path} for the {what}: cannot write {tmp} (the \
                         temporary file a dump renames over it): {e}"
                    )
                })?;
        }
        if file.metadata().map(|m| m.len() > 0).unwrap_or(false) {
            match when {
                Replaces::AtExit => warnings.push(format!(
                    "file={path} exists and will be replaced by this run's {what} (use %p or \
                     %t in file= to keep each run's)"
                )),
                Replaces::OnDump => warnings.push(format!(
                    "file={path} exists and will be replaced if a dump is requested (SIGQUIT; \
                     doe=n: nothing is written at exit, and without a dump it is left as it \
                     was; use %p or %t in file= to keep each run's)"
                )),
                // its dumps go to <path>.N: the file is left as it was
                Replaces::Never => {}
            }
        }
        Ok((
            OutFile {
                path,
                file,
                dumps: 0,
                snapshots: 0,
                created,
                wrote: false,
            },
            warnings,
        ))
    }

    /// At VM death, after the exit dump if any: a file this JVM created at start (to check it
    /// could be written, and to lock it) and never wrote a dump to (doe=n without SIGQUIT, or
    /// with only format=collapsed's SIGQUIT snapshots, `<path>.N`; a runtime that never
    /// started) is removed, so that no empty report is left behind. A file
    /// that was there before is left as it was. Returns the path removed.
    pub fn remove_if_unwritten(&mut self) -> Option<String> {
        let empty = self
            .file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() == 0);
        if self.wrote || !self.created || !empty {
            return None;
        }
        std::fs::remove_file(&self.path).ok()?;
        // (the lock goes with the file; a later dump would find nothing to write to)
        self.created = false;
        Some(self.path.clone())
    }

    /// The files `<path>.1`, `<path>.2`, … there are, consecutively from 1 (the first missing
    /// ends them): format=collapsed's SIGQUIT snapshots, which an earlier run may have left.
    pub fn old_snapshots(&self) -> Vec<String> {
        (1..)
            .map(|n| format!("{}.{n}", self.path))
            .take_while(|p| std::fs::symlink_metadata(p).is_ok())
            .collect()
    }

    /// With format=collapsed, at start: the warning that an earlier run's snapshots
    /// `<path>.N` are there and go at this run's first snapshot (its `<path>.1` replaces the
    /// first, the others are removed), if they are.
    pub fn old_snapshots_warning(&self) -> Option<String> {
        let old = self.old_snapshots();
        let names = match &old[..] {
            [] => return None,
            [one] => one.clone(),
            [first, .., last] => format!("{first} … {last}"),
        };
        Some(format!(
            "{names} (SIGQUIT snapshots of an earlier run) will be removed at this run's first \
             snapshot, which is written to {}.1 (use %p or %t in file= to keep each run's)",
            self.path
        ))
    }

    /// Writes one dump. `at_exit`: the dump at VM death. Returns the path written.
    pub fn write(&mut self, text: &str, format: Format, at_exit: bool) -> Result<String, String> {
        self.write_with(format, at_exit, |w| w.write_all(text.as_bytes()))
    }

    /// Writes one dump as `write` does, its text written by `f` as it is made (through a
    /// buffer: a large report is never all in memory). Returns the path written.
    pub fn write_with(
        &mut self,
        format: Format,
        at_exit: bool,
        f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<String, String> {
        let err = |p: &str, e: std::io::Error| format!("cannot write {p}: {e}");
        if format == Format::Collapsed && !at_exit {
            // one snapshot per file: flame-graph tools add up every line of a file
            let p = format!("{}.{}", self.path, self.snapshots + 1);
            // written whole to a temporary file renamed over it, as the other outputs are: a
            // failed write (a full disk) leaves no snapshot cut mid-line (nor an empty one)
            let tmp = crate::coverage::temp_name(&p, std::process::id());
            let written = File::create(&tmp).and_then(|t| {
                let mut w = std::io::BufWriter::new(t);
                f(&mut w)?;
                w.flush()?;
                w.get_ref().sync_data()?;
                std::fs::rename(&tmp, &p)
            });
            if self.snapshots == 0 {
                // an earlier run's snapshots <path>.1, <path>.2, … would be taken for this
                // run's (warned at start): they go at this run's first snapshot, written (its
                // <path>.1 was just replaced) or not
                let replaced = usize::from(written.is_ok());
                for q in self.old_snapshots().iter().skip(replaced) {
                    let _ = std::fs::remove_file(q);
                }
            }
            if let Err(e) = written {
                let _ = std::fs::remove_file(&tmp);
                return Err(format!("{}; this snapshot is not written", err(&p, e)));
            }
            self.dumps += 1;
            self.snapshots += 1;
            return Ok(p);
        }
        let first = self.dumps == 0 || format == Format::Collapsed;
        // a device or pipe (file=/dev/stderr) cannot be truncated, positioned or replaced:
        // just written
        let regular = self.file.metadata().map(|m| m.is_file()).unwrap_or(false);
        if !regular {
            let mut w = std::io::BufWriter::new(&mut self.file);
            f(&mut w)
                .and_then(|_| w.flush())
                .map_err(|e| err(&self.path, e))?;
        } else {
            // a file: written whole to a temporary file beside it, renamed over it, so that a
            // failed write (a full disk) leaves the previous report whole, and a file deleted
            // (or replaced) mid-run is made again (or named in the error)
            let tmp = crate::coverage::temp_name(&self.path, std::process::id());
            match self.replace(&tmp, first, f) {
                Ok(t) => self.file = t,
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(format!(
                        "{}; {} is left as it was before this dump",
                        err(&self.path, e),
                        self.path
                    ));
                }
            }
        }
        self.dumps += 1;
        self.wrote = true;
        Ok(self.path.clone())
    }
}

impl OutFile {
    /// Writes `tmp` (the report so far unless `first`, then the dump by `f`), locked, with the
    /// file's permission bits, and renames it over the path; the new file, open for reading
    /// and writing (a later dump appends to a copy of it).
    fn replace(
        &mut self,
        tmp: &str,
        first: bool,
        f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<File> {
        let mut t = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(tmp)?;
        if let Ok(m) = self.file.metadata() {
            let _ = t.set_permissions(m.permissions());
        }
        // (a file of this JVM's own name: the lock is free; taken before the rename, so that
        // the path is never unlocked while this JVM holds it)
        let _ = t.try_lock();
        if !first {
            self.file.seek(SeekFrom::Start(0))?;
            std::io::copy(&mut self.file, &mut t)?;
        }
        let mut w = std::io::BufWriter::new(&mut t);
        f(&mut w)?;
        w.flush()?;
        drop(w);
        t.sync_data()?;
        std::fs::rename(tmp, &self.path)?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_pid_time_percent() {
        assert_eq!(expand("a-%p.txt", 42, 0).unwrap(), "a-42.txt");
        assert_eq!(
            expand("%t", 0, 1_700_000_000).unwrap(),
            "2023-11-14_22-13-20"
        );
        assert_eq!(expand("x%%p", 7, 0).unwrap(), "x%p");
        assert_eq!(expand("plain", 7, 0).unwrap(), "plain");
        let e = expand("a%q", 1, 0).unwrap_err();
        assert!(e.contains("'a%q'") && e.contains("%p"), "{e}");
        assert!(expand("a%", 1, 0).is_err());
        let e = expand_option("covfile", "c%x", 1, 0).unwrap_err();
        assert!(e.starts_with("bad value for option covfile: 'c%x'"), "{e}");
    }

    #[test]
    fn second_opener_gets_its_own_file() {
        let d = std::env::temp_dir().join(format!("bciagent-outfile-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        let p = d.join("x.txt").display().to_string();
        let _ = std::fs::remove_file(&p);
        let (mut a, w) = OutFile::open(&p, 1).unwrap();
        assert!(w.is_empty(), "{w:?}");
        // flock locks belong to the open file description: a second open conflicts
        let (mut b, w) = OutFile::open(&p, 2).unwrap();
        assert_eq!(b.path, format!("{p}.2"));
        assert!(w[0].contains("another running JVM"), "{w:?}");
        a.write("A1\n", Format::Hprof, false).unwrap();
        a.write("A2\n", Format::Hprof, true).unwrap();
        b.write("B\n", Format::Hprof, true).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "A1\nA2\n");
        assert_eq!(std::fs::read_to_string(format!("{p}.2")).unwrap(), "B\n");
        drop(a);
        let (c, w) = OutFile::open(&p, 3).unwrap();
        assert!(w.iter().any(|w| w.contains("replaced")), "{w:?}");
        // doe=n: replaced only by a SIGQUIT dump, or never (collapsed: <path>.N files)
        drop(c);
        let (d_, w) = OutFile::open_with(&p, 4, Replaces::OnDump).unwrap();
        assert!(
            w.iter()
                .any(|w| w.contains("replaced if a dump is requested")),
            "{w:?}"
        );
        drop(d_);
        let (d_, w) = OutFile::open_with(&p, 5, Replaces::Never).unwrap();
        assert!(w.is_empty(), "{w:?}");
        drop(d_);
        let (mut c, _) = OutFile::open(&p, 3).unwrap();
        c.write("C1\n", Format::Collapsed, false).unwrap();
        c.write("C2\n", Format::Collapsed, true).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "C2\n");
        assert_eq!(std::fs::read_to_string(format!("{p}.1")).unwrap(), "C1\n");
        // the exit dump takes no snapshot number: the next snapshot is <path>.2 (was .3)
        c.write("C3\n", Format::Collapsed, false).unwrap();
        assert_eq!(std::fs::read_to_string(format!("{p}.2")).unwrap(), "C3\n");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn second_trace_file_opener_gets_its_own_file() {
        let d = std::env::temp_dir().join(format!("bciagent-tracefile-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        let p = d.join("t.jsonl").display().to_string();
        let _ = std::fs::remove_file(&p);
        let (a, w) =
            OutFile::open_for("tracefile", "trace events", &p, 1, Replaces::Never).unwrap();
        assert!(w.is_empty(), "{w:?}");
        let (b, w) =
            OutFile::open_for("tracefile", "trace events", &p, 2, Replaces::Never).unwrap();
        assert_eq!(
            (a.path.as_str(), b.path.clone()),
            (p.as_str(), format!("{p}.2"))
        );
        assert_eq!(
            w,
            [format!(
                "tracefile={p} is in use by another running JVM; this JVM writes its trace \
                 events to {p}.2 (use %p in tracefile= for one file per JVM)"
            )]
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn unwritten_file_made_at_start_is_removed() {
        let d = std::env::temp_dir().join(format!("bciagent-unwritten-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        let p = d.join("x.txt").display().to_string();
        let _ = std::fs::remove_file(&p);
        // made here, never written: removed
        let (mut f, _) = OutFile::open(&p, 1).unwrap();
        assert_eq!(f.remove_if_unwritten(), Some(p.clone()));
        assert!(!std::path::Path::new(&p).exists());
        // only collapsed snapshots beside it: the file itself is still empty, removed
        let (mut f, _) = OutFile::open(&p, 1).unwrap();
        f.write("s\n", Format::Collapsed, false).unwrap();
        assert_eq!(f.remove_if_unwritten(), Some(p.clone()));
        assert!(std::path::Path::new(&format!("{p}.1")).exists());
        // written: kept
        let (mut f, _) = OutFile::open(&p, 1).unwrap();
        f.write("A\n", Format::Hprof, true).unwrap();
        assert_eq!(f.remove_if_unwritten(), None);
        drop(f);
        // there before (even empty): left as it was
        std::fs::write(&p, "").unwrap();
        let (mut f, _) = OutFile::open(&p, 1).unwrap();
        assert_eq!(f.remove_if_unwritten(), None);
        assert!(std::path::Path::new(&p).exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A dump that fails (a full disk: the write error comes here from the closure) leaves the
    /// previous report whole, and the error says so; a report deleted or replaced by a
    /// directory mid-run is made again, or named in the error. Before, the file was emptied
    /// and left cut mid-line (8192 bytes, no METHODS END), and a deleted file was written into
    /// its unlinked inode without a word (found by the output-files hunt).
    #[test]
    fn a_failed_dump_leaves_the_previous_report_whole() {
        let d = std::env::temp_dir().join(format!("bciagent-outfail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("p.txt").display().to_string();
        std::fs::write(&p, "previous run\n").unwrap();
        let full = |w: &mut dyn Write| {
            w.write_all(b"cut mid-li")?;
            Err(std::io::Error::other("No space left on device"))
        };
        let (mut f, _) = OutFile::open(&p, 1).unwrap();
        let e = f.write_with(Format::Hprof, true, full).unwrap_err();
        assert_eq!(
            e,
            format!(
                "cannot write {p}: No space left on device; {p} is left as it was before this \
                 dump"
            )
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "previous run\n");
        // a SIGQUIT dump, then a failed one: the first kept
        f.write("A1\n", Format::Hprof, false).unwrap();
        assert!(f.write_with(Format::Hprof, true, full).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "A1\n");
        // deleted mid-run: made again, with what was written before
        std::fs::remove_file(&p).unwrap();
        f.write("A2\n", Format::Hprof, true).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "A1\nA2\n");
        // replaced by a directory: named
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        let e = f.write("A3\n", Format::Hprof, true).unwrap_err();
        assert!(e.starts_with(&format!("cannot write {p}: ")), "{e}");
        assert!(
            std::fs::read_dir(&d).unwrap().count() == 1,
            "temporary file left"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn devices_are_written_without_truncation() {
        let (mut f, _) = OutFile::open("/dev/null", 1).unwrap();
        // not locked: a second JVM given the device writes it too (no /dev/null.<pid>)
        let (g, w) = OutFile::open("/dev/null", 2).unwrap();
        assert_eq!((g.path.as_str(), w.len()), ("/dev/null", 0), "{w:?}");
        f.write("x\n", Format::Hprof, false).unwrap();
        f.write("y\n", Format::Hprof, true).unwrap();
    }

    /// A name whose temporary file (`<name>.tmp<pid>`, renamed over it at a dump) cannot be
    /// made is refused at start, and the file made to check it removed: else the report would
    /// be lost at exit ("File name too long" for a 250-byte name).
    #[test]
    fn a_name_whose_temporary_file_cannot_be_made_is_refused_at_start() {
        let d = std::env::temp_dir().join(format!("bciagent-outlong-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("x".repeat(250)).display().to_string();
        let e = OutFile::open(&p, 1).err().unwrap();
        assert!(
            e.starts_with(&format!(
                "cannot open file={p} for the profile: cannot write {p}.tmp"
            )) && e.contains("File name too long"),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn unwritable_path_names_path_and_os_error() {
        let e = OutFile::open("/nonexistent-bci-dir/x.txt", 1)
            .err()
            .unwrap();
        assert!(
            e.contains("/nonexistent-bci-dir/x.txt") && e.contains("No such file"),
            "{e}"
        );
    }
}
