//! `jlive check`: a trace of any format verified in one pass: the model's rules
//! ([`crate::checker::Checker`]) over its events, each format's reader rejecting what its own
//! bytes get wrong, and what a format asks beyond that ([`check_reader`]: JinsightLive's
//! header counts and reserved classes, the closing message of TPTP).

pub use crate::checker::{CheckSummary, Checker};
use crate::codec::DecodeError;
use crate::format::Format;
use crate::read;
use std::io::Read;

/// Checks a whole file held in memory.
pub fn check(data: &[u8]) -> Result<CheckSummary, DecodeError> {
    check_reader(data)
}

/// Checks a file of any format, read a chunk at a time.
pub fn check_reader(reader: impl Read) -> Result<CheckSummary, DecodeError> {
    let (format, whole) = read::sniff(reader)?;
    if format == Format::Jinsight {
        return crate::jinsight::check::check_reader(whole);
    }
    let mut events = read::open(whole)?;
    let mut checker = Checker::new(events.format());
    while let Some((at, event)) = events.next_event()? {
        checker.event(at, &event)?;
    }
    events.end()?;
    checker.finish()
}
