//! JliveTrampoline's natives (capture=bci's hot path, and the concurrency trampolines of
//! monitors=on), the symbol that binds them (`Java_java_lang_JliveTrampoline_bind`), the
//! functions its FFM critical downcalls call, and the user trace libraries' call-back
//! `InstrumentSupportCurrentThreadDetails`.
//!
//! Each trampoline native tries its fast path first (`capture/bci/natives.rs`: no JVM call,
//! no lock, nothing that can panic, so outside any guard) and otherwise takes the session's
//! full path (`session/calls.rs`) in a cold function of its own, under the panic guard.

use super::{session, with_jni, with_session};
use crate::capture::bci::gate::{self, GATE_ENTRIES, GATE_EXITS};
use crate::capture::bci::natives::{self as fast, HubOf};
use crate::capture::bci::Native;
use crate::capture::sync::{hook_kind, trampoline_kind};
use crate::plugin::abi::DetailsOut;
use crate::session::Session;
use jlive_jvm::refs::{Class, Local};
use jlive_writer::record::{FORM_ENTRY, FORM_EXIT, NO_OBJECT};
use jni_sys::{jboolean, jclass, jint, jlong, jobject, JNIEnv};
use std::ffi::{c_char, c_long, c_ulong};

/// The session's hub, for the fast paths (looked up once the TSC and the buffer are on
/// their way).
#[inline(always)]
fn hub() -> impl HubOf {
    || session().map(Session::hub)
}

/// The full path of a trampoline, out of the fast path's way. Its closures take the key by
/// value (`move`): one captured by reference puts the key on the fast path's stack, whose
/// epilogue then reloads the slot through two stores of different sizes, a store-forwarding
/// stall on every call (CallBench, JDK 17: 55 against 51 ns/iter).
#[cold]
#[inline(never)]
fn slow(f: impl FnOnce(&'static Session)) {
    with_session(f);
}

/// JliveTrampoline's natives: (name, descriptor, function).
pub static TRAMPOLINES: [Native; 17] = [
    native!(c"enter0", c"(I)V", enter),
    native!(c"call0", c"(I)V", call),
    native!(c"called0", c"(I)V", called),
    native!(c"enterMissed0", c"(I)V", enter_missed),
    native!(c"leaf0", c"(I)V", leaf),
    native!(c"leafMissed0", c"(I)V", leaf_missed),
    native!(c"exitMissed0", c"(I)V", exit_missed),
    native!(c"criticalAddress", c"(I)J", critical_address),
    native!(c"enterObject0", c"(Ljava/lang/Object;I)V", enter_object),
    native!(c"enterConstructor0", c"(I)V", enter_constructor),
    native!(c"constructed0", c"(Ljava/lang/Object;I)V", constructed),
    native!(c"exit0", c"(I)V", exit),
    native!(c"allocated0", c"(Ljava/lang/Object;)V", allocated),
    native!(c"sync0", c"(ILjava/lang/Object;)Z", sync0),
    native!(c"syncEnter0", c"(I)V", sync_enter),
    native!(
        c"syncEnterObject0",
        c"(Ljava/lang/Object;I)V",
        sync_enter_object
    ),
    native!(c"syncExit0", c"(I)V", sync_exit),
];

/// `JliveTrampoline.bind()`, called from its `<clinit>`: binds the trampolines and answers
/// the address of the gate (if binding fails, nothing is instrumented to call them).
///
/// # Safety
/// Called by the JVM only, as the static native `JliveTrampoline.bind()`.
#[no_mangle]
pub unsafe extern "system" fn Java_java_lang_JliveTrampoline_bind(
    env: *mut JNIEnv,
    class: jclass,
) -> jlong {
    // SAFETY: a static native's arguments: this thread's env and its class.
    unsafe {
        with_jni(env, |s, jni| {
            if let Some(class) = Class::from_raw(class) {
                s.capture()
                    .bind_trampolines(s.runtime(), jni, &class, &TRAMPOLINES);
            }
        })
    };
    gate::address()
}

/// `JliveTrampoline.criticalAddress`: the functions its critical downcalls call.
extern "system" fn critical_address(_env: *mut JNIEnv, _class: jclass, which: jint) -> jlong {
    match which {
        0 => critical_enter as *const () as jlong,
        1 => critical_exit as *const () as jlong,
        _ => 0,
    }
}

/// `JliveTrampoline.enterCritical`'s FFM critical downcall (and `callCritical`'s,
/// `leafCritical`'s): 1 when it recorded; 0 sends the Java side to a JNI native.
extern "C" fn critical_enter(key: jint) -> jint {
    fast::critical_enter(key, hub())
}

/// `JliveTrampoline.exitCritical`'s downcall (and `calledCritical`'s), as above.
extern "C" fn critical_exit(key: jint) -> jint {
    fast::critical_exit(key, hub())
}

extern "system" fn enter(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !fast::fast(GATE_ENTRIES, FORM_ENTRY, key, NO_OBJECT, hub()) {
        slow(move |s| {
            s.entered(key, NO_OBJECT);
        });
    }
}

extern "system" fn exit(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !fast::fast(GATE_EXITS, FORM_EXIT, key, 0, hub()) {
        slow(move |s| s.exited(key));
    }
}

/// `leaf0`: the entry and exit of a leaf method at once.
extern "system" fn leaf(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !fast::leaf_fast(key, hub()) {
        slow(move |s| s.leaf(key));
    }
}

/// `call0`: an instrumented method is about to call the intrinsic candidate `key`.
extern "system" fn call(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !fast::call_fast(key) {
        slow(move |s| s.call(key));
    }
}

/// `called0`: the call of the intrinsic candidate `key` returned.
extern "system" fn called(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !fast::called_fast(key, hub()) {
        slow(move |s| s.called(key));
    }
}

/// `enterMissed0`: an entry its critical downcall left to JNI, counted; the fast path
/// already declined it, so it goes the full way at once.
extern "system" fn enter_missed(_env: *mut JNIEnv, _class: jclass, key: jint) {
    slow(move |s| {
        s.missed();
        s.entered(key, NO_OBJECT);
    });
}

/// `exitMissed0`: an exit its critical downcall left to JNI, counted.
extern "system" fn exit_missed(_env: *mut JNIEnv, _class: jclass, key: jint) {
    slow(move |s| {
        s.missed();
        s.exited(key);
    });
}

/// `leafMissed0`: a leaf its critical downcall left to JNI, counted.
extern "system" fn leaf_missed(_env: *mut JNIEnv, _class: jclass, key: jint) {
    slow(move |s| {
        s.missed();
        s.leaf(key);
    });
}

/// A native's env and object argument, typed.
///
/// # Safety
/// As the JVM calls a native: `env` is this thread's, `object` a local reference of this call
/// (or null).
unsafe fn with_object(
    env: *mut JNIEnv,
    object: jobject,
    f: impl for<'l> FnOnce(&'static Session, jlive_jvm::jni::Jni<'l>, Option<&Local<'l>>),
) {
    // SAFETY: the caller's.
    unsafe { with_jni(env, |s, jni| f(s, jni, Local::from_raw(object).as_ref())) }
}

unsafe extern "system" fn enter_object(
    env: *mut JNIEnv,
    _class: jclass,
    receiver: jobject,
    key: jint,
) {
    // SAFETY: called by the JVM as the native enterObject0.
    unsafe { with_object(env, receiver, |s, jni, r| s.enter_object(jni, r, key)) }
}

extern "system" fn enter_constructor(_env: *mut JNIEnv, _class: jclass, key: jint) {
    with_session(|s| s.enter_constructor(key));
}

/// The receiver of a constructor, once super() has returned (objects=on).
unsafe extern "system" fn constructed(
    env: *mut JNIEnv,
    _class: jclass,
    object: jobject,
    key: jint,
) {
    // SAFETY: called by the JVM as the native constructed0.
    unsafe {
        with_object(env, object, |s, jni, o| {
            if let Some(o) = o {
                s.constructed(jni, o, key)
            }
        })
    }
}

unsafe extern "system" fn allocated(env: *mut JNIEnv, _class: jclass, object: jobject) {
    // SAFETY: called by the JVM as the native allocated0.
    unsafe {
        with_object(env, object, |s, jni, o| {
            if let Some(o) = o {
                s.allocated(jni, o)
            }
        })
    }
}

/// `JliveTrampoline.sync0(kind, object)`: a notify, notifyAll or sleep call site.
unsafe extern "system" fn sync0(
    env: *mut JNIEnv,
    _class: jclass,
    kind: jint,
    object: jobject,
) -> jboolean {
    let mut recorded = false;
    // SAFETY: called by the JVM as the native sync0.
    unsafe {
        with_object(env, object, |s, jni, o| {
            if let Some(kind) = trampoline_kind(kind) {
                recorded = s.sync_call(jni, kind, o);
            }
        })
    };
    recorded as jboolean
}

/// A hooked java/lang/Thread method entered (`exit` false) or left.
///
/// # Safety
/// As [`with_object`].
unsafe fn hooked(env: *mut JNIEnv, hook: jint, exit: bool, object: jobject) {
    // SAFETY: the caller's.
    unsafe {
        with_object(env, object, |s, jni, o| {
            if let Some(kind) = hook_kind(hook, exit) {
                // The stack below the native and the hooked method.
                s.sync_call(jni, kind, o);
            }
        })
    }
}

/// `JliveTrampoline.syncEnterObject0(thread, hook)`: Thread.start or join entered on
/// `thread`.
unsafe extern "system" fn sync_enter_object(
    env: *mut JNIEnv,
    _class: jclass,
    thread: jobject,
    hook: jint,
) {
    // SAFETY: called by the JVM as the native syncEnterObject0.
    unsafe { hooked(env, hook, false, thread) }
}

/// `JliveTrampoline.syncEnter0(hook)`: Thread.sleep entered.
unsafe extern "system" fn sync_enter(env: *mut JNIEnv, _class: jclass, hook: jint) {
    // SAFETY: called by the JVM as the native syncEnter0.
    unsafe { hooked(env, hook, false, std::ptr::null_mut()) }
}

/// `JliveTrampoline.syncExit0(hook)`: a hooked Thread method left (returned or threw). The
/// exit has no receiver at hand: the writer gives a join's end the thread of its beginning.
unsafe extern "system" fn sync_exit(env: *mut JNIEnv, _class: jclass, hook: jint) {
    // SAFETY: called by the JVM as the native syncExit0.
    unsafe { hooked(env, hook, true, std::ptr::null_mut()) }
}

/// VA/Java's support-library function: the current thread's name, priority and thread group
/// name. A thread the JVM does not know is the document's internal VM thread ("", -1, "").
/// Output pointers the caller passes as NULL are skipped; 0 is success.
///
/// # Safety
/// Each non-null pointer must be valid for a write of its type (C callers: the addresses of
/// their variables).
#[no_mangle]
pub unsafe extern "C" fn InstrumentSupportCurrentThreadDetails(
    _vm_id: c_ulong,
    flags: *mut c_ulong,
    name: *mut *mut c_char,
    name_length: *mut c_ulong,
    priority: *mut c_long,
    group_name: *mut *mut c_char,
    group_name_length: *mut c_ulong,
) -> c_ulong {
    let details = || match session() {
        Some(s) => crate::plugin::current_thread_details(s.runtime()),
        None => (String::new(), -1, String::new()),
    };
    let out = DetailsOut {
        flags,
        name,
        name_length,
        priority,
        group_name,
        group_name_length,
    };
    // SAFETY: the caller's out-parameters, as this function's contract says.
    unsafe { crate::plugin::abi::thread_details(details, out) }
}
