//! Bursts: the commands of the control socket, the Java API and the timers all end here.
//!
//! A burst begins with BEGIN_BURST on the channel, then recording is switched on and the
//! JVMTI events the burst asks for are enabled. It ends by disabling them, stopping and
//! collecting every thread's partial batch, then END_BURST — so the boundary falls exactly
//! between the records made before and after it. One lock serialises all of this.

use crate::buffer::Hub;
use crate::capture::trigger::{self, Action, Trigger};
use crate::clock;
use crate::ffi::jvmti::{self, cap, Jvmti};
use crate::log;
use crate::options::{Gc, Methods, Output};
use crate::profiler::Profiler;
use jlive_writer::record::{BurstScope, Message, MethodKey, RecordKind, ThreadKey, TriggerScope};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The warning that a burst's allocations go unrecorded under capture=bci, given once.
static ALLOC_WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What one burst records (VA/Java's ExeOn/OnLight/Off, GCOn/OnLight/Off, AllocOn/Off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurstFlags {
    pub methods: Methods,
    pub gc: Gc,
    pub alloc: bool,
    /// Contended monitors (MONITOR_CONTENTION): `monitors=on`, or the visualizer's "track
    /// monitor contention" for its bursts.
    pub contention: bool,
}

/// VA/Java image-level flag values (jlive's numbering; the document gives names only).
pub mod vajava {
    pub const EXE_ON: i32 = 0x1;
    pub const EXE_ON_LIGHT: i32 = 0x2;
    pub const EXE_OFF: i32 = 0x4;
    pub const GC_ON: i32 = 0x10;
    pub const GC_ON_LIGHT: i32 = 0x20;
    pub const GC_OFF: i32 = 0x40;
    pub const ALLOC_ON: i32 = 0x100;
    pub const ALLOC_OFF: i32 = 0x200;
}

impl BurstFlags {
    /// Flags of `tracingBegin(flags)`; a group with no flag keeps the option's setting.
    pub fn from_vajava(flags: i32, defaults: BurstFlags) -> BurstFlags {
        use vajava::*;
        let pick = |on: i32, light: i32, off: i32| {
            if flags & on != 0 {
                Some(0)
            } else if flags & light != 0 {
                Some(1)
            } else if flags & off != 0 {
                Some(2)
            } else {
                None
            }
        };
        BurstFlags {
            methods: match pick(EXE_ON, EXE_ON_LIGHT, EXE_OFF) {
                Some(0) => Methods::On,
                Some(1) => Methods::Entry,
                Some(_) => Methods::Off,
                None => defaults.methods,
            },
            gc: match pick(GC_ON, GC_ON_LIGHT, GC_OFF) {
                Some(0) => Gc::On,
                Some(1) => Gc::Light,
                Some(_) => Gc::Off,
                None => defaults.gc,
            },
            alloc: match pick(ALLOC_ON, 0, ALLOC_OFF) {
                Some(0) => true,
                Some(_) => false,
                None => defaults.alloc,
            },
            contention: defaults.contention,
        }
    }
}

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
}

impl Profiler {
    /// Opens a burst; `flags` None = as the options say. While IBM's visualizer is connected
    /// (`live=`), it alone begins bursts.
    pub fn begin_burst(
        &self,
        jvmti: Jvmti,
        label: Option<&str>,
        flags: Option<BurstFlags>,
    ) -> Result<String, String> {
        self.open_burst(jvmti, label, flags, false)
    }

    /// [`Profiler::begin_burst`]; `live`: for the visualizer, which alone may while connected.
    pub fn open_burst(
        &self,
        jvmti: Jvmti,
        label: Option<&str>,
        flags: Option<BurstFlags>,
        live: bool,
    ) -> Result<String, String> {
        self.open_scoped(jvmti, label, flags, live, BurstScope::default())
    }

    /// [`Profiler::open_burst`] of a burst that writes only what `scope` keeps.
    pub fn open_scoped(
        &self,
        jvmti: Jvmti,
        label: Option<&str>,
        flags: Option<BurstFlags>,
        live: bool,
        scope: BurstScope,
    ) -> Result<String, String> {
        self.may_open(&self.bursts.lock(), live)?;
        // Outside the lock: the first burst may instrument for a second.
        let instrumented = crate::capture::bci::instrument_now();
        let mut state = self.bursts.lock();
        self.may_open(&state, live)?;
        let text = self.open_locked(&mut state, jvmti, label, flags, scope)?;
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
    fn may_open(&self, state: &BurstState, live: bool) -> Result<(), String> {
        if crate::live::connected() && !live {
            return Err("the JinsightLive visualizer is connected and drives the bursts".into());
        }
        if state.is_open() {
            return Err(format!("burst {} is already open", state.count));
        }
        if state.is_armed() {
            return Err("a burst waits for its trigger".into());
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err("the JVM is shutting down".into());
        }
        Ok(())
    }

    fn open_locked(
        &self,
        state: &mut BurstState,
        jvmti: Jvmti,
        label: Option<&str>,
        flags: Option<BurstFlags>,
        scope: BurstScope,
    ) -> Result<String, String> {
        let flags = flags.unwrap_or_else(|| self.default_flags());
        let to_file = self.options.writes_file();
        let to_plugin = self.options.output != Output::File && crate::plugin::started();
        if !to_file && !to_plugin {
            return Err("output=plugin and no user trace library is started (plugin= or InstrumentVMSupport.tracingStartup)".into());
        }
        if to_file {
            // What threads stored between bursts (virtual threads' mounts and ends) goes
            // before the burst's beginning.
            self.hub.collect();
            let ticks = clock::ticks();
            let scope = (!scope.is_empty()).then(|| Box::new(scope));
            self.hub.control(Message::BurstBegin { ticks, scope });
            if let Some(label) = label.filter(|l| !l.is_empty()) {
                self.hub.control(Message::UserEvent {
                    ticks,
                    text: format!("burst: {}", label),
                });
            }
            self.hub.start();
        }
        if to_plugin {
            crate::plugin::begin(self, flags);
        }
        crate::capture::bci::set_gate(flags.methods, flags.alloc, self.options.monitors, to_plugin);
        if flags.alloc
            && self.uses_bci()
            && !self.options.alloc
            && self.options.plugin.is_none()
            && !ALLOC_WARNED.swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            log::warn("a burst asks for allocations (the Java API's InsTrcTypeAllocOn), but under capture=bci allocation sites are rewritten only with alloc=on (or plugin=) given at start-up: none is recorded");
        }
        self.switch_events(jvmti, flags, true);
        state.flags = Some(flags);
        state.opened = Some(Instant::now());

        state.count += 1;
        log::info(&format!("burst {} begun", state.count));
        Ok(format!("burst {} begun", state.count))
    }

    /// Arms a burst (the visualizer's): it begins when one of `triggers` fires, with `flags`
    /// and `scope`; `end_on_exit`: it writes nothing after the firing entry's exit.
    pub fn arm_burst(
        &self,
        jvmti: Jvmti,
        flags: BurstFlags,
        triggers: Vec<Trigger>,
        scope: BurstScope,
        end_on_exit: bool,
    ) -> Result<String, String> {
        if flags.methods == Methods::Off {
            return Err("triggers need method entries: methods=off".into());
        }
        if !self.options.writes_file() {
            return Err("triggers begin bursts of the trace: output=plugin writes none".into());
        }
        self.may_open(&self.bursts.lock(), true)?;
        // Outside the lock, as for a burst: the triggers' methods must carry their keys.
        crate::capture::bci::instrument_now();
        let mut state = self.bursts.lock();
        self.may_open(&state, true)?;
        let (generation, matched) = trigger::arm(&triggers, |each| self.registry.each_method(each));
        self.entries_for_triggers(jvmti, true);
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
            text.push_str(if self.uses_bci() {
                " (no instrumented method matches yet: only methods of classes capture=bci \
                 instruments can fire)"
            } else {
                " (no method matches yet: classes loaded from now on are looked at)"
            });
        }
        log::info(&text);
        Ok(text)
    }

    /// Method entries seen for the triggers (`on`), or no longer.
    fn entries_for_triggers(&self, jvmti: Jvmti, on: bool) {
        if self.uses_bci() {
            crate::capture::bci::set_trigger_gate(on);
        } else if let Err(e) = jvmti.set_event(jvmti::EVENT_METHOD_ENTRY, on) {
            log::warn(&format!("switching MethodEntry for triggers failed: {}", e));
        }
    }

    /// A trigger of arming `generation` fired on the entry of `method` on `thread` (the
    /// thread that entered it, which records that entry next when this returns true: the burst
    /// has begun).
    pub fn fire(
        &self,
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
        if self.closed.load(Ordering::SeqCst) {
            self.entries_for_triggers(self.jvmti, false);
            return false;
        }
        let Some(t) = armed.triggers.get(which).cloned() else {
            self.entries_for_triggers(self.jvmti, false);
            state.fired = Some(Action::Trace);
            return false;
        };
        if t.action != Action::Trace {
            self.entries_for_triggers(self.jvmti, false);
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
            &mut state,
            self.jvmti,
            Some(&label),
            Some(armed.flags),
            scope,
        );
        match &opened {
            Ok(_) => state.trigger_thread = Some(thread),
            Err(e) => {
                self.entries_for_triggers(self.jvmti, false);
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
    /// or a burst that could not begin, not yet served: see [`Profiler::take_fired`]).
    pub fn disarm_burst(&self, jvmti: Jvmti) -> bool {
        trigger::disarm();
        let mut state = self.bursts.lock();
        let fired = state.fired.take().is_some();
        let armed = state.armed.take().is_some();
        if armed {
            self.entries_for_triggers(jvmti, false);
        }
        if armed || fired {
            crate::capture::values::set(Vec::new(), Vec::new(), Vec::new());
        }
        armed || fired
    }

    /// What a trigger fired that the control thread serves: a dump, or (`Action::Trace`) a
    /// burst that could not begin.
    pub fn take_fired(&self) -> Option<Action> {
        let fired = self.bursts.lock().fired.take();
        if fired.is_some() {
            crate::capture::values::set(Vec::new(), Vec::new(), Vec::new());
        }
        fired
    }

    /// Closes the open burst.
    pub fn end_burst(&self, jvmti: Jvmti) -> Result<String, String> {
        let mut state = self.bursts.lock();
        let Some(flags) = state.flags.take() else {
            return Err("no burst is open".into());
        };
        crate::capture::bci::set_gate(Methods::Off, false, false, false);
        state.trigger_thread = None;
        // The live visualizer's value filters hold for its burst only.
        crate::capture::values::set(Vec::new(), Vec::new(), Vec::new());
        // Disabling ObjectFree posts the frees HotSpot still holds: they reach the library.
        self.switch_events(jvmti, flags, false);
        if self.options.writes_file() {
            self.hub.stop_and_collect();
            self.hub.control(Message::BurstEnd {
                ticks: clock::ticks(),
            });
        }
        // Nothing when the burst went to no library.
        crate::plugin::end(self);
        state.opened = None;
        log::info(&format!("burst {} ended", state.count));
        Ok(format!("burst {} ended", state.count))
    }

    /// A USER_EVENT from the control socket, after every record made before it.
    pub fn mark(&self, text: &str) -> Result<String, String> {
        let state = self.bursts.lock();
        if !state.is_open() {
            return Err("no burst is open: a mark must lie inside a burst".into());
        }
        crate::plugin::user_event(text);
        if !self.options.writes_file() {
            return Ok("marked".into());
        }
        self.hub.collect();
        self.hub.control(Message::UserEvent {
            ticks: clock::ticks(),
            text: text.to_string(),
        });
        Ok("marked".into())
    }

    /// A USER_EVENT recorded on the calling Java thread (the Java API).
    pub fn thread_event(&self, text: String) -> bool {
        crate::plugin::user_event(&text);
        let Some(buffer) = Hub::current() else {
            return false;
        };
        let key = self.registry.put_message(text);
        let ok = buffer.append(
            &self.hub,
            RecordKind::UserEvent,
            clock::ticks(),
            key,
            0,
            Some(0),
            true,
        );
        if !ok {
            self.registry.take_message(key);
        }
        ok
    }

    /// Finishes the current file and continues in the next one (`%n`).
    pub fn roll(&self) -> Result<String, String> {
        if crate::live::connected() {
            return Err("the JinsightLive visualizer is connected: the trace streams to it".into());
        }
        self.roll_into(None)
    }

    /// Finishes the current file and continues in the next one, or streams to `live` (with a
    /// copy in the next file when `file=` was given).
    pub fn roll_into(&self, live: Option<std::net::TcpStream>) -> Result<String, String> {
        let mut state = self.bursts.lock();
        if self.closed.load(Ordering::SeqCst) {
            return Err("the JVM is shutting down".into());
        }
        if !self.options.writes_file() {
            return Err("output=plugin writes no file to roll".into());
        }
        let copy = live.is_none() || self.options.file.is_some();
        let path = if copy {
            state.file += 1;
            self.options
                .file_path(std::process::id(), self.start_epoch, state.file)
        } else {
            String::new()
        };
        let what = match (&live, copy) {
            (None, _) => format!("rolled to {}", path),
            (Some(_), true) => format!("streaming to the visualizer, a copy in {}", path),
            (Some(_), false) => "streaming to the visualizer".to_string(),
        };
        self.hub.collect();
        self.hub.control(Message::Roll {
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
    pub fn hand_over(&self, all: bool) {
        let state = self.bursts.lock();
        match state.trigger_thread.filter(|_| state.is_open()) {
            Some(_) if all => self.hub.collect(),
            Some(thread) => self.hub.collect_thread(thread),
            None => {}
        }
    }

    /// Writes everything recorded so far to disk, and answers when it is there.
    pub fn flush(&self) -> Result<String, String> {
        let _state = self.bursts.lock();
        self.hub.collect();
        let (done, flushed) = crossbeam_channel::bounded(1);
        self.hub.control(Message::Flush { done: Some(done) });
        match flushed.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(()) => Ok("flushed".into()),
            Err(_) => Err("the writer did not flush in time".into()),
        }
    }

    /// One line: state, bursts, events and bytes written, drops (always 0), threads, file.
    pub fn status(&self) -> String {
        let state = self.bursts.lock();
        let s = &self.stats;
        let mut line = format!(
            "state={} bursts={} events={} bytes={} dropped={} threads={} file={} pid={} main={}",
            match (state.is_open(), state.is_armed()) {
                (true, _) => "tracing",
                (false, true) => "armed",
                _ => "paused",
            },
            state.count,
            s.events.load(Ordering::Relaxed),
            s.bytes.load(Ordering::Relaxed),
            self.hub.dropped(),
            self.hub.threads(),
            s.file(),
            std::process::id(),
            self.main_class.get().map(String::as_str).unwrap_or("?"),
        );
        if self.uses_bci() {
            let b = &self.bci;
            line.push_str(&format!(
                " instrumented_classes={} unchanged_classes={} instrumented_methods={} padded_methods={} untraced_natives={}",
                b.classes.load(Ordering::Relaxed),
                b.untouched.load(Ordering::Relaxed),
                b.methods.load(Ordering::Relaxed),
                b.padded.load(Ordering::Relaxed),
                b.native.load(Ordering::Relaxed)
            ));
        }
        // What jlive holds that could grow with a long run.
        line.push_str(&format!(
            " buffered_bytes={} described_threads={} writer_objects={} writer_threads={}",
            self.hub.buffered_bytes(),
            self.registry.thread_count(),
            s.objects.load(Ordering::Relaxed),
            s.thread_states.load(Ordering::Relaxed)
        ));
        if let Some(e) = s.error() {
            line.push_str(&format!(" error={:?}", e));
        }
        line
    }

    /// Enables or disables the JVMTI events a burst needs.
    fn switch_events(&self, jvmti: Jvmti, flags: BurstFlags, on: bool) {
        let mut events = Vec::new();
        let bci = self.uses_bci();
        if flags.methods != Methods::Off && !bci {
            events.push(jvmti::EVENT_METHOD_ENTRY);
        }
        if flags.methods == Methods::On && !bci {
            events.push(jvmti::EVENT_METHOD_EXIT);
        }
        if flags.gc != Gc::Off && self.caps.has(cap::GENERATE_GARBAGE_COLLECTION_EVENTS) {
            events.extend([
                jvmti::EVENT_GARBAGE_COLLECTION_START,
                jvmti::EVENT_GARBAGE_COLLECTION_FINISH,
            ]);
        }
        if flags.gc == Gc::On && self.caps.has(cap::GENERATE_OBJECT_FREE_EVENTS) {
            events.push(jvmti::EVENT_OBJECT_FREE);
        }
        if self.options.monitors && self.caps.has(cap::GENERATE_MONITOR_EVENTS) {
            events.extend([jvmti::EVENT_MONITOR_WAIT, jvmti::EVENT_MONITOR_WAITED]);
        }
        if flags.contention && self.caps.has(cap::GENERATE_MONITOR_EVENTS) {
            events.extend([
                jvmti::EVENT_MONITOR_CONTENDED_ENTER,
                jvmti::EVENT_MONITOR_CONTENDED_ENTERED,
            ]);
        }
        // Under capture=bci the rewritten allocation sites report allocations themselves.
        let alloc = flags.alloc && !bci && self.caps.has(cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS);
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
            // Retires every thread's TLAB, so that the next allocation of each thread takes
            // the sampler's slow path; from then on every allocation is sampled.
            if let Err(e) = jvmti.force_garbage_collection() {
                log::warn(&format!(
                    "allocations before the first TLAB refill may be missed: {}",
                    e
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vajava_flags_map_to_burst_flags() {
        let d = BurstFlags {
            methods: Methods::On,
            gc: Gc::Light,
            alloc: false,
            contention: false,
        };
        let f =
            BurstFlags::from_vajava(vajava::EXE_ON_LIGHT | vajava::GC_OFF | vajava::ALLOC_ON, d);
        assert_eq!(
            f,
            BurstFlags {
                methods: Methods::Entry,
                gc: Gc::Off,
                alloc: true,
                contention: false,
            }
        );
        assert_eq!(BurstFlags::from_vajava(0, d), d);
        let f = BurstFlags::from_vajava(vajava::EXE_OFF | vajava::GC_ON, d);
        assert_eq!((f.methods, f.gc, f.alloc), (Methods::Off, Gc::On, false));
    }
}
