//! Tracing rules: a `[[rule]]` with `count`, `time` or `trace` picks classes, methods and
//! locations (see README "Tracing rules") and [`instrument`] adds calls into the tracing runtime
//! (`java/lang/BciTrace`, agent/java/bci/runtime/Trace.java).
//!
//! Each (rule, method, location) gets a site id from the caller and a constant info string the
//! runtime parses once (rule name, class, method, descriptor, where, options), so the hot path
//! passes only an int, a constant string and (when captured) the arguments.

use crate::rules::{RuleError, RuleToml, Sp};
use bci::class::{ACC_ABSTRACT, ACC_MODULE, ACC_NATIVE};
use bci::{ClassFile, ClassWriter, MethodEditor, Snippet, VType};

/// The tracing runtime, a member of java.base (defined by the agent at early VMStart), so that
/// JDK classes can call it too.
pub const RUNTIME: &str = "java/lang/BciTrace";

/// Classes tracing rules never instrument: the runtime uses them on its own paths (a traced
/// String or ThreadLocal method would call the runtime from inside the runtime).
pub const NEVER: &[&str] = &[
    "java/lang/",
    "jdk/internal/",
    "sun/",
    "java/util/concurrent/",
    "java/io/",
];

/// A name pattern: exact, glob (`*` = one package level or any run of a member name, `**` =
/// any depth, `?` = one character) or `/regex/` (whole-name match).
#[derive(Clone, Debug)]
pub enum Pattern {
    Glob(Vec<u8>),
    Regex(regex_lite::Regex),
}

impl Pattern {
    /// `class` patterns: dotted names, where `*` does not cross a `.`.
    fn parse(p: &str, what: &str) -> Result<Pattern, String> {
        if p.is_empty() {
            return Err(format!("empty {what} pattern matches nothing"));
        }
        if let Some(c) = p.chars().find(|c| c.is_control()) {
            return Err(format!(
                "bad {what} pattern {p:?}: control character U+{:04X}: no name has one",
                c as u32
            ));
        }
        if p.len() >= 2 && p.starts_with('/') && p.ends_with('/') {
            let body = &p[1..p.len() - 1];
            if body.is_empty() {
                return Err(format!(
                    "bad {what} pattern {p:?}: an empty regular expression matches no name; \
                     expected /regex/ with the expression between the slashes"
                ));
            }
            return regex_lite::Regex::new(&format!("^(?:{body})$"))
                .map(Pattern::Regex)
                .map_err(|e| {
                    let e = e.to_string();
                    let first = e.lines().last().unwrap_or("").trim().to_string();
                    format!("bad regular expression {p}: {first}")
                });
        }
        if let Some(c) = p
            .chars()
            .find(|c| matches!(c, '[' | ']' | '{' | '}' | ';' | '/'))
        {
            return Err(format!(
                "bad {what} pattern {p:?}: '{c}' is not allowed (globs use * ** ?; a regular expression is written /.../)"
            ));
        }
        if p.contains("***") {
            return Err(format!("bad {what} pattern {p:?}: *** (use * or **)"));
        }
        Ok(Pattern::Glob(p.as_bytes().to_vec()))
    }
    /// [`Pattern::parse`] for a class name pattern (`class`, `exclude_class`, `extends`, …): a
    /// glob has no empty package level (`a..B`, `.a`, `a.`), which no class name has.
    fn class(p: &str, what: &str) -> Result<Pattern, String> {
        let pat = Pattern::parse(p, what)?;
        match crate::glob::empty_package_level(p) {
            Some(why) if matches!(pat, Pattern::Glob(_)) => {
                Err(format!("bad {what} pattern {p:?}: {why}"))
            }
            _ => Ok(pat),
        }
    }
    /// [`Pattern::parse`] for `exclude_method` patterns (`method` has a check of its own, which
    /// names the class to write): a glob is checked as probe rules' method globs are
    /// ([`crate::Glob::check_method`]).
    fn method(p: &str, what: &str) -> Result<Pattern, String> {
        let pat = Pattern::parse(p, what)?;
        match &pat {
            Pattern::Glob(_) => crate::Glob::check_method(p).map_err(|e| {
                format!("bad {what} pattern {p:?}: {e} (a regular expression is written /.../)")
            })?,
            Pattern::Regex(_) => {}
        }
        Ok(pat)
    }
    pub fn matches(&self, s: &str) -> bool {
        match self {
            Pattern::Regex(r) => r.is_match(s),
            Pattern::Glob(p) => glob(p, s.as_bytes()),
        }
    }

    /// [`Pattern::matches`] on a class name in internal form (`java/util/Map`): globs match it
    /// as it is (no copy: the class-load hook asks this of every class); a regular expression
    /// sees the dotted name.
    pub fn matches_internal(&self, internal: &str) -> bool {
        match self {
            Pattern::Regex(r) => r.is_match(&dotted(internal)),
            Pattern::Glob(p) => glob(p, internal.as_bytes()),
        }
    }
}

/// A package separator of the subject: '.' (dotted names) or '/' (internal names).
fn sep(b: u8) -> bool {
    b == b'.' || b == b'/'
}

/// `*` = any run without a package separator, `**` = any run, `?` = one character other than
/// a separator. The pattern is dotted; in the subject '/' stands for '.' (internal names).
fn glob(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') if p.get(1) == Some(&b'*') => (0..=s.len()).any(|k| glob(&p[2..], &s[k..])),
        Some(b'*') => {
            for k in 0..=s.len() {
                if glob(&p[1..], &s[k..]) {
                    return true;
                }
                if k < s.len() && sep(s[k]) {
                    return false;
                }
            }
            false
        }
        Some(b'?') => !s.is_empty() && !sep(s[0]) && glob(&p[1..], &s[1..]),
        Some(b'.') => s.first().is_some_and(|&b| sep(b)) && glob(&p[1..], &s[1..]),
        Some(&c) => s.first() == Some(&c) && glob(&p[1..], &s[1..]),
    }
}

/// Whether glob `p` (see [`glob`]) matches some name that starts with `prefix` and goes on
/// after it: the pattern run over the prefix (a set of positions in it, `*` and `**` kept
/// open), and some position left with pattern to match the rest.
fn glob_may_extend(p: &[u8], prefix: &[u8]) -> bool {
    // the positions reachable without consuming: a `*` or `**` may match nothing
    fn close(p: &[u8], set: &mut Vec<usize>) {
        let mut k = 0;
        while k < set.len() {
            let i = set[k];
            let skip = match (p.get(i), p.get(i + 1)) {
                (Some(b'*'), Some(b'*')) => Some(i + 2),
                (Some(b'*'), _) => Some(i + 1),
                _ => None,
            };
            if let Some(j) = skip.filter(|j| !set.contains(j)) {
                set.push(j);
            }
            k += 1;
        }
    }
    let mut set = vec![0usize];
    close(p, &mut set);
    for &c in prefix {
        let mut next = Vec::new();
        for &i in &set {
            let to = match (p.get(i), p.get(i + 1)) {
                (Some(b'*'), Some(b'*')) => Some(i),
                (Some(b'*'), _) if !sep(c) => Some(i),
                (Some(b'?'), _) if !sep(c) => Some(i + 1),
                (Some(b'.'), _) if sep(c) => Some(i + 1),
                (Some(&b), _) if b == c && b != b'*' && b != b'?' && b != b'.' => Some(i + 1),
                _ => None,
            };
            if let Some(j) = to.filter(|j| !next.contains(j)) {
                next.push(j);
            }
        }
        close(p, &mut next);
        if next.is_empty() {
            return false;
        }
        set = next;
    }
    // pattern left to match the class's own name (a run that may be empty is not enough
    // alone: `java.lang.` is no class; a `*`/`**` there can match one)
    set.iter().any(|&i| i < p.len())
}

/// A method a rule matches that tracing leaves alone, and why ([`untraceable_matches`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untraced {
    pub rule: usize,
    /// dotted
    pub class: String,
    pub method: String,
    pub desc: String,
    /// "native method", "abstract method", "static initializer"
    pub what: &'static str,
    /// why it is left alone
    pub why: &'static str,
}

impl Untraced {
    /// `native method java.util.zip.CRC32.updateBytes0(I[BII)I (native methods have no
    /// bytecode to instrument)`
    pub fn describe(&self) -> String {
        format!(
            "{} {}.{}{} ({})",
            self.what, self.class, self.method, self.desc, self.why
        )
    }
}

/// Why tracing leaves a HotSpot intrinsic alone ([`crate::intrinsics`]): C1 and C2 replace its
/// body with their own code, so probes in it would count only the calls made before it was
/// compiled, silently fewer than were made.
pub const INTRINSIC_WHY: &str =
    "HotSpot intrinsic: its body does not run when compiled; not traced";

/// Whether method `name desc` of class `iname` (internal name) is a HotSpot intrinsic, which
/// tracing never instruments ([`INTRINSIC_WHY`]).
fn intrinsic(iname: &str, name: &str, desc: &str) -> bool {
    crate::intrinsics::is_intrinsic(iname.as_bytes(), name.as_bytes(), desc.as_bytes())
}

/// The methods of one class that rules match by name, descriptor, access and annotations but
/// tracing never instruments: native and abstract (interface) methods have no code, a static
/// initializer is never traced, a HotSpot intrinsic's body does not run once compiled. For the summary's and `bci rules explain`'s reason when a
/// rule matched only such methods. Classes tracing never instruments give none.
pub fn untraceable_matches(class_bytes: &[u8], rules: &[TraceRule]) -> bci::Result<Vec<Untraced>> {
    let cf = ClassFile::parse(class_bytes)?;
    let mut out = Vec::new();
    let iname = cf.name()?.to_string();
    if !allowed(&iname) || cf.access & ACC_MODULE != 0 {
        return Ok(out);
    }
    let view = class_view(&cf)?;
    for (ri, r) in rules.iter().enumerate() {
        if !r.class_matches(&view) {
            continue;
        }
        for m in &cf.methods {
            let name = cf.member_name(m);
            let (what, why) = if m.access & ACC_NATIVE != 0 {
                (
                    "native method",
                    "native methods have no bytecode to instrument",
                )
            } else if m.access & ACC_ABSTRACT != 0 {
                (
                    "abstract method",
                    "an abstract or interface method has no code: a rule traces the classes that \
                     implement it (e.g. implements = \"...\")",
                )
            } else if name == "<clinit>" {
                (
                    "static initializer",
                    "static initializers are never traced: one runs once, while its class is \
                     being initialized",
                )
            } else if intrinsic(&iname, &name, &cf.member_desc(m)) {
                ("HotSpot intrinsic", INTRINSIC_WHY)
            } else {
                continue;
            };
            let desc = cf.member_desc(m);
            if r.method_matches(&name, &desc, m.access, &annotations(&cf, &m.attributes)) {
                out.push(Untraced {
                    rule: ri,
                    class: view.name.clone(),
                    method: name.to_string(),
                    desc: desc.to_string(),
                    what,
                    why,
                });
            }
        }
    }
    Ok(out)
}

/// Where a rule acts.
#[derive(Clone, Debug)]
pub enum Location {
    /// Method entry / normal exit / exceptional exit (any combination).
    Method {
        entry: bool,
        exit: bool,
        exception: bool,
    },
    /// Before the first instruction of source line N.
    Line(u32),
    /// Before (or, with `at = ["after"]`, after the normal return of) each call to
    /// `owner.name` inside the method.
    Call {
        owner: Pattern,
        name: Pattern,
        after: bool,
    },
}

/// One tracing rule.
#[derive(Clone, Debug)]
pub struct TraceRule {
    pub name: String,
    /// line and column of the rule's `[[rule]]` header
    pub pos: (usize, usize),
    /// line and column of its `class =` value
    pub class_pos: (usize, usize),
    /// line and column of its `method =` value (the rule's header without it)
    pub method_pos: (usize, usize),
    class: Pattern,
    exclude_class: Vec<Pattern>,
    method: Pattern,
    exclude_method: Vec<Pattern>,
    descriptor: Option<Pattern>,
    access_on: u16,
    access_off: u16,
    class_annotation: Option<Pattern>,
    annotation: Option<Pattern>,
    extends: Option<Pattern>,
    implements: Option<Pattern>,
    pub location: Location,
    /// `at` lists "entry" explicitly: trace events at entry too (by default a traced call
    /// gives one event, at its end).
    pub entry_event: bool,
    /// `path:line:col` of `line =` or `call =` (for explain's errors)
    pub location_pos: (usize, usize),
    /// line and column of `trace = true` (the rule's header without it)
    pub trace_pos: (usize, usize),
    pub count: bool,
    pub time: bool,
    pub trace: bool,
    pub args: bool,
    pub ret: bool,
    pub exception: bool,
    pub tostring: bool,
    pub max_string: u32,
    pub min_ns: i64,
    pub sample: u32,
    pub stack: u32,
}

const ACCESS: &[(&str, u16)] = &[
    ("public", 0x0001),
    ("private", 0x0002),
    ("protected", 0x0004),
    ("static", 0x0008),
    ("final", 0x0010),
    ("synchronized", 0x0020),
    ("bridge", 0x0040),
    ("varargs", 0x0080),
    ("synthetic", 0x1000),
];

/// Keys only tracing rules have, in declaration order, for "conflicting" errors.
pub(crate) fn first_trace_key(r: &RuleToml) -> Option<(&'static str, usize)> {
    fn s<T>(k: &'static str, v: &Option<Sp<T>>) -> Option<(&'static str, usize)> {
        v.as_ref().map(|v| (k, v.span().start))
    }
    fn l<T>(k: &'static str, v: &Option<Vec<Sp<T>>>) -> Option<(&'static str, usize)> {
        v.as_ref()
            .and_then(|v| v.first())
            .map(|v| (k, v.span().start))
    }
    s("class", &r.class)
        .or(s("method", &r.method))
        .or(s("descriptor", &r.descriptor))
        .or(l("access", &r.access))
        .or(s("class_annotation", &r.class_annotation))
        .or(s("annotation", &r.annotation))
        .or(s("extends", &r.extends))
        .or(s("implements", &r.implements))
        .or(l("exclude_class", &r.exclude_class))
        .or(l("exclude_method", &r.exclude_method))
        .or(s("at", &r.at))
        .or(s("line", &r.line))
        .or(s("call", &r.call))
        .or(s("count", &r.count))
        .or(s("time", &r.time))
        .or(s("trace", &r.trace))
        .or(s("args", &r.args))
        .or(s("return", &r.ret))
        .or(s("exception", &r.exception))
        .or(s("tostring", &r.tostring))
        .or(s("max_string", &r.max_string))
        .or(s("min_duration", &r.min_duration))
        .or(s("sample", &r.sample))
        .or(s("stack", &r.stack))
}

/// `"1ms"`, `"250us"`, `"10ns"`, `"2s"` -> ns.
pub fn parse_duration(s: &str) -> Option<i64> {
    duration_ns(s).ok()
}

/// Why a duration was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum DurationError {
    /// Not digits followed by ns, us, ms or s.
    Malformed,
    /// More nanoseconds than an i64 holds; the most there is, in the unit given.
    TooLarge { max: i64, unit: &'static str },
}

/// [`parse_duration`], telling a malformed duration from one too large.
pub(crate) fn duration_ns(s: &str) -> Result<i64, DurationError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or(DurationError::Malformed)?;
    let (n, unit) = s.split_at(split);
    let (mul, unit) = match unit {
        "ns" => (1, "ns"),
        "us" => (1_000, "us"),
        "ms" => (1_000_000, "ms"),
        "s" => (1_000_000_000, "s"),
        _ => return Err(DurationError::Malformed),
    };
    if n.is_empty() {
        return Err(DurationError::Malformed);
    }
    let too_large = || DurationError::TooLarge {
        max: i64::MAX / mul,
        unit,
    };
    // digits only: a number that does not parse is too large for an i64
    let n: i64 = n.parse().map_err(|_| too_large())?;
    n.checked_mul(mul).ok_or_else(too_large)
}

type ErrFn<'a> = &'a dyn Fn(usize, String) -> RuleError;

/// The file offset of byte `at` of string value `v` (its first character's when the string
/// is written with escapes: its offsets and the file's differ).
fn at_char(v: &Sp<String>, at: usize) -> usize {
    let span = v.span();
    if span.end - span.start == v.get_ref().len() + 2 {
        span.start + 1 + at
    } else {
        span.start
    }
}

/// A name glob (not a /regex/) with a descriptor in it, `fib(I)I`: no method name has one.
fn is_regex(v: &str) -> bool {
    v.len() >= 2 && v.starts_with('/') && v.ends_with('/')
}

fn is_glob_with_descriptor(v: &str) -> bool {
    !is_regex(v) && v.contains('(')
}

impl TraceRule {
    pub(crate) fn from_toml(
        r: &RuleToml,
        k: usize,
        start: usize,
        err: ErrFn<'_>,
    ) -> Result<TraceRule, RuleError> {
        let at0 = err(start, String::new());
        let pos = (at0.line, at0.col);
        let name = match &r.name {
            Some(n) => {
                let v = n.get_ref();
                if v.is_empty() || v.chars().any(|c| c.is_control()) {
                    return Err(err(
                        n.span().start,
                        "a rule name must be non-empty text without control characters".into(),
                    ));
                }
                v.clone()
            }
            None => {
                return Err(err(
                    start,
                    format!("rule {} has no name (name = \"...\")", k + 1),
                ))
            }
        };
        let who = format!("rule {name:?}");
        // probe-rule keys in a tracing rule
        let span = |v: &Option<Sp<Vec<Sp<String>>>>| v.as_ref().map(|v| v.span().start);
        for (key, at) in [
            ("classes", span(&r.classes)),
            ("exclude_classes", span(&r.exclude_classes)),
            ("methods", span(&r.methods)),
            ("exclude_methods", span(&r.exclude_methods)),
            (
                "descriptors",
                (r.descriptors.as_ref())
                    .map(|d| d.get_ref().first().map_or(start, |v| v.span().start)),
            ),
        ] {
            if let Some(at) = at {
                return Err(err(
                    at,
                    format!("{who}: `{key}` belongs to probe rules (with `probes`); tracing rules use class, method, descriptor, exclude_class, exclude_method"),
                ));
            }
        }
        let pat = |v: &Sp<String>, what: &str| {
            Pattern::parse(v.get_ref(), what)
                .map_err(|m| err(v.span().start, format!("{who}: {m}")))
        };
        let mpat = |v: &Sp<String>, what: &str| {
            Pattern::method(v.get_ref(), what)
                .map_err(|m| err(v.span().start, format!("{who}: {m}")))
        };
        let cpat = |v: &Sp<String>, what: &str| {
            Pattern::class(v.get_ref(), what)
                .map_err(|m| err(v.span().start, format!("{who}: {m}")))
        };
        let value_pos = |v: &Option<Sp<String>>| {
            v.as_ref().map_or(pos, |c| {
                let e = err(c.span().start, String::new());
                (e.line, e.col)
            })
        };
        let (class_pos, method_pos) = (value_pos(&r.class), value_pos(&r.method));
        let class = match &r.class {
            Some(c) if !is_regex(c.get_ref()) && c.get_ref().trim() != c.get_ref() => {
                let v = c.get_ref();
                return Err(err(
                    c.span().start,
                    format!(
                        "{who}: class {v:?} has spaces at its start or end: a class name has none; write class = {:?}",
                        v.trim()
                    ),
                ));
            }
            Some(c) => cpat(c, "class")?,
            None => {
                return Err(err(
                    start,
                    format!("{who} has no `class` (e.g. class = \"com.acme.**\")"),
                ))
            }
        };
        let method = match &r.method {
            Some(m) if is_glob_with_descriptor(m.get_ref()) => {
                let v = m.get_ref();
                let at = v.find('(').unwrap_or(0);
                return Err(err(
                    at_char(m, at),
                    format!(
                        "{who}: method {v:?}: `method` is a method name, without a descriptor; \
                         select the descriptor with descriptor = {:?}",
                        &v[at..]
                    ),
                ));
            }
            // a '.' is in no JVM method name (JVMS 4.2.2): "Main.fib" is a class and a method
            Some(m) if !is_regex(m.get_ref()) && m.get_ref().contains('.') => {
                let v = m.get_ref();
                let at = v.rfind('.').unwrap_or(0);
                return Err(err(
                    at_char(m, at),
                    format!(
                        "{who}: method {v:?}: a method name has no '.' (JVMS 4.2.2): name the class with `class`, e.g. class = {:?}, method = {:?}",
                        &v[..at],
                        &v[at + 1..]
                    ),
                ));
            }
            Some(m) => pat(m, "method")?,
            None => Pattern::Glob(b"*".to_vec()),
        };
        let descriptor = match &r.descriptor {
            Some(d) => {
                let v = d.get_ref();
                if !(v.starts_with('(') || v.starts_with('*') || v.starts_with('/')) {
                    return Err(err(
                        d.span().start,
                        format!("{who}: bad descriptor pattern {v:?}: a method descriptor starts with '(' (e.g. \"(I)*\")"),
                    ));
                }
                // descriptors contain '/' and ';': glob them with the member matcher
                if v.len() >= 2 && v.starts_with('/') && v.ends_with('/') {
                    Some(pat(d, "descriptor")?)
                } else {
                    // one no method descriptor can match is refused (JVMS 4.3.3)
                    let wild = crate::desc_check::Wild {
                        question_slash: false,
                        dot_is_slash: true,
                    };
                    if let Err((at, m)) = crate::desc_check::check(v, wild) {
                        return Err(err(
                            at_char(d, at),
                            format!("{who}: bad descriptor pattern {v:?}: {m}"),
                        ));
                    }
                    Some(Pattern::Glob(v.replace('*', "**").into_bytes()))
                }
            }
            None => None,
        };
        let (mut access_on, mut access_off) = (0u16, 0u16);
        for a in r.access.iter().flatten() {
            let v = a.get_ref();
            let (neg, word) = match v.strip_prefix('!') {
                Some(w) => (true, w),
                None => (false, v.as_str()),
            };
            match ACCESS.iter().find(|(n, _)| *n == word) {
                Some((_, f)) if neg => access_off |= f,
                Some((_, f)) => access_on |= f,
                None => {
                    return Err(err(
                        a.span().start,
                        format!(
                            "{who}: unknown access flag {v:?}; expected one of: {} (each may be negated with !)",
                            ACCESS.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
                        ),
                    ))
                }
            }
        }
        if access_on & access_off != 0 {
            let a = r
                .access
                .as_ref()
                .and_then(|v| v.first())
                .map_or(start, |a| a.span().start);
            return Err(err(
                a,
                format!("{who}: an access flag is both required and excluded"),
            ));
        }
        let opt_pat =
            |v: &Option<Sp<String>>, what: &str| v.as_ref().map(|v| cpat(v, what)).transpose();
        let class_annotation = opt_pat(&r.class_annotation, "class_annotation")?;
        let annotation = opt_pat(&r.annotation, "annotation")?;
        let extends = opt_pat(&r.extends, "extends")?;
        let implements = opt_pat(&r.implements, "implements")?;
        let exclude_class = r
            .exclude_class
            .iter()
            .flatten()
            .map(|v| cpat(v, "exclude_class"))
            .collect::<Result<Vec<_>, _>>()?;
        let exclude_method = r
            .exclude_method
            .iter()
            .flatten()
            .map(|v| mpat(v, "exclude_method"))
            .collect::<Result<Vec<_>, _>>()?;
        let flag = |v: &Option<Sp<bool>>| v.as_ref().is_some_and(|b| *b.get_ref());
        let (count, time, trace) = (flag(&r.count), flag(&r.time), flag(&r.trace));
        let trace_pos = r.trace.as_ref().map_or(pos, |t| {
            let e = err(t.span().start, String::new());
            (e.line, e.col)
        });
        if !(count || time || trace) {
            return Err(err(
                start,
                format!("{who} has no action; expected count = true, time = true or trace = true"),
            ));
        }
        // where
        let mut location_pos = pos;
        // with `call`, `at` says which side of the call: "before" (the default) or "after"
        let mut call_after = false;
        let at_rule = match (&r.at, &r.call) {
            (Some(at), Some(_)) => {
                let sides: Vec<&str> = at.get_ref().iter().map(|a| a.get_ref().as_str()).collect();
                match sides.as_slice() {
                    ["before"] => {}
                    ["after"] => call_after = true,
                    _ => {
                        return Err(err(
                            at.span().start,
                            format!("{who}: with `call`, `at` is [\"before\"] or [\"after\"] (the side of the call the rule acts on)"),
                        ))
                    }
                }
                &None
            }
            (at, _) => at,
        };
        let location = match (at_rule, &r.line, &r.call) {
            (Some(at), line, call) => {
                if let Some(l) = line {
                    return Err(err(
                        l.span().start,
                        format!(
                            "{who}: `line` and `at` conflict (a rule acts at one kind of location)"
                        ),
                    ));
                }
                if let Some(c) = call {
                    return Err(err(
                        c.span().start,
                        format!(
                            "{who}: `call` and `at` conflict (a rule acts at one kind of location)"
                        ),
                    ));
                }
                let (mut entry, mut exit, mut exception) = (false, false, false);
                for a in at.get_ref() {
                    match a.get_ref().as_str() {
                        "entry" => entry = true,
                        "exit" => exit = true,
                        "exception" => exception = true,
                        // the sides of a call site: a `call` rule's
                        side @ ("after" | "before") => {
                            return Err(err(
                                a.span().start,
                                format!("{who}: at = [{side:?}] is a side of a call site: it needs `call = \"Owner.method\"` in the same rule (the calls it acts on); a method's locations are entry, exit, exception"),
                            ))
                        }
                        other => {
                            return Err(err(
                                a.span().start,
                                format!("{who}: unknown location {other:?} in `at`; expected entry, exit, exception (or line = N, call = \"Owner.method\")"),
                            ))
                        }
                    }
                }
                if !(entry || exit || exception) {
                    return Err(err(at.span().start, format!("{who}: `at` is empty")));
                }
                Location::Method {
                    entry,
                    exit,
                    exception,
                }
            }
            (None, Some(l), Some(c)) => {
                let _ = l;
                return Err(err(
                    c.span().start,
                    format!(
                        "{who}: `line` and `call` conflict (a rule acts at one kind of location)"
                    ),
                ));
            }
            (None, Some(l), None) => {
                let n = *l.get_ref();
                if !(1..=65535).contains(&n) {
                    return Err(err(
                        l.span().start,
                        format!("{who}: bad line {n}: expected a source line from 1 to 65535"),
                    ));
                }
                let e = err(l.span().start, String::new());
                location_pos = (e.line, e.col);
                Location::Line(n as u32)
            }
            (None, None, Some(c)) => {
                let v = c.get_ref();
                if is_glob_with_descriptor(v) {
                    return Err(err(
                        at_char(c, v.find('(').unwrap_or(0)),
                        format!(
                            "{who}: call {v:?}: `call` takes no descriptor: expected \
                             \"Owner.method\" (e.g. \"java.util.HashMap.put\"; it acts on \
                             the calls of every method of that name, whatever its descriptor)"
                        ),
                    ));
                }
                let Some((owner, name)) = v
                    .rsplit_once('.')
                    .filter(|(o, n)| !o.is_empty() && !n.is_empty())
                else {
                    return Err(err(
                        c.span().start,
                        format!("{who}: bad call {v:?}: expected \"Owner.method\" (e.g. \"java.util.HashMap.put\")"),
                    ));
                };
                if name == "<init>" || name == "<clinit>" {
                    // `new X(...)` is not a call site tracing instruments (the object is not
                    // initialized yet around it), and nothing calls a static initializer
                    return Err(err(
                        c.span().start,
                        format!("{who}: call {v:?}: a constructor or static initializer is not a call site a rule can trace; to trace a constructor use method = \"<init>\" in a rule for its class"),
                    ));
                }
                let owner = Pattern::class(owner, "call owner")
                    .map_err(|m| err(c.span().start, format!("{who}: {m}")))?;
                let name = Pattern::parse(name, "call method")
                    .map_err(|m| err(c.span().start, format!("{who}: {m}")))?;
                let e = err(c.span().start, String::new());
                location_pos = (e.line, e.col);
                Location::Call {
                    owner,
                    name,
                    after: call_after,
                }
            }
            (None, None, None) => Location::Method {
                entry: true,
                exit: true,
                exception: true,
            },
        };
        let ends = matches!(
            location,
            Location::Method { exit: true, .. }
                | Location::Method {
                    exception: true,
                    ..
                }
        );
        if time && !ends {
            let t = r.time.as_ref().map_or(start, |t| t.span().start);
            return Err(err(
                t,
                format!("{who}: `time` needs a call's end (at = exit or exception); it conflicts with this location"),
            ));
        }
        let with_trace = |key: &str, v: &Option<Sp<bool>>| -> Result<(), RuleError> {
            match v {
                Some(b) if !trace => Err(err(
                    b.span().start,
                    format!(
                        "{who}: `{key}` says what a trace event captures; it needs trace = true"
                    ),
                )),
                _ => Ok(()),
            }
        };
        with_trace("args", &r.args)?;
        with_trace("return", &r.ret)?;
        with_trace("exception", &r.exception)?;
        with_trace("tostring", &r.tostring)?;
        let entry =
            r.at.as_ref()
                .is_some_and(|a| a.get_ref().iter().any(|x| x.get_ref() == "entry"));
        let min_ns = match &r.min_duration {
            Some(d) => {
                let ns = match duration_ns(d.get_ref()) {
                    Ok(ns) => ns,
                    Err(DurationError::Malformed) => return Err(err(
                        d.span().start,
                        format!("{who}: bad min_duration {:?}: expected a number with ns, us, ms or s (e.g. \"500us\")", d.get_ref()),
                    )),
                    Err(DurationError::TooLarge { max, unit }) => return Err(err(
                        d.span().start,
                        format!("{who}: min_duration {:?} is too large: at most {max}{unit} (2^63-1 ns, about 292 years)", d.get_ref()),
                    )),
                };
                if !(time || trace) || !ends {
                    return Err(err(
                        d.span().start,
                        format!("{who}: `min_duration` filters calls by duration: it needs time or trace at a call's end (at = exit or exception)"),
                    ));
                }
                // a call's entry event is written before its duration is known
                if trace && entry {
                    return Err(err(
                        d.span().start,
                        format!("{who}: `min_duration` keeps a call once it has ended, but its entry event is written when it starts: with at = \"entry\" every call's entry would be written; drop \"entry\" from `at` (the event at a call's end carries its duration and arguments)"),
                    ));
                }
                ns
            }
            None => 0,
        };
        let int = |v: &Option<Sp<i64>>,
                   key: &str,
                   lo: i64,
                   hi: i64,
                   need_trace: bool|
         -> Result<Option<i64>, RuleError> {
            let Some(v) = v else { return Ok(None) };
            let n = *v.get_ref();
            if !(lo..=hi).contains(&n) {
                return Err(err(
                    v.span().start,
                    format!("{who}: bad {key} {n}: expected {lo} to {hi}"),
                ));
            }
            if need_trace && !trace {
                return Err(err(
                    v.span().start,
                    format!("{who}: `{key}` applies to trace events; it needs trace = true"),
                ));
            }
            Ok(Some(n))
        };
        let sample = int(&r.sample, "sample", 1, 1 << 30, true)?.unwrap_or(1) as u32;
        let stack = int(&r.stack, "stack", 0, 64, true)?.unwrap_or(0) as u32;
        let max_string = int(&r.max_string, "max_string", 1, 65536, true)?.unwrap_or(64) as u32;
        let on = |v: &Option<Sp<bool>>, dflt: bool| v.as_ref().map_or(dflt, |b| *b.get_ref());
        let args = on(&r.args, trace);
        let ret = on(&r.ret, trace);
        let exception = on(&r.exception, trace);
        let tostring = on(&r.tostring, false);
        Ok(TraceRule {
            name,
            pos,
            class_pos,
            method_pos,
            class,
            exclude_class,
            method,
            exclude_method,
            descriptor,
            access_on,
            access_off,
            class_annotation,
            annotation,
            extends,
            implements,
            location,
            entry_event: entry,
            location_pos,
            trace_pos,
            count,
            time,
            trace,
            args,
            ret,
            exception,
            tostring,
            max_string,
            min_ns,
            sample,
            stack,
        })
    }

    /// The HotSpot intrinsics (`java.util.Arrays.equals([B[B)Z`) the rule's class, method and
    /// descriptor patterns match, in classes tracing may instrument: tracing leaves them alone
    /// ([`INTRINSIC_WHY`]). Its access, annotation and supertype conditions are not looked at
    /// (`bci rules check` sees no class): it may match fewer.
    pub fn intrinsics(&self) -> Vec<String> {
        crate::intrinsics::TABLE
            .iter()
            .filter(|e| {
                allowed(e.0)
                    && self.name_matches_internal(e.0)
                    && self.method.matches(e.1)
                    && !self.exclude_method.iter().any(|p| p.matches(e.1))
                    && self.descriptor.as_ref().is_none_or(|p| p.matches(e.2))
            })
            .map(|e| format!("{}.{}{}", dotted(e.0), e.1, e.2))
            .collect()
    }

    /// [`name_matches`](Self::name_matches) on an internal name (`java/lang/String`).
    pub fn name_matches_internal(&self, internal: &str) -> bool {
        self.class.matches_internal(internal)
            && !self
                .exclude_class
                .iter()
                .any(|p| p.matches_internal(internal))
    }

    /// Whether the rule can match a class of this name (dotted) at all: name and exclusions.
    pub fn name_matches(&self, dotted: &str) -> bool {
        self.class.matches(dotted) && !self.exclude_class.iter().any(|p| p.matches(dotted))
    }

    /// For a rule whose class pattern matches none of `names` (dotted): the pattern with its
    /// last one, two, ... `.` made `$` that matches one of them, fewest first (a nested class
    /// is `a.Main.Inner` in the source, `a.Main$Inner` in its class file). None for a regular
    /// expression, or when no such pattern matches.
    pub fn nested_class_hint(&self, names: &[&str]) -> Option<String> {
        let Pattern::Glob(p) = &self.class else {
            return None;
        };
        let dots: Vec<usize> = (0..p.len()).filter(|&i| p[i] == b'.').collect();
        (1..=dots.len()).find_map(|k| {
            let mut q = p.clone();
            dots[dots.len() - k..].iter().for_each(|&i| q[i] = b'$');
            names
                .iter()
                .any(|n| glob(&q, n.as_bytes()) && !self.exclude_class.iter().any(|x| x.matches(n)))
                .then(|| String::from_utf8_lossy(&q).into_owned())
        })
    }

    /// Class-level match: name, exclusions, annotations, declared supertypes.
    /// Why this rule can match nothing whatever the class path: its class pattern names (or
    /// only reaches) classes of the packages tracing rules never instrument ([`NEVER`]), or
    /// its method pattern names only `<clinit>`. `names`: the dotted class names of the class
    /// path, for a pattern with wildcards. None when neither holds.
    pub fn never_traced(&self, names: &[&str]) -> Option<String> {
        const WHY_CLASS: &str = "tracing rules never instrument java.lang (and its \
             subpackages), java.io, java.util.concurrent, jdk.internal and sun: the tracing \
             runtime uses them";
        let never = |dotted: &str| !allowed(&dotted.replace('.', "/"));
        // the package of a class NEVER excludes, for the message
        let package = |dotted: &str| {
            NEVER
                .iter()
                .map(|p| p.trim_end_matches('/').replace('/', "."))
                .find(|p| dotted.starts_with(&format!("{p}.")))
                .unwrap_or_else(|| "bci.runtime".to_string())
        };
        if let Pattern::Glob(p) = &self.class {
            let lit: Vec<u8> = p
                .iter()
                .copied()
                .take_while(|&b| b != b'*' && b != b'?')
                .collect();
            let lit = String::from_utf8_lossy(&lit).into_owned();
            let exact = lit.len() == p.len();
            // an exact name, or a literal prefix that ends a package inside an excluded one
            let reached = if exact {
                never(&lit).then(|| lit.clone())
            } else {
                lit.rfind('.')
                    .map(|i| &lit[..=i])
                    .filter(|pre| never(&format!("{pre}X")))
                    .map(|pre| format!("{pre}*"))
            };
            if let Some(c) = reached {
                return Some(format!(
                    "class {c:?} is in {}, and {WHY_CLASS}",
                    package(c.trim_end_matches('*'))
                ));
            }
        }
        // a pattern with wildcards: what it matches in the class path, all excluded
        let matched: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| self.name_matches(n))
            .collect();
        if !matched.is_empty() && matched.iter().all(|n| never(n)) {
            return Some(format!(
                "the classes it matches ({}{}) are in packages tracing rules never instrument: \
                 {WHY_CLASS}",
                matched[..matched.len().min(3)].join(", "),
                if matched.len() > 3 { ", …" } else { "" }
            ));
        }
        if let Pattern::Glob(m) = &self.method {
            if m == b"<clinit>" {
                return Some(
                    "method \"<clinit>\": static initializers are never traced (one runs once, \
                     while its class is being initialized)"
                        .to_string(),
                );
            }
        }
        None
    }

    /// For a rule [`never_traced`](Self::never_traced) does not rule out: the packages of
    /// [`NEVER`] (and bci.runtime) its class pattern can also match some class of
    /// (`**.String` matches java.lang.String), dotted; those classes are left alone. Empty for
    /// a regular expression (not analysed) or a pattern that reaches none of them.
    pub fn may_reach_never(&self) -> Vec<String> {
        let Pattern::Glob(p) = &self.class else {
            return Vec::new();
        };
        NEVER
            .iter()
            .copied()
            .chain(["bci/runtime/"])
            .map(|pre| pre.replace('/', "."))
            .filter(|pre| glob_may_extend(p, pre.as_bytes()))
            .map(|pre| pre.trim_end_matches('.').to_string())
            .collect()
    }

    /// The package (dotted) the class pattern names: an exact name's, or the one its literal
    /// part before the first wildcard ends in (`javax.swing.J*` -> `javax.swing`). None for a
    /// regular expression or a pattern without a `.` before its first wildcard.
    pub fn class_package(&self) -> Option<String> {
        let Pattern::Glob(p) = &self.class else {
            return None;
        };
        let lit = p
            .iter()
            .position(|&b| b == b'*' || b == b'?')
            .unwrap_or(p.len());
        let dot = p[..lit].iter().rposition(|&b| b == b'.')?;
        Some(String::from_utf8_lossy(&p[..dot]).into_owned()).filter(|s| !s.is_empty())
    }

    /// Whether the class pattern begins with a literal `java.`, `javax.` or `jdk.` package:
    /// a rule for the JDK's classes (`bci rules explain` then suggests the JDK on the class
    /// path).
    pub fn targets_jdk(&self) -> bool {
        match &self.class {
            Pattern::Glob(p) => [&b"java."[..], b"javax.", b"jdk."]
                .iter()
                .any(|pre| p.starts_with(pre)),
            Pattern::Regex(_) => false,
        }
    }

    pub fn class_matches(&self, c: &ClassView) -> bool {
        self.name_matches(&c.name)
            && self
                .class_annotation
                .as_ref()
                .is_none_or(|p| c.annotations.iter().any(|a| p.matches(a)))
            && self
                .extends
                .as_ref()
                .is_none_or(|p| c.super_name.as_deref().is_some_and(|s| p.matches(s)))
            && self
                .implements
                .as_ref()
                .is_none_or(|p| c.interfaces.iter().any(|i| p.matches(i)))
    }

    /// Method-level match (the class matched already).
    pub fn method_matches(
        &self,
        name: &str,
        desc: &str,
        access: u16,
        annotations: &[String],
    ) -> bool {
        self.method.matches(name)
            && !self.exclude_method.iter().any(|p| p.matches(name))
            && self.descriptor.as_ref().is_none_or(|p| p.matches(desc))
            && access & self.access_on == self.access_on
            && access & self.access_off == 0
            && self
                .annotation
                .as_ref()
                .is_none_or(|p| annotations.iter().any(|a| p.matches(a)))
    }

    /// What the rule does, for `bci rules explain`.
    pub fn describe(&self) -> String {
        let mut what = Vec::new();
        if self.count {
            what.push("count".to_string());
        }
        if self.time {
            what.push("time".to_string());
        }
        if self.trace {
            what.push("trace".to_string());
        }
        if self.min_ns > 0 {
            what.push(format!("min_duration {}ns", self.min_ns));
        }
        if self.sample > 1 {
            what.push(format!("sample 1/{}", self.sample));
        }
        if self.stack > 0 {
            what.push(format!("stack {}", self.stack));
        }
        what.join(", ")
    }
}

/// What rules see of a class: dotted names.
#[derive(Debug, Clone, Default)]
pub struct ClassView {
    pub name: String,
    pub access: u16,
    pub super_name: Option<String>,
    pub interfaces: Vec<String>,
    pub annotations: Vec<String>,
}

fn dotted(s: &str) -> String {
    s.replace('/', ".")
}

/// Types of the annotations in RuntimeVisibleAnnotations / RuntimeInvisibleAnnotations among
/// `attrs`, as dotted names. A malformed attribute yields what was read before it.
pub fn annotations(cf: &ClassFile<'_>, attrs: &[bci::Attribute<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    for a in attrs {
        let n = cf.attr_name(a);
        if n != "RuntimeVisibleAnnotations" && n != "RuntimeInvisibleAnnotations" {
            continue;
        }
        let d = a.data;
        let mut p = 0usize;
        let Some(count) = u16_at(d, 0) else { continue };
        p += 2;
        for _ in 0..count {
            let Some(t) = u16_at(d, p) else { break };
            if let Ok(s) = cf.cp.utf8(t) {
                let s = s
                    .strip_prefix('L')
                    .and_then(|s| s.strip_suffix(';'))
                    .unwrap_or(&s);
                out.push(dotted(s));
            }
            match skip_annotation(d, p) {
                Some(q) => p = q,
                None => break,
            }
        }
    }
    out
}

fn u16_at(d: &[u8], p: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(p)?, *d.get(p + 1)?]))
}

/// Offset after the annotation at `p` (type, pairs).
fn skip_annotation(d: &[u8], p: usize) -> Option<usize> {
    let pairs = u16_at(d, p + 2)?;
    let mut q = p + 4;
    for _ in 0..pairs {
        q = skip_element(d, q + 2)?;
    }
    Some(q)
}

fn skip_element(d: &[u8], p: usize) -> Option<usize> {
    let tag = *d.get(p)?;
    match tag {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => Some(p + 3),
        b'e' => Some(p + 5),
        b'@' => skip_annotation(d, p + 1),
        b'[' => {
            let n = u16_at(d, p + 1)?;
            let mut q = p + 3;
            for _ in 0..n {
                q = skip_element(d, q)?;
            }
            Some(q)
        }
        _ => None,
    }
}

/// The class as rules see it.
pub fn class_view(cf: &ClassFile<'_>) -> bci::Result<ClassView> {
    let name = dotted(&cf.name()?);
    let super_name = cf.super_name()?.map(|s| dotted(&s));
    let mut interfaces = Vec::new();
    for &i in &cf.interfaces {
        interfaces.push(dotted(&cf.cp.class_name(i)?));
    }
    Ok(ClassView {
        name,
        access: cf.access,
        super_name,
        interfaces,
        annotations: annotations(cf, &cf.attributes),
    })
}

/// Whether tracing rules may instrument a class of this internal name at all.
pub fn allowed(internal_name: &str) -> bool {
    !NEVER.iter().any(|p| internal_name.starts_with(p))
        && !internal_name.starts_with("bci/runtime/")
}

/// Cheap pre-filter on an internal class name (no parsing): some rule's class pattern and
/// exclusions accept it.
pub fn selects_class(rules: &[TraceRule], internal_name: &str) -> bool {
    if rules.is_empty() || !allowed(internal_name) {
        return false;
    }
    rules.iter().any(|r| {
        r.class.matches_internal(internal_name)
            && !r
                .exclude_class
                .iter()
                .any(|p| p.matches_internal(internal_name))
    })
}

/// One place a rule acts, for explain and the agent's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub rule: usize,
    pub class: String,
    pub method: String,
    pub desc: String,
    /// "entry/exit/exception", "line 12", "call java.util.HashMap.put(...) at line 7"; empty
    /// when the method matches but has no such line or call.
    pub location: String,
    /// The method's first and last source lines (LineNumberTable), if it has them.
    pub lines: Option<(u16, u16)>,
    /// For a `call` location with no such call here: the calls this method makes whose method
    /// name matches and whose owner's simple name matches the rule's owner pattern, written
    /// as the rule would need them (`java.lang.StringBuilder.append` for
    /// `StringBuilder.append`: an owner pattern is a whole class name).
    pub near_calls: Vec<String>,
}

/// Matched methods and locations of each rule in one class (no rewriting): `bci rules explain`.
pub fn explain(class_bytes: &[u8], rules: &[TraceRule]) -> bci::Result<Vec<Site>> {
    explain_some(class_bytes, rules, &|_| true)
}

/// [`explain`] for the rules `want` selects (by index in `rules`): the agent's, for the
/// summary's reason why a rule was placed nowhere.
pub fn explain_some(
    class_bytes: &[u8],
    rules: &[TraceRule],
    want: &dyn Fn(usize) -> bool,
) -> bci::Result<Vec<Site>> {
    let cf = ClassFile::parse(class_bytes)?;
    let mut out = Vec::new();
    // what the agent never instruments is never explained as matched
    let iname = cf.name()?.to_string();
    if !allowed(&iname) {
        return Ok(out);
    }
    let view = class_view(&cf)?;
    for (ri, r) in rules.iter().enumerate() {
        if !want(ri) || !r.class_matches(&view) {
            continue;
        }
        for m in &cf.methods {
            if m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0 {
                continue;
            }
            let name = cf.member_name(m);
            let desc = cf.member_desc(m);
            // what instrument leaves alone is never explained as matched
            if !traceable(m, &iname, &name, &desc) {
                continue;
            }
            if !r.method_matches(&name, &desc, m.access, &annotations(&cf, &m.attributes)) {
                continue;
            }
            let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
                continue;
            };
            let code = bci::CodeAttr::parse(&cf, a)?;
            let table = line_table(&cf, &code);
            let lines = table
                .iter()
                .map(|e| e.1)
                .min()
                .zip(table.iter().map(|e| e.1).max());
            let mut locs: Vec<String> = locations(&cf, (&name, &desc), &code, &r.location)?
                .into_iter()
                .map(|(_, l)| l)
                .collect();
            let mut near_calls = Vec::new();
            if locs.is_empty() {
                locs.push(String::new());
                if let Location::Call { owner, name, .. } = &r.location {
                    near_calls = calls_by_simple_name(&cf, &code, owner, name)?;
                }
            }
            for loc in locs {
                out.push(Site {
                    rule: ri,
                    class: view.name.clone(),
                    method: name.to_string(),
                    desc: desc.to_string(),
                    location: loc,
                    lines,
                    near_calls: near_calls.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// The calls in `code` to a method matching `name` whose owner's simple name (after its last
/// `.` or `$`) matches `owner`, as `owner.method` with the owner's whole dotted name, sorted,
/// without repeats.
fn calls_by_simple_name(
    cf: &ClassFile<'_>,
    code: &bci::CodeAttr<'_>,
    owner: &Pattern,
    name: &Pattern,
) -> bci::Result<Vec<String>> {
    use bci::opcodes::op;
    let mut out = Vec::new();
    for i in code.decode_all()? {
        if !matches!(
            i.opcode,
            op::INVOKEVIRTUAL | op::INVOKESPECIAL | op::INVOKESTATIC | op::INVOKEINTERFACE
        ) {
            continue;
        }
        let Some(Ok(m)) = i.cp_index(code.code).map(|idx| cf.cp.member_ref(idx)) else {
            continue;
        };
        if injected_call(&m.class, &m.name) {
            continue;
        }
        let o = dotted(&m.class);
        let simple = o.rsplit(['.', '$']).next().unwrap_or(&o);
        if simple != o && m.name != "<init>" && name.matches(&m.name) && owner.matches(simple) {
            out.push(format!("{o}.{}", m.name));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Whether tracing instruments method `m` (with code) of class `iname`: not a static
/// initializer (it runs once, while its class is being initialized), nor a HotSpot intrinsic
/// ([`INTRINSIC_WHY`]), nor one of the helpers coverage or offline
/// instrumentation adds (`bci$r`, which every probe of a class instrumented offline calls).
fn traceable(m: &bci::Member<'_>, iname: &str, name: &str, desc: &str) -> bool {
    !(name == "<clinit>"
        || intrinsic(iname, name, desc)
        || crate::coverage::is_helper(m, name, desc)
        || (m.access & bci::class::ACC_SYNTHETIC != 0
            && name == crate::offline::BASE_HELPER
            && desc == "()I"))
}

/// Whether a call to `owner` (internal name) `.name` was put there by bci (coverage's and
/// offline instrumentation's `bci$` helpers, the probes' runtimes): no call site of a rule.
fn injected_call(owner: &str, name: &str) -> bool {
    name.starts_with("bci$")
        || owner.starts_with("bci/runtime/")
        || owner.starts_with("java/lang/Bci")
}

/// Instruction indexes (into the decoded code) where a line or call rule acts, with a label;
/// for method locations one entry with index usize::MAX.
fn locations(
    cf: &ClassFile<'_>,
    method: (&str, &str),
    code: &bci::CodeAttr<'_>,
    loc: &Location,
) -> bci::Result<Vec<(usize, String)>> {
    match loc {
        Location::Method {
            entry,
            exit,
            exception,
        } => {
            let mut w = Vec::new();
            if *entry {
                w.push("entry");
            }
            if *exit {
                w.push("exit");
            }
            if *exception {
                w.push("exception");
            }
            Ok(vec![(usize::MAX, w.join("/"))])
        }
        Location::Line(n) => {
            let lines = line_table(cf, code);
            // a class coverage instrumented first (in the agent or offline) keeps its original
            // line table: the label names the original class file's pc, matched by rank
            let orig: Option<Vec<u16>> = crate::coverage::original_lines(cf, method.0, method.1)
                .map(|t| {
                    let mut v: Vec<u16> = t
                        .iter()
                        .filter(|(_, l)| *l as u32 == *n)
                        .map(|(pc, _)| *pc)
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                });
            let insns = code.decode_all()?;
            let mut out = Vec::new();
            let mut pcs: Vec<u16> = lines
                .iter()
                .filter(|(_, l)| *l as u32 == *n)
                .map(|(pc, _)| *pc)
                .collect();
            pcs.sort_unstable();
            pcs.dedup();
            let orig = orig.filter(|o| o.len() == pcs.len());
            for (j, pc) in pcs.into_iter().enumerate() {
                if let Some(k) = insns.iter().position(|i| i.pc as usize == pc as usize) {
                    let shown = orig.as_ref().map_or(pc, |o| o[j]);
                    out.push((k, format!("line {n} (pc {shown})")));
                }
            }
            Ok(out)
        }
        Location::Call { owner, name, after } => {
            use bci::opcodes::op;
            let lines = line_table(cf, code);
            let insns = code.decode_all()?;
            let mut out = Vec::new();
            for (k, i) in insns.iter().enumerate() {
                if !matches!(
                    i.opcode,
                    op::INVOKEVIRTUAL | op::INVOKESPECIAL | op::INVOKESTATIC | op::INVOKEINTERFACE
                ) {
                    continue;
                }
                let Some(idx) = i.cp_index(code.code) else {
                    continue;
                };
                let Ok(m) = cf.cp.member_ref(idx) else {
                    continue;
                };
                if m.name == "<init>" || injected_call(&m.class, &m.name) {
                    continue;
                }
                let o = dotted(&m.class);
                if owner.matches(&o) && name.matches(&m.name) {
                    let line = line_at(&lines, i.pc as u16);
                    let l = line.map(|l| format!(" at line {l}")).unwrap_or_default();
                    let side = if *after { "after call" } else { "call" };
                    out.push((k, format!("{side} {o}.{}{}{l}", m.name, m.desc)));
                }
            }
            Ok(out)
        }
    }
}

fn line_table(cf: &ClassFile<'_>, code: &bci::CodeAttr<'_>) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    for a in &code.attributes {
        if cf.attr_name(a) == "LineNumberTable" {
            if let Ok(t) = bci::attrs::LineNumbers::parse(a.data, a.offset) {
                out.extend(t.entries);
            }
        }
    }
    out
}

fn line_at(lines: &[(u16, u16)], pc: u16) -> Option<u16> {
    lines
        .iter()
        .filter(|(start, _)| *start <= pc)
        .max_by_key(|(start, _)| *start)
        .map(|(_, l)| *l)
}

// Bits of the info string's mask (Trace.java reads the same).
const M_COUNT: u32 = 1;
const M_TIME: u32 = 2;
const M_TRACE: u32 = 4;
const M_ARGS: u32 = 8;
const M_RET: u32 = 16;
const M_EXC: u32 = 32;
const M_TOSTRING: u32 = 64;
const M_ENTRY: u32 = 128;
const M_EXIT: u32 = 256;
const M_EXCEPTION: u32 = 512;
const M_VOID: u32 = 1024;
const M_ENTRY_EVENT: u32 = 2048;
/// The frame is opened in the same invocation as the one below it (a second rule on the same
/// method): its time is not a callee's, and is not taken from the other rule's self time.
const M_SAME: u32 = 4096;

/// Where a point event happened (Trace.java's `hit` kinds).
const W_ENTRY: i32 = 0;
const W_LINE: i32 = 3;
const W_CALL: i32 = 4;
const W_AFTER_CALL: i32 = 5;

fn clean(s: &str) -> String {
    s.replace(['\t', '\n'], " ")
}

/// The info string of a site: tab-separated fields Trace.java parses once.
fn info(r: &TraceRule, class: &str, method: &str, desc: &str, location: &str) -> String {
    info_masked(r, class, method, desc, location, 0)
}

/// [`info`] with more bits in the mask ([`M_SAME`]).
fn info_masked(
    r: &TraceRule,
    class: &str,
    method: &str,
    desc: &str,
    location: &str,
    extra: u32,
) -> String {
    let mut mask = extra;
    for (on, bit) in [
        (r.count, M_COUNT),
        (r.time, M_TIME),
        (r.trace, M_TRACE),
        (r.args, M_ARGS),
        (r.ret, M_RET),
        (r.exception, M_EXC),
        (r.tostring, M_TOSTRING),
        (desc.ends_with(")V"), M_VOID),
        (r.entry_event, M_ENTRY_EVENT),
    ] {
        if on {
            mask |= bit;
        }
    }
    if let Location::Method {
        entry,
        exit,
        exception,
    } = r.location
    {
        for (on, bit) in [(entry, M_ENTRY), (exit, M_EXIT), (exception, M_EXCEPTION)] {
            if on {
                mask |= bit;
            }
        }
    }
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        clean(&r.name),
        clean(&dotted(class)),
        clean(method),
        clean(desc),
        clean(location),
        mask,
        r.min_ns,
        r.sample,
        r.stack,
        r.max_string
    )
}

/// Rewrites the methods of a class that tracing rules select. `next_site` hands out site ids,
/// one for each method a rule times or counts whole and each line or call it acts at (the
/// rule given: the agent tells a rule that was never placed from one that never ran).
/// Methods that cannot take the calls are left original and returned with their error; a
/// method whose code is invalid ([`bci::Error::is_invalid_input`]) fails the class.
pub fn instrument(
    class_bytes: &[u8],
    rules: &[TraceRule],
    next_site: &mut dyn FnMut(&TraceRule) -> i32,
) -> Result<(Option<Vec<u8>>, Vec<bci::Error>), bci::Error> {
    let cf = ClassFile::parse(class_bytes)?;
    let iname = cf.name()?.to_string();
    if cf.access & ACC_MODULE != 0 || !selects_class(rules, &iname) {
        return Ok((None, Vec::new()));
    }
    // classes instrumented offline (`bci instrument`, cpu=times probes or coverage counters)
    // are traced like the classes the agent instruments itself: their helpers are not traced
    // ([`traceable`]) and calls to them or to bci's runtimes are no call sites
    // ([`injected_call`])
    let view = class_view(&cf)?;
    let matching: Vec<usize> = (0..rules.len())
        .filter(|&k| rules[k].class_matches(&view))
        .collect();
    if matching.is_empty() {
        return Ok((None, Vec::new()));
    }
    let mut w = ClassWriter::new(&cf);
    let mut left = Vec::new();
    let mut changed = false;
    for (k, m) in cf.methods.iter().enumerate() {
        if m.access & (ACC_ABSTRACT | ACC_NATIVE) != 0 {
            continue;
        }
        let name = cf.member_name(m);
        let desc = cf.member_desc(m);
        if !traceable(m, &iname, &name, &desc) {
            continue;
        }
        let ann = annotations(&cf, &m.attributes);
        let mine: Vec<&TraceRule> = matching
            .iter()
            .map(|&i| &rules[i])
            .filter(|r| r.method_matches(&name, &desc, m.access, &ann))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let path = || cf.method_path(m);
        match trace_method(&cf, k, &mut w.cp, &mine, &iname, &name, &desc, next_site) {
            Ok(Some(body)) => {
                w.set_code(k, body)?;
                changed = true;
            }
            Ok(None) => {}
            Err(e) => {
                let e = if e.path().is_empty() {
                    e.context(path())
                } else {
                    e
                };
                // invalid code fails the class, as the probes' pass does: kept original in a
                // rewritten class, its dangling constant-pool indices could name the
                // constants the rewrite appends, and the JVM would no longer reject it
                if e.is_invalid_input() {
                    return Err(e);
                }
                left.push(e);
            }
        }
    }
    if !changed && !left.is_empty() && left.iter().all(crate::is_pool_full) {
        // no room for any method's sites: the class's failure, said once
        let e = &left[0];
        return Err(bci::Error::new(e.kind(), e.message()));
    }
    if !changed {
        return Ok((None, left));
    }
    let out = w.finish().map_err(|e| e.context(iname.clone()))?;
    Ok((Some(out), left))
}

/// Pushes the method's arguments as a new Object[], or null while the runtime is off: the
/// runtime's `newArgs` makes the array only when it records, and its `arg` overloads (one per
/// primitive type, one for references) box and store each value only into an array. The JVM
/// runs JDK methods before VMInit, when boxing cannot work yet (Integer.valueOf's cache needs
/// the VM's saved properties): nothing of an event runs in the injected code itself.
fn push_args(
    s: &mut Snippet,
    cp: &mut bci::CpBuilder<'_>,
    desc: &str,
    is_static: bool,
) -> bci::Result<()> {
    let params = bci::desc::MethodDesc::parse(desc)?;
    let n = params.params.len();
    s.int(cp, n as i32)?;
    s.invokestatic(cp, RUNTIME, "newArgs", "(I)[Ljava/lang/Object;")?;
    let mut slot: u16 = if is_static { 0 } else { 1 };
    for (i, p) in params.params.iter().enumerate() {
        s.op(bci::opcodes::op::DUP)?;
        s.int(cp, i as i32)?;
        s.load(load_kind(p), slot)?;
        s.invokestatic(
            cp,
            RUNTIME,
            "arg",
            &format!("([Ljava/lang/Object;I{})V", value_type(p)),
        )?;
        slot += bci::desc::slots(p) as u16;
    }
    Ok(())
}

fn load_kind(d: &str) -> char {
    match d.as_bytes().first() {
        Some(b'J') => 'J',
        Some(b'F') => 'F',
        Some(b'D') => 'D',
        Some(b'L') | Some(b'[') => 'A',
        _ => 'I',
    }
}

/// The parameter type of the runtime's `arg`/`exit` overload for a value of descriptor `d`:
/// the primitive itself (the runtime boxes it when it records), Object for references.
fn value_type(d: &str) -> &'static str {
    match d.as_bytes().first() {
        Some(b'I') => "I",
        Some(b'J') => "J",
        Some(b'F') => "F",
        Some(b'D') => "D",
        Some(b'Z') => "Z",
        Some(b'B') => "B",
        Some(b'C') => "C",
        Some(b'S') => "S",
        _ => "Ljava/lang/Object;",
    }
}

/// Pushes a null Object[] (the runtime's constant; snippets have no aconst_null).
fn null_args(s: &mut Snippet, cp: &mut bci::CpBuilder<'_>) -> bci::Result<()> {
    s.getstatic(cp, RUNTIME, "NO_ARGS", "[Ljava/lang/Object;")?;
    Ok(())
}

/// Pushes a null Object.
fn null_obj(s: &mut Snippet, cp: &mut bci::CpBuilder<'_>) -> bci::Result<()> {
    s.getstatic(cp, RUNTIME, "NONE", "Ljava/lang/Object;")?;
    Ok(())
}

struct Locals {
    t: Option<u16>,
    args: Option<u16>,
}

#[allow(clippy::too_many_arguments)]
fn trace_method(
    cf: &ClassFile<'_>,
    k: usize,
    cp: &mut bci::CpBuilder<'_>,
    rules: &[&TraceRule],
    class: &str,
    name: &str,
    desc: &str,
    next_site: &mut dyn FnMut(&TraceRule) -> i32,
) -> bci::Result<Option<Vec<u8>>> {
    let mut ed = MethodEditor::new(cf, k)?;
    let is_static = ed.is_static();
    let ret_desc = desc.rsplit(')').next().unwrap_or("V").to_string();
    let object = cp.class("java/lang/Object")?;
    let object_arr = cp.class("[Ljava/lang/Object;")?;
    let supers = ed.super_calls()?.to_vec();
    let mut entry_init = Snippet::new(); // at the very start (nulls for constructors)
    let mut entry = Snippet::new(); // at entry (before super() in constructors too)
    let mut exits: Vec<Snippet> = Vec::new(); // per rule, applied in reverse
    let mut handlers: Vec<Snippet> = Vec::new();
    // (instruction, snippet, after it rather than before)
    let mut points: Vec<(usize, Snippet, bool)> = Vec::new();
    let mut any = false;
    // a rule with a frame came before: later frames are opened in the same invocation
    let mut framed = false;
    // the frames' locals, in the order they are opened
    let mut frames: Vec<u16> = Vec::new();
    for r in rules {
        match &r.location {
            Location::Method {
                entry: at_entry,
                exit,
                exception,
            } => {
                any = true;
                let site = next_site(r);
                let frame = (r.time || r.trace) && (*exit || *exception);
                let same = if frame && framed { M_SAME } else { 0 };
                framed |= frame;
                let info = info_masked(r, class, name, desc, "method", same);
                let mut l = Locals {
                    t: None,
                    args: None,
                };
                if r.trace && r.args {
                    let a = ed.new_local(VType::Object(object_arr))?;
                    null_args(&mut entry_init, cp)?;
                    entry_init.store('A', a)?;
                    push_args(&mut entry, cp, desc, is_static)?;
                    entry.store('A', a)?;
                    l.args = Some(a);
                }
                let load_args =
                    |s: &mut Snippet, cp: &mut bci::CpBuilder<'_>, l: &Locals| -> bci::Result<()> {
                        match l.args {
                            Some(a) => s.load('A', a).map(|_| ()),
                            None => null_args(s, cp),
                        }
                    };
                if frame {
                    let t = ed.new_local(VType::Object(object))?;
                    null_obj(&mut entry_init, cp)?;
                    entry_init.store('A', t)?;
                    entry.int(cp, site)?;
                    entry.string(cp, &info)?;
                    load_args(&mut entry, cp, &l)?;
                    entry.invokestatic(
                        cp,
                        RUNTIME,
                        "enter",
                        "(ILjava/lang/String;[Ljava/lang/Object;)Ljava/lang/Object;",
                    )?;
                    entry.store('A', t)?;
                    l.t = Some(t);
                    frames.push(t);
                    // normal exit
                    let mut x = Snippet::new();
                    let capture_ret = r.trace && r.ret && ret_desc != "V";
                    // the value as it is (the runtime's exit overload for its type boxes it
                    // only for a frame that records)
                    let exit_desc = if capture_ret {
                        let wide = matches!(ret_desc.as_str(), "J" | "D");
                        x.dup_top(wide);
                        format!(
                            "({}Ljava/lang/Object;I[Ljava/lang/Object;)V",
                            value_type(&ret_desc)
                        )
                    } else {
                        null_obj(&mut x, cp)?;
                        "(Ljava/lang/Object;Ljava/lang/Object;I[Ljava/lang/Object;)V".to_string()
                    };
                    // (value on the stack,) the frame, the site, the arguments: the runtime's
                    // exit or thrown event
                    let end_call = |s: &mut Snippet,
                                    cp: &mut bci::CpBuilder<'_>,
                                    event: &str,
                                    desc: &str|
                     -> bci::Result<()> {
                        s.load('A', t)?;
                        s.int(cp, site)?;
                        load_args(s, cp, &l)?;
                        s.invokestatic(cp, RUNTIME, event, desc)?;
                        Ok(())
                    };
                    end_call(&mut x, cp, "exit", &exit_desc)?;
                    exits.push(x);
                    let mut h = Snippet::new();
                    h.dup_top(false);
                    end_call(
                        &mut h,
                        cp,
                        "thrown",
                        "(Ljava/lang/Throwable;Ljava/lang/Object;I[Ljava/lang/Object;)V",
                    )?;
                    handlers.push(h);
                } else {
                    // count (and entry-only trace) without a frame
                    let hit = |s: &mut Snippet,
                               cp: &mut bci::CpBuilder<'_>,
                               wh: i32,
                               l: &Locals|
                     -> bci::Result<()> {
                        s.int(cp, site)?;
                        s.string(cp, &info)?;
                        s.int(cp, wh)?;
                        load_args(s, cp, l)?;
                        s.invokestatic(
                            cp,
                            RUNTIME,
                            "hit",
                            "(ILjava/lang/String;I[Ljava/lang/Object;)V",
                        )?;
                        Ok(())
                    };
                    // a count of calls is taken at entry; exits only when entry is not asked for
                    if *at_entry {
                        hit(&mut entry, cp, W_ENTRY, &l)?;
                    }
                    if *exit && !*at_entry {
                        let mut x = Snippet::new();
                        hit(&mut x, cp, 1, &l)?;
                        exits.push(x);
                    }
                    if *exception && !*at_entry {
                        let mut h = Snippet::new();
                        hit(&mut h, cp, 2, &l)?;
                        handlers.push(h);
                    }
                }
            }
            loc @ (Location::Line(_) | Location::Call { .. }) => {
                let code = ed.code().clone();
                let (wh, after) = match loc {
                    Location::Line(_) => (W_LINE, false),
                    Location::Call { after: true, .. } => (W_AFTER_CALL, true),
                    _ => (W_CALL, false),
                };
                for (ik, label) in locations(cf, (name, desc), &code, loc)? {
                    let site = next_site(r);
                    let info = info(r, class, name, desc, &label);
                    let mut s = Snippet::new();
                    s.int(cp, site)?;
                    s.string(cp, &info)?;
                    s.int(cp, wh)?;
                    if r.trace && r.args {
                        push_args(&mut s, cp, desc, is_static)?;
                    } else {
                        null_args(&mut s, cp)?;
                    }
                    s.invokestatic(
                        cp,
                        RUNTIME,
                        "hit",
                        "(ILjava/lang/String;I[Ljava/lang/Object;)V",
                    )?;
                    points.push((ik, s, after));
                    any = true;
                }
            }
        }
    }
    if !any {
        return Ok(None);
    }
    // At the first instruction, in constructors too: a call whose code before its
    // super()/this() call throws (its arguments, or JDK 25's statements before it) is counted,
    // and timed from its start (the arguments passed, not `this`, still uninitialized).
    if !entry_init.is_empty() || !entry.is_empty() {
        let mut s = entry_init;
        s.append(&entry);
        ed.insert_entry(&s)?;
    }
    if !frames.is_empty() {
        // A super()/this() call that throws ends the constructor where no handler may be:
        // its frames are off the runtime's stack during the call (the last opened first),
        // and back on after it.
        let (mut park, mut unpark) = (Snippet::new(), Snippet::new());
        for &t in frames.iter().rev() {
            park.load('A', t)?;
            park.invokestatic(cp, RUNTIME, "park", "(Ljava/lang/Object;)V")?;
        }
        for &t in &frames {
            unpark.load('A', t)?;
            unpark.invokestatic(cp, RUNTIME, "unpark", "(Ljava/lang/Object;)V")?;
        }
        for &k in &supers {
            ed.insert_before(k, &park)?;
            ed.insert_after(k, &unpark)?;
        }
    }
    if !exits.is_empty() {
        let mut all = Snippet::new();
        for x in exits.iter().rev() {
            all.append(x);
        }
        ed.insert_before_returns(|_| Ok(all.clone()))?;
    }
    if !handlers.is_empty() {
        let mut all = Snippet::new();
        for h in handlers.iter().rev() {
            all.append(h);
        }
        ed.add_catch_all(&all)?;
        if !supers.is_empty() {
            // the code before the super()/this() call (not the call itself: no handler may
            // cover it)
            ed.add_prologue_catch(&all)?;
        }
    }
    for (ik, s, after) in points {
        if after {
            ed.insert_after(ik, &s)?;
        } else {
            ed.insert_before(ik, &s)?;
        }
    }
    ed.finish(cp).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(p: &str) -> Pattern {
        Pattern::parse(p, "class").unwrap()
    }

    #[test]
    fn internal_names_match_like_dotted_ones() {
        for (p, name) in [
            ("java.util.*", "java/util/HashMap"),
            ("java.**", "java/util/concurrent/Foo"),
            ("/java\\.util\\..*/", "java/util/HashMap"),
            ("java.util.Hash?ap", "java/util/HashMap"),
        ] {
            assert!(pat(p).matches_internal(name), "{p} {name}");
            assert!(pat(p).matches(&name.replace('/', ".")), "{p} {name}");
        }
        assert!(!pat("java.util.*").matches_internal("java/util/concurrent/Foo"));
        assert!(!pat("java.util?HashMap").matches_internal("java/util/HashMap"));
    }

    #[test]
    fn class_patterns() {
        // * is one package level, ** any depth, ? one character
        assert!(pat("java.util.*").matches("java.util.HashMap"));
        assert!(!pat("java.util.*").matches("java.util.concurrent.Foo"));
        assert!(pat("java.util.**").matches("java.util.concurrent.Foo"));
        assert!(pat("**.Foo").matches("a.b.c.Foo"));
        assert!(!pat("**.Foo").matches("a.b.c.XFoo"));
        assert!(pat("a.*$Inner").matches("a.Outer$Inner"));
        assert!(pat("a.B?").matches("a.Bc"));
        assert!(!pat("a.B?").matches("a.B."));
        assert!(pat("a.B").matches("a.B"));
        assert!(!pat("a.B").matches("a.BC"));
        // regular expressions match the whole name
        assert!(pat("/com\\.acme\\..*Service/").matches("com.acme.x.UserService"));
        assert!(!pat("/acme/").matches("com.acme.X"));
    }

    #[test]
    fn class_package_of_a_pattern() {
        let of = |class: &str| {
            let r = crate::Rules::parse(
                &format!("[[rule]]\nname = \"r\"\nclass = {class:?}\ncount = true\n"),
                "t.toml",
            )
            .unwrap();
            r.trace_rules()[0].class_package()
        };
        assert_eq!(of("javax.swing.JFrame").as_deref(), Some("javax.swing"));
        assert_eq!(of("javax.swing.J*").as_deref(), Some("javax.swing"));
        assert_eq!(of("javax.swing.**").as_deref(), Some("javax.swing"));
        assert_eq!(of("java.util.Map$Entry").as_deref(), Some("java.util"));
        assert_eq!(of("javax.*.JFrame").as_deref(), Some("javax"));
        assert_eq!(of("Main"), None);
        assert_eq!(of("**.Main"), None);
        assert_eq!(of("/javax\\.swing\\..*/"), None);
    }

    #[test]
    fn runtime_packages_are_never_selected() {
        let r = crate::Rules::parse(
            "[[rule]]\nname = \"all\"\nclass = \"**\"\ncount = true\n",
            "t.toml",
        )
        .unwrap();
        let t = r.trace_rules();
        assert!(selects_class(t, "java/util/HashMap"));
        assert!(selects_class(t, "com/acme/X"));
        for never in [
            "java/lang/String",
            "java/lang/ThreadLocal",
            "java/lang/BciTrace",
            "java/io/FileOutputStream",
            "java/util/concurrent/ConcurrentHashMap",
            "jdk/internal/misc/Unsafe",
            "sun/nio/cs/UTF_8",
            "bci/runtime/Probes",
        ] {
            assert!(!selects_class(t, never), "{never}");
        }
        // java.lang's subpackages too (ThreadLocal's map reads java.lang.ref.Reference)
        assert!(!selects_class(t, "java/lang/ref/Reference"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500us"), Some(500_000));
        assert_eq!(parse_duration("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration("10ns"), Some(10));
        assert_eq!(parse_duration("1.5ms"), None);
        assert_eq!(parse_duration("ms"), None);
        assert_eq!(parse_duration("5m"), None);
        assert_eq!(duration_ns("9223372036s"), Ok(9_223_372_036_000_000_000));
        assert_eq!(
            duration_ns("9223372037s"),
            Err(DurationError::TooLarge {
                max: 9_223_372_036,
                unit: "s"
            })
        );
        assert_eq!(duration_ns("9223372036854775807ns"), Ok(i64::MAX));
        assert_eq!(
            duration_ns("9223372036854775808ns"),
            Err(DurationError::TooLarge {
                max: i64::MAX,
                unit: "ns"
            })
        );
        assert_eq!(duration_ns("-5ms"), Err(DurationError::Malformed));
    }

    #[test]
    fn annotations_are_read_from_class_bytes() {
        // a class with RuntimeVisibleAnnotations is built by javac in the agent's tests; here
        // the element skipper is checked on a hand-made attribute body:
        // 1 annotation, type #0, 2 pairs: (name, int const) (name, array of 2 enum consts)
        let d = [
            0, 1, 0, 0, 0, 2, 0, 0, b'I', 0, 0, 0, 0, b'[', 0, 2, b'e', 0, 0, 0, 0, b'e', 0, 0, 0,
            0,
        ];
        assert_eq!(skip_annotation(&d, 2), Some(d.len()));
        assert_eq!(skip_annotation(&d[..10], 2), None);
    }

    #[test]
    fn class_patterns_that_reach_never_traced_packages() {
        let rule = |class: &str| {
            let src = format!("[[rule]]\nname = \"r\"\nclass = \"{class}\"\ncount = true\n");
            crate::Rules::parse(&src, "t.toml").unwrap().trace_rules()[0].clone()
        };
        // only java.lang: never traced (an error for `bci rules check`)
        for c in [
            "java.lang.String",
            "java.lang.StringBuilder",
            "java.lang.*",
            "java.lang.reflect.**",
            "sun.misc.Unsafe",
        ] {
            assert!(rule(c).never_traced(&[]).is_some(), "{c}");
        }
        // some of them: a warning, naming the packages
        assert_eq!(rule("**.String").may_reach_never().len(), 6);
        assert_eq!(
            rule("java.**").may_reach_never(),
            ["java.lang", "java.util.concurrent", "java.io"]
        );
        assert_eq!(
            rule("java.*.String").may_reach_never(),
            ["java.lang", "java.io"]
        );
        assert_eq!(rule("java.?ang.*").may_reach_never(), ["java.lang"]);
        // none
        for c in [
            "com.acme.**",
            "*Service",
            "java.util.*",
            "java.util.HashMap",
            "java.*",
            "/java[.]lang[.].*/",
        ] {
            assert!(rule(c).never_traced(&[]).is_none(), "{c}");
            assert_eq!(rule(c).may_reach_never(), Vec::<String>::new(), "{c}");
        }
    }
}
