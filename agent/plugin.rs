//! VA/Java user trace libraries: `plugin=/path/libtrace.so`, or
//! `InstrumentVMSupport.tracingStartup("trace")`. The library gets jlive's events as the
//! tracing VM gave them (`ffi/plugin.rs` lays them out), with no format in between.
//!
//! Where each event reaches the library, and on which thread:
//! - MethodEnter/MethodLeave: `capture::record`, on the thread that calls, as it calls
//!   (capture=bci sends every record of a plug-in burst down its slow path to get there);
//! - Allocate: `callbacks::record_allocation`, on the allocating thread;
//! - UserEvent: `InstrumentVMSupport.userEvent`, on the calling thread;
//! - StartFieldReport/FieldReport/EndFieldReport: `reportObjectReferences()`, on the calling
//!   thread, after the heap walk (`heap.rs`) that finds them;
//! - ScavengeStart/End, GGCStart/End and OIDDelete: from jlive's thread `jlive-plugin`,
//!   right after the collection. HotSpot runs GarbageCollectionStart/Finish and ObjectFree
//!   where no JNI or JVMTI function may be called (and posts ObjectFree after the collection,
//!   from its service thread), so those callbacks only queue, under a raw monitor; the thread
//!   then tells young from full collections by the collectors' counts (GarbageCollectorMXBean)
//!   and delivers them in order.
//!
//! OIDRename, OIDRangeRename and OIDRangeDelete are never sent: an object's ID is its JVMTI
//! tag, which a moving collector carries along, so IDs never change.
//!
//! A library, once opened, stays loaded (a thread may still be inside it when tracing is shut
//! down); shutting down waits for the calls in flight, at most two seconds.

use crate::burst::{vajava, BurstFlags};
use crate::ffi::jvmti::{Jvmti, RawMonitor};
use crate::ffi::plugin::{self as abi, event, EventInfo, Library};
use crate::heap::{self, CLASS_IDS};
use crate::log;
use crate::options::{Gc, Methods};
use crate::profiler::Profiler;
use jlive_writer::keyhash::KeyHasher;
use jlive_writer::record::{MethodKey, Symbols, NO_OBJECT, PENDING_OBJECT};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// An opened library and where it came from.
pub struct Loaded {
    library: Library,
    pub path: String,
    slot: usize,
}

/// How many different libraries one run may open.
const MAX_LIBRARIES: usize = 16;
/// Every library opened in this run (never closed), by slot; filled under [`OPENED`].
static SLOTS: [OnceLock<&'static Loaded>; MAX_LIBRARIES] =
    [const { OnceLock::new() }; MAX_LIBRARIES];
/// How many slots are filled.
static OPENED: Mutex<usize> = Mutex::new(0);
/// The started library's slot + 1 (InstrumentTraceStartup returned 0), or 0.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// A burst is open for the library.
static OPEN: AtomicBool = AtomicBool::new(false);
/// Calls into the library under way (their threads checked OPEN after counting themselves).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Counts plug-in bursts: a thread's stack depth is taken afresh in each.
static GENERATION: AtomicU32 = AtomicU32::new(0);
/// The open burst's flags (for the GC thread: OIDDelete only with GCOn).
static GC_FREES: AtomicBool = AtomicBool::new(false);

/// The vmID every event and entry point carries: this process's ID.
fn vm_id() -> u64 {
    u64::from(std::process::id())
}

/// The started library.
fn current() -> Option<&'static Loaded> {
    match CURRENT.load(Ordering::SeqCst) {
        0 => None,
        i => SLOTS.get(i - 1)?.get().copied(),
    }
}

/// Whether events go to a library now (a plug-in burst is open).
#[inline]
pub fn delivering() -> bool {
    OPEN.load(Ordering::Relaxed)
}

/// Whether a library is started.
pub fn started() -> bool {
    current().is_some()
}

/// Runs `f` with the started library if a plug-in burst is open, counted as in flight.
fn with_library(f: impl FnOnce(&Library)) {
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    if OPEN.load(Ordering::SeqCst) {
        if let Some(l) = current() {
            f(&l.library);
        }
    }
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
}

/// Waits until no thread is inside the library (at most two seconds).
fn quiesce() {
    let until = Instant::now() + Duration::from_secs(2);
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 {
        if Instant::now() > until {
            log::warn("a thread is still inside the user trace library after 2 s; going on");
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Where a library name leads: a path as it is; `trace` → `libtrace.so` in a directory of
/// `java.library.path`, else as dlopen searches (LD_LIBRARY_PATH).
fn locate(jvmti: Jvmti, name: &str) -> String {
    if name.contains('/') {
        return name.to_string();
    }
    let file = if name.ends_with(".so") {
        name.to_string()
    } else {
        format!("lib{}.so", name)
    };
    let dirs = jvmti
        .system_property("java.library.path")
        .unwrap_or_default();
    dirs.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| std::path::Path::new(d).join(&file))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
        .unwrap_or(file)
}

/// Opens a library (or finds it opened before) and checks its entry points.
pub fn open(path: &str) -> Result<&'static Loaded, String> {
    let mut opened = OPENED.lock();
    let known = SLOTS[..*opened].iter().filter_map(|s| s.get().copied());
    if let Some(l) = known.into_iter().find(|l| l.path == path) {
        return Ok(l);
    }
    if *opened == MAX_LIBRARIES {
        return Err(format!(
            "cannot use the user trace library {}: this run opened {} already",
            path, MAX_LIBRARIES
        ));
    }
    if !crate::ffi::os::export_own_symbols() {
        log::info("libjlive.so's symbols are not global: a user trace library must look up InstrumentSupportCurrentThreadDetails itself");
    }
    let library = Library::open(path)
        .map_err(|e| format!("cannot use the user trace library {}: {}", path, e))?;
    let loaded: &'static Loaded = Box::leak(Box::new(Loaded {
        library,
        path: path.to_string(),
        slot: *opened,
    }));
    let _ = SLOTS[*opened].set(loaded);
    *opened += 1;
    Ok(loaded)
}

/// InstrumentTraceStartup: from now on bursts go to the library (as `output=` says).
pub fn start(p: &'static Profiler, loaded: &'static Loaded) -> Result<String, String> {
    let _serial = OPENED.lock();
    if let Some(l) = current() {
        return Err(format!(
            "the user trace library {} is started already: tracingShutdown() first",
            l.path
        ));
    }
    let rc = loaded.library.startup(vm_id());
    if rc != 0 {
        return Err(format!(
            "InstrumentTraceStartup of {} returned {}: the library is not used",
            loaded.path, rc
        ));
    }
    CURRENT.store(loaded.slot + 1, Ordering::SeqCst);
    gc_thread(p);
    log::info(&format!("user trace library {} started", loaded.path));
    Ok(format!("user trace library {} started", loaded.path))
}

/// `tracingStartup(name)`: finds, opens and starts a library.
pub fn startup(p: &'static Profiler, name: &str) -> Result<String, String> {
    let loaded = open(&locate(p.jvmti, name))?;
    start(p, loaded)
}

/// `tracingShutdown()` and VM death: ends a plug-in burst, then InstrumentTraceShutdown.
pub fn shutdown(p: &Profiler) -> Result<String, String> {
    let Some(l) = current() else {
        return Err("no user trace library is started".into());
    };
    if OPEN.load(Ordering::SeqCst) {
        let _ = p.end_burst(p.jvmti);
    }
    CURRENT.store(0, Ordering::SeqCst);
    quiesce();
    let rc = l.library.shutdown();
    if rc != 0 {
        log::info(&format!(
            "InstrumentTraceShutdown of {} returned {}",
            l.path, rc
        ));
    }
    Ok(format!("user trace library {} shut down", l.path))
}

/// The VA/Java flags of a burst.
fn vajava_flags(flags: BurstFlags) -> u64 {
    let exe = match flags.methods {
        Methods::On => vajava::EXE_ON,
        Methods::Entry => vajava::EXE_ON_LIGHT,
        Methods::Off => vajava::EXE_OFF,
    };
    let gc = match flags.gc {
        Gc::On => vajava::GC_ON,
        Gc::Light => vajava::GC_ON_LIGHT,
        Gc::Off => vajava::GC_OFF,
    };
    let alloc = if flags.alloc {
        vajava::ALLOC_ON
    } else {
        vajava::ALLOC_OFF
    };
    (exe | gc | alloc) as u64
}

/// A burst begins: InstrumentTraceBegin, and events flow. False if no library is started.
pub fn begin(flags: BurstFlags) -> bool {
    let Some(l) = current() else {
        return false;
    };
    GENERATION.fetch_add(1, Ordering::SeqCst);
    GC_FREES.store(flags.gc == Gc::On, Ordering::SeqCst);
    let rc = l.library.begin(vm_id(), vajava_flags(flags));
    if rc != 0 {
        log::info(&format!(
            "InstrumentTraceBegin of {} returned {}",
            l.path, rc
        ));
    }
    OPEN.store(true, Ordering::SeqCst);
    true
}

/// A burst ends: the GC events still queued, then InstrumentTraceEnd.
pub fn end(p: &Profiler) {
    if !OPEN.load(Ordering::SeqCst) {
        return;
    }
    if let Some(q) = QUEUE.get() {
        q.deliver_now(p);
    }
    OPEN.store(false, Ordering::SeqCst);
    quiesce();
    if let Some(l) = current() {
        let rc = l.library.end();
        if rc != 0 {
            log::info(&format!("InstrumentTraceEnd of {} returned {}", l.path, rc));
        }
    }
}

/// What a library is told of a method: names in Java's dotted form.
struct Names {
    method: Box<[u8]>,
    class: Box<[u8]>,
    flags: u64,
    /// The ID of the class's Class object (a static method's receiver).
    class_id: u64,
}

#[derive(Default)]
struct ThreadState {
    generation: u32,
    depth: i64,
    methods: HashMap<MethodKey, Rc<Names>, BuildHasherDefault<KeyHasher>>,
    /// One of jlive's own threads (named `jlive-*`), whose Java code (attaching, JNI calls)
    /// is not the application's; None until asked.
    own: Option<bool>,
}

/// Whether this thread's events are the application's: not on one of jlive's threads, nor
/// while the agent runs Java code of its own ([`crate::buffer::Hub::quietly`]).
fn application_thread() -> bool {
    if crate::buffer::Hub::is_quiet() {
        return false;
    }
    THREAD
        .try_with(|state| {
            let Ok(mut s) = state.try_borrow_mut() else {
                return false;
            };
            let own = *s.own.get_or_insert_with(|| {
                std::thread::current()
                    .name()
                    .is_some_and(|n| n.starts_with("jlive"))
            });
            !own
        })
        .unwrap_or(false)
}

thread_local! {
    static THREAD: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

fn dotted(internal: &str) -> String {
    internal.replace('/', ".")
}

fn describe(p: &Profiler, key: MethodKey) -> Names {
    let found = p.registry.method(key).and_then(|m| {
        let class = p.registry.class(m.class)?;
        let def = class.methods.get(usize::from(m.index))?;
        Some((dotted(&class.name), def.name.clone(), def.access, m.class))
    });
    let (class, method, access, class_key) =
        found.unwrap_or_else(|| ("?".into(), "?".into(), 0, 0));
    let mut flags = 0;
    if access & 0x0008 != 0 {
        flags |= abi::METHOD_STATIC;
    }
    if access & 0x0100 != 0 {
        flags |= abi::METHOD_NATIVE;
    }
    if access & 0x0020 != 0 {
        flags |= abi::METHOD_SYNC;
    }
    Names {
        method: method.into_bytes().into(),
        class: class.into_bytes().into(),
        flags,
        class_id: CLASS_IDS | u64::from(class_key),
    }
}

/// The depth of the method whose entry or exit this thread records now: its frames, less the
/// trampolines' on top under capture=bci (a native called from the method, or through
/// JliveTrampoline's Java side).
fn own_depth(p: &Profiler) -> i64 {
    let frames = i64::from(p.jvmti.frame_count().unwrap_or(1));
    if !p.uses_bci() {
        return frames;
    }
    let mut top = [crate::ffi::jvmti::FrameInfo::default(); 3];
    let n = p.jvmti.stack_trace(0, &mut top);
    let ours = top[..n]
        .iter()
        .take_while(|f| crate::capture::sync::is_trampoline(f.method))
        .count();
    frames - ours as i64
}

/// MethodEnter (`enter`) or MethodLeave of `key` on this thread; `object` is the receiver's
/// ID (NO_OBJECT for a static method; a constructor's before super() returned is 0).
pub fn method(p: &'static Profiler, enter: bool, key: MethodKey, object: u32) {
    if !application_thread() {
        return;
    }
    let _ = THREAD.try_with(|state| {
        // A library that runs Java code from its handler does not re-enter here.
        let Ok(mut s) = state.try_borrow_mut() else {
            return;
        };
        let generation = GENERATION.load(Ordering::Relaxed);
        if s.generation != generation {
            s.generation = generation;
            s.depth = own_depth(p) - i64::from(enter);
        }
        let names = match s.methods.get(&key) {
            Some(n) => n.clone(),
            None => {
                let n = Rc::new(describe(p, key));
                s.methods.insert(key, n.clone());
                n
            }
        };
        let depth = if enter {
            s.depth += 1;
            s.depth
        } else {
            s.depth -= 1;
            s.depth + 1
        };
        drop(s);
        let receiver = if names.flags & abi::METHOD_STATIC != 0 {
            names.class_id
        } else if object == NO_OBJECT || object == PENDING_OBJECT {
            0
        } else {
            u64::from(object)
        };
        let mut e = EventInfo::new(
            if enter {
                event::METHOD_ENTER
            } else {
                event::METHOD_LEAVE
            },
            vm_id(),
        );
        let (method_name, method_name_size) = abi::text(&names.method);
        let (class_name, class_name_size) = abi::text(&names.class);
        e.body.method = abi::MethodBody {
            flags: names.flags,
            stack_depth: depth.max(0) as u64,
            receiver,
            method_name,
            method_name_size,
            class_name,
            class_name_size,
        };
        with_library(|l| {
            l.event(&mut e);
        });
    });
}

/// Allocate: `id` of class `class_name` (internal form), `size` bytes.
pub fn allocated(id: u32, class_name: &str, size: i64) {
    if !application_thread() {
        return;
    }
    let dims = class_name.bytes().take_while(|&b| b == b'[').count();
    let mut e = EventInfo::new(event::ALLOCATE, vm_id());
    let name = if dims == 0 {
        dotted(class_name)
    } else {
        element_name(&class_name[dims..])
    };
    let bytes = name.into_bytes();
    let (class_name, class_name_size) = abi::text(&bytes);
    e.body.allocate = abi::AllocBody {
        oid: u64::from(id),
        size_in_longs: (size.max(0) as u64).div_ceil(4),
        array_flag: u64::from(dims > 0),
        body: if dims == 0 {
            abi::AllocUnion {
                object: abi::AllocObject {
                    flags: 0,
                    class_name,
                    class_name_size,
                },
            }
        } else {
            abi::AllocUnion {
                array: abi::AllocArray {
                    class_name,
                    class_name_size,
                    arity: dims as u64,
                },
            }
        },
    };
    with_library(|l| {
        l.event(&mut e);
    });
}

/// An array's element type as Java spells it: `I` → `int`, `Ljava/lang/String;` →
/// `java.lang.String`.
fn element_name(descriptor: &str) -> String {
    let primitive = match descriptor {
        "Z" => "boolean",
        "B" => "byte",
        "C" => "char",
        "S" => "short",
        "I" => "int",
        "J" => "long",
        "F" => "float",
        "D" => "double",
        _ => return dotted(descriptor.trim_start_matches('L').trim_end_matches(';')),
    };
    primitive.to_string()
}

/// UserEvent, on the calling thread.
pub fn user_event(text: &str) {
    let mut e = EventInfo::new(event::USER_EVENT, vm_id());
    let (msg, msg_size) = abi::text(text.as_bytes());
    e.body.user_event = abi::UserEventBody {
        flags: 0,
        msg,
        msg_size,
    };
    with_library(|l| {
        l.event(&mut e);
    });
}

/// `reportObjectReferences()`: walks the heap in jlive's environment (objects keep the IDs
/// their events gave them) and reports every object with its non-null fields, array
/// elements and (for a class) static fields, on the calling thread.
pub fn report_references(
    p: &'static Profiler,
    jni: crate::ffi::jni::Jni<'_>,
) -> Result<u64, String> {
    if !started() {
        return Err("no user trace library is started: tracingStartup first".into());
    }
    if !OPEN.load(Ordering::SeqCst) {
        return Err("tracing is not on: tracingBegin first".into());
    }
    let graph = heap::walk(p.jvmti, jni, heap::Ids::Agent(p))?;
    let mut refs: Vec<(u64, u64)> = graph
        .refs
        .iter()
        .filter(|r| jlive_writer::heap::is_field(r.kind))
        .map(|r| (r.from, r.to))
        .collect();
    refs.sort_by_key(|r| r.0);
    let class_class = graph.classes.iter().position(|c| c == "java/lang/Class");
    let names: Vec<Vec<u8>> = graph
        .classes
        .iter()
        .map(|c| dotted(c).into_bytes())
        .collect();
    let mut at = 0;
    let mut objects: Vec<&jlive_writer::heap::Object> = graph.objects.iter().collect();
    objects.sort_by_key(|o| o.id);
    for o in objects {
        let kind = if o.length >= 0 {
            abi::FR_JAVA_ARRAY
        } else if Some(o.class as usize) == class_class || o.id & CLASS_IDS != 0 {
            abi::FR_JAVA_CLASS
        } else {
            abi::FR_JAVA
        };
        let mut e = EventInfo::new(event::START_FIELD_REPORT, vm_id());
        let (class_name, class_name_size) = abi::text(&names[o.class as usize]);
        e.body.start_field_report = abi::StartFieldReportBody {
            oid: o.id,
            kind,
            flags: 0,
            class_name,
            class_name_size,
        };
        with_library(|l| {
            l.event(&mut e);
        });
        while at < refs.len() && refs[at].0 < o.id {
            at += 1;
        }
        while at < refs.len() && refs[at].0 == o.id {
            let mut e = EventInfo::new(event::FIELD_REPORT, vm_id());
            e.body.oid = refs[at].1;
            with_library(|l| {
                l.event(&mut e);
            });
            at += 1;
        }
        let mut e = EventInfo::new(event::END_FIELD_REPORT, vm_id());
        e.body.oid = o.id;
        with_library(|l| {
            l.event(&mut e);
        });
    }
    Ok(graph.objects.len() as u64)
}

/// The current thread's name, priority and group name; ("", -1, "") for a thread the JVM
/// does not know (VA/Java's internal VM thread).
pub fn current_thread_details() -> (String, i32, String) {
    crate::profiler::get()
        .and_then(|p| p.jvmti.thread_details(std::ptr::null_mut()).ok())
        .unwrap_or_else(|| (String::new(), -1, String::new()))
}

// ---- GC events: queued where nothing may be called, delivered by `jlive-plugin` ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GcItem {
    Start,
    Finish,
    Free(u32),
}

struct Queue {
    monitor: RawMonitor,
    /// Taken only inside `monitor` (so never contended): the GC callbacks wait on nothing
    /// but the raw monitor.
    items: Mutex<Vec<GcItem>>,
    /// The collectors' counts (GarbageCollectorMXBean).
    counts: Mutex<Counts>,
    /// Held by whoever takes and delivers a batch: the GC thread, or a burst's end.
    delivering: Mutex<()>,
}

static QUEUE: OnceLock<Queue> = OnceLock::new();

/// GarbageCollectionStart/Finish and ObjectFree: queue for the plug-in's GC thread.
pub fn gc_event(p: &Profiler, start: bool) {
    push(p, if start { GcItem::Start } else { GcItem::Finish });
}

pub fn object_freed(p: &Profiler, id: u32) {
    if GC_FREES.load(Ordering::Relaxed) {
        push(p, GcItem::Free(id));
    }
}

fn push(p: &Profiler, item: GcItem) {
    if !OPEN.load(Ordering::Relaxed) {
        return;
    }
    let Some(q) = QUEUE.get() else { return };
    if p.jvmti.raw_monitor_enter(q.monitor).is_ok() {
        q.items.lock().push(item);
        if item == GcItem::Finish {
            let _ = p.jvmti.raw_monitor_notify_all(q.monitor);
        }
        let _ = p.jvmti.raw_monitor_exit(q.monitor);
    }
}

impl Queue {
    /// Waits (at most 200 ms) until something is queued.
    fn wait(&self, jvmti: Jvmti) {
        if jvmti.raw_monitor_enter(self.monitor).is_ok() {
            if self.items.lock().is_empty() {
                let _ = jvmti.raw_monitor_wait(self.monitor, 200);
            }
            let _ = jvmti.raw_monitor_exit(self.monitor);
        }
    }

    /// Takes what can be delivered: everything but a collection begun and not yet finished.
    fn take(&self, jvmti: Jvmti) -> Vec<GcItem> {
        if jvmti.raw_monitor_enter(self.monitor).is_err() {
            return Vec::new();
        }
        let mut items = self.items.lock();
        let open_gc = items
            .iter()
            .rposition(|i| *i == GcItem::Start)
            .filter(|&s| !items[s..].contains(&GcItem::Finish));
        let ready: Vec<GcItem> = match open_gc {
            Some(s) => items.drain(..s).collect(),
            None => items.drain(..).collect(),
        };
        drop(items);
        let _ = jvmti.raw_monitor_exit(self.monitor);
        ready
    }

    /// Delivers what is queued, on the calling thread.
    fn deliver_now(&self, p: &Profiler) {
        let _ = p.vm.with_env(|jni| {
            // After the GC thread's batch, if it is delivering one.
            let _one = self.delivering.lock();
            // ObjectFree events HotSpot still holds come now, into the queue.
            p.jvmti.flush_object_frees();
            let items = self.take(p.jvmti);
            self.deliver(jni, &items);
        });
    }

    fn deliver(&self, jni: crate::ffi::jni::Jni<'_>, items: &[GcItem]) {
        if items.is_empty() {
            return;
        }
        let mut counts = self.counts.lock();
        if items.contains(&GcItem::Start) {
            // The counters run ahead of the queue (a collection counted may be queued for
            // the next batch): what they add is credit, spent as the collections come.
            let now = collections(jni);
            counts.credit.0 += now.0 - counts.last.0;
            counts.credit.1 += now.1 - counts.last.1;
            counts.last = now;
        }
        let mut is_full = false;
        for item in items {
            let code = match item {
                GcItem::Start => {
                    // A full collection when only full ones are owed; else a young one (the
                    // common kind) when both are.
                    is_full = counts.credit.0 > 0 && counts.credit.1 <= 0;
                    if is_full {
                        counts.credit.0 -= 1;
                    } else {
                        counts.credit.1 -= 1;
                    }
                    if is_full {
                        event::GGC_START
                    } else {
                        event::SCAVENGE_START
                    }
                }
                GcItem::Finish if is_full => event::GGC_END,
                GcItem::Finish => event::SCAVENGE_END,
                GcItem::Free(_) => event::OID_DELETE,
            };
            let mut e = EventInfo::new(code, vm_id());
            if let GcItem::Free(id) = item {
                e.body.oid = u64::from(*id);
            }
            with_library(|l| {
                l.event(&mut e);
            });
        }
    }
}

/// (full, young) collections so far, by the collectors' GarbageCollectorMXBeans.
fn collections(jni: crate::ffi::jni::Jni<'_>) -> (i64, i64) {
    let mut n = (0, 0);
    for (name, count) in jni.collection_counts() {
        if is_full_collector(&name) {
            n.0 += count.max(0);
        } else {
            n.1 += count.max(0);
        }
    }
    n
}

/// What the collectors counted when last asked, and the collections counted but not yet
/// delivered (full, young).
#[derive(Default)]
struct Counts {
    last: (i64, i64),
    credit: (i64, i64),
}

/// Whether a GarbageCollectorMXBean counts full (old-generation) collections.
fn is_full_collector(name: &str) -> bool {
    ["Old", "MarkSweep", "Major", "Full"]
        .iter()
        .any(|w| name.contains(w))
}

/// Starts `jlive-plugin`, once: it waits for collections and delivers their events.
fn gc_thread(p: &'static Profiler) {
    if QUEUE.get().is_some() {
        return;
    }
    let Ok(monitor) = p.jvmti.create_raw_monitor(c"jlive plug-in GC events") else {
        log::warn("no raw monitor for GC events: the user trace library gets none");
        return;
    };
    let queue = Queue {
        monitor,
        items: Mutex::new(Vec::new()),
        counts: Mutex::new(Counts::default()),
        delivering: Mutex::new(()),
    };
    if QUEUE.set(queue).is_err() {
        return;
    }
    let (attached, wait) = crossbeam_channel::bounded::<()>(1);
    let started = std::thread::Builder::new()
        .name("jlive-plugin".into())
        .spawn(move || {
            let env = p.vm.attach_daemon(c"jlive-plugin");
            let Some(jni) = env.and_then(crate::ffi::jni::Jni::from_callback) else {
                let _ = attached.send(());
                log::warn("the plug-in's GC thread cannot attach to the JVM: the user trace library gets no GC events");
                return;
            };
            let Some(q) = QUEUE.get() else { return };
            // Collections before the first burst are not the library's.
            q.counts.lock().last = collections(jni);
            let _ = attached.send(());
            while !p.closed.load(Ordering::SeqCst) {
                q.wait(p.jvmti);
                let body = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _one = q.delivering.lock();
                    let items = q.take(p.jvmti);
                    q.deliver(jni, &items);
                    if items.contains(&GcItem::Finish) {
                        // The frees of this collection, into the queue for the next round.
                        p.jvmti.flush_object_frees();
                    }
                }));
                if body.is_err() {
                    log::warn("internal error delivering GC events to the user trace library");
                }
            }
        });
    match started {
        // Attached before the first burst, so that attaching runs no Java code inside one.
        Ok(_) => {
            let _ = wait.recv_timeout(Duration::from_secs(10));
        }
        Err(e) => log::warn(&format!("cannot start the plug-in's GC thread: {}", e)),
    }
}
