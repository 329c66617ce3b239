#![forbid(unsafe_code)]
#![allow(clippy::collapsible_match, clippy::type_complexity)]
//! bci-verify: an independent judge of class files.
//!
//! * [`verify_class`]: structural checks for every version, plus the type-checking verifier
//!   (JVMS §4.10.1, StackMapTable) for class files of version 50 and later.
//! * [`ClassPath`]: a [`ClassHierarchy`] over dirs, jars and the running JDK's image.
//! * [`oracle`]: HotSpot itself as the judge (`java -Xverify:all`).
//! * [`crosscheck`]: structural agreement with two independent parsers (cafebabe, ristretto_classfile).
//! * [`cli`]: `bci verify`.
//!
//! It does not use the `bci` crate: it judges that crate's output.

pub mod classfile;
pub mod cli;
pub mod crosscheck;
pub mod hierarchy;
pub mod mutate;
pub mod oracle;
pub mod structure;
pub mod typecheck;
pub mod types;

pub use hierarchy::ClassPath;

use classfile::{mutf8_to_string, ClassFile, Code, ACC_ABSTRACT, ACC_INTERFACE, ACC_NATIVE};
use std::collections::HashSet;
use std::fmt;

/// Subtype questions the verifier asks. Implementations must be thread-safe.
pub trait ClassHierarchy: Send + Sync {
    /// Internal name of the superclass; `None` for an unknown class or `java/lang/Object`.
    fn super_class(&self, internal_name: &str) -> Option<String>;
    /// `None` = unknown class.
    fn is_interface(&self, internal_name: &str) -> Option<bool>;
    /// Find a member by walking `class` and its superclasses: (declaring class, access flags).
    /// Used for the `protected` checks (JVMS §4.10.1.8); `None` (the default) skips them.
    fn find_member(
        &self,
        _class: &str,
        _name: &str,
        _desc: &str,
        _is_method: bool,
    ) -> Option<(String, u16)> {
        None
    }
}

/// A hierarchy that knows nothing: every class is unknown (the verifier is then lenient on subtyping).
pub struct NoHierarchy;
impl ClassHierarchy for NoHierarchy {
    fn super_class(&self, _: &str) -> Option<String> {
        None
    }
    fn is_interface(&self, _: &str) -> Option<bool> {
        None
    }
}

/// One verification error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    /// Internal name of the class (`java/util/HashMap`), or `?` if it could not be read.
    pub class: String,
    /// Method name + descriptor (`resize()[Ljava/util/HashMap$Node;`).
    pub method: Option<String>,
    /// Bytecode offset.
    pub offset: Option<u32>,
    pub message: String,
}

impl fmt::Display for VerifyError {
    /// `pkg.Cls.method(desc) @offset: expected X, found Y`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.class.replace('/', "."))?;
        if let Some(m) = &self.method {
            write!(f, ".{m}")?;
        }
        if let Some(o) = self.offset {
            write!(f, " @{o}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for VerifyError {}

/// Verify one class file. Empty result = valid. Never panics, whatever the bytes.
///
/// Class files of version 50 fall back to HotSpot's inference verifier when type checking fails;
/// this verifier has no inference, so for version 50 only structural errors are reported.
pub fn verify_class(bytes: &[u8], hierarchy: &dyn ClassHierarchy) -> Vec<VerifyError> {
    verify_class_counting(bytes, hierarchy).errors
}

/// What [`verify_class_counting`] found, and what it could not decide.
#[derive(Debug, Default)]
pub struct Verdict {
    pub errors: Vec<VerifyError>,
    /// Reference assignability checks decided by assumption: a class not found in the
    /// hierarchy taken as assignable ([`types::Hier::assumed`]).
    pub assumed: usize,
    /// Methods with subroutines (jsr/ret, class files before version 51) whose types were not
    /// checked: the inference verifier here has no subroutine analysis (HotSpot's has).
    pub unchecked: usize,
    /// The bytes do not parse as a class file (the error's class name is a guess, or `?`):
    /// callers name the class by where it is.
    pub unreadable: bool,
}

/// [`verify_class`], also counting what it could not decide ([`Verdict`]).
pub fn verify_class_counting(bytes: &[u8], hierarchy: &dyn ClassHierarchy) -> Verdict {
    let cf = match ClassFile::parse(bytes) {
        Ok(cf) => cf,
        Err(e) => {
            let class = crosscheck::class_name_guess(bytes).unwrap_or_else(|| "?".into());
            return Verdict {
                errors: vec![VerifyError {
                    class,
                    method: None,
                    offset: None,
                    message: format!("format error: {e}"),
                }],
                unreadable: true,
                ..Verdict::default()
            };
        }
    };
    let class = mutf8_to_string(cf.this_class);
    let mut errs = Vec::new();
    let mut unchecked = 0;
    let is_iface = cf.access & ACC_INTERFACE != 0;
    let hier = types::Hier::new(hierarchy, cf.this_class, cf.super_class, is_iface);
    if let Err(e) = structure::check(&cf) {
        errs.push(VerifyError {
            class: class.clone(),
            method: None,
            offset: None,
            message: format!("format error: {e}"),
        });
    }
    let mut seen: HashSet<(&[u8], &[u8]), types::FxBuild> = HashSet::default();
    for f in &cf.fields {
        if !seen.insert((f.name, f.desc)) {
            errs.push(VerifyError {
                class: class.clone(),
                method: None,
                offset: None,
                message: format!("duplicate field {}", mutf8_to_string(f.name)),
            });
        }
    }
    seen.clear();
    for m in &cf.methods {
        let mname = || {
            Some(format!(
                "{}{}",
                mutf8_to_string(m.name),
                mutf8_to_string(m.desc)
            ))
        };
        let err = |offset: Option<u32>, message: String| VerifyError {
            class: class.clone(),
            method: mname(),
            offset,
            message,
        };
        if !seen.insert((m.name, m.desc)) {
            errs.push(err(None, "duplicate method name and signature".into()));
            continue;
        }
        let codes: Vec<_> = m.attributes.iter().filter(|a| a.name == b"Code").collect();
        // HotSpot keeps only ACC_STATIC (and ACC_STRICT) of a <clinit>'s flags
        let needs_code = m.name == b"<clinit>" || m.access & (ACC_ABSTRACT | ACC_NATIVE) == 0;
        if needs_code != (codes.len() == 1) || codes.len() > 1 {
            errs.push(err(
                None,
                format!(
                    "expected {} Code attribute, found {}",
                    if needs_code { "one" } else { "no" },
                    codes.len()
                ),
            ));
            continue;
        }
        let Some(code_attr) = codes.first() else {
            continue;
        };
        let code = match Code::parse(code_attr.data, &cf.cp) {
            Ok(c) => c,
            Err(e) => {
                errs.push(err(None, format!("format error: {e}")));
                continue;
            }
        };
        if let Err(e) = check_code_attributes(&code) {
            errs.push(err(None, format!("format error: {e}")));
            continue;
        }
        let cx = typecheck::MethodCtx {
            cf: &cf,
            hier: &hier,
            m,
            code: &code,
        };
        let starts = match typecheck::scan_code(&cx) {
            Ok(s) => s,
            Err((o, msg)) => {
                errs.push(err(o, msg));
                continue;
            }
        };
        let infer = |unchecked: &mut usize| {
            if typecheck::has_subroutines(code.code, &starts) {
                *unchecked += 1;
            }
            typecheck::infer(&cx, &starts)
        };
        let result = if cf.major >= 50 {
            match typecheck::typecheck(&cx, &starts) {
                // version 50: HotSpot falls back to the inference verifier when type checking fails
                Err(_) if cf.major == 50 => infer(&mut unchecked),
                r => r,
            }
        } else {
            infer(&mut unchecked)
        };
        if let Err((o, msg)) = result {
            errs.push(err(o, msg));
        }
    }
    Verdict {
        errors: errs,
        assumed: hier.assumed(),
        unchecked,
        unreadable: false,
    }
}

/// Verify every class file under a dir (plain or module layout) or in a jar, or one class file. The hierarchy is
/// `path` itself, then `classpath`, then (with `include_running_jdk`) the running JDK.
/// Returns (number of classes, errors).
pub fn verify_path(
    path: &std::path::Path,
    classpath: &[std::path::PathBuf],
    include_running_jdk: bool,
) -> std::io::Result<(usize, Vec<VerifyError>)> {
    let mut entries = vec![path.to_path_buf()];
    entries.extend_from_slice(classpath);
    let mut cp = ClassPath::new(&entries, include_running_jdk)?;
    let classes = ClassPath::read_all(path)?;
    for (_, b) in &classes {
        cp.add_class_bytes(b);
    }
    let mut errs = Vec::new();
    for (_, b) in &classes {
        errs.extend(verify_class(b, &cp));
    }
    Ok((classes.len(), errs))
}

/// Checks of the attributes nested in Code that HotSpot's class-file parser makes.
fn check_code_attributes(code: &Code<'_>) -> classfile::Res<()> {
    use classfile::{ferr, Reader};
    let len = code.code.len();
    for a in &code.attributes {
        match a.name {
            b"LineNumberTable" => {
                let mut r = Reader::within(a.data, "LineNumberTable");
                let n = r.u2()?;
                for _ in 0..n {
                    let pc = r.u2()? as usize;
                    r.u2()?;
                    if pc >= len {
                        return ferr(format!("invalid pc {pc} in LineNumberTable"));
                    }
                }
                if r.remaining() != 0 {
                    return ferr("LineNumberTable length mismatch");
                }
            }
            b"LocalVariableTable" | b"LocalVariableTypeTable" => {
                let mut r = Reader::within(a.data, "local variable table");
                let n = r.u2()?;
                for _ in 0..n {
                    let start = r.u2()? as usize;
                    let l = r.u2()? as usize;
                    r.u2()?;
                    r.u2()?;
                    r.u2()?;
                    if start >= len || start + l > len {
                        return ferr(format!(
                            "invalid start_pc/length {start}/{l} in local variable table"
                        ));
                    }
                }
                if r.remaining() != 0 {
                    return ferr("local variable table length mismatch");
                }
            }
            _ => {}
        }
    }
    Ok(())
}
