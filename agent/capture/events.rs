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

impl Capture {
    /// MethodEntry of `method` on `thread`, seen at `ticks`.
    pub fn method_entry(
        &self,
        rt: &'static Runtime,
        jni: Jni<'_>,
        thread: &Local<'_>,
        method: MethodId,
        ticks: u64,
    ) {
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
            self.values
                .entered(rt, jvmti, jni, thread, method, object, ticks);
        }
    }

    /// MethodExit of `method` on `thread` (returning `value`, or thrown out of), at `ticks`.
    #[allow(clippy::too_many_arguments)]
    pub fn method_exit(
        &self,
        rt: &'static Runtime,
        jni: Jni<'_>,
        thread: &Local<'_>,
        method: MethodId,
        by_exception: bool,
        value: jvalue,
        ticks: u64,
    ) {
        let jvmti = rt.jvmti();
        if self.values.active() {
            self.values
                .exiting(rt, jvmti, jni, thread, method, by_exception, value, ticks);
        }
        self.exited(rt, ticks, method.key() as MethodKey, || {
            rt.attach_java_thread(jvmti, thread)
        });
    }
}
