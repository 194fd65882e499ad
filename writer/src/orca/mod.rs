//! ORCA (`format=orca`): concurrency traces as two text files (docs/formats.md tells what ORCA
//! reads of them). The event log is FILE, the meta log FILE.meta; one record per
//! line, fields separated by commas:
//!
//! ```text
//! event log (FILE)
//!   <seconds>,ObjectWait,<thread>,<object>,<stack>          Object.wait entered (any form)
//!   <seconds>,ObjectWaited,<thread>,<object>,<stack>        ... and left
//!   <seconds>,ObjectNotify,<thread>,<object>,<stack>        also ObjectNotifyAll
//!   <seconds>,ThreadStart,<thread>,<started>,<stack>        Thread.start called
//!   <seconds>,ThreadJoin,<thread>,<joined>,<stack>          also ThreadJoined (its wait: none)
//!   <seconds>,ThreadSleep,<thread>,<stack>                  also ThreadSlept
//!   <seconds>,MonitorContendedEnter,<thread>,<monitor>,<owner>,<stack>
//!   <seconds>,MonitorContendedEntered,<thread>,<monitor>,<stack>
//!   <seconds>,ThreadStarted,<thread>,<name>                 the name runs to the line's end
//!   <seconds>,ThreadEnded,<thread>
//!
//!   <seconds>   seconds since the file was opened (the JVM's start), 9 decimals: 12.000345678
//!   <thread>... identity hash codes (JVMTI GetObjectHashCode), 8 upper-case hex digits;
//!               00000000 for an owner already gone when the contention was seen
//!   <stack>     <depth>,(<methodID>,<location>)*  innermost frame first; methodID 16 hex
//!               digits, location (bytecode index) 16 hex digits, FFFFFFFFFFFFFFFF in a native
//!
//! meta log (FILE.meta), rewritten whole at each flush while it grows, so it always describes
//! every method of the event log up to its last flush
//!   <classSignature>,<sourceFileName>                       Ljava/lang/Object;,Object.java
//!   ...
//!   <methodID>,<name>,<signature>,<declaringClass>,<entriesCount>,(<startLocation>,<line>)*
//!   00000001,run,()V,LWorker;,2,00000000,10,00000005,11     entriesCount -1: no line table
//! ```
//!
//! A method has one ID in both logs: its number in the order of first use (from 1), written
//! with 8 hex digits in the meta log (the document's 32-bit IDs) and 16 in stacks (its
//! 64-bit ones). The classes come first, those that declare a described method, in the order
//! of first use; then the methods.
//!
//! Reading back ([`read`]) takes the event log, with the meta log in front of it when the
//! caller found one (jlive's own framing: lines starting with `#`, which ORCA lines never do).

pub mod read;
mod sink;

pub use sink::OrcaSink;

/// The meta log of an event log `path` (a compressed log's meta log is plain text, named
/// without the `.gz`).
pub fn meta_path(path: &str) -> String {
    let plain = path.strip_suffix(crate::gzip::SUFFIX).unwrap_or(path);
    format!("{}.meta", plain)
}

/// The line before a meta log that a reader is given in front of the event log.
pub const META_BEGIN: &str = "# jlive: ORCA meta log";
/// The line after it, before the event log.
pub const EVENTS_BEGIN: &str = "# jlive: ORCA event log";

/// Whether a file that starts with `prefix` is an ORCA event log (a time, or jlive's framing).
pub fn is_start(prefix: &[u8]) -> bool {
    if prefix.starts_with(b"# jlive") {
        return true;
    }
    let digits = prefix.iter().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && prefix.get(digits) == Some(&b'.')
}

/// The event log at `path` to read, with its meta log (if there is one) in front.
pub fn open_with_meta(
    path: &str,
    events: impl std::io::Read + Send + 'static,
) -> Box<dyn std::io::Read + Send> {
    match std::fs::read(meta_path(path)) {
        Ok(meta) => {
            // The event log is decompressed here: what follows the meta log must be plain.
            let mut events = events;
            let mut prefix = [0u8; 2];
            let got = read_up_to(&mut events, &mut prefix);
            let events = std::io::Cursor::new(prefix[..got].to_vec()).chain(events);
            let events = crate::gzip::Whole::of(&prefix[..got], events);
            let mut front = format!("{}\n", META_BEGIN).into_bytes();
            front.extend_from_slice(&meta);
            if !front.ends_with(b"\n") {
                front.push(b'\n');
            }
            front.extend_from_slice(format!("{}\n", EVENTS_BEGIN).as_bytes());
            Box::new(std::io::Cursor::new(front).chain(events))
        }
        Err(_) => Box::new(events),
    }
}

use std::io::Read as _;

fn read_up_to(r: &mut impl std::io::Read, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    got
}
