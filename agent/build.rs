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
    let status = Command::new(javac())
        // jdk.internal.vm.annotation.DontInline is honoured for boot-loader classes; exporting
        // it to the compilation is not allowed with --release, hence -source/-target.
        .args([
            "-source",
            "11",
            "-target",
            "11",
            "-Xlint:-options",
            "--add-exports",
            "java.base/jdk.internal.vm.annotation=ALL-UNNAMED",
            "-g:none",
            "-d",
        ])
        .arg(&out)
        .arg(&src)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("javac failed on {}: {s}", src.display()),
        Err(e) => panic!("cannot run javac (set JAVA_HOME): {e}"),
    }
    // The same runtime as java.lang.BciProbes, a member of java.base (defined by the agent at
    // early VMStart): callable from every module without read edges, and before VMInit.
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let text = text
        .replace("package bci.runtime;", "package java.lang;")
        .replace("class Probes ", "class BciProbes ")
        .replace("private Probes()", "private BciProbes()")
        .replace("Probes.class", "BciProbes.class");
    let gen = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into())).join("gen");
    let gen_src = gen.join("java/lang/BciProbes.java");
    std::fs::create_dir_all(gen.join("java/lang")).expect("create OUT_DIR/gen");
    std::fs::write(&gen_src, text).expect("write BciProbes.java");
    let status = Command::new(javac())
        .args([
            "-source",
            "11",
            "-target",
            "11",
            "-Xlint:-options",
            "-g:none",
        ])
        .arg("--patch-module")
        .arg(format!("java.base={}", gen.display()))
        .arg("-d")
        .arg(&out)
        .arg(&gen_src)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("javac failed on {}: {s}", gen_src.display()),
        Err(e) => panic!("cannot run javac (set JAVA_HOME): {e}"),
    }
}
