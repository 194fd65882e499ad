//! What the agent asks of a burst and of a heap dump beside its records: a burst's scope (the
//! visualizer's settings), a heap walk's findings.

use super::{ClassKey, MethodKey, ThreadKey};

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
