//! `jlive export --to chrome`: the Chrome trace-event JSON that chrome://tracing, Perfetto's UI
//! and speedscope open.
//!
//! ```text
//! {"traceEvents":[
//! {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},   a thread defined
//! {"ph":"B","pid":1,"tid":1,"ts":12.345,"name":"Fib.fib"},                   a method entered
//! {"ph":"E","pid":1,"tid":1,"ts":13.001},                                    and left
//! {"ph":"i","s":"g","pid":1,"tid":0,"name":"GC start","ts":20.5},            GC, user events, bursts
//! ],"displayTimeUnit":"ns"}
//! ```
//!
//! Times are microseconds (to the nanosecond) from the trace's first event. Each event is
//! one `serde_json` serialization of a `ChromeEvent` as it comes, a line of its own; only the
//! document's brackets around them are written by hand.
//!
//! A time is an `f64` of microseconds, which `serde_json` writes in its shortest form that
//! reads back the same: `12.345`, `20.5` (not `20.500`), `13.0`. That is the decimal of the
//! nanoseconds without its trailing zeros, exactly, below 10^15 ns (11 days): a double holds
//! every decimal of 15 significant digits, and one that reads back the same is the shortest.
//! Every reader of this format parses `ts` as a double, so the numbers are the ones the
//! three decimals wrote before.

use super::{drive, ExportError, Slice, Timeline};
use crate::model::{MethodId, ThreadDef, ThreadId};
use crate::read::Trace;
use serde::Serialize;
use std::collections::hash_map::{Entry, HashMap};
use std::io::{self, Write};

/// The process every event is in.
const PID: u32 = 1;

/// One trace event: `ph` first, then the fields in the order written here.
#[derive(Serialize)]
#[serde(tag = "ph")]
enum ChromeEvent<'a> {
    /// A thread's name.
    #[serde(rename = "M")]
    Metadata {
        name: &'static str,
        pid: u32,
        tid: ThreadId,
        args: ThreadName<'a>,
    },
    /// A method entered.
    #[serde(rename = "B")]
    Begin {
        pid: u32,
        tid: ThreadId,
        ts: f64,
        name: &'a str,
    },
    /// The innermost slice of `tid` ended.
    #[serde(rename = "E")]
    End { pid: u32, tid: ThreadId, ts: f64 },
    /// Something that happened to the whole JVM (`s`: global scope).
    #[serde(rename = "i")]
    Instant {
        s: &'static str,
        pid: u32,
        tid: ThreadId,
        name: &'a str,
        ts: f64,
    },
}

#[derive(Serialize)]
struct ThreadName<'a> {
    name: &'a str,
}

/// Nanoseconds as microseconds.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The events written so far.
struct Lines<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Lines<W> {
    /// Writes `event` on a line of its own.
    fn event(&mut self, event: &ChromeEvent<'_>) -> io::Result<()> {
        if !std::mem::replace(&mut self.first, false) {
            self.out.write_all(b",\n")?;
        }
        // An error of `out` comes back as the io::Error it was (a broken pipe stays one).
        serde_json::to_writer(&mut self.out, event)?;
        Ok(())
    }
}

struct Chrome<W: Write> {
    lines: Lines<W>,
    /// Each method's label, once its class is defined: [`Trace::method_label`] allocates and
    /// looks through the class's methods for namesakes, which every entry would repeat.
    labels: HashMap<MethodId, String>,
}

impl<W: Write> Chrome<W> {
    fn new(out: W) -> Chrome<W> {
        Chrome {
            lines: Lines { out, first: true },
            labels: HashMap::new(),
        }
    }
}

impl<W: Write> Timeline for Chrome<W> {
    fn thread(&mut self, _: &Trace, t: &ThreadDef) -> io::Result<()> {
        self.lines.event(&ChromeEvent::Metadata {
            name: "thread_name",
            pid: PID,
            tid: t.id,
            args: ThreadName { name: &t.name },
        })
    }

    fn begin(&mut self, names: &Trace, slice: Slice) -> io::Result<()> {
        let Slice { thread, method, ns } = slice;
        // A method whose class is not defined (yet) is labelled each time.
        let unknown;
        let name = match self.labels.entry(method) {
            Entry::Occupied(e) => e.into_mut().as_str(),
            Entry::Vacant(e) if names.classes.contains_key(&method.class) => {
                e.insert(names.method_label(method)).as_str()
            }
            Entry::Vacant(_) => {
                unknown = names.method_label(method);
                unknown.as_str()
            }
        };
        self.lines.event(&ChromeEvent::Begin {
            pid: PID,
            tid: thread,
            ts: micros(ns),
            name,
        })
    }

    fn end(&mut self, slice: Slice) -> io::Result<()> {
        let Slice { thread, ns, .. } = slice;
        self.lines.event(&ChromeEvent::End {
            pid: PID,
            tid: thread,
            ts: micros(ns),
        })
    }

    fn instant(&mut self, text: &str, ns: u64) -> io::Result<()> {
        self.lines.event(&ChromeEvent::Instant {
            s: "g",
            pid: PID,
            tid: 0,
            name: text,
            ts: micros(ns),
        })
    }
}

/// Writes the trace `reader` holds (any format) as Chrome JSON into `out`; where the file was
/// cut, if it was.
pub fn export(reader: impl io::Read, out: impl Write) -> Result<Option<usize>, ExportError> {
    let mut chrome = Chrome::new(out);
    chrome.lines.out.write_all(b"{\"traceEvents\":[\n")?;
    let (names, _) = drive(reader, &mut chrome)?;
    let out = &mut chrome.lines.out;
    out.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
    out.flush()?;
    Ok(names.cut_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::model::{ClassDef, MethodDef, TraceInfo};

    #[test]
    fn each_event_is_a_line_of_json_timed_in_microseconds() {
        let mut names = Trace::empty(Format::Jinsight, TraceInfo::default());
        let fib = MethodDef {
            name: "fib".into(),
            ..MethodDef::default()
        };
        names.classes.insert(
            1,
            ClassDef {
                id: 1,
                name: "Fib".into(),
                methods: vec![fib],
                ..ClassDef::default()
            },
        );
        let mut c = Chrome::new(Vec::new());
        let main = crate::export::thread_named(1, "main \"1\"\\\n\u{1}<init>");
        c.thread(&names, &main).unwrap();
        let known = MethodId { class: 1, index: 0 };
        let unknown = MethodId { class: 2, index: 3 };
        c.begin(&names, Slice::new(1, known, 0)).unwrap();
        c.begin(&names, Slice::new(1, unknown, 12_345)).unwrap();
        c.begin(&names, Slice::new(1, known, 12_345_000)).unwrap();
        c.end(Slice::new(1, known, 12_345_001)).unwrap();
        c.end(Slice::new(1, unknown, 12_345_010)).unwrap();
        c.end(Slice::new(1, known, 12_345_100)).unwrap();
        c.instant("GC start", 20_500).unwrap();
        let expected = [
            r#"{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main \"1\"\\\n\u0001<init>"}}"#,
            r#"{"ph":"B","pid":1,"tid":1,"ts":0.0,"name":"Fib.fib"}"#,
            r#"{"ph":"B","pid":1,"tid":1,"ts":12.345,"name":"class#2.method#3"}"#,
            r#"{"ph":"B","pid":1,"tid":1,"ts":12345.0,"name":"Fib.fib"}"#,
            r#"{"ph":"E","pid":1,"tid":1,"ts":12345.001}"#,
            r#"{"ph":"E","pid":1,"tid":1,"ts":12345.01}"#,
            r#"{"ph":"E","pid":1,"tid":1,"ts":12345.1}"#,
            r#"{"ph":"i","s":"g","pid":1,"tid":0,"name":"GC start","ts":20.5}"#,
        ];
        assert_eq!(
            String::from_utf8(c.lines.out).unwrap(),
            expected.join(",\n")
        );
        assert_eq!(
            c.labels.len(),
            1,
            "the label of a defined class's method is kept"
        );
    }

    #[test]
    fn microseconds_read_back_as_the_nanoseconds_they_were() {
        let day = 86_400_000_000_000;
        for ns in [
            0,
            1,
            999,
            1_000,
            20_500,
            123_456_789,
            day + 123,
            11 * day + 999_999,
        ] {
            let text = serde_json::to_string(&micros(ns)).unwrap();
            let (whole, fraction) = text.split_once('.').expect("a decimal point");
            assert!(fraction.len() <= 3, "{}", text);
            let back = whole.parse::<u64>().unwrap() * 1000
                + format!("{:0<3}", fraction).parse::<u64>().unwrap();
            assert_eq!(back, ns, "{}", text);
        }
    }
}
