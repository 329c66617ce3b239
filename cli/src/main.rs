//! `bci`: offline instrumentation, verification and rule checking.
#![forbid(unsafe_code)]

/// `print!` and `println!` on stdout that end the program quietly when its reader went away
/// (`bci … | head`) instead of panicking: see [`io::emit`].
macro_rules! out {
    ($($t:tt)*) => { $crate::io::emit(format_args!($($t)*)) };
}
macro_rules! outln {
    ($($t:tt)*) => { $crate::io::emit(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprint!` and `eprintln!` that never panic: a message to a closed or full stderr is lost
/// and the work goes on (std's panicked, exit 101 with no output written, e.g. under
/// `bci … 2>&1 | head` once head had quit). Textually before the modules, so it is theirs too.
macro_rules! eprint {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($t)*);
    }};
}
macro_rules! eprintln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

mod coverage;
mod io;
mod offline;
mod progress;
mod report;
mod rules_cmd;

use bci_rewriter::{instrument_methods, MethodInfo, Options, Outcome, ProbeRegistry, Rules};
use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "bci",
    version,
    about = "Rewrite JVM class files with probes, verify them, check rule files"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Instrument every class of a directory or jar into another directory or jar.
    Instrument {
        /// Input: a directory of classes or a .jar/.war/.ear/.zip (any case).
        input: PathBuf,
        /// Output: a directory, or a .jar/.war/.ear/.zip file.
        output: PathBuf,
        /// Rule file (TOML); default: the built-in cpu-times rules.
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Probe class the injected calls go to (internal name), overriding the rules.
        #[arg(long)]
        runtime: Option<String>,
        /// Only classes matching these dotted globs (repeatable).
        #[arg(long)]
        include: Vec<String>,
        /// Skip classes matching these dotted globs (repeatable).
        #[arg(long)]
        exclude: Vec<String>,
        /// Encode every branch in its wide form (exercises jump widening; a testing switch
        /// for the cpu=times probes, not with --coverage).
        #[arg(long)]
        force_wide: bool,
        /// Write the probe-id map (id, class, method, descriptor) to this file. With the
        /// runtime bci/runtime/Probes (the default) ids are handed out at run time and the
        /// first column is only the method's order in this run.
        #[arg(long)]
        map: Option<PathBuf>,
        /// Exit with status 1 if any class could not be instrumented (also one instrumented
        /// already for the other use: cpu=times probes asked for, coverage counters found, or
        /// the reverse), or, with --coverage, any method was left without counters.
        #[arg(long)]
        strict: bool,
        /// Coverage counters instead of cpu=times probes (every method, exact hit counts);
        /// run the output with the runtime jar (bci runtime-jar), which writes bci.cov at exit
        /// (-Dbci.covfile=), and make the report with bci report bci.cov --classes IN.
        #[arg(long, conflicts_with_all = ["rules", "runtime", "map", "force_wide"])]
        coverage: bool,
    },
    /// Write the runtime jar that offline-instrumented programs run with (bci/runtime/Probes and
    /// Offline): `java -cp app.jar:bci-runtime.jar Main` writes bci.data at exit.
    RuntimeJar {
        /// The jar to write, e.g. bci-runtime.jar.
        output: PathBuf,
    },
    /// Coverage: `bci report DATA... --classes PATH [--classes PATH]...` merges the data files
    /// (bci.cov) and writes a console summary and the reports asked for. cpu=times: `bci
    /// report bci.data [OPTIONS]` renders the data file an offline-instrumented program wrote
    /// as the agent's report (HPROF cpu=times text by default).
    Report {
        /// Coverage data files (bci.cov; counts add up), or one bci.data followed by report
        /// options in the agent's syntax: thread=y, format=hprof|collapsed|methods, cutoff=,
        /// lineno=n (the options marked "Coverage" apply to coverage data only).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Write the report (cpu=times) or the console summary (coverage) here instead of
        /// stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Coverage: a directory, jar or class file of the original classes that ran; one path
        /// per flag, repeat it for more (--classes a.jar --classes b/classes).
        #[arg(long)]
        classes: Vec<PathBuf>,
        /// Coverage: a source root (for the HTML source pages and the LCOV/Cobertura paths); one
        /// per flag, repeatable.
        #[arg(long)]
        sources: Vec<PathBuf>,
        /// Coverage: only classes matching these dotted globs (repeatable).
        #[arg(long)]
        include: Vec<String>,
        /// Coverage: leave out classes matching these dotted globs (repeatable).
        #[arg(long)]
        exclude: Vec<String>,
        /// Coverage: the report's name (default "bci coverage").
        #[arg(long)]
        title: Option<String>,
        /// Coverage: write JaCoCo XML (report.dtd).
        #[arg(long)]
        xml: Option<PathBuf>,
        /// Coverage: write Cobertura XML (coverage-04.dtd) with exact line hits.
        #[arg(long)]
        cobertura: Option<PathBuf>,
        /// Coverage: write an LCOV tracefile with exact counts.
        #[arg(long)]
        lcov: Option<PathBuf>,
        /// Coverage: write JaCoCo-style CSV (one row per class).
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Coverage: write an HTML report into this directory.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Coverage: for each line, the tests that ran it (data recorded per test by
        /// bci.runtime.Cov.begin/end or its JUnit listener): listed on the console, in the HTML
        /// line tooltips, one LCOV TN: section per test.
        #[arg(long)]
        per_test: bool,
        /// Coverage: the encoding of the source files (as javac's -encoding): UTF-8 (the
        /// default; a file that is not is read as windows-1252, said once), ISO-8859-1
        /// (latin1), windows-1252 (Cp1252), US-ASCII.
        #[arg(long, value_name = "NAME")]
        source_encoding: Option<String>,
    },
    /// Sum coverage data files (counts add up exactly; the same class from two builds is an
    /// error unless --ignore-stale).
    #[command(
        override_usage = "bci merge DATA... --output <OUTPUT> [--ignore-stale [--classes PATH]...]"
    )]
    Merge {
        /// Coverage data files (bci.cov); at least one.
        #[arg(value_name = "DATA")]
        inputs: Vec<PathBuf>,
        /// The merged data file (written through a temporary file renamed into place; it may
        /// be one of the inputs).
        #[arg(short, long)]
        output: PathBuf,
        /// Of a class with data of several builds, keep one instead of failing: the build under
        /// --classes, else the first input's (an input with two builds of it is then an error);
        /// the data left out is named.
        #[arg(long)]
        ignore_stale: bool,
        /// With --ignore-stale: a directory or jar of the classes whose builds to keep (as bci
        /// report's --classes); repeatable.
        #[arg(long, requires = "ignore_stale")]
        classes: Vec<PathBuf>,
    },
    /// Verify every class of a directory or jar (independent verifier, no JVM needed).
    Verify(bci_verify::cli::VerifyArgs),
    /// Rule files: check them (check) and say what they select in classes (explain).
    Rules {
        #[command(subcommand)]
        cmd: RulesCmd,
    },
}

#[derive(Subcommand)]
enum RulesCmd {
    /// Parse rule files and report errors as file:line:col. By default a file is checked as
    /// the agent reads it (rules=); --offline checks it as bci instrument --rules reads it.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Check the files for bci instrument --rules: any [runtime] class (the agent provides
        /// only bci/runtime/Probes and java/lang/BciProbes), probe rules only (tracing rules
        /// run under the agent).
        #[arg(long)]
        offline: bool,
    },
    /// Per tracing rule, the methods and locations it matches in the classpath (and the rules
    /// that match nothing). A `line` or `call` found in no matched method is an error.
    Explain {
        file: PathBuf,
        /// Jars, class directories, JDK module files (.jmod) and a JDK's lib/modules,
        /// separated by ':'.
        #[arg(long, required = true)]
        classpath: String,
    },
}

#[derive(Default)]
struct Registry {
    map: Vec<String>,
    /// N while instrumenting `META-INF/versions/N/` of a multi-release jar.
    release: Option<u32>,
}

impl ProbeRegistry for Registry {
    fn register(&mut self, m: &MethodInfo<'_>) -> u32 {
        let id = self.map.len() as u32;
        let mut line = format!("{id}\t{}\t{}\t{}", m.class, m.name, m.desc);
        if let Some(n) = self.release {
            line.push_str(&format!("\t{n}"));
        }
        self.map.push(line);
        id
    }
}

/// The options of a coverage report (`bci report bci.cov …`) given in `a`, as written on the
/// command line.
fn coverage_options_given(a: &report::Args<'_>) -> Vec<&'static str> {
    [
        ("--classes", !a.classes.is_empty()),
        ("--sources", !a.sources.is_empty()),
        ("--include", !a.include.is_empty()),
        ("--exclude", !a.exclude.is_empty()),
        ("--title", a.title.is_some()),
        ("--xml", a.xml.is_some()),
        ("--cobertura", a.cobertura.is_some()),
        ("--lcov", a.lcov.is_some()),
        ("--csv", a.csv.is_some()),
        ("--html", a.html.is_some()),
        ("--per-test", a.per_test),
        ("--source-encoding", a.source_encoding.is_some()),
    ]
    .into_iter()
    .filter(|(_, given)| *given)
    .map(|(o, _)| o)
    .collect()
}

/// `bci report`: coverage data (bci.cov: `a`) or one cpu=times data file (bci.data) and its
/// options; each kind's options refused for the other, saying what applies. Returns the text
/// and whether it names errors (a coverage report with classes it could not analyse: exit 1).
fn report_cmd(inputs: &[PathBuf], a: &report::Args<'_>) -> Result<(String, bool), String> {
    let first = &inputs[0];
    if std::fs::metadata(first).is_ok_and(|m| m.is_file() && m.len() == 0) {
        // neither kind of data: say what it is rather than which header it lacks
        return Err(format!(
            "{}: empty file: no data was written to it (the run ended before its data was \
             written, or it was never a data file)",
            first.display()
        ));
    }
    let coverage_opts = coverage_options_given(a);
    let profile = offline::is_profile_data(first);
    if !profile
        && (coverage::is_coverage_file(first)
            || !coverage_opts.is_empty()
            || coverage::class_path_kind(first).is_some())
    {
        for p in inputs {
            let s = p.display().to_string();
            if !p.exists() && s.contains('=') {
                return Err(format!(
                    "{s}: options in the agent's syntax apply to cpu=times data (bci.data) \
                     only; a coverage report takes --classes, --sources, --include, \
                     --exclude, --title, --xml, --cobertura, --lcov, --csv, --html, \
                     --per-test, --source-encoding, -o"
                ));
            }
            if offline::is_profile_data(p) {
                return Err(format!(
                    "{s}: cpu=times data, not coverage data: report it on its own (bci report \
                     {s})"
                ));
            }
        }
        return report::run(a);
    }
    if profile && !coverage_opts.is_empty() {
        return Err(format!(
            "{}: cpu=times data: {} {} to coverage data (bci.cov) only; {}",
            first.display(),
            coverage_opts.join(", "),
            if coverage_opts.len() == 1 {
                "applies"
            } else {
                "apply"
            },
            offline::REPORT_USAGE
        ));
    }
    // a data file after the first (its options argument names no file)
    if let Some(p) = inputs[1..].iter().find(|p| p.is_file()) {
        return Err(format!(
            "{}: a second data file: bci report renders one cpu=times data file (profiles \
             are not merged; report each on its own); {}",
            p.display(),
            offline::REPORT_USAGE
        ));
    }
    if inputs.len() > 2 {
        // several option arguments (thread=n format=methods): one, comma-separated
        let joined: Vec<String> = inputs[1..]
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        // never suggest a string that would be refused itself (format=methods thread=y)
        if let Err(e) = offline::report_options(&joined.join(",")) {
            // two things said apart: how options are given, and why these are refused anyway
            return Err(format!(
                "{}: {} arguments of options, not one: bci report takes its options as one \
                 comma-separated argument; and together these are refused: {e}",
                first.display(),
                inputs.len() - 1,
            ));
        }
        return Err(format!(
            "{}: {} arguments of options, not one: {}; write them as one, comma-separated \
             ({})",
            first.display(),
            inputs.len() - 1,
            offline::REPORT_USAGE,
            joined.join(",")
        ));
    }
    let options = inputs
        .get(1)
        .map_or(String::new(), |o| o.display().to_string());
    offline::report(first, &options).map(|t| (t, false))
}

/// Refuses, before anything is written, an output of `bci report` that is one of its inputs
/// (a data file, a `--classes` jar or directory, a `--sources` root: it would be overwritten)
/// or the path of another output (one report would overwrite the other), naming both. Paths
/// are compared resolved (links, `./`, `..`), as `bci instrument` compares its input and
/// output.
fn check_report_paths(
    inputs: &[PathBuf],
    a: &report::Args<'_>,
    output: Option<&std::path::Path>,
) -> Result<(), String> {
    let ins: Vec<(&str, &PathBuf)> = inputs
        .iter()
        .map(|p| ("data file", p))
        .chain(a.classes.iter().map(|p| ("--classes path", p)))
        .chain(a.sources.iter().map(|p| ("--sources root", p)))
        .filter(|(_, p)| p.exists())
        .collect();
    let outs: Vec<(&str, &std::path::Path)> = [
        ("--xml", a.xml),
        ("--cobertura", a.cobertura),
        ("--lcov", a.lcov),
        ("--csv", a.csv),
        ("--html", a.html),
        ("-o", output),
    ]
    .into_iter()
    .filter_map(|(o, p)| Some((o, p?)))
    .collect();
    // every output can be made (not a directory; no file on the way to it), before any is
    // written: all of them or none
    for (opt, out) in &outs {
        io::check_output(opt, out, *opt == "--html")?;
    }
    for (k, (opt, out)) in outs.iter().enumerate() {
        if let Some((what, input)) = ins.iter().find(|(_, i)| offline::same_path(i, out)) {
            return Err(format!(
                "{opt} {} is the {what} {}: the report would overwrite it; write it elsewhere",
                out.display(),
                input.display()
            ));
        }
        if let Some((first, path)) = outs[..k]
            .iter()
            .find(|(_, p)| p == out || offline::same_path(p, out))
        {
            return Err(format!(
                "{first} {} and {opt} {} are one file: one report would overwrite the other; \
                 give each its own path",
                path.display(),
                out.display()
            ));
        }
    }
    Ok(())
}

/// Refuses, before anything is written, an output of `bci instrument` (OUT, --map) that is
/// one of its inputs (IN, the --rules file) or the other output, naming both: it would be
/// overwritten (`--map in.jar` replaced the input jar with the map). Compared as
/// [`offline::same_path`] compares them (links, hard links).
fn check_instrument_paths(
    input: &std::path::Path,
    output: &std::path::Path,
    rules: Option<&std::path::Path>,
    map: Option<&std::path::Path>,
) -> Result<(), String> {
    if offline::same_path(input, output) {
        // named both ways when they are written apart (a link, a hard link, `dir/./x`)
        let input = if input == output {
            String::new()
        } else {
            format!(" {}", input.display())
        };
        return Err(format!(
            "{}: output is the input{input}; write the instrumented copy elsewhere",
            output.display()
        ));
    }
    let ins = [("input", Some(input)), ("--rules file", rules)];
    let ins = ins.iter().filter_map(|(w, p)| Some((w, (*p)?)));
    if let Some(r) = rules.filter(|r| offline::same_path(r, output)) {
        return Err(format!(
            "{}: output is the --rules file {}: it would be overwritten; write the \
             instrumented copy elsewhere",
            output.display(),
            r.display()
        ));
    }
    if let Some(m) = map {
        for (what, p) in ins.chain([(&"output", output)]) {
            if offline::same_path(p, m) {
                return Err(format!(
                    "--map {} is the {what} {}: the map would overwrite it; write the map \
                     elsewhere",
                    m.display(),
                    p.display()
                ));
            }
        }
    }
    Ok(())
}

/// Refuses a glob that would silently match nothing; the message names option and pattern.
fn check_globs(option: &str, pats: &[String]) -> Result<(), String> {
    for p in pats {
        bci_rewriter::Glob::check(p).map_err(|e| format!("bci: {option} '{p}': bad glob: {e}"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Instrument {
            input,
            output,
            rules,
            runtime,
            include,
            exclude,
            force_wide,
            map,
            strict,
            coverage,
        } => {
            let mut r = match &rules {
                Some(p) => match std::fs::read(p) {
                    Ok(src) => match Rules::parse_bytes(&src, &p.display().to_string()) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("bci: {e}");
                            return ExitCode::from(2);
                        }
                    },
                    Err(e) => {
                        eprintln!("bci: {}: {e}", p.display());
                        return ExitCode::from(2);
                    }
                },
                None => Rules::cpu_times(),
            };
            if let Some(p) = &rules {
                if let Err(e) = rules_cmd::refuse_trace_rules(p, &r) {
                    eprintln!("bci: {e}");
                    return ExitCode::from(2);
                }
            }
            if let Some(rt) = &runtime {
                if !bci_rewriter::is_internal_class_name(rt) {
                    eprintln!(
                        "bci: --runtime {rt}: expected a class name in internal form, like bci/runtime/Probes{}",
                        if rt.contains('.') && !rt.contains('/') {
                            format!(" (here: {})", rt.replace('.', "/"))
                        } else {
                            String::new()
                        }
                    );
                    return ExitCode::from(2);
                }
                r = r.with_runtime(rt);
            }
            if let Err(e) =
                check_globs("--include", &include).and_then(|()| check_globs("--exclude", &exclude))
            {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
            // the rules before --include/--exclude: what those left out is told apart from
            // what the rules never select (bci's own runtime classes; a rule file's classes)
            let unfiltered = r.clone();
            let r = r.with_filters(&include, &exclude);
            if let Err(e) =
                check_instrument_paths(&input, &output, rules.as_deref(), map.as_deref())
            {
                eprintln!("bci: {e}");
                return ExitCode::from(2);
            }
            if input.is_dir() && offline::is_below(&output, &input) {
                eprintln!(
                    "bci: {}: the output is inside the input {}: each run would take the last \
                     one's output for input (and nest it one level deeper); write it elsewhere",
                    output.display(),
                    input.display()
                );
                return ExitCode::from(2);
            }
            // the runtime jar's Probes: ids handed out at run time (bci/runtime/Offline)
            let runtime_ids = coverage || r.runtime_class() == "bci/runtime/Probes";
            // the runtime jar's Probes (and the agent's forwarder) take the agent's form:
            // leafEnter/leafExit in pure leaves, enterT's token for exitT/unwindT elsewhere
            let builtin = !coverage && r.runtime_class() == "bci/runtime/Probes";
            let opts = Options {
                force_wide_jumps: force_wide,
                marker: true,
                runtime_ids,
                module_reads: runtime_ids && offline::is_modular(&input),
                leaf_probes: builtin,
                frame_tokens: builtin,
                // a method that cannot take probes stays original, not its whole class (as
                // under the agent)
                method_fallback: true,
                ..Default::default()
            };
            let mut marked = 0usize;
            // of which instrumented for the other use (cpu=times probes or coverage counters)
            let mut other_kind = 0usize;
            let mut reg = Registry::default();
            let (mut classes, mut rewritten, mut failed) = (0usize, 0usize, 0usize);
            let (mut no_code, mut not_selected) = (0usize, 0usize);
            // classes bci never instruments (its runtime's) and classes a rule file leaves out
            let (mut runtime_own, mut not_in_rules) = (0usize, 0usize);
            // the --rules file's own runtime class (not bci's), found among the inputs
            let mut rules_runtime = 0usize;
            let runtime_class = r.runtime_class().to_string();
            // an entry of a jar named with the jar, as elsewhere; a directory's file by its name
            let shown = |name: &str| {
                if io::is_archive(&input) {
                    format!("{}: {name}", input.display())
                } else {
                    name.to_string()
                }
            };
            // methods of instrumented classes left without coverage counters (--coverage) or
            // without probes; of the latter, those in --map (registered before they failed)
            let (mut methods_left, mut left_in_map) = (0usize, 0usize);
            let progress = progress::Progress::new("classes");
            let res = io::transform(&input, &output, &progress, |name, bytes| {
                classes += 1;
                reg.release = io::release_of(name);
                if let Ok(Some(m)) = bci_rewriter::offline::marker(bytes) {
                    marked += 1;
                    if m.coverage == coverage {
                        progress.line(&format!(
                            "bci: {}: already instrumented by bci; left as it is",
                            shown(name)
                        ));
                    } else {
                        // it cannot take the other kind as well: what was asked for is missing
                        other_kind += 1;
                        progress.line(&format!(
                            "bci: {}: already instrumented by bci {}; left as it is, \
                             without {}",
                            shown(name),
                            if m.coverage {
                                "with coverage counters"
                            } else {
                                "with probes (no coverage counters)"
                            },
                            if coverage {
                                "coverage counters"
                            } else {
                                "cpu=times probes"
                            }
                        ));
                    }
                    return None;
                }
                let registered = reg.map.len();
                let result = if coverage {
                    coverage::instrument(bytes, &r, opts.module_reads, &|l| progress.line(l)).map(
                        |(o, left)| {
                            methods_left += left;
                            o
                        },
                    )
                } else {
                    instrument_methods(bytes, &r, &mut reg, &opts).and_then(|(o, mut left)| {
                        if !matches!(o, Outcome::Rewritten(_)) && !left.is_empty() {
                            // no method took probes: the class is left original, named with
                            // its first such method (and the others named after it)
                            let first = left.remove(0);
                            for e in &left {
                                progress.line(&format!(
                                    "bci: {}: method left original: {e}",
                                    shown(name)
                                ));
                            }
                            return Err(first);
                        }
                        // each method left original named (the error names it: Class.name(desc))
                        for e in &left {
                            let at = e.path().first().map(String::as_str).unwrap_or("");
                            progress
                                .line(&format!("bci: {}: method left original: {e}", shown(name)));
                            methods_left += 1;
                            left_in_map += reg.map[registered..]
                                .iter()
                                .filter(|l| {
                                    let f: Vec<&str> = l.split('\t').collect();
                                    f.len() >= 4 && format!("{}.{}{}", f[1], f[2], f[3]) == at
                                })
                                .count();
                        }
                        Ok(o)
                    })
                };
                if !matches!(result, Ok(Outcome::Rewritten(_))) {
                    // methods registered before the class was left original (or not
                    // rewritten) have no probes: their ids go back, so the summary and --map
                    // count only methods in the output
                    reg.map.truncate(registered);
                }
                match result {
                    Ok(Outcome::Rewritten(b)) => {
                        rewritten += 1;
                        Some(b)
                    }
                    Ok(Outcome::Unchanged) => {
                        // left out by --include/--exclude, or nothing to instrument (an
                        // interface without code, a module descriptor)
                        let class = bci::ClassFile::parse(bytes)
                            .ok()
                            .and_then(|cf| cf.name().ok().map(|n| n.to_string()));
                        match class {
                            Some(c) if !r.selects_class(&c) => {
                                if unfiltered.selects_class(&c) {
                                    not_selected += 1;
                                } else if c.starts_with("bci/runtime/") {
                                    runtime_own += 1;
                                } else if c.starts_with(&runtime_class) {
                                    rules_runtime += 1;
                                } else {
                                    not_in_rules += 1;
                                }
                            }
                            _ => no_code += 1,
                        }
                        None
                    }
                    Err(e) => {
                        failed += 1;
                        progress.line(&format!("bci: {}: left original: {e}", shown(name)));
                        None
                    }
                }
            });
            match res {
                Err(e) => {
                    eprintln!("bci: {e}");
                    return ExitCode::from(2);
                }
                Ok(rep) if !rep.removed_signature.is_empty() => eprintln!(
                    "bci: {}: signed jar: its signature ({}) and the manifest's per-entry \
                     digests are left out, since instrumented classes no longer match them",
                    input.display(),
                    rep.removed_signature.join(", ")
                ),
                Ok(_) => {}
            }
            if let Some(m) = map {
                let mut s = reg.map.join("\n");
                s.push('\n');
                let res = io::write_replacing(&m, s.as_bytes()).map_err(|e| format!("--map {e}"));
                if let Err(e) = res {
                    eprintln!("bci: {e}");
                    return ExitCode::from(2);
                }
            }
            // every class in one of the parts: the summary adds up
            let mut parts = vec![io::count(classes, "class", "classes")];
            parts.push(if coverage {
                format!("{rewritten} instrumented with coverage counters")
            } else {
                format!(
                    "{rewritten} instrumented ({})",
                    io::count(reg.map.len() - left_in_map, "method", "methods")
                )
            });
            if no_code > 0 {
                parts.push(format!(
                    "{no_code} without code to {}",
                    if coverage { "count" } else { "probe" }
                ));
            }
            if not_selected > 0 {
                parts.push(format!(
                    "{not_selected} not selected by --include/--exclude"
                ));
            }
            if not_in_rules > 0 {
                parts.push(format!("{not_in_rules} not selected by the rules"));
            }
            if runtime_own > 0 {
                // (a runtime jar given for input: bci never instruments its own runtime)
                parts.push(format!(
                    "{runtime_own} of bci's runtime (never instrumented)"
                ));
            }
            if rules_runtime > 0 {
                // (a probe runtime never calls itself: the rules leave it out)
                parts.push(format!(
                    "{rules_runtime} of the rules' runtime {} (never instrumented)",
                    runtime_class.replace('/', ".")
                ));
            }
            if marked > 0 {
                parts.push(format!("{marked} instrumented already"));
            }
            parts.push(format!("{failed} left original"));
            if methods_left > 0 {
                parts.push(format!(
                    "{} left without {}",
                    io::count(methods_left, "method", "methods"),
                    if coverage { "counters" } else { "probes" }
                ));
            }
            outln!("bci: {}", parts.join(", "));
            if runtime_ids && rewritten > 0 {
                outln!(
                    "bci: run it with the runtime jar (bci runtime-jar bci-runtime.jar) on the class path; it writes {} at exit for bci report",
                    if coverage { "bci.cov" } else { "bci.data" }
                );
            }
            if marked > 0 {
                outln!(
                    "bci: {} instrumented already and {} copied as {} {}",
                    io::count(marked, "class was", "classes were"),
                    if marked == 1 { "was" } else { "were" },
                    if marked == 1 { "it" } else { "they" },
                    if marked == 1 { "is" } else { "are" }
                );
            }
            if rewritten > 0 && io::is_archive(&output) {
                // the JVM opens a jar's Class-Path jars after it: classes found there load
                // as they are in those jars (hunt Y: Debian's jackson-databind.jar names
                // /usr/share/java/jackson-core.jar, so its instrumented copy ran the original)
                let cp = io::jar_class_path(&output);
                if !cp.is_empty() {
                    // entries are URLs relative to the jar's own directory (the output's, not
                    // the input's): a relative one the input had beside it may be missing here
                    let dir = output.parent().unwrap_or(std::path::Path::new("."));
                    let missing: Vec<String> = cp
                        .iter()
                        .map(|e| dir.join(e.strip_prefix("file:").unwrap_or(e)))
                        .filter(|p| !p.exists())
                        .map(|p| p.display().to_string())
                        .collect();
                    eprintln!(
                        "bci: {}: its manifest's Class-Path names {} (relative ones \
                         from the jar's directory): the JVM loads the classes of those jars from there, as \
                         they are, unless the same classes come earlier on the class path \
                         (instrument those jars too and put them before this one on -cp){}",
                        output.display(),
                        cp.join(" "),
                        if missing.is_empty() {
                            String::new()
                        } else {
                            format!(
                                "; not there: {} (the classes in it will not be found)",
                                missing.join(", ")
                            )
                        }
                    );
                }
            }
            if strict && failed + other_kind + methods_left > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Cmd::RuntimeJar { output } => match offline::runtime_jar(&output) {
            Ok(()) => {
                outln!("bci: wrote {}", output.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bci: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Merge { inputs, .. } if inputs.is_empty() => {
            // a usage error (exit 2, with the usage line), not an empty output file
            let mut cmd = Cli::command();
            cmd.build();
            let mut merge = cmd.find_subcommand("merge").cloned().unwrap_or(cmd);
            merge
                .error(
                    clap::error::ErrorKind::TooFewValues,
                    "bci merge needs at least one data file",
                )
                .exit()
        }
        Cmd::Merge {
            inputs,
            output,
            ignore_stale,
            classes,
        } => match coverage::merge(&inputs, &output, ignore_stale, &classes) {
            Ok(notes) => {
                eprint!("{notes}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bci: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Report {
            inputs,
            output,
            classes,
            sources,
            include,
            exclude,
            title,
            xml,
            cobertura,
            lcov,
            csv,
            html,
            per_test,
            source_encoding,
        } => {
            let args = report::Args {
                data: &inputs,
                classes: &classes,
                sources: &sources,
                include: &include,
                exclude: &exclude,
                title: title.as_deref(),
                xml: xml.as_deref(),
                cobertura: cobertura.as_deref(),
                lcov: lcov.as_deref(),
                csv: csv.as_deref(),
                html: html.as_deref(),
                per_test,
                source_encoding: source_encoding.as_deref(),
            };
            match check_report_paths(&inputs, &args, output.as_deref()).and_then(|()| {
                // an output that is stdout: the console goes to stderr, from the start
                io::note_stdout_outputs(
                    [
                        args.xml,
                        args.cobertura,
                        args.lcov,
                        args.csv,
                        output.as_deref(),
                    ]
                    .into_iter()
                    .flatten(),
                );
                report_cmd(&inputs, &args)
            }) {
                Ok((text, errors)) => {
                    let res = match &output {
                        Some(p) => {
                            io::write_replacing(p, text.as_bytes()).map_err(|e| format!("-o {e}"))
                        }
                        None => {
                            out!("{text}");
                            Ok(())
                        }
                    };
                    match res {
                        Ok(()) if errors => ExitCode::from(1),
                        Ok(()) => ExitCode::SUCCESS,
                        Err(e) => {
                            eprintln!("bci: {e}");
                            ExitCode::from(2)
                        }
                    }
                }
                Err(e) => {
                    eprintln!("bci: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Cmd::Verify(args) => {
            let p = progress::Progress::new("classes");
            let code = bci_verify::cli::execute(&args, &mut |lines, done, total| {
                p.start(total);
                lines.iter().for_each(|l| p.out(l));
                p.set(done);
                if done == total {
                    p.finish();
                }
            });
            ExitCode::from(code.clamp(0, 255) as u8)
        }
        Cmd::Rules {
            cmd: RulesCmd::Check { files, offline },
        } => {
            let mut bad = false;
            for f in files {
                let res = if offline {
                    rules_cmd::load_offline(&f)
                } else {
                    rules_cmd::load(&f)
                };
                match res {
                    Ok(r) if offline => outln!(
                        "{}: ok for bci instrument --rules (runtime class {})",
                        f.display(),
                        r.runtime_class()
                    ),
                    Ok(r) => {
                        let (errors, warnings) = rules_cmd::reach(&f, &r);
                        for w in &warnings {
                            eprintln!("{w}");
                        }
                        for e in &errors {
                            eprintln!("{e}");
                        }
                        if errors.is_empty() {
                            outln!("{}: ok", f.display());
                        } else {
                            bad = true;
                        }
                    }
                    Err(e) => {
                        bad = true;
                        eprintln!("{e}");
                    }
                }
            }
            if bad {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Cmd::Rules {
            cmd: RulesCmd::Explain { file, classpath },
        } => {
            let cp: Vec<PathBuf> = classpath
                .split(':')
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect();
            match rules_cmd::explain(&file, &cp) {
                Ok((out, errors)) => {
                    out!("{out}");
                    for e in &errors {
                        eprintln!("{e}");
                    }
                    if errors.is_empty() {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    }
                }
                Err(e) => {
                    eprintln!("bci: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
