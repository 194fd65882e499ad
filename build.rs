//! Compiles the Java example programs (examples/*.java) with `javac --release 8`; the tests
//! find them through the JLIVE_EXAMPLE_CLASSES environment variable.

include!("build-support/javac.rs");

fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("examples");
    let mut sources: Vec<std::path::PathBuf> = std::fs::read_dir("examples")
        .expect("examples/ directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    sources.sort();
    compile_java(&sources, &out);
    println!("cargo:rerun-if-changed=examples");
    println!("cargo:rustc-env=JLIVE_EXAMPLE_CLASSES={}", out.display());
}
