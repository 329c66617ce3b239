//! Files written as one set (`bci report --html DIR`): all of them or none.
//!
//! Each file is first written to a hidden temporary file beside its place
//! (`.<name>.<pid>.bci-tmp`: the same directory, so the same file system, whatever is mounted
//! or linked below DIR); only when every one is written are they renamed into place, each
//! replacing the file of its name (a previous report's page, moved aside to
//! `.<name>.<pid>.bci-old` first and removed at the end). A failure while writing removes the
//! temporary files and the directories made for the set (DIR and the missing ones on the way to
//! it included); a failure while renaming also puts back every file replaced and removes every
//! file added. DIR is then as it was: absent, or the previous report whole. Files there that
//! the set does not write are left alone, as they were when pages were written in place (a
//! previous report's pages of classes no longer reported stay).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub struct Staged {
    root: PathBuf,
    /// Directories made, in the order made.
    made: Vec<PathBuf>,
    /// (place, temporary file), in the order written.
    files: Vec<(PathBuf, PathBuf)>,
    /// The places of `files` (a file written twice is put in place once).
    seen: HashSet<PathBuf>,
    tag: u32,
    /// Committed or aborted: nothing for Drop to remove.
    done: bool,
}

/// `p`'s sibling `.<name>.<tag>.<what>`.
fn beside(p: &Path, tag: u32, what: &str) -> PathBuf {
    let name = p.file_name().unwrap_or_default().to_string_lossy();
    p.with_file_name(format!(".{name}.{tag}.{what}"))
}

fn named(p: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", p.display())
}

impl Staged {
    /// A set of files under `root`, made now if absent (with the missing directories on the way
    /// to it, removed again if the set is not committed).
    pub fn new(root: &Path) -> Result<Staged, String> {
        let mut s = Staged {
            root: root.to_path_buf(),
            made: Vec::new(),
            files: Vec::new(),
            seen: HashSet::new(),
            tag: std::process::id(),
            done: false,
        };
        let mut missing = Vec::new();
        let mut p = root;
        while !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_err() {
            missing.push(p.to_path_buf());
            match p.parent() {
                Some(up) => p = up,
                None => break,
            }
        }
        if !p.as_os_str().is_empty() && !p.is_dir() {
            let e = named(p, "a file, not a directory");
            return Err(s.fail(e, Vec::new()));
        }
        for d in missing.into_iter().rev() {
            if let Err(e) = s.dir(&d) {
                return Err(s.fail(e, Vec::new()));
            }
        }
        Ok(s)
    }

    /// Makes the directory `p` if it is not there (its parent must be).
    pub fn dir(&mut self, p: &Path) -> Result<(), String> {
        if p.is_dir() {
            return Ok(());
        }
        if std::fs::symlink_metadata(p).is_ok() {
            return Err(named(p, "a file, not a directory"));
        }
        std::fs::create_dir(p).map_err(|e| named(p, e))?;
        self.made.push(p.to_path_buf());
        Ok(())
    }

    /// Writes the file `p` (put in place by [`Staged::commit`]); a page that is a symbolic
    /// link is followed, its target replaced, as every output of bci
    /// ([`crate::io::follow_links`]).
    pub fn write(&mut self, p: &Path, text: &str) -> Result<(), String> {
        let target = crate::io::follow_links(p);
        let p = target.as_path();
        if p.is_dir() {
            return Err(named(p, "a directory, not a file"));
        }
        let tmp = beside(p, self.tag, "bci-tmp");
        if self.seen.insert(p.to_path_buf()) {
            self.files.push((p.to_path_buf(), tmp.clone()));
        }
        std::fs::write(&tmp, text)
            .and_then(|()| match std::fs::metadata(p) {
                // a file replaced keeps its permissions (the temporary one has the default mode)
                Ok(m) => std::fs::set_permissions(&tmp, m.permissions()),
                Err(_) => Ok(()),
            })
            .map_err(|e| named(p, e))
    }

    /// Puts every file written in place; on a failure, puts back what was there and removes
    /// the rest (see [`Staged::abort`]). `Ok`: warnings (a replaced file that could not be
    /// removed).
    pub fn commit(self) -> Result<Vec<String>, String> {
        self.commit_with(&mut |from, to| std::fs::rename(from, to))
    }

    fn commit_with(
        mut self,
        rename: &mut dyn FnMut(&Path, &Path) -> std::io::Result<()>,
    ) -> Result<Vec<String>, String> {
        // (place, where the file it replaced went)
        let mut placed: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
        let mut failed = None;
        for (place, tmp) in &self.files {
            let old = match std::fs::symlink_metadata(place) {
                Ok(_) => {
                    let old = beside(place, self.tag, "bci-old");
                    if let Err(e) = rename(place, &old) {
                        failed = Some(named(place, e));
                        break;
                    }
                    Some(old)
                }
                Err(_) => None,
            };
            if let Err(e) = rename(tmp, place) {
                failed = Some(named(place, e));
                if let Some(old) = old {
                    placed.push((place.clone(), Some(old)));
                }
                break;
            }
            placed.push((place.clone(), old));
        }
        let Some(failed) = failed else {
            self.done = true;
            let mut warnings = Vec::new();
            for old in placed.iter().filter_map(|(_, o)| o.as_ref()) {
                if let Err(e) = std::fs::remove_file(old) {
                    warnings.push(format!(
                        "{}: replaced, cannot be removed: {e}",
                        old.display()
                    ));
                }
            }
            return Ok(warnings);
        };
        // back as it was: the files replaced over the new ones, the new ones removed
        let mut stuck = Vec::new();
        for (place, old) in placed.iter().rev() {
            let back = match old {
                Some(old) => std::fs::rename(old, place),
                None => std::fs::remove_file(place),
            };
            if let Err(e) = back {
                stuck.push(named(place, e));
            }
        }
        Err(self.fail(failed, stuck))
    }

    /// Gives up: removes the temporary files and the directories made. Returns the error:
    /// `why`, then that the root is as it was, or what could not be put back or removed.
    pub fn abort(mut self, why: String) -> String {
        self.fail(why, Vec::new())
    }

    fn fail(&mut self, why: String, mut stuck: Vec<String>) -> String {
        self.done = true;
        stuck.extend(self.remove());
        let root = self.root.display();
        if stuck.is_empty() {
            format!("{why}; nothing written: {root} is as it was")
        } else {
            format!(
                "{why}; {root} is not as it was: could not put back or remove {}",
                stuck.join(", ")
            )
        }
    }

    /// Removes the temporary files and the directories made: what could not be removed.
    fn remove(&mut self) -> Vec<String> {
        let mut left = Vec::new();
        for (_, tmp) in &self.files {
            match std::fs::remove_file(tmp) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => left.push(named(tmp, e)),
                _ => {}
            }
        }
        for d in self.made.iter().rev() {
            if let Err(e) = std::fs::remove_dir(d) {
                left.push(named(d, e));
            }
        }
        left
    }
}

impl Drop for Staged {
    /// Neither committed nor aborted (a panic): the temporary files are not left.
    fn drop(&mut self) {
        if !self.done {
            self.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Every file under `d` (hidden ones included) with its text, by relative path.
    fn tree(d: &Path) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut todo = vec![d.to_path_buf()];
        while let Some(p) = todo.pop() {
            for e in std::fs::read_dir(&p).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(d).unwrap().display().to_string();
                if p.is_dir() {
                    out.insert(format!("{rel}/"), String::new());
                    todo.push(p);
                } else {
                    out.insert(rel, std::fs::read_to_string(&p).unwrap());
                }
            }
        }
        out
    }

    /// A previous set (a.html, p/b.html) and a file of the user's (keep.txt) in `root`.
    fn previous(tag: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("bci-staged-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("p")).unwrap();
        for (f, t) in [
            ("a.html", "old a"),
            ("p/b.html", "old b"),
            ("keep.txt", "mine"),
        ] {
            std::fs::write(root.join(f), t).unwrap();
        }
        root
    }

    /// The new set: a.html and p/b.html replaced, q/c.html added.
    fn stage(root: &Path) -> Staged {
        let mut s = Staged::new(root).unwrap();
        s.write(&root.join("a.html"), "new a").unwrap();
        s.dir(&root.join("p")).unwrap();
        s.write(&root.join("p/b.html"), "new b").unwrap();
        s.dir(&root.join("q")).unwrap();
        s.write(&root.join("q/c.html"), "new c").unwrap();
        s
    }

    #[test]
    fn committed_set_replaces_its_files_and_keeps_the_others() {
        let root = previous("commit");
        let warnings = stage(&root).commit().unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let want: BTreeMap<String, String> = [
            ("a.html", "new a"),
            ("keep.txt", "mine"),
            ("p/", ""),
            ("p/b.html", "new b"),
            ("q/", ""),
            ("q/c.html", "new c"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        assert_eq!(tree(&root), want);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A rename that fails at each step of the commit in turn (moving a replaced file aside,
    /// moving a new one in): every file replaced is put back, every file and directory added
    /// removed, and the error names the file.
    #[test]
    fn commit_failing_at_any_rename_puts_everything_back() {
        // renames: a aside, a in, b aside, b in, c in
        for fail_at in 1..=5 {
            let root = previous(&format!("rollback-{fail_at}"));
            let before = tree(&root);
            let s = stage(&root);
            let mut n = 0;
            let e = s
                .commit_with(&mut |from, to| {
                    n += 1;
                    if n == fail_at {
                        Err(std::io::Error::other("injected"))
                    } else {
                        std::fs::rename(from, to)
                    }
                })
                .unwrap_err();
            let file = ["a.html", "a.html", "p/b.html", "p/b.html", "q/c.html"][fail_at - 1];
            assert_eq!(
                e,
                format!(
                    "{}: injected; nothing written: {} is as it was",
                    root.join(file).display(),
                    root.display()
                )
            );
            assert_eq!(tree(&root), before, "failing at rename {fail_at}");
            let _ = std::fs::remove_dir_all(&root);
        }
    }

    /// A set given up (a page that could not be written) leaves no temporary file, and
    /// removes the directories it made: a root that was not there, and those on the way to it.
    #[test]
    fn aborted_set_leaves_nothing() {
        let root = previous("abort");
        let before = tree(&root);
        let e = stage(&root).abort("x: failed".into());
        assert_eq!(
            e,
            format!(
                "x: failed; nothing written: {} is as it was",
                root.display()
            )
        );
        assert_eq!(tree(&root), before);
        let new = root.join("new/deeper/html");
        let mut s = Staged::new(&new).unwrap();
        s.write(&new.join("index.html"), "x").unwrap();
        s.abort("x: failed".into());
        assert_eq!(tree(&root), before);
        // a file where the root or a page would be: refused before anything is written
        let e = Staged::new(&root.join("keep.txt/html")).err().unwrap();
        assert!(
            e.starts_with(&format!("{}: a file", root.join("keep.txt").display())),
            "{e}"
        );
        let mut s = Staged::new(&root).unwrap();
        let e = s.write(&root.join("p"), "x").unwrap_err();
        assert_eq!(
            e,
            format!("{}: a directory, not a file", root.join("p").display())
        );
        drop(s);
        assert_eq!(tree(&root), before);
        let _ = std::fs::remove_dir_all(&root);
    }
}
