//! Where raw records become model events ([`crate::model`]), once, whatever the format.
//!
//! The resolver owns the file's identity tables: linear class IDs (0 = java/lang/Object,
//! 1 = java/lang/Thread, then 2.. in the order first needed, each defined after its superclass
//! and interfaces, up to the sink's limit), linear thread IDs from 1, and which objects are
//! defined in this file. It keeps a frame stack per thread, so that a leave names the method,
//! depth and ticket of its entry and the agent overhead of both, so that excluded methods
//! leave no trace, and so that a burst never leaves a frame it did not enter.

use crate::filter::ClassFilter;
use crate::keyhash::KeyHasher;
use crate::model::{self, *};
use crate::record::*;
use crate::stck::Stck;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::io;
use std::sync::Arc;

mod calls;
mod common;
mod details;
mod ids;

type Map<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

/// Method keys below this are cached in a vector (bci keys are dense from 0).
const DENSE_KEYS: u64 = 1 << 22;

/// `java/lang/Object` and `java/lang/Thread` are classes 0 and 1 in every file (the
/// JinsightLive client hard-codes them).
pub const CLASS_OBJECT: ClassId = 0;
pub const CLASS_THREAD: ClassId = 1;

/// What the resolver needs to know besides the records.
#[derive(Clone, Debug, Default)]
pub struct ResolverConfig {
    pub filter: ClassFilter,
    /// `methods=entry`: exits are not recorded, so no frames are kept.
    pub entries_only: bool,
    /// `clock=stck`: ticks are written as z/Architecture STORE CLOCK values.
    pub stck: Option<Stck>,
}

/// 24 bytes: every call pushes and pops one.
#[derive(Clone, Copy)]
struct Frame {
    key: MethodKey,
    /// The method, when traced ([`Resolved::NOT_TRACED`] when not).
    method: Resolved,
    overhead: u32,
    ticket: u32,
}

#[derive(Default)]
struct ThreadState {
    id: Option<ThreadId>,
    frames: Vec<Frame>,
    /// Traced frames among `frames`.
    depth: u32,
    /// Traced entries in this file.
    tickets: u32,
    /// On a carrier thread: the virtual thread mounted on it, whose records its batches hold.
    mounted: Option<ThreadKey>,
    /// The thread ended: its state is dropped once it is no longer the current one.
    ended: bool,
    /// Its open waits, joins, sleeps and contended enters of this burst: (kind, object hash,
    /// object ID). An end closes the innermost of its kind; one with none open in this burst
    /// (begun before it) is not written. A join's end takes its thread from its beginning (the
    /// agent sees the end without the receiver).
    spans: Vec<(SyncKind, u32, u32)>,
    /// A Wait written only once its Waited (or the burst's end) shows it waited: HotSpot
    /// reports a wait before it checks that the thread owns the monitor, and one that throws
    /// has no end.
    held_wait: Option<Box<model::Sync>>,
}

impl ThreadState {
    /// Nothing to keep: as a state not yet made (a thread that ended may still be the
    /// current one of a carrier's batch until its Unmount, and leaves such a state).
    fn is_blank(&self) -> bool {
        self.id.is_none()
            && self.frames.is_empty()
            && self.depth == 0
            && self.tickets == 0
            && self.mounted.is_none()
            && self.spans.is_empty()
            && self.held_wait.is_none()
    }

    /// Counts an entry (a traced method goes one deeper and takes the next ticket) and, with
    /// `frame`, pushes its frame; returns the depth and ticket.
    #[inline(always)]
    fn enter(
        &mut self,
        key: MethodKey,
        method: Option<MethodId>,
        overhead: u32,
        frame: bool,
    ) -> (u32, u32) {
        let mut ticket = 0;
        if method.is_some() {
            self.depth += 1;
            self.tickets = self.tickets.wrapping_add(1);
            ticket = self.tickets;
        }
        if frame {
            self.frames.push(Frame {
                key,
                method: Resolved::of(method),
                overhead,
                ticket,
            });
        }
        (self.depth, self.tickets)
    }

    /// Leaves the frames above the first `keep`, top first, at `ticks`: a Leave for each
    /// traced one, its overhead `overhead(frame)`. Returns how many Leaves were written.
    fn leave_above(
        &mut self,
        sink: &mut impl Sink,
        id: ThreadId,
        keep: usize,
        ticks: u64,
        overhead: impl Fn(&Frame) -> u64,
    ) -> io::Result<u64> {
        let mut left = 0;
        while self.frames.len() > keep {
            let Some(frame) = self.frames.pop() else {
                break;
            };
            if let Some(method) = frame.method.method() {
                sink.leave(Leave {
                    ticks,
                    thread: id,
                    method,
                    depth: self.depth,
                    ticket: frame.ticket,
                    overhead: overhead(&frame),
                })?;
                self.depth -= 1;
                left += 1;
            }
        }
        Ok(left)
    }
}

#[derive(Clone, Copy)]
struct ClassSlot {
    /// None while being defined, when over the limit, or when the class is unknown.
    id: Option<ClassId>,
    traced: bool,
    /// Methods in the written definition: a class registered before it was prepared is
    /// written without methods and defined again, complete, when one of them is entered.
    methods: usize,
}

/// A method key's class and method IDs in the dense table, in one word: class << 16 | index,
/// or one of two markers (class 0xFFFF_FFFF is never assigned).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Resolved(u64);

impl Resolved {
    const UNKNOWN: Resolved = Resolved(0xFFFF_FFFF_0000);
    const NOT_TRACED: Resolved = Resolved(0xFFFF_FFFF_0001);

    fn of(method: Option<MethodId>) -> Resolved {
        match method {
            Some(m) => Resolved(u64::from(m.class) << 16 | u64::from(m.index)),
            None => Resolved::NOT_TRACED,
        }
    }

    /// The method, when traced (None: not traced, or not resolved yet).
    #[inline(always)]
    fn method(self) -> Option<MethodId> {
        let class = (self.0 >> 16) as u32;
        (class != u32::MAX).then_some(MethodId {
            class,
            index: self.0 as u16,
        })
    }
}

/// The state of thread `key`: the current one, or one from the table. A function of the two
/// fields rather than a method, so that the sink can be borrowed beside it.
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

/// Turns batches into model events on one sink.
pub struct Resolver<S: Sink> {
    sink: S,
    symbols: Arc<dyn Symbols>,
    config: ResolverConfig,
    classes: Map<ClassKey, ClassSlot>,
    methods: Map<MethodKey, Option<MethodId>>,
    /// The same for small keys (capture=bci numbers methods densely from 0).
    dense: Vec<Resolved>,
    threads: Map<ThreadKey, ThreadState>,
    /// The thread whose batch is being written, taken out of `threads` meanwhile.
    current: (ThreadKey, ThreadState),
    /// Class key of each object this file defined and has not seen freed, by object ID. A map,
    /// not a table by ID: IDs keep rising over a long run, and each file holds only its own
    /// objects (a table would take 4 bytes for every object the run ever saw).
    objects: Map<u32, ClassKey>,
    next_class: u32,
    next_thread: u32,
    /// The ticks of the open burst's beginning.
    burst_began: u64,
    /// Threads defined in this file, by identity hash code (the owners of contended monitors,
    /// who may have ended before the contention reaches the writer).
    thread_hashes: HashMap<u32, ThreadId>,
    max_classes: u32,
    in_burst: bool,
    /// What the open burst writes, when it narrows anything.
    scope: Option<Box<BurstScope>>,
    /// The method caches hold "Limit to" decisions (cleared when the limit changes).
    cache_limited: bool,
    /// The thread whose batch is being written (a virtual thread's carrier).
    carrier: ThreadKey,
    /// The thread of the trigger's entry, once written (a virtual thread mounted on the
    /// trigger's carrier, or the carrier): its frames below `trigger_base` are older.
    trigger_entered: Option<ThreadKey>,
    trigger_base: usize,
    /// After the trigger's exit (`end_on_exit`): records later than these ticks are left out.
    cut: Option<u64>,
    last_ticks: u64,
    counts: Counts,
    warnings: Vec<String>,
    /// The payloads of the batch being written ([`Batch::payloads`]).
    payloads: Vec<Payload>,
}

impl<S: Sink> Resolver<S> {
    pub fn new(sink: S, symbols: Arc<dyn Symbols>, config: ResolverConfig) -> Self {
        Resolver {
            max_classes: sink.max_classes(),
            sink,
            symbols,
            config,
            classes: Map::default(),
            methods: Map::default(),
            dense: Vec::new(),
            threads: Map::default(),
            current: (0, ThreadState::default()),
            objects: Map::default(),
            next_class: 2,
            next_thread: 1,
            burst_began: 0,
            thread_hashes: HashMap::new(),
            in_burst: false,
            scope: None,
            cache_limited: false,
            carrier: 0,
            trigger_entered: None,
            trigger_base: 0,
            cut: None,
            last_ticks: 0,
            counts: Counts::default(),
            warnings: Vec::new(),
            payloads: Vec::new(),
        }
    }

    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    pub fn events(&self) -> u64 {
        self.sink.events()
    }

    pub fn bytes(&self) -> u64 {
        self.sink.bytes()
    }

    /// Messages for the agent's log, taken once.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }

    /// The file's ticks of a recorded tick count.
    #[inline(always)]
    fn file_ticks(&self, ticks: u64) -> u64 {
        match &self.config.stck {
            None => ticks,
            Some(stck) => stck.of(ticks),
        }
    }

    /// Opens a burst. Frames already open on any thread will not be left inside it.
    pub fn begin_burst(&mut self, ticks: u64) -> io::Result<()> {
        self.begin_scoped(ticks, BurstScope::default())
    }

    /// Opens a burst that writes only what `scope` keeps.
    pub fn begin_scoped(&mut self, ticks: u64, scope: BurstScope) -> io::Result<()> {
        if self.in_burst {
            return Ok(());
        }
        let limited = !scope.limit.is_empty();
        if limited || self.cache_limited {
            self.forget_methods();
            self.cache_limited = limited;
        }
        self.scope = (!scope.is_empty()).then(|| Box::new(scope));
        (self.trigger_entered, self.trigger_base, self.cut) = (None, 0, None);
        let ticks = self.file_ticks(ticks);
        self.in_burst = true;
        self.burst_began = ticks;
        self.counts.bursts += 1;
        self.tick(ticks);
        self.emit(Event::BurstBegin {
            ticks,
            burst: self.counts.bursts,
        })?;
        // Frames open from before the burst are forgotten: their exits find an empty stack
        // and are not written.
        for state in self.threads.values_mut().chain([&mut self.current.1]) {
            state.frames.clear();
            state.depth = 0;
            state.spans.clear();
            state.held_wait = None;
        }
        self.define_reserved_classes(ticks)
    }

    pub fn end_burst(&mut self, ticks: u64) -> io::Result<()> {
        if !self.in_burst {
            return Ok(());
        }
        let ticks = self.file_ticks(ticks);
        self.tick(ticks);
        self.write_held_waits()?;
        self.in_burst = false;
        self.scope = None;
        self.cut = None;
        if self.cache_limited {
            self.forget_methods();
            self.cache_limited = false;
        }
        self.emit(Event::BurstEnd {
            ticks: self.last_ticks,
            burst: self.counts.bursts,
        })
    }

    /// What the resolver holds that grows with the run: objects defined and not freed, and
    /// threads' states.
    pub fn held(&self) -> (usize, usize) {
        (self.objects.len(), self.threads.len())
    }

    /// Which virtual thread each carrier runs, to be followed in the next file of a roll.
    pub fn mounts(&self) -> Vec<(ThreadKey, ThreadKey)> {
        let current = std::iter::once((&self.current.0, &self.current.1));
        self.threads
            .iter()
            .chain(current)
            .filter_map(|(&carrier, state)| state.mounted.map(|v| (carrier, v)))
            .collect()
    }

    /// Takes up [`Resolver::mounts`] of the file before.
    pub fn follow_mounts(&mut self, mounts: &[(ThreadKey, ThreadKey)]) {
        for &(carrier, vthread) in mounts {
            self.state(carrier).mounted = Some(vthread);
        }
    }

    pub fn in_burst(&self) -> bool {
        self.in_burst
    }

    /// The open burst's scope (what a roll carries into the next file).
    pub fn scope(&self) -> BurstScope {
        self.scope.as_deref().cloned().unwrap_or_default()
    }

    /// Forgets which methods are traced: the decisions are made again, under a new limit.
    fn forget_methods(&mut self) {
        self.dense.clear();
        self.methods.clear();
    }

    /// A user event; dropped (false) when no burst is open, as every event lies in a burst.
    pub fn user_event(&mut self, ticks: u64, text: &str) -> io::Result<bool> {
        if !self.in_burst {
            return Ok(false);
        }
        let ticks = self.file_ticks(ticks);
        self.tick(ticks);
        self.emit(Event::UserEvent {
            ticks,
            text: text.to_string(),
        })?;
        Ok(true)
    }

    /// The JVM's start (`death` false) or end, written whether or not a burst is open.
    pub fn lifecycle(&mut self, ticks: u64, death: bool) -> io::Result<()> {
        let ticks = self.file_ticks(ticks);
        self.tick(ticks);
        self.emit(if death {
            Event::VmDeath { ticks }
        } else {
            Event::VmInit { ticks }
        })
    }

    /// Ends any open burst and the file. Returns the sink with the number of events and
    /// bytes it wrote.
    pub fn finish(mut self, ticks_per_microsecond: Option<u32>) -> io::Result<(S, u64, u64)> {
        let last = self.last_ticks;
        if self.in_burst {
            self.write_held_waits()?;
            self.in_burst = false;
            self.emit(Event::BurstEnd {
                ticks: last,
                burst: self.counts.bursts,
            })?;
        }
        let ending = Ending {
            ticks: last,
            // STORE CLOCK values tick at 4096 per microsecond, whatever was measured.
            ticks_per_microsecond: ticks_per_microsecond.filter(|_| self.config.stck.is_none()),
        };
        self.sink.finish(&ending)?;
        let (events, bytes) = (self.sink.events(), self.sink.bytes());
        Ok((self.sink, events, bytes))
    }

    /// Writes one thread's batch. The batch of a carrier thread holds, between a Mount and its
    /// Unmount, the records of the virtual thread mounted on it: they are that thread's.
    pub fn batch(&mut self, batch: &mut Batch) -> io::Result<()> {
        if !self.in_burst {
            self.follow(batch);
            return Ok(());
        }
        // Its records' payloads, each taken by the record that carries it.
        self.payloads = std::mem::take(&mut batch.payloads);
        let carrier = batch.thread;
        let start = self.threads.get(&carrier).and_then(|s| s.mounted);
        let key = start.unwrap_or(carrier);
        let state = self.threads.remove(&key).unwrap_or_default();
        self.current = (key, state);
        self.carrier = carrier;
        let result = self.batch_slots(carrier, &batch.slots, batch.overhead);
        let (key, state) = std::mem::take(&mut self.current);
        self.put_back(key, state);
        self.payloads.clear();
        result
    }

    /// Reads a batch without writing it (outside a burst, or when the file cannot be written):
    /// which virtual thread each carrier runs is followed, and what is kept of a thread that
    /// ends is let go.
    pub fn follow(&mut self, batch: &Batch) {
        let carrier = batch.thread;
        for r in batch.records() {
            self.counts.records += 1;
            let mounted = self.threads.get(&carrier).and_then(|s| s.mounted);
            match r.kind {
                RecordKind::Mount => self.state(carrier).mounted = Some(r.key as ThreadKey),
                RecordKind::Unmount => self.state(carrier).mounted = None,
                RecordKind::ThreadEnd => {
                    let thread = mounted.unwrap_or(carrier);
                    if thread != UNKNOWN_THREAD {
                        self.threads.remove(&thread);
                        self.symbols.thread_ended(thread);
                    }
                }
                _ => self.counts.outside_burst += 1,
            }
        }
        // A carrier's own state holds nothing else outside a burst.
        if let Some(state) = self.threads.remove(&carrier) {
            self.put_back(carrier, state);
        }
    }

    /// The payload of the record whose key is `key`, in the batch being written.
    fn payload(&mut self, key: u64) -> Option<Payload> {
        let slot = self.payloads.get_mut(usize::try_from(key).ok()?)?;
        Some(std::mem::replace(slot, Payload::Text(String::new())))
    }

    /// Keeps a thread's state in the table, unless it ended or holds nothing.
    fn put_back(&mut self, key: ThreadKey, state: ThreadState) {
        if !state.ended && !state.is_blank() {
            self.threads.insert(key, state);
        }
    }

    /// Makes `key` the thread whose records follow in the batch of `carrier`: a virtual thread
    /// mounted on it, or the carrier itself.
    fn switch_to(&mut self, carrier: ThreadKey, key: ThreadKey) {
        if self.current.0 != key {
            let (old, state) = std::mem::take(&mut self.current);
            self.put_back(old, state);
            let state = self.threads.remove(&key).unwrap_or_default();
            self.current = (key, state);
        }
        self.state(carrier).mounted = (key != carrier).then_some(key);
    }

    /// The records of a batch, common runs in one loop, the rest one by one.
    fn batch_slots(&mut self, carrier: ThreadKey, slots: &[Slot], overhead: u32) -> io::Result<()> {
        let mut i = 0;
        // A scoped burst looks at every record.
        let common = self.scope.is_none();
        while i < slots.len() {
            let n = if common {
                self.common_run(&slots[i..], overhead)?
            } else {
                0
            };
            if n > 0 && self.current.1.held_wait.is_some() {
                // Method records after a Wait: the thread went on without waiting.
                self.current.1.held_wait = None;
            }
            self.counts.records += n as u64;
            i += n;
            let Some((mut record, width)) = Slot::decode(&slots[i..], overhead) else {
                break;
            };
            self.counts.records += 1;
            i += width;
            let thread = self.current.0;
            match record.kind {
                RecordKind::Mount => self.switch_to(carrier, record.key as ThreadKey),
                RecordKind::Unmount => self.switch_to(carrier, carrier),
                _ if thread == UNKNOWN_THREAD => self.counts.unknown_thread += 1,
                _ if self.locked_out(thread)
                    || self
                        .cut
                        .is_some_and(|cut| self.file_ticks(record.ticks) > cut) =>
                {
                    self.left_out(thread, &record)
                }
                RecordKind::MethodEntry if record.arg == PENDING_OBJECT => {
                    self.went_on(thread);
                    let bound = calls::bound_receiver(record.key, &slots[i..], overhead);
                    self.constructor_entry(thread, &record, bound.as_ref())?;
                }
                _ => {
                    record.ticks = self.file_ticks(record.ticks);
                    self.record(thread, &record)?;
                }
            }
        }
        Ok(())
    }

    /// Whether a trigger locked to its thread leaves `thread`'s records out: any thread but the
    /// one its entry was on (until then, any thread but the trigger's and those mounted on it).
    fn locked_out(&self, thread: ThreadKey) -> bool {
        let Some(t) = self.scope.as_ref().and_then(|s| s.trigger) else {
            return false;
        };
        match self.trigger_entered {
            _ if !t.lock => false,
            Some(entered) => thread != entered,
            None => thread != t.thread && self.carrier != t.thread,
        }
    }

    /// A record the burst's scope leaves out (another thread than the trigger's, or after
    /// the trigger's exit): not written; a thread's end is still followed.
    fn left_out(&mut self, thread: ThreadKey, r: &Record) {
        if r.kind == RecordKind::ThreadEnd {
            self.end_thread(thread);
        }
    }

    /// A thread ended: its frames go, its state is dropped once no longer current, and the
    /// registry may forget it. Returns its ID in this file, if it has one.
    fn end_thread(&mut self, thread: ThreadKey) -> Option<ThreadId> {
        let state = self.state(thread);
        state.frames = Vec::new();
        state.depth = 0;
        state.ended = true;
        let id = state.id;
        self.symbols.thread_ended(thread);
        id
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
        self.sink.event(&event)
    }

    /// One record whose ticks are the file's.
    fn record(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        self.tick(r.ticks);
        if !matches!(
            r.kind,
            RecordKind::Sync
                | RecordKind::ObjectSeen
                | RecordKind::Mount
                | RecordKind::Unmount
                | RecordKind::Values
        ) {
            self.went_on(thread);
        }
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
                let id = self.end_thread(thread);
                self.trigger_left(thread, 0, r.ticks);
                match id {
                    Some(id) => self.emit(Event::ThreadEnd {
                        ticks: r.ticks,
                        thread: id,
                    }),
                    None => Ok(()),
                }
            }
            RecordKind::GcStart => self.emit(Event::GcStart { ticks: r.ticks }),
            RecordKind::GcFinish => self.emit(Event::GcFinish { ticks: r.ticks }),
            RecordKind::ObjectAlloc => self.object_alloc(thread, r),
            RecordKind::ObjectSeen => {
                match self.object_def(r.arg, r.key as ClassKey, r.extra, r.ticks)? {
                    Some(def) => self.emit(Event::ObjectDefine(def)),
                    None => Ok(()),
                }
            }
            RecordKind::ObjectFree => self.object_free(r),
            RecordKind::UserEvent => match self.payload(r.key) {
                Some(Payload::Text(text)) => self.emit(Event::UserEvent {
                    ticks: r.ticks,
                    text,
                }),
                _ => Ok(()),
            },
            RecordKind::Lost => self.lost(thread, r),
            RecordKind::Sync => self.sync(thread, r),
            RecordKind::Values => self.values(thread, r),
            // The receiver of a constructor whose entry was dropped (overflow=drop): defined
            // here, as the entry would have (a bound receiver already is).
            RecordKind::ObjectBound => {
                match self.object_def(r.arg, r.extra as ClassKey, NOT_ARRAY, r.ticks)? {
                    Some(def) => self.emit(Event::ObjectDefine(def)),
                    None => Ok(()),
                }
            }
            // Mount and Unmount are followed by `batch_slots`.
            RecordKind::None | RecordKind::Mount | RecordKind::Unmount => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
