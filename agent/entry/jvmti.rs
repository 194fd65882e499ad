//! The JVMTI callbacks: thunks into the session (`session/events.rs`, `session/calls.rs`,
//! `session/lifecycle.rs`), and the table the session registers ([`callbacks`]). A callback
//! whose arguments are raw buffers (ClassFileLoadHook) takes them apart here into safe types.

use super::{with_jni, with_session};
use crate::capture::{LoadedClass, MethodEvent, Returned};
use crate::clock;
use crate::session::Session;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{jthread, jvmtiEnv, EventCallbacks};
use jlive_jvm::refs::{Class, Local, MethodId};
use jlive_writer::model::SyncKind;
use jni_sys::{jboolean, jclass, jint, jlong, jmethodID, jobject, jvalue, JNIEnv};
use std::ffi::{c_char, c_uchar, CStr};

/// Every JVMTI callback jlive has, with capture=bci's MethodEntry (`bci`: it only drops
/// compiled frames' hoisted gates) or capture=events'.
pub fn callbacks(bci: bool) -> EventCallbacks {
    let mut cb = EventCallbacks::default();
    cb.base.VMInit = Some(vm_init);
    cb.base.VMDeath = Some(vm_death);
    cb.base.VMStart = Some(vm_start);
    cb.base.ThreadStart = Some(thread_start);
    cb.base.ThreadEnd = Some(thread_end);
    cb.base.ClassPrepare = Some(class_prepare);
    cb.base.ClassFileLoadHook = Some(class_file_load_hook);
    cb.base.MethodEntry = Some(if bci {
        interpreted_only_entry
    } else {
        method_entry
    });
    cb.base.MethodExit = Some(method_exit);
    cb.base.GarbageCollectionStart = Some(gc_start);
    cb.base.GarbageCollectionFinish = Some(gc_finish);
    cb.base.ObjectFree = Some(object_free);
    cb.base.VMObjectAlloc = Some(object_alloc);
    cb.sampled_object_alloc = Some(object_alloc);
    cb.virtual_thread_start = Some(virtual_thread_start);
    cb.virtual_thread_end = Some(virtual_thread_end);
    cb.base.MonitorWait = Some(monitor_wait);
    cb.base.MonitorWaited = Some(monitor_waited);
    cb.base.MonitorContendedEnter = Some(monitor_contended_enter);
    cb.base.MonitorContendedEntered = Some(monitor_contended_entered);
    cb
}

/// VMInit.
unsafe extern "C" fn vm_init(_env: *mut jvmtiEnv, jni: *mut JNIEnv, _thread: jthread) {
    // SAFETY: called by the JVM as JVMTI VMInit: jni is this thread's env.
    unsafe { with_jni(jni, |s, jni| s.vm_init(jni)) }
}

unsafe extern "C" fn vm_start(_env: *mut jvmtiEnv, jni: *mut JNIEnv) {
    // SAFETY: called by the JVM as JVMTI VMStart: jni is this thread's env.
    unsafe { with_jni(jni, |s, jni| s.vm_start(jni)) }
}

extern "C" fn vm_death(_env: *mut jvmtiEnv, _jni: *mut JNIEnv) {
    with_session(|s| s.close("VM death"));
}

/// A thread event's callback: the env and the thread, typed.
///
/// # Safety
/// As JVMTI calls a thread event's callback: `jni` is this thread's env, `thread` a local
/// reference of this call.
unsafe fn with_thread(
    jni: *mut JNIEnv,
    thread: jthread,
    f: impl for<'l> FnOnce(&'static Session, Jni<'l>, &Local<'l>),
) {
    // SAFETY: the caller's.
    unsafe {
        with_jni(jni, |s, jni| {
            if let Some(thread) = Local::from_raw(thread) {
                f(s, jni, &thread)
            }
        })
    }
}

unsafe extern "C" fn thread_start(_env: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    // SAFETY: called by the JVM as JVMTI ThreadStart.
    unsafe { with_thread(jni, thread, |s, jni, t| s.thread_start(jni, t)) }
}

unsafe extern "C" fn thread_end(_env: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    // SAFETY: called by the JVM as JVMTI ThreadEnd.
    unsafe { with_thread(jni, thread, |s, jni, t| s.thread_end(jni, t)) }
}

unsafe extern "C" fn virtual_thread_start(_env: *mut jvmtiEnv, jni: *mut JNIEnv, vthread: jthread) {
    // SAFETY: called by the JVM as JVMTI VirtualThreadStart.
    unsafe { with_thread(jni, vthread, |s, _, t| s.virtual_thread_start(t)) }
}

unsafe extern "C" fn virtual_thread_end(_env: *mut jvmtiEnv, jni: *mut JNIEnv, vthread: jthread) {
    // SAFETY: called by the JVM as JVMTI VirtualThreadEnd.
    unsafe { with_thread(jni, vthread, |s, _, t| s.virtual_thread_end(t)) }
}

/// The mount extension event (registered by the session at VM init).
///
/// # Safety
/// Called by the JVM only, as HotSpot's VirtualThreadMount extension event (the arguments
/// of a thread event).
pub unsafe extern "C" fn virtual_thread_mount(
    _env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    vthread: jthread,
) {
    // SAFETY: the caller's.
    unsafe { with_thread(jni, vthread, |s, _, t| s.virtual_thread_mount(t)) }
}

/// The unmount extension event.
///
/// # Safety
/// As [`virtual_thread_mount`], for VirtualThreadUnmount.
pub unsafe extern "C" fn virtual_thread_unmount(
    _env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    vthread: jthread,
) {
    // SAFETY: the caller's.
    unsafe { with_thread(jni, vthread, |s, _, t| s.virtual_thread_unmount(t)) }
}

unsafe extern "C" fn class_prepare(
    _env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    class: jclass,
) {
    // SAFETY: called by the JVM as JVMTI ClassPrepare: class is a local reference of this
    // call to the class prepared.
    unsafe { with_jni(jni, |s, jni| prepared(s, jni, Class::from_raw(class))) }
}

/// ClassPrepare of `class`.
fn prepared(s: &Session, jni: Jni<'_>, class: Option<Class<'_>>) {
    if let Some(class) = class {
        s.class_prepare(jni, &class);
    }
}

/// A MethodEntry's or MethodExit's callback: `f` gets the event, typed.
///
/// # Safety
/// As JVMTI calls those callbacks: `jni` is this thread's env, `thread` a local reference of
/// this call, `method` the method entered or left.
unsafe fn method_event(
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
    f: impl for<'a, 'l> FnOnce(&'static Session, MethodEvent<'a, 'l>),
) {
    let ticks = clock::ticks();
    // SAFETY: the caller's.
    unsafe {
        with_thread(jni, thread, |s, jni, thread| {
            if let Some(method) = MethodId::from_raw(method) {
                let e = MethodEvent {
                    jni,
                    thread,
                    method,
                    ticks,
                };
                f(s, e)
            }
        })
    }
}

unsafe extern "C" fn method_entry(
    _env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
) {
    // SAFETY: called by the JVM as JVMTI MethodEntry.
    unsafe { method_event(jni, thread, method, |s, e| s.method_entry(e)) }
}

unsafe extern "C" fn method_exit(
    _env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
    by_exception: jboolean,
    value: jvalue,
) {
    let returned = Returned {
        by_exception: by_exception != 0,
        value,
    };
    // SAFETY: called by the JVM as JVMTI MethodExit: value is the method's result (a local
    // reference of this call for an object).
    unsafe { method_event(jni, thread, method, |s, e| s.method_exit(e, returned)) }
}

/// MethodEntry under capture=bci: switched on only for a moment (its callback records
/// nothing).
unsafe extern "C" fn interpreted_only_entry(
    _env: *mut jvmtiEnv,
    _jni: *mut JNIEnv,
    _thread: jthread,
    method: jmethodID,
) {
    // SAFETY: called by the JVM as JVMTI MethodEntry: method is the method entered.
    if let Some(m) = unsafe { MethodId::from_raw(method) } {
        with_session(|s| s.interpreted_only_entry(m));
    }
}

extern "C" fn gc_start(_env: *mut jvmtiEnv) {
    with_session(|s| s.gc(true));
}

extern "C" fn gc_finish(_env: *mut jvmtiEnv) {
    with_session(|s| s.gc(false));
}

extern "C" fn object_free(_env: *mut jvmtiEnv, tag: jlong) {
    with_session(|s| s.object_free(tag));
}

unsafe extern "C" fn object_alloc(
    _env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    object: jobject,
    _class: jclass,
    _size: jlong,
) {
    // SAFETY: called by the JVM as JVMTI VMObjectAlloc or SampledObjectAlloc: object is a
    // local reference of this call.
    unsafe {
        with_thread(jni, thread, |s, jni, t| {
            if let Some(o) = Local::from_raw(object) {
                s.object_alloc(jni, t, &o)
            }
        })
    }
}

/// A monitor event's callback.
///
/// # Safety
/// As JVMTI calls the monitor events' callbacks: `jni` is this thread's env, `object` a local
/// reference of this call.
unsafe fn monitor(jni: *mut JNIEnv, kind: SyncKind, object: jobject) {
    // SAFETY: the caller's.
    unsafe {
        with_jni(jni, |s, jni| {
            if let Some(o) = Local::from_raw(object) {
                s.monitor(jni, kind, &o)
            }
        })
    }
}

/// The callback `$name` of JVMTI's `$event`, recording `$kind` (`$extra`: the event's last
/// argument, unused).
macro_rules! monitor_callback {
    ($name:ident, $event:literal, $kind:ident $(, $extra:ty)?) => {
        #[doc = concat!("JVMTI ", $event, ".")]
        unsafe extern "C" fn $name(
            _env: *mut jvmtiEnv,
            jni: *mut JNIEnv,
            _thread: jthread,
            object: jobject,
            $(_: $extra,)?
        ) {
            // SAFETY: called by the JVM as this monitor event's callback.
            unsafe { monitor(jni, SyncKind::$kind, object) }
        }
    };
}

monitor_callback!(monitor_wait, "MonitorWait", Wait, jlong);
monitor_callback!(monitor_waited, "MonitorWaited", Waited, jboolean);
monitor_callback!(
    monitor_contended_enter,
    "MonitorContendedEnter",
    ContendedEnter
);
monitor_callback!(
    monitor_contended_entered,
    "MonitorContendedEntered",
    ContendedEntered
);

/// ClassFileLoadHook: hands the class to the session and, if it returns new bytes, gives the
/// JVM a JVMTI-allocated copy.
///
/// # Safety
/// Called by the JVM only, with the arguments JVMTI documents: a NUL-terminated name (or
/// null), `length` readable bytes at `data`, and writable out-parameters.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn class_file_load_hook(
    _env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    redefined: jclass,
    loader: jobject,
    name: *const c_char,
    _protection_domain: jobject,
    length: jint,
    data: *const c_uchar,
    new_length: *mut jint,
    new_data: *mut *mut c_uchar,
) {
    if name.is_null() || data.is_null() || length <= 0 || new_length.is_null() || new_data.is_null()
    {
        return;
    }
    // SAFETY: the JVM passes a NUL-terminated class name valid for this callback.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    // SAFETY: the JVM passes `length` bytes of class file at `data` for this callback.
    let bytes = unsafe { std::slice::from_raw_parts(data, length as usize) };
    // SAFETY: the JVMTI ClassFileLoadHook contract: jni is this thread's env, the class being
    // redefined (or null) and the loader (or null: the bootstrap loader) are local
    // references of this call.
    unsafe {
        with_jni(jni, |s, jni| {
            let (redefined, loader) = (Class::from_raw(redefined), Local::from_raw(loader));
            let class = LoadedClass {
                redefined: redefined.as_ref(),
                loader: loader.as_ref(),
                name: &name,
                bytes,
            };
            let Some(out) = s.class_file_load(jni, class) else {
                return;
            };
            if let Ok(copy) = s.runtime().jvmti().allocate_copy(&out) {
                // The out-parameters are valid for this callback; the JVM takes the memory.
                *new_length = out.len() as jint;
                *new_data = copy;
            }
        })
    }
}
