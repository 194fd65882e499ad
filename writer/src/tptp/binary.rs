//! The TPTP binary form (TBF): messages into bytes and back (layout in `tptp/mod.rs`).

use super::read::{Messages, Reader};
use super::sink::{Encode, EntryMessage, ExitMessage};
use super::*;
use crate::codec::DecodeError;
use crate::format::Format;
use crate::model::TraceInfo;
use std::io::{self, Read, Write};

pub const MAGIC: &[u8; 4] = b"0TBF";
/// What readers also accept: the magic with a NUL for its first byte.
pub const MAGIC_NUL: &[u8; 4] = b"\0TBF";
pub const HEADER_LEN: usize = 12;
pub const VERSION: (u8, u8) = (1, 0);
const PLATFORM_64: u8 = 1;
const LITTLE_ENDIAN: u8 = 1;

/// The longest message a reader takes (a corrupt length must not make it allocate gigabytes).
pub const MAX_MESSAGE: usize = 64 << 20;

/// Bytes gathered before they are handed to the file (one write each).
const CHUNK: usize = 1 << 20;

/// Whether a file starts with the TBF magic.
pub fn is_magic(prefix: &[u8]) -> bool {
    prefix.len() >= 4 && (&prefix[..4] == MAGIC || &prefix[..4] == MAGIC_NUL)
}

/// Room past CHUNK: a method message always fits in it.
const SLACK: usize = 4096;

/// Writes the binary form.
pub struct Encoder<W: Write> {
    out: W,
    /// CHUNK + SLACK bytes, of which `len` are written; below CHUNK at each message's start.
    buf: Box<[u8]>,
    len: usize,
    /// A message of another kind is built here first.
    scratch: Vec<u8>,
    bytes: u64,
}

impl<W: Write> Encoder<W> {
    /// Starts a file: the header, then the system messages (encoding, tick frequency, and the
    /// ticks and wall-clock time of `info`'s origin).
    pub fn new(out: W, info: &TraceInfo) -> io::Result<Self> {
        let mut buf = Vec::with_capacity(SLACK);
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&[VERSION.0, VERSION.1, PLATFORM_64, LITTLE_ENDIAN]);
        buf.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        let system = |buf: &mut Vec<u8>, id: u16, body: &[u8]| {
            buf.extend_from_slice(&id.to_le_bytes());
            buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
            buf.extend_from_slice(body);
        };
        system(&mut buf, SYSTEM_ENCODING, b"UTF-8\0");
        let hz = u64::from(info.ticks_per_microsecond) * 1_000_000;
        system(&mut buf, SYSTEM_FREQUENCY, &hz.to_le_bytes());
        let mut origin = [0u8; 16];
        origin[..8].copy_from_slice(&info.origin_ticks.to_le_bytes());
        origin[8..].copy_from_slice(&info.origin_ns.to_le_bytes());
        system(&mut buf, SYSTEM_ORIGIN, &origin);
        let mut e = Encoder::with_output(out);
        e.append(&buf)?;
        Ok(e)
    }

    fn with_output(out: W) -> Self {
        Encoder {
            out,
            buf: vec![0; CHUNK + SLACK].into_boxed_slice(),
            len: 0,
            scratch: Vec::new(),
            bytes: 0,
        }
    }

    /// Appends bytes of any length.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.len + bytes.len() > self.buf.len() {
            self.drain()?;
            if bytes.len() > self.buf.len() {
                self.out.write_all(bytes)?;
                self.bytes += bytes.len() as u64;
                return Ok(());
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
        self.done_one()
    }

    /// The next `N` bytes of the buffer, to be filled whole (N is at most SLACK).
    #[inline(always)]
    fn next<const N: usize>(&mut self) -> &mut [u8; N] {
        const { assert!(N <= SLACK) };
        let at = self.len;
        self.len += N;
        // In bounds: len is below CHUNK at a message's start (done_one).
        (&mut self.buf[at..at + N]).try_into().unwrap()
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    #[inline(always)]
    fn done_one(&mut self) -> io::Result<()> {
        if self.len >= CHUNK {
            self.drain()?;
        }
        Ok(())
    }

    fn drain(&mut self) -> io::Result<()> {
        if self.len > 0 {
            // Emptied even when the write fails: the buffer's invariant holds, and no byte is
            // written twice.
            let len = std::mem::take(&mut self.len);
            self.out.write_all(&self.buf[..len])?;
            self.bytes += len as u64;
        }
        Ok(())
    }
}

/// Appends a message's bytes to `buf`.
pub fn put_message(buf: &mut Vec<u8>, m: &Message) {
    buf.extend_from_slice(&m.element.id.to_le_bytes());
    let length_at = buf.len();
    buf.extend_from_slice(&[0; 4]);
    for (attr, v) in m.element.attrs.iter().zip(&m.values) {
        match v {
            Value::Long(x) => buf.extend_from_slice(&x.to_le_bytes()),
            Value::Int(x) => buf.extend_from_slice(&x.to_le_bytes()),
            Value::Byte(x) => buf.push(*x),
            Value::Str(s) if attr.ty == Ty::Strs => {
                for item in s.split(' ').filter(|i| !i.is_empty()) {
                    buf.extend(item.bytes().filter(|&b| b != 0));
                    buf.push(0);
                }
            }
            Value::Str(s) if attr.ty == Ty::Longs => {
                for item in s.split(' ').filter(|i| !i.is_empty()) {
                    let x: u64 = item.parse().unwrap_or(0);
                    buf.extend_from_slice(&x.to_le_bytes());
                }
            }
            Value::Str(s) => {
                buf.extend(s.bytes().filter(|&b| b != 0));
                buf.push(0);
            }
        }
    }
    let length = (buf.len() - length_at - 4) as u32;
    buf[length_at..length_at + 4].copy_from_slice(&length.to_le_bytes());
}

impl<W: Write> Encode for Encoder<W> {
    fn message(&mut self, m: &Message) -> io::Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        put_message(&mut scratch, m);
        let appended = self.append(&scratch);
        self.scratch = scratch;
        appended
    }

    /// Its 84 bytes laid out in place: the table's attributes in order, unused ones 0 or "".
    #[inline(always)]
    fn method_entry(&mut self, m: &EntryMessage) -> io::Result<()> {
        let b = self.next::<84>();
        b[0..2].copy_from_slice(&METHOD_ENTRY.id.to_le_bytes());
        b[2..6].copy_from_slice(&78u32.to_le_bytes());
        b[6..14].fill(0); // transientThreadIdRef
        b[14..22].copy_from_slice(&m.thread.to_le_bytes());
        b[22..30].copy_from_slice(&m.ticks.to_le_bytes());
        b[30..38].copy_from_slice(&m.method.to_le_bytes());
        b[38..42].copy_from_slice(&m.ticket.to_le_bytes());
        b[42..50].copy_from_slice(&m.object.to_le_bytes());
        b[50..58].copy_from_slice(&m.class.to_le_bytes());
        b[58..74].fill(0); // threadCpuTime, sequenceCounter
        b[74..82].copy_from_slice(&m.depth.to_le_bytes());
        b[82..84].fill(0); // collationValue, traceIdRef ("")
        self.done_one()
    }

    /// Its 85 bytes laid out in place.
    #[inline(always)]
    fn method_exit(&mut self, m: &ExitMessage) -> io::Result<()> {
        let b = self.next::<85>();
        b[0..2].copy_from_slice(&METHOD_EXIT.id.to_le_bytes());
        b[2..6].copy_from_slice(&79u32.to_le_bytes());
        b[6..14].fill(0); // transientThreadIdRef
        b[14..22].copy_from_slice(&m.thread.to_le_bytes());
        b[22..30].copy_from_slice(&m.ticks.to_le_bytes());
        b[30..34].copy_from_slice(&m.ticket.to_le_bytes());
        b[34..42].fill(0); // threadCpuTime
        b[42..50].copy_from_slice(&m.method.to_le_bytes());
        b[50..74].fill(0); // transientObjIdRef, objIdRef, transientClassIdRef
        b[74..82].copy_from_slice(&m.class.to_le_bytes());
        b[82..85].fill(0); // sequenceCounter, collationValue, traceIdRef ("")
        self.done_one()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.out.flush()
    }

    fn finish(&mut self) -> io::Result<()> {
        self.flush()
    }

    fn bytes(&self) -> u64 {
        self.bytes + self.len as u64
    }
}

/// The NUL-terminated UTF-8 string at `*at` in `body`; `*at` moves past its NUL.
fn c_string<'b>(
    body: &'b [u8],
    at: &mut usize,
    element: &Element,
    attr: &Attr,
) -> Result<&'b str, String> {
    let rest = &body[(*at).min(body.len())..];
    let Some(len) = rest.iter().position(|&b| b == 0) else {
        return Err(format!(
            "{}: attribute {} has no NUL",
            element.name, attr.name
        ));
    };
    let s = std::str::from_utf8(&rest[..len])
        .map_err(|_| format!("{}: attribute {} is not UTF-8", element.name, attr.name))?;
    *at += len + 1;
    Ok(s)
}

/// Parses a message's attributes from `body` (its bytes after id and length).
pub fn parse_message(element: &'static Element, body: &[u8]) -> Result<Message<'static>, String> {
    let mut at = 0;
    let mut values = Vec::with_capacity(element.attrs.len());
    // The length of the lists that follow a stackDepth.
    let mut depth = 0usize;
    for attr in element.attrs {
        let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
            let end = *at + n;
            let bytes = body.get(*at..end).ok_or_else(|| {
                format!("{} ends inside its attribute {}", element.name, attr.name)
            })?;
            *at = end;
            Ok(bytes)
        };
        values.push(match attr.ty {
            Ty::Long | Ty::Time | Ty::Duration => Value::Long(u64::from_le_bytes(
                take(&mut at, 8)?.try_into().unwrap_or([0; 8]),
            )),
            Ty::Int => {
                let v = u32::from_le_bytes(take(&mut at, 4)?.try_into().unwrap_or([0; 4]));
                if attr.name == "stackDepth" {
                    depth = v as usize;
                    // Each frame takes at least a NUL and 8 bytes: a bigger count is corrupt.
                    if depth.saturating_mul(9) > body.len().saturating_sub(at) {
                        return Err(format!(
                            "{}: a stack of {} frames does not fit in the message",
                            element.name, depth
                        ));
                    }
                }
                Value::Int(v)
            }
            Ty::Longs => {
                let need = depth.checked_mul(8).filter(|&n| n <= body.len());
                let need = need.ok_or_else(|| {
                    format!(
                        "{}: a stack of {} frames is longer than the message",
                        element.name, depth
                    )
                })?;
                let bytes = take(&mut at, need)?;
                let items: Vec<String> = bytes
                    .chunks(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])).to_string())
                    .collect();
                Value::Str(Cow::Owned(items.join(" ")))
            }
            Ty::Strs => {
                let mut items = Vec::with_capacity(depth);
                for _ in 0..depth {
                    let s = c_string(body, &mut at, element, attr)?;
                    if s.contains(' ') {
                        return Err(format!(
                            "{}: a stack method {:?} has a space",
                            element.name, s
                        ));
                    }
                    items.push(s.to_string());
                }
                Value::Str(Cow::Owned(items.join(" ")))
            }
            Ty::Byte => Value::Byte(take(&mut at, 1)?[0]),
            Ty::Str => Value::Str(Cow::Owned(
                c_string(body, &mut at, element, attr)?.to_string(),
            )),
        });
    }
    if at != body.len() {
        return Err(format!(
            "{} says {} bytes of attributes, they take {}",
            element.name,
            body.len(),
            at
        ));
    }
    Ok(Message { element, values })
}

/// The messages of a TPTP binary file, after its header and system messages.
pub struct BinaryMessages<R> {
    input: io::BufReader<R>,
    /// The offset of the next message.
    offset: usize,
    /// The first data message, read while taking the system messages.
    first: Option<(usize, Message<'static>)>,
}

/// Reads a TPTP binary file's header and system messages, and opens it as model events.
pub fn reader<R: Read>(input: R) -> Result<Reader<BinaryMessages<R>>, DecodeError> {
    let mut m = BinaryMessages {
        input: io::BufReader::with_capacity(1 << 20, input),
        offset: 0,
        first: None,
    };
    let mut header = [0u8; HEADER_LEN];
    let got = crate::codec::read_up_to(&mut m.input, &mut header)
        .map_err(|e| DecodeError::at(0, format!("cannot read: {}", e)))?;
    if got == 0 {
        return Err(DecodeError::at(0, "empty file: no TPTP header"));
    }
    if !is_magic(&header[..got]) {
        return Err(DecodeError::at(0, "no TPTP magic 0TBF"));
    }
    if got < HEADER_LEN {
        let message = format!("header cut short: {} of {} bytes", got, HEADER_LEN);
        return Err(DecodeError {
            cut_short: true,
            ..DecodeError::at(got, message)
        });
    }
    if header[4] != VERSION.0 {
        let message = format!("version {}.{} (jlive reads 1.x)", header[4], header[5]);
        return Err(DecodeError::at(4, message));
    }
    if header[7] != LITTLE_ENDIAN {
        let message = format!(
            "endianness {}: jlive reads little-endian (1) files",
            header[7]
        );
        return Err(DecodeError::at(7, message));
    }
    let data = u32::from_le_bytes(header[8..12].try_into().unwrap_or([0; 4])) as usize;
    if !(HEADER_LEN..=MAX_MESSAGE).contains(&data) {
        let message = format!(
            "offset to data {} (the header is {} bytes)",
            data, HEADER_LEN
        );
        return Err(DecodeError::at(8, message));
    }
    // Whatever lies between the header and the data is passed over, not kept.
    let gap = (data - HEADER_LEN) as u64;
    let skipped = io::copy(&mut (&mut m.input).take(gap), &mut io::sink())
        .map_err(|e| DecodeError::at(HEADER_LEN, format!("cannot read: {}", e)))?;
    m.offset = HEADER_LEN + skipped as usize;
    if skipped < gap {
        return Err(m.cut(HEADER_LEN, "the bytes before the data"));
    }
    let mut info = TraceInfo::default();
    while let Some((at, id, body)) = m.raw()? {
        if id < FIRST_DATA_ID {
            system(at, id, &body, &mut info)?;
        } else {
            m.first = Some((at, message(at, id, &body)?));
            break;
        }
    }
    if info.ticks_per_microsecond == 0 {
        return Err(DecodeError::at(
            HEADER_LEN,
            "no frequency message (system message 2)",
        ));
    }
    Reader::new(m, info)
}

impl<R: Read> BinaryMessages<R> {
    fn cut(&self, at: usize, what: &str) -> DecodeError {
        DecodeError {
            cut_short: true,
            ..DecodeError::at(at, format!("{} cut short at offset {}", what, self.offset))
        }
    }

    /// The next message's offset, ID and attribute bytes; None at the end of the file.
    fn raw(&mut self) -> Result<Option<(usize, u16, Vec<u8>)>, DecodeError> {
        let at = self.offset;
        let read_err = |e: io::Error| DecodeError::at(at, format!("cannot read: {}", e));
        let mut head = [0u8; 6];
        let got = crate::codec::read_up_to(&mut self.input, &mut head).map_err(read_err)?;
        self.offset += got;
        if got == 0 {
            return Ok(None);
        }
        if got < head.len() {
            return Err(self.cut(at, "message"));
        }
        let id = u16::from_le_bytes([head[0], head[1]]);
        let len = u32::from_le_bytes(head[2..6].try_into().unwrap_or([0; 4])) as usize;
        if len > MAX_MESSAGE {
            let message = format!("message {} says it is {} bytes long", id, len);
            return Err(DecodeError::at(at, message));
        }
        let mut body = vec![0; len];
        let got = crate::codec::read_up_to(&mut self.input, &mut body).map_err(read_err)?;
        self.offset += got;
        if got < len {
            return Err(self.cut(at, "message"));
        }
        Ok(Some((at, id, body)))
    }
}

/// Takes what system message `id` says into `info`.
fn system(at: usize, id: u16, body: &[u8], info: &mut TraceInfo) -> Result<(), DecodeError> {
    let long = |i: usize| {
        body.get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    match id {
        SYSTEM_ENCODING => {
            let name = body.split(|&b| b == 0).next().unwrap_or_default();
            if !matches!(name, b"UTF-8" | b"UTF8" | b"utf-8" | b"utf8") {
                let message = format!(
                    "encoding {:?}: jlive reads UTF-8",
                    String::from_utf8_lossy(name)
                );
                return Err(DecodeError::at(at, message));
            }
        }
        SYSTEM_FREQUENCY => {
            let hz =
                long(0).ok_or_else(|| DecodeError::at(at, "frequency message without its Long"))?;
            let rate = hz / 1_000_000;
            if rate == 0 || rate > u64::from(u32::MAX) {
                return Err(DecodeError::at(at, format!("tick frequency {} Hz", hz)));
            }
            info.ticks_per_microsecond = rate as u32;
        }
        SYSTEM_ORIGIN => {
            let (Some(ticks), Some(ns)) = (long(0), long(8)) else {
                return Err(DecodeError::at(at, "origin message without its two Longs"));
            };
            info.origin_ticks = ticks;
            info.origin_ns = ns;
        }
        // Another system message says nothing jlive needs.
        _ => {}
    }
    Ok(())
}

/// The message `id` of `body`, read at `at`.
fn message(at: usize, id: u16, body: &[u8]) -> Result<Message<'static>, DecodeError> {
    let Some(element) = by_id(id) else {
        return Err(DecodeError::at(at, format!("unknown message id {}", id)));
    };
    parse_message(element, body).map_err(|e| DecodeError::at(at, e))
}

impl<R: Read> Messages for BinaryMessages<R> {
    const FORMAT: Format = Format::Tptp;

    fn next_message(&mut self) -> Result<Option<(usize, Message<'static>)>, DecodeError> {
        if let Some(first) = self.first.take() {
            return Ok(Some(first));
        }
        match self.raw()? {
            Some((at, id, body)) => Ok(Some((at, message(at, id, &body)?))),
            None => Ok(None),
        }
    }

    fn position(&self) -> usize {
        self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast paths lay out the bytes the table gives for the same attributes.
    #[test]
    fn entries_and_exits_in_place_are_the_tables_messages() {
        let entry = EntryMessage {
            thread: 3,
            ticks: 0x0102_0304_0506_0708,
            method: 77,
            ticket: 9,
            object: 12,
            class: 5,
            depth: 4,
        };
        let exit = ExitMessage {
            thread: 3,
            ticks: u64::MAX - 1,
            ticket: 9,
            method: 77,
            class: 5,
        };
        // Twice over a buffer left dirty: every byte is written, zeros included.
        let mut fast = Encoder::with_output(Vec::new());
        fast.buf.fill(0xA5);
        for _ in 0..2 {
            fast.method_entry(&entry).unwrap();
            fast.method_exit(&exit).unwrap();
        }
        let mut table = Vec::new();
        put_message(&mut table, &entry.message());
        put_message(&mut table, &exit.message());
        assert_eq!(fast.buf[..fast.len / 2], table);
        assert_eq!(fast.buf[fast.len / 2..fast.len], table);
        assert_eq!(
            parse_message(&METHOD_ENTRY, &table[6..84]).unwrap(),
            entry.message()
        );
    }
}
