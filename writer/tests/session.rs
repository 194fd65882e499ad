//! The session and the JinsightLive encoder, decoder and checker, without a JVM: records in,
//! a file out, decoded and checked against the numbers the records imply.

use jlive_writer::filter::ClassFilter;
use jlive_writer::jinsight::{self, check::check, Encoder, Event, Header};
use jlive_writer::record::*;
use jlive_writer::session::{Session, SessionConfig};
use jlive_writer::stats::{Stats, Trace};
use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

/// A registry of four classes: Object(1), Thread(2), Runnable(3), app/Fib(4) and int[](5).
struct Fixture;

fn member(name: &str, sig: &str) -> Member {
    Member {
        name: name.into(),
        signature: sig.into(),
        access: 9,
    }
}

impl Symbols for Fixture {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
        match key {
            100 => Some(MethodRef { class: 4, index: 0 }),
            101 => Some(MethodRef { class: 4, index: 1 }),
            _ => None,
        }
    }
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
        let c = match key {
            1 => ClassInfo {
                name: "java/lang/Object".into(),
                ..Default::default()
            },
            2 => ClassInfo {
                name: "java/lang/Thread".into(),
                superclass: Some(1),
                interfaces: vec![3],
                methods: vec![member("run", "()V")],
                ..Default::default()
            },
            3 => ClassInfo {
                name: "java/lang/Runnable".into(),
                ..Default::default()
            },
            4 => ClassInfo {
                name: "app/Fib".into(),
                superclass: Some(1),
                methods: vec![
                    member("main", "([Ljava/lang/String;)V"),
                    member("fib", "(I)I"),
                ],
                fields: vec![member("calls", "I")],
                ..Default::default()
            },
            5 => ClassInfo {
                name: "[I".into(),
                superclass: Some(1),
                array: Some(ArrayKind::Primitive(b'I')),
                ..Default::default()
            },
            _ => return None,
        };
        Some(Arc::new(c))
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
            name: format!("worker-{}", key),
        })
    }
}

fn header(platform: u32) -> Header {
    Header {
        version: 8,
        platform,
        ticks_per_microsecond: 1000,
        max_threads: 256,
        ..Default::default()
    }
}

fn entry(t: u64, m: u64) -> Record {
    Record::new(RecordKind::MethodEntry, t, m, NO_OBJECT, 3)
}
fn exit(t: u64, m: u64) -> Record {
    Record::new(RecordKind::MethodExit, t, m, 0, 4)
}

/// A batch of `records` whose one-slot records carry overhead 3 (the entries above; the
/// exits take the wide form).
fn batch(thread: u32, records: Vec<Record>) -> Batch {
    let mut b = Batch::new(thread, 3);
    for r in &records {
        b.push(r);
    }
    b
}

/// fib(n) as records: calls = fib-calls(n).
fn fib_records(n: u32, t: &mut u64, out: &mut Vec<Record>) {
    *t += 1;
    out.push(entry(*t, 101));
    if n >= 2 {
        fib_records(n - 1, t, out);
        fib_records(n - 2, t, out);
    }
    *t += 1;
    out.push(exit(*t, 101));
}

fn write(platform: u32, config: SessionConfig, batches: Vec<Batch>) -> Vec<u8> {
    let enc = Encoder::new(Cursor::new(Vec::new()), &header(platform)).unwrap();
    let mut s = Session::new(enc, Arc::new(Fixture), config);
    s.begin_burst(1).unwrap();
    for b in &batches {
        s.batch(b).unwrap();
    }
    s.end_burst(1_000_000).unwrap();
    let (out, _, _) = s.finish(Some(2500)).unwrap();
    out.into_inner()
}

fn fib_trace(platform: u32) -> Vec<u8> {
    let mut records = vec![
        Record::new(RecordKind::ThreadStart, 2, 0, 0, 0),
        exit(3, 100),
    ];
    let mut t = 10;
    fib_records(10, &mut t, &mut records);
    write(platform, SessionConfig::default(), vec![batch(7, records)])
}

#[test]
fn fib_round_trip_counts_and_checks() {
    let data = fib_trace(jinsight::PLATFORM_LINUX_X86);
    let summary = check(&data).expect("trace checks");
    assert_eq!(summary.bursts, 1);
    let trace = Trace::decode(&data).unwrap();
    assert_eq!(trace.header.ticks_per_microsecond, 2500, "patched at close");
    let stats = Stats::of(&trace);
    // jlive stats reads the file one event at a time, keeping none, to the same figures.
    let (streamed, cut_at) = Stats::of_file(&data).unwrap();
    assert_eq!(cut_at, None);
    assert_eq!(streamed.report(50), stats.report(50));
    // fib(10) makes 177 calls; the stray exit of a frame entered before the burst is not written.
    assert_eq!(stats.by_type["METHOD_ENTER"], 177);
    assert_eq!(stats.by_type["METHOD_LEAVE"], 177);
    assert_eq!(trace.class_name(0), "java/lang/Object");
    assert_eq!(trace.class_name(1), "java/lang/Thread");
    let fib = stats
        .methods
        .iter()
        .find(|m| m.name == "app/Fib.fib")
        .unwrap();
    assert_eq!(fib.calls, 177);
    assert_eq!(trace.threads_named("worker-7").len(), 1);
    assert_eq!(
        trace.header.number_of_events as usize,
        trace.events.len() - 1
    );
    for (_, e) in &trace.events {
        if let Event::MethodLeave { overhead, .. } = e {
            assert_eq!(*overhead, 7, "entry + exit overhead");
        }
    }
}

#[test]
fn big_endian_platform_writes_big_endian_events() {
    let le = fib_trace(jinsight::PLATFORM_LINUX_X86);
    let be = fib_trace(jinsight::PLATFORM_LINUX_390);
    check(&be).expect("big-endian trace checks");
    // BEGIN_BURST at offset 45 carries ticks = 1 in the platform's byte order.
    assert_eq!(le[45], jinsight::BEGIN_BURST);
    assert_eq!(&le[46..54], &1u64.to_le_bytes());
    assert_eq!(&be[46..54], &1u64.to_be_bytes());
    // The header stays little-endian.
    assert_eq!(&be[5..9], &55u32.to_le_bytes());
    let (a, b) = (Trace::decode(&le).unwrap(), Trace::decode(&be).unwrap());
    let strip = |t: &Trace| t.events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn classes_defined_after_superclass_and_interfaces() {
    let data = fib_trace(jinsight::PLATFORM_LINUX_X86);
    let trace = Trace::decode(&data).unwrap();
    let order: Vec<String> = trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::ClassLoad(c) => Some(c.name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "java/lang/Object",
            "java/lang/Runnable",
            "java/lang/Thread",
            "app/Fib"
        ]
    );
    let object = trace.classes.get(&0).unwrap();
    assert_eq!(object.superclass, 0, "Object names itself");
}

#[test]
fn exclude_filter_drops_entries_and_their_leaves() {
    let mut records = Vec::new();
    let mut t = 10;
    fib_records(5, &mut t, &mut records);
    let config = SessionConfig {
        filter: ClassFilter::new(&[], &["app.*".into()]),
        entries_only: false,
    };
    let data = write(
        jinsight::PLATFORM_LINUX_X86,
        config,
        vec![batch(1, records)],
    );
    check(&data).unwrap();
    let stats = Stats::of(&Trace::decode(&data).unwrap());
    assert_eq!(stats.calls(), 0);
    assert_eq!(stats.by_type.get("METHOD_LEAVE"), None);
}

#[test]
fn allocations_define_then_create() {
    let records = vec![
        Record::new(RecordKind::ObjectAlloc, 5, 4, 1, NOT_ARRAY),
        Record::new(RecordKind::ObjectAlloc, 6, 5, 2, 17),
        Record::new(RecordKind::ObjectFree, 7, 0, 1, 0),
    ];
    let data = write(
        jinsight::PLATFORM_LINUX_X86,
        SessionConfig::default(),
        vec![batch(1, records)],
    );
    check(&data).unwrap();
    let trace = Trace::decode(&data).unwrap();
    let mut by: HashMap<&str, u32> = HashMap::new();
    for (_, e) in &trace.events {
        *by.entry(e.name()).or_default() += 1;
        if let Event::ArrayDefined {
            array_type, size, ..
        } = e
        {
            assert_eq!((*array_type, *size), (1, 17));
        }
    }
    assert_eq!(by["OBJECT_DEFINED"], 1);
    assert_eq!(by["OBJECT_CREATED"], 1);
    assert_eq!(by["ARRAY_DEFINED"], 1);
    assert_eq!(by["ARRAY_CREATED"], 1);
    assert_eq!(by["OBJECT_RECLAIMED"], 1);
}

#[test]
fn check_rejects_truncation_flipped_codes_and_empty_files() {
    let data = fib_trace(jinsight::PLATFORM_LINUX_X86);
    assert_eq!(check(&[]).unwrap_err().offset, 0);
    let cut = &data[..data.len() - 20];
    assert!(check(cut).is_err());
    for len in [1, 30, 45, 46, 100, data.len() - 1] {
        assert!(check(&data[..len]).is_err(), "cut at {}", len);
    }
    // Flip the code of the first METHOD_ENTER into an unknown code.
    let trace = Trace::decode(&data).unwrap();
    let (at, _) = trace
        .events
        .iter()
        .find(|(_, e)| matches!(e, Event::MethodEnter { .. }))
        .unwrap();
    let mut bad = data.clone();
    bad[*at] = 0xEE;
    let err = check(&bad).unwrap_err();
    assert_eq!(err.offset, *at);
    // Turn an entry into a leave: unbalanced.
    let mut bad = data.clone();
    bad[*at] = jinsight::METHOD_LEAVE;
    assert!(check(&bad).is_err());
}

/// Gives a few bytes per read, so that events straddle every read and every chunk.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.step = self.step % 7 + 1;
        Ok(n)
    }
}

/// Every event with its offset, or the error that ends them.
fn events_of(
    mut next: impl FnMut() -> Result<Option<(usize, Event)>, jinsight::DecodeError>,
) -> (Vec<(usize, Event)>, Option<jinsight::DecodeError>) {
    let mut events = Vec::new();
    loop {
        match next() {
            Ok(Some(e)) => events.push(e),
            Ok(None) => return (events, None),
            Err(e) => return (events, Some(e)),
        }
    }
}

/// The stream decoder (check, dump and stats of the CLI) reads a chunk at a time and gives
/// the same events, offsets and errors as the decoder of a whole file in memory: whole, cut
/// inside an event, with a bad event code, and with its header cut short.
#[test]
fn the_stream_decoder_reads_what_the_whole_file_decoder_reads() {
    let data = fib_trace(jinsight::PLATFORM_LINUX_X86);
    let whole = Trace::decode(&data).unwrap();
    let (last_enter, _) = *whole
        .events
        .iter()
        .rfind(|(_, e)| matches!(e, Event::MethodEnter { .. }))
        .unwrap();
    let mut bad = data.clone();
    bad[last_enter] = 0xEE;
    let inputs: [&[u8]; 5] = [&data, &data[..last_enter + 7], &bad, &data[..20], &[]];
    for input in inputs {
        let expected = match jinsight::Decoder::new(input) {
            Ok(mut d) => Ok(events_of(|| d.next_event())),
            Err(e) => Err(e),
        };
        for chunk in [1, 3, 64, 1 << 20] {
            let reader = Trickle {
                data: input,
                step: 1,
            };
            let got = match jinsight::StreamDecoder::with_chunk(reader, chunk) {
                Ok(mut d) => Ok(events_of(|| d.next_event())),
                Err(e) => Err(e),
            };
            assert_eq!(
                got,
                expected,
                "{} bytes in chunks of {}",
                input.len(),
                chunk
            );
        }
    }
    assert!(check(&data).is_ok());
}

/// A file that ends inside an event (a JVM killed while its writer wrote): `check` names that
/// event, and `Trace::decode` gives every event before it.
#[test]
fn a_file_cut_inside_an_event_decodes_up_to_that_event() {
    let data = fib_trace(jinsight::PLATFORM_LINUX_X86);
    let whole = Trace::decode(&data).unwrap();
    assert_eq!(whole.cut_at, None);
    let (last_enter, _) = *whole
        .events
        .iter()
        .rfind(|(_, e)| matches!(e, Event::MethodEnter { .. }))
        .unwrap();
    for len in [last_enter + 1, last_enter + 7] {
        let cut = &data[..len];
        let err = check(cut).unwrap_err();
        assert!(err.cut_short && err.offset == last_enter, "{:?}", err);
        let trace = Trace::decode(cut).unwrap();
        assert_eq!(trace.cut_at, Some(last_enter));
        // jlive stats reads it one event at a time, to the same figures.
        let (streamed, cut_at) = Stats::of_file(cut).unwrap();
        assert_eq!(cut_at, Some(last_enter));
        assert_eq!(streamed.report(50), Stats::of(&trace).report(50));
        let before = whole
            .events
            .iter()
            .filter(|(at, _)| *at < last_enter)
            .count();
        assert_eq!(trace.events.len(), before);
    }
    // At an event boundary nothing is cut: only the end is missing.
    let trace = Trace::decode(&data[..last_enter]).unwrap();
    assert_eq!(trace.cut_at, None);
    assert!(!check(&data[..last_enter]).unwrap_err().cut_short);
    // A bad code is not a cut.
    let mut bad = data.clone();
    bad[last_enter] = 0xEE;
    assert!(Trace::decode(&bad).is_err());
}

#[test]
fn decoder_never_panics_on_garbage() {
    let data = fib_trace(jinsight::PLATFORM_LINUX_X86);
    let mut seed = 0x1234_5678_u64;
    for round in 0..3000 {
        let mut bad = data.clone();
        for _ in 0..(1 + round % 5) {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (seed >> 33) as usize % bad.len();
            bad[i] = (seed >> 13) as u8;
        }
        let cut = (seed >> 40) as usize % (bad.len() + 1);
        let _ = check(&bad[..cut]);
        let _ = Trace::decode(&bad);
    }
}

/// A registry in which app/Lazy (6) has no methods until it is prepared; [Lapp/Lazy; is 7.
struct Evolving {
    prepared: std::sync::atomic::AtomicBool,
}

impl Symbols for Evolving {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
        (key == 200 && self.prepared.load(std::sync::atomic::Ordering::Relaxed))
            .then_some(MethodRef { class: 6, index: 1 })
    }
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
        let prepared = self.prepared.load(std::sync::atomic::Ordering::Relaxed);
        match key {
            6 => Some(Arc::new(ClassInfo {
                name: "app/Lazy".into(),
                superclass: Some(1),
                methods: if prepared {
                    vec![member("<init>", "()V"), member("run", "()V")]
                } else {
                    Vec::new()
                },
                ..Default::default()
            })),
            7 => Some(Arc::new(ClassInfo {
                name: "[Lapp/Lazy;".into(),
                superclass: Some(1),
                array: Some(ArrayKind::Objects(6)),
                ..Default::default()
            })),
            _ => Fixture.class(key),
        }
    }
    fn class_by_name(&self, name: &str) -> Option<ClassKey> {
        Fixture.class_by_name(name)
    }
    fn thread(&self, key: ThreadKey) -> Option<ThreadInfo> {
        Fixture.thread(key)
    }
}

#[test]
fn a_class_defined_before_it_was_prepared_is_defined_again_complete() {
    let symbols = Arc::new(Evolving {
        prepared: false.into(),
    });
    let enc = Encoder::new(
        Cursor::new(Vec::new()),
        &header(jinsight::PLATFORM_LINUX_X86),
    )
    .unwrap();
    let mut s = Session::new(enc, symbols.clone(), SessionConfig::default());
    s.begin_burst(1).unwrap();
    let alloc = vec![Record::new(RecordKind::ObjectAlloc, 5, 7, 1, 3)];
    s.batch(&batch(1, alloc)).unwrap();
    symbols
        .prepared
        .store(true, std::sync::atomic::Ordering::Relaxed);
    s.batch(&batch(1, vec![entry(6, 200), exit(7, 200)]))
        .unwrap();
    let (out, _, _) = s.finish(None).unwrap();
    let data = out.into_inner();
    check(&data).expect("the entry refers to a complete definition");
    let trace = Trace::decode(&data).unwrap();
    let loads: Vec<(u16, usize)> = trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::ClassLoad(c) if c.name == "app/Lazy" => Some((c.class, c.methods.len())),
            _ => None,
        })
        .collect();
    assert_eq!(
        loads.len(),
        2,
        "defined without methods, then again with them: {:?}",
        loads
    );
    assert_eq!(loads[1].1, 2);
    let stats = Stats::of(&trace);
    assert_eq!(
        stats
            .methods
            .iter()
            .find(|m| m.name == "app/Lazy.run")
            .map(|m| m.calls),
        Some(1)
    );
}

#[test]
fn an_idle_writer_sleeps() {
    use jlive_writer::writer::{run, WriterStats};
    let enc = Encoder::new(
        Cursor::new(Vec::new()),
        &header(jinsight::PLATFORM_LINUX_X86),
    )
    .unwrap();
    let session = Session::new(enc, Arc::new(Fixture), SessionConfig::default());
    let (tx, rx) = crossbeam_channel::bounded(4);
    let (pool, _pool_rx) = crossbeam_channel::bounded(4);
    let cpu_before = thread_cpu_time();
    let writer = std::thread::spawn(move || {
        let stats = WriterStats::default();
        let mut reopen = |_: &str| Err(std::io::Error::other("no roll"));
        let start = thread_cpu_time();
        run(session, rx, pool, &|_| {}, &stats, &mut reopen);
        thread_cpu_time() - start
    });
    tx.send(Message::BurstBegin { ticks: 1 }).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    let (done, summary) = crossbeam_channel::bounded(1);
    tx.send(Message::Close {
        ticks_per_microsecond: None,
        done,
    })
    .unwrap();
    summary.recv().unwrap();
    let busy = writer.join().unwrap();
    let _ = cpu_before;
    // 600 ms idle: the writer must have slept through nearly all of it.
    assert!(
        busy < 0.1,
        "the idle writer used {:.3} s of CPU in 0.6 s",
        busy
    );
}

/// CPU seconds used by the calling thread.
fn thread_cpu_time() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// The `jlive dump` lines of the fib trace, as scripts that grep them read them.
#[test]
fn dump_lines_keep_their_format() {
    let data = fib_trace(jinsight::PLATFORM_LINUX_X86);
    let trace = Trace::decode(&data).unwrap();
    let lines: Vec<String> = trace
        .events
        .iter()
        .map(|(_, e)| trace.describe(e))
        .collect();
    let expected = [
        "1 BEGIN_BURST",
        "1 CLASS_DEFINE class=0",
        "1 CLASS_LOAD class=0 name=java/lang/Object methods=0 fields=0 super=0 interfaces=[]",
        "1 CLASS_DEFINE class=2",
        "1 CLASS_LOAD class=2 name=java/lang/Runnable methods=0 fields=0 super=0 interfaces=[]",
        "1 CLASS_DEFINE class=1",
        "1 CLASS_LOAD class=1 name=java/lang/Thread methods=1 fields=0 super=0 interfaces=[2]",
        "2 THREAD_DEFINE thread=1 name=\"worker-7\"",
        "2 THREAD_START thread=1 (worker-7)",
        "11 CLASS_DEFINE class=3",
        "11 CLASS_LOAD class=3 name=app/Fib methods=2 fields=1 super=0 interfaces=[]",
        "11 METHOD_ENTER thread=1 app/Fib.fib static",
    ];
    assert_eq!(lines[..expected.len()], expected);
    assert_eq!(lines.last().unwrap(), " TRACE_END 0xdead 0xdead");
    // Names not (yet) defined are numbered.
    let unknown = Event::MethodEnter {
        ticks: 5,
        thread: 9,
        class: 77,
        method: 3,
        object: 12,
        line: 0,
    };
    assert_eq!(
        trace.describe(&unknown),
        "5 METHOD_ENTER thread=9 class#77.method#3 object=12"
    );
}
