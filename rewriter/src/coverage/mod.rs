//! Coverage instrumentation: every method with code gets the counters of its [`flow::Plan`],
//! numbered in method order within the class (a pure function of the class bytes, so the
//! agent, the offline instrumenter and the report agree without a registry).
//!
//! The code a method gets (runtime ABI, defined once here):
//!
//! ```text
//! entry:    <class id> ; <counters of the class> ; <index of the entry counter>
//!           invokestatic RUNTIME.arr(III)[J ; astore C
//! counter:  aload C ; <index> ; dup2 ; laload ; lconst_1 ; ladd ; lastore
//! ```
//!
//! `arr` returns the calling thread's counter array of the class (the runtime keeps one per
//! thread and class and sums them, so counts are exact without a lock or an atomic on the
//! path), after adding one to the method's entry counter in it: the lookup runs once per
//! entry anyway, so the entry counter costs no code of its own in the method (10 bytes less
//! per method, and in the interpreter 7 bytecodes less per call). The entry counter is the
//! method's last (highest index) and the runtime bumps it without a test of its own: when C2
//! inlines the lookup, that range check dominates the method's other counters (constant
//! indices below it), and C2 drops their checks. A method with no other
//! counter (no branch, no call) pops the array: no local. 64-bit counters do not wrap in
//! practice (2^63 increments at one a nanosecond take 292 years); sums over threads and
//! merges saturate.

pub mod analysis;
pub mod data;
pub mod lcov;

use crate::flow::{Cfg, Counter, Plan, Site, Split};
use crate::Outcome;
use bci::class::{ACC_ABSTRACT, ACC_MODULE, ACC_NATIVE};
use bci::opcodes::op;
use bci::{ClassFile, ClassWriter, Error, ErrorKind, MethodEditor, Result, Snippet, VType};

/// How instrumented code names its class to the runtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassId {
    /// A constant chosen by the caller (the agent numbers classes as they load).
    Constant(i32),
    /// Offline (`bci instrument --coverage`): `<clinit>` (created if absent) first calls
    /// `RUNTIME.register(name, hash, counters)I` and keeps the id in the static final int
    /// [`CLASS_ID_FIELD`]; methods read it. With `module_reads`, `<clinit>` first gives the
    /// class's module a read edge to the runtime's (classes of a modular jar). The class gets
    /// the `BciInstrumented` marker, so it is never instrumented again.
    Registered { module_reads: bool },
}

/// The static final int field holding an offline-instrumented class's id.
pub const CLASS_ID_FIELD: &str = "bci$cid";

/// Knobs of [`instrument`].
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// Internal name of the runtime class that provides `arr(III)[J` (class id, its number of
    /// counters, the entry counter to bump -> the calling thread's counter array of the
    /// class).
    pub runtime: &'a str,
    pub split: Split,
    pub class_id: ClassId,
}

/// Why a method has no counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skipped {
    /// Abstract or native: no code.
    NoCode,
    /// An empty `finalize()`: probing it would make every object of the class finalizable.
    EmptyFinalize,
    /// The graph or the edit failed (subroutines, a counter that needs a trampoline, a method
    /// that would outgrow 64 KiB …).
    Error(String),
}

/// The counters of one method.
#[derive(Clone, Debug)]
pub struct MethodCoverage {
    /// Index in the class's method table.
    pub index: usize,
    pub name: String,
    pub desc: String,
    pub access: u16,
    /// Its counters are the class's `first .. first + plan.counters.len()`.
    pub first: u32,
    pub cfg: Cfg,
    pub plan: Plan,
}

/// The counters of one class.
#[derive(Clone, Debug)]
pub struct ClassCoverage {
    /// Internal name.
    pub name: String,
    /// [`class_hash`] of the original bytes.
    pub hash: u64,
    /// Length of the class's counter array.
    pub counters: u32,
    pub methods: Vec<MethodCoverage>,
    /// Methods without counters: (name, descriptor, why).
    pub skipped: Vec<(String, String, Skipped)>,
}

/// The counter layout [`class_hash`] is tagged with: data recorded with another numbering of
/// the counters (2: the entry counter is each method's last; before, its first) has other
/// keys, so it shows as stale instead of being misread.
pub const LAYOUT_TAG: &[u8] = b"\0bci-cov-layout-2";

/// Data recorded for a class is keyed by the 64-bit hash of its original bytes (the same id
/// offline instrumentation writes in its marker), so data from another build of the class is
/// detected, never misattributed: FNV-1a 64 of the bytes followed by [`LAYOUT_TAG`], so data
/// of another counter layout is detected the same way.
pub fn class_hash(bytes: &[u8]) -> u64 {
    let mut h = crate::offline::class_hash(bytes);
    for &b in LAYOUT_TAG {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn empty_finalize(cf: &ClassFile<'_>, m: &bci::Member<'_>, name: &str, desc: &str) -> bool {
    name == "finalize"
        && desc == "()V"
        && cf
            .find_attr(&m.attributes, "Code")
            .and_then(|(_, a)| bci::CodeAttr::parse(cf, a).ok())
            .is_some_and(|c| c.code == [op::RETURN])
}

/// The plan of every method of a class, from its original bytes (what the report uses; the
/// same as [`instrument`] computes). Methods the instrumenter could not edit are found only by
/// instrumenting, so the report should take `skipped` from the instrumenter's run when it has
/// it; a method listed here but skipped there simply has no data.
pub fn plan_class(bytes: &[u8], split: Split) -> Result<ClassCoverage> {
    let cf = ClassFile::parse(bytes)?;
    let name = cf.name()?.into_owned();
    let mut out = ClassCoverage {
        name,
        hash: class_hash(bytes),
        counters: 0,
        methods: Vec::new(),
        skipped: Vec::new(),
    };
    for (k, m) in cf.methods.iter().enumerate() {
        let mname = cf.member_name(m).into_owned();
        let mdesc = cf.member_desc(m).into_owned();
        let why = if m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0 {
            Some(Skipped::NoCode)
        } else if empty_finalize(&cf, m, &mname, &mdesc) {
            Some(Skipped::EmptyFinalize)
        } else {
            None
        };
        if let Some(why) = why {
            out.skipped.push((mname, mdesc, why));
            continue;
        }
        let planned = (|| -> Result<(Cfg, Plan)> {
            let (_, a) = cf
                .find_attr(&m.attributes, "Code")
                .ok_or_else(|| Error::new(ErrorKind::Format, "method without Code"))?;
            let code = bci::CodeAttr::parse(&cf, a)?;
            let insns = code.decode_all()?;
            let cfg = Cfg::build(code.code, &insns, &code.handlers, split)?;
            let plan = Plan::new(&cfg);
            Ok((cfg, plan))
        })();
        match planned {
            Ok((cfg, plan)) => {
                let n = plan.counters.len() as u32;
                out.methods.push(MethodCoverage {
                    index: k,
                    name: mname,
                    desc: mdesc,
                    access: m.access,
                    first: out.counters,
                    cfg,
                    plan,
                });
                out.counters += n;
            }
            Err(e) => out
                .skipped
                .push((mname, mdesc, Skipped::Error(e.to_string()))),
        }
    }
    Ok(out)
}

/// Instruments every method of a class with its counters. Returns the rewritten class (or
/// `Unchanged` for a module descriptor or a class without code) and its plan; a method that
/// cannot be edited is left original and listed in `skipped`, its counters unused.
pub fn instrument(bytes: &[u8], opts: &Options<'_>) -> Result<(Outcome, ClassCoverage)> {
    let cf = ClassFile::parse(bytes)?;
    let mut cov = plan_class(bytes, opts.split)?;
    if cf.access & ACC_MODULE != 0 || cov.methods.is_empty() {
        return Ok((Outcome::Unchanged, cov));
    }
    if crate::offline::marker_of(&cf).is_some() {
        // ours already: counting twice would double every count
        return Ok((Outcome::Unchanged, cov));
    }
    let mut w = ClassWriter::new(&cf);
    let mut kept = Vec::with_capacity(cov.methods.len());
    let counters = cov.counters;
    let prologue = match opts.class_id {
        ClassId::Constant(_) => None,
        ClassId::Registered { module_reads } => {
            let name = cov.name.clone();
            let mut first = Snippet::new();
            if module_reads {
                if cf.major < 49 {
                    return Err(Error::new(
                        ErrorKind::Edit,
                        format!("{name}: a read edge needs class file version 49 or later (ldc of a class)"),
                    ));
                }
                first.append(&crate::offline::read_edge(&mut w.cp, &name, opts.runtime)?);
            }
            first
                .string(&mut w.cp, &name)?
                .long(&mut w.cp, cov.hash as i64)?
                .int(&mut w.cp, counters as i32)?
                .invokestatic(
                    &mut w.cp,
                    opts.runtime,
                    "register",
                    "(Ljava/lang/String;JI)I",
                )?
                .putstatic(&mut w.cp, &name, CLASS_ID_FIELD, "I")?;
            Some(crate::offline::Prologue::new(
                &cf,
                &mut w.cp,
                &name,
                first,
                CLASS_ID_FIELD,
            )?)
        }
    };
    let mut done_clinit = false;
    for m in std::mem::take(&mut cov.methods) {
        let is_clinit = m.name == "<clinit>" && m.desc == "()V";
        let body = (|| -> Result<Vec<u8>> {
            let mut ed = MethodEditor::new(&cf, m.index)?;
            if let (true, Some(p)) = (is_clinit, &prologue) {
                ed.insert_entry(&p.code)?;
            }
            emit(&mut ed, &mut w.cp, &m, &cov.name, counters, opts)?;
            ed.finish(&mut w.cp)
        })();
        let body = match (body, is_clinit, &prologue) {
            // <clinit> that cannot take its counters still registers the class
            (Err(e), true, Some(p)) => {
                let b = MethodEditor::new(&cf, m.index).and_then(|mut ed| {
                    ed.insert_entry(&p.code)?;
                    ed.finish(&mut w.cp)
                });
                match b.and_then(|b| w.set_code(m.index, b)) {
                    Ok(()) => done_clinit = true,
                    Err(e2) => return Err(e2.context(format!("{}.<clinit>", cov.name))),
                }
                Err(e)
            }
            (b, _, _) => {
                if b.is_ok() && is_clinit {
                    done_clinit = true;
                }
                b
            }
        };
        match body.and_then(|b| w.set_code(m.index, b)) {
            Ok(()) => kept.push(m),
            Err(e) => {
                let e = if e.path().is_empty() {
                    e.context(format!("{}.{}{}", cov.name, m.name, m.desc))
                } else {
                    e
                };
                cov.skipped.push((
                    m.name.clone(),
                    m.desc.clone(),
                    Skipped::Error(e.to_string()),
                ))
            }
        }
    }
    cov.methods = kept;
    if let Some(p) = &prologue {
        // with a class id in <clinit>, even a class whose methods all failed registers (its
        // counters are all zero: not run, rather than unknown)
        p.finish(&mut w, done_clinit)
            .map_err(|e| e.context(cov.name.clone()))?;
        let methods: Vec<(String, String)> = cov
            .methods
            .iter()
            .map(|m| (m.name.clone(), m.desc.clone()))
            .collect();
        let data = crate::offline::marker_data(&mut w.cp, cov.hash, true, &methods)?;
        w.add_attribute(crate::offline::MARKER_ATTR, &data)?;
    } else if cov.methods.is_empty() {
        return Ok((Outcome::Unchanged, cov));
    }
    Ok((Outcome::Rewritten(w.finish()?), cov))
}

/// Inserts one method's counters.
fn emit(
    ed: &mut MethodEditor<'_, '_>,
    cp: &mut bci::CpBuilder<'_>,
    m: &MethodCoverage,
    class: &str,
    class_counters: u32,
    opts: &Options<'_>,
) -> Result<()> {
    let mut entry = Snippet::new();
    match opts.class_id {
        ClassId::Constant(id) => entry.int(cp, id)?,
        ClassId::Registered { .. } => entry.getstatic(cp, class, CLASS_ID_FIELD, "I")?,
    };
    entry.int(cp, class_counters as i32)?;
    // the entry counter is the method's last (Plan::new); arr bumps it
    let last = m.plan.counters.len() - 1;
    if m.plan.counters.last() != Some(&Counter::Entry) {
        return Err(Error::new(
            ErrorKind::Edit,
            "the plan's last counter is not the entry counter",
        ));
    }
    entry.int(cp, (m.first + last as u32) as i32)?;
    entry.invokestatic(cp, opts.runtime, "arr", "(III)[J")?;
    if m.plan.counters.len() == 1 {
        // the entry counter alone (no branch, no call): no local for the array
        entry.op(op::POP)?;
        return ed.insert_entry(&entry);
    }
    let local = ed.new_local(VType::Object(cp.class("[J")?))?;
    entry.store('A', local)?;
    for (i, c) in m.plan.counters.iter().enumerate().take(last) {
        let mut s = Snippet::new();
        s.load('A', local)?;
        s.int(cp, (m.first + i as u32) as i32)?;
        s.op(op::DUP2)?
            .op(op::LALOAD)?
            .op(op::LCONST_1)?
            .op(op::LADD)?
            .op(op::LASTORE)?;
        match m.plan.site(&m.cfg, i) {
            Some(Site::Entry) => entry.append(&s),
            Some(Site::Before(k)) => ed.insert_before(insn(&m.cfg, k)?, &s)?,
            Some(Site::After(k)) => ed.insert_after(insn(&m.cfg, k)?, &s)?,
            Some(Site::Trampoline(e)) => {
                // only switch cases into a shared target need one (conditional jumps are
                // counted after the jump or at the target)
                let edge = &m.cfg.edges[e as usize];
                let (Some(to), crate::flow::EdgeKind::Switch { .. }) = (edge.to, &edge.kind) else {
                    return Err(Error::new(
                        ErrorKind::Edit,
                        format!("counter {i} ({c:?}): no place for edge {e}"),
                    ));
                };
                let k = m.cfg.blocks[edge.from as usize].end as usize - 1;
                let first = m.cfg.blocks[to as usize].first as usize;
                let pc = ed.insns()[first].pc;
                ed.insert_on_switch_edge(k, pc, &s)?;
            }
            None => unreachable!("counter {i} is in the plan"),
        }
    }
    ed.insert_entry(&entry)
}

fn insn(cfg: &Cfg, k: u32) -> Result<usize> {
    let last = cfg.blocks.last().map_or(0, |b| b.end);
    if k >= last {
        return Err(Error::new(ErrorKind::Edit, format!("no instruction {k}")));
    }
    Ok(k as usize)
}

/// Counts of the counters of one method, from the class's counter array.
pub fn method_counts<'v>(m: &MethodCoverage, class_counts: &'v [u64]) -> &'v [u64] {
    let a = (m.first as usize).min(class_counts.len());
    let b = (m.first as usize + m.plan.counters.len()).min(class_counts.len());
    &class_counts[a..b]
}

/// The counter that counts entries (always the method's first).
pub fn entry_counter(m: &MethodCoverage) -> Option<u32> {
    m.plan
        .counters
        .iter()
        .position(|c| *c == Counter::Entry)
        .map(|i| m.first + i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_hash_is_fnv_of_the_bytes_then_the_layout_tag() {
        let mut tagged = b"class bytes".to_vec();
        tagged.extend_from_slice(LAYOUT_TAG);
        assert_eq!(
            class_hash(b"class bytes"),
            crate::offline::class_hash(&tagged)
        );
        // data keyed by the untagged hash (the layout before) is another class's
        assert_ne!(
            class_hash(b"class bytes"),
            crate::offline::class_hash(b"class bytes")
        );
    }
}
