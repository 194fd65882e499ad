//! The raw records the agent appends on JVM threads, and what travels to the writer thread.
//!
//! A [`Record`] names JVM identities the agent's way (a method key, a class key, an object ID
//! from a JVMTI tag); the writer resolves them to format IDs through [`Symbols`]. In a thread's
//! buffer and in a [`Batch`] records are stored in 16-byte [`Slot`]s (native byte order,
//! never written to a file):
//!
//! ```text
//!  0               8               12              16
//!  +---------------+---------------+---------------+
//!  | ticks (u64)   | word (u32)    | arg (u32)     |
//!  +---------------+---------------+---------------+
//!  word = form (top 4 bits) | payload (low 28 bits)
//!
//!  form 1, ENTRY   a MethodEntry: payload = method key, arg = receiver or NO_OBJECT
//!  form 2, EXIT    a MethodExit:  payload = method key, arg unused
//!                  (both carry the batch's `overhead` as their agent overhead)
//!  form 3, BARE    a MethodExit with no agent overhead of its own: the exit of a leaf
//!                  method, stored with its entry by one call at the same ticks
//!  form 0, WIDE    any record, in two slots: payload = RecordKind, arg = arg;
//!                  the second slot's ticks field holds the 64-bit key, its word `extra`
//! ```
//!
//! The one-slot forms are what the trampolines' fast path stores for nearly every call: half
//! the bytes of a wide record, so half the cache lines travel from the recording core to the
//! writer's.

mod control;
mod payload;
mod symbols;

pub use control::{name_matches, BurstScope, DumpEnd, HeapDump, RootKind, TriggerScope};
pub use payload::{Payload, SyncInfo, SyncKind, Value, ValuesInfo, ValuesKind};
pub use symbols::{
    access, ArrayKind, ClassInfo, FieldDef, Line, MethodDef, MethodRef, Symbols, ThreadInfo,
};

/// The agent's key for a method: for `capture=events` the `jmethodID` bits.
pub type MethodKey = u64;
/// The agent's key for a class: a serial assigned when the class is registered (never 0).
pub type ClassKey = u32;
/// The agent's key for a thread: a serial assigned when its buffer is created (never 0).
pub type ThreadKey = u32;

/// The key of a Mount whose virtual thread is not followed (it was mounted before a burst
/// began and has not left its carrier since): its records are dropped, never given to the
/// carrier.
pub const UNKNOWN_THREAD: ThreadKey = u32::MAX;

/// Object ID meaning "no object" (a static call).
pub const NO_OBJECT: u32 = 0xFFFF_FFFF;
/// Receiver of a constructor entry that a later [`RecordKind::ObjectBound`] names.
pub const PENDING_OBJECT: u32 = 0xFFFF_FFFE;
/// `Record::extra` of an allocation that is not an array.
pub const NOT_ARRAY: u32 = 0xFFFF_FFFF;

/// What a record says happened.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RecordKind {
    /// Unused slot.
    #[default]
    None = 0,
    /// `key` = method, `arg` = receiver object ID or [`NO_OBJECT`], `extra` = agent overhead ticks.
    MethodEntry,
    /// `key` = method, `extra` = agent overhead ticks.
    MethodExit,
    /// The recording thread started.
    ThreadStart,
    /// The recording thread ended.
    ThreadEnd,
    GcStart,
    GcFinish,
    /// `key` = class, `arg` = new object ID, `extra` = array length or [`NOT_ARRAY`].
    ObjectAlloc,
    /// An object first seen (not allocated while traced): `key` = class, `arg` = object ID.
    ObjectSeen,
    /// `arg` = object ID of a freed object.
    ObjectFree,
    /// A user event from a Java thread: `key` = its [`Payload::Text`] in the batch.
    UserEvent,
    /// The receiver of the constructor entered with [`PENDING_OBJECT`]: `key` = method,
    /// `arg` = object ID, `extra` = class key of the object.
    ObjectBound,
    /// A virtual thread was mounted on the recording thread (a carrier): the records that
    /// follow, up to its Unmount, are the virtual thread's, `key` (its thread key). Recorded
    /// whether or not a burst records.
    Mount,
    /// The virtual thread mounted on the recording thread was taken off it.
    Unmount,
    /// `overflow=drop`: the thread's method records from here were dropped (the writer was
    /// behind): `key` entries, `arg` exits. See [`drop_records`].
    Lost,
    /// A concurrency event (`monitors=on`): `key` = its [`Payload::Sync`] in the batch.
    Sync,
    /// A method's argument or return values: `key` = their [`Payload::Values`] in the batch.
    Values,
}

/// One raw event as recorded on a JVM thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    pub ticks: u64,
    pub key: u64,
    pub arg: u32,
    pub extra: u32,
    pub kind: RecordKind,
}

impl Record {
    pub fn new(kind: RecordKind, ticks: u64, key: u64, arg: u32, extra: u32) -> Record {
        Record {
            ticks,
            key,
            arg,
            extra,
            kind,
        }
    }

    /// A method exit with no agent overhead of its own: a leaf's, whose entry's call
    /// recorded it too ([`FORM_BARE_EXIT`]).
    pub fn is_bare_exit(&self) -> bool {
        self.kind == RecordKind::MethodExit && self.arg == 0 && self.extra == 0
    }
}

impl RecordKind {
    /// The kind whose discriminant is `v` (a wide slot's payload); None for no kind.
    pub fn from_u8(v: u8) -> Option<RecordKind> {
        use RecordKind::*;
        const KINDS: [RecordKind; 17] = [
            None,
            MethodEntry,
            MethodExit,
            ThreadStart,
            ThreadEnd,
            GcStart,
            GcFinish,
            ObjectAlloc,
            ObjectSeen,
            ObjectFree,
            UserEvent,
            ObjectBound,
            Mount,
            Unmount,
            Lost,
            Sync,
            Values,
        ];
        KINDS.get(usize::from(v)).copied()
    }
}

/// One 16-byte cell of a thread's buffer: a whole record in a one-slot form, or half of a
/// wide one (module comment).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    pub ticks: u64,
    pub word: u32,
    pub arg: u32,
}

/// Method keys below this fit a one-slot record.
pub const COMPACT_KEYS: u32 = 1 << 28;
const FORM_SHIFT: u32 = 28;
const PAYLOAD: u32 = COMPACT_KEYS - 1;
/// A slot's form (the top 4 bits of `word`).
pub const FORM_WIDE: u32 = 0;
pub const FORM_ENTRY: u32 = 1;
pub const FORM_EXIT: u32 = 2;
/// An exit recorded with its entry, at the entry's ticks, by the one call that cost the
/// entry's overhead (`jlive_bci::code::is_leaf`): its own overhead is 0.
pub const FORM_BARE_EXIT: u32 = 3;

impl Slot {
    /// The one-slot form of a method entry (`FORM_ENTRY`) or exit (`FORM_EXIT`) of a method
    /// key below [`COMPACT_KEYS`], with the batch's overhead, or of a leaf's exit with none
    /// (`FORM_BARE_EXIT`).
    #[inline(always)]
    pub fn compact(form: u32, ticks: u64, key: u32, arg: u32) -> Slot {
        Slot {
            ticks,
            word: form << FORM_SHIFT | key,
            arg,
        }
    }

    #[inline(always)]
    pub fn form(&self) -> u32 {
        self.word >> FORM_SHIFT
    }

    /// The method key of a one-slot record.
    #[inline(always)]
    pub fn key(&self) -> u32 {
        self.word & PAYLOAD
    }

    /// The two slots of `r` in the wide form.
    pub fn wide(r: &Record) -> [Slot; 2] {
        [
            Slot {
                ticks: r.ticks,
                word: r.kind as u32,
                arg: r.arg,
            },
            Slot {
                ticks: r.key,
                word: r.extra,
                arg: 0,
            },
        ]
    }

    /// The record at the start of `slots` and how many slots it takes; None when `slots` is
    /// empty or its first slot is not a record (an unknown form, a wide record cut short).
    #[inline]
    pub fn decode(slots: &[Slot], overhead: u32) -> Option<(Record, usize)> {
        let s = slots.first()?;
        let one = |kind, arg| Record::new(kind, s.ticks, u64::from(s.key()), arg, overhead);
        match s.form() {
            FORM_ENTRY => Some((one(RecordKind::MethodEntry, s.arg), 1)),
            FORM_EXIT => Some((one(RecordKind::MethodExit, 0), 1)),
            FORM_BARE_EXIT => {
                let r = Record::new(RecordKind::MethodExit, s.ticks, u64::from(s.key()), 0, 0);
                Some((r, 1))
            }
            FORM_WIDE => {
                let second = slots.get(1)?;
                let kind = RecordKind::from_u8((s.word & 0xFF) as u8)?;
                let r = Record::new(kind, s.ticks, second.ticks, s.arg, second.word);
                Some((r, 2))
            }
            _ => None,
        }
    }

    /// The records held in `slots` (one-slot records carrying `overhead`), in order, up to the
    /// first slot that is not a record.
    pub fn records(slots: &[Slot], overhead: u32) -> impl Iterator<Item = Record> + '_ {
        let mut rest = slots;
        std::iter::from_fn(move || {
            let (r, width) = Slot::decode(rest, overhead)?;
            rest = &rest[width..];
            Some(r)
        })
    }
}

/// A run of one thread's records, in the order the thread recorded them.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    pub thread: ThreadKey,
    /// The agent overhead of every one-slot record.
    pub overhead: u32,
    pub slots: Vec<Slot>,
    /// What the records of kinds [`RecordKind::UserEvent`], [`RecordKind::Sync`] and
    /// [`RecordKind::Values`] carry: each such record's key is an index here.
    pub payloads: Vec<Payload>,
}

impl Batch {
    pub fn new(thread: ThreadKey, overhead: u32) -> Batch {
        Batch {
            thread,
            overhead,
            slots: Vec::new(),
            payloads: Vec::new(),
        }
    }

    /// Appends a record of `kind` carrying `payload` (its key is the payload's index).
    pub fn push_payload(&mut self, kind: RecordKind, ticks: u64, payload: Payload) {
        let key = self.payloads.len() as u64;
        self.payloads.push(payload);
        self.push(&Record::new(kind, ticks, key, 0, 0));
    }

    /// Appends `r` in the narrowest form that holds it.
    pub fn push(&mut self, r: &Record) {
        push_record(&mut self.slots, r, self.overhead);
    }

    /// The records, in order.
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        Slot::records(&self.slots, self.overhead)
    }
}

/// Appends `r` to `slots` in one slot when its form allows (a method entry or exit of a
/// key below [`COMPACT_KEYS`] whose overhead is `overhead`, or an exit's 0), else in two.
pub fn push_record(slots: &mut Vec<Slot>, r: &Record, overhead: u32) {
    let form = match r.kind {
        RecordKind::MethodEntry if r.extra == overhead => FORM_ENTRY,
        RecordKind::MethodExit if r.arg == 0 && r.extra == overhead => FORM_EXIT,
        _ if r.is_bare_exit() => FORM_BARE_EXIT,
        _ => FORM_WIDE,
    };
    if form != FORM_WIDE && r.key < u64::from(COMPACT_KEYS) {
        slots.push(Slot::compact(form, r.ticks, r.key as u32, r.arg));
    } else {
        slots.extend_from_slice(&Slot::wide(r));
    }
}

/// What the agent sends to the writer thread. Control messages travel through the same
/// channel as batches, so a burst boundary falls exactly between the batches before and after.
#[derive(Debug)]
pub enum Message {
    Batch(Batch),
    /// A burst begins; `scope` narrows what it writes (the live visualizer's settings).
    BurstBegin {
        ticks: u64,
        scope: Option<Box<BurstScope>>,
    },
    BurstEnd {
        ticks: u64,
    },
    /// Write everything received so far to disk now; `done` answers once it is there.
    Flush {
        done: Option<crossbeam_channel::Sender<()>>,
    },
    /// The JVM finished starting (`death` false) or is shutting down.
    Lifecycle {
        ticks: u64,
        death: bool,
    },
    /// A user event (from the control socket), written if a burst is open.
    UserEvent {
        ticks: u64,
        text: String,
    },
    /// Finish this file properly and continue in `path`; an open burst continues there.
    /// With `live`, the trace streams to that connection, with its copy in `path` (none when
    /// it is empty).
    Roll {
        path: String,
        live: Option<std::net::TcpStream>,
        ticks: u64,
        ticks_per_microsecond: Option<u32>,
    },
    /// A heap dump to write (the live visualizer's `dp` and `dr`, `jlive ctl heap` into the
    /// trace), whether or not a burst is open.
    Heap(Box<HeapDump>),
    /// Finish the file (end an open burst, write what the format ends with) and stop; the
    /// summary is sent back when the file is closed.
    Close {
        ticks_per_microsecond: Option<u32>,
        done: crossbeam_channel::Sender<Summary>,
    },
}

/// What the writer answers a [`Message::Close`] with, once the file is closed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub events: u64,
    pub bytes: u64,
    pub counts: Counts,
    /// The first I/O error, if the file could not be written whole.
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub records: u64,
    pub classes: u32,
    pub threads: u32,
    pub bursts: u32,
    /// Method records whose method the registry did not know.
    pub unknown_methods: u64,
    /// Classes past the format's limit, not traced.
    pub classes_over_limit: u32,
    /// Records that arrived outside a burst (none are expected).
    pub outside_burst: u64,
    /// Records of a virtual thread not followed ([`UNKNOWN_THREAD`]), dropped.
    pub unknown_thread: u64,
    /// Method entries and exits the agent dropped (overflow=drop).
    pub lost_entries: u64,
    pub lost_exits: u64,
    /// Exits of a trigger's frame that end its burst (`end_on_exit`): the agent ends the
    /// burst when this grows.
    pub trigger_exits: u32,
    /// Calls of leaf methods written, whose entry and exit came by one native call (an exit
    /// with no overhead of its own, [`Record::is_bare_exit`]): bench/run.sh counts the
    /// native calls a trace cost with them.
    pub leaf_calls: u64,
}

/// What `overflow=drop` keeps of a batch the writer has no room for: every record but method
/// entries and exits (what the writer needs to follow threads, objects and collections, and
/// a small part of a batch), each run of dropped ones replaced by a [`RecordKind::Lost`]
/// record at the ticks of its first. Returns how many records were dropped.
pub fn drop_records(slots: &mut Vec<Slot>, overhead: u32) -> u64 {
    let old = std::mem::take(slots);
    let mut dropped = 0u64;
    let mut run: Option<(u64, u64, u64)> = None; // ticks, entries, exits
    let end_run = |slots: &mut Vec<Slot>, run: &mut Option<(u64, u64, u64)>| {
        if let Some((ticks, entries, exits)) = run.take() {
            let exits = exits.min(u64::from(u32::MAX)) as u32;
            push_record(
                slots,
                &Record::new(RecordKind::Lost, ticks, entries, exits, 0),
                overhead,
            );
        }
    };
    for r in Slot::records(&old, overhead) {
        match r.kind {
            RecordKind::MethodEntry | RecordKind::MethodExit => {
                let (_, entries, exits) = run.get_or_insert((r.ticks, 0, 0));
                if r.kind == RecordKind::MethodEntry {
                    *entries += 1;
                } else {
                    *exits += 1;
                }
                dropped += 1;
            }
            _ => {
                end_run(slots, &mut run);
                push_record(slots, &r, overhead);
            }
        }
    }
    end_run(slots, &mut run);
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of record comes back from a batch as it went in; only entries and exits
    /// of small keys with the batch's overhead (and exits without an argument) take one slot.
    #[test]
    fn records_come_back_from_their_slots() {
        let mut records = Vec::new();
        for v in 1..=16u8 {
            let kind = RecordKind::from_u8(v).unwrap();
            records.push(Record::new(kind, 100 + u64::from(v), 7, NO_OBJECT, 9));
            records.push(Record::new(kind, u64::MAX - 1, 1 << 40, 5, 9));
            records.push(Record::new(kind, 3, u64::from(COMPACT_KEYS - 1), 0, 9));
            records.push(Record::new(kind, 4, u64::from(COMPACT_KEYS), 0, 9));
            records.push(Record::new(kind, 5, 8, PENDING_OBJECT, 10));
        }
        let mut batch = Batch::new(1, 9);
        for r in &records {
            batch.push(r);
        }
        assert_eq!(batch.records().collect::<Vec<_>>(), records);
        // One slot: the entries of keys 7 and 2^28 - 1 (with any receiver) and the exit of
        // key 2^28 - 1 (the only exit without an argument); the other 77 take two.
        assert_eq!(batch.slots.len(), 3 + 2 * 77);
        assert_eq!(RecordKind::from_u8(17), None);

        // A leaf's exit, stored with its entry, has no overhead of its own: one slot too;
        // an entry without overhead has no one-slot form.
        let leaf = [
            Record::new(RecordKind::MethodEntry, 6, 11, NO_OBJECT, 9),
            Record::new(RecordKind::MethodExit, 6, 11, 0, 0),
            Record::new(RecordKind::MethodEntry, 7, 11, NO_OBJECT, 0),
        ];
        let mut batch = Batch::new(1, 9);
        for r in &leaf {
            batch.push(r);
        }
        assert_eq!(batch.records().collect::<Vec<_>>(), leaf);
        assert_eq!(batch.slots.len(), 1 + 1 + 2);
        assert_eq!(batch.slots[1].form(), FORM_BARE_EXIT);
    }

    /// Dropping keeps what the writer needs to follow threads and objects, in order, and
    /// counts each run of method records it drops where the run began.
    #[test]
    fn dropping_a_batch_keeps_all_but_method_records() {
        use RecordKind::*;
        let overhead = 3;
        let mut b = Batch::new(1, overhead);
        let kinds = [
            MethodEntry,
            MethodEntry,
            MethodExit,
            Mount,
            MethodEntry,
            ObjectAlloc,
            MethodExit,
            MethodExit,
            Unmount,
            ThreadEnd,
            MethodEntry,
        ];
        for (i, kind) in kinds.into_iter().enumerate() {
            b.push(&Record::new(kind, 10 + i as u64, 5, NO_OBJECT, overhead));
        }
        let dropped = drop_records(&mut b.slots, overhead);
        assert_eq!(dropped, 7);
        let left: Vec<(RecordKind, u64, u64, u32)> = b
            .records()
            .map(|r| (r.kind, r.ticks, r.key, r.arg))
            .collect();
        assert_eq!(
            left,
            [
                (Lost, 10, 2, 1),
                (Mount, 13, 5, NO_OBJECT),
                (Lost, 14, 1, 0),
                (ObjectAlloc, 15, 5, NO_OBJECT),
                (Lost, 16, 0, 2),
                (Unmount, 18, 5, NO_OBJECT),
                (ThreadEnd, 19, 5, NO_OBJECT),
                (Lost, 20, 1, 0),
            ]
        );
    }
}
