//! libjlive.so: the in-process side of jlive. ARCHITECTURE.md draws the layers; in short,
//! from the top (a module imports only those below it):
//!
//! - `entry/`: the symbols the JVM looks up and the functions it calls back, thin thunks
//!   into the one session;
//! - `control/` (the control socket, timers, the live visualizer) and `jvmpi.rs` (hosting a
//!   legacy JVMPI agent instead of tracing), beside the session;
//! - `session/`: one traced run; owns and coordinates everything below;
//! - `plugin/`: VA/Java user trace libraries, the capture's subscriber;
//! - `recorder/`: the burst state, its sole owner;
//! - `capture/`: how calls, allocations and concurrency events are seen (JVMTI events, or
//!   instrumented bytecode: `capture/bci/`, whose natives' fast path is the hot path);
//! - `runtime/`: options, the JVM, the hub and the symbols handed to all of the above; thread
//!   buffers made, object IDs given, the heap walked;
//! - `symbols/`: classes, methods and threads by the agent's keys;
//! - `transport/`: per-thread buffers and the hub that hands batches to the writer;
//! - `options.rs`, `clock.rs`, `log.rs`: the foundations.
//!
//! The writer thread and the formats live in the `jlive-writer` crate, the class-file
//! rewriter in `jlive-bci`, the raw JVMTI/JNI layer in `jlive-jvm`.

mod capture;
mod clock;
mod control;
mod entry;
mod jvmpi;
mod log;
mod options;
mod plugin;
mod recorder;
mod runtime;
mod session;
mod symbols;
mod transport;
