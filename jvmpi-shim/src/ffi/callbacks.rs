//! The JVMTI callbacks of the shim's own environment: each types its arguments and hands the
//! event to the shim (`shim/`), whose JVMPI event goes to the agent through [`super::deliver`].

use super::*;
use crate::abi::{self, Event};
use crate::shim::{self, Shim};
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{self, EventCallbacks, Jvmti};
use jlive_jvm::jvmti::{jvmtiAddrLocationMap, jvmtiEnv};
use jlive_jvm::refs::{Class, Local, MethodId};
use jni_sys::{jboolean, jclass, jint, jlong, jmethodID, jobject, jvalue, JNIEnv};
use std::ffi::{c_char, c_void};
use std::ptr;

/// Runs `f` with the shim and a JVMTI callback's env, guarded.
///
/// # Safety
/// `jni` is the JNIEnv of the JVMTI callback now running on this thread.
unsafe fn with_callback(jni: *mut JNIEnv, f: impl for<'l> FnOnce(&'static Shim, Jni<'l>)) {
    guarded((), || {
        let Some(s) = shim::get() else {
            return;
        };
        // SAFETY: the caller's.
        unsafe { Jni::with_raw(jni, |jni| f(s, jni)) };
    })
}

unsafe extern "C" fn vm_init(_j: *mut jvmtiEnv, jni: *mut JNIEnv, _t: jobject) {
    // SAFETY: called by the JVM as JVMTI VMInit: jni is this thread's env.
    unsafe {
        with_callback(jni, |s, jni| {
            if let Err(e) = intercept_jni(s.jvmti) {
                eprintln!("jlive: the JNI function table could not be wrapped ({}): no JNI global reference events, and agents that ask JNI for their VM will not find JVMPI", e);
            }
            s.vm_init(jni);
        })
    }
}

unsafe extern "C" fn vm_death(_j: *mut jvmtiEnv, jni: *mut JNIEnv) {
    // SAFETY: called by the JVM as JVMTI VMDeath: jni is this thread's env.
    unsafe { with_callback(jni, |s, jni| s.vm_death(jni)) }
}

unsafe extern "C" fn thread_start(_j: *mut jvmtiEnv, jni: *mut JNIEnv, _t: jobject) {
    // SAFETY: called by the JVM as JVMTI ThreadStart: jni is this thread's env.
    unsafe {
        with_callback(jni, |s, jni| {
            if !Shim::own_thread() {
                s.thread_started(jni);
            }
        })
    }
}

unsafe extern "C" fn thread_end(_j: *mut jvmtiEnv, jni: *mut JNIEnv, _t: jobject) {
    // SAFETY: called by the JVM as JVMTI ThreadEnd: jni is this thread's env.
    unsafe { with_callback(jni, |s, jni| s.thread_end(jni)) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn class_file_load_hook(
    _j: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _redefined: jclass,
    _loader: jobject,
    _name: *const c_char,
    _domain: jobject,
    len: jint,
    data: *const u8,
    new_len: *mut jint,
    new_data: *mut *mut u8,
) {
    guarded((), || {
        let Some(s) = shim::get() else {
            return;
        };
        if !s.on(abi::event::CLASS_LOAD_HOOK)
            || data.is_null()
            || new_len.is_null()
            || new_data.is_null()
        {
            return;
        }
        if s.is_live() {
            // SAFETY: called by the JVM as JVMTI ClassFileLoadHook: jni is this thread's env
            // (or null in the primordial phase).
            unsafe { Jni::with_raw(jni, |jni| s.thread(jni)) };
        }
        let mut e = Event {
            event_type: abi::event::CLASS_LOAD_HOOK,
            env_id: jni,
            u: abi::EventData {
                class_load_hook: abi::ClassLoadHook {
                    class_data: data,
                    class_data_len: len,
                    new_class_data: data as *mut u8,
                    new_class_data_len: len,
                    malloc_f: Some(agent_malloc),
                },
            },
        };
        deliver(&mut e);
        // SAFETY: the union member just written, possibly changed by the agent.
        let hook = unsafe { e.u.class_load_hook };
        if hook.new_class_data.is_null()
            || std::ptr::eq(hook.new_class_data, data)
            || hook.new_class_data_len <= 0
        {
            return;
        }
        // SAFETY: the agent allocated new_class_data_len bytes with malloc_f (the spec's
        // contract); copied into JVMTI memory, then freed as the VM would have.
        let bytes = unsafe {
            std::slice::from_raw_parts(hook.new_class_data, hook.new_class_data_len as usize)
        };
        if let Ok(p) = s.jvmti.allocate_copy(bytes) {
            // SAFETY: the JVM's out parameters, checked non-null above.
            unsafe {
                *new_data = p;
                *new_len = hook.new_class_data_len;
            }
        }
        // SAFETY: a block from agent_malloc (libc malloc), freed once.
        unsafe { libc::free(hook.new_class_data as *mut c_void) };
    })
}

unsafe extern "C" fn class_prepare(
    _j: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _t: jobject,
    class: jclass,
) {
    // SAFETY: called by the JVM as JVMTI ClassPrepare: jni is this thread's env, class a
    // local reference of this call to the class prepared.
    unsafe {
        with_callback(jni, |s, jni| {
            if let Some(class) = Class::from_raw(class) {
                s.class_prepare(jni, &class);
            }
        })
    }
}

/// MethodEntry and MethodExit.
///
/// # Safety
/// As JVMTI calls those callbacks: jni is this thread's env, thread a local reference of this
/// call, method the method entered or left.
unsafe fn method(jni: *mut JNIEnv, thread: jobject, method: jmethodID, entry: bool) {
    // SAFETY: the caller's.
    unsafe {
        with_callback(jni, |s, jni| {
            if let (Some(thread), Some(method)) =
                (Local::from_raw(thread), MethodId::from_raw(method))
            {
                s.method(jni, &thread, method, entry);
            }
        })
    }
}

unsafe extern "C" fn method_entry(_j: *mut jvmtiEnv, jni: *mut JNIEnv, t: jobject, m: jmethodID) {
    // SAFETY: called by the JVM as JVMTI MethodEntry.
    unsafe { method(jni, t, m, true) }
}

unsafe extern "C" fn method_exit(
    _j: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    t: jobject,
    m: jmethodID,
    _popped: jboolean,
    _value: jvalue,
) {
    // SAFETY: called by the JVM as JVMTI MethodExit.
    unsafe { method(jni, t, m, false) }
}

unsafe extern "C" fn compiled_method_load(
    _j: *mut jvmtiEnv,
    method: jmethodID,
    code_size: jint,
    code_addr: *const c_void,
    map_length: jint,
    map: *const jvmtiAddrLocationMap,
    _info: *const c_void,
) {
    guarded((), || {
        let Some(s) = shim::get() else {
            return;
        };
        if !s.on(abi::event::COMPILED_METHOD_LOAD) || Shim::own_thread() {
            return;
        }
        let map: &[jvmtiAddrLocationMap] = if map.is_null() || map_length <= 0 {
            &[]
        } else {
            // SAFETY: JVMTI passes map_length jvmtiAddrLocationMap entries, valid for the call.
            unsafe { std::slice::from_raw_parts(map, map_length as usize) }
        };
        // SAFETY: called by the JVM as JVMTI CompiledMethodLoad: a method of this JVM.
        let Some(id) = (unsafe { MethodId::from_raw(method) }) else {
            return;
        };
        let table = s.line_table(id);
        let lines: Vec<abi::Lineno> = map
            .iter()
            .map(|e| abi::Lineno {
                offset: (e.start_address as usize).wrapping_sub(code_addr as usize) as jint,
                lineno: shim::line_at(&table, e.location),
            })
            .collect();
        let env = current_env(s);
        s.send(
            env,
            abi::event::COMPILED_METHOD_LOAD,
            abi::EventData {
                compiled_method_load: abi::CompiledMethodLoad {
                    method_id: method,
                    code_addr,
                    code_size,
                    lineno_table_size: lines.len() as jint,
                    lineno_table: lines.as_ptr(),
                },
            },
        );
    })
}

unsafe extern "C" fn compiled_method_unload(
    _j: *mut jvmtiEnv,
    method: jmethodID,
    _a: *const c_void,
) {
    guarded((), || {
        if let Some(s) = shim::get() {
            if s.on(abi::event::COMPILED_METHOD_UNLOAD) {
                let env = current_env(s);
                s.send(
                    env,
                    abi::event::COMPILED_METHOD_UNLOAD,
                    abi::EventData {
                        id: method as *mut c_void,
                    },
                );
            }
        }
    })
}

unsafe extern "C" fn data_dump_request(_j: *mut jvmtiEnv) {
    guarded((), || {
        if let Some(s) = shim::get() {
            if s.on(abi::event::DATA_DUMP_REQUEST) {
                let env = current_env(s);
                s.send(
                    env,
                    abi::event::DATA_DUMP_REQUEST,
                    abi::EventData {
                        id: ptr::null_mut(),
                    },
                );
            }
        }
    })
}

/// The monitor events.
///
/// # Safety
/// As JVMTI calls their callbacks: jni is this thread's env, object a local reference of
/// this call.
unsafe fn monitor_event(jni: *mut JNIEnv, object: jobject, ev: jint, timeout: Option<jlong>) {
    // SAFETY: the caller's.
    unsafe {
        with_callback(jni, |s, jni| {
            if let Some(object) = Local::from_raw(object) {
                s.monitor_event(jni, ev, &object, timeout);
            }
        })
    }
}

unsafe extern "C" fn monitor_wait(
    _j: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _t: jobject,
    o: jobject,
    ms: jlong,
) {
    // SAFETY: called by the JVM as JVMTI MonitorWait.
    unsafe { monitor_event(jni, o, abi::event::MONITOR_WAIT, Some(ms)) }
}

unsafe extern "C" fn monitor_waited(
    _j: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _t: jobject,
    o: jobject,
    _to: jboolean,
) {
    // SAFETY: called by the JVM as JVMTI MonitorWaited.
    unsafe { monitor_event(jni, o, abi::event::MONITOR_WAITED, None) }
}

unsafe extern "C" fn contended_enter(_j: *mut jvmtiEnv, jni: *mut JNIEnv, _t: jobject, o: jobject) {
    // SAFETY: called by the JVM as JVMTI MonitorContendedEnter.
    unsafe { monitor_event(jni, o, abi::event::MONITOR_CONTENDED_ENTER, None) }
}

unsafe extern "C" fn contended_entered(
    _j: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _t: jobject,
    o: jobject,
) {
    // SAFETY: called by the JVM as JVMTI MonitorContendedEntered.
    unsafe { monitor_event(jni, o, abi::event::MONITOR_CONTENDED_ENTERED, None) }
}

/// In the collector's context: a lock and a notify only.
unsafe extern "C" fn gc_finish(_j: *mut jvmtiEnv) {
    guarded((), || {
        if let Some(s) = shim::get() {
            s.collected();
        }
    })
}

/// In the collector's or the service thread's context: a lock and a push only.
unsafe extern "C" fn object_free(_j: *mut jvmtiEnv, tag: jlong) {
    guarded((), || {
        if let Some(s) = shim::get() {
            s.freed(tag);
        }
    })
}

unsafe extern "C" fn object_alloc(
    _j: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _t: jobject,
    object: jobject,
    class: jclass,
    size: jlong,
) {
    // SAFETY: called by the JVM as JVMTI VMObjectAlloc or SampledObjectAlloc: jni is this
    // thread's env, object and class local references of this call (class the object's).
    unsafe {
        with_callback(jni, |s, jni| {
            if !s.on(abi::event::OBJECT_ALLOC) {
                return;
            }
            if let (Some(object), Some(class)) = (Local::from_raw(object), Class::from_raw(class)) {
                s.object_alloc(jni, &object, &class, size, 0);
            }
        })
    }
}

/// Registers every callback the shim's events may need (each JVMTI event stays off until
/// an agent's EnableEvent turns it on).
pub fn set_callbacks(jvmti: Jvmti) -> jvmti::Result<()> {
    let mut cb = EventCallbacks::default();
    cb.base.VMInit = Some(vm_init);
    cb.base.VMDeath = Some(vm_death);
    cb.base.ThreadStart = Some(thread_start);
    cb.base.ThreadEnd = Some(thread_end);
    cb.base.ClassFileLoadHook = Some(class_file_load_hook);
    cb.base.ClassPrepare = Some(class_prepare);
    cb.base.MethodEntry = Some(method_entry);
    cb.base.MethodExit = Some(method_exit);
    cb.base.CompiledMethodLoad = Some(compiled_method_load);
    cb.base.CompiledMethodUnload = Some(compiled_method_unload);
    cb.base.DataDumpRequest = Some(data_dump_request);
    cb.base.MonitorWait = Some(monitor_wait);
    cb.base.MonitorWaited = Some(monitor_waited);
    cb.base.MonitorContendedEnter = Some(contended_enter);
    cb.base.MonitorContendedEntered = Some(contended_entered);
    cb.base.GarbageCollectionFinish = Some(gc_finish);
    cb.base.ObjectFree = Some(object_free);
    cb.base.VMObjectAlloc = Some(object_alloc);
    cb.sampled_object_alloc = Some(object_alloc);
    // SAFETY: each function above is written for its event's arguments (jvmti.h), catches
    // its own panics and may run on any thread.
    unsafe { jvmti.set_event_callbacks(&cb) }
}
