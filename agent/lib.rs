//! libjlive.so: the in-process side of jlive.
//!
//! A JVMTI event becomes a trace record like this:
//! - `entry.rs`: Agent_OnLoad / JVM_OnLoad / Agent_OnUnload, the only exported symbols.
//! - `options.rs`: the option string; `profiler.rs`: load, VM init, close.
//! - `burst.rs`: bursts begin and end here, whoever asks: `control.rs` (the control socket
//!   and the timers), `javaapi.rs` (jlive.Jlive, InstrumentVMSupport) or VM init and death.
//! - `capture/`: how method entries and exits are seen (`events.rs`: JVMTI MethodEntry/Exit).
//! - `callbacks.rs`: every other JVMTI event (threads, classes, GC, allocations, frees).
//! - `classes.rs` + `registry.rs`: JVM classes, methods and threads as keys the writer resolves.
//! - `buffer.rs`: per-thread lock-free buffers and the hub that sends batches to the writer.
//! - `jvmpi.rs`: `jvmpi=`, hosting a legacy JVMPI agent (the jvmpi-shim crate) instead of
//!   tracing, with `jlive ctl dump` and `reset` for it.
//! - `plugin.rs`: VA/Java user trace libraries, called on the thread of each event;
//!   `heap.rs`: the heap walk behind `jlive ctl heap` and `reportObjectReferences()`.
//! - `clock.rs`: the tick counter; `log.rs`: the agent's own messages.
//! - `ffi/`: the thin unsafe layer over JVMTI and JNI.
//!
//! The writer thread and the JinsightLive encoder live in the `jlive-writer` crate, the
//! class-file rewriter that `capture/bci.rs` runs in ClassFileLoadHook in `jlive-bci`.

pub mod buffer;
pub mod burst;
pub mod callbacks;
pub mod capture;
pub mod classes;
pub mod clock;
pub mod control;
pub mod entry;
pub mod ffi;
pub mod heap;
pub mod javaapi;
pub mod jvmpi;
pub mod live;
pub mod log;
pub mod options;
pub mod plugin;
pub mod profiler;
pub mod registry;
