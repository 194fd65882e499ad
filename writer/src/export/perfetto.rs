//! `jlive export --to perfetto`: Perfetto's protobuf trace of TrackEvents, which
//! ui.perfetto.dev and its trace processor open.
//!
//! ```text
//! Trace { repeated TracePacket packet = 1 }, every packet on sequence 1 (field 10):
//!   TracePacket{ timestamp(8)=0, sequence_flags(13)=1 (state cleared),     the process
//!                track_descriptor(60){ uuid(1)=1, process(3){ pid(1), process_name(6) } } }
//!   TracePacket{ timestamp(8)=0, track_descriptor(60){ uuid(1)=2,           GC, bursts...
//!                parent_uuid(5)=1, name(2)="JVM" } }
//!   TracePacket{ timestamp(8)=0, track_descriptor(60){ uuid(1)=16+tid,     a thread
//!                parent_uuid(5)=1,
//!                thread(4){ pid(1), tid(2), thread_name(5) } } }
//!   TracePacket{ timestamp(8)=ns, sequence_flags(13)=2 (needs state),      a method entered
//!                interned_data(12){ event_names(2){ iid(1), name(2) } },   (its name, once)
//!                track_event(11){ type(9)=1 (slice begin), track_uuid(11), name_iid(10) } }
//!   TracePacket{ timestamp(8), track_event(11){ type(9)=2 (slice end), track_uuid(11) } }
//!   TracePacket{ timestamp(8), track_event(11){ type(9)=3 (instant),       GC, user events,
//!                track_uuid(11)=2, name(23) } }                            burst boundaries
//! ```
//!
//! Timestamps are nanoseconds from the trace's first event; a slice's name is its method's,
//! interned: its string is written once, with the first packet that uses it.

use super::{drive, ExportError, Slice, Timeline};
use crate::model::{MethodId, ThreadDef, ThreadId};
use crate::read::Trace;
use std::collections::HashMap;
use std::io::{self, Write};

const VARINT: u32 = 0;
const LEN: u32 = 2;

const PACKET: u32 = 1;
const TIMESTAMP: u32 = 8;
const SEQUENCE_ID: u32 = 10;
const TRACK_EVENT: u32 = 11;
const INTERNED_DATA: u32 = 12;
const SEQUENCE_FLAGS: u32 = 13;
const TRACK_DESCRIPTOR: u32 = 60;

const STATE_CLEARED: u64 = 1;
const NEEDS_STATE: u64 = 2;

const EVENT_TYPE: u32 = 9;
const EVENT_NAME_IID: u32 = 10;
const EVENT_TRACK_UUID: u32 = 11;
const EVENT_NAME: u32 = 23;
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const INSTANT: u64 = 3;

const PROCESS_TRACK: u64 = 1;
const JVM_TRACK: u64 = 2;
const FIRST_THREAD_TRACK: u64 = 16;

/// Protobuf's wire format, appended to a buffer.
mod wire {
    pub fn varint(buf: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        buf.push(v as u8);
    }

    pub fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
        varint(buf, u64::from(field << 3 | super::VARINT));
        varint(buf, v);
    }

    pub fn bytes(buf: &mut Vec<u8>, field: u32, data: &[u8]) {
        varint(buf, u64::from(field << 3 | super::LEN));
        varint(buf, data.len() as u64);
        buf.extend_from_slice(data);
    }
}

struct Perfetto<W: Write> {
    out: W,
    pid: u64,
    title: String,
    names: HashMap<MethodId, u64>,
    /// Scratch buffers: a packet, and the messages inside it.
    packet: Vec<u8>,
    inner: Vec<u8>,
    deeper: Vec<u8>,
}

fn thread_track(thread: ThreadId) -> u64 {
    FIRST_THREAD_TRACK + u64::from(thread)
}

impl<W: Write> Perfetto<W> {
    /// Writes `self.packet` as the trace's next packet, on sequence 1.
    fn emit(&mut self) -> io::Result<()> {
        wire::uint(&mut self.packet, SEQUENCE_ID, 1);
        let mut head = Vec::with_capacity(6);
        wire::varint(&mut head, u64::from(PACKET << 3 | LEN));
        wire::varint(&mut head, self.packet.len() as u64);
        self.out.write_all(&head)?;
        self.out.write_all(&self.packet)?;
        self.packet.clear();
        Ok(())
    }

    /// A track descriptor packet; `describe` fills the descriptor's body.
    fn track(&mut self, flags: u64, describe: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        self.inner.clear();
        describe(&mut self.inner);
        // At the trace's start, before any event on it.
        wire::uint(&mut self.packet, TIMESTAMP, 0);
        if flags != 0 {
            wire::uint(&mut self.packet, SEQUENCE_FLAGS, flags);
        }
        wire::bytes(&mut self.packet, TRACK_DESCRIPTOR, &self.inner);
        self.emit()
    }

    /// A track event packet at `ns`; `event` fills the event's body after its type.
    fn event(&mut self, ns: u64, kind: u64, event: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        self.inner.clear();
        wire::uint(&mut self.inner, EVENT_TYPE, kind);
        event(&mut self.inner);
        wire::uint(&mut self.packet, TIMESTAMP, ns);
        wire::uint(&mut self.packet, SEQUENCE_FLAGS, NEEDS_STATE);
        wire::bytes(&mut self.packet, TRACK_EVENT, &self.inner);
        self.emit()
    }
}

impl<W: Write> Timeline for Perfetto<W> {
    fn start(&mut self, names: &Trace) -> io::Result<()> {
        self.pid = u64::from(names.info.pid.max(1));
        let (pid, title) = (self.pid, std::mem::take(&mut self.title));
        self.track(STATE_CLEARED, |d| {
            let mut process = Vec::new();
            wire::uint(&mut process, 1, pid);
            wire::bytes(&mut process, 6, title.as_bytes());
            wire::uint(d, 1, PROCESS_TRACK);
            wire::bytes(d, 3, &process);
        })?;
        self.track(0, |d| {
            wire::uint(d, 1, JVM_TRACK);
            wire::uint(d, 5, PROCESS_TRACK);
            wire::bytes(d, 2, b"JVM");
        })
    }

    fn thread(&mut self, _: &Trace, t: &ThreadDef) -> io::Result<()> {
        let pid = self.pid;
        self.track(0, |d| {
            let mut thread = Vec::new();
            wire::uint(&mut thread, 1, pid);
            wire::uint(&mut thread, 2, u64::from(t.id));
            wire::bytes(&mut thread, 5, t.name.as_bytes());
            wire::uint(d, 1, thread_track(t.id));
            wire::uint(d, 5, PROCESS_TRACK);
            wire::bytes(d, 4, &thread);
        })
    }

    fn begin(&mut self, names: &Trace, slice: Slice) -> io::Result<()> {
        let Slice { thread, method, ns } = slice;
        let next = self.names.len() as u64 + 1;
        let iid = *self.names.entry(method).or_insert(next);
        if iid == next {
            // The name's first use: interned in this packet.
            self.deeper.clear();
            wire::uint(&mut self.deeper, 1, iid);
            wire::bytes(&mut self.deeper, 2, names.method_label(method).as_bytes());
            self.inner.clear();
            wire::bytes(&mut self.inner, 2, &self.deeper);
            wire::bytes(&mut self.packet, INTERNED_DATA, &self.inner);
        }
        self.event(ns, SLICE_BEGIN, |e| {
            wire::uint(e, EVENT_TRACK_UUID, thread_track(thread));
            wire::uint(e, EVENT_NAME_IID, iid);
        })
    }

    fn end(&mut self, slice: Slice) -> io::Result<()> {
        let Slice { thread, ns, .. } = slice;
        self.event(ns, SLICE_END, |e| {
            wire::uint(e, EVENT_TRACK_UUID, thread_track(thread))
        })
    }

    fn instant(&mut self, text: &str, ns: u64) -> io::Result<()> {
        self.event(ns, INSTANT, |e| {
            wire::uint(e, EVENT_TRACK_UUID, JVM_TRACK);
            wire::bytes(e, EVENT_NAME, text.as_bytes());
        })
    }
}

/// Writes the trace `reader` holds (any format) as a Perfetto trace into `out`, its process
/// named `title`; where the file was cut, if it was.
pub fn export(
    reader: impl io::Read,
    out: impl Write,
    title: &str,
) -> Result<Option<usize>, ExportError> {
    let mut p = Perfetto {
        out,
        pid: 1,
        title: title.to_string(),
        names: HashMap::new(),
        packet: Vec::new(),
        inner: Vec::new(),
        deeper: Vec::new(),
    };
    let (names, _) = drive(reader, &mut p)?;
    p.out.flush()?;
    Ok(names.cut_at)
}

#[cfg(test)]
mod tests {
    use super::wire;

    #[test]
    fn varints_are_seven_bits_at_a_time_low_first() {
        let mut buf = Vec::new();
        wire::varint(&mut buf, 1);
        wire::varint(&mut buf, 300);
        wire::uint(&mut buf, 11, 150);
        assert_eq!(buf, [0x01, 0xAC, 0x02, 0x58, 0x96, 0x01]);
    }
}
