// Shared by build.rs and cli/build.rs (pulled in with include!): finds javac and compiles
// Java sources for Java 8 bytecode, so the classes load on every JVM jlive supports.

/// javac from $JAVA_HOME, else from PATH; a clear build error when there is none.
fn javac() -> std::path::PathBuf {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let p = std::path::PathBuf::from(home).join("bin/javac");
        if p.is_file() {
            return p;
        }
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|d| d.join("javac")).find(|p| p.is_file())
    });
    match found {
        Some(p) => p,
        None => panic!(
            "\n\njlive's build needs a JDK to compile its Java classes, and found no javac \
             (neither $JAVA_HOME/bin/javac nor javac on PATH).\n\
             Install one:  apt-get install -y openjdk-17-jdk-headless\n\
             or point JAVA_HOME at a JDK 11 or newer.\n\n"
        ),
    }
}

/// Compiles `sources` into `out` with `javac --release 8`.
fn compile_java(sources: &[std::path::PathBuf], out: &std::path::Path) {
    std::fs::create_dir_all(out).expect("create the class output directory");
    let javac = javac();
    let status = std::process::Command::new(&javac)
        .args(["--release", "8", "-nowarn", "-encoding", "UTF-8", "-d"])
        .arg(out)
        .args(sources)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {}", javac.display(), e));
    assert!(status.success(), "javac failed on {:?}", sources);
    for s in sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    println!("cargo:rerun-if-env-changed=JAVA_HOME");
}
