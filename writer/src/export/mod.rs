//! `jlive export`: a trace of any format as today's viewers read it.
//!
//! Every target sees the trace the same way, through [`Timeline`]: threads, the slices of
//! their calls (a begin and an end, properly nested per thread), and instants (GC, user
//! events, burst boundaries), in the file's order, timed in nanoseconds from the trace's first
//! timed event. [`drive`] makes that view: frames still open when a burst ends are ended
//! there, a leave whose entry came before the burst is left out, and what is open at the end
//! of the file is ended at its last time. It reads one event at a time, so memory grows with
//! the threads' depth and the names, not with the events.
//!
//! - [`chrome`]: Chrome trace-event JSON (chrome://tracing, Perfetto's UI, speedscope).
//! - [`perfetto`]: Perfetto's protobuf TrackEvent trace.
//! - [`speedscope`]: speedscope's evented JSON, a profile per thread.
//!
//! The JSON targets stream: each event is serialized by `serde_json` as it comes, between
//! the brackets of the document written around it; no document is held in memory.
//!
//! The folded stacks and the flame graph are drawn from the calling-context trees
//! ([`crate::tree`]). A trace of trees (`record=tree`) has no calls to show one by one: each
//! context becomes one slice as long as all its calls, laid out from its burst's beginning.

pub mod chrome;
pub mod perfetto;
pub mod speedscope;

use crate::model::{Event, MethodId, ThreadDef, ThreadId};
use crate::read::{DecodeError, Trace};
use std::collections::HashMap;
use std::io;

/// Errors of reading the trace or writing the export.
#[derive(Debug)]
pub enum ExportError {
    Read(DecodeError),
    Write(io::Error),
}

impl From<DecodeError> for ExportError {
    fn from(e: DecodeError) -> Self {
        ExportError::Read(e)
    }
}

impl From<io::Error> for ExportError {
    fn from(e: io::Error) -> Self {
        ExportError::Write(e)
    }
}

/// What a target makes of a trace; times are nanoseconds from the trace's first timed event.
pub trait Timeline {
    /// Before anything else, once the file's header is read.
    fn start(&mut self, _names: &Trace) -> io::Result<()> {
        Ok(())
    }
    /// A thread, before its first slice.
    fn thread(&mut self, names: &Trace, thread: &ThreadDef) -> io::Result<()>;
    /// A slice begins: `method` entered on `thread`.
    fn begin(&mut self, names: &Trace, slice: Slice) -> io::Result<()>;
    /// The innermost open slice of its thread (`method`'s) ended.
    fn end(&mut self, slice: Slice) -> io::Result<()>;
    /// Something that happened to the whole JVM at `ns`.
    fn instant(&mut self, text: &str, ns: u64) -> io::Result<()>;
}

/// A slice's begin or end: the method of a thread, at `ns`.
#[derive(Clone, Copy, Debug)]
pub struct Slice {
    pub thread: ThreadId,
    pub method: MethodId,
    pub ns: u64,
}

impl Slice {
    pub fn new(thread: ThreadId, method: MethodId, ns: u64) -> Slice {
        Slice { thread, method, ns }
    }
}

/// A thread with an ID and a name only (the targets' tests).
#[cfg(test)]
fn thread_named(id: ThreadId, name: &str) -> ThreadDef {
    ThreadDef {
        id,
        name: name.into(),
        ..ThreadDef::default()
    }
}

/// Ticks to nanoseconds from the first timed event.
struct Clock {
    start: Option<u64>,
    ticks_per_us: u128,
}

impl Clock {
    fn ns(&mut self, ticks: u64) -> u64 {
        let start = *self.start.get_or_insert(ticks);
        (u128::from(ticks.saturating_sub(start)) * 1000 / self.ticks_per_us) as u64
    }
}

/// Each thread's open frames.
#[derive(Default)]
struct Stacks(HashMap<ThreadId, Vec<MethodId>>);

impl Stacks {
    /// Ends every open frame at `ns`, innermost first, thread by thread.
    fn close(&mut self, out: &mut impl Timeline, ns: u64) -> io::Result<()> {
        let mut threads: Vec<ThreadId> = self.0.keys().copied().collect();
        threads.sort_unstable();
        for thread in threads {
            let stack = self.0.get_mut(&thread).expect("listed");
            while let Some(method) = stack.pop() {
                out.end(Slice { thread, method, ns })?;
            }
        }
        Ok(())
    }
}

/// A calling context of a tree (`record=tree`) laid out as one slice: its inclusive ticks,
/// its callees.
struct Laid {
    method: MethodId,
    ticks: u64,
    callees: Vec<Laid>,
}

impl Drop for Laid {
    /// Without recursion: a context may sit tens of thousands of calls deep.
    fn drop(&mut self) {
        let mut below = std::mem::take(&mut self.callees);
        while let Some(mut c) = below.pop() {
            below.append(&mut c.callees);
        }
    }
}

/// Trees (`record=tree`) as timelines: each thread's contexts are laid out from its burst's
/// beginning, one slice per context as long as all its calls together, callees side by side
/// inside it in the order first called (a merged view, like speedscope's left heavy).
#[derive(Default)]
struct Trees {
    /// Each thread's open contexts: method, base ticks, callees laid out so far.
    open: HashMap<ThreadId, Vec<(MethodId, u64, Vec<Laid>)>>,
    /// Where each thread's next outermost context goes, in ticks.
    cursor: HashMap<ThreadId, u64>,
    burst_ticks: u64,
}

impl Trees {
    fn enter(&mut self, c: &crate::model::Context) {
        let open = self.open.entry(c.thread).or_default();
        open.push((c.method, c.base_ticks, Vec::new()));
    }

    /// The end of a context: laid into its caller, or written if it is outermost.
    fn leave(
        &mut self,
        names: &Trace,
        thread: ThreadId,
        clock: &mut Clock,
        out: &mut impl Timeline,
    ) -> io::Result<()> {
        let open = self.open.entry(thread).or_default();
        let Some((method, base, callees)) = open.pop() else {
            return Ok(());
        };
        let ticks = base + callees.iter().map(|c| c.ticks).sum::<u64>();
        let laid = Laid {
            method,
            ticks,
            callees,
        };
        if let Some(caller) = open.last_mut() {
            caller.2.push(laid);
            return Ok(());
        }
        let at = *self.cursor.entry(thread).or_insert(self.burst_ticks);
        self.cursor.insert(thread, at + ticks);
        // Depth first without recursion: (context, where it begins, whether it is ending).
        let mut todo: Vec<(&Laid, u64, bool)> = vec![(&laid, at, false)];
        while let Some((c, from, ending)) = todo.pop() {
            let method = c.method;
            if ending {
                let ns = clock.ns(from + c.ticks);
                out.end(Slice { thread, method, ns })?;
                continue;
            }
            let ns = clock.ns(from);
            out.begin(names, Slice { thread, method, ns })?;
            todo.push((c, from, true));
            let mut starts = Vec::with_capacity(c.callees.len());
            let mut t = from;
            for callee in &c.callees {
                starts.push((callee, t, false));
                t += callee.ticks;
            }
            todo.extend(starts.into_iter().rev());
        }
        Ok(())
    }
}

/// Reads the trace `reader` holds (any format) into `out`; returns its names and the time of
/// its last event in ns (where every frame still open was ended).
pub fn drive(reader: impl io::Read, out: &mut impl Timeline) -> Result<(Trace, u64), ExportError> {
    let mut clock = Clock {
        start: None,
        ticks_per_us: 1,
    };
    let mut stacks = Stacks::default();
    let mut trees = Trees::default();
    let mut last = 0;
    let mut started = false;
    let names = Trace::scan(reader, |names, _, e| -> Result<(), ExportError> {
        if !started {
            started = true;
            clock.ticks_per_us = u128::from(names.info.ticks_per_microsecond.max(1));
            out.start(names)?;
        }
        if let Event::ThreadDefine(t) = &e {
            out.thread(names, t)?;
        }
        let ticks = e.ticks();
        if ticks == 0 {
            return Ok(());
        }
        let ns = clock.ns(ticks);
        last = last.max(ns);
        match &e {
            Event::MethodEnter(m) => {
                stacks.0.entry(m.thread).or_default().push(m.method);
                let (thread, method) = (m.thread, m.method);
                out.begin(names, Slice { thread, method, ns })?;
            }
            Event::MethodLeave(l) => {
                if let Some(method) = stacks.0.get_mut(&l.thread).and_then(Vec::pop) {
                    let thread = l.thread;
                    out.end(Slice { thread, method, ns })?;
                }
            }
            Event::BurstBegin { burst, ticks } => {
                trees = Trees {
                    burst_ticks: *ticks,
                    ..Trees::default()
                };
                stacks.close(out, ns)?;
                out.instant(&format!("burst {} begins", burst), ns)?;
            }
            Event::BurstEnd { burst, .. } => {
                stacks.close(out, ns)?;
                out.instant(&format!("burst {} ends", burst), ns)?;
            }
            Event::ContextEnter(c) => trees.enter(c),
            Event::ContextLeave { thread, .. } => trees.leave(names, *thread, &mut clock, out)?,
            Event::GcStart { .. } => out.instant("GC start", ns)?,
            Event::GcFinish { .. } => out.instant("GC finish", ns)?,
            Event::UserEvent { text, .. } => out.instant(text, ns)?,
            _ => {}
        }
        Ok(())
    })?;
    if !started {
        out.start(&names)?;
    }
    stacks.close(out, last)?;
    Ok((names, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_become_nanoseconds_from_the_first_timed_event() {
        let mut clock = Clock {
            start: None,
            ticks_per_us: 2400,
        };
        assert_eq!(clock.ns(1_000_000), 0);
        assert_eq!(clock.ns(1_002_400), 1000);
        assert_eq!(clock.ns(1_000_001), 0);
        assert_eq!(clock.ns(999), 0);
    }
}
