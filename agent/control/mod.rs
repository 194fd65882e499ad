//! The control socket and the burst timers, served by one thread ("jlive control").
//!
//! Listening: a Unix socket (by default `$TMPDIR/jlive-$UID/$PID.sock`, directory 0700,
//! socket 0600, each peer's uid checked with SO_PEERCRED, removed at exit; those that killed
//! JVMs left there are removed by the next JVM to start) or TCP (loopback
//! unless a token is given; with a token every connection must first send `auth TOKEN`).
//!
//! Protocol: one command per line, one answer line `ok ...` or `error ...`:
//! `start [label]`, `stop`, `mark TEXT`, `status`, `roll`, `flush`, `help`, `quit`. The
//! published JinsightLive agent's one-byte commands also work: 1 start, 2 stop, 3 roll, each
//! answered with the byte 9. Bad input never does harm: lines are capped at 4096 bytes, at
//! most 8 clients are served at once, and a client silent for 60 s is dropped.

use crate::log;
use crate::options::{Control as Socket, Options};
use crate::runtime::heap;
use crate::session::{Service, Session};
use jlive_jvm::jni::Vm;
use jlive_jvm::jvmti::Jvmti;
use jlive_jvm::os;
use parking_lot::Mutex;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod live;
mod timers;

pub const MAX_LINE: usize = 4096;
pub const MAX_CLIENTS: usize = 8;
pub const IDLE: Duration = Duration::from_secs(60);
/// The longest the thread sleeps, so that a stop request is seen promptly.
const TICK: Duration = Duration::from_millis(100);

const HELP: &str =
    "commands: start [label] | stop | mark TEXT | status | roll | flush | heap [FILE] | help | quit; \
                    one-byte: 1 start, 2 stop, 3 roll (answered with the byte 9)";

/// What the control thread drives: the profiler's bursts, or a hosted JVMPI agent
/// (`jvmpi=`), each answering its own commands over the same socket and protocol.
pub trait Driver: Sync + 'static {
    fn vm(&self) -> Vm;
    fn jvmti(&self) -> Jvmti;
    /// The secret a TCP client must send first, if any.
    fn token(&self) -> Option<&str>;
    fn help(&self) -> &str;
    /// A command word and its argument: the answer, or None for a word it does not know.
    fn command(&self, jvmti: Jvmti, word: &str, rest: &str) -> Option<Result<String, String>>;
    /// The published JinsightLive agent's one-byte commands (1, 2, 3); false: not served.
    fn byte(&self, jvmti: Jvmti, byte: u8) -> bool;
    /// Fires what is due and says when it next has something to do (timed bursts).
    fn tick(&self, _jvmti: Jvmti) -> Option<Instant> {
        None
    }
    /// The session it drives, if it traces (the live visualizer needs it).
    fn session(&self) -> Option<&'static Session> {
        None
    }
}

/// The tracing session's driver: its bursts by command, and its timed burst.
struct Tracing {
    session: &'static Session,
    /// The timed burst (`delay=`, `duration=`), made at the first tick.
    timers: Mutex<Option<timers::Timers>>,
}

impl Driver for Tracing {
    fn vm(&self) -> Vm {
        self.session.runtime().vm()
    }

    fn jvmti(&self) -> Jvmti {
        self.session.runtime().jvmti()
    }

    fn token(&self) -> Option<&str> {
        self.session.runtime().options().token.as_deref()
    }

    fn help(&self) -> &str {
        HELP
    }

    fn command(&self, _jvmti: Jvmti, word: &str, rest: &str) -> Option<Result<String, String>> {
        let s = self.session;
        let rt = s.runtime();
        Some(match word {
            "start" => s.begin_burst((!rest.is_empty()).then_some(rest), None),
            "stop" => s.end_burst(),
            "mark" if rest.is_empty() => Err("mark needs a text".into()),
            "mark" => s.mark(rest),
            "status" => Ok(s.status()),
            "roll" => s.roll(),
            "flush" => s.flush(),
            "heap" if rest.is_empty() && s.recorder().driven() => Err("the JinsightLive visualizer is connected: it asks for dumps itself (Dump Population, Dump References)".into()),
            "heap" if rest.is_empty() && rt.options().formats == [jlive_writer::format::Format::Jinsight] => {
                heap::to_trace(rt, heap::Dump::Both)
            }
            "heap" if rest.is_empty() => Err("heap needs the path of the file to write (a dump into the trace is JinsightLive's: format=binary)".into()),
            "heap" => heap::to_file(rt, rest),
            _ => return None,
        })
    }

    fn byte(&self, _jvmti: Jvmti, byte: u8) -> bool {
        let s = self.session;
        let _ = match byte {
            1 => s.begin_burst(None, None),
            2 => s.end_burst(),
            _ => s.roll(),
        };
        true
    }

    fn tick(&self, _jvmti: Jvmti) -> Option<Instant> {
        let mut timers = self.timers.lock();
        let t = timers.get_or_insert_with(|| timers::Timers::new(self.session));
        t.fire(self.session);
        t.next()
    }

    fn session(&self) -> Option<&'static Session> {
        Some(self.session)
    }
}

/// A control socket, bound at load (so that a failure stops the JVM), and the thread that
/// serves it from VM init; when tracing, also the timed burst and the live visualizer.
pub struct Control {
    listener: Mutex<Option<Listener>>,
    live: Mutex<Option<live::Server>>,
    /// `delay=` or `duration=`: the thread runs for the timers alone if need be.
    timed: bool,
    stop: Arc<AtomicBool>,
    /// Written by [`Control::stop`] so that the thread's poll returns at once.
    wake: Mutex<Option<UnixStream>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Control {
    /// Binds the control socket the options ask for, and (`with_live`) the visualizer's.
    pub fn bind(options: &Options, with_live: bool) -> Result<Control, String> {
        let listener = listen(options)?;
        let live = if with_live {
            live::listen(options)?
        } else {
            None
        };
        Ok(Control {
            listener: Mutex::new(listener),
            live: Mutex::new(live),
            timed: options.delay.is_some() || options.duration.is_some(),
            stop: Arc::new(AtomicBool::new(false)),
            wake: Mutex::new(None),
            thread: Mutex::new(None),
        })
    }

    /// Whether there is anything to serve.
    fn is_idle(&self) -> bool {
        self.listener.lock().is_none() && self.live.lock().is_none() && !self.timed
    }

    /// Starts the control thread on `driver`.
    pub fn start(&self, driver: Arc<dyn Driver + Send + Sync>) {
        if self.is_idle() {
            return;
        }
        let started = self.spawn(driver);
        match started {
            Ok(handle) => *self.thread.lock() = Some(handle),
            Err(e) => log::warn(&format!("cannot start the control thread: {}", e)),
        }
    }

    fn spawn(&self, p: Arc<dyn Driver + Send + Sync>) -> std::io::Result<JoinHandle<()>> {
        let (wake, woken) = UnixStream::pair()?;
        woken.set_nonblocking(true)?;
        *self.wake.lock() = Some(wake);
        let (listener, live) = (self.listener.lock().take(), self.live.lock().take());
        let stop = self.stop.clone();
        std::thread::Builder::new()
            .name("jlive-control".into())
            .spawn(move || {
                crate::transport::mark_agent_thread();
                // Attached so that it may call JVMTI (enable events, force a GC for alloc=on).
                let Some(attached) = p.vm().attach_daemon(c"jlive control") else {
                    log::warn("the control thread cannot attach to the JVM; control is off");
                    return;
                };
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    serve(&*p, listener, live, woken, &stop)
                }));
                // A thread left attached stays "in native" for HotSpot, whose exit then waits
                // 300 ms for it to come back.
                drop(attached);
            })
    }

    /// Asks the control thread to finish and waits for it; the socket goes with it.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(mut wake) = self.wake.lock().take() {
            let _ = wake.write_all(b"x");
        }
        if let Some(handle) = self.thread.lock().take() {
            let _ = handle.join();
        }
        // Not started: the listener is still here.
        self.listener.lock().take();
    }
}

impl Service for Control {
    fn start(&self, session: &'static Session) {
        let driver = Tracing {
            session,
            timers: Mutex::new(None),
        };
        Control::start(self, Arc::new(driver));
    }

    fn stop(&self) {
        Control::stop(self);
    }
}

/// The services of a tracing run the options ask for: the control socket, the timed burst
/// and the live visualizer, bound now.
pub fn bind(options: &Options) -> Result<Vec<Box<dyn Service>>, String> {
    let control = Control::bind(options, true)?;
    Ok(if control.is_idle() {
        Vec::new()
    } else {
        vec![Box::new(control)]
    })
}

/// A bound, listening control socket.
pub enum Listener {
    /// A Unix socket, and its path (removed when the listener goes).
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener, Option<String>),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The default socket directory: `$TMPDIR/jlive-$UID`.
pub fn socket_dir() -> PathBuf {
    let tmp = std::env::var_os("TMPDIR").unwrap_or_else(|| "/tmp".into());
    Path::new(&tmp).join(format!("jlive-{}", os::euid()))
}

/// Binds the control socket the options ask for (at load, so that a failure stops the JVM).
fn listen(options: &Options) -> Result<Option<Listener>, String> {
    match &options.control {
        Socket::Off => Ok(None),
        Socket::Auto => {
            let dir = socket_dir();
            private_dir(&dir)?;
            sweep_stale_sockets(&dir);
            bind_unix(&dir.join(format!("{}.sock", std::process::id()))).map(Some)
        }
        Socket::Unix(path) => bind_unix(Path::new(path)).map(Some),
        Socket::Tcp(addr) => {
            let l = TcpListener::bind(addr)
                .map_err(|e| format!("cannot listen on tcp:{}: {}", addr, e))?;
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            let bound = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
            log::info(&format!("control socket tcp:{}", bound));
            Ok(Some(Listener::Tcp(l, options.token.clone())))
        }
    }
}

/// Creates the directory 0700, or accepts it only if it is ours and private.
fn private_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|e| {
                format!(
                    "cannot create the control directory {}: {}",
                    dir.display(),
                    e
                )
            }),
        Ok(meta) => {
            if !meta.is_dir() || meta.uid() != os::euid() || meta.mode() & 0o077 != 0 {
                return Err(format!(
                    "the control directory {} is not a private directory of this user (mode 0700); \
                     remove it, or give control=PATH or control=off",
                    dir.display()
                ));
            }
            Ok(())
        }
    }
}

/// Removes the sockets that JVMs killed before they could remove their own left in `dir`:
/// named by a pid that no process has, with nothing listening on them (a JVM of another pid
/// namespace sharing this directory still answers, and keeps its socket).
fn sweep_stale_sockets(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let own = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let pid = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".sock"))
            .and_then(|n| n.parse::<u32>().ok());
        let stale = pid.is_some_and(|pid| pid != own && !os::process_exists(pid))
            && entry.file_type().is_ok_and(|t| t.is_socket())
            && UnixStream::connect(&path).is_err();
        if stale && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        log::info(&format!(
            "removed {} sockets left in {} by JVMs that are gone",
            removed,
            dir.display()
        ));
    }
}

fn bind_unix(path: &Path) -> Result<Listener, String> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(path); // a stale socket of an earlier JVM with this pid
    }
    let l = UnixListener::bind(path)
        .map_err(|e| format!("cannot create the control socket {}: {}", path.display(), e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot make {} private: {}", path.display(), e))?;
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    log::info(&format!("control socket {}", path.display()));
    Ok(Listener::Unix(l, path.to_path_buf()))
}

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.write_all(buf),
            Stream::Tcp(s) => s.write_all(buf),
        }
    }
}

struct Client {
    stream: Stream,
    pending: Vec<u8>,
    /// False until `auth TOKEN` on a TCP socket that has a token.
    authed: bool,
    last: Instant,
}

fn serve(
    p: &dyn Driver,
    listener: Option<Listener>,
    mut live: Option<live::Server>,
    woken: UnixStream,
    stop: &AtomicBool,
) {
    let jvmti = p.jvmti();
    let session = p.session();
    let mut due = p.tick(jvmti);
    let mut clients: Vec<Client> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let wait = due.map_or(TICK, |t| {
            t.saturating_duration_since(Instant::now()).min(TICK)
        });
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(clients.len() + 1);
        if let Some(l) = &listener {
            let fd = match l {
                Listener::Unix(u, _) => u.as_raw_fd(),
                Listener::Tcp(t, _) => t.as_raw_fd(),
            };
            fds.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        for c in &clients {
            fds.push(libc::pollfd {
                fd: c.stream.fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        fds.push(libc::pollfd {
            fd: woken.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        let live_at = fds.len();
        for fd in live.iter().flat_map(|l| l.fds()) {
            fds.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let millis = wait.as_micros().div_ceil(1000) as libc::c_int;
        let ready = os::poll(&mut fds, millis);
        due = p.tick(jvmti);
        if let (Some(l), Some(session)) = (live.as_mut(), session) {
            let revents: Vec<i16> = fds[live_at..].iter().map(|f| f.revents).collect();
            if ready > 0 {
                l.serve(session, &revents);
            }
            l.tick(session);
        }
        if ready <= 0 {
            drop_idle(&mut clients);
            continue;
        }
        let offset = usize::from(listener.is_some());
        let mut keep = vec![true; clients.len()];
        for (i, c) in clients.iter_mut().enumerate() {
            if fds[i + offset].revents != 0 {
                keep[i] = c.serve(p, jvmti);
            }
        }
        let mut k = keep.into_iter();
        clients.retain(|_| k.next().unwrap_or(false));
        if offset == 1 && fds[0].revents != 0 {
            if let Some(l) = &listener {
                accept(l, &mut clients);
            }
        }
        drop_idle(&mut clients);
    }
}

fn drop_idle(clients: &mut Vec<Client>) {
    clients.retain(|c| c.last.elapsed() < IDLE);
}

fn accept(listener: &Listener, clients: &mut Vec<Client>) {
    loop {
        let (mut stream, needs_auth) = match listener {
            Listener::Unix(l, _) => match l.accept() {
                Ok((s, _)) => (Stream::Unix(s), false),
                Err(_) => return,
            },
            Listener::Tcp(l, token) => match l.accept() {
                Ok((s, _)) => (Stream::Tcp(s), token.is_some()),
                Err(_) => return,
            },
        };
        if let Stream::Unix(s) = &stream {
            if !peer_allowed(s.as_raw_fd()) {
                let _ = stream.write_all(b"error permission denied\n");
                continue;
            }
        }
        if clients.len() >= MAX_CLIENTS {
            let _ = stream.write_all(b"error too many clients\n");
            continue;
        }
        let nonblocking = match &stream {
            Stream::Unix(s) => s.set_nonblocking(true),
            Stream::Tcp(s) => s.set_nonblocking(true),
        };
        if nonblocking.is_ok() {
            clients.push(Client {
                stream,
                pending: Vec::new(),
                authed: !needs_auth,
                last: Instant::now(),
            });
        }
    }
}

/// Only this user (or root) may drive the profiler.
fn peer_allowed(fd: RawFd) -> bool {
    os::peer_uid(fd).is_some_and(|uid| uid == os::euid() || uid == 0)
}

impl Client {
    /// Reads and answers what the client sent; false = close the connection.
    fn serve(&mut self, p: &dyn Driver, jvmti: Jvmti) -> bool {
        let mut buf = [0u8; 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => {
                    self.last = Instant::now();
                    self.pending.extend_from_slice(&buf[..n]);
                    if !self.answer(p, jvmti) {
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
    }

    fn reply(&mut self, text: &[u8]) -> bool {
        self.stream.write_all(text).is_ok()
    }

    /// Answers every complete command in `pending`.
    fn answer(&mut self, p: &dyn Driver, jvmti: Jvmti) -> bool {
        loop {
            let Some(&first) = self.pending.first() else {
                return true;
            };
            if (1..=3).contains(&first) {
                self.pending.remove(0);
                if !self.authed {
                    let _ = self.reply(b"error auth required\n");
                    return false;
                }
                let answer: &[u8] = if p.byte(jvmti, first) {
                    &[9]
                } else {
                    b"error one-byte commands are not served here\n"
                };
                if !self.reply(answer) {
                    return false;
                }
                continue;
            }
            let Some(end) = self.pending.iter().position(|&b| b == b'\n') else {
                if self.pending.len() > MAX_LINE {
                    let _ = self.reply(
                        format!("error line too long (at most {} bytes)\n", MAX_LINE).as_bytes(),
                    );
                    return false;
                }
                return true;
            };
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            if line.len() > MAX_LINE + 1 {
                let _ = self.reply(
                    format!("error line too long (at most {} bytes)\n", MAX_LINE).as_bytes(),
                );
                return false;
            }
            let (answer, keep) = match std::str::from_utf8(&line) {
                Ok(text) => self.command(p, jvmti, text.trim()),
                Err(_) => ("error not UTF-8 text".to_string(), true),
            };
            if answer.is_empty() {
                continue;
            }
            if !self.reply(format!("{}\n", answer).as_bytes()) || !keep {
                return false;
            }
        }
    }

    /// One command line → (answer, keep the connection).
    fn command(&mut self, p: &dyn Driver, jvmti: Jvmti, line: &str) -> (String, bool) {
        if line.is_empty() {
            return (String::new(), true);
        }
        let (word, rest) = match line.split_once(char::is_whitespace) {
            Some((w, r)) => (w, r.trim()),
            None => (line, ""),
        };
        if !self.authed {
            return match (word, p.token()) {
                ("auth", Some(token)) if constant_time_eq(rest.as_bytes(), token.as_bytes()) => {
                    self.authed = true;
                    ("ok authenticated".into(), true)
                }
                _ => ("error auth required: send `auth TOKEN` first".into(), false),
            };
        }
        let result = match word {
            "help" => Ok(p.help().to_string()),
            "auth" => Ok("already authenticated".into()),
            "quit" | "exit" => return ("ok bye".into(), false),
            _ => p.command(jvmti, word, rest).unwrap_or_else(|| {
                let shown: String = word.chars().take(40).collect();
                Err(format!(
                    "unknown command '{}'; try help",
                    shown.escape_debug()
                ))
            }),
        };
        match result {
            Ok(text) => (format!("ok {}", text), true),
            Err(text) => (format!("error {}", text), true),
        }
    }
}

/// Whether `given` is the secret, compared in constant time.
pub fn same_secret(given: &str, secret: &str) -> bool {
    constant_time_eq(given.as_bytes(), secret.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
