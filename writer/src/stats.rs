//! Summaries of a decoded JinsightLive trace: names resolved, events by type, per-thread
//! counts, and the top methods by calls and by self time. `jlive dump`, `jlive stats` and the
//! tests read traces through [`Trace`].

use crate::jinsight::{self, ClassLoad, DecodeError, Event, Header};
use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};

/// A decoded trace with its names indexed.
pub struct Trace {
    pub header: Header,
    pub events: Vec<(usize, Event)>,
    pub classes: HashMap<u16, ClassLoad>,
    pub threads: HashMap<u32, String>,
    /// Where the file ends inside an event, whose bytes are left out.
    pub cut_at: Option<usize>,
}

impl Trace {
    /// Decodes a whole file; fails at the first undecodable event, except a last one that the
    /// file ends inside of (a JVM killed while its trace was being written): that one is left
    /// out and `cut_at` says where it began.
    pub fn decode(data: &[u8]) -> Result<Trace, DecodeError> {
        let (header, events, cut_at) = jinsight::decode::decode_whole_events(data)?;
        let mut trace = Trace {
            cut_at,
            ..Trace::empty(header)
        };
        for (_, e) in &events {
            trace.learn(e);
        }
        trace.events = events;
        Ok(trace)
    }

    /// A trace with no events and no names yet, to [`Trace::learn`] them as events are read
    /// one at a time (definitions precede their use).
    pub fn empty(header: Header) -> Trace {
        Trace {
            header,
            events: Vec::new(),
            classes: HashMap::new(),
            threads: HashMap::new(),
            cut_at: None,
        }
    }

    /// Takes the names an event defines: a class's (and its methods'), a thread's.
    pub fn learn(&mut self, event: &Event) {
        match event {
            Event::ClassLoad(load) => {
                self.classes.insert(load.class, (**load).clone());
            }
            Event::ThreadDefine { thread, name, .. } => {
                self.threads.insert(*thread, name.clone());
            }
            _ => {}
        }
    }

    /// `pkg/Class` of a class ID.
    pub fn class_name(&self, class: u16) -> String {
        let mut s = String::new();
        let _ = self.write_class_name(&mut s, class);
        s
    }

    fn write_class_name(&self, out: &mut String, class: u16) -> fmt::Result {
        match self.classes.get(&class) {
            Some(c) => out.write_str(&c.name),
            None => write!(out, "class#{}", class),
        }
    }

    /// `pkg/Class.method` of a method.
    pub fn method_name(&self, class: u16, method: u16) -> String {
        let mut s = String::new();
        let _ = self.write_method_name(&mut s, class, method);
        s
    }

    fn write_method_name(&self, out: &mut String, class: u16, method: u16) -> fmt::Result {
        self.write_class_name(out, class)?;
        let m = self
            .classes
            .get(&class)
            .and_then(|c| c.methods.get(usize::from(method)));
        match m {
            Some(m) => write!(out, ".{}", m.name),
            None => write!(out, ".method#{}", method),
        }
    }

    /// Name of a thread ID.
    pub fn thread_name(&self, thread: u32) -> String {
        let mut s = String::new();
        let _ = self.write_thread_name(&mut s, thread);
        s
    }

    fn write_thread_name(&self, out: &mut String, thread: u32) -> fmt::Result {
        match self.threads.get(&thread) {
            Some(name) => out.write_str(name),
            None => write!(out, "thread#{}", thread),
        }
    }

    /// Thread IDs whose name is `name`.
    pub fn threads_named(&self, name: &str) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .threads
            .iter()
            .filter(|(_, n)| n.as_str() == name)
            .map(|(&t, _)| t)
            .collect();
        v.sort();
        v
    }

    /// One line describing an event, names resolved (the `jlive dump` format).
    pub fn describe(&self, event: &Event) -> String {
        let mut s = String::new();
        self.describe_into(&mut s, event);
        s
    }

    /// [`Trace::describe`] appended to `out`: `jlive dump` reuses one line for all events.
    pub fn describe_into(&self, out: &mut String, event: &Event) {
        let start = out.len();
        if let Some(t) = event.ticks() {
            let _ = write!(out, "{}", t);
        }
        out.push(' ');
        out.push_str(event.name());
        out.push(' ');
        // Writing into a String cannot fail.
        let _ = self.describe_fields(out, event);
        let kept = out[start..].trim_end().len();
        out.truncate(start + kept);
    }

    /// What follows an event's name in its `jlive dump` line.
    fn describe_fields(&self, out: &mut String, event: &Event) -> fmt::Result {
        match event {
            Event::ClassDefine { class, .. } => write!(out, "class={}", class),
            Event::ClassLoad(c) => write!(
                out,
                "class={} name={} methods={} fields={} super={} interfaces={:?}",
                c.class,
                c.name,
                c.methods.len(),
                c.fields.len(),
                c.superclass,
                c.interfaces
            ),
            Event::MethodEnter {
                thread,
                class,
                method,
                object,
                ..
            } => {
                write!(out, "thread={} ", thread)?;
                self.write_method_name(out, *class, *method)?;
                if *object == jinsight::NO_OBJECT {
                    out.write_str(" static")
                } else {
                    write!(out, " object={}", object)
                }
            }
            Event::MethodLeave {
                thread, overhead, ..
            } => write!(out, "thread={} overhead={}", thread, overhead),
            Event::ObjectDefined { object, class, .. } => {
                write!(out, "object={} class=", object)?;
                self.write_class_name(out, *class)
            }
            Event::ObjectCreated {
                object,
                class,
                thread,
                ..
            } => {
                write!(out, "object={} class=", object)?;
                self.write_class_name(out, *class)?;
                write!(out, " thread={}", thread)
            }
            Event::ObjectReclaimed { object, .. } => write!(out, "object={}", object),
            Event::ArrayDefined {
                array_type,
                object,
                size,
                ..
            } => write!(
                out,
                "object={} type={} size={}",
                object,
                jinsight::array_type_name(*array_type),
                size
            ),
            Event::ArrayClassDefined {
                object,
                class,
                size,
                ..
            } => {
                write!(out, "object={} element=", object)?;
                self.write_class_name(out, *class)?;
                write!(out, " size={}", size)
            }
            Event::ArrayCreated {
                object,
                size,
                thread,
                is_array,
                ..
            } => write!(
                out,
                "object={} size={} thread={} isArray={}",
                object, size, thread, is_array
            ),
            Event::ThreadDefine { thread, name, .. } => {
                write!(out, "thread={} name={:?}", thread, name)
            }
            Event::ThreadStart { thread, .. } | Event::ThreadExit { thread, .. } => {
                write!(out, "thread={} (", thread)?;
                self.write_thread_name(out, *thread)?;
                out.write_str(")")
            }
            Event::UserEvent { message, .. } => write!(out, "{:?}", message),
            Event::TraceEnd { first, second } => write!(out, "{:#x} {:#x}", first, second),
            _ => Ok(()),
        }
    }
}

/// Calls and time of one method.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodStats {
    pub name: String,
    pub calls: u64,
    pub self_ticks: u64,
}

/// What `jlive stats` prints.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub by_type: BTreeMap<&'static str, u64>,
    /// (thread ID, name, method entries)
    pub threads: Vec<(u32, String, u64)>,
    pub methods: Vec<MethodStats>,
    pub bursts: u64,
    pub ticks_per_microsecond: u32,
    /// jlive's own notes in the trace (USER_EVENTs starting with "jlive:").
    pub notes: Vec<String>,
}

struct Open {
    key: (u16, u16),
    entered: u64,
    children: u64,
}

/// What [`Stats`] counts while the events go by, before names are resolved.
#[derive(Default)]
struct Tally {
    stats: Stats,
    entries: HashMap<u32, u64>,
    methods: HashMap<(u16, u16), (u64, u64)>,
    stacks: HashMap<u32, Vec<Open>>,
}

impl Tally {
    fn add(&mut self, e: &Event) {
        // The TraceEnd marker closes the file; the header's number of events and
        // `jlive check` leave it out, and so does this count.
        if !matches!(e, Event::TraceEnd { .. }) {
            *self.stats.by_type.entry(e.name()).or_insert(0) += 1;
        }
        match e {
            Event::BeginBurst { .. } => {
                self.stats.bursts += 1;
                self.stacks.clear();
            }
            Event::UserEvent { message, .. } if message.starts_with("jlive:") => {
                self.stats.notes.push(message.clone());
            }
            Event::MethodEnter {
                ticks,
                thread,
                class,
                method,
                ..
            } => {
                *self.entries.entry(*thread).or_insert(0) += 1;
                self.methods.entry((*class, *method)).or_insert((0, 0)).0 += 1;
                self.stacks.entry(*thread).or_default().push(Open {
                    key: (*class, *method),
                    entered: *ticks,
                    children: 0,
                });
            }
            Event::MethodLeave { ticks, thread, .. } => {
                let stack = self.stacks.entry(*thread).or_default();
                if let Some(open) = stack.pop() {
                    let total = ticks.saturating_sub(open.entered);
                    self.methods.entry(open.key).or_insert((0, 0)).1 +=
                        total.saturating_sub(open.children);
                    if let Some(parent) = stack.last_mut() {
                        parent.children += total;
                    }
                }
            }
            _ => {}
        }
    }

    /// The stats, with the names `names` holds.
    fn finish(self, names: &Trace) -> Stats {
        let Tally {
            mut stats,
            entries,
            methods,
            ..
        } = self;
        stats.ticks_per_microsecond = names.header.ticks_per_microsecond;
        let mut threads: Vec<(u32, String, u64)> = names
            .threads
            .iter()
            .map(|(&t, n)| (t, n.clone(), entries.get(&t).copied().unwrap_or(0)))
            .collect();
        threads.sort();
        stats.threads = threads;
        stats.methods = methods
            .into_iter()
            .map(|((c, m), (calls, self_ticks))| MethodStats {
                name: names.method_name(c, m),
                calls,
                self_ticks,
            })
            .collect();
        stats
    }
}

impl Stats {
    pub fn of(trace: &Trace) -> Stats {
        let mut tally = Tally::default();
        for (_, e) in &trace.events {
            tally.add(e);
        }
        tally.finish(trace)
    }

    /// The stats of a whole file, decoded one event at a time and none kept (a trace's events
    /// take several times its size in memory), and where its last event was cut short, as
    /// [`Trace::decode`] reads it.
    pub fn of_file(data: &[u8]) -> Result<(Stats, Option<usize>), DecodeError> {
        Stats::of_reader(data)
    }

    /// [`Stats::of_file`] of a file read from `reader`, a chunk at a time.
    pub fn of_reader(reader: impl std::io::Read) -> Result<(Stats, Option<usize>), DecodeError> {
        let mut decoder = jinsight::StreamDecoder::new(reader)?;
        let mut names = Trace::empty(decoder.header().clone());
        let mut tally = Tally::default();
        loop {
            match decoder.next_event() {
                Ok(Some((_, e))) => {
                    names.learn(&e);
                    tally.add(&e);
                }
                Ok(None) => break,
                Err(e) if e.cut_short => {
                    names.cut_at = Some(e.offset);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        names.header = decoder.header().clone();
        Ok((tally.finish(&names), names.cut_at))
    }

    /// Total method entries.
    pub fn calls(&self) -> u64 {
        self.by_type.get("METHOD_ENTER").copied().unwrap_or(0)
    }

    /// The human report, with `top` methods in each ranking.
    pub fn report(&self, top: usize) -> String {
        let mut out = String::new();
        let total: u64 = self.by_type.values().sum();
        let _ = writeln!(
            out,
            "events: {}   bursts: {}   ticks/us: {}",
            total, self.bursts, self.ticks_per_microsecond
        );
        for note in &self.notes {
            let _ = writeln!(out, "{}", note);
        }
        let _ = writeln!(out, "\nevents by type:");
        for (name, n) in &self.by_type {
            let _ = writeln!(out, "  {:<20} {:>12}", name, n);
        }
        let _ = writeln!(out, "\nthreads: {}", self.threads.len());
        for (id, name, calls) in &self.threads {
            let _ = writeln!(out, "  {:>4} {:<40} {:>12} calls", id, name, calls);
        }
        let tpu = f64::from(self.ticks_per_microsecond.max(1));
        let mut by_calls = self.methods.clone();
        by_calls.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.name.cmp(&b.name)));
        let _ = writeln!(out, "\ntop methods by calls:");
        for m in by_calls.iter().take(top) {
            let _ = writeln!(out, "  {:>12}  {}", m.calls, m.name);
        }
        let mut by_self = self.methods.clone();
        by_self.sort_by(|a, b| b.self_ticks.cmp(&a.self_ticks).then(a.name.cmp(&b.name)));
        let _ = writeln!(out, "\ntop methods by self time:");
        for m in by_self.iter().take(top) {
            let _ = writeln!(
                out,
                "  {:>12.3} ms  {:>10} calls  {}",
                m.self_ticks as f64 / tpu / 1000.0,
                m.calls,
                m.name
            );
        }
        out
    }
}
