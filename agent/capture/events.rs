//! `capture=events`: JVMTI MethodEntry and MethodExit. Every thread runs interpreted while
//! these events are enabled, which is what makes this backend slow (hundreds of ns per call)
//! but exact: exits by exception are reported too (`was_popped_by_exception`).

use super::{entered, exited};
use crate::callbacks::{attach_java_thread, guard, receiver};
use crate::clock;
use crate::ffi::jvmti::{jthread, jvmtiEnv, Jvmti};
use crate::profiler;
use jlive_writer::record::{MethodKey, NO_OBJECT};
use jni_sys::{jboolean, jmethodID, jvalue, JNIEnv};

/// JVMTI MethodEntry.
pub extern "C" fn method_entry(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
) {
    let mut ticks = clock::ticks();
    guard(|| {
        let Some(p) = profiler::get() else { return };
        let jvmti = Jvmti::from_raw(env);
        if super::trigger::armed() {
            let fired = super::trigger::entered(p, method as MethodKey, || {
                p.hub
                    .current_or(|| attach_java_thread(p, jvmti, thread))
                    .map(|b| b.key)
            });
            if !fired {
                return;
            }
            // The burst began after the entry was seen: the entry lies inside it.
            ticks = clock::ticks();
        }
        let object = if p.options.objects {
            receiver(p, jvmti, jni, thread, ticks)
        } else {
            NO_OBJECT
        };
        entered(p, ticks, method as MethodKey, object, || {
            attach_java_thread(p, jvmti, thread)
        });
        if super::values::active() {
            super::values::entered(p, jvmti, jni, thread, method, object, ticks);
        }
    });
}

/// JVMTI MethodExit.
pub extern "C" fn method_exit(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    method: jmethodID,
    by_exception: jboolean,
    value: jvalue,
) {
    let ticks = clock::ticks();
    guard(|| {
        let Some(p) = profiler::get() else { return };
        if super::values::active() {
            let jvmti = Jvmti::from_raw(env);
            super::values::exiting(
                p,
                jvmti,
                jni,
                thread,
                method,
                by_exception != 0,
                value,
                ticks,
            );
        }
        exited(p, ticks, method as MethodKey, || {
            attach_java_thread(p, Jvmti::from_raw(env), thread)
        });
    });
}
