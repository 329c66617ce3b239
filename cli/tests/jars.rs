//! Jar to jar, `bci instrument` changes only the instrumented classes (issue 14, items 1, 5):
//! a signed jar (signed here with `jarsigner` and a throwaway `keytool` key) loses its signature
//! and runs with `java -cp`; every entry keeps its place, directory entries, timestamp,
//! compression method and bytes (manifest included); `--map` names the release of a class from
//! `META-INF/versions/N/` of a multi-release jar.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn jdk(tool: &str) -> Command {
    Command::new(common::java_home().join("bin").join(tool))
}

fn fresh(name: &str) -> PathBuf {
    let d = common::workspace().join("target/test-out/jars").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles `Hello` (package `p`) and the counting probe into `dir/classes` and `dir/probe`.
fn compile(dir: &Path) -> (PathBuf, PathBuf) {
    let src = dir.join("src/p");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("Hello.java"),
        "package p; public class Hello { static int twice(int x) { return 2 * x; } \
         public static void main(String[] a) { System.out.println(\"hello \" + twice(21)); } }",
    )
    .unwrap();
    let classes = dir.join("classes");
    run(jdk("javac")
        .arg("-d")
        .arg(&classes)
        .arg(src.join("Hello.java")));
    let probe = dir.join("probe");
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/CountProbe.java");
    run(jdk("javac").arg("-d").arg(&probe).arg(fx));
    (classes, probe)
}

fn instrument(input: &Path, output: &Path, extra: &[&str]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("instrument")
        .arg(input)
        .arg(output)
        .args(["--runtime", "CountProbe", "--strict"])
        .args(extra))
}

/// (name, is_dir, DOS date-time, compression method, bytes) of every entry, in order.
type Entry = (String, bool, String, String, Vec<u8>);

fn entries(jar: &Path) -> Vec<Entry> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(jar).unwrap()).unwrap();
    (0..z.len())
        .map(|i| {
            let mut e = z.by_index(i).unwrap();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            (
                e.name().to_string(),
                e.is_dir(),
                format!("{:?}", e.last_modified()),
                format!("{:?}", e.compression()),
                b,
            )
        })
        .collect()
}

#[test]
fn signed_jar_is_instrumented_and_runs() {
    let dir = fresh("signed");
    let (classes, probe) = compile(&dir);
    let jar = dir.join("hello.jar");
    run(jdk("jar")
        .arg("cf")
        .arg(&jar)
        .arg("-C")
        .arg(&classes)
        .arg("."));
    let ks = dir.join("keys.p12");
    run(jdk("keytool")
        .args([
            "-genkeypair",
            "-keyalg",
            "RSA",
            "-keysize",
            "2048",
            "-alias",
            "t",
        ])
        .args([
            "-dname",
            "CN=bci test",
            "-validity",
            "2",
            "-storetype",
            "PKCS12",
        ])
        .arg("-keystore")
        .arg(&ks)
        .args(["-storepass", "changeit", "-keypass", "changeit"]));
    run(jdk("jarsigner")
        .arg("-keystore")
        .arg(&ks)
        .args(["-storepass", "changeit"])
        .arg(&jar)
        .arg("t"));
    let signed = entries(&jar);
    let names: Vec<&str> = signed.iter().map(|e| e.0.as_str()).collect();
    assert!(
        names.contains(&"META-INF/T.SF") && names.contains(&"META-INF/T.RSA"),
        "{names:?}"
    );
    let cp = |j: &Path| format!("{}:{}", j.display(), probe.display());
    let o = run(jdk("java").arg("-cp").arg(cp(&jar)).arg("p.Hello"));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "hello 42");

    let out = dir.join("hello-instrumented.jar");
    let o = instrument(&jar, &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("signed jar").count(),
        1,
        "said once on stderr: {err}"
    );
    assert!(
        err.contains(&jar.display().to_string()) && err.contains("META-INF/T.SF"),
        "{err}"
    );
    let got = entries(&out);
    let names: Vec<&str> = got.iter().map(|e| e.0.as_str()).collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".SF") || n.ends_with(".RSA")),
        "{names:?}"
    );
    let mf = &got
        .iter()
        .find(|e| e.0 == "META-INF/MANIFEST.MF")
        .unwrap()
        .4;
    let mf = String::from_utf8_lossy(mf);
    assert!(!mf.contains("-Digest"), "{mf}");
    assert!(mf.starts_with("Manifest-Version: 1.0"), "{mf}");

    let o = run(jdk("java").arg("-cp").arg(cp(&out)).arg("p.Hello"));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "hello 42");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("probes: enter=2 exit=2"),
        "instrumented: {err}"
    );
}

#[test]
fn jar_entries_order_times_methods_and_manifest_are_kept() {
    let dir = fresh("fidelity");
    let (classes, probe) = compile(&dir);
    // Resources in nested directories with distinct old timestamps, a manifest with a
    // Main-Class, then one more entry added stored (jar -u -0), so both methods occur.
    let res = classes.join("p/res/deep");
    std::fs::create_dir_all(&res).unwrap();
    std::fs::write(res.join("data.txt"), "some text ".repeat(50)).unwrap();
    for (p, t) in [
        ("p/res/deep/data.txt", "2001-02-03 04:05:06"),
        ("p/res/deep", "2002-03-04 05:06:08"),
        ("p/res", "2003-04-05 06:07:08"),
        ("p/Hello.class", "2004-05-06 07:08:10"),
        ("p", "2005-06-07 08:09:10"),
    ] {
        assert!(Command::new("touch")
            .args(["-d", t])
            .arg(classes.join(p))
            .status()
            .unwrap()
            .success());
    }
    let jar = dir.join("app.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&jar)
        .args(["--main-class", "p.Hello", "-C"])
        .arg(&classes)
        .arg("."));
    let extra = dir.join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(extra.join("stored.txt"), "stored ".repeat(40)).unwrap();
    run(jdk("jar")
        .arg("uf0")
        .arg(&jar)
        .arg("-C")
        .arg(&extra)
        .arg("stored.txt"));
    let before = entries(&jar);
    let methods: Vec<&str> = before.iter().map(|e| e.3.as_str()).collect();
    assert!(
        methods.contains(&"Stored") && methods.contains(&"Deflated"),
        "{methods:?}"
    );
    assert!(before.iter().filter(|e| e.1).count() >= 4, "directories");

    let out = dir.join("app-instrumented.jar");
    instrument(&jar, &out, &[]);
    let after = entries(&out);
    let list = |v: &[Entry]| -> Vec<(String, bool, String, String)> {
        v.iter()
            .map(|e| (e.0.clone(), e.1, e.2.clone(), e.3.clone()))
            .collect()
    };
    assert_eq!(
        list(&after),
        list(&before),
        "entries, order, times, methods"
    );
    for (a, b) in after.iter().zip(&before) {
        if a.0 == "p/Hello.class" {
            assert_ne!(a.4, b.4, "Hello.class is instrumented");
        } else {
            assert_eq!(a.4, b.4, "{} changed", a.0);
        }
    }
    // The copy is a working jar (the manifest, Main-Class included, compared above).
    let o = run(jdk("java")
        .arg("-cp")
        .arg(format!("{}:{}", out.display(), probe.display()))
        .arg("p.Hello"));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "hello 42");
}

/// Entries as Info-ZIP `zip` writes them (extra fields with the exact UTC time and the owner,
/// directory type bits and MS-DOS attributes, the text flag, "version made by" 3.0) are copied
/// byte for byte, local header and central directory record, the offset aside; Java then
/// reads the same times (from the UT field) and directories.
#[test]
fn copied_entries_keep_their_headers_attributes_and_extra_fields() {
    if Command::new("zip").arg("-v").output().is_err() {
        eprintln!("skipped: no Info-ZIP zip (apt-get install -y zip)");
        return;
    }
    let dir = fresh("info-zip");
    let (classes, _) = compile(&dir);
    let res = classes.join("res");
    std::fs::create_dir_all(&res).unwrap();
    std::fs::write(res.join("r.txt"), "text\n").unwrap();
    let mut perm = std::fs::metadata(res.join("r.txt")).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o600);
    std::fs::set_permissions(res.join("r.txt"), perm).unwrap();
    run(Command::new("touch")
        .env("TZ", "UTC")
        .args(["-d", "2015-06-07 08:09:11"])
        .arg(res.join("r.txt")));
    let jar = dir.join("app.jar");
    run(Command::new("zip")
        .current_dir(&classes)
        .arg("-qr")
        .arg(&jar)
        .args(["p", "res"]));
    let out = dir.join("app-instrumented.jar");
    instrument(&jar, &out, &[]);

    // name -> (local record, central directory record without its offset)
    let records = |jar: &Path| -> Vec<(String, Vec<u8>, Vec<u8>)> {
        let bytes = std::fs::read(jar).unwrap();
        let mut z = zip::ZipArchive::new(std::fs::File::open(jar).unwrap()).unwrap();
        (0..z.len())
            .map(|i| {
                let e = z.by_index_raw(i).unwrap();
                let local =
                    (e.header_start() as usize)..(e.data_start() + e.compressed_size()) as usize;
                let c = e.central_header_start() as usize;
                let n = |at: usize| u16::from_le_bytes([bytes[c + at], bytes[c + at + 1]]) as usize;
                let mut cen = bytes[c..c + 46 + n(28) + n(30) + n(32)].to_vec();
                cen[42..46].fill(0);
                (e.name().to_string(), bytes[local].to_vec(), cen)
            })
            .collect()
    };
    let (before, after) = (records(&jar), records(&out));
    assert_eq!(before.len(), after.len());
    let mut copied = 0;
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(a.0, b.0, "order");
        if a.0.ends_with(".class") {
            continue;
        }
        assert_eq!(a.1, b.1, "{}: local header and data", a.0);
        assert_eq!(a.2, b.2, "{}: central directory record", a.0);
        copied += 1;
    }
    assert_eq!(copied, 3, "p/, res/, res/r.txt: {before:?}");
    // what was there: Unix directory bits, the MS-DOS directory attribute, the UT field, text
    let (d, t) = (
        &after[0].2,
        &after.iter().find(|e| e.0 == "res/r.txt").unwrap().2,
    );
    assert_eq!(after[0].0, "p/");
    assert_eq!(
        &d[38..42],
        &(0o40755u32 << 16 | 0x10).to_le_bytes(),
        "p/: attributes"
    );
    assert_eq!(t[36] & 1, 1, "res/r.txt: text flag");
    assert_eq!(&t[46 + 9..46 + 11], b"UT", "res/r.txt: extra field");

    // Java's view: the exact time, directories
    let src = dir.join("Times.java");
    std::fs::write(
        &src,
        "public class Times { public static void main(String[] a) throws Exception { \
         try (var z = new java.util.zip.ZipFile(a[0])) { z.stream().forEach(e -> \
         System.out.println(e.getName() + \" \" + e.getLastModifiedTime() + \" \" + e.isDirectory())); } } }",
    )
    .unwrap();
    let times = |jar: &Path| -> Vec<String> {
        let o = run(jdk("java").env("TZ", "Asia/Kolkata").arg(&src).arg(jar));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.contains(".class "))
            .map(str::to_string)
            .collect()
    };
    let t = times(&out);
    assert!(
        t.contains(&"res/r.txt 2015-06-07T08:09:11Z false".to_string()),
        "{t:?}"
    );
    assert_eq!(t, times(&jar));
}

#[test]
fn map_names_the_release_of_multi_release_classes() {
    let dir = fresh("mr");
    let (classes, _probe) = compile(&dir);
    let v11 = dir.join("v11");
    run(jdk("javac")
        .args(["--release", "11", "-d"])
        .arg(&v11)
        .arg(dir.join("src/p/Hello.java")));
    let jar = dir.join("mr.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&jar)
        .arg("-C")
        .arg(&classes)
        .arg(".")
        .args(["--release", "11", "-C"])
        .arg(&v11)
        .arg("."));
    assert!(entries(&jar)
        .iter()
        .any(|e| e.0 == "META-INF/versions/11/p/Hello.class"));
    let map = dir.join("probes.tsv");
    instrument(
        &jar,
        &dir.join("mr-out.jar"),
        &["--map", map.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&map).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    let main_rows: Vec<&Vec<&str>> = rows.iter().filter(|r| r[2] == "main").collect();
    assert_eq!(main_rows.len(), 2, "{text}");
    assert_eq!(main_rows[0].len(), 4, "base class: no release: {text}");
    assert_eq!(main_rows[1][1], "p/Hello");
    assert_eq!(main_rows[1].get(4), Some(&"11"), "{text}");
}

#[test]
fn directory_to_jar_keeps_file_times() {
    let dir = fresh("dir-times");
    let (classes, _probe) = compile(&dir);
    assert!(Command::new("touch")
        .args(["-d", "2004-05-06 07:08:10 UTC"])
        .arg(classes.join("p/Hello.class"))
        .status()
        .unwrap()
        .success());
    let out = dir.join("out.jar");
    instrument(&classes, &out, &[]);
    let got = entries(&out);
    let hello = got.iter().find(|e| e.0 == "p/Hello.class").unwrap();
    assert_eq!(
        hello.2, "Some(DateTime::from_date_and_time(2004, 5, 6, 7, 8, 10)?)",
        "UTC modification time of the file"
    );
}

/// A directory made a jar is laid out as `jar` lays it out: META-INF/ and
/// META-INF/MANIFEST.MF first (JarInputStream.getManifest() reads it only there: it was null
/// behind a file sorting before META-INF, such as A.txt), and an entry for every directory
/// before its files (ClassLoader.getResource("com/acme/") was null without them; found by the
/// new-user hunt).
#[test]
fn directory_to_jar_has_manifest_first_and_directory_entries() {
    let dir = fresh("dir-layout");
    let (classes, _probe) = compile(&dir);
    std::fs::create_dir_all(classes.join("META-INF")).unwrap();
    std::fs::create_dir_all(classes.join("com/acme")).unwrap();
    let manifest = b"Manifest-Version: 1.0\r\nMain-Class: p.Hello\r\n\r\n";
    std::fs::write(classes.join("META-INF/MANIFEST.MF"), manifest).unwrap();
    std::fs::write(classes.join("com/acme/data.txt"), b"data").unwrap();
    std::fs::write(classes.join("A.txt"), b"a").unwrap();
    let out = dir.join("out.jar");
    instrument(&classes, &out, &[]);
    let got = entries(&out);
    let names: Vec<(&str, bool)> = got.iter().map(|e| (e.0.as_str(), e.1)).collect();
    assert_eq!(
        names,
        [
            ("META-INF/", true),
            ("META-INF/MANIFEST.MF", false),
            ("A.txt", false),
            ("com/", true),
            ("com/acme/", true),
            ("com/acme/data.txt", false),
            ("p/", true),
            ("p/Hello.class", false),
        ]
    );
    assert_eq!(got[1].4, manifest);
}

/// A fat jar (BOOT-INF/lib/*.jar inside): the nested jar is copied byte for byte and
/// `bci instrument` says so on stderr (it said nothing, and its classes looked instrumented).
#[test]
fn nested_jars_are_copied_and_named() {
    let dir = fresh("nested");
    let (classes, _) = compile(&dir);
    let inner = dir.join("inner.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&inner)
        .arg("-C")
        .arg(&classes)
        .arg("."));
    let fat = dir.join("fat");
    std::fs::create_dir_all(fat.join("BOOT-INF/lib")).unwrap();
    std::fs::copy(&inner, fat.join("BOOT-INF/lib/inner.jar")).unwrap();
    let outer = dir.join("outer.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&outer)
        .arg("-C")
        .arg(&classes)
        .arg(".")
        .arg("-C")
        .arg(&fat)
        .arg("."));
    let o = instrument(&outer, &dir.join("out.jar"), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.lines()
            .any(|l| l.contains("BOOT-INF/lib/inner.jar: a nested archive, copied as it is")),
        "{err}"
    );
    let nested = entries(&dir.join("out.jar"))
        .into_iter()
        .find(|e| e.0 == "BOOT-INF/lib/inner.jar")
        .unwrap();
    assert_eq!(nested.4, std::fs::read(&inner).unwrap());
}

/// A self-executing jar (a launch script before the zip, as Spring Boot's executable jars:
/// `cat launch.sh app.jar > exec.jar`): the output starts with the same script, byte for byte,
/// its zip offsets are valid (`unzip -l` without a warning, `java -jar`), and it stays
/// executable and runs as `./out.jar` (the script was dropped).
#[test]
fn self_executing_jar_keeps_its_launch_script_and_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = fresh("exec");
    let (classes, probe) = compile(&dir);
    let jar = dir.join("app.jar");
    // the probe inside the jar: `java -jar` takes no class path
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&jar)
        .args(["--main-class", "p.Hello", "-C"])
        .arg(&classes)
        .arg(".")
        .arg("-C")
        .arg(&probe)
        .arg("."));
    let java = common::java_home().join("bin/java");
    let script = format!(
        "#!/bin/sh\n# a launch script, as Spring Boot's\nexec '{}' -jar \"$0\" \"$@\"\nexit 1\n",
        java.display()
    );
    let exec = dir.join("exec.jar");
    let mut bytes = script.as_bytes().to_vec();
    bytes.extend(std::fs::read(&jar).unwrap());
    std::fs::write(&exec, &bytes).unwrap();
    std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = run(&mut Command::new(&exec));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "hello 42");

    let out = dir.join("exec-instrumented.jar");
    instrument(&exec, &out, &["--exclude", "CountProbe"]);
    let got = std::fs::read(&out).unwrap();
    assert!(
        got.starts_with(script.as_bytes()),
        "the launch script first: {:?}",
        String::from_utf8_lossy(&got[..script.len().min(got.len())])
    );
    let mode = std::fs::metadata(&out).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "executable: {mode:o}");
    let o = run(Command::new("unzip").arg("-l").arg(&out));
    let listing = String::from_utf8_lossy(&o.stdout);
    assert!(listing.contains("p/Hello.class"), "{listing}");
    let warned = format!("{listing}{}", String::from_utf8_lossy(&o.stderr));
    assert!(!warned.contains("extra bytes"), "{warned}");
    for o in [
        run(Command::new(&java).arg("-jar").arg(&out)),
        run(&mut Command::new(&out)),
    ] {
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "hello 42");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("probes: enter=2 exit=2"),
            "instrumented: {err}"
        );
    }
    // offsets counted from the start of the file (as Spring Boot writes them, and bci): the
    // script is kept too
    let again = dir.join("again.jar");
    instrument(&out, &again, &["--exclude", "CountProbe"]);
    assert!(std::fs::read(&again)
        .unwrap()
        .starts_with(script.as_bytes()));
}

/// A jar written to a full disk fails with the path and the OS error, not exit 0 with a
/// truncated jar (a small jar's bytes all sit in the output buffer until the zip writer's
/// finish flushes it).
#[test]
fn jar_output_on_a_full_disk_fails() {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let dir = fresh("full");
    let (classes, _) = compile(&dir);
    let jar = dir.join("app.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&jar)
        .arg("-C")
        .arg(&classes)
        .arg("."));
    let out = dir.join("out.jar");
    std::os::unix::fs::symlink("/dev/full", &out).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("instrument")
        .arg(&jar)
        .arg(&out)
        .args(["--runtime", "CountProbe"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "exit 0 on a full disk: {err}");
    assert!(
        err.contains("out.jar") && err.contains("No space left on device"),
        "{err}"
    );
}

/// Every file below `dir`, relative, sorted.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// A jar of these (name, bytes) entries, written by the zip crate as they are.
fn raw_jar(path: &Path, entries: &[(&str, &[u8])]) {
    use std::io::Write;
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in entries {
        z.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

/// Zip slip: a jar whose entry names are absolute, have a `..` component, a backslash, a drive
/// prefix or a NUL is refused whole, before anything is written, naming the jar and the
/// entries, to a directory and to a jar alike (`../../escaped.txt`, `a/../../e2.txt` and an
/// absolute name were written outside the output directory, exit 0).
#[test]
fn jar_with_unsafe_entry_names_is_refused() {
    let dir = fresh("slip");
    let work = dir.join("a/b");
    std::fs::create_dir_all(&work).unwrap();
    let abs = dir.join("abs.txt");
    let evil = dir.join("evil.jar");
    raw_jar(
        &evil,
        &[
            ("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\n\r\n"),
            ("../../escaped.txt", b"x"),
            (abs.to_str().unwrap(), b"y"),
            ("a/../../e2.txt", b"z"),
        ],
    );
    let mut jars = vec![PathBuf::from("evil.jar")];
    for (k, (name, why)) in [
        ("..\\..\\bs.txt", "a backslash in the name"),
        ("C:/drive.txt", "a drive prefix"),
        ("nul\0.txt", "a NUL in the name"),
        ("/abs-only.txt", "an absolute name"),
        ("x/../../../dots.txt", "a `..` component"),
    ]
    .into_iter()
    .enumerate()
    {
        let jar = dir.join(format!("one{k}.jar"));
        raw_jar(&jar, &[("ok.txt", b"ok"), (name, b"!")]);
        jars.push(PathBuf::from(format!("one{k}.jar")));
        for out in [work.join("out"), work.join("out.jar")] {
            let o = Command::new(env!("CARGO_BIN_EXE_bci"))
                .arg("instrument")
                .arg(&jar)
                .arg(&out)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name:?} -> {out:?}: {err}");
            assert_eq!(
                err,
                format!(
                    "bci: {}: entry {name:?} ({why}): an unsafe name: it could be written \
                     outside the output; the input is refused and nothing was written\n",
                    jar.display()
                ),
            );
            assert!(!out.exists(), "{out:?} written");
        }
    }
    for out in [work.join("out"), work.join("out.jar")] {
        let o = Command::new(env!("CARGO_BIN_EXE_bci"))
            .arg("instrument")
            .arg(&evil)
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{out:?}: {err}");
        assert_eq!(
            err,
            format!(
                "bci: {}: 3 entries with unsafe names: they could be written outside the \
                 output; the input is refused and nothing was written: \"../../escaped.txt\" \
                 (a `..` component), {:?} (an absolute name), \"a/../../e2.txt\" (a `..` \
                 component)\n",
                evil.display(),
                abs.display().to_string()
            )
        );
        assert!(!out.exists(), "{out:?} written");
        assert_eq!(files_below(&dir), jars, "files written outside {out:?}");
    }
}

/// `p.Hello` in `dir/app.jar` (and the classes directory it was made of).
fn hello_jar(dir: &Path) -> (PathBuf, PathBuf) {
    let (classes, _) = compile(dir);
    let jar = dir.join("app.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&jar)
        .arg("-C")
        .arg(&classes)
        .arg("."));
    (jar, classes)
}

/// A run into an output directory that fails partway (here a file-size limit, as a full disk
/// does) leaves every file there as it was: the files are written beside their targets and
/// renamed into place once all are written. Before, a class was cut short in place (a
/// `ClassFormatError: Truncated class file` for the JVM) and the directory held two builds
/// (found by the file-systems hunt, on a full tmpfs).
#[test]
fn a_directory_output_is_replaced_whole_or_not_at_all() {
    let dir = fresh("dir-all-or-nothing");
    let src = dir.join("src/p");
    std::fs::create_dir_all(&src).unwrap();
    // one class of ~40 KB (its constants), one small one
    let consts: String = (0..400)
        .map(|i| {
            format!(
                "    static final String S{i} = \"{}\";\n",
                "x".repeat(90) + &i.to_string()
            )
        })
        .collect();
    std::fs::write(
        src.join("Big.java"),
        format!("package p; public class Big {{\n{consts}    static int f(int x) {{ return x + 1; }}\n}}\n"),
    )
    .unwrap();
    std::fs::write(
        src.join("Small.java"),
        "package p; public class Small { static int g(int x) { return x * 3; } }",
    )
    .unwrap();
    let classes = dir.join("classes");
    run(jdk("javac")
        .arg("-d")
        .arg(&classes)
        .arg(src.join("Big.java"))
        .arg(src.join("Small.java")));
    let out = dir.join("out");
    let bci = env!("CARGO_BIN_EXE_bci");
    run(Command::new(bci).arg("instrument").arg(&classes).arg(&out));
    let before: Vec<(String, Vec<u8>)> = ["p/Big.class", "p/Small.class"]
        .iter()
        .map(|n| (n.to_string(), std::fs::read(out.join(n)).unwrap()))
        .collect();
    assert!(before[0].1.len() > 20_000, "{}", before[0].1.len());
    // the same output with coverage counters, under a 16 KiB file-size limit (SIGXFSZ
    // ignored: writes past it fail with EFBIG, as on a full disk)
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 16; exec '{bci}' instrument --coverage '{}' '{}'",
            classes.display(),
            out.display()
        ))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for (n, b) in &before {
        assert!(std::fs::read(out.join(n)).unwrap() == *b, "{n} changed");
    }
    let left: Vec<String> = walk(&out);
    assert_eq!(
        left,
        ["p/Big.class", "p/Small.class"],
        "temporary files left"
    );
}

/// The files under `dir`, relative, sorted.
fn walk(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                v.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    v.sort();
    v
}

/// An output that is a hard link to the input is the input (it was truncated: `bci: a.jar:
/// META-INF/: i/o error`, and the input lost), refused naming both (the input was not named;
/// found by the manuals hunt); an existing output hard-linked elsewhere is
/// replaced, not written through the link (the other name keeps its bytes), for a jar and for
/// the files of an output directory alike.
#[test]
fn hard_links_are_never_written_through() {
    use std::os::unix::fs::MetadataExt;
    let dir = fresh("hardlink");
    let (jar, classes) = hello_jar(&dir);
    let before = std::fs::read(&jar).unwrap();
    let same = dir.join("same.jar");
    std::fs::hard_link(&jar, &same).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("instrument")
        .arg(&jar)
        .arg(&same)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "bci: {}: output is the input {}; write the instrumented copy elsewhere\n",
            same.display(),
            jar.display()
        )
    );
    assert_eq!(std::fs::read(&jar).unwrap(), before, "the input changed");

    // an output jar hard-linked to another file: replaced, the other file kept
    let out = dir.join("out.jar");
    let other = dir.join("other.jar");
    std::fs::write(&out, b"an older output").unwrap();
    std::fs::hard_link(&out, &other).unwrap();
    instrument(&jar, &out, &[]);
    assert_eq!(std::fs::read(&other).unwrap(), b"an older output");
    let got = entries(&out);
    assert!(got.iter().any(|e| e.0 == "p/Hello.class"), "{got:?}");
    assert_ne!(
        std::fs::metadata(&out).unwrap().ino(),
        std::fs::metadata(&other).unwrap().ino()
    );

    // an output directory made with `cp -al` of the input: the input's classes stay original
    let copy = dir.join("copy");
    std::fs::create_dir_all(copy.join("p")).unwrap();
    let class = classes.join("p/Hello.class");
    let original = std::fs::read(&class).unwrap();
    std::fs::hard_link(&class, copy.join("p/Hello.class")).unwrap();
    instrument(&classes, &copy, &[]);
    assert_eq!(
        std::fs::read(&class).unwrap(),
        original,
        "the input changed"
    );
    assert_ne!(std::fs::read(copy.join("p/Hello.class")).unwrap(), original);
}

/// An output option naming an input is refused before anything is written, as an OUT equal
/// to IN is: `--map in.jar` replaced the input jar with the map, exit 0 (found by the new-user
/// hunt); so did `--map out.jar` the output, and an OUT or --map naming the --rules file the
/// rules; through a symbolic link too.
#[test]
fn outputs_naming_an_input_are_refused() {
    let dir = fresh("map-is-input");
    let (jar, _) = hello_jar(&dir);
    let before = std::fs::read(&jar).unwrap();
    let rules = dir.join("rules.toml");
    let rules_text = "[runtime]\nclass = \"CountProbe\"\n\n[[rule]]\nprobes = [\"enter\"]\n";
    std::fs::write(&rules, rules_text).unwrap();
    let link = dir.join("link.jar");
    std::os::unix::fs::symlink(&jar, &link).unwrap();
    let out = dir.join("out.jar");
    let (j, l, r, o) = (
        jar.display().to_string(),
        link.display().to_string(),
        rules.display().to_string(),
        out.display().to_string(),
    );
    for (args, want) in [
        (
            vec![&j, &o, "--map", &j],
            format!("--map {j} is the input {j}: the map would overwrite it"),
        ),
        (
            vec![&j, &o, "--map", &l],
            format!("--map {l} is the input {j}: the map would overwrite it"),
        ),
        (
            vec![&j, &o, "--map", &o],
            format!("--map {o} is the output {o}: the map would overwrite it"),
        ),
        (
            vec![&j, &o, "--rules", &r, "--map", &r],
            format!("--map {r} is the --rules file {r}: the map would overwrite it"),
        ),
        (
            vec![&j, &r, "--rules", &r],
            format!("{r}: output is the --rules file {r}: it would be overwritten"),
        ),
    ] {
        let res = Command::new(env!("CARGO_BIN_EXE_bci"))
            .arg("instrument")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(&format!("bci: {want}")), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert_eq!(
            std::fs::read(&jar).unwrap(),
            before,
            "{args:?}: the input changed"
        );
        assert_eq!(
            std::fs::read_to_string(&rules).unwrap(),
            rules_text,
            "{args:?}"
        );
        assert!(!out.exists(), "{args:?}: the output was written");
    }
}

/// `bci runtime-jar` onto a file hard-linked to another: the file is replaced, the other keeps
/// its bytes (the jar was written through the link, truncating both).
#[test]
fn runtime_jar_never_writes_through_a_hard_link() {
    use std::os::unix::fs::MetadataExt;
    let dir = fresh("rt-hardlink");
    let rt = dir.join("rt.jar");
    let other = dir.join("kept.jar");
    std::fs::write(&rt, b"an older runtime jar").unwrap();
    std::fs::hard_link(&rt, &other).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("runtime-jar")
        .arg(&rt)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::read(&other).unwrap() == b"an older runtime jar",
        "the jar was written through the hard link"
    );
    let got = entries(&rt);
    assert!(
        got.iter().any(|e| e.0 == "bci/runtime/Probes.class"),
        "{got:?}"
    );
    assert_ne!(
        std::fs::metadata(&rt).unwrap().ino(),
        std::fs::metadata(&other).unwrap().ino()
    );
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// A jar output whose write fails partway (a file-size limit) leaves the previous output as
/// it was and no temporary file: it is written beside it and renamed over it at the end (it was
/// truncated and left half-written).
#[test]
fn a_failed_jar_write_leaves_the_previous_output() {
    let dir = fresh("failed-write");
    let (_, classes) = hello_jar(&dir);
    // incompressible bytes, so that the jar outgrows the limit
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(classes.join("noise.bin"), &noise).unwrap();
    let jar = dir.join("big.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&jar)
        .arg("-C")
        .arg(&classes)
        .arg("."));
    let outs = dir.join("outs");
    std::fs::create_dir_all(&outs).unwrap();
    for (input, out) in [(&jar, outs.join("a.jar")), (&classes, outs.join("b.jar"))] {
        std::fs::write(&out, b"the previous output").unwrap();
        // the limit as sh counts it (512-byte blocks); SIGXFSZ ignored: the write fails
        let o = Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 40; exec \"$@\"")
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_bci"))
            .arg("instrument")
            .arg(input)
            .arg(&out)
            .args(["--runtime", "CountProbe"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{input:?}: {err}");
        assert!(
            err.starts_with(&format!("bci: {}: ", out.display())) && err.contains("too large"),
            "{err}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"the previous output");
        let left: Vec<_> = std::fs::read_dir(&outs)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A jar's extension in any case (`APP.JAR`: "not a directory or a .jar/.zip"), and a war or
/// ear (refused, though `bci report --classes` reads them): instrumented jar to jar, the
/// classes of a war's WEB-INF/classes included, its WEB-INF/lib jars copied and named.
#[test]
fn jars_in_any_case_and_wars_are_instrumented() {
    let dir = fresh("war");
    let (classes, _) = compile(&dir);
    let upper = dir.join("APP.JAR");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&upper)
        .arg("-C")
        .arg(&classes)
        .arg("."));
    let web = dir.join("web");
    std::fs::create_dir_all(web.join("WEB-INF/lib")).unwrap();
    std::fs::copy(&upper, web.join("WEB-INF/lib/Inner.JAR")).unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(&classes)
        .arg(web.join("WEB-INF/classes"))
        .status()
        .unwrap();
    assert!(status.success());
    let war = dir.join("app.war");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&war)
        .arg("-C")
        .arg(&web)
        .arg("."));
    for (input, out, class) in [
        (&upper, dir.join("OUT.JAR"), "p/Hello.class"),
        (&war, dir.join("out.war"), "WEB-INF/classes/p/Hello.class"),
        (&war, dir.join("out.EAR"), "WEB-INF/classes/p/Hello.class"),
    ] {
        let o = instrument(input, &out, &[]);
        let before = entries(input);
        let after = entries(&out);
        let of = |es: &[Entry]| es.iter().find(|e| e.0 == class).unwrap().4.clone();
        assert_ne!(of(&before), of(&after), "{out:?}: {class} not instrumented");
        assert_eq!(before.len(), after.len(), "{out:?}");
        if input == &war {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("WEB-INF/lib/Inner.JAR: a nested archive, copied as it is"),
                "{err}"
            );
            let lib = |es: &[Entry]| {
                es.iter()
                    .find(|e| e.0 == "WEB-INF/lib/Inner.JAR")
                    .unwrap()
                    .4
                    .clone()
            };
            assert_eq!(lib(&before), lib(&after));
        }
    }
    // directory to war
    let out = dir.join("from-dir.War");
    instrument(&classes, &out, &[]);
    assert!(entries(&out).iter().any(|e| e.0 == "p/Hello.class"));
}

/// A jar in an input directory is named on stderr as a nested jar is (it was copied
/// silently), to a directory and to a jar; and a jar's nested jar is named jar to directory
/// too (it was named jar to jar only).
#[test]
fn jars_in_an_input_directory_are_named() {
    let dir = fresh("nested-dir");
    let (_, classes) = hello_jar(&dir);
    std::fs::create_dir_all(classes.join("lib")).unwrap();
    std::fs::copy(dir.join("app.jar"), classes.join("lib/util.jar")).unwrap();
    for out in [dir.join("out"), dir.join("out.jar")] {
        let o = instrument(&classes, &out, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err,
            format!(
                "bci: {}: an archive in the input directory, copied as it is (its classes are \
                 not instrumented; instrument it on its own)\n",
                classes.join("lib/util.jar").display()
            )
        );
    }
    let fat = dir.join("fat.jar");
    run(jdk("jar")
        .arg("--create")
        .arg("--file")
        .arg(&fat)
        .arg("-C")
        .arg(&classes)
        .arg("."));
    let o = instrument(&fat, &dir.join("fat-out"), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err,
        format!(
            "bci: {}: lib/util.jar: a nested archive, copied as it is (its classes are not \
             instrumented; instrument it on its own)\n",
            fat.display()
        )
    );
    assert_eq!(
        std::fs::read(dir.join("fat-out/lib/util.jar")).unwrap(),
        std::fs::read(dir.join("app.jar")).unwrap()
    );
}

/// A jar that holds one name twice: each such name is said on stderr, and the last entry is
/// kept (what java.util.zip.ZipFile, and so the JVM's class path, reads: `java -cp` of such a
/// jar runs the last copy of a class), jar to jar and jar to directory (it was collapsed
/// silently).
#[test]
fn duplicate_entries_are_named_and_the_last_kept() {
    let dir = fresh("duplicates");
    let jar = dir.join("dup.jar");
    raw_jar(
        &jar,
        &[
            ("r.txt", b"one"),
            ("s.txt", b"two"),
            ("t.txt", b"other"),
            ("q/Z.txt", b"first"),
            ("q/Y.txt", b"second"),
            ("q/X.txt", b"third"),
        ],
    );
    // the same names, then: r.txt twice, q/Z.txt three times (names are in the local headers
    // and the central directory; the bytes of the data are not names)
    let mut bytes = std::fs::read(&jar).unwrap();
    for (from, to) in [
        ("s.txt", "r.txt"),
        ("q/Y.txt", "q/Z.txt"),
        ("q/X.txt", "q/Z.txt"),
    ] {
        let (f, t) = (from.as_bytes(), to.as_bytes());
        let mut i = 0;
        while i + f.len() <= bytes.len() {
            if &bytes[i..i + f.len()] == f {
                bytes[i..i + f.len()].copy_from_slice(t);
            }
            i += 1;
        }
    }
    std::fs::write(&jar, &bytes).unwrap();
    let said = format!(
        "bci: {j}: r.txt: 2 entries of this name: the last is kept (the one the JVM reads), the \
         others are left out\nbci: {j}: q/Z.txt: 3 entries of this name: the last is kept (the \
         one the JVM reads), the others are left out\n",
        j = jar.display()
    );
    let out = dir.join("out.jar");
    let o = instrument(&jar, &out, &[]);
    assert_eq!(String::from_utf8_lossy(&o.stderr), said);
    let got: Vec<(String, Vec<u8>)> = entries(&out).into_iter().map(|e| (e.0, e.4)).collect();
    assert_eq!(
        got,
        [
            ("r.txt".to_string(), b"two".to_vec()),
            ("t.txt".to_string(), b"other".to_vec()),
            ("q/Z.txt".to_string(), b"third".to_vec()),
        ]
    );
    let out = dir.join("out");
    let o = instrument(&jar, &out, &[]);
    assert_eq!(String::from_utf8_lossy(&o.stderr), said);
    assert_eq!(std::fs::read(out.join("r.txt")).unwrap(), b"two");
    assert_eq!(std::fs::read(out.join("q/Z.txt")).unwrap(), b"third");
}

/// Messages to a stderr that cannot be written (full, or closed by the reader of
/// `bci … 2>&1 | head`) are lost and the work goes on: std's `eprintln!` panicked (exit 101,
/// no output written).
#[test]
fn an_unwritable_stderr_loses_messages_not_outputs() {
    let dir = fresh("full-stderr");
    let (_, classes) = hello_jar(&dir);
    let once = dir.join("once");
    instrument(&classes, &once, &[]);
    // instrumented again: a message per class on stderr ("already instrumented")
    let twice = dir.join("twice.jar");
    let o = Command::new(env!("CARGO_BIN_EXE_bci"))
        .arg("instrument")
        .arg(&once)
        .arg(&twice)
        .args(["--runtime", "CountProbe"])
        .stderr(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let got = entries(&twice);
    assert!(got.iter().any(|e| e.0 == "p/Hello.class"), "{got:?}");
}
