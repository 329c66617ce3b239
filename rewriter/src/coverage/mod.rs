//! Coverage instrumentation: every method with code (but HotSpot intrinsics: [`Skipped`]) gets
//! the counters of its [`flow::Plan`], numbered in method order within the class (a pure
//! function of the class bytes, so the agent, the offline instrumenter and the report agree
//! without a registry).
//!
//! The code a method gets (runtime ABI, defined once here):
//!
//! ```text
//! entry:    <index of the entry counter> ; invokestatic CLASS.bci$a(I)[J ; astore C
//!           (annotation types, and interfaces of class files before version 52: <class
//!           id> ; <counters of the class> ; <index of the entry counter> ; invokestatic
//!           RUNTIME.arr(III)[J ; astore C; the class id is a constant or, offline,
//!           getstatic CLASS.bci$cid)
//! counter:  aload C ; <index> ; dup2 ; laload ; lconst_1 ; ladd ; lastore
//! exits:    at entry <index> ; istore X, and at the start of blocks where it changes
//! handlers: aload C ; iload X ; dup2 ; laload ; lconst_1 ; ladd ; lastore  (then go on / athrow)
//! ```
//!
//! A block that ends in a call has an exceptional exit ([`crate::flow::EdgeKind::Thrown`])
//! instead of a counter after the call: while it runs, the int local X holds that exit's
//! counter, and every handler of the method (its own, at their start, and a catch-all
//! around the body that re-throws) adds one to the counter X names. So does a block that
//! ends after an instruction that throws implicitly (division, array access, a field access
//! on what may be null, a cast …) where another line or a jump follows it in the original
//! block ([`crate::flow::Cfg::build_method`], with the method's LineNumberTable): the code
//! after an implicit exception counts exactly but for the rest of its line. Elsewhere X is
//! [`LOST`] where an instruction can throw, so an exception there never counts as an earlier
//! block's exit. On the normal path the stores are constants (free once compiled), most of
//! them an `iinc` (consecutive blocks' exits are consecutive counters): no memory is touched
//! after a call, and the count after it is the block's minus its exits.
//!
//! `bci$a` is a method the class gets ([`add_helper`]): for the thread that initialized the
//! class (its `<clinit>` first keeps that thread's array from the runtime's `own(II)[J` in the
//! static final `bci$s`, and the thread, from `owner([J)Object`, in the static final
//! `bci$o`) it bumps the entry counter in `bci$s`, which C1 and C2 fold to a constant; other
//! threads go to `bci$b`, which asks the runtime's `find(I)[J` (class id -> the calling
//! thread's array, or null on the thread's first call into the class) and then `create(II)[J`
//! (class id, counters of the class), and adds one to the entry counter: what `arr` does.
//! The tests are in the class's own bytecode, with branch profiles of their own: C2 compiles
//! a path not taken as an uncommon trap, not as a call at every inlined entry.
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
pub mod inflight;
pub mod lcov;

use crate::flow::{may_throw, Cfg, Counter, Implicit, Plan, Site, Split};
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
    /// A constant, for a new version of a class already loaded with counters (JVMTI
    /// RedefineClasses): the class gets the same fields, `<clinit>` and helpers as with
    /// [`ClassId::Constant`] (a redefinition may not change them), but its `bci$a` always takes
    /// `bci$b`: the static `bci$s` still holds the array the first version's `<clinit>` gave
    /// it (static fields keep their values, and `<clinit>` does not run again), whose counters
    /// are numbered for the first version's code.
    Redefined(i32),
}

/// The most counters a class may have: the runtimes keep a spare array of this length for
/// when a class's own cannot be allocated (out of memory), so counting never throws. A class
/// with more is refused.
pub const MAX_COUNTERS: u32 = 32768;

/// The static final int field holding an offline-instrumented class's id.
pub const CLASS_ID_FIELD: &str = "bci$cid";

/// The static final `long[]` field holding the counter array of the thread that initialized
/// the class (its owner; see [`add_helper`]), or null.
pub const SHARED_FIELD: &str = "bci$s";

/// The static final `Object` field holding the thread whose array [`SHARED_FIELD`] holds (null
/// with no array).
pub const OWNER_FIELD: &str = "bci$o";

/// Knobs of [`instrument`].
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// Internal name of the runtime class that provides `arr(III)[J` (class id, its number of
    /// counters, the entry counter to bump -> the calling thread's counter array of the
    /// class), `find(I)[J` (class id -> the calling thread's array, or null if it has none for
    /// the class yet), `create(II)[J` (class id, its number of counters -> the calling
    /// thread's array, made if needed), `own(II)[J` (the same, for the thread that
    /// initializes the class, or null if it gets none) and `owner([J)Ljava/lang/Object;` (the
    /// calling thread, null for a null array); see [`add_helper`].
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
    /// A HotSpot intrinsic of [`crate::intrinsics`]'s table: C1 and C2 replace its body, and
    /// the interpreter runs some through special entries, so counters in it would miss calls
    /// (`Math.sqrt`: none of 300,000). The analysis names it as not analysed
    /// ([`INTRINSIC_NOTE`]).
    Intrinsic,
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
    /// The int local naming the running block's exceptional-exit counter (see the module's
    /// doc), if the method has one: at a dump, a frame of the method that is inside a call
    /// has not finished its block, and the agent counts the call as that block's exit
    /// ([`exit_counter_at`]).
    pub exit_local: Option<u16>,
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
    /// Methods the counters grew past [`HUGE_METHOD_LIMIT`]: (name, descriptor, code bytes
    /// before, after).
    pub huge: Vec<(String, String, u32, u32)>,
    /// The class carries the marker of `bci instrument` ([`crate::offline::MARKER_ATTR`]):
    /// whether it was instrumented with coverage counters (`--coverage`) or not (probes only,
    /// which cannot be covered now). Such a class is left [`Outcome::Unchanged`].
    pub marked: Option<bool>,
}

/// Why a [`Skipped::Intrinsic`] method is in no count of the report.
pub const INTRINSIC_NOTE: &str = "a HotSpot intrinsic: the JIT or the interpreter may run its \
     own code instead of the bytecode, so counters would miss calls; cpu=times counts the calls \
     at their call sites";

/// HotSpot compiles no method with more bytes of code than this (`HugeMethodLimit`) while
/// `-XX:+DontCompileHugeMethods` (the default) is on: a method the counters grow past it would
/// run interpreted however hot it is.
pub const HUGE_METHOD_LIMIT: u32 = 8000;

/// What to do about methods the counters grew past [`HUGE_METHOD_LIMIT`], said once per
/// method by the CLI and by the agent with `compilehuge=n`.
pub const HUGE_ADVICE: &str = "HotSpot will not JIT-compile it unless the JVM runs with \
     -XX:-DontCompileHugeMethods";

/// The line naming one such method.
pub fn huge_note(class: &str, name: &str, desc: &str, before: u32, after: u32) -> String {
    format!(
        "{class}.{name}{desc}: coverage counters grow its code from {before} to {after} bytes, \
         past HotSpot's {HUGE_METHOD_LIMIT}-byte compile limit: {HUGE_ADVICE}"
    )
}

/// The counter layout [`class_hash`] is tagged with: data recorded with another numbering of
/// the counters (5: the methods of [`crate::intrinsics`]'s table get none; 4: blocks also end, with a counted exit, after instructions that throw
/// implicitly; 3: counter 0 of a class is [`LOST`] and calls have exceptional exits; 2: the
/// entry counter is each method's last; before, its first) has other keys, so it shows as
/// stale instead of being misread.
pub const LAYOUT_TAG: &[u8] = b"\0bci-cov-layout-5";

/// Counter 0 of every class: exceptions thrown where no block's exceptional exit is counted
/// (implicit exceptions in blocks without one, athrow), which a method's handlers add there.
/// Not part of any method's counters; the analysis does not use it.
pub const LOST: u32 = 0;

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
    plan_parsed(&ClassFile::parse(bytes)?, bytes, split)
}

/// [`plan_class`] of `cf`, parsed from `bytes`.
fn plan_parsed(cf: &ClassFile<'_>, bytes: &[u8], split: Split) -> Result<ClassCoverage> {
    let name = cf.name()?.into_owned();
    let mut out = ClassCoverage {
        name,
        hash: class_hash(bytes),
        // counter 0 counts the exceptions no counter is kept for (see [`LOST`])
        counters: 1,
        methods: Vec::new(),
        skipped: Vec::new(),
        huge: Vec::new(),
        marked: None,
    };
    let intrinsics = crate::intrinsics::class_listed(out.name.as_bytes());
    for (k, m) in cf.methods.iter().enumerate() {
        let mname = cf.member_name(m).into_owned();
        let mdesc = cf.member_desc(m).into_owned();
        let why = if m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0 {
            Some(Skipped::NoCode)
        } else if empty_finalize(cf, m, &mname, &mdesc) {
            Some(Skipped::EmptyFinalize)
        } else if intrinsics
            && crate::intrinsics::in_table(out.name.as_bytes(), mname.as_bytes(), mdesc.as_bytes())
        {
            Some(Skipped::Intrinsic)
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
            let code = bci::CodeAttr::parse(cf, a)?;
            let insns = code.decode_all()?;
            // a constructor's calls before super()/this() get no exceptional exit (no
            // handler may cover them); the editor finds those calls (if it cannot, the
            // method cannot be edited either, and the plan does not matter)
            let supers = if mname == "<init>" && m.access & bci::class::ACC_STATIC == 0 {
                MethodEditor::new(cf, k)
                    .and_then(|ed| ed.super_calls().map(<[usize]>::to_vec))
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            // blocks also end after instructions that throw implicitly (with their exits
            // counted), where a line or a jump follows
            let lines = lines_of(&insns, &line_table(cf, &code).unwrap_or_default());
            let throws = implicit_throws(cf, &code, &insns, m.access);
            let implicit = Implicit {
                lines: &lines,
                throws: &throws,
            };
            let cfg = Cfg::build_method(
                code.code,
                &insns,
                &code.handlers,
                split,
                &supers,
                Some(&implicit),
            )?;
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
                    exit_local: None,
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

/// The LineNumberTable of a method's code, in pc order: every LineNumberTable attribute of the
/// Code attribute (JVMS 4.7.12 allows several, in any order; ASM, so JaCoCo, visits them all,
/// in attribute order), concatenated in attribute order; of several entries for one pc, the one
/// later in the tables comes last (it gives the pc its line). The plan splits blocks by it and
/// the analysis reports lines by it. A malformed table is an error.
pub(crate) fn line_table(cf: &ClassFile<'_>, code: &bci::CodeAttr<'_>) -> Result<Vec<(u16, u16)>> {
    let mut table = Vec::new();
    for a in &code.attributes {
        if cf.attr_name(a) == "LineNumberTable" {
            table.extend(bci::attrs::LineNumbers::parse(a.data, 0)?.entries);
        }
    }
    // stable: entries for one pc keep their order
    table.sort_by_key(|&(pc, _)| pc);
    Ok(table)
}

/// The line of each instruction: that of the last entry of `table` ([`line_table`]) at or
/// before its pc (JaCoCo: ASM visits the entries in table order, each setting the current
/// line; scalac writes `line 80: 0` then `line 79: 0`).
pub(crate) fn lines_of(insns: &[bci::Insn], table: &[(u16, u16)]) -> Vec<Option<u32>> {
    insns
        .iter()
        .map(|i| {
            let at = table.partition_point(|&(p, _)| p as u32 <= i.pc);
            (at > 0).then(|| table[at - 1].1 as u32)
        })
        .collect()
}

/// Per instruction: whether it throws implicitly ([`crate::flow::throws_implicitly`]) as far
/// as the plan counts it. Left out, in straight code (facts are dropped at jump targets and
/// handlers), what cannot throw:
///
/// * `getfield`, `putfield`, `arraylength`, `monitorenter`, `monitorexit` of a reference
///   known not to be null: `this` (local 0 of an instance method that never stores it), what
///   `new` or an array creation made, and a local after an instruction dereferenced it (a
///   field or array access, a call on it, `monitorenter`) or `ifnull` fell through on it,
///   until it is stored again;
/// * `checkcast` of a local to the class an `instanceof` of it just tested (the `ifeq` fell
///   through);
/// * array creation of a constant length, and stores and loads at a constant index into an
///   array just created of a constant length (array initializers; javac's static types rule
///   out ArrayStoreException there).
///
/// A mistake here could only lose precision: the exit local stays valid wherever anything
/// can throw ([`may_throw`]).
fn implicit_throws(
    cf: &ClassFile<'_>,
    code: &bci::CodeAttr<'_>,
    insns: &[bci::Insn],
    access: u16,
) -> Vec<bool> {
    /// What a stack slot holds, as far as known.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Val {
        Other,
        /// A reference that is not null.
        NotNull,
        /// The value of a local, loaded since it was last stored.
        Local(u16),
        /// An int constant.
        Int(i32),
        /// A new array of this length.
        Array(i32),
        /// `instanceof` (of this Class constant) of a local.
        InstanceOf(u16, u16),
    }
    let mut out: Vec<bool> = insns
        .iter()
        .map(|i| crate::flow::throws_implicitly(i.opcode))
        .collect();
    if !out.iter().any(|&t| t) {
        return out;
    }
    let this_kept = access & bci::class::ACC_STATIC == 0
        && !insns.iter().any(|i| {
            matches!(
                i.opcode,
                op::ISTORE..=op::ASTORE | op::ISTORE_0..=op::ASTORE_3 | op::IINC
            ) && i.local(code.code) == Some(0)
        });
    // where the stack's contents and the locals' come from elsewhere: jump targets, handlers
    let mut entered = vec![false; insns.len()];
    let index_of = |pc: i64| insns.binary_search_by_key(&pc, |i| i.pc as i64).ok();
    for h in &code.handlers {
        if let Some(k) = index_of(h.handler as i64) {
            entered[k] = true;
        }
    }
    for i in insns {
        i.for_each_target(code.code, |t| {
            if let Some(k) = index_of(t) {
                entered[k] = true;
            }
        });
    }
    // the operand stack, one entry per slot; slots deeper than the vector holds are Other
    let mut stack: Vec<Val> = Vec::new();
    let deep = |stack: &mut Vec<Val>, n: usize| {
        if stack.len() < n {
            let pad = n - stack.len();
            stack.splice(0..0, std::iter::repeat_n(Val::Other, pad));
        }
    };
    // per local: known not null; the class an instanceof found it to be
    let nl = code.max_locals as usize + 2;
    let mut not_null = vec![false; nl];
    let mut is_a: Vec<Option<u16>> = vec![None; nl];
    let known = |v: Val, not_null: &[bool]| match v {
        Val::NotNull | Val::Array(_) => true,
        Val::Local(n) => not_null.get(n as usize).copied().unwrap_or(false),
        _ => false,
    };
    let cp_index = |i: &bci::Insn| i.cp_index(code.code).unwrap_or(0);
    for (k, i) in insns.iter().enumerate() {
        if entered[k] {
            stack.clear();
            not_null.iter_mut().for_each(|x| *x = false);
            is_a.iter_mut().for_each(|x| *x = None);
        }
        let effect = bci::sim::depth_effect(i, code.code, &cf.cp).ok();
        let at = |stack: &Vec<Val>, d: usize| stack[stack.len() - d];
        // the reference the instruction dereferences: its depth on the stack, in slots
        let object = match i.opcode {
            op::GETFIELD | op::ARRAYLENGTH | op::MONITORENTER | op::MONITOREXIT | op::IFNULL => {
                Some(1)
            }
            op::IALOAD..=op::SALOAD => Some(2),
            op::LASTORE | op::DASTORE => Some(4),
            op::IASTORE..=op::SASTORE => Some(3),
            op::PUTFIELD | op::INVOKEVIRTUAL | op::INVOKEINTERFACE | op::INVOKESPECIAL => {
                effect.map(|(p, _)| p as usize)
            }
            _ => None,
        };
        if let Some(d) = object.filter(|&d| d > 0) {
            deep(&mut stack, d);
            let v = at(&stack, d);
            let quiet = match i.opcode {
                op::GETFIELD
                | op::PUTFIELD
                | op::ARRAYLENGTH
                | op::MONITORENTER
                | op::MONITOREXIT => known(v, &not_null),
                // at a constant index of an array just made of a constant length
                op::IALOAD..=op::SALOAD | op::IASTORE..=op::SASTORE => {
                    match (v, at(&stack, d - 1)) {
                        (Val::Array(n), Val::Int(x)) => 0 <= x && x < n,
                        _ => false,
                    }
                }
                _ => false,
            };
            if quiet {
                out[k] = false;
            }
            // past it (it did not throw, or ifnull fell through) the local is not null
            // (invokespecial: a constructor's receiver is not yet initialized, but not null)
            if let Val::Local(n) = v {
                if let Some(x) = not_null.get_mut(n as usize) {
                    *x = true;
                }
            }
        }
        let l = stack.len();
        match i.opcode {
            op::ALOAD_0..=op::ALOAD_3 | op::ALOAD => {
                let n = i.local(code.code).unwrap_or(u16::MAX);
                stack.push(if n == 0 && this_kept {
                    Val::NotNull
                } else {
                    Val::Local(n)
                });
            }
            op::ICONST_M1..=op::ICONST_5 => stack.push(Val::Int(i.opcode as i32 - 3)),
            op::BIPUSH | op::SIPUSH => stack.push(Val::Int(i.immediate(code.code).unwrap_or(-1))),
            op::NEW => stack.push(Val::NotNull),
            op::NEWARRAY | op::ANEWARRAY => {
                deep(&mut stack, 1);
                let v = match stack.pop() {
                    Some(Val::Int(n)) if n >= 0 => {
                        out[k] = false;
                        Val::Array(n)
                    }
                    _ => Val::NotNull,
                };
                stack.push(v);
            }
            op::INSTANCEOF => {
                deep(&mut stack, 1);
                let v = match stack.pop() {
                    Some(Val::Local(n)) => Val::InstanceOf(n, cp_index(i)),
                    _ => Val::Other,
                };
                stack.push(v);
            }
            op::IFEQ => {
                deep(&mut stack, 1);
                if let Some(Val::InstanceOf(n, c)) = stack.pop() {
                    // falls through: the local is an instance of the class (so not null)
                    if let (Some(x), Some(y)) =
                        (not_null.get_mut(n as usize), is_a.get_mut(n as usize))
                    {
                        *x = true;
                        *y = Some(c);
                    }
                }
            }
            op::CHECKCAST => {
                // the same reference, known to be of the class if the cast returns
                deep(&mut stack, 1);
                if let Val::Local(n) = at(&stack, 1) {
                    if let Some(y) = is_a.get_mut(n as usize) {
                        if *y == Some(cp_index(i)) {
                            out[k] = false;
                        }
                        *y = Some(cp_index(i));
                    }
                }
            }
            op::ISTORE..=op::ASTORE | op::ISTORE_0..=op::ASTORE_3 => {
                let n = i.local(code.code).unwrap_or(u16::MAX);
                let size = i.local_size() as usize;
                deep(&mut stack, size);
                let v = at(&stack, 1);
                stack.truncate(stack.len() - size);
                let set = matches!(i.opcode, op::ASTORE | op::ASTORE_0..=op::ASTORE_3)
                    && known(v, &not_null);
                for slot in n as usize..n as usize + size {
                    if let (Some(x), Some(y)) = (not_null.get_mut(slot), is_a.get_mut(slot)) {
                        *x = false;
                        *y = None;
                    }
                    // what was loaded from it before is no longer what it holds
                    for s in stack.iter_mut() {
                        if matches!(*s, Val::Local(m) | Val::InstanceOf(m, _) if m as usize == slot)
                        {
                            *s = Val::Other;
                        }
                    }
                }
                if set {
                    if let Some(x) = not_null.get_mut(n as usize) {
                        *x = true;
                    }
                }
            }
            op::DUP => {
                deep(&mut stack, 1);
                stack.push(at(&stack, 1));
            }
            op::DUP_X1 | op::DUP_X2 | op::DUP2 | op::DUP2_X1 | op::DUP2_X2 | op::SWAP => {
                // the top one or two slots, copied (or swapped) under the next one or two
                let (top, under) = match i.opcode {
                    op::DUP_X1 => (1, 1),
                    op::DUP_X2 => (1, 2),
                    op::DUP2 => (2, 0),
                    op::DUP2_X1 => (2, 1),
                    op::DUP2_X2 => (2, 2),
                    _ => (1, 1),
                };
                deep(&mut stack, top + under);
                let l = stack.len();
                let t: Vec<Val> = stack[l - top..].to_vec();
                if i.opcode == op::SWAP {
                    stack.swap(l - 1, l - 2);
                } else {
                    stack.splice(l - top - under..l - top - under, t);
                }
            }
            _ => match effect {
                Some((p, q)) => {
                    stack.truncate(l.saturating_sub(p as usize));
                    stack.extend(std::iter::repeat_n(Val::Other, q as usize));
                }
                None => stack.clear(),
            },
        }
        if matches!(
            i.flow(),
            bci::opcodes::Flow::Goto
                | bci::opcodes::Flow::Return
                | bci::opcodes::Flow::Throw
                | bci::opcodes::Flow::Switch
        ) {
            stack.clear();
        }
    }
    out
}

/// Instruments every method of a class with its counters. Returns the rewritten class (or
/// `Unchanged` for a module descriptor or a class without code) and its plan; a method that
/// cannot be edited is left original and listed in `skipped`, its counters unused.
pub fn instrument(bytes: &[u8], opts: &Options<'_>) -> Result<(Outcome, ClassCoverage)> {
    let cf = ClassFile::parse(bytes)?;
    let mut cov = plan_parsed(&cf, bytes, opts.split)?;
    if cov
        .skipped
        .iter()
        .any(|(_, _, why)| matches!(why, Skipped::Error(_)))
    {
        // a method without a plan: if its code is invalid (the editor's checks), the class is
        // left original, as in every other mode (the JVM must reject it as it did)
        for (k, m) in cf.methods.iter().enumerate() {
            if m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0
                || cov.methods.iter().any(|c| c.index == k)
            {
                continue;
            }
            if let Err(e) = MethodEditor::new(&cf, k) {
                if e.is_invalid_input() {
                    return Err(e);
                }
            }
        }
    }
    if cf.access & ACC_MODULE != 0 || cov.methods.is_empty() {
        return Ok((Outcome::Unchanged, cov));
    }
    if let Some(m) = crate::offline::marker_of(&cf) {
        // ours already: counting twice would double every count
        cov.marked = Some(m.coverage);
        return Ok((Outcome::Unchanged, cov));
    }
    if let Some(e) = crate::own_name_taken(&cf) {
        return Err(e);
    }
    if cov.counters > MAX_COUNTERS {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!(
                "needs {} coverage counters, more than a class may have ({MAX_COUNTERS})",
                cov.counters
            ),
        ));
    }
    let mut w = ClassWriter::new(&cf);
    let mut kept = Vec::with_capacity(cov.methods.len());
    let counters = cov.counters;
    let name = cov.name.clone();
    // interfaces of class files before version 52 have no static methods, and annotation
    // types none with parameters: no helper, and the class's methods ask the runtime's
    // arr(III)[J
    let helper = has_helper(&cf);
    let mut first = Snippet::new();
    if let ClassId::Registered { module_reads } = opts.class_id {
        if module_reads {
            if cf.major < 49 {
                return Err(Error::new(
                    ErrorKind::Edit,
                    format!(
                        "{name}: a read edge needs class file version 49 or later (ldc of a class)"
                    ),
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
    }
    if helper {
        push_class_id(&mut first, &mut w.cp, &name, opts.class_id)?;
        first
            .int(&mut w.cp, counters as i32)?
            .invokestatic(&mut w.cp, opts.runtime, "own", "(II)[J")?
            .op(op::DUP)?
            .putstatic(&mut w.cp, &name, SHARED_FIELD, "[J")?
            .invokestatic(&mut w.cp, opts.runtime, "owner", "([J)Ljava/lang/Object;")?
            .putstatic(&mut w.cp, &name, OWNER_FIELD, "Ljava/lang/Object;")?;
    }
    const REGISTERED: &[(&str, &str)] = &[
        (CLASS_ID_FIELD, "I"),
        (SHARED_FIELD, "[J"),
        (OWNER_FIELD, "Ljava/lang/Object;"),
    ];
    let fields: &'static [(&'static str, &'static str)] = match (opts.class_id, helper) {
        (ClassId::Registered { .. }, true) => REGISTERED,
        (ClassId::Registered { .. }, false) => &REGISTERED[..1],
        (ClassId::Constant(_) | ClassId::Redefined(_), true) => &REGISTERED[1..],
        (ClassId::Constant(_) | ClassId::Redefined(_), false) => &[],
    };
    // bytes made from the loaded class by reflection may declare its fields already (Byte
    // Buddy's class reloading): the code stores into those, and the class gets no second copy
    let add: &'static [(&'static str, &'static str)] = if declares_fields(&cf, fields) {
        &[]
    } else {
        fields
    };
    let prologue = if fields.is_empty() {
        None
    } else {
        Some(crate::offline::Prologue::new(
            &cf, &mut w.cp, &name, first, add,
        )?)
    };
    let helper = if helper {
        Some(add_helper(
            &mut w,
            &cf,
            &cov.name,
            opts.class_id,
            counters,
            opts.runtime,
            cov.hash,
        )?)
    } else {
        None
    };
    let mut done_clinit = false;
    for mut m in std::mem::take(&mut cov.methods) {
        let mut grown = None;
        let mut exit_local = None;
        let is_clinit = m.name == "<clinit>" && m.desc == "()V";
        let body = (|| -> Result<Vec<u8>> {
            let mut ed = MethodEditor::new(&cf, m.index)?;
            if let (true, Some(p)) = (is_clinit, &prologue) {
                ed.insert_entry(&p.code)?;
            }
            exit_local = emit(&mut ed, &mut w.cp, &m, &cov.name, counters, opts, helper)?;
            let before = ed.code().code.len() as u32;
            let body = ed.finish(&mut w.cp)?;
            // the Code attribute's body: max_stack, max_locals, code_length, code...
            let after = body
                .get(4..8)
                .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            grown = (before <= HUGE_METHOD_LIMIT && after > HUGE_METHOD_LIMIT)
                .then_some((before, after));
            Ok(body)
        })();
        let body = match (body, is_clinit, &prologue) {
            // invalid code: the class is left original (the JVM must reject it as it did)
            (Err(e), _, _) if e.is_invalid_input() => {
                return Err(if e.path().is_empty() {
                    e.context(format!("{}.{}{}", cov.name, m.name, m.desc))
                } else {
                    e
                });
            }
            // <clinit> that cannot take its counters still registers the class
            (Err(e), true, Some(p)) => {
                prologue_only(&mut w, p, m.index)?;
                done_clinit = true;
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
            Ok(()) => {
                if let Some((before, after)) = grown {
                    cov.huge
                        .push((m.name.clone(), m.desc.clone(), before, after));
                }
                m.exit_local = exit_local;
                kept.push(m)
            }
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
    if matches!(opts.class_id, ClassId::Constant(_) | ClassId::Redefined(_))
        && cov.methods.is_empty()
    {
        return Ok((Outcome::Unchanged, cov));
    }
    let lines = original_lines_data(&cf, &mut w.cp, &cov.methods)?;
    if !lines.is_empty() {
        w.add_attribute(ORIGINAL_LINES_ATTR, &lines)?;
    }
    if let Some(p) = &prologue {
        if p.has_clinit && !done_clinit {
            // a <clinit> without counters (its plan failed) still runs the prologue
            if let Some(k) = cf.method_index("<clinit>", Some("()V")) {
                prologue_only(&mut w, p, k)?;
                done_clinit = true;
            }
        }
        p.finish(&mut w, done_clinit)
            .map_err(|e| e.context(cov.name.clone()))?;
    }
    if let ClassId::Registered { .. } = opts.class_id {
        // with a class id in <clinit>, even a class whose methods all failed registers (its
        // counters are all zero: not run, rather than unknown)
        let methods: Vec<(String, String)> = cov
            .methods
            .iter()
            .map(|m| (m.name.clone(), m.desc.clone()))
            .collect();
        let data = crate::offline::marker_data(&mut w.cp, cov.hash, true, true, &methods)?;
        w.add_attribute(crate::offline::MARKER_ATTR, &data)?;
    }
    Ok((Outcome::Rewritten(w.finish()?), cov))
}

/// Class attribute coverage adds: the original LineNumberTable of each method it gave counters,
/// so a later pass (tracing, in the agent or on an offline-instrumented class) can name a
/// line's pc in the original class file rather than in the instrumented code. Layout: u2
/// method count, then per method u2 name index, u2 descriptor index, u2 entry count and that
/// many (u2 start_pc, u2 line_number). Entries are those of the original code, in the order of
/// its tables; the instrumented code keeps one entry per original entry, in the same order
/// of pc.
pub const ORIGINAL_LINES_ATTR: &str = "BciOriginalLines";

fn original_lines_data(
    cf: &ClassFile<'_>,
    cp: &mut bci::CpBuilder<'_>,
    methods: &[MethodCoverage],
) -> Result<Vec<u8>> {
    let mut n = 0u16;
    let mut body = Vec::new();
    for m in methods {
        let mem = &cf.methods[m.index];
        let Some((_, a)) = cf.find_attr(&mem.attributes, "Code") else {
            continue;
        };
        let code = bci::CodeAttr::parse(cf, a)?;
        let mut entries = Vec::new();
        for a in &code.attributes {
            if cf.attr_name(a) == "LineNumberTable" {
                if let Ok(t) = bci::attrs::LineNumbers::parse(a.data, a.offset) {
                    entries.extend(t.entries);
                }
            }
        }
        if entries.is_empty() || entries.len() > u16::MAX as usize || n == u16::MAX {
            continue;
        }
        body.extend_from_slice(&cp.utf8(&m.name)?.to_be_bytes());
        body.extend_from_slice(&cp.utf8(&m.desc)?.to_be_bytes());
        body.extend_from_slice(&(entries.len() as u16).to_be_bytes());
        for (pc, line) in entries {
            body.extend_from_slice(&pc.to_be_bytes());
            body.extend_from_slice(&line.to_be_bytes());
        }
        n += 1;
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut out = n.to_be_bytes().to_vec();
    out.extend(body);
    Ok(out)
}

/// The original line table of method `name``desc` that [`ORIGINAL_LINES_ATTR`] records, if the
/// class has one for it.
pub fn original_lines(cf: &ClassFile<'_>, name: &str, desc: &str) -> Option<Vec<(u16, u16)>> {
    let a = cf
        .attributes
        .iter()
        .find(|a| cf.attr_name(a) == ORIGINAL_LINES_ATTR)?;
    let d = a.data;
    let u16_at = |i: usize| Some(u16::from_be_bytes([*d.get(i)?, *d.get(i + 1)?]));
    let n = u16_at(0)?;
    let mut at = 2;
    for _ in 0..n {
        let mn = cf.cp.utf8(u16_at(at)?).ok()?;
        let md = cf.cp.utf8(u16_at(at + 2)?).ok()?;
        let k = u16_at(at + 4)? as usize;
        at += 6;
        if mn == name && md == desc {
            return (0..k)
                .map(|j| Some((u16_at(at + 4 * j)?, u16_at(at + 4 * j + 2)?)))
                .collect();
        }
        at += 4 * k;
    }
    None
}

/// `<clinit>` (method `k` of the class `w` writes) with the prologue `p` alone, no counters.
fn prologue_only(
    w: &mut ClassWriter<'_, '_>,
    p: &crate::offline::Prologue,
    k: usize,
) -> Result<()> {
    let cf = w.class();
    MethodEditor::new(cf, k)
        .and_then(|mut ed| {
            ed.insert_entry(&p.code)?;
            ed.finish(&mut w.cp)
        })
        .and_then(|b| w.set_code(k, b))
        .map_err(|e| {
            let name = cf.name().map(|n| n.into_owned()).unwrap_or_default();
            e.context(format!("{name}.<clinit>"))
        })
}

/// Inserts one method's counters.
fn emit(
    ed: &mut MethodEditor<'_, '_>,
    cp: &mut bci::CpBuilder<'_>,
    m: &MethodCoverage,
    class: &str,
    class_counters: u32,
    opts: &Options<'_>,
    helper: Option<Helper>,
) -> Result<Option<u16>> {
    let mut entry = Snippet::new();
    // the entry counter is the method's last (Plan::new); arr bumps it
    let last = m.plan.counters.len() - 1;
    if m.plan.counters.last() != Some(&Counter::Entry) {
        return Err(Error::new(
            ErrorKind::Edit,
            "the plan's last counter is not the entry counter",
        ));
    }
    let e = (m.first + last as u32) as i32;
    if let Some(h) = helper {
        entry.int(cp, e)?;
        entry.invokestatic_ref(h.lookup, HELPER_DESC)?;
    } else {
        push_class_id(&mut entry, cp, class, opts.class_id)?;
        entry.int(cp, class_counters as i32)?;
        entry.int(cp, e)?;
        entry.invokestatic(cp, opts.runtime, "arr", "(III)[J")?;
    }
    if m.plan.counters.len() == 1 {
        // the entry counter alone (no branch, no call): no local for the array
        entry.op(op::POP)?;
        return ed.insert_entry(&entry).map(|()| None);
    }
    let array = match helper {
        Some(h) => h.array,
        None => cp.class("[J")?,
    };
    let local = ed.new_local(VType::Object(array))?;
    entry.store('A', local)?;
    // Exceptional exits of blocks that end in a call or may throw implicitly: the block keeps
    // its counter's number in an int local, and every handler (the method's own, at their start, and a catch-all
    // that re-throws) adds one to the counter the local names.
    let thrown: Vec<(u32, u32)> = (0..last)
        .filter_map(|i| match m.plan.site(&m.cfg, i) {
            Some(Site::Thrown(b)) => Some((b, m.first + i as u32)),
            _ => None,
        })
        .collect();
    let mut stores = Vec::new();
    let mut exit_local = None;
    if !thrown.is_empty() {
        let exit = ed.new_local(VType::Integer)?;
        exit_local = Some(exit);
        let mut bump = Snippet::new();
        bump.load('A', local)?
            .load('I', exit)?
            .op(op::DUP2)?
            .op(op::LALOAD)?
            .op(op::LCONST_1)?
            .op(op::LADD)?
            .op(op::LASTORE)?;
        for blk in m.cfg.blocks.iter().filter(|b| b.handler) {
            ed.insert_before(insn(&m.cfg, blk.first)?, &bump)?;
        }
        ed.add_catch_all(&bump)?;
        let lp = exit_stores(&m.cfg, ed.insns(), &thrown);
        entry.int(cp, lp.init as i32)?.store('I', exit)?;
        for (at, v, before) in lp.stores {
            let mut s = Snippet::new();
            // from a value known on every path in, `iinc` (3 bytes, one bytecode) where the
            // constant and the store would take more: consecutive calls' exits are numbered
            // consecutively
            let delta = before.map(|b| v as i64 - b as i64);
            match delta.and_then(|d| i8::try_from(d).ok()) {
                Some(d) if exit < 256 && store_len(v, exit) > 3 => s.iinc(exit, d as i16),
                _ => s.int(cp, v as i32)?.store('I', exit)?,
            };
            stores.push((at, s));
        }
    }
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
            // counted by the handlers (above)
            Some(Site::Thrown(_)) => {}
            None => unreachable!("counter {i} is in the plan"),
        }
    }
    // after the counters: at a handler's start the local is read before it is set
    for (at, s) in stores {
        match at {
            Site::After(k) => ed.insert_after(insn(&m.cfg, k)?, &s)?,
            _ => ed.insert_before(insn(&m.cfg, at_insn(at))?, &s)?,
        }
    }
    ed.insert_entry(&entry).map(|()| exit_local)
}

/// The class's own lookup method (see [`add_helper`]).
pub const HELPER: &str = "bci$a";
/// Its slow half (see [`add_helper`]).
pub const SLOW_HELPER: &str = "bci$b";
const HELPER_DESC: &str = "(I)[J";
/// Offline: the class id for the slow half, registering the class if its `<clinit>` has not
/// (see [`add_id_helper`]).
pub const ID_HELPER: &str = "bci$c";
const ID_HELPER_DESC: &str = "()I";

/// Whether a method is one that coverage added: the helpers of [`add_helper`], or a
/// `<clinit>` made for the owner prologue (marked synthetic). The agent applies cpu=times and
/// tracing after coverage: they leave them alone, so a profile shows the program's methods
/// only.
pub fn is_helper(m: &bci::Member<'_>, name: &str, desc: &str) -> bool {
    m.access & bci::class::ACC_SYNTHETIC != 0
        && (((name == HELPER || name == SLOW_HELPER) && desc == HELPER_DESC)
            || (name == ID_HELPER && desc == ID_HELPER_DESC)
            || (name == "<clinit>" && desc == "()V"))
}

/// Whether the class declares coverage's `fields` (name, descriptor) already, exactly as
/// instrumenting adds them (static final synthetic, private, public in an interface), and
/// none of its other fields and helper methods: bytes made from a covered class as loaded,
/// whose fields reflection shows but whose helpers and added `<clinit>` it does not (Byte
/// Buddy's `redefine(Foo.class)` and class reloading copy `bci$s` and `bci$o`). Such bytes are
/// instrumented with those fields instead of new ones, so a redefinition with them keeps the
/// members of the loaded class (before, adding the fields again failed, "field bci$s [J
/// exists already", the bytes were passed on without the helpers and the JVM refused them,
/// "attempted to delete a method").
fn declares_fields(cf: &ClassFile<'_>, fields: &[(&str, &str)]) -> bool {
    use bci::class::{ACC_FINAL, ACC_INTERFACE, ACC_PRIVATE, ACC_PUBLIC, ACC_STATIC};
    let visibility = if cf.access & ACC_INTERFACE != 0 {
        ACC_PUBLIC
    } else {
        ACC_PRIVATE
    };
    let access = visibility | ACC_STATIC | ACC_FINAL | bci::class::ACC_SYNTHETIC;
    let ours = [CLASS_ID_FIELD, SHARED_FIELD, OWNER_FIELD];
    let declared: Vec<&bci::Member<'_>> = cf
        .fields
        .iter()
        .filter(|f| ours.iter().any(|n| cf.member_name(f) == *n))
        .collect();
    let helpers = [HELPER, SLOW_HELPER, ID_HELPER];
    !fields.is_empty()
        && declared.len() == fields.len()
        && fields.iter().all(|&(n, d)| {
            declared
                .iter()
                .any(|f| cf.member_name(f) == n && cf.member_desc(f) == d && f.access == access)
        })
        && !cf
            .methods
            .iter()
            .any(|m| helpers.iter().any(|n| cf.member_name(m) == *n))
}

/// Whether the class gets the helpers (and the owner fields): not interfaces of class files
/// before version 52, which cannot have static methods, nor annotation types: the JDK takes
/// every method of an annotation type with parameters for a malformed element
/// (`AnnotationInvocationHandler.validateAnnotationMethods` skips only synthetic static or
/// private methods without any), so `bci$a(I)[J` broke `equals` of its annotations with an
/// AnnotationFormatError.
fn has_helper(cf: &ClassFile<'_>) -> bool {
    cf.access & bci::class::ACC_ANNOTATION == 0
        && (cf.access & bci::class::ACC_INTERFACE == 0 || cf.major >= 52)
}

#[derive(Clone, Copy, Debug)]
struct Helper {
    /// The constant of the method `bci$a` (a Methodref, an InterfaceMethodref in interfaces).
    lookup: u16,
    /// The constant of class `[J`.
    array: u16,
}

/// Pushes the class id: a constant or, offline, `getstatic CLASS.bci$cid`.
fn push_class_id(
    s: &mut Snippet,
    cp: &mut bci::CpBuilder<'_>,
    class: &str,
    id: ClassId,
) -> Result<()> {
    match id {
        ClassId::Constant(id) | ClassId::Redefined(id) => s.int(cp, id)?,
        ClassId::Registered { .. } => s.getstatic(cp, class, CLASS_ID_FIELD, "I")?,
    };
    Ok(())
}

/// Adds the class's lookup methods, `private static synthetic long[] bci$a(int e)`:
///
/// ```text
///     getstatic CLASS.bci$s ; ifnull S
///     getstatic CLASS.bci$o ; invokestatic Thread.currentThread ; if_acmpne S
///     getstatic CLASS.bci$s ; dup ; iload_0 ; dup2 ; laload ; lconst_1 ; ladd ; lastore ; areturn
/// S:  iload_0 ; invokestatic CLASS.bci$b(I)[J ; areturn
/// ```
///
/// and its slow half `bci$b(int e)`:
///
/// ```text
///     <id> ; invokestatic RUNTIME.find(I)[J ; dup ; ifnonnull L
///     pop ; <id> ; <counters> ; invokestatic RUNTIME.create(II)[J
/// L:  dup ; iload_0 ; dup2 ; laload ; lconst_1 ; ladd ; lastore ; areturn
/// ```
///
/// (`<id>`: the class id, a constant or, offline, `getstatic CLASS.bci$cid`.)
///
/// Methods call `bci$a` at entry: the calling thread's counter array of the class, after
/// adding one to the method's entry counter `e` in it. `<clinit>` first stores the array of
/// the thread that initializes the class (the runtime's `own(II)[J`, the same array that
/// thread's lookups find) in the static final `bci$s`, and that thread in the static final
/// `bci$o` (the runtime's `owner([J)Object`: null when there is no array). The class's owner, often the only thread that runs it, so reaches its array
/// through two static finals, which C1 and C2 fold to constants (with the array's length:
/// no range checks on the counters), plus one compare with the current thread. Other threads
/// take `bci$b`: `find` returns their array or null on their first call into the class (then
/// `create`). Each test is in the class's own bytecode, with a branch profile of its own: a
/// path no thread took while HotSpot profiled becomes an uncommon trap, not a call at every
/// inlined entry. With no array in `bci$s` (before VMInit under the agent) `bci$a` does not
/// call `Thread.currentThread()`, whose linking runs covered ClassLoader code. Each helper
/// (31 and 28 bytes) and the runtime's `find` stay within
/// HotSpot's `MaxInlineSize` (35 bytes), so C1, which inlines nothing larger, inlines them.
fn add_helper(
    w: &mut ClassWriter<'_, '_>,
    cf: &ClassFile<'_>,
    class: &str,
    id: ClassId,
    counters: u32,
    runtime: &str,
    hash: u64,
) -> Result<Helper> {
    let interface = cf.access & bci::class::ACC_INTERFACE != 0;
    // offline, bci$b asks bci$c for the id: the class's code can run before its <clinit> sets
    // bci$cid (a superclass's <clinit> that makes an instance of it), and id 0 is no class's
    let id_helper = match id {
        ClassId::Registered { module_reads } => Some(add_id_helper(
            w,
            cf,
            class,
            module_reads,
            counters,
            runtime,
            hash,
        )?),
        ClassId::Constant(_) | ClassId::Redefined(_) => None,
    };
    let push_id = |s: &mut Snippet, cp: &mut bci::CpBuilder<'_>| -> Result<()> {
        match id_helper {
            Some(m) => {
                s.invokestatic_ref(m, ID_HELPER_DESC)?;
                Ok(())
            }
            None => push_class_id(s, cp, class, id),
        }
    };
    let mut bump = Snippet::new();
    bump.op(op::DUP)?
        .load('I', 0)?
        .op(op::DUP2)?
        .op(op::LALOAD)?
        .op(op::LCONST_1)?
        .op(op::LADD)?
        .op(op::LASTORE)?;
    // bci$b: find, create on a miss, bump
    let mut head = Snippet::new();
    push_id(&mut head, &mut w.cp)?;
    head.invokestatic(&mut w.cp, runtime, "find", "(I)[J")?
        .op(op::DUP)?;
    let mut slow = Snippet::new();
    slow.op(op::POP)?;
    push_id(&mut slow, &mut w.cp)?;
    slow.int(&mut w.cp, counters as i32)?
        .invokestatic(&mut w.cp, runtime, "create", "(II)[J")?;
    let l = head.len() + 3 + slow.len(); // ifnonnull (3 bytes), then the slow path
    let mut code = Vec::with_capacity(l + bump.len() + 1);
    code.extend_from_slice(head.bytes());
    code.push(op::IFNONNULL);
    code.extend_from_slice(&((l - head.len()) as i16).to_be_bytes());
    code.extend_from_slice(slow.bytes());
    code.extend_from_slice(bump.bytes());
    code.push(op::ARETURN);
    let arr = w.cp.class("[J")?;
    let frame = bci::Frame {
        offset: l as u32,
        locals: vec![VType::Integer],
        stack: vec![VType::Object(arr)],
    };
    add_lookup(w, cf, SLOW_HELPER, &code, frame)
        .map_err(|e| helper_context(e, class, SLOW_HELPER, HELPER_DESC))?;
    // bci$a: the owner's array, or bci$b. No bci$s, no owner: Thread.currentThread() is not
    // called then (before VMInit the agent's runtime gives none, and the native may not be
    // linked yet: linking it runs covered ClassLoader code, which would come back here).
    let fast: Vec<u8> = if let ClassId::Redefined(_) = id {
        // not this version's array: always bci$b (the owner's path below is dead code)
        vec![op::ACONST_NULL]
    } else {
        let mut f = Snippet::new();
        f.getstatic(&mut w.cp, class, SHARED_FIELD, "[J")?;
        f.bytes().to_vec()
    };
    let mut check = Snippet::new();
    check
        .getstatic(&mut w.cp, class, OWNER_FIELD, "Ljava/lang/Object;")?
        .invokestatic(
            &mut w.cp,
            "java/lang/Thread",
            "currentThread",
            "()Ljava/lang/Thread;",
        )?;
    let mut owned = Snippet::new();
    owned.getstatic(&mut w.cp, class, SHARED_FIELD, "[J")?;
    owned.append(&bump);
    let other = if interface {
        w.cp.interface_methodref(class, SLOW_HELPER, HELPER_DESC)?
    } else {
        w.cp.methodref(class, SLOW_HELPER, HELPER_DESC)?
    };
    let mut miss = Snippet::new();
    miss.load('I', 0)?.invokestatic_ref(other, HELPER_DESC)?;
    // ifnull and if_acmpne: 3 bytes each; the owner's path ends in areturn
    let at_check = fast.len() + 3;
    let s = at_check + check.len() + 3 + owned.len() + 1;
    let mut code = Vec::with_capacity(s + miss.len() + 1);
    code.extend_from_slice(&fast);
    code.push(op::IFNULL);
    code.extend_from_slice(&((s - fast.len()) as i16).to_be_bytes());
    code.extend_from_slice(check.bytes());
    code.push(op::IF_ACMPNE);
    code.extend_from_slice(&((s - at_check - check.len()) as i16).to_be_bytes());
    code.extend_from_slice(owned.bytes());
    code.push(op::ARETURN);
    code.extend_from_slice(miss.bytes());
    code.push(op::ARETURN);
    let frame = bci::Frame {
        offset: s as u32,
        locals: vec![VType::Integer],
        stack: vec![],
    };
    add_lookup(w, cf, HELPER, &code, frame)
        .map_err(|e| helper_context(e, class, HELPER, HELPER_DESC))?;
    let lookup = if interface {
        w.cp.interface_methodref(class, HELPER, HELPER_DESC)?
    } else {
        w.cp.methodref(class, HELPER, HELPER_DESC)?
    };
    Ok(Helper { lookup, array: arr })
}

/// Offline (`ClassId::Registered`): adds `private static synthetic int bci$c()`, the class
/// id, registering the class if its `<clinit>` has not yet (the runtimes give the same id to
/// the same class and hash):
///
/// ```text
///     getstatic CLASS.bci$cid ; dup ; ifne L
///     pop ; [read edge] ; ldc NAME ; ldc2_w HASH ; <counters> ; invokestatic RUNTIME.register
/// L:  ireturn
/// ```
///
/// A class's code can run before its `<clinit>` has set `bci$cid`: a superclass's `<clinit>`
/// that makes an instance of it (the JVM initializes the superclass first, and the
/// initializing thread's own requests for the class go through). The slow half of the lookup
/// then asked the runtime for class 0's array (another class's: counts lost or given to it,
/// or an ArrayIndexOutOfBoundsException; jython.jar did not start). The owner's path needs
/// no id. Returns the Methodref (InterfaceMethodref in interfaces).
fn add_id_helper(
    w: &mut ClassWriter<'_, '_>,
    cf: &ClassFile<'_>,
    class: &str,
    module_reads: bool,
    counters: u32,
    runtime: &str,
    hash: u64,
) -> Result<u16> {
    let mut reg = Snippet::new();
    if module_reads {
        reg.append(&crate::offline::read_edge(&mut w.cp, class, runtime)?);
    }
    reg.string(&mut w.cp, class)?
        .long(&mut w.cp, hash as i64)?
        .int(&mut w.cp, counters as i32)?
        .invokestatic(&mut w.cp, runtime, "register", "(Ljava/lang/String;JI)I")?;
    crate::offline::add_lazy_id(w, cf, class, ID_HELPER, CLASS_ID_FIELD, &reg)
        .map_err(|e| helper_context(e, class, ID_HELPER, ID_HELPER_DESC))
}

/// The context of an error adding helper `name desc` to `class`: the helper, but for a full
/// constant pool or method table, which is the class's limit (the helper exists only in the
/// rewrite, and its name means nothing to a user).
fn helper_context(e: Error, class: &str, name: &str, desc: &str) -> Error {
    if e.kind() == ErrorKind::TooLarge && e.message() == "too many methods" {
        Error::new(
            ErrorKind::TooLarge,
            "too many methods: no room for the coverage helper methods (a class may have \
             65535 methods)",
        )
    } else if e.kind() == ErrorKind::TooLarge && e.message().starts_with("constant pool") {
        e.context(class.to_string())
    } else {
        e.context(format!("{class}.{name}{desc}"))
    }
}

/// Adds `private static synthetic long[] NAME(int)` with `code` and its one branch target's
/// `frame` (class files of version 50 and later).
fn add_lookup(
    w: &mut ClassWriter<'_, '_>,
    cf: &ClassFile<'_>,
    name: &str,
    code: &[u8],
    frame: bci::Frame,
) -> Result<()> {
    // max_stack: a, a, e, a, e, and the long; max_locals: e
    let body = crate::offline::one_frame_body(w, cf, 7, 1, code, frame, &[VType::Integer])?;
    use bci::class::{ACC_PRIVATE, ACC_STATIC, ACC_SYNTHETIC};
    w.add_method(
        ACC_PRIVATE | ACC_STATIC | ACC_SYNTHETIC,
        name,
        HELPER_DESC,
        &body,
    )
}

fn at_insn(s: Site) -> u32 {
    match s {
        Site::Before(k) | Site::After(k) => k,
        _ => 0,
    }
}

/// Where the local naming the running block's exceptional-exit counter is set.
struct ExitStores {
    /// Its value at method entry.
    init: u32,
    /// `Before(k)` / `After(k)` of instruction `k`: the value stored there, and the value the
    /// local holds there on every path that reaches it, if that is known.
    stores: Vec<(Site, u32, Option<u32>)>,
}

/// Bytes of `<push v>; istore local` (v a counter number: at most 65535 of them per class).
fn store_len(v: u32, local: u16) -> usize {
    let push = match v {
        0..=5 => 1,
        6..=127 => 2,
        128..=32767 => 3,
        _ => 2, // ldc
    };
    let store = match local {
        0..=3 => 1,
        4..=255 => 2,
        _ => 4,
    };
    push + store
}

/// The local must name the block's counter wherever an instruction of a block with a counted
/// exit (`thrown`: block, counter; blocks that end in a call or fall through after an
/// instruction that throws implicitly) can throw, and [`LOST`] wherever another instruction
/// can throw (otherwise an exception there would count as the exit of an earlier block, and
/// code that ran could show as missed). Stores go at block starts, only where the
/// value coming in (forward data flow over the blocks) differs; a block that falls or jumps
/// into a handler's start leaves [`LOST`] (the handler's count runs on such arrivals too).
fn exit_stores(cfg: &Cfg, insns: &[bci::Insn], thrown: &[(u32, u32)]) -> ExitStores {
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum V {
        Unseen,
        Known(u32),
        Any,
    }
    let join = |a: V, b: V| match (a, b) {
        (V::Unseen, x) | (x, V::Unseen) => x,
        (V::Known(x), V::Known(y)) if x == y => a,
        _ => V::Any,
    };
    let nb = cfg.blocks.len();
    let mut need: Vec<Option<u32>> = cfg
        .blocks
        .iter()
        .map(|b| {
            insns[b.first as usize..b.end as usize]
                .iter()
                .any(|i| may_throw(i.opcode))
                .then_some(LOST)
        })
        .collect();
    // blocks with an exit end in a call or an instruction that falls through
    let mut has_exit = vec![false; nb];
    for &(b, c) in thrown {
        need[b as usize] = Some(c);
        has_exit[b as usize] = true;
    }
    // calls without a counted exit (a constructor's before super()) need LOST like any
    // instruction that can throw: need[b] stays so
    // blocks entering a handler's start by a normal edge leave LOST
    let mut reset_after = vec![false; nb];
    for (b, outs) in cfg.out.iter().enumerate() {
        let into_handler = outs.iter().any(|&e| {
            cfg.edges[e as usize]
                .to
                .is_some_and(|t| cfg.blocks[t as usize].handler)
        });
        if into_handler {
            if has_exit[b] {
                reset_after[b] = true;
            } else {
                need[b] = Some(LOST);
            }
        }
    }
    let init = need[0].unwrap_or(LOST);
    let out_of = |b: usize, vin: V| -> V {
        if reset_after[b] {
            V::Known(LOST)
        } else {
            match need[b] {
                Some(v) => V::Known(v),
                None => vin,
            }
        }
    };
    let mut vin = vec![V::Unseen; nb];
    let mut changed = true;
    while changed {
        changed = false;
        for b in 0..nb {
            let mut v = if b == 0 { V::Known(init) } else { V::Unseen };
            if cfg.blocks[b].handler {
                v = V::Any;
            }
            for &e in &cfg.ins[b] {
                let from = cfg.edges[e as usize].from as usize;
                v = join(v, out_of(from, vin[from]));
            }
            if v != vin[b] {
                vin[b] = v;
                changed = true;
            }
        }
    }
    let mut stores = Vec::new();
    for b in 0..nb {
        if let Some(v) = need[b] {
            if vin[b] != V::Known(v) {
                let before = match vin[b] {
                    V::Known(x) => Some(x),
                    _ => None,
                };
                stores.push((Site::Before(cfg.blocks[b].first), v, before));
            }
        }
        if reset_after[b] {
            stores.push((Site::After(cfg.blocks[b].end - 1), LOST, need[b]));
        }
    }
    ExitStores { init, stores }
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

/// One class's counters split into per-test windows ([`split_windows`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Windows {
    /// Per test, in the order given: its counts (`None` where the test has none of the class).
    pub tests: Vec<Option<Vec<u64>>>,
    /// What counted outside every test.
    pub outside: Vec<u64>,
    /// The methods (indices into the plan's `methods`) whose counts are not split: outside,
    /// whole.
    pub whole_outside: Vec<usize>,
}

/// Splits a class's counters (`total`, the whole run's) into the windows of its tests (each
/// test's counts, `None` for a test without the class) and outside every test (the rest).
/// Block, line and branch counts are derived from counters by flow conservation, which holds
/// only for whole calls: a method whose counters in some window break it ([`Plan::consistent`]:
/// a call under way when a test began or ended, a `main` that brackets its own tests) is not
/// split at all: every test gets zero for it and the outside window its whole-run counters.
/// So for every method the windows' counters add up to the whole run's, and each window's
/// derivation is of whole calls (with a whole run whose own counters break conservation, a
/// thread still running when they were written, the outside window is checked no further).
pub fn split_windows(plan: &ClassCoverage, total: &[u64], tests: &[Option<&[u64]>]) -> Windows {
    let mut tests: Vec<Option<Vec<u64>>> = tests.iter().map(|t| t.map(<[u64]>::to_vec)).collect();
    let mut outside = total.to_vec();
    for t in tests.iter().flatten() {
        for (o, x) in outside.iter_mut().zip(t) {
            *o = o.saturating_sub(*x);
        }
    }
    let mut whole_outside = Vec::new();
    for (k, m) in plan.methods.iter().enumerate() {
        let consistent = |v: &[u64]| {
            let v = method_counts(m, v);
            v.iter().all(|&c| c == 0) || m.plan.consistent(&m.cfg, v)
        };
        if tests.iter().flatten().all(|t| consistent(t))
            && (consistent(&outside) || !consistent(total))
        {
            continue;
        }
        let a = (m.first as usize).min(total.len());
        let b = (m.first as usize + m.plan.counters.len()).min(total.len());
        for t in tests.iter_mut().flatten() {
            let (a, b) = (a.min(t.len()), b.min(t.len()));
            t[a..b].fill(0);
        }
        outside[a..b].copy_from_slice(&total[a..b]);
        whole_outside.push(k);
    }
    Windows {
        tests,
        outside,
        whole_outside,
    }
}

/// The counter that counts entries (the method's last: the lookup bumps it, see instrument).
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
