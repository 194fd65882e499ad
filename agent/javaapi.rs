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
    let vajava: [(&std::ffi::CStr, &std::ffi::CStr, *mut c_void); 3] = [
        (
            c"startup0",
            c"(Ljava/lang/String;)Ljava/lang/String;",
            startup0 as *mut c_void,
        ),
        (
            c"shutdown0",
            c"()Ljava/lang/String;",
            shutdown0 as *mut c_void,
        ),
        (c"refs0", c"()Ljava/lang/String;", refs0 as *mut c_void),
    ];
    let mut all = natives.to_vec();
    if signature == API_CLASSES[1] {
        all.extend(vajava);
    }
    if jni.register_natives(class, &all) {
        jni.set_static_boolean(class, c"bound", true);
    } else {
        crate::log::warn(&format!("cannot bind the natives of {}", signature));
    }
}

/// Runs a native's body; a panic is thrown into Java as an IllegalStateException. Called from
/// inside a user trace library's handler, it does nothing and throws the same: the handler
/// may run while jlive holds the burst it would drive.
fn guarded<T>(env: *mut JNIEnv, fallback: T, f: impl FnOnce(Jni<'_>) -> T) -> T {
    let Some(jni) = Jni::from_callback(env) else {
        return fallback;
    };
    if crate::plugin::inside_library() {
        jni.throw_illegal_state(
            "jlive: the Java API cannot be called from inside a user trace library",
        );
        return fallback;
    }
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

/// The answer of a VA/Java native: null when it worked, else the error's text (thrown as
/// InstrumentVMException by the Java side).
fn answer(jni: Jni<'_>, result: Result<String, String>) -> jstring {
    match result {
        Ok(_) => std::ptr::null_mut(),
        Err(e) => jni.new_string(&e),
    }
}

/// `startup0(name)`: tracingStartup.
extern "system" fn startup0(env: *mut JNIEnv, _class: jclass, name: jstring) -> jstring {
    guarded(env, std::ptr::null_mut(), |jni| {
        let Some(p) = profiler::get() else {
            return std::ptr::null_mut();
        };
        let result = match jni.string(name) {
            Some(name) => crate::plugin::startup(p, &name),
            None => Err("tracingStartup needs a library name".into()),
        };
        if let Err(e) = &result {
            crate::log::warn(e);
        }
        answer(jni, result)
    })
}

/// `shutdown0()`: tracingShutdown.
extern "system" fn shutdown0(env: *mut JNIEnv, _class: jclass) -> jstring {
    guarded(env, std::ptr::null_mut(), |jni| {
        let Some(p) = profiler::get() else {
            return std::ptr::null_mut();
        };
        answer(jni, crate::plugin::shutdown(p))
    })
}

/// `refs0()`: reportObjectReferences, on this thread.
extern "system" fn refs0(env: *mut JNIEnv, _class: jclass) -> jstring {
    guarded(env, std::ptr::null_mut(), |jni| {
        let Some(p) = profiler::get() else {
            return std::ptr::null_mut();
        };
        let result = crate::plugin::report_references(p, jni).map(|n| n.to_string());
        answer(jni, result)
    })
}

/// `tracing0()`: whether a burst is open.
extern "system" fn tracing0(env: *mut JNIEnv, _class: jclass) -> jboolean {
    guarded(env, 0, |_| {
        jboolean::from(profiler::get().is_some_and(|p| p.bursts.lock().is_open()))
    })
}
