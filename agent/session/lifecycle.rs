//! VM init (also for Agent_OnAttach, the application running meanwhile): the classes loaded
//! so far registered, the Java API bound, the trampolines ready, the first burst opened
//! (unless paused or delayed), the services started. VM death: the orderly close.

use super::{start::untraced, Session};
use crate::capture::{owner, sync};
use crate::clock;
use crate::log;
use crate::symbols::with_loaded_classes;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{self, cap, Jvmti};
use jlive_jvm::refs::Class;
use jlive_writer::record::{Message, Summary};
use std::time::Duration;

/// How long VM death waits for the writer to finish the file.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(60);

/// The classes that carry the Java API, by JVM signature: `jlive.Jlive`, and VA/Java's
/// `InstrumentVMSupport` (with three natives more).
const API_CLASSES: &[&str] = &[
    "Ljlive/Jlive;",
    "Lcom/ibm/uvm/instrumenting/InstrumentVMSupport;",
];

impl Session {
    /// Whether classes are registered only when a record needs them (and Thread's
    /// subclasses as they load, for the sleep hooks): an ORCA log alone
    /// (`Options::registers_lazily`), or, until its first burst, a JVM that instruments then
    /// (`instrument=burst`): that burst registers every prepared class before it
    /// retransforms them (the others as they are prepared). Describing each class as it is
    /// prepared cost h2's script 6-8% (docs/performance.md).
    pub(super) fn registers_lazily(&self) -> bool {
        let o = self.rt.options();
        o.registers_lazily()
            || (o.uses_bci()
                && !o.rewrites_at_load()
                && o.without_plugin()
                && !self.capture.bci().rewriting())
    }

    /// Binds the Java API's natives if `class` is one of its classes, and sets its `bound`
    /// flag (without jlive the flag stays false and the API does nothing).
    pub(super) fn bind_if_api(&self, jvmti: Jvmti, jni: Jni<'_>, class: &Class<'_>) {
        let Ok(signature) = jvmti.class_signature(class) else {
            return;
        };
        if !API_CLASSES.contains(&signature.as_str()) {
            return;
        }
        let mut all = self.thunks.api.to_vec();
        if signature == API_CLASSES[1] {
            all.extend_from_slice(self.thunks.vajava);
        }
        if jni.register_natives(class, &all) {
            jni.set_static_boolean(class, c"bound", true);
        } else {
            log::warn(&format!("cannot bind the natives of {}", signature));
        }
    }

    /// VMInit (or attach), once the JVM runs.
    pub fn vm_init(&'static self, jni: Jni<'_>) {
        let jvmti = self.rt.jvmti();
        self.register_loaded(jvmti, jni);
        let o = self.rt.options();
        if o.monitors && !o.rewrites_at_load() {
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
        if o.uses_hook() {
            self.ready_trampolines(jvmti, jni);
        }
        let _ = jvmti.set_event(jvmti::EVENT_THREAD_START, true);
        let _ = jvmti.set_event(jvmti::EVENT_THREAD_END, true);
        let follows_virtual =
            self.rt.caps().has(cap::SUPPORT_VIRTUAL_THREADS) && self.follow_virtual_threads(jvmti);
        if o.monitors {
            // After ThreadStart is on: a thread started from here on is seen starting.
            self.rt
                .hub()
                .quietly(|| owner::init(&self.capture, jvmti, jni, follows_virtual));
        }
        if let Some(command) = jvmti.system_property("sun.java.command") {
            let main = command.split_whitespace().next().unwrap_or("").to_string();
            let _ = self.main_class.set(main);
        }
        self.rt.hub().control(Message::Lifecycle {
            ticks: clock::ticks(),
            death: false,
        });
        self.capture.subscribe(&self.plugins);
        if let Some(loaded) = self.plugins.at_load() {
            if let Err(e) = self.plugins.start(&self.rt, loaded) {
                log::warn(&untraced(o, &e));
            }
        }
        let nowhere = !o.writes_file() && !self.plugins.started();
        if o.starts_at_init() && !nowhere {
            if let Err(e) = self.begin_burst(None, None) {
                log::warn(&format!("cannot begin the first burst: {}", e));
            }
        }
        for service in self.services.lock().iter() {
            service.start(self);
        }
    }

    /// Registers the classes loaded so far (all of them, or only Object, Thread and its
    /// subclasses when registering lazily) and binds the Java API among them.
    fn register_loaded(&self, jvmti: Jvmti, jni: Jni<'_>) {
        let lazily = self.registers_lazily();
        with_loaded_classes(jvmti, jni, |jni, loaded| {
            let classes = self.rt.classes(jvmti, jni);
            if lazily {
                classes.register_threads(&loaded);
                for class in &loaded {
                    self.bind_if_api(jvmti, jni, class);
                }
                return;
            }
            for class in &loaded {
                let status = jvmti.class_status(class).unwrap_or(0);
                if status & (jvmti::CLASS_STATUS_PREPARED | jvmti::CLASS_STATUS_ARRAY) != 0
                    && status & jvmti::CLASS_STATUS_PRIMITIVE == 0
                {
                    classes.key(class);
                    self.bind_if_api(jvmti, jni, class);
                }
            }
        });
        log::info(&format!(
            "{} classes registered (loaded so far{})",
            self.rt.symbols().class_count(),
            if self.rt.options().registers_lazily() {
                ": Object, Thread and its subclasses; others when a stack names them"
            } else if lazily {
                ": Object, Thread and its subclasses; others at the first burst"
            } else {
                ""
            }
        ));
    }

    /// capture=bci or monitors=on: the trampolines bound, and under `instrument=load` the
    /// classes loaded so far retransformed; java/lang/Thread hooked for monitors=on.
    fn ready_trampolines(&'static self, jvmti: Jvmti, jni: Jni<'_>) {
        let (o, bci) = (self.rt.options(), self.capture.bci());
        if let Err(e) = bci.initialize_trampoline(jni) {
            log::warn(&format!("{}; capture=bci and monitors=on trace nothing", e));
            return;
        }
        if o.rewrites_at_load() {
            // The downcalls are made on a thread of their own, beside the retransformation
            // and the program.
            bci.prepare_critical(&self.rt, jni);
            bci.retransform_loaded(&self.rt, jvmti, jni);
        }
        // Unless capture=bci retransformed it already (include= or exclude= may leave it out).
        let thread = "java/lang/Thread";
        if o.monitors && !(o.rewrites_at_load() && bci.instruments(&self.rt, thread)) {
            sync::hook_thread_class(jvmti, jni);
        }
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
        // SAFETY: these are HotSpot's VirtualThreadMount and VirtualThreadUnmount (found by
        // name above), whose callbacks take a thread event's arguments, as the entry points'
        // functions do (and catch their own panics).
        let both = unsafe {
            jvmti
                .set_extension_event(mount, Some(self.thunks.mount))
                .and_then(|()| jvmti.set_extension_event(unmount, Some(self.thunks.unmount)))
        };
        if let Err(e) = both {
            // SAFETY: clearing a callback.
            let _ = unsafe { jvmti.set_extension_event(mount, None) };
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

    /// Agent_OnAttach, the session in its place: what VMStart and VMInit do for an agent
    /// loaded at start-up, at once.
    pub fn attached(&'static self) {
        let vm = self.rt.vm();
        let initialized = vm.with_env(|jni| {
            let frame = jni.local_frame(16);
            let jni = frame.jni();
            if self.rt.options().uses_hook() {
                let bci = self.capture.bci();
                let defined = crate::capture::Bci::define_trampoline(jni)
                    .and_then(|_| bci.initialize_attached_trampoline(jni));
                if let Err(e) = defined {
                    log::warn(&format!("{}; capture=bci traces nothing", e));
                }
            }
            self.vm_init(jni);
        });
        if initialized.is_none() {
            log::warn(
                "attached, but no JNI environment on the attaching thread: nothing is traced",
            );
        }
    }

    /// Finishes the trace once: stops recording, writes every partial batch, closes the
    /// file.
    pub fn close(&self, why: &str) {
        if !self.rt.close() {
            return;
        }
        // A burst waiting for its trigger waits no more (a fire from now on opens none).
        self.disarm_burst();
        for service in self.services.lock().iter() {
            service.stop();
        }
        let hub = self.rt.hub();
        let summary = self.capture.methods().summary();
        if let (Some(summary), true) = (&summary, self.recorder.is_open()) {
            // Inside the last burst, so that `jlive stats` can tell what was not traced.
            hub.stop_and_collect();
            hub.control(Message::UserEvent {
                ticks: clock::ticks(),
                text: format!("jlive: capture=bci: {}", summary),
            });
        }
        hub.control(Message::Lifecycle {
            ticks: clock::ticks(),
            death: true,
        });
        let _ = self.end_burst();
        if self.plugins.started() {
            let _ = self.plugin_shutdown();
        }
        let (done, written) = crossbeam_channel::bounded::<Summary>(1);
        hub.control(Message::Close {
            ticks_per_microsecond: clock::refined_rate(),
            done,
        });
        if let Some(summary) = summary {
            log::info(&format!("capture=bci: {}", summary));
        }
        if let Some(owners) = self.capture.owners().and_then(|o| o.summary()) {
            log::info(&owners);
        }
        match written.recv_timeout(CLOSE_TIMEOUT) {
            Ok(s) => self.log_written(why, s),
            Err(_) => log::warn(&format!(
                "the writer did not finish {} in time",
                self.stats.file()
            )),
        }
        if let Some(handle) = self.writer.lock().take() {
            let _ = handle.join();
        }
    }

    /// What the writer wrote, for the log.
    fn log_written(&self, why: &str, s: Summary) {
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
        let dropped = self.rt.hub().dropped();
        if dropped > 0 {
            log::warn(&format!(
                "overflow=drop: {} method records were dropped, the writer being behind (each place is marked in the trace)",
                dropped
            ));
        }
        // Names are let go as threads end (a server may start millions of virtual threads):
        // what remains are the threads still running.
        log::info(&format!(
            "{} threads still described at the end",
            self.rt.symbols().thread_count()
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
}
