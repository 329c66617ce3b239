//! The one opcode table. `for_each_opcode!` lists every opcode once (value, constant name,
//! mnemonic, operand layout, pops, pushes); decoding, encoding and stack effects are generated
//! from it. Stack letters: I int, J long (2 slots), F float, D double (2 slots), A reference,
//! lowercase letters = generic one-slot values (dup family permutations), `?` = computed from the
//! constant pool or locals (field/invoke descriptors, ldc, aload, new …).

/// Operand layout of an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    None,
    /// Signed byte immediate (bipush).
    I8,
    /// Signed short immediate (sipush).
    I16,
    /// Unsigned byte (newarray's atype).
    U8,
    /// One-byte constant-pool index (ldc).
    Cp8,
    /// Two-byte constant-pool index.
    Cp16,
    /// Local-variable index: one byte, or two after `wide`.
    Local,
    /// iinc: local index and signed constant (1+1 bytes, or 2+2 after `wide`).
    Iinc,
    /// 16-bit signed branch offset.
    Branch16,
    /// 32-bit signed branch offset.
    Branch32,
    TableSwitch,
    LookupSwitch,
    /// invokeinterface: cp index, count, 0.
    InvokeInterface,
    /// invokedynamic: cp index, 0, 0.
    InvokeDynamic,
    /// multianewarray: cp index, dimensions.
    MultiANewArray,
    /// The `wide` prefix.
    Wide,
}

/// Control-flow class of an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// Conditional branch: falls through or jumps.
    Cond,
    /// goto / goto_w: always jumps.
    Goto,
    /// jsr / jsr_w: calls a subroutine, which returns to the next instruction.
    Jsr,
    /// tableswitch / lookupswitch.
    Switch,
    /// *return: leaves the method.
    Return,
    /// athrow.
    Throw,
    /// ret.
    Ret,
}

#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    pub opcode: u8,
    pub mnemonic: &'static str,
    pub operands: Operands,
    pub flow: Flow,
    pub pops: &'static str,
    pub pushes: &'static str,
}

impl OpInfo {
    /// Stack slots consumed/produced, or None when they depend on operands (`?`).
    pub const fn fixed_effect(&self) -> Option<(u8, u8)> {
        match (slots(self.pops), slots(self.pushes)) {
            (Some(a), Some(b)) => Some((a, b)),
            _ => None,
        }
    }
}

/// Slot count of a stack-letter string; None if it contains `?`.
pub const fn slots(s: &str) -> Option<u8> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n = 0u8;
    while i < b.len() {
        match b[i] {
            b'?' => return None,
            b'J' | b'D' => n += 2,
            _ => n += 1,
        }
        i += 1;
    }
    Some(n)
}

macro_rules! for_each_opcode {
    ($m:ident) => {
        $m! {
            0x00 NOP nop None Next "" "";
            0x01 ACONST_NULL aconst_null None Next "" "?";
            0x02 ICONST_M1 iconst_m1 None Next "" "I";
            0x03 ICONST_0 iconst_0 None Next "" "I";
            0x04 ICONST_1 iconst_1 None Next "" "I";
            0x05 ICONST_2 iconst_2 None Next "" "I";
            0x06 ICONST_3 iconst_3 None Next "" "I";
            0x07 ICONST_4 iconst_4 None Next "" "I";
            0x08 ICONST_5 iconst_5 None Next "" "I";
            0x09 LCONST_0 lconst_0 None Next "" "J";
            0x0a LCONST_1 lconst_1 None Next "" "J";
            0x0b FCONST_0 fconst_0 None Next "" "F";
            0x0c FCONST_1 fconst_1 None Next "" "F";
            0x0d FCONST_2 fconst_2 None Next "" "F";
            0x0e DCONST_0 dconst_0 None Next "" "D";
            0x0f DCONST_1 dconst_1 None Next "" "D";
            0x10 BIPUSH bipush I8 Next "" "I";
            0x11 SIPUSH sipush I16 Next "" "I";
            0x12 LDC ldc Cp8 Next "" "?";
            0x13 LDC_W ldc_w Cp16 Next "" "?";
            0x14 LDC2_W ldc2_w Cp16 Next "" "?";
            0x15 ILOAD iload Local Next "" "I";
            0x16 LLOAD lload Local Next "" "J";
            0x17 FLOAD fload Local Next "" "F";
            0x18 DLOAD dload Local Next "" "D";
            0x19 ALOAD aload Local Next "" "?";
            0x1a ILOAD_0 iload_0 None Next "" "I";
            0x1b ILOAD_1 iload_1 None Next "" "I";
            0x1c ILOAD_2 iload_2 None Next "" "I";
            0x1d ILOAD_3 iload_3 None Next "" "I";
            0x1e LLOAD_0 lload_0 None Next "" "J";
            0x1f LLOAD_1 lload_1 None Next "" "J";
            0x20 LLOAD_2 lload_2 None Next "" "J";
            0x21 LLOAD_3 lload_3 None Next "" "J";
            0x22 FLOAD_0 fload_0 None Next "" "F";
            0x23 FLOAD_1 fload_1 None Next "" "F";
            0x24 FLOAD_2 fload_2 None Next "" "F";
            0x25 FLOAD_3 fload_3 None Next "" "F";
            0x26 DLOAD_0 dload_0 None Next "" "D";
            0x27 DLOAD_1 dload_1 None Next "" "D";
            0x28 DLOAD_2 dload_2 None Next "" "D";
            0x29 DLOAD_3 dload_3 None Next "" "D";
            0x2a ALOAD_0 aload_0 None Next "" "?";
            0x2b ALOAD_1 aload_1 None Next "" "?";
            0x2c ALOAD_2 aload_2 None Next "" "?";
            0x2d ALOAD_3 aload_3 None Next "" "?";
            0x2e IALOAD iaload None Next "AI" "I";
            0x2f LALOAD laload None Next "AI" "J";
            0x30 FALOAD faload None Next "AI" "F";
            0x31 DALOAD daload None Next "AI" "D";
            0x32 AALOAD aaload None Next "AI" "?";
            0x33 BALOAD baload None Next "AI" "I";
            0x34 CALOAD caload None Next "AI" "I";
            0x35 SALOAD saload None Next "AI" "I";
            0x36 ISTORE istore Local Next "I" "";
            0x37 LSTORE lstore Local Next "J" "";
            0x38 FSTORE fstore Local Next "F" "";
            0x39 DSTORE dstore Local Next "D" "";
            0x3a ASTORE astore Local Next "a" "";
            0x3b ISTORE_0 istore_0 None Next "I" "";
            0x3c ISTORE_1 istore_1 None Next "I" "";
            0x3d ISTORE_2 istore_2 None Next "I" "";
            0x3e ISTORE_3 istore_3 None Next "I" "";
            0x3f LSTORE_0 lstore_0 None Next "J" "";
            0x40 LSTORE_1 lstore_1 None Next "J" "";
            0x41 LSTORE_2 lstore_2 None Next "J" "";
            0x42 LSTORE_3 lstore_3 None Next "J" "";
            0x43 FSTORE_0 fstore_0 None Next "F" "";
            0x44 FSTORE_1 fstore_1 None Next "F" "";
            0x45 FSTORE_2 fstore_2 None Next "F" "";
            0x46 FSTORE_3 fstore_3 None Next "F" "";
            0x47 DSTORE_0 dstore_0 None Next "D" "";
            0x48 DSTORE_1 dstore_1 None Next "D" "";
            0x49 DSTORE_2 dstore_2 None Next "D" "";
            0x4a DSTORE_3 dstore_3 None Next "D" "";
            0x4b ASTORE_0 astore_0 None Next "a" "";
            0x4c ASTORE_1 astore_1 None Next "a" "";
            0x4d ASTORE_2 astore_2 None Next "a" "";
            0x4e ASTORE_3 astore_3 None Next "a" "";
            0x4f IASTORE iastore None Next "AII" "";
            0x50 LASTORE lastore None Next "AIJ" "";
            0x51 FASTORE fastore None Next "AIF" "";
            0x52 DASTORE dastore None Next "AID" "";
            0x53 AASTORE aastore None Next "AIA" "";
            0x54 BASTORE bastore None Next "AII" "";
            0x55 CASTORE castore None Next "AII" "";
            0x56 SASTORE sastore None Next "AII" "";
            0x57 POP pop None Next "a" "";
            0x58 POP2 pop2 None Next "ba" "";
            0x59 DUP dup None Next "a" "aa";
            0x5a DUP_X1 dup_x1 None Next "ba" "aba";
            0x5b DUP_X2 dup_x2 None Next "cba" "acba";
            0x5c DUP2 dup2 None Next "ba" "baba";
            0x5d DUP2_X1 dup2_x1 None Next "cba" "bacba";
            0x5e DUP2_X2 dup2_x2 None Next "dcba" "badcba";
            0x5f SWAP swap None Next "ba" "ab";
            0x60 IADD iadd None Next "II" "I";
            0x61 LADD ladd None Next "JJ" "J";
            0x62 FADD fadd None Next "FF" "F";
            0x63 DADD dadd None Next "DD" "D";
            0x64 ISUB isub None Next "II" "I";
            0x65 LSUB lsub None Next "JJ" "J";
            0x66 FSUB fsub None Next "FF" "F";
            0x67 DSUB dsub None Next "DD" "D";
            0x68 IMUL imul None Next "II" "I";
            0x69 LMUL lmul None Next "JJ" "J";
            0x6a FMUL fmul None Next "FF" "F";
            0x6b DMUL dmul None Next "DD" "D";
            0x6c IDIV idiv None Next "II" "I";
            0x6d LDIV ldiv None Next "JJ" "J";
            0x6e FDIV fdiv None Next "FF" "F";
            0x6f DDIV ddiv None Next "DD" "D";
            0x70 IREM irem None Next "II" "I";
            0x71 LREM lrem None Next "JJ" "J";
            0x72 FREM frem None Next "FF" "F";
            0x73 DREM drem None Next "DD" "D";
            0x74 INEG ineg None Next "I" "I";
            0x75 LNEG lneg None Next "J" "J";
            0x76 FNEG fneg None Next "F" "F";
            0x77 DNEG dneg None Next "D" "D";
            0x78 ISHL ishl None Next "II" "I";
            0x79 LSHL lshl None Next "JI" "J";
            0x7a ISHR ishr None Next "II" "I";
            0x7b LSHR lshr None Next "JI" "J";
            0x7c IUSHR iushr None Next "II" "I";
            0x7d LUSHR lushr None Next "JI" "J";
            0x7e IAND iand None Next "II" "I";
            0x7f LAND land None Next "JJ" "J";
            0x80 IOR ior None Next "II" "I";
            0x81 LOR lor None Next "JJ" "J";
            0x82 IXOR ixor None Next "II" "I";
            0x83 LXOR lxor None Next "JJ" "J";
            0x84 IINC iinc Iinc Next "" "";
            0x85 I2L i2l None Next "I" "J";
            0x86 I2F i2f None Next "I" "F";
            0x87 I2D i2d None Next "I" "D";
            0x88 L2I l2i None Next "J" "I";
            0x89 L2F l2f None Next "J" "F";
            0x8a L2D l2d None Next "J" "D";
            0x8b F2I f2i None Next "F" "I";
            0x8c F2L f2l None Next "F" "J";
            0x8d F2D f2d None Next "F" "D";
            0x8e D2I d2i None Next "D" "I";
            0x8f D2L d2l None Next "D" "J";
            0x90 D2F d2f None Next "D" "F";
            0x91 I2B i2b None Next "I" "I";
            0x92 I2C i2c None Next "I" "I";
            0x93 I2S i2s None Next "I" "I";
            0x94 LCMP lcmp None Next "JJ" "I";
            0x95 FCMPL fcmpl None Next "FF" "I";
            0x96 FCMPG fcmpg None Next "FF" "I";
            0x97 DCMPL dcmpl None Next "DD" "I";
            0x98 DCMPG dcmpg None Next "DD" "I";
            0x99 IFEQ ifeq Branch16 Cond "I" "";
            0x9a IFNE ifne Branch16 Cond "I" "";
            0x9b IFLT iflt Branch16 Cond "I" "";
            0x9c IFGE ifge Branch16 Cond "I" "";
            0x9d IFGT ifgt Branch16 Cond "I" "";
            0x9e IFLE ifle Branch16 Cond "I" "";
            0x9f IF_ICMPEQ if_icmpeq Branch16 Cond "II" "";
            0xa0 IF_ICMPNE if_icmpne Branch16 Cond "II" "";
            0xa1 IF_ICMPLT if_icmplt Branch16 Cond "II" "";
            0xa2 IF_ICMPGE if_icmpge Branch16 Cond "II" "";
            0xa3 IF_ICMPGT if_icmpgt Branch16 Cond "II" "";
            0xa4 IF_ICMPLE if_icmple Branch16 Cond "II" "";
            0xa5 IF_ACMPEQ if_acmpeq Branch16 Cond "AA" "";
            0xa6 IF_ACMPNE if_acmpne Branch16 Cond "AA" "";
            0xa7 GOTO goto Branch16 Goto "" "";
            0xa8 JSR jsr Branch16 Jsr "" "?";
            0xa9 RET ret Local Ret "" "";
            0xaa TABLESWITCH tableswitch TableSwitch Switch "I" "";
            0xab LOOKUPSWITCH lookupswitch LookupSwitch Switch "I" "";
            0xac IRETURN ireturn None Return "I" "";
            0xad LRETURN lreturn None Return "J" "";
            0xae FRETURN freturn None Return "F" "";
            0xaf DRETURN dreturn None Return "D" "";
            0xb0 ARETURN areturn None Return "A" "";
            0xb1 RETURN return None Return "" "";
            0xb2 GETSTATIC getstatic Cp16 Next "" "?";
            0xb3 PUTSTATIC putstatic Cp16 Next "?" "";
            0xb4 GETFIELD getfield Cp16 Next "A" "?";
            0xb5 PUTFIELD putfield Cp16 Next "?" "";
            0xb6 INVOKEVIRTUAL invokevirtual Cp16 Next "?" "?";
            0xb7 INVOKESPECIAL invokespecial Cp16 Next "?" "?";
            0xb8 INVOKESTATIC invokestatic Cp16 Next "?" "?";
            0xb9 INVOKEINTERFACE invokeinterface InvokeInterface Next "?" "?";
            0xba INVOKEDYNAMIC invokedynamic InvokeDynamic Next "?" "?";
            0xbb NEW new Cp16 Next "" "?";
            0xbc NEWARRAY newarray U8 Next "I" "?";
            0xbd ANEWARRAY anewarray Cp16 Next "I" "?";
            0xbe ARRAYLENGTH arraylength None Next "A" "I";
            0xbf ATHROW athrow None Throw "A" "";
            0xc0 CHECKCAST checkcast Cp16 Next "A" "?";
            0xc1 INSTANCEOF instanceof Cp16 Next "A" "I";
            0xc2 MONITORENTER monitorenter None Next "A" "";
            0xc3 MONITOREXIT monitorexit None Next "A" "";
            0xc4 WIDE wide Wide Next "" "";
            0xc5 MULTIANEWARRAY multianewarray MultiANewArray Next "?" "?";
            0xc6 IFNULL ifnull Branch16 Cond "A" "";
            0xc7 IFNONNULL ifnonnull Branch16 Cond "A" "";
            0xc8 GOTO_W goto_w Branch32 Goto "" "";
            0xc9 JSR_W jsr_w Branch32 Jsr "" "?";
        }
    };
}

macro_rules! gen_consts {
    ($($code:literal $name:ident $mn:ident $ops:ident $flow:ident $pops:literal $pushes:literal;)*) => {
        /// Opcode values.
        pub mod op {
            $(pub const $name: u8 = $code;)*
        }
        const TABLE: [Option<OpInfo>; 256] = {
            let mut t: [Option<OpInfo>; 256] = [None; 256];
            $(t[$code] = Some(OpInfo {
                opcode: $code,
                mnemonic: stringify!($mn),
                operands: Operands::$ops,
                flow: Flow::$flow,
                pops: $pops,
                pushes: $pushes,
            });)*
            t
        };
    };
}
for_each_opcode!(gen_consts);

/// `fixed_effect` of every table entry, computed at compile time (hot path of stack-depth
/// analysis: the stack letters are not re-read per instruction).
const FIXED: [Option<(u8, u8)>; 256] = {
    let mut t: [Option<(u8, u8)>; 256] = [None; 256];
    let mut i = 0;
    while i < 256 {
        if let Some(info) = &TABLE[i] {
            t[i] = info.fixed_effect();
        }
        i += 1;
    }
    t
};

/// Operand layout and control flow of every opcode in one byte-sized table each (hot loops
/// read these instead of the full [`OpInfo`]); undefined opcodes read as (None, Next).
const OPERANDS: [Operands; 256] = {
    let mut t = [Operands::None; 256];
    let mut i = 0;
    while i < 256 {
        if let Some(info) = &TABLE[i] {
            t[i] = info.operands;
        }
        i += 1;
    }
    t
};
pub(crate) const FLOW: [Flow; 256] = {
    let mut t = [Flow::Next; 256];
    let mut i = 0;
    while i < 256 {
        if let Some(info) = &TABLE[i] {
            t[i] = info.flow;
        }
        i += 1;
    }
    t
};

/// Instruction length by opcode when it is fixed (no `wide` prefix, not a switch); 0 for
/// `wide`, the switches and undefined opcodes.
const LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        if TABLE[i].is_some() {
            t[i] = match OPERANDS[i] {
                Operands::None => 1,
                Operands::I8 | Operands::U8 | Operands::Cp8 | Operands::Local => 2,
                Operands::I16 | Operands::Cp16 | Operands::Iinc | Operands::Branch16 => 3,
                Operands::MultiANewArray => 4,
                Operands::Branch32 | Operands::InvokeInterface | Operands::InvokeDynamic => 5,
                Operands::Wide | Operands::TableSwitch | Operands::LookupSwitch => 0,
            };
        }
        i += 1;
    }
    t
};

/// The length of an instruction with this opcode when it does not depend on its operands
/// (0 for `wide`, tableswitch, lookupswitch and undefined opcodes).
#[inline]
pub const fn fixed_len(opcode: u8) -> u8 {
    LEN[opcode as usize]
}

/// The operand layout of `opcode` (`Operands::None` when undefined).
#[inline]
pub fn operands(opcode: u8) -> Operands {
    OPERANDS[opcode as usize]
}

/// The control flow of `opcode` (`Flow::Next` when undefined).
#[inline]
pub fn flow(opcode: u8) -> Flow {
    FLOW[opcode as usize]
}

/// Stack slots `opcode` pops and pushes when they do not depend on operands (the table
/// entry's [`OpInfo::fixed_effect`]); None for computed effects and undefined opcodes.
#[inline]
pub const fn fixed_effect(opcode: u8) -> Option<(u8, u8)> {
    FIXED[opcode as usize]
}

/// The table entry for an opcode, or None for an undefined opcode.
#[inline]
pub fn info(opcode: u8) -> Option<&'static OpInfo> {
    TABLE[opcode as usize].as_ref()
}

/// Mnemonic for display; `op_0xNN` for undefined opcodes.
pub fn mnemonic(opcode: u8) -> &'static str {
    info(opcode).map_or("(undefined)", |i| i.mnemonic)
}

/// The conditional branch with the opposite condition (for widening `if` over `goto_w`).
pub fn invert_cond(opcode: u8) -> Option<u8> {
    Some(match opcode {
        op::IFEQ..=op::IF_ACMPNE => {
            // Pairs (eq,ne), (lt,ge), (gt,le) are adjacent: odd/even within the range.
            if (opcode - op::IFEQ).is_multiple_of(2) {
                opcode + 1
            } else {
                opcode - 1
            }
        }
        op::IFNULL => op::IFNONNULL,
        op::IFNONNULL => op::IFNULL,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn table_is_dense_and_consistent() {
        for c in 0u8..=0xc9 {
            let i = info(c).unwrap_or_else(|| panic!("opcode 0x{c:02x} missing"));
            assert_eq!(i.opcode, c);
        }
        for c in 0xcau8..=0xff {
            assert!(info(c).is_none());
        }
        assert_eq!(invert_cond(op::IFEQ), Some(op::IFNE));
        assert_eq!(invert_cond(op::IFLT), Some(op::IFGE));
        assert_eq!(invert_cond(op::IFGT), Some(op::IFLE));
        assert_eq!(invert_cond(op::IF_ICMPLE), Some(op::IF_ICMPGT));
        assert_eq!(invert_cond(op::IF_ACMPEQ), Some(op::IF_ACMPNE));
        assert_eq!(invert_cond(op::IFNULL), Some(op::IFNONNULL));
        assert_eq!(
            info(op::DUP2_X2).and_then(|i| i.fixed_effect()),
            Some((4, 6))
        );
        assert_eq!(info(op::LADD).and_then(|i| i.fixed_effect()), Some((4, 2)));
        for c in 0u8..=0xff {
            assert_eq!(fixed_effect(c), info(c).and_then(|i| i.fixed_effect()));
            if let Some(i) = info(c) {
                assert_eq!((operands(c), flow(c)), (i.operands, i.flow));
            }
        }
    }
}
