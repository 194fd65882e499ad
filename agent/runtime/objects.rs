//! Object IDs: linear from 1, held in JVMTI object tags (so that a collection moving an
//! object keeps its ID). An object is tagged the first time jlive names it (an allocation, a
//! receiver, a monitor, a heap walk) and recorded then as seen, so that the writer defines it
//! before its first use. Class objects and class loaders carry other tags (high bits).

use super::Runtime;
use crate::symbols::Classes;
use crate::transport::Hub;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::Jvmti;
use jlive_jvm::refs::{Local, Ref};
use jlive_writer::record::{ClassKey, RecordKind, NOT_ARRAY, NO_OBJECT, PENDING_OBJECT};
use std::sync::atomic::Ordering;

/// Whether a tag is an object ID (IDs are 1..2^32-2; classes and loaders use high bits).
pub fn is_object_id(tag: i64) -> bool {
    tag > 0 && tag < i64::from(NO_OBJECT)
}

impl Runtime {
    /// A new object ID (linear from 1); None once the 32-bit space is used up.
    pub fn new_object_id(&self) -> Option<u32> {
        let id = self.next_object.fetch_add(1, Ordering::Relaxed);
        (id != 0 && id < PENDING_OBJECT).then_some(id)
    }

    /// The class registry's view for one JVM thread.
    pub fn classes<'a, 'cb>(&'a self, jvmti: Jvmti, jni: Jni<'cb>) -> Classes<'a, 'cb> {
        Classes {
            jvmti,
            jni,
            registry: &self.symbols,
        }
    }

    /// The key of an object's class, registering it if need be; the registration's Java code
    /// (Class.getComponentType) runs muted.
    pub fn class_of(&self, jvmti: Jvmti, jni: Jni<'_>, object: &impl Ref) -> Option<ClassKey> {
        let classes = self.classes(jvmti, jni);
        self.hub.quietly(|| {
            let class = jni.object_class(object)?;
            let key = classes.key(&class);
            jni.delete_local(class);
            key
        })
    }

    /// The receiver of the method being entered (`objects=on`, capture=events).
    pub fn receiver(
        &'static self,
        jvmti: Jvmti,
        jni: Jni<'_>,
        thread: &Local<'_>,
        ticks: u64,
    ) -> u32 {
        match jvmti.local_instance(jni, thread, 0) {
            Some(object) => {
                let id = self.object_id(jvmti, jni, &object, ticks);
                jni.delete_local(object);
                id
            }
            None => NO_OBJECT,
        }
    }

    /// The ID of an object, tagging it on first sight (then recorded as ObjectSeen so the
    /// writer defines it). `NO_OBJECT` for Class objects and loaders (their tags are keys).
    /// `ticks` is the entry's own time, so the ObjectSeen record does not follow it in time.
    pub fn object_id(
        &'static self,
        jvmti: Jvmti,
        jni: Jni<'_>,
        object: &impl Ref,
        ticks: u64,
    ) -> u32 {
        self.object_identity(jvmti, jni, object, ticks).0
    }

    /// [`Runtime::object_id`] with the object's class key (looked up only when asked for by
    /// the caller's use of it: a new object's class is needed anyway; a known one's is looked
    /// up here).
    pub fn object_identity(
        &'static self,
        jvmti: Jvmti,
        jni: Jni<'_>,
        object: &impl Ref,
        ticks: u64,
    ) -> (u32, Option<ClassKey>) {
        match jvmti.tag(object) {
            Ok(0) => {}
            Ok(tag) if is_object_id(tag) => {
                return (tag as u32, self.class_of(jvmti, jni, object));
            }
            _ => return (NO_OBJECT, None),
        }
        // A thread that records nothing (one of jlive's own) would tag an object no trace
        // defines.
        if Hub::current().is_none() && !self.attach_current_thread() {
            return (NO_OBJECT, None);
        }
        let Some(id) = self.new_object_id() else {
            return (NO_OBJECT, None);
        };
        if jvmti.set_tag(object, i64::from(id)).is_err() {
            return (NO_OBJECT, None);
        }
        let class = self.class_of(jvmti, jni, object);
        if let Some(class) = class {
            let length = if self.classes(jvmti, jni).is_array(class) {
                jni.array_length(jvmti, object)
                    .map_or(NOT_ARRAY, |n| n as u32)
            } else {
                NOT_ARRAY
            };
            self.seen(ticks, class, id, length);
        }
        (id, class)
    }

    /// ObjectSeen: the writer defines object `id` of `class` (`length`: an array's, or
    /// NOT_ARRAY).
    fn seen(&'static self, ticks: u64, class: ClassKey, id: u32, length: u32) {
        self.append(
            RecordKind::ObjectSeen,
            ticks,
            u64::from(class),
            id,
            length,
            || self.attach_current_thread(),
        );
    }

    /// Defines objects that got their ID outside an event (a heap walk) for the trace file:
    /// (ID, class key, array length or -1), recorded on the calling thread.
    pub fn record_seen(&'static self, objects: &[(u32, ClassKey, i32)]) {
        if !self.hub.is_tracing() {
            return;
        }
        let ticks = crate::clock::ticks();
        for &(id, class, length) in objects {
            self.seen(ticks, class, id, u32::try_from(length).unwrap_or(NOT_ARRAY));
        }
    }
}
