//! Stack effects and a forward type interpreter over original code, driven by the opcode table.
//! Used to recompute max_stack, to find the super()/this() call of a constructor, and to derive
//! the frame a new branch target needs (jump widening). Needs no class hierarchy: it only moves
//! types forward from the existing frames.

use crate::code::Insn;
use crate::cp::{tag, ConstantPool, CpBuilder};
use crate::desc::{self, MethodDesc};
use crate::error::{Error, Result};
use crate::frames::VType;
use crate::opcodes::op;

/// [`depth_effect`] of the opcodes whose effect needs no operand: the table's fixed effects
/// plus the `?` cases that are constant anyway (aload, ldc, new, …).
const DEPTH_CONST: [Option<(u8, u8)>; 256] = {
    let mut t = [None; 256];
    let mut o = 0;
    while o < 256 {
        let b = o as u8;
        t[o] = crate::opcodes::fixed_effect(b);
        if t[o].is_none() {
            t[o] = match b {
                op::ACONST_NULL
                | op::ALOAD
                | op::ALOAD_0
                | op::ALOAD_1
                | op::ALOAD_2
                | op::ALOAD_3
                | op::NEW
                | op::JSR
                | op::JSR_W
                | op::LDC
                | op::LDC_W => Some((0, 1)),
                op::LDC2_W => Some((0, 2)),
                op::AALOAD => Some((2, 1)),
                op::NEWARRAY | op::ANEWARRAY | op::CHECKCAST => Some((1, 1)),
                _ => None,
            };
        }
        o += 1;
    }
    t
};

/// The stack effect of `opcode` when it does not depend on operands (same as
/// [`depth_effect`] for it), else None.
#[inline]
pub fn depth_effect_const(opcode: u8) -> Option<(u8, u8)> {
    DEPTH_CONST[opcode as usize]
}

/// Stack slots an instruction pops and pushes.
pub fn depth_effect(i: &Insn, code: &[u8], cp: &ConstantPool<'_>) -> Result<(u16, u16)> {
    if let Some((p, q)) = crate::opcodes::fixed_effect(i.opcode) {
        return Ok((p as u16, q as u16));
    }
    let idx = || i.cp_index(code).unwrap_or(0);
    Ok(match i.opcode {
        op::ACONST_NULL | op::ALOAD | op::ALOAD_0..=op::ALOAD_3 | op::NEW | op::JSR | op::JSR_W => {
            (0, 1)
        }
        op::LDC | op::LDC_W => (0, 1),
        op::LDC2_W => (0, 2),
        op::AALOAD => (2, 1),
        op::NEWARRAY | op::ANEWARRAY | op::CHECKCAST => (1, 1),
        op::MULTIANEWARRAY => (i.immediate(code).unwrap_or(0) as u16, 1),
        op::GETSTATIC | op::PUTSTATIC | op::GETFIELD | op::PUTFIELD => {
            let (_, d) = cp.ref_name_desc_bytes(idx())?;
            let s = desc::slots_bytes(d) as u16;
            match i.opcode {
                op::GETSTATIC => (0, s),
                op::PUTSTATIC => (s, 0),
                op::GETFIELD => (1, s),
                _ => (1 + s, 0),
            }
        }
        op::INVOKEVIRTUAL
        | op::INVOKESPECIAL
        | op::INVOKESTATIC
        | op::INVOKEINTERFACE
        | op::INVOKEDYNAMIC => {
            let (_, d) = cp.ref_name_desc_bytes(idx())?;
            let (a, r) = desc::method_slots_bytes(d)?;
            let recv = !matches!(i.opcode, op::INVOKESTATIC | op::INVOKEDYNAMIC) as u16;
            (a.wrapping_add(recv), r as u16)
        }
        o => {
            return Err(Error::format(format!(
                "no stack effect for opcode 0x{o:02x}"
            )))
        }
    })
}

/// Where the interpreter gets Class constant indices and names.
pub trait TypeCtx {
    fn class_index(&mut self, name: &str) -> Result<u16>;
    fn class_name(&self, index: u16) -> Option<String>;
}

impl TypeCtx for CpBuilder<'_> {
    fn class_index(&mut self, name: &str) -> Result<u16> {
        self.class(name)
    }
    fn class_name(&self, index: u16) -> Option<String> {
        self.class_name_of(index)
    }
}

/// A TypeCtx that does not name object types (all objects become Object(0)); enough to track
/// initialization state.
pub struct Untyped;
impl TypeCtx for Untyped {
    fn class_index(&mut self, _: &str) -> Result<u16> {
        Ok(0)
    }
    fn class_name(&self, _: u16) -> Option<String> {
        None
    }
}

/// The verification type of a field descriptor.
pub fn vtype_of(d: &str, ctx: &mut dyn TypeCtx) -> Result<VType> {
    Ok(match d.as_bytes().first() {
        Some(b'Z' | b'B' | b'C' | b'S' | b'I') => VType::Integer,
        Some(b'F') => VType::Float,
        Some(b'J') => VType::Long,
        Some(b'D') => VType::Double,
        Some(b'L') if d.len() > 2 && d.ends_with(';') => {
            VType::Object(ctx.class_index(&d[1..d.len() - 1])?)
        }
        Some(b'[') => VType::Object(ctx.class_index(d)?),
        _ => return Err(Error::format(format!("bad field descriptor {d:?}"))),
    })
}

/// Slot-form frame state.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct State {
    pub locals: Vec<VType>,
    pub stack: Vec<VType>,
}

impl State {
    fn pop(&mut self, n: usize) -> Result<()> {
        if self.stack.len() < n {
            return Err(Error::format("operand stack underflow"));
        }
        self.stack.truncate(self.stack.len() - n);
        Ok(())
    }
    fn pop1(&mut self) -> Result<VType> {
        self.stack
            .pop()
            .ok_or_else(|| Error::format("operand stack underflow"))
    }
    fn push(&mut self, t: VType) {
        self.stack.push(t);
        if t.is_wide() {
            self.stack.push(VType::Top);
        }
    }
    fn set_local(&mut self, i: usize, t: VType) {
        let n = i + t.slots() as usize;
        if self.locals.len() < n {
            self.locals.resize(n, VType::Top);
        }
        // Overwriting the second half of a wide value invalidates its first half. (Second halves
        // are always Top, so overwriting a first half needs nothing more.)
        if i > 0 && self.locals[i - 1].is_wide() {
            self.locals[i - 1] = VType::Top;
        }
        self.locals[i] = t;
        if t.is_wide() {
            self.locals[i + 1] = VType::Top;
        }
    }
    fn local(&self, i: usize) -> VType {
        self.locals.get(i).copied().unwrap_or(VType::Top)
    }
}

fn letter(c: u8) -> VType {
    match c {
        b'I' => VType::Integer,
        b'F' => VType::Float,
        b'J' => VType::Long,
        b'D' => VType::Double,
        _ => VType::Top,
    }
}

/// Executes one instruction of the original code on `s`. `this_class` is the internal name of
/// the method's class: `uninitializedThis` becomes that type after super()/this().
pub fn exec(
    s: &mut State,
    i: &Insn,
    code: &[u8],
    cp: &ConstantPool<'_>,
    this_class: &str,
    ctx: &mut dyn TypeCtx,
) -> Result<()> {
    let info = i.info();
    let o = i.opcode;
    match o {
        op::ILOAD..=op::DLOAD | op::ILOAD_0..=op::DLOAD_3 => {
            s.push(letter(info.pushes.as_bytes()[0]));
        }
        op::ALOAD | op::ALOAD_0..=op::ALOAD_3 => {
            let l = i.local(code).unwrap_or(0) as usize;
            s.push(s.local(l));
        }
        op::ISTORE..=op::ASTORE | op::ISTORE_0..=op::ASTORE_3 => {
            let l = i.local(code).unwrap_or(0) as usize;
            let sz = i.local_size() as usize;
            let t = s
                .stack
                .get(s.stack.len().wrapping_sub(sz))
                .copied()
                .ok_or_else(|| Error::format("operand stack underflow"))?;
            s.pop(sz)?;
            s.set_local(l, t);
        }
        op::IINC | op::NOP | op::RET => {}
        op::POP..=op::SWAP => {
            let pops = info.pops.as_bytes();
            let n = pops.len();
            if s.stack.len() < n {
                return Err(Error::format("operand stack underflow"));
            }
            let base = s.stack.len() - n;
            // pops are listed bottom..top; letter -> value
            let mut vals = [VType::Top; 4];
            for (k, &c) in pops.iter().enumerate() {
                vals[(c - b'a') as usize] = s.stack[base + k];
            }
            s.stack.truncate(base);
            for &c in info.pushes.as_bytes() {
                s.stack.push(vals[(c - b'a') as usize]);
            }
        }
        op::ACONST_NULL => s.push(VType::Null),
        op::LDC | op::LDC_W | op::LDC2_W => {
            let idx = i.cp_index(code).unwrap_or(0);
            let t = match cp.tag(idx) {
                Some(tag::INTEGER) => VType::Integer,
                Some(tag::FLOAT) => VType::Float,
                Some(tag::LONG) => VType::Long,
                Some(tag::DOUBLE) => VType::Double,
                Some(tag::STRING) => VType::Object(ctx.class_index("java/lang/String")?),
                Some(tag::CLASS) => VType::Object(ctx.class_index("java/lang/Class")?),
                Some(tag::METHOD_TYPE) => {
                    VType::Object(ctx.class_index("java/lang/invoke/MethodType")?)
                }
                Some(tag::METHOD_HANDLE) => {
                    VType::Object(ctx.class_index("java/lang/invoke/MethodHandle")?)
                }
                Some(tag::DYNAMIC) => vtype_of(&cp.dynamic(idx)?.2, ctx)?,
                _ => return Err(Error::format(format!("ldc of constant #{idx}"))),
            };
            s.push(t);
        }
        op::AALOAD => {
            s.pop(1)?;
            let a = s.pop1()?;
            let t = match a {
                VType::Object(c) => match ctx.class_name(c) {
                    Some(n) if n.starts_with("[L") && n.ends_with(';') => {
                        VType::Object(ctx.class_index(&n[2..n.len() - 1])?)
                    }
                    Some(n) if n.starts_with("[[") => VType::Object(ctx.class_index(&n[1..])?),
                    _ => VType::Object(ctx.class_index("java/lang/Object")?),
                },
                _ => VType::Null,
            };
            s.push(t);
        }
        op::GETSTATIC | op::GETFIELD => {
            let m = cp.member_ref(i.cp_index(code).unwrap_or(0))?;
            if o == op::GETFIELD {
                s.pop(1)?;
            }
            s.push(vtype_of(&m.desc, ctx)?);
        }
        op::PUTSTATIC | op::PUTFIELD => {
            let m = cp.member_ref(i.cp_index(code).unwrap_or(0))?;
            s.pop(desc::slots(&m.desc) as usize + (o == op::PUTFIELD) as usize)?;
        }
        op::INVOKEVIRTUAL..=op::INVOKEDYNAMIC => {
            let idx = i.cp_index(code).unwrap_or(0);
            let (name, d, owner) = if o == op::INVOKEDYNAMIC {
                let (_, n, d) = cp.dynamic(idx)?;
                (n, d, None)
            } else {
                let m = cp.member_ref(idx)?;
                (m.name, m.desc, Some(m.class))
            };
            let md = MethodDesc::parse(&d)?;
            s.pop(md.param_slots() as usize)?;
            if o != op::INVOKESTATIC && o != op::INVOKEDYNAMIC {
                let recv = s.pop1()?;
                if o == op::INVOKESPECIAL && name == "<init>" {
                    let init = match recv {
                        VType::UninitializedThis => VType::Object(ctx.class_index(this_class)?),
                        VType::Uninitialized(off) => {
                            let off = off as usize;
                            let class = if code.get(off) == Some(&op::NEW) && off + 2 < code.len() {
                                cp.class_name(crate::reader::be16(code, off + 1))?
                            } else {
                                owner.unwrap_or(std::borrow::Cow::Borrowed("java/lang/Object"))
                            };
                            VType::Object(ctx.class_index(&class)?)
                        }
                        _ => VType::Top,
                    };
                    if init != VType::Top {
                        for t in s.locals.iter_mut().chain(s.stack.iter_mut()) {
                            if *t == recv {
                                *t = init;
                            }
                        }
                    }
                }
            }
            if md.ret != "V" {
                s.push(vtype_of(md.ret, ctx)?);
            }
        }
        op::NEW => s.push(VType::Uninitialized(i.pc as u16)),
        op::NEWARRAY => {
            s.pop(1)?;
            let n = match i.immediate(code).unwrap_or(0) {
                4 => "[Z",
                5 => "[C",
                6 => "[F",
                7 => "[D",
                8 => "[B",
                9 => "[S",
                10 => "[I",
                _ => "[J",
            };
            s.push(VType::Object(ctx.class_index(n)?));
        }
        op::ANEWARRAY => {
            s.pop(1)?;
            let c = cp.class_name(i.cp_index(code).unwrap_or(0))?;
            let n = if c.starts_with('[') {
                format!("[{c}")
            } else {
                format!("[L{c};")
            };
            s.push(VType::Object(ctx.class_index(&n)?));
        }
        op::CHECKCAST => {
            s.pop(1)?;
            let c = cp.class_name(i.cp_index(code).unwrap_or(0))?;
            s.push(VType::Object(ctx.class_index(&c)?));
        }
        op::MULTIANEWARRAY => {
            s.pop(i.immediate(code).unwrap_or(0) as usize)?;
            let c = cp.class_name(i.cp_index(code).unwrap_or(0))?;
            s.push(VType::Object(ctx.class_index(&c)?));
        }
        op::JSR | op::JSR_W => s.push(VType::Top),
        _ => {
            // Fixed-effect opcodes: pop the letters, push typed results.
            let (p, _) = crate::opcodes::fixed_effect(o)
                .ok_or_else(|| Error::format(format!("unhandled opcode 0x{o:02x}")))?;
            s.pop(p as usize)?;
            for &c in info.pushes.as_bytes() {
                s.push(letter(c));
            }
        }
    }
    Ok(())
}

/// True when the instruction never falls through.
pub fn ends_block(i: &Insn) -> bool {
    use crate::opcodes::Flow;
    matches!(
        i.flow(),
        Flow::Goto | Flow::Switch | Flow::Return | Flow::Throw | Flow::Ret
    )
}
