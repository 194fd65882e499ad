//! What `jlive stats` prints, from the model events of a trace of any format: events by type,
//! per-thread calls, and the top methods by calls and by self time.

use crate::model::LOST_PREFIX;
use crate::model::{Event, MethodId, Sync, SyncKind, ThreadId};
use crate::read::{DecodeError, Trace};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

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
    pub threads: Vec<(ThreadId, String, u64)>,
    pub methods: Vec<MethodStats>,
    pub bursts: u64,
    pub ticks_per_microsecond: u32,
    /// jlive's own notes in the trace (user events starting with "jlive:"), but the marks of
    /// dropped records.
    pub notes: Vec<String>,
    /// overflow=drop: the places where method records were dropped, the entries and the
    /// exits dropped.
    pub dropped: (u64, u64, u64),
    /// The format the trace was read in.
    pub format: Option<crate::format::Format>,
    /// Concurrency events (`monitors=on`, ORCA): the most contended monitors first.
    pub monitors: Vec<MonitorStats>,
    /// Per thread: (ID, name, waits, joins, sleeps, ticks waiting, joining, sleeping and
    /// blocked on monitors).
    pub blocking: Vec<(ThreadId, String, [u64; 3], u64)>,
}

/// A contended monitor: its hash code, contentions, ticks its threads were blocked, and the
/// stack that contended most often with its count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MonitorStats {
    /// Its hash code (ORCA) or object ID (`Sync::identity`).
    pub monitor: u64,
    pub contentions: u64,
    pub blocked_ticks: u64,
    pub top_stack: (String, u64),
}

struct Open {
    method: MethodId,
    entered: u64,
    children: u64,
}

/// A monitor's contentions, blocked ticks and the stacks of its contended enters.
type MonitorTally = (u64, u64, HashMap<Vec<MethodId>, u64>);

/// What [`Stats`] counts while the events go by, before names are resolved.
#[derive(Default)]
struct Tally {
    stats: Stats,
    entries: HashMap<ThreadId, u64>,
    methods: HashMap<MethodId, (u64, u64)>,
    stacks: HashMap<ThreadId, Vec<Open>>,
    /// Open waits, joins, sleeps and contended enters: (kind, object identity, ticks).
    spans: HashMap<ThreadId, Vec<(SyncKind, u64, u64)>>,
    /// Per thread: waits, joins, sleeps; ticks spent in them.
    blocking: HashMap<ThreadId, ([u64; 3], u64)>,
    /// Per monitor: contentions, blocked ticks, stacks of its contended enters.
    monitors: HashMap<u64, MonitorTally>,
}

impl Tally {
    fn add(&mut self, e: &Event) {
        // VM start and end are in no JinsightLive file: what JinsightLive carries is counted,
        // so that a run gives the same figures in each format (but for thread starts: TPTP
        // says every thread started when it was defined).
        if !e.is_lifecycle() {
            *self.stats.by_type.entry(e.name()).or_insert(0) += 1;
        }
        match e {
            Event::BurstBegin { .. } => {
                self.stats.bursts += 1;
                self.stacks.clear();
            }
            Event::UserEvent { text, .. } if text.starts_with(LOST_PREFIX) => {
                // "E entries and X exits of thread T dropped; ..."
                let words: Vec<&str> = text[LOST_PREFIX.len()..].split_whitespace().collect();
                let count = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
                let d = &mut self.stats.dropped;
                d.0 += 1;
                d.1 += count(0).unwrap_or(0);
                d.2 += count(3).unwrap_or(0);
            }
            Event::UserEvent { text, .. } if text.starts_with("jlive:") => {
                self.stats.notes.push(text.clone());
            }
            Event::MethodEnter(e) => {
                *self.entries.entry(e.thread).or_insert(0) += 1;
                self.methods.entry(e.method).or_insert((0, 0)).0 += 1;
                self.stacks.entry(e.thread).or_default().push(Open {
                    method: e.method,
                    entered: e.ticks,
                    children: 0,
                });
            }
            Event::ContextEnter(c) => {
                // record=tree: a context's calls and its own time, already summed.
                *self.entries.entry(c.thread).or_insert(0) += c.calls;
                let m = self.methods.entry(c.method).or_insert((0, 0));
                m.0 += c.calls;
                m.1 += c.base_ticks;
            }
            Event::Sync(s) => self.sync(s),
            Event::MethodLeave(l) => {
                let stack = self.stacks.entry(l.thread).or_default();
                if let Some(open) = stack.pop() {
                    let total = l.ticks.saturating_sub(open.entered);
                    self.methods.entry(open.method).or_insert((0, 0)).1 +=
                        total.saturating_sub(open.children);
                    if let Some(parent) = stack.last_mut() {
                        parent.children += total;
                    }
                }
            }
            _ => {}
        }
    }

    fn sync(&mut self, s: &Sync) {
        let counts = &mut self.blocking.entry(s.thread).or_default().0;
        match s.kind {
            SyncKind::Wait => counts[0] += 1,
            SyncKind::Join => counts[1] += 1,
            SyncKind::Sleep => counts[2] += 1,
            SyncKind::ContendedEnter => {
                let m = self.monitors.entry(s.identity()).or_default();
                m.0 += 1;
                let stack = s.stack.iter().map(|f| f.method).collect();
                *m.2.entry(stack).or_insert(0) += 1;
            }
            _ => {}
        }
        let spans = self.spans.entry(s.thread).or_default();
        if s.kind.end().is_some() {
            spans.push((s.kind, s.identity(), s.ticks));
        } else if let Some(&(kind, object, since)) = spans.last() {
            if kind.end() == Some(s.kind) && object == s.identity() {
                spans.pop();
                let ticks = s.ticks.saturating_sub(since);
                self.blocking.entry(s.thread).or_default().1 += ticks;
                if kind == SyncKind::ContendedEnter {
                    self.monitors.entry(object).or_default().1 += ticks;
                }
            }
        }
    }

    /// The stats, with the names `names` holds.
    fn finish(self, names: &Trace) -> Stats {
        let Tally {
            mut stats,
            entries,
            methods,
            blocking,
            monitors,
            ..
        } = self;
        let mut monitors: Vec<MonitorStats> = monitors
            .into_iter()
            .map(|(monitor, (contentions, blocked_ticks, stacks))| {
                let top = stacks
                    .into_iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
                let top_stack = top.map_or((String::new(), 0), |(stack, n)| {
                    let frames: Vec<String> =
                        stack.iter().map(|&m| names.method_label(m)).collect();
                    (frames.join(" < "), n)
                });
                MonitorStats {
                    monitor,
                    contentions,
                    blocked_ticks,
                    top_stack,
                }
            })
            .collect();
        monitors.sort_by(|a, b| {
            b.contentions
                .cmp(&a.contentions)
                .then(a.monitor.cmp(&b.monitor))
        });
        stats.monitors = monitors;
        let mut blocking: Vec<(ThreadId, String, [u64; 3], u64)> = blocking
            .into_iter()
            .map(|(t, (counts, ticks))| (t, names.thread_name(t), counts, ticks))
            .collect();
        blocking.sort();
        stats.blocking = blocking;
        stats.ticks_per_microsecond = names.info.ticks_per_microsecond;
        stats.format = Some(names.format);
        let mut threads: Vec<(ThreadId, String, u64)> = names
            .threads
            .values()
            .map(|t| {
                (
                    t.id,
                    t.name.clone(),
                    entries.get(&t.id).copied().unwrap_or(0),
                )
            })
            .collect();
        threads.sort();
        stats.threads = threads;
        stats.methods = methods
            .into_iter()
            .map(|(m, (calls, self_ticks))| MethodStats {
                name: names.method_label(m),
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

    /// The stats of a whole file in memory (see [`Stats::of_reader`]).
    pub fn of_file(data: &[u8]) -> Result<(Stats, Option<usize>), DecodeError> {
        Stats::of_reader(data)
    }

    /// The stats of a file of any format, decoded one event at a time and none kept (a
    /// trace's events take several times its size in memory), and where its last event was
    /// cut short, as [`Trace::read`] reads it.
    pub fn of_reader(reader: impl std::io::Read) -> Result<(Stats, Option<usize>), DecodeError> {
        let mut tally = Tally::default();
        let names = Trace::scan(reader, |_, _, e| -> Result<(), DecodeError> {
            tally.add(&e);
            Ok(())
        })?;
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
        let (places, entries, exits) = self.dropped;
        if places > 0 {
            let _ = writeln!(
                out,
                "{}{} entries and {} exits dropped in {} places (the writer was behind)",
                LOST_PREFIX, entries, exits, places
            );
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
        if !self.monitors.is_empty() || !self.blocking.is_empty() {
            let _ = writeln!(out, "\nmost contended monitors:");
            for m in self.monitors.iter().take(top) {
                let _ = writeln!(
                    out,
                    "  {:>14} {:>8} contentions {:>12.3} ms blocked; most from ({}x): {}",
                    Sync::identity_label(m.monitor),
                    m.contentions,
                    m.blocked_ticks as f64 / tpu / 1000.0,
                    m.top_stack.1,
                    m.top_stack.0
                );
            }
            let _ = writeln!(
                out,
                "\nwaits, joins and sleeps per thread (time in them and blocked on monitors):"
            );
            for (id, name, [waits, joins, sleeps], ticks) in &self.blocking {
                let _ = writeln!(
                    out,
                    "  {:>4} {:<32} {:>8} waits {:>6} joins {:>6} sleeps {:>12.3} ms",
                    id,
                    name,
                    waits,
                    joins,
                    sleeps,
                    *ticks as f64 / tpu / 1000.0
                );
            }
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
