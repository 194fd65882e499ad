//! `capture=bci`: the JVM side of bytecode instrumentation.
//!
//! - VMStart: java/lang/JliveTrampoline (bytes built by build.rs) is defined in the bootstrap
//!   loader. VMInit initializes it; its `<clinit>` calls `bind`, found by its JNI name in this
//!   library, which binds the trampolines to the functions below with RegisterNatives. Only
//!   then does the hook start instrumenting, so that linking `bind` (HotSpot asks
//!   ClassLoader.findNative first) runs no instrumented code.
//! - ClassFileLoadHook: each included class is rewritten (`jlive_bci::rewrite`) with a block of
//!   method keys; the keys are tied to the class's registry entry at ClassPrepare (or at once
//!   for a retransformed class).
//! - VMInit: classes loaded before the hook could instrument them are retransformed.
//! - `instrument=burst` (the default of a JVM started paused): neither happens until the first
//!   burst, which enables the hook and retransforms every class loaded by then
//!   ([`instrument_now`]).
//!
//! The trampoline natives are the hot path. Instrumented methods read `JliveTrampoline.gate`
//! (which `set_gate` sets with JNI as bursts begin and end, from [`GATE`]) and call the entry
//! and exit natives only while a burst records: read the tick counter, append one record,
//! return. The agent overhead a record carries is a constant measured at start-up instead of
//! a second tick read per call.

use super::{entered, exited};
use crate::buffer::Hub;
use crate::callbacks::{attach_java_thread, guard};
use crate::classes::Classes;
use crate::clock;
use crate::ffi::jni::{GlobalClasses, Jni};
use crate::ffi::jvmti::{self, cap, Jvmti, ACC_ABSTRACT, ACC_NATIVE};
use crate::log;
use crate::options::Methods;
use crate::profiler::{self, Profiler};
use crate::registry::BciKeys;
use jlive_bci::rewrite::{self, Weave, TRAMPOLINE};
use jlive_writer::record::{
    RecordKind, Slot, COMPACT_KEYS, FORM_BARE_EXIT, FORM_ENTRY, FORM_EXIT, NO_OBJECT,
    PENDING_OBJECT,
};
use jni_sys::{jclass, jint, jlong, jobject, JNIEnv};
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The trampoline class, compiled by build.rs.
const TRAMPOLINE_CLASS: &[u8] = include_bytes!(env!("JLIVE_TRAMPOLINE"));

/// Tag bit of class loaders (their identity for pending keys).
pub const LOADER_TAG: i64 = 1 << 61;

static READY: AtomicBool = AtomicBool::new(false);
/// `instrument=burst`: the first burst has rewritten the classes loaded before it, and the hook
/// rewrites every class loaded since.
static REWRITING: AtomicBool = AtomicBool::new(false);
/// `instrument=burst`: whether the first burst's retransformation is done; held while it runs,
/// so that a burst opened meanwhile waits for it.
static INSTRUMENTED: parking_lot::Mutex<bool> = parking_lot::Mutex::new(false);
static NEXT_LOADER: AtomicU64 = AtomicU64::new(1);
/// Classes instrumented from now on call `JliveTrampoline.enterCritical`/`exitCritical`, which
/// reach [`critical_enter`] and [`critical_exit`] as FFM critical downcalls once they are made
/// (JDK 22 and later; [`prepare_critical`]), and the JNI natives `enter0`/`exit0` until then,
/// instead of the JNI natives themselves.
static CRITICAL: AtomicBool = AtomicBool::new(false);

/// The intrinsic candidates of the boot classes instrumented so far, by class: (name,
/// descriptor, key). Calls of them from classes instrumented later are wrapped
/// (`jlive_bci::rewrite`'s module comment), so that a call HotSpot runs as its own code is
/// recorded all the same.
static CALLEES: parking_lot::RwLock<std::collections::BTreeMap<String, Intrinsics>> =
    parking_lot::const_rwlock(std::collections::BTreeMap::new());

/// A class's intrinsic candidates: (name, descriptor, key).
type Intrinsics = Vec<(String, String, u32)>;

/// Boot classes whose intrinsic candidates other classes call. Instrumenting begins with
/// those (loaded first when they are not yet), so that every caller instrumented after knows
/// them: JDK 17 to 25.
const CALLEES_FIRST: [&str; 25] = [
    "java/lang/Boolean",
    "java/lang/Byte",
    "java/lang/Character",
    "java/lang/CharacterDataLatin1",
    "java/lang/Class",
    "java/lang/Double",
    "java/lang/Float",
    "java/lang/Integer",
    "java/lang/Long",
    "java/lang/Math",
    "java/lang/Short",
    "java/lang/StrictMath",
    "java/lang/String",
    "java/lang/StringBuffer",
    "java/lang/StringBuilder",
    "java/lang/StringCoding",
    "java/lang/StringLatin1",
    "java/lang/StringUTF16",
    "java/lang/System",
    "java/lang/Thread",
    "java/lang/ref/Reference",
    "java/lang/reflect/Array",
    "java/nio/Buffer",
    "java/util/Arrays",
    "java/util/DualPivotQuicksort",
];

/// `JliveTrampoline.callCritical`/`calledCritical` pass the key with this bit to the critical
/// downcalls; no method key has it (`registry::MAX_BCI_KEYS`).
const CALL_BIT: jint = 1 << 30;
/// `JliveTrampoline.leafCritical` passes the key with this bit to the critical entry: the
/// entry and exit of a leaf, recorded at once ([`leaf_fast`]).
const LEAF_BIT: jint = 1 << 29;
const _: () = assert!(crate::registry::MAX_BCI_KEYS <= LEAF_BIT as u32);

/// What the open burst records (the JVMTI events are simply switched under capture=events).
/// Instrumented methods read its Java copy, `JliveTrampoline.gate`, and the Java trampolines of
/// native-method wrappers and allocation sites read it itself (JliveTrampoline's ENTRIES,
/// EXITS, ALLOCATIONS), before they call a native. Either read may be stale by a call, so the
/// natives read it again (with the hub's `tracing`).
static GATE: AtomicI32 = AtomicI32::new(0);
const GATE_ENTRIES: i32 = 1;
const GATE_EXITS: i32 = 2;
const GATE_ALLOCATIONS: i32 = 4;
/// monitors=on: the concurrency trampolines record (capture::sync).
const GATE_SYNC: i32 = 8;
/// A user trace library gets the burst (`plugin.rs`): every method record takes the slow
/// path, where the library is called.
const GATE_PLUGIN: i32 = 16;
/// A burst waits for a trigger (`trigger.rs`): entries take the slow path, where they are
/// looked up, and are not recorded.
const GATE_TRIGGER: i32 = 32;

/// What the instrumentation did, for the log and `status`.
#[derive(Default)]
pub struct BciStats {
    pub classes: AtomicU64,
    /// Classes read but left as they were: nothing in them to trace.
    pub untouched: AtomicU64,
    pub methods: AtomicU64,
    pub padded: AtomicU64,
    /// Instrumented leaves, whose entry and exit one call records.
    pub leaves: AtomicU64,
    /// Instrumented `@IntrinsicCandidate` methods (see the README: C2 may run its own code
    /// for their calls, which records nothing).
    pub intrinsic: AtomicU64,
    pub skipped: AtomicU64,
    pub native: AtomicU64,
    pub failed_classes: AtomicU64,
    pub nanos: AtomicU64,
    /// Trampoline natives called while the gate was closed (a few can pass as a burst ends;
    /// tests/jit.rs requires none from a JVM that never opened a burst).
    pub past_closed_gate: AtomicU64,
    /// Records the critical downcalls left to the JNI natives (a thread's first, a full
    /// buffer...).
    pub critical_missed: AtomicU64,
    /// Calls of intrinsic candidates wrapped where they are made.
    pub call_sites: AtomicU64,
}

impl BciStats {
    pub fn summary(&self) -> String {
        let classes = self.classes.load(Ordering::Relaxed);
        let untouched = self.untouched.load(Ordering::Relaxed);
        format!(
            "instrumented {} classes, {} methods ({} padded past the JIT's inlining limit; {} leaves, their entry and exit recorded by one call; {} intrinsic candidates, their calls wrapped at {} call sites); {} classes had nothing to trace; not traced: {} native methods, {} methods left as they were, {} classes that could not be read; {:.1} us per class read; {} trampoline calls past a closed gate; {} critical downcalls left to JNI",
            classes,
            self.methods.load(Ordering::Relaxed),
            self.padded.load(Ordering::Relaxed),
            self.leaves.load(Ordering::Relaxed),
            self.intrinsic.load(Ordering::Relaxed),
            self.call_sites.load(Ordering::Relaxed),
            untouched,
            self.native.load(Ordering::Relaxed),
            self.skipped.load(Ordering::Relaxed),
            self.failed_classes.load(Ordering::Relaxed),
            self.nanos.load(Ordering::Relaxed) as f64 / 1000.0 / (classes + untouched).max(1) as f64,
            self.past_closed_gate.load(Ordering::Relaxed),
            self.critical_missed.load(Ordering::Relaxed)
        )
    }
}

/// Classes never instrumented: jlive's own, and those the trampolines' callers need intact.
fn excluded(name: &str) -> bool {
    excluded_with(name, CRITICAL.load(Ordering::Relaxed))
}

/// [`excluded`], with the critical downcalls in use or not: their FFM adapter calls
/// java/util/Objects on every call (JDK 25), so that class stays as it is then.
fn excluded_with(name: &str, critical: bool) -> bool {
    (critical && name == "java/util/Objects")
        || name == TRAMPOLINE
        || name == "java/lang/Object"
        || name.starts_with("jlive/")
        || name.starts_with("java/lang/invoke/")
        || name.starts_with("java/lang/foreign/")
        || name.starts_with("jdk/internal/")
        || name.starts_with("sun/invoke/")
}

/// Whether capture=bci instruments the class of this internal name.
pub fn instruments(p: &Profiler, name: &str) -> bool {
    !excluded(name) && p.filter.traces(name)
}

fn weave(p: &Profiler, first_load: bool, critical: bool) -> Weave {
    Weave {
        objects: p.options.objects,
        // A user trace library's bursts may ask for allocations (InsTrcTypeAllocOn).
        alloc: p.options.alloc || p.options.plugin.is_some(),
        wrap_natives: first_load && p.caps.has(cap::SET_NATIVE_METHOD_PREFIX),
        inlinable: p.options.inlinable(),
        critical,
        leaves: true,
    }
}

/// Before the hook begins to rewrite (VM init under `instrument=load`, the first burst under
/// `instrument=burst`): unless `trampolines=jni`, classes are instrumented from now on to
/// call JliveTrampoline's critical trampolines, and a thread of jlive's has it make its FFM
/// critical downcalls, so that they reach libjlive without the JNI transition (on an Intel
/// Xeon a JNI call was most of a traced call: bench/README.md). Making them loads some 350
/// classes of the FFM implementation (100-180 ms): the application goes on meanwhile, its
/// calls reaching the JNI natives through the same trampolines until the downcalls are made
/// and checked. JDKs before 22 have none, and keep the JNI natives. The thread starts once
/// the intrinsic candidates are known ([`start_critical`], from [`retransform_loaded`]), so
/// that the classes it loads wrap their calls.
pub fn prepare_critical(p: &'static Profiler, jni: Jni<'_>) {
    if !p.uses_bci() || CRITICAL.load(Ordering::SeqCst) || p.closed.load(Ordering::SeqCst) {
        return;
    }
    if p.options.jni_only {
        log::info("trampolines: JNI natives (trampolines=jni)");
        return;
    }
    // The downcalls' fast path reads the TSC, and leaves a plug-in's records to the JNI
    // natives: without the one or with the other, every call would pay both.
    if clock::tsc().is_none() || p.options.plugin.is_some() {
        log::info("trampolines: JNI natives (no TSC clock, or a user trace library)");
        return;
    }
    if BOUND.get().is_none() {
        return;
    }
    // JDK 22's java.lang.foreign (JDK 21's preview has no critical(boolean)).
    let option = c"java/lang/foreign/Linker$Option";
    if !jni.initialize_class(option, c"critical", c"(Z)Ljava/lang/foreign/Linker$Option;") {
        log::info("trampolines: JNI natives (this JDK has no FFM critical downcalls)");
        return;
    }
    if !CRITICAL.swap(true, Ordering::SeqCst) {
        CRITICAL_PENDING.store(true, Ordering::SeqCst);
    }
}

/// [`prepare_critical`] chose the downcalls, whose thread has not started yet.
static CRITICAL_PENDING: AtomicBool = AtomicBool::new(false);

/// Starts the thread that makes the downcalls, if [`prepare_critical`] chose them, not once
/// the JVM is closing. VM death does not wait for it: a daemon thread of the JVM's, it stops
/// where it is when the JVM goes (as the JDK's own daemon threads do), and a program shorter
/// than the downcalls' making ends as soon as it would without them.
fn start_critical(p: &'static Profiler) {
    if !CRITICAL_PENDING.swap(false, Ordering::SeqCst) {
        return;
    }
    if p.closed.load(Ordering::SeqCst) {
        log::info("trampolines: JNI natives (the JVM ended before the FFM downcalls were made)");
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("jlive-critical".into())
        .spawn(move || {
            crate::buffer::mark_agent_thread();
            let started = std::time::Instant::now();
            if ended_first(p) {
                return;
            }
            let Some(env) = p.vm.attach_daemon(c"jlive critical") else {
                critical_failed(p, "no thread to make the FFM downcalls on");
                return;
            };
            guard(|| {
                let class = BOUND.get().and_then(|c| c.as_slice().first().copied());
                if let (Some(jni), Some(class)) = (Jni::from_callback(env), class) {
                    make_critical(p, jni, class, started);
                }
            });
            p.vm.detach_current();
        });
    match spawned {
        Ok(_) => log::info(
            "trampolines: FFM critical downcalls pending (being made beside the application, which reaches the JNI natives meanwhile)",
        ),
        Err(e) => log::warn(&format!(
            "trampolines: JNI natives (no thread to make the FFM downcalls on: {})",
            e
        )),
    }
}

/// [`prepare_critical`]'s thread: makes the downcalls, checks them and hands them to the
/// trampolines (`class`, a global reference).
fn make_critical(p: &Profiler, jni: Jni<'_>, class: jclass, started: std::time::Instant) {
    // The thread checked before it attached; each later step checks again that the program,
    // which has no use for them once it ends, still runs.
    if jni.call_static_boolean(class, c"critical", c"()Z") != Some(true) {
        critical_failed(p, "the FFM critical downcalls could not be made");
        return;
    }
    if ended_first(p) {
        return;
    }
    if let Err(e) = probe_critical(p, jni, class) {
        critical_failed(p, &e);
        return;
    }
    if ended_first(p) {
        return;
    }
    if jni.call_static_boolean(class, c"publishCritical", c"()Z") == Some(true) {
        log::info(&format!(
            "trampolines: FFM critical downcalls ready in {:?}",
            started.elapsed()
        ));
    }
}

/// Whether the JVM is closing, which the log then says, before the downcalls were ready.
fn ended_first(p: &Profiler) -> bool {
    let closed = p.closed.load(Ordering::SeqCst);
    if closed {
        log::info("trampolines: JNI natives (the JVM ended before the FFM downcalls were ready)");
    }
    closed
}

/// A step of the downcalls' thread failed: a warning, unless the JVM is closing (VM death does
/// not wait for the thread, whose JVM and JVMTI calls then fail).
fn critical_failed(p: &Profiler, why: &str) {
    if !ended_first(p) {
        log::warn(&format!("trampolines: JNI natives ({})", why));
    }
}

/// While [`probe_critical`] runs: its thread, and the instrumentable classes whose methods a
/// downcall ran there.
static PROBED: parking_lot::Mutex<Option<(std::thread::ThreadId, Vec<String>)>> =
    parking_lot::Mutex::new(None);
static PROBING: AtomicBool = AtomicBool::new(false);

/// Runs both downcalls with MethodEntry on for this thread (the FFM adapter is JDK code that
/// changes between releases): Ok if every Java method they ran is one jlive never instruments
/// with the downcalls in use, as an instrumented one would call them again, without end.
fn probe_critical(p: &Profiler, jni: Jni<'_>, class: jclass) -> Result<(), String> {
    if !p.caps.has(cap::GENERATE_METHOD_ENTRY_EVENTS) {
        return Err("no MethodEntry events to check the FFM downcalls with".into());
    }
    let thread = p
        .jvmti
        .current_thread()
        .ok_or("no current thread to check the FFM downcalls on")?;
    *PROBED.lock() = Some((std::thread::current().id(), Vec::new()));
    PROBING.store(true, Ordering::SeqCst);
    let on = p
        .jvmti
        .set_thread_event(jvmti::EVENT_METHOD_ENTRY, true, thread);
    let ran = on.is_ok() && jni.call_static_boolean(class, c"probeCritical", c"()Z") == Some(true);
    let _ = p
        .jvmti
        .set_thread_event(jvmti::EVENT_METHOD_ENTRY, false, thread);
    PROBING.store(false, Ordering::SeqCst);
    let mut found = PROBED.lock().take().map(|(_, f)| f).unwrap_or_default();
    if let Err(e) = on {
        return Err(format!("MethodEntry: {}", e));
    }
    if !ran {
        return Err("the FFM downcalls did not answer as expected".into());
    }
    found.sort();
    found.dedup();
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the FFM downcall runs instrumented JDK code: {}",
            found.join(", ")
        ))
    }
}

/// VMStart: defines the trampoline class in the bootstrap loader.
pub fn define_trampoline(jni: Jni<'_>) -> Result<jclass, String> {
    jni.define_boot_class(c"java/lang/JliveTrampoline", TRAMPOLINE_CLASS)
        .ok_or_else(|| "cannot define java/lang/JliveTrampoline in the bootstrap loader".into())
}

/// Attached: the JVM looks an attached agent up for natives only once Agent_OnAttach has
/// returned, and a native of a bootstrap class registered from outside one makes HotSpot warn
/// on the program's stdout. So JliveTrampoline's `<clinit>` loads libjlive.so itself (with
/// `System.load`, as a bootstrap class: the bootstrap loader's libraries then have it),
/// from the path in the system property `jlive.library`, set for the moment of
/// initialization.
pub fn initialize_attached_trampoline(jni: Jni<'_>) -> Result<(), String> {
    let library = crate::ffi::os::own_library().ok_or("cannot tell where libjlive.so is")?;
    if !jni.set_system_property(c"jlive.library", Some(&library)) {
        return Err("cannot set the system property jlive.library".into());
    }
    let initialized = initialize_trampoline(jni);
    jni.set_system_property(c"jlive.library", None);
    initialized
}

/// VMInit: initializes the trampoline class, which binds its natives (see `bind`).
pub fn initialize_trampoline(jni: Jni<'_>) -> Result<(), String> {
    jni.initialize_class(c"java/lang/JliveTrampoline", c"enter", c"(I)V");
    if READY.load(Ordering::SeqCst) {
        Ok(())
    } else {
        Err("the trampolines could not be bound".into())
    }
}

/// `JliveTrampoline.bind()`, called from its `<clinit>`: binds the trampolines and answers
/// the address of [`GATE`] (if binding fails, READY stays false and nothing is instrumented
/// to call them).
#[no_mangle]
pub extern "system" fn Java_java_lang_JliveTrampoline_bind(
    env: *mut JNIEnv,
    class: jclass,
) -> jlong {
    guard(|| {
        if let Some(jni) = Jni::from_callback(env) {
            bind(jni, class);
        }
    });
    GATE.as_ptr() as jlong
}

fn bind(jni: Jni<'_>, class: jclass) {
    let natives: [(&CStr, &CStr, *mut c_void); 17] = [
        (c"enter0", c"(I)V", enter as *mut c_void),
        (c"call0", c"(I)V", call as *mut c_void),
        (c"called0", c"(I)V", called as *mut c_void),
        (c"enterMissed0", c"(I)V", enter_missed as *mut c_void),
        (c"leaf0", c"(I)V", leaf as *mut c_void),
        (c"leafMissed0", c"(I)V", leaf_missed as *mut c_void),
        (c"exitMissed0", c"(I)V", exit_missed as *mut c_void),
        (c"criticalAddress", c"(I)J", critical_address as *mut c_void),
        (
            c"enterObject0",
            c"(Ljava/lang/Object;I)V",
            enter_object as *mut c_void,
        ),
        (
            c"enterConstructor0",
            c"(I)V",
            enter_constructor as *mut c_void,
        ),
        (
            c"constructed0",
            c"(Ljava/lang/Object;I)V",
            constructed as *mut c_void,
        ),
        (c"exit0", c"(I)V", exit as *mut c_void),
        (
            c"allocated0",
            c"(Ljava/lang/Object;)V",
            allocated as *mut c_void,
        ),
        (
            c"sync0",
            c"(ILjava/lang/Object;)Z",
            super::sync::sync0 as *mut c_void,
        ),
        (
            c"syncEnter0",
            c"(I)V",
            super::sync::sync_enter as *mut c_void,
        ),
        (
            c"syncEnterObject0",
            c"(Ljava/lang/Object;I)V",
            super::sync::sync_enter_object as *mut c_void,
        ),
        (c"syncExit0", c"(I)V", super::sync::sync_exit as *mut c_void),
    ];
    if jni.register_natives(class, &natives) {
        if let Some(p) = profiler::get() {
            super::sync::trampoline_bound(p.jvmti, class);
        }
        let _ = BOUND.set(jni.global_classes(&[class]));
        // A burst that began before the binding set GATE alone (set_gate needs BOUND).
        set_java_gate(jni, GATE.load(Ordering::SeqCst));
        READY.store(true, Ordering::SeqCst);
    }
}

/// JliveTrampoline (a global reference), once `bind` has bound its natives.
static BOUND: OnceLock<GlobalClasses> = OnceLock::new();

/// Sets `JliveTrampoline.gate`, which instrumented methods read before they call the entry
/// native (unless 0) and the exit native (if above 0), from the gate bits `gate`.
fn set_java_gate(jni: Jni<'_>, gate: i32) {
    let methods = match (gate & GATE_ENTRIES != 0, gate & GATE_EXITS != 0) {
        (true, true) => 1,
        (true, false) => -1,
        _ => 0,
    };
    if let Some(&class) = BOUND.get().and_then(|c| c.as_slice().first()) {
        jni.set_static_int(class, c"gate", methods);
        jni.set_static_int(class, c"syncGate", i32::from(gate & GATE_SYNC != 0));
    }
}

/// Sets the trampolines' gate for a burst that records `methods`, allocations and concurrency
/// events or not (`Methods::Off` and false close it).
pub fn set_gate(methods: Methods, alloc: bool, sync: bool, plugin: bool) {
    let methods = match methods {
        Methods::Off => 0,
        Methods::Entry => GATE_ENTRIES,
        Methods::On => GATE_ENTRIES | GATE_EXITS,
    };
    let alloc = if alloc { GATE_ALLOCATIONS } else { 0 };
    let sync = if sync { GATE_SYNC } else { 0 };
    let plugin = if plugin { GATE_PLUGIN } else { 0 };
    publish_gate(methods | alloc | sync | plugin);
}

/// Sets GATE and the Java side's gate from it.
fn publish_gate(gate: i32) {
    GATE.store(gate, Ordering::SeqCst);
    if let (Some(p), Some(_)) = (profiler::get(), BOUND.get()) {
        if p.closed.load(Ordering::SeqCst) {
            // The last burst ends with the JVM: the natives see GATE closed, and a thread that
            // unloads the agent must not attach to a JVM being torn down.
            return;
        }
        // Bursts begin and end on attached threads (VM init, the control thread, the Java
        // API), so this seldom attaches one.
        if p.vm.with_env(|jni| set_java_gate(jni, gate)).is_none() {
            log::warn("cannot reach the JVM to set the trampolines' gate");
            return;
        }
        drop_hoisted_gates(p);
    }
}

/// Opens the entries' gate for an armed trigger (`on`), or closes it: entries reach the
/// natives and are looked up there, nothing is recorded.
pub fn set_trigger_gate(on: bool) {
    publish_gate(if on { GATE_ENTRIES | GATE_TRIGGER } else { 0 });
}

/// An entry while a trigger is armed: true when it began the burst (and is recorded).
#[cold]
fn fires(key: jint) -> bool {
    profiler::get().is_some_and(|p| {
        super::trigger::entered(p, key as u64, || {
            p.hub.current_or(|| current_thread(p)).map(|b| b.key)
        })
    })
}

/// Makes every thread read `JliveTrampoline.gate` afresh. The field is a plain static, so a
/// compiled loop with no call in it (its callees inlined) may read it once before the loop and
/// keep that value until the loop ends: a burst begun meanwhile would miss the loop. HotSpot
/// deoptimizes every compiled frame of a thread that enters JVMTI's interpreted-only mode, and
/// a thread's method entries need that mode; so MethodEntry is switched on and off at once
/// (its callback, [`interpreted_only_entry`], does nothing). Each thread leaves its compiled
/// frames, the running one at its next safepoint poll; the interpreter reads the field at every
/// call, and the frames' methods stay compiled for their next calls. A plain field instead of a
/// volatile one lets C2 move loads across the gate's reads: Tomcat paused served 51k requests/s
/// with a volatile gate and 59k with a plain one (no agent 60k).
fn drop_hoisted_gates(p: &Profiler) {
    if !p.caps.has(cap::GENERATE_METHOD_ENTRY_EVENTS) {
        return;
    }
    for on in [true, false] {
        if let Err(e) = p.jvmti.set_event(jvmti::EVENT_METHOD_ENTRY, on) {
            log::warn(&format!(
                "compiled loops may keep the gate they read until they end: MethodEntry {}: {}",
                if on { "on" } else { "off" },
                e
            ));
            return;
        }
    }
}

/// JVMTI MethodEntry under capture=bci: enabled only for the moment [`drop_hoisted_gates`]
/// needs it; records nothing (the instrumented methods do).
pub extern "C" fn interpreted_only_entry(
    _env: *mut jvmti::jvmtiEnv,
    _jni: *mut JNIEnv,
    _thread: jvmti::jthread,
    method: jni_sys::jmethodID,
) {
    if PROBING.load(Ordering::Relaxed) {
        guard(|| probed(method));
    }
}

/// [`probe_critical`]: notes the class of a method a downcall ran if jlive would instrument it.
#[cold]
fn probed(method: jni_sys::jmethodID) {
    let me = std::thread::current().id();
    if !PROBED.lock().as_ref().is_some_and(|(t, _)| *t == me) {
        return; // another thread's entry (MethodEntry switched on for all, drop_hoisted_gates)
    }
    let Some(p) = profiler::get() else {
        return;
    };
    let Some(class) = p.jvmti.method_declaring_class(method) else {
        return;
    };
    let Ok(signature) = p.jvmti.class_signature(class) else {
        return;
    };
    let name = crate::classes::internal_name(&signature);
    if !excluded_with(&name, true) && p.filter.traces(&name) {
        // This thread's probe (checked above), which only this thread ends.
        if let Some((_, found)) = PROBED.lock().as_mut() {
            found.push(name);
        }
    }
}

fn current_thread(p: &'static Profiler) -> bool {
    attach_java_thread(p, p.jvmti, std::ptr::null_mut())
}

/// The running profiler if a burst is open that records what gate bit `what` stands for, so
/// that a paused JVM pays no clock read.
#[inline(always)]
fn recording(what: i32) -> Option<&'static Profiler> {
    let p = profiler::get().filter(|p| p.capturing() && GATE.load(Ordering::Relaxed) & what != 0);
    if p.is_none() {
        not_recording();
    }
    p
}

/// A trampoline native found no burst to record for: counts it when the gate was closed, as
/// the Java side should have stopped it (`BciStats::past_closed_gate`).
#[cold]
fn not_recording() {
    if GATE.load(Ordering::Relaxed) == 0 {
        if let Some(p) = profiler::get() {
            p.bci.past_closed_gate.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// An entry of method `key` whose receiver is `object` (or NO_OBJECT, PENDING_OBJECT): its
/// ticks when recorded. Each trampoline wraps it in its own `guard`, so that the guarded body
/// stays inlined in each.
#[inline(always)]
fn enter_with(key: jint, object: u32) -> Option<u64> {
    callee_ran();
    if super::trigger::armed() && !fires(key) {
        return None;
    }
    let p = recording(GATE_ENTRIES)?;
    let ticks = clock::ticks();
    entered(p, ticks, key as u64, object, || current_thread(p));
    Some(ticks)
}

/// The common case of a method record, when the thread has a buffer with room and no
/// collector is at it: false sends the caller to its full path. It runs outside `guard`
/// because nothing in it can panic: loads, stores, the TSC, and a thread-local that is a
/// const-initialized `Cell` with no destructor (so `with` cannot fail).
#[inline(always)]
fn fast(what: i32, form: u32, key: jint, arg: u32) -> bool {
    let Some((ticks, b, p)) = fast_start(what, key) else {
        return false;
    };
    b.try_append(&p.hub, Slot::compact(form, ticks, key as u32, arg))
}

/// What every fast path begins with: the TSC, the thread's buffer, and the profiler when a
/// record of `key` for gate bits `what` may take the fast path ([`fast_profiler`]).
#[inline(always)]
fn fast_start(
    what: i32,
    key: jint,
) -> Option<(u64, &'static crate::buffer::ThreadBuffer, &'static Profiler)> {
    // The TSC read takes longer than all the rest: started first, it overlaps the checks.
    // (The Java side only calls while a burst records, so it is seldom read in vain.)
    let ticks = clock::tsc()?;
    // The thread-local lookup is a call: early, so that little has to survive it.
    let b = Hub::current()?;
    let p = fast_profiler(what, key)?;
    Some((ticks, b, p))
}

/// The profiler, when a record of `key` for gate bits `what` may take the fast path: the gate
/// open for `what` and not to a plug-in or a trigger, a key that fits the one-slot form (not a
/// negative one), an overhead measured.
#[inline(always)]
fn fast_profiler(what: i32, key: jint) -> Option<&'static Profiler> {
    if GATE.load(Ordering::Relaxed) & (what | GATE_PLUGIN | GATE_TRIGGER) != what {
        return None;
    }
    let p = profiler::get()?;
    ((key as u32) < COMPACT_KEYS && p.hub.overhead().is_some()).then_some(p)
}

/// `JliveTrampoline.criticalAddress`: the functions its critical downcalls call.
extern "system" fn critical_address(_env: *mut JNIEnv, _class: jclass, which: jint) -> jlong {
    match which {
        0 => critical_enter as *const () as jlong,
        1 => critical_exit as *const () as jlong,
        _ => 0,
    }
}

/// `JliveTrampoline.enterCritical`'s FFM critical downcall: the thread stays in the Java state
/// meanwhile (no JNI transition), so nothing here may block, call the JVM or take long, which
/// is what [`fast`] is. 1 when it recorded; 0 sends the Java side to `enterMissed0`, the JNI
/// native, for everything else.
/// With [`CALL_BIT`], `callCritical`'s: [`call_fast`]; with [`LEAF_BIT`], `leafCritical`'s:
/// [`leaf_fast`].
extern "C" fn critical_enter(key: jint) -> jint {
    if key >= 0 && key & (CALL_BIT | LEAF_BIT) != 0 {
        return jint::from(if key & CALL_BIT != 0 {
            call_fast(key & !CALL_BIT)
        } else {
            leaf_fast(key & !LEAF_BIT)
        });
    }
    jint::from(fast(GATE_ENTRIES, FORM_ENTRY, key, NO_OBJECT))
}

/// `JliveTrampoline.exitCritical`'s downcall, as [`critical_enter`]; with [`CALL_BIT`],
/// `calledCritical`'s: [`called_fast`].
extern "C" fn critical_exit(key: jint) -> jint {
    if key >= 0 && key & CALL_BIT != 0 {
        return jint::from(called_fast(key & !CALL_BIT));
    }
    jint::from(fast(GATE_EXITS, FORM_EXIT, key, 0))
}

/// `JliveTrampoline.call0`: an instrumented method is about to call the intrinsic candidate
/// `key` (`jlive_bci::rewrite`'s module comment): note when.
extern "system" fn call(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !call_fast(key) {
        guard(|| match recording(GATE_ENTRIES) {
            Some(p) => {
                if let Some(b) = p.hub.current_or(|| current_thread(p)) {
                    b.begin_call(key as u32, clock::ticks());
                }
            }
            None => callee_ran(),
        });
    }
}

/// [`call`] when the thread has a buffer and the TSC is the clock; false sends the caller to
/// the full path. Nothing here can panic, block or call the JVM (a critical downcall's).
#[inline(always)]
fn call_fast(key: jint) -> bool {
    let Some(ticks) = clock::tsc() else {
        return false;
    };
    let Some(b) = Hub::current() else {
        return false;
    };
    if GATE.load(Ordering::Relaxed) & GATE_ENTRIES != 0 {
        b.begin_call(key as u32, ticks);
    } else {
        b.clear_call(); // none left over for a `called` after a burst opens
    }
    true
}

/// An entry reached the agent (the trigger's lookup, a plug-in's or a muted burst included,
/// where nothing is stored): the wrapped call under way, if any, ran its bytecode.
#[inline(always)]
fn callee_ran() {
    if let Some(b) = Hub::current() {
        b.clear_call();
    }
}

/// `JliveTrampoline.called0`: the call of the intrinsic candidate `key` returned. If nothing
/// was recorded since it began, HotSpot ran its own code for it: its entry (when the call
/// began) and exit are recorded here.
extern "system" fn called(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !called_fast(key) {
        guard(|| {
            let Some(begun) = Hub::current().and_then(|b| b.end_call(key as u32)) else {
                return;
            };
            if super::trigger::armed() && !fires(key) {
                return;
            }
            if let Some(p) = recording(GATE_ENTRIES) {
                entered(p, begun, key as u64, NO_OBJECT, || current_thread(p));
            }
            if let Some(p) = recording(GATE_EXITS) {
                exited(p, clock::ticks(), key as u64, || current_thread(p));
            }
        });
    }
}

/// [`called`]'s common case (both records in the thread's buffer, which has room): true when
/// done, false sends the caller to the full path, as [`fast`].
#[inline(always)]
fn called_fast(key: jint) -> bool {
    let Some(b) = Hub::current() else {
        return true; // no buffer, so no call begun
    };
    if !b.in_call(key as u32) {
        return true; // the callee's bytecode ran and recorded itself
    }
    let Some(ticks) = clock::tsc() else {
        return false;
    };
    let Some(p) = fast_profiler(GATE_ENTRIES | GATE_EXITS, key) else {
        return false;
    };
    let Some(begun) = b.end_call(key as u32) else {
        return true;
    };
    let pair = [
        Slot::compact(FORM_ENTRY, begun, key as u32, NO_OBJECT),
        Slot::compact(FORM_EXIT, ticks, key as u32, 0),
    ];
    if b.try_append_pair(&p.hub, pair) {
        return true;
    }
    b.begin_call(key as u32, begun); // still the full path's to record
    false
}

/// `JliveTrampoline.enterMissed0`: an entry its critical downcall left to JNI, counted; the
/// fast path already declined it, so it goes the full way at once.
extern "system" fn enter_missed(_env: *mut JNIEnv, _class: jclass, key: jint) {
    count_missed();
    enter_slow(key);
}

/// `JliveTrampoline.exitMissed0`: an exit its critical downcall left to JNI, counted.
extern "system" fn exit_missed(_env: *mut JNIEnv, _class: jclass, key: jint) {
    count_missed();
    exit_slow(key);
}

fn count_missed() {
    if let Some(p) = profiler::get() {
        p.bci.critical_missed.fetch_add(1, Ordering::Relaxed);
    }
}

/// `JliveTrampoline.leaf0`: the entry and exit of a leaf method (`jlive_bci::code::is_leaf`),
/// at once and at the same ticks, its exit with no overhead of its own (`FORM_BARE_EXIT`).
extern "system" fn leaf(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !leaf_fast(key) {
        leaf_slow(key);
    }
}

/// `JliveTrampoline.leafMissed0`: a leaf its critical downcall left to JNI, counted.
extern "system" fn leaf_missed(_env: *mut JNIEnv, _class: jclass, key: jint) {
    count_missed();
    leaf_slow(key);
}

/// [`leaf`]'s common case, as [`fast`]: both records in the thread's buffer, which has room
/// (the entry alone while the burst records entries only, `methods=entry`).
#[inline(always)]
fn leaf_fast(key: jint) -> bool {
    let Some((ticks, b, p)) = fast_start(GATE_ENTRIES, key) else {
        return false;
    };
    let entry = Slot::compact(FORM_ENTRY, ticks, key as u32, NO_OBJECT);
    if GATE.load(Ordering::Relaxed) & GATE_EXITS == 0 {
        return b.try_append(&p.hub, entry);
    }
    let exit = Slot::compact(FORM_BARE_EXIT, ticks, key as u32, 0);
    b.try_append_pair(&p.hub, [entry, exit])
}

#[cold]
#[inline(never)]
fn leaf_slow(key: jint) {
    guard(|| {
        let Some(ticks) = enter_with(key, NO_OBJECT) else {
            return;
        };
        if let Some(p) = recording(GATE_EXITS) {
            super::left_leaf(p, ticks, key as u64, || current_thread(p));
        }
    });
}

extern "system" fn enter(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !fast(GATE_ENTRIES, FORM_ENTRY, key, NO_OBJECT) {
        enter_slow(key);
    }
}

#[cold]
#[inline(never)]
fn enter_slow(key: jint) {
    guard(|| {
        enter_with(key, NO_OBJECT);
    });
}

extern "system" fn enter_object(env: *mut JNIEnv, _class: jclass, receiver: jobject, key: jint) {
    guard(|| {
        callee_ran();
        if super::trigger::armed() && !fires(key) {
            return;
        }
        if let Some(p) = recording(GATE_ENTRIES) {
            let ticks = clock::ticks();
            let object = crate::callbacks::object_id(p, p.jvmti, env, receiver, ticks);
            entered(p, ticks, key as u64, object, || current_thread(p));
        }
    });
}

extern "system" fn enter_constructor(_env: *mut JNIEnv, _class: jclass, key: jint) {
    guard(|| {
        enter_with(key, PENDING_OBJECT);
    });
}

/// The receiver of a constructor, once super() has returned (objects=on).
extern "system" fn constructed(env: *mut JNIEnv, _class: jclass, object: jobject, key: jint) {
    guard(|| {
        let Some(p) = recording(GATE_ENTRIES) else {
            return;
        };
        let ticks = clock::ticks();
        let (id, class) = crate::callbacks::object_identity(p, p.jvmti, env, object, ticks);
        if let (Some(class), Some(b)) = (class, Hub::current()) {
            b.append(
                &p.hub,
                RecordKind::ObjectBound,
                ticks,
                key as u64,
                id,
                Some(class),
                true,
            );
        }
    });
}

extern "system" fn exit(_env: *mut JNIEnv, _class: jclass, key: jint) {
    if !fast(GATE_EXITS, FORM_EXIT, key, 0) {
        exit_slow(key);
    }
}

#[cold]
#[inline(never)]
fn exit_slow(key: jint) {
    guard(|| {
        if let Some(p) = recording(GATE_EXITS) {
            exited(p, clock::ticks(), key as u64, || current_thread(p));
        }
    });
}

extern "system" fn allocated(env: *mut JNIEnv, _class: jclass, object: jobject) {
    guard(|| {
        if let Some(p) =
            profiler::get().filter(|_| GATE.load(Ordering::Relaxed) & GATE_ALLOCATIONS != 0)
        {
            crate::callbacks::record_allocation(
                p,
                p.jvmti,
                env,
                object,
                std::ptr::null_mut(),
                true,
            );
        } else {
            not_recording();
        }
    });
}

/// The identity of `class`'s loader ([`loader_identity`]; 0 = bootstrap).
fn loader_of(jvmti: Jvmti, jni: Jni<'_>, class: jclass) -> i64 {
    jvmti.class_loader(class).map_or(0, |l| {
        let identity = loader_identity(jvmti, l);
        jni.delete_local(l);
        identity
    })
}

/// The identity of a class loader: its tag, given one the first time (0 = bootstrap).
fn loader_identity(jvmti: Jvmti, loader: jobject) -> i64 {
    if loader.is_null() {
        return 0;
    }
    match jvmti.tag(loader) {
        Ok(0) => {
            let tag = LOADER_TAG | NEXT_LOADER.fetch_add(1, Ordering::Relaxed) as i64;
            if jvmti.set_tag(loader, tag).is_ok() {
                tag
            } else {
                -1
            }
        }
        Ok(tag) => tag,
        Err(_) => -1,
    }
}

/// ClassFileLoadHook (the raw arguments are taken apart in `ffi::hooks`): the rewritten
/// class, or None to leave it as it is. Keys are tied to the class now (retransformation)
/// or when it is prepared (first load).
pub fn class_file_load(
    jvmti: Jvmti,
    jni: *mut JNIEnv,
    redefined: jclass,
    loader: jobject,
    name: &str,
    bytes: &[u8],
) -> Option<Vec<u8>> {
    let p = profiler::get()?;
    if !READY.load(Ordering::SeqCst) || name == TRAMPOLINE {
        return None; // not yet: retransformed at VM init instead
    }
    let synced = if p.options.monitors {
        super::sync::hook_calls(p, name, bytes)
    } else {
        None
    };
    // Read once: the exclusion of java/util/Objects and the calls woven in go together.
    let critical = CRITICAL.load(Ordering::SeqCst);
    if !rewrites_now(p) || excluded_with(name, critical) || !p.filter.traces(name) {
        return synced;
    }
    let bytes = synced.as_deref().unwrap_or(bytes);
    let boot = loader.is_null();
    let Some(out) = transform(
        p,
        name,
        bytes,
        weave(p, redefined.is_null(), critical),
        boot,
    ) else {
        return synced;
    };
    let keys = BciKeys {
        base: out.base,
        methods: out.methods,
        // Attached to a running JVM, the JVM's order of a class's methods is not its file's.
        names: if p.caps.has(cap::MAINTAIN_ORIGINAL_METHOD_ORDER) {
            None
        } else {
            jlive_bci::classfile::method_names(bytes).ok()
        },
    };
    if redefined.is_null() {
        p.registry
            .add_pending(loader_identity(jvmti, loader), name.to_string(), keys);
    } else if let Some(jni) = Jni::from_callback(jni) {
        let classes = Classes {
            jvmti,
            jni,
            registry: &p.registry,
        };
        if let Some(key) = classes.key(redefined) {
            p.registry.link_bci(&keys, key);
        }
    }
    Some(out.bytes)
}

struct Transformed {
    bytes: Vec<u8>,
    base: u32,
    methods: u32,
}

/// Rewrites one class; None leaves it as it was (counted). The intrinsic candidates of a boot
/// class (`boot`) join [`CALLEES`].
fn transform(
    p: &Profiler,
    name: &str,
    bytes: &[u8],
    weave: Weave,
    boot: bool,
) -> Option<Transformed> {
    let started = std::time::Instant::now();
    let result = {
        let callees = CALLEES.read();
        let lookup = |owner: &[u8], method: &[u8], descriptor: &[u8]| {
            let methods = callees.get(std::str::from_utf8(owner).ok()?)?;
            let (_, _, key) = methods
                .iter()
                .find(|(n, d, _)| n.as_bytes() == method && d.as_bytes() == descriptor)?;
            Some(*key)
        };
        rewrite::instrument_with(bytes, |n| p.registry.reserve_bci(n), weave, &lookup)
    };
    p.bci
        .nanos
        .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    match result {
        Ok((out, base)) => {
            let counter = if out.instrumented > 0 {
                &p.bci.classes
            } else {
                &p.bci.untouched
            };
            counter.fetch_add(1, Ordering::Relaxed);
            p.bci
                .methods
                .fetch_add(u64::from(out.instrumented), Ordering::Relaxed);
            p.bci
                .padded
                .fetch_add(u64::from(out.padded), Ordering::Relaxed);
            p.bci
                .leaves
                .fetch_add(u64::from(out.leaves), Ordering::Relaxed);
            p.bci
                .intrinsic
                .fetch_add(u64::from(out.intrinsic), Ordering::Relaxed);
            p.bci
                .call_sites
                .fetch_add(u64::from(out.call_sites), Ordering::Relaxed);
            p.bci
                .native
                .fetch_add(u64::from(out.native), Ordering::Relaxed);
            p.bci
                .skipped
                .fetch_add(out.skipped.len() as u64, Ordering::Relaxed);
            for (method, why) in &out.skipped {
                log::info(&format!("not instrumented: {}.{}: {}", name, method, why));
            }
            if out.instrumented == 0 {
                // Nothing woven (an interface, an annotation type, only natives): the class
                // loads as it was, and keeps its place in the CDS archive.
                return None;
            }
            if boot && !out.intrinsics.is_empty() {
                CALLEES.write().insert(name.to_string(), out.intrinsics);
            }
            Some(Transformed {
                bytes: out.bytes,
                base,
                methods: out.methods,
            })
        }
        Err(e) => {
            p.bci.failed_classes.fetch_add(1, Ordering::Relaxed);
            log::info(&format!("not instrumented: class {}: {}", name, e));
            None
        }
    }
}

/// ClassPrepare: ties the keys given at load time to the registered class.
pub fn link_prepared(
    p: &Profiler,
    jvmti: Jvmti,
    jni: Jni<'_>,
    class: jclass,
    key: jlive_writer::record::ClassKey,
) {
    let Ok(signature) = jvmti.class_signature(class) else {
        return;
    };
    let name = crate::classes::internal_name(&signature);
    let loader = loader_of(jvmti, jni, class);
    // Linked before the pending entry goes: a retransformation that looks for either
    // (`to_retransform`) always finds one.
    if let Some(keys) = p.registry.pending(loader, &name) {
        p.registry.link_bci(&keys, key);
        p.registry.take_pending(loader, &name);
    }
}

/// `instrument=burst`: whether the first burst has begun to instrument (classes are
/// registered as they are prepared from then on).
pub fn rewriting() -> bool {
    REWRITING.load(Ordering::SeqCst)
}

/// Whether the hook rewrites classes for capture=bci now.
fn rewrites_now(p: &Profiler) -> bool {
    p.rewrites_at_load() || (p.uses_bci() && REWRITING.load(Ordering::SeqCst))
}

/// `instrument=burst`: the first burst (or armed trigger) rewrites every class loaded so far,
/// on the thread that opens it and before it records, and the hook every class loaded from
/// then on; it answers how many classes it instrumented and how long that took. Called before
/// the bursts lock is taken (the Java API's `tracing()` and `status` need that lock meanwhile);
/// a second caller waits until the first is done. Later calls, and every call under
/// `instrument=load`, return None at once.
pub fn instrument_now() -> Option<(u64, std::time::Duration)> {
    let p = profiler::get()?;
    if !p.uses_bci() || p.rewrites_at_load() || !READY.load(Ordering::SeqCst) {
        return None;
    }
    let mut done = INSTRUMENTED.lock();
    if *done || p.closed.load(Ordering::SeqCst) {
        return None;
    }
    let started = std::time::Instant::now();
    let before = p.bci.classes.load(Ordering::Relaxed);
    // monitors=on enabled it at VM init, for the concurrency call sites.
    if !p.options.monitors {
        if let Err(e) = p.jvmti.set_event(jvmti::EVENT_CLASS_FILE_LOAD_HOOK, true) {
            log::warn(&format!(
                "no ClassFileLoadHook ({}): capture=bci cannot instrument, the burst records no method",
                e
            ));
            return None;
        }
    }
    p.vm.with_env(|jni| {
        let _frame = jni.local_frame(16);
        // From here on ClassPrepare registers each class; those prepared before are listed
        // after it, and registered here. Before the downcalls' thread loads any class: a class
        // loaded unrewritten could not get its native wrappers later.
        REWRITING.store(true, Ordering::SeqCst);
        prepare_critical(p, jni);
        let classes = Classes {
            jvmti: p.jvmti,
            jni,
            registry: &p.registry,
        };
        crate::classes::with_loaded_classes(p.jvmti, jni, |loaded| {
            classes.register_prepared(&loaded)
        });
        retransform_loaded(p, p.jvmti, jni);
    })?;
    *done = true;
    let (count, took) = (
        p.bci.classes.load(Ordering::Relaxed) - before,
        started.elapsed(),
    );
    log::info(&format!(
        "instrumented at the first burst (instrument=burst): {} classes in {:?}",
        count, took
    ));
    Some((count, took))
}

/// VMInit (or attach): retransforms every loaded class the hook has not instrumented yet;
/// then, once more, those that were loaded while it did so but whose hook ran before the
/// trampolines were ready (an attached JVM keeps loading classes meanwhile).
pub fn retransform_loaded(p: &'static Profiler, jvmti: Jvmti, jni: Jni<'_>) {
    load_callees(p, jni);
    let (work, left, first) = crate::classes::with_loaded_classes(jvmti, jni, |loaded| {
        to_retransform(p, jvmti, jni, loaded, true)
    });
    let started = std::time::Instant::now();
    // The classes of CALLEES_FIRST first, alone, so that their callers in the rest wrap
    // their calls. Once: retransforming them a second time (for the calls they make of each
    // other's) crashed JDK 17 under load (a SIGSEGV in VM_RedefineClasses'
    // MetadataOnStackMark, a Tomcat serving requests at its first burst).
    let (callees, rest) = work.as_slice().split_at(first);
    retransform_chunks(jvmti, callees, &AtomicUsize::new(0));
    start_critical(p);
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        // Helper threads take chunks as well when there are more: at VM init the JIT's
        // threads are still mostly idle, and most of a retransformation (this hook, HotSpot
        // parsing, verifying and merging the new versions) runs in the calling thread, before
        // the safepoint. HotSpot lets threads redefine disjoint sets of classes at the same
        // time. Under load the scheduler shares the cores by thread: more threads finish
        // sooner (Tomcat's first burst under wrk, medians of 3: with two 2.06 s on JDK 17 and
        // 2.68 s on JDK 25, with four 1.38 s and 2.28 s; idle the same).
        let chunks = rest.len().div_ceil(RETRANSFORM_CHUNK);
        let helpers: Vec<_> = (1..RETRANSFORM_THREADS.min(chunks))
            .map(|_| {
                std::thread::Builder::new()
                    .name("jlive-retransform".into())
                    .spawn_scoped(s, || {
                        crate::buffer::mark_agent_thread();
                        if p.vm.attach_daemon(c"jlive retransform").is_none() {
                            log::warn("a retransforming thread could not attach to the JVM; the others take its chunks");
                            return None;
                        }
                        let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            retransform_chunks(jvmti, &work.as_slice()[first..], &next)
                        }));
                        p.vm.detach_current();
                        taken.ok()
                    })
            })
            .collect();
        let mine = retransform_chunks(jvmti, rest, &next);
        // Those that ran to the end, and the chunks they took.
        let theirs: Vec<usize> = helpers
            .into_iter()
            .filter_map(|h| h.ok()?.join().ok().flatten())
            .collect();
        log::info(&format!(
            "retransformed {} classes loaded before jlive could rewrite them in {:?} ({} chunks on the calling thread, {} on {} others); {} with nothing to trace left as they were",
            work.as_slice().len(),
            started.elapsed(),
            mine,
            theirs.iter().sum::<usize>(),
            theirs.len(),
            left
        ));
    });
    jni.release(work);
    let (more, _, _) = crate::classes::with_loaded_classes(jvmti, jni, |loaded| {
        to_retransform(p, jvmti, jni, loaded, false)
    });
    if !more.as_slice().is_empty() {
        log::info(&format!(
            "retransformed {} more classes loaded while the first ones were",
            more.as_slice().len()
        ));
        retransform_chunks(jvmti, more.as_slice(), &AtomicUsize::new(0));
    }
    jni.release(more);
}

/// Of `loaded`, those to retransform (`count`: counting those with nothing to trace, which
/// only the first pass does), as global references (the local ones are gone, with
/// their frame, before the retransformation runs its hooks inside this callback), those of
/// [`CALLEES_FIRST`] first; how many were left out for having nothing to trace; how many of
/// [`CALLEES_FIRST`] lead.
fn to_retransform(
    p: &Profiler,
    jvmti: Jvmti,
    jni: Jni<'_>,
    loaded: Vec<jclass>,
    count: bool,
) -> (GlobalClasses, u64, usize) {
    let classes = Classes {
        jvmti,
        jni,
        registry: &p.registry,
    };
    let (mut first, mut todo) = (Vec::new(), Vec::new());
    let mut left = 0;
    for class in loaded {
        let Ok(signature) = jvmti.class_signature(class) else {
            continue;
        };
        let name = crate::classes::internal_name(&signature);
        if signature.starts_with('[') || excluded(&name) || !p.filter.traces(&name) {
            continue;
        }
        if !jvmti.is_modifiable_class(class) {
            continue;
        }
        // Rewritten as it loaded, meanwhile (the verifier of a retransformed class loads the
        // classes it checks against), and linked when it is prepared: as a retransformation
        // would drop its native wrappers, HotSpot would refuse it. Asked before whether it is
        // linked: ClassPrepare links a class before its pending keys go.
        let loader = loader_of(jvmti, jni, class);
        if p.registry.is_pending(loader, &name) || p.registry.is_linked(classes.key(class)) {
            continue;
        }
        // Retransforming a class redefines it even when the hook gives nothing back (HotSpot
        // parses and merges the class again, ~0.2 ms each): leave out those with no code.
        if let Some(natives) = nothing_to_trace(jvmti, class) {
            // Counted once, by the first pass.
            if count {
                p.bci.untouched.fetch_add(1, Ordering::Relaxed);
                p.bci.native.fetch_add(natives, Ordering::Relaxed);
            }
            left += 1;
            continue;
        }
        if CALLEES_FIRST.contains(&name.as_str()) {
            first.push(class);
        } else {
            todo.push(class);
        }
    }
    let leading = first.len();
    first.append(&mut todo);
    (jni.global_classes(&first), left, leading)
}

/// Loads the classes of [`CALLEES_FIRST`] not loaded yet (a few: StringUTF16, StrictMath,
/// reflect.Array...), so that the hook instruments them, and learns their intrinsic
/// candidates, before the classes that call them.
fn load_callees(p: &Profiler, jni: Jni<'_>) {
    let _frame = jni.local_frame(4);
    for name in CALLEES_FIRST {
        if excluded(name) || !p.filter.traces(name) || CALLEES.read().contains_key(name) {
            continue;
        }
        if let Ok(name) = std::ffi::CString::new(name) {
            if let Some(class) = jni.find_class(&name) {
                jni.delete_local(class);
            }
        }
    }
}

/// Classes retransformed in one JVMTI call (one VM operation). Each operation's safepoint
/// walks every loaded class once, whatever its size: the first burst of a paused Tomcat
/// (2,463 classes) took 78 safepoints, 1.24 s in all, in chunks of 32, and 11 safepoints,
/// 190 ms, in chunks of 256, the longest 23 and 26 ms.
const RETRANSFORM_CHUNK: usize = 256;

/// Threads that retransform chunks at once, the calling one included.
const RETRANSFORM_THREADS: usize = 4;

/// Retransforms the chunks of `classes` that no other thread has taken (`next` counts them
/// out) and answers how many it took.
fn retransform_chunks(jvmti: Jvmti, classes: &[jclass], next: &AtomicUsize) -> usize {
    let mut taken = 0;
    while let Some(range) = take_chunk(classes.len(), next) {
        taken += 1;
        retransform_halving(jvmti, &classes[range]);
    }
    taken
}

/// Retransforms `classes` in one call; if that fails, each half again, down to the classes
/// that fail alone, which are logged. Each call is a safepoint that walks every loaded class,
/// so one bad class costs about twice the chunk's logarithm of calls, not one per class.
fn retransform_halving(jvmti: Jvmti, classes: &[jclass]) {
    if classes.is_empty() {
        return;
    }
    let Err(e) = jvmti.retransform_classes(classes) else {
        return;
    };
    if let [class] = classes {
        let name = jvmti.class_signature(*class).unwrap_or_default();
        log::info(&format!("cannot retransform {}: {}", name, e));
        return;
    }
    let (first, second) = classes.split_at(classes.len() / 2);
    retransform_halving(jvmti, first);
    retransform_halving(jvmti, second);
}

/// The next [`RETRANSFORM_CHUNK`] of `len` items that no thread has taken (`next` counts the
/// chunks out), None once all are.
fn take_chunk(len: usize, next: &AtomicUsize) -> Option<std::ops::Range<usize>> {
    let from = next
        .fetch_add(1, Ordering::Relaxed)
        .checked_mul(RETRANSFORM_CHUNK)?;
    (from < len).then(|| from..(from + RETRANSFORM_CHUNK).min(len))
}

/// Some(number of native methods) when no method of `class` has code: only abstract and
/// native ones (an interface without default or static methods, an annotation type).
fn nothing_to_trace(jvmti: Jvmti, class: jclass) -> Option<u64> {
    let mut natives = 0;
    for method in jvmti.class_methods(class).ok()? {
        let modifiers = jvmti.method_modifiers(method).ok()?;
        if modifiers & (ACC_NATIVE | ACC_ABSTRACT) == 0 {
            return None;
        }
        if modifiers & ACC_NATIVE != 0 {
            natives += 1;
        }
    }
    Some(natives)
}

#[cfg(test)]
mod tests {
    use super::{take_chunk, RETRANSFORM_CHUNK};
    use jlive_bci::classfile::ClassFile;
    use jlive_bci::rewrite::{self, instrument, Weave, TRAMPOLINE};
    use std::sync::atomic::AtomicUsize;

    /// The Utf8 constants of a class file.
    fn strings(class: &[u8]) -> Vec<String> {
        let cf = ClassFile::parse(class).unwrap();
        (1..cf.pool.entries.len() as u16)
            .filter_map(|i| cf.pool.text(i).ok().map(|s| s.into_owned()))
            .collect()
    }

    fn example(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("JLIVE_EXAMPLE_CLASSES"));
        std::fs::read(dir.join(name)).unwrap()
    }

    #[test]
    fn a_class_gets_only_the_trampolines_it_calls() {
        let class = example("Demo.class");
        let plain = instrument(&class, 0, Weave::default()).unwrap();
        let names = strings(&plain.bytes);
        assert!(plain.instrumented > 0);
        for used in ["gate", "enter0", "exit0", "java/lang/Throwable"] {
            assert!(names.iter().any(|n| n == used), "{} missing", used);
        }
        // The Java trampolines serve native-method wrappers, which Demo does not have.
        for unused in [
            "enter",
            "exit",
            "enterObject0",
            "enterConstructor0",
            "constructed",
            "allocated",
        ] {
            assert!(
                !names.iter().any(|n| n == unused),
                "{} added unused",
                unused
            );
        }
        let woven = Weave {
            objects: true,
            alloc: true,
            ..Weave::default()
        };
        let names: Vec<String> = ["Alloc.class", "Alloc$Payload.class", "Demo.class"]
            .iter()
            .flat_map(|c| strings(&instrument(&example(c), 0, woven).unwrap().bytes))
            .collect();
        for used in [
            "enterObject0",
            "enterConstructor0",
            "constructed",
            "allocated",
        ] {
            assert!(names.iter().any(|n| n == used), "{} missing", used);
        }
        // With the critical downcalls, entries and exits call their Java side only.
        let critical = Weave {
            critical: true,
            ..Weave::default()
        };
        let names = strings(&instrument(&class, 0, critical).unwrap().bytes);
        for used in ["gate", "enterCritical", "exitCritical"] {
            assert!(names.iter().any(|n| n == used), "{} missing", used);
        }
        for unused in ["enter0", "exit0"] {
            assert!(
                !names.iter().any(|n| n == unused),
                "{} still called",
                unused
            );
        }
    }

    /// Examples/Leaves's leaves call `leaf0`; its methods that look alike (an array access,
    /// an integer division, a loop, a call, a Class constant) and its constructor and main
    /// call `enter0`.
    #[test]
    fn only_leaves_record_their_exit_with_their_entry() {
        use jlive_bci::classfile::Code;
        let weave = Weave {
            leaves: true,
            ..Weave::default()
        };
        let out = instrument(&example("Leaves.class"), 0, weave).unwrap();
        let cf = ClassFile::parse(&out.bytes).unwrap();
        let mut prologues = Vec::new();
        for m in &cf.methods {
            let code = m
                .attributes
                .iter()
                .find(|a| cf.pool.is_utf8(a.name, b"Code"));
            let code = Code::parse(&code.unwrap().data).unwrap();
            // The prologue's call: getstatic gate; ifeq; sipush key; invokestatic.
            assert_eq!(code.code[9], 0xB8);
            let called = u16::from_be_bytes([code.code[10], code.code[11]]);
            let (_, trampoline, _) = cf.pool.member_ref(called).unwrap();
            let name = cf.pool.text(m.name).unwrap().into_owned();
            prologues.push((name, String::from_utf8_lossy(trampoline).into_owned()));
        }
        prologues.sort();
        let expected = [
            ("<init>", "enter0"),
            ("add", "leaf0"),
            ("cell", "enter0"),
            ("count", "leaf0"),
            ("half", "enter0"),
            ("main", "enter0"),
            ("name", "leaf0"),
            ("setCount", "leaf0"),
            ("sum", "enter0"),
            ("twice", "leaf0"),
            ("type", "enter0"),
            ("viaLeaf", "enter0"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect();
        assert_eq!(prologues, expected);
    }

    /// A call of an intrinsic candidate the hook knows is wrapped: `call` before it and
    /// `called` after it, each given the callee's key; no other call is.
    #[test]
    fn calls_of_known_intrinsic_candidates_are_wrapped_with_the_callees_key() {
        let class = example("Intrinsic.class");
        let min = |owner: &[u8], name: &[u8], descriptor: &[u8]| {
            (owner == b"java/lang/Math" && name == b"min" && descriptor == b"(II)I")
                .then_some(0x1092)
        };
        for (critical, names) in [
            (false, ["call", "called"]),
            (true, ["callCritical", "calledCritical"]),
        ] {
            let weave = Weave {
                critical,
                ..Weave::default()
            };
            let (out, _) = rewrite::instrument_with(&class, |_| Some(0), weave, &min).unwrap();
            assert_eq!(out.call_sites, 1, "one call of Math.min");
            let pool = strings(&out.bytes);
            for name in names {
                assert!(pool.iter().any(|n| n == name), "{} missing", name);
            }
            // sipush KEY; invokestatic call; invokestatic Math.min; sipush KEY; invokestatic
            // called.
            let cf = ClassFile::parse(&out.bytes).unwrap();
            let named = |at: &[u8]| {
                let (owner, name, _) = cf
                    .pool
                    .member_ref(u16::from_be_bytes([at[0], at[1]]))
                    .unwrap();
                format!(
                    "{}.{}",
                    String::from_utf8_lossy(owner),
                    String::from_utf8_lossy(name)
                )
            };
            let push = [0x11, 0x10, 0x92, 0xB8];
            let wrapped: Vec<[String; 3]> = out
                .bytes
                .windows(15)
                .filter(|w| w[..4] == push && w[6] == 0xB8 && w[9..13] == push)
                .map(|w| [named(&w[4..6]), named(&w[7..9]), named(&w[13..15])])
                .collect();
            let t = TRAMPOLINE;
            assert_eq!(
                wrapped,
                [[
                    format!("{}.{}", t, names[0]),
                    "java/lang/Math.min".to_string(),
                    format!("{}.{}", t, names[1])
                ]],
                "the call, between the callee's key pushed for each trampoline"
            );
        }
        let (unknown, _) =
            rewrite::instrument_with(&class, |_| Some(0), Weave::default(), &rewrite::no_callees)
                .unwrap();
        assert_eq!(unknown.call_sites, 0);
        assert!(!strings(&unknown.bytes).iter().any(|n| n == "call"));
    }

    /// Two threads taking chunks between them retransform every class once.
    #[test]
    fn two_threads_take_every_chunk_once() {
        for len in [
            0,
            1,
            RETRANSFORM_CHUNK - 1,
            RETRANSFORM_CHUNK,
            RETRANSFORM_CHUNK + 1,
            1000,
        ] {
            let next = AtomicUsize::new(0);
            let taken: Vec<Vec<std::ops::Range<usize>>> = std::thread::scope(|s| {
                let workers: Vec<_> = (0..2)
                    .map(|_| s.spawn(|| std::iter::from_fn(|| take_chunk(len, &next)).collect()))
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).collect()
            });
            let mut seen = vec![0u32; len];
            for range in taken.iter().flatten() {
                assert!(range.len() <= RETRANSFORM_CHUNK && !range.is_empty());
                for i in range.clone() {
                    seen[i] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "len {}: {:?}", len, seen);
            assert_eq!(take_chunk(len, &next), None, "nothing left after");
        }
    }
}
