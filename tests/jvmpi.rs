//! The JVMPI shim: a JVMPI agent written as JDK 1.2-5 agents were (tests/jvmpi/counter.c,
//! built here with gcc against jvmpi-shim/include/jvmpi.h) runs unmodified under
//! `-agentpath:libjlive.so=jvmpi=...` on every JDK, and sees exactly what examples/Legacy
//! does: its classes, methods and line numbers, calls, objects and their frees, threads,
//! waits, contentions, collections, a SIGQUIT and a compiled method; its calls of the
//! interface (call traces, thread-local storage, system threads, raw monitors, requested
//! events, ID conversions) answer as JVMPI did. Bad agents and bad options are one line.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn source(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Builds a JVMPI agent from C with gcc, against the JDK's jni.h and the shim's jvmpi.h.
fn build_agent(jdk: &Jdk, dir: &Path, source: &Path) -> PathBuf {
    let stem = source.file_stem().unwrap().to_string_lossy();
    let out = dir.join(format!("lib{}-{}.so", stem, jdk.name));
    let include = jdk.home.join("include");
    let status = Command::new("gcc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror"])
        .arg("-I")
        .arg(&include)
        .arg("-I")
        .arg(include.join("linux"))
        .arg("-I")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/jvmpi-shim/include"))
        .arg("-o")
        .arg(&out)
        .arg(source)
        .status()
        .expect("gcc (apt-get install -y gcc)");
    assert!(status.success(), "gcc failed on {}", source.display());
    out
}

fn pairs(text: &str) -> BTreeMap<String, i64> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// The line of the marker in examples/Legacy.java.
fn marked_line(marker: &str) -> i64 {
    let text = std::fs::read_to_string(source("examples/Legacy.java")).unwrap();
    text.lines().position(|l| l.contains(marker)).unwrap() as i64 + 1
}

#[test]
fn a_legacy_jvmpi_agent_sees_exactly_what_the_program_did() {
    let dir = scratch("jvmpi");
    for jdk in jdks() {
        let library = build_agent(&jdk, &dir, &source("tests/jvmpi/counter.c"));
        let out = dir.join(format!("counts-{}.txt", jdk.name));
        let mut c = Command::new(jdk.java());
        c.arg(format!(
            "-agentpath:{}=jvmpi={}:out={},src={}",
            agent().display(),
            library.display(),
            out.display(),
            source("examples/Legacy.java").display()
        ))
        .arg("-cp")
        .arg(classes())
        .arg("Legacy");
        let r = run(c);
        assert_eq!(r.code, Some(0), "{}: {}\n{}", jdk.name, r.stderr, r.stdout);
        let text = std::fs::read_to_string(&out)
            .unwrap_or_else(|e| panic!("{}: no counts ({}): {}", jdk.name, e, r.stderr));
        let got = pairs(&text);
        let n = |k: &str| {
            *got.get(k)
                .unwrap_or_else(|| panic!("{}: no {} in {}", jdk.name, k, text))
        };
        let exact = [
            ("exit_expected", 1),
            ("init", 1),
            ("shutdown", 1),
            ("arena", 1),
            ("class_load_legacy", 1),
            ("work_entry", 1000),
            ("work_exit", 1000),
            ("entry2_work_null", 1000),
            ("node_alloc", 500),
            ("touch_receiver", 500),
            ("node_array", 1),
            ("node_free", 500),
            ("worker_start", 1),
            ("worker_end", 1),
            ("spin_tls", 77),
            ("wait20", 3),
            ("waited", 3),
            ("contend", 2),
            ("contended", 2),
            ("dump_request", 1),
            ("hook_bad", 0),
            ("hook_node", 1),
            ("req_class", 1),
            ("req_alloc", 1),
            ("req_thread", 1),
            ("sampler_start", 2),
            ("sampler_ran", 1),
            ("trace_work_line", 1),
            ("trace_call_line", 1),
            ("trace_caller_main", 1),
            ("method_class_ok", 1),
            ("id_roundtrip", 1),
            ("status_runnable", 1),
            ("cpu_time", 1),
            ("gc_bad_info", 0),
            ("methods_off", 1),
            ("gref_alloc", 1),
            ("gref_free", 1),
            ("wref_alloc", 1),
            ("wref_free", 1),
            ("heap0_keep", 10),
            ("heap2_ok", 1),
            ("heap2_keep", 10),
            ("heap2_sum", 45),
            ("heap2_links", 9),
            ("heap2_array", 10),
            ("objdump_ok", 1),
            ("monitor_kept", 1),
            ("monitor_raw", 1),
            ("monitor_traces", 1),
            ("fib_load", 1),
            ("fib_unload", 1),
            ("reset_request", 0),
        ];
        for (key, want) in exact {
            assert_eq!(n(key), want, "{}: {} in\n{}", jdk.name, key, text);
        }
        assert!(
            n("gc_start") >= 1 && n("gc_start") == n("gc_finish"),
            "{}: {}",
            jdk.name,
            text
        );
        assert!(
            n("hook") > 100,
            "{}: every class passes the hook: {}",
            jdk.name,
            text
        );
        assert!(
            n("hot_compiled") >= 1,
            "{}: hot() compiled: {}",
            jdk.name,
            text
        );
        let line = marked_line("// LINE:work");
        assert_eq!(
            (n("work_start"), n("work_end")),
            (line, line),
            "{}",
            jdk.name
        );
        assert!(r.stdout.contains("work=1000 nodes=500"), "{}", r.stdout);
    }
}

#[test]
fn jlive_ctl_dump_and_reset_reach_the_hosted_agent() {
    let dir = scratch("jvmpi-ctl");
    for jdk in jdks() {
        let library = build_agent(&jdk, &dir, &source("tests/jvmpi/counter.c"));
        let out = dir.join(format!("ctl-{}.txt", jdk.name));
        let socket = dir.join(format!("{}.sock", jdk.name));
        let options = format!(
            "control={},jvmpi={}:out={}",
            socket.display(),
            library.display(),
            out.display()
        );
        let d = Driven::start(&jdk, &options, "Phases");
        assert!(ok(&socket, &["status"]).contains("hosting the JVMPI agent"));
        assert_eq!(ok(&socket, &["dump"]), "ok DATA_DUMP_REQUEST sent");
        assert_eq!(ok(&socket, &["reset"]), "ok DATA_RESET_REQUEST sent");
        let (code, answer) = ctl(&socket, &["start"]);
        assert_eq!(code, 1, "{}", answer);
        assert!(answer.contains("unknown command 'start'"), "{}", answer);
        d.quit();
        let got = pairs(&std::fs::read_to_string(&out).unwrap());
        assert_eq!(got.get("dump_request"), Some(&1), "{}: {:?}", jdk.name, got);
        assert_eq!(
            got.get("reset_request"),
            Some(&1),
            "{}: {:?}",
            jdk.name,
            got
        );
        assert_eq!(got.get("shutdown"), Some(&1), "{}: {:?}", jdk.name, got);
    }
}

#[test]
fn an_agent_suspends_and_traces_a_running_thread_and_profiler_exit_ends_the_jvm() {
    let dir = scratch("jvmpi-exit");
    for jdk in jdks() {
        let library = build_agent(&jdk, &dir, &source("tests/jvmpi/exit.c"));
        let mut c = Command::new(jdk.java());
        c.arg(format!(
            "-agentpath:{}=jvmpi={}",
            agent().display(),
            library.display()
        ))
        .arg("-cp")
        .arg(classes())
        .arg("Endless");
        let r = run(c);
        assert_eq!(r.code, Some(7), "{}: {}", jdk.name, r.stderr);
        let line = r
            .stderr
            .lines()
            .find(|l| l.starts_with("exit-agent: frames="))
            .unwrap_or_else(|| panic!("{}: {}", jdk.name, r.stderr));
        let got: BTreeMap<&str, i64> = line["exit-agent: ".len()..]
            .split_whitespace()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k, v.parse().unwrap()))
            .collect();
        assert!(got["frames"] >= 1, "{}: main's stack: {}", jdk.name, line);
        assert_eq!(got["status"], 1, "{}: RUNNABLE: {}", jdk.name, line);
        assert_eq!(got["has_run"], 1, "{}: {}", jdk.name, line);
        assert_eq!(got["list"], 0, "{}: {}", jdk.name, line);
        assert!(
            r.stderr.contains("exit-agent: shutdown"),
            "{}: {}",
            jdk.name,
            r.stderr
        );
    }
}

#[test]
fn a_library_that_is_not_a_jvmpi_agent_or_bad_options_stop_the_jvm_with_one_line() {
    let dir = scratch("jvmpi-bad");
    let jdk = &jdks()[0];
    let cases = [
        (
            format!("jvmpi={}/libnothere.so:x", dir.display()),
            "cannot load the JVMPI agent",
        ),
        (
            format!("jvmpi={}", agent().display()),
            "has no JVM_OnLoad: not a JVMPI agent",
        ),
        (
            "file=x.trc,jvmpi=/x/libp.so".to_string(),
            "only log=, control= and token= may",
        ),
        ("jvmpi=".to_string(), "needs the agent library"),
    ];
    for (options, message) in cases {
        let mut c = Command::new(jdk.java());
        c.arg(format!("-agentpath:{}={}", agent().display(), options))
            .arg("-cp")
            .arg(classes())
            .arg("Fib");
        let r = run(c);
        assert_ne!(r.code, Some(0), "{}", options);
        let lines: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("jlive:"))
            .collect();
        assert_eq!(lines.len(), 1, "{}: {}", options, r.stderr);
        assert!(lines[0].contains(message), "{}: {}", options, r.stderr);
    }
}
