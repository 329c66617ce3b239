//! The label-based method editor. Original instructions are addressed by index (their labels);
//! inserted code is attached before/after them, at entry, or as a catch-all handler. On
//! [`MethodEditor::finish`] every branch, switch, exception range, line/local-variable entry and
//! frame is relocated, overflowing jumps are widened, max_stack/max_locals are recomputed, and
//! the frames new targets need are derived from the existing ones.

use crate::class::{ClassFile, Member, ACC_STATIC};
use crate::code::{CodeAttr, Insn};
use crate::cp::CpBuilder;
use crate::desc::MethodDesc;
use crate::error::{Context, Error, ErrorKind, Result};
use crate::frames::{self, Frame, VType};
use crate::opcodes::{self, op, Flow, Operands};
use crate::reader::be32;
use crate::sim::{self, State, TypeCtx, Untyped};
use crate::snippet::Snippet;

const NONE: u32 = u32::MAX;

pub struct MethodEditor<'c, 'a> {
    cf: &'c ClassFile<'a>,
    method: &'c Member<'a>,
    code: CodeAttr<'a>,
    insns: Vec<Insn>,
    /// pc -> instruction index, NONE inside instructions; has code.len()+1 entries.
    index_of: Vec<u32>,
    prologue: Snippet,
    before: Vec<Option<Box<Snippet>>>,
    after: Vec<Option<Box<Snippet>>>,
    catch_all: Option<Snippet>,
    new_locals: Vec<(u16, VType)>,
    next_local: u16,
    /// Force every 16-bit branch to its wide form (tests).
    pub force_wide_jumps: bool,
}

/// Result of the stack-depth data flow.
#[derive(Clone, Debug)]
pub struct Depths {
    /// Depth before each instruction; `u32::MAX` when unreachable.
    pub depth_in: Vec<u32>,
    /// Highest depth reached by any instruction.
    pub max: u32,
}

/// How a code offset is mapped through an edit.
#[derive(Clone, Copy)]
enum At {
    /// Start of the code inserted before the instruction (branch targets, ranges).
    Before,
    /// The instruction itself (Uninitialized(offset)).
    Insn,
}

impl<'c, 'a> MethodEditor<'c, 'a> {
    /// Opens method `method_index` of `cf` for editing. Fails if it has no Code attribute or the
    /// code does not decode.
    pub fn new(cf: &'c ClassFile<'a>, method_index: usize) -> Result<MethodEditor<'c, 'a>> {
        let method = cf
            .methods
            .get(method_index)
            .ok_or_else(|| Error::new(ErrorKind::Edit, format!("no method #{method_index}")))?;
        Self::open(cf, method).map_err(|e| e.context(cf.method_path(method)))
    }

    fn open(cf: &'c ClassFile<'a>, method: &'c Member<'a>) -> Result<MethodEditor<'c, 'a>> {
        let (_, a) = cf.find_attr(&method.attributes, "Code").ok_or_else(|| {
            Error::new(ErrorKind::Edit, "method has no code (abstract or native)")
        })?;
        let code = CodeAttr::parse(cf, a).ctx(|| "Code")?;
        let insns = code.decode_all().ctx(|| "Code")?;
        let mut index_of = vec![NONE; code.code.len() + 1];
        for (k, i) in insns.iter().enumerate() {
            index_of[i.pc as usize] = k as u32;
        }
        index_of[code.code.len()] = insns.len() as u32;
        let n = insns.len();
        let next_local = code.max_locals;
        Ok(MethodEditor {
            cf,
            method,
            code,
            insns,
            index_of,
            prologue: Snippet::new(),
            before: vec![None; n],
            after: vec![None; n],
            catch_all: None,
            new_locals: Vec::new(),
            next_local,
            force_wide_jumps: false,
        })
    }

    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }
    pub fn code(&self) -> &CodeAttr<'a> {
        &self.code
    }
    pub fn class(&self) -> &'c ClassFile<'a> {
        self.cf
    }
    pub fn name(&self) -> std::borrow::Cow<'a, str> {
        self.cf.member_name(self.method)
    }
    pub fn desc(&self) -> std::borrow::Cow<'a, str> {
        self.cf.member_desc(self.method)
    }
    /// The method's access flags.
    pub fn access(&self) -> u16 {
        self.method.access
    }
    pub fn is_static(&self) -> bool {
        self.method.access & ACC_STATIC != 0
    }
    pub fn is_constructor(&self) -> bool {
        self.name() == "<init>"
    }

    /// Reserves a new local of type `ty` (Integer, Float, Long, Double or Object). It must be
    /// stored by the entry code ([`MethodEditor::insert_entry`]): every frame of the method
    /// will claim its type.
    pub fn new_local(&mut self, ty: VType) -> Result<u16> {
        let i = self.next_local;
        let end = i as u32 + ty.slots() as u32;
        if end > 0xFFFF {
            return Err(Error::new(ErrorKind::TooLarge, "more than 65535 locals"));
        }
        self.next_local = end as u16;
        self.new_locals.push((i, ty));
        Ok(i)
    }

    fn neutral(s: &Snippet, what: &str) -> Result<()> {
        if s.net() != 0 || s.underflows() {
            return Err(Error::new(
                ErrorKind::Edit,
                format!(
                    "{what} snippet must leave the stack as it found it (net {})",
                    s.net()
                ),
            ));
        }
        Ok(())
    }

    /// Code run once when the method is entered (not when a branch targets the first
    /// instruction).
    pub fn insert_entry(&mut self, s: &Snippet) -> Result<()> {
        if s.underflows() || s.net() != 0 {
            return Self::neutral(s, "entry");
        }
        self.prologue.append(s);
        Ok(())
    }

    /// Code run before instruction `k`; branches to `k` run it too.
    pub fn insert_before(&mut self, k: usize, s: &Snippet) -> Result<()> {
        Self::neutral(s, "before")?;
        let slot = self
            .before
            .get_mut(k)
            .ok_or_else(|| Error::new(ErrorKind::Edit, format!("no instruction {k}")))?;
        slot.get_or_insert_with(Box::default).append(s);
        Ok(())
    }

    /// Code run after instruction `k` when it falls through (not when a branch targets the next
    /// instruction). `k` must be able to fall through.
    pub fn insert_after(&mut self, k: usize, s: &Snippet) -> Result<()> {
        Self::neutral(s, "after")?;
        let i = *self
            .insns
            .get(k)
            .ok_or_else(|| Error::new(ErrorKind::Edit, format!("no instruction {k}")))?;
        if sim::ends_block(&i) || i.info().flow == Flow::Jsr {
            return Err(Error::new(
                ErrorKind::Edit,
                format!(
                    "cannot insert after {} (it does not fall through)",
                    opcodes::mnemonic(i.opcode)
                ),
            ));
        }
        self.after[k].get_or_insert_with(Box::default).append(s);
        Ok(())
    }

    /// Inserts `f(insn)` before every return instruction.
    pub fn insert_before_returns(
        &mut self,
        mut f: impl FnMut(&Insn) -> Result<Snippet>,
    ) -> Result<()> {
        for k in 0..self.insns.len() {
            if self.insns[k].info().flow == Flow::Return {
                let s = f(&self.insns[k])?;
                self.insert_before(k, &s)?;
            }
        }
        Ok(())
    }

    /// Inserts `f(insn)` before every athrow.
    pub fn insert_before_throws(
        &mut self,
        mut f: impl FnMut(&Insn) -> Result<Snippet>,
    ) -> Result<()> {
        for k in 0..self.insns.len() {
            if self.insns[k].opcode == op::ATHROW {
                let s = f(&self.insns[k])?;
                self.insert_before(k, &s)?;
            }
        }
        Ok(())
    }

    /// Adds a handler for any exception around the whole body (in a constructor: from after the
    /// super()/this() call), placed after all existing handlers. It runs `s` with the exception
    /// on the stack (`s` must leave it there) and re-throws it.
    pub fn add_catch_all(&mut self, s: &Snippet) -> Result<()> {
        Self::neutral(s, "handler")?;
        self.catch_all.get_or_insert_with(Snippet::new).append(s);
        Ok(())
    }

    /// Implicit initial frame locals (entry form).
    fn initial_locals(&self, ctx: &mut dyn TypeCtx) -> Result<Vec<VType>> {
        let desc = self.desc();
        let md = MethodDesc::parse(&desc)?;
        let mut v = Vec::with_capacity(md.params.len() + 1);
        if !self.is_static() {
            let cname = self.cf.name()?;
            if self.is_constructor() && cname != "java/lang/Object" {
                v.push(VType::UninitializedThis);
            } else {
                v.push(VType::Object(ctx.class_index(&cname)?));
            }
        }
        for p in &md.params {
            v.push(sim::vtype_of(p, ctx)?);
        }
        Ok(v)
    }

    fn smt(&self) -> Option<crate::class::Attribute<'a>> {
        self.code
            .attributes
            .iter()
            .find(|a| {
                self.cf
                    .cp
                    .utf8_bytes(a.name_index)
                    .is_ok_and(|n| n == b"StackMapTable")
            })
            .copied()
    }

    /// Linear forward simulation over the original code: calls `visit(k, state_in)` for every
    /// instruction whose incoming state is known (from a frame, fall-through or an earlier
    /// forward branch). Stops when `visit` returns true.
    fn simulate(
        &self,
        ctx: &mut dyn TypeCtx,
        mut visit: impl FnMut(usize, &State) -> Result<bool>,
    ) -> Result<()> {
        let init = self.initial_locals(ctx)?;
        let frames = match self.smt() {
            Some(a) => frames::decode_table(a.data, a.offset, &init).ctx(|| "StackMapTable")?,
            None => Vec::new(),
        };
        let mut fi = 0;
        let mut pending: std::collections::HashMap<u32, State> = std::collections::HashMap::new();
        let mut cur: Option<State> = Some(State {
            locals: Vec::new(),
            stack: Vec::new(),
        });
        if let Some(c) = cur.as_mut() {
            frames::to_slots(&init, &mut c.locals);
        }
        let code = self.code.code;
        let this_name = self.cf.name()?;
        for (k, i) in self.insns.iter().enumerate() {
            while fi < frames.len() && frames[fi].offset < i.pc {
                fi += 1;
            }
            if fi < frames.len() && frames[fi].offset == i.pc {
                let f = &frames[fi];
                let mut s = State::default();
                frames::to_slots(&f.locals, &mut s.locals);
                frames::to_slots(&f.stack, &mut s.stack);
                cur = Some(s);
            } else if cur.is_none() {
                cur = pending.remove(&i.pc);
            }
            let Some(s) = cur.as_mut() else { continue };
            if visit(k, s)? {
                return Ok(());
            }
            let before = if i.info().flow == Flow::Cond {
                Some(s.clone())
            } else {
                None
            };
            sim::exec(s, i, code, &self.cf.cp, &this_name, ctx)
                .map_err(|e| e.context(format!("pc {}", i.pc)))?;
            let mut record = |t: i64, st: &State| {
                if t > i.pc as i64 {
                    pending.entry(t as u32).or_insert_with(|| st.clone());
                }
            };
            match i.info().flow {
                Flow::Cond | Flow::Goto => {
                    let _ = before;
                    i.for_each_target(code, |t| record(t, s));
                }
                Flow::Switch => i.for_each_target(code, |t| record(t, s)),
                _ => {}
            }
            if sim::ends_block(i) || i.info().flow == Flow::Jsr {
                cur = None;
            }
        }
        Ok(())
    }

    /// Index of the instruction that initializes `this` in a constructor (the invokespecial
    /// <init> on uninitializedThis), or None for methods that are not constructors or for
    /// java/lang/Object.<init>.
    pub fn super_call(&self) -> Result<Option<usize>> {
        if !self.is_constructor() || self.is_static() || self.cf.name()? == "java/lang/Object" {
            return Ok(None);
        }
        let code = self.code.code;
        let cp = &self.cf.cp;
        let mut found = None;
        self.simulate(&mut Untyped, |k, s| {
            let i = &self.insns[k];
            if i.opcode == op::INVOKESPECIAL {
                let m = cp.member_ref(i.cp_index(code).unwrap_or(0))?;
                if m.name == "<init>" {
                    let (a, _) = crate::desc::method_slots(&m.desc)?;
                    let depth = s.stack.len();
                    if depth > a as usize
                        && s.stack[depth - 1 - a as usize] == VType::UninitializedThis
                    {
                        found = Some(k);
                        return Ok(true);
                    }
                }
            }
            Ok(false)
        })?;
        match found {
            Some(k) => Ok(Some(k)),
            None => Err(Error::new(
                ErrorKind::Edit,
                "constructor without a super()/this() call",
            )),
        }
    }

    fn idx(&self, pc: u32) -> Result<usize> {
        match self.index_of.get(pc as usize) {
            Some(&k) if k != NONE => Ok(k as usize),
            _ => Err(Error::format(format!(
                "offset {pc} is not an instruction boundary"
            ))),
        }
    }

    /// Size of instruction `k` placed at `pos`.
    fn size(&self, k: usize, pos: u32, wide: bool) -> u32 {
        let i = &self.insns[k];
        match i.info().operands {
            Operands::Branch16 if wide => match i.info().flow {
                Flow::Goto | Flow::Jsr => 5,
                _ => 8,
            },
            Operands::TableSwitch | Operands::LookupSwitch => {
                let old_pad = 3 - (i.pc % 4);
                let new_pad = 3 - (pos % 4);
                i.len - old_pad + new_pad
            }
            _ => i.len,
        }
    }

    /// Writes the new Code attribute body (everything after attribute_length).
    pub fn finish(self, cp: &mut CpBuilder<'_>) -> Result<Vec<u8>> {
        let (cf, m) = (self.cf, self.method);
        self.finish_inner(cp)
            .map_err(|e| e.context(cf.method_path(m)))
    }

    fn finish_inner(self, cp: &mut CpBuilder<'_>) -> Result<Vec<u8>> {
        let n = self.insns.len();
        let code = self.code.code;
        let code_len = code.len() as u32;
        // Branch target instruction index per instruction (for 16/32-bit branches).
        let mut target: Vec<u32> = vec![NONE; n];
        let mut targets_zero = self.code.handlers.iter().any(|h| h.handler == 0);
        for (k, i) in self.insns.iter().enumerate() {
            if let Some(o) = i.branch_offset(code) {
                let t = i.pc as i64 + o as i64;
                if t < 0 || t >= code_len as i64 {
                    return Err(Error::format(format!(
                        "branch at pc {} to {t} is outside the code",
                        i.pc
                    )));
                }
                targets_zero |= t == 0;
                target[k] = self.idx(t as u32)? as u32;
            } else if matches!(i.opcode, op::TABLESWITCH | op::LOOKUPSWITCH) {
                let mut bad = None;
                i.for_each_target(code, |t| {
                    targets_zero |= t == 0;
                    if t < 0 || t >= code_len as i64 || self.index_of[t as usize] == NONE {
                        bad = Some(t);
                    }
                });
                if let Some(t) = bad {
                    return Err(Error::format(format!(
                        "switch at pc {} to {t} is not an instruction",
                        i.pc
                    )));
                }
            }
        }
        let mut wide = vec![false; n];
        if self.force_wide_jumps {
            for (w, i) in wide.iter_mut().zip(&self.insns) {
                *w = i.info().operands == Operands::Branch16;
            }
        }
        let mut before_pos = vec![0u32; n + 1];
        let mut insn_pos = vec![0u32; n + 1];
        let mut after_pos = vec![0u32; n + 1];
        let len_of = |s: &Option<Box<Snippet>>| s.as_ref().map_or(0, |s| s.len() as u32);
        let (end_pos, handler_pos, total) = loop {
            let mut pos = self.prologue.len() as u32;
            for k in 0..n {
                before_pos[k] = pos;
                pos += len_of(&self.before[k]);
                insn_pos[k] = pos;
                pos += self.size(k, pos, wide[k]);
                after_pos[k] = pos;
                pos += len_of(&self.after[k]);
            }
            before_pos[n] = pos;
            insn_pos[n] = pos;
            after_pos[n] = pos;
            let end_pos = pos;
            let handler_pos = pos;
            if let Some(h) = &self.catch_all {
                pos += h.len() as u32 + 1;
            }
            if pos > 65535 {
                return Err(Error::new(
                    ErrorKind::TooLarge,
                    format!("code would be {pos} bytes (limit 65535)"),
                ));
            }
            let mut changed = false;
            for k in 0..n {
                if target[k] != NONE
                    && !wide[k]
                    && self.insns[k].info().operands == Operands::Branch16
                {
                    let off = before_pos[target[k] as usize] as i64 - insn_pos[k] as i64;
                    if off < i16::MIN as i64 || off > i16::MAX as i64 {
                        wide[k] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                break (end_pos, handler_pos, pos);
            }
        };
        let map = |pc: u32, at: At| -> Result<u32> {
            if pc == code_len {
                return Ok(end_pos);
            }
            let k = self.idx(pc)?;
            Ok(match at {
                At::Before => before_pos[k],
                At::Insn => insn_pos[k],
            })
        };

        // --- code bytes
        let mut out: Vec<u8> = Vec::with_capacity(total as usize);
        out.extend_from_slice(self.prologue.bytes());
        // Untouched instructions are copied in runs (one copy per run, not per instruction).
        let (mut run, mut run_end) = (usize::MAX, 0usize);
        let flush = |out: &mut Vec<u8>, run: &mut usize, run_end: usize| {
            if *run != usize::MAX {
                out.extend_from_slice(&code[*run..run_end]);
                *run = usize::MAX;
            }
        };
        for k in 0..n {
            if let Some(s) = &self.before[k] {
                flush(&mut out, &mut run, run_end);
                out.extend_from_slice(s.bytes());
            }
            let i = &self.insns[k];
            let here = insn_pos[k] as i64;
            let ops = i.info().operands;
            if !matches!(
                ops,
                Operands::Branch16
                    | Operands::Branch32
                    | Operands::TableSwitch
                    | Operands::LookupSwitch
            ) {
                if run == usize::MAX {
                    run = i.pc as usize;
                }
                run_end = (i.pc + i.len) as usize;
            } else {
                flush(&mut out, &mut run, run_end);
                debug_assert_eq!(out.len() as u32, insn_pos[k]);
            }
            match ops {
                Operands::Branch16 | Operands::Branch32 => {
                    let t = before_pos[target[k] as usize] as i64;
                    if i.info().operands == Operands::Branch32 {
                        out.push(i.opcode);
                        out.extend_from_slice(&((t - here) as i32).to_be_bytes());
                    } else if !wide[k] {
                        out.push(i.opcode);
                        out.extend_from_slice(&((t - here) as i16).to_be_bytes());
                    } else {
                        match i.info().flow {
                            Flow::Goto | Flow::Jsr => {
                                out.push(if i.opcode == op::GOTO {
                                    op::GOTO_W
                                } else {
                                    op::JSR_W
                                });
                                out.extend_from_slice(&((t - here) as i32).to_be_bytes());
                            }
                            _ => {
                                let inv = opcodes::invert_cond(i.opcode).ok_or_else(|| {
                                    Error::format(format!(
                                        "cannot invert {}",
                                        opcodes::mnemonic(i.opcode)
                                    ))
                                })?;
                                out.push(inv);
                                out.extend_from_slice(&8i16.to_be_bytes());
                                out.push(op::GOTO_W);
                                out.extend_from_slice(&((t - (here + 3)) as i32).to_be_bytes());
                            }
                        }
                    }
                }
                Operands::TableSwitch | Operands::LookupSwitch => {
                    out.push(i.opcode);
                    while !out.len().is_multiple_of(4) {
                        out.push(0);
                    }
                    let ob = (i.pc as usize + 4) & !3;
                    let rel = |o: i32| -> Result<[u8; 4]> {
                        let t = map((i.pc as i64 + o as i64) as u32, At::Before)?;
                        Ok(((t as i64 - here) as i32).to_be_bytes())
                    };
                    out.extend_from_slice(&rel(be32(code, ob) as i32)?);
                    if i.opcode == op::TABLESWITCH {
                        out.extend_from_slice(&code[ob + 4..ob + 12]);
                        let low = be32(code, ob + 4) as i32 as i64;
                        let high = be32(code, ob + 8) as i32 as i64;
                        for e in 0..(high - low + 1) as usize {
                            out.extend_from_slice(&rel(be32(code, ob + 12 + 4 * e) as i32)?);
                        }
                    } else {
                        let np = be32(code, ob + 4) as usize;
                        out.extend_from_slice(&code[ob + 4..ob + 8]);
                        for e in 0..np {
                            out.extend_from_slice(&code[ob + 8 + 8 * e..ob + 12 + 8 * e]);
                            out.extend_from_slice(&rel(be32(code, ob + 12 + 8 * e) as i32)?);
                        }
                    }
                }
                _ => {}
            }
            if let Some(s) = &self.after[k] {
                flush(&mut out, &mut run, run_end);
                out.extend_from_slice(s.bytes());
            }
        }
        flush(&mut out, &mut run, run_end);
        debug_assert_eq!(out.len() as u32, end_pos);
        if let Some(h) = &self.catch_all {
            out.extend_from_slice(h.bytes());
            out.push(op::ATHROW);
        }
        debug_assert_eq!(out.len() as u32, total);

        // --- exception table
        let mut handlers = Vec::with_capacity(self.code.handlers.len() + 1);
        for h in &self.code.handlers {
            handlers.push([
                map(h.start as u32, At::Before)?,
                map(h.end as u32, At::Before)?,
                map(h.handler as u32, At::Before)?,
                h.catch_type as u32,
            ]);
        }
        let super_call = self.super_call()?;
        let catch_start = match super_call {
            Some(k) => after_pos[k],
            None => before_pos[0],
        };
        let add_catch_all = self.catch_all.is_some() && catch_start < end_pos;
        if add_catch_all {
            handlers.push([catch_start, end_pos, handler_pos, 0]);
        }

        // --- max_stack by data flow over the original code, plus what insertions add
        let depths = self.depths()?;
        let mut max_stack = (self.code.max_stack as u32).max(depths.max);
        let mut bump = |d: u32| max_stack = max_stack.max(d);
        bump(self.prologue.max_depth() as u32);
        for (k, &din) in depths.depth_in.iter().enumerate() {
            if din == NONE {
                continue;
            }
            if let Some(s) = &self.before[k] {
                bump(din + s.max_depth() as u32);
            }
            if let Some(s) = &self.after[k] {
                let (p, q) = sim::depth_effect(&self.insns[k], code, &self.cf.cp)?;
                bump(din - p as u32 + q as u32 + s.max_depth() as u32);
            }
        }
        if let Some(h) = &self.catch_all {
            bump(1 + h.max_depth() as u32);
        }
        if max_stack > 0xFFFF {
            return Err(Error::new(ErrorKind::TooLarge, "max_stack over 65535"));
        }
        let mut max_locals = self.code.max_locals as u32;
        {
            let d = self.desc();
            let md = MethodDesc::parse(&d)?;
            max_locals = max_locals.max(md.param_slots() as u32 + !self.is_static() as u32);
            for i in &self.insns {
                if let Some(l) = i.local(code) {
                    max_locals = max_locals.max(l as u32 + i.local_size() as u32);
                }
            }
            max_locals = max_locals.max(self.next_local as u32);
        }

        // --- frames
        let smt = self.smt();
        let widened_cond: Vec<usize> = (0..n)
            .filter(|&k| wide[k] && matches!(self.insns[k].info().flow, Flow::Cond))
            .collect();

        let entry_frame_needed = !self.prologue.is_empty() && targets_zero;
        let need_new_frames = add_catch_all || !widened_cond.is_empty() || entry_frame_needed;
        let mut smt_bytes: Option<Vec<u8>> = None;
        let fast_frames =
            self.new_locals.is_empty() && widened_cond.is_empty() && !entry_frame_needed;
        if self.cf.major >= 50 && (smt.is_some() || need_new_frames) && fast_frames {
            // Frames keep their contents: patch offsets in the byte stream, append the handler's.
            let mut extra = Vec::new();
            if add_catch_all {
                let t = cp.throwable()?;
                extra.push(Frame {
                    offset: handler_pos,
                    locals: Vec::new(),
                    stack: vec![VType::Object(t)],
                });
            }
            let mut b = Vec::with_capacity(smt.map_or(0, |a| a.data.len()) + 16);
            match smt {
                Some(a) => frames::relocate_table(
                    a.data,
                    a.offset,
                    |o| map(o, At::Before),
                    |o| map(o as u32, At::Insn).map(|x| x as u16),
                    &extra,
                    &mut b,
                )
                .ctx(|| "StackMapTable")?,
                None => frames::relocate_table(&[0, 0], 0, Ok, Ok, &extra, &mut b)?,
            }
            smt_bytes = Some(b);
        } else if self.cf.major >= 50 && (smt.is_some() || need_new_frames) {
            let init = self.initial_locals(cp)?;
            let mut fs: Vec<(u32, Frame)> = Vec::new();
            let orig = match smt {
                Some(a) => frames::decode_table(a.data, a.offset, &init).ctx(|| "StackMapTable")?,
                None => Vec::new(),
            };
            let has_frame_at = |pc: u32| orig.binary_search_by_key(&pc, |f| f.offset).is_ok();
            for f in orig.iter() {
                fs.push((map(f.offset, At::Before)?, f.clone()));
            }
            if entry_frame_needed && !has_frame_at(0) {
                fs.push((
                    before_pos[0],
                    Frame {
                        offset: 0,
                        locals: init.clone(),
                        stack: Vec::new(),
                    },
                ));
            }
            if !widened_cond.is_empty() {
                let mut want: Vec<(usize, u32)> = Vec::new(); // (insn, new position)
                for &k in &widened_cond {
                    let pos = after_pos[k];
                    let next_has = self.after[k].is_none()
                        && has_frame_at(self.insns[k].pc + self.insns[k].len);
                    if !next_has {
                        want.push((k, pos));
                    }
                }
                if !want.is_empty() {
                    let mut states: Vec<Option<State>> = vec![None; n];
                    let wanted: std::collections::HashSet<usize> =
                        want.iter().map(|w| w.0).collect();
                    self.simulate(cp, |k, s| {
                        if wanted.contains(&k) {
                            states[k] = Some(s.clone());
                        }
                        Ok(false)
                    })?;
                    for (k, pos) in want {
                        let mut s = states[k].take().ok_or_else(|| {
                            Error::new(
                                ErrorKind::Edit,
                                format!(
                                    "no frame can be derived for the widened branch at pc {}",
                                    self.insns[k].pc
                                ),
                            )
                        })?;
                        sim::exec(
                            &mut s,
                            &self.insns[k],
                            code,
                            &self.cf.cp,
                            &self.cf.name()?,
                            cp,
                        )?;
                        fs.push((
                            pos,
                            Frame {
                                offset: 0,
                                locals: frames::to_entries(&s.locals, true),
                                stack: frames::to_entries(&s.stack, false),
                            },
                        ));
                    }
                }
            }
            if add_catch_all {
                let t = cp.throwable()?;
                fs.push((
                    handler_pos,
                    Frame {
                        offset: 0,
                        locals: Vec::new(),
                        stack: vec![VType::Object(t)],
                    },
                ));
            }
            // Relocate Uninitialized offsets, add new locals, set new offsets.
            let mut slots = Vec::new();
            for (pos, f) in fs.iter_mut() {
                for t in f.locals.iter_mut().chain(f.stack.iter_mut()) {
                    if let VType::Uninitialized(o) = *t {
                        *t = VType::Uninitialized(map(o as u32, At::Insn)? as u16);
                    }
                }
                if !self.new_locals.is_empty() {
                    frames::to_slots(&f.locals, &mut slots);
                    for &(i, ty) in &self.new_locals {
                        let need = i as usize + ty.slots() as usize;
                        if slots.len() < need {
                            slots.resize(need, VType::Top);
                        }
                        slots[i as usize] = ty;
                        if ty.is_wide() {
                            slots[i as usize + 1] = VType::Top;
                        }
                    }
                    f.locals = frames::to_entries(&slots, true);
                }
                f.offset = *pos;
            }
            let mut fs: Vec<Frame> = fs.into_iter().map(|(_, f)| f).collect();
            fs.sort_by_key(|f| f.offset);
            fs.dedup_by_key(|f| f.offset);
            let mut b = Vec::with_capacity(fs.len() * 4 + 2);
            frames::encode_table(&fs, &init, &mut b)?;
            smt_bytes = Some(b);
        }

        // --- Code attribute
        let mut attr = Vec::with_capacity(
            out.len()
                + self.code.code.len() / 2
                + smt_bytes.as_ref().map_or(0, |b| b.len())
                + 64
                + 4 * self
                    .code
                    .attributes
                    .iter()
                    .map(|a| a.data.len())
                    .sum::<usize>()
                    / 3,
        );
        attr.extend_from_slice(&(max_stack as u16).to_be_bytes());
        attr.extend_from_slice(&(max_locals as u16).to_be_bytes());
        attr.extend_from_slice(&(out.len() as u32).to_be_bytes());
        attr.extend_from_slice(&out);
        attr.extend_from_slice(&(handlers.len() as u16).to_be_bytes());
        for h in &handlers {
            for v in &h[..3] {
                attr.extend_from_slice(&(*v as u16).to_be_bytes());
            }
            attr.extend_from_slice(&(h[3] as u16).to_be_bytes());
        }
        let count_at = attr.len();
        attr.extend_from_slice(&[0, 0]);
        let mut count = 0u16;
        let mut wrote_smt = false;
        let mut body = Vec::new();
        for a in &self.code.attributes {
            let name = self.cf.cp.utf8_bytes(a.name_index)?;
            body.clear();
            match name {
                b"StackMapTable" => {
                    if let Some(s) = &smt_bytes {
                        body.extend_from_slice(s);
                        wrote_smt = true;
                    } else {
                        continue;
                    }
                }
                b"LineNumberTable" => {
                    let mut t = crate::attrs::LineNumbers::parse(a.data, a.offset)
                        .ctx(|| "LineNumberTable")?;
                    for e in t.entries.iter_mut() {
                        e.0 = if e.0 == 0 {
                            0
                        } else {
                            map(e.0 as u32, At::Before)? as u16
                        };
                    }
                    t.write(&mut body);
                }
                b"LocalVariableTable" | b"LocalVariableTypeTable" => {
                    let mut t = crate::attrs::LocalVars::parse(a.data, a.offset)
                        .ctx(|| "LocalVariableTable")?;
                    for e in t.entries.iter_mut() {
                        let s = if e.start == 0 {
                            0
                        } else {
                            map(e.start as u32, At::Before)?
                        };
                        let end = map(e.start as u32 + e.length as u32, At::Before)?;
                        e.start = s as u16;
                        e.length = (end - s) as u16;
                    }
                    t.write(&mut body);
                }
                // Type annotations on code hold offsets we do not relocate: drop them rather
                // than keep wrong offsets (they are not used by the JVM).
                b"RuntimeVisibleTypeAnnotations" | b"RuntimeInvisibleTypeAnnotations" => continue,
                _ => body.extend_from_slice(a.data),
            }
            attr.extend_from_slice(&a.name_index.to_be_bytes());
            attr.extend_from_slice(&(body.len() as u32).to_be_bytes());
            attr.extend_from_slice(&body);
            count += 1;
        }
        if let (false, Some(s)) = (wrote_smt, &smt_bytes) {
            let name = cp.utf8("StackMapTable")?;
            attr.extend_from_slice(&name.to_be_bytes());
            attr.extend_from_slice(&(s.len() as u32).to_be_bytes());
            attr.extend_from_slice(s);
            count += 1;
        }
        attr[count_at..count_at + 2].copy_from_slice(&count.to_be_bytes());
        Ok(attr)
    }

    /// Stack depth data flow over the original code: the depth before each instruction
    /// (`u32::MAX` when unreachable) and the maximum depth reached.
    pub fn depths(&self) -> Result<Depths> {
        let n = self.insns.len();
        let code = self.code.code;
        let mut din: Vec<u32> = vec![NONE; n];
        let mut work: Vec<usize> = Vec::with_capacity(16);
        let set = |din: &mut Vec<u32>, work: &mut Vec<usize>, k: usize, d: u32| {
            if din[k] == NONE {
                din[k] = d;
                work.push(k);
            }
        };
        if n > 0 {
            set(&mut din, &mut work, 0, 0);
        }
        for h in &self.code.handlers {
            let k = self.idx(h.handler as u32)?;
            set(&mut din, &mut work, k, 1);
        }
        let mut max = 0u32;
        while let Some(k) = work.pop() {
            let i = &self.insns[k];
            let d = din[k];
            let (p, q) = sim::depth_effect(i, code, &self.cf.cp)
                .map_err(|e| e.context(format!("pc {}", i.pc)))?;
            if (p as u32) > d {
                return Err(Error::format(format!(
                    "operand stack underflow at pc {} ({} needs {p}, depth {d})",
                    i.pc,
                    opcodes::mnemonic(i.opcode)
                )));
            }
            let out = d - p as u32 + q as u32;
            max = max.max(d).max(out);
            let flow = i.info().flow;
            match flow {
                Flow::Next | Flow::Cond if k + 1 < n => set(&mut din, &mut work, k + 1, out),
                Flow::Jsr if k + 1 < n => set(&mut din, &mut work, k + 1, d),
                _ => {}
            }
            if matches!(flow, Flow::Cond | Flow::Goto | Flow::Jsr | Flow::Switch) {
                let mut bad = None;
                let index_of = &self.index_of;
                i.for_each_target(code, |t| match index_of.get(t as usize) {
                    Some(&x) if t >= 0 && x != NONE && (x as usize) < n => {
                        set(&mut din, &mut work, x as usize, out)
                    }
                    _ => bad = Some(t),
                });
                if let Some(t) = bad {
                    return Err(Error::format(format!(
                        "branch at pc {} to {t} is not an instruction",
                        i.pc
                    )));
                }
            }
        }
        Ok(Depths { depth_in: din, max })
    }
}
