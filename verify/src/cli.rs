//! `bci verify <dir|jar|class>... [--classpath a:b] [--no-jdk] [--cross]`: the arguments (clap, so
//! `bci verify --help` lists them like every other subcommand) and the run.
use crate::{hierarchy::is_class_file, hierarchy::ClassPath, verify_class_counting};
use clap::{Args, Parser};
use std::path::PathBuf;

/// Arguments of `bci verify`.
#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    /// Directories of classes, .jar/.zip files or class files to verify.
    #[arg(required = true, value_name = "DIR|JAR|CLASS")]
    pub inputs: Vec<PathBuf>,
    /// Where classes referenced by the inputs are found: directories and jars separated by ':'
    /// (repeatable). The inputs themselves come first.
    #[arg(long, value_name = "PATH")]
    pub classpath: Vec<String>,
    /// Do not look classes up in the running JDK (by default its lib/modules is extracted
    /// once into a cache and searched last).
    #[arg(long)]
    pub no_jdk: bool,
    /// Also parse every class with independent parsers and report where they disagree.
    #[arg(long)]
    pub cross: bool,
}

#[derive(Parser)]
#[command(
    name = "bci verify",
    about = "Verify every class of a directory or jar (independent verifier, no JVM needed)"
)]
struct Command {
    #[command(flatten)]
    args: VerifyArgs,
}

/// Run `verify` on command-line words (`args` excludes the program and subcommand names).
/// Prints one error per line; returns 0 if all classes are valid, 1 on any error, 2 on usage/IO
/// errors.
pub fn run(args: &[String]) -> i32 {
    let words = std::iter::once("bci verify".to_string()).chain(args.iter().cloned());
    match Command::try_parse_from(words) {
        Ok(c) => execute(&c.args, &mut |lines, _, _| {
            for l in lines {
                println!("{l}");
            }
        }),
        Err(e) => {
            let _ = e.print();
            if e.use_stderr() {
                2
            } else {
                0
            }
        }
    }
}

/// A message on stderr; one that cannot be written (stderr closed or full) is lost, and the run
/// goes on (std's `eprintln!` panicked).
fn say(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = std::io::stderr().write_fmt(args);
}

/// Run `verify` on parsed arguments. After each class, `report(lines, done, total)` gets its
/// error lines (to print on stdout) and the progress so far.
pub fn execute(a: &VerifyArgs, report: &mut dyn FnMut(&[String], usize, usize)) -> i32 {
    let mut entries = a.inputs.clone();
    for cp in &a.classpath {
        entries.extend(std::env::split_paths(cp));
    }
    let mut path = match ClassPath::new(&entries, !a.no_jdk) {
        Ok(p) => p,
        Err(e) => {
            say(format_args!("bci verify: {e}\n"));
            return 2;
        }
    };
    // (name in its input, bytes, where it is: the file's path, or the jar's and the entry's)
    let mut classes = Vec::new();
    for i in &a.inputs {
        match ClassPath::read_all_versions(i) {
            Ok(v) => classes.extend(v.into_iter().map(|(name, b)| {
                let at = if i.is_dir() {
                    i.join(&name).display().to_string()
                } else if is_class_file(i) {
                    i.display().to_string()
                } else {
                    format!("{}: {name}", i.display())
                };
                (name, b, at)
            })),
            Err(e) => {
                say(format_args!("bci verify: {}: {e}\n", i.display()));
                return 2;
            }
        }
    }
    // a multi-release jar's META-INF/versions/N/ builds first, so that the base entry of a
    // class is the one the hierarchy keeps (as the class path reads it)
    let versioned = |name: &str| name.starts_with("META-INF/versions/");
    for (_, b, _) in classes.iter().filter(|c| versioned(&c.0)) {
        path.add_class_bytes(b);
    }
    for (_, b, _) in classes.iter().filter(|c| !versioned(&c.0)) {
        path.add_class_bytes(b);
    }
    let (mut n_err, mut assumed, mut unchecked) = (0usize, 0usize, 0usize);
    let mut parser_notes = std::collections::BTreeMap::new();
    for (i, (file, b, at)) in classes.iter().enumerate() {
        let v = verify_class_counting(b, &path);
        let (errs, unreadable) = (v.errors, v.unreadable);
        assumed += v.assumed;
        unchecked += v.unchecked;
        // a class that cannot be read has no name (`?`, or one guessed from its bytes): named
        // by where it is instead (two entries of one jar with a guessed name were two identical
        // lines naming neither the jar nor the entry)
        let mut lines: Vec<String> = errs
            .iter()
            .map(|e| {
                if unreadable || e.class == "?" {
                    format!("{at}: {}", e.message)
                } else if versioned(file) {
                    // one of several builds of the class: which entry
                    format!("{at}: {e}")
                } else {
                    e.to_string()
                }
            })
            .collect();
        if a.cross {
            let cross = crate::crosscheck::cross_check_noting(b);
            for d in cross.errors {
                lines.push(format!("{file}: {d}"));
            }
            // a reference parser's limitation: not the class's error, said in the summary
            for n in cross.notes {
                *parser_notes.entry(n).or_insert(0usize) += 1;
            }
        }
        n_err += lines.len();
        report(&lines, i + 1, classes.len());
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut notes = Vec::new();
    if assumed > 0 {
        notes.push(format!(
            "{} assumed to pass: classes not found on the class path{}",
            plural(assumed, "type check", "type checks"),
            if a.no_jdk {
                ", the JDK's left out by --no-jdk"
            } else {
                ""
            }
        ));
    }
    if unchecked > 0 {
        notes.push(format!(
            "{} with jsr/ret not type-checked: no subroutine analysis here, HotSpot's \
             verifier checks them",
            plural(unchecked, "method", "methods")
        ));
    }
    for (n, count) in parser_notes {
        notes.push(format!("{}: {n}", plural(count, "class", "classes")));
    }
    say(format_args!(
        "bci verify: {}, {}{}\n",
        plural(classes.len(), "class", "classes"),
        plural(n_err, "error", "errors"),
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        }
    ));
    (n_err > 0) as i32
}
