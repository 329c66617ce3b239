//! Correct rewrites must pass: every method of guava, rhino and JDK classes gets a probe call at its
//! entry (shifting handlers, frames, line numbers), calling a probe class that does not exist.
//! HotSpot (the oracle) and our verifier must both accept all of them.
mod common;
use bci_verify::mutate::insert_entry_probe;
use bci_verify::oracle::{run_hotspot, run_hotspot_isolated};
use bci_verify::{verify_class, ClassPath};

#[test]
fn entry_probes_in_jars_pass_both_verifiers() {
    let Some((guava, rhino)) = common::guava_and_rhino() else {
        return;
    };
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let work = common::workspace().join("target/rewrite-test-jars");
    let _ = std::fs::remove_dir_all(&work);
    let out = work.join("classes");
    let mut n = 0;
    let mut ours_bad = Vec::new();
    let cp = ClassPath::new(&[guava.clone(), rhino.clone(), tree.clone()], false).unwrap();
    for jar in [&guava, &rhino] {
        for (name, b) in ClassPath::read_all(jar).unwrap() {
            let r = insert_entry_probe(&b, "org/bci/Probe").expect("rewrite");
            let p = out.join(&name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &r).unwrap();
            for e in verify_class(&r, &cp) {
                ours_bad.push(e.to_string());
            }
            n += 1;
        }
    }
    let verdicts = run_hotspot(&home, &out, false, &[]).unwrap();
    let rejected: Vec<_> = verdicts.iter().filter(|v| v.rejected()).collect();
    let others = verdicts.iter().filter(|v| !v.ok && !v.rejected()).count();
    println!("rewritten jar classes: {n}; ours: {} errors; HotSpot: {} rejected, {others} not linkable (missing deps)", ours_bad.len(), rejected.len());
    for e in ours_bad.iter().take(10) {
        println!("  ours: {e}");
    }
    for v in rejected.iter().take(10) {
        println!("  hotspot: {v:?}");
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(ours_bad.is_empty());
    assert!(rejected.is_empty());
    let _ = run_hotspot_isolated; // (isolated loaders are exercised by the mutation test)
}

#[test]
fn entry_probes_in_jdk_modules_pass_both_verifiers() {
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let work = common::workspace().join("target/rewrite-test-jdk");
    let _ = std::fs::remove_dir_all(&work);
    let cp = ClassPath::new(std::slice::from_ref(&tree), false).unwrap();
    let mut n = 0;
    let mut ours_bad = Vec::new();
    // all modules but java.base (its classes run the JVM that judges them; the probe class is absent)
    let mut mods: Vec<_> = std::fs::read_dir(&tree)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    mods.sort();
    for m in mods {
        let module = m.file_name().unwrap().to_string_lossy().to_string();
        if module == "java.base" {
            continue;
        }
        for (name, b) in ClassPath::read_all(&m).unwrap() {
            if name.ends_with("module-info.class") {
                continue;
            }
            let r = insert_entry_probe(&b, "java/lang/BciProbe").expect("rewrite");
            let p = work.join(&module).join(&name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &r).unwrap();
            for e in verify_class(&r, &cp) {
                ours_bad.push(e.to_string());
            }
            n += 1;
        }
    }
    let t = std::time::Instant::now();
    let verdicts = run_hotspot(&home, &work, true, &[]).unwrap();
    let rejected: Vec<_> = verdicts.iter().filter(|v| v.rejected()).collect();
    let others: Vec<_> = verdicts.iter().filter(|v| !v.ok && !v.rejected()).collect();
    println!(
        "rewritten JDK classes (module layout): {n}; ours: {} errors; HotSpot: {} rejected, {} other, {:.1}s",
        ours_bad.len(),
        rejected.len(),
        others.len(),
        t.elapsed().as_secs_f64()
    );
    for e in ours_bad.iter().take(10) {
        println!("  ours: {e}");
    }
    for v in rejected.iter().chain(others.iter()).take(10) {
        println!("  hotspot: {v:?}");
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(ours_bad.is_empty());
    assert!(rejected.is_empty());
    assert_eq!(verdicts.len(), n);
}
