//! Shared by the integration tests: the JDKs to run, the agent, the example classes, running
//! a JVM with a deadline, and reading its trace back with exact counts.

#![allow(dead_code)]

use jlive_writer::check::check;
use jlive_writer::format::Format;
use jlive_writer::model::Event;
use jlive_writer::read::Trace;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The longest a traced JVM may take before the test calls it hung.
pub const DEADLINE: Duration = Duration::from_secs(240);

pub struct Jdk {
    pub name: &'static str,
    pub home: PathBuf,
}

impl Jdk {
    pub fn java(&self) -> PathBuf {
        self.home.join("bin/java")
    }
}

/// JDK 17 always (a missing one fails the test); JDK 25 when this machine has it.
pub fn jdks() -> Vec<Jdk> {
    let jdk17 = PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64");
    assert!(
        jdk17.join("bin/java").is_file(),
        "JDK 17 is missing: apt-get install -y openjdk-17-jdk-headless"
    );
    let mut v = vec![Jdk {
        name: "jdk17",
        home: jdk17,
    }];
    let jdk25 = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64");
    if jdk25.join("bin/java").is_file() {
        v.push(Jdk {
            name: "jdk25",
            home: jdk25,
        });
    } else {
        println!(
            "skipping JDK 25: /usr/lib/jvm/temurin-25-jdk-amd64 is not installed on this machine"
        );
    }
    v
}

mod agent_build;
mod driven;
#[allow(unused_imports)]
pub use driven::*;

/// target/<profile>/libjlive.so, next to the deps/ directory holding this test binary,
/// built fresh by the first call.
pub fn agent() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    agent_build::built_agent(profile_dir)
}

/// The jlive command, built beside libjlive.so.
pub fn jlive_bin() -> PathBuf {
    agent().with_file_name("jlive")
}

/// jlive-api.jar (jlive.Jlive, InstrumentVMSupport).
pub fn api_jar() -> PathBuf {
    PathBuf::from(env!("JLIVE_API_JAR"))
}

/// A SQL script for Debian's h2 in `dir`: a 2,000-row insert, an index and a query whose
/// answer (1000 rows under 500) the output shows.
pub fn h2_script(dir: &Path) -> PathBuf {
    h2_script_of(dir, 2000)
}

/// The same with `rows` rows (bench/run.sh's takes 20,000).
pub fn h2_script_of(dir: &Path, rows: u32) -> PathBuf {
    let script = dir.join("script.sql");
    std::fs::write(
        &script,
        format!(
            "CREATE TABLE item(id INT PRIMARY KEY, name VARCHAR(40), price INT);\n\
             INSERT INTO item SELECT X, 'item-' || X, MOD(X * 37, 1000) FROM SYSTEM_RANGE(1, {});\n\
             CREATE INDEX item_price ON item(price);\n\
             SELECT COUNT(*), SUM(price) FROM item WHERE price < 500;\n",
            rows
        ),
    )
    .expect("write the h2 script");
    script
}

/// `jlive ARGS...`, which must succeed; its stdout.
pub fn jlive_ok(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let said = Command::new(jlive_bin())
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap();
    assert!(
        said.status.success(),
        "jlive: {}",
        String::from_utf8_lossy(&said.stderr)
    );
    String::from_utf8(said.stdout).unwrap()
}

/// tests/viewers/perfetto_summary.py's reading of a Perfetto trace (Perfetto's own protobuf
/// classes): thread tracks, slices per thread and name, instants, and the rules broken.
pub fn perfetto_summary(trace: &Path) -> serde_json::Value {
    let said = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/viewers/perfetto_summary.py"
        ))
        .arg(trace)
        .output()
        .expect("python3");
    assert!(
        said.status.success(),
        "{}",
        String::from_utf8_lossy(&said.stderr)
    );
    serde_json::from_slice(&said.stdout).unwrap()
}

/// The compiled examples/ programs.
pub fn classes() -> PathBuf {
    PathBuf::from(env!("JLIVE_EXAMPLE_CLASSES"))
}

/// A fresh scratch directory, removed with what it holds when dropped (kept when a test
/// fails, to look into): a suite run leaves nothing in the temporary directory (a timed
/// burst's trace alone is 1.2 GB).
pub fn scratch(name: &str) -> Scratch {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "jlive-test-{}-{}-{}",
        std::process::id(),
        name,
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

/// [`scratch`]'s directory.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Runs a command to completion, killing it and failing the test past [`DEADLINE`].
pub fn run(mut command: Command) -> Run {
    let start = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start java");
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("the JVM did not exit within {:?}: {:?}", DEADLINE, command);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        elapsed: start.elapsed(),
    }
}

/// `java [-agentpath:libjlive.so=OPTIONS] -cp examples ARGS...`, to run.
pub fn java_command(jdk: &Jdk, options: Option<&str>, args: &[&str]) -> Command {
    let mut c = Command::new(jdk.java());
    if let Some(o) = options {
        c.arg(format!("-agentpath:{}={}", agent().display(), o));
    }
    c.arg("-cp").arg(classes()).args(args);
    c
}

/// Runs [`java_command`].
pub fn java(jdk: &Jdk, options: Option<&str>, args: &[&str]) -> Run {
    run(java_command(jdk, options, args))
}

/// The format `format=` asks for in agent options (JinsightLive without one).
pub fn format_of(options: &str) -> Format {
    let named = options
        .split(',')
        .rev()
        .find_map(|o| o.strip_prefix("format="));
    named.and_then(Format::parse).unwrap_or(Format::Jinsight)
}

/// Runs a program traced and untraced; asserts identical stdout and exit code; returns the
/// decoded trace, which must pass `jlive check`.
pub fn traced(jdk: &Jdk, options: &str, args: &[&str]) -> (Run, Trace) {
    let dir = scratch(args[0]);
    let file = dir.join(format!("t.{}", format_of(options).extension()));
    let traced = java(
        jdk,
        Some(&format!("file={},{}", file.display(), options)),
        args,
    );
    let plain = java(jdk, None, args);
    assert_eq!(
        traced.code, plain.code,
        "{}: exit code changed under the agent; stderr: {}",
        jdk.name, traced.stderr
    );
    assert_eq!(
        traced.stdout, plain.stdout,
        "{}: stdout changed under the agent",
        jdk.name
    );
    assert!(
        !traced.stderr.contains("jlive:"),
        "{}: the agent complained: {}",
        jdk.name,
        traced.stderr
    );
    let trace = read_trace(&file);
    let _ = std::fs::remove_dir_all(&dir);
    (traced, trace)
}

/// Reads a trace; it must pass the checker and decode whole.
pub fn read_trace(file: &Path) -> Trace {
    let opened =
        std::fs::File::open(file).unwrap_or_else(|e| panic!("trace {}: {}", file.display(), e));
    // An ORCA event log is read with its meta log in front.
    let mut data = Vec::new();
    std::io::Read::read_to_end(
        &mut jlive_writer::orca::open_with_meta(&file.to_string_lossy(), opened),
        &mut data,
    )
    .expect("read trace");
    if let Err(e) = check(&data) {
        panic!("{} fails jlive check: {}", file.display(), e);
    }
    Trace::decode(&data).expect("decode")
}

/// Walks the method entries and leaves of `trace` through a per-thread stack:
/// `visit(thread, caller, method, left)` at the entry (`left` false) and again at the leave
/// (`left` true), which must name the method of its entry; `caller` is the frame below, if
/// traced.
fn walk_calls(trace: &Trace, mut visit: impl FnMut(u32, Option<&str>, &str, bool)) {
    let mut stacks: HashMap<u32, Vec<String>> = HashMap::new();
    for (_, e) in &trace.events {
        match e {
            Event::BurstBegin { .. } => stacks.clear(),
            Event::MethodEnter(e) => {
                let name = trace.method_name(e.method);
                let stack = stacks.entry(e.thread).or_default();
                visit(e.thread, stack.last().map(String::as_str), &name, false);
                stack.push(name);
            }
            Event::MethodLeave(l) => {
                let stack = stacks.entry(l.thread).or_default();
                if let Some(name) = stack.pop() {
                    assert_eq!(
                        name,
                        trace.method_name(l.method),
                        "a leave names its entry's method"
                    );
                    visit(l.thread, stack.last().map(String::as_str), &name, true);
                }
            }
            _ => {}
        }
    }
}

fn tally(slot: &mut (u64, u64), left: bool) {
    if left {
        slot.1 += 1;
    } else {
        slot.0 += 1;
    }
}

/// Per method name (`pkg/Class.method`) and thread ID: (entries, leaves).
pub fn calls(trace: &Trace) -> HashMap<(String, u32), (u64, u64)> {
    let mut out: HashMap<(String, u32), (u64, u64)> = HashMap::new();
    walk_calls(trace, |thread, _, method, left| {
        tally(out.entry((method.to_string(), thread)).or_default(), left)
    });
    out
}

/// (entries, leaves) of `callee` called directly by `caller` (names as in [`calls`]), on any
/// thread: counts that hold whatever else the JVM calls the callee for.
pub fn calls_from(trace: &Trace, caller: &str, callee: &str) -> (u64, u64) {
    let mut out = (0, 0);
    walk_calls(trace, |_, from, method, left| {
        if method == callee && from == Some(caller) {
            tally(&mut out, left);
        }
    });
    out
}

/// (entries, leaves) of a method summed over all threads.
pub fn total(calls: &HashMap<(String, u32), (u64, u64)>, method: &str) -> (u64, u64) {
    calls
        .iter()
        .filter(|((m, _), _)| m == method)
        .fold((0, 0), |acc, (_, &(e, l))| (acc.0 + e, acc.1 + l))
}

/// IDs of the objects of class `class` whose allocation the trace holds, in order.
pub fn created_of(trace: &Trace, class: &str) -> Vec<u32> {
    trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Alloc { object, .. } if trace.class_name(object.class) == class => {
                Some(object.object)
            }
            _ => None,
        })
        .collect()
}

/// The events of `trace` named `name` (as `jlive stats` names them).
pub fn count(trace: &Trace, name: &str) -> usize {
    trace
        .events
        .iter()
        .filter(|(_, e)| e.name() == name)
        .count()
}

/// Threads on which a method was entered.
pub fn threads_of(calls: &HashMap<(String, u32), (u64, u64)>, method: &str) -> Vec<u32> {
    let mut v: Vec<u32> = calls
        .keys()
        .filter(|(m, _)| m == method)
        .map(|(_, t)| *t)
        .collect();
    v.sort();
    v
}

/// The agent's capture=bci summary line in its log (`log=`): classes and methods
/// instrumented, and what was not traced.
pub fn bci_summary(log: &str) -> &str {
    log.lines()
        .find(|l| l.contains("capture=bci: instrumented"))
        .unwrap_or_else(|| panic!("no capture=bci summary in the log: {}", log))
}

/// The same summary as the trace carries it, in a jlive note, for `jlive stats`.
pub fn bci_note(trace: &Trace) -> String {
    jlive_writer::stats::Stats::of(trace)
        .notes
        .into_iter()
        .find(|n| n.contains("not traced:"))
        .expect("a capture=bci note in the trace")
}

/// The number written just before `phrase` in `text` (after a space or a parenthesis), as
/// the agent's log and summary lines put their counts.
pub fn number_before(text: &str, phrase: &str) -> u64 {
    let at = text
        .find(phrase)
        .unwrap_or_else(|| panic!("{:?} not in {}", phrase, text));
    let word = text[..at].rsplit([' ', '(']).next().unwrap_or_default();
    word.parse()
        .unwrap_or_else(|_| panic!("{:?} before {:?} is not a number in {}", word, phrase, text))
}

/// Asserts that a TPTP XML file is valid against writer/src/tptp/trace.dtd (xmllint).
pub fn assert_valid_tptp_xml(file: &Path, what: &str) {
    let dtd = Path::new(env!("CARGO_MANIFEST_DIR")).join("writer/src/tptp/trace.dtd");
    let valid = Command::new("xmllint")
        .args(["--noout", "--dtdvalid"])
        .arg(dtd)
        .arg(file)
        .output()
        .expect("xmllint (apt-get install -y libxml2-utils)");
    assert!(
        valid.status.success(),
        "{}: {}",
        what,
        String::from_utf8_lossy(&valid.stderr)
    );
}
