//! Where JVMTI events other than method entries and exits (`calls.rs`) become records: VM
//! start, threads (virtual ones too), class preparation, the class-file hook, garbage
//! collection, allocations, frees and monitors. The entry points' callbacks are one-line
//! thunks into these.
//!
//! GarbageCollectionStart/Finish and ObjectFree run where the JVM forbids almost everything:
//! they use no JVMTI or JNI function, take no lock a Java thread could hold across a
//! safepoint, and append without blocking (a full channel grows the buffer instead). The user
//! trace library's queue (`plugin/gc.rs`) is a lock held only around a push or a drain,
//! never across a call into the JVM, so no holder can be stopped by the safepoint holding it.

use super::Session;
use crate::capture::{Bci, LoadedClass};
use crate::clock;
use crate::runtime::{is_object_id, virtual_thread_key};
use crate::transport::Hub;
use jlive_jvm::jni::Jni;
use jlive_jvm::refs::{Class, Local};
use jlive_writer::model::SyncKind;
use jlive_writer::record::{RecordKind, UNKNOWN_THREAD};

impl Session {
    /// VMStart (capture=bci, monitors=on): the trampolines must exist before instrumented
    /// code runs.
    pub fn vm_start(&self, jni: Jni<'_>) {
        if let Err(e) = Bci::define_trampoline(jni) {
            crate::log::warn(&format!("{}; capture=bci traces nothing", e));
        }
    }

    pub fn thread_start(&'static self, jni: Jni<'_>, thread: &Local<'_>) {
        let rt = &self.rt;
        let jvmti = rt.jvmti();
        if let Some(owners) = self.capture.owners() {
            owners.thread_started(jvmti, jni, thread);
        }
        // Described before it had a name (AttachCurrentThread runs Thread's constructor on
        // the thread, instrumented under capture=bci): described again, now it has one,
        // before this record (the writer names a thread when it first writes its records).
        if let Some(b) = Hub::current() {
            if rt.symbols().thread_unnamed(b.key) {
                if let Some(info) = rt.describe_thread(jvmti, thread) {
                    rt.symbols().put_thread(b.key, info);
                }
            }
        }
        rt.append(RecordKind::ThreadStart, clock::ticks(), 0, 0, 0, || {
            rt.attach_java_thread(jvmti, thread)
        });
    }

    /// A thread's end is recorded whether or not a burst records, so that the writer lets go
    /// of what it kept of the thread; a thread that never recorded has nothing kept.
    pub fn thread_end(&'static self, jni: Jni<'_>, thread: &Local<'_>) {
        let rt = &self.rt;
        let jvmti = rt.jvmti();
        if let Some(owners) = self.capture.owners() {
            owners.thread_ended(jni, thread);
        }
        let ticks = clock::ticks();
        let hub = rt.hub();
        let attach = || hub.is_tracing() && rt.attach_java_thread(jvmti, thread);
        if let Some(b) = hub.current_or(attach) {
            b.append_always(hub, RecordKind::ThreadEnd, ticks, 0);
        }
        hub.detach_current();
    }

    /// VirtualThreadStart (JDK 21+), on the carrier, the virtual thread mounted (HotSpot
    /// sends its mount event right after).
    pub fn virtual_thread_start(&'static self, vthread: &Local<'_>) {
        if let Some(owners) = self.capture.owners() {
            owners.virtual_thread_started();
        }
        let rt = &self.rt;
        let key = rt.mounted_virtual_thread(rt.jvmti(), vthread);
        if let Some(b) = rt.carrier_buffer() {
            let ticks = clock::ticks();
            let mount = key.unwrap_or(u64::from(UNKNOWN_THREAD));
            b.append_always(rt.hub(), RecordKind::Mount, ticks, mount);
            if key.is_some() {
                b.append(
                    rt.hub(),
                    RecordKind::ThreadStart,
                    ticks,
                    0,
                    0,
                    Some(0),
                    true,
                );
            }
        }
    }

    /// VirtualThreadEnd (after the unmount event): its end is its own record, not its
    /// carrier's, and lets the writer forget it.
    pub fn virtual_thread_end(&'static self, vthread: &Local<'_>) {
        let rt = &self.rt;
        let Some(key) = virtual_thread_key(rt.jvmti(), vthread) else {
            return;
        };
        if let Some(b) = rt.carrier_buffer() {
            let ticks = clock::ticks();
            b.append_always(rt.hub(), RecordKind::Mount, ticks, key);
            b.append_always(rt.hub(), RecordKind::ThreadEnd, ticks, 0);
            b.unmount(rt.hub(), ticks, false);
        }
    }

    /// The mount extension event: the carrier's records that follow are the virtual
    /// thread's (or nobody's, for one that no burst has seen: it may have run since before
    /// the burst began, and what it records until it next leaves its carrier is dropped, not
    /// given to the carrier).
    pub fn virtual_thread_mount(&'static self, vthread: &Local<'_>) {
        let rt = &self.rt;
        let key = rt.mounted_virtual_thread(rt.jvmti(), vthread);
        if let Some(b) = rt.carrier_buffer() {
            let mount = key.unwrap_or(u64::from(UNKNOWN_THREAD));
            b.append_always(rt.hub(), RecordKind::Mount, clock::ticks(), mount);
        }
    }

    /// The unmount extension event: the carrier's records that follow are its own again. A
    /// followed virtual thread may go on on another carrier at once: what it recorded here is
    /// sent first.
    pub fn virtual_thread_unmount(&'static self, vthread: &Local<'_>) {
        let rt = &self.rt;
        let followed = virtual_thread_key(rt.jvmti(), vthread).is_some();
        if let Some(b) = rt.carrier_buffer() {
            b.unmount(rt.hub(), clock::ticks(), followed && rt.hub().is_tracing());
        }
    }

    pub fn class_prepare(&self, jni: Jni<'_>, class: &Class<'_>) {
        let jvmti = self.rt.jvmti();
        let key = if self.registers_lazily() {
            let frame = jni.local_frame(8);
            self.rt.classes(jvmti, frame.jni()).prepared_lazily(class)
        } else {
            self.rt.classes(jvmti, jni).prepared(class)
        };
        self.bind_if_api(jvmti, jni, class);
        if let (Some(key), true) = (key, self.capture.uses_bci()) {
            self.capture
                .bci()
                .link_prepared(&self.rt, jvmti, jni, class, key);
        }
    }

    /// ClassFileLoadHook: the rewritten class, or None to leave it as it is.
    pub fn class_file_load(&self, jni: Jni<'_>, class: LoadedClass) -> Option<Vec<u8>> {
        self.capture.class_file_load(&self.rt, jni, class)
    }

    pub fn gc(&'static self, start: bool) {
        let kind = if start {
            RecordKind::GcStart
        } else {
            RecordKind::GcFinish
        };
        self.rt.append_from_gc(kind, 0);
        if let Some(s) = self.capture.subscriber() {
            s.gc(start);
        }
    }

    pub fn object_free(&'static self, tag: i64) {
        if is_object_id(tag) {
            self.rt.append_from_gc(RecordKind::ObjectFree, tag as u32);
            if let Some(s) = self.capture.subscriber() {
                s.object_freed(tag as u32);
            }
        }
    }

    /// SampledObjectAlloc (interval 0: every allocation) and VMObjectAlloc share this; an
    /// object both report is recorded once (the second sees its tag).
    pub fn object_alloc(&'static self, jni: Jni<'_>, thread: &Local<'_>, object: &Local<'_>) {
        self.capture
            .allocated(&self.rt, jni, object, Some(thread), false);
    }

    /// MonitorWait, MonitorWaited, MonitorContendedEnter and MonitorContendedEntered.
    pub fn monitor(&'static self, jni: Jni<'_>, kind: SyncKind, object: &Local<'_>) {
        self.capture
            .sync_event(&self.rt, self.rt.jvmti(), jni, kind, Some(object), 0);
    }
}
