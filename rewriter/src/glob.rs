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
    /// A class pattern given by a user (`--include`, `include=`): refused when it is empty or
    /// uses syntax this matcher does not have (`[...]`, `{a,b}`), or a character no class
    /// name contains (`;`), since it would otherwise silently match nothing.
    pub fn check(p: &str) -> Result<(), String> {
        if p.is_empty() {
            return Err("empty pattern matches no class".into());
        }
        if let Some(c) = p.chars().find(|c| matches!(c, '[' | ']' | '{' | '}' | ';')) {
            return Err(format!(
                "'{c}' is not supported (only * and ? are wildcards; no class name contains it)"
            ));
        }
        Ok(())
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
        for bad in ["", "[", "com.[ab].*", "com.{a,b}.*", "a;b"] {
            assert!(Glob::check(bad).is_err(), "{bad:?}");
        }
        for good in ["*", "java.util.*", "a?c", "Outer$Inner", "bci/runtime/*"] {
            assert_eq!(Glob::check(good), Ok(()), "{good:?}");
        }
    }
}
