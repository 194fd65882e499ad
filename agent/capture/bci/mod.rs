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
//! (which `gate.rs` sets with JNI as bursts begin and end, from [`GATE`]) and call the entry
//! and exit natives only while a burst records: read the tick counter, append one record,
//! return. The agent overhead a record carries is a constant measured at start-up instead of
//! a second tick read per call.

use crate::runtime::Runtime;
use jlive_bci::rewrite::{Weave, TRAMPOLINE};
use jlive_jvm::jni::{GlobalClasses, Jni};
use jlive_jvm::jvmti::cap;
use jlive_jvm::refs::{Class, GlobalClass};
use jni_sys::jint;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

mod critical;
pub mod gate;
mod hook;

pub use hook::LoadedClass;
pub mod natives;
mod retransform;

/// The trampoline class, compiled by build.rs.
const TRAMPOLINE_CLASS: &[u8] = include_bytes!(env!("JLIVE_TRAMPOLINE"));

/// Tag bit of class loaders (their identity for pending keys).
pub const LOADER_TAG: i64 = 1 << 61;

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
pub const CALL_BIT: jint = 1 << 30;
/// `JliveTrampoline.leafCritical` passes the key with this bit to the critical entry: the
/// entry and exit of a leaf, recorded at once ([`leaf_fast`]).
pub const LEAF_BIT: jint = 1 << 29;
const _: () = assert!(crate::symbols::MAX_BCI_KEYS <= LEAF_BIT as u32);

/// A native JliveTrampoline (or the Java API) declares, and the function behind it.
pub type Native = jlive_jvm::jni::NativeMethod;

/// capture=bci's state (and the trampolines', which `monitors=on` uses too).
#[derive(Default)]
pub struct Bci {
    /// The trampolines are bound: the hook may instrument.
    ready: AtomicBool,
    /// `instrument=burst`: the first burst has rewritten the classes loaded before it, and the
    /// hook rewrites every class loaded since.
    rewriting: AtomicBool,
    /// `instrument=burst`: whether the first burst's retransformation is done; held while it
    /// runs, so that a burst opened meanwhile waits for it.
    instrumented: Mutex<bool>,
    /// Class loaders tagged so far (their identity for pending keys).
    loaders: AtomicU64,
    /// Classes instrumented from now on call `JliveTrampoline.enterCritical`/`exitCritical`,
    /// which reach the critical entry and exit (`natives.rs`) as FFM critical downcalls once
    /// they are made (JDK 22 and later; `critical.rs`), and the JNI natives `enter0`/`exit0`
    /// until then, instead of the JNI natives themselves.
    critical: AtomicBool,
    /// The downcalls were chosen, their thread has not started yet.
    critical_pending: AtomicBool,
    /// The intrinsic candidates of the boot classes instrumented so far, by class. Calls of
    /// them from classes instrumented later are wrapped (`jlive_bci::rewrite`'s module
    /// comment), so that a call HotSpot runs as its own code is recorded all the same.
    callees: RwLock<BTreeMap<String, Intrinsics>>,
    /// While the downcalls are checked: their thread, and the instrumentable classes whose
    /// methods a downcall ran there (`critical.rs`).
    probed: Mutex<Option<(std::thread::ThreadId, Vec<String>)>>,
    probing: AtomicBool,
    /// JliveTrampoline (a global reference), once `bind` has bound its natives.
    bound: OnceLock<GlobalClasses>,
    pub stats: BciStats,
}

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

/// [`Bci::excluded`], with the critical downcalls in use or not: their FFM adapter calls
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

impl Bci {
    /// Classes never instrumented: jlive's own, and those the trampolines' callers need intact.
    fn excluded(&self, name: &str) -> bool {
        excluded_with(name, self.critical.load(Ordering::Relaxed))
    }

    /// Whether capture=bci instruments the class of this internal name.
    pub fn instruments(&self, rt: &Runtime, name: &str) -> bool {
        !self.excluded(name) && rt.filter().traces(name)
    }

    /// VMStart: defines the trampoline class in the bootstrap loader.
    pub fn define_trampoline(jni: Jni<'_>) -> Result<(), String> {
        // SAFETY: TRAMPOLINE_CLASS is javac's output for trampoline/ (build.rs), a class the
        // verifier accepts (the tests load it with verification on).
        let defined =
            unsafe { jni.define_boot_class(c"java/lang/JliveTrampoline", TRAMPOLINE_CLASS) };
        match defined {
            Some(class) => {
                jni.delete_local(class);
                Ok(())
            }
            None => Err("cannot define java/lang/JliveTrampoline in the bootstrap loader".into()),
        }
    }

    /// Attached: the JVM looks an attached agent up for natives only once Agent_OnAttach has
    /// returned, and a native of a bootstrap class registered from outside one makes HotSpot warn
    /// on the program's stdout. So JliveTrampoline's `<clinit>` loads libjlive.so itself (with
    /// `System.load`, as a bootstrap class: the bootstrap loader's libraries then have it),
    /// from the path in the system property `jlive.library`, set for the moment of
    /// initialization.
    pub fn initialize_attached_trampoline(&self, jni: Jni<'_>) -> Result<(), String> {
        let library = jlive_jvm::os::own_library().ok_or("cannot tell where libjlive.so is")?;
        if !jni.set_system_property("jlive.library", Some(&library)) {
            return Err("cannot set the system property jlive.library".into());
        }
        let initialized = self.initialize_trampoline(jni);
        jni.set_system_property("jlive.library", None);
        initialized
    }

    /// VMInit: initializes the trampoline class, which binds its natives (see `bind`).
    pub fn initialize_trampoline(&self, jni: Jni<'_>) -> Result<(), String> {
        jni.initialize_class(c"java/lang/JliveTrampoline", c"enter", c"(I)V");
        if self.ready.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err("the trampolines could not be bound".into())
        }
    }

    /// JliveTrampoline, once bound.
    fn trampoline(&self) -> Option<&GlobalClass> {
        self.bound.get().and_then(|c| c.as_slice().first())
    }

    /// `instrument=burst`: whether the first burst has begun to instrument (classes are
    /// registered as they are prepared from then on).
    pub fn rewriting(&self) -> bool {
        self.rewriting.load(Ordering::SeqCst)
    }

    /// Opens the entries' gate for an armed trigger (`on`), or closes it.
    pub fn set_trigger_gate(&self, rt: &Runtime, on: bool) {
        gate::set_trigger(self, rt, on);
    }

    /// Whether the hook rewrites classes for capture=bci now.
    fn rewrites_now(&self, rt: &Runtime) -> bool {
        let o = rt.options();
        o.rewrites_at_load() || (o.uses_bci() && self.rewriting.load(Ordering::SeqCst))
    }
}

fn weave(rt: &Runtime, first_load: bool, critical: bool) -> Weave {
    let o = rt.options();
    Weave {
        objects: o.objects,
        // A user trace library's bursts may ask for allocations (InsTrcTypeAllocOn).
        alloc: o.alloc || o.plugin.is_some(),
        wrap_natives: first_load && rt.caps().has(cap::SET_NATIVE_METHOD_PREFIX),
        inlinable: o.inlinable(),
        critical,
        leaves: true,
    }
}

impl super::Capture {
    /// `JliveTrampoline.bind()`, called from its `<clinit>`: binds the trampolines to
    /// `natives` (if that fails, nothing is instrumented to call them).
    pub fn bind_trampolines(
        &self,
        rt: &Runtime,
        jni: Jni<'_>,
        class: &Class<'_>,
        natives: &[Native],
    ) {
        if jni.register_natives(class, natives) {
            self.sync().trampoline_bound(rt.jvmti(), class);
            let bci = self.bci();
            let _ = bci
                .bound
                .set(jni.global_classes(std::slice::from_ref(class)));
            // A burst that began before the binding set the gate alone (its Java copy needs
            // the class).
            gate::set_java_gate(bci, jni, gate::current());
            bci.ready.store(true, Ordering::SeqCst);
        }
    }
}

impl super::MethodCapture for Bci {
    /// The gate, set by `Capture::switch`, is all: instrumented methods read it.
    fn switch(&self, _rt: &Runtime, _flags: super::BurstFlags, _on: bool) {}

    fn summary(&self) -> Option<String> {
        Some(self.stats.summary())
    }
}
