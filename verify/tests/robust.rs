//! No panics on any input bytes: truncations and random byte flips of real classes.
mod common;
use bci_verify::{mutate::Rng, verify_class, NoHierarchy};

#[test]
fn garbage_never_panics() {
    let Some(dir) = common::jdk_corpus() else {
        return;
    };
    let base = dir.join("java.base/java/util");
    let classes = bci_verify::ClassPath::read_all(&base).unwrap();
    assert!(!classes.is_empty());
    let mut rng = Rng::new(7);
    // cross_check runs third-party parsers under catch_unwind; their panics print to stderr, so only
    // exercise it when asked (BCI_FUZZ_CROSS=1)
    let cross = std::env::var("BCI_FUZZ_CROSS").is_ok();
    let mut rejected = 0;
    let mut runs = 0;
    // BCI_FUZZ_ROUNDS: damaged copies per class (default 40); BCI_FUZZ_CLASSES: classes used (default 300)
    let rounds: usize = std::env::var("BCI_FUZZ_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let n: usize = std::env::var("BCI_FUZZ_CLASSES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    for (_, b) in classes.iter().take(n) {
        for _ in 0..rounds {
            let mut m = b.clone();
            match rng.below(3) {
                0 => m.truncate(rng.below(b.len())),
                1 => {
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(m.len());
                        m[i] = rng.next_u64() as u8;
                    }
                }
                _ => {
                    let i = rng.below(m.len());
                    m.insert(i, rng.next_u64() as u8);
                }
            }
            runs += 1;
            rejected += !verify_class(&m, &NoHierarchy).is_empty() as usize;
            if cross {
                let _ = bci_verify::crosscheck::cross_check(&m);
            }
        }
    }
    eprintln!("{runs} damaged classes, {rejected} rejected");
    assert!(rejected > runs / 2);
}

#[test]
fn display_format() {
    let e = bci_verify::VerifyError {
        class: "java/util/HashMap".into(),
        method: Some("resize()[Ljava/util/HashMap$Node;".into()),
        offset: Some(65),
        message: "expected int, found float".into(),
    };
    assert_eq!(
        e.to_string(),
        "java.util.HashMap.resize()[Ljava/util/HashMap$Node; @65: expected int, found float"
    );
}
