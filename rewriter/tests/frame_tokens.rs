//! `Options::frame_tokens`: methods with an ordinary frame call `enterT(I)I` and keep its
//! result in a new int local, which every `exitT(I)V` and `unwindT(I)V` loads; pure leaves keep
//! `leafEnter`/`leafExit`; a constructor calls `enterT` at its first instruction, before its
//! super()/this() call; handlers over a call start with `exitT(token + 2)`.
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
    /// `iload L; iconst_2; iadd; invokestatic exitT` (a handler's reset): Some(L)
    reset: Option<u16>,
    /// the call's instruction index
    index: usize,
    /// whether the reset's `iload` is a handler's first instruction (javac's `finally`
    /// handlers that cover their own first store have it after that store)
    at_handler: bool,
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
        let handlers: Vec<u32> = code.handlers.iter().map(|h| h.handler as u32).collect();
        let mut cs = Vec::new();
        for (k, i) in insns.iter().enumerate() {
            if i.opcode == op::INVOKESTATIC {
                let r = cf.cp.member_ref(i.cp_index(code.code).unwrap()).unwrap();
                if r.class == RT {
                    let back = |j: usize| k.checked_sub(j).and_then(at);
                    let reset = match (back(3), back(2), back(1)) {
                        (l, Some((op::ICONST_2, _)), Some((op::IADD, _))) if r.name == "exitT" => {
                            is_iload(l)
                        }
                        _ => None,
                    };
                    cs.push(Call {
                        name: r.name.to_string(),
                        before: back(1),
                        after: at(k + 1),
                        at_handler: reset.is_some() && handlers.contains(&insns[k - 3].pc),
                        reset,
                        index: k,
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
    let (mut tokens, mut leaves, mut ctors, mut resets) = (0, 0, 0, 0);
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
        assert_eq!(names[0], "enterT", "{key}: {names:?}");
        // enterT's result is stored in a local the method did not have
        let tok = is_istore(cs[0].after).unwrap_or_else(|| panic!("{key}: no istore after enterT"));
        assert!(
            tok >= *max0 && tok < *max,
            "{key}: token local {tok} (max_locals {max0} -> {max})"
        );
        // every method, constructors too, enters at its first instruction (after the id)
        assert_eq!(cs[0].index, 1, "{key}: enterT is not the method's entry");
        // the handlers' resets load the same token
        let own: Vec<&Call> = cs.iter().filter(|c| c.reset.is_none()).collect();
        for c in cs.iter().filter(|c| c.reset.is_some()) {
            assert_eq!(
                c.reset,
                Some(tok),
                "{key}: a handler's exitT without the token"
            );
            resets += 1;
        }
        // otherwise the same probes in the same places, in their token form
        let untokened: Vec<String> = own
            .iter()
            .map(|c| c.name.trim_end_matches('T').into())
            .collect();
        assert_eq!(untokened, plain, "{key}");
        for c in &own[1..] {
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
        tokens > 20 && leaves >= 3 && ctors >= 3 && resets >= 1,
        "{tokens} {leaves} {ctors} {resets}"
    );
}

#[test]
fn constructor_enters_at_its_first_instruction() {
    let out = rewrite(&handmade::two_super_calls(), true);
    let cf = bci::ClassFile::parse(&out).unwrap();
    let (_, a) = cf.find_attr(&cf.methods[0].attributes, "Code").unwrap();
    let code = bci::CodeAttr::parse(&cf, a).unwrap();
    let insns = code.decode_all().unwrap();
    // id 0; enterT; istore 2 first, before either super() call
    assert_eq!(insns[0].opcode, op::ICONST_0);
    assert_eq!(insns[1].opcode, op::INVOKESTATIC);
    assert_eq!(
        (insns[2].opcode, insns[2].local(code.code)),
        (op::ISTORE_2, Some(2))
    );
    let names: Vec<String> = calls(&out)[0].2.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, ["enterT", "exitT", "unwindT"]);
    // the catch-all still covers no initialization call
    let inits: Vec<u32> = insns
        .iter()
        .filter(|i| i.opcode == op::INVOKESPECIAL)
        .map(|i| i.pc)
        .collect();
    assert_eq!(inits.len(), 2);
    for h in &code.handlers {
        for &pc in &inits {
            assert!(
                !(h.start as u32 <= pc && pc < h.end as u32),
                "{h:?} covers {pc}"
            );
        }
    }
}

/// Handlers over a call start with `exitT(token + 2)`; a handler over no call does not.
#[test]
fn handlers_over_calls_drop_the_frames_above() {
    // static void m() { try { x(); } catch (Throwable t) {} try { int i = 0; } catch (..) {} }
    let bytes = handmade::static_method(
        "m",
        "()V",
        1,
        &[
            0xb8, 0, 11, // 0 invokestatic C.x()V
            0xa7, 0, 4,    // 3 goto 7
            0x4b, // 6 astore_0
            0x03, // 7 iconst_0
            0x3b, // 8 istore_0
            0xa7, 0, 4,    // 9 goto 13
            0x4b, // 12 astore_0
            0xb1, // 13 return
        ],
        &[[0, 3, 6, 0], [7, 9, 12, 0]],
    );
    let out = rewrite(&bytes, true);
    let cs = &calls(&out)[0].2;
    let names: Vec<&str> = cs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["enterT", "exitT", "exitT", "unwindT"], "{names:?}");
    let tok = is_istore(cs[0].after).unwrap();
    assert_eq!(cs[1].reset, Some(tok), "the first handler's reset");
    assert!(cs[1].at_handler, "the reset is the handler's first code");
    assert_eq!(cs[2].reset, None, "the return's exit");
    // and the rewritten class passes our verifier's structural checks
    let cf = bci::ClassFile::parse(&out).unwrap();
    cf.check().unwrap();
}
