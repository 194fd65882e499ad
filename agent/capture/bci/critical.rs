//! FFM critical downcalls (JDK 22 and later): unless `trampolines=jni`, classes are
//! instrumented to call JliveTrampoline's critical trampolines, whose downcalls reach the
//! fast paths (`natives.rs`) without a JNI transition, once a thread of jlive's has made them
//! and checked that they run no instrumented code (the probe, which MethodEntry reports to
//! [`Bci::probed`]).

use super::{excluded_with, Bci};
use crate::clock;
use crate::log;
use crate::runtime::Runtime;
use crate::symbols::internal_name;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{self, cap};
use jlive_jvm::refs::{GlobalClass, MethodId};
use std::sync::atomic::Ordering;

impl Bci {
    /// Before the hook begins to rewrite (VM init under `instrument=load`, the first burst under
    /// `instrument=burst`): unless `trampolines=jni`, classes are instrumented from now on to
    /// call JliveTrampoline's critical trampolines, and a thread of jlive's has it make its FFM
    /// critical downcalls, so that they reach libjlive without the JNI transition (on an Intel
    /// Xeon a JNI call was most of a traced call: bench/README.md). Making them loads some 350
    /// classes of the FFM implementation (100-180 ms): the application goes on meanwhile, its
    /// calls reaching the JNI natives through the same trampolines until the downcalls are made
    /// and checked. JDKs before 22 have none, and keep the JNI natives. The thread starts once
    /// the intrinsic candidates are known ([`start_critical`], from [`retransform_loaded`]), so
    /// that the classes it loads wrap their calls.
    pub fn prepare_critical(&self, p: &Runtime, jni: Jni<'_>) {
        let o = p.options();
        if !o.uses_bci() || self.critical.load(Ordering::SeqCst) || p.closing() {
            return;
        }
        if o.jni_only {
            log::info("trampolines: JNI natives (trampolines=jni)");
            return;
        }
        // The downcalls' fast path reads the TSC, and leaves a plug-in's records to the JNI
        // natives: without the one or with the other, every call would pay both.
        if clock::tsc().is_none() || o.plugin.is_some() {
            log::info("trampolines: JNI natives (no TSC clock, or a user trace library)");
            return;
        }
        if self.bound.get().is_none() {
            return;
        }
        // JDK 22's java.lang.foreign (JDK 21's preview has no critical(boolean)).
        let option = c"java/lang/foreign/Linker$Option";
        if !jni.initialize_class(option, c"critical", c"(Z)Ljava/lang/foreign/Linker$Option;") {
            log::info("trampolines: JNI natives (this JDK has no FFM critical downcalls)");
            return;
        }
        if !self.critical.swap(true, Ordering::SeqCst) {
            self.critical_pending.store(true, Ordering::SeqCst);
        }
    }

    /// Starts the thread that makes the downcalls, if [`prepare_critical`] chose them, not once
    /// the JVM is closing. VM death does not wait for it: a daemon thread of the JVM's, it stops
    /// where it is when the JVM goes (as the JDK's own daemon threads do), and a program shorter
    /// than the downcalls' making ends as soon as it would without them.
    pub(super) fn start_critical(&'static self, p: &'static Runtime) {
        if !self.critical_pending.swap(false, Ordering::SeqCst) {
            return;
        }
        if p.closing() {
            log::info(
                "trampolines: JNI natives (the JVM ended before the FFM downcalls were made)",
            );
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("jlive-critical".into())
            .spawn(move || {
                crate::transport::mark_agent_thread();
                let started = std::time::Instant::now();
                if ended_first(p) {
                    return;
                }
                let Some(attached) = p.vm().attach_daemon(c"jlive critical") else {
                    critical_failed(p, "no thread to make the FFM downcalls on");
                    return;
                };
                let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    attached.with(|jni| {
                        if let Some(class) = self.trampoline() {
                            self.make_critical(p, jni, class, started);
                        }
                    })
                }));
                if made.is_err() {
                    log::warn("internal error making the FFM downcalls");
                }
                drop(attached);
            });
        match spawned {
            Ok(_) => log::info(
                "trampolines: FFM critical downcalls pending (being made beside the application, which reaches the JNI natives meanwhile)",
            ),
            Err(e) => log::warn(&format!(
                "trampolines: JNI natives (no thread to make the FFM downcalls on: {})",
                e
            )),
        }
    }

    /// [`prepare_critical`]'s thread: makes the downcalls, checks them and hands them to the
    /// trampolines (`class`, a global reference).
    fn make_critical(
        &self,
        p: &Runtime,
        jni: Jni<'_>,
        class: &GlobalClass,
        started: std::time::Instant,
    ) {
        // The thread checked before it attached; each later step checks again that the program,
        // which has no use for them once it ends, still runs.
        if jni.call_static_boolean(class, c"critical") != Some(true) {
            critical_failed(p, "the FFM critical downcalls could not be made");
            return;
        }
        if ended_first(p) {
            return;
        }
        if let Err(e) = self.probe_critical(p, jni, class) {
            critical_failed(p, &e);
            return;
        }
        if ended_first(p) {
            return;
        }
        if jni.call_static_boolean(class, c"publishCritical") == Some(true) {
            log::info(&format!(
                "trampolines: FFM critical downcalls ready in {:?}",
                started.elapsed()
            ));
        }
    }

    /// Runs both downcalls with MethodEntry on for this thread (the FFM adapter is JDK code that
    /// changes between releases): Ok if every Java method they ran is one jlive never instruments
    /// with the downcalls in use, as an instrumented one would call them again, without end.
    fn probe_critical(&self, p: &Runtime, jni: Jni<'_>, class: &GlobalClass) -> Result<(), String> {
        if !p.caps().has(cap::GENERATE_METHOD_ENTRY_EVENTS) {
            return Err("no MethodEntry events to check the FFM downcalls with".into());
        }
        let thread = p
            .jvmti()
            .current_thread(jni)
            .ok_or("no current thread to check the FFM downcalls on")?;
        *self.probed.lock() = Some((std::thread::current().id(), Vec::new()));
        self.probing.store(true, Ordering::SeqCst);
        let on = p
            .jvmti()
            .set_thread_event(jvmti::EVENT_METHOD_ENTRY, true, &thread);
        let ran = on.is_ok() && jni.call_static_boolean(class, c"probeCritical") == Some(true);
        let _ = p
            .jvmti()
            .set_thread_event(jvmti::EVENT_METHOD_ENTRY, false, &thread);
        self.probing.store(false, Ordering::SeqCst);
        let mut found = self
            .probed
            .lock()
            .take()
            .map(|(_, f)| f)
            .unwrap_or_default();
        if let Err(e) = on {
            return Err(format!("MethodEntry: {}", e));
        }
        if !ran {
            return Err("the FFM downcalls did not answer as expected".into());
        }
        found.sort();
        found.dedup();
        if found.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the FFM downcall runs instrumented JDK code: {}",
                found.join(", ")
            ))
        }
    }

    /// Whether a probe of the downcalls runs now (MethodEntry is then reported to
    /// [`Bci::probed`]).
    pub fn probing(&self) -> bool {
        self.probing.load(Ordering::Relaxed)
    }

    /// [`probe_critical`]: notes the class of a method a downcall ran if jlive would instrument it.
    #[cold]
    pub fn probed(&self, p: &Runtime, method: MethodId) {
        let me = std::thread::current().id();
        if !self.probed.lock().as_ref().is_some_and(|(t, _)| *t == me) {
            return; // another thread's entry (MethodEntry switched on for all, drop_hoisted_gates)
        }
        let Some(signature) = p
            .vm()
            .with_current(|jni| {
                let class = p.jvmti().method_declaring_class(jni, method)?;
                p.jvmti().class_signature(&class).ok()
            })
            .flatten()
        else {
            return;
        };
        let name = internal_name(&signature);
        if !excluded_with(&name, true) && p.filter().traces(&name) {
            // This thread's probe (checked above), which only this thread ends.
            if let Some((_, found)) = self.probed.lock().as_mut() {
                found.push(name);
            }
        }
    }
}

/// Whether the JVM is closing, which the log then says, before the downcalls were ready.
fn ended_first(p: &Runtime) -> bool {
    let closed = p.closing();
    if closed {
        log::info("trampolines: JNI natives (the JVM ended before the FFM downcalls were ready)");
    }
    closed
}

/// A step of the downcalls' thread failed: a warning, unless the JVM is closing (VM death does
/// not wait for the thread, whose JVM and JVMTI calls then fail).
fn critical_failed(p: &Runtime, why: &str) {
    if !ended_first(p) {
        log::warn(&format!("trampolines: JNI natives ({})", why));
    }
}
