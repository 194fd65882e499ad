//! The events whose details travel beside their record: concurrency events (their stacks,
//! held waits), call values, heap dumps.

use super::*;

impl<S: Sink> Resolver<S> {
    /// A heap dump, whether or not a burst is open: the objects it names are defined first
    /// (a population dump frees those this file defined that the walk did not reach), then
    /// each object's references, the static references of each class, the roots, and its end.
    /// References to objects that cannot be defined (a class not traced) are left out.
    pub fn heap(&mut self, dump: &HeapDump) -> io::Result<()> {
        let ticks = self.file_ticks(dump.ticks);
        self.tick(ticks);
        let mut events = 0u32;
        let mut live = HashSet::with_capacity(dump.objects.len());
        let mut arrays = HashSet::new();
        for &(object, class, length) in &dump.objects {
            live.insert(object);
            if length != NOT_ARRAY {
                arrays.insert(object);
            }
            if let Some(def) = self.object_def(object, class, length, ticks)? {
                self.emit(Event::ObjectDefine(def))?;
                events += 1;
            }
        }
        if dump.population {
            let mut dead: Vec<u32> = self
                .objects
                .keys()
                .copied()
                .filter(|&o| o < dump.below && !live.contains(&o))
                .collect();
            dead.sort_unstable();
            for object in dead {
                self.objects.remove(&object);
                self.emit(Event::Free { ticks, object })?;
                events += 1;
            }
        }
        let part = |part| Event::Heap {
            ticks,
            part: Box::new(part),
        };
        for (from, mut to) in grouped(&dump.refs) {
            if !self.object_defined(from) {
                continue;
            }
            to.retain(|&o| self.object_defined(o));
            self.emit(part(HeapPart::Refs {
                object: from,
                array: arrays.contains(&from),
                to,
            }))?;
            events += 1;
        }
        for (class, mut to) in grouped(&dump.statics) {
            to.retain(|&o| self.object_defined(o));
            let Some(class) = self.class_id(class, ticks)? else {
                continue;
            };
            if !to.is_empty() {
                self.emit(part(HeapPart::Statics { class, to }))?;
                events += 1;
            }
        }
        for &(kind, object, thread) in &dump.roots {
            if self.object_defined(object) {
                // A thread this file has defined (a root names none other: outside a burst no
                // thread is defined).
                let thread = thread.and_then(|key| match self.current.0 == key {
                    true => self.current.1.id,
                    false => self.threads.get(&key).and_then(|s| s.id),
                });
                self.emit(part(HeapPart::Root {
                    kind,
                    thread,
                    object,
                }))?;
                events += 1;
            }
        }
        self.emit(part(match dump.end {
            DumpEnd::Generation => HeapPart::Generation,
            DumpEnd::Report => HeapPart::EndOfReport { events },
        }))
    }

    /// The waits of threads still waiting as a burst or the file ends: open there.
    pub(super) fn write_held_waits(&mut self) -> io::Result<()> {
        let held: Vec<Box<model::Sync>> = self
            .threads
            .values_mut()
            .chain([&mut self.current.1])
            .filter_map(|s| s.held_wait.take())
            .collect();
        for wait in held {
            self.emit(Event::Sync(wait))?;
        }
        Ok(())
    }

    /// A call's argument or return values, for a traced method on a thread inside the burst
    /// (an object this file has not defined is an unknown one).
    pub(super) fn values(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let Some(Payload::Values(info)) = self.payload(r.key) else {
            return Ok(());
        };
        // They belong to the thread's open call of that method (its entry may have been
        // dropped by overflow=drop, or lie before the burst).
        if self.current.1.frames.last().map(|f| f.key) != Some(info.method) {
            return Ok(());
        }
        let Some(method) = self.method(info.method, r.ticks)? else {
            return Ok(());
        };
        let thread = self.thread_id(thread, r.ticks)?;
        let known = |o: u32| o == NO_OBJECT || self.object_defined(o);
        let values = info
            .values
            .into_iter()
            .map(|v| match v {
                Value::Object(o) if !known(o) => Value::Unknown,
                v => v,
            })
            .collect();
        let object = if known(info.object) {
            info.object
        } else {
            NO_OBJECT
        };
        self.emit(Event::Values(Box::new(Values {
            ticks: r.ticks,
            thread,
            method,
            object,
            kind: info.kind,
            values,
        })))
    }

    /// A concurrency event: its stack's classes are defined first (every class, traced or not:
    /// a stack shows where the thread was).
    pub(super) fn sync(&mut self, thread: ThreadKey, r: &Record) -> io::Result<()> {
        let Some(Payload::Sync(info)) = self.payload(r.key) else {
            return Ok(());
        };
        let id = self.thread_id(thread, r.ticks)?;
        // The owner is defined now if it was not: its own records may reach the writer later
        // (it holds the monitor), or never (it has recorded nothing since the burst began).
        // An owner not defined yet is defined now, as of the burst's beginning: its own events,
        // earlier than this one, may reach the writer later (it holds the monitor).
        let known = info.owner_key.and_then(|key| self.state(key).id);
        let owner_thread = match (
            known,
            self.thread_hashes.get(&info.owner_hash),
            info.owner_key,
        ) {
            _ if info.owner_hash == 0 => None,
            (Some(id), _, _) | (None, Some(&id), _) => Some(id),
            (None, None, Some(key)) if self.symbols.thread(key).is_some() => {
                Some(self.thread_id(key, self.burst_began.min(r.ticks))?)
            }
            _ => None,
        };
        // The object, defined first if this file has not (after a roll, its tag is old).
        let object_id = match info.object_class {
            Some(class) if info.object_id != NO_OBJECT && !self.object_defined(info.object_id) => {
                match self.object_def(info.object_id, class, NOT_ARRAY, r.ticks)? {
                    Some(def) => {
                        self.emit(Event::ObjectDefine(def))?;
                        info.object_id
                    }
                    None => NO_OBJECT,
                }
            }
            _ if self.object_defined(info.object_id) => info.object_id,
            _ => NO_OBJECT,
        };
        let mut stack = Vec::with_capacity(info.frames.len());
        for (m, location) in info.frames {
            let slot = self.class_slot(m.class, r.ticks)?;
            if let Some(ClassSlot {
                id: Some(class),
                methods,
                ..
            }) = slot
            {
                if usize::from(m.index) < methods {
                    let line = self.symbols.class(m.class).map_or(0, |c| {
                        c.methods
                            .get(usize::from(m.index))
                            .map_or(0, |d| d.line_at(location))
                    });
                    stack.push(model::Frame {
                        line,
                        method: MethodId {
                            class,
                            index: m.index,
                        },
                        location,
                    });
                }
            }
        }
        let mut sync = Box::new(model::Sync {
            ticks: r.ticks,
            thread: id,
            kind: info.kind,
            thread_hash: info.thread_hash,
            object: info.object_hash,
            owner: info.owner_hash,
            object_id,
            owner_thread,
            stack,
        });
        let state = self.state(thread);
        let held = state.held_wait.take();
        let same = |k: SyncKind, (kind, hash, object): (SyncKind, u32, u32)| {
            kind == k && (k == SyncKind::Join || (hash, object) == (sync.object, sync.object_id))
        };
        if let Some(wait) = held {
            if sync.kind == SyncKind::Waited && wait.identity() == sync.identity() {
                state
                    .spans
                    .push((SyncKind::Wait, wait.object, wait.object_id));
                self.emit(Event::Sync(wait))?;
            }
        }
        let state = self.state(thread);
        match sync.kind {
            SyncKind::Wait => {
                state.held_wait = Some(sync);
                return Ok(());
            }
            kind if kind.end().is_some() => {
                state.spans.push((kind, sync.object, sync.object_id));
            }
            kind => {
                let begin = SyncKind::ALL.into_iter().find(|k| k.end() == Some(kind));
                if let Some(begin) = begin {
                    match state.spans.last() {
                        Some(&top) if same(begin, top) => {
                            state.spans.pop();
                            (sync.object, sync.object_id) = (top.1, top.2);
                        }
                        // Begun before the burst (or never recorded): not written.
                        _ => return Ok(()),
                    }
                }
            }
        }
        self.emit(Event::Sync(sync))
    }
}

/// `(from, to)` pairs as each `from` with its `to`s, in the order given (a `to` repeated
/// right after itself, once).
pub(super) fn grouped(pairs: &[(u32, u32)]) -> Vec<(u32, Vec<u32>)> {
    let mut sorted = pairs.to_vec();
    sorted.sort_by_key(|p| p.0);
    let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
    for (from, to) in sorted {
        match groups.last_mut() {
            Some((f, list)) if *f == from => {
                if list.last() != Some(&to) {
                    list.push(to);
                }
            }
            _ => groups.push((from, vec![to])),
        }
    }
    groups
}
