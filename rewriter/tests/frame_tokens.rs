//! `Options::frame_tokens`: methods with an ordinary frame call `enterT(I)I` and keep its
//! result in a new int local, which every `exitT(I)V` and `unwindT(I)V` loads; pure leaves keep
//! `leafEnter`/`leafExit`; a constructor sets the local to -1 at entry and calls `enterT` after
//! its super()/this() call.
#[path = "../../bci/tests/common/mod.rs"]
mod common;
mod handmade;

use bci::opcodes::op;
use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};

const RT: &str = "bci/runtime/Probes";

fn rewrite(bytes: &[u8], tokens: bool) -> Vec<u8> {
    let opts = Options {
        leaf_probes: true,
        frame_tokens: tokens,
        ..Options::default()
    };
    match instrument_with(bytes, &Rules::cpu_times(), &mut SequentialIds(0), &opts).unwrap() {
        Outcome::Rewritten(b) => b,
        Outcome::Unchanged => panic!("unchanged"),
    }
}

/// One method's runtime calls: (name, the instruction before it, the one after it).
struct Call {
    name: String,
    before: Option<(u8, Option<u16>)>,
    after: Option<(u8, Option<u16>)>,
}

/// Per method (name + descriptor, in class order): max_locals and its runtime calls.
fn calls(bytes: &[u8]) -> Vec<(String, u16, Vec<Call>)> {
    let cf = bci::ClassFile::parse(bytes).unwrap();
    let mut out = Vec::new();
    for m in &cf.methods {
        let key = format!("{}{}", cf.member_name(m), cf.member_desc(m));
        let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
            continue;
        };
        let code = bci::CodeAttr::parse(&cf, a).unwrap();
        let insns = code.decode_all().unwrap();
        let at = |k: usize| {
            insns
                .get(k)
                .map(|i: &bci::Insn| (i.opcode, i.local(code.code)))
        };
        let mut cs = Vec::new();
        for (k, i) in insns.iter().enumerate() {
            if i.opcode == op::INVOKESTATIC {
                let r = cf.cp.member_ref(i.cp_index(code.code).unwrap()).unwrap();
                if r.class == RT {
                    cs.push(Call {
                        name: r.name.to_string(),
                        before: k.checked_sub(1).and_then(at),
                        after: at(k + 1),
                    });
                }
            }
        }
        out.push((key, code.max_locals, cs));
    }
    out
}

fn is_iload(x: Option<(u8, Option<u16>)>) -> Option<u16> {
    match x {
        Some((op::ILOAD | op::ILOAD_0..=op::ILOAD_3, l)) => l,
        _ => None,
    }
}

fn is_istore(x: Option<(u8, Option<u16>)>) -> Option<u16> {
    match x {
        Some((op::ISTORE | op::ISTORE_0..=op::ISTORE_3, l)) => l,
        _ => None,
    }
}

#[test]
fn ordinary_frames_keep_their_token_in_a_new_local() {
    let dir = common::jdk_corpus();
    let list = std::fs::read(dir.join("java.base/java/util/ArrayList.class")).unwrap();
    let orig = calls(&list);
    let with = calls(&rewrite(&list, true));
    let without = calls(&rewrite(&list, false));
    let (mut tokens, mut leaves, mut ctors) = (0, 0, 0);
    for (((key, max0, _), (k2, max, cs)), (k3, _, plain)) in orig.iter().zip(&with).zip(&without) {
        assert_eq!((key, key), (k2, k3));
        let names: Vec<&str> = cs.iter().map(|c| c.name.as_str()).collect();
        let plain: Vec<&str> = plain.iter().map(|c| c.name.as_str()).collect();
        if names.first() == Some(&"leafEnter") {
            // pure leaves: unchanged by the option
            assert_eq!(names, plain, "{key}");
            leaves += 1;
            continue;
        }
        // the same probes in the same places, in their token form
        let untokened: Vec<String> = names
            .iter()
            .map(|n| n.trim_end_matches('T').into())
            .collect();
        assert_eq!(untokened, plain, "{key}");
        assert_eq!(names[0], "enterT", "{key}: {names:?}");
        // enterT's result is stored in a local the method did not have
        let tok = is_istore(cs[0].after).unwrap_or_else(|| panic!("{key}: no istore after enterT"));
        assert!(
            tok >= *max0 && tok < *max,
            "{key}: token local {tok} (max_locals {max0} -> {max})"
        );
        for c in &cs[1..] {
            assert!(
                c.name == "exitT" || c.name == "unwindT",
                "{key}: {}",
                c.name
            );
            assert_eq!(
                is_iload(c.before),
                Some(tok),
                "{key}: {} without the token",
                c.name
            );
        }
        if key.starts_with("<init>") {
            ctors += 1;
        }
        tokens += 1;
    }
    assert!(
        tokens > 20 && leaves >= 3 && ctors >= 3,
        "{tokens} {leaves} {ctors}"
    );
}

#[test]
fn constructor_token_is_minus_one_until_the_initialization_call() {
    let out = rewrite(&handmade::two_super_calls(), true);
    let cf = bci::ClassFile::parse(&out).unwrap();
    let (_, a) = cf.find_attr(&cf.methods[0].attributes, "Code").unwrap();
    let code = bci::CodeAttr::parse(&cf, a).unwrap();
    let insns = code.decode_all().unwrap();
    // iconst_m1; istore 2 first: every path to a return or the handler passes a store
    assert_eq!(insns[0].opcode, op::ICONST_M1);
    assert_eq!(
        (insns[1].opcode, insns[1].local(code.code)),
        (op::ISTORE_2, Some(2))
    );
    let names: Vec<String> = calls(&out)[0].2.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, ["enterT", "enterT", "exitT", "unwindT"]);
}
