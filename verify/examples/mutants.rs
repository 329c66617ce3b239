//! Mutation corpus vs HotSpot, by hand:
//! `cargo run -p bci-verify --release --example mutants -- [N] [seed] [jar...]`
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = args.first().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let seed = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut jars: Vec<PathBuf> = args.iter().skip(2).map(PathBuf::from).collect();
    if jars.is_empty() {
        jars = vec![
            "/usr/share/java/guava.jar".into(),
            "/usr/share/java/js.jar".into(),
        ];
    }
    let ws = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let tree = ws.join("target/corpus/jdk17");
    let home = bci_verify::hierarchy::find_java_home().expect("no JDK");
    let t = std::time::Instant::now();
    let rep = bci_verify::mutate::run_corpus(
        &home,
        &jars,
        tree.is_dir().then_some(tree.as_path()),
        n,
        seed,
        &ws.join("target/mutation-example"),
    )
    .expect("mutation run");
    rep.print();
    println!("elapsed {:.1}s", t.elapsed().as_secs_f64());
}
