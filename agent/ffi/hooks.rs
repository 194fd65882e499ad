//! JVMTI callbacks whose arguments are raw buffers: taken apart here into safe types before
//! the handler (in `capture/`) sees them.

use super::jvmti::{jvmtiEnv, Jvmti};
use crate::callbacks::guard;
use jni_sys::{jclass, jint, jobject, JNIEnv};
use std::ffi::{c_char, c_uchar, CStr};

/// JVMTI ClassFileLoadHook: hands the class to `capture::bci::class_file_load` and, if it
/// returns new bytes, gives the JVM a JVMTI-allocated copy.
///
/// # Safety
/// Called by the JVM only, with the arguments JVMTI documents: a NUL-terminated name (or
/// null), `length` readable bytes at `data`, and writable out-parameters.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn class_file_load_hook(
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
    // SAFETY: the JVM passes a NUL-terminated class name valid for this callback.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    // SAFETY: the JVM passes `length` bytes of class file at `data` for this callback.
    let bytes = unsafe { std::slice::from_raw_parts(data, length as usize) };
    let jvmti = Jvmti::from_raw(env);
    guard(|| {
        let Some(out) =
            crate::capture::bci::class_file_load(jvmti, jni, redefined, loader, &name, bytes)
        else {
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
