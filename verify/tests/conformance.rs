//! Hand-assembled classes for the trickier rules (uninitialized this, protected access, handlers around
//! super(), interfaces vs arrays, ...). Each case states the verdict we expect; HotSpot (the oracle) must
//! give that verdict, and so must we.
mod common;
use bci_verify::oracle::{run_hotspot, VerdictKind};
use bci_verify::{verify_class, ClassPath};
use std::collections::HashMap;

#[derive(Default)]
struct Cp {
    bytes: Vec<u8>,
    count: u16,
    map: HashMap<String, u16>,
}

impl Cp {
    fn new() -> Self {
        Cp {
            count: 1,
            ..Default::default()
        }
    }
    fn add(&mut self, key: String, entry: Vec<u8>) -> u16 {
        if let Some(&i) = self.map.get(&key) {
            return i;
        }
        let i = self.count;
        self.count += 1;
        self.bytes.extend(entry);
        self.map.insert(key, i);
        i
    }
    fn utf8(&mut self, s: &str) -> u16 {
        let mut e = vec![1];
        e.extend((s.len() as u16).to_be_bytes());
        e.extend(s.as_bytes());
        self.add(format!("U{s}"), e)
    }
    fn class(&mut self, s: &str) -> u16 {
        let u = self.utf8(s);
        let mut e = vec![7];
        e.extend(u.to_be_bytes());
        self.add(format!("C{s}"), e)
    }
    fn nat(&mut self, n: &str, d: &str) -> u16 {
        let (a, b) = (self.utf8(n), self.utf8(d));
        let mut e = vec![12];
        e.extend(a.to_be_bytes());
        e.extend(b.to_be_bytes());
        self.add(format!("N{n}:{d}"), e)
    }
    fn member(&mut self, tag: u8, c: &str, n: &str, d: &str) -> u16 {
        let (a, b) = (self.class(c), self.nat(n, d));
        let mut e = vec![tag];
        e.extend(a.to_be_bytes());
        e.extend(b.to_be_bytes());
        self.add(format!("M{tag}{c}.{n}:{d}"), e)
    }
    fn mref(&mut self, c: &str, n: &str, d: &str) -> u16 {
        self.member(10, c, n, d)
    }
    fn iref(&mut self, c: &str, n: &str, d: &str) -> u16 {
        self.member(11, c, n, d)
    }
    fn fref(&mut self, c: &str, n: &str, d: &str) -> u16 {
        self.member(9, c, n, d)
    }
}

/// Verification types for hand-written frames.
enum T {
    Int,
    Float,
    Long,
    UThis,
    Obj(&'static str),
}

fn vt(cp: &mut Cp, t: &T, out: &mut Vec<u8>) {
    match t {
        T::Int => out.push(1),
        T::Float => out.push(2),
        T::Long => out.push(4),
        T::UThis => out.push(6),
        T::Obj(c) => {
            out.push(7);
            out.extend(cp.class(c).to_be_bytes());
        }
    }
}

/// StackMapTable of full frames at absolute offsets.
fn smt(cp: &mut Cp, frames: &[(u16, Vec<T>, Vec<T>)]) -> Vec<u8> {
    let mut v = (frames.len() as u16).to_be_bytes().to_vec();
    let mut prev: i32 = -1;
    for (off, locals, stack) in frames {
        v.push(255);
        v.extend(((*off as i32 - prev - 1) as u16).to_be_bytes());
        prev = *off as i32;
        v.extend((locals.len() as u16).to_be_bytes());
        for t in locals {
            vt(cp, t, &mut v);
        }
        v.extend((stack.len() as u16).to_be_bytes());
        for t in stack {
            vt(cp, t, &mut v);
        }
    }
    v
}

struct M {
    access: u16,
    name: &'static str,
    desc: &'static str,
    max_stack: u16,
    max_locals: u16,
    code: Vec<u8>,
    ex: Vec<[u16; 4]>,
    smt: Option<Vec<u8>>,
}

fn m(access: u16, name: &'static str, desc: &'static str, ms: u16, ml: u16, code: Vec<u8>) -> M {
    M {
        access,
        name,
        desc,
        max_stack: ms,
        max_locals: ml,
        code,
        ex: vec![],
        smt: None,
    }
}

const STATIC: u16 = 0x0009; // public static
const PUBLIC: u16 = 0x0001;

fn class(cp: Cp, name: &str, sup: &str, fields: &[(&str, &str)], methods: Vec<M>) -> Vec<u8> {
    class_with_flags(cp, 0x0021, name, sup, fields, methods)
}

fn class_with_flags(
    mut cp: Cp,
    flags: u16,
    name: &str,
    sup: &str,
    fields: &[(&str, &str)],
    methods: Vec<M>,
) -> Vec<u8> {
    let this = cp.class(name);
    let sup = cp.class(sup);
    let code_n = cp.utf8("Code");
    let smt_n = cp.utf8("StackMapTable");
    let mut body = Vec::new();
    body.extend(flags.to_be_bytes());
    body.extend(this.to_be_bytes());
    body.extend(sup.to_be_bytes());
    body.extend(0u16.to_be_bytes());
    body.extend((fields.len() as u16).to_be_bytes());
    for (n, d) in fields {
        body.extend(0x0001u16.to_be_bytes());
        body.extend(cp.utf8(n).to_be_bytes());
        body.extend(cp.utf8(d).to_be_bytes());
        body.extend(0u16.to_be_bytes());
    }
    body.extend((methods.len() as u16).to_be_bytes());
    for mm in &methods {
        body.extend(mm.access.to_be_bytes());
        body.extend(cp.utf8(mm.name).to_be_bytes());
        body.extend(cp.utf8(mm.desc).to_be_bytes());
        body.extend(1u16.to_be_bytes());
        let mut code = Vec::new();
        code.extend(mm.max_stack.to_be_bytes());
        code.extend(mm.max_locals.to_be_bytes());
        code.extend((mm.code.len() as u32).to_be_bytes());
        code.extend(&mm.code);
        code.extend((mm.ex.len() as u16).to_be_bytes());
        for e in &mm.ex {
            for x in e {
                code.extend(x.to_be_bytes());
            }
        }
        match &mm.smt {
            Some(s) => {
                code.extend(1u16.to_be_bytes());
                code.extend(smt_n.to_be_bytes());
                code.extend((s.len() as u32).to_be_bytes());
                code.extend(s);
            }
            None => code.extend(0u16.to_be_bytes()),
        }
        body.extend(code_n.to_be_bytes());
        body.extend((code.len() as u32).to_be_bytes());
        body.extend(code);
    }
    body.extend(0u16.to_be_bytes());
    let mut out = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 52];
    out.extend(cp.count.to_be_bytes());
    out.extend(&cp.bytes);
    out.extend(body);
    out
}

fn u2(i: u16) -> [u8; 2] {
    i.to_be_bytes()
}

/// (name, expected ok, class bytes)
fn cases() -> Vec<(&'static str, bool, Vec<u8>)> {
    let mut v = Vec::new();
    let obj_init = |cp: &mut Cp| u2(cp.mref("java/lang/Object", "<init>", "()V"));
    macro_rules! case {
        ($name:expr, $ok:expr, |$cp:ident, $cls:ident| $body:block) => {{
            #[allow(unused_mut)]
            let mut $cp = Cp::new();
            let $cls = concat!("t/", $name);
            let bytes = $body;
            v.push(($name, $ok, bytes));
        }};
    }
    case!("InitOk", true, |cp, c| {
        let i = obj_init(&mut cp);
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                PUBLIC,
                "<init>",
                "()V",
                1,
                1,
                vec![0x2a, 0xb7, i[0], i[1], 0xb1],
            )],
        )
    });
    case!("ThisEscapes", false, |cp, c| {
        let i = obj_init(&mut cp);
        let u = u2(cp.mref(c, "use", "(Ljava/lang/Object;)V"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                PUBLIC,
                "<init>",
                "()V",
                1,
                1,
                vec![0x2a, 0xb8, u[0], u[1], 0x2a, 0xb7, i[0], i[1], 0xb1],
            )],
        )
    });
    case!("PutfieldOwnBeforeSuper", true, |cp, c| {
        let i = obj_init(&mut cp);
        let f = u2(cp.fref(c, "x", "I"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[("x", "I")],
            vec![m(
                PUBLIC,
                "<init>",
                "()V",
                2,
                1,
                vec![0x2a, 0x04, 0xb5, f[0], f[1], 0x2a, 0xb7, i[0], i[1], 0xb1],
            )],
        )
    });
    case!("PutfieldUndeclaredBeforeSuper", false, |cp, c| {
        let i = obj_init(&mut cp);
        let f = u2(cp.fref(c, "y", "I"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[("x", "I")],
            vec![m(
                PUBLIC,
                "<init>",
                "()V",
                2,
                1,
                vec![0x2a, 0x04, 0xb5, f[0], f[1], 0x2a, 0xb7, i[0], i[1], 0xb1],
            )],
        )
    });
    case!("NoSuperCall", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(PUBLIC, "<init>", "()V", 1, 1, vec![0xb1])],
        )
    });
    case!("ProtectedCloneOnString", false, |cp, c| {
        let k = u2(cp.mref("java/lang/Object", "clone", "()Ljava/lang/Object;"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Ljava/lang/String;)Ljava/lang/Object;",
                1,
                1,
                vec![0x2a, 0xb6, k[0], k[1], 0xb0],
            )],
        )
    });
    case!("ProtectedCloneOnArray", true, |cp, c| {
        let k = u2(cp.mref("java/lang/Object", "clone", "()Ljava/lang/Object;"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "([I)Ljava/lang/Object;",
                1,
                1,
                vec![0x2a, 0xb6, k[0], k[1], 0xb0],
            )],
        )
    });
    case!("ProtectedCloneOnSelf", true, |cp, c| {
        let k = u2(cp.mref("java/lang/Object", "clone", "()Ljava/lang/Object;"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Lt/ProtectedCloneOnSelf;)Ljava/lang/Object;",
                1,
                1,
                vec![0x2a, 0xb6, k[0], k[1], 0xb0],
            )],
        )
    });
    case!("ProtectedFieldOtherPkg", false, |cp, c| {
        let f = u2(cp.fref("java/io/FilterInputStream", "in", "Ljava/io/InputStream;"));
        class(
            cp,
            c,
            "java/io/FilterInputStream",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Ljava/io/FilterInputStream;)Ljava/io/InputStream;",
                1,
                1,
                vec![0x2a, 0xb4, f[0], f[1], 0xb0],
            )],
        )
    });
    case!("ProtectedFieldSelf", true, |cp, c| {
        let f = u2(cp.fref("java/io/FilterInputStream", "in", "Ljava/io/InputStream;"));
        class(
            cp,
            c,
            "java/io/FilterInputStream",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Lt/ProtectedFieldSelf;)Ljava/io/InputStream;",
                1,
                1,
                vec![0x2a, 0xb4, f[0], f[1], 0xb0],
            )],
        )
    });
    case!("ArrayToCloneable", true, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "([I)Ljava/lang/Cloneable;",
                1,
                1,
                vec![0x2a, 0xb0],
            )],
        )
    });
    case!("ArrayToRunnable", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "([I)Ljava/lang/Runnable;",
                1,
                1,
                vec![0x2a, 0xb0],
            )],
        )
    });
    case!("StringToRunnable", true, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Ljava/lang/String;)Ljava/lang/Runnable;",
                1,
                1,
                vec![0x2a, 0xb0],
            )],
        )
    });
    case!("StringToInteger", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Ljava/lang/String;)Ljava/lang/Integer;",
                1,
                1,
                vec![0x2a, 0xb0],
            )],
        )
    });
    case!("IntegerToNumber", true, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Ljava/lang/Integer;)Ljava/lang/Number;",
                1,
                1,
                vec![0x2a, 0xb0],
            )],
        )
    });
    case!("ObjectArrayCovariance", true, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "([[Ljava/lang/Integer;)[[Ljava/lang/Number;",
                1,
                1,
                vec![0x2a, 0xb0],
            )],
        )
    });
    case!("PrimitiveArrayMismatch", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", "([I)[J", 1, 1, vec![0x2a, 0xb0])],
        )
    });
    case!("FallOffEnd", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", "()V", 0, 0, vec![0x00])],
        )
    });
    case!("DeadCodeNoFrame", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", "()V", 0, 0, vec![0xb1, 0x00, 0xb1])],
        )
    });
    case!("DeadCodeWithFrame", true, |cp, c| {
        let s = smt(&mut cp, &[(1, vec![], vec![])]);
        let mut mm = m(STATIC, "m", "()V", 0, 0, vec![0xb1, 0x00, 0xb1]);
        mm.smt = Some(s);
        class(cp, c, "java/lang/Object", &[], vec![mm])
    });
    case!("JsrInVersion52", false, |cp, c| {
        let s = smt(
            &mut cp,
            &[
                (3, vec![], vec![]),
                (4, vec![], vec![T::Obj("java/lang/Object")]),
            ],
        );
        let mut mm = m(
            STATIC,
            "m",
            "()V",
            1,
            1,
            vec![0xa8, 0, 4, 0xb1, 0x4b, 0xa9, 0],
        );
        mm.smt = Some(s);
        class(cp, c, "java/lang/Object", &[], vec![mm])
    });
    case!("LongFrameOverflowsLocals", false, |cp, c| {
        let s = smt(&mut cp, &[(0, vec![T::Long], vec![])]);
        let mut mm = m(STATIC, "m", "()V", 0, 1, vec![0xb1]);
        mm.smt = Some(s);
        class(cp, c, "java/lang/Object", &[], vec![mm])
    });
    case!("FrameIntVsFloat", false, |cp, c| {
        let s = smt(&mut cp, &[(4, vec![T::Float], vec![])]);
        let mut mm = m(STATIC, "m", "(I)V", 1, 1, vec![0x1a, 0x99, 0, 3, 0xb1]);
        mm.smt = Some(s);
        class(cp, c, "java/lang/Object", &[], vec![mm])
    });
    case!("FrameIntOk", true, |cp, c| {
        let s = smt(&mut cp, &[(4, vec![T::Int], vec![])]);
        let mut mm = m(STATIC, "m", "(I)V", 1, 1, vec![0x1a, 0x99, 0, 3, 0xb1]);
        mm.smt = Some(s);
        class(cp, c, "java/lang/Object", &[], vec![mm])
    });
    // HotSpot 17 rejects even this: after the super() call the handler check sees an initialized `this`
    // with flagThisUninit, which no stack map frame can accept. So no handler may cover super()/this().
    case!("HandlerAroundSuperThrows", false, |cp, c| {
        // 0 aload_0; 1 invokespecial; 4 return; 5 athrow   handler [0,4) -> 5
        let i = obj_init(&mut cp);
        let s = smt(
            &mut cp,
            &[(5, vec![T::UThis], vec![T::Obj("java/lang/Throwable")])],
        );
        let mut mm = m(
            PUBLIC,
            "<init>",
            "()V",
            1,
            1,
            vec![0x2a, 0xb7, i[0], i[1], 0xb1, 0xbf],
        );
        mm.ex = vec![[0, 4, 5, 0]];
        mm.smt = Some(s);
        class(cp, c, "java/lang/Object", &[], vec![mm])
    });
    case!("HandlerAroundSuperReturns", false, |cp, c| {
        let i = obj_init(&mut cp);
        let s = smt(
            &mut cp,
            &[(5, vec![T::UThis], vec![T::Obj("java/lang/Throwable")])],
        );
        let mut mm = m(
            PUBLIC,
            "<init>",
            "()V",
            1,
            1,
            vec![0x2a, 0xb7, i[0], i[1], 0xb1, 0xb1],
        );
        mm.ex = vec![[0, 4, 5, 0]];
        mm.smt = Some(s);
        class(cp, c, "java/lang/Object", &[], vec![mm])
    });
    case!("InvokespecialUnrelated", false, |cp, c| {
        let k = u2(cp.mref("java/lang/String", "length", "()I"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                PUBLIC,
                "m",
                "()V",
                1,
                1,
                vec![0x2a, 0xb7, k[0], k[1], 0x57, 0xb1],
            )],
        )
    });
    case!("InvokeinterfaceBadCount", false, |cp, c| {
        let k = u2(cp.iref("java/lang/Runnable", "run", "()V"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Ljava/lang/Runnable;)V",
                1,
                1,
                vec![0x2a, 0xb9, k[0], k[1], 2, 0, 0xb1],
            )],
        )
    });
    case!("InvokeinterfaceOk", true, |cp, c| {
        let k = u2(cp.iref("java/lang/Runnable", "run", "()V"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(Ljava/lang/Runnable;)V",
                1,
                1,
                vec![0x2a, 0xb9, k[0], k[1], 1, 0, 0xb1],
            )],
        )
    });
    case!("NewInitOk", true, |cp, c| {
        let o = u2(cp.class("java/lang/Object"));
        let i = obj_init(&mut cp);
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "()Ljava/lang/Object;",
                2,
                0,
                vec![0xbb, o[0], o[1], 0x59, 0xb7, i[0], i[1], 0xb0],
            )],
        )
    });
    case!("NewReturnedUninit", false, |cp, c| {
        let o = u2(cp.class("java/lang/Object"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "()Ljava/lang/Object;",
                1,
                0,
                vec![0xbb, o[0], o[1], 0xb0],
            )],
        )
    });
    case!("WrongInitClass", false, |cp, c| {
        let o = u2(cp.class("java/lang/Object"));
        let i = u2(cp.mref("java/lang/String", "<init>", "()V"));
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "()Ljava/lang/Object;",
                2,
                0,
                vec![0xbb, o[0], o[1], 0x59, 0xb7, i[0], i[1], 0xb0],
            )],
        )
    });
    case!("AastoreIntArray", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "([ILjava/lang/Object;)V",
                3,
                2,
                vec![0x2a, 0x03, 0x2b, 0x53, 0xb1],
            )],
        )
    });
    case!("AastoreOk", true, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "([Ljava/lang/String;Ljava/lang/Object;)V",
                3,
                2,
                vec![0x2a, 0x03, 0x2b, 0x53, 0xb1],
            )],
        )
    });
    case!("MaxStackTooLow", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", "()I", 1, 0, vec![0x04, 0x04, 0x60, 0xac])],
        )
    });
    case!("ReturnTypeMismatch", false, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", "()F", 1, 0, vec![0x04, 0xac])],
        )
    });
    case!("ByteArrayFromBooleanArray", true, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", "([Z)I", 2, 1, vec![0x2a, 0x03, 0x33, 0xac])],
        )
    });
    case!("StoreSplitsLong", false, |cp, c| {
        // lconst_0 lstore_0 iconst_0 istore_1 lload_0 pop2 return
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "()V",
                2,
                2,
                vec![0x09, 0x3f, 0x03, 0x3c, 0x1e, 0x58, 0xb1],
            )],
        )
    });
    case!("StoreKeepsLong", true, |cp, c| {
        class(
            cp,
            c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "()V",
                2,
                3,
                vec![0x09, 0x3f, 0x03, 0x3d, 0x1e, 0x58, 0xb1],
            )],
        )
    });
    let with_version = |mut b: Vec<u8>, major: u8| {
        b[7] = major;
        b
    };
    let branchy = |name: &'static str, off: u8, ms: u16| {
        let cp = Cp::new();
        let c = format!("t/{name}");
        class(
            cp,
            &c,
            "java/lang/Object",
            &[],
            vec![m(
                STATIC,
                "m",
                "(I)V",
                ms,
                1,
                vec![0x1a, 0x99, 0, off, 0xb1],
            )],
        )
    };
    // old class files: no frames; HotSpot infers types, we check structure only
    v.push((
        "V49NoFrames",
        true,
        with_version(branchy("V49NoFrames", 3, 1), 49),
    ));
    v.push((
        "V49BranchIntoMiddle",
        false,
        with_version(branchy("V49BranchIntoMiddle", 2, 1), 49),
    ));
    // version 50 falls back to the inference verifier when type checking fails
    v.push((
        "V50MissingFrames",
        true,
        with_version(branchy("V50MissingFrames", 3, 1), 50),
    ));
    v.push((
        "V51MissingFrames",
        false,
        with_version(branchy("V51MissingFrames", 3, 1), 51),
    ));
    // HotSpot keeps only ACC_STATIC of a <clinit>'s flags: a "native" <clinit> with code is fine
    v.push((
        "ClinitFlagsIgnored",
        true,
        class(
            Cp::new(),
            "t/ClinitFlagsIgnored",
            "java/lang/Object",
            &[],
            vec![m(0x0108, "<clinit>", "()V", 0, 0, vec![0xb1])],
        ),
    ));
    // before version 50 an interface need not say ACC_ABSTRACT (HotSpot adds it); from 50 on it must
    let iface = |name: &'static str| {
        class_with_flags(
            Cp::new(),
            0x0200,
            &format!("t/{name}"),
            "java/lang/Object",
            &[],
            vec![],
        )
    };
    v.push((
        "V49InterfaceNotAbstract",
        true,
        with_version(iface("V49InterfaceNotAbstract"), 49),
    ));
    v.push((
        "V50InterfaceNotAbstract",
        false,
        with_version(iface("V50InterfaceNotAbstract"), 50),
    ));
    // inference catches what type checking would: version 49 and the version-50 fallback
    let too_low = |name: &'static str| {
        let cp = Cp::new();
        class(
            cp,
            &format!("t/{name}"),
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", "()I", 1, 0, vec![0x04, 0x04, 0x60, 0xac])],
        )
    };
    v.push((
        "V49StackTooLow",
        false,
        with_version(too_low("V49StackTooLow"), 49),
    ));
    v.push((
        "V50StackTooLow",
        false,
        with_version(too_low("V50StackTooLow"), 50),
    ));
    // if (i) x = s (String) else x = n (Integer); return x: the merged type is Object
    let merge = |name: &'static str, ok: bool| {
        let cp = Cp::new();
        let code = vec![
            0x1a, // 0 iload_0
            0x99, 0, 8,    // 1 ifeq -> 9
            0x2b, // 4 aload_1
            0x4e, // 5 astore_3
            0xa7, 0, 5,    // 6 goto -> 11
            0x2c, // 9 aload_2
            0x4e, // 10 astore_3
            0x2d, // 11 aload_3
            0xb0, // 12 areturn
        ];
        let desc: &'static str = if ok {
            "(ILjava/lang/String;Ljava/lang/Integer;)Ljava/lang/Object;"
        } else {
            "(ILjava/lang/String;Ljava/lang/Integer;)Ljava/lang/String;"
        };
        class(
            cp,
            &format!("t/{name}"),
            "java/lang/Object",
            &[],
            vec![m(STATIC, "m", desc, 1, 4, code)],
        )
    };
    v.push((
        "V49MergeToObject",
        true,
        with_version(merge("V49MergeToObject", true), 49),
    ));
    v.push((
        "V49MergeNotString",
        false,
        with_version(merge("V49MergeNotString", false), 49),
    ));
    v
}

/// Known gaps: classes where we knowingly differ from HotSpot (none at the moment).
fn known_gaps() -> Vec<(&'static str, Vec<u8>)> {
    vec![]
}

#[test]
fn conformance_cases_match_expectation_and_hotspot() {
    let Some(tree) = common::jdk_corpus() else {
        return;
    };
    let Some(home) = common::java_home() else {
        return;
    };
    let work = common::workspace().join("target/conformance-test");
    let _ = std::fs::remove_dir_all(&work);
    let cases = cases();
    let gaps = known_gaps();
    let cp = ClassPath::new(std::slice::from_ref(&tree), false).unwrap();
    for (name, bytes) in &gaps {
        let p = work.join("t").join(format!("{name}.class"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    for (name, _, bytes) in &cases {
        let p = work.join("t").join(format!("{name}.class"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let verdicts = run_hotspot(&home, &work, false, &[]).unwrap();
    let mut failures = Vec::new();
    for (name, expect_ok, bytes) in &cases {
        let ours = verify_class(bytes, &cp);
        let v = verdicts
            .iter()
            .find(|v| v.class == format!("t.{name}"))
            .expect("verdict");
        let hs_ok = match v.kind {
            VerdictKind::Ok => true,
            VerdictKind::VerifyError | VerdictKind::FormatError => false,
            _ => {
                failures.push(format!(
                    "{name}: HotSpot gave no verdict on the class: {v:?}"
                ));
                continue;
            }
        };
        eprintln!(
            "{name:<30} expect={:<6} hotspot={:<6} ours={:<6} {} | {}",
            expect_ok,
            hs_ok,
            ours.is_empty(),
            v.message.chars().take(70).collect::<String>(),
            ours.first().map(|e| e.to_string()).unwrap_or_default()
        );
        if hs_ok != *expect_ok {
            failures.push(format!(
                "{name}: HotSpot ok={hs_ok}, expected {expect_ok}: {}",
                v.message
            ));
        }
        if ours.is_empty() != *expect_ok {
            failures.push(format!(
                "{name}: ours ok={}, expected {expect_ok}: {ours:?}",
                ours.is_empty()
            ));
        }
    }
    for (name, bytes) in &gaps {
        let v = verdicts
            .iter()
            .find(|v| v.class == format!("t.{name}"))
            .expect("verdict");
        let ours = verify_class(bytes, &cp);
        eprintln!(
            "known gap {name}: hotspot={:?} ours ok={}",
            v.kind,
            ours.is_empty()
        );
        if v.ok || !ours.is_empty() {
            failures.push(format!(
                "known gap {name} changed: hotspot {v:?}, ours {ours:?} (update the notes)"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(failures.is_empty(), "{failures:#?}");
}
