//! Glob patterns for class and method names: `*` matches any run of characters (dots and
//! slashes included), `?` one character. Class patterns are written with dots and matched
//! against internal names (slashes), converted once at parse time. [`Glob::check`] refuses
//! patterns that would silently match nothing (empty, or using glob syntax we do not have).

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    pat: Vec<u8>,
}

impl Glob {
    pub fn new(p: &str) -> Glob {
        Glob {
            pat: p.as_bytes().to_vec(),
        }
    }
    /// A class pattern in dotted form, matched against internal names.
    pub fn class(p: &str) -> Glob {
        Glob {
            pat: p.replace('.', "/").into_bytes(),
        }
    }
    /// A class pattern given by a user (`--include`, `include=`, a probe rule's `classes`):
    /// refused when it is empty, uses syntax this matcher does not have (`[...]`, `{a,b}`),
    /// or has something no class name has (`;`, a control character, an empty package level
    /// such as `a..B`), since it would otherwise silently match nothing.
    pub fn check(p: &str) -> Result<(), String> {
        if p.is_empty() {
            return Err("an empty pattern matches no class name".into());
        }
        if let Some(c) = p.chars().find(|c| matches!(c, '[' | ']' | '{' | '}' | ';')) {
            return Err(format!(
                "'{c}' is not supported (only * and ? are wildcards; no class name contains it)"
            ));
        }
        if p.starts_with(char::is_whitespace) || p.ends_with(char::is_whitespace) {
            return Err("a space at its start or end: no class name has one".into());
        }
        if let Some(c) = p.chars().find(|c| c.is_control()) {
            return Err(format!(
                "control character U+{:04X}: no class name has one",
                c as u32
            ));
        }
        match empty_package_level(p) {
            Some(why) => Err(why.into()),
            None => Ok(()),
        }
    }
    /// A method-name pattern given by a user (probe rules' `methods`/`exclude_methods`, a
    /// tracing rule's `exclude_method` glob): refused when it is empty, has a control
    /// character, syntax this matcher does not have (`]`, `{a,b}`), or a character no method
    /// name has (JVMS 4.2.2: '.', ';', '[', '/', and '<' and '>' but in `<init>`/`<clinit>`).
    pub fn check_method(p: &str) -> Result<(), String> {
        if p.is_empty() {
            return Err("an empty pattern matches no method name".into());
        }
        if let Some(c) = p.chars().find(|c| c.is_control()) {
            return Err(format!(
                "control character U+{:04X}: no method name has one",
                c as u32
            ));
        }
        if let Some(c) = p.chars().find(|c| matches!(c, ']' | '{' | '}')) {
            return Err(format!(
                "'{c}' is not supported (only * and ? are wildcards; no method name contains it)"
            ));
        }
        let special = p == "<init>" || p == "<clinit>";
        match p
            .chars()
            .find(|&c| matches!(c, '.' | ';' | '[' | '/') || (!special && matches!(c, '<' | '>')))
        {
            Some(c) => Err(format!(
                "'{c}': no method name has one (JVMS 4.2.2; '<' and '>' only in <init> and \
                 <clinit>)"
            )),
            None => Ok(()),
        }
    }
    /// Whether the pattern may match some name that starts with `prefix` (conservative: its
    /// literal part before the first wildcard and `prefix` agree as far as both go).
    pub fn may_match_under(&self, prefix: &str) -> bool {
        let lit = &self.pat[..self
            .pat
            .iter()
            .position(|&c| c == b'*' || c == b'?')
            .unwrap_or(self.pat.len())];
        let prefix = prefix.as_bytes();
        prefix.starts_with(lit) || lit.starts_with(prefix)
    }
    pub fn matches(&self, s: &str) -> bool {
        if self.pat == b"*" {
            return true;
        }
        let (p, s) = (&self.pat[..], s.as_bytes());
        let (mut pi, mut si) = (0, 0);
        let (mut star, mut mark) = (usize::MAX, 0);
        while si < s.len() {
            if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
                pi += 1;
                si += 1;
            } else if pi < p.len() && p[pi] == b'*' {
                star = pi;
                mark = si;
                pi += 1;
            } else if star != usize::MAX {
                pi = star + 1;
                mark += 1;
                si = mark;
            } else {
                return false;
            }
        }
        while pi < p.len() && p[pi] == b'*' {
            pi += 1;
        }
        pi == p.len()
    }
}

/// Why a class-name glob can match no class, if it has an empty package level (`a..B`, `.a`,
/// `a.`): [`Glob::check`], and tracing rules' class patterns.
pub(crate) fn empty_package_level(p: &str) -> Option<&'static str> {
    p.split(['.', '/']).any(str::is_empty).then_some(
        "an empty package level ('..', or '.' at its start or end): a class pattern is a dotted \
         name or glob, e.g. \"com.acme.*\"",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn globs() {
        assert!(Glob::class("java.util.*").matches("java/util/HashMap"));
        assert!(Glob::class("java.util.*").matches("java/util/concurrent/Foo"));
        assert!(!Glob::class("java.util.*").matches("java/utilx"));
        assert!(Glob::class("*").matches(""));
        assert!(Glob::new("get*").matches("getX"));
        assert!(!Glob::new("get*").matches("xget"));
        assert!(Glob::new("a?c").matches("abc"));
        assert!(Glob::new("*Test*Case").matches("MyTestFooCase"));
        assert!(!Glob::new("*Test*Case").matches("MyTestFooCases"));
    }
    #[test]
    fn may_match_under_a_prefix() {
        let under = |p: &str| Glob::class(p).may_match_under("java/");
        for yes in [
            "java.util.*",
            "*Test",
            "j*",
            "?ava.lang.Thread",
            "java",
            "java.lang.Object",
        ] {
            assert!(under(yes), "{yes}");
        }
        for no in [
            "javax.crypto.*",
            "com.*",
            "jdkfoo.*",
            "Hello",
            "org.x.java.*",
        ] {
            assert!(!under(no), "{no}");
        }
    }
    #[test]
    fn check_refuses_patterns_that_match_nothing() {
        for bad in [
            "",
            "[",
            "com.[ab].*",
            "com.{a,b}.*",
            "a;b",
            "com..acme.*",
            ".Foo",
            "com.acme.",
            "com\u{1}.*",
            "a\tb",
            " com.acme.*",
            "com.acme.* ",
        ] {
            assert!(Glob::check(bad).is_err(), "{bad:?}");
        }
        for good in ["*", "java.util.*", "a?c", "Outer$Inner", "bci/runtime/*"] {
            assert_eq!(Glob::check(good), Ok(()), "{good:?}");
        }
    }
}
