//! [`ClassPath`]: answers hierarchy questions from dirs, jars, module-layout trees and the running JDK.

use crate::classfile::{mutf8_to_string, ClassFile, ACC_INTERFACE};
use crate::ClassHierarchy;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

struct Info {
    super_class: Option<String>,
    is_interface: bool,
    /// (name, descriptor, is_method, access)
    members: Vec<(Box<str>, Box<str>, bool, u16)>,
}

enum Entry {
    /// plain class tree: dir/pkg/C.class
    Dir(PathBuf),
    /// module layout: package path -> module dir
    Modules(HashMap<String, PathBuf>),
    Jar(
        Mutex<zip::ZipArchive<File>>,
        std::collections::HashSet<String>,
    ),
    /// one class file given on its own: (its class name, if it can be read; its bytes)
    Class(Option<String>, Vec<u8>),
}

/// Whether a path is a class file given on its own: a file named `*.class`, or one that starts
/// with the class-file magic.
pub fn is_class_file(p: &Path) -> bool {
    if !p.is_file() {
        return false;
    }
    if p.extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("class"))
    {
        return true;
    }
    let mut head = [0u8; 4];
    File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == [0xca, 0xfe, 0xba, 0xbe])
}

/// What opening a zip (a jar) that failed says, for a message after its path: a file that is
/// none ("an empty file, not a zip archive", "not a zip archive (no end-of-central-directory
/// record: not a zip, or one cut short)"), a damaged one, or the OS's reason.
pub fn zip_open_error(e: &zip::result::ZipError, path: &Path) -> String {
    use zip::result::ZipError;
    match e {
        ZipError::Io(e) => e.to_string(),
        ZipError::InvalidArchive(_) if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) => {
            "an empty file, not a zip archive".into()
        }
        ZipError::InvalidArchive(why) if why.contains("EOCD") => {
            "not a zip archive (no end-of-central-directory record: not a zip, or one cut short)"
                .into()
        }
        ZipError::InvalidArchive(why) => format!("a damaged zip archive: {why}"),
        e => e.to_string(),
    }
}

/// A file that is no zip by its first bytes nor by its name (`.jar`, `.zip`): the error for
/// it, saying what a class path entry or input is; `None` for anything that may be a zip.
fn not_a_zip(p: &Path) -> Option<io::Error> {
    if p.extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("jar") || x.eq_ignore_ascii_case("zip"))
    {
        return None;
    }
    let mut head = [0u8; 2];
    let n = File::open(p).and_then(|mut f| f.read(&mut head)).ok()?;
    (head[..n] != *b"PK").then(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a directory, a .jar/.zip or a .class file",
        )
    })
}

/// A class path: dirs (plain or module layout `dir/<module>/pkg/C.class`), jars, and optionally the
/// running JDK's classes. Lookups are cached; it is `Send + Sync`.
pub struct ClassPath {
    entries: Vec<Entry>,
    cache: RwLock<crate::types::FxMap<String, Option<Arc<Info>>>>,
}

fn info_from_bytes(bytes: &[u8]) -> Option<(String, Info)> {
    let cf = ClassFile::parse(bytes).ok()?;
    let mut members = Vec::with_capacity(cf.fields.len() + cf.methods.len());
    for (list, is_m) in [(&cf.fields, false), (&cf.methods, true)] {
        for m in list.iter() {
            members.push((
                mutf8_to_string(m.name).into(),
                mutf8_to_string(m.desc).into(),
                is_m,
                m.access,
            ));
        }
    }
    Some((
        mutf8_to_string(cf.this_class),
        Info {
            super_class: cf.super_class.map(mutf8_to_string),
            is_interface: cf.access & ACC_INTERFACE != 0,
            members,
        },
    ))
}

/// `dir/<module>/pkg/C.class`: some child dir holds a module-info.class, or the top level has no class
/// files and some child dir is named like a module (`java.base`, `jdk.compiler`, `org.foo`).
fn is_module_layout(dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut dotted_dir = false;
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.join("module-info.class").is_file() {
                return true;
            }
            dotted_dir |= e.file_name().to_string_lossy().contains('.');
        } else if p.extension().is_some_and(|x| x == "class") {
            return false;
        }
    }
    dotted_dir
}

fn index_modules(dir: &Path) -> HashMap<String, PathBuf> {
    let mut map = HashMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return map;
    };
    for m in rd.flatten() {
        let mdir = m.path();
        if !mdir.is_dir() {
            continue;
        }
        let mut stack = vec![mdir.clone()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut has_class = false;
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "class") {
                    has_class = true;
                }
            }
            if has_class {
                if let Ok(rel) = d.strip_prefix(&mdir) {
                    let pkg = rel.to_string_lossy().replace('\\', "/");
                    map.entry(pkg).or_insert_with(|| mdir.clone());
                }
            }
        }
    }
    map
}

/// Find the running JDK's home: `$JAVA_HOME`, the Debian JDK 17 path, or `java` on PATH.
pub fn find_java_home() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("JAVA_HOME") {
        let p = PathBuf::from(h);
        if p.join("bin/java").exists() {
            return Some(p);
        }
    }
    let deb = PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64");
    if deb.join("bin/java").exists() {
        return Some(deb);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH")?) {
        let j = dir.join("java");
        if let Ok(real) = std::fs::canonicalize(&j) {
            if let Some(home) = real.parent().and_then(|b| b.parent()) {
                if home.join("lib/modules").exists() {
                    return Some(home.to_path_buf());
                }
            }
        }
    }
    None
}

/// Extract `<java_home>/lib/modules` with `jimage extract` into a cache dir (once) and return it.
/// `$BCI_JDK_TREE`, if set to a dir, is used instead (an already extracted tree of the same JDK).
/// Cache root: `$BCI_CACHE_DIR`, else `$XDG_CACHE_HOME/bci`, else `$HOME/.cache/bci`, else the temp dir.
pub fn jdk_tree(java_home: &Path) -> io::Result<PathBuf> {
    if let Some(t) = std::env::var_os("BCI_JDK_TREE") {
        let t = PathBuf::from(t);
        if t.is_dir() {
            return Ok(t);
        }
    }
    let modules = java_home.join("lib/modules");
    let meta = std::fs::metadata(&modules)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", modules.display())))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let root = if let Some(d) = std::env::var_os("BCI_CACHE_DIR") {
        PathBuf::from(d)
    } else if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        PathBuf::from(d).join("bci")
    } else if let Some(d) = std::env::var_os("HOME") {
        PathBuf::from(d).join(".cache/bci")
    } else {
        std::env::temp_dir().join("bci")
    };
    let dest = root.join(format!("jimage-{}-{}", meta.len(), mtime));
    if dest.is_dir() {
        return Ok(dest);
    }
    std::fs::create_dir_all(&root)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", root.display())))?;
    // Unique per call: threads of one process may extract at the same time.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = root.join(format!("tmp-{}-{seq}-{}", std::process::id(), mtime));
    let _ = std::fs::remove_dir_all(&tmp);
    let jimage = java_home.join("bin/jimage");
    let status = std::process::Command::new(&jimage)
        .arg("extract")
        .arg("--dir")
        .arg(&tmp)
        .arg(&modules)
        .status()
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", jimage.display())))?;
    if !status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(io::Error::other(format!(
            "{} extract --dir {} {}: {status}",
            jimage.display(),
            tmp.display(),
            modules.display()
        )));
    }
    if std::fs::rename(&tmp, &dest).is_err() {
        // lost the race: someone else made it
        let _ = std::fs::remove_dir_all(&tmp);
    }
    if dest.is_dir() {
        Ok(dest)
    } else {
        Err(io::Error::other(format!(
            "{}: could not create the JDK class cache",
            dest.display()
        )))
    }
}

impl ClassPath {
    /// Entries: dirs (plain trees or module layout) and jars. With `include_running_jdk`, the running JDK's
    /// classes (extracted once from `$JAVA_HOME/lib/modules` with `jimage extract` into a cache) come last.
    pub fn new(entries: &[PathBuf], include_running_jdk: bool) -> io::Result<ClassPath> {
        let mut v = Vec::new();
        for e in entries {
            v.push(Self::open_entry(e)?);
        }
        if include_running_jdk {
            let home = find_java_home().ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, "no JDK found (set JAVA_HOME)")
            })?;
            let tree = jdk_tree(&home)?;
            v.push(Entry::Modules(index_modules(&tree)));
        }
        Ok(ClassPath {
            entries: v,
            cache: RwLock::new(Default::default()),
        })
    }

    /// Opens one class path entry; an error names its path.
    fn open_entry(e: &Path) -> io::Result<Entry> {
        Self::open_entry_unnamed(e)
            .map_err(|err| io::Error::new(err.kind(), format!("{}: {err}", e.display())))
    }

    fn open_entry_unnamed(e: &Path) -> io::Result<Entry> {
        if e.is_dir() {
            if is_module_layout(e) {
                Ok(Entry::Modules(index_modules(e)))
            } else {
                Ok(Entry::Dir(e.to_path_buf()))
            }
        } else if is_class_file(e) {
            let b = std::fs::read(e)?;
            Ok(Entry::Class(info_from_bytes(&b).map(|(n, _)| n), b))
        } else {
            if let Some(err) = not_a_zip(e) {
                return Err(err);
            }
            let f = File::open(e)?;
            let z = zip::ZipArchive::new(f)
                .map_err(|x| io::Error::new(io::ErrorKind::InvalidData, zip_open_error(&x, e)))?;
            let names = z.file_names().map(|s| s.to_string()).collect();
            Ok(Entry::Jar(Mutex::new(z), names))
        }
    }

    /// Make a class known (e.g. the classes being verified). Unparseable bytes are ignored.
    pub fn add_class_bytes(&mut self, bytes: &[u8]) {
        if let Some((name, info)) = info_from_bytes(bytes) {
            if let Ok(mut c) = self.cache.write() {
                c.insert(name, Some(Arc::new(info)));
            }
        }
    }

    fn read_class(&self, name: &str) -> Option<Vec<u8>> {
        let rel = format!("{name}.class");
        for e in &self.entries {
            match e {
                Entry::Dir(d) => {
                    if let Ok(b) = std::fs::read(d.join(&rel)) {
                        return Some(b);
                    }
                }
                Entry::Modules(map) => {
                    let pkg = name.rfind('/').map(|i| &name[..i]).unwrap_or("");
                    if let Some(m) = map.get(pkg) {
                        if let Ok(b) = std::fs::read(m.join(&rel)) {
                            return Some(b);
                        }
                    }
                }
                Entry::Class(n, b) => {
                    if n.as_deref() == Some(name) {
                        return Some(b.clone());
                    }
                }
                Entry::Jar(z, names) => {
                    if names.contains(&rel) {
                        let mut z = z.lock().ok()?;
                        let mut f = z.by_name(&rel).ok()?;
                        let mut b = Vec::new();
                        if f.read_to_end(&mut b).is_ok() {
                            return Some(b);
                        }
                    }
                }
            }
        }
        None
    }

    fn info(&self, name: &str) -> Option<Arc<Info>> {
        if let Ok(c) = self.cache.read() {
            if let Some(v) = c.get(name) {
                return v.clone();
            }
        }
        let info = self
            .read_class(name)
            .and_then(|b| info_from_bytes(&b))
            .map(|(_, i)| Arc::new(i));
        if let Ok(mut c) = self.cache.write() {
            c.insert(name.to_string(), info.clone());
        }
        info
    }

    /// Read the bytes of every class file under a dir or in a jar, or of a class file given on
    /// its own: (name, bytes): the path relative to the dir, the entry's name in the jar, the
    /// class file's name.
    /// A jar's `META-INF/versions/N/` entries (a multi-release jar's other builds of its
    /// classes) are left out: [`ClassPath::read_all_versions`] has them.
    pub fn read_all(path: &Path) -> io::Result<Vec<(String, Vec<u8>)>> {
        Self::read_entries(path, false)
    }

    /// As [`ClassPath::read_all`], with a jar's `META-INF/versions/N/` entries too (a
    /// directory's are always read): what `bci verify` checks.
    pub fn read_all_versions(path: &Path) -> io::Result<Vec<(String, Vec<u8>)>> {
        Self::read_entries(path, true)
    }

    fn read_entries(path: &Path, versions: bool) -> io::Result<Vec<(String, Vec<u8>)>> {
        let mut out = Vec::new();
        if path.is_dir() {
            for (rel, p) in class_files_under(path)? {
                let b = std::fs::read(&p)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
                out.push((rel, b));
            }
        } else if is_class_file(path) {
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            out.push((name, std::fs::read(path)?));
        } else {
            if let Some(err) = not_a_zip(path) {
                return Err(err);
            }
            let mut z = zip::ZipArchive::new(File::open(path)?).map_err(|x| {
                io::Error::new(io::ErrorKind::InvalidData, zip_open_error(&x, path))
            })?;
            for i in 0..z.len() {
                let mut f = z.by_index(i).map_err(io::Error::other)?;
                let n = f.name().to_string();
                if n.ends_with(".class") && (versions || !n.starts_with("META-INF/versions/")) {
                    let mut b = Vec::new();
                    f.read_to_end(&mut b)
                        .map_err(|e| io::Error::new(e.kind(), format!("{n}: {e}")))?;
                    out.push((n, b));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// Every `.class` file under `dir`: (path relative to `dir` with `/` separators, full path).
pub(crate) fn class_files_under(dir: &Path) -> io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "class") {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, p));
            }
        }
    }
    Ok(out)
}

impl ClassHierarchy for ClassPath {
    fn super_class(&self, internal_name: &str) -> Option<String> {
        self.info(internal_name)?.super_class.clone()
    }
    fn is_interface(&self, internal_name: &str) -> Option<bool> {
        Some(self.info(internal_name)?.is_interface)
    }
    fn find_member(
        &self,
        class: &str,
        name: &str,
        desc: &str,
        is_method: bool,
    ) -> Option<(String, u16)> {
        let mut cur = class.to_string();
        for _ in 0..256 {
            let info = self.info(&cur)?;
            if let Some(m) = info
                .members
                .iter()
                .find(|m| m.2 == is_method && &*m.0 == name && &*m.1 == desc)
            {
                return Some((cur, m.3));
            }
            cur = info.super_class.clone()?;
        }
        None
    }
}
