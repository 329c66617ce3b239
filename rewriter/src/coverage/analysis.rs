//! From a class's original bytes and its counter values to coverage: JaCoCo's counters
//! (INSTRUCTION, BRANCH, LINE, COMPLEXITY, METHOD, CLASS, with JaCoCo's definitions) plus what
//! JaCoCo cannot give: hit counts per line, per branch outcome and per method.
//!
//! * An instruction ran as often as its block ([`flow::Plan::solve`]).
//! * A line's `hits` is how often its first instruction (lowest pc on that line) ran; `max_hits`
//!   the most any of its instructions ran (a loop condition on the line of its `for`).
//! * Branches are the outcomes of `if*` (2) and switches (one per distinct target), each with
//!   its count; a line is PARTLY covered when one of its branches was never taken.
//! * Filters (JaCoCo's): synthetic classes (an enum switch's `$SwitchMap$` holder), synthetic
//!   methods except lambda bodies, bridge methods, an enum's `values()`/`valueOf(String)` and
//!   empty constructor, private empty no-argument constructors, a record's generated
//!   `toString`/`hashCode`/`equals` and field accessors, methods and classes annotated with an
//!   annotation whose name contains `Generated`; inside methods ([`filters`]): string-switch
//!   dispatch, try-with-resources, `finally` copies (merged: hits summed), `assert`, an
//!   exhaustive switch's generated default, a branch on a constant. Filtered code is neither
//!   covered nor missed, and its branches are not in [`Method::branches`] (so LCOV agrees with
//!   the counters).

mod filters;

use super::{plan_class, ClassCoverage, MethodCoverage, Options, Skipped};
use crate::flow::{EdgeKind, Split};
use bci::class::ClassFile;
use bci::{Error, Result};
use std::collections::BTreeMap;

const ACC_PRIVATE: u16 = 0x0002;
const ACC_STATIC: u16 = 0x0008;
const ACC_BRIDGE: u16 = 0x0040;
const ACC_SYNTHETIC: u16 = 0x1000;
const ACC_ENUM: u16 = 0x4000;

/// JaCoCo's counter: items missed and covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    pub missed: u64,
    pub covered: u64,
}

impl Counter {
    pub fn add(&mut self, o: Counter) {
        self.missed += o.missed;
        self.covered += o.covered;
    }
    pub fn total(&self) -> u64 {
        self.missed + self.covered
    }
    fn one(covered: bool) -> Counter {
        Counter {
            missed: !covered as u64,
            covered: covered as u64,
        }
    }
}

/// JaCoCo's line status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Empty,
    NotCovered,
    PartlyCovered,
    FullyCovered,
}

/// One source line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Line {
    pub instructions: Counter,
    pub branches: Counter,
    /// Times the line's first instruction ran (summed over the methods that have the line).
    pub hits: u64,
    /// The most any instruction of the line ran.
    pub max_hits: u64,
}

impl Line {
    pub fn status(&self) -> Status {
        let ins = &self.instructions;
        let br = &self.branches;
        if ins.total() == 0 && br.total() == 0 {
            Status::Empty
        } else if ins.covered == 0 && br.covered == 0 {
            Status::NotCovered
        } else if ins.missed == 0 && br.missed == 0 {
            Status::FullyCovered
        } else {
            Status::PartlyCovered
        }
    }

    /// Adds the same line of another method or class (a lambda or a `finally` copy on it):
    /// counters and hits add up, `max_hits` is the larger.
    pub fn add(&mut self, other: &Line) {
        self.instructions.add(other.instructions);
        self.branches.add(other.branches);
        self.hits = self.hits.saturating_add(other.hits);
        self.max_hits = self.max_hits.max(other.max_hits);
    }
}

/// One decision point (an `if` or a switch) with the count of each outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    pub line: Option<u32>,
    /// Program counter of the jump or switch.
    pub pc: u32,
    /// Per outcome, in instruction order (for `if`: not taken, then taken).
    pub counts: Vec<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub instructions: Counter,
    pub branches: Counter,
    pub lines: Counter,
    pub complexity: Counter,
    pub methods: Counter,
    pub classes: Counter,
}

impl Counters {
    pub fn add(&mut self, o: &Counters) {
        self.instructions.add(o.instructions);
        self.branches.add(o.branches);
        self.lines.add(o.lines);
        self.complexity.add(o.complexity);
        self.methods.add(o.methods);
        self.classes.add(o.classes);
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    pub name: String,
    pub desc: String,
    pub first_line: Option<u32>,
    /// Times the method was entered.
    pub entries: u64,
    pub counters: Counters,
    pub lines: BTreeMap<u32, Line>,
    pub branches: Vec<Branch>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    /// Internal name.
    pub name: String,
    pub source_file: Option<String>,
    pub counters: Counters,
    /// Lines of every method, merged.
    pub lines: BTreeMap<u32, Line>,
    pub methods: Vec<Method>,
    /// Methods left out by a filter: (name, descriptor, filter).
    pub filtered: Vec<(String, String, &'static str)>,
    /// Methods with code that could take no counters (subroutines, a method that would outgrow
    /// 64 KiB, a HotSpot intrinsic …): (name, descriptor, why). Neither covered nor missed: their share of the
    /// class is unknown, so a report names them.
    pub not_analysed: Vec<(String, String, String)>,
    /// A synthetic class (left out whole, as JaCoCo leaves them) with a method other than
    /// `<clinit>` that ran: code of the program may be in it (Groovy keeps a trait's methods in
    /// a synthetic `…$Trait$Helper`), which a report names.
    pub synthetic_ran: bool,
}

fn has_generated_annotation(cf: &ClassFile<'_>, attrs: &[bci::Attribute<'_>]) -> bool {
    ["RuntimeVisibleAnnotations", "RuntimeInvisibleAnnotations"]
        .iter()
        .filter_map(|n| cf.find_attr(attrs, n))
        .any(|(_, a)| {
            annotation_types(cf, a.data)
                .iter()
                .any(|t| t.contains("Generated"))
        })
}

/// The type descriptors of an annotations attribute's top-level annotations.
fn annotation_types(cf: &ClassFile<'_>, d: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let n = match d.get(0..2) {
        Some(b) => u16::from_be_bytes([b[0], b[1]]) as usize,
        None => return out,
    };
    let mut at = 2;
    for _ in 0..n {
        let Some(b) = d.get(at..at + 2) else { break };
        if let Ok(t) = cf.cp.utf8(u16::from_be_bytes([b[0], b[1]])) {
            out.push(t.into_owned());
        }
        match skip_annotation(d, at) {
            Some(next) => at = next,
            None => break,
        }
    }
    out
}

fn skip_annotation(d: &[u8], at: usize) -> Option<usize> {
    let n = u16::from_be_bytes([*d.get(at + 2)?, *d.get(at + 3)?]) as usize;
    let mut p = at + 4;
    for _ in 0..n {
        p = skip_value(d, p + 2)?;
    }
    Some(p)
}

fn skip_value(d: &[u8], at: usize) -> Option<usize> {
    Some(match *d.get(at)? {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => at + 3,
        b'e' => at + 5,
        b'@' => skip_annotation(d, at + 1)?,
        b'[' => {
            let n = u16::from_be_bytes([*d.get(at + 1)?, *d.get(at + 2)?]) as usize;
            let mut p = at + 3;
            for _ in 0..n {
                p = skip_value(d, p)?;
            }
            p
        }
        _ => return None,
    })
}

/// Why a method is left out of the report, if it is.
fn filter(cf: &ClassFile<'_>, m: &bci::Member<'_>, name: &str, desc: &str) -> Option<&'static str> {
    if m.access & ACC_BRIDGE != 0 {
        return Some("bridge");
    }
    if m.access & ACC_SYNTHETIC != 0 && !name.starts_with("lambda$") {
        return Some("synthetic");
    }
    if cf.access & ACC_ENUM != 0 && m.access & ACC_STATIC != 0 {
        let this = cf.name().ok()?;
        if (name == "values" && desc == format!("()[L{this};"))
            || (name == "valueOf" && desc == format!("(Ljava/lang/String;)L{this};"))
        {
            return Some("enum values/valueOf");
        }
    }
    if name == "<init>" && desc == "()V" && m.access & ACC_PRIVATE != 0 {
        // aload_0; invokespecial super.<init>()V; return
        let code = cf
            .find_attr(&m.attributes, "Code")
            .and_then(|(_, a)| bci::CodeAttr::parse(cf, a).ok());
        if code.is_some_and(|c| {
            c.code.len() == 5 && c.code[0] == 0x2a && c.code[1] == 0xb7 && c.code[4] == 0xb1
        }) {
            return Some("private empty constructor");
        }
    }
    if has_generated_annotation(cf, &m.attributes) {
        return Some("Generated annotation");
    }
    let code = cf
        .find_attr(&m.attributes, "Code")
        .and_then(|(_, a)| bci::CodeAttr::parse(cf, a).ok());
    let insns = code.as_ref().and_then(|c| c.decode_all().ok());
    if let (Some(code), Some(insns)) = (&code, &insns) {
        let ops: Vec<u8> = insns.iter().map(|i| i.opcode).collect();
        let member = |k: usize| -> Option<(String, String)> {
            let r = cf.cp.member_ref(insns.get(k)?.cp_index(code.code)?).ok()?;
            Some((r.class.into_owned(), r.name.into_owned()))
        };
        let this = cf.name().ok()?;
        if cf.super_name().ok().flatten().as_deref() == Some("java/lang/Record")
            && record_member(cf, code, insns, &this, name, desc)
        {
            return Some("record member");
        }
        // An enum's constructor that only calls Enum(String, int).
        if cf.access & ACC_ENUM != 0
            && name == "<init>"
            && desc == "(Ljava/lang/String;I)V"
            && ops == [0x2a, 0x2b, 0x1c, 0xb7, 0xb1]
            && member(3) == Some(("java/lang/Enum".into(), "<init>".into()))
        {
            return Some("enum empty constructor");
        }
    }
    None
}

/// A record's `toString`/`hashCode`/`equals` that javac generates (an invokedynamic of that
/// name, bootstrapped by `java/lang/runtime/ObjectMethods`), or an accessor that only returns
/// the field of its name on the record header's line ([`on_header_line`]).
fn record_member(
    cf: &ClassFile<'_>,
    code_attr: &bci::CodeAttr<'_>,
    insns: &[bci::code::Insn],
    this: &str,
    name: &str,
    desc: &str,
) -> bool {
    use bci::opcodes::op;
    let code = code_attr.code;
    let ops: Vec<u8> = insns.iter().map(|i| i.opcode).collect();
    let indy = |k: usize| -> bool {
        insns
            .get(k)
            .and_then(|i| i.cp_index(code))
            .and_then(|c| cf.cp.dynamic(c).ok())
            .is_some_and(|(bsm, n, _)| {
                n == name
                    && bootstrap_owner(cf, bsm).as_deref()
                        == Some("java/lang/runtime/ObjectMethods")
            })
    };
    match (name, desc) {
        ("toString", "()Ljava/lang/String;") => {
            ops == [op::ALOAD_0, op::INVOKEDYNAMIC, op::ARETURN] && indy(1)
        }
        ("hashCode", "()I") => ops == [op::ALOAD_0, op::INVOKEDYNAMIC, op::IRETURN] && indy(1),
        ("equals", "(Ljava/lang/Object;)Z") => {
            ops == [op::ALOAD_0, op::ALOAD_1, op::INVOKEDYNAMIC, op::IRETURN] && indy(2)
        }
        _ => {
            desc.starts_with("()")
                && ops.len() == 3
                && ops[0] == op::ALOAD_0
                && ops[1] == op::GETFIELD
                && (op::IRETURN..=op::ARETURN).contains(&ops[2])
                && insns[1]
                    .cp_index(code)
                    .and_then(|c| cf.cp.member_ref(c).ok())
                    .is_some_and(|r| r.class == this && r.name == name)
                && on_header_line(cf, code_attr)
        }
    }
}

/// Whether a record's accessor is on the record header's line, as javac puts the members it
/// generates: its one line is that of a member javac evidently generated (a `toString`,
/// `hashCode` or `equals` through `ObjectMethods`, or a constructor all on one line, as the
/// implicit canonical one is). A hand-written accessor, which compiles to the same three
/// instructions, is on lines of its own, and is reported; so is an accessor of a record whose
/// other members are all written out (nothing then says where the header is: JaCoCo 0.8.6
/// reports every accessor). Without line numbers (`-g:none`) the shape alone decides.
fn on_header_line(cf: &ClassFile<'_>, code: &bci::CodeAttr<'_>) -> bool {
    let lines = |c: &bci::CodeAttr<'_>| -> Option<std::collections::BTreeSet<u16>> {
        let t = super::line_table(cf, c).ok()?;
        (!t.is_empty()).then(|| t.iter().map(|&(_, l)| l).collect())
    };
    let Some(own) = lines(code) else {
        return true;
    };
    let [line] = own.iter().copied().collect::<Vec<_>>()[..] else {
        return false;
    };
    let this = cf.name().ok();
    cf.methods.iter().any(|m| {
        let (name, desc) = (cf.member_name(m), cf.cp.utf8(m.descriptor_index));
        let Ok(desc) = desc else {
            return false;
        };
        let Some(c) = cf
            .find_attr(&m.attributes, "Code")
            .and_then(|(_, a)| bci::CodeAttr::parse(cf, a).ok())
        else {
            return false;
        };
        let Some(l) = lines(&c) else {
            return false;
        };
        let generated = match &*name {
            "<init>" => l.len() == 1,
            "toString" | "hashCode" | "equals" => {
                let insns = c.decode_all().ok();
                matches!((&this, &insns), (Some(t), Some(i))
                    if record_member(cf, &c, i, t, &name, &desc))
            }
            _ => false,
        };
        generated && l.contains(&line)
    })
}

/// The class of the bootstrap method `index` of the BootstrapMethods attribute (through its
/// method handle's reference).
fn bootstrap_owner(cf: &ClassFile<'_>, index: u16) -> Option<String> {
    let (_, a) = cf.find_attr(&cf.attributes, "BootstrapMethods")?;
    let d = a.data;
    let n = u16::from_be_bytes([*d.first()?, *d.get(1)?]);
    let mut at = 2usize;
    for i in 0..n {
        let handle = u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]);
        let args = u16::from_be_bytes([*d.get(at + 2)?, *d.get(at + 3)?]) as usize;
        if i == index {
            let (_, r) = cf.cp.method_handle(handle).ok()?;
            return Some(cf.cp.member_ref(r).ok()?.class.into_owned());
        }
        at += 4 + 2 * args;
    }
    None
}

/// Coverage of one class. `counts` are the class's counter values (`None`: the class never
/// ran or was not loaded: everything missed).
pub fn analyze(bytes: &[u8], counts: Option<&[u64]>, split: Split) -> Result<Class> {
    let plan = plan_class(bytes, split)?;
    analyze_plan(bytes, &plan, counts)
}

/// The plan [`super::instrument`] with `opts` makes of a class: [`plan_class`]'s, but with the
/// methods the instrumenter could not give counters (code that would outgrow 64 KiB with them,
/// an edit that failed) in `skipped` as it left them, so that [`analyze_plan`] names them in
/// [`Class::not_analysed`] rather than as never run: the instrumenter's own decision, not an
/// estimate of it. Give the options the class was instrumented with (the per-method code the
/// counters add is the same for every class id). A class the instrumenter leaves original as a
/// whole (more counters than a class may have …) has no data: [`plan_class`]'s plan.
pub fn instrumented_plan(bytes: &[u8], opts: &Options<'_>) -> Result<ClassCoverage> {
    instrumented_plan_or_why(bytes, opts).map(|(plan, _)| plan)
}

/// [`instrumented_plan`], with why the instrumenter leaves the class original as a whole, if it
/// does (the constant pool or method table has no room for what the counters add, more
/// counters than a class may have …): such a class has no data, and shows as not run.
pub fn instrumented_plan_or_why(
    bytes: &[u8],
    opts: &Options<'_>,
) -> Result<(ClassCoverage, Option<String>)> {
    match super::instrument(bytes, opts) {
        Ok((_, plan)) => Ok((plan, None)),
        Err(e) => Ok((plan_class(bytes, opts.split)?, Some(e.to_string()))),
    }
}

/// [`analyze`] with a plan already made.
pub fn analyze_plan(bytes: &[u8], plan: &ClassCoverage, counts: Option<&[u64]>) -> Result<Class> {
    let cf = ClassFile::parse(bytes)?;
    let mut class = Class {
        name: plan.name.clone(),
        source_file: cf.source_file().map(|s| s.into_owned()),
        counters: Counters::default(),
        lines: BTreeMap::new(),
        methods: Vec::new(),
        filtered: Vec::new(),
        not_analysed: plan
            .skipped
            .iter()
            .filter_map(|(n, d, why)| match why {
                // the instrumenter's errors start with the method's name, which a report
                // names already
                Skipped::Error(e) => Some((
                    n.clone(),
                    d.clone(),
                    e.strip_prefix(&format!("{}.{n}{d}: ", plan.name))
                        .unwrap_or(e)
                        .to_string(),
                )),
                Skipped::Intrinsic => Some((n.clone(), d.clone(), super::INTRINSIC_NOTE.into())),
                _ => None,
            })
            .collect(),
        synthetic_ran: false,
    };
    if let Some(c) = counts {
        if c.len() != plan.counters as usize {
            return Err(Error::new(
                bci::ErrorKind::Format,
                format!(
                    "{}: {} counter values for {} counters",
                    plan.name,
                    c.len(),
                    plan.counters
                ),
            ));
        }
    }
    let class_generated = has_generated_annotation(&cf, &cf.attributes);
    for m in &plan.methods {
        let member = &cf.methods[m.index];
        let why = if cf.access & ACC_SYNTHETIC != 0 {
            // javac's own classes (an enum switch's $SwitchMap$ holder): none of the program
            Some("synthetic class")
        } else if class_generated {
            Some("Generated annotation")
        } else {
            filter(&cf, member, &m.name, &m.desc)
        };
        if let Some(why) = why {
            // a synthetic class's methods that ran (not javac's $SwitchMap$ holder, whose
            // only code is its <clinit>)
            class.synthetic_ran |= why == "synthetic class"
                && m.name != "<clinit>"
                && counts.is_some_and(|c| super::method_counts(m, c).iter().any(|&n| n > 0));
            class.filtered.push((m.name.clone(), m.desc.clone(), why));
            continue;
        }
        let method = analyze_method(&cf, m, counts)?;
        for (l, line) in &method.lines {
            class.lines.entry(*l).or_default().add(line);
        }
        class.counters.add(&method.counters);
        class.methods.push(method);
    }
    class.counters.lines = line_counter(&class.lines);
    // A class counts when it has code left after the filters (JaCoCo: classes without code,
    // e.g. interfaces with only abstract methods or synthetic classes, are not reported).
    if class.counters.instructions.total() > 0 {
        let covered = class.counters.methods.covered > 0;
        class.counters.classes = Counter::one(covered);
    }
    Ok(class)
}

fn line_counter(lines: &BTreeMap<u32, Line>) -> Counter {
    let mut c = Counter::default();
    for l in lines.values() {
        match l.status() {
            Status::Empty => {}
            Status::NotCovered => c.missed += 1,
            _ => c.covered += 1,
        }
    }
    c
}

fn analyze_method(
    cf: &ClassFile<'_>,
    m: &MethodCoverage,
    counts: Option<&[u64]>,
) -> Result<Method> {
    let member = &cf.methods[m.index];
    let (_, a) = cf
        .find_attr(&member.attributes, "Code")
        .ok_or_else(|| Error::new(bci::ErrorKind::Format, "method without Code"))?;
    let code = bci::CodeAttr::parse(cf, a)?;
    let insns = code.decode_all()?;
    // the lines the plan split blocks at (its blocks end where the code after an implicit
    // exception is of another line), without line 0: ASM (so JaCoCo) takes a `line 0` entry
    // (the Clojure compiler writes them) for none, the code after it staying on the line
    // before; the plan still splits there (the data's layout)
    let mut table = super::line_table(cf, &code)?;
    table.retain(|&(_, line)| line != 0);
    let zeros;
    let values = match counts {
        Some(c) => super::method_counts(m, c),
        None => {
            zeros = vec![0u64; m.plan.counters.len()];
            &zeros[..]
        }
    };
    let solved = m.plan.solve(&m.cfg, values);
    let entries = super::entry_counter(m)
        .and_then(|i| counts.and_then(|c| c.get(i as usize)).copied())
        .unwrap_or(0);
    // Per instruction: its line and how often it ran; per decision (a block's last
    // instruction with two or more branch outcomes): each outcome's count.
    let lines_of = super::lines_of(&insns, &table);
    let mut runs: Vec<u64> = vec![0; insns.len()];
    let mut outcomes: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for (b, blk) in m.cfg.blocks.iter().enumerate() {
        for k in blk.first..blk.end {
            runs[k as usize] = solved.blocks[b];
        }
        let edges: Vec<u32> = m.cfg.out[b]
            .iter()
            .copied()
            .filter(|&e| m.cfg.edges[e as usize].kind.is_branch())
            .collect();
        if edges.len() >= 2 {
            outcomes.insert(blk.end as usize - 1, edges);
        }
    }
    let code_owner = cf.name()?;
    let fm = filters::Method {
        cf,
        class: &code_owner,
        name: &m.name,
        code: code.code,
        insns: &insns,
        handlers: &code.handlers,
        lines: &lines_of,
    };
    let marks = filters::run(&fm);
    // The outcomes of each decision, without a generated default.
    let mut decisions: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (k, edges) in &outcomes {
        let counts: Vec<u64> = edges
            .iter()
            .filter(|&&e| {
                !(marks.drop_default[*k]
                    && matches!(&m.cfg.edges[e as usize].kind,
                        EdgeKind::Switch { keys, default: true } if keys.is_empty()))
            })
            .map(|&e| solved.edges[e as usize])
            .collect();
        decisions.insert(*k, counts);
    }
    // Merged copies: the copy that stays counts the runs (and outcomes) of all.
    let mut group_runs = runs.clone();
    for (k, &n) in runs.iter().enumerate() {
        let r = marks.find(k);
        if r != k {
            group_runs[r] = group_runs[r].saturating_add(n);
            if let (Some(d), Some(keep)) = (decisions.get(&k).cloned(), decisions.get_mut(&r)) {
                if d.len() == keep.len() {
                    keep.iter_mut()
                        .zip(d)
                        .for_each(|(a, b)| *a = a.saturating_add(b));
                }
            }
        }
    }
    let skip = |k: usize| marks.ignored[k] || marks.merged_away(k);
    let mut counters = Counters::default();
    let mut lines: BTreeMap<u32, Line> = BTreeMap::new();
    let mut seen_first: BTreeMap<u32, ()> = BTreeMap::new();
    // Instructions in pc order: the first of each line gives its hits.
    for k in 0..insns.len() {
        if skip(k) {
            continue;
        }
        let n = group_runs[k];
        let c = Counter::one(n > 0);
        counters.instructions.add(c);
        if let Some(l) = lines_of[k] {
            let e = lines.entry(l).or_default();
            e.instructions.add(c);
            e.max_hits = e.max_hits.max(n);
            if seen_first.insert(l, ()).is_none() {
                e.hits = n;
            }
        }
    }
    let mut branches = Vec::new();
    for (&k, cs) in &decisions {
        if skip(k) || cs.len() < 2 {
            continue;
        }
        let line = lines_of[k];
        let cs = cs.clone();
        let covered = cs.iter().filter(|&&c| c > 0).count() as u64;
        let total = cs.len() as u64;
        let bc = Counter {
            missed: total - covered,
            covered,
        };
        counters.branches.add(bc);
        // JaCoCo: each decision adds (outcomes - 1) to the complexity.
        let c = covered.saturating_sub(1);
        let missed = total - c - 1;
        counters.complexity.add(Counter { missed, covered: c });
        if let Some(l) = line {
            lines.entry(l).or_default().branches.add(bc);
        }
        branches.push(Branch {
            line,
            pc: insns[k].pc,
            counts: cs,
        });
    }
    let ran = entries > 0 || counters.instructions.covered > 0;
    counters.methods = Counter::one(ran);
    counters.complexity.add(Counter::one(ran));
    counters.lines = line_counter(&lines);
    Ok(Method {
        name: m.name.clone(),
        desc: m.desc.clone(),
        first_line: lines.keys().next().copied(),
        entries,
        counters,
        lines,
        branches,
    })
}
