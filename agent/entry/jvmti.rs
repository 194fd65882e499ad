//! The JVMTI callbacks: thunks into the session (`session/events.rs`, `session/calls.rs`,
//! `session/lifecycle.rs`), and the table the session registers ([`callbacks`]). A callback
//! whose arguments are raw buffers (ClassFileLoadHook) takes them apart here into safe types.

use super::{guard, session, with_session};
use crate::clock;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{jthread, jvmtiEnv, EventCallbacks, Jvmti};
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

extern "C" fn vm_init(env: *mut jvmtiEnv, jni: *mut JNIEnv, _thread: jthread) {
    with_session(|s| {
        if let Some(jni) = Jni::from_callback(jni) {
            s.vm_init(Jvmti::from_raw(env), jni)
        }
    });
}

extern "C" fn vm_start(_env: *mut jvmtiEnv, jni: *mut JNIEnv) {
    with_session(|s| {
        if let Some(jni) = Jni::from_callback(jni) {
            s.vm_start(jni)
        }
    });
}

extern "C" fn vm_death(_env: *mut jvmtiEnv, _jni: *mut JNIEnv) {
    with_session(|s| s.close("VM death"));
}

extern "C" fn thread_start(env: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    with_session(|s| s.thread_start(Jvmti::from_raw(env), jni, thread));
}

extern "C" fn thread_end(env: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    with_session(|s| s.thread_end(Jvmti::from_raw(env), jni, thread));
}

extern "C" fn virtual_thread_start(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    with_session(|s| s.virtual_thread_start(Jvmti::from_raw(env), vthread));
}

extern "C" fn virtual_thread_end(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    with_session(|s| s.virtual_thread_end(Jvmti::from_raw(env), vthread));
}

/// The mount extension event (registered by the session at VM init).
pub extern "C" fn virtual_thread_mount(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    with_session(|s| s.virtual_thread_mount(Jvmti::from_raw(env), vthread));
}

/// The unmount extension event.
pub extern "C" fn virtual_thread_unmount(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    with_session(|s| s.virtual_thread_unmount(Jvmti::from_raw(env), vthread));
}

extern "C" fn class_prepare(env: *mut jvmtiEnv, jni: *mut JNIEnv, _thread: jthread, class: jclass) {
    with_session(|s| {
        if let Some(jni) = Jni::from_callback(jni) {
            s.class_prepare(Jvmti::from_raw(env), jni, class)
        }
    });
}

extern "C" fn method_entry(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
) {
    let ticks = clock::ticks();
    with_session(|s| s.method_entry(Jvmti::from_raw(env), jni, thread, method, ticks));
}

extern "C" fn method_exit(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
    by_exception: jboolean,
    value: jvalue,
) {
    let ticks = clock::ticks();
    with_session(|s| {
        let jvmti = Jvmti::from_raw(env);
        s.method_exit(jvmti, jni, thread, method, by_exception != 0, value, ticks)
    });
}

/// MethodEntry under capture=bci: switched on only for a moment (its callback records
/// nothing).
extern "C" fn interpreted_only_entry(
    _env: *mut jvmtiEnv,
    _jni: *mut JNIEnv,
    _thread: jthread,
    method: jmethodID,
) {
    with_session(|s| s.interpreted_only_entry(method));
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

extern "C" fn object_alloc(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    object: jobject,
    _class: jclass,
    _size: jlong,
) {
    with_session(|s| s.object_alloc(Jvmti::from_raw(env), jni, thread, object));
}

extern "C" fn monitor_wait(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
    _timeout: jlong,
) {
    with_session(|s| s.monitor(Jvmti::from_raw(env), jni, SyncKind::Wait, object));
}

extern "C" fn monitor_waited(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
    _timed_out: jboolean,
) {
    with_session(|s| s.monitor(Jvmti::from_raw(env), jni, SyncKind::Waited, object));
}

extern "C" fn monitor_contended_enter(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
) {
    with_session(|s| s.monitor(Jvmti::from_raw(env), jni, SyncKind::ContendedEnter, object));
}

extern "C" fn monitor_contended_entered(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    object: jobject,
) {
    with_session(|s| {
        s.monitor(
            Jvmti::from_raw(env),
            jni,
            SyncKind::ContendedEntered,
            object,
        )
    });
}

/// ClassFileLoadHook: hands the class to the session and, if it returns new bytes, gives the
/// JVM a JVMTI-allocated copy.
///
/// # Safety
/// Called by the JVM only, with the arguments JVMTI documents: a NUL-terminated name (or
/// null), `length` readable bytes at `data`, and writable out-parameters.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn class_file_load_hook(
    env: *mut jvmtiEnv,
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
    let Some(s) = session() else { return };
    // SAFETY: the JVM passes a NUL-terminated class name valid for this callback.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    // SAFETY: the JVM passes `length` bytes of class file at `data` for this callback.
    let bytes = unsafe { std::slice::from_raw_parts(data, length as usize) };
    let jvmti = Jvmti::from_raw(env);
    guard(|| {
        let Some(out) = s.class_file_load(jvmti, jni, redefined, loader, &name, bytes) else {
            return;
        };
        if let Ok(copy) = jvmti.allocate_copy(&out) {
            // SAFETY: the out-parameters are valid for this callback; the JVM takes the memory.
            unsafe {
                *new_length = out.len() as jint;
                *new_data = copy;
            }
        }
    });
}
