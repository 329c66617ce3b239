//! The code coverage instrumentation gives a method (what the runtime ABI in
//! `coverage/mod.rs` documents): the lookup first (the class's `bci$a(entry)`, which asks
//! `RUNTIME.find(cid)` and on a miss `RUNTIME.create(cid, n)`, then bumps the method's entry
//! counter (its last, highest index), so the entry counter has no code
//! of its own; every other counter is one `lastore` sequence.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci::opcodes::op;
use bci_rewriter::coverage::{
    entry_counter, instrument, ClassId, Options, HELPER, MAX_COUNTERS, SLOW_HELPER,
};
use bci_rewriter::flow::{Site, Split};
use bci_rewriter::Outcome;

/// The method's instructions (name + descriptor -> decoded code and its bytes).
fn code_of(cf: &bci::ClassFile<'_>, name: &str, desc: &str) -> (Vec<bci::code::Insn>, Vec<u8>) {
    let code = cf
        .method_code(name, Some(desc))
        .unwrap()
        .unwrap_or_else(|| panic!("{name}{desc} not found"));
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
            // the lookup: entry counter, invokestatic <class>.bci$a(I)[J (first thing, but in
            // <clinit> after the prologue that stores the owner's array)
            let k = new
                .iter()
                .position(|i| i.opcode == op::INVOKESTATIC)
                .unwrap_or_else(|| panic!("{what}: no lookup"));
            let k = if m.name == "<clinit>" {
                let p = prologue_len(
                    &ncf,
                    &new,
                    &new_code,
                    Some(7),
                    cov.counters,
                    "java/lang/BciCov",
                );
                assert_eq!(k, p - 5, "{what}: own() in the prologue");
                p + 1
            } else {
                k
            };
            let r = ncf
                .cp
                .member_ref(new[k].cp_index(&new_code).unwrap())
                .unwrap();
            assert_eq!(
                (r.class.as_ref(), r.name.as_ref(), r.desc.as_ref()),
                (name, HELPER, "(I)[J"),
                "{what}"
            );
            let args: Vec<Option<i32>> =
                new[k - 1..k].iter().map(|i| pushed(i, &new_code)).collect();
            if m.name != "<clinit>" {
                assert_eq!(k, 1, "{what}: the lookup first");
            }
            assert_eq!(
                args,
                vec![entry_counter(m).map(|e| e as i32)],
                "{what}: bci$a(entry counter)"
            );
            // the entry counter is the method's highest index: the lookup's range check on it
            // covers every other counter of the method (C2 drops their checks)
            assert_eq!(
                entry_counter(m),
                Some(m.first + m.plan.counters.len() as u32 - 1),
                "{what}: entry counter last"
            );
            // one lastore per counter but the entry counter and the calls' exceptional exits,
            // besides the method's own; the exits share one per handler (the method's own
            // handlers and the catch-all) when there are any
            let stores =
                |v: &[bci::code::Insn]| v.iter().filter(|i| i.opcode == op::LASTORE).count();
            let exits = (0..m.plan.counters.len())
                .filter(|&i| matches!(m.plan.site(&m.cfg, i), Some(Site::Thrown(_))))
                .count();
            let handlers = if exits > 0 {
                m.cfg.blocks.iter().filter(|b| b.handler).count() + 1
            } else {
                0
            };
            assert_eq!(
                stores(&new) - stores(&old),
                m.plan.counters.len() - 1 - exits + handlers,
                "{what}: counters {:?}",
                m.plan.counters
            );
            let _ = old_code;
            methods += 1;
        }
        assert_helper(&ncf, "java/lang/BciCov", Some(7), cov.counters, name);
    }
    assert!(methods > 100, "{methods} methods checked");
}

/// What an int-pushing, iload_0 or getstatic instruction pushes, as text (a constant, "e",
/// or `class.field`).
fn arg(cf: &bci::ClassFile<'_>, a: &bci::code::Insn, code: &[u8]) -> String {
    if let Some(v) = pushed(a, code) {
        v.to_string()
    } else if a.opcode == op::ILOAD_0 {
        "e".into()
    } else if a.opcode == op::GETSTATIC {
        let r = cf.cp.member_ref(a.cp_index(code).unwrap()).unwrap();
        format!("{}.{}", r.class, r.name)
    } else if a.opcode == op::INVOKESTATIC {
        // the result of a call without arguments
        let r = cf.cp.member_ref(a.cp_index(code).unwrap()).unwrap();
        format!("{}.{}()", r.class, r.name)
    } else {
        format!("opcode {}", a.opcode)
    }
}

/// The invokestatic calls in `insns`: (class, name, descriptor, the arguments as [`arg`]).
fn calls(
    cf: &bci::ClassFile<'_>,
    insns: &[bci::code::Insn],
    code: &[u8],
) -> Vec<(String, String, String, Vec<String>)> {
    insns
        .iter()
        .enumerate()
        .filter(|(_, i)| i.opcode == op::INVOKESTATIC)
        .map(|(k, i)| {
            let r = cf.cp.member_ref(i.cp_index(code).unwrap()).unwrap();
            let n = bci::desc::method_slots(&r.desc).unwrap().0 as usize;
            let args = insns[k - n..k].iter().map(|a| arg(cf, a, code)).collect();
            (
                r.class.to_string(),
                r.name.to_string(),
                r.desc.to_string(),
                args,
            )
        })
        .collect()
}

/// The owner prologue at `<clinit>`'s start (after the offline registration when `cid` is
/// None): `<id> ; <counters> ; invokestatic RUNTIME.own(II)[J ; dup ; putstatic bci$s ;
/// invokestatic RUNTIME.owner([J)Object ; putstatic bci$o`. Returns the index of the
/// instruction after it.
fn prologue_len(
    cf: &bci::ClassFile<'_>,
    insns: &[bci::code::Insn],
    code: &[u8],
    cid: Option<i32>,
    counters: u32,
    runtime: &str,
) -> usize {
    let class = cf.name().unwrap();
    let own = insns
        .iter()
        .position(|i| {
            i.opcode == op::INVOKESTATIC
                && cf.cp.member_ref(i.cp_index(code).unwrap()).unwrap().name == "own"
        })
        .expect("own() in <clinit>");
    let c = calls(cf, &insns[own - 2..own + 5], code);
    let id = match cid {
        Some(c) => c.to_string(),
        None => format!("{class}.bci$cid"),
    };
    assert_eq!(
        c,
        [
            (
                runtime.to_string(),
                "own".to_string(),
                "(II)[J".to_string(),
                vec![id, counters.to_string()]
            ),
            (
                runtime.to_string(),
                "owner".to_string(),
                "([J)Ljava/lang/Object;".to_string(),
                vec!["opcode 179".to_string()] // the array own returned (dup; putstatic bci$s)
            ),
        ],
        "{class}: the owner prologue"
    );
    let puts: Vec<String> = [own + 2, own + 4]
        .iter()
        .map(|&k| {
            assert_eq!(insns[k].opcode, op::PUTSTATIC, "{class}");
            let r = cf.cp.member_ref(insns[k].cp_index(code).unwrap()).unwrap();
            format!("{}.{}:{}", r.class, r.name, r.desc)
        })
        .collect();
    assert_eq!(
        puts,
        [
            format!("{class}.bci$s:[J"),
            format!("{class}.bci$o:Ljava/lang/Object;")
        ],
        "{class}"
    );
    own + 5
}

/// The class's lookup: `bci$a(I)[J`, private static synthetic: the owner's array from the
/// static finals `bci$s`/`bci$o` when there is one and the current thread is `bci$o`, else
/// `bci$b(e)`; and
/// `bci$b`: `find(id)`, and on null `create(id, counters)` of the runtime. Each adds one to
/// counter `e` (the argument) of the array it returns; `id` is the constant `cid`, or with
/// None the class's `bci$cid` field (offline). Each at most 35 bytes (MaxInlineSize: C1
/// inlines them). The class has the fields, static final, and its `<clinit>` the prologue.
fn assert_helper(
    cf: &bci::ClassFile<'_>,
    runtime: &str,
    cid: Option<i32>,
    counters: u32,
    what: &str,
) {
    use bci::class::{ACC_FINAL, ACC_PRIVATE, ACC_STATIC, ACC_SYNTHETIC};
    let bump = [
        op::DUP,
        op::ILOAD_0,
        op::DUP2,
        op::LALOAD,
        op::LCONST_1,
        op::LADD,
        op::LASTORE,
    ];
    for h in [HELPER, SLOW_HELPER] {
        let m = cf
            .method(h, Some("(I)[J"))
            .unwrap_or_else(|| panic!("{what}: no {h}"));
        assert_eq!(m.access, ACC_PRIVATE | ACC_STATIC | ACC_SYNTHETIC, "{what}");
    }
    for (f, d) in [("bci$s", "[J"), ("bci$o", "Ljava/lang/Object;")] {
        let m = cf
            .fields
            .iter()
            .find(|m| cf.member_name(m) == f && cf.member_desc(m) == d)
            .unwrap_or_else(|| panic!("{what}: no field {f}"));
        assert_eq!(
            m.access,
            ACC_PRIVATE | ACC_STATIC | ACC_FINAL | ACC_SYNTHETIC,
            "{what}"
        );
    }
    let (insns, code) = code_of(cf, "<clinit>", "()V");
    prologue_len(cf, &insns, &code, cid, counters, runtime);

    // bci$a: the owner's array, or bci$b(e)
    let (insns, code) = code_of(cf, HELPER, "(I)[J");
    let ops: Vec<u8> = insns.iter().map(|i| i.opcode).collect();
    let mut want = vec![
        op::GETSTATIC,
        op::IFNULL,
        op::GETSTATIC,
        op::INVOKESTATIC,
        op::IF_ACMPNE,
        op::GETSTATIC,
    ];
    want.extend_from_slice(&bump);
    want.extend_from_slice(&[op::ARETURN, op::ILOAD_0, op::INVOKESTATIC, op::ARETURN]);
    assert_eq!(ops, want, "{what}: bci$a");
    let fields: Vec<String> = [0, 2, 5]
        .iter()
        .map(|&k| arg(cf, &insns[k], &code))
        .collect();
    assert_eq!(
        fields,
        [
            format!("{what}.bci$s"),
            format!("{what}.bci$o"),
            format!("{what}.bci$s")
        ],
        "{what}"
    );
    let c = calls(cf, &insns, &code);
    assert_eq!(
        c,
        [
            (
                "java/lang/Thread".to_string(),
                "currentThread".to_string(),
                "()Ljava/lang/Thread;".to_string(),
                vec![]
            ),
            (
                what.to_string(),
                SLOW_HELPER.to_string(),
                "(I)[J".to_string(),
                vec!["e".to_string()]
            ),
        ],
        "{what}: bci$a"
    );
    assert!(code.len() <= 35, "{what}: bci$a {} bytes", code.len());

    // bci$b: find, create on a miss; offline the id comes from bci$c, which registers the
    // class if its <clinit> has not yet (its code can run first: a superclass's <clinit>)
    let (insns, code) = code_of(cf, SLOW_HELPER, "(I)[J");
    let id = match cid {
        Some(c) => c.to_string(),
        None => format!("{what}.bci$c()"),
    };
    let id_call = (
        what.to_string(),
        "bci$c".to_string(),
        "()I".to_string(),
        vec![],
    );
    let find = (
        runtime.to_string(),
        "find".into(),
        "(I)[J".into(),
        vec![id.clone()],
    );
    let create = (
        runtime.to_string(),
        "create".into(),
        "(II)[J".into(),
        vec![id, counters.to_string()],
    );
    let want = match cid {
        Some(_) => vec![find, create],
        None => vec![id_call.clone(), find, id_call, create],
    };
    assert_eq!(
        calls(cf, &insns, &code),
        want,
        "{what}: find(id), create(id, n)"
    );
    if cid.is_none() {
        // bci$c: bci$cid, or while it is 0 the runtime's register(name, hash, n)
        let (insns, code) = code_of(cf, "bci$c", "()I");
        assert_eq!(
            arg(cf, &insns[0], &code),
            format!("{what}.bci$cid"),
            "{what}: bci$c"
        );
        let c = calls(cf, &insns, &code);
        let reg = c.last().unwrap();
        assert_eq!(
            (reg.0.as_str(), reg.1.as_str(), reg.2.as_str()),
            (runtime, "register", "(Ljava/lang/String;JI)I"),
            "{what}: bci$c"
        );
        // (the arguments as instructions: the last pushes the number of counters)
        assert_eq!(
            reg.3.last(),
            Some(&counters.to_string()),
            "{what}: bci$c's counters"
        );
    }
    // null from find goes to create; either array gets counter e bumped and is returned
    let ops: Vec<u8> = insns.iter().map(|i| i.opcode).collect();
    assert_eq!(
        ops.iter().filter(|&&o| o == op::IFNONNULL).count(),
        1,
        "{what}: {ops:?}"
    );
    let mut tail = bump.to_vec();
    tail.push(op::ARETURN);
    assert!(ops.ends_with(&tail), "{what}: {ops:?}");
    assert_eq!(
        ops.iter().filter(|&&o| o == op::ARETURN).count(),
        1,
        "{what}: {ops:?}"
    );
    assert!(code.len() <= 35, "{what}: bci$b {} bytes", code.len());
}

/// Offline (class ids registered in `<clinit>`): the helper reads the class's id field, and
/// the methods call the helper.
#[test]
fn offline_classes_look_up_through_their_helper() {
    let opts = Options {
        runtime: "bci/runtime/Cov",
        split: Split::AfterCalls,
        class_id: ClassId::Registered {
            module_reads: false,
        },
    };
    let name = "java/util/ArrayList";
    let orig = std::fs::read(
        common::jdk_corpus()
            .join("java.base")
            .join(format!("{name}.class")),
    )
    .unwrap();
    let Outcome::Rewritten(out) = instrument(&orig, &opts).unwrap().0 else {
        panic!("unchanged")
    };
    let cov = instrument(&orig, &opts).unwrap().1;
    let cf = bci::ClassFile::parse(&out).unwrap();
    assert_helper(&cf, "bci/runtime/Cov", None, cov.counters, name);
    let (insns, code) = code_of(&cf, "size", "()I");
    let i = insns.iter().find(|i| i.opcode == op::INVOKESTATIC).unwrap();
    let r = cf.cp.member_ref(i.cp_index(&code).unwrap()).unwrap();
    assert_eq!((r.class.as_ref(), r.name.as_ref()), (name, HELPER));
}

/// Interfaces of class files before version 52 cannot have static methods: theirs call the
/// runtime's `arr(cid, n, entry)` directly, and the class gets no `bci$a`. Later interfaces
/// call theirs through an InterfaceMethodref.
#[test]
fn interfaces_before_version_52_look_up_directly() {
    let opts = Options {
        runtime: "java/lang/BciCov",
        split: Split::AfterCalls,
        class_id: ClassId::Constant(3),
    };
    let orig = std::fs::read(common::jdk_corpus().join("java.base/java/util/Map.class")).unwrap();
    for major in [61u16, 51] {
        let mut b = orig.clone();
        b[6..8].copy_from_slice(&major.to_be_bytes());
        let (out, cov) = instrument(&b, &opts).unwrap();
        let Outcome::Rewritten(out) = out else {
            panic!("Map unchanged")
        };
        let cf = bci::ClassFile::parse(&out).unwrap();
        let has_helper = cf.methods.iter().any(|m| cf.member_name(m) == HELPER);
        assert_eq!(has_helper, major >= 52, "version {major}");
        assert!(!cov.methods.is_empty());
        for m in &cov.methods {
            let (insns, code) = code_of(&cf, &m.name, &m.desc);
            let i = insns
                .iter()
                .find(|i| i.opcode == op::INVOKESTATIC)
                .unwrap_or_else(|| panic!("{}: no lookup", m.name));
            let k = i.cp_index(&code).unwrap();
            let tag = cf.cp.tag(k).unwrap();
            let r = cf.cp.member_ref(k).unwrap();
            if major >= 52 {
                assert_eq!(
                    (r.class.as_ref(), r.name.as_ref()),
                    ("java/util/Map", HELPER)
                );
                assert_eq!(tag, 11, "{}: an InterfaceMethodref", m.name);
            } else {
                assert_eq!(
                    (r.class.as_ref(), r.name.as_ref(), r.desc.as_ref()),
                    ("java/lang/BciCov", "arr", "(III)[J")
                );
            }
        }
    }
}

/// The agent applies cpu=times (and tracing) after coverage: they leave `bci$a` alone, so it
/// stays small enough to inline and never shows in a profile.
#[test]
fn cpu_times_leaves_the_coverage_helper_alone() {
    use bci_rewriter::{instrument_with, Options as CpuOptions, Rules, SequentialIds};
    let opts = Options {
        runtime: "java/lang/BciCov",
        split: Split::AfterCalls,
        class_id: ClassId::Constant(5),
    };
    let orig =
        std::fs::read(common::jdk_corpus().join("java.base/java/util/ArrayList.class")).unwrap();
    let Outcome::Rewritten(cov) = instrument(&orig, &opts).unwrap().0 else {
        panic!("unchanged")
    };
    let Outcome::Rewritten(both) = instrument_with(
        &cov,
        &Rules::cpu_times(),
        &mut SequentialIds(0),
        &CpuOptions::default(),
    )
    .unwrap() else {
        panic!("unchanged")
    };
    let (a, b) = (
        bci::ClassFile::parse(&cov).unwrap(),
        bci::ClassFile::parse(&both).unwrap(),
    );
    assert_eq!(
        code_of(&a, HELPER, "(I)[J").1,
        code_of(&b, HELPER, "(I)[J").1
    );
    // while the class's own methods did get probes
    assert_ne!(code_of(&a, "size", "()I").1, code_of(&b, "size", "()I").1);
}

/// A class with more counters than the runtimes' spare array holds is refused (left to the
/// caller to keep original), naming the class and the count; one just under is instrumented.
#[test]
fn classes_over_the_counter_limit_are_refused() {
    let dir = common::workspace().join(format!("target/test-out/cov-limit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // per method: 1000 ifs, one counter each, plus the entry counter
    let source = |name: &str, methods: usize| {
        let mut s = format!("public class {name} {{\n");
        for m in 0..methods {
            s.push_str(&format!("static int m{m}(int x) {{ int s = 0;\n"));
            for i in 0..1000 {
                s.push_str(&format!("if (x == {i}) s++;\n"));
            }
            s.push_str("return s; }\n");
        }
        s.push_str("}\n");
        s
    };
    let (big, small) = (dir.join("Big.java"), dir.join("Small.java"));
    std::fs::write(&big, source("Big", 33)).unwrap();
    std::fs::write(&small, source("Small", 32)).unwrap();
    let st = std::process::Command::new(common::java_home().join("bin/javac"))
        .arg("-d")
        .arg(&dir)
        .arg(&big)
        .arg(&small)
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
    let opts = Options {
        runtime: "java/lang/BciCov",
        split: Split::AfterCalls,
        class_id: ClassId::Constant(1),
    };
    let small = std::fs::read(dir.join("Small.class")).unwrap();
    let (out, cov) = instrument(&small, &opts).unwrap();
    assert!(matches!(out, Outcome::Rewritten(_)));
    assert!(cov.counters <= MAX_COUNTERS, "{}", cov.counters);
    let big = std::fs::read(dir.join("Big.class")).unwrap();
    let Err(e) = instrument(&big, &opts) else {
        panic!("Big instrumented")
    };
    let msg = e.to_string();
    // (the callers name the class: "h/Big: class left without coverage: needs …")
    assert!(
        msg.starts_with("needs ")
            && msg.ends_with(" coverage counters, more than a class may have (32768)"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A new version of a class loaded with counters (`ClassId::Redefined`, JVMTI
/// RedefineClasses) gets the same fields and methods as the first (a redefinition may not add
/// or remove any), but its `bci$a` never reads `bci$s`: that static keeps the first version's
/// array, numbered for the first version's code. Every call takes `bci$b` (its own class id).
#[test]
fn a_redefined_class_has_the_same_members_and_never_uses_the_owner_array() {
    let orig =
        std::fs::read(common::jdk_corpus().join("java.base/java/util/ArrayList.class")).unwrap();
    let members = |out: &[u8]| {
        let cf = bci::ClassFile::parse(out).unwrap();
        let f: Vec<(String, u16)> = cf
            .fields
            .iter()
            .map(|m| (cf.member_name(m).to_string(), m.access))
            .collect();
        let m: Vec<(String, u16)> = cf
            .methods
            .iter()
            .map(|m| (cf.member_name(m).to_string(), m.access))
            .collect();
        (f, m)
    };
    let run = |id: ClassId| {
        let opts = Options {
            runtime: "java/lang/BciCov",
            split: Split::AfterCalls,
            class_id: id,
        };
        match instrument(&orig, &opts).unwrap().0 {
            Outcome::Rewritten(b) => b,
            Outcome::Unchanged => panic!("unchanged"),
        }
    };
    let (first, again) = (run(ClassId::Constant(4)), run(ClassId::Redefined(9)));
    assert_eq!(members(&first), members(&again));
    let cf = bci::ClassFile::parse(&again).unwrap();
    let reads_shared = |name: &str| {
        let (insns, code) = code_of(&cf, name, "(I)[J");
        insns.iter().any(|i| {
            i.opcode == op::GETSTATIC
                && cf
                    .cp
                    .member_ref(i.cp_index(&code).unwrap())
                    .unwrap()
                    .name
                    .as_ref()
                    == "bci$s"
        })
    };
    // the owner's path is dead code after `aconst_null ; ifnull`
    let (insns, _) = code_of(&cf, HELPER, "(I)[J");
    assert_eq!(
        (insns[0].opcode, insns[1].opcode),
        (op::ACONST_NULL, op::IFNULL)
    );
    assert!(!reads_shared(SLOW_HELPER));
    // bci$b names the new id
    let (insns, code) = code_of(&cf, SLOW_HELPER, "(I)[J");
    assert_eq!(pushed(&insns[0], &code), Some(9));
}
