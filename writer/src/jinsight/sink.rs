//! Model events → JinsightLive events (`format=binary`). Most map one to one; a class is
//! CLASS_DEFINE then CLASS_LOAD, an allocation OBJECT_DEFINED then OBJECT_CREATED (or their
//! array forms). VM start and death have no JinsightLive event and are not written.

use super::*;
use crate::model::{self, Element, Ending, Enter, Leave, ObjectDef, Sink, TraceInfo};
use std::io::{self, Seek, Write};

/// Class IDs are 16 bits and 0xFFFF is the reader's null class.
pub const MAX_CLASSES: u32 = 0xFFFF;

/// Writes a JinsightLive file whose events are big-endian when `BIG` (platforms 22, 33, 55
/// and 66) and little-endian otherwise: the byte order is part of the type, so that the
/// writer's loop does not ask it for every call (3.5 against 3.1 ns per event).
pub struct JinsightSink<W: Write + Seek, const BIG: bool = false> {
    encoder: Encoder<W>,
    /// Highest thread ID and class ID + 1 defined: the header's maxThreads and maxClasses.
    threads: u32,
    classes: u32,
    finished: bool,
    /// Each thread's open contended enter: (monitor object ID, ticks).
    contended: std::collections::HashMap<u32, (u32, u64)>,
    ticks_per_microsecond: u64,
    /// By class ID, which methods are native (None: the class has none): their calls are
    /// WIDE_NATIVE_METHOD_ENTER and NATIVE_METHOD_LEAVE.
    natives: Vec<Option<Box<[bool]>>>,
}

/// The header of a file about to be written (its counts are patched at close).
pub fn header(info: &TraceInfo, platform: Option<u32>) -> Header {
    let epoch = (info.origin_ns / 1_000_000_000) as u32;
    Header {
        version: VERSION,
        platform: platform.unwrap_or_else(native_platform),
        max_threads: 256,
        max_classes: 65536 - 20000,
        ticks_per_microsecond: info.ticks_per_microsecond,
        start_ticks: info.start_ticks,
        vm_start_time: epoch,
        connection_start_time: epoch,
        ..Header::default()
    }
}

/// Whether the events of `platform` (None: this machine's) are big-endian.
pub fn big_endian(platform: Option<u32>) -> bool {
    Endian::of_platform(platform.unwrap_or_else(native_platform)) == Some(Endian::Big)
}

impl<W: Write + Seek, const BIG: bool> JinsightSink<W, BIG> {
    /// Starts a file for the run `info` describes, on `platform` (None: this machine's),
    /// whose byte order must be `BIG`'s ([`big_endian`]).
    pub fn new(out: W, info: &TraceInfo, platform: Option<u32>) -> io::Result<Self> {
        if big_endian(platform) != BIG {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the platform's byte order is not the sink's",
            ));
        }
        Ok(JinsightSink {
            encoder: Encoder::new(out, &header(info, platform))?,
            threads: 0,
            classes: 2,
            finished: false,
            contended: std::collections::HashMap::new(),
            ticks_per_microsecond: u64::from(info.ticks_per_microsecond.max(1)),
            natives: Vec::new(),
        })
    }

    /// monitors=on: a contended enter is remembered; its entered becomes MONITOR_CONTENTION
    /// with the time between them (the one monitor event IBM's reader loads). Other
    /// concurrency events have no JinsightLive form the reader takes (module comment).
    fn contention(&mut self, s: &model::Sync) -> Option<Event> {
        match s.kind {
            // A Class object's monitor (static synchronized) has no object ID: not written.
            model::SyncKind::ContendedEnter if s.object_id == model::NO_OBJECT => {
                self.contended.remove(&s.thread);
                None
            }
            model::SyncKind::ContendedEnter => {
                self.contended.insert(s.thread, (s.object_id, s.ticks));
                None
            }
            model::SyncKind::ContendedEntered => {
                let (object, since) = self.contended.remove(&s.thread)?;
                let ticks = u128::from(s.ticks.saturating_sub(since));
                let nanoseconds = ticks * 1000 / u128::from(self.ticks_per_microsecond);
                Some(Event::MonitorContention {
                    while_tracing: 1,
                    object,
                    thread: s.thread,
                    nanoseconds: nanoseconds as u64,
                })
            }
            _ => None,
        }
    }

    #[inline(always)]
    fn is_native(&self, m: model::MethodId) -> bool {
        match self.natives.get(m.class as usize) {
            Some(Some(methods)) => methods.get(usize::from(m.index)) == Some(&true),
            _ => false,
        }
    }

    #[cold]
    fn native_enter(&mut self, e: Enter) -> io::Result<()> {
        self.encoder.write(&Event::NativeMethodEnter {
            ticks: e.ticks,
            thread: e.thread,
            class: e.method.class as u16,
            method: e.method.index,
            object: e.object,
        })
    }

    /// NATIVE_METHOD_LEAVE has no room for the agent's overhead.
    #[cold]
    fn native_leave(&mut self, l: Leave) -> io::Result<()> {
        self.encoder.write(&Event::NativeMethodLeave {
            ticks: l.ticks,
            thread: l.thread,
        })
    }

    /// The underlying writer, once the file is finished.
    pub fn into_inner(self) -> W {
        self.encoder.into_inner()
    }

    fn object_defined(&mut self, o: &ObjectDef) -> io::Result<()> {
        let event = match o.array {
            None => Event::ObjectDefined {
                ticks: o.ticks,
                object: o.object,
                class: o.class as u16,
            },
            Some(a) => match a.element {
                Element::Primitive(d) => Event::ArrayDefined {
                    ticks: o.ticks,
                    array_type: array_type_of(d).unwrap_or(1),
                    object: o.object,
                    size: a.length,
                },
                Element::Class(element) => Event::ArrayClassDefined {
                    ticks: o.ticks,
                    object: o.object,
                    class: element as u16,
                    size: a.length,
                },
            },
        };
        self.encoder.write(&event)
    }

    fn created(&mut self, thread: u32, o: &ObjectDef) -> io::Result<()> {
        let event = match o.array {
            None => Event::ObjectCreated {
                ticks: o.ticks,
                object: o.object,
                class: o.class as u16,
                thread,
            },
            Some(a) => Event::ArrayCreated {
                ticks: o.ticks,
                is_array: a.element.jvmpi_is_array(),
                object: o.object,
                size: a.length,
                thread,
            },
        };
        self.encoder.write(&event)
    }
}

/// The text of a USER_EVENT as the visualizer reads it: it takes a text that begins with `r`
/// for a burst's end and one that begins with `p` for a burst's beginning, and an empty one
/// stops its reader; such texts get a leading space.
fn user_text(text: &str) -> String {
    if text.is_empty() || text.starts_with(['r', 'p']) {
        format!(" {}", text)
    } else {
        text.to_string()
    }
}

/// A heap dump's part as its JinsightLive event.
fn heap_event(ticks: u64, part: &model::HeapPart) -> Event {
    use model::HeapPart as H;
    match part {
        H::Refs {
            object,
            array: false,
            to,
        } => Event::ObjectRefs {
            object: *object,
            to: to.clone(),
        },
        H::Refs { object, to, .. } => Event::ArrayRefs {
            array: *object,
            to: to.clone(),
        },
        H::Statics { class, to } => Event::StaticRoot {
            class: *class as u16,
            to: to.clone(),
        },
        // A root whose thread is not known is an unknown root: the others need their thread.
        H::Root {
            kind,
            thread,
            object,
        } => match (kind.has_thread(), thread) {
            (true, None) => Event::Root {
                code: UNKNOWN_ROOT,
                thread: 0,
                object: *object,
            },
            _ => Event::Root {
                code: root_code(*kind),
                thread: thread.unwrap_or(0),
                object: *object,
            },
        },
        H::Generation => Event::Generation { ticks },
        H::EndOfReport { events } => Event::EndOfReport { events: *events },
    }
}

fn members<'a>(list: impl Iterator<Item = (&'a String, &'a String, u16)>) -> Vec<MemberDef> {
    list.map(|(name, signature, access)| MemberDef {
        name: name.clone(),
        signature: signature.clone(),
        access,
    })
    .collect()
}

impl<W: Write + Seek, const BIG: bool> Sink for JinsightSink<W, BIG> {
    fn event(&mut self, event: &model::Event) -> io::Result<()> {
        use model::Event as M;
        let e = match event {
            M::VmInit { .. } | M::VmDeath { .. } => return Ok(()),
            M::Sync(s) => match self.contention(s) {
                Some(e) => e,
                None => return Ok(()),
            },
            M::ContextEnter(_) | M::ContextLeave { .. } => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "JinsightLive has no form for calling-context trees (record=tree): write TPTP (format=tptp or tptp-xml)",
                ))
            }
            M::BurstBegin { ticks, .. } => {
                self.contended.clear();
                Event::BeginBurst { ticks: *ticks }
            }
            M::BurstEnd { ticks, .. } => Event::EndBurst { ticks: *ticks },
            M::ThreadDefine(t) => {
                self.threads = self.threads.max(t.id);
                Event::ThreadDefine {
                    ticks: t.ticks,
                    thread: t.id,
                    object: 0,
                    class: CLASS_THREAD,
                    name: t.name.clone(),
                }
            }
            M::ThreadStart { ticks, thread } => Event::ThreadStart {
                ticks: *ticks,
                thread: *thread,
            },
            M::ThreadEnd { ticks, thread } => Event::ThreadExit {
                ticks: *ticks,
                thread: *thread,
            },
            M::ClassDefine(c) => {
                let class = c.id as u16;
                self.classes = self.classes.max(c.id + 1);
                let native = |m: &model::MethodDef| m.access & model::access::NATIVE != 0;
                let at = c.id as usize;
                if c.methods.iter().any(native) {
                    if self.natives.len() <= at {
                        self.natives.resize(at + 1, None);
                    }
                    self.natives[at] = Some(c.methods.iter().map(native).collect());
                } else if let Some(slot) = self.natives.get_mut(at) {
                    *slot = None;
                }
                self.encoder.write(&Event::ClassDefine {
                    ticks: c.ticks,
                    class,
                    class_object: 0,
                })?;
                let methods = c.methods.iter().map(|m| (&m.name, &m.signature, m.access));
                let fields = c.fields.iter().map(|f| (&f.name, &f.signature, f.access));
                Event::ClassLoad(Box::new(ClassLoad {
                    ticks: c.ticks,
                    class,
                    size: 0,
                    name: c.name.clone(),
                    methods: members(methods),
                    fields: members(fields),
                    // java/lang/Object names itself; a class with no traced superclass, Object.
                    superclass: if class == CLASS_OBJECT {
                        class
                    } else {
                        c.superclass.map_or(CLASS_OBJECT, |s| s as u16)
                    },
                    interfaces: c.interfaces.iter().map(|&i| i as u16).collect(),
                }))
            }
            M::ObjectDefine(o) => return self.object_defined(o),
            M::Alloc { thread, object } => {
                self.object_defined(object)?;
                return self.created(*thread, object);
            }
            M::MethodEnter(e) => return self.enter(*e),
            M::MethodLeave(l) => return self.leave(*l),
            M::Free { ticks, object } => Event::ObjectReclaimed {
                ticks: *ticks,
                object: *object,
            },
            M::GcStart { ticks } => Event::GcStart { ticks: *ticks },
            M::GcFinish { ticks } => Event::GcStop { ticks: *ticks },
            M::UserEvent { ticks, text } => Event::UserEvent {
                ticks: *ticks,
                message: user_text(text),
            },
            M::Heap { ticks, part } => heap_event(*ticks, part),
            M::Values(v) => Event::Values {
                ticks: v.ticks,
                kind: v.kind,
                class: v.method.class as u16,
                object: v.object,
                thread: v.thread,
                method: v.method.index,
                values: v.values.clone(),
            },
        };
        self.encoder.write(&e)
    }

    #[inline(always)]
    fn enter(&mut self, e: Enter) -> io::Result<()> {
        if self.is_native(e.method) {
            return self.native_enter(e);
        }
        self.encoder.method_enter_in::<BIG>(
            e.ticks,
            e.thread,
            e.method.class as u16,
            e.method.index,
            e.object,
        )
    }

    #[inline(always)]
    fn leave(&mut self, l: Leave) -> io::Result<()> {
        if self.is_native(l.method) {
            return self.native_leave(l);
        }
        self.encoder
            .method_leave_in::<BIG>(l.ticks, l.overhead, l.thread)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.encoder.flush()
    }

    /// TraceEnd, then the header's counts (and the tick rate measured over the run).
    fn finish(&mut self, ending: &Ending) -> io::Result<()> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        self.encoder
            .finish(self.threads, self.classes, ending.ticks_per_microsecond)
    }

    fn events(&self) -> u64 {
        self.encoder.events()
    }

    /// Bytes written, TraceEnd included once written.
    fn bytes(&self) -> u64 {
        self.encoder.bytes()
    }

    fn max_classes(&self) -> u32 {
        MAX_CLASSES
    }
}
