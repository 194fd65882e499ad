//! Tags, object sizes and hashes, heap walks, the objects carrying given tags.

use super::{Jvmti, JvmtiError, Result, ERROR_INTERNAL};
use crate::jni::Jni;
use crate::refs::{Local, Ref};
use jni_sys::{jclass, jint, jlong, jobject};
use std::ffi::c_void;
use std::ptr;

impl Jvmti {
    pub fn tag(&self, object: &impl Ref) -> Result<jlong> {
        self.query(106, object, 0)
    }

    pub fn set_tag(&self, object: &impl Ref, tag: jlong) -> Result<()> {
        call!(self, 107, (jobject, jlong), object.as_raw(), tag)
    }

    /// An object's size in bytes, as this JVM lays it out.
    pub fn object_size(&self, object: &impl Ref) -> Option<jlong> {
        self.query(154, object, 0).ok()
    }

    /// An object's identity hash code (System.identityHashCode).
    pub fn object_hash_code(&self, object: &impl Ref) -> Option<u32> {
        self.query(58, object, 0).ok().map(|h: jint| h as u32)
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
    pub fn follow_references(&self, visit: &mut RefVisit) -> Result<()> {
        let callbacks = HeapCallbacks {
            heap_reference_callback: Some(heap_reference),
            ..HeapCallbacks::default()
        };
        let mut walk = Walk::new(visit);
        let (null, data) = (ptr::null_mut(), walk.data());
        call!(
            self,
            115,
            (jint, jclass, jobject, *const HeapCallbacks, *const c_void),
            0,
            null,
            null,
            &callbacks,
            data
        )?;
        walk.result()
    }

    /// IterateThroughHeap over every object in the heap, reachable or not, at a safepoint:
    /// `visit` gets each one's class tag, size, tag and array length (-1: none) and may return
    /// a tag for it. The same rules as [`Jvmti::follow_references`].
    pub fn iterate_through_heap(&self, visit: &mut ObjectVisit) -> Result<()> {
        let callbacks = HeapCallbacks {
            heap_iteration_callback: Some(heap_iteration),
            ..HeapCallbacks::default()
        };
        let mut walk = Walk::new(visit);
        let data = walk.data();
        call!(
            self,
            116,
            (jint, jclass, *const HeapCallbacks, *const c_void),
            0,
            ptr::null_mut(),
            &callbacks,
            data
        )?;
        walk.result()
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
struct Walk<'a, F: ?Sized> {
    visit: &'a mut F,
    aborted: bool,
}

impl<'a, F: ?Sized> Walk<'a, F> {
    fn new(visit: &'a mut F) -> Self {
        Walk {
            visit,
            aborted: false,
        }
    }

    /// The user data the JVM hands the callbacks.
    fn data(&mut self) -> *const c_void {
        self as *mut Self as *const c_void
    }

    fn result(&self) -> Result<()> {
        match self.aborted {
            true => Err(JvmtiError(ERROR_INTERNAL)),
            false => Ok(()),
        }
    }
}

/// What [`Jvmti::follow_references`] calls for each reference.
pub type RefVisit<'a> = dyn FnMut(&HeapRef) -> Option<jlong> + Send + 'a;
/// What [`Jvmti::iterate_through_heap`] calls for each object: (class tag, size, tag, array
/// length).
pub type ObjectVisit<'a> = dyn FnMut(jlong, jlong, jlong, jint) -> Option<jlong> + Send + 'a;

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
    // SAFETY: `data` is the walk iterate_through_heap passed; `tag` is JVMTI's.
    unsafe {
        visit::<ObjectVisit>(data, tag, |visit, current| {
            visit(class_tag, size, current, length)
        })
    }
}

/// A heap callback's work: `f` asks the walk's `visit` (given the object's current tag) and
/// its answer is written back: a new tag, nothing, or an aborted walk after a panic.
///
/// # Safety
/// `data` is null or the [`Walk`] of `F` that started the walk, alive for it and touched by no
/// one else meanwhile; `tag` is null or the tag pointer JVMTI passed to the callback.
unsafe fn visit<F: ?Sized>(
    data: *mut c_void,
    tag: *mut jlong,
    f: impl FnOnce(&mut F, jlong) -> Option<jlong>,
) -> jint {
    if tag.is_null() || data.is_null() {
        return VISIT_OBJECTS;
    }
    // SAFETY: the caller's.
    let (walk, current) = unsafe { (&mut *(data as *mut Walk<F>), *tag) };
    let visited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f(&mut *walk.visit, current)
    }));
    match visited {
        Ok(Some(new)) => {
            // SAFETY: the caller's: JVMTI's tag pointer for this callback.
            unsafe { *tag = new };
            VISIT_OBJECTS
        }
        Ok(None) => VISIT_OBJECTS,
        Err(_) => {
            walk.aborted = true;
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
    // SAFETY: JVMTI's referrer tag pointer for this callback, if any (equal to `tag` for a
    // self-reference, hence read before `visit` writes).
    let referrer = unsafe { referrer_tag.as_ref().copied() };
    // JVMTI_HEAP_REFERENCE_STACK_LOCAL (24) and JNI_LOCAL (25) come with a
    // jvmtiHeapReferenceInfoStackLocal / JniLocal, whose first field is the thread's tag.
    let thread_tag = if (kind == 24 || kind == 25) && !info.is_null() {
        // SAFETY: for these kinds JVMTI passes that struct, alive for this callback; its
        // first member is a jlong.
        unsafe { *(info as *const jlong) }
    } else {
        0
    };
    // SAFETY: `data` is the walk follow_references passed; `tag` is JVMTI's.
    unsafe {
        visit::<RefVisit>(data, tag, |visit, current| {
            visit(&HeapRef {
                kind,
                thread_tag,
                class_tag,
                size,
                tag: current,
                length,
                referrer,
            })
        })
    }
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
