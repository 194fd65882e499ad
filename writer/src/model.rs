//! The format-neutral trace: what the resolver ([`crate::resolve`]) makes of the agent's
//! records, what every format's sink turns into bytes, and what every format's reader gives
//! back ([`crate::read`]). `jlive dump`, `check`, `stats`, `convert` and the tests see only this.
//!
//! A trace is a stream of [`Event`]s with linear IDs, each defined before its first use:
//! threads from 1, classes from 0 (`java/lang/Object` 0, `java/lang/Thread` 1, then in the
//! order first needed, each after its superclass and interfaces), objects from 1 (IDs the
//! agent gave them, held in JVMTI tags), methods as (class, index in the class's method list,
//! in class-file order). Every event but [`Event::VmInit`] and [`Event::VmDeath`] lies inside
//! a burst; within a burst a thread never leaves a frame it did not enter in it.
//!
//! [`TraceInfo`] is what a file says about the run beside its events: the tick rate, and a
//! tick count with its wall-clock time (how a format that writes times turns ticks into them).

use std::io;

pub type ThreadId = u32;
pub type ClassId = u32;
pub type ObjectId = u32;

pub use crate::record::{
    access, FieldDef, Line, MethodDef, RootKind, SyncKind, Value, ValuesKind, NO_OBJECT,
};

/// How the user event that marks dropped records begins (`jlive stats` counts them).
pub const LOST_PREFIX: &str = "jlive: overflow=drop: ";

/// A method: its class and its index in that class's method list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MethodId {
    pub class: ClassId,
    pub index: u16,
}

/// What a file says about the run, beside its events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceInfo {
    /// The rate of every `ticks` in the file.
    pub ticks_per_microsecond: u32,
    /// The tick count when the file was opened.
    pub start_ticks: u64,
    /// A tick count and the wall-clock time at it, in nanoseconds since 1970-01-01 UTC.
    pub origin_ticks: u64,
    pub origin_ns: u64,
    /// The traced process (0 when the file does not say).
    pub pid: u32,
    pub host: String,
    /// The agent's option string, as given.
    pub options: String,
    /// When the file was finished, where the format says (a reader knows it at the end).
    pub end_ticks: Option<u64>,
}

impl TraceInfo {
    /// Nanoseconds since 1970 at `ticks`.
    pub fn wall_ns(&self, ticks: u64) -> u64 {
        let rate = u128::from(self.ticks_per_microsecond.max(1));
        let delta = i128::from(ticks) - i128::from(self.origin_ticks);
        let ns = i128::from(self.origin_ns) + delta * 1000 / rate as i128;
        ns.clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// A class, as a trace defines it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassDef {
    pub ticks: u64,
    pub id: ClassId,
    /// Internal form: `java/lang/String`, `[I`, `[Ljava/lang/String;`.
    pub name: String,
    /// Empty when unknown.
    pub source_file: String,
    /// None for `java/lang/Object`, interfaces and classes whose superclass is not traced.
    pub superclass: Option<ClassId>,
    pub interfaces: Vec<ClassId>,
    /// In class-file order: a method's index here is its [`MethodId::index`].
    pub methods: Vec<MethodDef>,
    pub fields: Vec<FieldDef>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadDef {
    pub ticks: u64,
    pub id: ThreadId,
    pub name: String,
    /// The thread object's identity hash code (0 where the format does not carry it).
    pub hash: u32,
    /// The thread's group and that group's parent (empty when unknown).
    pub group: String,
    pub parent: String,
}

/// What an array holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// A primitive, by its JVM descriptor character (`I`, `J`, `Z`, ...).
    Primitive(u8),
    /// References to objects of this class.
    Class(ClassId),
}

impl Element {
    /// The JVM descriptor of a primitive element (None for references).
    pub fn descriptor(self) -> Option<u8> {
        match self {
            Element::Primitive(d) => Some(d),
            Element::Class(_) => None,
        }
    }

    /// JVMPI's `is_array` value of OBJECT_ALLOC for an array of these (JinsightLive's
    /// ARRAY_CREATED.isArray, TPTP's `isArray`).
    pub fn jvmpi_is_array(self) -> u8 {
        match self.descriptor() {
            None => 2, // JVMPI_CLASS: an array of objects
            Some(b'Z') => 4,
            Some(b'C') => 5,
            Some(b'F') => 6,
            Some(b'D') => 7,
            Some(b'B') => 8,
            Some(b'S') => 9,
            Some(b'I') => 10,
            Some(b'J') => 11,
            Some(_) => 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayDef {
    pub length: u32,
    pub element: Element,
}

/// An object: its ID and class (for an array, the array class, with its element and length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectDef {
    pub ticks: u64,
    pub object: ObjectId,
    pub class: ClassId,
    pub array: Option<ArrayDef>,
}

/// A method entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enter {
    pub ticks: u64,
    pub thread: ThreadId,
    pub method: MethodId,
    /// The receiver, or [`NO_OBJECT`].
    pub object: ObjectId,
    /// The thread's frames open in this burst, this one included (1 for the outermost); with
    /// `methods=entry`, where nothing is left, its entries in the burst.
    pub depth: u32,
    /// The thread's entries in this file, this one included: pairs a leave with its entry.
    pub ticket: u32,
}

/// A method left (returned or thrown out of): the thread's top frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leave {
    pub ticks: u64,
    pub thread: ThreadId,
    pub method: MethodId,
    /// The depth and ticket of the frame's entry.
    pub depth: u32,
    pub ticket: u32,
    /// Ticks the agent itself spent on this entry and exit (0 where a format has no room).
    pub overhead: u64,
}

/// `record=tree`: one calling context of a thread (a chain of calls from its outermost
/// traced frame) with what its calls add up to in a burst. A burst's contexts are written at
/// its end, depth first: a context's callees lie between its [`Event::ContextEnter`] and its
/// [`Event::ContextLeave`] (TPTP's agMethodEntry and agMethodExit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    /// When it was written: the burst's end.
    pub ticks: u64,
    pub thread: ThreadId,
    pub method: MethodId,
    pub calls: u64,
    /// Ticks spent in the context's calls less those of its callees (TPTP's base time).
    pub base_ticks: u64,
    /// The shortest and longest of its calls, callees included.
    pub min_ticks: u64,
    pub max_ticks: u64,
}

/// A frame of a stack: its method, bytecode index (-1 in a native method, or where the format
/// keeps lines only) and source line (0 where unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub method: MethodId,
    pub location: i64,
    pub line: u32,
}

/// A concurrency event of a thread, with the thread's stack when it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sync {
    pub ticks: u64,
    pub thread: ThreadId,
    pub kind: SyncKind,
    /// Identity hash codes: the thread's, the object's (monitor, or thread started or
    /// joined; 0 for none) and a contended monitor's owner's (0 when it had none by then).
    pub thread_hash: u32,
    pub object: u32,
    pub owner: u32,
    /// The object as the trace's other events name it ([`NO_OBJECT`] where the format or the
    /// run gives it no ID: ORCA names objects by hash code only).
    pub object_id: ObjectId,
    /// The owner of a contended monitor, if the trace has defined that thread.
    pub owner_thread: Option<ThreadId>,
    /// Innermost frame first.
    pub stack: Vec<Frame>,
}

impl Sync {
    /// What pairs a span's end with its beginning and groups a monitor's contentions: the
    /// object's ID where the format names objects by ID, else its hash code.
    pub fn identity(&self) -> u64 {
        if self.object_id != NO_OBJECT {
            1 << 32 | u64::from(self.object_id)
        } else {
            u64::from(self.object)
        }
    }

    /// The object as [`Sync::identity`] tells it, for people: `object 12` or `3138CF7F`.
    pub fn identity_label(identity: u64) -> String {
        if identity >> 32 != 0 {
            format!("object {}", identity as u32)
        } else {
            format!("{:08X}", identity)
        }
    }
}

/// One event of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The JVM finished starting (may lie outside a burst).
    VmInit {
        ticks: u64,
    },
    /// The JVM is shutting down (may lie outside a burst).
    VmDeath {
        ticks: u64,
    },
    /// Bursts are numbered from 1 in each file.
    BurstBegin {
        ticks: u64,
        burst: u32,
    },
    BurstEnd {
        ticks: u64,
        burst: u32,
    },
    /// A thread, from its first event on (it may have started long before).
    ThreadDefine(Box<ThreadDef>),
    /// A defined thread started (JVMTI ThreadStart; for the main thread it comes after the
    /// thread's first calls). A format whose thread definition is its start writes nothing.
    ThreadStart {
        ticks: u64,
        thread: ThreadId,
    },
    ThreadEnd {
        ticks: u64,
        thread: ThreadId,
    },
    ClassDefine(Box<ClassDef>),
    /// An object first seen (not allocated while traced): a receiver, for instance.
    ObjectDefine(ObjectDef),
    MethodEnter(Enter),
    MethodLeave(Leave),
    /// An object allocated on `thread`; this defines it.
    Alloc {
        thread: ThreadId,
        object: ObjectDef,
    },
    /// `record=tree`: a calling context and its totals; its callees follow.
    ContextEnter(Context),
    /// The end of a context's callees.
    ContextLeave {
        ticks: u64,
        thread: ThreadId,
        method: MethodId,
    },
    /// A defined object was reclaimed.
    Free {
        ticks: u64,
        object: ObjectId,
    },
    GcStart {
        ticks: u64,
    },
    GcFinish {
        ticks: u64,
    },
    /// A user's mark (`jlive ctl mark`, the Java API); `jlive:` notes come from the agent.
    UserEvent {
        ticks: u64,
        text: String,
    },
    /// A wait, notify, thread start, join or sleep, or a contended monitor (`monitors=on`).
    Sync(Box<Sync>),
    /// A method's argument values (right after its entry) or its return value (right before
    /// its leave), for the methods the live visualizer's value filters name.
    Values(Box<Values>),
    /// A part of a heap dump (the live visualizer's `dp` and `dr`, `jlive ctl heap` into the
    /// trace); may lie outside a burst. The objects it names are defined before it.
    Heap {
        ticks: u64,
        part: Box<HeapPart>,
    },
}

/// A method's arguments or its return value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Values {
    pub ticks: u64,
    pub thread: ThreadId,
    pub method: MethodId,
    /// The receiver, or [`NO_OBJECT`] for a static method.
    pub object: ObjectId,
    pub kind: ValuesKind,
    pub values: Vec<Value>,
}

/// What a heap dump says, part by part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeapPart {
    /// The objects `object` refers to now (its fields, or an array's elements), each once.
    Refs {
        object: ObjectId,
        array: bool,
        to: Vec<ObjectId>,
    },
    /// The objects the static fields of `class` refer to.
    Statics { class: ClassId, to: Vec<ObjectId> },
    /// An object the JVM holds live; `thread` for the kinds that have one, when known.
    Root {
        kind: RootKind,
        thread: Option<ThreadId>,
        object: ObjectId,
    },
    /// A dump is complete: objects defined before are an older generation than those after.
    Generation,
    /// An answer of `events` events is complete (0: a request that is not served).
    EndOfReport { events: u32 },
}

impl Event {
    /// The event's name, as `jlive dump` and `jlive stats` print it.
    pub fn name(&self) -> &'static str {
        match self {
            Event::VmInit { .. } => "VM_INIT",
            Event::VmDeath { .. } => "VM_DEATH",
            Event::BurstBegin { .. } => "BURST_BEGIN",
            Event::BurstEnd { .. } => "BURST_END",
            Event::ThreadDefine(_) => "THREAD_DEFINE",
            Event::ThreadStart { .. } => "THREAD_START",
            Event::ThreadEnd { .. } => "THREAD_END",
            Event::ClassDefine(_) => "CLASS_DEFINE",
            Event::ObjectDefine(_) => "OBJECT_DEFINE",
            Event::MethodEnter(_) => "METHOD_ENTER",
            Event::MethodLeave(_) => "METHOD_LEAVE",
            Event::ContextEnter(_) => "CONTEXT_ENTER",
            Event::ContextLeave { .. } => "CONTEXT_LEAVE",
            Event::Alloc { .. } => "ALLOC",
            Event::Free { .. } => "FREE",
            Event::GcStart { .. } => "GC_START",
            Event::GcFinish { .. } => "GC_FINISH",
            Event::UserEvent { .. } => "USER_EVENT",
            Event::Sync(_) => "SYNC",
            Event::Values(v) => match v.kind {
                ValuesKind::Arguments => "ARGUMENT_VALUES",
                ValuesKind::Return => "RETURN_VALUE",
                ValuesKind::FieldsAtEnter => "FIELD_VALUES_AT_ENTER",
                ValuesKind::FieldsAtExit => "FIELD_VALUES_AT_EXIT",
            },
            Event::Heap { part, .. } => match **part {
                HeapPart::Refs { .. } => "REFS",
                HeapPart::Statics { .. } => "STATIC_REFS",
                HeapPart::Root { .. } => "ROOT",
                HeapPart::Generation => "GENERATION",
                HeapPart::EndOfReport { .. } => "END_OF_REPORT",
            },
        }
    }

    pub fn ticks(&self) -> u64 {
        match self {
            Event::VmInit { ticks }
            | Event::VmDeath { ticks }
            | Event::BurstBegin { ticks, .. }
            | Event::BurstEnd { ticks, .. }
            | Event::ThreadStart { ticks, .. }
            | Event::ThreadEnd { ticks, .. }
            | Event::Free { ticks, .. }
            | Event::GcStart { ticks }
            | Event::GcFinish { ticks }
            | Event::UserEvent { ticks, .. }
            | Event::Heap { ticks, .. } => *ticks,
            Event::ThreadDefine(t) => t.ticks,
            Event::ClassDefine(c) => c.ticks,
            Event::ObjectDefine(o) | Event::Alloc { object: o, .. } => o.ticks,
            Event::MethodEnter(e) => e.ticks,
            Event::MethodLeave(l) => l.ticks,
            Event::ContextEnter(c) => c.ticks,
            Event::ContextLeave { ticks, .. } => *ticks,
            Event::Sync(s) => s.ticks,
            Event::Values(v) => v.ticks,
        }
    }

    /// The event's ticks, to change.
    pub fn ticks_mut(&mut self) -> &mut u64 {
        match self {
            Event::VmInit { ticks }
            | Event::VmDeath { ticks }
            | Event::BurstBegin { ticks, .. }
            | Event::BurstEnd { ticks, .. }
            | Event::ThreadStart { ticks, .. }
            | Event::ThreadEnd { ticks, .. }
            | Event::Free { ticks, .. }
            | Event::GcStart { ticks }
            | Event::GcFinish { ticks }
            | Event::UserEvent { ticks, .. }
            | Event::Heap { ticks, .. } => ticks,
            Event::ThreadDefine(t) => &mut t.ticks,
            Event::ClassDefine(c) => &mut c.ticks,
            Event::ObjectDefine(o) | Event::Alloc { object: o, .. } => &mut o.ticks,
            Event::MethodEnter(e) => &mut e.ticks,
            Event::MethodLeave(l) => &mut l.ticks,
            Event::ContextEnter(c) => &mut c.ticks,
            Event::ContextLeave { ticks, .. } => ticks,
            Event::Sync(s) => &mut s.ticks,
            Event::Values(v) => &mut v.ticks,
        }
    }

    /// The thread an event happens on, for events that name one.
    pub fn thread(&self) -> Option<ThreadId> {
        match self {
            Event::ThreadStart { thread, .. }
            | Event::ThreadEnd { thread, .. }
            | Event::Alloc { thread, .. } => Some(*thread),
            Event::ThreadDefine(t) => Some(t.id),
            Event::MethodEnter(e) => Some(e.thread),
            Event::MethodLeave(l) => Some(l.thread),
            Event::ContextEnter(c) => Some(c.thread),
            Event::ContextLeave { thread, .. } => Some(*thread),
            Event::Sync(s) => Some(s.thread),
            Event::Values(v) => Some(v.thread),
            _ => None,
        }
    }

    /// Whether the event may lie outside a burst.
    pub fn is_lifecycle(&self) -> bool {
        matches!(self, Event::VmInit { .. } | Event::VmDeath { .. })
    }

    /// Whether the event may belong to a heap dump, which may lie outside a burst: the dump's
    /// own parts and the definitions (and frees) of the classes and objects it names.
    pub fn may_be_dump(&self) -> bool {
        matches!(
            self,
            Event::Heap { .. }
                | Event::ObjectDefine(_)
                | Event::Free { .. }
                | Event::ClassDefine(_)
        )
    }
}

/// How a file ends: its last tick, and the tick rate measured over the whole run, when the
/// format can still write it (JinsightLive patches its header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ending {
    pub ticks: u64,
    pub ticks_per_microsecond: Option<u32>,
}

/// One format's writer: turns the model's events into that format's bytes. The resolver calls
/// [`Sink::enter`] and [`Sink::leave`] for the calls that make up nearly every trace, and
/// [`Sink::event`] for everything else.
pub trait Sink {
    /// Writes one event.
    fn event(&mut self, event: &Event) -> io::Result<()>;

    /// A method entry: the writer's hottest path.
    #[inline]
    fn enter(&mut self, e: Enter) -> io::Result<()> {
        self.event(&Event::MethodEnter(e))
    }

    /// A method exit.
    #[inline]
    fn leave(&mut self, l: Leave) -> io::Result<()> {
        self.event(&Event::MethodLeave(l))
    }

    /// Hands everything written so far to the file.
    fn flush(&mut self) -> io::Result<()>;

    /// Writes what ends the file and flushes it. Nothing may be written after.
    fn finish(&mut self, ending: &Ending) -> io::Result<()>;

    /// Events written (as the format counts them) and bytes, header included.
    fn events(&self) -> u64;
    fn bytes(&self) -> u64;

    /// The most class IDs the format can name: the resolver traces no further classes.
    fn max_classes(&self) -> u32 {
        u32::MAX
    }
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        (**self).event(event)
    }
    #[inline]
    fn enter(&mut self, e: Enter) -> io::Result<()> {
        (**self).enter(e)
    }
    #[inline]
    fn leave(&mut self, l: Leave) -> io::Result<()> {
        (**self).leave(l)
    }
    fn flush(&mut self) -> io::Result<()> {
        (**self).flush()
    }
    fn finish(&mut self, ending: &Ending) -> io::Result<()> {
        (**self).finish(ending)
    }
    fn events(&self) -> u64 {
        (**self).events()
    }
    fn bytes(&self) -> u64 {
        (**self).bytes()
    }
    fn max_classes(&self) -> u32 {
        (**self).max_classes()
    }
}

/// Tests' sink: keeps every event it is given.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Collect(pub Vec<Event>);

#[cfg(test)]
impl Sink for Collect {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        self.0.push(event.clone());
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self, _: &Ending) -> io::Result<()> {
        Ok(())
    }
    fn events(&self) -> u64 {
        self.0.len() as u64
    }
    fn bytes(&self) -> u64 {
        0
    }
}
