//! The shim's state and its JVMPI semantics, in safe Rust: which events are on, the IDs, the
//! threads, and every event built from what JVMTI reports. `ffi/` is the edge: it turns
//! JVMTI callbacks into calls here and hands the events built here to the agent.
//!
//! IDs:
//! - jobjectID: the object's JVMTI tag in the shim's own environment, a number that never
//!   changes while the object lives (GC moves objects, never tags). Hence no OBJECT_MOVE is
//!   ever sent and DisableGC has nothing to protect: an ID stays valid until OBJECT_FREE.
//!   IDs are multiples of 8; a class object's tag also has bit 0 set once its CLASS_LOAD went
//!   out (the ID is the tag without it).
//! - jmethodID: JVMTI's own.
//! - thread: the thread's JNIEnv pointer, as the specification has it; each thread the shim
//!   sees gets a [`ThreadSlot`] (its Thread object, its ID, the agent's thread-local word).

mod events;
mod gc;
mod ids;
mod threads;

use gc::GcQueue;
pub use ids::{id_ptr, ptr_id, tag_variants, ClassLoadData};
pub use threads::ThreadSlot;

use crate::abi::{self, event};
use crate::ffi;
use crate::monitor::RawMonitor;
use jlive_jvm::jni::Vm;
use jlive_jvm::jvmti::{self, cap, Capabilities, Jvmti};
use jni_sys::{jint, jlong};
use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::CString;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The one heap arena the shim reports (ARENA_NEW once; never deleted).
pub const ARENA: jint = 1;
const ARENA_NAME: &std::ffi::CStr = c"Java heap";

/// A method's (bytecode index, line) pairs.
type LineTable = Arc<Vec<(u32, u32)>>;

/// How long the frees of a collection may keep coming in, between two and at most.
const SETTLE: Duration = Duration::from_millis(20);
const SETTLE_MAX: Duration = Duration::from_millis(500);

/// Tag bit 0: a class whose CLASS_LOAD went out.
const ANNOUNCED: i64 = 1;
/// Tag bit 1: an object whose OBJECT_ALLOC went out (once, though HotSpot may post both
/// VMObjectAlloc and SampledObjectAlloc for it); only these count as the heap's objects.
const ALLOCATED: i64 = 2;
/// Tag bit 2: a Class object (its free is a class unloaded, not an object freed).
const CLASS_BIT: i64 = 4;

static SHIM: OnceLock<Shim> = OnceLock::new();

pub fn get() -> Option<&'static Shim> {
    SHIM.get()
}

thread_local! {
    /// The JNIEnv this thread was registered with (0: not yet).
    static REGISTERED: Cell<usize> = const { Cell::new(0) };
    /// The JNIEnv this thread had when its THREAD_END went out (0: none).
    static ENDED: Cell<usize> = const { Cell::new(0) };
    /// The slot of this thread, for the agent's thread-local word without a lock.
    static SLOT: Cell<*const ThreadSlot> = const { Cell::new(ptr::null()) };
    /// The shim's own threads: no event of theirs reaches the agent.
    static OWN: Cell<bool> = const { Cell::new(false) };
    /// Set while a thread made by CreateSystemThread attaches: its THREAD_START waits until
    /// its creator has returned (the creator may hold what the agent's handler wants).
    pub static DEFER_START: Cell<bool> = const { Cell::new(false) };
    /// The name this thread attaches under (set by the shim before it attaches a thread).
    pub static ATTACH_NAME: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// When this thread's Object.wait began (MONITOR_WAITED's timeout is the time waited).
    static WAIT_BEGAN: Cell<Option<Instant>> = const { Cell::new(None) };
}

pub struct Shim {
    pub jvmti: Jvmti,
    pub vm: Vm,
    enabled: [AtomicBool; (event::MAX + 1) as usize],
    next_id: AtomicU64,
    threads: Mutex<HashMap<usize, Arc<ThreadSlot>>>,
    /// Classes whose CLASS_LOAD is being delivered, by the thread delivering it.
    announcing: Mutex<HashMap<u64, usize>>,
    /// Held while a class gets its ID (no GC or ObjectFree callback takes it).
    class_tags: Mutex<()>,
    announced: Condvar,
    kinds: Mutex<HashMap<u64, (jint, u64)>>,
    lines: Mutex<HashMap<usize, LineTable>>,
    caps: Mutex<Capabilities>,
    gc_disabled: AtomicI32,
    gc: Mutex<GcQueue>,
    gc_signal: Condvar,
    /// Signalled when a batch has been delivered, a RunGC is done, or the GC thread ends.
    gc_delivered: Condvar,
    live: AtomicBool,
    dead: AtomicBool,
    known_objects: AtomicI64,
    monitors: Mutex<Vec<Arc<RawMonitor>>>,
    destroyed: Mutex<Vec<Arc<RawMonitor>>>,
    /// The object each thread waits on in Object.wait, by JNIEnv (kept while MONITOR_WAIT
    /// is on: JDK 23+ no longer names it through GetCurrentContendedMonitor).
    waiting: Mutex<HashMap<usize, u64>>,
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// The agent's view of a thread's state (GetThreadStatus).
pub fn jvmpi_status(jvmti_state: jint, suspended_by_jvmpi: bool) -> jint {
    const BLOCKED_ON_MONITOR_ENTER: jint = 0x400;
    const WAITING: jint = 0x80;
    const SUSPENDED: jint = 0x10_0000;
    const INTERRUPTED: jint = 0x20_0000;
    let mut s = if jvmti_state & BLOCKED_ON_MONITOR_ENTER != 0 {
        abi::THREAD_MONITOR_WAIT
    } else if jvmti_state & WAITING != 0 {
        abi::THREAD_CONDVAR_WAIT
    } else {
        abi::THREAD_RUNNABLE
    };
    if jvmti_state & SUSPENDED != 0 && !suspended_by_jvmpi {
        s |= abi::THREAD_SUSPENDED;
    }
    if jvmti_state & INTERRUPTED != 0 {
        s |= abi::THREAD_INTERRUPTED;
    }
    s
}

/// `Ljava/lang/String;` → `java.lang.String`; `[Ljava/lang/String;` → `[Ljava.lang.String;`
/// (Class.getName's spelling, as JVMPI's CLASS_LOAD gave it).
pub fn class_name(signature: &str) -> String {
    let dotted = signature.replace('/', ".");
    match dotted.strip_prefix('L') {
        Some(rest) if !signature.starts_with('[') => rest.trim_end_matches(';').to_string(),
        _ => dotted,
    }
}

/// JVMPI's array type for an array class signature (`[I` → INT), or NORMAL_OBJECT.
pub fn array_kind(signature: &str) -> jint {
    let b = signature.as_bytes();
    if b.first() != Some(&b'[') {
        return abi::NORMAL_OBJECT;
    }
    match b.get(1) {
        Some(b'Z') => abi::BOOLEAN,
        Some(b'B') => abi::BYTE,
        Some(b'C') => abi::CHAR,
        Some(b'S') => abi::SHORT,
        Some(b'I') => abi::INT,
        Some(b'J') => abi::LONG,
        Some(b'F') => abi::FLOAT,
        Some(b'D') => abi::DOUBLE,
        _ => abi::CLASS,
    }
}

/// The source line of bytecode index `bci` in a line table of (start bci, line).
pub fn line_at(table: &[(u32, u32)], bci: jlong) -> jint {
    if bci < 0 {
        return abi::LINE_NATIVE;
    }
    table
        .iter()
        .filter(|(start, _)| i64::from(*start) <= bci)
        .max_by_key(|(start, _)| *start)
        .map_or(abi::LINE_UNKNOWN, |(_, line)| *line as jint)
}

impl Shim {
    /// Creates the shim's own JVMTI environment and state; done once per process.
    pub fn install(vm: Vm) -> Result<&'static Shim, String> {
        let mut caps = Capabilities::default();
        for bit in [
            cap::TAG_OBJECTS,
            cap::GET_LINE_NUMBERS,
            cap::GET_SOURCE_FILE_NAME,
            cap::SUSPEND,
            cap::GET_THREAD_CPU_TIME,
            // MONITOR_DUMP's; HotSpot grants them only at load.
            cap::GET_OWNED_MONITOR_INFO,
            cap::GET_CURRENT_CONTENDED_MONITOR,
            cap::GET_MONITOR_INFO,
        ] {
            caps.set(bit);
        }
        let jvmti = vm
            .new_jvmti_env(&caps)
            .map_err(|e| format!("no JVMTI environment for the JVMPI shim ({})", e))?;
        // Onload-only in HotSpot, so taken now for an agent that turns method events on
        // later; without a method event on they cost nothing.
        let mut methods = Capabilities::default();
        methods.set(cap::GENERATE_METHOD_ENTRY_EVENTS);
        methods.set(cap::GENERATE_METHOD_EXIT_EVENTS);
        if jvmti.add_capabilities(&methods).is_ok() {
            caps.set(cap::GENERATE_METHOD_ENTRY_EVENTS);
            caps.set(cap::GENERATE_METHOD_EXIT_EVENTS);
        }
        let shim = Shim {
            jvmti,
            vm,
            enabled: std::array::from_fn(|_| AtomicBool::new(false)),
            next_id: AtomicU64::new(1),
            threads: Mutex::new(HashMap::new()),
            announcing: Mutex::new(HashMap::new()),
            class_tags: Mutex::new(()),
            announced: Condvar::new(),
            kinds: Mutex::new(HashMap::new()),
            lines: Mutex::new(HashMap::new()),
            caps: Mutex::new(caps),
            gc_disabled: AtomicI32::new(0),
            gc: Mutex::new(GcQueue::default()),
            gc_signal: Condvar::new(),
            gc_delivered: Condvar::new(),
            live: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            known_objects: AtomicI64::new(0),
            monitors: Mutex::new(Vec::new()),
            destroyed: Mutex::new(Vec::new()),
            waiting: Mutex::new(HashMap::new()),
        };
        if SHIM.set(shim).is_err() {
            // SAFETY: the only other copy was in the shim state just dropped; none is used
            // after this.
            unsafe { jvmti.dispose() };
            return Err("a JVMPI agent is hosted already: one per JVM, as JVMPI allowed".into());
        }
        let shim = get().ok_or("shim state lost")?;
        ffi::set_callbacks(jvmti).map_err(|e| format!("JVMPI shim callbacks: {}", e))?;
        for e in [
            jvmti::EVENT_VM_INIT,
            jvmti::EVENT_VM_DEATH,
            jvmti::EVENT_THREAD_START,
            jvmti::EVENT_THREAD_END,
        ] {
            jvmti
                .set_event(e, true)
                .map_err(|err| format!("JVMPI shim event {}: {}", e, err))?;
        }
        Ok(shim)
    }

    pub fn on(&self, ev: jint) -> bool {
        self.enabled
            .get(ev as usize)
            .is_some_and(|e| e.load(Ordering::Relaxed))
    }

    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire) && !self.dead.load(Ordering::Acquire)
    }

    pub fn own_thread() -> bool {
        OWN.with(|o| o.get())
    }

    pub(crate) fn add_capabilities(&self, bits: &[u32]) -> bool {
        let mut held = self.caps.lock();
        let mut want = Capabilities::default();
        let mut missing = false;
        for &b in bits {
            if !held.has(b) {
                want.set(b);
                missing = true;
            }
        }
        if !missing {
            return true;
        }
        if self.jvmti.add_capabilities(&want).is_err() {
            return false;
        }
        for &b in bits {
            held.set(b);
        }
        true
    }

    /// EnableEvent / DisableEvent.
    pub fn enable(&self, ev: jint, on: bool) -> jint {
        use event::*;
        type Need = (&'static [u32], &'static [u32]);
        let need: Need = match ev {
            METHOD_ENTRY => (
                &[cap::GENERATE_METHOD_ENTRY_EVENTS],
                &[jvmti::EVENT_METHOD_ENTRY],
            ),
            METHOD_ENTRY2 => (
                &[
                    cap::GENERATE_METHOD_ENTRY_EVENTS,
                    cap::ACCESS_LOCAL_VARIABLES,
                ],
                &[jvmti::EVENT_METHOD_ENTRY],
            ),
            METHOD_EXIT => (
                &[cap::GENERATE_METHOD_EXIT_EVENTS],
                &[jvmti::EVENT_METHOD_EXIT],
            ),
            OBJECT_ALLOC => (
                &[
                    cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS,
                    cap::GENERATE_VM_OBJECT_ALLOC_EVENTS,
                ],
                &[
                    jvmti::EVENT_SAMPLED_OBJECT_ALLOC,
                    jvmti::EVENT_VM_OBJECT_ALLOC,
                ],
            ),
            OBJECT_FREE | CLASS_UNLOAD | GC_START | GC_FINISH => (
                &[
                    cap::GENERATE_OBJECT_FREE_EVENTS,
                    cap::GENERATE_GARBAGE_COLLECTION_EVENTS,
                ],
                &[
                    jvmti::EVENT_OBJECT_FREE,
                    jvmti::EVENT_GARBAGE_COLLECTION_FINISH,
                ],
            ),
            COMPILED_METHOD_LOAD => (
                &[cap::GENERATE_COMPILED_METHOD_LOAD_EVENTS],
                &[jvmti::EVENT_COMPILED_METHOD_LOAD],
            ),
            COMPILED_METHOD_UNLOAD => (
                &[cap::GENERATE_COMPILED_METHOD_LOAD_EVENTS],
                &[jvmti::EVENT_COMPILED_METHOD_UNLOAD],
            ),
            CLASS_LOAD => (&[], &[jvmti::EVENT_CLASS_PREPARE]),
            CLASS_LOAD_HOOK => (&[], &[jvmti::EVENT_CLASS_FILE_LOAD_HOOK]),
            DATA_DUMP_REQUEST => (&[], &[jvmti::EVENT_DATA_DUMP_REQUEST]),
            MONITOR_CONTENDED_ENTER => (
                &[cap::GENERATE_MONITOR_EVENTS],
                &[jvmti::EVENT_MONITOR_CONTENDED_ENTER],
            ),
            MONITOR_CONTENDED_ENTERED => (
                &[cap::GENERATE_MONITOR_EVENTS],
                &[jvmti::EVENT_MONITOR_CONTENDED_ENTERED],
            ),
            MONITOR_WAIT => (
                &[cap::GENERATE_MONITOR_EVENTS],
                &[jvmti::EVENT_MONITOR_WAIT],
            ),
            MONITOR_WAITED => (
                &[cap::GENERATE_MONITOR_EVENTS],
                &[jvmti::EVENT_MONITOR_WAITED],
            ),
            JNI_GLOBALREF_ALLOC
            | JNI_GLOBALREF_FREE
            | JNI_WEAK_GLOBALREF_ALLOC
            | JNI_WEAK_GLOBALREF_FREE => (&[], &[]),
            // Served by the shim itself, or never sent (OBJECT_MOVE, ARENA_DELETE: IDs and
            // the one arena never change).
            THREAD_START
            | THREAD_END
            | JVM_INIT_DONE
            | JVM_SHUT_DOWN
            | ARENA_NEW
            | ARENA_DELETE
            | OBJECT_MOVE
            | RAW_MONITOR_CONTENDED_ENTER
            | RAW_MONITOR_CONTENDED_ENTERED
            | RAW_MONITOR_CONTENDED_EXIT
            | DATA_RESET_REQUEST => (&[], &[]),
            // Only RequestEvent sends these (the specification's rule).
            HEAP_DUMP | MONITOR_DUMP | OBJECT_DUMP => return abi::NOT_AVAILABLE,
            _ => return abi::NOT_AVAILABLE,
        };
        let (caps, events) = need;
        if on {
            if !self.add_capabilities(caps) {
                return abi::NOT_AVAILABLE;
            }
            if ev == OBJECT_ALLOC && self.jvmti.set_heap_sampling_interval(0).is_err() {
                return abi::NOT_AVAILABLE;
            }
            // On before the JVMTI events, so that the first one finds it on.
            self.enabled[ev as usize].store(true, Ordering::Release);
            for &e in events {
                if self.jvmti.set_event(e, true).is_err() {
                    self.enabled[ev as usize].store(false, Ordering::Release);
                    return abi::FAIL;
                }
            }
            if ev == ARENA_NEW && self.is_live() {
                self.arena_new(None);
            }
            if ev == OBJECT_ALLOC && self.is_live() {
                self.retire_tlabs();
            }
            if ev == COMPILED_METHOD_LOAD && self.is_live() {
                let _ = self
                    .jvmti
                    .generate_events(jvmti::EVENT_COMPILED_METHOD_LOAD);
            }
        } else {
            self.enabled[ev as usize].store(false, Ordering::Release);
            // A JVMTI event goes off once no enabled JVMPI event needs it.
            let still = |e: u32| match e {
                jvmti::EVENT_METHOD_ENTRY => self.on(METHOD_ENTRY) || self.on(METHOD_ENTRY2),
                jvmti::EVENT_OBJECT_FREE | jvmti::EVENT_GARBAGE_COLLECTION_FINISH => {
                    self.on(OBJECT_FREE)
                        || self.on(CLASS_UNLOAD)
                        || self.on(GC_START)
                        || self.on(GC_FINISH)
                }
                jvmti::EVENT_SAMPLED_OBJECT_ALLOC | jvmti::EVENT_VM_OBJECT_ALLOC => {
                    self.on(OBJECT_ALLOC)
                }
                _ => false,
            };
            for &e in events {
                if !still(e) {
                    let _ = self.jvmti.set_event(e, false);
                }
            }
        }
        abi::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_names_are_spelled_as_class_get_name() {
        assert_eq!(class_name("Ljava/lang/String;"), "java.lang.String");
        assert_eq!(class_name("[Ljava/lang/String;"), "[Ljava.lang.String;");
        assert_eq!(class_name("[I"), "[I");
    }

    #[test]
    fn arrays_have_their_jvmpi_types() {
        assert_eq!(array_kind("Ljava/lang/Object;"), abi::NORMAL_OBJECT);
        assert_eq!(array_kind("[Ljava/lang/Object;"), abi::CLASS);
        assert_eq!(array_kind("[[I"), abi::CLASS);
        assert_eq!(array_kind("[I"), abi::INT);
        assert_eq!(array_kind("[Z"), abi::BOOLEAN);
        assert_eq!(array_kind("[J"), abi::LONG);
    }

    #[test]
    fn a_bytecode_index_maps_to_the_line_of_the_entry_before_it() {
        let t = [(0, 10), (4, 11), (9, 13)];
        assert_eq!(line_at(&t, 0), 10);
        assert_eq!(line_at(&t, 5), 11);
        assert_eq!(line_at(&t, 40), 13);
        assert_eq!(line_at(&t, -1), abi::LINE_NATIVE);
        assert_eq!(line_at(&[], 3), abi::LINE_UNKNOWN);
    }

    #[test]
    fn thread_states_become_jvmpi_statuses() {
        assert_eq!(jvmpi_status(0x4 | 0x400, false), abi::THREAD_MONITOR_WAIT);
        assert_eq!(
            jvmpi_status(0x4 | 0x80 | 0x100, false),
            abi::THREAD_CONDVAR_WAIT
        );
        assert_eq!(jvmpi_status(0x4, false), abi::THREAD_RUNNABLE);
        assert_eq!(
            jvmpi_status(0x4 | 0x20_0000, false),
            abi::THREAD_RUNNABLE | abi::THREAD_INTERRUPTED
        );
        assert_eq!(jvmpi_status(0x4 | 0x10_0000, true), abi::THREAD_RUNNABLE);
        assert_eq!(
            jvmpi_status(0x4 | 0x10_0000, false),
            abi::THREAD_RUNNABLE | abi::THREAD_SUSPENDED
        );
    }
}
