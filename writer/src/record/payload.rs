//! What a record can carry beside its slots: a user event's text, a concurrency event's
//! details, a call's values. The thread that records one stores it in its buffer's payloads
//! and the record's key is its index there; it travels in the same [`super::Batch`].

use super::{ClassKey, MethodKey, MethodRef, ThreadKey};

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
