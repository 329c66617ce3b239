//! Walk a directory or jar of classes and write a transformed copy (directory or jar).
//!
//! Jar to jar, the output keeps every entry of the input in its order, directory entries
//! included, with its timestamp, compression method and (unless the jar is signed) bytes:
//! untouched entries are copied still compressed. Only instrumented classes are recompressed.
//! A signed jar whose classes change loses its signature (`META-INF/*.SF|RSA|DSA|EC`,
//! `SIG-*`, and the manifest's per-entry digests), since the JVM would refuse it otherwise.

use crate::progress::Progress;
pub use bci_verify::hierarchy::zip_open_error;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Whether a path names a jar by its extension, in any case: `.jar`, `.war`, `.ear`, `.zip`.
pub fn is_archive(p: &Path) -> bool {
    p.extension().is_some_and(|e| {
        ["jar", "war", "ear", "zip"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

fn named(p: &Path) -> impl Fn(&dyn std::fmt::Display) -> String + '_ {
    move |e| format!("{}: {e}", p.display())
}

pub use bciagent::outfile::{follow as follow_links, is_fd_link};

/// An output written but not yet in place ([`stage`]): committed, or dropped (its temporary
/// file removed).
pub struct StagedFile {
    /// The path given, for messages.
    given: PathBuf,
    /// The file replaced ([`follow_links`]).
    target: PathBuf,
    /// A temporary file beside `target`, renamed over it; None for an output written as it is
    /// (not a regular file: its bytes are kept until commit).
    tmp: Option<PathBuf>,
    direct: Vec<u8>,
    /// The process's stdout, duplicated, when the output is the same file ([`same_as_stdout`]):
    /// written through it, at stdout's offset, not reopened at offset 0.
    stdout: Option<std::fs::File>,
    /// Written as it is already ([`stage_writer`]): commit has nothing to do.
    written: bool,
}

impl StagedFile {
    /// The output named for a message: the path given, and the file it leads to if another.
    fn name(&self) -> String {
        name_of(&self.given, &self.target)
    }

    /// Whether the output is a new file put in place at commit (not one written as it is).
    pub fn replaces(&self) -> bool {
        self.tmp.is_some()
    }

    /// Puts the file in place (renames the temporary file over the target), or, for an
    /// output that is not a regular file, writes it.
    pub fn commit(mut self) -> Result<(), String> {
        if self.written {
            return Ok(());
        }
        match self.tmp.take() {
            Some(tmp) => std::fs::rename(&tmp, &self.target).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("{}: {e}", self.name())
            }),
            None => {
                let mut f = match self.stdout.take() {
                    Some(f) => f,
                    None => std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(true)
                        .open(&self.given)
                        .map_err(|e| format!("{}: {e}", self.name()))?,
                };
                f.write_all(&self.direct)
                    .and_then(|()| f.flush())
                    .map_err(|e| format!("{}: {e}", self.name()))
            }
        }
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

fn name_of(given: &Path, target: &Path) -> String {
    if given == target {
        given.display().to_string()
    } else {
        format!("{} (a link to {})", given.display(), target.display())
    }
}

/// How every output file of bci is written (reports, `-o`, `bci merge -o`, `--map`): an
/// output that is a symbolic link is followed ([`follow_links`]) and its final target is
/// replaced, through a temporary file in the target's directory renamed over it (the missing
/// directories on the way to it created first), so that a write that fails partway (a full
/// disk, a file-size limit) leaves the target as it was, never truncated: the output may even
/// be one of the inputs (`bci merge a.cov b.cov -o a.cov`); a file replaced keeps its
/// permissions. An existing output that is not a regular file (a fifo, a terminal or other
/// device, `/dev/stdout`, a shell's `>(…)` pipe `/dev/fd/N`, a socket) is opened and written
/// as it is, at [`StagedFile::commit`]. This writes the temporary file; `commit` puts it in
/// place.
pub fn stage(path: &Path, bytes: Vec<u8>) -> Result<StagedFile, String> {
    let target = follow_links(path);
    let mut s = StagedFile {
        given: path.to_path_buf(),
        target,
        tmp: None,
        direct: Vec::new(),
        stdout: None,
        written: false,
    };
    if let Some(f) = same_as_stdout(path) {
        s.direct = bytes;
        s.stdout = Some(f);
        return Ok(s);
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(format!("{}: is a directory", s.name())),
        Ok(m) if !m.is_file() || is_fd_link(&s.target) => {
            s.direct = bytes;
            return Ok(s);
        }
        _ => {}
    }
    if is_fd_link(&s.target) {
        // a descriptor that is not open: said by the open at commit
        s.direct = bytes;
        return Ok(s);
    }
    create_parent(&s.target).map_err(|e| format!("{}: {e}", s.name()))?;
    let tmp = temp_beside(&s.target);
    s.tmp = Some(tmp.clone());
    std::fs::write(&tmp, &bytes)
        .and_then(|()| match std::fs::metadata(&s.target) {
            // a file replaced keeps its permissions (the temporary one has the default mode)
            Ok(m) => std::fs::set_permissions(&tmp, m.permissions()),
            Err(_) => Ok(()),
        })
        .map_err(|e| format!("{}: {e}", s.name()))?;
    Ok(s)
}

/// The temporary file an output is written to before it is renamed over `target`: beside
/// it (the same file system), hidden, named by this process.
fn temp_beside(target: &Path) -> PathBuf {
    let fname = target
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    target.with_file_name(format!(".{fname}.{}.tmp", std::process::id()))
}

/// [`stage`] for an output written as a stream (a jar): the file to write (a new temporary
/// file beside the target, with the permissions of the file it will replace; or, for an
/// existing output that is not a regular file, the output itself, opened as it is) and what
/// puts it in place. Never written through an existing file: one that is a hard link to
/// another (the input, a copy elsewhere) is replaced, and the other keeps its bytes; a run
/// that fails leaves the target as it was (dropped, the temporary file goes).
pub fn stage_writer(path: &Path) -> Result<(StagedFile, std::fs::File), String> {
    let target = follow_links(path);
    let mut s = StagedFile {
        given: path.to_path_buf(),
        target,
        tmp: None,
        direct: Vec::new(),
        stdout: None,
        written: true,
    };
    if let Some(f) = same_as_stdout(path) {
        return Ok((s, f));
    }
    let as_it_is = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(format!("{}: is a directory", s.name())),
        Ok(m) => !m.is_file() || is_fd_link(&s.target),
        Err(_) => is_fd_link(&s.target),
    };
    if as_it_is {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", s.name()))?;
        return Ok((s, f));
    }
    create_parent(&s.target).map_err(|e| format!("{}: {e}", s.name()))?;
    let tmp = temp_beside(&s.target);
    // a file of that name left by a run that died (its pid reused) goes; created anew, so
    // that a link put there is not followed
    let _ = std::fs::remove_file(&tmp);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| format!("{}: {e}", s.name()))?;
    s.tmp = Some(tmp);
    s.written = false;
    if let Ok(m) = std::fs::metadata(&s.target) {
        // a file replaced keeps its permissions
        f.set_permissions(m.permissions())
            .map_err(|e| format!("{}: {e}", s.name()))?;
    }
    Ok((s, f))
}

/// Writes one output file as [`stage`] says, at once.
pub fn write_replacing(path: &Path, bytes: &[u8]) -> Result<(), String> {
    stage(path, bytes.to_vec())?.commit()
}

/// Checks, before anything is written, that output `path` of option `opt` can be made: not a
/// directory (unless `dir`, for `--html DIR`: then not a file), and the nearest existing
/// directory on the way to it (links followed) is a directory, not a file. The error names
/// the option and the path: `--lcov notadir/x.info: notadir is a file, not a directory`.
pub fn check_output(opt: &str, path: &Path, dir: bool) -> Result<(), String> {
    let given = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() && !dir => return Err(format!("{opt} {given}: is a directory")),
        Ok(m) if dir && !m.is_dir() => return Err(format!("{opt} {given}: not a directory")),
        Ok(_) => return Ok(()),
        Err(_) => {}
    }
    let target = follow_links(path);
    let mut up = target.parent();
    while let Some(d) = up.filter(|d| !d.as_os_str().is_empty()) {
        match std::fs::metadata(d) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) => {
                return Err(format!(
                    "{opt} {given}: {} is a file, not a directory",
                    d.display()
                ))
            }
            Err(_) => up = d.parent(),
        }
    }
    Ok(())
}

/// `n` and the noun for it: `1 class`, `2 classes`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Set once an output file is the process's stdout ([`same_as_stdout`]): what bci prints on
/// stdout (the console summary, `bci: wrote …`) goes to stderr for the rest of the run, so
/// that the output's stream holds the output alone.
static STDOUT_IS_OUTPUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The process's stdout, duplicated (sharing its file offset), when `path` leads to the same
/// file (`--lcov /dev/stdout > report.info`, a link to `/proc/self/fd/1`, or the very file
/// stdout is redirected to); it then marks stdout as an output ([`emit`] writes to stderr).
/// Reopening such a path would write at offset 0, under what stdout writes later.
pub fn same_as_stdout(path: &Path) -> Option<std::fs::File> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path).ok()?;
    let f = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().ok()?);
    let o = f.metadata().ok()?;
    // a terminal or /dev/null keeps no offset: written as it is, the console stays on stdout
    if (m.dev(), m.ino()) != (o.dev(), o.ino()) || o.file_type().is_char_device() {
        return None;
    }
    STDOUT_IS_OUTPUT.store(true, std::sync::atomic::Ordering::Relaxed);
    Some(f)
}

/// Marks stdout as an output ([`same_as_stdout`]) before anything is printed when one of the
/// output `paths` is the process's stdout.
pub fn note_stdout_outputs<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    for p in paths {
        let _ = same_as_stdout(p);
    }
}

/// Writes to stdout (the `out!`/`outln!` macros), or to stderr when an output file is stdout
/// ([`same_as_stdout`]). A reader that went away (`bci … | head`) ends the program quietly
/// with the status a shell gives a command killed by SIGPIPE (128 + 13) instead of a panic;
/// another write error ends it with status 2.
pub fn emit(args: std::fmt::Arguments<'_>) {
    if STDOUT_IS_OUTPUT.load(std::sync::atomic::Ordering::Relaxed) {
        let mut e = std::io::stderr().lock();
        let _ = e.write_fmt(args).and_then(|()| e.flush());
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("bci: stdout: {e}");
        std::process::exit(2);
    }
}

/// Creates the missing parent directories of an output file.
pub fn create_parent(p: &Path) -> Result<(), String> {
    match p.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => std::fs::create_dir_all(d).map_err(|e| {
            if d.is_file() {
                format!("{}: a file, not a directory", d.display())
            } else {
                named(d)(&e)
            }
        }),
        None => Ok(()),
    }
}

/// What [`transform`] did beyond replacing classes.
#[derive(Default, Debug)]
pub struct Report {
    /// Signature files left out because the jar was signed and classes changed.
    pub removed_signature: Vec<String>,
}

/// A signature-related file of a signed jar (JAR File Specification, "Signed JAR File"):
/// `META-INF/<name>.SF|.RSA|.DSA|.EC` and `META-INF/SIG-*`, directly in META-INF/.
pub fn is_signature_file(name: &str) -> bool {
    let Some(f) = name.strip_prefix("META-INF/") else {
        return false;
    };
    if f.is_empty() || f.contains('/') {
        return false;
    }
    let up = f.to_ascii_uppercase();
    up.starts_with("SIG-")
        || [".SF", ".RSA", ".DSA", ".EC"]
            .iter()
            .any(|x| up.ends_with(x) && up.len() > x.len())
}

/// The entries of the main section's `Class-Path` attribute of a manifest (continuation lines
/// joined; separated by whitespace), in order; none when it has none.
pub fn manifest_class_path(mf: &[u8]) -> Vec<String> {
    // the main section's logical lines: physical lines ([`manifest_lines`]) up to the first
    // empty one, a line starting with a space continuing the one before
    let mut logical: Vec<String> = Vec::new();
    for line in manifest_lines(mf) {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        match (line.strip_prefix(' '), logical.last_mut()) {
            (Some(more), Some(last)) => last.push_str(more),
            _ => logical.push(line.to_string()),
        }
    }
    logical
        .iter()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("Class-Path")
                .then(|| v.to_string())
        })
        // separated by spaces (the JVM's URLClassPath takes any whitespace)
        .map(|v| v.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// The `Class-Path` entries of a jar's manifest ([`manifest_class_path`]); none when it has no
/// manifest or cannot be read.
pub fn jar_class_path(jar: &Path) -> Vec<String> {
    let Ok(f) = std::fs::File::open(jar) else {
        return Vec::new();
    };
    let Ok(mut z) = zip::ZipArchive::new(f) else {
        return Vec::new();
    };
    let Ok(mut e) = z.by_name("META-INF/MANIFEST.MF") else {
        return Vec::new();
    };
    let mut b = Vec::new();
    if e.read_to_end(&mut b).is_err() {
        return Vec::new();
    }
    manifest_class_path(&b)
}

/// The manifest without per-entry digests (`*-Digest` attributes of the individual sections;
/// sections that had digests and are left with only their `Name` go). The main section and every other byte, line ends
/// and continuation lines included, stay as they were.
/// A manifest's physical lines with their terminators (\r\n, \n or \r).
fn manifest_lines(mf: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < mf.len() {
        let end = match mf[i] {
            b'\n' => i + 1,
            b'\r' if mf.get(i + 1) == Some(&b'\n') => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        lines.push(&mf[start..end]);
        start = end;
        i = end;
    }
    if start < mf.len() {
        lines.push(&mf[start..]);
    }
    lines
}

pub fn strip_manifest_digests(mf: &[u8]) -> Vec<u8> {
    let lines = manifest_lines(mf);
    let is_blank = |l: &[u8]| l.iter().all(|&b| b == b'\r' || b == b'\n');
    // Sections: runs of non-blank lines; attributes: a line and its continuation lines.
    let mut out = Vec::with_capacity(mf.len());
    let mut k = 0;
    let mut first = true;
    while k < lines.len() {
        if is_blank(lines[k]) {
            if first {
                out.extend_from_slice(lines[k]);
            }
            k += 1;
            continue;
        }
        let mut attrs: Vec<Vec<u8>> = Vec::new();
        while k < lines.len() && !is_blank(lines[k]) {
            if lines[k].first() == Some(&b' ') && !attrs.is_empty() {
                attrs.last_mut().unwrap().extend_from_slice(lines[k]);
            } else {
                attrs.push(lines[k].to_vec());
            }
            k += 1;
        }
        // The blank line closing the section (if any).
        let blank = if k < lines.len() {
            k += 1;
            lines[k - 1]
        } else {
            &[][..]
        };
        if first {
            first = false;
            attrs.iter().for_each(|a| out.extend_from_slice(a));
            out.extend_from_slice(blank);
            continue;
        }
        let kept: Vec<&Vec<u8>> = attrs
            .iter()
            .filter(|a| {
                let name = a.split(|&b| b == b':').next().unwrap_or(&[]);
                !name.to_ascii_lowercase().ends_with(b"-digest")
            })
            .collect();
        let only_name = kept
            .iter()
            .all(|a| a.to_ascii_lowercase().starts_with(b"name:"));
        if !only_name || kept.len() == attrs.len() {
            kept.iter().for_each(|a| out.extend_from_slice(a));
            out.extend_from_slice(blank);
        }
    }
    out
}

/// The regular files below directory `input` that `keep` accepts, as (relative name with `/`,
/// bytes), sorted by name. Symbolic links to files are read; anything else that is not a
/// regular file or a directory (a dangling link, a link to a directory, which could loop, a
/// fifo, a socket, a device) is skipped with one line on stderr instead of failing the run or
/// hanging on it.
pub(crate) fn read_dir_files(
    input: &Path,
    keep: impl Fn(&Path) -> bool,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![input.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| named(&d)(&e))? {
            let e = e.map_err(|e| named(&d)(&e))?;
            let p = e.path();
            let t = e.file_type().map_err(|x| named(&p)(&x))?;
            if t.is_dir() {
                stack.push(p);
                continue;
            }
            let file = if t.is_symlink() {
                std::fs::metadata(&p).is_ok_and(|m| m.is_file())
            } else {
                t.is_file()
            };
            if !file {
                eprintln!(
                    "bci: {}: skipped (not a regular file: {})",
                    p.display(),
                    if t.is_symlink() {
                        "a link to a directory or to nothing"
                    } else {
                        "a fifo, socket or device"
                    }
                );
                continue;
            }
            if !keep(&p) {
                continue;
            }
            // the components joined with `/` (a `\\` in a file's name stays: it is no
            // separator here, and [`unsafe_name`] refuses it for an output)
            let rel = p
                .strip_prefix(input)
                .map_err(|e| named(input)(&e))?
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, std::fs::read(&p).map_err(|e| named(&p)(&e))?));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Why an entry named `name` cannot be written below an output directory, or passed on in a
/// jar, as it is: a name that is empty, absolute, has a `..` component, a backslash (a Windows
/// separator), a drive prefix (`C:`) or a NUL could be written outside the directory it is
/// extracted to ("zip slip"). None for a safe relative name.
fn unsafe_name(name: &str) -> Option<&'static str> {
    let first = name.split('/').next().unwrap_or_default().as_bytes();
    if name.is_empty() {
        Some("an empty name")
    } else if name.contains('\0') {
        Some("a NUL in the name")
    } else if name.contains('\\') {
        Some("a backslash in the name")
    } else if name.starts_with('/') {
        Some("an absolute name")
    } else if first.len() >= 2 && first[0].is_ascii_alphabetic() && first[1] == b':' {
        Some("a drive prefix")
    } else if name.split('/').any(|c| c == "..") {
        Some("a `..` component")
    } else {
        None
    }
}

/// Refuses, before anything is written, an input with an entry (a file of a directory) whose
/// name [`unsafe_name`] refuses, naming the input and each such entry (the first 10).
fn check_names<'a>(input: &Path, names: impl Iterator<Item = &'a str>) -> Result<(), String> {
    let bad: Vec<String> = names
        .filter_map(|n| unsafe_name(n).map(|why| format!("{n:?} ({why})")))
        .collect();
    let (what, whats) = if input.is_dir() {
        ("file", "files")
    } else {
        ("entry", "entries")
    };
    match bad.len() {
        0 => Ok(()),
        1 => Err(format!(
            "{}: {what} {}: an unsafe name: it could be written outside the output; the input \
             is refused and nothing was written",
            input.display(),
            bad[0]
        )),
        n => Err(format!(
            "{}: {n} {whats} with unsafe names: they could be written outside the output; \
             the input is refused and nothing was written: {}{}",
            input.display(),
            bad[..n.min(10)].join(", "),
            if n > 10 {
                format!(" and {} more", n - 10)
            } else {
                String::new()
            }
        )),
    }
}

/// The names of a zip's central directory, in order, duplicates included (the zip crate keeps
/// one entry per name: the last); None when the directory cannot be found or read (the zip
/// reader then says what is wrong). A zip64 end record is followed only in its usual place.
fn central_names(path: &Path) -> Option<Vec<String>> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    // the end record: 22 bytes and a comment of up to 65535
    let tail_len = len.min(22 + 65_535);
    f.seek(SeekFrom::Start(len - tail_len)).ok()?;
    let mut tail = vec![0u8; tail_len as usize];
    f.read_exact(&mut tail).ok()?;
    let u16_at = |b: &[u8], i: usize| -> Option<u64> {
        Some(u64::from(u16::from_le_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    let u32_at = |b: &[u8], i: usize| -> Option<u64> {
        Some(u64::from(u32::from_le_bytes(
            b.get(i..i + 4)?.try_into().ok()?,
        )))
    };
    let u64_at = |b: &[u8], i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
    };
    let at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..].starts_with(b"PK\x05\x06"))?;
    let eocd = len - tail_len + at as u64;
    let (mut count, mut size) = (u16_at(&tail, at + 10)?, u32_at(&tail, at + 12)?);
    let mut end = eocd;
    if count == 0xffff || size == 0xffff_ffff {
        // zip64: a locator (20 bytes) before the end record, the zip64 end record (56) before it
        let rec = eocd.checked_sub(20 + 56)?;
        f.seek(SeekFrom::Start(rec)).ok()?;
        let mut r = [0u8; 56];
        f.read_exact(&mut r).ok()?;
        if !r.starts_with(b"PK\x06\x06") {
            return None;
        }
        (count, size, end) = (u64_at(&r, 32)?, u64_at(&r, 40)?, rec);
    }
    let start = end.checked_sub(size)?;
    if size > 1 << 30 {
        return None;
    }
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut cd = vec![0u8; size as usize];
    f.read_exact(&mut cd).ok()?;
    let mut names = Vec::new();
    let mut i = 0usize;
    while names.len() < count as usize {
        if !cd.get(i..)?.starts_with(b"PK\x01\x02") {
            return None;
        }
        let n = u16_at(&cd, i + 28)? as usize;
        let m = u16_at(&cd, i + 30)? as usize;
        let k = u16_at(&cd, i + 32)? as usize;
        names.push(String::from_utf8_lossy(cd.get(i + 46..i + 46 + n)?).into_owned());
        i += 46 + n + m + k;
    }
    Some(names)
}

/// Names on stderr each entry name a jar holds more than once: one of them is read (the last,
/// as the JVM's class loaders read it: java.util.zip.ZipFile finds the last central directory
/// entry of a name) and written; the others are left out.
fn note_duplicates(input: &Path) {
    let Some(names) = central_names(input) else {
        return;
    };
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    let mut order = Vec::new();
    for n in &names {
        let c = seen.entry(n).or_insert(0);
        *c += 1;
        if *c == 2 {
            order.push(n.as_str());
        }
    }
    for n in order {
        eprintln!(
            "bci: {}: {n}: {} entries of this name: the last is kept (the one the JVM reads), \
             the others are left out",
            input.display(),
            seen[n]
        );
    }
}

/// Every file of `input` (relative name, bytes); directories of a jar are left out. With
/// `check`, an input with an unsafe name ([`check_names`]) is an error.
pub fn read_all(input: &Path, check: bool) -> Result<Vec<(String, Vec<u8>)>, String> {
    let err = named(input);
    let mut out = Vec::new();
    if input.is_dir() {
        out = read_dir_files(input, |_| true)?;
        if check {
            check_names(input, out.iter().map(|(n, _)| n.as_str()))?;
        }
    } else if is_archive(input) {
        let f = std::fs::File::open(input).map_err(|e| err(&e))?;
        let mut z = zip::ZipArchive::new(f).map_err(|e| err(&zip_open_error(&e, input)))?;
        if check {
            // every name, directories' too
            check_names(input, (0..z.len()).filter_map(|i| z.name_for_index(i)))?;
            note_duplicates(input);
        }
        for i in 0..z.len() {
            let mut e = z.by_index(i).map_err(|e| err(&zip_err(&e)))?;
            if e.is_dir() {
                continue;
            }
            let mut b = Vec::with_capacity(e.size() as usize);
            e.read_to_end(&mut b)
                .map_err(|x| format!("{}: {}: {x}", input.display(), e.name()))?;
            out.push((e.name().to_string(), b));
        }
    } else if input.exists() {
        return Err(format!(
            "{}: not a directory or a .jar/.war/.ear/.zip",
            input.display()
        ));
    } else {
        return Err(format!("{}: no such file or directory", input.display()));
    }
    Ok(out)
}

/// The class files of one `--classpath` entry of `bci rules explain`: a directory or jar
/// ([`read_all`], every file), a JDK module file (`.jmod`: a 4-byte header `JM` 1 0, then a
/// zip whose classes are under `classes/`; named here as on a class path), or a JDK's
/// `lib/modules` image (extracted once with the JDK's own `jimage`, as `bci verify` does, into
/// its cache; each module's classes named as on a class path).
pub fn read_class_path_entry(input: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let err = named(input);
    if input.is_file() && input.extension().is_some_and(|e| e == "jmod") {
        let bytes = std::fs::read(input).map_err(|e| err(&e))?;
        if !bytes.starts_with(b"JM\x01\x00") {
            return Err(err(&"not a JDK module file (.jmod: no `JM` 1 0 header)"));
        }
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(&bytes[4..])).map_err(|e| err(&e))?;
        let mut out = Vec::new();
        for i in 0..z.len() {
            let mut e = z.by_index(i).map_err(|e| err(&e))?;
            let Some(name) = e.name().strip_prefix("classes/").map(str::to_string) else {
                continue;
            };
            if e.is_dir() {
                continue;
            }
            let mut b = Vec::with_capacity(e.size().min(1 << 24) as usize);
            e.read_to_end(&mut b)
                .map_err(|x| format!("{}: {}: {x}", input.display(), e.name()))?;
            out.push((name, b));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        return Ok(out);
    }
    if input.is_file() && is_jimage(input) {
        // <java.home>/lib/modules
        let home = input
            .parent()
            .and_then(Path::parent)
            .filter(|h| h.join("bin/jimage").is_file())
            .ok_or_else(|| {
                err(&"a JDK's module image, but not in a JDK (no bin/jimage two levels up to read it with)")
            })?;
        let tree = bci_verify::hierarchy::jdk_tree(home).map_err(|e| err(&e))?;
        let mut modules: Vec<PathBuf> = std::fs::read_dir(&tree)
            .map_err(|e| named(&tree)(&e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        modules.sort();
        let mut out = Vec::new();
        for m in modules {
            out.extend(read_dir_files(&m, |p| {
                p.extension().is_some_and(|x| x == "class")
            })?);
        }
        return Ok(out);
    }
    read_all(input, false).map_err(|e| {
        if e.ends_with("not a directory or a .jar/.war/.ear/.zip") {
            format!(
                "{}: not a directory, a .jar/.war/.ear/.zip, a .jmod or a JDK's lib/modules",
                input.display()
            )
        } else {
            e
        }
    })
}

/// Whether a file starts with the magic of a JDK's `lib/modules` image (0xCAFEDADA, little
/// endian on the x86/ARM JDKs).
fn is_jimage(p: &Path) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == [0xDA, 0xDA, 0xFE, 0xCA] || head == [0xCA, 0xFE, 0xDA, 0xDA])
}

/// The module of a JDK's `lib/modules` image that holds classes of package `package` (dotted),
/// read from the image's index alone (its header, location table and strings: a few MB at the
/// start of the file; no `jimage`, no extraction). None when no module has such a class or
/// the file is not an image this reader knows (little-endian, version 1.0).
pub fn jimage_module_of(modules: &Path, package: &str) -> Option<String> {
    let mut f = std::fs::File::open(modules).ok()?;
    let mut head = [0u8; 28];
    f.read_exact(&mut head).ok()?;
    let u32_at = |b: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
    };
    // magic, version (major << 16 | minor), flags, resources, table length, locations
    // size, strings size
    let h: Vec<u32> = (0..7).filter_map(|k| u32_at(&head, 4 * k)).collect();
    if h.len() != 7 || h[0] != 0xCAFE_DADA || h[1] >> 16 != 1 {
        return None;
    }
    let (table, locs, strs) = (h[4] as usize, h[5] as usize, h[6] as usize);
    let size = table.checked_mul(8)?.checked_add(locs)?.checked_add(strs)?;
    if size > 1 << 30 {
        return None;
    }
    let mut index = vec![0u8; size];
    f.read_exact(&mut index).ok()?;
    let offsets = &index[4 * table..8 * table];
    let locations = &index[8 * table..8 * table + locs];
    let strings = &index[8 * table + locs..];
    let string = |at: u64| -> Option<&[u8]> {
        let rest = strings.get(usize::try_from(at).ok()?..)?;
        Some(&rest[..rest.iter().position(|&b| b == 0)?])
    };
    let parent = package.replace('.', "/");
    for k in 0..table {
        // attributes: a byte (kind << 3 | length - 1), then the value's bytes, big-endian;
        // kind 0 ends them; 1 module, 2 parent, 3 base, 4 extension (offsets into strings)
        let mut attr = [0u64; 8];
        let mut at = u32_at(offsets, 4 * k)? as usize;
        while let Some(&b) = locations.get(at) {
            at += 1;
            if b <= 7 {
                break;
            }
            let n = usize::from(b & 7) + 1;
            let v = locations
                .get(at..at + n)?
                .iter()
                .fold(0u64, |v, &x| v << 8 | u64::from(x));
            at += n;
            if let Some(slot) = attr.get_mut(usize::from(b >> 3)) {
                *slot = v;
            }
        }
        if string(attr[4]) == Some(b"class") && string(attr[2]) == Some(parent.as_bytes()) {
            return string(attr[1]).map(|m| String::from_utf8_lossy(m).into_owned());
        }
    }
    None
}

/// The release N of an entry under `META-INF/versions/N/` of a multi-release jar (None for
/// any other entry, and for a `META-INF/` nested in a release directory).
pub fn release_of(entry: &str) -> Option<u32> {
    let rest = entry.strip_prefix("META-INF/versions/")?;
    let (n, path) = rest.split_once('/')?;
    if path.starts_with("META-INF/") {
        return None;
    }
    n.parse().ok()
}

/// Names on stderr a jar in the input (a fat jar's libraries, BOOT-INF/lib/*.jar,
/// WEB-INF/lib/*.jar; a jar in an input directory), which is copied as it is: so that its
/// classes are not thought instrumented.
fn note_nested(input: &Path, name: &str) {
    let is_jar = [".jar", ".war", ".ear"].iter().any(|x| {
        name.len() > x.len()
            && name.is_char_boundary(name.len() - x.len())
            && name[name.len() - x.len()..].eq_ignore_ascii_case(x)
    });
    if !is_jar {
        return;
    }
    let (path, what) = if input.is_dir() {
        (
            input.join(name).display().to_string(),
            "an archive in the input directory",
        )
    } else {
        (format!("{}: {name}", input.display()), "a nested archive")
    };
    eprintln!(
        "bci: {path}: {what}, copied as it is (its classes are not instrumented; instrument it \
         on its own)"
    );
}

/// Copies `input` to `output`, replacing each class file for which `f` returns new bytes.
pub fn transform(
    input: &Path,
    output: &Path,
    progress: &Progress,
    mut f: impl FnMut(&str, &[u8]) -> Option<Vec<u8>>,
) -> Result<Report, String> {
    if !is_archive(output) && std::fs::metadata(output).is_ok_and(|m| !m.is_dir()) {
        // an output that is not a .jar/.war/.ear/.zip is a directory to write into
        return Err(format!(
            "{}: not a directory or a .jar/.war/.ear/.zip: an output other than those is a \
             directory, and this is a file",
            output.display()
        ));
    }
    if is_archive(input) && is_archive(output) {
        return jar_to_jar(input, output, progress, f);
    }
    let files = read_all(input, true)?;
    for (name, _) in &files {
        note_nested(input, name);
    }
    progress.start(files.iter().filter(|(n, _)| n.ends_with(".class")).count());
    let mut new: Vec<Option<Vec<u8>>> = Vec::with_capacity(files.len());
    for (name, bytes) in &files {
        new.push(if name.ends_with(".class") {
            let r = f(name, bytes);
            progress.inc();
            r
        } else {
            None
        });
    }
    progress.finish();
    let mut report = Report::default();
    let signed = new.iter().any(Option::is_some) && files.iter().any(|(n, _)| is_signature_file(n));
    let err = named(output);
    let mut pending = Pending(Vec::new());
    let mut staged = None;
    let mut z = if is_archive(output) {
        let (s, file) = stage_writer(output)?;
        staged = Some(s);
        Some(zip::ZipWriter::new(Quiet::new(file)))
    } else {
        // made even when there is nothing to write into it (an empty input)
        std::fs::create_dir_all(output).map_err(|e| err(&e))?;
        None
    };
    // A directory made a jar as `jar` makes it: META-INF/ and META-INF/MANIFEST.MF first
    // (JarInputStream reads the manifest only there), then the files in name order, each
    // directory's entry before its first file (ClassLoader.getResource("com/acme/") finds
    // only a directory that has an entry)
    let mut order: Vec<usize> = (0..files.len()).collect();
    if z.is_some() {
        order.sort_by_key(|&k| files[k].0 != "META-INF/MANIFEST.MF");
    }
    let mut dirs_written = std::collections::BTreeSet::new();
    for k in order {
        let ((name, bytes), new) = (&files[k], &new[k]);
        let mut bytes: &[u8] = new.as_deref().unwrap_or(bytes);
        let stripped;
        if signed && is_signature_file(name) {
            report.removed_signature.push(name.clone());
            continue;
        }
        if signed && name == "META-INF/MANIFEST.MF" {
            stripped = strip_manifest_digests(bytes);
            bytes = &stripped;
        }
        if let Some(z) = z.as_mut() {
            let mut opts = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            // From a directory: the file's modification time (UTC), as `jar` would keep it.
            let time = |rel: &str| {
                let modified = std::fs::metadata(input.join(rel)).and_then(|m| m.modified());
                input
                    .is_dir()
                    .then(|| modified.ok().and_then(dos_time))
                    .flatten()
            };
            if input.is_dir() {
                for (at, _) in name.match_indices('/') {
                    let dir = &name[..=at];
                    if dirs_written.insert(dir.to_string()) {
                        let mut o = opts;
                        if let Some(t) = time(dir) {
                            o = o.last_modified_time(t);
                        }
                        z.add_directory(dir, o).map_err(|e| err(&zip_err(&e)))?;
                    }
                }
            }
            if let Some(t) = time(name) {
                opts = opts.last_modified_time(t);
            }
            z.start_file(name.as_str(), opts)
                .map_err(|e| err(&zip_err(&e)))?;
            z.write_all(bytes).map_err(|e| err(&e))?;
        } else {
            let p = output.join(name);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d).map_err(|e| named(d)(&e))?;
            }
            // a new file beside it, renamed over it once every file is written: never written
            // through the one there (a hard link to an input file, a copy made with `cp -al`,
            // or a link to elsewhere: the rename replaces the name), and a run that fails
            // partway (a full disk) leaves every file as it was (it left a truncated class and
            // a directory of two builds)
            let tmp = temp_beside(&p);
            pending.0.push((tmp.clone(), p.clone()));
            std::fs::write(&tmp, bytes).map_err(|e| named(&p)(&e))?;
        }
    }
    pending.commit()?;
    if let Some(z) = z {
        let q = z.finish().map_err(|e| err(&zip_err(&e)))?;
        q.check().map_err(|e| err(&e))?;
    }
    if let Some(s) = staged {
        s.commit()?;
    }
    Ok(report)
}

/// The files of an output directory written beside their targets (temporary name, target):
/// renamed into place by [`Pending::commit`]; dropped before, the temporary files go.
struct Pending(Vec<(PathBuf, PathBuf)>);

impl Pending {
    fn commit(&mut self) -> Result<(), String> {
        while let Some((tmp, p)) = self.0.pop() {
            if let Err(e) = std::fs::rename(&tmp, &p) {
                let _ = std::fs::remove_file(&tmp);
                return Err(named(&p)(&e));
            }
        }
        Ok(())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        for (tmp, _) in &self.0 {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A zip error as a message: an I/O error's own (the zip crate says only "i/o error").
pub fn zip_err(e: &zip::result::ZipError) -> String {
    match e {
        zip::result::ZipError::Io(e) => e.to_string(),
        e => e.to_string(),
    }
}

/// The stream a jar is written to: after its first error, writes and seeks succeed without
/// touching the file, so that the zip writer dropped on the way out of a failed run does not
/// try to finish the jar again (and print its own error); the run fails with the first error
/// ([`Quiet::check`] tells of one the zip writer did not pass on).
struct Quiet<W> {
    inner: W,
    failed: Option<std::io::ErrorKind>,
    /// After a failure: the position and end the zip writer thinks it has.
    pos: u64,
    end: u64,
}

impl<W: Write + std::io::Seek> Quiet<W> {
    fn new(inner: W) -> Self {
        Quiet {
            inner,
            failed: None,
            pos: 0,
            end: 0,
        }
    }

    fn fail(&mut self, e: std::io::Error) -> std::io::Error {
        if self.failed.is_none() {
            self.failed = Some(e.kind());
            self.pos = self.inner.stream_position().unwrap_or(0);
            self.end = self.pos;
        }
        e
    }

    fn check(&self) -> std::io::Result<()> {
        match self.failed {
            Some(k) => Err(std::io::Error::from(k)),
            None => Ok(()),
        }
    }
}

impl<W: Write + std::io::Seek> Write for Quiet<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.failed.is_some() {
            self.pos = self.pos.saturating_add(buf.len() as u64);
            self.end = self.end.max(self.pos);
            return Ok(buf.len());
        }
        self.inner.write(buf).map_err(|e| self.fail(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.failed.is_some() {
            return Ok(());
        }
        self.inner.flush().map_err(|e| self.fail(e))
    }
}

impl<W: Write + std::io::Seek> std::io::Seek for Quiet<W> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        if self.failed.is_none() {
            return self.inner.seek(to).map_err(|e| self.fail(e));
        }
        self.pos = match to {
            std::io::SeekFrom::Start(n) => n,
            std::io::SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
            std::io::SeekFrom::End(d) => self.end.saturating_add_signed(d),
        };
        Ok(self.pos)
    }
}

/// A little-endian u16 at `i`.
fn u16le(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

/// The (id, data range) of each field of a zip extra field block (a truncated last one left out).
fn extra_fields(b: &[u8]) -> impl Iterator<Item = (u16, std::ops::Range<usize>)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i + 4 > b.len() {
            return None;
        }
        let (id, n) = (u16le(b, i), u16le(b, i + 2) as usize);
        let r = i + 4..i + 4 + n;
        i = r.end;
        (r.end <= b.len()).then_some((id, r))
    })
}

/// The length of the central directory record at the start of `b`.
fn central_record_len(b: &[u8]) -> Option<usize> {
    let n = 46 + u16le(b.get(..46)?, 28) as usize + u16le(b, 30) as usize + u16le(b, 32) as usize;
    (n <= b.len()).then_some(n)
}

/// Jar to jar, the jar written: each entry's local record as bytes, its central directory
/// record as it was but for the local header's offset, then the end records.
struct RawJar<W: Write> {
    out: W,
    pos: u64,
    central: Vec<u8>,
    count: u64,
}

impl<W: Write> RawJar<W> {
    /// An entry: `len` bytes of `local` (header to data descriptor), and its central directory
    /// record `cen`, whose offset (the 4-byte field or its zip64 field) is set here.
    fn entry(&mut self, local: &mut impl Read, len: u64, mut cen: Vec<u8>) -> std::io::Result<()> {
        const MAX: u32 = u32::MAX;
        let u32at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let bad = || {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "bad central directory record",
            )
        };
        let name_end = 46 + u16le(&cen, 28) as usize;
        let extra_end = name_end + u16le(&cen, 30) as usize;
        let zip64 = extra_fields(&cen[name_end..extra_end]).find(|f| f.0 == 1);
        // the zip64 field holds, in order, the sizes and offset whose 4-byte fields are MAX
        let sizes = 8 * ((u32at(&cen, 24) == MAX) as usize + (u32at(&cen, 20) == MAX) as usize);
        match zip64 {
            Some((_, r)) if u32at(&cen, 42) == MAX && r.len() >= sizes + 8 => {
                let at = name_end + r.start + sizes;
                cen[at..at + 8].copy_from_slice(&self.pos.to_le_bytes());
            }
            _ if self.pos < MAX as u64 => {
                cen[42..46].copy_from_slice(&(self.pos as u32).to_le_bytes());
            }
            _ => {
                // past 4 GiB: a zip64 field with the offset, first, in place of any other
                let old = zip64.map(|(_, r)| cen[name_end + r.start..name_end + r.end].to_vec());
                let mut data = old.unwrap_or_default();
                if data.len() < sizes {
                    return Err(bad());
                }
                data.truncate(sizes);
                data.extend(self.pos.to_le_bytes());
                let mut extra = vec![1, 0];
                extra.extend((data.len() as u16).to_le_bytes());
                extra.extend(&data);
                for (_, r) in extra_fields(&cen[name_end..extra_end]).filter(|f| f.0 != 1) {
                    extra.extend(&cen[name_end + r.start - 4..name_end + r.end]);
                }
                let n = u16::try_from(extra.len()).map_err(|_| bad())?;
                cen[30..32].copy_from_slice(&n.to_le_bytes());
                cen[42..46].copy_from_slice(&MAX.to_le_bytes());
                let v = u16le(&cen, 6).max(45);
                cen[6..8].copy_from_slice(&v.to_le_bytes());
                cen.splice(name_end..extra_end, extra);
            }
        }
        let n = std::io::copy(&mut local.take(len), &mut self.out)?;
        if n != len {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.pos += n;
        self.central.extend(cen);
        self.count += 1;
        Ok(())
    }

    /// The central directory, the zip64 end records when needed, the end record with `comment`.
    fn finish(mut self, comment: &[u8]) -> std::io::Result<W> {
        let (start, size, count) = (self.pos, self.central.len() as u64, self.count);
        self.out.write_all(&self.central)?;
        let mut end = Vec::new();
        if count >= 0xffff || start >= u32::MAX as u64 || size >= u32::MAX as u64 {
            end.extend(0x0606_4b50u32.to_le_bytes());
            end.extend(44u64.to_le_bytes());
            end.extend(45u16.to_le_bytes());
            end.extend(45u16.to_le_bytes());
            end.extend([0; 8]);
            end.extend(count.to_le_bytes());
            end.extend(count.to_le_bytes());
            end.extend(size.to_le_bytes());
            end.extend(start.to_le_bytes());
            end.extend(0x0706_4b50u32.to_le_bytes());
            end.extend(0u32.to_le_bytes());
            end.extend((start + size).to_le_bytes());
            end.extend(1u32.to_le_bytes());
        }
        let count16 = count.min(0xffff) as u16;
        end.extend(0x0605_4b50u32.to_le_bytes());
        end.extend([0; 4]);
        end.extend(count16.to_le_bytes());
        end.extend(count16.to_le_bytes());
        end.extend((size.min(u32::MAX as u64) as u32).to_le_bytes());
        end.extend((start.min(u32::MAX as u64) as u32).to_le_bytes());
        let comment = &comment[..comment.len().min(0xffff)];
        end.extend((comment.len() as u16).to_le_bytes());
        end.extend(comment);
        self.out.write_all(&end)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A file time as a zip (DOS) date-time in UTC; None outside 1980..=2107.
fn dos_time(t: std::time::SystemTime) -> Option<zip::DateTime> {
    let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (year, month, day) = bciagent::outfile::civil_from_days(days);
    zip::DateTime::from_date_and_time(
        u16::try_from(year).ok()?,
        month as u8,
        day as u8,
        (rem / 3600) as u8,
        (rem / 60 % 60) as u8,
        (rem % 60) as u8,
    )
    .ok()
}

/// Jar to jar: every entry in order; untouched ones (directories included) copied as their
/// bytes (local header, extra fields, data, data descriptor; the central directory record but
/// for its offset), rewritten classes with their entry's timestamp, permissions and
/// compression method.
fn jar_to_jar(
    input: &Path,
    output: &Path,
    progress: &Progress,
    mut f: impl FnMut(&str, &[u8]) -> Option<Vec<u8>>,
) -> Result<Report, String> {
    let ierr = named(input);
    let file = std::fs::File::open(input).map_err(|e| ierr(&e))?;
    let mut z = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| ierr(&zip_open_error(&e, input)))?;
    let names: Vec<String> = (0..z.len())
        .map(|i| z.name_for_index(i).unwrap_or_default().to_string())
        .collect();
    check_names(input, names.iter().map(String::as_str))?;
    note_duplicates(input);
    let entry_err =
        |name: &str, e: &dyn std::fmt::Display| format!("{}: {name}: {e}", input.display());
    progress.start(names.iter().filter(|n| n.ends_with(".class")).count());
    let mut new: Vec<Option<Vec<u8>>> = vec![None; names.len()];
    for (i, name) in names.iter().enumerate() {
        note_nested(input, name);
        if !name.ends_with(".class") {
            continue;
        }
        let mut e = z.by_index(i).map_err(|e| entry_err(name, &zip_err(&e)))?;
        let mut b = Vec::with_capacity(e.size() as usize);
        e.read_to_end(&mut b).map_err(|e| entry_err(name, &e))?;
        drop(e);
        new[i] = f(name, &b);
        progress.inc();
    }
    progress.finish();
    let signed = new.iter().any(Option::is_some) && names.iter().any(|n| is_signature_file(n));
    let mut report = Report::default();
    let oerr = named(output);
    let (staged, out) = stage_writer(output)?;
    let mut out = std::io::BufWriter::new(out);
    // what precedes the first entry (a self-executing jar's launch script) is kept as it is;
    // the entries' offsets count from the start of the file
    let mut first = z.offset();
    // where the central directory starts (read whole, once, below)
    let mut cd = u64::MAX;
    for (i, name) in names.iter().enumerate() {
        let e = z
            .by_index_raw(i)
            .map_err(|e| entry_err(name, &zip_err(&e)))?;
        first = if i == 0 {
            e.header_start()
        } else {
            first.min(e.header_start())
        };
        cd = cd.min(e.central_header_start());
    }
    if first > 0 {
        let mut prefix = Vec::new();
        std::fs::File::open(input)
            .and_then(|f| f.take(first).read_to_end(&mut prefix))
            .map_err(|e| ierr(&e))?;
        out.write_all(&prefix).map_err(|e| oerr(&e))?;
    }
    let mut w = RawJar {
        out,
        pos: first,
        central: Vec::new(),
        count: 0,
    };
    let mut raw = std::fs::File::open(input).map_err(|e| ierr(&e))?;
    let mut central = Vec::new();
    if cd != u64::MAX {
        use std::io::Seek;
        raw.seek(std::io::SeekFrom::Start(cd))
            .and_then(|_| raw.read_to_end(&mut central))
            .map_err(|e| ierr(&e))?;
    }
    for (i, name) in names.iter().enumerate() {
        if signed && is_signature_file(name) {
            report.removed_signature.push(name.clone());
            continue;
        }
        let mut bytes = new[i].take();
        if signed && name.eq_ignore_ascii_case("META-INF/MANIFEST.MF") {
            let mut e = z.by_index(i).map_err(|e| entry_err(name, &zip_err(&e)))?;
            let mut b = Vec::new();
            e.read_to_end(&mut b).map_err(|e| entry_err(name, &e))?;
            bytes = Some(strip_manifest_digests(&b));
        }
        let e = z
            .by_index_raw(i)
            .map_err(|e| entry_err(name, &zip_err(&e)))?;
        let time = e.last_modified().unwrap_or_default();
        if let Some(b) = bytes {
            let method = match e.compression() {
                zip::CompressionMethod::Stored => zip::CompressionMethod::Stored,
                _ => zip::CompressionMethod::Deflated,
            };
            let mut opts = zip::write::SimpleFileOptions::default()
                .compression_method(method)
                .last_modified_time(time)
                .large_file(b.len() as u64 >= u32::MAX as u64);
            if let Some(m) = e.unix_mode() {
                opts = opts.unix_permissions(m & 0o777);
            }
            drop(e);
            // written alone to memory, then placed like a copied entry
            let mut one = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            one.start_file(name.as_str(), opts)
                .and_then(|()| Ok(one.write_all(&b)?))
                .map_err(|e| oerr(&zip_err(&e)))?;
            let one = one.finish().map_err(|e| oerr(&zip_err(&e)))?.into_inner();
            let mut a = zip::ZipArchive::new(std::io::Cursor::new(&one[..]))
                .map_err(|e| oerr(&zip_err(&e)))?;
            let cen = a
                .by_index_raw(0)
                .map_err(|e| oerr(&zip_err(&e)))?
                .central_header_start() as usize;
            let cen_len = central_record_len(&one[cen..]).ok_or_else(|| oerr(&"bad entry"))?;
            w.entry(
                &mut &one[..cen],
                cen as u64,
                one[cen..cen + cen_len].to_vec(),
            )
            .map_err(|e| oerr(&e))?;
        } else {
            // As it was: the local record (header, extra fields, data, data descriptor) and the
            // central directory record (version made by, attributes, extra fields, comment),
            // only the offset set to the entry's new place.
            let (start, data, size, cen) = (
                e.header_start(),
                e.data_start(),
                e.compressed_size(),
                e.central_header_start(),
            );
            drop(e);
            let rerr = |e: &std::io::Error| entry_err(name, e);
            let at = |f: &mut std::fs::File, n: u64, len: usize| -> std::io::Result<Vec<u8>> {
                use std::io::Seek;
                f.seek(std::io::SeekFrom::Start(n))?;
                let mut b = vec![0; len];
                f.read_exact(&mut b)?;
                Ok(b)
            };
            let head = at(&mut raw, start, (data - start) as usize).map_err(|e| rerr(&e))?;
            let mut len = data - start + size;
            if head.len() >= 30 && u16::from_le_bytes([head[6], head[7]]) & 8 != 0 {
                // a data descriptor follows the data: [signature] crc, sizes (8 bytes each
                // when the local header has a zip64 field)
                let zip64 =
                    extra_fields(&head[30 + u16le(&head, 26) as usize..]).any(|(id, _)| id == 1);
                let sig = at(&mut raw, data + size, 4).map_err(|e| rerr(&e))?;
                len += if sig == [0x50, 0x4b, 7, 8] { 4 } else { 0 };
                len += if zip64 { 20 } else { 12 };
            }
            let cen = central
                .get((cen - cd) as usize..)
                .and_then(|b| Some(b[..central_record_len(b)?].to_vec()))
                .ok_or_else(|| entry_err(name, &"bad central directory record"))?;
            {
                use std::io::Seek;
                raw.seek(std::io::SeekFrom::Start(start))
                    .map_err(|e| rerr(&e))?;
            }
            w.entry(&mut raw, len, cen).map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData => rerr(&e),
                _ => oerr(&e),
            })?;
        }
    }
    let out = w.finish(z.comment()).map_err(|e| oerr(&e))?;
    let file = out.into_inner().map_err(|e| oerr(e.error()))?;
    // executable (a self-executing jar) when the input is (a new file: an output written as
    // it is, a device, keeps its mode)
    #[cfg(unix)]
    if staged.replaces() {
        use std::os::unix::fs::PermissionsExt;
        let x = std::fs::metadata(input)
            .map_err(|e| ierr(&e))?
            .permissions()
            .mode()
            & 0o111;
        if x != 0 {
            let mut p = file.metadata().map_err(|e| oerr(&e))?.permissions();
            p.set_mode(p.mode() | x);
            file.set_permissions(p).map_err(|e| oerr(&e))?;
        }
    }
    drop(file);
    staged.commit()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The package lookup in the JDK images installed (JDK 17, and 25 when there).
    #[test]
    fn jimage_names_the_module_of_a_package() {
        for home in [
            "/usr/lib/jvm/java-17-openjdk-amd64",
            "/usr/lib/jvm/temurin-25-jdk-amd64",
        ] {
            let m = Path::new(home).join("lib/modules");
            if !m.is_file() {
                continue;
            }
            let of = |p: &str| jimage_module_of(&m, p);
            assert_eq!(of("java.util").as_deref(), Some("java.base"), "{home}");
            assert_eq!(of("javax.swing").as_deref(), Some("java.desktop"), "{home}");
            assert_eq!(
                of("javax.xml.parsers").as_deref(),
                Some("java.xml"),
                "{home}"
            );
            assert_eq!(
                of("com.sun.tools.javac.main").as_deref(),
                Some("jdk.compiler"),
                "{home}"
            );
            assert_eq!(of("javax"), None, "{home}");
            assert_eq!(of("no.such.pkg"), None, "{home}");
        }
        assert_eq!(
            jimage_module_of(Path::new("/nonexistent"), "java.util"),
            None
        );
    }

    #[test]
    fn dos_times_in_utc() {
        let at = |s: u64| {
            dos_time(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s)).map(|d| {
                (
                    d.year(),
                    d.month(),
                    d.day(),
                    d.hour(),
                    d.minute(),
                    d.second(),
                )
            })
        };
        assert_eq!(at(0), None, "1970 is before DOS time");
        assert_eq!(at(315_532_800), Some((1980, 1, 1, 0, 0, 0)));
        assert_eq!(at(951_782_400 + 3_723), Some((2000, 2, 29, 1, 2, 2)));
        assert_eq!(at(1_795_398_245), Some((2026, 11, 23, 1, 44, 4)));
    }

    /// Jar to jar past 4 GiB: a copied entry's offset goes to its zip64 field (added when it
    /// had none, the other extra fields kept after it), and the zip64 end records are written.
    #[test]
    fn raw_jar_offsets_past_4_gib_go_to_a_zip64_field() {
        let cen = |extra: &[u8], offset: u32| {
            let mut c = vec![0u8; 46];
            c[..4].copy_from_slice(&0x0201_4b50u32.to_le_bytes());
            c[6] = 20;
            c[28] = 1;
            c[30] = extra.len() as u8;
            c[42..46].copy_from_slice(&offset.to_le_bytes());
            c.push(b'a');
            c.extend(extra);
            c
        };
        let ut = [0x55, 0x54, 5, 0, 1, 9, 8, 7, 6];
        let far = 5u64 << 32;
        let mut w = RawJar {
            out: Vec::new(),
            pos: far,
            central: Vec::new(),
            count: 0,
        };
        w.entry(&mut &b"local"[..], 5, cen(&ut, 0)).unwrap();
        let mut want = cen(&[], u32::MAX);
        want[6] = 45;
        want[30] = 12 + ut.len() as u8;
        want.extend([1, 0, 8, 0]);
        want.extend(far.to_le_bytes());
        want.extend(ut);
        assert_eq!(w.central, want);
        // a zip64 field with the offset already: set there
        let mut z = vec![1, 0, 8, 0];
        z.extend([0xff; 8]);
        w.entry(&mut &b""[..], 0, cen(&z, u32::MAX)).unwrap();
        z[4..].copy_from_slice(&(far + 5).to_le_bytes());
        assert_eq!(w.central[want.len()..], cen(&z, u32::MAX));
        let n = w.central.len();
        let out = w.finish(b"hi").unwrap();
        let end = &out[5 + n..];
        assert_eq!(end[..4], 0x0606_4b50u32.to_le_bytes(), "zip64 end record");
        assert_eq!(end[48..56], (far + 5).to_le_bytes(), "directory start");
        assert_eq!(end[56..60], 0x0706_4b50u32.to_le_bytes(), "zip64 locator");
        assert_eq!(end[64..72], (far + 5 + n as u64).to_le_bytes());
        assert_eq!(end[76..][16..20], [0xff; 4], "end record: offset in zip64");
        assert_eq!(&end[76 + 22..], b"hi");
    }

    #[test]
    fn signature_files() {
        for y in [
            "META-INF/ECLIPSE_.SF",
            "META-INF/ECLIPSE_.RSA",
            "META-INF/x.dsa",
            "META-INF/A.EC",
            "META-INF/SIG-FOO",
        ] {
            assert!(is_signature_file(y), "{y}");
        }
        for n in [
            "META-INF/MANIFEST.MF",
            "META-INF/.SF",
            "META-INF/sub/A.SF",
            "A.SF",
            "META-INF/versions/9/A.class",
        ] {
            assert!(!is_signature_file(n), "{n}");
        }
    }

    #[test]
    fn release_of_versioned_entries() {
        assert_eq!(release_of("META-INF/versions/11/a/B.class"), Some(11));
        for n in [
            "a/B.class",
            "META-INF/versions/x/a/B.class",
            "META-INF/versions/11",
            "META-INF/versions/11/META-INF/versions/9/a/B.class",
        ] {
            assert_eq!(release_of(n), None, "{n}");
        }
    }

    #[test]
    fn manifest_class_path_joins_continuation_lines_of_the_main_section() {
        let mf = b"Manifest-Version: 1.0\r\nClass-Path: /usr/share/java/jackson-annotations.jar /usr/sh\r\n are/java/jackson-core.jar\r\n\r\nName: a/B.class\r\nClass-Path: x.jar\r\n";
        assert_eq!(
            manifest_class_path(mf),
            [
                "/usr/share/java/jackson-annotations.jar",
                "/usr/share/java/jackson-core.jar"
            ]
        );
        assert!(
            manifest_class_path(b"Manifest-Version: 1.0\n\nName: a\nClass-Path: x.jar\n")
                .is_empty()
        );
        assert_eq!(
            manifest_class_path(b"class-path:  lib/a.jar  b.jar\tc.jar\n"),
            ["lib/a.jar", "b.jar", "c.jar"]
        );
    }

    #[test]
    fn manifest_digests_stripped_main_section_kept() {
        let mf = b"Manifest-Version: 1.0\r\nMain-Class: a.B\r\nCreated-By: 17 (Debian)\r\n\r\n\
Name: a/B.class\r\nSHA-256-Digest: abc\r\n\r\n\
Name: a/very/long/name/that/goes/past/seventy/two/bytes/and/so/is/wrap\r\n ped/C.class\r\nSHA-256-Digest: def\r\n\r\n\
Name: a/D.class\r\nSHA1-Digest: x\r\nX-Custom: keep\r\n\r\n";
        let out = String::from_utf8(strip_manifest_digests(mf)).unwrap();
        assert_eq!(
            out,
            "Manifest-Version: 1.0\r\nMain-Class: a.B\r\nCreated-By: 17 (Debian)\r\n\r\n\
Name: a/D.class\r\nX-Custom: keep\r\n\r\n"
        );
        // No digests: unchanged, whatever the line ends.
        let plain = b"Manifest-Version: 1.0\nA: b\n\nName: x\nY: z\n\nName: only\n\n";
        assert_eq!(strip_manifest_digests(plain), plain.to_vec());
    }
}
