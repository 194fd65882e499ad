//! jlive's writer side: everything between a batch of raw records and a trace file on disk,
//! and the way back from a file to events. Nothing in this crate touches a JVM.
//!
//! - [`record`]: what the agent hands over: fixed-size raw records in per-thread batches,
//!   and the [`record::Symbols`] through which the writer learns class, method and thread names.
//! - [`session`]: turns raw records into format events: linear IDs, define-before-use,
//!   burst boundaries, per-thread frame stacks, include/exclude filtering.
//! - [`jinsight`]: the JinsightLive binary format: encoder, decoder, checker.
//! - [`keyhash`]: the hasher of integer-keyed tables (here and in the agent).
//! - [`stats`]: summaries of a decoded trace (events by type, threads, top methods).
//! - [`writer`]: the writer thread's loop: channel in, buffered file out, flushed every 100 ms.

pub mod filter;
pub mod jinsight;
pub mod keyhash;
pub mod record;
pub mod session;
pub mod stats;
pub mod writer;
