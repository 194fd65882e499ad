//! A user trace library's side of the wire: VA/Java's tracing-VM structures as a C compiler
//! lays them out on LP64 (`unsigned long` = 64 bits), the five entry points jlive calls, and
//! `InstrumentSupportCurrentThreadDetails`, which the library calls back. The C headers are
//! examples/trace/include/itrccnst.h and itrcstrt.h; the two must agree (tests build against
//! them). `entry/natives.rs` exports the function itself.
//!
//! ```text
//! struct InsEventInfo                       offset
//!   header.event      unsigned long         0     InsTrcEvent* code
//!   header.vmID       unsigned long         8
//!   eventBody         union                 16    one of the structures below, by event
//!     method:    flags, stackDepth, receiver, methodName*, methodNameSize,
//!                className*, classNameSize                               (56 bytes)
//!     allocate:  oid, sizeInLongs, arrayFlag,
//!                object { allocEventFlags, className*, classNameSize }
//!              | array  { className*, classNameSize, arity }              (48 bytes)
//!     startFieldReport: oid, type, reportEventFlags, className*, classNameSize
//!     fieldReport / oidDelete: oid;  userEvent: msgEventFlags, msg*, msgSize
//!     oidRename: source, destination; oidRangeRename: start, end, destination;
//!     oidRangeDelete: start, end
//! ```
//! Strings are UTF-8 (never the wide form), not NUL-terminated, valid during the call only.

use std::ffi::{c_char, c_long, c_ulong};

/// Event codes (itrccnst.h).
pub mod event {
    pub const METHOD_ENTER: u64 = 1;
    pub const METHOD_LEAVE: u64 = 2;
    pub const SCAVENGE_START: u64 = 3;
    pub const SCAVENGE_END: u64 = 4;
    pub const GGC_START: u64 = 5;
    pub const GGC_END: u64 = 6;
    #[allow(dead_code)] // never sent: an object's ID never changes (`plugin/mod.rs`)
    pub const OID_RENAME: u64 = 7;
    #[allow(dead_code)] // never sent: an object's ID never changes (`plugin/mod.rs`)
    pub const OID_RANGE_RENAME: u64 = 8;
    pub const OID_DELETE: u64 = 9;
    #[allow(dead_code)] // never sent: an object's ID never changes (`plugin/mod.rs`)
    pub const OID_RANGE_DELETE: u64 = 10;
    pub const ALLOCATE: u64 = 11;
    pub const START_FIELD_REPORT: u64 = 12;
    pub const FIELD_REPORT: u64 = 13;
    pub const END_FIELD_REPORT: u64 = 14;
    pub const USER_EVENT: u64 = 15;
}

/// InstrumentMethodEvent* flags.
pub const METHOD_STATIC: u64 = 0x4;
pub const METHOD_NATIVE: u64 = 0x8;
pub const METHOD_SYNC: u64 = 0x10;
/// InstrumentFREventType*.
pub const FR_JAVA: u64 = 0;
pub const FR_JAVA_ARRAY: u64 = 1;
pub const FR_JAVA_CLASS: u64 = 2;

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct EventHeader {
    pub event: c_ulong,
    pub vm_id: c_ulong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct MethodBody {
    pub flags: c_ulong,
    pub stack_depth: c_ulong,
    pub receiver: c_ulong,
    pub method_name: *const c_char,
    pub method_name_size: c_ulong,
    pub class_name: *const c_char,
    pub class_name_size: c_ulong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct AllocObject {
    pub flags: c_ulong,
    pub class_name: *const c_char,
    pub class_name_size: c_ulong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct AllocArray {
    pub class_name: *const c_char,
    pub class_name_size: c_ulong,
    pub arity: c_ulong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union AllocUnion {
    pub object: AllocObject,
    pub array: AllocArray,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct AllocBody {
    pub oid: c_ulong,
    pub size_in_longs: c_ulong,
    pub array_flag: c_ulong,
    pub body: AllocUnion,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct StartFieldReportBody {
    pub oid: c_ulong,
    pub kind: c_ulong,
    pub flags: c_ulong,
    pub class_name: *const c_char,
    pub class_name_size: c_ulong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct UserEventBody {
    pub flags: c_ulong,
    pub msg: *const c_char,
    pub msg_size: c_ulong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub union EventBody {
    pub method: MethodBody,
    pub allocate: AllocBody,
    pub start_field_report: StartFieldReportBody,
    /// FieldReport, OIDDelete.
    pub oid: c_ulong,
    pub user_event: UserEventBody,
    /// Room for the largest member, zeroed for the events without a body (GC).
    pub words: [c_ulong; 7],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventInfo {
    pub header: EventHeader,
    pub body: EventBody,
}

impl EventInfo {
    /// An event with an all-zero body.
    fn new(event: u64, vm_id: u64) -> EventInfo {
        EventInfo {
            header: EventHeader { event, vm_id },
            body: EventBody { words: [0; 7] },
        }
    }
}

/// A pointer and length for a string field (NULL and 0 for an empty one).
fn text(s: &[u8]) -> (*const c_char, c_ulong) {
    if s.is_empty() {
        (std::ptr::null(), 0)
    } else {
        (s.as_ptr() as *const c_char, s.len() as c_ulong)
    }
}

/// One event for a library, its strings borrowed for the call (UTF-8, dotted class names).
pub enum Event<'a> {
    Method {
        enter: bool,
        flags: u64,
        depth: u64,
        receiver: u64,
        method: &'a [u8],
        class: &'a [u8],
    },
    /// `arity` 0: an object of `class`; else an array of `arity` dimensions of `class`.
    Allocate {
        oid: u64,
        words: u64,
        class: &'a [u8],
        arity: u64,
    },
    /// One of the collection codes (ScavengeStart ... GGCEnd): no body.
    Collection(u64),
    OidDelete(u64),
    StartFieldReport {
        oid: u64,
        kind: u64,
        class: &'a [u8],
    },
    FieldReport(u64),
    EndFieldReport(u64),
    User(&'a [u8]),
}

impl Event<'_> {
    /// The structure of itrcstrt.h, pointing into this event's strings.
    fn info(&self, vm_id: u64) -> EventInfo {
        match *self {
            Event::Method {
                enter,
                flags,
                depth,
                receiver,
                method,
                class,
            } => {
                let code = if enter {
                    event::METHOD_ENTER
                } else {
                    event::METHOD_LEAVE
                };
                let mut e = EventInfo::new(code, vm_id);
                let (method_name, method_name_size) = text(method);
                let (class_name, class_name_size) = text(class);
                e.body.method = MethodBody {
                    flags,
                    stack_depth: depth,
                    receiver,
                    method_name,
                    method_name_size,
                    class_name,
                    class_name_size,
                };
                e
            }
            Event::Allocate {
                oid,
                words,
                class,
                arity,
            } => {
                let mut e = EventInfo::new(event::ALLOCATE, vm_id);
                let (class_name, class_name_size) = text(class);
                e.body.allocate = AllocBody {
                    oid,
                    size_in_longs: words,
                    array_flag: u64::from(arity > 0),
                    body: if arity == 0 {
                        AllocUnion {
                            object: AllocObject {
                                flags: 0,
                                class_name,
                                class_name_size,
                            },
                        }
                    } else {
                        AllocUnion {
                            array: AllocArray {
                                class_name,
                                class_name_size,
                                arity,
                            },
                        }
                    },
                };
                e
            }
            Event::Collection(code) => EventInfo::new(code, vm_id),
            Event::OidDelete(oid) => {
                let mut e = EventInfo::new(event::OID_DELETE, vm_id);
                e.body.oid = oid;
                e
            }
            Event::StartFieldReport { oid, kind, class } => {
                let mut e = EventInfo::new(event::START_FIELD_REPORT, vm_id);
                let (class_name, class_name_size) = text(class);
                e.body.start_field_report = StartFieldReportBody {
                    oid,
                    kind,
                    flags: 0,
                    class_name,
                    class_name_size,
                };
                e
            }
            Event::FieldReport(oid) => {
                let mut e = EventInfo::new(event::FIELD_REPORT, vm_id);
                e.body.oid = oid;
                e
            }
            Event::EndFieldReport(oid) => {
                let mut e = EventInfo::new(event::END_FIELD_REPORT, vm_id);
                e.body.oid = oid;
                e
            }
            Event::User(msg) => {
                let mut e = EventInfo::new(event::USER_EVENT, vm_id);
                let (msg, msg_size) = text(msg);
                e.body.user_event = UserEventBody {
                    flags: 0,
                    msg,
                    msg_size,
                };
                e
            }
        }
    }
}

type StartupFn = unsafe extern "C" fn(c_ulong) -> c_ulong;
type BeginFn = unsafe extern "C" fn(c_ulong, c_ulong) -> c_ulong;
type NoArgFn = unsafe extern "C" fn() -> c_ulong;
type EventFn = unsafe extern "C" fn(*mut EventInfo) -> c_ulong;

/// A loaded user trace library with its five entry points. It is never unloaded: a thread
/// may still be inside it when tracing is shut down.
pub struct Library {
    startup: StartupFn,
    shutdown: NoArgFn,
    begin: BeginFn,
    end: NoArgFn,
    event: EventFn,
    _library: libloading::Library,
}

/// The entry points by name; VA/Java's section 4 also spells them `InstrumentTracing*`.
const ENTRY_POINTS: [[&str; 2]; 5] = [
    ["InstrumentTraceStartup", "InstrumentTracingStartup"],
    ["InstrumentTraceShutdown", "InstrumentTracingShutdown"],
    ["InstrumentTraceBegin", "InstrumentTracingBegin"],
    ["InstrumentTraceEnd", "InstrumentTracingEnd"],
    ["InstrumentTraceEvent", "InstrumentTracingEvent"],
];

impl Library {
    /// Opens the library at `path` (a bare file name is searched as dlopen searches) and finds
    /// every entry point; the error names what is missing.
    pub fn open(path: &str) -> Result<Library, String> {
        // SAFETY: loading runs the library's initialisers; choosing to load it is the user's
        // (plugin= or tracingStartup), as it was in the tracing VM.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
        let mut found = [std::ptr::null_mut::<std::ffi::c_void>(); 5];
        let mut missing = Vec::new();
        for (slot, names) in found.iter_mut().zip(ENTRY_POINTS) {
            for name in names {
                // SAFETY: only the symbol's address is read here; it is typed below.
                let symbol = unsafe { library.get::<*mut std::ffi::c_void>(name.as_bytes()) }.ok();
                if let Some(symbol) = symbol.map(|s| *s).filter(|p| !p.is_null()) {
                    *slot = symbol;
                    break;
                }
            }
            if slot.is_null() {
                missing.push(names[0]);
            }
        }
        if !missing.is_empty() {
            return Err(format!("it does not export {}", missing.join(", ")));
        }
        // SAFETY: each address is the library's exported function of that name, whose C
        // signature VA/Java's document fixes (section 5); all five are non-null (checked).
        unsafe {
            Ok(Library {
                startup: std::mem::transmute::<*mut std::ffi::c_void, StartupFn>(found[0]),
                shutdown: std::mem::transmute::<*mut std::ffi::c_void, NoArgFn>(found[1]),
                begin: std::mem::transmute::<*mut std::ffi::c_void, BeginFn>(found[2]),
                end: std::mem::transmute::<*mut std::ffi::c_void, NoArgFn>(found[3]),
                event: std::mem::transmute::<*mut std::ffi::c_void, EventFn>(found[4]),
                _library: library,
            })
        }
    }

    pub fn startup(&self, vm_id: u64) -> u64 {
        // SAFETY: the library's InstrumentTraceStartup (open).
        unsafe { (self.startup)(vm_id) }
    }

    pub fn shutdown(&self) -> u64 {
        // SAFETY: the library's InstrumentTraceShutdown (open).
        unsafe { (self.shutdown)() }
    }

    pub fn begin(&self, vm_id: u64, flags: u64) -> u64 {
        // SAFETY: the library's InstrumentTraceBegin (open).
        unsafe { (self.begin)(vm_id, flags) }
    }

    pub fn end(&self) -> u64 {
        // SAFETY: the library's InstrumentTraceEnd (open).
        unsafe { (self.end)() }
    }

    /// Hands one event to the library.
    pub fn event(&self, vm_id: u64, e: &Event<'_>) -> u64 {
        let mut info = e.info(vm_id);
        // SAFETY: the library's InstrumentTraceEvent (open), given a structure laid out as
        // itrcstrt.h says, whose string pointers borrow from `e`, alive for the call.
        unsafe { (self.event)(&mut info) }
    }
}

/// Where one answer of `InstrumentSupportCurrentThreadDetails` lives until the thread's next
/// call (the library keeps the pointers, as it did in the tracing VM).
#[derive(Default)]
struct Details {
    name: Vec<u8>,
    group: Vec<u8>,
}

thread_local! {
    /// Boxed: a thread-local's room in the static TLS reserve is scarce (ARCHITECTURE.md).
    static DETAILS: std::cell::RefCell<Box<Details>> = std::cell::RefCell::new(Box::default());
}

/// Where `InstrumentSupportCurrentThreadDetails` writes its answer: the caller's variables
/// (or null, to be skipped).
pub struct DetailsOut {
    pub flags: *mut c_ulong,
    pub name: *mut *mut c_char,
    pub name_length: *mut c_ulong,
    pub priority: *mut c_long,
    pub group_name: *mut *mut c_char,
    pub group_name_length: *mut c_ulong,
}

/// The answer of VA/Java's support-library function `InstrumentSupportCurrentThreadDetails`
/// (exported by `entry/natives.rs`): `details` (the current thread's name, priority and
/// thread group name) written where the library asked. Output pointers the caller passes as
/// NULL are skipped; 0 is success.
///
/// # Safety
/// Each non-null pointer of `out` must be valid for a write of its type (C callers: the
/// addresses of their variables).
pub unsafe fn thread_details(
    details: impl FnOnce() -> (String, i32, String),
    out: DetailsOut,
) -> c_ulong {
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (n, p, g) = details();
        DETAILS.with(|d| {
            let mut d = d.borrow_mut();
            d.name = n.into_bytes();
            d.group = g.into_bytes();
            // NUL-terminated too, for libraries that print them with %s.
            d.name.push(0);
            d.group.push(0);
            let name_len = (d.name.len() - 1) as c_ulong;
            let group_len = (d.group.len() - 1) as c_ulong;
            (
                d.name.as_mut_ptr() as *mut c_char,
                name_len,
                p,
                d.group.as_mut_ptr() as *mut c_char,
                group_len,
            )
        })
    }));
    let Ok((n, nl, p, g, gl)) = answer else {
        return 1;
    };
    // SAFETY: each pointer is the caller's out-parameter, written only when non-null; a
    // library passing a dangling one breaks the function's contract.
    unsafe {
        if !out.flags.is_null() {
            *out.flags = 0;
        }
        if !out.name.is_null() {
            *out.name = n;
        }
        if !out.name_length.is_null() {
            *out.name_length = nl;
        }
        if !out.priority.is_null() {
            *out.priority = p as c_long;
        }
        if !out.group_name.is_null() {
            *out.group_name = g;
        }
        if !out.group_name_length.is_null() {
            *out.group_name_length = gl;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structures_have_the_c_layout_of_itrcstrt_h() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<EventHeader>(), 16);
        assert_eq!(size_of::<MethodBody>(), 56);
        assert_eq!(size_of::<AllocBody>(), 48);
        assert_eq!(offset_of!(AllocBody, body), 24);
        assert_eq!(size_of::<StartFieldReportBody>(), 40);
        assert_eq!(size_of::<EventInfo>(), 72);
        assert_eq!(offset_of!(EventInfo, body), 16);
    }
}
