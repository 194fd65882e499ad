//! The hot path: what the trampolines' natives do when nothing needs attention, which is
//! nearly always. The natives themselves are thin functions in `entry/natives.rs` (the JVM
//! calls them with no context but a key); each tries its fast path here and otherwise takes
//! the session's full path (`session/calls.rs`), which handles every case.
//!
//! A fast path reads the TSC, finds the thread's buffer (a thread-local), checks the gate
//! and appends one or two one-slot records: no call into the JVM, no lock, no allocation,
//! nothing that can panic (loads, stores, the TSC, and const-initialized thread-local `Cell`s
//! with no destructor, so that `with` cannot fail). It runs outside `guard` for that reason.
//!
//! A call of an intrinsic candidate is wrapped where it is made (`call0` before it, `called0`
//! after it, each with the callee's key): if nothing was recorded on the thread between the
//! two, HotSpot ran its own code for the callee, and `called0` records its entry (at the
//! call's start) and exit. The call under way is the buffer's `note`, which every record
//! stored ends.

use super::gate::{GATE, GATE_ENTRIES, GATE_EXITS, GATE_PLUGIN, GATE_TRIGGER};
use super::{CALL_BIT, LEAF_BIT};
use crate::clock;
use crate::transport::{Hub, Note, ThreadBuffer};
use jlive_writer::record::{Slot, COMPACT_KEYS, FORM_BARE_EXIT, FORM_ENTRY, FORM_EXIT, NO_OBJECT};
use jni_sys::jint;
use std::sync::atomic::Ordering;

/// No wrapped call under way (a key no method has).
const NO_CALL: u32 = Note::NONE;

/// The hub, looked up only once the TSC and the thread's buffer are on their way (the
/// natives pass the session's).
pub trait HubOf: FnOnce() -> Option<&'static Hub> {}
impl<F: FnOnce() -> Option<&'static Hub>> HubOf for F {}

/// The common case of a method record, when the thread has a buffer with room and no
/// collector is at it: false sends the caller to its full path.
#[inline(always)]
pub fn fast(what: i32, form: u32, key: jint, arg: u32, hub: impl HubOf) -> bool {
    let Some((ticks, b, hub)) = fast_start(what, key, hub) else {
        return false;
    };
    b.try_append(hub, Slot::compact(form, ticks, key as u32, arg))
}

/// What every fast path begins with: the TSC, the thread's buffer, and the hub when a record
/// of `key` for gate bits `what` may take the fast path ([`fast_hub`]).
#[inline(always)]
fn fast_start(
    what: i32,
    key: jint,
    hub: impl HubOf,
) -> Option<(u64, &'static ThreadBuffer, &'static Hub)> {
    // The TSC read takes longer than all the rest: started first, it overlaps the checks.
    // (The Java side only calls while a burst records, so it is seldom read in vain.)
    let ticks = clock::tsc()?;
    // The thread-local lookup is a call: early, so that little has to survive it.
    let b = Hub::current()?;
    let hub = fast_hub(what, key, hub)?;
    Some((ticks, b, hub))
}

/// The hub, when a record of `key` for gate bits `what` may take the fast path: the gate open
/// for `what` and not to a plug-in or a trigger, a key that fits the one-slot form (not a
/// negative one), an overhead measured.
#[inline(always)]
fn fast_hub(what: i32, key: jint, hub: impl HubOf) -> Option<&'static Hub> {
    if GATE.load(Ordering::Relaxed) & (what | GATE_PLUGIN | GATE_TRIGGER) != what {
        return None;
    }
    let hub = hub()?;
    ((key as u32) < COMPACT_KEYS && hub.overhead().is_some()).then_some(hub)
}

/// `JliveTrampoline.enterCritical`'s FFM critical downcall: the thread stays in the Java state
/// meanwhile (no JNI transition), so nothing here may block, call the JVM or take long, which
/// is what [`fast`] is. 1 when it recorded; 0 sends the Java side to `enterMissed0`, the JNI
/// native, for everything else. With [`CALL_BIT`], `callCritical`'s: [`call_fast`]; with
/// [`LEAF_BIT`], `leafCritical`'s: [`leaf_fast`].
#[inline(always)]
pub fn critical_enter(key: jint, hub: impl HubOf) -> jint {
    if key >= 0 && key & (CALL_BIT | LEAF_BIT) != 0 {
        return jint::from(if key & CALL_BIT != 0 {
            call_fast(key & !CALL_BIT)
        } else {
            leaf_fast(key & !LEAF_BIT, hub)
        });
    }
    jint::from(fast(GATE_ENTRIES, FORM_ENTRY, key, NO_OBJECT, hub))
}

/// `JliveTrampoline.exitCritical`'s downcall, as [`critical_enter`]; with [`CALL_BIT`],
/// `calledCritical`'s: [`called_fast`].
#[inline(always)]
pub fn critical_exit(key: jint, hub: impl HubOf) -> jint {
    if key >= 0 && key & CALL_BIT != 0 {
        return jint::from(called_fast(key & !CALL_BIT, hub));
    }
    jint::from(fast(GATE_EXITS, FORM_EXIT, key, 0, hub))
}

/// `call0`: an instrumented method is about to call the intrinsic candidate `key`: note
/// when, if the thread has a buffer and the TSC is the clock; false sends the caller to the
/// full path. Nothing here can panic, block or call the JVM (a critical downcall's).
#[inline(always)]
pub fn call_fast(key: jint) -> bool {
    let Some(ticks) = clock::tsc() else {
        return false;
    };
    let Some(b) = Hub::current() else {
        return false;
    };
    if GATE.load(Ordering::Relaxed) & GATE_ENTRIES != 0 {
        begin_call(b, key as u32, ticks);
    } else {
        // None left over for a `called` after a burst opens.
        b.note.key.store(NO_CALL, Ordering::Relaxed);
    }
    true
}

/// A wrapped call of `key` begins at `ticks` on the thread of `b` (the owner only).
#[inline(always)]
pub fn begin_call(b: &ThreadBuffer, key: u32, ticks: u64) {
    let note = &b.note;
    note.ticks.store(ticks, Ordering::Relaxed);
    note.key.store(key, Ordering::Relaxed);
}

/// An entry reached the agent (the trigger's lookup, a plug-in's or a muted burst included,
/// where nothing is stored): the wrapped call under way, if any, ran its bytecode.
#[inline(always)]
pub fn callee_ran() {
    if let Some(b) = Hub::current() {
        b.note.key.store(NO_CALL, Ordering::Relaxed);
    }
}

/// Whether the wrapped call of `key` is under way with nothing recorded since it began.
#[inline(always)]
fn in_call(b: &ThreadBuffer, key: u32) -> bool {
    b.note.key.load(Ordering::Relaxed) == key
}

/// The wrapped call of `key` ends: when it began, if nothing was recorded meanwhile (the
/// callee's bytecode did not run: HotSpot ran its own code for it), and the call is then the
/// caller's to record; None when the callee recorded itself (the owner only).
#[inline(always)]
pub fn end_call(b: &ThreadBuffer, key: u32) -> Option<u64> {
    if !in_call(b, key) {
        return None;
    }
    b.note.key.store(NO_CALL, Ordering::Relaxed);
    Some(b.note.ticks.load(Ordering::Relaxed))
}

/// `called0`'s common case (both records in the thread's buffer, which has room): true when
/// done, false sends the caller to the full path, as [`fast`].
#[inline(always)]
pub fn called_fast(key: jint, hub: impl HubOf) -> bool {
    let Some(b) = Hub::current() else {
        return true; // no buffer, so no call begun
    };
    if !in_call(b, key as u32) {
        return true; // the callee's bytecode ran and recorded itself
    }
    let Some(ticks) = clock::tsc() else {
        return false;
    };
    let Some(hub) = fast_hub(GATE_ENTRIES | GATE_EXITS, key, hub) else {
        return false;
    };
    let Some(begun) = end_call(b, key as u32) else {
        return true;
    };
    let pair = [
        Slot::compact(FORM_ENTRY, begun, key as u32, NO_OBJECT),
        Slot::compact(FORM_EXIT, ticks, key as u32, 0),
    ];
    if b.try_append_pair(hub, pair) {
        return true;
    }
    begin_call(b, key as u32, begun); // still the full path's to record
    false
}

/// `leaf0`'s common case, as [`fast`]: the entry and exit of a leaf method
/// (`jlive_bci::code::is_leaf`), at once and at the same ticks, its exit with no overhead of
/// its own (`FORM_BARE_EXIT`); the entry alone while the burst records entries only
/// (`methods=entry`).
#[inline(always)]
pub fn leaf_fast(key: jint, hub: impl HubOf) -> bool {
    let Some((ticks, b, hub)) = fast_start(GATE_ENTRIES, key, hub) else {
        return false;
    };
    let entry = Slot::compact(FORM_ENTRY, ticks, key as u32, NO_OBJECT);
    if GATE.load(Ordering::Relaxed) & GATE_EXITS == 0 {
        return b.try_append(hub, entry);
    }
    let exit = Slot::compact(FORM_BARE_EXIT, ticks, key as u32, 0);
    b.try_append_pair(hub, [entry, exit])
}
