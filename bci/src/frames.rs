//! StackMapTable: verification types, decoding to absolute frames and re-encoding.

use crate::error::{Error, Result};
use crate::reader::Reader;

/// A verification type (JVMS 4.10.1.2). `Object` holds a Class constant index;
/// `Uninitialized` the offset of the `new` instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VType {
    Top,
    Integer,
    Float,
    Long,
    Double,
    Null,
    UninitializedThis,
    Object(u16),
    Uninitialized(u16),
}

impl VType {
    pub fn is_wide(self) -> bool {
        matches!(self, VType::Long | VType::Double)
    }
    pub fn slots(self) -> u16 {
        if self.is_wide() {
            2
        } else {
            1
        }
    }
    fn read(r: &mut Reader<'_>) -> Result<VType> {
        let at = r.abs();
        Ok(match r.u8()? {
            0 => VType::Top,
            1 => VType::Integer,
            2 => VType::Float,
            3 => VType::Double,
            4 => VType::Long,
            5 => VType::Null,
            6 => VType::UninitializedThis,
            7 => VType::Object(r.u16()?),
            8 => VType::Uninitialized(r.u16()?),
            t => return Err(Error::format(format!("bad verification type tag {t}")).at(at)),
        })
    }
    fn write(self, out: &mut Vec<u8>) {
        match self {
            VType::Top => out.push(0),
            VType::Integer => out.push(1),
            VType::Float => out.push(2),
            VType::Double => out.push(3),
            VType::Long => out.push(4),
            VType::Null => out.push(5),
            VType::UninitializedThis => out.push(6),
            VType::Object(c) => {
                out.push(7);
                out.extend_from_slice(&c.to_be_bytes());
            }
            VType::Uninitialized(o) => {
                out.push(8);
                out.extend_from_slice(&o.to_be_bytes());
            }
        }
    }
}

/// A frame at an absolute code offset. Locals and stack are in *entry* form: a long or double
/// is one entry (occupying two slots), as in the class file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub offset: u32,
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

/// Entry form -> slot form (a long/double is followed by Top).
pub fn to_slots(entries: &[VType], out: &mut Vec<VType>) {
    out.clear();
    for &t in entries {
        out.push(t);
        if t.is_wide() {
            out.push(VType::Top);
        }
    }
}

/// Slot form -> entry form, trimming trailing Tops when `trim` (for locals).
pub fn to_entries(slots: &[VType], trim: bool) -> Vec<VType> {
    let mut n = slots.len();
    if trim {
        while n > 0 && slots[n - 1] == VType::Top && !(n >= 2 && slots[n - 2].is_wide()) {
            n -= 1;
        }
    }
    let mut v = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        v.push(slots[i]);
        i += if slots[i].is_wide() { 2 } else { 1 };
    }
    v
}

/// Decodes a StackMapTable into absolute frames. `initial` is the implicit initial frame's
/// locals (entry form). Offsets are not range-checked here (see `CodeAttr::check`).
pub fn decode_table(data: &[u8], base: usize, initial: &[VType]) -> Result<Vec<Frame>> {
    let mut r = Reader::with_base(data, base);
    let n = r.u16()? as usize;
    let mut frames: Vec<Frame> = Vec::with_capacity(n);
    let mut locals: Vec<VType> = initial.to_vec();
    let mut prev: i64 = -1;
    for k in 0..n {
        let at = r.abs();
        let res: Result<()> = (|| {
            let ft = r.u8()?;
            let (delta, stack): (u16, Vec<VType>) = match ft {
                0..=63 => (ft as u16, Vec::new()),
                64..=127 => ((ft - 64) as u16, vec![VType::read(&mut r)?]),
                128..=246 => return Err(Error::format(format!("reserved frame type {ft}"))),
                247 => {
                    let d = r.u16()?;
                    (d, vec![VType::read(&mut r)?])
                }
                248..=250 => {
                    let d = r.u16()?;
                    let k = (251 - ft) as usize;
                    if locals.len() < k {
                        return Err(Error::format(format!(
                            "chop {k} locals from {}",
                            locals.len()
                        )));
                    }
                    locals.truncate(locals.len() - k);
                    (d, Vec::new())
                }
                251 => (r.u16()?, Vec::new()),
                252..=254 => {
                    let d = r.u16()?;
                    for _ in 0..(ft - 251) {
                        locals.push(VType::read(&mut r)?);
                    }
                    (d, Vec::new())
                }
                255 => {
                    let d = r.u16()?;
                    let nl = r.u16()? as usize;
                    locals.clear();
                    for _ in 0..nl {
                        locals.push(VType::read(&mut r)?);
                    }
                    let ns = r.u16()? as usize;
                    let mut s = Vec::with_capacity(ns.min(256));
                    for _ in 0..ns {
                        s.push(VType::read(&mut r)?);
                    }
                    (d, s)
                }
            };
            let off = prev + delta as i64 + 1;
            if off > 65535 {
                return Err(Error::format(format!("frame offset {off} past 65535")));
            }
            prev = off;
            frames.push(Frame {
                offset: off as u32,
                locals: locals.clone(),
                stack,
            });
            Ok(())
        })();
        res.map_err(|e| e.context(format!("entry {k}")).at(at))?;
    }
    if !r.is_empty() {
        return Err(Error::format("StackMapTable longer than its entries").at(r.abs()));
    }
    Ok(frames)
}

/// Encodes frames (sorted by strictly increasing offset) compactly relative to `initial`.
pub fn encode_table(frames: &[Frame], initial: &[VType], out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&(frames.len() as u16).to_be_bytes());
    let mut prev_locals: &[VType] = initial;
    let mut prev: i64 = -1;
    for f in frames {
        let delta = f.offset as i64 - prev - 1;
        if !(0..=65535).contains(&delta) {
            return Err(Error::format(format!(
                "frames not in increasing offset order at {}",
                f.offset
            )));
        }
        let delta = delta as u16;
        prev = f.offset as i64;
        let same_locals = f.locals == prev_locals;
        if same_locals && f.stack.is_empty() {
            write_same(delta, out);
        } else if same_locals && f.stack.len() == 1 {
            write_same_locals_1(delta, f.stack[0], out);
        } else if f.stack.is_empty()
            && f.locals.len() < prev_locals.len()
            && prev_locals.len() - f.locals.len() <= 3
            && prev_locals[..f.locals.len()] == f.locals[..]
        {
            out.push(251 - (prev_locals.len() - f.locals.len()) as u8);
            out.extend_from_slice(&delta.to_be_bytes());
        } else if f.stack.is_empty()
            && f.locals.len() > prev_locals.len()
            && f.locals.len() - prev_locals.len() <= 3
            && f.locals[..prev_locals.len()] == *prev_locals
        {
            out.push(251 + (f.locals.len() - prev_locals.len()) as u8);
            out.extend_from_slice(&delta.to_be_bytes());
            for t in &f.locals[prev_locals.len()..] {
                t.write(out);
            }
        } else {
            write_full(delta, &f.locals, None, &f.stack, out)?;
        }
        prev_locals = &f.locals;
    }
    Ok(())
}

/// Re-encodes a StackMapTable whose frames keep their contents but move: each frame's absolute
/// offset goes through `offset` and each `Uninitialized(o)` through `uninit`. Frame kinds are
/// kept (a short form is widened to its extended form when the new delta needs it), so no type
/// is decoded beyond what is needed. `extra` frames (absolute offset, locals, stack) are
/// appended as full frames; they must lie after every existing frame.
///
/// With `added`, every frame (the `extra` ones too) also gets the added locals: frames that
/// keep the previous frame's locals are kept as they are, the others (the first frame, which
/// follows the method's implicit one, and chop, append and full frames) become full frames
/// whose locals are the frame's own, `Top` up to each added slot, and the added type.
pub fn relocate_table(
    data: &[u8],
    base: usize,
    mut offset: impl FnMut(u32) -> Result<u32>,
    mut uninit: impl FnMut(u16) -> Result<u16>,
    extra: &[Frame],
    added: Option<&AddedLocals<'_>>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut r = Reader::with_base(data, base);
    let n = r.u16()? as usize;
    let total = n + extra.len();
    if total > 0xFFFF {
        return Err(Error::format("too many frames"));
    }
    out.extend_from_slice(&(total as u16).to_be_bytes());
    let mut prev_old: i64 = -1;
    let mut prev_new: i64 = -1;
    let mut read_type = |r: &mut Reader<'_>| -> Result<VType> {
        Ok(match VType::read(r)? {
            VType::Uninitialized(o) => VType::Uninitialized(uninit(o)?),
            t => t,
        })
    };
    // with added locals: the current frame's own locals (entries), and its stack
    let mut cur: Vec<VType> = added.map(|a| a.initial.to_vec()).unwrap_or_default();
    let mut stack: Vec<VType> = Vec::new();
    for k in 0..n {
        let at = r.abs();
        let res: Result<()> = (|| {
            let ft = r.u8()?;
            let delta = match ft {
                0..=63 => ft as u16,
                64..=127 => (ft - 64) as u16,
                128..=246 => return Err(Error::format(format!("reserved frame type {ft}"))),
                _ => r.u16()?,
            };
            let old = prev_old + delta as i64 + 1;
            prev_old = old;
            let new = offset(old as u32)? as i64;
            let nd = new - prev_new - 1;
            if !(0..=65535).contains(&nd) {
                return Err(Error::format(format!(
                    "frame at {old} moves before the previous frame"
                )));
            }
            prev_new = new;
            let nd = nd as u16;
            if let Some(a) = added {
                stack.clear();
                let keeps = match ft {
                    0..=63 | 251 => true,
                    64..=127 | 247 => {
                        stack.push(read_type(&mut r)?);
                        true
                    }
                    248..=250 => {
                        let c = (251 - ft) as usize;
                        if c > cur.len() {
                            return Err(Error::format("chop_frame removes more locals than exist"));
                        }
                        cur.truncate(cur.len() - c);
                        false
                    }
                    252..=254 => {
                        for _ in 0..(ft - 251) {
                            cur.push(read_type(&mut r)?);
                        }
                        false
                    }
                    _ => {
                        cur.clear();
                        for _ in 0..r.u16()? {
                            cur.push(read_type(&mut r)?);
                        }
                        for _ in 0..r.u16()? {
                            stack.push(read_type(&mut r)?);
                        }
                        false
                    }
                };
                if keeps && k > 0 {
                    // the same locals as the frame before, which has the added ones
                    match stack.first() {
                        None => write_same(nd, out),
                        Some(&t) => write_same_locals_1(nd, t, out),
                    }
                } else {
                    write_full(nd, &cur, Some(a), &stack, out)?;
                }
                return Ok(());
            }
            let mut copy_type = |r: &mut Reader<'_>, out: &mut Vec<u8>| -> Result<()> {
                read_type(r)?.write(out);
                Ok(())
            };
            match ft {
                0..=63 | 251 => write_same(nd, out),
                64..=127 | 247 => {
                    write_same_locals_1_tag(nd, out);
                    copy_type(&mut r, out)?;
                }
                248..=250 => {
                    out.push(ft);
                    out.extend_from_slice(&nd.to_be_bytes());
                }
                252..=254 => {
                    out.push(ft);
                    out.extend_from_slice(&nd.to_be_bytes());
                    for _ in 0..(ft - 251) {
                        copy_type(&mut r, out)?;
                    }
                }
                _ => {
                    out.push(255);
                    out.extend_from_slice(&nd.to_be_bytes());
                    let nl = r.u16()?;
                    out.extend_from_slice(&nl.to_be_bytes());
                    for _ in 0..nl {
                        copy_type(&mut r, out)?;
                    }
                    let ns = r.u16()?;
                    out.extend_from_slice(&ns.to_be_bytes());
                    for _ in 0..ns {
                        copy_type(&mut r, out)?;
                    }
                }
            }
            Ok(())
        })();
        res.map_err(|e| e.context(format!("entry {k}")).at(at))?;
    }
    if !r.is_empty() {
        return Err(Error::format("StackMapTable longer than its entries").at(r.abs()));
    }
    for f in extra {
        let nd = f.offset as i64 - prev_new - 1;
        if !(0..=65535).contains(&nd) {
            return Err(Error::format(format!(
                "new frame at {} is not after the existing frames",
                f.offset
            )));
        }
        prev_new = f.offset as i64;
        write_full(nd as u16, &f.locals, added, &f.stack, out)?;
    }
    Ok(())
}

/// Locals that [`relocate_table`] adds to every frame: `(slot, type)` in increasing slot
/// order, each at or above every slot a frame of the table uses; `initial` is the method's
/// implicit first frame (its locals as entries).
#[derive(Debug, Clone, Copy)]
pub struct AddedLocals<'a> {
    pub initial: &'a [VType],
    pub locals: &'a [(u16, VType)],
}

fn write_same(nd: u16, out: &mut Vec<u8>) {
    if nd < 64 {
        out.push(nd as u8);
    } else {
        out.push(251);
        out.extend_from_slice(&nd.to_be_bytes());
    }
}

fn write_same_locals_1_tag(nd: u16, out: &mut Vec<u8>) {
    if nd < 64 {
        out.push(64 + nd as u8);
    } else {
        out.push(247);
        out.extend_from_slice(&nd.to_be_bytes());
    }
}

fn write_same_locals_1(nd: u16, t: VType, out: &mut Vec<u8>) {
    write_same_locals_1_tag(nd, out);
    t.write(out);
}

/// A full frame: `locals` (entries), then with `added` `Top` up to each added slot and its type.
fn write_full(
    nd: u16,
    locals: &[VType],
    added: Option<&AddedLocals<'_>>,
    stack: &[VType],
    out: &mut Vec<u8>,
) -> Result<()> {
    out.push(255);
    out.extend_from_slice(&nd.to_be_bytes());
    let count_at = out.len();
    out.extend_from_slice(&[0, 0]);
    let mut count = locals.len();
    let mut slot: u32 = 0;
    for t in locals {
        t.write(out);
        slot += t.slots() as u32;
    }
    for &(at, t) in added.map_or(&[][..], |a| a.locals) {
        if slot > at as u32 {
            return Err(Error::format(format!(
                "a frame uses local {at}, which was added"
            )));
        }
        while slot < at as u32 {
            VType::Top.write(out);
            slot += 1;
            count += 1;
        }
        t.write(out);
        slot += t.slots() as u32;
        count += 1;
    }
    if count > 0xFFFF {
        return Err(Error::format("too many locals in a frame"));
    }
    out[count_at..count_at + 2].copy_from_slice(&(count as u16).to_be_bytes());
    out.extend_from_slice(&(stack.len() as u16).to_be_bytes());
    for t in stack {
        t.write(out);
    }
    Ok(())
}
