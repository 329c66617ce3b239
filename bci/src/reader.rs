//! A checked big-endian byte reader that borrows its input. Every read is bounds-checked.

use crate::error::{Error, Result};

#[derive(Clone, Copy)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// Offset of `data[0]` in the enclosing buffer, so errors report absolute offsets.
    base: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader {
            data,
            pos: 0,
            base: 0,
        }
    }
    pub fn with_base(data: &'a [u8], base: usize) -> Reader<'a> {
        Reader { data, pos: 0, base }
    }
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Absolute offset of the cursor (base + pos).
    #[inline]
    pub fn abs(&self) -> usize {
        self.base + self.pos
    }
    /// The unread bytes.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
    #[inline]
    fn need(&self, n: usize) -> Result<()> {
        if self.data.len() - self.pos < n {
            Err(Error::truncated(
                self.abs(),
                n - (self.data.len() - self.pos),
            ))
        } else {
            Ok(())
        }
    }
    #[inline]
    pub fn u8(&mut self) -> Result<u8> {
        self.need(1)?;
        let v = self.data[self.pos];
        self.pos += 1;
        Ok(v)
    }
    #[inline]
    pub fn u16(&mut self) -> Result<u16> {
        self.need(2)?;
        let v = u16::from_be_bytes([self.data[self.pos], self.data[self.pos + 1]]);
        self.pos += 2;
        Ok(v)
    }
    #[inline]
    pub fn u32(&mut self) -> Result<u32> {
        self.need(4)?;
        let d = &self.data[self.pos..self.pos + 4];
        self.pos += 4;
        Ok(u32::from_be_bytes([d[0], d[1], d[2], d[3]]))
    }
    #[inline]
    pub fn i32(&mut self) -> Result<i32> {
        Ok(self.u32()? as i32)
    }
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        self.need(n)?;
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.need(n)?;
        self.pos += n;
        Ok(())
    }
}

#[inline]
pub fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}
#[inline]
pub fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}
