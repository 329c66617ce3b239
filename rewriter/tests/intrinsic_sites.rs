//! `Options::intrinsic_sites`: the HotSpot intrinsics of `bci_rewriter::intrinsics` get no
//! probes of their own; each call of one, in a method that gets `enterT`, is wrapped in
//! `enterT(id)` / `exitT(token)` with the token in a new int local (0 at entry).
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci::opcodes::op;
use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};

const RT: &str = "bci/runtime/Probes";

fn rewrite(bytes: &[u8], sites: bool, rules: &Rules) -> Vec<u8> {
    let opts = Options {
        leaf_probes: true,
        frame_tokens: true,
        intrinsic_sites: sites,
        ..Options::default()
    };
    match instrument_with(bytes, rules, &mut SequentialIds(0), &opts).unwrap() {
        Outcome::Rewritten(b) => b,
        Outcome::Unchanged => panic!("unchanged"),
    }
}

/// One event of a method's code: a runtime call `enterT` etc. with the local its token goes
/// to or comes from (`istore` after / `iload` before), or `Class.name` for another invoke.
#[derive(Debug, PartialEq, Eq)]
enum Ev {
    Rt(String, Option<u16>),
    Call(String),
}

fn events(bytes: &[u8], method: &str) -> (Vec<Ev>, Vec<(u8, Option<u16>)>) {
    let cf = bci::ClassFile::parse(bytes).unwrap();
    let m = cf
        .methods
        .iter()
        .find(|m| format!("{}{}", cf.member_name(m), cf.member_desc(m)) == method)
        .unwrap_or_else(|| panic!("no {method}"));
    let (_, a) = cf.find_attr(&m.attributes, "Code").unwrap();
    let code = bci::CodeAttr::parse(&cf, a).unwrap();
    let insns = code.decode_all().unwrap();
    let ops: Vec<(u8, Option<u16>)> = insns
        .iter()
        .map(|i| (i.opcode, i.local(code.code)))
        .collect();
    let mut out = Vec::new();
    for (k, i) in insns.iter().enumerate() {
        if !(op::INVOKEVIRTUAL..=op::INVOKEINTERFACE).contains(&i.opcode) {
            continue;
        }
        let r = cf.cp.member_ref(i.cp_index(code.code).unwrap()).unwrap();
        if r.class == RT {
            let local = match r.name.as_ref() {
                "enterT" => ops
                    .get(k + 1)
                    .filter(|o| matches!(o.0, op::ISTORE | op::ISTORE_0..=op::ISTORE_3))
                    .and_then(|o| o.1),
                _ => k
                    .checked_sub(1)
                    .and_then(|j| ops.get(j))
                    .filter(|o| matches!(o.0, op::ILOAD | op::ILOAD_0..=op::ILOAD_3))
                    .and_then(|o| o.1),
            };
            out.push(Ev::Rt(r.name.to_string(), local));
        } else {
            out.push(Ev::Call(format!("{}.{}", r.class, r.name)));
        }
    }
    (out, ops)
}

fn integer() -> Option<Vec<u8>> {
    let p = common::workspace().join("target/corpus/jdk17/java.base/java/lang/Integer.class");
    std::fs::read(p).ok()
}

fn rt(name: &str, local: Option<u16>) -> Ev {
    Ev::Rt(name.to_string(), local)
}

#[test]
fn intrinsics_are_counted_at_their_call_sites() {
    let Some(orig) = integer() else {
        eprintln!("SKIPPED: no JDK 17 corpus at target/corpus/jdk17");
        return;
    };
    let rules = Rules::cpu_times();
    let with = rewrite(&orig, true, &rules);
    let without = rewrite(&orig, false, &rules);
    // an intrinsic that calls nothing: no probes at all (before: a leaf's)
    assert_eq!(events(&with, "bitCount(I)I").0, vec![]);
    assert_eq!(
        events(&without, "bitCount(I)I").0,
        vec![rt("leafEnter", None), rt("leafExit", None)]
    );
    // an intrinsic (Integer.reverse, JDK 19+) that calls one: no frame of its own, the call
    // wrapped, the token in a local set to 0 at entry
    let (ev, ops) = events(&with, "reverse(I)I");
    let Ev::Rt(_, Some(s)) = ev[0] else {
        panic!("{ev:?}")
    };
    assert_eq!(
        ev,
        vec![
            rt("enterT", Some(s)),
            Ev::Call("java/lang/Integer.reverseBytes".into()),
            rt("exitT", Some(s)),
        ]
    );
    assert_eq!(ops[0], (op::ICONST_0, None));
    assert!(matches!(ops[1], (op::ISTORE | op::ISTORE_0..=op::ISTORE_3, Some(l)) if l == s));
    // an ordinary method calling an intrinsic: its own frame, and the call's in another local
    let (ev, _) = events(&with, "highestOneBit(I)I");
    let Ev::Rt(_, Some(own)) = ev[0] else {
        panic!("{ev:?}")
    };
    let Ev::Rt(_, Some(site)) = ev[1] else {
        panic!("{ev:?}")
    };
    assert_ne!(own, site);
    assert_eq!(
        ev,
        vec![
            rt("enterT", Some(own)),
            rt("enterT", Some(site)),
            Ev::Call("java/lang/Integer.numberOfLeadingZeros".into()),
            rt("exitT", Some(site)),
            rt("exitT", Some(own)),
            rt("unwindT", Some(own)),
        ]
    );
    // without the option the call is plain
    assert!(!events(&without, "highestOneBit(I)I")
        .0
        .contains(&rt("enterT", Some(site))));
    // the rules decide: Long.numberOfLeadingZeros (an intrinsic) calls Integer's, counted
    // at its sites only while the rules select java.lang.Integer
    let long = std::fs::read(
        common::workspace().join("target/corpus/jdk17/java.base/java/lang/Long.class"),
    )
    .unwrap();
    let nlz = "java/lang/Integer.numberOfLeadingZeros";
    let ev = events(&rewrite(&long, true, &rules), "numberOfLeadingZeros(J)I").0;
    let names: Vec<&str> = ev
        .iter()
        .map(|e| match e {
            Ev::Rt(n, _) => n.as_str(),
            Ev::Call(c) => c.as_str(),
        })
        .collect();
    assert_eq!(names, ["enterT", nlz, "exitT", "enterT", nlz, "exitT"]);
    let no_integer = Rules::cpu_times().with_filters(&[], &["java.lang.Integer".to_string()]);
    let ev = events(
        &rewrite(&long, true, &no_integer),
        "numberOfLeadingZeros(J)I",
    )
    .0;
    assert_eq!(ev, vec![Ev::Call(nlz.into()), Ev::Call(nlz.into())]);
}
