//! Filters for code the compiler generates inside a method (JaCoCo's `IFilterOutput` model):
//! instructions to *ignore* (not the program's: neither covered nor missed), instruction
//! copies to *merge* (javac's duplicated `finally` blocks count as one: covered when any copy
//! ran, hit count the sum of the copies), and switches whose generated default is no branch.
//! The shapes are javac's (8 to 21); each filter matches a fixed instruction pattern and
//! leaves code it does not recognise alone.
//!
//! * string switch: the `hashCode()` lookupswitch or tableswitch and the `equals` chain up to
//!   the second switch (whose cases are the source's).
//! * try-with-resources (javac 11+): the `close()` on the normal path and the generated
//!   handler (`close`, `addSuppressed`, rethrow).
//! * `finally`: every copy at an exit of the protected regions is merged with the catch-any
//!   handler's copy; the handler's `astore`, `aload; athrow` and the `goto` after a copy are
//!   ignored.
//! * `assert`: the `$assertionsDisabled` test (and its initialisation in `<clinit>`).
//! * exhaustive switch expressions: the generated default throwing
//!   `IncompatibleClassChangeError` (javac < 21) or `MatchException` (21+).
//! * `synchronized` blocks: the handler that releases the monitor and rethrows.
//! * record patterns (javac 21+): the handler of `Throwable` around the record accessor calls
//!   that throws `MatchException`.
//! * constant branches (javac 23+'s test of a primitive component pattern, `iconst_1; ifeq`):
//!   the test and the code only its outcome that never comes reaches.

use bci::code::{Handler, Insn};
use bci::opcodes::op;
use bci::ClassFile;

/// What the filters decided for one method's instructions (indexed like the decoded
/// instructions).
pub(crate) struct Marks {
    pub ignored: Vec<bool>,
    /// Union-find over merged instructions; the root is the copy that stays.
    parent: Vec<usize>,
    /// A switch whose default outcome is generated (no branch of the source).
    pub drop_default: Vec<bool>,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks {
            ignored: vec![false; n],
            parent: (0..n).collect(),
            drop_default: vec![false; n],
        }
    }
    fn ignore(&mut self, from: usize, to_inclusive: usize) {
        for k in from..=to_inclusive.min(self.ignored.len().saturating_sub(1)) {
            self.ignored[k] = true;
        }
    }
    pub fn find(&self, mut k: usize) -> usize {
        while self.parent[k] != k {
            k = self.parent[k];
        }
        k
    }
    /// `other` becomes a copy of `keep`.
    fn merge(&mut self, keep: usize, other: usize) {
        let (a, b) = (self.find(keep), self.find(other));
        if a != b {
            self.parent[b] = a;
        }
    }
    /// True when instruction `k` was merged into another copy.
    pub fn merged_away(&self, k: usize) -> bool {
        self.find(k) != k
    }
}

/// One method's code as the filters see it.
pub(crate) struct Method<'a, 'b> {
    pub cf: &'b ClassFile<'a>,
    pub class: &'b str,
    pub name: &'b str,
    pub code: &'b [u8],
    pub insns: &'b [Insn],
    pub handlers: &'b [Handler],
    /// Source line of each instruction.
    pub lines: &'b [Option<u32>],
}

impl Method<'_, '_> {
    fn op(&self, k: usize) -> Option<u8> {
        self.insns.get(k).map(|i| i.opcode)
    }
    fn index_of(&self, pc: i64) -> Option<usize> {
        if pc < 0 {
            return None;
        }
        self.insns.binary_search_by_key(&(pc as u32), |i| i.pc).ok()
    }
    /// (class, name, descriptor) of a field or method instruction.
    fn member(&self, k: usize) -> Option<(String, String, String)> {
        let i = self.insns.get(k)?;
        let r = self.cf.cp.member_ref(i.cp_index(self.code)?).ok()?;
        Some((
            r.class.into_owned(),
            r.name.into_owned(),
            r.desc.into_owned(),
        ))
    }
    fn is_member(&self, k: usize, opcode: u8, class: &str, name: &str, desc: &str) -> bool {
        self.op(k) == Some(opcode)
            && self
                .member(k)
                .is_some_and(|(c, n, d)| c == class && n == name && d == desc)
    }
    fn class_operand(&self, k: usize) -> Option<String> {
        let i = self.insns.get(k)?;
        Some(
            self.cf
                .cp
                .class_name(i.cp_index(self.code)?)
                .ok()?
                .into_owned(),
        )
    }
    fn aload(&self, k: usize) -> Option<u16> {
        let i = self.insns.get(k)?;
        matches!(i.opcode, op::ALOAD | op::ALOAD_0..=op::ALOAD_3)
            .then(|| i.local(self.code))
            .flatten()
    }
    fn astore(&self, k: usize) -> Option<u16> {
        let i = self.insns.get(k)?;
        matches!(i.opcode, op::ASTORE | op::ASTORE_0..=op::ASTORE_3)
            .then(|| i.local(self.code))
            .flatten()
    }
    fn jump_target(&self, k: usize) -> Option<usize> {
        let i = self.insns.get(k)?;
        let off = i.branch_offset(self.code)?;
        self.index_of(i.pc as i64 + off as i64)
    }
    fn switch_default(&self, k: usize) -> Option<usize> {
        let i = self.insns.get(k)?;
        if !matches!(i.opcode, op::TABLESWITCH | op::LOOKUPSWITCH) {
            return None;
        }
        let (d, _) = i.switch(self.code)?;
        self.index_of(i.pc as i64 + d as i64)
    }
    fn switch_targets(&self, k: usize) -> Vec<usize> {
        let i = &self.insns[k];
        let Some((_, cases)) = i.switch(self.code) else {
            return Vec::new();
        };
        cases
            .iter()
            .filter_map(|&(_, off)| self.index_of(i.pc as i64 + off as i64))
            .collect()
    }
    fn is_return(&self, k: usize) -> bool {
        self.op(k)
            .is_some_and(|o| (op::IRETURN..=op::RETURN).contains(&o) || o == op::ATHROW)
    }
}

/// Runs every instruction-level filter over a method.
pub(crate) fn run(m: &Method<'_, '_>) -> Marks {
    let mut marks = Marks::new(m.insns.len());
    string_switch(m, &mut marks);
    try_with_resources(m, &mut marks);
    finally(m, &mut marks);
    assert(m, &mut marks);
    exhaustive_switch(m, &mut marks);
    synchronized(m, &mut marks);
    record_pattern(m, &mut marks);
    constant_branch(m, &mut marks);
    marks
}

/// A conditional branch on a constant: `iconst_0` or `iconst_1` then `ifeq` or `ifne`, the `if`
/// no jump target (so its operand is that constant). javac 23+ tests each primitive component
/// of a record pattern so (JDK-8303374: `iconst_1; ifeq`, the pattern's exactness). Its
/// outcome is fixed: both instructions are ignored (no branch, no code of the source), and so is
/// the code that only the outcome that never comes reaches (in a switch, javac 25's restart of
/// the switch, `iconst_1; istore; goto`); code other paths reach too stays.
fn constant_branch(m: &Method<'_, '_>, marks: &mut Marks) {
    let n = m.insns.len();
    let mut target = vec![false; n];
    for k in 0..n {
        if let Some(t) = m.jump_target(k) {
            target[t] = true;
        }
        for t in m.switch_default(k).into_iter().chain(m.switch_targets(k)) {
            target[t] = true;
        }
    }
    for h in m.handlers {
        if let Some(t) = m.index_of(h.handler as i64) {
            target[t] = true;
        }
    }
    // (the `if`, its successor that never runs)
    let mut dead = Vec::new();
    for (k, &is_target) in target.iter().enumerate().skip(1) {
        let (Some(c @ (op::ICONST_0 | op::ICONST_1)), Some(i @ (op::IFEQ | op::IFNE))) =
            (m.op(k - 1), m.op(k))
        else {
            continue;
        };
        if is_target {
            continue;
        }
        let Some(jump) = m.jump_target(k) else {
            continue;
        };
        marks.ignore(k - 1, k);
        let taken = (i == op::IFEQ) == (c == op::ICONST_0);
        if jump != k + 1 {
            dead.push((k, if taken { k + 1 } else { jump }));
        }
    }
    if dead.is_empty() {
        return;
    }
    let all = reachable(m, &[]);
    let live = reachable(m, &dead);
    for k in 0..n {
        if all[k] && !live[k] {
            marks.ignore(k, k);
        }
    }
}

/// The instructions reachable from the method's start, without the edges `cut` (from, to):
/// the normal flow, and a handler's start once an instruction it covers is reachable.
fn reachable(m: &Method<'_, '_>, cut: &[(usize, usize)]) -> Vec<bool> {
    use bci::opcodes::Flow;
    let n = m.insns.len();
    let mut seen = vec![false; n];
    let mut work = vec![0usize];
    loop {
        while let Some(k) = work.pop() {
            if k >= n || seen[k] {
                continue;
            }
            seen[k] = true;
            let mut next = Vec::new();
            match m.insns[k].flow() {
                Flow::Next => next.push(k + 1),
                Flow::Cond | Flow::Jsr => next.extend([k + 1].into_iter().chain(m.jump_target(k))),
                Flow::Goto => next.extend(m.jump_target(k)),
                Flow::Switch => {
                    next.extend(m.switch_default(k).into_iter().chain(m.switch_targets(k)))
                }
                Flow::Return | Flow::Throw | Flow::Ret => {}
            }
            work.extend(next.into_iter().filter(|&t| !cut.contains(&(k, t))));
        }
        let before = work.len();
        for h in m.handlers {
            let covered = m
                .insns
                .iter()
                .enumerate()
                .any(|(k, i)| seen[k] && i.pc >= h.start as u32 && i.pc < h.end as u32);
            match m.index_of(h.handler as i64) {
                Some(t) if covered && !seen[t] => work.push(t),
                _ => {}
            }
        }
        if work.len() == before {
            return seen;
        }
    }
}

/// A record pattern's handler (javac 21+): javac calls the record's accessors inside a handler
/// of `Throwable` shaped `astore c; new MatchException; dup; aload c; invokevirtual
/// Throwable.toString()String; aload c; invokespecial MatchException.<init>(String, Throwable);
/// athrow`, ignored (also when it ran: an accessor threw).
fn record_pattern(m: &Method<'_, '_>, marks: &mut Marks) {
    for h in m.handlers {
        if h.catch_type == 0
            || m.cf.cp.class_name(h.catch_type).ok().as_deref() != Some("java/lang/Throwable")
        {
            continue;
        }
        let Some(k) = m.index_of(h.handler as i64) else {
            continue;
        };
        let Some(c) = m.astore(k) else {
            continue;
        };
        if m.op(k + 1) == Some(op::NEW)
            && m.class_operand(k + 1).as_deref() == Some("java/lang/MatchException")
            && m.op(k + 2) == Some(op::DUP)
            && m.aload(k + 3) == Some(c)
            && m.is_member(
                k + 4,
                op::INVOKEVIRTUAL,
                "java/lang/Throwable",
                "toString",
                "()Ljava/lang/String;",
            )
            && m.aload(k + 5) == Some(c)
            && m.is_member(
                k + 6,
                op::INVOKESPECIAL,
                "java/lang/MatchException",
                "<init>",
                "(Ljava/lang/String;Ljava/lang/Throwable;)V",
            )
            && m.op(k + 7) == Some(op::ATHROW)
        {
            marks.ignore(k, k + 7);
        }
    }
}

/// A `synchronized` block's handler that releases the monitor and rethrows: javac's
/// `astore t; aload lock; monitorexit; aload t; athrow` (ecj's `aload lock; monitorexit;
/// athrow`), ignored.
fn synchronized(m: &Method<'_, '_>, marks: &mut Marks) {
    for h in m.handlers {
        if h.catch_type != 0 || h.start == h.handler {
            continue;
        }
        let Some(k) = m.index_of(h.handler as i64) else {
            continue;
        };
        if let Some(t) = m.astore(k) {
            if m.aload(k + 1).is_some()
                && m.op(k + 2) == Some(op::MONITOREXIT)
                && m.aload(k + 3) == Some(t)
                && m.op(k + 4) == Some(op::ATHROW)
            {
                marks.ignore(k, k + 4);
            }
        } else if m.aload(k).is_some()
            && m.op(k + 1) == Some(op::MONITOREXIT)
            && m.op(k + 2) == Some(op::ATHROW)
        {
            marks.ignore(k, k + 2);
        }
    }
}

/// javac's string switch: `s.hashCode()`, a lookupswitch (or, for close hash codes, a
/// tableswitch whose gaps go to its default) on it whose cases compare with `equals` and store
/// the case's index, then a second switch on that index (the default of the first). The first
/// switch and the `equals` chain are ignored.
fn string_switch(m: &Method<'_, '_>, marks: &mut Marks) {
    for k in 1..m.insns.len() {
        let Some(dflt) = m.switch_default(k) else {
            continue;
        };
        if !m.is_member(
            k - 1,
            op::INVOKEVIRTUAL,
            "java/lang/String",
            "hashCode",
            "()I",
        ) {
            continue;
        }
        // Every case starts an `equals` test before the second switch; a tableswitch's gaps
        // (hash codes no case has) jump to the default like a failed test. At least one case
        // is a test (javac makes no hash switch for a switch with no cases).
        let targets = m.switch_targets(k);
        if dflt <= k
            || !targets.iter().all(|&t| t > k && t <= dflt)
            || !targets.iter().any(|&t| t < dflt)
        {
            continue;
        }
        // Between the switches: loads, string constants, equals, the index stores and jumps.
        let chain = (k + 1..dflt).all(|j| match m.op(j) {
            Some(op::INVOKEVIRTUAL) => m.is_member(
                j,
                op::INVOKEVIRTUAL,
                "java/lang/String",
                "equals",
                "(Ljava/lang/Object;)Z",
            ),
            Some(o) => {
                m.aload(j).is_some()
                    || matches!(
                        o,
                        op::LDC
                            | op::LDC_W
                            | op::IFEQ
                            | op::GOTO
                            | op::ICONST_M1..=op::ICONST_5
                            | op::BIPUSH
                            | op::SIPUSH
                            | op::ISTORE
                            | op::ISTORE_0..=op::ISTORE_3
                    )
            }
            None => false,
        });
        let second = matches!(m.op(dflt + 1), Some(op::TABLESWITCH | op::LOOKUPSWITCH));
        if chain && second {
            marks.ignore(k, dflt - 1);
        }
    }
}

/// javac 11+ try-with-resources: for a handler of `Throwable` shaped
/// `astore e; [aload r; ifnull L;] aload r; invoke close()V; goto L; astore t; aload e;
/// aload t; invokevirtual addSuppressed; L: aload e; athrow`, the handler and the `close()`
/// of the normal path just before it are ignored.
fn try_with_resources(m: &Method<'_, '_>, marks: &mut Marks) {
    for h in m.handlers {
        if h.catch_type == 0
            || m.cf.cp.class_name(h.catch_type).ok().as_deref() != Some("java/lang/Throwable")
        {
            continue;
        }
        let Some(start) = m.index_of(h.handler as i64) else {
            continue;
        };
        for null_check in [true, false] {
            if twr_match(m, marks, start, null_check) {
                break;
            }
        }
    }
}

/// `[aload r; ifnull;] aload r; invoke close()V` at `k` with resource `r` (and the close's
/// owner `owner` when known): the index after it.
fn javac_close(
    m: &Method<'_, '_>,
    k: usize,
    r: &mut Option<u16>,
    owner: &mut Option<String>,
    null_check: bool,
) -> Option<usize> {
    let mut k = k;
    let same_var = |v: Option<u16>, r: &mut Option<u16>| -> bool {
        match (v, *r) {
            (Some(v), None) => {
                *r = Some(v);
                true
            }
            (Some(v), Some(x)) => v == x,
            _ => false,
        }
    };
    if null_check {
        if !same_var(m.aload(k), r) || m.op(k + 1) != Some(op::IFNULL) {
            return None;
        }
        k += 2;
    }
    if !same_var(m.aload(k), r) {
        return None;
    }
    if !matches!(m.op(k + 1), Some(op::INVOKEVIRTUAL | op::INVOKEINTERFACE)) {
        return None;
    }
    let (c, n, d) = m.member(k + 1)?;
    if n != "close" || d != "()V" {
        return None;
    }
    match owner {
        Some(o) if *o != c => return None,
        None => *owner = Some(c),
        _ => {}
    }
    Some(k + 2)
}

fn twr_match(m: &Method<'_, '_>, marks: &mut Marks, start: usize, null_check: bool) -> bool {
    let Some(e) = m.astore(start) else {
        return false;
    };
    let (mut r, mut owner) = (None, None);
    let Some(k) = javac_close(m, start + 1, &mut r, &mut owner, null_check) else {
        return false;
    };
    if m.op(k) != Some(op::GOTO) {
        return false;
    }
    let Some(t) = m.astore(k + 1) else {
        return false;
    };
    if m.aload(k + 2) != Some(e)
        || m.aload(k + 3) != Some(t)
        || !m.is_member(
            k + 4,
            op::INVOKEVIRTUAL,
            "java/lang/Throwable",
            "addSuppressed",
            "(Ljava/lang/Throwable;)V",
        )
        || m.aload(k + 5) != Some(e)
        || m.op(k + 6) != Some(op::ATHROW)
    {
        return false;
    }
    let end = k + 6;
    // The close of the normal path: the nearest one before the handler.
    let mut s = start;
    let found = loop {
        if s == 0 {
            break None;
        }
        s -= 1;
        let (mut r2, mut o2) = (r, owner.clone());
        if let Some(after) = javac_close(m, s, &mut r2, &mut o2, null_check) {
            break Some(after);
        }
    };
    let Some(after) = found else {
        return false;
    };
    let last = if m.op(after) == Some(op::GOTO) {
        after
    } else {
        after - 1
    };
    marks.ignore(s, last);
    marks.ignore(start, end);
    true
}

/// javac's copies of a `finally` block: the catch-any handler `astore e; <copy>; aload e;
/// athrow` and one copy at each exit of the regions it protects. The handler's copy stays,
/// the others merge into it.
fn finally(m: &Method<'_, '_>, marks: &mut Marks) {
    let n = m.insns.len();
    let mut seen = Vec::new();
    for h in m.handlers.iter().filter(|h| h.catch_type == 0) {
        if seen.contains(&h.handler) {
            continue;
        }
        seen.push(h.handler);
        let Some(start) = m.index_of(h.handler as i64) else {
            continue;
        };
        let Some(size) = finally_size(m, start) else {
            continue;
        };
        let regions: Vec<(usize, usize)> = m
            .handlers
            .iter()
            .filter(|x| x.handler == h.handler)
            .filter_map(|x| {
                let s = m.index_of(x.start as i64)?;
                let e = if x.end as usize >= m.code.len() {
                    n
                } else {
                    m.index_of(x.end as i64)?
                };
                Some((s, e))
            })
            .collect();
        let inside = |k: usize| regions.iter().any(|&(s, e)| k >= s && k < e);
        for &(s, e) in &regions {
            let mut continues = false;
            for k in s..e {
                let o = m.insns[k].opcode;
                let flow = m.insns[k].flow();
                if matches!(flow, bci::opcodes::Flow::Cond | bci::opcodes::Flow::Goto) {
                    if let Some(t) = m.jump_target(k) {
                        if !inside(t) {
                            finally_merge(m, marks, size, start, t);
                        }
                    }
                    continues = o != op::GOTO && o != op::GOTO_W;
                } else {
                    continues = !m.is_return(k);
                }
            }
            if continues && e < n && !inside(e) {
                finally_merge(m, marks, size, start, e);
            }
        }
        // javac's empty catch with the same region: the copy after its astore.
        for x in m.handlers {
            if x.handler != h.handler && x.start == h.start && x.end == h.end {
                if let Some(c) = m.index_of(x.handler as i64) {
                    if !inside(c + 1) {
                        finally_merge(m, marks, size, start, c + 1);
                    }
                }
            }
        }
    }
}

/// An opcode with its short forms folded into the general one (`astore_3` is `astore`,
/// `ldc_w` is `ldc`, `goto_w` is `goto`): javac's copies of a block may pick different forms
/// (another local, a constant pool grown in between), as ASM's view (JaCoCo's) does not see.
fn same_op(o: u8) -> u8 {
    match o {
        op::ILOAD_0..=op::ALOAD_3 => op::ILOAD + (o - op::ILOAD_0) / 4,
        op::ISTORE_0..=op::ASTORE_3 => op::ISTORE + (o - op::ISTORE_0) / 4,
        op::LDC_W => op::LDC,
        op::GOTO_W => op::GOTO,
        _ => o,
    }
}

/// Instructions in the catch-any handler's copy at `start` (`astore e; ...; aload e; athrow`).
fn finally_size(m: &Method<'_, '_>, start: usize) -> Option<usize> {
    let e = m.astore(start)?;
    let mut k = start + 1;
    while m.aload(k) != Some(e) {
        if k >= m.insns.len() {
            return None;
        }
        k += 1;
    }
    (m.op(k + 1) == Some(op::ATHROW) && k > start + 1).then_some(k - start - 1)
}

fn finally_merge(m: &Method<'_, '_>, marks: &mut Marks, size: usize, handler: usize, at: usize) {
    if at + size > m.insns.len() || at == handler {
        return;
    }
    if (0..size)
        .any(|j| same_op(m.insns[handler + 1 + j].opcode) != same_op(m.insns[at + j].opcode))
    {
        return;
    }
    marks.ignore(handler, handler);
    for j in 0..size {
        marks.merge(handler + 1 + j, at + j);
    }
    marks.ignore(handler + 1 + size, handler + 2 + size);
    if m.op(at + size) == Some(op::GOTO) {
        // the jump over the other copies: it would make the copy's last line look partly run
        marks.ignore(at + size, at + size);
    }
}

/// `assert`: `getstatic $assertionsDisabled; ifne` (the `ifne` is ignored) and in `<clinit>`
/// `ldc C; invokevirtual desiredAssertionStatus; ifne; iconst_1; goto; iconst_0; putstatic
/// $assertionsDisabled` (all ignored).
fn assert(m: &Method<'_, '_>, marks: &mut Marks) {
    for k in 0..m.insns.len() {
        if m.name == "<clinit>"
            && k > 0
            && m.is_member(
                k,
                op::INVOKEVIRTUAL,
                "java/lang/Class",
                "desiredAssertionStatus",
                "()Z",
            )
            && m.op(k + 1) == Some(op::IFNE)
            && m.op(k + 2) == Some(op::ICONST_1)
            && m.op(k + 3) == Some(op::GOTO)
            && m.op(k + 4) == Some(op::ICONST_0)
            && m.is_member(k + 5, op::PUTSTATIC, m.class, "$assertionsDisabled", "Z")
        {
            marks.ignore(k - 1, k + 5);
        }
        if m.is_member(k, op::GETSTATIC, m.class, "$assertionsDisabled", "Z")
            && m.op(k + 1) == Some(op::IFNE)
        {
            marks.ignore(k + 1, k + 1);
        }
    }
}

/// An exhaustive switch expression's generated default: `new IncompatibleClassChangeError;
/// dup; invokespecial <init>()V; athrow` (javac < 21) or `new MatchException; dup;
/// aconst_null; aconst_null; invokespecial <init>(String, Throwable); athrow` (21+), on the
/// switch's line.
fn exhaustive_switch(m: &Method<'_, '_>, marks: &mut Marks) {
    for k in 0..m.insns.len() {
        let Some(d) = m.switch_default(k) else {
            continue;
        };
        if m.op(d) != Some(op::NEW) || m.op(d + 1) != Some(op::DUP) {
            continue;
        }
        if m.lines.get(d).copied().flatten() != m.lines[k] {
            continue;
        }
        let end = match m.class_operand(d).as_deref() {
            Some("java/lang/IncompatibleClassChangeError")
                if m.is_member(
                    d + 2,
                    op::INVOKESPECIAL,
                    "java/lang/IncompatibleClassChangeError",
                    "<init>",
                    "()V",
                ) =>
            {
                d + 3
            }
            Some("java/lang/MatchException")
                if m.op(d + 2) == Some(op::ACONST_NULL)
                    && m.op(d + 3) == Some(op::ACONST_NULL)
                    && m.is_member(
                        d + 4,
                        op::INVOKESPECIAL,
                        "java/lang/MatchException",
                        "<init>",
                        "(Ljava/lang/String;Ljava/lang/Throwable;)V",
                    ) =>
            {
                d + 5
            }
            _ => continue,
        };
        if m.op(end) != Some(op::ATHROW) {
            continue;
        }
        marks.ignore(d, end);
        marks.drop_default[k] = true;
    }
}
