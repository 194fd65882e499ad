//! The agent's registry of JVM identities: classes by serial key, methods by key, threads by
//! buffer key. Filled on JVM threads (ClassPrepare, first sight of a thread), read by the
//! writer thread through [`Symbols`]. Readers never wait on a JVM call: the describing work
//! (in `classes.rs`) happens outside the lock, and only the insertion takes it.

use super::watch::Watch;
use jlive_jvm::jni::GlobalClasses;
use jlive_writer::keyhash::KeyHasher;
use jlive_writer::record::*;
use parking_lot::{ReentrantMutex, RwLock};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;

/// The method keys the rewriter gave a class: `base + i` is the class file's method `i`.
#[derive(Clone)]
pub struct BciKeys {
    pub base: u32,
    pub methods: u32,
    /// The methods' names and descriptors in class-file order, when the JVM lists a class's
    /// methods in another order (an agent attached to a running JVM cannot have
    /// can_maintain_original_method_order); None when it keeps that order.
    pub names: Option<Vec<(String, String)>>,
}

/// bci method keys are below this.
pub const MAX_BCI_KEYS: u32 = 1 << 29;

#[derive(Default)]
pub struct Registry {
    classes: RwLock<HashMap<ClassKey, Arc<ClassInfo>>>,
    by_name: RwLock<HashMap<String, ClassKey>>,
    methods: RwLock<HashMap<MethodKey, MethodRef, BuildHasherDefault<KeyHasher>>>,
    threads: RwLock<HashMap<ThreadKey, ThreadInfo>>,
    next_class: AtomicU32,
    /// capture=bci: method keys are indices into this table, filled when a class is linked.
    bci: RwLock<Vec<Option<MethodRef>>>,
    next_bci: AtomicU32,
    /// Keys of classes instrumented at first load, waiting for ClassPrepare:
    /// (loader identity, class name) → their keys.
    pending: parking_lot::Mutex<HashMap<(i64, String), BciKeys>>,
    uses_bci: std::sync::atomic::AtomicBool,
    linked: RwLock<std::collections::HashSet<ClassKey>>,
    /// Whether classes are described with their methods' line numbers (a format writes them).
    line_numbers: std::sync::atomic::AtomicBool,
    /// Threads by identity hash code (the owners of contended monitors).
    thread_hashes: RwLock<HashMap<u32, ThreadKey>>,
    /// The methods of stack frames, by jmethodID.
    frames: RwLock<HashMap<u64, MethodRef, BuildHasherDefault<KeyHasher>>>,
    /// The methods a trigger watches for (the visualizer's `triggermethod`).
    pub watch: Watch,
    /// Registration is serialised (re-entrant: a class registers its superclass first).
    pub(super) register: ReentrantMutex<()>,
    /// java/lang/Thread, once VM init has found it (lazy registration: its subclasses
    /// register as they are prepared).
    pub(super) thread_class: OnceLock<GlobalClasses>,
}

impl Registry {
    pub fn new() -> Registry {
        Registry {
            next_class: AtomicU32::new(1),
            ..Registry::default()
        }
    }

    /// A fresh class key (never 0).
    pub fn new_class_key(&self) -> ClassKey {
        self.next_class.fetch_add(1, Ordering::Relaxed)
    }

    /// Stores (or replaces) a class and its methods' keys, in method order.
    pub fn put_class(&self, key: ClassKey, info: ClassInfo, method_keys: &[MethodKey]) {
        // Under capture=bci records carry bci keys (the `bci` table): jmethodIDs are not
        // looked up.
        if !self.uses_bci.load(Ordering::Relaxed) {
            let mut methods = self.methods.write();
            for (index, &m) in method_keys.iter().enumerate() {
                methods.insert(
                    m,
                    MethodRef {
                        class: key,
                        index: index as u16,
                    },
                );
            }
        }
        self.by_name.write().entry(info.name.clone()).or_insert(key);
        let info = Arc::new(info);
        self.classes.write().insert(key, info.clone());
        // After the class is in the table: a trigger armed meanwhile finds it in one or the
        // other.
        if !self.uses_bci.load(Ordering::Relaxed) {
            let names = info.methods.iter().map(|m| m.name.as_str());
            self.watch
                .registered(&info.name, method_keys.iter().copied().zip(names));
        }
    }

    /// Calls `f` with each method registered so far: (key, class name, method name).
    pub fn each_method(&self, f: &mut dyn FnMut(MethodKey, &str, &str)) {
        let classes = self.classes.read();
        let mut named = |key: MethodKey, m: &MethodRef| {
            if let Some(c) = classes.get(&m.class) {
                if let Some(d) = c.methods.get(usize::from(m.index)) {
                    f(key, &c.name, &d.name);
                }
            }
        };
        if self.uses_bci.load(Ordering::Relaxed) {
            for (key, m) in self.bci.read().iter().enumerate() {
                if let Some(m) = m {
                    named(key as MethodKey, m);
                }
            }
        } else {
            for (&key, m) in self.methods.read().iter() {
                named(key, m);
            }
        }
    }

    /// Describe methods with their line numbers from now on.
    pub fn keep_line_numbers(&self) {
        self.line_numbers.store(true, Ordering::Relaxed);
    }

    pub fn wants_line_numbers(&self) -> bool {
        self.line_numbers.load(Ordering::Relaxed)
    }

    pub fn has_methods(&self, key: ClassKey) -> bool {
        self.classes
            .read()
            .get(&key)
            .is_some_and(|c| !c.methods.is_empty())
    }

    pub fn put_thread(&self, key: ThreadKey, info: ThreadInfo) {
        if info.hash != 0 {
            self.thread_hashes.write().insert(info.hash, key);
        }
        self.threads.write().insert(key, info);
    }

    /// Whether a thread was described without a name (one attached through JNI records under
    /// capture=bci while its Thread is constructed, before it has one).
    pub fn thread_unnamed(&self, key: ThreadKey) -> bool {
        self.threads
            .read()
            .get(&key)
            .is_some_and(|t| t.name.is_empty())
    }

    /// Forgets a thread that could not be followed.
    pub fn forget_thread(&self, key: ThreadKey) {
        if let Some(info) = self.threads.write().remove(&key) {
            self.forget_hash(info.hash, key);
        }
    }

    fn forget_hash(&self, hash: u32, key: ThreadKey) {
        let mut hashes = self.thread_hashes.write();
        if hashes.get(&hash) == Some(&key) {
            hashes.remove(&hash);
        }
    }

    /// The key of the thread whose identity hash code is `hash`, if it has recorded.
    pub fn thread_by_hash(&self, hash: u32) -> Option<ThreadKey> {
        self.thread_hashes.read().get(&hash).copied()
    }

    /// The number of threads described (the ones that have not ended, or not been written).
    pub fn thread_count(&self) -> usize {
        self.threads.read().len()
    }

    pub fn class_count(&self) -> usize {
        self.classes.read().len()
    }

    /// Method keys are bci keys from now on.
    pub fn use_bci(&self) {
        self.uses_bci.store(true, Ordering::Relaxed);
    }

    /// Reserves `n` consecutive bci method keys; None when the 29-bit key space is used up
    /// (the trampolines' critical downcalls mark wrapped calls with bit 30 and leaves with
    /// bit 29: `capture::bci::CALL_BIT`, `LEAF_BIT`).
    pub fn reserve_bci(&self, n: u32) -> Option<u32> {
        let base = self.next_bci.fetch_add(n, Ordering::Relaxed);
        base.checked_add(n)
            .filter(|&end| end <= MAX_BCI_KEYS)
            .map(|_| base)
    }

    /// Records keys to link when the class is prepared.
    pub fn add_pending(&self, loader: i64, name: String, keys: BciKeys) {
        self.pending.lock().insert((loader, name), keys);
    }

    /// Whether a class's keys wait for it to be prepared.
    pub fn is_pending(&self, loader: i64, name: &str) -> bool {
        self.pending
            .lock()
            .contains_key(&(loader, name.to_string()))
    }

    /// A class's keys waiting for it to be prepared, left in place.
    pub fn pending(&self, loader: i64, name: &str) -> Option<BciKeys> {
        self.pending
            .lock()
            .get(&(loader, name.to_string()))
            .cloned()
    }

    pub fn take_pending(&self, loader: i64, name: &str) -> Option<BciKeys> {
        self.pending.lock().remove(&(loader, name.to_string()))
    }

    /// Ties a class's keys to its registered methods: by position, or by name and descriptor
    /// where the JVM's order is not the class file's.
    pub fn link_bci(&self, keys: &BciKeys, class: ClassKey) {
        let info = self.classes.read().get(&class).cloned();
        let index_of = |i: usize| -> Option<u16> {
            let Some(names) = &keys.names else {
                return Some(i as u16);
            };
            let (name, descriptor) = names.get(i)?;
            let methods = &info.as_ref()?.methods;
            let j = methods
                .iter()
                .position(|m| m.name == *name && m.signature == *descriptor)?;
            Some(j as u16)
        };
        let mut table = self.bci.write();
        let end = (keys.base + keys.methods) as usize;
        if table.len() < end {
            table.resize(end, None);
        }
        for i in 0..keys.methods {
            table[(keys.base + i) as usize] =
                index_of(i as usize).map(|index| MethodRef { class, index });
        }
        drop(table);
        if let Some(info) = &info {
            let names = (0..keys.methods).filter_map(|i| {
                let index = index_of(i as usize)?;
                let method = info.methods.get(usize::from(index))?;
                Some((MethodKey::from(keys.base + i), method.name.as_str()))
            });
            self.watch.registered(&info.name, names);
        }
        self.linked.write().insert(class);
    }

    /// Whether a class already carries instrumentation.
    pub fn is_linked(&self, class: Option<ClassKey>) -> bool {
        class.is_some_and(|c| self.linked.read().contains(&c))
    }

    /// Whether a registered class (internal name) is java/lang/Thread or extends it, and
    /// inherits Thread's `sleep` of `descriptor` (no class on the way declares its own).
    /// Classes are known by name: of two loaders' classes of one name, the first registered.
    pub fn inherits_thread_sleep(&self, name: &str, descriptor: &str) -> bool {
        let (classes, by_name) = (self.classes.read(), self.by_name.read());
        let mut key = by_name.get(name).copied();
        for _ in 0..64 {
            let Some(info) = key.and_then(|k| classes.get(&k)) else {
                return false;
            };
            if info.name == "java/lang/Thread" {
                return true;
            }
            let hides = info
                .methods
                .iter()
                .any(|m| m.name == "sleep" && m.signature == descriptor);
            if hides {
                return false;
            }
            key = info.superclass;
        }
        false
    }

    pub fn frame_method(&self, method: u64) -> Option<MethodRef> {
        self.frames.read().get(&method).copied()
    }

    pub fn put_frame_method(&self, method: u64, m: MethodRef) {
        self.frames.write().insert(method, m);
    }
}

impl Symbols for Registry {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
        if self.uses_bci.load(Ordering::Relaxed) {
            return self.bci.read().get(key as usize).copied().flatten();
        }
        self.methods.read().get(&key).copied()
    }
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
        self.classes.read().get(&key).cloned()
    }
    fn class_by_name(&self, name: &str) -> Option<ClassKey> {
        self.by_name.read().get(name).copied()
    }
    fn thread(&self, key: ThreadKey) -> Option<ThreadInfo> {
        self.threads.read().get(&key).cloned()
    }
    fn thread_ended(&self, key: ThreadKey) {
        if let Some(info) = self.threads.write().remove(&key) {
            self.forget_hash(info.hash, key);
        }
    }
}
