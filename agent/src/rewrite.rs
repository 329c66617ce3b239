//! The one place that calls the rewriter (crate `bci_rewriter`), so its API shows up in one file.
//! Built without the `rewriter` feature, a stub leaves every class unchanged.

use crate::options::Options;
use crate::registry::{MethodRec, Registry};

pub const DEFAULT_RUNTIME_CLASS: &str = "bci/runtime/Probes";

/// The built-in rules: rules/cpu-times.toml (via `Rules::cpu_times`) with the runtime as
/// java.lang.BciProbes, which the agent defines at early VMStart, so that classes loaded before
/// VMInit (java.lang, most of java.util) are instrumented too. A rules= file naming
/// bci/runtime/Probes gets the VMInit runtime instead (classes loaded before VMInit stay
/// original).
pub const EARLY_RUNTIME_CLASS: &str = "java/lang/BciProbes";

/// Classes the built-in rules leave alone. java.lang.Object: C2 crashed (SIGSEGV in
/// SystemDictionary::find_instance_klass via ciExceptionHandler::catch_klass) compiling an
/// instrumented Object.<init>, JDK 17.0.21.
pub const BUILTIN_EXCLUDES: &[&str] = &["java.lang.Object"];

#[cfg(feature = "rewriter")]
mod imp {
    use super::*;
    use bci_rewriter::{instrument, MethodInfo, Outcome, ProbeRegistry, Rules};

    pub struct Engine {
        rules: Rules,
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
            let rules = match &o.rules {
                Some(path) => {
                    let src =
                        std::fs::read_to_string(path).map_err(|e| format!("rules={path}: {e}"))?;
                    Rules::parse(&src, path).map_err(|e| e.to_string())?
                }
                None => Rules::cpu_times()
                    .with_runtime(EARLY_RUNTIME_CLASS)
                    .with_filters(
                        &[],
                        &BUILTIN_EXCLUDES
                            .iter()
                            .map(|s| s.to_string())
                            .collect::<Vec<_>>(),
                    ),
            };
            Ok(Engine {
                rules: rules.with_filters(&o.include, &o.exclude),
            })
        }

        pub fn selects(&self, internal_name: &str) -> bool {
            self.rules.selects_class(internal_name)
        }

        pub fn runtime_class(&self) -> &str {
            self.rules.runtime_class()
        }

        pub fn instrument(&self, bytes: &[u8], reg: &Registry) -> Result<Option<Vec<u8>>, String> {
            match instrument(bytes, &self.rules, &mut Reg(reg)) {
                Ok(Outcome::Unchanged) => Ok(None),
                Ok(Outcome::Rewritten(b)) => Ok(Some(b)),
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
        pub fn runtime_class(&self) -> &str {
            DEFAULT_RUNTIME_CLASS
        }
        pub fn instrument(
            &self,
            _bytes: &[u8],
            _reg: &Registry,
        ) -> Result<Option<Vec<u8>>, String> {
            Ok(None)
        }
    }

    #[allow(dead_code)]
    fn _uses(_: MethodRec) {}
}

pub use imp::Engine;
