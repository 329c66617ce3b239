//! Glob patterns for class and method names: `*` matches any run of characters (dots and
//! slashes included), `?` one character. Class patterns are written with dots and matched
//! against internal names (slashes), converted once at parse time.

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
    pub fn is_match_all(&self) -> bool {
        self.pat == b"*"
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
}
