//! `bci verify` through `cli::run`: exit codes and one error per line.
mod common;
use bci_verify::mutate::{mutate, sites, Kind, Rng};

#[test]
fn cli_exit_codes() {
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let work = common::workspace().join("target/cli-test");
    let _ = std::fs::remove_dir_all(&work);
    let src = tree.join("java.sql/java/sql/Timestamp.class");
    let good = std::fs::read(&src).unwrap();
    let dir_ok = work.join("ok/java/sql");
    std::fs::create_dir_all(&dir_ok).unwrap();
    std::fs::write(dir_ok.join("Timestamp.class"), &good).unwrap();
    let cp = tree.to_string_lossy().to_string();
    let args = |d: &str| {
        vec![
            work.join(d).to_string_lossy().to_string(),
            "--no-jdk".into(),
            "--classpath".into(),
            cp.clone(),
        ]
    };
    assert_eq!(bci_verify::cli::run(&args("ok")), 0);
    let site = sites(&good)
        .into_iter()
        .find(|s| s.method.starts_with("toString"))
        .unwrap();
    let bad = mutate(&good, &site, Kind::MaxStackLow, &mut Rng::new(1)).unwrap();
    let dir_bad = work.join("bad/java/sql");
    std::fs::create_dir_all(&dir_bad).unwrap();
    std::fs::write(dir_bad.join("Timestamp.class"), &bad).unwrap();
    assert_eq!(bci_verify::cli::run(&args("bad")), 1);
    assert_eq!(bci_verify::cli::run(&["--bogus".to_string()]), 2);
    assert_eq!(bci_verify::cli::run(&[]), 2);
    let errs = bci_verify::verify_class(&bad, &bci_verify::NoHierarchy);
    assert_eq!(errs.len(), 1);
    let line = errs[0].to_string();
    assert!(
        line.starts_with("java.sql.Timestamp.toString()Ljava/lang/String; @"),
        "{line}"
    );
    assert!(
        line.contains("expected") && line.contains("found"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A module-layout dir without module-info.class (e.g. only the rewritten classes) is still read as
/// `<module>/pkg/C.class`.
#[test]
fn module_layout_without_module_info() {
    use bci_verify::ClassHierarchy;
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let work = common::workspace().join("target/cli-test-modules");
    let _ = std::fs::remove_dir_all(&work);
    let p = work.join("java.sql/java/sql/Timestamp.class");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::copy(tree.join("java.sql/java/sql/Timestamp.class"), &p).unwrap();
    let cp = bci_verify::ClassPath::new(std::slice::from_ref(&work), false).unwrap();
    assert_eq!(
        cp.super_class("java/sql/Timestamp").as_deref(),
        Some("java/util/Date")
    );
    let _ = std::fs::remove_dir_all(&work);
}
