//! Mutation corpus: >= 10,000 classes with one defect each, made from guava and rhino classes;
//! our verdict must agree with HotSpot's (the oracle) on >= 99% of them.
//! BCI_MUTANTS overrides the count (default 10000).
mod common;
use std::path::Path;

#[test]
fn mutants_agree_with_hotspot() {
    let Some((guava, rhino)) = common::guava_and_rhino() else {
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

/// JDK classes (all modules but java.base) mutated once each, written in module layout and judged by
/// HotSpot through `run_hotspot(.., modules = true)` (--patch-module): the path other crates use for
/// rewritten JDK classes. No mutant is a supertype of another (linking a class links its supertypes).
#[test]
fn jdk_mutants_in_module_layout_agree_with_hotspot() {
    use bci_verify::classfile::{mutf8_to_string, ClassFile};
    use bci_verify::mutate::{mutate, sites, Rng, KINDS};
    use bci_verify::oracle::{run_hotspot, VerdictKind};
    use std::collections::{BTreeMap, HashSet};
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let n: usize = std::env::var("BCI_JDK_MUTANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let work = common::workspace().join("target/mutation-test-jdk");
    let _ = std::fs::remove_dir_all(&work);
    let cp = bci_verify::ClassPath::new(std::slice::from_ref(&tree), false).unwrap();
    let mut all = Vec::new();
    let mut mods: Vec<_> = std::fs::read_dir(&tree)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    mods.sort();
    for m in mods {
        let name = m.file_name().unwrap().to_string_lossy().to_string();
        if name == "java.base" {
            continue;
        }
        for (rel, b) in bci_verify::ClassPath::read_all(&m).unwrap() {
            if !rel.ends_with("module-info.class") {
                all.push((name.clone(), rel, b));
            }
        }
    }
    let mut rng = Rng::new(42);
    // deterministic shuffle
    for i in (1..all.len()).rev() {
        all.swap(i, rng.below(i + 1));
    }
    // direct supertypes of every candidate, for the transitive closure below
    let mut direct: std::collections::HashMap<String, Vec<String>> =
        std::collections::HashMap::new();
    for (_, _, b) in all.iter() {
        if let Ok(cf) = ClassFile::parse(b) {
            let mut v: Vec<String> = cf.super_class.map(mutf8_to_string).into_iter().collect();
            v.extend(cf.interfaces.iter().map(|i| mutf8_to_string(i)));
            direct.insert(mutf8_to_string(cf.this_class), v);
        }
    }
    let mut supers = HashSet::new();
    let mut chosen = Vec::new();
    for (module, rel, b) in all.iter() {
        if chosen.len() >= n {
            break;
        }
        let Ok(cf) = ClassFile::parse(b) else {
            continue;
        };
        let this = mutf8_to_string(cf.this_class);
        if supers.contains(&this) {
            continue;
        }
        let ss = sites(b);
        if ss.is_empty() {
            continue;
        }
        let kind = KINDS[chosen.len() % KINDS.len()];
        let Some(m) = (0..8).find_map(|_| mutate(b, &ss[rng.below(ss.len())], kind, &mut rng))
        else {
            continue;
        };
        let mut stack = direct.get(&this).cloned().unwrap_or_default();
        while let Some(s) = stack.pop() {
            if supers.insert(s.clone()) {
                stack.extend(direct.get(&s).cloned().unwrap_or_default());
            }
        }
        chosen.push((module, rel, this, kind, m));
    }
    // drop mutants that turned out to be supertypes of earlier ones
    chosen.retain(|c| !supers.contains(&c.2));
    for (module, rel, _, _, m) in &chosen {
        let p = work.join(module).join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, m).unwrap();
    }
    let t = std::time::Instant::now();
    let verdicts = run_hotspot(&home, &work, true, &[]).unwrap();
    let by_name: BTreeMap<_, _> = verdicts.iter().map(|v| (v.class.clone(), v)).collect();
    let (mut compared, mut agree, mut excluded) = (0, 0, 0);
    let mut table: BTreeMap<String, usize> = BTreeMap::new();
    for (_, _, this, kind, m) in &chosen {
        let v = by_name[&this.replace('/', ".")];
        if !(v.ok || v.rejected()) {
            excluded += 1;
            continue;
        }
        compared += 1;
        let ours = bci_verify::verify_class(m, &cp);
        if ours.is_empty() != v.ok {
            *table
                .entry(format!(
                    "{kind:?} ours_ok={} hotspot={:?}",
                    ours.is_empty(),
                    v.kind
                ))
                .or_default() += 1;
            eprintln!(
                "  disagree {this}: ours {:?} | hotspot {}",
                ours.first().map(|e| e.to_string()),
                v.message.chars().take(200).collect::<String>()
            );
        } else {
            agree += 1;
        }
    }
    let rejected = verdicts
        .iter()
        .filter(|v| v.kind == VerdictKind::VerifyError || v.kind == VerdictKind::FormatError)
        .count();
    println!(
        "JDK mutants (module layout): {} mutants, {compared} compared, {agree} agree ({:.2}%), {excluded} excluded, HotSpot rejected {rejected}, {:.1}s",
        chosen.len(),
        100.0 * agree as f64 / compared.max(1) as f64,
        t.elapsed().as_secs_f64()
    );
    println!("disagreements: {table:?}");
    let _ = std::fs::remove_dir_all(&work);
    assert!(chosen.len() >= n * 9 / 10);
    assert!(compared * 100 >= chosen.len() * 95, "too many excluded");
    assert!(agree * 100 >= compared * 99, "agreement below 99%");
    assert!(rejected > compared / 2 && rejected < compared);
}
