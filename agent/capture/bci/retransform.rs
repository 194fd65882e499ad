//! Retransformation: the classes loaded before the hook could rewrite them (at VM init, at
//! attach, or at the first burst under `instrument=burst`), rewritten in chunks on a few
//! threads; those whose intrinsic candidates other classes call go first.

use super::{Bci, CALLEES_FIRST};
use crate::log;
use crate::runtime::Runtime;
use crate::symbols::{internal_name, with_loaded_classes};
use jlive_jvm::jni::{GlobalClasses, Jni};
use jlive_jvm::jvmti::{self, Jvmti, ACC_ABSTRACT, ACC_NATIVE};
use jlive_jvm::refs::{Class, Ref};
use std::sync::atomic::{AtomicUsize, Ordering};

impl Bci {
    /// `instrument=burst`: the first burst (or armed trigger) rewrites every class loaded so far,
    /// on the thread that opens it and before it records, and the hook every class loaded from
    /// then on; it answers how many classes it instrumented and how long that took. Called before
    /// the bursts lock is taken (the Java API's `tracing()` and `status` need that lock meanwhile);
    /// a second caller waits until the first is done. Later calls, and every call under
    /// `instrument=load`, return None at once.
    pub fn instrument_now(
        &'static self,
        p: &'static Runtime,
    ) -> Option<(u64, std::time::Duration)> {
        let o = p.options();
        if !o.uses_bci() || o.rewrites_at_load() || !self.ready.load(Ordering::SeqCst) {
            return None;
        }
        let mut done = self.instrumented.lock();
        if *done || p.closing() {
            return None;
        }
        let started = std::time::Instant::now();
        let before = self.stats.classes.load(Ordering::Relaxed);
        // monitors=on enabled it at VM init, for the concurrency call sites.
        if !o.monitors {
            if let Err(e) = p.jvmti().set_event(jvmti::EVENT_CLASS_FILE_LOAD_HOOK, true) {
                log::warn(&format!(
                    "no ClassFileLoadHook ({}): capture=bci cannot instrument, the burst records no method",
                    e
                ));
                return None;
            }
        }
        p.vm().with_env(|jni| {
            let frame = jni.local_frame(16);
            let jni = frame.jni();
            // From here on ClassPrepare registers each class; those prepared before are listed
            // after it, and registered here. Before the downcalls' thread loads any class: a class
            // loaded unrewritten could not get its native wrappers later.
            self.rewriting.store(true, Ordering::SeqCst);
            self.prepare_critical(p, jni);
            with_loaded_classes(p.jvmti(), jni, |jni, loaded| {
                p.classes(p.jvmti(), jni).register_prepared(&loaded)
            });
            self.retransform_loaded(p, p.jvmti(), jni);
        })?;
        *done = true;
        let (count, took) = (
            self.stats.classes.load(Ordering::Relaxed) - before,
            started.elapsed(),
        );
        log::info(&format!(
            "instrumented at the first burst (instrument=burst): {} classes in {:?}",
            count, took
        ));
        Some((count, took))
    }

    /// VMInit (or attach): retransforms every loaded class the hook has not instrumented yet;
    /// then, once more, those that were loaded while it did so but whose hook ran before the
    /// trampolines were ready (an attached JVM keeps loading classes meanwhile).
    pub fn retransform_loaded(&'static self, p: &'static Runtime, jvmti: Jvmti, jni: Jni<'_>) {
        self.load_callees(p, jni);
        let (work, left, first) = with_loaded_classes(jvmti, jni, |jni, loaded| {
            self.to_retransform(p, jvmti, jni, loaded, true)
        });
        let started = std::time::Instant::now();
        // The classes of CALLEES_FIRST first, alone, so that their callers in the rest wrap
        // their calls. Once: retransforming them a second time (for the calls they make of each
        // other's) crashed JDK 17 under load (a SIGSEGV in VM_RedefineClasses'
        // MetadataOnStackMark, a Tomcat serving requests at its first burst).
        let (callees, rest) = work.as_slice().split_at(first);
        retransform_chunks(jvmti, callees, &AtomicUsize::new(0));
        self.start_critical(p);
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            // Helper threads take chunks as well when there are more: at VM init the JIT's
            // threads are still mostly idle, and most of a retransformation (this hook, HotSpot
            // parsing, verifying and merging the new versions) runs in the calling thread, before
            // the safepoint. HotSpot lets threads redefine disjoint sets of classes at the same
            // time. Under load the scheduler shares the cores by thread: more threads finish
            // sooner (Tomcat's first burst under wrk, medians of 3: with two 2.06 s on JDK 17 and
            // 2.68 s on JDK 25, with four 1.38 s and 2.28 s; idle the same).
            let chunks = rest.len().div_ceil(RETRANSFORM_CHUNK);
            let helpers: Vec<_> = (1..RETRANSFORM_THREADS.min(chunks))
                .map(|_| {
                    std::thread::Builder::new()
                        .name("jlive-retransform".into())
                        .spawn_scoped(s, || {
                            crate::transport::mark_agent_thread();
                            let Some(attached) = p.vm().attach_daemon(c"jlive retransform") else {
                                log::warn("a retransforming thread could not attach to the JVM; the others take its chunks");
                                return None;
                            };
                            let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                retransform_chunks(jvmti, &work.as_slice()[first..], &next)
                            }));
                            drop(attached);
                            taken.ok()
                        })
                })
                .collect();
            let mine = retransform_chunks(jvmti, rest, &next);
            // Those that ran to the end, and the chunks they took.
            let theirs: Vec<usize> = helpers
                .into_iter()
                .filter_map(|h| h.ok()?.join().ok().flatten())
                .collect();
            log::info(&format!(
                "retransformed {} classes loaded before jlive could rewrite them in {:?} ({} chunks on the calling thread, {} on {} others); {} with nothing to trace left as they were",
                work.as_slice().len(),
                started.elapsed(),
                mine,
                theirs.iter().sum::<usize>(),
                theirs.len(),
                left
            ));
        });
        jni.release(work);
        let (more, _, _) = with_loaded_classes(jvmti, jni, |jni, loaded| {
            self.to_retransform(p, jvmti, jni, loaded, false)
        });
        if !more.as_slice().is_empty() {
            log::info(&format!(
                "retransformed {} more classes loaded while the first ones were",
                more.as_slice().len()
            ));
            retransform_chunks(jvmti, more.as_slice(), &AtomicUsize::new(0));
        }
        jni.release(more);
    }

    /// Of `loaded`, those to retransform (`count`: counting those with nothing to trace, which
    /// only the first pass does), as global references (the local ones are gone, with
    /// their frame, before the retransformation runs its hooks inside this callback), those of
    /// [`CALLEES_FIRST`] first; how many were left out for having nothing to trace; how many of
    /// [`CALLEES_FIRST`] lead.
    fn to_retransform(
        &self,
        p: &Runtime,
        jvmti: Jvmti,
        jni: Jni<'_>,
        loaded: Vec<Class<'_>>,
        count: bool,
    ) -> (GlobalClasses, u64, usize) {
        let classes = p.classes(jvmti, jni);
        let (mut first, mut todo) = (Vec::new(), Vec::new());
        let mut left = 0;
        for class in loaded {
            let Ok(signature) = jvmti.class_signature(&class) else {
                continue;
            };
            let name = internal_name(&signature);
            if signature.starts_with('[') || self.excluded(&name) || !p.filter().traces(&name) {
                continue;
            }
            if !jvmti.is_modifiable_class(&class) {
                continue;
            }
            // Rewritten as it loaded, meanwhile (the verifier of a retransformed class loads the
            // classes it checks against), and linked when it is prepared: as a retransformation
            // would drop its native wrappers, HotSpot would refuse it. Asked before whether it is
            // linked: ClassPrepare links a class before its pending keys go.
            let loader = self.loader_of(jvmti, jni, &class);
            if p.symbols().is_pending(loader, &name) || p.symbols().is_linked(classes.key(&class)) {
                continue;
            }
            // Retransforming a class redefines it even when the hook gives nothing back (HotSpot
            // parses and merges the class again, ~0.2 ms each): leave out those with no code.
            if let Some(natives) = nothing_to_trace(jvmti, &class) {
                // Counted once, by the first pass.
                if count {
                    self.stats.untouched.fetch_add(1, Ordering::Relaxed);
                    self.stats.native.fetch_add(natives, Ordering::Relaxed);
                }
                left += 1;
                continue;
            }
            if CALLEES_FIRST.contains(&name.as_str()) {
                first.push(class);
            } else {
                todo.push(class);
            }
        }
        let leading = first.len();
        first.append(&mut todo);
        (jni.global_classes(&first), left, leading)
    }

    /// Loads the classes of [`CALLEES_FIRST`] not loaded yet (a few: StringUTF16, StrictMath,
    /// reflect.Array...), so that the hook instruments them, and learns their intrinsic
    /// candidates, before the classes that call them.
    fn load_callees(&self, p: &Runtime, jni: Jni<'_>) {
        let frame = jni.local_frame(4);
        let jni = frame.jni();
        for name in CALLEES_FIRST {
            if self.excluded(name)
                || !p.filter().traces(name)
                || self.callees.read().contains_key(name)
            {
                continue;
            }
            if let Ok(name) = std::ffi::CString::new(name) {
                if let Some(class) = jni.find_class(&name) {
                    jni.delete_local(class);
                }
            }
        }
    }
}

/// Classes retransformed in one JVMTI call (one VM operation). Each operation's safepoint
/// walks every loaded class once, whatever its size: the first burst of a paused Tomcat
/// (2,463 classes) took 78 safepoints, 1.24 s in all, in chunks of 32, and 11 safepoints,
/// 190 ms, in chunks of 256, the longest 23 and 26 ms.
const RETRANSFORM_CHUNK: usize = 256;

/// Threads that retransform chunks at once, the calling one included.
const RETRANSFORM_THREADS: usize = 4;

/// Retransforms the chunks of `classes` that no other thread has taken (`next` counts them
/// out) and answers how many it took.
fn retransform_chunks(jvmti: Jvmti, classes: &[impl Ref], next: &AtomicUsize) -> usize {
    let mut taken = 0;
    while let Some(range) = take_chunk(classes.len(), next) {
        taken += 1;
        retransform_halving(jvmti, &classes[range]);
    }
    taken
}

/// Retransforms `classes` in one call; if that fails, each half again, down to the classes
/// that fail alone, which are logged. Each call is a safepoint that walks every loaded class,
/// so one bad class costs about twice the chunk's logarithm of calls, not one per class.
fn retransform_halving(jvmti: Jvmti, classes: &[impl Ref]) {
    if classes.is_empty() {
        return;
    }
    let Err(e) = jvmti.retransform_classes(classes) else {
        return;
    };
    if let [class] = classes {
        let name = jvmti.class_signature(class).unwrap_or_default();
        log::info(&format!("cannot retransform {}: {}", name, e));
        return;
    }
    let (first, second) = classes.split_at(classes.len() / 2);
    retransform_halving(jvmti, first);
    retransform_halving(jvmti, second);
}

/// The next [`RETRANSFORM_CHUNK`] of `len` items that no thread has taken (`next` counts the
/// chunks out), None once all are.
fn take_chunk(len: usize, next: &AtomicUsize) -> Option<std::ops::Range<usize>> {
    let from = next
        .fetch_add(1, Ordering::Relaxed)
        .checked_mul(RETRANSFORM_CHUNK)?;
    (from < len).then(|| from..(from + RETRANSFORM_CHUNK).min(len))
}

/// Some(number of native methods) when no method of `class` has code: only abstract and
/// native ones (an interface without default or static methods, an annotation type).
fn nothing_to_trace(jvmti: Jvmti, class: &Class<'_>) -> Option<u64> {
    let mut natives = 0;
    for method in jvmti.class_methods(class).ok()? {
        let modifiers = jvmti.method_modifiers(method).ok()?;
        if modifiers & (ACC_NATIVE | ACC_ABSTRACT) == 0 {
            return None;
        }
        if modifiers & ACC_NATIVE != 0 {
            natives += 1;
        }
    }
    Some(natives)
}

#[cfg(test)]
mod tests {
    use super::{take_chunk, RETRANSFORM_CHUNK};
    use jlive_bci::classfile::ClassFile;
    use jlive_bci::rewrite::{self, instrument, Weave, TRAMPOLINE};
    use std::sync::atomic::AtomicUsize;

    /// The Utf8 constants of a class file.
    fn strings(class: &[u8]) -> Vec<String> {
        let cf = ClassFile::parse(class).unwrap();
        (1..cf.pool.entries.len() as u16)
            .filter_map(|i| cf.pool.text(i).ok().map(|s| s.into_owned()))
            .collect()
    }

    fn example(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("JLIVE_EXAMPLE_CLASSES"));
        std::fs::read(dir.join(name)).unwrap()
    }

    #[test]
    fn a_class_gets_only_the_trampolines_it_calls() {
        let class = example("Demo.class");
        let plain = instrument(&class, 0, Weave::default()).unwrap();
        let names = strings(&plain.bytes);
        assert!(plain.instrumented > 0);
        for used in ["gate", "enter0", "exit0", "java/lang/Throwable"] {
            assert!(names.iter().any(|n| n == used), "{} missing", used);
        }
        // The Java trampolines serve native-method wrappers, which Demo does not have.
        for unused in [
            "enter",
            "exit",
            "enterObject0",
            "enterConstructor0",
            "constructed",
            "allocated",
        ] {
            assert!(
                !names.iter().any(|n| n == unused),
                "{} added unused",
                unused
            );
        }
        let woven = Weave {
            objects: true,
            alloc: true,
            ..Weave::default()
        };
        let names: Vec<String> = ["Alloc.class", "Alloc$Payload.class", "Demo.class"]
            .iter()
            .flat_map(|c| strings(&instrument(&example(c), 0, woven).unwrap().bytes))
            .collect();
        for used in [
            "enterObject0",
            "enterConstructor0",
            "constructed",
            "allocated",
        ] {
            assert!(names.iter().any(|n| n == used), "{} missing", used);
        }
        // With the critical downcalls, entries and exits call their Java side only.
        let critical = Weave {
            critical: true,
            ..Weave::default()
        };
        let names = strings(&instrument(&class, 0, critical).unwrap().bytes);
        for used in ["gate", "enterCritical", "exitCritical"] {
            assert!(names.iter().any(|n| n == used), "{} missing", used);
        }
        for unused in ["enter0", "exit0"] {
            assert!(
                !names.iter().any(|n| n == unused),
                "{} still called",
                unused
            );
        }
    }

    /// Examples/Leaves's leaves call `leaf0`; its methods that look alike (an array access,
    /// an integer division, a loop, a call, a Class constant) and its constructor and main
    /// call `enter0`.
    #[test]
    fn only_leaves_record_their_exit_with_their_entry() {
        use jlive_bci::classfile::Code;
        let weave = Weave {
            leaves: true,
            ..Weave::default()
        };
        let out = instrument(&example("Leaves.class"), 0, weave).unwrap();
        let cf = ClassFile::parse(&out.bytes).unwrap();
        let mut prologues = Vec::new();
        for m in &cf.methods {
            let code = m
                .attributes
                .iter()
                .find(|a| cf.pool.is_utf8(a.name, b"Code"));
            let code = Code::parse(&code.unwrap().data).unwrap();
            // The prologue's call: getstatic gate; ifeq; sipush key; invokestatic.
            assert_eq!(code.code[9], 0xB8);
            let called = u16::from_be_bytes([code.code[10], code.code[11]]);
            let (_, trampoline, _) = cf.pool.member_ref(called).unwrap();
            let name = cf.pool.text(m.name).unwrap().into_owned();
            prologues.push((name, String::from_utf8_lossy(trampoline).into_owned()));
        }
        prologues.sort();
        let expected = [
            ("<init>", "enter0"),
            ("add", "leaf0"),
            ("cell", "enter0"),
            ("count", "leaf0"),
            ("half", "enter0"),
            ("main", "enter0"),
            ("name", "leaf0"),
            ("setCount", "leaf0"),
            ("sum", "enter0"),
            ("twice", "leaf0"),
            ("type", "enter0"),
            ("viaLeaf", "enter0"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_string()))
            .collect();
        assert_eq!(prologues, expected);
    }

    /// A call of an intrinsic candidate the hook knows is wrapped: `call` before it and
    /// `called` after it, each given the callee's key; no other call is.
    #[test]
    fn calls_of_known_intrinsic_candidates_are_wrapped_with_the_callees_key() {
        let class = example("Intrinsic.class");
        let min = |owner: &[u8], name: &[u8], descriptor: &[u8]| {
            (owner == b"java/lang/Math" && name == b"min" && descriptor == b"(II)I")
                .then_some(0x1092)
        };
        for (critical, names) in [
            (false, ["call", "called"]),
            (true, ["callCritical", "calledCritical"]),
        ] {
            let weave = Weave {
                critical,
                ..Weave::default()
            };
            let (out, _) = rewrite::instrument_with(&class, |_| Some(0), weave, &min).unwrap();
            assert_eq!(out.call_sites, 1, "one call of Math.min");
            let pool = strings(&out.bytes);
            for name in names {
                assert!(pool.iter().any(|n| n == name), "{} missing", name);
            }
            // sipush KEY; invokestatic call; invokestatic Math.min; sipush KEY; invokestatic
            // called.
            let cf = ClassFile::parse(&out.bytes).unwrap();
            let named = |at: &[u8]| {
                let (owner, name, _) = cf
                    .pool
                    .member_ref(u16::from_be_bytes([at[0], at[1]]))
                    .unwrap();
                format!(
                    "{}.{}",
                    String::from_utf8_lossy(owner),
                    String::from_utf8_lossy(name)
                )
            };
            let push = [0x11, 0x10, 0x92, 0xB8];
            let wrapped: Vec<[String; 3]> = out
                .bytes
                .windows(15)
                .filter(|w| w[..4] == push && w[6] == 0xB8 && w[9..13] == push)
                .map(|w| [named(&w[4..6]), named(&w[7..9]), named(&w[13..15])])
                .collect();
            let t = TRAMPOLINE;
            assert_eq!(
                wrapped,
                [[
                    format!("{}.{}", t, names[0]),
                    "java/lang/Math.min".to_string(),
                    format!("{}.{}", t, names[1])
                ]],
                "the call, between the callee's key pushed for each trampoline"
            );
        }
        let (unknown, _) =
            rewrite::instrument_with(&class, |_| Some(0), Weave::default(), &rewrite::no_callees)
                .unwrap();
        assert_eq!(unknown.call_sites, 0);
        assert!(!strings(&unknown.bytes).iter().any(|n| n == "call"));
    }

    /// Two threads taking chunks between them retransform every class once.
    #[test]
    fn two_threads_take_every_chunk_once() {
        for len in [
            0,
            1,
            RETRANSFORM_CHUNK - 1,
            RETRANSFORM_CHUNK,
            RETRANSFORM_CHUNK + 1,
            1000,
        ] {
            let next = AtomicUsize::new(0);
            let taken: Vec<Vec<std::ops::Range<usize>>> = std::thread::scope(|s| {
                let workers: Vec<_> = (0..2)
                    .map(|_| s.spawn(|| std::iter::from_fn(|| take_chunk(len, &next)).collect()))
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).collect()
            });
            let mut seen = vec![0u32; len];
            for range in taken.iter().flatten() {
                assert!(range.len() <= RETRANSFORM_CHUNK && !range.is_empty());
                for i in range.clone() {
                    seen[i] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "len {}: {:?}", len, seen);
            assert_eq!(take_chunk(len, &next), None, "nothing left after");
        }
    }
}
