//! The JinsightLive binary trace format (version 8), as IBM's JinsightLive reader loads it
//! (`format=binary`); docs/formats.md tells what the reader and visualizer take of it.
//! `sink.rs` turns model events into these events, `encode.rs` into bytes; `decode.rs` reads
//! the bytes back, `read.rs` turns them into model events, and `check.rs` checks a file.
//!
//! ```text
//! file    := header event* TraceEnd
//! header  := 45 bytes, always little-endian
//!   +0  u8   'b' (0x62)
//!   +1  u32  version = 8
//!   +5  u32  platform       44 linux_x86 (events LE), 55 linux_390 (events BE), ...
//!   +9  u32  numberOfEvents patched at close
//!   +13 u32  maxThreads     patched at close
//!   +17 u32  maxClasses     patched at close
//!   +21 u32  ticksPerMicrosecond
//!   +25 u64  startTicks
//!   +33 u32  vmStartTime          epoch seconds
//!   +37 u32  connectionStartTime  epoch seconds
//!   +41 u32  overhead
//! event   := u8 code, then fields in the platform's byte order; every timed event
//!            carries u64 ticks right after the code. Strings are u16 length + bytes.
//!   4   CLASS_DEFINE        ticks u16 class u32 classObject
//!   110 EXT_EXT_CLASS_LOAD  ticks u16 class u16 size str name
//!                           u16 n (str name str sig u16 access)*n      methods, class-file order
//!                           u16 n (str name str sig u16 access)*n      fields
//!                           u16 superclass u16 n (u16 interface)*n
//!   91  WIDE_METHOD_ENTER   ticks u32 thread u16 class u16 method u32 object u16 line
//!   31  METHOD_LEAVE        ticks u64 overhead u32 thread
//!   92  WIDE_NATIVE_METHOD_ENTER  ticks u32 thread u16 class u16 method u32 object
//!   33  NATIVE_METHOD_LEAVE ticks u32 thread u32 0 u32 0    (a native method's call; the
//!                           visualizer treats them as 91 and 31, with no overhead)
//!   20  OBJECT_DEFINED      ticks u32 object u16 class
//!   21  OBJECT_CREATED      ticks u32 object u16 class u32 thread
//!   24  OBJECT_RECLAIMED    ticks u32 object
//!   22  ARRAY_DEFINED       ticks u8 arrayType u32 object u32 size
//!   5   ARRAY_CLASS_DEFINED ticks u32 object u16 elementClass u32 size
//!   23  ARRAY_CREATED       ticks u8 isArray u32 object u32 size u32 thread
//!   10  THREAD_DEFINE       ticks u32 thread u32 object u16 class str name
//!   11  THREAD_START        ticks u32 thread
//!   12  THREAD_EXIT         ticks u32 thread
//!   70  GC_START            ticks
//!   71  GC_STOP             ticks
//!   78  USER_EVENT          ticks str message
//!   101 BEGIN_BURST         ticks
//!   102 END_BURST           ticks
//!   161 MONITOR_CONTENTION  u8 whileTracing(1) u32 object u32 thread u64 nanoseconds
//!                           (no ticks: a thread waited that long to enter the monitor of
//!                           `object`, summed by IBM's visualizer into its monitor-contention
//!                           columns; written when the thread entered it, monitors=on)
//!   100 TRACE_END           u32 0xDEAD u32 0xDEAD        (no ticks)
//!
//! Values, for the methods the live visualizer's value filters name (right after the entry /
//! right before the leave of the call):
//!   103 ARG_VALUES          ticks u16 class u32 object u32 thread u16 method i16 n value*n
//!   104 FIELD_VALUES_AT_ENTER, 107 FIELD_VALUES_AT_EXIT    the same, the receiver's instance
//!                           fields (or a static method's class's static fields)
//!   105 RETURN_VALUE        ticks u16 class u32 object u32 thread u16 method value
//!   value := u8 tag, then 'B' i8 | 'C' u16 | 'S' i16 | 'I' i32 | 'J' i64 | 'F' f32 | 'D' f64 |
//!            'Z' u8 | 'L' u32 object (0xFFFFFFF7 null, 0xFFFFFFF8 unknown) |
//!            '9' u32 object (0xFFFFFFF8) u32 count u32 offset (0) u16 n (u16 UTF-16 unit)*n
//!
//! Heap dumps (the live visualizer's `dp` and `dr`, `jlive ctl heap` into the trace); they may
//! lie outside a burst, and every object they name is defined before them:
//!   25  OBJECT_REFS         u32 object (u32 referent)* u32 0xFFFFFFFF    (no ticks; what the
//!                           object refers to now, replacing what an earlier dump said)
//!   26  ARRAY_REFS          u32 array u32 n (u32 element)*n              (no ticks)
//!   76  STATIC_ROOT         u16 class (u32 referent)* u32 0xFFFFFFFF     (no ticks; the
//!                           objects the class's static fields refer to)
//!   72 JAVA_STACK_ROOT, 74 JNI_LOCAL_ROOT, 87 THREAD_ROOT, 89 NATIVE_STACK_ROOT
//!                           u32 thread u32 object                       (no ticks)
//!   75 JNI_GLOBAL_ROOT, 85 UNKNOWN_ROOT, 86 STICKY_CLASS_ROOT, 88 MONITOR_ROOT
//!                           u32 object                                  (no ticks)
//!   77  GENERATION          ticks                    (a dump is complete; the visualizer
//!                                                     stops reading and redraws)
//!   160 END_OF_REPORT       u32 events               (no ticks; 0: a request not served)
//! ```
//!
//! The visualizer's other monitor codes (40-44 waits and notifies, 54 sleep, 60-62 monitor
//! enter/block/leave) are names only in its classes: its reader stops at them ("premature
//! EOF"), so jlive writes no waits, notifies, joins, sleeps or starts into JinsightLive files.
//!
//! Class 0 is `java/lang/Object` (its own superclass), class 1 is `java/lang/Thread`; the
//! reader hard-codes both. Object 0xFFFFFFFF means "static call".

pub mod check;
pub mod decode;
pub mod encode;
pub mod read;
pub mod sink;

pub use decode::{DecodeError, Decoder, StreamDecoder};
pub use encode::Encoder;
pub use sink::JinsightSink;

pub const MAGIC: u8 = b'b';
pub const VERSION: u32 = 8;
pub const HEADER_LEN: usize = 45;
/// Byte offset of `numberOfEvents` in the header; the three counts follow it.
pub const COUNTS_OFFSET: u64 = 9;
/// Byte offset of `ticksPerMicrosecond`.
pub const TICKS_PER_US_OFFSET: u64 = 21;

pub const CLASS_DEFINE: u8 = 4;
pub const ARRAY_CLASS_DEFINED: u8 = 5;
pub const THREAD_DEFINE: u8 = 10;
pub const THREAD_START: u8 = 11;
pub const THREAD_EXIT: u8 = 12;
pub const OBJECT_DEFINED: u8 = 20;
pub const OBJECT_CREATED: u8 = 21;
pub const ARRAY_DEFINED: u8 = 22;
pub const ARRAY_CREATED: u8 = 23;
pub const OBJECT_RECLAIMED: u8 = 24;
pub const METHOD_LEAVE: u8 = 31;
pub const GC_START: u8 = 70;
pub const GC_STOP: u8 = 71;
pub const USER_EVENT: u8 = 78;
pub const WIDE_METHOD_ENTER: u8 = 91;
pub const TRACE_END: u8 = 100;
pub const MONITOR_CONTENTION: u8 = 161;
pub const BEGIN_BURST: u8 = 101;
pub const END_BURST: u8 = 102;
pub const EXTENDED_EXTENSIVE_CLASS_LOAD: u8 = 110;
pub const WIDE_NATIVE_METHOD_ENTER: u8 = 92;
pub const NATIVE_METHOD_LEAVE: u8 = 33;
pub const ARG_VALUES: u8 = 103;
pub const RETURN_VALUE: u8 = 105;
pub const FIELD_VALUES_AT_ENTER: u8 = 104;
pub const FIELD_VALUES_AT_EXIT: u8 = 107;

/// The event of a kind of values, and back.
pub fn values_code(kind: crate::model::ValuesKind) -> u8 {
    use crate::model::ValuesKind as K;
    match kind {
        K::Arguments => ARG_VALUES,
        K::Return => RETURN_VALUE,
        K::FieldsAtEnter => FIELD_VALUES_AT_ENTER,
        K::FieldsAtExit => FIELD_VALUES_AT_EXIT,
    }
}

pub fn values_kind(code: u8) -> Option<crate::model::ValuesKind> {
    use crate::model::ValuesKind as K;
    Some(match code {
        ARG_VALUES => K::Arguments,
        RETURN_VALUE => K::Return,
        FIELD_VALUES_AT_ENTER => K::FieldsAtEnter,
        FIELD_VALUES_AT_EXIT => K::FieldsAtExit,
        _ => return None,
    })
}
/// The object IDs of a value that is null, and of one the trace does not name.
pub const NULL_VALUE: u32 = 0xFFFF_FFF7;
pub const UNKNOWN_VALUE: u32 = 0xFFFF_FFF8;
pub const OBJECT_REFS: u8 = 25;
pub const ARRAY_REFS: u8 = 26;
pub const JAVA_STACK_ROOT: u8 = 72;
pub const JNI_LOCAL_ROOT: u8 = 74;
pub const JNI_GLOBAL_ROOT: u8 = 75;
pub const STATIC_ROOT: u8 = 76;
pub const GENERATION: u8 = 77;
pub const UNKNOWN_ROOT: u8 = 85;
pub const STICKY_CLASS_ROOT: u8 = 86;
pub const THREAD_ROOT: u8 = 87;
pub const MONITOR_ROOT: u8 = 88;
pub const NATIVE_STACK_ROOT: u8 = 89;
pub const END_OF_REPORT: u8 = 160;

/// Ends OBJECT_REFS' and STATIC_ROOT's lists.
pub const END_OF_LIST: u32 = 0xFFFF_FFFF;

/// The root events that name a thread.
pub fn root_has_thread(code: u8) -> bool {
    matches!(
        code,
        JAVA_STACK_ROOT | JNI_LOCAL_ROOT | THREAD_ROOT | NATIVE_STACK_ROOT
    )
}

/// The root event of a root kind.
pub fn root_code(kind: crate::model::RootKind) -> u8 {
    use crate::model::RootKind as K;
    match kind {
        K::JniGlobal => JNI_GLOBAL_ROOT,
        K::StickyClass => STICKY_CLASS_ROOT,
        K::Monitor => MONITOR_ROOT,
        K::JavaStack => JAVA_STACK_ROOT,
        K::JniLocal => JNI_LOCAL_ROOT,
        K::Thread => THREAD_ROOT,
        K::NativeStack => NATIVE_STACK_ROOT,
        K::Unknown => UNKNOWN_ROOT,
    }
}

/// The root kind of a root event's code ([`is_root`]).
pub fn root_kind(code: u8) -> crate::model::RootKind {
    use crate::model::RootKind as K;
    match code {
        JNI_GLOBAL_ROOT => K::JniGlobal,
        STICKY_CLASS_ROOT => K::StickyClass,
        MONITOR_ROOT => K::Monitor,
        JAVA_STACK_ROOT => K::JavaStack,
        JNI_LOCAL_ROOT => K::JniLocal,
        THREAD_ROOT => K::Thread,
        NATIVE_STACK_ROOT => K::NativeStack,
        _ => K::Unknown,
    }
}

/// Whether `code` is one of the root events (STATIC_ROOT aside).
pub fn is_root(code: u8) -> bool {
    matches!(
        code,
        JAVA_STACK_ROOT
            | JNI_LOCAL_ROOT
            | JNI_GLOBAL_ROOT
            | UNKNOWN_ROOT
            | STICKY_CLASS_ROOT
            | THREAD_ROOT
            | MONITOR_ROOT
            | NATIVE_STACK_ROOT
    )
}

/// The two words that follow TRACE_END.
pub const TRACE_END_WORD: u32 = 0xDEAD;

pub const CLASS_OBJECT: u16 = 0;
pub const CLASS_THREAD: u16 = 1;
pub const NO_OBJECT: u32 = 0xFFFF_FFFF;

/// Platforms of the header; they decide the byte order of events.
pub const PLATFORM_WIN32_X86: u32 = 11;
pub const PLATFORM_AIX_PPC: u32 = 22;
pub const PLATFORM_OS390: u32 = 33;
pub const PLATFORM_LINUX_X86: u32 = 44;
pub const PLATFORM_LINUX_390: u32 = 55;
pub const PLATFORM_SOLARIS_SPARC: u32 = 66;

/// Platform names accepted by the `platform=` option.
pub const PLATFORM_NAMES: &[(&str, u32)] = &[
    ("win32_x86", PLATFORM_WIN32_X86),
    ("aix_ppc", PLATFORM_AIX_PPC),
    ("os390", PLATFORM_OS390),
    ("linux_x86", PLATFORM_LINUX_X86),
    ("linux_390", PLATFORM_LINUX_390),
    ("solaris_sparc", PLATFORM_SOLARIS_SPARC),
];

/// Byte order of the events after the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    /// The event byte order of a platform, or None for a platform the reader does not know.
    pub fn of_platform(platform: u32) -> Option<Endian> {
        match platform {
            PLATFORM_WIN32_X86 | PLATFORM_LINUX_X86 => Some(Endian::Little),
            PLATFORM_AIX_PPC | PLATFORM_OS390 | PLATFORM_LINUX_390 | PLATFORM_SOLARIS_SPARC => {
                Some(Endian::Big)
            }
            _ => None,
        }
    }
}

/// The platform this machine would report.
pub fn native_platform() -> u32 {
    if cfg!(target_arch = "s390x") {
        PLATFORM_LINUX_390
    } else {
        PLATFORM_LINUX_X86
    }
}

/// JinsightLive's own primitive array types (ARRAY_DEFINED.arrayType).
pub fn array_type_of(descriptor: u8) -> Option<u8> {
    Some(match descriptor {
        b'I' => 1,
        b'J' => 2,
        b'F' => 3,
        b'D' => 4,
        b'Z' => 5,
        b'B' => 6,
        b'C' => 7,
        b'S' => 8,
        _ => return None,
    })
}

/// Name of a JinsightLive primitive array type.
pub fn array_type_name(array_type: u8) -> &'static str {
    match array_type {
        1 => "int_array",
        2 => "long_array",
        3 => "float_array",
        4 => "double_array",
        5 => "boolean_array",
        6 => "byte_array",
        7 => "char_array",
        8 => "short_array",
        _ => "unknown_array",
    }
}

/// The fixed 45-byte file header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub version: u32,
    pub platform: u32,
    pub number_of_events: u32,
    pub max_threads: u32,
    pub max_classes: u32,
    pub ticks_per_microsecond: u32,
    pub start_ticks: u64,
    pub vm_start_time: u32,
    pub connection_start_time: u32,
    pub overhead: u32,
}

/// A method or field in a class load: name, signature, access flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberDef {
    pub name: String,
    pub signature: String,
    pub access: u16,
}

/// EXTENDED_EXTENSIVE_CLASS_LOAD.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassLoad {
    pub ticks: u64,
    pub class: u16,
    pub size: u16,
    pub name: String,
    pub methods: Vec<MemberDef>,
    pub fields: Vec<MemberDef>,
    pub superclass: u16,
    pub interfaces: Vec<u16>,
}

/// One JinsightLive event, as written and as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    ClassDefine {
        ticks: u64,
        class: u16,
        class_object: u32,
    },
    ClassLoad(Box<ClassLoad>),
    MethodEnter {
        ticks: u64,
        thread: u32,
        class: u16,
        method: u16,
        object: u32,
        line: u16,
    },
    MethodLeave {
        ticks: u64,
        overhead: u64,
        thread: u32,
    },
    NativeMethodEnter {
        ticks: u64,
        thread: u32,
        class: u16,
        method: u16,
        object: u32,
    },
    NativeMethodLeave {
        ticks: u64,
        thread: u32,
    },
    ObjectDefined {
        ticks: u64,
        object: u32,
        class: u16,
    },
    ObjectCreated {
        ticks: u64,
        object: u32,
        class: u16,
        thread: u32,
    },
    ObjectReclaimed {
        ticks: u64,
        object: u32,
    },
    ArrayDefined {
        ticks: u64,
        array_type: u8,
        object: u32,
        size: u32,
    },
    ArrayClassDefined {
        ticks: u64,
        object: u32,
        class: u16,
        size: u32,
    },
    ArrayCreated {
        ticks: u64,
        is_array: u8,
        object: u32,
        size: u32,
        thread: u32,
    },
    ThreadDefine {
        ticks: u64,
        thread: u32,
        object: u32,
        class: u16,
        name: String,
    },
    ThreadStart {
        ticks: u64,
        thread: u32,
    },
    ThreadExit {
        ticks: u64,
        thread: u32,
    },
    GcStart {
        ticks: u64,
    },
    GcStop {
        ticks: u64,
    },
    UserEvent {
        ticks: u64,
        message: String,
    },
    BeginBurst {
        ticks: u64,
    },
    EndBurst {
        ticks: u64,
    },
    TraceEnd {
        first: u32,
        second: u32,
    },
    /// Untimed: how long `thread` waited to enter the monitor of `object`.
    MonitorContention {
        while_tracing: u8,
        object: u32,
        thread: u32,
        nanoseconds: u64,
    },
    /// A call's arguments (103), fields (104, 107) or return value (105, one value).
    Values {
        ticks: u64,
        kind: crate::model::ValuesKind,
        class: u16,
        object: u32,
        thread: u32,
        method: u16,
        values: Vec<crate::model::Value>,
    },
    /// Untimed: what `object` refers to now.
    ObjectRefs {
        object: u32,
        to: Vec<u32>,
    },
    /// Untimed: an array's non-null elements.
    ArrayRefs {
        array: u32,
        to: Vec<u32>,
    },
    /// Untimed: what a class's static fields refer to.
    StaticRoot {
        class: u16,
        to: Vec<u32>,
    },
    /// Untimed: a GC root of kind `code` ([`is_root`]); `thread` where the kind names one.
    Root {
        code: u8,
        thread: u32,
        object: u32,
    },
    Generation {
        ticks: u64,
    },
    /// Untimed: a live answer of `events` events is complete.
    EndOfReport {
        events: u32,
    },
}

impl Event {
    /// The event's code byte.
    pub fn code(&self) -> u8 {
        match self {
            Event::ClassDefine { .. } => CLASS_DEFINE,
            Event::ClassLoad(_) => EXTENDED_EXTENSIVE_CLASS_LOAD,
            Event::MethodEnter { .. } => WIDE_METHOD_ENTER,
            Event::MethodLeave { .. } => METHOD_LEAVE,
            Event::NativeMethodEnter { .. } => WIDE_NATIVE_METHOD_ENTER,
            Event::NativeMethodLeave { .. } => NATIVE_METHOD_LEAVE,
            Event::ObjectDefined { .. } => OBJECT_DEFINED,
            Event::ObjectCreated { .. } => OBJECT_CREATED,
            Event::ObjectReclaimed { .. } => OBJECT_RECLAIMED,
            Event::ArrayDefined { .. } => ARRAY_DEFINED,
            Event::ArrayClassDefined { .. } => ARRAY_CLASS_DEFINED,
            Event::ArrayCreated { .. } => ARRAY_CREATED,
            Event::ThreadDefine { .. } => THREAD_DEFINE,
            Event::ThreadStart { .. } => THREAD_START,
            Event::ThreadExit { .. } => THREAD_EXIT,
            Event::GcStart { .. } => GC_START,
            Event::GcStop { .. } => GC_STOP,
            Event::UserEvent { .. } => USER_EVENT,
            Event::BeginBurst { .. } => BEGIN_BURST,
            Event::EndBurst { .. } => END_BURST,
            Event::TraceEnd { .. } => TRACE_END,
            Event::MonitorContention { .. } => MONITOR_CONTENTION,
            Event::Values { kind, .. } => values_code(*kind),
            Event::ObjectRefs { .. } => OBJECT_REFS,
            Event::ArrayRefs { .. } => ARRAY_REFS,
            Event::StaticRoot { .. } => STATIC_ROOT,
            Event::Root { code, .. } => *code,
            Event::Generation { .. } => GENERATION,
            Event::EndOfReport { .. } => END_OF_REPORT,
        }
    }

    /// The event's name, as `jlive dump` prints it.
    pub fn name(&self) -> &'static str {
        code_name(self.code())
    }

    /// The event's ticks, when it has any.
    pub fn ticks(&self) -> Option<u64> {
        Some(match self {
            Event::ClassDefine { ticks, .. }
            | Event::MethodEnter { ticks, .. }
            | Event::MethodLeave { ticks, .. }
            | Event::NativeMethodEnter { ticks, .. }
            | Event::NativeMethodLeave { ticks, .. }
            | Event::ObjectDefined { ticks, .. }
            | Event::ObjectCreated { ticks, .. }
            | Event::ObjectReclaimed { ticks, .. }
            | Event::ArrayDefined { ticks, .. }
            | Event::ArrayClassDefined { ticks, .. }
            | Event::ArrayCreated { ticks, .. }
            | Event::ThreadDefine { ticks, .. }
            | Event::ThreadStart { ticks, .. }
            | Event::ThreadExit { ticks, .. }
            | Event::GcStart { ticks }
            | Event::GcStop { ticks }
            | Event::UserEvent { ticks, .. }
            | Event::BeginBurst { ticks }
            | Event::EndBurst { ticks }
            | Event::Values { ticks, .. }
            | Event::Generation { ticks } => *ticks,
            Event::ClassLoad(load) => load.ticks,
            Event::TraceEnd { .. }
            | Event::MonitorContention { .. }
            | Event::ObjectRefs { .. }
            | Event::ArrayRefs { .. }
            | Event::StaticRoot { .. }
            | Event::Root { .. }
            | Event::EndOfReport { .. } => return None,
        })
    }

    /// The thread an event happens on, for events that name one.
    pub fn thread(&self) -> Option<u32> {
        match self {
            Event::MethodEnter { thread, .. }
            | Event::MethodLeave { thread, .. }
            | Event::NativeMethodEnter { thread, .. }
            | Event::NativeMethodLeave { thread, .. }
            | Event::Values { thread, .. }
            | Event::ObjectCreated { thread, .. }
            | Event::ArrayCreated { thread, .. }
            | Event::ThreadStart { thread, .. }
            | Event::ThreadExit { thread, .. }
            | Event::MonitorContention { thread, .. } => Some(*thread),
            _ => None,
        }
    }
}

/// Name of an event code (those jlive writes), or "UNKNOWN".
pub fn code_name(code: u8) -> &'static str {
    match code {
        CLASS_DEFINE => "CLASS_DEFINE",
        EXTENDED_EXTENSIVE_CLASS_LOAD => "CLASS_LOAD",
        WIDE_METHOD_ENTER => "METHOD_ENTER",
        METHOD_LEAVE => "METHOD_LEAVE",
        WIDE_NATIVE_METHOD_ENTER => "NATIVE_METHOD_ENTER",
        NATIVE_METHOD_LEAVE => "NATIVE_METHOD_LEAVE",
        OBJECT_DEFINED => "OBJECT_DEFINED",
        OBJECT_CREATED => "OBJECT_CREATED",
        OBJECT_RECLAIMED => "OBJECT_RECLAIMED",
        ARRAY_DEFINED => "ARRAY_DEFINED",
        ARRAY_CLASS_DEFINED => "ARRAY_CLASS_DEFINED",
        ARRAY_CREATED => "ARRAY_CREATED",
        THREAD_DEFINE => "THREAD_DEFINE",
        THREAD_START => "THREAD_START",
        THREAD_EXIT => "THREAD_EXIT",
        GC_START => "GC_START",
        GC_STOP => "GC_STOP",
        USER_EVENT => "USER_EVENT",
        BEGIN_BURST => "BEGIN_BURST",
        END_BURST => "END_BURST",
        TRACE_END => "TRACE_END",
        MONITOR_CONTENTION => "MONITOR_CONTENTION",
        ARG_VALUES => "ARG_VALUES",
        RETURN_VALUE => "RETURN_VALUE",
        FIELD_VALUES_AT_ENTER => "FIELD_VALUES_AT_ENTER",
        FIELD_VALUES_AT_EXIT => "FIELD_VALUES_AT_EXIT",
        OBJECT_REFS => "OBJECT_REFS",
        ARRAY_REFS => "ARRAY_REFS",
        STATIC_ROOT => "STATIC_ROOT",
        JAVA_STACK_ROOT => "JAVA_STACK_ROOT",
        JNI_LOCAL_ROOT => "JNI_LOCAL_ROOT",
        JNI_GLOBAL_ROOT => "JNI_GLOBAL_ROOT",
        UNKNOWN_ROOT => "UNKNOWN_ROOT",
        STICKY_CLASS_ROOT => "STICKY_CLASS_ROOT",
        THREAD_ROOT => "THREAD_ROOT",
        MONITOR_ROOT => "MONITOR_ROOT",
        NATIVE_STACK_ROOT => "NATIVE_STACK_ROOT",
        GENERATION => "GENERATION",
        END_OF_REPORT => "END_OF_REPORT",
        _ => "UNKNOWN",
    }
}
