//! How instrumented code meets HotSpot's JIT. Under capture=bci with `inline=off` (the default
//! when a burst opens at start-up) every instrumented method is padded past FreqInlineSize, so
//! that neither C1 nor C2 inlines it (a compilation that inlines a hundred instrumented methods
//! spends up to a second in register allocation); a JVM started paused leaves methods short
//! when it instruments them (at the first burst, or as they load with `instrument=load`).
//! HotSpot's own -XX:+PrintInlining is the witness. Calls to intrinsic candidates that C2
//! replaces with its own code go unrecorded unless the intrinsic is switched off: counted.
//!
//! Each instrumented method reads `JliveTrampoline.gate` before it calls an entry or exit
//! native, so a JVM that never opens a burst calls no trampoline native, and no trampoline is
//! ever inlined (the natives cannot be; the Java trampolines of native-method wrappers and
//! allocations are `@DontInline`) but the Java side of the FFM critical downcalls (JDK 22 and
//! later), which is meant to be: inlined, it is a direct call of libjlive.

mod common;

use common::*;
use jlive_writer::read::Trace;
use std::process::Command;

/// What a paused run of `Hot` under `options` shows, its classes instrumented as they load
/// (`instrument=load`; by default a paused JVM runs them as they are until the first burst).
struct Inlining {
    /// The PrintInlining lines about `Hot.step` called from `Hot.loop`.
    step: Vec<String>,
    /// The PrintInlining lines about the trampolines.
    trampolines: Vec<String>,
    /// Methods the agent's log says it padded.
    padded: u64,
    /// Trampoline natives called although the gate was closed (the agent's log).
    past_gate: u64,
}

fn inlining_of_step(jdk: &Jdk, options: &str) -> Inlining {
    let dir = scratch("jit");
    let mut c = Command::new(jdk.java());
    c.args([
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:+PrintCompilation",
        "-XX:+PrintInlining",
        // Compile on the calling thread, so that the loop is compiled before main ends.
        "-XX:-BackgroundCompilation",
    ])
    .arg(format!(
        "-agentpath:{}=capture=bci,start=paused,instrument=load,control=off,file={},log={}{}",
        agent().display(),
        dir.join("t.trc").display(),
        dir.join("jlive.log").display(),
        options
    ))
    .arg("-cp")
    .arg(classes())
    .arg("Hot");
    let run = run(c);
    let log = std::fs::read_to_string(dir.join("jlive.log")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let padded = number_before(&log, " padded past");
    let past_gate = number_before(&log, " trampoline calls past a closed gate");
    assert_eq!(run.code, Some(0), "{}: {}", jdk.name, run.stderr);
    assert!(
        run.stdout.contains("sum = 200000"),
        "{}: {}",
        jdk.name,
        run.stdout
    );
    let lines = |what: &str| -> Vec<String> {
        run.stdout
            .lines()
            .filter(|l| l.contains("@ ") && l.contains(what))
            .map(|l| l.trim().to_string())
            .collect()
    };
    Inlining {
        step: lines("Hot::step ("),
        trampolines: lines("java.lang.JliveTrampoline::"),
        padded,
        past_gate,
    }
}

fn inlined(line: &str) -> bool {
    line.ends_with(" inline") || line.ends_with("inline (hot)")
}

#[test]
fn instrumented_methods_are_padded_under_inline_off_and_inlined_when_paused() {
    for jdk in jdks() {
        let run = inlining_of_step(&jdk, ",inline=off");
        let (padded, count) = (&run.step, run.padded);
        assert!(count > 1000, "{}: only {} methods padded", jdk.name, count);
        assert!(
            padded.iter().any(|l| l.contains("hot method too big")),
            "{}: C2 never declined Hot.step as too big: {:?}",
            jdk.name,
            padded
        );
        assert!(
            !padded.iter().any(|l| inlined(l)),
            "{}: a padded Hot.step was inlined: {:?}",
            jdk.name,
            padded
        );
        // start=paused: inline=auto leaves methods short.
        let run = inlining_of_step(&jdk, "");
        let (short, count) = (&run.step, run.padded);
        assert_eq!(count, 0, "{}: methods padded in a paused JVM", jdk.name);
        assert!(
            short.iter().any(|l| l.ends_with("inline (hot)")),
            "{}: in a paused JVM C2 did not inline Hot.step: {:?}",
            jdk.name,
            short
        );
    }
}

#[test]
fn a_paused_jvm_calls_no_trampoline_native() {
    for jdk in jdks() {
        let run = inlining_of_step(&jdk, "");
        // Hot makes 200,000 traced calls and the JDK's code many more, all with the gate shut:
        // each method reads JliveTrampoline.gate and skips its natives.
        assert_eq!(
            run.past_gate, 0,
            "{}: trampoline natives were called with no burst open",
            jdk.name
        );
        // Inlined by design: the critical downcalls' Java side, and the gate reads around
        // calls of intrinsic candidates.
        let critical = [
            "::enterCritical ",
            "::exitCritical ",
            "::downcall ",
            "::call ",
            "::called ",
            "::callCritical ",
            "::calledCritical ",
        ];
        assert!(
            !run.trampolines
                .iter()
                .any(|l| inlined(l) && !critical.iter().any(|c| l.contains(c))),
            "{}: a trampoline was inlined: {:?}",
            jdk.name,
            run.trampolines
        );
    }
}

/// Spin's loop is compiled paused, with step() inlined and the gate's calls compiled away; a
/// burst begins 500 ms later and lasts 300 ms. JliveTrampoline.gate is a plain field, so C2
/// reads it once before the loop; jlive makes every thread leave its compiled frames when it
/// sets the gate, and the loop, interpreted and then compiled again, records the burst.
#[test]
fn a_burst_begun_while_a_compiled_loop_runs_records_the_loop() {
    for jdk in jdks() {
        let options = "capture=bci,start=paused,delay=500ms,duration=300ms,control=off";
        let (run, trace) = traced(&jdk, options, &["Spin"]);
        assert!(
            run.stdout.starts_with("calls "),
            "{}: {}",
            jdk.name,
            run.stdout
        );
        let (entries, exits) = total(&calls(&trace), "Spin.step");
        println!(
            "{}: Spin.step in a 300 ms burst: {} entries, {} exits",
            jdk.name, entries, exits
        );
        // Recording, a call costs tens of ns: 300 ms hold millions. A loop that kept the gate it
        // read before the burst would record none.
        assert!(
            entries > 100_000,
            "{}: {} entries of Spin.step",
            jdk.name,
            entries
        );
        assert!(
            entries.abs_diff(exits) <= 1,
            "{}: {} entries, {} exits",
            jdk.name,
            entries,
            exits
        );
    }
}

/// Runs `Intrinsic` (a million calls of Math.min from `Intrinsic.work`, and 100,000 of
/// System.identityHashCode and of StringBuilder's `<init>`, `append(int)` and `toString`)
/// traced with `capture`, HotSpot given `flags`; its trace and the agent's log.
fn intrinsic_run(jdk: &Jdk, capture: &str, flags: &[&str]) -> (Trace, String) {
    let dir = scratch("intrinsic");
    let file = dir.join("t.trc");
    let log = dir.join("jlive.log");
    let options = format!("{},file={},log={}", capture, file.display(), log.display());
    let args: Vec<&str> = flags.iter().copied().chain(["Intrinsic"]).collect();
    let run = java(jdk, Some(&options), &args);
    assert_eq!(run.code, Some(0), "{}: {}", jdk.name, run.stderr);
    // 0 + 1 + ... + 5 + 5 * (1,000,000 - 6); the digits of 0, 10, ..., 999,990.
    assert_eq!(
        run.stdout.trim(),
        "sum 4999985\ndigits 588889",
        "{}",
        jdk.name
    );
    let trace = read_trace(&file);
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (trace, log)
}

/// The calls `Intrinsic` makes of intrinsic candidates, with how many it makes.
const INTRINSIC_CALLS: [(&str, &str, u64); 5] = [
    ("Intrinsic.work", "java/lang/Math.min", 1_000_000),
    (
        "Intrinsic.hash",
        "java/lang/System.identityHashCode",
        100_000,
    ),
    ("Intrinsic.text", "java/lang/StringBuilder.<init>", 100_000),
    ("Intrinsic.text", "java/lang/StringBuilder.append", 100_000),
    (
        "Intrinsic.text",
        "java/lang/StringBuilder.toString",
        100_000,
    ),
];

/// Math.min, System.identityHashCode and StringBuilder's methods are intrinsic candidates:
/// once C2 compiles their callers (and for some, in the interpreter too), their calls may run
/// HotSpot's own code, not their bytecode. capture=bci records them where they are called
/// then, and from their own bytecode when it runs, never both: every call appears once,
/// under its caller, as capture=events records them, with and without the intrinsic.
#[test]
fn calls_to_intrinsics_are_exact_whether_hotspot_runs_their_bytecode_or_its_own_code() {
    let disabled = [
        "-XX:+UnlockDiagnosticVMOptions",
        "-XX:DisableIntrinsic=_min,_identityHashCode",
        "-XX:-OptimizeStringConcat",
    ];
    for jdk in jdks() {
        let runs = [
            ("capture=bci", &[][..]),
            ("capture=bci", &disabled[..]),
            ("capture=events", &[][..]),
        ];
        for (capture, flags) in runs {
            let (trace, log) = intrinsic_run(&jdk, capture, flags);
            let label = format!("{} {} {:?}", jdk.name, capture, flags);
            assert_eq!(
                total(&calls(&trace), "Intrinsic.work"),
                (1_000_000, 1_000_000),
                "{}",
                label
            );
            for (caller, callee, n) in INTRINSIC_CALLS {
                assert_eq!(
                    calls_from(&trace, caller, callee),
                    (n, n),
                    "{}: {} from {}",
                    label,
                    callee,
                    caller
                );
            }
            if capture.starts_with("capture=bci") {
                let line = bci_summary(&log);
                assert!(
                    number_before(line, " intrinsic candidates") >= 5,
                    "{}",
                    line
                );
                assert!(number_before(line, " call sites") >= 5, "{}", line);
                println!("{}: {}", label, line);
            }
        }
    }
}

/// On JDK 22 and later (25 here) instrumented methods reach libjlive through FFM critical
/// downcalls: `JliveTrampoline.enterCritical`/`exitCritical` (`@DontInline`), which Hot's
/// compiled methods call, and which reach the JNI natives until jlive's thread has made the
/// downcalls; on JDK 17, and with `trampolines=jni`, through the JNI natives. Either way the
/// trace holds Hot's calls exactly: 200,000 of step and 20 of loop, entered and left.
#[test]
fn compiled_calls_are_exact_through_critical_downcalls_and_through_jni() {
    for jdk in jdks() {
        for extra in ["", ",trampolines=jni"] {
            let dir = scratch("critical");
            let (file, log) = (dir.join("t.trc"), dir.join("jlive.log"));
            let mut c = Command::new(jdk.java());
            c.args(["-XX:+UnlockDiagnosticVMOptions", "-XX:+PrintInlining"])
                .arg(format!(
                    "-agentpath:{}=capture=bci,control=off,file={},log={}{}",
                    agent().display(),
                    file.display(),
                    log.display(),
                    extra
                ))
                // Hot's loop once the downcalls are made, where they are.
                .arg(if jdk.name != "jdk17" && extra.is_empty() {
                    "-Dhot.wait=2500"
                } else {
                    "-Dhot.wait=0"
                })
                .arg("-cp")
                .arg(classes())
                .arg("Hot");
            let run = run(c);
            assert_eq!(run.code, Some(0), "{}{}: {}", jdk.name, extra, run.stderr);
            assert!(run.stdout.contains("sum = 200000"), "{}", run.stdout);
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let critical = jdk.name != "jdk17" && extra.is_empty();
            let said = if critical {
                "trampolines: FFM critical downcalls"
            } else {
                "trampolines: JNI natives"
            };
            assert!(log.contains(said), "{}{}: {}", jdk.name, extra, log);
            if critical {
                // Made, checked and handed to the trampolines while Hot waited.
                assert!(
                    log.contains("trampolines: FFM critical downcalls ready in")
                        && !log.contains("trampolines: JNI natives"),
                    "{}: {}",
                    jdk.name,
                    log
                );
            }
            // Compiled instrumented methods call enterCritical (@DontInline), or enter0.
            let lines = |what: &str| run.stdout.lines().filter(|l| l.contains(what)).count();
            assert_eq!(
                lines("java.lang.JliveTrampoline::enterCritical (") > 0,
                critical,
                "{}{}: compiled code calls enterCritical",
                jdk.name,
                extra
            );
            if !critical {
                assert!(
                    lines("java.lang.JliveTrampoline::enter0 (") > 0,
                    "{}{}: compiled code calls no enter0",
                    jdk.name,
                    extra
                );
            }
            // The downcalls record nearly everything themselves: the JNI natives get a
            // thread's first record and what comes while its buffer is handed over.
            let missed = number_before(&log, " critical downcalls left to JNI");
            assert!(
                missed < 4_000,
                "{}{}: {} of some 200,040 downcalls left to JNI",
                jdk.name,
                extra,
                missed
            );
            let trace = read_trace(&file);
            let calls = calls(&trace);
            assert_eq!(
                total(&calls, "Hot.step"),
                (200_000, 200_000),
                "{}{}",
                jdk.name,
                extra
            );
            // step is a leaf: each call entered and left by one call, at one tick (through
            // leafCritical's downcall on JDK 25).
            let mut entered = std::collections::HashMap::new();
            let mut instant = 0;
            for (_, e) in &trace.events {
                match e {
                    jlive_writer::model::Event::MethodEnter(e) => {
                        entered.insert((e.thread, e.ticket), (e.method, e.ticks));
                    }
                    jlive_writer::model::Event::MethodLeave(l) => {
                        if let Some((method, ticks)) = entered.remove(&(l.thread, l.ticket)) {
                            if trace.method_name(method) == "Hot.step" && l.ticks == ticks {
                                instant += 1;
                            }
                        }
                    }
                    _ => {}
                }
            }
            assert_eq!(instant, 200_000, "{}{}: step at one tick", jdk.name, extra);
            assert_eq!(total(&calls, "Hot.loop"), (20, 20), "{}{}", jdk.name, extra);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
