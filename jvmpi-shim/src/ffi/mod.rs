//! The shim's raw edge, in three parts:
//! - the wrapped JavaVM a legacy agent gets in `JVM_OnLoad` (and from JNI's GetJavaVM): its
//!   GetEnv answers the JVMPI versions with the [`Interface`] and hands every other version to
//!   the real VM;
//! - the JVMPI functions, `extern "C"`, each checking what the agent passes before use;
//! - the JVMTI callbacks of the shim's environment (`callbacks.rs`), each calling `shim/`.
//!
//! No panic leaves a function here: each body runs under `catch_unwind` and answers a
//! failure value instead.

use crate::abi::{self, CallTrace, Event, Interface, JobjectId, RawMonitorId};
use crate::monitor::RawMonitor;
use crate::shim::{self, id_ptr, ptr_id, Shim, ThreadSlot};
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::Jvmti;
use jlive_jvm::refs::{Borrowed, Local, MethodId};
use jni_sys::{
    jboolean, jint, jlong, jmethodID, jobject, JNIEnv, JNIInvokeInterface_, JavaVM, JNI_ERR,
    JNI_EVERSION, JNI_OK,
};
use std::cell::Cell;
use std::ffi::{c_char, c_uint, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;

mod callbacks;

pub use callbacks::set_callbacks;

thread_local! {
    /// Above 0 while the shim itself runs on this thread: JNI global references it makes
    /// are its own, not the program's or the agent's (reset while the agent's handler runs).
    static INSIDE: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, answering `fallback` if it panics (nothing unwinds into C).
fn guarded<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    INSIDE.with(|i| i.set(i.get() + 1));
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback);
    INSIDE.with(|i| i.set(i.get().saturating_sub(1)));
    r
}

// ---- the wrapped JavaVM ----

static REAL_VM: AtomicPtr<JavaVM> = AtomicPtr::new(ptr::null_mut());
static WRAPPED_VM: AtomicPtr<JavaVM> = AtomicPtr::new(ptr::null_mut());
static INTERFACE: AtomicPtr<Interface> = AtomicPtr::new(ptr::null_mut());

fn real_vm() -> *mut JavaVM {
    REAL_VM.load(Ordering::Acquire)
}

unsafe extern "system" fn destroy_java_vm(_vm: *mut JavaVM) -> jint {
    let vm = real_vm();
    // SAFETY: vm is the real JavaVM, whose invoke table is valid for the process.
    guarded(JNI_ERR, || unsafe { ((**vm).DestroyJavaVM.unwrap())(vm) })
}

unsafe extern "system" fn attach_current_thread(
    _vm: *mut JavaVM,
    penv: *mut *mut c_void,
    args: *mut c_void,
) -> jint {
    let vm = real_vm();
    // SAFETY: as above; the agent's arguments pass through to the JVM, which checks them.
    guarded(JNI_ERR, || unsafe {
        ((**vm).AttachCurrentThread.unwrap())(vm, penv, args)
    })
}

unsafe extern "system" fn attach_current_thread_as_daemon(
    _vm: *mut JavaVM,
    penv: *mut *mut c_void,
    args: *mut c_void,
) -> jint {
    let vm = real_vm();
    // SAFETY: as above.
    guarded(JNI_ERR, || unsafe {
        ((**vm).AttachCurrentThreadAsDaemon.unwrap())(vm, penv, args)
    })
}

unsafe extern "system" fn detach_current_thread(_vm: *mut JavaVM) -> jint {
    let vm = real_vm();
    // SAFETY: as above.
    guarded(JNI_ERR, || unsafe {
        ((**vm).DetachCurrentThread.unwrap())(vm)
    })
}

/// GetEnv: JVMPI_VERSION_1, 1_1 and 1_2 get the JVMPI interface; anything else the real VM's
/// answer.
unsafe extern "system" fn get_env(_vm: *mut JavaVM, penv: *mut *mut c_void, version: jint) -> jint {
    guarded(JNI_ERR, || {
        if penv.is_null() {
            return JNI_ERR;
        }
        if matches!(
            version,
            abi::JVMPI_VERSION_1 | abi::JVMPI_VERSION_1_1 | abi::JVMPI_VERSION_1_2
        ) {
            let i = INTERFACE.load(Ordering::Acquire);
            if i.is_null() {
                return JNI_EVERSION;
            }
            // SAFETY: i is the leaked Interface; penv was checked non-null above.
            unsafe {
                ptr::write_volatile(ptr::addr_of_mut!((*i).version), version);
                *penv = i as *mut c_void;
            }
            return JNI_OK;
        }
        let vm = real_vm();
        // SAFETY: the real JavaVM's GetEnv, with the agent's arguments.
        unsafe { ((**vm).GetEnv.unwrap())(vm, penv, version) }
    })
}

/// JNI's GetJavaVM, as installed at VM init: the wrapped VM, so that an agent that asks JNI
/// for its VM (and then GetEnv for JVMPI) finds the shim too.
unsafe extern "system" fn get_java_vm(_env: *mut JNIEnv, vm: *mut *mut JavaVM) -> jint {
    if vm.is_null() {
        return JNI_ERR;
    }
    // SAFETY: vm was checked non-null; it is the caller's out parameter.
    unsafe { *vm = WRAPPED_VM.load(Ordering::Acquire) };
    JNI_OK
}

/// Makes the wrapped JavaVM and the JVMPI interface (once per process).
fn make_wrapped_vm(vm: *mut JavaVM) -> *mut JavaVM {
    REAL_VM.store(vm, Ordering::Release);
    let table = Box::leak(Box::new(JNIInvokeInterface_ {
        reserved0: ptr::null_mut(),
        reserved1: ptr::null_mut(),
        reserved2: ptr::null_mut(),
        DestroyJavaVM: Some(destroy_java_vm),
        AttachCurrentThread: Some(attach_current_thread),
        DetachCurrentThread: Some(detach_current_thread),
        GetEnv: Some(get_env),
        AttachCurrentThreadAsDaemon: Some(attach_current_thread_as_daemon),
    }));
    let wrapped: &'static mut JavaVM = Box::leak(Box::new(table as *const JNIInvokeInterface_));
    let wrapped = wrapped as *mut JavaVM;
    WRAPPED_VM.store(wrapped, Ordering::Release);
    let interface = Box::leak(Box::new(Interface {
        version: abi::JVMPI_VERSION_1_2,
        notify_event: None,
        enable_event,
        disable_event,
        request_event,
        get_call_trace,
        profiler_exit,
        raw_monitor_create,
        raw_monitor_enter,
        raw_monitor_exit,
        raw_monitor_wait,
        raw_monitor_notify_all,
        raw_monitor_destroy,
        get_current_thread_cpu_time,
        suspend_thread,
        resume_thread,
        get_thread_status,
        thread_has_run,
        create_system_thread,
        set_thread_local_storage,
        get_thread_local_storage,
        disable_gc,
        enable_gc,
        run_gc,
        get_thread_object,
        get_method_class,
        jobject_id_to_jobject,
        jobject_to_jobject_id,
        suspend_thread_list,
        resume_thread_list,
    }));
    INTERFACE.store(interface, Ordering::Release);
    wrapped
}

type NewRef = unsafe extern "system" fn(*mut JNIEnv, jobject) -> jobject;
type DeleteRef = unsafe extern "system" fn(*mut JNIEnv, jobject);

/// The JVM's own global reference functions, called by the shim's.
struct RefFunctions {
    new_global: NewRef,
    delete_global: DeleteRef,
    new_weak: NewRef,
    delete_weak: DeleteRef,
}

static REF_FUNCTIONS: OnceLock<RefFunctions> = OnceLock::new();

/// Tells the agent of a global reference made or about to be deleted, if it is the program's
/// (or the agent's own), not one the shim makes for itself.
///
/// # Safety
/// `env` is the calling thread's JNIEnv and `reference` a live reference (or null), as JNI
/// promises its functions' callers give them.
unsafe fn report(env: *mut JNIEnv, reference: jobject, ev: jint) {
    if INSIDE.with(|i| i.get()) != 0 {
        return;
    }
    with_shim((), |s| {
        // SAFETY: the caller's: JNI's contract on whoever called the JNI function.
        unsafe {
            Jni::with_raw(env, |jni| {
                if let Some(reference) = Borrowed::from_raw(reference) {
                    s.global_ref(jni, ev, &reference);
                }
            })
        };
    });
}

unsafe extern "system" fn new_global_ref(env: *mut JNIEnv, object: jobject) -> jobject {
    let Some(f) = REF_FUNCTIONS.get() else {
        return ptr::null_mut();
    };
    // SAFETY: the JVM's NewGlobalRef with the caller's own arguments.
    let r = unsafe { (f.new_global)(env, object) };
    // SAFETY: env is the caller's JNIEnv (JNI's contract) and r the reference just made.
    unsafe { report(env, r, abi::event::JNI_GLOBALREF_ALLOC) };
    r
}

unsafe extern "system" fn delete_global_ref(env: *mut JNIEnv, reference: jobject) {
    if let Some(f) = REF_FUNCTIONS.get() {
        // SAFETY: env and the reference (still live) are the caller's (JNI's contract).
        unsafe { report(env, reference, abi::event::JNI_GLOBALREF_FREE) };
        // SAFETY: the JVM's DeleteGlobalRef with the caller's own arguments.
        unsafe { (f.delete_global)(env, reference) }
    }
}

unsafe extern "system" fn new_weak_global_ref(env: *mut JNIEnv, object: jobject) -> jobject {
    let Some(f) = REF_FUNCTIONS.get() else {
        return ptr::null_mut();
    };
    // SAFETY: the JVM's NewWeakGlobalRef with the caller's own arguments.
    let r = unsafe { (f.new_weak)(env, object) };
    // SAFETY: env is the caller's JNIEnv (JNI's contract) and r the reference just made.
    unsafe { report(env, r, abi::event::JNI_WEAK_GLOBALREF_ALLOC) };
    r
}

unsafe extern "system" fn delete_weak_global_ref(env: *mut JNIEnv, reference: jobject) {
    if let Some(f) = REF_FUNCTIONS.get() {
        // SAFETY: env and the reference (still live) are the caller's (JNI's contract).
        unsafe { report(env, reference, abi::event::JNI_WEAK_GLOBALREF_FREE) };
        // SAFETY: the JVM's DeleteWeakGlobalRef with the caller's own arguments.
        unsafe { (f.delete_weak)(env, reference) }
    }
}

/// Replaces, for every thread, JNI's GetJavaVM with [`get_java_vm`] and the four global
/// reference functions with ones that report to the agent.
pub fn intercept_jni(jvmti: Jvmti) -> Result<(), String> {
    let table = jvmti.jni_functions().map_err(|e| e.to_string())?;
    // SAFETY: table is the JVM's freshly allocated copy of the JNI function table, ours to
    // read and change; the JVM copies it again in SetJNIFunctionTable.
    unsafe {
        let t = &mut *table;
        if let (Some(new_global), Some(delete_global), Some(new_weak), Some(delete_weak)) = (
            t.NewGlobalRef,
            t.DeleteGlobalRef,
            t.NewWeakGlobalRef,
            t.DeleteWeakGlobalRef,
        ) {
            if REF_FUNCTIONS
                .set(RefFunctions {
                    new_global,
                    delete_global,
                    new_weak,
                    delete_weak,
                })
                .is_ok()
            {
                t.NewGlobalRef = Some(new_global_ref);
                t.DeleteGlobalRef = Some(delete_global_ref);
                t.NewWeakGlobalRef = Some(new_weak_global_ref);
                t.DeleteWeakGlobalRef = Some(delete_weak_global_ref);
            }
        }
        t.GetJavaVM = Some(get_java_vm);
    }
    // SAFETY: the table is the JVM's own, never freed, with four entries replaced by
    // functions that forward to the JVM's with the same arguments (and GetJavaVM by one that
    // answers the wrapped VM, a valid JavaVM).
    unsafe { jvmti.set_jni_functions(table) }.map_err(|e| e.to_string())
}

/// Opens the legacy agent and calls its `JVM_OnLoad(wrapped vm, options, NULL)`.
pub fn load_agent(vm: *mut JavaVM, path: &str, options: &str) -> Result<(), String> {
    let wrapped = make_wrapped_vm(vm);
    // SAFETY: loading a library runs its initializers; the user named this library to run in
    // this JVM, as -Xrun did.
    let library = unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot load the JVMPI agent {}: {}", path, e))?;
    type OnLoad = unsafe extern "C" fn(*mut JavaVM, *mut c_char, *mut c_void) -> jint;
    // SAFETY: JVM_OnLoad has this signature in every JVMPI agent (jvmpi spec 1.1).
    let on_load: libloading::Symbol<OnLoad> =
        unsafe { library.get(b"JVM_OnLoad\0") }.map_err(|_| {
            let jvmti = if unsafe { library.get::<OnLoad>(b"Agent_OnLoad\0") }.is_ok() {
                " (it has Agent_OnLoad: a JVMTI agent, load it with -agentpath itself)"
            } else {
                ""
            };
            format!("{} has no JVM_OnLoad: not a JVMPI agent{}", path, jvmti)
        })?;
    let on_load: OnLoad = *on_load;
    // Kept for the life of the process: agents keep pointers into their option string.
    let options: &'static CString = Box::leak(Box::new(
        CString::new(options).map_err(|_| "the JVMPI agent's options contain a NUL byte")?,
    ));
    std::mem::forget(library);
    // SAFETY: the agent's entry point, with a JavaVM that stays valid, a NUL-terminated option
    // string that lives forever, and NULL as the reserved argument.
    let rc = unsafe { on_load(wrapped, options.as_ptr() as *mut c_char, ptr::null_mut()) };
    if rc != JNI_OK {
        return Err(format!(
            "the JVMPI agent {} refused to start (JVM_OnLoad answered {})",
            path, rc
        ));
    }
    Ok(())
}

/// Hands an event to the agent's NotifyEvent, if it set one.
pub fn deliver(e: &mut Event) {
    let i = INTERFACE.load(Ordering::Acquire);
    if i.is_null() {
        return;
    }
    // SAFETY: i is the leaked Interface; the agent sets notify_event with one pointer store,
    // read here as one volatile load.
    let notify = unsafe { ptr::read_volatile(ptr::addr_of!((*i).notify_event)) };
    if let Some(notify) = notify {
        let inside = INSIDE.with(|i| i.replace(0));
        // SAFETY: the agent's NotifyEvent, with an event valid for the call (JVMPI: the agent
        // copies what it keeps).
        unsafe { notify(e) };
        INSIDE.with(|i| i.set(inside));
    }
}

/// The calling thread's own slot's word (`p` is the slot the thread registered, alive in the
/// shim's map until this thread ends).
pub fn slot_tls(p: *const ThreadSlot) -> Option<usize> {
    if p.is_null() {
        return None;
    }
    // SAFETY: see above: only the thread that owns the slot calls this, before its end.
    Some(unsafe { (*p).tls_value() })
}

// ---- JVMPI functions ----

fn with_shim<T: Copy>(fallback: T, f: impl FnOnce(&'static Shim) -> T) -> T {
    guarded(fallback, || match shim::get() {
        Some(s) => f(s),
        None => fallback,
    })
}

/// The calling thread's JNIEnv as an identity (0 or null: the thread is not attached).
fn current_env(s: &Shim) -> *mut JNIEnv {
    s.vm.current_env_id().unwrap_or(ptr::null_mut())
}

unsafe extern "C" fn enable_event(ev: jint, _arg: *mut c_void) -> jint {
    with_shim(abi::FAIL, |s| s.enable(ev, true))
}

unsafe extern "C" fn disable_event(ev: jint, _arg: *mut c_void) -> jint {
    with_shim(abi::FAIL, |s| s.enable(ev, false))
}

unsafe extern "C" fn request_event(ev: jint, arg: *mut c_void) -> jint {
    with_shim(abi::FAIL, |s| {
        s.vm.with_current(|jni| match ev {
            abi::event::HEAP_DUMP => {
                let level = if arg.is_null() {
                    2
                } else {
                    // SAFETY: a non-null HEAP_DUMP argument is a JVMPI_HeapDumpArg (spec).
                    unsafe { (*(arg as *const abi::HeapDumpArg)).heap_dump_level }
                };
                crate::dump::heap_dump(s, jni, level)
            }
            abi::event::MONITOR_DUMP => crate::dump::monitor_dump(s, jni),
            abi::event::OBJECT_DUMP => crate::dump::object_dump(s, jni, ptr_id(arg)),
            _ => s.request(jni, ev, ptr_id(arg)),
        })
        .unwrap_or(abi::FAIL)
    })
}

unsafe extern "C" fn get_call_trace(trace: *mut CallTrace, depth: jint) {
    with_shim((), |s| {
        if trace.is_null() || depth <= 0 {
            return;
        }
        // SAFETY: trace was checked non-null; env_id and frames are read, num_frames written,
        // each as a plain field of the agent's JVMPI_CallTrace (no reference to memory the
        // agent may have left uninitialised).
        let (env, frames) = unsafe {
            ptr::write(ptr::addr_of_mut!((*trace).num_frames), 0);
            (
                ptr::read(ptr::addr_of!((*trace).env_id)),
                ptr::read(ptr::addr_of!((*trace).frames)),
            )
        };
        if frames.is_null() {
            return;
        }
        let mut got = vec![
            abi::CallFrame {
                lineno: 0,
                method_id: ptr::null_mut(),
            };
            depth as usize
        ];
        let n = s.call_trace(env, &mut got);
        // SAFETY: the agent allocated `depth` frames at `frames` (the spec's contract); n is
        // at most depth.
        unsafe {
            for (i, f) in got[..n].iter().enumerate() {
                ptr::write(frames.add(i), *f);
            }
            ptr::write(ptr::addr_of_mut!((*trace).num_frames), n as jint);
        }
    })
}

unsafe extern "C" fn profiler_exit(code: jint) {
    let _ = catch_unwind(|| {
        if let Some(s) = shim::get() {
            s.vm.with_current(|jni| jni.halt(code));
        }
        std::process::exit(code);
    });
}

unsafe extern "C" fn raw_monitor_create(name: *const c_char) -> RawMonitorId {
    with_shim(ptr::null_mut(), |s| {
        let name = if name.is_null() {
            CString::default()
        } else {
            // SAFETY: a non-null name is the agent's NUL-terminated string.
            unsafe { CStr::from_ptr(name) }.to_owned()
        };
        Arc::as_ptr(&s.raw_monitor_create(name)) as RawMonitorId
    })
}

/// The raw monitor behind an agent's handle, if it is one of ours and not destroyed.
fn monitor(s: &Shim, id: RawMonitorId) -> Option<Arc<RawMonitor>> {
    s.raw_monitor(id as *const RawMonitor)
}

unsafe extern "C" fn raw_monitor_enter(id: RawMonitorId) {
    with_shim((), |s| {
        if let Some(m) = monitor(s, id) {
            let env = current_env(s) as usize;
            m.enter(env, &|entering| {
                let ev = if entering {
                    abi::event::RAW_MONITOR_CONTENDED_ENTER
                } else {
                    abi::event::RAW_MONITOR_CONTENDED_ENTERED
                };
                s.raw_monitor_contention(&m, ev);
            });
        }
    })
}

unsafe extern "C" fn raw_monitor_exit(id: RawMonitorId) {
    with_shim((), |s| {
        if let Some(m) = monitor(s, id) {
            if m.exit() {
                s.raw_monitor_contention(&m, abi::event::RAW_MONITOR_CONTENDED_EXIT);
            }
        }
    })
}

unsafe extern "C" fn raw_monitor_wait(id: RawMonitorId, ms: jlong) {
    with_shim((), |s| {
        if let Some(m) = monitor(s, id) {
            m.wait(ms);
        }
    })
}

unsafe extern "C" fn raw_monitor_notify_all(id: RawMonitorId) {
    with_shim((), |s| {
        if let Some(m) = monitor(s, id) {
            m.notify_all();
        }
    })
}

unsafe extern "C" fn raw_monitor_destroy(id: RawMonitorId) {
    with_shim((), |s| s.raw_monitor_destroy(id as *const RawMonitor))
}

unsafe extern "C" fn get_current_thread_cpu_time() -> jlong {
    guarded(0, jlive_jvm::os::thread_cpu_time)
}

unsafe extern "C" fn suspend_thread(env: *mut JNIEnv) {
    with_shim((), |s| {
        s.suspend(env);
    })
}

unsafe extern "C" fn resume_thread(env: *mut JNIEnv) {
    with_shim((), |s| {
        s.resume(env);
    })
}

unsafe extern "C" fn get_thread_status(env: *mut JNIEnv) -> jint {
    with_shim(abi::FAIL, |s| s.status(env))
}

unsafe extern "C" fn thread_has_run(env: *mut JNIEnv) -> jboolean {
    with_shim(0, |s| s.has_run(env) as jboolean)
}

unsafe extern "C" fn create_system_thread(
    name: *const c_char,
    _priority: jint,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
) -> jint {
    with_shim(JNI_ERR, |s| {
        let Some(f) = f else {
            return JNI_ERR;
        };
        if !s.is_live() {
            return JNI_ERR;
        }
        let name = if name.is_null() {
            c"JVMPI agent thread".to_owned()
        } else {
            // SAFETY: a non-null name is the agent's NUL-terminated string.
            unsafe { CStr::from_ptr(name) }.to_owned()
        };
        let vm = s.vm;
        let (tx, rx) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name(name.to_string_lossy().into_owned())
            .spawn(move || {
                shim::ATTACH_NAME
                    .with(|n| *n.borrow_mut() = Some(name.to_string_lossy().into_owned()));
                shim::DEFER_START.with(|d| d.set(true));
                let attached = vm.attach_daemon(&name);
                let _ = tx.send(attached.is_some());
                if let Some(attached) = attached {
                    // Its THREAD_START now that its creator has returned.
                    if let Some(s) = shim::get() {
                        attached.with(|jni| guarded((), || s.announce_current(jni)));
                    }
                    // SAFETY: the agent's thread function (checked non-null), run as JVMPI
                    // ran it, with a NULL argument.
                    let _ = catch_unwind(|| unsafe { f(ptr::null_mut()) });
                    // Detached as `attached` drops.
                }
            });
        if spawned.is_err() {
            return JNI_ERR;
        }
        match rx.recv() {
            Ok(true) => JNI_OK,
            _ => JNI_ERR,
        }
    })
}

unsafe extern "C" fn set_thread_local_storage(env: *mut JNIEnv, p: *mut c_void) {
    with_shim((), |s| s.set_tls(env, p as usize))
}

unsafe extern "C" fn get_thread_local_storage(env: *mut JNIEnv) -> *mut c_void {
    with_shim(ptr::null_mut(), |s| s.tls(env) as *mut c_void)
}

unsafe extern "C" fn disable_gc() {
    with_shim((), |s| s.disable_gc())
}

unsafe extern "C" fn enable_gc() {
    with_shim((), |s| s.enable_gc())
}

unsafe extern "C" fn run_gc() {
    with_shim((), |s| {
        s.vm.with_current(|jni| s.run_gc(jni));
    })
}

unsafe extern "C" fn get_thread_object(env: *mut JNIEnv) -> JobjectId {
    with_shim(ptr::null_mut(), |s| id_ptr(s.thread_object(env)))
}

unsafe extern "C" fn get_method_class(method: jmethodID) -> JobjectId {
    // SAFETY: JVMPI's contract: the agent passes a method ID the shim gave it in an event
    // (checked non-null only: a forged one would be the agent's bug, as under JVMPI).
    let Some(method) = (unsafe { MethodId::from_raw(method) }) else {
        return ptr::null_mut();
    };
    with_shim(ptr::null_mut(), |s| {
        s.vm.with_current(|jni| {
            let Some(class) = s.jvmti.method_declaring_class(jni, method) else {
                return ptr::null_mut();
            };
            let id = s.class_id(jni, &class);
            jni.delete_local(class);
            id_ptr(id)
        })
        .unwrap_or(ptr::null_mut())
    })
}

unsafe extern "C" fn jobject_id_to_jobject(id: JobjectId) -> jobject {
    with_shim(ptr::null_mut(), |s| {
        // A local reference of the agent's current frame, handed to it as JVMPI did.
        s.vm.with_current(|jni| s.object_of(jni, ptr_id(id)).map(|o| o.into_raw()))
            .flatten()
            .unwrap_or(ptr::null_mut())
    })
}

unsafe extern "C" fn jobject_to_jobject_id(object: jobject) -> JobjectId {
    with_shim(ptr::null_mut(), |s| {
        // SAFETY: JVMPI's contract: a live reference of the calling agent thread (or null).
        let object = unsafe { Local::from_raw(object) };
        object.map_or(ptr::null_mut(), |o| id_ptr(s.object_id(&o)))
    })
}

/// SuspendThreadList / ResumeThreadList: each thread's result in `results`.
fn for_thread_list(
    count: jint,
    envs: *mut *mut JNIEnv,
    results: *mut jint,
    f: impl Fn(*mut JNIEnv) -> jint,
) {
    if count <= 0 || envs.is_null() || results.is_null() {
        return;
    }
    // SAFETY: the agent passes `count` JNIEnv pointers and room for `count` results (spec).
    let (envs, results) = unsafe {
        (
            std::slice::from_raw_parts(envs, count as usize),
            std::slice::from_raw_parts_mut(results, count as usize),
        )
    };
    for (env, r) in envs.iter().zip(results.iter_mut()) {
        *r = f(*env);
    }
}

unsafe extern "C" fn suspend_thread_list(count: jint, envs: *mut *mut JNIEnv, results: *mut jint) {
    with_shim((), |s| {
        for_thread_list(count, envs, results, |e| s.suspend(e))
    })
}

unsafe extern "C" fn resume_thread_list(count: jint, envs: *mut *mut JNIEnv, results: *mut jint) {
    with_shim((), |s| {
        for_thread_list(count, envs, results, |e| s.resume(e))
    })
}

// ---- memory for CLASS_LOAD_HOOK ----

unsafe extern "C" fn agent_malloc(size: c_uint) -> *mut c_void {
    // SAFETY: plain malloc; the shim frees the block with free after copying it.
    unsafe { libc::malloc(size as usize) }
}
