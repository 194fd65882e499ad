//! The few JNI calls the agent makes, on the JNIEnv a JVMTI callback receives.
//!
//! A [`LocalFrame`] brackets a callback that creates local references (interfaces, thread
//! groups, component types): PushLocalFrame on entry, PopLocalFrame on drop, so references
//! can neither leak nor outlive the callback that made them.
//!
//! JNI references (`jobject`, `jclass`, `jthread`) and JVMTI IDs are opaque handles that only
//! the JVM dereferences; passing one that is not live is the JVM's documented error, not a
//! Rust memory access, hence the lint allowance below.

#![allow(clippy::not_unsafe_ptr_arg_deref)]

use jni_sys::{jclass, jint, jmethodID, jobject, jvalue, JNIEnv};
use std::ffi::CStr;
use std::marker::PhantomData;
use std::ptr;

/// The JNIEnv of the current thread, valid for the callback that received it.
#[derive(Clone, Copy)]
pub struct Jni<'cb> {
    env: *mut JNIEnv,
    _callback: PhantomData<&'cb ()>,
}

impl<'cb> Jni<'cb> {
    /// Wraps the JNIEnv a JVMTI callback received. None for a null pointer.
    pub fn from_callback(env: *mut JNIEnv) -> Option<Jni<'cb>> {
        (!env.is_null()).then_some(Jni {
            env,
            _callback: PhantomData,
        })
    }

    /// The superclass of a class; None for Object, interfaces and primitives.
    pub fn superclass(&self, class: jclass) -> Option<jclass> {
        // SAFETY: env is the current thread's JNIEnv; class is a live reference.
        let s = unsafe { ((**self.env).GetSuperclass?)(self.env, class) };
        (!s.is_null()).then_some(s)
    }

    pub fn object_class(&self, object: jobject) -> Option<jclass> {
        // SAFETY: as above; object is a live reference.
        let c = unsafe { ((**self.env).GetObjectClass?)(self.env, object) };
        (!c.is_null()).then_some(c)
    }

    pub fn array_length(&self, array: jobject) -> jint {
        // SAFETY: the caller has checked that `array` is an array.
        unsafe {
            (**self.env)
                .GetArrayLength
                .map_or(0, |f| f(self.env, array))
        }
    }

    /// `class.getComponentType()`, for an array class.
    pub fn component_type(&self, class: jclass) -> Option<jclass> {
        let method = self.method_id(class, c"getComponentType", c"()Ljava/lang/Class;")?;
        // SAFETY: method is Class.getComponentType on a live Class object, no arguments.
        let c = unsafe {
            ((**self.env).CallObjectMethodA?)(self.env, class, method, ptr::null::<jvalue>())
        };
        self.clear_exception();
        (!c.is_null()).then_some(c)
    }

    fn method_id(&self, class: jclass, name: &CStr, sig: &CStr) -> Option<jmethodID> {
        // GetMethodID on the Class object's class (java.lang.Class).
        let class_class = self.object_class(class)?;
        // SAFETY: names are NUL-terminated; class_class is a live local reference.
        let m = unsafe {
            ((**self.env).GetMethodID?)(self.env, class_class, name.as_ptr(), sig.as_ptr())
        };
        self.clear_exception();
        (!m.is_null()).then_some(m)
    }

    fn clear_exception(&self) {
        // SAFETY: env is valid; ExceptionCheck/Clear have no preconditions.
        unsafe {
            if let (Some(check), Some(clear)) =
                ((**self.env).ExceptionCheck, (**self.env).ExceptionClear)
            {
                if check(self.env) != 0 {
                    clear(self.env);
                }
            }
        }
    }

    /// Opens a local reference frame that is popped when the guard drops.
    pub fn local_frame(&self, capacity: jint) -> Option<LocalFrame<'cb>> {
        // SAFETY: env is valid; PushLocalFrame only reserves capacity.
        let rc = unsafe { ((**self.env).PushLocalFrame?)(self.env, capacity) };
        self.clear_exception();
        (rc == 0).then_some(LocalFrame { jni: *self })
    }
}

/// Frees every local reference made since it was opened.
pub struct LocalFrame<'cb> {
    jni: Jni<'cb>,
}

impl Drop for LocalFrame<'_> {
    fn drop(&mut self) {
        // SAFETY: pairs with the PushLocalFrame that created this guard, on the same thread.
        unsafe {
            if let Some(pop) = (**self.jni.env).PopLocalFrame {
                pop(self.jni.env, ptr::null_mut());
            }
        }
    }
}
