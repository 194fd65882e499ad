//! Builds the Java side with `javac --release 8`:
//! - `jlive-api.jar` from api/ (jlive.Jlive and VA/Java's InstrumentVMSupport), placed next to
//!   libjlive.so in target/<profile>/ for users, and found by the tests via JLIVE_API_JAR;
//! - the example programs of examples/ (top level only), found via JLIVE_EXAMPLE_CLASSES;
//! - java/lang/JliveTrampoline (capture=bci), embedded in libjlive.so via JLIVE_TRAMPOLINE.

include!("build-support/javac.rs");

use std::path::{Path, PathBuf};

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let api_classes = out.join("api");
    let _ = std::fs::remove_dir_all(&api_classes);
    compile_java(&java_sources(Path::new("api")), None, &api_classes);
    let jar = out.join("jlive-api.jar");
    let status = std::process::Command::new(jdk_tool("jar"))
        .arg("cf")
        .arg(&jar)
        .arg("-C")
        .arg(&api_classes)
        .arg(".")
        .status()
        .expect("run jar");
    assert!(status.success(), "jar failed");
    // target/<profile>/build/jlive-<hash>/out → target/<profile>
    if let Some(profile_dir) = out.ancestors().nth(3) {
        let _ = std::fs::copy(&jar, profile_dir.join("jlive-api.jar"));
    }
    println!("cargo:rustc-env=JLIVE_API_JAR={}", jar.display());

    let examples: Vec<PathBuf> = std::fs::read_dir("examples")
        .expect("examples/ directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    let example_classes = out.join("examples");
    compile_java(&examples, Some(&api_classes), &example_classes);
    println!("cargo:rerun-if-changed=examples");
    println!("cargo:rerun-if-changed=api");

    let trampoline = out.join("trampoline");
    // The trampoline reads its gate through jdk.internal.misc.Unsafe, which --release 8 does
    // not know: a compile-time stub stands in for it (never packaged).
    let stubs = Path::new("build-support/stubs");
    compile_java(
        &java_sources(Path::new("trampoline")),
        Some(stubs),
        &trampoline,
    );
    println!("cargo:rerun-if-changed=trampoline");
    println!("cargo:rerun-if-changed=build-support/stubs");
    println!(
        "cargo:rustc-env=JLIVE_TRAMPOLINE={}",
        trampoline.join("java/lang/JliveTrampoline.class").display()
    );
    println!(
        "cargo:rustc-env=JLIVE_EXAMPLE_CLASSES={}",
        example_classes.display()
    );

    // Whether thread-locals go through TLS descriptors (.cargo/config.toml; a RUSTFLAGS of
    // one's own replaces it), so that the agent's log tells which way it was built.
    println!("cargo:rustc-check-cfg=cfg(tls_descriptors)");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags.contains("-enable-tlsdesc") {
        println!("cargo:rustc-cfg=tls_descriptors");
    }
}
