//! The `jlive` command line as clap parses it: a variant per command, with its options and the
//! help each shows. `jlive help` (and `jlive --help`) prints every command's synopsis and
//! description from these same definitions, as the man page (packaging/jlive.1.in) holds it;
//! `jlive COMMAND --help` is clap's help of that command.
//!
//! The agent options of `run`, `demo` and `attach` are the agent's, open-ended: they are taken
//! here as raw words (`key=value`, `--key value`, `--key=value`) and handed to
//! `launch::agent_options` as before, never listed in clap.

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;
use jlive_writer::format::Format;
use jlive_writer::tree::Weight;
use std::ffi::OsString;

const ABOUT: &str = "jlive — a tracing profiler that lives inside the JVM";

const RUN: &str = "\
run java with libjlive.so loaded; agent options as key=value, --key value or --key=value
(e.g. jlive run --file app.trc -- java -jar app.jar); exits with java's exit code;
the agent's own list of options: jlive run help -- java";

const DEMO: &str = "\
trace the bundled demo program and print what it recorded (into jlive-demo.trc unless
file= says otherwise); agent options as for jlive run";

const STATS: &str = "\
events by type, threads, top methods by calls and by self time; with concurrency
events (format=orca), the most contended monitors and each thread's waits, joins
and sleeps; of a heap graph (jlive ctl heap), objects and bytes by class and the
largest retainers";

const TREE: &str = "\
each thread's calling-context tree: calls, inclusive and self time, share of the
thread's traced time; contexts under PERCENT (default 1) left out";

const EXPORT: &str = "\
perfetto: Perfetto's protobuf trace (ui.perfetto.dev), a track per thread, a
slice per call, GC, user events and bursts as instants; chrome: trace-event
JSON (chrome://tracing, Perfetto's UI), for small traces; speedscope: its
evented JSON, a profile per thread; collapsed: folded stacks for flame graphs,
a line per calling context, the thread's name first, weighed by self time in
ns (or calls); svg: their flame graph (contexts under 0.01% of their thread's
time left out); --thread: one thread's only. Written to stdout without -o";

const CONVERT: &str = "\
write a trace in another format: binary (JinsightLive, .trc), tptp (.trcbin),
tptp-xml (.trcxml); the format of OUT from --to or its extension; an OUT
ending in .gz is compressed; --record tree: each burst's calling-context trees
instead of its method events (TPTP only), as record=tree writes them";

const ATTACH: &str = "\
load libjlive.so into the running HotSpot JVM PID (JDK 11 or newer) through the JVM's
attach mechanism, as the JVM's user; no JDK tool needed. Agent options as for jlive run
(key=value or --key value); attached, start=paused is their default: bursts then come
from jlive ctl --pid PID start/stop. A running JVM gives method entry and exit events
only to agents loaded at start-up, so capture=bci is the only capture and capture=events
is refused. Attaching again to a JVM that has jlive says so and changes nothing";

const CTL: &str = "\
drive a running JVM: start [label] | stop | mark TEXT | status | roll | flush | help
| heap FILE (the live heap's object reference graph, written by the JVM to FILE
while the program waits; jlive stats FILE summarises it); exit 1 on an error answer
(without --pid, --socket or --tcp: the only running JVM with a socket in $TMPDIR/jlive-$UID)";

const COMPLETIONS: &str = "\
print jlive's completion script for SHELL (bash, zsh, fish, elvish or powershell), e.g.
jlive completions bash > ~/.local/share/bash-completion/completions/jlive";

/// The `jlive help` line, which clap's own help subcommand answers.
const HELP: &str = concat!(
    "  jlive help [COMMAND]\n",
    "        this text (so does jlive --help); a command's options: jlive COMMAND --help\n",
    "        or jlive help COMMAND; the agent's options: jlive run help -- java\n",
);

const FOOTER: &str = "\
(an ORCA event log is read with its meta log, TRACE.meta, when there is one)
TRACE may be in any format jlive writes, gzip-compressed or not (compress=gzip); its
format is found by its first bytes. On a terminal, stats, tree and export show a
progress line once the reading has taken two seconds.
libjlive.so is looked up in $JLIVE_LIB, next to this program, then in ../lib.
";

#[derive(Parser, Debug)]
#[command(name = "jlive", version, about = ABOUT, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    #[command(
        override_usage = "jlive run [AGENT OPTIONS] -- java [JAVA ARGS...]",
        about = "run java with libjlive.so loaded",
        long_about = RUN
    )]
    Run {
        // Up to `--` (the terminator): then the java command, taken whole.
        #[arg(
            value_name = "AGENT OPTIONS",
            num_args = 1..,
            allow_hyphen_values = true,
            value_terminator = "--",
            help = "agent options: key=value, --key value or --key=value"
        )]
        options: Vec<String>,
        #[arg(
            value_name = "JAVA COMMAND",
            num_args = 1..,
            allow_hyphen_values = true,
            trailing_var_arg = true,
            help = "after --: the java program and its arguments"
        )]
        java: Vec<String>,
    },
    #[command(
        override_usage = "jlive demo [AGENT OPTIONS]",
        about = "trace the bundled demo program and print what it recorded",
        long_about = DEMO
    )]
    Demo {
        #[arg(
            value_name = "AGENT OPTIONS",
            num_args = 1..,
            allow_hyphen_values = true,
            trailing_var_arg = true,
            help = "agent options, as for jlive run"
        )]
        options: Vec<String>,
    },
    #[command(
        override_usage = "jlive dump TRACE",
        about = "one event per line, names resolved"
    )]
    Dump {
        #[arg(value_name = "TRACE", help = "the trace to read")]
        trace: String,
    },
    #[command(
        override_usage = "jlive check TRACE",
        about = "verify a trace; exit 1 naming the offset (or line) of the first problem"
    )]
    Check {
        #[arg(value_name = "TRACE", help = "the trace to verify")]
        trace: String,
    },
    #[command(
        override_usage = "jlive stats [--top N] TRACE",
        about = "events by type, threads, top methods by calls and by self time",
        long_about = STATS
    )]
    Stats {
        #[arg(
            long,
            value_name = "N",
            default_value_t = 15,
            help = "the length of each ranking"
        )]
        top: usize,
        #[arg(
            value_name = "TRACE",
            help = "a trace, or a heap graph from jlive ctl heap"
        )]
        trace: String,
    },
    #[command(
        override_usage = "jlive tree [--min PERCENT] [--thread NAME] TRACE",
        about = "each thread's calling-context tree",
        long_about = TREE
    )]
    Tree {
        #[arg(
            long,
            value_name = "PERCENT",
            default_value = "1",
            value_parser = percent,
            help = "leave out contexts under PERCENT of their thread's traced time (0 to 100)"
        )]
        min: f64,
        #[arg(
            long,
            value_name = "NAME",
            allow_hyphen_values = true,
            help = "the tree of the thread NAME only"
        )]
        thread: Option<String>,
        #[arg(value_name = "TRACE", help = "the trace to read")]
        trace: String,
    },
    #[command(
        override_usage = "jlive export TRACE --to FORMAT [--weight self|calls] [--thread NAME] [-o OUT]",
        about = "a trace for a viewer: perfetto, chrome, speedscope, collapsed or svg",
        long_about = EXPORT
    )]
    Export(ExportArgs),
    #[command(
        override_usage = "jlive convert [--to FORMAT] [--record tree|trace] IN OUT",
        about = "write a trace in another format",
        long_about = CONVERT
    )]
    Convert {
        #[arg(
            long,
            value_name = "FORMAT",
            value_parser = format_name,
            help = "binary, tptp or tptp-xml (without it: OUT's extension says which)"
        )]
        to: Option<Format>,
        #[arg(
            long,
            value_enum,
            value_name = "RECORD",
            default_value_t = Record::Trace,
            help = "tree: each burst's calling-context trees instead of its events (TPTP only)"
        )]
        record: Record,
        #[arg(value_name = "IN", help = "the trace to read")]
        input: String,
        #[arg(
            value_name = "OUT",
            help = "the file to write (compressed if it ends in .gz)"
        )]
        output: String,
    },
    #[command(
        override_usage = "jlive attach PID [AGENT OPTIONS]",
        about = "load jlive into a running HotSpot JVM (JDK 11+)",
        long_about = ATTACH
    )]
    Attach {
        #[arg(value_name = "PID", help = "the JVM's process id")]
        pid: u32,
        #[arg(
            value_name = "AGENT OPTIONS",
            num_args = 1..,
            allow_hyphen_values = true,
            trailing_var_arg = true,
            help = "agent options, as for jlive run"
        )]
        options: Vec<String>,
    },
    #[command(
        override_usage = "jlive ctl [--pid PID | --socket PATH | --tcp HOST:PORT [--token T]] COMMAND",
        about = "drive a running JVM",
        long_about = CTL
    )]
    Ctl(CtlArgs),
    #[command(
        override_usage = "jlive list",
        about = "JVMs on this machine with a live jlive socket: pid, state, main class, file"
    )]
    List,
    #[command(
        override_usage = "jlive completions SHELL",
        about = "print a shell completion script",
        long_about = COMPLETIONS
    )]
    Completions {
        #[arg(value_enum, value_name = "SHELL", help = "the shell")]
        shell: Shell,
    },
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[arg(value_name = "TRACE", help = "the trace to read")]
    pub trace: String,
    #[arg(long, value_enum, value_name = "FORMAT", help = "the format to write")]
    pub to: ExportFormat,
    #[arg(
        long,
        value_enum,
        value_name = "WEIGHT",
        default_value_t = WeightArg::SelfTime,
        help = "what weighs a folded stack: self time in ns, or calls (collapsed, svg)"
    )]
    pub weight: WeightArg,
    #[arg(
        long,
        value_name = "NAME",
        allow_hyphen_values = true,
        help = "the thread NAME's contexts only (collapsed, svg)"
    )]
    pub thread: Option<String>,
    #[arg(
        short = 'o',
        long = "output",
        value_name = "OUT",
        help = "the file to write (stdout without it)"
    )]
    pub output: Option<String>,
}

#[derive(Args, Debug)]
pub struct CtlArgs {
    #[arg(
        long,
        value_name = "PID",
        conflicts_with_all = ["socket", "tcp"],
        help = "the JVM PID, through its socket in $TMPDIR/jlive-$UID"
    )]
    pub pid: Option<u32>,
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "tcp",
        help = "the JVM whose control socket is PATH (control=PATH)"
    )]
    pub socket: Option<String>,
    #[arg(
        long,
        value_name = "HOST:PORT",
        help = "the JVM listening there (control=tcp:HOST:PORT)"
    )]
    pub tcp: Option<String>,
    #[arg(
        long,
        value_name = "T",
        requires = "tcp",
        help = "the token that JVM asks for (token=T)"
    )]
    pub token: Option<String>,
    #[arg(
        value_name = "COMMAND",
        required = true,
        num_args = 1..,
        allow_hyphen_values = true,
        trailing_var_arg = true,
        help = "start [label] | stop | mark TEXT | status | roll | flush | heap FILE | help"
    )]
    pub command: Vec<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Perfetto,
    Chrome,
    Speedscope,
    Collapsed,
    Svg,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightArg {
    #[value(name = "self")]
    SelfTime,
    Calls,
}

impl WeightArg {
    pub fn weight(self) -> Weight {
        match self {
            WeightArg::SelfTime => Weight::SelfTime,
            WeightArg::Calls => Weight::Calls,
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    Trace,
    Tree,
}

/// `--min`: a percentage, 0 to 100, with or without its `%`.
fn percent(value: &str) -> Result<f64, String> {
    value
        .trim_end_matches('%')
        .parse()
        .ok()
        .filter(|m: &f64| (0.0..=100.0).contains(m))
        .ok_or_else(|| "a percentage, 0 to 100".to_string())
}

/// `convert --to`: a format's name as `format=` takes it.
fn format_name(name: &str) -> Result<Format, String> {
    Format::parse(name).ok_or_else(|| {
        format!(
            "unknown format: accepted {}",
            jlive_writer::format::FORMAT_NAMES
        )
    })
}

/// The command line's definition, its help the full text of every command.
pub fn command() -> clap::Command {
    let command = Cli::command();
    let help = full_help(&command);
    command.override_help(help)
}

/// The words of this process's command line, parsed; on a usage error, or for help, clap
/// prints and exits (2 after an error on stderr, 0 after help on stdout).
pub fn parse() -> Cli {
    try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

pub fn try_parse_from<I, T>(words: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut command = command();
    let matches = command.try_get_matches_from_mut(words)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

/// `jlive completions SHELL`.
pub fn completions(shell: Shell) {
    clap_complete::generate(shell, &mut command(), "jlive", &mut std::io::stdout());
}

/// `jlive help`: each command's synopsis (its usage) and description, in the order defined.
fn full_help(command: &clap::Command) -> String {
    let mut text = format!("{}\n\nusage:\n", ABOUT);
    for sub in command.get_subcommands() {
        let usage = sub.clone().render_usage().to_string();
        let usage = usage.strip_prefix("Usage:").unwrap_or(&usage).trim();
        text.push_str("  ");
        text.push_str(usage);
        text.push('\n');
        let about = sub.get_long_about().or_else(|| sub.get_about());
        let about = about.map(|a| a.to_string()).unwrap_or_default();
        for line in about.lines() {
            text.push_str("        ");
            text.push_str(line);
            text.push('\n');
        }
    }
    text.push_str(HELP);
    text.push('\n');
    text.push_str(FOOTER);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<Command, clap::Error> {
        try_parse_from(std::iter::once("jlive").chain(words.iter().copied())).map(|c| c.command)
    }

    #[test]
    fn the_definitions_hold_together() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_keeps_agent_options_and_the_java_command_apart() {
        let run = |words: &[&str]| match parse(words).unwrap() {
            Command::Run { options, java } => (options, java),
            other => panic!("{:?}", other),
        };
        let (options, java) = run(&[
            "run", "--file", "a.trc", "alloc=on", "--gc=off", "--", "java", "-jar", "a.jar", "--",
            "x",
        ]);
        assert_eq!(options, ["--file", "a.trc", "alloc=on", "--gc=off"]);
        assert_eq!(java, ["java", "-jar", "a.jar", "--", "x"]);
        let (options, java) = run(&["run", "--", "java", "-version"]);
        assert!(options.is_empty());
        assert_eq!(java, ["java", "-version"]);
        // No `--`: no java command, which launch::run says.
        let (options, java) = run(&["run", "java", "-version"]);
        assert_eq!(options, ["java", "-version"]);
        assert!(java.is_empty());
        let (options, _) = run(&["run", "help", "--", "java"]);
        assert_eq!(options, ["help"]);
    }

    #[test]
    fn agent_options_and_ctl_words_are_taken_raw() {
        match parse(&["attach", "42", "--file", "t.trc", "start=paused"]).unwrap() {
            Command::Attach { pid, options } => {
                assert_eq!(pid, 42);
                assert_eq!(options, ["--file", "t.trc", "start=paused"]);
            }
            other => panic!("{:?}", other),
        }
        match parse(&["demo", "--format", "tptp"]).unwrap() {
            Command::Demo { options } => assert_eq!(options, ["--format", "tptp"]),
            other => panic!("{:?}", other),
        }
        match parse(&["ctl", "--tcp", "h:1", "--token", "t", "mark", "--x", "y"]).unwrap() {
            Command::Ctl(c) => {
                assert_eq!(
                    (c.tcp.as_deref(), c.token.as_deref()),
                    (Some("h:1"), Some("t"))
                );
                assert_eq!(c.command, ["mark", "--x", "y"]);
            }
            other => panic!("{:?}", other),
        }
        assert!(parse(&["ctl", "--pid", "1"]).is_err());
        assert!(parse(&["ctl", "--pid", "1", "--socket", "s", "status"]).is_err());
    }

    #[test]
    fn trace_commands_take_their_options_anywhere() {
        match parse(&["tree", "t.trc", "--min", "0.5%", "--thread", "main"]).unwrap() {
            Command::Tree { min, thread, trace } => {
                assert_eq!(
                    (min, thread.as_deref(), trace.as_str()),
                    (0.5, Some("main"), "t.trc")
                )
            }
            other => panic!("{:?}", other),
        }
        assert!(parse(&["tree", "--min", "101", "t.trc"]).is_err());
        match parse(&[
            "export", "t.trc", "--to", "svg", "--weight", "calls", "-o", "f.svg",
        ])
        .unwrap()
        {
            Command::Export(e) => {
                assert_eq!((e.to, e.weight), (ExportFormat::Svg, WeightArg::Calls));
                assert_eq!(e.output.as_deref(), Some("f.svg"));
            }
            other => panic!("{:?}", other),
        }
        match parse(&["convert", "--record", "tree", "--to", "tptp", "a.trc", "b"]).unwrap() {
            Command::Convert { to, record, .. } => {
                assert_eq!((to, record), (Some(Format::Tptp), Record::Tree))
            }
            other => panic!("{:?}", other),
        }
        match parse(&["stats", "t.trc"]).unwrap() {
            Command::Stats { top, .. } => assert_eq!(top, 15),
            other => panic!("{:?}", other),
        }
    }

    #[test]
    fn usage_errors_exit_2_and_help_0() {
        let unknown = parse(&["frob"]).unwrap_err();
        assert_eq!(unknown.exit_code(), 2);
        assert!(unknown.to_string().contains("'frob'"), "{}", unknown);
        assert_eq!(parse(&[]).unwrap_err().exit_code(), 2);
        assert_eq!(
            parse(&["stats", "--top", "x", "t"])
                .unwrap_err()
                .exit_code(),
            2
        );
        let helps: [&[&str]; 4] = [
            &["help"],
            &["--help"],
            &["run", "--help"],
            &["attach", "-h"],
        ];
        for words in helps {
            let help = parse(words).unwrap_err();
            assert_eq!(help.exit_code(), 0, "{:?}", words);
        }
    }

    #[test]
    fn the_full_help_has_every_command_with_its_synopsis() {
        let help = full_help(&Cli::command());
        assert!(help.starts_with("jlive — "), "{}", help);
        for sub in Cli::command().get_subcommands() {
            let line = format!("\n  jlive {}", sub.get_name());
            assert!(help.contains(&line), "{} in {}", line, help);
        }
        assert!(help.contains("\n  jlive run [AGENT OPTIONS] -- java [JAVA ARGS...]\n"));
        assert!(help.contains("\n  jlive attach PID [AGENT OPTIONS]\n"));
        assert!(help.contains("\n  jlive help"));
    }
}
