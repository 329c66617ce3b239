//! `Options::leaf_probes`: pure leaves (no instruction that can call, throw, allocate or load a
//! class) get `leafEnter`/`leafExit`; every other method keeps `enter`/`exit`/`unwind`; without
//! the option nothing calls the leaf probes.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci::opcodes::op;
use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};
use std::collections::BTreeMap;

/// Method name+desc -> names of the runtime methods its code calls, in order.
fn probe_calls(bytes: &[u8], runtime: &str) -> BTreeMap<String, Vec<String>> {
    let cf = bci::ClassFile::parse(bytes).unwrap();
    let mut out = BTreeMap::new();
    for m in &cf.methods {
        let key = format!("{}{}", cf.member_name(m), cf.member_desc(m));
        let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
            continue;
        };
        let code = bci::CodeAttr::parse(&cf, a).unwrap();
        let mut calls = Vec::new();
        for i in code.decode_all().unwrap() {
            if i.opcode == op::INVOKESTATIC {
                let r = cf.cp.member_ref(i.cp_index(code.code).unwrap()).unwrap();
                if r.class == runtime {
                    calls.push(r.name.to_string());
                }
            }
        }
        out.insert(key, calls);
    }
    out
}

fn rewrite(bytes: &[u8], leaf: bool) -> Vec<u8> {
    let opts = Options {
        leaf_probes: leaf,
        ..Options::default()
    };
    match instrument_with(bytes, &Rules::cpu_times(), &mut SequentialIds(0), &opts).unwrap() {
        Outcome::Rewritten(b) => b,
        Outcome::Unchanged => panic!("unchanged"),
    }
}

#[test]
fn pure_leaves_get_leaf_probes() {
    let dir = common::jdk_corpus();
    let rt = "bci/runtime/Probes";
    let list = std::fs::read(dir.join("java.base/java/util/ArrayList.class")).unwrap();
    let leaf = probe_calls(&rewrite(&list, true), rt);
    let plain = probe_calls(&rewrite(&list, false), rt);
    // size(): aload_0, getfield size, ireturn
    assert_eq!(leaf["size()I"], ["leafEnter", "leafExit"]);
    assert_eq!(plain["size()I"], ["enter", "exit"]);
    // add(Object) calls add(Object, Object[], int): an ordinary frame and a handler
    assert_eq!(
        leaf["add(Ljava/lang/Object;)Z"],
        ["enter", "exit", "unwind"]
    );
    for (m, calls) in &leaf {
        // a leaf has only leaf probes (no frame, and no handler: it cannot throw)
        if calls.iter().any(|c| c.starts_with("leaf")) {
            assert_eq!(calls[0], "leafEnter", "{m}");
            assert!(calls[1..].iter().all(|c| c == "leafExit"), "{m}: {calls:?}");
        }
        // the same methods are probed, with the same number of exits
        let p = &plain[m];
        assert_eq!(calls.len(), p.len(), "{m}: {calls:?} vs {p:?}");
    }
    assert!(plain.values().flatten().all(|c| !c.starts_with("leaf")));
    let n = leaf
        .values()
        .filter(|c| c.first().map(String::as_str) == Some("leafEnter"))
        .count();
    assert!(n >= 3, "ArrayList has few leaves? {n}");
    // java.lang.Object.<init> is `return`: a leaf
    let obj = std::fs::read(dir.join("java.base/java/lang/Object.class")).unwrap();
    assert_eq!(
        probe_calls(&rewrite(&obj, true), rt)["<init>()V"],
        ["leafEnter", "leafExit"]
    );
}
