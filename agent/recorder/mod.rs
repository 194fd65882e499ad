//! The recorder: the sole owner of the burst state. The control socket, the Java API, the
//! timers, the visualizer and VM init and death all begin and end bursts here.
//!
//! A burst begins with BEGIN_BURST on the channel, then recording is switched on and the
//! JVMTI events the burst asks for are enabled. It ends by disabling them, stopping and
//! collecting every thread's partial batch, then END_BURST — so the boundary falls exactly
//! between the records made before and after it. One lock serialises all of this.
//!
//! "Is a burst recording?" has one answer, here ([`BurstState`]); what the others hold is
//! pushed from here as it changes: the hub's `tracing` (what threads store), the capture's
//! gate (what the trampolines and the JVMTI events see), the subscriber's burst (what a user
//! trace library is given), and the triggers' arming (what entries look up).

use crate::capture::{BurstFlags, Capture};
use crate::clock;
use crate::log;
use crate::options::{Gc, Methods, Output};
use crate::runtime::Runtime;
use jlive_jvm::jvmti::{self, cap};
use jlive_writer::record::{
    BurstScope, Message, MethodKey, Payload, RecordKind, ThreadKey, TriggerScope,
};
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod trigger;

pub use trigger::{Action, Trigger, MAX_TRIGGERS};

/// The burst state behind the lock.
#[derive(Default)]
pub struct BurstState {
    flags: Option<BurstFlags>,
    opened: Option<Instant>,
    count: u32,
    /// The current file's number (`%n`).
    file: u32,
    /// A burst waiting for its trigger.
    armed: Option<Armed>,
    /// A trigger's dump, fired and waiting for the control thread.
    fired: Option<Action>,
    /// The thread a trigger began the open burst on.
    trigger_thread: Option<ThreadKey>,
}

/// What an armed burst will be.
struct Armed {
    generation: u64,
    flags: BurstFlags,
    triggers: Vec<Trigger>,
    /// Its limit and depth (the trigger is added when it fires).
    scope: BurstScope,
    end_on_exit: bool,
}

impl BurstState {
    pub fn is_open(&self) -> bool {
        self.flags.is_some()
    }
    pub fn is_armed(&self) -> bool {
        self.armed.is_some()
    }
    pub fn opened(&self) -> Option<Instant> {
        self.opened
    }
    /// Bursts begun so far.
    pub fn count(&self) -> u32 {
        self.count
    }
}

#[derive(Default)]
pub struct Recorder {
    bursts: Mutex<BurstState>,
    triggers: trigger::Triggers,
    /// IBM's visualizer is connected (`live=`) and alone begins bursts.
    driven: AtomicBool,
    /// The warning that a burst's allocations go unrecorded under capture=bci, given once.
    alloc_warned: AtomicBool,
}

impl Recorder {
    /// The burst state, locked (the control socket's `status`, the visualizer's ticks).
    pub fn state(&self) -> MutexGuard<'_, BurstState> {
        self.bursts.lock()
    }

    pub fn is_open(&self) -> bool {
        self.bursts.lock().is_open()
    }

    /// Whether a burst waits for its trigger (every entry then asks [`Recorder::entered`]).
    #[inline(always)]
    pub fn trigger_armed(&self) -> bool {
        self.triggers.armed()
    }

    /// Whether IBM's visualizer drives the bursts.
    pub fn driven(&self) -> bool {
        self.driven.load(Ordering::SeqCst)
    }

    /// The visualizer takes the bursts over (`true`) or gives them back.
    pub fn set_driven(&self, driven: bool) {
        self.driven.store(driven, Ordering::SeqCst);
    }

    /// Opens a burst; `flags` None = as the options say; `live`: for the visualizer, which
    /// alone may while connected; `scope` narrows what it writes.
    pub fn open(
        &self,
        rt: &'static Runtime,
        capture: &'static Capture,
        label: Option<&str>,
        flags: Option<BurstFlags>,
        live: bool,
        scope: BurstScope,
    ) -> Result<String, String> {
        self.may_open(rt, &self.bursts.lock(), live)?;
        // Outside the lock: the first burst may instrument for a second.
        let instrumented = capture.bci().instrument_now(rt);
        let mut state = self.bursts.lock();
        self.may_open(rt, &state, live)?;
        let text = self.open_locked(rt, capture, &mut state, label, flags, scope)?;
        Ok(match instrumented {
            Some((classes, took)) => format!(
                "{} ({} classes instrumented first, in {} ms)",
                text,
                classes,
                took.as_millis()
            ),
            None => text,
        })
    }

    /// Why a burst cannot begin now, if it cannot.
    fn may_open(&self, rt: &Runtime, state: &BurstState, live: bool) -> Result<(), String> {
        if self.driven() && !live {
            return Err("the JinsightLive visualizer is connected and drives the bursts".into());
        }
        if state.is_open() {
            return Err(format!("burst {} is already open", state.count));
        }
        if state.is_armed() {
            return Err("a burst waits for its trigger".into());
        }
        if rt.closing() {
            return Err("the JVM is shutting down".into());
        }
        Ok(())
    }

    fn open_locked(
        &self,
        rt: &Runtime,
        capture: &Capture,
        state: &mut BurstState,
        label: Option<&str>,
        flags: Option<BurstFlags>,
        scope: BurstScope,
    ) -> Result<String, String> {
        let o = rt.options();
        let flags = flags.unwrap_or_else(|| BurstFlags::from_options(o));
        let to_file = o.writes_file();
        let subscriber = capture.subscriber().filter(|s| s.started());
        let to_plugin = o.output != Output::File && subscriber.is_some();
        if !to_file && !to_plugin {
            return Err("output=plugin and no user trace library is started (plugin= or InstrumentVMSupport.tracingStartup)".into());
        }
        let hub = rt.hub();
        if to_file {
            // What threads stored between bursts (virtual threads' mounts and ends) goes
            // before the burst's beginning.
            hub.collect();
            let ticks = clock::ticks();
            let scope = (!scope.is_empty()).then(|| Box::new(scope));
            hub.control(Message::BurstBegin { ticks, scope });
            if let Some(label) = label.filter(|l| !l.is_empty()) {
                hub.control(Message::UserEvent {
                    ticks,
                    text: format!("burst: {}", label),
                });
            }
            hub.start();
        }
        if let (true, Some(s)) = (to_plugin, subscriber) {
            s.burst_begun(rt, flags);
        }
        capture.switch(rt, flags, true, to_plugin);
        if flags.alloc
            && o.uses_bci()
            && !o.alloc
            && o.plugin.is_none()
            && !self.alloc_warned.swap(true, Ordering::Relaxed)
        {
            log::warn("a burst asks for allocations (the Java API's InsTrcTypeAllocOn), but under capture=bci allocation sites are rewritten only with alloc=on (or plugin=) given at start-up: none is recorded");
        }
        switch_events(rt, flags, true);
        state.flags = Some(flags);
        state.opened = Some(Instant::now());
        state.count += 1;
        log::info(&format!("burst {} begun", state.count));
        Ok(format!("burst {} begun", state.count))
    }

    /// Arms a burst (the visualizer's): it begins when one of `triggers` fires, with `flags`
    /// and `scope`; `end_on_exit`: it writes nothing after the firing entry's exit.
    pub fn arm(
        &self,
        rt: &'static Runtime,
        capture: &'static Capture,
        flags: BurstFlags,
        triggers: Vec<Trigger>,
        scope: BurstScope,
        end_on_exit: bool,
    ) -> Result<String, String> {
        if flags.methods == Methods::Off {
            return Err("triggers need method entries: methods=off".into());
        }
        if !rt.options().writes_file() {
            return Err("triggers begin bursts of the trace: output=plugin writes none".into());
        }
        self.may_open(rt, &self.bursts.lock(), true)?;
        // Outside the lock, as for a burst: the triggers' methods must carry their keys.
        capture.bci().instrument_now(rt);
        let mut state = self.bursts.lock();
        self.may_open(rt, &state, true)?;
        let (generation, matched) = self.triggers.arm(&triggers, rt.symbols());
        entries_for_triggers(rt, capture, true);
        let names: Vec<String> = triggers
            .iter()
            .map(|t| format!("{}.{}", t.class, t.method))
            .collect();
        // With methods=entry no exit is recorded: the burst ends as any other.
        let end_on_exit = end_on_exit && flags.methods == Methods::On;
        state.armed = Some(Armed {
            generation,
            flags,
            triggers,
            scope,
            end_on_exit,
        });
        let mut text = format!("burst armed: it begins with {}", names.join(" or "));
        if matched == 0 {
            text.push_str(if rt.options().uses_bci() {
                " (no instrumented method matches yet: only methods of classes capture=bci \
                 instruments can fire)"
            } else {
                " (no method matches yet: classes loaded from now on are looked at)"
            });
        }
        log::info(&text);
        Ok(text)
    }

    /// An entry of `method` while a burst waits for its trigger: true when it began the burst
    /// (the thread then records that entry), false when it is not recorded. `thread` names
    /// the entering thread's buffer, made if need be.
    pub fn entered(
        &self,
        rt: &Runtime,
        capture: &Capture,
        method: MethodKey,
        thread: impl FnOnce() -> Option<ThreadKey>,
    ) -> bool {
        match self.triggers.entered(rt.symbols(), method, thread) {
            Some((generation, which, thread)) => {
                self.fire(rt, capture, generation, which, method, thread)
            }
            None => false,
        }
    }

    /// A trigger of arming `generation` fired on the entry of `method` on `thread` (the
    /// thread that entered it, which records that entry next when this returns true: the
    /// burst has begun).
    fn fire(
        &self,
        rt: &Runtime,
        capture: &Capture,
        generation: u64,
        which: usize,
        method: MethodKey,
        thread: ThreadKey,
    ) -> bool {
        let mut state = self.bursts.lock();
        // None: the arming was disarmed (and perhaps another armed) since the entry claimed it.
        let Some(armed) = state.armed.take_if(|a| a.generation == generation) else {
            return false;
        };
        if rt.closing() {
            entries_for_triggers(rt, capture, false);
            return false;
        }
        let Some(t) = armed.triggers.get(which).cloned() else {
            entries_for_triggers(rt, capture, false);
            state.fired = Some(Action::Trace);
            return false;
        };
        if t.action != Action::Trace {
            entries_for_triggers(rt, capture, false);
            state.fired = Some(t.action);
            return false;
        }
        let mut scope = armed.scope;
        scope.trigger = Some(TriggerScope {
            thread,
            method,
            lock: t.lock,
            end_on_exit: armed.end_on_exit,
        });
        let label = format!("triggered by {}.{}", t.class, t.method);
        let opened = self.open_locked(
            rt,
            capture,
            &mut state,
            Some(&label),
            Some(armed.flags),
            scope,
        );
        match &opened {
            Ok(_) => state.trigger_thread = Some(thread),
            Err(e) => {
                entries_for_triggers(rt, capture, false);
                state.fired = Some(Action::Trace);
                log::info(&format!(
                    "live: the trigger fired and no burst began: {}",
                    e
                ));
            }
        }
        opened.is_ok()
    }

    /// Disarms a burst that waits for its trigger; true when one did (or had fired a dump,
    /// or a burst that could not begin, not yet served: see [`Recorder::take_fired`]).
    pub fn disarm(&self, rt: &Runtime, capture: &Capture) -> bool {
        self.triggers.disarm(rt.symbols());
        let mut state = self.bursts.lock();
        let fired = state.fired.take().is_some();
        let armed = state.armed.take().is_some();
        if armed {
            entries_for_triggers(rt, capture, false);
        }
        if armed || fired {
            capture.values().clear();
        }
        armed || fired
    }

    /// What a trigger fired that the control thread serves: a dump, or (`Action::Trace`) a
    /// burst that could not begin.
    pub fn take_fired(&self, capture: &Capture) -> Option<Action> {
        let fired = self.bursts.lock().fired.take();
        if fired.is_some() {
            capture.values().clear();
        }
        fired
    }

    /// Closes the open burst.
    pub fn end(&self, rt: &Runtime, capture: &Capture) -> Result<String, String> {
        let mut state = self.bursts.lock();
        let Some(flags) = state.flags.take() else {
            return Err("no burst is open".into());
        };
        capture.switch(rt, flags, false, false);
        state.trigger_thread = None;
        // The live visualizer's value filters hold for its burst only.
        capture.values().clear();
        // Disabling ObjectFree posts the frees HotSpot still holds: they reach the library.
        switch_events(rt, flags, false);
        if rt.options().writes_file() {
            rt.hub().stop_and_collect();
            rt.hub().control(Message::BurstEnd {
                ticks: clock::ticks(),
            });
        }
        // Nothing when the burst went to no library.
        if let Some(s) = capture.subscriber() {
            s.burst_ended(rt);
        }
        state.opened = None;
        log::info(&format!("burst {} ended", state.count));
        Ok(format!("burst {} ended", state.count))
    }

    /// A USER_EVENT from the control socket, after every record made before it.
    pub fn mark(&self, rt: &Runtime, capture: &Capture, text: &str) -> Result<String, String> {
        let state = self.bursts.lock();
        if !state.is_open() {
            return Err("no burst is open: a mark must lie inside a burst".into());
        }
        if let Some(s) = capture.subscriber() {
            s.user_event(text);
        }
        if !rt.options().writes_file() {
            return Ok("marked".into());
        }
        rt.hub().collect();
        rt.hub().control(Message::UserEvent {
            ticks: clock::ticks(),
            text: text.to_string(),
        });
        Ok("marked".into())
    }

    /// A USER_EVENT recorded on the calling Java thread (the Java API).
    pub fn thread_event(&self, rt: &Runtime, capture: &Capture, text: String) -> bool {
        if let Some(s) = capture.subscriber() {
            s.user_event(&text);
        }
        let Some(buffer) = crate::transport::Hub::current() else {
            return false;
        };
        buffer.append_payload(
            rt.hub(),
            RecordKind::UserEvent,
            clock::ticks(),
            Payload::Text(text),
        )
    }

    /// Finishes the current file and continues in the next one, or streams to `live` (with a
    /// copy in the next file when `file=` was given).
    pub fn roll(&self, rt: &Runtime, live: Option<std::net::TcpStream>) -> Result<String, String> {
        let mut state = self.bursts.lock();
        if rt.closing() {
            return Err("the JVM is shutting down".into());
        }
        let o = rt.options();
        if !o.writes_file() {
            return Err("output=plugin writes no file to roll".into());
        }
        let copy = live.is_none() || o.file.is_some();
        let path = if copy {
            state.file += 1;
            o.file_path(std::process::id(), rt.start_epoch(), state.file)
        } else {
            String::new()
        };
        let what = match (&live, copy) {
            (None, _) => format!("rolled to {}", path),
            (Some(_), true) => format!("streaming to the visualizer, a copy in {}", path),
            (Some(_), false) => "streaming to the visualizer".to_string(),
        };
        rt.hub().collect();
        rt.hub().control(Message::Roll {
            path,
            live,
            ticks: clock::ticks(),
            ticks_per_microsecond: clock::refined_rate(),
        });
        log::info(&what);
        Ok(what)
    }

    /// Hands the records of the thread a trigger began the burst on over to the writer now
    /// (`all`: every thread's, for a virtual thread that moved to another carrier).
    pub fn hand_over(&self, rt: &Runtime, all: bool) {
        let state = self.bursts.lock();
        match state.trigger_thread.filter(|_| state.is_open()) {
            Some(_) if all => rt.hub().collect(),
            Some(thread) => rt.hub().collect_thread(thread),
            None => {}
        }
    }

    /// Writes everything recorded so far to disk, and answers when it is there.
    pub fn flush(&self, rt: &Runtime) -> Result<String, String> {
        let _state = self.bursts.lock();
        rt.hub().collect();
        let (done, flushed) = crossbeam_channel::bounded(1);
        rt.hub().control(Message::Flush { done: Some(done) });
        match flushed.recv_timeout(Duration::from_secs(30)) {
            Ok(()) => Ok("flushed".into()),
            Err(_) => Err("the writer did not flush in time".into()),
        }
    }

    /// The visualizer waits for an END_BURST: an empty burst that says why there is none.
    pub fn no_burst(&self, rt: &Runtime, capture: &Capture, why: &str) {
        capture.values().clear();
        log::info(&format!("live: no burst: {}", why));
        let ticks = clock::ticks();
        let hub = rt.hub();
        hub.control(Message::BurstBegin { ticks, scope: None });
        hub.control(Message::UserEvent {
            ticks,
            text: format!("jlive: no burst: {}", why),
        });
        hub.control(Message::BurstEnd { ticks });
    }
}

/// Method entries seen for the triggers (`on`), or no longer.
fn entries_for_triggers(rt: &Runtime, capture: &Capture, on: bool) {
    if rt.options().uses_bci() {
        capture.bci().set_trigger_gate(rt, on);
    } else if let Err(e) = rt.jvmti().set_event(jvmti::EVENT_METHOD_ENTRY, on) {
        log::warn(&format!("switching MethodEntry for triggers failed: {}", e));
    }
}

/// Enables or disables the JVMTI events a burst needs beyond method entries and exits (the
/// capture's).
fn switch_events(rt: &Runtime, flags: BurstFlags, on: bool) {
    let (o, caps, jvmti) = (rt.options(), rt.caps(), rt.jvmti());
    let mut events = Vec::new();
    let bci = o.uses_bci();
    if flags.gc != Gc::Off && caps.has(cap::GENERATE_GARBAGE_COLLECTION_EVENTS) {
        events.extend([
            jvmti::EVENT_GARBAGE_COLLECTION_START,
            jvmti::EVENT_GARBAGE_COLLECTION_FINISH,
        ]);
    }
    if flags.gc == Gc::On && caps.has(cap::GENERATE_OBJECT_FREE_EVENTS) {
        events.push(jvmti::EVENT_OBJECT_FREE);
    }
    if o.monitors && caps.has(cap::GENERATE_MONITOR_EVENTS) {
        events.extend([jvmti::EVENT_MONITOR_WAIT, jvmti::EVENT_MONITOR_WAITED]);
    }
    if flags.contention && caps.has(cap::GENERATE_MONITOR_EVENTS) {
        events.extend([
            jvmti::EVENT_MONITOR_CONTENDED_ENTER,
            jvmti::EVENT_MONITOR_CONTENDED_ENTERED,
        ]);
    }
    // Under capture=bci the rewritten allocation sites report allocations themselves.
    let alloc = flags.alloc && !bci && caps.has(cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS);
    if alloc {
        events.extend([
            jvmti::EVENT_SAMPLED_OBJECT_ALLOC,
            jvmti::EVENT_VM_OBJECT_ALLOC,
        ]);
    }
    for event in events {
        if let Err(e) = jvmti.set_event(event, on) {
            log::warn(&format!("switching JVMTI event {} failed: {}", event, e));
        }
    }
    if alloc && on {
        // Retires every thread's TLAB, so that the next allocation of each thread takes the
        // sampler's slow path; from then on every allocation is sampled.
        if let Err(e) = jvmti.force_garbage_collection() {
            log::warn(&format!(
                "allocations before the first TLAB refill may be missed: {}",
                e
            ));
        }
    }
}
