//! The writer thread: takes messages off the channel, hands batches to the resolver (which
//! hands model events to the format's sink), returns emptied record vectors to the pool, rolls
//! to the next file when asked, and flushes the file at least every 100 ms. What it has
//! written is published in [`WriterStats`] for `status`.
//!
//! A write error (disk full, file removed) is reported once through the log callback, and
//! the `stop` callback asks the agent to stop recording (a roll to a new file may resume);
//! the loop then keeps draining the channel so that no JVM thread ever blocks on a dead
//! writer. After a panic of the writer's own, [`drain`] does the same.

use crate::model::Sink;
use crate::record::Summary;
use crate::record::{Message, Slot};
use crate::resolve::Resolver;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest time written events stay in memory.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// While messages keep coming, the writer polls the channel at this interval instead of
/// blocking on it: a blocked receiver makes every send wake it (a futex call and a context
/// switch on the sending JVM thread, per batch), a polling one costs the senders nothing.
const POLL: Duration = Duration::from_micros(200);

/// How long after the last message the writer keeps polling before it blocks again (an idle
/// writer must not wake 5,000 times a second).
const BUSY_SPELL: Duration = Duration::from_millis(10);

/// Live figures of the writer, read by the control socket's `status`.
#[derive(Default)]
pub struct WriterStats {
    /// Events and bytes written, all files together.
    pub events: AtomicU64,
    pub bytes: AtomicU64,
    /// Bursts begun, all files together.
    pub bursts: AtomicU64,
    /// Trigger exits that end a burst (`Counts::trigger_exits`), all files together.
    pub trigger_exits: AtomicU64,
    /// Thread IDs defined in the current file.
    pub threads: AtomicU64,
    /// Files finished by `roll`.
    pub rolled: AtomicU64,
    /// Objects the current file has defined and not seen freed (what the writer keeps of
    /// them), and the threads whose state it keeps.
    pub objects: AtomicU64,
    pub thread_states: AtomicU64,
    pub file: Mutex<String>,
    pub error: Mutex<Option<String>>,
}

impl WriterStats {
    pub fn file(&self) -> String {
        self.file.lock().map(|f| f.clone()).unwrap_or_default()
    }
    pub fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }
}

/// Opens the resolver of the next file (`roll`).
pub type Reopen<'a, S> = dyn FnMut(&str) -> std::io::Result<Resolver<S>> + 'a;

struct Loop<'a, S: Sink> {
    session: Option<Resolver<S>>,
    error: Option<String>,
    log: &'a dyn Fn(&str),
    stop: &'a dyn Fn(),
    stats: &'a WriterStats,
    /// Events and bytes of the files already finished.
    done_events: u64,
    done_bytes: u64,
    done_bursts: u64,
    done_trigger_exits: u64,
}

/// Receives from `messages` until a Close message (or until every sender is gone).
pub fn run<S: Sink>(
    session: Resolver<S>,
    messages: Receiver<Message>,
    pool: Sender<Vec<Slot>>,
    log: &dyn Fn(&str),
    stop: &dyn Fn(),
    stats: &WriterStats,
    reopen: &mut Reopen<'_, S>,
) -> Summary {
    let fault = injected_fault();
    let mut batches = 0u64;
    let mut l = Loop {
        session: Some(session),
        error: None,
        log,
        stop,
        stats,
        done_events: 0,
        done_bytes: 0,
        done_bursts: 0,
        done_trigger_exits: 0,
    };
    let mut last_flush = Instant::now();
    let mut last_message = Instant::now();
    let mut dirty = false;
    loop {
        // With nothing unflushed there is no deadline: wait for the next message (a whole
        // interval at a time, so that a lost sender is still noticed).
        let wait = if dirty {
            FLUSH_INTERVAL.saturating_sub(last_flush.elapsed())
        } else {
            FLUSH_INTERVAL
        };
        let received = match messages.try_recv() {
            Ok(m) => Ok(m),
            Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) if last_message.elapsed() < BUSY_SPELL => {
                std::thread::sleep(POLL.min(wait));
                Err(RecvTimeoutError::Timeout)
            }
            Err(TryRecvError::Empty) => messages.recv_timeout(wait),
        };
        if received.is_ok() {
            last_message = Instant::now();
        }
        match received {
            Ok(Message::Batch(mut batch)) => {
                batches += 1;
                if fault == Some(batches) {
                    panic!("fault injected by JLIVE_FAULT at batch {}", batches);
                }
                dirty = true;
                match (&l.error, l.session.as_mut()) {
                    // Unwritable: what is kept of threads that end is still let go.
                    (Some(_), Some(s)) => s.follow(&batch),
                    _ => l.apply(|s| s.batch(&mut batch)),
                }
                batch.slots.clear();
                let _ = pool.try_send(batch.slots);
            }
            Ok(Message::BurstBegin { ticks, scope }) => {
                dirty = true;
                let scope = scope.map(|s| *s).unwrap_or_default();
                l.apply(|s| s.begin_scoped(ticks, scope));
            }
            Ok(Message::BurstEnd { ticks }) => {
                dirty = true;
                l.apply(|s| s.end_burst(ticks));
            }
            Ok(Message::UserEvent { ticks, text }) => {
                dirty = true;
                l.apply(|s| s.user_event(ticks, &text).map(|_| ()));
            }
            Ok(Message::Heap(dump)) => {
                dirty = true;
                l.apply(|s| s.heap(&dump));
            }
            Ok(Message::Lifecycle { ticks, death }) => {
                dirty = true;
                l.apply(|s| s.lifecycle(ticks, death));
            }
            Ok(Message::Flush { done }) => {
                l.apply(|s| s.flush());
                dirty = false;
                last_flush = Instant::now();
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
            Ok(Message::Roll {
                path,
                live,
                ticks,
                ticks_per_microsecond,
            }) => {
                match live {
                    // The client waits for the header: it goes at once.
                    Some(socket) => {
                        crate::gzip::streaming(socket, || {
                            l.roll(&path, ticks, ticks_per_microsecond, reopen)
                        });
                        l.apply(|s| s.flush());
                    }
                    None => l.roll(&path, ticks, ticks_per_microsecond, reopen),
                }
                dirty = false;
            }
            Ok(Message::Close {
                ticks_per_microsecond,
                done,
            }) => {
                let summary = l.close(ticks_per_microsecond);
                let _ = done.send(summary.clone());
                return summary;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if dirty && last_flush.elapsed() >= FLUSH_INTERVAL {
            l.apply(|s| s.flush());
            dirty = false;
            last_flush = Instant::now();
        }
        l.publish();
    }
    l.close(None)
}

/// `JLIVE_FAULT=writer-panic:N`: the writer panics at its Nth batch (for the test that a
/// writer's panic stops recording and leaves the JVM alone).
fn injected_fault() -> Option<u64> {
    std::env::var("JLIVE_FAULT")
        .ok()?
        .strip_prefix("writer-panic:")?
        .parse()
        .ok()
}

/// What is left of a writer that panicked: receives until Close (answered with `error`) or
/// until every sender is gone, returning emptied vectors to the pool, so that no JVM thread
/// waits on it.
pub fn drain(messages: &Receiver<Message>, pool: &Sender<Vec<Slot>>, error: &str) {
    while let Ok(message) = messages.recv() {
        match message {
            Message::Batch(mut batch) => {
                batch.slots.clear();
                let _ = pool.try_send(batch.slots);
            }
            Message::Flush { done: Some(done) } => {
                let _ = done.send(());
            }
            Message::Close { done, .. } => {
                let _ = done.send(Summary {
                    error: Some(error.to_string()),
                    ..Summary::default()
                });
                return;
            }
            _ => {}
        }
    }
}

impl<S: Sink> Loop<'_, S> {
    /// Runs `f` on the resolver unless the file has failed; notes the first error.
    fn apply(&mut self, f: impl FnOnce(&mut Resolver<S>) -> std::io::Result<()>) {
        if self.error.is_some() {
            return;
        }
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let result = f(session);
        for w in session.take_warnings() {
            (self.log)(&w);
        }
        if let Err(e) = result {
            self.fail(
                &format!(
                    "writing the trace failed: {}; recording stopped (the file holds the events before)",
                    e
                ),
                e,
            );
        }
    }

    fn fail(&mut self, text: &str, e: std::io::Error) {
        if self.error.is_none() {
            (self.log)(text);
            self.error = Some(e.to_string());
            if let Ok(mut slot) = self.stats.error.lock() {
                *slot = Some(e.to_string());
            }
            (self.stop)();
        }
    }

    fn publish(&self) {
        if let Some(s) = &self.session {
            let stats = self.stats;
            stats
                .events
                .store(self.done_events + s.events(), Ordering::Relaxed);
            stats
                .bytes
                .store(self.done_bytes + s.bytes(), Ordering::Relaxed);
            stats.bursts.store(
                self.done_bursts + u64::from(s.counts().bursts),
                Ordering::Relaxed,
            );
            stats
                .threads
                .store(u64::from(s.counts().threads), Ordering::Relaxed);
            stats.trigger_exits.store(
                self.done_trigger_exits + u64::from(s.counts().trigger_exits),
                Ordering::Relaxed,
            );
            let (objects, threads) = s.held();
            stats.objects.store(objects as u64, Ordering::Relaxed);
            stats.thread_states.store(threads as u64, Ordering::Relaxed);
        }
    }

    /// Finishes the current file and continues in `path`, reopening an open burst there.
    fn roll(&mut self, path: &str, ticks: u64, rate: Option<u32>, reopen: &mut Reopen<'_, S>) {
        let Some(old) = self.session.take() else {
            return;
        };
        let was_open = old.in_burst();
        let scope = old.scope();
        let mounts = old.mounts();
        self.done_bursts += u64::from(old.counts().bursts);
        self.done_trigger_exits += u64::from(old.counts().trigger_exits);
        if self.error.is_none() {
            match old.finish(rate) {
                Ok((_, events, bytes)) => {
                    self.done_events += events;
                    self.done_bytes += bytes;
                }
                Err(e) => (self.log)(&format!("finishing the trace before roll failed: {}", e)),
            }
        }
        self.stats.rolled.fetch_add(1, Ordering::Relaxed);
        match reopen(path) {
            Ok(mut session) => {
                session.follow_mounts(&mounts);
                self.session = Some(session);
                self.error = None;
                if let Ok(mut slot) = self.stats.error.lock() {
                    *slot = None;
                }
                if let Ok(mut f) = self.stats.file.lock() {
                    *f = path.to_string();
                }
                if was_open {
                    self.apply(|s| s.begin_scoped(ticks, scope));
                }
            }
            Err(e) => {
                let text = format!("cannot open the next trace file {}: {}", path, e);
                self.error = None;
                self.fail(&text, e);
            }
        }
        self.publish();
    }

    fn close(&mut self, ticks_per_microsecond: Option<u32>) -> Summary {
        let Some(session) = self.session.take() else {
            return Summary {
                error: self.error.clone(),
                ..Summary::default()
            };
        };
        let mut events = session.events();
        let mut bytes = session.bytes();
        let counts = session.counts().clone();
        if self.error.is_none() {
            match session.finish(ticks_per_microsecond) {
                Ok((_, e, b)) => (events, bytes) = (e, b),
                Err(e) => {
                    (self.log)(&format!("closing the trace failed: {}", e));
                    self.error = Some(e.to_string());
                }
            }
        }
        self.stats
            .events
            .store(self.done_events + events, Ordering::Relaxed);
        self.stats
            .bytes
            .store(self.done_bytes + bytes, Ordering::Relaxed);
        Summary {
            events,
            bytes,
            counts,
            error: self.error.clone(),
        }
    }
}
