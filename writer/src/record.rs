//! The raw records the agent appends on JVM threads, and what travels to the writer thread.
//!
//! A [`Record`] is 32 bytes and `Copy`: appending one is a handful of stores. It names JVM
//! identities the agent's way (a method key, a class key, an object ID from a JVMTI tag);
//! the writer resolves them to format IDs through [`Symbols`].

use std::sync::Arc;

/// The agent's key for a method: for `capture=events` the `jmethodID` bits.
pub type MethodKey = u64;
/// The agent's key for a class: a serial assigned when the class is registered (never 0).
pub type ClassKey = u32;
/// The agent's key for a thread: a serial assigned when its buffer is created (never 0).
pub type ThreadKey = u32;

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
    /// A user event from a Java thread: `key` = message number (see [`Symbols::message`]).
    UserEvent,
    /// The receiver of the constructor entered with [`PENDING_OBJECT`]: `key` = method,
    /// `arg` = object ID, `extra` = class key of the object.
    ObjectBound,
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
}

/// A run of one thread's records, in the order the thread recorded them.
#[derive(Debug, Default)]
pub struct Batch {
    pub thread: ThreadKey,
    pub records: Vec<Record>,
}

/// A class as the JVM describes it, in the agent's keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassInfo {
    /// Internal form: `java/lang/String`, `[I`, `[Ljava/lang/String;`.
    pub name: String,
    /// In class-file order; a method's index here is its JinsightLive method ID.
    pub methods: Vec<Member>,
    pub fields: Vec<Member>,
    pub superclass: Option<ClassKey>,
    pub interfaces: Vec<ClassKey>,
    pub source_file: Option<String>,
    pub array: Option<ArrayKind>,
}

/// A method or field: name, JVM signature, access flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub signature: String,
    pub access: u16,
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
    /// The text of a user event recorded on a thread, taken once.
    fn message(&self, _key: u64) -> Option<String> {
        None
    }
}

/// What the agent sends to the writer thread. Control messages travel through the same
/// channel as batches, so a burst boundary falls exactly between the batches before and after.
#[derive(Debug)]
pub enum Message {
    Batch(Batch),
    BurstBegin {
        ticks: u64,
    },
    BurstEnd {
        ticks: u64,
    },
    /// Write everything received so far to disk now; `done` answers once it is there.
    Flush {
        done: Option<crossbeam_channel::Sender<()>>,
    },
    /// A USER_EVENT (from the control socket), written if a burst is open.
    UserEvent {
        ticks: u64,
        text: String,
    },
    /// Finish this file properly and continue in `path`; an open burst continues there.
    Roll {
        path: String,
        ticks: u64,
        ticks_per_microsecond: Option<u32>,
    },
    /// Finish the file (end burst if open, TraceEnd, header patch) and stop; the summary
    /// is sent back when the file is closed.
    Close {
        ticks_per_microsecond: Option<u32>,
        done: crossbeam_channel::Sender<crate::writer::Summary>,
    },
}
