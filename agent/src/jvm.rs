//! Safe wrappers over the raw JNI/JVMTI tables in [`crate::sys`]. A wrapper is made from a raw
//! pointer only through an `unsafe fn from_raw`; after that its methods are safe to call on the
//! thread (JNI) or from any thread (JVMTI) the pointer is valid for.

use crate::sys::{self, jni_slot as ns, jvmti_slot as js};
use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// A JVMTI environment pointer (valid from Agent_OnLoad until the VM dies, on every thread).
#[derive(Clone, Copy)]
pub struct Jvmti(*mut sys::jvmtiEnv);

// SAFETY: a jvmtiEnv is usable from any thread (JVMTI spec: "environments are not thread local").
unsafe impl Send for Jvmti {}
// SAFETY: as above.
unsafe impl Sync for Jvmti {}

fn check(code: sys::jvmtiError, what: &str) -> Result<(), String> {
    if code == 0 {
        Ok(())
    } else {
        Err(format!("{what}: JVMTI error {code}"))
    }
}

/// The JVM's modified UTF-8 (JNI and JVMTI strings: NUL as C0 80, a supplementary character
/// as its two surrogates, 3 bytes each) as text; a lone surrogate becomes U+FFFD. Read as
/// UTF-8 before, an emoji in a traced argument became six U+FFFD in the summary's slowest line.
fn text(b: &[u8]) -> String {
    bci::cp::decode_mutf8(b).into_owned()
}

impl Jvmti {
    /// # Safety
    /// `env` must be a jvmtiEnv obtained from GetEnv that stays valid for the VM's life.
    pub unsafe fn from_raw(env: *mut sys::jvmtiEnv) -> Jvmti {
        Jvmti(env)
    }

    pub fn raw(&self) -> *mut sys::jvmtiEnv {
        self.0
    }

    fn f<F: Copy>(&self, idx: usize) -> F {
        // SAFETY: self.0 is a valid jvmtiEnv (from_raw contract); callers pass the slot's type.
        unsafe { sys::slot::<F>(self.0, idx) }
    }

    pub fn add_capabilities(&self, caps: &sys::jvmtiCapabilities) -> Result<(), String> {
        let f: sys::CapabilitiesFn = self.f(js::ADD_CAPABILITIES);
        // SAFETY: valid env, caps points to a 16-byte jvmtiCapabilities.
        check(unsafe { f(self.0, caps) }, "AddCapabilities")
    }

    pub fn potential_capabilities(&self) -> Result<sys::jvmtiCapabilities, String> {
        let f: sys::GetPotentialCapabilitiesFn = self.f(js::GET_POTENTIAL_CAPABILITIES);
        let mut caps = sys::jvmtiCapabilities::default();
        // SAFETY: valid env, out pointer to a local jvmtiCapabilities.
        check(unsafe { f(self.0, &mut caps) }, "GetPotentialCapabilities")?;
        Ok(caps)
    }

    pub fn set_event_callbacks(&self, cbs: &sys::jvmtiEventCallbacks) -> Result<(), String> {
        let f: sys::SetEventCallbacksFn = self.f(js::SET_EVENT_CALLBACKS);
        let size = std::mem::size_of::<sys::jvmtiEventCallbacks>() as sys::jint;
        // SAFETY: valid env; the VM copies the struct.
        check(unsafe { f(self.0, cbs, size) }, "SetEventCallbacks")
    }

    pub fn enable_event(&self, event: c_int) -> Result<(), String> {
        let f: sys::SetEventNotificationModeFn = self.f(js::SET_EVENT_NOTIFICATION_MODE);
        // SAFETY: valid env; null thread = all threads.
        check(
            unsafe { f(self.0, sys::JVMTI_ENABLE, event, std::ptr::null_mut()) },
            "SetEventNotificationMode",
        )
    }

    pub fn phase(&self) -> c_int {
        let f: sys::GetPhaseFn = self.f(js::GET_PHASE);
        let mut p: c_int = 0;
        // SAFETY: valid env, out pointer to a local.
        unsafe { f(self.0, &mut p) };
        p
    }

    /// Copies `bytes` into a buffer from JVMTI `Allocate` (which the VM frees).
    pub fn allocate_copy(&self, bytes: &[u8]) -> Result<*mut u8, String> {
        let f: sys::AllocateFn = self.f(js::ALLOCATE);
        let mut p: *mut u8 = std::ptr::null_mut();
        // SAFETY: valid env, out pointer to a local.
        check(unsafe { f(self.0, bytes.len() as i64, &mut p) }, "Allocate")?;
        if p.is_null() {
            return Err("Allocate returned null".into());
        }
        // SAFETY: p points to bytes.len() freshly allocated bytes that do not overlap `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
        Ok(p)
    }

    fn deallocate(&self, p: *mut u8) {
        let f: sys::DeallocateFn = self.f(js::DEALLOCATE);
        // SAFETY: p came from a JVMTI function that allocates with Allocate.
        unsafe { f(self.0, p) };
    }

    /// A system property of the VM (JVMTI GetSystemProperty: the VM's view, e.g.
    /// `java.vm.name`, `sun.java.command`).
    pub fn system_property(&self, name: &str) -> Result<String, String> {
        let f: sys::GetSystemPropertyFn = self.f(js::GET_SYSTEM_PROPERTY);
        let n = CString::new(name).map_err(|e| e.to_string())?;
        let mut p: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid env, NUL-terminated name, out pointer to a local.
        check(
            unsafe { f(self.0, n.as_ptr(), &mut p) },
            "GetSystemProperty",
        )?;
        if p.is_null() {
            return Ok(String::new());
        }
        // SAFETY: the VM returned a NUL-terminated string allocated with Allocate.
        let v = text(unsafe { CStr::from_ptr(p) }.to_bytes());
        self.deallocate(p.cast());
        Ok(v)
    }

    /// The names of the fields `cls` declares (JVMTI GetClassFields, GetFieldName: no class
    /// initialization, unlike JNI's GetStaticFieldID).
    pub fn class_field_names(&self, cls: JRef) -> Result<Vec<String>, String> {
        let f: sys::GetClassFieldsFn = self.f(js::GET_CLASS_FIELDS);
        let name_of: sys::GetFieldNameFn = self.f(js::GET_FIELD_NAME);
        let mut n: sys::jint = 0;
        let mut arr: *mut sys::jfieldID = std::ptr::null_mut();
        // SAFETY: valid env and class reference, out pointers to locals.
        check(
            unsafe { f(self.0, cls.0, &mut n, &mut arr) },
            "GetClassFields",
        )?;
        let mut v = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n.max(0) as usize {
            let mut p: *mut c_char = std::ptr::null_mut();
            // SAFETY: arr holds n field ids of cls; a null signature/generic pointer is allowed.
            let e = unsafe {
                name_of(
                    self.0,
                    cls.0,
                    *arr.add(i),
                    &mut p,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            if e == 0 && !p.is_null() {
                // SAFETY: p is a NUL-terminated modified-UTF-8 string from Allocate.
                v.push(text(unsafe { CStr::from_ptr(p) }.to_bytes()));
                self.deallocate(p.cast());
            }
        }
        if !arr.is_null() {
            self.deallocate(arr.cast());
        }
        Ok(v)
    }

    /// The live platform threads, as local references of the calling thread's JNI frame.
    pub fn all_threads(&self) -> Result<Vec<JRef>, String> {
        let f: sys::GetAllThreadsFn = self.f(js::GET_ALL_THREADS);
        let mut n: sys::jint = 0;
        let mut arr: *mut sys::jthread = std::ptr::null_mut();
        // SAFETY: valid env, out pointers to locals.
        check(unsafe { f(self.0, &mut n, &mut arr) }, "GetAllThreads")?;
        let mut v = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n.max(0) as usize {
            // SAFETY: arr holds n thread references.
            v.push(JRef(unsafe { *arr.add(i) }));
        }
        if !arr.is_null() {
            self.deallocate(arr.cast());
        }
        Ok(v)
    }

    /// The frames of `thread`, top first: (method, bytecode index), at most `max`.
    pub fn stack_trace(&self, thread: JRef, max: usize) -> Result<Vec<(MethodId, i64)>, String> {
        let f: sys::GetStackTraceFn = self.f(js::GET_STACK_TRACE);
        let mut frames = vec![
            sys::jvmtiFrameInfo {
                method: std::ptr::null_mut(),
                location: 0,
            };
            max
        ];
        let mut n: sys::jint = 0;
        // SAFETY: valid env and thread reference; the buffer holds `max` frames.
        check(
            unsafe {
                f(
                    self.0,
                    thread.0,
                    0,
                    max as sys::jint,
                    frames.as_mut_ptr(),
                    &mut n,
                )
            },
            "GetStackTrace",
        )?;
        frames.truncate(n.clamp(0, max as sys::jint) as usize);
        Ok(frames
            .iter()
            .map(|fr| (MethodId(fr.method), fr.location))
            .collect())
    }

    /// A method's name and descriptor.
    pub fn method_name(&self, m: MethodId) -> Result<(String, String), String> {
        let f: sys::GetMethodNameFn = self.f(js::GET_METHOD_NAME);
        let (mut name, mut sig): (*mut c_char, *mut c_char) =
            (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid env and method id; a null generic pointer is allowed.
        check(
            unsafe { f(self.0, m.0, &mut name, &mut sig, std::ptr::null_mut()) },
            "GetMethodName",
        )?;
        Ok((self.take_string(name), self.take_string(sig)))
    }

    /// The internal name of the class declaring method `m` (`java/lang/String`).
    pub fn method_class_name(&self, m: MethodId, jni: &Jni) -> Result<String, String> {
        let f: sys::GetMethodDeclaringClassFn = self.f(js::GET_METHOD_DECLARING_CLASS);
        let sig_of: sys::GetClassSignatureFn = self.f(js::GET_CLASS_SIGNATURE);
        let mut cls: sys::jclass = std::ptr::null_mut();
        // SAFETY: valid env and method id, out pointer to a local.
        check(
            unsafe { f(self.0, m.0, &mut cls) },
            "GetMethodDeclaringClass",
        )?;
        let mut sig: *mut c_char = std::ptr::null_mut();
        // SAFETY: valid env, cls a class reference from the call above.
        let e = unsafe { sig_of(self.0, cls, &mut sig, std::ptr::null_mut()) };
        jni.delete_local_ref(JRef(cls));
        check(e, "GetClassSignature")?;
        let s = self.take_string(sig);
        Ok(s.strip_prefix('L')
            .and_then(|s| s.strip_suffix(';'))
            .unwrap_or(&s)
            .to_string())
    }

    /// The bytecodes of method `m` as the VM runs them (needs can_get_bytecodes).
    pub fn bytecodes(&self, m: MethodId) -> Result<Vec<u8>, String> {
        let f: sys::GetBytecodesFn = self.f(js::GET_BYTECODES);
        let mut n: sys::jint = 0;
        let mut p: *mut u8 = std::ptr::null_mut();
        // SAFETY: valid env and method id, out pointers to locals.
        check(unsafe { f(self.0, m.0, &mut n, &mut p) }, "GetBytecodes")?;
        if p.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: p points to n bytes allocated by the VM with Allocate.
        let v = unsafe { std::slice::from_raw_parts(p, n.max(0) as usize) }.to_vec();
        self.deallocate(p);
        Ok(v)
    }

    /// A string a JVMTI function allocated (null: empty), freed.
    fn take_string(&self, p: *mut c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: p is a NUL-terminated modified-UTF-8 string from Allocate.
        let s = text(unsafe { CStr::from_ptr(p) }.to_bytes());
        self.deallocate(p.cast());
        s
    }

    /// Every module the VM knows (live phase), as local references of `jni`'s frame.
    pub fn all_modules(&self) -> Result<Vec<JRef>, String> {
        let f: sys::GetAllModulesFn = self.f(js::GET_ALL_MODULES);
        let mut n: sys::jint = 0;
        let mut arr: *mut sys::jobject = std::ptr::null_mut();
        // SAFETY: valid env, out pointers to locals.
        check(unsafe { f(self.0, &mut n, &mut arr) }, "GetAllModules")?;
        let mut v = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n.max(0) as usize {
            // SAFETY: arr holds n module references.
            v.push(JRef(unsafe { *arr.add(i) }));
        }
        self.deallocate(arr.cast());
        Ok(v)
    }

    pub fn add_module_reads(&self, module: JRef, to: JRef) -> Result<(), String> {
        let f: sys::AddModuleReadsFn = self.f(js::ADD_MODULE_READS);
        // SAFETY: valid env and module references from GetAllModules / Class.getModule.
        check(unsafe { f(self.0, module.0, to.0) }, "AddModuleReads")
    }

    /// CPU time of a live thread (needs can_get_thread_cpu_time).
    pub fn thread_cpu_time(&self, thread: JRef) -> Result<i64, String> {
        let f: sys::GetThreadCpuTimeFn = self.f(js::GET_THREAD_CPU_TIME);
        let mut t: i64 = 0;
        // SAFETY: valid env, thread is a Thread reference, out pointer to a local.
        check(unsafe { f(self.0, thread.0, &mut t) }, "GetThreadCpuTime")?;
        Ok(t)
    }

    /// Starts `thread` (a new, unstarted java.lang.Thread) running `proc_` as a daemon agent thread.
    pub fn run_agent_thread(&self, thread: JRef, proc_: sys::AgentThreadFn) -> Result<(), String> {
        let f: sys::RunAgentThreadFn = self.f(js::RUN_AGENT_THREAD);
        // SAFETY: valid env, thread is a live Thread reference, proc_ an extern "C" fn.
        check(
            unsafe {
                f(
                    self.0,
                    thread.0,
                    proc_,
                    std::ptr::null(),
                    sys::JVMTI_THREAD_NORM_PRIORITY,
                )
            },
            "RunAgentThread",
        )
    }
}

/// A JNIEnv, valid on the current thread for the duration of the callback that received it.
pub struct Jni(*mut sys::JNIEnv);

impl Jni {
    /// # Safety
    /// `env` must be the JNIEnv of the current thread, valid while the `Jni` is used.
    pub unsafe fn from_raw(env: *mut sys::JNIEnv) -> Jni {
        Jni(env)
    }

    fn f<F: Copy>(&self, idx: usize) -> F {
        // SAFETY: self.0 is the current thread's JNIEnv (from_raw contract).
        unsafe { sys::slot::<F>(self.0, idx) }
    }

    /// Clears a pending exception, returning whether there was one (described on stderr if `describe`).
    pub fn take_exception(&self, describe: bool) -> bool {
        let check: sys::ExceptionCheckFn = self.f(ns::EXCEPTION_CHECK);
        // SAFETY: valid env.
        if unsafe { check(self.0) } == 0 {
            return false;
        }
        if describe {
            let d: sys::JniVoidFn = self.f(ns::EXCEPTION_DESCRIBE);
            // SAFETY: valid env with a pending exception.
            unsafe { d(self.0) };
        }
        let c: sys::JniVoidFn = self.f(ns::EXCEPTION_CLEAR);
        // SAFETY: valid env.
        unsafe { c(self.0) };
        true
    }

    fn okr(&self, v: sys::jobject, what: &str) -> Result<JRef, String> {
        self.ok(v, what).map(JRef)
    }

    fn ok<T>(&self, v: *mut T, what: &str) -> Result<*mut T, String> {
        if self.take_exception(false) || v.is_null() {
            Err(format!("{what} failed"))
        } else {
            Ok(v)
        }
    }

    /// Defines a class in the boot loader (null loader).
    pub fn define_boot_class(&self, name: &str, bytes: &[u8]) -> Result<JRef, String> {
        let f: sys::DefineClassFn = self.f(ns::DEFINE_CLASS);
        let cname = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: valid env, NUL-terminated name, bytes valid for len.
        let c = unsafe {
            f(
                self.0,
                cname.as_ptr(),
                std::ptr::null_mut(),
                bytes.as_ptr().cast(),
                bytes.len() as i32,
            )
        };
        self.okr(c, &format!("DefineClass {name}"))
    }

    pub fn find_class(&self, name: &str) -> Result<JRef, String> {
        let f: sys::FindClassFn = self.f(ns::FIND_CLASS);
        let cname = CString::new(name).map_err(|e| e.to_string())?;
        // SAFETY: valid env, NUL-terminated name.
        let c = unsafe { f(self.0, cname.as_ptr()) };
        self.okr(c, &format!("FindClass {name}"))
    }

    pub fn new_global_ref(&self, o: JRef) -> JRef {
        let f: sys::NewGlobalRefFn = self.f(ns::NEW_GLOBAL_REF);
        // SAFETY: valid env and reference.
        JRef(unsafe { f(self.0, o.0) })
    }

    pub fn delete_local_ref(&self, o: JRef) {
        if o.is_null() {
            return;
        }
        let f: sys::DeleteLocalRefFn = self.f(ns::DELETE_LOCAL_REF);
        // SAFETY: valid env and a local reference of this frame.
        unsafe { f(self.0, o.0) }
    }

    fn static_field(&self, cls: JRef, name: &str, sig: &str) -> Result<sys::jfieldID, String> {
        let f: sys::GetStaticFieldIdFn = self.f(ns::GET_STATIC_FIELD_ID);
        let n = CString::new(name).map_err(|e| e.to_string())?;
        let s = CString::new(sig).map_err(|e| e.to_string())?;
        // SAFETY: valid env, class reference and C strings.
        let id = unsafe { f(self.0, cls.0, n.as_ptr(), s.as_ptr()) };
        self.ok(id, &format!("GetStaticFieldID {name}"))
    }

    pub fn static_field_id(&self, cls: JRef, name: &str, sig: &str) -> Result<FieldId, String> {
        self.static_field(cls, name, sig).map(FieldId)
    }

    /// The id of instance field `name` (`sig`) of `cls`.
    pub fn field_id(&self, cls: JRef, name: &str, sig: &str) -> Result<InstanceFieldId, String> {
        // GetFieldID has GetStaticFieldID's signature
        let f: sys::GetStaticFieldIdFn = self.f(ns::GET_FIELD_ID);
        let n = CString::new(name).map_err(|e| e.to_string())?;
        let s = CString::new(sig).map_err(|e| e.to_string())?;
        // SAFETY: valid env, class reference and C strings.
        let id = unsafe { f(self.0, cls.0, n.as_ptr(), s.as_ptr()) };
        self.ok(id, &format!("GetFieldID {name}"))
            .map(InstanceFieldId)
    }

    /// Whether `obj` is an instance of `cls` (JNI IsInstanceOf).
    pub fn is_instance_of(&self, obj: JRef, cls: JRef) -> bool {
        let f: sys::IsInstanceOfFn = self.f(ns::IS_INSTANCE_OF);
        // SAFETY: valid env and live references.
        unsafe { f(self.0, obj.0, cls.0) != 0 }
    }

    /// Whether reference field `f` of `obj` is null (`obj` must be an instance of the class
    /// `f` was looked up in).
    pub fn object_field_is_null(&self, obj: JRef, f: &InstanceFieldId) -> bool {
        let get: sys::GetObjectFieldFn = self.f(ns::GET_OBJECT_FIELD);
        // SAFETY: valid env, a live reference and a field id of its class (caller's contract).
        let v = unsafe { get(self.0, obj.0, f.0) };
        if v.is_null() {
            return true;
        }
        self.delete_local_ref(JRef(v));
        false
    }

    pub fn set_static_bool(&self, cls: JRef, name: &str, v: bool) -> Result<(), String> {
        let id = self.static_field(cls, name, "Z")?;
        let f: sys::SetStaticBooleanFieldFn = self.f(ns::SET_STATIC_BOOLEAN_FIELD);
        // SAFETY: valid env, class and field id of a static boolean field.
        unsafe { f(self.0, cls.0, id, v as u8) };
        Ok(())
    }

    pub fn set_static_int(&self, cls: JRef, name: &str, v: i32) -> Result<(), String> {
        let id = self.static_field(cls, name, "I")?;
        let f: sys::SetStaticIntFieldFn = self.f(ns::SET_STATIC_INT_FIELD);
        // SAFETY: valid env, class and field id of a static int field.
        unsafe { f(self.0, cls.0, id, v) };
        Ok(())
    }

    pub fn set_static_long(&self, cls: JRef, id: &FieldId, v: i64) {
        let f: sys::SetStaticLongFieldFn = self.f(ns::SET_STATIC_LONG_FIELD);
        // SAFETY: valid env; id is a static long field of cls (FieldId only comes from this class).
        unsafe { f(self.0, cls.0, id.0, v) };
    }

    pub fn get_static_long(&self, cls: JRef, id: &FieldId) -> i64 {
        let f: sys::GetStaticLongFieldFn = self.f(ns::GET_STATIC_LONG_FIELD);
        // SAFETY: valid env; id is a static long field of cls (FieldId only comes from this class).
        unsafe { f(self.0, cls.0, id.0) }
    }

    fn static_method(&self, cls: JRef, name: &str, sig: &str) -> Result<sys::jmethodID, String> {
        let f: sys::GetMethodIdFn = self.f(ns::GET_STATIC_METHOD_ID);
        let n = CString::new(name).map_err(|e| e.to_string())?;
        let s = CString::new(sig).map_err(|e| e.to_string())?;
        // SAFETY: valid env, class reference and C strings.
        let id = unsafe { f(self.0, cls.0, n.as_ptr(), s.as_ptr()) };
        self.ok(id, &format!("GetStaticMethodID {name}{sig}"))
    }

    pub fn static_method_id(
        &self,
        cls: JRef,
        name: &str,
        sig: &str,
    ) -> Result<StaticMethod, String> {
        self.static_method(cls, name, sig).map(StaticMethod)
    }

    /// Calls a static `([J)V` method of `cls` with a new `long[]` holding `v`.
    pub fn call_static_void_longs(
        &self,
        cls: JRef,
        m: &StaticMethod,
        v: &[i64],
    ) -> Result<(), String> {
        let new: sys::NewLongArrayFn = self.f(ns::NEW_LONG_ARRAY);
        // SAFETY: valid env.
        let arr = self.okr(unsafe { new(self.0, v.len() as i32) }, "NewLongArray")?;
        let set: sys::SetLongArrayRegionFn = self.f(ns::SET_LONG_ARRAY_REGION);
        // SAFETY: arr has v.len() elements; v is valid for that many reads.
        unsafe { set(self.0, arr.0, 0, v.len() as i32, v.as_ptr()) };
        let f: sys::CallStaticVoidMethodAFn = self.f(ns::CALL_STATIC_VOID_METHOD_A);
        let args = [sys::jvalue { l: arr.0 }];
        // SAFETY: valid env; m is a static ([J)V method of cls (StaticMethod only comes from it).
        unsafe { f(self.0, cls.0, m.0, args.as_ptr()) };
        self.take_exception(false);
        self.delete_local_ref(arr);
        Ok(())
    }

    /// Calls a static `()V` method.
    pub fn call_static_void(&self, cls: JRef, name: &str) -> Result<(), String> {
        self.static_void(cls, name, true)
    }

    /// [`call_static_void`](Self::call_static_void), clearing an exception without printing
    /// it (see [`call_static_int_quiet`](Self::call_static_int_quiet)).
    pub fn call_static_void_quiet(&self, cls: JRef, name: &str) -> Result<(), String> {
        self.static_void(cls, name, false)
    }

    fn static_void(&self, cls: JRef, name: &str, describe: bool) -> Result<(), String> {
        let m = self.static_method(cls, name, "()V")?;
        let f: sys::CallStaticVoidMethodAFn = self.f(ns::CALL_STATIC_VOID_METHOD_A);
        // SAFETY: valid env, static method id of cls with no arguments.
        unsafe { f(self.0, cls.0, m, std::ptr::null()) };
        if self.take_exception(describe) {
            return Err(format!("{name} threw"));
        }
        Ok(())
    }

    /// Calls a static `()I` method.
    pub fn call_static_int(&self, cls: JRef, name: &str) -> Result<i32, String> {
        self.static_int(cls, name, true)
    }

    /// [`call_static_int`](Self::call_static_int), clearing an exception without printing it
    /// (the dump: an OutOfMemoryError there is ours, not the program's, and the log says it).
    pub fn call_static_int_quiet(&self, cls: JRef, name: &str) -> Result<i32, String> {
        self.static_int(cls, name, false)
    }

    fn static_int(&self, cls: JRef, name: &str, describe: bool) -> Result<i32, String> {
        let m = self.static_method(cls, name, "()I")?;
        let f: sys::CallStaticIntMethodAFn = self.f(ns::CALL_STATIC_INT_METHOD_A);
        // SAFETY: valid env, static method id of cls with no arguments.
        let v = unsafe { f(self.0, cls.0, m, std::ptr::null()) };
        if self.take_exception(describe) {
            return Err(format!("{name} threw"));
        }
        Ok(v)
    }

    /// Calls a static `(I)<sig-ret>` object method; returns the local reference (may be null).
    pub fn call_static_object_i(
        &self,
        cls: JRef,
        name: &str,
        sig: &str,
        arg: i32,
    ) -> Result<JRef, String> {
        self.static_object(cls, name, sig, Some(arg), true)
    }

    /// [`call_static_object_i`](Self::call_static_object_i), clearing an exception without
    /// printing it (see [`call_static_int_quiet`](Self::call_static_int_quiet)).
    pub fn call_static_object_i_quiet(
        &self,
        cls: JRef,
        name: &str,
        sig: &str,
        arg: i32,
    ) -> Result<JRef, String> {
        self.static_object(cls, name, sig, Some(arg), false)
    }

    /// Calls a static `()<sig-ret>` object method; returns the local reference (may be null).
    pub fn call_static_object(&self, cls: JRef, name: &str, sig: &str) -> Result<JRef, String> {
        self.static_object(cls, name, sig, None, true)
    }

    /// [`call_static_object`](Self::call_static_object), clearing an exception without
    /// printing it (see [`call_static_int_quiet`](Self::call_static_int_quiet)).
    pub fn call_static_object_quiet(
        &self,
        cls: JRef,
        name: &str,
        sig: &str,
    ) -> Result<JRef, String> {
        self.static_object(cls, name, sig, None, false)
    }

    /// A static object method taking no argument or one int (`arg`).
    fn static_object(
        &self,
        cls: JRef,
        name: &str,
        sig: &str,
        arg: Option<i32>,
        describe: bool,
    ) -> Result<JRef, String> {
        let m = self.static_method(cls, name, sig)?;
        let f: sys::CallStaticObjectMethodAFn = self.f(ns::CALL_STATIC_OBJECT_METHOD_A);
        let args = [sys::jvalue {
            i: arg.unwrap_or(0),
        }];
        let a = if arg.is_some() {
            args.as_ptr()
        } else {
            std::ptr::null()
        };
        // SAFETY: valid env, static method id of cls taking one int (a points to it) or no
        // arguments (a is null), as its signature says.
        let v = unsafe { f(self.0, cls.0, m, a) };
        if self.take_exception(describe) {
            return Err(format!("{name} threw"));
        }
        Ok(JRef(v))
    }

    /// Calls a static `(Ljava/lang/Thread;)V`-like method of `cls` with one object argument;
    /// an exception it throws is cleared (and reported as an error).
    pub fn call_static_void_obj(
        &self,
        cls: JRef,
        m: &StaticMethod,
        arg: JRef,
    ) -> Result<(), String> {
        let f: sys::CallStaticVoidMethodAFn = self.f(ns::CALL_STATIC_VOID_METHOD_A);
        let args = [sys::jvalue { l: arg.0 }];
        // SAFETY: valid env; m is a static method of cls taking one reference (StaticMethod
        // only comes from static_method_id on that class).
        unsafe { f(self.0, cls.0, m.0, args.as_ptr()) };
        if self.take_exception(false) {
            return Err("threw".into());
        }
        Ok(())
    }

    /// Calls a static `([J)[J` method of `cls` with a new `long[]` holding `v`; returns the
    /// array it returned (None for null). An exception it throws is cleared.
    pub fn call_static_longs_longs(
        &self,
        cls: JRef,
        m: &StaticMethod,
        v: &[i64],
    ) -> Result<Option<Vec<i64>>, String> {
        let new: sys::NewLongArrayFn = self.f(ns::NEW_LONG_ARRAY);
        // SAFETY: valid env.
        let arr = self.okr(unsafe { new(self.0, v.len() as i32) }, "NewLongArray")?;
        let set: sys::SetLongArrayRegionFn = self.f(ns::SET_LONG_ARRAY_REGION);
        // SAFETY: arr has v.len() elements; v is valid for that many reads.
        unsafe { set(self.0, arr.0, 0, v.len() as i32, v.as_ptr()) };
        let f: sys::CallStaticObjectMethodAFn = self.f(ns::CALL_STATIC_OBJECT_METHOD_A);
        let args = [sys::jvalue { l: arr.0 }];
        // SAFETY: valid env; m is a static ([J)[J method of cls (StaticMethod only comes from it).
        let r = JRef(unsafe { f(self.0, cls.0, m.0, args.as_ptr()) });
        let threw = self.take_exception(false);
        self.delete_local_ref(arr);
        if threw {
            self.delete_local_ref(r);
            return Err("threw".into());
        }
        if r.is_null() {
            return Ok(None);
        }
        let out = self.long_array(r);
        self.delete_local_ref(r);
        Ok(Some(out))
    }

    pub fn delete_global_ref(&self, o: JRef) {
        if o.is_null() {
            return;
        }
        let f: sys::DeleteGlobalRefFn = self.f(ns::DELETE_GLOBAL_REF);
        // SAFETY: valid env and a global reference from new_global_ref, deleted once.
        unsafe { f(self.0, o.0) }
    }

    /// Copies a `long[]` local reference into a Vec.
    pub fn long_array(&self, arr: JRef) -> Vec<i64> {
        if arr.is_null() {
            return Vec::new();
        }
        let len: sys::GetArrayLengthFn = self.f(ns::GET_ARRAY_LENGTH);
        // SAFETY: valid env, arr is a long[] reference.
        let n = unsafe { len(self.0, arr.0) }.max(0);
        let mut v = vec![0i64; n as usize];
        let get: sys::GetLongArrayRegionFn = self.f(ns::GET_LONG_ARRAY_REGION);
        // SAFETY: v has room for n longs; region [0, n) is in bounds.
        unsafe { get(self.0, arr.0, 0, n, v.as_mut_ptr()) };
        v
    }

    /// A `java.lang.String` local reference as Rust text (its modified UTF-8 decoded: [`text`]).
    pub fn string(&self, s: JRef) -> Option<String> {
        if s.is_null() {
            return None;
        }
        let len: sys::GetStringUtfLengthFn = self.f(ns::GET_STRING_UTF_LENGTH);
        // SAFETY: valid env and String reference.
        let n = unsafe { len(self.0, s.0) }.max(0) as usize;
        let mut buf = vec![0u8; n + 1];
        let reg: sys::GetStringUtfRegionFn = self.f(ns::GET_STRING_UTF_REGION);
        let jlen: sys::GetStringLengthFn = self.f(ns::GET_STRING_LENGTH);
        // SAFETY: valid env and String reference.
        let chars = unsafe { jlen(self.0, s.0) };
        // SAFETY: buf holds the modified-UTF-8 length plus NUL.
        unsafe { reg(self.0, s.0, 0, chars, buf.as_mut_ptr().cast()) };
        buf.truncate(n);
        Some(text(&buf))
    }

    /// `cls.getModule()`.
    pub fn class_module(&self, cls: JRef) -> Result<JRef, String> {
        let class_cls = self.find_class("java/lang/Class")?;
        let gm: sys::GetMethodIdFn = self.f(ns::GET_METHOD_ID);
        let n = CString::new("getModule").map_err(|e| e.to_string())?;
        let s = CString::new("()Ljava/lang/Module;").map_err(|e| e.to_string())?;
        // SAFETY: valid env, class reference, C strings.
        let m = self.ok(
            unsafe { gm(self.0, class_cls.0, n.as_ptr(), s.as_ptr()) },
            "Class.getModule",
        )?;
        let call: sys::CallObjectMethodAFn = self.f(ns::CALL_OBJECT_METHOD_A);
        // SAFETY: valid env; m is an instance method of Class taking no arguments, cls a Class.
        let r = unsafe { call(self.0, cls.0, m, std::ptr::null()) };
        self.okr(r, "getModule()")
    }

    /// `new java.lang.Thread(name)` (not started).
    pub fn new_thread(&self, name: &str) -> Result<JRef, String> {
        let cls = self.find_class("java/lang/Thread")?;
        let gm: sys::GetMethodIdFn = self.f(ns::GET_METHOD_ID);
        let n = CString::new("<init>").map_err(|e| e.to_string())?;
        let s = CString::new("(Ljava/lang/String;)V").map_err(|e| e.to_string())?;
        // SAFETY: valid env, class reference, C strings.
        let init = self.ok(
            unsafe { gm(self.0, cls.0, n.as_ptr(), s.as_ptr()) },
            "Thread.<init>",
        )?;
        let jname = self.new_string(name)?;
        let nobj: sys::NewObjectAFn = self.f(ns::NEW_OBJECT_A);
        let args = [sys::jvalue { l: jname.0 }];
        // SAFETY: valid env, constructor of cls taking one String.
        let t = unsafe { nobj(self.0, cls.0, init, args.as_ptr()) };
        self.okr(t, "new Thread")
    }

    pub fn new_string(&self, s: &str) -> Result<JRef, String> {
        let f: sys::NewStringUtfFn = self.f(ns::NEW_STRING_UTF);
        let c = CString::new(s).map_err(|e| e.to_string())?;
        // SAFETY: valid env, NUL-terminated string.
        let r = unsafe { f(self.0, c.as_ptr()) };
        self.okr(r, "NewStringUTF")
    }

    /// Registers one native method on `cls`.
    /// JNI MonitorEnter (`enter`) or MonitorExit on `obj`; whether it succeeded. A virtual
    /// thread that blocks here stays on its carrier (a native frame pins it), unlike one
    /// blocking on `synchronized`, which unmounts and needs the scheduler to run it again.
    pub fn monitor(&self, obj: JRef, enter: bool) -> bool {
        let f: sys::MonitorFn = self.f(if enter {
            ns::MONITOR_ENTER
        } else {
            ns::MONITOR_EXIT
        });
        // SAFETY: valid env and a live reference (JRef contract).
        let r = unsafe { f(self.0, obj.0) };
        r == 0 && !self.take_exception(false)
    }

    pub fn register_native(
        &self,
        cls: JRef,
        name: &CStr,
        sig: &CStr,
        f_ptr: *mut c_void,
    ) -> Result<(), String> {
        let f: sys::RegisterNativesFn = self.f(ns::REGISTER_NATIVES);
        let m = sys::JNINativeMethod {
            name: name.as_ptr() as *const c_char,
            signature: sig.as_ptr(),
            fn_ptr: f_ptr,
        };
        // SAFETY: valid env, class, one well-formed JNINativeMethod.
        let r = unsafe { f(self.0, cls.0, &m, 1) };
        if r != 0 || self.take_exception(false) {
            return Err(format!("RegisterNatives {name:?} failed"));
        }
        Ok(())
    }
}

/// A method id the VM handed out (JVMTI GetStackTrace): valid while its class is loaded.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodId(sys::jmethodID);

/// A JNI reference (local or global) obtained through these wrappers; code outside this module
/// cannot make one from an arbitrary pointer.
#[derive(Clone, Copy)]
pub struct JRef(sys::jobject);

impl JRef {
    /// A reference the VM passed to a native method.
    ///
    /// # Safety
    /// `o` must be null or a local or global reference valid on the current thread for as long
    /// as the result is used (a native method's arguments are, for the call).
    pub unsafe fn from_native_arg(o: sys::jobject) -> JRef {
        JRef(o)
    }
    pub fn is_null(&self) -> bool {
        self.0.is_null()
    }

    /// # Safety
    /// `o` must be null or a reference the VM handed to the current callback (valid for it).
    pub unsafe fn from_local(o: sys::jobject) -> JRef {
        JRef(o)
    }
}

// SAFETY: only global references are shared across threads (runtime.rs keeps global refs of
// boot classes, which never unload); local references stay on their thread's callback.
unsafe impl Send for JRef {}
// SAFETY: as above.
unsafe impl Sync for JRef {}

/// A static method id (only made by [`Jni::static_method_id`]).
pub struct StaticMethod(sys::jmethodID);

// SAFETY: method ids are global in the VM (valid until the class unloads; boot classes never do).
unsafe impl Send for StaticMethod {}
// SAFETY: as above.
unsafe impl Sync for StaticMethod {}

/// An instance field id (only made by [`Jni::field_id`]).
pub struct InstanceFieldId(sys::jfieldID);

// SAFETY: field ids are global and immutable in the VM (valid until the class unloads; boot
// classes never unload).
unsafe impl Send for InstanceFieldId {}
// SAFETY: as above.
unsafe impl Sync for InstanceFieldId {}

/// A static field id (only made by [`Jni::static_field_id`]).
pub struct FieldId(sys::jfieldID);

// SAFETY: field ids are global and immutable in the VM (JNI spec: valid until the class unloads;
// boot classes never unload).
unsafe impl Send for FieldId {}
// SAFETY: as above.
unsafe impl Sync for FieldId {}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn modified_utf8_is_decoded() {
        // U+1F600 as its surrogates D83D DE00, NUL as C0 80, é and € as in UTF-8
        let b = b"a\xed\xa0\xbd\xed\xb8\x80\xc0\x80\xc3\xa9\xe2\x82\xac";
        assert_eq!(text(b), "a\u{1F600}\0\u{e9}\u{20ac}");
        // a lone surrogate (high, then low) is U+FFFD
        assert_eq!(text(b"x\xed\xa0\x80y\xed\xb0\x80"), "x\u{FFFD}y\u{FFFD}");
        assert_eq!(text(b"plain"), "plain");
    }
}
