//! A progress line on a terminal while a long input is read (`jlive stats`, `tree`, `export`).
//!
//! Shown on stderr, only when stderr is a terminal and the reading has already taken two
//! seconds; its share is of the input file's bytes (compressed bytes for a .gz trace), and
//! the line is erased when the reading ends.

use std::fs::File;
use std::io::{IsTerminal, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const QUIET_FOR: Duration = Duration::from_secs(2);
const EVERY: Duration = Duration::from_millis(250);

/// A file being read, with its reading shown.
pub struct Reading {
    file: Box<dyn Read + Send>,
    read: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    shower: Option<JoinHandle<()>>,
}

impl Reading {
    pub fn open(path: &str) -> Result<Reading, String> {
        let file = File::open(path).map_err(|e| format!("cannot read {}: {}", path, e))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let read = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let shower = if std::io::stderr().is_terminal() && size > 0 {
            let (read, done, name) = (read.clone(), done.clone(), path.to_string());
            std::thread::Builder::new()
                .name("jlive-progress".into())
                .spawn(move || show(&name, size, &read, &done))
                .ok()
        } else {
            None
        };
        Ok(Reading {
            file: jlive_writer::orca::open_with_meta(path, file),
            read,
            done,
            shower,
        })
    }
}

impl Read for Reading {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.shower.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn show(name: &str, size: u64, read: &AtomicU64, done: &AtomicBool) {
    let began = Instant::now();
    let mut shown = false;
    while !done.load(Ordering::Relaxed) {
        std::thread::park_timeout(EVERY);
        let took = began.elapsed();
        if took < QUIET_FOR || done.load(Ordering::Relaxed) {
            continue;
        }
        let line = line(name, read.load(Ordering::Relaxed), size, took);
        let _ = write!(std::io::stderr(), "\r{}\x1b[K", line);
        shown = true;
    }
    if shown {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}

/// `jlive: reading app.trc  42% (420 MB of 1000 MB), 7 s left`.
fn line(name: &str, read: u64, size: u64, took: Duration) -> String {
    let share = (read.min(size) as f64 / size as f64).clamp(0.0, 1.0);
    let left = if share > 0.0 {
        format!(", {:.0} s left", took.as_secs_f64() * (1.0 - share) / share)
    } else {
        String::new()
    };
    format!(
        "jlive: reading {} {:3.0}% ({} of {}){}",
        name,
        share * 100.0,
        megabytes(read),
        megabytes(size),
        left
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_gives_the_share_read_and_the_time_left() {
        assert_eq!(
            line("a.trc", 420_000_000, 1_000_000_000, Duration::from_secs(3)),
            "jlive: reading a.trc  42% (420 MB of 1000 MB), 4 s left"
        );
        assert_eq!(
            line("a.trc", 0, 10, Duration::from_secs(3)),
            "jlive: reading a.trc   0% (0 MB of 0 MB)"
        );
    }
}
