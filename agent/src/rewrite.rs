//! The one place that calls the rewriter (crate `bci_rewriter`), so its API shows up in one file.
//! Built without the `rewriter` feature, a stub leaves every class unchanged.

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

/// The class that gets [`THREAD_FIELDS`].
pub const THREAD_CLASS: &str = "java/lang/Thread";

/// Fields added to java.lang.Thread when the runtime is java.lang.BciProbes: the thread's
/// runtime state, which the probes reach in two loads (`Thread.currentThread().bci$t`).
/// Package-private, transient and synthetic. Must match the stub Thread in build.rs.
pub const THREAD_FIELDS: &[(&str, &str)] = &[("bci$t", "Ljava/lang/BciProbes$T;")];

/// What [`Engine::instrument`] returns: the new class bytes (`None`: unchanged) and the methods
/// left original (`class.method(desc): reason`).
pub type Rewritten = (Option<Vec<u8>>, Vec<String>);
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
    use bci_rewriter::{instrument_methods, MethodInfo, NewField, Outcome, ProbeRegistry, Rules};

    pub struct Engine {
        rules: Rules,
        opts: bci_rewriter::Options,
        /// Tracing rules of the rules= file (they run next to the probe rules).
        trace: Vec<bci_rewriter::trace::TraceRule>,
        /// The next tracing site id.
        sites: std::sync::atomic::AtomicI32,
    }

    struct Reg<'a>(&'a Registry);

    impl ProbeRegistry for Reg<'_> {
        fn register(&mut self, m: &MethodInfo<'_>) -> u32 {
            self.0.register(MethodRec {
                class: m.class.to_string(),
                name: m.name.to_string(),
                desc: m.desc.to_string(),
                source_file: m.source_file.map(str::to_string),
                first_line: m.first_line,
            })
        }
    }

    impl Engine {
        pub fn new(o: &Options) -> Result<Engine, String> {
            let file = match &o.rules {
                Some(path) => {
                    let src =
                        std::fs::read_to_string(path).map_err(|e| format!("rules={path}: {e}"))?;
                    let r = Rules::parse(&src, path).map_err(|e| e.to_string())?;
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
            // a trace file that cannot be written stops the JVM here, not silently at VMInit
            if let Some(p) = &o.tracefile {
                std::fs::File::create(p).map_err(|e| format!("tracefile={p}: {e}"))?;
            }
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
            Ok(Engine {
                rules: rules.with_filters(&o.include, &o.exclude),
                opts,
                trace,
                sites: std::sync::atomic::AtomicI32::new(0),
            })
        }

        /// Whether the hook must hand class `internal_name` to [`Engine::instrument`]: rules
        /// select it, or it gets the runtime's fields.
        pub fn selects(&self, internal_name: &str) -> bool {
            self.rules.selects_class(internal_name)
                || self.opts.adds_fields_to(internal_name)
                || bci_rewriter::trace::selects_class(&self.trace, internal_name)
        }

        /// Names of the tracing rules, in file order (empty: no tracing).
        pub fn trace_rules(&self) -> Vec<String> {
            self.trace.iter().map(|r| r.name.clone()).collect()
        }

        /// Whether a rewritten `internal_name` has fields added (THREAD_FIELDS).
        pub fn adds_fields_to(&self, internal_name: &str) -> bool {
            self.opts.adds_fields_to(internal_name)
        }

        pub fn runtime_class(&self) -> &str {
            self.rules.runtime_class()
        }

        /// The rewritten class (`None`: unchanged) and the methods left original, each as
        /// `class.method(desc): reason`.
        pub fn instrument(&self, bytes: &[u8], reg: &Registry) -> Result<Rewritten, String> {
            // tracing rules first, then the probe rules on the result
            let (traced, mut left) = if self.trace.is_empty() {
                (None, Vec::new())
            } else {
                let mut next = || {
                    self.sites
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                };
                let (b, left) = bci_rewriter::trace::instrument(bytes, &self.trace, &mut next)
                    .map_err(|e| e.to_string())?;
                (b, left.iter().map(|e| e.to_string()).collect::<Vec<_>>())
            };
            let input = traced.as_deref().unwrap_or(bytes);
            match instrument_methods(input, &self.rules, &mut Reg(reg), &self.opts) {
                Ok((o, l)) => {
                    left.extend(l.iter().map(|e| e.to_string()));
                    Ok((
                        match o {
                            Outcome::Unchanged => traced,
                            Outcome::Rewritten(b) => Some(b),
                        },
                        left,
                    ))
                }
                Err(e) => Err(e.to_string()),
            }
        }
    }
}

#[cfg(not(feature = "rewriter"))]
mod imp {
    use super::*;

    pub struct Engine;

    impl Engine {
        pub fn new(o: &Options) -> Result<Engine, String> {
            if let Some(path) = &o.rules {
                std::fs::read_to_string(path).map_err(|e| format!("rules={path}: {e}"))?;
            }
            Ok(Engine)
        }
        pub fn selects(&self, _internal_name: &str) -> bool {
            false
        }
        pub fn trace_rules(&self) -> Vec<String> {
            Vec::new()
        }
        pub fn adds_fields_to(&self, _internal_name: &str) -> bool {
            false
        }
        pub fn runtime_class(&self) -> &str {
            DEFAULT_RUNTIME_CLASS
        }
        pub fn instrument(&self, _bytes: &[u8], _reg: &Registry) -> Result<Rewritten, String> {
            Ok((None, Vec::new()))
        }
    }
}

pub use imp::Engine;
