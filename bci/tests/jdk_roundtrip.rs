//! Whole-corpus tests over every class of the JDK 17 image.
mod common;

use bci::{ClassFile, ClassWriter};

/// Parse + write with no edits is byte-identical for every class; every class passes the full
/// format check (all method bodies, frames, tables decode).
#[test]
fn identity_round_trip_is_byte_identical_for_every_jdk_class() {
    let dir = common::jdk_corpus();
    let files = common::class_files(&dir);
    assert!(
        files.len() > 20_000,
        "corpus has only {} classes",
        files.len()
    );
    let mut failures = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let res = ClassFile::parse(&bytes).and_then(|cf| {
            cf.check()?;
            ClassWriter::new(&cf).finish()
        });
        match res {
            Ok(out) if out == bytes => {}
            Ok(_) => failures.push(format!("{}: output differs", f.display())),
            Err(e) => failures.push(format!("{}: {e}", f.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} classes failed:\n{}",
        failures.len(),
        files.len(),
        failures[..failures.len().min(30)].join("\n")
    );
}

/// Our max_stack data flow agrees with javac's for every unedited JDK method (javac computes
/// exact values, so a lower value here would be a bug in our stack effects).
#[test]
fn max_stack_data_flow_matches_javac_on_every_jdk_method() {
    let dir = common::jdk_corpus();
    let mut methods = 0usize;
    let mut bad = Vec::new();
    for f in common::class_files(&dir) {
        let bytes = std::fs::read(&f).unwrap();
        let cf = ClassFile::parse(&bytes).unwrap();
        for (k, m) in cf.methods.iter().enumerate() {
            if cf.find_attr(&m.attributes, "Code").is_none() {
                continue;
            }
            let ed = bci::MethodEditor::new(&cf, k).unwrap();
            let max = ed.depths().unwrap().max;
            methods += 1;
            if max != ed.code().max_stack as u32 {
                bad.push(format!(
                    "{}: computed {max}, javac {}",
                    cf.method_path(m),
                    ed.code().max_stack
                ));
            }
        }
    }
    assert!(methods > 150_000);
    // javac's value is an upper bound that is exact for its own code; allow no method where we
    // compute more (would mean a wrong stack effect) and report the rest.
    let over: Vec<_> = bad
        .iter()
        .filter(|s| {
            let c: u32 = s
                .split("computed ")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let j: u32 = s.rsplit("javac ").next().unwrap().parse().unwrap();
            c > j
        })
        .collect();
    assert!(
        over.is_empty(),
        "{} methods where computed > declared:\n{:?}",
        over.len(),
        &over[..over.len().min(20)]
    );
    assert!(
        bad.len() * 1000 < methods,
        "{} of {methods} methods differ: {:?}",
        bad.len(),
        &bad[..bad.len().min(20)]
    );
}

/// The same identity round trip over the JDK 25 image (class files 69.0), when installed.
#[test]
fn identity_round_trip_of_jdk25_when_installed() {
    let Some(dir) = common::jdk25_corpus() else {
        eprintln!("SKIPPED: no JDK 25 at /usr/lib/jvm/temurin-25-jdk-amd64");
        return;
    };
    let files = common::class_files(&dir);
    assert!(files.len() > 20_000);
    let mut v69 = 0;
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let cf = ClassFile::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        cf.check()
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        v69 += (cf.major == 69) as usize;
        assert_eq!(
            ClassWriter::new(&cf).finish().unwrap(),
            bytes,
            "{}",
            f.display()
        );
    }
    assert!(v69 > 20_000, "only {v69} classes of version 69");
}

/// `ClassWriter::add_field` appends a field and changes nothing else: the output parses and
/// checks, has one more field with the given access, name and descriptor, and its methods and
/// class attributes are the original bytes. Adding an existing field is an error.
#[test]
fn add_field_appends_one_field_and_keeps_the_rest() {
    let dir = common::jdk_corpus();
    let mut done = 0;
    for rel in [
        "java.base/java/lang/Thread.class",
        "java.base/java/util/ArrayList.class",
        "java.base/java/lang/Runnable.class",
    ] {
        let f = dir.join(rel);
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let cf = ClassFile::parse(&bytes).unwrap();
        let mut w = ClassWriter::new(&cf);
        w.add_field(0x1080, "bci$log", "[I").unwrap();
        w.add_field(0x1080, "bci$t", "Ljava/lang/Object;").unwrap();
        let out = w.finish().unwrap();
        let nf = ClassFile::parse(&out).unwrap();
        nf.check().unwrap();
        assert_eq!(nf.fields.len(), cf.fields.len() + 2, "{rel}");
        for (k, (name, desc)) in [("bci$log", "[I"), ("bci$t", "Ljava/lang/Object;")]
            .into_iter()
            .enumerate()
        {
            let fld = &nf.fields[cf.fields.len() + k];
            assert_eq!(fld.access, 0x1080);
            assert_eq!(nf.member_name(fld), name);
            assert_eq!(nf.member_desc(fld), desc);
            assert!(fld.attributes.is_empty());
        }
        for (a, b) in cf.fields.iter().zip(&nf.fields) {
            assert_eq!(&bytes[a.span.clone()], &out[b.span.clone()]);
        }
        assert_eq!(cf.methods.len(), nf.methods.len());
        for (a, b) in cf.methods.iter().zip(&nf.methods) {
            assert_eq!(&bytes[a.span.clone()], &out[b.span.clone()], "{rel}");
        }
        assert_eq!(&bytes[cf.methods_end..], &out[nf.methods_end..]);
        // the same field twice is refused
        let mut w = ClassWriter::new(&nf);
        let e = w.add_field(0, "bci$log", "[I").unwrap_err();
        assert!(e.to_string().contains("exists already"), "{e}");
        done += 1;
    }
    assert_eq!(done, 3);
}
