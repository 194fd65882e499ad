//! Triggers (IBM's visualizer: "start with" CLASS.METHOD, after N invocations, then trace,
//! dump the population or dump the references). A burst armed with triggers records nothing
//! yet: method entries are seen (capture=bci: the trampolines' entries, on their slow path;
//! capture=events: MethodEntry) and their keys looked up in a table of the triggers' methods,
//! filled from the registry when armed and as classes register after. The entry that fires
//! begins the burst on its own thread before it is recorded, so that the burst's first record
//! on that thread is that entry; a dump is left to the control thread.
//!
//! While nothing is armed an entry pays one relaxed load ([`armed`]); while armed, a lookup
//! in a lock-free table.

use crate::profiler::Profiler;
use jlive_writer::record::{name_matches, MethodKey, ThreadKey};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// The most triggers one burst takes.
pub const MAX_TRIGGERS: usize = 16;

/// Slots of the key table (a power of two); it takes three quarters of them.
const SLOTS: usize = 4096;

/// What a trigger does when it fires (the visualizer's action 0, 1, 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Trace,
    Population,
    References,
}

/// `triggermethod CLASS METHOD LOCK DELAY ACTION`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// Internal names (`*` alone or at the end: a wildcard).
    pub class: String,
    pub method: String,
    /// Only the causal thread is traced.
    pub lock: bool,
    /// Invocations let pass before it fires.
    pub delay: u32,
    pub action: Action,
}

/// The generation of the arming that waits (0: none). An entry claims the arming it looked
/// up, and no later one, by swapping its generation for 0.
static ARMED: AtomicU64 = AtomicU64::new(0);
/// Whether classes registering are looked at (set before the table is filled from the
/// registry, so that no class falls between the two).
static LISTENING: AtomicBool = AtomicBool::new(false);
static PATTERNS: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());
/// Open addressing: a method key + 1 in the low 56 bits (0: empty), the trigger it belongs to
/// in the high 8 (keys are bci indices below 2^31, or jmethodIDs: user-space pointers).
static KEYS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
const KEY_BITS: u64 = (1 << 56) - 1;
static TAKEN: AtomicUsize = AtomicUsize::new(0);
/// Counts armings.
static GENERATION: AtomicU64 = AtomicU64::new(0);
static COUNTDOWN: [AtomicI64; MAX_TRIGGERS] = [const { AtomicI64::new(0) }; MAX_TRIGGERS];

/// Whether a burst waits for a trigger.
#[inline(always)]
pub fn armed() -> bool {
    ARMED.load(Ordering::Relaxed) != 0
}

/// Arms `triggers` (the first [`MAX_TRIGGERS`]); `each_method` lists the methods registered
/// so far as (key, class name, method name). Called under the bursts lock. Returns the
/// arming's generation and how many methods matched so far.
pub fn arm(
    triggers: &[Trigger],
    each_method: impl FnOnce(&mut dyn FnMut(MethodKey, &str, &str)),
) -> (u64, usize) {
    clear();
    let generation = GENERATION.fetch_add(1, Ordering::SeqCst) + 1;
    let triggers = &triggers[..triggers.len().min(MAX_TRIGGERS)];
    *PATTERNS.write() = triggers
        .iter()
        .map(|t| (t.class.clone(), t.method.clone()))
        .collect();
    for (count, t) in COUNTDOWN.iter().zip(triggers) {
        count.store(i64::from(t.delay), Ordering::SeqCst);
    }
    LISTENING.store(true, Ordering::SeqCst);
    each_method(&mut |key, class, method| add(key, class, method));
    ARMED.store(generation, Ordering::SeqCst);
    (generation, TAKEN.load(Ordering::SeqCst))
}

/// Disarms; true when it was armed (false: nothing was, or a trigger has just fired).
pub fn disarm() -> bool {
    let was = ARMED.swap(0, Ordering::SeqCst) != 0;
    LISTENING.store(false, Ordering::SeqCst);
    PATTERNS.write().clear();
    was
}

/// Methods of a class registered while armed: (key, method name) under `class`.
pub fn registered<'a>(class: &str, methods: impl Iterator<Item = (MethodKey, &'a str)>) {
    if !LISTENING.load(Ordering::Relaxed) {
        return;
    }
    for (key, method) in methods {
        add(key, class, method);
    }
}

/// An entry of method `key` while armed; true when it began the burst (record the entry).
/// `thread` names the entering thread (its buffer's key), made if it has none; a thread with
/// none (an agent's thread, one ending) or running the agent's own Java code does not fire.
pub fn entered(
    p: &'static Profiler,
    key: MethodKey,
    thread: impl FnOnce() -> Option<ThreadKey>,
) -> bool {
    // The arming whose table this entry reads (an arming fills its table before it publishes
    // its generation).
    let generation = ARMED.load(Ordering::SeqCst);
    if generation == 0 {
        return false;
    }
    let Some(which) = lookup(key) else {
        return false;
    };
    if crate::buffer::Hub::is_quiet() {
        return false;
    }
    let Some(thread) = thread() else {
        return false;
    };
    if COUNTDOWN[which].fetch_sub(1, Ordering::Relaxed) > 0 {
        return false;
    }
    // One entry fires; the others (and the control thread's disarm) find it gone.
    let claimed = ARMED.compare_exchange(generation, 0, Ordering::SeqCst, Ordering::SeqCst);
    if claimed.is_err() {
        return false;
    }
    LISTENING.store(false, Ordering::SeqCst);
    p.fire(generation, which, key, thread)
}

fn clear() {
    for k in &KEYS {
        k.store(0, Ordering::Relaxed);
    }
    TAKEN.store(0, Ordering::SeqCst);
}

fn slot_of(key: MethodKey) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize & (SLOTS - 1)
}

fn lookup(key: MethodKey) -> Option<usize> {
    let stored = key.wrapping_add(1) & KEY_BITS;
    let mut at = slot_of(key);
    for _ in 0..SLOTS {
        match KEYS[at].load(Ordering::Relaxed) {
            0 => return None,
            k if k & KEY_BITS == stored => return Some((k >> 56) as usize),
            _ => at = (at + 1) & (SLOTS - 1),
        }
    }
    None
}

/// Adds `key` for the first trigger whose patterns match.
fn add(key: MethodKey, class: &str, method: &str) {
    let which = PATTERNS
        .read()
        .iter()
        .position(|(c, m)| name_matches(c, class) && name_matches(m, method));
    let Some(which) = which else {
        return;
    };
    if TAKEN.load(Ordering::SeqCst) >= SLOTS / 4 * 3 {
        crate::log::info("live: a trigger matches too many methods: the first 3072 are kept");
        return;
    }
    let stored = key.wrapping_add(1) & KEY_BITS;
    let value = stored | (which as u64) << 56;
    let mut at = slot_of(key);
    for _ in 0..SLOTS {
        match KEYS[at].compare_exchange(0, value, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                TAKEN.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Err(k) if k & KEY_BITS == stored => return,
            Err(_) => at = (at + 1) & (SLOTS - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_for_their_trigger_and_no_others() {
        let triggers = [
            Trigger {
                class: "app/Server".into(),
                method: "handle".into(),
                lock: true,
                delay: 0,
                action: Action::Trace,
            },
            Trigger {
                class: "app/*".into(),
                method: "dump*".into(),
                lock: false,
                delay: 2,
                action: Action::Population,
            },
        ];
        let (_, matched) = arm(&triggers, |each| {
            each(7, "app/Server", "handle");
            each(8, "app/Server", "other");
            each(0, "app/Cache", "dumpAll");
            each(0, "app/Cache", "dumpAll");
        });
        assert_eq!(matched, 2);
        registered("app/Late", [(1 << 40, "dumpLate"), (9, "x")].into_iter());
        assert_eq!(lookup(7), Some(0));
        assert_eq!(lookup(0), Some(1));
        assert_eq!(lookup(1 << 40), Some(1));
        assert_eq!(lookup(8), None);
        assert_eq!(lookup(9), None);
        assert!(armed());
        assert!(disarm());
        assert!(!disarm());
        registered("app/Later", [(10, "dumpLater")].into_iter());
        assert_eq!(lookup(10), None);
    }
}
