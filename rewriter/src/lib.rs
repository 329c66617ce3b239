//! Rules (TOML) select classes and methods and name probes; [`instrument`] turns them into
//! edits through bci. Pure: bytes in, bytes out.
#![forbid(unsafe_code)]

pub mod coverage;
mod desc_check;
pub mod flow;
mod glob;
pub mod intrinsics;
pub mod offline;
mod rules;
pub mod suid;
pub mod trace;

pub use glob::Glob;
pub use rules::{is_internal_class_name, Probe, ProbeSet, RuleError, Rules};

use bci::class::{ACC_ABSTRACT, ACC_INTERFACE, ACC_MODULE, ACC_NATIVE};
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
    /// Smallest line number in the method's LineNumberTables.
    pub first_line: Option<u32>,
}

/// Assigns probe ids (dense, chosen by the caller) to instrumented methods.
pub trait ProbeRegistry {
    fn register(&mut self, m: &MethodInfo<'_>) -> u32;
    /// The id of a method known by reference only (a call site's target:
    /// [`Options::intrinsic_sites`]), with no class file read. A registry that keeps a table
    /// should give every reference to one method the same id; this default registers it anew
    /// at each call (no access flags, source file or line).
    fn register_ref(&mut self, class: &str, name: &str, desc: &str) -> u32 {
        self.register(&MethodInfo {
            class,
            name,
            desc,
            access: 0,
            source_file: None,
            first_line: None,
        })
    }
}

/// A registry that numbers methods 0, 1, 2, … in the order they are instrumented (offline
/// tools and tests; the agent keeps its own table).
#[derive(Debug, Default, Clone)]
pub struct SequentialIds(pub u32);

impl ProbeRegistry for SequentialIds {
    fn register(&mut self, _: &MethodInfo<'_>) -> u32 {
        self.0 += 1;
        self.0 - 1
    }
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

fn first_line(cf: &ClassFile<'_>, code: &bci::CodeAttr<'_>) -> Option<u32> {
    // Every LineNumberTable (a Code attribute may have several: JVMS 4.7.12), read in place (no
    // table allocated); a malformed table gives None, as its parse would.
    let mut first: Option<u32> = None;
    for lnt in code.attributes.iter().filter(|a| {
        cf.cp
            .utf8_bytes(a.name_index)
            .is_ok_and(|n| n == b"LineNumberTable")
    }) {
        let d = lnt.data;
        let n = u16::from_be_bytes([*d.first()?, *d.get(1)?]) as usize;
        if d.len() != 2 + 4 * n {
            return None;
        }
        let min = d[2..]
            .chunks_exact(4)
            .map(|e| u16::from_be_bytes([e[2], e[3]]) as u32)
            .min();
        if let Some(m) = min {
            first = Some(first.map_or(m, |f| f.min(m)));
        }
    }
    first
}

/// The probe calls of one class, built once (their constants are shared by all methods).
struct Calls<'r> {
    runtime: &'r str,
    cache: [Option<Snippet>; 10],
    /// Runtime ids: the class whose `bci$base` field the ids are relative to.
    base: Option<&'r str>,
    /// Runtime ids: the Methodref of the class's `bci$r()I` (the base, registering the class
    /// if its `<clinit>` has not: [`offline::add_base_helper`]); none in interfaces of class
    /// files before version 52 (no static methods), which read `bci$base`.
    base_helper: Option<u16>,
    /// The class has coverage's lookup helper `bci$a` ([`coverage_lookup`]): looked up once
    /// per class, not per method.
    covered: bool,
}

impl<'r> Calls<'r> {
    const ENTER: usize = 0;
    const EXIT: usize = 1;
    const UNWIND: usize = 2;
    const NOW: usize = 3;
    const TIMED: usize = 4;
    const LEAF_ENTER: usize = 5;
    const LEAF_EXIT: usize = 6;
    const ENTER_T: usize = 7;
    const EXIT_T: usize = 8;
    const UNWIND_T: usize = 9;
    fn get(&mut self, cp: &mut bci::CpBuilder<'_>, which: usize) -> bci::Result<&Snippet> {
        const SIG: [(&str, &str); 10] = [
            ("enter", "(I)V"),
            ("exit", "(I)V"),
            ("unwind", "(I)V"),
            ("now", "()J"),
            ("timed", "(IJ)V"),
            ("leafEnter", "(I)V"),
            ("leafExit", "(I)V"),
            ("enterT", "(I)I"),
            ("exitT", "(I)V"),
            ("unwindT", "(I)V"),
        ];
        if self.cache[which].is_none() {
            let (name, desc) = SIG[which];
            let mut s = Snippet::new();
            let m = cp.runtime_methodref(self.runtime, name, desc)?;
            s.invokestatic_ref(m, desc)?;
            self.cache[which] = Some(s);
        }
        Ok(self.cache[which].as_ref().unwrap_or_else(|| unreachable!()))
    }
    /// Pushes method id `id`: a constant, or with runtime ids `bci$base + id`.
    fn push_id(&self, s: &mut Snippet, cp: &mut bci::CpBuilder<'_>, id: i32) -> bci::Result<()> {
        match self.base {
            None => {
                s.int(cp, id)?;
            }
            Some(class) => {
                match self.base_helper {
                    Some(m) => s.invokestatic_ref(m, "()I")?,
                    None => s.getstatic(cp, class, offline::BASE_FIELD, "I")?,
                };
                if id != 0 {
                    s.int(cp, id)?.op(bci::opcodes::op::IADD)?;
                }
            }
        }
        Ok(())
    }
    /// `iload token; invokestatic <which>(I)V` (the frame token of `enterT`, in local `token`)
    fn with_token(
        &mut self,
        cp: &mut bci::CpBuilder<'_>,
        which: usize,
        token: u16,
    ) -> bci::Result<Snippet> {
        let mut s = Snippet::new();
        s.load('I', token)?;
        s.append(self.get(cp, which)?);
        Ok(s)
    }
    /// `push id; invokestatic <which>(I)V`
    fn with_id(
        &mut self,
        cp: &mut bci::CpBuilder<'_>,
        which: usize,
        id: i32,
    ) -> bci::Result<Snippet> {
        let mut s = Snippet::new();
        self.push_id(&mut s, cp, id)?;
        s.append(self.get(cp, which)?);
        Ok(s)
    }
}

/// Methods of the JDK's virtual-thread machinery (JDK 21+) whose entry and exit probes would
/// run on different threads as `Thread.currentThread()` sees them, so that a runtime keeping
/// a shadow stack per thread (the agent's cpu=times) pushes a frame on one thread's stack and
/// pops it from another's; they get no probes (their callees do).
/// - `VirtualThread.mount`/`unmount`/`switchToCarrierThread`/`switchToVirtualThread` change
///   the current thread (`Thread.setCurrentThread`) between entry and exit.
/// - `Continuation.run` runs on the virtual thread below the continuation's frames (JDK 24+:
///   `runContinuation` mounts first) and returns when they yield: its exit would end the
///   frames of every method the virtual thread is blocked in.
/// - JDK 21-23 mount inside the continuation: its bottom frames (`Continuation.enter`,
///   `enter0`, the task lambda, `VirtualThread.run(Runnable)`) are entered on the carrier
///   and left on another one, and `Continuation.yield`/`yield0` are entered after the
///   unmount and left before the next mount, on different carriers.
/// - JDK 25's continuation bottom (`VThreadContinuation$1.run`) posts the virtual thread's
///   end event (`notifyJvmtiEnd`) and then exits: the runtime has folded the thread by then,
///   and a runtime without a field in Thread registered the thread again at that exit (one
///   state per virtual thread that was never folded, and a mismatched exit).
const THREAD_SWITCHING: &[(&str, &[&str])] = &[
    (
        "java/lang/VirtualThread",
        &[
            "mount",
            "unmount",
            "switchToCarrierThread",
            "switchToVirtualThread",
            "run",
        ],
    ),
    (
        "java/lang/VirtualThread$VThreadContinuation",
        &["lambda$new$0"],
    ),
    ("java/lang/VirtualThread$VThreadContinuation$1", &["run"]),
    (
        "jdk/internal/vm/Continuation",
        &["run", "enter", "enter0", "yield", "yield0"],
    ),
];

/// The class whose mount and unmount get [`Options::mount_hook`]'s calls.
pub const MOUNT_CLASS: &str = "java/lang/VirtualThread";

/// The methods at whose end a virtual thread (JDK 21+) runs as itself on a carrier thread:
/// `VirtualThread.mount`, and JDK 21-23's `switchToVirtualThread` (back from code run as the
/// carrier). [`Options::mount_hook`] calls the runtime there.
const MOUNTS: (&str, &[&str]) = (MOUNT_CLASS, &["mount", "switchToVirtualThread"]);

/// The methods at whose entry a virtual thread (JDK 21+) is about to stop running as itself
/// on its carrier (`Thread.currentThread()` is still the virtual thread): `VirtualThread.unmount`,
/// and JDK 21-23's `switchToCarrierThread` (code run as the carrier). [`Options::mount_hook`]
/// calls the runtime's `unmounting()V` there.
const UNMOUNTS: (&str, &[&str]) = (MOUNT_CLASS, &["unmount", "switchToCarrierThread"]);

/// Whether `class.name` is in [`THREAD_SWITCHING`].
pub fn switches_threads(class: &str, name: &str) -> bool {
    THREAD_SWITCHING
        .iter()
        .any(|(c, ms)| *c == class && ms.contains(&name))
}

/// Methods whose instrumentation would change what the JVM does beyond the probes: HotSpot
/// treats a class as finalizable only if its `finalize()V` is not empty (just `return`).
/// Probing `java.lang.Object.finalize()` would make every object finalizable.
fn changes_jvm_semantics(cf: &ClassFile<'_>, m: &bci::Member<'_>, name: &str, desc: &str) -> bool {
    if name != "finalize" || desc != "()V" {
        return false;
    }
    let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
        return false;
    };
    bci::CodeAttr::parse(cf, a).is_ok_and(|c| c.code == [bci::opcodes::op::RETURN])
}

/// Instruments the methods of a class that `rules` select.
pub fn instrument(
    class_bytes: &[u8],
    rules: &Rules,
    reg: &mut dyn ProbeRegistry,
) -> Result<Outcome, RewriteError> {
    instrument_with(class_bytes, rules, reg, &Options::default())
}

/// Knobs for tests, the CLI and the agent.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Encode every 16-bit branch in its wide form (exercises jump widening and its frames).
    pub force_wide_jumps: bool,
    /// Fields to add to classes, whether or not the rules select them (the agent's per-thread
    /// runtime state in java.lang.Thread).
    pub fields: Vec<NewField>,
    /// Methods that get `enter`, `exit` and `unwind` and are pure leaves (no instruction that
    /// can call, throw, allocate, or load or initialize a class: [`may_throw`] is false) get
    /// `leafEnter(I)V` and `leafExit(I)V` instead, which the runtime must provide. No other
    /// method can run between them on the thread, so the runtime needs no frame for them.
    pub leaf_probes: bool,
    /// Methods that get `enter`, `exit` and `unwind` (and not the leaf probes) get
    /// `enterT(I)I` instead, whose result (the runtime's token for the frame it pushed) is
    /// kept in a new int local, and `exitT(I)V`/`unwindT(I)V` with that token instead of the
    /// method id: the runtime restores its shadow stack from the token, with no frame to
    /// check. The runtime must provide the three methods. Constructors then call `enterT` at
    /// their first instruction (before super()/this()), and every handler whose range holds a
    /// call starts with `exitT(token + 2)`, which drops the frames left above the method's
    /// own (a constructor called there whose super()/this() call threw).
    pub frame_tokens: bool,
    /// A method that cannot take its probes (e.g. its code would grow past 65,535 bytes) is
    /// left original and the class's other methods are still instrumented; the methods left
    /// original are returned by [`instrument_methods`]. Without it such a method fails the
    /// whole class.
    pub method_fallback: bool,
    /// Write the `BciInstrumented` marker attribute ([`offline::MARKER_ATTR`]) on every class
    /// whose methods get probes (`bci instrument`). Classes that have it are never
    /// instrumented again, with or without this option ([`Outcome::Unchanged`]).
    pub marker: bool,
    /// Method ids handed out at run time: `<clinit>` (created if absent) first calls
    /// `bci/runtime/Offline.register(class, hash, table)I` and stores the base id in a new
    /// static final int `bci$base`; each probe passes `bci$base + index of the method in the
    /// class`. Separately instrumented jars then cannot collide.
    pub runtime_ids: bool,
    /// With `runtime_ids`: `<clinit>` first adds a read edge from the class's module to the
    /// runtime's (classes of a modular jar; a no-op in an unnamed module). Needs class files of
    /// version 49 or later (`ldc` of a class).
    pub module_reads: bool,
    /// `VirtualThread.mount` and `switchToVirtualThread` (JDK 21+) call the runtime's
    /// `mounted()V` before they return, whether or not the rules select the class: the
    /// current thread has just become the virtual thread on a carrier (the agent's runtime
    /// then gives it the carrier's cache, and with clock=cpu starts its clock and stops the
    /// carrier's). `VirtualThread.unmount` and `switchToCarrierThread` call `unmounting()V`
    /// at their entry, while the current thread is still the virtual thread (clock=cpu: its
    /// clock stops, the carrier's goes on). They get no probes of their own
    /// ([`switches_threads`]).
    pub mount_hook: bool,
    /// With `frame_tokens` (and without `runtime_ids`): the HotSpot intrinsics of
    /// [`intrinsics`] are counted at their call sites, not in their bodies, whose probes do
    /// not run when C1/C2 (or the interpreter's special entries) run the intrinsic instead.
    /// A method of the table that the rules select gets no probes of its own (its calls are
    /// wrapped as below, unless an exception handler covers them); in every method that gets
    /// `enterT`, each invoke whose methodref is such a method gets
    /// `<id> ; invokestatic enterT(I)I ; istore S` before it and `iload S ; invokestatic
    /// exitT(I)V` after it (S: one new int local of the method, 0 at entry), the id from
    /// [`ProbeRegistry::register_ref`], a constant. An exception thrown by the intrinsic leaves
    /// its frame to the caller's handlers (`exitT(token + 2)`) or catch-all (`unwindT`), as a
    /// callee's.
    pub intrinsic_sites: bool,
}

/// A field [`instrument_with`] adds to a class (no attributes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewField {
    /// Internal name of the class that gets it.
    pub class: String,
    pub access: u16,
    pub name: String,
    pub desc: String,
}

impl Options {
    /// Whether [`instrument_with`] changes class `internal_name` even if no rule selects it.
    pub fn adds_fields_to(&self, internal_name: &str) -> bool {
        self.fields.iter().any(|f| f.class == internal_name)
    }
}

/// Names of the members bci adds to a class (offline and coverage ids, coverage's counters and
/// helpers): fields, then methods.
const OWN_FIELDS: &[&str] = &[
    coverage::CLASS_ID_FIELD,
    coverage::SHARED_FIELD,
    coverage::OWNER_FIELD,
    offline::BASE_FIELD,
];
const OWN_METHODS: &[&str] = &[
    coverage::HELPER,
    coverage::SLOW_HELPER,
    coverage::ID_HELPER,
    offline::BASE_HELPER,
];

/// For a rewrite that adds members: an error naming the class's first member (in class-file
/// order: fields, then methods) that has the name of one bci adds, and is not bci's own
/// (synthetic). Every mode then names the same member, whichever it would add first.
pub(crate) fn own_name_taken(cf: &ClassFile<'_>) -> Option<bci::Error> {
    use bci::class::ACC_SYNTHETIC;
    let taken = |m: &bci::Member<'_>, names: &[&str]| {
        m.access & ACC_SYNTHETIC == 0
            && cf
                .cp
                .utf8_bytes(m.name_index)
                .is_ok_and(|n| n.starts_with(b"bci$") && names.iter().any(|o| o.as_bytes() == n))
    };
    let (what, m) = match cf.fields.iter().find(|f| taken(f, OWN_FIELDS)) {
        Some(f) => ("field", f),
        None => ("method", cf.methods.iter().find(|m| taken(m, OWN_METHODS))?),
    };
    let (name, desc) = (cf.member_name(m), cf.member_desc(m));
    let sep = if what == "field" { " " } else { "" };
    let e = bci::Error::new(
        bci::ErrorKind::Edit,
        format!("{what} {name}{sep}{desc} exists already (bci adds a {what} of that name)"),
    );
    Some(e.context(cf.name().map(|n| n.into_owned()).unwrap_or_default()))
}

/// [`instrument`] with [`Options`].
/// The error of a constant pool with no room left for what the rewrite adds
/// (`CpBuilder`'s, the same for every method of the class).
pub fn is_pool_full(e: &bci::Error) -> bool {
    e.kind() == bci::ErrorKind::TooLarge && e.message().starts_with("constant pool would exceed")
}

fn with_path(e: bci::Error, path: impl FnOnce() -> String) -> bci::Error {
    if e.path().is_empty() {
        e.context(path())
    } else {
        e
    }
}

pub fn instrument_with(
    class_bytes: &[u8],
    rules: &Rules,
    reg: &mut dyn ProbeRegistry,
    opts: &Options,
) -> Result<Outcome, RewriteError> {
    instrument_methods(class_bytes, rules, reg, opts).map(|(o, _)| o)
}

/// [`instrument_with`], also returning the selected methods left original (only with
/// [`Options::method_fallback`]; otherwise their error is the class's), each error naming the
/// method and the reason.
pub fn instrument_methods(
    class_bytes: &[u8],
    rules: &Rules,
    reg: &mut dyn ProbeRegistry,
    opts: &Options,
) -> Result<(Outcome, Vec<RewriteError>), RewriteError> {
    let mut left = Vec::new();
    let cf = ClassFile::parse(class_bytes)?;
    let name = cf.name()?;
    if cf.access & ACC_MODULE != 0 {
        return Ok((Outcome::Unchanged, left));
    }
    let selected = rules.selects_class(&name);
    let mounts = opts.mount_hook && name == MOUNTS.0;
    if !selected && !opts.adds_fields_to(&name) && !mounts {
        return Ok((Outcome::Unchanged, left));
    }
    if let Some(m) = offline::marker_of(&cf) {
        // ours already (bci instrument): instrumenting again would count every call twice.
        // Coverage counters count no calls: a run that writes no marker (the agent) adds its
        // probes to a class covered offline, as it does to the classes it covers itself.
        if !m.coverage || opts.marker {
            return Ok((Outcome::Unchanged, left));
        }
    }
    let source = cf.source_file();
    let runtime = rules.runtime_class();
    let mut w = ClassWriter::new(&cf);
    // methods that get probes, in order: with runtime ids, the index is the method's id
    let mut chosen: Vec<(usize, rules::ProbeSet)> = Vec::with_capacity(cf.methods.len());
    // their names and descriptors, decoded once
    let mut chosen_names = Vec::with_capacity(cf.methods.len());
    // intrinsic sites: the class's methods of the table (counted at their call sites: no
    // probes of their own), and its methodrefs to such methods with their ids
    let sites_on = selected && opts.intrinsic_sites && opts.frame_tokens && !opts.runtime_ids;
    let own_intrinsics = sites_on && intrinsics::class_listed(name.as_bytes());
    let mut bodies: Vec<usize> = Vec::new();
    let sites = if sites_on {
        intrinsic_refs(&cf, rules, reg)
    } else {
        Vec::new()
    };
    for (k, m) in cf.methods.iter().enumerate() {
        if !selected {
            break;
        }
        if m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0 {
            continue;
        }
        let mname = cf.member_name(m);
        let mdesc = cf.member_desc(m);
        let probes = rules.probes_for(&name, &mname, &mdesc);
        if probes.is_empty()
            || changes_jvm_semantics(&cf, m, &mname, &mdesc)
            || switches_threads(&name, &mname)
            || coverage::is_helper(m, &mname, &mdesc)
        {
            continue;
        }
        if own_intrinsics
            && counted_at_sites(probes)
            && intrinsics::is_intrinsic(name.as_bytes(), mname.as_bytes(), mdesc.as_bytes())
        {
            bodies.push(k);
            continue;
        }
        chosen.push((k, probes));
        chosen_names.push((mname, mdesc));
    }
    let runtime_ids = opts.runtime_ids && !chosen.is_empty();
    if runtime_ids {
        if let Some(e) = own_name_taken(&cf) {
            return Err(e);
        }
    }
    if runtime_ids && opts.module_reads && cf.major < 49 {
        return Err(with_path(
            bci::Error::new(
                bci::ErrorKind::Unsupported,
                format!(
                    "class-file version {} cannot load a class constant (needed for the read edge to the runtime's module; 49 or later)",
                    cf.major
                ),
            ),
            || name.to_string(),
        ));
    }
    // method index -> its position in `chosen`
    let mut position = vec![None; cf.methods.len()];
    for (i, &(k, _)) in chosen.iter().enumerate() {
        position[k] = Some(i);
    }
    let mut calls = Calls {
        runtime,
        cache: Default::default(),
        base: runtime_ids.then_some(&*name),
        base_helper: None,
        covered: (cf.methods.iter()).any(|m| cf.member_name(m) == coverage::HELPER),
    };
    let hash = if opts.marker || runtime_ids {
        offline::class_hash(class_bytes)
    } else {
        0
    };
    // <clinit>'s first code with runtime ids
    let mut prologue = None;
    if runtime_ids {
        let mut table = Vec::with_capacity(chosen.len());
        for &(k, _) in &chosen {
            let m = &cf.methods[k];
            let first = cf
                .find_attr(&m.attributes, "Code")
                .and_then(|(_, a)| bci::CodeAttr::parse(&cf, a).ok())
                .and_then(|c| first_line(&cf, &c));
            table.push(offline::TableEntry {
                name: cf.member_name(m).into_owned(),
                desc: cf.member_desc(m).into_owned(),
                first_line: first,
            });
        }
        let t = offline::table_string(source.as_deref(), &table)
            .map_err(|e| with_path(e, || name.to_string()))?;
        let register = offline::register_snippet(&mut w.cp, &name, hash, &t, opts.module_reads)
            .map_err(|e| with_path(e, || name.to_string()))?;
        if cf.access & ACC_INTERFACE == 0 || cf.major >= 52 {
            calls.base_helper = Some(
                offline::add_base_helper(&mut w, &cf, &name, &register)
                    .map_err(|e| with_path(e, || name.to_string()))?,
            );
        }
        let mut first = register;
        first
            .putstatic(&mut w.cp, &name, offline::BASE_FIELD, "I")
            .map_err(|e| with_path(e, || name.to_string()))?;
        prologue = Some(
            offline::Prologue::new(&cf, &mut w.cp, &name, first, &[(offline::BASE_FIELD, "I")])
                .map_err(|e| with_path(e, || name.to_string()))?,
        );
    }
    let register = prologue.as_ref().map(|p| &p.code);
    let mut changed = false;
    let mut done_clinit = false;
    // names compare as decoded text; plain ASCII bytes decide without decoding
    let text_is = |idx: u16, s: &str| match cf.cp.utf8_bytes(idx) {
        Ok(b) if b.is_ascii() => b == s.as_bytes(),
        _ => cf.cp.utf8(idx).unwrap_or_default() == s,
    };
    let is_clinit = |m: &bci::Member<'_>| {
        text_is(m.name_index, "<clinit>") && text_is(m.descriptor_index, "()V")
    };
    for (k, m) in cf.methods.iter().enumerate() {
        // (the name is decoded only in the class that takes the hooks: every other class's
        // methods skip this)
        let hooked = (mounts && position[k].is_none()).then(|| cf.member_name(m));
        let is = |names: &[&str]| hooked.as_deref().is_some_and(|n| names.contains(&n));
        if is(UNMOUNTS.1) {
            let hook = unmount_hook(&cf, k, &mut w.cp, runtime)
                .map_err(|e| with_path(e, || cf.method_path(m)))?;
            w.set_code(k, hook)?;
            changed = true;
            continue;
        }
        if is(MOUNTS.1) {
            let hook = mount_hook(&cf, k, &mut w.cp, runtime)
                .map_err(|e| with_path(e, || cf.method_path(m)))?;
            w.set_code(k, hook)?;
            changed = true;
            continue;
        }
        let Some(index) = position[k] else {
            if !sites.is_empty() && bodies.contains(&k) {
                // an intrinsic: its calls of intrinsics counted, no probes of its own
                let body = MethodEditor::new(&cf, k)
                    .and_then(|mut ed| {
                        ed.force_wide_jumps = opts.force_wide_jumps;
                        Ok(
                            if place_sites(&mut ed, &mut w.cp, &mut calls, &sites, true)? {
                                Some(ed.finish(&mut w.cp)?)
                            } else {
                                None
                            },
                        )
                    })
                    .map_err(|e| with_path(e, || cf.method_path(m)));
                match body {
                    Ok(Some(b)) => {
                        w.set_code(k, b)?;
                        changed = true;
                    }
                    Ok(None) => {}
                    Err(e) if opts.method_fallback && !e.is_invalid_input() => left.push(e),
                    Err(e) => return Err(e),
                }
                continue;
            }
            if let (Some(reg_s), true) = (register, register.is_some() && is_clinit(m)) {
                // a <clinit> the rules leave alone still registers first
                let body = MethodEditor::new(&cf, k)
                    .and_then(|mut ed| {
                        ed.insert_entry(reg_s)?;
                        ed.finish(&mut w.cp)
                    })
                    .map_err(|e| with_path(e, || cf.method_path(m)))?;
                w.set_code(k, body)?;
                done_clinit = true;
            }
            continue;
        };
        let probes = chosen[index].1;
        let (mname, mdesc) = &chosen_names[index];
        let mut ed = MethodEditor::new(&cf, k)?;
        if is_clinit(m) {
            if let Some(reg_s) = register {
                ed.insert_entry(reg_s)?;
                done_clinit = true;
            }
        }
        ed.force_wide_jumps = opts.force_wide_jumps;
        let info = MethodInfo {
            class: &name,
            name: mname,
            desc: mdesc,
            access: m.access,
            source_file: source.as_deref(),
            first_line: first_line(&cf, ed.code()),
        };
        let global = reg.register(&info) as i32;
        let id = if runtime_ids { index as i32 } else { global };
        let body = match probe_method(ed, &mut w.cp, &mut calls, id, probes, opts, &sites) {
            Ok(b) => b,
            Err(e) => {
                let e = with_path(e, || cf.method_path(m));
                // invalid code fails the class: the JVM must reject it as it did
                if !opts.method_fallback || e.is_invalid_input() {
                    return Err(e);
                }
                // the constants the attempt added stay in the pool, unused
                left.push(e);
                continue;
            }
        };
        w.set_code(k, body)?;
        changed = true;
    }
    if let Some(p) = &prologue {
        p.finish(&mut w, done_clinit)
            .map_err(|e| with_path(e, || name.to_string()))?;
    }
    if opts.marker && !chosen.is_empty() {
        let methods: Vec<(String, String)> = chosen
            .iter()
            .map(|&(k, _)| {
                let m = &cf.methods[k];
                (
                    cf.member_name(m).into_owned(),
                    cf.member_desc(m).into_owned(),
                )
            })
            .collect();
        let data = offline::marker_data(&mut w.cp, hash, runtime_ids, false, &methods)
            .and_then(|d| w.add_attribute(offline::MARKER_ATTR, &d).map(|_| ()))
            .map_err(|e| with_path(e, || name.to_string()));
        data?;
    }
    for f in opts.fields.iter().filter(|f| f.class == name) {
        w.add_field(f.access, &f.name, &f.desc)
            .map_err(|e| with_path(e, || name.to_string()))?;
        changed = true;
    }
    if !changed && !left.is_empty() && left.iter().all(is_pool_full) {
        // no room in the constant pool for any method's probes: the class's failure, said
        // once (one line per method before, and the methods counted as left original)
        let e = &left[0];
        return Err(bci::Error::new(e.kind(), e.message()));
    }
    if !changed {
        return Ok((Outcome::Unchanged, left));
    }
    w.finish()
        .map(|b| (Outcome::Rewritten(b), left))
        .map_err(|e| with_path(e, || name.to_string()))
}

/// Method `k` with `invokestatic <runtime>.mounted()V` before each return
/// ([`Options::mount_hook`]).
fn mount_hook(
    cf: &ClassFile<'_>,
    k: usize,
    cp: &mut bci::CpBuilder<'_>,
    runtime: &str,
) -> bci::Result<Vec<u8>> {
    let mut call = Snippet::new();
    let m = cp.runtime_methodref(runtime, "mounted", "()V")?;
    call.invokestatic_ref(m, "()V")?;
    let mut ed = MethodEditor::new(cf, k)?;
    ed.insert_before_returns(|_| Ok(call.clone()))?;
    ed.finish(cp)
}

/// Method `k` with `invokestatic <runtime>.unmounting()V` at its entry
/// ([`Options::mount_hook`]).
fn unmount_hook(
    cf: &ClassFile<'_>,
    k: usize,
    cp: &mut bci::CpBuilder<'_>,
    runtime: &str,
) -> bci::Result<Vec<u8>> {
    let mut call = Snippet::new();
    let m = cp.runtime_methodref(runtime, "unmounting", "()V")?;
    call.invokestatic_ref(m, "()V")?;
    let mut ed = MethodEditor::new(cf, k)?;
    ed.insert_entry(&call)?;
    ed.finish(cp)
}

/// Whether an exception can leave the method through its own instructions. A method without
/// any instruction that can throw (no invoke, athrow, allocation, array access, division,
/// cast, class or field resolution, monitor; `this.field` accesses excepted) needs no
/// catch-all handler: its `exit` probes see every way out. Saves the handler's bytecode in
/// the small leaf methods that are called most (getters, setters, arithmetic helpers).
pub fn may_throw(ed: &MethodEditor<'_, '_>) -> bool {
    use bci::opcodes::op;
    let code = ed.code().code;
    let insns = ed.insns();
    let synchronized = ed.access() & bci::class::ACC_SYNCHRONIZED != 0;
    if synchronized {
        return true;
    }
    // `aload_0; getfield/putfield` cannot throw NullPointerException when local 0 is `this`
    // and never reassigned (and the field resolves within the class being loaded). Looked at
    // on the first such getfield only.
    let mut this_stable = None;
    let mut is_this_stable = || {
        *this_stable.get_or_insert_with(|| {
            !ed.is_static()
                && !insns.iter().any(|i| {
                    matches!(i.opcode, op::ASTORE | op::ASTORE_0) && i.local(code) == Some(0)
                })
        })
    };
    for (k, i) in insns.iter().enumerate() {
        let safe = match THROWS[i.opcode as usize] {
            T_NEVER => continue,
            T_LDC => matches!(
                ed.class().cp.tag(i.cp_index(code).unwrap_or(0)),
                Some(
                    bci::cp::tag::INTEGER
                        | bci::cp::tag::FLOAT
                        | bci::cp::tag::LONG
                        | bci::cp::tag::DOUBLE
                )
            ),
            T_GETFIELD => {
                k > 0
                    && insns[k - 1].opcode == bci::opcodes::op::ALOAD_0
                    && is_this_stable()
                    && own_field(ed, i, code)
            }
            _ => false,
        };
        if !safe {
            return true;
        }
    }
    false
}

/// [`may_throw`] per opcode: cannot throw, an `ldc` (throws unless a number), a `getfield`
/// (throws unless of an own field of `this`), can throw.
const T_NEVER: u8 = 0;
const T_LDC: u8 = 1;
const T_GETFIELD: u8 = 2;
const T_MAY: u8 = 3;
const THROWS: [u8; 256] = {
    use bci::opcodes::op;
    let mut t = [T_MAY; 256];
    let mut o = 0;
    while o < 256 {
        t[o] = match o as u8 {
            op::NOP..=op::SIPUSH => T_NEVER,
            op::LDC | op::LDC_W | op::LDC2_W => T_LDC,
            op::ILOAD..=op::ALOAD_3 => T_NEVER,
            op::ISTORE..=op::ASTORE_3 => T_NEVER,
            op::POP..=op::SWAP => T_NEVER,
            op::IADD..=op::DMUL => T_NEVER,
            op::FDIV | op::DDIV | op::FREM | op::DREM => T_NEVER,
            op::INEG..=op::LXOR => T_NEVER,
            op::IINC..=op::DCMPG => T_NEVER,
            op::IFEQ..=op::LOOKUPSWITCH => T_NEVER,
            op::IRETURN..=op::RETURN => T_NEVER,
            op::IFNULL | op::IFNONNULL | op::GOTO_W | op::JSR_W => T_NEVER,
            op::GETFIELD => T_GETFIELD,
            _ => T_MAY,
        };
        o += 1;
    }
    t
};

/// A field reference to a field this class declares (its resolution cannot fail).
fn own_field(ed: &MethodEditor<'_, '_>, i: &bci::Insn, code: &[u8]) -> bool {
    let cf = ed.class();
    let Ok(r) = cf.cp.member_ref_bytes(i.cp_index(code).unwrap_or(0)) else {
        return false;
    };
    let (class, name, desc) = (r.class, r.name, r.desc);
    // Names compare as text (as decoded); raw bytes decide unless one is not plain ASCII.
    let text = bci::cp::decode_mutf8;
    // (equal bytes are equal text; unequal plain ASCII is unequal text)
    let (name_ascii, desc_ascii) = (name.is_ascii(), desc.is_ascii());
    let same = |idx: u16, s: &[u8], s_ascii: bool| match cf.cp.utf8_bytes(idx) {
        Ok(b) if b == s => true,
        Ok(b) if s_ascii && b.is_ascii() => false,
        _ => cf.cp.utf8(idx).unwrap_or_default() == text(s),
    };
    let this_class = cf
        .cp
        .class_name_index(cf.this_class)
        .and_then(|n| cf.cp.utf8_bytes(n));
    let same_class = match this_class {
        Ok(t) if t.is_ascii() && class.is_ascii() => t == class,
        Ok(t) => text(t) == text(class),
        Err(_) => false,
    };
    same_class
        && cf.fields.iter().any(|f| {
            same(f.name_index, name, name_ascii) && same(f.descriptor_index, desc, desc_ascii)
        })
}

/// Whether a method with `probes` is counted at its call sites when it is an intrinsic
/// ([`Options::intrinsic_sites`]): it would get the frame-token probes.
fn counted_at_sites(probes: rules::ProbeSet) -> bool {
    probes.contains(Probe::Enter) && probes.contains(Probe::Exit) && probes.contains(Probe::Unwind)
}

/// The class's Methodref and InterfaceMethodref constants (index, increasing) that name an
/// intrinsic ([`intrinsics`]) the rules would give probes, with its id: one pass over the
/// constant pool, so that each invoke is then one search in a short list.
fn intrinsic_refs(
    cf: &ClassFile<'_>,
    rules: &Rules,
    reg: &mut dyn ProbeRegistry,
) -> Vec<(u16, u32)> {
    use bci::cp::tag;
    let mut out = Vec::new();
    // per constant: whether a Class constant names a class of the table (0: not looked at
    // yet, 1: no, 2: yes), looked at once however many methodrefs name it
    let mut listed: Vec<u8> = Vec::new();
    for i in 1..cf.cp.count() {
        if !matches!(
            cf.cp.tag(i),
            Some(tag::METHODREF | tag::INTERFACE_METHODREF)
        ) {
            continue;
        }
        let Ok(c) = cf.cp.member_ref_class_index(i) else {
            continue;
        };
        if listed.is_empty() {
            listed.resize(cf.cp.count() as usize, 0);
        }
        let Some(l) = listed.get_mut(c as usize) else {
            continue;
        };
        if *l == 0 {
            let yes = cf
                .cp
                .class_name_index(c)
                .and_then(|n| cf.cp.utf8_bytes(n))
                .is_ok_and(intrinsics::class_listed);
            *l = 1 + yes as u8;
        }
        if *l == 1 {
            continue;
        }
        let Ok(r) = cf.cp.member_ref_bytes(i) else {
            continue;
        };
        if !intrinsics::in_table(r.class, r.name, r.desc) {
            continue;
        }
        // (the table's names are plain ASCII)
        let (Ok(c), Ok(n), Ok(d)) = (
            std::str::from_utf8(r.class),
            std::str::from_utf8(r.name),
            std::str::from_utf8(r.desc),
        ) else {
            continue;
        };
        if rules.selects_class(c)
            && counted_at_sites(rules.probes_for(c, n, d))
            && !switches_threads(c, n)
        {
            out.push((i, reg.register_ref(c, n, d)));
        }
    }
    out
}

/// Wraps each invoke of the method whose methodref is in `sites` (from [`intrinsic_refs`])
/// in `enterT(id)` / `exitT(token)`, the token in a new int local (set to 0 at entry). With
/// `uncovered`, an invoke that an exception handler covers is left alone (the method has no
/// frame of its own whose token could drop the callee's frame when the handler catches what
/// it threw). Returns whether it placed any.
fn place_sites(
    ed: &mut MethodEditor<'_, '_>,
    cp: &mut bci::CpBuilder<'_>,
    calls: &mut Calls<'_>,
    sites: &[(u16, u32)],
    uncovered: bool,
) -> bci::Result<bool> {
    use bci::opcodes::op;
    let code = ed.code().code;
    let handlers = &ed.code().handlers;
    let mut at: Vec<(usize, u32)> = Vec::new();
    for (k, i) in ed.insns().iter().enumerate() {
        if !(op::INVOKEVIRTUAL..=op::INVOKEINTERFACE).contains(&i.opcode) {
            continue;
        }
        let Some(idx) = i.cp_index(code) else {
            continue;
        };
        let Ok(j) = sites.binary_search_by_key(&idx, |s| s.0) else {
            continue;
        };
        let pc = i.pc;
        if uncovered
            && handlers
                .iter()
                .any(|h| (h.start as u32) <= pc && pc < h.end as u32)
        {
            continue;
        }
        at.push((k, sites[j].1));
    }
    if at.is_empty() {
        return Ok(false);
    }
    let local = ed.new_local(bci::VType::Integer)?;
    let mut init = Snippet::new();
    init.op(op::ICONST_0)?;
    init.store('I', local)?;
    ed.insert_entry(&init)?;
    let exit = calls.with_token(cp, Calls::EXIT_T, local)?;
    for (k, id) in at {
        let mut s = Snippet::new();
        s.int(cp, id as i32)?;
        s.append(calls.get(cp, Calls::ENTER_T)?);
        s.store('I', local)?;
        ed.insert_before(k, &s)?;
        ed.insert_after(k, &exit)?;
    }
    Ok(true)
}

/// The coverage lookup a method covered earlier starts with (`<entry counter> ; invokestatic
/// <this class>.bci$a(I)[J`, see [`coverage`]), in the straight code at its start that runs
/// once per call (no branch, nothing jumps back there, no handler starts there): the
/// invoke's index and the entry counter it bumps. None without one (the pre-52 interfaces'
/// `<clinit>` call the runtime's `arr` instead: left as they were).
fn coverage_lookup(ed: &MethodEditor<'_, '_>) -> Option<(usize, i32)> {
    use bci::opcodes::{op, Flow};
    let cf = ed.class();
    let code = ed.code().code;
    let insns = ed.insns();
    let this = cf
        .cp
        .class_name_index(cf.this_class)
        .and_then(|n| cf.cp.utf8_bytes(n));
    // after the tracing rules' entry calls (one per rule, and their arguments' array), when
    // there are some
    let k = insns
        .iter()
        .take(PROLOGUE_SCAN)
        .take_while(|i| i.flow() == Flow::Next)
        .position(|i| {
            i.opcode == op::INVOKESTATIC
                && i.cp_index(code)
                    .and_then(|c| cf.cp.member_ref_bytes(c).ok())
                    .is_some_and(|r| {
                        r.name == coverage::HELPER.as_bytes()
                            && r.desc == b"(I)[J"
                            && this.as_ref().is_ok_and(|&n| n == r.class)
                    })
        })?;
    let push = insns.get(k.checked_sub(1)?)?;
    let counter = match push.opcode {
        op::ICONST_M1..=op::ICONST_5 => push.opcode as i32 - op::ICONST_0 as i32,
        op::BIPUSH | op::SIPUSH => push.immediate(code)?,
        op::LDC | op::LDC_W => cf.cp.integer(push.cp_index(code)?).ok()?,
        _ => return None,
    };
    let pc = insns[k].pc;
    let mut entered = ed.code().handlers.iter().any(|h| h.handler as u32 <= pc);
    for i in insns {
        i.for_each_target(code, |t| entered |= t <= pc as i64);
    }
    (!entered).then_some((k, counter))
}

/// How many instructions from the start [`coverage_lookup`] and [`trace_entry`] look through
/// (straight-line code only): tracing rules' entry code (one call per rule, with its arguments
/// boxed into an array for `trace` rules) comes before coverage's lookup.
const PROLOGUE_SCAN: usize = 1024;

/// The instruction index of the last call of the tracing rules' entry code (`BciTrace.enter`,
/// or `BciTrace.hit` at the method's entry) at the start of the method, if the code up to it
/// runs straight from the first instruction and nothing jumps back into it: `enterT` goes after
/// it, so that a StackOverflowError thrown by those calls (a recursion run out of stack) comes
/// before the profile counted the call, whose own code then never runs.
fn trace_entry(ed: &MethodEditor<'_, '_>) -> Option<usize> {
    use bci::opcodes::{op, Flow};
    let cf = ed.class();
    let code = ed.code().code;
    let insns = ed.insns();
    let mut last = None;
    for (k, i) in insns
        .iter()
        .enumerate()
        .take(PROLOGUE_SCAN)
        .take_while(|(_, i)| i.flow() == Flow::Next)
    {
        if !(op::INVOKEVIRTUAL..=op::INVOKEDYNAMIC).contains(&i.opcode) {
            continue;
        }
        // the entry code calls the tracing runtime only: the first other call is the
        // method's own code
        let r = (i.opcode == op::INVOKESTATIC)
            .then(|| {
                i.cp_index(code)
                    .and_then(|c| cf.cp.member_ref_bytes(c).ok())
            })
            .flatten();
        let Some(r) = r.filter(|r| r.class == trace::RUNTIME.as_bytes()) else {
            break;
        };
        // `hit(site, info, where, args)`: `where` two instructions before (the arguments
        // are one load); only the entry's (0) belongs to the prologue, whose other calls
        // (the arguments' array: `newArgs`, `arg`) come before the rules' entry calls
        match r.name {
            b"enter" => last = Some(k),
            b"hit" if k >= 2 && insns[k - 2].opcode == op::ICONST_0 => last = Some(k),
            b"hit" => break,
            _ => {}
        }
    }
    let k = last?;
    let pc = insns[k].pc;
    let mut entered = ed.code().handlers.iter().any(|h| h.handler as u32 <= pc);
    for i in insns {
        i.for_each_target(code, |t| entered |= t <= pc as i64);
    }
    (!entered).then_some(k)
}

/// Inserts the probes of one method and returns its new Code attribute body.
fn probe_method(
    mut ed: MethodEditor<'_, '_>,
    cp: &mut bci::CpBuilder<'_>,
    calls: &mut Calls<'_>,
    id: i32,
    probes: rules::ProbeSet,
    opts: &Options,
    sites: &[(u16, u32)],
) -> Result<Vec<u8>, RewriteError> {
    let throws = may_throw(&ed);
    let all = probes.contains(Probe::Enter)
        && probes.contains(Probe::Exit)
        && probes.contains(Probe::Unwind);
    let leaf = opts.leaf_probes && !throws && all;
    let (enter, exit) = if leaf {
        (Calls::LEAF_ENTER, Calls::LEAF_EXIT)
    } else {
        (Calls::ENTER, Calls::EXIT)
    };
    // frame tokens: `enterT` returns the token kept in `tok`; exit and unwind pass it back
    let tok = if opts.frame_tokens && all && !leaf {
        Some(ed.new_local(bci::VType::Integer)?)
    } else {
        None
    };
    let mut timed = None;
    if probes.contains(Probe::Timer) {
        let t = ed.new_local(bci::VType::Long)?;
        let mut s = Snippet::new();
        s.append(calls.get(cp, Calls::NOW)?);
        s.store('J', t)?;
        ed.insert_entry(&s)?;
        let mut s = Snippet::new();
        calls.push_id(&mut s, cp, id)?;
        s.load('J', t)?;
        s.append(calls.get(cp, Calls::TIMED)?);
        timed = Some(s);
    }
    if probes.contains(Probe::Enter) {
        let s = match tok {
            Some(t) => {
                let mut s = Snippet::new();
                calls.push_id(&mut s, cp, id)?;
                s.append(calls.get(cp, Calls::ENTER_T)?);
                s.store('I', t)?;
                s
            }
            None => calls.with_id(cp, enter, id)?,
        };
        // (a class without the helper, no coverage, has no lookup to look for)
        let lookup = tok
            .filter(|_| calls.covered)
            .and_then(|t| coverage_lookup(&ed).map(|l| (t, l)));
        if let Some((t, (k, counter))) = lookup {
            // A method with coverage counters (the agent's coverage=y, or a class covered
            // offline) looks up its counter array first, which bumps its entry counter after
            // the lookup's calls. `enterT` goes after that lookup, between an undo and a redo
            // of the bump: a StackOverflowError thrown by either call (each can be the one
            // that reaches deepest: the lookup's slow half on threads that do not own the
            // class's array, `enterT`'s slow path with a per-call clock) then leaves both
            // counts as they were, as the method's own code never ran; the bytecode around
            // `enterT` cannot throw. Before, `enterT` came first, and a thread recursing to
            // StackOverflowError counted one call per overflow more than its coverage entries
            // and its own code (the lookup threw). The token is -1 (no frame) until then,
            // for the catch-all that covers the lookup.
            let mut bump = |d: u8| -> bci::Result<Snippet> {
                let mut b = Snippet::new();
                b.dup_top(false);
                b.int(cp, counter)?;
                b.op(bci::opcodes::op::DUP2)?
                    .op(bci::opcodes::op::LALOAD)?
                    .op(bci::opcodes::op::LCONST_1)?
                    .op(d)?
                    .op(bci::opcodes::op::LASTORE)?;
                Ok(b)
            };
            let mut after = bump(bci::opcodes::op::LSUB)?;
            after.append(&s);
            after.append(&bump(bci::opcodes::op::LADD)?);
            let mut none = Snippet::new();
            none.op(bci::opcodes::op::ICONST_M1)?.store('I', t)?;
            ed.insert_entry(&none)?;
            ed.insert_after(k, &after)?;
        }
        // A constructor's `enter`: with a frame token, at its first instruction, like any
        // other method's, so that the superclass's constructor (and the code before the
        // super()/this() call, its arguments) runs as its callee. No handler can pop that
        // frame when the super()/this() call throws (HotSpot's verifier rejects every stack
        // map frame a handler covering that call could have: before the call `this` is
        // uninitializedThis and flagThisUninit set, after it `this` is initialized and the
        // flag still demanded), so the frame stays on the shadow stack: the handlers of the
        // callers drop it (below). Without a token `enter` runs right after the super()/this()
        // call, where the catch-all begins, and an exception thrown before or by that call
        // leaves no frame; a constructor whose branches call different super()/this()
        // constructors gets `enter` after each (every run passes exactly one).
        let supers = match tok {
            Some(_) => Vec::new(),
            None => ed.super_calls()?.to_vec(),
        };
        // Tracing rules' entry code (without coverage: with it, coverage's lookup comes after
        // that code and `enterT` goes after the lookup, above): `enterT` after it, the token
        // -1 (no frame) until then. Before, `enterT` came first, and a recursion to
        // StackOverflowError whose tracing probe ran out of stack counted calls in the profile
        // whose code never ran (found by the exactness hunt E, F1).
        let traced = match (tok, lookup) {
            (Some(t), None) => trace_entry(&ed).map(|k| (t, k)),
            _ => None,
        };
        if let Some((t, k)) = traced {
            let mut none = Snippet::new();
            none.op(bci::opcodes::op::ICONST_M1)?.store('I', t)?;
            ed.insert_entry(&none)?;
            ed.insert_after(k, &s)?;
        }
        if supers.is_empty() && lookup.is_none() && traced.is_none() {
            ed.insert_entry(&s)?;
        }
        for k in supers {
            ed.insert_after(k, &s)?;
        }
    }
    if let Some(t) = tok {
        // Handlers over a call drop the frames above the method's own when entered: a
        // constructor called there whose super()/this() call threw (see above), or any
        // callee whose exit was lost, would otherwise be taken for the caller of what the
        // handler calls, until the method exits. The token is the shadow stack's pointer
        // below the method's frame, which is two slots: `exitT(token + 2)` sets it back to
        // just above that frame (a no-op when nothing is above it; token -1, no frame: 1, which
        // exitT ignores). Before the exit probes: a handler whose first instruction is a
        // return must drop the frames above before its own frame is popped.
        let starts = ed.handler_starts(|i| {
            (bci::opcodes::op::INVOKEVIRTUAL..=bci::opcodes::op::INVOKEDYNAMIC).contains(&i.opcode)
        })?;
        if !starts.is_empty() {
            let mut s = Snippet::new();
            s.load('I', t)?
                .op(bci::opcodes::op::ICONST_2)?
                .op(bci::opcodes::op::IADD)?;
            s.append(calls.get(cp, Calls::EXIT_T)?);
            for k in starts {
                ed.insert_before(k, &s)?;
            }
        }
        // intrinsics called here: after the handlers' resets (an intrinsic call that starts
        // a handler runs the reset first)
        if !sites.is_empty() {
            place_sites(&mut ed, cp, calls, sites, false)?;
        }
    }
    if probes.contains(Probe::Exit) || timed.is_some() {
        let mut s = Snippet::new();
        if probes.contains(Probe::Exit) {
            match tok {
                Some(t) => s.append(&calls.with_token(cp, Calls::EXIT_T, t)?),
                None => s.append(&calls.with_id(cp, exit, id)?),
            };
        }
        if let Some(t) = &timed {
            s.append(t);
        }
        ed.insert_before_returns(|_| Ok(s.clone()))?;
    }
    if probes.contains(Probe::Unwind) && throws {
        let mut s = match tok {
            Some(t) => calls.with_token(cp, Calls::UNWIND_T, t)?,
            None => calls.with_id(cp, Calls::UNWIND, id)?,
        };
        if let Some(t) = &timed {
            s.append(t);
        }
        ed.add_catch_all(&s)?;
    }
    ed.finish(cp)
}
