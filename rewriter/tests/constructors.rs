//! Constructors whose branches call different super()/this() constructors, and constructors
//! the rewriter must leave original (hand-assembled class files, version 49: no frames).

use bci::opcodes::op;
use bci_rewriter::{instrument_methods, instrument_with, Options, Outcome, Rules, SequentialIds};

/// A class `C extends Object` with one constructor `desc` of the given code and exception
/// table (start, end, handler, catch type). Constant 8 is `Object.<init>()V`.
fn class(desc: &str, max_locals: u16, code: &[u8], handlers: &[[u16; 4]]) -> Vec<u8> {
    let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 49];
    let utf = |b: &mut Vec<u8>, s: &str| {
        b.push(1);
        b.extend_from_slice(&(s.len() as u16).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
    };
    b.extend_from_slice(&11u16.to_be_bytes());
    utf(&mut b, "C"); // 1
    b.extend_from_slice(&[7, 0, 1]); // 2 Class C
    utf(&mut b, "java/lang/Object"); // 3
    b.extend_from_slice(&[7, 0, 3]); // 4 Class Object
    utf(&mut b, "<init>"); // 5
    utf(&mut b, "()V"); // 6
    b.extend_from_slice(&[12, 0, 5, 0, 6]); // 7 NameAndType
    b.extend_from_slice(&[10, 0, 4, 0, 7]); // 8 Methodref Object.<init>()V
    utf(&mut b, "Code"); // 9
    utf(&mut b, desc); // 10
    b.extend_from_slice(&[0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 1]);
    b.extend_from_slice(&[0, 1, 0, 5, 0, 10, 0, 1, 0, 9]);
    let len = 2 + 2 + 4 + code.len() + 2 + 8 * handlers.len() + 2;
    b.extend_from_slice(&(len as u32).to_be_bytes());
    b.extend_from_slice(&2u16.to_be_bytes());
    b.extend_from_slice(&max_locals.to_be_bytes());
    b.extend_from_slice(&(code.len() as u32).to_be_bytes());
    b.extend_from_slice(code);
    b.extend_from_slice(&(handlers.len() as u16).to_be_bytes());
    for h in handlers {
        for v in h {
            b.extend_from_slice(&v.to_be_bytes());
        }
    }
    b.extend_from_slice(&[0, 0, 0, 0]);
    b
}

/// `C(boolean b) { if (b) super(); else super(); }`
fn two_super_calls() -> Vec<u8> {
    class(
        "(Z)V",
        2,
        &[
            0x1b, // 0 iload_1
            0x99, 0, 10,   // 1 ifeq 11
            0x2a, // 4 aload_0
            0xb7, 0, 8, // 5 invokespecial Object.<init>
            0xa7, 0, 7,    // 8 goto 15
            0x2a, // 11 aload_0
            0xb7, 0, 8,    // 12 invokespecial Object.<init>
            0xb1, // 15 return
        ],
        &[],
    )
}

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
