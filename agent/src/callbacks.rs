//! Every `extern` entry point the VM calls. Each one wraps its body in `catch_unwind`: a panic
//! never crosses into the JVM, and any failure leaves the class or the VM as they were.

use crate::jvm::{Jni, Jvmti};
use crate::options::{self, Options};
use crate::outfile::{self, OutFile};
use crate::registry::Registry;
use crate::rewrite::Engine;
use crate::{report, runtime, sys};
use std::ffi::{c_char, c_uchar, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

pub struct Agent {
    pub opts: Options,
    engine: Engine,
    jvmti: Jvmti,
    vm: VmPtr,
    pub registry: Registry,
    /// The runtime is java.lang.BciProbes, defined at early VMStart.
    early: bool,
    /// Classes are instrumented while set: from the start (early), or from VMInit once the
    /// runtime is defined and every module reads it.
    live: AtomicBool,
    /// VMDeath began: a SIGQUIT dump writes nothing from then on (set, and checked once by a
    /// SIGQUIT dump, under the report file's lock `out`, which that dump holds for both its
    /// snapshots: both are written or neither, and never after the exit dump).
    exiting: AtomicBool,
    early_skipped: AtomicUsize,
    /// java.lang.Thread was handed to the VM with the runtime's fields (rewrite::THREAD_FIELDS).
    thread_fields: AtomicBool,
    /// Without the early class hook (coverage only, of classes outside java.*, jdk.* and
    /// sun.*: Options::late_hook): CDS stays on, coverage finds per-thread arrays through a
    /// ThreadLocal.
    late: bool,
    instrumented: AtomicUsize,
    /// Classes `coverage=y` could not cover: instrumented offline without `--coverage`.
    marked_uncovered: AtomicUsize,
    /// cpu=times without coverage=y met a class instrumented `--coverage` offline, and checked
    /// once whether the class path has the runtime jar's bci/runtime/Cov.
    offline_cov_checked: AtomicBool,
    failed: AtomicUsize,
    /// Classes and methods left original after errors, for the report.
    left: Mutex<LeftOriginal>,
    /// Time spent in the rewriter, ns.
    hook_ns: AtomicU64,
    /// verbose=y: classes the hook saw and the rules did not select, and the ns the hook spent
    /// on them in all (clock read at entry and at return; for the report's verbose line).
    not_selected: AtomicU64,
    not_selected_ns: AtomicU64,
    /// The report file, opened and locked at load (outfile.rs); None without cpu=times.
    out: Mutex<Option<OutFile>>,
    /// The trace file (`tracefile=`), opened and locked at load like the report file and held
    /// for the JVM's life (the runtime writes it through its own descriptor).
    _trace_out: Option<OutFile>,
    /// coverage=y: class ids of the classes with counters.
    pub cov: crate::coverage::CovRegistry,
    /// java.lang.Thread was handed to the VM with rewrite::COV_THREAD_FIELD.
    cov_field: AtomicBool,
    /// The coverage data file and what this JVM wrote to it.
    #[cfg(feature = "rewriter")]
    cov_file: Mutex<crate::coverage::CovFile>,
    /// When the agent loaded (ms since the epoch): the coverage session's start.
    #[cfg_attr(not(feature = "rewriter"), allow(dead_code))]
    start_ms: i64,
    /// coverage=y and the VM gave can_get_bytecodes: dumps count calls still running
    /// (calls_in_flight).
    #[cfg_attr(not(feature = "rewriter"), allow(dead_code))]
    bytecodes: bool,
}

#[derive(Clone, Copy)]
struct VmPtr(*mut sys::JavaVM);
// SAFETY: the JavaVM pointer is process-global and valid from any thread.
unsafe impl Send for VmPtr {}
// SAFETY: as above.
unsafe impl Sync for VmPtr {}

#[derive(Default)]
struct LeftOriginal {
    classes: Vec<String>,
    methods: Vec<String>,
}

static AGENT: OnceLock<Agent> = OnceLock::new();

/// The options the agent instance that runs was given (as written).
static FIRST_OPTIONS: OnceLock<String> = OnceLock::new();

/// The agent loaded a second time (`JAVA_TOOL_OPTIONS` and the command line, or two
/// `-agentpath`s): one instance runs. With the same options the second does nothing; with
/// other options the run would silently lack what they ask (a coverage=y given second wrote
/// no data), so the JVM stops, naming both.
fn second_instance(options: Option<&str>) -> sys::jint {
    let now = options.unwrap_or("");
    let first = FIRST_OPTIONS.get().map(String::as_str).unwrap_or("");
    if now.trim() == first.trim() {
        log("loaded twice with the same options; the second instance does nothing");
        return sys::JNI_OK;
    }
    log(&format!(
        "loaded twice with different options ('{first}', then '{now}'): one instance runs in a \
         JVM, so the second one's options would be ignored; give the agent once, with all the \
         options (e.g. cpu=times,coverage=y)"
    ));
    sys::JNI_ERR
}

/// A class left original after an error: logged once and listed in the report.
fn class_left_original(a: &Agent, name: &str, why: &str) {
    a.failed.fetch_add(1, Ordering::Relaxed);
    log(&format!("{name}: left original: {why}"));
    let mut l = a.left.lock().unwrap_or_else(|p| p.into_inner());
    l.classes.push(format!("{name}: {why}"));
}

/// Methods the coverage counters grew past HotSpot's 8000-byte compile limit (one note each).
/// compilehuge=y: the first one turns `-XX:+DontCompileHugeMethods` off, once, so that they
/// can still be JIT-compiled (said once; verbose=y names each method); if the flag cannot be
/// set, or with compilehuge=n, each method is named with the advice.
/// Whether an entry of class path `cp` (`java.class.path`: directories and jars, `:`-separated)
/// has file `entry` (`bci/runtime/Cov.class`). A jar is looked up in its central directory,
/// read through its end record (a jar that cannot be read so counts as having it).
fn class_path_has(cp: &str, entry: &str) -> bool {
    cp.split(':').any(|p| {
        let p = std::path::Path::new(if p.is_empty() { "." } else { p });
        if p.is_dir() {
            p.join(entry).is_file()
        } else {
            p.is_file() && jar_has(p, entry).unwrap_or(true)
        }
    })
}

/// Whether the zip file `path` names `entry` in its central directory; None where it cannot
/// be read (no end record in its last 64 KB: not a zip, or a zip64).
fn jar_has(path: &std::path::Path, entry: &str) -> Option<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let tail = len.min(22 + 65535);
    f.seek(SeekFrom::Start(len - tail)).ok()?;
    let mut end = vec![0u8; tail as usize];
    f.read_exact(&mut end).ok()?;
    let at = (0..end.len().saturating_sub(21))
        .rev()
        .find(|&i| end[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])?;
    let u32_at = |i: usize| Some(u32::from_le_bytes(end.get(i..i + 4)?.try_into().ok()?));
    let (size, offset) = (u32_at(at + 12)?, u32_at(at + 16)?);
    if size == u32::MAX || offset == u32::MAX || u64::from(offset) + u64::from(size) > len {
        return None;
    }
    f.seek(SeekFrom::Start(offset.into())).ok()?;
    let mut dir = vec![0u8; size as usize];
    f.read_exact(&mut dir).ok()?;
    Some(dir.windows(entry.len()).any(|w| w == entry.as_bytes()))
}

fn huge_methods(a: &Agent, notes: &[String]) {
    static FLAG: std::sync::OnceLock<Result<bool, String>> = std::sync::OnceLock::new();
    if a.opts.compile_huge {
        let set = FLAG.get_or_init(|| {
            let r = crate::hotspot::set_bool_flag("DontCompileHugeMethods", false);
            match &r {
                Ok(_) => log(&format!(
                    "{}: coverage counters grow it past HotSpot's compile limit for huge \
                     methods: -XX:+DontCompileHugeMethods turned off for this JVM so that it \
                     can still be JIT-compiled (compilehuge=n keeps the flag)",
                    notes[0].split(':').next().unwrap_or("")
                )),
                Err(e) => log(&format!(
                    "cannot turn -XX:+DontCompileHugeMethods off ({e}): the methods named \
                     below will run interpreted"
                )),
            }
            r
        });
        if set.is_ok() {
            if a.opts.verbose {
                for n in notes {
                    log(&format!("compilable past the limit: {n}"));
                }
            }
            return;
        }
    }
    for n in notes {
        log(n);
    }
}

pub fn log(msg: &str) {
    eprintln!("bciagent: {msg}");
}

/// Runs `f`, turning a panic into `None` (logged once).
fn guard<R>(what: &str, f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(_) => {
            log(&format!("internal error (panic) in {what}; continuing"));
            None
        }
    }
}

/// The name a class file gives itself (its `this_class`), for a class the VM hands the hook
/// without one; `None` if the bytes do not parse (the VM will refuse them anyway).
fn name_in_bytes(bytes: &[u8]) -> Option<String> {
    let cf = bci::ClassFile::parse(bytes).ok()?;
    let name = cf.cp.class_name(cf.this_class).ok()?;
    Some(name.into_owned())
}

fn c_str_opt<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the VM passes NUL-terminated strings that live for the callback.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// `Agent_OnLoad` for `-agentpath:`, `-agentlib:` and `-Xrun`.
///
/// # Safety
/// Called by the VM with a valid JavaVM and a NUL-terminated option string (or null).
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(
    vm: *mut sys::JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> sys::jint {
    guard("Agent_OnLoad", || onload(vm, c_str_opt(options))).unwrap_or(sys::JNI_ERR)
}

fn onload(vm: *mut sys::JavaVM, options: Option<&str>) -> sys::jint {
    let mut opts = match options::parse_run(options) {
        Ok(o) => o,
        Err(e) => {
            log(&format!("{e}"));
            log("use -agentlib:bciagent=help for the list of options");
            return sys::JNI_ERR;
        }
    };
    if opts.help {
        print!("{}", options::HELP);
        std::process::exit(0);
    }
    let pid = std::process::id();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    // tracefile= takes %p and %t like file= and covfile= (expanded once, here: the rules'
    // engine creates the file)
    if let Some(t) = opts.tracefile.take() {
        match outfile::expand_option("tracefile", &t, pid, secs) {
            Ok(p) => opts.tracefile = Some(p),
            Err(e) => {
                log(&e);
                return sys::JNI_ERR;
            }
        }
    }
    let engine = match Engine::new(&opts) {
        Ok(e) => e,
        Err(e) => {
            log(&e);
            return sys::JNI_ERR;
        }
    };
    if AGENT.get().is_some() {
        // before the report file is opened: a second instance would lock its own copy of it
        return second_instance(options);
    }
    // the report file now, not at exit: a path that cannot be written stops the JVM here.
    // Tracing rules alone with format=collapsed write nothing to it (the summary goes to
    // stderr, see dump): it is not opened, so that no empty file is left behind.
    let trace_only = !engine.profiles() && !engine.trace_rules().is_empty();
    if let Some(e) = opts.profile_option_ignored(trace_only) {
        log(&e);
        return sys::JNI_ERR;
    }
    // HotSpot flags the agent cannot work with (parsed before agents load): the JVM stops
    // here, before any output file is made
    let early_hook = !opts.late_hook(engine.trace_rules().is_empty());
    let uses = crate::hotspot::Uses {
        early_hook,
        // (the late hook never sees Thread: loaded before VMStart)
        rewrites_thread: early_hook && engine.rewrites_thread(),
        coverage_only: opts.coverage && !opts.cpu && opts.rules.is_none(),
    };
    match crate::hotspot::check_flags(&uses) {
        Ok(warnings) => warnings.iter().for_each(|w| log(w)),
        Err(e) => {
            log(&e);
            return sys::JNI_ERR;
        }
    }
    let out = if opts.cpu && !(trace_only && opts.format == options::Format::Collapsed) {
        // through a link, its target: a file this JVM creates there is removed, if unwritten,
        // instead of the link
        let file = outfile::expand(&opts.file, pid, secs).map(|p| outfile::follow_links(&p));
        let when = outfile::Replaces::of(opts.doe, opts.format);
        // (tracing rules alone: the file holds their summary; its messages say so)
        let what = if trace_only {
            "trace summary"
        } else {
            "profile"
        };
        match file.and_then(|p| OutFile::open_for("file", what, &p, pid, when)) {
            Ok((out, warnings)) => {
                for w in warnings {
                    log(&w);
                }
                if opts.format == options::Format::Collapsed {
                    if let Some(w) = out.old_snapshots_warning() {
                        log(&w);
                    }
                }
                Some(out)
            }
            Err(e) => {
                log(&e);
                return sys::JNI_ERR;
            }
        }
    } else {
        None
    };
    // the trace file the same way: a path that cannot be written stops the JVM here, and
    // a second JVM given the same tracefile= writes <path>.<pid> (the runtime opens the path
    // this says)
    let trace_out = match opts.tracefile.take().map(|p| {
        OutFile::open_for(
            "tracefile",
            "trace events",
            &p,
            pid,
            outfile::Replaces::Never,
        )
    }) {
        None => None,
        Some(Ok((t, warnings))) => {
            for w in warnings {
                log(&w);
            }
            opts.tracefile = Some(t.path.clone());
            Some(t)
        }
        Some(Err(e)) => {
            log(&e);
            return sys::JNI_ERR;
        }
    };
    // the coverage file too: a directory that does not exist stops the JVM here
    let covfile = if opts.coverage {
        // through a link, its target: the data is merged into it under `<target>.lck` and
        // replaced by rename, the link left as it is
        let covfile = outfile::expand_option("covfile", &opts.covfile, pid, secs)
            .map(|p| outfile::follow_links(&p));
        // (a regular file or none; <p>.lck and the dump's temporary file can be made)
        match covfile.and_then(|p| crate::coverage::check_covfile(&p, pid).map(|()| p)) {
            Ok(p) => p,
            Err(e) => {
                log(&e);
                return sys::JNI_ERR;
            }
        }
    } else {
        String::new()
    };
    // classdump=: the directory made (and shown to be writable) now, like covfile=
    if let Some(d) = &opts.classdump {
        let probe = std::path::Path::new(d).join(format!(".bci-classdump-{pid}"));
        let made = std::fs::create_dir_all(d)
            .and_then(|()| std::fs::write(&probe, b""))
            .and_then(|()| std::fs::remove_file(&probe));
        if let Err(e) = made {
            log(&format!("classdump={d}: cannot write there: {e}"));
            return sys::JNI_ERR;
        }
    }
    let start_ms = now.as_millis() as i64;
    let early = match engine.runtime_class() {
        _ if !opts.cpu => false,
        runtime::EARLY_PROBES => true,
        runtime::PROBES => false,
        other => {
            log(&format!(
                "rules name runtime class {other}; this agent provides {} (defined at early VMStart) \
                 and {} (defined at VMInit)",
                runtime::EARLY_PROBES,
                runtime::PROBES
            ));
            return sys::JNI_ERR;
        }
    };
    let mut env: *mut c_void = std::ptr::null_mut();
    // SAFETY: vm is the VM's JavaVM; slot 6 of the invoke interface is GetEnv.
    let rc = unsafe {
        let get_env: sys::GetEnvFn = sys::slot(vm, sys::JAVAVM_GET_ENV);
        let mut rc = get_env(vm, &mut env, sys::JVMTI_VERSION_11);
        if rc != sys::JNI_OK {
            rc = get_env(vm, &mut env, sys::JVMTI_VERSION_9);
        }
        rc
    };
    if rc != sys::JNI_OK || env.is_null() {
        log(&format!("cannot get a JVMTI environment (error {rc})"));
        return sys::JNI_ERR;
    }
    // SAFETY: env is a jvmtiEnv from GetEnv, valid for the VM's life.
    let jvmti = unsafe { Jvmti::from_raw(env.cast()) };
    let mut caps = sys::jvmtiCapabilities::default();
    caps.set_all_class_hook_events();
    // the early hook turns the JVM's class-data sharing (CDS) off; without it the classes
    // loaded before VMStart (java.base's first) pass the hook unseen
    let late = opts.late_hook(engine.trace_rules().is_empty());
    if !late {
        caps.set_early_class_hook_events();
    }
    if early || opts.coverage {
        caps.set_early_vmstart();
    }
    // clock=cpu: a dump reads other threads' CPU time (Probes.cpuNanosOf)
    if opts.cpu && matches!(opts.clock, options::Clock::Sample | options::Clock::Cpu) {
        caps.set_thread_cpu_time();
    }
    if let Err(e) = jvmti.add_capabilities(&caps) {
        let _ = jvmti.potential_capabilities();
        log(&format!("cannot add class-hook capabilities: {e}"));
        return sys::JNI_ERR;
    }
    // JDK 21+: VirtualThreadEnd, so that an ended virtual thread's data is folded like a
    // platform thread's (ThreadEnd is not sent for virtual threads)
    // coverage: a dump reads the bytecodes of methods with calls still running
    let bytecodes = opts.coverage && {
        let mut bc = sys::jvmtiCapabilities::default();
        bc.set_get_bytecodes();
        jvmti.add_capabilities(&bc).is_ok()
    };
    let virtual_threads = jvmti
        .potential_capabilities()
        .is_ok_and(|p| p.support_virtual_threads())
        && {
            let mut vt = sys::jvmtiCapabilities::default();
            vt.set_support_virtual_threads();
            jvmti.add_capabilities(&vt).is_ok()
        };
    let mut cbs = sys::jvmtiEventCallbacks {
        slots: [std::ptr::null(); sys::CALLBACK_SLOTS],
    };
    cbs.slots[sys::CB_VM_INIT] = vm_init as sys::VmInitFn as *const c_void;
    cbs.slots[sys::CB_VM_DEATH] = vm_death as sys::VmDeathFn as *const c_void;
    cbs.slots[sys::CB_CLASS_FILE_LOAD_HOOK] =
        class_file_load_hook as sys::ClassFileLoadHookFn as *const c_void;
    cbs.slots[sys::CB_DATA_DUMP_REQUEST] = data_dump_request as sys::DataDumpFn as *const c_void;
    cbs.slots[sys::CB_VM_START] = vm_start as sys::VmStartFn as *const c_void;
    cbs.slots[sys::CB_THREAD_END] = thread_end as sys::ThreadEndFn as *const c_void;
    cbs.slots[sys::CB_VIRTUAL_THREAD_END] = thread_end as sys::ThreadEndFn as *const c_void;
    let verbose = opts.verbose;
    let agent = Agent {
        opts,
        engine,
        jvmti,
        vm: VmPtr(vm),
        registry: Registry::new(),
        early,
        // early: classes are instrumented from the first one on (their code first runs after
        // early VMStart, where the runtime is defined); otherwise from VMInit on
        live: AtomicBool::new(early),
        exiting: AtomicBool::new(false),
        early_skipped: AtomicUsize::new(0),
        thread_fields: AtomicBool::new(false),
        late,
        instrumented: AtomicUsize::new(0),
        marked_uncovered: AtomicUsize::new(0),
        offline_cov_checked: AtomicBool::new(false),
        failed: AtomicUsize::new(0),
        left: Mutex::new(LeftOriginal::default()),
        hook_ns: AtomicU64::new(0),
        not_selected: AtomicU64::new(0),
        not_selected_ns: AtomicU64::new(0),
        out: Mutex::new(out),
        _trace_out: trace_out,
        cov: crate::coverage::CovRegistry::new(),
        cov_field: AtomicBool::new(false),
        #[cfg(feature = "rewriter")]
        cov_file: Mutex::new(crate::coverage::CovFile::new(
            &covfile,
            bci_rewriter::coverage::data::Session {
                id: format!("{}-{pid}-{start_ms}", crate::coverage::host_name()),
                start_ms,
                ..Default::default()
            },
        )),
        start_ms,
        bytecodes,
    };
    let _ = &covfile;
    if AGENT.set(agent).is_err() {
        return second_instance(options);
    }
    let _ = FIRST_OPTIONS.set(options.unwrap_or("").to_string());
    let r = jvmti.set_event_callbacks(&cbs).and_then(|_| {
        for ev in [
            sys::JVMTI_EVENT_VM_INIT,
            sys::JVMTI_EVENT_VM_DEATH,
            sys::JVMTI_EVENT_CLASS_FILE_LOAD_HOOK,
            sys::JVMTI_EVENT_DATA_DUMP_REQUEST,
            sys::JVMTI_EVENT_VM_START,
            sys::JVMTI_EVENT_THREAD_END,
        ] {
            jvmti.enable_event(ev)?;
        }
        if virtual_threads {
            jvmti.enable_event(sys::JVMTI_EVENT_VIRTUAL_THREAD_END)?;
        }
        Ok(())
    });
    if let Err(e) = r {
        log(&e);
        return sys::JNI_ERR;
    }
    if verbose {
        // what this run records: the profile, coverage, tracing rules
        let mut what: Vec<String> = Vec::new();
        if let Some(a) = AGENT.get() {
            if a.opts.cpu && a.engine.profiles() {
                what.push("cpu=times".into());
            }
            if a.opts.coverage {
                what.push("coverage".into());
            }
            let n = a.engine.trace_rules().len();
            if n > 0 {
                what.push(format!(
                    "tracing, {n} rule{}",
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
        let mut line = format!("loaded ({})", what.join(", "));
        if late {
            line.push_str(
                "; no early class hook: class-data sharing stays on, classes loaded before \
                 VMStart pass unseen",
            );
        }
        log(&line);
    }
    sys::JNI_OK
}

/// # Safety
/// Called by the VM.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnUnload(_vm: *mut sys::JavaVM) {}

unsafe extern "C" fn vm_init(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    _thread: sys::jthread,
) {
    guard("VMInit", || {
        let Some(a) = AGENT.get() else { return };
        // SAFETY: jni is this thread's JNIEnv for the duration of the callback.
        let jni = unsafe { Jni::from_raw(jni) };
        if a.opts.coverage && runtime::cov_get().is_some() {
            // the runtime's lock through JNI from now on: virtual threads wait for it pinned
            if let Err(e) = runtime::cov_jni_lock(&jni) {
                log(&format!(
                    "coverage: cannot take the runtime's lock through JNI ({e})"
                ));
                jni.take_exception(true);
            }
        }
        if a.opts.coverage && (a.late || a.cov_field.load(Ordering::Acquire)) {
            let r = if a.late {
                runtime::cov_local(&jni)
            } else {
                runtime::cov_per_thread(&jni)
            };
            if let Err(e) = r {
                log(&format!(
                    "coverage: cannot switch to per-thread counters ({e})"
                ));
                jni.take_exception(true);
            }
        }
        if a.opts.coverage && runtime::cov_get().is_some() {
            // classes instrumented by `bci instrument --coverage` register with the agent
            if let Err(e) = runtime::define_cov_forwarder(&jni, offline_cov_register as *mut c_void)
            {
                log(&format!(
                    "cannot define bci/runtime/Cov ({e}); offline-instrumented classes count with the runtime jar's"
                ));
                jni.take_exception(true);
            }
        }
        if a.opts.cpu {
            cpu_vm_init(a, &jni);
        }
    });
}

/// VMInit of cpu=times: the runtime (VMInit build) defined, offline classes' runtime, the
/// sampler, recording on.
fn cpu_vm_init(a: &Agent, jni: &Jni) {
    {
        if !a.early {
            if let Err(e) = runtime::define(
                &a.jvmti,
                jni,
                &a.opts,
                cpu_nanos as *mut c_void,
                runtime::Variant::VmInit,
            ) {
                log(&format!(
                    "cannot define the runtime ({e}); no class will be instrumented"
                ));
                jni.take_exception(true);
                return;
            }
        } else if runtime::get().is_none() {
            return;
        }
        // classes instrumented by `bci instrument` call bci/runtime/Offline.register and the
        // probes of bci/runtime/Probes (with the built-in runtime: a forwarder to it)
        if let Err(e) = runtime::define_offline(jni, offline_register as *mut c_void, a.early) {
            log(&format!(
                "cannot define {} ({e}); offline-instrumented classes will not be named",
                crate::runtime_jar::OFFLINE
            ));
            jni.take_exception(true);
        }
        // only a profile reads the samples: tracing rules alone start no sampler (it woke
        // every interval= ms for the whole run)
        if a.opts.clock == options::Clock::Sample && a.engine.profiles() {
            let started = jni
                .new_thread("bciagent sampler")
                .and_then(|t| a.jvmti.run_agent_thread(t, sampler_thread));
            if let Err(e) = started {
                log(&format!(
                    "cannot start the sampler thread ({e}); no class will be instrumented"
                ));
                jni.take_exception(true);
                return;
            }
        }
        // (at VMInit, not VMStart: on JDK 17 the lookup throws NoSuchFieldError, and an
        // exception made that early crashed the JVM in Throwable.<clinit>)
        init_thread_holder(jni);
        if let Err(e) = runtime::switch_on(jni) {
            log(&format!(
                "cannot switch the runtime on ({e}); the program runs without probes recording"
            ));
            return;
        }
        a.live.store(true, Ordering::Release);
        let trace_rules = a.engine.trace_rules();
        if !trace_rules.is_empty() {
            if let Err(e) = crate::trace::start(
                jni,
                a.opts.tracefile.as_deref(),
                a.opts.trace_text,
                a.opts.trace_max,
                &trace_rules,
            ) {
                log(&format!("tracing: {e}; no trace event will be written"));
            }
        }
        if a.opts.verbose {
            log(&format!(
                "VMInit: runtime defined, {} classes loaded before it left original",
                a.early_skipped.load(Ordering::Relaxed)
            ));
        }
    }
}

unsafe extern "C" fn vm_start(_jvmti: *mut sys::jvmtiEnv, jni: *mut sys::JNIEnv) {
    guard("VMStart", || {
        let Some(a) = AGENT.get() else { return };
        // SAFETY: jni is this thread's JNIEnv for the duration of the callback.
        let jni = unsafe { Jni::from_raw(jni) };
        if a.opts.coverage {
            if !a.late && !a.cov_field.load(Ordering::Acquire) {
                log(&format!(
                    "{} has no coverage field; {} shares one counter array per class between \
                     threads (counts may be low under contention)",
                    crate::rewrite::THREAD_CLASS,
                    crate::rewrite::COV_RUNTIME_CLASS
                ));
            }
            if let Err(e) = runtime::define_cov(&jni) {
                log(&format!(
                    "cannot define {} at VMStart ({e}); classes instrumented for coverage so far will fail",
                    crate::rewrite::COV_RUNTIME_CLASS
                ));
                jni.take_exception(true);
            } else if a.opts.verbose {
                log(&format!(
                    "early VMStart: {} defined after {} classes",
                    crate::rewrite::COV_RUNTIME_CLASS,
                    a.cov.len()
                ));
            }
        }
        if !a.engine.trace_rules().is_empty() {
            if let Err(e) = crate::trace::define(&jni) {
                log(&format!(
                    "cannot define {} ({e}); tracing rules will not record",
                    crate::trace::CLASS
                ));
                jni.take_exception(true);
            }
        }
        if !a.early {
            return;
        }
        // the build that reads Thread.bci$t only if the hook handed Thread to the VM with it
        // (a link error in every probe would be fatal). Not checked through JNI: GetFieldID
        // would initialize Thread, running its instrumented <clinit> before the runtime exists.
        // BCIAGENT_TEST_WRONG_BUILD (tests only): the field build even without the field, to
        // show that the runtime's self-test keeps probes off instead of failing in each one
        let variant = if a.thread_fields.load(Ordering::Acquire)
            || std::env::var_os("BCIAGENT_TEST_WRONG_BUILD").is_some()
        {
            runtime::Variant::ThreadFields
        } else {
            // (tracing rules alone: no probe runs, the fields are not asked for)
            if a.engine.profiles() {
                log(&format!(
                    "{} has no runtime fields; {} looks threads up by hash (slower probes)",
                    crate::rewrite::THREAD_CLASS,
                    runtime::EARLY_PROBES
                ));
            }
            runtime::Variant::Early
        };
        if let Err(e) = runtime::define(&a.jvmti, &jni, &a.opts, cpu_nanos as *mut c_void, variant)
        {
            a.live.store(false, Ordering::Release);
            log(&format!(
                "cannot define {} at VMStart ({e}); classes instrumented so far will fail",
                runtime::EARLY_PROBES
            ));
            jni.take_exception(true);
        } else if a.opts.verbose {
            log(&format!(
                "early VMStart: {} defined after {} classes",
                runtime::EARLY_PROBES,
                a.instrumented.load(Ordering::Relaxed)
            ));
        }
    });
}

/// ThreadEnd and VirtualThreadEnd: the ending thread's data goes to the shared aggregate.
unsafe extern "C" fn thread_end(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    thread: sys::jthread,
) {
    guard("ThreadEnd", || {
        if jni.is_null() {
            return;
        }
        // SAFETY: jni is this thread's JNIEnv for the duration of the callback.
        let jni = unsafe { Jni::from_raw(jni) };
        // SAFETY: thread is the VM's local reference to the ending thread, valid for the callback.
        let thread = unsafe { crate::jvm::JRef::from_local(thread) };
        runtime::thread_ended(&jni, thread);
        runtime::cov_thread_ended(&jni, thread);
    });
}

unsafe extern "C" fn sampler_thread(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    _arg: *mut c_void,
) {
    guard("sampler thread", || {
        let Some(a) = AGENT.get() else { return };
        // SAFETY: jni is this agent thread's JNIEnv for the life of the thread.
        let jni = unsafe { Jni::from_raw(jni) };
        runtime::sample_loop(&a.jvmti, &jni, a.opts.interval_ms);
    });
}

/// `Probes.cpuNanos()`: the current thread's CPU time.
unsafe extern "system" fn cpu_nanos(_env: *mut sys::JNIEnv, _cls: sys::jclass) -> sys::jlong {
    guard("cpuNanos", runtime::thread_cpu_ns).unwrap_or(0)
}

/// `Probes.cpuNanosOf(Thread)` (clock=cpu): CPU time of another live platform thread
/// (JVMTI GetThreadCpuTime), -1 if it cannot be read. The dump charges that thread's open
/// frames up to it.
unsafe extern "system" fn cpu_nanos_of(
    _env: *mut sys::JNIEnv,
    _cls: sys::jclass,
    thread: sys::jobject,
) -> sys::jlong {
    // SAFETY: the VM passes the arguments of a native as references valid for the call.
    let t = unsafe { crate::jvm::JRef::from_native_arg(thread) };
    guard("cpuNanosOf", || {
        let Some(a) = AGENT.get() else { return -1 };
        if t.is_null() {
            return -1;
        }
        a.jvmti.thread_cpu_time(t).unwrap_or(-1)
    })
    .unwrap_or(-1)
}

/// The clock=cpu natives for RegisterNatives: `cpuNanos()`, `cpuNanosOf(Thread)`.
pub fn cpu_natives() -> (*mut c_void, *mut c_void) {
    (cpu_nanos as *mut c_void, cpu_nanos_of as *mut c_void)
}

/// `java.lang.BciProbes.cpuNanosOf(Thread)`, found by the VM under its JNI name (see
/// [`Java_java_lang_BciProbes_cpuNanos`]).
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_BciProbes_cpuNanosOf(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
    thread: sys::jobject,
) -> sys::jlong {
    // SAFETY: same contract as cpu_nanos_of.
    unsafe { cpu_nanos_of(env, cls, thread) }
}

/// `java.lang.BciProbes.cpuNanos()`, found by the VM under its JNI name in the agent library
/// (HotSpot searches agent libraries for natives of boot classes). Registering it with
/// RegisterNatives instead makes HotSpot print a warning on the program's stdout.
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_BciProbes_cpuNanos(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
) -> sys::jlong {
    // SAFETY: same contract as cpu_nanos (the arguments are not used).
    unsafe { cpu_nanos(env, cls) }
}

/// `Probes.lock0()`: takes the runtime class's monitor through JNI (see [`Jni::monitor`]):
/// the probes' locked sections, which virtual threads and the carriers that run them both
/// enter, so that no virtual thread waits for the lock unmounted (with its carrier blocked on
/// the same lock, the JVM hung). Returns whether it holds it.
unsafe extern "system" fn lock_native(env: *mut sys::JNIEnv, cls: sys::jclass) -> sys::jboolean {
    // SAFETY: env is this thread's JNIEnv for the duration of the native call.
    let jni = unsafe { Jni::from_raw(env) };
    // SAFETY: the VM passes the class of a static native as a reference valid for the call.
    let cls = unsafe { crate::jvm::JRef::from_native_arg(cls) };
    guard("lock0", || jni.monitor(cls, true)).unwrap_or(false) as sys::jboolean
}

/// `Probes.unlock0()`: leaves the monitor taken by [`lock_native`].
unsafe extern "system" fn unlock_native(env: *mut sys::JNIEnv, cls: sys::jclass) {
    // SAFETY: env is this thread's JNIEnv for the duration of the native call.
    let jni = unsafe { Jni::from_raw(env) };
    // SAFETY: the VM passes the class of a static native as a reference valid for the call.
    let cls = unsafe { crate::jvm::JRef::from_native_arg(cls) };
    let _ = guard("unlock0", || jni.monitor(cls, false));
}

/// java.lang.Thread's `holder` field and (a global reference to) the class of virtual
/// threads, which have no holder (JDK 19+; `None` before, or if either is not found).
static THREAD_HOLDER: OnceLock<Option<(crate::jvm::InstanceFieldId, crate::jvm::JRef)>> =
    OnceLock::new();

/// Looks up java.lang.Thread's `holder` field for [`kind_native`] (at VMInit).
pub fn init_thread_holder(jni: &Jni) {
    THREAD_HOLDER.get_or_init(|| {
        let cls = jni.find_class("java/lang/Thread").ok()?;
        let f = jni.field_id(cls, "holder", "Ljava/lang/Thread$FieldHolder;");
        jni.delete_local_ref(cls);
        let f = f.ok()?;
        // JDK 21+: BaseVirtualThread (VirtualThread and the bound kind); JDK 19-20: VirtualThread
        let virt = jni
            .find_class("java/lang/BaseVirtualThread")
            .or_else(|_| jni.find_class("java/lang/VirtualThread"))
            .ok()?;
        let g = jni.new_global_ref(virt);
        jni.delete_local_ref(virt);
        (!g.is_null()).then_some((f, g))
    });
}

/// `Probes.kind0(Thread)`: 2 for a virtual thread (the runtime keeps those apart from the
/// sampled platform threads), 1 for a platform thread whose constructor has finished (JDK
/// 19+: its FieldHolder is set), 0 for one whose constructor still runs. A thread attaching
/// through JNI (the launcher's DestroyJavaVM at exit, native threads) runs its own Thread
/// constructor; if a probe in it waits for the runtime's lock, HotSpot records the BLOCKED
/// state in the still-null holder and crashes (SIGSEGV in java_lang_Thread::set_thread_status).
/// The runtime does not register such a thread yet. Before JDK 19: 1.
unsafe extern "system" fn kind_native(
    env: *mut sys::JNIEnv,
    _cls: sys::jclass,
    thread: sys::jobject,
) -> sys::jint {
    // SAFETY: env is this thread's JNIEnv for the duration of the native call.
    let jni = unsafe { Jni::from_raw(env) };
    // SAFETY: the VM passes the arguments of a native as references valid for the call.
    let t = unsafe { crate::jvm::JRef::from_native_arg(thread) };
    guard("kind0", || match THREAD_HOLDER.get() {
        _ if t.is_null() => 0,
        Some(Some((f, virt))) => {
            if jni.is_instance_of(t, *virt) {
                2
            } else if jni.object_field_is_null(t, f) {
                0
            } else {
                1
            }
        }
        _ => 1,
    })
    .unwrap_or(0)
}

/// `java.lang.BciProbes.kind0(Thread)`, found by the VM under its JNI name.
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_BciProbes_kind0(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
    thread: sys::jobject,
) -> sys::jint {
    // SAFETY: same contract as kind_native.
    unsafe { kind_native(env, cls, thread) }
}

/// `java.lang.BciProbes.lock0()`, found by the VM under its JNI name (see
/// [`Java_java_lang_BciProbes_cpuNanos`]).
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_BciProbes_lock0(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
) -> sys::jboolean {
    // SAFETY: same contract as lock_native.
    unsafe { lock_native(env, cls) }
}

/// `java.lang.BciProbes.unlock0()`, found by the VM under its JNI name.
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_BciProbes_unlock0(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
) {
    // SAFETY: same contract as unlock_native.
    unsafe { unlock_native(env, cls) }
}

/// `java.lang.BciCov.lock0()`, found by the VM under its JNI name (see
/// [`Java_java_lang_BciProbes_cpuNanos`]): the coverage runtime's class lock, taken through
/// JNI for the same reason as the probes' (see [`lock_native`]; BciCov.jniLock).
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_BciCov_lock0(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
) -> sys::jboolean {
    // SAFETY: same contract as lock_native.
    unsafe { lock_native(env, cls) }
}

/// `java.lang.BciCov.unlock0()`, found by the VM under its JNI name.
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_BciCov_unlock0(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
) {
    // SAFETY: same contract as unlock_native.
    unsafe { unlock_native(env, cls) }
}

/// The natives `bci/runtime/Probes` gets with RegisterNatives (VmInit variant): lock0,
/// unlock0, kind0.
pub fn lock_natives() -> (*mut c_void, *mut c_void, *mut c_void) {
    (
        lock_native as *mut c_void,
        unlock_native as *mut c_void,
        kind_native as *mut c_void,
    )
}

/// classdump=: the original bytes of a class that got coverage counters, as
/// `<dir>/<internal name>.<hash>.class` (the hash the coverage data keys the class by: classes of one name loaded with other bytes, e.g. generated at run time, get
/// files of their own). Written once; a failure is logged once, the run goes on.
fn dump_class(dir: &str, name: &str, hash: u64, bytes: &[u8]) {
    static FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let path = std::path::Path::new(dir).join(format!("{name}.{hash:016x}.class"));
    if path.exists() {
        return;
    }
    let done = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, bytes));
    if let Err(e) = done {
        if !FAILED.swap(true, Ordering::Relaxed) {
            log(&format!(
                "classdump={dir}: cannot write {}: {e} (said once; the run goes on)",
                path.display()
            ));
        }
    }
}

/// `bci/runtime/Cov.agentRegister(className, hash, counters)`: a class instrumented by
/// `bci instrument --coverage` (its `<clinit>` calls it) gets its coverage id from the agent.
unsafe extern "system" fn offline_cov_register(
    env: *mut sys::JNIEnv,
    _cls: sys::jclass,
    class: sys::jstring,
    hash: sys::jlong,
    n: sys::jint,
) -> sys::jint {
    guard("Cov.agentRegister", || {
        let Some(a) = AGENT.get() else { return 0 };
        // SAFETY: env is this thread's JNIEnv for the duration of the native call.
        let jni = unsafe { Jni::from_raw(env) };
        // SAFETY: the VM passes the String argument as a local reference valid for the call.
        let class = unsafe { crate::jvm::JRef::from_native_arg(class) };
        let name = jni.string(class).unwrap_or_default();
        if a.opts.verbose {
            log(&format!(
                "{name}: instrumented offline for coverage, {n} counters"
            ));
        }
        a.cov.register(crate::coverage::ClassRec {
            name,
            hash: hash as u64,
            counters: n.max(0) as u32,
            exits: Vec::new(),
        })
    })
    .unwrap_or(0)
}

/// `bci/runtime/Cov.agentRegister` of a copy of the forwarder that a class loader other than the
/// boot loader defined (the class hook gives its bci/runtime/Cov the forwarder's bytes, see
/// [`class_file_load_hook`]): no RegisterNatives reaches that class, and HotSpot finds the
/// native under its JNI name in the agent library (it searches agent libraries for natives the
/// class's loader has none of).
///
/// # Safety
/// Called by the VM as the native method, with the current thread's JNIEnv.
#[no_mangle]
pub unsafe extern "system" fn Java_bci_runtime_Cov_agentRegister(
    env: *mut sys::JNIEnv,
    cls: sys::jclass,
    class: sys::jstring,
    hash: sys::jlong,
    n: sys::jint,
) -> sys::jint {
    // SAFETY: same contract as offline_cov_register.
    unsafe { offline_cov_register(env, cls, class, hash, n) }
}

/// `bci/runtime/Offline.agentRegister(className, hash, table)`: the methods of a class
/// instrumented by `bci instrument` (its `<clinit>` calls it), registered under consecutive ids
/// in the agent's table; returns the first.
unsafe extern "system" fn offline_register(
    env: *mut sys::JNIEnv,
    _cls: sys::jclass,
    class: sys::jstring,
    hash: sys::jlong,
    table: sys::jstring,
) -> sys::jint {
    guard("Offline.agentRegister", || {
        let Some(a) = AGENT.get() else { return 0 };
        // SAFETY: env is this thread's JNIEnv for the duration of the native call.
        let jni = unsafe { Jni::from_raw(env) };
        // SAFETY: the VM passes the String arguments as local references valid for the call.
        let (class, table) = unsafe {
            (
                crate::jvm::JRef::from_native_arg(class),
                crate::jvm::JRef::from_native_arg(table),
            )
        };
        let class = jni.string(class).unwrap_or_default();
        let table = jni.string(table).unwrap_or_default();
        let methods = crate::registry::offline_methods(&class, &table);
        if a.opts.verbose {
            log(&format!(
                "{class}: instrumented offline, {} methods registered",
                methods.len()
            ));
        }
        a.registry.register_offline(&class, hash as u64, methods) as sys::jint
    })
    .unwrap_or(0)
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn class_file_load_hook(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut sys::JNIEnv,
    class_being_redefined: sys::jclass,
    loader: sys::jobject,
    name: *const c_char,
    _protection_domain: sys::jobject,
    class_data_len: sys::jint,
    class_data: *const c_uchar,
    new_class_data_len: *mut sys::jint,
    new_class_data: *mut *mut c_uchar,
) {
    guard("ClassFileLoadHook", || {
        let Some(a) = AGENT.get() else { return };
        let entry_ns = if a.opts.verbose {
            runtime::monotonic_ns()
        } else {
            0
        };
        if class_data.is_null() || class_data_len <= 0 {
            return;
        }
        // A redefinition (JVMTI RedefineClasses, Instrumentation.redefineClasses: a debugger's
        // HotSwap) gives the class's new bytes: they are instrumented as the loaded version
        // was, with the same fields and methods (a redefinition may not change them: left
        // original, the new bytes failed to replace a class that has our fields). Our
        // environment cannot retransform, so retransformation starts from the bytes this hook
        // gave at load, and never comes here. New bytes that carry our probes already (read
        // back through a retransformation) are left as they are (Engine::carries_probes).
        let redefined = if class_being_redefined.is_null() {
            None
        } else {
            // SAFETY: the VM passes class_being_redefined as a reference valid for the callback.
            let class = unsafe { crate::jvm::JRef::from_native_arg(class_being_redefined) };
            match a.jvmti.class_field_names(class) {
                Ok(f) => Some(f),
                Err(e) => {
                    log(&format!("a redefined class is left as given: {e}"));
                    return;
                }
            }
        };
        // SAFETY: the VM guarantees class_data points to class_data_len bytes for the callback.
        let bytes = unsafe { std::slice::from_raw_parts(class_data, class_data_len as usize) };
        let named;
        let name = match c_str_opt(name) {
            Some(n) => n,
            // `ClassLoader.defineClass(null, …)`: the class's name is in its bytes
            None => match name_in_bytes(bytes) {
                Some(n) => {
                    named = n;
                    named.as_str()
                }
                None => return,
            },
        };
        if name == crate::rewrite::OFFLINE_COV_CLASS
            && !loader.is_null()
            && redefined.is_none()
            && a.opts.coverage
            && runtime::cov_get().is_some()
        {
            // Another loader's own bci/runtime/Cov (the runtime jar in a child-first loader:
            // a web application's WEB-INF/lib) gets the agent's forwarder, so that the
            // offline-covered classes it serves register and count with the agent too (before,
            // they counted in that copy, and the agent's file had none of them).
            let fwd = runtime::FORWARD_COV_CLASS;
            if let Ok(p) = a.jvmti.allocate_copy(fwd) {
                // SAFETY: out pointers provided by the VM for this callback.
                unsafe {
                    *new_class_data_len = fwd.len() as sys::jint;
                    *new_class_data = p;
                }
                if a.opts.verbose {
                    log(&format!(
                        "{name} of a class loader other than the boot loader: given the \
                         agent's forwarder (its offline-covered classes count with the agent)"
                    ));
                }
            }
            return;
        }
        if name.starts_with("bci/runtime/")
            || name.starts_with(runtime::EARLY_PROBES)
            || name.starts_with(crate::rewrite::COV_RUNTIME_CLASS)
            || name.starts_with(crate::trace::CLASS)
        {
            return;
        }
        let cpu_live = a.opts.cpu && a.live.load(Ordering::Acquire);
        if a.opts.cpu && !cpu_live {
            a.early_skipped.fetch_add(1, Ordering::Relaxed);
            if !a.opts.coverage {
                return;
            }
        }
        if !a.engine.selects(name) {
            if a.opts.verbose {
                a.not_selected.fetch_add(1, Ordering::Relaxed);
                a.not_selected_ns.fetch_add(
                    (runtime::monotonic_ns() - entry_ns).max(0) as u64,
                    Ordering::Relaxed,
                );
            }
            return;
        }
        if !jni.is_null() {
            // SAFETY: jni is this thread's JNIEnv for the duration of the callback.
            let jni = unsafe { Jni::from_raw(jni) };
            runtime::sync_module_reads(&a.jvmti, &jni);
        }
        let t0 = runtime::monotonic_ns();
        let result = catch_unwind(AssertUnwindSafe(|| {
            a.engine.instrument(
                name,
                bytes,
                &a.registry,
                &a.cov,
                cpu_live,
                redefined.as_deref(),
            )
        }))
        .unwrap_or_else(|_| Err("rewriter panicked".into()));
        a.hook_ns.fetch_add(
            (runtime::monotonic_ns() - t0).max(0) as u64,
            Ordering::Relaxed,
        );
        if let Ok(crate::rewrite::Rewritten { left: methods, .. }) = &result {
            if !methods.is_empty() {
                for m in methods {
                    // a part of the whole class (`name: …`), or a method (`name.m(…)…: …`)
                    if m.starts_with(&format!("{name}: ")) {
                        log(m);
                    } else {
                        log(&format!("method left original: {m}"));
                    }
                }
                let mut l = a.left.lock().unwrap_or_else(|p| p.into_inner());
                l.methods.extend(methods.iter().cloned());
            }
        }
        if let Ok(r) = &result {
            if !r.huge.is_empty() {
                huge_methods(a, &r.huge);
            }
            if let (Some(dir), Some(_)) = (&a.opts.classdump, r.cov_id) {
                dump_class(dir, name, r.cov_hash, bytes);
            }
        }
        if a.opts.cpu
            && !a.opts.coverage
            && result.as_ref().is_ok_and(|r| r.offline_cov)
            && !a.offline_cov_checked.swap(true, Ordering::Relaxed)
        {
            // the mirror of the hint below: the counters need the runtime jar's Cov
            let cov_class = format!("{}.class", crate::rewrite::OFFLINE_COV_CLASS);
            if let Ok(cp) = a.jvmti.system_property("java.class.path") {
                if !class_path_has(&cp, &cov_class) {
                    log(&format!(
                        "{name}: instrumented offline by `bci instrument --coverage`: its \
                         counters call {0}, which cpu=times does not define (coverage=y does) \
                         and which the class path (java.class.path) does not have: unless its \
                         class loader finds one, it fails with NoClassDefFoundError: {0}. Put \
                         the runtime jar (`bci runtime-jar`) on the class path (the coverage \
                         goes to its -Dbci.covfile=), or add coverage=y (the agent records it).",
                        crate::rewrite::OFFLINE_COV_CLASS
                    ));
                }
            }
        }
        if result.as_ref().is_ok_and(|r| r.marked_uncovered) {
            // coverage counters are not put into classes instrumented already
            if a.marked_uncovered.fetch_add(1, Ordering::Relaxed) == 0 {
                let runtime = if a.opts.cpu {
                    ""
                } else {
                    " Its probes call bci/runtime/Offline and Probes, which coverage=y alone \
                     does not define: it needs the runtime jar (`bci runtime-jar`) on the \
                     class path, or cpu=times."
                };
                log(&format!(
                    "{name}: instrumented offline by `bci instrument` without --coverage: \
                         it gets no coverage counters (nor does any other such class; \
                         their number is given at exit). Run the original classes, or \
                         instrument them with --coverage.{runtime}"
                ));
            }
        }
        let probed = result.as_ref().is_ok_and(|r| r.probed);
        match result.map(|r| (r.bytes, r.cpu_fields, r.cov_field)) {
            Ok((None, _, _)) => {
                if a.opts.verbose {
                    if probed {
                        log(&format!(
                            "{name}: carries this agent's probes already (bytes read back from \
                             the running class); left as it is"
                        ));
                    } else if crate::rewrite::is_marked(bytes) {
                        log(&format!(
                            "{name}: instrumented already (bci instrument); left as it is"
                        ));
                    } else {
                        log(&format!("{name}: unchanged"));
                    }
                }
            }
            Ok((Some(out), cpu_fields, cov_field)) => {
                if out.len() > i32::MAX as usize {
                    class_left_original(a, name, "rewritten class too large");
                    return;
                }
                match a.jvmti.allocate_copy(&out) {
                    Ok(p) => {
                        // SAFETY: out pointers provided by the VM for this callback.
                        unsafe {
                            *new_class_data_len = out.len() as sys::jint;
                            *new_class_data = p;
                        }
                        // (a redefined class was counted at load)
                        if redefined.is_none() {
                            a.instrumented.fetch_add(1, Ordering::Relaxed);
                        }
                        if cpu_fields {
                            a.thread_fields.store(true, Ordering::Release);
                        }
                        if cov_field {
                            a.cov_field.store(true, Ordering::Release);
                        }
                        if a.opts.verbose {
                            log(&format!(
                                "{name}: instrumented{} ({} -> {} bytes)",
                                if redefined.is_some() {
                                    " again (redefined)"
                                } else {
                                    ""
                                },
                                bytes.len(),
                                out.len()
                            ));
                        }
                    }
                    Err(e) => class_left_original(a, name, &e),
                }
            }
            Err(e) => class_left_original(a, name, &e),
        }
    });
}

unsafe extern "C" fn vm_death(_jvmti: *mut sys::jvmtiEnv, jni: *mut sys::JNIEnv) {
    guard("VMDeath", || {
        let Some(a) = AGENT.get() else { return };
        // SAFETY: jni is this thread's JNIEnv for the duration of the callback.
        let jni = unsafe { Jni::from_raw(jni) };
        {
            // set under the report file's lock, which a SIGQUIT dump holds throughout: one
            // being written ends first (both its snapshots), and none starts after
            let _gate = a.out.lock().unwrap_or_else(|p| p.into_inner());
            a.exiting.store(true, Ordering::SeqCst);
        }
        a.live.store(false, Ordering::Release);
        // the profile's recording stops right after the coverage counts are read (threads still
        // running at exit call on: both outputs count up to about the same moment), not after
        // the coverage data is written
        let stopped = std::cell::Cell::new(false);
        let stop = || {
            if runtime::get().is_some() && !stopped.replace(true) {
                let _ = runtime::stop(&jni);
            }
        };
        // doe=n: nothing is dumped at exit (no report, no coverage data); SIGQUIT dumps only
        if a.opts.coverage {
            if a.opts.doe {
                cov_dump(a, &jni, true, &stop);
                // tests only: a pause once the coverage data is written (the profile's
                // recording has stopped by then: calls made meanwhile reach neither output)
                if let Some(ms) = std::env::var("BCIAGENT_TEST_EXIT_PAUSE_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
            }
            if a.opts.verbose {
                log(&format!(
                    "VM death: {} classes with coverage counters, {} classes instrumented, {} ms in the rewriter",
                    a.cov.len(),
                    a.instrumented.load(Ordering::Relaxed),
                    a.hook_ns.load(Ordering::Relaxed) / 1_000_000
                ));
            }
        }
        if runtime::get().is_some() {
            stop();
            exit_dump(a, &jni);
        }
        // a report file made at start and never written (doe=n without SIGQUIT, a runtime
        // that never started): not left behind empty
        let mut out = a.out.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = out.as_mut().and_then(OutFile::remove_if_unwritten) {
            if a.opts.verbose {
                log(&format!("nothing was written to {p}: removed"));
            }
        }
    });
}

/// At VM death with the cpu=times runtime, its recording stopped: the report written (doe=y).
/// doe=n writes no report, but the trace file still gets the events buffered at exit (it is
/// written as events come, not dumped).
fn exit_dump(a: &Agent, jni: &Jni) {
    if a.opts.doe {
        let mut out = a.out.lock().unwrap_or_else(|p| p.into_inner());
        dump(a, jni, true, &mut out);
    } else if !a.engine.trace_rules().is_empty() {
        if let Err(e) = crate::trace::finish(jni) {
            log(&format!("tracing: {e}"));
        }
    }
    if a.opts.verbose {
        log(&format!(
            "VM death: {} classes instrumented, {} left original after errors, {} methods, {} ms in the rewriter",
            a.instrumented.load(Ordering::Relaxed),
            a.failed.load(Ordering::Relaxed),
            a.registry.len(),
            a.hook_ns.load(Ordering::Relaxed) / 1_000_000
        ));
        let n = a.not_selected.load(Ordering::Relaxed);
        log(&format!(
            "class-load hook: {n} classes not selected by the rules, {} ns each on average",
            a.not_selected_ns.load(Ordering::Relaxed) / n.max(1)
        ));
    }
}

unsafe extern "C" fn data_dump_request(_jvmti: *mut sys::jvmtiEnv) {
    guard("DataDumpRequest", || {
        let Some(a) = AGENT.get() else { return };
        if runtime::get().is_none() && runtime::cov_get().is_none() {
            return;
        }
        // held for both snapshots, and `exiting` checked once under it: both are written or
        // neither (VMDeath sets `exiting` under this lock)
        let mut out = a.out.lock().unwrap_or_else(|p| p.into_inner());
        // the JVM is exiting: its exit dump is (being) written, and is the last
        if a.exiting.load(Ordering::SeqCst) {
            return;
        }
        let mut env: *mut c_void = std::ptr::null_mut();
        // SAFETY: a.vm is the VM's JavaVM; GetEnv only reads the current thread's state.
        let rc = unsafe {
            let get_env: sys::GetEnvFn = sys::slot(a.vm.0, sys::JAVAVM_GET_ENV);
            get_env(a.vm.0, &mut env, sys::JNI_VERSION_1_8)
        };
        if rc != sys::JNI_OK || env.is_null() {
            log("data dump request on a thread without JNI; ignored");
            return;
        }
        // SAFETY: env is the current thread's JNIEnv.
        let jni = unsafe { Jni::from_raw(env.cast()) };
        if a.opts.coverage {
            cov_dump(a, &jni, false, &|| {});
        }
        // tests only: a pause between the two snapshots (for VMDeath to begin in)
        if let Some(ms) = std::env::var("BCIAGENT_TEST_QUIT_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        if runtime::get().is_some() {
            dump(a, &jni, false, &mut out);
        }
    });
}

/// Adds this JVM's coverage counts since its last dump to the data file (at exit, SIGQUIT and
/// SIGTERM, which exits). A SIGQUIT dump (`at_exit` false) once VMDeath began writes nothing.
/// `read` runs as soon as the counts are read (VMDeath stops the profile's recording there).
fn cov_dump(a: &Agent, jni: &Jni, at_exit: bool, read: &dyn Fn()) {
    #[cfg(feature = "rewriter")]
    {
        let mut f = a.cov_file.lock().unwrap_or_else(|p| p.into_inner());
        if !at_exit && a.exiting.load(Ordering::SeqCst) {
            return;
        }
        if at_exit {
            // a test still running (System.exit in it, SIGTERM from a build tool's timeout)
            // ends here, before the counts are read, as offline (Cov.writeAtExit): its counts
            // since its begin are its own, not "(outside tests)". A SIGQUIT snapshot leaves it
            // running.
            if let Err(e) = runtime::cov_end_test(jni) {
                log(&format!("cannot end the test still running: {e}"));
            }
        }
        let flat = runtime::cov_snapshot(jni);
        read();
        let flat = match flat {
            Ok(v) => v,
            Err(e) => {
                log(&format!("cannot read the coverage counts: {e}"));
                return;
            }
        };
        let (mut counts, lost) = match crate::coverage::parse_snapshot(&flat) {
            Ok(c) => c,
            Err(e) => {
                log(&e);
                return;
            }
        };
        if lost {
            log("coverage: a counter array could not be allocated; some counts are missing");
        }
        let classes = a.cov.snapshot();
        let (inflight, rewritten) = calls_in_flight(a, jni, &classes, &mut counts);
        if inflight > 0 && a.opts.verbose {
            log(&format!(
                "coverage: {inflight} calls still running counted as their blocks' exits"
            ));
        }
        if rewritten > 0 {
            log(&format!(
                "coverage: {rewritten} {} still running in code another agent's \
                 retransformation replaced, not counted as {} blocks' exits: the code after \
                 {} may show one run too many",
                if rewritten == 1 { "call" } else { "calls" },
                if rewritten == 1 { "its" } else { "their" },
                if rewritten == 1 { "it" } else { "them" },
            ));
        }
        let mut run = crate::coverage::CovFile::run_data(&classes, &counts);
        // per-test coverage (bci.runtime.Cov.begin/end under the agent)
        match runtime::cov_tests(jni).and_then(|f| crate::coverage::parse_tests(&f)) {
            Ok(t) => crate::coverage::CovFile::add_tests(&mut run, &classes, &t),
            Err(e) => log(&format!("cannot read the per-test coverage counts: {e}")),
        }
        let vm = |k: &str| runtime::system_property(&a.jvmti, k);
        let session = f.session_mut();
        session.jvm = format!("{} {}", vm("java.vm.name"), vm("java.vm.version"));
        session.command = vm("sun.java.command");
        session.start_ms = a.start_ms;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let uncovered = a.marked_uncovered.load(Ordering::Relaxed);
        if uncovered > 0 {
            log(&format!(
                "{uncovered} {} instrumented offline without --coverage {} no coverage data",
                if uncovered == 1 { "class" } else { "classes" },
                if uncovered == 1 { "has" } else { "have" }
            ));
        }
        match f.dump(&run, now) {
            Ok(at) => log(&format!(
                "coverage data of {} {} written to {at}",
                run.classes.len(),
                if run.classes.len() == 1 {
                    "class"
                } else {
                    "classes"
                }
            )),
            Err(e) => log(&format!("cannot write coverage data: {e}")),
        }
    }
    #[cfg(not(feature = "rewriter"))]
    let _ = (a, jni, at_exit, read);
}

/// Calls still running at a dump: the count after a call is derived (its block's count minus
/// its exceptional exits), so every frame of an instrumented method that is inside a call (a
/// thread blocked in `take()`, `main` in `System.exit`, anything running at a SIGQUIT) counts
/// as an exit of the block it is in, as if the call had thrown: the rest of its block and what
/// follows from it do not count as run. Its counter is the one the method's exit local names
/// there ([`bci_rewriter::coverage::inflight::exit_counter_at`], from the bytecodes the VM
/// runs). Platform threads only (JVMTI GetAllThreads: virtual threads are not in it); a
/// thread's top frame when it is Java code (a thread running, racily read) is left out, so
/// that a call just returned is never taken for one running. A frame whose method's code is not
/// the code the agent gave it (another agent's retransformation rewrote or replaced it: the
/// fingerprints differ) has its exit local found by what is written to it
/// ([`bci_rewriter::coverage::inflight::exit_local_in`]: a local renumbered), or else is left
/// as it is, the exit local kept not being that code's. Returns how many were counted, and how
/// many were left so.
#[cfg(feature = "rewriter")]
fn calls_in_flight(
    a: &Agent,
    jni: &Jni,
    classes: &[Option<crate::coverage::ClassRec>],
    counts: &mut std::collections::HashMap<usize, Vec<u64>>,
) -> (usize, usize) {
    let index = crate::coverage::InFlight::new(classes);
    if index.is_empty() || !a.bytecodes {
        return (0, 0);
    }
    let Ok(threads) = a.jvmti.all_threads() else {
        return (0, 0);
    };
    // each method's bytecodes and their fingerprint
    type Code = Option<(Vec<u8>, (u32, u64))>;
    let mut code: std::collections::HashMap<crate::jvm::MethodId, Code> = Default::default();
    let (mut n, mut not_ours) = (0, 0);
    for t in threads {
        let frames = a.jvmti.stack_trace(t, 4096).unwrap_or_default();
        jni.delete_local_ref(t);
        for (depth, &(m, at)) in frames.iter().enumerate() {
            // native frames have no bytecode index; the top Java frame is running
            if at < 0 || depth == 0 {
                continue;
            }
            let Ok(class) = a.jvmti.method_class_name(m, jni) else {
                continue;
            };
            let Ok((name, desc)) = a.jvmti.method_name(m) else {
                continue;
            };
            let Some((id, size, exit)) = index.find(&class, &name, &desc) else {
                continue;
            };
            let Some((bc, print)) = code.entry(m).or_insert_with(|| {
                let bc = a.jvmti.bytecodes(m).ok()?;
                let print = bci_rewriter::coverage::inflight::fingerprint(&bc);
                Some((bc, print))
            }) else {
                continue;
            };
            // code another agent's retransformation rewrote (an ASM LocalVariablesSorter
            // renumbers the locals: the slot kept names another local) or replaced
            let slot = if *print == exit.code {
                exit.slot
            } else if let Some(slot) = exit
                .stores
                .and_then(|s| bci_rewriter::coverage::inflight::exit_local_in(bc, s))
            {
                slot
            } else {
                not_ours += 1;
                continue;
            };
            let Some(c) = bci_rewriter::coverage::inflight::exit_counter_at(bc, slot, at as u32)
                .filter(|&c| c < size)
            else {
                continue;
            };
            let v = counts.entry(id).or_default();
            if v.len() < size as usize {
                v.resize(size as usize, 0);
            }
            v[c as usize] = v[c as usize].saturating_add(1);
            n += 1;
        }
    }
    (n, not_ours)
}

/// The tracing rules' summary: at exit the last events written and the final summary, on
/// SIGQUIT the trace file flushed and the summary so far (recording goes on). With
/// format=collapsed it goes to stderr (a collapsed profile stays one stack per line) and
/// `None` is returned; also `None` without tracing rules.
fn trace_summary(a: &Agent, jni: &Jni, at_exit: bool) -> Option<String> {
    if a.engine.trace_rules().is_empty() {
        return None;
    }
    let s = if at_exit {
        crate::trace::finish(jni)
    } else {
        crate::trace::dump(jni)
    }
    .map(|s| {
        crate::trace::explain_idle_rules(
            &s,
            &a.engine.trace_placed(),
            a.opts.rules.as_deref().unwrap_or("RULES"),
        )
    });
    match s {
        Ok(s) if a.opts.format == options::Format::Collapsed => {
            eprint!("{s}");
            None
        }
        Ok(s) => Some(s),
        Err(e) => {
            log(&format!("tracing summary: {e}"));
            None
        }
    }
}

/// Writes the report to `out`, the report file under its lock (`at_exit`: the exit dump; else
/// a SIGQUIT snapshot, whose caller checked under that lock that VMDeath had not begun).
fn dump(a: &Agent, jni: &Jni, at_exit: bool, out: &mut Option<OutFile>) {
    let Some(out) = out.as_mut() else {
        // no report file (tracing rules alone, format=collapsed): the summary to stderr
        let _ = trace_summary(a, jni, at_exit);
        return;
    };
    let (threads, failure) = match runtime::collect(jni) {
        Ok(t) => t,
        Err(e) => {
            log(&format!("cannot read the profile: {e}"));
            return;
        }
    };
    let (left_classes, left_methods) = {
        let l = a.left.lock().unwrap_or_else(|p| p.into_inner());
        (l.classes.clone(), l.methods.clone())
    };
    let snap = report::Snapshot {
        threads,
        methods: a.registry.snapshot(),
        date: runtime::ctime_now(),
        uninstrumented_early: a.early_skipped.load(Ordering::Relaxed),
        left_classes,
        left_methods,
        failure,
    };
    if let Some(f) = &snap.failure {
        log(f);
    }
    if a.opts.verbose {
        let calls: u64 = snap
            .threads
            .iter()
            .flat_map(|t| t.nodes.iter())
            .map(|n| n.count)
            .sum();
        let nodes: usize = snap.threads.iter().map(|t| t.nodes.len()).sum();
        let misses: u64 = snap.threads.iter().map(|t| t.cache_misses).sum();
        let slow: u64 = snap.threads.iter().map(|t| t.slow_enters).sum();
        log(&format!(
            "{} threads, {calls} calls ({slow} off the inlined path), {nodes} call-path nodes, \
             {misses} callee-cache misses",
            snap.threads.len()
        ));
        if let Ok(m) = runtime::memory(jni) {
            if let [nodes, tree, sinks, live, made, threads, most, sampled, virt, states, drains] =
                m[..]
            {
                log(&format!(
                    "runtime memory: {nodes} shared call-path nodes ({tree} bytes), aggregates \
                     {sinks} bytes, {live} live threads ({states} bytes of thread state), \
                     {made} thread states made for {threads} threads, at most {most} live at \
                     once; slot tables: {sampled} sampled (platform threads), {virt} virtual \
                     threads; {drains} queues drained under the lock"
                ));
            }
        }
    }
    // tracing rules alone: the file holds their summary, not an empty profile
    let profiles = a.engine.profiles() || a.engine.trace_rules().is_empty();
    let summary = trace_summary(a, jni, at_exit);
    // written as it is made: a large profile's report is never all in memory
    let written = out.write_with(a.opts.format, at_exit, |w| {
        if profiles {
            report::render_to(&a.opts, &snap, w)?;
        }
        if let Some(s) = &summary {
            w.write_all(b"\n")?;
            w.write_all(s.as_bytes())?;
        }
        Ok(())
    });
    match written {
        Ok(path) => {
            if a.opts.verbose {
                log(&format!("profile written to {path}"));
            }
            if profiles && a.opts.format == options::Format::Collapsed {
                if let Some(w) = report::depth_warning(&path, &snap, a.opts.depth) {
                    log(&w);
                }
            }
        }
        Err(e) => log(&e),
    }
}
