//! Coverage end to end: test-classes/coverage/*.java compiled by javac, every class
//! instrumented with coverage counters, run under HotSpot -Xverify:all with the Java runtime
//! (agent/java/bci/runtime/Cov.java), counters solved back into per-line counts, and every
//! `// hits=N` written in the sources asserted exactly.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::coverage::{instrument, ClassCoverage, ClassId, Options, Skipped};
use bci_rewriter::flow::Split;
use bci_rewriter::Outcome;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn javac(args: &[&str], out: &Path, sources: &[std::path::PathBuf]) {
    let st = Command::new(common::java_home().join("bin/javac"))
        .args(args)
        .arg("-d")
        .arg(out)
        .args(sources)
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
}

/// `line -> expected hits` per source file, from `// hits=N` comments.
fn expectations(src: &Path) -> BTreeMap<u32, u64> {
    let text = std::fs::read_to_string(src).unwrap();
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(p) = line.find("// hits=") {
            let n: String = line[p + 8..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            if let Ok(n) = n.parse() {
                out.insert(i as u32 + 1, n);
            }
        }
    }
    out
}

/// Per line of the class's source: the count of the line's first instruction (lowest pc of
/// any instruction the LineNumberTable puts on that line), over all methods.
fn line_hits(bytes: &[u8], cov: &ClassCoverage, counts: &[u64], hits: &mut BTreeMap<u32, u64>) {
    let cf = bci::ClassFile::parse(bytes).unwrap();
    for m in &cov.methods {
        let member = &cf.methods[m.index];
        let (_, a) = cf.find_attr(&member.attributes, "Code").unwrap();
        let code = bci::CodeAttr::parse(&cf, a).unwrap();
        let insns = code.decode_all().unwrap();
        let Some((_, lnt)) = cf.find_attr(&code.attributes, "LineNumberTable") else {
            continue;
        };
        let mut lines = bci::attrs::LineNumbers::parse(lnt.data, 0).unwrap().entries;
        lines.sort();
        let solved = m
            .plan
            .solve(&m.cfg, bci_rewriter::coverage::method_counts(m, counts));
        // First instruction of each line in this method.
        let mut first: BTreeMap<u32, u32> = BTreeMap::new();
        for (k, i) in insns.iter().enumerate() {
            let at = lines.partition_point(|&(pc, _)| pc as u32 <= i.pc);
            if at == 0 {
                continue;
            }
            let line = lines[at - 1].1 as u32;
            first.entry(line).or_insert(k as u32);
        }
        for (line, k) in first {
            let b = m.cfg.block_of(k).unwrap();
            *hits.entry(line).or_insert(0) += solved.blocks[b as usize];
        }
    }
}

#[test]
fn coverage_counts_match_the_sources_exactly() {
    let ws = common::workspace();
    let work = ws.join(format!("target/test-out/coverage-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let (orig, inst, rt) = (work.join("orig"), work.join("inst"), work.join("rt"));
    for d in [&orig, &inst, &rt] {
        std::fs::create_dir_all(d).unwrap();
    }
    let src_dir = ws.join("test-classes/coverage");
    let sources: Vec<_> = std::fs::read_dir(&src_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    javac(&["-g"], &orig, &sources);
    javac(&[], &rt, &[ws.join("agent/java/bci/runtime/Cov.java")]);

    // Instrument every class; class ids in file order, from 1.
    let mut classes = Vec::new();
    for (k, f) in common::class_files(&orig).iter().enumerate() {
        let bytes = std::fs::read(f).unwrap();
        let opts = Options {
            runtime: "bci/runtime/Cov",
            split: Split::AfterCalls,
            class_id: ClassId::Constant(k as i32 + 1),
        };
        let (out, cov) = instrument(&bytes, &opts).unwrap();
        for (m, d, why) in &cov.skipped {
            assert!(
                !matches!(why, Skipped::Error(_)),
                "{}.{m}{d} left original: {why:?}",
                cov.name
            );
        }
        let dst = inst.join(f.strip_prefix(&orig).unwrap());
        match out {
            Outcome::Rewritten(b) => std::fs::write(&dst, b).unwrap(),
            Outcome::Unchanged => std::fs::write(&dst, &bytes).unwrap(),
        }
        classes.push((bytes, cov));
    }
    assert!(!classes.is_empty());

    // Run each program (a class with a main) under -Xverify:all.
    let dump = work.join("counts.txt");
    let st = Command::new(common::java_home().join("bin/java"))
        .arg("-Xverify:all")
        .arg(format!("-Dbci.cov.dump={}", dump.display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg("CovBasics")
        .status()
        .unwrap();
    assert!(st.success(), "instrumented CovBasics failed");
    let text = std::fs::read_to_string(&dump).unwrap();
    assert!(!text.contains("# lost"), "{text}");
    let mut counts: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for line in text.lines() {
        let (cid, vals) = line.split_once('\t').unwrap();
        counts.insert(
            cid.parse().unwrap(),
            vals.split(',').map(|v| v.parse().unwrap()).collect(),
        );
    }

    // Per source file: solved line hits against the expectations.
    let mut hits: BTreeMap<String, BTreeMap<u32, u64>> = BTreeMap::new();
    for (k, (bytes, cov)) in classes.iter().enumerate() {
        let cf = bci::ClassFile::parse(bytes).unwrap();
        let src = cf.source_file().unwrap().into_owned();
        let none = Vec::new();
        let c = counts.get(&(k + 1)).unwrap_or(&none);
        let zeros = vec![0; cov.counters as usize];
        let c = if c.is_empty() { &zeros } else { c };
        assert_eq!(c.len(), cov.counters as usize, "{}", cov.name);
        line_hits(bytes, cov, c, hits.entry(src).or_default());
    }
    let mut checked = 0;
    let mut wrong = Vec::new();
    for src in &sources {
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let got = hits.get(&name).cloned().unwrap_or_default();
        for (line, want) in expectations(src) {
            let g = got.get(&line).copied().unwrap_or(0);
            if g != want {
                wrong.push(format!("{name}:{line}: hits {g}, expected {want}"));
            }
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} expectations");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let _ = std::fs::remove_dir_all(&work);
}
