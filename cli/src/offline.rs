//! Running offline-instrumented programs: the runtime jar (`bci runtime-jar`), the data file the
//! runtime writes at exit rendered by the agent's report writer (`bci report`), and the checks
//! `bci instrument` makes on its paths and input.

use bciagent::options::resolved;
use bciagent::options::Clock;
use bciagent::registry::MethodRec;
use bciagent::report::{self, Snapshot, ThreadData};
use std::io::{Read, Write};
use std::path::Path;

/// Writes the runtime jar: bci/runtime/Probes (+ its thread state) and bci/runtime/Offline, with
/// `Automatic-Module-Name: bci.runtime` (usable on the class path and the module path) and
/// `Premain-Class: bci.runtime.Offline` (a java agent that does nothing: `-javaagent:` puts it on
/// the class path of a `java -jar` run).
pub fn runtime_jar(out: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", out.display());
    // the zip crate's I/O errors say only "i/o error": the OS's reason instead
    let zerr = |e: zip::result::ZipError| err(&crate::io::zip_err(&e));
    // written to a temporary file beside it and renamed over it: a run that fails leaves the
    // previous jar as it was, and a jar hard-linked elsewhere is never written through
    let (staged, file) = crate::io::stage_writer(out)?;
    let mut z = zip::ZipWriter::new(file);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    z.add_directory("META-INF/", opts).map_err(zerr)?;
    z.start_file("META-INF/MANIFEST.MF", opts).map_err(zerr)?;
    let manifest = format!(
        "Manifest-Version: 1.0\r\nCreated-By: bci {}\r\nAutomatic-Module-Name: bci.runtime\r\nPremain-Class: bci.runtime.Offline\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    z.write_all(manifest.as_bytes()).map_err(|e| err(&e))?;
    for (name, bytes) in bciagent::runtime_jar::CLASSES {
        z.start_file(*name, opts).map_err(zerr)?;
        z.write_all(bytes).map_err(|e| err(&e))?;
    }
    // Per-test coverage: JUnit Platform finds the listener through ServiceLoader.
    if bciagent::runtime_jar::CLASSES
        .iter()
        .any(|(n, _)| *n == "bci/runtime/JUnitListener.class")
    {
        z.start_file(
            "META-INF/services/org.junit.platform.launcher.TestExecutionListener",
            opts,
        )
        .map_err(zerr)?;
        z.write_all(b"bci.runtime.JUnitListener\n")
            .map_err(|e| err(&e))?;
    }
    z.finish().map_err(zerr)?;
    staged.commit()
}

/// Whether `output` names the same file or directory as `input` (instrumenting in place would
/// read what it is overwriting), through links, `./` and `..` alike: both resolved as the
/// agent resolves its outputs ([`bciagent::options::resolved`]); and, when both exist, one
/// file under two names (a hard link, a bind mount): the same device and inode.
pub fn same_path(input: &Path, output: &Path) -> bool {
    if resolved(input) == resolved(output) {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(a), Ok(b)) = (std::fs::metadata(input), std::fs::metadata(output)) {
            return a.dev() == b.dev() && a.ino() == b.ino();
        }
    }
    false
}

/// Whether `inner` is strictly below the directory `outer` (both resolved as [`same_path`]
/// resolves them).
pub fn is_below(inner: &Path, outer: &Path) -> bool {
    let (i, o) = (resolved(inner), resolved(outer));
    i != o && i.starts_with(&o)
}

/// Whether the input is a modular jar or directory (a `module-info.class` at its root or under
/// META-INF/versions/N/; for a directory also in a top-level directory, as `javac -d DIR
/// --module-source-path` writes each module: DIR/com.acme/module-info.class): its classes then
/// need a read edge to the runtime's module.
pub fn is_modular(input: &Path) -> bool {
    let modinfo = |name: &str| {
        name == "module-info.class"
            || (name.starts_with("META-INF/versions/") && name.ends_with("/module-info.class"))
    };
    if input.is_dir() {
        let root = |d: &Path| {
            d.join("module-info.class").is_file()
                || std::fs::read_dir(d.join("META-INF/versions")).is_ok_and(|rd| {
                    rd.flatten()
                        .any(|e| e.path().join("module-info.class").is_file())
                })
        };
        // the module layout: each top-level directory holding a module-info.class is a
        // module's root
        return root(input)
            || std::fs::read_dir(input).is_ok_and(|rd| {
                rd.flatten()
                    .any(|e| e.file_type().is_ok_and(|t| t.is_dir()) && root(&e.path()))
            });
    }
    let Ok(f) = std::fs::File::open(input) else {
        return false;
    };
    let Ok(z) = zip::ZipArchive::new(f) else {
        return false;
    };
    let found = z.file_names().any(modinfo);
    found
}

pub struct Recorded {
    pub clock: Clock,
    pub depth: usize,
    pub interval_ms: u64,
    /// Recorded with `-Dbci.thread=y`: each thread's rows apart (the data file's `per-thread`
    /// record); without it all threads are one row.
    pub per_thread: bool,
}

/// Reads the data file the runtime writes at exit (bci/runtime/Offline.dump).
pub fn read_data(path: &Path) -> Result<(Snapshot, Recorded), String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |line: usize, what: &str| format!("{}:{line}: {what}", path.display());
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l.starts_with("bci-data\t") => {
            if l != "bci-data\t1" {
                return Err(bad(
                    1,
                    &format!("unsupported data version {l:?} (expected 1)"),
                ));
            }
        }
        _ => return Err(bad(1, "not a bci data file (no `bci-data` header)")),
    }
    let mut clock = Clock::Wall;
    let mut depth = 4usize;
    let mut interval = 1u64;
    let mut date = String::new();
    let mut per_thread = false;
    let mut methods: Vec<MethodRec> = Vec::new();
    let mut threads = Vec::new();
    let mut thread_name: Option<String> = None;
    let mut totals: Vec<i64> = Vec::new();
    let mut failure = None;
    for (i, l) in lines {
        let n = i + 1;
        let f: Vec<&str> = l.split('\t').collect();
        match f[0] {
            "clock" => {
                clock = match f.get(1) {
                    Some(&"wall") => Clock::Wall,
                    Some(&"sample") => Clock::Sample,
                    Some(&"cpu") => Clock::Cpu,
                    _ => return Err(bad(n, "unknown clock")),
                }
            }
            "interval" => {
                interval = f
                    .get(1)
                    .and_then(|d| d.parse().ok())
                    .filter(|&d| d > 0)
                    .ok_or_else(|| bad(n, "bad interval"))?
            }
            "depth" => {
                depth = f
                    .get(1)
                    .and_then(|d| d.parse().ok())
                    .filter(|&d| d > 0)
                    .ok_or_else(|| bad(n, "bad depth"))?
            }
            "date" => date = f.get(1).unwrap_or(&"").to_string(),
            "per-thread" => {
                per_thread = match f.get(1) {
                    Some(&"y") => true,
                    Some(&"n") => false,
                    _ => return Err(bad(n, "bad per-thread record (expected y or n)")),
                }
            }
            "method" => {
                if f.len() < 7 {
                    return Err(bad(n, "method line with fewer than 7 fields"));
                }
                let id: usize = f[1].parse().map_err(|_| bad(n, "bad method id"))?;
                if id != methods.len() {
                    return Err(bad(
                        n,
                        &format!("method id {id}, expected {}", methods.len()),
                    ));
                }
                methods.push(MethodRec {
                    class: f[2].to_string(),
                    name: f[3].to_string(),
                    desc: f[4].to_string(),
                    source_file: (!f[5].is_empty()).then(|| f[5].to_string()),
                    first_line: f[6].parse::<u32>().ok(),
                });
            }
            "thread" => thread_name = Some(f.get(1).unwrap_or(&"").to_string()),
            // clock=sample: sampled totals per method over all threads, kept with the first
            // entry (as the agent does)
            "totals" => {
                let v: Vec<i64> = f[1..]
                    .iter()
                    .filter(|x| !x.is_empty())
                    .map(|x| x.parse::<i64>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad(n, "bad number in totals"))?;
                totals = v;
            }
            "failure" => failure = Some(f.get(1).unwrap_or(&"").to_string()),
            "data" => {
                let v: Vec<i64> = f[1..]
                    .iter()
                    .map(|x| x.parse::<i64>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| bad(n, "bad number in thread data"))?;
                let t = ThreadData::decode(thread_name.take(), &v)
                    .ok_or_else(|| bad(n, "malformed thread data"))?;
                threads.push(t);
            }
            "" => {}
            other => return Err(bad(n, &format!("unknown record {other:?}"))),
        }
    }
    if totals.iter().any(|&t| t > 0) {
        if threads.is_empty() {
            threads.push(ThreadData::default());
        }
        let first = &mut threads[0].total_ns;
        if first.len() < totals.len() {
            first.resize(totals.len(), 0);
        }
        for (d, t) in first.iter_mut().zip(&totals) {
            *d += (*t).max(0) as u64;
        }
    }
    Ok((
        Snapshot {
            threads,
            methods,
            date,
            uninstrumented_early: 0,
            // what `bci instrument` left original it named when it ran; the data file has no
            // record of it
            left_classes: Vec::new(),
            left_methods: Vec::new(),
            failure,
        },
        Recorded {
            clock,
            depth,
            interval_ms: interval,
            per_thread,
        },
    ))
}

/// The agent's options a cpu=times report takes (the rest steer the run).
const REPORT_OPTIONS: &[&str] = &["thread", "format", "cutoff", "lineno"];

/// What a cpu=times report takes, for its error messages.
pub const REPORT_USAGE: &str = "a cpu=times report takes -o FILE and one argument of options in \
     the agent's syntax: thread=y|n, format=hprof|collapsed|methods, cutoff=N, lineno=y|n \
     (e.g. thread=y,format=collapsed)";

/// Whether a file starts like the data file the runtime jar writes (`bci-data` and a tab).
pub fn is_profile_data(path: &Path) -> bool {
    let mut head = [0u8; 9];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"bci-data\t")
}

/// The options of a cpu=times report, checked: only the report's own (the agent's others
/// steer a run), each valid, none the chosen format would ignore.
pub fn report_options(options: &str) -> Result<bciagent::options::Options, String> {
    for (k, _) in bciagent::options::given(options) {
        if REPORT_OPTIONS.contains(&k) {
            continue;
        }
        return Err(if k == "help" {
            format!("help: the report's options are these; {REPORT_USAGE}")
        } else if bciagent::options::OPTION_NAMES.split(", ").any(|n| n == k) {
            format!("option {k}= is set when the program runs, not in the report; {REPORT_USAGE}")
        } else {
            format!("unknown report option '{k}'; {REPORT_USAGE}")
        });
    }
    let o = bciagent::options::parse(Some(options)).map_err(|e| format!("{e}"))?;
    // options the chosen format would ignore are refused as the agent refuses them
    // (cutoff= and lineno= with format=collapsed|methods, thread= with format=methods)
    o.check_ignored(&bciagent::options::given(options))
        .map_err(|e| format!("{e}"))?;
    Ok(o)
}

/// Renders a data file as the agent would (HPROF text by default); `options` in the agent's
/// syntax (`thread=y,cutoff=0.01,lineno=n`). The agent's other options steer
/// the run (clock, depth: they come from the data file; covfile, verbose …: they do nothing
/// here) and are refused, as are unknown ones, saying what the report takes. `thread=` defaults to how the data
/// was recorded (`-Dbci.thread=`); `thread=n` merges per-thread data; `thread=y` on data
/// recorded without it is refused (its threads are one row: there is nothing to split).
pub fn report(data: &Path, options: &str) -> Result<String, String> {
    let mut o = report_options(options)?;
    let given = |k: &str| {
        bciagent::options::given(options)
            .iter()
            .any(|(n, _)| *n == k)
    };
    let (snap, rec) = read_data(data)?;
    if !given("thread") {
        o.thread = rec.per_thread;
    } else if o.thread && !rec.per_thread {
        return Err(format!(
            "thread=y: {} holds all threads in one row (recorded without -Dbci.thread=y); \
             run the program with -Dbci.thread=y to record each thread's rows",
            data.display()
        ));
    }
    o.clock = rec.clock;
    o.depth = rec.depth;
    o.interval_ms = rec.interval_ms;
    if o.format == bciagent::options::Format::Collapsed && report::reaches_depth(&snap, rec.depth) {
        // the agent records stacks up to MAX_DEPTH frames for collapsed output (depth= not
        // given; deeper calls are folded into their top frames); the runtime jar records what
        // -Dbci.depth said, for whatever report comes later: a call path that reached that
        // many frames had its deeper calls recorded under their top frames only
        let rerun = if rec.depth < bciagent::options::MAX_DEPTH {
            format!(
                "run with -Dbci.depth={} for whole stacks up to that depth",
                bciagent::options::MAX_DEPTH
            )
        } else {
            // (the runtime refuses more, as the agent's depth= does)
            format!(
                "{} frames is the most recorded: deeper stacks stay cut",
                bciagent::options::MAX_DEPTH
            )
        };
        eprintln!(
            "bci: warning: {} holds call paths of the top {} frames (-Dbci.depth={} when it \
             ran) and some reached that depth: each collapsed stack deeper than that is cut \
             there and starts at a frame that is not the program's root; {rerun}",
            data.display(),
            rec.depth,
            rec.depth,
        );
    }
    // the agent's wording, told as it happened without the agent
    Ok(report::render(&o, &snap)
        .replacen(
            "Header for -agentlib:bciagent",
            "Header for the bci runtime jar (offline-instrumented classes, no agent)",
            1,
        )
        .replacen(
            "an agent thread read each profiled thread's CPU time (JVMTI GetThreadCpuTime)",
            "the runtime's sampler thread read each profiled thread's CPU time \
             (ThreadMXBean.getThreadCpuTime)",
            1,
        ))
}
