//! JinsightLive encoder: the header, events in the platform's byte order, TraceEnd, and the
//! header patch at close (see the layout in `jinsight/mod.rs`).

use super::*;
use std::io::{self, Seek, SeekFrom, Write};

/// Bytes gathered before they are handed to the underlying writer (one write each).
const CHUNK: usize = 1024 * 1024;

/// Writes one JinsightLive file.
pub struct Encoder<W: Write + Seek> {
    out: W,
    buf: Vec<u8>,
    endian: Endian,
    events: u64,
    bytes: u64,
}

impl<W: Write + Seek> Encoder<W> {
    /// Starts the file with the header (counts as given; patch them with
    /// [`Encoder::finish`]). The header is written with the first chunk, so a full disk is
    /// reported by the first flush, not here.
    pub fn new(out: W, header: &Header) -> io::Result<Encoder<W>> {
        let endian = Endian::of_platform(header.platform).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "unknown JinsightLive platform")
        })?;
        let mut buf = Vec::with_capacity(CHUNK + 1024);
        buf.extend_from_slice(&header_bytes(header));
        Ok(Encoder {
            out,
            buf,
            endian,
            events: 0,
            bytes: 0,
        })
    }

    /// Events written so far (TraceEnd excluded).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes written so far, header included.
    pub fn bytes(&self) -> u64 {
        self.bytes + self.buf.len() as u64
    }

    /// Appends one event.
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        self.put_event(event);
        if !matches!(event, Event::TraceEnd { .. }) {
            self.events += 1;
        }
        if self.buf.len() >= CHUNK {
            self.drain()?;
        }
        Ok(())
    }

    /// The underlying writer (after [`Encoder::finish`], the whole file).
    pub fn into_inner(self) -> W {
        self.out
    }

    /// WIDE_METHOD_ENTER without building an [`Event`], the writer's hottest path, in the byte
    /// order `BIG` says, which must be the encoder's: for a caller that knows it for every
    /// event at once (`JinsightSink<W, BIG>`).
    #[inline(always)]
    pub fn method_enter_in<const BIG: bool>(
        &mut self,
        mut ticks: u64,
        mut thread: u32,
        mut class: u16,
        mut method: u16,
        mut object: u32,
    ) -> io::Result<()> {
        debug_assert_eq!(BIG, self.endian == Endian::Big);
        // A value's big-endian bytes are its byte-swapped value's little-endian ones.
        if BIG {
            ticks = ticks.swap_bytes();
            thread = thread.swap_bytes();
            class = class.swap_bytes();
            method = method.swap_bytes();
            object = object.swap_bytes();
        }
        let mut b = [0u8; 23];
        b[0] = WIDE_METHOD_ENTER;
        b[1..9].copy_from_slice(&ticks.to_le_bytes());
        b[9..13].copy_from_slice(&thread.to_le_bytes());
        b[13..15].copy_from_slice(&class.to_le_bytes());
        b[15..17].copy_from_slice(&method.to_le_bytes());
        b[17..21].copy_from_slice(&object.to_le_bytes());
        self.raw(&b)
    }

    /// METHOD_LEAVE without building an [`Event`], in the byte order `BIG` says (see
    /// `method_enter_in`).
    #[inline(always)]
    pub fn method_leave_in<const BIG: bool>(
        &mut self,
        mut ticks: u64,
        mut overhead: u64,
        mut thread: u32,
    ) -> io::Result<()> {
        debug_assert_eq!(BIG, self.endian == Endian::Big);
        if BIG {
            ticks = ticks.swap_bytes();
            overhead = overhead.swap_bytes();
            thread = thread.swap_bytes();
        }
        let mut b = [0u8; 21];
        b[0] = METHOD_LEAVE;
        b[1..9].copy_from_slice(&ticks.to_le_bytes());
        b[9..17].copy_from_slice(&overhead.to_le_bytes());
        b[17..21].copy_from_slice(&thread.to_le_bytes());
        self.raw(&b)
    }

    /// Appends one event's bytes (inlined, so that a fixed-size event is copied in place).
    #[inline(always)]
    fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        self.events += 1;
        if self.buf.len() >= CHUNK {
            self.drain()?;
        }
        Ok(())
    }

    /// Hands buffered bytes to the underlying writer and flushes it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.out.flush()
    }

    /// Writes TraceEnd and patches the header counts (and the calibrated tick rate, if given).
    pub fn finish(
        &mut self,
        max_threads: u32,
        max_classes: u32,
        ticks_per_microsecond: Option<u32>,
    ) -> io::Result<()> {
        self.write(&Event::TraceEnd {
            first: TRACE_END_WORD,
            second: TRACE_END_WORD,
        })?;
        self.flush()?;
        let events = u32::try_from(self.events).unwrap_or(u32::MAX);
        let mut counts = [0u8; 12];
        counts[0..4].copy_from_slice(&events.to_le_bytes());
        counts[4..8].copy_from_slice(&max_threads.to_le_bytes());
        counts[8..12].copy_from_slice(&max_classes.to_le_bytes());
        match self.out.seek(SeekFrom::Start(COUNTS_OFFSET)) {
            // A pipe or a terminal: the header keeps the counts it began with (a reader counts
            // the events itself up to TraceEnd).
            Err(e) if e.raw_os_error() == Some(29) => return self.out.flush(), // ESPIPE
            other => other?,
        };
        self.out.write_all(&counts)?;
        if let Some(rate) = ticks_per_microsecond {
            self.out.seek(SeekFrom::Start(TICKS_PER_US_OFFSET))?;
            self.out.write_all(&rate.to_le_bytes())?;
        }
        self.out.seek(SeekFrom::End(0))?;
        self.out.flush()
    }

    fn drain(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.out.write_all(&self.buf)?;
            self.bytes += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    fn u16(&mut self, v: u16) {
        match self.endian {
            Endian::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
        }
    }
    fn u32(&mut self, v: u32) {
        match self.endian {
            Endian::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
        }
    }

    fn u32s(&mut self, vs: &[u32]) {
        for &v in vs {
            self.u32(v);
        }
    }
    fn u64(&mut self, v: u64) {
        match self.endian {
            Endian::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
        }
    }
    /// u16 length + bytes; longer strings are cut at 65535 bytes.
    fn str(&mut self, s: &str) {
        let bytes = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
        self.u16(bytes.len() as u16);
        self.buf.extend_from_slice(bytes);
    }
    fn members(&mut self, members: &[MemberDef]) {
        self.u16(members.len().min(u16::MAX as usize) as u16);
        for m in members.iter().take(u16::MAX as usize) {
            self.str(&m.name);
            self.str(&m.signature);
            self.u16(m.access);
        }
    }

    /// A value: its tag, then its payload (the layout in `jinsight/mod.rs`).
    fn value(&mut self, v: &crate::model::Value) {
        use crate::model::Value as V;
        match v {
            V::Byte(b) => {
                self.u8(b'B');
                self.u8(*b as u8);
            }
            V::Char(c) => {
                self.u8(b'C');
                self.u16(*c);
            }
            V::Short(s) => {
                self.u8(b'S');
                self.u16(*s as u16);
            }
            V::Int(i) => {
                self.u8(b'I');
                self.u32(*i as u32);
            }
            V::Long(l) => {
                self.u8(b'J');
                self.u64(*l as u64);
            }
            V::Float(f) => {
                self.u8(b'F');
                self.u32(*f);
            }
            V::Double(d) => {
                self.u8(b'D');
                self.u64(*d);
            }
            V::Boolean(z) => {
                self.u8(b'Z');
                self.u8(u8::from(*z));
            }
            V::Object(o) => {
                self.u8(b'L');
                self.u32(if *o == NO_OBJECT { NULL_VALUE } else { *o });
            }
            V::Unknown => {
                self.u8(b'L');
                self.u32(UNKNOWN_VALUE);
            }
            V::Text(t) => {
                let units: Vec<u16> = t.encode_utf16().take(u16::MAX as usize).collect();
                self.u8(b'9');
                self.u32(UNKNOWN_VALUE);
                self.u32(units.len() as u32);
                self.u32(0);
                self.u16(units.len() as u16);
                units.iter().for_each(|&u| self.u16(u));
            }
        }
    }

    /// CLASS_LOAD's body.
    fn class_load(&mut self, load: &ClassLoad) {
        self.u16(load.class);
        self.u16(load.size);
        self.str(&load.name);
        self.members(&load.methods);
        self.members(&load.fields);
        self.u16(load.superclass);
        self.u16(load.interfaces.len() as u16);
        for &i in &load.interfaces {
            self.u16(i);
        }
    }

    /// A value event's body: its method and object, then the values (a return value alone,
    /// the others after their count).
    fn values(
        &mut self,
        class: u16,
        object: u32,
        thread: u32,
        method: u16,
        kind: crate::model::ValuesKind,
        values: &[crate::model::Value],
    ) {
        let returned = kind == crate::model::ValuesKind::Return;
        self.u16(class);
        self.u32(object);
        self.u32(thread);
        self.u16(method);
        if !returned {
            self.u16(values.len().min(i16::MAX as usize) as u16);
        }
        let n = if returned { 1 } else { i16::MAX as usize };
        values.iter().take(n).for_each(|v| self.value(v));
    }

    /// A heap event's list of objects, ended by END_OF_LIST (`ended`) or counted before.
    fn objects(&mut self, to: &[u32], ended: bool) {
        to.iter().for_each(|&o| self.u32(o));
        if ended {
            self.u32(END_OF_LIST);
        }
    }

    fn put_event(&mut self, event: &Event) {
        self.u8(event.code());
        if let Some(ticks) = event.ticks() {
            self.u64(ticks);
        }
        match event {
            Event::ClassDefine {
                class,
                class_object,
                ..
            } => {
                self.u16(*class);
                self.u32(*class_object);
            }
            Event::ClassLoad(load) => self.class_load(load),
            Event::MethodEnter {
                thread,
                class,
                method,
                object,
                line,
                ..
            } => {
                self.u32(*thread);
                self.u16(*class);
                self.u16(*method);
                self.u32(*object);
                self.u16(*line);
            }
            Event::MethodLeave {
                overhead, thread, ..
            } => {
                self.u64(*overhead);
                self.u32(*thread);
            }
            Event::NativeMethodEnter {
                thread,
                class,
                method,
                object,
                ..
            } => {
                self.u32(*thread);
                self.u16(*class);
                self.u16(*method);
                self.u32(*object);
            }
            // The thread, then two words JinsightLive leaves 0.
            Event::NativeMethodLeave { thread, .. } => self.u32s(&[*thread, 0, 0]),
            Event::ObjectDefined { object, class, .. } => {
                self.u32(*object);
                self.u16(*class);
            }
            Event::ObjectCreated {
                object,
                class,
                thread,
                ..
            } => {
                self.u32(*object);
                self.u16(*class);
                self.u32(*thread);
            }
            Event::ObjectReclaimed { object, .. } => self.u32(*object),
            Event::ArrayDefined {
                array_type,
                object,
                size,
                ..
            } => {
                self.u8(*array_type);
                self.u32(*object);
                self.u32(*size);
            }
            Event::ArrayClassDefined {
                object,
                class,
                size,
                ..
            } => {
                self.u32(*object);
                self.u16(*class);
                self.u32(*size);
            }
            Event::ArrayCreated {
                is_array,
                object,
                size,
                thread,
                ..
            } => {
                self.u8(*is_array);
                self.u32(*object);
                self.u32(*size);
                self.u32(*thread);
            }
            Event::ThreadDefine {
                thread,
                object,
                class,
                name,
                ..
            } => {
                self.u32(*thread);
                self.u32(*object);
                self.u16(*class);
                self.str(name);
            }
            Event::ThreadStart { thread, .. } | Event::ThreadExit { thread, .. } => {
                self.u32(*thread)
            }
            Event::UserEvent { message, .. } => self.str(message),
            Event::GcStart { .. }
            | Event::GcStop { .. }
            | Event::BeginBurst { .. }
            | Event::EndBurst { .. } => {}
            Event::TraceEnd { first, second } => {
                self.u32(*first);
                self.u32(*second);
            }
            Event::MonitorContention {
                while_tracing,
                object,
                thread,
                nanoseconds,
            } => {
                self.u8(*while_tracing);
                self.u32(*object);
                self.u32(*thread);
                self.u64(*nanoseconds);
            }
            Event::Values {
                class,
                object,
                thread,
                method,
                values,
                kind,
                ..
            } => self.values(*class, *object, *thread, *method, *kind, values),
            Event::ObjectRefs { .. }
            | Event::ArrayRefs { .. }
            | Event::StaticRoot { .. }
            | Event::Root { .. }
            | Event::Generation { .. }
            | Event::EndOfReport { .. } => self.heap_part(event),
        }
    }

    /// The body of a heap dump's event (heap= walks).
    fn heap_part(&mut self, event: &Event) {
        match event {
            Event::ObjectRefs { object, to } => {
                self.u32(*object);
                self.objects(to, true);
            }
            Event::ArrayRefs { array, to } => {
                self.u32(*array);
                self.u32(to.len() as u32);
                self.objects(to, false);
            }
            Event::StaticRoot { class, to } => {
                self.u16(*class);
                self.objects(to, true);
            }
            Event::Root {
                code,
                thread,
                object,
            } => {
                if root_has_thread(*code) {
                    self.u32(*thread);
                }
                self.u32(*object);
            }
            Event::Generation { .. } => {}
            Event::EndOfReport { events } => self.u32(*events),
            _ => {}
        }
    }
}

/// The 45 header bytes, always little-endian.
pub fn header_bytes(h: &Header) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0] = MAGIC;
    b[1..5].copy_from_slice(&h.version.to_le_bytes());
    b[5..9].copy_from_slice(&h.platform.to_le_bytes());
    b[9..13].copy_from_slice(&h.number_of_events.to_le_bytes());
    b[13..17].copy_from_slice(&h.max_threads.to_le_bytes());
    b[17..21].copy_from_slice(&h.max_classes.to_le_bytes());
    b[21..25].copy_from_slice(&h.ticks_per_microsecond.to_le_bytes());
    b[25..33].copy_from_slice(&h.start_ticks.to_le_bytes());
    b[33..37].copy_from_slice(&h.vm_start_time.to_le_bytes());
    b[37..41].copy_from_slice(&h.connection_start_time.to_le_bytes());
    b[41..45].copy_from_slice(&h.overhead.to_le_bytes());
    b
}
