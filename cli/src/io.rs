//! Walk a directory or jar of classes and write a transformed copy (directory or jar).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn is_archive(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jar" || e == "zip")
}

/// Every file of `input` (relative name, bytes).
pub fn read_all(input: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", input.display());
    let mut out = Vec::new();
    if input.is_dir() {
        let mut stack: Vec<PathBuf> = vec![input.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).map_err(|e| err(&e))? {
                let p = e.map_err(|e| err(&e))?.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let rel = p
                        .strip_prefix(input)
                        .map_err(|e| err(&e))?
                        .to_string_lossy()
                        .replace('\\', "/");
                    out.push((rel, std::fs::read(&p).map_err(|e| err(&e))?));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
    } else if is_archive(input) {
        let f = std::fs::File::open(input).map_err(|e| err(&e))?;
        let mut z = zip::ZipArchive::new(f).map_err(|e| err(&e))?;
        for i in 0..z.len() {
            let mut e = z.by_index(i).map_err(|e| err(&e))?;
            if e.is_dir() {
                continue;
            }
            let mut b = Vec::with_capacity(e.size() as usize);
            e.read_to_end(&mut b).map_err(|e| err(&e))?;
            out.push((e.name().to_string(), b));
        }
    } else {
        return Err(format!(
            "{}: not a directory or a .jar/.zip",
            input.display()
        ));
    }
    Ok(out)
}

/// Copies `input` to `output`, replacing each class file for which `f` returns new bytes.
pub fn transform(
    input: &Path,
    output: &Path,
    mut f: impl FnMut(&str, &[u8]) -> Option<Vec<u8>>,
) -> Result<(), String> {
    let files = read_all(input)?;
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", output.display());
    if is_archive(output) {
        let file = std::fs::File::create(output).map_err(|e| err(&e))?;
        let mut z = zip::ZipWriter::new(file);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in &files {
            let new = if name.ends_with(".class") {
                f(name, bytes)
            } else {
                None
            };
            z.start_file(name.as_str(), opts).map_err(|e| err(&e))?;
            z.write_all(new.as_deref().unwrap_or(bytes))
                .map_err(|e| err(&e))?;
        }
        z.finish().map_err(|e| err(&e))?;
    } else {
        for (name, bytes) in &files {
            let new = if name.ends_with(".class") {
                f(name, bytes)
            } else {
                None
            };
            let p = output.join(name);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d).map_err(|e| err(&e))?;
            }
            std::fs::write(&p, new.as_deref().unwrap_or(bytes)).map_err(|e| err(&e))?;
        }
    }
    Ok(())
}
