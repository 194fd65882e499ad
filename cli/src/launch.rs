//! `jlive run` and `jlive demo`: start java with `-agentpath:libjlive.so=OPTIONS`.

use jlive_writer::check::check;
use jlive_writer::format::{paths, Format};
use jlive_writer::stats::Stats;
use std::path::PathBuf;
use std::process::Command;

/// The demo program, compiled by build.rs (javac --release 8).
const DEMO_CLASS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/demo/Demo.class"));

/// libjlive.so: $JLIVE_LIB, next to this program, or in ../lib.
pub fn agent_library() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("JLIVE_LIB") {
        return Ok(PathBuf::from(p));
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot locate the jlive program: {}", e))?;
    let dir = exe.parent().ok_or("jlive has no directory")?;
    for candidate in [
        dir.join("libjlive.so"),
        dir.join("../lib/libjlive.so"),
        dir.join("../libjlive.so"),
    ] {
        if candidate.is_file() {
            return Ok(candidate.canonicalize().unwrap_or(candidate));
        }
    }
    Err(format!(
        "libjlive.so not found next to {} (build it with `cargo build --release`, or set JLIVE_LIB)",
        exe.display()
    ))
}

/// Agent options from `key=value`, `--key value` and `--key=value` words.
pub fn agent_options(words: &[String]) -> Result<String, String> {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if let Some(flag) = w.strip_prefix("--") {
            if flag.contains('=') {
                out.push(flag.to_string());
            } else if flag == "help" {
                out.push("help".into());
            } else {
                let value = words
                    .get(i + 1)
                    .ok_or_else(|| format!("--{} needs a value", flag))?;
                out.push(format!("{}={}", flag, value));
                i += 1;
            }
        } else {
            out.push(w.clone());
        }
        i += 1;
    }
    Ok(out.join(","))
}

/// The java program to use when the command line names none: $JAVA_HOME/bin/java or java.
fn java() -> PathBuf {
    match std::env::var_os("JAVA_HOME") {
        Some(home) if PathBuf::from(&home).join("bin/java").is_file() => {
            PathBuf::from(home).join("bin/java")
        }
        _ => PathBuf::from("java"),
    }
}

fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128u8.wrapping_add(s as u8),
        _ => 1,
    }
}

/// `jlive run [OPTIONS] -- java ARGS...`: exits with java's exit code. `options` are the words
/// before `--`, `command` those after it (none when the `--` is missing).
pub fn run(options: &[String], command: &[String]) -> Result<u8, String> {
    let (program, java_args) = command.split_first().ok_or(
        "no java command: give it after `--` (jlive run [AGENT OPTIONS] -- java [JAVA ARGS...])",
    )?;
    let lib = agent_library()?;
    let options = agent_options(options)?;
    let agent = if options.is_empty() {
        format!("-agentpath:{}", lib.display())
    } else {
        format!("-agentpath:{}={}", lib.display(), options)
    };
    let status = Command::new(program)
        .arg(agent)
        .args(java_args)
        .status()
        .map_err(|e| format!("cannot start {}: {}", program, e))?;
    Ok(exit_code(status))
}

/// `jlive demo [OPTIONS]`: traces the bundled demo into jlive-demo.trc (or the files of the
/// formats asked for) and prints what it recorded.
pub fn demo(args: &[String]) -> Result<u8, String> {
    let dir = std::env::temp_dir().join(format!("jlive-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {}", dir.display(), e))?;
    std::fs::write(dir.join("Demo.class"), DEMO_CLASS)
        .map_err(|e| format!("cannot write the demo class: {}", e))?;
    let mut options = agent_options(args)?;
    let option = |key: &str| {
        let prefix = format!("{}=", key);
        let found = options
            .split(',')
            .rev()
            .find_map(|o| o.strip_prefix(&prefix));
        found.map(str::to_string)
    };
    // Each format once, as the agent takes them; a name it rejects stops the JVM, and the
    // demo says so before it looks for a file.
    let mut formats: Vec<Format> = Vec::new();
    let named = option("format").unwrap_or_default();
    for format in named.split(';').filter_map(|f| Format::parse(f.trim())) {
        if !formats.contains(&format) {
            formats.push(format);
        }
    }
    if formats.is_empty() {
        formats.push(Format::Jinsight);
    }
    let gzip = option("compress").is_some_and(|c| c == "gzip");
    let file = match option("file") {
        Some(f) => f,
        None => {
            let f = match &formats[..] {
                [one] => format!("jlive-demo.{}", one.extension()),
                _ => "jlive-demo".to_string(),
            };
            options = if options.is_empty() {
                format!("file={}", f)
            } else {
                format!("file={},{}", f, options)
            };
            f
        }
    };
    let lib = agent_library()?;
    println!(
        "$ java -agentpath:{}={} -cp {} Demo",
        lib.display(),
        options,
        dir.display()
    );
    let status = Command::new(java())
        .arg(format!("-agentpath:{}={}", lib.display(), options))
        .arg("-cp")
        .arg(&dir)
        .arg("Demo")
        .status()
        .map_err(|e| {
            format!(
                "cannot start java (install openjdk-17-jdk-headless or set JAVA_HOME): {}",
                e
            )
        })?;
    let _ = std::fs::remove_dir_all(&dir);
    if !status.success() {
        return Err(format!("the demo program failed ({})", status));
    }
    // The agent names a compressed file .gz.
    let gz = jlive_writer::gzip::SUFFIX;
    let file = if gzip && !file.ends_with(gz) {
        file + gz
    } else {
        file
    };
    let files = paths(&formats, &file);
    for (i, (_, trace)) in files.iter().enumerate() {
        let data = std::fs::read(trace).map_err(|e| format!("cannot read {}: {}", trace, e))?;
        let checked = check(&data).map_err(|e| format!("{} does not check: {}", trace, e))?;
        println!(
            "\ntrace {} ({} bytes) checks: {} events in {} burst(s)",
            trace,
            data.len(),
            checked.events,
            checked.bursts
        );
        if i == 0 {
            let (stats, _) = Stats::of_file(&data).map_err(|e| e.to_string())?;
            println!();
            print!("{}", stats.report(10));
        }
    }
    println!("\nmore: jlive dump {} | less", files[0].1);
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn options_from_words() {
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            super::agent_options(&w(&["--file", "a.trc", "alloc=on", "--gc=off"])).unwrap(),
            "file=a.trc,alloc=on,gc=off"
        );
        assert!(super::agent_options(&w(&["--file"])).is_err());
    }
}
