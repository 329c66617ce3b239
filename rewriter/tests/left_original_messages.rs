//! The reasons a valid class is left original read the same in every mode: a class that
//! declares members named like those bci adds names its first such member (class-file order)
//! whether offline cpu=times, offline coverage or the agent's coverage rewrites it; a full
//! constant pool is the class's limit, not a member that exists only in bci's rewrite.

use bci::opcodes::op;
use bci_rewriter::coverage::{self, ClassId};
use bci_rewriter::flow::Split;
use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};

/// A version-49 class `D` with static fields and methods `()I` (each `iconst_0; ireturn`) of the
/// names given, in that order, and `ints` Integer constants more in its pool.
fn class(fields: &[&str], methods: &[&str], ints: u32) -> Vec<u8> {
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let utf = |pool: &mut Vec<Vec<u8>>, s: &str| -> u16 {
        let mut e = vec![1];
        e.extend_from_slice(&(s.len() as u16).to_be_bytes());
        e.extend_from_slice(s.as_bytes());
        pool.push(e);
        pool.len() as u16
    };
    let d = utf(&mut pool, "D");
    pool.push(vec![7, 0, d as u8]);
    let this = pool.len() as u16;
    let o = utf(&mut pool, "java/lang/Object");
    pool.push(vec![7, 0, o as u8]);
    let sup = pool.len() as u16;
    let code = utf(&mut pool, "Code");
    let int_desc = utf(&mut pool, "()I");
    let string = utf(&mut pool, "Ljava/lang/String;");
    let f: Vec<u16> = fields.iter().map(|n| utf(&mut pool, n)).collect();
    let m: Vec<u16> = methods.iter().map(|n| utf(&mut pool, n)).collect();
    for k in 0..ints {
        let mut e = vec![3];
        e.extend_from_slice(&(0x4000_0000 + k).to_be_bytes());
        pool.push(e);
    }
    let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 49];
    b.extend_from_slice(&(pool.len() as u16 + 1).to_be_bytes());
    for e in &pool {
        b.extend_from_slice(e);
    }
    b.extend_from_slice(&[0, 0x21]);
    b.extend_from_slice(&this.to_be_bytes());
    b.extend_from_slice(&sup.to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(&(f.len() as u16).to_be_bytes());
    for n in f {
        b.extend_from_slice(&[0, 9]);
        b.extend_from_slice(&n.to_be_bytes());
        b.extend_from_slice(&string.to_be_bytes());
        b.extend_from_slice(&[0, 0]);
    }
    b.extend_from_slice(&(m.len() as u16).to_be_bytes());
    for n in m {
        b.extend_from_slice(&[0, 9]);
        b.extend_from_slice(&n.to_be_bytes());
        b.extend_from_slice(&int_desc.to_be_bytes());
        b.extend_from_slice(&[0, 1]);
        b.extend_from_slice(&code.to_be_bytes());
        let body = [op::ICONST_0, op::IRETURN];
        b.extend_from_slice(&(12 + body.len() as u32).to_be_bytes());
        b.extend_from_slice(&[0, 1, 0, 0]);
        b.extend_from_slice(&(body.len() as u32).to_be_bytes());
        b.extend_from_slice(&body);
        b.extend_from_slice(&[0, 0, 0, 0]);
    }
    b.extend_from_slice(&[0, 0]);
    b
}

/// The error of each mode that adds members: (mode, error text).
fn reasons(bytes: &[u8]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let offline = Options {
        runtime_ids: true,
        marker: true,
        ..Options::default()
    };
    let r = instrument_with(bytes, &Rules::cpu_times(), &mut SequentialIds(0), &offline);
    out.push((
        "offline cpu=times",
        r.map(|_| ()).map_err(|e| e.to_string()),
    ));
    for (what, class_id) in [
        (
            "offline coverage",
            ClassId::Registered {
                module_reads: false,
            },
        ),
        ("agent coverage", ClassId::Constant(3)),
    ] {
        let opts = coverage::Options {
            runtime: "bci/runtime/Cov",
            split: Split::AfterCalls,
            class_id,
        };
        let r = coverage::instrument(bytes, &opts);
        out.push((what, r.map(|_| ()).map_err(|e| e.to_string())));
    }
    out.into_iter()
        .map(|(w, r)| (w, r.err().unwrap_or_else(|| panic!("{w}: instrumented"))))
        .collect()
}

#[test]
fn every_mode_names_the_first_member_named_like_bci_own() {
    // the tester's Coll: every name bci adds taken, fields first in the class file
    let c = class(
        &["bci$cid", "bci$s", "bci$o", "bci$base"],
        &["bci$a", "bci$b", "bci$c", "bci$r", "f"],
        0,
    );
    for (what, e) in reasons(&c) {
        assert_eq!(
            e, "D: field bci$cid Ljava/lang/String; exists already (bci adds a field of that name)",
            "{what}"
        );
    }
    // methods only, bci$r before bci$c: each mode named the one it adds first
    let c = class(&[], &["f", "bci$r", "bci$c"], 0);
    for (what, e) in reasons(&c) {
        assert_eq!(
            e, "D: method bci$r()I exists already (bci adds a method of that name)",
            "{what}"
        );
    }
    // other bci$ names are the class's own business
    let c = class(&["bci$x"], &["bci$y", "f"], 0);
    let r = coverage::instrument(
        &c,
        &coverage::Options {
            runtime: "bci/runtime/Cov",
            split: Split::AfterCalls,
            class_id: ClassId::Constant(3),
        },
    );
    assert!(matches!(r, Ok((Outcome::Rewritten(_), _))), "{:?}", r.err());
}

#[test]
fn a_full_constant_pool_is_the_class_limit() {
    // 65,520 entries: the rewrite needs more than the 14 left
    let c = class(&[], &["f"], 65_520 - 8);
    let cf = bci::ClassFile::parse(&c).unwrap();
    assert_eq!(cf.cp.count(), 65_521);
    for (what, e) in reasons(&c) {
        assert!(!e.contains("bci$"), "{what}: {e}");
        assert!(
            e.contains(
                "constant pool would exceed 65535 entries: the class has 65520 and the rewrite needs more than the 14 that fit"
            ),
            "{what}: {e}"
        );
    }
}

#[test]
fn a_full_constant_pool_is_one_class_error_when_methods_may_fail_alone() {
    // the agent's and `bci instrument`'s form: a method that cannot take probes is left alone;
    // a pool with room for no method's probes is the class's failure, said once (before, one
    // "method left original" line per method, each counted as a method left original)
    let c = class(&[], &["f", "g", "h"], 65_520);
    let opts = Options {
        method_fallback: true,
        ..Options::default()
    };
    let r = bci_rewriter::instrument_methods(&c, &Rules::cpu_times(), &mut SequentialIds(0), &opts);
    let e = r.map(|(_, left)| left.len()).expect_err("one class error");
    assert!(
        e.to_string()
            .starts_with("constant pool would exceed 65535 entries"),
        "{e}"
    );
    // tracing rules alike
    let rules = Rules::parse(
        "[[rule]]\nname = \"d\"\nclass = \"D\"\ncount = true\n",
        "r.toml",
    )
    .unwrap();
    let mut next = |_: &bci_rewriter::trace::TraceRule| 0;
    let r = bci_rewriter::trace::instrument(&c, rules.trace_rules(), &mut next);
    let e = r.map(|(_, left)| left.len()).expect_err("one class error");
    assert!(
        e.to_string()
            .starts_with("constant pool would exceed 65535 entries"),
        "{e}"
    );
}
