//! The Code attribute and instruction decoding, driven by the opcode table.

use crate::class::{Attribute, ClassFile};
use crate::error::{Context, Error, Result};
use crate::opcodes::{self, op, Flow, OpInfo, Operands};
use crate::reader::{be16, be32, Reader};

/// One exception-table entry (raw offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handler {
    pub start: u16,
    pub end: u16,
    pub handler: u16,
    pub catch_type: u16,
}

/// A parsed Code attribute. Instructions are decoded on demand from `code`.
#[derive(Clone, Debug)]
pub struct CodeAttr<'a> {
    pub max_stack: u16,
    pub max_locals: u16,
    pub code: &'a [u8],
    /// Absolute offset of `code` in the class bytes.
    pub code_offset: usize,
    pub handlers: Vec<Handler>,
    pub attributes: Vec<Attribute<'a>>,
}

/// A decoded instruction: position, opcode, length. Operands are read from the code bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub pc: u32,
    pub opcode: u8,
    /// True when prefixed by `wide` (then `pc` points at the `wide` byte).
    pub wide: bool,
    pub len: u32,
}

impl<'a> CodeAttr<'a> {
    pub fn parse(cf: &ClassFile<'a>, a: Attribute<'a>) -> Result<CodeAttr<'a>> {
        let mut r = Reader::with_base(a.data, a.offset);
        let (max_stack, max_locals, code_len) = if cf.major < 45 || (cf.major == 45 && cf.minor < 3)
        {
            // JVMS 4.7.3 before 45.3: u1 max_stack, u1 max_locals, u2 code_length.
            (r.u8()? as u16, r.u8()? as u16, r.u16()? as usize)
        } else {
            (r.u16()?, r.u16()?, r.u32()? as usize)
        };
        if code_len == 0 || code_len > 65535 {
            return Err(
                Error::format(format!("code_length {code_len} is not in 1..=65535")).at(r.abs()),
            );
        }
        let code_offset = r.abs();
        let code = r.bytes(code_len)?;
        let n = r.u16()? as usize;
        let mut handlers = Vec::with_capacity(n);
        for _ in 0..n {
            handlers.push(Handler {
                start: r.u16()?,
                end: r.u16()?,
                handler: r.u16()?,
                catch_type: r.u16()?,
            });
        }
        let attributes = {
            let n = r.u16()? as usize;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let name_index = r.u16()?;
                if cf.cp.tag(name_index) != Some(crate::cp::tag::UTF8) {
                    return Err(
                        Error::format(format!("attribute name #{name_index} is not Utf8"))
                            .at(r.abs() - 2),
                    );
                }
                let len = r.u32()? as usize;
                let offset = r.abs();
                let data = r.bytes(len)?;
                v.push(Attribute {
                    name_index,
                    data,
                    offset,
                });
            }
            v
        };
        if !r.is_empty() {
            return Err(Error::format("Code attribute longer than its contents").at(r.abs()));
        }
        Ok(CodeAttr {
            max_stack,
            max_locals,
            code,
            code_offset,
            handlers,
            attributes,
        })
    }

    pub fn insns(&self) -> InsnIter<'a> {
        InsnIter {
            code: self.code,
            pc: 0,
        }
    }

    /// Decodes all instructions, checking each.
    pub fn decode_all(&self) -> Result<Vec<Insn>> {
        let mut v = Vec::with_capacity(self.code.len() / 2);
        for i in self.insns() {
            v.push(i?);
        }
        Ok(v)
    }

    /// Format checks: instruction boundaries, branch targets, exception ranges, frames, tables.
    pub fn check(&self, cf: &ClassFile<'a>) -> Result<()> {
        let insns = self.decode_all()?;
        let mut boundary = vec![false; self.code.len() + 1];
        for i in &insns {
            boundary[i.pc as usize] = true;
        }
        boundary[self.code.len()] = true;
        let on = |pc: usize| boundary.get(pc).copied().unwrap_or(false);
        let last = insns.last().copied();
        if let Some(l) = last {
            if matches!(
                opcodes::info(l.opcode).map(|i| i.flow),
                Some(Flow::Next | Flow::Cond | Flow::Jsr)
            ) {
                return Err(Error::format(format!(
                    "execution falls off the end of the code after {}",
                    opcodes::mnemonic(l.opcode)
                ))
                .at(self.code_offset + l.pc as usize));
            }
        }
        for i in &insns {
            let at = self.code_offset + i.pc as usize;
            let mut bad = None;
            i.for_each_target(self.code, |t| {
                if t < 0 || t as usize >= self.code.len() || !on(t as usize) {
                    bad = Some(t);
                }
            });
            if let Some(t) = bad {
                return Err(Error::format(format!(
                    "{} at pc {}: branch target {t} is not an instruction",
                    opcodes::mnemonic(i.opcode),
                    i.pc
                ))
                .at(at));
            }
            i.check_operands(self.code, cf).map_err(|e| {
                e.context(format!("pc {} {}", i.pc, opcodes::mnemonic(i.opcode)))
                    .at(at)
            })?;
        }
        for (k, h) in self.handlers.iter().enumerate() {
            let ok = h.start < h.end
                && on(h.start as usize)
                && (h.end as usize) <= self.code.len()
                && on(h.end as usize)
                && (h.handler as usize) < self.code.len()
                && on(h.handler as usize)
                && (h.catch_type == 0 || cf.cp.tag(h.catch_type) == Some(crate::cp::tag::CLASS));
            if !ok {
                return Err(Error::format(format!(
                    "exception table entry {k}: bad range [{}, {}) -> {} catch #{}",
                    h.start, h.end, h.handler, h.catch_type
                )));
            }
        }
        for a in &self.attributes {
            let name = cf.attr_name(a);
            match &*name {
                "StackMapTable" => {
                    crate::frames::decode_table(a.data, a.offset, &[])
                        .and_then(|fs| {
                            for (k, f) in fs.iter().enumerate() {
                                if !on(f.offset as usize) || f.offset as usize >= self.code.len() {
                                    return Err(Error::format(format!("entry {k}: offset {} is not an instruction", f.offset)));
                                }
                                for t in f.locals.iter().chain(f.stack.iter()) {
                                    if let crate::frames::VType::Uninitialized(o) = *t {
                                        let ok = (o as usize) < self.code.len() && on(o as usize) && self.code[o as usize] == op::NEW;
                                        if !ok {
                                            return Err(Error::format(format!("entry {k}: Uninitialized({o}) does not point at a `new`")));
                                        }
                                    }
                                    if let crate::frames::VType::Object(c) = *t {
                                        if cf.cp.tag(c) != Some(crate::cp::tag::CLASS) {
                                            return Err(Error::format(format!("entry {k}: Object(#{c}) is not a Class constant")));
                                        }
                                    }
                                }
                            }
                            Ok(())
                        })
                        .ctx(|| "StackMapTable")?;
                }
                "LineNumberTable" => {
                    crate::attrs::LineNumbers::parse(a.data, a.offset)
                        .and_then(|t| {
                            for (k, e) in t.entries.iter().enumerate() {
                                if e.0 as usize >= self.code.len() || !on(e.0 as usize) {
                                    return Err(Error::format(format!(
                                        "entry {k}: start_pc {} is not an instruction",
                                        e.0
                                    )));
                                }
                            }
                            Ok(())
                        })
                        .ctx(|| "LineNumberTable")?;
                }
                "LocalVariableTable" | "LocalVariableTypeTable" => {
                    crate::attrs::LocalVars::parse(a.data, a.offset)
                        .and_then(|t| {
                            for (k, e) in t.entries.iter().enumerate() {
                                let end = e.start as usize + e.length as usize;
                                if !on(e.start as usize) || end > self.code.len() || !on(end) {
                                    return Err(Error::format(format!("entry {k}: range [{}, {end}) is not on instruction boundaries", e.start)));
                                }
                                for idx in [e.name, e.desc] {
                                    if cf.cp.tag(idx) != Some(crate::cp::tag::UTF8) {
                                        return Err(Error::format(format!("entry {k}: #{idx} is not Utf8")));
                                    }
                                }
                            }
                            Ok(())
                        })
                        .ctx(|| name.to_string())?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Iterates instructions, returning an error (and stopping) at the first undecodable one.
pub struct InsnIter<'a> {
    code: &'a [u8],
    pc: usize,
}

impl Iterator for InsnIter<'_> {
    type Item = Result<Insn>;
    fn next(&mut self) -> Option<Result<Insn>> {
        if self.pc >= self.code.len() {
            return None;
        }
        let r = decode(self.code, self.pc);
        match r {
            Ok(i) => self.pc += i.len as usize,
            Err(_) => self.pc = self.code.len(),
        }
        Some(r)
    }
}

/// Decodes the instruction at `pc`.
pub fn decode(code: &[u8], pc: usize) -> Result<Insn> {
    let opcode = code[pc];
    let fixed = opcodes::fixed_len(opcode) as usize;
    if fixed != 0 && pc + fixed <= code.len() {
        return Ok(Insn {
            pc: pc as u32,
            opcode,
            wide: false,
            len: fixed as u32,
        });
    }
    let info = opcodes::info(opcode)
        .ok_or_else(|| Error::format(format!("undefined opcode 0x{opcode:02x} at pc {pc}")))?;
    let need = |n: usize| -> Result<()> {
        if pc + n > code.len() {
            Err(Error::format(format!(
                "{} at pc {pc} runs past the end of the code",
                info.mnemonic
            )))
        } else {
            Ok(())
        }
    };
    let len = match info.operands {
        Operands::None => 1,
        Operands::I8 | Operands::U8 | Operands::Cp8 | Operands::Local => 2,
        Operands::I16 | Operands::Cp16 | Operands::Iinc | Operands::Branch16 => 3,
        Operands::MultiANewArray => 4,
        Operands::Branch32 | Operands::InvokeInterface | Operands::InvokeDynamic => 5,
        Operands::Wide => {
            need(2)?;
            let m = code[pc + 1];
            let n = match m {
                op::IINC => 6,
                op::ILOAD..=op::ALOAD | op::ISTORE..=op::ASTORE | op::RET => 4,
                _ => {
                    return Err(Error::format(format!(
                        "wide at pc {pc} modifies {} (not a local-variable instruction)",
                        opcodes::mnemonic(m)
                    )))
                }
            };
            need(n)?;
            return Ok(Insn {
                pc: pc as u32,
                opcode: m,
                wide: true,
                len: n as u32,
            });
        }
        Operands::TableSwitch => {
            let base = (pc + 4) & !3;
            need(base - pc + 12)?;
            let low = be32(code, base + 4) as i32;
            let high = be32(code, base + 8) as i32;
            if low > high {
                return Err(Error::format(format!(
                    "tableswitch at pc {pc}: low {low} > high {high}"
                )));
            }
            let n = (high as i64 - low as i64 + 1) as usize;
            if n > 65536 {
                return Err(Error::format(format!(
                    "tableswitch at pc {pc}: {n} entries"
                )));
            }
            base - pc + 12 + 4 * n
        }
        Operands::LookupSwitch => {
            let base = (pc + 4) & !3;
            need(base - pc + 8)?;
            let np = be32(code, base + 4) as i32;
            if !(0..=65536).contains(&np) {
                return Err(Error::format(format!(
                    "lookupswitch at pc {pc}: npairs {np}"
                )));
            }
            let n = base - pc + 8 + 8 * np as usize;
            need(n)?;
            let mut prev = None;
            for k in 0..np as usize {
                let key = be32(code, base + 8 + 8 * k) as i32;
                if prev.is_some_and(|p| p >= key) {
                    return Err(Error::format(format!(
                        "lookupswitch at pc {pc}: keys not sorted"
                    )));
                }
                prev = Some(key);
            }
            n
        }
    };
    need(len)?;
    Ok(Insn {
        pc: pc as u32,
        opcode,
        wide: false,
        len: len as u32,
    })
}

impl Insn {
    pub fn info(&self) -> &'static OpInfo {
        // Decoding succeeded, so the opcode is defined; fall back to nop defensively.
        opcodes::info(self.opcode)
            .unwrap_or_else(|| opcodes::info(op::NOP).unwrap_or_else(|| unreachable!()))
    }
    /// The opcode's operand layout (compact table; same as `info().operands`).
    #[inline]
    pub fn operands(&self) -> Operands {
        opcodes::operands(self.opcode)
    }
    /// The opcode's control flow (compact table; same as `info().flow`).
    #[inline]
    pub fn flow(&self) -> Flow {
        opcodes::flow(self.opcode)
    }
    #[inline]
    fn at(&self) -> usize {
        self.pc as usize + if self.wide { 2 } else { 1 }
    }
    /// Constant-pool operand (ldc, field/method/class instructions).
    pub fn cp_index(&self, code: &[u8]) -> Option<u16> {
        match self.operands() {
            Operands::Cp8 => Some(code[self.at()] as u16),
            Operands::Cp16
            | Operands::InvokeInterface
            | Operands::InvokeDynamic
            | Operands::MultiANewArray => Some(be16(code, self.at())),
            _ => None,
        }
    }
    /// Local-variable index, including the implicit `_n` forms.
    pub fn local(&self, code: &[u8]) -> Option<u16> {
        let o = self.opcode;
        match o {
            op::ILOAD..=op::ALOAD | op::ISTORE..=op::ASTORE | op::RET | op::IINC => {
                Some(if self.wide {
                    be16(code, self.at())
                } else {
                    code[self.at()] as u16
                })
            }
            op::ILOAD_0..=op::ALOAD_3 => Some(((o - op::ILOAD_0) % 4) as u16),
            op::ISTORE_0..=op::ASTORE_3 => Some(((o - op::ISTORE_0) % 4) as u16),
            _ => None,
        }
    }
    /// Slots the local-variable access uses (2 for long/double).
    pub fn local_size(&self) -> u16 {
        match self.opcode {
            op::LLOAD | op::DLOAD | op::LSTORE | op::DSTORE => 2,
            op::LLOAD_0..=op::LLOAD_3 | op::DLOAD_0..=op::DLOAD_3 => 2,
            op::LSTORE_0..=op::LSTORE_3 | op::DSTORE_0..=op::DSTORE_3 => 2,
            _ => 1,
        }
    }
    /// Immediate of bipush/sipush/newarray, or iinc's constant.
    pub fn immediate(&self, code: &[u8]) -> Option<i32> {
        match self.opcode {
            op::BIPUSH => Some(code[self.at()] as i8 as i32),
            op::SIPUSH => Some(be16(code, self.at()) as i16 as i32),
            op::NEWARRAY => Some(code[self.at()] as i32),
            op::IINC => Some(if self.wide {
                be16(code, self.at() + 2) as i16 as i32
            } else {
                code[self.at() + 1] as i8 as i32
            }),
            op::MULTIANEWARRAY => Some(code[self.at() + 2] as i32),
            _ => None,
        }
    }
    /// Relative offset of a branch (not switches).
    pub fn branch_offset(&self, code: &[u8]) -> Option<i32> {
        match self.operands() {
            Operands::Branch16 => Some(be16(code, self.at()) as i16 as i32),
            Operands::Branch32 => Some(be32(code, self.at()) as i32),
            _ => None,
        }
    }
    /// For switches: (default offset, [(key, offset)]) relative to `pc`.
    pub fn switch(&self, code: &[u8]) -> Option<(i32, Vec<(i32, i32)>)> {
        let base = (self.pc as usize + 4) & !3;
        match self.opcode {
            op::TABLESWITCH => {
                let d = be32(code, base) as i32;
                let low = be32(code, base + 4) as i32;
                let high = be32(code, base + 8) as i32;
                let n = (high as i64 - low as i64 + 1) as usize;
                Some((
                    d,
                    (0..n)
                        .map(|k| {
                            (
                                low.wrapping_add(k as i32),
                                be32(code, base + 12 + 4 * k) as i32,
                            )
                        })
                        .collect(),
                ))
            }
            op::LOOKUPSWITCH => {
                let d = be32(code, base) as i32;
                let n = be32(code, base + 4) as usize;
                Some((
                    d,
                    (0..n)
                        .map(|k| {
                            (
                                be32(code, base + 8 + 8 * k) as i32,
                                be32(code, base + 12 + 8 * k) as i32,
                            )
                        })
                        .collect(),
                ))
            }
            _ => None,
        }
    }
    /// Calls `f` with every absolute branch/switch target.
    pub fn for_each_target(&self, code: &[u8], mut f: impl FnMut(i64)) {
        if let Some(o) = self.branch_offset(code) {
            f(self.pc as i64 + o as i64);
        } else if matches!(self.opcode, op::TABLESWITCH | op::LOOKUPSWITCH) {
            let base = (self.pc as usize + 4) & !3;
            f(self.pc as i64 + be32(code, base) as i32 as i64);
            if self.opcode == op::TABLESWITCH {
                let low = be32(code, base + 4) as i32 as i64;
                let high = be32(code, base + 8) as i32 as i64;
                for k in 0..(high - low + 1) as usize {
                    f(self.pc as i64 + be32(code, base + 12 + 4 * k) as i32 as i64);
                }
            } else {
                let n = be32(code, base + 4) as usize;
                for k in 0..n {
                    f(self.pc as i64 + be32(code, base + 12 + 8 * k) as i32 as i64);
                }
            }
        }
    }

    /// Checks constant-pool operand kinds.
    fn check_operands(&self, code: &[u8], cf: &ClassFile<'_>) -> Result<()> {
        use crate::cp::tag;
        let Some(idx) = self.cp_index(code) else {
            if self.opcode == op::NEWARRAY {
                let t = self.immediate(code).unwrap_or(0);
                if !(4..=11).contains(&t) {
                    return Err(Error::format(format!("newarray: bad atype {t}")));
                }
            }
            return Ok(());
        };
        let t = cf.cp.tag(idx);
        let ok: &[u8] = match self.opcode {
            op::LDC | op::LDC_W => {
                if cf.major >= 55 {
                    &[
                        tag::INTEGER,
                        tag::FLOAT,
                        tag::STRING,
                        tag::CLASS,
                        tag::METHOD_TYPE,
                        tag::METHOD_HANDLE,
                        tag::DYNAMIC,
                    ]
                } else {
                    &[
                        tag::INTEGER,
                        tag::FLOAT,
                        tag::STRING,
                        tag::CLASS,
                        tag::METHOD_TYPE,
                        tag::METHOD_HANDLE,
                    ]
                }
            }
            op::LDC2_W => &[tag::LONG, tag::DOUBLE, tag::DYNAMIC],
            op::GETSTATIC..=op::PUTFIELD => &[tag::FIELDREF],
            op::INVOKEVIRTUAL => &[tag::METHODREF],
            op::INVOKESPECIAL | op::INVOKESTATIC => {
                if cf.major >= 52 {
                    &[tag::METHODREF, tag::INTERFACE_METHODREF]
                } else {
                    &[tag::METHODREF]
                }
            }
            op::INVOKEINTERFACE => &[tag::INTERFACE_METHODREF],
            op::INVOKEDYNAMIC => &[tag::INVOKE_DYNAMIC],
            op::NEW | op::ANEWARRAY | op::CHECKCAST | op::INSTANCEOF | op::MULTIANEWARRAY => {
                &[tag::CLASS]
            }
            _ => return Ok(()),
        };
        if t.is_some_and(|t| ok.contains(&t)) {
            if self.opcode == op::LDC2_W && t == Some(tag::DYNAMIC)
                || matches!(self.opcode, op::LDC | op::LDC_W) && t == Some(tag::DYNAMIC)
            {
                let (_, _, d) = cf.cp.dynamic(idx)?;
                let wide = d == "J" || d == "D";
                if wide != (self.opcode == op::LDC2_W) {
                    return Err(Error::format(format!(
                        "constant #{idx}: Dynamic of type {d} with {}",
                        opcodes::mnemonic(self.opcode)
                    )));
                }
            }
            Ok(())
        } else {
            Err(Error::format(format!(
                "operand #{idx} is {}",
                t.map_or("out of range", crate::cp::tag_name)
            )))
        }
    }
}
