//! Raw JNI/JVMTI bindings, written by hand for what the agent uses.
//!
//! Function tables are addressed by slot: the index of the function pointer in
//! `struct JNINativeInterface_` / `struct jvmtiInterface_1_` (reserved slots included), checked
//! against JDK 17's jni.h and jvmti.h with `offsetof(...)/sizeof(void*)`. The layout is frozen
//! by the JNI/JVMTI specifications (new functions are only ever appended).
#![allow(non_camel_case_types, dead_code)]

use std::ffi::{c_char, c_int, c_uchar, c_void};

pub type jint = i32;
pub type jlong = i64;
pub type jboolean = u8;
pub type jsize = jint;
pub type jobject = *mut c_void;
pub type jclass = jobject;
pub type jthread = jobject;
pub type jstring = jobject;
pub type jarray = jobject;
pub type jlongArray = jobject;
pub type jfieldID = *mut c_void;
pub type jmethodID = *mut c_void;
pub type jvmtiError = c_int;

/// `JNIEnv` is a pointer to the function table.
pub type JNIEnv = *const *const c_void;
/// `jvmtiEnv` is a pointer to the function table.
pub type jvmtiEnv = *const *const c_void;
/// `JavaVM` is a pointer to the invoke interface table.
pub type JavaVM = *const *const c_void;

pub const JNI_OK: jint = 0;
pub const JNI_ERR: jint = -1;
pub const JNI_VERSION_1_8: jint = 0x0001_0008;
pub const JVMTI_VERSION_11: jint = 0x300b_0000;
pub const JVMTI_VERSION_9: jint = 0x3009_0000;

pub const JVMTI_ENABLE: c_int = 1;

pub const JVMTI_EVENT_VM_INIT: c_int = 50;
pub const JVMTI_EVENT_VM_DEATH: c_int = 51;
pub const JVMTI_EVENT_CLASS_FILE_LOAD_HOOK: c_int = 54;
pub const JVMTI_EVENT_VM_START: c_int = 57;
pub const JVMTI_EVENT_DATA_DUMP_REQUEST: c_int = 71;
pub const JVMTI_EVENT_THREAD_END: c_int = 53;
/// JDK 21+ (needs can_support_virtual_threads).
pub const JVMTI_EVENT_VIRTUAL_THREAD_END: c_int = 88;

pub const JVMTI_PHASE_ONLOAD: c_int = 1;
pub const JVMTI_PHASE_PRIMORDIAL: c_int = 2;
pub const JVMTI_PHASE_START: c_int = 6;
pub const JVMTI_PHASE_LIVE: c_int = 4;
pub const JVMTI_PHASE_DEAD: c_int = 8;

pub const JVMTI_THREAD_NORM_PRIORITY: jint = 5;

/// `jvmtiCapabilities`: 16 bytes of bit fields.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct jvmtiCapabilities {
    pub bits: [u8; 16],
}

impl jvmtiCapabilities {
    /// can_generate_all_class_hook_events: byte 3, mask 0x04.
    pub fn set_all_class_hook_events(&mut self) {
        self.bits[3] |= 0x04;
    }
    /// can_get_bytecodes: byte 0, mask 0x08.
    pub fn set_get_bytecodes(&mut self) {
        self.bits[0] |= 0x08;
    }
    /// can_get_thread_cpu_time: byte 2, mask 0x80.
    pub fn set_thread_cpu_time(&mut self) {
        self.bits[2] |= 0x80;
    }
    /// can_generate_early_vmstart: byte 5, mask 0x02.
    pub fn set_early_vmstart(&mut self) {
        self.bits[5] |= 0x02;
    }
    /// can_generate_early_class_hook_events: byte 5, mask 0x04.
    pub fn set_early_class_hook_events(&mut self) {
        self.bits[5] |= 0x04;
    }
    /// can_support_virtual_threads (JDK 21+): byte 5, mask 0x10.
    pub fn set_support_virtual_threads(&mut self) {
        self.bits[5] |= 0x10;
    }
    pub fn support_virtual_threads(&self) -> bool {
        self.bits[5] & 0x10 != 0
    }
}

/// `JNINativeMethod`.
#[repr(C)]
pub struct JNINativeMethod {
    pub name: *const c_char,
    pub signature: *const c_char,
    pub fn_ptr: *mut c_void,
}

/// One JNI `jvalue` (only the variants the agent passes).
#[repr(C)]
#[derive(Clone, Copy)]
pub union jvalue {
    pub i: jint,
    pub j: jlong,
    pub l: jobject,
}

// ---- JVMTI event callback types and the callbacks struct (39 pointer slots up to JDK 21's
// VirtualThreadEnd; an older VM copies only the slots it knows)

pub type VmInitFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread);
pub type VmDeathFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv);
pub type VmStartFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv);
pub type DataDumpFn = unsafe extern "C" fn(*mut jvmtiEnv);
pub type ClassFileLoadHookFn = unsafe extern "C" fn(
    *mut jvmtiEnv,
    *mut JNIEnv,
    jclass,
    jobject,
    *const c_char,
    jobject,
    jint,
    *const c_uchar,
    *mut jint,
    *mut *mut c_uchar,
);
pub type ThreadEndFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread);
pub type AgentThreadFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, *mut c_void);

pub const CALLBACK_SLOTS: usize = 39;
pub const CB_THREAD_END: usize = 3;
pub const CB_VIRTUAL_THREAD_END: usize = 38;
pub const CB_VM_INIT: usize = 0;
pub const CB_VM_DEATH: usize = 1;
pub const CB_CLASS_FILE_LOAD_HOOK: usize = 4;
pub const CB_VM_START: usize = 7;
pub const CB_DATA_DUMP_REQUEST: usize = 21;

#[repr(C)]
pub struct jvmtiEventCallbacks {
    pub slots: [*const c_void; CALLBACK_SLOTS],
}

// ---- JVMTI function slots (index into jvmtiInterface_1)
pub mod jvmti_slot {
    pub const SET_EVENT_NOTIFICATION_MODE: usize = 1;
    pub const GET_ALL_MODULES: usize = 2;
    pub const GET_ALL_THREADS: usize = 3;
    pub const RUN_AGENT_THREAD: usize = 11;
    pub const ALLOCATE: usize = 45;
    pub const DEALLOCATE: usize = 46;
    pub const GET_CLASS_SIGNATURE: usize = 47;
    pub const GET_CLASS_FIELDS: usize = 52;
    pub const GET_FIELD_NAME: usize = 59;
    pub const GET_METHOD_NAME: usize = 63;
    pub const GET_METHOD_DECLARING_CLASS: usize = 64;
    pub const GET_BYTECODES: usize = 74;
    pub const ADD_MODULE_READS: usize = 93;
    pub const GET_STACK_TRACE: usize = 103;
    pub const SET_EVENT_CALLBACKS: usize = 121;
    pub const GET_ERROR_NAME: usize = 127;
    pub const GET_SYSTEM_PROPERTY: usize = 130;
    pub const GET_PHASE: usize = 132;
    pub const GET_THREAD_CPU_TIME: usize = 136;
    pub const GET_POTENTIAL_CAPABILITIES: usize = 139;
    pub const ADD_CAPABILITIES: usize = 141;
}

// ---- JNI function slots (index into JNINativeInterface_)
pub mod jni_slot {
    pub const DEFINE_CLASS: usize = 5;
    pub const FIND_CLASS: usize = 6;
    pub const EXCEPTION_OCCURRED: usize = 15;
    pub const EXCEPTION_DESCRIBE: usize = 16;
    pub const EXCEPTION_CLEAR: usize = 17;
    pub const NEW_GLOBAL_REF: usize = 21;
    pub const DELETE_GLOBAL_REF: usize = 22;
    pub const DELETE_LOCAL_REF: usize = 23;
    pub const NEW_OBJECT_A: usize = 30;
    pub const IS_INSTANCE_OF: usize = 32;
    pub const GET_METHOD_ID: usize = 33;
    pub const CALL_OBJECT_METHOD_A: usize = 36;
    pub const GET_FIELD_ID: usize = 94;
    pub const GET_OBJECT_FIELD: usize = 95;
    pub const GET_STATIC_METHOD_ID: usize = 113;
    pub const CALL_STATIC_OBJECT_METHOD_A: usize = 116;
    pub const CALL_STATIC_INT_METHOD_A: usize = 131;
    pub const CALL_STATIC_VOID_METHOD_A: usize = 143;
    pub const GET_STATIC_FIELD_ID: usize = 144;
    pub const SET_STATIC_BOOLEAN_FIELD: usize = 155;
    pub const GET_STATIC_LONG_FIELD: usize = 151;
    pub const SET_STATIC_INT_FIELD: usize = 159;
    pub const SET_STATIC_LONG_FIELD: usize = 160;
    pub const NEW_STRING_UTF: usize = 167;
    pub const GET_STRING_LENGTH: usize = 164;
    pub const GET_STRING_UTF_LENGTH: usize = 168;
    pub const GET_ARRAY_LENGTH: usize = 171;
    pub const GET_LONG_ARRAY_REGION: usize = 204;
    pub const NEW_LONG_ARRAY: usize = 180;
    pub const SET_LONG_ARRAY_REGION: usize = 212;
    pub const REGISTER_NATIVES: usize = 215;
    pub const MONITOR_ENTER: usize = 217;
    pub const MONITOR_EXIT: usize = 218;
    pub const GET_STRING_UTF_REGION: usize = 221;
    pub const EXCEPTION_CHECK: usize = 228;
}

// ---- JavaVM invoke interface slots
pub const JAVAVM_GET_ENV: usize = 6;

// Function pointer types, one per slot used.
pub type GetEnvFn = unsafe extern "C" fn(*mut JavaVM, *mut *mut c_void, jint) -> jint;

pub type SetEventNotificationModeFn =
    unsafe extern "C" fn(*mut jvmtiEnv, c_int, c_int, jthread, ...) -> jvmtiError;
pub type GetAllModulesFn =
    unsafe extern "C" fn(*mut jvmtiEnv, *mut jint, *mut *mut jobject) -> jvmtiError;
pub type RunAgentThreadFn =
    unsafe extern "C" fn(*mut jvmtiEnv, jthread, AgentThreadFn, *const c_void, jint) -> jvmtiError;
pub type AllocateFn = unsafe extern "C" fn(*mut jvmtiEnv, jlong, *mut *mut c_uchar) -> jvmtiError;
pub type GetSystemPropertyFn =
    unsafe extern "C" fn(*mut jvmtiEnv, *const c_char, *mut *mut c_char) -> jvmtiError;
pub type DeallocateFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut c_uchar) -> jvmtiError;
pub type GetClassFieldsFn =
    unsafe extern "C" fn(*mut jvmtiEnv, jclass, *mut jint, *mut *mut jfieldID) -> jvmtiError;
pub type GetFieldNameFn = unsafe extern "C" fn(
    *mut jvmtiEnv,
    jclass,
    jfieldID,
    *mut *mut c_char,
    *mut *mut c_char,
    *mut *mut c_char,
) -> jvmtiError;
pub type GetAllThreadsFn =
    unsafe extern "C" fn(*mut jvmtiEnv, *mut jint, *mut *mut jthread) -> jvmtiError;
/// `jvmtiFrameInfo`: a frame's method and bytecode index.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct jvmtiFrameInfo {
    pub method: jmethodID,
    pub location: jlong,
}
pub type GetStackTraceFn = unsafe extern "C" fn(
    *mut jvmtiEnv,
    jthread,
    jint,
    jint,
    *mut jvmtiFrameInfo,
    *mut jint,
) -> jvmtiError;
pub type GetMethodNameFn = unsafe extern "C" fn(
    *mut jvmtiEnv,
    jmethodID,
    *mut *mut c_char,
    *mut *mut c_char,
    *mut *mut c_char,
) -> jvmtiError;
pub type GetMethodDeclaringClassFn =
    unsafe extern "C" fn(*mut jvmtiEnv, jmethodID, *mut jclass) -> jvmtiError;
pub type GetClassSignatureFn =
    unsafe extern "C" fn(*mut jvmtiEnv, jclass, *mut *mut c_char, *mut *mut c_char) -> jvmtiError;
pub type GetBytecodesFn =
    unsafe extern "C" fn(*mut jvmtiEnv, jmethodID, *mut jint, *mut *mut c_uchar) -> jvmtiError;
pub type AddModuleReadsFn = unsafe extern "C" fn(*mut jvmtiEnv, jobject, jobject) -> jvmtiError;
pub type SetEventCallbacksFn =
    unsafe extern "C" fn(*mut jvmtiEnv, *const jvmtiEventCallbacks, jint) -> jvmtiError;
pub type GetErrorNameFn =
    unsafe extern "C" fn(*mut jvmtiEnv, jvmtiError, *mut *mut c_char) -> jvmtiError;
pub type GetThreadCpuTimeFn =
    unsafe extern "C" fn(*mut jvmtiEnv, jthread, *mut jlong) -> jvmtiError;
pub type NewLongArrayFn = unsafe extern "C" fn(*mut JNIEnv, jsize) -> jlongArray;
pub type SetLongArrayRegionFn =
    unsafe extern "C" fn(*mut JNIEnv, jlongArray, jsize, jsize, *const jlong);
pub type GetPhaseFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut c_int) -> jvmtiError;
pub type CapabilitiesFn =
    unsafe extern "C" fn(*mut jvmtiEnv, *const jvmtiCapabilities) -> jvmtiError;
pub type GetPotentialCapabilitiesFn =
    unsafe extern "C" fn(*mut jvmtiEnv, *mut jvmtiCapabilities) -> jvmtiError;

pub type DefineClassFn =
    unsafe extern "C" fn(*mut JNIEnv, *const c_char, jobject, *const i8, jsize) -> jclass;
pub type FindClassFn = unsafe extern "C" fn(*mut JNIEnv, *const c_char) -> jclass;
pub type JniVoidFn = unsafe extern "C" fn(*mut JNIEnv);
pub type ExceptionOccurredFn = unsafe extern "C" fn(*mut JNIEnv) -> jobject;
pub type MonitorFn = unsafe extern "C" fn(*mut JNIEnv, jobject) -> jint;
pub type ExceptionCheckFn = unsafe extern "C" fn(*mut JNIEnv) -> jboolean;
pub type NewGlobalRefFn = unsafe extern "C" fn(*mut JNIEnv, jobject) -> jobject;
pub type DeleteLocalRefFn = unsafe extern "C" fn(*mut JNIEnv, jobject);
pub type DeleteGlobalRefFn = unsafe extern "C" fn(*mut JNIEnv, jobject);
pub type NewObjectAFn =
    unsafe extern "C" fn(*mut JNIEnv, jclass, jmethodID, *const jvalue) -> jobject;
pub type GetMethodIdFn =
    unsafe extern "C" fn(*mut JNIEnv, jclass, *const c_char, *const c_char) -> jmethodID;
pub type CallObjectMethodAFn =
    unsafe extern "C" fn(*mut JNIEnv, jobject, jmethodID, *const jvalue) -> jobject;
pub type CallStaticObjectMethodAFn =
    unsafe extern "C" fn(*mut JNIEnv, jclass, jmethodID, *const jvalue) -> jobject;
pub type CallStaticIntMethodAFn =
    unsafe extern "C" fn(*mut JNIEnv, jclass, jmethodID, *const jvalue) -> jint;
pub type CallStaticVoidMethodAFn =
    unsafe extern "C" fn(*mut JNIEnv, jclass, jmethodID, *const jvalue);
pub type IsInstanceOfFn = unsafe extern "C" fn(*mut JNIEnv, jobject, jclass) -> jboolean;
pub type GetObjectFieldFn = unsafe extern "C" fn(*mut JNIEnv, jobject, jfieldID) -> jobject;
pub type GetStaticFieldIdFn =
    unsafe extern "C" fn(*mut JNIEnv, jclass, *const c_char, *const c_char) -> jfieldID;
pub type SetStaticBooleanFieldFn = unsafe extern "C" fn(*mut JNIEnv, jclass, jfieldID, jboolean);
pub type SetStaticIntFieldFn = unsafe extern "C" fn(*mut JNIEnv, jclass, jfieldID, jint);
pub type SetStaticLongFieldFn = unsafe extern "C" fn(*mut JNIEnv, jclass, jfieldID, jlong);
pub type GetStaticLongFieldFn = unsafe extern "C" fn(*mut JNIEnv, jclass, jfieldID) -> jlong;
pub type NewStringUtfFn = unsafe extern "C" fn(*mut JNIEnv, *const c_char) -> jstring;
pub type GetStringLengthFn = unsafe extern "C" fn(*mut JNIEnv, jstring) -> jsize;
pub type GetStringUtfLengthFn = unsafe extern "C" fn(*mut JNIEnv, jstring) -> jsize;
pub type GetStringUtfRegionFn =
    unsafe extern "C" fn(*mut JNIEnv, jstring, jsize, jsize, *mut c_char);
pub type GetArrayLengthFn = unsafe extern "C" fn(*mut JNIEnv, jarray) -> jsize;
pub type GetLongArrayRegionFn =
    unsafe extern "C" fn(*mut JNIEnv, jlongArray, jsize, jsize, *mut jlong);
pub type RegisterNativesFn =
    unsafe extern "C" fn(*mut JNIEnv, jclass, *const JNINativeMethod, jint) -> jint;

/// Reads slot `idx` of the function table `env` points to, as a function pointer of type `F`.
///
/// # Safety
/// `env` must be a valid JNIEnv/jvmtiEnv/JavaVM pointer and `F` the function pointer type of
/// that slot.
pub unsafe fn slot<F: Copy>(env: *mut *const *const c_void, idx: usize) -> F {
    // SAFETY: caller guarantees env points to a live function table with at least idx+1 slots
    // and that F is a (pointer-sized) fn pointer type matching the slot.
    unsafe {
        let table: *const *const c_void = *env;
        let p: *const c_void = *table.add(idx);
        std::mem::transmute_copy::<*const c_void, F>(&p)
    }
}

// ---- libc functions the agent needs (no libc crate: four symbols)
#[repr(C)]
pub struct timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}
pub const CLOCK_MONOTONIC: c_int = 1;
pub const CLOCK_THREAD_CPUTIME_ID: c_int = 3;

extern "C" {
    pub fn clock_gettime(clk: c_int, ts: *mut timespec) -> c_int;
    pub fn nanosleep(req: *const timespec, rem: *mut timespec) -> c_int;
    pub fn time(t: *mut i64) -> i64;
    pub fn ctime_r(t: *const i64, buf: *mut c_char) -> *mut c_char;
    fn geteuid() -> u32;
}

/// This process's effective user id (0: root).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { geteuid() }
}

// fcntl record locks: what Java's FileChannel.lock takes on Linux (flock locks do not exclude
// them), so the agent and the runtime jar's writer exclude each other on `<covfile>.lck`.
#[repr(C)]
struct Flock {
    l_type: i16,
    l_whence: i16,
    l_start: i64,
    l_len: i64,
    l_pid: i32,
}
const F_GETLK: c_int = 5;
const F_SETLK: c_int = 6;
const F_SETLKW: c_int = 7;
const F_WRLCK: i16 = 1;
const F_UNLCK: i16 = 2;

extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
}

/// Releases this process's lock on the whole of `f` ([`lock_whole_file`]), `f` staying open.
pub fn unlock_whole_file(f: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let l = Flock {
        l_type: F_UNLCK,
        l_whence: 0,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    // SAFETY: f's descriptor is open for the call; l is a valid struct flock for F_SETLK.
    if unsafe { fcntl(f.as_raw_fd(), F_SETLK, &l as *const Flock) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Blocks until this process holds a write lock on the whole of `f` (released when any
/// descriptor of the file in this process is closed, or by [`unlock_whole_file`]).
pub fn lock_whole_file(f: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let l = Flock {
        l_type: F_WRLCK,
        l_whence: 0,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    loop {
        // SAFETY: f's descriptor is open for the call; l is a valid struct flock for F_SETLKW.
        let rc = unsafe { fcntl(f.as_raw_fd(), F_SETLKW, &l as *const Flock) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// [`lock_whole_file`], saying so through `note` (once, with the holder's process id when the
/// kernel gives it) if the lock is not this process's after `after`: a stopped or hung holder
/// (a JVM stopped mid-dump, a debugger) would otherwise make this process wait without a word.
pub fn lock_whole_file_noting(
    f: &std::fs::File,
    after: std::time::Duration,
    note: impl FnOnce(Option<i32>),
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut l = Flock {
        l_type: F_WRLCK,
        l_whence: 0,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    let t0 = std::time::Instant::now();
    while t0.elapsed() < after {
        // SAFETY: f's descriptor is open for the call; l is a valid struct flock for F_SETLK.
        if unsafe { fcntl(f.as_raw_fd(), F_SETLK, &l as *const Flock) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        let busy = matches!(e.raw_os_error(), Some(11 | 13)); // EAGAIN, EACCES
        if !busy && e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: as above; F_GETLK fills l with a conflicting lock, or sets l_type to F_UNLCK.
    let holder = (unsafe { fcntl(f.as_raw_fd(), F_GETLK, &mut l as *mut Flock) } == 0
        && l.l_type != F_UNLCK
        && l.l_pid > 0)
        .then_some(l.l_pid);
    note(holder);
    lock_whole_file(f)
}
