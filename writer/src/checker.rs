//! The rules every trace keeps, checked one model event at a time ([`Checker`]): what `jlive
//! check` verifies of any format, beneath what each format's reader rejects of its own bytes.
//!
//! As model events: every event but VM start and end inside a burst; threads, classes and
//! objects defined once, before use (a class after its superclass and interfaces); each method
//! index within its class; an entry's ticket is its thread's next; a leave closes the
//! thread's top frame of this burst, at the depth and with the ticket of its entry; ticks
//! never decrease on one thread.

use crate::codec::{fail, DecodeError};
use crate::format::Format;
use crate::model::*;
use std::collections::{HashMap, HashSet};

/// What a clean trace holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    pub format: Option<Format>,
    /// Events as the format counts them (JinsightLive: the header's count).
    pub events: u64,
    pub bursts: u64,
    pub threads: u64,
    pub classes: u64,
    pub objects: u64,
    /// Concurrency events (`monitors=on`, ORCA), and the waits, joins, sleeps and contended
    /// enters still open where the file ends (a thread may wait for ever).
    pub syncs: u64,
    pub open_syncs: u64,
}

/// The model's rules over a stream of events (module comment).
#[derive(Default)]
pub struct Checker {
    format: Option<Format>,
    /// Each class defined, with its number of methods.
    classes: HashMap<ClassId, usize>,
    threads: HashSet<ThreadId>,
    objects: HashSet<ObjectId>,
    /// Each thread's open frames in this burst: (method, ticket).
    stacks: HashMap<ThreadId, Vec<(MethodId, u32)>>,
    /// Each thread's open contexts (record=tree).
    contexts: HashMap<ThreadId, Vec<MethodId>>,
    /// Each thread's last ticket: its entries in the file.
    tickets: HashMap<ThreadId, u32>,
    last_ticks: HashMap<ThreadId, u64>,
    /// Each thread's open waits, joins, sleeps and contended enters: (kind, object identity).
    syncs: HashMap<ThreadId, Vec<(SyncKind, u64)>>,
    in_burst: bool,
    summary: CheckSummary,
}

impl Checker {
    pub fn new(format: Format) -> Checker {
        Checker {
            format: Some(format),
            ..Checker::default()
        }
    }

    /// An error at position `at`: a byte offset, or a line in a text format.
    pub fn fail<T>(&self, at: usize, message: String) -> Result<T, DecodeError> {
        fail(at, self.format.is_some_and(|f| f.is_text()), message)
    }

    /// The summary, once every event has been checked.
    pub fn finish(mut self) -> Result<CheckSummary, DecodeError> {
        self.summary.format = self.format;
        self.summary.threads = self.threads.len() as u64;
        self.summary.classes = self.classes.len() as u64;
        self.summary.objects = self.objects.len() as u64;
        self.summary.open_syncs = self.syncs.values().map(|s| s.len() as u64).sum();
        Ok(self.summary)
    }

    pub fn in_burst(&self) -> bool {
        self.in_burst
    }

    /// Checks one event, read at `at`.
    pub fn event(&mut self, at: usize, event: &Event) -> Result<(), DecodeError> {
        self.summary.events += 1;
        match event {
            Event::BurstBegin { .. } => {
                if self.in_burst {
                    return self.fail(at, "BURST_BEGIN inside a burst".into());
                }
                self.in_burst = true;
                self.summary.bursts += 1;
                self.stacks.clear();
                self.syncs.clear();
                return Ok(());
            }
            Event::BurstEnd { .. } => {
                if !self.in_burst {
                    return self.fail(at, "BURST_END outside a burst".into());
                }
                if let Some((thread, open)) = self.contexts.iter().find(|(_, o)| !o.is_empty()) {
                    let message = format!(
                        "BURST_END with {} contexts of thread {} not ended",
                        open.len(),
                        thread
                    );
                    return self.fail(at, message);
                }
                self.in_burst = false;
                return Ok(());
            }
            e if e.is_lifecycle() => return Ok(()),
            _ if !self.in_burst && !event.may_be_dump() => {
                return self.fail(at, format!("{} outside a burst", event.name()));
            }
            _ => {}
        }
        if let Some(thread) = event.thread() {
            if let Event::ThreadDefine(t) = event {
                if !self.threads.insert(t.id) {
                    return self.fail(at, format!("thread {} defined twice", t.id));
                }
            } else if !self.threads.contains(&thread) {
                return self.fail(at, format!("thread {} used before it is defined", thread));
            }
            let ticks = event.ticks();
            let last = self.last_ticks.entry(thread).or_insert(0);
            if ticks < *last {
                let last = *last;
                return self.fail(
                    at,
                    format!(
                        "ticks go back on thread {}: {} after {}",
                        thread, ticks, last
                    ),
                );
            }
            *last = ticks;
        }
        self.definitions(at, event)
    }

    fn definitions(&mut self, at: usize, event: &Event) -> Result<(), DecodeError> {
        match event {
            Event::ClassDefine(c) => {
                if self.classes.contains_key(&c.id) {
                    return self.fail(at, format!("class {} defined twice", c.id));
                }
                for &k in c.superclass.iter().chain(&c.interfaces) {
                    self.need_class(at, k)?;
                }
                self.classes.insert(c.id, c.methods.len());
            }
            Event::ObjectDefine(o) | Event::Alloc { object: o, .. } => {
                self.need_class(at, o.class)?;
                if let Some(ArrayDef {
                    element: Element::Class(e),
                    ..
                }) = o.array
                {
                    self.need_class(at, e)?;
                }
                if o.object == NO_OBJECT || !self.objects.insert(o.object) {
                    return self.fail(
                        at,
                        format!("object {} defined twice (or is the null ID)", o.object),
                    );
                }
            }
            Event::Free { object, .. } => self.need_object(at, *object)?,
            Event::MethodEnter(e) => {
                let methods = self.need_class(at, e.method.class)?;
                if usize::from(e.method.index) >= methods {
                    return self.fail(
                        at,
                        format!(
                            "method {} of class {} which has {} methods",
                            e.method.index, e.method.class, methods
                        ),
                    );
                }
                if e.object != NO_OBJECT {
                    self.need_object(at, e.object)?;
                }
                let stack = self.stacks.entry(e.thread).or_default();
                if e.depth as usize != stack.len() + 1 {
                    let open = stack.len();
                    return self.fail(
                        at,
                        format!(
                            "entry at depth {} on thread {}, which has {} frames open",
                            e.depth, e.thread, open
                        ),
                    );
                }
                stack.push((e.method, e.ticket));
                let last = self.tickets.entry(e.thread).or_insert(0);
                if e.ticket != last.wrapping_add(1) {
                    let message = format!(
                        "entry with ticket {} on thread {}, whose last was {}",
                        e.ticket, e.thread, last
                    );
                    return self.fail(at, message);
                }
                *last = e.ticket;
            }
            Event::MethodLeave(l) => {
                let stack = self.stacks.entry(l.thread).or_default();
                let open = stack.len();
                let Some((method, ticket)) = stack.pop() else {
                    return self.fail(
                        at,
                        format!(
                            "METHOD_LEAVE on thread {} with no open entry in this burst",
                            l.thread
                        ),
                    );
                };
                if (method, ticket, open) != (l.method, l.ticket, l.depth as usize) {
                    return self.fail(
                        at,
                        format!(
                            "leave of method {}.{} (ticket {}, depth {}) on thread {}, whose top frame is {}.{} (ticket {}, depth {})",
                            l.method.class, l.method.index, l.ticket, l.depth, l.thread,
                            method.class, method.index, ticket, open
                        ),
                    );
                }
            }
            Event::ThreadEnd { thread, .. } => {
                self.stacks.remove(thread);
            }
            Event::Sync(s) => self.sync(at, s)?,
            Event::Heap { part, .. } => self.heap(at, part)?,
            Event::Values(v) => {
                let methods = self.need_class(at, v.method.class)?;
                if usize::from(v.method.index) >= methods {
                    let message = format!(
                        "values of method {} of class {} which has {} methods",
                        v.method.index, v.method.class, methods
                    );
                    return self.fail(at, message);
                }
                for &o in
                    std::iter::once(&v.object).chain(v.values.iter().filter_map(|v| match v {
                        Value::Object(o) => Some(o),
                        _ => None,
                    }))
                {
                    if o != NO_OBJECT {
                        self.need_object(at, o)?;
                    }
                }
            }
            Event::ContextEnter(c) => {
                let methods = self.need_class(at, c.method.class)?;
                if usize::from(c.method.index) >= methods {
                    let message = format!(
                        "context of method {} of class {} which has {} methods",
                        c.method.index, c.method.class, methods
                    );
                    return self.fail(at, message);
                }
                if c.calls > 0 && c.min_ticks > c.max_ticks {
                    let message = format!(
                        "context of {}.{} on thread {}: shortest call {} ticks, longest {}",
                        c.method.class, c.method.index, c.thread, c.min_ticks, c.max_ticks
                    );
                    return self.fail(at, message);
                }
                self.contexts.entry(c.thread).or_default().push(c.method);
            }
            Event::ContextLeave { thread, method, .. } => {
                let open = self.contexts.entry(*thread).or_default().pop();
                if open != Some(*method) {
                    let message = format!(
                        "end of context {}.{} on thread {}, whose innermost open context is {:?}",
                        method.class, method.index, thread, open
                    );
                    return self.fail(at, message);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A concurrency event: its stack's methods defined; an end (Waited, Joined, Slept,
    /// ContendedEntered) closes the thread's innermost open span, of its kind and object.
    /// An end with nothing open is the first of its thread in a burst that began inside the
    /// span; a span left open at the end is counted (a thread may wait for ever).
    fn sync(&mut self, at: usize, s: &Sync) -> Result<(), DecodeError> {
        self.summary.syncs += 1;
        if s.object_id != NO_OBJECT {
            self.need_object(at, s.object_id)?;
        }
        if let Some(owner) = s.owner_thread {
            if !self.threads.contains(&owner) {
                let message = format!("monitor owner thread {} is not defined", owner);
                return self.fail(at, message);
            }
        }
        for f in &s.stack {
            let methods = self.need_class(at, f.method.class)?;
            if usize::from(f.method.index) >= methods {
                let message = format!(
                    "stack frame of method {} of class {} which has {} methods",
                    f.method.index, f.method.class, methods
                );
                return self.fail(at, message);
            }
        }
        let first = !self.syncs.contains_key(&s.thread);
        let open = self.syncs.entry(s.thread).or_default();
        if s.kind.end().is_some() {
            open.push((s.kind, s.identity()));
            return Ok(());
        }
        let begins = SyncKind::ALL.into_iter().find(|k| k.end() == Some(s.kind));
        let Some(begin) = begins else {
            return Ok(());
        };
        match open.pop() {
            Some((kind, object)) if kind == begin && object == s.identity() => Ok(()),
            None if first => Ok(()),
            top => {
                let top = match top {
                    Some((kind, object)) => {
                        format!("{} {}", kind.name(), Sync::identity_label(object))
                    }
                    None => "none".into(),
                };
                let message = format!(
                    "{} {} on thread {}, whose innermost open span is {}",
                    s.kind.name(),
                    Sync::identity_label(s.identity()),
                    s.thread,
                    top
                );
                self.fail(at, message)
            }
        }
    }

    /// A heap dump's part: every object and class it names defined before it.
    fn heap(&mut self, at: usize, part: &HeapPart) -> Result<(), DecodeError> {
        match part {
            HeapPart::Refs { object, to, .. } => {
                self.need_object(at, *object)?;
                to.iter().try_for_each(|&o| self.need_object(at, o))
            }
            HeapPart::Statics { class, to } => {
                self.need_class(at, *class)?;
                to.iter().try_for_each(|&o| self.need_object(at, o))
            }
            HeapPart::Root { thread, object, .. } => {
                if let Some(t) = thread.filter(|t| !self.threads.contains(t)) {
                    return self.fail(at, format!("root on thread {}, which is not defined", t));
                }
                self.need_object(at, *object)
            }
            HeapPart::Generation | HeapPart::EndOfReport { .. } => Ok(()),
        }
    }

    fn need_class(&self, at: usize, class: ClassId) -> Result<usize, DecodeError> {
        match self.classes.get(&class) {
            Some(&methods) => Ok(methods),
            None => self.fail(at, format!("class {} used before it is defined", class)),
        }
    }

    fn need_object(&self, at: usize, object: ObjectId) -> Result<(), DecodeError> {
        if self.objects.contains(&object) {
            Ok(())
        } else {
            self.fail(at, format!("object {} used before it is defined", object))
        }
    }
}
