//! The agent's own messages. Every line starts with `jlive:`. With `log=stderr` (the
//! default) only warnings and errors are printed, so a traced program's output stays as it
//! was; `log=PATH` appends everything, information included, warnings marked `warning:`.

use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;

enum Target {
    Stderr,
    File(File),
}

static TARGET: Mutex<Option<Target>> = Mutex::new(None);

/// Sends messages to a file (appending) instead of stderr.
pub fn to_file(path: &str) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    *TARGET.lock() = Some(Target::File(file));
    Ok(())
}

fn write_line(text: &str, always: bool) {
    let mut target = TARGET.lock();
    match &mut *target {
        Some(Target::File(f)) => {
            let mark = if always { "warning: " } else { "" };
            let _ = writeln!(f, "jlive: {}{}", mark, text);
        }
        Some(Target::Stderr) | None if always => {
            let _ = writeln!(std::io::stderr(), "jlive: {}", text);
        }
        _ => {}
    }
}

/// A problem the user should see.
pub fn warn(text: &str) {
    write_line(text, true);
}

/// Progress worth keeping in a log file, silent on stderr.
pub fn info(text: &str) {
    write_line(text, false);
}

/// Resets to stderr (used after a failed start).
pub fn to_stderr() {
    *TARGET.lock() = Some(Target::Stderr);
}
