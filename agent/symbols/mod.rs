//! The symbol table: the JVM's classes, methods and threads by the agent's keys ([`Registry`],
//! which the writer reads as `jlive_writer::record::Symbols`), how a JVM class becomes an
//! entry ([`Classes`]), and the methods a trigger watches for ([`Watch`]). Nothing here
//! records: payloads travel inside the batches, not through this table.

mod classes;
mod registry;
mod watch;

pub use classes::{internal_name, with_loaded_classes, Classes, CLASS_TAG};
pub use registry::{BciKeys, Registry, MAX_BCI_KEYS};
