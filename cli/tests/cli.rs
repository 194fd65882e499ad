//! The `jlive` command on real traces: demo, check (accepting and rejecting), dump, stats, run.

use jlive_writer::jinsight::{self, Decoder};
use jlive_writer::model::Event;
use jlive_writer::read::Trace;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "../../tests/common/agent_build.rs"]
mod agent_build;

fn jlive(args: &[&str], dir: &Path) -> Output {
    let exe = Path::new(env!("CARGO_BIN_EXE_jlive"));
    agent_build::built_agent(exe.parent().expect("target/<profile>"));
    Command::new(exe)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run jlive")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jlive-cli-{}-{}", std::process::id(), name));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The demo's trace, made once per test that needs it.
fn demo_trace(dir: &Path) -> PathBuf {
    let out = jlive(&["demo"], dir);
    assert!(out.status.success(), "jlive demo failed: {}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("total ") && said.contains("top methods by calls"),
        "{}",
        said
    );
    dir.join("jlive-demo.trc")
}

#[test]
fn demo_traces_the_clerks_exactly() {
    let dir = scratch("demo");
    let trace = Trace::decode(&std::fs::read(demo_trace(&dir)).unwrap()).unwrap();
    let mut price_calls = std::collections::HashMap::new();
    for (_, e) in &trace.events {
        if let Event::MethodEnter(e) = e {
            if trace.method_name(e.method) == "Demo.price" {
                *price_calls.entry(trace.thread_name(e.thread)).or_insert(0) += 1;
            }
        }
    }
    // clerk-c prices 200 * (c + 1) orders.
    assert_eq!(price_calls.get("clerk-0"), Some(&200));
    assert_eq!(price_calls.get("clerk-1"), Some(&400));
    assert_eq!(price_calls.get("clerk-2"), Some(&600));
}

#[test]
fn check_accepts_good_and_rejects_truncated_flipped_and_empty_files() {
    let dir = scratch("check");
    let good = demo_trace(&dir);
    let out = jlive(&["check", good.to_str().unwrap()], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(": ok: "));

    let data = std::fs::read(&good).unwrap();
    let mut decoder = Decoder::new(&data).unwrap();
    let mut first_entry = None;
    while let Some((offset, e)) = decoder.next_event().unwrap() {
        if matches!(e, jinsight::Event::MethodEnter { .. }) {
            first_entry = Some(offset);
            break;
        }
    }
    let at = first_entry.expect("the demo has method entries");
    let mut flipped = data.clone();
    flipped[at] ^= 0xFF;
    let cases: Vec<(&str, Vec<u8>, Option<usize>)> = vec![
        ("truncated.trc", data[..data.len() - 7].to_vec(), None),
        ("flipped.trc", flipped, Some(at)),
        ("empty.trc", Vec::new(), Some(0)),
    ];
    for (name, bytes, offset) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = jlive(&["check", path.to_str().unwrap()], &dir);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{}: {}", name, said);
        assert!(said.contains("bad at offset"), "{}: {}", name, said);
        if let Some(o) = offset {
            assert!(
                said.contains(&format!("bad at offset {}:", o)),
                "{}: {}",
                name,
                said
            );
        }
        assert!(!said.contains("panicked"), "{}", said);
    }
}

#[test]
fn dump_and_stats_resolve_names() {
    let dir = scratch("dump");
    let trace = demo_trace(&dir);
    let path = trace.to_str().unwrap();
    let dump = jlive(&["dump", path], &dir);
    assert!(dump.status.success());
    let lines = String::from_utf8_lossy(&dump.stdout);
    let events = Trace::decode(&std::fs::read(&trace).unwrap())
        .unwrap()
        .events
        .len();
    assert_eq!(
        lines.lines().count(),
        events + 1,
        "a header line and one line per event"
    );
    assert!(lines.contains("METHOD_ENTER thread=") && lines.contains("Demo.price"));
    let stats = jlive(&["stats", "--top", "3", path], &dir);
    let said = text(&stats);
    assert!(
        said.contains("top methods by calls") && said.contains("clerk-2"),
        "{}",
        said
    );
    // stats counts the events of the model, which every format has alike (a class is one
    // definition, however its format writes it); check counts the file's own, as its header
    // does (the TraceEnd marker not among them).
    let checked = text(&jlive(&["check", path], &dir));
    assert!(
        said.starts_with(&format!("events: {}   ", events)),
        "{}",
        said
    );
    let data = std::fs::read(&trace).unwrap();
    let header = Decoder::new(&data).unwrap().header().number_of_events;
    assert!(
        checked.contains(&format!("ok: {} events", header)),
        "{}",
        checked
    );
    // A reader that stops early (`jlive stats T | head`) is no error of jlive's.
    for command in ["stats", "dump", "check"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jlive"))
            .args([command, path])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.stderr.is_empty(), "{}: {}", command, text(&out));
    }
}

/// The demo's trace converted to TPTP binary, to XML and back to JinsightLive: each checks,
/// and each gives the same stats (JinsightLive's header rate aside, patched at close).
#[test]
fn convert_writes_each_format_and_every_command_reads_it() {
    let dir = scratch("convert");
    let trc = demo_trace(&dir);
    let trc = trc.to_str().unwrap();
    let stats = |path: &str| {
        let said = text(&jlive(&["stats", path], &dir));
        // Times in XML count nanoseconds: the rate and the self times are left out.
        said.lines()
            .filter(|l| !l.starts_with("events:") && !l.contains(" ms "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let reference = stats(trc);
    for (out, to) in [
        ("d.trcbin", None),
        ("d.trcxml", None),
        ("d.xml", Some("tptp-xml")),
        ("back.trc", None),
    ] {
        let input = if out == "back.trc" { "d.trcbin" } else { trc };
        let mut args = vec!["convert"];
        if let Some(to) = to {
            args.extend(["--to", to]);
        }
        args.extend([input, out]);
        let converted = jlive(&args, &dir);
        assert!(
            converted.status.success(),
            "{:?}: {}",
            args,
            text(&converted)
        );
        let checked = jlive(&["check", out], &dir);
        assert_eq!(
            checked.status.code(),
            Some(0),
            "{}: {}",
            out,
            text(&checked)
        );
        assert_eq!(stats(out), reference, "{}", out);
        let dump = jlive(&["dump", out], &dir);
        assert!(
            String::from_utf8_lossy(&dump.stdout).contains("Demo.price"),
            "{}",
            out
        );
    }
    assert_eq!(
        std::fs::read(dir.join("d.trcxml")).unwrap(),
        std::fs::read(dir.join("d.xml")).unwrap()
    );
    // An XML file with a line gone bad is named by its line.
    let xml = std::fs::read_to_string(dir.join("d.trcxml")).unwrap();
    let at = xml
        .lines()
        .position(|l| l.starts_with("<methodEntry"))
        .unwrap();
    let mut lines: Vec<&str> = xml.lines().collect();
    lines[at] = "<methodEntry threadIdRef=\"1\"";
    std::fs::write(dir.join("bad.trcxml"), lines.join("\n")).unwrap();
    let bad = jlive(&["check", "bad.trcxml"], &dir);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad).contains(&format!("bad at line {}:", at + 1)),
        "{}",
        text(&bad)
    );
    let unknown = jlive(&["convert", trc, "d.json"], &dir);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        text(&unknown).contains("--to binary|tptp|tptp-xml"),
        "{}",
        text(&unknown)
    );
}

#[test]
fn run_adds_the_agent_and_keeps_the_exit_code() {
    let dir = scratch("run");
    let out = jlive(&["run", "--file", "v.trc", "--", "java", "-version"], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let checked = jlive(&["check", "v.trc"], &dir);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    let missing = jlive(
        &[
            "run",
            "file=m.trc",
            "--",
            "java",
            "-cp",
            "/nonexistent",
            "NoSuchMain",
        ],
        &dir,
    );
    assert_eq!(
        missing.status.code(),
        Some(1),
        "java's own exit code: {}",
        text(&missing)
    );
    let bad = jlive(
        &["run", "--fromat", "binary", "--", "java", "-version"],
        &dir,
    );
    assert_ne!(bad.status.code(), Some(0));
    assert!(
        text(&bad).contains("did you mean 'format'"),
        "{}",
        text(&bad)
    );
}

#[test]
fn every_command_answers_help_with_the_usage() {
    let dir = scratch("help");
    let usage = jlive(&["help"], &dir);
    assert!(usage.status.success());
    let usage = String::from_utf8_lossy(&usage.stdout).to_string();
    assert!(usage.starts_with("jlive — "), "{}", usage);
    // `jlive --help` and `jlive -h` are `jlive help`; `jlive` alone prints it on stderr and
    // exits 2, as a command line jlive does not understand.
    for flag in ["--help", "-h"] {
        let out = jlive(&[flag], &dir);
        assert!(out.status.success(), "jlive {}: {}", flag, text(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            usage,
            "jlive {}",
            flag
        );
    }
    let bare = jlive(&[], &dir);
    assert_eq!(bare.status.code(), Some(2), "{}", text(&bare));
    assert!(String::from_utf8_lossy(&bare.stderr).starts_with("jlive — "));
    for command in [
        "run",
        "demo",
        "dump",
        "check",
        "stats",
        "tree",
        "export",
        "convert",
        "attach",
        "ctl",
        "list",
        "completions",
    ] {
        // Each command its own line (or lines) of the usage, at the same indentation: its
        // synopsis, which its own help (clap's) shows as its usage.
        let synopsis = usage
            .lines()
            .find(|l| l.strip_prefix("  jlive ").and_then(|l| l.split(' ').next()) == Some(command))
            .unwrap_or_else(|| panic!("{} in {}", command, usage))
            .trim()
            .to_string();
        for flag in ["--help", "-h"] {
            let out = jlive(&[command, flag], &dir);
            assert!(
                out.status.success(),
                "jlive {} {}: {}",
                command,
                flag,
                text(&out)
            );
            assert!(
                String::from_utf8_lossy(&out.stdout).contains(&synopsis),
                "jlive {} {}: {}",
                command,
                flag,
                text(&out)
            );
        }
        let out = jlive(&["help", command], &dir);
        assert!(
            out.status.success(),
            "jlive help {}: {}",
            command,
            text(&out)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(&synopsis));
    }
    // `--help` names no file: no demo trace or JVM was made.
    assert!(!dir.join("jlive-demo.trc").exists());
}

#[test]
fn usage_errors_exit_2_naming_what_is_wrong() {
    let dir = scratch("usage");
    let cases: [(&[&str], &str); 8] = [
        (&["frob"], "'frob'"),
        (&["stats", "--top", "many", "t.trc"], "--top"),
        (&["tree", "--min", "101", "t.trc"], "0 to 100"),
        (&["export", "t.trc", "--to", "png"], "png"),
        (&["convert", "--to", "json", "a.trc", "b"], "json"),
        (&["attach", "not-a-pid"], "not-a-pid"),
        (&["ctl", "--pid", "1"], "COMMAND"),
        (&["run", "--file", "a.trc", "java", "-version"], "--"),
    ];
    for (args, named) in cases {
        let out = jlive(args, &dir);
        assert_eq!(out.status.code(), Some(2), "{:?}: {}", args, text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(named),
            "{:?}: {}",
            args,
            text(&out)
        );
    }
}

#[test]
fn completions_are_written_for_each_shell() {
    let dir = scratch("completions");
    for shell in ["bash", "zsh", "fish"] {
        let out = jlive(&["completions", shell], &dir);
        assert!(out.status.success(), "{}: {}", shell, text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            // fish names a long option without its dashes (-l top)
            script.contains("jlive") && script.contains("convert") && script.contains("top"),
            "{}: {}",
            shell,
            script
        );
    }
}
