//! The table of HotSpot intrinsic methods (`bci_rewriter::intrinsics`), made from the JDK
//! images: every method annotated `@IntrinsicCandidate` (JDK 16+) that has bytecode and whose
//! call sites name the method that runs (see `qualifies`).
//!
//! Regenerate (JDK 17 and JDK 25 images extracted under target/corpus, as the HotSpot tests
//! make them):
//! `cargo test --release -p bci-rewriter --test intrinsics_table -- --ignored generate --nocapture`
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci::class::{
    ACC_ABSTRACT, ACC_FINAL, ACC_INTERFACE, ACC_NATIVE, ACC_PRIVATE, ACC_PROTECTED, ACC_PUBLIC,
    ACC_STATIC,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

const ANNOTATION: &[u8] = b"Ljdk/internal/vm/annotation/IntrinsicCandidate;";

struct Method {
    name: String,
    desc: String,
    access: u16,
    annotated: bool,
}

struct Class {
    access: u16,
    super_name: Option<String>,
    interfaces: Vec<String>,
    methods: Vec<Method>,
    /// some class of the image names it as its superclass
    subclassed: bool,
}

/// Skips one element_value (JVMS 4.7.16.1) at `p`; returns the position after it.
fn skip_value(d: &[u8], p: usize) -> Option<usize> {
    let tag = *d.get(p)?;
    let p = p + 1;
    Some(match tag {
        b'B' | b'C' | b'D' | b'F' | b'I' | b'J' | b'S' | b'Z' | b's' | b'c' => p + 2,
        b'e' => p + 4,
        b'@' => skip_annotation(d, p)?.1,
        b'[' => {
            let n = u16::from_be_bytes([*d.get(p)?, *d.get(p + 1)?]);
            let mut q = p + 2;
            for _ in 0..n {
                q = skip_value(d, q)?;
            }
            q
        }
        _ => return None,
    })
}

/// (type index, position after) of the annotation at `p`.
fn skip_annotation(d: &[u8], p: usize) -> Option<(u16, usize)> {
    let ty = u16::from_be_bytes([*d.get(p)?, *d.get(p + 1)?]);
    let n = u16::from_be_bytes([*d.get(p + 2)?, *d.get(p + 3)?]);
    let mut q = p + 4;
    for _ in 0..n {
        q = skip_value(d, q + 2)?;
    }
    Some((ty, q))
}

fn annotated(cf: &bci::ClassFile<'_>, m: &bci::class::Member<'_>) -> bool {
    let Some((_, a)) = cf.find_attr(&m.attributes, "RuntimeVisibleAnnotations") else {
        return false;
    };
    let d = a.data;
    let n = u16::from_be_bytes([d[0], d[1]]);
    let mut p = 2;
    for _ in 0..n {
        let (ty, q) = skip_annotation(d, p).expect("annotation");
        if cf.cp.utf8_bytes(ty).is_ok_and(|t| t == ANNOTATION) {
            return true;
        }
        p = q;
    }
    false
}

fn load(dir: &Path) -> HashMap<String, Class> {
    let mut out = HashMap::new();
    for f in common::class_files(dir) {
        let bytes = std::fs::read(&f).unwrap();
        let cf = bci::ClassFile::parse(&bytes).unwrap();
        if cf.access & bci::class::ACC_MODULE != 0 {
            continue;
        }
        let name = cf.name().unwrap().into_owned();
        let c = Class {
            access: cf.access,
            super_name: cf.super_name().unwrap().map(|s| s.into_owned()),
            interfaces: cf
                .interfaces
                .iter()
                .map(|&i| cf.cp.class_name(i).unwrap().into_owned())
                .collect(),
            methods: cf
                .methods
                .iter()
                .map(|m| Method {
                    name: cf.member_name(m).into_owned(),
                    desc: cf.member_desc(m).into_owned(),
                    access: m.access,
                    annotated: annotated(&cf, m),
                })
                .collect(),
            subclassed: false,
        };
        out.insert(name, c);
    }
    let supers: Vec<String> = out.values().filter_map(|c| c.super_name.clone()).collect();
    for s in supers {
        if let Some(c) = out.get_mut(&s) {
            c.subclassed = true;
        }
    }
    out
}

/// Why an annotated method is left out of the table (None: it is in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Out {
    /// native or abstract: no bytecode, no probes to lose
    NoBytecode,
    /// an instance method that a subclass may override (neither it nor its class final,
    /// not private; constructors of non-final classes count here too): a call site's
    /// methodref does not say which method runs
    Overridable,
    /// final (or of a final class) but overrides or implements a supertype's method: a call
    /// through the supertype's methodref would run it with no site counting it
    OverridesSuper,
    /// static or final, not private, of a class that has subclasses or that code outside the
    /// JDK may subclass (a public or protected constructor): a call from a subclass may name
    /// the subclass (javac names the receiver's static type, or the calling class for an
    /// unqualified call)
    Inherited,
}

/// Whether some supertype of `class` declares a non-private, non-static `name desc`.
fn declared_above(all: &HashMap<String, Class>, class: &Class, name: &str, desc: &str) -> bool {
    let mut todo: Vec<&str> = class
        .super_name
        .iter()
        .map(String::as_str)
        .chain(class.interfaces.iter().map(String::as_str))
        .collect();
    let mut seen = BTreeSet::new();
    while let Some(c) = todo.pop() {
        if !seen.insert(c) {
            continue;
        }
        let Some(k) = all.get(c) else { continue };
        if k.methods
            .iter()
            .any(|m| m.name == name && m.desc == desc && m.access & (ACC_PRIVATE | ACC_STATIC) == 0)
        {
            return true;
        }
        todo.extend(k.super_name.iter().map(String::as_str));
        todo.extend(k.interfaces.iter().map(String::as_str));
    }
    false
}

fn qualifies(all: &HashMap<String, Class>, class: &Class, m: &Method) -> Result<(), Out> {
    if m.access & (ACC_NATIVE | ACC_ABSTRACT) != 0 {
        return Err(Out::NoBytecode);
    }
    if m.access & ACC_PRIVATE != 0
        || (m.access & ACC_STATIC != 0 && class.access & ACC_INTERFACE != 0)
    {
        return Ok(());
    }
    let instance = m.access & ACC_STATIC == 0 && m.name != "<init>";
    if instance && m.access & ACC_FINAL == 0 && class.access & ACC_FINAL == 0 {
        return Err(Out::Overridable);
    }
    if m.name == "<init>" && class.access & ACC_FINAL == 0 {
        // (constructors are not inherited; the brief's rule: of a final class)
        return Err(Out::Overridable);
    }
    if instance && declared_above(all, class, &m.name, &m.desc) {
        return Err(Out::OverridesSuper);
    }
    if m.name != "<init>" && class.access & ACC_FINAL == 0 {
        let open_ctor = class
            .methods
            .iter()
            .any(|k| k.name == "<init>" && k.access & (ACC_PUBLIC | ACC_PROTECTED) != 0);
        if open_ctor || class.subclassed {
            return Err(Out::Inherited);
        }
    }
    Ok(())
}

/// (class, name, desc) -> Ok (in the table) or why not, for every annotated method.
fn annotated_methods(dir: &Path) -> BTreeMap<(String, String, String), Result<(), Out>> {
    let all = load(dir);
    let mut out = BTreeMap::new();
    for (cname, c) in &all {
        for m in c.methods.iter().filter(|m| m.annotated) {
            out.insert(
                (cname.clone(), m.name.clone(), m.desc.clone()),
                qualifies(&all, c, m),
            );
        }
    }
    out
}

fn corpus(prefix: &str) -> Option<PathBuf> {
    let root = common::workspace().join("target/corpus");
    if prefix == "jdk17" {
        let p = root.join("jdk17");
        return p.exists().then_some(p);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{prefix}-")))
        })
        .collect();
    v.sort();
    v.pop()
}

fn summary(name: &str, m: &BTreeMap<(String, String, String), Result<(), Out>>) {
    let count = |o: Result<(), Out>| m.values().filter(|&&v| v == o).count();
    eprintln!(
        "{name}: {} annotated: {} in the table, {} without bytecode, {} overridable, {} overriding a supertype's method, {} inherited by subclasses",
        m.len(),
        count(Ok(())),
        count(Err(Out::NoBytecode)),
        count(Err(Out::Overridable)),
        count(Err(Out::OverridesSuper)),
        count(Err(Out::Inherited)),
    );
    for (k, v) in m {
        if matches!(
            v,
            Err(Out::Overridable | Out::OverridesSuper | Out::Inherited)
        ) {
            eprintln!("  left out ({v:?}): {}.{}{}", k.0, k.1, k.2);
        }
    }
}

#[test]
#[ignore = "regenerates rewriter/src/intrinsics_table.rs from the JDK images"]
fn generate() {
    let mut table: BTreeMap<(String, String, String), u8> = BTreeMap::new();
    let mut left_out = BTreeMap::new();
    for (bit, prefix) in [(1u8, "jdk17"), (2u8, "jdk25")] {
        let Some(dir) = corpus(prefix) else {
            panic!("no {prefix} corpus under target/corpus");
        };
        let m = annotated_methods(&dir);
        summary(prefix, &m);
        for (k, v) in m {
            match v {
                Ok(()) => *table.entry(k).or_default() |= bit,
                Err(Out::NoBytecode) => {}
                Err(e) => {
                    left_out.insert(k, e);
                }
            }
        }
    }
    // a method in the table for one image must not be left out for a reason in the other
    for (k, e) in &left_out {
        assert!(
            !table.contains_key(k),
            "{k:?}: in one image, {e:?} in the other"
        );
    }
    let mut s = String::new();
    s.push_str(
        "// @generated by `cargo test --release -p bci-rewriter --test intrinsics_table -- \
         --ignored generate`\n// from the JDK 17 and JDK 25 images: do not edit by hand.\n\
         // (class, name, descriptor, JDKs annotating it: 1 = 17, 2 = 25), sorted by bytes.\n\
         pub static TABLE: &[(&str, &str, &str, u8)] = &[\n",
    );
    for ((c, n, d), bits) in &table {
        s.push_str(&format!("    ({c:?}, {n:?}, {d:?}, {bits}),\n"));
    }
    s.push_str("];\n");
    let path = common::workspace().join("rewriter/src/intrinsics_table.rs");
    std::fs::write(&path, s).unwrap();
    eprintln!(
        "wrote {} entries ({} JDK 17, {} JDK 25) to {}",
        table.len(),
        table.values().filter(|&&b| b & 1 != 0).count(),
        table.values().filter(|&&b| b & 2 != 0).count(),
        path.display()
    );
}

/// Every method of the JDK 17 image that qualifies is in the committed table (marked 17), and
/// every entry marked 17 qualifies there or is not annotated in this image at all (an entry of
/// another JDK 17 update: the machine's 17.0.19 lacks 8 entries the table's image had, ML_KEM's
/// and SHA3Parallel's, and the test failed on every machine apt had updated).
#[test]
fn table_matches_the_jdk17_image() {
    let Some(dir) = corpus("jdk17") else {
        eprintln!("SKIPPED: no JDK 17 corpus at target/corpus/jdk17");
        return;
    };
    let m = annotated_methods(&dir);
    summary("jdk17", &m);
    let want: BTreeSet<(&str, &str, &str)> = m
        .iter()
        .filter(|(_, v)| v.is_ok())
        .map(|(k, _)| (k.0.as_str(), k.1.as_str(), k.2.as_str()))
        .collect();
    assert!(want.len() > 100, "only {} qualify", want.len());
    for &(c, n, d) in &want {
        assert!(
            bci_rewriter::intrinsics::is_intrinsic(c.as_bytes(), n.as_bytes(), d.as_bytes()),
            "{c}.{n}{d} is missing from the table"
        );
    }
    let marked: BTreeSet<(&str, &str, &str)> = bci_rewriter::intrinsics::TABLE
        .iter()
        .filter(|e| e.3 & 1 != 0)
        .map(|e| (e.0, e.1, e.2))
        .collect();
    // in this image but left out (overridable, …): the table is wrong for it
    let wrong: Vec<_> = marked
        .difference(&want)
        .filter(|k| m.contains_key(&(k.0.to_string(), k.1.to_string(), k.2.to_string())))
        .collect();
    assert!(
        wrong.is_empty(),
        "marked 17, not qualifying in this image: {wrong:?}"
    );
    let other_update = marked.difference(&want).count();
    if other_update > 0 {
        eprintln!("{other_update} entries marked 17 are not annotated in this JDK 17 image");
    }
}
