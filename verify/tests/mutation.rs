//! Mutation corpus: >= 10,000 classes with one defect each, made from guava and rhino classes;
//! our verdict must agree with HotSpot's (the oracle) on >= 99% of them.
//! BCI_MUTANTS overrides the count (default 10000).
mod common;
use std::path::Path;

#[test]
fn mutants_agree_with_hotspot() {
    let Some(guava) = common::require(
        Path::new("/usr/share/java/guava.jar"),
        "guava (libguava-java)",
    ) else {
        return;
    };
    let Some(rhino) = common::require(Path::new("/usr/share/java/js.jar"), "rhino (librhino-java)")
    else {
        return;
    };
    let Some(home) = common::java_home() else {
        common::require(
            Path::new("/usr/lib/jvm/java-17-openjdk-amd64/bin/java"),
            "JDK 17",
        );
        return;
    };
    let tree = common::jdk_corpus();
    let n: usize = std::env::var("BCI_MUTANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let t = std::time::Instant::now();
    let work = common::workspace().join("target/mutation-test");
    let rep =
        bci_verify::mutate::run_corpus(&home, &[guava, rhino], tree.as_deref(), n, 0x5eed, &work)
            .unwrap();
    rep.print();
    println!("elapsed {:.1}s", t.elapsed().as_secs_f64());
    let _ = std::fs::remove_dir_all(&work);
    assert!(rep.total >= n, "only {} mutants generated", rep.total);
    assert!(
        rep.compared as f64 >= 0.95 * rep.total as f64,
        "too many excluded: {:?}",
        rep.excluded
    );
    assert!(
        rep.agreement() >= 0.99,
        "agreement {:.3} < 0.99",
        rep.agreement()
    );
    // the corpus must contain real defects and real accepts, or agreement means nothing
    let rejected: usize = rep.by_kind.values().map(|v| v.2).sum();
    assert!(
        rejected > rep.compared / 2 && rejected < rep.compared,
        "degenerate corpus: {rejected} rejected of {}",
        rep.compared
    );
}
