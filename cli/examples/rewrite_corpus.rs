//! Rewrites every class of a directory in memory with the cpu-times rules, N times; for
//! profiling the rewrite path (`perf record target/release/examples/rewrite_corpus DIR`).
use bci_rewriter::{instrument, Outcome, Rules, SequentialIds};

fn files(dir: &std::path::Path, out: &mut Vec<Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "class") {
            out.push(std::fs::read(&p).unwrap());
        }
    }
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: rewrite_corpus DIR [ROUNDS]");
    let rounds: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut v = Vec::new();
    files(std::path::Path::new(&dir), &mut v);
    let mb = v.iter().map(|c| c.len()).sum::<usize>() as f64 / 1e6;
    let rules = Rules::cpu_times();
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        let mut n = 0;
        for c in &v {
            if let Ok(Outcome::Rewritten(_)) = instrument(c, &rules, &mut SequentialIds(0)) {
                n += 1;
            }
        }
        println!("{n} rewritten, {:.1} MB/s", mb / t.elapsed().as_secs_f64());
    }
}
