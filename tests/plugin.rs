//! VA/Java user trace libraries and the heap walk: a counting library built here with gcc gets
//! exactly what examples/UserTrace does (method events with depths, flags and receivers,
//! allocations with sizes, deletions, collections, user events, the field report of a known
//! tree), on every JDK and capture, loaded by plugin= or by tracingStartup; the sample library
//! writes Fib's calls; broken libraries are one line; `jlive ctl heap` writes a graph whose
//! tree, totals and retainers are the program's.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds a user trace library from C sources with gcc, against examples/trace/include.
fn build_library(dir: &Path, name: &str, source: &Path) -> PathBuf {
    let out = dir.join(format!("lib{}.so", name));
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/trace/include");
    let status = Command::new("gcc")
        .args([
            "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I", include, "-o",
        ])
        .arg(&out)
        .arg(source)
        .arg("-lpthread")
        .status()
        .expect("gcc (apt-get install -y gcc)");
    assert!(status.success(), "gcc failed on {}", source.display());
    out
}

fn source(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// key=value lines.
fn pairs(text: &str) -> BTreeMap<String, String> {
    text.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn number(map: &BTreeMap<String, String>, key: &str) -> u64 {
    map.get(key)
        .unwrap_or_else(|| panic!("no {} in {:?}", key, map))
        .parse()
        .unwrap_or_else(|_| panic!("{} is not a number: {:?}", key, map))
}

/// Runs UserTrace under the agent with `options`; returns what it printed and what the
/// counting library wrote.
fn user_trace(
    jdk: &Jdk,
    options: &str,
    argument: &str,
    dir: &Path,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let counts = dir.join("counts.txt");
    let _ = std::fs::remove_file(&counts);
    let mut c = Command::new(jdk.java());
    c.arg(format!("-agentpath:{}={}", agent().display(), options))
        .arg(format!("-Djava.library.path={}", dir.display()))
        .arg("-cp")
        .arg(format!("{}:{}", classes().display(), api_jar().display()))
        .arg("UserTrace")
        .arg(argument)
        .env("COUNT_OUT", &counts);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{} {}: {}", jdk.name, options, r.stderr);
    let written = std::fs::read_to_string(&counts)
        .unwrap_or_else(|e| panic!("{} {}: no counts ({}): {}", jdk.name, options, e, r.stderr));
    (pairs(&r.stdout), pairs(&written))
}

#[test]
fn a_counting_library_gets_exactly_what_the_program_did() {
    let dir = scratch("plugin");
    let library = build_library(&dir, "count", &source("tests/plugins/count.c"));
    for jdk in jdks() {
        for capture in ["events", "bci"] {
            for (options, argument) in [
                (
                    format!(
                        "plugin={},start=paused,capture={}",
                        library.display(),
                        capture
                    ),
                    "-",
                ),
                (
                    format!(
                        "start=paused,output=plugin,objects=on,alloc=on,capture={}",
                        capture
                    ),
                    "count",
                ),
            ] {
                let what = format!("{} {}", jdk.name, options);
                let (printed, got) = user_trace(&jdk, &options, argument, &dir);
                let n = |k: &str| number(&got, k);
                let p = |k: &str| number(&printed, k);
                assert_eq!(
                    (n("startups"), n("begins"), n("ends")),
                    (1, 2, 2),
                    "{}",
                    what
                );
                assert_eq!(n("begin_flags"), 0x111, "ExeOn|GCOn|AllocOn: {}", what);
                assert_eq!(n("last_flags"), 0x241, "ExeOn|GCOff|AllocOff: {}", what);
                // fib(15) then fib(10): static, 1973 + 177 calls; main is frame 1, so the
                // outermost fib is at depth 2.
                assert_eq!(
                    (n("fib_enter"), n("fib_leave")),
                    (p("fib_calls"), p("fib_calls")),
                    "{}",
                    what
                );
                assert_eq!(n("fib_not_static"), 0, "{}", what);
                assert_eq!((n("fib_min"), n("fib_max")), (2, 16), "{}", what);
                assert_eq!(
                    n("fib_depth_sum"),
                    p("fib_depth_sum") + p("fib_calls"),
                    "each call one deeper than its caller: {}",
                    what
                );
                // Counter.add: synchronized, on one object.
                assert_eq!(n("add_enter"), p("adds"), "{}", what);
                assert_eq!((n("add_sync"), n("add_static")), (100, 0), "{}", what);
                assert_eq!((n("add_receivers"), n("add_zero")), (1, 0), "{}", what);
                // Allocations: 2 longs after a 12-byte header = 32 bytes; Payload[3] = 16 + 12
                // bytes, aligned to 32 (HotSpot's layout with compressed oops and class
                // pointers, the default for heaps under 32 GB).
                assert_eq!(
                    (n("payloads"), n("payload_arrays")),
                    (p("payloads"), p("arrays")),
                    "{}",
                    what
                );
                assert_eq!((n("payload_longs"), n("array_longs")), (8, 8), "{}", what);
                assert_eq!(n("array_arity_bad"), 0, "{}", what);
                assert_eq!(
                    n("deleted"),
                    p("payloads") + p("arrays"),
                    "every dropped object's OIDDelete: {}",
                    what
                );
                // Collections, as the JVM's own counters saw them during the first burst (the
                // second asks for none).
                assert!(
                    p("full_gcs") >= 2 && p("young_gcs") >= 2,
                    "{}: {:?}",
                    what,
                    printed
                );
                assert_eq!(
                    (n("ggc_start"), n("ggc_end")),
                    (p("full_gcs"), p("full_gcs")),
                    "{}",
                    what
                );
                assert_eq!(
                    (n("scav_start"), n("scav_end")),
                    (p("young_gcs"), p("young_gcs")),
                    "{}",
                    what
                );
                assert_eq!(n("user_events"), p("user_events"), "{}", what);
                // An intrinsic candidate's calls, each once: from its bytecode or, where
                // HotSpot ran its own code, from the call site.
                assert_eq!(
                    (n("reverse_enter"), n("reverse_leave")),
                    (p("reverses"), p("reverses")),
                    "{}",
                    what
                );
                // The tree: 13 Nodes and 4 Node[] arrays, 16 references among them, each
                // object reported once, with the ID its allocation had.
                assert_eq!(n("tree_objects"), p("tree_objects"), "{}", what);
                assert_eq!(n("reported_twice"), 0, "{}", what);
                assert_eq!(n("tree_refs"), p("tree_refs"), "{}", what);
                assert_eq!(n("tree_ids_known"), p("tree_objects"), "{}", what);
                assert!(n("classes_reported") > 100, "{}", what);
                assert!(n("reported") > n("classes_reported"), "{}", what);
                assert_eq!(
                    (got["thread"].as_str(), n("priority"), got["group"].as_str()),
                    ("main", 5, "main"),
                    "InstrumentSupportCurrentThreadDetails: {}",
                    what
                );
            }
        }
    }
}

#[test]
fn a_burst_goes_to_the_library_and_the_file_alike() {
    let dir = scratch("plugin-both");
    let library = build_library(&dir, "count", &source("tests/plugins/count.c"));
    let jdk = &jdks()[0];
    for capture in ["events", "bci"] {
        let file = dir.join(format!("{}.trc", capture));
        let options = format!(
            "plugin={},output=both,file={},start=paused,capture={}",
            library.display(),
            file.display(),
            capture
        );
        let (printed, got) = user_trace(jdk, &options, "-", &dir);
        let fib = number(&printed, "fib_calls");
        assert_eq!(number(&got, "fib_enter"), fib, "{}", capture);
        let trace = read_trace(&file);
        let calls = calls(&trace);
        assert_eq!(total(&calls, "UserTrace.fib"), (fib, fib), "{}", capture);
        assert_eq!(
            total(&calls, "UserTrace$Counter.add"),
            (100, 100),
            "{}",
            capture
        );
    }
}

#[test]
fn the_sample_library_writes_every_call_as_a_line() {
    let dir = scratch("plugin-sample");
    let library = build_library(&dir, "trace", &source("examples/trace/trace.c"));
    for jdk in jdks() {
        for capture in ["events", "bci"] {
            let text_file = dir.join(format!("{}-{}.txt", jdk.name, capture));
            let mut c = java_command(
                &jdk,
                Some(&format!("plugin={},capture={}", library.display(), capture)),
                &["Fib"],
            );
            c.env("TRACE_FILE", &text_file);
            let r = run(c);
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            assert_eq!(r.stdout.trim(), "fib(20) = 6765");
            let text = std::fs::read_to_string(&text_file).expect("the sample's trace");
            let lines: Vec<&str> = text.lines().collect();
            // methods=on, gc=light, alloc=off: ExeOn | GCOnLight | AllocOff.
            assert_eq!(lines.first(), Some(&"begin flags=0x221"), "{}", capture);
            assert_eq!(lines.last(), Some(&"end"), "{}", capture);
            let count = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).count();
            assert_eq!(
                count("[main] > Fib.fib (static) depth="),
                21891,
                "{}",
                capture
            );
            assert_eq!(
                count("[main] < Fib.fib (static) depth="),
                21891,
                "{}",
                capture
            );
            let outermost = lines
                .iter()
                .filter(|l| **l == "[main] > Fib.fib (static) depth=2")
                .count();
            assert_eq!(
                outermost, 1,
                "main is frame 1, fib(20) frame 2: {}",
                capture
            );
        }
        // Entries only (ExeOnLight): each still at its own depth, fib(0) and fib(1) at 21.
        let text_file = dir.join(format!("{}-entries.txt", jdk.name));
        let mut c = java_command(
            &jdk,
            Some(&format!("plugin={},methods=entry", library.display())),
            &["Fib"],
        );
        c.env("TRACE_FILE", &text_file);
        assert_eq!(run(c).code, Some(0));
        let text = std::fs::read_to_string(&text_file).expect("the sample's trace");
        let depths: Vec<u64> = text
            .lines()
            .filter_map(|l| l.strip_prefix("[main] > Fib.fib (static) depth="))
            .map(|d| d.parse().unwrap())
            .collect();
        assert_eq!(depths.len(), 21891);
        assert_eq!(depths.iter().min(), Some(&2));
        assert_eq!(depths.iter().max(), Some(&21));
        assert!(!text.contains("< Fib.fib"));
    }
}

#[test]
fn a_broken_library_is_one_line_and_the_jvm_runs_untraced() {
    let dir = scratch("plugin-broken");
    let missing = dir.join("missing.c");
    std::fs::write(
        &missing,
        "unsigned long InstrumentTraceStartup(unsigned long v) { (void)v; return 0; }\n\
         unsigned long InstrumentTraceShutdown(void) { return 0; }\n\
         unsigned long InstrumentTraceBegin(unsigned long v, unsigned long f) { (void)v; (void)f; return 0; }\n\
         unsigned long InstrumentTraceEnd(void) { return 0; }\n",
    )
    .unwrap();
    let refusing = dir.join("refusing.c");
    std::fs::write(
        &refusing,
        "#include \"itrcstrt.h\"\n\
         unsigned long InstrumentTraceStartup(unsigned long v) { (void)v; return 7; }\n\
         unsigned long InstrumentTraceShutdown(void) { return 0; }\n\
         unsigned long InstrumentTraceBegin(unsigned long v, unsigned long f) { (void)v; (void)f; return 0; }\n\
         unsigned long InstrumentTraceEnd(void) { return 0; }\n\
         unsigned long InstrumentTraceEvent(struct InsEventInfo *e) { (void)e; return 0; }\n",
    )
    .unwrap();
    let cases = [
        (
            build_library(&dir, "missing", &missing),
            "does not export InstrumentTraceEvent",
        ),
        (build_library(&dir, "refusing", &refusing), "returned 7"),
        (
            dir.join("libnothere.so"),
            "cannot use the user trace library",
        ),
    ];
    let jdk = &jdks()[0];
    for (library, said) in cases {
        let r = java(
            jdk,
            Some(&format!("plugin={}", library.display())),
            &["Fib"],
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.stdout.trim(), "fib(20) = 6765");
        let lines: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("jlive:"))
            .collect();
        assert_eq!(lines.len(), 1, "{}", r.stderr);
        assert!(
            lines[0].contains(said) && lines[0].contains("the JVM runs untraced"),
            "{}",
            lines[0]
        );
    }
    // tracingStartup of a library that is not there throws InstrumentVMException.
    let mut c = Command::new(jdk.java());
    c.arg(format!(
        "-agentpath:{}=start=paused,output=plugin",
        agent().display()
    ))
    .arg("-cp")
    .arg(format!("{}:{}", classes().display(), api_jar().display()))
    .args(["UserTrace", "nothere"]);
    let r = run(c);
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr
            .contains("InstrumentVMException: cannot use the user trace library libnothere.so"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_heap_graph_holds_the_programs_tree_and_its_retainer() {
    for jdk in jdks() {
        let dir = scratch("heap");
        let socket = dir.join("ctl.sock");
        let file = dir.join("heap.jlh");
        let mut d = Driven::start(
            &jdk,
            &format!(
                "start=paused,control={},file={}",
                socket.display(),
                dir.join("t.trc").display()
            ),
            "Graph",
        );
        let answer = ok(&socket, &["heap", &file.display().to_string()]);
        assert!(answer.contains("objects"), "{}", answer);
        // The program runs on.
        writeln_line(&mut d, "count");
        assert_eq!(d.line(), "nodes 364 arrays 121");
        d.quit();
        let graph = jlive_writer::heap::read(&std::fs::read(&file).unwrap()).unwrap();
        let class_of = |name: &str| {
            graph
                .classes
                .iter()
                .position(|c| c == name)
                .map(|i| i as u32)
        };
        let node = class_of("Graph$Node").expect("Graph$Node in the graph");
        let array = class_of("[LGraph$Node;").expect("[LGraph$Node; in the graph");
        let members: std::collections::HashSet<u64> = graph
            .objects
            .iter()
            .filter(|o| o.class == node || o.class == array)
            .map(|o| o.id)
            .collect();
        assert_eq!(members.len(), 485, "{}", jdk.name);
        let inner = graph
            .refs
            .iter()
            .filter(|r| members.contains(&r.from) && members.contains(&r.to))
            .count();
        assert_eq!(inner, 484, "{}", jdk.name);
        let arrays: Vec<i32> = graph
            .objects
            .iter()
            .filter(|o| o.class == array)
            .map(|o| o.length)
            .collect();
        assert!(arrays.iter().all(|&l| l == 3), "{}", jdk.name);
        // jlive stats: the totals by class, and the root as the tree's retainer.
        let stats = jlive_ok(&[&"stats", &"--top", &"40", &file]);
        assert!(
            stats.lines().any(|l| l.trim_end().ends_with(" Graph$Node")
                && l.split_whitespace().next() == Some("364")),
            "{}",
            stats
        );
        let summary = jlive_writer::heap::summarize(&graph, 1000);
        let root = summary
            .retainers
            .iter()
            .find(|r| r.class == "Graph$Node")
            .expect("the root among the retainers");
        assert_eq!(root.retained_objects, 485, "{}: {:?}", jdk.name, root);
    }
}

fn writeln_line(d: &mut Driven, text: &str) {
    use std::io::Write;
    writeln!(d.input, "{}", text).unwrap();
}
