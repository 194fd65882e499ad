//! A progress line on a terminal while a long input is read (`jlive stats`, `tree`, `export`),
//! drawn by indicatif.
//!
//! Shown on stderr, only when stderr is a terminal and the reading has already taken two
//! seconds: until then the bar draws to a hidden target. Its share is of the input file's
//! bytes (compressed bytes for a .gz trace), and the line is erased when the reading ends.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fs::File;
use std::io::{IsTerminal, Read};
use std::time::{Duration, Instant};

const QUIET_FOR: Duration = Duration::from_secs(2);
const EVERY: Duration = Duration::from_millis(250);

/// `jlive: reading app.trc  42% (420.00 MB of 1.00 GB), 7s left`.
const LINE: &str =
    "jlive: reading {msg} {percent:>3}% ({decimal_bytes} of {decimal_total_bytes}), {eta} left";

/// A file being read, with its reading shown.
pub struct Reading {
    file: Box<dyn Read + Send>,
    bar: ProgressBar,
}

impl Reading {
    pub fn open(path: &str) -> Result<Reading, String> {
        let file = File::open(path).map_err(|e| format!("cannot read {}: {}", path, e))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let style =
            ProgressStyle::with_template(LINE).unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::hidden())
            .with_style(style)
            .with_message(path.to_string());
        let show_at =
            (size > 0 && std::io::stderr().is_terminal()).then(|| Instant::now() + QUIET_FOR);
        let counted = Counted {
            file,
            bar: bar.clone(),
            show_at,
        };
        Ok(Reading {
            // The meta log an ORCA event log is read with is not counted: the share is of the file.
            file: jlive_writer::orca::open_with_meta(path, counted),
            bar,
        })
    }
}

impl Read for Reading {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.file.read(buf)
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The file itself, whose bytes read the bar counts; it shows the bar at `show_at`.
struct Counted {
    file: File,
    bar: ProgressBar,
    /// When the bar is to be drawn on stderr: None once it is, or if it never is.
    show_at: Option<Instant>,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.bar.inc(n as u64);
        if self.show_at.is_some_and(|at| Instant::now() >= at) {
            self.show_at = None;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            // Redrawn while the reading pauses too, so that the time left stays current.
            self.bar.enable_steady_tick(EVERY);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_a_template_indicatif_takes() {
        assert!(ProgressStyle::with_template(LINE).is_ok());
    }

    #[test]
    fn the_bar_counts_the_bytes_of_the_file() {
        let path = std::env::temp_dir().join(format!("jlive-progress-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 100_000]).unwrap();
        let mut reading = Reading::open(path.to_str().unwrap()).unwrap();
        let mut all = Vec::new();
        reading.read_to_end(&mut all).unwrap();
        assert_eq!(all.len(), 100_000);
        assert_eq!(reading.bar.length(), Some(100_000));
        assert_eq!(reading.bar.position(), 100_000);
        drop(reading);
        let _ = std::fs::remove_file(&path);
    }
}
