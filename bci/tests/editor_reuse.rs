//! The method editor reuses its buffers (instruction table, pc index, depths, layout, frames)
//! from one method to the next on a thread. Whatever order methods are edited in, and with two
//! editors open at once, every method's output must be the one it gets alone.
mod common;

use bci::{ClassFile, CpBuilder, MethodEditor, Snippet};

const CLASSES: [&str; 5] = [
    "java.base/java/util/Collections.class",
    "java.base/java/util/HashMap.class",
    "java.base/java/lang/Character.class",
    "java.base/java/util/concurrent/ConcurrentHashMap.class",
    "java.base/java/lang/String.class",
];

/// Entry, before-return and catch-all code, as probes insert it.
fn edit(cf: &ClassFile<'_>, cp: &mut CpBuilder<'_>, k: usize) -> Option<Vec<u8>> {
    let mut ed = MethodEditor::new(cf, k).ok()?;
    Some(finish(&mut ed, cp, k).and_then(|()| ed.finish(cp)).unwrap())
}

fn finish(ed: &mut MethodEditor<'_, '_>, cp: &mut CpBuilder<'_>, k: usize) -> bci::Result<()> {
    let mut s = Snippet::new();
    s.int(cp, k as i32)?.op(bci::opcodes::op::POP)?;
    if ed.super_calls()?.is_empty() {
        ed.insert_entry(&s)?;
    }
    ed.insert_before_returns(|_| Ok(s.clone()))?;
    let mut h = Snippet::new();
    h.dup_top(false).op(bci::opcodes::op::POP)?;
    ed.add_catch_all(&h)
}

#[test]
fn editing_order_and_open_editors_do_not_change_any_method() {
    let dir = common::jdk_corpus();
    let mut methods = 0;
    for c in CLASSES {
        let bytes = std::fs::read(dir.join(c)).unwrap();
        let cf = ClassFile::parse(&bytes).unwrap();
        let n = cf.methods.len();
        // each method alone, on a fresh thread (empty buffers)
        let alone: Vec<Option<Vec<u8>>> = std::thread::scope(|t| {
            (0..n)
                .map(|k| {
                    let cf = &cf;
                    t.spawn(move || edit(cf, &mut CpBuilder::new(&cf.cp), k))
                        .join()
                        .unwrap()
                })
                .collect()
        });
        // in order, in reverse order (buffers left by larger and smaller methods)
        let mut cp = CpBuilder::new(&cf.cp);
        for k in (0..n).chain((0..n).rev()) {
            assert_eq!(edit(&cf, &mut cp, k), alone[k], "{c} method #{k}");
        }
        // two editors open at once: the second finds the buffers taken
        for k in 1..n {
            let (Ok(mut a), Ok(mut b)) = (MethodEditor::new(&cf, k - 1), MethodEditor::new(&cf, k))
            else {
                continue;
            };
            finish(&mut a, &mut cp, k - 1).unwrap();
            finish(&mut b, &mut cp, k).unwrap();
            let out_b = b.finish(&mut cp).unwrap();
            let out_a = a.finish(&mut cp).unwrap();
            assert_eq!(Some(out_a), alone[k - 1], "{c} method #{}", k - 1);
            assert_eq!(Some(out_b), alone[k], "{c} method #{k}");
        }
        methods += alone.iter().flatten().count();
    }
    assert!(methods > 400, "only {methods} methods edited");
}
