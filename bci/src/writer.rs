//! The class writer: starts from the original bytes; the constant pool is copied and appended
//! to; untouched methods and attributes are copied as raw byte ranges.

use crate::class::ClassFile;
use crate::cp::CpBuilder;
use crate::error::{Error, ErrorKind, Result};

pub struct ClassWriter<'c, 'a> {
    cf: &'c ClassFile<'a>,
    pub cp: CpBuilder<'c>,
    /// Replacement Code attribute bodies, per method index.
    code: Vec<Option<Vec<u8>>>,
    /// field_info structures appended after the class's own fields.
    new_fields: Vec<u8>,
    n_new_fields: u16,
    /// method_info structures appended after the class's own methods.
    new_methods: Vec<u8>,
    n_new_methods: u16,
    /// attribute_info structures appended after the class's own attributes.
    new_attrs: Vec<u8>,
    n_new_attrs: u16,
}

impl<'c, 'a> ClassWriter<'c, 'a> {
    pub fn new(cf: &'c ClassFile<'a>) -> ClassWriter<'c, 'a> {
        ClassWriter {
            cf,
            cp: CpBuilder::new(&cf.cp),
            code: vec![None; cf.methods.len()],
            new_fields: Vec::new(),
            n_new_fields: 0,
            new_methods: Vec::new(),
            n_new_methods: 0,
            new_attrs: Vec::new(),
            n_new_attrs: 0,
        }
    }
    /// Appends a field without attributes. A field of the same name and descriptor must not
    /// exist (JVMS 4.5): that is an `Edit` error, as is a full field table.
    pub fn add_field(&mut self, access: u16, name: &str, desc: &str) -> Result<()> {
        let cf = self.cf;
        let exists = cf.fields.iter().any(|f| {
            cf.cp
                .utf8_bytes(f.name_index)
                .is_ok_and(|n| n == name.as_bytes())
                && cf
                    .cp
                    .utf8_bytes(f.descriptor_index)
                    .is_ok_and(|d| d == desc.as_bytes())
        });
        if exists {
            return Err(Error::new(
                ErrorKind::Edit,
                format!("field {name} {desc} exists already"),
            ));
        }
        if cf.fields.len() + self.n_new_fields as usize >= u16::MAX as usize {
            return Err(Error::new(ErrorKind::TooLarge, "too many fields"));
        }
        let n = self.cp.utf8(name)?;
        let d = self.cp.utf8(desc)?;
        for v in [access, n, d, 0] {
            self.new_fields.extend_from_slice(&v.to_be_bytes());
        }
        self.n_new_fields += 1;
        Ok(())
    }
    /// Appends a method with a Code attribute of body `code_attribute_body` (max_stack,
    /// max_locals, code, exception table, attributes) and no other attributes. A method of the
    /// same name and descriptor must not exist.
    pub fn add_method(
        &mut self,
        access: u16,
        name: &str,
        desc: &str,
        code_attribute_body: &[u8],
    ) -> Result<()> {
        let cf = self.cf;
        let exists = cf.methods.iter().any(|m| {
            cf.cp
                .utf8_bytes(m.name_index)
                .is_ok_and(|n| n == name.as_bytes())
                && cf
                    .cp
                    .utf8_bytes(m.descriptor_index)
                    .is_ok_and(|d| d == desc.as_bytes())
        });
        if exists {
            return Err(Error::new(
                ErrorKind::Edit,
                format!("method {name}{desc} exists already"),
            ));
        }
        if cf.methods.len() + self.n_new_methods as usize >= u16::MAX as usize {
            return Err(Error::new(ErrorKind::TooLarge, "too many methods"));
        }
        let body_len = u32::try_from(code_attribute_body.len())
            .map_err(|_| Error::new(ErrorKind::TooLarge, "Code attribute too large"))?;
        let n = self.cp.utf8(name)?;
        let d = self.cp.utf8(desc)?;
        let c = self.cp.utf8("Code")?;
        for v in [access, n, d, 1, c] {
            self.new_methods.extend_from_slice(&v.to_be_bytes());
        }
        self.new_methods.extend_from_slice(&body_len.to_be_bytes());
        self.new_methods.extend_from_slice(code_attribute_body);
        self.n_new_methods += 1;
        Ok(())
    }
    /// Appends a class attribute (its name as a new or existing Utf8 constant).
    pub fn add_attribute(&mut self, name: &str, data: &[u8]) -> Result<()> {
        if self.cf.attributes.len() + self.n_new_attrs as usize >= u16::MAX as usize {
            return Err(Error::new(ErrorKind::TooLarge, "too many class attributes"));
        }
        let len = u32::try_from(data.len())
            .map_err(|_| Error::new(ErrorKind::TooLarge, format!("attribute {name} too large")))?;
        let n = self.cp.utf8(name)?;
        self.new_attrs.extend_from_slice(&n.to_be_bytes());
        self.new_attrs.extend_from_slice(&len.to_be_bytes());
        self.new_attrs.extend_from_slice(data);
        self.n_new_attrs += 1;
        Ok(())
    }
    pub fn class(&self) -> &'c ClassFile<'a> {
        self.cf
    }
    /// Replaces the body of method `k`'s Code attribute.
    pub fn set_code(&mut self, k: usize, code_attribute_body: Vec<u8>) -> Result<()> {
        let slot = self
            .code
            .get_mut(k)
            .ok_or_else(|| Error::new(ErrorKind::Edit, format!("no method #{k}")))?;
        *slot = Some(code_attribute_body);
        Ok(())
    }
    pub fn is_unchanged(&self) -> bool {
        self.cp.is_unchanged()
            && self.code.iter().all(|c| c.is_none())
            && self.n_new_fields == 0
            && self.n_new_methods == 0
            && self.n_new_attrs == 0
    }
    /// The class file bytes.
    pub fn finish(&self) -> Result<Vec<u8>> {
        let cf = self.cf;
        let b = cf.bytes;
        let extra: usize =
            self.code.iter().flatten().map(|c| c.len()).sum::<usize>() + self.cp.appended().len();
        let mut out = Vec::with_capacity(b.len() + extra);
        out.extend_from_slice(&b[..8]);
        out.extend_from_slice(&self.cp.count().to_be_bytes());
        out.extend_from_slice(cf.cp.raw());
        out.extend_from_slice(self.cp.appended());
        if self.n_new_fields == 0 {
            // access .. fields, methods_count
            out.extend_from_slice(&b[cf.header_end..cf.methods_start + 2]);
        } else {
            // access, this, super, interfaces_count, interfaces | fields_count | fields, new
            // fields | methods_count
            let fields_count = cf.header_end + 8 + 2 * cf.interfaces.len();
            out.extend_from_slice(&b[cf.header_end..fields_count]);
            let n = cf.fields.len() as u16 + self.n_new_fields;
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(&b[fields_count + 2..cf.methods_start]);
            out.extend_from_slice(&self.new_fields);
            out.extend_from_slice(&b[cf.methods_start..cf.methods_start + 2]);
        }
        if self.n_new_methods > 0 {
            // methods_count, as copied above, plus the new ones
            let n = cf.methods.len() as u16 + self.n_new_methods;
            let at = out.len() - 2;
            out[at..].copy_from_slice(&n.to_be_bytes());
        }
        for (k, m) in cf.methods.iter().enumerate() {
            match &self.code[k] {
                None => out.extend_from_slice(&b[m.span.clone()]),
                Some(body) => {
                    let (ci, _) = cf.find_attr(&m.attributes, "Code").ok_or_else(|| {
                        Error::new(
                            ErrorKind::Edit,
                            format!("{}: no Code attribute to replace", cf.method_path(m)),
                        )
                    })?;
                    out.extend_from_slice(&b[m.span.start..m.span.start + 8]);
                    for (j, a) in m.attributes.iter().enumerate() {
                        if j == ci {
                            if body.len() > u32::MAX as usize {
                                return Err(Error::new(
                                    ErrorKind::TooLarge,
                                    "Code attribute too large",
                                ));
                            }
                            out.extend_from_slice(&a.name_index.to_be_bytes());
                            out.extend_from_slice(&(body.len() as u32).to_be_bytes());
                            out.extend_from_slice(body);
                        } else {
                            out.extend_from_slice(&b[a.span()]);
                        }
                    }
                }
            }
        }
        out.extend_from_slice(&self.new_methods);
        if self.n_new_attrs == 0 {
            out.extend_from_slice(&b[cf.methods_end..]);
        } else {
            let n = cf.attributes.len() as u16 + self.n_new_attrs;
            out.extend_from_slice(&n.to_be_bytes());
            out.extend_from_slice(&b[cf.methods_end + 2..]);
            out.extend_from_slice(&self.new_attrs);
        }
        Ok(out)
    }
}

/// Parses and writes a class without edits (the identity round trip).
pub fn round_trip(bytes: &[u8]) -> Result<Vec<u8>> {
    let cf = ClassFile::parse(bytes)?;
    ClassWriter::new(&cf).finish()
}
