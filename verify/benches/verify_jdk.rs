//! Throughput of `verify_class` over the JDK 17 corpus on one core (target/corpus/jdk17).
//! `cargo bench -p bci-verify --bench verify_jdk` ; BCI_BENCH_RUNS sets the number of timed passes (default 5).
use bci_verify::{verify_class, ClassPath};
use std::path::PathBuf;
use std::time::Instant;

/// CPU time of this thread (user+system) from /proc, in seconds; None where unavailable.
/// The machine is shared, so CPU time is the steadier measure; wall time is reported too.
fn thread_cpu() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() {
    let tree = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/corpus/jdk17");
    if !tree.is_dir() {
        eprintln!(
            "no corpus at {} (run `cargo test -p bci-verify --release --test corpus` first)",
            tree.display()
        );
        return;
    }
    let runs: usize = std::env::var("BCI_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let classes = ClassPath::read_all(&tree).expect("read corpus");
    let bytes: usize = classes.iter().map(|c| c.1.len()).sum();
    let cp = ClassPath::new(std::slice::from_ref(&tree), false).expect("class path");
    // warm-up pass fills the hierarchy cache (its cost is reported separately)
    let t = Instant::now();
    let mut errors = 0;
    for (_, b) in &classes {
        errors += verify_class(b, &cp).len();
    }
    let cold = t.elapsed().as_secs_f64();
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let c0 = thread_cpu();
        for (_, b) in &classes {
            errors += std::hint::black_box(verify_class(b, &cp)).len();
        }
        times.push(t.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (c0, thread_cpu()) {
            cpu.push(b - a);
        }
    }
    cpu.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = times[times.len() / 2];
    let mb = bytes as f64 / 1e6;
    println!(
        "corpus: {} classes, {:.1} MB, {} errors",
        classes.len(),
        mb,
        errors
    );
    println!(
        "cold pass (hierarchy cache empty): {:.2} s = {:.1} MB/s",
        cold,
        mb / cold
    );
    println!(
        "warm passes (1 thread): median {:.3} s = {:.0} classes/s, {:.1} MB/s (min {:.3} s, max {:.3} s, {} runs)",
        med,
        classes.len() as f64 / med,
        mb / med,
        times[0],
        times[times.len() - 1],
        runs
    );
    if !cpu.is_empty() {
        let c = cpu[cpu.len() / 2];
        println!(
            "warm passes, CPU time of the thread: median {:.3} s = {:.0} classes/s, {:.1} MB/s",
            c,
            classes.len() as f64 / c,
            mb / c
        );
    }
}
