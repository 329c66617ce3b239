//! `Options::marker` / `runtime_ids` / `module_reads` (what `bci instrument` sets): the marker
//! reads back with the original bytes' hash and the probed methods; a marked class is never
//! instrumented again; runtime ids give `<clinit>` the register call first and a `bci$base`
//! field; a read edge needs class files of version 49 or later.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci::opcodes::op;
use bci_rewriter::offline::{class_hash, marker, BASE_FIELD, OFFLINE_CLASS};
use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};

fn opts(module_reads: bool) -> Options {
    Options {
        marker: true,
        runtime_ids: true,
        module_reads,
        ..Options::default()
    }
}

fn class(name: &str) -> Vec<u8> {
    std::fs::read(
        common::jdk_corpus()
            .join("java.base")
            .join(format!("{name}.class")),
    )
    .unwrap()
}

/// Names of the static methods `<clinit>` calls, in order.
fn clinit_calls(bytes: &[u8]) -> Vec<String> {
    let cf = bci::ClassFile::parse(bytes).unwrap();
    let code = cf
        .method_code("<clinit>", None)
        .unwrap()
        .expect("a <clinit>");
    code.decode_all()
        .unwrap()
        .iter()
        .filter(|i| i.opcode == op::INVOKESTATIC || i.opcode == op::INVOKEVIRTUAL)
        .map(|i| {
            let r = cf.cp.member_ref(i.cp_index(code.code).unwrap()).unwrap();
            format!("{}.{}", r.class, r.name)
        })
        .collect()
}

#[test]
fn marker_ids_and_clinit() {
    // java/util/ArrayList has a <clinit>; java/util/AbstractList$Itr has none
    for name in ["java/util/ArrayList", "java/util/AbstractList$Itr"] {
        let orig = class(name);
        let out = match instrument_with(
            &orig,
            &Rules::cpu_times(),
            &mut SequentialIds(0),
            &opts(false),
        )
        .unwrap()
        {
            Outcome::Rewritten(b) => b,
            Outcome::Unchanged => panic!("{name}: unchanged"),
        };
        let mk = marker(&out).unwrap().expect("marker");
        assert_eq!(mk.version, 1);
        assert_eq!(mk.hash, class_hash(&orig));
        assert!(mk.runtime_ids);
        let cf0 = bci::ClassFile::parse(&orig).unwrap();
        let probed: Vec<(String, String)> = cf0
            .methods
            .iter()
            .filter(|m| m.access & (bci::class::ACC_ABSTRACT | bci::class::ACC_NATIVE) == 0)
            .map(|m| {
                (
                    cf0.member_name(m).into_owned(),
                    cf0.member_desc(m).into_owned(),
                )
            })
            .collect();
        assert_eq!(mk.methods, probed, "{name}");
        let cf = bci::ClassFile::parse(&out).unwrap();
        assert!(cf
            .fields
            .iter()
            .any(|f| cf.member_name(f) == BASE_FIELD && cf.member_desc(f) == "I"));
        let calls = clinit_calls(&out);
        assert_eq!(
            calls[0],
            format!("{OFFLINE_CLASS}.register"),
            "{name}: {calls:?}"
        );
        // the class's own <clinit> probe comes after the registration, its id from bci$r (the
        // base, or the registration if <clinit> has not run yet: the class's code can run
        // before it, e.g. from a superclass's <clinit>)
        if cf0.methods.iter().any(|m| cf0.member_name(m) == "<clinit>") {
            assert_eq!(calls[1], format!("{name}.bci$r"), "{calls:?}");
            assert_eq!(calls[2], "bci/runtime/Probes.enter", "{calls:?}");
        }
        // ours already: unchanged, whoever asks
        for o in [opts(false), Options::default()] {
            assert_eq!(
                instrument_with(&out, &Rules::cpu_times(), &mut SequentialIds(0), &o).unwrap(),
                Outcome::Unchanged
            );
        }
        assert_eq!(marker(&orig).unwrap(), None);
    }
}

#[test]
fn module_reads_come_first_and_need_version_49() {
    let orig = class("java/util/ArrayList");
    let out = match instrument_with(
        &orig,
        &Rules::cpu_times(),
        &mut SequentialIds(0),
        &opts(true),
    )
    .unwrap()
    {
        Outcome::Rewritten(b) => b,
        Outcome::Unchanged => panic!("unchanged"),
    };
    let calls = clinit_calls(&out);
    assert_eq!(
        &calls[..5],
        [
            "java/lang/Class.getModule",
            "java/lang/Class.getClassLoader",
            "java/lang/Class.forName",
            "java/lang/Class.getModule",
            "java/lang/Module.addReads",
        ],
        "{calls:?}"
    );
    assert_eq!(calls[5], format!("{OFFLINE_CLASS}.register"));
    let mut old = orig.clone();
    old[6..8].copy_from_slice(&48u16.to_be_bytes());
    let e = match instrument_with(
        &old,
        &Rules::cpu_times(),
        &mut SequentialIds(0),
        &opts(true),
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a version-48 class got a read edge (ldc of a class constant)"),
    };
    assert!(
        e.contains("java/util/ArrayList") && e.contains("version 48"),
        "{e}"
    );
}
