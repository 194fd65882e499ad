//! The session: one traced run, from Agent_OnLoad (or Agent_OnAttach) to VM death. It owns
//! every part below it and is the one place that coordinates them: the runtime (options, JVM,
//! hub, symbols), the capture, the recorder (the burst state), the user trace libraries, the
//! writer thread. Its fields are private; what the entry points, the control socket and the
//! Java API may do is its methods.
//!
//! - `start.rs`: load and attach: capabilities, the writer thread, the JVMTI callbacks;
//! - `lifecycle.rs`: VM init (the first burst, the services) and the orderly close at VM
//!   death (every thread's partial batch written, TraceEnd, header patched);
//! - `events.rs`: the JVMTI events other than method entries and exits (threads, classes,
//!   GC, allocations, frees, monitors, virtual threads);
//! - `calls.rs`: method entries and exits (capture=events' events, capture=bci's natives
//!   past their fast path), where triggers fire and plug-ins are served.

use crate::capture::bci::Native;
use crate::capture::{BurstFlags, Capture};
use crate::plugin::PluginHost;
use crate::recorder::{Action, Recorder, Trigger};
use crate::runtime::Runtime;
use crate::transport::Hub;
use jlive_jvm::jvmti::EventCallbacks;
use jlive_writer::record::BurstScope;
use jlive_writer::writer::WriterStats;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;

mod calls;
mod events;
mod lifecycle;
mod start;

pub use start::{Attached, Start};

/// What the session is handed by the entry points: the functions the JVM calls, for the
/// session to register (it names none of them itself).
pub struct Thunks {
    /// The JVMTI callbacks, with capture=bci's MethodEntry (`true`) or capture=events'.
    pub callbacks: fn(bci: bool) -> EventCallbacks,
    /// The Java API's natives (`jlive.Jlive`), and VA/Java's `InstrumentVMSupport`'s beyond
    /// them.
    pub api: &'static [Native],
    pub vajava: &'static [Native],
    /// The mount and unmount extension events of virtual threads (JDK 21+).
    pub mount: jlive_jvm::jvmti::VirtualThreadFn,
    pub unmount: jlive_jvm::jvmti::VirtualThreadFn,
    /// The writer cannot write (or failed): recording stops and the burst ends.
    pub writer_failed: fn(),
}

/// Something beside the session with a thread of its own: the control socket, its timers
/// and the live visualizer (`control/`). Started once VM init is done, stopped first at VM
/// death.
pub trait Service: Send + Sync {
    fn start(&self, session: &'static Session);
    fn stop(&self);
}

pub struct Session {
    rt: Runtime,
    capture: Capture,
    recorder: Recorder,
    plugins: PluginHost,
    thunks: &'static Thunks,
    /// What the writer has written, for `status` and the visualizer.
    stats: Arc<WriterStats>,
    /// `sun.java.command`'s first word, for `status` and `jlive list`.
    main_class: OnceLock<String>,
    /// Started at VM init, stopped first at close.
    services: Mutex<Vec<Box<dyn Service>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Session {
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    pub fn hub(&self) -> &Hub {
        self.rt.hub()
    }

    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }

    /// The burst flags the options ask for.
    pub fn default_flags(&self) -> BurstFlags {
        BurstFlags::from_options(self.rt.options())
    }

    /// Opens a burst; `flags` None = as the options say. While IBM's visualizer is
    /// connected (`live=`), it alone begins bursts.
    pub fn begin_burst(
        &'static self,
        label: Option<&str>,
        flags: Option<BurstFlags>,
    ) -> Result<String, String> {
        self.open_burst(label, flags, false, BurstScope::default())
    }

    /// [`Session::begin_burst`]; `live`: for the visualizer, which alone may while
    /// connected; `scope` narrows what it writes.
    pub fn open_burst(
        &'static self,
        label: Option<&str>,
        flags: Option<BurstFlags>,
        live: bool,
        scope: BurstScope,
    ) -> Result<String, String> {
        self.recorder
            .open(&self.rt, &self.capture, label, flags, live, scope)
    }

    /// Arms a burst that begins with one of `triggers` (the visualizer's).
    pub fn arm_burst(
        &'static self,
        flags: BurstFlags,
        triggers: Vec<Trigger>,
        scope: BurstScope,
        end_on_exit: bool,
    ) -> Result<String, String> {
        self.recorder
            .arm(&self.rt, &self.capture, flags, triggers, scope, end_on_exit)
    }

    pub fn disarm_burst(&self) -> bool {
        self.recorder.disarm(&self.rt, &self.capture)
    }

    pub fn take_fired(&self) -> Option<Action> {
        self.recorder.take_fired(&self.capture)
    }

    pub fn end_burst(&self) -> Result<String, String> {
        self.recorder.end(&self.rt, &self.capture)
    }

    pub fn mark(&self, text: &str) -> Result<String, String> {
        self.recorder.mark(&self.rt, &self.capture, text)
    }

    /// A USER_EVENT recorded on the calling Java thread (the Java API).
    pub fn thread_event(&self, text: String) -> bool {
        self.recorder.thread_event(&self.rt, &self.capture, text)
    }

    /// Finishes the current file and continues in the next one (`%n`).
    pub fn roll(&self) -> Result<String, String> {
        if self.recorder.driven() {
            return Err("the JinsightLive visualizer is connected: the trace streams to it".into());
        }
        self.recorder.roll(&self.rt, None)
    }

    /// Streams the trace to the visualizer (`Some`), or back to a file.
    pub fn roll_into(&self, live: Option<std::net::TcpStream>) -> Result<String, String> {
        self.recorder.roll(&self.rt, live)
    }

    pub fn flush(&self) -> Result<String, String> {
        self.recorder.flush(&self.rt)
    }

    /// Hands the trigger's thread's records (`all`: every thread's) over to the writer now.
    pub fn hand_over(&self, all: bool) {
        self.recorder.hand_over(&self.rt, all)
    }

    /// The visualizer waits for an END_BURST: an empty burst that says why there is none.
    pub fn no_burst(&self, why: &str) {
        self.recorder.no_burst(&self.rt, &self.capture, why)
    }

    /// One line: state, bursts, events and bytes written, drops, threads, file.
    pub fn status(&self) -> String {
        let state = self.recorder.state();
        let (s, hub) = (&self.stats, self.rt.hub());
        let mut line = format!(
            "state={} bursts={} events={} bytes={} dropped={} threads={} file={} pid={} main={}",
            match (state.is_open(), state.is_armed()) {
                (true, _) => "tracing",
                (false, true) => "armed",
                _ => "paused",
            },
            state.count(),
            s.events.load(Ordering::Relaxed),
            s.bytes.load(Ordering::Relaxed),
            hub.dropped(),
            hub.threads(),
            s.file(),
            std::process::id(),
            self.main_class.get().map(String::as_str).unwrap_or("?"),
        );
        if self.capture.uses_bci() {
            let b = &self.capture.bci().stats;
            line.push_str(&format!(
                " instrumented_classes={} unchanged_classes={} instrumented_methods={} padded_methods={} untraced_natives={}",
                b.classes.load(Ordering::Relaxed),
                b.untouched.load(Ordering::Relaxed),
                b.methods.load(Ordering::Relaxed),
                b.padded.load(Ordering::Relaxed),
                b.native.load(Ordering::Relaxed)
            ));
        }
        // What jlive holds that could grow with a long run.
        line.push_str(&format!(
            " buffered_bytes={} described_threads={} writer_objects={} writer_threads={}",
            hub.buffered_bytes(),
            self.rt.symbols().thread_count(),
            s.objects.load(Ordering::Relaxed),
            s.thread_states.load(Ordering::Relaxed)
        ));
        if let Some(e) = s.error() {
            line.push_str(&format!(" error={:?}", e));
        }
        line
    }

    /// `instrument=burst`: rewrites the classes loaded so far ahead of a timed burst (nothing
    /// otherwise).
    pub fn instrument_now(&'static self) {
        self.capture.bci().instrument_now(&self.rt);
    }

    /// `tracingStartup(name)`: finds, opens and starts a user trace library.
    pub fn plugin_startup(&'static self, name: &str) -> Result<String, String> {
        self.plugins.startup(&self.rt, name)
    }

    /// `reportObjectReferences()`, on the calling thread.
    pub fn report_references(&'static self, jni: jlive_jvm::jni::Jni<'_>) -> Result<u64, String> {
        self.plugins.report_references(&self.rt, jni)
    }

    /// `tracingShutdown()`.
    pub fn plugin_shutdown(&self) -> Result<String, String> {
        self.plugins
            .shutdown(&self.rt, &self.recorder, &self.capture)
    }

    /// The writer cannot write (or failed): recording stops at once, and the open burst is
    /// ended on a thread of its own (ending it sends to the writer, and needs JVMTI).
    pub fn stop_recording(&'static self) {
        self.rt.hub().stop();
        let ended = std::thread::Builder::new()
            .name("jlive-stop".into())
            .spawn(move || {
                crate::transport::mark_agent_thread();
                if self.rt.closing() {
                    return;
                }
                let Some(attached) = self.rt.vm().attach_daemon(c"jlive stop") else {
                    return;
                };
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.end_burst()));
                drop(attached);
            });
        if ended.is_err() {
            crate::log::warn(
                "cannot end the burst: recording is stopped, but the JVM's events stay on",
            );
        }
    }
}
