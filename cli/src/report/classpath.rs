//! The class files under `bci report --classes` paths, as jacococli's `--classfiles` reads
//! them: a directory's class files and the jars in it (at any depth), a jar's class files and
//! the jars nested in it (a Spring Boot fat jar's `BOOT-INF/lib/*.jar`, a war's
//! `WEB-INF/lib/*.jar`), recursively, read in memory. Each directory or jar is a [`Container`]
//! of its own, named as a path (`libs/app.jar`) or, nested, with `!/` as in a jar URL
//! (`app.jar!/BOOT-INF/lib/util.jar`), so that a class in two of them is treated as a class
//! under two `--classes` paths. A `--classes` path that is a class file is a container of that
//! one class.

use std::io::{Read, Seek};
use std::path::Path;

/// Jars nested deeper than this are not read (a zip that holds itself, a "zip quine", would
/// never end); named on stderr.
const MAX_DEPTH: usize = 8;

/// A directory's or a jar's own class files (not those of the jars in it).
pub struct Container {
    /// The `--classes` path, a jar under it, or a nested jar (`a.jar!/lib/b.jar`).
    pub name: String,
    /// (entry name in the container, bytes), sorted by name.
    pub classes: Vec<(String, Vec<u8>)>,
}

/// Whether an entry or file name is a jar to read for classes (`.jar`, `.war`, `.ear`,
/// `.zip`, in any case).
pub fn is_archive_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [".jar", ".war", ".ear", ".zip"]
        .iter()
        .any(|x| n.ends_with(x))
}

/// What a `--classes` path holds (a directory, a jar, or one class file, as `bci verify`
/// takes): the path itself first, then each jar in it (a directory's
/// in name order, a jar's in entry order, each followed by those nested in it). `Err` when
/// the path itself cannot be read; a jar in it that cannot be read is an error line in
/// `errors` (the report is incomplete), one nested too deep a line in `warnings`.
pub fn read(
    root: &Path,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Container>, String> {
    let name = root.display().to_string();
    let mut out = Vec::new();
    if root.is_dir() {
        let files = crate::io::read_dir_files(root, |p| {
            p.extension().is_some_and(|x| x == "class")
                || p.file_name()
                    .is_some_and(|n| is_archive_name(&n.to_string_lossy()))
        })?;
        let (classes, jars): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|(n, _)| n.ends_with(".class"));
        out.push(Container { name, classes });
        for (rel, bytes) in jars {
            let jar = root.join(&rel).display().to_string();
            nested(jar, &bytes, 1, &mut out, errors, warnings);
        }
        return Ok(out);
    }
    // a path that is not a directory is read as a zip, whatever its name, unless it is a class
    // file (its magic, or a `.class` name: one cut short is then "not a class file")
    let err = |e: &dyn std::fmt::Display| format!("{name}: {e}");
    let mut f = std::fs::File::open(root).map_err(|e| err(&e))?;
    let mut magic = Vec::with_capacity(4);
    (&mut f)
        .take(4)
        .read_to_end(&mut magic)
        .map_err(|e| err(&e))?;
    let class_name = root
        .file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(".class"));
    if magic == [0xca, 0xfe, 0xba, 0xbe] || class_name {
        let bytes = std::fs::read(root).map_err(|e| err(&e))?;
        let entry =
            (root.file_name()).map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
        // its file name as the entry: a classdump= file (`prog.<hash>.class`) reads as such
        let entry = if entry.ends_with(".class") {
            entry
        } else {
            format!("{entry}.class")
        };
        out.push(Container {
            name,
            classes: vec![(entry, bytes)],
        });
        return Ok(out);
    }
    f.rewind().map_err(|e| err(&e))?;
    let mut z = zip::ZipArchive::new(std::io::BufReader::new(f)).map_err(|e| {
        err(&format!(
            "{} (--classes takes a directory, a jar or a class file)",
            crate::io::zip_open_error(&e, root)
        ))
    })?;
    let own = entries(&mut z, &name, 0, &mut out, errors, warnings)?;
    out.insert(0, own);
    Ok(out)
}

/// A jar read from `bytes` (found in a directory or in another jar) and the jars nested in
/// it, added to `out`; one that cannot be read is an error line.
fn nested(
    name: String,
    bytes: &[u8],
    depth: usize,
    out: &mut Vec<Container>,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        warnings.push(format!(
            "{name}: a jar nested more than {MAX_DEPTH} deep, not read for classes"
        ));
        return;
    }
    let at = out.len();
    let read = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("{name}: {e}"))
        .and_then(|mut z| entries(&mut z, &name, depth, out, errors, warnings));
    match read {
        Ok(own) => out.insert(at, own),
        Err(e) => errors.push(format!("{e} (not read for classes)")),
    }
}

/// The class files of an open jar named `name` (returned), and, added to `out` after it, the
/// jars nested in it.
fn entries<R: Read + std::io::Seek>(
    z: &mut zip::ZipArchive<R>,
    name: &str,
    depth: usize,
    out: &mut Vec<Container>,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<Container, String> {
    let mut classes = Vec::new();
    let mut jars = Vec::new();
    for i in 0..z.len() {
        let mut e = z.by_index(i).map_err(|e| format!("{name}: {e}"))?;
        let entry = e.name().to_string();
        let is_class = entry.ends_with(".class");
        if e.is_dir() || !(is_class || is_archive_name(&entry)) {
            continue;
        }
        let mut b = Vec::with_capacity(e.size().min(1 << 24) as usize);
        e.read_to_end(&mut b)
            .map_err(|x| format!("{name}: {entry}: {x}"))?;
        if is_class {
            classes.push((entry, b));
        } else {
            jars.push((entry, b));
        }
    }
    classes.sort_by(|a, b| a.0.cmp(&b.0));
    for (entry, bytes) in jars {
        nested(
            format!("{name}!/{entry}"),
            &bytes,
            depth + 1,
            out,
            errors,
            warnings,
        );
    }
    Ok(Container {
        name: name.to_string(),
        classes,
    })
}
