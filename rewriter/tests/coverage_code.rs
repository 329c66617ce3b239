//! The code coverage instrumentation gives a method (what the runtime ABI in
//! `coverage/mod.rs` documents): the lookup `RUNTIME.arr(cid, n, entry)` first, which also
//! bumps the method's entry counter (its last, highest index), so the entry counter has no code
//! of its own; every other counter is one `lastore` sequence.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci::opcodes::op;
use bci_rewriter::coverage::{entry_counter, instrument, ClassId, Options};
use bci_rewriter::flow::Split;
use bci_rewriter::Outcome;

/// The method's instructions (name + descriptor -> decoded code and its bytes).
fn code_of(cf: &bci::ClassFile<'_>, name: &str, desc: &str) -> (Vec<bci::code::Insn>, Vec<u8>) {
    let m = cf
        .methods
        .iter()
        .find(|m| cf.member_name(m) == name && cf.member_desc(m) == desc)
        .unwrap_or_else(|| panic!("{name}{desc} not found"));
    let (_, a) = cf.find_attr(&m.attributes, "Code").unwrap();
    let code = bci::CodeAttr::parse(cf, a).unwrap();
    (code.decode_all().unwrap(), code.code.to_vec())
}

/// The int an iconst/bipush/sipush pushes.
fn pushed(i: &bci::code::Insn, code: &[u8]) -> Option<i32> {
    let pc = i.pc as usize;
    match i.opcode {
        o if (op::ICONST_M1..=op::ICONST_5).contains(&o) => Some(o as i32 - op::ICONST_0 as i32),
        op::BIPUSH => Some(code[pc + 1] as i8 as i32),
        op::SIPUSH => Some(i16::from_be_bytes([code[pc + 1], code[pc + 2]]) as i32),
        _ => None,
    }
}

#[test]
fn entry_counter_is_bumped_by_the_lookup() {
    let opts = Options {
        runtime: "java/lang/BciCov",
        split: Split::AfterCalls,
        class_id: ClassId::Constant(7),
    };
    let mut methods = 0;
    for name in [
        "java/util/ArrayList",
        "java/util/HashMap",
        "java/lang/String",
    ] {
        let orig = std::fs::read(
            common::jdk_corpus()
                .join("java.base")
                .join(format!("{name}.class")),
        )
        .unwrap();
        let (out, cov) = instrument(&orig, &opts).unwrap();
        let Outcome::Rewritten(out) = out else {
            panic!("{name} unchanged")
        };
        let (ocf, ncf) = (
            bci::ClassFile::parse(&orig).unwrap(),
            bci::ClassFile::parse(&out).unwrap(),
        );
        assert!(cov.counters < 32768, "{name}: sipush covers the indices");
        for m in &cov.methods {
            let (old, old_code) = code_of(&ocf, &m.name, &m.desc);
            let (new, new_code) = code_of(&ncf, &m.name, &m.desc);
            let what = format!("{name}.{}{}", m.name, m.desc);
            // the lookup: cid, n, entry counter, invokestatic arr(III)[J
            let k = new
                .iter()
                .position(|i| i.opcode == op::INVOKESTATIC)
                .unwrap_or_else(|| panic!("{what}: no lookup"));
            let r = ncf
                .cp
                .member_ref(new[k].cp_index(&new_code).unwrap())
                .unwrap();
            assert_eq!(
                (r.class.as_ref(), r.name.as_ref(), r.desc.as_ref()),
                ("java/lang/BciCov", "arr", "(III)[J"),
                "{what}"
            );
            let args: Vec<Option<i32>> = new[..k].iter().map(|i| pushed(i, &new_code)).collect();
            assert_eq!(
                args,
                vec![
                    Some(7),
                    Some(cov.counters as i32),
                    entry_counter(m).map(|e| e as i32)
                ],
                "{what}: arr(cid, n, entry counter)"
            );
            // the entry counter is the method's highest index: the lookup's range check on it
            // covers every other counter of the method (C2 drops their checks)
            assert_eq!(
                entry_counter(m),
                Some(m.first + m.plan.counters.len() as u32 - 1),
                "{what}: entry counter last"
            );
            // one lastore per counter but the entry counter, besides the method's own
            let stores =
                |v: &[bci::code::Insn]| v.iter().filter(|i| i.opcode == op::LASTORE).count();
            assert_eq!(
                stores(&new) - stores(&old),
                m.plan.counters.len() - 1,
                "{what}: counters {:?}",
                m.plan.counters
            );
            let _ = old_code;
            methods += 1;
        }
    }
    assert!(methods > 100, "{methods} methods checked");
}
