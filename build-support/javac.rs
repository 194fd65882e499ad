// Shared by build.rs and cli/build.rs (pulled in with include!): finds the JDK's tools and
// compiles Java sources for Java 8 bytecode, so the classes load on every JVM jlive supports.

/// A JDK tool (javac, jar) from $JAVA_HOME, else from PATH; a clear build error when none.
pub fn jdk_tool(name: &str) -> std::path::PathBuf {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let p = std::path::PathBuf::from(home).join("bin").join(name);
        if p.is_file() {
            return p;
        }
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file())
    });
    match found {
        Some(p) => p,
        None => panic!(
            "\n\njlive's build needs a JDK to compile its Java classes, and found no {} \
             (neither $JAVA_HOME/bin/{} nor {} on PATH).\n\
             Install one:  apt-get install -y openjdk-17-jdk-headless\n\
             or point JAVA_HOME at a JDK 11 or newer.\n\n",
            name, name, name
        ),
    }
}

/// Compiles `sources` into `out` with `javac --release 8`, `classpath` on the class path
/// (classes, or the sources of compile-time stubs: `-implicit:none` keeps those out of `out`).
pub fn compile_java(sources: &[std::path::PathBuf], classpath: Option<&std::path::Path>, out: &std::path::Path) {
    std::fs::create_dir_all(out).expect("create the class output directory");
    let javac = jdk_tool("javac");
    let mut command = std::process::Command::new(&javac);
    command
        .args(["--release", "8", "-nowarn", "-implicit:none", "-encoding", "UTF-8", "-d"])
        .arg(out);
    if let Some(cp) = classpath {
        command.arg("-cp").arg(cp);
    }
    let status = command
        .args(sources)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {}", javac.display(), e));
    assert!(status.success(), "javac failed on {:?}", sources);
    for s in sources {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    println!("cargo:rerun-if-env-changed=JAVA_HOME");
}

/// Every `.java` file under `dir`, sorted.
pub fn java_sources(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {}", d.display(), e)).flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "java") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
