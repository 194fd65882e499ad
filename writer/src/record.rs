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

use std::sync::Arc;

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

// What the writer learns of the JVM's classes, methods and threads: the agent's registry, seen
// through [`Symbols`], in the agent's keys.

/// JVM access flags the formats look at.
pub mod access {
    pub const STATIC: u16 = 0x0008;
    pub const SYNCHRONIZED: u16 = 0x0020;
    pub const NATIVE: u16 = 0x0100;
    pub const ABSTRACT: u16 = 0x0400;
}

/// A line-number table entry: the line of the code from bytecode index `start` on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Line {
    pub start: u32,
    pub line: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodDef {
    pub name: String,
    pub signature: String,
    /// JVM access flags (`ACC_STATIC` 0x0008, `ACC_NATIVE` 0x0100, ...).
    pub access: u16,
    /// Empty when the format or the JVM gave none.
    pub lines: Vec<Line>,
}

impl MethodDef {
    /// The first and last source lines of the method (0, 0 without a line table).
    pub fn line_range(&self) -> (u32, u32) {
        let lines = self.lines.iter().map(|l| l.line);
        (lines.clone().min().unwrap_or(0), lines.max().unwrap_or(0))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldDef {
    pub name: String,
    pub signature: String,
    pub access: u16,
}

impl MethodDef {
    /// The source line of bytecode index `location` (0 without a line table).
    pub fn line_at(&self, location: i64) -> u32 {
        let at = u32::try_from(location).ok();
        self.lines
            .iter()
            .filter(|l| at.is_some_and(|a| l.start <= a))
            .max_by_key(|l| l.start)
            .map_or(0, |l| l.line)
    }
}

/// A class as the JVM describes it, in the agent's keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassInfo {
    /// Internal form: `java/lang/String`, `[I`, `[Ljava/lang/String;`.
    pub name: String,
    /// In class-file order; a method's index here is its [`MethodRef::index`].
    pub methods: Vec<MethodDef>,
    pub fields: Vec<FieldDef>,
    pub superclass: Option<ClassKey>,
    pub interfaces: Vec<ClassKey>,
    pub source_file: Option<String>,
    pub array: Option<ArrayKind>,
}

/// What an array class holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayKind {
    /// A primitive array, by its JVM descriptor character (`I`, `J`, `Z`, ...).
    Primitive(u8),
    /// An array of references to this element class.
    Objects(ClassKey),
}

/// A thread as the JVM describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    pub name: String,
    /// The thread object's identity hash code (0 when unknown).
    pub hash: u32,
    /// Its thread group's name and that group's parent's (empty when unknown).
    pub group: String,
    pub parent: String,
}

/// Where a method lives: its class and its index in the class's method list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodRef {
    pub class: ClassKey,
    pub index: u16,
}

/// The writer's view of the agent's registry. Lookups may take a lock; the writer caches.
pub trait Symbols: Send + Sync {
    fn method(&self, key: MethodKey) -> Option<MethodRef>;
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>>;
    fn class_by_name(&self, name: &str) -> Option<ClassKey>;
    fn thread(&self, key: ThreadKey) -> Option<ThreadInfo>;
    /// A thread ended and was written: the writer will not ask for it again (what keeps the
    /// registry of 100,000 short-lived virtual threads bounded).
    fn thread_ended(&self, _key: ThreadKey) {}
}

// What the agent asks of a burst and of a heap dump beside its records: a burst's scope (the
// visualizer's settings), a heap walk's findings.

/// What a burst writes of what is recorded during it (IBM's visualizer: "Limit to", the depth
/// limit of burst sampling, a trigger's thread lock and "at trigger exit"). The agent records
/// as for any burst; the resolver leaves out the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BurstScope {
    /// Only the invocations of methods matching one of these (class, method) patterns, names
    /// in internal form, `*` alone or at a pattern's end a wildcard ("Limit to").
    pub limit: Vec<(String, String)>,
    /// No frame deeper than this, counted per thread from the burst's beginning.
    pub depth: Option<u32>,
    /// The burst a trigger began, on this thread, with an entry of this method.
    pub trigger: Option<TriggerScope>,
}

/// The trigger of a burst: its first record on `thread` is the entry of `method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriggerScope {
    pub thread: ThreadKey,
    pub method: MethodKey,
    /// Only that thread is written.
    pub lock: bool,
    /// Nothing is written after that entry's exit (the agent ends the burst when it sees
    /// [`super::Counts::trigger_exits`] grow).
    pub end_on_exit: bool,
}

impl BurstScope {
    /// Whether it narrows anything.
    pub fn is_empty(&self) -> bool {
        self.limit.is_empty() && self.depth.is_none() && self.trigger.is_none()
    }
}

/// Whether `name` matches `pattern` (`*` alone: anything; a trailing `*`: a prefix).
pub fn name_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// A heap walk's findings, in the agent's identities.
#[derive(Debug, Default)]
pub struct HeapDump {
    pub ticks: u64,
    /// Every live object the walk reached: (object ID, class key, array length or
    /// [`NOT_ARRAY`](super::NOT_ARRAY)); each is defined before the parts that name it.
    pub objects: Vec<(u32, ClassKey, u32)>,
    /// A population dump: objects the file defined and the walk did not reach are freed, among
    /// those whose IDs lie below `below` (given before the walk: later ones are new).
    pub population: bool,
    pub below: u32,
    /// References between objects (fields, array elements): (from, to), grouped by `from`.
    pub refs: Vec<(u32, u32)>,
    /// Static fields' references: (class, to).
    pub statics: Vec<(ClassKey, u32)>,
    /// The roots: (kind, object, the thread whose stack, JNI locals or object it is, when
    /// known).
    pub roots: Vec<(RootKind, u32, Option<ThreadKey>)>,
    /// What the dump ends with: a generation mark, or the end of a report of so many events.
    pub end: DumpEnd,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DumpEnd {
    #[default]
    Generation,
    Report,
}

/// Why the JVM holds an object live by itself (JVMTI's root kinds, JinsightLive's GC roots).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RootKind {
    JniGlobal,
    /// A class the JVM keeps loaded (a system class).
    StickyClass,
    Monitor,
    /// A local variable of a Java frame.
    JavaStack,
    JniLocal,
    /// A live thread's own object.
    Thread,
    NativeStack,
    Unknown,
}

impl RootKind {
    /// Whether the JinsightLive event of the kind names the thread.
    pub fn has_thread(self) -> bool {
        matches!(
            self,
            RootKind::JavaStack | RootKind::JniLocal | RootKind::Thread | RootKind::NativeStack
        )
    }
}

// What a record can carry beside its slots: a user event's text, a concurrency event's details,
// a call's values. The thread that records one stores it in its buffer's payloads and the
// record's key is its index there; it travels in the same [`super::Batch`].

/// A record's payload, at the index its key names in its batch's `payloads`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// [`super::RecordKind::UserEvent`]'s text.
    Text(String),
    /// [`super::RecordKind::Sync`]'s details.
    Sync(Box<SyncInfo>),
    /// [`super::RecordKind::Values`]' values.
    Values(Box<ValuesInfo>),
}

/// What a concurrency event is (`monitors=on`; ORCA's events, by their ORCA names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SyncKind {
    /// Object.wait entered (any form; the wait inside Thread.join is not one).
    #[default]
    Wait,
    Waited,
    Notify,
    NotifyAll,
    /// Thread.start of the thread whose hash is the event's object.
    Start,
    /// Thread.join of the thread whose hash is the event's object, entered and left.
    Join,
    Joined,
    Sleep,
    Slept,
    /// A monitor held by another thread (its owner), entered only after waiting.
    ContendedEnter,
    ContendedEntered,
}

impl SyncKind {
    pub const ALL: [SyncKind; 11] = [
        SyncKind::Wait,
        SyncKind::Waited,
        SyncKind::Notify,
        SyncKind::NotifyAll,
        SyncKind::Start,
        SyncKind::Join,
        SyncKind::Joined,
        SyncKind::Sleep,
        SyncKind::Slept,
        SyncKind::ContendedEnter,
        SyncKind::ContendedEntered,
    ];

    /// ORCA's name of the event.
    pub fn name(self) -> &'static str {
        match self {
            SyncKind::Wait => "ObjectWait",
            SyncKind::Waited => "ObjectWaited",
            SyncKind::Notify => "ObjectNotify",
            SyncKind::NotifyAll => "ObjectNotifyAll",
            SyncKind::Start => "ThreadStart",
            SyncKind::Join => "ThreadJoin",
            SyncKind::Joined => "ThreadJoined",
            SyncKind::Sleep => "ThreadSleep",
            SyncKind::Slept => "ThreadSlept",
            SyncKind::ContendedEnter => "MonitorContendedEnter",
            SyncKind::ContendedEntered => "MonitorContendedEntered",
        }
    }

    pub fn from_name(name: &str) -> Option<SyncKind> {
        SyncKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The event that ends the span this one begins (a wait's waited...), if it begins one.
    pub fn end(self) -> Option<SyncKind> {
        match self {
            SyncKind::Wait => Some(SyncKind::Waited),
            SyncKind::Join => Some(SyncKind::Joined),
            SyncKind::Sleep => Some(SyncKind::Slept),
            SyncKind::ContendedEnter => Some(SyncKind::ContendedEntered),
            _ => None,
        }
    }

    /// Whether the event names an object or thread (a sleep names none).
    pub fn has_object(self) -> bool {
        !matches!(self, SyncKind::Sleep | SyncKind::Slept)
    }
}

/// A Java value, as the visualizer's value filters show them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Byte(i8),
    Char(u16),
    Short(i16),
    Int(i32),
    Long(i64),
    /// The float's bits.
    Float(u32),
    /// The double's bits.
    Double(u64),
    Boolean(bool),
    /// An object the trace has defined, or [`NO_OBJECT`](super::NO_OBJECT) for null.
    Object(u32),
    /// An object the trace does not name (a class object, or one from before a roll).
    Unknown,
    /// A string, by its text.
    Text(String),
}

/// Which values of a call: written right after its entry (arguments, fields at entry) or right
/// before its leave (return value, fields at exit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValuesKind {
    /// The arguments, in order.
    #[default]
    Arguments,
    /// The return value (one).
    Return,
    /// The receiver's instance fields (its class's first, then each superclass's, in
    /// class-file order), or a static method's class's static fields.
    FieldsAtEnter,
    FieldsAtExit,
}

impl ValuesKind {
    /// Whether the values go right before the call's leave.
    pub fn at_exit(self) -> bool {
        matches!(self, ValuesKind::Return | ValuesKind::FieldsAtExit)
    }
}

/// What a [`RecordKind::Values`] record stands for, kept by the agent until the writer takes
/// it: the values of a call of `method` (objects by their IDs, each recorded as seen first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValuesInfo {
    pub method: MethodKey,
    pub object: u32,
    pub kind: ValuesKind,
    pub values: Vec<Value>,
}

/// What a [`RecordKind::Sync`] record stands for, kept by the agent until the writer takes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncInfo {
    pub kind: SyncKind,
    /// Identity hash codes: the recording thread's, the object's (the monitor, or the thread
    /// started or joined; 0 for none) and, for a contended enter, the monitor's owner's.
    pub thread_hash: u32,
    pub object_hash: u32,
    pub owner_hash: u32,
    /// The object's ID (a format other than ORCA names objects by ID; the agent recorded its
    /// definition first), or [`NO_OBJECT`](super::NO_OBJECT).
    pub object_id: u32,
    /// The object's class, for a file that has not defined the object yet.
    pub object_class: Option<ClassKey>,
    /// The contended monitor's owner, when it is a thread the agent follows.
    pub owner_key: Option<ThreadKey>,
    /// The stack, innermost frame first: each frame's method and bytecode index (-1 native).
    pub frames: Vec<(MethodRef, i64)>,
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
