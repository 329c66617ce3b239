//! Decoders and encoders for the attributes the rewriter must relocate.

use crate::cp::{tag, ConstantPool};
use crate::error::{Error, Result};
use crate::reader::Reader;

/// LineNumberTable: (start_pc, line).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineNumbers {
    pub entries: Vec<(u16, u16)>,
}

impl LineNumbers {
    pub fn parse(data: &[u8], base: usize) -> Result<LineNumbers> {
        let mut r = Reader::with_base(data, base);
        let n = r.u16()? as usize;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push((r.u16()?, r.u16()?));
        }
        if !r.is_empty() {
            return Err(Error::format("attribute longer than its entries").at(r.abs()));
        }
        Ok(LineNumbers { entries })
    }
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.entries.len() as u16).to_be_bytes());
        for (pc, line) in &self.entries {
            out.extend_from_slice(&pc.to_be_bytes());
            out.extend_from_slice(&line.to_be_bytes());
        }
    }
}

/// One LocalVariableTable / LocalVariableTypeTable entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalVar {
    pub start: u16,
    pub length: u16,
    pub name: u16,
    pub desc: u16,
    pub index: u16,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalVars {
    pub entries: Vec<LocalVar>,
}

impl LocalVars {
    pub fn parse(data: &[u8], base: usize) -> Result<LocalVars> {
        let mut r = Reader::with_base(data, base);
        let n = r.u16()? as usize;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push(LocalVar {
                start: r.u16()?,
                length: r.u16()?,
                name: r.u16()?,
                desc: r.u16()?,
                index: r.u16()?,
            });
        }
        if !r.is_empty() {
            return Err(Error::format("attribute longer than its entries").at(r.abs()));
        }
        Ok(LocalVars { entries })
    }
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.entries.len() as u16).to_be_bytes());
        for e in &self.entries {
            for v in [e.start, e.length, e.name, e.desc, e.index] {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
}

/// Checks BootstrapMethods: method handles and loadable arguments.
pub fn check_bootstrap_methods(data: &[u8], cp: &ConstantPool<'_>, base: usize) -> Result<()> {
    let mut r = Reader::with_base(data, base);
    let n = r.u16()?;
    for k in 0..n {
        let at = r.abs();
        let mh = r.u16()?;
        if cp.tag(mh) != Some(tag::METHOD_HANDLE) {
            return Err(Error::format(format!(
                "bootstrap method {k}: #{mh} is not a MethodHandle"
            ))
            .at(at));
        }
        let na = r.u16()?;
        for _ in 0..na {
            let a = r.u16()?;
            let ok = matches!(
                cp.tag(a),
                Some(
                    tag::INTEGER
                        | tag::FLOAT
                        | tag::LONG
                        | tag::DOUBLE
                        | tag::CLASS
                        | tag::STRING
                        | tag::METHOD_HANDLE
                        | tag::METHOD_TYPE
                        | tag::DYNAMIC
                )
            );
            if !ok {
                return Err(Error::format(format!(
                    "bootstrap method {k}: argument #{a} is not loadable"
                ))
                .at(r.abs() - 2));
            }
        }
    }
    if !r.is_empty() {
        return Err(Error::format("attribute longer than its entries").at(r.abs()));
    }
    Ok(())
}
