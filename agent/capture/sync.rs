//! `monitors=on` (always on for format=orca): where a concurrency event becomes a record.
//!
//! - Object.wait and monitor contention: JVMTI MonitorWait/MonitorWaited and
//!   MonitorContendedEnter/MonitorContendedEntered, on the thread that waits or blocks. The
//!   owner of a contended monitor is read at once, without a safepoint where it can be
//!   ([`owner`]); one that let go meanwhile is no owner (00000000).
//! - Thread.start, join and sleep: java/lang/Thread's own methods call [`sync_enter_object`] /
//!   [`sync_enter`] and [`sync_exit`] (`jlive_bci::rewrite::hook_thread_methods`; Thread is
//!   retransformed at VM init), whatever name the call went through.
//! - Object.notify/notifyAll, and JDK 17's native Thread.sleep(long): their call sites call
//!   JliveTrampoline (`jlive_bci::sync`), whose `sync0` lands in [`sync0`].
//! - An event with a hooked Thread method or a trampoline below it in the stack is part of a
//!   recorded call and is not recorded: the wait inside a join, join() calling join(0), a
//!   sleep inside Thread.sleep(long, int).
//!
//! Each event takes the thread's stack (up to [`MAX_FRAMES`] frames, below the trampoline's
//! own) and identity hash codes; the details wait in the registry ([`Registry::put_sync`])
//! and the thread's buffer gets one record that points to them. None of this is on a method's
//! hot path: these calls block or wake threads anyway.

use super::{owner, Capture};
use crate::clock;
use crate::runtime::Runtime;
use crate::symbols::Classes;
use crate::transport::Hub;
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{FrameInfo, Jvmti};
use jlive_jvm::refs::{Class, Local, MethodId};
use jlive_writer::model::SyncKind;
use jlive_writer::record::{MethodRef, Payload, RecordKind, Symbols, SyncInfo, NO_OBJECT};
use jni_sys::jint;
use std::sync::OnceLock;

/// The deepest stack an event carries.
pub const MAX_FRAMES: usize = 128;

/// What the concurrency capture keeps: JliveTrampoline's methods, so that a frame of one of
/// them below an event means the event happens inside a recorded call (set when the
/// trampolines are bound).
#[derive(Default)]
pub struct Sync {
    trampoline_methods: OnceLock<Vec<usize>>,
}

impl Sync {
    /// Remembers JliveTrampoline's methods (from `bind`).
    pub fn trampoline_bound(&self, jvmti: Jvmti, class: &Class<'_>) {
        let methods = jvmti.class_methods(class).unwrap_or_default();
        let _ = self
            .trampoline_methods
            .set(methods.into_iter().map(|m| m.key()).collect());
    }

    pub fn is_trampoline(&self, method: Option<MethodId>) -> bool {
        self.trampoline_methods
            .get()
            .zip(method)
            .is_some_and(|(m, method)| m.contains(&method.key()))
    }
}

/// The kinds `JliveTrampoline.sync0` passes (its NOTIFY..SLEPT).
pub fn trampoline_kind(kind: jint) -> Option<SyncKind> {
    Some(match kind {
        1 => SyncKind::Notify,
        2 => SyncKind::NotifyAll,
        3 => SyncKind::Start,
        4 => SyncKind::Join,
        5 => SyncKind::Joined,
        6 => SyncKind::Sleep,
        7 => SyncKind::Slept,
        _ => return None,
    })
}

impl Capture {
    /// Records one event of the current thread on `object` (a monitor, or the thread started or
    /// joined); `skip` frames on top of the stack are jlive's. False when nothing was recorded.
    pub fn sync_event(
        &self,
        p: &'static Runtime,
        jvmti: Jvmti,
        jni: Jni<'_>,
        kind: SyncKind,
        object: Option<&Local<'_>>,
        skip: jint,
    ) -> bool {
        // Not inside jlive's own Java code (the owner query's).
        if !p.hub().is_tracing() || Hub::is_quiet() {
            return false;
        }
        let ticks = clock::ticks();
        let mut frames = [FrameInfo::default(); MAX_FRAMES];
        let n = jvmti.stack_trace(skip, &mut frames);
        if frames[..n]
            .iter()
            .any(|f| self.sync.is_trampoline(f.method))
        {
            return false;
        }
        // A class reference per frame not seen before, and the monitor's owner.
        let frame = jni.local_frame(MAX_FRAMES as i32 + 16);
        let jni = frame.jni();
        let classes = p.classes(jvmti, jni);
        let mut stack = Vec::with_capacity(n);
        for f in &frames[..n] {
            if let Some(m) = f.method.and_then(|m| frame_method(p, &classes, m)) {
                if is_thread_hook(p, m) {
                    return false;
                }
                stack.push((m, f.location));
            }
        }
        let hash = |o: Option<&Local<'_>>| o.and_then(|o| jvmti.object_hash_code(o)).unwrap_or(0);
        let in_object_wait = stack.first().is_some_and(|&(m, _)| is_object_wait(p, m));
        // HotSpot sends MonitorWaited, without a MonitorWait, after a wait of its own: a thread
        // that waited for another to initialize a class. Only Object.wait's count.
        if kind == SyncKind::Waited && !in_object_wait {
            return false;
        }
        // The buffer first: the owner query's Java code runs quietly on it.
        let Some(b) = p.hub().current_or(|| p.attach_current_thread()) else {
            return false;
        };
        let thread_hash = hash(jvmti.current_thread(jni).as_ref());
        let object_hash = hash(object);
        let owner_hash = match object.filter(|_| kind == SyncKind::ContendedEnter) {
            Some(object) => owner::owner_hash(
                self.owners(),
                p.hub(),
                jvmti,
                jni,
                object,
                object_hash,
                in_object_wait,
            ),
            None => 0,
        };
        // Formats but ORCA name objects by ID: the monitor (or thread) is tagged, and defined
        // first, as a receiver is.
        let (object_id, object_class) = match object.filter(|_| p.options().monitor_object_ids()) {
            Some(object) => p.object_identity(jvmti, jni, object, ticks),
            None => (NO_OBJECT, None),
        };
        let info = SyncInfo {
            kind,
            thread_hash,
            object_hash,
            owner_hash,
            object_id,
            object_class,
            owner_key: (owner_hash != 0)
                .then(|| p.symbols().thread_by_hash(owner_hash))
                .flatten(),
            frames: stack,
        };
        b.append_payload(
            p.hub(),
            RecordKind::Sync,
            ticks,
            Payload::Sync(Box::new(info)),
        )
    }
}

/// Whether a frame's method is Object.wait (any form, wait0 on JDK 21+).
fn is_object_wait(p: &Runtime, m: MethodRef) -> bool {
    p.symbols().class(m.class).is_some_and(|class| {
        class.name == "java/lang/Object"
            && class
                .methods
                .get(usize::from(m.index))
                .is_some_and(|d| d.name.starts_with("wait"))
    })
}

/// Whether a frame's method is one of java/lang/Thread's hooked methods.
fn is_thread_hook(p: &Runtime, m: MethodRef) -> bool {
    let Some(class) = p.symbols().class(m.class) else {
        return false;
    };
    class.name == "java/lang/Thread"
        && class.methods.get(usize::from(m.index)).is_some_and(|d| {
            jlive_bci::rewrite::thread_hook(d.name.as_bytes(), d.signature.as_bytes()).is_some()
        })
}

/// A frame's method as the registry knows it (its class registered on first sight).
fn frame_method(p: &Runtime, classes: &Classes, method: MethodId) -> Option<MethodRef> {
    if let Some(m) = p.symbols().frame_method(method.key() as u64) {
        return Some(m);
    }
    let class = classes.jvmti.method_declaring_class(classes.jni, method)?;
    let key = p.hub().quietly(|| classes.key(&class))?;
    let index = classes
        .jvmti
        .class_methods(&class)
        .ok()?
        .iter()
        .position(|&m| m == method)?;
    let m = MethodRef {
        class: key,
        index: u16::try_from(index).ok()?,
    };
    p.symbols().put_frame_method(method.key() as u64, m);
    Some(m)
}

/// What a hooked Thread method's entry (`exit` false) or exit records, by its hook key.
pub fn hook_kind(hook: jint, exit: bool) -> Option<SyncKind> {
    match (hook, exit) {
        (1, false) => Some(SyncKind::Start),
        (2, false) => Some(SyncKind::Join),
        (2, true) => Some(SyncKind::Joined),
        (3, false) => Some(SyncKind::Sleep),
        (3, true) => Some(SyncKind::Slept),
        _ => None,
    }
}

/// ClassFileLoadHook: the class with its notify and sleep calls rewritten
/// (`jlive_bci::sync`), and java/lang/Thread with its start, join and sleep methods hooked;
/// None when nothing changed. A sleep called through the name of a Thread subclass is seen
/// where the subclass is already loaded or is the caller (see the README).
pub fn hook_calls(p: &Runtime, name: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    let is_thread = |owner: &[u8], descriptor: &[u8]| match (
        std::str::from_utf8(owner),
        std::str::from_utf8(descriptor),
    ) {
        (Ok(o), Ok(d)) => p.symbols().inherits_thread_sleep(o, d),
        _ => false,
    };
    let calls = match jlive_bci::sync::hook_calls(bytes, &is_thread) {
        Ok(out) => out,
        Err(e) => {
            crate::log::info(&format!(
                "concurrency calls not hooked: class {}: {}",
                name, e
            ));
            None
        }
    };
    if name != "java/lang/Thread" {
        return calls;
    }
    match jlive_bci::rewrite::hook_thread_methods(calls.as_deref().unwrap_or(bytes)) {
        Ok(Some(out)) => Some(out),
        Ok(None) => calls,
        Err(e) => {
            crate::log::warn(&format!(
                "Thread.start, join and sleep cannot be hooked ({}): monitors=on sees no thread starts, joins or sleeps",
                e
            ));
            calls
        }
    }
}

/// VM init (or attach): java/lang/Thread, loaded before any hook could see it, is
/// retransformed so that its start, join and sleep methods are hooked (capture=bci does it
/// with every loaded class).
pub fn hook_thread_class(jvmti: Jvmti, jni: Jni<'_>) {
    // The classes' local references live as long as the closure.
    let retransformed = crate::symbols::with_loaded_classes(jvmti, jni, |_, loaded| {
        let thread = loaded.into_iter().find(|c| {
            jvmti
                .class_signature(c)
                .is_ok_and(|s| s == "Ljava/lang/Thread;")
        });
        match thread {
            Some(class) => jvmti
                .retransform_classes(&[class])
                .map_err(|e| e.to_string()),
            None => Err("it is not loaded".to_string()),
        }
    });
    if let Err(e) = retransformed {
        crate::log::warn(&format!(
            "java/lang/Thread cannot be retransformed ({}): monitors=on sees no thread starts, joins or sleeps",
            e
        ));
    }
}

#[cfg(test)]
mod tests {
    use jlive_bci::classfile::{ClassFile, Code};
    use jlive_bci::code;

    fn example(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("JLIVE_EXAMPLE_CLASSES"));
        std::fs::read(dir.join(format!("{}.class", name))).unwrap()
    }

    /// Every call a class makes, as (opcode, owner.name+descriptor), in code order.
    fn calls(class: &[u8]) -> Vec<(u8, String)> {
        let cf = ClassFile::parse(class).unwrap();
        let mut out = Vec::new();
        for m in &cf.methods {
            for a in m
                .attributes
                .iter()
                .filter(|a| cf.pool.is_utf8(a.name, b"Code"))
            {
                let body = Code::parse(&a.data).unwrap();
                let mut pc = 0;
                while pc < body.code.len() {
                    let op = body.code[pc];
                    if matches!(op, 182 | 184 | 185) {
                        let index = u16::from_be_bytes([body.code[pc + 1], body.code[pc + 2]]);
                        let (o, n, d) = cf.pool.member_ref(index).unwrap();
                        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                        out.push((op, format!("{}.{}{}", text(o), text(n), text(d))));
                    }
                    pc += code::length(&body.code, pc).unwrap();
                }
            }
        }
        out
    }

    /// Each notify, notifyAll and Thread.sleep call of Concurrency becomes an invokestatic of
    /// its trampoline where it was; every other call (Thread.start and join too: Thread's own
    /// methods are hooked for those) stays as it was; a class with none is left alone.
    #[test]
    fn notify_and_sleep_calls_become_trampoline_calls_in_place() {
        let original = example("Concurrency");
        let hooked = jlive_bci::sync::hook_calls(&original, &|_, _| false)
            .unwrap()
            .expect("Concurrency makes concurrency calls");
        let (before, after) = (calls(&original), calls(&hooked));
        assert_eq!(before.len(), after.len());
        let hookable = |call: &str| {
            call.ends_with(".notify()V")
                || call.ends_with(".notifyAll()V")
                || ["java/lang/Thread.sleep(J)V", "java/lang/Thread.sleep(JI)V"].contains(&call)
        };
        let mut replaced = Vec::new();
        for ((op, b), (op2, a)) in before.iter().zip(&after) {
            if hookable(b) {
                assert_eq!(*op2, 184, "{}", b);
                assert!(
                    a.starts_with("java/lang/JliveTrampoline."),
                    "{} -> {}",
                    b,
                    a
                );
                replaced.push(a.clone());
            } else {
                assert_eq!((op, b), (op2, a));
            }
        }
        replaced.sort();
        replaced.dedup();
        assert_eq!(
            replaced,
            [
                "java/lang/JliveTrampoline.notify(Ljava/lang/Object;)V",
                "java/lang/JliveTrampoline.notifyAll(Ljava/lang/Object;)V",
                "java/lang/JliveTrampoline.sleep(J)V",
                "java/lang/JliveTrampoline.sleep(JI)V",
            ]
        );
        assert!(jlive_bci::sync::hook_calls(&example("Fib"), &|_, _| false)
            .unwrap()
            .is_none());
    }

    /// A Thread subclass calling its inherited sleep (`sleep(1)`: an invokestatic naming the
    /// subclass, which no one has told the rewriter is a Thread) has the call rewritten.
    #[test]
    fn a_thread_subclass_calling_its_inherited_sleep_is_rewritten() {
        let sleeper = example("Concurrency$Sleeper");
        let hooked = jlive_bci::sync::hook_calls(&sleeper, &|_, _| false)
            .unwrap()
            .expect("Sleeper sleeps");
        assert!(calls(&sleeper).contains(&(184, "Concurrency$Sleeper.sleep(J)V".into())));
        assert!(calls(&hooked).contains(&(184, "java/lang/JliveTrampoline.sleep(J)V".into())));
    }

    /// A Thread subclass that declares its own `sleep(long)` keeps its calls of it; a caller
    /// told that a class does not inherit Thread's sleep keeps its calls through that name.
    #[test]
    fn a_sleep_that_hides_threads_is_left_alone() {
        let hider = example("Concurrency$Hider");
        assert!(calls(&hider).contains(&(184, "Concurrency$Hider.sleep(J)V".into())));
        assert!(jlive_bci::sync::hook_calls(&hider, &|_, _| true)
            .unwrap()
            .is_none());
    }
}
