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

/// What the instruction buffer is filled with before it is decoded into.
const NO_INSN: Insn = Insn {
    pc: 0,
    opcode: 0,
    wide: false,
    len: 0,
};

/// Per opcode, for the decoding pass: 1 = uses a local variable, 2 = branch or switch
/// (relocated on finish), 3 = return, 0 = none of these.
const KIND: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut o = 0;
    while o < 256 {
        let b = o as u8;
        t[o] = match b {
            op::ILOAD..=op::ALOAD_3 | op::ISTORE..=op::ASTORE_3 | op::RET | op::IINC => 1,
            op::IFEQ..=op::JSR | op::IFNULL..=op::JSR_W => 2,
            op::TABLESWITCH | op::LOOKUPSWITCH => 2,
            _ if matches!(opcodes::FLOW[o], Flow::Return) => 3,
            _ => 0,
        };
        o += 1;
    }
    t
};

/// Per opcode, for the decoding pass's fast path (instructions of a fixed length): the length
/// (0: not fixed), what [`KIND`] says with local-variable uses split by where the index is
/// ([`D_LOCAL_IMPLICIT`]: in the opcode, [`D_LOCAL_U8`]: the byte after it), the end of the
/// local slots an instruction with an implicit index uses (0 for the others) and the number of
/// slots an instruction with a u8 index uses.
#[derive(Clone, Copy)]
struct Dec {
    len: u8,
    kind: u8,
    local: u8,
    size: u8,
}
const D_NONE: u8 = 0;
const D_LOCAL_IMPLICIT: u8 = 1;
const D_LOCAL_U8: u8 = 2;
const D_SPECIAL: u8 = 3;
const D_RETURN: u8 = 4;
/// An operand indexing the constant pool: a u8 (ldc) or a u16 after the opcode.
const D_CP8: u8 = 5;
const D_CP16: u8 = 6;
const DEC: [Dec; 256] = {
    let mut t = [Dec {
        len: 0,
        kind: D_NONE,
        local: 0,
        size: 0,
    }; 256];
    let mut o = 0;
    while o < 256 {
        let b = o as u8;
        let size = match b {
            op::LLOAD | op::DLOAD | op::LSTORE | op::DSTORE => 2,
            op::LLOAD_0..=op::LLOAD_3 | op::DLOAD_0..=op::DLOAD_3 => 2,
            op::LSTORE_0..=op::LSTORE_3 | op::DSTORE_0..=op::DSTORE_3 => 2,
            _ => 1,
        };
        let (kind, local) = match KIND[o] {
            1 => match b {
                op::ILOAD_0..=op::ALOAD_3 => (D_LOCAL_IMPLICIT, (b - op::ILOAD_0) % 4 + size),
                op::ISTORE_0..=op::ASTORE_3 => (D_LOCAL_IMPLICIT, (b - op::ISTORE_0) % 4 + size),
                _ => (D_LOCAL_U8, 0),
            },
            2 => (D_SPECIAL, 0),
            3 => (D_RETURN, 0),
            _ => match b {
                op::LDC => (D_CP8, 0),
                op::LDC_W | op::LDC2_W | op::GETSTATIC..=op::NEW => (D_CP16, 0),
                op::ANEWARRAY | op::CHECKCAST | op::INSTANCEOF | op::MULTIANEWARRAY => (D_CP16, 0),
                _ => (D_NONE, 0),
            },
        };
        t[o] = Dec {
            len: opcodes::fixed_len(b),
            kind,
            local,
            size,
        };
        o += 1;
    }
    t
};

/// Decodes the instructions of a fixed length ([`DEC`]) from `pc` on, as `MethodEditor::open`
/// does, the next one into `insns[k]`, and returns where it stopped (the end of the code or an
/// instruction the checked decoder must read: `wide`, a switch, an undefined opcode, one that
/// runs past the end, one whose constant-pool operand is 0 or not below `cp_count`) and the
/// number of instructions then. `index_of` and `insns` have an entry per code byte.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn decode_fixed(
    c: &[u8],
    cp_count: u16,
    mut pc: usize,
    insns: &mut [Insn],
    mut k: usize,
    index_of: &mut [u32],
    specials: &mut Vec<u32>,
    returns: &mut Vec<u32>,
    locals_end: &mut u32,
) -> (usize, usize) {
    let n = c.len().min(index_of.len()).min(insns.len());
    let mut end = *locals_end;
    while pc < n {
        let opcode = c[pc];
        let d = DEC[opcode as usize];
        let fixed = d.len as usize;
        if fixed == 0 || pc + fixed > n {
            break;
        }
        index_of[pc] = k as u32;
        // 0 but for loads and stores of locals 0 to 3
        end = end.max(d.local as u32);
        if d.kind > D_LOCAL_IMPLICIT {
            match d.kind {
                D_LOCAL_U8 => {
                    // fixed length 2 or 3: the index byte is in the code
                    let l = c.get(pc + 1).copied().unwrap_or(0);
                    end = end.max(l as u32 + d.size as u32);
                }
                D_SPECIAL => specials.push(k as u32),
                D_RETURN => returns.push(k as u32),
                _ => {
                    // the checked decoder reports an index out of the original pool (the
                    // constants the rewrite appends must not make it valid)
                    let hi = c.get(pc + 1).copied().unwrap_or(0) as u16;
                    let idx = if d.kind == D_CP8 {
                        hi
                    } else {
                        hi << 8 | c.get(pc + 2).copied().unwrap_or(0) as u16
                    };
                    if idx.wrapping_sub(1) >= cp_count.wrapping_sub(1) {
                        break;
                    }
                }
            }
        }
        // k <= pc < n: every instruction has a byte
        if let Some(slot) = insns.get_mut(k) {
            *slot = Insn {
                pc: pc as u32,
                opcode,
                wide: false,
                len: fixed as u32,
            };
        }
        k += 1;
        pc += fixed;
    }
    *locals_end = end;
    (pc, k)
}

/// Buffers reused from one method to the next on a thread: an editor takes them when it is
/// opened and gives them back when dropped, so editing a method allocates almost nothing for
/// its instruction table, pc index, stack depths and layout (a class has many methods, and the
/// agent rewrites thousands of classes). A buffer is taken whole, so two editors open at once
/// on a thread simply allocate for the second; buffers over [`KEEP`] bytes are not kept.
#[derive(Default)]
struct Scratch {
    insns: Vec<Insn>,
    index_of: Vec<u32>,
    specials: Vec<u32>,
    returns: Vec<u32>,
    before: Vec<(u32, Snippet)>,
    depth_in: Vec<u32>,
    work: Vec<usize>,
    events: Vec<Event>,
    frame_bytes: Vec<u8>,
    types: Vec<VType>,
    new_locals: Vec<(u16, VType)>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// The largest buffer kept for reuse, in bytes (a 64 KB method's pc index is 256 KB).
const KEEP: usize = 256 << 10;

/// Takes buffer `f` of this thread's scratch (empty, with the capacity it had).
fn take<T>(f: impl FnOnce(&mut Scratch) -> &mut Vec<T>) -> Vec<T> {
    SCRATCH
        .try_with(|s| {
            s.try_borrow_mut()
                .map(|mut s| std::mem::take(f(&mut s)))
                .unwrap_or_default()
        })
        .unwrap_or_default()
}

/// What [`give`] does with the scratch's slot: `v` emptied replaces it if larger.
fn keep<T>(slot: &mut Vec<T>, mut v: Vec<T>) {
    if v.capacity() == 0 || v.capacity() * std::mem::size_of::<T>() > KEEP {
        return;
    }
    v.clear();
    if slot.capacity() < v.capacity() {
        *slot = v;
    }
}

/// [`keep`] keeping the buffer's length (its entries are overwritten before they are read):
/// the next editor on the thread need not fill it again.
fn keep_filled<T>(slot: &mut Vec<T>, v: Vec<T>) {
    if v.capacity() == 0 || v.capacity() * std::mem::size_of::<T>() > KEEP {
        return;
    }
    if slot.len() < v.len() {
        *slot = v;
    }
}

/// Gives a buffer back to this thread's scratch (kept if larger than the one there).
fn give<T>(v: Vec<T>, f: impl FnOnce(&mut Scratch) -> &mut Vec<T>) {
    if v.capacity() == 0 || v.capacity() * std::mem::size_of::<T>() > KEEP {
        return;
    }
    let _ = SCRATCH.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            keep(f(&mut s), v);
        }
    });
}

/// Checks that every branch and switch target (`specials`: their instruction indices) and every
/// exception table row is inside the code and at an instruction (JVMS 4.9.1, 4.7.3: a target
/// or handler at the code's length is outside it; a row's end may be the length), and that a
/// row's catch_type is 0 or below `cp_count` (an index past the original pool would name a
/// constant the rewrite appends). The rest of the editor then indexes instructions by them
/// without checks. `index_of` has an entry per code byte and one for the end.
fn check_targets(
    code: &[u8],
    insns: &[Insn],
    specials: &[u32],
    index_of: &[u32],
    handlers: &[crate::code::Handler],
    cp_count: u16,
) -> Result<()> {
    let len = code.len() as i64;
    let at_insn =
        |t: i64| t >= 0 && t < len && index_of.get(t as usize).is_some_and(|&k| k != NONE);
    for &k in specials {
        let Some(i) = insns.get(k as usize) else {
            continue;
        };
        let mut bad = None;
        i.for_each_target(code, |t| {
            if bad.is_none() && !at_insn(t) {
                bad = Some(t);
            }
        });
        if let Some(t) = bad {
            let what = if i.branch_offset(code).is_some() {
                "branch"
            } else {
                "switch"
            };
            let why = if (0..len).contains(&t) {
                "is not the start of an instruction"
            } else {
                "is outside the code"
            };
            return Err(Error::format(format!(
                "{what} at pc {} to {t} {why} (code length {len}; JVMS 4.9.1)",
                i.pc
            )));
        }
    }
    for (j, h) in handlers.iter().enumerate() {
        let (start, end, handler) = (h.start as i64, h.end as i64, h.handler as i64);
        let bad = |what: String| {
            Err(Error::format(format!(
                "exception table entry {j}: {what} (code length {len}; JVMS 4.7.3)"
            )))
        };
        if !at_insn(start) {
            return bad(format!("start pc {start} is not an instruction"));
        }
        if end <= start {
            return bad(format!("start pc {start} is not before end pc {end}"));
        }
        if end != len && !at_insn(end) {
            return bad(format!(
                "end pc {end} is neither an instruction nor the end of the code"
            ));
        }
        if !at_insn(handler) {
            return bad(format!("handler pc {handler} is not an instruction"));
        }
        if h.catch_type >= cp_count {
            return bad(format!(
                "catch_type #{} is out of range (constant_pool_count {cp_count})",
                h.catch_type
            ));
        }
    }
    Ok(())
}

pub struct MethodEditor<'c, 'a> {
    cf: &'c ClassFile<'a>,
    method: &'c Member<'a>,
    code: CodeAttr<'a>,
    /// The instructions in `insn_buf[..n_insns]` (the buffer has an entry per code byte, and
    /// keeps its length from one method to the next: see [`decode_fixed`]).
    insn_buf: Vec<Insn>,
    n_insns: usize,
    /// pc -> instruction index, NONE inside instructions; has code.len()+1 entries.
    index_of: Vec<u32>,
    prologue: Snippet,
    /// Code inserted before / after instructions: (instruction index, code), sorted by index.
    before: Vec<(u32, Snippet)>,
    after: Vec<(u32, Snippet)>,
    catch_all: Option<Snippet>,
    /// A constructor's handler over the code before its super()/this() call
    /// ([`MethodEditor::add_prologue_catch`]).
    prologue_catch: Option<Snippet>,
    /// Code on one edge of a switch: (switch instruction, target pc, code). The cases going to
    /// that target jump to a trampoline placed after the code, which runs the code and jumps
    /// on to the target.
    trampolines: Vec<(u32, u32, Snippet)>,
    new_locals: Vec<(u16, VType)>,
    next_local: u16,
    /// Force every 16-bit branch to its wide form (tests).
    pub force_wide_jumps: bool,
    /// [`MethodEditor::super_calls`] and where `this` is initialized, found once (the
    /// rewriter asks, and so does `finish`).
    ctor: std::cell::OnceCell<Option<Ctor>>,
    /// Indices of the branches and switches (relocated on finish), increasing.
    specials: Vec<u32>,
    /// Indices of the return instructions, increasing.
    returns: Vec<u32>,
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

#[cold]
#[inline(never)]
fn reached_both(pc: u32) -> Error {
    Error::new(
        ErrorKind::Edit,
        format!("constructor: pc {pc} is reached both before and after a super()/this() call"),
    )
}

#[cold]
#[inline(never)]
fn underflow(i: &Insn, p: u16, d: u32) -> Error {
    Error::format(format!(
        "operand stack underflow at pc {} ({} needs {p}, depth {d})",
        i.pc,
        opcodes::mnemonic(i.opcode)
    ))
}

/// An instruction's constant-pool operand is 0 or not below the pool's count (JVMS 4.4).
#[cold]
#[inline(never)]
fn bad_cp_operand(i: &Insn, idx: u16, count: u16) -> Error {
    Error::format(format!(
        "pc {} {}: constant pool index #{idx} is out of range (constant_pool_count {count})",
        i.pc,
        opcodes::mnemonic(i.opcode)
    ))
    .context("Code")
}

/// A local-variable table entry's name or descriptor index is 0 or not below the original
/// pool's count: kept as it is, it would name a constant the rewrite appends (JVMS 4.7.13).
fn lvt_cp_check(name_index: u16, desc_index: u16, count: u16, table: &[u8]) -> Result<()> {
    for idx in [name_index, desc_index] {
        if idx.wrapping_sub(1) >= count.wrapping_sub(1) {
            return Err(lvt_bad_index(idx, count, table));
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn lvt_bad_index(idx: u16, count: u16, table: &[u8]) -> Error {
    Error::format(format!(
        "constant pool index #{idx} is out of range (constant_pool_count {count})"
    ))
    .context(String::from_utf8_lossy(table).into_owned())
    .context("Code")
}

/// An error when the original code reaches a stack depth above its declared max_stack (the
/// JVM rejects it: VerifyError "Stack size too large"; the rewrite must not make it valid).
fn check_max_stack(declared: u32, reached: u32) -> Result<()> {
    if reached > declared {
        return Err(Error::format(format!(
            "max_stack {declared} is below the stack depth its code reaches ({reached})"
        ))
        .context("Code"));
    }
    Ok(())
}

/// Appends `s` to the code at instruction `k` of a sorted insert list.
fn put(list: &mut Vec<(u32, Snippet)>, k: u32, s: &Snippet) {
    match list.binary_search_by_key(&k, |e| e.0) {
        Ok(j) => list[j].1.append(s),
        Err(j) => {
            let mut n = Snippet::new();
            n.append(s);
            list.insert(j, (k, n));
        }
    }
}

/// [`put`] taking `s` (kept as it is when `k` has no code yet: appending to an empty snippet
/// yields the same snippet).
fn put_owned(list: &mut Vec<(u32, Snippet)>, k: u32, s: Snippet) {
    match list.binary_search_by_key(&k, |e| e.0) {
        Ok(j) => list[j].1.append(&s),
        Err(j) => list.insert(j, (k, s)),
    }
}

/// An instruction where the new layout differs from a plain copy of the original code: code
/// is inserted before or after it, or it is a branch or switch (relocated).
#[derive(Clone, Copy)]
struct Event {
    /// Instruction index.
    k: u32,
    /// Index into `before` / `after`, or NONE.
    before: u32,
    after: u32,
    /// Branch target instruction index (16/32-bit branches), or NONE.
    target: u32,
    /// A 16-bit branch encoded in its wide form.
    wide: bool,
    /// New positions: the code inserted before it, the instruction, the code after it.
    before_pos: u32,
    insn_pos: u32,
    after_pos: u32,
    /// New position minus old position of the instructions that follow it.
    shift_after: i64,
}

/// A constructor's initialization of `this`.
#[derive(Clone, Debug)]
struct Ctor {
    /// The super()/this() calls (invokespecial <init> on uninitializedThis), increasing. Each
    /// run of the constructor passes exactly one of them.
    calls: Vec<usize>,
    /// Per instruction: [`THIS_UNINIT`], [`THIS_INIT`] (every path to it passed a call), or
    /// [`UNREACHED`].
    state: Vec<u8>,
}

/// The operand stack of [`MethodEditor::straight_init_call`], up to 64 slots: bit j set
/// when slot j holds `this`.
#[derive(Default)]
struct ThisSlots {
    bits: u64,
    depth: u32,
}

/// The low `n` bits set (all for 64 and more).
fn low_bits(n: u32) -> u64 {
    1u64.checked_shl(n).map_or(u64::MAX, |b| b - 1)
}

impl ThisSlots {
    fn push(&mut self, n: u32, this: bool) -> Option<()> {
        if self.depth + n > 64 {
            return None;
        }
        if this {
            self.bits |= low_bits(n).checked_shl(self.depth).unwrap_or(0);
        }
        self.depth += n;
        Some(())
    }
    /// Pops `n` slots: whether any held `this`.
    fn take(&mut self, n: u32) -> Option<bool> {
        self.depth = self.depth.checked_sub(n)?;
        let rest = self.bits & low_bits(self.depth);
        let this = rest != self.bits;
        self.bits = rest;
        Some(this)
    }
    /// dup, dup_x1, dup_x2, dup2, dup2_x1, dup2_x2: the top `n` slots copied under the
    /// `under` slots below them.
    fn dup(&mut self, n: u32, under: u32) -> Option<()> {
        let top = self.peek(n)?;
        let mid = self.peek(n + under)? >> n;
        self.take(n + under)?;
        self.push_bits(top, n)?;
        self.push_bits(mid, under)?;
        self.push_bits(top, n)
    }
    fn swap(&mut self) -> Option<()> {
        let two = self.peek(2)?;
        self.take(2)?;
        self.push_bits((two >> 1) | ((two & 1) << 1), 2)
    }
    /// The top `n` slots' bits, the deepest first (bit 0).
    fn peek(&self, n: u32) -> Option<u64> {
        let at = self.depth.checked_sub(n)?;
        Some(self.bits.checked_shr(at).unwrap_or(0) & low_bits(n))
    }
    fn push_bits(&mut self, bits: u64, n: u32) -> Option<()> {
        if self.depth + n > 64 {
            return None;
        }
        self.bits |= bits.checked_shl(self.depth).unwrap_or(0);
        self.depth += n;
        Some(())
    }
}

const UNREACHED: u8 = 0;
const THIS_UNINIT: u8 = 1;
const THIS_INIT: u8 = 2;

/// Positions of the new code at the events (see `finish_inner`); between events
/// instructions keep their distance.
struct Layout<'e> {
    /// Increasing instruction index.
    ev: Vec<Event>,
    insns: &'e [Insn],
    prologue: u32,
    /// End of the relocated original code.
    end: u32,
}

impl Layout<'_> {
    fn find(&self, k: usize) -> std::result::Result<usize, usize> {
        self.ev.binary_search_by_key(&(k as u32), |e| e.k)
    }
    /// Start of the code inserted before instruction `k` (`k == n`: the end of the code).
    fn before_pos(&self, k: usize) -> u32 {
        match self.find(k) {
            Ok(j) => self.ev[j].before_pos,
            Err(j) => self.plain(k, j),
        }
    }
    /// Position of instruction `k` itself.
    fn insn_pos(&self, k: usize) -> u32 {
        match self.find(k) {
            Ok(j) => self.ev[j].insn_pos,
            Err(j) => self.plain(k, j),
        }
    }
    /// End of instruction `k` and the code inserted after it.
    fn after_pos(&self, k: usize) -> u32 {
        match self.find(k) {
            Ok(j) => self.ev[j].after_pos,
            Err(j) => self.plain(k, j) + self.insns.get(k).map_or(0, |i| i.len),
        }
    }
    /// Position of instruction `k`, not an event, which follows `j` events.
    fn plain(&self, k: usize, j: usize) -> u32 {
        let Some(i) = self.insns.get(k) else {
            return self.end;
        };
        let shift = if j == 0 {
            self.prologue as i64
        } else {
            self.ev[j - 1].shift_after
        };
        (i.pc as i64 + shift) as u32
    }
}

impl Drop for MethodEditor<'_, '_> {
    fn drop(&mut self) {
        // the editor's buffers back in one visit to the thread's scratch
        let _ = SCRATCH.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                keep_filled(&mut s.insns, std::mem::take(&mut self.insn_buf));
                keep(&mut s.index_of, std::mem::take(&mut self.index_of));
                keep(&mut s.specials, std::mem::take(&mut self.specials));
                keep(&mut s.returns, std::mem::take(&mut self.returns));
                keep(&mut s.before, std::mem::take(&mut self.before));
                keep(&mut s.new_locals, std::mem::take(&mut self.new_locals));
            }
        });
    }
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
        // One pass: decode, index, note branches/switches and the locals used.
        let c = code.code;
        // An entry per code byte (at most that many instructions), filled only where this
        // thread's buffer was shorter: the instructions are `insns[..k]`.
        // the editor's buffers in one visit to the thread's scratch
        let (mut insns, mut index_of, mut specials, mut returns, before, new_locals) = SCRATCH
            .try_with(|s| {
                s.try_borrow_mut()
                    .map(|mut s| {
                        (
                            std::mem::take(&mut s.insns),
                            std::mem::take(&mut s.index_of),
                            std::mem::take(&mut s.specials),
                            std::mem::take(&mut s.returns),
                            std::mem::take(&mut s.before),
                            std::mem::take(&mut s.new_locals),
                        )
                    })
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        if insns.len() < c.len() {
            insns.resize(c.len(), NO_INSN);
        }
        index_of.resize(c.len() + 1, NONE);
        let mut locals_end = 0u32;
        let mut k = 0usize;
        let mut pc = 0usize;
        // the original pool's count: operands at or above it are refused (JVM: "Illegal
        // constant pool index"), not left to name the constants the rewrite appends
        let cp_count = cf.cp.count();
        while pc < c.len() {
            // the instructions of a fixed length in one run, then one the checked decoder reads
            (pc, k) = decode_fixed(
                c,
                cp_count,
                pc,
                &mut insns[..c.len()],
                k,
                &mut index_of[..c.len()],
                &mut specials,
                &mut returns,
                &mut locals_end,
            );
            if pc >= c.len() {
                break;
            }
            let i = crate::code::decode(c, pc).ctx(|| "Code")?;
            if let Some(idx) = i.cp_index(c) {
                if idx == 0 || idx >= cp_count {
                    return Err(bad_cp_operand(&i, idx, cp_count));
                }
            }
            index_of[pc] = k as u32;
            match KIND[i.opcode as usize] {
                0 => {}
                1 => {
                    if let Some(l) = i.local(c) {
                        locals_end = locals_end.max(l as u32 + i.local_size() as u32);
                    }
                }
                2 => specials.push(k as u32),
                _ => returns.push(k as u32),
            }
            // k <= pc < c.len(): every instruction has a byte
            insns[k] = i;
            k += 1;
            pc += i.len as usize;
        }
        index_of[c.len()] = k as u32;
        check_targets(
            c,
            &insns[..k],
            &specials,
            &index_of,
            &code.handlers,
            cp_count,
        )
        .ctx(|| "Code")?;
        // The locals the arguments take (with `this`) and those the code uses must fit in the
        // declared max_locals (HotSpot: ClassFormatError "Arguments can't fit into locals",
        // VerifyError "Local variable table overflow"): the rewrite recomputes max_locals, and
        // must not make such a method valid. Plain ASCII descriptors (all but odd ones) are
        // read as bytes without decoding; the checks and the error are those of
        // `method_param_slots`.
        let params = match cf.cp.utf8_bytes(method.descriptor_index) {
            Ok(b) if b.is_ascii() => crate::desc::method_param_slots_bytes(b),
            _ => None,
        };
        let params = match params {
            Some(n) => n,
            None => crate::desc::method_param_slots(&cf.member_desc(method))?,
        };
        let args = params as u32 + (method.access & ACC_STATIC == 0) as u32;
        if args > code.max_locals as u32 {
            return Err(Error::format(format!(
                "max_locals {} is below the {args} slot{} its arguments need ({}{})",
                code.max_locals,
                if args == 1 { "" } else { "s" },
                if method.access & ACC_STATIC == 0 {
                    "this and "
                } else {
                    ""
                },
                cf.member_desc(method)
            ))
            .context("Code"));
        }
        if locals_end > code.max_locals as u32 {
            return Err(Error::format(format!(
                "max_locals {} is below the {locals_end} slot{} its local variable accesses need",
                code.max_locals,
                if locals_end == 1 { "" } else { "s" },
            ))
            .context("Code"));
        }
        let next_local = code.max_locals;
        Ok(MethodEditor {
            cf,
            method,
            code,
            insn_buf: insns,
            n_insns: k,
            index_of,
            prologue: Snippet::new(),
            before,
            after: Vec::new(),
            catch_all: None,
            prologue_catch: None,
            trampolines: Vec::new(),
            new_locals,
            next_local,
            force_wide_jumps: false,
            ctor: std::cell::OnceCell::new(),
            specials,
            returns,
        })
    }

    pub fn insns(&self) -> &[Insn] {
        self.insn_buf.get(..self.n_insns).unwrap_or_default()
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
        self.cf
            .cp
            .utf8_bytes(self.method.name_index)
            .is_ok_and(|n| n == b"<init>")
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
        if k >= self.insns().len() {
            return Err(Error::new(ErrorKind::Edit, format!("no instruction {k}")));
        }
        put(&mut self.before, k as u32, s);
        Ok(())
    }

    /// Code run after instruction `k` when it falls through (not when a branch targets the next
    /// instruction). `k` must be able to fall through.
    pub fn insert_after(&mut self, k: usize, s: &Snippet) -> Result<()> {
        Self::neutral(s, "after")?;
        let i = *self
            .insns()
            .get(k)
            .ok_or_else(|| Error::new(ErrorKind::Edit, format!("no instruction {k}")))?;
        if sim::ends_block(&i) || i.flow() == Flow::Jsr {
            return Err(Error::new(
                ErrorKind::Edit,
                format!(
                    "cannot insert after {} (it does not fall through)",
                    opcodes::mnemonic(i.opcode)
                ),
            ));
        }
        put(&mut self.after, k as u32, s);
        Ok(())
    }

    /// Inserts `f(insn)` before every return instruction.
    pub fn insert_before_returns(
        &mut self,
        mut f: impl FnMut(&Insn) -> Result<Snippet>,
    ) -> Result<()> {
        for j in 0..self.returns.len() {
            let k = self.returns[j] as usize;
            let s = f(&self.insns()[k])?;
            Self::neutral(&s, "before")?;
            put_owned(&mut self.before, k as u32, s);
        }
        Ok(())
    }

    /// Inserts `f(insn)` before every athrow.
    pub fn insert_before_throws(
        &mut self,
        mut f: impl FnMut(&Insn) -> Result<Snippet>,
    ) -> Result<()> {
        for k in 0..self.insns().len() {
            if self.insns()[k].opcode == op::ATHROW {
                let s = f(&self.insns()[k])?;
                self.insert_before(k, &s)?;
            }
        }
        Ok(())
    }

    /// The first instructions of the exception table's handlers (indices, increasing, each
    /// once) whose range holds an instruction that `covers` accepts: where code inserted with
    /// [`MethodEditor::insert_before`] runs when such a handler is entered (and when a branch
    /// goes there).
    pub fn handler_starts(&self, mut covers: impl FnMut(&Insn) -> bool) -> Result<Vec<usize>> {
        let mut at = Vec::new();
        for h in &self.code.handlers {
            let (a, b) = (self.idx(h.start as u32)?, self.idx(h.end as u32)?);
            let k = self.idx(h.handler as u32)?;
            // (rows of one handler are usually next to each other: javac's `finally`)
            if at.last() != Some(&k) && self.insns()[a..b.max(a)].iter().any(&mut covers) {
                at.push(k);
            }
        }
        at.sort_unstable();
        at.dedup();
        Ok(at)
    }

    /// Adds a handler for any exception around the whole body (in a constructor: from after the
    /// super()/this() call), placed after all existing handlers. It runs `s` with the exception
    /// on the stack (`s` must leave it there) and re-throws it.
    pub fn add_catch_all(&mut self, s: &Snippet) -> Result<()> {
        Self::neutral(s, "handler")?;
        self.catch_all.get_or_insert_with(Snippet::new).append(s);
        Ok(())
    }

    /// In a constructor: adds a handler for any exception over the code that runs before its
    /// super()/this() call (not the call itself: JVMS 4.10.1.9 allows such a handler only
    /// where `this` is uninitialized on every path, and it must end in athrow), placed after
    /// all existing handlers. It runs `s` with the exception on the stack (`s` must leave it
    /// there) and re-throws it; its frame's locals are `this` (uninitializedThis) and the new
    /// locals. Left out (silently) in other methods, in class files before version 50, and
    /// where the code before the call writes local 0 or uses jsr.
    pub fn add_prologue_catch(&mut self, s: &Snippet) -> Result<()> {
        Self::neutral(s, "handler")?;
        self.prologue_catch
            .get_or_insert_with(Snippet::new)
            .append(s);
        Ok(())
    }

    /// Code run when switch `k` goes to `target_pc` (every case, or the default, that goes
    /// there), and only then: those entries are sent to a trampoline after the method's code
    /// that runs `s` and jumps on (`goto_w`), with the target's frame.
    pub fn insert_on_switch_edge(&mut self, k: usize, target_pc: u32, s: &Snippet) -> Result<()> {
        Self::neutral(s, "switch edge")?;
        let i = *self
            .insns()
            .get(k)
            .ok_or_else(|| Error::new(ErrorKind::Edit, format!("no instruction {k}")))?;
        if i.flow() != Flow::Switch {
            return Err(Error::new(
                ErrorKind::Edit,
                format!(
                    "instruction {k} ({}) is not a switch",
                    opcodes::mnemonic(i.opcode)
                ),
            ));
        }
        let mut found = false;
        i.for_each_target(self.code.code, |t| found |= t == target_pc as i64);
        if !found {
            return Err(Error::new(
                ErrorKind::Edit,
                format!("the switch at pc {} does not go to {target_pc}", i.pc),
            ));
        }
        match self
            .trampolines
            .iter_mut()
            .find(|t| t.0 == k as u32 && t.1 == target_pc)
        {
            Some(t) => t.2.append(s),
            None => self.trampolines.push((k as u32, target_pc, s.clone())),
        }
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
        // the pool's first Utf8 `StackMapTable`, noted by its parse: none, no such attribute;
        // an entry below it has other text
        let first = self.cf.cp.smt_name();
        if first == 0 {
            return None;
        }
        self.code
            .attributes
            .iter()
            .find(|a| {
                a.name_index == first
                    || (a.name_index > first
                        && self
                            .cf
                            .cp
                            .utf8_bytes(a.name_index)
                            .is_ok_and(|n| n == b"StackMapTable"))
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
        for (k, i) in self.insns().iter().enumerate() {
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
            sim::exec(s, i, code, &self.cf.cp, &this_name, ctx)
                .map_err(|e| e.context(format!("pc {}", i.pc)))?;
            let mut record = |t: i64, st: &State| {
                if t > i.pc as i64 {
                    pending.entry(t as u32).or_insert_with(|| st.clone());
                }
            };
            match i.flow() {
                Flow::Cond | Flow::Goto => {
                    i.for_each_target(code, |t| record(t, s));
                }
                Flow::Switch => i.for_each_target(code, |t| record(t, s)),
                _ => {}
            }
            if sim::ends_block(i) || i.flow() == Flow::Jsr {
                cur = None;
            }
        }
        Ok(())
    }

    /// Indices of the instructions that initialize `this` in a constructor (the invokespecial
    /// <init> on uninitializedThis: one per branch when branches call different super()/this()
    /// constructors), increasing; empty for methods that are not constructors and for
    /// java/lang/Object.<init>. An error if a constructor has none, or if an instruction is
    /// reached both before and after the call (no place for an entry probe and a handler).
    pub fn super_calls(&self) -> Result<&[usize]> {
        if self.ctor.get().is_none() {
            let c = self.find_ctor()?;
            let _ = self.ctor.set(c);
        }
        Ok(match self.ctor.get() {
            Some(Some(c)) => &c.calls,
            _ => &[],
        })
    }

    fn ctor(&self) -> Result<Option<&Ctor>> {
        self.super_calls()?;
        Ok(self.ctor.get().and_then(Option::as_ref))
    }

    fn find_ctor(&self) -> Result<Option<Ctor>> {
        if !self.is_constructor() || self.is_static() || self.cf.name()? == "java/lang/Object" {
            return Ok(None);
        }
        // Usually one call: the simulation stops at the first, and if every return is reached
        // after it (and nothing both before and after), other calls could only be on paths
        // that never return, which then simply stay uninstrumented. Otherwise all calls.
        let first = match self.straight_init_call() {
            Some(k) => vec![k],
            None => self.init_calls(true)?,
        };
        if first.len() == 1 {
            if let Ok(state) = self.this_states(&first) {
                return Ok(Some(Ctor {
                    calls: first,
                    state,
                }));
            }
        }
        let calls = self.init_calls(false)?;
        if calls.is_empty() {
            return Err(Error::new(
                ErrorKind::Edit,
                "constructor without a super()/this() call",
            ));
        }
        let state = self.this_states(&calls)?;
        Ok(Some(Ctor { calls, state }))
    }

    /// `init_calls(true)` without the typed simulation, for the usual constructor whose code
    /// runs straight up to its super()/this() call: no jump, switch, return, throw or ret
    /// before it, nothing jumping into that code, no exception handler over it or in it,
    /// local 0 never written. `this` then only travels on the stack (from `aload_0`, copied
    /// by dup and swap, taken as the object of a putfield), tracked per stack slot; any
    /// other use of it, or anything else, gives None and the general way decides.
    fn straight_init_call(&self) -> Option<usize> {
        let code = self.code.code;
        let cp = &self.cf.cp;
        // the first pc that is entered other than by falling through
        let mut limit = u32::MAX;
        for &k in &self.specials {
            self.insns()[k as usize].for_each_target(code, |t| {
                limit = limit.min(u32::try_from(t).unwrap_or(0));
            });
        }
        for h in &self.code.handlers {
            limit = limit.min(h.start as u32).min(h.handler as u32);
        }
        // operand stack slots, bit j: whether slot j holds `this` (deeper stacks: None)
        let mut st = ThisSlots::default();
        for (k, i) in self.insns().iter().enumerate() {
            if i.pc >= limit || i.flow() != Flow::Next {
                return None;
            }
            let o = i.opcode;
            match o {
                op::ALOAD_0 => st.push(1, true)?,
                op::ALOAD if i.local(code) == Some(0) => st.push(1, true)?,
                op::ISTORE..=op::ASTORE_3 | op::IINC if i.local(code) == Some(0) => return None,
                // copy the top 1 or 2 slots below the 1 or 2 under them (JVMS dup*)
                op::DUP => st.dup(1, 0)?,
                op::DUP_X1 => st.dup(1, 1)?,
                op::DUP_X2 => st.dup(1, 2)?,
                op::DUP2 => st.dup(2, 0)?,
                op::DUP2_X1 => st.dup(2, 1)?,
                op::DUP2_X2 => st.dup(2, 2)?,
                op::SWAP => st.swap()?,
                op::INVOKESPECIAL => {
                    let m = cp.member_ref_bytes(i.cp_index(code)?).ok()?;
                    let (a, r) = crate::desc::method_slots_bytes(m.desc).ok()?;
                    if st.take(a as u32)? {
                        return None;
                    }
                    let receiver = st.take(1)?;
                    if m.name == b"<init>" && receiver {
                        return Some(k);
                    }
                    if receiver {
                        return None;
                    }
                    st.push(r as u32, false)?;
                }
                op::PUTFIELD => {
                    let (_, d) = cp.ref_name_desc_bytes(i.cp_index(code)?).ok()?;
                    if st.take(crate::desc::slots_bytes(d) as u32)? {
                        return None;
                    }
                    st.take(1)?;
                }
                _ => {
                    let (p, q) = sim::depth_effect(i, code, cp).ok()?;
                    if st.take(p as u32)? {
                        return None;
                    }
                    st.push(q as u32, false)?;
                }
            }
        }
        None
    }

    /// For tests: the constructor's first super()/this() call found the fast way (None: not
    /// straight code) and the general way.
    #[doc(hidden)]
    pub fn first_init_call_both_ways(&self) -> Result<(Option<usize>, Vec<usize>)> {
        Ok((self.straight_init_call(), self.init_calls(true)?))
    }

    /// The invokespecial <init> calls on uninitializedThis (`first_only`: the first found).
    fn init_calls(&self, first_only: bool) -> Result<Vec<usize>> {
        let code = self.code.code;
        let cp = &self.cf.cp;
        let mut calls = Vec::new();
        self.simulate(&mut Untyped, |k, s| {
            let i = &self.insns()[k];
            if i.opcode == op::INVOKESPECIAL {
                let m = cp.member_ref(i.cp_index(code).unwrap_or(0))?;
                if m.name == "<init>" {
                    let (a, _) = crate::desc::method_slots(&m.desc)?;
                    let depth = s.stack.len();
                    if depth > a as usize
                        && s.stack[depth - 1 - a as usize] == VType::UninitializedThis
                    {
                        calls.push(k);
                        return Ok(first_only);
                    }
                }
            }
            Ok(false)
        })?;
        Ok(calls)
    }

    /// Forward data flow over the original code (branches, switches, handlers, jsr/ret): at
    /// each instruction, whether `this` has been initialized by one of `calls`.
    fn this_states(&self, calls: &[usize]) -> Result<Vec<u8>> {
        let n = self.insns().len();
        let code = self.code.code;
        let mut state = vec![UNREACHED; n];
        let mut work = vec![0usize];
        if n > 0 {
            state[0] = THIS_UNINIT;
        }
        let after_jsr: Vec<usize> = (0..n)
            .filter(|&k| self.insns()[k].flow() == Flow::Jsr && k + 1 < n)
            .map(|k| k + 1)
            .collect();
        let mut succ: Vec<(usize, u8)> = Vec::new();
        let insns = self.insns();
        let no_handlers = self.code.handlers.is_empty();
        while let Some(k) = work.pop() {
            let i = insns[k];
            succ.clear();
            let st_in = state[k];
            let st_out = if calls.binary_search(&k).is_ok() {
                THIS_INIT
            } else {
                st_in
            };
            if no_handlers && i.flow() == Flow::Next {
                // the usual instruction: it only falls through (no target, no handler, not
                // the end of a block), as the general way below finds
                let j = k + 1;
                if j < n {
                    if state[j] == UNREACHED {
                        state[j] = st_out;
                        work.push(j);
                    } else if state[j] != st_out {
                        return Err(reached_both(insns[j].pc));
                    }
                }
                continue;
            }
            let mut bad = None;
            if !sim::ends_block(&i) && k + 1 < n {
                succ.push((k + 1, st_out));
            }
            i.for_each_target(code, |t| match u32::try_from(t).ok().map(|t| self.idx(t)) {
                Some(Ok(j)) => succ.push((j, st_out)),
                _ => bad = Some(t),
            });
            if let Some(t) = bad {
                return Err(Error::format(format!(
                    "pc {}: branch target {t} is not an instruction",
                    i.pc
                )));
            }
            if i.flow() == Flow::Ret {
                succ.extend(after_jsr.iter().map(|&j| (j, st_out)));
            }
            for h in &self.code.handlers {
                if (h.start as u32) <= i.pc && i.pc < h.end as u32 {
                    // an exception thrown by the instruction: the state before it
                    succ.push((self.idx(h.handler as u32)?, st_in));
                }
            }
            for &(j, st) in &succ {
                if state[j] == UNREACHED {
                    state[j] = st;
                    work.push(j);
                } else if state[j] != st {
                    return Err(reached_both(insns[j].pc));
                }
            }
        }
        if let Some(k) =
            (0..n).find(|&k| self.insns()[k].flow() == Flow::Return && state[k] == THIS_UNINIT)
        {
            return Err(Error::new(
                ErrorKind::Edit,
                format!(
                    "constructor: return at pc {} without a super()/this() call found before it",
                    self.insns()[k].pc
                ),
            ));
        }
        Ok(state)
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
        let i = &self.insns()[k];
        match i.operands() {
            Operands::Branch16 if wide => match i.flow() {
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

    /// Whether a handler over a constructor's code before its super()/this() call can have
    /// the frame [`MethodEditor::add_prologue_catch`] gives it: a class file with frames, no
    /// jsr, and local 0 `this` (uninitializedThis) at every instruction of that code.
    fn prologue_catch_fits(&self, cp: &mut CpBuilder<'_>) -> Result<bool> {
        let Some(c) = self.ctor()? else {
            return Ok(false);
        };
        if self.cf.major < 50 || self.insns().iter().any(|i| i.flow() == Flow::Jsr) {
            return Ok(false);
        }
        let last = match (0..c.state.len())
            .rev()
            .find(|&k| c.state[k] == THIS_UNINIT)
        {
            Some(k) => k,
            None => return Ok(false),
        };
        let mut ok = true;
        let mut seen = vec![false; last + 1];
        self.simulate(cp, |k, s| {
            if k <= last && c.state[k] == THIS_UNINIT {
                seen[k] = true;
                if s.locals.first() != Some(&VType::UninitializedThis) {
                    ok = false;
                }
            }
            Ok(!ok || k >= last)
        })?;
        Ok(ok && (0..=last).all(|k| c.state[k] != THIS_UNINIT || seen[k]))
    }

    /// Writes the new Code attribute body (everything after attribute_length).
    pub fn finish(self, cp: &mut CpBuilder<'_>) -> Result<Vec<u8>> {
        let (cf, m) = (self.cf, self.method);
        self.finish_inner(cp)
            .map_err(|e| e.context(cf.method_path(m)))
    }

    /// Code inserted before the first instruction of a handler inside its own range (javac's
    /// `finally` and `synchronized` code: the catch-any row covers the handler's first store,
    /// and its monitorexit with the lock still held) moves to the end of that range when the
    /// code up to there runs straight (no branch, nothing else entering it): it then runs
    /// once the handler leaves its own range, at the lock depth of the code around it.
    /// Inside the range, inserted code that can throw (an array store) makes the handler
    /// cover itself, which C1 refuses ("exception handler covers itself"), and the method
    /// stayed interpreted.
    fn relocate_self_covered(&mut self) -> Result<()> {
        if self.before.is_empty() || self.code.handlers.is_empty() {
            return Ok(());
        }
        let code = self.code.code;
        let mut entered = vec![false; self.insns().len()];
        for i in self.insns() {
            i.for_each_target(code, |t| {
                // (targets are instructions: `open` checked them)
                if let Some(&k) = usize::try_from(t).ok().and_then(|t| self.index_of.get(t)) {
                    if let Some(e) = entered.get_mut(k as usize) {
                        *e = true;
                    }
                }
            });
        }
        for h in &self.code.handlers {
            if let Some(e) = entered.get_mut(self.idx(h.handler as u32)?) {
                *e = true;
            }
        }
        for h in &self.code.handlers {
            if !(h.start <= h.handler && h.handler < h.end) || h.end as usize >= code.len() {
                continue;
            }
            let (kh, ke) = (self.idx(h.handler as u32)?, self.idx(h.end as u32)?);
            let Ok(j) = self.before.binary_search_by_key(&(kh as u32), |e| e.0) else {
                continue;
            };
            let straight = (kh..ke).all(|k| {
                self.insns()[k].flow() == Flow::Next
                    && self
                        .after
                        .binary_search_by_key(&(k as u32), |e| e.0)
                        .is_err()
            }) && (kh + 1..=ke).all(|k| !entered[k]);
            if !straight {
                continue;
            }
            let (_, moved) = self.before.remove(j);
            // it ran first: it stays before what was inserted at the range's end
            match self.before.binary_search_by_key(&(ke as u32), |e| e.0) {
                Ok(i) => {
                    let mut joined = moved;
                    joined.append(&self.before[i].1);
                    self.before[i].1 = joined;
                }
                Err(i) => self.before.insert(i, (ke as u32, moved)),
            }
        }
        Ok(())
    }

    fn finish_inner(mut self, cp: &mut CpBuilder<'_>) -> Result<Vec<u8>> {
        self.relocate_self_covered()?;
        let prologue_catch = match self.prologue_catch.take() {
            Some(h) if self.prologue_catch_fits(cp)? => Some(h),
            _ => None,
        };
        let n = self.insns().len();
        let code = self.code.code;
        let code_len = code.len() as u32;
        // The layout only differs from a plain copy of the original code at "events":
        // instructions with inserted code before/after them, branches and switches. Positions
        // are computed per event; between events the code moves as a block.
        let mut ev: Vec<Event> = take(|s| &mut s.events);
        ev.reserve(self.before.len() + self.after.len() + self.specials.len());
        {
            let (mut x, mut y, mut z) = (0, 0, 0);
            let key = |l: &[(u32, Snippet)], i: usize| l.get(i).map_or(u32::MAX, |e| e.0);
            loop {
                let b = key(&self.before, x);
                let a = key(&self.after, y);
                let sp = self.specials.get(z).copied().unwrap_or(u32::MAX);
                let k = b.min(a).min(sp);
                if k == u32::MAX {
                    break;
                }
                let mut e = Event {
                    k,
                    before: NONE,
                    after: NONE,
                    target: NONE,
                    wide: false,
                    before_pos: 0,
                    insn_pos: 0,
                    after_pos: 0,
                    shift_after: 0,
                };
                if b == k {
                    e.before = x as u32;
                    x += 1;
                }
                if a == k {
                    e.after = y as u32;
                    y += 1;
                }
                z += (sp == k) as usize;
                ev.push(e);
            }
        }
        let mut targets_zero = self.code.handlers.iter().any(|h| h.handler == 0);
        for e in ev.iter_mut() {
            let i = &self.insns()[e.k as usize];
            if let Some(o) = i.branch_offset(code) {
                let t = i.pc as i64 + o as i64;
                if t < 0 || t >= code_len as i64 {
                    return Err(Error::format(format!(
                        "branch at pc {} to {t} is outside the code",
                        i.pc
                    )));
                }
                targets_zero |= t == 0;
                e.target = self.idx(t as u32)? as u32;
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
            if self.force_wide_jumps {
                e.wide = i.operands() == Operands::Branch16;
            }
        }
        let snip_len = |l: &[(u32, Snippet)], x: u32| -> i64 {
            if x == NONE {
                0
            } else {
                l.get(x as usize).map_or(0, |e| e.1.len() as i64)
            }
        };
        let mut lay = Layout {
            ev,
            insns: self.insns(),
            prologue: self.prologue.len() as u32,
            end: 0,
        };
        let mut tramp_pos: Vec<u32> = Vec::with_capacity(self.trampolines.len());
        let (end_pos, handler_pos, prologue_handler_pos, total) = loop {
            let mut shift = lay.prologue as i64;
            for e in lay.ev.iter_mut() {
                let k = e.k as usize;
                let i = &self.insns()[k];
                e.before_pos = (i.pc as i64 + shift) as u32;
                shift += snip_len(&self.before, e.before);
                let at = (i.pc as i64 + shift) as u32;
                e.insn_pos = at;
                let size = self.size(k, at, e.wide);
                e.after_pos = at + size;
                shift += size as i64 - i.len as i64 + snip_len(&self.after, e.after);
                e.shift_after = shift;
            }
            let mut pos = (code_len as i64 + shift) as u32;
            lay.end = pos;
            let end_pos = pos;
            tramp_pos.clear();
            for (_, _, s) in &self.trampolines {
                tramp_pos.push(pos);
                pos += s.len() as u32 + 5;
            }
            let handler_pos = pos;
            if let Some(h) = &self.catch_all {
                pos += h.len() as u32 + 1;
            }
            let prologue_handler_pos = pos;
            if let Some(h) = &prologue_catch {
                pos += h.len() as u32 + 1;
            }
            if pos > 65535 {
                return Err(Error::new(
                    ErrorKind::TooLarge,
                    format!("code would be {pos} bytes (limit 65535)"),
                ));
            }
            let mut changed = false;
            for j in 0..lay.ev.len() {
                let e = lay.ev[j];
                if e.target != NONE
                    && !e.wide
                    && self.insns()[e.k as usize].operands() == Operands::Branch16
                {
                    let off = lay.before_pos(e.target as usize) as i64 - e.insn_pos as i64;
                    if off < i16::MIN as i64 || off > i16::MAX as i64 {
                        lay.ev[j].wide = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                break (end_pos, handler_pos, prologue_handler_pos, pos);
            }
        };
        let lay = lay;
        let map = |pc: u32, at: At| -> Result<u32> {
            if pc == code_len {
                return Ok(end_pos);
            }
            let k = self.idx(pc)?;
            Ok(match at {
                At::Before => lay.before_pos(k),
                At::Insn => lay.insn_pos(k),
            })
        };

        // --- code bytes: untouched code is copied in blocks between events
        // The code is written straight into the Code attribute body, after max_stack,
        // max_locals and code_length (patched once known).
        const BASE: usize = 8;
        let attrs_len: usize = self.code.attributes.iter().map(|a| a.data.len()).sum();
        let mut out: Vec<u8> = Vec::with_capacity(
            BASE + total as usize
                + 8 * (self.code.handlers.len() + 1)
                + self.code.code.len() / 2
                + 64
                + 4 * attrs_len / 3,
        );
        out.extend_from_slice(&[0; BASE]);
        out.extend_from_slice(self.prologue.bytes());
        let mut copied = 0usize;
        for e in &lay.ev {
            let i = &self.insns()[e.k as usize];
            out.extend_from_slice(&code[copied..i.pc as usize]);
            copied = (i.pc + i.len) as usize;
            if let Some((_, s)) = self.before.get(e.before as usize) {
                out.extend_from_slice(s.bytes());
            }
            let here = e.insn_pos as i64;
            debug_assert_eq!((out.len() - BASE) as u32, e.insn_pos);
            match i.operands() {
                Operands::Branch16 | Operands::Branch32 => {
                    let t = lay.before_pos(e.target as usize) as i64;
                    if i.operands() == Operands::Branch32 {
                        out.push(i.opcode);
                        out.extend_from_slice(&((t - here) as i32).to_be_bytes());
                    } else if !e.wide {
                        out.push(i.opcode);
                        out.extend_from_slice(&((t - here) as i16).to_be_bytes());
                    } else {
                        match i.flow() {
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
                    while !(out.len() - BASE).is_multiple_of(4) {
                        out.push(0);
                    }
                    let ob = (i.pc as usize + 4) & !3;
                    let rel = |o: i32| -> Result<[u8; 4]> {
                        let pc = (i.pc as i64 + o as i64) as u32;
                        let t = match self
                            .trampolines
                            .iter()
                            .position(|t| t.0 == e.k && t.1 == pc)
                        {
                            Some(j) => tramp_pos[j],
                            None => map(pc, At::Before)?,
                        };
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
                _ => out.extend_from_slice(&code[i.pc as usize..copied]),
            }
            if let Some((_, s)) = self.after.get(e.after as usize) {
                out.extend_from_slice(s.bytes());
            }
        }
        out.extend_from_slice(&code[copied..]);
        debug_assert_eq!((out.len() - BASE) as u32, end_pos);
        for (j, (_, target, s)) in self.trampolines.iter().enumerate() {
            debug_assert_eq!((out.len() - BASE) as u32, tramp_pos[j]);
            out.extend_from_slice(s.bytes());
            let at = (out.len() - BASE) as i64;
            out.push(op::GOTO_W);
            out.extend_from_slice(&((map(*target, At::Before)? as i64 - at) as i32).to_be_bytes());
        }
        if let Some(h) = &self.catch_all {
            out.extend_from_slice(h.bytes());
            out.push(op::ATHROW);
        }
        if let Some(h) = &prologue_catch {
            debug_assert_eq!((out.len() - BASE) as u32, prologue_handler_pos);
            out.extend_from_slice(h.bytes());
            out.push(op::ATHROW);
        }
        debug_assert_eq!((out.len() - BASE) as u32, total);

        // --- exception table
        // Written right after the code; the count is patched once the catch-all is decided.
        let handlers_at = out.len();
        out.extend_from_slice(&[0, 0]);
        let row = |out: &mut Vec<u8>, r: [u32; 4]| {
            for v in r {
                out.extend_from_slice(&(v as u16).to_be_bytes());
            }
        };
        // Holes: code inserted before the first instruction of a handler that lies inside
        // its own range (javac's `finally` and `synchronized` code, whose catch-any row
        // covers the handler's first store and its monitorexit, with the lock still held).
        // No row covers such code. Covered by its own row, a probe there that can throw (an
        // array store) makes the handler cover itself, which C1 refuses ("exception handler
        // covers itself"); covered by an outer row or the catch-all, it reaches a handler
        // with the lock held that other paths reach without it, which C1 refuses too
        // ("invalid parsing"). Either way the method stayed interpreted. The probes there
        // do not throw (an array the lookup returned, an index within it).
        let mut holes: Vec<(u32, u32)> = Vec::new();
        for h in &self.code.handlers {
            if h.start <= h.handler && h.handler < h.end {
                let (b, i) = (
                    map(h.handler as u32, At::Before)?,
                    map(h.handler as u32, At::Insn)?,
                );
                if b < i {
                    holes.push((b, i));
                }
            }
        }
        holes.sort_unstable();
        holes.dedup();
        // [s, e) without the holes, in order, each piece given to `f`
        let pieces = |s: u32, e: u32, f: &mut dyn FnMut(u32, u32)| {
            let mut at = s;
            for &(hs, he) in &holes {
                if he <= at || hs >= e {
                    continue;
                }
                if hs > at {
                    f(at, hs);
                }
                at = at.max(he);
            }
            if at < e {
                f(at, e);
            }
        };
        let mut n_handlers = 0usize;
        for h in &self.code.handlers {
            let (start, end) = (
                map(h.start as u32, At::Before)?,
                map(h.end as u32, At::Before)?,
            );
            let handler = map(h.handler as u32, At::Before)?;
            pieces(start, end, &mut |s, e| {
                row(&mut out, [s, e, handler, h.catch_type as u32]);
                n_handlers += 1;
            });
        }
        // The catch-all covers the code that runs after the entry probe: all of it, or in a
        // constructor every run of code where `this` is initialized, each starting after a
        // super()/this() call (no handler may cover code where `this` is uninitialized).
        let with_catch_all = self.catch_all.is_some();
        let mut catch_rows = 0usize;
        let mut range = |s: u32, e: u32| {
            if with_catch_all && s < e {
                pieces(s, e, &mut |s, e| {
                    row(&mut out, [s, e, handler_pos, 0]);
                    catch_rows += 1;
                });
            }
        };
        match self.ctor()? {
            None => range(lay.before_pos(0), end_pos),
            Some(c) => {
                let mut start = None;
                for k in 0..n {
                    if c.state[k] != THIS_INIT {
                        if let Some(s) = start.take() {
                            range(s, lay.before_pos(k));
                        }
                    } else if start.is_none() {
                        start = Some(lay.before_pos(k));
                    }
                    if c.calls.binary_search(&k).is_ok() {
                        start = Some(lay.after_pos(k));
                    }
                }
                if let Some(s) = start {
                    range(s, end_pos);
                }
            }
        }
        let add_catch_all = catch_rows > 0;
        n_handlers += catch_rows;
        // The prologue handler covers, after them, the code where `this` is uninitialized,
        // up to (not including) each super()/this() call.
        let mut prologue_rows = 0usize;
        // (the constructor's analysis only when there is a prologue handler: other methods
        // never need it here)
        let ctor = match prologue_catch {
            Some(_) => self.ctor()?,
            None => None,
        };
        if let Some(c) = ctor {
            let mut start = None;
            for k in 0..n {
                let uninit = c.state[k] == THIS_UNINIT;
                let call = c.calls.binary_search(&k).is_ok();
                if uninit && start.is_none() {
                    start = Some(lay.before_pos(k));
                }
                let end = if !uninit {
                    Some(lay.before_pos(k))
                } else if call {
                    Some(lay.insn_pos(k))
                } else {
                    None
                };
                if let (Some(s), Some(e)) = (start, end) {
                    start = None;
                    if s < e {
                        pieces(s, e, &mut |s, e| {
                            row(&mut out, [s, e, prologue_handler_pos, 0]);
                            prologue_rows += 1;
                        });
                    }
                }
            }
            if let Some(s) = start {
                pieces(s, end_pos, &mut |s, e| {
                    row(&mut out, [s, e, prologue_handler_pos, 0]);
                    prologue_rows += 1;
                });
            }
        }
        let add_prologue_catch = prologue_rows > 0;
        n_handlers += prologue_rows;
        if n_handlers > 0xFFFF {
            return Err(Error::new(
                ErrorKind::TooLarge,
                "exception table over 65535 rows",
            ));
        }
        out[handlers_at..handlers_at + 2].copy_from_slice(&(n_handlers as u16).to_be_bytes());

        // --- max_stack. With code only at entry, before or after instructions and in a
        // catch-all (the cpu-times probes, a constructor's entry after its super() call), a
        // bound needs no data flow: valid code never has more than the declared max_stack on
        // its stack, before or after any instruction, so code inserted there reaches at most
        // that plus its own depth (JaCoCo's ProbeInserter bounds its probes so, by
        // max_stack + 3). Code on an edge (coverage's trampolines) takes the depth there from
        // data flow over the original code: the bound would grow every covered method's
        // max_stack by a counter's depth.
        let simple = self.trampolines.is_empty();
        let declared = self.code.max_stack as u32;
        let mut max_stack = declared;
        let mut bump = |d: u32| max_stack = max_stack.max(d);
        bump(self.prologue.max_depth() as u32);
        if let Some(h) = &self.catch_all {
            bump(1 + h.max_depth() as u32);
        }
        if let Some(h) = &prologue_catch {
            bump(1 + h.max_depth() as u32);
        }
        if simple {
            let deepest = (self.before.iter().chain(&self.after))
                .map(|(_, s)| s.max_depth())
                .max();
            if let Some(d) = deepest.filter(|&d| d > 0) {
                bump(self.code.max_stack as u32 + d as u32);
            }
        } else {
            let depths = self.depths_with(&mut cp.ref_effects)?;
            check_max_stack(declared, depths.max)?;
            for e in &lay.ev {
                let k = e.k as usize;
                let din = depths.depth_in[k];
                if din == NONE {
                    continue;
                }
                if let Some((_, s)) = self.before.get(e.before as usize) {
                    bump(din + s.max_depth() as u32);
                }
                if let Some((_, s)) = self.after.get(e.after as usize) {
                    let (p, q) = sim::depth_effect(&self.insns()[k], code, &self.cf.cp)?;
                    bump(din - p as u32 + q as u32 + s.max_depth() as u32);
                }
            }
            for (_, target, s) in &self.trampolines {
                let d = depths.depth_in[self.idx(*target)?];
                if d != NONE {
                    bump(d + s.max_depth() as u32);
                }
            }
            give(depths.depth_in, |s| &mut s.depth_in);
        }
        // (simple path: code deeper than its declared max_stack is not detected, as that would
        // take the data flow this path avoids. The JVM rejects such a class bare (VerifyError
        // "Stack size too large"), but the room the probes add is room for the original code
        // too: an overflow no deeper than the deepest snippet verifies once rewritten. README,
        // "Verifying", says so.)
        if max_stack > 0xFFFF {
            return Err(Error::new(ErrorKind::TooLarge, "max_stack over 65535"));
        }
        // (the arguments and the locals the code uses fit in the declared max_locals: `open`
        // checked)
        let max_locals = (self.code.max_locals as u32).max(self.next_local as u32);

        // --- frames
        let smt = self.smt();
        let widened_cond: Vec<usize> = lay
            .ev
            .iter()
            .filter(|e| e.wide && matches!(self.insns()[e.k as usize].flow(), Flow::Cond))
            .map(|e| e.k as usize)
            .collect();

        let entry_frame_needed = !self.prologue.is_empty() && targets_zero;
        let need_new_frames = add_catch_all
            || add_prologue_catch
            || !widened_cond.is_empty()
            || entry_frame_needed
            || !self.trampolines.is_empty();
        let mut smt_bytes: Option<Vec<u8>> = None;
        let fast_frames =
            widened_cond.is_empty() && !entry_frame_needed && self.trampolines.is_empty();
        if self.cf.major >= 50 && (smt.is_some() || need_new_frames) && fast_frames {
            // Frames keep their contents: patch offsets in the byte stream, append the handler's.
            let mut handler_frame = None;
            if add_catch_all {
                let t = cp.throwable()?;
                let mut stack = take(|s| &mut s.types);
                stack.push(VType::Object(t));
                handler_frame = Some(Frame {
                    offset: handler_pos,
                    locals: Vec::new(),
                    stack,
                });
            }
            // (a constructor's prologue handler, rare: after the catch-all's)
            let with_prologue: Vec<Frame>;
            let extra = if add_prologue_catch {
                with_prologue = (handler_frame.iter().cloned())
                    .chain([Frame {
                        offset: prologue_handler_pos,
                        locals: vec![VType::UninitializedThis],
                        stack: vec![VType::Object(cp.throwable()?)],
                    }])
                    .collect();
                with_prologue.as_slice()
            } else {
                handler_frame.as_slice()
            };
            // new locals (e.g. a probe's token, set in the prologue): in every frame; the
            // method's implicit first frame is read only by the table's frames
            let init = if self.new_locals.is_empty() || smt.is_none() {
                Vec::new()
            } else {
                self.initial_locals(cp)?
            };
            let added = frames::AddedLocals {
                initial: &init,
                locals: &self.new_locals,
            };
            let added = (!self.new_locals.is_empty()).then_some(&added);
            let mut b = take(|s| &mut s.frame_bytes);
            b.reserve(smt.map_or(0, |a| a.data.len()) + 16);
            match smt {
                Some(a) => frames::relocate_table(
                    a.data,
                    a.offset,
                    |o| map(o, At::Before),
                    |o| map(o as u32, At::Insn).map(|x| x as u16),
                    extra,
                    added,
                    &mut b,
                )
                .ctx(|| "StackMapTable")?,
                None => frames::relocate_table(&[0, 0], 0, Ok, Ok, extra, added, &mut b)?,
            }
            if let Some(f) = handler_frame {
                give(f.stack, |s| &mut s.types);
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
                    lay.before_pos(0),
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
                    let pos = lay.after_pos(k);
                    let next_has = self
                        .after
                        .binary_search_by_key(&(k as u32), |e| e.0)
                        .is_err()
                        && has_frame_at(self.insns()[k].pc + self.insns()[k].len);
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
                                    self.insns()[k].pc
                                ),
                            )
                        })?;
                        sim::exec(
                            &mut s,
                            &self.insns()[k],
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
            for (j, (_, target, _)) in self.trampolines.iter().enumerate() {
                // a switch target has a frame in the original table
                let f = orig
                    .binary_search_by_key(target, |f| f.offset)
                    .map(|x| orig[x].clone())
                    .map_err(|_| {
                        Error::new(
                            ErrorKind::Edit,
                            format!("no frame at the switch target {target}"),
                        )
                    })?;
                fs.push((tramp_pos[j], f));
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
            if add_prologue_catch {
                let t = cp.throwable()?;
                fs.push((
                    prologue_handler_pos,
                    Frame {
                        offset: 0,
                        locals: vec![VType::UninitializedThis],
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
        let mut attr = out;
        attr[0..2].copy_from_slice(&(max_stack as u16).to_be_bytes());
        attr[2..4].copy_from_slice(&(max_locals as u16).to_be_bytes());
        attr[4..8].copy_from_slice(&total.to_be_bytes());
        let count_at = attr.len();
        attr.extend_from_slice(&[0, 0]);
        let mut count = 0u16;
        let mut wrote_smt = false;
        let cp_count = self.cf.cp.count();
        for a in &self.code.attributes {
            let name = self.cf.cp.utf8_bytes(a.name_index)?;
            let skip = match name {
                b"StackMapTable" => smt_bytes.is_none(),
                // Type annotations on code hold offsets we do not relocate: drop them rather
                // than keep wrong offsets (they are not used by the JVM).
                b"RuntimeVisibleTypeAnnotations" | b"RuntimeInvisibleTypeAnnotations" => true,
                _ => false,
            };
            if skip {
                continue;
            }
            // The body is written in place; its length is patched after it.
            attr.extend_from_slice(&a.name_index.to_be_bytes());
            let len_at = attr.len();
            attr.extend_from_slice(&[0; 4]);
            let d = a.data;
            let entries =
                |w: usize| (d.len() >= 2).then(|| (crate::reader::be16(d, 0) as usize, w));
            match name {
                b"StackMapTable" => {
                    if let Some(s) = &smt_bytes {
                        attr.extend_from_slice(s);
                        wrote_smt = true;
                    }
                }
                b"LineNumberTable" => match entries(4) {
                    // Well-formed: copied, then relocated in place.
                    Some((n, w)) if d.len() == 2 + n * w => {
                        let at = attr.len();
                        attr.extend_from_slice(d);
                        for e in attr[at + 2..].chunks_exact_mut(4) {
                            let pc = u16::from_be_bytes([e[0], e[1]]);
                            if pc != 0 {
                                let pc = map(pc as u32, At::Before)? as u16;
                                e[..2].copy_from_slice(&pc.to_be_bytes());
                            }
                        }
                    }
                    _ => {
                        let mut t = crate::attrs::LineNumbers::parse(a.data, a.offset)
                            .ctx(|| "LineNumberTable")?;
                        for e in t.entries.iter_mut() {
                            e.0 = if e.0 == 0 {
                                0
                            } else {
                                map(e.0 as u32, At::Before)? as u16
                            };
                        }
                        t.write(&mut attr);
                    }
                },
                b"LocalVariableTable" | b"LocalVariableTypeTable" => match entries(10) {
                    Some((n, w)) if d.len() == 2 + n * w => {
                        let at = attr.len();
                        attr.extend_from_slice(d);
                        for e in attr[at + 2..].chunks_exact_mut(10) {
                            let start = u16::from_be_bytes([e[0], e[1]]);
                            let length = u16::from_be_bytes([e[2], e[3]]);
                            lvt_cp_check(
                                u16::from_be_bytes([e[4], e[5]]),
                                u16::from_be_bytes([e[6], e[7]]),
                                cp_count,
                                name,
                            )?;
                            let s = if start == 0 {
                                0
                            } else {
                                map(start as u32, At::Before)?
                            };
                            let end = map(start as u32 + length as u32, At::Before)?;
                            e[..2].copy_from_slice(&(s as u16).to_be_bytes());
                            e[2..4].copy_from_slice(&((end - s) as u16).to_be_bytes());
                        }
                    }
                    _ => {
                        let mut t = crate::attrs::LocalVars::parse(a.data, a.offset)
                            .ctx(|| "LocalVariableTable")?;
                        for e in t.entries.iter_mut() {
                            lvt_cp_check(e.name, e.desc, cp_count, name)?;
                            let s = if e.start == 0 {
                                0
                            } else {
                                map(e.start as u32, At::Before)?
                            };
                            let end = map(e.start as u32 + e.length as u32, At::Before)?;
                            e.start = s as u16;
                            e.length = (end - s) as u16;
                        }
                        t.write(&mut attr);
                    }
                },
                _ => attr.extend_from_slice(a.data),
            }
            let len = (attr.len() - len_at - 4) as u32;
            attr[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
            count += 1;
        }
        if let (false, Some(s)) = (wrote_smt, &smt_bytes) {
            let name = cp.stack_map_table_name()?;
            attr.extend_from_slice(&name.to_be_bytes());
            attr.extend_from_slice(&(s.len() as u32).to_be_bytes());
            attr.extend_from_slice(s);
            count += 1;
        }
        attr[count_at..count_at + 2].copy_from_slice(&count.to_be_bytes());
        if let Some(b) = smt_bytes {
            give(b, |s| &mut s.frame_bytes);
        }
        give(lay.ev, |s| &mut s.events);
        Ok(attr)
    }

    /// Stack depth data flow over the original code: the depth before each instruction
    /// (`u32::MAX` when unreachable) and the maximum depth reached.
    pub fn depths(&self) -> Result<Depths> {
        self.depths_with(&mut Vec::new())
    }

    /// The stack effect of a field access or invocation through the class-wide cache `cache`
    /// (by constant index; see `CpBuilder::ref_effects`). Same result as `sim::depth_effect`.
    #[inline(never)]
    fn ref_effect(&self, i: &Insn, cache: &mut Vec<u32>) -> Result<(u16, u16)> {
        const METHOD: u32 = 1 << 31;
        const FIELD: u32 = 1 << 30;
        let code = self.code.code;
        let cp = &self.cf.cp;
        let field = matches!(i.opcode, op::GETSTATIC..=op::PUTFIELD);
        let recv = !matches!(i.opcode, op::INVOKESTATIC | op::INVOKEDYNAMIC) as u16;
        let idx = i.cp_index(code).unwrap_or(0) as usize;
        if cache.len() < cp.count() as usize {
            cache.resize(cp.count() as usize, 0);
        }
        let v = cache.get(idx).copied().unwrap_or(0);
        if field && v & FIELD != 0 {
            let s = (v & 0xFF) as u16;
            return Ok(match i.opcode {
                op::GETSTATIC => (0, s),
                op::PUTSTATIC => (s, 0),
                op::GETFIELD => (1, s),
                _ => (1 + s, 0),
            });
        }
        if !field && v & METHOD != 0 {
            return Ok((
                (((v >> 8) & 0xFFFF) as u16).wrapping_add(recv),
                (v & 0xFF) as u16,
            ));
        }
        let (p, q) = sim::depth_effect(i, code, cp)?;
        if v == 0 {
            let e = if field {
                FIELD
                    | match i.opcode {
                        op::GETSTATIC | op::GETFIELD => q as u32,
                        op::PUTSTATIC => p as u32,
                        _ => p as u32 - 1,
                    }
            } else {
                METHOD | (p.wrapping_sub(recv) as u32) << 8 | q as u32
            };
            if let Some(c) = cache.get_mut(idx) {
                *c = e;
            }
        }
        Ok((p, q))
    }

    fn depths_with(&self, cache: &mut Vec<u32>) -> Result<Depths> {
        let n = self.insns().len();
        let code = self.code.code;
        let mut din: Vec<u32> = take(|s| &mut s.depth_in);
        din.resize(n, NONE);
        let mut work: Vec<usize> = take(|s| &mut s.work);
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
        let insns = self.insns();
        while let Some(k0) = work.pop() {
            let mut k = k0;
            let mut d = din[k];
            // Falling through to a new instruction continues here directly (the same order as
            // pushing it and popping it again).
            loop {
                let i = &insns[k];
                let (p, q) = match (sim::depth_effect_const(i.opcode), i.opcode) {
                    (Some((p, q)), _) => (p as u16, q as u16),
                    (
                        None,
                        op::GETSTATIC..=op::PUTFIELD | op::INVOKEVIRTUAL..=op::INVOKEDYNAMIC,
                    ) => self
                        .ref_effect(i, cache)
                        .map_err(|e| e.context(format!("pc {}", i.pc)))?,
                    (None, _) => sim::depth_effect(i, code, &self.cf.cp)
                        .map_err(|e| e.context(format!("pc {}", i.pc)))?,
                };
                if (p as u32) > d {
                    return Err(underflow(i, p, d));
                }
                let out = d - p as u32 + q as u32;
                max = max.max(d).max(out);
                let flow = i.flow();
                if flow == Flow::Next {
                    if k + 1 < n && din[k + 1] == NONE {
                        din[k + 1] = out;
                        k += 1;
                        d = out;
                        continue;
                    }
                    break;
                }
                match flow {
                    Flow::Cond if k + 1 < n => set(&mut din, &mut work, k + 1, out),
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
                break;
            }
        }
        give(work, |s| &mut s.work);
        Ok(Depths { depth_in: din, max })
    }
}
