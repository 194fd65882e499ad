//! One thread's buffer of records: the owner's side of the handshake (module comment of
//! `transport`), the fast path the trampolines take, and the hand-over of a full batch.

use super::{owner_fence, Hub};
use crate::clock;
use jlive_writer::record::{
    drop_records, push_record, Payload, Record, RecordKind, Slot, ThreadKey,
};
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// One thread's records. Only the owning thread appends; others collect under the handshake.
///
/// Laid out by hand: what the fast path touches for every record (`records`, `stored`, the
/// flags) comes first, in one cache line of its own.
#[repr(C, align(64))]
pub struct ThreadBuffer {
    records: UnsafeCell<Vec<Slot>>,
    pub(super) busy: AtomicBool,
    /// Set by a collector while it takes the records.
    pub(super) paused: AtomicBool,
    /// Above 0 while the agent itself runs Java code on this thread (not traced).
    pub(super) quiet: AtomicU32,
    pub key: ThreadKey,
    /// Where in `records` the records of the virtual thread last mounted here begin (0 once
    /// they were taken); kept with `records`.
    mounted_at: AtomicUsize,
    /// What the capture notes for this thread until its next record (capture=bci: the
    /// wrapped call under way, `capture/bci/natives.rs`); every record stored ends it. Here
    /// because every fast path holds the buffer already, where a thread-local of its own
    /// costs a lookup per call and room the static TLS reserve has not (ARCHITECTURE.md).
    pub note: Note,
    /// What records of `records` carry beyond their slots (a user event's text...): a record's
    /// key is its index here. Kept with `records`, and sent with them.
    payloads: UnsafeCell<Vec<Payload>>,
    /// Serialises the cold operations (retire, collect) of this buffer.
    pub(super) cold: Mutex<()>,
}

/// Two words of the owner's, the capture's to interpret ([`ThreadBuffer::note`]): a key
/// ([`Note::NONE`] once a record is stored) and a time.
pub struct Note {
    pub key: AtomicU32,
    pub ticks: AtomicU64,
}

impl Note {
    /// No note.
    pub const NONE: u32 = u32::MAX;
}

impl Default for Note {
    fn default() -> Self {
        Note {
            key: AtomicU32::new(Note::NONE),
            ticks: AtomicU64::new(0),
        }
    }
}

// SAFETY: `records` is only touched by the owner while `busy` is set (and, but for the
// records stored always, tracing is on), or by one collector (holding `cold`) after the
// handshake has shut the owner out.
unsafe impl Sync for ThreadBuffer {}

impl ThreadBuffer {
    /// An empty buffer for the thread `key`, room for `capacity` slots.
    pub(super) fn new(key: ThreadKey, capacity: usize) -> ThreadBuffer {
        ThreadBuffer {
            key,
            busy: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            quiet: AtomicU32::new(0),
            records: UnsafeCell::new(Vec::with_capacity(capacity)),
            payloads: UnsafeCell::new(Vec::new()),
            mounted_at: AtomicUsize::new(0),
            cold: Mutex::new(()),
            note: Note::default(),
        }
    }

    /// Appends one record stamped `ticks`. With `extra = None` the record's `extra` is the
    /// agent overhead: the ticks spent from `ticks` until the record was stored. Returns false
    /// when not tracing. `blocking = false` is for GC and ObjectFree callbacks: a full channel
    /// makes the buffer grow instead of waiting.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn append(
        &self,
        hub: &Hub,
        kind: RecordKind,
        ticks: u64,
        key: u64,
        arg: u32,
        extra: Option<u32>,
        blocking: bool,
    ) -> bool {
        self.store(hub, kind, ticks, key, arg, extra, blocking, false)
    }

    /// Stores a record whether or not a burst records (a virtual thread mounted on this
    /// thread or taken off it: the writer follows them to know whose records follow).
    pub fn append_always(&self, hub: &Hub, kind: RecordKind, ticks: u64, key: u64) -> bool {
        self.store(hub, kind, ticks, key, 0, Some(0), true, true)
    }

    /// Stores an Unmount record; then, with `send`, if the virtual thread recorded anything
    /// since its Mount, sends this thread's records to the writer now (the owner only): it
    /// may go on on another carrier, and what it recorded here must reach the writer before
    /// what it records there.
    pub fn unmount(&self, hub: &Hub, ticks: u64, send: bool) {
        self.busy.store(true, Ordering::Relaxed);
        owner_fence();
        while self.paused.load(Ordering::Relaxed) {
            self.wait_for_collector();
        }
        // SAFETY: busy is set and no collector was seen (module comment); only this thread
        // appends.
        let records = unsafe { &mut *self.records.get() };
        let recorded = records.len() > self.mounted_at.load(Ordering::Relaxed);
        if records.len() + 2 > hub.capacity {
            self.hand_over(hub, records, true, true);
        }
        push_record(
            records,
            &Record::new(RecordKind::Unmount, ticks, 0, 0, 0),
            hub.batch_overhead(),
        );
        if send && recorded {
            // Waits even with overflow=drop: dropped here, its records would be marked lost
            // after the ones it makes on its next carrier.
            self.hand_over(hub, records, true, false);
        }
        self.busy.store(false, Ordering::Release);
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn store(
        &self,
        hub: &Hub,
        kind: RecordKind,
        ticks: u64,
        key: u64,
        arg: u32,
        extra: Option<u32>,
        blocking: bool,
        always: bool,
    ) -> bool {
        let Some(records) = self.records_to_store(hub, blocking, always) else {
            return false;
        };
        let extra = extra
            .unwrap_or_else(|| clock::ticks().wrapping_sub(ticks).min(u64::from(u32::MAX)) as u32);
        push_record(
            records,
            &Record::new(kind, ticks, key, arg, extra),
            hub.batch_overhead(),
        );
        self.count_stored();
        if kind == RecordKind::Mount {
            self.mounted_at.store(records.len(), Ordering::Relaxed);
        }
        self.busy.store(false, Ordering::Release);
        true
    }

    /// The records, marked busy ([`ThreadBuffer::begin_store`]) with room for one more (a full
    /// vector is handed over first); None when nothing is to be stored.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn records_to_store(&self, hub: &Hub, blocking: bool, always: bool) -> Option<&mut Vec<Slot>> {
        if !self.begin_store(hub, always) {
            return None;
        }
        // SAFETY: busy is set and tracing was seen on, so no collector touches the vector
        // until busy is cleared (module comment); only this thread appends, and its caller
        // clears busy after its last use of the reference.
        let records = unsafe { &mut *self.records.get() };
        if records.len() + 2 > hub.capacity {
            self.hand_over(hub, records, blocking, true);
        }
        Some(records)
    }

    /// Marks the buffer busy once no collector is at it; false (and not busy) when nothing is
    /// to be stored: muted, or (but for records stored `always`) no burst records.
    #[inline(always)]
    fn begin_store(&self, hub: &Hub, always: bool) -> bool {
        if self.quiet.load(Ordering::Relaxed) != 0 && !always {
            return false;
        }
        self.busy.store(true, Ordering::Relaxed);
        owner_fence();
        while self.paused.load(Ordering::Relaxed) {
            self.wait_for_collector();
        }
        if !always && !hub.tracing.load(Ordering::Relaxed) {
            self.busy.store(false, Ordering::Release);
            return false;
        }
        true
    }

    /// Appends a record of `kind` that carries `payload` (a user event's text, a concurrency
    /// event's details, a call's values): its key is the payload's index in the batch. False
    /// when nothing was stored (no burst records).
    pub fn append_payload(
        &self,
        hub: &Hub,
        kind: RecordKind,
        ticks: u64,
        payload: Payload,
    ) -> bool {
        let Some(records) = self.records_to_store(hub, true, false) else {
            return false;
        };
        // SAFETY: kept with `records`, under the same handshake; hand_over's reference is gone.
        let payloads = unsafe { &mut *self.payloads.get() };
        let key = payloads.len() as u64;
        payloads.push(payload);
        push_record(
            records,
            &Record::new(kind, ticks, key, 0, 0),
            hub.batch_overhead(),
        );
        self.count_stored();
        self.busy.store(false, Ordering::Release);
        true
    }

    /// The trampolines' fast path: stores `slot` (a one-slot record, whose overhead is the
    /// hub's) as it is, but only when nothing needs attention (no collector at work, not
    /// muted, tracing on, room left). False means nothing was stored: the caller takes
    /// [`ThreadBuffer::append`], which handles every case. No call, no lock, nothing that can
    /// panic.
    #[inline(always)]
    pub fn try_append(&self, hub: &Hub, slot: Slot) -> bool {
        self.try_append_all(hub, [slot])
    }

    /// [`ThreadBuffer::try_append`] for two slots, both stored or neither.
    #[inline(always)]
    pub fn try_append_pair(&self, hub: &Hub, slots: [Slot; 2]) -> bool {
        self.try_append_all(hub, slots)
    }

    #[inline(always)]
    fn try_append_all<const N: usize>(&self, hub: &Hub, slots: [Slot; N]) -> bool {
        self.busy.store(true, Ordering::Relaxed);
        owner_fence();
        let clear = !self.paused.load(Ordering::Relaxed)
            && self.quiet.load(Ordering::Relaxed) == 0
            && hub.tracing.load(Ordering::Relaxed);
        let stored = clear && {
            // SAFETY: busy is set and no collector was seen, so none touches the vector until
            // busy is cleared (module comment); only this thread appends.
            let records = unsafe { &mut *self.records.get() };
            let room = records.len() + N <= hub.capacity && records.len() + N <= records.capacity();
            if room {
                // push, not extend_from_slice: that one stays an out-of-line call per record.
                for slot in slots {
                    records.push(slot);
                }
            }
            room
        };
        self.busy.store(false, Ordering::Release);
        if stored {
            self.count_stored();
        }
        stored
    }

    /// A record was stored: the note ends (a plain store: no chain of increments through
    /// memory from one record to the next).
    #[inline(always)]
    fn count_stored(&self) {
        self.note.key.store(Note::NONE, Ordering::Relaxed);
    }

    /// A collector is taking this buffer: step aside until it is done, then mark busy again.
    #[cold]
    fn wait_for_collector(&self) {
        self.busy.store(false, Ordering::SeqCst);
        // The collector sends this thread's batch before it lets go, which waits for the
        // writer when the channel is full: give the core away instead of spinning on it.
        let mut spins = 0u32;
        while self.paused.load(Ordering::Acquire) {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        self.busy.store(true, Ordering::Relaxed);
        owner_fence();
    }

    /// Sends the full buffer: waiting for room (`blocking`), or keeping and growing it (a
    /// callback that may not wait). With overflow=drop and `may_drop`, when there is no room,
    /// its method records are dropped instead and the rest stays (unless that is most of it).
    #[cold]
    fn hand_over(&self, hub: &Hub, records: &mut Vec<Slot>, blocking: bool, may_drop: bool) {
        // SAFETY: the owner calls this with busy set and no collector at work (`store`,
        // `append_payload`, `unmount`), so nothing else touches the payloads; the caller holds
        // no reference to them.
        let payloads = unsafe { &mut *self.payloads.get() };
        self.mounted_at.store(0, Ordering::Relaxed);
        if may_drop && blocking && hub.drop_when_behind.load(Ordering::Relaxed) && hub.is_full() {
            let dropped = drop_records(records, hub.batch_overhead());
            hub.dropped.fetch_add(dropped, Ordering::Relaxed);
            if records.len() <= hub.capacity / 2 {
                return;
            }
        }
        let full = std::mem::replace(records, hub.empty_vec());
        let carried = std::mem::take(payloads);
        if let Some((kept, carried)) = hub.send(self.key, full, carried, blocking) {
            // The channel is full and this callback may not wait: keep growing instead.
            *records = kept;
            *payloads = carried;
        }
    }

    /// Takes the records, leaving an empty vector from the pool; the caller holds `cold` and
    /// has shut the owner out (or is the owner).
    pub(super) fn take(&self, hub: &Hub) -> (Vec<Slot>, Vec<Payload>) {
        // SAFETY: called by the owner itself (retire) or by a collector after the handshake.
        let (records, payloads) = unsafe { (&mut *self.records.get(), &mut *self.payloads.get()) };
        if records.is_empty() {
            return (Vec::new(), Vec::new());
        }
        self.mounted_at.store(0, Ordering::Relaxed);
        (
            std::mem::replace(records, hub.empty_vec()),
            std::mem::take(payloads),
        )
    }
}

#[cfg(test)]
mod layout {
    use super::ThreadBuffer;
    use std::mem::{align_of, offset_of};

    #[test]
    fn the_fast_paths_fields_share_one_cache_line() {
        assert_eq!(align_of::<ThreadBuffer>(), 64);
        assert!(offset_of!(ThreadBuffer, quiet) + 4 <= 64);
        assert!(offset_of!(ThreadBuffer, busy) < 64 && offset_of!(ThreadBuffer, paused) < 64);
    }
}
