//! The gate: what the open burst records, as the trampolines read it. [`GATE`] is the one
//! module-level state of capture=bci: the trampolines' fast path and JliveTrampoline's Java
//! side (through its address, which `bind` answers) read it without any context. The
//! recorder sets it through [`set`] as bursts begin and end; `JliveTrampoline.gate`, the
//! copy instrumented methods read, follows it.

use super::Bci;
use crate::log;
use crate::options::Methods;
use crate::runtime::Runtime;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{self, cap};
use std::sync::atomic::{AtomicI32, Ordering};

/// What the open burst records (the JVMTI events are simply switched under capture=events).
/// Instrumented methods read its Java copy, `JliveTrampoline.gate`, and the Java trampolines of
/// native-method wrappers and allocation sites read it itself (JliveTrampoline's ENTRIES,
/// EXITS, ALLOCATIONS), before they call a native. Either read may be stale by a call, so the
/// natives read it again (with the hub's `tracing`).
pub static GATE: AtomicI32 = AtomicI32::new(0);
pub const GATE_ENTRIES: i32 = 1;
pub const GATE_EXITS: i32 = 2;
pub const GATE_ALLOCATIONS: i32 = 4;
/// monitors=on: the concurrency trampolines record (capture::sync).
pub const GATE_SYNC: i32 = 8;
/// A user trace library gets the burst (`plugin/`): every method record takes the slow
/// path, where the library is called.
pub const GATE_PLUGIN: i32 = 16;
/// A burst waits for a trigger (`recorder/trigger.rs`): entries take the slow path, where
/// they are looked up, and are not recorded.
pub const GATE_TRIGGER: i32 = 32;

/// The gate bits now.
#[inline(always)]
pub fn current() -> i32 {
    GATE.load(Ordering::Relaxed)
}

/// The gate's address, which JliveTrampoline's Java side reads.
pub fn address() -> i64 {
    GATE.as_ptr() as i64
}

/// Sets `JliveTrampoline.gate`, which instrumented methods read before they call the entry
/// native (unless 0) and the exit native (if above 0), from the gate bits `gate`.
pub(super) fn set_java_gate(bci: &Bci, jni: Jni<'_>, gate: i32) {
    let methods = match (gate & GATE_ENTRIES != 0, gate & GATE_EXITS != 0) {
        (true, true) => 1,
        (true, false) => -1,
        _ => 0,
    };
    if let Some(class) = bci.trampoline() {
        jni.set_static_int(class, c"gate", methods);
        jni.set_static_int(class, c"syncGate", i32::from(gate & GATE_SYNC != 0));
    }
}

/// Sets the trampolines' gate for a burst that records `methods`, allocations and concurrency
/// events or not (`Methods::Off` and false close it).
pub fn set(bci: &Bci, rt: &Runtime, methods: Methods, alloc: bool, sync: bool, plugin: bool) {
    let methods = match methods {
        Methods::Off => 0,
        Methods::Entry => GATE_ENTRIES,
        Methods::On => GATE_ENTRIES | GATE_EXITS,
    };
    let alloc = if alloc { GATE_ALLOCATIONS } else { 0 };
    let sync = if sync { GATE_SYNC } else { 0 };
    let plugin = if plugin { GATE_PLUGIN } else { 0 };
    publish(bci, rt, methods | alloc | sync | plugin);
}

/// Sets GATE and the Java side's gate from it.
fn publish(bci: &Bci, rt: &Runtime, gate: i32) {
    GATE.store(gate, Ordering::SeqCst);
    if bci.trampoline().is_some() {
        if rt.closing() {
            // The last burst ends with the JVM: the natives see GATE closed, and a thread that
            // unloads the agent must not attach to a JVM being torn down.
            return;
        }
        // Bursts begin and end on attached threads (VM init, the control thread, the Java
        // API), so this seldom attaches one.
        if rt
            .vm()
            .with_env(|jni| set_java_gate(bci, jni, gate))
            .is_none()
        {
            log::warn("cannot reach the JVM to set the trampolines' gate");
            return;
        }
        drop_hoisted_gates(rt);
    }
}

/// Opens the entries' gate for an armed trigger (`on`), or closes it: entries reach the
/// natives and are looked up there, nothing is recorded.
pub fn set_trigger(bci: &Bci, rt: &Runtime, on: bool) {
    publish(bci, rt, if on { GATE_ENTRIES | GATE_TRIGGER } else { 0 });
}

/// Makes every thread read `JliveTrampoline.gate` afresh. The field is a plain static, so a
/// compiled loop with no call in it (its callees inlined) may read it once before the loop and
/// keep that value until the loop ends: a burst begun meanwhile would miss the loop. HotSpot
/// deoptimizes every compiled frame of a thread that enters JVMTI's interpreted-only mode, and
/// a thread's method entries need that mode; so MethodEntry is switched on and off at once
/// (its callback, the session's `interpreted_only_entry`, does nothing). Each thread leaves its compiled
/// frames, the running one at its next safepoint poll; the interpreter reads the field at every
/// call, and the frames' methods stay compiled for their next calls. A plain field instead of a
/// volatile one lets C2 move loads across the gate's reads: Tomcat paused served 51k requests/s
/// with a volatile gate and 59k with a plain one (no agent 60k).
fn drop_hoisted_gates(rt: &Runtime) {
    if !rt.caps().has(cap::GENERATE_METHOD_ENTRY_EVENTS) {
        return;
    }
    for on in [true, false] {
        if let Err(e) = rt.jvmti().set_event(jvmti::EVENT_METHOD_ENTRY, on) {
            log::warn(&format!(
                "compiled loops may keep the gate they read until they end: MethodEntry {}: {}",
                if on { "on" } else { "off" },
                e
            ));
            return;
        }
    }
}
