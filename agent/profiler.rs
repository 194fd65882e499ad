//! The profiler's lifetime: options to capabilities and callbacks at load, the writer thread,
//! the first burst and the control thread at VM init, and the orderly close at VM death
//! (every thread's partial batch written, TraceEnd, header patched) before the JVM exits.

use crate::buffer::Hub;
use crate::burst::{BurstFlags, BurstState};
use crate::callbacks;
use crate::capture;
use crate::classes::Classes;
use crate::clock;
use crate::control::{self, Listener};
use crate::ffi::jni::{Jni, Vm};
use crate::ffi::jvmti::{self, cap, Capabilities, EventCallbacks, Jvmti};
use crate::javaapi;
use crate::log;
use crate::options::{Capture, Clock, Gc, Methods, Options};
use crate::registry::Registry;
use jlive_writer::filter::ClassFilter;
use jlive_writer::format::{with_sink, FormatOptions, OpenSink, WithSink};
use jlive_writer::model::TraceInfo;
use jlive_writer::record::{Message, Symbols};
use jlive_writer::resolve::{Resolver, ResolverConfig};
use jlive_writer::stck::Stck;
use jlive_writer::writer::{self, Summary, WriterStats};
use parking_lot::Mutex;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of batches in flight between JVM threads and the writer before producers wait (and
/// as many again of emptied vectors waiting in the pool).
const CHANNEL_BYTES: usize = 8 << 20;

/// The channel's and the pool's capacity in batches of `buffer` bytes.
fn channel_batches(buffer: usize) -> usize {
    (CHANNEL_BYTES / buffer.max(1)).clamp(4, 64)
}

/// Nice levels the writer thread gives up. Where the JVM's own threads want every core (its
/// compilers, early in a run, beside the application's threads) they go first, and the writer
/// catches up in their gaps: the channel holds up to [`CHANNEL_BYTES`] of batches, and a
/// producer that finds it full waits, which gives the writer its core. Its work per event is
/// the same. javac recording, 11 alternating runs: 1.87 s at nice 0, 1.75 s at 5; h2: 4.24 s
/// and 3.79 s (9 runs); CallBench, where the writer has a core of its own, 166 ns/iter both.
const WRITER_NICE: i32 = 5;

/// How long VM death waits for the writer to finish the file.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Profiler {
    pub options: Options,
    pub registry: Arc<Registry>,
    pub hub: Hub,
    pub next_object: AtomicU32,
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub stats: Arc<WriterStats>,
    /// When and at which tick the agent was loaded (timed bursts count from here).
    pub loaded: Instant,
    pub start_epoch: u64,
    pub bursts: Mutex<BurstState>,
    pub closed: AtomicBool,
    /// The capabilities jlive holds.
    pub caps: Capabilities,
    /// `sun.java.command`'s first word, for `status` and `jlive list`.
    pub main_class: OnceLock<String>,
    /// Which classes are traced (also applied by the writer).
    pub filter: ClassFilter,
    pub bci: crate::capture::bci::BciStats,
    /// `plugin=`: the user trace library opened at load, started at VM init.
    plugin: Option<&'static crate::plugin::Loaded>,
    listener: Mutex<Option<Listener>>,
    /// `live=`: the visualizer's socket, served by the control thread.
    live: Mutex<Option<crate::live::Server>>,
    control: Mutex<Option<JoinHandle<()>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

static PROFILER: OnceLock<Profiler> = OnceLock::new();

/// The running profiler, once loaded.
#[inline(always)]
pub fn get() -> Option<&'static Profiler> {
    PROFILER.get()
}

/// What the writer thread needs to open each file of the run: the first, and each one a
/// roll begins. The agent knows no format: it describes the run and hands the formats over.
struct Files {
    options: Options,
    /// The run's description; each file gets its own start ticks and tick rate.
    run: TraceInfo,
    /// `clock=stck` over another counter: ticks are mapped to STORE CLOCK values.
    stck: Option<Stck>,
    symbols: Arc<dyn Symbols>,
}

impl Files {
    /// Creates the file(s) of `path` in the run's formats, starting now at `rate`.
    fn open<S: OpenSink>(&self, path: &str, rate: u32) -> std::io::Result<Resolver<S>> {
        let mut info = TraceInfo {
            ticks_per_microsecond: rate,
            start_ticks: clock::ticks(),
            ..self.run.clone()
        };
        if let Some(stck) = &self.stck {
            info = stck.info(&info);
        }
        let o = &self.options;
        let format_options = FormatOptions {
            platform: o.platform,
            mode: Some(o.filemode),
            gzip: o.gzip,
            tree: o.tree,
        };
        let sink = S::open(&o.formats, path, &info, format_options)?;
        let config = ResolverConfig {
            filter: ClassFilter::new(&o.include, &o.exclude),
            entries_only: o.methods == Methods::Entry,
            stck: self.stck,
        };
        Ok(Resolver::new(sink, self.symbols.clone(), config))
    }
}

/// The writer cannot write (or failed): recording stops at once, and the open burst is ended
/// on a thread of its own (ending it sends to the writer, and needs JVMTI).
fn stop_recording() {
    let Some(p) = get() else { return };
    p.hub.stop();
    let ended = std::thread::Builder::new()
        .name("jlive-stop".into())
        .spawn(move || {
            crate::buffer::mark_agent_thread();
            if p.closed.load(Ordering::SeqCst) || p.vm.attach_daemon(c"jlive stop").is_none() {
                return;
            }
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.end_burst(p.jvmti)));
            p.vm.detach_current();
        });
    if ended.is_err() {
        log::warn("cannot end the burst: recording is stopped, but the JVM's events stay on");
    }
}

/// A panic's message.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// Opens the first file and starts the writer thread on it, compiled for the run's format
/// ([`with_sink`]).
struct StartWriter {
    files: Files,
    path: String,
    rate: u32,
    inbox: crossbeam_channel::Receiver<Message>,
    pool: crossbeam_channel::Sender<Vec<jlive_writer::record::Slot>>,
    stats: Arc<WriterStats>,
}

impl WithSink for StartWriter {
    type Output = Result<JoinHandle<()>, String>;

    fn call<S: OpenSink>(self) -> Self::Output {
        let StartWriter {
            files,
            path,
            rate,
            inbox,
            pool,
            stats,
        } = self;
        let session = files
            .open::<S>(&path, rate)
            .map_err(|e| format!("cannot create trace file {}: {}", path, e))?;
        std::thread::Builder::new()
            .name("jlive-writer".into())
            .spawn(move || {
                crate::ffi::os::lower_thread_priority(WRITER_NICE);
                let mut reopen =
                    |path: &str| files.open::<S>(path, clock::refined_rate().unwrap_or(rate));
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    writer::run(
                        session,
                        inbox.clone(),
                        pool.clone(),
                        &|m| log::warn(m),
                        &stop_recording,
                        &stats,
                        &mut reopen,
                    )
                }));
                if let Err(panic) = run {
                    // The file keeps what was flushed; the JVM goes on untraced.
                    let what = panic_text(panic.as_ref());
                    let error = format!("the writer failed: {}", what);
                    log::warn(&format!(
                        "{}; recording stopped (the file holds the events flushed before)",
                        error
                    ));
                    if let Ok(mut slot) = stats.error.lock() {
                        *slot = Some(error.clone());
                    }
                    stop_recording();
                    writer::drain(&inbox, &pool, &error);
                }
            })
            .map_err(|e| format!("cannot start the writer thread: {}", e))
    }
}

/// Agent_OnLoad: Ok, or the one line to print before returning JNI_ERR.
pub fn load(vm: *mut jni_sys::JavaVM, text: &str) -> Result<(), String> {
    if let Some((before, spec)) = crate::options::split_jvmpi(text) {
        return crate::jvmpi::host(Vm::new(vm), before, spec);
    }
    let options = Options::parse(text).map_err(|e| e.0)?;
    if options.help {
        print!("{}", crate::options::help_text());
        std::process::exit(0);
    }
    start(vm, options, text, false)
}

/// What Agent_OnAttach did.
pub enum Attached {
    Started,
    /// jlive was loaded already (at start-up or by an earlier attach): nothing changed.
    AlreadyLoaded,
}

/// Agent_OnAttach (`jlive attach`): loads into a running JVM and does at once what VMStart
/// and VMInit do for an agent loaded at start-up; under capture=bci that retransforms every
/// loaded class. Ok, or the one line to print before returning JNI_ERR.
pub fn attach(vm: *mut jni_sys::JavaVM, text: &str) -> Result<Attached, String> {
    if PROFILER.get().is_some() {
        log::warn("jlive is already loaded in this JVM: this attach changes nothing (its options are ignored); drive it with jlive ctl");
        return Ok(Attached::AlreadyLoaded);
    }
    if crate::options::split_jvmpi(text).is_some() {
        return Err("jvmpi= works at start-up only: a JVMPI agent loads before the VM runs (-agentpath:libjlive.so=jvmpi=...)".into());
    }
    let options = Options::parse_attached(text).map_err(|e| e.0)?;
    if options.help {
        return Err("help: `jlive attach --help` lists the options".into());
    }
    if crate::ffi::os::another_copy_loaded() {
        log::warn("jlive is already loaded in this JVM (another copy of libjlive.so): this attach changes nothing; drive it with jlive ctl");
        return Ok(Attached::AlreadyLoaded);
    }
    start(vm, options, text, true)?;
    let p = get().ok_or("profiler state lost")?;
    let initialized = p.vm.with_env(|jni| {
        let _frame = jni.local_frame(16);
        if p.uses_hook() {
            let defined = capture::bci::define_trampoline(jni)
                .and_then(|_| capture::bci::initialize_attached_trampoline(jni));
            if let Err(e) = defined {
                log::warn(&format!("{}; capture=bci traces nothing", e));
            }
        }
        p.vm_init(p.jvmti, jni);
    });
    if initialized.is_none() {
        log::warn("attached, but no JNI environment on the attaching thread: nothing is traced");
    }
    Ok(Attached::Started)
}

/// What Agent_OnLoad and Agent_OnAttach share: the JVMTI environment, its capabilities and
/// callbacks, the clock, the writer thread and the control socket.
fn start(
    vm: *mut jni_sys::JavaVM,
    options: Options,
    text: &str,
    attached: bool,
) -> Result<(), String> {
    if let Some(path) = &options.log {
        log::to_file(path).map_err(|e| format!("cannot open log file {}: {}", path, e))?;
    }
    if PROFILER.get().is_some() {
        return Err("libjlive.so is loaded twice; give it once".into());
    }
    // Every panic is caught where it would cross into the JVM or end an agent thread, and
    // said there in one `jlive:` line; its place goes to the log, not to the JVM's stderr.
    std::panic::set_hook(Box::new(|info| {
        log::info(&format!("internal error: {}", info));
    }));
    let jvmti = Jvmti::from_vm(vm).ok_or("this JVM offers no JVMTI 1.2 environment")?;
    let started = start_with(vm, jvmti, options, text, attached);
    if started.is_err() && PROFILER.get().is_none() {
        // Its capabilities, prefix and sampling interval go with it: the next try (or another
        // agent) finds the JVM as it was.
        jvmti.dispose();
    }
    started
}

fn start_with(
    vm: *mut jni_sys::JavaVM,
    jvmti: Jvmti,
    options: Options,
    text: &str,
    attached: bool,
) -> Result<(), String> {
    let mut caps = add_capabilities(jvmti, &options, attached)?;
    if caps.has(cap::SET_NATIVE_METHOD_PREFIX)
        && jvmti.set_native_method_prefix(c"$$jlive$$").is_err()
    {
        caps = caps.without(cap::SET_NATIVE_METHOD_PREFIX);
    }
    if caps.has(cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS) {
        // Now, before any Java thread exists: each thread's sampler starts at "every
        // allocation" instead of a first sample after 512 KiB. No cost until enabled.
        jvmti
            .set_heap_sampling_interval(0)
            .map_err(|e| format!("cannot sample every allocation: {}", e))?;
    }
    let (source, rate) = clock::start(options.clock());
    // Timed bursts count from here; a file's times are reckoned from this tick and instant.
    let loaded = Instant::now();
    let (origin_ticks, origin_ns) = clock::wall_origin();
    let start_epoch = origin_ns / 1_000_000_000;
    let path = options.file_path(std::process::id(), start_epoch, 0);
    let registry = Arc::new(Registry::new());
    if options.formats.iter().any(|f| f.has_line_numbers()) {
        registry.keep_line_numbers();
    }
    let stck = (options.clock() == Clock::Stck && source != clock::Source::Stck)
        .then(|| Stck::new(origin_ticks, origin_ns, clock::ticks_per_second()));
    let written = match stck {
        Some(_) => ", written as STORE CLOCK values",
        None => "",
    };
    let files = Files {
        options: options.clone(),
        run: TraceInfo {
            origin_ticks,
            origin_ns,
            pid: std::process::id(),
            host: crate::ffi::os::hostname(),
            // The file says how the run was traced, but not the control socket's secret.
            options: crate::options::redacted(text),
            ..TraceInfo::default()
        },
        stck,
        symbols: registry.clone(),
    };
    let listener = control::listen(&options)?;
    let live = crate::live::listen(&options)?;
    let stats = Arc::new(WriterStats::default());
    *stats.file.lock().map_err(|_| "writer stats poisoned")? = path.clone();
    let batches = channel_batches(options.buffer);
    let (messages, inbox) = crossbeam_channel::bounded(batches);
    let (pool_out, pool_in) = crossbeam_channel::bounded(batches);
    let start = StartWriter {
        files,
        path: path.clone(),
        rate,
        inbox,
        pool: pool_out,
        stats: stats.clone(),
    };
    let format_options = FormatOptions {
        platform: options.platform,
        mode: Some(options.filemode),
        gzip: options.gzip,
        tree: options.tree,
    };
    let writer = with_sink(&options.formats, format_options, start)?;
    log::info(&format!(
        "tracing to {} (clock {:?}, {} ticks/us{})",
        path, source, rate, written
    ));
    let bci = options.capture == Capture::Bci && options.traces_methods();
    let overhead = bci.then(record_overhead);
    let hub = Hub::new(messages, pool_in, options.buffer, overhead);
    if options.drop_when_behind {
        hub.drop_when_behind();
    }
    let filter = ClassFilter::new(&options.include, &options.exclude);
    // Its entry points are checked now; a library that lacks one is a line, and the JVM runs
    // without it.
    let plugin = options.plugin.as_deref().and_then(|path| {
        crate::plugin::open(path)
            .map_err(|e| log::warn(&untraced(&options, &e)))
            .ok()
    });
    if bci {
        registry.use_bci();
        report_thread_locals();
    }
    let profiler = Profiler {
        options,
        registry,
        hub,
        next_object: AtomicU32::new(1),
        jvmti,
        vm: Vm::new(vm),
        stats,
        loaded,
        start_epoch,
        bursts: Mutex::new(BurstState::default()),
        closed: AtomicBool::new(false),
        caps,
        main_class: OnceLock::new(),
        filter,
        bci: Default::default(),
        plugin,
        listener: Mutex::new(listener),
        live: Mutex::new(live),
        control: Mutex::new(None),
        writer: Mutex::new(Some(writer)),
    };
    if PROFILER.set(profiler).is_err() {
        return Err("libjlive.so is loaded twice; give it once".into());
    }
    get().ok_or("profiler state lost")?.set_callbacks()
}

/// The line for a plug-in that cannot be used.
fn untraced(o: &Options, why: &str) -> String {
    if o.writes_file() {
        format!("{}; bursts go to the trace file only", why)
    } else {
        format!("{}; the JVM runs untraced", why)
    }
}

/// Adds what the options need (failing if the JVM cannot give it) and, when available, what
/// a burst may ask for later (GC and allocation events through the Java API).
fn add_capabilities(jvmti: Jvmti, o: &Options, attached: bool) -> Result<Capabilities, String> {
    let potential = jvmti
        .potential_capabilities()
        .map_err(|e| format!("GetPotentialCapabilities failed: {}", e))?;
    let mut need = vec![(cap::TAG_OBJECTS, "can_tag_objects")];
    // Without it (attached: HotSpot gives it only at start-up), the bci keys of a class are
    // tied to its methods by name (registry::BciKeys).
    if !attached {
        need.push((
            cap::MAINTAIN_ORIGINAL_METHOD_ORDER,
            "can_maintain_original_method_order",
        ));
    }
    if attached && o.capture == Capture::Events {
        return Err("capture=events needs JVMTI method entry and exit events, which a running JVM gives only to agents loaded at start-up (-agentpath): attached, jlive traces with capture=bci (the default of jlive attach)".into());
    }

    if o.capture == Capture::Events && o.traces_methods() {
        // Only asked for when used: with them HotSpot's interpreter checks for method events
        // on every call.
        need.push((
            cap::GENERATE_METHOD_ENTRY_EVENTS,
            "can_generate_method_entry_events",
        ));
        need.push((
            cap::GENERATE_METHOD_EXIT_EVENTS,
            "can_generate_method_exit_events",
        ));
    }
    if o.gc != Gc::Off {
        need.push((
            cap::GENERATE_GARBAGE_COLLECTION_EVENTS,
            "can_generate_garbage_collection_events",
        ));
    }
    if o.gc == Gc::On {
        need.push((
            cap::GENERATE_OBJECT_FREE_EVENTS,
            "can_generate_object_free_events",
        ));
    }
    if o.alloc {
        need.push((
            cap::GENERATE_VM_OBJECT_ALLOC_EVENTS,
            "can_generate_vm_object_alloc_events",
        ));
        need.push((
            cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS,
            "can_generate_sampled_object_alloc_events",
        ));
    }
    if o.objects && o.capture == Capture::Events {
        need.push((cap::ACCESS_LOCAL_VARIABLES, "can_access_local_variables"));
    }
    if o.monitors {
        need.push((cap::GENERATE_MONITOR_EVENTS, "can_generate_monitor_events"));
        need.push((cap::GET_MONITOR_INFO, "can_get_monitor_info"));
    }
    if (o.capture == Capture::Bci && o.traces_methods()) || o.monitors {
        need.push((cap::RETRANSFORM_CLASSES, "can_retransform_classes"));
        need.push((cap::RETRANSFORM_ANY_CLASS, "can_retransform_any_class"));
    }
    let mut wanted = Capabilities::default();
    for (bit, name) in need {
        if !potential.has(bit) {
            let when = if attached {
                " (a running JVM keeps some for agents loaded at start-up)"
            } else {
                ""
            };
            return Err(format!(
                "this JVM cannot give the capability {} that the options ask for{}",
                name, when
            ));
        }
        wanted.set(bit);
    }
    if o.capture == Capture::Bci
        && o.traces_methods()
        && potential.has(cap::SET_NATIVE_METHOD_PREFIX)
    {
        wanted.set(cap::SET_NATIVE_METHOD_PREFIX);
    }
    // capture=bci switches MethodEntry on and off as bursts begin and end, only for the
    // deoptimization that comes with it (capture::bci::drop_hoisted_gates). With it HotSpot's
    // interpreter also checks at every call whether the thread reports method events.
    if o.capture == Capture::Bci && o.traces_methods() {
        if potential.has(cap::GENERATE_METHOD_ENTRY_EVENTS) {
            wanted.set(cap::GENERATE_METHOD_ENTRY_EVENTS);
        } else if attached {
            log::info("attached: no can_generate_method_entry_events (HotSpot keeps it for agents loaded at start-up): a compiled loop that runs when a burst begins may go unrecorded until it ends");
        } else {
            log::warn("this JVM cannot give can_generate_method_entry_events: a compiled loop that runs when a burst begins may go unrecorded until it ends");
        }
    }
    // live=: the visualizer's "track monitor contention" switches contended monitors on for
    // its bursts (no cost until then).
    // Under capture=events, its value filters read arguments from the frames' locals.
    if o.values && o.capture != Capture::Events {
        log::warn("values=on: the visualizer's argument and field value filters need capture=events; under capture=bci (the default) they record nothing");
    }
    if o.live.is_some() {
        let locals =
            (o.values && o.capture == Capture::Events).then_some(cap::ACCESS_LOCAL_VARIABLES);
        for bit in [cap::GENERATE_MONITOR_EVENTS, cap::GET_MONITOR_INFO]
            .into_iter()
            .chain(locals)
        {
            if potential.has(bit) {
                wanted.set(bit);
            }
        }
    }
    for optional in [
        cap::MAINTAIN_ORIGINAL_METHOD_ORDER,
        cap::GET_SOURCE_FILE_NAME,
        cap::GET_LINE_NUMBERS,
        cap::GENERATE_GARBAGE_COLLECTION_EVENTS,
        cap::GENERATE_OBJECT_FREE_EVENTS,
        cap::GENERATE_VM_OBJECT_ALLOC_EVENTS,
        cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS,
        cap::SUPPORT_VIRTUAL_THREADS,
    ] {
        if potential.has(optional) {
            wanted.set(optional);
        }
    }
    jvmti
        .add_capabilities(&wanted)
        .map_err(|e| format!("AddCapabilities failed: {}", e))?;
    Ok(wanted)
}

impl Profiler {
    fn set_callbacks(&self) -> Result<(), String> {
        let mut cb = EventCallbacks::default();
        cb.base.VMInit = Some(callbacks::vm_init);
        cb.base.VMDeath = Some(callbacks::vm_death);
        cb.base.ThreadStart = Some(callbacks::thread_start);
        cb.base.ThreadEnd = Some(callbacks::thread_end);
        cb.base.ClassPrepare = Some(callbacks::class_prepare);
        cb.base.MethodEntry = Some(if self.uses_bci() {
            capture::bci::interpreted_only_entry
        } else {
            capture::events::method_entry
        });
        cb.base.MethodExit = Some(capture::events::method_exit);
        cb.base.GarbageCollectionStart = Some(callbacks::gc_start);
        cb.base.GarbageCollectionFinish = Some(callbacks::gc_finish);
        cb.base.ObjectFree = Some(callbacks::object_free);
        cb.base.VMObjectAlloc = Some(callbacks::object_alloc);
        cb.sampled_object_alloc = Some(callbacks::object_alloc);
        cb.virtual_thread_start = Some(callbacks::virtual_thread_start);
        cb.virtual_thread_end = Some(callbacks::virtual_thread_end);
        cb.base.VMStart = Some(callbacks::vm_start);
        cb.base.ClassFileLoadHook = Some(crate::ffi::hooks::class_file_load_hook);
        cb.base.MonitorWait = Some(capture::sync::monitor_wait);
        cb.base.MonitorWaited = Some(capture::sync::monitor_waited);
        cb.base.MonitorContendedEnter = Some(capture::sync::monitor_contended_enter);
        cb.base.MonitorContendedEntered = Some(capture::sync::monitor_contended_entered);
        self.jvmti
            .set_event_callbacks(&cb)
            .map_err(|e| format!("SetEventCallbacks failed: {}", e))?;
        let mut events = vec![
            jvmti::EVENT_VM_INIT,
            jvmti::EVENT_VM_DEATH,
            jvmti::EVENT_CLASS_PREPARE,
        ];
        if self.uses_hook() {
            events.push(jvmti::EVENT_VM_START);
        }
        // capture=bci instruments from the start (unless at the first burst); concurrency
        // hooks alone from VM init.
        if self.rewrites_at_load() {
            events.push(jvmti::EVENT_CLASS_FILE_LOAD_HOOK);
        }
        for event in events {
            self.jvmti
                .set_event(event, true)
                .map_err(|e| format!("enabling JVMTI event {} failed: {}", event, e))?;
        }
        Ok(())
    }

    /// JDK 21+: a virtual thread is a thread of its own in the trace. Its records are stored
    /// in its carrier's buffer between a mount and an unmount record, which tell the writer
    /// whose they are. True when VirtualThreadStart is on.
    fn follow_virtual_threads(&self, jvmti: Jvmti) -> bool {
        let index = |id| match jvmti.extension_event(id) {
            Ok(index) => index,
            Err(e) => {
                log::warn(&format!("cannot list the JVM's extension events: {}", e));
                None
            }
        };
        let (Some(mount), Some(unmount)) = (
            index(jvmti::EXTENSION_VIRTUAL_THREAD_MOUNT),
            index(jvmti::EXTENSION_VIRTUAL_THREAD_UNMOUNT),
        ) else {
            log::warn("this JVM names no virtual thread mount events: the calls of virtual threads are their carriers'");
            return false;
        };
        // Both or neither: mounts without unmounts would give every carrier's later calls away.
        let both = jvmti
            .set_extension_event(mount, Some(callbacks::virtual_thread_mount))
            .and_then(|()| {
                jvmti.set_extension_event(unmount, Some(callbacks::virtual_thread_unmount))
            });
        if let Err(e) = both {
            let _ = jvmti.set_extension_event(mount, None);
            log::warn(&format!("cannot follow virtual threads: {}", e));
            return false;
        }
        let mut started = true;
        for event in [
            jvmti::EVENT_VIRTUAL_THREAD_START,
            jvmti::EVENT_VIRTUAL_THREAD_END,
        ] {
            if let Err(e) = jvmti.set_event(event, true) {
                log::warn(&format!("enabling JVMTI event {} failed: {}", event, e));
                started &= event != jvmti::EVENT_VIRTUAL_THREAD_START;
            }
        }
        started
    }

    /// Whether a burst records anything: to the file, or to a user trace library.
    #[inline]
    pub fn capturing(&self) -> bool {
        self.hub.is_tracing() || crate::plugin::delivering()
    }

    pub fn uses_bci(&self) -> bool {
        self.options.capture == Capture::Bci && self.options.traces_methods()
    }

    /// Whether classes are registered only when a record needs them (and Thread's subclasses
    /// as they load, for the sleep hooks): an ORCA log alone ([`Options::registers_lazily`]),
    /// or, until its first burst, a JVM that instruments then (`instrument=burst`): that
    /// burst registers every prepared class before it retransforms them (the others as they
    /// are prepared). Describing each class
    /// as it is prepared cost h2's script 6-8% (bench/README.md, run 41).
    pub fn registers_lazily(&self) -> bool {
        self.options.registers_lazily()
            || (self.uses_bci()
                && !self.rewrites_at_load()
                && self.options.without_plugin()
                && !capture::bci::rewriting())
    }

    /// Whether capture=bci rewrites classes as they load from start-up (`instrument=load`),
    /// not from the first burst on.
    pub fn rewrites_at_load(&self) -> bool {
        self.uses_bci() && !self.options.instruments_lazily()
    }

    /// Whether classes are rewritten as they load: capture=bci, or monitors=on (the call sites
    /// of notify, start, join and sleep).
    pub fn uses_hook(&self) -> bool {
        self.uses_bci() || self.options.monitors
    }

    /// The burst flags the options ask for.
    pub fn default_flags(&self) -> BurstFlags {
        BurstFlags {
            methods: self.options.methods,
            gc: self.options.gc,
            alloc: self.options.alloc,
            contention: self.options.monitors,
        }
    }

    /// VMInit: registers the classes loaded so far, binds the Java API, opens the first burst
    /// (unless paused or delayed) and starts the control thread (also for Agent_OnAttach, the
    /// application running meanwhile).
    pub fn vm_init(&'static self, jvmti: Jvmti, jni: Jni<'_>) {
        let classes = Classes {
            jvmti,
            jni,
            registry: &self.registry,
        };
        let lazily = self.registers_lazily();
        crate::classes::with_loaded_classes(jvmti, jni, |loaded| {
            if lazily {
                classes.register_threads(&loaded);
                for &class in &loaded {
                    javaapi::bind_if_api(jvmti, jni, class);
                }
                return;
            }
            for class in loaded {
                let status = jvmti.class_status(class).unwrap_or(0);
                if status & (jvmti::CLASS_STATUS_PREPARED | jvmti::CLASS_STATUS_ARRAY) != 0
                    && status & jvmti::CLASS_STATUS_PRIMITIVE == 0
                {
                    classes.key(class);
                    javaapi::bind_if_api(jvmti, jni, class);
                }
            }
        });
        log::info(&format!(
            "{} classes registered (loaded so far{})",
            self.registry.class_count(),
            if self.options.registers_lazily() {
                ": Object, Thread and its subclasses; others when a stack names them"
            } else if lazily {
                ": Object, Thread and its subclasses; others at the first burst"
            } else {
                ""
            }
        ));
        if self.options.monitors && !self.rewrites_at_load() {
            // Concurrency call sites only: hooked from here on. Enabled at load, the hook made
            // HotSpot fetch the class file of every class its CDS archive maps (h2 1.11x of no
            // agent against 1.04x), for the few start-up classes that call notify.
            if let Err(e) = jvmti.set_event(jvmti::EVENT_CLASS_FILE_LOAD_HOOK, true) {
                log::warn(&format!(
                    "no ClassFileLoadHook ({}): notify, notifyAll and JDK 17's sleep go unseen",
                    e
                ));
            }
        }
        if self.uses_hook() {
            match capture::bci::initialize_trampoline(jni) {
                Ok(()) => {
                    if self.rewrites_at_load() {
                        // The downcalls are made on a thread of their own, beside the
                        // retransformation and the program.
                        capture::bci::prepare_critical(self, jni);
                        capture::bci::retransform_loaded(self, jvmti, jni);
                    }
                    // Unless capture=bci retransformed it already (include= or exclude= may
                    // leave it out).
                    let thread = "java/lang/Thread";
                    if self.options.monitors
                        && !(self.rewrites_at_load() && capture::bci::instruments(self, thread))
                    {
                        capture::sync::hook_thread_class(jvmti, jni);
                    }
                }
                Err(e) => log::warn(&format!("{}; capture=bci and monitors=on trace nothing", e)),
            }
        }
        let _ = jvmti.set_event(jvmti::EVENT_THREAD_START, true);
        let _ = jvmti.set_event(jvmti::EVENT_THREAD_END, true);
        let follows_virtual =
            self.caps.has(cap::SUPPORT_VIRTUAL_THREADS) && self.follow_virtual_threads(jvmti);
        if self.options.monitors {
            // After ThreadStart is on: a thread started from here on is seen starting.
            self.hub
                .quietly(|| capture::owner::init(jvmti, jni, follows_virtual));
        }
        if let Some(command) = jvmti.system_property("sun.java.command") {
            let main = command.split_whitespace().next().unwrap_or("").to_string();
            let _ = self.main_class.set(main);
        }
        self.hub.control(Message::Lifecycle {
            ticks: clock::ticks(),
            death: false,
        });
        if let Some(loaded) = self.plugin {
            if let Err(e) = crate::plugin::start(self, loaded) {
                log::warn(&untraced(&self.options, &e));
            }
        }
        let nowhere = !self.options.writes_file() && !crate::plugin::started();
        if self.options.starts_at_init() && !nowhere {
            if let Err(e) = self.begin_burst(jvmti, None, None) {
                log::warn(&format!("cannot begin the first burst: {}", e));
            }
        }
        let listener = self.listener.lock().take();
        let live = self.live.lock().take();
        let timed = self.options.delay.is_some() || self.options.duration.is_some();
        if listener.is_some() || live.is_some() || timed {
            match control::start(self, listener, live) {
                Ok(handle) => *self.control.lock() = Some(handle),
                Err(e) => log::warn(&format!("cannot start the control thread: {}", e)),
            }
        }
    }

    /// Finishes the trace once: stops recording, writes every partial batch, closes the file.
    pub fn close(&self, why: &str) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        // A burst waiting for its trigger waits no more (a fire from now on opens none).
        self.disarm_burst(self.jvmti);
        control::stop();
        if let Some(handle) = self.control.lock().take() {
            let _ = handle.join();
        }
        if self.uses_bci() && self.bursts.lock().is_open() {
            // Inside the last burst, so that `jlive stats` can tell what was not traced.
            self.hub.stop_and_collect();
            self.hub.control(Message::UserEvent {
                ticks: clock::ticks(),
                text: format!("jlive: capture=bci: {}", self.bci.summary()),
            });
        }
        self.hub.control(Message::Lifecycle {
            ticks: clock::ticks(),
            death: true,
        });
        let _ = self.end_burst(self.jvmti);
        if crate::plugin::started() {
            let _ = crate::plugin::shutdown(self);
        }
        let (done, summary) = crossbeam_channel::bounded::<Summary>(1);
        self.hub.control(Message::Close {
            ticks_per_microsecond: clock::refined_rate(),
            done,
        });
        if self.uses_bci() {
            log::info(&format!("capture=bci: {}", self.bci.summary()));
        }
        if let Some(owners) = capture::owner::summary() {
            log::info(&owners);
        }
        match summary.recv_timeout(CLOSE_TIMEOUT) {
            Ok(s) => {
                log::info(&format!(
                    "{}: wrote {} events, {} bytes, {} threads, {} classes to {}",
                    why,
                    s.events,
                    s.bytes,
                    s.counts.threads,
                    s.counts.classes,
                    self.stats.file()
                ));
                if s.counts.leaf_calls > 0 {
                    log::info(&format!(
                        "{} calls of leaves among them, each entry and exit recorded by one call",
                        s.counts.leaf_calls
                    ));
                }
                if self.hub.dropped() > 0 {
                    log::warn(&format!(
                        "overflow=drop: {} method records were dropped, the writer being behind (each place is marked in the trace)",
                        self.hub.dropped()
                    ));
                }
                // Names are let go as threads end (a server may start millions of virtual
                // threads): what remains are the threads still running.
                log::info(&format!(
                    "{} threads still described at the end",
                    self.registry.thread_count()
                ));
                if let Some(e) = s.error {
                    // Said on stderr once already, when it happened.
                    log::info(&format!(
                        "the trace {} is incomplete: {}",
                        self.stats.file(),
                        e
                    ));
                }
            }
            Err(_) => log::warn(&format!(
                "the writer did not finish {} in time",
                self.stats.file()
            )),
        }
        if let Some(handle) = self.writer.lock().take() {
            let _ = handle.join();
        }
    }
}

/// Says where the thread-locals the trampolines' natives read landed. Outside static TLS
/// (other libraries used up the reserve glibc keeps for dlopen'ed modules) each thread's
/// first record allocates its block through glibc's slow path, which before glibc 2.40 does
/// not keep vector registers as TLS descriptors promise; the tunable gives the reserve back.
fn report_thread_locals() {
    if !cfg!(tls_descriptors) {
        log::info("thread-locals through __tls_get_addr: built without TLS descriptors");
        return;
    }
    match crate::buffer::thread_locals_static() {
        Some(true) => log::info("thread-locals in static TLS"),
        Some(false) => log::warn(
            "libjlive.so's thread-locals are not in static TLS: start the JVM with \
             GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096",
        ),
        None => {}
    }
}

/// The ticks one trampoline record costs the agent: a tick read and an append, measured here
/// over a few thousand rounds (capture=bci stamps each record with it).
fn record_overhead() -> u32 {
    use jlive_writer::record::{Slot, FORM_ENTRY};
    let mut sink: Vec<Slot> = Vec::with_capacity(4096);
    let rounds = 4096u32;
    let start = clock::ticks();
    for k in 0..rounds {
        let t = clock::ticks();
        sink.push(Slot::compact(FORM_ENTRY, t, k, 0));
        std::sync::atomic::fence(Ordering::SeqCst);
    }
    let spent = clock::ticks().saturating_sub(start);
    std::hint::black_box(&sink);
    (spent / u64::from(rounds)).min(u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::channel_batches;

    #[test]
    fn batches_in_flight_are_bounded_in_bytes() {
        assert_eq!(channel_batches(64 << 10), 64);
        assert_eq!(channel_batches(1 << 20), 8);
        // buffer=64m would otherwise allow 4 GiB of batches in the channel
        assert_eq!(channel_batches(64 << 20), 4);
        assert_eq!(channel_batches(4 << 10), 64);
    }
}
