//! The one way back from a trace file to model events, whatever its format: [`open`] finds the
//! format by the file's first bytes and gives an [`EventReader`]. `jlive dump`, `check`,
//! `stats`, `convert` and the tests read every format through it; [`Trace`] holds a whole
//! decoded trace with its names indexed.

use crate::codec::read_up_to;
pub use crate::codec::{DecodeError, EventReader};
pub use crate::format::Format;
use crate::gzip::Whole;
use crate::model::*;
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io::Read;

/// The format of a file, found by its first bytes, and the whole file to read on
/// (decompressed, when it is gzip's: `compress=gzip`).
pub fn sniff<'a>(mut reader: impl Read + 'a) -> Result<(Format, impl Read + 'a), DecodeError> {
    let mut prefix = [0u8; 8];
    let got = read_up_to(&mut reader, &mut prefix)
        .map_err(|e| DecodeError::at(0, format!("cannot read: {}", e)))?;
    // The bytes looked at go back in front of the rest.
    let mut whole = Whole::of(
        &prefix[..got],
        std::io::Cursor::new(prefix[..got].to_vec()).chain(reader),
    );
    // What a compressed file decompresses to is looked at in its turn, and put back.
    let (got, compressed, again) = match whole {
        Whole::Plain(_) => (got, "", 0),
        Whole::Gzip(_) => {
            let got = read_up_to(&mut whole, &mut prefix)
                .map_err(|e| DecodeError::at(0, format!("cannot decompress: {}", e)))?;
            (got, "decompressed ", got)
        }
    };
    let Some(format) = detect(&prefix[..got]) else {
        if got == 0 {
            return Err(DecodeError::at(
                0,
                format!("empty {}file: no trace header", compressed),
            ));
        }
        return Err(DecodeError::at(
            0,
            format!(
                "not a trace jlive reads (its {}bytes start {:02x?}): JinsightLive starts \
                 with 'b', TPTP binary with 0TBF, TPTP XML with <?xml, an ORCA event log with a time",
                compressed,
                &prefix[..got]
            ),
        ));
    };
    Ok((
        format,
        std::io::Cursor::new(prefix[..again].to_vec()).chain(whole),
    ))
}

/// The format of a file that starts with `prefix` (its first bytes, up to 8).
fn detect(prefix: &[u8]) -> Option<Format> {
    if prefix.first() == Some(&crate::jinsight::MAGIC) {
        Some(Format::Jinsight)
    } else if crate::tptp::binary::is_magic(prefix) {
        Some(Format::Tptp)
    } else if crate::tptp::xml::is_start(prefix) {
        Some(Format::TptpXml)
    } else if crate::orca::is_start(prefix) {
        Some(Format::Orca)
    } else {
        None
    }
}

/// Opens a trace of any format jlive writes, found by its first bytes.
pub fn open<'a>(reader: impl Read + 'a) -> Result<Box<dyn EventReader + 'a>, DecodeError> {
    match sniff(reader)? {
        (Format::Jinsight, whole) => Ok(Box::new(crate::jinsight::read::Reader::new(whole)?)),
        (Format::Tptp, whole) => Ok(Box::new(crate::tptp::binary::reader(whole)?)),
        (Format::TptpXml, whole) => Ok(Box::new(crate::tptp::xml::reader(whole)?)),
        (Format::Orca, whole) => Ok(Box::new(crate::orca::read::reader(whole)?)),
    }
}

/// A decoded trace with its names indexed.
pub struct Trace {
    pub format: Format,
    pub info: TraceInfo,
    pub events: Vec<(usize, Event)>,
    pub classes: HashMap<ClassId, ClassDef>,
    pub threads: HashMap<ThreadId, ThreadDef>,
    /// Where the file ends inside an event (a byte offset, or a line), whose bytes are left
    /// out.
    pub cut_at: Option<usize>,
}

impl Trace {
    /// Decodes a whole file held in memory (see [`Trace::read`]).
    pub fn decode(data: &[u8]) -> Result<Trace, DecodeError> {
        Trace::read(data)
    }

    /// Decodes a whole file; fails at the first undecodable event, except a last one that the
    /// file ends inside of (a JVM killed while its trace was being written): that one is left
    /// out and `cut_at` says where it began.
    pub fn read(reader: impl Read) -> Result<Trace, DecodeError> {
        let mut kept = Vec::new();
        let mut trace = Trace::scan(reader, |_, at, e| -> Result<(), DecodeError> {
            kept.push((at, e));
            Ok(())
        })?;
        trace.events = kept;
        Ok(trace)
    }

    /// Reads a file of any format one event at a time and keeps none: `visit` gets each
    /// event (and its position) with the names learnt up to it, its own included. Returns
    /// the names, the file's info as it stands at the end (some formats say more about the
    /// run as they go: TPTP's closing messages) and where the file was cut, as
    /// [`Trace::read`] says.
    pub fn scan<E: From<DecodeError>>(
        reader: impl Read,
        mut visit: impl FnMut(&Trace, usize, Event) -> Result<(), E>,
    ) -> Result<Trace, E> {
        let mut events = open(reader)?;
        let mut names = Trace::empty(events.format(), events.info().clone());
        names.cut_at = each(&mut *events, |at, e| {
            names.learn(&e);
            visit(&names, at, e)
        })?;
        names.info = events.info().clone();
        Ok(names)
    }

    /// A trace with no events and no names yet, to [`Trace::learn`] them as events are read
    /// one at a time (definitions precede their use).
    pub fn empty(format: Format, info: TraceInfo) -> Trace {
        Trace {
            format,
            info,
            events: Vec::new(),
            classes: HashMap::new(),
            threads: HashMap::new(),
            cut_at: None,
        }
    }

    /// Takes the names an event defines: a class's (and its methods'), a thread's.
    pub fn learn(&mut self, event: &Event) {
        match event {
            Event::ClassDefine(c) => {
                self.classes.insert(c.id, (**c).clone());
            }
            Event::ThreadDefine(t) => {
                self.threads.insert(t.id, (**t).clone());
            }
            _ => {}
        }
    }

    /// `pkg/Class` of a class ID.
    pub fn class_name(&self, class: ClassId) -> String {
        let mut s = String::new();
        let _ = self.write_class_name(&mut s, class);
        s
    }

    fn write_class_name(&self, out: &mut String, class: ClassId) -> fmt::Result {
        match self.classes.get(&class) {
            Some(c) => out.write_str(&c.name),
            None => write!(out, "class#{}", class),
        }
    }

    /// `pkg/Class.method`, with the method's signature when its class has another method of
    /// that name (`java/lang/StringBuilder.append(I)Ljava/lang/StringBuilder;`): how `jlive
    /// stats` and `jlive tree` tell overloads apart.
    pub fn method_label(&self, method: MethodId) -> String {
        let mut s = self.method_name(method);
        let methods = self.classes.get(&method.class).map(|c| &c.methods[..]);
        if let Some(m) = methods.and_then(|ms| ms.get(usize::from(method.index))) {
            let namesakes = methods
                .unwrap_or_default()
                .iter()
                .filter(|o| o.name == m.name);
            if namesakes.count() > 1 {
                s.push_str(&m.signature);
            }
        }
        s
    }

    /// `pkg/Class.method` of a method.
    pub fn method_name(&self, method: MethodId) -> String {
        let mut s = String::new();
        let _ = self.write_method_name(&mut s, method);
        s
    }

    fn write_method_name(&self, out: &mut String, method: MethodId) -> fmt::Result {
        self.write_class_name(out, method.class)?;
        let m = self
            .classes
            .get(&method.class)
            .and_then(|c| c.methods.get(usize::from(method.index)));
        match m {
            Some(m) => write!(out, ".{}", m.name),
            None => write!(out, ".method#{}", method.index),
        }
    }

    /// Name of a thread ID.
    pub fn thread_name(&self, thread: ThreadId) -> String {
        let mut s = String::new();
        let _ = self.write_thread_name(&mut s, thread);
        s
    }

    fn write_thread_name(&self, out: &mut String, thread: ThreadId) -> fmt::Result {
        match self.threads.get(&thread) {
            Some(t) => out.write_str(&t.name),
            None => write!(out, "thread#{}", thread),
        }
    }

    /// Thread IDs whose name is `name`.
    pub fn threads_named(&self, name: &str) -> Vec<ThreadId> {
        let mut v: Vec<ThreadId> = self
            .threads
            .values()
            .filter(|t| t.name == name)
            .map(|t| t.id)
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
        let _ = write!(out, "{} {} ", event.ticks(), event.name());
        // Writing into a String cannot fail.
        let _ = self.describe_fields(out, event);
        let kept = out[start..].trim_end().len();
        out.truncate(start + kept);
    }

    /// What follows an event's name in its `jlive dump` line.
    fn describe_fields(&self, out: &mut String, event: &Event) -> fmt::Result {
        match event {
            Event::VmInit { .. }
            | Event::VmDeath { .. }
            | Event::GcStart { .. }
            | Event::GcFinish { .. } => Ok(()),
            Event::BurstBegin { burst, .. } | Event::BurstEnd { burst, .. } => {
                write!(out, "burst={}", burst)
            }
            Event::ThreadDefine(t) => {
                write!(out, "thread={} name={:?}", t.id, t.name)?;
                if t.group.is_empty() {
                    Ok(())
                } else {
                    write!(out, " group={:?}", t.group)
                }
            }
            Event::ThreadStart { thread, .. } | Event::ThreadEnd { thread, .. } => {
                write!(out, "thread={} (", thread)?;
                self.write_thread_name(out, *thread)?;
                out.write_str(")")
            }
            Event::ClassDefine(c) => {
                write!(
                    out,
                    "class={} name={} methods={} fields={} super=",
                    c.id,
                    c.name,
                    c.methods.len(),
                    c.fields.len(),
                )?;
                match c.superclass {
                    Some(s) => write!(out, "{}", s)?,
                    None => out.write_str("-")?,
                }
                write!(out, " interfaces={:?}", c.interfaces)
            }
            Event::MethodEnter(e) => {
                write!(out, "thread={} ", e.thread)?;
                self.write_method_name(out, e.method)?;
                write!(out, " depth={}", e.depth)?;
                if e.object == NO_OBJECT {
                    out.write_str(" static")
                } else {
                    write!(out, " object={}", e.object)
                }
            }
            Event::MethodLeave(l) => {
                write!(out, "thread={} ", l.thread)?;
                self.write_method_name(out, l.method)?;
                write!(out, " depth={} overhead={}", l.depth, l.overhead)
            }
            Event::ContextEnter(c) => {
                write!(out, "thread={} ", c.thread)?;
                self.write_method_name(out, c.method)?;
                write!(
                    out,
                    " calls={} base={} min={} max={}",
                    c.calls, c.base_ticks, c.min_ticks, c.max_ticks
                )
            }
            Event::ContextLeave { thread, method, .. } => {
                write!(out, "thread={} ", thread)?;
                self.write_method_name(out, *method)
            }
            Event::ObjectDefine(o) => self.describe_object(out, o),
            Event::Alloc { thread, object } => {
                write!(out, "thread={} ", thread)?;
                self.describe_object(out, object)
            }
            Event::Free { object, .. } => write!(out, "object={}", object),
            Event::UserEvent { text, .. } => write!(out, "{:?}", text),
            Event::Sync(s) => {
                write!(out, "thread={} {}", s.thread, s.kind.name())?;
                if s.kind.has_object() {
                    write!(out, " object={:08X}", s.object)?;
                }
                if s.kind == crate::model::SyncKind::ContendedEnter {
                    write!(out, " owner={:08X}", s.owner)?;
                }
                write!(out, " stack=[")?;
                for (i, f) in s.stack.iter().enumerate() {
                    let sep = if i > 0 { ", " } else { "" };
                    write!(out, "{}{}@{}", sep, self.method_label(f.method), f.location)?;
                }
                write!(out, "]")
            }
            Event::Values(v) => {
                write!(out, "thread={} ", v.thread)?;
                self.write_method_name(out, v.method)?;
                write!(out, " {:?}", v.values)
            }
            Event::Heap { part, .. } => match &**part {
                HeapPart::Refs { object, to, .. } => write!(out, "object={} to={:?}", object, to),
                HeapPart::Statics { class, to } => {
                    out.write_str("class=")?;
                    self.write_class_name(out, *class)?;
                    write!(out, " to={:?}", to)
                }
                HeapPart::Root {
                    kind,
                    thread,
                    object,
                } => {
                    write!(out, "{:?} object={}", kind, object)?;
                    match thread {
                        Some(t) => write!(out, " thread={}", t),
                        None => Ok(()),
                    }
                }
                HeapPart::Generation => Ok(()),
                HeapPart::EndOfReport { events } => write!(out, "events={}", events),
            },
        }
    }

    fn describe_object(&self, out: &mut String, o: &ObjectDef) -> fmt::Result {
        write!(out, "object={} class=", o.object)?;
        self.write_class_name(out, o.class)?;
        match o.array {
            Some(a) => write!(out, " length={}", a.length),
            None => Ok(()),
        }
    }
}

/// Hands every event of `events` to `f`, and says where the file was cut short: a last event
/// the file ends inside of (a JVM killed while its trace was written) is left out, and its
/// position returned; any other undecodable event is an error.
pub fn each<E: From<DecodeError>>(
    events: &mut dyn EventReader,
    mut f: impl FnMut(usize, Event) -> Result<(), E>,
) -> Result<Option<usize>, E> {
    loop {
        match events.next_event() {
            Ok(Some((at, e))) => f(at, e)?,
            Ok(None) => return Ok(None),
            Err(e) if e.cut_short => return Ok(Some(e.line.unwrap_or(e.offset))),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Writes every event of `events` to `sink` and finishes it: `jlive convert`. The sink must
/// have been opened with the reader's [`EventReader::info`]. Each event is checked first
/// ([`crate::checker::Checker`]): what the sink writes is a trace, or nothing. A file cut short
/// is converted up to its last whole event, and a burst it leaves open is ended there.
pub fn copy(
    events: &mut dyn EventReader,
    sink: &mut impl Sink,
) -> Result<Option<usize>, CopyError> {
    let mut checker = crate::checker::Checker::new(events.format());
    let (mut last, mut burst) = (0, None);
    let limit = sink.max_classes();
    let cut_at = each(events, |at, e| {
        checker.event(at, &e)?;
        match &e {
            Event::ClassDefine(c) if c.id >= limit => {
                return Err(CopyError::Write(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("class {}: the format names at most {} classes", c.id, limit),
                )))
            }
            Event::BurstBegin { burst: b, .. } => burst = Some(*b),
            Event::BurstEnd { .. } => burst = None,
            _ => {}
        }
        last = last.max(e.ticks());
        sink.event(&e).map_err(CopyError::Write)
    })?;
    if let Some(burst) = burst {
        let end = Event::BurstEnd { ticks: last, burst };
        sink.event(&end).map_err(CopyError::Write)?;
    }
    let ending = Ending {
        ticks: events.info().end_ticks.unwrap_or(last),
        ticks_per_microsecond: None,
    };
    sink.finish(&ending).map_err(CopyError::Write)?;
    Ok(cut_at)
}

/// Why [`copy`] stopped.
#[derive(Debug)]
pub enum CopyError {
    Read(DecodeError),
    Write(std::io::Error),
}

impl From<DecodeError> for CopyError {
    fn from(e: DecodeError) -> CopyError {
        CopyError::Read(e)
    }
}

impl fmt::Display for CopyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CopyError::Read(e) => write!(f, "reading: {}", e),
            CopyError::Write(e) => write!(f, "writing: {}", e),
        }
    }
}
