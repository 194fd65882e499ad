//! The JavaVM: GetEnv, attaching jlive's own threads, JVMTI environments.

use super::Jni;
use crate::jvmti::{
    Capabilities, Jvmti, JvmtiError, Result, ERROR_NOT_AVAILABLE, JVMTI_VERSION_11,
    JVMTI_VERSION_1_2,
};
use jni_sys::{jint, jobject, JNIEnv, JNIInvokeInterface_, JavaVM};
use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

/// JNI_VERSION_1_8.
const JNI_VERSION: jint = 0x0001_0008;

/// The JavaVM of this process.
#[derive(Clone, Copy, Debug)]
pub struct Vm(NonNull<JavaVM>);

// SAFETY: the JavaVM is valid for the life of the process and usable on any thread.
unsafe impl Send for Vm {}
// SAFETY: as above.
unsafe impl Sync for Vm {}

#[repr(C)]
struct AttachArgs {
    version: jint,
    name: *const std::ffi::c_char,
    group: jobject,
}

impl Vm {
    /// Types the JavaVM the JVM handed over; None for null.
    ///
    /// # Safety
    /// `vm` is the JavaVM this process's JVM passed to Agent_OnLoad or Agent_OnAttach (or
    /// JNI_OnLoad): valid for the rest of the process, on every thread.
    pub unsafe fn from_raw(vm: *mut JavaVM) -> Option<Vm> {
        NonNull::new(vm).map(Vm)
    }

    /// The raw JavaVM (for a shim that wraps it; never dereferenced by its holder).
    pub fn raw(&self) -> *mut JavaVM {
        self.0.as_ptr()
    }

    fn fns(&self) -> &JNIInvokeInterface_ {
        // SAFETY: a live JavaVM (from_raw's contract) points to its invoke table.
        unsafe { &**self.0.as_ptr() }
    }

    /// GetEnv for `version`: the calling thread's environment of that kind, if the thread is
    /// attached (and the VM offers it).
    fn get_env(&self, version: jint) -> Option<NonNull<c_void>> {
        let mut env: *mut c_void = ptr::null_mut();
        // SAFETY: the JavaVM is live; env receives the environment or stays null.
        let rc = self
            .fns()
            .GetEnv
            .map_or(-1, |f| unsafe { f(self.raw(), &mut env, version) });
        if rc == 0 {
            NonNull::new(env)
        } else {
            None
        }
    }

    /// This VM's JVMTI 1.2 environment (one per call: each GetEnv makes a new one); None
    /// before JDK 11, whose function table is shorter than the one jlive calls into.
    pub fn jvmti(&self) -> Option<Jvmti> {
        let env = self.get_env(JVMTI_VERSION_1_2)?;
        // SAFETY: GetEnv answered a jvmtiEnv of this VM, which nothing disposes of while the
        // value lives (dispose is the holder's, and unsafe).
        let jvmti = unsafe { Jvmti::from_raw(env.as_ptr() as *mut _) }?;
        if jvmti.version() < JVMTI_VERSION_11 {
            // SAFETY: made just above, no copy of it kept.
            unsafe { jvmti.dispose() };
            return None;
        }
        Some(jvmti)
    }

    /// A JVMTI environment of this VM of its own (its tags and events are its own), holding
    /// `caps`; the caller disposes of it.
    pub fn new_jvmti_env(&self, caps: &Capabilities) -> Result<Jvmti> {
        let env = self.jvmti().ok_or(JvmtiError(ERROR_NOT_AVAILABLE))?;
        if let Err(e) = env.add_capabilities(caps) {
            // SAFETY: made just above; no copy of it has left this function.
            unsafe { env.dispose() };
            return Err(e);
        }
        Ok(env)
    }

    /// The calling thread's JNIEnv as a raw identity (JVMPI's thread ID), if it is attached.
    pub fn current_env_id(&self) -> Option<*mut JNIEnv> {
        self.get_env(JNI_VERSION).map(|e| e.as_ptr() as *mut JNIEnv)
    }

    /// Runs `f` with the calling thread's JNIEnv if the thread is attached (None: it is not,
    /// and stays so).
    pub fn with_current<R>(&self, f: impl for<'l> FnOnce(Jni<'l>) -> R) -> Option<R> {
        let env = self.get_env(JNI_VERSION)?;
        // SAFETY: GetEnv answered this thread's JNIEnv; the thread stays attached during `f`
        // (only an `Attached` guard, which outlives any `Jni` it lends, detaches it).
        unsafe { Jni::with_raw(env.as_ptr() as *mut JNIEnv, f) }
    }

    /// Runs `f` with the calling thread's JNIEnv: as it is if the thread is attached, else
    /// attached as a daemon for the call and detached after it.
    pub fn with_env<R>(&self, f: impl for<'l> FnOnce(Jni<'l>) -> R) -> Option<R> {
        if self.get_env(JNI_VERSION).is_some() {
            return self.with_current(f);
        }
        let attached = self.attach_daemon(c"jlive")?;
        attached.with(f)
    }

    /// Attaches the calling thread as a daemon thread named `name`, until the guard drops.
    /// None if the thread is attached already (its attachment is someone else's to end) or
    /// the VM refuses.
    pub fn attach_daemon(&self, name: &CStr) -> Option<Attached> {
        if self.get_env(JNI_VERSION).is_some() {
            return None;
        }
        let mut env: *mut c_void = ptr::null_mut();
        let mut args = AttachArgs {
            version: JNI_VERSION,
            name: name.as_ptr(),
            group: ptr::null_mut(),
        };
        // SAFETY: the JavaVM is live; args outlives the call; env receives the thread's
        // JNIEnv.
        let rc = self
            .fns()
            .AttachCurrentThreadAsDaemon
            .map_or(-1, |f| unsafe {
                f(
                    self.raw(),
                    &mut env,
                    &mut args as *mut AttachArgs as *mut c_void,
                )
            });
        let env = NonNull::new(env as *mut JNIEnv).filter(|_| rc == 0)?;
        Some(Attached {
            vm: *self,
            env,
            _thread: PhantomData,
        })
    }
}

/// A thread jlive attached to the JVM ([`Vm::attach_daemon`]); detached when dropped. It
/// must then hold no monitors and have no Java frames: a thread jlive started itself.
pub struct Attached {
    vm: Vm,
    env: NonNull<JNIEnv>,
    /// Attached is this thread's: neither `Send` nor `Sync`.
    _thread: PhantomData<*const ()>,
}

impl Attached {
    /// Runs `f` with this thread's JNIEnv.
    pub fn with<R>(&self, f: impl for<'l> FnOnce(Jni<'l>) -> R) -> Option<R> {
        // SAFETY: AttachCurrentThreadAsDaemon gave this thread this env; the thread stays
        // attached while `self` lives, which `f` cannot outlast.
        unsafe { Jni::with_raw(self.env.as_ptr(), f) }
    }

    /// The raw JNIEnv: the thread's identity in JVMPI, never dereferenced by its holder.
    pub fn raw(&self) -> *mut JNIEnv {
        self.env.as_ptr()
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        // A Jni of this attachment may be alive only if the guard was moved into a closure
        // that holds one: then the thread stays attached (to the end of the thread).
        if super::TOP.with(|t| t.get()) != 0 {
            return;
        }
        if let Some(detach) = self.vm.fns().DetachCurrentThread {
            // SAFETY: called on the thread this guard attached (it is not Send).
            let _ = unsafe { detach(self.vm.raw()) };
        }
    }
}
