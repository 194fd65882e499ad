//! JinsightLive decoder: reads the header and then one event at a time, each with its byte
//! offset. Any input is safe: a short or malformed file yields a [`DecodeError`] naming the
//! offset, never a panic.

use super::*;

pub use crate::codec::DecodeError;

/// Reads a JinsightLive file held in memory (or a piece of one: [`StreamDecoder`]).
pub struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    /// The file offset of `data[0]`: every offset reported is a file offset.
    base: usize,
    endian: Endian,
    header: Header,
    ended: bool,
}

pub(crate) fn error(offset: usize, message: impl Into<String>) -> DecodeError {
    DecodeError::at(offset, message)
}

impl<'a> Decoder<'a> {
    /// Parses the header; fails on a short file, a wrong magic byte, or an unknown platform.
    pub fn new(data: &'a [u8]) -> Result<Decoder<'a>, DecodeError> {
        if data.is_empty() {
            return Err(error(0, "empty file: no JinsightLive header"));
        }
        if data[0] != MAGIC {
            return Err(error(
                0,
                format!("first byte is 0x{:02x}, not 'b'", data[0]),
            ));
        }
        if data.len() < HEADER_LEN {
            return Err(error(
                data.len(),
                format!("header cut short: {} of {} bytes", data.len(), HEADER_LEN),
            ));
        }
        let le32 = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap_or([0; 4]));
        let header = Header {
            version: le32(1),
            platform: le32(5),
            number_of_events: le32(9),
            max_threads: le32(13),
            max_classes: le32(17),
            ticks_per_microsecond: le32(21),
            start_ticks: u64::from_le_bytes(data[25..33].try_into().unwrap_or([0; 8])),
            vm_start_time: le32(33),
            connection_start_time: le32(37),
            overhead: le32(41),
        };
        let endian = Endian::of_platform(header.platform)
            .ok_or_else(|| error(5, format!("unknown platform {}", header.platform)))?;
        Ok(Decoder {
            data,
            pos: HEADER_LEN,
            base: 0,
            endian,
            header,
            ended: false,
        })
    }

    /// Goes on in `data`, the bytes of the file from offset `base` on, where `from` stopped.
    fn resume<'b>(from: &Decoder<'_>, data: &'b [u8], base: usize) -> Decoder<'b> {
        Decoder {
            data,
            pos: 0,
            base,
            endian: from.endian,
            header: from.header.clone(),
            ended: from.ended,
        }
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Offset of the next event.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// True once TraceEnd has been read.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The next event with its offset; `Ok(None)` at the end of the data.
    pub fn next_event(&mut self) -> Result<Option<(usize, Event)>, DecodeError> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let start = self.pos;
        let code = self.data[start];
        self.pos += 1;
        let event = self.event(code).map_err(|mut e| {
            if e.offset == usize::MAX {
                e.offset = self.base + start;
            }
            e
        });
        match event {
            Ok(ev) => {
                if matches!(ev, Event::TraceEnd { .. }) {
                    self.ended = true;
                }
                Ok(Some((self.base + start, ev)))
            }
            Err(e) => {
                self.pos = self.data.len();
                Err(e)
            }
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(DecodeError {
                cut_short: true,
                ..error(
                    usize::MAX,
                    format!(
                        "event cut short: needs {} more bytes at offset {}, file has {}",
                        n,
                        self.base + self.pos,
                        self.data.len() - self.pos.min(self.data.len())
                    ),
                )
            }),
        }
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b: [u8; 2] = self.take(2)?.try_into().unwrap_or([0; 2]);
        Ok(match self.endian {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        })
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b: [u8; 4] = self.take(4)?.try_into().unwrap_or([0; 4]);
        Ok(match self.endian {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let b: [u8; 8] = self.take(8)?.try_into().unwrap_or([0; 8]);
        Ok(match self.endian {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        })
    }
    fn str(&mut self) -> Result<String, DecodeError> {
        let n = self.u16()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    fn members(&mut self) -> Result<Vec<MemberDef>, DecodeError> {
        let n = self.u16()? as usize;
        let mut v = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            v.push(MemberDef {
                name: self.str()?,
                signature: self.str()?,
                access: self.u16()?,
            });
        }
        Ok(v)
    }

    /// A value of ARG_VALUES or RETURN_VALUE: the tags jlive writes.
    fn value(&mut self) -> Result<crate::model::Value, DecodeError> {
        use crate::model::Value as V;
        Ok(match self.u8()? {
            b'B' => V::Byte(self.u8()? as i8),
            b'C' => V::Char(self.u16()?),
            b'S' => V::Short(self.u16()? as i16),
            b'I' => V::Int(self.u32()? as i32),
            b'J' => V::Long(self.u64()? as i64),
            b'F' => V::Float(self.u32()?),
            b'D' => V::Double(self.u64()?),
            b'Z' => match self.u8()? {
                z @ (0 | 1) => V::Boolean(z == 1),
                z => return Err(error(usize::MAX, format!("a boolean value of {}", z))),
            },
            b'L' => match self.u32()? {
                NULL_VALUE => V::Object(NO_OBJECT),
                UNKNOWN_VALUE => V::Unknown,
                o => V::Object(o),
            },
            b'9' => {
                let (_, count, offset) = (self.u32()?, self.u32()?, self.u32()?);
                let n = self.u16()?;
                let mut units = Vec::with_capacity(usize::from(n));
                for _ in 0..n {
                    units.push(self.u16()?);
                }
                let from = (offset as usize).min(units.len());
                let to = from.saturating_add(count as usize).min(units.len());
                V::Text(String::from_utf16_lossy(&units[from..to]))
            }
            tag => {
                return Err(error(
                    usize::MAX,
                    format!(
                        "value tag {:?} (jlive writes B C S I J F D Z L 9)",
                        char::from(tag)
                    ),
                ))
            }
        })
    }

    /// A list of object IDs up to END_OF_LIST.
    fn object_list(&mut self) -> Result<Vec<u32>, DecodeError> {
        let mut list = Vec::new();
        loop {
            match self.u32()? {
                END_OF_LIST => return Ok(list),
                o => list.push(o),
            }
        }
    }

    /// A heap dump's untimed events (references, roots, END_OF_REPORT); None for other codes.
    fn untimed_heap_event(&mut self, code: u8) -> Result<Option<Event>, DecodeError> {
        Ok(Some(match code {
            OBJECT_REFS => Event::ObjectRefs {
                object: self.u32()?,
                to: self.object_list()?,
            },
            ARRAY_REFS => {
                let array = self.u32()?;
                let n = self.u32()? as usize;
                let mut to = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    to.push(self.u32()?);
                }
                Event::ArrayRefs { array, to }
            }
            STATIC_ROOT => Event::StaticRoot {
                class: self.u16()?,
                to: self.object_list()?,
            },
            code if is_root(code) => Event::Root {
                code,
                thread: if root_has_thread(code) {
                    self.u32()?
                } else {
                    0
                },
                object: self.u32()?,
            },
            END_OF_REPORT => Event::EndOfReport {
                events: self.u32()?,
            },
            _ => return Ok(None),
        }))
    }

    /// MONITOR_CONTENTION's body (untimed).
    fn contention(&mut self) -> Result<Event, DecodeError> {
        let while_tracing = self.u8()?;
        if while_tracing > 1 {
            let message = format!("MONITOR_CONTENTION's flag is {}, not 0 or 1", while_tracing);
            return Err(error(usize::MAX, message));
        }
        Ok(Event::MonitorContention {
            while_tracing,
            object: self.u32()?,
            thread: self.u32()?,
            nanoseconds: self.u64()?,
        })
    }

    /// EXTENDED_EXTENSIVE_CLASS_LOAD's body.
    fn class_load(&mut self, ticks: u64) -> Result<Event, DecodeError> {
        let class = self.u16()?;
        let size = self.u16()?;
        let name = self.str()?;
        let methods = self.members()?;
        let fields = self.members()?;
        let superclass = self.u16()?;
        let n = self.u16()? as usize;
        let mut interfaces = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            interfaces.push(self.u16()?);
        }
        Ok(Event::ClassLoad(Box::new(ClassLoad {
            ticks,
            class,
            size,
            name,
            methods,
            fields,
            superclass,
            interfaces,
        })))
    }

    /// A value event's body (`code`: which values).
    fn values(&mut self, code: u8, ticks: u64) -> Result<Event, DecodeError> {
        let kind = values_kind(code).unwrap_or_default();
        let returned = code == RETURN_VALUE;
        let (class, object, thread, method) = (self.u16()?, self.u32()?, self.u32()?, self.u16()?);
        let n = if returned { 1 } else { self.u16()? as i16 };
        if n < 0 {
            return Err(error(usize::MAX, format!("{} values: a negative count", n)));
        }
        let mut values = Vec::with_capacity(n as usize);
        for _ in 0..n {
            values.push(self.value()?);
        }
        Ok(Event::Values {
            ticks,
            kind,
            class,
            object,
            thread,
            method,
            values,
        })
    }

    fn event(&mut self, code: u8) -> Result<Event, DecodeError> {
        if code == TRACE_END {
            return Ok(Event::TraceEnd {
                first: self.u32()?,
                second: self.u32()?,
            });
        }
        if code == MONITOR_CONTENTION {
            return self.contention();
        }
        if let Some(event) = self.untimed_heap_event(code)? {
            return Ok(event);
        }
        if code_name(code) == "UNKNOWN" {
            return Err(error(usize::MAX, format!("unknown event code {}", code)));
        }
        let ticks = self.u64()?;
        Ok(match code {
            CLASS_DEFINE => Event::ClassDefine {
                ticks,
                class: self.u16()?,
                class_object: self.u32()?,
            },
            EXTENDED_EXTENSIVE_CLASS_LOAD => self.class_load(ticks)?,
            WIDE_METHOD_ENTER => Event::MethodEnter {
                ticks,
                thread: self.u32()?,
                class: self.u16()?,
                method: self.u16()?,
                object: self.u32()?,
                line: self.u16()?,
            },
            METHOD_LEAVE => Event::MethodLeave {
                ticks,
                overhead: self.u64()?,
                thread: self.u32()?,
            },
            WIDE_NATIVE_METHOD_ENTER => Event::NativeMethodEnter {
                ticks,
                thread: self.u32()?,
                class: self.u16()?,
                method: self.u16()?,
                object: self.u32()?,
            },
            NATIVE_METHOD_LEAVE => {
                let thread = self.u32()?;
                self.u32()?;
                self.u32()?;
                Event::NativeMethodLeave { ticks, thread }
            }
            OBJECT_DEFINED => Event::ObjectDefined {
                ticks,
                object: self.u32()?,
                class: self.u16()?,
            },
            OBJECT_CREATED => Event::ObjectCreated {
                ticks,
                object: self.u32()?,
                class: self.u16()?,
                thread: self.u32()?,
            },
            OBJECT_RECLAIMED => Event::ObjectReclaimed {
                ticks,
                object: self.u32()?,
            },
            ARRAY_DEFINED => Event::ArrayDefined {
                ticks,
                array_type: self.u8()?,
                object: self.u32()?,
                size: self.u32()?,
            },
            ARRAY_CLASS_DEFINED => Event::ArrayClassDefined {
                ticks,
                object: self.u32()?,
                class: self.u16()?,
                size: self.u32()?,
            },
            ARRAY_CREATED => Event::ArrayCreated {
                ticks,
                is_array: self.u8()?,
                object: self.u32()?,
                size: self.u32()?,
                thread: self.u32()?,
            },
            THREAD_DEFINE => Event::ThreadDefine {
                ticks,
                thread: self.u32()?,
                object: self.u32()?,
                class: self.u16()?,
                name: self.str()?,
            },
            THREAD_START => Event::ThreadStart {
                ticks,
                thread: self.u32()?,
            },
            THREAD_EXIT => Event::ThreadExit {
                ticks,
                thread: self.u32()?,
            },
            GC_START => Event::GcStart { ticks },
            GC_STOP => Event::GcStop { ticks },
            USER_EVENT => Event::UserEvent {
                ticks,
                message: self.str()?,
            },
            GENERATION => Event::Generation { ticks },
            ARG_VALUES | RETURN_VALUE | FIELD_VALUES_AT_ENTER | FIELD_VALUES_AT_EXIT => {
                self.values(code, ticks)?
            }
            BEGIN_BURST => Event::BeginBurst { ticks },
            END_BURST => Event::EndBurst { ticks },
            _ => return Err(error(usize::MAX, format!("unknown event code {}", code))),
        })
    }
}

/// Reads a JinsightLive file from a reader one event at a time, holding one chunk of it (and
/// an event that is larger) instead of the whole file: what `jlive check`, `dump` and `stats`
/// read traces of many gigabytes with. Offsets and errors are the same as [`Decoder`]'s over
/// the whole file.
pub struct StreamDecoder<R> {
    reader: R,
    chunk: usize,
    /// Bytes read: the file from offset `base` on, decoded up to `at`.
    buf: Vec<u8>,
    base: usize,
    at: usize,
    eof: bool,
    /// The header and where the events stand (`ended`), in a decoder of no bytes.
    state: Decoder<'static>,
}

/// How much a [`StreamDecoder`] reads at a time.
pub const STREAM_CHUNK: usize = 8 << 20;

impl<R: std::io::Read> StreamDecoder<R> {
    /// Reads and parses the header.
    pub fn new(reader: R) -> Result<StreamDecoder<R>, DecodeError> {
        StreamDecoder::with_chunk(reader, STREAM_CHUNK)
    }

    /// Reads `chunk` bytes at a time (the tests make events straddle chunks with a small one).
    pub fn with_chunk(mut reader: R, chunk: usize) -> Result<StreamDecoder<R>, DecodeError> {
        let chunk = chunk.max(1);
        let mut buf = Vec::new();
        let mut eof = false;
        while buf.len() < HEADER_LEN && !eof {
            eof = read_chunk(&mut reader, &mut buf, chunk, 0)?;
        }
        let state = Decoder::resume(&Decoder::new(&buf)?, &[], HEADER_LEN);
        Ok(StreamDecoder {
            reader,
            chunk,
            buf,
            base: 0,
            at: HEADER_LEN,
            eof,
            state,
        })
    }

    pub fn header(&self) -> &Header {
        &self.state.header
    }

    /// The file offset of the next event (at the end: the file's length).
    pub fn offset(&self) -> usize {
        self.base + self.at
    }

    /// The next event with its file offset; `Ok(None)` at the end of the file.
    pub fn next_event(&mut self) -> Result<Option<(usize, Event)>, DecodeError> {
        loop {
            let mut d = Decoder::resume(&self.state, &self.buf[self.at..], self.base + self.at);
            match d.next_event() {
                Ok(Some(event)) => {
                    self.at += d.pos;
                    self.state.ended = d.ended;
                    return Ok(Some(event));
                }
                Ok(None) if self.eof => return Ok(None),
                Err(e) if !e.cut_short || self.eof => return Err(e),
                // The next event lies (partly) past what has been read.
                Ok(None) | Err(_) => self.fill()?,
            }
        }
    }

    /// Drops what is decoded and appends up to one chunk of the file to `buf`; at the end of
    /// the file sets `eof`.
    fn fill(&mut self) -> Result<(), DecodeError> {
        self.buf.drain(..self.at);
        self.base += self.at;
        self.at = 0;
        self.eof = read_chunk(&mut self.reader, &mut self.buf, self.chunk, self.base)?;
        Ok(())
    }
}

/// Appends up to `chunk` bytes of `reader` to `buf` (the file from offset `base` on); true at
/// the end of the file.
fn read_chunk(
    reader: &mut impl std::io::Read,
    buf: &mut Vec<u8>,
    chunk: usize,
    base: usize,
) -> Result<bool, DecodeError> {
    let had = buf.len();
    buf.resize(had + chunk, 0);
    let mut got = 0;
    let mut eof = false;
    while got < chunk {
        match reader.read(&mut buf[had + got..]) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.truncate(had + got);
                return Err(error(base + had + got, format!("cannot read: {}", e)));
            }
        }
    }
    buf.truncate(had + got);
    Ok(eof)
}

/// Every event of a file, with its offset. A file that ends inside its last event (SIGKILL
/// can stop a write(2) between pages) gives the events before it and that event's offset;
/// any other undecodable event is an error.
pub fn decode_whole_events(data: &[u8]) -> Result<DecodedEvents, DecodeError> {
    let mut d = Decoder::new(data)?;
    let mut events = Vec::new();
    loop {
        match d.next_event() {
            Ok(Some(e)) => events.push(e),
            Ok(None) => return Ok((d.header().clone(), events, None)),
            Err(e) if e.cut_short => return Ok((d.header().clone(), events, Some(e.offset))),
            Err(e) => return Err(e),
        }
    }
}

/// The header, the whole events with their offsets, and where a last event was cut short.
pub type DecodedEvents = (Header, Vec<(usize, Event)>, Option<usize>);
