//! Rules (TOML) select classes and methods and name probes; [`instrument`] turns them into
//! edits through bci. Pure: bytes in, bytes out.
#![forbid(unsafe_code)]

mod glob;
mod rules;

pub use glob::Glob;
pub use rules::{Probe, RuleError, Rules};

use bci::class::{ACC_ABSTRACT, ACC_MODULE, ACC_NATIVE};
use bci::{ClassFile, ClassWriter, MethodEditor, Snippet};

/// What the rewriter tells the registry about a method it instruments.
#[derive(Debug, Clone, Copy)]
pub struct MethodInfo<'a> {
    /// Internal class name, e.g. `java/util/HashMap`.
    pub class: &'a str,
    pub name: &'a str,
    pub desc: &'a str,
    pub access: u16,
    pub source_file: Option<&'a str>,
    /// Smallest line number in the method's LineNumberTable.
    pub first_line: Option<u32>,
}

/// Assigns probe ids (dense, chosen by the caller) to instrumented methods.
pub trait ProbeRegistry {
    fn register(&mut self, m: &MethodInfo<'_>) -> u32;
}

/// The result of [`instrument`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No method was selected: use the original bytes.
    Unchanged,
    Rewritten(Vec<u8>),
}

/// An error names the class, method, attribute and offset (see [`bci::Error`]).
pub type RewriteError = bci::Error;

fn first_line(cf: &ClassFile<'_>, m: &bci::Member<'_>) -> Option<u32> {
    let (_, code) = cf.find_attr(&m.attributes, "Code")?;
    let code = bci::CodeAttr::parse(cf, code).ok()?;
    let lnt = code.attributes.iter().find(|a| {
        cf.cp
            .utf8_bytes(a.name_index)
            .is_ok_and(|n| n == b"LineNumberTable")
    })?;
    let t = bci::attrs::LineNumbers::parse(lnt.data, lnt.offset).ok()?;
    t.entries.iter().map(|e| e.1 as u32).min()
}

/// Instruments the methods of a class that `rules` select.
pub fn instrument(
    class_bytes: &[u8],
    rules: &Rules,
    reg: &mut dyn ProbeRegistry,
) -> Result<Outcome, RewriteError> {
    let cf = ClassFile::parse(class_bytes)?;
    let name = cf.name()?;
    if cf.access & ACC_MODULE != 0 || !rules.selects_class(&name) {
        return Ok(Outcome::Unchanged);
    }
    let source = cf.source_file();
    let runtime = rules.runtime_class();
    let mut w = ClassWriter::new(&cf);
    let mut changed = false;
    for (k, m) in cf.methods.iter().enumerate() {
        if m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0 {
            continue;
        }
        let mname = cf.member_name(m);
        let mdesc = cf.member_desc(m);
        let probes = rules.probes_for(&name, &mname, &mdesc);
        if probes.is_empty() {
            continue;
        }
        let info = MethodInfo {
            class: &name,
            name: &mname,
            desc: &mdesc,
            access: m.access,
            source_file: source.as_deref(),
            first_line: first_line(&cf, m),
        };
        let id = reg.register(&info) as i32;
        let mut ed = MethodEditor::new(&cf, k)?;
        let call = |cp: &mut bci::CpBuilder<'_>, probe: &str| -> bci::Result<Snippet> {
            let mut s = Snippet::new();
            s.int(cp, id)?;
            s.invokestatic(cp, runtime, probe, "(I)V")?;
            Ok(s)
        };
        if probes.contains(Probe::Enter) {
            let s = call(&mut w.cp, "enter")?;
            ed.insert_entry(&s)?;
        }
        if probes.contains(Probe::Exit) {
            let s = call(&mut w.cp, "exit")?;
            ed.insert_before_returns(|_| Ok(s.clone()))?;
        }
        if probes.contains(Probe::Unwind) {
            let s = call(&mut w.cp, "unwind")?;
            ed.add_catch_all(&s)?;
        }
        let body = ed.finish(&mut w.cp)?;
        w.set_code(k, body)?;
        changed = true;
    }
    if !changed {
        return Ok(Outcome::Unchanged);
    }
    Ok(Outcome::Rewritten(w.finish()?))
}
