//! Classes the JVM rejects stay rejected: a method whose code is invalid (a branch to the end
//! of the code, max_stack or max_locals below what the code needs, a malformed Utf8 constant)
//! leaves its class original with an error naming the class, the method and the reason, in
//! every mode (cpu=times, --force-wide, the agent's per-method fallback, coverage), and never
//! panics.

use bci::opcodes::op;
use bci_rewriter::coverage::{self, ClassId};
use bci_rewriter::flow::Split;
use bci_rewriter::{instrument_methods, Options, Outcome, Rules, SequentialIds};

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
    let method = |b: &mut Vec<u8>,
                  name: u16,
                  desc: u16,
                  stack: u16,
                  locals: u16,
                  code: &[u8],
                  handlers: &[[u16; 4]]| {
        b.extend_from_slice(&[0, 9]);
        b.extend_from_slice(&name.to_be_bytes());
        b.extend_from_slice(&desc.to_be_bytes());
        b.extend_from_slice(&[0, 1, 0, 7]);
        let len = 2 + 2 + 4 + code.len() + 2 + 8 * handlers.len() + 2;
        b.extend_from_slice(&(len as u32).to_be_bytes());
        b.extend_from_slice(&stack.to_be_bytes());
        b.extend_from_slice(&locals.to_be_bytes());
        b.extend_from_slice(&(code.len() as u32).to_be_bytes());
        b.extend_from_slice(code);
        b.extend_from_slice(&(handlers.len() as u16).to_be_bytes());
        for h in handlers {
            for v in h {
                b.extend_from_slice(&v.to_be_bytes());
            }
        }
        b.extend_from_slice(&[0, 0]);
    };
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

/// max_stack below the depth the code reaches (VerifyError "Stack size too large"): where the
/// rewrite would grow max_stack (the cpu=times probes' catch-all), the class is left original;
/// a rewrite that keeps the declared max_stack (coverage's entry counter, here) is rejected by
/// the JVM as the original was (the original instructions reach the same depths), and the
/// editor does not run a data flow over every method to say so sooner.
#[test]
fn max_stack_below_the_depth_leaves_class_original() {
    let code = [op::ICONST_1, op::ICONST_2, op::IADD, op::IRETURN];
    let c = class("()I", 1, 0, &code, &[], b"()V");
    still_too_small(&c, 1, &["C.f()I", "max_stack 1", "2"]);
    // a handler's exception takes a slot
    let code = [
        op::ICONST_1,
        op::IRETURN,
        op::POP,
        op::ICONST_2,
        op::IRETURN,
    ];
    let c = class("()I", 0, 0, &code, &[[0, 2, 2, 0]], b"()V");
    still_too_small(&c, 0, &["C.f()I", "max_stack 0", "1"]);
}

/// Each mode leaves the class original with an error saying `want`, or keeps f's max_stack at
/// `declared`.
fn still_too_small(bytes: &[u8], declared: u16, want: &[&str]) {
    let mut left = 0;
    for (what, r) in modes(bytes) {
        match r {
            Err(e) => {
                left += 1;
                for w in want {
                    assert!(e.contains(w), "{what}: {e:?} does not say {w:?}");
                }
            }
            Ok(Outcome::Rewritten(b)) => {
                let cf = bci::ClassFile::parse(&b).unwrap();
                let m = &cf.methods[0];
                let (_, a) = cf.find_attr(&m.attributes, "Code").unwrap();
                let got = bci::CodeAttr::parse(&cf, a).unwrap().max_stack;
                assert_eq!(got, declared, "{what}: max_stack grown to {got}");
            }
            Ok(Outcome::Unchanged) => panic!("{what}: unchanged without a reason"),
        }
    }
    // the cpu=times modes at least
    assert!(left >= 3, "{left} modes left it original");
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

/// A Utf8 constant that is not modified UTF-8 (the tester's sim-utf8: a field descriptor's
/// `;` turned into 0xbb) leaves the class original, naming the constant, rather than
/// panicking (--force-wide simulated `getstatic` of it) or writing a class HotSpot rejects.
#[test]
fn malformed_utf8_leaves_class_original() {
    // f()V does nothing; the bad constant is unused
    let c = class("()V", 0, 0, &[op::RETURN], &[], b"Ljava/lang/Object\xbb");
    left_original(&c, &["constant #9", "modified UTF-8"]);
    for bad in [
        &b"a\0b"[..],
        b"\xf0\x90\x80\x80",
        b"\xc3",
        b"\x80",
        b"\xe2\x82",
    ] {
        let c = class("()V", 0, 0, &[op::RETURN], &[], bad);
        let e = bci::ClassFile::parse(&c).err().map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.contains("constant #9")),
            "{bad:?}: {e:?}"
        );
    }
    // the modified UTF-8 of NUL, and 2- and 3-byte forms, are fine
    let c = class(
        "()V",
        0,
        0,
        &[op::RETURN],
        &[],
        "\u{e9}\u{20ac}\u{c0}\u{80}".as_bytes(),
    );
    assert!(bci::ClassFile::parse(&c).is_ok());
    let c = class("()V", 0, 0, &[op::RETURN], &[], b"\xc0\x80");
    assert!(bci::ClassFile::parse(&c).is_ok());
}

/// The simulator's field types do not slice a descriptor whose last character is not `;`.
#[test]
fn vtype_of_odd_descriptor_is_an_error() {
    let mut ctx = bci::sim::Untyped;
    for d in ["L\u{fffd}", "Ljava/lang/Object\u{fffd}", "Lé"] {
        assert!(bci::sim::vtype_of(d, &mut ctx).is_err(), "{d:?}");
    }
}
