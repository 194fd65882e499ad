//! How what happens in the JVM is seen and becomes records in the thread's buffer.
//!
//! Method entries and exits come one of two ways ([`MethodCapture`]): JVMTI MethodEntry and
//! MethodExit (`events.rs`, capture=events), or instrumented bytecode calling trampolines
//! (`bci/`, capture=bci). Both end in [`Capture::entered`] and [`Capture::exited`] off the
//! trampolines' fast path; buffers, the symbol table and the writer are the same for both.
//! Beside them: allocations (`alloc.rs`), concurrency events (`sync.rs`, with the owner of a
//! contended monitor from `owner.rs`), the values of calls (`values.rs`).
//!
//! A [`Subscriber`] (a user trace library, `plugin/`) sees every event of the bursts given to
//! it, on the thread of each; the capture hands them over as it records them.

use crate::options::{Capture as Kind, Methods, Options};
use crate::runtime::Runtime;
use jlive_jvm::jvmti;
use jlive_writer::record::{MethodKey, RecordKind};
use std::sync::OnceLock;

mod alloc;
pub mod bci;
mod events;
mod flags;
pub mod owner;
pub mod sync;
pub mod values;

pub use bci::{Bci, LoadedClass};
pub use events::{MethodEvent, Returned};
pub use flags::{vajava, BurstFlags};
pub use values::Values;

/// What a plug-in sees of the capture: every event of the bursts given to it, on the thread
/// of each (JVMTI's GC and ObjectFree callbacks excepted: those only queue).
pub trait Subscriber: Sync {
    /// Whether a library is started (it may be given bursts).
    fn started(&self) -> bool;
    /// Whether a burst goes to it now.
    fn delivering(&self) -> bool;
    /// A burst begins (the recorder's lock held): it is given the burst; false if no library
    /// is started.
    fn burst_begun(&self, rt: &Runtime, flags: BurstFlags) -> bool;
    /// The burst ends (the recorder's lock held).
    fn burst_ended(&self, rt: &Runtime);
    fn method(&self, rt: &Runtime, capture: &Capture, enter: bool, key: MethodKey, object: u32);
    fn allocated(&self, id: u32, class_name: &str, size: i64);
    fn user_event(&self, text: &str);
    fn gc(&self, start: bool);
    fn object_freed(&self, id: u32);
}

/// How method entries and exits are seen: what differs between capture=events and
/// capture=bci once the JVM runs.
pub trait MethodCapture {
    /// A burst that records `flags` begins (`on`) or ends: method entries and exits are seen
    /// from now on, or no longer.
    fn switch(&self, rt: &Runtime, flags: BurstFlags, on: bool);
    /// What it did, for the log and the trace's last user event (None: nothing to say).
    fn summary(&self) -> Option<String>;
}

/// capture=events: JVMTI MethodEntry and MethodExit, enabled for a burst's length.
struct Events;

impl MethodCapture for Events {
    fn switch(&self, rt: &Runtime, flags: BurstFlags, on: bool) {
        let mut events = Vec::new();
        if flags.methods != Methods::Off {
            events.push(jvmti::EVENT_METHOD_ENTRY);
        }
        if flags.methods == Methods::On {
            events.push(jvmti::EVENT_METHOD_EXIT);
        }
        for event in events {
            if let Err(e) = rt.jvmti().set_event(event, on) {
                crate::log::warn(&format!("switching JVMTI event {} failed: {}", event, e));
            }
        }
    }

    fn summary(&self) -> Option<String> {
        None
    }
}

pub struct Capture {
    /// capture=bci's state; the trampolines and the class-file hook also serve
    /// `monitors=on` under capture=events.
    bci: Bci,
    /// Whether methods are woven (capture=bci and a method is traced).
    uses_bci: bool,
    sync: sync::Sync,
    owners: OnceLock<owner::Owners>,
    values: Values,
    subscriber: OnceLock<&'static dyn Subscriber>,
}

impl Capture {
    pub fn new(options: &Options) -> Capture {
        Capture {
            bci: Bci::default(),
            uses_bci: options.capture == Kind::Bci && options.traces_methods(),
            sync: sync::Sync::default(),
            owners: OnceLock::new(),
            values: Values::default(),
            subscriber: OnceLock::new(),
        }
    }

    pub fn bci(&self) -> &Bci {
        &self.bci
    }

    /// Whether methods are seen through instrumented bytecode (capture=bci).
    pub fn uses_bci(&self) -> bool {
        self.uses_bci
    }

    /// A burst that records `flags` begins (`on`, `plugin`: it goes to a user trace library)
    /// or ends: the trampolines' gate (which serves methods under capture=bci, allocation
    /// sites and concurrency call sites alike) and the method capture switched.
    pub fn switch(&self, rt: &Runtime, flags: BurstFlags, on: bool, plugin: bool) {
        let monitors = rt.options().monitors;
        match on {
            true => bci::gate::set(&self.bci, rt, flags.methods, flags.alloc, monitors, plugin),
            false => bci::gate::set(&self.bci, rt, Methods::Off, false, false, false),
        }
        self.methods().switch(rt, flags, on);
    }

    /// The way method entries and exits are seen.
    pub fn methods(&self) -> &dyn MethodCapture {
        if self.uses_bci {
            &self.bci
        } else {
            &Events
        }
    }

    pub fn sync(&self) -> &sync::Sync {
        &self.sync
    }

    pub fn values(&self) -> &Values {
        &self.values
    }

    /// The owners' reader of contended monitors (`monitors=on`), once made at VM init.
    pub fn owners(&self) -> Option<&owner::Owners> {
        self.owners.get()
    }

    /// Makes the owners' reader (VM init, `monitors=on`).
    pub fn init_owners(&self, owners: owner::Owners) {
        let _ = self.owners.set(owners);
    }

    /// The plug-in host, once the session is running.
    pub fn subscribe(&self, subscriber: &'static dyn Subscriber) {
        let _ = self.subscriber.set(subscriber);
    }

    pub fn subscriber(&self) -> Option<&'static dyn Subscriber> {
        self.subscriber.get().copied()
    }

    /// Whether a burst goes to a user trace library now.
    #[inline]
    pub fn delivering(&self) -> bool {
        self.subscriber.get().is_some_and(|s| s.delivering())
    }

    /// Whether a burst records anything: to the file, or to a user trace library.
    #[inline]
    pub fn capturing(&self, rt: &Runtime) -> bool {
        rt.hub().is_tracing() || self.delivering()
    }

    /// Records a method entry on this thread. `attach` makes the thread's buffer on its
    /// first record (naming the thread); `object` is the receiver's ID or `NO_OBJECT`.
    #[inline(always)]
    pub fn entered(
        &self,
        rt: &Runtime,
        ticks: u64,
        method: MethodKey,
        object: u32,
        attach: impl FnOnce() -> bool,
    ) {
        let entry = (RecordKind::MethodEntry, method, object);
        self.record(rt, ticks, entry, rt.hub().overhead(), attach);
    }

    /// Records a method exit (normal or by exception) on this thread.
    #[inline(always)]
    pub fn exited(
        &self,
        rt: &Runtime,
        ticks: u64,
        method: MethodKey,
        attach: impl FnOnce() -> bool,
    ) {
        self.exited_with(rt, ticks, method, rt.hub().overhead(), attach);
    }

    /// Records the exit of a leaf method whose entry was recorded at the same ticks by the
    /// same call (capture=bci): the entry's overhead is all the agent spent on it.
    pub fn left_leaf(
        &self,
        rt: &Runtime,
        ticks: u64,
        method: MethodKey,
        attach: impl FnOnce() -> bool,
    ) {
        self.exited_with(rt, ticks, method, Some(0), attach);
    }

    #[inline(always)]
    fn exited_with(
        &self,
        rt: &Runtime,
        ticks: u64,
        method: MethodKey,
        overhead: Option<u32>,
        attach: impl FnOnce() -> bool,
    ) {
        self.record(
            rt,
            ticks,
            (RecordKind::MethodExit, method, 0),
            overhead,
            attach,
        );
    }

    /// Records `(kind, method, arg)` at `ticks`, with the agent's `overhead` (None: measured
    /// now).
    #[inline(always)]
    fn record(
        &self,
        rt: &Runtime,
        ticks: u64,
        (kind, method, arg): (RecordKind, MethodKey, u32),
        overhead: Option<u32>,
        attach: impl FnOnce() -> bool,
    ) {
        if let Some(s) = self.subscriber.get().filter(|s| s.delivering()) {
            s.method(rt, self, kind == RecordKind::MethodEntry, method, arg);
        }
        let hub = rt.hub();
        if let Some(buffer) = hub.current_or(attach) {
            buffer.append(hub, kind, ticks, method, arg, overhead, true);
        }
    }
}
