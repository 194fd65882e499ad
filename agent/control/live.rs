//! IBM JinsightLive's live connection (`live=PORT`): the visualizer (File > Connect to a Java
//! VM) connects over TCP, reads the trace as a stream and drives bursts and heap dumps from
//! its Tracing menu. Served by the control thread beside the control socket.
//!
//! ```text
//! jlive → visualizer   one byte it throws away, then the trace: header ('b' ...), events
//! visualizer → jlive   one command per line ("go 1\n"), never answered: every byte jlive
//!                      sends is read as a trace event, and only while the visualizer waits
//!                      for something: a burst's END_BURST, a dump's GENERATION, or the
//!                      END_OF_REPORT of a request it is not served (with 0 events)
//! ```
//!
//! Commands (what the visualizer's Live Configuration sends before each burst, then the burst):
//! `go N` begins a burst (an empty one if it cannot begin), `flashlight_go 1 DEPTH` one that
//! writes no frame deeper than DEPTH, `stop` ends it; `maxevents N` and `bursttimeout SECONDS`
//! end the next bursts early, `forcegc 1` collects before a burst's end, `watchmonitors 1`
//! records contended monitors (MONITOR_CONTENTION) in the next bursts; `dp` dumps the live
//! objects, `dr` their references and the roots, `markgeneration` marks a generation,
//! `reportthreadsclasses` is answered with an empty report. `traceargvalues C M`,
//! `tracefieldvalues C M` and `tracereturnvalue C M` record the arguments, fields and return
//! values of those methods in the next bursts (capture=events; arguments and fields with
//! `values=on`); `tracemethod C M` ("Limit to") writes only those methods' invocations.
//! `triggermethod C M LOCK DELAY ACTION` arms the next burst instead: it begins at the
//! DELAY+1th entry of C.M (ACTION 0; only that thread's events with LOCK 1, and up to that
//! entry's exit after `endburstontrigger`), or that entry dumps the population (1) or the
//! references (2).
//!
//! One client at a time (a second is closed at once); loopback only unless `token=`, and then
//! the client sends `auth TOKEN` first. While connected, the visualizer alone begins bursts and
//! the trace streams to it (with a copy in the next file when `file=` was given); when it goes,
//! its burst ends and the trace goes on in the next file.

use crate::capture::{values, BurstFlags};
use crate::log;
use crate::recorder::{Action, Trigger, MAX_TRIGGERS};
use crate::runtime::heap::{self, Dump};
use crate::session::Session;
use jlive_writer::record::{BurstScope, DumpEnd, HeapDump, Message};
use std::collections::HashSet;
use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest command line taken; a longer one closes the connection.
const MAX_LINE: usize = 4096;

/// How long a client has to send `auth TOKEN` (with `token=`).
const AUTH_TIME: Duration = Duration::from_secs(10);

/// The listening socket and its client.
pub struct Server {
    listener: TcpListener,
    token: Option<String>,
    client: Option<Client>,
    /// The session it serves, once it does.
    session: Option<&'static Session>,
}

struct Client {
    stream: TcpStream,
    peer: SocketAddr,
    since: Instant,
    pending: Vec<u8>,
    authed: bool,
    streaming: bool,
    settings: Settings,
    burst: Option<Burst>,
    /// A burst waits for its trigger: the writer's trigger exits when it was armed.
    armed: Option<u64>,
    /// Commands already said to be not served (said once each).
    said: HashSet<String>,
}

/// What the visualizer asked of the next bursts.
#[derive(Default)]
struct Settings {
    max_events: Option<u64>,
    timeout: Option<Duration>,
    force_gc: bool,
    watch_monitors: bool,
    /// The value filters: (class, method) whose arguments, and whose return values, to record.
    args: values::Patterns,
    returns: values::Patterns,
    fields: values::Patterns,
    /// "Limit to": only these methods' invocations.
    limit: values::Patterns,
    triggers: Vec<Trigger>,
    /// "at trigger exit": a triggered burst ends with the exit of the entry that began it.
    end_on_trigger: bool,
}

/// The visualizer's open burst.
struct Burst {
    deadline: Option<Instant>,
    /// Events written when it began, and the most it may add.
    events_at: u64,
    max_events: Option<u64>,
    /// A triggered burst ending at the trigger's exit: the writer's trigger exits before it.
    exits_at: Option<u64>,
    /// Ticks it has waited for that exit.
    waited: u32,
}

impl Burst {
    fn new(p: &Session, s: &Settings, exits_at: Option<u64>) -> Burst {
        Burst {
            deadline: s.timeout.map(|t| Instant::now() + t),
            events_at: p.stats().events.load(Ordering::Relaxed),
            max_events: s.max_events,
            exits_at,
            waited: 0,
        }
    }
}

/// Binds `live=` at load, so that a port in use stops the JVM before `main`.
pub fn listen(p: &crate::options::Options) -> Result<Option<Server>, String> {
    let Some(addr) = p.live else {
        return Ok(None);
    };
    let listener =
        TcpListener::bind(addr).map_err(|e| format!("cannot listen on live={}: {}", addr, e))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    // The visualizer's dialog asks for the port "the VM prints to stderr".
    log::warn(&format!(
        "JinsightLive visualizer: connect to {} port {}",
        bound.ip(),
        bound.port()
    ));
    Ok(Some(Server {
        listener,
        token: p.token.clone(),
        client: None,
        session: None,
    }))
}

impl Server {
    /// The descriptors to poll: the listener, then the client if any.
    pub fn fds(&self) -> Vec<RawFd> {
        let mut fds = vec![self.listener.as_raw_fd()];
        fds.extend(self.client.as_ref().map(|c| c.stream.as_raw_fd()));
        fds
    }

    /// Serves what poll found ready (`ready`: the revents of [`Server::fds`], in order).
    pub fn serve(&mut self, p: &'static Session, ready: &[i16]) {
        self.session = Some(p);
        if ready.get(1).is_some_and(|&r| r != 0) {
            let keep = self
                .client
                .as_mut()
                .is_some_and(|c| c.read(p, self.token.as_deref()));
            if !keep {
                self.drop_client(p);
            }
        }
        if ready.first().is_some_and(|&r| r != 0) {
            self.accept(p);
        }
    }

    /// Ends the visualizer's burst when its time or its events are up (or notes that
    /// something else ended it).
    pub fn tick(&mut self, p: &'static Session) {
        self.session = Some(p);
        if self
            .client
            .as_ref()
            .is_some_and(|c| !c.authed && c.since.elapsed() > AUTH_TIME)
        {
            log::info("live: a client that did not authenticate in time: closed");
            self.drop_client(p);
        }
        let Some(c) = self.client.as_mut() else {
            return;
        };
        if c.armed.is_some() {
            c.armed_tick(p);
        }
        let Some(b) = c.burst.as_mut() else {
            return;
        };
        if !p.recorder().is_open() {
            c.burst = None;
            return;
        }
        let written = p.stats().events.load(Ordering::Relaxed);
        let over = b
            .max_events
            .is_some_and(|m| written.saturating_sub(b.events_at) >= m);
        let exited = b
            .exits_at
            .is_some_and(|e| p.stats().trigger_exits.load(Ordering::Relaxed) > e);
        if b.exits_at.is_some() && !exited {
            // The trigger's exit reaches the writer with its thread's batch: hand its records
            // over at each tick rather than when its buffer fills, and every thread's once a
            // second (a virtual thread may have moved to another carrier).
            b.waited += 1;
            p.hand_over(b.waited % 10 == 0);
        }
        if over || exited || b.deadline.is_some_and(|d| Instant::now() >= d) {
            c.end_burst(p);
        }
    }

    fn accept(&mut self, p: &'static Session) {
        while let Ok((stream, peer)) = self.listener.accept() {
            if self.client.is_some() {
                log::info(&format!(
                    "live: a second visualizer ({}) refused: one is connected",
                    peer
                ));
                continue;
            }
            // Blocking: the control thread reads only what poll says is there.
            if stream.set_nonblocking(false).is_err() {
                continue;
            }
            let mut c = Client {
                stream,
                peer,
                since: Instant::now(),
                pending: Vec::new(),
                authed: self.token.is_none(),
                streaming: false,
                settings: Settings::default(),
                burst: None,
                armed: None,
                said: HashSet::new(),
            };
            log::info(&format!("live: visualizer connected from {}", peer));
            if c.authed && !c.start_stream(p) {
                continue;
            }
            self.client = Some(c);
        }
    }

    /// The client went (or broke the protocol): its burst ends, the trace goes back to a file.
    fn drop_client(&mut self, p: &'static Session) {
        let Some(mut c) = self.client.take() else {
            return;
        };
        log::info(&format!("live: visualizer {} gone", c.peer));
        if c.armed.take().is_some() && !p.disarm_burst() && p.recorder().is_open() {
            // Its trigger has just fired.
            c.burst = Some(Burst::new(p, &c.settings, None));
        }
        if c.burst.is_some() {
            c.end_burst(p);
        }
        if c.streaming {
            p.recorder().set_driven(false);
            if let Err(e) = p.roll_into(None) {
                log::info(&format!(
                    "live: the trace does not go back to a file: {}",
                    e
                ));
            }
        }
    }
}

impl Drop for Server {
    /// The control thread is done. After a panic it caught, the stream is shut (the writer
    /// stops writing to it) and bursts may begin again; at VM death the trace's end still
    /// goes to the visualizer.
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(c) = &self.client {
                let _ = c.stream.shutdown(std::net::Shutdown::Both);
            }
            if let Some(p) = self.session {
                p.recorder().set_driven(false);
                p.disarm_burst();
            }
        }
    }
}

impl Client {
    /// Reads what the client sent (once: poll said it is there) and obeys it; false: close.
    fn read(&mut self, p: &'static Session, token: Option<&str>) -> bool {
        let mut buf = [0u8; 4096];
        let n = match self.stream.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::WouldBlock => {
                return true
            }
            Err(_) => return false,
        };
        self.pending.extend_from_slice(&buf[..n]);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            // The visualizer writes each character's low byte: Latin-1 text.
            let line: String = line.iter().map(|&b| char::from(b)).collect();
            if !self.command(p, line.trim(), token) {
                return false;
            }
        }
        if self.pending.len() > MAX_LINE {
            log::info(&format!(
                "live: a line of more than {} bytes from {}: closed",
                MAX_LINE, self.peer
            ));
            return false;
        }
        true
    }

    /// Hands the trace over to this connection; false when that failed.
    fn start_stream(&mut self, p: &'static Session) -> bool {
        let Ok(writer_side) = self.stream.try_clone() else {
            return false;
        };
        // First, so that no one else begins a burst from here on.
        p.recorder().set_driven(true);
        if p.recorder().is_open() {
            log::info("live: the visualizer takes over: the open burst ends");
            let _ = p.end_burst();
        }
        match p.roll_into(Some(writer_side)) {
            Ok(_) => {
                self.streaming = true;
                true
            }
            Err(e) => {
                p.recorder().set_driven(false);
                log::warn(&format!("live: cannot stream to the visualizer: {}", e));
                false
            }
        }
    }

    /// One command line; false: close the connection.
    fn command(&mut self, p: &'static Session, line: &str, token: Option<&str>) -> bool {
        let (word, rest) = match line.split_once(' ') {
            Some((w, r)) => (w, r.trim()),
            None => (line, ""),
        };
        if !self.authed {
            let ok = word == "auth" && token.is_some_and(|t| super::same_secret(rest, t));
            if !ok {
                log::info(&format!("live: {} did not authenticate: closed", self.peer));
                return false;
            }
            self.authed = true;
            return self.start_stream(p);
        }
        match word {
            "" | "auth" => {}
            "go" => self.begin_burst(p, None),
            // `flashlight_go 1 DEPTH`.
            "flashlight_go" => {
                let depth = rest.split_whitespace().nth(1).and_then(|d| d.parse().ok());
                let depth = depth.filter(|&d: &u32| d > 0);
                self.begin_burst(p, depth)
            }
            "stop" if self.armed.is_some() => self.disarm(p),
            "stop" if self.burst.is_some() => self.end_burst(p),
            // Nothing of the visualizer's is open: it stops reading by itself.
            "stop" => {}
            "dp" => self.dump(p, Dump::Population, DumpEnd::Report),
            "dr" => self.dump(p, Dump::References, DumpEnd::Report),
            "markgeneration" => send_end(p, DumpEnd::Generation),
            // Threads and classes are defined as the trace needs them: an empty report.
            "reportthreadsclasses" => send_end(p, DumpEnd::Report),
            "maxevents" => self.settings.max_events = limit(rest),
            "bursttimeout" => self.settings.timeout = limit(rest).map(Duration::from_secs),
            "forcegc" => self.settings.force_gc = rest == "1",
            "watchmonitors" => self.settings.watch_monitors = rest == "1",
            "resetargvalues" => self.settings.args.clear(),
            "resetreturnvalue" => self.settings.returns.clear(),
            "resetfieldvalues" => self.settings.fields.clear(),
            "endburstontrigger" => self.settings.end_on_trigger = true,
            "resetendburstontrigger" => self.settings.end_on_trigger = false,
            "resettrigger" => self.settings.triggers.clear(),
            "resetfilters" => self.settings.limit.clear(),
            "tracemethod" => self.settings.limit.extend(pattern(rest)),
            "triggermethod" => match trigger(rest) {
                Some(t) if self.settings.triggers.len() < MAX_TRIGGERS => {
                    self.settings.triggers.push(t)
                }
                Some(_) => self.say_once(word, "more than 16 triggers: the first 16 are kept"),
                None => self.say_once(
                    "triggermethod?",
                    &format!("a trigger jlive cannot read ignored: {:?}", rest),
                ),
            },
            "prettyprintstrings" | "prettyprintcolors" | "prettyprintarraysmax" | "filteroff" => {}
            "traceargvalues" | "tracereturnvalue" | "tracefieldvalues"
                if p.capture().uses_bci() =>
            {
                self.say_once(
                    "values",
                    "argument, return and field values are recorded under capture=events only",
                )
            }
            "traceargvalues" | "tracefieldvalues" if !p.runtime().options().values => self
                .say_once(
                word,
                "argument and field values are read from the frames: start the JVM with values=on",
            ),
            "traceargvalues" | "tracereturnvalue" | "tracefieldvalues" => {
                let Some(filter) = pattern(rest) else {
                    return true;
                };
                match word {
                    "traceargvalues" => self.settings.args.push(filter),
                    "tracereturnvalue" => self.settings.returns.push(filter),
                    _ => self.settings.fields.push(filter),
                }
            }
            _ => {
                let shown: String = word.chars().take(40).collect();
                self.say_once(word, &format!("unknown command {:?} ignored", shown));
            }
        }
        true
    }

    fn say_once(&mut self, word: &str, text: &str) {
        if self.said.len() < 64 && self.said.insert(word.to_string()) {
            log::info(&format!("live: {}", text));
        }
    }

    /// `go` (`depth` None) or `flashlight_go` with its depth: a burst, or one armed with the
    /// triggers set.
    fn begin_burst(&mut self, p: &'static Session, depth: Option<u32>) {
        if self.burst.is_some() || self.armed.is_some() {
            return;
        }
        let s = &self.settings;
        if p.recorder().is_open() {
            // Begun before the visualizer came (a race lost by a moment): it is the visualizer's.
            self.burst = Some(Burst::new(p, s, None));
            return;
        }
        p.capture()
            .values()
            .set(s.args.clone(), s.returns.clone(), s.fields.clone());
        let flags = BurstFlags {
            contention: p.runtime().options().monitors || s.watch_monitors,
            ..p.default_flags()
        };
        let scope = BurstScope {
            limit: s.limit.clone(),
            depth,
            trigger: None,
        };
        if !s.triggers.is_empty() {
            let exits = p.stats().trigger_exits.load(Ordering::Relaxed);
            let (triggers, end) = (s.triggers.clone(), s.end_on_trigger);
            match p.arm_burst(flags, triggers, scope, end) {
                Ok(_) => self.armed = Some(exits),
                Err(e) => no_burst(p, &e),
            }
            return;
        }
        match p.open_burst(None, Some(flags), true, scope) {
            Ok(_) => self.burst = Some(Burst::new(p, s, None)),
            Err(e) => no_burst(p, &e),
        }
    }

    /// While armed: the burst its trigger began is the visualizer's, a dump it fired is made.
    fn armed_tick(&mut self, p: &'static Session) {
        let Some(exits) = self.armed else {
            return;
        };
        let (open, armed) = {
            let state = p.recorder().state();
            (state.is_open(), state.is_armed())
        };
        if open {
            self.armed = None;
            let end = self.settings.end_on_trigger.then_some(exits);
            self.burst = Some(Burst::new(p, &self.settings, end));
            return;
        }
        // The visualizer waits for an END_BURST or a GENERATION (burst sampling's wait wakes
        // on nothing else).
        match p.take_fired() {
            Some(Action::Population) => self.dump(p, Dump::Population, DumpEnd::Generation),
            Some(Action::References) => self.dump(p, Dump::References, DumpEnd::Generation),
            Some(Action::Trace) => no_burst(p, "the trigger fired and no burst could begin"),
            None if armed => return,
            // Its burst began and ended between two ticks: the visualizer had both.
            None => {}
        }
        self.armed = None;
    }

    /// `stop` while armed. The visualizer has read no BEGIN_BURST: it stops on its side, and
    /// reads nothing more (an empty burst sent now would end its next load at once).
    fn disarm(&mut self, p: &'static Session) {
        self.armed = None;
        if p.disarm_burst() {
            log::info("live: disarmed before the trigger fired");
        } else if p.recorder().is_open() {
            // The trigger has just fired: its burst ends.
            self.end_burst(p);
        }
    }

    fn end_burst(&mut self, p: &'static Session) {
        self.burst = None;
        if self.settings.force_gc {
            let _ = p.runtime().jvmti().force_garbage_collection();
        }
        if let Err(e) = p.end_burst() {
            log::info(&format!("live: {}", e));
        }
    }

    /// A dump; `failed`: what ends the visualizer's wait when it cannot be made.
    fn dump(&mut self, p: &'static Session, what: Dump, failed: DumpEnd) {
        match heap::to_trace(p.runtime(), what) {
            Ok(text) => log::info(&format!("live: {}", text)),
            Err(e) => {
                log::info(&format!("live: no heap dump: {}", e));
                send_end(p, failed);
            }
        }
    }
}

/// The visualizer waits for an END_BURST: an empty burst that says why there is none.
fn no_burst(p: &'static Session, why: &str) {
    p.no_burst(why);
}

/// `triggermethod CLASS METHOD LOCK DELAY ACTION` (the class as the visualizer names it; a
/// typed one may hold spaces, so the fields are read from the end).
fn trigger(text: &str) -> Option<Trigger> {
    let mut fields = text.rsplitn(4, ' ');
    let action = match fields.next()?.trim() {
        "0" => Action::Trace,
        "1" => Action::Population,
        "2" => Action::References,
        _ => return None,
    };
    let delay = fields.next()?.trim().parse().ok()?;
    let lock = fields.next()?.trim() == "1";
    let (class, method) = pattern(fields.next()?)?;
    Some(Trigger {
        class,
        method,
        lock,
        delay,
        action,
    })
}

/// A dump of nothing: the generation mark, or an empty report.
fn send_end(p: &'static Session, end: DumpEnd) {
    p.hub().collect();
    p.hub().control(Message::Heap(Box::new(HeapDump {
        ticks: crate::clock::ticks(),
        end,
        ..HeapDump::default()
    })));
}

/// A value filter's `CLASS METHOD` (names as the trace gave them, or typed: dots are slashes).
fn pattern(text: &str) -> Option<(String, String)> {
    let (class, method) = text.rsplit_once(' ')?;
    let class = class.trim().replace('.', "/");
    (!class.is_empty() && !method.is_empty()).then(|| (class, method.to_string()))
}

/// A count the visualizer sends (`maxevents`, `bursttimeout`): None for none, an empty field
/// or its "no limit" (2147483647).
fn limit(text: &str) -> Option<u64> {
    text.parse::<u64>().ok().filter(|&n| n < i32::MAX as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_as_the_visualizer_sends_them() {
        assert_eq!(limit("50000"), Some(50000));
        assert_eq!(limit("2147483647"), None);
        assert_eq!(limit(""), None);
        assert_eq!(limit("x"), None);
    }

    #[test]
    fn value_filters_take_a_class_and_a_method() {
        assert_eq!(
            pattern("java.util.HashMap put"),
            Some(("java/util/HashMap".into(), "put".into()))
        );
        assert_eq!(pattern("* *"), Some(("*".into(), "*".into())));
        assert_eq!(pattern("Phases"), None);
    }

    #[test]
    fn triggers_read_from_the_end_of_the_line() {
        assert_eq!(
            trigger("com/acme/Server handle 1 5 2"),
            Some(Trigger {
                class: "com/acme/Server".into(),
                method: "handle".into(),
                lock: true,
                delay: 5,
                action: Action::References,
            })
        );
        let typed = trigger("my pkg.Cls run 0 0 0").unwrap();
        assert_eq!(
            (typed.class.as_str(), typed.method.as_str()),
            ("my pkg/Cls", "run")
        );
        assert_eq!(trigger("A b 1 x 0"), None);
        assert_eq!(trigger("A b 1 0 3"), None);
        assert_eq!(trigger("b 1 0 0"), None);
    }
}
