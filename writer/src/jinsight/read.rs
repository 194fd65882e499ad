//! JinsightLive events → model events: what `jlive dump`, `stats`, `convert` and `check` read a
//! JinsightLive file through. CLASS_DEFINE and its CLASS_LOAD become one class definition, an
//! OBJECT_DEFINED (or array form) followed by the OBJECT_CREATED of the same object one
//! allocation; a METHOD_LEAVE names the method of the frame it closes, which the file does not
//! say.

use super::*;
use crate::codec::{DecodeError, EventReader};
use crate::format::Format;
use crate::model::{
    self, ArrayDef, ClassDef, Element, Enter, FieldDef, HeapPart, Leave, MethodDef, MethodId,
};
use std::collections::{HashMap, VecDeque};

/// The frames a thread has open: (method, depth, ticket).
type Stack = Vec<(MethodId, u32, u32)>;

/// Turns JinsightLive events, in file order, into model events.
#[derive(Default)]
pub struct Translator {
    stacks: HashMap<u32, Stack>,
    tickets: HashMap<u32, u32>,
    /// Class IDs by name, for arrays: ARRAY_DEFINED names its class by a primitive type and
    /// ARRAY_CLASS_DEFINED by its element.
    by_name: HashMap<String, u16>,
    names: HashMap<u16, String>,
    /// Class and array form of each object defined, for its OBJECT_CREATED or ARRAY_CREATED.
    objects: HashMap<u32, (model::ClassId, Option<ArrayDef>)>,
    /// An object's definition held back until the next event says whether it is allocated.
    held: Option<(usize, model::Event)>,
    bursts: u32,
    /// Each thread's last ticks: the time of its untimed MONITOR_CONTENTION.
    last_ticks: HashMap<u32, u64>,
    /// The latest ticks read: the time of an untimed heap event.
    latest: u64,
}

fn fail<T>(offset: usize, message: String) -> Result<T, DecodeError> {
    Err(decode::error(offset, message))
}

/// A native method's call is a call like any other.
fn plain_calls(event: Event) -> Event {
    match event {
        Event::NativeMethodEnter {
            ticks,
            thread,
            class,
            method,
            object,
        } => Event::MethodEnter {
            ticks,
            thread,
            class,
            method,
            object,
            line: 0,
        },
        Event::NativeMethodLeave { ticks, thread } => Event::MethodLeave {
            ticks,
            overhead: 0,
            thread,
        },
        e => e,
    }
}

impl Translator {
    /// Translates one event read at `offset`, appending what it makes to `out`.
    pub fn push(
        &mut self,
        offset: usize,
        event: Event,
        out: &mut VecDeque<(usize, model::Event)>,
    ) -> Result<(), DecodeError> {
        let event = plain_calls(event);
        if let Some(held) = self.held.take() {
            if self.release(held, &event, out) {
                return Ok(());
            }
        }
        let timed = match &event {
            Event::ThreadDefine { thread, ticks, .. } => Some((*thread, *ticks)),
            e => e.thread().zip(e.ticks()),
        };
        if let Some((thread, ticks)) = timed {
            self.last_ticks.insert(thread, ticks);
        }
        if let Some(ticks) = event.ticks() {
            self.latest = self.latest.max(ticks);
        }
        let Some(translated) = self.translate(offset, event, out)? else {
            return Ok(());
        };
        match translated {
            model::Event::ObjectDefine(_) => self.held = Some((offset, translated)),
            _ => out.push_back((offset, translated)),
        }
        Ok(())
    }

    /// The object definition held back, now that `next` follows it: with the OBJECT_CREATED
    /// (or ARRAY_CREATED) of the same object, one allocation (true: `next` is taken).
    fn release(
        &mut self,
        (at, held): (usize, model::Event),
        next: &Event,
        out: &mut VecDeque<(usize, model::Event)>,
    ) -> bool {
        match (&held, next) {
            (model::Event::ObjectDefine(o), Event::ObjectCreated { object, thread, .. })
            | (model::Event::ObjectDefine(o), Event::ArrayCreated { object, thread, .. })
                if *object == o.object =>
            {
                out.push_back((
                    at,
                    model::Event::Alloc {
                        thread: *thread,
                        object: *o,
                    },
                ));
                return true;
            }
            // The writer before the model defined a thread between an object and its
            // creation when the allocation was the thread's first event.
            (model::Event::ObjectDefine(_), Event::ThreadDefine { .. }) => {
                self.held = Some((at, held));
            }
            _ => out.push_back((at, held)),
        }
        false
    }

    /// The model event of one JinsightLive event (None: it makes none; a contention makes
    /// two, the first pushed to `out` here).
    fn translate(
        &mut self,
        offset: usize,
        event: Event,
        out: &mut VecDeque<(usize, model::Event)>,
    ) -> Result<Option<model::Event>, DecodeError> {
        Ok(Some(match event {
            // Made plain calls by `plain_calls`.
            Event::ClassDefine { .. }
            | Event::TraceEnd { .. }
            | Event::NativeMethodEnter { .. }
            | Event::NativeMethodLeave { .. } => return Ok(None),
            Event::MonitorContention { object, thread, .. } => {
                self.contention(offset, object, thread, out)
            }
            Event::ThreadStart { ticks, thread } => model::Event::ThreadStart { ticks, thread },
            Event::ClassLoad(load) => self.class(*load),
            Event::MethodEnter {
                ticks,
                thread,
                class,
                method,
                object,
                ..
            } => self.enter(ticks, thread, class, method, object),
            Event::MethodLeave {
                ticks,
                overhead,
                thread,
            } => self.leave(offset, ticks, overhead, thread)?,
            Event::ObjectDefined {
                ticks,
                object,
                class,
            } => self.object(ticks, object, u32::from(class), None),
            Event::ArrayDefined {
                ticks,
                array_type,
                object,
                size,
            } => self.primitive_array(offset, ticks, array_type, object, size)?,
            Event::ArrayClassDefined {
                ticks,
                object,
                class,
                size,
            } => self.object_array(ticks, object, class, size),
            // The creation of an object defined before (not right before it) adds nothing:
            // the model's allocation defines its object.
            Event::ObjectCreated { object, .. } | Event::ArrayCreated { object, .. }
                if self.objects.contains_key(&object) =>
            {
                return Ok(None)
            }
            Event::ObjectCreated {
                ticks,
                object,
                class,
                thread,
            } => model::Event::Alloc {
                thread,
                object: model::ObjectDef {
                    ticks,
                    object,
                    class: u32::from(class),
                    array: None,
                },
            },
            Event::ArrayCreated { object, .. } => {
                return fail(
                    offset,
                    format!("object {} used before it is defined", object),
                )
            }
            Event::ObjectReclaimed { ticks, object } => model::Event::Free { ticks, object },
            Event::ThreadDefine {
                ticks,
                thread,
                name,
                ..
            } => model::Event::ThreadDefine(Box::new(model::ThreadDef {
                ticks,
                id: thread,
                name,
                ..Default::default()
            })),
            Event::ThreadExit { ticks, thread } => {
                self.stacks.remove(&thread);
                model::Event::ThreadEnd { ticks, thread }
            }
            Event::GcStart { ticks } => model::Event::GcStart { ticks },
            Event::GcStop { ticks } => model::Event::GcFinish { ticks },
            Event::UserEvent { ticks, message } => model::Event::UserEvent {
                ticks,
                text: message,
            },
            Event::BeginBurst { ticks } => {
                self.bursts += 1;
                self.stacks.clear();
                model::Event::BurstBegin {
                    ticks,
                    burst: self.bursts,
                }
            }
            Event::EndBurst { ticks } => model::Event::BurstEnd {
                ticks,
                burst: self.bursts,
            },
            e @ (Event::ObjectRefs { .. }
            | Event::ArrayRefs { .. }
            | Event::StaticRoot { .. }
            | Event::Root { .. }
            | Event::Generation { .. }
            | Event::EndOfReport { .. }) => return Ok(self.heap(e)),
            Event::Values {
                ticks,
                kind,
                class,
                object,
                thread,
                method,
                values,
            } => model::Event::Values(Box::new(model::Values {
                ticks,
                thread,
                method: MethodId {
                    class: u32::from(class),
                    index: method,
                },
                object,
                kind,
                values,
            })),
        }))
    }

    /// A heap dump's part (heap= walks), at the latest ticks but for a generation's.
    fn heap(&self, event: Event) -> Option<model::Event> {
        let heap = |latest, part| model::Event::Heap {
            ticks: latest,
            part: Box::new(part),
        };
        Some(match event {
            Event::ObjectRefs { object, to } => heap(
                self.latest,
                HeapPart::Refs {
                    object,
                    array: false,
                    to,
                },
            ),
            Event::ArrayRefs { array, to } => heap(
                self.latest,
                HeapPart::Refs {
                    object: array,
                    array: true,
                    to: to.into_iter().filter(|&o| o != NO_OBJECT).collect(),
                },
            ),
            Event::StaticRoot { class, to } => heap(
                self.latest,
                HeapPart::Statics {
                    class: u32::from(class),
                    to,
                },
            ),
            Event::Root {
                code,
                thread,
                object,
            } => heap(
                self.latest,
                HeapPart::Root {
                    kind: root_kind(code),
                    thread: root_has_thread(code).then_some(thread),
                    object,
                },
            ),
            Event::Generation { ticks } => heap(ticks, HeapPart::Generation),
            Event::EndOfReport { events } => heap(self.latest, HeapPart::EndOfReport { events }),
            _ => return None,
        })
    }

    /// MONITOR_CONTENTION, untimed: an enter (pushed to `out`) and its entered, at the
    /// thread's last ticks, without a stack.
    fn contention(
        &mut self,
        offset: usize,
        object: u32,
        thread: u32,
        out: &mut VecDeque<(usize, model::Event)>,
    ) -> model::Event {
        let ticks = self.last_ticks.get(&thread).copied().unwrap_or(0);
        let sync = |kind| {
            model::Event::Sync(Box::new(model::Sync {
                ticks,
                thread,
                kind,
                thread_hash: 0,
                object: 0,
                owner: 0,
                object_id: object,
                owner_thread: None,
                stack: Vec::new(),
            }))
        };
        out.push_back((offset, sync(model::SyncKind::ContendedEnter)));
        sync(model::SyncKind::ContendedEntered)
    }

    /// METHOD_ENTER: a frame pushed, with the thread's next ticket.
    fn enter(
        &mut self,
        ticks: u64,
        thread: u32,
        class: u16,
        method: u16,
        object: u32,
    ) -> model::Event {
        let method = MethodId {
            class: u32::from(class),
            index: method,
        };
        let stack = self.stacks.entry(thread).or_default();
        let ticket = self.tickets.entry(thread).or_insert(0);
        *ticket = ticket.wrapping_add(1);
        let depth = stack.len() as u32 + 1;
        stack.push((method, depth, *ticket));
        model::Event::MethodEnter(Enter {
            ticks,
            thread,
            method,
            object,
            depth,
            ticket: *ticket,
        })
    }

    /// METHOD_LEAVE: it names the method of the frame it closes, which the file does not say.
    fn leave(
        &mut self,
        offset: usize,
        ticks: u64,
        overhead: u64,
        thread: u32,
    ) -> Result<model::Event, DecodeError> {
        let Some((method, depth, ticket)) = self.stacks.get_mut(&thread).and_then(|s| s.pop())
        else {
            return fail(
                offset,
                format!(
                    "METHOD_LEAVE on thread {} with no open entry in this burst",
                    thread
                ),
            );
        };
        Ok(model::Event::MethodLeave(Leave {
            ticks,
            thread,
            method,
            depth,
            ticket,
            overhead,
        }))
    }

    /// ARRAY_DEFINED: an array of primitives, its class named by its type.
    fn primitive_array(
        &mut self,
        offset: usize,
        ticks: u64,
        array_type: u8,
        object: u32,
        size: u32,
    ) -> Result<model::Event, DecodeError> {
        let Some(d) = descriptor_of(array_type) else {
            return fail(
                offset,
                format!(
                    "array type {} is not one of JinsightLive's 1..8",
                    array_type
                ),
            );
        };
        let class = self.class_named(&format!("[{}", char::from(d)));
        let array = ArrayDef {
            length: size,
            element: Element::Primitive(d),
        };
        Ok(self.object(ticks, object, class, Some(array)))
    }

    /// ARRAY_CLASS_DEFINED: an array of objects, its class named by its element.
    fn object_array(&mut self, ticks: u64, object: u32, class: u16, size: u32) -> model::Event {
        let element = self.names.get(&class).cloned().unwrap_or_default();
        let name = if element.starts_with('[') {
            format!("[{}", element)
        } else {
            format!("[L{};", element)
        };
        let array = ArrayDef {
            length: size,
            element: Element::Class(u32::from(class)),
        };
        let class = self.class_named(&name);
        self.object(ticks, object, class, Some(array))
    }

    /// What is held back, at the end of the events.
    pub fn finish(&mut self, out: &mut VecDeque<(usize, model::Event)>) {
        if let Some(held) = self.held.take() {
            out.push_back(held);
        }
    }

    fn class_named(&self, name: &str) -> model::ClassId {
        self.by_name
            .get(name)
            .map_or(u32::from(CLASS_OBJECT), |&c| u32::from(c))
    }

    fn object(
        &mut self,
        ticks: u64,
        object: u32,
        class: model::ClassId,
        array: Option<ArrayDef>,
    ) -> model::Event {
        self.objects.insert(object, (class, array));
        model::Event::ObjectDefine(model::ObjectDef {
            ticks,
            object,
            class,
            array,
        })
    }

    fn class(&mut self, load: ClassLoad) -> model::Event {
        self.by_name.insert(load.name.clone(), load.class);
        self.names.insert(load.class, load.name.clone());
        model::Event::ClassDefine(Box::new(ClassDef {
            ticks: load.ticks,
            id: u32::from(load.class),
            name: load.name,
            source_file: String::new(),
            superclass: (load.class != CLASS_OBJECT).then_some(u32::from(load.superclass)),
            interfaces: load.interfaces.iter().map(|&i| u32::from(i)).collect(),
            methods: load
                .methods
                .into_iter()
                .map(|m| MethodDef {
                    name: m.name,
                    signature: m.signature,
                    access: m.access,
                    lines: Vec::new(),
                })
                .collect(),
            fields: load
                .fields
                .into_iter()
                .map(|f| FieldDef {
                    name: f.name,
                    signature: f.signature,
                    access: f.access,
                })
                .collect(),
        }))
    }
}

/// The JVM descriptor of a JinsightLive primitive array type.
fn descriptor_of(array_type: u8) -> Option<u8> {
    b"IJFDZBCS"
        .get(usize::from(array_type).checked_sub(1)?)
        .copied()
}

/// The run a JinsightLive header describes (its start time is whole seconds).
pub fn info_of(h: &Header) -> model::TraceInfo {
    model::TraceInfo {
        ticks_per_microsecond: h.ticks_per_microsecond,
        start_ticks: h.start_ticks,
        origin_ticks: h.start_ticks,
        origin_ns: u64::from(h.vm_start_time) * 1_000_000_000,
        ..Default::default()
    }
}

/// A JinsightLive file read as model events, a chunk at a time.
pub struct Reader<R> {
    decoder: StreamDecoder<R>,
    translator: Translator,
    info: model::TraceInfo,
    ready: VecDeque<(usize, model::Event)>,
    done: bool,
    /// The error that ended the file, given once the events before it are taken.
    error: Option<DecodeError>,
}

impl<R: std::io::Read> Reader<R> {
    pub fn new(reader: R) -> Result<Self, DecodeError> {
        let decoder = StreamDecoder::new(reader)?;
        Ok(Reader {
            info: info_of(decoder.header()),
            decoder,
            translator: Translator::default(),
            ready: VecDeque::new(),
            done: false,
            error: None,
        })
    }
}

impl<R: std::io::Read> EventReader for Reader<R> {
    fn format(&self) -> Format {
        Format::Jinsight
    }

    fn info(&self) -> &model::TraceInfo {
        &self.info
    }

    fn header(&self) -> String {
        let h = self.decoder.header();
        format!(
            "version={} platform={} events={} maxThreads={} maxClasses={}",
            h.version, h.platform, h.number_of_events, h.max_threads, h.max_classes
        )
    }

    fn next_event(&mut self) -> Result<Option<(usize, model::Event)>, DecodeError> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Ok(Some(e));
            }
            if self.done {
                return self.error.take().map_or(Ok(None), Err);
            }
            let translated = match self.decoder.next_event() {
                Ok(Some((offset, event))) => self.translator.push(offset, event, &mut self.ready),
                Ok(None) => {
                    self.done = true;
                    Ok(())
                }
                Err(e) => Err(e),
            };
            if let Err(e) = translated {
                // What was held back is whole: it comes first, then the error.
                self.done = true;
                self.error = Some(e);
            }
            if self.done {
                self.translator.finish(&mut self.ready);
            }
        }
    }
}
