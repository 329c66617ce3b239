//! `bci verify <dir|jar>... [--classpath a:b] [--no-jdk] [--cross]`
use crate::{hierarchy::ClassPath, verify_class};
use std::path::PathBuf;

const USAGE: &str = "usage: bci verify <dir|jar>... [--classpath a:b] [--no-jdk] [--cross]";

/// Run the `verify` subcommand (`args` excludes the program and subcommand names).
/// Prints one error per line; returns 0 if all classes are valid, 1 on any error, 2 on usage/IO errors.
pub fn run(args: &[String]) -> i32 {
    let mut inputs = Vec::new();
    let mut cp: Vec<PathBuf> = Vec::new();
    let mut jdk = true;
    let mut cross = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--classpath" | "-cp" => match it.next() {
                Some(v) => cp.extend(std::env::split_paths(v)),
                None => {
                    eprintln!("{USAGE}");
                    return 2;
                }
            },
            "--no-jdk" => jdk = false,
            "--cross" => cross = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            s if s.starts_with('-') => {
                eprintln!("unknown option {s}\n{USAGE}");
                return 2;
            }
            s => inputs.push(PathBuf::from(s)),
        }
    }
    if inputs.is_empty() {
        eprintln!("{USAGE}");
        return 2;
    }
    let mut entries = inputs.clone();
    entries.extend(cp);
    let mut path = match ClassPath::new(&entries, jdk) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bci verify: {e}");
            return 2;
        }
    };
    let mut classes = Vec::new();
    for i in &inputs {
        match ClassPath::read_all(i) {
            Ok(v) => classes.extend(v),
            Err(e) => {
                eprintln!("bci verify: {}: {e}", i.display());
                return 2;
            }
        }
    }
    for (_, b) in &classes {
        path.add_class_bytes(b);
    }
    let mut n_err = 0usize;
    for (file, b) in &classes {
        for e in verify_class(b, &path) {
            println!("{e}");
            n_err += 1;
        }
        if cross {
            for d in crate::crosscheck::cross_check(b) {
                println!("{file}: {d}");
                n_err += 1;
            }
        }
    }
    eprintln!("bci verify: {} classes, {n_err} errors", classes.len());
    (n_err > 0) as i32
}
