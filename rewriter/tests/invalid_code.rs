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
