//! The one place that calls the rewriter (crate `bci_rewriter`), so its API shows up in one file.
//! Built without the `rewriter` feature, a stub refuses to start (it could instrument nothing).

use crate::options::Options;
use crate::registry::Registry;

pub const DEFAULT_RUNTIME_CLASS: &str = "bci/runtime/Probes";

/// The built-in rules: rules/cpu-times.toml (via `Rules::cpu_times`) with the runtime as
/// java.lang.BciProbes, which the agent defines at early VMStart, so that classes loaded before
/// VMInit (java.lang, most of java.util) are instrumented too. A rules= file naming
/// bci/runtime/Probes gets the VMInit runtime instead (classes loaded before VMInit stay
/// original).
pub const EARLY_RUNTIME_CLASS: &str = "java/lang/BciProbes";

/// Classes the built-in rules leave alone: none. (java.lang.Object was excluded while its
/// instrumented `<init>` had a catch-all handler: C2 on JDK 17.0.21 crashed in
/// ciExceptionHandler::catch_klass compiling it. Methods that cannot throw get no handler
/// now, and Object.<init> is counted like every other method.)
pub const BUILTIN_EXCLUDES: &[&str] = &[];

/// Classes the JDK generates at run time for reflection and serialization
/// (`GeneratedMethodAccessor1`, `GeneratedConstructorAccessor1`,
/// `GeneratedSerializationConstructorAccessor1`, …; JDK 8 in sun.reflect, JDK 9-17 in
/// jdk.internal.reflect; JDK 18+ uses method handles instead), defined by a
/// DelegatingClassLoader that cannot find them by name: with coverage counters their
/// `<clinit>` failed to resolve the class itself (NoClassDefFoundError at the 16th
/// Method.invoke, in every reflective or deserializing program on JDK 17). They have no source,
/// so coverage leaves them alone, as JaCoCo does (its `exclclassloader`).
pub const REFLECTION_ACCESSORS: &[&str] =
    &["jdk/internal/reflect/Generated", "sun/reflect/Generated"];

/// JFR's event classes and their mirrors (jdk.jfr.events.* and jdk.internal.event.*): JFR
/// checks at start that each mirror declares exactly the fields of its event class, so a
/// field coverage adds to one of a pair (serialVersionUID, kept for serialization) stopped
/// every JVM started with -XX:StartFlightRecording ("Found additional fields in mirror class
/// [serialVersionUID]", "Failure when starting JFR"; `jcmd JFR.start` failed alike). Coverage
/// leaves them alone, and jdk.jfr.Event, which every mirror extends (its fields count in the
/// check): JFR's plumbing, of no interest to a program's coverage.
pub const JFR_EVENT_CLASSES: &[&str] = &["jdk/jfr/events/", "jdk/internal/event/"];

/// The superclass of JFR's event classes (see [`JFR_EVENT_CLASSES`]).
pub const JFR_EVENT: &str = "jdk/jfr/Event";

/// The class that gets [`THREAD_FIELDS`].
pub const THREAD_CLASS: &str = "java/lang/Thread";

/// Fields added to java.lang.Thread when the runtime is java.lang.BciProbes: the thread's
/// runtime state, which the probes reach in two loads (`Thread.currentThread().bci$t`).
/// Package-private, transient and synthetic. Must match the stub Thread in build.rs.
pub const THREAD_FIELDS: &[(&str, &str)] = &[("bci$t", "Ljava/lang/BciProbes$T;")];

/// The coverage runtime (`coverage=y`), defined at early VMStart like java.lang.BciProbes.
pub const COV_RUNTIME_CLASS: &str = "java/lang/BciCov";

/// The field added to java.lang.Thread with `coverage=y`: the thread's counter arrays by class
/// id (java.lang.BciCov). Must match the stub Thread build.rs compiles BciCov against.
pub const COV_THREAD_FIELD: (&str, &str) = ("bci$c", "[[J");

/// What [`Engine::instrument`] gives back.
#[derive(Debug, Default)]
pub struct Rewritten {
    /// The new class bytes (`None`: unchanged).
    pub bytes: Option<Vec<u8>>,
    /// Methods left original (`class.method(desc): reason`), and parts left out (coverage of a
    /// class that could not take it, with the reason).
    pub left: Vec<String>,
    /// The class's coverage id, when it got coverage counters.
    pub cov_id: Option<i32>,
    /// With `cov_id`: the hash the coverage data keys the class by.
    pub cov_hash: u64,
    /// Coverage selected it, but `bci instrument` had instrumented it without `--coverage`:
    /// it cannot take counters now.
    pub marked_uncovered: bool,
    /// Methods the coverage counters grew past HotSpot's compile limit, one note each
    /// (`coverage::huge_note`).
    pub huge: Vec<String>,
    /// java.lang.Thread got the cpu=times runtime's fields (THREAD_FIELDS).
    pub cpu_fields: bool,
    /// java.lang.Thread got [`COV_THREAD_FIELD`].
    pub cov_field: bool,
    /// The bytes call this agent's runtime already ([`Engine::carries_probes`]): left as they
    /// are.
    pub probed: bool,
    /// The bytes call [`OFFLINE_COV_CLASS`]: counters of `bci instrument --coverage`.
    pub offline_cov: bool,
}

/// The class the counters of `bci instrument --coverage` call (the runtime jar's; the agent
/// defines a forwarder of its own with `coverage=y` only).
pub const OFFLINE_COV_CLASS: &str = "bci/runtime/Cov";

/// Which of `names` (internal names, ASCII; at most 32) class file `bytes` has a CONSTANT_Class
/// of: bit k for `names[k]`. A walk of the constant pool only, allocation-free when no Utf8 entry
/// matches; 0 for bytes whose pool does not parse (the rewriter says what is wrong with them).
pub fn pool_classes(bytes: &[u8], names: &[&str]) -> u32 {
    if bytes.get(..4) != Some(&[0xCA, 0xFE, 0xBA, 0xBE]) {
        return 0;
    }
    // (Utf8 index, which name)
    let mut hits: Vec<(u16, usize)> = Vec::new();
    let found = walk_pool(bytes, |i, tag, payload| {
        if tag == 1 {
            if let Some(k) = names
                .iter()
                .position(|n| payload.get(2..) == Some(n.as_bytes()))
            {
                hits.push((i, k));
            }
        }
        false
    });
    let mut bits = 0u32;
    if found.is_some() && !hits.is_empty() {
        walk_pool(bytes, |_, tag, payload| {
            if tag == 7 {
                let at = u16::from_be_bytes([payload[0], payload[1]]);
                for &(_, k) in hits.iter().filter(|h| h.0 == at) {
                    bits |= 1u32.checked_shl(k as u32).unwrap_or(0);
                }
            }
            false
        });
    }
    bits
}

/// Calls `f(index, tag, payload)` for each constant of the pool of class file `bytes` (the
/// payload after the tag; a Utf8's starts with its length) until it returns true: Some(true)
/// then, Some(false) at the pool's end, None where the pool does not parse.
fn walk_pool(bytes: &[u8], mut f: impl FnMut(u16, u8, &[u8]) -> bool) -> Option<bool> {
    let u16_at = |p: usize| Some(u16::from_be_bytes([*bytes.get(p)?, *bytes.get(p + 1)?]));
    let count = u16_at(8)?;
    let (mut p, mut i) = (10usize, 1u16);
    while i < count {
        let tag = *bytes.get(p)?;
        let len = match tag {
            1 => 2 + u16_at(p + 1)? as usize,
            3 | 4 | 9..=12 | 17 | 18 => 4,
            5 | 6 => 8,
            7 | 8 | 16 | 19 | 20 => 2,
            15 => 3,
            _ => return None,
        };
        if f(i, tag, bytes.get(p + 1..p + 1 + len)?) {
            return Some(true);
        }
        p += 1 + len;
        i = i.saturating_add(if matches!(tag, 5 | 6) { 2 } else { 1 });
    }
    Some(false)
}
/// Whether the class carries the marker of `bci instrument` (the rewriter leaves it alone).
pub fn is_marked(bytes: &[u8]) -> bool {
    #[cfg(feature = "rewriter")]
    {
        matches!(bci_rewriter::offline::marker(bytes), Ok(Some(_)))
    }
    #[cfg(not(feature = "rewriter"))]
    {
        let _ = bytes;
        false
    }
}

#[cfg(feature = "rewriter")]
mod imp {
    use super::*;
    use crate::registry::MethodRec;

    /// Access of [`THREAD_FIELDS`]: package-private, transient, synthetic.
    const THREAD_FIELD_ACCESS: u16 = 0x0080 | 0x1000;
    use crate::coverage::{ClassRec, CovRegistry};
    use bci_rewriter::coverage::ClassId;
    use bci_rewriter::flow::Split;
    use bci_rewriter::{
        instrument_methods, Glob, MethodInfo, NewField, Outcome, ProbeRegistry, Rules, MOUNT_CLASS,
    };

    pub struct Engine {
        rules: Rules,
        opts: bci_rewriter::Options,
        /// cpu=times (or rules=) on.
        cpu: bool,
        /// coverage=y: class filters (include, exclude).
        cov: Option<(Vec<Glob>, Vec<Glob>)>,
        /// Tracing rules of the rules= file (they run next to the probe rules).
        trace: Vec<bci_rewriter::trace::TraceRule>,
        /// The next tracing site id.
        sites: std::sync::atomic::AtomicI32,
        /// Per tracing rule (in file order), the sites placed in classes instrumented.
        placed: Vec<std::sync::atomic::AtomicU32>,
        /// Per tracing rule, why it may have recorded nothing, for the summary
        /// ([`Engine::trace_placed`]).
        reach: Vec<Reach>,
        /// coverage without cpu=times: a pass that only adds [`COV_THREAD_FIELD`] to Thread
        /// (also used while cpu=times waits for VMInit).
        fields_only: Option<(Rules, bci_rewriter::Options)>,
    }

    /// What a tracing rule met in the classes loaded besides its sites.
    #[derive(Default)]
    struct Reach {
        /// Its class pattern matched a class tracing may instrument.
        allowed: std::sync::atomic::AtomicBool,
        /// Classes its class pattern matched that tracing never instruments (java.lang, …;
        /// the first few), dotted.
        never: std::sync::Mutex<Vec<String>>,
        /// The first method it matched that tracing leaves alone (native, abstract,
        /// `<clinit>`, a HotSpot intrinsic), described.
        untraced: std::sync::Mutex<Option<String>>,
        /// Methods it matched that tracing instruments (while it had no site), none with its
        /// line or call, and the calls `Owner.method` whose owner's simple name its call's
        /// owner names (the first few).
        matched: std::sync::atomic::AtomicU32,
        near: std::sync::Mutex<Vec<String>>,
        /// The first method it matched that was left original, with why.
        left: std::sync::Mutex<Option<String>>,
    }

    fn cov_field() -> NewField {
        NewField {
            class: THREAD_CLASS.to_string(),
            access: THREAD_FIELD_ACCESS,
            name: COV_THREAD_FIELD.0.to_string(),
            desc: COV_THREAD_FIELD.1.to_string(),
        }
    }

    /// The agent's method table; `reuse` (a redefinition): a method of the class registered
    /// before keeps its id.
    struct Reg<'a>(&'a Registry, bool);

    impl ProbeRegistry for Reg<'_> {
        fn register(&mut self, m: &MethodInfo<'_>) -> u32 {
            if self.1 {
                if let Some(id) = self.0.find(m.class, m.name, m.desc) {
                    return id;
                }
            }
            self.0.register(MethodRec {
                class: m.class.to_string(),
                name: m.name.to_string(),
                desc: m.desc.to_string(),
                source_file: m.source_file.map(str::to_string),
                first_line: m.first_line,
            })
        }
        fn register_ref(&mut self, class: &str, name: &str, desc: &str) -> u32 {
            self.0.register_ref(class, name, desc)
        }
    }

    impl Engine {
        pub fn new(o: &Options) -> Result<Engine, String> {
            let file = match &o.rules {
                Some(path) => {
                    let src = std::fs::read(path).map_err(|e| format!("rules={path}: {e}"))?;
                    let r = Rules::parse_bytes(&src, path).map_err(|e| e.to_string())?;
                    r.check_agent_runtime().map_err(|e| e.to_string())?;
                    Some(r)
                }
                None => None,
            };
            let trace = file
                .as_ref()
                .map(|f| f.trace_rules().to_vec())
                .unwrap_or_default();
            if o.tracefile.is_some() && !trace.iter().any(|r| r.trace) {
                return Err(
                    "tracefile= needs rules=<file> with a rule that says trace = true".to_string(),
                );
            }
            // and trace events need a trace file: without one they were dropped, silently
            if let (None, Some(r), Some(path)) =
                (&o.tracefile, trace.iter().find(|r| r.trace), &o.rules)
            {
                let more = trace.iter().filter(|r| r.trace).count() - 1;
                return Err(format!(
                    "{path}:{}:{}: rule {:?} says trace = true, but no tracefile= is given: \
                     its trace events would be written nowhere{}; add tracefile=PATH to the \
                     agent's options (for the summary alone, say count = true or time = true \
                     instead of trace = true)",
                    r.trace_pos.0,
                    r.trace_pos.1,
                    r.name,
                    match more {
                        0 => String::new(),
                        1 => " (nor would those of 1 more rule)".to_string(),
                        n => format!(" (nor would those of {n} more rules)"),
                    }
                ));
            }
            // (the trace file is opened and locked at load, callbacks.rs, like the report
            // file: one that cannot be written stops the JVM there, not silently at VMInit)
            // a file with tracing rules only traces: the cpu=times profile runs next to it
            // when cpu=times is given too
            let cpu = o.cpu
                && (o.cpu_given
                    || file
                        .as_ref()
                        .is_none_or(|f| f.has_probe_rules() || f.trace_rules().is_empty()));
            let rules = match file {
                // probe rules replace the built-in cpu=times rules; tracing rules run next to them
                Some(f) if f.has_probe_rules() => f,
                _ => Rules::cpu_times()
                    .with_runtime(EARLY_RUNTIME_CLASS)
                    .with_filters(
                        &[],
                        &BUILTIN_EXCLUDES
                            .iter()
                            .map(|s| s.to_string())
                            .collect::<Vec<_>>(),
                    ),
            };
            let mut opts = bci_rewriter::Options {
                // a method that cannot take probes stays original, not its whole class
                method_fallback: true,
                ..Default::default()
            };
            // BCIAGENT_NO_THREAD_FIELDS (tests): leave Thread alone, so that the runtime
            // build that looks threads up by hash is used
            if rules.runtime_class() == EARLY_RUNTIME_CLASS
                && std::env::var_os("BCIAGENT_NO_THREAD_FIELDS").is_none()
            {
                opts.fields = THREAD_FIELDS
                    .iter()
                    .map(|(name, desc)| NewField {
                        class: THREAD_CLASS.to_string(),
                        access: THREAD_FIELD_ACCESS,
                        name: name.to_string(),
                        desc: desc.to_string(),
                    })
                    .collect();
            }
            // pure leaves get the runtime's leafEnter/leafExit (ours has them; a rules file's
            // own runtime class may not). BCIAGENT_NO_LEAF_PROBES (benchmarks): plain probes.
            opts.leaf_probes = (rules.runtime_class() == EARLY_RUNTIME_CLASS
                || rules.runtime_class() == DEFAULT_RUNTIME_CLASS)
                && std::env::var_os("BCIAGENT_NO_LEAF_PROBES").is_none();
            // the frame tokens (enterT/exitT/unwindT): ours has them too
            opts.frame_tokens = (rules.runtime_class() == EARLY_RUNTIME_CLASS
                || rules.runtime_class() == DEFAULT_RUNTIME_CLASS)
                && std::env::var_os("BCIAGENT_NO_FRAME_TOKENS").is_none();
            // HotSpot intrinsics counted at their call sites (with the tokens: they use
            // enterT/exitT). BCIAGENT_NO_INTRINSIC_SITES (A/B runs): in their bodies, as before.
            opts.intrinsic_sites =
                opts.frame_tokens && std::env::var_os("BCIAGENT_NO_INTRINSIC_SITES").is_none();
            // virtual threads run with their carrier's cache (Probes.mounted; JDK 21+).
            // BCIAGENT_NO_MOUNT_HOOK (benchmarks): each keeps a cache of its own.
            opts.mount_hook = rules.runtime_class() == EARLY_RUNTIME_CLASS
                && std::env::var_os("BCIAGENT_NO_MOUNT_HOOK").is_none();
            // a pattern that would silently match nothing stops the JVM at start, whatever
            // the mode (cpu=times, rules, coverage)
            for p in o.include.iter().chain(&o.exclude) {
                Glob::check(p).map_err(|e| format!("include/exclude '{p}': {e}"))?;
            }
            let (cov, fields_only) = if o.coverage {
                if o.cpu {
                    opts.fields.push(cov_field());
                }
                let only = (
                    Rules::cpu_times().with_filters(&[], &["*".to_string()]),
                    bci_rewriter::Options {
                        fields: vec![cov_field()],
                        ..Default::default()
                    },
                );
                (
                    Some((
                        o.include.iter().map(|p| Glob::class(p)).collect(),
                        o.exclude.iter().map(|p| Glob::class(p)).collect(),
                    )),
                    Some(only),
                )
            } else {
                (None, None)
            };
            Ok(Engine {
                placed: trace.iter().map(|_| Default::default()).collect(),
                reach: trace.iter().map(|_| Default::default()).collect(),
                rules: rules.with_filters(&o.include, &o.exclude),
                opts,
                cpu,
                cov,
                fields_only,
                trace,
                sites: std::sync::atomic::AtomicI32::new(0),
            })
        }

        fn cov_selects(&self, name: &str) -> bool {
            let Some((inc, exc)) = &self.cov else {
                return false;
            };
            // with cpu=times too, java.lang.Object gets cpu=times only: the call to
            // BciCov.arr in its <init> would make cpu=times give it a catch-all handler, and C2
            // (JDK 17.0.21) crashes in ciExceptionHandler::catch_klass compiling that
            // (see BUILTIN_EXCLUDES)
            if self.cpu && name == "java/lang/Object" || name == JFR_EVENT {
                return false;
            }
            if [COV_RUNTIME_CLASS, EARLY_RUNTIME_CLASS, "bci/runtime/"]
                .iter()
                .chain(REFLECTION_ACCESSORS)
                .chain(JFR_EVENT_CLASSES)
                .any(|p| name.starts_with(p))
            {
                return false;
            }
            (inc.is_empty() || inc.iter().any(|g| g.matches(name)))
                && !exc.iter().any(|g| g.matches(name))
        }

        /// Names of the tracing rules, in file order (empty: no tracing).
        pub fn trace_rules(&self) -> Vec<String> {
            self.trace.iter().map(|r| r.name.clone()).collect()
        }

        /// Per tracing rule (in file order), how many sites it has in the classes instrumented
        /// so far, for the summary's rows of rules that recorded nothing.
        pub fn trace_placed(&self) -> Vec<crate::trace::Placed> {
            self.trace
                .iter()
                .zip(&self.placed)
                .zip(&self.reach)
                .map(|((r, n), reach)| {
                    let sites = n.load(std::sync::atomic::Ordering::Relaxed);
                    crate::trace::Placed {
                        rule: r.name.clone(),
                        sites,
                        at: match &r.location {
                            bci_rewriter::trace::Location::Method {
                                entry,
                                exit,
                                exception,
                            } => crate::trace::At::Method {
                                entry: *entry,
                                exit: *exit,
                                exception: *exception,
                            },
                            bci_rewriter::trace::Location::Line(_) => crate::trace::At::Line,
                            bci_rewriter::trace::Location::Call { after, .. } => {
                                crate::trace::At::Call { after: *after }
                            }
                        },
                        why: if sites == 0 {
                            self.why_unplaced(r, reach)
                        } else {
                            None
                        },
                    }
                })
                .collect()
        }

        /// Why rule `r` was placed nowhere, when that is known: its class pattern names (or
        /// matched only) classes tracing never instruments, the methods it matched were left
        /// original, none of them has its line or call (as `bci rules explain` says), or it
        /// matched only methods tracing leaves alone.
        fn why_unplaced(
            &self,
            r: &bci_rewriter::trace::TraceRule,
            reach: &Reach,
        ) -> Option<String> {
            use bci_rewriter::trace::Location;
            let never = reach.never.lock().map(|v| v.clone()).unwrap_or_default();
            let allowed = reach.allowed.load(std::sync::atomic::Ordering::Relaxed);
            let matched = reach.matched.load(std::sync::atomic::Ordering::Relaxed);
            let methods = format!(
                "it matched {matched} method{} of the classes loaded",
                if matched == 1 { "" } else { "s" }
            );
            r.never_traced(&[])
                .or_else(|| {
                    let names: Vec<&str> = never.iter().map(String::as_str).collect();
                    (!allowed).then(|| r.never_traced(&names)).flatten()
                })
                .or_else(|| reach.left.lock().ok()?.clone())
                .or_else(|| match &r.location {
                    _ if matched == 0 => None,
                    Location::Line(n) => Some(format!("{methods}; line {n} is in none of them")),
                    Location::Call { .. } => {
                        let near = reach.near.lock().map(|v| v.clone()).unwrap_or_default();
                        let hint = if near.is_empty() {
                            String::new()
                        } else {
                            let shown: Vec<String> =
                                near.iter().take(3).map(|c| format!("{c:?}")).collect();
                            format!(
                                "; the owner is a whole class name: call = {} would match",
                                shown.join(" or ")
                            )
                        };
                        Some(format!("{methods}; none of them makes that call{hint}"))
                    }
                    Location::Method { .. } => None,
                })
                .or_else(|| {
                    let u = reach.untraced.lock().ok()?.clone()?;
                    Some(format!("it matched only methods tracing leaves alone: {u}"))
                })
        }

        /// Notes in each rule's [`Reach`] the methods of class `name` it matched
        /// (`sites`, [`bci_rewriter::trace::explain_some`]) and, of those, the first one left
        /// original (`left`: the tracing pass's errors, `Class.method(desc): why`; `whole`:
        /// the class's, `Class: why`).
        fn note_matched(
            &self,
            name: &str,
            sites: &[bci_rewriter::trace::Site],
            left: &[String],
            whole: Option<&str>,
        ) {
            use std::sync::atomic::Ordering::Relaxed;
            let mut last: Option<(usize, &str, &str)> = None;
            for s in sites {
                let Some(reach) = self.reach.get(s.rule) else {
                    continue;
                };
                // one method (its sites come together) counted once
                if last != Some((s.rule, &s.method, &s.desc)) {
                    last = Some((s.rule, &s.method, &s.desc));
                    let path = format!("{name}.{}{}", s.method, s.desc);
                    // (a method without the rule's line or call lost no site of it)
                    let why = (left.iter())
                        .find(|e| e.starts_with(&format!("{path}:")))
                        .map(String::as_str)
                        .or(whole)
                        .filter(|_| !s.location.is_empty());
                    if let Some(why) = why {
                        if let Ok(mut l) = reach.left.lock() {
                            l.get_or_insert_with(|| format!("left original: {why}"));
                        }
                        continue;
                    }
                    reach.matched.fetch_add(1, Relaxed);
                }
                if let Ok(mut near) = reach.near.lock() {
                    for c in &s.near_calls {
                        if near.len() < 4 && !near.contains(c) {
                            near.push(c.clone());
                        }
                    }
                }
            }
        }

        /// [`bci_rewriter::trace::selects_class`], noting for each rule whose class pattern
        /// matches `internal_name` whether tracing may instrument that class (for
        /// [`Engine::why_unplaced`]).
        fn trace_selects(&self, internal_name: &str) -> bool {
            use std::sync::atomic::Ordering::Relaxed;
            let allowed = bci_rewriter::trace::allowed(internal_name);
            let mut any = false;
            for (r, reach) in self.trace.iter().zip(&self.reach) {
                if !r.name_matches_internal(internal_name) {
                    continue;
                }
                if allowed {
                    any = true;
                    reach.allowed.store(true, Relaxed);
                } else if let Ok(mut v) = reach.never.lock() {
                    if v.len() < 4 {
                        v.push(internal_name.replace('/', "."));
                    }
                }
            }
            any
        }

        /// Whether classes get the cpu=times (or rule-file probe) profile.
        pub fn profiles(&self) -> bool {
            self.cpu
        }

        /// Whether java.lang.Thread gets fields (the profile's state, coverage's arrays): the
        /// rewrite HotSpot's AOT cache writer cannot take (hotspot::check_flags).
        pub fn rewrites_thread(&self) -> bool {
            (self.cpu && self.opts.adds_fields_to(THREAD_CLASS))
                || self
                    .fields_only
                    .as_ref()
                    .is_some_and(|(_, o)| o.adds_fields_to(THREAD_CLASS))
        }

        /// Whether the hook must hand class `internal_name` to [`Engine::instrument`]: rules
        /// or coverage select it, or it gets the runtime's fields.
        pub fn selects(&self, internal_name: &str) -> bool {
            (self.cpu && self.rules.selects_class(internal_name))
                || self.opts.adds_fields_to(internal_name)
                // VirtualThread gets the mount hooks whatever include=/exclude= say (clock=cpu
                // moves a virtual thread's clock there: with include=com.acme.* it was left
                // alone, and each virtual thread was charged its carrier's CPU time)
                || (self.cpu && self.opts.mount_hook && internal_name == MOUNT_CLASS)
                || self.cov_selects(internal_name)
                || (!self.trace.is_empty() && self.trace_selects(internal_name))
                || self
                    .fields_only
                    .as_ref()
                    .is_some_and(|(_, o)| o.adds_fields_to(internal_name))
        }

        pub fn runtime_class(&self) -> &str {
            self.rules.runtime_class()
        }

        /// Whether `bytes` call this agent's runtime (java.lang.BciProbes, BciCov, BciTrace;
        /// an unmarked class calling the rules= file's bci/runtime/Probes): bytes this agent
        /// produced, read back from the running class (a retransformation-capable transformer
        /// sees them, as Byte Buddy's ClassFileLocator.AgentBased does before it redefines the
        /// class with them). Their ids are this JVM's: instrumented again, every call counted
        /// twice. A constant-pool walk, for selected classes only.
        pub fn carries_probes(&self, bytes: &[u8]) -> bool {
            self.runtimes_called(bytes).0
        }

        /// [`Engine::carries_probes`], and whether `bytes` call [`OFFLINE_COV_CLASS`]: one
        /// walk of the pool.
        fn runtimes_called(&self, bytes: &[u8]) -> (bool, bool) {
            let bits = pool_classes(
                bytes,
                &[
                    EARLY_RUNTIME_CLASS,
                    COV_RUNTIME_CLASS,
                    crate::trace::CLASS,
                    DEFAULT_RUNTIME_CLASS,
                    OFFLINE_COV_CLASS,
                ],
            );
            let ours = bits & 0b111 != 0
                || (bits & 0b1000 != 0
                    && self.runtime_class() == DEFAULT_RUNTIME_CLASS
                    && !is_marked(bytes));
            (ours, bits & 0b10000 != 0)
        }

        /// Coverage first (planned from the original bytes: the class hash and counter
        /// numbering are those of `bci instrument --coverage`), then the tracing rules, then
        /// cpu=times on the result
        /// (`cpu_live`: its runtime is defined). A class whose coverage fails still gets
        /// cpu=times (the reason is in `left`).
        ///
        /// `redefined`: the class is being redefined (JVMTI RedefineClasses; `bytes` are its new
        /// version), and these are the names of the fields its loaded version has. A
        /// redefinition may not add or remove fields or methods, so the new version gets
        /// coverage only if the loaded one has it (`bci$s`), with a class id of its own
        /// ([`ClassId::Redefined`]: its counters are numbered for its own code), and its
        /// methods keep their cpu=times ids. If the fields this gives differ from the loaded
        /// version's anyway, the new bytes are left as they are (the reason in `left`).
        pub fn instrument(
            &self,
            name: &str,
            bytes: &[u8],
            reg: &Registry,
            cov: &CovRegistry,
            cpu_live: bool,
            redefined: Option<&[String]>,
        ) -> Result<Rewritten, String> {
            let (probed, offline_cov) = self.runtimes_called(bytes);
            if probed {
                return Ok(Rewritten {
                    probed: true,
                    offline_cov,
                    ..Default::default()
                });
            }
            let mut r = self.instrument_once(name, bytes, reg, cov, cpu_live, redefined)?;
            r.offline_cov = offline_cov;
            if let (Some(loaded), Some(out)) = (redefined, &r.bytes) {
                let ours = |names: &mut dyn Iterator<Item = String>| {
                    let mut v: Vec<String> = names.filter(|n| n.starts_with("bci$")).collect();
                    v.sort();
                    v
                };
                let before = ours(&mut loaded.iter().cloned());
                let after = match bci::ClassFile::parse(out) {
                    Ok(cf) => ours(&mut cf.fields.iter().map(|f| cf.member_name(f).into_owned())),
                    Err(e) => return Err(e.to_string()),
                };
                if before != after {
                    r.left.push(format!(
                        "{name}: redefined: its new version is left as given (instrumented, \
                         it would have the fields {after:?} where the loaded version has \
                         {before:?}, and a redefinition may not change them)"
                    ));
                    r.bytes = None;
                    if let Some(id) = r.cov_id.take() {
                        cov.clear(id);
                    }
                    r.huge.clear();
                }
            }
            Ok(r)
        }

        fn instrument_once(
            &self,
            name: &str,
            bytes: &[u8],
            reg: &Registry,
            cov: &CovRegistry,
            cpu_live: bool,
            redefined: Option<&[String]>,
        ) -> Result<Rewritten, String> {
            let mut r = Rewritten::default();
            let mut cur: Option<Vec<u8>> = None;
            let mut rec: Option<ClassRec> = None;
            let mut exits: Vec<(String, String, u16)> = Vec::new();
            let covered_before = redefined
                .is_none_or(|f| f.iter().any(|n| n == bci_rewriter::coverage::SHARED_FIELD));
            if self.cov_selects(name) && covered_before {
                let id = cov.reserve();
                let copts = bci_rewriter::coverage::Options {
                    runtime: COV_RUNTIME_CLASS,
                    split: Split::AfterCalls,
                    class_id: if redefined.is_some() {
                        ClassId::Redefined(id)
                    } else {
                        ClassId::Constant(id)
                    },
                };
                match bci_rewriter::coverage::instrument(bytes, &copts) {
                    Ok((Outcome::Rewritten(b), cc)) => {
                        for (m, d, why) in &cc.skipped {
                            if let bci_rewriter::coverage::Skipped::Error(e) = why {
                                r.left.push(format!("{name}.{m}{d}: no coverage: {e}"));
                            }
                        }
                        // set once the later passes are done: each exit local with the
                        // fingerprint of the method's final code
                        exits = cc
                            .methods
                            .iter()
                            .filter_map(|m| Some((m.name.clone(), m.desc.clone(), m.exit_local?)))
                            .collect();
                        rec = Some(ClassRec {
                            exits: Vec::new(),
                            name: cc.name,
                            hash: cc.hash,
                            counters: cc.counters,
                        });
                        r.cov_id = Some(id);
                        r.cov_hash = cc.hash;
                        r.huge = cc
                            .huge
                            .iter()
                            .map(|(m, d, before, after)| {
                                bci_rewriter::coverage::huge_note(name, m, d, *before, *after)
                            })
                            .collect();
                        cur = Some(b);
                    }
                    Ok((Outcome::Unchanged, cc)) => r.marked_uncovered = cc.marked == Some(false),
                    Err(e) => r
                        .left
                        .push(format!("{name}: class left without coverage: {e}")),
                }
            }
            // tracing rules next, on the covered class (its lines and calls are unchanged)
            // (the rules of the sites placed, counted once the class is rewritten whole)
            let mut placed: Vec<usize> = Vec::new();
            if !self.trace.is_empty() {
                let mut next = |rule: &bci_rewriter::trace::TraceRule| {
                    placed.extend(self.trace.iter().position(|t| std::ptr::eq(t, rule)));
                    self.sites
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                };
                let input = cur.as_deref().unwrap_or(bytes);
                // the methods rules match that tracing leaves alone, for the summary's reason
                // (only classes some rule's class pattern selects are parsed for them)
                if bci_rewriter::trace::selects_class(&self.trace, name) {
                    for u in bci_rewriter::trace::untraceable_matches(input, &self.trace)
                        .unwrap_or_default()
                    {
                        if let Some(Ok(mut first)) =
                            self.reach.get(u.rule).map(|r| r.untraced.lock())
                        {
                            first.get_or_insert_with(|| u.describe());
                        }
                    }
                }
                // what the rules placed nowhere so far match here, for the summary's reason
                // (no allocation and no second parse once every rule is placed)
                let unplaced =
                    |k: usize| self.placed[k].load(std::sync::atomic::Ordering::Relaxed) == 0;
                let matched = if (0..self.placed.len()).any(unplaced)
                    && bci_rewriter::trace::selects_class(&self.trace, name)
                {
                    bci_rewriter::trace::explain_some(input, &self.trace, &unplaced)
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                let left = match bci_rewriter::trace::instrument(input, &self.trace, &mut next) {
                    Ok((b, left)) => {
                        r.left.extend(left.iter().map(|e| e.to_string()));
                        if b.is_some() {
                            cur = b;
                        } else {
                            placed.clear();
                        }
                        (left.iter().map(|e| e.to_string()).collect(), None)
                    }
                    Err(e) => {
                        placed.clear();
                        r.left.push(format!("{name}: no tracing: {e}"));
                        (Vec::new(), Some(format!("{}: {e}", name.replace('/', "."))))
                    }
                };
                self.note_matched(name, &matched, &left.0, left.1.as_deref());
            }
            let input = cur.as_deref().unwrap_or(bytes);
            let pass = if self.cpu && cpu_live {
                Some((&self.rules, &self.opts, true))
            } else {
                self.fields_only.as_ref().map(|(r, o)| (r, o, false))
            };
            if let Some((rules, opts, is_cpu)) = pass {
                if (is_cpu && (rules.selects_class(name) || opts.mount_hook && name == MOUNT_CLASS))
                    || opts.adds_fields_to(name)
                {
                    let (o, left) =
                        instrument_methods(input, rules, &mut Reg(reg, redefined.is_some()), opts)
                            .map_err(|e| e.to_string())?;
                    r.left.extend(left.iter().map(|e| e.to_string()));
                    if let Outcome::Rewritten(b) = o {
                        let adds = |f: &str| {
                            opts.fields
                                .iter()
                                .any(|nf| nf.class == name && nf.name == f)
                        };
                        r.cpu_fields = is_cpu && adds(THREAD_FIELDS[0].0);
                        r.cov_field = adds(COV_THREAD_FIELD.0);
                        cur = Some(b);
                    }
                }
            }
            for k in placed {
                self.placed[k].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if let (Some(id), Some(mut rec), Some(out)) = (r.cov_id, rec, &cur) {
                rec.exits = fingerprinted(out, exits);
                cov.set(id, rec);
            }
            r.bytes = cur;
            Ok(r)
        }
    }

    /// `exits` (name, descriptor, exit local) of the methods of class file `out` with the
    /// fingerprint of each one's code in `out` ([`bci_rewriter::coverage::inflight::fingerprint`]),
    /// and the hash of what it writes to its exit local, for [`crate::coverage::InFlight`]. A
    /// method whose code is not found is left out (its frames are not adjusted at a dump).
    fn fingerprinted(
        out: &[u8],
        mut exits: Vec<(String, String, u16)>,
    ) -> Vec<crate::coverage::Exit> {
        let mut v = Vec::with_capacity(exits.len());
        let Ok(cf) = bci::ClassFile::parse(out) else {
            return v;
        };
        for m in &cf.methods {
            if exits.is_empty() {
                break;
            }
            let (name, desc) = (cf.member_name(m), cf.member_desc(m));
            let Some(k) = exits.iter().position(|e| e.0 == name && e.1 == desc) else {
                continue;
            };
            let (name, desc, slot) = exits.swap_remove(k);
            let code = cf
                .find_attr(&m.attributes, "Code")
                .and_then(|(_, a)| bci::CodeAttr::parse(&cf, a).ok());
            let Some(code) = code else { continue };
            v.push(crate::coverage::Exit {
                name,
                desc,
                slot,
                code: bci_rewriter::coverage::inflight::fingerprint(code.code),
                stores: bci_rewriter::coverage::inflight::exit_stores(code.code, slot),
            });
        }
        v
    }
}

#[cfg(not(feature = "rewriter"))]
mod imp {
    use super::*;

    pub struct Engine;

    impl Engine {
        /// A library built without its rewriter can instrument nothing: it says so at start
        /// instead of running the program with every option accepted and nothing recorded.
        pub fn new(_o: &Options) -> Result<Engine, String> {
            Err(
                "this libbciagent.so was built without its rewriter (cargo feature \"rewriter\", \
                 on by default) and can instrument nothing; build it with \
                 `cargo build --release -p bci-agent`"
                    .to_string(),
            )
        }
        pub fn selects(&self, _internal_name: &str) -> bool {
            false
        }
        pub fn trace_rules(&self) -> Vec<String> {
            Vec::new()
        }
        pub fn trace_placed(&self) -> Vec<crate::trace::Placed> {
            Vec::new()
        }
        pub fn profiles(&self) -> bool {
            false
        }
        pub fn rewrites_thread(&self) -> bool {
            false
        }
        pub fn runtime_class(&self) -> &str {
            DEFAULT_RUNTIME_CLASS
        }
        pub fn instrument(
            &self,
            _name: &str,
            _bytes: &[u8],
            _reg: &Registry,
            _cov: &crate::coverage::CovRegistry,
            _cpu_live: bool,
            _redefined: Option<&[String]>,
        ) -> Result<Rewritten, String> {
            Ok(Rewritten::default())
        }
    }
}

pub use imp::Engine;
