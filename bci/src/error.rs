//! Errors that carry a path (class → method → attribute → entry) and a byte offset.

use std::fmt;

/// An error reading, editing or writing a class file.
///
/// Displayed as `java/util/HashMap.resize()V: Code: StackMapTable entry 3: bad offset 0x41`:
/// the context chain (outermost first), the message, and the byte offset when one is known.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<Inner>);

#[derive(Clone, PartialEq, Eq, Debug)]
struct Inner {
    kind: ErrorKind,
    path: Vec<String>,
    offset: Option<usize>,
    message: String,
}

/// What went wrong, coarsely: callers match on this, humans read the message.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ErrorKind {
    /// The input ends before a structure it announces.
    Truncated,
    /// The bytes break a rule of JVMS chapter 4.
    Format,
    /// A class-file version or feature we do not handle.
    Unsupported,
    /// The edited method or class exceeds a JVM limit (code > 65535 bytes, > 65535 constants).
    TooLarge,
    /// An edit request that does not fit the method (e.g. no super() call in a constructor).
    Edit,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error(Box::new(Inner {
            kind,
            path: Vec::new(),
            offset: None,
            message: message.into(),
        }))
    }
    pub fn format(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Format, message)
    }
    pub fn truncated(offset: usize, need: usize) -> Error {
        Error::new(
            ErrorKind::Truncated,
            format!("unexpected end of data (need {need} more bytes)"),
        )
        .at(offset)
    }
    /// Sets the byte offset if none is set yet (the innermost offset wins).
    pub fn at(mut self, offset: usize) -> Error {
        if self.0.offset.is_none() {
            self.0.offset = Some(offset);
        }
        self
    }
    /// Prepends one level of context (called from inner to outer).
    pub fn context(mut self, ctx: impl Into<String>) -> Error {
        self.0.path.insert(0, ctx.into());
        self
    }
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }
    /// Whether the input breaks the class-file rules ([`ErrorKind::Format`],
    /// [`ErrorKind::Truncated`]): the JVM rejects it too, and a rewrite must leave the whole
    /// class as it is (rewriting the rest could not make it load, and rewriting the broken part
    /// could make it load).
    pub fn is_invalid_input(&self) -> bool {
        matches!(self.0.kind, ErrorKind::Format | ErrorKind::Truncated)
    }
    pub fn offset(&self) -> Option<usize> {
        self.0.offset
    }
    pub fn path(&self) -> &[String] {
        &self.0.path
    }
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.0.path {
            write!(f, "{p}: ")?;
        }
        f.write_str(&self.0.message)?;
        if let Some(o) = self.0.offset {
            write!(f, " at offset 0x{o:x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?}: {self})", self.0.kind)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds context to the error of a `Result`, lazily.
pub trait Context<T> {
    fn ctx<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T>;
}

impl<T> Context<T> for Result<T> {
    #[inline]
    fn ctx<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| e.context(f()))
    }
}
