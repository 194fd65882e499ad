//! Allocations: SampledObjectAlloc (interval 0: every allocation) and VMObjectAlloc under
//! capture=events, the rewritten allocation sites under capture=bci. Each object allocated
//! while a burst records is tagged with a new ID and recorded as ObjectAlloc, which defines
//! it; one that two of these report is recorded once (the second sees its tag).

use super::Capture;
use crate::runtime::{is_object_id, Runtime};
use crate::transport::Hub;
use jlive_jvm::jni::Jni;
use jlive_jvm::refs::Local;
use jlive_writer::record::{RecordKind, Symbols, NOT_ARRAY};

impl Capture {
    /// An allocation of `object` on `thread` (None: the current one). `site` (capture=bci's
    /// allocation sites, which report each object once, after its constructor): an object its
    /// constructor tagged already (objects=on) is still this allocation for a user trace
    /// library.
    pub fn allocated(
        &self,
        rt: &'static Runtime,
        jni: Jni<'_>,
        object: &Local<'_>,
        thread: Option<&Local<'_>>,
        site: bool,
    ) {
        if !self.capturing(rt) {
            return;
        }
        let jvmti = rt.jvmti();
        let subscriber = self.subscriber().filter(|s| s.delivering());
        match jvmti.tag(object) {
            Ok(0) => {}
            Ok(tag) if site && is_object_id(tag) && subscriber.is_some() => {
                let key = rt.class_of(jvmti, jni, object);
                if let (Some(class), Some(s)) =
                    (key.and_then(|k| rt.symbols().class(k)), subscriber)
                {
                    let size = jvmti.object_size(object).unwrap_or(0);
                    s.allocated(tag as u32, &class.name, size);
                }
                return;
            }
            _ => return,
        }
        let attached = || match thread {
            Some(thread) => rt.attach_java_thread(jvmti, thread),
            None => rt.attach_current_thread(),
        };
        if Hub::current().is_none() && !attached() {
            return;
        }
        let Some(key) = rt.class_of(jvmti, jni, object) else {
            return;
        };
        let Some(id) = rt.new_object_id() else { return };
        if jvmti.set_tag(object, i64::from(id)).is_err() {
            return;
        }
        let length = if rt.classes(jvmti, jni).is_array(key) {
            jni.array_length(jvmti, object)
                .map_or(NOT_ARRAY, |n| n as u32)
        } else {
            NOT_ARRAY
        };
        if let Some(s) = subscriber {
            if let Some(class) = rt.symbols().class(key) {
                let size = jvmti.object_size(object).unwrap_or(0);
                s.allocated(id, &class.name, size);
            }
        }
        // Stamped after the registration above, which may have run (muted) Java code.
        let ticks = crate::clock::ticks();
        if let Some(b) = Hub::current() {
            b.append(
                rt.hub(),
                RecordKind::ObjectAlloc,
                ticks,
                u64::from(key),
                id,
                Some(length),
                true,
            );
        }
    }
}
