//! The inference verifier (class files < 50, and HotSpot's fallback for 50) against HotSpot's old
//! verifier on real code: guava and rhino classes downgraded to version 49 must pass both; 3,000
//! mutants of them must get the same verdict from both on >= 99%.
mod common;

#[test]
fn downgraded_classes_and_mutants_agree_with_hotspot() {
    let Some((guava, rhino)) = common::guava_and_rhino() else {
        return;
    };
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let n: usize = std::env::var("BCI_OLD_MUTANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let work = common::workspace().join("target/old-versions-test");
    let rep =
        bci_verify::mutate::run_old_version_corpus(&home, &[guava, rhino], &tree, n, 5, &work)
            .unwrap();
    let _ = std::fs::remove_dir_all(&work);
    for s in rep.samples.iter().take(20) {
        println!("  {s}");
    }
    println!(
        "old versions: {} classes downgraded (ours rejects {}, HotSpot {}); {} mutants, {} compared, {} agree ({:.2}%), HotSpot rejected {}; disagreements {:?}",
        rep.downgraded,
        rep.ours_rejects_unmodified,
        rep.hotspot_rejects_unmodified,
        rep.mutants,
        rep.compared,
        rep.agree,
        100.0 * rep.agree as f64 / rep.compared.max(1) as f64,
        rep.hotspot_rejected,
        rep.disagreements
    );
    assert!(rep.downgraded > 1000);
    assert_eq!(rep.ours_rejects_unmodified, 0);
    assert_eq!(rep.hotspot_rejects_unmodified, 0);
    assert!(rep.mutants >= n);
    assert!(rep.compared * 100 >= rep.mutants * 95);
    assert!(rep.agree * 100 >= rep.compared * 99);
    assert!(rep.hotspot_rejected > rep.compared / 2 && rep.hotspot_rejected < rep.compared);
}
