//! bci: the JVM class-file format — read, edit, write.
//!
//! * [`ClassFile::parse`] borrows the input, keeps raw constant-pool indices and byte spans,
//!   and decodes method bodies lazily.
//! * [`ClassWriter`] starts from the original bytes: the constant pool is copied and only
//!   appended to ([`CpBuilder`] de-duplicates), untouched methods are copied as raw bytes, so
//!   parse → write without edits is byte-identical.
//! * [`MethodEditor`] edits one method by instruction labels: insert code at entry, before or
//!   after instructions, before returns/throws, a catch-all handler, new locals; on finish it
//!   relocates everything, widens overflowing jumps, recomputes max_stack/max_locals and emits
//!   the frames new branch targets need.
//! * One opcode table ([`opcodes`]) drives decoding, encoding and stack effects.
#![forbid(unsafe_code)]

pub mod attrs;
pub mod class;
pub mod code;
pub mod cp;
pub mod desc;
pub mod edit;
pub mod error;
pub mod frames;
pub mod opcodes;
pub mod reader;
pub mod sim;
pub mod snippet;
pub mod writer;

pub use class::{Attribute, ClassFile, Member};
pub use code::{CodeAttr, Handler, Insn};
pub use cp::{ConstantPool, CpBuilder};
pub use edit::MethodEditor;
pub use error::{Error, ErrorKind, Result};
pub use frames::{Frame, VType};
pub use snippet::Snippet;
pub use writer::{round_trip, ClassWriter};
