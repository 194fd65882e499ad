//! How many events per second the writer sustains: synthetic batches of method entries and
//! exits (4 threads, 20 methods) through the channel, the resolver and a format's sink into a
//! real file, as the agent writes them. Prints events/s and MB/s.
//!
//! cargo run --release -p jlive-writer --example throughput [RECORDS] [FILE] [FORMAT]
//! (FORMAT as in format=: binary, tptp or tptp-xml; default binary)

use jlive_writer::format::Format;
use jlive_writer::model::{MethodDef, TraceInfo};
use jlive_writer::record::*;
use jlive_writer::resolve::{Resolver, ResolverConfig};
use jlive_writer::sinks::{with_sink, FormatOptions, OpenSink, WithSink};
use std::sync::Arc;
use std::time::Instant;

struct Names;

impl Symbols for Names {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
        Some(MethodRef {
            class: 3,
            index: (key % 20) as u16,
        })
    }
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
        let name = match key {
            1 => "java/lang/Object",
            2 => "java/lang/Thread",
            _ => "bench/Calls",
        };
        let methods = (0..20)
            .map(|i| MethodDef {
                name: format!("m{}", i),
                signature: "()V".into(),
                access: 9,
                lines: Vec::new(),
            })
            .collect();
        Some(Arc::new(ClassInfo {
            name: name.into(),
            superclass: (key != 1).then_some(1),
            methods: if key == 3 { methods } else { Vec::new() },
            ..ClassInfo::default()
        }))
    }
    fn class_by_name(&self, name: &str) -> Option<ClassKey> {
        match name {
            "java/lang/Object" => Some(1),
            "java/lang/Thread" => Some(2),
            _ => None,
        }
    }
    fn thread(&self, key: ThreadKey) -> Option<ThreadInfo> {
        Some(ThreadInfo {
            name: format!("bench-{}", key),
            ..ThreadInfo::default()
        })
    }
}

/// Opens the sink of the format's own type and starts the writer's loop on it.
struct Writer {
    formats: Vec<Format>,
    path: String,
    messages: crossbeam_channel::Receiver<Message>,
    pool: crossbeam_channel::Sender<Vec<Slot>>,
}

impl WithSink for Writer {
    type Output = std::thread::JoinHandle<jlive_writer::record::Summary>;
    fn call<S: OpenSink>(self) -> Self::Output {
        let info = TraceInfo {
            ticks_per_microsecond: 1000,
            ..TraceInfo::default()
        };
        let sink = S::open(&self.formats, &self.path, &info, FormatOptions::default())
            .expect("create file");
        let session = Resolver::new(sink, Arc::new(Names), ResolverConfig::default());
        std::thread::spawn(move || {
            let stats = jlive_writer::writer::WriterStats::default();
            let mut reopen = |_: &str| Err(std::io::Error::other("no roll in this benchmark"));
            jlive_writer::writer::run(
                session,
                self.messages,
                self.pool,
                &|m| eprintln!("{}", m),
                &|| {},
                &stats,
                &mut reopen,
            )
        })
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let total: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000_000);
    let path = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "/tmp/jlive-throughput.trc".into());
    let format = match args.get(3) {
        Some(name) => Format::parse(name).expect("a format: binary, tptp or tptp-xml"),
        None => Format::Jinsight,
    };
    let (tx, rx) = crossbeam_channel::bounded(64);
    let (pool_tx, pool_rx) = crossbeam_channel::bounded(64);
    let writer = with_sink(
        &[format],
        FormatOptions::default(),
        Writer {
            formats: vec![format],
            path: path.clone(),
            messages: rx,
            pool: pool_tx,
        },
    );
    let batch = 2048;
    let start = Instant::now();
    tx.send(Message::BurstBegin {
        ticks: 0,
        scope: None,
    })
    .unwrap();
    let mut ticks = 1u64;
    let mut sent = 0u64;
    while sent < total {
        for thread in 1..=4u32 {
            let mut slots: Vec<Slot> = pool_rx
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(batch));
            for i in 0..batch as u32 / 2 {
                ticks += 3;
                slots.push(Slot::compact(FORM_ENTRY, ticks, i, NO_OBJECT));
                slots.push(Slot::compact(FORM_EXIT, ticks + 1, i, 0));
            }
            sent += slots.len() as u64;
            let records = Batch {
                thread,
                overhead: 20,
                slots,
                payloads: Vec::new(),
            };
            tx.send(Message::Batch(records)).unwrap();
        }
    }
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    tx.send(Message::Close {
        ticks_per_microsecond: None,
        done: done_tx,
    })
    .unwrap();
    let summary = done_rx.recv().unwrap();
    writer.join().unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "writer ({}): {} events, {:.1} MB in {:.2} s = {:.1} M events/s, {:.0} MB/s ({})",
        format.name(),
        summary.events,
        summary.bytes as f64 / 1e6,
        secs,
        summary.events as f64 / secs / 1e6,
        summary.bytes as f64 / secs / 1e6,
        path
    );
    // The trace is of no further use; a device (`/dev/null`) is not ours to remove.
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file()) {
        let _ = std::fs::remove_file(&path);
    }
}
