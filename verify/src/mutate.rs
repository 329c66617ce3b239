//! Mutation corpus generator: one defect per class, made from real classes.
//! Used by tests/mutation.rs and examples/mutants.rs to compare our verdicts with HotSpot's.

use crate::classfile::{be_u2, ClassFile, Code, Cp, Reader};
use crate::typecheck::insn_len;

/// Deterministic xorshift RNG (no dependency, reproducible corpora).
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    MaxStackLow,
    MaxLocalsLow,
    BranchOffset,
    LoadType,
    StoreType,
    ReturnType,
    HandlerRange,
    HandlerTarget,
    DropFrame,
    FrameOffset,
    FrameType,
    UninitThis,
    NopOut,
    InvokeSwap,
    FieldSwap,
    ClassSwap,
    ConstType,
    ExtraHandler,
    CheckcastDrop,
    SwapAdjacent,
    InitHandler,
    CpIndexAny,
    ClassAttr,
    MemberFlags,
}

pub const KINDS: [Kind; 24] = [
    Kind::MaxStackLow,
    Kind::MaxLocalsLow,
    Kind::BranchOffset,
    Kind::LoadType,
    Kind::StoreType,
    Kind::ReturnType,
    Kind::HandlerRange,
    Kind::HandlerTarget,
    Kind::DropFrame,
    Kind::FrameOffset,
    Kind::FrameType,
    Kind::UninitThis,
    Kind::NopOut,
    Kind::InvokeSwap,
    Kind::FieldSwap,
    Kind::ClassSwap,
    Kind::ConstType,
    Kind::ExtraHandler,
    Kind::CheckcastDrop,
    Kind::SwapAdjacent,
    Kind::InitHandler,
    Kind::CpIndexAny,
    Kind::ClassAttr,
    Kind::MemberFlags,
];

struct Frame {
    delta: u16,
    tag: u8, // canonical tag: 0 same, 64 same_locals_1, 248..=250 chop, 252..=254 append, 255 full
    body: Vec<u8>,
}

fn parse_frames(data: &[u8]) -> Option<Vec<Frame>> {
    let mut r = Reader::new(data);
    let n = r.u2().ok()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let t = r.u1().ok()?;
        let (tag, delta) = match t {
            0..=63 => (0, t as u16),
            64..=127 => (64, (t - 64) as u16),
            247 => (64, r.u2().ok()?),
            248..=250 | 252..=254 | 255 => (t, r.u2().ok()?),
            251 => (0, r.u2().ok()?),
            _ => return None,
        };
        let start = r.pos;
        let nv = match tag {
            64 => 1,
            252..=254 => (tag - 251) as usize,
            255 => {
                let nl = r.u2().ok()? as usize;
                skip_vtypes(&mut r, nl)?;
                r.u2().ok()? as usize
            }
            _ => 0,
        };
        skip_vtypes(&mut r, nv)?;
        out.push(Frame {
            delta,
            tag,
            body: data[start..r.pos].to_vec(),
        });
    }
    Some(out)
}

fn skip_vtypes(r: &mut Reader<'_>, n: usize) -> Option<()> {
    for _ in 0..n {
        let t = r.u1().ok()?;
        if t == 7 || t == 8 {
            r.u2().ok()?;
        }
    }
    Some(())
}

fn encode_frames(frames: &[Frame]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(frames.len() as u16).to_be_bytes());
    for f in frames {
        match f.tag {
            0 if f.delta <= 63 => v.push(f.delta as u8),
            0 => {
                v.push(251);
                v.extend_from_slice(&f.delta.to_be_bytes());
            }
            64 if f.delta <= 63 => v.push(64 + f.delta as u8),
            64 => {
                v.push(247);
                v.extend_from_slice(&f.delta.to_be_bytes());
            }
            t => {
                v.push(t);
                v.extend_from_slice(&f.delta.to_be_bytes());
            }
        }
        v.extend_from_slice(&f.body);
    }
    v
}

/// Positions of verification-type tags inside a frame body.
fn vtype_positions(f: &Frame) -> Vec<usize> {
    let mut pos = Vec::new();
    let b = &f.body;
    let mut i = 0;
    let walk = |i: &mut usize, n: usize, pos: &mut Vec<usize>| {
        for _ in 0..n {
            if *i >= b.len() {
                return;
            }
            pos.push(*i);
            let t = b[*i];
            *i += if t == 7 || t == 8 { 3 } else { 1 };
        }
    };
    match f.tag {
        64 => walk(&mut i, 1, &mut pos),
        252..=254 => walk(&mut i, (f.tag - 251) as usize, &mut pos),
        255 => {
            let nl = be_u2(b, 0).unwrap_or(0) as usize;
            i = 2;
            walk(&mut i, nl, &mut pos);
            let ns = be_u2(b, i).unwrap_or(0) as usize;
            i += 2;
            walk(&mut i, ns, &mut pos);
        }
        _ => {}
    }
    pos
}

struct Parts {
    max_stack: u16,
    max_locals: u16,
    code: Vec<u8>,
    ex: Vec<[u16; 4]>,
    attrs: Vec<(u16, Vec<u8>, bool)>, // name index, data, is StackMapTable
}

impl Parts {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&self.max_stack.to_be_bytes());
        v.extend_from_slice(&self.max_locals.to_be_bytes());
        v.extend_from_slice(&(self.code.len() as u32).to_be_bytes());
        v.extend_from_slice(&self.code);
        v.extend_from_slice(&(self.ex.len() as u16).to_be_bytes());
        for e in &self.ex {
            for x in e {
                v.extend_from_slice(&x.to_be_bytes());
            }
        }
        v.extend_from_slice(&(self.attrs.len() as u16).to_be_bytes());
        for (n, d, _) in &self.attrs {
            v.extend_from_slice(&n.to_be_bytes());
            v.extend_from_slice(&(d.len() as u32).to_be_bytes());
            v.extend_from_slice(d);
        }
        v
    }
}

fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    inner.as_ptr() as usize - outer.as_ptr() as usize
}

/// One mutable site: a method with code.
pub struct Site {
    pub method: String,
    attr_off: usize, // offset of the Code attribute data in the class bytes
    attr_len: usize,
    is_init: bool,
}

/// Methods with code (and a StackMapTable) of a class of version >= 51.
pub fn sites(bytes: &[u8]) -> Vec<Site> {
    let Ok(cf) = ClassFile::parse(bytes) else {
        return vec![];
    };
    if cf.major < 51 {
        return vec![];
    }
    let mut v = Vec::new();
    for m in &cf.methods {
        if let Some(a) = m.attributes.iter().find(|a| a.name == b"Code") {
            v.push(Site {
                method: format!(
                    "{}{}",
                    String::from_utf8_lossy(m.name),
                    String::from_utf8_lossy(m.desc)
                ),
                attr_off: offset_in(bytes, a.data),
                attr_len: a.data.len(),
                is_init: m.name == b"<init>",
            });
        }
    }
    v
}

fn insns(code: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut pc = 0;
    while pc < code.len() {
        v.push(pc);
        match insn_len(code, pc) {
            Some(n) => pc += n,
            None => break,
        }
    }
    v
}

fn pick<T: Copy>(rng: &mut Rng, v: &[T]) -> Option<T> {
    if v.is_empty() {
        None
    } else {
        Some(v[rng.below(v.len())])
    }
}

fn cp_indices(cf: &ClassFile<'_>, f: impl Fn(&Cp<'_>) -> bool) -> Vec<u16> {
    cf.cp
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| f(e))
        .map(|(i, _)| i as u16)
        .collect()
}

/// Apply mutation `kind` to method `site` of `bytes`. None if not applicable.
pub fn mutate(bytes: &[u8], site: &Site, kind: Kind, rng: &mut Rng) -> Option<Vec<u8>> {
    let cf = ClassFile::parse(bytes).ok()?;
    if kind == Kind::ClassAttr {
        return mutate_class_attr(bytes, &cf, rng);
    }
    if kind == Kind::MemberFlags {
        // flip one access flag bit of the class, a field or a method
        let mut r = Reader::new(bytes);
        r.pos = 8;
        crate::classfile::ConstantPool::parse(&mut r).ok()?;
        let class_flags = r.pos;
        let mut offs = vec![class_flags];
        r.pos += 6;
        let ni = r.u2().ok()? as usize;
        r.pos += 2 * ni;
        for _ in 0..2 {
            let n = r.u2().ok()?;
            for _ in 0..n {
                offs.push(r.pos);
                r.pos += 6;
                let na = r.u2().ok()?;
                for _ in 0..na {
                    r.pos += 2;
                    let len = r.u4().ok()? as usize;
                    r.pos += len;
                }
            }
        }
        let at = if rng.below(10) == 0 {
            class_flags
        } else {
            pick(rng, &offs[1..]).unwrap_or(class_flags)
        };
        let bits = [
            0x0001u16, 0x0002, 0x0004, 0x0008, 0x0010, 0x0020, 0x0040, 0x0080, 0x0100, 0x0400,
            0x0800, 0x1000,
        ];
        let bit = bits[rng.below(bits.len())];
        let mut out = bytes.to_vec();
        let v = be_u2(&out, at)? ^ bit;
        out[at..at + 2].copy_from_slice(&v.to_be_bytes());
        return Some(out);
    }
    let data = bytes.get(site.attr_off..site.attr_off + site.attr_len)?;
    let code = Code::parse(data, &cf.cp).ok()?;
    let mut p = Parts {
        max_stack: code.max_stack,
        max_locals: code.max_locals,
        code: code.code.to_vec(),
        ex: code
            .exceptions
            .iter()
            .map(|e| [e.start, e.end, e.handler, e.catch_type])
            .collect(),
        attrs: code
            .attributes
            .iter()
            .map(|a| {
                let off = offset_in(data, a.data);
                (
                    be_u2(data, off - 6).unwrap_or(0),
                    a.data.to_vec(),
                    a.name == b"StackMapTable",
                )
            })
            .collect(),
    };
    let pcs = insns(&p.code);
    let c = &mut p.code;
    let sel = |rng: &mut Rng, c: &[u8], f: &dyn Fn(u8) -> bool| {
        pick(
            rng,
            &pcs.iter()
                .copied()
                .filter(|&pc| f(c[pc]))
                .collect::<Vec<_>>(),
        )
    };
    match kind {
        Kind::MaxStackLow => {
            if p.max_stack == 0 {
                return None;
            }
            p.max_stack -= 1;
        }
        Kind::MaxLocalsLow => {
            if p.max_locals == 0 {
                return None;
            }
            p.max_locals -= 1;
        }
        Kind::BranchOffset => {
            let pc = sel(rng, c, &|op| matches!(op, 153..=167 | 198 | 199))?;
            let d = [-2i16, -1, 1, 2, 3][rng.below(5)];
            let o = be_u2(c, pc + 1)? as i16;
            let n = o.wrapping_add(d).to_be_bytes();
            c[pc + 1] = n[0];
            c[pc + 2] = n[1];
        }
        Kind::LoadType | Kind::StoreType => {
            let (lo_n, lo_i) = if kind == Kind::LoadType {
                (26u8, 21u8)
            } else {
                (59, 54)
            };
            let pc = sel(rng, c, &|op| {
                (lo_n..lo_n + 20).contains(&op) || (lo_i..lo_i + 5).contains(&op)
            })?;
            let op = c[pc];
            let shift = 1 + rng.below(4) as u8;
            if op >= lo_n {
                let k = op - lo_n;
                c[pc] = lo_n + ((k / 4 + shift) % 5) * 4 + k % 4;
            } else {
                c[pc] = lo_i + (op - lo_i + shift) % 5;
            }
        }
        Kind::ReturnType => {
            let pc = sel(rng, c, &|op| (172..=177).contains(&op))?;
            c[pc] = 172 + ((c[pc] - 172) + 1 + rng.below(5) as u8) % 6;
        }
        Kind::HandlerRange => {
            let i = rng.below(p.ex.len().max(1));
            let e = p.ex.get_mut(i)?;
            match rng.below(4) {
                0 => e[1] = e[0],
                1 => e[0] += 1,
                2 => e[1] = e[1].saturating_sub(1),
                _ => e[0] = e[0].saturating_sub(1),
            }
        }
        Kind::HandlerTarget => {
            let i = rng.below(p.ex.len().max(1));
            let e = p.ex.get_mut(i)?;
            let pc = pick(rng, &pcs)? as u16;
            if pc == e[2] {
                return None;
            }
            e[2] = if rng.below(3) == 0 { e[2] + 1 } else { pc };
        }
        Kind::DropFrame | Kind::FrameOffset | Kind::FrameType => {
            let a = p.attrs.iter_mut().find(|a| a.2)?;
            let mut frames = parse_frames(&a.1)?;
            if frames.is_empty() {
                return None;
            }
            let i = rng.below(frames.len());
            match kind {
                Kind::DropFrame => {
                    let f = frames.remove(i);
                    if let Some(next) = frames.get_mut(i) {
                        // keep the following frames at their offsets
                        next.delta = next.delta.checked_add(f.delta)?.checked_add(if i == 0 {
                            0
                        } else {
                            1
                        })?;
                        if i == 0 {
                            next.delta = next.delta.checked_add(1)?;
                        }
                    }
                }
                Kind::FrameOffset => {
                    let f = &mut frames[i];
                    let down = f.delta > 0 && rng.below(2) == 0;
                    f.delta = if down { f.delta - 1 } else { f.delta + 1 };
                    if let Some(next) = frames.get_mut(i + 1) {
                        if down {
                            next.delta = next.delta.checked_add(1)?;
                        } else if next.delta == 0 {
                            return None;
                        } else {
                            next.delta -= 1;
                        }
                    }
                }
                _ => {
                    let pos = vtype_positions(&frames[i]);
                    let at = pick(rng, &pos)?;
                    let b = &mut frames[i].body;
                    let t = b[at];
                    let classes = cp_indices(&cf, |e| matches!(e, Cp::Class(_)));
                    match t {
                        1 => b[at] = [2, 5, 0][rng.below(3)],
                        2 => b[at] = 1,
                        3 => b[at] = 4,
                        4 => b[at] = 3,
                        0 => b[at] = 1,
                        5 => b[at] = 1,
                        6 => b[at] = 5,
                        7 => {
                            if rng.below(2) == 0 {
                                let ci = pick(rng, &classes)?.to_be_bytes();
                                b[at + 1] = ci[0];
                                b[at + 2] = ci[1];
                            } else {
                                b.drain(at + 1..at + 3);
                                b[at] = 1;
                            }
                        }
                        _ => {
                            b.drain(at + 1..at + 3);
                            b[at] = 5;
                        }
                    }
                }
            }
            a.1 = encode_frames(&frames);
        }
        Kind::UninitThis => {
            if !site.is_init {
                return None;
            }
            let pc = sel(rng, c, &|op| op == 183)?;
            let (_, _, name, desc) = cf.cp.member_ref(be_u2(c, pc + 1)?).ok()?;
            if name != b"<init>" || desc != b"()V" {
                return None;
            }
            c[pc] = 87; // pop the receiver instead of initializing it
            c[pc + 1] = 0;
            c[pc + 2] = 0;
        }
        Kind::NopOut => {
            let pc = sel(
                rng,
                c,
                &|op| matches!(op, 1..=15 | 87..=95 | 96..=152 | 190 | 194 | 195),
            )?;
            c[pc] = 0;
        }
        Kind::InvokeSwap | Kind::FieldSwap | Kind::ClassSwap => {
            let (ops, cands): (&[u8], Vec<u16>) = match kind {
                Kind::InvokeSwap => (
                    &[182, 183, 184],
                    cp_indices(&cf, |e| matches!(e, Cp::Methodref(..))),
                ),
                Kind::FieldSwap => (
                    &[178, 179, 180, 181],
                    cp_indices(&cf, |e| matches!(e, Cp::Fieldref(..))),
                ),
                _ => (
                    &[187, 189, 192, 193],
                    cp_indices(&cf, |e| matches!(e, Cp::Class(_))),
                ),
            };
            let pc = sel(rng, c, &|op| ops.contains(&op))?;
            let old = be_u2(c, pc + 1)?;
            let new = pick(rng, &cands)?;
            if new == old {
                return None;
            }
            let n = new.to_be_bytes();
            c[pc + 1] = n[0];
            c[pc + 2] = n[1];
        }
        Kind::ConstType => {
            let pc = sel(rng, c, &|op| matches!(op, 1..=15))?;
            let choices = [1u8, 3, 9, 11, 14];
            let n = choices[rng.below(choices.len())];
            if n == c[pc] {
                return None;
            }
            c[pc] = n;
        }
        Kind::ExtraHandler => {
            // a new handler over a random range, jumping to an offset that has a frame
            let smt = p.attrs.iter().find(|a| a.2)?;
            let frames = parse_frames(&smt.1)?;
            let mut offs = Vec::new();
            let mut off: i64 = -1;
            for f in &frames {
                off += f.delta as i64 + 1;
                offs.push(off as u16);
            }
            let h = pick(rng, &offs)?;
            let a = rng.below(pcs.len());
            let b = (a + 1 + rng.below(4)).min(pcs.len());
            let start = pcs[a] as u16;
            let end = if b == pcs.len() {
                p.code.len() as u16
            } else {
                pcs[b] as u16
            };
            let throwables = cp_indices(
                &cf,
                |e| matches!(e, Cp::Class(n) if cf.cp.utf8(*n).is_ok_and(|s| s.ends_with(b"Exception") || s.ends_with(b"Error"))),
            );
            let catch = if rng.below(2) == 0 {
                0
            } else {
                pick(rng, &throwables).unwrap_or(0)
            };
            p.ex.insert(0, [start, end, h, catch]);
        }
        Kind::InitHandler => {
            // a handler covering the super()/this() call of a constructor
            if !site.is_init {
                return None;
            }
            let smt = p.attrs.iter().find(|a| a.2)?;
            let frames = parse_frames(&smt.1)?;
            let mut offs = Vec::new();
            let mut off: i64 = -1;
            for f in &frames {
                off += f.delta as i64 + 1;
                offs.push(off as u16);
            }
            let pc = sel(rng, c, &|op| op == 183)?;
            let (_, _, name, _) = cf.cp.member_ref(be_u2(c, pc + 1)?).ok()?;
            if name != b"<init>" {
                return None;
            }
            let h = pick(rng, &offs)?;
            let start = if rng.below(2) == 0 { 0 } else { pc as u16 };
            p.ex.insert(0, [start, pc as u16 + 3, h, 0]);
        }
        Kind::ClassAttr | Kind::MemberFlags => return None,
        Kind::CpIndexAny => {
            // a constant-pool operand pointing at an arbitrary entry (often of the wrong kind)
            let pc = sel(rng, c, &|op| {
                matches!(op, 18 | 19 | 20 | 178..=187 | 189 | 192 | 193)
            })?;
            let n = cf.cp.entries.len();
            let new = 1 + rng.below(n.saturating_sub(1).max(1));
            if c[pc] == 18 {
                if new > 255 {
                    return None;
                }
                c[pc + 1] = new as u8;
            } else {
                let b = (new as u16).to_be_bytes();
                c[pc + 1] = b[0];
                c[pc + 2] = b[1];
            }
        }
        Kind::CheckcastDrop => {
            let pc = sel(rng, c, &|op| op == 192)?;
            c[pc] = 0;
            c[pc + 1] = 0;
            c[pc + 2] = 0;
        }
        Kind::SwapAdjacent => {
            let cands: Vec<usize> = pcs
                .windows(2)
                .filter(|w| w[1] == w[0] + 1 && insn_len(c, w[1]) == Some(1) && c[w[0]] != c[w[1]])
                .map(|w| w[0])
                .collect();
            let pc = pick(rng, &cands)?;
            c.swap(pc, pc + 1);
        }
    }
    let new_data = p.encode();
    let mut out = Vec::with_capacity(bytes.len() + new_data.len());
    out.extend_from_slice(&bytes[..site.attr_off - 4]);
    out.extend_from_slice(&(new_data.len() as u32).to_be_bytes());
    out.extend_from_slice(&new_data);
    out.extend_from_slice(&bytes[site.attr_off + site.attr_len..]);
    if out == bytes {
        return None;
    }
    Some(out)
}

/// Point one constant-pool index inside a class-level attribute (or a static field's ConstantValue)
/// at a random entry: SourceFile, Signature, InnerClasses, EnclosingMethod, NestHost, NestMembers,
/// BootstrapMethods.
fn mutate_class_attr(bytes: &[u8], cf: &ClassFile<'_>, rng: &mut Rng) -> Option<Vec<u8>> {
    let mut slots: Vec<usize> = Vec::new(); // byte offsets of u2 cp indices
    for a in &cf.attributes {
        let off = offset_in(bytes, a.data);
        let d = a.data;
        match a.name {
            b"SourceFile" | b"Signature" | b"NestHost" if d.len() == 2 => slots.push(off),
            b"EnclosingMethod" if d.len() == 4 => slots.push(off),
            b"NestMembers" | b"InnerClasses" | b"BootstrapMethods" if d.len() >= 4 => {
                let n = be_u2(d, 0)? as usize;
                if n > 0 {
                    let k = rng.below(n);
                    match a.name {
                        b"NestMembers" => slots.push(off + 2 + 2 * k),
                        b"InnerClasses" => slots.push(off + 2 + 8 * k + 2 * rng.below(3)),
                        _ => slots.push(off + 2), // first bootstrap method's handle
                    }
                }
            }
            _ => {}
        }
    }
    for f in &cf.fields {
        for a in &f.attributes {
            if a.name == b"ConstantValue"
                && a.data.len() == 2
                && f.access & crate::classfile::ACC_STATIC != 0
            {
                slots.push(offset_in(bytes, a.data));
            }
        }
    }
    let at = pick(rng, &slots)?;
    let new = (1 + rng.below(cf.cp.entries.len().saturating_sub(1).max(1))) as u16;
    let mut out = bytes.to_vec();
    out[at..at + 2].copy_from_slice(&new.to_be_bytes());
    if out == bytes {
        return None;
    }
    Some(out)
}

/// A generated mutant.
pub struct Mutant {
    pub source: String,
    pub method: String,
    pub kind: Kind,
    pub bytes: Vec<u8>,
}

/// Make `n` mutants from `classes` (name, bytes), round-robin over kinds, deterministic in `seed`.
pub fn generate(classes: &[(String, Vec<u8>)], n: usize, seed: u64) -> Vec<Mutant> {
    let mut rng = Rng::new(seed);
    let usable: Vec<(usize, Vec<Site>)> = classes
        .iter()
        .enumerate()
        .map(|(i, (_, b))| (i, sites(b)))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    let mut out = Vec::with_capacity(n);
    if usable.is_empty() {
        return out;
    }
    let mut attempts = 0usize;
    while out.len() < n && attempts < n * 50 {
        attempts += 1;
        let kind = KINDS[out.len() % KINDS.len()];
        let (ci, ss) = &usable[rng.below(usable.len())];
        let site = &ss[rng.below(ss.len())];
        let (name, bytes) = &classes[*ci];
        if let Some(m) = mutate(bytes, site, kind, &mut rng) {
            out.push(Mutant {
                source: name.clone(),
                method: site.method.clone(),
                kind,
                bytes: m,
            });
        }
    }
    out
}

/// Result of comparing our verdicts with HotSpot's on a mutation corpus.
#[derive(Default)]
pub struct Report {
    pub total: usize,
    /// HotSpot gave a verdict on the class file itself (accepted, VerifyError or ClassFormatError).
    pub compared: usize,
    pub agree: usize,
    /// (kind, ours_rejects, hotspot_rejects) -> count, for disagreements
    pub disagreements: std::collections::BTreeMap<(Kind, bool, bool), usize>,
    /// (kind, ours_rejects, hotspot_rejects) -> count over all compared mutants
    pub by_kind: std::collections::BTreeMap<Kind, (usize, usize, usize)>, // (compared, agree, hotspot rejected)
    pub excluded: std::collections::BTreeMap<String, usize>,
    pub samples: Vec<String>,
}

impl Report {
    pub fn agreement(&self) -> f64 {
        if self.compared == 0 {
            0.0
        } else {
            self.agree as f64 / self.compared as f64
        }
    }

    pub fn print(&self) {
        println!(
            "mutation corpus: {} mutants, {} compared with HotSpot, {} agree: {:.2}% agreement",
            self.total,
            self.compared,
            self.agree,
            100.0 * self.agreement()
        );
        println!(
            "excluded (HotSpot verdict not about the class file): {:?}",
            self.excluded
        );
        println!(
            "{:<14} {:>8} {:>8} {:>10}",
            "kind", "compared", "agree", "hs-reject"
        );
        for (k, (c, a, r)) in &self.by_kind {
            println!("{:<14} {:>8} {:>8} {:>10}", format!("{k:?}"), c, a, r);
        }
        println!("disagreements (kind, ours rejects, HotSpot rejects): count");
        for ((k, o, h), n) in &self.disagreements {
            println!(
                "  {k:?} ours={} hotspot={}: {n}",
                if *o { "reject" } else { "accept" },
                if *h { "reject" } else { "accept" }
            );
        }
        for s in self.samples.iter().take(30) {
            println!("  e.g. {s}");
        }
    }
}

/// Generate `n` mutants from the classes of `jars`, judge them with our verifier (hierarchy: the jars plus
/// `jdk_tree`, or the running JDK) and with HotSpot (each mutant in its own class loader over the
/// original classes), and compare. `work` is a scratch dir (recreated).
pub fn run_corpus(
    java_home: &std::path::Path,
    jars: &[std::path::PathBuf],
    jdk_tree: Option<&std::path::Path>,
    n: usize,
    seed: u64,
    work: &std::path::Path,
) -> std::io::Result<Report> {
    use crate::{hierarchy::ClassPath, oracle, verify_class};
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    let mut classes = Vec::new();
    let mut bases = Vec::new();
    for (ji, jar) in jars.iter().enumerate() {
        let base = work.join(format!("base{ji}"));
        for (name, b) in ClassPath::read_all(jar)? {
            let p = base.join(&name);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d)?;
            }
            std::fs::write(&p, &b)?;
            classes.push((name, b));
        }
        bases.push(base);
    }
    let mut entries: Vec<std::path::PathBuf> = jars.to_vec();
    if let Some(t) = jdk_tree {
        entries.push(t.to_path_buf());
    }
    let cp = ClassPath::new(&entries, jdk_tree.is_none())?;
    let mutants = generate(&classes, n, seed);
    let mdir = work.join("m");
    std::fs::create_dir_all(&mdir)?;
    let mut files = Vec::with_capacity(mutants.len());
    let mut ours = Vec::with_capacity(mutants.len());
    for (i, m) in mutants.iter().enumerate() {
        let p = mdir.join(format!("{i}.class"));
        std::fs::write(&p, &m.bytes)?;
        files.push((p, m.source.trim_end_matches(".class").replace('/', ".")));
        ours.push(verify_class(&m.bytes, &cp));
    }
    // two JVMs in parallel (CI has 2 cores)
    let half = files.len().div_ceil(2);
    let (g1, g2) = files.split_at(half);
    let (r1, r2) = std::thread::scope(|s| {
        let h1 = s.spawn(|| oracle::run_hotspot_isolated(java_home, g1, &bases));
        let h2 = s.spawn(|| oracle::run_hotspot_isolated(java_home, g2, &bases));
        (h1.join(), h2.join())
    });
    let mut verdicts = r1.map_err(|_| std::io::Error::other("oracle thread panicked"))??;
    verdicts.extend(r2.map_err(|_| std::io::Error::other("oracle thread panicked"))??);
    let mut rep = Report {
        total: mutants.len(),
        ..Default::default()
    };
    for ((m, errs), v) in mutants.iter().zip(&ours).zip(&verdicts) {
        if !(v.ok || v.rejected()) {
            let key = format!("{:?}", v.kind);
            *rep.excluded.entry(key).or_default() += 1;
            continue;
        }
        rep.compared += 1;
        let o = !errs.is_empty();
        let h = v.rejected();
        let e = rep.by_kind.entry(m.kind).or_default();
        e.0 += 1;
        e.2 += h as usize;
        if o == h {
            rep.agree += 1;
            e.1 += 1;
        } else {
            *rep.disagreements.entry((m.kind, o, h)).or_default() += 1;
            rep.samples.push(format!(
                "{:?} {}.{}: ours: {} | hotspot: {}",
                m.kind,
                m.source,
                m.method,
                errs.first()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "ok".into()),
                if v.message.is_empty() {
                    "ok"
                } else {
                    &v.message
                }
            ));
        }
    }
    Ok(rep)
}

/// Make the first `invokestatic` of a class call `probe_class` (same name and descriptor) instead, by
/// appending a Utf8, a Class and a Methodref to the constant pool. Verification must not care whether
/// `probe_class` exists (it is not resolved). None if the class has no invokestatic of a Methodref.
pub fn redirect_invokestatic(bytes: &[u8], probe_class: &str) -> Option<Vec<u8>> {
    let cf = ClassFile::parse(bytes).ok()?;
    let mut r = Reader::new(bytes);
    r.pos = 8;
    let cp = crate::classfile::ConstantPool::parse(&mut r).ok()?;
    let cp_end = r.pos;
    let count = cp.entries.len();
    if count + 3 > 65535 {
        return None;
    }
    for m in &cf.methods {
        let Some(a) = m.attributes.iter().find(|a| a.name == b"Code") else {
            continue;
        };
        let code = Code::parse(a.data, &cf.cp).ok()?;
        let code_off = offset_in(bytes, code.code);
        for pc in insns(code.code) {
            if code.code[pc] != 184 {
                continue;
            }
            let idx = be_u2(code.code, pc + 1)?;
            let Some(Cp::Methodref(_, nt)) = cf.cp.get(idx) else {
                continue;
            };
            let nt = *nt;
            let mut add = Vec::new();
            add.push(1u8);
            add.extend_from_slice(&(probe_class.len() as u16).to_be_bytes());
            add.extend_from_slice(probe_class.as_bytes());
            add.push(7);
            add.extend_from_slice(&(count as u16).to_be_bytes());
            add.push(10);
            add.extend_from_slice(&(count as u16 + 1).to_be_bytes());
            add.extend_from_slice(&nt.to_be_bytes());
            let mut out = bytes.to_vec();
            let new_idx = (count as u16 + 2).to_be_bytes();
            out[code_off + pc + 1] = new_idx[0];
            out[code_off + pc + 2] = new_idx[1];
            out[8..10].copy_from_slice(&(count as u16 + 3).to_be_bytes());
            out.splice(cp_end..cp_end, add);
            return Some(out);
        }
    }
    None
}

/// A correct rewrite, like an instrumenter's: every method with code gets `iconst_0;
/// invokestatic <probe_class>.p(I)V` (4 bytes, so switch padding is unchanged) at its entry. Exception
/// tables, the first StackMapTable delta, `uninitialized(offset)` types, LineNumberTable and local
/// variable tables are shifted; max_stack is raised to at least 1; the Methodref is appended to the
/// constant pool. Both HotSpot and our verifier must accept the result.
pub fn insert_entry_probe(bytes: &[u8], probe_class: &str) -> Option<Vec<u8>> {
    const SHIFT: u16 = 4;
    let cf = ClassFile::parse(bytes).ok()?;
    let mut r = Reader::new(bytes);
    r.pos = 8;
    let cp = crate::classfile::ConstantPool::parse(&mut r).ok()?;
    let cp_end = r.pos;
    let count = cp.entries.len();
    if count + 6 > 65535 {
        return None;
    }
    let idx = |k: usize| ((count + k) as u16).to_be_bytes();
    // new entries: Utf8 class, Class, Utf8 "p", Utf8 "(I)V", NameAndType, Methodref
    let mut add = Vec::new();
    let utf8 = |add: &mut Vec<u8>, s: &str| {
        add.push(1);
        add.extend_from_slice(&(s.len() as u16).to_be_bytes());
        add.extend_from_slice(s.as_bytes());
    };
    utf8(&mut add, probe_class);
    add.push(7);
    add.extend_from_slice(&idx(0));
    utf8(&mut add, "p");
    utf8(&mut add, "(I)V");
    add.push(12);
    add.extend_from_slice(&idx(2));
    add.extend_from_slice(&idx(3));
    add.push(10);
    add.extend_from_slice(&idx(1));
    add.extend_from_slice(&idx(4));
    let mref = idx(5);
    let mut out = bytes.to_vec();
    let sites = sites_all(bytes);
    for site in sites.iter().rev() {
        let data = bytes.get(site.attr_off..site.attr_off + site.attr_len)?;
        let code = Code::parse(data, &cf.cp).ok()?;
        if code.code.len() + SHIFT as usize > 65535 {
            return None;
        }
        let mut newcode = vec![0x03, 0xb8, mref[0], mref[1]];
        newcode.extend_from_slice(code.code);
        let mut p = Parts {
            max_stack: code.max_stack.max(1),
            max_locals: code.max_locals,
            code: newcode,
            ex: code
                .exceptions
                .iter()
                .map(|e| {
                    [
                        e.start + SHIFT,
                        e.end + SHIFT,
                        e.handler + SHIFT,
                        e.catch_type,
                    ]
                })
                .collect(),
            attrs: Vec::new(),
        };
        for a in &code.attributes {
            let off = offset_in(data, a.data);
            let name_idx = be_u2(data, off - 6)?;
            let mut d = a.data.to_vec();
            match a.name {
                b"StackMapTable" => {
                    let mut frames = parse_frames(&d)?;
                    if let Some(f) = frames.first_mut() {
                        f.delta = f.delta.checked_add(SHIFT)?;
                    }
                    for f in frames.iter_mut() {
                        for pos in vtype_positions(f) {
                            if f.body[pos] == 8 {
                                let o = be_u2(&f.body, pos + 1)?.checked_add(SHIFT)?;
                                f.body[pos + 1..pos + 3].copy_from_slice(&o.to_be_bytes());
                            }
                        }
                    }
                    d = encode_frames(&frames);
                }
                b"LineNumberTable" | b"LocalVariableTable" | b"LocalVariableTypeTable" => {
                    let n = be_u2(&d, 0)? as usize;
                    let step = if a.name == b"LineNumberTable" { 4 } else { 10 };
                    for k in 0..n {
                        let at = 2 + k * step;
                        let v = be_u2(&d, at)?.checked_add(SHIFT)?;
                        d.get_mut(at..at + 2)?.copy_from_slice(&v.to_be_bytes());
                    }
                }
                _ => {}
            }
            p.attrs.push((name_idx, d, a.name == b"StackMapTable"));
        }
        let new_data = p.encode();
        let start = site.attr_off - 4;
        let mut repl = (new_data.len() as u32).to_be_bytes().to_vec();
        repl.extend_from_slice(&new_data);
        out.splice(start..site.attr_off + site.attr_len, repl);
    }
    out[8..10].copy_from_slice(&((count + 6) as u16).to_be_bytes());
    out.splice(cp_end..cp_end, add);
    Some(out)
}

/// Like [`sites`] for every class version.
pub fn sites_any(bytes: &[u8]) -> Vec<Site> {
    let mut v = sites_all(bytes);
    if let Ok(cf) = ClassFile::parse(bytes) {
        let names: Vec<String> = cf
            .methods
            .iter()
            .filter(|m| m.attributes.iter().any(|a| a.name == b"Code"))
            .map(|m| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(m.name),
                    String::from_utf8_lossy(m.desc)
                )
            })
            .collect();
        for (s, n) in v.iter_mut().zip(names) {
            s.method = n;
        }
    }
    v
}

fn sites_all(bytes: &[u8]) -> Vec<Site> {
    let Ok(cf) = ClassFile::parse(bytes) else {
        return vec![];
    };
    let mut v = Vec::new();
    for m in &cf.methods {
        if let Some(a) = m.attributes.iter().find(|a| a.name == b"Code") {
            v.push(Site {
                method: String::new(),
                attr_off: offset_in(bytes, a.data),
                attr_len: a.data.len(),
                is_init: m.name == b"<init>",
            });
        }
    }
    v
}

/// Turn a class into a version-49 class file (no StackMapTable), so the inference verifier is judged
/// on real code: None if the class uses anything version 49 cannot have (invokedynamic, method handle
/// or dynamic constants, interface method refs from invokestatic/invokespecial, non-abstract interface
/// methods, modules).
pub fn downgrade_to_49(bytes: &[u8]) -> Option<Vec<u8>> {
    let cf = ClassFile::parse(bytes).ok()?;
    if cf.cp.entries.iter().any(|e| {
        matches!(
            e,
            Cp::MethodHandle(..)
                | Cp::MethodType(_)
                | Cp::InvokeDynamic(..)
                | Cp::Dynamic(..)
                | Cp::Module(_)
                | Cp::Package(_)
        )
    }) {
        return None;
    }
    let is_iface = cf.access & crate::classfile::ACC_INTERFACE != 0;
    if is_iface
        && cf
            .methods
            .iter()
            .any(|m| m.name != b"<clinit>" && m.access & crate::classfile::ACC_ABSTRACT == 0)
    {
        return None;
    }
    let mut out = bytes.to_vec();
    for site in sites_all(bytes).iter().rev() {
        let data = bytes.get(site.attr_off..site.attr_off + site.attr_len)?;
        let code = Code::parse(data, &cf.cp).ok()?;
        for pc in insns(code.code) {
            if matches!(code.code[pc], 183 | 184)
                && matches!(
                    cf.cp.get(be_u2(code.code, pc + 1)?),
                    Some(Cp::InterfaceMethodref(..))
                )
            {
                return None;
            }
        }
        let p = Parts {
            max_stack: code.max_stack,
            max_locals: code.max_locals,
            code: code.code.to_vec(),
            ex: code
                .exceptions
                .iter()
                .map(|e| [e.start, e.end, e.handler, e.catch_type])
                .collect(),
            attrs: code
                .attributes
                .iter()
                .filter(|a| a.name != b"StackMapTable")
                .map(|a| {
                    (
                        be_u2(data, offset_in(data, a.data) - 6).unwrap_or(0),
                        a.data.to_vec(),
                        false,
                    )
                })
                .collect(),
        };
        let new_data = p.encode();
        let mut repl = (new_data.len() as u32).to_be_bytes().to_vec();
        repl.extend_from_slice(&new_data);
        out.splice(site.attr_off - 4..site.attr_off + site.attr_len, repl);
    }
    out[6] = 0;
    out[7] = 49;
    Some(out)
}

/// Result of [`run_old_version_corpus`].
#[derive(Default, Debug)]
pub struct OldReport {
    /// classes downgraded to version 49
    pub downgraded: usize,
    /// unmodified downgraded classes rejected by us / by HotSpot
    pub ours_rejects_unmodified: usize,
    pub hotspot_rejects_unmodified: usize,
    pub mutants: usize,
    pub compared: usize,
    pub agree: usize,
    pub hotspot_rejected: usize,
    pub disagreements: std::collections::BTreeMap<String, usize>,
    pub samples: Vec<String>,
}

/// The inference verifier vs HotSpot's old verifier on real code: classes of `jars` downgraded to
/// version 49 (no frames), unmodified (all must pass both) and with `n` mutants.
pub fn run_old_version_corpus(
    java_home: &std::path::Path,
    jars: &[std::path::PathBuf],
    jdk_tree: &std::path::Path,
    n: usize,
    seed: u64,
    work: &std::path::Path,
) -> std::io::Result<OldReport> {
    use crate::{hierarchy::ClassPath, oracle, verify_class};
    let _ = std::fs::remove_dir_all(work);
    let mut entries = jars.to_vec();
    entries.push(jdk_tree.to_path_buf());
    let cp = ClassPath::new(&entries, false)?;
    let mut old = Vec::new();
    for j in jars {
        for (name, b) in ClassPath::read_all(j)? {
            if let Some(d) = downgrade_to_49(&b) {
                old.push((name, d));
            }
        }
    }
    let mut rep = OldReport {
        downgraded: old.len(),
        ..Default::default()
    };
    let base = work.join("base");
    for (name, b) in &old {
        let p = base.join(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)?;
        }
        std::fs::write(&p, b)?;
        let e = verify_class(b, &cp);
        if let Some(e) = e.first() {
            rep.ours_rejects_unmodified += 1;
            rep.samples.push(format!("ours rejects unmodified: {e}"));
        }
    }
    for v in oracle::run_hotspot(java_home, &base, false, &[])? {
        if v.rejected() {
            rep.hotspot_rejects_unmodified += 1;
            rep.samples
                .push(format!("hotspot rejects unmodified: {v:?}"));
        }
    }
    let mut rng = Rng::new(seed);
    let mdir = work.join("m");
    std::fs::create_dir_all(&mdir)?;
    let mut files = Vec::new();
    let mut ours = Vec::new();
    let mut kinds = Vec::new();
    let mut tries = 0;
    while files.len() < n && tries < n * 50 && !old.is_empty() {
        tries += 1;
        let kind = KINDS[tries % KINDS.len()];
        let (name, b) = &old[rng.below(old.len())];
        let ss = sites_any(b);
        if ss.is_empty() {
            continue;
        }
        let Some(m) = mutate(b, &ss[rng.below(ss.len())], kind, &mut rng) else {
            continue;
        };
        let p = mdir.join(format!("{}.class", files.len()));
        std::fs::write(&p, &m)?;
        files.push((p, name.trim_end_matches(".class").replace('/', ".")));
        ours.push(verify_class(&m, &cp).first().map(|e| e.to_string()));
        kinds.push(kind);
    }
    rep.mutants = files.len();
    let mut shared = vec![base];
    shared.extend(jars.iter().cloned());
    let verdicts = oracle::run_hotspot_isolated(java_home, &files, &shared)?;
    for ((o, k), v) in ours.iter().zip(&kinds).zip(&verdicts) {
        if !(v.ok || v.rejected()) {
            continue;
        }
        rep.compared += 1;
        rep.hotspot_rejected += v.rejected() as usize;
        if o.is_some() == v.rejected() {
            rep.agree += 1;
        } else {
            *rep.disagreements
                .entry(format!("{k:?} ours_rejects={}", o.is_some()))
                .or_default() += 1;
            rep.samples.push(format!(
                "{k:?}: ours {o:?} | hotspot {}",
                v.message.chars().take(200).collect::<String>()
            ));
        }
    }
    Ok(rep)
}
