//! A thread's buffer, made on its first record: a Java thread named as the JVM names it, a
//! JVM-internal one (a GC thread) without any JVM call, a carrier of virtual threads; and
//! the keys of virtual threads, kept in their JVMTI thread-local storage.

use super::Runtime;
use crate::transport::ThreadBuffer;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::Jvmti;
use jlive_jvm::refs::Ref;
use jlive_writer::record::{RecordKind, ThreadInfo, ThreadKey};

impl Runtime {
    /// Creates the buffer of a Java thread, registering its name, group and the group's
    /// parent. Returns false if it cannot.
    pub fn attach_java_thread(&'static self, jvmti: Jvmti, thread: &impl Ref) -> bool {
        self.attach_described(|| self.describe_thread(jvmti, thread))
    }

    /// [`Runtime::attach_java_thread`] of the calling thread.
    pub fn attach_current_thread(&'static self) -> bool {
        self.attach_described(|| {
            self.vm
                .with_env(|jni| {
                    let frame = jni.local_frame(4);
                    let jni = frame.jni();
                    let thread = self.jvmti.current_thread(jni)?;
                    describe(self.jvmti, jni, &thread)
                })
                .flatten()
        })
    }

    /// Makes the calling thread's buffer, its description from `describe`.
    fn attach_described(&'static self, describe: impl FnOnce() -> Option<ThreadInfo>) -> bool {
        self.hub
            .attach(|key| {
                let info = describe().unwrap_or_else(|| ThreadInfo {
                    name: format!("thread-{}", key),
                    ..ThreadInfo::default()
                });
                self.symbols.put_thread(key, info);
            })
            .is_some()
    }

    /// A thread's name, group and parent group, the groups' references in a frame of their
    /// own.
    pub fn describe_thread(&self, jvmti: Jvmti, thread: &impl Ref) -> Option<ThreadInfo> {
        self.vm
            .with_env(|jni| {
                let frame = jni.local_frame(4);
                describe(jvmti, frame.jni(), thread)
            })
            .flatten()
    }

    /// Creates the buffer of a JVM-internal thread (GC) without any JVM call.
    fn attach_internal_thread(&'static self) -> bool {
        self.hub
            .attach(|key| {
                let info = ThreadInfo {
                    name: "JVM internal".into(),
                    ..ThreadInfo::default()
                };
                self.symbols.put_thread(key, info)
            })
            .is_some()
    }

    /// Appends a record on the calling thread, making its buffer with `attach` first if need
    /// be.
    pub fn append(
        &'static self,
        kind: RecordKind,
        ticks: u64,
        key: u64,
        arg: u32,
        extra: u32,
        attach: impl FnOnce() -> bool,
    ) {
        if let Some(b) = self.hub.current_or(attach) {
            b.append(&self.hub, kind, ticks, key, arg, Some(extra), true);
        }
    }

    /// Like [`Runtime::append`] but never waits and never calls the JVM (GC and ObjectFree
    /// callbacks).
    pub fn append_from_gc(&'static self, kind: RecordKind, arg: u32) {
        let ticks = crate::clock::ticks();
        if let Some(b) = self.hub.current_or(|| self.attach_internal_thread()) {
            b.append(&self.hub, kind, ticks, 0, arg, Some(0), false);
        }
    }

    /// The buffer of the carrier thread a virtual thread event arrives on (a carrier started
    /// after VM init has its own from its ThreadStart).
    pub fn carrier_buffer(&'static self) -> Option<&'static ThreadBuffer> {
        self.hub.current_or(|| {
            self.hub
                .attach(|key| {
                    let info = ThreadInfo {
                        name: format!("carrier-{}", key),
                        ..ThreadInfo::default()
                    };
                    self.symbols.put_thread(key, info)
                })
                .is_some()
        })
    }

    /// The key of the virtual thread mounted on this carrier; one seen for the first time
    /// while a burst records gets a key and a description (the others cost nothing: an
    /// application may start millions).
    pub fn mounted_virtual_thread(&self, jvmti: Jvmti, vthread: &impl Ref) -> Option<u64> {
        if let Some(key) = virtual_thread_key(jvmti, vthread) {
            return Some(key);
        }
        if !self.hub.is_tracing() {
            return None;
        }
        let key: ThreadKey = self.hub.new_thread_key();
        let info = self
            .describe_thread(jvmti, vthread)
            .unwrap_or_else(|| ThreadInfo {
                name: format!("virtual-{}", key),
                ..ThreadInfo::default()
            });
        self.symbols.put_thread(key, info);
        if jvmti.set_thread_word(vthread, key as usize).is_err() {
            self.symbols.forget_thread(key);
            return None;
        }
        Some(u64::from(key))
    }
}

/// A thread's name, hash, group and parent group.
fn describe(jvmti: Jvmti, jni: Jni<'_>, thread: &impl Ref) -> Option<ThreadInfo> {
    let (name, group) = jvmti.thread_info(jni, thread).ok()?;
    let mut info = ThreadInfo {
        name,
        hash: jvmti.object_hash_code(thread).unwrap_or(0),
        ..ThreadInfo::default()
    };
    if let Some((group, parent)) = group.and_then(|g| jvmti.thread_group_info(jni, &g).ok()) {
        info.group = group;
        if let Some((parent, _)) = parent.and_then(|g| jvmti.thread_group_info(jni, &g).ok()) {
            info.parent = parent;
        }
    }
    Some(info)
}

/// A virtual thread's key, kept in its JVMTI thread-local storage (objects' tags are the
/// allocation IDs). None: no burst has seen it yet.
pub fn virtual_thread_key(jvmti: Jvmti, vthread: &impl Ref) -> Option<u64> {
    jvmti
        .thread_word(vthread)
        .ok()
        .filter(|&w| w != 0)
        .map(|w| w as u64)
}
