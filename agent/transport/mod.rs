//! The transport: per-thread record buffers ([`ThreadBuffer`], `buffer.rs`) and the hub that
//! hands their batches to the writer. Records and hand-over only: what a record means is the
//! capture's business, what becomes of it the writer's.
//!
//! The hot path ([`ThreadBuffer::append`]) takes no lock, makes no system call and does not
//! allocate: it marks the buffer busy, checks that tracing is on, stores one 16-byte slot
//! (a method entry or exit in its one-slot form, `jlive_writer::record`) and clears the
//! mark. Only when the buffer is full does the owning thread send the batch over the bounded
//! channel (waiting if the writer is behind: nothing is dropped) and take an empty vector
//! from the pool.
//!
//! Every buffer is registered with the hub when it is created, so a burst end, a roll or VM
//! death can collect every thread's partial batch, including threads that are blocked or never
//! return. Collection is a Dekker handshake per buffer: the collector sets the buffer's
//! `paused` and then waits for its `busy` to be clear; an owner sets `busy` and then reads
//! `paused`, so either the owner sees the pause and waits (a few microseconds, while the
//! collector swaps the vector), or the collector sees it busy and waits the few nanoseconds
//! until the record is stored. Nothing is lost either way. A
//! burst end also clears `tracing` first, so that records stop once the burst is over.
//!
//! The owner's side of that handshake needs a store-load barrier between setting `busy` and
//! reading `paused`, which on x86-64 is a locked instruction on every record. Where Linux
//! offers `membarrier` (private expedited), the barrier moves to the rare side: the collector
//! makes every thread of the process execute one after setting `paused`, and the owner only
//! keeps the compiler from reordering. Without membarrier the owner fences as before.
//!
//! Registering for membarrier waits for an RCU grace period once the process has more than
//! one thread (5 ms and more here, at every JVM start), so it runs on a thread of its own and
//! owners fence until it is done. The collector always fences and then, once registration is
//! done, also calls membarrier. An owner that skipped its fence saw [`ASYMMETRIC`] set; a
//! collector that saw it clear had made its `paused` visible (its fence) before that flag was
//! set, and the owner reads `paused` after the flag (its load of the flag is an acquire),
//! so the owner sees the pause.

use crossbeam_channel::{Receiver, Sender, TrySendError};
use jlive_jvm::os;
use jlive_writer::record::{Batch, Message, Payload, Slot, ThreadKey};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

mod buffer;

pub use buffer::{Note, ThreadBuffer};

/// Recording state shared by every thread.
pub struct Hub {
    tracing: AtomicBool,
    messages: Sender<Message>,
    pool: Receiver<Vec<Slot>>,
    buffers: Mutex<Vec<Arc<ThreadBuffer>>>,
    /// Slots per batch.
    capacity: usize,
    /// capture=bci's constant agent overhead per record, measured at start-up; one-slot
    /// records carry it (their batch says it for them).
    overhead: Option<u32>,
    next_key: AtomicU32,
    drop_when_behind: AtomicBool,
    dropped: AtomicU64,
}

/// True once this process is registered for membarrier: owners need no hardware fence.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);

/// The owner's side of the handshake, between its store of `busy` and its load of `paused`.
#[inline(always)]
fn owner_fence() {
    // Acquire: the load of `paused` that follows stays after this one on every CPU (a plain
    // load on x86-64, where loads are never reordered anyway).
    if ASYMMETRIC.load(Ordering::Acquire) {
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
}

/// The collector's side: after its store of `paused`, before its load of `busy`. The
/// hardware fence comes first so that an owner which saw registration finish (and skipped its
/// own fence) sees the pause even when this collector read [`ASYMMETRIC`] before it was set.
fn collector_fence() {
    fence(Ordering::SeqCst);
    if ASYMMETRIC.load(Ordering::SeqCst) {
        os::membarrier();
    }
}

/// Registers the process for membarrier off the caller's path (module comment); owners keep
/// their hardware fence until it is done.
fn register_membarrier() {
    // Detached; if it cannot be started, owners simply keep fencing.
    let _ = std::thread::Builder::new()
        .name("jlive-membarrier".into())
        .spawn(|| {
            if os::membarrier_register() {
                ASYMMETRIC.store(true, Ordering::SeqCst);
            }
        });
}

thread_local! {
    /// Fast access to this thread's buffer; the Arc in OWNER keeps it alive.
    static CURRENT: Cell<*const ThreadBuffer> = const { Cell::new(std::ptr::null()) };
    static OWNER: RefCell<Option<Retire>> = const { RefCell::new(None) };
    /// Set on jlive's own threads (control): they are never traced.
    static AGENT_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether this module's thread-locals are in glibc's static TLS, where a TLS descriptor
/// (.cargo/config.toml) resolves without calling into glibc: the trampolines' natives look up
/// the thread's buffer twice per traced call. None where that cannot be told.
pub fn thread_locals_static() -> Option<bool> {
    os::in_static_tls(CURRENT.with(|c| c as *const _ as usize))
}

/// Marks the calling thread as one of jlive's own: it never gets a buffer.
pub fn mark_agent_thread() {
    AGENT_THREAD.with(|a| a.set(true));
}

/// Retires the thread's buffer when the thread goes away without a ThreadEnd event.
struct Retire(Arc<ThreadBuffer>, &'static Hub);

impl Drop for Retire {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(std::ptr::null()));
        self.1.retire(&self.0);
    }
}

impl Hub {
    /// A hub sending to `messages`; `pool` returns emptied vectors from the writer. With
    /// `overhead` (capture=bci's constant), one-slot records carry it.
    pub fn new(
        messages: Sender<Message>,
        pool: Receiver<Vec<Slot>>,
        buffer_bytes: usize,
        overhead: Option<u32>,
    ) -> Hub {
        register_membarrier();
        Hub {
            tracing: AtomicBool::new(false),
            messages,
            pool,
            buffers: Mutex::new(Vec::new()),
            capacity: (buffer_bytes / std::mem::size_of::<Slot>()).max(64),
            overhead,
            next_key: AtomicU32::new(1),
            drop_when_behind: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        }
    }

    /// overflow=drop: a thread whose batch finds the channel full drops its method records
    /// instead of waiting (see [`jlive_writer::record::drop_records`]).
    pub fn drop_when_behind(&self) {
        self.drop_when_behind.store(true, Ordering::Relaxed);
    }

    /// Whether the channel to the writer has no room.
    fn is_full(&self) -> bool {
        self.messages.is_full()
    }

    /// Method records dropped so far (overflow=drop).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// capture=bci's constant agent overhead per record (None: each record's is measured).
    #[inline(always)]
    pub fn overhead(&self) -> Option<u32> {
        self.overhead
    }

    /// The overhead a batch names for its one-slot records. Without a constant, any value
    /// will do: a record whose measured overhead equals it takes one slot and means it.
    fn batch_overhead(&self) -> u32 {
        self.overhead.unwrap_or(u32::MAX)
    }

    pub fn is_tracing(&self) -> bool {
        self.tracing.load(Ordering::Relaxed)
    }

    /// This thread's buffer, if it has one. An associated function, with no hub to hold: the
    /// trampolines' fast path looks it up before anything else. The reference is good on this
    /// thread until it retires its buffer (thread end or exit), which is all any caller holds
    /// it for.
    #[inline(always)]
    pub fn current() -> Option<&'static ThreadBuffer> {
        let p = CURRENT.with(|c| c.get());
        // SAFETY: CURRENT is set from the Arc held in OWNER and cleared before that Arc is
        // dropped; the pointer is only ever read on its own thread.
        unsafe { p.as_ref() }
    }

    /// This thread's buffer, made by `attach` (which returns false when it cannot) if the
    /// thread has none yet.
    #[inline(always)]
    pub fn current_or(&self, attach: impl FnOnce() -> bool) -> Option<&ThreadBuffer> {
        if let Some(b) = Hub::current() {
            return Some(b);
        }
        if !attach() {
            return None;
        }
        Hub::current()
    }

    /// A key for a thread: a recording thread's buffer, or a virtual thread.
    pub fn new_thread_key(&self) -> ThreadKey {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }

    /// Creates this thread's buffer; `register` receives its key before any record can refer
    /// to it (the registry stores the thread's name there).
    pub fn attach(
        &'static self,
        register: impl FnOnce(ThreadKey),
    ) -> Option<&'static ThreadBuffer> {
        if AGENT_THREAD.with(|a| a.get()) {
            return None;
        }
        if let Some(b) = Hub::current() {
            return Some(b);
        }
        let key = self.new_thread_key();
        register(key);
        let buffer = Arc::new(ThreadBuffer::new(key, self.capacity));
        self.buffers.lock().push(buffer.clone());
        let p = Arc::as_ptr(&buffer);
        let stored = OWNER
            .try_with(|o| *o.borrow_mut() = Some(Retire(buffer, self)))
            .is_ok();
        if !stored {
            return None; // the thread is exiting
        }
        CURRENT.with(|c| c.set(p));
        // SAFETY: the Arc now lives in OWNER until the thread exits or retires.
        Some(unsafe { &*p })
    }

    /// Runs `f` with this thread's recording muted: Java code the agent runs through JNI
    /// (Class.getComponentType) is not the application's and must not appear in its trace.
    pub fn quietly<T>(&self, f: impl FnOnce() -> T) -> T {
        /// Lets the thread record again when dropped, even by a panic's unwinding.
        struct Quiet(Option<&'static ThreadBuffer>);
        impl Drop for Quiet {
            fn drop(&mut self) {
                if let Some(b) = self.0 {
                    b.quiet.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
        let buffer = Hub::current();
        if let Some(b) = buffer {
            b.quiet.fetch_add(1, Ordering::Relaxed);
        }
        let _quiet = Quiet(buffer);
        f()
    }

    /// Whether the agent runs Java code of its own on this thread now ([`Hub::quietly`]).
    pub fn is_quiet() -> bool {
        Hub::current().is_some_and(|b| b.quiet.load(Ordering::Relaxed) != 0)
    }

    /// Ends this thread's recording: its partial batch goes to the writer.
    pub fn detach_current(&self) {
        let _ = OWNER.try_with(|o| o.borrow_mut().take());
    }

    fn retire(&self, buffer: &Arc<ThreadBuffer>) {
        {
            let _cold = buffer.cold.lock();
            let (records, payloads) = buffer.take(self);
            self.send(buffer.key, records, payloads, true);
        }
        self.buffers.lock().retain(|b| !Arc::ptr_eq(b, buffer));
    }

    /// Starts recording (a burst has begun).
    pub fn start(&self) {
        self.tracing.store(true, Ordering::SeqCst);
    }

    /// Stops recording at once (the writer failed); the burst is ended after.
    pub fn stop(&self) {
        self.tracing.store(false, Ordering::SeqCst);
    }

    /// Stops recording and sends every thread's partial batch to the writer, so that the next
    /// message on the channel (a burst end) follows every record made before it.
    pub fn stop_and_collect(&self) {
        self.tracing.store(false, Ordering::SeqCst);
        self.collect();
    }

    /// Sends every thread's partial batch to the writer without stopping: records made after a
    /// thread's batch was taken follow the next message on the channel (a roll, a flush).
    pub fn collect(&self) {
        let buffers: Vec<Arc<ThreadBuffer>> = self.buffers.lock().clone();
        for buffer in buffers {
            self.collect_buffer(&buffer);
        }
    }

    /// [`Hub::collect`] of one thread's buffer.
    pub fn collect_thread(&self, key: ThreadKey) {
        let buffer = self.buffers.lock().iter().find(|b| b.key == key).cloned();
        if let Some(buffer) = buffer {
            self.collect_buffer(&buffer);
        }
    }

    fn collect_buffer(&self, buffer: &ThreadBuffer) {
        let _cold = buffer.cold.lock();
        buffer.paused.store(true, Ordering::SeqCst);
        collector_fence();
        while buffer.busy.load(Ordering::SeqCst) {
            std::hint::spin_loop();
            std::thread::yield_now();
        }
        let (records, payloads) = buffer.take(self);
        // Sent before the owner may append again: a batch the owner filled and sent in
        // between would otherwise overtake this one, and the writer would see the thread's
        // records out of order (a mark, roll or flush in the middle of a burst).
        self.send(buffer.key, records, payloads, true);
        buffer.paused.store(false, Ordering::Release);
    }

    /// Bytes the threads' buffers hold (their capacity: each is allocated whole).
    pub fn buffered_bytes(&self) -> usize {
        self.threads() * self.capacity * std::mem::size_of::<Slot>()
    }

    /// Threads with a buffer.
    pub fn threads(&self) -> usize {
        self.buffers.lock().len()
    }

    /// Sends a control message to the writer (after the batches already sent).
    pub fn control(&self, message: Message) {
        let _ = self.messages.send(message);
    }

    /// Sends a thread's records (and their payloads) as a batch; with `blocking` false, a full
    /// channel hands them back instead.
    fn send(
        &self,
        thread: ThreadKey,
        slots: Vec<Slot>,
        payloads: Vec<Payload>,
        blocking: bool,
    ) -> Option<(Vec<Slot>, Vec<Payload>)> {
        if slots.is_empty() {
            return Some((slots, payloads));
        }
        let message = Message::Batch(Batch {
            thread,
            overhead: self.batch_overhead(),
            slots,
            payloads,
        });
        if blocking {
            let _ = self.messages.send(message);
            return None;
        }
        match self.messages.try_send(message) {
            Ok(()) => None,
            Err(TrySendError::Full(Message::Batch(b)))
            | Err(TrySendError::Disconnected(Message::Batch(b))) => Some((b.slots, b.payloads)),
            Err(_) => None,
        }
    }

    fn empty_vec(&self) -> Vec<Slot> {
        match self.pool.try_recv() {
            Ok(v) if v.capacity() >= self.capacity => v,
            _ => Vec::with_capacity(self.capacity),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock;
    use jlive_writer::record::{RecordKind, FORM_ENTRY};
    use std::collections::HashMap;

    /// The handshake loses, repeats and reorders nothing: two threads append numbered records
    /// while the collector takes their batches every few microseconds, before and after the
    /// membarrier registration that `Hub::new` starts has completed. One thread appends as
    /// the trampolines do (`try_append`, then `append` when it declines), the other with
    /// `append` alone. A reordering needs the owner to fill and send a batch in the instant
    /// between a collection's take and its send, so the scenario runs ten times (each well
    /// under a second).
    #[test]
    fn collection_loses_reorders_and_repeats_no_record() {
        let tsc = clock::start(crate::options::Clock::Tsc).0 == clock::Source::Tsc;
        let mut fast = 0;
        for _ in 0..10 {
            fast += collect_while_appending();
        }
        if !tsc {
            eprintln!("skipped: the fast path needs an invariant TSC, which this CPU lacks");
            return;
        }
        // Most records take the fast path; the full path takes a buffer's first record, the
        // one that finds it full, and those a collection interrupts.
        assert!(
            fast > 10 * PER_THREAD / 2,
            "{} records took the fast path",
            fast
        );
    }

    const PER_THREAD: u64 = 2_000_000;

    /// Returns how many records took the fast path.
    fn collect_while_appending() -> u64 {
        let (messages, inbox) = crossbeam_channel::bounded(64);
        let (_returns, pool) = crossbeam_channel::bounded(64);
        // Overhead 7: `append`'s records (overhead 0) take the wide form, `try_append`'s one slot.
        let hub: &'static Hub = Box::leak(Box::new(Hub::new(messages, pool, 4096, Some(7))));
        hub.start();
        let finished = Arc::new(AtomicU32::new(0));
        let owners: Vec<_> = (0..2)
            .map(|owner| {
                let finished = finished.clone();
                std::thread::spawn(move || {
                    let buffer = hub.attach(|_| {}).expect("a buffer");
                    let key = buffer.key;
                    let kind = RecordKind::MethodEntry;
                    let mut fast = 0;
                    for i in 0..PER_THREAD {
                        let slot = Slot::compact(FORM_ENTRY, clock::ticks(), i as u32, 0);
                        if owner == 0 && buffer.try_append(hub, slot) {
                            fast += 1;
                            continue;
                        }
                        assert!(buffer.append(hub, kind, i, i, 0, Some(0), true));
                    }
                    hub.detach_current();
                    finished.fetch_add(1, Ordering::SeqCst);
                    (key, fast)
                })
            })
            .collect();
        let reader = std::thread::spawn(move || {
            let mut next: HashMap<ThreadKey, u64> = HashMap::new();
            let mut total = 0;
            while total < 2 * PER_THREAD {
                let Ok(Message::Batch(batch)) = inbox.recv() else {
                    continue;
                };
                let expected = next.entry(batch.thread).or_insert(0);
                for r in batch.records() {
                    assert_eq!(r.key, *expected, "thread {}", batch.thread);
                    *expected += 1;
                    total += 1;
                }
            }
            next
        });
        while finished.load(Ordering::SeqCst) < 2 {
            hub.collect();
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
        let owners: Vec<(ThreadKey, u64)> = owners.into_iter().map(|t| t.join().unwrap()).collect();
        let next = reader.join().unwrap();
        for (key, _) in &owners {
            assert_eq!(next.get(key), Some(&PER_THREAD), "thread {}", key);
        }
        owners.iter().map(|(_, fast)| fast).sum()
    }
}
