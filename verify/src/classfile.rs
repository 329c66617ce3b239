//! A small checked class-file reader. Every read is bounds-checked; nothing here panics on any input.
//! It borrows the input bytes and keeps constant-pool indices raw (the verifier needs the kinds).

use std::fmt;

/// A format error with a short description (becomes a `VerifyError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub type Res<T> = Result<T, FormatError>;

pub fn ferr<T>(msg: impl Into<String>) -> Res<T> {
    Err(FormatError(msg.into()))
}

/// The name of a constant pool tag (JVMS 4.4), None for an unknown one.
fn cp_kind(tag: u8) -> Option<&'static str> {
    Some(match tag {
        1 => "Utf8",
        3 => "Integer",
        4 => "Float",
        5 => "Long",
        6 => "Double",
        7 => "Class",
        8 => "String",
        9 => "Fieldref",
        10 => "Methodref",
        11 => "InterfaceMethodref",
        12 => "NameAndType",
        15 => "MethodHandle",
        16 => "MethodType",
        17 => "Dynamic",
        18 => "InvokeDynamic",
        19 => "Module",
        20 => "Package",
        _ => return None,
    })
}

/// Checked big-endian cursor over a byte slice.
#[derive(Clone, Copy)]
pub struct Reader<'a> {
    pub data: &'a [u8],
    pub pos: usize,
    /// What `data` is, for a truncation error: the class file (offsets are the file's), or an
    /// attribute (offsets in it).
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader of a whole class file.
    pub fn new(data: &'a [u8]) -> Self {
        Reader {
            data,
            pos: 0,
            what: "class file",
        }
    }
    /// A reader of a part of a class file (an attribute's bytes): `what` names it.
    pub fn within(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, pos: 0, what }
    }
    /// The error for a read of `need` bytes past the end: `truncated class file: need 3 more
    /// bytes at offset 0x1e9`.
    fn truncated<T>(&self, need: usize) -> Res<T> {
        let more = need.saturating_sub(self.remaining());
        ferr(format!(
            "truncated {}: need {more} more byte{} at offset {:#x}{}",
            self.what,
            if more == 1 { "" } else { "s" },
            self.pos,
            if self.what == "class file" {
                ""
            } else {
                " of it"
            }
        ))
    }
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }
    pub fn u1(&mut self) -> Res<u8> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => self.truncated(1),
        }
    }
    pub fn u2(&mut self) -> Res<u16> {
        let b = self.bytes(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub fn u4(&mut self) -> Res<u32> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn bytes(&mut self, n: usize) -> Res<&'a [u8]> {
        let end = self.pos.checked_add(n);
        match end.and_then(|e| self.data.get(self.pos..e)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => self.truncated(n),
        }
    }
}

/// Read a big-endian value from `code` at `pc` without panicking.
pub fn be_u2(code: &[u8], pc: usize) -> Option<u16> {
    let b = code.get(pc..pc.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}
pub fn be_i2(code: &[u8], pc: usize) -> Option<i16> {
    be_u2(code, pc).map(|v| v as i16)
}
pub fn be_i4(code: &[u8], pc: usize) -> Option<i32> {
    let b = code.get(pc..pc.checked_add(4)?)?;
    Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cp<'a> {
    Unusable,
    Utf8(&'a [u8]),
    Integer,
    Float,
    Long,
    Double,
    Class(u16),
    String(u16),
    Fieldref(u16, u16),
    Methodref(u16, u16),
    InterfaceMethodref(u16, u16),
    NameAndType(u16, u16),
    MethodHandle(u8, u16),
    MethodType(u16),
    Dynamic(u16, u16),
    InvokeDynamic(u16, u16),
    Module(u16),
    Package(u16),
}

pub struct ConstantPool<'a> {
    pub entries: Vec<Cp<'a>>,
}

impl<'a> ConstantPool<'a> {
    pub fn get(&self, i: u16) -> Option<&Cp<'a>> {
        match self.entries.get(i as usize) {
            Some(Cp::Unusable) | None => None,
            Some(e) => Some(e),
        }
    }
    pub fn utf8(&self, i: u16) -> Res<&'a [u8]> {
        match self.get(i) {
            Some(Cp::Utf8(s)) => Ok(s),
            _ => ferr(format!("constant pool #{i} is not Utf8")),
        }
    }
    pub fn class_name(&self, i: u16) -> Res<&'a [u8]> {
        match self.get(i) {
            Some(Cp::Class(n)) => self.utf8(*n),
            _ => ferr(format!("constant pool #{i} is not Class")),
        }
    }
    pub fn name_and_type(&self, i: u16) -> Res<(&'a [u8], &'a [u8])> {
        match self.get(i) {
            Some(Cp::NameAndType(n, d)) => Ok((self.utf8(*n)?, self.utf8(*d)?)),
            _ => ferr(format!("constant pool #{i} is not NameAndType")),
        }
    }
    /// (class, name, descriptor, is_interface_ref) of a Fieldref/Methodref/InterfaceMethodref.
    pub fn member_ref(&self, i: u16) -> Res<(u8, &'a [u8], &'a [u8], &'a [u8])> {
        let (tag, c, nt) = match self.get(i) {
            Some(Cp::Fieldref(c, nt)) => (9, *c, *nt),
            Some(Cp::Methodref(c, nt)) => (10, *c, *nt),
            Some(Cp::InterfaceMethodref(c, nt)) => (11, *c, *nt),
            _ => return ferr(format!("constant pool #{i} is not a member reference")),
        };
        let cls = self.class_name(c)?;
        let (n, d) = self.name_and_type(nt)?;
        Ok((tag, cls, n, d))
    }

    pub(crate) fn parse(r: &mut Reader<'a>) -> Res<Self> {
        let count = r.u2()? as usize;
        if count == 0 {
            return ferr("constant pool count is 0");
        }
        let mut entries = Vec::with_capacity(count);
        entries.push(Cp::Unusable);
        while entries.len() < count {
            let at = entries.len();
            // a truncation inside an entry names it, as bci instrument does
            let named = |e: FormatError, tag: Option<u8>| match e
                .0
                .strip_prefix("truncated class file: ")
            {
                Some(rest) => FormatError(format!(
                    "truncated class file: constant pool: constant #{at}{}: {rest}",
                    tag.and_then(cp_kind)
                        .map_or(String::new(), |k| format!(" ({k})"))
                )),
                None => e,
            };
            let tag = r.u1().map_err(|e| named(e, None))?;
            let e = (|| -> Res<Cp<'a>> {
                Ok(match tag {
                    1 => {
                        let n = r.u2()? as usize;
                        let s = r.bytes(n)?;
                        if !valid_mutf8(s) {
                            return ferr(format!("illegal UTF8 string in constant pool #{at}"));
                        }
                        Cp::Utf8(s)
                    }
                    3 => {
                        r.u4()?;
                        Cp::Integer
                    }
                    4 => {
                        r.u4()?;
                        Cp::Float
                    }
                    5 | 6 => {
                        r.u4()?;
                        r.u4()?;
                        if at + 1 >= count {
                            return ferr("long/double constant at end of constant pool");
                        }
                        if tag == 5 {
                            Cp::Long
                        } else {
                            Cp::Double
                        }
                    }
                    7 => Cp::Class(r.u2()?),
                    8 => Cp::String(r.u2()?),
                    9 => Cp::Fieldref(r.u2()?, r.u2()?),
                    10 => Cp::Methodref(r.u2()?, r.u2()?),
                    11 => Cp::InterfaceMethodref(r.u2()?, r.u2()?),
                    12 => Cp::NameAndType(r.u2()?, r.u2()?),
                    15 => Cp::MethodHandle(r.u1()?, r.u2()?),
                    16 => Cp::MethodType(r.u2()?),
                    17 => Cp::Dynamic(r.u2()?, r.u2()?),
                    18 => Cp::InvokeDynamic(r.u2()?, r.u2()?),
                    19 => Cp::Module(r.u2()?),
                    20 => Cp::Package(r.u2()?),
                    t => return ferr(format!("unknown constant pool tag {t} at #{at}")),
                })
            })()
            .map_err(|e| named(e, Some(tag)))?;
            if matches!(e, Cp::Long | Cp::Double) {
                // the second slot of a long or double
                entries.push(e);
                entries.push(Cp::Unusable);
                continue;
            }
            entries.push(e);
        }
        let cp = ConstantPool { entries };
        cp.check_refs()?;
        Ok(cp)
    }

    /// Every cross reference inside the pool points at an entry of the right kind.
    fn check_refs(&self) -> Res<()> {
        for (i, e) in self.entries.iter().enumerate() {
            let bad = |what: &str| ferr(format!("constant pool #{i}: bad {what} reference"));
            let is_utf8 = |j: u16| matches!(self.get(j), Some(Cp::Utf8(_)));
            let is_class = |j: u16| matches!(self.get(j), Some(Cp::Class(_)));
            let is_nt = |j: u16| matches!(self.get(j), Some(Cp::NameAndType(..)));
            match *e {
                Cp::Class(n)
                | Cp::String(n)
                | Cp::MethodType(n)
                | Cp::Module(n)
                | Cp::Package(n) => {
                    if !is_utf8(n) {
                        return bad("Utf8");
                    }
                }
                Cp::Fieldref(c, nt) | Cp::Methodref(c, nt) | Cp::InterfaceMethodref(c, nt) => {
                    if !is_class(c) || !is_nt(nt) {
                        return bad("member");
                    }
                    let (name, desc) = self.name_and_type(nt)?;
                    let ok = if matches!(e, Cp::Fieldref(..)) {
                        valid_field_desc(desc)
                    } else {
                        valid_method_desc(desc).is_some()
                            && (name.first() != Some(&b'<')
                                || name == b"<init>"
                                || name == b"<clinit>")
                    };
                    if !ok {
                        return bad("descriptor in member");
                    }
                }
                Cp::NameAndType(n, d) => {
                    if !is_utf8(n) || !is_utf8(d) {
                        return bad("NameAndType");
                    }
                }
                Cp::MethodHandle(kind, r) => {
                    let ok = match kind {
                        1..=4 => matches!(self.get(r), Some(Cp::Fieldref(..))),
                        5 | 8 => matches!(self.get(r), Some(Cp::Methodref(..))),
                        6 | 7 => matches!(
                            self.get(r),
                            Some(Cp::Methodref(..) | Cp::InterfaceMethodref(..))
                        ),
                        9 => matches!(self.get(r), Some(Cp::InterfaceMethodref(..))),
                        _ => false,
                    };
                    if !ok {
                        return bad("MethodHandle");
                    }
                }
                Cp::Dynamic(_, nt) | Cp::InvokeDynamic(_, nt) => {
                    if !is_nt(nt) {
                        return bad("dynamic NameAndType");
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Modified UTF-8 validity (no NUL bytes, no 4-byte forms, well-formed continuations).
pub fn valid_mutf8(s: &[u8]) -> bool {
    if s.is_ascii() {
        return !s.contains(&0);
    }
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == 0 || b >= 0xf0 || (0x80..0xc0).contains(&b) {
            return false;
        }
        let n = if b < 0x80 {
            1
        } else if b < 0xe0 {
            2
        } else {
            3
        };
        for k in 1..n {
            match s.get(i + k) {
                Some(c) if (0x80..0xc0).contains(c) => {}
                _ => return false,
            }
        }
        i += n;
    }
    true
}

/// Decode modified UTF-8 into a String (lossy for surrogates).
pub fn mutf8_to_string(s: &[u8]) -> String {
    if let Ok(v) = std::str::from_utf8(s) {
        return v.to_string();
    }
    let mut out = String::new();
    let mut units: Vec<u16> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let b = s[i] as u32;
        let (c, n) = if b < 0x80 {
            (b, 1)
        } else if b < 0xe0 {
            (
                ((b & 0x1f) << 6) | (*s.get(i + 1).unwrap_or(&0) as u32 & 0x3f),
                2,
            )
        } else {
            (
                ((b & 0x0f) << 12)
                    | ((*s.get(i + 1).unwrap_or(&0) as u32 & 0x3f) << 6)
                    | (*s.get(i + 2).unwrap_or(&0) as u32 & 0x3f),
                3,
            )
        };
        units.push(c as u16);
        i += n;
    }
    out.push_str(&String::from_utf16_lossy(&units));
    out
}

fn field_type_len(d: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    let mut dims = 0;
    while d.get(i) == Some(&b'[') {
        i += 1;
        dims += 1;
    }
    if dims > 255 {
        return None;
    }
    match d.get(i)? {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' => Some(i + 1 - start),
        b'L' => {
            let rest = d.get(i + 1..)?;
            let semi = rest.iter().position(|&c| c == b';')?;
            let name = &rest[..semi];
            if !valid_class_name(name) {
                return None;
            }
            Some(i + 2 + semi - start)
        }
        _ => None,
    }
}

pub fn valid_class_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name
            .split(|&c| c == b'/')
            .all(|seg| !seg.is_empty() && !seg.iter().any(|&c| matches!(c, b'.' | b';' | b'[')))
}

pub fn valid_field_desc(d: &[u8]) -> bool {
    field_type_len(d, 0) == Some(d.len())
}

/// Returns (args slot size) if valid.
pub fn valid_method_desc(d: &[u8]) -> Option<usize> {
    if d.first() != Some(&b'(') {
        return None;
    }
    let mut i = 1;
    let mut slots = 0usize;
    while d.get(i) != Some(&b')') {
        let n = field_type_len(d, i)?;
        slots += if n == 1 && matches!(d[i], b'J' | b'D') {
            2
        } else {
            1
        };
        i += n;
    }
    i += 1;
    if d.get(i) == Some(&b'V') && i + 1 == d.len() {
        return Some(slots);
    }
    if field_type_len(d, i)? + i == d.len() {
        Some(slots)
    } else {
        None
    }
}

/// Like [`split_method_desc`], appending the argument descriptors to `args`; returns the return descriptor.
pub fn split_method_desc_into<'d>(d: &'d [u8], args: &mut Vec<&'d [u8]>) -> Option<&'d [u8]> {
    if d.first() != Some(&b'(') {
        return None;
    }
    let mut i = 1;
    while d.get(i) != Some(&b')') {
        let n = field_type_len(d, i)?;
        args.push(&d[i..i + n]);
        i += n;
    }
    let ret = d.get(i + 1..)?;
    if ret != b"V" && field_type_len(ret, 0) != Some(ret.len()) {
        return None;
    }
    Some(ret)
}

/// Split a valid method descriptor into argument descriptors and return descriptor.
pub fn split_method_desc(d: &[u8]) -> Option<(Vec<&[u8]>, &[u8])> {
    if d.first() != Some(&b'(') {
        return None;
    }
    let mut i = 1;
    let mut args = Vec::new();
    while d.get(i) != Some(&b')') {
        let n = field_type_len(d, i)?;
        args.push(&d[i..i + n]);
        i += n;
    }
    let ret = d.get(i + 1..)?;
    if ret != b"V" && field_type_len(ret, 0) != Some(ret.len()) {
        return None;
    }
    Some((args, ret))
}

pub struct Attribute<'a> {
    pub name: &'a [u8],
    pub data: &'a [u8],
}

pub struct Member<'a> {
    pub access: u16,
    pub name: &'a [u8],
    pub desc: &'a [u8],
    pub attributes: Vec<Attribute<'a>>,
}

pub struct ExceptionEntry {
    pub start: u16,
    pub end: u16,
    pub handler: u16,
    pub catch_type: u16,
}

pub struct Code<'a> {
    pub max_stack: u16,
    pub max_locals: u16,
    pub code: &'a [u8],
    pub exceptions: Vec<ExceptionEntry>,
    pub attributes: Vec<Attribute<'a>>,
}

pub struct ClassFile<'a> {
    pub minor: u16,
    pub major: u16,
    pub cp: ConstantPool<'a>,
    pub access: u16,
    pub this_class: &'a [u8],
    pub super_class: Option<&'a [u8]>,
    pub interfaces: Vec<&'a [u8]>,
    pub fields: Vec<Member<'a>>,
    pub methods: Vec<Member<'a>>,
    pub attributes: Vec<Attribute<'a>>,
}

pub const ACC_STATIC: u16 = 0x0008;
pub const ACC_PROTECTED: u16 = 0x0004;
pub const ACC_PRIVATE: u16 = 0x0002;
pub const ACC_NATIVE: u16 = 0x0100;
pub const ACC_INTERFACE: u16 = 0x0200;
pub const ACC_ABSTRACT: u16 = 0x0400;
pub const ACC_MODULE: u16 = 0x8000;

fn parse_attributes<'a>(r: &mut Reader<'a>, cp: &ConstantPool<'a>) -> Res<Vec<Attribute<'a>>> {
    let n = r.u2()?;
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let name = cp.utf8(r.u2()?)?;
        let len = r.u4()? as usize;
        let data = r.bytes(len)?;
        v.push(Attribute { name, data });
    }
    Ok(v)
}

fn parse_members<'a>(
    r: &mut Reader<'a>,
    cp: &ConstantPool<'a>,
    methods: bool,
) -> Res<Vec<Member<'a>>> {
    let n = r.u2()?;
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let access = r.u2()?;
        let name = cp.utf8(r.u2()?)?;
        let desc = cp.utf8(r.u2()?)?;
        let ok = if methods {
            valid_method_desc(desc).is_some()
        } else {
            valid_field_desc(desc)
        };
        if !ok {
            return ferr(format!(
                "invalid descriptor {} for {}",
                mutf8_to_string(desc),
                mutf8_to_string(name)
            ));
        }
        let attributes = parse_attributes(r, cp)?;
        v.push(Member {
            access,
            name,
            desc,
            attributes,
        });
    }
    Ok(v)
}

impl<'a> ClassFile<'a> {
    pub fn parse(bytes: &'a [u8]) -> Res<Self> {
        let mut r = Reader::new(bytes);
        if r.u4()? != 0xCAFE_BABE {
            return ferr("bad magic");
        }
        let minor = r.u2()?;
        let major = r.u2()?;
        if !(45..=69).contains(&major) {
            return ferr(format!("unsupported class file version {major}.{minor}"));
        }
        let cp = ConstantPool::parse(&mut r)?;
        let access = r.u2()?;
        let this_class = cp.class_name(r.u2()?)?;
        let sup = r.u2()?;
        let super_class = if sup == 0 {
            None
        } else {
            Some(cp.class_name(sup)?)
        };
        if super_class.is_none() && this_class != b"java/lang/Object" && access & ACC_MODULE == 0 {
            return ferr("invalid superclass index 0");
        }
        let ni = r.u2()?;
        let mut interfaces = Vec::with_capacity(ni as usize);
        for _ in 0..ni {
            interfaces.push(cp.class_name(r.u2()?)?);
        }
        let fields = parse_members(&mut r, &cp, false)?;
        let methods = parse_members(&mut r, &cp, true)?;
        let attributes = parse_attributes(&mut r, &cp)?;
        if r.remaining() != 0 {
            return ferr("extra bytes at the end of class file");
        }
        Ok(ClassFile {
            minor,
            major,
            cp,
            access,
            this_class,
            super_class,
            interfaces,
            fields,
            methods,
            attributes,
        })
    }
}

impl<'a> Code<'a> {
    pub fn parse(data: &'a [u8], cp: &ConstantPool<'a>) -> Res<Self> {
        let mut r = Reader::within(data, "Code attribute");
        let max_stack = r.u2()?;
        let max_locals = r.u2()?;
        let len = r.u4()? as usize;
        if len == 0 || len > 65535 {
            return ferr(format!("invalid code length {len}"));
        }
        let code = r.bytes(len)?;
        let n = r.u2()?;
        let mut exceptions = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let e = ExceptionEntry {
                start: r.u2()?,
                end: r.u2()?,
                handler: r.u2()?,
                catch_type: r.u2()?,
            };
            if e.start >= e.end || e.end as usize > len || e.handler as usize >= len {
                return ferr("illegal exception table range");
            }
            if e.catch_type != 0 {
                cp.class_name(e.catch_type)?;
            }
            exceptions.push(e);
        }
        let attributes = parse_attributes(&mut r, cp)?;
        if r.remaining() != 0 {
            return ferr("Code attribute length mismatch");
        }
        Ok(Code {
            max_stack,
            max_locals,
            code,
            exceptions,
            attributes,
        })
    }
}
