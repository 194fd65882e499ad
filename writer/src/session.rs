//! Where raw records become JinsightLive events.
//!
//! The session owns the file's identity tables: linear class IDs (0 = java/lang/Object,
//! 1 = java/lang/Thread, then 2.. in the order first needed, each defined after its superclass
//! and interfaces), linear thread IDs from 1, and which objects are defined in this file. It
//! keeps a frame stack per thread so that METHOD_LEAVE carries the overhead of its entry and
//! exit, so excluded methods leave no trace, and so a burst never leaves a frame it did not enter.

use crate::filter::ClassFilter;
use crate::jinsight::{self, ClassLoad, Encoder, Event, MemberDef};
use crate::keyhash::KeyHasher;
use crate::record::*;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::io::{self, Seek, Write};
use std::sync::Arc;

type Map<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// Method keys below this are cached in a vector (bci keys are dense from 0).
const DENSE_KEYS: u64 = 1 << 22;

/// Highest class ID; 0xFFFF is the reader's null class.
const MAX_CLASS_ID: u32 = 0xFFFE;

/// What the session needs to know besides the records.
#[derive(Clone, Debug, Default)]
pub struct SessionConfig {
    pub filter: ClassFilter,
    /// `methods=entry`: exits are not recorded, so no frames are kept.
    pub entries_only: bool,
}

/// Counts the session keeps for `status`, the log and the tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    pub records: u64,
    pub classes: u32,
    pub threads: u32,
    pub bursts: u32,
    /// Method records whose method the registry did not know.
    pub unknown_methods: u64,
    /// Classes past the 65535 limit, not traced.
    pub classes_over_limit: u32,
    /// Records that arrived outside a burst (none are expected).
    pub outside_burst: u64,
}

#[derive(Clone, Copy)]
struct Frame {
    key: MethodKey,
    traced: bool,
    overhead: u32,
}

#[derive(Default)]
struct ThreadState {
    id: Option<u32>,
    frames: Vec<Frame>,
}

#[derive(Clone, Copy)]
struct ClassSlot {
    /// None while being defined, when over the limit, or when the class is unknown.
    id: Option<u16>,
    traced: bool,
    /// Methods in the written definition: a class registered before it was prepared is
    /// written without methods and defined again, complete, when one of them is entered.
    methods: usize,
}

/// A method key's class and method IDs in the dense table, in one word: class << 16 | method,
/// or one of two markers (0xFFFF is never a class ID).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Resolved(u32);

impl Resolved {
    const UNKNOWN: Resolved = Resolved(0xFFFF_0000);
    const NOT_TRACED: Resolved = Resolved(0xFFFF_0001);

    fn of(ids: Option<(u16, u16)>) -> Resolved {
        match ids {
            Some((class, method)) => Resolved(u32::from(class) << 16 | u32::from(method)),
            None => Resolved::NOT_TRACED,
        }
    }

    /// The IDs of a traced method (None: not traced, or not resolved yet).
    #[inline(always)]
    fn ids(self) -> Option<(u16, u16)> {
        (self.0 >> 16 != 0xFFFF).then_some(((self.0 >> 16) as u16, self.0 as u16))
    }
}

/// The state of thread `key`: the current one, or one from the table. A function of the two
/// fields rather than a method, so that the encoder can be borrowed beside it.
#[inline(always)]
fn state_of<'a>(
    current: &'a mut (ThreadKey, ThreadState),
    threads: &'a mut Map<ThreadKey, ThreadState>,
    key: ThreadKey,
) -> &'a mut ThreadState {
    if current.0 == key {
        &mut current.1
    } else {
        threads.entry(key).or_default()
    }
}

/// Turns batches into events on one encoder.
pub struct Session<W: Write + Seek> {
    encoder: Encoder<W>,
    symbols: Arc<dyn Symbols>,
    config: SessionConfig,
    classes: Map<ClassKey, ClassSlot>,
    methods: Map<MethodKey, Option<(u16, u16)>>,
    /// The same for small keys (capture=bci numbers methods densely from 0).
    dense: Vec<Resolved>,
    threads: Map<ThreadKey, ThreadState>,
    /// The thread whose batch is being written, taken out of `threads` meanwhile.
    current: (ThreadKey, ThreadState),
    /// Class key of each object this file defined, by object ID (0 = not defined).
    objects: Vec<ClassKey>,
    next_class: u32,
    next_thread: u32,
    in_burst: bool,
    last_ticks: u64,
    counts: SessionCounts,
    warnings: Vec<String>,
}

impl<W: Write + Seek> Session<W> {
    pub fn new(encoder: Encoder<W>, symbols: Arc<dyn Symbols>, config: SessionConfig) -> Self {
        Session {
            encoder,
            symbols,
            config,
            classes: Map::default(),
            methods: Map::default(),
            dense: Vec::new(),
            threads: Map::default(),
            current: (0, ThreadState::default()),
            objects: Vec::new(),
            next_class: 2,
            next_thread: 1,
            in_burst: false,
            last_ticks: 0,
            counts: SessionCounts::default(),
            warnings: Vec::new(),
        }
    }

    pub fn counts(&self) -> &SessionCounts {
        &self.counts
    }

    pub fn events(&self) -> u64 {
        self.encoder.events()
    }

    pub fn bytes(&self) -> u64 {
        self.encoder.bytes()
    }

    /// Messages for the agent's log, taken once.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.encoder.flush()
    }

    /// Opens a burst. Frames already open on any thread will not be left inside it.
    pub fn begin_burst(&mut self, ticks: u64) -> io::Result<()> {
        if self.in_burst {
            return Ok(());
        }
        self.in_burst = true;
        self.counts.bursts += 1;
        self.tick(ticks);
        self.emit(Event::BeginBurst { ticks })?;
        // Frames open from before the burst are forgotten: their exits find an empty stack
        // and are not written.
        for state in self.threads.values_mut() {
            state.frames.clear();
        }
        self.define_reserved_classes(ticks)
    }

    pub fn end_burst(&mut self, ticks: u64) -> io::Result<()> {
        if !self.in_burst {
            return Ok(());
        }
        self.tick(ticks);
        self.in_burst = false;
        self.emit(Event::EndBurst {
            ticks: self.last_ticks,
        })
    }

    pub fn in_burst(&self) -> bool {
        self.in_burst
    }

    /// A USER_EVENT; dropped (false) when no burst is open, as every event lies in a burst.
    pub fn user_event(&mut self, ticks: u64, text: &str) -> io::Result<bool> {
        if !self.in_burst {
            return Ok(false);
        }
        self.tick(ticks);
        self.emit(Event::UserEvent {
            ticks,
            message: text.to_string(),
        })?;
        Ok(true)
    }

    /// Ends any open burst, writes TraceEnd and patches the header. Returns the output with
    /// the number of events (TraceEnd excluded) and bytes in the file.
    pub fn finish(mut self, ticks_per_microsecond: Option<u32>) -> io::Result<(W, u64, u64)> {
        let last = self.last_ticks;
        self.end_burst(last)?;
        let threads = self.next_thread - 1;
        let classes = self.next_class;
        let events = self.encoder.events();
        let bytes = self.encoder.bytes() + 9;
        let out = self
            .encoder
            .finish(threads, classes, ticks_per_microsecond)?;
        Ok((out, events, bytes))
    }

    /// Writes one thread's batch.
    pub fn batch(&mut self, batch: &Batch) -> io::Result<()> {
        let slots = &batch.slots[..];
        if !self.in_burst {
            let n = batch.records().count() as u64;
            self.counts.records += n;
            self.counts.outside_burst += n;
            return Ok(());
        }
        let state = self.threads.remove(&batch.thread).unwrap_or_default();
        self.current = (batch.thread, state);
        let result = self.batch_slots(batch.thread, slots, batch.overhead);
        let (key, state) = std::mem::take(&mut self.current);
        self.threads.insert(key, state);
        result
    }

    /// The records of a batch, common runs in one loop, the rest one by one.
    fn batch_slots(&mut self, thread: ThreadKey, slots: &[Slot], overhead: u32) -> io::Result<()> {
        let mut i = 0;
        while i < slots.len() {
            let n = self.common_run(&slots[i..], overhead)?;
            self.counts.records += n as u64;
            i += n;
            let Some((record, width)) = Slot::decode(&slots[i..], overhead) else {
                break;
            };
            self.counts.records += 1;
            i += width;
            if record.kind == RecordKind::MethodEntry && record.arg == PENDING_OBJECT {
                let bound = bound_receiver(record.key, &slots[i..], overhead);
                self.constructor_entry(thread, &record, bound.as_ref())?;
            } else {
                self.record(thread, &record)?;
            }
        }
        Ok(())
    }

    /// Writes the leading records of `slots` that are the common case, and returns how many
    /// it wrote: one-slot entries of a method already resolved (dense key, traced) without a
    /// receiver, and one-slot exits of the top frame, on a thread that has its ID. They are
    /// what a batch is made of; each costs here a table lookup, a frame push or pop and the
    /// event's bytes. [`Session::record`] writes the same events for them, and handles
    /// everything else.
    fn common_run(&mut self, slots: &[Slot], overhead: u32) -> io::Result<usize> {
        match self.encoder.endian() {
            jinsight::Endian::Little => self.common_run_in::<false>(slots, overhead),
            jinsight::Endian::Big => self.common_run_in::<true>(slots, overhead),
        }
    }

    /// [`Session::common_run`] for an encoder whose byte order `BIG` says.
    fn common_run_in<const BIG: bool>(
        &mut self,
        slots: &[Slot],
        overhead: u32,
    ) -> io::Result<usize> {
        let state = &mut self.current.1;
        let Some(id) = state.id else {
            return Ok(0);
        };
        if self.config.entries_only {
            return Ok(0);
        }
        let mut last_ticks = self.last_ticks;
        let mut n = 0;
        for s in slots {
            let key = MethodKey::from(s.key());
            match s.form() {
                FORM_ENTRY if s.arg == NO_OBJECT => {
                    let Some((class, method)) = self.dense.get(key as usize).and_then(|m| m.ids())
                    else {
                        break;
                    };
                    state.frames.push(Frame {
                        key,
                        traced: true,
                        overhead,
                    });
                    self.encoder
                        .method_enter_in::<BIG>(s.ticks, id, class, method, NO_OBJECT)?;
                }
                FORM_EXIT => {
                    match state.frames.last() {
                        Some(top) if top.key == key => {}
                        _ => break,
                    }
                    if let Some(frame) = state.frames.pop().filter(|f| f.traced) {
                        let overhead = u64::from(frame.overhead) + u64::from(overhead);
                        self.encoder.method_leave_in::<BIG>(s.ticks, overhead, id)?;
                    }
                }
                _ => break,
            }
            last_ticks = last_ticks.max(s.ticks);
            n += 1;
        }
        self.last_ticks = last_ticks;
        Ok(n)
    }

    /// The state of a thread: the one whose batch is being written, or one from the table.
    #[inline]
    fn state(&mut self, key: ThreadKey) -> &mut ThreadState {
        state_of(&mut self.current, &mut self.threads, key)
    }

    fn tick(&mut self, ticks: u64) {
        self.last_ticks = self.last_ticks.max(ticks);
    }

    fn emit(&mut self, event: Event) -> io::Result<()> {
        self.encoder.write(&event)
    }

    fn record(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        self.tick(r.ticks);
        match r.kind {
            RecordKind::MethodEntry => self.method_entry(thread, r),
            RecordKind::MethodExit => self.method_exit(thread, r),
            RecordKind::ThreadStart => {
                let id = self.thread_id(thread, r.ticks)?;
                self.emit(Event::ThreadStart {
                    ticks: r.ticks,
                    thread: id,
                })
            }
            RecordKind::ThreadEnd => {
                let state = self.state(thread);
                state.frames = Vec::new();
                match state.id {
                    Some(id) => self.emit(Event::ThreadExit {
                        ticks: r.ticks,
                        thread: id,
                    }),
                    None => Ok(()),
                }
            }
            RecordKind::GcStart => self.emit(Event::GcStart { ticks: r.ticks }),
            RecordKind::GcFinish => self.emit(Event::GcStop { ticks: r.ticks }),
            RecordKind::ObjectAlloc => self.object_alloc(thread, r),
            RecordKind::ObjectSeen => {
                self.define_object(r.arg, r.key as ClassKey, r.extra, r.ticks)
            }
            RecordKind::ObjectFree => self.object_free(r),
            RecordKind::UserEvent => match self.symbols.message(r.key) {
                Some(text) => self.emit(Event::UserEvent {
                    ticks: r.ticks,
                    message: text,
                }),
                None => Ok(()),
            },
            RecordKind::None | RecordKind::ObjectBound => Ok(()),
        }
    }

    fn method_entry(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let target = self.method(r.key, r.ticks)?;
        let state = state_of(&mut self.current, &mut self.threads, thread);
        if !self.config.entries_only {
            state.frames.push(Frame {
                key: r.key,
                traced: target.is_some(),
                overhead: r.extra,
            });
        }
        let Some((class, method)) = target else {
            return Ok(());
        };
        let id = match state.id {
            Some(id) => id,
            None => self.thread_id(thread, r.ticks)?,
        };
        let object = if r.arg != NO_OBJECT && self.object_defined(r.arg) {
            r.arg
        } else {
            NO_OBJECT
        };
        self.encoder
            .method_enter(r.ticks, id, class, method, object)
    }

    /// A constructor entered before its receiver could be named: the receiver is the object
    /// its ObjectBound record (found later in the batch) names, defined here, before use.
    fn constructor_entry(
        &mut self,
        thread: ThreadKey,
        r: &Record,
        bound: Option<&Record>,
    ) -> io::Result<()> {
        let mut entry = *r;
        entry.arg = NO_OBJECT;
        if let Some(b) = bound {
            self.define_object(b.arg, b.extra as ClassKey, NOT_ARRAY, r.ticks)?;
            entry.arg = b.arg;
        }
        self.method_entry(thread, &entry)
    }

    fn method_exit(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let state = state_of(&mut self.current, &mut self.threads, thread);
        // The frame this exit closes is the top one, except when exits were missed (an
        // exception out of a constructor's super() call under capture=bci): then the frames
        // above it are left here too. An exit of no open frame was entered before the burst.
        let Some(depth) = state.frames.iter().rposition(|f| f.key == r.key) else {
            return Ok(());
        };
        let Some(id) = state.id else {
            state.frames.truncate(depth); // a thread with no traced entry has nothing to leave
            return Ok(());
        };
        for frame in state.frames.drain(depth..).rev() {
            if frame.traced {
                let overhead = u64::from(frame.overhead) + u64::from(r.extra);
                self.encoder.method_leave(r.ticks, overhead, id)?;
            }
        }
        Ok(())
    }

    /// The class and method IDs of a method, defining its class if needed; None when the
    /// method is unknown, its class excluded or past the class limit.
    fn method(&mut self, key: MethodKey, ticks: u64) -> io::Result<Option<(u16, u16)>> {
        if let Some(&cached) = self.dense.get(key as usize) {
            if cached != Resolved::UNKNOWN {
                return Ok(cached.ids());
            }
        }
        if key >= DENSE_KEYS {
            if let Some(&cached) = self.methods.get(&key) {
                return Ok(cached);
            }
        }
        let resolved = match self.symbols.method(key) {
            None => {
                self.counts.unknown_methods += 1;
                None
            }
            Some(m) => {
                let mut slot = self.class_slot(m.class, ticks)?;
                if slot.is_some_and(|s| s.id.is_some() && usize::from(m.index) >= s.methods) {
                    self.classes.remove(&m.class);
                    slot = self.class_slot(m.class, ticks)?;
                }
                match slot {
                    Some(ClassSlot {
                        id: Some(id),
                        traced: true,
                        methods,
                    }) if usize::from(m.index) < methods => Some((id, m.index)),
                    _ => None,
                }
            }
        };
        if key < DENSE_KEYS {
            let at = key as usize;
            if self.dense.len() <= at {
                self.dense.resize(at + 1, Resolved::UNKNOWN);
            }
            self.dense[at] = Resolved::of(resolved);
        } else {
            self.methods.insert(key, resolved);
        }
        Ok(resolved)
    }

    fn class_id(&mut self, key: ClassKey, ticks: u64) -> io::Result<Option<u16>> {
        Ok(self.class_slot(key, ticks)?.and_then(|s| s.id))
    }

    /// Defines a class (after its superclass and interfaces) the first time it is needed.
    fn class_slot(&mut self, key: ClassKey, ticks: u64) -> io::Result<Option<ClassSlot>> {
        if let Some(&slot) = self.classes.get(&key) {
            return Ok(Some(slot));
        }
        let Some(info) = self.symbols.class(key) else {
            return Ok(None);
        };
        let traced = self.config.filter.traces(&info.name);
        // Marked before recursing so that a cyclic description cannot loop.
        let pending = ClassSlot {
            id: None,
            traced,
            methods: 0,
        };
        self.classes.insert(key, pending);
        let superclass = match info.superclass {
            Some(k) => self.class_id(k, ticks)?.unwrap_or(jinsight::CLASS_OBJECT),
            None => jinsight::CLASS_OBJECT,
        };
        let mut interfaces = Vec::with_capacity(info.interfaces.len());
        for &k in &info.interfaces {
            if let Some(id) = self.class_id(k, ticks)? {
                interfaces.push(id);
            }
        }
        let Some(id) = self.assign_class_id(&info.name, ticks)? else {
            return Ok(Some(pending));
        };
        let superclass = if id == jinsight::CLASS_OBJECT {
            id
        } else {
            superclass
        };
        self.write_class(id, &info, superclass, interfaces, ticks)?;
        let slot = ClassSlot {
            id: Some(id),
            traced,
            methods: info.methods.len(),
        };
        self.classes.insert(key, slot);
        Ok(Some(slot))
    }

    fn assign_class_id(&mut self, name: &str, ticks: u64) -> io::Result<Option<u16>> {
        let reserved = match name {
            "java/lang/Object" => Some(jinsight::CLASS_OBJECT),
            "java/lang/Thread" => Some(jinsight::CLASS_THREAD),
            _ => None,
        };
        if let Some(id) = reserved {
            if !self.classes.values().any(|s| s.id == Some(id)) {
                return Ok(Some(id));
            }
        }
        if self.next_class > MAX_CLASS_ID {
            self.counts.classes_over_limit += 1;
            if self.counts.classes_over_limit == 1 {
                let text = format!(
                    "more than {} classes: further classes are not traced",
                    MAX_CLASS_ID + 1
                );
                self.warnings.push(text.clone());
                self.emit(Event::UserEvent {
                    ticks,
                    message: format!("jlive: {}", text),
                })?;
            }
            return Ok(None);
        }
        let id = self.next_class as u16;
        self.next_class += 1;
        Ok(Some(id))
    }

    fn write_class(
        &mut self,
        id: u16,
        info: &ClassInfo,
        superclass: u16,
        interfaces: Vec<u16>,
        ticks: u64,
    ) -> io::Result<()> {
        self.counts.classes += 1;
        let members = |list: &[Member]| {
            list.iter()
                .map(|m| MemberDef {
                    name: m.name.clone(),
                    signature: m.signature.clone(),
                    access: m.access,
                })
                .collect()
        };
        self.emit(Event::ClassDefine {
            ticks,
            class: id,
            class_object: 0,
        })?;
        self.emit(Event::ClassLoad(Box::new(ClassLoad {
            ticks,
            class: id,
            size: 0,
            name: info.name.clone(),
            methods: members(&info.methods),
            fields: members(&info.fields),
            superclass,
            interfaces,
        })))
    }

    /// Object and Thread take IDs 0 and 1 in every file, whatever the registry knows.
    fn define_reserved_classes(&mut self, ticks: u64) -> io::Result<()> {
        for (name, id) in [
            ("java/lang/Object", jinsight::CLASS_OBJECT),
            ("java/lang/Thread", jinsight::CLASS_THREAD),
        ] {
            if self.classes.values().any(|s| s.id == Some(id)) {
                continue;
            }
            match self.symbols.class_by_name(name) {
                Some(key) => {
                    self.class_slot(key, ticks)?;
                }
                None => {
                    let info = ClassInfo {
                        name: name.to_string(),
                        ..ClassInfo::default()
                    };
                    self.write_class(id, &info, jinsight::CLASS_OBJECT, Vec::new(), ticks)?;
                    self.classes.insert(
                        u32::MAX - u32::from(id),
                        ClassSlot {
                            id: Some(id),
                            traced: true,
                            methods: 0,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// The JinsightLive ID of a thread, written as THREAD_DEFINE the first time.
    fn thread_id(&mut self, key: ThreadKey, ticks: u64) -> io::Result<u32> {
        if let Some(id) = self.state(key).id {
            return Ok(id);
        }
        let id = self.next_thread;
        self.next_thread += 1;
        self.counts.threads += 1;
        self.state(key).id = Some(id);
        let name = self
            .symbols
            .thread(key)
            .map(|t| t.name)
            .unwrap_or_else(|| format!("thread-{}", key));
        self.emit(Event::ThreadDefine {
            ticks,
            thread: id,
            object: 0,
            class: jinsight::CLASS_THREAD,
            name,
        })?;
        Ok(id)
    }

    fn object_defined(&self, object: u32) -> bool {
        self.objects.get(object as usize).is_some_and(|&c| c != 0)
    }

    /// OBJECT_DEFINED, ARRAY_DEFINED or ARRAY_CLASS_DEFINED for an object new to this file.
    fn define_object(
        &mut self,
        object: u32,
        class: ClassKey,
        length: u32,
        ticks: u64,
    ) -> io::Result<()> {
        if object == NO_OBJECT || object == 0 || self.object_defined(object) {
            return Ok(());
        }
        let Some(info) = self.symbols.class(class) else {
            return Ok(());
        };
        let Some(class_id) = self.class_id(class, ticks)? else {
            return Ok(());
        };
        let size = if length == NOT_ARRAY { 0 } else { length };
        let event = match info.array {
            None => Event::ObjectDefined {
                ticks,
                object,
                class: class_id,
            },
            Some(ArrayKind::Primitive(d)) => Event::ArrayDefined {
                ticks,
                array_type: jinsight::array_type_of(d).unwrap_or(1),
                object,
                size,
            },
            Some(ArrayKind::Objects(element)) => {
                let element = self
                    .class_id(element, ticks)?
                    .unwrap_or(jinsight::CLASS_OBJECT);
                Event::ArrayClassDefined {
                    ticks,
                    object,
                    class: element,
                    size,
                }
            }
        };
        self.emit(event)?;
        let slot = object as usize;
        if self.objects.len() <= slot {
            self.objects.resize(slot + 1, 0);
        }
        self.objects[slot] = class;
        Ok(())
    }

    fn object_alloc(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let class = r.key as ClassKey;
        self.define_object(r.arg, class, r.extra, r.ticks)?;
        if !self.object_defined(r.arg) {
            return Ok(());
        }
        let Some(info) = self.symbols.class(class) else {
            return Ok(());
        };
        let tid = self.thread_id(thread, r.ticks)?;
        let size = if r.extra == NOT_ARRAY { 0 } else { r.extra };
        let event = match info.array {
            None => Event::ObjectCreated {
                ticks: r.ticks,
                object: r.arg,
                class: self
                    .class_id(class, r.ticks)?
                    .unwrap_or(jinsight::CLASS_OBJECT),
                thread: tid,
            },
            Some(kind) => Event::ArrayCreated {
                ticks: r.ticks,
                is_array: jinsight::jvmpi_is_array(match kind {
                    ArrayKind::Primitive(d) => Some(d),
                    ArrayKind::Objects(_) => None,
                }),
                object: r.arg,
                size,
                thread: tid,
            },
        };
        self.emit(event)
    }

    fn object_free(&mut self, r: &Record) -> io::Result<()> {
        if !self.object_defined(r.arg) {
            return Ok(());
        }
        self.objects[r.arg as usize] = 0;
        self.emit(Event::ObjectReclaimed {
            ticks: r.ticks,
            object: r.arg,
        })
    }
}

/// The ObjectBound record of the constructor entered with `key`, among the records after its
/// entry: the first one at the same call depth, before the constructor exits.
fn bound_receiver(key: MethodKey, rest: &[Slot], overhead: u32) -> Option<Record> {
    let mut depth = 0usize;
    for r in Slot::records(rest, overhead) {
        match r.kind {
            RecordKind::MethodEntry => depth += 1,
            RecordKind::MethodExit if depth == 0 => return None,
            RecordKind::MethodExit => depth -= 1,
            RecordKind::ObjectBound if depth == 0 && r.key == key => return Some(r),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jinsight::{Header, PLATFORM_LINUX_390, PLATFORM_LINUX_X86};
    use std::io::Cursor;

    /// app/A has four methods (keys 0, 1, 2 and one sparse key), app/Skip one (key 3, an
    /// excluded class); key 4 is unknown.
    struct Registry;

    const SPARSE: MethodKey = 1 << 40;
    const KEYS: [MethodKey; 6] = [0, 1, 2, 3, 4, SPARSE];

    impl Symbols for Registry {
        fn method(&self, key: MethodKey) -> Option<MethodRef> {
            match key {
                0..=2 => Some(MethodRef {
                    class: 4,
                    index: key as u16,
                }),
                SPARSE => Some(MethodRef { class: 4, index: 3 }),
                3 => Some(MethodRef { class: 5, index: 0 }),
                _ => None,
            }
        }
        fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
            let member = |name: &str| Member {
                name: name.into(),
                signature: "()V".into(),
                access: 1,
            };
            let (name, methods) = match key {
                1 => ("java/lang/Object", vec![]),
                2 => ("java/lang/Thread", vec![]),
                4 => ("app/A", ["a", "b", "c", "d"].map(member).to_vec()),
                5 => ("app/Skip", vec![member("s")]),
                _ => return None,
            };
            Some(Arc::new(ClassInfo {
                name: name.into(),
                methods,
                superclass: (key != 1).then_some(1),
                ..Default::default()
            }))
        }
        fn class_by_name(&self, name: &str) -> Option<ClassKey> {
            match name {
                "java/lang/Object" => Some(1),
                "java/lang/Thread" => Some(2),
                _ => None,
            }
        }
        fn thread(&self, key: ThreadKey) -> Option<ThreadInfo> {
            Some(ThreadInfo {
                name: format!("t{}", key),
            })
        }
    }

    /// Two threads' records in batches: entries of traced, excluded, unknown and sparse
    /// methods (some with a receiver no one defined), exits of the top frame, of a frame
    /// further down (an exception past a missed exit) and of no open frame, GC records.
    fn batches() -> Vec<Batch> {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut open: [Vec<MethodKey>; 2] = [Vec::new(), Vec::new()];
        let mut pending = [Batch::new(7, 3), Batch::new(8, 3)];
        let mut out = Vec::new();
        for ticks in 10..40_000u64 {
            let r = next();
            let t = (r & 1) as usize;
            let stack = &mut open[t];
            // Mostly the batch's overhead (one-slot records), sometimes another (wide ones).
            let overhead = if (r >> 56) % 8 == 0 { 4 } else { 3 };
            let record = match (r >> 8) % 16 {
                0..=6 => {
                    let key = KEYS[((r >> 16) % 6) as usize];
                    let object = if (r >> 24) % 8 == 0 { 5 } else { NO_OBJECT };
                    stack.push(key);
                    Record::new(RecordKind::MethodEntry, ticks, key, object, overhead)
                }
                7..=12 => match stack.pop() {
                    Some(key) => Record::new(RecordKind::MethodExit, ticks, key, 0, overhead),
                    None => Record::new(RecordKind::GcStart, ticks, 0, 0, 0),
                },
                13 if !stack.is_empty() => {
                    let depth = (r >> 32) as usize % stack.len();
                    let key = stack[depth];
                    stack.truncate(depth);
                    Record::new(RecordKind::MethodExit, ticks, key, 0, 4)
                }
                14 => Record::new(
                    RecordKind::MethodExit,
                    ticks,
                    KEYS[(r >> 40) as usize % 6],
                    0,
                    4,
                ),
                _ => Record::new(RecordKind::GcFinish, ticks, 0, 0, 0),
            };
            pending[t].push(&record);
            if (r >> 48) % 64 == 0 || pending[t].slots.len() >= 300 {
                let next = Batch::new(pending[t].thread, 3);
                out.push(std::mem::replace(&mut pending[t], next));
            }
        }
        out.extend(pending);
        out
    }

    /// The file written from `batches` for `platform` (its byte order): by `batch` (common
    /// runs included), or record by record through `record`, which handles every kind of
    /// record.
    fn write(platform: u32, batches: &[Batch], record_by_record: bool) -> Vec<u8> {
        let header = Header {
            version: 8,
            platform,
            ticks_per_microsecond: 1000,
            max_threads: 256,
            ..Default::default()
        };
        let encoder = Encoder::new(Cursor::new(Vec::new()), &header).unwrap();
        let config = SessionConfig {
            filter: ClassFilter::new(&[], &["app/Skip".to_string()]),
            entries_only: false,
        };
        let mut s = Session::new(encoder, Arc::new(Registry), config);
        s.begin_burst(1).unwrap();
        for b in batches {
            if record_by_record {
                let state = s.threads.remove(&b.thread).unwrap_or_default();
                s.current = (b.thread, state);
                for r in b.records() {
                    s.record(b.thread, &r).unwrap();
                }
                let (key, state) = std::mem::take(&mut s.current);
                s.threads.insert(key, state);
            } else {
                s.batch(b).unwrap();
            }
        }
        s.finish(Some(2500)).unwrap().0.into_inner()
    }

    #[test]
    fn common_runs_write_what_record_by_record_writes() {
        let batches = batches();
        for platform in [PLATFORM_LINUX_X86, PLATFORM_LINUX_390] {
            let by_record = write(platform, &batches, true);
            let by_batch = write(platform, &batches, false);
            assert!(by_record.len() > 200_000, "{} bytes", by_record.len());
            assert!(
                by_batch == by_record,
                "platform {}: the files differ",
                platform
            );
        }
    }
}
