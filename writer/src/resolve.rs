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

/// Counts the resolver keeps for `status`, the log and the tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub records: u64,
    pub classes: u32,
    pub threads: u32,
    pub bursts: u32,
    /// Method records whose method the registry did not know.
    pub unknown_methods: u64,
    /// Classes past the format's limit, not traced.
    pub classes_over_limit: u32,
    /// Records that arrived outside a burst (none are expected).
    pub outside_burst: u64,
    /// Records of a virtual thread not followed ([`UNKNOWN_THREAD`]), dropped.
    pub unknown_thread: u64,
    /// Method entries and exits the agent dropped (overflow=drop).
    pub lost_entries: u64,
    pub lost_exits: u64,
    /// Exits of a trigger's frame that end its burst (`end_on_exit`): the agent ends the
    /// burst when this grows.
    pub trigger_exits: u32,
    /// Calls of leaf methods written, whose entry and exit came by one native call (an exit
    /// with no overhead of its own, [`Record::is_bare_exit`]): bench/run.sh counts the
    /// native calls a trace cost with them.
    pub leaf_calls: u64,
}

/// How the user event that marks dropped records begins (`jlive stats` counts them).
pub const LOST_PREFIX: &str = "jlive: overflow=drop: ";

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

    /// A heap dump, whether or not a burst is open: the objects it names are defined first
    /// (a population dump frees those this file defined that the walk did not reach), then
    /// each object's references, the static references of each class, the roots, and its end.
    /// References to objects that cannot be defined (a class not traced) are left out.
    pub fn heap(&mut self, dump: &HeapDump) -> io::Result<()> {
        let ticks = self.file_ticks(dump.ticks);
        self.tick(ticks);
        let mut events = 0u32;
        let mut live = HashSet::with_capacity(dump.objects.len());
        let mut arrays = HashSet::new();
        for &(object, class, length) in &dump.objects {
            live.insert(object);
            if length != NOT_ARRAY {
                arrays.insert(object);
            }
            if let Some(def) = self.object_def(object, class, length, ticks)? {
                self.emit(Event::ObjectDefine(def))?;
                events += 1;
            }
        }
        if dump.population {
            let mut dead: Vec<u32> = self
                .objects
                .keys()
                .copied()
                .filter(|&o| o < dump.below && !live.contains(&o))
                .collect();
            dead.sort_unstable();
            for object in dead {
                self.objects.remove(&object);
                self.emit(Event::Free { ticks, object })?;
                events += 1;
            }
        }
        let part = |part| Event::Heap {
            ticks,
            part: Box::new(part),
        };
        for (from, mut to) in grouped(&dump.refs) {
            if !self.object_defined(from) {
                continue;
            }
            to.retain(|&o| self.object_defined(o));
            self.emit(part(HeapPart::Refs {
                object: from,
                array: arrays.contains(&from),
                to,
            }))?;
            events += 1;
        }
        for (class, mut to) in grouped(&dump.statics) {
            to.retain(|&o| self.object_defined(o));
            let Some(class) = self.class_id(class, ticks)? else {
                continue;
            };
            if !to.is_empty() {
                self.emit(part(HeapPart::Statics { class, to }))?;
                events += 1;
            }
        }
        for &(kind, object, thread) in &dump.roots {
            if self.object_defined(object) {
                // A thread this file has defined (a root names none other: outside a burst no
                // thread is defined).
                let thread = thread.and_then(|key| match self.current.0 == key {
                    true => self.current.1.id,
                    false => self.threads.get(&key).and_then(|s| s.id),
                });
                self.emit(part(HeapPart::Root {
                    kind,
                    thread,
                    object,
                }))?;
                events += 1;
            }
        }
        self.emit(part(match dump.end {
            DumpEnd::Generation => HeapPart::Generation,
            DumpEnd::Report => HeapPart::EndOfReport { events },
        }))
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

    /// The waits of threads still waiting as a burst or the file ends: open there.
    fn write_held_waits(&mut self) -> io::Result<()> {
        let held: Vec<Box<model::Sync>> = self
            .threads
            .values_mut()
            .chain([&mut self.current.1])
            .filter_map(|s| s.held_wait.take())
            .collect();
        for wait in held {
            self.emit(Event::Sync(wait))?;
        }
        Ok(())
    }

    /// Writes one thread's batch. The batch of a carrier thread holds, between a Mount and its
    /// Unmount, the records of the virtual thread mounted on it: they are that thread's.
    pub fn batch(&mut self, batch: &Batch) -> io::Result<()> {
        if !self.in_burst {
            self.follow(batch);
            return Ok(());
        }
        let carrier = batch.thread;
        let start = self.threads.get(&carrier).and_then(|s| s.mounted);
        let key = start.unwrap_or(carrier);
        let state = self.threads.remove(&key).unwrap_or_default();
        self.current = (key, state);
        self.carrier = carrier;
        let result = self.batch_slots(carrier, &batch.slots, batch.overhead);
        let (key, state) = std::mem::take(&mut self.current);
        self.put_back(key, state);
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
                kind => {
                    // Details kept for the record are let go too.
                    self.let_go(kind, r.key);
                    self.counts.outside_burst += 1;
                }
            }
        }
        // A carrier's own state holds nothing else outside a burst.
        if let Some(state) = self.threads.remove(&carrier) {
            self.put_back(carrier, state);
        }
    }

    /// Lets go of what the registry keeps for a record that is not written.
    fn let_go(&self, kind: RecordKind, key: u64) {
        match kind {
            RecordKind::Sync => drop(self.symbols.sync(key)),
            RecordKind::Values => drop(self.symbols.values(key)),
            _ => {}
        }
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
                _ if thread == UNKNOWN_THREAD => {
                    // Details kept for the record are let go.
                    self.let_go(record.kind, record.key);
                    self.counts.unknown_thread += 1
                }
                _ if self.locked_out(thread)
                    || self
                        .cut
                        .is_some_and(|cut| self.file_ticks(record.ticks) > cut) =>
                {
                    self.left_out(thread, &record)
                }
                RecordKind::MethodEntry if record.arg == PENDING_OBJECT => {
                    self.went_on(thread);
                    let bound = bound_receiver(record.key, &slots[i..], overhead);
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
        self.let_go(r.kind, r.key);
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

    /// Writes the leading records of `slots` that are the common case, and returns how many
    /// it wrote: one-slot entries of a method already resolved (dense key, traced) without a
    /// receiver, and one-slot exits of the top frame, on a thread that has its ID. They are
    /// what a batch is made of; each costs here a table lookup, a frame push or pop and the
    /// sink's bytes. [`Resolver::record`] writes the same events for them, and handles
    /// everything else.
    fn common_run(&mut self, slots: &[Slot], overhead: u32) -> io::Result<usize> {
        match self.config.stck {
            None => self.common_run_in::<false>(slots, overhead),
            Some(_) => self.common_run_in::<true>(slots, overhead),
        }
    }

    /// [`Resolver::common_run`], `STCK` saying whether ticks and overheads are mapped to
    /// STORE CLOCK values.
    #[inline(always)]
    fn common_run_in<const STCK: bool>(
        &mut self,
        slots: &[Slot],
        overhead: u32,
    ) -> io::Result<usize> {
        let state = &mut self.current.1;
        let Some(thread) = state.id else {
            return Ok(0);
        };
        if self.config.entries_only {
            return Ok(0);
        }
        let stck = self.config.stck.unwrap_or(Stck::new(0, 0, 1_000_000));
        let mut last_ticks = self.last_ticks;
        // Kept in registers for the run, and stored once at its end: stored and loaded again
        // per call, a narrow store followed by a wide load of the pair stalled each entry.
        let (mut depth, mut tickets) = (state.depth, state.tickets);
        let mut leaves = 0;
        let mut n = 0;
        let mut result = Ok(());
        for s in slots {
            let key = MethodKey::from(s.key());
            let ticks = if STCK { stck.of(s.ticks) } else { s.ticks };
            match s.form() {
                FORM_ENTRY if s.arg == NO_OBJECT => {
                    let Some(&resolved) = self.dense.get(key as usize) else {
                        break;
                    };
                    let Some(method) = resolved.method() else {
                        break;
                    };
                    depth += 1;
                    tickets = tickets.wrapping_add(1);
                    state.frames.push(Frame {
                        key,
                        method: resolved,
                        overhead,
                        ticket: tickets,
                    });
                    result = self.sink.enter(Enter {
                        ticks,
                        thread,
                        method,
                        object: model::NO_OBJECT,
                        depth,
                        ticket: tickets,
                    });
                }
                form @ (FORM_EXIT | FORM_BARE_EXIT) => {
                    match state.frames.last() {
                        Some(top) if top.key == key => {}
                        _ => break,
                    }
                    if let Some(frame) = state.frames.pop() {
                        if let Some(method) = frame.method.method() {
                            let own = if form == FORM_EXIT { overhead } else { 0 };
                            leaves += u64::from(own == 0); // Record::is_bare_exit
                            let spent = u64::from(frame.overhead) + u64::from(own);
                            result = self.sink.leave(Leave {
                                ticks,
                                thread,
                                method,
                                depth,
                                ticket: frame.ticket,
                                overhead: if STCK { stck.span(spent) } else { spent },
                            });
                            depth -= 1;
                        }
                    }
                }
                _ => break,
            }
            last_ticks = last_ticks.max(ticks);
            n += 1;
            if result.is_err() {
                break;
            }
        }
        (state.depth, state.tickets) = (depth, tickets);
        self.last_ticks = last_ticks;
        self.counts.leaf_calls += leaves;
        result.map(|()| n)
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
            RecordKind::UserEvent => match self.symbols.message(r.key) {
                Some(text) => self.emit(Event::UserEvent {
                    ticks: r.ticks,
                    text,
                }),
                None => Ok(()),
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

    /// A call's argument or return values, for a traced method on a thread inside the burst
    /// (an object this file has not defined is an unknown one).
    fn values(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let Some(info) = self.symbols.values(r.key) else {
            return Ok(());
        };
        // They belong to the thread's open call of that method (its entry may have been
        // dropped by overflow=drop, or lie before the burst).
        if self.current.1.frames.last().map(|f| f.key) != Some(info.method) {
            return Ok(());
        }
        let Some(method) = self.method(info.method, r.ticks)? else {
            return Ok(());
        };
        let thread = self.thread_id(thread, r.ticks)?;
        let known = |o: u32| o == NO_OBJECT || self.object_defined(o);
        let values = info
            .values
            .into_iter()
            .map(|v| match v {
                Value::Object(o) if !known(o) => Value::Unknown,
                v => v,
            })
            .collect();
        let object = if known(info.object) {
            info.object
        } else {
            NO_OBJECT
        };
        self.emit(Event::Values(Box::new(Values {
            ticks: r.ticks,
            thread,
            method,
            object,
            kind: info.kind,
            values,
        })))
    }

    /// A concurrency event: its stack's classes are defined first (every class, traced or not:
    /// a stack shows where the thread was).
    fn sync(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let Some(info) = self.symbols.sync(r.key) else {
            return Ok(());
        };
        let id = self.thread_id(thread, r.ticks)?;
        // The owner is defined now if it was not: its own records may reach the writer later
        // (it holds the monitor), or never (it has recorded nothing since the burst began).
        // An owner not defined yet is defined now, as of the burst's beginning: its own events,
        // earlier than this one, may reach the writer later (it holds the monitor).
        let known = info.owner_key.and_then(|key| self.state(key).id);
        let owner_thread = match (
            known,
            self.thread_hashes.get(&info.owner_hash),
            info.owner_key,
        ) {
            _ if info.owner_hash == 0 => None,
            (Some(id), _, _) | (None, Some(&id), _) => Some(id),
            (None, None, Some(key)) if self.symbols.thread(key).is_some() => {
                Some(self.thread_id(key, self.burst_began.min(r.ticks))?)
            }
            _ => None,
        };
        // The object, defined first if this file has not (after a roll, its tag is old).
        let object_id = match info.object_class {
            Some(class) if info.object_id != NO_OBJECT && !self.object_defined(info.object_id) => {
                match self.object_def(info.object_id, class, NOT_ARRAY, r.ticks)? {
                    Some(def) => {
                        self.emit(Event::ObjectDefine(def))?;
                        info.object_id
                    }
                    None => NO_OBJECT,
                }
            }
            _ if self.object_defined(info.object_id) => info.object_id,
            _ => NO_OBJECT,
        };
        let mut stack = Vec::with_capacity(info.frames.len());
        for (m, location) in info.frames {
            let slot = self.class_slot(m.class, r.ticks)?;
            if let Some(ClassSlot {
                id: Some(class),
                methods,
                ..
            }) = slot
            {
                if usize::from(m.index) < methods {
                    let line = self.symbols.class(m.class).map_or(0, |c| {
                        c.methods
                            .get(usize::from(m.index))
                            .map_or(0, |d| d.line_at(location))
                    });
                    stack.push(model::Frame {
                        line,
                        method: MethodId {
                            class,
                            index: m.index,
                        },
                        location,
                    });
                }
            }
        }
        let mut sync = Box::new(model::Sync {
            ticks: r.ticks,
            thread: id,
            kind: info.kind,
            thread_hash: info.thread_hash,
            object: info.object_hash,
            owner: info.owner_hash,
            object_id,
            owner_thread,
            stack,
        });
        let state = self.state(thread);
        let held = state.held_wait.take();
        let same = |k: SyncKind, (kind, hash, object): (SyncKind, u32, u32)| {
            kind == k && (k == SyncKind::Join || (hash, object) == (sync.object, sync.object_id))
        };
        if let Some(wait) = held {
            if sync.kind == SyncKind::Waited && wait.identity() == sync.identity() {
                state
                    .spans
                    .push((SyncKind::Wait, wait.object, wait.object_id));
                self.emit(Event::Sync(wait))?;
            }
        }
        let state = self.state(thread);
        match sync.kind {
            SyncKind::Wait => {
                state.held_wait = Some(sync);
                return Ok(());
            }
            kind if kind.end().is_some() => {
                state.spans.push((kind, sync.object, sync.object_id));
            }
            kind => {
                let begin = SyncKind::ALL.into_iter().find(|k| k.end() == Some(kind));
                if let Some(begin) = begin {
                    match state.spans.last() {
                        Some(&top) if same(begin, top) => {
                            state.spans.pop();
                            (sync.object, sync.object_id) = (top.1, top.2);
                        }
                        // Begun before the burst (or never recorded): not written.
                        _ => return Ok(()),
                    }
                }
            }
        }
        self.emit(Event::Sync(sync))
    }

    /// A record of `thread` other than a concurrency event: a Wait it holds did not wait (the
    /// thread went on), and is dropped.
    #[inline]
    fn went_on(&mut self, thread: ThreadKey) {
        let state = self.state(thread);
        if state.held_wait.is_some() {
            state.held_wait = None;
        }
    }

    /// Method records of `thread` were dropped (overflow=drop): a user event says how many,
    /// and the thread's open frames are left there, so that what follows starts from an
    /// empty stack (the exits of those frames, when they come, find none and are not written).
    fn lost(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        self.counts.lost_entries += r.key;
        self.counts.lost_exits += u64::from(r.arg);
        let id = self.thread_id(thread, r.ticks)?;
        let state = state_of(&mut self.current, &mut self.threads, thread);
        let closed = state.leave_above(&mut self.sink, id, 0, r.ticks, |_| 0)?;
        self.trigger_left(thread, 0, r.ticks);
        self.emit(Event::UserEvent {
            ticks: r.ticks,
            text: format!(
                "{}{} entries and {} exits of thread {} dropped; {} open frames left here",
                LOST_PREFIX, r.key, r.arg, id, closed
            ),
        })
    }

    fn method_entry(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let mut target = self.method(r.key, r.ticks)?;
        let state = state_of(&mut self.current, &mut self.threads, thread);
        // With methods=entry no frames are kept and none is ever left.
        let keep = !self.config.entries_only;
        if let Some(scope) = &self.scope {
            if scope.depth.is_some_and(|d| keep && state.depth >= d) {
                target = None;
            }
            if let Some(t) = scope.trigger {
                let on = thread == t.thread || self.carrier == t.thread;
                if self.trigger_entered.is_none() && on && r.key == t.method {
                    self.trigger_entered = Some(thread);
                    self.trigger_base = state.frames.len();
                }
            }
        }
        let (depth, ticket) = state.enter(r.key, target, r.extra, keep);
        let Some(method) = target else {
            return Ok(());
        };
        let id = match state.id {
            Some(id) => id,
            None => self.thread_id(thread, r.ticks)?,
        };
        let object = if r.arg != NO_OBJECT && self.object_defined(r.arg) {
            r.arg
        } else {
            model::NO_OBJECT
        };
        self.sink.enter(Enter {
            ticks: r.ticks,
            thread: id,
            method,
            object,
            depth,
            ticket,
        })
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
        entry.ticks = self.file_ticks(r.ticks);
        entry.arg = NO_OBJECT;
        self.tick(entry.ticks);
        if let Some(b) = bound {
            if let Some(def) =
                self.object_def(b.arg, b.extra as ClassKey, NOT_ARRAY, entry.ticks)?
            {
                self.emit(Event::ObjectDefine(def))?;
            }
            entry.arg = b.arg;
        }
        self.method_entry(thread, &entry)
    }

    fn method_exit(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let state = state_of(&mut self.current, &mut self.threads, thread);
        // The frame this exit closes is the top one, except when exits were missed (an
        // exception out of a constructor's super() call under capture=bci): then the frames
        // above it are left here too. An exit of no open frame was entered before the burst.
        let Some(at) = state.frames.iter().rposition(|f| f.key == r.key) else {
            return Ok(());
        };
        let Some(id) = state.id else {
            state.frames.truncate(at); // a thread with no traced entry has nothing to leave
            self.trigger_left(thread, at, r.ticks);
            return Ok(());
        };
        if r.is_bare_exit() && state.frames[at].method.method().is_some() {
            self.counts.leaf_calls += 1;
        }
        let stck = &self.config.stck;
        let overhead = |f: &Frame| {
            let spent = u64::from(f.overhead) + u64::from(r.extra);
            stck.as_ref().map_or(spent, |s| s.span(spent))
        };
        state.leave_above(&mut self.sink, id, at, r.ticks, overhead)?;
        let left = state.frames.len();
        self.trigger_left(thread, left, r.ticks);
        Ok(())
    }

    /// The trigger's thread is down to `frames` frames: once below the trigger's, with
    /// "at trigger exit", nothing later is written and the agent is told.
    fn trigger_left(&mut self, thread: ThreadKey, frames: usize, ticks: u64) {
        let Some(t) = self.scope.as_ref().and_then(|s| s.trigger) else {
            return;
        };
        if t.end_on_exit
            && self.trigger_entered == Some(thread)
            && self.cut.is_none()
            && frames <= self.trigger_base
        {
            self.cut = Some(ticks);
            self.counts.trigger_exits += 1;
        }
    }

    /// A method, defining its class if needed; None when the method is unknown, its class
    /// excluded or past the class limit.
    fn method(&mut self, key: MethodKey, ticks: u64) -> io::Result<Option<MethodId>> {
        if let Some(&cached) = self.dense.get(key as usize) {
            if cached != Resolved::UNKNOWN {
                return Ok(cached.method());
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
            Some(m) if !self.within_limit(m) => None,
            Some(m) => {
                let mut slot = self.class_slot(m.class, ticks)?;
                if slot.is_some_and(|s| s.id.is_some() && usize::from(m.index) >= s.methods) {
                    self.classes.remove(&m.class);
                    slot = self.class_slot(m.class, ticks)?;
                }
                match slot {
                    Some(ClassSlot {
                        id: Some(class),
                        traced: true,
                        methods,
                    }) if usize::from(m.index) < methods => Some(MethodId {
                        class,
                        index: m.index,
                    }),
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

    /// Whether the open burst's "Limit to" keeps a method's invocations (true without one).
    fn within_limit(&self, m: MethodRef) -> bool {
        let Some(scope) = self.scope.as_ref().filter(|s| !s.limit.is_empty()) else {
            return true;
        };
        let Some(class) = self.symbols.class(m.class) else {
            return false;
        };
        let Some(method) = class.methods.get(usize::from(m.index)) else {
            return false;
        };
        scope
            .limit
            .iter()
            .any(|(c, n)| name_matches(c, &class.name) && name_matches(n, &method.name))
    }

    fn class_id(&mut self, key: ClassKey, ticks: u64) -> io::Result<Option<ClassId>> {
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
            Some(k) => self.class_id(k, ticks)?,
            None => None,
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
        self.write_class(id, &info, superclass, interfaces, ticks)?;
        let slot = ClassSlot {
            id: Some(id),
            traced,
            methods: info.methods.len(),
        };
        self.classes.insert(key, slot);
        Ok(Some(slot))
    }

    fn assign_class_id(&mut self, name: &str, ticks: u64) -> io::Result<Option<ClassId>> {
        let reserved = match name {
            "java/lang/Object" => Some(CLASS_OBJECT),
            "java/lang/Thread" => Some(CLASS_THREAD),
            _ => None,
        };
        if let Some(id) = reserved {
            if !self.classes.values().any(|s| s.id == Some(id)) {
                return Ok(Some(id));
            }
        }
        if self.next_class >= self.max_classes {
            self.counts.classes_over_limit += 1;
            if self.counts.classes_over_limit == 1 {
                let text = format!(
                    "more than {} classes: further classes are not traced",
                    self.max_classes
                );
                self.warnings.push(text.clone());
                self.emit(Event::UserEvent {
                    ticks,
                    text: format!("jlive: {}", text),
                })?;
            }
            return Ok(None);
        }
        let id = self.next_class;
        self.next_class += 1;
        Ok(Some(id))
    }

    fn write_class(
        &mut self,
        id: ClassId,
        info: &ClassInfo,
        superclass: Option<ClassId>,
        interfaces: Vec<ClassId>,
        ticks: u64,
    ) -> io::Result<()> {
        self.counts.classes += 1;
        self.emit(Event::ClassDefine(Box::new(ClassDef {
            ticks,
            id,
            name: info.name.clone(),
            source_file: info.source_file.clone().unwrap_or_default(),
            superclass,
            interfaces,
            methods: info.methods.clone(),
            fields: info.fields.clone(),
        })))
    }

    /// Object and Thread take IDs 0 and 1 in every file, whatever the registry knows.
    fn define_reserved_classes(&mut self, ticks: u64) -> io::Result<()> {
        for (name, id) in [
            ("java/lang/Object", CLASS_OBJECT),
            ("java/lang/Thread", CLASS_THREAD),
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
                    let superclass = (id != CLASS_OBJECT).then_some(CLASS_OBJECT);
                    self.write_class(id, &info, superclass, Vec::new(), ticks)?;
                    self.classes.insert(
                        u32::MAX - id,
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

    /// The ID of a thread, defined the first time.
    fn thread_id(&mut self, key: ThreadKey, ticks: u64) -> io::Result<ThreadId> {
        if let Some(id) = self.state(key).id {
            return Ok(id);
        }
        let id = self.next_thread;
        self.next_thread += 1;
        self.counts.threads += 1;
        self.state(key).id = Some(id);
        let info = self.symbols.thread(key).unwrap_or_else(|| ThreadInfo {
            name: format!("thread-{}", key),
            ..ThreadInfo::default()
        });
        if info.hash != 0 {
            self.thread_hashes.insert(info.hash, id);
        }
        self.emit(Event::ThreadDefine(Box::new(ThreadDef {
            ticks,
            id,
            name: info.name,
            hash: info.hash,
            group: info.group,
            parent: info.parent,
        })))?;
        Ok(id)
    }

    fn object_defined(&self, object: u32) -> bool {
        self.objects.contains_key(&object)
    }

    /// The definition of an object new to this file (its class, and an array's element,
    /// defined first), marked as defined; None when it is defined already, or its class is
    /// unknown or not traced.
    fn object_def(
        &mut self,
        object: u32,
        class: ClassKey,
        length: u32,
        ticks: u64,
    ) -> io::Result<Option<ObjectDef>> {
        if object == NO_OBJECT || object == 0 || self.object_defined(object) {
            return Ok(None);
        }
        let Some(info) = self.symbols.class(class) else {
            return Ok(None);
        };
        let Some(class_id) = self.class_id(class, ticks)? else {
            return Ok(None);
        };
        let element = match info.array {
            None => None,
            Some(ArrayKind::Primitive(d)) => Some(Element::Primitive(d)),
            Some(ArrayKind::Objects(e)) => Some(Element::Class(
                self.class_id(e, ticks)?.unwrap_or(CLASS_OBJECT),
            )),
        };
        self.objects.insert(object, class);
        Ok(Some(ObjectDef {
            ticks,
            object,
            class: class_id,
            array: element.map(|element| ArrayDef {
                length: if length == NOT_ARRAY { 0 } else { length },
                element,
            }),
        }))
    }

    fn object_alloc(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let Some(object) = self.object_def(r.arg, r.key as ClassKey, r.extra, r.ticks)? else {
            return Ok(());
        };
        let thread = self.thread_id(thread, r.ticks)?;
        self.emit(Event::Alloc { thread, object })
    }

    fn object_free(&mut self, r: &Record) -> io::Result<()> {
        if !self.object_defined(r.arg) {
            return Ok(());
        }
        self.objects.remove(&r.arg);
        self.emit(Event::Free {
            ticks: r.ticks,
            object: r.arg,
        })
    }
}

/// `(from, to)` pairs as each `from` with its `to`s, in the order given (a `to` repeated
/// right after itself, once).
fn grouped(pairs: &[(u32, u32)]) -> Vec<(u32, Vec<u32>)> {
    let mut sorted = pairs.to_vec();
    sorted.sort_by_key(|p| p.0);
    let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
    for (from, to) in sorted {
        match groups.last_mut() {
            Some((f, list)) if *f == from => {
                if list.last() != Some(&to) {
                    list.push(to);
                }
            }
            _ => groups.push((from, vec![to])),
        }
    }
    groups
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
            // Another thread's records follow.
            RecordKind::Mount | RecordKind::Unmount => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Collect;

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
            let method = |name: &str| MethodDef {
                name: name.into(),
                signature: "()V".into(),
                access: 1,
                lines: Vec::new(),
            };
            let (name, methods) = match key {
                1 => ("java/lang/Object", vec![]),
                2 => ("java/lang/Thread", vec![]),
                4 => ("app/A", ["a", "b", "c", "d"].map(method).to_vec()),
                5 => ("app/Skip", vec![method("s")]),
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
                ..Default::default()
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

    /// The events made of `batches`: by `batch` (common runs included), or record by record
    /// through `record`, which handles every kind of record.
    fn resolve(batches: &[Batch], record_by_record: bool, stck: Option<Stck>) -> Vec<Event> {
        let config = ResolverConfig {
            filter: ClassFilter::new(&[], &["app/Skip".to_string()]),
            entries_only: false,
            stck,
        };
        let mut s = Resolver::new(Collect::default(), Arc::new(Registry), config);
        s.begin_burst(1).unwrap();
        for b in batches {
            if record_by_record {
                let state = s.threads.remove(&b.thread).unwrap_or_default();
                s.current = (b.thread, state);
                for mut r in b.records() {
                    r.ticks = s.file_ticks(r.ticks);
                    s.record(b.thread, &r).unwrap();
                }
                let (key, state) = std::mem::take(&mut s.current);
                s.threads.insert(key, state);
            } else {
                s.batch(b).unwrap();
            }
        }
        s.finish(Some(2500)).unwrap().0 .0
    }

    /// A batch of entries (`Some(key)`) and exits (`None`: of the top frame) from tick 10 on.
    fn calls(thread: ThreadKey, from: u64, calls: &[Option<MethodKey>]) -> Batch {
        let mut b = Batch::new(thread, 3);
        let mut open = Vec::new();
        for (i, c) in calls.iter().enumerate() {
            let ticks = from + i as u64;
            let r = match *c {
                Some(key) => {
                    open.push(key);
                    Record::new(RecordKind::MethodEntry, ticks, key, NO_OBJECT, 3)
                }
                None => Record::new(RecordKind::MethodExit, ticks, open.pop().unwrap(), 0, 3),
            };
            b.push(&r);
        }
        b
    }

    /// Entries as (method index in app/A: a b c d, depth).
    type Entries = Vec<(u16, u32)>;

    /// The entries of a burst with `scope` and of an unscoped one after it, and the trigger
    /// exits counted.
    fn entered(scope: BurstScope, batches: &[Batch]) -> (Entries, Entries, u32) {
        let mut s = Resolver::new(
            Collect::default(),
            Arc::new(Registry),
            ResolverConfig::default(),
        );
        let mut bursts = Vec::new();
        for scope in [scope, BurstScope::default()] {
            s.begin_scoped(1, scope).unwrap();
            for b in batches {
                s.batch(b).unwrap();
            }
            s.end_burst(1000).unwrap();
            let events = std::mem::take(&mut s.sink.0);
            bursts.push(
                events
                    .iter()
                    .filter_map(|e| match e {
                        Event::MethodEnter(e) => Some((e.method.index, e.depth)),
                        _ => None,
                    })
                    .collect(),
            );
        }
        let exits = s.counts.trigger_exits;
        (bursts.remove(0), bursts.remove(0), exits)
    }

    #[test]
    fn a_burst_scope_limits_methods_and_depth_for_that_burst_only() {
        let (a, b, c) = (Some(0), Some(1), Some(2));
        let work = [calls(7, 10, &[a, b, c, None, None, b, None, None])];
        let all = vec![(0, 1), (1, 2), (2, 3), (1, 2)];
        let limit = BurstScope {
            limit: vec![("app/A".into(), "b".into())],
            ..BurstScope::default()
        };
        assert_eq!(
            entered(limit, &work),
            (vec![(1, 1), (1, 1)], all.clone(), 0)
        );
        let depth = BurstScope {
            depth: Some(2),
            ..BurstScope::default()
        };
        assert_eq!(
            entered(depth, &work),
            (vec![(0, 1), (1, 2), (1, 2)], all, 0)
        );
    }

    #[test]
    fn a_trigger_scope_keeps_its_thread_until_its_exit() {
        let (a, b, c) = (Some(0), Some(1), Some(2));
        let work = [
            calls(8, 5, &[a, None]),
            calls(7, 10, &[b, c, None, None, a, None]),
            calls(8, 30, &[c, None]),
        ];
        let trigger = |lock| BurstScope {
            trigger: Some(TriggerScope {
                thread: 7,
                method: 1,
                lock,
                end_on_exit: true,
            }),
            ..BurstScope::default()
        };
        let every = vec![(0, 1), (1, 1), (2, 2), (0, 1), (2, 1)];
        // Locked: thread 7 only, up to b's exit at tick 13.
        assert_eq!(
            entered(trigger(true), &work),
            (vec![(1, 1), (2, 2)], every.clone(), 1)
        );
        // Not locked: thread 8's records before the cut too, none after it.
        assert_eq!(
            entered(trigger(false), &work),
            (vec![(0, 1), (1, 1), (2, 2)], every, 1)
        );
    }

    /// Object IDs rise for the whole run: one near the top of the range costs one entry, not
    /// a table up to it (16 GiB), and a freed object is forgotten.
    #[test]
    fn objects_are_kept_by_id_not_in_a_table_up_to_it() {
        let mut s = Resolver::new(
            Collect::default(),
            Arc::new(Registry),
            ResolverConfig::default(),
        );
        s.begin_burst(1).unwrap();
        let mut b = Batch::new(7, 3);
        for (i, id) in [0xFFFF_FF00u32, 3, 0xFFFF_FF01].into_iter().enumerate() {
            b.push(&Record::new(
                RecordKind::ObjectAlloc,
                10 + i as u64,
                4,
                id,
                NOT_ARRAY,
            ));
        }
        b.push(&Record::new(RecordKind::ObjectFree, 20, 0, 3, 0));
        s.batch(&b).unwrap();
        assert_eq!(s.objects.len(), 2);
        let events = s.finish(None).unwrap().0 .0;
        let allocs = events
            .iter()
            .filter(|e| matches!(e, Event::Alloc { .. }))
            .count();
        assert_eq!(allocs, 3);
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::Free { object: 3, .. })));
    }

    /// A carrier's batch: `(kind, key)` records at ticks 1, 2, ...
    fn carrier_batch(carrier: ThreadKey, from: u64, records: &[(RecordKind, u64)]) -> Batch {
        let mut b = Batch::new(carrier, 3);
        for (i, &(kind, key)) in records.iter().enumerate() {
            let extra = if kind == RecordKind::MethodEntry || kind == RecordKind::MethodExit {
                3
            } else {
                0
            };
            let arg = if kind == RecordKind::MethodEntry {
                NO_OBJECT
            } else {
                0
            };
            b.push(&Record::new(kind, from + i as u64, key, arg, extra));
        }
        b
    }

    /// The events as "thread what": thread names, entries and leaves by method key.
    fn story(events: &[Event]) -> Vec<String> {
        let mut names = HashMap::new();
        let mut out = Vec::new();
        for e in events {
            let (thread, what) = match e {
                Event::ThreadDefine(t) => {
                    names.insert(t.id, t.name.clone());
                    continue;
                }
                Event::ThreadStart { thread, .. } => (*thread, "start".to_string()),
                Event::ThreadEnd { thread, .. } => (*thread, "end".to_string()),
                Event::MethodEnter(e) => (e.thread, format!("enter {}", e.method.index)),
                Event::MethodLeave(l) => (l.thread, format!("leave {}", l.method.index)),
                _ => continue,
            };
            out.push(format!("{} {}", names[&thread], what));
        }
        out
    }

    /// A virtual thread's records lie in the batches of the carriers that ran it, between a
    /// Mount and an Unmount: they are its own, its stack carried from one carrier to the
    /// next; its carrier's records around them are the carrier's. Its end lets its state go.
    #[test]
    fn a_virtual_threads_records_are_its_own_on_any_carrier() {
        use RecordKind::{
            MethodEntry as In, MethodExit as Out, Mount, ThreadEnd, ThreadStart, Unmount,
        };
        let config = ResolverConfig {
            filter: ClassFilter::new(&[], &[]),
            entries_only: false,
            stck: None,
        };
        let mut s = Resolver::new(Collect::default(), Arc::new(Registry), config);
        // Mounted before the burst: followed all the same.
        s.batch(&carrier_batch(7, 1, &[(Mount, 21)])).unwrap();
        s.begin_burst(5).unwrap();
        let batches = [
            carrier_batch(7, 10, &[(In, 0), (Unmount, 0), (In, 1), (Mount, 20)]),
            carrier_batch(7, 20, &[(ThreadStart, 0), (In, 1), (In, 2), (Unmount, 0)]),
            carrier_batch(7, 30, &[(Out, 1)]),
            carrier_batch(8, 40, &[(Mount, 20), (Out, 2), (Out, 1), (ThreadEnd, 0)]),
            carrier_batch(8, 50, &[(Unmount, 0), (In, 0)]),
            // A virtual thread not followed: its records are nobody's.
            carrier_batch(
                9,
                60,
                &[(Mount, u64::from(UNKNOWN_THREAD)), (In, 0), (Out, 0)],
            ),
            carrier_batch(9, 70, &[(In, 1), (Unmount, 0), (In, 2)]),
        ];
        for b in &batches {
            s.batch(b).unwrap();
        }
        assert!(
            !s.threads.contains_key(&20),
            "an ended thread's state is let go"
        );
        assert_eq!(s.counts().unknown_thread, 3);
        assert_eq!(s.mounts(), vec![]);
        s.batch(&carrier_batch(8, 80, &[(Mount, 22)])).unwrap();
        assert_eq!(s.mounts(), vec![(8, 22)]);
        let events = s.finish(None).unwrap().0 .0;
        assert_eq!(
            story(&events),
            [
                "t21 enter 0",
                "t7 enter 1",
                "t20 start",
                "t20 enter 1",
                "t20 enter 2",
                "t7 leave 1",
                "t20 leave 2",
                "t20 leave 1",
                "t20 end",
                "t8 enter 0",
                "t9 enter 2",
            ]
        );
    }

    #[test]
    fn common_runs_write_what_record_by_record_writes() {
        let batches = batches();
        for stck in [
            None,
            Some(Stck::new(5, 1_795_564_800_000_000_000, 2_600_000_000)),
        ] {
            let by_record = resolve(&batches, true, stck);
            let by_batch = resolve(&batches, false, stck);
            // Depths, tickets and frames as the model's rules have them.
            let mut checker = crate::check::Checker::new(crate::format::Format::Tptp);
            for (at, e) in by_record.iter().enumerate() {
                checker.event(at, e).unwrap_or_else(|e| panic!("{}", e));
            }
            let calls = by_record
                .iter()
                .filter(|e| matches!(e, Event::MethodEnter(_)))
                .count();
            assert!(calls > 5_000, "{} calls", calls);
            assert!(by_batch == by_record, "stck {:?}: the events differ", stck);
        }
    }

    /// A leaf's exit, stored with its entry by one call, adds no overhead of its own: its
    /// leave carries its entry's alone, in a common run as record by record.
    #[test]
    fn a_bare_exit_adds_no_overhead_of_its_own() {
        let mut b = Batch::new(7, 3);
        b.push(&Record::new(RecordKind::MethodEntry, 10, 0, NO_OBJECT, 3));
        b.push(&Record::new(RecordKind::MethodEntry, 11, 1, NO_OBJECT, 3));
        b.push(&Record::new(RecordKind::MethodExit, 11, 1, 0, 0));
        b.push(&Record::new(RecordKind::MethodExit, 12, 0, 0, 3));
        assert_eq!(b.slots.len(), 4, "one slot each");
        for by_record in [true, false] {
            let leaves: Vec<u64> = resolve(std::slice::from_ref(&b), by_record, None)
                .iter()
                .filter_map(|e| match e {
                    Event::MethodLeave(l) => Some(l.overhead),
                    _ => None,
                })
                .collect();
            assert_eq!(leaves, [3, 6], "record by record: {}", by_record);
        }
    }

    /// Whether the common run or the record-by-record path writes it, a leaf's bare exit is
    /// counted once; an ordinary exit, or a leaf's exit not written, never.
    #[test]
    fn leaf_calls_are_counted_on_both_paths() {
        let mut b = Batch::new(7, 3);
        b.push(&Record::new(RecordKind::MethodEntry, 10, 0, NO_OBJECT, 3));
        b.push(&Record::new(RecordKind::MethodEntry, 11, 1, NO_OBJECT, 3));
        b.push(&Record::new(RecordKind::MethodExit, 11, 1, 0, 0));
        // A leaf of a method the registry does not know: no Leave is written, none counted.
        b.push(&Record::new(RecordKind::MethodEntry, 12, 7, NO_OBJECT, 3));
        b.push(&Record::new(RecordKind::MethodExit, 12, 7, 0, 0));
        b.push(&Record::new(RecordKind::MethodExit, 13, 0, 0, 3));
        let mut s = Resolver::new(
            Collect::default(),
            Arc::new(Registry),
            ResolverConfig::default(),
        );
        s.begin_burst(1).unwrap();
        s.batch(&b).unwrap();
        assert_eq!(s.counts.leaf_calls, 1, "in a common run");
        s.end_burst(20).unwrap();
        // A scoped burst reads every record by itself.
        let depth = BurstScope {
            depth: Some(9),
            ..BurstScope::default()
        };
        s.begin_scoped(30, depth).unwrap();
        s.batch(&b).unwrap();
        assert_eq!(s.counts.leaf_calls, 2, "record by record");
        assert_eq!(s.counts.records, 12);
    }

    /// The JinsightLive file of these batches, in both byte orders, is the one the writer
    /// before the model wrote (writer/src/session.rs of aeb5782 on the same batches:
    /// 563,365 bytes of these FNV-1a hashes).
    #[test]
    fn jinsight_bytes_are_those_of_the_writer_before_the_model() {
        use crate::jinsight::{JinsightSink, PLATFORM_LINUX_390, PLATFORM_LINUX_X86};
        fn write<const BIG: bool>(platform: u32, batches: &[Batch]) -> Vec<u8> {
            let info = TraceInfo {
                ticks_per_microsecond: 1000,
                ..TraceInfo::default()
            };
            let out = std::io::Cursor::new(Vec::new());
            let sink = JinsightSink::<_, BIG>::new(out, &info, Some(platform)).unwrap();
            let config = ResolverConfig {
                filter: ClassFilter::new(&[], &["app/Skip".to_string()]),
                ..ResolverConfig::default()
            };
            let mut s = Resolver::new(sink, Arc::new(Registry), config);
            s.begin_burst(1).unwrap();
            for b in batches {
                s.batch(b).unwrap();
            }
            s.finish(Some(2500)).unwrap().0.into_inner().into_inner()
        }
        let fnv = |data: &[u8]| {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for &b in data {
                hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
            (data.len(), hash)
        };
        let batches = batches();
        let le = write::<false>(PLATFORM_LINUX_X86, &batches);
        assert_eq!(fnv(&le), (563_365, 0x8220_9e57_8394_29a5));
        let be = write::<true>(PLATFORM_LINUX_390, &batches);
        assert_eq!(fnv(&be), (563_365, 0xb9b5_67ed_bea6_889e));
    }

    /// Symbols whose concurrency events are given by key (`Registry` for the rest).
    struct Syncs(std::sync::Mutex<HashMap<u64, SyncInfo>>);

    impl Symbols for Syncs {
        fn method(&self, key: MethodKey) -> Option<MethodRef> {
            Registry.method(key)
        }
        fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
            Registry.class(key)
        }
        fn class_by_name(&self, name: &str) -> Option<ClassKey> {
            Registry.class_by_name(name)
        }
        fn thread(&self, key: ThreadKey) -> Option<ThreadInfo> {
            Registry.thread(key)
        }
        fn sync(&self, key: u64) -> Option<SyncInfo> {
            self.0.lock().unwrap().remove(&key)
        }
    }

    /// A join's end takes the thread of its beginning; an end whose beginning came before the
    /// burst is not written; a wait is written once its end shows it waited, and a wait the
    /// thread went on from (it threw) is not; a wait still open at the burst's end is.
    #[test]
    fn spans_are_closed_in_their_burst_and_a_wait_is_written_once_it_waited() {
        use SyncKind::*;
        // Thread 7's records, in order: (kind, object hash, object ID).
        let script = [
            (Waited, 9, 90),        // begun before the burst: dropped
            (Join, 5, 50),          // joins thread object 5
            (Joined, 0, NO_OBJECT), // the agent's end names no thread
            (Wait, 3, 30),          // throws: the next record is a method entry
            (Wait, 4, 40),          // waits
            (Waited, 4, 40),
            (Notify, 4, 40),
            (Wait, 6, 60), // still waiting when the burst ends
        ];
        let mut infos = HashMap::new();
        let mut batch = Batch::new(7, 0);
        for (i, &(kind, hash, id)) in script.iter().enumerate() {
            let key = i as u64;
            infos.insert(
                key,
                SyncInfo {
                    kind,
                    object_hash: hash,
                    object_id: id,
                    // Objects of app/A, defined by the first event that names each.
                    object_class: (id != NO_OBJECT).then_some(4),
                    ..SyncInfo::default()
                },
            );
            batch.push(&Record::new(RecordKind::Sync, 10 + key, key, 0, 0));
            if i == 3 {
                batch.push(&Record::new(RecordKind::MethodEntry, 13, 0, NO_OBJECT, 0));
                batch.push(&Record::new(RecordKind::MethodExit, 13, 0, 0, 0));
            }
        }
        let config = ResolverConfig {
            filter: ClassFilter::new(&[], &[]),
            entries_only: false,
            stck: None,
        };
        // Thread 8 throws from its only wait and goes on with calls.
        infos.insert(
            100,
            SyncInfo {
                kind: Wait,
                object_hash: 2,
                object_id: 20,
                object_class: Some(4),
                ..SyncInfo::default()
            },
        );
        let mut other = Batch::new(8, 0);
        other.push(&Record::new(RecordKind::Sync, 20, 100, 0, 0));
        other.push(&Record::new(RecordKind::MethodEntry, 21, 0, NO_OBJECT, 0));
        other.push(&Record::new(RecordKind::MethodExit, 22, 0, 0, 0));
        let symbols = Arc::new(Syncs(std::sync::Mutex::new(infos)));
        let mut s = Resolver::new(Collect::default(), symbols, config);
        s.begin_burst(1).unwrap();
        s.batch(&batch).unwrap();
        s.batch(&other).unwrap();
        s.end_burst(100).unwrap();
        let events = s.finish(None).unwrap().0 .0;
        let syncs: Vec<(SyncKind, u32, u32)> = events
            .iter()
            .filter_map(|e| match e {
                Event::Sync(s) => Some((s.kind, s.object, s.object_id)),
                _ => None,
            })
            .collect();
        assert_eq!(
            syncs,
            [
                (Join, 5, 50),
                (Joined, 5, 50),
                (Wait, 4, 40),
                (Waited, 4, 40),
                (Notify, 4, 40),
                (Wait, 6, 60),
            ]
        );
        // Each object is defined once, before the first event that names it.
        let defined: Vec<u32> = events
            .iter()
            .filter_map(|e| match e {
                Event::ObjectDefine(o) => Some(o.object),
                _ => None,
            })
            .collect();
        assert_eq!(defined, [90, 50, 30, 40, 60, 20]);
        // The open wait comes before the burst's end.
        let end = events
            .iter()
            .position(|e| matches!(e, Event::BurstEnd { .. }))
            .unwrap();
        assert!(matches!(&events[end - 1], Event::Sync(s) if s.kind == Wait));
    }
}
