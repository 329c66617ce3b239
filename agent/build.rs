//! Compiles the Java runtime (java/bci/runtime/*.java) with javac into OUT_DIR; the agent embeds
//! the class files and defines them in the boot loader at VMInit.
use std::path::PathBuf;
use std::process::Command;

fn javac() -> PathBuf {
    if let Ok(home) = std::env::var("JAVA_HOME") {
        let p = PathBuf::from(home).join("bin/javac");
        if p.exists() {
            return p;
        }
    }
    let p = PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64/bin/javac");
    if p.exists() {
        return p;
    }
    PathBuf::from("javac")
}

fn main() {
    let src = PathBuf::from("java/bci/runtime/Probes.java");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-env-changed=JAVA_HOME");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into())).join("java");
    // jdk.internal.vm.annotation.DontInline is honoured for boot-loader classes; exporting
    // it to the compilation is not allowed with --release, hence -source/-target.
    run_javac(
        &[
            "--add-exports",
            "java.base/jdk.internal.vm.annotation=ALL-UNNAMED",
        ],
        &out,
        &src,
    );
    // The offline runtime (bci runtime-jar): method ids for classes instrumented by
    // `bci instrument` and the standalone recorder, next to bci.runtime.Probes.
    let offline = PathBuf::from("java/bci/runtime/Offline.java");
    println!("cargo:rerun-if-changed={}", offline.display());
    let cp = out.display().to_string();
    run_javac(&["-cp", &cp], &out, &offline);
    // The coverage runtime (bci runtime-jar; offline coverage): per-thread counter arrays.
    // Compiled against Offline (just built): -Dbci.covfile= is expanded by Offline.expand,
    // the one expansion of -Dbci.file= (a public method: under an agent that defines Offline
    // in the boot loader, this Cov on the class path calls the boot loader's copy).
    let cov = PathBuf::from("java/bci/runtime/Cov.java");
    println!("cargo:rerun-if-changed={}", cov.display());
    run_javac(&["-cp", &cp], &out, &cov);
    // Per-test coverage under the JUnit Platform (bci runtime-jar, found through ServiceLoader):
    // compiled against stand-ins of the JUnit types it names (never written: -implicit:none).
    let junit = PathBuf::from("java/bci/runtime/JUnitListener.java");
    println!("cargo:rerun-if-changed={}", junit.display());
    println!("cargo:rerun-if-changed=java/junit-stubs");
    run_javac(
        &[
            "-cp",
            &cp,
            "-sourcepath",
            "java/junit-stubs",
            "-implicit:none",
        ],
        &out,
        &junit,
    );
    // The runtime jar holds every class compiled into bci/runtime (nested ones included):
    // listed here so that a new class cannot be left out of it.
    runtime_jar_list(&out);
    // The same runtime as java.lang.BciProbes, a member of java.base (defined by the agent at
    // early VMStart): callable from every module without read edges, and before VMInit. Two
    // builds: one reads the thread's state from the fields the agent adds to java.lang.Thread,
    // the other (used if Thread could not get them) looks it up like bci.runtime.Probes.
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()));
    java_lang_variant(&field_lookup(&text), &out_dir.join("gen"), &out, true);
    java_lang_variant(
        &text,
        &out_dir.join("gen-fallback"),
        &out_dir.join("java-fallback"),
        false,
    );
    // The agent's coverage runtime, java.lang.BciCov (java/cov/), compiled against a stub
    // Thread with the field the agent adds for it (COV_THREAD_FIELD in src/rewrite.rs).
    let bcicov = PathBuf::from("java/cov/java/lang/BciCov.java");
    println!("cargo:rerun-if-changed={}", bcicov.display());
    let cov_gen = out_dir.join("gen-cov");
    std::fs::create_dir_all(cov_gen.join("java/lang")).expect("create OUT_DIR/gen-cov");
    let cov_src = cov_gen.join("java/lang/BciCov.java");
    std::fs::copy(&bcicov, &cov_src).unwrap_or_else(|e| panic!("copy BciCov.java: {e}"));
    std::fs::write(
        cov_gen.join("java/lang/Thread.java"),
        "package java.lang;\n\
         public class Thread implements Runnable {\n\
         long[][] bci$c;\n\
         public static native Thread currentThread();\n\
         public void run() {}\n\
         }\n",
    )
    .expect("write the Thread stub");
    let patch = format!("java.base={}", cov_gen.display());
    run_javac(
        &["-implicit:none", "--patch-module", &patch],
        &out_dir.join("java-cov"),
        &cov_src,
    );
    // The tracing runtime (rule files with count/time/trace rules) as java.lang.BciTrace, a
    // member of java.base like java.lang.BciProbes (JDK classes can be traced). String
    // concatenation inline: no invokedynamic bootstrap inside the runtime.
    let trace = PathBuf::from("java/bci/runtime/Trace.java");
    println!("cargo:rerun-if-changed={}", trace.display());
    let text =
        std::fs::read_to_string(&trace).unwrap_or_else(|e| panic!("{}: {e}", trace.display()));
    let text = text
        .replace("package bci.runtime;", "package java.lang;")
        .replace("class Trace ", "class BciTrace ")
        .replace("private Trace()", "private BciTrace()")
        .replace("Trace.class", "BciTrace.class");
    let gen = out_dir.join("gen-trace");
    std::fs::create_dir_all(gen.join("java/lang")).expect("create OUT_DIR/gen-trace");
    let gen_src = gen.join("java/lang/BciTrace.java");
    std::fs::write(&gen_src, text).expect("write BciTrace.java");
    // BciTrace pauses java.lang.BciProbes's recording while it works (BciProbes.pause/resume,
    // the same in both builds): compiled against the class files just built, next to it in
    // the patched java.base for this compilation only (-implicit:none: not written again)
    for e in std::fs::read_dir(out.join("java/lang")).expect("read OUT_DIR/java/java/lang") {
        let e = e.expect("read OUT_DIR/java/java/lang");
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("BciProbes") && name.ends_with(".class") {
            std::fs::copy(e.path(), gen.join("java/lang").join(&name))
                .unwrap_or_else(|err| panic!("copy {name}: {err}"));
        }
    }
    let patch = format!("java.base={}", gen.display());
    run_javac(
        &[
            "-implicit:none",
            "-XDstringConcat=inline",
            "--patch-module",
            &patch,
        ],
        &out,
        &gen_src,
    );
    // bci.runtime.Probes forwarding to java.lang.BciProbes: what offline-instrumented classes
    // call under the agent's built-in rules. Compiled against the java.lang.BciProbes class
    // just built (patched into java.base for this compilation only).
    let fwd = PathBuf::from("java/forward/bci/runtime/Probes.java");
    println!("cargo:rerun-if-changed={}", fwd.display());
    let patch_dir = out_dir.join("forward-patch");
    std::fs::create_dir_all(patch_dir.join("java/lang")).expect("create forward-patch");
    for c in ["BciProbes.class", "BciProbes$T.class"] {
        std::fs::copy(
            out.join("java/lang").join(c),
            patch_dir.join("java/lang").join(c),
        )
        .unwrap_or_else(|e| panic!("copy {c}: {e}"));
    }
    std::fs::copy(
        out_dir.join("java-cov/java/lang/BciCov.class"),
        patch_dir.join("java/lang/BciCov.class"),
    )
    .unwrap_or_else(|e| panic!("copy BciCov.class: {e}"));
    let patch = format!("java.base={}", patch_dir.display());
    run_javac(
        &["--patch-module", &patch],
        &out_dir.join("java-forward"),
        &fwd,
    );
    // bci.runtime.Cov forwarding to java.lang.BciCov (coverage=y, offline-covered classes)
    let fwd_cov = PathBuf::from("java/forward/bci/runtime/Cov.java");
    println!("cargo:rerun-if-changed={}", fwd_cov.display());
    run_javac(
        &["--patch-module", &patch],
        &out_dir.join("java-forward"),
        &fwd_cov,
    );
}

/// Compiles `text` (Probes.java) as java.lang.BciProbes into `out`, sources under `gen`.
fn java_lang_variant(text: &str, gen: &std::path::Path, out: &std::path::Path, stub: bool) {
    let text = text
        .replace("package bci.runtime;", "package java.lang;")
        .replace("class Probes ", "class BciProbes ")
        .replace("private Probes()", "private BciProbes()")
        .replace("Probes.class", "BciProbes.class");
    let gen_src = gen.join("java/lang/BciProbes.java");
    std::fs::create_dir_all(gen.join("java/lang")).expect("create OUT_DIR/gen");
    std::fs::write(&gen_src, text).expect("write BciProbes.java");
    let stub_src = gen.join("java/lang/Thread.java");
    if stub {
        // javac must see the fields the agent adds to java.lang.Thread (THREAD_FIELDS in
        // src/rewrite.rs): a stub Thread with them shadows the real one for this compilation
        // only (-implicit:none: no class file is written for the stub).
        std::fs::write(
            &stub_src,
            "package java.lang;\n\
             public class Thread implements Runnable {\n\
             BciProbes.T bci$t;\n\
             public static native Thread currentThread();\n\
             static native Thread currentCarrierThread();\n\
             public final String getName() { return null; }\n\
             public final ThreadGroup getThreadGroup() { return null; }\n\
             public void run() {}\n\
             }\n",
        )
        .expect("write the Thread stub");
    } else {
        let _ = std::fs::remove_file(&stub_src);
    }
    let patch = format!("java.base={}", gen.display());
    run_javac(&["-implicit:none", "--patch-module", &patch], out, &gen_src);
}

/// javac -source 11 -target 11 -g:none EXTRA -d OUT SRC; panics (with the reason) on failure.
fn run_javac(extra: &[&str], out: &std::path::Path, src: &std::path::Path) {
    let status = Command::new(javac())
        .args([
            "-source",
            "11",
            "-target",
            "11",
            "-Xlint:-options",
            "-g:none",
        ])
        .args(extra)
        .arg("-d")
        .arg(out)
        .arg(src)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("javac failed on {}: {s}", src.display()),
        Err(e) => panic!("cannot run javac (set JAVA_HOME): {e}"),
    }
}

/// The java.lang.BciProbes variant finds a thread's state through fields added to
/// java.lang.Thread: drops the `@thread-lookup fallback` block and uncomments the
/// `@thread-lookup field` block.
fn field_lookup(text: &str) -> String {
    let begin = "    // @thread-lookup fallback begin";
    let end = "    // @thread-lookup fallback end";
    let (b, e) = match (text.find(begin), text.find(end)) {
        (Some(b), Some(e)) if b < e => (b, e + end.len()),
        _ => panic!("Probes.java: no @thread-lookup fallback block"),
    };
    let text = format!("{}{}", &text[..b], &text[e..]);
    let open = "    /* @thread-lookup field begin";
    let close = "    @thread-lookup field end */";
    assert!(
        text.contains(open) && text.contains(close),
        "Probes.java: no @thread-lookup field block"
    );
    // the probes read the field themselves: one call less in the interpreter and in C1 code
    text.replace(open, "")
        .replace(close, "")
        .replace("T s = cur();", "T s = Thread.currentThread().bci$t;")
}

/// Writes OUT_DIR/runtime_jar_classes.rs: a `&[(jar path, bytes)]` of every class file under
/// `out`/bci/runtime, sorted.
fn runtime_jar_list(out: &std::path::Path) {
    let dir = out.join("bci/runtime");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".class"))
        .collect();
    names.sort();
    let mut src = String::from("&[\n");
    for n in names {
        src.push_str(&format!(
            "    (\"bci/runtime/{n}\", include_bytes!({:?})),\n",
            dir.join(&n).display().to_string()
        ));
    }
    src.push_str("]\n");
    let dst = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()))
        .join("runtime_jar_classes.rs");
    std::fs::write(&dst, src).unwrap_or_else(|e| panic!("{}: {e}", dst.display()));
}
