//! Jump widening for real: pad methods of java.util (in java.base) in the middle with ~33 KB of
//! stack-neutral code so every branch across the padding overflows 16 bits; the editor must
//! widen them (goto -> goto_w, if -> inverted if over goto_w) and derive the frames the new
//! targets need. HotSpot then verifies the classes (-Xverify:all) and runs the JVM on them.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci::opcodes::op;
use bci::{ClassFile, ClassWriter, MethodEditor, Snippet};
use std::path::Path;

const PAD_PAIRS: usize = 16_500; // iconst_0; pop = 33,000 bytes

/// Pads every method that has a branch crossing its middle; returns (bytes, methods padded,
/// branches widened).
fn pad_class(bytes: &[u8]) -> Option<(Vec<u8>, usize, usize)> {
    let cf = ClassFile::parse(bytes).unwrap();
    let mut w = ClassWriter::new(&cf);
    let mut pad = Snippet::new();
    for _ in 0..PAD_PAIRS {
        pad.op(op::ICONST_0).unwrap().op(op::POP).unwrap();
    }
    let (mut padded, mut widened) = (0, 0);
    for k in 0..cf.methods.len() {
        let Ok(mut ed) = MethodEditor::new(&cf, k) else {
            continue;
        };
        let code = ed.code().code;
        if code.len() + PAD_PAIRS * 2 + 200 > 65535 {
            continue;
        }
        let n = ed.insns().len();
        let mid = n / 2;
        let mid_pc = ed.insns()[mid].pc as i64;
        // Branches that jump across the middle instruction.
        let crossing = ed
            .insns()
            .iter()
            .filter(|i| {
                let mut c = false;
                if let Some(o) = i.branch_offset(code) {
                    let t = i.pc as i64 + o as i64;
                    c = (i.pc as i64) < mid_pc && t > mid_pc
                        || (i.pc as i64) >= mid_pc && t < mid_pc;
                }
                c && i.info().operands == bci::opcodes::Operands::Branch16
            })
            .count();
        if crossing == 0 {
            continue;
        }
        ed.insert_before(mid, &pad).unwrap();
        let body = ed.finish(&mut w.cp).unwrap_or_else(|e| panic!("{e}"));
        w.set_code(k, body).unwrap();
        padded += 1;
        widened += crossing;
    }
    if padded == 0 {
        return None;
    }
    Some((w.finish().unwrap(), padded, widened))
}

#[test]
fn padded_methods_widen_jumps_and_verify_in_hotspot() {
    let src = common::jdk_corpus();
    let base = src.join("java.base");
    let out = common::workspace().join("target/test-out/widening");
    let _ = std::fs::remove_dir_all(&out);
    let (mut classes, mut methods, mut branches) = (0, 0, 0);
    for f in common::class_files(&base.join("java/util")) {
        let bytes = std::fs::read(&f).unwrap();
        if let Some((b, m, w)) = pad_class(&bytes) {
            // The output must itself be well-formed and carry wide jumps.
            let cf = ClassFile::parse(&b).unwrap();
            cf.check()
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let p = out.join("java.base").join(f.strip_prefix(&base).unwrap());
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &b).unwrap();
            classes += 1;
            methods += m;
            branches += w;
        }
    }
    eprintln!(
        "padded {methods} methods in {classes} classes; {branches} branches crossed the padding"
    );
    assert!(
        classes > 100 && methods > 1000,
        "{classes} classes, {methods} methods"
    );
    let verdicts =
        bci_verify::oracle::run_hotspot(&common::java_home(), Path::new(&out), true, &[]).unwrap();
    let rejected: Vec<_> = verdicts.iter().filter(|v| v.rejected()).collect();
    let ok = verdicts.iter().filter(|v| v.ok).count();
    eprintln!("hotspot: {} classes, {ok} verified", verdicts.len());
    assert!(
        rejected.is_empty(),
        "{} rejected:\n{}",
        rejected.len(),
        rejected
            .iter()
            .take(10)
            .map(|v| format!("{}: {}", v.class, v.message))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(ok, verdicts.len());
}

/// Code inserted before and after every instruction (after: wherever it can fall through):
/// frames, ranges and branch targets must all land right. HotSpot verifies the result.
#[test]
fn code_before_and_after_every_instruction_verifies_in_hotspot() {
    let src = common::jdk_corpus();
    let base = src.join("java.base");
    let out = common::workspace().join("target/test-out/everywhere");
    let _ = std::fs::remove_dir_all(&out);
    let mut s = Snippet::new();
    s.op(op::ICONST_0).unwrap().op(op::POP).unwrap();
    let (mut classes, mut inserted) = (0, 0usize);
    for f in common::class_files(&base.join("java/util/concurrent")) {
        let bytes = std::fs::read(&f).unwrap();
        let cf = ClassFile::parse(&bytes).unwrap();
        let mut w = ClassWriter::new(&cf);
        let mut changed = false;
        for k in 0..cf.methods.len() {
            let Ok(mut ed) = MethodEditor::new(&cf, k) else {
                continue;
            };
            if ed.code().code.len() * 5 > 60_000 {
                continue;
            }
            for i in 0..ed.insns().len() {
                ed.insert_before(i, &s).unwrap();
                inserted += 1;
                if ed.insert_after(i, &s).is_ok() {
                    inserted += 1;
                }
            }
            let body = ed.finish(&mut w.cp).unwrap_or_else(|e| panic!("{e}"));
            w.set_code(k, body).unwrap();
            changed = true;
        }
        if changed {
            let b = w.finish().unwrap();
            ClassFile::parse(&b)
                .unwrap()
                .check()
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let p = out.join("java.base").join(f.strip_prefix(&base).unwrap());
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, &b).unwrap();
            classes += 1;
        }
    }
    eprintln!("{inserted} insertions in {classes} classes");
    assert!(classes > 200 && inserted > 100_000);
    let verdicts =
        bci_verify::oracle::run_hotspot(&common::java_home(), Path::new(&out), true, &[]).unwrap();
    let bad: Vec<_> = verdicts.iter().filter(|v| !v.ok).collect();
    assert!(
        bad.is_empty(),
        "{} not verified:\n{}",
        bad.len(),
        bad.iter()
            .take(10)
            .map(|v| format!("{}: {}", v.class, v.message))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(verdicts.len(), classes);
}

/// A method that would exceed 65,535 bytes after rewriting is a typed error naming the method,
/// never a corrupt class; the rewriter then leaves the class original (bci instrument).
#[test]
fn method_too_large_after_rewriting_is_a_typed_error() {
    let src = common::jdk_corpus();
    let bytes = std::fs::read(src.join("java.base/java/util/ArrayList.class")).unwrap();
    let cf = ClassFile::parse(&bytes).unwrap();
    let k = cf
        .methods
        .iter()
        .position(|m| cf.member_name(m) == "add")
        .unwrap();
    let mut ed = MethodEditor::new(&cf, k).unwrap();
    let mut pad = Snippet::new();
    for _ in 0..PAD_PAIRS {
        pad.op(op::ICONST_0).unwrap().op(op::POP).unwrap();
    }
    ed.insert_before(0, &pad).unwrap();
    ed.insert_before(1, &pad).unwrap();
    let mut w = ClassWriter::new(&cf);
    let e = ed.finish(&mut w.cp).unwrap_err();
    assert_eq!(e.kind(), bci::ErrorKind::TooLarge, "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("java/util/ArrayList.add(") && msg.contains("limit 65535"),
        "{msg}"
    );
}
