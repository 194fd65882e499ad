//! How method entries and exits are seen. A capture backend decides only *how* a call is
//! observed (JVMTI MethodEntry/MethodExit in [`events`]; bytecode instrumentation later) and
//! reports it through [`entered`] and [`exited`]; buffers, the registry and the writer are the
//! same for every backend.

pub mod bci;
pub mod events;
pub mod owner;
pub mod sync;
pub mod trigger;
pub mod values;

use crate::profiler::Profiler;
use jlive_writer::record::{MethodKey, RecordKind};

/// Records a method entry on this thread. `attach` makes the thread's buffer on its first
/// record (naming the thread); `object` is the receiver's ID or `NO_OBJECT`.
#[inline(always)]
pub fn entered(
    p: &'static Profiler,
    ticks: u64,
    method: MethodKey,
    object: u32,
    attach: impl FnOnce() -> bool,
) {
    record(
        p,
        RecordKind::MethodEntry,
        ticks,
        method,
        object,
        p.hub.overhead(),
        attach,
    );
}

/// Records a method exit (normal or by exception) on this thread.
#[inline(always)]
pub fn exited(p: &'static Profiler, ticks: u64, method: MethodKey, attach: impl FnOnce() -> bool) {
    record(
        p,
        RecordKind::MethodExit,
        ticks,
        method,
        0,
        p.hub.overhead(),
        attach,
    );
}

/// Records the exit of a leaf method whose entry was recorded at the same ticks by the same
/// call (capture=bci): the entry's overhead is all the agent spent on it.
pub fn left_leaf(
    p: &'static Profiler,
    ticks: u64,
    method: MethodKey,
    attach: impl FnOnce() -> bool,
) {
    record(p, RecordKind::MethodExit, ticks, method, 0, Some(0), attach);
}

#[inline(always)]
fn record(
    p: &'static Profiler,
    kind: RecordKind,
    ticks: u64,
    method: MethodKey,
    arg: u32,
    overhead: Option<u32>,
    attach: impl FnOnce() -> bool,
) {
    if let Some(b) = crate::buffer::Hub::current() {
        b.clear_call(); // whether the record is stored or not (a plug-in's burst, muted)
    }
    if crate::plugin::delivering() {
        crate::plugin::method(p, kind == RecordKind::MethodEntry, method, arg);
    }
    if let Some(buffer) = p.hub.current_or(attach) {
        buffer.append(&p.hub, kind, ticks, method, arg, overhead, true);
    }
}
