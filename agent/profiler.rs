//! The profiler's lifetime: options to capabilities and callbacks at load, the writer thread,
//! the burst at VM init, and the orderly close at VM death (every thread's partial batch
//! written, TraceEnd, header patched) before the JVM goes on exiting.

use crate::buffer::Hub;
use crate::callbacks;
use crate::capture;
use crate::classes::Classes;
use crate::clock;
use crate::ffi::jni::Jni;
use crate::ffi::jvmti::{self, cap, Capabilities, EventCallbacks, Jvmti};
use crate::log;
use crate::options::{Gc, Methods, Options};
use crate::registry::Registry;
use jlive_writer::filter::ClassFilter;
use jlive_writer::jinsight::{self, Encoder, Header};
use jlive_writer::record::{Message, Symbols};
use jlive_writer::session::{Session, SessionConfig};
use jlive_writer::writer::{self, Summary};
use parking_lot::Mutex;
use std::fs::File;
use std::io::BufWriter;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

/// Batches in flight between JVM threads and the writer before producers wait.
const CHANNEL_BATCHES: usize = 64;
/// How long VM death waits for the writer to finish the file.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Profiler {
    pub options: Options,
    pub registry: Arc<Registry>,
    pub hub: Hub,
    pub next_object: AtomicU32,
    pub path: String,
    jvmti: Jvmti,
    writer: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
}

static PROFILER: OnceLock<Profiler> = OnceLock::new();

/// The running profiler, once loaded.
#[inline(always)]
pub fn get() -> Option<&'static Profiler> {
    PROFILER.get()
}

/// Agent_OnLoad / JVM_OnLoad: Ok, or the one line to print before returning JNI_ERR.
pub fn load(vm: *mut jni_sys::JavaVM, text: &str) -> Result<(), String> {
    let options = Options::parse(text).map_err(|e| e.0)?;
    if options.help {
        print!("{}", crate::options::help_text());
        std::process::exit(0);
    }
    if let Some(path) = &options.log {
        log::to_file(path).map_err(|e| format!("cannot open log file {}: {}", path, e))?;
    }
    if PROFILER.get().is_some() {
        return Err("libjlive.so is loaded twice; give it once".into());
    }
    let jvmti = Jvmti::from_vm(vm).ok_or("this JVM offers no JVMTI 1.2 environment")?;
    add_capabilities(jvmti, &options)?;
    if options.alloc {
        // Now, before any Java thread exists: each thread's sampler starts at "every
        // allocation" instead of a first sample after 512 KiB.
        jvmti
            .set_heap_sampling_interval(0)
            .map_err(|e| format!("cannot sample every allocation (alloc=on): {}", e))?;
    }
    let (source, rate) = clock::start(options.tsc);
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let path = options.file_path(std::process::id(), start);
    let file =
        File::create(&path).map_err(|e| format!("cannot create trace file {}: {}", path, e))?;
    let header = Header {
        version: jinsight::VERSION,
        platform: options.platform.unwrap_or_else(jinsight::native_platform),
        max_threads: 256,
        max_classes: 65536 - 20000,
        ticks_per_microsecond: rate,
        start_ticks: clock::ticks(),
        vm_start_time: start as u32,
        connection_start_time: start as u32,
        ..Header::default()
    };
    let encoder = Encoder::new(BufWriter::with_capacity(1 << 20, file), &header)
        .map_err(|e| format!("cannot write trace file {}: {}", path, e))?;
    let registry = Arc::new(Registry::new());
    let (messages, inbox) = crossbeam_channel::bounded(CHANNEL_BATCHES);
    let (pool_out, pool_in) = crossbeam_channel::bounded(CHANNEL_BATCHES);
    let config = SessionConfig {
        filter: ClassFilter::new(&options.include, &options.exclude),
        entries_only: options.methods == Methods::Entry,
    };
    let symbols: Arc<dyn Symbols> = registry.clone();
    let session = Session::new(encoder, symbols, config);
    let writer = std::thread::Builder::new()
        .name("jlive-writer".into())
        .spawn(move || {
            writer::run(session, inbox, pool_out, &|m| log::warn(m));
        })
        .map_err(|e| format!("cannot start the writer thread: {}", e))?;
    log::info(&format!(
        "tracing to {} (clock {:?}, {} ticks/us)",
        path, source, rate
    ));
    let hub = Hub::new(messages, pool_in, options.buffer);
    let profiler = Profiler {
        options,
        registry,
        hub,
        next_object: AtomicU32::new(1),
        path,
        jvmti,
        writer: Mutex::new(Some(writer)),
        closed: AtomicBool::new(false),
    };
    if PROFILER.set(profiler).is_err() {
        return Err("libjlive.so is loaded twice; give it once".into());
    }
    let p = get().ok_or("profiler state lost")?;
    p.set_callbacks()?;
    Ok(())
}

fn add_capabilities(jvmti: Jvmti, o: &Options) -> Result<(), String> {
    let mut wanted = Capabilities::default();
    let mut need = vec![
        (cap::TAG_OBJECTS, "can_tag_objects"),
        (
            cap::MAINTAIN_ORIGINAL_METHOD_ORDER,
            "can_maintain_original_method_order",
        ),
    ];
    if o.methods != Methods::Off {
        need.push((
            cap::GENERATE_METHOD_ENTRY_EVENTS,
            "can_generate_method_entry_events",
        ));
        if o.methods == Methods::On {
            need.push((
                cap::GENERATE_METHOD_EXIT_EVENTS,
                "can_generate_method_exit_events",
            ));
        }
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
    if o.objects {
        need.push((cap::ACCESS_LOCAL_VARIABLES, "can_access_local_variables"));
    }
    let potential = jvmti
        .potential_capabilities()
        .map_err(|e| format!("GetPotentialCapabilities failed: {}", e))?;
    for (bit, name) in need {
        if !potential.has(bit) {
            return Err(format!(
                "this JVM cannot give the capability {} that the options ask for",
                name
            ));
        }
        wanted.set(bit);
    }
    if potential.has(cap::GET_SOURCE_FILE_NAME) {
        wanted.set(cap::GET_SOURCE_FILE_NAME);
    }
    jvmti
        .add_capabilities(&wanted)
        .map_err(|e| format!("AddCapabilities failed: {}", e))
}

impl Profiler {
    fn set_callbacks(&self) -> Result<(), String> {
        let mut cb = EventCallbacks::default();
        cb.base.VMInit = Some(callbacks::vm_init);
        cb.base.VMDeath = Some(callbacks::vm_death);
        cb.base.ThreadStart = Some(callbacks::thread_start);
        cb.base.ThreadEnd = Some(callbacks::thread_end);
        cb.base.ClassPrepare = Some(callbacks::class_prepare);
        cb.base.MethodEntry = Some(capture::events::method_entry);
        cb.base.MethodExit = Some(capture::events::method_exit);
        cb.base.GarbageCollectionStart = Some(callbacks::gc_start);
        cb.base.GarbageCollectionFinish = Some(callbacks::gc_finish);
        cb.base.ObjectFree = Some(callbacks::object_free);
        cb.base.VMObjectAlloc = Some(callbacks::object_alloc);
        cb.sampled_object_alloc = Some(callbacks::object_alloc);
        self.jvmti
            .set_event_callbacks(&cb)
            .map_err(|e| format!("SetEventCallbacks failed: {}", e))?;
        for event in [
            jvmti::EVENT_VM_INIT,
            jvmti::EVENT_VM_DEATH,
            jvmti::EVENT_CLASS_PREPARE,
        ] {
            self.jvmti
                .set_event(event, true)
                .map_err(|e| format!("enabling JVMTI event {} failed: {}", event, e))?;
        }
        Ok(())
    }

    /// The JVMTI events the options ask for once the VM is up.
    fn traced_events(&self) -> Vec<u32> {
        let o = &self.options;
        let mut events = vec![jvmti::EVENT_THREAD_START, jvmti::EVENT_THREAD_END];
        if o.methods != Methods::Off {
            events.push(jvmti::EVENT_METHOD_ENTRY);
        }
        if o.methods == Methods::On {
            events.push(jvmti::EVENT_METHOD_EXIT);
        }
        if o.gc != Gc::Off {
            events.extend([
                jvmti::EVENT_GARBAGE_COLLECTION_START,
                jvmti::EVENT_GARBAGE_COLLECTION_FINISH,
            ]);
        }
        if o.gc == Gc::On {
            events.push(jvmti::EVENT_OBJECT_FREE);
        }
        if o.alloc {
            events.extend([
                jvmti::EVENT_SAMPLED_OBJECT_ALLOC,
                jvmti::EVENT_VM_OBJECT_ALLOC,
            ]);
        }
        events
    }

    /// VMInit: registers the classes loaded so far, opens the burst, enables the events.
    pub fn vm_init(&'static self, jvmti: Jvmti, jni: Jni<'_>) {
        let classes = Classes {
            jvmti,
            jni,
            registry: &self.registry,
        };
        for class in jvmti.loaded_classes().unwrap_or_default() {
            let status = jvmti.class_status(class).unwrap_or(0);
            if status & (jvmti::CLASS_STATUS_PREPARED | jvmti::CLASS_STATUS_ARRAY) != 0
                && status & jvmti::CLASS_STATUS_PRIMITIVE == 0
            {
                classes.key(class);
            }
        }
        log::info(&format!(
            "{} classes registered at VM init",
            self.registry.class_count()
        ));
        self.hub.control(Message::BurstBegin {
            ticks: clock::ticks(),
        });
        self.hub.start();
        for event in self.traced_events() {
            if let Err(e) = jvmti.set_event(event, true) {
                log::warn(&format!("enabling JVMTI event {} failed: {}", event, e));
            }
        }
        if self.options.alloc {
            // Retires every thread's TLAB, so that the next allocation of each thread takes
            // the sampler's slow path; from then on every allocation is sampled.
            if let Err(e) = jvmti.force_garbage_collection() {
                log::warn(&format!(
                    "allocations before the first TLAB refill may be missed: {}",
                    e
                ));
            }
        }
    }

    /// Finishes the trace once: stops recording, writes every partial batch, closes the file.
    pub fn close(&self, why: &str) {
        if self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        for event in self.traced_events() {
            let _ = self.jvmti.set_event(event, false);
        }
        self.hub.stop_and_collect();
        self.hub.control(Message::BurstEnd {
            ticks: clock::ticks(),
        });
        let (done, summary) = crossbeam_channel::bounded::<Summary>(1);
        self.hub.control(Message::Close {
            ticks_per_microsecond: clock::refined_rate(),
            done,
        });
        match summary.recv_timeout(CLOSE_TIMEOUT) {
            Ok(s) => {
                log::info(&format!(
                    "{}: wrote {} events, {} bytes, {} threads, {} classes to {}",
                    why, s.events, s.bytes, s.counts.threads, s.counts.classes, self.path
                ));
                if let Some(e) = s.error {
                    log::warn(&format!("the trace {} is incomplete: {}", self.path, e));
                }
            }
            Err(_) => log::warn(&format!("the writer did not finish {} in time", self.path)),
        }
        if let Some(handle) = self.writer.lock().take() {
            let _ = handle.join();
        }
    }
}
