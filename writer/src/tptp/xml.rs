//! The TPTP XML form: messages as elements, one per line, under a `TRACE` root (layout in
//! `tptp/mod.rs`); and back. Times are written as seconds since 1970 with nine decimals, so a
//! file read back counts its ticks in nanoseconds. Characters XML 1.0 cannot hold (controls
//! other than tab, newline and carriage return) are written as U+FFFD.

use super::read::{Messages, Reader};
use super::sink::{Encode, EntryMessage, ExitMessage};
use super::*;
use crate::codec::{fail, DecodeError};
use crate::format::Format;
use crate::model::TraceInfo;
use std::fmt::Write as _;
use std::io::{self, BufRead, Read, Write};

pub const PROLOGUE: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";
pub const ROOT_START: &str = "<TRACE>";
pub const ROOT_END: &str = "</TRACE>";

/// Bytes gathered before they are handed to the file.
const CHUNK: usize = 1 << 20;

/// The longest line a reader takes.
const MAX_LINE: usize = 16 << 20;

/// Whether a file starts as a TPTP XML trace.
pub fn is_start(prefix: &[u8]) -> bool {
    let prefix = prefix.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(prefix);
    prefix.starts_with(b"<?xml") || prefix.starts_with(b"<TRACE")
}

/// Writes the XML form.
pub struct Encoder<W: Write> {
    out: W,
    buf: String,
    bytes: u64,
    info: TraceInfo,
}

impl<W: Write> Encoder<W> {
    /// Starts a file: the prologue and the root's start tag. `info` turns ticks into times.
    pub fn new(out: W, info: &TraceInfo) -> io::Result<Self> {
        let mut buf = String::with_capacity(CHUNK + 4096);
        buf.push_str(PROLOGUE);
        buf.push('\n');
        buf.push_str(ROOT_START);
        buf.push('\n');
        Ok(Encoder {
            out,
            buf,
            bytes: 0,
            info: info.clone(),
        })
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn drain(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.out.write_all(self.buf.as_bytes())?;
            self.bytes += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }
}

/// Appends `s` escaped for an attribute value.
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// Appends seconds since 1970 with nine decimals.
pub fn time_into(out: &mut String, ns: u64) {
    let _ = write!(out, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
}

/// Appends a message's element and a newline.
pub fn put_message(out: &mut String, m: &Message, info: &TraceInfo) {
    out.push('<');
    out.push_str(m.element.name);
    for i in m.element.xml_indices() {
        let (attr, value) = (&m.element.attrs[i], &m.values[i]);
        if attr.xml == Xml::No || (attr.xml == Xml::IfSet && value.is_default()) {
            continue;
        }
        out.push(' ');
        out.push_str(attr.name);
        out.push_str("=\"");
        match value {
            Value::Long(t) if attr.ty == Ty::Time => time_into(out, info.wall_ns(*t)),
            Value::Long(t) if attr.ty == Ty::Duration => {
                let rate = u128::from(info.ticks_per_microsecond.max(1));
                time_into(out, (u128::from(*t) * 1000 / rate) as u64)
            }
            Value::Long(v) => {
                let _ = write!(out, "{}", v);
            }
            Value::Int(v) => {
                let _ = write!(out, "{}", v);
            }
            Value::Byte(v) => {
                let _ = write!(out, "{}", v);
            }
            Value::Str(s) => escape_into(out, s),
        }
        out.push('"');
    }
    out.push_str("/>\n");
}

impl<W: Write> Encoder<W> {
    fn done_one(&mut self) -> io::Result<()> {
        if self.buf.len() >= CHUNK {
            self.drain()?;
        }
        Ok(())
    }
}

impl<W: Write> Encode for Encoder<W> {
    fn message(&mut self, m: &Message) -> io::Result<()> {
        put_message(&mut self.buf, m, &self.info);
        self.done_one()
    }

    /// The line the table gives (`put_message`), written without building the message.
    fn method_entry(&mut self, m: &EntryMessage) -> io::Result<()> {
        let b = &mut self.buf;
        let _ = write!(b, "<methodEntry threadIdRef=\"{}\" time=\"", m.thread);
        time_into(b, self.info.wall_ns(m.ticks));
        let _ = write!(b, "\" methodIdRef=\"{}\"", m.method);
        if m.object != 0 {
            let _ = write!(b, " objIdRef=\"{}\"", m.object);
        }
        let _ = writeln!(
            b,
            " classIdRef=\"{}\" ticket=\"{}\" stackDepth=\"{}\"/>",
            m.class, m.ticket, m.depth
        );
        self.done_one()
    }

    /// The line the table gives, written without building the message.
    fn method_exit(&mut self, m: &ExitMessage) -> io::Result<()> {
        let b = &mut self.buf;
        let _ = write!(
            b,
            "<methodExit threadIdRef=\"{}\" methodIdRef=\"{}\" classIdRef=\"{}\" ticket=\"{}\" time=\"",
            m.thread, m.method, m.class, m.ticket
        );
        time_into(b, self.info.wall_ns(m.ticks));
        b.push_str("\"/>\n");
        self.done_one()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.out.flush()
    }

    /// The root's end tag.
    fn finish(&mut self) -> io::Result<()> {
        self.buf.push_str(ROOT_END);
        self.buf.push('\n');
        self.flush()
    }

    fn bytes(&self) -> u64 {
        self.bytes + self.buf.len() as u64
    }
}

/// The text of an escaped attribute value.
pub fn unescape(s: &str) -> Result<Cow<'_, str>, String> {
    if !s.contains('&') {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find(';') else {
            return Err(format!("an '&' without its ';' in {:?}", s));
        };
        let entity = &rest[at + 1..at + end];
        let c = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = match entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => entity.strip_prefix('#').and_then(|d| d.parse().ok()),
                };
                // XML 1.0 has no character below 0x20 but tab, newline and return.
                code.filter(|&c| c >= 0x20 || matches!(c, 9 | 10 | 13))
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("unknown entity &{};", entity))?
            }
        };
        out.push(c);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

/// Nanoseconds of `seconds.fraction`.
pub fn parse_time(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    secs.checked_mul(1_000_000_000)?.checked_add(frac)
}

/// Parses one element line (without its newline); times become nanoseconds.
pub fn parse_element(line: &str) -> Result<Message<'static>, String> {
    let body = line
        .trim()
        .strip_prefix('<')
        .and_then(|l| l.strip_suffix("/>"))
        .ok_or_else(|| format!("not an element <name .../>: {:?}", truncate(line)))?;
    let name_end = body
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(body.len());
    let name = &body[..name_end];
    let element = by_name(name).ok_or_else(|| format!("unknown element <{}>", name))?;
    let mut m = Message::new(element);
    let mut seen = vec![false; element.attrs.len()];
    let mut rest = body[name_end..].trim_start();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once("=\"")
            .ok_or_else(|| format!("<{}>: an attribute without =\"value\"", name))?;
        let key = key.trim();
        let end = after
            .find('"')
            .ok_or_else(|| format!("<{}>: attribute {} has no closing quote", name, key))?;
        let raw = &after[..end];
        rest = after[end + 1..].trim_start();
        let i = element
            .index(key)
            .filter(|&i| element.attrs[i].xml != Xml::No)
            .ok_or_else(|| format!("<{}> has no attribute {}", name, key))?;
        if std::mem::replace(&mut seen[i], true) {
            return Err(format!("<{}>: attribute {} given twice", name, key));
        }
        let attr = &element.attrs[i];
        let bad = || {
            format!(
                "<{}>: {}=\"{}\" is not a {:?}",
                name,
                key,
                truncate(raw),
                attr.ty
            )
        };
        m.values[i] = match attr.ty {
            Ty::Time | Ty::Duration => Value::Long(parse_time(raw).ok_or_else(bad)?),
            Ty::Long => Value::Long(raw.parse().map_err(|_| bad())?),
            Ty::Int => Value::Int(raw.parse().map_err(|_| bad())?),
            Ty::Byte => Value::Byte(raw.parse().map_err(|_| bad())?),
            Ty::Str | Ty::Strs | Ty::Longs => Value::Str(Cow::Owned(unescape(raw)?.into_owned())),
        };
    }
    for (i, attr) in element.attrs.iter().enumerate() {
        if attr.xml == Xml::Always && !seen[i] {
            return Err(format!("<{}> lacks its attribute {}", name, attr.name));
        }
    }
    Ok(m)
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// The elements of a TPTP XML file, a line at a time, after its prologue and root tag.
pub struct XmlMessages<R> {
    input: io::BufReader<R>,
    /// The number of the last line read.
    line: usize,
    text: Vec<u8>,
    /// The line of `</TRACE>`, once read.
    root_end: Option<usize>,
}

/// Reads a TPTP XML file's prologue and root tag, and opens it as model events.
pub fn reader<R: Read>(input: R) -> Result<Reader<XmlMessages<R>>, DecodeError> {
    let mut m = XmlMessages {
        input: io::BufReader::with_capacity(1 << 16, input),
        line: 0,
        text: Vec::new(),
        root_end: None,
    };
    let first = m.next_text()?.unwrap_or_default().0;
    let first = first.trim_start_matches('\u{FEFF}');
    if first.trim().starts_with("<?xml") {
        let root = m.next_text()?.unwrap_or_default().0;
        if root.trim() != ROOT_START {
            let message = format!("{} expected after the prologue", ROOT_START);
            return fail(m.line, true, message);
        }
    } else if first.trim() != ROOT_START {
        return fail(
            m.line,
            true,
            format!("{} or {} expected", PROLOGUE, ROOT_START),
        );
    }
    // Times are read as nanoseconds since 1970.
    let info = TraceInfo {
        ticks_per_microsecond: 1000,
        ..TraceInfo::default()
    };
    Reader::new(m, info)
}

impl<R: Read> XmlMessages<R> {
    /// The next line's text, without its line end, and whether it had one (a line without
    /// one ends a file that was cut); None at the end of the file.
    fn next_text(&mut self) -> Result<Option<(String, bool)>, DecodeError> {
        self.text.clear();
        let got = (&mut self.input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.text)
            .map_err(|e| {
                DecodeError::at_position(self.line + 1, true, format!("cannot read: {}", e))
            })?;
        if got == 0 {
            return Ok(None);
        }
        self.line += 1;
        let whole = self.text.ends_with(b"\n");
        if !whole && got > MAX_LINE {
            return fail(
                self.line,
                true,
                format!("a line longer than {} bytes", MAX_LINE),
            );
        }
        let mut text = std::mem::take(&mut self.text);
        while matches!(text.last(), Some(b'\n' | b'\r')) {
            text.pop();
        }
        match String::from_utf8(text) {
            Ok(s) => Ok(Some((s, whole))),
            Err(_) if !whole => Err(self.cut()),
            Err(_) => fail(self.line, true, "not UTF-8"),
        }
    }

    fn cut(&self) -> DecodeError {
        DecodeError {
            cut_short: true,
            ..DecodeError::at_position(self.line, true, "the file ends inside this line")
        }
    }
}

impl<R: Read> Messages for XmlMessages<R> {
    const FORMAT: Format = Format::TptpXml;

    fn next_message(&mut self) -> Result<Option<(usize, Message<'static>)>, DecodeError> {
        loop {
            let Some((text, whole)) = self.next_text()? else {
                return Ok(None);
            };
            if text.trim().is_empty() {
                continue;
            }
            if self.root_end.is_some() {
                return fail(self.line, true, format!("data after {}", ROOT_END));
            }
            if text.trim() == ROOT_END {
                self.root_end = Some(self.line);
                continue;
            }
            return match parse_element(&text) {
                Ok(m) => Ok(Some((self.line, m))),
                Err(_) if !whole => Err(self.cut()),
                Err(e) => fail(self.line, true, e),
            };
        }
    }

    fn position(&self) -> usize {
        self.line
    }

    fn end(&self) -> Result<(), DecodeError> {
        match self.root_end {
            Some(_) => Ok(()),
            None => fail(
                self.line,
                true,
                format!("no {}: the file is truncated or was not closed", ROOT_END),
            ),
        }
    }

    /// A file read back counts nanoseconds since 1970: its origin is its start.
    fn complete(&self, info: &mut TraceInfo) {
        info.origin_ticks = info.start_ticks;
        info.origin_ns = info.start_ticks;
    }
}
