//! `frames::relocate_table` with added locals (the editor's fast path for a method that gets a
//! new local, e.g. the agent's frame token): over every StackMapTable of java.base, the
//! re-encoded table decodes to the original frames, each with `Top` up to the added slot and
//! the added `int` there, at the same offsets and with the same stacks.
mod common;

use bci::frames::{decode_table, relocate_table, to_entries, to_slots, AddedLocals, VType};

/// Slot form of a frame's locals, trailing `Top`s dropped (entries may spell them either way).
fn norm(entries: &[VType]) -> Vec<VType> {
    let mut v = Vec::new();
    to_slots(entries, &mut v);
    to_slots(&to_entries(&v, true), &mut v);
    v
}

#[test]
fn added_local_in_every_frame_of_java_base() {
    let dir = common::jdk_corpus().join("java.base");
    let (mut tables, mut frames) = (0usize, 0usize);
    for path in common::class_files(&dir) {
        let bytes = std::fs::read(&path).unwrap();
        let cf = bci::ClassFile::parse(&bytes).unwrap();
        for m in &cf.methods {
            let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
                continue;
            };
            let code = bci::CodeAttr::parse(&cf, a).unwrap();
            let Some(smt) = code.attributes.iter().find(|a| {
                cf.cp
                    .utf8_bytes(a.name_index)
                    .is_ok_and(|n| n == b"StackMapTable")
            }) else {
                continue;
            };
            // Stand-in for the implicit first frame: one entry per argument (both tables are
            // decoded from it, so only their agreement matters), within max_locals.
            let desc = cf.member_desc(m);
            let md = bci::desc::MethodDesc::parse(&desc).unwrap();
            let own = usize::from(m.access & bci::class::ACC_STATIC == 0);
            let init = vec![VType::Integer; md.params.len() + own];
            let at = code.max_locals;
            let added = AddedLocals {
                initial: &init,
                locals: &[(at, VType::Integer)],
            };
            let mut out = Vec::new();
            relocate_table(smt.data, smt.offset, Ok, Ok, &[], Some(&added), &mut out)
                .unwrap_or_else(|e| panic!("{}: {e}", cf.method_path(m)));
            let old = decode_table(smt.data, smt.offset, &init).unwrap();
            let new = decode_table(&out, 0, &init)
                .unwrap_or_else(|e| panic!("{}: {e}", cf.method_path(m)));
            assert_eq!(old.len(), new.len(), "{}", cf.method_path(m));
            for (o, n) in old.iter().zip(&new) {
                let mut want = norm(&o.locals);
                want.resize(at as usize, VType::Top);
                want.push(VType::Integer);
                assert_eq!(
                    norm(&n.locals),
                    want,
                    "{} at {}",
                    cf.method_path(m),
                    o.offset
                );
                assert_eq!((o.offset, &o.stack), (n.offset, &n.stack));
            }
            tables += 1;
            frames += old.len();
        }
    }
    assert!(
        tables > 10_000 && frames > 50_000,
        "{tables} tables, {frames} frames"
    );
}
