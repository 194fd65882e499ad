//! libjlive.so on real JVMs, in every format and under every capture: every decoded count is
//! compared with the number the example program knows exactly.

mod common;

use common::*;
use jlive_writer::check::check;
use jlive_writer::format::Format;
use jlive_writer::jinsight;
use jlive_writer::model::{Element, Event, MethodId, NO_OBJECT};
use jlive_writer::read::Trace;

/// The tests every capture must pass in every format, instantiated once per capture and
/// format below.
macro_rules! capture_tests {
    ($capture:expr, $format:expr) => {
        use super::super::*;

        const CAPTURE: &str = concat!($capture, ",format=", $format);

        #[test]
        fn methods_entry_and_off_are_honoured() {
            let jdk = &jdks()[0];
            let (_, entries) = traced(jdk, &format!("{},methods=entry", CAPTURE), &["Fib"]);
            let fib = total(&calls(&entries), "Fib.fib");
            assert_eq!(fib, (21891, 0), "methods=entry: entries only");
            assert_eq!(count(&entries, "METHOD_LEAVE"), 0);
            let (_, none) = traced(
                jdk,
                &format!("{},methods=off,alloc=on", CAPTURE),
                &["Alloc", "20"],
            );
            assert_eq!(
                count(&none, "METHOD_ENTER") + count(&none, "METHOD_LEAVE"),
                0,
                "methods=off"
            );
            assert!(count(&none, "ALLOC") >= 20, "allocations still recorded");
        }

        #[test]
        fn native_methods_are_traced() {
            for jdk in jdks() {
                let (run, trace) = traced(&jdk, CAPTURE, &["Natives"]);
                assert!(run.stderr.is_empty(), "{}: {}", jdk.name, run.stderr);
                // Adler32.update(int) 1000 times, each calling the native update(int, int).
                assert_eq!(
                    total(&calls(&trace), "java/util/zip/Adler32.update"),
                    (2000, 2000),
                    "{}",
                    jdk.name
                );
                // A native of a class the FFM set-up loads (JDK 25), its wrapper kept.
                assert_eq!(
                    calls_from(&trace, "Natives.main", "java/lang/reflect/Array.get"),
                    (1000, 1000),
                    "{}",
                    jdk.name
                );
                if CAPTURE.starts_with("capture=bci") {
                    // What could not be traced is in the trace, for `jlive stats`.
                    let note = bci_note(&trace);
                    assert!(note.contains("native methods"), "{}", note);
                }
            }
        }

        /// Every call of a leaf is seen as any other; capture=bci records a leaf's entry and
        /// exit by one call, at the same ticks, and only a leaf's.
        #[test]
        fn leaves_are_entered_and_left_as_often_as_called() {
            const LEAVES: [&str; 5] = ["count", "setCount", "twice", "add", "name"];
            const OTHERS: [&str; 5] = ["cell", "half", "sum", "viaLeaf", "type"];
            for jdk in jdks() {
                let dir = scratch("leaves-log");
                let log = dir.join("jlive.log");
                let options = format!("{},log={}", CAPTURE, log.display());
                let (run, trace) = traced(&jdk, &options, &["Leaves"]);
                assert_eq!(run.stdout.trim(), "acc 2260500 total 499500", "{}", jdk.name);
                // What the agent would have complained of on stderr is in its log.
                let log = std::fs::read_to_string(&log).unwrap();
                assert!(!log.contains("jlive: warning:"), "{}: {}", jdk.name, log);
                for method in LEAVES.iter().chain(&OTHERS) {
                    let callee = format!("Leaves.{}", method);
                    assert_eq!(
                        calls_from(&trace, "Leaves.main", &callee),
                        (1000, 1000),
                        "{}: {}",
                        jdk.name,
                        callee
                    );
                }
                assert_eq!(
                    calls_from(&trace, "Leaves.viaLeaf", "Leaves.twice"),
                    (1000, 1000),
                    "{}: a leaf called from a method that is not one",
                    jdk.name
                );
                if !CAPTURE.starts_with("capture=bci") {
                    continue;
                }
                // Each method's calls that took no tick.
                let mut entered: std::collections::HashMap<(u32, u32), (MethodId, u64)> =
                    Default::default();
                let mut by_method: std::collections::HashMap<MethodId, (u64, u64)> = Default::default();
                for (_, e) in &trace.events {
                    match e {
                        Event::MethodEnter(e) => {
                            entered.insert((e.thread, e.ticket), (e.method, e.ticks));
                        }
                        Event::MethodLeave(l) => {
                            if let Some((method, ticks)) = entered.remove(&(l.thread, l.ticket)) {
                                let tally = by_method.entry(method).or_default();
                                tally.0 += u64::from(l.ticks == ticks);
                                tally.1 += 1;
                            }
                        }
                        _ => {}
                    }
                }
                let mut instant: std::collections::HashMap<String, (u64, u64)> =
                    Default::default();
                for (&m, t) in &by_method {
                    let tally = instant.entry(trace.method_name(m)).or_default();
                    tally.0 += t.0;
                    tally.1 += t.1;
                }
                for method in LEAVES {
                    let tally = instant[&format!("Leaves.{}", method)];
                    let n = if method == "twice" { 2000 } else { 1000 }; // and from viaLeaf
                    assert_eq!(tally, (n, n), "{}: {} is a leaf", jdk.name, method);
                }
                // A method that is no leaf reads the clock twice. The two reads differ in all
                // but a few calls: the TSC of AMD's Zen steps by about 10 ns (26 ticks at
                // 2.6 GHz), so a call as short as cell()'s can read one value twice.
                for method in OTHERS {
                    let tally = instant[&format!("Leaves.{}", method)];
                    assert_eq!(tally.1, 1000, "{}: {} left", jdk.name, method);
                    assert!(
                        tally.0 < 1000 / 5,
                        "{}: {} is no leaf, yet {} of its 1000 calls took no tick",
                        jdk.name,
                        method,
                        tally.0
                    );
                }
                // The log counts them all, the JDK's leaves too (bench/run.sh reads it): the
                // calls of the methods whose every call took no tick.
                assert_eq!(
                    number_before(&log, " calls of leaves"),
                    by_method
                        .values()
                        .filter(|t| t.0 == t.1)
                        .map(|t| t.0)
                        .sum::<u64>(),
                    "{}: {}",
                    jdk.name,
                    log
                );
            }
        }

        /// String and Integer are loaded before the agent's VM init: capture=bci instruments
        /// them by retransforming them there (on up to four threads), capture=events sees them as any.
        #[test]
        fn methods_of_classes_loaded_before_vm_init_are_traced() {
            for jdk in jdks() {
                let (run, trace) = traced(&jdk, CAPTURE, &["Early"]);
                assert_eq!(run.stdout.trim(), "digits 2890", "{}", jdk.name);
                for callee in ["java/lang/Integer.toString", "java/lang/String.length"] {
                    assert_eq!(
                        calls_from(&trace, "Early.main", callee),
                        (1000, 1000),
                        "{}: {}",
                        jdk.name,
                        callee
                    );
                }
            }
        }

        /// -Xcheck:jni has nothing to say about the agent. (The local references of every
        /// loaded class, held by VM init's callback while HotSpot ran class-load callbacks
        /// inside it, drew a warning from every JNI call those made.) capture=events with
        /// objects=on is left out: its MethodEntry callback's JNI calls are counted against
        /// the references of the native frames below it (Class.forName0's), a warning HotSpot
        /// gives whatever the callback does.
        #[test]
        fn checked_jni_has_nothing_to_say() {
            let mut options = vec![CAPTURE.to_string()];
            if CAPTURE.starts_with("capture=bci") {
                options.push(format!("{},objects=on,alloc=on", CAPTURE));
            }
            for jdk in jdks() {
                for o in &options {
                    // HotSpot prints its warnings on stdout, which `traced` compares with a
                    // run without the agent.
                    let (run, trace) = traced(&jdk, o, &["-Xcheck:jni", "Workers", "3"]);
                    for text in [&run.stdout, &run.stderr] {
                        assert!(
                            !text.contains("WARNING") && !text.contains("FATAL"),
                            "{} {}: {}",
                            jdk.name,
                            o,
                            text
                        );
                    }
                    // Workers 3: worker-i calls work() 1000 * (i + 1) times.
                    assert_eq!(
                        total(&calls(&trace), "Workers.work"),
                        (6000, 6000),
                        "{} {}",
                        jdk.name,
                        o
                    );
                }
            }
        }

        #[test]
        fn fib20_enters_and_leaves_21891_times_on_main() {
            for jdk in jdks() {
                let (run, trace) = traced(&jdk, CAPTURE, &["Fib"]);
                assert_eq!(run.stdout.trim(), "fib(20) = 6765");
                let calls = calls(&trace);
                assert_eq!(total(&calls, "Fib.fib"), (21891, 21891), "{}", jdk.name);
                let threads = threads_of(&calls, "Fib.fib");
                assert_eq!(threads.len(), 1, "{}: fib ran on one thread", jdk.name);
                assert_eq!(trace.thread_name(threads[0]), "main", "{}", jdk.name);
                assert_eq!(trace.class_name(0), "java/lang/Object");
                assert_eq!(trace.class_name(1), "java/lang/Thread");
            }
        }

        #[test]
        fn exception_leaves_all_three_frames() {
            for jdk in jdks() {
                let (run, trace) = traced(&jdk, CAPTURE, &["Throws"]);
                assert_eq!(run.code, Some(3), "{}: exit code", jdk.name);
                let calls = calls(&trace);
                for m in ["Throws.outer", "Throws.middle", "Throws.inner"] {
                    assert_eq!(
                        total(&calls, m),
                        (1, 1),
                        "{}: {} entered and left once",
                        jdk.name,
                        m
                    );
                }
            }
        }

        #[test]
        fn each_worker_thread_has_its_own_id_name_and_calls() {
            for jdk in jdks() {
                let (_, trace) = traced(&jdk, CAPTURE, &["Workers", "4"]);
                let calls = calls(&trace);
                let mut seen = Vec::new();
                for i in 0..4u64 {
                    let ids = trace.threads_named(&format!("worker-{}", i));
                    assert_eq!(ids.len(), 1, "{}: worker-{} defined once", jdk.name, i);
                    let on_thread = calls
                        .get(&("Workers.work".to_string(), ids[0]))
                        .copied()
                        .unwrap_or_default();
                    assert_eq!(
                        on_thread,
                        (1000 * (i + 1), 1000 * (i + 1)),
                        "{}: worker-{}",
                        jdk.name,
                        i
                    );
                    seen.push(ids[0]);
                }
                assert_eq!(
                    total(&calls, "Workers.work"),
                    (10_000, 10_000),
                    "{}",
                    jdk.name
                );
                seen.dedup();
                assert_eq!(seen.len(), 4, "{}: four distinct thread IDs", jdk.name);
                let started: Vec<u32> = trace
                    .events
                    .iter()
                    .filter_map(|(_, e)| match e {
                        Event::ThreadStart { thread, .. } if seen.contains(thread) => Some(*thread),
                        _ => None,
                    })
                    .collect();
                assert_eq!(
                    started.len(),
                    4,
                    "{}: THREAD_START of each worker",
                    jdk.name
                );
            }
        }

        /// A virtual thread (JDK 21+) is a thread of its own: its calls are its own, in
        /// order, whichever of the two carriers ran them (its run() begins on one and ends on
        /// another), and none is its carrier's.
        #[test]
        fn each_virtual_thread_has_its_own_calls_across_carriers() {
            let Some(jdk) = jdks().into_iter().find(|j| j.name != "jdk17") else {
                println!("skipping virtual threads: they need JDK 21+, and only JDK 17 is installed");
                return;
            };
            virtual_threads_are_threads(&jdk, CAPTURE, 16);
        }

        #[test]
        fn allocations_of_a_class_and_of_int_arrays_are_counted_exactly() {
            for jdk in jdks() {
                let (_, trace) = traced(
                    &jdk,
                    &format!("{},alloc=on,gc=on", CAPTURE),
                    &["Alloc", "500"],
                );
                let int1237 = Some(jlive_writer::model::ArrayDef {
                    length: 1237,
                    element: Element::Primitive(b'I'),
                });
                let arrays = trace
                    .events
                    .iter()
                    .filter(|(_, e)| matches!(e, Event::Alloc { object, .. } if object.array == int1237))
                    .count();
                assert_eq!(
                    created_of(&trace, "Alloc$Payload").len(),
                    500,
                    "{}: allocations of Alloc$Payload",
                    jdk.name
                );
                assert_eq!(arrays, 500, "{}: allocations of int[1237]", jdk.name);
            }
        }

        #[test]
        fn collections_and_reclaimed_objects_are_counted_exactly() {
            for jdk in jdks() {
                // Three System.gc() calls: three collections.
                let (_, trace) = traced(
                    &jdk,
                    &format!("{},gc=on", CAPTURE),
                    &["Collect", "300", "3"],
                );
                assert_eq!(
                    (count(&trace, "GC_START"), count(&trace, "GC_FINISH")),
                    (3, 3),
                    "{}",
                    jdk.name
                );
                // With alloc=on, capture=events forces one collection at VM init (see README); bci
                // sees allocations at their sites and forces none.
                let forced = usize::from(CAPTURE.starts_with("capture=events"));
                let (_, trace) = traced(
                    &jdk,
                    &format!("{},alloc=on,gc=on", CAPTURE),
                    &["Collect", "300", "3"],
                );
                assert_eq!(
                    (count(&trace, "GC_START"), count(&trace, "GC_FINISH")),
                    (3 + forced, 3 + forced),
                    "{}",
                    jdk.name
                );
                let garbage: std::collections::HashSet<u32> =
                    created_of(&trace, "Collect$Garbage").into_iter().collect();
                let reclaimed = trace
                    .events
                    .iter()
                    .filter(|(_, e)| matches!(e, Event::Free { object, .. } if garbage.contains(object)))
                    .count();
                assert_eq!(garbage.len(), 300, "{}: Garbage objects created", jdk.name);
                assert_eq!(reclaimed, 300, "{}: Garbage objects reclaimed", jdk.name);
            }
        }

        #[test]
        fn receiver_object_ids_with_objects_on() {
            for jdk in jdks() {
                let (_, trace) = traced(&jdk, &format!("{},objects=on", CAPTURE), &["Alloc", "50"]);
                // Each Payload constructor runs on a distinct, defined object; static calls carry none.
                let mut receivers = Vec::new();
                for (_, e) in &trace.events {
                    if let Event::MethodEnter(e) = e {
                        let name = trace.method_name(e.method);
                        if name == "Alloc$Payload.<init>" {
                            assert_ne!(e.object, NO_OBJECT);
                            receivers.push(e.object);
                        }
                        if name == "Alloc.main" {
                            assert_eq!(e.object, NO_OBJECT, "a static method has no receiver");
                        }
                    }
                }
                receivers.sort();
                receivers.dedup();
                assert_eq!(receivers.len(), 50, "{}: 50 distinct receivers", jdk.name);
            }
        }

        #[test]
        fn tick_delta_matches_the_programs_own_clock() {
            for jdk in jdks() {
                let (run, trace) = traced(&jdk, CAPTURE, &["Timing"]);
                let measured_us: f64 = run
                    .stderr
                    .trim()
                    .strip_prefix("elapsed_us=")
                    .unwrap()
                    .parse()
                    .unwrap();
                let entry = |name: &str| {
                    trace
                        .events
                        .iter()
                        .find_map(|(_, e)| match e {
                            Event::MethodEnter(e) if trace.method_name(e.method) == name => {
                                Some(e.ticks)
                            }
                            _ => None,
                        })
                        .unwrap_or_else(|| panic!("no entry of {}", name))
                };
                let ticks = entry("Timing.markB") - entry("Timing.markA");
                let traced_us = ticks as f64 / f64::from(trace.info.ticks_per_microsecond);
                let error = (traced_us - measured_us).abs() / measured_us;
                assert!(
                    error < 0.01,
                    "{}: trace says {:.0} us, program measured {:.0} us",
                    jdk.name,
                    traced_us,
                    measured_us
                );
            }
        }

        #[test]
        fn blocked_and_running_threads_are_flushed_at_vm_death() {
            for jdk in jdks() {
                let (run, trace) = traced(&jdk, CAPTURE, &["Blocked"]);
                assert!(
                    run.elapsed < std::time::Duration::from_secs(60),
                    "{}: exit took {:?}",
                    jdk.name,
                    run.elapsed
                );
                let calls = calls(&trace);
                let stuck = trace.threads_named("stuck");
                assert_eq!(stuck.len(), 1);
                let on_stuck = calls
                    .get(&("Blocked.step".to_string(), stuck[0]))
                    .copied()
                    .unwrap_or_default();
                assert_eq!(
                    on_stuck,
                    (777, 777),
                    "{}: the blocked thread's calls",
                    jdk.name
                );
                let spinner = trace.threads_named("spinner");
                let spins = calls
                    .get(&("Blocked.spin".to_string(), spinner[0]))
                    .copied()
                    .unwrap_or_default();
                assert!(
                    spins.0 > 0 && spins.0 - spins.1 <= 1,
                    "{}: spinner {:?}",
                    jdk.name,
                    spins
                );
            }
        }

        #[test]
        fn include_and_exclude_select_classes() {
            let jdk = &jdks()[0];
            let (_, only) = traced(
                jdk,
                &format!("{},include=Workers*", CAPTURE),
                &["Workers", "2"],
            );
            let names: Vec<String> = calls(&only).keys().map(|(m, _)| m.clone()).collect();
            assert!(
                names.iter().all(|m| m.starts_with("Workers")),
                "{:?}",
                names
            );
            assert_eq!(total(&calls(&only), "Workers.work"), (3000, 3000));
            let (_, without) = traced(
                jdk,
                &format!("{},exclude=Workers", CAPTURE),
                &["Workers", "2"],
            );
            let c = calls(&without);
            assert_eq!(total(&c, "Workers.work"), (0, 0));
            assert_eq!(
                total(&c, "Workers$1.run"),
                (2, 2),
                "the anonymous class is not excluded"
            );
        }

    };
}

/// The tests of what only JinsightLive files say (their platform's byte order) and of real
/// programs, whose traces are large: once per capture, in JinsightLive.
macro_rules! jinsight_tests {
    ($capture:expr) => {
        use super::*;

        const CAPTURE: &str = $capture;

        #[test]
        fn linux_390_platform_writes_big_endian_events() {
            for jdk in jdks() {
                let dir = scratch("bigendian");
                let file = dir.join("be.trc");
                let run = java(
                    &jdk,
                    Some(&format!(
                        "{},platform=linux_390,file={}",
                        CAPTURE,
                        file.display()
                    )),
                    &["Fib"],
                );
                assert_eq!(run.code, Some(0));
                let data = std::fs::read(&file).unwrap();
                assert_eq!(
                    &data[5..9],
                    &55u32.to_le_bytes(),
                    "header platform 55, little-endian"
                );
                let trace = read_trace(&file);
                assert_eq!(total(&calls(&trace), "Fib.fib"), (21891, 21891));
                // The first event, BEGIN_BURST, holds its ticks big-endian: read that way they lie
                // just after the header's (little-endian) start ticks; read little-endian they do not.
                assert_eq!(data[45], jinsight::BEGIN_BURST);
                let raw: [u8; 8] = data[46..54].try_into().unwrap();
                let start = trace.info.start_ticks;
                let be = u64::from_be_bytes(raw);
                assert!(
                    be >= start && be - start < 1 << 40,
                    "BE ticks {} vs start {}",
                    be,
                    start
                );
                assert!(u64::from_le_bytes(raw).abs_diff(start) > 1 << 40);
                let _ = std::fs::remove_dir_all(&dir);
            }
        }

        #[test]
        fn javac_compiling_an_example_is_traced() {
            let jdk = &jdks()[0];
            let dir = scratch("javac");
            let file = dir.join("javac.trc");
            let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/Fib.java");
            let mut c = std::process::Command::new(jdk.java());
            c.arg(format!(
                "-agentpath:{}={},file={}",
                agent().display(),
                CAPTURE,
                file.display()
            ))
            .args([
                "-m",
                "jdk.compiler/com.sun.tools.javac.Main",
                "--release",
                "8",
                "-d",
            ])
            .arg(&dir)
            .arg(&source);
            let run = run(c);
            assert_eq!(run.code, Some(0), "javac: {}", run.stderr);
            assert!(dir.join("Fib.class").is_file(), "javac produced Fib.class");
            let calls = calls(&read_trace(&file));
            let (entries, leaves) = total(&calls, "com/sun/tools/javac/main/JavaCompiler.compile");
            assert_eq!((entries, leaves), (1, 1), "one compilation");
            let _ = std::fs::remove_dir_all(&dir);
        }

        #[test]
        fn h2_sql_script_is_traced() {
            let jar = std::path::Path::new("/usr/share/java/h2.jar");
            assert!(
                jar.is_file(),
                "Debian's h2 is missing: apt-get install -y libh2-java"
            );
            let jdk = &jdks()[0];
            let dir = scratch("h2");
            let script = h2_script(&dir);
            let file = dir.join("h2.trc");
            let args = |c: &mut std::process::Command| {
                c.arg("-cp")
                    .arg(jar)
                    .args([
                        "org.h2.tools.RunScript",
                        "-url",
                        "jdbc:h2:mem:jlive",
                        "-showResults",
                        "-script",
                    ])
                    .arg(&script);
            };
            let mut plain = std::process::Command::new(jdk.java());
            args(&mut plain);
            let plain = run(plain);
            let mut c = std::process::Command::new(jdk.java());
            c.arg(format!(
                "-agentpath:{}={},file={}",
                agent().display(),
                CAPTURE,
                file.display()
            ));
            args(&mut c);
            let traced = run(c);
            assert_eq!(traced.code, Some(0), "h2: {}", traced.stderr);
            assert_eq!(traced.stdout, plain.stdout, "h2 output unchanged");
            assert!(
                traced.stdout.contains("1000"),
                "h2 printed its result: {}",
                traced.stdout
            );
            let calls = calls(&read_trace(&file));
            let (entries, leaves) = total(&calls, "org/h2/tools/RunScript.main");
            assert_eq!((entries, leaves), (1, 1));
            let _ = std::fs::remove_dir_all(&dir);
        }
    };
}

mod events {
    jinsight_tests!("capture=events");

    mod binary {
        capture_tests!("capture=events", "binary");
    }
    mod tptp {
        capture_tests!("capture=events", "tptp");
    }
    mod tptp_xml {
        capture_tests!("capture=events", "tptp-xml");
    }
}

mod bci {
    jinsight_tests!("capture=bci");

    mod binary {
        capture_tests!("capture=bci", "binary");
    }
    mod tptp {
        capture_tests!("capture=bci", "tptp");
    }
    mod tptp_xml {
        capture_tests!("capture=bci", "tptp-xml");
    }
}
/// Runs VirtualThreads with `n` virtual threads, vt-i calling step() 10*(i%10+1) times:
/// each is defined once, starts and ends, enters and leaves its run() once and step() as
/// often as it called it, and no step() is left to a carrier.
fn virtual_threads_are_threads(jdk: &Jdk, options: &str, n: u64) {
    let (run, trace) = traced(jdk, options, &["VirtualThreads", &n.to_string()]);
    let steps = |i: u64| 10 * (i % 10 + 1);
    let sum: u64 = (0..n)
        .map(|i| (0..steps(i)).map(|k| k * 31 + 7).sum::<u64>())
        .sum();
    assert_eq!(
        run.stdout.trim(),
        format!("virtual threads={} total={}", n, sum)
    );
    let moved: u64 = run
        .stderr
        .trim()
        .strip_prefix("moved between carriers: ")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("unexpected stderr: {}", run.stderr));
    assert!(
        moved > 0,
        "no virtual thread changed carriers: the test proves nothing"
    );
    let calls = calls(&trace);
    let on = |method: &str, thread: u32| {
        calls
            .get(&(method.to_string(), thread))
            .copied()
            .unwrap_or_default()
    };
    let mut ids = Vec::new();
    for i in 0..n {
        let named = trace.threads_named(&format!("vt-{}", i));
        assert_eq!(named.len(), 1, "vt-{} defined once", i);
        let id = named[0];
        assert_eq!(
            on("VirtualThreads.step", id),
            (steps(i), steps(i)),
            "vt-{}",
            i
        );
        assert_eq!(
            on("VirtualThreads$1.run", id),
            (1, 1),
            "vt-{}: its run()",
            i
        );
        ids.push(id);
    }
    let all: u64 = (0..n).map(steps).sum();
    assert_eq!(
        total(&calls, "VirtualThreads.step"),
        (all, all),
        "no step() on a carrier"
    );
    for name in ["THREAD_START", "THREAD_END"] {
        let of_vthreads = trace
            .events
            .iter()
            .filter(|(_, e)| e.name() == name && e.thread().is_some_and(|t| ids.contains(&t)))
            .count();
        assert_eq!(of_vthreads as u64, n, "{} of each virtual thread", name);
    }
}

/// The trial of the issue that asked for them: 2,000 virtual threads, both captures.
#[test]
fn two_thousand_virtual_threads_are_two_thousand_threads() {
    let Some(jdk) = jdks().into_iter().find(|j| j.name != "jdk17") else {
        println!("skipping virtual threads: they need JDK 21+, and only JDK 17 is installed");
        return;
    };
    for capture in ["capture=events", "capture=bci"] {
        let dir = scratch("vlog");
        let log = dir.join("jlive.log");
        let options = format!("{},log={}", capture, log.display());
        virtual_threads_are_threads(&jdk, &options, 2000);
        // Their names were let go as they ended: what is left is the platform threads.
        let log = std::fs::read_to_string(&log).expect("log");
        let left = number_before(&log, " threads still described");
        assert!(left < 50, "{}: {} threads still described", capture, left);
    }
}

/// 600 platform threads, 20 StackOverflowErrors and 200 class loaders collected, under both
/// captures (JinsightLive and TPTP): every thread's calls exact, every stack balanced through
/// the overflows, each loader's plugin called once, and no loader kept alive by the agent.
#[test]
fn threads_overflows_and_dropped_class_loaders_are_traced_exactly() {
    for jdk in jdks() {
        for options in ["capture=events", "capture=bci,format=tptp"] {
            let (run, trace) = traced(&jdk, options, &["Hostile"]);
            let what = format!("{} {}", jdk.name, options);
            assert!(
                run.stdout.contains("plugins=200 sum=20100 collected=200"),
                "{}: {}",
                what,
                run.stdout
            );
            let calls = calls(&trace);
            for i in 0..600u64 {
                let named = trace.threads_named(&format!("p-{}", i));
                assert_eq!(named.len(), 1, "{}: p-{} defined once", what, i);
                let steps = i % 10 + 1;
                let got = calls.get(&("Hostile.step".to_string(), named[0]));
                assert_eq!(got, Some(&(steps, steps)), "{}: p-{}", what, i);
            }
            assert_eq!(threads_of(&calls, "Hostile.step").len(), 600, "{}", what);
            let main = trace.threads_named("main")[0];
            let on_main = |m: &str| calls.get(&(m.to_string(), main)).copied();
            assert_eq!(on_main("Hostile.overflow"), Some((20, 20)), "{}", what);
            assert_eq!(on_main("Hostile.recovered"), Some((20, 20)), "{}", what);
            let (entered, left) = on_main("Hostile.deep").unwrap_or_default();
            assert!(
                entered > 20 * 1000,
                "{}: deep entered {} times",
                what,
                entered
            );
            assert_eq!(
                entered, left,
                "{}: every deep frame left by its error",
                what
            );
            assert_eq!(
                calls_from(&trace, "Hostile.main", "Hostile.overflow"),
                (20, 20)
            );
            assert_eq!(total(&calls, "Hostile$Plugin.run"), (200, 200), "{}", what);
        }
    }
}

/// Virtual threads that began before a burst are followed from their first mount in it: each
/// called step() five times and waited before the burst began, then called it 10*(i%10+1)
/// times. Their runs began before the burst: neither entry nor leave is written. One more was
/// calling step() on its carrier when the burst began, and left it only at its end: its calls
/// are no one's (not its carrier's).
#[test]
fn virtual_threads_that_began_before_a_burst_are_followed_in_it() {
    let Some(jdk) = jdks().into_iter().find(|j| j.name != "jdk17") else {
        println!("skipping virtual threads: they need JDK 21+, and only JDK 17 is installed");
        return;
    };
    for capture in ["capture=events", "capture=bci"] {
        let dir = scratch("vburst");
        let file = dir.join("t.trc");
        let mut c = std::process::Command::new(jdk.java());
        c.arg(format!(
            "-agentpath:{}=start=paused,control=off,{},file={}",
            agent().display(),
            capture,
            file.display()
        ));
        c.arg("-cp")
            .arg(format!("{}:{}", classes().display(), api_jar().display()))
            .args(["VirtualThreads", "40", "burst"]);
        let traced = run(c);
        assert_eq!(traced.code, Some(0), "{}: {}", capture, traced.stderr);
        let trace = read_trace(&file);
        let calls = calls(&trace);
        for i in 0..40u64 {
            let named = trace.threads_named(&format!("vt-{}", i));
            assert_eq!(named.len(), 1, "{}: vt-{} defined once", capture, i);
            let on = |method: &str| {
                calls
                    .get(&(method.to_string(), named[0]))
                    .copied()
                    .unwrap_or_default()
            };
            let steps = 10 * (i % 10 + 1);
            assert_eq!(
                on("VirtualThreads.step"),
                (steps, steps),
                "{}: vt-{}",
                capture,
                i
            );
            assert_eq!(on("VirtualThreads$1.run"), (0, 0), "{}: vt-{}", capture, i);
        }
        let all: u64 = (0..40u64).map(|i| 10 * (i % 10 + 1)).sum();
        assert_eq!(
            total(&calls, "VirtualThreads.step"),
            (all, all),
            "{}: no step() on a carrier",
            capture
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// overflow=drop with a writer held back (the trace goes into a pipe read 4 KiB every 5 ms, the
/// buffers and the channel small): threads drop method records instead of waiting, each
/// place is marked, and on every worker the entries written plus the entries dropped are the
/// program's own count; the file checks (the stacks resynchronised at each mark).
#[test]
fn overflow_drop_counts_what_it_drops_exactly() {
    use std::io::Read;
    let jdk = &jdks()[0];
    let dir = scratch("overflow");
    let fifo = dir.join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut pipe = std::fs::File::open(&fifo).unwrap();
            let (mut data, mut chunk) = (Vec::new(), [0u8; 4096]);
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break data,
                    Ok(n) => data.extend_from_slice(&chunk[..n]),
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let run = java(
        jdk,
        Some(&format!(
            "file={},overflow=drop,buffer=4k,capture=bci,include=Workers*",
            fifo.display()
        )),
        &["Workers", "8"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "workers=8 total=3161694000");
    let data = reader.join().unwrap();
    if let Err(e) = check(&data) {
        panic!("the piped trace fails jlive check: {}", e);
    }
    let trace = Trace::decode(&data).unwrap();
    let mut dropped: std::collections::HashMap<u32, u64> = Default::default();
    let mut total_dropped = 0;
    for (_, e) in &trace.events {
        let Event::UserEvent { text, .. } = e else {
            continue;
        };
        let Some(rest) = text.strip_prefix(jlive_writer::model::LOST_PREFIX) else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        // "E entries and X exits of thread T dropped; ..."
        let (entries, exits): (u64, u64) = (words[0].parse().unwrap(), words[3].parse().unwrap());
        let thread: u32 = words[7].parse().unwrap();
        *dropped.entry(thread).or_default() += entries;
        total_dropped += entries + exits;
    }
    assert!(
        total_dropped > 0,
        "nothing was dropped: the test proves nothing"
    );
    assert!(
        run.stderr.contains(&format!(
            "overflow=drop: {} method records were dropped",
            total_dropped
        )),
        "{}",
        run.stderr
    );
    let calls = calls(&trace);
    for i in 0..8u64 {
        let ids = trace.threads_named(&format!("worker-{}", i));
        assert_eq!(ids.len(), 1, "worker-{}", i);
        let written: u64 = calls
            .iter()
            .filter(|((_, t), _)| *t == ids[0])
            .map(|(_, (entries, _))| entries)
            .sum();
        let lost = dropped.get(&ids[0]).copied().unwrap_or(0);
        assert_eq!(
            written + lost,
            1000 * (i + 1) + 1,
            "worker-{}: {} written + {} dropped (work() and run())",
            i,
            written,
            lost
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn xrun_loads_as_an_agent() {
    let jdk = &jdks()[0];
    let dir = scratch("xrun");
    let file = dir.join("x.trc");
    let mut c = std::process::Command::new(jdk.java());
    c.env("LD_LIBRARY_PATH", agent().parent().unwrap())
        .arg(format!("-Xrunjlive:file={}", file.display()))
        .arg("-cp")
        .arg(classes())
        .arg("Fib");
    let run = run(c);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(total(&calls(&read_trace(&file)), "Fib.fib"), (21891, 21891));
}

#[test]
fn bad_options_stop_the_jvm_before_main_with_one_line() {
    let jdk = &jdks()[0];
    let cases = [
        (
            "fromat=binary",
            "jlive: unknown option 'fromat'; did you mean 'format'?",
        ),
        (
            "methods=sometimes",
            "jlive: bad value 'sometimes' for option 'methods': accepted on, entry, off",
        ),
        (
            "file=/nonexistent/dir/t.trc",
            "jlive: cannot create trace file /nonexistent/dir/t.trc",
        ),
    ];
    for (options, said) in cases {
        let run = java(jdk, Some(options), &["Fib"]);
        assert_ne!(run.code, Some(0), "{} must stop the JVM", options);
        assert!(
            !run.stdout.contains("fib(20)"),
            "{}: main must not run",
            options
        );
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("jlive:"))
            .collect();
        assert_eq!(lines.len(), 1, "{}: {:?}", options, run.stderr);
        assert!(lines[0].starts_with(said), "{}: {}", options, lines[0]);
    }
    let help = java(jdk, Some("help"), &["Fib"]);
    assert_eq!(help.code, Some(0));
    for key in [
        "format", "file", "capture", "methods", "gc", "alloc", "objects", "include", "exclude",
        "clock", "platform", "buffer", "log",
    ] {
        assert!(
            help.stdout.contains(&format!("jlive:   {} ", key)),
            "help lists {}",
            key
        );
    }
}

#[test]
fn a_full_disk_leaves_the_program_alone() {
    let jdk = &jdks()[0];
    let run = java(jdk, Some("file=/dev/full"), &["Fib"]);
    assert_eq!(run.code, Some(0));
    assert_eq!(run.stdout.trim(), "fib(20) = 6765");
    assert!(
        run.stderr
            .starts_with("jlive: writing the trace failed: No space left on device"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "one line: {}", run.stderr);
}

/// A panic on the writer thread (injected: JLIVE_FAULT) stops recording with one `jlive:`
/// line; the JVM runs to its end with its output unchanged.
#[test]
fn a_panic_on_the_writer_thread_stops_recording_and_spares_the_jvm() {
    for jdk in jdks() {
        let dir = scratch("panic");
        let file = dir.join("t.trc");
        let mut c = java_command(
            &jdk,
            Some(&format!("file={}", file.display())),
            &["Workers", "8"],
        );
        c.env("JLIVE_FAULT", "writer-panic:3");
        let run = run(c);
        assert_eq!(run.code, Some(0), "{}: {}", jdk.name, run.stderr);
        assert_eq!(run.stdout.trim(), "workers=8 total=3161694000");
        assert!(
            run.stderr.starts_with(
                "jlive: the writer failed: fault injected by JLIVE_FAULT at batch 3; recording stopped"
            ),
            "{}: {}",
            jdk.name,
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The byte offset at which a position of `format`'s files begins (a line of a text format).
fn byte_offset(format: Format, data: &[u8], at: usize) -> usize {
    if !format.is_text() {
        return at;
    }
    let mut newlines = data.iter().enumerate().filter(|(_, &b)| b == b'\n');
    newlines.nth(at.saturating_sub(2)).map_or(0, |(i, _)| i + 1)
}

/// compress=gzip, each format and capture: the file is named .gz, is gzip, checks, and holds
/// fib's 21,891 calls; `jlive stats` reads it; `jlive convert` writes a compressed file too.
#[test]
fn compressed_traces_hold_every_call() {
    let jdk = &jdks()[0];
    for format in Format::ALL {
        for capture in ["events", "bci"] {
            let dir = scratch("gzip");
            let file = dir.join(format!("t.{}", format.extension()));
            let options = format!(
                "capture={},format={},compress=gzip,file={}",
                capture,
                format.name(),
                file.display()
            );
            let run = java(jdk, Some(&options), &["Fib"]);
            assert_eq!(run.stdout.trim(), "fib(20) = 6765", "{}", run.stderr);
            assert!(
                !file.exists(),
                "{:?}: the plain name is not written",
                format
            );
            let gz = dir.join(format!("t.{}.gz", format.extension()));
            let data = std::fs::read(&gz).expect("the .gz file");
            assert!(data.starts_with(&jlive_writer::gzip::MAGIC));
            check(&data).unwrap_or_else(|e| panic!("{:?} {}: {}", format, capture, e));
            let trace = Trace::decode(&data).unwrap();
            assert_eq!(trace.format, format);
            let fib = total(&calls(&trace), "Fib.fib");
            assert_eq!(fib, (21891, 21891), "{:?} {}", format, capture);
            let plain = decompressed(&data);
            assert!(plain.len() > data.len() * 2, "{:?}: compressed", format);
            assert!(check(&plain).is_ok(), "{:?}", format);
            let said = std::process::Command::new(jlive_bin())
                .arg("stats")
                .arg(&gz)
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&said.stdout);
            assert!(out.contains("Fib.fib"), "{:?}: {}", format, out);
            // A flipped bit anywhere: an error (or, in a part the checksum covers last, a
            // file that reads), never a panic; a cut one reads up to where it was cut.
            let mut seed = 0x2545_f491_4f6c_dd1du64;
            for _ in 0..200 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let mut bad = data.clone();
                let at = (seed % bad.len() as u64) as usize;
                bad[at] ^= 1 << (seed >> 60 & 7);
                let _ = check(&bad);
                let _ = check(&bad[..at]);
            }
            if capture == "events" {
                let again = dir.join("again.trc.gz");
                let converted = std::process::Command::new(jlive_bin())
                    .arg("convert")
                    .arg(&gz)
                    .arg(&again)
                    .output()
                    .unwrap();
                assert!(converted.status.success());
                let data = std::fs::read(&again).unwrap();
                assert!(data.starts_with(&jlive_writer::gzip::MAGIC));
                let trace = Trace::decode(&data).unwrap();
                assert_eq!(trace.format, Format::Jinsight);
                assert_eq!(total(&calls(&trace), "Fib.fib"), (21891, 21891));
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// `jlive tree`: fib(20)'s calls are 20 calling contexts on main, one per depth of the
/// recursion, whose calls add up to 21,891, the first with one call; `jlive export --to
/// collapsed` weighs the same contexts, `--to chrome` gives a slice per call, `--to svg` draws
/// them; `jlive stats` names overloads with their signatures, so that no two methods
/// share a name in the demo's rankings.
#[test]
fn the_tree_and_folded_stacks_hold_each_calling_context_and_stats_tells_overloads_apart() {
    let jdk = &jdks()[0];
    let dir = scratch("tree");
    let file = dir.join("t.trc");
    let run = java(jdk, Some(&format!("file={}", file.display())), &["Fib"]);
    assert_eq!(run.stdout.trim(), "fib(20) = 6765");
    let said = std::process::Command::new(jlive_bin())
        .args(["tree", "--min", "0", "--thread", "main"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(said.status.success());
    let out = String::from_utf8_lossy(&said.stdout);
    let fib: Vec<(u64, usize)> = out
        .lines()
        .filter(|l| l.trim_end().ends_with(" Fib.fib"))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let indent = l.find("Fib.fib").unwrap();
            (words[3].parse().unwrap(), indent)
        })
        .collect();
    assert_eq!(fib.len(), 20, "{}", out);
    assert_eq!(fib.iter().map(|f| f.0).sum::<u64>(), 21891, "{}", out);
    assert_eq!(fib[0].0, 1);
    assert!(
        fib.windows(2).all(|w| w[1].1 == w[0].1 + 2),
        "each one deeper"
    );
    assert!(out.starts_with("thread "), "{}", out);
    // Folded stacks: by calls, they add up to the trace's entries (fib's alone to 21,891);
    // by self time, a thread's to its traced time.
    let folded = |weight: &str| {
        jlive_ok(&[
            &"export",
            &"--to",
            &"collapsed",
            &"--weight",
            &weight,
            &file,
        ])
    };
    let weights = |text: &str, keep: &dyn Fn(&str) -> bool| -> u64 {
        text.lines()
            .filter(|l| keep(l))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    let by_calls = folded("calls");
    assert_eq!(weights(&by_calls, &|l| l.contains(";Fib.fib ")), 21891);
    let trace = read_trace(&file);
    let entries = count(&trace, "METHOD_ENTER") as u64;
    assert_eq!(weights(&by_calls, &|_| true), entries);
    let by_time = folded("self");
    let lines = by_time.lines().filter(|l| l.starts_with("main;")).count() as f64;
    let main_ns = weights(&by_time, &|l| l.starts_with("main;")) as f64;
    let traced_ms: f64 = out
        .split(" ms traced")
        .next()
        .and_then(|h| h.rsplit(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (main_ns / 1e6 - traced_ms).abs() <= 0.001 + lines / 1e6,
        "main: {} ns folded, {} ms traced",
        main_ns,
        traced_ms
    );
    // Chrome's trace-event JSON: a B per entry (fib's 21,891 on main), an E for each.
    let json = dir.join("t.json");
    jlive_ok(&[&"export", &"--to", &"chrome", &"-o", &json, &file]);
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let phase = |ph: &'static str| events.iter().filter(move |e| e["ph"] == ph);
    assert_eq!(phase("B").count() as u64, entries);
    assert_eq!(phase("E").count() as u64, entries);
    let main = trace.threads_named("main")[0];
    let fib = phase("B").filter(|e| e["name"] == "Fib.fib" && e["tid"] == main);
    assert_eq!(fib.count(), 21891);
    assert!(phase("M").any(|e| e["args"]["name"] == "main" && e["tid"] == main));
    // The flame graph (inferno): well-formed SVG with fib's frames on main.
    let svg = dir.join("t.svg");
    jlive_ok(&[&"export", &"--to", &"svg", &"-o", &svg, &file]);
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<?xml") && drawn.contains("<svg"));
    assert!(drawn.contains("Fib.fib") && drawn.contains("main"));
    let lint = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg(&svg)
        .status()
        .expect("xmllint (apt-get install libxml2-utils)");
    assert!(lint.success(), "the SVG is well-formed XML");
    // One thread's only.
    let mains = jlive_ok(&[
        &"export",
        &"--to",
        &"collapsed",
        &"--weight",
        &"calls",
        &"--thread",
        &"main",
        &file,
    ]);
    assert!(mains.lines().all(|l| l.starts_with("main;")), "{}", mains);
    assert_eq!(weights(&mains, &|l| l.contains(";Fib.fib ")), 21891);
    let pruned = std::process::Command::new(jlive_bin())
        .args(["tree", "--thread", "main"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&pruned.stdout).contains("left out"));
    let nobody = std::process::Command::new(jlive_bin())
        .args(["tree", "--thread", "nobody"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(nobody.status.code(), Some(2));

    let demo = dir.join("demo.trc");
    let run = java(jdk, Some(&format!("file={}", demo.display())), &["Demo"]);
    assert_eq!(run.code, Some(0));
    let said = std::process::Command::new(jlive_bin())
        .args(["stats", "--top", "100000"])
        .arg(&demo)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&said.stdout);
    let ranked = out.split("top methods by calls:").nth(1).unwrap();
    let ranked = ranked.split("top methods by self time:").next().unwrap();
    let names: Vec<&str> = ranked
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
    assert_eq!(names.len(), unique.len(), "{}", ranked);
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("java/lang/StringBuilder.append(")),
        "{}",
        ranked
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a compressed file decompresses to (up to where it was cut).
fn decompressed(data: &[u8]) -> Vec<u8> {
    use std::io::Read;
    assert!(data.starts_with(&jlive_writer::gzip::MAGIC), "not gzip");
    let mut out = Vec::new();
    jlive_writer::gzip::Whole::of(data, data)
        .read_to_end(&mut out)
        .expect("decompresses");
    out
}

/// With compress=gzip too: a compressed file reads up to its last flush (each flush ends a
/// deflate block), and every reader reads it as it reads the plain file.
#[test]
fn a_killed_jvm_leaves_a_file_readable_up_to_its_last_flush() {
    use std::io::BufRead;
    let jdk = &jdks()[0];
    for (format, gzip) in Format::ALL
        .into_iter()
        .flat_map(|f| [(f, false), (f, true)])
    {
        let dir = scratch("killed");
        let file = dir.join(format!("k.{}", format.extension()));
        let socket = dir.join("c.sock");
        let mut child = std::process::Command::new(jdk.java())
            .arg(format!(
                "-agentpath:{}=format={},file={},compress={},control={}",
                agent().display(),
                format.name(),
                file.display(),
                if gzip { "gzip" } else { "off" },
                socket.display()
            ))
            .arg("-cp")
            .arg(classes())
            .arg("Endless")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        // Everything recorded so far written (`jlive ctl flush`: the writer thread runs
        // niced, and on a busy host the JIT's threads can keep it from its 100 ms flush for
        // seconds), then SIGKILL: no VM death, no close.
        ok(&socket, &["flush"]);
        let path = if gzip {
            dir.join(format!("k.{}.gz", format.extension()))
        } else {
            file.clone()
        };
        child.kill().unwrap();
        child.wait().unwrap();
        let data = if gzip {
            let compressed = std::fs::read(&path);
            let compressed = compressed.expect("the agent names a compressed file .gz");
            let data = decompressed(&compressed);
            let read = Trace::decode(&compressed).expect("decodes");
            assert_eq!(
                read.events.len(),
                Trace::decode(&data).unwrap().events.len()
            );
            data
        } else {
            std::fs::read(&file).unwrap()
        };
        let trace = killed_trace(format, &data).expect("flushed");
        let (entries, _) = total(&calls(&trace), "Endless.tick");
        assert!(
            entries >= 100_000,
            "{:?} gzip {}: the calls before 'ready' were flushed: {}",
            format,
            gzip,
            entries
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Checks the file of a JVM killed while it wrote `data`: it lacks only its end, or it was
/// cut inside an event (SIGKILL can stop the writer's write(2) between two pages) and is such
/// a trace up to that event. Some(where it was cut, if it was); None: killed before the first
/// flush (nothing, or part of the header).
fn check_killed(format: Format, data: &[u8]) -> Option<Option<usize>> {
    if data.is_empty() {
        return None;
    }
    let Err(err) = check(data) else {
        return Some(None); // it had finished
    };
    let cut = err.cut_short.then(|| err.line.unwrap_or(err.offset));
    let whole = cut.map_or(data.len(), |at| byte_offset(format, data, at));
    if whole == 0 {
        return None;
    }
    let err = check(&data[..whole]).unwrap_err();
    assert!(!err.cut_short, "{:?}: {}", format, err);
    let end = match format {
        Format::Jinsight => "no TraceEnd",
        Format::Tptp | Format::TptpXml => "no agentDestroy",
        Format::Orca => unreachable!("ORCA logs have no end: not among Format::ALL"),
    };
    assert!(
        err.message.contains(end),
        "{:?}: only the end is missing: {}",
        format,
        err
    );
    Some(cut)
}

/// [`check_killed`], then every event before the cut decodes.
fn killed_trace(format: Format, data: &[u8]) -> Option<Trace> {
    let cut = check_killed(format, data)?;
    let trace = Trace::decode(data).expect("every written event decodes");
    assert_eq!(trace.cut_at, cut, "{:?}", format);
    Some(trace)
}

/// SIGKILL at moments spread over traced h2 runs (start-up, recording, shutdown; the three
/// formats in turn; h2's command classes traced, which keeps the XML files at 15 MB): each
/// file reads up to its last flush, and `jlive stats` reads it (JLIVE_KILLS=N for more).
#[test]
fn kills_of_a_traced_h2_leave_every_file_readable() {
    let kills: usize = std::env::var("JLIVE_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(50);
    let jar = std::path::Path::new("/usr/share/java/h2.jar");
    assert!(
        jar.is_file(),
        "Debian's h2 is missing: apt-get install -y libh2-java"
    );
    let jdk = &jdks()[0];
    let dir = scratch("kills");
    let script = h2_script(&dir);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let (mut read, mut finished, mut torn, mut with_events) = (0, 0, 0, 0);
    for k in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let format = Format::ALL[k % 3];
        let file = dir.join(format!("k{}.{}", k, format.extension()));
        let mut child = std::process::Command::new(jdk.java())
            .arg(format!(
                "-agentpath:{}=capture=bci,include=org.h2.command.*,format={},file={}",
                agent().display(),
                format.name(),
                file.display()
            ))
            .args(["-cp", jar.to_str().unwrap(), "org.h2.tools.RunScript"])
            .args(["-url", "jdbc:h2:mem:k", "-script"])
            .arg(&script)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // 20 to 620 ms: from VM start-up to about the end of a run.
        std::thread::sleep(std::time::Duration::from_millis(20 + seed % 600));
        let _ = child.kill();
        let status = child.wait().unwrap();
        finished += usize::from(status.success());
        let data = std::fs::read(&file).unwrap_or_default();
        if let Some(trace) = killed_trace(format, &data) {
            read += 1;
            torn += usize::from(trace.cut_at.is_some());
            with_events += usize::from(!trace.events.is_empty());
            // A file cut during start-up may hold its header alone: stats counts what the
            // decoder found, no more and no less.
            let said = std::process::Command::new(jlive_bin())
                .arg("stats")
                .arg(&file)
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&said.stdout);
            assert!(said.status.success(), "kill {}: jlive stats failed", k);
            let counted = trace
                .events
                .iter()
                .filter(|(_, e)| !e.is_lifecycle())
                .count();
            let counted = format!("events: {} ", counted);
            assert!(out.starts_with(&counted), "kill {}: {}", k, out);
        }
        let _ = std::fs::remove_file(&file);
    }
    println!(
        "{} kills: {} files read ({} with events, {} cut inside an event), {} runs had finished",
        kills, read, with_events, torn, finished
    );
    assert!(
        with_events * 3 >= kills * 2,
        "most files hold events: {}",
        with_events
    );
    assert!(
        read * 4 >= kills * 3,
        "most kills come after the first flush: {}",
        read
    );
    assert!(
        finished * 2 <= kills,
        "most runs were killed, not finished: {}",
        finished
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Entries and leaves of the example program's own methods (class names without a package).
fn app_calls(trace: &Trace) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut out = std::collections::BTreeMap::new();
    for ((method, _), (e, l)) in calls(trace) {
        if !method.contains('/') {
            let slot = out.entry(method).or_insert((0, 0));
            slot.0 += e;
            slot.1 += l;
        }
    }
    out
}

#[test]
fn both_captures_give_the_same_counts() {
    for jdk in jdks() {
        for program in [
            &["Fib"][..],
            &["Throws"],
            &["Workers", "3"],
            &["Alloc", "20"],
            &["Demo"],
        ] {
            let (_, events) = traced(&jdk, "capture=events", program);
            let (_, bci) = traced(&jdk, "capture=bci", program);
            let (a, b) = (app_calls(&events), app_calls(&bci));
            assert!(!a.is_empty(), "{}: {:?} traced nothing", jdk.name, program);
            assert_eq!(a, b, "{}: {:?}: events vs bci", jdk.name, program);
        }
    }
}

/// libjlive.so's thread-locals (its PT_TLS segment) fit glibc's default reserve of static TLS
/// for dlopen'ed modules, 512 bytes (`glibc.rtld.optional_static_tls`): at 520 bytes the
/// agent warned on JDK 17 (glibc 2.36) and every thread's first record took glibc's slow path.
/// A new `thread_local!` belongs in an existing one's struct, or in a ThreadBuffer.
#[test]
fn the_agents_thread_locals_fit_glibcs_static_tls_reserve() {
    let lib = std::fs::read(agent()).expect("libjlive.so");
    let u16_at = |o: usize| u16::from_le_bytes([lib[o], lib[o + 1]]) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(lib[o..o + 8].try_into().unwrap());
    assert_eq!(&lib[..5], b"\x7fELF\x02", "a 64-bit ELF file");
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    let tls = (0..phnum)
        .map(|i| phoff + i * phentsize)
        .find(|&h| u32::from_le_bytes(lib[h..h + 4].try_into().unwrap()) == 7)
        .map(|h| u64_at(h + 0x28));
    let size = tls.expect("a PT_TLS segment");
    assert!(
        size <= 512,
        "libjlive.so's thread-locals take {} bytes",
        size
    );
}

/// With glibc's reserve for dlopen'ed modules taken away, libjlive.so's thread-locals land
/// outside static TLS: the agent says so (naming the remedy) and still records every call
/// through glibc's slower TLS path, on every thread.
#[test]
fn thread_locals_outside_static_tls_are_reported_and_still_record() {
    for jdk in jdks() {
        let dir = scratch("dynamic-tls");
        let file = dir.join("t.trc");
        let options = format!("capture=bci,file={}", file.display());
        let mut c = java_command(&jdk, Some(&options), &["Workers", "3"]);
        c.env("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=0");
        let traced = run(c);
        assert_eq!(traced.code, Some(0), "{}: {}", jdk.name, traced.stderr);
        assert!(
            traced
                .stderr
                .contains("not in static TLS: start the JVM with GLIBC_TUNABLES="),
            "{}: {}",
            jdk.name,
            traced.stderr
        );
        let trace = read_trace(&file);
        // Workers 3: worker-i calls work() 1000 * (i + 1) times.
        assert_eq!(
            total(&calls(&trace), "Workers.work"),
            (6000, 6000),
            "{}",
            jdk.name
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
