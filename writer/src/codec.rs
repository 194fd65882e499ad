//! What every format's reader is made of: the error a decoder gives ([`DecodeError`]), the
//! one interface every reader offers ([`EventReader`]), and the few helpers they share. It
//! names no format: `read::open` (above the formats) finds a file's format and its reader.

use crate::format::Format;
use crate::model::{Event, TraceInfo};
use std::fmt;
use std::io::Read;

/// Why a file could not be read, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset of the event (or line) at fault.
    pub offset: usize,
    /// Its line, in a text format.
    pub line: Option<usize>,
    pub message: String,
    /// The file ends inside the event at `offset` (a JVM killed while the writer wrote).
    pub cut_short: bool,
}

impl DecodeError {
    pub fn at(offset: usize, message: impl Into<String>) -> DecodeError {
        DecodeError {
            offset,
            line: None,
            message: message.into(),
            cut_short: false,
        }
    }

    /// An error at a position: a byte offset, or a line of a text format (`text`).
    pub fn at_position(at: usize, text: bool, message: impl Into<String>) -> DecodeError {
        DecodeError {
            line: text.then_some(at),
            ..DecodeError::at(at, message)
        }
    }

    /// "offset N", or "line N" in a text format.
    pub fn position(&self) -> String {
        match self.line {
            Some(line) => format!("line {}", line),
            None => format!("offset {}", self.offset),
        }
    }
}

/// An [`Err`] at a position ([`DecodeError::at_position`]).
pub fn fail<T>(at: usize, text: bool, message: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError::at_position(at, text, message))
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.position(), self.message)
    }
}

impl std::error::Error for DecodeError {}

/// A trace file read one model event at a time.
pub trait EventReader {
    fn format(&self) -> Format;
    /// What the file says about the run.
    fn info(&self) -> &TraceInfo;
    /// The next event with its position (a byte offset; a line number in a text format),
    /// `Ok(None)` at the end of the file.
    fn next_event(&mut self) -> Result<Option<(usize, Event)>, DecodeError>;
    /// After the last event: whether the file was finished, as its format ends a file
    /// (`jlive check` asks; a JVM killed while tracing leaves a file without its end).
    fn end(&mut self) -> Result<(), DecodeError> {
        Ok(())
    }
    /// What the file's header says beyond [`EventReader::info`], for `jlive dump`.
    fn header(&self) -> String {
        String::new()
    }
}

/// Reads until `buf` is full or the reader ends; returns how much it read.
pub fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
