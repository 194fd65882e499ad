//! The Java API (`jlive-api.jar`): `jlive.Jlive` and VA/Java's
//! `com.ibm.uvm.instrumenting.InstrumentVMSupport`. Both classes declare the same private
//! static natives and a static `bound` flag. When either class is prepared, jlive binds the
//! natives with RegisterNatives and sets `bound`; without jlive the flag stays false and the
//! public methods do nothing. A panic in a native becomes an IllegalStateException.

use crate::burst::BurstFlags;
use crate::ffi::jni::Jni;
use crate::ffi::jvmti::Jvmti;
use crate::profiler;
use jni_sys::{jboolean, jclass, jint, jstring, JNIEnv};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The classes that carry the API, by JVM signature.
const API_CLASSES: &[&str] = &[
    "Ljlive/Jlive;",
    "Lcom/ibm/uvm/instrumenting/InstrumentVMSupport;",
];

/// Binds the natives if `class` is one of the API classes.
pub fn bind_if_api(jvmti: Jvmti, jni: Jni<'_>, class: jclass) {
    let Ok(signature) = jvmti.class_signature(class) else {
        return;
    };
    if !API_CLASSES.contains(&signature.as_str()) {
        return;
    }
    let natives: [(&std::ffi::CStr, &std::ffi::CStr, *mut c_void); 4] = [
        (c"begin0", c"(Ljava/lang/String;I)Z", begin0 as *mut c_void),
        (c"end0", c"()Z", end0 as *mut c_void),
        (c"event0", c"(Ljava/lang/String;)V", event0 as *mut c_void),
        (c"tracing0", c"()Z", tracing0 as *mut c_void),
    ];
    if jni.register_natives(class, &natives) {
        jni.set_static_boolean(class, c"bound", true);
    } else {
        crate::log::warn(&format!("cannot bind the natives of {}", signature));
    }
}

/// Runs a native's body; a panic is thrown into Java as an IllegalStateException.
fn guarded<T>(env: *mut JNIEnv, fallback: T, f: impl FnOnce(Jni<'_>) -> T) -> T {
    let Some(jni) = Jni::from_callback(env) else {
        return fallback;
    };
    match catch_unwind(AssertUnwindSafe(|| f(jni))) {
        Ok(v) => v,
        Err(_) => {
            jni.throw_illegal_state("jlive: internal error in the Java API");
            fallback
        }
    }
}

/// `begin0(label, flags)`: opens a burst; flags 0 = the agent's options.
extern "system" fn begin0(
    env: *mut JNIEnv,
    _class: jclass,
    label: jstring,
    flags: jint,
) -> jboolean {
    guarded(env, 0, |jni| {
        let Some(p) = profiler::get() else { return 0 };
        let label = jni.string(label);
        let flags = (flags != 0).then(|| BurstFlags::from_vajava(flags, p.default_flags()));
        jboolean::from(p.begin_burst(p.jvmti, label.as_deref(), flags).is_ok())
    })
}

/// `end0()`: closes the open burst.
extern "system" fn end0(env: *mut JNIEnv, _class: jclass) -> jboolean {
    guarded(env, 0, |_| {
        let Some(p) = profiler::get() else { return 0 };
        jboolean::from(p.end_burst(p.jvmti).is_ok())
    })
}

/// `event0(message)`: a USER_EVENT on the calling thread.
extern "system" fn event0(env: *mut JNIEnv, _class: jclass, message: jstring) {
    guarded(env, (), |jni| {
        if let (Some(p), Some(text)) = (profiler::get(), jni.string(message)) {
            p.thread_event(text);
        }
    })
}

/// `tracing0()`: whether a burst is open.
extern "system" fn tracing0(env: *mut JNIEnv, _class: jclass) -> jboolean {
    guarded(env, 0, |_| {
        jboolean::from(profiler::get().is_some_and(|p| p.bursts.lock().is_open()))
    })
}
