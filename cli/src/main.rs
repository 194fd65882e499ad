//! The `jlive` command: run a Java program under the agent, and read traces back.

mod attach;
mod ctl;
mod launch;
mod progress;

use jlive_writer::check::check_reader;
use jlive_writer::format::{AnySink, Format, FormatOptions};
use jlive_writer::read::{self, Trace};
use jlive_writer::record_tree::TreeSink;
use jlive_writer::stats::Stats;
use jlive_writer::tree::{Trees, Weight};
use progress::Reading;
use std::process::ExitCode;

const USAGE: &str = "\
jlive — a tracing profiler that lives inside the JVM

usage:
  jlive run [AGENT OPTIONS] -- java [JAVA ARGS...]
        run java with libjlive.so loaded; agent options as key=value or --key value
        (e.g. jlive run --file app.trc -- java -jar app.jar)
  jlive demo [AGENT OPTIONS]
        trace the bundled demo program and print what it recorded
  jlive dump TRACE      one event per line, names resolved
  jlive check TRACE     verify a trace; exit 1 naming the offset (or line) of the first problem
  jlive stats [--top N] TRACE
        events by type, threads, top methods by calls and by self time; with concurrency
        events (format=orca), the most contended monitors and each thread's waits, joins
        and sleeps; of a heap graph (jlive ctl heap), objects and bytes by class and the
        largest retainers
  (an ORCA event log is read with its meta log, TRACE.meta, when there is one)
  jlive tree [--min PERCENT] [--thread NAME] TRACE
        each thread's calling-context tree: calls, inclusive and self time, share of the
        thread's traced time; contexts under PERCENT (default 1) left out
  jlive export TRACE --to FORMAT [--weight self|calls] [--thread NAME] [-o OUT]
        perfetto: Perfetto's protobuf trace (ui.perfetto.dev), a track per thread, a
        slice per call, GC, user events and bursts as instants; chrome: trace-event
        JSON (chrome://tracing, Perfetto's UI), for small traces; speedscope: its
        evented JSON, a profile per thread; collapsed: folded stacks for flame graphs,
        a line per calling context, the thread's name first, weighed by self time in
        ns (or calls); svg: their flame graph (contexts under 0.01% of their thread's
        time left out); --thread: one thread's only. Written to stdout without -o
  jlive convert [--to FORMAT] [--record tree] IN OUT
        write a trace in another format: binary (JinsightLive, .trc), tptp (.trcbin),
        tptp-xml (.trcxml); the format of OUT from --to or its extension; an OUT
        ending in .gz is compressed; --record tree: each burst's calling-context trees
        instead of its method events (TPTP only), as record=tree writes them
  jlive attach PID [AGENT OPTIONS]
        load jlive into a running HotSpot JVM (JDK 11+) through its attach mechanism, as
        the JVM's user; attached, start=paused is the default (bursts from jlive ctl)
        and capture=bci the only capture; see jlive attach --help
  jlive ctl [--pid PID | --socket PATH | --tcp HOST:PORT [--token T]] COMMAND
        drive a running JVM: start [label] | stop | mark TEXT | status | roll | flush | help
        | heap FILE (the live heap's object reference graph, written by the JVM to FILE
        while the program waits; jlive stats FILE summarises it)
        (without --pid: the only running JVM with a socket in $TMPDIR/jlive-$UID)
  jlive list            JVMs on this machine with a live jlive socket
  jlive help            this text (so does COMMAND --help); agent options: jlive run help -- java

TRACE may be in any format jlive writes, gzip-compressed or not (compress=gzip); its
format is found by its first bytes.
libjlive.so is looked up in $JLIVE_LIB, next to this program, then in ../lib.
";

/// Writes to stdout; a reader that stopped reading (`jlive stats T | head`) is not an error.
fn out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => {
            eprint!("{}", USAGE);
            return ExitCode::from(2);
        }
    };
    if matches!(rest.first().map(String::as_str), Some("--help" | "-h")) {
        out(if command == "attach" {
            attach::USAGE
        } else {
            USAGE
        });
        return ExitCode::SUCCESS;
    }
    let result = match command {
        "run" => launch::run(rest),
        "ctl" => ctl::ctl(rest),
        "attach" => attach::attach(rest),
        "list" => ctl::list(),
        "demo" => launch::demo(rest),
        "dump" => with_file(rest, dump),
        "check" => with_file(rest, check_file),
        "stats" => stats(rest),
        "tree" => tree(rest),
        "export" => export(rest),
        "convert" => convert(rest),
        "help" | "--help" | "-h" => {
            out(USAGE);
            Ok(0)
        }
        other => Err(format!("unknown command '{}'\n\n{}", other, USAGE)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("jlive: {}", message);
            ExitCode::from(2)
        }
    }
}

/// A trace opened for reading: check, dump and stats decode it a chunk at a time, so that a
/// trace of many gigabytes needs no more memory than a small one.
/// A trace file to read (an ORCA event log with its meta log in front).
fn open(path: &str) -> Result<Box<dyn std::io::Read + Send>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {}", path, e))?;
    Ok(jlive_writer::orca::open_with_meta(path, file))
}

fn with_file(
    args: &[String],
    f: fn(&str, Box<dyn std::io::Read + Send>) -> Result<u8, String>,
) -> Result<u8, String> {
    match args {
        [path] => f(path, open(path)?),
        _ => Err(format!("expected one trace file\n\n{}", USAGE)),
    }
}

fn dump(_path: &str, file: Box<dyn std::io::Read + Send>) -> Result<u8, String> {
    use std::fmt::Write as _;
    use std::io::Write;
    let mut events = read::open(file).map_err(|e| e.to_string())?;
    let info = events.info().clone();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let _ = writeln!(
        out,
        "{} {} ticksPerMicrosecond={} startTicks={} pid={} host={:?} options={:?}",
        events.format().name(),
        events.header(),
        info.ticks_per_microsecond,
        info.start_ticks,
        info.pid,
        info.host,
        info.options
    );
    // Names are resolved from what has been read so far: definitions precede their use.
    let mut names = Trace::empty(events.format(), info);
    // One line reused for every event: a trace holds tens of millions.
    let mut line = String::new();
    loop {
        match events.next_event() {
            Ok(Some((at, event))) => {
                names.learn(&event);
                line.clear();
                let _ = write!(line, "{:>10} ", at);
                names.describe_into(&mut line, &event);
                line.push('\n');
                if out.write_all(line.as_bytes()).is_err() {
                    return Ok(0); // stdout closed (e.g. piped into head)
                }
            }
            Ok(None) => return Ok(0),
            Err(e) => {
                let _ = out.flush();
                eprintln!("jlive: {}", e);
                return Ok(1);
            }
        }
    }
}

fn check_file(path: &str, file: Box<dyn std::io::Read + Send>) -> Result<u8, String> {
    match check_reader(file) {
        Ok(s) => {
            out(&format!(
                "{}: ok: {} events, {} bursts, {} threads, {} classes, {} objects ({}){}\n",
                path,
                s.events,
                s.bursts,
                s.threads,
                s.classes,
                s.objects,
                s.format.map_or("?", |f| f.name()),
                if s.syncs > 0 {
                    format!(
                        "; {} concurrency events, every wait, join, sleep and contended enter ended but {} still open at the end",
                        s.syncs, s.open_syncs
                    )
                } else {
                    String::new()
                }
            ));
            Ok(0)
        }
        Err(e) => {
            out(&format!(
                "{}: bad at {}: {}\n",
                path,
                e.position(),
                e.message
            ));
            Ok(1)
        }
    }
}

/// `jlive convert [--to FORMAT] [--record tree] IN OUT`.
fn convert(args: &[String]) -> Result<u8, String> {
    let mut args = args.to_vec();
    let mut tree = false;
    if let Some(at) = args.iter().position(|a| a == "--record") {
        tree = match args.get(at + 1).map(String::as_str) {
            Some("tree") => true,
            Some("trace") => false,
            _ => return Err("--record trace (every event) or tree (calling-context trees)".into()),
        };
        args.drain(at..at + 2);
    }
    let (to, input, output) = match args.as_slice() {
        [flag, name, input, output] if flag == "--to" => (
            Some(Format::parse(name).ok_or_else(|| {
                format!(
                    "unknown format '{}': accepted {}",
                    name,
                    jlive_writer::format::FORMAT_NAMES
                )
            })?),
            input,
            output,
        ),
        [input, output] => (None, input, output),
        _ => return Err(format!("expected [--to FORMAT] IN OUT\n\n{}", USAGE)),
    };
    let format = to.or_else(|| Format::of_path(output)).ok_or_else(|| {
        format!(
            "which format should {} be? Give --to binary|tptp|tptp-xml or end its name in .trc, .trcbin or .trcxml (.gz after it compresses)",
            output
        )
    })?;
    let mut events = read::open(open(input)?).map_err(|e| format!("{}: {}", input, e))?;
    if (events.format() == Format::Orca) != (format == Format::Orca) {
        return Err(format!(
            "{} is {} and {} would be {}: ORCA logs hold concurrency events only, which the other formats do not carry in this build",
            input,
            events.format().name(),
            output,
            format.name()
        ));
    }
    let info = events.info().clone();
    let options = FormatOptions {
        gzip: output.ends_with(jlive_writer::gzip::SUFFIX),
        ..FormatOptions::default()
    };
    if tree && format == Format::Jinsight {
        return Err("--record tree writes TPTP's aggregated form (agMethodEntry), which JinsightLive has no counterpart for: --to tptp or tptp-xml".into());
    }
    let sink = AnySink::create(&[format], output, &info, options)
        .map_err(|e| format!("cannot create {}: {}", output, e))?;
    let copied = if tree {
        read::copy(&mut *events, &mut TreeSink::new(sink))
    } else {
        read::copy(&mut *events, &mut { sink })
    };
    let cut = copied.map_err(|e| format!("{}: {}", input, e))?;
    if let Some(at) = cut {
        eprintln!(
            "jlive: {}: the file ends inside an event (at {}): converted up to it",
            input, at
        );
    }
    out(&format!("{} -> {} ({})\n", input, output, format.name()));
    Ok(0)
}

/// `jlive export TRACE --to collapsed [--weight self|calls] [-o OUT]`.
fn export(args: &[String]) -> Result<u8, String> {
    let mut to: Option<&str> = None;
    let mut weight = Weight::SelfTime;
    let mut output: Option<&str> = None;
    let mut path: Option<&str> = None;
    let mut thread: Option<&str> = None;
    let mut words = args.iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "--to" => to = Some(words.next().ok_or("--to needs a format")?),
            "--thread" => thread = Some(words.next().ok_or("--thread needs a thread name")?),
            "--weight" => {
                weight = match words.next().map(String::as_str) {
                    Some("self") => Weight::SelfTime,
                    Some("calls") => Weight::Calls,
                    _ => return Err("--weight self (nanoseconds of self time) or calls".into()),
                }
            }
            "-o" => output = Some(words.next().ok_or("-o needs a file")?),
            p if path.is_none() && !p.starts_with('-') => path = Some(p),
            other => return Err(format!("unexpected '{}'\n\n{}", other, USAGE)),
        }
    }
    let path = path.ok_or_else(|| format!("expected a trace file\n\n{}", USAGE))?;
    match to {
        Some("collapsed" | "svg") => {}
        Some(to @ ("chrome" | "perfetto" | "speedscope")) => {
            if thread.is_some() {
                return Err("--thread goes with --to collapsed or svg".into());
            }
            return export_timeline(path, to, output);
        }
        Some(other) => {
            return Err(format!(
                "unknown export format '{}': {}",
                other, EXPORT_TARGETS
            ))
        }
        None => return Err(format!("which format? --to {}", EXPORT_TARGETS)),
    }
    let (mut trees, names) =
        Trees::of_reader(Reading::open(path)?).map_err(|e| format!("{}: {}", path, e))?;
    if let Some(name) = thread {
        trees.threads.retain(|&id, _| names.thread_name(id) == name);
        if trees.threads.is_empty() {
            return Err(format!(
                "{}: no thread named '{}' made traced calls",
                path, name
            ));
        }
    }
    let svg = to == Some("svg");
    // A flame graph cannot show what is under 0.01% of a thread: left out before it is drawn.
    let min = if svg { 0.01 } else { 0.0 };
    let write = |w: &mut dyn std::io::Write| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(w);
        if svg {
            let mut folded = Vec::new();
            trees.collapsed(&names, weight, min, &mut folded)?;
            let folded = String::from_utf8_lossy(&folded);
            let mut o = inferno::flamegraph::Options::default();
            o.title = format!("jlive: {}", path);
            o.count_name = match weight {
                Weight::SelfTime => "ns".to_string(),
                Weight::Calls => "calls".to_string(),
            };
            inferno::flamegraph::from_lines(&mut o, folded.lines(), &mut w)?;
        } else {
            trees.collapsed(&names, weight, min, &mut w)?;
        }
        std::io::Write::flush(&mut w)
    };
    let written = match output {
        Some(o) => {
            let mut file =
                std::fs::File::create(o).map_err(|e| format!("cannot create {}: {}", o, e))?;
            write(&mut file).map_err(|e| format!("cannot write {}: {}", o, e))
        }
        None => {
            // A reader that stopped reading (| head) is not an error.
            let _ = write(&mut std::io::stdout().lock());
            Ok(())
        }
    };
    written?;
    if let Some(at) = names.cut_at {
        eprintln!(
            "jlive: {}: the file ends inside its last event (at {}): exported what came before",
            path, at
        );
    }
    Ok(0)
}

const EXPORT_TARGETS: &str = "perfetto, chrome, speedscope, collapsed or svg";

/// `jlive export TRACE --to perfetto|chrome|speedscope [-o OUT]`: the exports that stream the
/// trace's events.
fn export_timeline(path: &str, to: &str, output: Option<&str>) -> Result<u8, String> {
    use jlive_writer::export::{chrome, perfetto, speedscope, ExportError};
    if to == "perfetto" && output.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        return Err("a Perfetto trace is binary: give -o FILE (or redirect stdout)".into());
    }
    let input = Reading::open(path)?;
    let title = std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned());
    let out: Box<dyn std::io::Write> = match output {
        Some(o) => {
            Box::new(std::fs::File::create(o).map_err(|e| format!("cannot create {}: {}", o, e))?)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    let out = std::io::BufWriter::with_capacity(1 << 20, out);
    let done = match to {
        "chrome" => chrome::export(input, out),
        "perfetto" => perfetto::export(input, out, &title),
        _ => speedscope::export(input, out, &title),
    };
    let cut = match done {
        Ok(cut) => cut,
        Err(ExportError::Read(e)) => return Err(format!("{}: {}", path, e)),
        // A reader that stopped reading (| head) is not an error.
        Err(ExportError::Write(e))
            if output.is_none() && e.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            None
        }
        Err(ExportError::Write(e)) => {
            return Err(format!(
                "cannot write {}: {}",
                output.unwrap_or("stdout"),
                e
            ))
        }
    };
    if let Some(at) = cut {
        eprintln!(
            "jlive: {}: the file ends inside its last event (at {}): exported what came before",
            path, at
        );
    }
    Ok(0)
}

/// `jlive tree [--min PERCENT] [--thread NAME] TRACE`.
fn tree(args: &[String]) -> Result<u8, String> {
    let mut min = 1.0f64;
    let mut thread: Option<&str> = None;
    let mut path: Option<&str> = None;
    let mut words = args.iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "--min" => {
                let v = words.next().ok_or("--min needs a percentage")?;
                min = v
                    .trim_end_matches('%')
                    .parse()
                    .ok()
                    .filter(|m: &f64| (0.0..=100.0).contains(m))
                    .ok_or_else(|| format!("bad --min value {}: a percentage, 0 to 100", v))?;
            }
            "--thread" => thread = Some(words.next().ok_or("--thread needs a thread name")?),
            p if path.is_none() && !p.starts_with("--") => path = Some(p),
            other => return Err(format!("unexpected '{}'\n\n{}", other, USAGE)),
        }
    }
    let path = path.ok_or_else(|| format!("expected a trace file\n\n{}", USAGE))?;
    let (trees, names) =
        Trees::of_reader(Reading::open(path)?).map_err(|e| format!("{}: {}", path, e))?;
    let report = trees.report(&names, min, thread);
    if report.is_empty() {
        return Err(match thread {
            Some(t) => format!("{}: no thread named '{}' made traced calls", path, t),
            None => format!("{}: no traced calls", path),
        });
    }
    out(&report);
    if let Some(at) = names.cut_at {
        eprintln!(
            "jlive: {}: the file ends inside its last event (at {}): the tree is of what came before",
            path, at
        );
    }
    Ok(0)
}

fn stats(args: &[String]) -> Result<u8, String> {
    let (top, path) = match args {
        [path] => (15, path),
        [flag, n, path] if flag == "--top" => (
            n.parse().map_err(|_| format!("bad --top value {}", n))?,
            path,
        ),
        _ => return Err(format!("expected [--top N] TRACE\n\n{}", USAGE)),
    };
    let mut head = [0u8; 6];
    let heap = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && jlive_writer::heap::is_heap(&head);
    if heap {
        let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {}", path, e))?;
        let graph = jlive_writer::heap::read(&data).map_err(|e| format!("{}: {}", path, e))?;
        let summary = jlive_writer::heap::summarize(&graph, top);
        out(&jlive_writer::heap::render(&summary, top));
        return Ok(0);
    }
    let length = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let mut magic = [0u8; 2];
    let compressed = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == jlive_writer::gzip::MAGIC;
    let (stats, cut_at) =
        Stats::of_reader(Reading::open(path)?).map_err(|e| format!("{}: {}", path, e))?;
    out(&stats.report(top));
    if let Some(at) = cut_at {
        let rest = match stats.format {
            Some(f) if f.is_text() => "the last line is left out".to_string(),
            _ if compressed => "what decompressed after it is left out".to_string(),
            _ => format!(
                "the {} bytes from there are left out",
                length.saturating_sub(at)
            ),
        };
        eprintln!(
            "jlive: {}: the file ends inside its last event (at {}; the JVM was stopped while it wrote?): {}",
            path, at, rest
        );
    }
    Ok(0)
}
