//! Per-method checks: instruction boundaries and operands (all versions), and type checking against the
//! StackMapTable (JVMS §4.10.1, following HotSpot's `ClassVerifier::verify_method` where they differ).

use crate::classfile::*;
use crate::types::{Hier, Name, VType};
use std::rc::Rc;

/// An error inside a method: (offset, message).
pub type MErr = (Option<u32>, String);
type R<T> = Result<T, MErr>;

fn at<T>(pc: usize, msg: impl Into<String>) -> R<T> {
    Err((Some(pc as u32), msg.into()))
}

/// Length of the instruction at `pc`, or None if invalid/truncated.
pub fn insn_len(code: &[u8], pc: usize) -> Option<usize> {
    let op = *code.get(pc)?;
    let n = match op {
        0..=15 | 26..=53 | 59..=131 | 133..=152 | 172..=177 | 190 | 191 | 194 | 195 => 1,
        16 | 18 | 21..=25 | 54..=58 | 169 | 188 => 2,
        17 | 19 | 20 | 132 | 153..=168 | 178..=184 | 187 | 189 | 192 | 193 | 198 | 199 => 3,
        197 => 4,
        185 | 186 | 200 | 201 => 5,
        196 => match *code.get(pc + 1)? {
            132 => 6,
            21..=25 | 54..=58 | 169 => 4,
            _ => return None,
        },
        170 => {
            let base = (pc + 4) & !3;
            let lo = be_i4(code, base + 4)? as i64;
            let hi = be_i4(code, base + 8)? as i64;
            if lo > hi || hi - lo >= 65536 {
                return None;
            }
            base + 12 + 4 * (hi - lo + 1) as usize - pc
        }
        171 => {
            let base = (pc + 4) & !3;
            let n = be_i4(code, base + 4)?;
            if !(0..65536).contains(&n) {
                return None;
            }
            base + 8 + 8 * n as usize - pc
        }
        _ => return None,
    };
    if pc + n > code.len() {
        return None;
    }
    Some(n)
}

/// Branch targets of the instruction at `pc` (relative offsets resolved), as i64 to catch negatives.
fn branch_targets(code: &[u8], pc: usize, out: &mut Vec<i64>) {
    out.clear();
    let op = code[pc];
    let p = pc as i64;
    match op {
        153..=168 | 198 | 199 => out.push(p + be_i2(code, pc + 1).unwrap_or(0) as i64),
        200 | 201 => out.push(p + be_i4(code, pc + 1).unwrap_or(0) as i64),
        170 => {
            let base = (pc + 4) & !3;
            out.push(p + be_i4(code, base).unwrap_or(0) as i64);
            let lo = be_i4(code, base + 4).unwrap_or(0) as i64;
            let hi = be_i4(code, base + 8).unwrap_or(0) as i64;
            for k in 0..(hi - lo + 1).max(0) as usize {
                out.push(p + be_i4(code, base + 12 + 4 * k).unwrap_or(0) as i64);
            }
        }
        171 => {
            let base = (pc + 4) & !3;
            out.push(p + be_i4(code, base).unwrap_or(0) as i64);
            let n = be_i4(code, base + 4).unwrap_or(0).max(0) as usize;
            for k in 0..n {
                out.push(p + be_i4(code, base + 12 + 8 * k).unwrap_or(0) as i64);
            }
        }
        _ => {}
    }
}

#[derive(Clone)]
pub struct Frame<'a> {
    pub locals: Vec<VType<'a>>,
    pub stack: Vec<VType<'a>>,
    pub stack_size: usize,
    pub this_uninit: bool,
}

fn desc_slots(d: &[u8]) -> usize {
    if matches!(d.first(), Some(b'J' | b'D')) {
        2
    } else {
        1
    }
}

pub struct MethodCtx<'c, 'h, 'a> {
    pub cf: &'c ClassFile<'a>,
    pub hier: &'c Hier<'h, 'a>,
    pub m: &'c Member<'a>,
    pub code: &'c Code<'a>,
}

/// Checks that apply to every class version: instruction boundaries, branch targets, cp kinds, locals.
/// Returns the instruction-start bitmap.
pub struct Scan {
    /// instruction start bitmap
    pub starts: Vec<bool>,
    /// (pc, length) of every instruction
    pub insns: Vec<(u32, u32)>,
}

pub fn scan_code(cx: &MethodCtx<'_, '_, '_>) -> R<Scan> {
    let code = cx.code.code;
    let cp = &cx.cf.cp;
    let major = cx.cf.major;
    let mut starts = vec![false; code.len()];
    let mut insns = Vec::with_capacity(code.len() / 2);
    let mut pc = 0;
    while pc < code.len() {
        let n = match insn_len(code, pc) {
            Some(n) => n,
            None => return at(pc, format!("bad instruction (opcode {})", code[pc])),
        };
        starts[pc] = true;
        insns.push((pc as u32, n as u32));
        pc += n;
    }
    let mut targets = Vec::new();
    let max_locals = cx.code.max_locals as usize;
    for &(ipc, ilen) in &insns {
        let pc = ipc as usize;
        let op = code[pc];
        let n = ilen as usize;
        if matches!(op, 153..=168 | 170 | 171 | 198..=201) {
            branch_targets(code, pc, &mut targets);
        } else {
            targets.clear();
        }
        for &t in &targets {
            if t < 0 || t as usize >= code.len() || !starts[t as usize] {
                return at(pc, format!("illegal target of jump or branch: {t}"));
            }
        }
        if major >= 51 && matches!(op, 168 | 169 | 201)
            || (op == 196 && code.get(pc + 1) == Some(&169) && major >= 51)
        {
            return at(
                pc,
                "jsr/ret are not allowed in class files version 51 and later",
            );
        }
        // local variable index checks
        let local = |idx: usize, wide2: bool| -> R<()> {
            if idx + wide2 as usize >= max_locals {
                return at(
                    pc,
                    format!("local variable index {idx} out of range (max_locals {max_locals})"),
                );
            }
            Ok(())
        };
        match op {
            21 | 23 | 25 | 54 | 56 | 58 | 169 => local(code[pc + 1] as usize, false)?,
            22 | 24 | 55 | 57 => local(code[pc + 1] as usize, true)?,
            132 => local(code[pc + 1] as usize, false)?,
            26..=45 => {
                let k = (op - 26) as usize;
                local(k % 4, matches!(k / 4, 1 | 3))?
            }
            59..=78 => {
                let k = (op - 59) as usize;
                local(k % 4, matches!(k / 4, 1 | 3))?
            }
            196 => {
                let idx = be_u2(code, pc + 2).unwrap_or(0) as usize;
                let w = code[pc + 1];
                local(idx, matches!(w, 22 | 24 | 55 | 57))?
            }
            _ => {}
        }
        // constant pool kinds
        let idx2 = || be_u2(code, pc + 1).unwrap_or(0);
        let bad_cp = |what: &str| at(pc, format!("bad constant pool index for {what}"));
        match op {
            18 | 19 => {
                let i = if op == 18 {
                    code[pc + 1] as u16
                } else {
                    idx2()
                };
                let ok = match cp.get(i) {
                    Some(Cp::Integer | Cp::Float | Cp::String(_)) => true,
                    Some(Cp::Class(_)) => major >= 49,
                    Some(Cp::MethodType(_) | Cp::MethodHandle(..)) => major >= 51,
                    Some(Cp::Dynamic(_, nt)) => {
                        major >= 55
                            && cp
                                .name_and_type(*nt)
                                .map(|(_, d)| desc_slots(d) == 1)
                                .unwrap_or(false)
                    }
                    _ => false,
                };
                if !ok {
                    return bad_cp("ldc");
                }
            }
            20 => {
                let ok = match cp.get(idx2()) {
                    Some(Cp::Long | Cp::Double) => true,
                    Some(Cp::Dynamic(_, nt)) => {
                        major >= 55
                            && cp
                                .name_and_type(*nt)
                                .map(|(_, d)| desc_slots(d) == 2)
                                .unwrap_or(false)
                    }
                    _ => false,
                };
                if !ok {
                    return bad_cp("ldc2_w");
                }
            }
            178..=181 => {
                if !matches!(cp.get(idx2()), Some(Cp::Fieldref(..))) {
                    return bad_cp("field access");
                }
            }
            182 => {
                if !matches!(cp.get(idx2()), Some(Cp::Methodref(..))) {
                    return bad_cp("invokevirtual");
                }
            }
            183 | 184 => {
                let ok = match cp.get(idx2()) {
                    Some(Cp::Methodref(..)) => true,
                    Some(Cp::InterfaceMethodref(..)) => major >= 52,
                    _ => false,
                };
                if !ok {
                    return bad_cp("invokespecial/invokestatic");
                }
            }
            185 => {
                if !matches!(cp.get(idx2()), Some(Cp::InterfaceMethodref(..))) {
                    return bad_cp("invokeinterface");
                }
                if code[pc + 4] != 0 {
                    return at(pc, "fourth operand byte of invokeinterface must be zero");
                }
            }
            186 => {
                if major < 51 || !matches!(cp.get(idx2()), Some(Cp::InvokeDynamic(..))) {
                    return bad_cp("invokedynamic");
                }
                if code[pc + 3] != 0 || code[pc + 4] != 0 {
                    return at(
                        pc,
                        "third and fourth operand bytes of invokedynamic must be zero",
                    );
                }
            }
            187 | 189 | 192 | 193 | 197 => {
                if !matches!(cp.get(idx2()), Some(Cp::Class(_))) {
                    return bad_cp("class operand");
                }
            }
            188 => {
                if !(4..=11).contains(&code[pc + 1]) {
                    return at(pc, "illegal newarray instruction");
                }
            }
            171 => {
                let base = (pc + 4) & !3;
                let n = be_i4(code, base + 4).unwrap_or(0).max(0) as usize;
                let mut prev: Option<i32> = None;
                for k in 0..n {
                    let key = be_i4(code, base + 8 + 8 * k).unwrap_or(0);
                    if prev.is_some_and(|p| key <= p) {
                        return at(pc, "bad lookupswitch instruction (keys not sorted)");
                    }
                    prev = Some(key);
                }
            }
            _ => {}
        }
        if matches!(op, 170 | 171) && major < 51 {
            for &b in &code[pc + 1..(pc + 4) & !3] {
                if b != 0 {
                    return at(pc, "nonzero padding bytes in switch");
                }
            }
        }
        let _ = n;
    }
    for e in &cx.code.exceptions {
        let (s, en, h) = (e.start as usize, e.end as usize, e.handler as usize);
        if !starts.get(s).copied().unwrap_or(false) || (en < code.len() && !starts[en]) {
            return Err((Some(s as u32), "illegal exception table range".into()));
        }
        if !starts.get(h).copied().unwrap_or(false) {
            return Err((Some(h as u32), "illegal exception table handler".into()));
        }
    }
    Ok(Scan { starts, insns })
}

fn parse_vtype<'a>(
    r: &mut Reader<'a>,
    cp: &ConstantPool<'a>,
    code: &[u8],
    starts: &[bool],
) -> Res<VType<'a>> {
    Ok(match r.u1()? {
        0 => VType::Top,
        1 => VType::Int,
        2 => VType::Float,
        3 => VType::Double,
        4 => VType::Long,
        5 => VType::Null,
        6 => VType::UninitThis,
        7 => VType::from_class_name(cp.class_name(r.u2()?)?),
        8 => {
            let off = r.u2()?;
            if !starts.get(off as usize).copied().unwrap_or(false) || code[off as usize] != 187 {
                return ferr(format!("StackMapTable: bad offset {off} for uninitialized"));
            }
            VType::Uninit(off)
        }
        t => return ferr(format!("StackMapTable: unknown verification type tag {t}")),
    })
}

fn push_local<'a>(locals: &mut Vec<VType<'a>>, t: VType<'a>) {
    let two = t.is_cat2();
    locals.push(t);
    if two {
        locals.push(VType::Top);
    }
}

/// Parse the StackMapTable into (offset, frame) pairs. `initial` is the implicit frame at offset 0.
fn parse_stackmap<'a>(
    data: &'a [u8],
    cp: &ConstantPool<'a>,
    code: &Code<'a>,
    starts: &[bool],
    initial: &Frame<'a>,
) -> Res<Vec<(usize, Frame<'a>)>> {
    let mut r = Reader::within(data, "StackMapTable");
    let n = r.u2()?;
    let max_locals = code.max_locals as usize;
    let mut out: Vec<(usize, Frame<'a>)> = Vec::with_capacity(n as usize);
    // locals as a list of types (cat2 counted once) for chop/append
    let mut prev_locals: Vec<VType<'a>> = {
        let mut v = Vec::new();
        let mut i = 0;
        while i < initial.locals.len() {
            let t = initial.locals[i].clone();
            i += t.size();
            v.push(t);
        }
        while v.last() == Some(&VType::Top) {
            v.pop();
        }
        v
    };
    let mut prev_off: i64 = -1;
    for fi in 0..n {
        let tag = r.u1()?;
        let (delta, stack): (u16, Vec<VType<'a>>) = match tag {
            0..=63 => (tag as u16, vec![]),
            64..=127 => (
                (tag - 64) as u16,
                vec![parse_vtype(&mut r, cp, code.code, starts)?],
            ),
            247 => {
                let d = r.u2()?;
                (d, vec![parse_vtype(&mut r, cp, code.code, starts)?])
            }
            248..=250 => {
                let d = r.u2()?;
                let k = (251 - tag) as usize;
                if k > prev_locals.len() {
                    return ferr(format!(
                        "StackMapTable: chop frame {fi} removes too many locals"
                    ));
                }
                prev_locals.truncate(prev_locals.len() - k);
                (d, vec![])
            }
            251 => (r.u2()?, vec![]),
            252..=254 => {
                let d = r.u2()?;
                for _ in 0..(tag - 251) {
                    prev_locals.push(parse_vtype(&mut r, cp, code.code, starts)?);
                }
                (d, vec![])
            }
            255 => {
                let d = r.u2()?;
                let nl = r.u2()?;
                prev_locals.clear();
                for _ in 0..nl {
                    prev_locals.push(parse_vtype(&mut r, cp, code.code, starts)?);
                }
                let ns = r.u2()?;
                let mut st = Vec::with_capacity(ns as usize);
                for _ in 0..ns {
                    st.push(parse_vtype(&mut r, cp, code.code, starts)?);
                }
                (d, st)
            }
            t => return ferr(format!("StackMapTable: reserved frame type {t}")),
        };
        let off = if fi == 0 {
            delta as i64
        } else {
            prev_off + delta as i64 + 1
        };
        if off as usize >= code.code.len() || !starts[off as usize] {
            return ferr(format!("StackMapTable error: bad offset {off}"));
        }
        prev_off = off;
        let mut locals = Vec::with_capacity(max_locals);
        for t in &prev_locals {
            push_local(&mut locals, t.clone());
        }
        if locals.len() > max_locals {
            return ferr(format!(
                "StackMapTable: frame at {off} has {} locals > max_locals {max_locals}",
                locals.len()
            ));
        }
        let this_uninit = locals.contains(&VType::UninitThis);
        locals.resize(max_locals, VType::Top);
        let stack_size: usize = stack.iter().map(|t| t.size()).sum();
        if stack_size > code.max_stack as usize {
            return ferr(format!(
                "StackMapTable: frame at {off} has stack size {stack_size} > max_stack {}",
                code.max_stack
            ));
        }
        out.push((
            off as usize,
            Frame {
                locals,
                stack,
                stack_size,
                this_uninit,
            },
        ));
    }
    if r.remaining() != 0 {
        return ferr("StackMapTable: wrong attribute size");
    }
    Ok(out)
}

struct Checker<'c, 'h, 'a> {
    cx: &'c MethodCtx<'c, 'h, 'a>,
    f: Frame<'a>,
    frames: Vec<(usize, Frame<'a>)>,
    frame_at: Vec<u32>,
    /// type inference (class files < 50, and the version-50 fallback) instead of type checking
    infer: bool,
    /// inference: (target, state) edges produced by the current instruction
    pending: std::cell::RefCell<Vec<(usize, Frame<'a>)>>,
    max_stack: usize,
    ret: Option<VType<'a>>, // None = void
    is_init: bool,
    args: Vec<&'a [u8]>,
}

const OBJECT: &[u8] = b"java/lang/Object";
const THROWABLE: &[u8] = b"java/lang/Throwable";

fn package_of(c: &[u8]) -> &[u8] {
    match c.iter().rposition(|&b| b == b'/') {
        Some(i) => &c[..i],
        None => b"",
    }
}

impl<'c, 'h, 'a> Checker<'c, 'h, 'a> {
    fn push(&mut self, pc: usize, t: VType<'a>) -> R<()> {
        self.f.stack_size += t.size();
        if self.f.stack_size > self.max_stack {
            return at(
                pc,
                format!(
                    "operand stack overflow: expected depth <= {}, found {}",
                    self.max_stack, self.f.stack_size
                ),
            );
        }
        self.f.stack.push(t);
        Ok(())
    }

    fn pop_any(&mut self, pc: usize) -> R<VType<'a>> {
        match self.f.stack.pop() {
            Some(t) => {
                self.f.stack_size -= t.size();
                Ok(t)
            }
            None => at(pc, "operand stack underflow"),
        }
    }

    fn pop(&mut self, pc: usize, want: &VType<'a>) -> R<VType<'a>> {
        let t = self.pop_any(pc)?;
        if !self.cx.hier.assignable(&t, want) {
            return at(
                pc,
                format!("bad type on operand stack: expected {want}, found {t}"),
            );
        }
        Ok(t)
    }

    fn pop_ref(&mut self, pc: usize) -> R<VType<'a>> {
        let t = self.pop_any(pc)?;
        if !t.is_reference_like() {
            return at(
                pc,
                format!("bad type on operand stack: expected reference, found {t}"),
            );
        }
        Ok(t)
    }

    fn pop_cat1(&mut self, pc: usize) -> R<VType<'a>> {
        let t = self.pop_any(pc)?;
        if t.is_cat2() {
            return at(
                pc,
                format!("bad type on operand stack: expected category 1 type, found {t}"),
            );
        }
        Ok(t)
    }

    fn get_local(&self, pc: usize, i: usize, want: &VType<'a>) -> R<VType<'a>> {
        let t = match self.f.locals.get(i) {
            Some(t) => t.clone(),
            None => return at(pc, format!("local variable index {i} out of range")),
        };
        let ok = match want {
            VType::Top => t.is_reference_like(), // used for aload
            w => &t == w,
        };
        if !ok {
            let w = if matches!(want, VType::Top) {
                "reference".to_string()
            } else {
                want.to_string()
            };
            return at(
                pc,
                format!("bad local variable type at {i}: expected {w}, found {t}"),
            );
        }
        if t.is_cat2() && self.f.locals.get(i + 1) != Some(&VType::Top) {
            return at(
                pc,
                format!("bad local variable type at {}: expected top", i + 1),
            );
        }
        Ok(t)
    }

    fn set_local(&mut self, pc: usize, i: usize, t: VType<'a>) -> R<()> {
        let two = t.is_cat2();
        if i + two as usize >= self.f.locals.len() {
            return at(pc, format!("local variable index {i} out of range"));
        }
        if i > 0 && self.f.locals[i - 1].is_cat2() {
            self.f.locals[i - 1] = VType::Top;
        }
        if !two && self.f.locals.get(i).is_some_and(|x| x.is_cat2()) {
            if let Some(n) = self.f.locals.get_mut(i + 1) {
                *n = VType::Top;
            }
        }
        if two {
            if self.f.locals.get(i + 1).is_some_and(|x| x.is_cat2()) {
                if let Some(n) = self.f.locals.get_mut(i + 2) {
                    *n = VType::Top;
                }
            }
            self.f.locals[i + 1] = VType::Top;
        }
        self.f.locals[i] = t;
        Ok(())
    }

    /// Is `cur` assignable to stack map frame `target`? (HotSpot `StackMapFrame::is_assignable_to`.)
    fn frame_assignable(&self, cur: &Frame<'a>, target: &Frame<'a>) -> Result<(), String> {
        let h = self.cx.hier;
        for (i, (a, b)) in cur.locals.iter().zip(target.locals.iter()).enumerate() {
            if !h.assignable(a, b) {
                return Err(format!("local {i}: expected {b}, found {a}"));
            }
        }
        if cur.stack.len() != target.stack.len() || cur.stack_size != target.stack_size {
            return Err(format!(
                "stack size mismatch: expected {}, found {}",
                target.stack_size, cur.stack_size
            ));
        }
        for (i, (a, b)) in cur.stack.iter().zip(target.stack.iter()).enumerate() {
            if !h.assignable(a, b) {
                return Err(format!("stack {i}: expected {b}, found {a}"));
            }
        }
        if cur.this_uninit && !target.this_uninit {
            return Err("flags: expected initialized this, found flagThisUninit".into());
        }
        Ok(())
    }

    fn frame_index(&self, target: usize) -> Option<usize> {
        match self.frame_at.get(target) {
            Some(&i) if i != u32::MAX => Some(i as usize),
            _ => None,
        }
    }

    fn check_jump(&self, pc: usize, target: usize) -> R<()> {
        if self.infer {
            self.pending.borrow_mut().push((target, self.f.clone()));
            return Ok(());
        }
        let Some(fi) = self.frame_index(target) else {
            return at(
                pc,
                format!("expected a stack map frame at branch target {target}, found none"),
            );
        };
        if let Err(e) = self.frame_assignable(&self.f, &self.frames[fi].1) {
            return at(pc, format!("branch to {target}: frame mismatch: {e}"));
        }
        Ok(())
    }

    fn check_handlers(&self, pc: usize, frame: &Frame<'a>, this_uninit: bool) -> R<()> {
        let h = self.cx.hier;
        for e in &self.cx.code.exceptions {
            if pc >= e.start as usize && pc < e.end as usize {
                let catch = if e.catch_type == 0 {
                    VType::Ref(Name::B(THROWABLE))
                } else {
                    match self.cx.cf.cp.class_name(e.catch_type) {
                        Ok(n) => VType::from_class_name(n),
                        Err(m) => return at(pc, m.0),
                    }
                };
                if self.infer {
                    let hf = Frame {
                        locals: frame.locals.clone(),
                        stack: vec![catch],
                        stack_size: 1,
                        this_uninit: frame.this_uninit || this_uninit,
                    };
                    self.pending.borrow_mut().push((e.handler as usize, hf));
                    continue;
                }
                let hp = e.handler as usize;
                let Some(fi) = self.frame_index(hp) else {
                    return at(
                        pc,
                        format!("expected a stack map frame at exception handler {hp}, found none"),
                    );
                };
                let target = &self.frames[fi].1;
                let mismatch = |m: String| {
                    at(
                        pc,
                        format!("stack map does not match the one at exception handler {hp}: {m}"),
                    )
                };
                for (i, (a, b)) in frame.locals.iter().zip(target.locals.iter()).enumerate() {
                    if !h.assignable(a, b) {
                        return mismatch(format!("local {i}: expected {b}, found {a}"));
                    }
                }
                if target.stack.len() != 1 || target.stack_size != 1 {
                    return mismatch(format!(
                        "stack size mismatch: expected {}, found 1",
                        target.stack_size
                    ));
                }
                if !h.assignable(&catch, &target.stack[0]) {
                    return mismatch(format!(
                        "stack 0: expected {}, found {catch}",
                        target.stack[0]
                    ));
                }
                if (frame.this_uninit || this_uninit) && !target.this_uninit {
                    return mismatch(
                        "flags: expected initialized this, found flagThisUninit".into(),
                    );
                }
            }
        }
        Ok(())
    }

    /// HotSpot `ClassVerifier::ends_in_athrow`: all code paths from `start` end in athrow (or loop).
    /// Handlers of try blocks met on the way are scanned too.
    fn ends_in_athrow(&self, start: usize) -> bool {
        let code = self.cx.code.code;
        let len = code.len();
        let mut bci_stack: Vec<usize> = Vec::new();
        let mut handler_stack: Vec<usize> = Vec::new();
        let mut handler_list: Vec<usize> = Vec::new();
        let mut visited: Vec<usize> = Vec::new();
        let mut tg = Vec::new();
        let mut pc = start;
        for _ in 0..1_000_000 {
            if pc >= len {
                return false;
            }
            let Some(n) = insn_len(code, pc) else {
                return false;
            };
            let next = pc + n;
            for e in &self.cx.code.exceptions {
                if pc >= e.start as usize && pc < e.end as usize {
                    let h = e.handler as usize;
                    if !handler_list.contains(&h) {
                        if !handler_stack.contains(&h) {
                            handler_stack.push(h);
                        }
                        handler_list.push(h);
                    }
                }
            }
            let op = code[pc];
            match op {
                153..=166 | 198 | 199 | 167 | 200 => {
                    branch_targets(code, pc, &mut tg);
                    let target = tg.first().copied().unwrap_or(-1);
                    if visited.contains(&pc) {
                        match bci_stack.pop() {
                            None => return true,
                            Some(b) => pc = b,
                        }
                    } else {
                        visited.push(pc);
                        if target < 0 || target as usize >= len {
                            return false;
                        }
                        let target = target as usize;
                        if matches!(op, 167 | 200) {
                            pc = target;
                        } else if target > pc {
                            bci_stack.push(target);
                            pc = next;
                        } else {
                            bci_stack.push(next);
                            pc = target;
                        }
                    }
                }
                170 | 171 => {
                    branch_targets(code, pc, &mut tg);
                    bci_stack.push(next);
                    for &t in &tg[1..] {
                        if t < 0 || t as usize > len {
                            return false;
                        }
                        bci_stack.push(t as usize);
                    }
                    match tg.first() {
                        Some(&d) if d >= 0 && d as usize <= len => pc = d as usize,
                        _ => return false,
                    }
                }
                177 => return false,
                191 => match bci_stack.pop() {
                    Some(b) => pc = b,
                    None => match handler_stack.pop() {
                        Some(h) => pc = h,
                        None => return true,
                    },
                },
                _ => pc = next,
            }
        }
        false
    }

    fn ldc_type(&self, pc: usize, i: u16) -> R<VType<'a>> {
        Ok(match self.cx.cf.cp.get(i) {
            Some(Cp::Integer) => VType::Int,
            Some(Cp::Float) => VType::Float,
            Some(Cp::Long) => VType::Long,
            Some(Cp::Double) => VType::Double,
            Some(Cp::String(_)) => VType::Ref(Name::B(b"java/lang/String")),
            Some(Cp::Class(_)) => VType::Ref(Name::B(b"java/lang/Class")),
            Some(Cp::MethodType(_)) => VType::Ref(Name::B(b"java/lang/invoke/MethodType")),
            Some(Cp::MethodHandle(..)) => VType::Ref(Name::B(b"java/lang/invoke/MethodHandle")),
            Some(Cp::Dynamic(_, nt)) => match self.cx.cf.cp.name_and_type(*nt) {
                Ok((_, d)) => VType::from_desc(d),
                Err(e) => return at(pc, e.0),
            },
            _ => return at(pc, "bad ldc constant"),
        })
    }

    fn class_at(&self, pc: usize) -> R<&'a [u8]> {
        let i = be_u2(self.cx.code.code, pc + 1).unwrap_or(0);
        self.cx
            .cf
            .cp
            .class_name(i)
            .map_err(|e| (Some(pc as u32), e.0))
    }

    fn array_load(&mut self, pc: usize, elem: &[&[u8]], push: VType<'a>) -> R<()> {
        self.pop(pc, &VType::Int)?;
        let a = self.pop_ref(pc)?;
        let ok = match &a {
            VType::Null => true,
            VType::Ref(n) => elem.iter().any(|e| n.bytes() == *e),
            _ => false,
        };
        if !ok {
            return at(
                pc,
                format!(
                    "bad type on operand stack in array load: expected {}, found {a}",
                    mutf8_to_string(elem[0])
                ),
            );
        }
        self.push(pc, push)
    }

    fn array_store(&mut self, pc: usize, elem: &[&[u8]], val: VType<'a>) -> R<()> {
        self.pop(pc, &val)?;
        self.pop(pc, &VType::Int)?;
        let a = self.pop_ref(pc)?;
        let ok = match &a {
            VType::Null => true,
            VType::Ref(n) => elem.iter().any(|e| n.bytes() == *e),
            _ => false,
        };
        if !ok {
            return at(
                pc,
                format!(
                    "bad type on operand stack in array store: expected {}, found {a}",
                    mutf8_to_string(elem[0])
                ),
            );
        }
        Ok(())
    }

    /// Protected-member check (JVMS §4.10.1.8) where the hierarchy can answer it.
    fn protected_check(
        &self,
        pc: usize,
        ref_class: &[u8],
        name: &[u8],
        desc: &[u8],
        is_method: bool,
        obj: &VType<'a>,
    ) -> R<()> {
        let h = self.cx.hier;
        if let VType::Ref(n) = obj {
            if n.bytes() == self.cx.cf.this_class {
                return Ok(());
            }
        }
        // the referenced class must be a proper superclass of the current class
        if ref_class == self.cx.cf.this_class {
            return Ok(());
        }
        let mut cur = self.cx.cf.this_class.to_vec();
        let mut in_supers = false;
        for _ in 0..256 {
            match h.super_of(&cur) {
                Some(s) => {
                    if s == ref_class {
                        in_supers = true;
                        break;
                    }
                    cur = s;
                }
                None => break,
            }
        }
        if !in_supers {
            return Ok(());
        }
        let Some((holder, access)) = h.h.find_member(
            &mutf8_to_string(ref_class),
            &mutf8_to_string(name),
            &mutf8_to_string(desc),
            is_method,
        ) else {
            return Ok(());
        };
        if access & ACC_PROTECTED == 0
            || package_of(holder.as_bytes()) == package_of(self.cx.cf.this_class)
        {
            return Ok(());
        }
        let this_t = VType::Ref(Name::B(self.cx.cf.this_class));
        if !h.assignable(obj, &this_t) {
            if is_method
                && ref_class == OBJECT
                && name == b"clone"
                && matches!(obj, VType::Ref(n) if n.is_array())
            {
                return Ok(());
            }
            return at(
                pc,
                format!("bad access to protected data: expected {this_t}, found {obj}"),
            );
        }
        Ok(())
    }

    fn init_object(&mut self, from: &VType<'a>, to: VType<'a>) {
        for t in self.f.locals.iter_mut().chain(self.f.stack.iter_mut()) {
            if t == from {
                *t = to.clone();
            }
        }
        if matches!(from, VType::UninitThis) {
            self.f.this_uninit = false;
        }
    }

    fn invoke(&mut self, pc: usize, op: u8, in_try: bool, this_uninit: &mut bool) -> R<()> {
        let code = self.cx.code.code;
        let cp = &self.cx.cf.cp;
        let idx = be_u2(code, pc + 1).unwrap_or(0);
        let (tag, cls, name, desc) = if op == 186 {
            let Some(Cp::InvokeDynamic(_, nt)) = cp.get(idx) else {
                return at(pc, "bad invokedynamic");
            };
            let (n, d) = cp.name_and_type(*nt).map_err(|e| (Some(pc as u32), e.0))?;
            (18, &b""[..], n, d)
        } else {
            cp.member_ref(idx).map_err(|e| (Some(pc as u32), e.0))?
        };
        let _ = tag;
        let mut args = std::mem::take(&mut self.args);
        args.clear();
        let Some(ret) = split_method_desc_into(desc, &mut args) else {
            return at(pc, "bad method descriptor");
        };
        let r = self.invoke_with(
            pc,
            op,
            in_try,
            this_uninit,
            idx,
            cls,
            name,
            desc,
            &args,
            ret,
        );
        self.args = args;
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn invoke_with(
        &mut self,
        pc: usize,
        op: u8,
        in_try: bool,
        this_uninit: &mut bool,
        idx: u16,
        cls: &'a [u8],
        name: &'a [u8],
        desc: &'a [u8],
        args: &[&'a [u8]],
        ret: &'a [u8],
    ) -> R<()> {
        let code = self.cx.code.code;
        let cp = &self.cx.cf.cp;
        if op == 186 && name.first() == Some(&b'<') {
            return at(pc, "illegal invokedynamic name");
        }
        if name.first() == Some(&b'<') && (op != 183 || name != b"<init>") {
            return at(
                pc,
                format!("illegal call to internal method {}", mutf8_to_string(name)),
            );
        }
        if op == 185 {
            let count = code[pc + 3] as usize;
            let need = 1 + args.iter().map(|a| desc_slots(a)).sum::<usize>();
            if count != need {
                return at(pc, format!("inconsistent args count operand in invokeinterface: expected {need}, found {count}"));
            }
        }
        let this_cls = self.cx.cf.this_class;
        if op == 183 && name != b"<init>" {
            let direct_iface = self.cx.cf.interfaces.contains(&cls);
            let is_super = self.cx.cf.super_class == Some(cls);
            if cls != this_cls && !direct_iface && !is_super {
                let sub = self
                    .cx
                    .hier
                    .assignable(&VType::Ref(Name::B(this_cls)), &VType::Ref(Name::B(cls)));
                if !sub {
                    return at(pc, "bad invokespecial instruction: current class isn't assignable to reference class");
                }
                if matches!(cp.get(idx), Some(Cp::InterfaceMethodref(..))) {
                    return at(pc, "bad invokespecial instruction: interface method reference is in an indirect superinterface");
                }
            }
        }
        for a in args.iter().rev() {
            let t = VType::from_desc(a);
            self.pop(pc, &t)?;
        }
        let ref_t = VType::Ref(Name::B(cls));
        match op {
            183 if name == b"<init>" => {
                if ret != b"V" {
                    return at(pc, "<init> must return void");
                }
                let t = self.pop_ref(pc)?;
                match t {
                    VType::UninitThis => {
                        if cls != this_cls && Some(cls) != self.cx.cf.super_class {
                            return at(pc, format!("bad <init> method call: expected {} or its superclass, found {ref_t}", VType::Ref(Name::B(this_cls))));
                        }
                        if in_try && !self.infer {
                            for e in &self.cx.code.exceptions {
                                if pc >= e.start as usize && pc < e.end as usize && !self.ends_in_athrow(e.handler as usize) {
                                    return at(pc, "bad <init> method call from after the start of a try block");
                                }
                            }
                            self.check_handlers(pc, &self.f, true)?;
                        }
                        self.init_object(&VType::UninitThis, VType::Ref(Name::B(this_cls)));
                        *this_uninit = true;
                    }
                    VType::Uninit(off) => {
                        let ni = be_u2(code, off as usize + 1).unwrap_or(0);
                        let new_cls = cp.class_name(ni).map_err(|e| (Some(pc as u32), e.0))?;
                        if new_cls != cls {
                            return at(pc, format!("call to wrong <init> method: expected {}, found {ref_t}", VType::Ref(Name::B(new_cls))));
                        }
                        self.protected_check(pc, cls, name, desc, true, &VType::Ref(Name::B(new_cls)))?;
                        if in_try {
                            self.check_handlers(pc, &self.f, *this_uninit)?;
                        }
                        self.init_object(&VType::Uninit(off), VType::Ref(Name::B(new_cls)));
                    }
                    t => return at(pc, format!("bad operand type when invoking <init>: expected uninitialized, found {t}")),
                }
            }
            183 => {
                self.pop(pc, &VType::Ref(Name::B(this_cls)))?;
            }
            182 => {
                let obj = self.pop(pc, &ref_t)?;
                self.protected_check(pc, cls, name, desc, true, &obj)?;
            }
            185 => {
                self.pop(pc, &ref_t)?;
            }
            _ => {}
        }
        if ret != b"V" {
            self.push(pc, VType::from_desc(ret))?;
        }
        Ok(())
    }

    fn field(&mut self, pc: usize, op: u8) -> R<()> {
        let idx = be_u2(self.cx.code.code, pc + 1).unwrap_or(0);
        let (_, cls, name, desc) = self
            .cx
            .cf
            .cp
            .member_ref(idx)
            .map_err(|e| (Some(pc as u32), e.0))?;
        let ft = VType::from_desc(desc);
        let ref_t = VType::Ref(Name::B(cls));
        match op {
            178 => self.push(pc, ft)?,
            179 => {
                self.pop(pc, &ft)?;
            }
            180 => {
                let obj = self.pop(pc, &ref_t)?;
                self.protected_check(pc, cls, name, desc, false, &obj)?;
                self.push(pc, ft)?;
            }
            _ => {
                self.pop(pc, &ft)?;
                let mut obj = self.pop_any(pc)?;
                let this_cls = self.cx.cf.this_class;
                if obj == VType::UninitThis
                    && cls == this_cls
                    && self
                        .cx
                        .cf
                        .fields
                        .iter()
                        .any(|f| f.name == name && f.desc == desc)
                {
                    obj = VType::Ref(Name::B(this_cls));
                }
                if !self.cx.hier.assignable(&obj, &ref_t) {
                    return at(
                        pc,
                        format!(
                            "bad type on operand stack in putfield: expected {ref_t}, found {obj}"
                        ),
                    );
                }
                self.protected_check(pc, cls, name, desc, false, &obj)?;
            }
        }
        Ok(())
    }

    fn ret_check(&mut self, pc: usize, want: Option<VType<'a>>) -> R<()> {
        match (&self.ret, want) {
            (None, None) => {
                if self.is_init && self.f.this_uninit {
                    return at(pc, "constructor must call super() or this() before return");
                }
                Ok(())
            }
            (None, Some(_)) => at(pc, "method does not expect a return value"),
            (Some(_), None) => at(pc, "method expects a return value"),
            (Some(r), Some(w)) => {
                let r = r.clone();
                let t = if matches!(w, VType::Top) {
                    self.pop_ref(pc)?
                } else {
                    self.pop(pc, &w)?
                };
                if !self.cx.hier.assignable(&t, &r) {
                    return at(pc, format!("bad return type: expected {r}, found {t}"));
                }
                Ok(())
            }
        }
    }

    /// Execute one instruction; returns true if control can fall through to the next one.
    fn step(&mut self, pc: usize, in_try: bool, this_uninit: &mut bool) -> R<bool> {
        use VType::*;
        let code = self.cx.code.code;
        let op = code[pc];
        let u1 = |k: usize| code.get(pc + k).copied().unwrap_or(0) as usize;
        let mut targets = Vec::new();
        match op {
            0 => {}
            1 => self.push(pc, Null)?,
            2..=8 | 16 | 17 => self.push(pc, Int)?,
            9 | 10 => self.push(pc, Long)?,
            11..=13 => self.push(pc, Float)?,
            14 | 15 => self.push(pc, Double)?,
            18..=20 => {
                let i = if op == 18 {
                    code[pc + 1] as u16
                } else {
                    be_u2(code, pc + 1).unwrap_or(0)
                };
                let t = self.ldc_type(pc, i)?;
                self.push(pc, t)?;
            }
            21 => {
                self.get_local(pc, u1(1), &Int)?;
                self.push(pc, Int)?
            }
            22 => {
                self.get_local(pc, u1(1), &Long)?;
                self.push(pc, Long)?
            }
            23 => {
                self.get_local(pc, u1(1), &Float)?;
                self.push(pc, Float)?
            }
            24 => {
                self.get_local(pc, u1(1), &Double)?;
                self.push(pc, Double)?
            }
            25 => {
                let t = self.get_local(pc, u1(1), &Top)?;
                self.push(pc, t)?
            }
            26..=45 => {
                let k = (op - 26) as usize;
                let want = [Int, Long, Float, Double, Top][k / 4].clone();
                let t = self.get_local(pc, k % 4, &want)?;
                self.push(pc, t)?
            }
            46 => self.array_load(pc, &[b"[I"], Int)?,
            47 => self.array_load(pc, &[b"[J"], Long)?,
            48 => self.array_load(pc, &[b"[F"], Float)?,
            49 => self.array_load(pc, &[b"[D"], Double)?,
            50 => {
                self.pop(pc, &Int)?;
                let a = self.pop_ref(pc)?;
                let t = match &a {
                    Null => Null,
                    Ref(n) if n.bytes().len() > 1 && matches!(n.bytes()[1], b'L' | b'[') => match n {
                        Name::B(b) => VType::from_desc(&b[1..]),
                        Name::O(o) => {
                            let b = &o[1..];
                            if b[0] == b'L' {
                                Ref(Name::O(Rc::from(&b[1..b.len() - 1])))
                            } else {
                                Ref(Name::O(Rc::from(b)))
                            }
                        }
                    },
                    _ => return at(pc, format!("bad type on operand stack in aaload: expected reference array, found {a}")),
                };
                self.push(pc, t)?;
            }
            51 => self.array_load(pc, &[b"[B", b"[Z"], Int)?,
            52 => self.array_load(pc, &[b"[C"], Int)?,
            53 => self.array_load(pc, &[b"[S"], Int)?,
            54 => {
                self.pop(pc, &Int)?;
                self.set_local(pc, u1(1), Int)?
            }
            55 => {
                self.pop(pc, &Long)?;
                self.set_local(pc, u1(1), Long)?
            }
            56 => {
                self.pop(pc, &Float)?;
                self.set_local(pc, u1(1), Float)?
            }
            57 => {
                self.pop(pc, &Double)?;
                self.set_local(pc, u1(1), Double)?
            }
            58 => {
                let t = self.pop_ref(pc)?;
                self.set_local(pc, u1(1), t)?
            }
            59..=78 => {
                let k = (op - 59) as usize;
                let t = match k / 4 {
                    4 => self.pop_ref(pc)?,
                    j => self.pop(pc, &[Int, Long, Float, Double][j].clone())?,
                };
                self.set_local(pc, k % 4, t)?
            }
            79 => self.array_store(pc, &[b"[I"], Int)?,
            80 => self.array_store(pc, &[b"[J"], Long)?,
            81 => self.array_store(pc, &[b"[F"], Float)?,
            82 => self.array_store(pc, &[b"[D"], Double)?,
            83 => {
                let obj = Ref(Name::B(OBJECT));
                self.pop(pc, &obj)?;
                self.pop(pc, &Int)?;
                let a = self.pop_ref(pc)?;
                let ok = match &a {
                    Null => true,
                    Ref(n) => n.bytes().len() > 1 && matches!(n.bytes()[1], b'L' | b'['),
                    _ => false,
                };
                if !ok {
                    return at(pc, format!("bad type on operand stack in aastore: expected reference array, found {a}"));
                }
            }
            84 => self.array_store(pc, &[b"[B", b"[Z"], Int)?,
            85 => self.array_store(pc, &[b"[C"], Int)?,
            86 => self.array_store(pc, &[b"[S"], Int)?,
            87 => {
                self.pop_cat1(pc)?;
            }
            88 => {
                let t = self.pop_any(pc)?;
                if !t.is_cat2() {
                    self.pop_cat1(pc)?;
                }
            }
            89 => {
                let t = self.pop_cat1(pc)?;
                self.push(pc, t.clone())?;
                self.push(pc, t)?;
            }
            90 => {
                let a = self.pop_cat1(pc)?;
                let b = self.pop_cat1(pc)?;
                self.push(pc, a.clone())?;
                self.push(pc, b)?;
                self.push(pc, a)?;
            }
            91 => {
                let a = self.pop_cat1(pc)?;
                let b = self.pop_any(pc)?;
                if b.is_cat2() {
                    self.push(pc, a.clone())?;
                    self.push(pc, b)?;
                    self.push(pc, a)?;
                } else {
                    let c = self.pop_cat1(pc)?;
                    self.push(pc, a.clone())?;
                    self.push(pc, c)?;
                    self.push(pc, b)?;
                    self.push(pc, a)?;
                }
            }
            92 => {
                let a = self.pop_any(pc)?;
                if a.is_cat2() {
                    self.push(pc, a.clone())?;
                    self.push(pc, a)?;
                } else {
                    let b = self.pop_cat1(pc)?;
                    self.push(pc, b.clone())?;
                    self.push(pc, a.clone())?;
                    self.push(pc, b)?;
                    self.push(pc, a)?;
                }
            }
            93 => {
                let a = self.pop_any(pc)?;
                if a.is_cat2() {
                    let b = self.pop_cat1(pc)?;
                    self.push(pc, a.clone())?;
                    self.push(pc, b)?;
                    self.push(pc, a)?;
                } else {
                    let b = self.pop_cat1(pc)?;
                    let c = self.pop_cat1(pc)?;
                    self.push(pc, b.clone())?;
                    self.push(pc, a.clone())?;
                    self.push(pc, c)?;
                    self.push(pc, b)?;
                    self.push(pc, a)?;
                }
            }
            94 => {
                let a = self.pop_any(pc)?;
                if a.is_cat2() {
                    let b = self.pop_any(pc)?;
                    if b.is_cat2() {
                        self.push(pc, a.clone())?;
                        self.push(pc, b)?;
                        self.push(pc, a)?;
                    } else {
                        let c = self.pop_cat1(pc)?;
                        self.push(pc, a.clone())?;
                        self.push(pc, c)?;
                        self.push(pc, b)?;
                        self.push(pc, a)?;
                    }
                } else {
                    let b = self.pop_cat1(pc)?;
                    let c = self.pop_any(pc)?;
                    if c.is_cat2() {
                        self.push(pc, b.clone())?;
                        self.push(pc, a.clone())?;
                        self.push(pc, c)?;
                        self.push(pc, b)?;
                        self.push(pc, a)?;
                    } else {
                        let d = self.pop_cat1(pc)?;
                        self.push(pc, b.clone())?;
                        self.push(pc, a.clone())?;
                        self.push(pc, d)?;
                        self.push(pc, c)?;
                        self.push(pc, b)?;
                        self.push(pc, a)?;
                    }
                }
            }
            95 => {
                let a = self.pop_cat1(pc)?;
                let b = self.pop_cat1(pc)?;
                self.push(pc, a)?;
                self.push(pc, b)?;
            }
            96..=115 => {
                let t = [Int, Long, Float, Double][((op - 96) % 4) as usize].clone();
                self.pop(pc, &t)?;
                self.pop(pc, &t)?;
                self.push(pc, t)?;
            }
            116..=119 => {
                let t = [Int, Long, Float, Double][(op - 116) as usize].clone();
                self.pop(pc, &t)?;
                self.push(pc, t)?;
            }
            120..=125 => {
                let t = if op.is_multiple_of(2) { Int } else { Long };
                self.pop(pc, &Int)?;
                self.pop(pc, &t)?;
                self.push(pc, t)?;
            }
            126..=131 => {
                let t = if op.is_multiple_of(2) { Int } else { Long };
                self.pop(pc, &t)?;
                self.pop(pc, &t)?;
                self.push(pc, t)?;
            }
            132 => {
                self.get_local(pc, u1(1), &Int)?;
            }
            133..=147 => {
                let (from, to) = match op {
                    133 => (Int, Long),
                    134 => (Int, Float),
                    135 => (Int, Double),
                    136 => (Long, Int),
                    137 => (Long, Float),
                    138 => (Long, Double),
                    139 => (Float, Int),
                    140 => (Float, Long),
                    141 => (Float, Double),
                    142 => (Double, Int),
                    143 => (Double, Long),
                    144 => (Double, Float),
                    _ => (Int, Int),
                };
                self.pop(pc, &from)?;
                self.push(pc, to)?;
            }
            148..=152 => {
                let t = match op {
                    148 => Long,
                    149 | 150 => Float,
                    _ => Double,
                };
                self.pop(pc, &t)?;
                self.pop(pc, &t)?;
                self.push(pc, Int)?;
            }
            153..=158 | 159..=164 | 165 | 166 | 198 | 199 => {
                match op {
                    153..=158 => {
                        self.pop(pc, &Int)?;
                    }
                    159..=164 => {
                        self.pop(pc, &Int)?;
                        self.pop(pc, &Int)?;
                    }
                    165 | 166 => {
                        self.pop_ref(pc)?;
                        self.pop_ref(pc)?;
                    }
                    _ => {
                        self.pop_ref(pc)?;
                    }
                }
                branch_targets(code, pc, &mut targets);
                self.check_jump(pc, targets[0] as usize)?;
            }
            167 | 200 => {
                branch_targets(code, pc, &mut targets);
                self.check_jump(pc, targets[0] as usize)?;
                return Ok(false);
            }
            168 | 169 | 201 => {
                return at(pc, "jsr/ret not supported by the type-checking verifier")
            }
            170 | 171 => {
                self.pop(pc, &Int)?;
                branch_targets(code, pc, &mut targets);
                for &t in &targets {
                    self.check_jump(pc, t as usize)?;
                }
                return Ok(false);
            }
            172 => {
                self.ret_check(pc, Some(Int))?;
                return Ok(false);
            }
            173 => {
                self.ret_check(pc, Some(Long))?;
                return Ok(false);
            }
            174 => {
                self.ret_check(pc, Some(Float))?;
                return Ok(false);
            }
            175 => {
                self.ret_check(pc, Some(Double))?;
                return Ok(false);
            }
            176 => {
                self.ret_check(pc, Some(Top))?;
                return Ok(false);
            }
            177 => {
                self.ret_check(pc, None)?;
                return Ok(false);
            }
            178..=181 => self.field(pc, op)?,
            182..=186 => self.invoke(pc, op, in_try, this_uninit)?,
            187 => {
                let c = self.class_at(pc)?;
                if c.first() == Some(&b'[') {
                    return at(pc, "illegal new instruction: array class");
                }
                self.push(pc, Uninit(pc as u16))?;
            }
            188 => {
                self.pop(pc, &Int)?;
                let d: &'static [u8] = match code[pc + 1] {
                    4 => b"[Z",
                    5 => b"[C",
                    6 => b"[F",
                    7 => b"[D",
                    8 => b"[B",
                    9 => b"[S",
                    10 => b"[I",
                    _ => b"[J",
                };
                self.push(pc, Ref(Name::B(d)))?;
            }
            189 => {
                let c = self.class_at(pc)?;
                self.pop(pc, &Int)?;
                let mut v = Vec::with_capacity(c.len() + 3);
                v.push(b'[');
                if c.first() == Some(&b'[') {
                    v.extend_from_slice(c);
                } else {
                    v.push(b'L');
                    v.extend_from_slice(c);
                    v.push(b';');
                }
                if v.iter().take_while(|&&b| b == b'[').count() > 255 {
                    return at(
                        pc,
                        "illegal anewarray instruction, array has more than 255 dimensions",
                    );
                }
                self.push(pc, Ref(Name::O(Rc::from(v))))?;
            }
            190 => {
                let a = self.pop_ref(pc)?;
                let ok = matches!(&a, Null) || matches!(&a, Ref(n) if n.is_array());
                if !ok {
                    return at(
                        pc,
                        format!(
                            "bad type on operand stack in arraylength: expected array, found {a}"
                        ),
                    );
                }
                self.push(pc, Int)?;
            }
            191 => {
                self.pop(pc, &Ref(Name::B(THROWABLE)))?;
                return Ok(false);
            }
            192 | 193 => {
                let c = self.class_at(pc)?;
                self.pop(pc, &Ref(Name::B(OBJECT)))?;
                if op == 192 {
                    self.push(pc, VType::from_class_name(c))?;
                } else {
                    self.push(pc, Int)?;
                }
            }
            194 | 195 => {
                self.pop_ref(pc)?;
            }
            196 => {
                let w = code[pc + 1];
                let i = be_u2(code, pc + 2).unwrap_or(0) as usize;
                match w {
                    21 => {
                        self.get_local(pc, i, &Int)?;
                        self.push(pc, Int)?
                    }
                    22 => {
                        self.get_local(pc, i, &Long)?;
                        self.push(pc, Long)?
                    }
                    23 => {
                        self.get_local(pc, i, &Float)?;
                        self.push(pc, Float)?
                    }
                    24 => {
                        self.get_local(pc, i, &Double)?;
                        self.push(pc, Double)?
                    }
                    25 => {
                        let t = self.get_local(pc, i, &Top)?;
                        self.push(pc, t)?
                    }
                    54 => {
                        self.pop(pc, &Int)?;
                        self.set_local(pc, i, Int)?
                    }
                    55 => {
                        self.pop(pc, &Long)?;
                        self.set_local(pc, i, Long)?
                    }
                    56 => {
                        self.pop(pc, &Float)?;
                        self.set_local(pc, i, Float)?
                    }
                    57 => {
                        self.pop(pc, &Double)?;
                        self.set_local(pc, i, Double)?
                    }
                    58 => {
                        let t = self.pop_ref(pc)?;
                        self.set_local(pc, i, t)?
                    }
                    132 => {
                        self.get_local(pc, i, &Int)?;
                    }
                    _ => return at(pc, "bad wide instruction"),
                }
            }
            197 => {
                let c = self.class_at(pc)?;
                let dims = code[pc + 3] as usize;
                let cdims = c.iter().take_while(|&&b| b == b'[').count();
                if cdims == 0 {
                    return at(
                        pc,
                        "illegal constant pool index in multianewarray instruction",
                    );
                }
                if dims < 1 || cdims < dims {
                    return at(
                        pc,
                        format!("illegal dimension in multianewarray instruction: {dims}"),
                    );
                }
                for _ in 0..dims {
                    self.pop(pc, &Int)?;
                }
                self.push(pc, VType::from_class_name(c))?;
            }
            _ => return at(pc, format!("bad instruction (opcode {op})")),
        }
        Ok(true)
    }

    fn run(&mut self, insns: &[(u32, u32)]) -> R<()> {
        let code = self.cx.code.code;
        let (ex_min, ex_max) = self
            .cx
            .code
            .exceptions
            .iter()
            .fold((usize::MAX, 0usize), |(a, b), e| {
                (a.min(e.start as usize), b.max(e.end as usize))
            });
        // catch types must be Throwable subclasses
        for e in &self.cx.code.exceptions {
            if e.catch_type != 0 {
                let n = self
                    .cx
                    .cf
                    .cp
                    .class_name(e.catch_type)
                    .map_err(|m| (None, m.0))?;
                if !self
                    .cx
                    .hier
                    .assignable(&VType::from_class_name(n), &VType::Ref(Name::B(THROWABLE)))
                {
                    return Err((
                        Some(e.handler as u32),
                        format!(
                            "catch type is not a subclass of Throwable: found {}",
                            mutf8_to_string(n)
                        ),
                    ));
                }
            }
        }
        let mut fi = 0usize;
        let mut no_flow = false;
        for &(ipc, _) in insns {
            let pc = ipc as usize;
            // stack map frame at this instruction?
            if fi < self.frames.len() {
                let off = self.frames[fi].0;
                if no_flow && off > pc {
                    return at(
                        pc,
                        "expected a stack map frame after unconditional branch, found none",
                    );
                }
                if off == pc {
                    if !no_flow {
                        if let Err(m) = self.frame_assignable(&self.f, &self.frames[fi].1) {
                            return at(
                                pc,
                                format!("instruction type does not match stack map: {m}"),
                            );
                        }
                    }
                    let src = &self.frames[fi].1;
                    self.f.locals.clone_from(&src.locals);
                    self.f.stack.clone_from(&src.stack);
                    self.f.stack_size = src.stack_size;
                    self.f.this_uninit = src.this_uninit;
                    fi += 1;
                }
            } else if no_flow {
                return at(
                    pc,
                    "expected a stack map frame after unconditional branch, found none",
                );
            }
            let op = code[pc];
            let in_try = pc >= ex_min && pc < ex_max;
            let is_store =
                matches!(op, 54..=78) || (op == 196 && matches!(code.get(pc + 1), Some(54..=58)));
            let mut verified = false;
            let mut this_uninit = false;
            if is_store && in_try {
                self.check_handlers(pc, &self.f, false)?;
                verified = true;
            }
            let flows = self.step(pc, in_try, &mut this_uninit)?;
            if !verified && in_try {
                self.check_handlers(pc, &self.f, this_uninit)?;
            }
            no_flow = !flows;
        }
        if !no_flow {
            return at(code.len(), "control flow falls through code end");
        }
        Ok(())
    }
}

/// Type-check one method (class version >= 50). `starts` from [`scan_code`].
fn initial_frame<'a>(cx: &MethodCtx<'_, '_, 'a>) -> R<(Frame<'a>, Option<VType<'a>>)> {
    let code = cx.code;
    let cf = cx.cf;
    let m = cx.m;
    let max_locals = code.max_locals as usize;
    let Some((args, ret)) = split_method_desc(m.desc) else {
        return Err((None, "bad method descriptor".into()));
    };
    let is_init = m.name == b"<init>";
    let mut locals: Vec<VType> = Vec::with_capacity(max_locals);
    let mut this_uninit = false;
    // a <clinit> is static whatever its flags say (HotSpot rejects non-static ones from version 51)
    if m.access & ACC_STATIC == 0 && m.name != b"<clinit>" {
        if is_init && cf.this_class != OBJECT {
            locals.push(VType::UninitThis);
            this_uninit = true;
        } else {
            locals.push(VType::Ref(Name::B(cf.this_class)));
        }
    }
    for a in &args {
        push_local(&mut locals, VType::from_desc(a));
    }
    if locals.len() > max_locals {
        return Err((
            None,
            format!(
                "arguments can't fit into locals: expected max_locals >= {}, found {max_locals}",
                locals.len()
            ),
        ));
    }
    locals.resize(max_locals, VType::Top);
    let ret = if ret == b"V" {
        None
    } else {
        Some(VType::from_desc(ret))
    };
    Ok((
        Frame {
            locals,
            stack: vec![],
            stack_size: 0,
            this_uninit,
        },
        ret,
    ))
}

/// Type-check one method (class version >= 50) against its StackMapTable. `scan` from [`scan_code`].
pub fn typecheck(cx: &MethodCtx<'_, '_, '_>, scan: &Scan) -> R<()> {
    let starts = &scan.starts[..];
    let code = cx.code;
    let cf = cx.cf;
    let (initial, ret) = initial_frame(cx)?;
    let mut frames = Vec::new();
    let mut smt_count = 0;
    for a in &code.attributes {
        if a.name == b"StackMapTable" {
            smt_count += 1;
            frames =
                parse_stackmap(a.data, &cf.cp, code, starts, &initial).map_err(|e| (None, e.0))?;
        }
    }
    if smt_count > 1 {
        return Err((None, "multiple StackMapTable attributes".into()));
    }
    let mut frame_at = vec![u32::MAX; code.code.len()];
    for (i, (off, _)) in frames.iter().enumerate() {
        if frame_at[*off] != u32::MAX {
            return Err((
                Some(*off as u32),
                "StackMapTable: duplicate frame offset".into(),
            ));
        }
        frame_at[*off] = i as u32;
    }
    let mut ck = Checker {
        cx,
        f: initial,
        frames,
        frame_at,
        infer: false,
        pending: Default::default(),
        max_stack: code.max_stack as usize,
        ret,
        is_init: cx.m.name == b"<init>",
        args: Vec::new(),
    };
    ck.run(&scan.insns)
}

/// Least upper bound of two reference types for type inference: the nearest common superclass;
/// interfaces and mixed array/class merge to Object. Unknown classes: lenient (keeps `a`).
fn lub<'a>(h: &Hier<'_, 'a>, a: &Name<'a>, b: &Name<'a>) -> Name<'a> {
    let (x, y) = (a.bytes(), b.bytes());
    if x == y {
        return a.clone();
    }
    if x == OBJECT || y == OBJECT {
        return Name::B(OBJECT);
    }
    let ax = x.first() == Some(&b'[');
    let ay = y.first() == Some(&b'[');
    if ax || ay {
        if !(ax && ay) {
            return Name::B(OBJECT);
        }
        let (cx, cy) = (&x[1..], &y[1..]);
        let refc = |c: &[u8]| matches!(c.first(), Some(b'L' | b'['));
        if !(refc(cx) && refc(cy)) {
            return Name::B(OBJECT);
        }
        let strip = |c: &[u8]| -> Vec<u8> {
            if c.first() == Some(&b'L') && c.len() >= 2 {
                c[1..c.len() - 1].to_vec()
            } else {
                c.to_vec()
            }
        };
        let (sx, sy) = (strip(cx), strip(cy));
        let l = lub(
            h,
            &Name::O(std::rc::Rc::from(sx)),
            &Name::O(std::rc::Rc::from(sy)),
        );
        let lb = l.bytes();
        let mut v = vec![b'['];
        if lb.first() == Some(&b'[') {
            v.extend_from_slice(lb);
        } else {
            v.push(b'L');
            v.extend_from_slice(lb);
            v.push(b';');
        }
        return Name::O(std::rc::Rc::from(v));
    }
    match (h.is_interface(x), h.is_interface(y)) {
        (Some(true), _) | (_, Some(true)) => return Name::B(OBJECT),
        (None, _) | (_, None) => return a.clone(),
        _ => {}
    }
    // supers of x
    let mut chain = vec![x.to_vec()];
    let mut cur = x.to_vec();
    for _ in 0..256 {
        match h.super_of(&cur) {
            Some(s) => {
                chain.push(s.clone());
                cur = s;
            }
            None => break,
        }
    }
    let mut cur = y.to_vec();
    for _ in 0..256 {
        if chain.contains(&cur) {
            return Name::O(std::rc::Rc::from(cur));
        }
        match h.super_of(&cur) {
            Some(s) => cur = s,
            None => break,
        }
    }
    if chain.last().map(|c| c.as_slice()) == Some(OBJECT) && cur == OBJECT {
        Name::B(OBJECT)
    } else {
        a.clone() // unknown links: lenient
    }
}

fn merge_type<'a>(h: &Hier<'_, 'a>, a: &VType<'a>, b: &VType<'a>) -> VType<'a> {
    if a == b {
        return a.clone();
    }
    match (a, b) {
        (VType::Null, VType::Ref(_)) => b.clone(),
        (VType::Ref(_), VType::Null) => a.clone(),
        (VType::Ref(x), VType::Ref(y)) => VType::Ref(lub(h, x, y)),
        _ => VType::Top,
    }
}

/// Merge `inc` into `cur`; Ok(changed). Stack shapes must agree; locals that disagree become unusable.
fn merge_frame<'a>(h: &Hier<'_, 'a>, cur: &mut Frame<'a>, inc: &Frame<'a>) -> Result<bool, String> {
    if cur.stack.len() != inc.stack.len() || cur.stack_size != inc.stack_size {
        return Err(format!(
            "inconsistent stack height: expected {}, found {}",
            cur.stack_size, inc.stack_size
        ));
    }
    let mut changed = false;
    for (i, (a, b)) in cur.stack.iter_mut().zip(inc.stack.iter()).enumerate() {
        let m = merge_type(h, a, b);
        if m == VType::Top {
            return Err(format!(
                "mismatched stack types at {i}: expected {a}, found {b}"
            ));
        }
        if &m != a {
            *a = m;
            changed = true;
        }
    }
    for (a, b) in cur.locals.iter_mut().zip(inc.locals.iter()) {
        let m = merge_type(h, a, b);
        if &m != a {
            *a = m;
            changed = true;
        }
    }
    // a long/double whose second half became unusable is unusable too
    for i in 0..cur.locals.len() {
        if cur.locals[i].is_cat2() && cur.locals.get(i + 1) != Some(&VType::Top) {
            cur.locals[i] = VType::Top;
            changed = true;
        }
    }
    if inc.this_uninit && !cur.this_uninit {
        cur.this_uninit = true;
        changed = true;
    }
    Ok(changed)
}

/// Whether the method has jsr, jsr_w or ret (wide ret too): [`infer`] does not check such
/// methods (no subroutine analysis).
pub fn has_subroutines(code: &[u8], scan: &Scan) -> bool {
    scan.insns.iter().any(|&(pc, _)| {
        matches!(code[pc as usize], 168 | 169 | 201)
            || (code[pc as usize] == 196 && code.get(pc as usize + 1) == Some(&169))
    })
}

/// Type inference by data flow (the pre-StackMapTable verifier, JVMS §4.10.2), for class files < 50 and
/// as HotSpot's fallback for version 50. Methods with jsr/ret are skipped (no subroutine analysis).
pub fn infer(cx: &MethodCtx<'_, '_, '_>, scan: &Scan) -> R<()> {
    let code = cx.code.code;
    if has_subroutines(code, scan) {
        return Ok(());
    }
    let (initial, ret) = initial_frame(cx)?;
    let n = code.len();
    let mut len_at = vec![0u32; n];
    for &(pc, l) in &scan.insns {
        len_at[pc as usize] = l;
    }
    let mut ck = Checker {
        cx,
        f: initial.clone(),
        frames: Vec::new(),
        frame_at: Vec::new(),
        infer: true,
        pending: Default::default(),
        max_stack: cx.code.max_stack as usize,
        ret,
        is_init: cx.m.name == b"<init>",
        args: Vec::new(),
    };
    let h = cx.hier;
    for e in &cx.code.exceptions {
        if e.catch_type != 0 {
            let nm = cx.cf.cp.class_name(e.catch_type).map_err(|m| (None, m.0))?;
            if !h.assignable(&VType::from_class_name(nm), &VType::Ref(Name::B(THROWABLE))) {
                return Err((
                    Some(e.handler as u32),
                    format!(
                        "catch type is not a subclass of Throwable: found {}",
                        mutf8_to_string(nm)
                    ),
                ));
            }
        }
    }
    let mut states: Vec<Option<Frame>> = vec![None; n];
    states[0] = Some(initial);
    let mut queued = vec![false; n];
    let mut work = vec![0usize];
    queued[0] = true;
    let mut steps = 0usize;
    while let Some(pc) = work.pop() {
        queued[pc] = false;
        steps += 1;
        if steps > 5_000_000 {
            return Ok(()); // give up (lenient) on pathological methods
        }
        let Some(st) = states[pc].clone() else {
            continue;
        };
        ck.f = st;
        ck.pending.borrow_mut().clear();
        let in_try = cx
            .code
            .exceptions
            .iter()
            .any(|e| pc >= e.start as usize && pc < e.end as usize);
        if in_try {
            let pre = ck.f.clone();
            ck.check_handlers(pc, &pre, false)?;
        }
        let mut this_uninit = false;
        let flows = ck.step(pc, in_try, &mut this_uninit)?;
        if in_try {
            let post = ck.f.clone();
            ck.check_handlers(pc, &post, this_uninit)?;
        }
        let mut edges = std::mem::take(&mut *ck.pending.borrow_mut());
        if flows {
            let next = pc + len_at[pc] as usize;
            if next >= n {
                return at(pc, "falling off the end of the code");
            }
            edges.push((next, ck.f.clone()));
        }
        for (t, fr) in edges {
            let changed = match &mut states[t] {
                None => {
                    states[t] = Some(fr);
                    true
                }
                Some(cur) => merge_frame(h, cur, &fr).map_err(|m| (Some(t as u32), m))?,
            };
            if changed && !queued[t] {
                queued[t] = true;
                work.push(t);
            }
        }
    }
    Ok(())
}
