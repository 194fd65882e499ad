//! jlive's class-file rewriter, the core of `capture=bci`: every method of a class gets a call
//! to a static trampoline on entry and on every exit (normal or by exception). The agent
//! (`agent/capture/bci/hook.rs`) runs it in ClassFileLoadHook and binds the trampolines to
//! Rust with RegisterNatives; this crate knows nothing of the JVM beyond the class-file
//! format, so that `bench/instrument.rs` can time it on its own.
//!
//! - `classfile.rs`: reading and writing class files; `code.rs`: instructions and the
//!   initialization analysis; `stackmap.rs`: StackMapTable frames; `rewrite/`: the weaving;
//!   `sync.rs`: the call sites of notify, start, join and sleep (`monitors=on`).

pub mod classfile;
pub mod code;
pub mod rewrite;
pub mod stackmap;
pub mod sync;
