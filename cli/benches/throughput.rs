//! Throughput over the JDK 17 corpus, one thread: parse only, identity round trip, and the
//! cpu-times probe rewrite of every method. Prints MB/s (class-file bytes in per second of
//! wall time, and per second of this thread's CPU time from /proc/thread-self/schedstat, which
//! other processes on a loaded machine do not inflate), median of 5 runs each (BENCH_ROUNDS), measured side
//! by side in one process. Not a test.
//!
//!     cargo bench -p bci-cli --bench throughput
//!     BENCH_JOB=probe cargo bench -p bci-cli --bench throughput   (only jobs naming "probe": for perf)
//!     BENCH_ROUNDS=1 ...   (rounds instead of 5: one is enough for callgrind's exact counts)
//!
//! "probe every method (agent form)" is the same rewrite with the agent's options: pure leaves
//! get leaf probes, other methods keep enterT's token in a new local (their frames are
//! decoded and encoded again to add it), intrinsics are counted at their call sites
//! (BENCH_NO_INTRINSIC_SITES=1: in their bodies). "coverage (agent form)" is coverage=y's rewrite:
//! the flow analysis, the counter plan and the counters of every method.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::{instrument, instrument_with, Options, Outcome, Rules, SequentialIds};
use std::hint::black_box;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// This thread's time on a CPU so far, in ns (the first field of schedstat); None where
/// /proc does not have it.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn main() {
    let dir = common::jdk_corpus();
    let classes: Vec<Vec<u8>> = common::class_files(&dir)
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    let total: usize = classes.iter().map(|c| c.len()).sum();
    let mb = total as f64 / 1e6;
    println!("corpus: {} classes, {:.1} MB", classes.len(), mb);
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    print!("load average before: {}", load());
    let rules = Rules::cpu_times();
    let agent_opts = Options {
        leaf_probes: true,
        frame_tokens: true,
        intrinsic_sites: std::env::var_os("BENCH_NO_INTRINSIC_SITES").is_none(),
        ..Default::default()
    };
    // what the agent's coverage=y does to a class (a constant class id)
    let cov_opts = bci_rewriter::coverage::Options {
        runtime: "java/lang/BciCov",
        split: bci_rewriter::flow::Split::AfterCalls,
        class_id: bci_rewriter::coverage::ClassId::Constant(7),
    };
    type Job<'a> = (&'a str, Box<dyn Fn(&[u8]) -> usize + 'a>);
    let jobs: Vec<Job> = vec![
        (
            "parse only",
            Box::new(|b: &[u8]| {
                bci::ClassFile::parse(b)
                    .map(|cf| cf.methods.len())
                    .unwrap_or(0)
            }),
        ),
        (
            "parse + full check",
            Box::new(|b: &[u8]| {
                bci::ClassFile::parse(b)
                    .map(|cf| cf.check().is_ok() as usize)
                    .unwrap_or(0)
            }),
        ),
        (
            "identity round trip",
            Box::new(|b: &[u8]| bci::round_trip(b).map(|o| o.len()).unwrap_or(0)),
        ),
        (
            "probe every method (cpu-times)",
            Box::new(
                |b: &[u8]| match instrument(b, &rules, &mut SequentialIds(0)) {
                    Ok(Outcome::Rewritten(o)) => o.len(),
                    _ => 0,
                },
            ),
        ),
        (
            "probe every method (agent form)",
            Box::new(|b: &[u8]| {
                match instrument_with(b, &rules, &mut SequentialIds(0), &agent_opts) {
                    Ok(Outcome::Rewritten(o)) => o.len(),
                    _ => 0,
                }
            }),
        ),
        (
            "coverage (agent form)",
            Box::new(
                |b: &[u8]| match bci_rewriter::coverage::instrument(b, &cov_opts) {
                    Ok((Outcome::Rewritten(o), _)) => o.len(),
                    _ => 0,
                },
            ),
        ),
    ];
    let only = std::env::var("BENCH_JOB").unwrap_or_default();
    let jobs: Vec<Job> = jobs
        .into_iter()
        .filter(|(n, _)| n.contains(&only))
        .collect();
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); jobs.len()];
    let mut cpu_results: Vec<Vec<f64>> = vec![Vec::new(); jobs.len()];
    // Interleave the jobs so machine noise hits all of them alike.
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(5);
    for _round in 0..rounds {
        for (j, (_, f)) in jobs.iter().enumerate() {
            let c = thread_cpu_ns();
            let t = Instant::now();
            let mut acc = 0usize;
            for c in &classes {
                acc = acc.wrapping_add(f(black_box(c)));
            }
            black_box(acc);
            results[j].push(mb / t.elapsed().as_secs_f64());
            if let (Some(c0), Some(c1)) = (c, thread_cpu_ns()) {
                cpu_results[j].push(mb / ((c1 - c0).max(1) as f64 / 1e9));
            }
        }
    }
    print!("load average after: {}", load());
    let base = median(results[0].clone());
    for (((name, _), r), cpu) in jobs.iter().zip(results).zip(cpu_results) {
        let m = median(r.clone());
        let (lo, hi) = r
            .iter()
            .fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
        println!(
            "{name:32} median {m:8.1} MB/s   (min {lo:.1}, max {hi:.1}; {:.2}x parse time)",
            base / m
        );
        if !cpu.is_empty() {
            println!(
                "{:32} median {:8.1} MB/s of thread CPU time",
                "",
                median(cpu)
            );
        }
    }
}
