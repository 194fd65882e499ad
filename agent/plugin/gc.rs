//! GC events for a user trace library: HotSpot runs GarbageCollectionStart/Finish and
//! ObjectFree where no JNI or JVMTI function may be called, so those callbacks only queue;
//! `jlive-plugin`, a thread of jlive's, delivers them after the collection (or the thread that
//! ends a burst, its last ones), telling young and full collections apart by the collectors'
//! counts (GarbageCollectorMXBean).

use super::abi::event::{GGC_END, GGC_START, SCAVENGE_END, SCAVENGE_START};
use super::abi::Event;
use super::PluginHost;
use crate::log;
use crate::runtime::Runtime;
use jlive_jvm::jni::Jni;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GcItem {
    Start,
    Finish,
    Free(u32),
}

/// What the collectors counted when last asked, and the collections they counted that are
/// not delivered yet (full, young).
#[derive(Default)]
struct Counts {
    last: (i64, i64),
    credit: (i64, i64),
}

pub(super) struct Queue {
    /// Held only for a push or a drain, never across a call into the JVM.
    items: Mutex<Vec<GcItem>>,
    /// Signalled when something can be delivered.
    ready: Condvar,
    /// The collectors' counts (GarbageCollectorMXBean).
    counts: Mutex<Counts>,
    /// Held by whoever takes and delivers a batch: the GC thread, or a burst's end.
    batch: Mutex<()>,
}

impl PluginHost {
    /// GarbageCollectionStart/Finish: queued for the plug-in's GC thread.
    pub(super) fn gc_event(&self, start: bool) {
        self.push(if start { GcItem::Start } else { GcItem::Finish });
    }

    /// ObjectFree of an object with an ID: queued (InsTrcTypeGCOn).
    pub(super) fn freed(&self, id: u32) {
        if self.gc_frees.load(Ordering::Relaxed) {
            self.push(GcItem::Free(id));
        }
    }

    fn push(&self, item: GcItem) {
        if !self.delivering() {
            return;
        }
        let Some(q) = self.queue.get() else { return };
        q.items.lock().push(item);
        if item != GcItem::Start {
            q.ready.notify_all();
        }
    }
}

/// Where the deliverable part of the queue ends: before a collection begun and not yet
/// finished.
fn deliverable(items: &[GcItem]) -> usize {
    items
        .iter()
        .rposition(|i| *i == GcItem::Start)
        .filter(|&s| !items[s..].contains(&GcItem::Finish))
        .unwrap_or(items.len())
}

impl Queue {
    /// Waits (at most 200 ms) until something can be delivered.
    fn wait(&self) {
        let mut items = self.items.lock();
        if deliverable(&items) == 0 {
            let _ = self.ready.wait_for(&mut items, Duration::from_millis(200));
        }
    }

    /// Takes what can be delivered.
    fn take(&self) -> Vec<GcItem> {
        let mut items = self.items.lock();
        let end = deliverable(&items);
        items.drain(..end).collect()
    }

    pub(super) fn clear(&self) {
        self.items.lock().clear();
    }

    /// A burst begins: nothing queued is its own, and the collectors' counts so far are not
    /// its collections.
    pub(super) fn reset(&self, p: &Runtime) {
        let _one = self.batch.lock();
        self.clear();
        let now = p
            .vm()
            .with_current(|jni| p.hub().quietly(|| collections(jni)))
            .flatten();
        let mut counts = self.counts.lock();
        if let Some(now) = now {
            counts.last = now;
        }
        counts.credit = (0, 0);
    }

    /// Delivers what is queued, on the calling thread (a burst's end).
    pub(super) fn deliver_now(&self, host: &PluginHost, p: &Runtime) {
        let _ = p.vm().with_env(|jni| {
            // After the GC thread's batch, if it is delivering one.
            let _one = self.batch.lock();
            let items = self.take();
            self.deliver(host, jni, &items);
        });
    }

    fn deliver(&self, host: &PluginHost, jni: Jni<'_>, items: &[GcItem]) {
        if items.is_empty() {
            return;
        }
        let mut counts = self.counts.lock();
        if items.contains(&GcItem::Start) {
            // The counters run ahead of the queue (a collection counted may be queued for
            // the next batch): what they add is credit, spent as the collections come.
            if let Some(now) = collections(jni) {
                counts.credit.0 += now.0 - counts.last.0;
                counts.credit.1 += now.1 - counts.last.1;
                counts.last = now;
            }
        }
        let mut is_full = false;
        for item in items {
            let e = match item {
                GcItem::Start => {
                    // A full collection when only full ones are owed; else a young one (the
                    // common kind).
                    is_full = counts.credit.0 > 0 && counts.credit.1 <= 0;
                    if is_full {
                        counts.credit.0 -= 1;
                        Event::Collection(GGC_START)
                    } else {
                        counts.credit.1 -= 1;
                        Event::Collection(SCAVENGE_START)
                    }
                }
                GcItem::Finish if is_full => Event::Collection(GGC_END),
                GcItem::Finish => Event::Collection(SCAVENGE_END),
                GcItem::Free(id) => Event::OidDelete(u64::from(*id)),
            };
            host.deliver(&e);
        }
    }
}

/// (full, young) collections so far, by the collectors' GarbageCollectorMXBeans; None if
/// they cannot be asked.
fn collections(jni: Jni<'_>) -> Option<(i64, i64)> {
    let all = jni.collection_counts();
    if all.is_empty() {
        return None;
    }
    let mut n = (0, 0);
    for (name, count) in all {
        if is_full_collector(&name) {
            n.0 += count.max(0);
        } else {
            n.1 += count.max(0);
        }
    }
    Some(n)
}

/// Whether a GarbageCollectorMXBean counts full (old-generation) collections: HotSpot's are
/// "G1 Old Generation", "PS MarkSweep", "MarkSweepCompact", "ZGC Major ...".
fn is_full_collector(name: &str) -> bool {
    ["Old", "MarkSweep", "Major", "Full"]
        .iter()
        .any(|w| name.contains(w))
}

impl PluginHost {
    /// Starts `jlive-plugin`, once: it waits for collections and delivers their events. Returns
    /// once it is attached to the JVM (attaching runs Java code, not inside a burst).
    pub(super) fn gc_thread(&'static self, p: &'static Runtime) {
        if self.queue.get().is_some() {
            return;
        }
        let queue = Queue {
            items: Mutex::new(Vec::new()),
            ready: Condvar::new(),
            counts: Mutex::new(Counts::default()),
            batch: Mutex::new(()),
        };
        if self.queue.set(queue).is_err() {
            return;
        }
        let (attached, wait) = crossbeam_channel::bounded::<()>(1);
        let started = std::thread::Builder::new()
        .name("jlive-plugin".into())
        .spawn(move || {
            let env = p.vm().attach_daemon(c"jlive-plugin");
            let _ = attached.send(());
            let Some(env) = env else {
                log::warn("the plug-in's GC thread cannot attach to the JVM: the user trace library gets no GC events");
                return;
            };
            let Some(q) = self.queue.get() else { return };
            while !p.closing() {
                q.wait();
                let body = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _one = q.batch.lock();
                    let items = q.take();
                    env.with(|jni| q.deliver(self, jni, &items));
                }));
                if body.is_err() {
                    log::warn("internal error delivering GC events to the user trace library");
                }
            }
        });
        match started {
            Ok(_) => {
                let _ = wait.recv_timeout(Duration::from_secs(10));
            }
            Err(e) => log::warn(&format!("cannot start the plug-in's GC thread: {}", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_begun_and_not_finished_waits_for_its_end() {
        use GcItem::*;
        assert_eq!(deliverable(&[Start, Finish, Free(3), Start]), 3);
        assert_eq!(deliverable(&[Free(1), Start]), 1);
        assert_eq!(deliverable(&[Start]), 0);
        assert_eq!(deliverable(&[Start, Finish]), 2);
        assert_eq!(deliverable(&[]), 0);
    }
}
