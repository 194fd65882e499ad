//! The entry points: every symbol the JVM looks up in libjlive.so (Agent_OnLoad,
//! Agent_OnAttach, Agent_OnUnload, JliveTrampoline's `bind`, the user trace libraries'
//! `InstrumentSupportCurrentThreadDetails`), every function it calls back (the JVMTI
//! callbacks: `jvmti.rs`; the natives of JliveTrampoline and of the Java API: `natives.rs`,
//! `javaapi.rs`), and the one [`SESSION`] they all reach.
//!
//! Each callback is a thin thunk: the session, a panic guard, one call into the session.
//! Nothing here may unwind into the JVM: every body runs under `catch_unwind` ([`guard`]).

use crate::log;
use crate::options::Options;
use crate::session::{Attached, Session, Start, Thunks};
use jlive_jvm::jni::{Jni, Vm};
use jni_sys::{jint, JNIEnv, JavaVM, JNI_ERR, JNI_OK};
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// A native method of ours for RegisterNatives: `$f` must be an `extern "system"` function
/// of the C signature its descriptor gives (a `*mut JNIEnv`, the class, the arguments).
macro_rules! native {
    ($name:expr, $descriptor:expr, $f:expr) => {
        // SAFETY: every function these tables name is declared, right below its table, with
        // the parameters and result of its descriptor (checked by the tests that call them).
        unsafe {
            jlive_jvm::jni::NativeMethod::new($name, $descriptor, $f as *mut std::ffi::c_void)
        }
    };
}

mod javaapi;
mod jvmti;
mod natives;

/// The run, once loaded: what every callback and native reaches. A static because the JVM
/// calls them with no context of ours.
static SESSION: OnceLock<Session> = OnceLock::new();

/// What Agent_OnAttach answers when jlive was loaded already (`jlive attach` says so).
pub const ALREADY_LOADED: jint = 75;

/// The functions the session registers with the JVM.
static THUNKS: Thunks = Thunks {
    callbacks: jvmti::callbacks,
    api: &javaapi::API,
    vajava: &javaapi::VAJAVA,
    mount: jvmti::virtual_thread_mount,
    unmount: jvmti::virtual_thread_unmount,
    writer_failed,
};

/// The running session, once loaded.
#[inline(always)]
fn session() -> Option<&'static Session> {
    SESSION.get()
}

/// Runs a callback body; a panic is logged and stops at this boundary.
#[inline(always)]
fn guard(f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        log::warn("internal error in a JVMTI callback (ignored)");
    }
}

/// [`guard`] of a body that needs the session (nothing without one).
#[inline(always)]
fn with_session(f: impl FnOnce(&'static Session)) {
    guard(|| {
        if let Some(s) = session() {
            f(s)
        }
    })
}

/// [`with_session`] of a callback or native that has a JNIEnv.
///
/// # Safety
/// `jni` is the JNIEnv the JVM passed to the callback or native now running on this thread.
#[inline(always)]
unsafe fn with_jni(jni: *mut JNIEnv, f: impl for<'l> FnOnce(&'static Session, Jni<'l>)) {
    with_session(|s| {
        // SAFETY: the caller's.
        unsafe { Jni::with_raw(jni, |jni| f(s, jni)) };
    })
}

/// The writer cannot write (or failed).
fn writer_failed() {
    if let Some(s) = session() {
        s.stop_recording();
    }
}

/// Agent_OnLoad's and Agent_OnAttach's arguments, typed; None for a null JavaVM.
///
/// # Safety
/// `vm` is the JVM's JavaVM (valid for the rest of the process), `options` null or a
/// NUL-terminated string valid for this call.
unsafe fn agent_arguments(vm: *mut JavaVM, options: *const c_char) -> Option<(Vm, String)> {
    // SAFETY: the caller's.
    unsafe { Some((Vm::from_raw(vm)?, option_text(options))) }
}

/// The option string the JVM passes.
///
/// # Safety
/// `options` is null or a NUL-terminated string valid for this call.
unsafe fn option_text(options: *const c_char) -> String {
    if options.is_null() {
        String::new()
    } else {
        // SAFETY: the JVM passes a NUL-terminated option string (or NULL) valid for this call.
        unsafe { CStr::from_ptr(options) }
            .to_string_lossy()
            .into_owned()
    }
}

/// `-agentpath:libjlive.so=OPTIONS`, `-agentlib:jlive=OPTIONS` and `-Xrunjlive:OPTIONS`.
///
/// There is deliberately no `JVM_OnLoad`. HotSpot calls a -Xrun library's JVM_OnLoad while
/// the VM is still being created, when `GetEnv` answers JNI_EDETACHED for every version
/// (jni_GetEnv refuses until create_vm has returned), so no JVMTI environment could be had
/// there. A -Xrun library without JVM_OnLoad is converted into an agent and its
/// Agent_OnLoad is called at the normal agent time instead: `-Xrunjlive` works through this.
///
/// # Safety
/// Called by the JVM only, with its JavaVM and the option string (or null).
#[no_mangle]
pub unsafe extern "system" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    // SAFETY: the JVM's JavaVM and option string.
    let Some((vm, text)) = (unsafe { agent_arguments(vm, options) }) else {
        return JNI_ERR;
    };
    let loaded = catch_unwind(AssertUnwindSafe(|| load(vm, &text).map(|()| JNI_OK)));
    answer(loaded, || JNI_ERR, "loading (jlive is not running)")
}

/// Agent_OnLoad's or Agent_OnAttach's answer: what it did, or `failed()` once its error (or
/// panic, while `doing` what) is said.
fn answer(
    done: std::thread::Result<Result<jint, String>>,
    failed: impl Fn() -> jint,
    doing: &str,
) -> jint {
    match done {
        Ok(Ok(rc)) => rc,
        Ok(Err(message)) => {
            log::to_stderr();
            log::warn(&message);
            failed()
        }
        Err(_) => {
            log::warn(&format!("internal error while {}", doing));
            failed()
        }
    }
}

/// `jlive attach` (HotSpot's `load` attach operation, as `jcmd PID JVMTI.agent_load` does).
///
/// An answer other than JNI_OK makes the JVM close the library again (JDK 17+), so once
/// anything of jlive runs (the writer thread, callbacks) it answers JNI_OK, and says what
/// failed on the JVM's stderr.
///
/// # Safety
/// Called by the JVM only, with its JavaVM and the option string (or null).
#[no_mangle]
pub unsafe extern "system" fn Agent_OnAttach(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    // SAFETY: the JVM's JavaVM and option string.
    let Some((vm, text)) = (unsafe { agent_arguments(vm, options) }) else {
        return JNI_ERR;
    };
    let running = || if session().is_some() { JNI_OK } else { JNI_ERR };
    let attached = catch_unwind(AssertUnwindSafe(|| {
        attach(vm, &text).map(|a| match a {
            Attached::Started => JNI_OK,
            Attached::AlreadyLoaded => ALREADY_LOADED,
        })
    }));
    answer(attached, running, "attaching")
}

/// Called as the library is unloaded; closes the trace if VM death never came.
#[no_mangle]
pub extern "system" fn Agent_OnUnload(_vm: *mut JavaVM) {
    let _ = catch_unwind(|| {
        if let Some(s) = session() {
            s.close("unload");
        }
        crate::jvmpi::unload();
    });
}

/// Agent_OnLoad: Ok, or the one line to print before returning JNI_ERR.
fn load(vm: Vm, text: &str) -> Result<(), String> {
    if let Some((before, spec)) = crate::options::split_jvmpi(text) {
        return crate::jvmpi::host(vm, before, spec);
    }
    let options = Options::parse(text).map_err(|e| e.0)?;
    if options.help {
        print!("{}", crate::options::help_text());
        std::process::exit(0);
    }
    start(vm, options, text, false)
}

/// Agent_OnAttach: loads into a running JVM and does at once what VMStart and VMInit do for
/// an agent loaded at start-up; under capture=bci that retransforms every loaded class. Ok,
/// or the one line to print before returning JNI_ERR.
fn attach(vm: Vm, text: &str) -> Result<Attached, String> {
    if session().is_some() {
        log::warn("jlive is already loaded in this JVM: this attach changes nothing (its options are ignored); drive it with jlive ctl");
        return Ok(Attached::AlreadyLoaded);
    }
    if crate::options::split_jvmpi(text).is_some() {
        return Err("jvmpi= works at start-up only: a JVMPI agent loads before the VM runs (-agentpath:libjlive.so=jvmpi=...)".into());
    }
    let options = Options::parse_attached(text).map_err(|e| e.0)?;
    if options.help {
        return Err("help: `jlive attach --help` lists the options".into());
    }
    if jlive_jvm::os::another_copy_loaded() {
        log::warn("jlive is already loaded in this JVM (another copy of libjlive.so): this attach changes nothing; drive it with jlive ctl");
        return Ok(Attached::AlreadyLoaded);
    }
    start(vm, options, text, true)?;
    let s = session().ok_or("session state lost")?;
    s.attached();
    Ok(Attached::Started)
}

/// What Agent_OnLoad and Agent_OnAttach share: the session in its place, its callbacks
/// registered.
fn start(vm: Vm, options: Options, text: &str, attached: bool) -> Result<(), String> {
    if let Some(path) = &options.log {
        log::to_file(path).map_err(|e| format!("cannot open log file {}: {}", path, e))?;
    }
    if session().is_some() {
        return Err("libjlive.so is loaded twice; give it once".into());
    }
    // Every panic is caught where it would cross into the JVM or end an agent thread, and
    // said there in one `jlive:` line; its place goes to the log, not to the JVM's stderr.
    std::panic::set_hook(Box::new(|info| {
        log::info(&format!("internal error: {}", info));
    }));
    let jvmti = vm
        .jvmti()
        .ok_or("this JVM offers no JVMTI 1.2 environment")?;
    // Bound now, so that a port in use stops the JVM before `main`.
    let services = crate::control::bind(&options).inspect_err(|_| {
        // SAFETY: made just above, and no copy of it is kept (jlive does not start).
        unsafe { jvmti.dispose() }
    })?;
    let made = Session::new(Start {
        vm,
        jvmti,
        options,
        text,
        attached,
        thunks: &THUNKS,
        services,
    })?;
    if SESSION.set(made).is_err() {
        return Err("libjlive.so is loaded twice; give it once".into());
    }
    session().ok_or("session state lost")?.set_callbacks()
}
