//! VA/Java user trace libraries: `plugin=/path/libtrace.so`, or
//! `InstrumentVMSupport.tracingStartup("trace")`. The library gets jlive's events as the
//! tracing VM gave them (`ffi/plugin.rs` lays them out), with no format in between.
//!
//! Where each event reaches the library, and on which thread:
//! - MethodEnter/MethodLeave: `capture::record`, on the thread that calls, as it calls
//!   (capture=bci sends every record of a plug-in burst down its slow path to get there);
//! - Allocate: `callbacks::record_allocation`, on the allocating thread;
//! - UserEvent: `InstrumentVMSupport.userEvent` and `jlive ctl mark`, on the calling thread;
//! - StartFieldReport/FieldReport/EndFieldReport: `reportObjectReferences()`, on the calling
//!   thread, after the heap walk (`heap.rs`) that finds them;
//! - ScavengeStart/End, GGCStart/End and OIDDelete: after the collection, from jlive's thread
//!   `jlive-plugin` (or, for the last of a burst, from the thread that ends it). HotSpot runs
//!   GarbageCollectionStart/Finish and ObjectFree where no JNI or JVMTI function may be called
//!   (and posts ObjectFree after the collection, from its service thread), so those callbacks
//!   only queue; young and full collections are then told apart by the collectors' counts
//!   (GarbageCollectorMXBean). The queue's lock is a plain one whose holders never call into
//!   the JVM: not a raw monitor, which HotSpot 25 may stop a Java thread holding (the service
//!   thread, notifying it from ObjectFree) at a safepoint whose GC callback then waits for it.
//!
//! OIDRename, OIDRangeRename and OIDRangeDelete are never sent: an object's ID is its JVMTI
//! tag, which a moving collector carries along, so IDs never change.
//!
//! A library, once opened, stays loaded (a thread may still be inside it when tracing is shut
//! down); shutting down waits for the calls in flight, at most two seconds. Java code that a
//! library's handler runs is not reported to it, and the handler cannot drive jlive (the
//! Java API refuses, rather than deadlock on the burst it is inside).

use crate::burst::{vajava, BurstFlags};
use crate::ffi::jni::Jni;
use crate::ffi::jvmti::Jvmti;
use crate::ffi::plugin::{self as abi, event, Event, Library};
use crate::heap::{self, CLASS_IDS};
use crate::log;
use crate::options::{Gc, Methods, Output};
use crate::profiler::Profiler;
use jlive_bci::classfile::{ACC_NATIVE, ACC_STATIC, ACC_SYNCHRONIZED};
use jlive_writer::heap::java_name;
use jlive_writer::keyhash::KeyHasher;
use jlive_writer::record::{MethodKey, Symbols, NO_OBJECT, PENDING_OBJECT};
use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
/// How many slots are filled; held while a library is started or shut down.
static OPENED: Mutex<usize> = Mutex::new(0);
/// The started library's slot + 1 (its InstrumentTraceStartup returned 0), or 0.
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// The slot + 1 of the library the open burst goes to, or 0: events flow while it is set.
static BURST: AtomicUsize = AtomicUsize::new(0);
/// Calls into the library under way (their threads read BURST after counting themselves).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// The open burst reports deletions (InsTrcTypeGCOn).
static GC_FREES: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread is inside the library (an entry point or an event handler).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// The vmID every event and entry point carries: this process's ID.
fn vm_id() -> u64 {
    u64::from(std::process::id())
}

fn in_slot(slot_plus_one: usize) -> Option<&'static Loaded> {
    match slot_plus_one {
        0 => None,
        i => SLOTS.get(i - 1)?.get().copied(),
    }
}

/// The started library.
fn current() -> Option<&'static Loaded> {
    in_slot(CURRENT.load(Ordering::SeqCst))
}

/// Whether events go to a library now (a plug-in burst is open).
#[inline]
pub fn delivering() -> bool {
    BURST.load(Ordering::Relaxed) != 0
}

/// Whether a library is started.
pub fn started() -> bool {
    current().is_some()
}

/// Whether this thread is inside the library now: jlive's Java API refuses to be driven from
/// there (the burst lock may be held by this very call).
pub fn inside_library() -> bool {
    INSIDE.try_with(Cell::get).unwrap_or(false)
}

/// Runs `f` marked as inside the library.
fn inside<T>(f: impl FnOnce() -> T) -> T {
    let _ = INSIDE.try_with(|i| i.set(true));
    let out = f();
    let _ = INSIDE.try_with(|i| i.set(false));
    out
}

/// Hands an event to the burst's library, counted as in flight; not from inside it.
fn deliver(e: &Event<'_>) {
    if !delivering() || inside_library() {
        return;
    }
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    if let Some(l) = in_slot(BURST.load(Ordering::SeqCst)) {
        inside(|| l.library.event(vm_id(), e));
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
    let dirs: Vec<String> = jvmti
        .system_property("java.library.path")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(String::from)
        .collect();
    crate::ffi::os::locate_library(name, &dirs)
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
    let rc = inside(|| loaded.library.startup(vm_id()));
    if rc != 0 {
        return Err(format!(
            "InstrumentTraceStartup of {} returned {}: the library is not used",
            loaded.path, rc
        ));
    }
    CURRENT.store(loaded.slot + 1, Ordering::SeqCst);
    gc_thread(p);
    if p.options.output == Output::File {
        log::warn(&format!(
            "output=file: bursts do not go to the user trace library {}",
            loaded.path
        ));
    }
    log::info(&format!("user trace library {} started", loaded.path));
    Ok(format!("user trace library {} started", loaded.path))
}

/// `tracingStartup(name)`: finds, opens and starts a library.
pub fn startup(p: &'static Profiler, name: &str) -> Result<String, String> {
    let loaded = open(&locate(p.jvmti, name))?;
    start(p, loaded)
}

/// `tracingShutdown()` and VM death: no burst goes to the library any more, the open one
/// ends (InstrumentTraceEnd), then InstrumentTraceShutdown.
pub fn shutdown(p: &Profiler) -> Result<String, String> {
    let _serial = OPENED.lock();
    let Some(l) = current() else {
        return Err("no user trace library is started".into());
    };
    CURRENT.store(0, Ordering::SeqCst);
    if delivering() {
        let _ = p.end_burst(p.jvmti);
    }
    quiesce();
    let rc = inside(|| l.library.shutdown());
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

/// A burst begins (the burst lock held): InstrumentTraceBegin, and events flow. False if no
/// library is started.
pub fn begin(p: &Profiler, flags: BurstFlags) -> bool {
    let Some(l) = current() else {
        return false;
    };
    if let Some(q) = QUEUE.get() {
        q.reset(p);
    }
    GC_FREES.store(flags.gc == Gc::On, Ordering::SeqCst);
    let rc = inside(|| l.library.begin(vm_id(), vajava_flags(flags)));
    if rc != 0 {
        log::info(&format!(
            "InstrumentTraceBegin of {} returned {}",
            l.path, rc
        ));
    }
    BURST.store(l.slot + 1, Ordering::SeqCst);
    true
}

/// A burst ends (the burst lock held): the GC events still queued, then InstrumentTraceEnd.
pub fn end(p: &Profiler) {
    let Some(l) = in_slot(BURST.load(Ordering::SeqCst)) else {
        return;
    };
    if let Some(q) = QUEUE.get() {
        q.deliver_now(p);
    }
    BURST.store(0, Ordering::SeqCst);
    quiesce();
    if let Some(q) = QUEUE.get() {
        // A collection begun and not finished, or frees posted late: not this burst's.
        q.clear();
    }
    let rc = inside(|| l.library.end());
    if rc != 0 {
        log::info(&format!("InstrumentTraceEnd of {} returned {}", l.path, rc));
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
    methods: HashMap<MethodKey, Rc<Names>, BuildHasherDefault<KeyHasher>>,
    /// One of jlive's own threads (named `jlive-*`), whose Java code (attaching, JNI calls)
    /// is not the application's; None until asked.
    own: Option<bool>,
}

thread_local! {
    static THREAD: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// Whether this thread's events are the application's: not on one of jlive's threads, nor
/// while the agent runs Java code of its own ([`crate::buffer::Hub::quietly`]), nor Java
/// code run from inside the library.
fn application_thread() -> bool {
    if inside_library() || crate::buffer::Hub::is_quiet() {
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

fn describe(p: &Profiler, key: MethodKey) -> Names {
    let found = p.registry.method(key).and_then(|m| {
        let class = p.registry.class(m.class)?;
        let def = class.methods.get(usize::from(m.index))?;
        Some((
            java_name(&class.name),
            def.name.clone(),
            def.access,
            m.class,
        ))
    });
    let (class, method, access, class_key) =
        found.unwrap_or_else(|| ("?".into(), "?".into(), 0, 0));
    let mut flags = 0;
    if access & ACC_STATIC != 0 {
        flags |= abi::METHOD_STATIC;
    }
    if access & ACC_NATIVE != 0 {
        flags |= abi::METHOD_NATIVE;
    }
    if access & ACC_SYNCHRONIZED != 0 {
        flags |= abi::METHOD_SYNC;
    }
    Names {
        method: method.into_bytes().into(),
        class: class.into_bytes().into(),
        flags,
        class_id: CLASS_IDS | u64::from(class_key),
    }
}

/// The depth of the method whose entry or exit this thread records now: the frames on its
/// stack, less the trampolines' on top under capture=bci (a native called from the method,
/// or through JliveTrampoline's Java side). Asked at each event, so that frames of classes
/// not traced (include=, exclude=, what capture=bci leaves alone) count too.
fn own_depth(p: &Profiler) -> u64 {
    let frames = u64::try_from(p.jvmti.frame_count().unwrap_or(1)).unwrap_or(0);
    if !p.uses_bci() {
        return frames;
    }
    let mut top = [crate::ffi::jvmti::FrameInfo::default(); 3];
    let n = p.jvmti.stack_trace(0, &mut top);
    let ours = top[..n]
        .iter()
        .take_while(|f| crate::capture::sync::is_trampoline(f.method))
        .count();
    frames.saturating_sub(ours as u64)
}

/// MethodEnter (`enter`) or MethodLeave of `key` on this thread; `object` is the receiver's
/// ID (NO_OBJECT for a static method; a constructor's before super() returned is 0).
pub fn method(p: &'static Profiler, enter: bool, key: MethodKey, object: u32) {
    if !application_thread() {
        return;
    }
    let names = THREAD.try_with(|state| {
        let mut s = state.try_borrow_mut().ok()?;
        Some(
            s.methods
                .entry(key)
                .or_insert_with(|| Rc::new(describe(p, key)))
                .clone(),
        )
    });
    let Ok(Some(names)) = names else {
        return;
    };
    let receiver = if names.flags & abi::METHOD_STATIC != 0 {
        names.class_id
    } else if object == NO_OBJECT || object == PENDING_OBJECT {
        0
    } else {
        u64::from(object)
    };
    deliver(&Event::Method {
        enter,
        flags: names.flags,
        depth: own_depth(p),
        receiver,
        method: &names.method,
        class: &names.class,
    });
}

/// Allocate: `id` of class `class_name` (internal form), `size` bytes.
pub fn allocated(id: u32, class_name: &str, size: i64) {
    if !application_thread() {
        return;
    }
    let dims = class_name.bytes().take_while(|&b| b == b'[').count();
    let name = if dims == 0 {
        java_name(class_name)
    } else {
        element_name(&class_name[dims..])
    };
    deliver(&Event::Allocate {
        oid: u64::from(id),
        words: (size.max(0) as u64).div_ceil(4),
        class: name.as_bytes(),
        arity: dims as u64,
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
        _ => {
            return java_name(
                descriptor
                    .strip_prefix('L')
                    .and_then(|d| d.strip_suffix(';'))
                    .unwrap_or(descriptor),
            )
        }
    };
    primitive.to_string()
}

/// UserEvent, on the calling thread.
pub fn user_event(text: &str) {
    deliver(&Event::User(text.as_bytes()));
}

/// `reportObjectReferences()`: walks the heap in jlive's environment (objects keep the IDs
/// their events gave them) and reports every live object with its non-null fields, array
/// elements and (for a class) static fields, on the calling thread. The count of objects.
pub fn report_references(p: &'static Profiler, jni: Jni<'_>) -> Result<u64, String> {
    if !started() {
        return Err("no user trace library is started: tracingStartup first".into());
    }
    if !delivering() {
        return Err("tracing is not on: tracingBegin first".into());
    }
    let walked = heap::walk(p.jvmti, jni, heap::Ids::Agent(p))?;
    crate::callbacks::record_seen(p, &walked.fresh);
    let graph = walked.graph;
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
        .map(|c| java_name(c).into_bytes())
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
        deliver(&Event::StartFieldReport {
            oid: o.id,
            kind,
            class: &names[o.class as usize],
        });
        while at < refs.len() && refs[at].0 < o.id {
            at += 1;
        }
        while at < refs.len() && refs[at].0 == o.id {
            deliver(&Event::FieldReport(refs[at].1));
            at += 1;
        }
        deliver(&Event::EndFieldReport(o.id));
    }
    Ok(graph.objects.len() as u64)
}

/// The current thread's name, priority and group name; ("", -1, "") for a thread the JVM
/// does not know (VA/Java's internal VM thread).
pub fn current_thread_details() -> (String, i32, String) {
    crate::profiler::get()
        .and_then(|p| {
            // The group's local references go with this frame (a thread without Java frames
            // would keep them for good).
            let jni = p.vm.current_env()?;
            let _frame = jni.local_frame(8);
            p.jvmti.thread_details(std::ptr::null_mut()).ok()
        })
        .unwrap_or_else(|| (String::new(), -1, String::new()))
}

// ---- GC events: queued where nothing may be called, delivered by `jlive-plugin` ----

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GcItem {
    Start,
    Finish,
    Free(u32),
}

/// What the collectors counted when last asked, and the collections they counted that are
/// not delivered yet (full, young).
#[derive(Default)]
struct Counts {
    last: (i64, i64),
    credit: (i64, i64),
}

struct Queue {
    /// Held only for a push or a drain, never across a call into the JVM.
    items: Mutex<Vec<GcItem>>,
    /// Signalled when something can be delivered.
    ready: Condvar,
    /// The collectors' counts (GarbageCollectorMXBean).
    counts: Mutex<Counts>,
    /// Held by whoever takes and delivers a batch: the GC thread, or a burst's end.
    batch: Mutex<()>,
}

static QUEUE: OnceLock<Queue> = OnceLock::new();

/// GarbageCollectionStart/Finish: queued for the plug-in's GC thread.
pub fn gc_event(start: bool) {
    push(if start { GcItem::Start } else { GcItem::Finish });
}

/// ObjectFree of an object with an ID: queued (InsTrcTypeGCOn).
pub fn object_freed(id: u32) {
    if GC_FREES.load(Ordering::Relaxed) {
        push(GcItem::Free(id));
    }
}

fn push(item: GcItem) {
    if !delivering() {
        return;
    }
    let Some(q) = QUEUE.get() else { return };
    q.items.lock().push(item);
    if item != GcItem::Start {
        q.ready.notify_all();
    }
}

/// Where the deliverable part of the queue ends: before a collection begun and not yet
/// finished.
fn deliverable(items: &[GcItem]) -> usize {
    items
        .iter()
        .rposition(|i| *i == GcItem::Start)
        .filter(|&s| !items[s..].contains(&GcItem::Finish))
        .unwrap_or(items.len())
}

impl Queue {
    /// Waits (at most 200 ms) until something can be delivered.
    fn wait(&self) {
        let mut items = self.items.lock();
        if deliverable(&items) == 0 {
            let _ = self.ready.wait_for(&mut items, Duration::from_millis(200));
        }
    }

    /// Takes what can be delivered.
    fn take(&self) -> Vec<GcItem> {
        let mut items = self.items.lock();
        let end = deliverable(&items);
        items.drain(..end).collect()
    }

    fn clear(&self) {
        self.items.lock().clear();
    }

    /// A burst begins: nothing queued is its own, and the collectors' counts so far are not
    /// its collections.
    fn reset(&self, p: &Profiler) {
        let _one = self.batch.lock();
        self.clear();
        let now =
            p.vm.current_env()
                .and_then(|jni| p.hub.quietly(|| collections(jni)));
        let mut counts = self.counts.lock();
        if let Some(now) = now {
            counts.last = now;
        }
        counts.credit = (0, 0);
    }

    /// Delivers what is queued, on the calling thread (a burst's end).
    fn deliver_now(&self, p: &Profiler) {
        let _ = p.vm.with_env(|jni| {
            // After the GC thread's batch, if it is delivering one.
            let _one = self.batch.lock();
            let items = self.take();
            self.deliver(jni, &items);
        });
    }

    fn deliver(&self, jni: Jni<'_>, items: &[GcItem]) {
        if items.is_empty() {
            return;
        }
        let mut counts = self.counts.lock();
        if items.contains(&GcItem::Start) {
            // The counters run ahead of the queue (a collection counted may be queued for
            // the next batch): what they add is credit, spent as the collections come.
            if let Some(now) = collections(jni) {
                counts.credit.0 += now.0 - counts.last.0;
                counts.credit.1 += now.1 - counts.last.1;
                counts.last = now;
            }
        }
        let mut is_full = false;
        for item in items {
            let e = match item {
                GcItem::Start => {
                    // A full collection when only full ones are owed; else a young one (the
                    // common kind).
                    is_full = counts.credit.0 > 0 && counts.credit.1 <= 0;
                    if is_full {
                        counts.credit.0 -= 1;
                        Event::Collection(event::GGC_START)
                    } else {
                        counts.credit.1 -= 1;
                        Event::Collection(event::SCAVENGE_START)
                    }
                }
                GcItem::Finish if is_full => Event::Collection(event::GGC_END),
                GcItem::Finish => Event::Collection(event::SCAVENGE_END),
                GcItem::Free(id) => Event::OidDelete(u64::from(*id)),
            };
            deliver(&e);
        }
    }
}

/// (full, young) collections so far, by the collectors' GarbageCollectorMXBeans; None if
/// they cannot be asked.
fn collections(jni: Jni<'_>) -> Option<(i64, i64)> {
    let all = jni.collection_counts();
    if all.is_empty() {
        return None;
    }
    let mut n = (0, 0);
    for (name, count) in all {
        if is_full_collector(&name) {
            n.0 += count.max(0);
        } else {
            n.1 += count.max(0);
        }
    }
    Some(n)
}

/// Whether a GarbageCollectorMXBean counts full (old-generation) collections: HotSpot's are
/// "G1 Old Generation", "PS MarkSweep", "MarkSweepCompact", "ZGC Major ...".
fn is_full_collector(name: &str) -> bool {
    ["Old", "MarkSweep", "Major", "Full"]
        .iter()
        .any(|w| name.contains(w))
}

/// Starts `jlive-plugin`, once: it waits for collections and delivers their events. Returns
/// once it is attached to the JVM (attaching runs Java code, not inside a burst).
fn gc_thread(p: &'static Profiler) {
    if QUEUE.get().is_some() {
        return;
    }
    let queue = Queue {
        items: Mutex::new(Vec::new()),
        ready: Condvar::new(),
        counts: Mutex::new(Counts::default()),
        batch: Mutex::new(()),
    };
    if QUEUE.set(queue).is_err() {
        return;
    }
    let (attached, wait) = crossbeam_channel::bounded::<()>(1);
    let started = std::thread::Builder::new()
        .name("jlive-plugin".into())
        .spawn(move || {
            let env = p.vm.attach_daemon(c"jlive-plugin");
            let _ = attached.send(());
            let Some(jni) = env.and_then(Jni::from_callback) else {
                log::warn("the plug-in's GC thread cannot attach to the JVM: the user trace library gets no GC events");
                return;
            };
            let Some(q) = QUEUE.get() else { return };
            while !p.closed.load(Ordering::SeqCst) {
                q.wait();
                let body = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let _one = q.batch.lock();
                    let items = q.take();
                    q.deliver(jni, &items);
                }));
                if body.is_err() {
                    log::warn("internal error delivering GC events to the user trace library");
                }
            }
        });
    match started {
        Ok(_) => {
            let _ = wait.recv_timeout(Duration::from_secs(10));
        }
        Err(e) => log::warn(&format!("cannot start the plug-in's GC thread: {}", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_begun_and_not_finished_waits_for_its_end() {
        use GcItem::*;
        assert_eq!(deliverable(&[Start, Finish, Free(3), Start]), 3);
        assert_eq!(deliverable(&[Free(1), Start]), 1);
        assert_eq!(deliverable(&[Start]), 0);
        assert_eq!(deliverable(&[Start, Finish]), 2);
        assert_eq!(deliverable(&[]), 0);
    }

    #[test]
    fn array_elements_are_named_as_java_spells_them() {
        assert_eq!(element_name("I"), "int");
        assert_eq!(element_name("Ljava/lang/String;"), "java.lang.String");
        assert_eq!(element_name("LOuter$Inner;"), "Outer$Inner");
    }
}
