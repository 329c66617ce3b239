//! Rewrite outputs, for checking that a change to the rewrite path (bci's editor, writer,
//! frames; the probe insertion glue) leaves every output byte as it was. Rewrites the JDK 17
//! corpus and a few Debian jars (old class-file versions with jsr/ret and no StackMapTable
//! included) under several configurations and writes one line per class and configuration:
//! `config path hash-of-output` (`unchanged`, or the error text). Not a test: build it before
//! and after a change and diff the two files (scripts/compare-rewrite.sh does that).
//!
//!     cargo bench -p bci-cli --bench throughput_outputs -- OUT.txt
//!
//! Configurations: cpu-times (the throughput bench's job), agent (leaf probes, per-method
//! fallback, the runtime's Thread fields), offline (`bci instrument`: marker, runtime ids,
//! module read edges), force-wide (every branch widened: new frames), coverage with a constant
//! class id and with run-time registration, and a tracing rule on every java.util method.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::coverage::{self, ClassId};
use bci_rewriter::flow::Split;
use bci_rewriter::{instrument_methods, NewField, Options, Outcome, Rules, SequentialIds};
use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;

/// FNV-1a, 64 bits: stable across builds and toolchains.
fn fnv(b: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn line(out: &mut String, config: &str, path: &str, r: Result<Option<Vec<u8>>, String>) {
    let what = match r {
        Ok(Some(b)) => format!("{:016x} {}", fnv(&b), b.len()),
        Ok(None) => "unchanged".to_string(),
        Err(e) => format!("error: {e}"),
    };
    let _ = writeln!(out, "{config} {path} {what}");
}

fn outcome(o: Outcome) -> Option<Vec<u8>> {
    match o {
        Outcome::Rewritten(b) => Some(b),
        Outcome::Unchanged => None,
    }
}

/// Classes of the jars (entry order), named `jar!entry`.
fn jar_classes(jar: &str) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let Ok(f) = std::fs::File::open(jar) else {
        return v;
    };
    let Ok(mut z) = zip::ZipArchive::new(f) else {
        return v;
    };
    for k in 0..z.len() {
        let Ok(mut e) = z.by_index(k) else { continue };
        if !e.name().ends_with(".class") {
            continue;
        }
        let name = format!("{jar}!{}", e.name());
        let mut b = Vec::new();
        if e.read_to_end(&mut b).is_ok() {
            v.push((name, b));
        }
    }
    v
}

fn main() {
    let out_path: PathBuf = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("rewrite-outputs.txt"));
    let dir = common::jdk_corpus();
    let mut classes: Vec<(String, Vec<u8>)> = common::class_files(&dir)
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(&dir).unwrap_or(f).display().to_string();
            (rel, std::fs::read(f).unwrap())
        })
        .collect();
    let jars = std::env::var("BENCH_JARS").unwrap_or_else(|_| {
        [
            "antlr-2.7.7.jar",
            "rhino.jar",
            "eclipse-jdt-core.jar",
            "guava.jar",
            "asm-all.jar",
            "commons-compress.jar",
        ]
        .map(|j| format!("/usr/share/java/{j}"))
        .join(":")
    });
    for jar in jars.split(':').filter(|j| !j.is_empty()) {
        let v = jar_classes(jar);
        eprintln!("{jar}: {} classes", v.len());
        classes.extend(v);
    }
    eprintln!("{} classes", classes.len());

    let cpu = Rules::cpu_times();
    let thread_fields = vec![
        NewField {
            class: "java/lang/Thread".into(),
            access: 0x0001,
            name: "bci$t".into(),
            desc: "Ljava/lang/Object;".into(),
        },
        NewField {
            class: "java/lang/Thread".into(),
            access: 0x0001,
            name: "bci$d".into(),
            desc: "I".into(),
        },
    ];
    let agent_rules = Rules::cpu_times().with_runtime("java/lang/BciProbes");
    let offline_rules = Rules::cpu_times().with_runtime("bci/runtime/Probes");
    let trace_rules = Rules::parse(
        "[[rule]]\nname = \"all\"\nclass = \"java.util.*\"\nmethod = \"*\"\ntrace = true\n",
        "inline",
    )
    .unwrap_or_else(|e| panic!("trace rule: {e}"));
    let configs: Vec<(&str, &Rules, Options)> = vec![
        ("cpu-times", &cpu, Options::default()),
        (
            "agent",
            &agent_rules,
            Options {
                method_fallback: true,
                leaf_probes: true,
                frame_tokens: true,
                fields: thread_fields,
                ..Default::default()
            },
        ),
        (
            "offline",
            &offline_rules,
            Options {
                marker: true,
                runtime_ids: true,
                module_reads: true,
                leaf_probes: true,
                frame_tokens: true,
                ..Default::default()
            },
        ),
        (
            "force-wide",
            &cpu,
            Options {
                force_wide_jumps: true,
                method_fallback: true,
                ..Default::default()
            },
        ),
    ];
    let mut out = String::new();
    for (name, rules, opts) in &configs {
        let t = std::time::Instant::now();
        for (path, b) in &classes {
            let r = instrument_methods(b, rules, &mut SequentialIds(0), opts)
                .map(|(o, left)| with_left(outcome(o), &left))
                .map_err(|e| e.to_string());
            line(&mut out, name, path, r);
        }
        eprintln!("{name}: {:.1} s", t.elapsed().as_secs_f64());
    }
    for (name, class_id) in [
        ("coverage", ClassId::Constant(7)),
        (
            "coverage-registered",
            ClassId::Registered { module_reads: true },
        ),
    ] {
        let t = std::time::Instant::now();
        let opts = coverage::Options {
            runtime: "bci/runtime/Cov",
            split: Split::AfterCalls,
            class_id,
        };
        for (path, b) in &classes {
            let r = coverage::instrument(b, &opts)
                .map(|(o, cc)| {
                    let mut o = outcome(o);
                    if !cc.skipped.is_empty() || o.is_some() {
                        // the plan (counter count, hash, methods skipped) is output too
                        let mut b = o.take().unwrap_or_default();
                        b.extend_from_slice(
                            format!("{:?} {} {}", cc.skipped, cc.counters, cc.hash).as_bytes(),
                        );
                        o = Some(b);
                    }
                    o
                })
                .map_err(|e| e.to_string());
            line(&mut out, name, path, r);
        }
        eprintln!("{name}: {:.1} s", t.elapsed().as_secs_f64());
    }
    {
        let t = std::time::Instant::now();
        let mut site = 0;
        for (path, b) in &classes {
            let mut next = |_: &bci_rewriter::trace::TraceRule| {
                site += 1;
                site
            };
            let r = bci_rewriter::trace::instrument(b, trace_rules.trace_rules(), &mut next)
                .map(|(o, left)| with_left(o, &left))
                .map_err(|e| e.to_string());
            line(&mut out, "trace", path, r);
        }
        eprintln!("trace: {:.1} s", t.elapsed().as_secs_f64());
    }
    std::fs::write(&out_path, &out).unwrap_or_else(|e| panic!("{}: {e}", out_path.display()));
    eprintln!(
        "{} lines, digest {:016x} -> {}",
        out.lines().count(),
        fnv(out.as_bytes()),
        out_path.display()
    );
}

/// An output with the methods left original appended (they are part of what is compared).
fn with_left<E: std::fmt::Display>(mut o: Option<Vec<u8>>, left: &[E]) -> Option<Vec<u8>> {
    if !left.is_empty() {
        let names: Vec<String> = left.iter().map(|e| e.to_string()).collect();
        let mut b = o.take().unwrap_or_default();
        b.extend_from_slice(names.join("\n").as_bytes());
        o = Some(b);
    }
    o
}
