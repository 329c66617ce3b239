//! Deterministic mutation test: 100,000 random byte mutations of real JDK classes through
//! parse, full format check, identity write and probe rewriting. No panic on any input; every
//! error names where it happened (a non-empty context path).
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::{instrument, Outcome, Rules, SequentialIds};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, orig: &[u8]) -> Vec<u8> {
    let mut b = orig.to_vec();
    let n = 1 + rng.below(4);
    for _ in 0..n {
        let at = rng.below(b.len());
        match rng.below(8) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = rng.next() as u8,
            2 => b[at] = [0, 0xff, 0x7f, 0x80, 1][rng.below(5)],
            3 => {
                // 16-bit value (counts, indices, lengths) set to an edge value
                if at + 1 < b.len() {
                    let v: u16 = [0, 1, 0xffff, 0x7fff, 0x8000, 2][rng.below(6)];
                    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
                }
            }
            4 => b.truncate(at),
            5 => b.insert(at, rng.next() as u8),
            6 => {
                b.remove(at.min(b.len().saturating_sub(1)));
            }
            _ => {
                // duplicate a short range
                let len = 1 + rng.below(16);
                let end = (at + len).min(b.len());
                let chunk = b[at..end].to_vec();
                let to = rng.below(b.len());
                b.splice(to..to, chunk);
            }
        }
        if b.is_empty() {
            break;
        }
    }
    b
}

#[test]
fn hundred_thousand_mutations_never_panic_and_errors_have_paths() {
    std::panic::set_hook(Box::new(|_| {}));
    let dir = common::jdk_corpus();
    let files = common::class_files(&dir.join("java.base/java/util"));
    // A fixed sample of real classes of varied sizes.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut sample: Vec<Vec<u8>> = Vec::new();
    for f in files.iter().step_by(files.len() / 150 + 1) {
        let b = std::fs::read(f).unwrap();
        if b.len() < 40_000 {
            sample.push(b);
        }
    }
    assert!(sample.len() > 100);
    let rules = Rules::cpu_times();
    let (mut parsed, mut checked, mut rewritten, mut errors) = (0usize, 0usize, 0usize, 0usize);
    let mut pathless = Vec::new();
    let mut panics = Vec::new();
    const N: usize = 100_000;
    for k in 0..N {
        let orig = &sample[rng.below(sample.len())];
        let m = mutate(&mut rng, orig);
        let r = catch_unwind(AssertUnwindSafe(|| -> Result<(), bci::Error> {
            let cf = bci::ClassFile::parse(&m)?;
            parsed += 1;
            cf.check()?;
            checked += 1;
            let out = bci::ClassWriter::new(&cf).finish()?;
            assert_eq!(out, m, "identity write of a checked class");
            let mut reg = SequentialIds(0);
            if let Outcome::Rewritten(b) = instrument(&m, &rules, &mut reg)? {
                rewritten += 1;
                // What we write must parse and check again.
                bci::ClassFile::parse(&b)?.check()?;
            }
            Ok(())
        }));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                errors += 1;
                if e.path().is_empty() || e.to_string().is_empty() {
                    pathless.push(format!("mutation {k}: {e}"));
                }
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                panics.push(format!("mutation {k}: {msg:?}"));
            }
        }
    }
    eprintln!(
        "{N} mutations: {parsed} parsed, {checked} checked, {rewritten} rewritten, {errors} errors"
    );
    assert!(
        panics.is_empty(),
        "{} panics:\n{}",
        panics.len(),
        panics[..panics.len().min(10)].join("\n")
    );
    assert!(
        pathless.is_empty(),
        "{} errors without a path:\n{}",
        pathless.len(),
        pathless[..pathless.len().min(10)].join("\n")
    );
    // The mutations must reach deep code, not only fail at the header.
    assert!(
        checked > N / 10 && errors > N / 10 && rewritten > N / 20,
        "parsed {parsed} checked {checked} rewritten {rewritten}"
    );
}
