//! Classes the JVM rejects stay rejected: a method whose code is invalid (a branch to the end
//! of the code, max_stack where the stack depth is computed or max_locals below what the code
//! needs) leaves its class original with an error naming the class, the method and the reason,
//! in every mode (cpu=times, --force-wide, the agent's per-method fallback, coverage, tracing
//! rules), and never panics.

mod handmade;

use bci::opcodes::op;
use bci_rewriter::coverage::{self, ClassId};
use bci_rewriter::flow::Split;
use bci_rewriter::{instrument_methods, Options, Outcome, Rules, SequentialIds};
use handmade::method;

/// A version-49 class `C` (no frames) with a static method `name desc` (max_stack `stack`,
/// max_locals `locals`, the code and exception table given: start, end, handler, catch type)
/// and a static `ok()V` that returns. `extra` is one more Utf8 constant's raw bytes (#9).
fn class(
    desc: &str,
    stack: u16,
    locals: u16,
    code: &[u8],
    handlers: &[[u16; 4]],
    extra: &[u8],
) -> Vec<u8> {
    let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 49];
    let utf = |b: &mut Vec<u8>, s: &[u8]| {
        b.push(1);
        b.extend_from_slice(&(s.len() as u16).to_be_bytes());
        b.extend_from_slice(s);
    };
    b.extend_from_slice(&10u16.to_be_bytes());
    utf(&mut b, b"C"); // 1
    b.extend_from_slice(&[7, 0, 1]); // 2 Class C
    utf(&mut b, b"java/lang/Object"); // 3
    b.extend_from_slice(&[7, 0, 3]); // 4 Class Object
    utf(&mut b, b"f"); // 5
    utf(&mut b, desc.as_bytes()); // 6
    utf(&mut b, b"Code"); // 7
    utf(&mut b, b"ok"); // 8
    utf(&mut b, extra); // 9
    b.extend_from_slice(&[0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 2]);
    method(&mut b, 5, 6, stack, locals, code, handlers);
    // ok()V: "()V" is not in the pool under its own index; reuse f's when it is ()V, else
    // the extra constant must be "()V"
    let ok_desc = if desc == "()V" { 6 } else { 9 };
    method(&mut b, 8, ok_desc, 0, 0, &[op::RETURN], &[]);
    b.extend_from_slice(&[0, 0]);
    b
}

/// The modes a class goes through: (what, the outcome or the error's text).
fn modes(bytes: &[u8]) -> Vec<(&'static str, Result<Outcome, String>)> {
    let mut out = Vec::new();
    let cpu = |o: Options| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            instrument_methods(bytes, &Rules::cpu_times(), &mut SequentialIds(0), &o)
                .map(|(o, left)| {
                    assert!(left.is_empty(), "methods left: {left:?}");
                    o
                })
                .map_err(|e| e.to_string())
        }))
        .unwrap_or_else(|_| Err("panicked".into()))
    };
    out.push(("cpu=times", cpu(Options::default())));
    out.push((
        "force-wide",
        cpu(Options {
            force_wide_jumps: true,
            ..Options::default()
        }),
    ));
    out.push((
        "agent (method fallback, frame tokens)",
        cpu(Options {
            method_fallback: true,
            frame_tokens: true,
            leaf_probes: true,
            ..Options::default()
        }),
    ));
    for (what, class_id) in [
        (
            "coverage",
            ClassId::Registered {
                module_reads: false,
            },
        ),
        ("agent coverage", ClassId::Constant(7)),
    ] {
        let opts = coverage::Options {
            runtime: "bci/runtime/Cov",
            split: Split::AfterCalls,
            class_id,
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            coverage::instrument(bytes, &opts)
                .map(|(o, cov)| {
                    let skipped: Vec<_> = cov
                        .skipped
                        .iter()
                        .filter(|s| matches!(s.2, coverage::Skipped::Error(_)))
                        .collect();
                    assert!(skipped.is_empty(), "{what}: methods skipped: {skipped:?}");
                    o
                })
                .map_err(|e| e.to_string())
        }))
        .unwrap_or_else(|_| Err("panicked".into()));
        out.push((what, r));
    }
    // tracing rules on every method: a method left original inside a rewritten class panics
    // (the constants the rewrite appends could make its invalid code valid)
    let rules = Rules::parse(
        "[[rule]]\nname = \"t\"\nclass = \"C\"\ncount = true\n",
        "t.toml",
    )
    .unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut next = |_: &bci_rewriter::trace::TraceRule| 0;
        match bci_rewriter::trace::instrument(bytes, rules.trace_rules(), &mut next) {
            Ok((Some(b), left)) => {
                assert!(left.is_empty(), "tracing: methods left: {left:?}");
                Ok(Outcome::Rewritten(b))
            }
            Ok((None, left)) if left.is_empty() => Ok(Outcome::Unchanged),
            Ok((None, left)) => Err(format!("{left:?}")),
            Err(e) => Err(e.to_string()),
        }
    }))
    .unwrap_or_else(|_| Err("panicked".into()));
    out.push(("tracing", r));
    out
}

/// Every mode leaves the class original with an error that contains each of `want`.
fn left_original(bytes: &[u8], want: &[&str]) {
    for (what, r) in modes(bytes) {
        match r {
            Err(e) => {
                for w in want {
                    assert!(e.contains(w), "{what}: {e:?} does not say {w:?}");
                }
            }
            Ok(Outcome::Rewritten(_)) => panic!("{what}: instrumented"),
            Ok(Outcome::Unchanged) => panic!("{what}: unchanged without a reason"),
        }
    }
}

/// `static int f(int x) { if (x == 0) goto <end of code>; return 1; } ` with a handler over
/// the first instructions going to an athrow (the tester's GotoEnd1): the branch target is the
/// code length, outside the code (JVMS 4.9.1).
#[test]
fn branch_to_code_end_with_handler_leaves_class_original() {
    let code = [
        op::ILOAD_0,
        op::IFEQ,
        0,
        6, // 1: ifeq 7 (the code length)
        op::ICONST_1,
        op::IRETURN,
        op::ATHROW, // 6
    ];
    let c = class("(I)I", 1, 1, &code, &[[0, 4, 6, 0]], b"()V");
    left_original(&c, &["C.f(I)I", "branch at pc 1 to 7", "outside the code"]);
    // without the handler
    let c = class("(I)I", 1, 1, &code[..6], &[], b"()V");
    left_original(&c, &["C.f(I)I", "branch at pc 1 to 7", "outside the code"]);
}

/// An exception handler (or the end of its range) outside the code or inside an instruction.
#[test]
fn handler_outside_the_code_leaves_class_original() {
    let code = [op::ICONST_0, op::IRETURN];
    for (h, say) in [
        ([0u16, 1, 2, 0], "handler pc 2"),
        ([0, 3, 1, 0], "end pc 3"),
        ([1, 1, 1, 0], "start pc 1"),
    ] {
        let c = class("()I", 1, 0, &code, &[h], b"()V");
        left_original(&c, &["C.f()I", "exception table", say]);
    }
    let code = [op::SIPUSH, 0, 1, op::IRETURN];
    let c = class("()I", 1, 0, &code, &[[0, 4, 1, 0]], b"()V");
    left_original(&c, &["C.f()I", "exception table", "handler pc 1"]);
}

/// An exception table row whose catch_type is past the constant pool (HotSpot:
/// ClassFormatError): the constants the rewrite appends must not give it a class.
#[test]
fn catch_type_past_the_pool_leaves_class_original() {
    let code = [op::ICONST_0, op::IRETURN];
    let c = class("()I", 1, 0, &code, &[[0, 1, 1, 10]], b"()V");
    left_original(
        &c,
        &[
            "C.f()I",
            "exception table",
            "catch_type #10 is out of range",
        ],
    );
}

/// An instruction whose constant-pool operand is 0 or past the pool (VerifyError "Illegal
/// constant pool index"; the hostile-inputs hunt's `ldc #42` with 38 constants): the constants
/// the rewrite appends must not make it valid (before, every mode wrote the class, and `ldc`
/// loaded a string of the probes). An operand at a valid index of another kind is left to
/// the JVM (appending does not change it).
#[test]
fn constant_pool_operand_past_the_pool_leaves_class_original() {
    // the pool has 10 slots: #1 to #9
    let cases: [(&[u8], &str); 12] = [
        (
            &[op::LDC, 10, op::POP, op::RETURN],
            "ldc: constant pool index #10",
        ),
        (
            &[op::LDC, 0, op::POP, op::RETURN],
            "ldc: constant pool index #0",
        ),
        (&[op::LDC_W, 0, 200, op::POP, op::RETURN], "#200"),
        (
            &[op::LDC2_W, 1, 0, op::POP2, op::RETURN],
            "ldc2_w: constant pool index #256",
        ),
        (&[op::GETSTATIC, 0, 10, op::POP, op::RETURN], "getstatic"),
        (&[op::INVOKESTATIC, 0xff, 0xff, op::RETURN], "#65535"),
        (
            &[
                op::ACONST_NULL,
                op::INVOKEINTERFACE,
                0,
                12,
                1,
                0,
                op::RETURN,
            ],
            "invokeinterface",
        ),
        (
            &[op::INVOKEDYNAMIC, 0, 10, 0, 0, op::RETURN],
            "invokedynamic",
        ),
        (
            &[op::NEW, 0, 0, op::POP, op::RETURN],
            "new: constant pool index #0",
        ),
        (
            &[op::ACONST_NULL, op::CHECKCAST, 0, 11, op::POP, op::RETURN],
            "checkcast",
        ),
        (
            &[
                op::ICONST_1,
                op::MULTIANEWARRAY,
                0,
                10,
                1,
                op::POP,
                op::RETURN,
            ],
            "multianewarray",
        ),
        // after an instruction the checked decoder reads (wide)
        (
            &[
                op::WIDE,
                op::ILOAD,
                0,
                0,
                op::POP,
                op::LDC,
                10,
                op::POP,
                op::RETURN,
            ],
            "pc 5 ldc",
        ),
    ];
    for (code, say) in cases {
        let c = class("()V", 2, 1, code, &[], b"()V");
        left_original(
            &c,
            &["C.f()V", say, "out of range (constant_pool_count 10)"],
        );
    }
    // the last constant (a Class) and a Utf8 (the JVM's to reject) are instrumented
    for code in [
        &[op::LDC, 2, op::POP, op::RETURN],
        &[op::LDC, 9, op::POP, op::RETURN],
    ] {
        let c = class("()V", 2, 1, code, &[], b"()V");
        for (what, r) in modes(&c) {
            assert!(
                matches!(r, Ok(Outcome::Rewritten(_))),
                "{what}: {:?}",
                r.err()
            );
        }
    }
}

/// `class("()V", 0, 1, [nop, return], [], "LocalVariableTable")` whose f's Code attribute has
/// one attribute: name index `name`, a LocalVariableTable body of local 0 "f" (#5) of type
/// `desc`.
fn with_code_attr(name: u16, desc: u16) -> Vec<u8> {
    let code = [op::NOP, op::RETURN];
    let mut c = class("()V", 0, 1, &code, &[], b"LocalVariableTable");
    // f's Code attribute: the first with this code
    let mut at = code.to_vec();
    at.extend_from_slice(&[0, 0, 0, 0]);
    let p = c.windows(at.len()).position(|w| w == at).unwrap();
    let len_at = p - 12;
    let len = u32::from_be_bytes(c[len_at..len_at + 4].try_into().unwrap()) + 18;
    c[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
    let attrs = p + code.len() + 2;
    let [n0, n1] = name.to_be_bytes();
    let [d0, d1] = desc.to_be_bytes();
    let lvt = [
        0, 1, n0, n1, 0, 0, 0, 12, 0, 1, 0, 0, 0, 2, 0, 5, d0, d1, 0, 0,
    ];
    c.splice(attrs..attrs + 2, lvt);
    assert!(bci::ClassFile::parse(&c).is_ok());
    c
}

/// A Code attribute's attribute whose name index is past the pool (the hostile-inputs hunt's
/// asm class: ClassFormatError "Invalid code attribute name index"). Tracing rules left the
/// method original inside a rewritten class, where the appended constants gave the index a
/// Utf8, and the class loaded.
#[test]
fn code_attribute_name_past_the_pool_leaves_class_original() {
    let c = with_code_attr(10, 6);
    left_original(&c, &["C.f()V", "Code", "attribute name #10 is not Utf8"]);
}

/// A LocalVariableTable entry whose descriptor index is past the pool: kept as it is, it would
/// name a constant the rewrite appends.
#[test]
fn local_variable_past_the_pool_leaves_class_original() {
    let mut c = with_code_attr(9, 10);
    left_original(
        &c,
        &["C.f()V: Code: LocalVariableTable: constant pool index #10 is out of range"],
    );
    // the same table with descriptor #6 ("()V", the JVM's to reject) is instrumented
    let q = c.windows(4).position(|w| w == [0, 5, 0, 10]).unwrap();
    c[q + 3] = 6;
    for (what, r) in modes(&c) {
        assert!(
            matches!(r, Ok(Outcome::Rewritten(_))),
            "{what}: {:?}",
            r.err()
        );
    }
}

/// A switch whose default goes to the code length.
#[test]
fn switch_to_code_end_leaves_class_original() {
    let code = [
        op::ILOAD_0,
        op::TABLESWITCH,
        0,
        0, // padding to 4
        0,
        0,
        0,
        23, // default: 1 + 23 = 24, the code length
        0,
        0,
        0,
        0, // low 0
        0,
        0,
        0,
        0, // high 0
        0,
        0,
        0,
        21, // case 0: 22
        op::ICONST_0,
        op::IRETURN, // 20, 21
        op::ICONST_1,
        op::IRETURN, // 22, 23
    ];
    let c = class("(I)I", 1, 1, &code, &[], b"()V");
    left_original(&c, &["C.f(I)I", "switch at pc 1 to 24"]);
}

/// max_locals below what the arguments need (ClassFormatError "Arguments can't fit into
/// locals"): the rewrite must not make room for them.
#[test]
fn max_locals_below_the_arguments_leaves_class_original() {
    let code = [op::ICONST_0, op::IRETURN];
    let c = class("(IJ)I", 1, 2, &code, &[], b"()V");
    left_original(&c, &["C.f(IJ)I", "max_locals 2", "3", "arguments"]);
}

/// max_locals below a local the code uses (VerifyError "Local variable table overflow").
#[test]
fn max_locals_below_a_local_access_leaves_class_original() {
    let code = [op::ICONST_5, op::ISTORE_3, op::ILOAD_3, op::IRETURN];
    let c = class("()I", 1, 2, &code, &[], b"()V");
    left_original(&c, &["C.f()I", "max_locals 2", "4", "local"]);
    // wide
    let code = [
        op::ICONST_5,
        op::WIDE,
        op::ISTORE,
        1,
        0,
        op::ICONST_0,
        op::IRETURN,
    ];
    let c = class("()I", 1, 200, &code, &[], b"()V");
    left_original(&c, &["C.f()I", "max_locals 200", "257", "local"]);
}

/// max_stack below the depth the code reaches (VerifyError "Stack size too large"). Where the
/// method editor computes the stack depths (code on a switch edge: coverage's trampolines),
/// the method fails with an error naming max_stack and the depth, and the class is never
/// "repaired" by a larger max_stack.
///
/// Not detected where the depths are not computed: the cpu=times probes (inserted at entry,
/// before instructions and as a catch-all) and coverage's counters off the switch edges raise
/// the declared max_stack by what they push without a data flow over the original code, which
/// would cost every method a pass only to find classes the JVM rejects anyway when it
/// verifies them (the original instructions still reach depths above the declared
/// max_stack, and the probes' own code raises it only by what they push). Such a class is
/// written, and the JVM rejects it as it did the original.
#[test]
fn max_stack_below_the_depth_leaves_class_original() {
    // two switch cases into one target
    let mut code = vec![op::ICONST_1, op::ICONST_2, op::IADD, op::TABLESWITCH];
    for v in [21i32, 0, 1, 23, 23] {
        code.extend_from_slice(&v.to_be_bytes());
    }
    code.extend_from_slice(&[op::ICONST_0, op::IRETURN, op::ICONST_1, op::IRETURN]);
    let on_edge = |stack: u16| {
        let c = class("()I", stack, 0, &code, &[], b"()V");
        let cf = bci::ClassFile::parse(&c).unwrap();
        let mut cp = bci::CpBuilder::new(&cf.cp);
        let mut ed = bci::MethodEditor::new(&cf, 0).unwrap();
        let mut s = bci::Snippet::new();
        s.op(op::ICONST_0).unwrap().op(op::POP).unwrap();
        ed.insert_on_switch_edge(3, 26, &s).unwrap();
        ed.finish(&mut cp).map_err(|e| e.to_string())
    };
    let e = on_edge(1).unwrap_err();
    for w in ["max_stack 1", "(2)"] {
        assert!(e.contains(w), "{e:?} does not say {w:?}");
    }
    assert!(on_edge(2).is_ok());
    // not detected (see above): every mode writes the class, none panics
    let straight = [op::ICONST_1, op::ICONST_2, op::IADD, op::IRETURN];
    // a handler's exception takes a slot
    let handler = [
        op::ICONST_1,
        op::IRETURN,
        op::POP,
        op::ICONST_2,
        op::IRETURN,
    ];
    for c in [
        class("()I", 1, 0, &straight, &[], b"()V"),
        class("()I", 1, 0, &code, &[], b"()V"),
        class("()I", 0, 0, &handler, &[[0, 2, 2, 0]], b"()V"),
    ] {
        for (what, r) in outcomes(&c) {
            assert!(
                matches!(r, Ok(Outcome::Rewritten(_))),
                "{what}: {:?}",
                r.err()
            );
        }
    }
}

/// The same methods with their limits right are instrumented in every mode (the checks above
/// are not too strict).
#[test]
fn valid_limits_are_instrumented() {
    let cases: Vec<Vec<u8>> = vec![
        class("(IJ)I", 1, 3, &[op::ICONST_0, op::IRETURN], &[], b"()V"),
        class(
            "()I",
            1,
            4,
            &[op::ICONST_5, op::ISTORE_3, op::ILOAD_3, op::IRETURN],
            &[],
            b"()V",
        ),
        class(
            "()I",
            2,
            0,
            &[op::ICONST_1, op::ICONST_2, op::IADD, op::IRETURN],
            &[],
            b"()V",
        ),
        class(
            "()I",
            1,
            0,
            &[
                op::ICONST_1,
                op::IRETURN,
                op::POP,
                op::ICONST_2,
                op::IRETURN,
            ],
            &[[0, 2, 2, 0]],
            b"()V",
        ),
        // a handler range to the end of the code
        class(
            "()I",
            1,
            0,
            &[op::ICONST_0, op::IRETURN],
            &[[0, 2, 0, 0]],
            b"()V",
        ),
    ];
    for c in cases {
        for (what, r) in modes(&c) {
            assert!(
                matches!(r, Ok(Outcome::Rewritten(_))),
                "{what}: {:?}",
                r.err()
            );
        }
    }
}

/// `c` with two more constants, #10 NameAndType f:#9 and #11 Fieldref C.f:#9 (the extra
/// constant as a field's descriptor).
fn with_fieldref(mut c: Vec<u8>) -> Vec<u8> {
    let end = c
        .windows(12)
        .position(|w| w == [0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 2])
        .unwrap();
    c.splice(end..end, [12, 0, 5, 0, 9, 9, 0, 2, 0, 10]);
    c[8..10].copy_from_slice(&12u16.to_be_bytes());
    c
}

/// Every mode's outcome for `bytes`; none panics.
fn outcomes(bytes: &[u8]) -> Vec<(&'static str, Result<Outcome, String>)> {
    let out = modes(bytes);
    for (what, r) in &out {
        assert!(
            r.as_ref().err().is_none_or(|e| e != "panicked"),
            "{what} panicked"
        );
    }
    out
}

/// Each Utf8 constant of `rewritten` whose bytes are those of `text` is there, unchanged.
fn has_utf8(rewritten: &[u8], text: &[u8]) -> bool {
    let mut entry = vec![1];
    entry.extend_from_slice(&(text.len() as u16).to_be_bytes());
    entry.extend_from_slice(text);
    rewritten.windows(entry.len()).any(|w| w == entry)
}

/// A Utf8 constant that is not modified UTF-8 (the tester's sim-utf8: a field descriptor's
/// `;` turned into 0xbb) is not checked at parse time (HotSpot rejects the class at load:
/// ClassFormatError "Illegal UTF8 string in constant pool", and a rewrite keeps the constant's
/// bytes as they are). Nothing panics on it (--force-wide simulated a `getstatic` of it and
/// panicked at sim.rs:129): each mode writes the class with the Utf8 bytes unchanged, or
/// leaves it original with a reason.
#[test]
fn malformed_utf8_is_kept_and_never_panics() {
    let bads: [&[u8]; 6] = [
        b"Ljava/lang/Object\xbb",
        b"a\0b",
        b"\xf0\x90\x80\x80",
        b"\xc3",
        b"\x80",
        b"\xe2\x82",
    ];
    // f()V does nothing; the bad constant is unused
    for bad in bads {
        let c = class("()V", 0, 0, &[op::RETURN], &[], bad);
        assert!(bci::ClassFile::parse(&c).is_ok(), "{bad:?}");
        for (what, r) in outcomes(&c) {
            match r {
                Ok(Outcome::Rewritten(b)) => assert!(has_utf8(&b, bad), "{what}: {bad:?}"),
                r => panic!("{what}: {bad:?}: {:?}", r.err()),
            }
        }
    }
    // the --force-wide repro: f()V reads a static field of that descriptor
    let code = [op::GETSTATIC, 0, 11, op::POP, op::RETURN];
    let c = with_fieldref(class("()V", 1, 0, &code, &[], bads[0]));
    assert!(bci::ClassFile::parse(&c).is_ok());
    for (what, r) in outcomes(&c) {
        match r {
            Ok(Outcome::Rewritten(b)) => assert!(has_utf8(&b, bads[0]), "{what}"),
            Err(e) => assert!(e.contains("C.f()V"), "{what}: {e}"),
            Ok(Outcome::Unchanged) => panic!("{what}: unchanged without a reason"),
        }
    }
}

/// The simulator's field types do not slice a descriptor whose last character is not `;`.
#[test]
fn vtype_of_odd_descriptor_is_an_error() {
    let mut ctx = bci::sim::Untyped;
    for d in ["L\u{fffd}", "Ljava/lang/Object\u{fffd}", "Lé"] {
        assert!(bci::sim::vtype_of(d, &mut ctx).is_err(), "{d:?}");
    }
}
