//! `jlive export --to chrome`: the Chrome trace-event JSON that chrome://tracing, Perfetto's UI
//! and speedscope open.
//!
//! ```text
//! {"traceEvents":[
//! {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},   a thread defined
//! {"ph":"B","name":"Fib.fib","pid":1,"tid":1,"ts":12.345},                   a method entered
//! {"ph":"E","pid":1,"tid":1,"ts":13.001},                                    and left
//! {"ph":"i","s":"g","name":"GC","pid":1,"tid":0,"ts":20.5},                  GC, user events, bursts
//! ],"displayTimeUnit":"ns"}
//! ```
//!
//! Times are microseconds from the trace's first event. Written as the events are read: the
//! memory it takes grows with the threads' depth and the names, not with the events. Frames
//! still open when a burst ends are ended there; a leave whose entry came before the burst is
//! left out.

use crate::model::{Event, ThreadId};
use crate::read::{DecodeError, Trace};
use std::collections::HashMap;
use std::io::{self, Write};

/// Errors of reading the trace or writing the JSON.
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

/// A JSON string literal.
fn json(out: &mut impl Write, text: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    for c in text.chars() {
        match c {
            '"' => out.write_all(b"\\\"")?,
            '\\' => out.write_all(b"\\\\")?,
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32)?,
            c => write!(out, "{}", c)?,
        }
    }
    out.write_all(b"\"")
}

struct Writer<W: Write> {
    out: W,
    first: bool,
    start: Option<u64>,
    ticks_per_us: f64,
    /// Open frames per thread (their count is all an E needs).
    open: HashMap<ThreadId, u32>,
}

impl<W: Write> Writer<W> {
    fn sep(&mut self) -> io::Result<()> {
        if !std::mem::replace(&mut self.first, false) {
            self.out.write_all(b",\n")?;
        }
        Ok(())
    }

    fn ts(&mut self, ticks: u64) -> f64 {
        let start = *self.start.get_or_insert(ticks);
        ticks.saturating_sub(start) as f64 / self.ticks_per_us
    }

    fn instant(&mut self, name: &str, ticks: u64) -> io::Result<()> {
        let ts = self.ts(ticks);
        self.sep()?;
        self.out
            .write_all(b"{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"name\":")?;
        json(&mut self.out, name)?;
        write!(self.out, ",\"ts\":{:.3}}}", ts)
    }

    fn end(&mut self, thread: ThreadId, ticks: u64) -> io::Result<()> {
        let ts = self.ts(ticks);
        self.sep()?;
        write!(
            self.out,
            "{{\"ph\":\"E\",\"pid\":1,\"tid\":{},\"ts\":{:.3}}}",
            thread, ts
        )
    }

    /// Ends every open frame at `ticks`.
    fn close(&mut self, ticks: u64) -> io::Result<()> {
        let mut open: Vec<(ThreadId, u32)> = self.open.drain().collect();
        open.sort();
        for (thread, n) in open {
            for _ in 0..n {
                self.end(thread, ticks)?;
            }
        }
        Ok(())
    }

    fn event(&mut self, names: &Trace, e: &Event) -> io::Result<()> {
        match e {
            Event::ThreadDefine(t) => {
                self.sep()?;
                write!(
                    self.out,
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{},\"args\":{{\"name\":",
                    t.id
                )?;
                json(&mut self.out, &t.name)?;
                self.out.write_all(b"}}")?;
            }
            Event::MethodEnter(m) => {
                let ts = self.ts(m.ticks);
                self.sep()?;
                self.out.write_all(b"{\"ph\":\"B\",\"pid\":1,\"tid\":")?;
                write!(self.out, "{},\"ts\":{:.3},\"name\":", m.thread, ts)?;
                json(&mut self.out, &names.method_label(m.method))?;
                self.out.write_all(b"}")?;
                *self.open.entry(m.thread).or_insert(0) += 1;
            }
            Event::MethodLeave(l) => {
                let open = self.open.entry(l.thread).or_insert(0);
                if *open > 0 {
                    *open -= 1;
                    self.end(l.thread, l.ticks)?;
                }
            }
            Event::BurstBegin { ticks, burst } => {
                self.close(*ticks)?;
                self.instant(&format!("burst {} begins", burst), *ticks)?;
            }
            Event::BurstEnd { ticks, burst } => {
                self.close(*ticks)?;
                self.instant(&format!("burst {} ends", burst), *ticks)?;
            }
            Event::GcStart { ticks } => self.instant("GC start", *ticks)?,
            Event::GcFinish { ticks } => self.instant("GC finish", *ticks)?,
            Event::UserEvent { ticks, text } => self.instant(text, *ticks)?,
            _ => {}
        }
        Ok(())
    }
}

/// Writes the trace `reader` holds (any format) as Chrome JSON into `out`; where the file was
/// cut, if it was.
pub fn export(reader: impl io::Read, out: impl Write) -> Result<Option<usize>, ExportError> {
    let mut w = Writer {
        out,
        first: true,
        start: None,
        ticks_per_us: 1.0,
        open: HashMap::new(),
    };
    w.out.write_all(b"{\"traceEvents\":[\n")?;
    let mut last = 0;
    let names = Trace::scan(reader, |names, _, e| -> Result<(), ExportError> {
        if w.start.is_none() {
            w.ticks_per_us = f64::from(names.info.ticks_per_microsecond.max(1));
        }
        if e.ticks() > 0 {
            last = e.ticks();
        }
        w.event(names, &e)?;
        Ok(())
    })?;
    w.close(last)?;
    w.out.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
    w.out.flush()?;
    Ok(names.cut_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_json_strings() {
        let mut out = Vec::new();
        json(&mut out, "a\"b\\c\nd$e<init>").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"b\\c\u000ad$e<init>""#
        );
    }
}
