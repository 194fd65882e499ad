//! `jlive check` of a JinsightLive file: the model's rules ([`crate::checker::Checker`]) over
//! its events as [`super::read::Translator`] makes them, and what the format asks beyond
//! them: header version 8; each CLASS_DEFINE followed by its CLASS_LOAD; class 0 is
//! `java/lang/Object` (its own superclass) and class 1 `java/lang/Thread`, as the reader
//! hard-codes them; the file ends with TraceEnd (0xDEAD 0xDEAD, outside a burst, nothing
//! after it) and the header's count of events is the file's.

use super::read::Translator;
use super::*;
use crate::checker::{CheckSummary, Checker};
use crate::format::Format;
use std::collections::VecDeque;

fn fail<T>(offset: usize, message: String) -> Result<T, DecodeError> {
    Err(super::decode::error(offset, message))
}

/// Checks a whole file held in memory.
pub fn check(data: &[u8]) -> Result<CheckSummary, DecodeError> {
    check_reader(data)
}

/// Checks a whole file read from `reader`, a chunk at a time.
pub fn check_reader(reader: impl std::io::Read) -> Result<CheckSummary, DecodeError> {
    let mut decoder = StreamDecoder::new(reader)?;
    if decoder.header().version != VERSION {
        return fail(
            1,
            format!(
                "version {} (jlive reads version 8)",
                decoder.header().version
            ),
        );
    }
    let mut checker = Checker::new(Format::Jinsight);
    let mut translator = Translator::default();
    let mut model = VecDeque::new();
    let mut pending_class: Option<u16> = None;
    let mut end_offset = None;
    let mut events = 0u64;
    while let Some((offset, event)) = decoder.next_event()? {
        if let Some(end) = end_offset {
            return fail(offset, format!("data after TraceEnd (at offset {})", end));
        }
        if let Some(class) = pending_class.take() {
            if !matches!(&event, Event::ClassLoad(load) if load.class == class) {
                return fail(
                    offset,
                    format!(
                        "CLASS_DEFINE of class {} not followed by its CLASS_LOAD",
                        class
                    ),
                );
            }
        }
        match &event {
            Event::TraceEnd { first, second } => {
                if (*first, *second) != (TRACE_END_WORD, TRACE_END_WORD) {
                    return fail(
                        offset,
                        format!("TraceEnd words {:#x} {:#x}, not 0xDEAD", first, second),
                    );
                }
                end_offset = Some(offset);
                translator.finish(&mut model);
            }
            Event::ClassDefine { class, .. } => pending_class = Some(*class),
            Event::ClassLoad(load) => reserved_class(offset, load)?,
            _ => {}
        }
        // The header's count leaves the TraceEnd marker out.
        if end_offset != Some(offset) {
            events += 1;
        }
        translator.push(offset, event, &mut model)?;
        for (at, e) in model.drain(..) {
            checker.event(at, &e)?;
        }
        if let (Some(at), true) = (end_offset, checker.in_burst()) {
            return fail(at, "TraceEnd inside an open burst".into());
        }
    }
    if end_offset.is_none() {
        return fail(
            decoder.offset(),
            "no TraceEnd: the file is truncated or was not closed".into(),
        );
    }
    let header_events = decoder.header().number_of_events;
    if header_events != 0 && u64::from(header_events) != events {
        return fail(
            COUNTS_OFFSET as usize,
            format!(
                "header says {} events, the file holds {}",
                header_events, events
            ),
        );
    }
    let mut summary = checker.finish()?;
    summary.events = events;
    Ok(summary)
}

/// Class 0 is java/lang/Object, its own superclass, and class 1 java/lang/Thread.
fn reserved_class(offset: usize, load: &ClassLoad) -> Result<(), DecodeError> {
    let expected = match load.class {
        CLASS_OBJECT => "java/lang/Object",
        CLASS_THREAD => "java/lang/Thread",
        _ => return Ok(()),
    };
    if load.name != expected {
        return fail(
            offset,
            format!(
                "class {} is {}, the reader needs {}",
                load.class, load.name, expected
            ),
        );
    }
    if load.class == CLASS_OBJECT && load.superclass != CLASS_OBJECT {
        return fail(
            offset,
            "java/lang/Object must name itself (0) as superclass".into(),
        );
    }
    Ok(())
}
