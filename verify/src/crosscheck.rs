//! Structural agreement with two independent parsers: cafebabe and ristretto_classfile.
//! Our reader, cafebabe and ristretto must agree on the class name, superclass and, per method,
//! name, descriptor, max_stack, max_locals, code length (instruction count for ristretto) and
//! exception-table size.

use crate::classfile::{mutf8_to_string, ClassFile, Code};
use crate::typecheck::insn_len;

/// Best-effort class name of possibly malformed bytes (for error messages), with our own reader.
pub fn class_name_guess(bytes: &[u8]) -> Option<String> {
    let mut r = crate::classfile::Reader::new(bytes);
    r.pos = 8;
    let cp = crate::classfile::ConstantPool::parse(&mut r).ok()?;
    r.u2().ok()?;
    let this = r.u2().ok()?;
    cp.class_name(this).ok().map(mutf8_to_string)
}

thread_local! {
    /// Set while a third-party parser runs on this thread: its panics are caught and reported
    /// as a disagreement, so the panic hook stays quiet for them.
    static IN_PARSER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run a third-party parser; a panic inside it becomes an error string (they are not all
/// panic-free), with its message, and prints nothing ("thread 'main' panicked" and a backtrace
/// hint reached the user of `bci verify --cross` before). Panics elsewhere, on any thread, still
/// go to the hook that was installed.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_PARSER.with(|p| p.get()) {
                previous(info);
            }
        }));
    });
    IN_PARSER.with(|p| p.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    IN_PARSER.with(|p| p.set(false));
    match r {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!("{what} panicked: {msg}"))
        }
    }
}

#[derive(Debug, PartialEq, Eq, Clone)]
struct MethodShape {
    name: String,
    desc: String,
    code: Option<(u16, u16, usize, usize, usize)>, // max_stack, max_locals, code bytes, instructions, handlers
}

fn ours(bytes: &[u8]) -> Result<(String, Option<String>, Vec<MethodShape>), String> {
    let cf = ClassFile::parse(bytes).map_err(|e| e.0)?;
    let mut ms = Vec::new();
    for m in &cf.methods {
        let mut code = None;
        if let Some(a) = m.attributes.iter().find(|a| a.name == b"Code") {
            let c = Code::parse(a.data, &cf.cp).map_err(|e| e.0)?;
            let mut n = 0;
            let mut pc = 0;
            while pc < c.code.len() {
                pc += insn_len(c.code, pc).ok_or("bad instruction")?;
                n += 1;
            }
            code = Some((
                c.max_stack,
                c.max_locals,
                c.code.len(),
                n,
                c.exceptions.len(),
            ));
        }
        ms.push(MethodShape {
            name: mutf8_to_string(m.name),
            desc: mutf8_to_string(m.desc),
            code,
        });
    }
    Ok((
        mutf8_to_string(cf.this_class),
        cf.super_class.map(mutf8_to_string),
        ms,
    ))
}

/// Whether a BootstrapMethods argument of the class (read by our reader) is a dynamic constant
/// (CONSTANT_Dynamic, Java 11): valid (the JVM resolves it), but cafebabe reads no such argument
/// ("Unexpected constant pool reference type for argument 0 of bootstrap method 1").
fn has_dynamic_bootstrap_argument(bytes: &[u8]) -> bool {
    let Ok(cf) = ClassFile::parse(bytes) else {
        return false;
    };
    let Some(a) = cf.attributes.iter().find(|a| a.name == b"BootstrapMethods") else {
        return false;
    };
    let mut r = crate::classfile::Reader::new(a.data);
    let mut dynamic = || -> Option<bool> {
        for _ in 0..r.u2().ok()? {
            r.u2().ok()?;
            for _ in 0..r.u2().ok()? {
                if matches!(
                    cf.cp.get(r.u2().ok()?),
                    Some(crate::classfile::Cp::Dynamic(..))
                ) {
                    return Some(true);
                }
            }
        }
        Some(false)
    };
    dynamic().unwrap_or(false)
}

/// What [`cross_check_noting`] found: disagreements (the class's errors) and notes (a reference
/// parser's own limitation, which says nothing of the class: the others are compared).
#[derive(Debug, Default)]
pub struct Cross {
    pub errors: Vec<String>,
    pub notes: Vec<String>,
}

/// Returns the disagreements (empty = all three parsers agree, or all three reject); a reference
/// parser's known limitation is no disagreement ([`cross_check_noting`] names it).
pub fn cross_check(bytes: &[u8]) -> Vec<String> {
    cross_check_noting(bytes).errors
}

/// [`cross_check`], with a note for each reference parser left out of the comparison for a
/// limitation of its own: cafebabe on a dynamic constant as a bootstrap method argument (a
/// valid class, which it rejects; it counted as the class's error).
pub fn cross_check_noting(bytes: &[u8]) -> Cross {
    let mut cross = Cross::default();
    let mut out = Vec::new();
    let a = ours(bytes);
    let b = guarded("cafebabe", || {
        cafebabe::parse_class_with_options(
            bytes,
            cafebabe::ParseOptions::default().parse_bytecode(false),
        )
        .map_err(|e| e.to_string())
    });
    let c = guarded("ristretto", || {
        ristretto_classfile::ClassFile::from_bytes(bytes).map_err(|e| e.to_string())
    });
    // cafebabe's limitation, when ours and ristretto read the class: compared without it
    let b_limited = matches!((&a, &b, &c), (Ok(_), Err(e), Ok(_))
        if e.contains("of bootstrap method") && has_dynamic_bootstrap_argument(bytes));
    if b_limited {
        cross.notes.push(
            "cafebabe cannot read a dynamic constant (CONSTANT_Dynamic) as a bootstrap method \
             argument, a limitation of that parser: compared with ristretto only"
                .to_string(),
        );
    }
    match (&a, &b, &c) {
        (Err(_), Err(_), Err(_)) => {
            return Cross {
                errors: out,
                ..cross
            }
        }
        (Ok(_), Ok(_), Ok(_)) => {}
        (Ok(_), Err(_), Ok(_)) if b_limited => {}
        _ => {
            out.push(format!(
                "parsers disagree on validity: ours={} cafebabe={} ristretto={}",
                a.as_ref().err().map(|e| e.as_str()).unwrap_or("ok"),
                b.as_ref()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "ok".into()),
                c.as_ref()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "ok".into()),
            ));
            return Cross {
                errors: out,
                ..cross
            };
        }
    }
    let (Ok((name, sup, ms)), Ok(c)) = (a, c) else {
        return Cross {
            errors: out,
            ..cross
        };
    };
    let b = b.ok();
    if let Some(b) = &b {
        if b.this_class.to_string() != name || b.super_class.as_ref().map(|s| s.to_string()) != sup
        {
            out.push(format!("cafebabe: class/super differ for {name}"));
        }
    }
    match c.class_name() {
        Ok(n) if n.to_string().as_str() == name.as_str() => {}
        _ => out.push(format!("ristretto: class name differs for {name}")),
    }
    if b.as_ref().is_some_and(|b| b.methods.len() != ms.len()) || c.methods.len() != ms.len() {
        out.push(format!("{name}: method counts differ"));
        return Cross {
            errors: out,
            ..cross
        };
    }
    for (i, m) in ms.iter().enumerate() {
        if let Some(b) = &b {
            let bm = &b.methods[i];
            let bcode = bm.attributes.iter().find_map(|a| match &a.data {
                cafebabe::attributes::AttributeData::Code(cd) => Some(cd),
                _ => None,
            });
            let bshape = bcode.map(|cd| {
                (
                    cd.max_stack,
                    cd.max_locals,
                    cd.code.len(),
                    cd.exception_table.len(),
                )
            });
            let oshape = m.code.map(|(s, l, n, _, h)| (s, l, n, h));
            if bm.name != m.name || bshape != oshape {
                out.push(format!(
                    "{name}.{}{}: cafebabe disagrees: {bshape:?} vs {oshape:?}",
                    m.name, m.desc
                ));
            }
        }
        let rm = &c.methods[i];
        let rname = c
            .constant_pool
            .try_get_utf8(rm.name_index)
            .map(|s| s.to_string())
            .unwrap_or_default();
        let rshape = rm.attributes.iter().find_map(|a| match a {
            ristretto_classfile::attributes::Attribute::Code {
                max_stack,
                max_locals,
                code,
                exception_table,
                ..
            } => Some((*max_stack, *max_locals, code.len(), exception_table.len())),
            _ => None,
        });
        let oshape = m.code.map(|(s, l, _, n, h)| (s, l, n, h));
        if rname != m.name || rshape != oshape {
            out.push(format!(
                "{name}.{}{}: ristretto disagrees: {rshape:?} vs {oshape:?}",
                m.name, m.desc
            ));
        }
    }
    Cross {
        errors: out,
        ..cross
    }
}
