//! Tags, object sizes and hashes, heap walks, the objects carrying given tags.

use super::{Jvmti, JvmtiError, Result, ERROR_INTERNAL};
use crate::jni::Jni;
use crate::refs::{Local, Ref};
use jni_sys::{jclass, jint, jlong, jobject};
use std::ffi::c_void;
use std::ptr;

impl Jvmti {
    pub fn tag(&self, object: &impl Ref) -> Result<jlong> {
        let mut tag: jlong = 0;
        call!(self, 106, (jobject, *mut jlong), object.as_raw(), &mut tag)?;
        Ok(tag)
    }

    pub fn set_tag(&self, object: &impl Ref, tag: jlong) -> Result<()> {
        call!(self, 107, (jobject, jlong), object.as_raw(), tag)
    }

    /// An object's size in bytes, as this JVM lays it out.
    pub fn object_size(&self, object: &impl Ref) -> Option<jlong> {
        let mut size: jlong = 0;
        call!(self, 154, (jobject, *mut jlong), object.as_raw(), &mut size).ok()?;
        Some(size)
    }

    /// An object's identity hash code (System.identityHashCode).
    pub fn object_hash_code(&self, object: &impl Ref) -> Option<u32> {
        let mut hash: jint = 0;
        call!(self, 58, (jobject, *mut jint), object.as_raw(), &mut hash).ok()?;
        Some(hash as u32)
    }

    pub fn force_garbage_collection(&self) -> Result<()> {
        call!(self, 108, (),)
    }

    /// The objects carrying any of `tags`, with their tags (local references of `jni`'s
    /// frame).
    pub fn objects_with_tags<'l>(
        &self,
        jni: Jni<'l>,
        tags: &[jlong],
    ) -> Result<Vec<(Local<'l>, jlong)>> {
        let mut count: jint = 0;
        let mut objects: *mut jobject = ptr::null_mut();
        let mut found: *mut jlong = ptr::null_mut();
        call!(
            self,
            114,
            (
                jint,
                *const jlong,
                *mut jint,
                *mut *mut jobject,
                *mut *mut jlong
            ),
            tags.len() as jint,
            tags.as_ptr(),
            &mut count,
            &mut objects,
            &mut found
        )?;
        let objects = self.take_array(objects, count);
        let found = self.take_array(found, count);
        Ok(objects
            .into_iter()
            .zip(found)
            .filter_map(|(o, t)| Some((jni.adopt(o)?, t)))
            .collect())
    }

    /// FollowReferences from the heap roots over every reachable object, at a safepoint:
    /// `visit` gets each reference and may return a tag for an untagged referee. It runs on
    /// the VM's own thread (hence `Send`: no `Jni` or reference of the caller's can go in),
    /// where no JNI or JVMTI function may be called; a panic in it aborts the walk.
    pub fn follow_references(
        &self,
        visit: &mut (dyn FnMut(&HeapRef) -> Option<jlong> + Send),
    ) -> Result<()> {
        let callbacks = HeapCallbacks {
            heap_reference_callback: Some(heap_reference),
            ..HeapCallbacks::default()
        };
        let mut walk = RefWalk {
            visit,
            aborted: false,
        };
        call!(
            self,
            115,
            (jint, jclass, jobject, *const HeapCallbacks, *const c_void),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            &callbacks,
            &mut walk as *mut RefWalk as *const c_void
        )?;
        if walk.aborted {
            return Err(JvmtiError(ERROR_INTERNAL));
        }
        Ok(())
    }

    /// IterateThroughHeap over every object in the heap, reachable or not, at a safepoint:
    /// `visit` gets each one's class tag, size, tag and array length (-1: none) and may return
    /// a tag for it. The same rules as [`Jvmti::follow_references`].
    pub fn iterate_through_heap(
        &self,
        visit: &mut (dyn FnMut(jlong, jlong, jlong, jint) -> Option<jlong> + Send),
    ) -> Result<()> {
        let callbacks = HeapCallbacks {
            heap_iteration_callback: Some(heap_iteration),
            ..HeapCallbacks::default()
        };
        let mut walk = ObjectWalk {
            visit,
            aborted: false,
        };
        call!(
            self,
            116,
            (jint, jclass, *const HeapCallbacks, *const c_void),
            0,
            ptr::null_mut(),
            &callbacks,
            &mut walk as *mut ObjectWalk as *const c_void
        )?;
        if walk.aborted {
            return Err(JvmtiError(ERROR_INTERNAL));
        }
        Ok(())
    }
}

/// jvmtiHeapReferenceCallback.
type HeapReferenceCallback = unsafe extern "C" fn(
    jint,
    *const c_void,
    jlong,
    jlong,
    jlong,
    *mut jlong,
    *mut jlong,
    jint,
    *mut c_void,
) -> jint;

/// What the heap callbacks get as user data: the caller's closure, and whether it panicked
/// (the walk is then aborted and answers an error).
struct RefWalk<'a> {
    visit: &'a mut (dyn FnMut(&HeapRef) -> Option<jlong> + Send),
    aborted: bool,
}

struct ObjectWalk<'a> {
    visit: &'a mut (dyn FnMut(jlong, jlong, jlong, jint) -> Option<jlong> + Send),
    aborted: bool,
}

/// One reference FollowReferences reports: its kind (jvmtiHeapReferenceKind: 1..10 from an
/// object or class, 21..27 from a root), the referee's class tag, size, tag and array length
/// (-1: not an array), the referrer's tag (None for a root), and for a stack local or JNI
/// local root the tag of its thread's object (0 when untagged or another kind).
pub struct HeapRef {
    pub kind: jint,
    pub thread_tag: jlong,
    pub class_tag: jlong,
    pub size: jlong,
    pub tag: jlong,
    pub length: jint,
    pub referrer: Option<jlong>,
}

unsafe extern "C" fn heap_iteration(
    class_tag: jlong,
    size: jlong,
    tag: *mut jlong,
    length: jint,
    data: *mut c_void,
) -> jint {
    if tag.is_null() || data.is_null() {
        return VISIT_OBJECTS;
    }
    // SAFETY: `data` is the ObjectWalk that iterate_through_heap passed, alive for the
    // iteration and touched by no one else meanwhile; `tag` is JVMTI's for this callback.
    let (walk, current) = unsafe { (&mut *(data as *mut ObjectWalk), *tag) };
    let visited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (walk.visit)(class_tag, size, current, length)
    }));
    // SAFETY: as above.
    unsafe { answer(visited, tag, &mut walk.aborted) }
}

/// A heap callback's answer: the tag `visit` gave, written, or an aborted walk after a panic.
///
/// # Safety
/// `tag` is the tag pointer JVMTI passed to the callback.
unsafe fn answer(
    visited: std::thread::Result<Option<jlong>>,
    tag: *mut jlong,
    aborted: &mut bool,
) -> jint {
    match visited {
        Ok(Some(new)) => {
            // SAFETY: the caller's.
            unsafe { *tag = new };
            VISIT_OBJECTS
        }
        Ok(None) => VISIT_OBJECTS,
        Err(_) => {
            *aborted = true;
            VISIT_ABORT
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn heap_reference(
    kind: jint,
    info: *const c_void,
    class_tag: jlong,
    _referrer_class_tag: jlong,
    size: jlong,
    tag: *mut jlong,
    referrer_tag: *mut jlong,
    length: jint,
    data: *mut c_void,
) -> jint {
    if tag.is_null() || data.is_null() {
        return VISIT_OBJECTS;
    }
    // SAFETY: `data` is the RefWalk that follow_references passed, alive for the walk and
    // touched by no one else meanwhile; the tag pointers are JVMTI's for this callback (equal
    // for a self-reference, hence read before the one write).
    let (walk, current, referrer) = unsafe {
        let walk = &mut *(data as *mut RefWalk);
        let referrer = (!referrer_tag.is_null()).then(|| *referrer_tag);
        (walk, *tag, referrer)
    };
    // JVMTI_HEAP_REFERENCE_STACK_LOCAL (24) and JNI_LOCAL (25) come with a
    // jvmtiHeapReferenceInfoStackLocal / JniLocal, whose first field is the thread's tag.
    let thread_tag = if (kind == 24 || kind == 25) && !info.is_null() {
        // SAFETY: for these kinds JVMTI passes that struct, alive for this callback; its
        // first member is a jlong.
        unsafe { *(info as *const jlong) }
    } else {
        0
    };
    let r = HeapRef {
        kind,
        thread_tag,
        class_tag,
        size,
        tag: current,
        length,
        referrer,
    };
    let visited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (walk.visit)(&r)));
    // SAFETY: as above.
    unsafe { answer(visited, tag, &mut walk.aborted) }
}

/// jvmtiHeapIterationCallback.
type HeapIterationCallback =
    unsafe extern "C" fn(jlong, jlong, *mut jlong, jint, *mut c_void) -> jint;

/// jvmtiHeapCallbacks: the iteration and reference callbacks, then 14 slots jlive leaves empty.
#[repr(C)]
#[derive(Default)]
struct HeapCallbacks {
    heap_iteration_callback: Option<HeapIterationCallback>,
    heap_reference_callback: Option<HeapReferenceCallback>,
    others: [Option<unsafe extern "C" fn()>; 14],
}

/// JVMTI_VISIT_OBJECTS and JVMTI_VISIT_ABORT.
pub const VISIT_OBJECTS: jint = 0x100;
pub const VISIT_ABORT: jint = 0x8000;
