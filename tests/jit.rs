//! How instrumented code meets HotSpot's JIT. Under capture=bci every instrumented method is
//! padded past FreqInlineSize, so that neither C1 nor C2 inlines it (a compilation that
//! inlines a hundred instrumented methods spends up to a second in register allocation);
//! `inline=on` leaves methods short. HotSpot's own -XX:+PrintInlining is the witness.

mod common;

use common::*;
use std::process::Command;

/// The PrintInlining lines about `Hot.step` called from `Hot.loop`, for `options`.
fn inlining_of_step(jdk: &Jdk, options: &str) -> Vec<String> {
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
        "-agentpath:{}=capture=bci,start=paused,control=off,file={}{}",
        agent().display(),
        dir.join("t.trc").display(),
        options
    ))
    .arg("-cp")
    .arg(classes())
    .arg("Hot");
    let run = run(c);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(run.code, Some(0), "{}: {}", jdk.name, run.stderr);
    assert!(
        run.stdout.contains("sum = 200000"),
        "{}: {}",
        jdk.name,
        run.stdout
    );
    run.stdout
        .lines()
        .filter(|l| l.contains("@ ") && l.contains("Hot::step ("))
        .map(|l| l.trim().to_string())
        .collect()
}

fn inlined(line: &str) -> bool {
    line.ends_with(" inline") || line.ends_with("inline (hot)")
}

#[test]
fn instrumented_methods_are_not_inlined_unless_inline_on() {
    for jdk in jdks() {
        let padded = inlining_of_step(&jdk, "");
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
        let short = inlining_of_step(&jdk, ",inline=on");
        assert!(
            short.iter().any(|l| l.ends_with("inline (hot)")),
            "{}: with inline=on C2 did not inline Hot.step: {:?}",
            jdk.name,
            short
        );
    }
}
