//! `capture=bci`: bytecode instrumentation. Every method of every included class calls a
//! static native trampoline on entry and on every exit (normal or by exception); the
//! trampolines are bound to Rust with RegisterNatives and do nothing but read the tick counter
//! and append a record.
//!
//! - `classfile.rs`: reading and writing class files; `code.rs`: instructions and the
//!   initialization analysis; `stackmap.rs`: StackMapTable frames; `rewrite.rs`: the weaving.

pub mod classfile;
pub mod code;
pub mod rewrite;
pub mod stackmap;
