//! VA/Java user trace libraries: `plugin=/path/libtrace.so`, or
//! `InstrumentVMSupport.tracingStartup("trace")`. The library gets jlive's events as the
//! tracing VM gave them (`abi.rs` lays them out), with no format in between. The host
//! ([`PluginHost`]) is the capture's subscriber (`capture::Subscriber`): the capture hands
//! it each event of a burst given to it, the recorder each burst's beginning and end.
//!
//! Where each event reaches the library, and on which thread:
//! - MethodEnter/MethodLeave: `Capture::record` (`capture/mod.rs`), on the thread that calls, as it calls
//!   (capture=bci sends every record of a plug-in burst down its slow path to get there);
//! - Allocate: `Capture::allocated` (`capture/alloc.rs`), on the allocating thread;
//! - UserEvent: `InstrumentVMSupport.userEvent` and `jlive ctl mark`, on the calling thread;
//! - StartFieldReport/FieldReport/EndFieldReport: `reportObjectReferences()`, on the calling
//!   thread, after the heap walk (`runtime/heap.rs`) that finds them;
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

use crate::capture::{vajava, BurstFlags, Capture, Subscriber};
use crate::log;
use crate::options::{Gc, Methods, Output};
use crate::recorder::Recorder;
use crate::runtime::heap::{self, CLASS_IDS};
use crate::runtime::Runtime;
use abi::{Event, Library};
use jlive_bci::classfile::{ACC_NATIVE, ACC_STATIC, ACC_SYNCHRONIZED};
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::Jvmti;
use jlive_writer::heap::java_name;
use jlive_writer::keyhash::KeyHasher;
use jlive_writer::record::{MethodKey, Symbols, NO_OBJECT, PENDING_OBJECT};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub mod abi;
mod gc;

/// An opened library and where it came from.
pub struct Loaded {
    library: Library,
    pub path: String,
    slot: usize,
}

/// How many different libraries one run may open.
const MAX_LIBRARIES: usize = 16;
thread_local! {
    /// This thread is inside the library (an entry point or an event handler).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
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
    /// Boxed: a thread-local's room in the static TLS reserve is scarce (ARCHITECTURE.md).
    static THREAD: RefCell<Box<ThreadState>> = RefCell::new(Box::default());
}

/// The user trace libraries of the run, and the one the open burst goes to.
pub struct PluginHost {
    /// Every library opened in this run (never closed), by slot; filled under `opened`.
    slots: [OnceLock<&'static Loaded>; MAX_LIBRARIES],
    /// How many slots are filled; held while a library is started or shut down.
    opened: Mutex<usize>,
    /// The started library's slot + 1 (its InstrumentTraceStartup returned 0), or 0.
    current: AtomicUsize,
    /// The slot + 1 of the library the open burst goes to, or 0: events flow while it is set.
    burst: AtomicUsize,
    /// Calls into the library under way (their threads read `burst` after counting
    /// themselves).
    in_flight: AtomicUsize,
    /// The open burst reports deletions (InsTrcTypeGCOn).
    gc_frees: AtomicBool,
    /// GC events, queued where nothing may be called (`gc.rs`); made when a library starts.
    queue: OnceLock<gc::Queue>,
    /// `plugin=`: the library opened at load, started at VM init.
    at_load: Option<&'static Loaded>,
}

impl PluginHost {
    /// The host of a run; `path`: `plugin=`, opened now (its entry points checked: a library
    /// that lacks one is a line, and the JVM runs without it).
    pub fn new(path: Option<&str>, untraced: impl Fn(&str) -> String) -> PluginHost {
        let mut host = PluginHost {
            slots: [const { OnceLock::new() }; MAX_LIBRARIES],
            opened: Mutex::new(0),
            current: AtomicUsize::new(0),
            burst: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            gc_frees: AtomicBool::new(false),
            queue: OnceLock::new(),
            at_load: None,
        };
        host.at_load =
            path.and_then(|path| host.open(path).map_err(|e| log::warn(&untraced(&e))).ok());
        host
    }

    /// The library `plugin=` named, opened at load.
    pub fn at_load(&self) -> Option<&'static Loaded> {
        self.at_load
    }

    fn in_slot(&self, slot_plus_one: usize) -> Option<&'static Loaded> {
        match slot_plus_one {
            0 => None,
            i => self.slots.get(i - 1)?.get().copied(),
        }
    }

    /// The started library.
    fn current(&self) -> Option<&'static Loaded> {
        self.in_slot(self.current.load(Ordering::SeqCst))
    }

    /// Whether events go to a library now (a plug-in burst is open).
    #[inline]
    pub fn delivering(&self) -> bool {
        self.burst.load(Ordering::Relaxed) != 0
    }

    /// Whether a library is started.
    pub fn started(&self) -> bool {
        self.current().is_some()
    }

    /// Hands an event to the burst's library, counted as in flight; not from inside it.
    fn deliver(&self, e: &Event<'_>) {
        if !self.delivering() || inside_library() {
            return;
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if let Some(l) = self.in_slot(self.burst.load(Ordering::SeqCst)) {
            inside(|| l.library.event(vm_id(), e));
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// Waits until no thread is inside the library (at most two seconds).
    fn quiesce(&self) {
        let until = Instant::now() + Duration::from_secs(2);
        while self.in_flight.load(Ordering::SeqCst) > 0 {
            if Instant::now() > until {
                log::warn("a thread is still inside the user trace library after 2 s; going on");
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Opens a library (or finds it opened before) and checks its entry points.
    pub fn open(&self, path: &str) -> Result<&'static Loaded, String> {
        let mut opened = self.opened.lock();
        let known = self.slots[..*opened]
            .iter()
            .filter_map(|s| s.get().copied());
        if let Some(l) = known.into_iter().find(|l| l.path == path) {
            return Ok(l);
        }
        if *opened == MAX_LIBRARIES {
            return Err(format!(
                "cannot use the user trace library {}: this run opened {} already",
                path, MAX_LIBRARIES
            ));
        }
        if !jlive_jvm::os::export_own_symbols() {
            log::info("libjlive.so's symbols are not global: a user trace library must look up InstrumentSupportCurrentThreadDetails itself");
        }
        let library = Library::open(path)
            .map_err(|e| format!("cannot use the user trace library {}: {}", path, e))?;
        let loaded: &'static Loaded = Box::leak(Box::new(Loaded {
            library,
            path: path.to_string(),
            slot: *opened,
        }));
        let _ = self.slots[*opened].set(loaded);
        *opened += 1;
        Ok(loaded)
    }

    /// InstrumentTraceStartup: from now on bursts go to the library (as `output=` says).
    pub fn start(
        &'static self,
        p: &'static Runtime,
        loaded: &'static Loaded,
    ) -> Result<String, String> {
        let _serial = self.opened.lock();
        if let Some(l) = self.current() {
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
        self.current.store(loaded.slot + 1, Ordering::SeqCst);
        self.gc_thread(p);
        if p.options().output == Output::File {
            log::warn(&format!(
                "output=file: bursts do not go to the user trace library {}",
                loaded.path
            ));
        }
        log::info(&format!("user trace library {} started", loaded.path));
        Ok(format!("user trace library {} started", loaded.path))
    }

    /// `tracingStartup(name)`: finds, opens and starts a library.
    pub fn startup(&'static self, p: &'static Runtime, name: &str) -> Result<String, String> {
        let loaded = self.open(&locate(p.jvmti(), name))?;
        self.start(p, loaded)
    }

    /// `tracingShutdown()` and VM death: no burst goes to the library any more, the open one
    /// ends (InstrumentTraceEnd), then InstrumentTraceShutdown.
    pub fn shutdown(
        &self,
        p: &Runtime,
        recorder: &Recorder,
        capture: &Capture,
    ) -> Result<String, String> {
        let _serial = self.opened.lock();
        let Some(l) = self.current() else {
            return Err("no user trace library is started".into());
        };
        self.current.store(0, Ordering::SeqCst);
        if self.delivering() {
            let _ = recorder.end(p, capture);
        }
        self.quiesce();
        let rc = inside(|| l.library.shutdown());
        if rc != 0 {
            log::info(&format!(
                "InstrumentTraceShutdown of {} returned {}",
                l.path, rc
            ));
        }
        Ok(format!("user trace library {} shut down", l.path))
    }

    /// A burst begins (the burst lock held): InstrumentTraceBegin, and events flow. False if no
    /// library is started.
    fn begin(&self, p: &Runtime, flags: BurstFlags) -> bool {
        let Some(l) = self.current() else {
            return false;
        };
        if let Some(q) = self.queue.get() {
            q.reset(p);
        }
        self.gc_frees.store(flags.gc == Gc::On, Ordering::SeqCst);
        let rc = inside(|| l.library.begin(vm_id(), vajava_flags(flags)));
        if rc != 0 {
            log::info(&format!(
                "InstrumentTraceBegin of {} returned {}",
                l.path, rc
            ));
        }
        self.burst.store(l.slot + 1, Ordering::SeqCst);
        true
    }

    /// A burst ends (the burst lock held): the GC events still queued, then InstrumentTraceEnd.
    fn end(&self, p: &Runtime) {
        let Some(l) = self.in_slot(self.burst.load(Ordering::SeqCst)) else {
            return;
        };
        if let Some(q) = self.queue.get() {
            q.deliver_now(self, p);
        }
        self.burst.store(0, Ordering::SeqCst);
        self.quiesce();
        if let Some(q) = self.queue.get() {
            // A collection begun and not finished, or frees posted late: not this burst's.
            q.clear();
        }
        let rc = inside(|| l.library.end());
        if rc != 0 {
            log::info(&format!("InstrumentTraceEnd of {} returned {}", l.path, rc));
        }
    }

    /// `reportObjectReferences()`: walks the heap in jlive's environment (objects keep the IDs
    /// their events gave them) and reports every live object with its non-null fields, array
    /// elements and (for a class) static fields, on the calling thread. The count of objects.
    pub fn report_references(&self, p: &'static Runtime, jni: Jni<'_>) -> Result<u64, String> {
        if !self.started() {
            return Err("no user trace library is started: tracingStartup first".into());
        }
        if !self.delivering() {
            return Err("tracing is not on: tracingBegin first".into());
        }
        let walked = heap::walk(p.jvmti(), jni, heap::Ids::Agent(p))?;
        p.record_seen(&walked.fresh);
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
            self.deliver(&Event::StartFieldReport {
                oid: o.id,
                kind,
                class: &names[o.class as usize],
            });
            while at < refs.len() && refs[at].0 < o.id {
                at += 1;
            }
            while at < refs.len() && refs[at].0 == o.id {
                self.deliver(&Event::FieldReport(refs[at].1));
                at += 1;
            }
            self.deliver(&Event::EndFieldReport(o.id));
        }
        Ok(graph.objects.len() as u64)
    }
}

impl Subscriber for PluginHost {
    fn started(&self) -> bool {
        PluginHost::started(self)
    }
    fn delivering(&self) -> bool {
        PluginHost::delivering(self)
    }
    fn burst_begun(&self, rt: &Runtime, flags: BurstFlags) -> bool {
        self.begin(rt, flags)
    }
    fn burst_ended(&self, rt: &Runtime) {
        self.end(rt)
    }
    /// MethodEnter (`enter`) or MethodLeave of `key` on this thread; `object` is the receiver's
    /// ID (NO_OBJECT for a static method; a constructor's before super() returned is 0).
    fn method(&self, p: &Runtime, capture: &Capture, enter: bool, key: MethodKey, object: u32) {
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
        self.deliver(&Event::Method {
            enter,
            flags: names.flags,
            depth: own_depth(p, capture),
            receiver,
            method: &names.method,
            class: &names.class,
        });
    }

    /// Allocate: `id` of class `class_name` (internal form), `size` bytes.
    fn allocated(&self, id: u32, class_name: &str, size: i64) {
        if !application_thread() {
            return;
        }
        let dims = class_name.bytes().take_while(|&b| b == b'[').count();
        let name = if dims == 0 {
            java_name(class_name)
        } else {
            element_name(&class_name[dims..])
        };
        self.deliver(&Event::Allocate {
            oid: u64::from(id),
            words: (size.max(0) as u64).div_ceil(4),
            class: name.as_bytes(),
            arity: dims as u64,
        });
    }

    /// UserEvent, on the calling thread.
    fn user_event(&self, text: &str) {
        self.deliver(&Event::User(text.as_bytes()));
    }
    fn gc(&self, start: bool) {
        self.gc_event(start);
    }
    fn object_freed(&self, id: u32) {
        self.freed(id);
    }
}

/// The vmID every event and entry point carries: this process's ID.
fn vm_id() -> u64 {
    u64::from(std::process::id())
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
    jlive_jvm::os::locate_library(name, &dirs)
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

/// Whether this thread's events are the application's: not on one of jlive's threads, nor
/// while the agent runs Java code of its own ([`crate::transport::Hub::quietly`]), nor Java
/// code run from inside the library.
fn application_thread() -> bool {
    if inside_library() || crate::transport::Hub::is_quiet() {
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

fn describe(p: &Runtime, key: MethodKey) -> Names {
    let found = p.symbols().method(key).and_then(|m| {
        let class = p.symbols().class(m.class)?;
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
fn own_depth(p: &Runtime, capture: &Capture) -> u64 {
    let frames = u64::try_from(p.jvmti().frame_count().unwrap_or(1)).unwrap_or(0);
    if !capture.uses_bci() {
        return frames;
    }
    let mut top = [jlive_jvm::jvmti::FrameInfo::default(); 3];
    let n = p.jvmti().stack_trace(0, &mut top);
    let ours = top[..n]
        .iter()
        .take_while(|f| capture.sync().is_trampoline(f.method))
        .count();
    frames.saturating_sub(ours as u64)
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

/// The current thread's name, priority and group name; ("", -1, "") for a thread the JVM
/// does not know (VA/Java's internal VM thread).
pub fn current_thread_details(p: &Runtime) -> (String, i32, String) {
    p.vm()
        .with_current(|jni| p.jvmti().current_thread_details(jni).ok())
        .flatten()
        .unwrap_or_else(|| (String::new(), -1, String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_elements_are_named_as_java_spells_them() {
        assert_eq!(element_name("I"), "int");
        assert_eq!(element_name("Ljava/lang/String;"), "java.lang.String");
        assert_eq!(element_name("LOuter$Inner;"), "Outer$Inner");
    }
}
