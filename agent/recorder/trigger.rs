//! Triggers (IBM's visualizer: "start with" CLASS.METHOD, after N invocations, then trace,
//! dump the population or dump the references). A burst armed with triggers records nothing
//! yet: method entries are seen (capture=bci: the trampolines' entries, on their slow path;
//! capture=events: MethodEntry) and their keys looked up in the symbol table's watch
//! (`symbols/watch.rs`), filled when armed and as classes register after. The entry that
//! fires begins the burst on its own thread before it is recorded, so that the burst's first
//! record on that thread is that entry; a dump is left to the control thread.
//!
//! While nothing is armed an entry pays one relaxed load ([`Triggers::armed`]); while armed,
//! a lookup in a lock-free table.

use crate::symbols::Registry;
use jlive_writer::record::{MethodKey, ThreadKey};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The most triggers one burst takes.
pub const MAX_TRIGGERS: usize = 16;

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

/// The arming that waits, as entries see it.
#[derive(Default)]
pub struct Triggers {
    /// The generation of the arming that waits (0: none). An entry claims the arming it
    /// looked up, and no later one, by swapping its generation for 0.
    armed: AtomicU64,
    /// Counts armings.
    generation: AtomicU64,
    /// Invocations each trigger still lets pass.
    countdown: [AtomicI64; MAX_TRIGGERS],
}

impl Triggers {
    /// Whether a burst waits for a trigger.
    #[inline(always)]
    pub fn armed(&self) -> bool {
        self.armed.load(Ordering::Relaxed) != 0
    }

    /// Arms `triggers` (the first [`MAX_TRIGGERS`]) over the methods of `symbols` (those
    /// registered so far and those to come). Called under the recorder's lock. Returns the
    /// arming's generation and how many methods matched so far.
    pub fn arm(&self, triggers: &[Trigger], symbols: &Registry) -> (u64, usize) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let triggers = &triggers[..triggers.len().min(MAX_TRIGGERS)];
        for (count, t) in self.countdown.iter().zip(triggers) {
            count.store(i64::from(t.delay), Ordering::SeqCst);
        }
        let patterns = triggers
            .iter()
            .map(|t| (t.class.clone(), t.method.clone()))
            .collect();
        let matched = symbols
            .watch
            .start(patterns, |each| symbols.each_method(each));
        self.armed.store(generation, Ordering::SeqCst);
        (generation, matched)
    }

    /// Disarms; true when it was armed (false: nothing was, or a trigger has just fired).
    pub fn disarm(&self, symbols: &Registry) -> bool {
        let was = self.armed.swap(0, Ordering::SeqCst) != 0;
        symbols.watch.stop();
        was
    }

    /// An entry of method `key` while armed: the arming's generation and the trigger that
    /// fired, when this entry claimed it (the recorder then begins the burst). `thread` names
    /// the entering thread (its buffer's key), made if it has none; a thread with none (an
    /// agent's thread, one ending) or running the agent's own Java code does not fire.
    pub fn entered(
        &self,
        symbols: &Registry,
        key: MethodKey,
        thread: impl FnOnce() -> Option<ThreadKey>,
    ) -> Option<(u64, usize, ThreadKey)> {
        // The arming whose table this entry reads (an arming fills its table before it
        // publishes its generation).
        let generation = self.armed.load(Ordering::SeqCst);
        if generation == 0 {
            return None;
        }
        let which = symbols.watch.lookup(key)?;
        if crate::transport::Hub::is_quiet() {
            return None;
        }
        let thread = thread()?;
        if self.countdown[which].fetch_sub(1, Ordering::Relaxed) > 0 {
            return None;
        }
        // One entry fires; the others (and the control thread's disarm) find it gone.
        self.armed
            .compare_exchange(generation, 0, Ordering::SeqCst, Ordering::SeqCst)
            .ok()?;
        symbols.watch.stop();
        Some((generation, which, thread))
    }
}
