//! Straight-line bytecode to insert (probes): encoded through the opcode table, with the stack
//! depth it reaches tracked as it is built.

use crate::cp::CpBuilder;
use crate::desc;
use crate::error::{Error, ErrorKind, Result};
use crate::opcodes::{self, op, Operands};

/// Bytes of a snippet: inline up to [`Bytes::INLINE`] bytes (every probe call is shorter), on
/// the heap beyond. A method's probes are built, copied and dropped per method: inline they
/// cost no allocation.
#[derive(Clone)]
pub(crate) enum Bytes {
    Inline(u8, [u8; Bytes::INLINE]),
    Heap(Vec<u8>),
}

impl Bytes {
    const INLINE: usize = 30;
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Inline(n, b) => &b[..*n as usize],
            Bytes::Heap(v) => v,
        }
    }
    #[inline]
    fn push(&mut self, b: u8) {
        self.extend_from_slice(&[b]);
    }
    /// Inline (the probes' few bytes, often a length known where it is called: no call to
    /// copy them), the rest out of line.
    #[inline]
    fn extend_from_slice(&mut self, s: &[u8]) {
        if let Bytes::Inline(n, b) = self {
            let at = *n as usize;
            if let Some(dst) = b.get_mut(at..at + s.len()) {
                dst.copy_from_slice(s);
                *n += s.len() as u8;
                return;
            }
        }
        self.extend_slow(s);
    }
    #[inline(never)]
    fn extend_slow(&mut self, s: &[u8]) {
        match self {
            Bytes::Inline(n, b) if *n as usize + s.len() <= Bytes::INLINE => {
                b[*n as usize..*n as usize + s.len()].copy_from_slice(s);
                *n += s.len() as u8;
            }
            Bytes::Inline(n, b) => {
                let mut v = Vec::with_capacity((*n as usize + s.len()).max(2 * Bytes::INLINE));
                v.extend_from_slice(&b[..*n as usize]);
                v.extend_from_slice(s);
                *self = Bytes::Heap(v);
            }
            Bytes::Heap(v) => v.extend_from_slice(s),
        }
    }
}

impl Default for Bytes {
    fn default() -> Bytes {
        Bytes::Inline(0, [0; Bytes::INLINE])
    }
}

impl PartialEq for Bytes {
    fn eq(&self, o: &Bytes) -> bool {
        self.as_slice() == o.as_slice()
    }
}
impl Eq for Bytes {}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

/// A branch-free instruction sequence. Inserted before/after instructions it must leave the
/// operand stack as it found it (net depth 0) and never pop what it did not push.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snippet {
    bytes: Bytes,
    depth: i32,
    max: i32,
    min: i32,
}

impl Snippet {
    pub fn new() -> Snippet {
        Snippet::default()
    }
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }
    pub fn len(&self) -> usize {
        self.bytes().len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Highest stack depth reached, relative to the start.
    pub fn max_depth(&self) -> u16 {
        self.max as u16
    }
    /// Net stack change.
    pub fn net(&self) -> i32 {
        self.depth
    }
    /// True if it pops below its starting depth at some point.
    pub fn underflows(&self) -> bool {
        self.min < 0
    }
    fn effect(&mut self, pops: i32, pushes: i32) {
        self.depth -= pops;
        self.min = self.min.min(self.depth);
        self.depth += pushes;
        self.max = self.max.max(self.depth);
    }
    /// Appends another snippet.
    pub fn append(&mut self, o: &Snippet) {
        self.min = self.min.min(self.depth + o.min);
        self.max = self.max.max(self.depth + o.max);
        self.depth += o.depth;
        self.bytes.extend_from_slice(o.bytes());
    }
    /// An opcode without operands whose stack effect is fixed in the opcode table.
    pub fn op(&mut self, opcode: u8) -> Result<&mut Self> {
        let info = opcodes::info(opcode).ok_or_else(|| {
            Error::new(ErrorKind::Edit, format!("undefined opcode 0x{opcode:02x}"))
        })?;
        let eff = info.fixed_effect();
        match (info.operands, eff, info.flow) {
            (Operands::None, Some((p, q)), crate::opcodes::Flow::Next) => {
                self.bytes.push(opcode);
                self.effect(p as i32, q as i32);
                Ok(self)
            }
            _ => Err(Error::new(
                ErrorKind::Edit,
                format!(
                    "{} cannot be used in a snippet with Snippet::op",
                    info.mnemonic
                ),
            )),
        }
    }
    /// `dup` (or `dup2` when `wide`) of the value on top of the stack where the snippet is
    /// inserted: a copy for the snippet to consume (the return value before a return, the
    /// exception in a handler). Reads but never pops below the start.
    pub fn dup_top(&mut self, wide: bool) -> &mut Self {
        self.bytes.push(if wide { op::DUP2 } else { op::DUP });
        self.effect(0, if wide { 2 } else { 1 });
        self
    }
    /// Pushes an int constant with the shortest encoding (iconst, bipush, sipush, ldc).
    pub fn int(&mut self, cp: &mut CpBuilder<'_>, v: i32) -> Result<&mut Self> {
        match v {
            -1..=5 => self.bytes.push((op::ICONST_0 as i32 + v) as u8),
            -128..=127 => self.bytes.extend_from_slice(&[op::BIPUSH, v as i8 as u8]),
            -32768..=32767 => {
                self.bytes.push(op::SIPUSH);
                self.bytes.extend_from_slice(&(v as i16).to_be_bytes());
            }
            _ => {
                let i = cp.integer(v)?;
                self.ldc_index(i);
            }
        }
        self.effect(0, 1);
        Ok(self)
    }
    fn ldc_index(&mut self, i: u16) {
        if i < 256 {
            self.bytes.extend_from_slice(&[op::LDC, i as u8]);
        } else {
            self.bytes.push(op::LDC_W);
            self.bytes.extend_from_slice(&i.to_be_bytes());
        }
    }
    /// Pushes a String constant.
    pub fn string(&mut self, cp: &mut CpBuilder<'_>, s: &str) -> Result<&mut Self> {
        let i = cp.string(s)?;
        self.ldc_index(i);
        self.effect(0, 1);
        Ok(self)
    }
    /// Pushes a long constant.
    pub fn long(&mut self, cp: &mut CpBuilder<'_>, v: i64) -> Result<&mut Self> {
        match v {
            0 | 1 => self.bytes.push(op::LCONST_0 + v as u8),
            _ => {
                let i = cp.long(v)?;
                self.bytes.push(op::LDC2_W);
                self.bytes.extend_from_slice(&i.to_be_bytes());
            }
        }
        self.effect(0, 2);
        Ok(self)
    }
    /// An instruction with a two-byte constant-pool operand and its stack effect.
    fn cp16(&mut self, opcode: u8, index: u16, pops: i32, pushes: i32) -> &mut Self {
        self.bytes.push(opcode);
        self.bytes.extend_from_slice(&index.to_be_bytes());
        self.effect(pops, pushes);
        self
    }
    /// invokestatic of a class method.
    pub fn invokestatic(
        &mut self,
        cp: &mut CpBuilder<'_>,
        class: &str,
        name: &str,
        desc: &str,
    ) -> Result<&mut Self> {
        let i = cp.methodref(class, name, desc)?;
        self.invokestatic_ref(i, desc)
    }
    /// invokestatic of the method constant `i` (a Methodref, or an InterfaceMethodref for an
    /// interface's static method in class files of version 52 and later) of descriptor `desc`.
    pub fn invokestatic_ref(&mut self, i: u16, desc: &str) -> Result<&mut Self> {
        let (a, r) = desc::method_slots(desc)?;
        Ok(self.cp16(op::INVOKESTATIC, i, a as i32, r as i32))
    }
    /// invokevirtual of a class method (pops the receiver and the arguments).
    pub fn invokevirtual(
        &mut self,
        cp: &mut CpBuilder<'_>,
        class: &str,
        name: &str,
        desc: &str,
    ) -> Result<&mut Self> {
        let (a, r) = desc::method_slots(desc)?;
        let i = cp.methodref(class, name, desc)?;
        Ok(self.cp16(op::INVOKEVIRTUAL, i, a as i32 + 1, r as i32))
    }
    /// getstatic of a field.
    pub fn getstatic(
        &mut self,
        cp: &mut CpBuilder<'_>,
        class: &str,
        name: &str,
        desc: &str,
    ) -> Result<&mut Self> {
        let i = cp.fieldref(class, name, desc)?;
        Ok(self.cp16(op::GETSTATIC, i, 0, desc::slots(desc) as i32))
    }
    /// putstatic of a field.
    pub fn putstatic(
        &mut self,
        cp: &mut CpBuilder<'_>,
        class: &str,
        name: &str,
        desc: &str,
    ) -> Result<&mut Self> {
        let i = cp.fieldref(class, name, desc)?;
        Ok(self.cp16(op::PUTSTATIC, i, desc::slots(desc) as i32, 0))
    }
    /// Pushes a Class constant (`ldc` of a CONSTANT_Class; class files of version 49 and later).
    pub fn class_const(
        &mut self,
        cp: &mut CpBuilder<'_>,
        internal_name: &str,
    ) -> Result<&mut Self> {
        let i = cp.class(internal_name)?;
        self.ldc_index(i);
        self.effect(0, 1);
        Ok(self)
    }
    fn local_op(&mut self, base: u8, short0: u8, index: u16, slots: i32, load: bool) {
        if index < 4 {
            self.bytes.push(short0 + index as u8);
        } else if index < 256 {
            self.bytes.extend_from_slice(&[base, index as u8]);
        } else {
            self.bytes.extend_from_slice(&[op::WIDE, base]);
            self.bytes.extend_from_slice(&index.to_be_bytes());
        }
        if load {
            self.effect(0, slots)
        } else {
            self.effect(slots, 0)
        }
    }
    /// `iinc index, delta` on an int local (the `wide` form when the index or the delta needs
    /// it); no stack effect.
    pub fn iinc(&mut self, index: u16, delta: i16) -> &mut Self {
        if index < 256 && i8::try_from(delta).is_ok() {
            self.bytes
                .extend_from_slice(&[op::IINC, index as u8, delta as i8 as u8]);
        } else {
            self.bytes.extend_from_slice(&[op::WIDE, op::IINC]);
            self.bytes.extend_from_slice(&index.to_be_bytes());
            self.bytes.extend_from_slice(&delta.to_be_bytes());
        }
        self
    }
    /// Loads a local: `kind` is one of I J F D A.
    pub fn load(&mut self, kind: char, index: u16) -> Result<&mut Self> {
        self.local(kind, index, true)
    }
    /// Stores a local: `kind` is one of I J F D A.
    pub fn store(&mut self, kind: char, index: u16) -> Result<&mut Self> {
        self.local(kind, index, false)
    }
    fn local(&mut self, kind: char, index: u16, load: bool) -> Result<&mut Self> {
        // The I, J, F, D, A forms are consecutive in the opcode table for loads and stores.
        let (k, n) = match kind {
            'I' => (0, 1),
            'J' => (1, 2),
            'F' => (2, 1),
            'D' => (3, 2),
            'A' => (4, 1),
            _ => {
                return Err(Error::new(
                    ErrorKind::Edit,
                    format!("bad local kind {kind:?}"),
                ))
            }
        };
        let (base, short0) = if load {
            (op::ILOAD, op::ILOAD_0)
        } else {
            (op::ISTORE, op::ISTORE_0)
        };
        self.local_op(base + k, short0 + 4 * k, index, n, load);
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iinc_takes_the_wide_form_only_when_needed() {
        let mut s = Snippet::new();
        s.iinc(4, -3).iinc(300, 1).iinc(2, 200);
        assert_eq!(
            s.bytes(),
            &[
                op::IINC,
                4,
                0xfd, // narrow
                op::WIDE,
                op::IINC,
                1,
                44,
                0,
                1, // index past 255
                op::WIDE,
                op::IINC,
                0,
                2,
                0,
                200, // delta past 127
            ]
        );
        assert_eq!((s.net(), s.max_depth()), (0, 0));
    }

    #[test]
    fn long_snippets_keep_every_byte_past_the_inline_buffer() {
        // short snippets are stored inline, longer ones on the heap: same bytes either way
        let mut s = Snippet::new();
        let mut want = Vec::new();
        for k in 0..40u8 {
            s.op(op::ICONST_0 + k % 6).unwrap().op(op::POP).unwrap();
            want.extend_from_slice(&[op::ICONST_0 + k % 6, op::POP]);
            assert_eq!(s.bytes(), &want[..]);
            assert_eq!(s.len(), want.len());
        }
        let mut short = Snippet::new();
        short.op(op::NOP).unwrap();
        let mut joined = short.clone();
        joined.append(&s);
        assert_eq!(joined.bytes()[0], op::NOP);
        assert_eq!(&joined.bytes()[1..], &want[..]);
        assert_eq!(joined.max_depth(), 1);
        // equality is by content, whichever way it is stored
        let mut again = Snippet::new();
        again.append(&joined);
        assert_eq!(again, joined);
        assert_ne!(again, s);
    }

    #[test]
    fn dup_top_reads_the_value_below_without_underflow() {
        // before a return: a copy of the value on the stack, consumed by the snippet
        let mut s = Snippet::new();
        s.dup_top(false).op(op::POP).unwrap();
        assert_eq!((s.net(), s.underflows(), s.max_depth()), (0, false, 1));
        assert_eq!(s.bytes(), &[op::DUP, op::POP]);
        let mut w = Snippet::new();
        w.dup_top(true).op(op::POP2).unwrap();
        assert_eq!((w.net(), w.underflows(), w.max_depth()), (0, false, 2));
        // popping what it did not copy still underflows
        let mut u = Snippet::new();
        u.dup_top(false).op(op::POP).unwrap().op(op::POP).unwrap();
        assert!(u.underflows());
    }

    #[test]
    fn local_loads_and_stores_pick_the_shortest_form() {
        let mut s = Snippet::new();
        s.load('J', 2)
            .unwrap()
            .store('J', 300)
            .unwrap()
            .load('A', 0)
            .unwrap()
            .store('I', 7)
            .unwrap();
        s.load('D', 3)
            .unwrap()
            .store('F', 1)
            .unwrap()
            .load('F', 255)
            .unwrap()
            .store('A', 3)
            .unwrap();
        assert_eq!(
            s.bytes(),
            [
                op::LLOAD_0 + 2,
                op::WIDE,
                op::LSTORE,
                0x01,
                0x2c,
                op::ALOAD_0,
                op::ISTORE,
                7,
                op::DLOAD_0 + 3,
                op::FSTORE_0 + 1,
                op::FLOAD,
                255,
                op::ASTORE_0 + 3,
            ]
        );
        // depths: J +2 -> 2, J -2 -> 0, A +1 -> 1, I -1 -> 0, D +2 -> 2, F -1 -> 1, F +1 -> 2, A -1 -> 1
        assert_eq!(s.net(), 1);
        assert_eq!(s.max_depth(), 2);
        assert!(!s.underflows());
        let mut u = Snippet::new();
        u.store('I', 0).unwrap();
        assert!(u.underflows() && u.net() == -1);
        assert!(Snippet::new().load('X', 0).is_err());
    }
}
