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
    /// Where the rule acts.
    pub at: At,
    /// With no site: why, when it is known (it names only classes tracing never instruments,
    /// matched only native, abstract, `<clinit>` or HotSpot intrinsic methods, was left
    /// original, or matched methods without its line or call).
    pub why: Option<String>,
}

/// Where a tracing rule acts (its `at`, `line` or `call`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// A method's entry, normal exit, exceptional exit (`at`; all three by default).
    Method {
        entry: bool,
        exit: bool,
        exception: bool,
    },
    /// `line = N`.
    Line,
    /// `call = "Owner.method"`, before the call or (`at = ["after"]`) after its normal return.
    Call { after: bool },
}

/// What the runtime's summary says of a rule that recorded nothing (Trace.java, `summary`).
const NO_RUN: &str = "- (no method ran)";

/// The summary with the row of each rule that recorded nothing saying why: it was placed
/// nowhere (why, when known: `Placed::why`; else it matched no method, line or call of the
/// classes loaded: `bci rules explain`, with the rule file `rules`, shows what it matches) or
/// what its sites never saw (a method never called, an exit never reached, …). The row keeps
/// the name column's width the runtime gave it.
pub fn explain_idle_rules(summary: &str, placed: &[Placed], rules: &str) -> String {
    let mut out = String::with_capacity(summary.len());
    for line in summary.split_inclusive('\n') {
        let row = line.trim_end_matches('\n');
        // "<name padded to the column> <NO_RUN right-aligned in 12>"
        let Some((p, width)) = placed.iter().find_map(|p| {
            let rest = row.strip_prefix(p.rule.as_str())?;
            (rest.trim_start() == NO_RUN && rest.starts_with(' ')).then(|| {
                (
                    p,
                    row.chars().count().saturating_sub(NO_RUN.len().max(12) + 1),
                )
            })
        }) else {
            out.push_str(line);
            continue;
        };
        let plural =
            |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let n = p.sites;
        let methods = || format!("instrumented in {}", plural(n, "method", "methods"));
        let locations = || format!("instrumented at {}", plural(n, "location", "locations"));
        let one = n == 1;
        let why = match (n, p.at) {
            (0, _) => match &p.why {
                Some(why) => format!("- (never instrumented: {why})"),
                None => format!(
                    "- (never instrumented: it matched no method or location of the classes \
                     loaded (hidden classes never reach the agent); `bci rules explain {rules} \
                     --classpath <the program's classes>` shows what it matches)"
                ),
            },
            // an entry probe sees every call
            (_, At::Method { entry: true, .. }) => format!("- ({}, never called)", methods()),
            (
                _,
                At::Method {
                    exit: true,
                    exception: true,
                    ..
                },
            ) => format!(
                "- ({}, no call of {} ended (returned or threw))",
                methods(),
                if one { "it" } else { "them" }
            ),
            (_, At::Method { exit: true, .. }) => format!(
                "- ({}, {} never reached (no call returned normally))",
                methods(),
                if one { "its exit" } else { "their exits" }
            ),
            (_, At::Method { .. }) => format!(
                "- ({}, no call of {} ended with an exception)",
                methods(),
                if one { "it" } else { "them" }
            ),
            (_, At::Call { after: true }) => {
                format!("- ({}, no call there returned normally)", locations())
            }
            (_, At::Line | At::Call { after: false }) => {
                format!("- ({}, never reached)", locations())
            }
        };
        let width = width.max(p.rule.chars().count());
        out.push_str(&format!("{:<width$} {why}\n", p.rule));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHOLE: At = At::Method {
        entry: true,
        exit: true,
        exception: true,
    };

    fn placed(rule: &str, sites: u32, at: At) -> Placed {
        Placed {
            rule: rule.into(),
            sites,
            at,
            why: None,
        }
    }

    #[test]
    fn idle_rules_say_why() {
        let s = format!(
            "TRACE SUMMARY\nran                                 3\n{:<24} {NO_RUN:>12}\n\
             {:<24} {NO_RUN:>12}\n{:<24} {NO_RUN:>12}\ntrace events: 3\n",
            "line12", "ctor", "calls"
        );
        let out = explain_idle_rules(
            &s,
            &[
                placed("ran", 1, WHOLE),
                placed("line12", 0, At::Line),
                placed("ctor", 2, WHOLE),
                placed("calls", 1, At::Call { after: false }),
            ],
            "r.toml",
        );
        assert_eq!(
            out,
            "TRACE SUMMARY\nran                                 3\n\
             line12                   - (never instrumented: it matched no method or location \
             of the classes loaded (hidden classes never reach the agent); `bci rules explain \
             r.toml --classpath <the program's classes>` shows what it matches)\n\
             ctor                     - (instrumented in 2 methods, never called)\n\
             calls                    - (instrumented at 1 location, never reached)\n\
             trace events: 3\n"
        );
    }

    /// A rule that sees only some of a call's ends does not say "never called" (an
    /// `at = ["exit"]` rule on a method that always throws did, next to an entry rule's 100).
    #[test]
    fn idle_rules_name_the_locations_never_reached() {
        let m = |entry, exit, exception| At::Method {
            entry,
            exit,
            exception,
        };
        let cases = [
            (
                m(true, false, false),
                1,
                "instrumented in 1 method, never called",
            ),
            (
                m(true, true, false),
                2,
                "instrumented in 2 methods, never called",
            ),
            (
                m(false, true, false),
                1,
                "instrumented in 1 method, its exit never reached (no call returned normally)",
            ),
            (
                m(false, true, false),
                3,
                "instrumented in 3 methods, their exits never reached (no call returned normally)",
            ),
            (
                m(false, false, true),
                1,
                "instrumented in 1 method, no call of it ended with an exception",
            ),
            (
                m(false, true, true),
                2,
                "instrumented in 2 methods, no call of them ended (returned or threw)",
            ),
            (At::Line, 1, "instrumented at 1 location, never reached"),
            (
                At::Call { after: false },
                2,
                "instrumented at 2 locations, never reached",
            ),
            (
                At::Call { after: true },
                1,
                "instrumented at 1 location, no call there returned normally",
            ),
        ];
        for (at, n, want) in cases {
            let s = format!("{:<24} {NO_RUN:>12}\n", "r");
            let out = explain_idle_rules(&s, &[placed("r", n, at)], "r.toml");
            assert_eq!(out, format!("{:<24} - ({want})\n", "r"), "{at:?}");
        }
    }

    /// The reason the engine knows (java.lang, a native method) replaces the generic one; a
    /// name longer than the runtime's column keeps its row whole, and a wider column is kept.
    #[test]
    fn idle_rules_give_the_known_reason_and_keep_the_column() {
        let long = "a-very-long-rule-name-that-exceeds-the-column-width";
        let s = format!("{long} {NO_RUN:>12}\n{:<60} {NO_RUN:>12}\n", "wide");
        let mut p = placed(long, 0, WHOLE);
        p.why = Some("class \"java.lang.String\" is in java.lang".into());
        let out = explain_idle_rules(&s, &[p, placed("wide", 1, WHOLE)], "r.toml");
        assert_eq!(
            out,
            format!(
                "{long} - (never instrumented: class \"java.lang.String\" is in java.lang)\n\
                 {:<60} - (instrumented in 1 method, never called)\n",
                "wide"
            )
        );
    }
}
