//! Method entries and exits: each thread's frames, the burst's scope (limit, depth, trigger),
//! records dropped by `overflow=drop`, and a method key resolved to its ID.

use super::*;

impl<S: Sink> Resolver<S> {
    /// A record of `thread` other than a concurrency event: a Wait it holds did not wait (the
    /// thread went on), and is dropped.
    #[inline]
    pub(super) fn went_on(&mut self, thread: ThreadKey) {
        let state = self.state(thread);
        if state.held_wait.is_some() {
            state.held_wait = None;
        }
    }

    /// Method records of `thread` were dropped (overflow=drop): a user event says how many,
    /// and the thread's open frames are left there, so that what follows starts from an
    /// empty stack (the exits of those frames, when they come, find none and are not written).
    pub(super) fn lost(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        self.counts.lost_entries += r.key;
        self.counts.lost_exits += u64::from(r.arg);
        let id = self.thread_id(thread, r.ticks)?;
        let state = state_of(&mut self.current, &mut self.threads, thread);
        let closed = state.leave_above(&mut self.sink, id, 0, r.ticks, |_| 0)?;
        self.trigger_left(thread, 0, r.ticks);
        self.emit(Event::UserEvent {
            ticks: r.ticks,
            text: format!(
                "{}{} entries and {} exits of thread {} dropped; {} open frames left here",
                LOST_PREFIX, r.key, r.arg, id, closed
            ),
        })
    }

    pub(super) fn method_entry(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let mut target = self.method(r.key, r.ticks)?;
        let state = state_of(&mut self.current, &mut self.threads, thread);
        // With methods=entry no frames are kept and none is ever left.
        let keep = !self.config.entries_only;
        if let Some(scope) = &self.scope {
            if scope.depth.is_some_and(|d| keep && state.depth >= d) {
                target = None;
            }
            if let Some(t) = scope.trigger {
                let on = thread == t.thread || self.carrier == t.thread;
                if self.trigger_entered.is_none() && on && r.key == t.method {
                    self.trigger_entered = Some(thread);
                    self.trigger_base = state.frames.len();
                }
            }
        }
        let (depth, ticket) = state.enter(r.key, target, r.extra, keep);
        let Some(method) = target else {
            return Ok(());
        };
        let id = match state.id {
            Some(id) => id,
            None => self.thread_id(thread, r.ticks)?,
        };
        let object = if r.arg != NO_OBJECT && self.object_defined(r.arg) {
            r.arg
        } else {
            model::NO_OBJECT
        };
        self.sink.enter(Enter {
            ticks: r.ticks,
            thread: id,
            method,
            object,
            depth,
            ticket,
        })
    }

    /// A constructor entered before its receiver could be named: the receiver is the object
    /// its ObjectBound record (found later in the batch) names, defined here, before use.
    pub(super) fn constructor_entry(
        &mut self,
        thread: ThreadKey,
        r: &Record,
        bound: Option<&Record>,
    ) -> io::Result<()> {
        let mut entry = *r;
        entry.ticks = self.file_ticks(r.ticks);
        entry.arg = NO_OBJECT;
        self.tick(entry.ticks);
        if let Some(b) = bound {
            if let Some(def) =
                self.object_def(b.arg, b.extra as ClassKey, NOT_ARRAY, entry.ticks)?
            {
                self.emit(Event::ObjectDefine(def))?;
            }
            entry.arg = b.arg;
        }
        self.method_entry(thread, &entry)
    }

    pub(super) fn method_exit(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let state = state_of(&mut self.current, &mut self.threads, thread);
        // The frame this exit closes is the top one, except when exits were missed (an
        // exception out of a constructor's super() call under capture=bci): then the frames
        // above it are left here too. An exit of no open frame was entered before the burst.
        let Some(at) = state.frames.iter().rposition(|f| f.key == r.key) else {
            return Ok(());
        };
        let Some(id) = state.id else {
            state.frames.truncate(at); // a thread with no traced entry has nothing to leave
            self.trigger_left(thread, at, r.ticks);
            return Ok(());
        };
        if r.is_bare_exit() && state.frames[at].method.method().is_some() {
            self.counts.leaf_calls += 1;
        }
        let stck = &self.config.stck;
        let overhead = |f: &Frame| {
            let spent = u64::from(f.overhead) + u64::from(r.extra);
            stck.as_ref().map_or(spent, |s| s.span(spent))
        };
        state.leave_above(&mut self.sink, id, at, r.ticks, overhead)?;
        let left = state.frames.len();
        self.trigger_left(thread, left, r.ticks);
        Ok(())
    }

    /// The trigger's thread is down to `frames` frames: once below the trigger's, with
    /// "at trigger exit", nothing later is written and the agent is told.
    pub(super) fn trigger_left(&mut self, thread: ThreadKey, frames: usize, ticks: u64) {
        let Some(t) = self.scope.as_ref().and_then(|s| s.trigger) else {
            return;
        };
        if t.end_on_exit
            && self.trigger_entered == Some(thread)
            && self.cut.is_none()
            && frames <= self.trigger_base
        {
            self.cut = Some(ticks);
            self.counts.trigger_exits += 1;
        }
    }

    /// A method, defining its class if needed; None when the method is unknown, its class
    /// excluded or past the class limit.
    pub(super) fn method(&mut self, key: MethodKey, ticks: u64) -> io::Result<Option<MethodId>> {
        if let Some(&cached) = self.dense.get(key as usize) {
            if cached != Resolved::UNKNOWN {
                return Ok(cached.method());
            }
        }
        if key >= DENSE_KEYS {
            if let Some(&cached) = self.methods.get(&key) {
                return Ok(cached);
            }
        }
        let resolved = match self.symbols.method(key) {
            None => {
                self.counts.unknown_methods += 1;
                None
            }
            Some(m) if !self.within_limit(m) => None,
            Some(m) => {
                let mut slot = self.class_slot(m.class, ticks)?;
                if slot.is_some_and(|s| s.id.is_some() && usize::from(m.index) >= s.methods) {
                    self.classes.remove(&m.class);
                    slot = self.class_slot(m.class, ticks)?;
                }
                match slot {
                    Some(ClassSlot {
                        id: Some(class),
                        traced: true,
                        methods,
                    }) if usize::from(m.index) < methods => Some(MethodId {
                        class,
                        index: m.index,
                    }),
                    _ => None,
                }
            }
        };
        if key < DENSE_KEYS {
            let at = key as usize;
            if self.dense.len() <= at {
                self.dense.resize(at + 1, Resolved::UNKNOWN);
            }
            self.dense[at] = Resolved::of(resolved);
        } else {
            self.methods.insert(key, resolved);
        }
        Ok(resolved)
    }

    /// Whether the open burst's "Limit to" keeps a method's invocations (true without one).
    pub(super) fn within_limit(&self, m: MethodRef) -> bool {
        let Some(scope) = self.scope.as_ref().filter(|s| !s.limit.is_empty()) else {
            return true;
        };
        let Some(class) = self.symbols.class(m.class) else {
            return false;
        };
        let Some(method) = class.methods.get(usize::from(m.index)) else {
            return false;
        };
        scope
            .limit
            .iter()
            .any(|(c, n)| name_matches(c, &class.name) && name_matches(n, &method.name))
    }
}

/// The ObjectBound record of the constructor entered with `key`, among the records after its
/// entry: the first one at the same call depth, before the constructor exits.
pub(super) fn bound_receiver(key: MethodKey, rest: &[Slot], overhead: u32) -> Option<Record> {
    let mut depth = 0usize;
    for r in Slot::records(rest, overhead) {
        match r.kind {
            RecordKind::MethodEntry => depth += 1,
            RecordKind::MethodExit if depth == 0 => return None,
            RecordKind::MethodExit => depth -= 1,
            RecordKind::ObjectBound if depth == 0 && r.key == key => return Some(r),
            // Another thread's records follow.
            RecordKind::Mount | RecordKind::Unmount => return None,
            _ => {}
        }
    }
    None
}
