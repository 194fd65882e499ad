//! What every part of the agent stands on once it runs: the options, the JVM (JVMTI, the
//! JavaVM, the capabilities held), the transport's hub, the symbol table and the run's
//! lifecycle ([`Runtime`]); and what it does for all of them: making a thread's buffer
//! (`threads.rs`), giving objects their IDs (`objects.rs`), walking the heap (`heap.rs`).
//!
//! The session owns the one `Runtime`; the capture, the recorder and the plug-ins are handed
//! `&Runtime` for each call. It holds no burst state: that is the recorder's.

use crate::options::Options;
use crate::symbols::Registry;
use crate::transport::Hub;
use jlive_jvm::jni::Vm;
use jlive_jvm::jvmti::{Capabilities, Jvmti};
use jlive_writer::filter::ClassFilter;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

pub mod heap;
mod objects;
mod threads;

pub use objects::is_object_id;
pub use threads::virtual_thread_key;

pub struct Runtime {
    options: Options,
    jvmti: Jvmti,
    vm: Vm,
    /// The capabilities jlive holds.
    caps: Capabilities,
    hub: Hub,
    symbols: Arc<Registry>,
    /// Which classes are traced (also applied by the writer).
    filter: ClassFilter,
    /// The next object ID (linear from 1).
    next_object: AtomicU32,
    /// When the agent was loaded (timed bursts count from here) and the run's start in
    /// seconds since 1970 (`%t` in file names).
    loaded: Instant,
    start_epoch: u64,
    /// The JVM is shutting down: nothing new begins (a burst, a thread of jlive's).
    closing: AtomicBool,
}

/// What a [`Runtime`] is made of.
pub struct Parts {
    pub options: Options,
    pub jvmti: Jvmti,
    pub vm: Vm,
    pub caps: Capabilities,
    pub hub: Hub,
    pub symbols: Arc<Registry>,
    pub loaded: Instant,
    pub start_epoch: u64,
}

impl Runtime {
    pub fn new(parts: Parts) -> Runtime {
        let filter = ClassFilter::new(&parts.options.include, &parts.options.exclude);
        Runtime {
            options: parts.options,
            jvmti: parts.jvmti,
            vm: parts.vm,
            caps: parts.caps,
            hub: parts.hub,
            symbols: parts.symbols,
            filter,
            next_object: AtomicU32::new(1),
            loaded: parts.loaded,
            start_epoch: parts.start_epoch,
            closing: AtomicBool::new(false),
        }
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// jlive's JVMTI environment.
    pub fn jvmti(&self) -> Jvmti {
        self.jvmti
    }

    pub fn vm(&self) -> Vm {
        self.vm
    }

    pub fn caps(&self) -> &Capabilities {
        &self.caps
    }

    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    pub fn symbols(&self) -> &Registry {
        &self.symbols
    }

    pub fn filter(&self) -> &ClassFilter {
        &self.filter
    }

    pub fn loaded(&self) -> Instant {
        self.loaded
    }

    pub fn start_epoch(&self) -> u64 {
        self.start_epoch
    }

    /// Whether the JVM is shutting down.
    pub fn closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Marks the run as closing; true the first time.
    pub fn close(&self) -> bool {
        !self.closing.swap(true, Ordering::SeqCst)
    }

    /// The next object ID an object would take now (a heap dump frees none above it).
    pub fn next_object_id(&self) -> u32 {
        self.next_object.load(Ordering::SeqCst)
    }
}
