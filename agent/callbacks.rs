//! Where JVMTI events (other than method entry and exit, see `capture/`) become records:
//! VM start and death, threads, class preparation, garbage collection, allocations and frees.
//!
//! GarbageCollectionStart/Finish and ObjectFree run where the JVM forbids almost everything:
//! they use no JVMTI or JNI function, take no lock a Java thread could hold across a
//! safepoint, and append without blocking (a full channel grows the buffer instead). The user
//! trace library's queue (`plugin.rs`) is a lock held only around a push or a drain, never
//! across a call into the JVM, so no holder can be stopped by the safepoint holding it.

use crate::buffer::{Hub, ThreadBuffer};
use crate::classes::Classes;
use crate::clock;
use crate::ffi::jni::Jni;
use crate::ffi::jvmti::{jthread, jvmtiEnv, Jvmti};
use crate::profiler::{self, Profiler};
use jlive_writer::record::Symbols;
use jlive_writer::record::{
    ClassKey, RecordKind, ThreadInfo, NOT_ARRAY, NO_OBJECT, PENDING_OBJECT, UNKNOWN_THREAD,
};
use jni_sys::{jclass, jlong, jobject, JNIEnv};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs a callback body; a panic is logged and stops at this boundary.
#[inline(always)]
pub fn guard(f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        crate::log::warn("internal error in a JVMTI callback (ignored)");
    }
}

/// Creates the buffer of a Java thread, registering its name, group and the group's parent.
/// Returns false if it cannot.
pub fn attach_java_thread(p: &'static Profiler, jvmti: Jvmti, thread: jthread) -> bool {
    p.hub
        .attach(|key| {
            let info = describe_thread(p, jvmti, thread).unwrap_or_else(|| ThreadInfo {
                name: format!("thread-{}", key),
                ..ThreadInfo::default()
            });
            p.registry.put_thread(key, info);
        })
        .is_some()
}

/// A thread's name, group and parent group, the groups' references in a frame of their own.
fn describe_thread(p: &'static Profiler, jvmti: Jvmti, thread: jthread) -> Option<ThreadInfo> {
    p.vm.with_env(|jni| {
        let _frame = jni.local_frame(4);
        let (name, group) = jvmti.thread_info(thread).ok()?;
        let object = if thread.is_null() {
            jvmti.current_thread()
        } else {
            Some(thread)
        };
        let mut info = ThreadInfo {
            name,
            hash: object.and_then(|t| jvmti.object_hash_code(t)).unwrap_or(0),
            ..ThreadInfo::default()
        };
        if let Some((group, parent)) = group.and_then(|g| jvmti.thread_group_info(g).ok()) {
            info.group = group;
            if let Some((parent, _)) = parent.and_then(|g| jvmti.thread_group_info(g).ok()) {
                info.parent = parent;
            }
        }
        Some(info)
    })
    .flatten()
}

/// Creates the buffer of a JVM-internal thread (GC) without any JVM call.
fn attach_internal_thread(p: &'static Profiler) -> bool {
    p.hub
        .attach(|key| {
            let info = ThreadInfo {
                name: "JVM internal".into(),
                ..ThreadInfo::default()
            };
            p.registry.put_thread(key, info)
        })
        .is_some()
}

#[allow(clippy::too_many_arguments)]
fn append(
    p: &'static Profiler,
    kind: RecordKind,
    ticks: u64,
    key: u64,
    arg: u32,
    extra: u32,
    attach: impl FnOnce() -> bool,
) {
    if let Some(b) = p.hub.current_or(attach) {
        b.append(&p.hub, kind, ticks, key, arg, Some(extra), true);
    }
}

/// Like [`append`] but never waits and never calls the JVM (GC and ObjectFree callbacks).
fn append_from_gc(p: &'static Profiler, kind: RecordKind, arg: u32) {
    let ticks = clock::ticks();
    if let Some(b) = p.hub.current_or(|| attach_internal_thread(p)) {
        b.append(&p.hub, kind, ticks, 0, arg, Some(0), false);
    }
}

/// A new object ID (linear from 1); None once the 32-bit space is used up.
pub fn new_object_id(p: &Profiler) -> Option<u32> {
    let id = p
        .next_object
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (id != 0 && id < PENDING_OBJECT).then_some(id)
}

/// The receiver of the method being entered (`objects=on`, capture=events).
pub fn receiver(
    p: &'static Profiler,
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    thread: jthread,
    ticks: u64,
) -> u32 {
    match jvmti.local_instance(thread, 0) {
        Some(object) => object_id(p, jvmti, jni, object, ticks),
        None => NO_OBJECT,
    }
}

/// Whether a tag is an object ID (IDs are 1..2^32-2; classes and loaders use high bits).
fn is_object_id(tag: i64) -> bool {
    tag > 0 && tag < i64::from(NO_OBJECT)
}

/// The ID of an object, tagging it on first sight (then recorded as ObjectSeen so the
/// writer defines it). `NO_OBJECT` for Class objects and loaders (their tags are keys).
/// `ticks` is the entry's own time, so the ObjectSeen record does not follow it in time.
pub fn object_id(
    p: &'static Profiler,
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    object: jobject,
    ticks: u64,
) -> u32 {
    object_identity(p, jvmti, jni, object, ticks).0
}

/// [`object_id`] with the object's class key (looked up only when asked for by the caller's
/// use of it: a new object's class is needed anyway; a known one's is looked up here).
pub fn object_identity(
    p: &'static Profiler,
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    object: jobject,
    ticks: u64,
) -> (u32, Option<ClassKey>) {
    if object.is_null() {
        return (NO_OBJECT, None);
    }
    match jvmti.tag(object) {
        Ok(0) => {}
        Ok(tag) if is_object_id(tag) => {
            let class = Jni::from_callback(jni).and_then(|jni| {
                let classes = Classes {
                    jvmti,
                    jni,
                    registry: &p.registry,
                };
                p.hub
                    .quietly(|| jni.object_class(object).and_then(|c| classes.key(c)))
            });
            return (tag as u32, class);
        }
        _ => return (NO_OBJECT, None),
    }
    let Some(jni) = Jni::from_callback(jni) else {
        return (NO_OBJECT, None);
    };
    // A thread that records nothing (one of jlive's own) would tag an object no trace defines.
    if Hub::current().is_none() && !attach_java_thread(p, jvmti, std::ptr::null_mut()) {
        return (NO_OBJECT, None);
    }
    let Some(id) = new_object_id(p) else {
        return (NO_OBJECT, None);
    };
    if jvmti.set_tag(object, i64::from(id)).is_err() {
        return (NO_OBJECT, None);
    }
    let classes = Classes {
        jvmti,
        jni,
        registry: &p.registry,
    };
    let class = p
        .hub
        .quietly(|| jni.object_class(object).and_then(|c| classes.key(c)));
    if let Some(class) = class {
        let length = if classes.is_array(class) {
            jni.array_length(object) as u32
        } else {
            NOT_ARRAY
        };
        seen(p, ticks, class, id, length);
    }
    (id, class)
}

/// ObjectSeen: the writer defines object `id` of `class` (`length`: an array's, or NOT_ARRAY).
fn seen(p: &'static Profiler, ticks: u64, class: ClassKey, id: u32, length: u32) {
    append(
        p,
        RecordKind::ObjectSeen,
        ticks,
        u64::from(class),
        id,
        length,
        || attach_java_thread(p, p.jvmti, std::ptr::null_mut()),
    );
}

/// Defines objects that got their ID outside an event (a heap walk) for the trace file:
/// (ID, class key, array length or -1), recorded on the calling thread.
pub fn record_seen(p: &'static Profiler, objects: &[(u32, ClassKey, i32)]) {
    if !p.hub.is_tracing() {
        return;
    }
    let ticks = clock::ticks();
    for &(id, class, length) in objects {
        seen(
            p,
            ticks,
            class,
            id,
            u32::try_from(length).unwrap_or(NOT_ARRAY),
        );
    }
}

pub extern "C" fn vm_init(env: *mut jvmtiEnv, jni: *mut JNIEnv, _thread: jthread) {
    guard(|| {
        let (Some(p), Some(jni)) = (profiler::get(), Jni::from_callback(jni)) else {
            return;
        };
        p.vm_init(Jvmti::from_raw(env), jni);
    });
}

/// VMStart (capture=bci): the trampolines must exist before instrumented code runs.
pub extern "C" fn vm_start(_env: *mut jvmtiEnv, jni: *mut JNIEnv) {
    guard(|| {
        if let Some(jni) = Jni::from_callback(jni) {
            if let Err(e) = crate::capture::bci::define_trampoline(jni).map(|_| ()) {
                crate::log::warn(&format!("{}; capture=bci traces nothing", e));
            }
        }
    });
}

pub extern "C" fn vm_death(_env: *mut jvmtiEnv, _jni: *mut JNIEnv) {
    guard(|| {
        if let Some(p) = profiler::get() {
            p.close("VM death");
        }
    });
}

pub extern "C" fn thread_start(env: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    guard(|| {
        let Some(p) = profiler::get() else { return };
        let jvmti = Jvmti::from_raw(env);
        if let Some(jni) = Jni::from_callback(jni) {
            crate::capture::owner::thread_started(jvmti, jni, thread);
        }
        // Described before it had a name (AttachCurrentThread runs Thread's constructor on
        // the thread, instrumented under capture=bci): described again, now it has one, before
        // this record (the writer names a thread when it first writes its records).
        if let Some(b) = crate::buffer::Hub::current() {
            if p.registry.thread_unnamed(b.key) {
                if let Some(info) = describe_thread(p, jvmti, thread) {
                    p.registry.put_thread(b.key, info);
                }
            }
        }
        append(p, RecordKind::ThreadStart, clock::ticks(), 0, 0, 0, || {
            attach_java_thread(p, jvmti, thread)
        });
    });
}

/// A thread's end is recorded whether or not a burst records, so that the writer lets go of
/// what it kept of the thread; a thread that never recorded has nothing kept.
pub extern "C" fn thread_end(env: *mut jvmtiEnv, jni: *mut JNIEnv, thread: jthread) {
    guard(|| {
        let Some(p) = profiler::get() else { return };
        let jvmti = Jvmti::from_raw(env);
        if let Some(jni) = Jni::from_callback(jni) {
            crate::capture::owner::thread_ended(jni, thread);
        }
        let ticks = clock::ticks();
        let attach = || p.hub.is_tracing() && attach_java_thread(p, jvmti, thread);
        if let Some(b) = p.hub.current_or(attach) {
            b.append_always(&p.hub, RecordKind::ThreadEnd, ticks, 0);
        }
        p.hub.detach_current();
    });
}

/// The buffer of the carrier thread a virtual thread event arrives on (a carrier started
/// after VM init has its own from its ThreadStart).
fn carrier_buffer(p: &'static Profiler) -> Option<&'static ThreadBuffer> {
    p.hub.current_or(|| {
        p.hub
            .attach(|key| {
                let info = ThreadInfo {
                    name: format!("carrier-{}", key),
                    ..ThreadInfo::default()
                };
                p.registry.put_thread(key, info)
            })
            .is_some()
    })
}

/// A virtual thread's key, kept in its JVMTI thread-local storage (objects' tags are the
/// allocation IDs). None: no burst has seen it yet.
fn virtual_thread_key(jvmti: Jvmti, vthread: jthread) -> Option<u64> {
    jvmti
        .thread_word(vthread)
        .ok()
        .filter(|&w| w != 0)
        .map(|w| w as u64)
}

/// The key of the virtual thread mounted on this carrier; one seen for the first time while a
/// burst records gets a key and a description (the others cost nothing: an application may
/// start millions).
fn mounted_virtual_thread(p: &'static Profiler, jvmti: Jvmti, vthread: jthread) -> Option<u64> {
    if let Some(key) = virtual_thread_key(jvmti, vthread) {
        return Some(key);
    }
    if !p.hub.is_tracing() {
        return None;
    }
    let key = p.hub.new_thread_key();
    let info = describe_thread(p, jvmti, vthread).unwrap_or_else(|| ThreadInfo {
        name: format!("virtual-{}", key),
        ..ThreadInfo::default()
    });
    p.registry.put_thread(key, info);
    if jvmti.set_thread_word(vthread, key as usize).is_err() {
        p.registry.forget_thread(key);
        return None;
    }
    Some(u64::from(key))
}

/// VirtualThreadStart (JDK 21+), on the carrier, the virtual thread mounted (HotSpot sends its
/// mount event right after).
pub extern "C" fn virtual_thread_start(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    guard(|| {
        crate::capture::owner::virtual_thread_started();
        let Some(p) = profiler::get() else { return };
        let key = mounted_virtual_thread(p, Jvmti::from_raw(env), vthread);
        if let Some(b) = carrier_buffer(p) {
            let ticks = clock::ticks();
            let mount = key.unwrap_or(u64::from(UNKNOWN_THREAD));
            b.append_always(&p.hub, RecordKind::Mount, ticks, mount);
            if key.is_some() {
                b.append(&p.hub, RecordKind::ThreadStart, ticks, 0, 0, Some(0), true);
            }
        }
    });
}

/// VirtualThreadEnd (after the unmount event): its end is its own record, not its carrier's,
/// and lets the writer forget it.
pub extern "C" fn virtual_thread_end(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    guard(|| {
        let Some(p) = profiler::get() else { return };
        let Some(key) = virtual_thread_key(Jvmti::from_raw(env), vthread) else {
            return;
        };
        if let Some(b) = carrier_buffer(p) {
            let ticks = clock::ticks();
            b.append_always(&p.hub, RecordKind::Mount, ticks, key);
            b.append_always(&p.hub, RecordKind::ThreadEnd, ticks, 0);
            b.unmount(&p.hub, ticks, false);
        }
    });
}

/// The mount extension event: the carrier's records that follow are the virtual thread's (or
/// nobody's, for one that no burst has seen: it may have run since before the burst began,
/// and what it records until it next leaves its carrier is dropped, not given to the carrier).
pub extern "C" fn virtual_thread_mount(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    guard(|| {
        let Some(p) = profiler::get() else { return };
        let key = mounted_virtual_thread(p, Jvmti::from_raw(env), vthread);
        if let Some(b) = carrier_buffer(p) {
            let mount = key.unwrap_or(u64::from(UNKNOWN_THREAD));
            b.append_always(&p.hub, RecordKind::Mount, clock::ticks(), mount);
        }
    });
}

/// The unmount extension event: the carrier's records that follow are its own again. A
/// followed virtual thread may go on on another carrier at once: what it recorded here is
/// sent first.
pub extern "C" fn virtual_thread_unmount(env: *mut jvmtiEnv, _jni: *mut JNIEnv, vthread: jthread) {
    guard(|| {
        let Some(p) = profiler::get() else { return };
        let followed = virtual_thread_key(Jvmti::from_raw(env), vthread).is_some();
        if let Some(b) = carrier_buffer(p) {
            b.unmount(&p.hub, clock::ticks(), followed && p.hub.is_tracing());
        }
    });
}

pub extern "C" fn class_prepare(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    _thread: jthread,
    class: jclass,
) {
    guard(|| {
        let (Some(p), Some(jni)) = (profiler::get(), Jni::from_callback(jni)) else {
            return;
        };
        let jvmti = Jvmti::from_raw(env);
        let classes = Classes {
            jvmti,
            jni,
            registry: &p.registry,
        };
        let key = if p.registers_lazily() {
            let _frame = jni.local_frame(8);
            classes.prepared_lazily(class)
        } else {
            classes.prepared(class)
        };
        crate::javaapi::bind_if_api(jvmti, jni, class);
        if let (Some(key), true) = (key, p.uses_bci()) {
            crate::capture::bci::link_prepared(p, jvmti, jni, class, key);
        }
    });
}

pub extern "C" fn gc_start(_env: *mut jvmtiEnv) {
    guard(|| {
        if let Some(p) = profiler::get() {
            append_from_gc(p, RecordKind::GcStart, 0);
            crate::plugin::gc_event(true);
        }
    });
}

pub extern "C" fn gc_finish(_env: *mut jvmtiEnv) {
    guard(|| {
        if let Some(p) = profiler::get() {
            append_from_gc(p, RecordKind::GcFinish, 0);
            crate::plugin::gc_event(false);
        }
    });
}

pub extern "C" fn object_free(_env: *mut jvmtiEnv, tag: jlong) {
    guard(|| {
        let Some(p) = profiler::get() else { return };
        if is_object_id(tag) {
            append_from_gc(p, RecordKind::ObjectFree, tag as u32);
            crate::plugin::object_freed(tag as u32);
        }
    });
}

/// SampledObjectAlloc (interval 0: every allocation) and VMObjectAlloc share this; an
/// object both report is recorded once (the second sees its tag).
pub extern "C" fn object_alloc(
    env: *mut jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    object: jobject,
    _class: jclass,
    _size: jlong,
) {
    guard(|| {
        if let Some(p) = profiler::get() {
            record_allocation(p, Jvmti::from_raw(env), jni, object, thread, false);
        }
    });
}

/// An allocation (SampledObjectAlloc, VMObjectAlloc, or the bci `allocated` trampoline):
/// tags the object with a new ID and records ObjectAlloc. An object already tagged (seen by
/// two of these) is recorded once. `site` (capture=bci's allocation sites, which report each
/// object once, after its constructor): an object its constructor tagged already (objects=on)
/// is still this allocation for a user trace library.
pub fn record_allocation(
    p: &'static Profiler,
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    object: jobject,
    thread: jthread,
    site: bool,
) {
    let Some(jni) = Jni::from_callback(jni) else {
        return;
    };
    if !p.capturing() || object.is_null() {
        return;
    }
    match jvmti.tag(object) {
        Ok(0) => {}
        Ok(tag) if site && is_object_id(tag) && crate::plugin::delivering() => {
            let classes = Classes {
                jvmti,
                jni,
                registry: &p.registry,
            };
            let key = p
                .hub
                .quietly(|| jni.object_class(object).and_then(|c| classes.key(c)));
            if let Some(class) = key.and_then(|k| p.registry.class(k)) {
                let size = jvmti.object_size(object).unwrap_or(0);
                crate::plugin::allocated(tag as u32, &class.name, size);
            }
            return;
        }
        _ => return,
    }
    if Hub::current().is_none() && !attach_java_thread(p, jvmti, thread) {
        return;
    }
    let classes = Classes {
        jvmti,
        jni,
        registry: &p.registry,
    };
    let Some(key) = p
        .hub
        .quietly(|| jni.object_class(object).and_then(|c| classes.key(c)))
    else {
        return;
    };
    let Some(id) = new_object_id(p) else { return };
    if jvmti.set_tag(object, i64::from(id)).is_err() {
        return;
    }
    let length = if classes.is_array(key) {
        jni.array_length(object) as u32
    } else {
        NOT_ARRAY
    };
    if crate::plugin::delivering() {
        if let Some(class) = p.registry.class(key) {
            let size = jvmti.object_size(object).unwrap_or(0);
            crate::plugin::allocated(id, &class.name, size);
        }
    }
    // Stamped after the registration above, which may have run (muted) Java code.
    let ticks = clock::ticks();
    if let Some(b) = Hub::current() {
        b.append(
            &p.hub,
            RecordKind::ObjectAlloc,
            ticks,
            u64::from(key),
            id,
            Some(length),
            true,
        );
    }
}
