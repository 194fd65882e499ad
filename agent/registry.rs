//! The agent's registry of JVM identities: classes by serial key, methods by key, threads by
//! buffer key. Filled on JVM threads (ClassPrepare, first sight of a thread), read by the
//! writer thread through [`Symbols`]. Readers never wait on a JVM call: the describing work
//! (in `classes.rs`) happens outside the lock, and only the insertion takes it.

use jlive_writer::record::*;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

#[derive(Default)]
pub struct Registry {
    classes: RwLock<HashMap<ClassKey, Arc<ClassInfo>>>,
    by_name: RwLock<HashMap<String, ClassKey>>,
    methods: RwLock<HashMap<MethodKey, MethodRef>>,
    threads: RwLock<HashMap<ThreadKey, ThreadInfo>>,
    next_class: AtomicU32,
    /// Texts of user events recorded on threads, until the writer takes them.
    messages: parking_lot::Mutex<HashMap<u64, String>>,
    next_message: std::sync::atomic::AtomicU64,
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
        {
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
        self.classes.write().insert(key, Arc::new(info));
    }

    pub fn has_methods(&self, key: ClassKey) -> bool {
        self.classes
            .read()
            .get(&key)
            .is_some_and(|c| !c.methods.is_empty())
    }

    pub fn put_thread(&self, key: ThreadKey, name: String) {
        self.threads.write().insert(key, ThreadInfo { name });
    }

    pub fn class_count(&self) -> usize {
        self.classes.read().len()
    }

    /// Keeps a user event's text for the writer; returns its key.
    pub fn put_message(&self, text: String) -> u64 {
        let key = self.next_message.fetch_add(1, Ordering::Relaxed);
        self.messages.lock().insert(key, text);
        key
    }

    pub fn take_message(&self, key: u64) -> Option<String> {
        self.messages.lock().remove(&key)
    }
}

impl Symbols for Registry {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
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
    fn message(&self, key: u64) -> Option<String> {
        self.take_message(key)
    }
}
