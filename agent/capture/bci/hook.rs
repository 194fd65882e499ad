//! ClassFileLoadHook: each included class is rewritten (`jlive_bci::rewrite`) with a block of
//! method keys, which are tied to the class's entry in the symbol table when it is prepared
//! (or at once for a retransformed class); and the identities of class loaders (their tags),
//! which tell two loaders' classes of one name apart until then.

use super::{excluded_with, weave, Bci, LOADER_TAG};
use crate::log;
use crate::runtime::Runtime;
use crate::symbols::{internal_name, BciKeys};
use jlive_bci::rewrite::{self, Weave, TRAMPOLINE};
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{cap, Jvmti};
use jlive_jvm::refs::{Class, Local, Ref};
use std::sync::atomic::Ordering;

/// A class file the ClassFileLoadHook hands over.
#[derive(Clone, Copy)]
pub struct LoadedClass<'a, 'l> {
    /// The class retransformed, None at its first load.
    pub redefined: Option<&'a Class<'l>>,
    /// Its defining loader, None for the bootstrap loader.
    pub loader: Option<&'a Local<'l>>,
    pub name: &'a str,
    pub bytes: &'a [u8],
}

impl crate::capture::Capture {
    /// ClassFileLoadHook (the raw arguments are taken apart in `entry/jvmti.rs`): the
    /// rewritten class, or None to leave it as it is. Keys are tied to the class now
    /// (retransformation) or when it is prepared (first load).
    pub fn class_file_load(
        &self,
        rt: &Runtime,
        jni: Jni<'_>,
        class: LoadedClass,
    ) -> Option<Vec<u8>> {
        let LoadedClass {
            redefined,
            loader,
            name,
            bytes,
        } = class;
        let jvmti = rt.jvmti();
        let bci = self.bci();
        if !bci.ready.load(Ordering::SeqCst) || name == TRAMPOLINE {
            return None; // not yet: retransformed at VM init instead
        }
        let synced = if rt.options().monitors {
            crate::capture::sync::hook_calls(rt, name, bytes)
        } else {
            None
        };
        // Read once: the exclusion of java/util/Objects and the calls woven in go together.
        let critical = bci.critical.load(Ordering::SeqCst);
        if !bci.rewrites_now(rt) || excluded_with(name, critical) || !rt.filter().traces(name) {
            return synced;
        }
        let bytes = synced.as_deref().unwrap_or(bytes);
        let boot = loader.is_none();
        let Some(out) = bci.transform(
            rt,
            name,
            bytes,
            weave(rt, redefined.is_none(), critical),
            boot,
        ) else {
            return synced;
        };
        let keys = BciKeys {
            base: out.base,
            methods: out.methods,
            // Attached to a running JVM, the JVM's order of a class's methods is not its file's.
            names: if rt.caps().has(cap::MAINTAIN_ORIGINAL_METHOD_ORDER) {
                None
            } else {
                jlive_bci::classfile::method_names(bytes).ok()
            },
        };
        match redefined {
            None => {
                let loader = loader.map_or(0, |l| bci.loader_identity(jvmti, l));
                rt.symbols().add_pending(loader, name.to_string(), keys);
            }
            Some(redefined) => {
                if let Some(key) = rt.classes(jvmti, jni).key(redefined) {
                    rt.symbols().link_bci(&keys, key);
                }
            }
        }
        Some(out.bytes)
    }
}

struct Transformed {
    bytes: Vec<u8>,
    base: u32,
    methods: u32,
}

impl Bci {
    /// Rewrites one class; None leaves it as it was (counted). The intrinsic candidates of a boot
    /// class (`boot`) join [`CALLEES`].
    fn transform(
        &self,
        rt: &Runtime,
        name: &str,
        bytes: &[u8],
        weave: Weave,
        boot: bool,
    ) -> Option<Transformed> {
        let started = std::time::Instant::now();
        let result = {
            let callees = self.callees.read();
            let lookup = |owner: &[u8], method: &[u8], descriptor: &[u8]| {
                let methods = callees.get(std::str::from_utf8(owner).ok()?)?;
                let (_, _, key) = methods
                    .iter()
                    .find(|(n, d, _)| n.as_bytes() == method && d.as_bytes() == descriptor)?;
                Some(*key)
            };
            rewrite::instrument_with(bytes, |n| rt.symbols().reserve_bci(n), weave, &lookup)
        };
        let stats = &self.stats;
        stats
            .nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        match result {
            Ok((out, base)) => {
                let counter = if out.instrumented > 0 {
                    &stats.classes
                } else {
                    &stats.untouched
                };
                counter.fetch_add(1, Ordering::Relaxed);
                stats
                    .methods
                    .fetch_add(u64::from(out.instrumented), Ordering::Relaxed);
                stats
                    .padded
                    .fetch_add(u64::from(out.padded), Ordering::Relaxed);
                stats
                    .leaves
                    .fetch_add(u64::from(out.leaves), Ordering::Relaxed);
                stats
                    .intrinsic
                    .fetch_add(u64::from(out.intrinsic), Ordering::Relaxed);
                stats
                    .call_sites
                    .fetch_add(u64::from(out.call_sites), Ordering::Relaxed);
                stats
                    .native
                    .fetch_add(u64::from(out.native), Ordering::Relaxed);
                stats
                    .skipped
                    .fetch_add(out.skipped.len() as u64, Ordering::Relaxed);
                for (method, why) in &out.skipped {
                    log::info(&format!("not instrumented: {}.{}: {}", name, method, why));
                }
                if out.instrumented == 0 {
                    // Nothing woven (an interface, an annotation type, only natives): the class
                    // loads as it was, and keeps its place in the CDS archive.
                    return None;
                }
                if boot && !out.intrinsics.is_empty() {
                    self.callees
                        .write()
                        .insert(name.to_string(), out.intrinsics);
                }
                Some(Transformed {
                    bytes: out.bytes,
                    base,
                    methods: out.methods,
                })
            }
            Err(e) => {
                stats.failed_classes.fetch_add(1, Ordering::Relaxed);
                log::info(&format!("not instrumented: class {}: {}", name, e));
                None
            }
        }
    }

    /// ClassPrepare: ties the keys given at load time to the registered class.
    pub fn link_prepared(
        &self,
        rt: &Runtime,
        jvmti: Jvmti,
        jni: Jni<'_>,
        class: &Class<'_>,
        key: jlive_writer::record::ClassKey,
    ) {
        let Ok(signature) = jvmti.class_signature(class) else {
            return;
        };
        let name = internal_name(&signature);
        let loader = self.loader_of(jvmti, jni, class);
        // Linked before the pending entry goes: a retransformation that looks for either
        // (`to_retransform`) always finds one.
        if let Some(keys) = rt.symbols().pending(loader, &name) {
            rt.symbols().link_bci(&keys, key);
            rt.symbols().take_pending(loader, &name);
        }
    }

    /// The identity of `class`'s loader ([`loader_identity`]; 0 = bootstrap).
    pub(super) fn loader_of(&self, jvmti: Jvmti, jni: Jni<'_>, class: &Class<'_>) -> i64 {
        jvmti.class_loader(jni, class).map_or(0, |l| {
            let identity = self.loader_identity(jvmti, &l);
            jni.delete_local(l);
            identity
        })
    }

    /// The identity of a class loader (not the bootstrap loader, 0): its tag, given one the
    /// first time.
    fn loader_identity(&self, jvmti: Jvmti, loader: &impl Ref) -> i64 {
        match jvmti.tag(loader) {
            Ok(0) => {
                let tag = LOADER_TAG | (self.loaders.fetch_add(1, Ordering::Relaxed) + 1) as i64;
                if jvmti.set_tag(loader, tag).is_ok() {
                    tag
                } else {
                    -1
                }
            }
            Ok(tag) => tag,
            Err(_) => -1,
        }
    }
}
