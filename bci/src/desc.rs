//! Field and method descriptors (JVMS 4.3).

use crate::error::{Error, Result};

/// Length of the field descriptor starting at `d[i]`, or None if malformed.
fn field_len(d: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    while j < d.len() && d[j] == b'[' {
        j += 1;
    }
    if j - i > 255 {
        return None;
    }
    match *d.get(j)? {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' => Some(j + 1 - i),
        b'L' => {
            let semi = d[j..].iter().position(|&c| c == b';')?;
            if semi < 2 {
                return None;
            }
            Some(j + semi + 1 - i)
        }
        _ => None,
    }
}

/// Stack/local slots of a field descriptor (or return type): 0 for V, 2 for J/D, else 1.
pub fn slots(d: &str) -> u8 {
    match d.as_bytes().first() {
        Some(b'V') => 0,
        Some(b'J' | b'D') => 2,
        _ => 1,
    }
}

/// A parsed method descriptor: parameter descriptors and return descriptor, borrowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodDesc<'d> {
    pub params: Vec<&'d str>,
    pub ret: &'d str,
}

impl<'d> MethodDesc<'d> {
    pub fn parse(desc: &'d str) -> Result<MethodDesc<'d>> {
        let d = desc.as_bytes();
        let bad = || Error::format(format!("malformed method descriptor {desc:?}"));
        if d.first() != Some(&b'(') {
            return Err(bad());
        }
        let mut i = 1;
        let mut params = Vec::new();
        while i < d.len() && d[i] != b')' {
            let n = field_len(d, i).ok_or_else(bad)?;
            params.push(&desc[i..i + n]);
            i += n;
        }
        if i >= d.len() {
            return Err(bad());
        }
        i += 1;
        let ret = &desc[i..];
        let ok = ret == "V" || field_len(d, i) == Some(d.len() - i);
        if !ok {
            return Err(bad());
        }
        Ok(MethodDesc { params, ret })
    }
    /// Slots taken by the parameters (not counting `this`).
    pub fn param_slots(&self) -> u16 {
        self.params.iter().map(|p| slots(p) as u16).sum()
    }
    pub fn ret_slots(&self) -> u8 {
        slots(self.ret)
    }
}

/// [`MethodDesc::parse`]`(desc)?.param_slots()` without allocating: the same checks and error.
pub fn method_param_slots(desc: &str) -> Result<u16> {
    method_param_slots_bytes(desc.as_bytes())
        .ok_or_else(|| Error::format(format!("malformed method descriptor {desc:?}")))
}

/// [`method_param_slots`] on raw bytes; None when the descriptor is malformed (then
/// `method_param_slots` of the decoded text gives the error).
pub fn method_param_slots_bytes(d: &[u8]) -> Option<u16> {
    if d.first() != Some(&b'(') {
        return None;
    }
    let mut i = 1;
    let mut n = 0u16;
    while i < d.len() && d[i] != b')' {
        let l = field_len(d, i)?;
        n = n.wrapping_add(if matches!(d[i], b'J' | b'D') { 2 } else { 1 });
        i += l;
    }
    if i >= d.len() {
        return None;
    }
    i += 1;
    let ok = &d[i..] == b"V" || field_len(d, i) == Some(d.len() - i);
    ok.then_some(n)
}

/// Checks a field descriptor.
pub fn is_field_desc(d: &str) -> bool {
    field_len(d.as_bytes(), 0) == Some(d.len())
}

/// Slots used by arguments and return value of a method descriptor, quickly (no allocation).
pub fn method_slots(desc: &str) -> Result<(u16, u8)> {
    method_slots_bytes(desc.as_bytes())
}

/// [`method_slots`] on raw (modified UTF-8) bytes.
pub fn method_slots_bytes(d: &[u8]) -> Result<(u16, u8)> {
    let bad = || {
        Error::format(format!(
            "malformed method descriptor {:?}",
            String::from_utf8_lossy(d)
        ))
    };
    if d.first() != Some(&b'(') {
        return Err(bad());
    }
    let mut i = 1;
    let mut n = 0u16;
    while i < d.len() && d[i] != b')' {
        let l = field_len(d, i).ok_or_else(bad)?;
        n = n.wrapping_add(if l == 1 && (d[i] == b'J' || d[i] == b'D') {
            2
        } else {
            1
        });
        i += l;
    }
    if i + 1 >= d.len() {
        return Err(bad());
    }
    let ret = match d[i + 1] {
        b'V' => 0,
        b'J' | b'D' => 2,
        _ => 1,
    };
    Ok((n, ret))
}

/// Slots of a field descriptor given as raw bytes.
pub fn slots_bytes(d: &[u8]) -> u8 {
    match d.first() {
        Some(b'V') => 0,
        Some(b'J' | b'D') => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn descriptors() {
        let m = MethodDesc::parse("(IJ[Ljava/lang/String;D[[I)V").unwrap();
        assert_eq!(m.params, vec!["I", "J", "[Ljava/lang/String;", "D", "[[I"]);
        assert_eq!(m.param_slots(), 7);
        assert_eq!(
            method_slots("(IJ[Ljava/lang/String;D[[I)J").unwrap(),
            (7, 2)
        );
        assert!(MethodDesc::parse("(L;)V").is_err());
        assert!(MethodDesc::parse("(I").is_err());
        assert!(MethodDesc::parse("()").is_err());
        assert!(MethodDesc::parse("()II").is_err());
        for d in [
            "(IJ[Ljava/lang/String;D[[I)V",
            "()J",
            "(L;)V",
            "(I",
            "()",
            "()II",
            "x",
            "(D)",
        ] {
            assert_eq!(
                method_param_slots_bytes(d.as_bytes()),
                MethodDesc::parse(d).ok().map(|m| m.param_slots())
            );
            assert_eq!(
                method_param_slots(d).map_err(|e| e.to_string()),
                MethodDesc::parse(d)
                    .map(|m| m.param_slots())
                    .map_err(|e| e.to_string())
            );
        }
        assert!(is_field_desc("[[Ljava/lang/Object;"));
        assert!(!is_field_desc("[["));
    }
}
