//! The writer thread: takes messages off the channel, hands batches to the session, returns
//! emptied record vectors to the pool, and flushes the file at least every 100 ms.
//!
//! A write error (disk full, file removed) is reported once through the log callback; the
//! loop then keeps draining the channel so that no JVM thread ever blocks on a dead writer.

use crate::record::{Message, Record};
use crate::session::{Session, SessionCounts};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::io::{Seek, Write};
use std::time::{Duration, Instant};

/// The longest time written events stay in memory.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// What the writer reports when the file is closed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub events: u64,
    pub bytes: u64,
    pub counts: SessionCounts,
    /// The first I/O error, if the file could not be written whole.
    pub error: Option<String>,
}

/// Receives from `messages` until a Close message (or until every sender is gone).
pub fn run<W: Write + Seek>(
    mut session: Session<W>,
    messages: Receiver<Message>,
    pool: Sender<Vec<Record>>,
    log: &dyn Fn(&str),
) -> Summary {
    let mut error: Option<String> = None;
    let mut last_flush = Instant::now();
    let mut dirty = false;
    loop {
        let wait = FLUSH_INTERVAL.saturating_sub(last_flush.elapsed());
        let message = match messages.recv_timeout(wait) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let result = match message {
            None => Ok(()),
            Some(Message::Batch(mut batch)) => {
                dirty = true;
                let r = if error.is_none() {
                    session.batch(&batch)
                } else {
                    Ok(())
                };
                batch.records.clear();
                let _ = pool.try_send(batch.records);
                r
            }
            Some(Message::BurstBegin { ticks }) => {
                dirty = true;
                guarded(&error, || session.begin_burst(ticks))
            }
            Some(Message::BurstEnd { ticks }) => {
                dirty = true;
                guarded(&error, || session.end_burst(ticks))
            }
            Some(Message::Flush) => {
                dirty = true;
                last_flush = Instant::now() - FLUSH_INTERVAL;
                Ok(())
            }
            Some(Message::Close {
                ticks_per_microsecond,
                done,
            }) => {
                let summary = close(session, error, ticks_per_microsecond, log);
                let _ = done.send(summary.clone());
                return summary;
            }
        };
        note_error(result, &mut error, log);
        for w in session.take_warnings() {
            log(&w);
        }
        if dirty && last_flush.elapsed() >= FLUSH_INTERVAL {
            if error.is_none() {
                note_error(session.flush(), &mut error, log);
            }
            dirty = false;
            last_flush = Instant::now();
        }
    }
    close(session, error, None, log)
}

fn guarded(error: &Option<String>, f: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
    if error.is_none() {
        f()
    } else {
        Ok(())
    }
}

fn note_error(result: std::io::Result<()>, error: &mut Option<String>, log: &dyn Fn(&str)) {
    if let Err(e) = result {
        if error.is_none() {
            let text = format!(
                "writing the trace failed: {}; further events are discarded",
                e
            );
            log(&text);
            *error = Some(e.to_string());
        }
    }
}

fn close<W: Write + Seek>(
    session: Session<W>,
    mut error: Option<String>,
    ticks_per_microsecond: Option<u32>,
    log: &dyn Fn(&str),
) -> Summary {
    let mut events = session.events();
    let mut bytes = session.bytes();
    let counts = session.counts().clone();
    if error.is_none() {
        match session.finish(ticks_per_microsecond) {
            Ok((_, e, b)) => (events, bytes) = (e, b),
            Err(e) => {
                log(&format!("closing the trace failed: {}", e));
                error = Some(e.to_string());
            }
        }
    }
    Summary {
        events,
        bytes,
        counts,
        error,
    }
}
