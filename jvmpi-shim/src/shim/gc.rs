//! Collections and freed objects: queued by the collector's callbacks, delivered from the
//! shim's GC thread.

use super::*;
use crate::abi::{self, event, EventData};
use jlive_jvm::jni::Jni;
use jni_sys::jlong;
use std::ptr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What reached the shim from GC and ObjectFree callbacks, delivered later from its thread.
#[derive(Default)]
pub(super) struct GcQueue {
    pub(super) collections: u64,
    pub(super) freed: Vec<i64>,
    pub(super) delivered: u64,
    /// RunGCs in progress: their collections are theirs to deliver.
    pub(super) reserved: u32,
    /// The GC thread has not ended.
    pub(super) running: bool,
    /// A batch is being delivered (one at a time: GC_START and GC_FINISH pair up).
    pub(super) delivering: bool,
}

impl Shim {
    /// GarbageCollectionFinish (in the collector's context: memory and a lock only).
    pub fn collected(&self) {
        self.gc.lock().collections += 1;
        self.gc_signal.notify_all();
    }

    /// ObjectFree (in the collector's or the service thread's context).
    pub fn freed(&self, tag: jlong) {
        self.gc.lock().freed.push(tag);
    }

    /// Whether any event comes of a collection.
    pub(super) fn gc_events(&self) -> bool {
        [
            event::GC_START,
            event::GC_FINISH,
            event::OBJECT_FREE,
            event::CLASS_UNLOAD,
        ]
        .iter()
        .any(|&e| self.on(e))
    }

    /// The shim's thread: after each collection, its events (see [`Shim::deliver_batch`]);
    /// a collection that RunGC asked for is RunGC's to deliver.
    pub(super) fn gc_thread(&self, jni: Jni<'_>) {
        loop {
            {
                let mut q = self.gc.lock();
                while (q.collections == q.delivered || q.reserved > 0)
                    && !self.dead.load(Ordering::Acquire)
                {
                    self.gc_signal.wait_for(&mut q, Duration::from_millis(500));
                }
                if self.dead.load(Ordering::Acquire) {
                    break;
                }
            }
            self.settle();
            if self.gc.lock().reserved > 0 {
                continue;
            }
            if let Some(freed) = self.claim_batch(false) {
                self.deliver_claimed(jni, freed);
            }
        }
        self.gc.lock().running = false;
        self.gc_delivered.notify_all();
    }

    /// Waits until no ObjectFree has arrived for [`SETTLE`] (at most [`SETTLE_MAX`]):
    /// ObjectFree comes after the collection, from the JVM's service thread. (Forcing them
    /// out with SetEventNotificationMode deadlocks JDK 17: its flush blocks at a safepoint
    /// that the service thread, waiting on the same flush, holds up.)
    pub(super) fn settle(&self) {
        let began = Instant::now();
        let mut seen = self.gc.lock().freed.len();
        while began.elapsed() < SETTLE_MAX {
            std::thread::sleep(SETTLE);
            let now = self.gc.lock().freed.len();
            if now == seen {
                break;
            }
            seen = now;
        }
    }

    /// The pending collections' frees, now the caller's to deliver (None: nothing pending,
    /// unless `anyway`).
    pub(super) fn claim_batch(&self, anyway: bool) -> Option<Vec<i64>> {
        let mut q = self.gc.lock();
        if q.delivering || (self.dead.load(Ordering::Acquire) && !anyway) {
            return None;
        }
        if q.collections == q.delivered && (!anyway || q.freed.is_empty()) {
            return None;
        }
        q.delivered = q.collections;
        q.delivering = true;
        Some(std::mem::take(&mut q.freed))
    }

    /// Delivers a claimed batch, then lets the next one go.
    pub(super) fn deliver_claimed(&self, jni: Jni<'_>, freed: Vec<i64>) {
        struct Done<'a>(&'a Shim);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.gc.lock().delivering = false;
                self.0.gc_delivered.notify_all();
            }
        }
        let _done = Done(self);
        self.deliver_batch(jni, freed);
    }

    /// Waits (up to `limit`) until `done` holds of the queue.
    pub(super) fn wait_gc(&self, limit: Duration, done: impl Fn(&GcQueue) -> bool) {
        let deadline = Instant::now() + limit;
        let mut q = self.gc.lock();
        while !done(&q) {
            if self.gc_delivered.wait_until(&mut q, deadline).timed_out() {
                return;
            }
        }
    }

    /// GC_START, the OBJECT_FREEs, GC_FINISH, then CLASS_UNLOAD for the classes that went,
    /// on the calling thread, holding no lock.
    pub(super) fn deliver_batch(&self, jni: Jni<'_>, freed: Vec<i64>) {
        let allocated = freed.iter().filter(|&&t| t & ALLOCATED != 0).count();
        self.known_objects
            .fetch_sub(allocated as i64, Ordering::Relaxed);
        let (classes, objects): (Vec<i64>, Vec<i64>) =
            freed.into_iter().partition(|t| t & CLASS_BIT != 0);
        let nothing = || EventData {
            id: ptr::null_mut(),
        };
        if self.on(event::GC_START) {
            self.send(jni.raw(), event::GC_START, nothing());
        }
        if self.on(event::OBJECT_FREE) {
            for tag in objects {
                let id = (tag & !7) as u64;
                self.send(jni.raw(), event::OBJECT_FREE, EventData { id: id_ptr(id) });
            }
        }
        if self.on(event::GC_FINISH) {
            let (total, free) = jni.heap_memory().unwrap_or((0, 0));
            self.send(
                jni.raw(),
                event::GC_FINISH,
                EventData {
                    gc_info: abi::GcInfo {
                        used_objects: self.known_objects.load(Ordering::Relaxed).max(0),
                        used_object_space: total - free,
                        total_object_space: total,
                    },
                },
            );
        }
        if self.on(event::CLASS_UNLOAD) {
            // Only the classes whose CLASS_LOAD the agent got.
            for tag in classes.into_iter().filter(|t| t & ANNOUNCED != 0) {
                let id = (tag & !7) as u64;
                self.send(jni.raw(), event::CLASS_UNLOAD, EventData { id: id_ptr(id) });
            }
        }
    }

    pub fn disable_gc(&self) {
        self.gc_disabled.fetch_add(1, Ordering::AcqRel);
    }

    pub fn enable_gc(&self) {
        let _ = self
            .gc_disabled
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > 0).then(|| n - 1)
            });
    }

    /// RunGC: a full collection, and its events delivered on the calling thread before
    /// returning, as JVMPI did.
    pub fn run_gc(&self, jni: Jni<'_>) {
        if self.gc_disabled.load(Ordering::Acquire) > 0 || !self.is_live() {
            return;
        }
        if !self.gc_events() {
            let _ = self.jvmti.force_garbage_collection();
            return;
        }
        self.gc.lock().reserved += 1;
        struct Reserved<'a>(&'a Shim);
        impl Drop for Reserved<'_> {
            fn drop(&mut self) {
                self.0.gc.lock().reserved -= 1;
                self.0.gc_signal.notify_all();
                self.0.gc_delivered.notify_all();
            }
        }
        let _reserved = Reserved(self);
        // A batch the GC thread is delivering goes first (not when this is that thread: it
        // would wait for itself).
        if !Self::own_thread() {
            self.wait_gc(Duration::from_secs(10), |q| !q.delivering);
        }
        let _ = self.jvmti.force_garbage_collection();
        self.settle();
        if let Some(freed) = self.claim_batch(false) {
            self.deliver_claimed(jni, freed);
        }
    }
}
