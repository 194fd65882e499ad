//! `jlive check`: everything a JinsightLive reader relies on, verified in one pass.
//!
//! Header and event codes; define-before-use of classes, threads and objects; each method
//! index within its class; class 0 = java/lang/Object and class 1 = java/lang/Thread; every
//! event inside a burst; within a burst no thread leaves more frames than it entered; ticks
//! never decrease on one thread; the file ends with TraceEnd and nothing after it.

use super::*;
use std::collections::{HashMap, HashSet};

/// What a clean trace holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckSummary {
    pub events: u64,
    pub bursts: u64,
    pub threads: u64,
    pub classes: u64,
    pub objects: u64,
}

#[derive(Default)]
struct State {
    classes: HashMap<u16, usize>, // class -> number of methods, once loaded
    pending_class: Option<(u16, usize)>,
    threads: HashSet<u32>,
    objects: HashSet<u32>,
    depth: HashMap<u32, u64>,
    last_ticks: HashMap<u32, u64>,
    in_burst: bool,
    summary: CheckSummary,
}

fn fail<T>(offset: usize, message: String) -> Result<T, DecodeError> {
    Err(super::decode::error(offset, message))
}

/// Checks a whole file held in memory.
pub fn check(data: &[u8]) -> Result<CheckSummary, DecodeError> {
    check_reader(data)
}

/// Checks a whole file read from `reader`, a chunk at a time.
pub fn check_reader(reader: impl std::io::Read) -> Result<CheckSummary, DecodeError> {
    let mut decoder = StreamDecoder::new(reader)?;
    if decoder.header().version != VERSION {
        return fail(
            1,
            format!(
                "version {} (jlive reads version 8)",
                decoder.header().version
            ),
        );
    }
    let mut state = State::default();
    let mut end_offset = None;
    while let Some((offset, event)) = decoder.next_event()? {
        if let Some(end) = end_offset {
            return fail(offset, format!("data after TraceEnd (at offset {})", end));
        }
        if let Event::TraceEnd { first, second } = event {
            if first != TRACE_END_WORD || second != TRACE_END_WORD {
                return fail(
                    offset,
                    format!("TraceEnd words {:#x} {:#x}, not 0xDEAD", first, second),
                );
            }
            if state.in_burst {
                return fail(offset, "TraceEnd inside an open burst".into());
            }
            end_offset = Some(offset);
            continue;
        }
        state.event(offset, &event)?;
        state.summary.events += 1;
    }
    if end_offset.is_none() {
        return fail(
            decoder.offset(),
            "no TraceEnd: the file is truncated or was not closed".into(),
        );
    }
    let header_events = decoder.header().number_of_events;
    if header_events != 0 && u64::from(header_events) != state.summary.events {
        return fail(
            COUNTS_OFFSET as usize,
            format!(
                "header says {} events, the file holds {}",
                header_events, state.summary.events
            ),
        );
    }
    state.summary.threads = state.threads.len() as u64;
    state.summary.classes = state.classes.len() as u64;
    state.summary.objects = state.objects.len() as u64;
    Ok(state.summary)
}

impl State {
    fn event(&mut self, offset: usize, event: &Event) -> Result<(), DecodeError> {
        if let Some((class, _)) = self.pending_class {
            match event {
                Event::ClassLoad(load) if load.class == class => {}
                _ => {
                    return fail(
                        offset,
                        format!(
                            "CLASS_DEFINE of class {} not followed by its CLASS_LOAD",
                            class
                        ),
                    )
                }
            }
        }
        match event {
            Event::BeginBurst { .. } => {
                if self.in_burst {
                    return fail(offset, "BEGIN_BURST inside a burst".into());
                }
                self.in_burst = true;
                self.summary.bursts += 1;
                self.depth.clear();
                return Ok(());
            }
            Event::EndBurst { .. } => {
                if !self.in_burst {
                    return fail(offset, "END_BURST outside a burst".into());
                }
                self.in_burst = false;
                return Ok(());
            }
            _ if !self.in_burst => {
                return fail(offset, format!("{} outside a burst", event.name()));
            }
            _ => {}
        }
        if let (Some(thread), Some(ticks)) = (event.thread(), event.ticks()) {
            self.need_thread(offset, thread)?;
            let last = self.last_ticks.entry(thread).or_insert(0);
            if ticks < *last {
                return fail(
                    offset,
                    format!(
                        "ticks go back on thread {}: {} after {}",
                        thread, ticks, last
                    ),
                );
            }
            *last = ticks;
        }
        self.definitions(offset, event)
    }

    fn definitions(&mut self, offset: usize, event: &Event) -> Result<(), DecodeError> {
        match event {
            Event::ClassDefine { class, .. } => {
                if self.classes.contains_key(class) {
                    return fail(offset, format!("class {} defined twice", class));
                }
                self.pending_class = Some((*class, 0));
            }
            Event::ClassLoad(load) => self.class_load(offset, load)?,
            Event::MethodEnter {
                thread,
                class,
                method,
                object,
                ..
            } => {
                let methods = self.need_class(offset, *class)?;
                if usize::from(*method) >= methods {
                    return fail(
                        offset,
                        format!(
                            "method {} of class {} which has {} methods",
                            method, class, methods
                        ),
                    );
                }
                if *object != NO_OBJECT {
                    self.need_object(offset, *object)?;
                }
                *self.depth.entry(*thread).or_insert(0) += 1;
            }
            Event::MethodLeave { thread, .. } => {
                let depth = self.depth.entry(*thread).or_insert(0);
                if *depth == 0 {
                    return fail(
                        offset,
                        format!(
                            "METHOD_LEAVE on thread {} with no open entry in this burst",
                            thread
                        ),
                    );
                }
                *depth -= 1;
            }
            Event::ObjectDefined { object, class, .. }
            | Event::ArrayClassDefined { object, class, .. } => {
                self.need_class(offset, *class)?;
                self.define_object(offset, *object)?;
            }
            Event::ArrayDefined {
                array_type, object, ..
            } => {
                if !(1..=8).contains(array_type) {
                    return fail(
                        offset,
                        format!(
                            "array type {} is not one of JinsightLive's 1..8",
                            array_type
                        ),
                    );
                }
                self.define_object(offset, *object)?;
            }
            Event::ObjectCreated { object, class, .. } => {
                self.need_class(offset, *class)?;
                self.need_object(offset, *object)?;
            }
            Event::ArrayCreated { object, .. } | Event::ObjectReclaimed { object, .. } => {
                self.need_object(offset, *object)?;
            }
            Event::ThreadDefine { thread, class, .. } => {
                self.need_class(offset, *class)?;
                if !self.threads.insert(*thread) {
                    return fail(offset, format!("thread {} defined twice", thread));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn class_load(&mut self, offset: usize, load: &ClassLoad) -> Result<(), DecodeError> {
        match self.pending_class.take() {
            Some((class, _)) if class == load.class => {}
            _ => {
                return fail(
                    offset,
                    format!(
                        "CLASS_LOAD of class {} without its CLASS_DEFINE",
                        load.class
                    ),
                )
            }
        }
        let expected = match load.class {
            CLASS_OBJECT => Some("java/lang/Object"),
            CLASS_THREAD => Some("java/lang/Thread"),
            _ => None,
        };
        if let Some(name) = expected {
            if load.name != name {
                return fail(
                    offset,
                    format!(
                        "class {} is {}, the reader needs {}",
                        load.class, load.name, name
                    ),
                );
            }
        }
        if load.class == CLASS_OBJECT {
            if load.superclass != CLASS_OBJECT {
                return fail(
                    offset,
                    "java/lang/Object must name itself (0) as superclass".into(),
                );
            }
        } else {
            self.need_class(offset, load.superclass)?;
        }
        for &i in &load.interfaces {
            self.need_class(offset, i)?;
        }
        self.classes.insert(load.class, load.methods.len());
        Ok(())
    }

    fn need_class(&self, offset: usize, class: u16) -> Result<usize, DecodeError> {
        match self.classes.get(&class) {
            Some(&methods) => Ok(methods),
            None => fail(offset, format!("class {} used before it is defined", class)),
        }
    }

    fn need_thread(&self, offset: usize, thread: u32) -> Result<(), DecodeError> {
        if self.threads.contains(&thread) {
            Ok(())
        } else {
            fail(
                offset,
                format!("thread {} used before it is defined", thread),
            )
        }
    }

    fn need_object(&self, offset: usize, object: u32) -> Result<(), DecodeError> {
        if self.objects.contains(&object) {
            Ok(())
        } else {
            fail(
                offset,
                format!("object {} used before it is defined", object),
            )
        }
    }

    fn define_object(&mut self, offset: usize, object: u32) -> Result<(), DecodeError> {
        if object == NO_OBJECT || !self.objects.insert(object) {
            return fail(
                offset,
                format!("object {} defined twice (or is the null ID)", object),
            );
        }
        Ok(())
    }
}
