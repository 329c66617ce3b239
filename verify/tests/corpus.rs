//! No false positives: every unmodified class of the JDK 17 image and of third-party jars verifies clean.
mod common;
use bci_verify::{verify_class, ClassPath};
use std::path::{Path, PathBuf};

fn verify_all(classes: &[(String, Vec<u8>)], cp: &ClassPath) -> Vec<String> {
    let mut errs = Vec::new();
    for (_, b) in classes {
        for e in verify_class(b, cp) {
            errs.push(e.to_string());
        }
    }
    errs
}

fn report(what: &str, n: usize, errs: &[String]) {
    eprintln!("{what}: {n} classes, {} errors", errs.len());
    for e in errs.iter().take(40) {
        eprintln!("  {e}");
    }
    assert!(errs.is_empty(), "{what}: {} false positives", errs.len());
}

#[test]
fn jdk17_image_has_no_errors() {
    let Some(dir) = common::jdk_corpus() else {
        return;
    };
    let cp = ClassPath::new(std::slice::from_ref(&dir), false).unwrap();
    let classes = ClassPath::read_all(&dir).unwrap();
    assert!(
        classes.len() > 20_000,
        "corpus too small: {}",
        classes.len()
    );
    let errs = verify_all(&classes, &cp);
    report("JDK 17", classes.len(), &errs);
}

fn jar_test(jar: &str, what: &str) {
    let Some(jar) = common::require(Path::new(jar), what) else {
        return;
    };
    let Some(jdk) = common::jdk_corpus() else {
        return;
    };
    // the jar's own dependencies from Debian's /usr/share/java, when present
    let mut entries: Vec<PathBuf> = vec![jar.clone()];
    for dep in [
        "/usr/share/java/jsr305.jar",
        "/usr/share/java/error_prone_annotations.jar",
        "/usr/share/java/guava.jar",
    ] {
        if Path::new(dep).exists() {
            entries.push(dep.into());
        }
    }
    entries.push(jdk);
    let cp = ClassPath::new(&entries, false).unwrap();
    let classes = ClassPath::read_all(&jar).unwrap();
    assert!(classes.len() > 100, "{what}: too few classes");
    let errs = verify_all(&classes, &cp);
    report(what, classes.len(), &errs);
}

#[test]
fn guava_has_no_errors() {
    jar_test("/usr/share/java/guava.jar", "guava (libguava-java)");
}

#[test]
fn rhino_has_no_errors() {
    jar_test("/usr/share/java/js.jar", "rhino (librhino-java)");
}

/// The three parsers (ours, cafebabe, ristretto_classfile) agree on the structure of every JDK class.
#[test]
fn jdk17_cross_parsers_agree() {
    let Some(dir) = common::jdk_corpus() else {
        return;
    };
    let classes = ClassPath::read_all(&dir).unwrap();
    let mut bad = Vec::new();
    for (n, b) in &classes {
        for d in bci_verify::crosscheck::cross_check(b) {
            bad.push(format!("{n}: {d}"));
        }
    }
    for d in bad.iter().take(20) {
        eprintln!("  {d}");
    }
    assert!(bad.is_empty(), "{} cross-parser disagreements", bad.len());
}
