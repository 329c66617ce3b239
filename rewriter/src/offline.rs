//! What offline instrumentation adds to a class besides the probes: the `BciInstrumented`
//! marker attribute (so that neither `bci instrument` nor the agent instruments a class twice)
//! and method ids handed out at run time (`<clinit>` registers the class's method table with the
//! runtime and keeps the returned base in a static final field; each probe adds its method's
//! index in the class to it), so that separately instrumented jars cannot collide.

use bci::class::{ACC_FINAL, ACC_INTERFACE, ACC_PRIVATE, ACC_PUBLIC, ACC_STATIC, ACC_SYNTHETIC};
use bci::{ClassFile, CpBuilder, Snippet};

/// Name of the class attribute `bci instrument` writes on every class it rewrites.
pub const MARKER_ATTR: &str = "BciInstrumented";
/// Version of the marker's layout (its first two bytes).
pub const MARKER_VERSION: u16 = 1;
/// The class offline-instrumented `<clinit>`s call: `register(class, hash, table)I`.
pub const OFFLINE_CLASS: &str = "bci/runtime/Offline";
pub const REGISTER: (&str, &str) = ("register", "(Ljava/lang/String;JLjava/lang/String;)I");
/// The static final int field holding the class's first method id (set by `<clinit>`).
pub const BASE_FIELD: &str = "bci$base";

/// The class id: 64-bit FNV-1a hash of the original class bytes (the class name is part of
/// them). The same bytes give the same id whoever instruments them.
pub fn class_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The marker of a class instrumented by `bci instrument`, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub version: u16,
    /// [`class_hash`] of the class bytes before instrumentation.
    pub hash: u64,
    /// Whether method ids are registered at run time ([`OFFLINE_CLASS`]).
    pub runtime_ids: bool,
    /// Coverage counters (`bci instrument --coverage`), not cpu-times probes: flag bit 1,
    /// written since 2026-11-26 (an older coverage marker reads as `false`).
    pub coverage: bool,
    /// Instrumented methods (name, descriptor), in probe-index order.
    pub methods: Vec<(String, String)>,
}

/// The class's `BciInstrumented` marker, if it has one. `Err` if the class cannot be parsed;
/// `Ok(Some)` with an empty method list if the attribute is there but malformed (it is still
/// ours: such a class is not instrumented again).
pub fn marker(bytes: &[u8]) -> bci::Result<Option<Marker>> {
    let cf = ClassFile::parse(bytes)?;
    Ok(marker_of(&cf))
}

pub(crate) fn marker_of(cf: &ClassFile<'_>) -> Option<Marker> {
    let a = cf.attributes.iter().find(|a| {
        cf.cp
            .utf8_bytes(a.name_index)
            .is_ok_and(|n| n == MARKER_ATTR.as_bytes())
    })?;
    let empty = Marker {
        version: 0,
        hash: 0,
        runtime_ids: false,
        coverage: false,
        methods: Vec::new(),
    };
    Some(parse_marker(cf, a.data).unwrap_or(empty))
}

fn parse_marker(cf: &ClassFile<'_>, d: &[u8]) -> Option<Marker> {
    let u16_at = |i: usize| Some(u16::from_be_bytes([*d.get(i)?, *d.get(i + 1)?]));
    let version = u16_at(0)?;
    let hash = u64::from_be_bytes(d.get(2..10)?.try_into().ok()?);
    let flags = u16_at(10)?;
    let n = u16_at(12)? as usize;
    let mut methods = Vec::with_capacity(n);
    for k in 0..n {
        let at = 14 + 4 * k;
        let name = cf.cp.utf8(u16_at(at)?).ok()?.into_owned();
        let desc = cf.cp.utf8(u16_at(at + 2)?).ok()?.into_owned();
        methods.push((name, desc));
    }
    Some(Marker {
        version,
        hash,
        runtime_ids: flags & 1 != 0,
        coverage: flags & MARKER_COVERAGE != 0,
        methods,
    })
}

/// Flag bit of a marker written by coverage instrumentation.
pub const MARKER_COVERAGE: u16 = 2;

/// The marker attribute's data: version, hash, flags (bit 0: runtime ids; bit 1:
/// [`MARKER_COVERAGE`]), then (name, descriptor) Utf8 indices of the instrumented methods.
pub(crate) fn marker_data(
    cp: &mut CpBuilder<'_>,
    hash: u64,
    runtime_ids: bool,
    coverage: bool,
    methods: &[(String, String)],
) -> bci::Result<Vec<u8>> {
    let n = u16::try_from(methods.len()).map_err(|_| {
        bci::Error::new(bci::ErrorKind::TooLarge, "too many methods for the marker")
    })?;
    let mut d = Vec::with_capacity(14 + 4 * methods.len());
    d.extend_from_slice(&MARKER_VERSION.to_be_bytes());
    d.extend_from_slice(&hash.to_be_bytes());
    let flags = runtime_ids as u16 | if coverage { MARKER_COVERAGE } else { 0 };
    d.extend_from_slice(&flags.to_be_bytes());
    d.extend_from_slice(&n.to_be_bytes());
    for (name, desc) in methods {
        d.extend_from_slice(&cp.utf8(name)?.to_be_bytes());
        d.extend_from_slice(&cp.utf8(desc)?.to_be_bytes());
    }
    Ok(d)
}

/// One instrumented method as the runtime learns it from the register call.
pub(crate) struct TableEntry {
    pub name: String,
    pub desc: String,
    pub first_line: Option<u32>,
}

/// The method table handed to `register`: `source\n` then `name\ndesc\nline\n` per method
/// (line empty when unknown; [`register_snippet`] joins it from parts that each fit a String
/// constant). Names
/// with a line break (legal, but no compiler makes them) cannot be listed: `Err` names them.
pub(crate) fn table_string(source: Option<&str>, methods: &[TableEntry]) -> bci::Result<String> {
    let mut s = String::new();
    let push = |s: &mut String, part: &str| {
        if part.contains('\n') {
            return Err(bci::Error::new(
                bci::ErrorKind::Unsupported,
                format!("{part:?}: a line break in a name cannot go into the method table"),
            ));
        }
        s.push_str(part);
        s.push('\n');
        Ok(())
    };
    push(&mut s, source.unwrap_or(""))?;
    for m in methods {
        push(&mut s, &m.name)?;
        push(&mut s, &m.desc)?;
        push(
            &mut s,
            &m.first_line.map(|l| l.to_string()).unwrap_or_default(),
        )?;
    }
    Ok(s)
}

/// `<clinit>`'s first code: (for a class in a named module) a read edge from its module to the
/// runtime's, then `bci$base = Offline.register(name, hash, table)`.
pub(crate) fn register_snippet(
    cp: &mut CpBuilder<'_>,
    class: &str,
    hash: u64,
    table: &str,
    module_reads: bool,
) -> bci::Result<Snippet> {
    let mut s = Snippet::new();
    if module_reads {
        s.append(&read_edge(cp, class, OFFLINE_CLASS)?);
    }
    s.string(cp, class)?.long(cp, hash as i64)?;
    // a String constant holds at most 65,535 bytes of modified UTF-8: a longer table (a class
    // of ~1,000 methods or more, e.g. scala-reflect's SymbolTable) is several constants joined
    // by String.concat, split between lines
    let parts = table_parts(table, TABLE_PART);
    s.string(cp, parts[0])?;
    for p in &parts[1..] {
        s.string(cp, p)?.invokevirtual(
            cp,
            "java/lang/String",
            "concat",
            "(Ljava/lang/String;)Ljava/lang/String;",
        )?;
    }
    s.invokestatic(cp, OFFLINE_CLASS, REGISTER.0, REGISTER.1)?;
    Ok(s)
}

/// Adds `private static synthetic int bci$r()` to a class with runtime ids: `bci$base`, or,
/// while it is 0, the base the runtime gives for the class (`register`, as `<clinit>` calls
/// it; the runtimes give the same base to the same class and hash):
///
/// ```text
///     getstatic CLASS.bci$base ; dup ; ifne L
///     pop ; <register: read edge, class, hash, table> ; invokestatic Offline.register
/// L:  ireturn
/// ```
///
/// A class's code can run before its `<clinit>` has set `bci$base` (a superclass's
/// `<clinit>` that makes an instance of it: the JVM initializes the superclass first, and
/// the initializing thread's own requests for the class go through): its probes passed
/// `0 + index`, another class's method ids. `register` is the snippet of
/// [`register_snippet`]. Returns the method's Methodref (InterfaceMethodref in interfaces).
pub(crate) fn add_base_helper(
    w: &mut bci::ClassWriter<'_, '_>,
    cf: &bci::ClassFile<'_>,
    class: &str,
    register: &Snippet,
) -> bci::Result<u16> {
    add_lazy_id(w, cf, class, BASE_HELPER, BASE_FIELD, register)
}

/// Adds `private static synthetic int METHOD()`: static int `field` of `class`, or while it is
/// 0 what `register` (a snippet that pushes an int) gives, for ids `<clinit>` sets that code
/// running before `<clinit>` needs too ([`add_base_helper`], coverage's `bci$c`). Returns its
/// Methodref (InterfaceMethodref in interfaces).
pub(crate) fn add_lazy_id(
    w: &mut bci::ClassWriter<'_, '_>,
    cf: &bci::ClassFile<'_>,
    class: &str,
    method: &str,
    field: &str,
    register: &Snippet,
) -> bci::Result<u16> {
    let mut head = Snippet::new();
    head.getstatic(&mut w.cp, class, field, "I")?
        .op(bci::opcodes::op::DUP)?;
    let mut reg = Snippet::new();
    reg.op(bci::opcodes::op::POP)?;
    reg.append(register);
    let l = head.len() + 3 + reg.len(); // ifne (3 bytes), then the registration
    let mut code = Vec::with_capacity(l + 1);
    code.extend_from_slice(head.bytes());
    code.push(bci::opcodes::op::IFNE);
    code.extend_from_slice(&((l - head.len()) as i16).to_be_bytes());
    code.extend_from_slice(reg.bytes());
    code.push(bci::opcodes::op::IRETURN);
    let max_stack = head.max_depth().max(1 + register.max_depth());
    let frame = bci::Frame {
        offset: l as u32,
        locals: vec![],
        stack: vec![bci::VType::Integer],
    };
    let body = one_frame_body(w, cf, max_stack, 0, &code, frame, &[])?;
    w.add_method(
        ACC_PRIVATE | ACC_STATIC | ACC_SYNTHETIC,
        method,
        "()I",
        &body,
    )?;
    if cf.access & ACC_INTERFACE != 0 {
        w.cp.interface_methodref(class, method, "()I")
    } else {
        w.cp.methodref(class, method, "()I")
    }
}

/// A Code attribute body for a helper method the rewriter writes whole: `code` with no
/// exception table and, in class files of version 50 and later, a StackMapTable of one
/// `frame` (its one branch target's; `initial`: the method's parameters' types).
pub(crate) fn one_frame_body(
    w: &mut bci::ClassWriter<'_, '_>,
    cf: &bci::ClassFile<'_>,
    max_stack: u16,
    max_locals: u16,
    code: &[u8],
    frame: bci::Frame,
    initial: &[bci::VType],
) -> bci::Result<Vec<u8>> {
    let mut body = Vec::with_capacity(code.len() + 32);
    body.extend_from_slice(&max_stack.to_be_bytes());
    body.extend_from_slice(&max_locals.to_be_bytes());
    body.extend_from_slice(&(code.len() as u32).to_be_bytes());
    body.extend_from_slice(code);
    body.extend_from_slice(&0u16.to_be_bytes()); // exception table
    if cf.major >= 50 {
        let table_name = w.cp.stack_map_table_name()?;
        let mut table = Vec::new();
        bci::frames::encode_table(&[frame], initial, &mut table)?;
        body.extend_from_slice(&1u16.to_be_bytes());
        body.extend_from_slice(&table_name.to_be_bytes());
        body.extend_from_slice(&(table.len() as u32).to_be_bytes());
        body.extend_from_slice(&table);
    } else {
        body.extend_from_slice(&0u16.to_be_bytes());
    }
    Ok(body)
}

/// The method [`add_base_helper`] adds.
pub const BASE_HELPER: &str = "bci$r";

/// The most bytes of modified UTF-8 one part of the method table takes (a String constant
/// holds 65,535).
const TABLE_PART: usize = 60_000;

/// `table` cut after whole lines into parts of at most `max` bytes of modified UTF-8 each (a
/// single longer line, which no method name or descriptor is, stays whole; its constant then
/// fails with the class file's limit).
fn table_parts(table: &str, max: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (at, line) in table.split_inclusive('\n').scan(0, |pos, l| {
        let at = *pos;
        *pos += l.len();
        Some((at, l))
    }) {
        let n = bci::cp::encode_mutf8(line).len();
        if size + n > max && size > 0 {
            parts.push(&table[start..at]);
            start = at;
            size = 0;
        }
        size += n;
    }
    parts.push(&table[start..]);
    parts
}

/// `ThisClass.class.getModule().addReads(Class.forName(runtime, false,
/// ThisClass.class.getClassLoader()).getModule())`: caller-sensitive, allowed because the caller
/// is in the module that gets the edge; a no-op in an unnamed module. `runtime` is an internal
/// name.
pub(crate) fn read_edge(
    cp: &mut CpBuilder<'_>,
    class: &str,
    runtime: &str,
) -> bci::Result<Snippet> {
    let mut s = Snippet::new();
    {
        s.class_const(cp, class)?
            .invokevirtual(cp, "java/lang/Class", "getModule", "()Ljava/lang/Module;")?
            .string(cp, &runtime.replace('/', "."))?
            .int(cp, 0)?
            .class_const(cp, class)?
            .invokevirtual(
                cp,
                "java/lang/Class",
                "getClassLoader",
                "()Ljava/lang/ClassLoader;",
            )?
            .invokestatic(
                cp,
                "java/lang/Class",
                "forName",
                "(Ljava/lang/String;ZLjava/lang/ClassLoader;)Ljava/lang/Class;",
            )?
            .invokevirtual(cp, "java/lang/Class", "getModule", "()Ljava/lang/Module;")?
            .invokevirtual(
                cp,
                "java/lang/Module",
                "addReads",
                "(Ljava/lang/Module;)Ljava/lang/Module;",
            )?
            .op(bci::opcodes::op::POP)?;
    }
    Ok(s)
}

/// What a class needs so that its `<clinit>` runs some code before anything else (offline
/// instrumentation: a class registers with the runtime and keeps what it returns in a static
/// final int field): the code (the class's original default serialVersionUID first where a new
/// `<clinit>` or a new public interface field would change it), whether the class has a
/// `<clinit>` to put it in, and the fields to add.
pub(crate) struct Prologue {
    /// Insert at the entry of `<clinit>` ([`bci::MethodEditor::insert_entry`]).
    pub code: Snippet,
    pub has_clinit: bool,
    /// The static final fields the code stores into: (name, descriptor).
    fields: &'static [(&'static str, &'static str)],
    /// Access of a serialVersionUID field to declare, if one is needed.
    suid: Option<u16>,
    interface: bool,
}

impl Prologue {
    /// `first` stores into the static final `fields` (name, descriptor) of class `name`.
    pub(crate) fn new(
        cf: &ClassFile<'_>,
        cp: &mut CpBuilder<'_>,
        name: &str,
        first: Snippet,
        fields: &'static [(&'static str, &'static str)],
    ) -> bci::Result<Prologue> {
        let has_clinit = cf.method("<clinit>", Some("()V")).is_some();
        let interface = cf.access & ACC_INTERFACE != 0;
        let mut code = Snippet::new();
        let mut suid = None;
        // A new <clinit> (or a public field in an interface) changes the default
        // serialVersionUID: declare the original one (set here, first thing) where
        // serialization could use it
        if (!has_clinit || interface)
            && crate::suid::may_serialize(cf)
            && !crate::suid::declares_suid(cf)
        {
            let v = crate::suid::default_suid(cf)?;
            code.long(cp, v)?
                .putstatic(cp, name, "serialVersionUID", "J")?;
            suid = Some(Self::field_access(interface));
        }
        code.append(&first);
        Ok(Prologue {
            code,
            has_clinit,
            fields,
            suid,
            interface,
        })
    }

    fn field_access(interface: bool) -> u16 {
        if interface {
            ACC_PUBLIC | ACC_STATIC | ACC_FINAL | ACC_SYNTHETIC
        } else {
            ACC_PRIVATE | ACC_STATIC | ACC_FINAL | ACC_SYNTHETIC
        }
    }

    /// Adds a `<clinit>` made of the code if the class had none (`done_clinit`: the code went
    /// into the existing one), the field, and serialVersionUID if needed.
    pub(crate) fn finish(
        &self,
        w: &mut bci::ClassWriter<'_, '_>,
        done_clinit: bool,
    ) -> bci::Result<()> {
        if self.has_clinit != done_clinit {
            return Err(bci::Error::new(
                bci::ErrorKind::Edit,
                "<clinit> has no code to register in",
            ));
        }
        if !self.has_clinit {
            // synthetic (ignored by the JVM on <clinit>): the agent's later passes tell it
            // from the program's own (coverage::is_helper)
            w.add_method(
                ACC_STATIC | ACC_SYNTHETIC,
                "<clinit>",
                "()V",
                &clinit_body(&self.code),
            )?;
        }
        for (name, desc) in self.fields {
            w.add_field(Self::field_access(self.interface), name, desc)?;
        }
        if let Some(access) = self.suid {
            w.add_field(access, "serialVersionUID", "J")?;
        }
        Ok(())
    }
}

/// The Code attribute body of a new `<clinit>` made of `s` and `return`.
pub(crate) fn clinit_body(s: &Snippet) -> Vec<u8> {
    let code_len = s.len() + 1;
    let mut b = Vec::with_capacity(12 + code_len);
    b.extend_from_slice(&s.max_depth().to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&(code_len as u32).to_be_bytes());
    b.extend_from_slice(s.bytes());
    b.push(bci::opcodes::op::RETURN);
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_fnv1a() {
        assert_eq!(class_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(class_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(class_hash(b"ab"), class_hash(b"ba"));
    }

    #[test]
    fn table_parts_fit_string_constants_and_join_to_the_table() {
        let lines: String = (0..3000)
            .map(|k| format!("method_with_a_long_name_{k:05}\n(Ljava/util/Map;)I\n{k}\n"))
            .collect();
        for max in [100, 1000, 60_000] {
            let parts = table_parts(&lines, max);
            assert_eq!(parts.concat(), lines, "max {max}");
            assert!(parts.iter().all(|p| p.len() <= max && !p.is_empty()));
            assert!(parts.iter().all(|p| p.ends_with('\n')), "cut inside a line");
        }
        assert_eq!(table_parts("", 10), vec![""]);
        assert_eq!(table_parts("a\n", 10), vec!["a\n"]);
    }

    #[test]
    fn table_layout() {
        let t = table_string(
            Some("A.java"),
            &[
                TableEntry {
                    name: "m".into(),
                    desc: "()V".into(),
                    first_line: Some(3),
                },
                TableEntry {
                    name: "<init>".into(),
                    desc: "(I)V".into(),
                    first_line: None,
                },
            ],
        )
        .unwrap();
        assert_eq!(t, "A.java\nm\n()V\n3\n<init>\n(I)V\n\n");
        let bad = TableEntry {
            name: "a\nb".into(),
            desc: "()V".into(),
            first_line: None,
        };
        assert!(table_string(None, &[bad]).is_err());
    }
}
