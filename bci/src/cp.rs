//! The constant pool: a borrowed view with raw indices (reader side) and an append-only,
//! de-duplicating builder that keeps every original index valid (writer side).

use crate::error::{Error, Result};
use crate::reader::{be16, be32, Reader};
use std::borrow::Cow;
use std::hash::Hasher;

/// FxHash (rustc's hasher): the pool index is rebuilt for every class that gets new constants,
/// so hashing speed matters more than DoS resistance (keys are the class's own constants).
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);
impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}
impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

pub mod tag {
    pub const UTF8: u8 = 1;
    pub const INTEGER: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const LONG: u8 = 5;
    pub const DOUBLE: u8 = 6;
    pub const CLASS: u8 = 7;
    pub const STRING: u8 = 8;
    pub const FIELDREF: u8 = 9;
    pub const METHODREF: u8 = 10;
    pub const INTERFACE_METHODREF: u8 = 11;
    pub const NAME_AND_TYPE: u8 = 12;
    pub const METHOD_HANDLE: u8 = 15;
    pub const METHOD_TYPE: u8 = 16;
    pub const DYNAMIC: u8 = 17;
    pub const INVOKE_DYNAMIC: u8 = 18;
    pub const MODULE: u8 = 19;
    pub const PACKAGE: u8 = 20;
}

pub fn tag_name(t: u8) -> &'static str {
    match t {
        tag::UTF8 => "Utf8",
        tag::INTEGER => "Integer",
        tag::FLOAT => "Float",
        tag::LONG => "Long",
        tag::DOUBLE => "Double",
        tag::CLASS => "Class",
        tag::STRING => "String",
        tag::FIELDREF => "Fieldref",
        tag::METHODREF => "Methodref",
        tag::INTERFACE_METHODREF => "InterfaceMethodref",
        tag::NAME_AND_TYPE => "NameAndType",
        tag::METHOD_HANDLE => "MethodHandle",
        tag::METHOD_TYPE => "MethodType",
        tag::DYNAMIC => "Dynamic",
        tag::INVOKE_DYNAMIC => "InvokeDynamic",
        tag::MODULE => "Module",
        tag::PACKAGE => "Package",
        0 => "(second slot of Long/Double)",
        _ => "(unknown)",
    }
}

/// Payload length after the tag byte, for fixed-size tags.
const fn fixed_len(t: u8) -> Option<usize> {
    Some(match t {
        tag::INTEGER | tag::FLOAT => 4,
        tag::LONG | tag::DOUBLE => 8,
        tag::CLASS | tag::STRING | tag::METHOD_TYPE | tag::MODULE | tag::PACKAGE => 2,
        tag::FIELDREF
        | tag::METHODREF
        | tag::INTERFACE_METHODREF
        | tag::NAME_AND_TYPE
        | tag::DYNAMIC
        | tag::INVOKE_DYNAMIC => 4,
        tag::METHOD_HANDLE => 3,
        _ => return None,
    })
}

/// The constant pool's entries from index 1 on, as long as they are well formed and fit
/// (`rest` starts at entry 1, at `base` in the class bytes): notes their offsets, tags and the
/// first Utf8 `StackMapTable`, returns the index of the first entry not read and the bytes
/// read. The length comes from the tag (Utf8's from its own length).
#[inline(never)]
fn scan_entries(
    rest: &[u8],
    base: usize,
    major: u16,
    offsets: &mut [u32],
    tags: &mut [u8],
    smt_name: &mut u16,
) -> (usize, usize) {
    let count = offsets.len().min(tags.len());
    let mut i = 1;
    let mut p = 0usize;
    while i < count {
        let Some(&t) = rest.get(p) else { break };
        let len = match t {
            tag::UTF8 => match rest.get(p + 1..p + 3) {
                Some(h) => 3 + u16::from_be_bytes([h[0], h[1]]) as usize,
                None => break,
            },
            _ => ENTRY_LEN[t as usize] as usize,
        };
        let slots = 1 + (t == tag::LONG || t == tag::DOUBLE) as usize;
        if len == 0 || p + len > rest.len() || MIN_MAJOR[t as usize] > major || i + slots > count {
            break;
        }
        if t == tag::UTF8
            && len == 3 + SMT.len()
            && *smt_name == 0
            && rest.get(p + 3..p + len) == Some(SMT)
        {
            *smt_name = i as u16;
        }
        offsets[i] = (base + p) as u32;
        tags[i] = t;
        p += len;
        i += slots;
    }
    (i, p)
}

/// The most class names a [`CpBuilder`] remembers.
const CLASS_MEMO: usize = 16;

/// [`fixed_len`] with the tag byte, per tag; 0 for Utf8 and invalid tags.
const ENTRY_LEN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = match fixed_len(i as u8) {
            Some(n) => n as u8 + 1,
            None => 0,
        };
        i += 1;
    }
    t
};

/// [`min_major`] per tag.
const MIN_MAJOR: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = min_major(i as u8);
        i += 1;
    }
    t
};

/// Minimum major version for a tag (JVMS table 4.4-B).
const fn min_major(t: u8) -> u16 {
    match t {
        tag::METHOD_HANDLE | tag::METHOD_TYPE | tag::INVOKE_DYNAMIC => 51,
        tag::MODULE | tag::PACKAGE => 53,
        tag::DYNAMIC => 55,
        _ => 45,
    }
}

/// A borrowed constant pool. Index `i` (1-based) is at `offsets[i]` in the class bytes.
#[derive(Clone)]
pub struct ConstantPool<'a> {
    bytes: &'a [u8],
    /// Offset of each entry's tag byte; 0 for index 0 and the unusable slot after Long/Double.
    offsets: Vec<u32>,
    /// Each entry's tag; 0 for index 0 and the unusable slot after Long/Double.
    tags: Vec<u8>,
    /// Byte range of all entries (after the count) in the class bytes.
    pub start: usize,
    pub end: usize,
    /// The first Utf8 entry `StackMapTable`, noted while parsing (0: none).
    smt_name: u16,
}

const SMT: &[u8] = b"StackMapTable";

impl<'a> ConstantPool<'a> {
    /// Parses the pool starting at `r` (positioned on constant_pool_count).
    pub(crate) fn parse(
        bytes: &'a [u8],
        r: &mut Reader<'a>,
        major: u16,
    ) -> Result<ConstantPool<'a>> {
        let count = r.u16()? as usize;
        if count == 0 {
            return Err(Error::format("constant_pool_count is 0").at(r.abs() - 2));
        }
        let start = r.abs();
        let mut offsets = vec![0u32; count];
        let mut tags = vec![0u8; count];
        let mut smt_name = 0u16;
        // Fast path over well-formed entries that fit: the first entry that is not stops it,
        // and the checked loop below takes over from there (it reports the error).
        let (mut i, len) = scan_entries(
            r.rest(),
            r.abs(),
            major,
            &mut offsets,
            &mut tags,
            &mut smt_name,
        );
        r.skip(len)?;
        while i < count {
            let at = r.abs();
            // Fast path: a well-formed entry that fits (anything else takes the checked path
            // below, which reports the error).
            let rest = r.rest();
            if let Some(&t) = rest.first() {
                let len = match t {
                    tag::UTF8 if rest.len() >= 3 => 3 + be16(rest, 1) as usize,
                    _ => fixed_len(t).map_or(0, |n| n + 1),
                };
                let slots = if t == tag::LONG || t == tag::DOUBLE {
                    2
                } else {
                    1
                };
                if len != 0 && len <= rest.len() && min_major(t) <= major && i + slots <= count {
                    if len == 3 + SMT.len()
                        && t == tag::UTF8
                        && smt_name == 0
                        && rest[3..len] == *SMT
                    {
                        smt_name = i as u16;
                    }
                    offsets[i] = at as u32;
                    tags[i] = t;
                    r.skip(len)?;
                    i += slots;
                    continue;
                }
            }
            let t = r.u8()?;
            if min_major(t) > major {
                return Err(Error::format(format!(
                    "constant #{i}: tag {} needs class-file version {} (this is {major})",
                    tag_name(t),
                    min_major(t)
                ))
                .at(at));
            }
            offsets[i] = at as u32;
            tags[i] = t;
            match t {
                tag::UTF8 => {
                    let n = r.u16()? as usize;
                    let text = r
                        .bytes(n)
                        .map_err(|e| e.context(format!("constant #{i} (Utf8)")))?;
                    if smt_name == 0 && text == SMT {
                        smt_name = i as u16;
                    }
                }
                _ => match fixed_len(t) {
                    Some(n) => r.skip(n).map_err(|e| e.context(format!("constant #{i}")))?,
                    None => {
                        return Err(Error::format(format!("constant #{i}: invalid tag {t}")).at(at));
                    }
                },
            }
            i += if t == tag::LONG || t == tag::DOUBLE {
                2
            } else {
                1
            };
            if i > count {
                return Err(Error::format(format!(
                    "constant #{}: Long/Double takes the last slot",
                    i - 2
                ))
                .at(at));
            }
        }
        let cp = ConstantPool {
            bytes,
            offsets,
            tags,
            start,
            end: r.abs(),
            smt_name,
        };
        cp.check_refs()?;
        Ok(cp)
    }

    /// Checks that every entry refers to entries of the right kinds (JVMS 4.4).
    fn check_refs(&self) -> Result<()> {
        let tags = &self.tags[..];
        // the tag of entry `idx` (0: none)
        let tag_of = |idx: u16| tags.get(idx as usize).copied().unwrap_or(0);
        for (i, &t) in tags.iter().enumerate() {
            // the entries that refer to none first (Utf8, numbers, unusable slots)
            if matches!(
                t,
                0 | tag::UTF8 | tag::INTEGER | tag::FLOAT | tag::LONG | tag::DOUBLE
            ) {
                continue;
            }
            let off = self.offsets[i] as usize;
            let p = off + 1;
            // the check inline, the error out of line
            let want = |idx: u16, tags: &[u8], what: &str| -> Result<()> {
                let g = tag_of(idx);
                if g != 0 && tags.contains(&g) {
                    Ok(())
                } else {
                    Err(bad_ref(i, t, off, idx, self.tag(idx), tags, what))
                }
            };
            match t {
                tag::CLASS | tag::STRING | tag::METHOD_TYPE | tag::MODULE | tag::PACKAGE => {
                    want(be16(self.bytes, p), &[tag::UTF8], "name")?
                }
                tag::FIELDREF | tag::METHODREF | tag::INTERFACE_METHODREF => {
                    want(be16(self.bytes, p), &[tag::CLASS], "class")?;
                    want(
                        be16(self.bytes, p + 2),
                        &[tag::NAME_AND_TYPE],
                        "name_and_type",
                    )?;
                }
                tag::NAME_AND_TYPE => {
                    want(be16(self.bytes, p), &[tag::UTF8], "name")?;
                    want(be16(self.bytes, p + 2), &[tag::UTF8], "descriptor")?;
                }
                tag::DYNAMIC | tag::INVOKE_DYNAMIC => want(
                    be16(self.bytes, p + 2),
                    &[tag::NAME_AND_TYPE],
                    "name_and_type",
                )?,
                tag::METHOD_HANDLE => {
                    let kind = self.bytes[p];
                    let r = be16(self.bytes, p + 1);
                    match kind {
                        1..=4 => want(r, &[tag::FIELDREF], "reference")?,
                        5 | 8 => want(r, &[tag::METHODREF], "reference")?,
                        6 | 7 => want(r, &[tag::METHODREF, tag::INTERFACE_METHODREF], "reference")?,
                        9 => want(r, &[tag::INTERFACE_METHODREF], "reference")?,
                        _ => {
                            return Err(Error::format(format!(
                                "constant #{i} (MethodHandle): bad reference_kind {kind}"
                            ))
                            .at(off))
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The first Utf8 entry `StackMapTable` (0: none): another with the same text has a
    /// higher index.
    #[inline]
    pub(crate) fn smt_name(&self) -> u16 {
        self.smt_name
    }
    /// Number of slots (constant_pool_count).
    pub fn count(&self) -> u16 {
        self.offsets.len() as u16
    }
    /// The raw bytes of all entries, for copying.
    pub fn raw(&self) -> &'a [u8] {
        &self.bytes[self.start..self.end]
    }
    #[inline]
    pub fn tag(&self, i: u16) -> Option<u8> {
        match self.tags.get(i as usize) {
            Some(&t) if t != 0 => Some(t),
            _ => None,
        }
    }
    /// Offset of the entry's payload (after the tag), checked to have tag `t`.
    #[inline]
    fn payload(&self, i: u16, t: u8) -> Result<usize> {
        match self.tag(i) {
            Some(g) if g == t => Ok(self.offsets[i as usize] as usize + 1),
            g => Err(wrong_tag(i, g, t)),
        }
    }
    /// Raw (modified UTF-8) bytes of a Utf8 entry.
    pub fn utf8_bytes(&self, i: u16) -> Result<&'a [u8]> {
        let p = self.payload(i, tag::UTF8)?;
        let n = be16(self.bytes, p) as usize;
        Ok(&self.bytes[p + 2..p + 2 + n])
    }
    /// A Utf8 entry as text (modified UTF-8 decoded; borrowed when it is plain UTF-8).
    pub fn utf8(&self, i: u16) -> Result<Cow<'a, str>> {
        Ok(decode_mutf8(self.utf8_bytes(i)?))
    }
    /// The name of a Class entry (internal form, e.g. `java/lang/String`).
    pub fn class_name(&self, i: u16) -> Result<Cow<'a, str>> {
        let p = self.payload(i, tag::CLASS)?;
        self.utf8(be16(self.bytes, p))
    }
    pub fn class_name_index(&self, i: u16) -> Result<u16> {
        Ok(be16(self.bytes, self.payload(i, tag::CLASS)?))
    }
    /// (name, descriptor) of a NameAndType entry.
    pub fn name_and_type(&self, i: u16) -> Result<(Cow<'a, str>, Cow<'a, str>)> {
        let p = self.payload(i, tag::NAME_AND_TYPE)?;
        Ok((
            self.utf8(be16(self.bytes, p))?,
            self.utf8(be16(self.bytes, p + 2))?,
        ))
    }
    /// The tag of constant `i` if it is a Fieldref, Methodref or InterfaceMethodref.
    #[inline]
    fn member_tag(&self, i: u16) -> Result<u8> {
        let t = self.tag(i).unwrap_or(0);
        if matches!(t, tag::FIELDREF | tag::METHODREF | tag::INTERFACE_METHODREF) {
            Ok(t)
        } else {
            Err(Error::format(format!(
                "constant #{i} is {}, expected a field or method reference",
                tag_name(t)
            )))
        }
    }
    /// (class, name, descriptor) of a Fieldref, Methodref or InterfaceMethodref.
    pub fn member_ref(&self, i: u16) -> Result<MemberRef<'a>> {
        let t = self.member_tag(i)?;
        let p = self.offsets[i as usize] as usize + 1;
        let class = self.class_name(be16(self.bytes, p))?;
        let (name, desc) = self.name_and_type(be16(self.bytes, p + 2))?;
        Ok(MemberRef {
            tag: t,
            class,
            name,
            desc,
        })
    }
    /// The Class constant (its index) of a Fieldref, Methodref or InterfaceMethodref.
    pub fn member_ref_class_index(&self, i: u16) -> Result<u16> {
        self.member_tag(i)?;
        Ok(be16(self.bytes, self.offsets[i as usize] as usize + 1))
    }
    /// [`ConstantPool::member_ref`] as raw (modified UTF-8) bytes, without decoding text. Fails
    /// exactly when `member_ref` does.
    pub fn member_ref_bytes(&self, i: u16) -> Result<MemberRefBytes<'a>> {
        let t = self.member_tag(i)?;
        let p = self.offsets[i as usize] as usize + 1;
        let class = self.utf8_bytes(self.class_name_index(be16(self.bytes, p))?)?;
        let nt = self.payload(be16(self.bytes, p + 2), tag::NAME_AND_TYPE)?;
        Ok(MemberRefBytes {
            tag: t,
            class,
            name: self.utf8_bytes(be16(self.bytes, nt))?,
            desc: self.utf8_bytes(be16(self.bytes, nt + 2))?,
        })
    }
    /// Raw descriptor bytes of a Fieldref/Methodref/InterfaceMethodref/InvokeDynamic/Dynamic
    /// entry and the name bytes, without decoding text (hot path of stack-depth analysis).
    pub fn ref_name_desc_bytes(&self, i: u16) -> Result<(&'a [u8], &'a [u8])> {
        let t = self.tag(i).unwrap_or(0);
        if !matches!(
            t,
            tag::FIELDREF
                | tag::METHODREF
                | tag::INTERFACE_METHODREF
                | tag::DYNAMIC
                | tag::INVOKE_DYNAMIC
        ) {
            return Err(Error::format(format!(
                "constant #{i} is {}, expected a reference",
                tag_name(t)
            )));
        }
        let p = self.offsets[i as usize] as usize + 1;
        let nt = self.payload(be16(self.bytes, p + 2), tag::NAME_AND_TYPE)?;
        Ok((
            self.utf8_bytes(be16(self.bytes, nt))?,
            self.utf8_bytes(be16(self.bytes, nt + 2))?,
        ))
    }

    /// (reference kind, reference index) of a MethodHandle entry.
    pub fn method_handle(&self, i: u16) -> Result<(u8, u16)> {
        let p = self.payload(i, tag::METHOD_HANDLE)?;
        Ok((self.bytes[p], be16(self.bytes, p + 1)))
    }
    /// (bootstrap index, name, descriptor) of an InvokeDynamic or Dynamic entry.
    pub fn dynamic(&self, i: u16) -> Result<(u16, Cow<'a, str>, Cow<'a, str>)> {
        let t = self.tag(i).unwrap_or(0);
        if !matches!(t, tag::DYNAMIC | tag::INVOKE_DYNAMIC) {
            return Err(Error::format(format!(
                "constant #{i} is {}, expected Dynamic or InvokeDynamic",
                tag_name(t)
            )));
        }
        let p = self.offsets[i as usize] as usize + 1;
        let (name, desc) = self.name_and_type(be16(self.bytes, p + 2))?;
        Ok((be16(self.bytes, p), name, desc))
    }
    pub fn integer(&self, i: u16) -> Result<i32> {
        Ok(be32(self.bytes, self.payload(i, tag::INTEGER)?) as i32)
    }
    /// The raw payload of any entry (after the tag), for de-duplication.
    fn raw_entry(&self, i: u16) -> Option<(u8, &'a [u8])> {
        let off = *self.offsets.get(i as usize)? as usize;
        if off == 0 {
            return None;
        }
        let t = self.bytes[off];
        let len = match t {
            tag::UTF8 => 2 + be16(self.bytes, off + 1) as usize,
            _ => fixed_len(t)?,
        };
        Some((t, &self.bytes[off + 1..off + 1 + len]))
    }
}

/// The error of a constant `#i` that has tag `got` where tag `want` is needed.
#[cold]
#[inline(never)]
fn wrong_tag(i: u16, got: Option<u8>, want: u8) -> Error {
    Error::format(format!(
        "constant #{i} is {}, expected {}",
        got.map_or("out of range", tag_name),
        tag_name(want)
    ))
}

/// A field or method reference as raw (modified UTF-8) bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberRefBytes<'a> {
    pub tag: u8,
    pub class: &'a [u8],
    pub name: &'a [u8],
    pub desc: &'a [u8],
}

/// The error of [`ConstantPool::check_refs`] for entry `i` (tag `t` at `off`), whose `what`
/// `#idx` has tag `got` instead of one of `tags`.
#[cold]
#[inline(never)]
fn bad_ref(
    i: usize,
    t: u8,
    off: usize,
    idx: u16,
    got: Option<u8>,
    tags: &[u8],
    what: &str,
) -> Error {
    Error::format(format!(
        "constant #{i} ({}): {what} #{idx} is {}, expected {}",
        tag_name(t),
        got.map_or("out of range", tag_name),
        tags.iter()
            .map(|&t| tag_name(t))
            .collect::<Vec<_>>()
            .join(" or ")
    ))
    .at(off)
}

/// A resolved field or method reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberRef<'a> {
    pub tag: u8,
    pub class: Cow<'a, str>,
    pub name: Cow<'a, str>,
    pub desc: Cow<'a, str>,
}

/// Decodes modified UTF-8 (JVMS 4.4.7): borrowed when the bytes are valid standard UTF-8 without
/// NUL or surrogate pairs (the common case), otherwise decoded (invalid sequences become U+FFFD).
pub fn decode_mutf8(b: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(b) {
        return Cow::Borrowed(s);
    }
    let mut units: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as u32;
        if c < 0x80 {
            units.push(c as u16);
            i += 1;
        } else if c & 0xE0 == 0xC0 && i + 1 < b.len() {
            units.push((((c & 0x1F) << 6) | (b[i + 1] as u32 & 0x3F)) as u16);
            i += 2;
        } else if c & 0xF0 == 0xE0 && i + 2 < b.len() {
            units.push(
                (((c & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F))
                    as u16,
            );
            i += 3;
        } else {
            units.push(0xFFFD);
            i += 1;
        }
    }
    Cow::Owned(String::from_utf16_lossy(&units))
}

/// Encodes text as modified UTF-8.
pub fn encode_mutf8(s: &str) -> Cow<'_, [u8]> {
    // ASCII without NUL (nearly every name): one pass over the bytes
    if s.bytes().all(|b| b.wrapping_sub(1) < 0x7F) {
        return Cow::Borrowed(s.as_bytes());
    }
    if !s.bytes().any(|b| b == 0) && s.chars().all(|c| (c as u32) < 0x10000) {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len() + 8);
    for u in s.encode_utf16() {
        let u = u as u32;
        if u != 0 && u < 0x80 {
            out.push(u as u8);
        } else if u < 0x800 {
            out.push((0xC0 | (u >> 6)) as u8);
            out.push((0x80 | (u & 0x3F)) as u8);
        } else {
            out.push((0xE0 | (u >> 12)) as u8);
            out.push((0x80 | ((u >> 6) & 0x3F)) as u8);
            out.push((0x80 | (u & 0x3F)) as u8);
        }
    }
    Cow::Owned(out)
}

/// Append-only constant-pool builder. Original indices stay valid; new entries are
/// de-duplicated against the original pool (indexed lazily, per tag, on the first addition)
/// and against each other. [`CpBuilder::class`] first looks through a list of the pool's
/// Class entries, which is cheaper than indexing its Utf8 entries (tens of entries against
/// hundreds). The constants of a rewriter's own runtime calls ([`CpBuilder::runtime_methodref`],
/// the catch-all's Throwable) are looked up among the appended entries only (and
/// `StackMapTable` by one pass over the pool): an
/// uninstrumented class does not have the runtime's names, and indexing every Utf8 entry of
/// the pool to find the one descriptor it might share took 5 % of the cpu-times rewrite.
pub struct CpBuilder<'a> {
    cp: &'a ConstantPool<'a>,
    count: u32,
    appended: Vec<u8>,
    /// Offset in `appended` of each appended entry (by index - original count); `u32::MAX`
    /// for the unusable slot after a Long/Double.
    appended_at: Vec<u32>,
    index: Option<RawIndex>,
    /// The original Class entries (hash of their name's Utf8 payload, index), in index
    /// order, listed on the first [`CpBuilder::class`]: a class name is looked up without
    /// indexing every Utf8 entry (a class has tens of Class entries, hundreds of Utf8).
    classes: Option<Vec<(u32, u16)>>,
    throwable: Option<u16>,
    stack_map_table: Option<u16>,
    /// Names [`CpBuilder::class`] has answered (their bytes in `class_names`: end offset,
    /// index), at most [`CLASS_MEMO`]: a class's methods ask for the same few (the class itself
    /// and its parameters' classes, for their first frames). The same name always gets the
    /// same index from a builder (found in the pool, or appended and then found there).
    class_memo: Vec<(u32, u16)>,
    class_names: Vec<u8>,
    /// Stack-effect cache of field and method references by original constant index, shared
    /// by the methods of the class (see `MethodEditor::finish`); 0 = not computed.
    pub(crate) ref_effects: Vec<u32>,
}

/// Up to this many appended entries, a look among them only ([`CpBuilder::scan_appended`])
/// goes through each instead of the hash index.
const SCAN_APPENDED: usize = 48;

/// The de-duplication index: a chained hash table of constant indices keyed by a cheap hash
/// of (tag, payload) that reads at most 16 payload bytes, so building it is one pass over the
/// entry offsets without hashing whole strings or allocating per entry. Candidates are
/// compared in full.
struct RawIndex {
    /// Chain heads by hash; 0 = empty (index 0 is never an entry).
    heads: Vec<u16>,
    /// The next index in the same chain, by index; 0 ends the chain.
    next: Vec<u16>,
    /// Bit `t`: the original entries with tag `t` are in the table (indexed on the first
    /// lookup of that tag). Appended entries are always in it.
    tags: u32,
}

#[inline]
fn load_le(p: &[u8]) -> u64 {
    // 8 bytes (most names): one load, no variable-length copy
    if let Ok(w) = <[u8; 8]>::try_from(p) {
        return u64::from_le_bytes(w);
    }
    let mut w = [0u8; 8];
    for (d, &b) in w.iter_mut().zip(p) {
        *d = b;
    }
    u64::from_le_bytes(w)
}

/// Hash of an entry's tag and payload: its length and last 8 bytes (names share prefixes
/// like `java/lang/` more than suffixes), one multiplication.
#[inline]
fn raw_hash(t: u8, p: &[u8]) -> u64 {
    let tail = load_le(&p[p.len().saturating_sub(8)..]);
    (tail ^ (t as u64) << 56 ^ (p.len() as u64) << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl RawIndex {
    fn with_entries(n: usize) -> RawIndex {
        let cap = (n * 2).next_power_of_two().max(16);
        RawIndex {
            heads: vec![0; cap],
            next: vec![0; n],
            tags: 0,
        }
    }
    #[inline]
    fn slot(&self, h: u64) -> usize {
        // The high bits of the multiplicative hash are the well-mixed ones.
        (h >> 32) as usize & (self.heads.len() - 1)
    }
    /// Puts `i` at the head of its chain (so inserting in decreasing index order leaves the
    /// smallest index first).
    fn push_front(&mut self, i: u16, h: u64) {
        let s = self.slot(h);
        if self.next.len() <= i as usize {
            self.next.resize(i as usize + 1, 0);
        }
        self.next[i as usize] = self.heads[s];
        self.heads[s] = i;
    }
    /// Appends `i` at the end of its chain (appended entries come after original ones).
    fn push_back(&mut self, i: u16, h: u64) {
        let s = self.slot(h);
        if self.next.len() <= i as usize {
            self.next.resize(i as usize + 1, 0);
        }
        self.next[i as usize] = 0;
        let mut k = self.heads[s];
        if k == 0 {
            self.heads[s] = i;
            return;
        }
        while let Some(&n) = self.next.get(k as usize).filter(|&&n| n != 0) {
            k = n;
        }
        self.next[k as usize] = i;
    }
}

impl<'a> CpBuilder<'a> {
    pub fn new(cp: &'a ConstantPool<'a>) -> CpBuilder<'a> {
        CpBuilder {
            cp,
            count: cp.count() as u32,
            appended: Vec::new(),
            appended_at: Vec::new(),
            index: None,
            classes: None,
            throwable: None,
            stack_map_table: None,
            class_memo: Vec::new(),
            class_names: Vec::new(),
            ref_effects: Vec::new(),
        }
    }
    pub fn original(&self) -> &'a ConstantPool<'a> {
        self.cp
    }
    /// The new constant_pool_count.
    pub fn count(&self) -> u16 {
        self.count as u16
    }
    /// Bytes of the entries added after the original ones.
    pub fn appended(&self) -> &[u8] {
        &self.appended
    }
    /// Tag and payload of an entry, original or appended.
    fn raw_of(&self, i: u16) -> Option<(u8, &[u8])> {
        if i < self.cp.count() {
            return self.cp.raw_entry(i);
        }
        let p = *self.appended_at.get((i - self.cp.count()) as usize)? as usize;
        let t = *self.appended.get(p)?;
        let len = if t == tag::UTF8 {
            2 + be16(&self.appended, p + 1) as usize
        } else {
            fixed_len(t)?
        };
        Some((t, self.appended.get(p + 1..p + 1 + len)?))
    }
    /// The name of a Class entry, original or appended.
    pub fn class_name_of(&self, i: u16) -> Option<String> {
        let (t, raw) = self.raw_of(i)?;
        if t != tag::CLASS {
            return None;
        }
        let (t, raw) = self.raw_of(be16(raw, 0))?;
        if t != tag::UTF8 {
            return None;
        }
        Some(decode_mutf8(&raw[2..]).into_owned())
    }
    pub fn is_unchanged(&self) -> bool {
        self.appended.is_empty()
    }

    /// Adds the original entries with tag `t` to the table, in front of the appended ones of
    /// that tag, the first of equal ones first.
    fn index_tag(&self, ix: &mut RawIndex, t: u8) {
        if t < 32 {
            ix.tags |= 1 << t;
        }
        let b = self.cp.bytes;
        let fixed = fixed_len(t).unwrap_or(0);
        for (i, (&off, &ti)) in self
            .cp
            .offsets
            .iter()
            .zip(&self.cp.tags)
            .enumerate()
            .skip(1)
            .rev()
        {
            if ti != t {
                continue;
            }
            let off = off as usize;
            let len = if t == tag::UTF8 {
                2 + be16(b, off + 1) as usize
            } else {
                fixed
            };
            if let Some(raw) = b.get(off + 1..off + 1 + len) {
                ix.push_front(i as u16, raw_hash(t, raw));
            }
        }
    }

    /// A table sized for the pool with the appended entries and the tags indexed so far.
    fn build_index(&self, tags: u32) -> RawIndex {
        let mut ix = RawIndex::with_entries(self.count as usize);
        for k in 0..self.appended_at.len() {
            let i = self.cp.count() + k as u16;
            if let Some((t, raw)) = self.raw_of(i) {
                ix.push_back(i, raw_hash(t, raw));
            }
        }
        for t in 0..32u8 {
            if tags & (1 << t) != 0 {
                self.index_tag(&mut ix, t);
            }
        }
        ix
    }

    /// The index of an existing entry with this tag and payload: the first such original
    /// entry, else the appended one.
    fn find(&mut self, t: u8, payload: &[u8], appended_only: bool) -> Option<u16> {
        // An entry that refers to an appended entry cannot be an original one: only the
        // appended entries need a look (the tag's original entries are not indexed for it).
        let refs_new = |at: usize| be16(payload, at) >= self.cp.count();
        let new_only = appended_only
            || match t {
                tag::CLASS | tag::STRING | tag::METHOD_TYPE | tag::MODULE | tag::PACKAGE => {
                    payload.len() == 2 && refs_new(0)
                }
                tag::FIELDREF | tag::METHODREF | tag::INTERFACE_METHODREF | tag::NAME_AND_TYPE => {
                    payload.len() == 4 && (refs_new(0) || refs_new(2))
                }
                _ => false,
            };
        if new_only && self.appended_at.len() <= SCAN_APPENDED {
            return self.scan_appended(t, payload);
        }
        let mut ix = match self.index.take() {
            // Rebuild when appended entries have filled the table (keeps chains short).
            Some(ix) if ix.heads.len() >= self.count as usize => ix,
            old => self.build_index(old.map_or(0, |ix| ix.tags)),
        };
        if !new_only && (t >= 32 || ix.tags & (1 << t) == 0) {
            self.index_tag(&mut ix, t);
        }
        let h = raw_hash(t, payload);
        let mut i = ix.heads[ix.slot(h)];
        let mut found = None;
        // (original entries may be in the chain when their tag was indexed for another look)
        let first = if appended_only { self.cp.count() } else { 0 };
        while i != 0 {
            if i >= first && self.raw_of(i) == Some((t, payload)) {
                found = Some(i);
                break;
            }
            i = ix.next.get(i as usize).copied().unwrap_or(0);
        }
        self.index = Some(ix);
        found
    }

    /// The first appended entry with this tag and payload, by a look at each: a rewrite
    /// appends tens of entries, and the hash index would first be sized for the whole pool.
    fn scan_appended(&self, t: u8, payload: &[u8]) -> Option<u16> {
        let base = self.cp.count();
        let a = &self.appended;
        self.appended_at.iter().enumerate().find_map(|(k, &p)| {
            let p = p as usize;
            let hit = a.get(p) == Some(&t) && a.get(p + 1..p + 1 + payload.len()) == Some(payload);
            hit.then_some(base + k as u16)
        })
    }

    fn add_raw(&mut self, t: u8, payload: &[u8]) -> Result<u16> {
        self.add_raw_in(t, payload, false)
    }

    /// The error of a constant that does not fit: how many the class has, how many the rewrite
    /// has added, and that it needs more (the constant indices end at 65534:
    /// constant_pool_count is a u2).
    #[cold]
    #[inline(never)]
    fn pool_full(&self) -> Error {
        let original = self.cp.count() as u32;
        Error::new(
            crate::ErrorKind::TooLarge,
            format!(
                "constant pool would exceed 65535 entries: the class has {} and the rewrite needs more than the {} that fit",
                original.saturating_sub(1),
                0xFFFFu32.saturating_sub(original)
            ),
        )
    }

    /// [`CpBuilder::add_raw`]; `appended_only`: de-duplicated among the appended entries only.
    fn add_raw_in(&mut self, t: u8, payload: &[u8], appended_only: bool) -> Result<u16> {
        if let Some(i) = self.find(t, payload, appended_only) {
            return Ok(i);
        }
        let slots = if t == tag::LONG || t == tag::DOUBLE {
            2
        } else {
            1
        };
        if self.count + slots > 0xFFFF {
            return Err(self.pool_full());
        }
        let i = self.count as u16;
        self.count += slots;
        if self.appended_at.is_empty() {
            // a rewrite appends tens of entries: one allocation each instead of a doubling series
            self.appended_at.reserve(32);
            self.appended.reserve(512);
        }
        self.appended_at.push(self.appended.len() as u32);
        if slots == 2 {
            self.appended_at.push(u32::MAX);
        }
        self.appended.push(t);
        self.appended.extend_from_slice(payload);
        if let Some(ix) = self.index.as_mut() {
            ix.push_back(i, raw_hash(t, payload));
        }
        Ok(i)
    }

    pub fn utf8(&mut self, s: &str) -> Result<u16> {
        self.with_utf8_payload(s, |cb, p| cb.add_raw(tag::UTF8, p))
    }

    /// Calls `f` with the Utf8 payload (length, modified UTF-8 bytes) of `s`.
    fn with_utf8_payload<R>(
        &mut self,
        s: &str,
        f: impl FnOnce(&mut Self, &[u8]) -> Result<R>,
    ) -> Result<R> {
        let enc = encode_mutf8(s);
        if enc.len() > 0xFFFF {
            return Err(Error::new(
                crate::ErrorKind::TooLarge,
                "Utf8 constant longer than 65535 bytes",
            ));
        }
        // the payload (length, bytes) on the stack for the usual short names
        let mut short = [0u8; 130];
        let long;
        let p: &[u8] = if enc.len() + 2 <= short.len() {
            short[..2].copy_from_slice(&(enc.len() as u16).to_be_bytes());
            short[2..2 + enc.len()].copy_from_slice(&enc);
            &short[..2 + enc.len()]
        } else {
            let mut v = Vec::with_capacity(enc.len() + 2);
            v.extend_from_slice(&(enc.len() as u16).to_be_bytes());
            v.extend_from_slice(&enc);
            long = v;
            &long
        };
        f(self, p)
    }

    /// The first original Class entry whose name has the Utf8 payload `p`.
    fn original_class(&mut self, p: &[u8]) -> Option<u16> {
        let cp = self.cp;
        let b = cp.bytes;
        // the payload of the Utf8 entry a Class entry at `off` names
        let name_at = |off: usize| -> Option<&[u8]> {
            let i = be16(b, off + 1) as usize;
            let o = *cp.offsets.get(i)? as usize;
            if o == 0 || b[o] != tag::UTF8 {
                return None;
            }
            b.get(o + 1..o + 3 + be16(b, o + 1) as usize)
        };
        let list = self.classes.get_or_insert_with(|| {
            // (about one entry in eight is a Class entry)
            let mut v = Vec::with_capacity(cp.offsets.len() / 6);
            for (i, (&off, &t)) in cp.offsets.iter().zip(&cp.tags).enumerate().skip(1) {
                let off = off as usize;
                if t == tag::CLASS {
                    if let Some(raw) = name_at(off) {
                        v.push(((raw_hash(tag::UTF8, raw) >> 32) as u32, i as u16));
                    }
                }
            }
            v
        });
        let h = (raw_hash(tag::UTF8, p) >> 32) as u32;
        list.iter()
            .filter(|&&(lh, _)| lh == h)
            .map(|&(_, i)| i)
            .find(|&i| name_at(cp.offsets[i as usize] as usize) == Some(p))
    }
    fn ref1(&mut self, t: u8, a: u16) -> Result<u16> {
        self.add_raw(t, &a.to_be_bytes())
    }
    fn ref2(&mut self, t: u8, a: u16, b: u16) -> Result<u16> {
        let [a0, a1] = a.to_be_bytes();
        let [b0, b1] = b.to_be_bytes();
        self.add_raw(t, &[a0, a1, b0, b1])
    }
    /// The Class constant of java/lang/Throwable (memoized: every catch-all handler frame needs it).
    pub fn throwable(&mut self) -> Result<u16> {
        if let Some(i) = self.throwable {
            return Ok(i);
        }
        let i = self.appended_class("java/lang/Throwable")?;
        self.throwable = Some(i);
        Ok(i)
    }
    /// The Utf8 constant `StackMapTable` (memoized: methods that get their first frames need it).
    pub fn stack_map_table_name(&mut self) -> Result<u16> {
        if let Some(i) = self.stack_map_table {
            return Ok(i);
        }
        // noted by the pool's parse, rather than looked up by indexing its Utf8 entries
        let i = match self.cp.smt_name {
            0 => self.appended_utf8("StackMapTable")?,
            i => i,
        };
        self.stack_map_table = Some(i);
        Ok(i)
    }
    /// A Class entry for `internal_name` looked up among the appended entries only (see
    /// [`CpBuilder`]).
    fn appended_class(&mut self, internal_name: &str) -> Result<u16> {
        let n = self.appended_utf8(internal_name)?;
        self.ref1(tag::CLASS, n)
    }
    /// A Utf8 entry looked up among the appended entries only (see [`CpBuilder`]).
    fn appended_utf8(&mut self, s: &str) -> Result<u16> {
        self.with_utf8_payload(s, |cb, p| cb.add_raw_in(tag::UTF8, p, true))
    }
    /// A Methodref for a call into a rewriter's own runtime: its constants are looked up
    /// among the appended entries only (see [`CpBuilder`]); a descriptor the class already
    /// has may so be there twice.
    pub fn runtime_methodref(&mut self, class: &str, name: &str, desc: &str) -> Result<u16> {
        let c = self.appended_class(class)?;
        let n = self.appended_utf8(name)?;
        let d = self.appended_utf8(desc)?;
        let nt = self.ref2(tag::NAME_AND_TYPE, n, d)?;
        self.ref2(tag::METHODREF, c, nt)
    }
    /// The Class entry of `internal_name`: the original pool's first, else appended.
    pub fn class(&mut self, internal_name: &str) -> Result<u16> {
        let name = internal_name.as_bytes();
        let mut start = 0usize;
        for &(end, i) in &self.class_memo {
            let end = end as usize;
            if self.class_names.get(start..end) == Some(name) {
                return Ok(i);
            }
            start = end;
        }
        let i = self.with_utf8_payload(internal_name, |cb, p| match cb.original_class(p) {
            Some(i) => Ok(i),
            None => {
                let n = cb.add_raw(tag::UTF8, p)?;
                cb.ref1(tag::CLASS, n)
            }
        })?;
        if self.class_memo.len() < CLASS_MEMO && self.class_names.len() + name.len() <= 4096 {
            if self.class_memo.is_empty() {
                self.class_memo.reserve(CLASS_MEMO);
                self.class_names.reserve(512);
            }
            self.class_names.extend_from_slice(name);
            self.class_memo.push((self.class_names.len() as u32, i));
        }
        Ok(i)
    }
    pub fn string(&mut self, s: &str) -> Result<u16> {
        let n = self.utf8(s)?;
        self.ref1(tag::STRING, n)
    }
    pub fn integer(&mut self, v: i32) -> Result<u16> {
        self.add_raw(tag::INTEGER, &v.to_be_bytes())
    }
    pub fn long(&mut self, v: i64) -> Result<u16> {
        self.add_raw(tag::LONG, &v.to_be_bytes())
    }
    pub fn name_and_type(&mut self, name: &str, desc: &str) -> Result<u16> {
        let n = self.utf8(name)?;
        let d = self.utf8(desc)?;
        self.ref2(tag::NAME_AND_TYPE, n, d)
    }
    pub fn methodref(&mut self, class: &str, name: &str, desc: &str) -> Result<u16> {
        let c = self.class(class)?;
        let nt = self.name_and_type(name, desc)?;
        self.ref2(tag::METHODREF, c, nt)
    }
    pub fn interface_methodref(&mut self, class: &str, name: &str, desc: &str) -> Result<u16> {
        let c = self.class(class)?;
        let nt = self.name_and_type(name, desc)?;
        self.ref2(tag::INTERFACE_METHODREF, c, nt)
    }
    pub fn fieldref(&mut self, class: &str, name: &str, desc: &str) -> Result<u16> {
        let c = self.class(class)?;
        let nt = self.name_and_type(name, desc)?;
        self.ref2(tag::FIELDREF, c, nt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::Reader;

    /// A pool from (tag, payload) entries.
    fn pool_bytes(entries: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut b = ((entries.len() + 1) as u16).to_be_bytes().to_vec();
        for (t, p) in entries {
            b.push(*t);
            b.extend_from_slice(p);
        }
        b
    }
    fn utf8(s: &[u8]) -> (u8, Vec<u8>) {
        let mut p = (s.len() as u16).to_be_bytes().to_vec();
        p.extend_from_slice(s);
        (tag::UTF8, p)
    }
    fn refs(t: u8, a: u16, b: u16) -> (u8, Vec<u8>) {
        let mut p = a.to_be_bytes().to_vec();
        p.extend_from_slice(&b.to_be_bytes());
        (t, p)
    }

    #[test]
    fn references_of_the_wrong_kind_are_named_with_entry_and_offset() {
        let parse = |entries: &[(u8, Vec<u8>)]| {
            let b = pool_bytes(entries);
            let mut r = Reader::new(&b);
            ConstantPool::parse(&b, &mut r, 61)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        let int = (tag::INTEGER, vec![0, 0, 0, 1]);
        assert_eq!(
            parse(&[int.clone(), (tag::CLASS, 1u16.to_be_bytes().to_vec())]),
            "constant #2 (Class): name #1 is Integer, expected Utf8 at offset 0x7"
        );
        assert_eq!(
            parse(&[utf8(b"x"), refs(tag::NAME_AND_TYPE, 1, 9)]),
            "constant #2 (NameAndType): descriptor #9 is out of range, expected Utf8 at offset 0x6"
        );
        assert_eq!(
            parse(&[int, (tag::METHOD_HANDLE, vec![6, 0, 1])]),
            "constant #2 (MethodHandle): reference #1 is Integer, expected Methodref or \
             InterfaceMethodref at offset 0x7"
        );
    }

    /// Constants are found in the original pool (the first of equal ones) or appended once;
    /// a runtime call's constants are looked up among the appended ones only.
    #[test]
    fn builder_dedupes_appended_entries_and_original_numbers() {
        let b = pool_bytes(&[
            utf8(b"p/A"),                              // 1
            (tag::CLASS, 1u16.to_be_bytes().to_vec()), // 2
            (tag::INTEGER, vec![0, 0, 0, 7]),          // 3
            (tag::INTEGER, vec![0, 0, 0, 7]),          // 4
            (tag::FLOAT, vec![0x3F, 0x80, 0, 0]),      // 5: 1.0
        ]);
        let mut r = Reader::new(&b);
        let cp = ConstantPool::parse(&b, &mut r, 61).unwrap();
        let mut cb = CpBuilder::new(&cp);
        assert_eq!(cb.integer(7).unwrap(), 3);
        assert_eq!(cb.add_raw(tag::FLOAT, &[0x3F, 0x80, 0, 0]).unwrap(), 5);
        assert!(cb.is_unchanged());
        assert_eq!(cb.class("p/A").unwrap(), 2);
        assert_eq!(cb.utf8("p/A").unwrap(), 1);
        assert!(cb.is_unchanged());
        let n = cp.count();
        assert_eq!(cb.class("q/B").unwrap(), n + 1); // Utf8 at n
        assert_eq!(cb.class("q/B").unwrap(), n + 1);
        let m = cb.methodref("p/A", "f", "()V").unwrap(); // Utf8 f, ()V, NameAndType
        assert_eq!(m, n + 5);
        assert_eq!(cb.methodref("p/A", "f", "()V").unwrap(), m);
        // a runtime call: its own entries, even for a name the pool has
        let r = cb.runtime_methodref("p/A", "f", "()V").unwrap();
        assert_eq!(r, m + 3); // Utf8 p/A, Class; f, ()V and their NameAndType are appended
        assert_eq!(cb.runtime_methodref("p/A", "f", "()V").unwrap(), r);
        assert_eq!(cb.integer(8).unwrap(), r + 1);
        assert_eq!(cb.count(), r + 2);
    }

    #[test]
    fn member_ref_bytes_agrees_with_member_ref() {
        let b = pool_bytes(&[
            utf8(b"p/A"),                              // 1
            (tag::CLASS, 1u16.to_be_bytes().to_vec()), // 2
            utf8(b"f"),                                // 3
            utf8(b"I"),                                // 4
            refs(tag::NAME_AND_TYPE, 3, 4),            // 5
            refs(tag::FIELDREF, 2, 5),                 // 6
            utf8(b"\xC0\xBCinit>"),                    // 7: overlong '<'
            utf8(b"()V"),                              // 8
            refs(tag::NAME_AND_TYPE, 7, 8),            // 9
            refs(tag::METHODREF, 2, 9),                // 10
            refs(tag::INTERFACE_METHODREF, 2, 5),      // 11
            (tag::INTEGER, vec![0, 0, 0, 7]),          // 12
        ]);
        let mut r = Reader::new(&b);
        let cp = ConstantPool::parse(&b, &mut r, 61).unwrap();
        for i in 0..15u16 {
            let text = cp.member_ref(i);
            let raw = cp.member_ref_bytes(i);
            match (&text, &raw) {
                (Ok(m), Ok(r)) => {
                    assert_eq!(m.tag, r.tag, "#{i}");
                    assert_eq!(m.class, decode_mutf8(r.class), "#{i}");
                    assert_eq!(m.name, decode_mutf8(r.name), "#{i}");
                    assert_eq!(m.desc, decode_mutf8(r.desc), "#{i}");
                }
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "#{i}"),
                _ => panic!("#{i}: {text:?} vs {raw:?}"),
            }
        }
        assert_eq!(cp.member_ref_bytes(10).unwrap().name, b"\xC0\xBCinit>");
        // an entry of another kind, or none, is an error that names both
        assert_eq!(
            cp.utf8_bytes(12).unwrap_err().to_string(),
            "constant #12 is Integer, expected Utf8"
        );
        assert_eq!(
            cp.class_name(40).unwrap_err().to_string(),
            "constant #40 is out of range, expected Class"
        );
        assert_eq!(cp.member_ref(10).unwrap().name, "<init>");
    }
}
