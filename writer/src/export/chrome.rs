//! `jlive export --to chrome`: the Chrome trace-event JSON that chrome://tracing, Perfetto's UI
//! and speedscope open.
//!
//! ```text
//! {"traceEvents":[
//! {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},   a thread defined
//! {"ph":"B","pid":1,"tid":1,"ts":12.345,"name":"Fib.fib"},                   a method entered
//! {"ph":"E","pid":1,"tid":1,"ts":13.001},                                    and left
//! {"ph":"i","s":"g","pid":1,"tid":0,"name":"GC start","ts":20.500},          GC, user events, bursts
//! ],"displayTimeUnit":"ns"}
//! ```
//!
//! Times are microseconds (to the nanosecond) from the trace's first event.

use super::{drive, json, ExportError, Timeline};
use crate::model::{MethodId, ThreadDef, ThreadId};
use crate::read::Trace;
use std::io::{self, Write};

struct Chrome<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Chrome<W> {
    fn sep(&mut self) -> io::Result<()> {
        if !std::mem::replace(&mut self.first, false) {
            self.out.write_all(b",\n")?;
        }
        Ok(())
    }
}

impl<W: Write> Timeline for Chrome<W> {
    fn thread(&mut self, _: &Trace, t: &ThreadDef) -> io::Result<()> {
        self.sep()?;
        write!(
            self.out,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":{},\"args\":{{\"name\":",
            t.id
        )?;
        json(&mut self.out, &t.name)?;
        self.out.write_all(b"}}")
    }

    fn begin(
        &mut self,
        names: &Trace,
        thread: ThreadId,
        method: MethodId,
        ns: u64,
    ) -> io::Result<()> {
        self.sep()?;
        write!(
            self.out,
            "{{\"ph\":\"B\",\"pid\":1,\"tid\":{},\"ts\":{}.{:03},\"name\":",
            thread,
            ns / 1000,
            ns % 1000
        )?;
        json(&mut self.out, &names.method_label(method))?;
        self.out.write_all(b"}")
    }

    fn end(&mut self, thread: ThreadId, _: MethodId, ns: u64) -> io::Result<()> {
        self.sep()?;
        write!(
            self.out,
            "{{\"ph\":\"E\",\"pid\":1,\"tid\":{},\"ts\":{}.{:03}}}",
            thread,
            ns / 1000,
            ns % 1000
        )
    }

    fn instant(&mut self, text: &str, ns: u64) -> io::Result<()> {
        self.sep()?;
        self.out
            .write_all(b"{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"name\":")?;
        json(&mut self.out, text)?;
        write!(self.out, ",\"ts\":{}.{:03}}}", ns / 1000, ns % 1000)
    }
}

/// Writes the trace `reader` holds (any format) as Chrome JSON into `out`; where the file was
/// cut, if it was.
pub fn export(reader: impl io::Read, out: impl Write) -> Result<Option<usize>, ExportError> {
    let mut chrome = Chrome { out, first: true };
    chrome.out.write_all(b"{\"traceEvents\":[\n")?;
    let (names, _) = drive(reader, &mut chrome)?;
    chrome.out.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
    chrome.out.flush()?;
    Ok(names.cut_at)
}
