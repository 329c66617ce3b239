//! The rule format (TOML). See rules/cpu-times.toml.
//!
//! ```toml
//! [runtime]
//! class = "bci/runtime/Probes"      # internal name of the class the probes call
//!
//! [[rule]]
//! name = "cpu-times"
//! classes = ["*"]                   # dotted class-name globs
//! exclude_classes = ["bci.runtime.*"]
//! methods = ["*"]                   # method-name globs
//! exclude_methods = []
//! descriptors = ["*"]               # method-descriptor globs
//! probes = ["enter", "exit", "unwind"]
//! ```

use crate::glob::Glob;
use serde::Deserialize;
use std::fmt;

/// A probe kind a rule can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `enter(I)V` at method entry (`leafEnter(I)V` or `enterT(I)I` with
    /// `Options::leaf_probes` / `Options::frame_tokens`).
    Enter = 1,
    /// `exit(I)V` before every return (`leafExit(I)V`, or `exitT(I)V` with the token).
    Exit = 2,
    /// `unwind(I)V` in a catch-all handler that re-throws (`unwindT(I)V` with the token).
    Unwind = 4,
    /// A `long` local set from `now()J` at entry; `timed(IJ)V` with the method id and that
    /// start time before every return (and in the catch-all handler when `unwind` is on).
    Timer = 8,
}

const PROBES: &[(&str, Probe)] = &[
    ("enter", Probe::Enter),
    ("exit", Probe::Exit),
    ("unwind", Probe::Unwind),
    ("timer", Probe::Timer),
];

/// A set of probes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeSet(pub(crate) u8);
impl ProbeSet {
    pub fn contains(self, p: Probe) -> bool {
        self.0 & p as u8 != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// A rule-file error with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    pub path: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path, self.line, self.col, self.message
        )
    }
}
impl std::error::Error for RuleError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    runtime: Option<RuntimeToml>,
    #[serde(default, deserialize_with = "rule_tables")]
    rule: Vec<toml::Spanned<RuleToml>>,
}

/// The `rule` key: an array of tables (`[[rule]]`). A single table (`[rule]`, or `rule = { … }`)
/// is the likely slip; its error says how rules are written.
fn rule_tables<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<toml::Spanned<RuleToml>>, D::Error> {
    struct Tables;
    impl<'de> serde::de::Visitor<'de> for Tables {
        type Value = Vec<toml::Spanned<RuleToml>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("[[rule]] tables")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut v = Vec::new();
            while let Some(r) = seq.next_element()? {
                v.push(r);
            }
            Ok(v)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(serde::de::Error::custom(
                "`rule` is a single table here: rules are written as [[rule]] tables (two \
                 brackets: each [[rule]] adds one rule)",
            ))
        }
    }
    d.deserialize_seq(Tables)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeToml {
    class: toml::Spanned<String>,
}

/// One `[[rule]]`: a probe rule (`probes`, the cpu=times building block) or a tracing rule
/// (`count`/`time`/`trace`; see [`crate::trace`]). Both kinds share this table so that one
/// parser (the agent's and `bci rules check`'s) accepts exactly the same files.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleToml {
    pub(crate) name: Option<toml::Spanned<String>>,
    // probe rules
    pub(crate) classes: Option<Sp<Vec<Sp<String>>>>,
    pub(crate) exclude_classes: Option<Sp<Vec<Sp<String>>>>,
    pub(crate) methods: Option<Sp<Vec<Sp<String>>>>,
    pub(crate) exclude_methods: Option<Sp<Vec<Sp<String>>>>,
    pub(crate) descriptors: Option<Sp<Vec<Sp<String>>>>,
    pub(crate) probes: Option<toml::Spanned<Vec<toml::Spanned<String>>>>,
    // tracing rules (crate::trace)
    pub(crate) class: Option<Sp<String>>,
    pub(crate) method: Option<Sp<String>>,
    pub(crate) descriptor: Option<Sp<String>>,
    pub(crate) access: Option<Vec<Sp<String>>>,
    pub(crate) class_annotation: Option<Sp<String>>,
    pub(crate) annotation: Option<Sp<String>>,
    pub(crate) extends: Option<Sp<String>>,
    pub(crate) implements: Option<Sp<String>>,
    pub(crate) exclude_class: Option<Vec<Sp<String>>>,
    pub(crate) exclude_method: Option<Vec<Sp<String>>>,
    pub(crate) at: Option<Sp<Vec<Sp<String>>>>,
    pub(crate) line: Option<Sp<i64>>,
    pub(crate) call: Option<Sp<String>>,
    pub(crate) count: Option<Sp<bool>>,
    pub(crate) time: Option<Sp<bool>>,
    pub(crate) trace: Option<Sp<bool>>,
    pub(crate) args: Option<Sp<bool>>,
    #[serde(rename = "return")]
    pub(crate) ret: Option<Sp<bool>>,
    pub(crate) exception: Option<Sp<bool>>,
    pub(crate) tostring: Option<Sp<bool>>,
    pub(crate) max_string: Option<Sp<i64>>,
    pub(crate) min_duration: Option<Sp<String>>,
    pub(crate) sample: Option<Sp<i64>>,
    pub(crate) stack: Option<Sp<i64>>,
}

pub(crate) type Sp<T> = toml::Spanned<T>;

fn all() -> Vec<String> {
    vec!["*".to_string()]
}

#[derive(Clone, Debug)]
struct Rule {
    classes: Vec<Glob>,
    exclude_classes: Vec<Glob>,
    methods: Vec<Glob>,
    exclude_methods: Vec<Glob>,
    descriptors: Vec<Glob>,
    probes: ProbeSet,
}

/// A parsed rule set.
#[derive(Clone, Debug)]
pub struct Rules {
    runtime: String,
    rules: Vec<Rule>,
    /// Tracing rules (`count`/`time`/`trace`), in file order.
    trace: Vec<crate::trace::TraceRule>,
    /// Where `[runtime] class` was given (path, line, col).
    runtime_at: Option<(String, usize, usize)>,
    include: Vec<Glob>,
    exclude: Vec<Glob>,
}

const DEFAULT_RUNTIME: &str = "bci/runtime/Probes";

pub(crate) fn line_col(src: &str, at: usize) -> (usize, usize) {
    let at = at.min(src.len());
    let before = &src[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(at, |n| at - n - 1) + 1;
    (line, col)
}

/// A rule file's bytes as text: bytes that are not UTF-8 are an error at the first invalid
/// byte (`path:line:col: not UTF-8: byte 0xFF`; line and column as [`line_col`] counts them).
pub fn utf8_text<'a>(src: &'a [u8], path: &str) -> Result<&'a str, RuleError> {
    std::str::from_utf8(src).map_err(|e| {
        let at = e.valid_up_to();
        // the bytes before the first invalid one are valid UTF-8
        let before = std::str::from_utf8(&src[..at]).unwrap_or("");
        let (line, col) = line_col(before, at);
        RuleError {
            path: path.to_string(),
            line,
            col,
            message: format!(
                "not UTF-8: byte 0x{:02X} (a rule file is UTF-8 text)",
                src[at]
            ),
        }
    })
}

impl Rules {
    /// [`Rules::parse`] on a rule file's bytes as read (the agent's `rules=`, `bci rules check`,
    /// `bci instrument --rules`): bytes that are not UTF-8 are an error at the first invalid
    /// byte ([`utf8_text`]).
    pub fn parse_bytes(src: &[u8], path: &str) -> Result<Rules, RuleError> {
        Rules::parse(utf8_text(src, path)?, path)
    }

    /// Parses a rule file; `path` is used in error messages (`path:line:col: message`).
    pub fn parse(src: &str, path: &str) -> Result<Rules, RuleError> {
        let err = |at: usize, message: String| {
            let (line, col) = line_col(src, at);
            RuleError {
                path: path.to_string(),
                line,
                col,
                message,
            }
        };
        let file: FileToml = toml::from_str(src).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            err(at, e.message().trim().to_string())
        })?;
        let mut runtime_at = None;
        let runtime = match &file.runtime {
            Some(r) => {
                let c = r.class.get_ref();
                if !is_internal_class_name(c) {
                    return Err(err(r.class.span().start, format!("runtime.class: expected an internal class name like \"bci/runtime/Probes\", found {c:?}")));
                }
                let e = err(r.class.span().start, String::new());
                runtime_at = Some((e.path, e.line, e.col));
                c.clone()
            }
            None => DEFAULT_RUNTIME.to_string(),
        };
        if file.rule.is_empty() {
            return Err(err(
                src.len(),
                "expected at least one [[rule]] table".to_string(),
            ));
        }
        let mut rules = Vec::new();
        let mut trace: Vec<crate::trace::TraceRule> = Vec::new();
        for (k, r) in file.rule.into_iter().enumerate() {
            let span = r.span();
            let r = r.into_inner();
            let Some(probe_list) = &r.probes else {
                let t = crate::trace::TraceRule::from_toml(&r, k, span.start, &err)?;
                if let Some(prev) = trace.iter().find(|p| p.name == t.name) {
                    let at = r.name.as_ref().map_or(span.start, |n| n.span().start);
                    return Err(err(
                        at,
                        format!("a rule named {:?} is defined already (rule names must be unique; the first is at line {})", t.name, prev.pos.0),
                    ));
                }
                trace.push(t);
                continue;
            };
            if let Some((key, at)) = crate::trace::first_trace_key(&r) {
                return Err(err(
                    at,
                    format!("`{key}` is a tracing-rule key and `probes` makes a probe rule: a rule is one or the other (conflicting actions)"),
                ));
            }
            let mut probes = ProbeSet::default();
            for p in probe_list.get_ref() {
                match PROBES.iter().find(|(n, _)| n == p.get_ref()) {
                    Some((_, pr)) => probes.0 |= *pr as u8,
                    None => {
                        return Err(err(
                            p.span().start,
                            format!(
                                "unknown probe {:?}; expected one of: {}",
                                p.get_ref(),
                                PROBES.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
                            ),
                        ))
                    }
                }
            }
            if probes.is_empty() {
                let which = r
                    .name
                    .as_ref()
                    .map(|n| n.get_ref().clone())
                    .unwrap_or_else(|| format!("rule {}", k + 1));
                return Err(err(
                    span.start,
                    format!("{which} has no probes; expected e.g. probes = [\"enter\", \"exit\"]"),
                ));
            }
            // patterns that match nothing are refused: an empty list (leaving the key out
            // selects everything), an empty pattern, one with a control character or, for
            // classes, an empty package level
            for (key, list, class, example) in [
                ("classes", &r.classes, true, Some("com.acme.*")),
                ("exclude_classes", &r.exclude_classes, true, None),
                ("methods", &r.methods, false, Some("get*")),
                ("exclude_methods", &r.exclude_methods, false, None),
                ("descriptors", &r.descriptors, false, Some("(I)*")),
            ] {
                let Some(list) = list else { continue };
                if let (Some(e), true) = (example, list.get_ref().is_empty()) {
                    return Err(err(
                        list.span().start,
                        format!(
                            "`{key}` is empty: it would match nothing; expected at least one \
                             pattern, e.g. {key} = [\"{e}\"] (without `{key}` a rule takes every \
                             one)"
                        ),
                    ));
                }
                // (descriptor patterns are checked below, character by character)
                for v in list.get_ref().iter().filter(|_| key != "descriptors") {
                    let s = v.get_ref();
                    let why = if class {
                        crate::Glob::check(s)
                    } else {
                        crate::Glob::check_method(s)
                    }
                    .err();
                    if let Some(why) = why {
                        return Err(err(
                            v.span().start,
                            format!("bad pattern {s:?} in `{key}`: {why}"),
                        ));
                    }
                }
            }
            // descriptor globs no method descriptor can match are refused (JVMS 4.3.3)
            let mut descriptors = Vec::new();
            for d in r.descriptors.iter().flat_map(|d| d.get_ref()) {
                let v = d.get_ref();
                let wild = crate::desc_check::Wild {
                    question_slash: true,
                    dot_is_slash: false,
                };
                if let Err((at, m)) = crate::desc_check::check(v, wild) {
                    let span = d.span();
                    let at = if span.end - span.start == v.len() + 2 {
                        span.start + 1 + at
                    } else {
                        span.start
                    };
                    return Err(err(at, format!("bad descriptor pattern {v:?}: {m}")));
                }
                descriptors.push(Glob::new(v));
            }
            if r.descriptors.is_none() {
                descriptors.push(Glob::new("*"));
            }
            let or_all = |v: &Option<Sp<Vec<Sp<String>>>>| {
                v.as_ref().map_or_else(all, |v| {
                    v.get_ref().iter().map(|s| s.get_ref().clone()).collect()
                })
            };
            let mut exclude_classes: Vec<Glob> = r
                .exclude_classes
                .iter()
                .flat_map(|v| v.get_ref())
                .map(|s| Glob::class(s.get_ref()))
                .collect();
            // The runtime must never call itself.
            exclude_classes.push(Glob::new(&format!("{runtime}*")));
            rules.push(Rule {
                classes: or_all(&r.classes).iter().map(|s| Glob::class(s)).collect(),
                exclude_classes,
                methods: or_all(&r.methods).iter().map(|s| Glob::new(s)).collect(),
                exclude_methods: r
                    .exclude_methods
                    .iter()
                    .flat_map(|v| v.get_ref())
                    .map(|s| Glob::new(s.get_ref()))
                    .collect(),
                descriptors,
                probes,
            });
        }
        Ok(Rules {
            runtime,
            rules,
            trace,
            runtime_at,
            include: Vec::new(),
            exclude: Vec::new(),
        })
    }

    /// The built-in cpu=times rule set (rules/cpu-times.toml).
    pub fn cpu_times() -> Rules {
        match Rules::parse(
            include_str!("../../rules/cpu-times.toml"),
            "rules/cpu-times.toml",
        ) {
            Ok(r) => r,
            // The file is part of this crate and tested; fall back to the equivalent rules.
            Err(_) => Rules {
                runtime: DEFAULT_RUNTIME.to_string(),
                rules: vec![Rule {
                    classes: vec![Glob::new("*")],
                    exclude_classes: vec![Glob::new("bci/runtime/*")],
                    methods: vec![Glob::new("*")],
                    exclude_methods: vec![],
                    descriptors: vec![Glob::new("*")],
                    probes: ProbeSet(7),
                }],
                trace: Vec::new(),
                runtime_at: None,
                include: Vec::new(),
                exclude: Vec::new(),
            },
        }
    }

    /// Restricts the rules to classes matching any `include` pattern (if any are given) and
    /// none of the `exclude` patterns (dotted globs, e.g. `java.util.*`).
    pub fn with_filters(mut self, include: &[String], exclude: &[String]) -> Rules {
        self.include.extend(include.iter().map(|s| Glob::class(s)));
        self.exclude.extend(exclude.iter().map(|s| Glob::class(s)));
        self
    }

    /// Replaces the runtime class the probes call (internal name).
    /// The rules with `internal_name` as the probe class (`bci instrument --runtime`); the
    /// caller checks the name first ([`is_internal_class_name`]).
    pub fn with_runtime(mut self, internal_name: &str) -> Rules {
        for r in self.rules.iter_mut() {
            r.exclude_classes
                .push(Glob::new(&format!("{internal_name}*")));
        }
        self.runtime = internal_name.to_string();
        self
    }

    /// Whether the file has probe rules (`probes = [...]`); a file of tracing rules only leaves
    /// the agent's built-in cpu=times rules in place.
    pub fn has_probe_rules(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The tracing rules, in file order.
    pub fn trace_rules(&self) -> &[crate::trace::TraceRule] {
        &self.trace
    }

    /// The agent provides two runtime classes (bci/runtime/Probes at VMInit,
    /// java/lang/BciProbes at early VMStart); any other `[runtime] class` is for
    /// `bci instrument --runtime` only. The agent and `bci rules check` both refuse it here.
    pub fn check_agent_runtime(&self) -> Result<(), RuleError> {
        match &self.runtime_at {
            Some((path, line, col))
                if self.runtime != "bci/runtime/Probes" && self.runtime != "java/lang/BciProbes" =>
            {
                Err(RuleError {
                    path: path.clone(),
                    line: *line,
                    col: *col,
                    message: format!(
                        "runtime.class {:?}: the agent provides only bci/runtime/Probes (defined at VMInit) and java/lang/BciProbes (defined at early VMStart); other runtime classes are for bci instrument",
                        self.runtime
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    /// Internal name of the class the probes call.
    pub fn runtime_class(&self) -> &str {
        &self.runtime
    }

    /// Cheap pre-filter on an internal class name: no parsing, no allocation.
    pub fn selects_class(&self, internal_name: &str) -> bool {
        if internal_name.starts_with(self.runtime.as_str()) {
            return false;
        }
        if !self.include.is_empty() && !self.include.iter().any(|g| g.matches(internal_name)) {
            return false;
        }
        if self.exclude.iter().any(|g| g.matches(internal_name)) {
            return false;
        }
        self.rules
            .iter()
            .any(|r| Self::rule_class(r, internal_name))
    }

    fn rule_class(r: &Rule, c: &str) -> bool {
        r.classes.iter().any(|g| g.matches(c)) && !r.exclude_classes.iter().any(|g| g.matches(c))
    }

    /// The probes selected for one method (union over matching rules).
    pub fn probes_for(&self, class: &str, method: &str, desc: &str) -> ProbeSet {
        let mut s = ProbeSet::default();
        for r in &self.rules {
            if Self::rule_class(r, class)
                && r.methods.iter().any(|g| g.matches(method))
                && !r.exclude_methods.iter().any(|g| g.matches(method))
                && r.descriptors.iter().any(|g| g.matches(desc))
            {
                s.0 |= r.probes.0;
            }
        }
        s
    }
}

/// Whether `c` is a class name in internal form (JVMS 4.2.1): `/`-separated identifiers, none
/// empty, none holding `.`, `;`, `[` or `/` (HotSpot refuses a class file naming such a class:
/// ClassFormatError "Illegal class name").
pub fn is_internal_class_name(c: &str) -> bool {
    !c.is_empty()
        && c.split('/')
            .all(|p| !p.is_empty() && !p.contains(['.', ';', '[']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_cpu_times_parses_and_selects() {
        let r = Rules::parse(include_str!("../../rules/cpu-times.toml"), "cpu-times.toml").unwrap();
        assert_eq!(r.runtime_class(), "bci/runtime/Probes");
        assert!(r.selects_class("java/util/HashMap"));
        assert!(!r.selects_class("bci/runtime/Probes"));
        let p = r.probes_for("Fib", "fib", "(I)I");
        assert!(p.contains(Probe::Enter) && p.contains(Probe::Exit) && p.contains(Probe::Unwind));
        let f = r.with_filters(&["com.acme.*".into()], &["com.acme.gen.*".into()]);
        assert!(f.selects_class("com/acme/Foo"));
        assert!(!f.selects_class("com/acme/gen/Foo"));
        assert!(!f.selects_class("java/lang/String"));
    }

    #[test]
    fn errors_have_file_line_col() {
        let e = Rules::parse(
            "[[rule]]\nclasses = [\"*\"]\nprobes = [\"enter\", \"exiit\"]\n",
            "r.toml",
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (3, 20), "{e}");
        assert!(
            e.to_string()
                .starts_with("r.toml:3:20: unknown probe \"exiit\""),
            "{e}"
        );
        let e = Rules::parse(
            "[[rule]]\nclases = [\"*\"]\nprobes = [\"enter\"]\n",
            "r.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("clases"), "{e}");
        let e = Rules::parse(
            "[runtime]\nclass = \"a.b.C\"\n[[rule]]\nprobes=[\"enter\"]\n",
            "r.toml",
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (2, 9), "{e}");
        let e = Rules::parse("[[rule]]\nprobes = [\"enter\"\n", "r.toml").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = Rules::parse("", "r.toml").unwrap_err();
        assert!(e.message.contains("[[rule]]"), "{e}");
    }
}
