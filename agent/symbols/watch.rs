//! A watch over the symbol table: the method keys whose class and method names match a few
//! patterns, found by key in a lock-free table. The visualizer's triggers use it (the
//! recorder's `trigger.rs` arms them): while a burst waits for its trigger, every entry's key
//! is looked up here. The registry adds the methods of each class it registers while a watch
//! is set, so that no class falls between the table's filling and its use.

use jlive_writer::record::{name_matches, MethodKey};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Slots of the key table (a power of two); it takes three quarters of them.
const SLOTS: usize = 4096;
const KEY_BITS: u64 = (1 << 56) - 1;

pub struct Watch {
    /// Whether classes registering are looked at (set before the table is filled from the
    /// registry).
    listening: AtomicBool,
    /// (class, method) patterns, internal names, `*` alone or at the end a wildcard.
    patterns: RwLock<Vec<(String, String)>>,
    /// Open addressing: a method key + 1 in the low 56 bits (0: empty), the index of the
    /// pattern it matched in the high 8 (keys are bci indices below 2^31, or jmethodIDs:
    /// user-space pointers).
    keys: Box<[AtomicU64]>,
    taken: AtomicUsize,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            listening: AtomicBool::new(false),
            patterns: RwLock::new(Vec::new()),
            keys: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
            taken: AtomicUsize::new(0),
        }
    }
}

impl Watch {
    /// Watches `patterns` (at most 256) from now on: the table empties, classes registered
    /// from now on are looked at, and `each_method` lists those registered so far as (key,
    /// class name, method name). Returns how many methods matched so far.
    pub fn start(
        &self,
        patterns: Vec<(String, String)>,
        each_method: impl FnOnce(&mut dyn FnMut(MethodKey, &str, &str)),
    ) -> usize {
        for k in self.keys.iter() {
            k.store(0, Ordering::Relaxed);
        }
        self.taken.store(0, Ordering::SeqCst);
        *self.patterns.write() = patterns.into_iter().take(256).collect();
        self.listening.store(true, Ordering::SeqCst);
        each_method(&mut |key, class, method| self.add(key, class, method));
        self.taken.load(Ordering::SeqCst)
    }

    /// Watches nothing more (the table stays as it was until the next start).
    pub fn stop(&self) {
        self.listening.store(false, Ordering::SeqCst);
        self.patterns.write().clear();
    }

    /// The methods of a class just registered: (key, method name) under `class`.
    pub fn registered<'a>(&self, class: &str, methods: impl Iterator<Item = (MethodKey, &'a str)>) {
        if !self.listening.load(Ordering::Relaxed) {
            return;
        }
        for (key, method) in methods {
            self.add(key, class, method);
        }
    }

    /// The index of the pattern method `key` matched, if it is watched.
    pub fn lookup(&self, key: MethodKey) -> Option<usize> {
        let stored = key.wrapping_add(1) & KEY_BITS;
        let mut at = slot_of(key);
        for _ in 0..SLOTS {
            match self.keys[at].load(Ordering::Relaxed) {
                0 => return None,
                k if k & KEY_BITS == stored => return Some((k >> 56) as usize),
                _ => at = (at + 1) & (SLOTS - 1),
            }
        }
        None
    }

    /// Adds `key` for the first pattern that matches.
    fn add(&self, key: MethodKey, class: &str, method: &str) {
        let which = self
            .patterns
            .read()
            .iter()
            .position(|(c, m)| name_matches(c, class) && name_matches(m, method));
        let Some(which) = which else {
            return;
        };
        if self.taken.load(Ordering::SeqCst) >= SLOTS / 4 * 3 {
            crate::log::info("live: a trigger matches too many methods: the first 3072 are kept");
            return;
        }
        let stored = key.wrapping_add(1) & KEY_BITS;
        let value = stored | (which as u64) << 56;
        let mut at = slot_of(key);
        for _ in 0..SLOTS {
            match self.keys[at].compare_exchange(0, value, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    self.taken.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                Err(k) if k & KEY_BITS == stored => return,
                Err(_) => at = (at + 1) & (SLOTS - 1),
            }
        }
    }
}

fn slot_of(key: MethodKey) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_for_their_pattern_and_no_others() {
        let watch = Watch::default();
        let patterns = vec![
            ("app/Server".to_string(), "handle".to_string()),
            ("app/*".to_string(), "dump*".to_string()),
        ];
        let matched = watch.start(patterns, |each| {
            each(7, "app/Server", "handle");
            each(8, "app/Server", "other");
            each(0, "app/Cache", "dumpAll");
            each(0, "app/Cache", "dumpAll");
        });
        assert_eq!(matched, 2);
        watch.registered("app/Late", [(1 << 40, "dumpLate"), (9, "x")].into_iter());
        assert_eq!(watch.lookup(7), Some(0));
        assert_eq!(watch.lookup(0), Some(1));
        assert_eq!(watch.lookup(1 << 40), Some(1));
        assert_eq!(watch.lookup(8), None);
        assert_eq!(watch.lookup(9), None);
        watch.stop();
        watch.registered("app/Later", [(10, "dumpLater")].into_iter());
        assert_eq!(watch.lookup(10), None);
    }
}
