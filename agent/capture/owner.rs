//! The owner of a monitor a thread has just blocked on, read without stopping the world.
//!
//! JVMTI names a monitor's owner only through GetObjectMonitorUsage, which HotSpot runs as a
//! VM operation at a safepoint: every thread stops, once per contended enter (Tomcat under wrk
//! makes ~300 a second, and lost 5% of its requests/s to them on JDK 25). But when
//! MonitorContendedEnter is posted for a platform thread, HotSpot has already marked it
//! BLOCKED on that monitor, so the thread's own `ThreadMXBean.getThreadInfo(id)` (no stack:
//! HotSpot takes no safepoint and no handshake for it) names the owner by thread ID, and
//! Thread's `tid` field, read as each thread starts, maps the ID back to the owner.
//!
//! The safepoint still answers where the ThreadInfo cannot: it names another monitor or none
//! (a virtual contender; a thread taking its monitor back after Object.wait), or an owner
//! that is not a platform thread seen starting, or a carrier (HotSpot reports a mounted
//! virtual owner as its carrier); and "no owner" once virtual threads run (an unmounted
//! virtual owner is reported as none).
//!
//! It also answers every contention when no thread waited on a lock at VM init (the code that
//! names a lock would be linked inside a query), and, on JDK 18 and earlier, once a Thread
//! subclass overrides getId() (ThreadInfo takes its IDs from it there).
//!
//! ThreadImpl's and ThreadInfo's Java code is linked at VM init by a first call. It runs
//! quietly ([`Hub::quietly`]): neither its calls nor a JVMTI event it causes are recorded.

use super::Capture;
use crate::transport::Hub;
use jlive_jvm::jni::{Arg, Jni, Method, Slot};
use jlive_jvm::jvmti::Jvmti;
use jlive_jvm::refs::{Global, Local};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub struct Owners {
    /// `ManagementFactory.getThreadMXBean()`.
    mxbean: Global,
    /// ThreadMXBean.getThreadInfo(long), ThreadInfo.getLockInfo(), getLockOwnerId(),
    /// LockInfo.getIdentityHashCode().
    thread_info: Method,
    lock_info: Method,
    owner_id: Method,
    lock_hash: Method,
    /// Thread.tid.
    tid: Slot,
    /// JDK 18 and earlier: Thread.getId(), which ThreadInfo takes a thread's ID from and a
    /// subclass may override (later JDKs call the final threadId()).
    get_id: Option<Method>,
    /// Whether the ThreadInfo can be used: its code linked at VM init, and no thread's
    /// getId() overridden (its IDs would not be `tid`s, and its code would run in the query).
    usable: AtomicBool,
    /// Live platform threads by ID: their hash codes (None for a carrier of virtual threads).
    threads: Mutex<HashMap<i64, Option<u32>>>,
    /// Whether an owner may be an unmounted virtual thread.
    virtual_threads: AtomicBool,
    /// Owners read from the contender's ThreadInfo, and asked at a safepoint.
    read: AtomicU64,
    asked: AtomicU64,
}

/// VM init (or attach), monitors on: looks up what a query needs, links its Java code with a
/// first call, and learns the threads alive. `follows_virtual` says whether VirtualThreadStart
/// reaches [`virtual_thread_started`] (where the JVM has virtual threads). Without
/// java.management, every owner is asked at a safepoint.
pub fn init(capture: &Capture, jvmti: Jvmti, jni: Jni<'_>, follows_virtual: bool) {
    let frame = jni.local_frame(32);
    let jni = frame.jni();
    let found = (|| {
        // The platform's own helper where it has one: ManagementFactory finds its beans
        // through a ServiceLoader (twice the classes, 3% of h2's script).
        let mxbean = [
            c"sun/management/ManagementFactoryHelper",
            c"java/lang/management/ManagementFactory",
        ]
        .into_iter()
        .find_map(|name| {
            let class = jni.find_class(name)?;
            let get = jni.method(
                &class,
                c"getThreadMXBean",
                c"()Ljava/lang/management/ThreadMXBean;",
                true,
            )?;
            jni.global(&jni.call(&class, &get, &[])?.object()?)
        })?;
        let bean = jni.find_class(c"java/lang/management/ThreadMXBean")?;
        let info = jni.find_class(c"java/lang/management/ThreadInfo")?;
        let lock = jni.find_class(c"java/lang/management/LockInfo")?;
        let thread = jni.find_class(c"java/lang/Thread")?;
        let jdk = jvmti
            .system_property("java.vm.specification.version")
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0);
        Some(Owners {
            mxbean,
            thread_info: jni.method(
                &bean,
                c"getThreadInfo",
                c"(J)Ljava/lang/management/ThreadInfo;",
                false,
            )?,
            lock_info: jni.method(
                &info,
                c"getLockInfo",
                c"()Ljava/lang/management/LockInfo;",
                false,
            )?,
            owner_id: jni.method(&info, c"getLockOwnerId", c"()J", false)?,
            lock_hash: jni.method(&lock, c"getIdentityHashCode", c"()I", false)?,
            tid: jni.field(&thread, c"tid", c"J")?,
            get_id: if jdk < 19 {
                Some(jni.method(&thread, c"getId", c"()J", false)?)
            } else {
                None
            },
            usable: AtomicBool::new(true),
            threads: Mutex::new(HashMap::new()),
            virtual_threads: AtomicBool::new(jdk >= 21 && !follows_virtual),
            read: AtomicU64::new(0),
            asked: AtomicU64::new(0),
        })
    })();
    let Some(owners) = found else {
        crate::log::info(
            "no java.management: the owner of each contended monitor is asked at a safepoint",
        );
        return;
    };
    capture.init_owners(owners);
    let Some(owners) = capture.owners() else {
        return;
    };
    let threads = jvmti.all_threads(jni).unwrap_or_default();
    jni.ensure_local_capacity(threads.len());
    for thread in threads {
        owners.started(jvmti, jni, &thread);
        jni.delete_local(thread);
    }
    // The first calls link ThreadImpl's and ThreadInfo's code, and a thread waiting on a lock
    // (the finalizer, the common cleaner) the code that names the lock: linked in a query
    // instead, it would run a string concatenation's bootstrap while the thread blocks. Such a
    // thread may not have reached its wait yet (on a busy host): asked again for up to 100 ms.
    let mut named = false;
    for attempt in 0..20 {
        if !owners.usable.load(Ordering::Relaxed) {
            return;
        }
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        named = owners.link(jvmti, jni);
        if named {
            break;
        }
    }
    if !named {
        owners.usable.store(false, Ordering::Relaxed);
        crate::log::info("no thread waited on a lock at VM init: the owner of each contended monitor is asked at a safepoint");
    }
}

impl Owners {
    /// Queries the live threads until one's ThreadInfo names a lock; whether one did.
    fn link(&self, jvmti: Jvmti, jni: Jni<'_>) -> bool {
        let frame = jni.local_frame(8);
        let jni = frame.jni();
        let threads = jvmti.all_threads(jni).unwrap_or_default();
        jni.ensure_local_capacity(threads.len());
        threads.into_iter().any(|thread| {
            let each = jni.local_frame(8);
            let jni = each.jni();
            jni.long_field(&thread, &self.tid)
                .and_then(|tid| jni.call(&self.mxbean, &self.thread_info, &[Arg::Long(tid)]))
                .and_then(|info| info.object())
                .and_then(|info| jni.call(&info, &self.lock_info, &[]))
                .and_then(|lock| lock.object())
                .is_some()
        })
    }

    fn started(&self, jvmti: Jvmti, jni: Jni<'_>, thread: &Local<'_>) {
        let Some(tid) = jni.long_field(thread, &self.tid) else {
            return;
        };
        let Some(class) = jni.object_class(thread) else {
            return;
        };
        let signature = jvmti.class_signature(&class).unwrap_or_default();
        // Once unusable, there is nothing left to learn from getId().
        if let Some(get_id) = self
            .get_id
            .as_ref()
            .filter(|_| self.usable.load(Ordering::Relaxed))
        {
            if jni.overrides(&class, c"getId", c"()J", get_id)
                && self.usable.swap(false, Ordering::Relaxed)
            {
                crate::log::info(&format!(
                    "{} overrides Thread.getId(): the owner of each contended monitor is asked at a safepoint",
                    signature
                ));
            }
        }
        jni.delete_local(class);
        let carrier = signature == "Ljdk/internal/misc/CarrierThread;";
        let hash = jvmti.object_hash_code(thread).filter(|_| !carrier);
        self.threads.lock().insert(tid, hash);
    }

    /// The hash code of the owner of the monitor the current thread is blocked on, whose
    /// hash code is `monitor` (0: none); None when the ThreadInfo cannot tell.
    fn read(
        &self,
        hub: &Hub,
        jvmti: Jvmti,
        jni: Jni<'_>,
        monitor: u32,
        after_wait: bool,
    ) -> Option<u32> {
        if !self.usable.load(Ordering::Relaxed) {
            return None;
        }
        let frame = jni.local_frame(8);
        let jni = frame.jni();
        let me = jvmti.current_thread(jni)?;
        let tid = jni.long_field(&me, &self.tid)?;
        // A platform thread: a virtual one has no ThreadInfo.
        self.threads.lock().get(&tid)?.as_ref()?;
        // Quiet on this thread's buffer: without one, its Java calls could be recorded.
        Hub::current()?;
        // Some(owner ID), or None when no owner is named.
        let named = hub.quietly(|| {
            let info = jni
                .call(&self.mxbean, &self.thread_info, &[Arg::Long(tid)])?
                .object()?;
            let Some(lock) = jni.call(&info, &self.lock_info, &[])?.object() else {
                return Some(None);
            };
            let hash = jni.call(&lock, &self.lock_hash, &[])?.int()?;
            let owner = jni.call(&info, &self.owner_id, &[])?.long()?;
            (hash as u32 == monitor).then_some((owner >= 0).then_some(owner))
        })?;
        match named {
            Some(owner) => *self.threads.lock().get(&owner)?,
            // The owner let go: HotSpot then shows the thread RUNNABLE, blocked on nothing. Not
            // so for a thread taking its monitor back after Object.wait (it shows no monitor
            // then either), nor for an unmounted virtual owner (shown as none).
            None => (!after_wait && !self.virtual_threads.load(Ordering::Relaxed)).then_some(0),
        }
    }
}

impl Owners {
    /// ThreadStart: the thread joins the map.
    pub fn thread_started(&self, jvmti: Jvmti, jni: Jni<'_>, thread: &Local<'_>) {
        self.started(jvmti, jni, thread);
    }

    /// ThreadEnd: the thread leaves it.
    pub fn thread_ended(&self, jni: Jni<'_>, thread: &Local<'_>) {
        if let Some(tid) = jni.long_field(thread, &self.tid) {
            self.threads.lock().remove(&tid);
        }
    }

    /// VirtualThreadStart: from now on an owner reported as none may be an unmounted
    /// virtual thread.
    pub fn virtual_thread_started(&self) {
        self.virtual_threads.store(true, Ordering::Relaxed);
    }

    /// How the owners were found, for the log; None before any contention.
    pub fn summary(&self) -> Option<String> {
        let (read, asked) = (
            self.read.load(Ordering::Relaxed),
            self.asked.load(Ordering::Relaxed),
        );
        (read + asked > 0).then(|| {
            format!(
                "contended monitors: {} owners read from the contender's ThreadInfo, {} asked at a safepoint",
                read, asked
            )
        })
    }
}

/// The hash code of the thread that owns `monitor` (whose hash code is `monitor_hash`), which
/// the current thread has just blocked on (`after_wait`: to take it back after Object.wait);
/// 0 when none does any more.
pub fn owner_hash(
    owners: Option<&Owners>,
    hub: &Hub,
    jvmti: Jvmti,
    jni: Jni<'_>,
    monitor: &Local<'_>,
    monitor_hash: u32,
    after_wait: bool,
) -> u32 {
    if let Some(o) = owners {
        if let Some(hash) = o.read(hub, jvmti, jni, monitor_hash, after_wait) {
            o.read.fetch_add(1, Ordering::Relaxed);
            return hash;
        }
        o.asked.fetch_add(1, Ordering::Relaxed);
    }
    let Some(owner) = jvmti.monitor_owner(jni, monitor) else {
        return 0;
    };
    let hash = jvmti.object_hash_code(&owner).unwrap_or(0);
    jni.delete_local(owner);
    hash
}
