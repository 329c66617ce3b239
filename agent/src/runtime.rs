//! The Java side of the runtime (`bci/runtime/Probes`): defining it, switching it on, the
//! sampler, and reading its data back. Safe code over [`crate::jvm`].

use crate::jvm::{JRef, Jni, Jvmti, StaticMethod};
use crate::options::Clock;
use crate::options::Options;
use crate::report::ThreadData;
use crate::sys;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The runtime in the boot loader's unnamed module, defined at VMInit (needs read edges).
pub const PROBES: &str = "bci/runtime/Probes";
/// The runtime as a member of java.base (package java.lang), defined at early VMStart.
pub const EARLY_PROBES: &str = "java/lang/BciProbes";
const EARLY_PROBES_CLASS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/java/java/lang/BciProbes.class"));
const EARLY_PROBES_T_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java/java/lang/BciProbes$T.class"
));
const FALLBACK_PROBES_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java-fallback/java/lang/BciProbes.class"
));
const FALLBACK_PROBES_T_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java-fallback/java/lang/BciProbes$T.class"
));
const PROBES_CLASS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/java/bci/runtime/Probes.class"));
const PROBES_T_CLASS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/java/bci/runtime/Probes$T.class"));
// the aggregate of ended threads (Probes.A), the same class file in both java.lang builds
const EARLY_PROBES_A_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java/java/lang/BciProbes$A.class"
));
const FALLBACK_PROBES_A_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java-fallback/java/lang/BciProbes$A.class"
));
const PROBES_A_CLASS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/java/bci/runtime/Probes$A.class"));
// the live threads' slot tables (Probes.Slots)
const EARLY_PROBES_SLOTS_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java/java/lang/BciProbes$Slots.class"
));
const FALLBACK_PROBES_SLOTS_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java-fallback/java/lang/BciProbes$Slots.class"
));
const PROBES_SLOTS_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java/bci/runtime/Probes$Slots.class"
));

// a value per call-path node (Probes.NodeMap) and an entry of a snapshot read in parts
// (Probes.Out), by variant: [NodeMap, Out]
const EARLY_PROBES_MORE: [(&str, &[u8]); 2] = [
    (
        "java/lang/BciProbes$NodeMap",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java/java/lang/BciProbes$NodeMap.class"
        )),
    ),
    (
        "java/lang/BciProbes$Out",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java/java/lang/BciProbes$Out.class"
        )),
    ),
];
const FALLBACK_PROBES_MORE: [(&str, &[u8]); 2] = [
    (
        "java/lang/BciProbes$NodeMap",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java-fallback/java/lang/BciProbes$NodeMap.class"
        )),
    ),
    (
        "java/lang/BciProbes$Out",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java-fallback/java/lang/BciProbes$Out.class"
        )),
    ),
];
const PROBES_MORE: [(&str, &[u8]); 2] = [
    (
        "bci/runtime/Probes$NodeMap",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java/bci/runtime/Probes$NodeMap.class"
        )),
    ),
    (
        "bci/runtime/Probes$Out",
        include_bytes!(concat!(
            env!("OUT_DIR"),
            "/java/bci/runtime/Probes$Out.class"
        )),
    ),
];

/// The defined runtime class (a global reference) and its sampling and thread-end methods.
pub struct Runtime {
    class: GlobalRef,
    sample: StaticMethod,
    ended: StaticMethod,
    /// The module of Probes (the boot loader's unnamed module); None for java.lang.BciProbes,
    /// which every module reads already.
    module: Option<GlobalRef>,
    /// How many modules had a read edge added at the last sync.
    modules_seen: Mutex<usize>,
}

/// A JNI global reference, valid on every thread until deleted (never, here).
#[derive(Clone, Copy)]
pub struct GlobalRef(JRef);

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static TICK_STOP: AtomicBool = AtomicBool::new(false);

pub fn get() -> Option<&'static Runtime> {
    RUNTIME.get()
}

pub fn monotonic_ns() -> i64 {
    let mut ts = sys::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer.
    unsafe { sys::clock_gettime(sys::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

pub fn thread_cpu_ns() -> i64 {
    let mut ts = sys::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out pointer.
    unsafe { sys::clock_gettime(sys::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

pub fn sleep_us(us: u64) {
    let ts = sys::timespec {
        tv_sec: (us / 1_000_000) as i64,
        tv_nsec: ((us % 1_000_000) * 1000) as i64,
    };
    // SAFETY: ts is valid; a null remainder pointer is allowed.
    unsafe { sys::nanosleep(&ts, std::ptr::null_mut()) };
}

/// `ctime()` of now, without the newline.
pub fn ctime_now() -> String {
    let mut buf = [0 as std::ffi::c_char; 64];
    // SAFETY: time(NULL) is always valid; ctime_r writes at most 26 bytes into buf.
    let p = unsafe {
        let t = sys::time(std::ptr::null_mut());
        sys::ctime_r(&t, buf.as_mut_ptr())
    };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: ctime_r NUL-terminated buf.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    s.to_string_lossy().trim_end().to_string()
}

/// Defines the runtime classes in the boot loader, registers its native, sets its parameters.
/// `early` (java.lang.BciProbes, at early VMStart): nothing else. Otherwise (bci/runtime/Probes,
/// at VMInit) every module gets a read edge to it. Recording stays off until [`switch_on`].
/// Which build of the runtime to define.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// java.lang.BciProbes at early VMStart, finding a thread's state in the fields added to
    /// java.lang.Thread.
    ThreadFields,
    /// java.lang.BciProbes at early VMStart, looking threads up by identity hash (Thread did
    /// not get its fields).
    Early,
    /// bci/runtime/Probes at VMInit (rules naming that class).
    VmInit,
}

pub fn define(
    jvmti: &Jvmti,
    jni: &Jni,
    o: &Options,
    cpu_native: *mut std::ffi::c_void,
    variant: Variant,
) -> Result<(), String> {
    let early = variant != Variant::VmInit;
    let cls = match variant {
        Variant::ThreadFields => {
            jni.define_boot_class("java/lang/BciProbes$T", EARLY_PROBES_T_CLASS)?;
            jni.define_boot_class("java/lang/BciProbes$A", EARLY_PROBES_A_CLASS)?;
            jni.define_boot_class("java/lang/BciProbes$Slots", EARLY_PROBES_SLOTS_CLASS)?;
            for (name, bytes) in EARLY_PROBES_MORE {
                jni.define_boot_class(name, bytes)?;
            }
            jni.define_boot_class(EARLY_PROBES, EARLY_PROBES_CLASS)?
        }
        Variant::Early => {
            jni.define_boot_class("java/lang/BciProbes$T", FALLBACK_PROBES_T_CLASS)?;
            jni.define_boot_class("java/lang/BciProbes$A", FALLBACK_PROBES_A_CLASS)?;
            jni.define_boot_class("java/lang/BciProbes$Slots", FALLBACK_PROBES_SLOTS_CLASS)?;
            for (name, bytes) in FALLBACK_PROBES_MORE {
                jni.define_boot_class(name, bytes)?;
            }
            jni.define_boot_class(EARLY_PROBES, FALLBACK_PROBES_CLASS)?
        }
        Variant::VmInit => {
            jni.define_boot_class("bci/runtime/Probes$T", PROBES_T_CLASS)?;
            jni.define_boot_class("bci/runtime/Probes$A", PROBES_A_CLASS)?;
            jni.define_boot_class("bci/runtime/Probes$Slots", PROBES_SLOTS_CLASS)?;
            for (name, bytes) in PROBES_MORE {
                jni.define_boot_class(name, bytes)?;
            }
            jni.define_boot_class(PROBES, PROBES_CLASS)?
        }
    };
    if o.clock != Clock::Wall && !early {
        // (clock=sample: a thread's CPU time at its registration, end and at VM death)
        // java.lang.BciProbes (java.base) is not given its native this way: HotSpot logs
        // "Re-registering of platform native method" to stdout when agent code registers a
        // native of a named module's class. The VM finds it by its JNI name in this library
        // instead (callbacks::Java_java_lang_BciProbes_cpuNanos), when start() first calls it.
        jni.register_native(cls, c"cpuNanos", c"()J", cpu_native)?;
        let (_, of) = crate::callbacks::cpu_natives();
        jni.register_native(cls, c"cpuNanosOf", c"(Ljava/lang/Thread;)J", of)?;
    }
    // the probes' locked sections take the lock through JNI (virtual threads wait pinned)
    if !early {
        let (lock, unlock, kind) = crate::callbacks::lock_natives();
        jni.register_native(cls, c"lock0", c"()Z", lock)?;
        jni.register_native(cls, c"unlock0", c"()V", unlock)?;
        jni.register_native(cls, c"kind0", c"(Ljava/lang/Thread;)I", kind)?;
    }
    jni.set_static_bool(cls, "jniLock", true)?;
    jni.set_static_int(cls, "clock", o.clock.code())?;
    jni.set_static_bool(cls, "timed", o.clock != Clock::Sample)?;
    jni.set_static_int(cls, "depth", o.depth as i32)?;
    jni.set_static_bool(cls, "perThread", o.thread)?;
    // tests only: the runtime's memory budget in bytes (else a quarter of the heap)
    if let Some(b) = std::env::var("BCIAGENT_TEST_BUDGET")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
    {
        let f = jni.static_field_id(cls, "testBudget", "J")?;
        jni.set_static_long(cls, &f, b);
    }
    let sample = jni.static_method_id(cls, "sample", "([J)[J")?;
    let ended = jni.static_method_id(cls, "ended", "(Ljava/lang/Thread;)V")?;
    let global = jni.new_global_ref(cls);
    if global.is_null() {
        return Err("NewGlobalRef failed".into());
    }
    let module = if early {
        None
    } else {
        let module_local = jni.class_module(cls)?;
        let module = jni.new_global_ref(module_local);
        jni.delete_local_ref(module_local);
        Some(GlobalRef(module))
    };
    let _ = RUNTIME.set(Runtime {
        class: GlobalRef(global),
        sample,
        ended,
        module,
        modules_seen: Mutex::new(0),
    });
    sync_module_reads(jvmti, jni);
    Ok(())
}

/// Defines bci/runtime/Offline (boot loader, next to bci/runtime/Probes) in agent mode: the
/// `<clinit>` of an offline-instrumented class registers its methods through `native`
/// (`agentRegister(String, long, String)I`), so the agent's report names them.
/// With the built-in runtime (`early`), bci/runtime/Probes is first defined as a forwarder to
/// java.lang.BciProbes, which then records those classes with the rest.
pub fn define_offline(jni: &Jni, native: *mut std::ffi::c_void, early: bool) -> Result<(), String> {
    if early {
        jni.define_boot_class(PROBES, crate::runtime_jar::FORWARD_PROBES_CLASS)?;
    }
    let cls = jni.define_boot_class(
        crate::runtime_jar::OFFLINE,
        crate::runtime_jar::OFFLINE_CLASS,
    )?;
    jni.register_native(
        cls,
        c"agentRegister",
        c"(Ljava/lang/String;JLjava/lang/String;)I",
        native,
    )?;
    jni.set_static_bool(cls, "agent", true)
}

/// Read edges: every named module must read the boot loader's unnamed module (where Probes
/// is) to call it. Done at VMInit for every module, and again from the class hook whenever the
/// number of modules changed (a new ModuleLayer defines its modules before loading classes).
pub fn sync_module_reads(jvmti: &Jvmti, jni: &Jni) {
    let Some(rt) = get() else { return };
    let Some(module) = rt.module else { return };
    let Ok(mods) = jvmti.all_modules() else {
        return;
    };
    let mut seen = rt.modules_seen.lock().unwrap_or_else(|p| p.into_inner());
    if mods.len() != *seen {
        for &m in &mods {
            let _ = jvmti.add_module_reads(m, module.0);
        }
        *seen = mods.len();
    }
    for m in mods {
        jni.delete_local_ref(m);
    }
}

pub fn switch_on(jni: &Jni) -> Result<(), String> {
    let rt = get().ok_or("runtime not defined")?;
    // Diagnostic for scripts/bench-cpu-times.sh: classes are rewritten but probes stay off,
    // which measures what the added bytecode alone costs.
    if std::env::var_os("BCIAGENT_PROBES_OFF").is_some() {
        return Ok(());
    }
    jni.call_static_void(rt.class.0, "start")
}

pub fn stop(jni: &Jni) -> Result<(), String> {
    TICK_STOP.store(true, Ordering::Relaxed);
    let rt = get().ok_or("runtime not defined")?;
    jni.call_static_void(rt.class.0, "stop")
}

/// A thread ended (JVMTI ThreadEnd, or VirtualThreadEnd on JDK 21+; called on that thread):
/// `Probes.ended` folds its data into the shared aggregate and frees its slot. Errors are
/// cleared; nothing is thrown back into the VM.
pub fn thread_ended(jni: &Jni, thread: JRef) {
    let Some(rt) = get() else { return };
    if thread.is_null() {
        return;
    }
    let _ = jni.call_static_void_obj(rt.class.0, &rt.ended, thread);
}

/// Body of the sampler thread: every `ms` ms, reads each profiled thread's CPU time (JVMTI
/// GetThreadCpuTime) and hands it to `Probes.sample`, which charges the CPU time used since
/// the thread was last charged (its registration, its previous sample) to that thread's
/// current call path. Live threads sit in slots that are reused once their thread ended: per
/// slot the sampler keeps the thread's serial and a global reference (deleted when the slot
/// changes hands, so that ended threads can be collected). The runtime keeps each thread's
/// CPU time at its last charge, so that the thread's end and VM death charge the rest.
pub fn sample_loop(jvmti: &Jvmti, jni: &Jni, ms: u64) {
    let Some(rt) = get() else { return };
    struct Slot {
        serial: i64,
        thread: Option<JRef>,
    }
    let mut slots: Vec<Slot> = Vec::new();
    // [version, (serial, cpu)*]; version -1 = never read
    let mut msg: Vec<i64> = vec![-1];
    // A platform thread that starts between two samples is sampled within two steps of its
    // start too, not only at the next interval: the runtime charges the CPU time of its last
    // moments (its end, VM death) to what its last sample saw when its stack is empty (run()
    // returned), so a thread shorter than the interval must have been sampled once. The
    // runtime's `version` changes when a platform thread registers or ends: the first round
    // after the change learns of the thread's slot, the second one samples it.
    let step = ms.min(10);
    let version = if step < ms {
        jni.static_field_id(rt.class.0, "version", "J").ok()
    } else {
        None // a round every step already
    };
    let mut seen = -1;
    let mut owed = 0;
    let mut waited = 0;
    while !TICK_STOP.load(Ordering::Relaxed) {
        sleep_us(step * 1000);
        if TICK_STOP.load(Ordering::Relaxed) {
            break;
        }
        waited += step;
        if let Some(f) = &version {
            let v = jni.get_static_long(rt.class.0, f);
            if v != seen {
                seen = v;
                owed = 2;
            }
        }
        if waited < ms && owed == 0 {
            continue;
        }
        owed = if owed > 0 { owed - 1 } else { 0 };
        waited = 0;
        msg.truncate(1);
        for s in slots.iter_mut() {
            let cpu = match s.thread {
                Some(g) => match jvmti.thread_cpu_time(g) {
                    Ok(cpu) => cpu,
                    Err(_) => {
                        // ended, or a virtual thread (no CPU time of its own)
                        jni.delete_global_ref(g);
                        s.thread = None;
                        -1
                    }
                },
                None => -1,
            };
            msg.push(s.serial);
            msg.push(cpu);
        }
        let table = match jni.call_static_longs_longs(rt.class.0, &rt.sample, &msg) {
            Ok(Some(t)) if !t.is_empty() => t,
            _ => continue,
        };
        msg[0] = table[0];
        let serials = &table[1..];
        for (i, &serial) in serials.iter().enumerate() {
            if i == slots.len() {
                slots.push(Slot {
                    serial: -1,
                    thread: None,
                });
            }
            let s = &mut slots[i];
            if s.serial == serial {
                continue;
            }
            if let Some(g) = s.thread.take() {
                jni.delete_global_ref(g);
            }
            s.serial = serial;
            if serial < 0 {
                continue;
            }
            let t = jni
                .call_static_object_i(rt.class.0, "thread", "(I)Ljava/lang/Thread;", i as i32)
                .ok()
                .filter(|t| !t.is_null());
            if let Some(t) = t {
                let g = jni.new_global_ref(t);
                jni.delete_local_ref(t);
                match jvmti.thread_cpu_time(g) {
                    Ok(_) => s.thread = Some(g),
                    Err(_) => jni.delete_global_ref(g),
                }
            }
        }
        for s in slots.iter_mut().skip(serials.len()) {
            if let Some(g) = s.thread.take() {
                jni.delete_global_ref(g);
            }
            s.serial = -1;
        }
        slots.truncate(serials.len());
    }
}

/// `Probes.memory()`, for the log: call-path nodes, bytes of the shared tree, bytes of the
/// sinks, live threads, thread states made, threads registered, most live at once, slots of
/// the sampled (platform) and virtual threads' tables, bytes of the live threads' states,
/// queues drained under the runtime's lock.
pub fn memory(jni: &Jni) -> Result<Vec<i64>, String> {
    let rt = get().ok_or("runtime not defined")?;
    let arr = jni.call_static_object(rt.class.0, "memory", "()[J")?;
    let v = jni.long_array(arr);
    jni.delete_local_ref(arr);
    Ok(v)
}

/// The runtime class's monitor, held while it lives (JNI MonitorEnter/MonitorExit).
struct Locked<'a> {
    jni: &'a Jni,
    obj: JRef,
    held: bool,
}

impl<'a> Locked<'a> {
    fn new(jni: &'a Jni, obj: JRef) -> Self {
        let held = jni.monitor(obj, true);
        Locked { jni, obj, held }
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        if self.held {
            self.jni.monitor(self.obj, false);
        }
    }
}

/// Reads the data to report: `Probes.snapshot` takes it under the runtime's lock (ended
/// threads folded, live threads, thread=y rows), then each entry is read by index, in parts.
/// The lock is held from before the snapshot to after the last part: the entries are read
/// from the runtime's aggregates as they are (no copy of a large profile on the Java heap),
/// so nothing may change them meanwhile (a thread ending, a queue drained, the sampler wait
/// for the dump). Sampled per-method totals (clock=sample) are kept for all threads at once
/// and go to the first entry. Exceptions (out of memory in the runtime) are cleared, never
/// printed on the program's stderr: the runtime then stops recording and says why, and an
/// entry that could not be read is left out with a note; the others are reported.
pub fn collect(jni: &Jni) -> Result<(Vec<ThreadData>, Option<String>), String> {
    let rt = get().ok_or("runtime not defined")?;
    let lock = Locked::new(jni, rt.class.0);
    let n = jni.call_static_int_quiet(rt.class.0, "snapshot")?;
    let mut out = Vec::with_capacity(n.max(0) as usize);
    let mut lost = Vec::new();
    for i in 0..n {
        let name = match jni.call_static_object_i_quiet(
            rt.class.0,
            "threadName",
            "(I)Ljava/lang/String;",
            i,
        ) {
            Ok(r) => {
                let s = jni.string(r);
                jni.delete_local_ref(r);
                s
            }
            Err(_) => None,
        };
        // read in parts (Probes.exportNext), decoded as they come: a large profile's whole
        // array (32 bytes a call path) is never in memory, on either side
        let mut err = None;
        let mut part: Vec<i64> = Vec::new();
        let mut at = 0;
        let mut done = false;
        let values = std::iter::from_fn(|| loop {
            if let Some(&v) = part.get(at) {
                at += 1;
                return Some(v);
            }
            if done {
                return None;
            }
            match jni.call_static_object_i_quiet(rt.class.0, "exportNext", "(I)[J", i) {
                Ok(arr) if arr.is_null() => done = true,
                Ok(arr) => {
                    part = jni.long_array(arr);
                    jni.delete_local_ref(arr);
                    at = 0;
                }
                Err(e) => {
                    err = Some(e);
                    done = true;
                }
            }
        });
        let t = ThreadData::decode_iter(name.clone(), values);
        match (t, err) {
            (Some(t), None) => out.push(t),
            (_, e) => {
                let why = e.unwrap_or_else(|| "malformed export".into());
                crate::callbacks::log(&format!("cannot read the profile of entry {i}: {why}"));
                lost.push(name.unwrap_or_else(|| format!("entry {i}")));
            }
        }
    }
    let totals = match jni.call_static_object_quiet(rt.class.0, "sampledTotals", "()[J") {
        Ok(arr) => {
            let v = jni.long_array(arr);
            jni.delete_local_ref(arr);
            v
        }
        Err(_) => Vec::new(),
    };
    if totals.iter().any(|&t| t > 0) {
        if out.is_empty() {
            out.push(ThreadData::default());
        }
        let first = &mut out[0].total_ns;
        if first.len() < totals.len() {
            first.resize(totals.len(), 0);
        }
        for (d, t) in first.iter_mut().zip(&totals) {
            *d += (*t).max(0) as u64;
        }
    }
    // the snapshot let go (and what a stop during the dump left for later done)
    let _ = jni.call_static_void_quiet(rt.class.0, "dumped");
    let failure = match jni.call_static_object_quiet(rt.class.0, "failure", "()Ljava/lang/String;")
    {
        Ok(f) => {
            let s = jni.string(f);
            jni.delete_local_ref(f);
            s
        }
        Err(_) => None,
    };
    drop(lock);
    let failure = if lost.is_empty() {
        failure
    } else {
        let note = format!(
            "the data of {} could not be read (out of memory) and is left out of this report",
            lost.join(", ")
        );
        Some(match failure {
            Some(f) => format!("{f}; {note}"),
            None => note,
        })
    };
    Ok((out, failure))
}

// ---- coverage (coverage=y): java.lang.BciCov

/// java.lang.BciCov as build.rs compiled it (java/cov/).
const COV_CLASS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/java-cov/java/lang/BciCov.class"));
/// bci/runtime/Cov forwarding to java.lang.BciCov (java/forward/), for offline-covered classes
/// (also the bytes the class hook gives another loader's copy of bci/runtime/Cov).
pub(crate) const FORWARD_COV_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java-forward/bci/runtime/Cov.class"
));

/// The defined coverage runtime (a global reference) and its methods.
pub struct CovRuntime {
    class: GlobalRef,
    ended: StaticMethod,
}

static COV_RUNTIME: OnceLock<CovRuntime> = OnceLock::new();

pub fn cov_get() -> Option<&'static CovRuntime> {
    COV_RUNTIME.get()
}

/// Defines java.lang.BciCov in the boot loader (at early VMStart, before any Java code runs:
/// classes instrumented for coverage from the first one loaded can call it).
pub fn define_cov(jni: &Jni) -> Result<(), String> {
    let cls = jni.define_boot_class(crate::rewrite::COV_RUNTIME_CLASS, COV_CLASS)?;
    let ended = jni.static_method_id(cls, "ended", "(Ljava/lang/Thread;)V")?;
    let global = jni.new_global_ref(cls);
    if global.is_null() {
        return Err("NewGlobalRef failed".into());
    }
    let _ = COV_RUNTIME.set(CovRuntime {
        class: GlobalRef(global),
        ended,
    });
    Ok(())
}

/// Defines bci/runtime/Cov (boot loader, at VMInit) as a forwarder to java.lang.BciCov whose
/// `register` calls `native` (`agentRegister(String, long, int)I`).
pub fn define_cov_forwarder(jni: &Jni, native: *mut std::ffi::c_void) -> Result<(), String> {
    let cls = jni.define_boot_class("bci/runtime/Cov", FORWARD_COV_CLASS)?;
    jni.register_native(cls, c"agentRegister", c"(Ljava/lang/String;JI)I", native)
}

/// At VMInit: BciCov takes its class lock through its natives lock0/unlock0 (JNI monitor
/// calls: a virtual thread waiting for it stays mounted) from now on (`BciCov.useJniLock`).
pub fn cov_jni_lock(jni: &Jni) -> Result<(), String> {
    let rt = cov_get().ok_or("coverage runtime not defined")?;
    jni.call_static_void(rt.class.0, "useJniLock")
}

/// At VMInit, with java.lang.Thread given rewrite::COV_THREAD_FIELD: every thread counts in
/// its own arrays from now on (before: shared arrays, see BciCov.FIELD).
pub fn cov_per_thread(jni: &Jni) -> Result<(), String> {
    let rt = cov_get().ok_or("coverage runtime not defined")?;
    jni.set_static_bool(rt.class.0, "FIELD", true)
}

/// At VMInit without the early hook ([`crate::options::Options::late_hook`]): every thread
/// counts in its own arrays from now on, found through a ThreadLocal (`BciCov.local`).
pub fn cov_local(jni: &Jni) -> Result<(), String> {
    let rt = cov_get().ok_or("coverage runtime not defined")?;
    jni.call_static_void(rt.class.0, "local")
}

/// A thread ended: `BciCov.ended` adds its counts to the shared sums.
pub fn cov_thread_ended(jni: &Jni, thread: JRef) {
    let Some(rt) = cov_get() else { return };
    if thread.is_null() {
        return;
    }
    let _ = jni.call_static_void_obj(rt.class.0, &rt.ended, thread);
}

/// `BciCov.snapshot()`: the counts of every thread, flattened (coverage::parse_snapshot).
pub fn cov_snapshot(jni: &Jni) -> Result<Vec<i64>, String> {
    let rt = cov_get().ok_or("coverage runtime not defined")?;
    let r = jni.call_static_object(rt.class.0, "snapshot", "()[J")?;
    let v = jni.long_array(r);
    jni.delete_local_ref(r);
    Ok(v)
}

/// BciCov.end(): the test still running (if any) ends, its window's counts kept as its own
/// (the exit dump's, as the runtime jar's Cov.writeAtExit does).
pub fn cov_end_test(jni: &Jni) -> Result<(), String> {
    let rt = cov_get().ok_or("coverage runtime not defined")?;
    jni.call_static_void(rt.class.0, "end")
}

/// BciCov.tests(): per-test counts, flattened (see coverage::parse_tests).
pub fn cov_tests(jni: &Jni) -> Result<Vec<i64>, String> {
    let rt = cov_get().ok_or("coverage runtime not defined")?;
    let r = jni.call_static_object(rt.class.0, "tests", "()[J")?;
    let v = jni.long_array(r);
    jni.delete_local_ref(r);
    Ok(v)
}

/// A system property of the VM (JVMTI GetSystemProperty), or "".
pub fn system_property(jvmti: &Jvmti, name: &str) -> String {
    jvmti.system_property(name).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The code length of `name desc` in a class.
    fn code_len(class: &[u8], name: &str, desc: &str) -> usize {
        let cf = bci::ClassFile::parse(class).unwrap();
        cf.method_code(name, Some(desc))
            .unwrap()
            .unwrap_or_else(|| panic!("{name}{desc} not found"))
            .code
            .len()
    }

    /// Every covered method's entry runs the class's `bci$a`, which calls `find`: HotSpot's
    /// C1 inlines no method longer than MaxInlineSize (35 bytes), so a longer `find` is a
    /// real call on every entry of C1-compiled code (it was: 59 bytes, 3 % of javac's
    /// samples in the called copy). Each runtime's `find` must stay within it.
    #[test]
    fn coverage_fast_lookups_fit_c1_inlining() {
        let jar = crate::runtime_jar::CLASSES
            .iter()
            .find(|(p, _)| *p == "bci/runtime/Cov.class")
            .expect("the runtime jar has bci/runtime/Cov")
            .1;
        for (what, class) in [
            ("java.lang.BciCov", COV_CLASS),
            ("the agent's bci.runtime.Cov", FORWARD_COV_CLASS),
            ("the runtime jar's bci.runtime.Cov", jar),
        ] {
            let n = code_len(class, "find", "(I)[J");
            assert!(n <= 35, "{what}.find(I)[J is {n} bytes long");
            code_len(class, "create", "(II)[J");
        }
    }
}
