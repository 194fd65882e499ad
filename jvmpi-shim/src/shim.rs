//! The shim's state and its JVMPI semantics, in safe Rust: which events are on, the IDs, the
//! threads, and every event built from what JVMTI reports. `ffi.rs` is the edge: it turns
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

use crate::abi::{self, event, Event, EventData, JobjectId};
use crate::ffi;
use crate::monitor::RawMonitor;
use jlive_jvm::jni::{Jni, Vm};
use jlive_jvm::jvmti::{self, cap, Capabilities, FrameInfo, Jvmti, ACC_STATIC};
use jni_sys::{jclass, jint, jlong, jmethodID, jobject, JNIEnv};
use parking_lot::{Condvar, Mutex};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, AtomicUsize, Ordering};
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

pub struct ThreadSlot {
    pub env: usize,
    /// A global reference to its Thread object.
    thread: usize,
    pub id: u64,
    tls: AtomicUsize,
    /// Name, group and parent group, as THREAD_START gives them.
    names: Box<[CString; 3]>,
    /// CPU time at the last two JVMPI suspensions (ThreadHasRun).
    cpu: Mutex<(i64, i64)>,
    suspended: AtomicBool,
    vm: Vm,
}

impl Drop for ThreadSlot {
    /// The Thread object's global reference lives as long as the last holder of the slot (a
    /// suspend or a call trace in flight keeps it valid past the thread's end).
    fn drop(&mut self) {
        let thread = self.thread as jobject;
        self.vm.with_env(|jni| jni.delete_global(thread));
    }
}

impl ThreadSlot {
    pub(crate) fn thread(&self) -> jobject {
        self.thread as jobject
    }

    pub fn tls_value(&self) -> usize {
        self.tls.load(Ordering::Relaxed)
    }
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

/// What reached the shim from GC and ObjectFree callbacks, delivered later from its thread.
#[derive(Default)]
struct GcQueue {
    collections: u64,
    freed: Vec<i64>,
    delivered: u64,
    /// RunGCs in progress: their collections are theirs to deliver.
    reserved: u32,
    /// The GC thread has not ended.
    running: bool,
    /// A batch is being delivered (one at a time: GC_START and GC_FINISH pair up).
    delivering: bool,
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

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// A CLASS_LOAD's payload, owning what the event points to while it is delivered.
pub struct ClassLoadData {
    name: CString,
    source: CString,
    interfaces: jint,
    methods: Vec<abi::Method>,
    statics: Vec<abi::Field>,
    instances: Vec<abi::Field>,
    _strings: Vec<CString>,
    id: u64,
}

impl ClassLoadData {
    pub fn event(&self) -> EventData {
        EventData {
            class_load: abi::ClassLoad {
                class_name: self.name.as_ptr(),
                source_name: self.source.as_ptr(),
                num_interfaces: self.interfaces,
                num_methods: self.methods.len() as jint,
                methods: self.methods.as_ptr(),
                num_static_fields: self.statics.len() as jint,
                statics: self.statics.as_ptr(),
                num_instance_fields: self.instances.len() as jint,
                instances: self.instances.as_ptr(),
                class_id: id_ptr(self.id),
            },
        }
    }
}

/// The tags an object of this ID may carry (its flag bits set or not).
pub fn tag_variants(id: u64) -> [i64; 8] {
    let t = id as i64;
    std::array::from_fn(|flags| t | flags as i64)
}

pub fn id_ptr(id: u64) -> JobjectId {
    id as usize as JobjectId
}

pub fn ptr_id(p: JobjectId) -> u64 {
    p as usize as u64
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
            jvmti.dispose();
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

    // ---- IDs ----

    pub(crate) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) << 3
    }

    /// The jobjectID of an object, given one now if it has none (0 for null).
    pub fn object_id(&self, object: jobject) -> u64 {
        (self.object_tag(object) & !7) as u64
    }

    /// An object's tag, flags and all; a new ID if it had none (0 for null, or if JVMTI fails).
    fn object_tag(&self, object: jobject) -> i64 {
        if object.is_null() {
            return 0;
        }
        match self.jvmti.tag(object) {
            Ok(0) => {
                let id = self.new_id() as i64;
                let _ = self.jvmti.set_tag(object, id);
                id
            }
            Ok(tag) => tag,
            Err(_) => 0,
        }
    }

    /// The object with this jobjectID (a local reference of the calling thread).
    pub fn object_of(&self, id: u64) -> Option<jobject> {
        if id == 0 {
            return None;
        }
        let tags = tag_variants(id);
        self.jvmti
            .objects_with_tags(&tags)
            .ok()?
            .into_iter()
            .map(|(o, _)| o)
            .next()
    }

    /// The ID of a class object; its CLASS_LOAD goes out first if it never did (when
    /// CLASS_LOAD is on), so the agent knows every class ID before it sees one. A thread that
    /// finds another announcing the class waits (up to a second) until the agent has it; no
    /// lock is held across a JVMTI call or the agent's handler.
    pub fn class_id(&self, jni: Jni<'_>, class: jclass) -> u64 {
        if class.is_null() {
            return 0;
        }
        let me = crate::monitor::thread_token();
        let deadline = Instant::now() + Duration::from_secs(1);
        let id = loop {
            let tag = self.class_tag(class);
            if tag & ANNOUNCED != 0 || tag == 0 {
                return (tag & !7) as u64;
            }
            let id = (tag & !7) as u64;
            // Told only when CLASS_LOAD is on, and never from the shim's own threads: a class
            // seen before stays unannounced until the agent would get its CLASS_LOAD.
            if !self.on(event::CLASS_LOAD) || Self::own_thread() {
                return id;
            }
            // A class loaded but not yet linked (the element class of a new array, say) has
            // no methods to describe yet: its CLASS_LOAD waits for ClassPrepare.
            let ready = jvmti::CLASS_STATUS_PREPARED
                | jvmti::CLASS_STATUS_ARRAY
                | jvmti::CLASS_STATUS_PRIMITIVE;
            if self.jvmti.class_status(class).unwrap_or(0) & ready == 0 {
                return id;
            }
            let mut a = self.announcing.lock();
            match a.get(&id) {
                // This thread announces it already (the agent's handler asks about it).
                Some(&t) if t == me => return id,
                Some(_) if Instant::now() < deadline => {
                    self.announced.wait_until(&mut a, deadline);
                }
                Some(_) => return id,
                None => {
                    a.insert(id, me);
                    break id;
                }
            }
        };
        // The entry goes even if the agent's handler panics through us.
        struct Announcing<'a>(&'a Shim, u64);
        impl Drop for Announcing<'_> {
            fn drop(&mut self) {
                self.0.announcing.lock().remove(&self.1);
                self.0.announced.notify_all();
            }
        }
        let _announcing = Announcing(self, id);
        if let Some(data) = self.class_load_data(jni, class, id) {
            self.send(jni.raw(), event::CLASS_LOAD, data.event());
        }
        let tag = self.jvmti.tag(class).unwrap_or(id as i64 | CLASS_BIT);
        let _ = self.jvmti.set_tag(class, tag | ANNOUNCED);
        id
    }

    /// A Class object's tag, the class bit set; given its ID now if it has none (one thread
    /// at a time, so that a class never gets two IDs). 0 if JVMTI fails.
    fn class_tag(&self, class: jclass) -> i64 {
        let tag = self.jvmti.tag(class).unwrap_or(0);
        if tag != 0 && tag & CLASS_BIT != 0 {
            return tag;
        }
        let _one = self.class_tags.lock();
        let tag = self.jvmti.tag(class).unwrap_or(0);
        let tag = if tag == 0 {
            self.new_id() as i64 | CLASS_BIT
        } else {
            tag | CLASS_BIT
        };
        match self.jvmti.set_tag(class, tag) {
            Ok(()) => tag,
            Err(_) => 0,
        }
    }

    fn class_load_data(&self, jni: Jni<'_>, class: jclass, id: u64) -> Option<ClassLoadData> {
        let j = self.jvmti;
        let signature = j.class_signature(class).ok()?;
        let mut strings = Vec::new();
        let mut keep = |s: String| {
            let c = cstring(&s);
            let p = c.as_ptr();
            strings.push(c);
            p
        };
        let mut methods = Vec::new();
        for m in j.class_methods(class).unwrap_or_default() {
            let Ok((name, sig)) = j.method_name(m) else {
                continue;
            };
            let lines = self.line_table(m);
            let start = lines.iter().map(|l| l.1).min().map_or(-1, |l| l as jint);
            let end = lines.iter().map(|l| l.1).max().map_or(-1, |l| l as jint);
            methods.push(abi::Method {
                method_name: keep(name),
                method_signature: keep(sig),
                start_lineno: start,
                end_lineno: end,
                method_id: m,
            });
        }
        let (mut statics, mut instances) = (Vec::new(), Vec::new());
        for f in j.class_fields(class).unwrap_or_default() {
            let Ok((name, sig)) = j.field_name(class, f) else {
                continue;
            };
            let field = abi::Field {
                field_name: keep(name),
                field_signature: keep(sig),
            };
            if j.field_modifiers(class, f).unwrap_or(0) & ACC_STATIC != 0 {
                statics.push(field);
            } else {
                instances.push(field);
            }
        }
        let interfaces = j.implemented_interfaces(class).unwrap_or_default();
        for &i in &interfaces {
            jni.delete_local(i);
        }
        Some(ClassLoadData {
            name: cstring(&class_name(&signature)),
            source: cstring(&j.source_file_name(class).unwrap_or_default()),
            interfaces: interfaces.len() as jint,
            methods,
            statics,
            instances,
            _strings: strings,
            id,
        })
    }

    /// A method's line table, kept once read.
    pub fn line_table(&self, method: jmethodID) -> Arc<Vec<(u32, u32)>> {
        if let Some(t) = self.lines.lock().get(&(method as usize)) {
            return t.clone();
        }
        let t = Arc::new(self.jvmti.line_numbers(method));
        self.lines.lock().insert(method as usize, t.clone());
        t
    }

    // ---- threads ----

    /// Registers the calling thread on its first event (THREAD_START goes out then).
    ///
    /// False for a thread whose THREAD_END went out: HotSpot still runs its code after
    /// ThreadEnd (Thread.join's notify, a contended lock on the Thread object), and those
    /// events are not the agent's (its JNIEnv* is no thread any more).
    pub fn thread(&self, jni: Jni<'_>) -> bool {
        let env = jni.raw() as usize;
        if REGISTERED.with(|r| r.get()) == env {
            return true;
        }
        if ENDED.with(|e| e.get()) == env {
            return false;
        }
        // Before VM init (the start phase) a thread cannot be described yet; the main thread
        // is registered at VM init, the others as they start.
        if !self.live.load(Ordering::Acquire) {
            return true;
        }
        self.register(jni);
        true
    }

    /// JVMTI ThreadStart: a thread starts (or attaches) on this JNIEnv, even one that ended
    /// before on it (the main thread becomes "DestroyJavaVM").
    pub fn thread_started(&self, jni: Jni<'_>) {
        ENDED.with(|e| e.set(0));
        self.thread(jni);
    }

    fn register(&self, jni: Jni<'_>) {
        let env = jni.raw() as usize;
        let Some(thread) = self.jvmti.current_thread() else {
            return;
        };
        let id = self.object_id(thread);
        let global = jni.new_global(thread);
        jni.delete_local(thread);
        let names = Box::new(self.thread_names(jni, ptr::null_mut()));
        let slot = Arc::new(ThreadSlot {
            env,
            thread: global as usize,
            id,
            tls: AtomicUsize::new(0),
            names,
            cpu: Mutex::new((0, 0)),
            suspended: AtomicBool::new(false),
            vm: self.vm,
        });
        SLOT.with(|s| s.set(Arc::as_ptr(&slot)));
        REGISTERED.with(|r| r.set(env));
        // A JNIEnv reused by a new thread: the old one ended unseen (dropped outside the lock).
        let old = self.threads.lock().insert(env, slot.clone());
        drop(old);
        if self.on(event::THREAD_START) && !Self::own_thread() && !DEFER_START.with(|d| d.get()) {
            self.send_thread_start(jni, &slot, 0);
        }
    }

    /// A thread's name, its group's name and that group's parent's name (NULL: the current
    /// thread); a thread attaching under a name the shim gave it has that name even where the
    /// JVM has not set it yet when ThreadStart comes (JDK 25).
    fn thread_names(&self, jni: Jni<'_>, thread: jobject) -> [CString; 3] {
        let j = self.jvmti;
        let (mut name, group) = j.thread_info(thread).unwrap_or_default();
        if name.is_empty() && thread.is_null() {
            name = ATTACH_NAME.with(|n| n.borrow().clone()).unwrap_or_default();
        }
        let (group_name, parent) = match group {
            Some(g) => {
                let (n, p) = j.thread_group_info(g).unwrap_or_default();
                let parent = match p {
                    Some(p) => {
                        let name = j.thread_group_info(p).map(|i| i.0).unwrap_or_default();
                        jni.delete_local(p);
                        name
                    }
                    None => String::new(),
                };
                jni.delete_local(g);
                (n, parent)
            }
            None => (String::new(), String::new()),
        };
        [cstring(&name), cstring(&group_name), cstring(&parent)]
    }

    /// THREAD_START of the calling thread, held back while it attached (CreateSystemThread).
    pub fn announce_current(&self, jni: Jni<'_>) {
        DEFER_START.with(|d| d.set(false));
        if REGISTERED.with(|r| r.get()) != jni.raw() as usize {
            // Not registered while attaching: registering now sends it.
            self.thread(jni);
            return;
        }
        if let Some(slot) = self.slot(jni.raw()) {
            if self.on(event::THREAD_START) {
                self.send_thread_start(jni, &slot, 0);
            }
        }
    }

    pub fn send_thread_start(&self, jni: Jni<'_>, slot: &ThreadSlot, requested: jint) {
        let [n, g, p] = &*slot.names;
        self.send(
            jni.raw(),
            event::THREAD_START | requested,
            EventData {
                thread_start: abi::ThreadStart {
                    thread_name: n.as_ptr(),
                    group_name: g.as_ptr(),
                    parent_name: p.as_ptr(),
                    thread_id: id_ptr(slot.id),
                    thread_env_id: slot.env as *mut JNIEnv,
                },
            },
        );
    }

    pub fn thread_end(&self, jni: Jni<'_>) {
        let env = jni.raw() as usize;
        if self.on(event::THREAD_END) && !Self::own_thread() && REGISTERED.with(|r| r.get()) == env
        {
            self.send(
                jni.raw(),
                event::THREAD_END,
                EventData {
                    id: ptr::null_mut(),
                },
            );
        }
        let slot = self.threads.lock().remove(&env);
        drop(slot);
        REGISTERED.with(|r| r.set(0));
        ENDED.with(|e| e.set(env));
        SLOT.with(|s| s.set(ptr::null()));
    }

    /// Every thread the shim knows, with its Thread object (a global reference).
    pub(crate) fn all_slots(&self) -> Vec<Arc<ThreadSlot>> {
        self.threads.lock().values().cloned().collect()
    }

    /// The IDs of the objects threads wait on in Object.wait (see `waiting`).
    pub(crate) fn waited_objects(&self) -> Vec<u64> {
        self.waiting.lock().values().copied().collect()
    }

    /// Every live raw monitor.
    pub(crate) fn raw_monitors(&self) -> Vec<Arc<RawMonitor>> {
        self.monitors.lock().clone()
    }

    /// The slot of the thread of `env`; the calling thread is registered if it was not.
    pub fn slot(&self, env: *mut JNIEnv) -> Option<Arc<ThreadSlot>> {
        if let Some(slot) = self.threads.lock().get(&(env as usize)).cloned() {
            return Some(slot);
        }
        let jni = self.vm.current_env()?;
        if jni.raw() != env {
            return None;
        }
        self.thread(jni);
        self.threads.lock().get(&(env as usize)).cloned()
    }

    pub(crate) fn slot_by_id(&self, id: u64) -> Option<Arc<ThreadSlot>> {
        self.threads.lock().values().find(|s| s.id == id).cloned()
    }

    pub fn set_tls(&self, env: *mut JNIEnv, value: usize) {
        if let Some(slot) = self.slot(env) {
            slot.tls.store(value, Ordering::Relaxed);
        }
    }

    /// The agent's word for a thread: for the calling thread, without a lock.
    pub fn tls(&self, env: *mut JNIEnv) -> usize {
        if REGISTERED.with(|r| r.get()) == env as usize {
            let p = SLOT.with(|s| s.get());
            // The slot lives in the map until this very thread ends, so it is alive here.
            if let Some(v) = ffi::slot_tls(p) {
                return v;
            }
        }
        self.slot(env).map_or(0, |s| s.tls.load(Ordering::Relaxed))
    }

    pub fn suspend(&self, env: *mut JNIEnv) -> jint {
        let Some(slot) = self.slot(env) else {
            return abi::FAIL;
        };
        if self.jvmti.suspend_thread(slot.thread()).is_err() {
            return abi::FAIL;
        }
        slot.suspended.store(true, Ordering::Release);
        let now = self.jvmti.thread_cpu_time(slot.thread()).unwrap_or(0);
        let mut cpu = slot.cpu.lock();
        *cpu = (cpu.1, now);
        abi::SUCCESS
    }

    pub fn resume(&self, env: *mut JNIEnv) -> jint {
        let Some(slot) = self.slot(env) else {
            return abi::FAIL;
        };
        slot.suspended.store(false, Ordering::Release);
        match self.jvmti.resume_thread(slot.thread()) {
            Ok(()) => abi::SUCCESS,
            Err(_) => abi::FAIL,
        }
    }

    pub fn has_run(&self, env: *mut JNIEnv) -> bool {
        self.slot(env).is_some_and(|s| {
            let cpu = s.cpu.lock();
            cpu.0 != cpu.1
        })
    }

    /// GetThreadStatus; 0 (no status) for a thread the shim does not know.
    pub fn status(&self, env: *mut JNIEnv) -> jint {
        let Some(slot) = self.slot(env) else {
            return 0;
        };
        let state = self.jvmti.thread_state(slot.thread()).unwrap_or(0);
        jvmpi_status(state, slot.suspended.load(Ordering::Acquire))
    }

    /// GetCallTrace: frames of the thread `env` into `frames`; returns how many.
    pub fn call_trace(&self, env: *mut JNIEnv, frames: &mut [abi::CallFrame]) -> usize {
        let current = REGISTERED.with(|r| r.get()) == env as usize;
        let thread = if current {
            ptr::null_mut()
        } else {
            match self.slot(env) {
                Some(s) => s.thread(),
                None => return 0,
            }
        };
        let mut info = vec![FrameInfo::default(); frames.len()];
        let n = self.jvmti.stack_trace_of(thread, 0, &mut info);
        for (out, f) in frames.iter_mut().zip(&info[..n]) {
            let table = self.line_table(f.method);
            *out = abi::CallFrame {
                lineno: line_at(&table, f.location),
                method_id: f.method,
            };
        }
        n
    }

    pub fn thread_object(&self, env: *mut JNIEnv) -> u64 {
        self.slot(env).map_or(0, |s| s.id)
    }

    // ---- events ----

    /// Hands one event to the agent.
    pub fn send(&self, env: *mut JNIEnv, event_type: jint, u: EventData) {
        let mut e = Event {
            event_type,
            env_id: env,
            u,
        };
        ffi::deliver(&mut e);
    }

    fn arena_new(&self, env: Option<*mut JNIEnv>) {
        self.send(
            env.unwrap_or(ptr::null_mut()),
            event::ARENA_NEW,
            EventData {
                new_arena: abi::NewArena {
                    arena_id: ARENA,
                    arena_name: ARENA_NAME.as_ptr(),
                },
            },
        );
    }

    /// VMInit: the thread that delivers GC events starts, classes loaded before now get their
    /// CLASS_LOAD, then JVM_INIT_DONE.
    pub fn vm_init(&'static self, jni: Jni<'_>) {
        self.live.store(true, Ordering::Release);
        self.thread(jni);
        if self.on(event::ARENA_NEW) {
            self.arena_new(Some(jni.raw()));
        }
        if self.on(event::CLASS_LOAD) {
            for class in self.jvmti.loaded_classes().unwrap_or_default() {
                let prepared = self.jvmti.class_status(class).is_ok_and(|s| {
                    s & (jvmti::CLASS_STATUS_PREPARED | jvmti::CLASS_STATUS_ARRAY) != 0
                });
                let primitive = self
                    .jvmti
                    .class_status(class)
                    .is_ok_and(|s| s & jvmti::CLASS_STATUS_PRIMITIVE != 0);
                if prepared && !primitive {
                    self.class_id(jni, class);
                }
                jni.delete_local(class);
            }
        }
        if self.on(event::COMPILED_METHOD_LOAD) {
            let _ = self
                .jvmti
                .generate_events(jvmti::EVENT_COMPILED_METHOD_LOAD);
        }
        if self.on(event::OBJECT_ALLOC) {
            self.retire_tlabs();
        }
        let vm = self.vm;
        self.gc.lock().running = true;
        let spawned = std::thread::Builder::new()
            .name("jlive JVMPI GC".into())
            .spawn(move || {
                OWN.with(|o| o.set(true));
                match vm
                    .attach_daemon(c"jlive JVMPI GC")
                    .and_then(Jni::from_callback)
                {
                    Some(jni) => {
                        self.gc_thread(jni);
                        vm.detach_current();
                    }
                    None => {
                        self.gc.lock().running = false;
                        self.gc_delivered.notify_all();
                    }
                }
            });
        if spawned.is_err() {
            self.gc.lock().running = false;
        }
        if self.on(event::JVM_INIT_DONE) {
            self.send(
                jni.raw(),
                event::JVM_INIT_DONE,
                EventData {
                    id: ptr::null_mut(),
                },
            );
        }
        if let Some((init, _)) = crate::vm_hooks() {
            init();
        }
    }

    /// SampledObjectAlloc at interval 0 samples every allocation only once a thread's
    /// allocation buffer was refilled after the interval was set: a collection retires every
    /// buffer, so that from here on no allocation goes unseen.
    fn retire_tlabs(&self) {
        let _ = self.jvmti.force_garbage_collection();
    }

    /// VMDeath: the GC thread stops (after the batch it may be delivering), what it left is
    /// delivered here, then JVM_SHUT_DOWN: no GC event reaches the agent after it.
    pub fn vm_death(&self, jni: Jni<'_>) {
        self.dead.store(true, Ordering::Release);
        self.gc_signal.notify_all();
        // The host's control thread first: no `jlive ctl dump` after this.
        if let Some((_, death)) = crate::vm_hooks() {
            death();
        }
        self.wait_gc(Duration::from_secs(10), |q| {
            !q.running && q.reserved == 0 && !q.delivering
        });
        if self.gc_events() {
            if let Some(freed) = self.claim_batch(true) {
                self.deliver_claimed(jni, freed);
            }
        }
        if self.on(event::JVM_SHUT_DOWN) {
            self.thread(jni);
            self.send(
                jni.raw(),
                event::JVM_SHUT_DOWN,
                EventData {
                    id: ptr::null_mut(),
                },
            );
        }
    }

    /// DATA_DUMP_REQUEST (or DATA_RESET_REQUEST) on the calling thread, asked from outside.
    pub fn data_request(&self, dump: bool) -> Result<String, String> {
        let ev = if dump {
            event::DATA_DUMP_REQUEST
        } else {
            event::DATA_RESET_REQUEST
        };
        let name = if dump {
            "DATA_DUMP_REQUEST"
        } else {
            "DATA_RESET_REQUEST"
        };
        if !self.is_live() {
            return Err("the JVM is not running (or is shutting down)".into());
        }
        if !self.on(ev) {
            return Err(format!("the agent has not enabled {}", name));
        }
        let jni = self
            .vm
            .current_env()
            .ok_or("this thread is not attached to the JVM")?;
        self.thread(jni);
        self.send(
            jni.raw(),
            ev,
            EventData {
                id: ptr::null_mut(),
            },
        );
        Ok(format!("{} sent", name))
    }

    pub fn method(&self, jni: Jni<'_>, method: jmethodID, entry: bool) {
        if Self::own_thread() {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        if !entry {
            if self.on(event::METHOD_EXIT) {
                self.send(
                    jni.raw(),
                    event::METHOD_EXIT,
                    EventData {
                        id: method as *mut c_void,
                    },
                );
            }
            return;
        }
        if self.on(event::METHOD_ENTRY) {
            self.send(
                jni.raw(),
                event::METHOD_ENTRY,
                EventData {
                    id: method as *mut c_void,
                },
            );
        }
        if self.on(event::METHOD_ENTRY2) {
            let receiver = if self.jvmti.method_modifiers(method).unwrap_or(0) & ACC_STATIC != 0 {
                0
            } else {
                match self.jvmti.local_instance(ptr::null_mut(), 0) {
                    Some(o) => {
                        let id = self.object_id(o);
                        jni.delete_local(o);
                        id
                    }
                    None => 0,
                }
            };
            self.send(
                jni.raw(),
                event::METHOD_ENTRY2,
                EventData {
                    method_entry2: abi::MethodEntry2 {
                        method_id: method,
                        obj_id: id_ptr(receiver),
                    },
                },
            );
        }
    }

    pub fn class_prepare(&self, jni: Jni<'_>, class: jclass) {
        if Self::own_thread() {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        self.class_id(jni, class);
    }

    /// What OBJECT_ALLOC says of an object of `class`: (is_array, class_id).
    pub(crate) fn kind_of(&self, jni: Jni<'_>, class: jclass) -> (jint, u64) {
        let id = self.class_id(jni, class);
        if let Some(k) = self.kinds.lock().get(&id) {
            return *k;
        }
        let signature = self.jvmti.class_signature(class).unwrap_or_default();
        let kind = array_kind(&signature);
        let class_id = match kind {
            abi::NORMAL_OBJECT if signature == "Ljava/lang/Class;" => 0,
            abi::NORMAL_OBJECT => id,
            abi::CLASS => match jni.component_type(class) {
                Some(c) => {
                    let e = self.class_id(jni, c);
                    jni.delete_local(c);
                    e
                }
                None => 0,
            },
            _ => 0,
        };
        self.kinds.lock().insert(id, (kind, class_id));
        (kind, class_id)
    }

    /// OBJECT_ALLOC for a new object, or one the agent asked about (`requested`).
    pub fn object_alloc(
        &self,
        jni: Jni<'_>,
        object: jobject,
        class: jclass,
        size: jlong,
        requested: jint,
    ) {
        if Self::own_thread() {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        let (kind, class_id) = self.kind_of(jni, class);
        let tag = self.object_tag(object);
        let id = (tag & !7) as u64;
        if requested == 0 {
            if tag & ALLOCATED != 0 {
                return;
            }
            let _ = self.jvmti.set_tag(object, tag | ALLOCATED);
            self.known_objects.fetch_add(1, Ordering::Relaxed);
        }
        self.send(
            jni.raw(),
            event::OBJECT_ALLOC | requested,
            EventData {
                obj_alloc: abi::ObjAlloc {
                    arena_id: ARENA,
                    class_id: id_ptr(class_id),
                    is_array: kind,
                    size: size.clamp(0, i64::from(jint::MAX)) as jint,
                    obj_id: id_ptr(id),
                },
            },
        );
    }

    pub fn monitor_event(&self, jni: Jni<'_>, ev: jint, object: jobject, timeout: Option<jlong>) {
        if Self::own_thread() || !self.on(ev) {
            return;
        }
        if !self.thread(jni) {
            return;
        }
        let id = self.object_id(object);
        let u = match ev {
            event::MONITOR_WAIT => {
                WAIT_BEGAN.with(|w| w.set(Some(Instant::now())));
                self.waiting.lock().insert(jni.raw() as usize, id);
                EventData {
                    monitor_wait: abi::MonitorWait {
                        object: id_ptr(id),
                        timeout: timeout.unwrap_or(0),
                    },
                }
            }
            event::MONITOR_WAITED => {
                self.waiting.lock().remove(&(jni.raw() as usize));
                let waited = WAIT_BEGAN
                    .with(|w| w.take())
                    .map_or(0, |t| t.elapsed().as_millis() as jlong);
                EventData {
                    monitor_wait: abi::MonitorWait {
                        object: id_ptr(id),
                        timeout: waited,
                    },
                }
            }
            _ => EventData { id: id_ptr(id) },
        };
        self.send(jni.raw(), ev, u);
    }

    /// JNI_(WEAK_)GLOBALREF_ALLOC and _FREE for a reference the program or the agent made or
    /// deletes (the reference is still valid here).
    pub fn global_ref(&self, env: *mut JNIEnv, ev: jint, reference: jobject) {
        if !self.on(ev) || Self::own_thread() {
            return;
        }
        let Some(jni) = Jni::from_callback(env) else {
            return;
        };
        if !self.thread(jni) {
            return;
        }
        let u = match ev {
            event::JNI_GLOBALREF_ALLOC | event::JNI_WEAK_GLOBALREF_ALLOC => EventData {
                globalref_alloc: abi::GlobalRefAlloc {
                    obj_id: id_ptr(self.object_id(reference)),
                    ref_id: reference,
                },
            },
            _ => EventData {
                id: reference as *mut c_void,
            },
        };
        self.send(env, ev, u);
    }

    // ---- collections ----

    /// GarbageCollectionFinish (in the collector's context: memory and a lock only).
    pub fn collected(&self) {
        self.gc.lock().collections += 1;
        self.gc_signal.notify_all();
    }

    /// ObjectFree (in the collector's or the service thread's context).
    pub fn freed(&self, tag: jlong) {
        self.gc.lock().freed.push(tag);
    }

    /// Whether any event comes of a collection.
    fn gc_events(&self) -> bool {
        [
            event::GC_START,
            event::GC_FINISH,
            event::OBJECT_FREE,
            event::CLASS_UNLOAD,
        ]
        .iter()
        .any(|&e| self.on(e))
    }

    /// The shim's thread: after each collection, its events (see [`Shim::deliver_batch`]);
    /// a collection that RunGC asked for is RunGC's to deliver.
    fn gc_thread(&self, jni: Jni<'_>) {
        loop {
            {
                let mut q = self.gc.lock();
                while (q.collections == q.delivered || q.reserved > 0)
                    && !self.dead.load(Ordering::Acquire)
                {
                    self.gc_signal.wait_for(&mut q, Duration::from_millis(500));
                }
                if self.dead.load(Ordering::Acquire) {
                    break;
                }
            }
            self.settle();
            if self.gc.lock().reserved > 0 {
                continue;
            }
            if let Some(freed) = self.claim_batch(false) {
                self.deliver_claimed(jni, freed);
            }
        }
        self.gc.lock().running = false;
        self.gc_delivered.notify_all();
    }

    /// Waits until no ObjectFree has arrived for [`SETTLE`] (at most [`SETTLE_MAX`]):
    /// ObjectFree comes after the collection, from the JVM's service thread. (Forcing them
    /// out with SetEventNotificationMode deadlocks JDK 17: its flush blocks at a safepoint
    /// that the service thread, waiting on the same flush, holds up.)
    fn settle(&self) {
        let began = Instant::now();
        let mut seen = self.gc.lock().freed.len();
        while began.elapsed() < SETTLE_MAX {
            std::thread::sleep(SETTLE);
            let now = self.gc.lock().freed.len();
            if now == seen {
                break;
            }
            seen = now;
        }
    }

    /// The pending collections' frees, now the caller's to deliver (None: nothing pending,
    /// unless `anyway`).
    fn claim_batch(&self, anyway: bool) -> Option<Vec<i64>> {
        let mut q = self.gc.lock();
        if q.delivering || (self.dead.load(Ordering::Acquire) && !anyway) {
            return None;
        }
        if q.collections == q.delivered && (!anyway || q.freed.is_empty()) {
            return None;
        }
        q.delivered = q.collections;
        q.delivering = true;
        Some(std::mem::take(&mut q.freed))
    }

    /// Delivers a claimed batch, then lets the next one go.
    fn deliver_claimed(&self, jni: Jni<'_>, freed: Vec<i64>) {
        struct Done<'a>(&'a Shim);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.gc.lock().delivering = false;
                self.0.gc_delivered.notify_all();
            }
        }
        let _done = Done(self);
        self.deliver_batch(jni, freed);
    }

    /// Waits (up to `limit`) until `done` holds of the queue.
    fn wait_gc(&self, limit: Duration, done: impl Fn(&GcQueue) -> bool) {
        let deadline = Instant::now() + limit;
        let mut q = self.gc.lock();
        while !done(&q) {
            if self.gc_delivered.wait_until(&mut q, deadline).timed_out() {
                return;
            }
        }
    }

    /// GC_START, the OBJECT_FREEs, GC_FINISH, then CLASS_UNLOAD for the classes that went,
    /// on the calling thread, holding no lock.
    fn deliver_batch(&self, jni: Jni<'_>, freed: Vec<i64>) {
        let allocated = freed.iter().filter(|&&t| t & ALLOCATED != 0).count();
        self.known_objects
            .fetch_sub(allocated as i64, Ordering::Relaxed);
        let (classes, objects): (Vec<i64>, Vec<i64>) =
            freed.into_iter().partition(|t| t & CLASS_BIT != 0);
        let nothing = || EventData {
            id: ptr::null_mut(),
        };
        if self.on(event::GC_START) {
            self.send(jni.raw(), event::GC_START, nothing());
        }
        if self.on(event::OBJECT_FREE) {
            for tag in objects {
                let id = (tag & !7) as u64;
                self.send(jni.raw(), event::OBJECT_FREE, EventData { id: id_ptr(id) });
            }
        }
        if self.on(event::GC_FINISH) {
            let (total, free) = jni.heap_memory().unwrap_or((0, 0));
            self.send(
                jni.raw(),
                event::GC_FINISH,
                EventData {
                    gc_info: abi::GcInfo {
                        used_objects: self.known_objects.load(Ordering::Relaxed).max(0),
                        used_object_space: total - free,
                        total_object_space: total,
                    },
                },
            );
        }
        if self.on(event::CLASS_UNLOAD) {
            // Only the classes whose CLASS_LOAD the agent got.
            for tag in classes.into_iter().filter(|t| t & ANNOUNCED != 0) {
                let id = (tag & !7) as u64;
                self.send(jni.raw(), event::CLASS_UNLOAD, EventData { id: id_ptr(id) });
            }
        }
    }

    pub fn disable_gc(&self) {
        self.gc_disabled.fetch_add(1, Ordering::AcqRel);
    }

    pub fn enable_gc(&self) {
        let _ = self
            .gc_disabled
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n > 0).then(|| n - 1)
            });
    }

    /// RunGC: a full collection, and its events delivered on the calling thread before
    /// returning, as JVMPI did.
    pub fn run_gc(&self, jni: Jni<'_>) {
        if self.gc_disabled.load(Ordering::Acquire) > 0 || !self.is_live() {
            return;
        }
        if !self.gc_events() {
            let _ = self.jvmti.force_garbage_collection();
            return;
        }
        self.gc.lock().reserved += 1;
        struct Reserved<'a>(&'a Shim);
        impl Drop for Reserved<'_> {
            fn drop(&mut self) {
                self.0.gc.lock().reserved -= 1;
                self.0.gc_signal.notify_all();
                self.0.gc_delivered.notify_all();
            }
        }
        let _reserved = Reserved(self);
        // A batch the GC thread is delivering goes first (not when this is that thread: it
        // would wait for itself).
        if !Self::own_thread() {
            self.wait_gc(Duration::from_secs(10), |q| !q.delivering);
        }
        let _ = self.jvmti.force_garbage_collection();
        self.settle();
        if let Some(freed) = self.claim_batch(false) {
            self.deliver_claimed(jni, freed);
        }
    }

    // ---- requests ----

    /// RequestEvent for CLASS_LOAD, THREAD_START and OBJECT_ALLOC (the defining events).
    pub fn request(&self, jni: Jni<'_>, ev: jint, id: u64) -> jint {
        let _frame = jni.local_frame(16);
        match ev {
            event::CLASS_LOAD => {
                let Some(class) = self.object_of(id) else {
                    return abi::FAIL;
                };
                let id = self.class_id(jni, class);
                match self.class_load_data(jni, class, id) {
                    Some(data) => {
                        self.send(
                            jni.raw(),
                            event::CLASS_LOAD | abi::REQUESTED_EVENT,
                            data.event(),
                        );
                        abi::SUCCESS
                    }
                    None => abi::FAIL,
                }
            }
            event::THREAD_START => match self.slot_by_id(id) {
                Some(slot) => {
                    self.send_thread_start(jni, &slot, abi::REQUESTED_EVENT);
                    abi::SUCCESS
                }
                None => abi::FAIL,
            },
            event::OBJECT_ALLOC => {
                let Some(object) = self.object_of(id) else {
                    return abi::FAIL;
                };
                let Some(class) = jni.object_class(object) else {
                    return abi::FAIL;
                };
                let size = self.jvmti.object_size(object).unwrap_or(0);
                self.object_alloc(jni, object, class, size, abi::REQUESTED_EVENT);
                abi::SUCCESS
            }
            _ => abi::NOT_AVAILABLE,
        }
    }

    // ---- raw monitors ----

    pub fn raw_monitor_create(&self, name: CString) -> Arc<RawMonitor> {
        let m = Arc::new(RawMonitor::new(name));
        self.monitors.lock().push(m.clone());
        m
    }

    /// A destroyed monitor leaves the live list but is never freed, so that its address
    /// cannot come back as another monitor's while the agent may still hold the old handle.
    pub fn raw_monitor_destroy(&self, m: *const RawMonitor) {
        let mut live = self.monitors.lock();
        if let Some(i) = live.iter().position(|x| Arc::as_ptr(x) == m) {
            let gone = live.swap_remove(i);
            self.destroyed.lock().push(gone);
        }
    }

    /// The live raw monitor at this address, if the agent's pointer is one of ours.
    pub fn raw_monitor(&self, m: *const RawMonitor) -> Option<Arc<RawMonitor>> {
        self.monitors
            .lock()
            .iter()
            .find(|x| Arc::as_ptr(x) == m)
            .cloned()
    }

    pub fn raw_monitor_contention(&self, m: &RawMonitor, ev: jint) {
        if !m.reported() || !self.on(ev) {
            return;
        }
        let env = self.vm.current_env().map_or(ptr::null_mut(), |j| j.raw());
        self.send(
            env,
            ev,
            EventData {
                raw_monitor: abi::RawMonitorEvent {
                    name: m.name.as_ptr(),
                    id: m as *const RawMonitor as *mut c_void,
                },
            },
        );
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
