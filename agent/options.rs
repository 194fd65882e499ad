//! Agent options: `key=value` pairs separated by commas; lists inside a value use `;`.
//! A bad key or value is one line naming it, what is accepted, and the nearest valid key.

use jlive_writer::format::{Format, FORMAT_NAMES};
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capture {
    Events,
    Bci,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Methods {
    On,
    Entry,
    Off,
}

/// Where the control socket listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// `$TMPDIR/jlive-$UID/$PID.sock`
    Auto,
    Off,
    Unix(String),
    Tcp(SocketAddr),
}

/// The tick source (`clock=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// The TSC when it is invariant, else CLOCK_MONOTONIC.
    Tsc,
    Monotonic,
    /// z/Architecture STORE CLOCK values: STCKF on s390x, else mapped from the TSC.
    Stck,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gc {
    Light,
    On,
    Off,
}

/// Where a burst's events go (`output=`): the trace file, the user trace library loaded by
/// `plugin=` or `InstrumentVMSupport.tracingStartup`, or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    File,
    Plugin,
    Both,
}

/// Everything the agent was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// One format or several (`format=binary;tptp`), in the order given.
    pub formats: Vec<Format>,
    /// None: `jlive-%p` with the format's extension.
    pub file: Option<String>,
    pub capture: Capture,
    pub methods: Methods,
    pub gc: Gc,
    pub alloc: bool,
    pub objects: bool,
    /// `inline=on`: instrumented methods stay short enough for the JIT to inline (capture=bci);
    /// None (`auto`): [`Options::inlinable`] decides.
    pub inline: Option<bool>,
    /// `instrument=burst`: capture=bci rewrites classes when the first burst begins, not as
    /// they load; None (`auto`): [`Options::instruments_lazily`] decides.
    pub instrument_at_burst: Option<bool>,
    /// `trampolines=jni`: instrumented methods call libjlive through JNI natives even where
    /// the JDK has FFM critical downcalls (22 and later; `auto`).
    pub jni_only: bool,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    /// None: STORE CLOCK for the 390 platforms, else the TSC ([`Options::clock`]).
    pub clock: Option<Clock>,
    /// JinsightLive header platform; None = this machine's.
    pub platform: Option<u32>,
    /// Per-thread buffer size in bytes.
    pub buffer: usize,
    /// Permissions of the trace files.
    pub filemode: u32,
    /// `compress=gzip`: files written through gzip, named `.gz`.
    pub gzip: bool,
    /// `record=tree`: each thread's calling-context tree per burst instead of method events.
    pub tree: bool,
    /// `monitors=on` (always with format=orca): waits, notifies, thread starts, joins and
    /// sleeps, and contended monitors.
    pub monitors: bool,
    monitors_given: Option<bool>,
    objects_given: bool,
    /// `plugin=`: a user trace library (VA/Java's InstrumentTrace* entry points).
    pub plugin: Option<String>,
    /// Where bursts go; a loaded plug-in always gets them unless this is `File`.
    pub output: Output,
    output_given: bool,
    /// Whether `format=` was given (record=tree then writes TPTP unless it was).
    format_given: bool,
    /// overflow=drop: drop method records rather than wait for a writer that is behind.
    pub drop_when_behind: bool,
    /// None = stderr.
    pub log: Option<String>,
    pub help: bool,
    /// `start=paused`: no burst until a control command (or `delay`).
    pub paused: bool,
    pub delay: Option<Duration>,
    pub duration: Option<Duration>,
    pub control: Control,
    pub token: Option<String>,
    /// `live=PORT` or `live=HOST:PORT`: where IBM's JinsightLive visualizer connects.
    pub live: Option<std::net::SocketAddr>,
    /// `values=on`: the visualizer's argument and field filters may read frames' locals.
    pub values: bool,
    start_given: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            formats: vec![Format::Jinsight],
            file: None,
            capture: Capture::Bci,
            methods: Methods::On,
            gc: Gc::Light,
            alloc: false,
            objects: false,
            inline: None,
            instrument_at_burst: None,
            jni_only: false,
            include: Vec::new(),
            exclude: Vec::new(),
            clock: None,
            platform: None,
            buffer: 64 * 1024,
            filemode: 0o600,
            gzip: false,
            monitors: false,
            monitors_given: None,
            objects_given: false,
            plugin: None,
            output: Output::Both,
            output_given: false,
            tree: false,
            format_given: false,
            drop_when_behind: false,
            log: None,
            help: false,
            paused: false,
            delay: None,
            duration: None,
            control: Control::Auto,
            token: None,
            live: None,
            values: false,
            start_given: false,
        }
    }
}

/// (key, values with the default first, meaning) — the table `help` prints.
pub const KEYS: &[(&str, &str, &str)] = &[
    (
        "format",
        "binary | jinsight | tptp | tptp-xml",
        "JinsightLive binary, Eclipse TPTP binary or TPTP XML; several at once with ';'",
    ),
    (
        "file",
        "jlive-%p.trc",
        "trace file (.trcbin for tptp, .trcxml for tptp-xml; with several formats each its own extension); %p = pid, %t = start time (UTC, YYYYMMDDTHHMMSS), %n = file number; what is at the path is replaced, a symbolic link not followed",
    ),
    (
        "monitors",
        "off | on",
        "waits, notifies, Thread.start/join/sleep and contended monitors, each with its stack: ORCA's events (always on with format=orca), TPTP's monitor elements, JinsightLive's MONITOR_CONTENTION",
    ),
    (
        "record",
        "trace | tree",
        "trace: every event; tree: instead of each method entry and exit, each thread's calling-context tree (calls, self, shortest and longest time per context) written at every burst's end, as TPTP's agMethodEntry/Exit (format=tptp unless format= says tptp-xml)",
    ),
    (
        "compress",
        "off | gzip",
        "gzip: each file written through gzip at a fast level, its name ending in .gz (IBM's visualizer and jlive's commands read it; a killed run's file reads up to its last flush)",
    ),
    (
        "filemode",
        "0600",
        "permissions of the trace files, in octal (0644: readable by all)",
    ),
    (
        "start",
        "now | paused",
        "now: one burst from VM start to VM death; paused: wait for a command",
    ),
    (
        "delay",
        "(none)",
        "begin a burst this long after start-up, e.g. 30s, 500ms",
    ),
    (
        "duration",
        "(none)",
        "end a burst this long after it began, e.g. 2s",
    ),
    (
        "control",
        "auto | off | PATH | tcp:127.0.0.1:PORT",
        "control socket; auto = $TMPDIR/jlive-$UID/$PID.sock",
    ),
    (
        "live",
        "(off) | PORT | HOST:PORT",
        "listen for IBM's JinsightLive visualizer (File > Connect to a Java VM): it drives the bursts and dumps the heap while connected; PORT alone is on 127.0.0.1 (start=paused unless start= is given)",
    ),
    (
        "values",
        "off | on",
        "with live= and capture=events: the visualizer's argument and field value filters are served (the JVM keeps can_access_local_variables from start-up, which costs compiled code a little; each value read is a JVMTI call); return values need nothing",
    ),
    (
        "token",
        "(none)",
        "secret every TCP control connection must give first (needed beyond loopback)",
    ),
    (
        "capture",
        "bci | events",
        "how entries and exits are seen: bytecode instrumentation, or JVMTI MethodEntry/MethodExit (what only events sees: the README's capture=bci)",
    ),
    (
        "methods",
        "on | entry | off",
        "entries and exits / entries only / none",
    ),
    (
        "gc",
        "light | on | off",
        "GC start and stop / plus object frees / none",
    ),
    (
        "alloc",
        "off | on",
        "object and array allocations (OBJECT_CREATED, ARRAY_CREATED)",
    ),
    (
        "objects",
        "off | on",
        "receiver object IDs on entries of instance methods",
    ),
    (
        "inline",
        "auto | on | off",
        "capture=bci: may the JIT inline instrumented methods (off: padded past its limit, cheaper compiles while recording; auto: on unless a burst opens at start-up)",
    ),
    (
        "instrument",
        "auto | load | burst",
        "capture=bci: when classes are rewritten (load: as they load; burst: all at the first burst, a JVM left paused runs untouched; auto: burst unless a burst opens at start-up)",
    ),
    (
        "trampolines",
        "auto | jni",
        "capture=bci: how instrumented methods reach libjlive (auto: FFM critical downcalls on JDK 22 and later, no JNI transition, set up in 100-200 ms when instrumenting begins; JNI natives before; jni: JNI natives everywhere)",
    ),
    (
        "include",
        "(all)",
        "class-name globs to trace, ';'-separated, e.g. com.acme.*;org.x.Y",
    ),
    (
        "exclude",
        "(none)",
        "class-name globs not to trace, ';'-separated",
    ),
    (
        "clock",
        "tsc | monotonic | stck",
        "tick source (tsc only when the TSC is invariant); stck: z/Architecture STORE CLOCK values, the default with platform=linux_390 or os390",
    ),
    (
        "platform",
        "auto | linux_x86 | linux_390 | win32_x86 | aix_ppc | os390 | solaris_sparc",
        "header platform; selects event byte order",
    ),
    ("buffer", "64k", "per-thread buffer size (4k..64m)"),
    (
        "overflow",
        "wait | drop",
        "when the writer is behind: a thread waits (nothing lost), or drops its batch's method records, counted in status and marked in the trace",
    ),
    (
        "plugin",
        "(none)",
        "a user trace library (VA/Java's InstrumentTraceStartup/Begin/Event/End/Shutdown, examples/trace/) that gets every event, on the thread that caused it (GC events after the collection, from jlive's thread); implies output=plugin and objects=on unless given",
    ),
    (
        "output",
        "both | plugin | file",
        "where bursts go: the trace file and a plug-in once one is loaded (plugin= or InstrumentVMSupport.tracingStartup), the plug-in only (no file is written), or the file only",
    ),
    (
        "jvmpi",
        "(none)",
        "PATH[:OPTIONS]: host a legacy JVMPI agent (JDK 1.2-5) through the JVMPI shim instead of tracing; the last option: everything after the library's ':' is the agent's own option string, commas included; only log= may come before it; at start-up only",
    ),
    ("log", "stderr | PATH", "where jlive's own messages go: stderr gets warnings only, PATH everything, warnings marked \"warning:\""),
    ("help", "", "print this table and exit"),
];

const PLATFORMS: &str = "auto, linux_x86, linux_390, win32_x86, aix_ppc, os390, solaris_sparc";

/// The formats of a `format=` value: one name, or several separated by ';'.
fn formats(value: &str) -> Result<Vec<Format>, OptionError> {
    let mut out = Vec::new();
    for name in list(value) {
        let format =
            Format::parse(&name).ok_or_else(|| bad_value("format", value, FORMAT_NAMES))?;
        if !out.contains(&format) {
            out.push(format);
        }
    }
    if out.is_empty() {
        return Err(bad_value("format", value, FORMAT_NAMES));
    }
    Ok(out)
}

/// A rejected option string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError(pub String);

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad_value(key: &str, value: &str, accepted: &str) -> OptionError {
    OptionError(format!(
        "bad value '{}' for option '{}': accepted {}",
        value, key, accepted
    ))
}

fn on_off(key: &str, value: &str) -> Result<bool, OptionError> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(bad_value(key, value, "on, off")),
    }
}

fn list(value: &str) -> Vec<String> {
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// "64k", "1m", "65536" → bytes.
fn size(key: &str, value: &str) -> Result<usize, OptionError> {
    const ACCEPTED: &str = "a size from 4k to 64m, such as 64k or 1m";
    let lower = value.to_ascii_lowercase();
    let (digits, unit) = match lower.strip_suffix('k') {
        Some(d) => (d, 1024),
        None => match lower.strip_suffix('m') {
            Some(d) => (d, 1024 * 1024),
            None => (lower.as_str(), 1),
        },
    };
    let n: usize = digits
        .parse()
        .map_err(|_| bad_value(key, value, ACCEPTED))?;
    let bytes = n.saturating_mul(unit);
    if !(4096..=64 * 1024 * 1024).contains(&bytes) {
        return Err(bad_value(key, value, ACCEPTED));
    }
    Ok(bytes)
}

/// "500ms", "30s", "2m", "1.5s" → Duration.
fn duration(key: &str, value: &str) -> Result<Duration, OptionError> {
    let (number, unit) = if let Some(n) = value.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = value.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = value.strip_suffix('m') {
        (n, 60.0)
    } else {
        return Err(bad_value(key, value, "a duration such as 500ms, 30s or 2m"));
    };
    match number.parse::<f64>() {
        Ok(n) if n >= 0.0 && n * unit < 1e9 => Ok(Duration::from_secs_f64(n * unit)),
        _ => Err(bad_value(key, value, "a duration such as 500ms, 30s or 2m")),
    }
}

fn control(value: &str) -> Result<Control, OptionError> {
    const ACCEPTED: &str = "auto, off, a socket path, tcp:127.0.0.1:PORT";
    Ok(match value {
        "auto" => Control::Auto,
        "off" => Control::Off,
        "" => return Err(bad_value("control", value, ACCEPTED)),
        _ => match value.strip_prefix("tcp:") {
            Some(addr) => Control::Tcp(
                addr.parse()
                    .map_err(|_| bad_value("control", value, ACCEPTED))?,
            ),
            None => Control::Unix(value.to_string()),
        },
    })
}

fn live(value: &str) -> Result<std::net::SocketAddr, OptionError> {
    const ACCEPTED: &str = "a port (on 127.0.0.1) or HOST:PORT";
    if let Ok(port) = value.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    value
        .parse()
        .map_err(|_| bad_value("live", value, ACCEPTED))
}

fn platform(value: &str) -> Result<Option<u32>, OptionError> {
    if value == "auto" {
        return Ok(None);
    }
    jlive_writer::jinsight::PLATFORM_NAMES
        .iter()
        .find(|(name, _)| *name == value)
        .map(|(_, p)| Some(*p))
        .ok_or_else(|| bad_value("platform", value, PLATFORMS))
}

/// The file of output=plugin.
pub const NO_FILE: &str = "/dev/null";

impl Options {
    /// Whether bursts write the trace file.
    pub fn writes_file(&self) -> bool {
        self.output != Output::Plugin
    }

    /// Parses the string after `=` in `-agentpath:libjlive.so=...`.
    pub fn parse(text: &str) -> Result<Options, OptionError> {
        Options::parse_over(Options::default(), text)
    }

    /// The options of an agent loaded into a running JVM (`jlive attach`): the same, but for
    /// the default `start=paused` (bursts come from `jlive ctl`); `capture=bci` is the only
    /// capture there (a running HotSpot gives method entry and exit events only to agents
    /// loaded at start-up).
    pub fn parse_attached(text: &str) -> Result<Options, OptionError> {
        let base = Options {
            capture: Capture::Bci,
            paused: true,
            ..Options::default()
        };
        Options::parse_over(base, text)
    }

    fn parse_over(mut o: Options, text: &str) -> Result<Options, OptionError> {
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None => (item, ""),
            };
            o.set(key, value)?;
        }
        if o.tree {
            if !o.format_given {
                o.formats = vec![Format::Tptp];
            } else if o.formats.contains(&Format::Jinsight) {
                return Err(OptionError(
                    "record=tree writes TPTP's aggregated form (agMethodEntry), which JinsightLive has no counterpart for: give format=tptp or tptp-xml with it".into(),
                ));
            }
        }
        if o.formats.contains(&Format::Orca) {
            if o.monitors_given == Some(false) {
                return Err(OptionError(
                    "format=orca writes concurrency events only: monitors=off leaves it nothing to write".into(),
                ));
            }
            o.monitors = true;
            if o.formats == [Format::Orca] {
                if o.tree {
                    return Err(OptionError("record=tree writes calling-context trees, which ORCA logs have no form for".into()));
                }
                // ORCA logs have no method, GC or allocation events: none is recorded.
                o.methods = Methods::Off;
                o.gc = Gc::Off;
                o.alloc = false;
            }
        } else if let Some(on) = o.monitors_given {
            o.monitors = on;
        }
        if o.plugin.is_some() {
            if !o.output_given {
                o.output = Output::Plugin;
            }
            if !o.objects_given {
                // A user library's method events carry their receivers.
                o.objects = true;
            }
        }
        if o.output == Output::Plugin {
            if o.file.is_some() || o.format_given || o.tree {
                return Err(OptionError(
                    "output=plugin writes no file: give output=both to have file=, format= or record= too".into(),
                ));
            }
            // The writer runs as ever, into nothing.
            o.file = Some(NO_FILE.to_string());
        }
        if let Some(addr) = o.live {
            if o.formats != [Format::Jinsight] || o.tree || o.gzip || o.output == Output::Plugin {
                return Err(OptionError(
                    "live= streams plain JinsightLive to the visualizer: it goes with format=binary only, without record=tree, compress= or output=plugin".into(),
                ));
            }
            if !addr.ip().is_loopback() && o.token.is_none() {
                return Err(OptionError(format!(
                    "live={} listens beyond this machine: give token=SECRET too (the client then sends `auth SECRET` first; the visualizer cannot, so reach it through ssh -L {}:127.0.0.1:{}), or use live={}",
                    addr,
                    addr.port(),
                    addr.port(),
                    addr.port()
                )));
            }
            if !o.start_given {
                o.paused = true;
            }
        } else if o.values {
            return Err(OptionError(
                "values=on serves the live visualizer's value filters: it goes with live=".into(),
            ));
        }

        if let Control::Tcp(addr) = &o.control {
            if !addr.ip().is_loopback() && o.token.is_none() {
                return Err(OptionError(format!(
                    "control=tcp:{} listens beyond this machine: give token=SECRET too, or use tcp:127.0.0.1:{}",
                    addr,
                    addr.port()
                )));
            }
        }
        Ok(o)
    }

    /// Whether method entries and exits are captured at all (an ORCA log alone has none: no
    /// instrumentation, no method events, whatever `capture` says).
    pub fn traces_methods(&self) -> bool {
        self.formats != [Format::Orca]
    }

    /// Whether method entries and exits are seen through instrumented bytecode: capture=bci,
    /// with methods traced.
    pub fn uses_bci(&self) -> bool {
        self.capture == Capture::Bci && self.traces_methods()
    }

    /// Whether capture=bci rewrites classes as they load from start-up (`instrument=load`),
    /// not from the first burst on.
    pub fn rewrites_at_load(&self) -> bool {
        self.uses_bci() && !self.instruments_lazily()
    }

    /// Whether classes are rewritten as they load: capture=bci, or monitors=on (the call
    /// sites of notify, start, join and sleep).
    pub fn uses_hook(&self) -> bool {
        self.uses_bci() || self.monitors
    }

    /// Whether classes are registered only when a record needs them (and Thread's subclasses
    /// as they load, for the sleep hooks): an ORCA log alone, with no user trace library,
    /// describes only the classes of its stack traces.
    pub fn registers_lazily(&self) -> bool {
        !self.traces_methods() && self.without_plugin()
    }

    /// Whether no user trace library takes the bursts (it may ask about any class).
    pub fn without_plugin(&self) -> bool {
        self.plugin.is_none() && self.output != Output::Plugin
    }

    /// Whether concurrency events name their objects by ID (every format but ORCA, which
    /// names them by hash code).
    pub fn monitor_object_ids(&self) -> bool {
        (self.monitors || self.live.is_some()) && self.formats.iter().any(|&f| f != Format::Orca)
    }

    /// Whether a burst opens at VM init.
    pub fn starts_at_init(&self) -> bool {
        !self.paused && self.delay.is_none()
    }

    /// Whether instrumented methods stay short enough for the JIT to inline (capture=bci). By
    /// default, when the JVM starts paused: while no burst records, C2 compiles the gate's calls
    /// away, and a padded method costs a paused Tomcat half its requests per second (32k/s
    /// against 59k, no agent 60k). A burst from start-up compiles with the calls in place,
    /// where inlining makes large compilations (h2 traced whole: 3.7 s against 3.0 padded).
    pub fn inlinable(&self) -> bool {
        self.inline.unwrap_or(!self.starts_at_init())
    }

    /// Whether capture=bci rewrites classes only when the first burst begins (retransforming
    /// those loaded by then). By default, when the JVM starts paused: until a burst asks for
    /// it, the JVM runs its classes as they are (javac paused: 1.54x of no agent with every
    /// class rewritten at load, 1.08x with none rewritten). Native methods of classes loaded
    /// before then stay unwrapped: a retransformation cannot add their wrappers.
    pub fn instruments_lazily(&self) -> bool {
        self.instrument_at_burst.unwrap_or(!self.starts_at_init())
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), OptionError> {
        match key {
            "monitors" => self.monitors_given = Some(on_off(key, value)?),
            "format" => {
                self.formats = formats(value)?;
                self.format_given = true;
            }
            "record" => {
                self.tree = match value {
                    "trace" => false,
                    "tree" => true,
                    _ => return Err(bad_value(key, value, "trace, tree")),
                }
            }
            "file" if value.is_empty() => return Err(bad_value(key, value, "a file path")),
            "file" => self.file = Some(value.to_string()),
            "capture" => match value {
                "events" => self.capture = Capture::Events,
                "bci" => self.capture = Capture::Bci,
                _ => return Err(bad_value(key, value, "events, bci")),
            },
            "methods" => {
                self.methods = match value {
                    "on" => Methods::On,
                    "entry" => Methods::Entry,
                    "off" => Methods::Off,
                    _ => return Err(bad_value(key, value, "on, entry, off")),
                }
            }
            "gc" => {
                self.gc = match value {
                    "light" => Gc::Light,
                    "on" => Gc::On,
                    "off" => Gc::Off,
                    _ => return Err(bad_value(key, value, "light, on, off")),
                }
            }
            "alloc" => self.alloc = on_off(key, value)?,
            "objects" => {
                self.objects = on_off(key, value)?;
                self.objects_given = true;
            }
            "plugin" if value.is_empty() => {
                return Err(bad_value(key, value, "the path of a user trace library"))
            }
            "plugin" => self.plugin = Some(value.to_string()),
            "output" => {
                self.output = match value {
                    "both" => Output::Both,
                    "plugin" => Output::Plugin,
                    "file" => Output::File,
                    _ => return Err(bad_value(key, value, "both, plugin, file")),
                };
                self.output_given = true;
            }
            "inline" => {
                self.inline = match value {
                    "auto" => None,
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => return Err(bad_value(key, value, "auto, on, off")),
                }
            }
            "instrument" => {
                self.instrument_at_burst = match value {
                    "auto" => None,
                    "load" => Some(false),
                    "burst" => Some(true),
                    _ => return Err(bad_value(key, value, "auto, load, burst")),
                }
            }
            "trampolines" => {
                self.jni_only = match value {
                    "auto" => false,
                    "jni" => true,
                    _ => return Err(bad_value(key, value, "auto, jni")),
                }
            }
            "include" => self.include = list(value),
            "exclude" => self.exclude = list(value),
            "clock" => {
                self.clock = Some(match value {
                    "tsc" => Clock::Tsc,
                    "monotonic" => Clock::Monotonic,
                    "stck" => Clock::Stck,
                    _ => return Err(bad_value(key, value, "tsc, monotonic, stck")),
                })
            }
            "platform" => self.platform = platform(value)?,
            "buffer" => self.buffer = size(key, value)?,
            "overflow" => {
                self.drop_when_behind = match value {
                    "wait" => false,
                    "drop" => true,
                    _ => return Err(bad_value(key, value, "wait, drop")),
                }
            }
            "compress" => self.gzip = match value {
                "off" => false,
                "gzip" => true,
                "zstd" => return Err(OptionError(
                    "compress=zstd is not built yet: compress=gzip (IBM's visualizer reads it too)"
                        .to_string(),
                )),
                _ => return Err(bad_value(key, value, "off, gzip")),
            },
            "filemode" => {
                self.filemode = u32::from_str_radix(value, 8)
                    .ok()
                    .filter(|&m| m <= 0o777 && value.len() <= 4)
                    .filter(|_| value.bytes().all(|b| (b'0'..=b'7').contains(&b)))
                    .ok_or_else(|| {
                        bad_value(key, value, "octal permissions such as 0600 or 0644")
                    })?
            }
            "log" => self.log = (value != "stderr" && !value.is_empty()).then(|| value.to_string()),
            "help" => self.help = true,
            "start" => {
                self.start_given = true;
                self.paused = match value {
                    "now" => false,
                    "paused" => true,
                    _ => return Err(bad_value(key, value, "now, paused")),
                }
            }
            "delay" => self.delay = Some(duration(key, value)?),
            "duration" => self.duration = Some(duration(key, value)?),
            "control" => self.control = control(value)?,
            "live" => self.live = Some(live(value)?),
            "values" => self.values = on_off(key, value)?,
            "token" if value.is_empty() => return Err(bad_value(key, value, "a secret")),
            "token" => self.token = Some(value.to_string()),
            "jvmpi" => {
                return Err(OptionError(
                    "jvmpi= must be the last option: everything after it is the JVMPI agent's"
                        .into(),
                ))
            }
            _ => return Err(unknown_key(key)),
        }
        Ok(())
    }

    /// The tick source: as asked, else STORE CLOCK values for the 390 platforms' traces and
    /// the TSC for the others.
    pub fn clock(&self) -> Clock {
        use jlive_writer::jinsight::{PLATFORM_LINUX_390, PLATFORM_OS390};
        self.clock.unwrap_or(match self.platform {
            Some(PLATFORM_LINUX_390 | PLATFORM_OS390) => Clock::Stck,
            _ => Clock::Tsc,
        })
    }

    /// The path of trace file number `n` (0 first, one more per roll) with %p, %t and %n
    /// filled in. Without %n, files after the first get `.N` before the extension. A
    /// compressed file's name ends in `.gz` (added if not given), which is how IBM's visualizer
    /// knows it.
    pub fn file_path(&self, pid: u32, start_epoch_secs: u64, n: u32) -> String {
        let gz = jlive_writer::gzip::SUFFIX;
        let path = self.plain_file_path(pid, start_epoch_secs, n);
        if !self.gzip {
            return path;
        }
        match path.strip_suffix(gz) {
            Some(_) => path,
            None => path + gz,
        }
    }

    fn plain_file_path(&self, pid: u32, start_epoch_secs: u64, n: u32) -> String {
        let default = match &self.formats[..] {
            [one] => format!("jlive-%p.{}", one.extension()),
            _ => "jlive-%p".to_string(),
        };
        let path = self.file.as_deref().unwrap_or(&default);
        let path = path
            .strip_suffix(jlive_writer::gzip::SUFFIX)
            .filter(|_| self.gzip)
            .unwrap_or(path)
            .replace("%p", &pid.to_string())
            .replace("%t", &utc_stamp(start_epoch_secs));
        if path.contains("%n") {
            return path.replace("%n", &n.to_string());
        }
        if n == 0 {
            return path;
        }
        let name_start = path.rfind('/').map_or(0, |i| i + 1);
        match path[name_start..].rfind('.') {
            Some(dot) if dot > 0 => {
                let at = name_start + dot;
                format!("{}.{}{}", &path[..at], n, &path[at..])
            }
            _ => format!("{}.{}", path, n),
        }
    }
}

fn unknown_key(key: &str) -> OptionError {
    let nearest = KEYS
        .iter()
        .map(|(k, _, _)| (distance(key, k), *k))
        .min()
        .filter(|(d, _)| *d <= 3)
        .map(|(_, k)| format!("; did you mean '{}'?", k))
        .unwrap_or_default();
    let valid: Vec<&str> = KEYS.iter().map(|(k, _, _)| *k).collect();
    OptionError(format!(
        "unknown option '{}'{} valid options: {}",
        key,
        nearest,
        valid.join(", ")
    ))
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// An option string with the value of `token=` hidden: what a trace file may say of it.
pub fn redacted(text: &str) -> String {
    let items = text.split(',').map(|item| match item.split_once('=') {
        Some((key, _)) if key.trim() == "token" => format!("{}=***", key),
        _ => item.to_string(),
    });
    items.collect::<Vec<_>>().join(",")
}

/// Seconds since the epoch as UTC `YYYYMMDDTHHMMSS`.
pub fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}",
        y,
        m,
        d,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The text `help` prints: every option with its values (default first).
/// `jvmpi=SPEC` splits the option string: (the options before it, SPEC = the rest of the
/// string, commas and all).
pub fn split_jvmpi(text: &str) -> Option<(&str, &str)> {
    let at = if text.starts_with("jvmpi=") {
        0
    } else {
        text.find(",jvmpi=")? + 1
    };
    Some((
        text[..at].trim_end_matches(','),
        &text[at + "jvmpi=".len()..],
    ))
}

pub fn help_text() -> String {
    let mut s = String::from(
        "jlive: usage: java -agentpath:/path/to/libjlive.so[=key=value,...] ...\n\
         jlive:        jlive attach PID [key=value ...]   (defaults there: capture=bci, start=paused)\n\
         jlive: options (values: default first):\n",
    );
    for (key, values, meaning) in KEYS {
        s.push_str(&format!("jlive:   {:<9} {:<28} {}\n", key, values, meaning));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_listens_on_loopback_pauses_and_takes_values_only_with_it() {
        let o = Options::parse("live=7777,values=on").unwrap();
        assert_eq!(o.live, Some("127.0.0.1:7777".parse().unwrap()));
        assert!(o.paused && o.values);
        assert!(!Options::parse("live=7777,start=now").unwrap().paused);
        assert!(Options::parse("values=on").unwrap_err().0.contains("live="));
        assert!(Options::parse("live=0.0.0.0:7777")
            .unwrap_err()
            .0
            .contains("token="));
        assert!(Options::parse("live=7777,format=tptp").is_err());
        assert!(Options::parse("live=nonsense").is_err());
    }

    #[test]
    fn record_tree_writes_tptp_unless_told_and_refuses_jinsightlive() {
        let o = Options::parse("record=tree").unwrap();
        assert!(o.tree);
        assert_eq!(o.formats, [Format::Tptp]);
        let o = Options::parse("record=tree,format=tptp-xml").unwrap();
        assert_eq!(o.formats, [Format::TptpXml]);
        let e = Options::parse("format=binary,record=tree").unwrap_err();
        assert!(e.0.contains("JinsightLive"), "{}", e.0);
        assert!(Options::parse("record=calls").is_err());
        assert!(!Options::parse("record=trace").unwrap().tree);
    }

    #[test]
    fn an_attached_agent_defaults_to_bci_and_paused_and_takes_the_rest_as_given() {
        let o = Options::parse_attached("").unwrap();
        assert_eq!((o.capture, o.paused), (Capture::Bci, true));
        let o = Options::parse_attached("start=now,file=x.trc").unwrap();
        assert_eq!((o.capture, o.paused), (Capture::Bci, false));
        assert_eq!(o.file.as_deref(), Some("x.trc"));
        assert_eq!(
            Options::parse_attached("capture=events").unwrap().capture,
            Capture::Events
        );
    }

    #[test]
    fn defaults_and_values() {
        assert_eq!(Options::parse("").unwrap(), Options::default());
        let o = Options::parse("format=binary,file=/tmp/x-%p.trc,methods=entry,gc=off,alloc=on,objects=on,include=com.acme.*;org.x.Y,platform=linux_390,buffer=1m,clock=monotonic").unwrap();
        assert_eq!(o.methods, Methods::Entry);
        assert_eq!(o.gc, Gc::Off);
        assert!(o.alloc && o.objects);
        assert_eq!(o.clock(), Clock::Monotonic);
        assert_eq!(o.include, ["com.acme.*", "org.x.Y"]);
        assert_eq!(o.platform, Some(55));
        assert_eq!(o.formats, [Format::Jinsight]);
        assert_eq!(o.buffer, 1 << 20);
        assert_eq!(
            o.filemode, 0o600,
            "trace files are the user's alone by default"
        );
        assert_eq!(Options::parse("filemode=0644").unwrap().filemode, 0o644);
        let gz = |text: &str, n| Options::parse(text).unwrap().file_path(7, 0, n);
        assert_eq!(gz("compress=gzip,file=/t/x.trc", 0), "/t/x.trc.gz");
        assert_eq!(gz("compress=gzip,file=/t/x.trc.gz", 2), "/t/x.2.trc.gz");
        assert_eq!(gz("compress=gzip,file=t-%n.trcbin", 3), "t-3.trcbin.gz");
        assert_eq!(gz("compress=gzip,format=tptp", 0), "jlive-7.trcbin.gz");
        assert_eq!(gz("compress=off,file=x.trc.gz", 1), "x.trc.1.gz");
        assert!(Options::parse("compress=zstd")
            .unwrap_err()
            .0
            .contains("gzip"));
        assert!(Options::parse("compress=yes").is_err());
        assert!(!o.drop_when_behind, "nothing is lost by default");
        assert!(Options::parse("overflow=drop").unwrap().drop_when_behind);
        assert!(Options::parse("overflow=some").is_err());
        assert_eq!(Options::parse("filemode=640").unwrap().filemode, 0o640);
        for bad in ["999", "1777", "", "rw-r--r--", "+644"] {
            let e = Options::parse(&format!("filemode={}", bad)).unwrap_err().0;
            assert!(e.contains("octal permissions"), "{}", e);
        }
        assert_eq!(o.file_path(42, 0, 0), "/tmp/x-42.trc");
        assert_eq!(o.file_path(42, 0, 2), "/tmp/x-42.2.trc");
        let o = Options::parse(
            "file=t-%n.trc,start=paused,delay=1.5s,duration=500ms,control=tcp:127.0.0.1:7070",
        )
        .unwrap();
        assert_eq!(o.file_path(1, 0, 3), "t-3.trc");
        assert!(o.paused && !o.starts_at_init());
        assert_eq!(o.delay, Some(Duration::from_millis(1500)));
        assert_eq!(o.duration, Some(Duration::from_millis(500)));
        assert_eq!(o.control, Control::Tcp("127.0.0.1:7070".parse().unwrap()));
        let e = Options::parse("control=tcp:0.0.0.0:7070").unwrap_err().0;
        assert!(e.contains("token=SECRET"), "{}", e);
        assert!(Options::parse("control=tcp:0.0.0.0:7070,token=s3cret").is_ok());
    }

    #[test]
    fn formats_files_and_clocks() {
        let path = |text: &str, n| Options::parse(text).unwrap().file_path(7, 0, n);
        assert_eq!(path("", 0), "jlive-7.trc");
        assert_eq!(path("format=tptp", 0), "jlive-7.trcbin");
        assert_eq!(path("format=tptp-xml", 1), "jlive-7.1.trcxml");
        // Several formats: each file takes its format's extension (jlive_writer::format::paths).
        assert_eq!(path("format=binary;tptp-xml", 0), "jlive-7");
        assert_eq!(path("format=binary;tptp-xml", 2), "jlive-7.2");
        let o = Options::parse("format=tptp;binary;tptp").unwrap();
        assert_eq!(o.formats, [Format::Tptp, Format::Jinsight]);
        let e = Options::parse("format=tptp;xml").unwrap_err().0;
        assert_eq!(
            e,
            "bad value 'tptp;xml' for option 'format': accepted binary (or jinsight), tptp, tptp-xml, orca"
        );
        let orca = Options::parse("format=orca,methods=on").unwrap();
        assert!(orca.monitors && orca.methods == Methods::Off && !orca.traces_methods());
        assert!(Options::parse("format=orca,monitors=off").is_err());
        let tptp = Options::parse("format=tptp,monitors=on").unwrap();
        assert!(tptp.monitors && tptp.monitor_object_ids() && tptp.traces_methods());
        assert!(!Options::parse("").unwrap().monitors);
        let both = Options::parse("format=binary;orca").unwrap();
        assert!(both.monitors && both.methods == Methods::On);
        let clock = |text: &str| Options::parse(text).unwrap().clock();
        assert_eq!(clock(""), Clock::Tsc);
        assert_eq!(clock("platform=linux_390"), Clock::Stck);
        assert_eq!(clock("platform=os390"), Clock::Stck);
        assert_eq!(clock("platform=os390,clock=tsc"), Clock::Tsc);
        assert_eq!(clock("clock=stck"), Clock::Stck);
    }

    #[test]
    fn bad_keys_suggest_the_nearest() {
        let e = Options::parse("fromat=binary").unwrap_err().0;
        assert!(
            e.contains("unknown option 'fromat'") && e.contains("did you mean 'format'"),
            "{}",
            e
        );
        let e = Options::parse("methods=maybe").unwrap_err().0;
        assert_eq!(
            e,
            "bad value 'maybe' for option 'methods': accepted on, entry, off"
        );
        // Too small, too large, or in a unit it does not take: each answer gives the range.
        for value in ["1", "1g", "128m", "lots"] {
            let e = Options::parse(&format!("buffer={}", value)).unwrap_err().0;
            assert!(
                e.ends_with("accepted a size from 4k to 64m, such as 64k or 1m"),
                "{}",
                e
            );
        }
    }

    #[test]
    fn jvmpi_takes_the_rest_of_the_string_whatever_it_holds() {
        assert_eq!(
            split_jvmpi("log=/tmp/l,jvmpi=/x/libp.so:heap=sites,cpu=times"),
            Some(("log=/tmp/l", "/x/libp.so:heap=sites,cpu=times"))
        );
        assert_eq!(split_jvmpi("jvmpi=hprof"), Some(("", "hprof")));
        assert_eq!(split_jvmpi("file=x.trc,capture=bci"), None);
        assert_eq!(split_jvmpi("file=myjvmpi=x"), None);
    }

    #[test]
    fn a_plugin_alone_gets_the_bursts_with_receivers_and_no_file() {
        let o = Options::parse("plugin=/x/libtrace.so").unwrap();
        assert_eq!(o.plugin.as_deref(), Some("/x/libtrace.so"));
        assert_eq!((o.output, o.objects), (Output::Plugin, true));
        assert!(!o.writes_file());
        assert_eq!(o.file_path(1, 0, 0), NO_FILE);
        let o = Options::parse("plugin=t.so,output=both,file=x.trc,objects=off").unwrap();
        assert_eq!((o.output, o.objects), (Output::Both, false));
        assert_eq!(o.file_path(1, 0, 0), "x.trc");
        let e = Options::parse("plugin=t.so,file=x.trc").unwrap_err().0;
        assert!(e.contains("output=both"), "{}", e);
        assert_eq!(Options::parse("").unwrap().output, Output::Both);
        assert!(Options::parse("output=maybe").is_err());
        assert!(Options::parse("plugin=").is_err());
    }

    #[test]
    fn instrumented_methods_stay_inlinable_when_the_jvm_starts_paused() {
        let inlinable = |text: &str| Options::parse(text).unwrap().inlinable();
        assert!(!inlinable(""));
        assert!(inlinable("start=paused"));
        assert!(inlinable("delay=2s"));
        assert!(!inlinable("start=paused,inline=off"));
        assert!(inlinable("inline=on"));
        assert!(!inlinable("start=paused,inline=on,inline=auto,start=now"));
        let e = Options::parse("inline=yes").unwrap_err().0;
        assert!(e.ends_with("accepted auto, on, off"), "{}", e);
    }

    #[test]
    fn classes_are_rewritten_at_the_first_burst_when_the_jvm_starts_paused() {
        let lazy = |text: &str| Options::parse(text).unwrap().instruments_lazily();
        assert!(!lazy(""));
        assert!(lazy("start=paused"));
        assert!(lazy("delay=2s"));
        assert!(lazy("live=7070"));
        assert!(!lazy("start=paused,instrument=load"));
        assert!(lazy("instrument=burst"));
        assert!(Options::parse_attached("").unwrap().instruments_lazily());
        let e = Options::parse("instrument=later").unwrap_err().0;
        assert!(e.ends_with("accepted auto, load, burst"), "{}", e);
    }

    #[test]
    fn the_token_is_not_written_into_traces() {
        assert_eq!(
            redacted("format=tptp,token=s3cret,control=tcp:0.0.0.0:7070"),
            "format=tptp,token=***,control=tcp:0.0.0.0:7070"
        );
        assert_eq!(redacted("file=a.trc"), "file=a.trc");
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000");
        assert_eq!(utc_stamp(1_795_263_480), "20261121T121800");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000");
    }
}
