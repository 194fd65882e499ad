//! The Java API (`jlive-api.jar`): `jlive.Jlive` and VA/Java's
//! `com.ibm.uvm.instrumenting.InstrumentVMSupport`. Both classes declare the same private
//! static natives and a static `bound` flag. When either class is prepared, the session binds
//! these natives with RegisterNatives and sets `bound`; without jlive the flag stays false and the
//! public methods do nothing. A panic in a native becomes an IllegalStateException.

use super::session;
use crate::capture::bci::Native;
use crate::capture::BurstFlags;
use jlive_jvm::jni::Jni;
use jlive_jvm::refs::JString;
use jni_sys::{jboolean, jclass, jint, jstring, JNIEnv};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `jlive.Jlive`'s natives (InstrumentVMSupport declares them too).
pub static API: [Native; 4] = [
    native!(c"begin0", c"(Ljava/lang/String;I)Z", begin0),
    native!(c"end0", c"()Z", end0),
    native!(c"event0", c"(Ljava/lang/String;)V", event0),
    native!(c"tracing0", c"()Z", tracing0),
];

/// InstrumentVMSupport's natives beyond [`API`].
pub static VAJAVA: [Native; 3] = [
    native!(
        c"startup0",
        c"(Ljava/lang/String;)Ljava/lang/String;",
        startup0
    ),
    native!(c"shutdown0", c"()Ljava/lang/String;", shutdown0),
    native!(c"refs0", c"()Ljava/lang/String;", refs0),
];

/// Runs a native's body; a panic is thrown into Java as an IllegalStateException. Called from
/// inside a user trace library's handler, it does nothing and throws the same: the handler
/// may run while jlive holds the burst it would drive.
///
/// # Safety
/// `env` is the env the JVM passed to the native now running on this thread.
unsafe fn guarded<T: Copy>(
    env: *mut JNIEnv,
    fallback: T,
    f: impl for<'l> FnOnce(Jni<'l>) -> T,
) -> T {
    let body = |jni: Jni<'_>| {
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
    };
    // SAFETY: the caller's.
    unsafe { Jni::with_raw(env, body) }.unwrap_or(fallback)
}

/// `begin0(label, flags)`: opens a burst; flags 0 = the agent's options.
unsafe extern "system" fn begin0(
    env: *mut JNIEnv,
    _class: jclass,
    label: jstring,
    flags: jint,
) -> jboolean {
    // SAFETY: called by the JVM as the native begin0: label is a String argument (or null).
    unsafe {
        guarded(env, 0, |jni| {
            let Some(s) = session() else { return 0 };
            let label = JString::from_raw(label).and_then(|l| jni.string(&l));
            let flags = (flags != 0).then(|| BurstFlags::from_vajava(flags, s.default_flags()));
            jboolean::from(s.begin_burst(label.as_deref(), flags).is_ok())
        })
    }
}

/// `end0()`: closes the open burst.
unsafe extern "system" fn end0(env: *mut JNIEnv, _class: jclass) -> jboolean {
    // SAFETY: called by the JVM as the native end0.
    unsafe {
        guarded(env, 0, |_| {
            let Some(s) = session() else { return 0 };
            jboolean::from(s.end_burst().is_ok())
        })
    }
}

/// `event0(message)`: a USER_EVENT on the calling thread.
unsafe extern "system" fn event0(env: *mut JNIEnv, _class: jclass, message: jstring) {
    // SAFETY: called by the JVM as the native event0: message is a String argument (or null).
    unsafe {
        guarded(env, (), |jni| {
            let text = JString::from_raw(message).and_then(|m| jni.string(&m));
            if let (Some(s), Some(text)) = (session(), text) {
                s.thread_event(text);
            }
        })
    }
}

/// The answer of a VA/Java native: null when it worked, else the error's text (thrown as
/// InstrumentVMException by the Java side).
fn answer(jni: Jni<'_>, result: Result<String, String>) -> jstring {
    match result {
        Ok(_) => std::ptr::null_mut(),
        Err(e) => jni
            .new_string(&e)
            .map_or(std::ptr::null_mut(), |s| s.into_raw()),
    }
}

/// `startup0(name)`: tracingStartup.
unsafe extern "system" fn startup0(env: *mut JNIEnv, _class: jclass, name: jstring) -> jstring {
    // SAFETY: called by the JVM as the native startup0: name is a String argument (or null).
    unsafe {
        guarded(env, std::ptr::null_mut(), |jni| {
            let Some(s) = session() else {
                return std::ptr::null_mut();
            };
            let result = match JString::from_raw(name).and_then(|n| jni.string(&n)) {
                Some(name) => s.plugin_startup(&name),
                None => Err("tracingStartup needs a library name".into()),
            };
            if let Err(e) = &result {
                crate::log::warn(e);
            }
            answer(jni, result)
        })
    }
}

/// `shutdown0()`: tracingShutdown.
unsafe extern "system" fn shutdown0(env: *mut JNIEnv, _class: jclass) -> jstring {
    // SAFETY: called by the JVM as the native shutdown0.
    unsafe {
        guarded(env, std::ptr::null_mut(), |jni| {
            let Some(s) = session() else {
                return std::ptr::null_mut();
            };
            answer(jni, s.plugin_shutdown())
        })
    }
}

/// `refs0()`: reportObjectReferences, on this thread.
unsafe extern "system" fn refs0(env: *mut JNIEnv, _class: jclass) -> jstring {
    // SAFETY: called by the JVM as the native refs0.
    unsafe {
        guarded(env, std::ptr::null_mut(), |jni| {
            let Some(s) = session() else {
                return std::ptr::null_mut();
            };
            let result = s.report_references(jni).map(|n| n.to_string());
            answer(jni, result)
        })
    }
}

/// `tracing0()`: whether a burst is open.
unsafe extern "system" fn tracing0(env: *mut JNIEnv, _class: jclass) -> jboolean {
    // SAFETY: called by the JVM as the native tracing0.
    unsafe {
        guarded(env, 0, |_| {
            jboolean::from(session().is_some_and(|s| s.recorder().is_open()))
        })
    }
}
