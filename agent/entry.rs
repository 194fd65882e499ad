//! The symbols the JVM looks up in libjlive.so. Nothing here may unwind into the JVM: every
//! entry point runs its body under `catch_unwind` and answers JNI_ERR on a panic.

use crate::{log, profiler};
use jni_sys::{jint, JavaVM, JNI_ERR, JNI_OK};
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What Agent_OnAttach answers when jlive was loaded already (`jlive attach` says so).
pub const ALREADY_LOADED: jint = 75;

fn option_text(options: *const c_char) -> String {
    if options.is_null() {
        String::new()
    } else {
        // SAFETY: the JVM passes a NUL-terminated option string (or NULL) valid for this call.
        unsafe { CStr::from_ptr(options) }
            .to_string_lossy()
            .into_owned()
    }
}

fn on_load(vm: *mut JavaVM, options: *const c_char) -> jint {
    let text = option_text(options);
    let result = catch_unwind(AssertUnwindSafe(|| profiler::load(vm, &text)));
    match result {
        Ok(Ok(())) => JNI_OK,
        Ok(Err(message)) => {
            log::to_stderr();
            log::warn(&message);
            JNI_ERR
        }
        Err(_) => {
            log::warn("internal error while loading (jlive is not running)");
            JNI_ERR
        }
    }
}

/// `-agentpath:libjlive.so=OPTIONS`, `-agentlib:jlive=OPTIONS` and `-Xrunjlive:OPTIONS`.
///
/// There is deliberately no `JVM_OnLoad`. HotSpot calls a -Xrun library's JVM_OnLoad while
/// the VM is still being created, when `GetEnv` answers JNI_EDETACHED for every version
/// (jni_GetEnv refuses until create_vm has returned), so no JVMTI environment could be had
/// there. A -Xrun library without JVM_OnLoad is converted into an agent and its
/// Agent_OnLoad is called at the normal agent time instead: `-Xrunjlive` works through this.
#[no_mangle]
pub extern "system" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    on_load(vm, options)
}

/// `jlive attach` (HotSpot's `load` attach operation, as `jcmd PID JVMTI.agent_load` does).
///
/// An answer other than JNI_OK makes the JVM close the library again (JDK 17+), so once
/// anything of jlive runs (the writer thread, callbacks) it answers JNI_OK, and says what
/// failed on the JVM's stderr.
#[no_mangle]
pub extern "system" fn Agent_OnAttach(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    let text = option_text(options);
    let result = catch_unwind(AssertUnwindSafe(|| profiler::attach(vm, &text)));
    match result {
        Ok(Ok(profiler::Attached::Started)) => JNI_OK,
        Ok(Ok(profiler::Attached::AlreadyLoaded)) => ALREADY_LOADED,
        Ok(Err(message)) => {
            log::to_stderr();
            log::warn(&message);
            if profiler::get().is_some() {
                JNI_OK
            } else {
                JNI_ERR
            }
        }
        Err(_) => {
            log::warn("internal error while attaching");
            if profiler::get().is_some() {
                JNI_OK
            } else {
                JNI_ERR
            }
        }
    }
}

/// Called as the library is unloaded; closes the trace if VM death never came.
#[no_mangle]
pub extern "system" fn Agent_OnUnload(_vm: *mut JavaVM) {
    let _ = catch_unwind(|| {
        if let Some(p) = profiler::get() {
            p.close("unload");
        }
        crate::control::remove_socket();
    });
}
