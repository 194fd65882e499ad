//! How instrumented code meets HotSpot's JIT. Under capture=bci every instrumented method is
//! padded past FreqInlineSize, so that neither C1 nor C2 inlines it (a compilation that
//! inlines a hundred instrumented methods spends up to a second in register allocation);
//! `inline=on` leaves methods short. HotSpot's own -XX:+PrintInlining is the witness.

mod common;

use common::*;
use std::process::Command;

/// The PrintInlining lines about `Hot.step` called from `Hot.loop`, for `options`, and the
/// number of methods the agent's log says it padded.
fn inlining_of_step(jdk: &Jdk, options: &str) -> (Vec<String>, u64) {
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
        "-agentpath:{}=capture=bci,start=paused,control=off,file={},log={}{}",
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
    let padded = log
        .split(" padded past")
        .next()
        .and_then(|before| before.rsplit('(').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{}: no padded count in the log: {}", jdk.name, log));
    assert_eq!(run.code, Some(0), "{}: {}", jdk.name, run.stderr);
    assert!(
        run.stdout.contains("sum = 200000"),
        "{}: {}",
        jdk.name,
        run.stdout
    );
    let lines = run
        .stdout
        .lines()
        .filter(|l| l.contains("@ ") && l.contains("Hot::step ("))
        .map(|l| l.trim().to_string())
        .collect();
    (lines, padded)
}

fn inlined(line: &str) -> bool {
    line.ends_with(" inline") || line.ends_with("inline (hot)")
}

#[test]
fn instrumented_methods_are_not_inlined_unless_inline_on() {
    for jdk in jdks() {
        let (padded, count) = inlining_of_step(&jdk, "");
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
        let (short, count) = inlining_of_step(&jdk, ",inline=on");
        assert_eq!(count, 0, "{}: methods padded under inline=on", jdk.name);
        assert!(
            short.iter().any(|l| l.ends_with("inline (hot)")),
            "{}: with inline=on C2 did not inline Hot.step: {:?}",
            jdk.name,
            short
        );
    }
}
