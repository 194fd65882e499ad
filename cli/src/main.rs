//! The `jlive` command: run a Java program under the agent, and read traces back.

mod args;
mod attach;
mod ctl;
mod launch;
mod progress;

use args::{Command, ExportArgs, ExportFormat, Record};
use jlive_writer::check::check_reader;
use jlive_writer::format::Format;
use jlive_writer::read::{self, Trace};
use jlive_writer::record_tree::TreeSink;
use jlive_writer::sinks::{AnySink, FormatOptions};
use jlive_writer::stats::Stats;
use jlive_writer::tree::{Trees, Weight};
use progress::Reading;
use std::process::ExitCode;

/// Writes to stdout; a reader that stopped reading (`jlive stats T | head`) is not an error.
fn out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Usage errors and help are clap's (exit 2 and 0); a command that fails says why and exits 2;
/// `check` and `dump` exit 1 on a bad trace, `ctl` on an error answer, `run` with java's code.
fn main() -> ExitCode {
    let result = match args::parse().command {
        Command::Run { options, java } => launch::run(&options, &java),
        Command::Demo { options } => launch::demo(&options),
        Command::Dump { trace } => open(&trace).and_then(|file| dump(&trace, file)),
        Command::Check { trace } => open(&trace).and_then(|file| check_file(&trace, file)),
        Command::Stats { top, trace } => stats(top, &trace),
        Command::Tree { min, thread, trace } => tree(&trace, min, thread.as_deref()),
        Command::Export(export_args) => export(&export_args),
        Command::Convert {
            to,
            record,
            input,
            output,
        } => convert(to, record == Record::Tree, &input, &output),
        Command::Attach { pid, options } => attach::attach(pid, &options),
        Command::Ctl(ctl_args) => ctl::ctl(&ctl_args),
        Command::List => ctl::list(),
        Command::Completions { shell } => {
            args::completions(shell);
            Ok(0)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("jlive: {}", message);
            ExitCode::from(2)
        }
    }
}

/// A trace file to read (an ORCA event log with its meta log in front): check, dump and stats
/// decode it a chunk at a time, so that a trace of many gigabytes needs no more memory than a
/// small one.
fn open(path: &str) -> Result<Box<dyn std::io::Read + Send>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {}", path, e))?;
    Ok(jlive_writer::orca::open_with_meta(path, file))
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

/// `jlive convert [--to FORMAT] [--record tree|trace] IN OUT`; `tree`: --record tree.
fn convert(to: Option<Format>, tree: bool, input: &str, output: &str) -> Result<u8, String> {
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

/// `jlive export TRACE --to FORMAT [--weight self|calls] [--thread NAME] [-o OUT]`.
fn export(args: &ExportArgs) -> Result<u8, String> {
    let path = args.trace.as_str();
    let (thread, output) = (args.thread.as_deref(), args.output.as_deref());
    let weight = args.weight.weight();
    match args.to {
        ExportFormat::Collapsed | ExportFormat::Svg => {}
        timeline => {
            if thread.is_some() {
                return Err("--thread goes with --to collapsed or svg".into());
            }
            return export_timeline(path, timeline, output);
        }
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
    let svg = args.to == ExportFormat::Svg;
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

/// `jlive export TRACE --to perfetto|chrome|speedscope [-o OUT]`: the exports that stream the
/// trace's events.
fn export_timeline(path: &str, to: ExportFormat, output: Option<&str>) -> Result<u8, String> {
    use jlive_writer::export::{chrome, perfetto, speedscope, ExportError};
    if to == ExportFormat::Perfetto
        && output.is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
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
        ExportFormat::Chrome => chrome::export(input, out),
        ExportFormat::Perfetto => perfetto::export(input, out, &title),
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
fn tree(path: &str, min: f64, thread: Option<&str>) -> Result<u8, String> {
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

/// `jlive stats [--top N] TRACE`: of a trace, or of a heap graph (`jlive ctl heap`).
fn stats(top: usize, path: &str) -> Result<u8, String> {
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
