//! A trace file written through the page cache while memory absorbs it, then around it
//! (`O_DIRECT`): past the point where the kernel would start writing dirty pages back (half its
//! background threshold), the bytes reach the disk in whole aligned blocks, so that a long
//! trace neither fills memory with dirty pages nor waits on their writeback. On the KVM guests
//! a 4 GB trace went to a file at 0.4-0.6 GB/s through the page cache alone, 1.4-1.9 GB/s
//! direct; a 1.5 GB one at 3.1 GB/s through the page cache (bench/README.md).
//!
//! ```text
//! file   [ through the page cache | direct blocks ... | in flight | window: base .. +len ]
//!                                 └ the first window past the budget  └ a multiple of ALIGN
//! full   the window goes to the I/O thread, which writes it while the next one fills
//! flush  what is in flight lands; the window's whole blocks, then its partial last block
//!        through the page cache; the window keeps only that partial block
//! ```
//!
//! A file system without direct I/O refuses the flag or the first write: the file is then
//! written through the page cache, the same bytes. Seeking back (the JinsightLive header
//! patched at the end) rewrites the blocks concerned in place.

use crate::sys;
use crossbeam_channel::{Receiver, Sender};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The alignment of the window's memory, its file offset and its writes: the largest logical
/// block size of the devices Linux supports direct I/O on.
const ALIGN: usize = 4096;
/// The window: one write each time it fills (two of them once direct: one filling, one in
/// flight).
const WINDOW: usize = 2 << 20;
/// Through the page cache, a write this long skips the window.
const PASS: usize = 64 << 10;

/// WINDOW bytes of memory aligned to ALIGN.
struct Window {
    mem: Vec<u8>,
    at: usize,
}

impl Window {
    fn new() -> Window {
        let mem = vec![0u8; WINDOW + ALIGN];
        let at = mem.as_ptr().align_offset(ALIGN);
        Window { mem, at }
    }
    fn bytes(&self) -> &[u8] {
        &self.mem[self.at..self.at + WINDOW]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.mem[self.at..self.at + WINDOW]
    }
}

/// The file and whether it has O_DIRECT (false before the budget is spent, and once its file
/// system refused it).
struct Target {
    file: File,
    direct: AtomicBool,
}

/// How many bytes a file writes through the page cache before it turns direct: half the
/// kernel's background writeback threshold (`vm.dirty_background_bytes`, or the ratio of
/// available memory), 256 MiB when /proc does not say.
fn cached_budget() -> u64 {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let number = |s: Option<String>| s.and_then(|s| s.trim().parse::<u64>().ok());
    let threshold = match number(read("/proc/sys/vm/dirty_background_bytes")) {
        Some(bytes) if bytes > 0 => Some(bytes),
        _ => {
            let ratio = number(read("/proc/sys/vm/dirty_background_ratio"));
            let available = read("/proc/meminfo").and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            });
            ratio.zip(available).map(|(r, kb)| kb * 1024 / 100 * r)
        }
    };
    threshold.map_or(256 << 20, |t| t / 2)
}

impl Target {
    /// Runs `op` on the file; if the file system refuses direct I/O (EINVAL), turns it off for
    /// the file and runs `op` again, through the page cache.
    fn or_cached<T>(&self, mut op: impl FnMut(&File) -> io::Result<T>) -> io::Result<T> {
        match op(&self.file) {
            Err(e)
                if self.direct.load(Ordering::Relaxed)
                    && e.raw_os_error() == Some(libc::EINVAL) =>
            {
                sys::set_direct(&self.file, false)?;
                self.direct.store(false, Ordering::Relaxed);
                op(&self.file)
            }
            other => other,
        }
    }

    fn write_all_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        self.or_cached(|f| f.write_all_at(bytes, offset))
    }

    /// Writes a partial block at the end of the file through the page cache (a direct write
    /// would need it padded, and the file would show the padding until it is cut).
    fn write_tail_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        if !self.direct.load(Ordering::Relaxed) {
            return self.file.write_all_at(bytes, offset);
        }
        sys::set_direct(&self.file, false)?;
        let written = self.file.write_all_at(bytes, offset);
        if sys::set_direct(&self.file, true).is_err() {
            self.direct.store(false, Ordering::Relaxed);
        }
        written
    }
}

/// The thread that writes full windows: it takes (window, file offset) and gives the window
/// back once written.
struct Io {
    jobs: Option<Sender<(Window, u64)>>,
    done: Receiver<(Window, io::Result<()>)>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Whether a window is in flight.
    busy: bool,
}

impl Io {
    fn start(target: Arc<Target>) -> Option<Io> {
        let (jobs, todo) = crossbeam_channel::bounded::<(Window, u64)>(1);
        let (finished, done) = crossbeam_channel::bounded(1);
        let thread = std::thread::Builder::new()
            .name("jlive-io".into())
            .spawn(move || {
                for (window, offset) in todo {
                    let result = target.write_all_at(window.bytes(), offset);
                    if finished.send((window, result)).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Io {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            busy: false,
        })
    }

    /// Waits for the window in flight: it comes back, or the error that writing it met.
    fn land(&mut self) -> io::Result<Option<Window>> {
        if !self.busy {
            return Ok(None);
        }
        self.busy = false;
        match self.done.recv() {
            Ok((window, Ok(()))) => Ok(Some(window)),
            Ok((_, Err(e))) => Err(e),
            Err(_) => Err(io::Error::other("the trace's I/O thread is gone")),
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        self.jobs = None;
        let _ = self.land();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file written in whole aligned blocks.
pub struct Direct {
    target: Arc<Target>,
    window: Window,
    /// A window to fill next (None while it is in flight).
    spare: Option<Window>,
    io: Option<Io>,
    len: usize,
    /// The file offset of the window's first byte.
    base: u64,
    /// Where the next write goes while seeking back (None: the end).
    pos: Option<u64>,
    /// The file offset from which the file is written directly (u64::MAX: never).
    direct_from: u64,
    /// Whether the window holds bytes the file lacks.
    dirty: bool,
}

impl Direct {
    /// `file`, empty, just created and open for reading and writing (a patch reads back the
    /// block it changes): through the page cache for its first [`cached_budget`] bytes, then
    /// directly if its file system allows it.
    pub fn new(file: File) -> Direct {
        Direct::with_budget(file, cached_budget())
    }

    fn with_budget(file: File, budget: u64) -> Direct {
        let target = Arc::new(Target {
            file,
            direct: AtomicBool::new(false),
        });
        Direct {
            direct_from: budget,
            dirty: false,
            io: None,
            target,
            window: Window::new(),
            spare: None,
            len: 0,
            base: 0,
            pos: None,
        }
    }

    /// Whether writes still bypass the page cache.
    fn is_direct(&self) -> bool {
        self.target.direct.load(Ordering::Relaxed)
    }

    fn end(&self) -> u64 {
        self.base + self.len as u64
    }

    /// Turns the file direct once the window lies past the budget.
    fn past_budget(&mut self) -> io::Result<()> {
        if self.base >= self.direct_from {
            self.direct_from = u64::MAX;
            let on = sys::set_direct(&self.target.file, true).is_ok();
            self.target.direct.store(on, Ordering::Relaxed);
            // Direct writes wait for the disk, not for the CPU: a thread of their own, while
            // the next window fills. (Through the page cache a write is a copy: this thread's
            // own, on a machine of few cores.)
            if on {
                self.io = Io::start(self.target.clone());
            }
        }
        Ok(())
    }

    /// Waits for what is in flight.
    fn land(&mut self) -> io::Result<()> {
        if let Some(io) = &mut self.io {
            if let Some(w) = io.land()? {
                self.spare = Some(w);
            }
        }
        Ok(())
    }

    /// The full window goes to the disk (through the I/O thread when there is one) and an
    /// empty one takes its place.
    fn put_full(&mut self) -> io::Result<()> {
        self.past_budget()?;
        // (Advanced before the write is known to succeed: a failed write ends the trace.)
        let offset = self.base;
        self.base += WINDOW as u64;
        self.len = 0;
        let Some(io) = &mut self.io else {
            return self.target.write_all_at(self.window.bytes(), offset);
        };
        let next = match (self.spare.take(), io.land()?) {
            (Some(w), _) | (None, Some(w)) => w,
            (None, None) => Window::new(),
        };
        let full = std::mem::replace(&mut self.window, next);
        let sent = io.jobs.as_ref().map(|j| j.send((full, offset)));
        match sent {
            Some(Ok(())) => {
                io.busy = true;
                Ok(())
            }
            Some(Err(crossbeam_channel::SendError((full, offset)))) => {
                self.io = None;
                self.target.write_all_at(full.bytes(), offset)
            }
            None => Err(io::Error::other("the trace's I/O thread is closed")),
        }
    }

    /// Writes the window's whole blocks, then its partial last block through the page cache
    /// (so that the file only ever grows, and ends where the trace does), and keeps only that
    /// partial block in the window. Nothing when nothing was written since the last time.
    fn put_tail(&mut self) -> io::Result<()> {
        self.land()?;
        if !self.dirty {
            return Ok(());
        }
        self.past_budget()?;
        let whole = self.len - self.len % ALIGN;
        if whole > 0 {
            self.target
                .write_all_at(&self.window.bytes()[..whole], self.base)?;
        }
        if whole < self.len {
            let tail = &self.window.bytes()[whole..self.len];
            self.target.write_tail_at(tail, self.base + whole as u64)?;
        }
        self.window.bytes_mut().copy_within(whole..self.len, 0);
        self.base += whole as u64;
        self.len -= whole;
        self.dirty = false;
        Ok(())
    }

    /// Through the page cache, a long write goes to the file as it is, not through the
    /// window: the window's partial block completed and written, then `buf`'s whole blocks.
    /// Gives back what is left (less than a block).
    fn write_through<'b>(&mut self, mut buf: &'b [u8]) -> io::Result<&'b [u8]> {
        let partial = self.len % ALIGN;
        if partial != 0 {
            let n = ALIGN - partial;
            self.window.bytes_mut()[self.len..self.len + n].copy_from_slice(&buf[..n]);
            self.len += n;
            buf = &buf[n..];
        }
        if self.len > 0 {
            self.target
                .write_all_at(&self.window.bytes()[..self.len], self.base)?;
            self.base += self.len as u64;
            self.len = 0;
        }
        let whole = buf.len() - buf.len() % ALIGN;
        self.target.write_all_at(&buf[..whole], self.base)?;
        self.base += whole as u64;
        self.past_budget()?;
        Ok(&buf[whole..])
    }

    /// Overwrites `bytes` at `offset`, before the end: in the window, or in the file's blocks
    /// read, changed and written back.
    fn patch(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        self.land()?;
        let (mut offset, mut bytes) = (offset, bytes);
        while !bytes.is_empty() {
            if offset >= self.base {
                let from = (offset - self.base) as usize;
                let n = bytes.len().min(self.len - from);
                self.window.bytes_mut()[from..from + n].copy_from_slice(&bytes[..n]);
                self.dirty = true;
                offset += n as u64;
                bytes = &bytes[n..];
                continue;
            }
            // One block of the file, below the window.
            let block = offset - offset % ALIGN as u64;
            let mut scratch = vec![0u8; 2 * ALIGN];
            let s = scratch.as_ptr().align_offset(ALIGN);
            let buf = &mut scratch[s..s + ALIGN];
            // (Every byte below the window is in the file.)
            self.target.or_cached(|f| f.read_exact_at(buf, block))?;
            let from = (offset - block) as usize;
            let n = bytes.len().min(ALIGN - from);
            buf[from..from + n].copy_from_slice(&bytes[..n]);
            self.target.write_all_at(buf, block)?;
            offset += n as u64;
            bytes = &bytes[n..];
        }
        Ok(())
    }
}

impl Write for Direct {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        self.dirty |= !buf.is_empty();
        if let Some(at) = self.pos {
            let end = self.end();
            let n = buf.len().min((end - at) as usize);
            self.patch(at, &buf[..n])?;
            self.pos = (at + n as u64 != end).then_some(at + n as u64);
            buf = &buf[n..];
        }
        if buf.len() >= PASS && self.io.is_none() && !self.is_direct() {
            buf = self.write_through(buf)?;
        }
        while !buf.is_empty() {
            let n = buf.len().min(WINDOW - self.len);
            self.window.bytes_mut()[self.len..self.len + n].copy_from_slice(&buf[..n]);
            self.len += n;
            buf = &buf[n..];
            if self.len == WINDOW {
                self.put_full()?;
            }
        }
        Ok(())
    }

    /// Everything written so far is in the file, at its length.
    fn flush(&mut self) -> io::Result<()> {
        self.put_tail()
    }
}

impl Seek for Direct {
    /// Back to any offset before the end (a write there overwrites), or to the end.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let end = self.end();
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => end.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.unwrap_or(end).checked_add_signed(d),
        };
        match target {
            Some(n) if n < end => self.pos = Some(n),
            Some(n) if n == end => self.pos = None,
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a trace file is written at its end or over what it holds",
                ))
            }
        }
        Ok(self.pos.unwrap_or(end))
    }
}

impl Drop for Direct {
    /// What the sink did not flush (it flushes at its end; this is for an error's path).
    fn drop(&mut self) {
        let _ = self.put_tail();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("jlive-direct-{}-{}", name, std::process::id()))
    }

    fn pattern(n: usize, salt: u32) -> Vec<u8> {
        (0..n as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) ^ salt) as u8)
            .collect()
    }

    /// Writes of every size, flushes between some, the header patched at the end, the first
    /// window through the page cache and the rest direct: the file holds exactly what a plain
    /// file would, and after each flush exactly what was written.
    #[test]
    fn the_file_holds_exactly_what_was_written_at_every_flush() {
        let path = scratch("exact");
        let file = crate::file::create(path.to_str().unwrap(), None).unwrap();
        let mut out = Direct::with_budget(file, WINDOW as u64);
        let mut want = Vec::new();
        let sizes = [
            1,
            12,
            4095,
            4096,
            4097,
            100_000,
            WINDOW - 3,
            7,
            WINDOW + 5000,
            1 << 20,
        ];
        for (i, &n) in sizes.iter().enumerate() {
            let data = pattern(n, i as u32);
            out.write_all(&data).unwrap();
            want.extend_from_slice(&data);
            if i % 2 == 1 {
                out.flush().unwrap();
                assert_eq!(std::fs::read(&path).unwrap(), want, "after write {}", i);
            }
        }
        // Patches in the first block (long written), across a block boundary, and in the
        // window, as JinsightLive's header patch does; then back to the end.
        for (at, len) in [(4u64, 12usize), (4090, 20), (want.len() as u64 - 10, 10)] {
            let data = pattern(len, 99);
            assert_eq!(out.seek(SeekFrom::Start(at)).unwrap(), at);
            out.write_all(&data).unwrap();
            want[at as usize..at as usize + len].copy_from_slice(&data);
        }
        assert_eq!(out.seek(SeekFrom::End(0)).unwrap(), want.len() as u64);
        let probe = File::create(scratch("probe")).unwrap();
        if sys::set_direct(&probe, true).is_ok() {
            assert!(out.is_direct(), "direct past its budget");
        }
        let _ = std::fs::remove_file(scratch("probe"));
        out.write_all(b"tail").unwrap();
        want.extend_from_slice(b"tail");
        assert!(out.seek(SeekFrom::Start(want.len() as u64 + 1)).is_err());
        drop(out);
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the bytes differ");
        let _ = std::fs::remove_file(&path);
    }

    /// A write the file system refuses under O_DIRECT (here, one of a length no block size
    /// divides) is made again through the page cache, and the file stays so.
    #[test]
    fn a_write_refused_under_direct_io_goes_through_the_page_cache() {
        let path = scratch("refused");
        let file = crate::file::create(path.to_str().unwrap(), None).unwrap();
        let direct = sys::set_direct(&file, true).is_ok();
        if !direct {
            println!("skipping: no direct I/O where the temporary directory is");
            let _ = std::fs::remove_file(&path);
            return;
        }
        let target = Target {
            file,
            direct: AtomicBool::new(true),
        };
        target.write_all_at(b"not a block", 0).unwrap();
        if target.direct.load(Ordering::Relaxed) {
            // tmpfs since Linux 6.6 takes any write under O_DIRECT.
            println!("skipping: the temporary directory's file system took the write");
            let _ = std::fs::remove_file(&path);
            return;
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"not a block");
        let _ = std::fs::remove_file(&path);
    }
}
