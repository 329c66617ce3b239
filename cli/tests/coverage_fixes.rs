//! `bci report` on hand-made coverage data: which classes of the data `--classes` has, and
//! what is said about the others.
/// The agent's test helpers: `agent_lib()` builds the cdylib.
#[path = "../../agent/tests/common/mod.rs"]
mod agent_common;
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::coverage::data::{CovData, Session};
use std::path::{Path, PathBuf};
use std::process::Command;

const BCI: &str = env!("CARGO_BIN_EXE_bci");

/// An empty directory target/test-out/coverage-fixes-{tag}-{pid}.
fn fresh_work(tag: &str) -> PathBuf {
    let work = common::workspace().join(format!(
        "target/test-out/coverage-fixes-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    work
}

/// Compiles `sources` (path under src/, text) into `out`.
fn javac_into(work: &Path, out: &Path, sources: &[(&str, &str)]) {
    let src = work.join("src");
    let mut files = Vec::new();
    for (path, text) in sources {
        let f = src.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, text).unwrap();
        files.push(f);
    }
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-d")
        .arg(out)
        .args(&files)
        .status()
        .unwrap();
    assert!(st.success(), "javac {sources:?}");
}

/// A data file of one session with `classes` (internal name, hash, counts).
fn write_data(path: &Path, classes: &[(&str, u64, &[u64])]) {
    let mut d = CovData {
        sessions: vec![Session {
            id: "host-1-1".into(),
            start_ms: 1,
            dump_ms: 2,
            jvm: "test".into(),
            command: "test".into(),
        }],
        ..CovData::default()
    };
    for (name, hash, counts) in classes {
        d.add_class(name, *hash, counts).unwrap();
    }
    std::fs::write(path, d.to_bytes()).unwrap();
}

fn run_bci(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, String) {
    let o = Command::new(BCI).args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn os<T: AsRef<std::ffi::OsStr> + ?Sized>(s: &T) -> &std::ffi::OsStr {
    s.as_ref()
}

const A: (&str, &str) = (
    "p/A.java",
    "package p;\npublic class A {\n    public static int f(int x) {\n        return x;\n    }\n}\n",
);
const B: (&str, &str) = (
    "q/B.java",
    "package q;\npublic class B {\n    public static int g(int x) {\n        return x;\n    }\n}\n",
);

/// `--classes` of another module (classes, but none of the data's): the documented error on
/// stderr and exit 1, as for a path without classes; it was a 0 % report and exit 0.
#[test]
fn classes_of_another_module_are_an_error() {
    let work = fresh_work("other-module");
    let other = work.join("other");
    javac_into(&work, &other, &[B]);
    let data = work.join("a.cov");
    write_data(&data, &[("p/A", 1, &[0, 1]), ("p/C", 2, &[0, 1])]);
    let csv = work.join("a.csv");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&other),
        os("--csv"),
        os(&csv),
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("\n1 class analysed, 0 with data;"), "{out}");
    assert_eq!(
        err,
        format!(
            "bci: error: none of the 2 classes in the data is under the --classes paths \
             ({}): no class of the data was analysed; give the directories or jars of the \
             classes that ran (p.A, p.C)\n",
            other.display()
        )
    );
    assert!(csv.exists());
    // --include selecting none of the data's classes there: the same error, counting the
    // selected ones
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&other),
        os("--include"),
        os("p.A"),
    ]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.starts_with("bci: error: the 1 class in the data is not under the --classes paths"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// `--include`/`--exclude` that select none of the data's classes (a typo in a glob): the
/// documented error on stderr and exit 1, the reports written; it was an empty report, nothing
/// on stderr, exit 0.
#[test]
fn filters_that_select_none_of_the_data_are_an_error() {
    let work = fresh_work("filtered-none");
    let classes = work.join("classes");
    javac_into(&work, &classes, &[A, B]);
    let data = work.join("a.cov");
    write_data(&data, &[("p/A", 1, &[0, 1]), ("z/Z", 2, &[0, 1])]);
    let csv = work.join("a.csv");
    for (filter, want) in [
        (&["--include", "hnut.*"][..], "--include selects none"),
        (
            &["--exclude", "p.*", "--exclude", "z.*"][..],
            "--exclude leaves out every one",
        ),
        (
            &["--include", "q.*", "--exclude", "p.*"][..],
            "--include/--exclude select none",
        ),
    ] {
        let _ = std::fs::remove_file(&csv);
        let mut args = vec![os("report"), os(&data), os("--classes"), os(&classes)];
        args.extend(filter.iter().map(os));
        args.extend([os("--csv"), os(&csv)]);
        let (code, out, err) = run_bci(&args);
        assert_eq!(code, Some(1), "{filter:?}: {out}{err}");
        assert_eq!(
            err,
            format!(
                "bci: error: {want} of the data's 2 classes: no class of the data was \
                 analysed; give globs that select classes that ran (p.A, z.Z)\n"
            ),
            "{filter:?}"
        );
        assert!(csv.exists(), "{filter:?}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// The note "N classes in the data are under no --classes path" counts only the classes
/// --include/--exclude select; it counted the ones they leave out too.
#[test]
fn classes_left_out_by_the_filters_are_not_called_absent() {
    let work = fresh_work("filtered-absent");
    let classes = work.join("classes");
    javac_into(&work, &classes, &[A]);
    let data = work.join("a.cov");
    write_data(&data, &[("p/A", 1, &[0, 1]), ("z/Z", 2, &[0, 1])]);
    for filter in [["--include", "p.*"], ["--exclude", "z.*"]] {
        let (code, out, err) = run_bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(&classes),
            os(filter[0]),
            os(filter[1]),
        ]);
        assert_eq!(code, Some(0), "{filter:?}: {out}{err}");
        assert!(
            !out.contains("under no --classes path"),
            "{filter:?}: {out}"
        );
        assert!(out.contains("1 class analysed"), "{filter:?}: {out}");
    }
    // without a filter, z.Z is named
    let (_, out, _) = run_bci(&[os("report"), os(&data), os("--classes"), os(&classes)]);
    assert!(
        out.contains("note: 1 class in the data is under no --classes path: z.Z\n"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A method `bci instrument --coverage` left without counters (its code would outgrow 64 KiB
/// with them) is named by the report as one that could take no counters, in no count, not
/// reported as never run (LCOV FNDA:0, CSV missed, no note; found by the new-user hunt): the
/// report plans the class as the instrumenter did.
/// Covers `classes` offline (`bci instrument --coverage` into `work/inst`, with the runtime
/// jar), runs `main` with them (its stdout must be `stdout`) and reports the data as LCOV.
/// Returns the instrumenter's stderr, the report's stdout and stderr, and the LCOV text.
fn offline_lcov(work: &Path, classes: &Path, main: &str, stdout: &str) -> (String, String, String) {
    let (inst, rt, data, info) = (
        work.join("inst"),
        work.join("bci-runtime.jar"),
        work.join("run.cov"),
        work.join("run.info"),
    );
    let (code, out, inst_err) =
        run_bci(&[os("instrument"), os("--coverage"), os(classes), os(&inst)]);
    assert_eq!(code, Some(0), "{out}{inst_err}");
    let (code, out, err) = run_bci(&[os("runtime-jar"), os(&rt)]);
    assert_eq!(code, Some(0), "{out}{err}");
    let run = Command::new(common::java_home().join("bin/java"))
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), rt.display()))
        .arg(main)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout), stdout);
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(classes),
        os("--lcov"),
        os(&info),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    (
        inst_err,
        format!("{out}{err}"),
        std::fs::read_to_string(&info).unwrap(),
    )
}

#[test]
fn a_method_too_big_for_counters_is_named_not_missed() {
    let work = fresh_work("too-big");
    let classes = work.join("classes");
    let mut src = String::from("package b;\npublic class Big {\n    static int v;\n");
    src.push_str("    public static int f(int x) {\n");
    for k in 0..4300 {
        src.push_str(&format!("        if (x == {k}) v += {};\n", k % 7));
    }
    src.push_str("        return v;\n    }\n");
    src.push_str("    public static void main(String[] a) { System.out.println(f(3)); }\n}\n");
    javac_into(&work, &classes, &[("b/Big.java", &src)]);
    let (err, out, lcov) = offline_lcov(&work, &classes, "b.Big", "3\n");
    assert!(
        err.contains("bci: b/Big.f(I)I: left without counters: ")
            && err.contains("(limit 65535)")
            && err.matches("b/Big.f(I)I").count() == 1,
        "{err}"
    );
    assert!(
        out.contains("note: 1 method could take no counters and is in no count")
            && out
                .lines()
                .any(|l| l.starts_with("  b.Big.f(I)I: code would be ")
                    && l.ends_with("(limit 65535)")),
        "{out}"
    );
    let fnda: Vec<&str> = lcov.lines().filter(|l| l.starts_with("FNDA:")).collect();
    assert!(
        !fnda
            .iter()
            .any(|l| l.contains("f(I)I") || l.ends_with(",f")),
        "{lcov}"
    );
    assert!(
        fnda.iter()
            .any(|l| l.starts_with("FNDA:1,") && l.contains("main")),
        "{lcov}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// HotSpot intrinsics (the methods of rewriter/src/intrinsics.rs's table) get no coverage
/// counters and the report names them as not analysed, with the reason: C1/C2 replace their
/// bodies and the interpreter runs `Math.sqrt` through a special entry, so counters in them
/// missed calls (found by the numbers hunt: `FNDA:0,Math.sqrt(D)D` after 300,000 calls, and
/// ~103,000 for `Integer.bitCount` and `Math.abs`). The JDK classes come from classdump=.
#[test]
fn hotspot_intrinsics_are_named_not_counted_wrong() {
    let work = fresh_work("intrinsics");
    let classes = work.join("classes");
    let src = "public class In {\n    public static void main(String[] a) {\n        \
               long s = 0;\n        for (int i = 0; i < 200_000; i++) {\n            \
               s += (long) Math.sqrt(i) + Integer.bitCount(i) + Math.abs(i - 9);\n        }\n\
               \x20       System.out.println(s > 0);\n    }\n}\n";
    javac_into(&work, &classes, &[("In.java", src)]);
    let (data, dump, info) = (work.join("in.cov"), work.join("dump"), work.join("in.info"));
    let html = work.join("html");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!(
            "-agentpath:{}=coverage=y,include=In:java.lang.Math:java.lang.Integer,covfile={},\
             classdump={}",
            agent_common::agent_lib().display(),
            data.display(),
            dump.display()
        ))
        .arg("-cp")
        .arg(&classes)
        .arg("In")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "true\n");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&dump),
        os("--lcov"),
        os(&info),
        os("--html"),
        os(&html),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    // the class page names them too (it named no method left without counters)
    let page = std::fs::read_to_string(html.join("java.lang/Math.html")).unwrap();
    assert!(
        page.contains("Without counters, in no figure here:")
            && page.contains("<li>sqrt(D)D: a HotSpot intrinsic"),
        "{page}"
    );
    assert!(
        out.contains(" HotSpot intrinsics have no counters and are in no count above (the JIT"),
        "{out}"
    );
    for (c, m) in [
        ("java.lang.Math", "sqrt(D)D"),
        ("java.lang.Integer", "bitCount(I)I"),
        ("java.lang.Math", "abs(I)I"),
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("  {c}: "))
                && l.split([':', ',']).any(|x| x.trim() == m)),
            "{c}.{m}: {out}"
        );
    }
    let lcov = std::fs::read_to_string(&info).unwrap();
    let fnda: Vec<&str> = lcov.lines().filter(|l| l.starts_with("FNDA:")).collect();
    for m in ["Math.sqrt(D)D", "Integer.bitCount(I)I", "Math.abs(I)I"] {
        assert!(
            !fnda.iter().any(|l| l.ends_with(&format!(",{m}"))),
            "{m}: {fnda:?}"
        );
    }
    // the classes' other methods and the program keep their counts
    assert!(
        fnda.contains(&"FNDA:1,In.main([Ljava/lang/String;)V"),
        "{fnda:?}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A line of two classes (an anonymous class's `new` line: the outer method's and the
/// anonymous class's constructor's) counts once in Cobertura's package and root totals, as in
/// the other formats; they counted it twice (56 lines where the others had 55).
#[test]
fn cobertura_totals_count_a_line_of_two_classes_once() {
    let work = fresh_work("cobertura-shared-line");
    let classes = work.join("classes");
    javac_into(
        &work,
        &classes,
        &[(
            "p/S.java",
            "package p;\npublic class S {\n    interface D { int d(); }\n    static D make() {\n        \
             return new D() {\n            public int d() { return 1; }\n        };\n    }\n}\n",
        )],
    );
    // data of another build of p/S: every class reported not run
    let data = work.join("s.cov");
    write_data(&data, &[("p/S", 1, &[0, 1])]);
    let (cob, xml) = (work.join("cob.xml"), work.join("jacoco.xml"));
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&classes),
        os("--cobertura"),
        os(&cob),
        os("--xml"),
        os(&xml),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let xml = std::fs::read_to_string(&xml).unwrap();
    // the report's LINE counter (the last one): lines 2, 5 and 6
    let at = xml.rfind("<counter type=\"LINE\"").unwrap();
    assert!(
        xml[at..].starts_with("<counter type=\"LINE\" missed=\"3\" covered=\"0\"/>"),
        "{xml}"
    );
    let cob = std::fs::read_to_string(&cob).unwrap();
    assert!(
        cob.contains("lines-covered=\"0\" lines-valid=\"3\""),
        "root: {cob}"
    );
    // the package's line-rate has nothing to tell; the classes keep their own rows: line 5 in
    // each
    for class_lines in [
        "</methods><lines><line number=\"2\" hits=\"0\" branch=\"false\"/><line number=\"5\"",
        "</methods><lines><line number=\"5\" hits=\"0\" branch=\"false\"/><line number=\"6\"",
    ] {
        assert!(cob.contains(class_lines), "{class_lines}: {cob}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// A class whose source is not given does not take the one file of its simple name when that
/// file is another package's (found by the R hunt: commons-lang3's StringUtils was reported
/// against the project's src/drv2/StringUtils.java: LCOV, Cobertura and HTML showed the
/// library's counts on the project's text). The file sits at its own package path of a
/// reported package, and it declares that package: either is enough. The class is not found
/// and named in the note, as other sources not found are.
#[test]
fn a_file_of_another_package_is_not_taken_by_name() {
    let work = fresh_work("by-name-other-package");
    let classes = work.join("classes");
    let own = (
        "drv2/StringUtils.java",
        "package drv2;\npublic class StringUtils {\n    static int f() { return 1; }\n}\n",
    );
    javac_into(&work, &classes, &[own]);
    // the library's class, its source elsewhere (not under --sources)
    let lib = (
        "lib/StringUtils.java",
        "package lib;\npublic class StringUtils {\n    static int g() {\n        return 2;\n    }\n}\n",
    );
    javac_into(&work.join("libsrc"), &classes, &[lib]);
    let data = work.join("a.cov");
    write_data(&data, &[]);
    let src = work.join("src");
    let report = |include: &str| {
        let (info, cob) = (work.join("a.info"), work.join("a.xml"));
        let (code, out, err) = run_bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(&classes),
            os("--include"),
            os(include),
            os("--sources"),
            os(&src),
            os("--lcov"),
            os(&info),
            os("--cobertura"),
            os(&cob),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        let sf: Vec<String> = (std::fs::read_to_string(&info).unwrap().lines())
            .filter_map(|l| l.strip_prefix("SF:").map(String::from))
            .collect();
        let cob = std::fs::read_to_string(&cob).unwrap();
        (err, sf, cob)
    };
    // both reported: the file is drv2's by its package path (and by its declaration)
    let (err, sf, cob) = report("*");
    assert_eq!(
        sf,
        [
            src.join("drv2/StringUtils.java").display().to_string(),
            "lib/StringUtils.java".to_string()
        ]
    );
    assert!(
        cob.contains("<class name=\"lib.StringUtils\" filename=\"lib/StringUtils.java\""),
        "{cob}"
    );
    assert!(
        err.contains("1 source file not found under the --sources roots")
            && err.contains(": lib/StringUtils.java\n"),
        "{err}"
    );
    // the library's class alone: the file declares another package
    let (err, sf, _) = report("lib.*");
    assert_eq!(sf, ["lib/StringUtils.java".to_string()]);
    assert!(err.contains(": lib/StringUtils.java\n"), "{err}");
    let _ = std::fs::remove_dir_all(&work);
}

/// A LineNumberTable entry of line 0 (the Clojure compiler writes them) is no line: the code
/// after it stays on the line before, as in ASM, so JaCoCo (found by the R hunt: bci reported
/// a "line 0", `DA:0`, `FN:0`, and a LINE counter unlike JaCoCo's). Only the analysis changes:
/// the counters are where they were.
#[test]
fn line_zero_entries_keep_the_line_before() {
    let work = fresh_work("line-zero");
    let classes = work.join("classes");
    javac_into(
        &work,
        &classes,
        &[(
            "z/Z.java",
            "package z;\npublic class Z {\n    static int f(int x) {\n        int y = x + 1;\n        \
             y = y * 2;\n        return y;\n    }\n}\n",
        )],
    );
    let file = classes.join("z/Z.class");
    let orig = std::fs::read(&file).unwrap();
    let lines = |bytes: &[u8]| -> Vec<(u32, u64)> {
        let c = bci_rewriter::coverage::analysis::analyze(
            bytes,
            None,
            bci_rewriter::flow::Split::AfterCalls,
        )
        .unwrap();
        let f = c.methods.iter().find(|m| m.name == "f").unwrap();
        (f.lines.iter())
            .map(|(l, x)| (*l, x.instructions.total()))
            .collect()
    };
    let before = lines(&orig);
    assert_eq!(before.iter().map(|l| l.0).collect::<Vec<_>>(), [4, 5, 6]);
    // f's entry for line 5 made line 0
    let mut bytes = orig.clone();
    {
        let cf = bci::ClassFile::parse(&orig).unwrap();
        let m = (cf.methods.iter())
            .find(|m| cf.member_name(m) == "f")
            .unwrap();
        let (_, a) = cf.find_attr(&m.attributes, "Code").unwrap();
        let code = bci::CodeAttr::parse(&cf, a).unwrap();
        let t = (code.attributes.iter())
            .find(|a| cf.attr_name(a) == "LineNumberTable")
            .unwrap();
        let at = t.data.as_ptr() as usize - orig.as_ptr() as usize;
        let n = u16::from_be_bytes([t.data[0], t.data[1]]) as usize;
        let k = (0..n)
            .find(|k| t.data[2 + 4 * k + 2..2 + 4 * k + 4] == [0, 5])
            .unwrap();
        bytes[at + 2 + 4 * k + 2..at + 2 + 4 * k + 4].copy_from_slice(&[0, 0]);
    }
    let after = lines(&bytes);
    assert_eq!(
        after,
        [(4, before[0].1 + before[1].1), (6, before[2].1)],
        "{before:?}"
    );
    // the report agrees: no DA:0, no FN:0
    let (classes0, data, info) = (work.join("zero"), work.join("z.cov"), work.join("z.info"));
    std::fs::create_dir_all(classes0.join("z")).unwrap();
    std::fs::write(classes0.join("z/Z.class"), &bytes).unwrap();
    write_data(&data, &[]);
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&classes0),
        os("--lcov"),
        os(&info),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let lcov = std::fs::read_to_string(&info).unwrap();
    assert!(
        !lcov.contains("\nDA:0,")
            && !lcov.contains("\nFN:0,")
            && lcov.contains("\nDA:4,0\nDA:6,0\n"),
        "{lcov}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A class with line numbers but no SourceFile attribute (every Clojure namespace's `__init`,
/// Rhino's compiled scripts; here `javac -g:lines`) is in no LCOV record and no Cobertura
/// class, and a note on stderr names it: LCOV had a made-up `SF:p/A.java` that stopped
/// genhtml, with nothing said (found by the R hunt). JaCoCo's XML has no source file for it
/// either; the console and the XML still count it.
#[test]
fn a_class_without_a_source_file_is_left_out_of_lcov_and_said() {
    let work = fresh_work("no-source-file");
    let classes = work.join("classes");
    let src = work.join("src/p/A.java");
    std::fs::create_dir_all(src.parent().unwrap()).unwrap();
    std::fs::write(&src, A.1).unwrap();
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g:lines")
        .arg("-d")
        .arg(&classes)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let data = work.join("a.cov");
    write_data(&data, &[]);
    let (info, cob, xml) = (work.join("a.info"), work.join("c.xml"), work.join("j.xml"));
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&classes),
        os("--lcov"),
        os(&info),
        os("--cobertura"),
        os(&cob),
        os("--xml"),
        os(&xml),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(std::fs::read_to_string(&info).unwrap(), "");
    let cobertura = std::fs::read_to_string(&cob).unwrap();
    assert!(!cobertura.contains("<class "), "{cobertura}");
    assert_eq!(
        err,
        format!(
            "bci: note: 1 class with line numbers but no SourceFile attribute (the Clojure \
             compiler's __init classes, compiled scripts): source file not known, left out of \
             {} and {}; the other reports count it: p.A\n",
            info.display(),
            cob.display()
        )
    );
    assert!(out.contains("1 class analysed"), "{out}");
    let xml = std::fs::read_to_string(&xml).unwrap();
    assert!(
        xml.contains("<class name=\"p/A\"") && !xml.contains("<sourcefile"),
        "{xml}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// A version-49 class `D` with `names` × `descs` static methods, the first `iconst_0; ireturn`,
/// the others native, and `ints` Integer constants more in its pool.
fn big_class(names: u32, descs: &[&str], ints: u32) -> Vec<u8> {
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let utf = |pool: &mut Vec<Vec<u8>>, s: &str| -> u16 {
        let mut e = vec![1];
        e.extend_from_slice(&(s.len() as u16).to_be_bytes());
        e.extend_from_slice(s.as_bytes());
        pool.push(e);
        pool.len() as u16
    };
    let d = utf(&mut pool, "D");
    pool.push([&[7u8][..], &d.to_be_bytes()].concat());
    let this = pool.len() as u16;
    let o = utf(&mut pool, "java/lang/Object");
    pool.push([&[7u8][..], &o.to_be_bytes()].concat());
    let sup = pool.len() as u16;
    let code = utf(&mut pool, "Code");
    let ds: Vec<u16> = descs.iter().map(|s| utf(&mut pool, s)).collect();
    let ns: Vec<u16> = (0..names)
        .map(|k| utf(&mut pool, &format!("m{k}")))
        .collect();
    for k in 0..ints {
        pool.push([&[3u8][..], &(0x4000_0000 + k).to_be_bytes()].concat());
    }
    let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 49];
    b.extend_from_slice(&(pool.len() as u16 + 1).to_be_bytes());
    for e in &pool {
        b.extend_from_slice(e);
    }
    b.extend_from_slice(&[0, 0x21]);
    b.extend_from_slice(&this.to_be_bytes());
    b.extend_from_slice(&sup.to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 0]);
    b.extend_from_slice(&((ns.len() * ds.len()) as u16).to_be_bytes());
    for (k, (n, d)) in (ns.iter())
        .flat_map(|n| ds.iter().map(move |d| (n, d)))
        .enumerate()
    {
        // the first with code, the others native (no counters)
        b.extend_from_slice(&[if k == 0 { 0 } else { 1 }, 9]);
        b.extend_from_slice(&n.to_be_bytes());
        b.extend_from_slice(&d.to_be_bytes());
        if k > 0 {
            b.extend_from_slice(&[0, 0]);
            continue;
        }
        b.extend_from_slice(&[0, 1]);
        b.extend_from_slice(&code.to_be_bytes());
        b.extend_from_slice(&14u32.to_be_bytes());
        b.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 2, 0x03, 0xAC, 0, 0, 0, 0]);
    }
    b.extend_from_slice(&[0, 0]);
    b
}

/// A class the instrumenter leaves without coverage for a class-level reason other than the
/// counter limit (no room in the constant pool, or in the method table for the helpers) is
/// named in the console and the HTML as never instrumented, with the reason; it was shown as
/// 0 % with no note (found by the B hunt). The reason names no helper of bci's own (it said
/// `MethBig.bci$b(I)[J: too many methods`).
#[test]
fn a_class_with_no_room_for_counters_is_named_not_missed() {
    for (tag, bytes, why) in [
        (
            "cp",
            big_class(1, &["()I"], 65_520 - 7),
            "constant pool would exceed 65535 entries",
        ),
        (
            "methods",
            big_class(13_107, &["()I", "()Z", "()B", "()C", "()S"], 0),
            "too many methods: no room for the coverage helper methods (a class may have 65535 \
             methods)",
        ),
    ] {
        let work = fresh_work(&format!("no-room-{tag}"));
        let (classes, html, data) = (work.join("classes"), work.join("html"), work.join("d.cov"));
        std::fs::create_dir_all(&classes).unwrap();
        std::fs::write(classes.join("D.class"), &bytes).unwrap();
        write_data(&data, &[]);
        let (code, out, err) = run_bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(&classes),
            os("--html"),
            os(&html),
        ]);
        assert_eq!(code, Some(0), "{tag}: {out}{err}");
        let note = format!(
            "note: 1 class has no room for the coverage counters: never instrumented (bci \
             instrument and the agent leave it without coverage), it shows as not run: D ({why}"
        );
        assert!(out.contains(&note) && !out.contains("bci$"), "{tag}: {out}");
        let page = std::fs::read_to_string(html.join("default/D.html")).unwrap();
        assert!(
            page.contains(&format!("<p class=\"note\">Not instrumented: {why}")),
            "{tag}: {page}"
        );
        let _ = std::fs::remove_dir_all(&work);
    }
}

const JUNIT: &str = "/usr/share/java/junit-platform-console-standalone.jar";

/// cli/tests/fixtures/pertest/Shapes.java compiled into `orig` and covered offline into
/// `inst`, the test class `test_file` (of the same directory) into `tests`, and the runtime
/// jar: (orig, inst, tests, runtime jar).
fn pertest_build(work: &Path, test_file: &str) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    let (orig, inst, tests) = (work.join("orig"), work.join("inst"), work.join("tests"));
    for d in [&orig, &tests] {
        std::fs::create_dir_all(d).unwrap();
    }
    let src = common::workspace().join("cli/tests/fixtures/pertest");
    for (cp, out, file) in [
        (String::new(), &orig, "Shapes.java"),
        (format!("{}:{JUNIT}", orig.display()), &tests, test_file),
    ] {
        let st = Command::new(common::java_home().join("bin/javac"))
            .args(["-g", "-cp", &cp, "-d"])
            .arg(out)
            .arg(src.join(file))
            .status()
            .unwrap();
        assert!(st.success(), "javac {file}");
    }
    let rt = work.join("bci-runtime.jar");
    for args in [
        vec![os("instrument"), os("--coverage"), os(&orig), os(&inst)],
        vec![os("runtime-jar"), os(&rt)],
    ] {
        let (code, out, err) = run_bci(&args);
        assert_eq!(code, Some(0), "{args:?}: {out}{err}");
    }
    (orig, inst, tests, rt)
}

/// Runs JUnit's console launcher on `class` (offline-covered classes, the runtime jar on the
/// class path) into `data`; its output.
fn run_junit(inst: &Path, tests: &Path, rt: &Path, data: &Path, class: &str) -> String {
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg("-jar")
        .arg(JUNIT)
        .arg("-cp")
        .arg(format!(
            "{}:{}:{}",
            inst.display(),
            tests.display(),
            rt.display()
        ))
        .args(["--select-class", class, "--disable-banner"])
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A program run with `java -jar`, whose classes are covered offline, gets the runtime jar as
/// a java agent that does nothing (`-javaagent:`: on the class path, which `-jar` ignores in
/// `-cp`): here JUnit's own console launcher covered offline, running ShapesTest; its tests run
/// and the per-test listener the runtime jar declares works. The README's recipe before, the
/// boot class path, stopped every JUnit launch (NoClassDefFoundError: TestExecutionListener,
/// the listener loaded by the boot loader; found by the jar-shapes hunt), and without
/// `Premain-Class` the JVM refuses the jar as an agent.
#[test]
fn a_covered_jar_run_with_dash_jar_takes_the_runtime_as_a_java_agent() {
    if !Path::new(JUNIT).exists() {
        eprintln!("skipped: {JUNIT} absent (apt-get install -y junit5)");
        return;
    }
    let work = fresh_work("javaagent-jar");
    let (_, inst, tests, rt) = pertest_build(&work, "ShapesTest.java");
    let launcher = work.join("launcher-cov.jar");
    let (code, out, err) = run_bci(&[
        os("instrument"),
        os("--coverage"),
        os("--include"),
        os("org.junit.platform.console.*"),
        os(JUNIT),
        os(&launcher),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let data = work.join("run.cov");
    let o = Command::new(common::java_home().join("bin/java"))
        .arg(format!("-Dbci.covfile={}", data.display()))
        .arg(format!("-javaagent:{}", rt.display()))
        .arg("-jar")
        .arg(&launcher)
        .arg("-cp")
        .arg(format!("{}:{}", inst.display(), tests.display()))
        .args(["--select-class", "ShapesTest", "--disable-banner"])
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("3 tests successful"), "{out}");
    let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    assert!(
        (d.classes.keys()).any(|(n, _)| n.starts_with("org/junit/platform/console/")),
        "the launcher's own counters: {:?}",
        d.classes.keys().collect::<Vec<_>>()
    );
    assert_eq!(d.tests.len(), 3, "{out}");
    let _ = std::fs::remove_dir_all(&work);
}

/// Every test JUnit runs is a test of its own in the per-test data: dynamic tests given a
/// `classpath:` source (named by their factory and index, not by their display names, two of
/// which were equal: 3 tests for 4), and JUnit 4 Parameterized tests through the Vintage engine
/// (both were `Old4Test#cls()`: 1 test for 2).
#[test]
fn per_test_names_every_test_apart() {
    if !Path::new(JUNIT).exists() {
        eprintln!("skipped: {JUNIT} absent (apt-get install -y junit5)");
        return;
    }
    let work = fresh_work("pertest-names");
    for (class, file, successful, want) in [
        (
            "NamesTest",
            "NamesTest.java",
            "4 tests successful",
            &[
                "NamesTest#named()[1]",
                "NamesTest#named()[2]",
                "NamesTest#named()[3]",
                "NamesTest#named()[4]",
            ][..],
        ),
        (
            "Old4Test",
            "Old4Test.java",
            "2 tests successful",
            &["Old4Test#cls()[-3]", "Old4Test#cls()[1]"][..],
        ),
    ] {
        let dir = work.join(class);
        let (orig, inst, tests, rt) = pertest_build(&dir, file);
        let data = dir.join("run.cov");
        let out = run_junit(&inst, &tests, &rt, &data, class);
        assert!(out.contains(successful), "{out}");
        let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
        assert_eq!(d.tests.keys().collect::<Vec<_>>(), want, "{out}");
        let (code, out, err) = run_bci(&[
            os("report"),
            os(&data),
            os("--classes"),
            os(&orig),
            os("--per-test"),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(
            out.contains(&format!("\nper test: {} tests;", want.len())),
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// A test name with a tab or a newline (`Cov.begin` takes any name) is escaped in the
/// reports: the console's listing stays one tab-separated record per line.
#[test]
fn per_test_names_with_control_characters_are_escaped() {
    let work = fresh_work("pertest-escape");
    let classes = work.join("classes");
    javac_into(&work, &classes, &[A]);
    let bytes = std::fs::read(classes.join("p/A.class")).unwrap();
    let hash = bci_rewriter::coverage::class_hash(&bytes);
    let n = bci_rewriter::coverage::plan_class(&bytes, bci_rewriter::flow::Split::AfterCalls)
        .unwrap()
        .counters as usize;
    // every method entered once, in the test
    let mut counts = vec![1u64; n];
    counts[0] = 0;
    let data = work.join("a.cov");
    write_data(&data, &[("p/A", hash, &counts)]);
    let mut d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
    d.add_test_class("has space\tand tab\nand \\ newline", "p/A", hash, &counts)
        .unwrap();
    std::fs::write(&data, d.to_bytes()).unwrap();
    let info = work.join("a.info");
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&data),
        os("--classes"),
        os(&classes),
        os("--per-test"),
        os("--lcov"),
        os(&info),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("\np/A.java:4\thas space\\tand tab\\nand \\\\ newline\n"),
        "{out}"
    );
    let lcov = std::fs::read_to_string(&info).unwrap();
    assert!(
        lcov.contains("\nTN:has_space_tand_tab_nand____newline\n")
            || lcov.starts_with("TN:has_space_tand_tab_nand____newline\n"),
        "{lcov}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// `Cov.end("wrong")` while another test runs (a name no test began under) is ignored, as
/// before, but said on stderr once, as overlapping tests are: by the runtime jar (offline) and
/// by the agent. It was ignored without a word.
#[test]
fn an_end_of_a_test_not_running_is_said() {
    let work = fresh_work("unknown-end");
    let rt = work.join("bci-runtime.jar");
    let (code, out, err) = run_bci(&[os("runtime-jar"), os(&rt)]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (orig, inst) = (work.join("orig"), work.join("inst"));
    let src = work.join("src/Manual.java");
    std::fs::create_dir_all(src.parent().unwrap()).unwrap();
    std::fs::write(
        &src,
        "import bci.runtime.Cov;\npublic class Manual {\n    static int g(int n) {\n        \
         return n > 5 ? 1 : 0;\n    }\n    public static void main(String[] a) {\n        \
         Cov.begin(\"t2\");\n        g(9);\n        Cov.end(\"wrong\");\n        \
         Cov.end(\"t2\");\n        Cov.begin(\"t3\");\n        Cov.end(\"t3\");\n        \
         Cov.end(\"t3\");\n    }\n}\n",
    )
    .unwrap();
    let st = Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-cp")
        .arg(&rt)
        .arg("-d")
        .arg(&orig)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let (code, out, err) = run_bci(&[os("instrument"), os("--coverage"), os(&orig), os(&inst)]);
    assert_eq!(code, Some(0), "{out}{err}");
    for agent in [false, true] {
        let data = work.join(format!("{agent}.cov"));
        let mut java = Command::new(common::java_home().join("bin/java"));
        let classes = if agent {
            java.arg(format!(
                "-agentpath:{}=coverage=y,include=Manual,covfile={}",
                agent_common::agent_lib().display(),
                data.display()
            ));
            &orig
        } else {
            java.arg(format!("-Dbci.covfile={}", data.display()));
            &inst
        };
        let o = java
            .arg("-cp")
            .arg(format!("{}:{}", classes.display(), rt.display()))
            .arg("Manual")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "agent={agent}: {err}");
        // said once (the second end of t3 is another), and the run's tests recorded
        assert_eq!(
            err.matches("bci: per-test coverage: end(").count(),
            1,
            "agent={agent}: {err}"
        );
        assert!(
            err.contains(
                "bci: per-test coverage: end(\"wrong\") names no test that began and has not \
                 ended (the test running: t2); ignored: each begin needs an end of the same name \
                 (or end())\n"
            ),
            "agent={agent}: {err}"
        );
        let d = CovData::parse(&std::fs::read(&data).unwrap()).unwrap();
        assert!(
            d.tests.contains_key("t2"),
            "agent={agent}: {:?}",
            d.tests.keys()
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// The hash and counters of p/A compiled under `classes` (every counter 1 but the first).
fn a_data(classes: &Path) -> (u64, Vec<u64>) {
    let bytes = std::fs::read(classes.join("p/A.class")).unwrap();
    let hash = bci_rewriter::coverage::class_hash(&bytes);
    let n = bci_rewriter::coverage::plan_class(&bytes, bci_rewriter::flow::Split::AfterCalls)
        .unwrap()
        .counters as usize;
    let mut counts = vec![1u64; n];
    counts[0] = 0;
    (hash, counts)
}

/// One covfile with data of two builds of a class (the old and the new build both ran into
/// it): the stale line says that its data of the build under --classes is reported and which
/// build's is left out; it said the file's data was from another build, as if all of it was
/// left out. A file of the other build alone keeps the plain line.
#[test]
fn stale_data_beside_the_reported_build_in_one_file_is_told() {
    let work = fresh_work("stale-both");
    let classes = work.join("classes");
    javac_into(&work, &classes, &[A]);
    let (hash, counts) = a_data(&classes);
    let (both, old) = (work.join("both.cov"), work.join("old.cov"));
    write_data(&both, &[("p/A", hash, &counts), ("p/A", 1, &[0, 1])]);
    let mut d = CovData::parse(&std::fs::read(&both).unwrap()).unwrap();
    d.sessions[0].id = "host-2-2".into();
    d.classes.retain(|k, _| k.1 == 1);
    d.classes.insert(("p/A".into(), 2), vec![0, 1]);
    std::fs::write(&old, d.to_bytes()).unwrap();
    let (code, out, err) = run_bci(&[
        os("report"),
        os(&both),
        os(&old),
        os("--classes"),
        os(&classes),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("1 class analysed, 1 with data"), "{out}");
    assert!(
        err.contains(&format!(
            "stale: p/A: {} holds data of two builds of this class: build 0000000000000001 \
             (another build: left out of the counts) and build {hash:016x} (the one under \
             --classes: reported)\n",
            both.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "stale: p/A: the data in {} is from another build of this class (left out of the \
             counts)\n",
            old.display()
        )),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// `bci merge --ignore-stale --classes PATH` where PATH holds neither build of a class: the
/// build kept (the first input's) is named with why, saying that --classes did not choose; it
/// read as if it were the build under --classes.
#[test]
fn merge_says_when_classes_hold_neither_build() {
    let work = fresh_work("merge-neither");
    let classes = work.join("classes");
    javac_into(&work, &classes, &[A]);
    let empty = work.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (a, b) = (work.join("a.cov"), work.join("b.cov"));
    write_data(&a, &[("p/A", 1, &[0, 1])]);
    let mut d = CovData::parse(&std::fs::read(&a).unwrap()).unwrap();
    d.sessions[0].id = "host-2-2".into();
    d.classes = [(("p/A".to_string(), 2), vec![0, 1])].into_iter().collect();
    std::fs::write(&b, d.to_bytes()).unwrap();
    for (dir, why) in [
        (&empty, "it is under no --classes path"),
        (
            &classes,
            "the --classes paths hold another build of it, which the data has none of",
        ),
    ] {
        let out_cov = work.join("m.cov");
        let (code, out, err) = run_bci(&[
            os("merge"),
            os("--ignore-stale"),
            os(&a),
            os(&b),
            os("--classes"),
            os(dir),
            os("-o"),
            os(&out_cov),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(
            err.contains(&format!(
                "bci: {}: p/A: data of build 0000000000000002 left out; kept: build \
                 0000000000000001 (of {}, the first input that has the class: {why})\n",
                b.display(),
                a.display()
            )),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// A record's hand-written accessor, which compiles to the generated one's three instructions
/// (`aload_0; getfield; ireturn`), is the program's code and is reported (it was filtered as a
/// generated record member, so its line and method were in no count: hunt Q), also when no
/// member of its record is generated (hunt K); the generated accessors, on the record header's
/// line, stay filtered.
#[test]
fn a_hand_written_record_accessor_is_reported() {
    let work = fresh_work("recordaccessor");
    let classes = work.join("classes");
    let src = "public class R {\n\
               \x20   record P(int x,\n\
               \x20            int y) {\n\
               \x20       public int x() {\n\
               \x20           return x;\n\
               \x20       }\n\
               \x20   }\n\
               \x20   record M(long c) {\n\
               \x20       public long c() {\n\
               \x20           return c;\n\
               \x20       }\n\
               \x20       M {\n\
               \x20           if (c < 0) throw new IllegalArgumentException();\n\
               \x20       }\n\
               \x20       public String toString() { return c + \"c\"; }\n\
               \x20       public boolean equals(Object o) { return o == this; }\n\
               \x20       public int hashCode() { return 1; }\n\
               \x20   }\n\
               \x20   public static void main(String[] a) {\n\
               \x20       P p = new P(1, 2);\n\
               \x20       M m = new M(5);\n\
               \x20       System.out.println(p.x() + p.x() + p.y() + m.c() + m.c());\n\
               \x20   }\n\
               }\n";
    javac_into(&work, &classes, &[("R.java", src)]);
    let (_, _, lcov) = offline_lcov(&work, &classes, "R", "14\n");
    let has = |l: &str| lcov.lines().any(|x| x == l);
    assert!(
        has("FN:5,R$P.x()I") && has("FNDA:2,R$P.x()I") && has("DA:5,2"),
        "{lcov}"
    );
    // the generated accessor y() and the canonical constructor are on the header's line 2
    assert!(!lcov.contains("R$P.y()I") && has("DA:2,1"), "{lcov}");
    // a record whose every other member is written out (no member javac generated says where
    // its header is): its accessor on lines of its own is reported too (hunt K)
    assert!(
        has("FN:10,R$M.c()J") && has("FNDA:2,R$M.c()J") && has("DA:10,2"),
        "{lcov}"
    );
}

/// A synthetic class is left out of every count, as JaCoCo leaves javac's (an enum switch's
/// `$SwitchMap$` holder); when a method of one other than its `<clinit>` ran, the report says
/// so and names it (Groovy keeps a trait's methods in a synthetic `…$Trait$Helper`: they were
/// in no count, and nothing said so: hunt Y). The switch-map holder, whose code is its
/// `<clinit>`, is not named.
#[test]
fn a_synthetic_class_that_ran_is_named() {
    let work = fresh_work("synthetic-ran");
    let classes = work.join("classes");
    let src = "public class S {\n\
               \x20   enum E { A, B }\n\
               \x20   static int pick(E e) {\n\
               \x20       switch (e) { case A: return 1; default: return 2; }\n\
               \x20   }\n\
               \x20   public static void main(String[] a) {\n\
               \x20       System.out.println(Helper.greet() + pick(E.B));\n\
               \x20   }\n\
               }\n\
               class Helper {\n\
               \x20   static String greet() { return \"hi\"; }\n\
               }\n";
    javac_into(&work, &classes, &[("S.java", src)]);
    // Helper made synthetic, as Groovy makes a trait's helper class
    let helper = classes.join("Helper.class");
    let mut b = std::fs::read(&helper).unwrap();
    let at = bci::ClassFile::parse(&b).unwrap().header_end;
    let flags = u16::from_be_bytes([b[at], b[at + 1]]) | 0x1000;
    b[at..at + 2].copy_from_slice(&flags.to_be_bytes());
    std::fs::write(&helper, b).unwrap();
    assert!(
        classes.join("S$1.class").exists(),
        "javac's switch-map holder"
    );
    let (_, out, lcov) = offline_lcov(&work, &classes, "S", "hi2\n");
    assert!(
        out.contains(
            "bci: note: 1 synthetic class ran and is in no count (compiler-generated classes \
             are left out, as JaCoCo leaves them; Groovy keeps a trait's methods in one, \
             `…$Trait$Helper`): Helper"
        ),
        "{out}"
    );
    assert!(!out.contains("S$1"), "{out}");
    assert!(
        !lcov.contains("Helper") && lcov.contains("FNDA:1,S.main"),
        "{lcov}"
    );
}
