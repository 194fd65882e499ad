//! `capture=events`: JVMTI MethodEntry and MethodExit. Every thread runs interpreted while
//! these events are enabled, which is what makes this way slow (hundreds of ns per call) but
//! exact: exits by exception are reported too (`was_popped_by_exception`). The session asks
//! the triggers first (`session/calls.rs`); what reaches here is recorded.

use super::Capture;
use crate::runtime::Runtime;
use jlive_jvm::jni::Jni;
use jlive_jvm::refs::{Local, MethodId};
use jlive_writer::record::{MethodKey, NO_OBJECT};
use jni_sys::jvalue;

/// A JVMTI MethodEntry or MethodExit: `method` on `thread`, seen at `ticks`.
#[derive(Clone, Copy)]
pub struct MethodEvent<'a, 'l> {
    pub jni: Jni<'l>,
    pub thread: &'a Local<'l>,
    pub method: MethodId,
    pub ticks: u64,
}

/// How a MethodExit's method ended: its result, or thrown out of.
#[derive(Clone, Copy)]
pub struct Returned {
    pub by_exception: bool,
    /// In the union member of the method's return type (an object: a local reference of the
    /// callback).
    pub value: jvalue,
}

impl Capture {
    /// MethodEntry.
    pub fn method_entry(&self, rt: &'static Runtime, e: MethodEvent<'_, '_>) {
        let MethodEvent {
            jni,
            thread,
            method,
            ticks,
        } = e;
        let jvmti = rt.jvmti();
        let object = if rt.options().objects {
            rt.receiver(jvmti, jni, thread, ticks)
        } else {
            NO_OBJECT
        };
        self.entered(rt, ticks, method.key() as MethodKey, object, || {
            rt.attach_java_thread(jvmti, thread)
        });
        if self.values.active() {
            self.values.entered(rt, e, object);
        }
    }

    /// MethodExit.
    pub fn method_exit(&self, rt: &'static Runtime, e: MethodEvent<'_, '_>, returned: Returned) {
        if self.values.active() {
            self.values.exiting(rt, e, returned);
        }
        self.exited(rt, e.ticks, e.method.key() as MethodKey, || {
            rt.attach_java_thread(rt.jvmti(), e.thread)
        });
    }
}
