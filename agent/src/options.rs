//! Agent options in HPROF syntax: `name=value` pairs separated by commas.

use std::fmt;

/// Which clock times calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Probes read no clock: an agent thread samples every thread's shadow stack every
    /// `interval` ms and charges the thread CPU time used since the last sample to the top call
    /// path (self) and to each method on the stack (total).
    Sample,
    /// `System.nanoTime()` at every probe (exact monotonic wall time, ~35 ns per read).
    Wall,
    /// Thread CPU time (CLOCK_THREAD_CPUTIME_ID through a registered native) at every probe.
    Cpu,
}

impl Clock {
    pub fn code(self) -> i32 {
        match self {
            Clock::Sample => 0,
            Clock::Wall => 1,
            Clock::Cpu => 2,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Clock::Sample => "sample",
            Clock::Wall => "wall",
            Clock::Cpu => "cpu",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Hprof,
    Collapsed,
    Methods,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub depth: usize,
    pub file: String,
    pub cutoff: f64,
    pub lineno: bool,
    pub thread: bool,
    pub doe: bool,
    pub verbose: bool,
    pub help: bool,
    pub rules: Option<String>,
    /// Trace events (rules with `trace = true`) as JSON lines to this file.
    pub tracefile: Option<String>,
    /// `traceformat=text`: one readable line per event instead of JSON.
    pub trace_text: bool,
    /// `tracemax=`: the most bytes written to the trace file (0: no limit).
    pub trace_max: u64,
    pub clock: Clock,
    /// Sampling interval of `clock=sample`, in ms (HPROF's `interval=`).
    pub interval_ms: u64,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub format: Format,
    /// `coverage=y`: coverage counters in every selected class, data to `covfile`.
    pub coverage: bool,
    /// `covfile=`: the coverage data file (merged into if it exists).
    pub covfile: String,
    /// `classdump=`: a directory that gets the original bytes of every class covered
    /// (`<internal name>.<hash>.class`), for `bci report --classes` (classes generated at
    /// run time have no file of their own).
    pub classdump: Option<String>,
    /// `cpu=times` given (or implied: without `coverage=y` the agent profiles).
    pub cpu: bool,
    /// `cpu=times` given explicitly (a rules file with only tracing rules then profiles too).
    pub cpu_given: bool,
    /// The first option given (as given) that only shapes the profile's rows (depth=,
    /// thread=, clock=, interval=, cutoff=, lineno=): refused at start when the rules file
    /// turns out to hold tracing rules only and cpu=times is not given (no profile is
    /// written then; [`Options::profile_option_ignored`]).
    pub profile_option: Option<String>,
    /// `compilehuge=y` (default): when coverage counters grow a method past HotSpot's
    /// 8000-byte compile limit, the agent turns `-XX:+DontCompileHugeMethods` off so that the
    /// method can still be JIT-compiled; `n` leaves the flag and names each such method.
    pub compile_huge: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            depth: 4,
            file: "java.hprof.txt".into(),
            cutoff: 0.0001,
            lineno: true,
            thread: false,
            doe: true,
            verbose: false,
            help: false,
            rules: None,
            tracefile: None,
            trace_text: false,
            trace_max: DEFAULT_TRACE_MAX,
            clock: Clock::Sample,
            interval_ms: 1,
            include: Vec::new(),
            exclude: Vec::new(),
            format: Format::Hprof,
            coverage: false,
            covfile: "bci.cov".into(),
            classdump: None,
            cpu: true,
            cpu_given: false,
            profile_option: None,
            compile_huge: true,
        }
    }
}

/// Package prefixes (internal form) that hold every class a JVM loads before VMStart (java.base's
/// java.lang, java.util, java.io, java.security, jdk.internal … on JDK 17; sun.* kept in case)
/// and java.lang's ThreadLocal, which coverage calls without the early hook.
#[cfg(feature = "rewriter")]
const EARLY_PREFIXES: &[&str] = &["java/", "jdk/", "sun/"];

impl Options {
    /// The error for a profile option given to a run that writes no profile: `rules=` holds
    /// tracing rules only (`trace_only`) and cpu=times is not given, so the file= report
    /// has the trace summary and no profile rows to shape (format= still chooses where the
    /// summary goes).
    pub fn profile_option_ignored(&self, trace_only: bool) -> Option<String> {
        // format=methods too: the trace summary is written the same with it
        let methods = (self.format == Format::Methods).then_some("format=methods");
        let p = (self.profile_option.as_deref())
            .or(methods)
            .filter(|_| trace_only && !self.cpu_given)?;
        Some(format!(
            "{p} shapes the cpu=times profile; rules={} has tracing rules only, so this run \
             writes no profile (file= gets the trace summary): give cpu=times as well, or \
             leave it out",
            self.rules.as_deref().unwrap_or("")
        ))
    }

    /// The files this run writes, as (option, path as given): the profile (`file=`, with
    /// cpu=times or a rules file), the coverage data (`covfile=`) and the trace
    /// (`tracefile=`).
    pub fn outputs(&self) -> Vec<(&'static str, &str)> {
        let mut v = Vec::new();
        if self.cpu {
            v.push(("file", self.file.as_str()));
        }
        if self.coverage {
            v.push(("covfile", self.covfile.as_str()));
        }
        if let Some(t) = &self.tracefile {
            v.push(("tracefile", t.as_str()));
        }
        v
    }

    /// Two outputs naming one file would overwrite each other (the profile replaced by the
    /// coverage data, the trace by the profile): refused at start. Paths are compared resolved
    /// ([`resolved`]: links followed, `.` and `..` applied, made absolute), as `bci report`
    /// compares its outputs: `x`, `./x`, `../d/x` run in `d`, `sub/x` with `sub -> .` are one
    /// file.
    fn check_outputs(&self) -> Result<(), OptionError> {
        let outs: Vec<_> = self
            .outputs()
            .into_iter()
            .map(|(o, p)| (o, p, resolved(std::path::Path::new(p))))
            .collect();
        for (k, (a, pa, ra)) in outs.iter().enumerate() {
            for (b, pb, rb) in &outs[k + 1..] {
                if ra == rb {
                    let both = if pa == pb {
                        String::new()
                    } else {
                        format!(" ({})", ra.display())
                    };
                    return Err(OptionError(format!(
                        "{a}={pa} and {b}={pb} name the same file{both}: one would overwrite \
                         the other (give each its own path)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Options given (`given`: name and the option as written) that this run would ignore:
    /// refused, saying what they need, as `file=` with coverage=y alone is ([`parse`]).
    pub fn check_ignored(&self, given: &[(&str, &str)]) -> Result<(), OptionError> {
        let as_given = |name: &str| given.iter().find(|(n, _)| *n == name).map(|(_, p)| *p);
        let err = |m: String| Err(OptionError(m));
        if !self.cpu {
            if let Some(p) = PROFILE_OPTIONS.iter().find_map(|n| as_given(n)) {
                return err(format!(
                    "{p} shapes the cpu=times profile, which coverage=y alone does not write: \
                     give cpu=times or rules= as well, or leave it out"
                ));
            }
        }
        if self.clock != Clock::Sample {
            if let Some(p) = as_given("interval") {
                return err(format!(
                    "{p} is the sampling interval of clock=sample; clock={} reads the clock at \
                     every entry and exit: leave it out (or give clock=sample)",
                    self.clock.name()
                ));
            }
        }
        let format = as_given("format").unwrap_or("format=hprof");
        if self.format != Format::Hprof {
            for (n, what) in [
                ("cutoff", "cuts the TRACE rows of format=hprof"),
                (
                    "lineno",
                    "says whether the TRACE frames of format=hprof show lines",
                ),
            ] {
                if let Some(p) = as_given(n) {
                    return err(format!(
                        "{p} {what}; {format} has none: leave it out (or give format=hprof)"
                    ));
                }
            }
        }
        if self.format == Format::Methods {
            if let Some(p) = as_given("thread") {
                return err(format!(
                    "{p}: thread= chooses whether format=hprof and format=collapsed split \
                     their stacks by thread; \
                     {format} has one row per method, all threads together: leave it out (or \
                     give format=hprof or format=collapsed)"
                ));
            }
        }
        if !self.coverage {
            if let Some(p) = as_given("compilehuge") {
                return err(format!(
                    "{p} is about methods that coverage=y's counters grow past HotSpot's \
                     compile limit: give coverage=y or leave it out"
                ));
            }
        }
        Ok(())
    }

    /// Whether the agent can do without the early class hook, which turns the JVM's
    /// class-data sharing (CDS) off (JDK 17: 54 ms -> 86 ms for a hello world here): a
    /// coverage-only run (no profile, no tracing rules, no rules file) whose `include=`
    /// patterns can match no class in the packages of [`EARLY_PREFIXES`] (application
    /// classes, and JDK classes outside them, e.g. javac's com.sun.tools.javac.*). The classes
    /// loaded before VMStart then pass unseen, and java.lang.Thread gets no field (coverage
    /// finds each thread's arrays through a ThreadLocal). `BCIAGENT_EARLY_HOOK=1` keeps the
    /// early hook (tests, benchmarks).
    #[cfg(feature = "rewriter")]
    pub fn late_hook(&self, no_trace_rules: bool) -> bool {
        self.coverage
            && !self.cpu
            && no_trace_rules
            && self.rules.is_none()
            && !self.include.is_empty()
            && !self.include.iter().any(|p| {
                let g = bci_rewriter::Glob::class(p);
                EARLY_PREFIXES.iter().any(|e| g.may_match_under(e))
            })
            && std::env::var_os("BCIAGENT_EARLY_HOOK").is_none()
    }

    /// Without the `rewriter` feature there is no coverage: always the early hook.
    #[cfg(not(feature = "rewriter"))]
    pub fn late_hook(&self, _no_trace_rules: bool) -> bool {
        false
    }
}

/// The file `p` names, resolved: made absolute (against the current directory), symbolic
/// links followed, `.` and `..` applied as the kernel applies them (`link/..` is the parent of
/// the link's target). An output need not exist yet: its longest existing ancestor is
/// resolved and the rest applied to it (what creating it would create); a link to nothing
/// resolves to where its target would be. `bci report` and `bci instrument` check their
/// outputs with it too (cli/src/offline.rs).
pub fn resolved(p: &std::path::Path) -> std::path::PathBuf {
    use std::path::{Component, PathBuf};
    let mut p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    // a link to nothing (up to 40 of them in a row, as the kernel follows)
    for _ in 0..40 {
        if p.exists() || !p.is_symlink() {
            break;
        }
        let Ok(target) = std::fs::read_link(&p) else {
            break;
        };
        p = match p.parent() {
            Some(d) => d.join(target),
            None => target,
        };
    }
    let comps: Vec<Component<'_>> = p.components().collect();
    for k in (0..=comps.len()).rev() {
        let prefix: PathBuf = comps[..k].iter().collect();
        let Ok(mut r) = prefix.canonicalize() else {
            continue;
        };
        for c in &comps[k..] {
            match c {
                Component::ParentDir => {
                    r.pop();
                }
                Component::Normal(n) => r.push(n),
                _ => {}
            }
        }
        return r;
    }
    // nothing of it exists (not even `/`): as written, `.` left out
    p.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// A bad option: what was wrong and what would have been valid.
#[derive(Debug, PartialEq)]
pub struct OptionError(pub String);

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `tracemax=`'s default: 1 GiB of trace file.
pub const DEFAULT_TRACE_MAX: u64 = 1 << 30;

/// A size: digits with an optional k, m or g suffix (KiB, MiB, GiB).
fn size(name: &str, v: &str) -> Result<u64, OptionError> {
    let bad = || {
        OptionError(format!(
            "bad value for option {name}: '{v}' (valid: bytes, or a number with k, m or g; 0 = no limit)"
        ))
    };
    let (digits, mul) = match v.as_bytes().last().map(|c| c.to_ascii_lowercase()) {
        Some(b'k') => (&v[..v.len() - 1], 1u64 << 10),
        Some(b'm') => (&v[..v.len() - 1], 1 << 20),
        Some(b'g') => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(bad)
}

/// The deepest call path recorded (`depth=`), and the default of `format=collapsed`.
pub const MAX_DEPTH: usize = 64;

pub const OPTION_NAMES: &str =
    "help, cpu, coverage, covfile, classdump, compilehuge, depth, file, cutoff, lineno, thread, doe, verbose, rules, tracefile, traceformat, tracemax, clock, interval, include, exclude, format";

pub const HELP: &str = "\
bciagent usage: java -agentpath:libbciagent.so=[help]|[<option>=<value>, ...]
                (also -agentlib:bciagent=... and -Xrunbciagent:...)

Option Name and Value  Description                    Default
---------------------  -----------                    -------
cpu=times              exact call counts and times    times
depth=<size>           stack trace depth              4 (collapsed: 64)
file=<file>            write data to file             java.hprof.txt
                         %p = process id, %t = start time; a file in use by another
                         JVM: this one writes <file>.<pid>
cutoff=<value>         output cutoff point            0.0001
lineno=y|n             line number in traces?         y
thread=y|n             thread in traces?              n
doe=y|n                dump on exit?                  y
                         n: nothing written at exit (report, coverage data), only on
                            SIGQUIT; a file= made at start and never written is removed
verbose=y|n            log every class decision       n
rules=<file>           rule file (TOML)               built-in cpu-times
                         probe rules replace cpu-times; tracing rules (count/time/trace)
                         alone trace only (add cpu=times for the profile too), with a
                         summary per rule in file=
tracefile=<file>       trace events as JSON lines     none
                         %p and %t as in file=; needed by rules with trace = true
traceformat=json|text  tracefile= lines: JSON or text json
tracemax=<size>        most bytes in tracefile=       1g
                         k/m/g suffixes; 0 = no limit; events past it are counted, not
                         written (the summary says how many)
clock=sample|wall|cpu  how calls are timed (counts are always exact)  sample
                         sample: no clock in probes; every interval= ms an agent thread
                                 charges each thread's CPU time since the last sample to its
                                 current call path (self) and methods on its stack (total)
                         wall:   System.nanoTime() at every entry and exit
                         cpu:    thread CPU time at every entry and exit (~1 us per read)
interval=<ms>          sampling interval (clock=sample)  1
include=<pat>[:<pat>]  only classes matching (glob on dotted names, e.g. java.util.*)
exclude=<pat>[:<pat>]  never these classes
                         include= and exclude= may be repeated (the patterns add up);
                         any other option given twice is refused
format=hprof|collapsed|methods  output format         hprof
                         collapsed: one snapshot per file (SIGQUIT: <file>.1, .2, ...)
coverage=y|n           coverage counters (exact hit counts) n
                         alone: coverage only; with cpu=times (or rules=): both
covfile=<file>         coverage data file (added to)  bci.cov
classdump=<dir>        keep each covered class's original bytes in <dir>, for
                         bci report --classes (classes generated at run time)
compilehuge=y|n        keep covered methods JIT-compilable  y
                         y: a method the counters grow past HotSpot's 8000-byte compile
                            limit turns -XX:+DontCompileHugeMethods off (once, logged)
                         n: the flag stays; each such method is named on stderr

Data is written at VM exit (doe=y; SIGTERM is an exit too) and on SIGQUIT
(kill -QUIT <pid>); with doe=n only on SIGQUIT.
Example: java -agentpath:libbciagent.so=cpu=times,depth=8,file=prof.txt Hello
";

/// Options that only shape the cpu=times profile (ignored without it: coverage=y alone).
const PROFILE_OPTIONS: &[&str] = &[
    "depth", "thread", "clock", "interval", "cutoff", "lineno", "format",
];

/// Options that may be given more than once: their values add up (the others are refused
/// when repeated).
const REPEATABLE: &[&str] = &["include", "exclude"];

fn yes_no(name: &str, v: &str) -> Result<bool, OptionError> {
    match v {
        // y|n only, as the help says and as HPROF takes them (it refuses thread=yes too).
        "y" => Ok(true),
        "n" => Ok(false),
        _ => Err(OptionError(format!(
            "bad value for option {name}: '{v}' (valid: y, n)"
        ))),
    }
}

/// The agent's options: [`parse`], then the options this run would ignore refused, saying
/// what they need ([`Options::check_ignored`]; `bci report` takes [`parse`]: it has options of
/// its own).
pub fn parse_run(s: Option<&str>) -> Result<Options, OptionError> {
    let mut o = parse(s)?;
    let given = given(s.unwrap_or(""));
    o.check_ignored(&given)?;
    o.profile_option = PROFILE_OPTIONS
        .iter()
        .filter(|n| **n != "format")
        .find_map(|n| {
            given
                .iter()
                .find(|(g, _)| g == n)
                .map(|(_, p)| p.to_string())
        });
    Ok(o)
}

/// Each option of an option string as (name, the option as written), in order.
pub fn given(s: &str) -> Vec<(&str, &str)> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| (p.split('=').next().unwrap_or(p), p))
        .collect()
}

/// Parses the option string (`None` or empty = defaults).
pub fn parse(s: Option<&str>) -> Result<Options, OptionError> {
    let mut o = Options::default();
    let mut depth_given = false;
    let mut cpu_given = false;
    let mut file_given = false;
    let mut covfile_given = false;
    // traceformat=, tracemax= as given (in order)
    let mut trace_opts: Vec<&str> = Vec::new();
    // each option given so far, as given (a second one would silently win over the first)
    let mut given: Vec<(&str, &str)> = Vec::new();
    let s = s.unwrap_or("");
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (name, value) = match part.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (part, None),
        };
        if !REPEATABLE.contains(&name) && OPTION_NAMES.split(", ").any(|n| n == name) {
            if let Some((_, first)) = given.iter().find(|(n, _)| *n == name) {
                return Err(OptionError(format!(
                    "option {name} given twice ({first} and {part}): give it once"
                )));
            }
            given.push((name, part));
        }
        let need = |v: Option<&str>| -> Result<String, OptionError> {
            match v {
                Some(v) if !v.is_empty() => Ok(v.to_string()),
                _ => Err(OptionError(format!(
                    "option {name} needs a value ({name}=...)"
                ))),
            }
        };
        match name {
            "help" => {
                if value.is_some() {
                    return Err(OptionError(format!(
                        "option help takes no value ({part}): give help alone for the list of \
                         options"
                    )));
                }
                o.help = true
            }
            "cpu" => {
                cpu_given = true;
                let v = need(value)?;
                if v != "times" {
                    return Err(OptionError(format!(
                        "bad value for option cpu: '{v}' (valid: times; this agent does not sample)"
                    )));
                }
            }
            "depth" => {
                depth_given = true;
                let v = need(value)?;
                o.depth = match v.parse::<usize>() {
                    Ok(d) if (1..=MAX_DEPTH).contains(&d) => d,
                    _ => {
                        return Err(OptionError(format!(
                            "bad value for option depth: '{v}' (valid: an integer from 1 to {MAX_DEPTH})"
                        )))
                    }
                };
            }
            "file" => {
                file_given = true;
                o.file = need(value)?;
            }
            "cutoff" => {
                let v = need(value)?;
                o.cutoff = match v.parse::<f64>() {
                    Ok(c) if (0.0..=1.0).contains(&c) => c,
                    _ => {
                        return Err(OptionError(format!(
                            "bad value for option cutoff: '{v}' (valid: a number from 0 to 1)"
                        )))
                    }
                };
            }
            "lineno" => o.lineno = yes_no(name, &need(value)?)?,
            "thread" => o.thread = yes_no(name, &need(value)?)?,
            "doe" => o.doe = yes_no(name, &need(value)?)?,
            "verbose" => o.verbose = yes_no(name, &need(value)?)?,
            "coverage" => o.coverage = yes_no(name, &need(value)?)?,
            "covfile" => {
                covfile_given = true;
                o.covfile = need(value)?;
            }
            "classdump" => o.classdump = Some(need(value)?),
            "compilehuge" => o.compile_huge = yes_no(name, &need(value)?)?,
            "rules" => o.rules = Some(need(value)?),
            "tracefile" => o.tracefile = Some(need(value)?),
            "tracemax" => {
                o.trace_max = size(name, &need(value)?)?;
                trace_opts.retain(|n| *n != "tracemax");
                trace_opts.push("tracemax");
            }
            "traceformat" => {
                trace_opts.retain(|n| *n != "traceformat");
                trace_opts.push("traceformat");
                let v = need(value)?;
                o.trace_text = match v.as_str() {
                    "json" => false,
                    "text" => true,
                    _ => {
                        return Err(OptionError(format!(
                            "bad value for option traceformat: '{v}' (valid: json, text)"
                        )))
                    }
                };
            }
            "clock" => {
                let v = need(value)?;
                o.clock = match v.as_str() {
                    "sample" | "samples" => Clock::Sample,
                    "wall" | "nano" => Clock::Wall,
                    "cpu" | "thread-cpu" => Clock::Cpu,
                    _ => {
                        return Err(OptionError(format!(
                            "bad value for option clock: '{v}' (valid: sample, wall, cpu)"
                        )))
                    }
                };
            }
            "interval" => {
                let v = need(value)?;
                o.interval_ms = match v.parse::<u64>() {
                    Ok(t) if (1..=10_000).contains(&t) => t,
                    _ => {
                        return Err(OptionError(format!(
                            "bad value for option interval: '{v}' (valid: milliseconds from 1 to 10000)"
                        )))
                    }
                };
            }
            "include" => o.include.extend(patterns("include", &need(value)?)?),
            "exclude" => o.exclude.extend(patterns("exclude", &need(value)?)?),
            "format" => {
                let v = need(value)?;
                o.format = match v.as_str() {
                    "hprof" | "a" => Format::Hprof,
                    "collapsed" => Format::Collapsed,
                    "methods" => Format::Methods,
                    _ => {
                        return Err(OptionError(format!(
                            "bad value for option format: '{v}' (valid: hprof, collapsed, methods)"
                        )))
                    }
                };
            }
            _ => {
                return Err(OptionError(format!(
                    "unknown option '{name}' (valid: {OPTION_NAMES})"
                )))
            }
        }
    }
    // options of the trace file without one would do nothing (tracefile= itself needs a
    // tracing rule: refused at start by the rules' engine)
    if o.tracefile.is_none() && !trace_opts.is_empty() {
        return Err(OptionError(if trace_opts.len() == 1 {
            format!(
                "{}= steers the trace file: give tracefile= (with rules= holding a rule that \
                 says trace = true) or leave it out",
                trace_opts[0]
            )
        } else {
            format!(
                "{}= and {}= steer the trace file: give tracefile= (with rules= holding a rule \
                 that says trace = true) or leave them out",
                trace_opts[0], trace_opts[1]
            )
        }));
    }
    // coverage=y alone records coverage only; cpu=times or a rules file add the profile
    o.cpu = !o.coverage || cpu_given || o.rules.is_some();
    // an output this run does not write would be silently ignored, as would traceformat=
    // without tracefile= (above): refused, saying what it needs
    if covfile_given && !o.coverage {
        return Err(OptionError(
            "covfile= names the coverage data file, which only coverage=y writes: give \
             coverage=y or leave it out"
                .into(),
        ));
    }
    if o.classdump.is_some() && !o.coverage {
        return Err(OptionError(
            "classdump= keeps the classes that coverage=y covers: give coverage=y or leave it \
             out"
            .into(),
        ));
    }
    if file_given && !o.cpu {
        return Err(OptionError(
            "file= names the report of cpu=times (or of rules=), which coverage=y alone does \
             not write (its data goes to covfile=): give cpu=times or rules= as well, or leave \
             it out"
                .into(),
        ));
    }
    o.cpu_given = cpu_given;
    o.check_outputs()?;
    if !depth_given && o.format == Format::Collapsed {
        // a flame graph wants whole stacks, not HPROF's 4-frame traces (which would make every
        // cut stack a root of its own)
        o.depth = MAX_DEPTH;
    }
    Ok(o)
}

/// The class patterns of `include=`/`exclude=` (separated by `:`; empty ones between
/// separators are skipped): a value without any (`include=:`) is refused, since it would
/// otherwise mean no filter at all.
fn patterns(name: &str, v: &str) -> Result<Vec<String>, OptionError> {
    let p: Vec<String> = v
        .split(':')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    if p.is_empty() {
        return Err(OptionError(format!(
            "bad value for option {name}: '{v}' (no pattern: class globs separated by ':', e.g. {name}=com.acme.*:org.x.Y)"
        )));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_without_a_pattern_is_refused() {
        for v in ["include=:", "exclude=::", "cpu=times,include=:"] {
            let e = parse(Some(v)).err().map(|e| e.0).unwrap_or_default();
            assert!(e.contains("no pattern"), "{v}: {e}");
        }
        assert_eq!(
            parse(Some("include=a.*::b.C")).unwrap().include,
            vec!["a.*", "b.C"]
        );
    }

    #[test]
    #[cfg(feature = "rewriter")]
    fn late_hook_only_for_coverage_of_classes_outside_the_jdk() {
        let late = |o: &str| parse(Some(o)).unwrap().late_hook(true);
        assert!(late("coverage=y,include=org.mozilla.*"));
        assert!(late(
            "coverage=y,include=Hello:com.example.*,exclude=java.*"
        ));
        assert!(late("coverage=y,include=jdkfoo.*"));
        assert!(late("coverage=y,include=com.*"));
        assert!(late(
            "coverage=y,include=com.sun.tools.javac.*:javax.crypto.Cipher"
        ));
        // every class, patterns of those packages, starting with a wildcard, or a prefix of one
        for o in [
            "coverage=y",
            "coverage=y,include=java.util.*",
            "coverage=y,include=org.x.*:sun.misc.Unsafe",
            "coverage=y,include=*Test",
            "coverage=y,include=j*",
            "coverage=y,include=?ava.lang.Thread",
            "coverage=y,include=s*",
            // a profile or a rules file: the early hook
            "cpu=times,coverage=y,include=org.mozilla.*",
            "cpu=times,include=org.mozilla.*",
        ] {
            assert!(!late(o), "{o}");
        }
        assert!(!parse(Some("coverage=y,include=org.mozilla.*"))
            .unwrap()
            .late_hook(false));
    }

    #[test]
    fn repeated_options_are_refused_but_include_and_exclude() {
        for (v, first, second) in [
            (
                "cpu=times,clock=sample,clock=wall",
                "clock=sample",
                "clock=wall",
            ),
            ("file=a.txt,depth=2,file=b.txt", "file=a.txt", "file=b.txt"),
            ("depth=2,depth=3", "depth=2", "depth=3"),
            ("depth=2,depth=2", "depth=2", "depth=2"),
            ("thread=y, thread=n", "thread=y", "thread=n"),
            ("help,help", "help", "help"),
        ] {
            let e = parse(Some(v)).err().map(|e| e.0).unwrap_or_default();
            let name = first.split('=').next().unwrap();
            assert_eq!(
                e,
                format!("option {name} given twice ({first} and {second}): give it once"),
                "{v}"
            );
        }
        let o = parse(Some("include=a.*,exclude=b.*,include=c.D,exclude=e.*")).unwrap();
        assert_eq!(o.include, vec!["a.*", "c.D"]);
        assert_eq!(o.exclude, vec!["b.*", "e.*"]);
    }

    #[test]
    fn defaults() {
        let o = parse(None).unwrap();
        assert_eq!(o.depth, 4);
        assert_eq!(o.file, "java.hprof.txt");
        assert_eq!(o.cutoff, 0.0001);
        assert!(o.doe && o.lineno && !o.thread && !o.verbose);
        assert_eq!(o.clock, Clock::Sample);
    }

    #[test]
    fn hprof_syntax() {
        let o = parse(Some("cpu=times,depth=8,file=x.txt,thread=y,clock=wall,include=java.util.*:com.*,exclude=a.B"))
            .unwrap();
        assert_eq!(o.depth, 8);
        assert_eq!(o.file, "x.txt");
        assert!(o.thread);
        assert_eq!(o.clock, Clock::Wall);
        assert_eq!(o.include, vec!["java.util.*", "com.*"]);
        assert_eq!(o.exclude, vec!["a.B"]);
    }

    #[test]
    fn two_outputs_on_one_file_are_refused() {
        // the profile would be replaced by the coverage data, the trace by the profile
        for (opts, a, b) in [
            (
                "cpu=times,coverage=y,covfile=x,file=x",
                "file=x",
                "covfile=x",
            ),
            (
                "rules=r.toml,tracefile=same.txt,file=same.txt",
                "file=same.txt",
                "tracefile=same.txt",
            ),
            (
                "coverage=y,covfile=./t,tracefile=t",
                "covfile=./t",
                "tracefile=t",
            ),
            (
                "tracefile=java.hprof.txt",
                "file=java.hprof.txt",
                "tracefile=java.hprof.txt",
            ),
        ] {
            let e = parse(Some(opts)).unwrap_err().0;
            assert!(
                e.contains(a) && e.contains(b) && e.contains("name the same file"),
                "{opts}: {e}"
            );
        }
        let cwd = std::env::current_dir().unwrap();
        let abs = format!("coverage=y,covfile={}/c,tracefile=c", cwd.display());
        assert!(parse(Some(&abs)).is_err(), "{abs}");
        // distinct files are fine
        for ok in [
            "cpu=times,coverage=y,covfile=x.cov,file=x.txt",
            "coverage=y,covfile=a/x,tracefile=b/x",
        ] {
            assert!(parse(Some(ok)).is_ok(), "{ok}");
        }
    }

    #[test]
    fn outputs_on_one_file_are_refused_however_spelled() {
        // not compared as written: `..` back into the directory, a link to it, and `..` out
        // of a link (the parent of its target, not of the link) name one file
        let d = std::env::temp_dir().join(format!("bciagent-opts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("o1")).unwrap();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::os::unix::fs::symlink(".", d.join("o1/sub")).unwrap();
        std::os::unix::fs::symlink("a/b", d.join("link")).unwrap();
        let o1 = d.join("o1").display().to_string();
        let top = d.display().to_string();
        for (opts, a, b, same) in [
            (
                format!("cpu=times,file={o1}/x,covfile={o1}/../o1/x,coverage=y"),
                format!("file={o1}/x"),
                format!("covfile={o1}/../o1/x"),
                format!("{o1}/x"),
            ),
            (
                format!("cpu=times,file={o1}/x,covfile={o1}/sub/x,coverage=y"),
                format!("file={o1}/x"),
                format!("covfile={o1}/sub/x"),
                format!("{o1}/x"),
            ),
            (
                format!("rules=r.toml,file={top}/a/same.txt,tracefile={top}/link/../same.txt"),
                format!("file={top}/a/same.txt"),
                format!("tracefile={top}/link/../same.txt"),
                format!("{top}/a/same.txt"),
            ),
            (
                // not there yet: the rest applied to the ancestor that is
                format!("rules=r.toml,file={top}/new/x,tracefile={top}/new/./y/../x"),
                format!("file={top}/new/x"),
                format!("tracefile={top}/new/./y/../x"),
                format!("{top}/new/x"),
            ),
        ] {
            let e = parse(Some(&opts)).unwrap_err().0;
            assert_eq!(
                e,
                format!(
                    "{a} and {b} name the same file ({same}): one would overwrite the other \
                     (give each its own path)"
                ),
                "{opts}"
            );
        }
        // lexically `link/../same.txt` is `same.txt` beside `link`, but the kernel goes up
        // from a/b: another file
        assert!(parse(Some(&format!(
            "rules=r.toml,file={top}/same.txt,tracefile={top}/link/../same.txt"
        )))
        .is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn errors_name_option_and_valid_values() {
        let e = parse(Some("depht=3")).unwrap_err().0;
        assert!(e.contains("depht") && e.contains("depth"), "{e}");
        let e = parse(Some("clock=sundial")).unwrap_err().0;
        assert!(
            e.contains("clock") && e.contains("sample, wall, cpu"),
            "{e}"
        );
        let e = parse(Some("cpu=samples")).unwrap_err().0;
        assert!(e.contains("cpu") && e.contains("times"), "{e}");
        assert!(parse(Some("depth=0")).is_err());
        assert!(parse(Some("lineno=maybe")).is_err());
        for bad in [
            "thread=yes",
            "thread=no",
            "doe=yes",
            "verbose=no",
            "lineno=Y",
        ] {
            let e = parse(Some(bad)).unwrap_err().0;
            assert!(e.contains("(valid: y, n)"), "{bad}: {e}");
        }
        assert!(parse(Some("file=")).is_err());
        let e = parse(Some("traceformat=xml")).unwrap_err().0;
        assert_eq!(
            e,
            "bad value for option traceformat: 'xml' (valid: json, text)"
        );
        let traced = |o: &str| parse(Some(&format!("tracefile=t.jsonl,{o}"))).unwrap();
        assert!(traced("traceformat=text").trace_text);
        assert_eq!(parse(None).unwrap().trace_max, 1 << 30);
        assert_eq!(traced("tracemax=300").trace_max, 300);
        assert_eq!(traced("tracemax=64k").trace_max, 64 << 10);
        assert_eq!(traced("tracemax=2M").trace_max, 2 << 20);
        assert_eq!(traced("tracemax=0").trace_max, 0);
        for bad in [
            "tracemax=",
            "tracemax=k",
            "tracemax=1.5g",
            "tracemax=-1",
            "tracemax=1t",
            "tracemax=99999999999999g",
        ] {
            let e = parse(Some(bad)).unwrap_err().0;
            assert!(
                e.contains("option tracemax") || e.contains("tracemax"),
                "{bad}: {e}"
            );
        }
        assert!(parse(Some("tracefile=")).is_err());
        assert!(parse(Some("depth=65")).is_err());
    }

    #[test]
    fn trace_file_options_without_a_trace_file_are_refused() {
        // they steer what tracefile= gets; without it no event is written (summary only)
        let how = "give tracefile= (with rules= holding a rule that says trace = true)";
        for (opts, want) in [
            (
                "traceformat=text",
                format!("traceformat= steers the trace file: {how} or leave it out"),
            ),
            (
                "rules=r.toml,tracemax=1k",
                format!("tracemax= steers the trace file: {how} or leave it out"),
            ),
            (
                "traceformat=json,tracemax=0",
                format!("traceformat= and tracemax= steer the trace file: {how} or leave them out"),
            ),
        ] {
            assert_eq!(parse(Some(opts)).unwrap_err().0, want, "{opts}");
        }
        let o = parse(Some(
            "rules=r.toml,tracefile=t.jsonl,traceformat=text,tracemax=1k",
        ))
        .unwrap();
        assert!(o.trace_text);
        assert_eq!(o.trace_max, 1 << 10);
    }

    #[test]
    fn coverage_alone_or_with_cpu_times() {
        let o = parse(Some("coverage=y")).unwrap();
        assert!(o.coverage && !o.cpu);
        assert_eq!(o.covfile, "bci.cov");
        let o = parse(Some("coverage=y,cpu=times,covfile=a.cov")).unwrap();
        assert!(o.coverage && o.cpu);
        assert_eq!(o.covfile, "a.cov");
        let o = parse(None).unwrap();
        assert!(!o.coverage && o.cpu);
        assert!(parse(Some("coverage=yes"))
            .unwrap_err()
            .0
            .contains("(valid: y, n)"));
        assert!(parse(Some("covfile=")).is_err());
    }

    #[test]
    fn outputs_the_run_does_not_write_are_refused() {
        // silently ignored before: covfile= without coverage=y, file= with coverage=y alone
        let cov = "covfile= names the coverage data file, which only coverage=y writes: give \
                   coverage=y or leave it out";
        let prof = "file= names the report of cpu=times (or of rules=), which coverage=y alone \
                    does not write (its data goes to covfile=): give cpu=times or rules= as \
                    well, or leave it out";
        for (opts, want) in [
            ("covfile=a.cov", cov),
            ("cpu=times,covfile=a.cov", cov),
            ("rules=r.toml,covfile=a.cov,coverage=n", cov),
            ("file=a,covfile=b,coverage=y", prof),
            ("coverage=y,file=x.txt", prof),
        ] {
            assert_eq!(parse(Some(opts)).unwrap_err().0, want, "{opts}");
        }
        for ok in [
            "coverage=y,covfile=b",
            "cpu=times,coverage=y,covfile=b,file=a",
            "rules=r.toml,coverage=y,covfile=b,file=a",
            "file=a",
        ] {
            assert!(parse(Some(ok)).is_ok(), "{ok}");
        }
    }

    #[test]
    fn options_the_run_would_ignore_are_refused() {
        // accepted before, and without effect
        let prof = |p: &str| {
            format!(
                "{p} shapes the cpu=times profile, which coverage=y alone does not write: give \
                 cpu=times or rules= as well, or leave it out"
            )
        };
        for (opts, want) in [
            (
                "cpu=times,clock=wall,interval=5",
                "interval=5 is the sampling interval of clock=sample; clock=wall reads the \
                 clock at every entry and exit: leave it out (or give clock=sample)"
                    .to_string(),
            ),
            (
                "interval=2,clock=cpu",
                "interval=2 is the sampling interval of clock=sample; clock=cpu reads the \
                 clock at every entry and exit: leave it out (or give clock=sample)"
                    .to_string(),
            ),
            (
                "format=collapsed,cutoff=0.5",
                "cutoff=0.5 cuts the TRACE rows of format=hprof; format=collapsed has none: \
                 leave it out (or give format=hprof)"
                    .to_string(),
            ),
            (
                "format=collapsed,lineno=n",
                "lineno=n says whether the TRACE frames of format=hprof show lines; \
                 format=collapsed has none: leave it out (or give format=hprof)"
                    .to_string(),
            ),
            (
                "cutoff=0,format=methods",
                "cutoff=0 cuts the TRACE rows of format=hprof; format=methods has none: leave \
                 it out (or give format=hprof)"
                    .to_string(),
            ),
            (
                "format=methods,thread=y",
                "thread=y: thread= chooses whether format=hprof and format=collapsed split \
                 their stacks by thread; \
                 format=methods has one row per method, all threads together: leave it out (or \
                 give format=hprof or format=collapsed)"
                    .to_string(),
            ),
            ("coverage=y,depth=8", prof("depth=8")),
            ("coverage=y,thread=y", prof("thread=y")),
            ("clock=wall,coverage=y", prof("clock=wall")),
            ("coverage=y,format=methods", prof("format=methods")),
            ("coverage=y,interval=5", prof("interval=5")),
            (
                "cpu=times,compilehuge=n",
                "compilehuge=n is about methods that coverage=y's counters grow past \
                 HotSpot's compile limit: give coverage=y or leave it out"
                    .to_string(),
            ),
        ] {
            assert_eq!(parse_run(Some(opts)).unwrap_err().0, want, "{opts}");
        }
        // help takes no value (help=x was help)
        assert_eq!(
            parse(Some("help=x")).unwrap_err().0,
            "option help takes no value (help=x): give help alone for the list of options"
        );
        assert!(parse_run(Some("help")).unwrap().help);
        for ok in [
            "clock=sample,interval=5",
            "interval=5",
            "format=hprof,cutoff=0.5,lineno=n,thread=y",
            "format=collapsed,thread=y,depth=8",
            "format=methods,clock=wall,depth=8",
            "coverage=y,cpu=times,depth=8,format=collapsed",
            "rules=r.toml,coverage=y,clock=wall",
            "coverage=y,compilehuge=n,doe=n,verbose=y",
        ] {
            assert!(parse_run(Some(ok)).is_ok(), "{ok}");
        }
    }

    #[test]
    fn collapsed_defaults_to_full_depth() {
        assert_eq!(parse(Some("format=collapsed")).unwrap().depth, MAX_DEPTH);
        assert_eq!(parse(Some("depth=3,format=collapsed")).unwrap().depth, 3);
        assert_eq!(parse(Some("format=hprof")).unwrap().depth, 4);
    }
}
