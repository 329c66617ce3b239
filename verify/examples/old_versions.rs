//! Inference verifier vs HotSpot's old verifier: guava/rhino classes downgraded to version 49.
//! `cargo run -p bci-verify --release --example old_versions -- [mutants] [seed]`
use std::path::PathBuf;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let seed: u64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let jars: Vec<PathBuf> = vec![
        "/usr/share/java/guava.jar".into(),
        "/usr/share/java/js.jar".into(),
    ];
    let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let home = bci_verify::hierarchy::find_java_home().expect("jdk");
    let rep = bci_verify::mutate::run_old_version_corpus(
        &home,
        &jars,
        &ws.join("target/corpus/jdk17"),
        n,
        seed,
        &ws.join("target/old-versions"),
    )
    .expect("run");
    for s in rep.samples.iter().take(20) {
        println!("  {s}");
    }
    println!("{rep:#?}");
}
