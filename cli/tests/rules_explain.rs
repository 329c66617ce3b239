//! `bci rules check` and `bci rules explain` on test-classes/trace: the matched methods and
//! locations, rules that match nothing, and a `line` that exists in no matched method.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bci(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bci"))
        .args(args)
        .output()
        .unwrap()
}

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

fn work(name: &str) -> PathBuf {
    let d = repo().join("target/test-out/rules-explain").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `toml` to `path` and runs `bci rules check` on it: exit 1 and stderr starting with
/// `path:` and `at` (line:col: message); returns stderr.
fn refused_by_check(path: &Path, toml: &str, at: &str) -> String {
    std::fs::write(path, toml).unwrap();
    let o = bci(&["rules", "check", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.starts_with(&format!("{}:{at}", path.display())),
        "{err}"
    );
    err
}

/// `bci rules explain RULES --classpath CP`.
fn explain(rules: &Path, cp: &Path) -> Output {
    bci(&[
        "rules",
        "explain",
        rules.to_str().unwrap(),
        "--classpath",
        cp.to_str().unwrap(),
    ])
}

fn classes(name: &str) -> PathBuf {
    let d = work(name);
    let o = Command::new(javac())
        .arg("-g")
        .arg("-d")
        .arg(&d)
        .arg(repo().join("test-classes/trace/TraceBasics.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    d
}

#[test]
fn explain_lists_methods_and_locations() {
    let cp = classes("ok");
    let rules = repo().join("test-classes/trace/trace-basics.toml");
    let o = explain(&rules, &cp);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for want in [
        "rule \"add\" (trace): 1 method(s), 1 location(s)\n  TraceBasics.add(II)I  entry/exit/exception\n",
        "rule \"slow\" (trace, min_duration 200000000ns): 1 method(s)",
        "rule \"entries\" (count, trace): 1 method(s), 1 location(s)\n  TraceBasics.point(FC)V  entry\n",
        "rule \"line\" (count): 1 method(s), 1 location(s)\n  TraceBasics.loop(I)I  line 55 (pc 9)\n",
        "  TraceBasics.loop(I)I  call TraceBasics.add(II)I at line 57\n  TraceBasics.loop(I)I  call TraceBasics.add(II)I at line 58\n",
        "rule \"after\" (trace): 1 method(s), 2 location(s)\n  TraceBasics.loop(I)I  after call TraceBasics.add(II)I at line 57\n  TraceBasics.loop(I)I  after call TraceBasics.add(II)I at line 58\n",
    ] {
        assert!(out.contains(want), "{want:?} in\n{out}");
    }
}

#[test]
fn explain_says_nothing_matched_and_refuses_impossible_lines() {
    let cp = classes("bad");
    let d = work("bad-rules");
    let rules = d.join("r.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"none\"\nclass = \"com.acme.**\"\ncount = true\n\n\
         [[rule]]\nname = \"far\"\nclass = \"TraceBasics\"\nmethod = \"loop\"\nline = 99\ncount = true\n\n\
         [[rule]]\nname = \"nocall\"\nclass = \"TraceBasics\"\nmethod = \"add\"\ncall = \"java.util.HashMap.put\"\ncount = true\n",
    )
    .unwrap();
    let o = explain(&rules, &cp);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        out.contains("rule \"none\" (count): matches nothing\n"),
        "{out}"
    );
    let r = rules.display();
    assert_eq!(
        err,
        format!(
            "{r}:10:8: rule \"far\": line 99 is in no method it matches (TraceBasics.loop(I)I lines 53-58)\n\
             {r}:17:8: rule \"nocall\": no method it matches makes that call (TraceBasics.add(II)I lines 10-10)\n"
        )
    );
    // check parses only: the same file is fine without the classes
    let o = bci(&["rules", "check", rules.to_str().unwrap()]);
    assert!(o.status.success());
}

/// A `[runtime] class` the agent does not provide is refused by `bci rules check` (the agent
/// would refuse it), naming `--offline`; `bci rules check --offline` checks such a file as
/// `bci instrument --rules` reads it (it had no way to: exit 1 on a file instrument accepts),
/// and refuses tracing rules there as instrument does.
#[test]
fn check_refuses_a_runtime_class_the_agent_does_not_provide() {
    let d = work("runtime");
    let r = d.join("r.toml");
    let err = refused_by_check(
        &r,
        "[runtime]\nclass = \"com/acme/MyProbes\"\n[[rule]]\nprobes = [\"enter\"]\n",
        "2:9: runtime.class \"com/acme/MyProbes\": the agent provides only",
    );
    assert!(
        err.ends_with(&format!(
            "; `bci rules check --offline {}` checks a file for bci instrument --rules\n",
            r.display()
        )),
        "{err}"
    );
    let o = bci(&["rules", "check", "--offline", r.to_str().unwrap()]);
    assert_eq!(
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned()
        ),
        (
            Some(0),
            format!(
                "{}: ok for bci instrument --rules (runtime class com/acme/MyProbes)\n",
                r.display()
            )
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // a parse error is one still
    let bad = d.join("bad.toml");
    std::fs::write(
        &bad,
        "[runtime]\nclass = \"com/acme/MyProbes\"\n[[rule]]\nprobes = [\"nope\"]\n",
    )
    .unwrap();
    let o = bci(&["rules", "check", "--offline", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with(&format!("{}:4:", bad.display())),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // tracing rules are the agent's: --offline refuses them as bci instrument does
    let t = d.join("t.toml");
    std::fs::write(
        &t,
        "[[rule]]\nname = \"c\"\nclass = \"a.B\"\ncount = true\n",
    )
    .unwrap();
    let o = bci(&["rules", "check", "--offline", t.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "{}:1:1: rule \"c\": tracing rules (count/time/trace) run under the agent (rules=); \
             bci instrument applies probe rules only\n",
            t.display()
        )
    );
}

#[test]
fn instrument_refuses_tracing_rules_with_their_position() {
    let cp = classes("instrument");
    let rules = repo().join("test-classes/trace/trace-basics.toml");
    let out = work("instrument-out");
    let o = bci(&[
        "instrument",
        cp.to_str().unwrap(),
        out.join("o").to_str().unwrap(),
        "--rules",
        rules.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "bci: {}:1:1: rule \"add\": tracing rules (count/time/trace) run under the agent (rules=); bci instrument applies probe rules only\n",
            rules.display()
        )
    );
}

/// `at = ["after"]` (or "before") without `call` is refused saying that it needs a `call`
/// (README: "with at = [\"after\"]: after it returns normally"); it was called an unknown
/// location, as if `after` did not exist.
#[test]
fn after_without_call_says_it_needs_a_call() {
    let d = work("after-no-call");
    for side in ["after", "before"] {
        let err = refused_by_check(
            &d.join(format!("{side}.toml")),
            &format!(
                "[[rule]]\nname = \"a\"\nclass = \"a.Main\"\nmethod = \"run\"\nat = [\"{side}\"]\ncount = true\n"
            ),
            &format!(
                "5:7: rule \"a\": at = [\"{side}\"] is a side of a call site: it needs `call = \
                 \"Owner.method\"` in the same rule"
            ),
        );
        assert!(!err.contains("unknown location"), "{err}");
    }
    // with `call` it is accepted
    let ok = d.join("ok.toml");
    std::fs::write(
        &ok,
        "[[rule]]\nname = \"a\"\nclass = \"a.Main\"\nmethod = \"run\"\ncall = \"java.util.List.add\"\nat = [\"after\"]\ncount = true\n",
    )
    .unwrap();
    let o = bci(&["rules", "check", ok.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A rule file that is not UTF-8 is refused at its first invalid byte, `file:line:col: not
/// UTF-8: byte 0xNN`, by `bci rules check` (with and without --offline) and by
/// `bci instrument --rules` (it said only "stream did not contain valid UTF-8", with no
/// position; found by the hostile-inputs hunt Z, F3).
#[test]
fn a_rule_file_not_utf8_is_refused_at_its_first_bad_byte() {
    let d = work("not-utf8");
    let f = d.join("utf.toml");
    std::fs::write(
        &f,
        b"[[rule]]\nclasses = [\"*\"]\nprobes = [\"enter\"]\nmethods = [\"\xc3\xa9f\xff\"]\n",
    )
    .unwrap();
    let want = format!(
        "{}:4:16: not UTF-8: byte 0xFF (a rule file is UTF-8 text)\n",
        f.display()
    );
    for offline in [false, true] {
        let mut args = vec!["rules", "check"];
        if offline {
            args.push("--offline");
        }
        args.push(f.to_str().unwrap());
        let o = bci(&args);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(String::from_utf8_lossy(&o.stderr), want);
    }
    let cp = d.join("classes");
    std::fs::create_dir_all(&cp).unwrap();
    let o = bci(&[
        "instrument",
        cp.to_str().unwrap(),
        d.join("o").to_str().unwrap(),
        "--rules",
        f.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), format!("bci: {want}"));
}

/// Static initializers are never traced, so `explain` does not list them as matched (it did,
/// while the agent said "no method ran"); a `call` of a constructor is refused at check time
/// with the way to trace one (it was accepted and matched nothing, silently).
#[test]
fn static_initializers_and_constructor_calls_are_explained_as_the_agent_does() {
    let d = work("clinit");
    let o = Command::new(javac())
        .arg("-g")
        .arg("-d")
        .arg(&d)
        .arg(repo().join("test-classes/trace/TraceDeep.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rules = d.join("r.toml");
    // TraceDeep$Op has a static initializer (its constants) and a constructor
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"init\"\nclass = \"TraceDeep$Op\"\nmethod = \"<clinit>\"\ncount = true\n\n\
         [[rule]]\nname = \"ctor\"\nclass = \"TraceDeep$Op\"\nmethod = \"<init>\"\ncount = true\n",
    )
    .unwrap();
    let o = explain(&rules, &d);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "rule \"init\" (count): matches nothing: the agent never traces it: method \
             \"<clinit>\": static initializers are never traced"
        ),
        "{out}"
    );
    assert!(
        out.contains("TraceDeep$Op.<init>(Ljava/lang/String;I)V"),
        "the constructor is traced: {out}"
    );
    let err = refused_by_check(
        &d.join("call.toml"),
        "[[rule]]\nname = \"new\"\nclass = \"TraceDeep\"\nmethod = \"main\"\ncall = \"TraceDeep.<init>\"\ncount = true\n",
        "5:8: rule \"new\": call \"TraceDeep.<init>\": a constructor or static initializer is not a call site",
    );
    assert!(err.contains("method = \"<init>\""), "{err}");
}

/// Compiles `src` (file `name`, e.g. `a/Main.java`) with -g into a fresh work directory.
fn compile(work_name: &str, name: &str, src: &str) -> PathBuf {
    let d = work(work_name);
    let f = d.join("src").join(name);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(&f, src).unwrap();
    let classes = d.join("classes");
    let o = Command::new(javac())
        .arg("-g")
        .arg("-d")
        .arg(&classes)
        .arg(&f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    classes
}

/// A `line` that no method of a big class has: the error names the rule's position, says the
/// line was not found, and lists only the few methods nearest to it with their lines and how
/// many more there are (it listed all 41 methods on one line).
#[test]
fn a_line_in_no_method_lists_the_nearest_methods_only() {
    // Many.m0 .. m39, one per line from line 2, with 20 blank lines after m19
    let mut src = String::from("public class Many {\n");
    let mut line_of = Vec::new();
    for i in 0..40 {
        line_of.push(src.lines().count() + 1);
        src.push_str(&format!(
            "    static int m{i}(int x) {{ return x + {i}; }}\n"
        ));
        if i == 19 {
            src.push_str(&"\n".repeat(20));
        }
    }
    src.push_str("}\n");
    let cp = compile("many", "Many.java", &src);
    let gap = line_of[20] - 3; // 3 lines before m20, 18 after m19
    let rules = cp.parent().unwrap().join("r.toml");
    std::fs::write(
        &rules,
        format!("[[rule]]\nname = \"gap\"\nclass = \"Many\"\nline = {gap}\ncount = true\n"),
    )
    .unwrap();
    let o = explain(&rules, &cp);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!(
            "{}:4:8: rule \"gap\": line {gap} is in no method it matches",
            rules.display()
        )),
        "{err}"
    );
    // the candidates, nearest first: m20 just after the line, then m19 before it
    let listed: Vec<&str> = err.matches("Many.").collect();
    assert!(
        (2..=5).contains(&listed.len()),
        "a handful of methods: {err}"
    );
    let m19 = format!("Many.m19(I)I lines {0}-{0}", line_of[19]);
    let m20 = format!("Many.m20(I)I lines {0}-{0}", line_of[20]);
    assert!(err.contains(&m19) && err.contains(&m20), "{err}");
    assert!(err.find(&m20) < err.find(&m19), "nearest first: {err}");
    assert!(!err.contains("Many.m0(I)I"), "a far method: {err}");
    // 40 methods and the constructor matched; the rest are counted
    assert!(
        err.contains(&format!("and {} more", 41 - listed.len())),
        "{err}"
    );
    assert!(err.len() < 400, "{} bytes: {err}", err.len());
}

/// A class pattern written with the source's `.` before a nested class (`a.Main.Inner`)
/// matches nothing: explain says so and names the pattern with `$` that matches (it said only
/// "matches nothing").
#[test]
fn a_nested_class_written_with_a_dot_gets_the_dollar_name_suggested() {
    let cp = compile(
        "nested",
        "a/Main.java",
        "package a;\npublic class Main {\n    static class Inner {\n        int f() { return 1; }\n\
         \x20       static class Deep { int g() { return 2; } }\n    }\n}\n",
    );
    let rules = cp.parent().unwrap().join("r.toml");
    let mut toml = String::new();
    for (name, class) in [
        ("inner", "a.Main.Inner"),
        ("deep", "a.Main.Inner.Deep"),
        ("glob", "a.Main.*"),
        ("none", "a.Main.Nope"),
    ] {
        toml.push_str(&format!(
            "[[rule]]\nname = \"{name}\"\nclass = \"{class}\"\ncount = true\n\n"
        ));
    }
    std::fs::write(&rules, toml).unwrap();
    let o = explain(&rules, &cp);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = |rule: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("rule \"{rule}\"")))
            .unwrap_or_else(|| panic!("{rule} in {out}"))
            .to_string()
    };
    for (rule, want) in [
        ("inner", "a.Main$Inner"),
        ("deep", "a.Main$Inner$Deep"),
        ("glob", "a.Main$*"),
    ] {
        let l = line(rule);
        assert!(l.contains("matches nothing"), "{l}");
        assert!(l.contains(&format!("class = \"{want}\"")), "{rule}: {l}");
    }
    // a pattern that matches nothing with `$` either gets no suggestion
    assert!(line("none").ends_with("matches nothing"), "{out}");
    // the suggestions are right: they match the nested classes
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"inner\"\nclass = \"a.Main$Inner\"\ncount = true\n\n\
         [[rule]]\nname = \"deep\"\nclass = \"a.Main$Inner$Deep\"\ncount = true\n",
    )
    .unwrap();
    let o = explain(&rules, &cp);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("  a.Main$Inner.f()I  entry/exit/exception\n"),
        "{out}"
    );
    assert!(
        out.contains("  a.Main$Inner$Deep.g()I  entry/exit/exception\n"),
        "{out}"
    );
}

/// A multi-release jar holds a class twice (base and `META-INF/versions/11/`): explain labels
/// each entry with its version (it listed the same method twice, unlabelled).
#[test]
fn multi_release_entries_are_labelled_with_their_version() {
    let classes = compile(
        "multi-release",
        "a/Main.java",
        "package a;\npublic class Main {\n    static int f() { return 1; }\n}\n",
    );
    let d = classes.parent().unwrap();
    let v11 = d.join("v11");
    let o = Command::new(javac())
        .args(["-g", "--release", "11", "-d"])
        .arg(&v11)
        .arg(d.join("src/a/Main.java"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let jar = d.join("mr.jar");
    let o = Command::new(javac().with_file_name("jar"))
        .arg("--create")
        .arg("--file")
        .arg(&jar)
        .arg("-C")
        .arg(&classes)
        .arg(".")
        .args(["--release", "11", "-C"])
        .arg(&v11)
        .arg(".")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rules = d.join("r.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"f\"\nclass = \"a.Main\"\nmethod = \"f\"\ncount = true\n",
    )
    .unwrap();
    let o = explain(&rules, &jar);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("rule \"f\" (count): 2 method(s), 2 location(s)\n"),
        "{out}"
    );
    let listed: Vec<&str> = out.lines().filter(|l| l.contains("a.Main.f()I")).collect();
    assert_eq!(listed.len(), 2, "{out}");
    assert_eq!(
        listed
            .iter()
            .filter(|l| l.contains("(META-INF/versions/11)"))
            .count(),
        1,
        "{out}"
    );
    assert_eq!(
        listed.iter().filter(|l| l.contains("(base)")).count(),
        1,
        "{out}"
    );
}

/// A `call` owner written by its simple name (`StringBuilder.append`) matches no call: the
/// error names the whole class names that would match (before: only "no method it matches
/// makes that call"), and the name it suggests finds the call.
#[test]
fn a_call_owner_by_simple_name_gets_the_whole_name_suggested() {
    let cp = compile(
        "simple-owner",
        "a/Calls.java",
        "package a;\npublic class Calls {\n    String s(int x) {\n        \
         return new StringBuilder().append(x).append('!').toString();\n    }\n}\n",
    );
    let rules = cp.parent().unwrap().join("r.toml");
    let rule = |call: &str| {
        format!("[[rule]]\nname = \"c\"\nclass = \"a.Calls\"\ncall = \"{call}\"\ncount = true\n")
    };
    std::fs::write(&rules, rule("StringBuilder.append")).unwrap();
    let o = explain(&rules, &cp);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no method it matches makes that call")
            && err.contains("call = \"java.lang.StringBuilder.append\" would match"),
        "{err}"
    );
    std::fs::write(&rules, rule("java.lang.StringBuilder.append")).unwrap();
    let o = explain(&rules, &cp);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("call java.lang.StringBuilder.append"), "{out}");
}

/// Writes a JDK module file: the `JM` 1 0 header, then a zip with `classes` (name, file) under
/// `classes/` and a file outside it.
fn jmod(path: &Path, classes: &[(&str, PathBuf)]) {
    use std::io::Write;
    let mut zip = Vec::new();
    {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(&mut zip));
        let o = zip::write::SimpleFileOptions::default();
        z.start_file("lib/libfoo.so", o).unwrap();
        z.write_all(b"not a class").unwrap();
        for (name, file) in classes {
            z.start_file(format!("classes/{name}"), o).unwrap();
            z.write_all(&std::fs::read(file).unwrap()).unwrap();
        }
        z.finish().unwrap();
    }
    let mut f = b"JM\x01\x00".to_vec();
    f.extend_from_slice(&zip);
    std::fs::write(path, f).unwrap();
}

/// A rule naming what the agent never instruments (java.lang, java.util.concurrent, a static
/// initializer) says so and why, instead of a plain "matches nothing"; a rule for a JDK class
/// not in the class path suggests the JDK's module; `--classpath` takes a `.jmod` (it was
/// refused: "not a directory or a .jar/.zip") and a JDK's lib/modules, so that
/// rules/examples/hashmap-resize.toml can be explained.
#[test]
fn explain_says_what_the_agent_never_traces_and_reads_jdk_modules() {
    let cp = classes("never");
    let d = work("never-rules");
    let rules = d.join("r.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"sb\"\nclass = \"java.lang.StringBuilder\"\nmethod = \"append\"\ncount = true\n\n\
         [[rule]]\nname = \"conc\"\nclass = \"java.util.concurrent.*\"\ncount = true\n\n\
         [[rule]]\nname = \"clinit\"\nclass = \"TraceBasics\"\nmethod = \"<clinit>\"\ncount = true\n\n\
         [[rule]]\nname = \"resize\"\nclass = \"java.util.HashMap\"\nmethod = \"resize\"\ncount = true\n",
    )
    .unwrap();
    let o = explain(&rules, &cp);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "rule \"sb\" (count): matches nothing: the agent never traces it: class \
         \"java.lang.StringBuilder\" is in java.lang, and tracing rules never instrument \
         java.lang (and its subpackages), java.io, java.util.concurrent, jdk.internal and sun: \
         the tracing runtime uses them\n",
        "rule \"conc\" (count): matches nothing: the agent never traces it: class \
         \"java.util.concurrent.*\" is in java.util.concurrent, and tracing rules never \
         instrument",
        "rule \"clinit\" (count): matches nothing: the agent never traces it: method \
         \"<clinit>\": static initializers are never traced",
        "rule \"resize\" (count): matches nothing: no class in the classpath has that name; \
         package java.util is in the JDK's module java.base: add ",
    ] {
        assert!(out.contains(want), "{want}\n---\n{out}");
    }
    // a .jmod: its classes/ are the classes, named as on a class path
    let m = d.join("app.jmod");
    jmod(&m, &[("TraceBasics.class", cp.join("TraceBasics.class"))]);
    let trace = repo().join("test-classes/trace/trace-basics.toml");
    let (from_dir, from_jmod) = (explain(&trace, &cp), explain(&trace, &m));
    assert!(
        from_jmod.status.success(),
        "{}",
        String::from_utf8_lossy(&from_jmod.stderr)
    );
    let rules_lines = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(rules_lines(&from_jmod), rules_lines(&from_dir));
    assert!(!rules_lines(&from_jmod).is_empty());
    // a file named .jmod without the header: refused, named
    let fake = d.join("fake.jmod");
    std::fs::write(&fake, b"PK\x03\x04").unwrap();
    let o = explain(&trace, &fake);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "bci: {}: not a JDK module file (.jmod: no `JM` 1 0 header)\n",
            fake.display()
        )
    );
    // the JDK's own modules: the shipped HashMap example matches
    let resize = repo().join("rules/examples/hashmap-resize.toml");
    let jdks = [
        "/usr/lib/jvm/java-17-openjdk-amd64/jmods/java.base.jmod",
        "/usr/lib/jvm/temurin-25-jdk-amd64/lib/modules",
    ];
    for jdk in jdks.iter().map(Path::new).filter(|p| p.is_file()) {
        let o = explain(&resize, jdk);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{jdk:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.contains(
                "rule \"hashmap-resize\" (trace, stack 4): 1 method(s), 1 location(s)\n  \
                 java.util.HashMap.resize()[Ljava/util/HashMap$Node;  entry/exit/exception\n"
            ),
            "{jdk:?}: {out}"
        );
    }
}

/// A rule for a JDK class not in the class path names the JDK module that holds its package
/// (read from the JDK's lib/modules: of the JDK whose .jmod or lib/modules is on the class
/// path, else the running one), with the file to add; a package that is on the class path
/// already says so (the class name is what does not match); a package no module has gets a
/// neutral hint. Before, every such rule was told to add java.base.jmod, also for
/// javax.swing.JFrame (java.desktop) and with java.base.jmod on the class path already.
#[test]
fn explain_names_the_jdk_module_that_holds_the_package() {
    let jdk = Path::new("/usr/lib/jvm/java-17-openjdk-amd64");
    let base = jdk.join("jmods/java.base.jmod");
    if !base.is_file() {
        eprintln!("no {}: skipped", base.display());
        return;
    }
    let cp = classes("modules");
    let d = work("modules-rules");
    let rules = d.join("r.toml");
    let rule = |name: &str, class: &str| {
        format!("[[rule]]\nname = \"{name}\"\nclass = \"{class}\"\ncount = true\n\n")
    };
    std::fs::write(
        &rules,
        rule("swing", "javax.swing.JFrame")
            + &rule("xml", "javax.xml.parsers.*")
            + &rule("javac", "com.sun.tools.javac.main.JavaCompiler")
            + &rule("typo", "java.util.HashMapp")
            + &rule("nosuch", "javax.nosuch.X")
            + &rule("app", "com.acme.Missing"),
    )
    .unwrap();
    let o = bci(&[
        "rules",
        "explain",
        rules.to_str().unwrap(),
        "--classpath",
        &format!("{}:{}", cp.display(), base.display()),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let jmods = jdk.join("jmods");
    let add = |p: &str, m: &str| {
        format!(
            ": no class in the classpath has that name; package {p} is in the JDK's module \
             {m}: add {}/{m}.jmod to --classpath\n",
            jmods.display()
        )
    };
    for (name, why) in [
        ("swing", add("javax.swing", "java.desktop")),
        ("xml", add("javax.xml.parsers", "java.xml")),
        ("javac", add("com.sun.tools.javac.main", "jdk.compiler")),
        (
            "typo",
            ": no class in the classpath has that name (its package java.util, of the JDK's \
             module java.base, is there)\n"
                .to_string(),
        ),
        (
            "nosuch",
            format!(
                ": no class in the classpath has that name (no module of the JDK at {} has \
                 package javax.nosuch); for a JDK class add the module that holds it to \
                 --classpath ($JAVA_HOME/jmods/<module>.jmod, or $JAVA_HOME/lib/modules, which \
                 holds every module)\n",
                jdk.display()
            ),
        ),
        // not a JDK package: nothing to add
        ("app", "\n".to_string()),
    ] {
        let want = format!("rule \"{name}\" (count): matches nothing{why}");
        assert!(out.contains(&want), "{want}\n---\n{out}");
    }
    // a JDK without jmods (Temurin 24+): its lib/modules, which holds them all
    let t25 = Path::new("/usr/lib/jvm/temurin-25-jdk-amd64");
    if t25.join("bin/java").is_file() && !t25.join("jmods").exists() {
        let o = Command::new(env!("CARGO_BIN_EXE_bci"))
            .env("JAVA_HOME", t25)
            .args(["rules", "explain", rules.to_str().unwrap(), "--classpath"])
            .arg(&cp)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        let want = format!(
            "rule \"swing\" (count): matches nothing: no class in the classpath has that name; \
             package javax.swing is in the JDK's module java.desktop: add {}/lib/modules (it \
             holds every module; this JDK has no jmods) to --classpath\n",
            t25.display()
        );
        assert!(out.contains(&want), "{want}\n---\n{out}");
    }
}

/// `bci rules check` refuses a rule that can never match (its class pattern names only classes
/// tracing never instruments: java.lang, …; or it names only `<clinit>`) and warns of one whose
/// class pattern can match some of those classes too (it said "ok" to both; the agent's
/// summary then said the rule matched nothing of the classes loaded). Each error is at the
/// value that causes it.
#[test]
fn check_refuses_rules_on_classes_tracing_never_instruments() {
    let d = work("check-never");
    let err = refused_by_check(
        &d.join("string.toml"),
        "[[rule]]\nname = \"string\"\nclass = \"java.lang.String\"\nmethod = \"substring\"\ncount = true\n",
        "3:9: rule \"string\" can never match: the agent never traces it: class \
         \"java.lang.String\" is in java.lang, and tracing rules never instrument java.lang",
    );
    assert!(!err.contains(": ok"), "{err}");
    refused_by_check(
        &d.join("lang.toml"),
        "[[rule]]\nname = \"ok\"\nclass = \"a.B\"\ncount = true\n\n\
         [[rule]]\nname = \"sb\"\nclass = \"java.lang.*\"\ncount = true\n",
        "8:9: rule \"sb\" can never match: the agent never traces it: class \"java.lang.*\" is in \
         java.lang",
    );
    refused_by_check(
        &d.join("clinit.toml"),
        "[[rule]]\nname = \"init\"\nclass = \"a.B\"\nmethod = \"<clinit>\"\ncount = true\n",
        "4:10: rule \"init\" can never match: the agent never traces it: method \"<clinit>\"",
    );
    // a probe rule's key in a tracing rule: at that key's value (both were at the rule's
    // header, 1:1; found by the manuals hunt)
    refused_by_check(
        &d.join("mix.toml"),
        "[[rule]]\nname = \"a\"\nclass = \"a.B\"\ncount = true\nclasses = [\"x\"]\n",
        "5:11: rule \"a\": `classes` belongs to probe rules (with `probes`)",
    );
    // some of them: ok, with a warning naming the packages
    let some = d.join("some.toml");
    std::fs::write(
        &some,
        "[[rule]]\nname = \"s\"\nclass = \"java.*.String\"\ncount = true\n",
    )
    .unwrap();
    let o = bci(&["rules", "check", some.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "{}:3:9: warning: rule \"s\": its class pattern can match classes of java.lang, \
             java.io, which tracing rules never instrument (the tracing runtime uses them): \
             those are left alone\n",
            some.display()
        )
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{}: ok\n", some.display())
    );
}

/// A rule on a HotSpot intrinsic (Arrays.equals([B[B)Z) is warned about by `bci rules check`
/// and named by `explain`, whether it matches only that method or others too: tracing leaves
/// it alone (once compiled, its body does not run: the agent's count was silently low,
/// 266,442 of 2,000,000 calls; found by the X hunt).
#[test]
fn check_and_explain_name_hotspot_intrinsics() {
    let base = Path::new("/usr/lib/jvm/java-17-openjdk-amd64/jmods/java.base.jmod");
    if !base.is_file() {
        eprintln!("no {}: skipped", base.display());
        return;
    }
    let d = work("intrinsics");
    let rules = d.join("r.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"bytes\"\nclass = \"java.util.Arrays\"\nmethod = \"equals\"\n\
         descriptor = \"([B[B)Z\"\ncount = true\n\n\
         [[rule]]\nname = \"all\"\nclass = \"java.util.Arrays\"\nmethod = \"equals\"\n\
         descriptor = \"([?[?)Z\"\ncount = true\n",
    )
    .unwrap();
    let o = bci(&["rules", "check", rules.to_str().unwrap()]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    for want in [
        format!(
            "{}:4:10: warning: rule \"bytes\": it can match HotSpot intrinsics, which are not \
             traced (once compiled, their body does not run): java.util.Arrays.equals([B[B)Z\n",
            rules.display()
        ),
        format!(
            "{}:11:10: warning: rule \"all\": it can match HotSpot intrinsics, which are not \
             traced (once compiled, their body does not run): java.util.Arrays.equals([B[B)Z, \
             java.util.Arrays.equals([C[C)Z\n",
            rules.display()
        ),
    ] {
        assert!(err.contains(&want), "{want}\n---\n{err}");
    }
    let o = explain(&rules, base);
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "rule \"bytes\" (count): matches nothing: it matches only methods tracing leaves alone: \
         HotSpot intrinsic java.util.Arrays.equals([B[B)Z (HotSpot intrinsic: its body does not \
         run when compiled; not traced)\n",
        "  java.util.Arrays.equals([I[I)Z  entry/exit/exception\n",
        "  java.util.Arrays.equals([B[B)Z  not traced: HotSpot intrinsic: its body does not run \
         when compiled; not traced\n",
    ] {
        assert!(out.contains(want), "{want}\n---\n{out}");
    }
}

/// `bci rules explain` says why a rule that matches only native or abstract (interface)
/// methods matches nothing (it said only "matches nothing").
#[test]
fn explain_names_native_and_abstract_methods_left_alone() {
    let classes = compile(
        "explain-untraced",
        "N.java",
        "public class N {\n    interface Shape { int area(); }\n    static native int nat(int x);\n    \
         static int plain() { return 1; }\n}\n",
    );
    let rules = classes.parent().unwrap().join("r.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"native\"\nclass = \"N\"\nmethod = \"nat\"\ncount = true\n\n\
         [[rule]]\nname = \"iface\"\nclass = \"N$Shape\"\ncount = true\n",
    )
    .unwrap();
    let o = explain(&rules, &classes);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "rule \"native\" (count): matches nothing: it matches only methods tracing leaves \
             alone: native method N.nat(I)I (native methods have no bytecode to instrument)\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "rule \"iface\" (count): matches nothing: it matches only methods tracing leaves \
             alone: abstract method N$Shape.area()I (an abstract or interface method has no \
             code: a rule traces the classes that implement it (e.g. implements = \"...\"))\n"
        ),
        "{out}"
    );
}
