//! The rewriter on a sample of code no one here wrote, judged by an independent verifier: one
//! class in 20 of JDK 17's java.base and one in 8 of Debian's h2 go through capture=bci's
//! rewriter under all 16 combinations of its options, and every result through
//! bench/sweep/Verify.java (ASM: structure, data flow, every stack map frame; its self-test
//! proves first that it can say no). A single failure fails the test. bench/sweep.sh runs the
//! same on every class of both runtime images and of every jar in /usr/share/java.

mod common;

use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

const ASM: [&str; 4] = ["asm", "asm-tree", "asm-analysis", "asm-util"];

fn ok(c: &mut Command, what: &str) {
    let status = c.status().unwrap_or_else(|e| panic!("{}: {}", what, e));
    assert!(status.success(), "{} failed", what);
}

#[test]
fn a_sample_of_the_jdk_and_of_h2_rewritten_every_way_verifies() {
    let asm: Vec<String> = ASM
        .iter()
        .map(|j| format!("/usr/share/java/{}.jar", j))
        .collect();
    assert!(
        asm.iter().all(|j| Path::new(j).is_file()),
        "Debian's ASM is missing: apt-get install -y libasm-java"
    );
    let jdk = &jdks()[0];
    let dir = scratch("sweep");
    let bin = |tool: &str| jdk.home.join("bin").join(tool);
    let classpath = asm.join(":");
    ok(
        Command::new(bin("javac"))
            .args(["-cp", &classpath, "-d"])
            .arg(dir.join("verify"))
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/sweep/Verify.java")),
        "javac Verify.java",
    );
    // The whole runtime image for the class hierarchy; java.base's classes to rewrite.
    let image = dir.join("jdk");
    ok(
        Command::new(bin("jimage"))
            .args(["extract", "--dir"])
            .arg(&image)
            .arg(jdk.home.join("lib/modules")),
        "jimage extract",
    );
    let base = image.join("java.base");
    let h2 = dir.join("h2");
    std::fs::create_dir_all(&h2).unwrap();
    ok(
        Command::new(bin("jar"))
            .args(["xf", "/usr/share/java/h2.jar"])
            .current_dir(&h2),
        "jar xf h2.jar",
    );
    // bench/sweep.rs, built into this profile's examples.
    let profile = agent().parent().unwrap().to_path_buf();
    let sweep = profile.join("examples").join("sweep");
    let mut build = Command::new(env!("CARGO"));
    build
        .args(["build", "--quiet", "--example", "sweep"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", profile.parent().unwrap());
    if profile.ends_with("release") {
        build.arg("--release");
    }
    ok(&mut build, "cargo build --example sweep");
    assert!(sweep.is_file(), "{} was not built", sweep.display());
    let mut total = 0;
    for (corpus, every) in [(&base, "20"), (&h2, "8")] {
        let mut producer = Command::new(&sweep)
            .args(["--every", every])
            .arg(corpus)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let judged = Command::new(jdk.java())
            .args([
                "-cp",
                &format!("{}:{}", classpath, dir.join("verify").display()),
            ])
            .arg("Verify")
            .arg(&image)
            .arg(&h2)
            .stdin(producer.stdout.take().unwrap())
            .output()
            .unwrap();
        let produced = producer.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&judged.stdout);
        let sweep_said = String::from_utf8_lossy(&produced.stderr);
        println!("{}\n{}", sweep_said, said);
        assert!(produced.status.success(), "sweep: {}", sweep_said);
        assert!(judged.status.success(), "{}: {}", corpus.display(), said);
        let classes: u64 = said
            .lines()
            .filter(|l| l.starts_with("combination"))
            .map(|l| number_before(l, " classes,"))
            .sum();
        assert!(classes > 1000, "{} classes judged: {}", classes, said);
        total += classes;
    }
    println!("{} instrumented classes verified", total);
    let _ = std::fs::remove_dir_all(&dir);
}
