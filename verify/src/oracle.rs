//! HotSpot as the judge: `java -Xverify:all` links every class (without running `<clinit>`) and reports.
//!
//! The Java harness (verify/oracle/Oracle.java, embedded here) is compiled with `javac` on first use into
//! a cache dir (`$BCI_ORACLE_CACHE`, else `<workspace>/target/oracle-cache`, else the temp dir).

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCE: &str = include_str!("../oracle/Oracle.java");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VerdictKind {
    /// Linked and verified.
    Ok,
    /// java.lang.VerifyError.
    VerifyError,
    /// java.lang.ClassFormatError (and subclasses such as UnsupportedClassVersionError).
    FormatError,
    /// Another LinkageError (NoClassDefFoundError of a missing dependency, IllegalAccessError, ...):
    /// not a verdict on the class file itself.
    LinkError,
    /// Anything else (class not loadable, harness problem, JVM died).
    Other,
}

#[derive(Debug, Clone)]
pub struct Verdict {
    /// Binary name (`java.util.HashMap`).
    pub class: String,
    /// Linked and verified.
    pub ok: bool,
    pub message: String,
    pub kind: VerdictKind,
}

impl Verdict {
    /// HotSpot rejected the class file itself (VerifyError or ClassFormatError).
    pub fn rejected(&self) -> bool {
        matches!(
            self.kind,
            VerdictKind::VerifyError | VerdictKind::FormatError
        )
    }
}

fn java_tool(java_home: &Path, tool: &str) -> PathBuf {
    let p = java_home.join("bin").join(tool);
    if p.exists() {
        p
    } else {
        PathBuf::from(tool)
    }
}

fn cache_root() -> PathBuf {
    if let Some(d) = std::env::var_os("BCI_ORACLE_CACHE") {
        return PathBuf::from(d);
    }
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    if ws.is_dir() {
        return ws.join("oracle-cache");
    }
    std::env::temp_dir().join("bci-oracle-cache")
}

/// A name unique to this call: process id plus a process-wide sequence number. Tests run as
/// threads of one process, and several may verify the same class list at once.
fn unique(prefix: &str, hash: u64) -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}-{}-{n}-{hash:016x}", std::process::id())
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Compile the harness (once per source version, for Java 17 and later) and return the class dir.
pub fn harness(java_home: &Path) -> io::Result<PathBuf> {
    let dir = cache_root().join(format!("oracle-{:016x}", fnv(SOURCE)));
    if dir.join("Oracle.class").exists() {
        return Ok(dir);
    }
    let tmp = cache_root().join(unique("tmp", fnv(SOURCE)));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    std::fs::write(tmp.join("Oracle.java"), SOURCE)?;
    // class file version 61 whichever JDK compiles it: the cache is shared by the tests that
    // run JDK 17 and those that run JDK 25 (a JDK 25 build first made JDK 17's oracle fail)
    let out = Command::new(java_tool(java_home, "javac"))
        .args(["--release", "17", "-d"])
        .arg(&tmp)
        .arg(tmp.join("Oracle.java"))
        .output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "javac failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(dir)
}

/// The JDK to use: the given home if it has `bin/java`, else [`crate::hierarchy::find_java_home`].
fn resolve_home(java_home: &Path) -> PathBuf {
    if java_home.join("bin/java").exists() {
        java_home.to_path_buf()
    } else {
        crate::hierarchy::find_java_home().unwrap_or_else(|| java_home.to_path_buf())
    }
}

fn class_files(dir: &Path) -> io::Result<Vec<String>> {
    let mut out: Vec<String> = crate::hierarchy::class_files_under(dir)?
        .into_iter()
        .map(|(rel, _)| rel.trim_end_matches(".class").replace('/', "."))
        .filter(|name| !name.ends_with("module-info"))
        .collect();
    out.sort();
    Ok(out)
}

fn class_line_name(line: &str) -> Option<&str> {
    match line.split('\t').next() {
        Some("C" | "M" | "D") => line.rsplit('\t').next(),
        _ => None,
    }
}

/// Run the harness on a spec. If the JVM dies part-way (a crash on some class), the class it was on
/// gets kind `Other` and a new JVM goes on with the rest (at most 20 restarts).
fn run_spec(
    java_home: &Path,
    spec: &str,
    opts: &[String],
    expected: usize,
) -> io::Result<Vec<Verdict>> {
    let lines: Vec<&str> = spec.lines().filter(|l| !l.is_empty()).collect();
    let mut out: Vec<Verdict> = Vec::with_capacity(expected);
    let mut start = 0usize;
    let mut restarts = 0;
    while start < lines.len() {
        let mut chunk = String::new();
        if !lines[start].starts_with('G') {
            if let Some(g) = lines[..start].iter().rev().find(|l| l.starts_with('G')) {
                chunk.push_str(g);
                chunk.push('\n');
            }
        }
        for l in &lines[start..] {
            chunk.push_str(l);
            chunk.push('\n');
        }
        let n_classes = lines[start..]
            .iter()
            .filter(|l| class_line_name(l).is_some())
            .count();
        let (v, died) = match run_spec_once(java_home, &chunk, opts, n_classes) {
            Ok(v) => (v, String::new()),
            Err(e) if out.is_empty() && restarts == 0 => return Err(e),
            Err(e) => (Vec::new(), e.to_string()),
        };
        // advance past the answered class lines
        let mut answered = 0;
        let mut idx = start;
        while idx < lines.len() && answered < v.len() {
            if class_line_name(lines[idx]).is_some() {
                answered += 1;
            }
            idx += 1;
        }
        out.extend(v);
        while idx < lines.len() && class_line_name(lines[idx]).is_none() {
            idx += 1;
        }
        if idx >= lines.len() {
            break;
        }
        let name = class_line_name(lines[idx]).unwrap_or("?").to_string();
        out.push(Verdict {
            class: name,
            ok: false,
            message: format!("oracle JVM died on this class {died}"),
            kind: VerdictKind::Other,
        });
        restarts += 1;
        start = idx + 1;
        if restarts > 20 {
            for l in &lines[start..] {
                if let Some(n) = class_line_name(l) {
                    out.push(Verdict {
                        class: n.to_string(),
                        ok: false,
                        message: "no verdict: oracle JVM kept dying".into(),
                        kind: VerdictKind::Other,
                    });
                }
            }
            break;
        }
    }
    Ok(out)
}

/// Run the harness once on a spec; JVM options in `opts` (written to an @argfile).
fn run_spec_once(
    java_home: &Path,
    spec: &str,
    opts: &[String],
    expected: usize,
) -> io::Result<Vec<Verdict>> {
    let harness = harness(java_home)?;
    let work = cache_root().join(unique("run", fnv(spec)));
    std::fs::create_dir_all(&work)?;
    let spec_file = work.join("spec.txt");
    std::fs::write(&spec_file, spec)?;
    let mut args: Vec<String> = vec![
        "-Xverify:all".into(),
        "-Xshare:off".into(),
        "-XX:TieredStopAtLevel=1".into(),
    ];
    args.extend(opts.iter().cloned());
    args.push("-cp".into());
    args.push(harness.to_string_lossy().into());
    let argfile = work.join("args.txt");
    let quoted: Vec<String> = args
        .iter()
        .map(|a| format!("\"{}\"", a.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    std::fs::write(&argfile, quoted.join("\n"))?;
    let out = Command::new(java_tool(java_home, "java"))
        .arg(format!("@{}", argfile.display()))
        .arg("Oracle")
        .arg(&spec_file)
        .output()?;
    let _ = std::fs::remove_dir_all(&work);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::with_capacity(expected);
    for line in stdout.lines() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        if f.len() < 3 || f[0] != "V" {
            continue;
        }
        let kind = match f[1] {
            "OK" => VerdictKind::Ok,
            "VERIFY" => VerdictKind::VerifyError,
            "FORMAT" => VerdictKind::FormatError,
            "LINK" => VerdictKind::LinkError,
            _ => VerdictKind::Other,
        };
        v.push(Verdict {
            class: f[2].to_string(),
            ok: kind == VerdictKind::Ok,
            message: f.get(3).unwrap_or(&"").to_string(),
            kind,
        });
    }
    if v.is_empty() && expected > 0 {
        return Err(io::Error::other(format!(
            "oracle JVM produced no verdicts (exit {:?}): {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
                .chars()
                .take(2000)
                .collect::<String>()
        )));
    }
    Ok(v)
}

/// Verify every class in `dir` with `java -Xverify:all`, linking without running `<clinit>`.
///
/// * `modules == false`: `dir` is a class tree, loaded by one URLClassLoader over `dir` + `extra_classpath`.
/// * `modules == true`: `dir/<module>/pkg/C.class`; every module dir is patched in with
///   `--patch-module <module>=dir/<module>` and `--add-modules ALL-SYSTEM`; classes are loaded with
///   `Class.forName(module, name)`. Calls to classes that do not exist (e.g. a probe class) do not matter:
///   verification does not resolve them.
///
/// A class whose verdict is missing (the JVM died) gets kind `Other`.
pub fn run_hotspot(
    java_home: &Path,
    dir: &Path,
    modules: bool,
    extra_classpath: &[PathBuf],
) -> io::Result<Vec<Verdict>> {
    let java_home = resolve_home(java_home);
    let mut spec = String::new();
    let mut opts = Vec::new();
    let mut names = Vec::new();
    if modules {
        let mut mods: Vec<PathBuf> = std::fs::read_dir(dir)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        mods.sort();
        for m in &mods {
            let mname = m
                .file_name()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default();
            opts.push(format!("--patch-module={mname}={}", m.display()));
            for c in class_files(m)? {
                spec.push_str(&format!("M\t{mname}\t{c}\n"));
                names.push(c);
            }
        }
        opts.push("--add-modules=ALL-SYSTEM".into());
        if !extra_classpath.is_empty() {
            // classes patched into named modules can only see extra classes on the boot class path
            let cp = std::env::join_paths(extra_classpath).map_err(io::Error::other)?;
            opts.push(format!("-Xbootclasspath/a:{}", cp.to_string_lossy()));
        }
    } else {
        spec.push_str("G\t");
        spec.push_str(&dir.to_string_lossy());
        for e in extra_classpath {
            spec.push('\t');
            spec.push_str(&e.to_string_lossy());
        }
        spec.push('\n');
        for c in class_files(dir)? {
            spec.push_str(&format!("C\t{c}\n"));
            names.push(c);
        }
    }
    let mut v = run_spec(&java_home, &spec, &opts, names.len())?;
    fill_missing(&mut v, &names);
    Ok(v)
}

fn fill_missing(v: &mut Vec<Verdict>, names: &[String]) {
    if v.len() >= names.len() {
        return;
    }
    let seen: std::collections::HashSet<String> = v.iter().map(|x| x.class.clone()).collect();
    for n in names {
        if !seen.contains(n) {
            v.push(Verdict {
                class: n.clone(),
                ok: false,
                message: "no verdict (JVM died?)".into(),
                kind: VerdictKind::Other,
            });
        }
    }
}

/// Verify many class files in one JVM, each in its own class loader over `shared_classpath` in which the
/// file shadows the class of the same name (so mutants of one class can be judged side by side).
/// `classes`: (class file, binary name). Verdicts come back in the same order.
pub fn run_hotspot_isolated(
    java_home: &Path,
    classes: &[(PathBuf, String)],
    shared_classpath: &[PathBuf],
) -> io::Result<Vec<Verdict>> {
    let java_home = resolve_home(java_home);
    let mut spec = String::from("G");
    for e in shared_classpath {
        spec.push('\t');
        spec.push_str(&e.to_string_lossy());
    }
    spec.push('\n');
    for (f, n) in classes {
        spec.push_str(&format!("D\t{}\t{n}\n", f.display()));
    }
    let v = run_spec(&java_home, &spec, &[], classes.len())?;
    let mut out = Vec::with_capacity(classes.len());
    let mut it = v.into_iter().peekable();
    for (_, n) in classes {
        match it.peek() {
            Some(x) if &x.class == n => out.extend(it.next()),
            _ => out.push(Verdict {
                class: n.clone(),
                ok: false,
                message: "no verdict (JVM died?)".into(),
                kind: VerdictKind::Other,
            }),
        }
    }
    Ok(out)
}
