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
}

impl<'c, 'a> ClassWriter<'c, 'a> {
    pub fn new(cf: &'c ClassFile<'a>) -> ClassWriter<'c, 'a> {
        ClassWriter {
            cf,
            cp: CpBuilder::new(&cf.cp),
            code: vec![None; cf.methods.len()],
        }
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
        self.cp.is_unchanged() && self.code.iter().all(|c| c.is_none())
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
        // access .. fields, methods_count
        out.extend_from_slice(&b[cf.header_end..cf.methods_start + 2]);
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
        out.extend_from_slice(&b[cf.methods_end..]);
        Ok(out)
    }
}

/// Parses and writes a class without edits (the identity round trip).
pub fn round_trip(bytes: &[u8]) -> Result<Vec<u8>> {
    let cf = ClassFile::parse(bytes)?;
    ClassWriter::new(&cf).finish()
}
