//! The class file: a borrowed structural view. Members and attributes keep their byte spans so
//! the writer can copy untouched parts as raw ranges. Method bodies are decoded lazily.

use crate::cp::ConstantPool;
use crate::error::{Context, Error, Result};
use crate::reader::Reader;
use std::borrow::Cow;
use std::ops::Range;

pub const ACC_PUBLIC: u16 = 0x0001;
pub const ACC_PRIVATE: u16 = 0x0002;
pub const ACC_PROTECTED: u16 = 0x0004;
pub const ACC_STATIC: u16 = 0x0008;
pub const ACC_FINAL: u16 = 0x0010;
pub const ACC_SYNCHRONIZED: u16 = 0x0020;
pub const ACC_BRIDGE: u16 = 0x0040;
pub const ACC_VARARGS: u16 = 0x0080;
pub const ACC_NATIVE: u16 = 0x0100;
pub const ACC_INTERFACE: u16 = 0x0200;
pub const ACC_ABSTRACT: u16 = 0x0400;
pub const ACC_SYNTHETIC: u16 = 0x1000;
pub const ACC_ANNOTATION: u16 = 0x2000;
pub const ACC_ENUM: u16 = 0x4000;
pub const ACC_MODULE: u16 = 0x8000;

/// Newest class-file major version we accept (Java 25).
pub const MAX_MAJOR: u16 = 69;

/// A raw attribute: its name index and its body, with the body's absolute offset.
#[derive(Clone, Copy, Debug)]
pub struct Attribute<'a> {
    pub name_index: u16,
    pub data: &'a [u8],
    /// Absolute offset of `data` in the class bytes.
    pub offset: usize,
}

impl<'a> Attribute<'a> {
    /// Span of the whole attribute (header included) in the class bytes.
    pub fn span(&self) -> Range<usize> {
        self.offset - 6..self.offset + self.data.len()
    }
}

/// A field or method.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    pub access: u16,
    pub name_index: u16,
    pub descriptor_index: u16,
    pub attributes: Vec<Attribute<'a>>,
    /// Span of the whole member_info in the class bytes.
    pub span: Range<usize>,
}

#[derive(Clone)]
pub struct ClassFile<'a> {
    pub bytes: &'a [u8],
    pub minor: u16,
    pub major: u16,
    pub cp: ConstantPool<'a>,
    pub access: u16,
    pub this_class: u16,
    pub super_class: u16,
    pub interfaces: Vec<u16>,
    pub fields: Vec<Member<'a>>,
    pub methods: Vec<Member<'a>>,
    pub attributes: Vec<Attribute<'a>>,
    /// Offset of access_flags (end of the constant pool).
    pub header_end: usize,
    /// Offset of methods_count.
    pub methods_start: usize,
    /// Offset of the class attributes_count.
    pub methods_end: usize,
}

fn parse_attributes<'a>(r: &mut Reader<'a>, cp: &ConstantPool<'a>) -> Result<Vec<Attribute<'a>>> {
    let n = r.u16()? as usize;
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let at = r.abs();
        let name_index = r.u16()?;
        if cp.tag(name_index) != Some(crate::cp::tag::UTF8) {
            return Err(Error::format(format!(
                "attribute {i}: name #{name_index} is not a Utf8 constant"
            ))
            .at(at));
        }
        let len = r.u32()? as usize;
        let offset = r.abs();
        let data = r.bytes(len).map_err(|e| {
            e.context(format!(
                "attribute {}",
                cp.utf8(name_index).unwrap_or(Cow::Borrowed("?"))
            ))
        })?;
        v.push(Attribute {
            name_index,
            data,
            offset,
        });
    }
    Ok(v)
}

impl<'a> ClassFile<'a> {
    /// Parses the class structure. Constant-pool references are checked; method bodies are not
    /// decoded (see [`ClassFile::check`] and [`crate::code::CodeAttr::parse`]).
    pub fn parse(bytes: &'a [u8]) -> Result<ClassFile<'a>> {
        Self::parse_inner(bytes).map_err(|e| e.context("class file"))
    }

    fn parse_inner(bytes: &'a [u8]) -> Result<ClassFile<'a>> {
        let mut r = Reader::new(bytes);
        let magic = r.u32()?;
        if magic != 0xCAFE_BABE {
            return Err(Error::format(format!("bad magic 0x{magic:08x}")).at(0));
        }
        let minor = r.u16()?;
        let major = r.u16()?;
        if !(45..=MAX_MAJOR).contains(&major) {
            return Err(Error::new(
                crate::ErrorKind::Unsupported,
                format!("class-file version {major}.{minor} (supported: 45.0 to {MAX_MAJOR}.x)"),
            )
            .at(6));
        }
        let cp = ConstantPool::parse(bytes, &mut r, major).ctx(|| "constant pool")?;
        let header_end = r.abs();
        let access = r.u16()?;
        let this_class = r.u16()?;
        let super_class = r.u16()?;
        if cp.tag(this_class) != Some(crate::cp::tag::CLASS) {
            return Err(
                Error::format(format!("this_class #{this_class} is not a Class constant"))
                    .at(header_end + 2),
            );
        }
        if super_class != 0 && cp.tag(super_class) != Some(crate::cp::tag::CLASS) {
            return Err(Error::format(format!(
                "super_class #{super_class} is not a Class constant"
            ))
            .at(header_end + 4));
        }
        let name = cp.class_name(this_class)?;
        let ctx = |e: Error| e.context(name.to_string());
        let n = r.u16().map_err(ctx)? as usize;
        let mut interfaces = Vec::with_capacity(n);
        for _ in 0..n {
            let i = r.u16().map_err(ctx)?;
            if cp.tag(i) != Some(crate::cp::tag::CLASS) {
                return Err(ctx(Error::format(format!(
                    "interface #{i} is not a Class constant"
                ))
                .at(r.abs() - 2)));
            }
            interfaces.push(i);
        }
        let fields = Self::parse_members(&mut r, &cp, "field").map_err(ctx)?;
        let methods_start = r.abs();
        let methods = Self::parse_members(&mut r, &cp, "method").map_err(ctx)?;
        let methods_end = r.abs();
        let attributes =
            parse_attributes(&mut r, &cp).map_err(|e| ctx(e.context("class attributes")))?;
        if !r.is_empty() {
            return Err(ctx(Error::format(format!(
                "{} extra bytes after the class attributes",
                r.remaining()
            ))
            .at(r.abs())));
        }
        Ok(ClassFile {
            bytes,
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
            header_end,
            methods_start,
            methods_end,
        })
    }

    fn parse_members(
        r: &mut Reader<'a>,
        cp: &ConstantPool<'a>,
        what: &str,
    ) -> Result<Vec<Member<'a>>> {
        let n = r.u16()? as usize;
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            let start = r.abs();
            let access = r.u16()?;
            let name_index = r.u16()?;
            let descriptor_index = r.u16()?;
            for (idx, w) in [(name_index, "name"), (descriptor_index, "descriptor")] {
                if cp.tag(idx) != Some(crate::cp::tag::UTF8) {
                    return Err(Error::format(format!(
                        "{what} {i}: {w} #{idx} is not a Utf8 constant"
                    ))
                    .at(start));
                }
            }
            let attributes = parse_attributes(r, cp).map_err(|e| {
                e.context(format!(
                    "{}{}",
                    cp.utf8(name_index).unwrap_or_default(),
                    cp.utf8(descriptor_index).unwrap_or_default()
                ))
            })?;
            v.push(Member {
                access,
                name_index,
                descriptor_index,
                attributes,
                span: start..r.abs(),
            });
        }
        Ok(v)
    }

    pub fn name(&self) -> Result<Cow<'a, str>> {
        self.cp.class_name(self.this_class)
    }
    pub fn super_name(&self) -> Result<Option<Cow<'a, str>>> {
        if self.super_class == 0 {
            Ok(None)
        } else {
            self.cp.class_name(self.super_class).map(Some)
        }
    }
    pub fn member_name(&self, m: &Member<'a>) -> Cow<'a, str> {
        self.cp.utf8(m.name_index).unwrap_or_default()
    }
    pub fn member_desc(&self, m: &Member<'a>) -> Cow<'a, str> {
        self.cp.utf8(m.descriptor_index).unwrap_or_default()
    }
    /// `Class.name(desc)` for error paths.
    pub fn method_path(&self, m: &Member<'a>) -> String {
        format!(
            "{}.{}{}",
            self.name().unwrap_or_default(),
            self.member_name(m),
            self.member_desc(m)
        )
    }
    /// The first method named `name` (with descriptor `desc` when given).
    pub fn method(&self, name: &str, desc: Option<&str>) -> Option<&Member<'a>> {
        self.method_index(name, desc).map(|k| &self.methods[k])
    }
    /// The index in [`ClassFile::methods`] of [`ClassFile::method`]`(name, desc)`.
    pub fn method_index(&self, name: &str, desc: Option<&str>) -> Option<usize> {
        self.methods.iter().position(|m| {
            self.member_name(m) == name && desc.is_none_or(|d| self.member_desc(m) == d)
        })
    }
    /// The parsed Code attribute of [`ClassFile::method`]`(name, desc)`: None when there is no
    /// such method or it has no code.
    pub fn method_code(
        &self,
        name: &str,
        desc: Option<&str>,
    ) -> Result<Option<crate::CodeAttr<'a>>> {
        let Some(m) = self.method(name, desc) else {
            return Ok(None);
        };
        match self.find_attr(&m.attributes, "Code") {
            Some((_, a)) => crate::CodeAttr::parse(self, a).map(Some),
            None => Ok(None),
        }
    }
    /// The attribute named `name` among `attrs`.
    pub fn find_attr(&self, attrs: &[Attribute<'a>], name: &str) -> Option<(usize, Attribute<'a>)> {
        attrs
            .iter()
            .enumerate()
            .find(|(_, a)| {
                self.cp
                    .utf8_bytes(a.name_index)
                    .is_ok_and(|n| n == name.as_bytes())
            })
            .map(|(i, a)| (i, *a))
    }
    /// The name of an attribute.
    pub fn attr_name(&self, a: &Attribute<'a>) -> Cow<'a, str> {
        self.cp.utf8(a.name_index).unwrap_or_default()
    }
    /// The SourceFile attribute's value.
    pub fn source_file(&self) -> Option<Cow<'a, str>> {
        let (_, a) = self.find_attr(&self.attributes, "SourceFile")?;
        if a.data.len() != 2 {
            return None;
        }
        self.cp
            .utf8(u16::from_be_bytes([a.data[0], a.data[1]]))
            .ok()
    }

    /// Full format check: decodes every method body (instructions, exception table, frames,
    /// line and local-variable tables) and the class attributes the rewriter depends on.
    pub fn check(&self) -> Result<()> {
        let name = self.name()?;
        for m in &self.methods {
            self.check_method(m)
                .map_err(|e| e.context(self.method_path(m)))?;
            self.check_member_attrs(m, true)
                .map_err(|e| e.context(self.method_path(m)))?;
        }
        for f in &self.fields {
            self.check_member_attrs(f, false).map_err(|e| {
                e.context(format!("field {}", self.member_name(f)))
                    .context(name.to_string())
            })?;
        }
        for a in &self.attributes {
            self.check_class_attr(a).map_err(|e| {
                e.context(self.attr_name(a).to_string())
                    .context(name.to_string())
            })?;
        }
        if let Some((_, a)) = self.find_attr(&self.attributes, "BootstrapMethods") {
            crate::attrs::check_bootstrap_methods(a.data, &self.cp, a.offset)
                .map_err(|e| e.context("BootstrapMethods").context(name.to_string()))?;
        }
        Ok(())
    }

    /// Checks that `data` is a u16 count followed by that many u16 indices of constants tagged
    /// `tag` (or a fixed `len` of single indices when `counted` is false).
    fn check_indices(
        &self,
        a: &Attribute<'a>,
        counted: bool,
        width: usize,
        tags: &[&[u8]],
    ) -> Result<()> {
        use crate::reader::be16;
        let d = a.data;
        let (n, start) = if counted {
            if d.len() < 2 {
                return Err(Error::format("attribute too short").at(a.offset));
            }
            (be16(d, 0) as usize, 2)
        } else {
            (1, 0)
        };
        if d.len() != start + n * width {
            return Err(Error::format(format!(
                "attribute length {} does not match {n} entries",
                d.len()
            ))
            .at(a.offset));
        }
        for k in 0..n {
            for (j, allowed) in tags.iter().enumerate() {
                let at = start + k * width + 2 * j;
                let idx = be16(d, at);
                let t = self.cp.tag(idx);
                let ok =
                    (idx == 0 && allowed.contains(&0)) || t.is_some_and(|t| allowed.contains(&t));
                if !ok {
                    return Err(Error::format(format!(
                        "entry {k}: #{idx} is {}",
                        t.map_or("out of range", crate::cp::tag_name)
                    ))
                    .at(a.offset + at));
                }
            }
        }
        Ok(())
    }

    fn check_member_attrs(&self, m: &Member<'a>, method: bool) -> Result<()> {
        use crate::cp::tag;
        for a in &m.attributes {
            let n = self.attr_name(a);
            let r = match (&*n, method) {
                ("Exceptions", true) => self.check_indices(a, true, 2, &[&[tag::CLASS]]),
                ("Signature", _) => self.check_indices(a, false, 2, &[&[tag::UTF8]]),
                ("ConstantValue", false) => self.check_indices(
                    a,
                    false,
                    2,
                    &[&[
                        tag::INTEGER,
                        tag::FLOAT,
                        tag::LONG,
                        tag::DOUBLE,
                        tag::STRING,
                    ]],
                ),
                _ => Ok(()),
            };
            r.map_err(|e| e.context(n.to_string()))?;
        }
        Ok(())
    }

    fn check_class_attr(&self, a: &Attribute<'a>) -> Result<()> {
        use crate::cp::tag;
        match &*self.attr_name(a) {
            "SourceFile" | "Signature" => self.check_indices(a, false, 2, &[&[tag::UTF8]]),
            "NestHost" => self.check_indices(a, false, 2, &[&[tag::CLASS]]),
            "NestMembers" | "PermittedSubclasses" => {
                self.check_indices(a, true, 2, &[&[tag::CLASS]])
            }
            "EnclosingMethod" => {
                self.check_indices(a, false, 4, &[&[tag::CLASS], &[0, tag::NAME_AND_TYPE]])
            }
            "InnerClasses" => {
                // inner_class_info, outer_class_info (or 0), inner_name (or 0), access flags
                let d = a.data;
                if d.len() < 2 || d.len() != 2 + 8 * crate::reader::be16(d, 0) as usize {
                    return Err(
                        Error::format("attribute length does not match its entries").at(a.offset)
                    );
                }
                self.check_indices(
                    a,
                    true,
                    8,
                    &[&[tag::CLASS], &[0, tag::CLASS], &[0, tag::UTF8]],
                )
            }
            _ => Ok(()),
        }
    }

    fn check_method(&self, m: &Member<'a>) -> Result<()> {
        let code = self.find_attr(&m.attributes, "Code");
        let abstract_or_native = m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0;
        match (code, abstract_or_native) {
            (Some(_), true) => Err(Error::format(
                "abstract or native method has a Code attribute",
            )),
            (None, false) => Err(Error::format(
                "method without ACC_ABSTRACT or ACC_NATIVE has no Code attribute",
            )),
            (None, true) => Ok(()),
            (Some((_, a)), false) => {
                let code = crate::code::CodeAttr::parse(self, a).ctx(|| "Code")?;
                code.check(self).ctx(|| "Code")
            }
        }
    }
}
