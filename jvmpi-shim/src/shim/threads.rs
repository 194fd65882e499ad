//! Threads: a slot per thread the shim sees (its JNIEnv is its JVMPI ID), their events and
//! the agent's per-thread calls (suspend, status, call traces, thread-local word).

use super::*;
use crate::abi::{self, event, EventData};
use crate::ffi;
use crate::monitor::RawMonitor;
use jlive_jvm::jni::{Jni, Vm};
use jlive_jvm::jvmti::FrameInfo;
use jlive_jvm::refs::{OwnedGlobal, Ref};
use jni_sys::{jint, JNIEnv};
use parking_lot::Mutex;
use std::ffi::CString;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

pub struct ThreadSlot {
    pub env: usize,
    /// A global reference to its Thread object (taken when the slot drops).
    pub(super) thread: Option<OwnedGlobal>,
    pub id: u64,
    pub(super) tls: AtomicUsize,
    /// Name, group and parent group, as THREAD_START gives them.
    pub(super) names: Box<[CString; 3]>,
    /// CPU time at the last two JVMPI suspensions (ThreadHasRun).
    pub(super) cpu: Mutex<(i64, i64)>,
    pub(super) suspended: AtomicBool,
    pub(super) vm: Vm,
}

impl Drop for ThreadSlot {
    /// The Thread object's global reference lives as long as the last holder of the slot (a
    /// suspend or a call trace in flight keeps it valid past the thread's end).
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.vm.with_env(|jni| jni.delete_global(thread));
        }
    }
}

impl ThreadSlot {
    /// Its Thread object.
    pub(crate) fn thread(&self) -> Option<&OwnedGlobal> {
        self.thread.as_ref()
    }

    pub fn tls_value(&self) -> usize {
        self.tls.load(Ordering::Relaxed)
    }
}

impl Shim {
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

    pub(super) fn register(&self, jni: Jni<'_>) {
        let env = jni.raw() as usize;
        let Some(thread) = self.jvmti.current_thread(jni) else {
            return;
        };
        let id = self.object_id(&thread);
        let global = jni.new_global(&thread);
        let names = Box::new(self.thread_names(jni, &thread, true));
        jni.delete_local(thread);
        let slot = Arc::new(ThreadSlot {
            env,
            thread: global,
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

    /// A thread's name, its group's name and that group's parent's name; the calling thread
    /// (`current`), attaching under a name the shim gave it, has that name even where the JVM
    /// has not set it yet when ThreadStart comes (JDK 25).
    pub(super) fn thread_names(
        &self,
        jni: Jni<'_>,
        thread: &impl Ref,
        current: bool,
    ) -> [CString; 3] {
        let j = self.jvmti;
        let (mut name, group) = j.thread_info(jni, thread).unwrap_or_default();
        if name.is_empty() && current {
            name = ATTACH_NAME.with(|n| n.borrow().clone()).unwrap_or_default();
        }
        let (group_name, parent) = match group {
            Some(g) => {
                let (n, p) = j.thread_group_info(jni, &g).unwrap_or_default();
                let parent = match p {
                    Some(p) => {
                        let name = j
                            .thread_group_info(jni, &p)
                            .map(|i| i.0)
                            .unwrap_or_default();
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
        if self.vm.current_env_id()? != env {
            return None;
        }
        self.vm.with_current(|jni| self.thread(jni));
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
        let Some(thread) = slot.thread() else {
            return abi::FAIL;
        };
        if self.jvmti.suspend_thread(thread).is_err() {
            return abi::FAIL;
        }
        slot.suspended.store(true, Ordering::Release);
        let now = self.jvmti.thread_cpu_time(thread).unwrap_or(0);
        let mut cpu = slot.cpu.lock();
        *cpu = (cpu.1, now);
        abi::SUCCESS
    }

    pub fn resume(&self, env: *mut JNIEnv) -> jint {
        let Some(slot) = self.slot(env) else {
            return abi::FAIL;
        };
        slot.suspended.store(false, Ordering::Release);
        match slot.thread().map(|t| self.jvmti.resume_thread(t)) {
            Some(Ok(())) => abi::SUCCESS,
            _ => abi::FAIL,
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
        let state = slot
            .thread()
            .map_or(0, |t| self.jvmti.thread_state(t).unwrap_or(0));
        jvmpi_status(state, slot.suspended.load(Ordering::Acquire))
    }

    /// GetCallTrace: frames of the thread `env` into `frames`; returns how many.
    pub fn call_trace(&self, env: *mut JNIEnv, frames: &mut [abi::CallFrame]) -> usize {
        let current = REGISTERED.with(|r| r.get()) == env as usize;
        let mut info = vec![FrameInfo::default(); frames.len()];
        let n = if current {
            self.jvmti.stack_trace(0, &mut info)
        } else {
            match self.slot(env) {
                Some(s) => s
                    .thread()
                    .map_or(0, |t| self.jvmti.stack_trace_of(t, 0, &mut info)),
                None => return 0,
            }
        };
        for (out, f) in frames.iter_mut().zip(&info[..n]) {
            *out = abi::CallFrame {
                lineno: f.method.map_or(abi::LINE_UNKNOWN, |m| {
                    line_at(&self.line_table(m), f.location)
                }),
                method_id: f.method.map_or(ptr::null_mut(), |m| m.as_raw()),
            };
        }
        n
    }

    pub fn thread_object(&self, env: *mut JNIEnv) -> u64 {
        self.slot(env).map_or(0, |s| s.id)
    }
}
