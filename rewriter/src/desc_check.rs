//! Validation of a rule's method-descriptor pattern (`descriptor =` of tracing rules,
//! `descriptors = [...]` of probe rules): JVMS 4.3.3 method descriptors, with the wildcards
//! the rules document (`*` any run of characters, `?` one character). A pattern that no
//! method descriptor can match (`(I`, `(Q)V`, Java's `(int)int`) is refused at parse time
//! with the position of the first character that cannot be part of one and what was
//! expected there.
//!
//! Method descriptors are a regular language: the states below are those of its automaton,
//! and the pattern is run over it (a wildcard stands for whatever the automaton accepts), so
//! a pattern passes if and only if some descriptor matches it.

/// States of the method-descriptor automaton.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum S {
    /// before `(`
    Start,
    /// a parameter type or `)`
    Param,
    /// after `[` in the parameters
    ParamArray,
    /// a class name's first character (or a segment's, after `/`), in the parameters
    ParamClass,
    /// inside a class name segment, in the parameters
    ParamClassMore,
    /// after `)`: the return type or `V`
    Ret,
    RetArray,
    RetClass,
    RetClassMore,
    /// a whole descriptor
    End,
}

const BASE: &[u8] = b"BCDFIJSZ";

/// A character of a class name (JVMS 4.2.1: not `.`, `;`, `[`, `/`; `<`, `>` neither, as
/// javac never makes them).
fn name_char(c: char) -> bool {
    !matches!(c, '.' | ';' | '[' | '/' | '<' | '>') && !c.is_control()
}

fn step(s: S, c: char) -> Option<S> {
    use S::*;
    let base = c.is_ascii() && BASE.contains(&(c as u8));
    Some(match (s, c) {
        (Start, '(') => Param,
        (Param, ')') => Ret,
        (Param | ParamArray, '[') => ParamArray,
        (Param | ParamArray, 'L') => ParamClass,
        (Param | ParamArray, _) if base => Param,
        (ParamClass, c) if name_char(c) => ParamClassMore,
        (ParamClassMore, c) if name_char(c) => ParamClassMore,
        (ParamClassMore, '/') => ParamClass,
        (ParamClassMore, ';') => Param,
        (Ret, 'V') => End,
        (Ret | RetArray, '[') => RetArray,
        (Ret | RetArray, 'L') => RetClass,
        (Ret | RetArray, _) if base => End,
        (RetClass, c) if name_char(c) => RetClassMore,
        (RetClassMore, c) if name_char(c) => RetClassMore,
        (RetClassMore, '/') => RetClass,
        (RetClassMore, ';') => End,
        _ => return None,
    })
}

/// The states one character (any but `/` when `slash` is false) leads to from `s`: a
/// name character stands for every other.
fn any_step(s: S, slash: bool) -> Vec<S> {
    let mut out: Vec<S> = "()[LV;/BCDFIJSZx"
        .chars()
        .filter(|&c| slash || c != '/')
        .filter_map(|c| step(s, c))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What state `s` expects next, for an error.
fn expected(s: S) -> &'static str {
    match s {
        S::Start => "'(' (a method descriptor starts with its parameter types in parentheses, e.g. \"(I)V\")",
        S::Param => "a parameter type (B C D F I J S Z, L<class>; or [<type>) or ')'",
        S::ParamArray | S::RetArray => "an array's element type (B C D F I J S Z, L<class>; or [<type>)",
        S::ParamClass | S::RetClass => "a class name (internal form: java/lang/String)",
        S::ParamClassMore | S::RetClassMore => "more of the class name, '/' or the ';' that ends it",
        S::Ret => "the return type (V, B C D F I J S Z, L<class>; or [<type>)",
        S::End => "nothing (the descriptor is complete)",
    }
}

/// Wildcards of a pattern kind.
#[derive(Clone, Copy)]
pub(crate) struct Wild {
    /// `?` matches `/` too (probe rules' globs) or not (tracing rules')
    pub question_slash: bool,
    /// `.` in the pattern matches `/` (tracing rules': dotted class names are accepted)
    pub dot_is_slash: bool,
}

/// Checks the descriptor glob `p`: Err((byte offset of the offending character or the
/// pattern's length, message)).
pub(crate) fn check(p: &str, w: Wild) -> Result<(), (usize, String)> {
    let mut set = vec![S::Start];
    let closure = |set: &[S]| {
        let mut all: Vec<S> = set.to_vec();
        let mut k = 0;
        while k < all.len() {
            for n in any_step(all[k], true) {
                if !all.contains(&n) {
                    all.push(n);
                }
            }
            k += 1;
        }
        all.sort();
        all
    };
    // Java's spelling of types: a hint in the error
    let java = [
        "int", "void", "boolean", "long", "double", "float", "char", "byte", "short", ",",
    ]
    .iter()
    .any(|w| p.contains(w));
    for (i, c) in p.char_indices() {
        let next: Vec<S> = match c {
            '*' => closure(&set),
            '?' => {
                let mut v: Vec<S> = set
                    .iter()
                    .flat_map(|&s| any_step(s, w.question_slash))
                    .collect();
                v.sort();
                v.dedup();
                v
            }
            '.' if w.dot_is_slash => set.iter().filter_map(|&s| step(s, '/')).collect(),
            c => set.iter().filter_map(|&s| step(s, c)).collect(),
        };
        if next.is_empty() {
            let mut exp: Vec<&str> = set.iter().map(|&s| expected(s)).collect();
            exp.dedup();
            let hint = if java {
                "; descriptors are in the JVM's syntax (JVMS 4.3.3), e.g. \"(ILjava/lang/String;)V\", not Java's \"(int, String)void\""
            } else {
                ""
            };
            return Err((
                i,
                format!(
                    "{c:?} at character {} cannot be part of a method descriptor: expected {}{hint}",
                    p[..i].chars().count() + 1,
                    exp.join(" or ")
                ),
            ));
        }
        set = next;
        set.dedup();
    }
    if !set.contains(&S::End) {
        let mut exp: Vec<&str> = set.iter().map(|&s| expected(s)).collect();
        exp.dedup();
        return Err((
            p.len(),
            format!(
                "incomplete method descriptor: expected {} after it (a descriptor is \"(<parameter types>)<return type>\", e.g. \"(I)V\")",
                exp.join(" or ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    const T: Wild = Wild {
        question_slash: false,
        dot_is_slash: true,
    };

    #[test]
    fn valid_descriptors_and_globs_pass() {
        for p in [
            "()V",
            "(I)I",
            "(ILjava/lang/String;[[J)[Ljava/lang/Object;",
            "(Ljava.lang.String;)V",
            "*",
            "(I)*",
            "()*",
            "(*)V",
            "(*",
            "*;)V",
            "(?)V",
            "*String;)*",
        ] {
            assert_eq!(check(p, T), Ok(()), "{p}");
        }
    }

    #[test]
    fn invalid_descriptors_say_where_and_what() {
        let e = |p: &str| check(p, T).unwrap_err();
        assert_eq!(e("(I").0, 2);
        assert!(
            e("(I")
                .1
                .starts_with("incomplete method descriptor: expected a parameter type"),
            "{:?}",
            e("(I")
        );
        assert_eq!(e("(Q)V").0, 1);
        assert!(e("(Q)V").1.starts_with(
            "'Q' at character 2 cannot be part of a method descriptor: expected a parameter type"
        ));
        assert_eq!(e("(int)int").0, 1);
        assert!(
            e("(int)int").1.contains("not Java's"),
            "{:?}",
            e("(int)int")
        );
        assert_eq!(e("(L;)V").0, 2);
        assert_eq!(e("()VV").0, 3);
        assert_eq!(e("()").0, 2);
        assert_eq!(e("(I)*X").0, 5);
        // probe rules' globs: '.' is itself, never in a descriptor
        let probe = Wild {
            question_slash: true,
            dot_is_slash: false,
        };
        assert!(check("(Ljava.lang.String;)V", probe).is_err());
        assert!(check("(Ljava/lang/String;)V", probe).is_ok());
    }
}
