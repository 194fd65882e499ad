//! How many events per second the writer sustains: synthetic batches of method entries and
//! exits (4 threads, 20 methods) through the channel, the session and the JinsightLive
//! encoder into a real file. Prints events/s and MB/s.
//!
//! cargo run --release -p jlive-writer --example throughput [RECORDS] [FILE]

use jlive_writer::jinsight::{Encoder, Header, PLATFORM_LINUX_X86};
use jlive_writer::record::*;
use jlive_writer::session::{Session, SessionConfig};
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
            .map(|i| Member {
                name: format!("m{}", i),
                signature: "()V".into(),
                access: 9,
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
    let file = std::fs::File::create(&path).expect("create file");
    let header = Header {
        version: 8,
        platform: PLATFORM_LINUX_X86,
        ticks_per_microsecond: 1000,
        ..Header::default()
    };
    let session = Session::new(
        Encoder::new(file, &header).unwrap(),
        Arc::new(Names),
        SessionConfig::default(),
    );
    let (tx, rx) = crossbeam_channel::bounded(64);
    let (pool_tx, pool_rx) = crossbeam_channel::bounded(64);
    let writer = std::thread::spawn(move || {
        let stats = jlive_writer::writer::WriterStats::default();
        let mut reopen = |_: &str| Err(std::io::Error::other("no roll in this benchmark"));
        jlive_writer::writer::run(
            session,
            rx,
            pool_tx,
            &|m| eprintln!("{}", m),
            &stats,
            &mut reopen,
        )
    });
    let batch = 2048;
    let start = Instant::now();
    tx.send(Message::BurstBegin { ticks: 0 }).unwrap();
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
        "writer: {} events, {:.1} MB in {:.2} s = {:.1} M events/s, {:.0} MB/s ({})",
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
