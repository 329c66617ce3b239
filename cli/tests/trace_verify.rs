//! Classes rewritten by tracing rules pass our own verifier (bci-verify) and our full check;
//! HotSpot -Xverify:all runs them in agent/tests/tracing.rs.
use bci_rewriter::Rules;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn javac() -> PathBuf {
    let p = PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64/bin/javac");
    match std::env::var("JAVA_HOME") {
        Ok(h) if Path::new(&h).join("bin/javac").exists() => Path::new(&h).join("bin/javac"),
        _ if p.exists() => p,
        _ => PathBuf::from("javac"),
    }
}

#[test]
fn traced_classes_pass_our_verifier() {
    let out = repo().join("target/test-out/trace-verify");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let o = Command::new(javac())
        .arg("-g")
        .arg("-d")
        .arg(&out)
        .arg(repo().join("test-classes/trace/TraceBasics.java"))
        .arg(repo().join("test-classes/trace/TraceMatch.java"))
        .arg(repo().join("test-classes/trace/TraceCtor.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // constructors with statements before super()/this() (JEP 513), when JDK 25 is installed
    let jdk25 = Path::new("/usr/lib/jvm/temurin-25-jdk-amd64/bin/javac");
    if jdk25.exists() {
        let o = Command::new(jdk25)
            .args(["--release", "25", "-g", "-d"])
            .arg(&out)
            .arg(repo().join("test-classes/trace/jdk25/TraceFlexCtor.java"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let hierarchy =
        bci_verify::ClassPath::new(std::slice::from_ref(&out), true).expect("class path");
    let mut rewritten = 0;
    for rules in ["trace-basics.toml", "trace-match.toml", "trace-ctor.toml"] {
        let p = repo().join("test-classes/trace").join(rules);
        let r = Rules::parse(&std::fs::read_to_string(&p).unwrap(), rules).unwrap();
        let mut site = 0;
        for e in std::fs::read_dir(&out).unwrap() {
            let f = e.unwrap().path();
            if f.extension().is_none_or(|x| x != "class") {
                continue;
            }
            let bytes = std::fs::read(&f).unwrap();
            let mut next = |_: &bci_rewriter::trace::TraceRule| {
                site += 1;
                site - 1
            };
            let (b, left) =
                bci_rewriter::trace::instrument(&bytes, r.trace_rules(), &mut next).unwrap();
            assert!(left.is_empty(), "{}: {left:?}", f.display());
            let Some(b) = b else { continue };
            rewritten += 1;
            let cf = bci::ClassFile::parse(&b).unwrap();
            cf.check()
                .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let errors: Vec<String> = bci_verify::verify_class(&b, &hierarchy)
                .iter()
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{} ({rules}):\n{}",
                f.display(),
                errors.join("\n")
            );
        }
    }
    // TraceBasics; TraceMatch, its Square and Circle; TraceCtor$Child (and TraceFlexCtor$Child)
    assert_eq!(rewritten, 5 + jdk25.exists() as usize);
}
