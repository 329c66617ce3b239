//! The tracing runtime (java.lang.BciTrace, agent/java/bci/runtime/Trace.java): defined at
//! early VMStart when the rule file has tracing rules, started at VMInit, finished at exit
//! (remaining events written, the per-rule summary returned for the report).

use crate::jvm::{JRef, Jni};
use std::sync::OnceLock;

pub const CLASS: &str = "java/lang/BciTrace";

const CLASSES: &[(&str, &[u8])] = &[
    (
        "java/lang/BciTrace$Site",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java/java/lang/BciTrace$Site.class"
        )),
    ),
    (
        "java/lang/BciTrace$T",
        include_bytes!(concat!(env!("OUT_DIR"), "/java/java/lang/BciTrace$T.class")),
    ),
    (
        "java/lang/BciTrace$Frame",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java/java/lang/BciTrace$Frame.class"
        )),
    ),
    (
        "java/lang/BciTrace$Writer",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java/java/lang/BciTrace$Writer.class"
        )),
    ),
    (
        CLASS,
        include_bytes!(concat!(env!("OUT_DIR"), "/java/java/lang/BciTrace.class")),
    ),
];

/// A global reference to java.lang.BciTrace, kept when it is defined: a JNI `FindClass` from
/// the agent (at VMInit and at exit, no Java caller) goes through the system class loader's
/// `loadClass`, whose instrumented methods would count calls the program never made.
static TRACE_CLASS: OnceLock<JRef> = OnceLock::new();

/// Defines java.lang.BciTrace and its nested classes in the boot loader (java.base).
pub fn define(jni: &Jni) -> Result<(), String> {
    for (name, bytes) in CLASSES {
        let c = jni.define_boot_class(name, bytes)?;
        if *name == CLASS && TRACE_CLASS.get().is_none() {
            let g = jni.new_global_ref(c);
            if !g.is_null() {
                let _ = TRACE_CLASS.set(g);
            }
        }
        jni.delete_local_ref(c);
    }
    Ok(())
}

/// java.lang.BciTrace (see [`TRACE_CLASS`]; looked up if it was not kept).
fn class(jni: &Jni) -> Result<JRef, String> {
    match TRACE_CLASS.get() {
        Some(c) => Ok(*c),
        None => jni.find_class(CLASS),
    }
}

/// Switches recording on: events to `tracefile` (none: summary only) as JSON lines or `text`,
/// at most `max_bytes` of them (0: no limit), `rules` named in the summary in this order.
pub fn start(
    jni: &Jni,
    tracefile: Option<&str>,
    text: bool,
    max_bytes: u64,
    rules: &[String],
) -> Result<(), String> {
    let cls = class(jni)?;
    let id = jni.static_field_id(cls, "maxBytes", "J")?;
    jni.set_static_long(cls, &id, i64::try_from(max_bytes).unwrap_or(i64::MAX));
    let m = jni.static_method_id(cls, "start", "(Ljava/lang/String;)V")?;
    // tests only: a small event buffer, and no writer thread until exit (drops are exact)
    if let Some(n) = std::env::var("BCIAGENT_TEST_TRACE_BUFFER")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    {
        jni.set_static_int(cls, "testCapacity", n)?;
    }
    if std::env::var_os("BCIAGENT_TEST_TRACE_HOLD").is_some() {
        jni.set_static_bool(cls, "testHold", true)?;
    }
    let mut config = format!(
        "{}\n{}",
        if text { "text" } else { "json" },
        tracefile.unwrap_or("")
    );
    for r in rules {
        config.push('\n');
        config.push_str(r);
    }
    let s = jni.new_string(&config)?;
    let r = jni.call_static_void_obj(cls, &m, s);
    jni.delete_local_ref(s);
    r.map_err(|_| {
        let t = tracefile.unwrap_or("");
        format!("tracefile={t}: cannot be opened for writing")
    })
}

/// Stops recording, writes the buffered events and returns the summary table.
pub fn finish(jni: &Jni) -> Result<String, String> {
    summary(jni, "finish")
}

/// SIGQUIT: writes the buffered events (the trace file flushed) and returns the summary so far;
/// recording goes on.
pub fn dump(jni: &Jni) -> Result<String, String> {
    summary(jni, "dump")
}

fn summary(jni: &Jni, method: &str) -> Result<String, String> {
    let cls = class(jni)?;
    let s = jni.call_static_object(cls, method, "()Ljava/lang/String;")?;
    let text = jni.string(s).unwrap_or_default();
    jni.delete_local_ref(s);
    Ok(text)
}

/// A tracing rule's sites in the classes instrumented ([`crate::rewrite::Engine::trace_placed`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub rule: String,
    /// Sites placed: methods (whole-method rules) or lines and call sites.
    pub sites: u32,
    /// The rule times, counts or traces whole methods (not a `line` or `call`).
    pub whole_methods: bool,
}

/// What the runtime's summary says of a rule that recorded nothing (Trace.java, `summary`).
const NO_RUN: &str = "- (no method ran)";

/// The summary with the row of each rule that recorded nothing saying why: it was placed
/// nowhere (it matched no method, line or call of the classes loaded: `bci rules explain`,
/// with the rule file `rules`, shows what it matches) or its methods/locations never ran.
pub fn explain_idle_rules(summary: &str, placed: &[Placed], rules: &str) -> String {
    let mut out = String::with_capacity(summary.len());
    for line in summary.split_inclusive('\n') {
        let row = line.trim_end_matches('\n');
        let Some(p) = placed
            .iter()
            .find(|p| row == format!("{:<24} {NO_RUN:>12}", p.rule))
        else {
            out.push_str(line);
            continue;
        };
        let plural =
            |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let why = match (p.sites, p.whole_methods) {
            (0, _) => format!(
                "- (never instrumented: it matched no method or location of the classes loaded; \
                 `bci rules explain {rules} --classpath <the program's classes>` shows what it \
                 matches)"
            ),
            (n, true) => format!(
                "- (instrumented in {}, never called)",
                plural(n, "method", "methods")
            ),
            (n, false) => format!(
                "- (instrumented at {}, never reached)",
                plural(n, "location", "locations")
            ),
        };
        out.push_str(&format!("{:<24} {why}\n", p.rule));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_rules_say_why() {
        let placed = |rule: &str, sites, whole_methods| Placed {
            rule: rule.into(),
            sites,
            whole_methods,
        };
        let s = format!(
            "TRACE SUMMARY\nran                                 3\n{:<24} {NO_RUN:>12}\n\
             {:<24} {NO_RUN:>12}\n{:<24} {NO_RUN:>12}\ntrace events: 3\n",
            "line12", "ctor", "calls"
        );
        let out = explain_idle_rules(
            &s,
            &[
                placed("ran", 1, true),
                placed("line12", 0, false),
                placed("ctor", 2, true),
                placed("calls", 1, false),
            ],
            "r.toml",
        );
        assert_eq!(
            out,
            "TRACE SUMMARY\nran                                 3\n\
             line12                   - (never instrumented: it matched no method or location \
             of the classes loaded; `bci rules explain r.toml --classpath <the program's \
             classes>` shows what it matches)\n\
             ctor                     - (instrumented in 2 methods, never called)\n\
             calls                    - (instrumented at 1 location, never reached)\n\
             trace events: 3\n"
        );
    }
}
