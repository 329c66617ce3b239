//! Constructors whose branches call different super()/this() constructors, and constructors
//! the rewriter must leave original (hand-assembled class files, version 49: no frames).

use bci::opcodes::op;
use bci_rewriter::{instrument_methods, instrument_with, Options, Outcome, Rules, SequentialIds};

mod handmade;
use handmade::{class, two_super_calls};

#[test]
fn enter_after_each_initialization_and_no_handler_before_it() {
    let out = match instrument_with(
        &two_super_calls(),
        &Rules::cpu_times(),
        &mut SequentialIds(0),
        &Options::default(),
    )
    .unwrap()
    {
        Outcome::Rewritten(b) => b,
        Outcome::Unchanged => panic!("unchanged"),
    };
    let cf = bci::ClassFile::parse(&out).unwrap();
    let m = &cf.methods[0];
    let (_, a) = cf.find_attr(&m.attributes, "Code").unwrap();
    let code = bci::CodeAttr::parse(&cf, a).unwrap();
    let insns = code.decode_all().unwrap();
    let mut inits = Vec::new();
    let mut enters = Vec::new();
    for i in &insns {
        if matches!(i.opcode, op::INVOKESPECIAL | op::INVOKESTATIC) {
            let r = cf.cp.member_ref(i.cp_index(code.code).unwrap()).unwrap();
            match &*r.name {
                "<init>" => inits.push(i.pc),
                "enter" => enters.push(i.pc),
                _ => {}
            }
        }
    }
    assert_eq!(inits.len(), 2, "{insns:?}");
    assert_eq!(enters.len(), 2, "one entry probe per initialization call");
    // each enter follows an initialization call, and no code reaches an enter without one
    assert!(enters[0] > inits[0] && enters[0] < inits[1] && enters[1] > inits[1]);
    let catch_all: Vec<_> = code.handlers.iter().filter(|h| h.catch_type == 0).collect();
    assert!(!catch_all.is_empty(), "the unwind handler");
    for h in &catch_all {
        for &pc in &inits {
            // the initialization call and everything before it on its branch stay uncovered
            assert!(
                !(h.start as u32 <= pc && pc < h.end as u32),
                "handler {h:?} covers the initialization call at {pc}"
            );
        }
        assert!(
            h.start as u32 > inits[0],
            "handler {h:?} covers uninitialized code"
        );
    }
}

/// A handler reached both before and after the initialization call: no place for the probes.
/// The class is an error without `method_fallback`, the method left original with it.
#[test]
fn code_reached_before_and_after_initialization_is_left_original() {
    let bytes = class(
        "()V",
        1,
        &[
            0x2a, // 0 aload_0
            0xb7, 0, 8,    // 1 invokespecial Object.<init>
            0xb1, // 4 return
            0xbf, // 5 athrow
        ],
        &[[0, 5, 5, 0]],
    );
    let e = instrument_with(
        &bytes,
        &Rules::cpu_times(),
        &mut SequentialIds(0),
        &Options::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("C.<init>()V") && e.contains("both before and after"),
        "{e}"
    );
    let opts = Options {
        method_fallback: true,
        ..Options::default()
    };
    let (o, left) =
        instrument_methods(&bytes, &Rules::cpu_times(), &mut SequentialIds(0), &opts).unwrap();
    assert_eq!(o, Outcome::Unchanged);
    assert_eq!(left.len(), 1);
    assert!(left[0].to_string().contains("C.<init>()V"), "{}", left[0]);
}
