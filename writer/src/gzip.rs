//! `compress=gzip`: a trace file written through gzip, and read back by every reader.
//!
//! ```text
//! file.trc.gz   1f 8b 08 ...  deflate blocks ...  [sync flush: 00 00 ff ff] ... crc32 isize
//!               └ gzip header ┘                     every flush of the writer  └ at the end
//! ```
//!
//! Each flush of the writer (at least every 100 ms) ends a deflate block with a sync flush, so
//! that a JVM killed while tracing leaves a file that decompresses up to its last flush, as a
//! plain file reads up to its last write. The stream cannot seek: a JinsightLive header keeps
//! the counts it began with, as in a pipe (readers count events up to TraceEnd). IBM's
//! visualizer opens a `.gz` trace itself (through `GZIPInputStream`), which is why the agent
//! gives a compressed file's name `.gz`.

use crate::direct::Direct;
use flate2::write::GzEncoder;
use flate2::{read::MultiGzDecoder, Compression};
use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The two bytes every gzip member starts with.
pub const MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The suffix of a compressed file's name.
pub const SUFFIX: &str = ".gz";

/// zlib's level 1: about 5x smaller for a JinsightLive trace, and the writer's time stays
/// near the plain file's (bench/README.md).
const LEVEL: u32 = 1;

/// A trace file, plain or compressed, or a live connection: what every sink writes into.
pub enum Out {
    Plain(File),
    /// A regular file, written around the page cache ([`crate::direct`]).
    Direct(Box<Direct>),
    Gzip(Box<GzEncoder<File>>),
    Live(Box<LiveOut>),
}

/// A trace streamed to a client (IBM's visualizer) over TCP, with a copy in a file if asked.
/// The visualizer throws away the first byte it reads: one byte goes before the trace.
pub struct LiveOut {
    socket: TcpStream,
    copy: Option<File>,
}

/// How long one send may wait for a client that reads nothing, and how long a whole write
/// may take, before the stream is given up (the connection is then shut, so that the agent
/// sees the client gone and the trace goes back to a file).
pub const LIVE_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
pub const LIVE_WRITE_DEADLINE: Duration = Duration::from_secs(30);

thread_local! {
    /// The connection the next trace opened on this thread streams to ([`streaming`]).
    static NEXT_STREAM: RefCell<Option<TcpStream>> = const { RefCell::new(None) };
}

/// Runs `open` (which opens a trace) so that the trace streams to `socket`, with a copy in
/// the file it names unless that is empty.
pub fn streaming<T>(socket: TcpStream, open: impl FnOnce() -> T) -> T {
    NEXT_STREAM.with(|s| *s.borrow_mut() = Some(socket));
    let opened = open();
    // Not taken (no trace was opened): shut, so that the agent sees its client gone.
    if let Some(left) = NEXT_STREAM.with(|s| s.borrow_mut().take()) {
        let _ = left.shutdown(std::net::Shutdown::Both);
    }
    opened
}

/// The connection set by [`streaming`], taken once.
pub fn take_stream() -> Option<TcpStream> {
    NEXT_STREAM.with(|s| s.borrow_mut().take())
}

impl LiveOut {
    pub fn new(socket: TcpStream, copy: Option<File>) -> io::Result<LiveOut> {
        socket.set_nonblocking(false)?;
        socket.set_write_timeout(Some(LIVE_WRITE_TIMEOUT))?;
        let _ = socket.set_nodelay(true);
        (&socket).write_all(&[0])?;
        Ok(LiveOut { socket, copy })
    }
}

impl Drop for LiveOut {
    /// The stream is over (the trace ended or went back to a file): the client is told, and
    /// the agent, which holds the connection too, sees it gone.
    fn drop(&mut self) {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
    }
}

impl Write for LiveOut {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if let Some(copy) = &mut self.copy {
            copy.write_all(buf)?;
        }
        self.send_all(buf).map_err(|e| {
            let _ = self.socket.shutdown(std::net::Shutdown::Both);
            io::Error::new(e.kind(), format!("the live client is gone ({})", e))
        })
    }
    fn flush(&mut self) -> io::Result<()> {
        if let Some(copy) = &mut self.copy {
            copy.flush()?;
        }
        Ok(())
    }
}

impl LiveOut {
    /// Sends all of `buf` within [`LIVE_WRITE_DEADLINE`].
    fn send_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        let start = std::time::Instant::now();
        while !buf.is_empty() {
            if start.elapsed() > LIVE_WRITE_DEADLINE {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the live client reads too slowly",
                ));
            }
            match (&self.socket).write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Out {
    pub fn new(file: File, gzip: bool) -> Out {
        if gzip {
            Out::Gzip(Box::new(GzEncoder::new(file, Compression::new(LEVEL))))
        } else if file.metadata().is_ok_and(|m| m.file_type().is_file())
            && crate::sys::is_read_write(&file)
        {
            Out::Direct(Box::new(Direct::new(file)))
        } else {
            Out::Plain(file)
        }
    }
}

impl Write for Out {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Plain(f) => f.write(buf),
            Out::Direct(d) => d.write(buf),
            Out::Gzip(z) => z.write(buf),
            Out::Live(l) => l.write(buf),
        }
    }
    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Plain(f) => f.write_all(buf),
            Out::Direct(d) => d.write_all(buf),
            Out::Gzip(z) => z.write_all(buf),
            Out::Live(l) => l.write_all(buf),
        }
    }
    /// A compressed file: a sync flush, so that what was written so far can be read back.
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Plain(f) => f.flush(),
            Out::Direct(d) => d.flush(),
            Out::Gzip(z) => z.flush(),
            Out::Live(l) => l.flush(),
        }
    }
}

impl Seek for Out {
    /// A compressed or live stream cannot go back: ESPIPE, as a pipe says.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match self {
            Out::Plain(f) => f.seek(to),
            Out::Direct(d) => d.seek(to),
            Out::Gzip(_) | Out::Live(_) => Err(io::Error::from_raw_os_error(libc::ESPIPE)),
        }
    }
}

impl Drop for Out {
    /// The gzip trailer (the sink has flushed what it had: a failure here leaves a file that
    /// reads like a killed run's, up to the last flush).
    fn drop(&mut self) {
        if let Out::Gzip(z) = self {
            let _ = z.try_finish();
        }
    }
}

/// What a reader reads: the file's bytes, or what they decompress to.
pub enum Whole<R: Read> {
    Plain(R),
    Gzip(Box<Cut<MultiGzDecoder<Counted<R>>>>),
}

impl<R: Read> Read for Whole<R> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Whole::Plain(r) => r.read(buf),
            Whole::Gzip(z) => z.read(buf),
        }
    }
}

impl<R: Read> Whole<R> {
    /// `reader` as it is, or decompressed when it starts with gzip's magic (`prefix`: its
    /// first bytes, already read from it and put back in front).
    pub fn of(prefix: &[u8], reader: R) -> Whole<R> {
        if prefix.starts_with(&MAGIC) {
            let compressed = Arc::new(AtomicU64::new(0));
            let counted = Counted {
                inner: reader,
                read: compressed.clone(),
            };
            Whole::Gzip(Box::new(Cut {
                inner: MultiGzDecoder::new(counted),
                ended: false,
                compressed,
                out: 0,
            }))
        } else {
            Whole::Plain(reader)
        }
    }
}

/// A decompressing reader whose stream may stop short (a killed run's file ends inside a
/// deflate block, or before the trailer): what decompressed is read, then the end of the file,
/// as a plain file would end there; the format's reader then says whether an event or the
/// file's end is missing.
///
/// A corrupt stream can make deflate repeat what it wrote (up to 258 bytes for 2 bits): past
/// 8 MiB and [`MAX_RATIO`] times the compressed bytes read, the stream is called corrupt
/// rather than read for minutes (a trace compresses 4 to 11 times at zlib's level 1: h2's
/// and Fib's, JinsightLive 4x, TPTP binary 6-7x, TPTP XML 8-11x).
pub struct Cut<R: Read> {
    inner: R,
    ended: bool,
    /// Compressed bytes read so far, and decompressed bytes given.
    compressed: Arc<AtomicU64>,
    out: u64,
}

/// The most a trace's decompressed bytes may outnumber its compressed ones (past 64 MiB).
pub const MAX_RATIO: u64 = 48;
/// (1 MiB in the unit tests, so that they need not decompress 8.)
const FREE_BYTES: u64 = if cfg!(test) { 1 << 20 } else { 8 << 20 };

/// A reader that counts the bytes read through it.
pub struct Counted<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl<R: Read> Read for Cut<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended {
            return Ok(0);
        }
        loop {
            match self.inner.read(buf) {
                Ok(n) => {
                    self.out += n as u64;
                    let compressed = self.compressed.load(Ordering::Relaxed);
                    if self.out > FREE_BYTES + MAX_RATIO * compressed {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "the compressed file decompresses to more than {} times its size: it is corrupt",
                                MAX_RATIO
                            ),
                        ));
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.ended = true;
                    return Ok(0);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (`name`: the tests run at once in one process.)
    fn compressed(name: &str, data: &[u8], flush_every: usize) -> Vec<u8> {
        let path = std::env::temp_dir().join(format!("jlive-gzip-{}-{}", name, std::process::id()));
        let mut out = Out::new(File::create(&path).unwrap(), true);
        for chunk in data.chunks(flush_every) {
            out.write_all(chunk).unwrap();
            out.flush().unwrap();
        }
        assert_eq!(
            out.seek(SeekFrom::Start(0)).unwrap_err().raw_os_error(),
            Some(libc::ESPIPE)
        );
        drop(out);
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        bytes
    }

    /// A stream that decompresses to far more than a trace would (as a corrupt one can) is an
    /// error once past the allowance, not read to its end.
    #[test]
    fn a_stream_that_decompresses_to_too_much_is_an_error() {
        // 8 MiB of zeros: about 1000 times smaller compressed.
        let zeros = vec![0u8; 1 << 20];
        let mut z = GzEncoder::new(Vec::new(), Compression::new(9));
        for _ in 0..8 {
            z.write_all(&zeros).unwrap();
        }
        let bytes = z.finish().unwrap();
        let mut sink = io::sink();
        let error = io::copy(&mut Whole::of(&bytes, &bytes[..]), &mut sink).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        // What a trace decompresses to passes (the module's other tests).
    }

    fn decompressed(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut got = Vec::new();
        Whole::of(bytes, bytes).read_to_end(&mut got)?;
        Ok(got)
    }

    #[test]
    fn what_is_written_reads_back_whole() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let bytes = compressed("whole", &data, 10_000);
        assert!(bytes.starts_with(&MAGIC));
        assert!(bytes.len() * 4 < data.len(), "{} bytes", bytes.len());
        assert_eq!(decompressed(&bytes).unwrap(), data);
        // A plain file passes through.
        assert_eq!(decompressed(&data).unwrap(), data);
    }

    /// Cut anywhere, a file reads up to its last flush at least, never past what was written,
    /// and never fails.
    #[test]
    fn a_file_cut_anywhere_reads_up_to_its_last_flush() {
        let data: Vec<u8> = (0..40_000u32)
            .flat_map(|i| (i * 7 % 13).to_le_bytes())
            .collect();
        let bytes = compressed("cut", &data, 16_000);
        // Where each flush ended in the compressed file: the prefix up to there decompresses
        // to at least that flush's data.
        for cut in (10..bytes.len()).step_by(37) {
            let got = decompressed(&bytes[..cut]).unwrap();
            assert!(data.starts_with(&got), "cut at {}", cut);
        }
        let last = bytes.len() - 8; // without the trailer: everything (each flush was synced)
        assert_eq!(decompressed(&bytes[..last]).unwrap(), data);
    }
}
