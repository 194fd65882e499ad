//! Load and attach: the options become capabilities, a writer thread on the first file, the
//! JVMTI callbacks and events; a JVM attached to does at once what VMStart and VMInit do for
//! an agent loaded at start-up.

use super::{Service, Session, Thunks};
use crate::capture::Capture;
use crate::clock;
use crate::log;
use crate::options::{Capture as Kind, Clock, Gc, Methods, Options};
use crate::plugin::PluginHost;
use crate::recorder::Recorder;
use crate::runtime::{Parts, Runtime};
use crate::symbols::Registry;
use crate::transport::Hub;
use jlive_jvm::jni::Vm;
use jlive_jvm::jvmti::{self, cap, Capabilities, Jvmti};
use jlive_writer::filter::ClassFilter;
use jlive_writer::model::TraceInfo;
use jlive_writer::record::{Message, Symbols};
use jlive_writer::resolve::{Resolver, ResolverConfig};
use jlive_writer::sinks::{with_sink, FormatOptions, OpenSink, WithSink};
use jlive_writer::stck::Stck;
use jlive_writer::writer::{self, WriterStats};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Instant;

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
    /// What the writer calls when it cannot write.
    failed: fn(),
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
            failed,
        } = self;
        let session = files
            .open::<S>(&path, rate)
            .map_err(|e| format!("cannot create trace file {}: {}", path, e))?;
        std::thread::Builder::new()
            .name("jlive-writer".into())
            .spawn(move || {
                jlive_jvm::os::lower_thread_priority(WRITER_NICE);
                let mut reopen =
                    |path: &str| files.open::<S>(path, clock::refined_rate().unwrap_or(rate));
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    writer::run(
                        session,
                        inbox.clone(),
                        pool.clone(),
                        &|m| log::warn(m),
                        &failed,
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
                    failed();
                    writer::drain(&inbox, &pool, &error);
                }
            })
            .map_err(|e| format!("cannot start the writer thread: {}", e))
    }
}

/// What a session starts from.
pub struct Start<'a> {
    pub vm: Vm,
    pub jvmti: Jvmti,
    pub options: Options,
    /// The option string as given.
    pub text: &'a str,
    /// Loaded into a running JVM (Agent_OnAttach).
    pub attached: bool,
    /// The entry points' functions.
    pub thunks: &'static Thunks,
    /// The control socket and the visualizer's port, bound.
    pub services: Vec<Box<dyn Service>>,
}

/// What Agent_OnAttach did.
pub enum Attached {
    Started,
    /// jlive was loaded already (at start-up or by an earlier attach): nothing changed.
    AlreadyLoaded,
}

impl Session {
    /// A session for the JVM of `jvmti` (whose capabilities it adds, and which it disposes
    /// of if it fails): the writer thread runs on the first file, the control socket and the
    /// visualizer's port are bound (`services`), nothing is recorded yet. Ok, or the one line
    /// to print before the JVM is told no.
    pub fn new(start: Start<'_>) -> Result<Session, String> {
        let jvmti = start.jvmti;
        let made = Session::make(start);
        if made.is_err() {
            // Its capabilities, prefix and sampling interval go with it: the next try (or
            // another agent) finds the JVM as it was.
            // SAFETY: the partly made session, which held the only other copies, is gone.
            unsafe { jvmti.dispose() };
        }
        made
    }

    /// Registers the JVMTI callbacks the entry points gave and enables the events every
    /// run needs from the start (the session is in its place: callbacks may come at once).
    pub fn set_callbacks(&self) -> Result<(), String> {
        let cb = (self.thunks.callbacks)(self.capture.uses_bci());
        let jvmti = self.rt.jvmti();
        // SAFETY: the entry points' table: each function takes its event's arguments (jvmti.h)
        // and catches its own panics.
        unsafe { jvmti.set_event_callbacks(&cb) }
            .map_err(|e| format!("SetEventCallbacks failed: {}", e))?;
        let mut events = vec![
            jvmti::EVENT_VM_INIT,
            jvmti::EVENT_VM_DEATH,
            jvmti::EVENT_CLASS_PREPARE,
        ];
        let o = self.rt.options();
        if o.uses_hook() {
            events.push(jvmti::EVENT_VM_START);
        }
        // capture=bci instruments from the start (unless at the first burst); concurrency
        // hooks alone from VM init.
        if o.rewrites_at_load() {
            events.push(jvmti::EVENT_CLASS_FILE_LOAD_HOOK);
        }
        for event in events {
            jvmti
                .set_event(event, true)
                .map_err(|e| format!("enabling JVMTI event {} failed: {}", event, e))?;
        }
        Ok(())
    }

    fn make(start: Start<'_>) -> Result<Session, String> {
        let Start {
            vm,
            jvmti,
            options,
            text,
            attached,
            thunks,
            services,
        } = start;
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
                host: jlive_jvm::os::hostname(),
                // The file says how the run was traced, but not the control socket's secret.
                options: crate::options::redacted(text),
                ..TraceInfo::default()
            },
            stck,
            symbols: registry.clone(),
        };
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
            failed: thunks.writer_failed,
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
        let bci = options.uses_bci();
        let overhead = bci.then(record_overhead);
        let hub = Hub::new(messages, pool_in, options.buffer, overhead);
        if options.drop_when_behind {
            hub.drop_when_behind();
        }
        // Its entry points are checked now; a library that lacks one is a line, and the JVM runs
        // without it.
        let plugins = PluginHost::new(options.plugin.as_deref(), |e| untraced(&options, e));
        if bci {
            registry.use_bci();
            report_thread_locals();
        }
        let capture = Capture::new(&options);
        let rt = Runtime::new(Parts {
            options,
            jvmti,
            vm,
            caps,
            hub,
            symbols: registry,
            loaded,
            start_epoch,
        });
        Ok(Session {
            rt,
            capture,
            recorder: Recorder::default(),
            plugins,
            thunks,
            stats,
            main_class: OnceLock::new(),
            services: Mutex::new(services),
            writer: Mutex::new(Some(writer)),
        })
    }
}

/// The line for a plug-in that cannot be used.
pub(super) fn untraced(o: &Options, why: &str) -> String {
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
    if attached && o.capture == Kind::Events {
        return Err("capture=events needs JVMTI method entry and exit events, which a running JVM gives only to agents loaded at start-up (-agentpath): attached, jlive traces with capture=bci (the default of jlive attach)".into());
    }

    if o.capture == Kind::Events && o.traces_methods() {
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
    if o.objects && o.capture == Kind::Events {
        need.push((cap::ACCESS_LOCAL_VARIABLES, "can_access_local_variables"));
    }
    if o.monitors {
        need.push((cap::GENERATE_MONITOR_EVENTS, "can_generate_monitor_events"));
        need.push((cap::GET_MONITOR_INFO, "can_get_monitor_info"));
    }
    if (o.capture == Kind::Bci && o.traces_methods()) || o.monitors {
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
    if o.capture == Kind::Bci && o.traces_methods() && potential.has(cap::SET_NATIVE_METHOD_PREFIX)
    {
        wanted.set(cap::SET_NATIVE_METHOD_PREFIX);
    }
    // capture=bci switches MethodEntry on and off as bursts begin and end, only for the
    // deoptimization that comes with it (capture::bci::drop_hoisted_gates). With it HotSpot's
    // interpreter also checks at every call whether the thread reports method events.
    if o.capture == Kind::Bci && o.traces_methods() {
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
    if o.values && o.capture != Kind::Events {
        log::warn("values=on: the visualizer's argument and field value filters need capture=events; under capture=bci (the default) they record nothing");
    }
    if o.live.is_some() {
        let locals = (o.values && o.capture == Kind::Events).then_some(cap::ACCESS_LOCAL_VARIABLES);
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

/// Says where the thread-locals the trampolines' natives read landed. Outside static TLS
/// (other libraries used up the reserve glibc keeps for dlopen'ed modules) each thread's
/// first record allocates its block through glibc's slow path, which before glibc 2.40 does
/// not keep vector registers as TLS descriptors promise; the tunable gives the reserve back.
fn report_thread_locals() {
    if !cfg!(tls_descriptors) {
        log::info("thread-locals through __tls_get_addr: built without TLS descriptors");
        return;
    }
    match crate::transport::thread_locals_static() {
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
