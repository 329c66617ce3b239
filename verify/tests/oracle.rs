//! The HotSpot oracle itself: module layout with --patch-module, verdict kinds, probe calls to a class
//! that does not exist, and agreement with our verdicts.
mod common;
use bci_verify::mutate::{mutate, redirect_invokestatic, sites, Kind, Rng};
use bci_verify::oracle::{run_hotspot, VerdictKind};
use bci_verify::{verify_class, ClassPath};
use std::path::Path;

fn write(p: &Path, b: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, b).unwrap();
}

#[test]
fn modules_layout_with_probe_and_defect() {
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let work = common::workspace().join("target/oracle-test-modules");
    let _ = std::fs::remove_dir_all(&work);
    let module = "java.sql";
    let classes = ClassPath::read_all(&tree.join(module)).unwrap();
    let cp = ClassPath::new(std::slice::from_ref(&tree), false).unwrap();
    let mut probe = None;
    let mut broken = None;
    let mut rng = Rng::new(11);
    let mut expect = Vec::new();
    for (name, b) in &classes {
        if name.ends_with("module-info.class") {
            continue;
        }
        let mut out = b.clone();
        if probe.is_none() {
            if let Some(p) = redirect_invokestatic(b, "java/lang/BciProbe") {
                probe = Some(name.clone());
                out = p;
            }
        } else if broken.is_none() {
            if let Some(s) = sites(b).into_iter().find(|s| !s.method.starts_with("<")) {
                if let Some(m) = mutate(b, &s, Kind::DropFrame, &mut rng)
                    .or_else(|| mutate(b, &s, Kind::MaxStackLow, &mut rng))
                {
                    broken = Some(name.clone());
                    out = m;
                }
            }
        }
        write(&work.join(module).join(name), &out);
        expect.push((
            name.trim_end_matches(".class").replace('/', "."),
            verify_class(&out, &cp).is_empty(),
        ));
    }
    let probe = probe
        .expect("a class with invokestatic")
        .trim_end_matches(".class")
        .replace('/', ".");
    let broken = broken
        .expect("a mutable class")
        .trim_end_matches(".class")
        .replace('/', ".");
    let verdicts = run_hotspot(&home, &work, true, &[]).unwrap();
    assert_eq!(verdicts.len(), expect.len());
    let mut disagree = 0;
    for (name, ours_ok) in &expect {
        let v = verdicts
            .iter()
            .find(|v| &v.class == name)
            .expect("verdict for every class");
        if *name == probe {
            assert_eq!(v.kind, VerdictKind::Ok, "probe class: {v:?}");
        } else if *name == broken {
            assert_eq!(v.kind, VerdictKind::VerifyError, "broken class: {v:?}");
        } else {
            assert_eq!(v.kind, VerdictKind::Ok, "{v:?}");
        }
        if *ours_ok != v.ok {
            disagree += 1;
            eprintln!("disagree: {name}: ours ok={ours_ok}, hotspot {v:?}");
        }
    }
    assert_eq!(disagree, 0);
    let _ = std::fs::remove_dir_all(&work);
}

/// HotSpot (module layout, --patch-module for every module) accepts every class of the unmodified JDK image.
#[test]
fn hotspot_accepts_unmodified_jdk() {
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let t = std::time::Instant::now();
    let verdicts = run_hotspot(&home, &tree, true, &[]).unwrap();
    let mut kinds = std::collections::BTreeMap::new();
    for v in &verdicts {
        *kinds.entry(v.kind).or_insert(0usize) += 1;
    }
    eprintln!(
        "HotSpot on the JDK image: {} classes in {:.1}s: {kinds:?}",
        verdicts.len(),
        t.elapsed().as_secs_f64()
    );
    for v in verdicts.iter().filter(|v| v.rejected()).take(20) {
        eprintln!("  {v:?}");
    }
    assert!(verdicts.len() > 20_000);
    assert_eq!(verdicts.iter().filter(|v| v.rejected()).count(), 0);
}

/// If the oracle JVM dies part-way, the class it was on gets `Other` and a new JVM does the rest.
#[test]
fn oracle_survives_a_dying_jvm() {
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let src = tree.join("jdk.zipfs/jdk/nio/zipfs/ZipUtils.class");
    let missing = common::workspace().join("target/oracle-test-missing/Nope.class");
    let files = vec![
        (src.clone(), "jdk.nio.zipfs.ZipUtils".to_string()),
        (missing, "x.Nope".to_string()), // the harness dies reading it
        (src, "jdk.nio.zipfs.ZipUtils".to_string()),
    ];
    let v = bci_verify::oracle::run_hotspot_isolated(&home, &files, &[]).unwrap();
    let kinds: Vec<_> = v.iter().map(|v| v.kind).collect();
    assert_eq!(
        kinds,
        vec![VerdictKind::Ok, VerdictKind::Other, VerdictKind::Ok],
        "{v:?}"
    );
}
