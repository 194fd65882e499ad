//! `jlive export --to speedscope`: speedscope's evented JSON, a profile per thread.
//!
//! ```text
//! {"$schema":"https://www.speedscope.app/file-format-schema.json","exporter":"jlive",
//!  "name":"app.trc","activeProfileIndex":0,
//!  "profiles":[{"type":"evented","name":"main","unit":"nanoseconds",
//!               "startValue":120,"endValue":98000,
//!               "events":[{"type":"O","frame":0,"at":120},       Fib.fib entered
//!                         {"type":"C","frame":0,"at":400}, ...]}, and left
//!              ...],
//!  "shared":{"frames":[{"name":"Fib.fib"}, ...]}}
//! ```
//!
//! A profile holds one thread's events, but a trace interleaves its threads: each thread's
//! events are kept in a compact form (13 bytes each) until the end, in memory up to a bound
//! and beyond it in an unlinked temporary file, then written thread by thread. Instants have
//! no place in this format and are left out.
//!
//! `serde_json` writes every value: a profile is one serialization whose events are read
//! back from the file and memory and serialized one by one as it goes (never a profile in
//! memory as JSON); only the document's keys and brackets around the profiles and the frames
//! are written by hand. Every number is an integer, written as before.

use super::{drive, ExportError, Slice, Timeline};
use crate::model::{MethodId, ThreadDef, ThreadId};
use crate::read::Trace;
use serde::ser::{Error as _, SerializeSeq, Serializer};
use serde::Serialize;
use std::cell::Cell;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

const OPEN: u8 = b'O';
const CLOSE: u8 = b'C';
/// One event kept: its kind, its frame (u32) and its time (u64), little-endian.
const EVENT: usize = 13;
/// A thread's events are moved to the file when they reach this size...
const THREAD_CHUNK: usize = 256 * 1024;
/// ...and every thread's when all together reach this.
const IN_MEMORY: usize = 32 << 20;

#[derive(Default)]
struct Profile {
    name: String,
    /// Parts of the temporary file that hold this thread's earlier events: offset, length.
    chunks: Vec<(u64, usize)>,
    kept: Vec<u8>,
    start: Option<u64>,
    end: u64,
}

struct Speedscope {
    /// Threads in the order they were defined.
    order: Vec<ThreadId>,
    profiles: HashMap<ThreadId, Profile>,
    frames: HashMap<MethodId, u32>,
    frame_names: Vec<String>,
    spill: Option<File>,
    spilled: u64,
    in_memory: usize,
    /// [`THREAD_CHUNK`] and [`IN_MEMORY`] (smaller in tests).
    chunk: usize,
    limit: usize,
}

/// A file in the temporary directory that is gone from it as soon as it is open.
fn unlinked_temp_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    for n in 0..100u32 {
        let path = dir.join(format!(".jlive-speedscope-{}-{}", std::process::id(), n));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                let _ = std::fs::remove_file(&path);
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free temporary file name"))
}

impl Speedscope {
    fn new(chunk: usize, limit: usize) -> Speedscope {
        Speedscope {
            order: Vec::new(),
            profiles: HashMap::new(),
            frames: HashMap::new(),
            frame_names: Vec::new(),
            spill: None,
            spilled: 0,
            in_memory: 0,
            chunk,
            limit,
        }
    }

    fn spill(&mut self, thread: ThreadId) -> io::Result<()> {
        let profile = self.profiles.get_mut(&thread).expect("known thread");
        if profile.kept.is_empty() {
            return Ok(());
        }
        let file = match &mut self.spill {
            Some(f) => f,
            None => self.spill.insert(unlinked_temp_file()?),
        };
        file.write_all(&profile.kept)?;
        profile.chunks.push((self.spilled, profile.kept.len()));
        self.spilled += profile.kept.len() as u64;
        self.in_memory -= profile.kept.len();
        // Its capacity goes too: the bound is on what memory holds, not on what it counts.
        profile.kept = Vec::new();
        Ok(())
    }

    fn keep(&mut self, thread: ThreadId, kind: u8, frame: u32, ns: u64) -> io::Result<()> {
        let profile = self.profiles.entry(thread).or_default();
        profile.kept.push(kind);
        profile.kept.extend_from_slice(&frame.to_le_bytes());
        profile.kept.extend_from_slice(&ns.to_le_bytes());
        profile.start.get_or_insert(ns);
        profile.end = ns;
        self.in_memory += EVENT;
        if profile.kept.len() >= self.chunk {
            self.spill(thread)?;
        }
        if self.in_memory >= self.limit {
            for thread in self.order.clone() {
                self.spill(thread)?;
            }
        }
        Ok(())
    }

    /// Writes one thread's profile.
    fn write_profile(&mut self, out: &mut impl Write, thread: ThreadId) -> io::Result<()> {
        let profile = self.profiles.remove(&thread).expect("known thread");
        let failed = Cell::new(None);
        let json = ProfileJson {
            kind: "evented",
            name: &profile.name,
            unit: "nanoseconds",
            start_value: profile.start.unwrap_or(0),
            end_value: profile.end,
            events: Events {
                spill: self.spill.as_ref(),
                chunks: &profile.chunks,
                kept: &profile.kept,
                failed: &failed,
            },
        };
        match serde_json::to_writer(&mut *out, &json) {
            Ok(()) => Ok(()),
            // An error of `out` comes back as the io::Error it was, one of the file's as well.
            Err(e) => Err(failed.take().unwrap_or_else(|| e.into())),
        }
    }
}

/// A profile as speedscope reads it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProfileJson<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    unit: &'static str,
    start_value: u64,
    end_value: u64,
    events: Events<'a>,
}

/// A profile's events, serialized as they are read: the chunks of the temporary file first,
/// one at a time, then what memory kept.
struct Events<'a> {
    spill: Option<&'a File>,
    chunks: &'a [(u64, usize)],
    kept: &'a [u8],
    /// Where a failed read of the temporary file is kept (a serializer's error is only text).
    failed: &'a Cell<Option<io::Error>>,
}

/// An event as speedscope reads it: `O` (a frame opened) or `C` (closed), at a time in ns.
#[derive(Serialize)]
struct EventJson {
    #[serde(rename = "type")]
    kind: char,
    frame: u32,
    at: u64,
}

impl Serialize for Events<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn each<S: SerializeSeq>(seq: &mut S, bytes: &[u8]) -> Result<(), S::Error> {
            for e in bytes.chunks_exact(EVENT) {
                seq.serialize_element(&EventJson {
                    kind: char::from(e[0]),
                    frame: u32::from_le_bytes(e[1..5].try_into().expect("4 bytes")),
                    at: u64::from_le_bytes(e[5..13].try_into().expect("8 bytes")),
                })?;
            }
            Ok(())
        }
        let mut seq = serializer.serialize_seq(None)?;
        let mut chunk = Vec::new();
        for &(offset, len) in self.chunks {
            let mut file = self.spill.expect("chunks are in the file");
            chunk.resize(len, 0);
            let read = file
                .seek(SeekFrom::Start(offset))
                .and_then(|_| file.read_exact(&mut chunk));
            if let Err(e) = read {
                let message = format!("reading the temporary file back: {}", e);
                self.failed.set(Some(e));
                return Err(S::Error::custom(message));
            }
            each(&mut seq, &chunk)?;
        }
        each(&mut seq, self.kept)?;
        seq.end()
    }
}

impl Timeline for Speedscope {
    fn thread(&mut self, _: &Trace, t: &ThreadDef) -> io::Result<()> {
        if !self.profiles.contains_key(&t.id) {
            self.order.push(t.id);
        }
        self.profiles.entry(t.id).or_default().name = t.name.clone();
        Ok(())
    }

    fn begin(&mut self, names: &Trace, slice: Slice) -> io::Result<()> {
        let Slice { thread, method, ns } = slice;
        let next = self.frame_names.len() as u32;
        let frame = *self.frames.entry(method).or_insert(next);
        if frame == next {
            self.frame_names.push(names.method_label(method));
        }
        if !self.profiles.contains_key(&thread) {
            self.order.push(thread);
        }
        self.keep(thread, OPEN, frame, ns)
    }

    fn end(&mut self, slice: Slice) -> io::Result<()> {
        let Slice { thread, method, ns } = slice;
        let frame = self.frames[&method];
        self.keep(thread, CLOSE, frame, ns)
    }

    fn instant(&mut self, _: &str, _: u64) -> io::Result<()> {
        Ok(())
    }
}

/// Writes the trace `reader` holds (any format) as speedscope JSON into `out`, a profile for
/// each thread that made traced calls, named `title`; where the file was cut, if it was.
pub fn export(
    reader: impl io::Read,
    out: impl Write,
    title: &str,
) -> Result<Option<usize>, ExportError> {
    let mut s = Speedscope::new(THREAD_CHUNK, IN_MEMORY);
    let (names, _) = drive(reader, &mut s)?;
    s.finish(out, title)?;
    Ok(names.cut_at)
}

/// A frame as speedscope reads it.
#[derive(Serialize)]
struct FrameJson<'a> {
    name: &'a str,
}

impl Speedscope {
    fn finish(mut self, mut out: impl Write, title: &str) -> io::Result<()> {
        let traced: Vec<ThreadId> = self
            .order
            .iter()
            .copied()
            .filter(|t| self.profiles[t].start.is_some())
            .collect();
        let active = traced
            .iter()
            .position(|t| self.profiles[t].name == "main")
            .unwrap_or(0);
        out.write_all(b"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",")?;
        out.write_all(b"\"exporter\":\"jlive\",\"name\":")?;
        serde_json::to_writer(&mut out, title)?;
        out.write_all(b",\"activeProfileIndex\":")?;
        serde_json::to_writer(&mut out, &active)?;
        out.write_all(b",\"profiles\":[\n")?;
        for (i, &thread) in traced.iter().enumerate() {
            if i > 0 {
                out.write_all(b",\n")?;
            }
            self.write_profile(&mut out, thread)?;
        }
        out.write_all(b"],\n\"shared\":{\"frames\":[")?;
        for (i, name) in self.frame_names.iter().enumerate() {
            if i > 0 {
                out.write_all(b",\n")?;
            }
            serde_json::to_writer(&mut out, &FrameJson { name })?;
        }
        out.write_all(b"]}}\n")?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::model::TraceInfo;

    fn written(chunk: usize, limit: usize) -> String {
        let names = Trace::empty(Format::Jinsight, TraceInfo::default());
        let mut s = Speedscope::new(chunk, limit);
        let m = |index| MethodId { class: 1, index };
        for (id, name) in [(1, "main"), (2, "worker")] {
            let t = ThreadDef {
                ticks: 0,
                id,
                name: name.into(),
                ..ThreadDef::default()
            };
            s.thread(&names, &t).unwrap();
        }
        for i in 0..1000u64 {
            let thread = 1 + (i % 2) as u32;
            s.begin(&names, Slice::new(thread, m(0), 10 * i)).unwrap();
            s.begin(
                &names,
                Slice::new(thread, m(1 + (i % 3) as u16), 10 * i + 1),
            )
            .unwrap();
            s.end(Slice::new(thread, m(1 + (i % 3) as u16), 10 * i + 2))
                .unwrap();
            s.end(Slice::new(thread, m(0), 10 * i + 3)).unwrap();
        }
        let mut out = Vec::new();
        s.finish(&mut out, "t").unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_document_is_the_one_written_by_hand_before_serde_json() {
        let names = Trace::empty(Format::Jinsight, TraceInfo::default());
        let mut s = Speedscope::new(THREAD_CHUNK, IN_MEMORY);
        s.thread(&names, &crate::export::thread_named(1, "main"))
            .unwrap();
        let m = MethodId { class: 1, index: 0 };
        s.begin(&names, Slice::new(1, m, 5)).unwrap();
        s.end(Slice::new(1, m, 7)).unwrap();
        let mut out = Vec::new();
        s.finish(&mut out, "a \"b\".trc").unwrap();
        let expected = concat!(
            r#"{"$schema":"https://www.speedscope.app/file-format-schema.json","#,
            r#""exporter":"jlive","name":"a \"b\".trc","activeProfileIndex":0,"profiles":["#,
            "\n",
            r#"{"type":"evented","name":"main","unit":"nanoseconds","startValue":5,"#,
            r#""endValue":7,"events":[{"type":"O","frame":0,"at":5},{"type":"C","frame":0,"at":7}]}"#,
            "],\n",
            r#""shared":{"frames":[{"name":"class#1.method#0"}]}}"#,
            "\n"
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn events_moved_to_the_temporary_file_come_back_in_their_order() {
        let in_memory = written(THREAD_CHUNK, IN_MEMORY);
        assert_eq!(in_memory.matches("\"type\":\"O\"").count(), 2000);
        assert!(in_memory.contains("\"name\":\"worker\""));
        // Chunks of 10 events, and everything out whenever 25 are in memory.
        assert_eq!(written(10 * EVENT, 25 * EVENT), in_memory);
        assert_eq!(written(7 * EVENT, usize::MAX), in_memory);
    }
}
