//! The timed burst of `delay=` and `duration=`, kept by the control thread.

use crate::log;
use crate::session::Session;
use std::time::{Duration, Instant};

/// How long before a timed burst capture=bci instruments, when it waits for the first burst.
const INSTRUMENT_AHEAD: Duration = Duration::from_secs(2);

/// The timed burst of `delay=` and `duration=`.
pub(super) struct Timers {
    /// capture=bci with `instrument=burst`: when to instrument ahead of the timed burst, so
    /// that it opens on time (a big server takes a second or two).
    instrument_at: Option<Instant>,
    begin_at: Option<Instant>,
    end_at: Option<Instant>,
    duration: Option<Duration>,
}

impl Timers {
    pub(super) fn new(s: &Session) -> Timers {
        let (o, loaded) = (s.runtime().options(), s.runtime().loaded());
        let opened = s.recorder().state().opened();
        Timers {
            instrument_at: o.delay.map(|d| loaded + d.saturating_sub(INSTRUMENT_AHEAD)),
            begin_at: o.delay.map(|d| loaded + d),
            end_at: match (o.delay, o.duration, opened) {
                (None, Some(d), Some(at)) => Some(at + d),
                _ => None,
            },
            duration: o.duration,
        }
    }

    pub(super) fn next(&self) -> Option<Instant> {
        [self.instrument_at, self.begin_at, self.end_at]
            .into_iter()
            .flatten()
            .min()
    }

    pub(super) fn fire(&mut self, s: &'static Session) {
        let now = Instant::now();
        if self.instrument_at.is_some_and(|t| t <= now) {
            self.instrument_at = None;
            s.instrument_now(); // nothing unless capture=bci waits for it
        }
        if self.begin_at.is_some_and(|t| t <= now) {
            self.begin_at = None;
            match s.begin_burst(Some("timed"), None) {
                // From its opening: the first burst may have instrumented classes before.
                Ok(_) => {
                    let opened = s.recorder().state().opened().unwrap_or(now);
                    self.end_at = self.duration.map(|d| opened + d);
                }
                Err(e) => log::info(&format!("timed burst not begun: {}", e)),
            }
        }
        if self.end_at.is_some_and(|t| t <= now) {
            self.end_at = None;
            if let Err(e) = s.end_burst() {
                log::info(&format!("timed burst not ended: {}", e));
            }
        }
    }
}
