//! `bci rules check` and `bci rules explain`: the agent's parser, and what each tracing rule
//! matches in given jars/directories.

use bci_rewriter::trace::{self, Location, Site};
use bci_rewriter::Rules;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Parses `path` as the agent does (the same parser and the same runtime-class check).
pub fn load(path: &Path) -> Result<Rules, String> {
    let r = parse(path)?;
    r.check_agent_runtime().map_err(|e| {
        format!(
            "{e}; `bci rules check --offline {}` checks a file for bci instrument --rules",
            path.display()
        )
    })?;
    Ok(r)
}

/// Parses `path` as `bci instrument --rules` does: any `[runtime] class` (the agent provides
/// only its own two), tracing rules refused ([`refuse_trace_rules`]).
pub fn load_offline(path: &Path) -> Result<Rules, String> {
    let r = parse(path)?;
    refuse_trace_rules(path, &r)?;
    Ok(r)
}

/// What `bci rules check` says of tracing rules the agent can never or not always apply:
/// (errors, warnings), each `file:line:col: message`. An error for a rule whose class pattern
/// can only match classes tracing never instruments (java.lang, …: [`trace::NEVER`]) or that
/// names only `<clinit>`; a warning for one whose class pattern can match some of those
/// classes too (they are left alone). The agent runs such a file (its summary says why the
/// rule recorded nothing).
pub fn reach(path: &Path, rules: &Rules) -> (Vec<String>, Vec<String>) {
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    for r in rules.trace_rules() {
        if let Some(why) = r.never_traced(&[]) {
            let (line, col) = if why.starts_with("method") {
                r.method_pos
            } else {
                r.class_pos
            };
            errors.push(format!(
                "{}:{line}:{col}: rule {:?} can never match: the agent never traces it: {why}",
                path.display(),
                r.name
            ));
            continue;
        }
        let intrinsics = r.intrinsics();
        if !intrinsics.is_empty() {
            let (line, col) = r.method_pos;
            warnings.push(format!(
                "{}:{line}:{col}: warning: rule {:?}: it can match HotSpot intrinsics, which are \
                 not traced (once compiled, their body does not run): {}{}",
                path.display(),
                r.name,
                intrinsics[..intrinsics.len().min(3)].join(", "),
                if intrinsics.len() > 3 {
                    format!(", … ({} in all)", intrinsics.len())
                } else {
                    String::new()
                },
            ));
        }
        let packages = r.may_reach_never();
        if !packages.is_empty() {
            warnings.push(format!(
                "{}:{}:{}: warning: rule {:?}: its class pattern can match classes of {}, which \
                 tracing rules never instrument (the tracing runtime uses them): those are left \
                 alone",
                path.display(),
                r.class_pos.0,
                r.class_pos.1,
                r.name,
                packages.join(", ")
            ));
        }
    }
    (errors, warnings)
}

fn parse(path: &Path) -> Result<Rules, String> {
    let src = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Rules::parse_bytes(&src, &path.display().to_string()).map_err(|e| e.to_string())
}

/// `bci instrument` applies probe rules only: the first tracing rule of `rules` (read from
/// `path`) is an error at its position.
pub fn refuse_trace_rules(path: &Path, rules: &Rules) -> Result<(), String> {
    match rules.trace_rules().first() {
        Some(t) => Err(format!(
            "{}:{}:{}: rule {:?}: tracing rules (count/time/trace) run under the agent (rules=); \
             bci instrument applies probe rules only",
            path.display(),
            t.pos.0,
            t.pos.1,
            t.name
        )),
        None => Ok(()),
    }
}

/// The explanation (stdout) and the errors (`file:line:col: message`, one per line) of
/// `bci rules explain`: per tracing rule the methods and locations it matches in `classpath`.
pub fn explain(path: &Path, classpath: &[PathBuf]) -> Result<(String, Vec<String>), String> {
    let rules = load(path)?;
    let tr = rules.trace_rules();
    // each site with the release N of its class's `META-INF/versions/N/` entry
    let mut sites: Vec<(Site, Option<u32>)> = Vec::new();
    // methods the rules match that tracing leaves alone (native, abstract, <clinit>)
    let mut untraced: Vec<trace::Untraced> = Vec::new();
    let mut classes = 0usize;
    // every class's dotted name, for the hint to a class pattern that matches none
    let mut names: Vec<String> = Vec::new();
    // classes a multi-release jar has in `META-INF/versions/N/` too: their base entry is labelled
    let mut versioned: HashSet<String> = HashSet::new();
    for entry in classpath {
        for (name, bytes) in crate::io::read_class_path_entry(entry)? {
            if !name.ends_with(".class") || name.ends_with("module-info.class") {
                continue;
            }
            classes += 1;
            let release = crate::io::release_of(&name);
            let base = match release {
                Some(n) => &name[format!("META-INF/versions/{n}/").len()..],
                None => &name[..],
            };
            names.push(base.trim_end_matches(".class").replace('/', "."));
            if release.is_some() {
                versioned.extend(names.last().cloned());
            }
            match trace::explain(&bytes, tr).and_then(|s| {
                untraced.extend(trace::untraceable_matches(&bytes, tr)?);
                Ok(s)
            }) {
                Ok(s) => sites.extend(s.into_iter().map(|s| (s, release))),
                Err(e) => {
                    return Err(format!("{}: {name}: {e}", entry.display()));
                }
            }
        }
    }
    let mut out = String::new();
    let mut errors = Vec::new();
    // the JDK whose modules the hints for JDK classes name (looked up once, when needed)
    let jdk = std::cell::OnceCell::new();
    out.push_str(&format!(
        "{}: {} tracing rules, {classes} classes in the classpath\n",
        path.display(),
        tr.len()
    ));
    if rules.has_probe_rules() {
        out.push_str("(probe rules, with `probes`, are applied as they are and not explained)\n");
    }
    for (k, r) in tr.iter().enumerate() {
        // each site with its method named, and labelled with its entry in a multi-release jar
        let mine: Vec<(&Site, String)> = sites
            .iter()
            .filter(|(s, _)| s.rule == k)
            .map(|(s, release)| {
                let label = match release {
                    Some(n) => format!(" (META-INF/versions/{n})"),
                    None if versioned.contains(&s.class) => " (base)".to_string(),
                    None => String::new(),
                };
                (s, format!("{}.{}{}{label}", s.class, s.method, s.desc))
            })
            .collect();
        out.push_str(&format!("rule {:?} ({}):", r.name, r.describe()));
        if mine.is_empty() {
            out.push_str(" matches nothing");
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let any_class = names.iter().any(|n| r.name_matches(n));
            let mut left_alone: Vec<String> = untraced
                .iter()
                .filter(|u| u.rule == k)
                .map(trace::Untraced::describe)
                .collect();
            left_alone.sort();
            left_alone.dedup();
            if let Some(why) = r.never_traced(&names) {
                // what the agent never instruments: matching it in a class path would not help
                out.push_str(&format!(": the agent never traces it: {why}"));
            } else if !left_alone.is_empty() {
                // it matches methods, none of which tracing can instrument
                out.push_str(&format!(
                    ": it matches only methods tracing leaves alone: {}",
                    left_alone.join("; ")
                ));
            } else if any_class {
                // the classes are there; the methods or the other conditions are not
            } else if let Some(h) = r.nested_class_hint(&names) {
                // a nested class written as in the source (a.Main.Inner for a.Main$Inner)
                out.push_str(&format!(
                    ": class = {h:?} would match (a nested class is named Outer$Inner, not \
                     Outer.Inner)"
                ));
            } else if let Some(h) = jdk_hint(r, &names, jdk.get_or_init(|| jdk_home(classpath))) {
                // a JDK class, not in the class path given
                out.push_str(&h);
            }
            out.push('\n');
            continue;
        }
        let found = mine.iter().filter(|(s, _)| !s.location.is_empty()).count();
        let methods = {
            let mut m: Vec<&str> = mine.iter().map(|(_, who)| who.as_str()).collect();
            m.dedup();
            m.len()
        };
        out.push_str(&format!(" {methods} method(s), {found} location(s)\n"));
        for (s, who) in &mine {
            let loc = if s.location.is_empty() {
                "(no such location)".to_string()
            } else {
                s.location.clone()
            };
            out.push_str(&format!("  {who}  {loc}\n"));
        }
        // the HotSpot intrinsics it matched besides: left alone
        let mut left: Vec<String> = untraced
            .iter()
            .filter(|u| u.rule == k && u.why == trace::INTRINSIC_WHY)
            .map(|u| {
                format!(
                    "  {}.{}{}  not traced: {}\n",
                    u.class, u.method, u.desc, u.why
                )
            })
            .collect();
        left.dedup();
        out.extend(left);
        if found == 0 {
            // the classes are known: a line or call that exists in no matched method
            let (line, col) = r.location_pos;
            let (mut what, near) = match &r.location {
                Location::Line(n) => (format!("line {n} is in no method it matches"), Some(*n)),
                Location::Call { .. } => ("no method it matches makes that call".to_string(), None),
                Location::Method { .. } => continue,
            };
            // an owner written by its simple name (StringBuilder.append)
            let mut near_calls: Vec<&str> = mine
                .iter()
                .flat_map(|(s, _)| s.near_calls.iter().map(String::as_str))
                .collect();
            near_calls.sort_unstable();
            near_calls.dedup();
            if !near_calls.is_empty() {
                let shown: Vec<String> = near_calls
                    .iter()
                    .take(3)
                    .map(|c| format!("{c:?}"))
                    .collect();
                what.push_str(&format!(
                    "; the owner is a whole class name: call = {} would match{}",
                    shown.join(" or "),
                    if near_calls.len() > 3 {
                        " (and more)"
                    } else {
                        ""
                    }
                ));
            }
            errors.push(format!(
                "{}:{line}:{col}: rule {:?}: {what} ({})",
                path.display(),
                r.name,
                candidates(&mine, near)
            ));
        }
    }
    Ok((out, errors))
}

/// The JDK the hints for JDK classes name: the one of a `.jmod` or `lib/modules` on the class
/// path, else the running one (`$JAVA_HOME`, Debian's JDK 17, `java` on PATH); its home.
fn jdk_home(classpath: &[PathBuf]) -> Option<PathBuf> {
    classpath
        .iter()
        .filter_map(|e| {
            let jmod = e.extension().is_some_and(|x| x == "jmod");
            let image = e.file_name().is_some_and(|n| n == "modules")
                && e.parent()
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "lib");
            (jmod || image).then(|| e.parent()?.parent().map(Path::to_path_buf))?
        })
        .find(|h| h.join("lib/modules").is_file())
        .or_else(bci_verify::hierarchy::find_java_home)
}

/// For a rule whose class no class of the class path (`names`) matches: the module of the JDK
/// at `home` that holds the package its pattern names, to add to `--classpath` (its `.jmod`,
/// else the JDK's `lib/modules`); when no module has it, for a `java.*`/`javax.*`/`jdk.*`
/// pattern a neutral hint. None otherwise.
fn jdk_hint(r: &trace::TraceRule, names: &[&str], home: &Option<PathBuf>) -> Option<String> {
    let pkg = r.class_package();
    let module = pkg
        .as_deref()
        .zip(home.as_deref())
        .and_then(|(p, h)| crate::io::jimage_module_of(&h.join("lib/modules"), p));
    const NO_CLASS: &str = ": no class in the classpath has that name";
    if let (Some(m), Some(p), Some(h)) = (&module, &pkg, home) {
        // the package is on the class path already: the class name is what does not match
        if names
            .iter()
            .any(|n| n.rsplit_once('.').is_some_and(|(q, _)| q == p))
        {
            return Some(format!(
                "{NO_CLASS} (its package {p}, of the JDK's module {m}, is there)"
            ));
        }
        let jmod = h.join("jmods").join(format!("{m}.jmod"));
        let add = if jmod.is_file() {
            jmod.display().to_string()
        } else {
            format!(
                "{} (it holds every module; this JDK has no jmods)",
                h.join("lib/modules").display()
            )
        };
        return Some(format!(
            "{NO_CLASS}; package {p} is in the JDK's module {m}: add {add} to --classpath"
        ));
    }
    if !r.targets_jdk() {
        return None;
    }
    let none_has = match (&pkg, home) {
        (Some(p), Some(h)) => format!(" (no module of the JDK at {} has package {p})", h.display()),
        _ => String::new(),
    };
    Some(format!(
        "{NO_CLASS}{none_has}; for a JDK class add the module that holds it to --classpath \
         ($JAVA_HOME/jmods/<module>.jmod, or $JAVA_HOME/lib/modules, which holds every module)"
    ))
}

/// At most this many methods are named in an error about a `line` or `call` no matched method
/// has (a rule matching every method of a big class named them all, on one line).
const CANDIDATES: usize = 5;

/// The matched methods an error about a missing `line` (`near`) or `call` names, with their
/// source lines: for a line the nearest first; at most [`CANDIDATES`], and how many more.
fn candidates<'a>(mine: &'a [(&'a Site, String)], near: Option<u32>) -> String {
    let mut v: Vec<&(&Site, String)> = mine.iter().collect();
    if let Some(n) = near {
        // the method's side of the line (around it: the line has no code; after; before; no
        // line numbers) and how many lines away it is
        let place = |(s, _): &(&Site, String)| match s.lines {
            Some((_, b)) if n > u32::from(b) => (2, n - u32::from(b)),
            Some((a, _)) if n < u32::from(a) => (1, u32::from(a) - n),
            Some(_) => (0, 0),
            None => (3, 0),
        };
        v.sort_by_key(|s| place(s));
        // the nearest on each side first, then the next nearest on each side, ...
        let mut ranked: Vec<(bool, usize, u32, &(&Site, String))> = Vec::with_capacity(v.len());
        for s in v {
            let (side, dist) = place(s);
            let rank = match ranked.last() {
                Some(&(_, r, _, p)) if place(p).0 == side => r + 1,
                _ => 0,
            };
            ranked.push((side == 3, rank, dist, s));
        }
        ranked.sort_by_key(|&(none, rank, dist, _)| (none, rank, dist));
        v = ranked.into_iter().map(|r| r.3).collect();
    }
    let spans: Vec<String> = v
        .iter()
        .take(CANDIDATES)
        .map(|(s, who)| match s.lines {
            Some((a, b)) => format!("{who} lines {a}-{b}"),
            None => format!("{who} (no line numbers)"),
        })
        .collect();
    if v.len() <= CANDIDATES {
        return spans.join(", ");
    }
    format!(
        "{}{}, and {} more methods it matches",
        if near.is_some() { "nearest: " } else { "" },
        spans.join(", "),
        v.len() - CANDIDATES
    )
}
