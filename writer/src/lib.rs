//! jlive's writer side: everything between a batch of raw records and a trace file on disk,
//! and the way back from a file to events. Nothing in this crate touches a JVM.
//!
//! Where a record becomes bytes:
//! - [`record`]: what the agent hands over: fixed-size raw records in per-thread batches,
//!   and the [`record::Symbols`] through which the writer learns class, method and thread names.
//! - [`resolve`]: raw records become [`model`] events, once for every format: linear IDs,
//!   define-before-use, burst boundaries, per-thread frame stacks, include/exclude filtering.
//! - [`model`]: the format-neutral events, and the [`model::Sink`] each format implements.
//! - One folder per format, each with its layout drawn at the top of its `mod.rs`: the sink
//!   (model events into the format), the encoder and decoder of its bytes, and the way back
//!   into model events. [`jinsight`]: JinsightLive binary; [`tptp`]: Eclipse TPTP, binary and
//!   XML; [`orca`]: ORCA's event and meta logs (concurrency events). [`format`] names them and opens the sink of a run's formats; [`file`] creates
//!   their files.
//! - [`record_tree`]: `record=tree`, a sink in front of a format's that turns method events
//!   into each burst's calling-context trees.
//! - [`writer`]: the writer thread's loop: channel in, a sink's files out, flushed every 100 ms.
//!
//! And back: [`read`] opens a file of any format, found by its first bytes, as model events;
//! [`check`] verifies one, [`stats`] summarises one, [`tree`] makes its calling-context trees,
//! [`export`] writes it for today's viewers.

pub mod calltree;
pub mod check;
pub mod checker;
pub mod codec;
pub mod direct;
pub mod export;
pub mod file;
pub mod filter;
pub mod format;
pub mod gzip;
pub mod heap;
pub mod jinsight;
pub mod keyhash;
pub mod model;
pub mod orca;
pub mod read;
pub mod record;
pub mod record_tree;
pub mod resolve;
pub mod sinks;
pub mod stats;
pub mod stck;
pub mod sys;
pub mod tptp;
pub mod tree;
pub mod writer;
