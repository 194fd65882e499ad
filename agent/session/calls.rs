//! Method entries and exits past the trampolines' fast path (capture=bci's natives, see
//! `capture/bci/natives.rs`) and from JVMTI's MethodEntry and MethodExit (capture=events):
//! where an armed trigger is asked first, a user trace library is served, and what remains is
//! recorded by the capture. Each is the whole way, for whatever the fast path declined.

use super::Session;
use crate::capture::bci::gate::{self, GATE_ALLOCATIONS, GATE_ENTRIES, GATE_EXITS};
use crate::capture::bci::natives::{begin_call, callee_ran, end_call};
use crate::capture::{MethodEvent, Returned};
use crate::clock;
use crate::transport::Hub;
use jlive_jvm::jni::Jni;
use jlive_jvm::refs::{Local, MethodId};
use jlive_writer::model::SyncKind;
use jlive_writer::record::{MethodKey, RecordKind, NO_OBJECT, PENDING_OBJECT};
use jni_sys::jint;
use std::sync::atomic::Ordering;

impl Session {
    /// JVMTI MethodEntry (capture=events).
    pub fn method_entry(&'static self, mut e: MethodEvent<'_, '_>) {
        let (rt, thread, method) = (&self.rt, e.thread, e.method);
        if self.recorder.trigger_armed() {
            let entering = || {
                rt.hub()
                    .current_or(|| rt.attach_java_thread(rt.jvmti(), thread))
            };
            let fired = self
                .recorder
                .entered(rt, &self.capture, method.key() as MethodKey, || {
                    entering().map(|b| b.key)
                });
            if !fired {
                return;
            }
            // The burst began after the entry was seen: the entry lies inside it.
            e.ticks = clock::ticks();
        }
        self.capture.method_entry(rt, e);
    }

    /// JVMTI MethodExit (capture=events).
    pub fn method_exit(&'static self, e: MethodEvent<'_, '_>, returned: Returned) {
        self.capture.method_exit(&self.rt, e, returned);
    }

    /// JVMTI MethodEntry under capture=bci: enabled only for the moment the gate's hoisted
    /// reads are dropped (`capture/bci/gate.rs`) or the FFM downcalls are probed; records
    /// nothing (the instrumented methods do).
    pub fn interpreted_only_entry(&self, method: MethodId) {
        let bci = self.capture.bci();
        if bci.probing() {
            bci.probed(&self.rt, method);
        }
    }

    /// Whether a burst is open that records what gate bit `what` stands for, so that a
    /// paused JVM pays no clock read; a trampoline that finds none past a closed gate is
    /// counted (the Java side should have stopped it).
    fn recording(&self, what: i32) -> bool {
        let recording = self.capture.capturing(&self.rt) && gate::current() & what != 0;
        if !recording && gate::current() == 0 {
            self.capture
                .bci()
                .stats
                .past_closed_gate
                .fetch_add(1, Ordering::Relaxed);
        }
        recording
    }

    /// An entry of `key` while a trigger is armed: true when it began the burst (and is
    /// recorded).
    #[cold]
    fn fires(&'static self, key: jint) -> bool {
        let rt = &self.rt;
        self.recorder
            .entered(rt, &self.capture, key as MethodKey, || {
                rt.hub()
                    .current_or(|| rt.attach_current_thread())
                    .map(|b| b.key)
            })
    }

    /// An entry of method `key` whose receiver is `object` (or NO_OBJECT, PENDING_OBJECT)
    /// past the fast path: its ticks when recorded.
    pub fn entered(&'static self, key: jint, object: u32) -> Option<u64> {
        callee_ran();
        if self.recorder.trigger_armed() && !self.fires(key) {
            return None;
        }
        if !self.recording(GATE_ENTRIES) {
            return None;
        }
        let (rt, ticks) = (&self.rt, clock::ticks());
        self.capture
            .entered(rt, ticks, key as MethodKey, object, || {
                rt.attach_current_thread()
            });
        Some(ticks)
    }

    /// An exit of method `key` past the fast path.
    pub fn exited(&'static self, key: jint) {
        callee_ran();
        if self.recording(GATE_EXITS) {
            let rt = &self.rt;
            self.capture
                .exited(rt, clock::ticks(), key as MethodKey, || {
                    rt.attach_current_thread()
                });
        }
    }

    /// The entry and exit of a leaf method past the fast path.
    pub fn leaf(&'static self, key: jint) {
        let Some(ticks) = self.entered(key, NO_OBJECT) else {
            return;
        };
        if self.recording(GATE_EXITS) {
            let rt = &self.rt;
            self.capture
                .left_leaf(rt, ticks, key as MethodKey, || rt.attach_current_thread());
        }
    }

    /// A record the critical downcalls left to the JNI natives, counted.
    pub fn missed(&self) {
        self.capture
            .bci()
            .stats
            .critical_missed
            .fetch_add(1, Ordering::Relaxed);
    }

    /// `call0` past its fast path: a wrapped call of `key` begins.
    pub fn call(&'static self, key: jint) {
        if self.recording(GATE_ENTRIES) {
            let rt = &self.rt;
            if let Some(b) = rt.hub().current_or(|| rt.attach_current_thread()) {
                begin_call(b, key as u32, clock::ticks());
            }
        } else {
            callee_ran();
        }
    }

    /// `called0` past its fast path: the call of the intrinsic candidate `key` returned. If
    /// nothing was recorded since it began, HotSpot ran its own code for it: its entry (when
    /// the call began) and exit are recorded here.
    pub fn called(&'static self, key: jint) {
        let Some(begun) = Hub::current().and_then(|b| end_call(b, key as u32)) else {
            return;
        };
        if self.recorder.trigger_armed() && !self.fires(key) {
            return;
        }
        let rt = &self.rt;
        if self.recording(GATE_ENTRIES) {
            self.capture
                .entered(rt, begun, key as MethodKey, NO_OBJECT, || {
                    rt.attach_current_thread()
                });
        }
        if self.recording(GATE_EXITS) {
            self.capture
                .exited(rt, clock::ticks(), key as MethodKey, || {
                    rt.attach_current_thread()
                });
        }
    }

    /// `enterObject0`: an entry with its receiver (objects=on).
    pub fn enter_object(&'static self, jni: Jni<'_>, receiver: Option<&Local<'_>>, key: jint) {
        callee_ran();
        if self.recorder.trigger_armed() && !self.fires(key) {
            return;
        }
        if self.recording(GATE_ENTRIES) {
            let (rt, ticks) = (&self.rt, clock::ticks());
            let object = receiver.map_or(NO_OBJECT, |r| rt.object_id(rt.jvmti(), jni, r, ticks));
            self.capture
                .entered(rt, ticks, key as MethodKey, object, || {
                    rt.attach_current_thread()
                });
        }
    }

    /// `enterConstructor0`: a constructor's entry, its receiver named once super() returned.
    pub fn enter_constructor(&'static self, key: jint) {
        self.entered(key, PENDING_OBJECT);
    }

    /// `constructed0`: the receiver of a constructor, once super() has returned (objects=on).
    pub fn constructed(&'static self, jni: Jni<'_>, object: &Local<'_>, key: jint) {
        if !self.recording(GATE_ENTRIES) {
            return;
        }
        let (rt, ticks) = (&self.rt, clock::ticks());
        let (id, class) = rt.object_identity(rt.jvmti(), jni, object, ticks);
        if let (Some(class), Some(b)) = (class, Hub::current()) {
            b.append(
                rt.hub(),
                RecordKind::ObjectBound,
                ticks,
                key as u64,
                id,
                Some(class),
                true,
            );
        }
    }

    /// `allocated0`: an object allocated at a rewritten allocation site.
    pub fn allocated(&'static self, jni: Jni<'_>, object: &Local<'_>) {
        if gate::current() & GATE_ALLOCATIONS != 0 {
            self.capture.allocated(&self.rt, jni, object, None, true);
        } else {
            self.recording(GATE_ALLOCATIONS);
        }
    }

    /// A concurrency event from JliveTrampoline (`sync0`, a hooked Thread method's entry or
    /// exit: `syncEnter0`...): the trampoline's own frame and the native's are not part of
    /// the stack. True when it was recorded.
    pub fn sync_call(
        &'static self,
        jni: Jni<'_>,
        kind: SyncKind,
        object: Option<&Local<'_>>,
    ) -> bool {
        let rt = &self.rt;
        self.capture
            .sync_event(rt, rt.jvmti(), jni, kind, object, 2)
    }
}
