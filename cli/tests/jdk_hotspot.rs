//! Rewrite every class of the JDK 17 image, then have HotSpot link (and so verify, with
//! -Xverify:all) every rewritten class via --patch-module: 0 VerifyErrors / ClassFormatErrors.
//! The rewritten java.base also runs the JVM that performs the check.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};
use std::path::{Path, PathBuf};
use std::process::Command;

fn rules(toml: &str) -> Rules {
    Rules::parse(toml, "test.toml").unwrap()
}

/// Rewrites the corpus into `out` (modules layout) and adds java/lang/BciProbe to java.base.
/// Returns (classes rewritten, methods instrumented).
fn rewrite_corpus(r: &Rules, opts: &Options, out: &Path) -> (usize, u32) {
    rewrite_image(&common::jdk_corpus(), &common::java_home(), r, opts, out)
}

fn rewrite_image(src: &Path, jh: &Path, r: &Rules, opts: &Options, out: &Path) -> (usize, u32) {
    let mut reg = SequentialIds(0);
    let n = rewrite_image_with(src, jh, out, &mut |bytes| {
        instrument_with(bytes, r, &mut reg, opts)
    });
    (n, reg.0)
}

/// Rewrites every class of the image at `src` with `rewrite` into `out`, checks each output
/// with our parser and verifier, and compiles the no-op probe class into java.base.
fn rewrite_image_with(
    src: &Path,
    jh: &Path,
    out: &Path,
    rewrite: &mut dyn FnMut(&[u8]) -> Result<Outcome, bci::Error>,
) -> usize {
    let _ = std::fs::remove_dir_all(out);
    let mut rewritten = 0;
    let mut failures = Vec::new();
    // Our independent verifier judges every rewritten class too (the JDK image is its hierarchy).
    let hierarchy =
        bci_verify::ClassPath::new(&[src.to_path_buf()], false).expect("JDK class path");
    let mut verify_errors = Vec::new();
    for f in common::class_files(src) {
        let bytes = std::fs::read(&f).unwrap();
        let rel = f.strip_prefix(src).unwrap();
        match rewrite(&bytes) {
            Ok(Outcome::Rewritten(b)) => {
                // Our own re-parse and full check of the output.
                let cf = bci::ClassFile::parse(&b)
                    .unwrap_or_else(|e| panic!("{}: reparse: {e}", rel.display()));
                cf.check()
                    .unwrap_or_else(|e| panic!("{}: check: {e}", rel.display()));
                for e in bci_verify::verify_class(&b, &hierarchy) {
                    verify_errors.push(e.to_string());
                }
                let p = out.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, b).unwrap();
                rewritten += 1;
            }
            Ok(Outcome::Unchanged) => {}
            Err(e) => failures.push(format!("{}: {e}", rel.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} classes failed to rewrite:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    assert!(
        verify_errors.is_empty(),
        "bci-verify found {} errors in rewritten classes:\n{}",
        verify_errors.len(),
        verify_errors[..verify_errors.len().min(20)].join("\n")
    );
    // The probe class, compiled into java.base.
    let probe_src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probe");
    let st = Command::new(jh.join("bin/javac"))
        .args([
            "--patch-module",
            &format!("java.base={}", probe_src.display()),
            "-d",
        ])
        .arg(out.join("java.base"))
        .arg(probe_src.join("BciProbe.java"))
        .status()
        .unwrap();
    assert!(st.success());
    rewritten
}

fn check_hotspot(out: &Path) {
    check_hotspot_with(&common::java_home(), out)
}

fn check_hotspot_with(jh: &Path, out: &Path) {
    let verdicts = bci_verify::oracle::run_hotspot(jh, out, true, &[]).expect("oracle ran");
    let total = verdicts.len();
    let ok = verdicts.iter().filter(|v| v.ok).count();
    let rejected: Vec<_> = verdicts.iter().filter(|v| v.rejected()).collect();
    let other: Vec<_> = verdicts.iter().filter(|v| !v.ok && !v.rejected()).collect();
    eprintln!(
        "hotspot: {total} classes, {ok} linked and verified, {} rejected, {} other",
        rejected.len(),
        other.len()
    );
    for v in other.iter().take(5) {
        eprintln!("  other: {} {:?}: {}", v.class, v.kind, v.message);
    }
    assert!(total > 20_000, "only {total} verdicts");
    assert!(
        rejected.is_empty(),
        "{} classes rejected by HotSpot:\n{}",
        rejected.len(),
        rejected
            .iter()
            .take(20)
            .map(|v| format!("{}: {}", v.class, v.message))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Link failures unrelated to verification (missing optional deps) must stay rare.
    assert!(
        ok * 100 >= total * 98,
        "only {ok} of {total} classes linked"
    );
}

fn scratch(name: &str) -> PathBuf {
    common::workspace().join("target/test-out").join(name)
}

/// The agent's form of the probes: pure leaves get leafEnter/leafExit, other methods keep
/// enterT's token in a new local for exitT/unwindT (the plain form: the wide-jumps test),
/// JDK 21+'s VirtualThread.mount calls the runtime's `mounted()`, unmount its `unmounting()`,
/// and the calls of HotSpot intrinsics are wrapped in enterT/exitT (their bodies unprobed).
fn agent_options() -> Options {
    Options {
        leaf_probes: true,
        frame_tokens: true,
        mount_hook: true,
        intrinsic_sites: true,
        ..Default::default()
    }
}

#[test]
fn jdk_probes_at_entry_exit_and_catch_all_verify_in_hotspot() {
    let r = rules("[runtime]\nclass = \"java/lang/BciProbe\"\n[[rule]]\nprobes = [\"enter\", \"exit\", \"unwind\"]\n");
    let out = scratch("jdk-probes");
    let (classes, methods) = rewrite_corpus(&r, &agent_options(), &out);
    eprintln!("rewrote {classes} classes, {methods} methods");
    assert!(classes > 20_000 && methods > 150_000);
    check_hotspot(&out);
}

#[test]
fn jdk_timer_local_verifies_in_hotspot() {
    let r = rules(
        "[runtime]\nclass = \"java/lang/BciProbe\"\n[[rule]]\nprobes = [\"timer\", \"unwind\"]\n",
    );
    let out = scratch("jdk-timer");
    let (classes, _) = rewrite_corpus(&r, &Options::default(), &out);
    assert!(classes > 20_000);
    check_hotspot(&out);
}

#[test]
fn jdk_forced_wide_jumps_verify_in_hotspot() {
    let r = rules("[runtime]\nclass = \"java/lang/BciProbe\"\n[[rule]]\nprobes = [\"enter\", \"exit\", \"unwind\"]\n");
    let out = scratch("jdk-wide");
    let (classes, _) = rewrite_corpus(
        &r,
        &Options {
            force_wide_jumps: true,
            ..Default::default()
        },
        &out,
    );
    assert!(classes > 20_000);
    check_hotspot(&out);
}

/// JDK 25 (class files 69.0), when installed: rewrite its whole image and have HotSpot 25 verify it.
#[test]
fn jdk25_probes_verify_in_hotspot_25_when_installed() {
    let (Some(src), Some(jh)) = (common::jdk25_corpus(), common::jdk25_home()) else {
        eprintln!("SKIPPED: no JDK 25 at /usr/lib/jvm/temurin-25-jdk-amd64");
        return;
    };
    let r = rules("[runtime]\nclass = \"java/lang/BciProbe\"\n[[rule]]\nprobes = [\"enter\", \"exit\", \"unwind\", \"timer\"]\n");
    let out = scratch("jdk25-probes");
    let (classes, methods) = rewrite_image(&src, &jh, &r, &agent_options(), &out);
    eprintln!("JDK 25: rewrote {classes} classes, {methods} methods");
    assert!(classes > 20_000);
    check_hotspot_with(&jh, &out);
}

/// Coverage counters (every method, split after calls) in every JDK class: HotSpot and our
/// verifier accept all of them.
#[test]
fn jdk_coverage_counters_verify_in_hotspot() {
    use bci_rewriter::coverage::{instrument, ClassId, Options as CovOptions, Skipped};
    use bci_rewriter::flow::Split;
    let out = scratch("jdk-coverage");
    let (mut methods, mut skipped, mut max_counters) = (0usize, Vec::new(), 0);
    let mut id = 0;
    let classes = rewrite_image_with(
        &common::jdk_corpus(),
        &common::java_home(),
        &out,
        &mut |b| {
            id += 1;
            let opts = CovOptions {
                runtime: "java/lang/BciProbe",
                split: Split::AfterCalls,
                class_id: ClassId::Constant(id),
            };
            let (o, cov) = instrument(b, &opts)?;
            methods += cov.methods.len();
            max_counters = max_counters.max(cov.counters);
            for (m, d, why) in cov.skipped {
                if let Skipped::Error(e) = why {
                    skipped.push(format!("{}.{m}{d}: {e}", cov.name));
                }
            }
            Ok(o)
        },
    );
    eprintln!(
        "coverage: {classes} classes, {methods} methods, {} left original",
        skipped.len()
    );
    for s in skipped.iter().take(10) {
        eprintln!("  {s}");
    }
    assert!(classes > 20_000 && methods > 150_000);
    assert!(
        max_counters <= 32768,
        "the probe's array is too small for {max_counters}"
    );
    // Every method with code gets its counters (switch edges through trampolines).
    assert!(
        skipped.is_empty(),
        "{}",
        skipped[..skipped.len().min(20)].join("\n")
    );
    check_hotspot(&out);
}

/// Class files before version 50 have no StackMapTable: HotSpot checks them with its old
/// inference verifier. guava's and rhino's classes turned into version-49 files, in the
/// agent's form (constructors call enterT before their super()/this() call, handlers over a
/// call start with exitT(token + 2)): HotSpot and our verifier accept every one.
#[test]
fn version_49_classes_in_the_agent_form_verify_in_hotspot() {
    let jars = [
        Path::new("/usr/share/java/guava.jar"),
        Path::new("/usr/share/java/js.jar"),
    ];
    if let Some(j) = jars.iter().find(|j| !j.exists()) {
        eprintln!(
            "SKIPPED: {} missing (libguava-java, librhino-java)",
            j.display()
        );
        return;
    }
    let r = rules("[runtime]\nclass = \"java/lang/BciProbe\"\n[[rule]]\nprobes = [\"enter\", \"exit\", \"unwind\"]\n");
    let out = scratch("v49-agent-form");
    let _ = std::fs::remove_dir_all(&out);
    let mut hierarchy_path: Vec<PathBuf> = jars.iter().map(|j| j.to_path_buf()).collect();
    hierarchy_path.push(common::jdk_corpus());
    let hierarchy = bci_verify::ClassPath::new(&hierarchy_path, false).expect("class path");
    let (mut classes, mut ctors, mut resets) = (0, 0, 0);
    let mut verify_errors = Vec::new();
    let mut reg = SequentialIds(0);
    for j in jars {
        for (name, bytes) in bci_verify::ClassPath::read_all(j).unwrap() {
            let Some(old) = bci_verify::mutate::downgrade_to_49(&bytes) else {
                continue;
            };
            let b = match instrument_with(&old, &r, &mut reg, &agent_options()) {
                Ok(Outcome::Rewritten(b)) => b,
                Ok(Outcome::Unchanged) => old,
                Err(e) => panic!("{name}: {e}"),
            };
            let cf = bci::ClassFile::parse(&b).unwrap();
            for m in &cf.methods {
                let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
                    continue;
                };
                let code = bci::CodeAttr::parse(&cf, a).unwrap();
                let insns = code.decode_all().unwrap();
                let name_of = |i: &bci::Insn| {
                    cf.cp
                        .member_ref(i.cp_index(code.code).unwrap())
                        .map(|r| r.name.to_string())
                        .unwrap_or_default()
                };
                if cf.member_name(m) == "<init>" {
                    // enterT comes before the first invokespecial <init>
                    let first = |n: &str, o: u8| {
                        insns.iter().position(|i| i.opcode == o && name_of(i) == n)
                    };
                    if let (Some(e), Some(s)) = (
                        first("enterT", bci::opcodes::op::INVOKESTATIC),
                        first("<init>", bci::opcodes::op::INVOKESPECIAL),
                    ) {
                        assert!(e < s, "{name}: enterT after the first <init> call");
                        ctors += 1;
                    }
                }
                resets += insns
                    .windows(2)
                    .filter(|w| {
                        w[0].opcode == bci::opcodes::op::IADD
                            && w[1].opcode == bci::opcodes::op::INVOKESTATIC
                            && name_of(&w[1]) == "exitT"
                    })
                    .count();
            }
            for e in bci_verify::verify_class(&b, &hierarchy) {
                verify_errors.push(format!("{name}: {e}"));
            }
            let p = out.join(&name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b).unwrap();
            classes += 1;
        }
    }
    eprintln!("version 49: {classes} classes, {ctors} constructors entered before super(), {resets} handler resets");
    assert!(
        classes > 1_000 && ctors > 1_000 && resets > 100,
        "{classes} {ctors} {resets}"
    );
    assert!(
        verify_errors.is_empty(),
        "bci-verify: {} errors:\n{}",
        verify_errors.len(),
        verify_errors[..verify_errors.len().min(20)].join("\n")
    );
    // the jars after the rewritten classes: the classes that have no version-49 form
    let jar_path: Vec<PathBuf> = jars.iter().map(|j| j.to_path_buf()).collect();
    let verdicts = bci_verify::oracle::run_hotspot(&common::java_home(), &out, false, &jar_path)
        .expect("oracle ran");
    let ok = verdicts.iter().filter(|v| v.ok).count();
    let rejected: Vec<_> = verdicts.iter().filter(|v| v.rejected()).collect();
    eprintln!(
        "hotspot: {} classes, {ok} linked and verified, {} rejected",
        verdicts.len(),
        rejected.len()
    );
    for v in verdicts.iter().filter(|v| !v.ok && !v.rejected()).take(5) {
        eprintln!("  other: {} {:?}: {}", v.class, v.kind, v.message);
    }
    assert!(
        rejected.is_empty(),
        "{} classes rejected by HotSpot:\n{}",
        rejected.len(),
        rejected
            .iter()
            .take(20)
            .map(|v| format!("{}: {}", v.class, v.message))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        ok * 100 >= verdicts.len() * 95,
        "only {ok} of {} linked",
        verdicts.len()
    );
}
