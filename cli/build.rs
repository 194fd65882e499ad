//! Compiles the demo program (examples/Demo.java) that `jlive demo` carries inside itself.

#[allow(dead_code)]
mod javac {
    include!("../build-support/javac.rs");
}
use javac::compile_java;

fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("demo");
    compile_java(
        &[std::path::PathBuf::from("../examples/Demo.java")],
        None,
        &out,
    );
}
