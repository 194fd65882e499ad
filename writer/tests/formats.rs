//! The resolver and every format's sink, reader and checker, without a JVM: records in, a
//! file out, decoded and checked against the numbers the records imply, in each format.

use jlive_writer::check::check;
use jlive_writer::filter::ClassFilter;
use jlive_writer::format::Format;
use jlive_writer::jinsight::{self, JinsightSink};
use jlive_writer::model::*;
use jlive_writer::read::{self, Trace};
use jlive_writer::record::*;
use jlive_writer::resolve::{Resolver, ResolverConfig};
use jlive_writer::stats::Stats;
use jlive_writer::tptp::{self, TptpSink};
use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

/// A registry of five classes: Object(1), Thread(2), Runnable(3), app/Fib(4) and int[](5).
struct Fixture;

fn method(name: &str, sig: &str) -> MethodDef {
    MethodDef {
        name: name.into(),
        signature: sig.into(),
        access: 9,
        lines: vec![Line { start: 0, line: 10 }, Line { start: 4, line: 12 }],
    }
}

impl Symbols for Fixture {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
        match key {
            100 => Some(MethodRef { class: 4, index: 0 }),
            101 => Some(MethodRef { class: 4, index: 1 }),
            102 => Some(MethodRef { class: 6, index: 0 }),
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
                methods: vec![method("run", "()V")],
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
                    method("main", "([Ljava/lang/String;)V"),
                    method("fib", "(I)I"),
                ],
                fields: vec![FieldDef {
                    name: "calls".into(),
                    signature: "I".into(),
                    access: 8,
                }],
                source_file: Some("Fib.java".into()),
                ..Default::default()
            },
            6 => ClassInfo {
                name: "app/Sum".into(),
                superclass: Some(1),
                methods: vec![MethodDef {
                    access: 0x0108, // static native
                    ..method("update", "(II)I")
                }],
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
            group: "main".into(),
            parent: "system".into(),
            ..ThreadInfo::default()
        })
    }
}

/// A run at 1,000 ticks per microsecond whose ticks count nanoseconds since 1970, so that
/// every format, XML's times included, reads the same ticks back.
fn info() -> TraceInfo {
    TraceInfo {
        ticks_per_microsecond: 1000,
        start_ticks: 1,
        origin_ticks: 0,
        origin_ns: 0,
        pid: 4242,
        host: "test-host".into(),
        options: "file=t.trc,include=app.*;java.*".into(),
        end_ticks: None,
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

/// Runs `batches` through a resolver onto `sink` (one burst) and finishes the file.
fn resolve<S: Sink>(
    sink: S,
    symbols: Arc<dyn Symbols>,
    config: ResolverConfig,
    batches: &[Batch],
) -> S {
    let mut s = Resolver::new(sink, symbols, config);
    s.lifecycle(1, false).unwrap();
    s.begin_burst(1).unwrap();
    for b in batches {
        s.batch(&mut b.clone()).unwrap();
    }
    s.end_burst(1_000_000).unwrap();
    s.lifecycle(1_000_001, true).unwrap();
    s.finish(Some(2500)).unwrap().0
}

/// The file `batches` make in `format` (JinsightLive: on `platform`).
fn write_with(
    format: Format,
    platform: u32,
    symbols: Arc<dyn Symbols>,
    config: ResolverConfig,
    batches: &[Batch],
) -> Vec<u8> {
    let out = Cursor::new(Vec::new());
    let info = info();
    match format {
        Format::Orca => unreachable!("ORCA is not among Format::ALL"),
        Format::Jinsight if jinsight::sink::big_endian(Some(platform)) => {
            let sink = JinsightSink::<_, true>::new(out, &info, Some(platform)).unwrap();
            resolve(sink, symbols, config, batches)
                .into_inner()
                .into_inner()
        }
        Format::Jinsight => {
            let sink = JinsightSink::<_, false>::new(out, &info, Some(platform)).unwrap();
            resolve(sink, symbols, config, batches)
                .into_inner()
                .into_inner()
        }
        Format::Tptp => {
            let sink =
                TptpSink::new(tptp::binary::Encoder::new(out, &info).unwrap(), &info).unwrap();
            resolve(sink, symbols, config, batches)
                .into_inner()
                .into_inner()
                .into_inner()
        }
        Format::TptpXml => {
            let sink = TptpSink::new(tptp::xml::Encoder::new(out, &info).unwrap(), &info).unwrap();
            resolve(sink, symbols, config, batches)
                .into_inner()
                .into_inner()
                .into_inner()
        }
    }
}

fn write(format: Format, config: ResolverConfig, batches: &[Batch]) -> Vec<u8> {
    write_with(
        format,
        jinsight::PLATFORM_LINUX_X86,
        Arc::new(Fixture),
        config,
        batches,
    )
}

/// fib(10) on one thread that starts in the burst, after a stray exit of a frame entered
/// before it; an allocation of an app/Fib and of an int[17]; a collection freeing the first.
fn fib_batches() -> Vec<Batch> {
    let mut records = vec![
        Record::new(RecordKind::ThreadStart, 2, 0, 0, 0),
        exit(3, 100),
    ];
    let mut t = 10;
    fib_records(10, &mut t, &mut records);
    records.extend([
        Record::new(RecordKind::ObjectAlloc, t + 1, 4, 1, NOT_ARRAY),
        Record::new(RecordKind::ObjectAlloc, t + 2, 5, 2, 17),
        Record::new(RecordKind::GcStart, t + 3, 0, 0, 0),
        Record::new(RecordKind::ObjectFree, t + 4, 0, 1, 0),
        Record::new(RecordKind::GcFinish, t + 5, 0, 0, 0),
    ]);
    vec![batch(7, records)]
}

fn fib_trace(format: Format) -> Vec<u8> {
    write(format, ResolverConfig::default(), &fib_batches())
}

fn decode(data: &[u8]) -> Trace {
    Trace::decode(data).unwrap_or_else(|e| panic!("decode: {}", e))
}

/// What every format keeps of an event: the IDs, names, depths and tickets, not what only
/// some formats carry (JinsightLive's overhead and fields, TPTP's line numbers and groups).
fn essence(e: &Event) -> Option<String> {
    Some(match e {
        Event::VmInit { .. } | Event::VmDeath { .. } => return None,
        Event::MethodLeave(l) => format!("{:?}", Leave { overhead: 0, ..*l }),
        Event::ClassDefine(c) => {
            let methods: Vec<(&str, &str)> = c
                .methods
                .iter()
                .map(|m| (m.name.as_str(), m.signature.as_str()))
                .collect();
            format!(
                "class {} {} {:?} {:?} {}",
                c.id, c.name, c.interfaces, methods, c.ticks
            )
        }
        Event::ThreadDefine(t) => format!("thread {} {} {}", t.id, t.name, t.ticks),
        e => format!("{:?}", e),
    })
}

fn essences(trace: &Trace) -> Vec<String> {
    trace
        .events
        .iter()
        .filter_map(|(_, e)| essence(e))
        .collect()
}

/// The same without times.
fn untimed(trace: &Trace) -> Vec<String> {
    let zero = |e: &Event| {
        let mut e = e.clone();
        *e.ticks_mut() = 0;
        e
    };
    trace
        .events
        .iter()
        .filter_map(|(_, e)| essence(&zero(e)))
        .collect()
}

#[test]
fn every_format_decodes_fib_to_the_same_events_and_figures() {
    let jinsight = decode(&fib_trace(Format::Jinsight));
    let reference = essences(&jinsight);
    let stats = |t: &Trace| {
        let s = Stats::of(t);
        let mut methods: Vec<_> = s
            .methods
            .iter()
            .map(|m| (m.name.clone(), m.calls, m.self_ticks))
            .collect();
        methods.sort();
        (s.by_type, s.threads, methods, s.bursts)
    };
    for format in Format::ALL {
        let data = fib_trace(format);
        let summary = check(&data).unwrap_or_else(|e| panic!("{:?}: {}", format, e));
        assert_eq!((summary.format, summary.bursts), (Some(format), 1));
        let trace = decode(&data);
        assert_eq!(trace.format, format);
        assert_eq!(essences(&trace), reference, "{:?}", format);
        let s = Stats::of(&trace);
        // fib(10) makes 177 calls; the stray exit of a frame entered before the burst is not
        // written.
        assert_eq!(s.by_type["METHOD_ENTER"], 177, "{:?}", format);
        assert_eq!(s.by_type["METHOD_LEAVE"], 177);
        assert_eq!((s.by_type["ALLOC"], s.by_type["FREE"]), (2, 1));
        assert_eq!((s.by_type["GC_START"], s.by_type["GC_FINISH"]), (1, 1));
        assert_eq!(trace.class_name(0), "java/lang/Object");
        assert_eq!(trace.class_name(1), "java/lang/Thread");
        let fib = s.methods.iter().find(|m| m.name == "app/Fib.fib").unwrap();
        assert_eq!(fib.calls, 177);
        let worker = trace.threads_named("worker-7");
        assert_eq!(worker.len(), 1);
        let started = trace.events.iter().filter(
            |(_, e)| matches!(e, Event::ThreadStart { thread, .. } if *thread == worker[0]),
        );
        assert_eq!(started.count(), 1, "{:?}", format);
        assert_eq!(stats(&trace), stats(&jinsight), "{:?}", format);
        // jlive stats reads the file one event at a time, to the same figures.
        let (streamed, cut_at) = Stats::of_file(&data).unwrap();
        assert_eq!(cut_at, None);
        assert_eq!(streamed.report(50), s.report(50));
        let overheads: Vec<u64> = trace
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::MethodLeave(l) => Some(l.overhead),
                _ => None,
            })
            .collect();
        // The entry's and the exit's agent overhead, where the format has room for it.
        let expected = if format == Format::Jinsight { 7 } else { 0 };
        assert!(overheads.iter().all(|&o| o == expected), "{:?}", format);
    }
    // The header's tick rate is patched at close.
    assert_eq!(jinsight.info.ticks_per_microsecond, 2500);
}

#[test]
fn tptp_keeps_source_files_line_ranges_thread_groups_and_vm_events() {
    for format in [Format::Tptp, Format::TptpXml] {
        let trace = decode(&fib_trace(format));
        let fib = trace
            .classes
            .values()
            .find(|c| c.name == "app/Fib")
            .unwrap();
        assert_eq!(fib.source_file, "Fib.java");
        assert_eq!(fib.methods[1].line_range(), (10, 12));
        assert_eq!(
            fib.methods[1].access, 0x0008,
            "static, the one flag TPTP keeps of 9"
        );
        let t = &trace.threads[&trace.threads_named("worker-7")[0]];
        assert_eq!((t.group.as_str(), t.parent.as_str()), ("main", "system"));
        let vm: Vec<&str> = trace
            .events
            .iter()
            .filter(|(_, e)| e.is_lifecycle())
            .map(|(_, e)| e.name())
            .collect();
        assert_eq!(vm, ["VM_INIT", "VM_DEATH"]);
        assert_eq!(
            (trace.info.pid, trace.info.host.as_str()),
            (4242, "test-host")
        );
        assert_eq!(trace.info.options, info().options);
        assert_eq!(trace.info.end_ticks, Some(1_000_001));
    }
}

/// Writes `data`, a trace of any format, again in `format` (as `jlive convert` does).
fn convert(data: &[u8], format: Format) -> Vec<u8> {
    let mut events = read::open(data).unwrap();
    let info = events.info().clone();
    let out = Cursor::new(Vec::new());
    match format {
        Format::Orca => unreachable!("ORCA is not among Format::ALL"),
        Format::Jinsight => {
            let mut sink = JinsightSink::<_, false>::new(out, &info, None).unwrap();
            read::copy(&mut *events, &mut sink).unwrap();
            sink.into_inner().into_inner()
        }
        Format::Tptp => {
            let mut sink =
                TptpSink::new(tptp::binary::Encoder::new(out, &info).unwrap(), &info).unwrap();
            read::copy(&mut *events, &mut sink).unwrap();
            sink.into_inner().into_inner().into_inner()
        }
        Format::TptpXml => {
            let mut sink =
                TptpSink::new(tptp::xml::Encoder::new(out, &info).unwrap(), &info).unwrap();
            read::copy(&mut *events, &mut sink).unwrap();
            sink.into_inner().into_inner().into_inner()
        }
    }
}

#[test]
fn tptp_binary_converted_to_xml_is_the_xml_written_for_the_same_events_and_back() {
    let binary = fib_trace(Format::Tptp);
    let xml = fib_trace(Format::TptpXml);
    let converted = convert(&binary, Format::TptpXml);
    assert!(
        converted == xml,
        "converted:\n{}\nwritten:\n{}",
        String::from_utf8_lossy(&converted),
        String::from_utf8_lossy(&xml)
    );
    // And back: XML to binary to XML gives the XML again (the binary counts nanoseconds).
    let again = convert(&convert(&xml, Format::Tptp), Format::TptpXml);
    assert!(again == xml, "{}", String::from_utf8_lossy(&again));
    // JinsightLive to both: the same events as the TPTP files written directly (the
    // JinsightLive header's rate, patched at close, turns ticks into other times in XML).
    let jinsight = fib_trace(Format::Jinsight);
    for format in [Format::Tptp, Format::TptpXml] {
        let from = convert(&jinsight, format);
        check(&from).unwrap_or_else(|e| panic!("{:?}: {}", format, e));
        assert_eq!(
            untimed(&decode(&from)),
            untimed(&decode(&fib_trace(format)))
        );
    }
    let binary = decode(&convert(&jinsight, Format::Tptp));
    assert_eq!(
        essences(&binary),
        essences(&decode(&fib_trace(Format::Tptp)))
    );
}

#[test]
fn big_endian_platform_writes_big_endian_events() {
    let batches = fib_batches();
    let config = ResolverConfig::default;
    let le = write_with(
        Format::Jinsight,
        jinsight::PLATFORM_LINUX_X86,
        Arc::new(Fixture),
        config(),
        &batches,
    );
    let be = write_with(
        Format::Jinsight,
        jinsight::PLATFORM_LINUX_390,
        Arc::new(Fixture),
        config(),
        &batches,
    );
    check(&be).expect("big-endian trace checks");
    // BEGIN_BURST at offset 45 carries ticks = 1 in the platform's byte order.
    assert_eq!(le[45], jinsight::BEGIN_BURST);
    assert_eq!(&le[46..54], &1u64.to_le_bytes());
    assert_eq!(&be[46..54], &1u64.to_be_bytes());
    // The header stays little-endian.
    assert_eq!(&be[5..9], &55u32.to_le_bytes());
    let strip = |t: &Trace| t.events.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
    assert_eq!(strip(&decode(&le)), strip(&decode(&be)));
}

#[test]
fn classes_are_defined_after_their_superclass_and_interfaces() {
    for format in Format::ALL {
        let trace = decode(&fib_trace(format));
        let order: Vec<&str> = trace
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::ClassDefine(c) => Some(c.name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            order,
            [
                "java/lang/Object",
                "java/lang/Runnable",
                "java/lang/Thread",
                "app/Fib",
                "[I"
            ],
            "{:?}",
            format
        );
        assert_eq!(trace.classes[&0].superclass, None, "{:?}", format);
        assert_eq!(trace.classes[&1].interfaces, [2], "{:?}", format);
    }
}

#[test]
fn an_excluded_class_leaves_no_entries_and_no_leaves() {
    let mut records = Vec::new();
    let mut t = 10;
    fib_records(5, &mut t, &mut records);
    let config = ResolverConfig {
        filter: ClassFilter::new(&[], &["app.*".into()]),
        ..Default::default()
    };
    for format in Format::ALL {
        let data = write(format, config.clone(), &[batch(1, records.clone())]);
        check(&data).unwrap();
        let stats = Stats::of(&decode(&data));
        assert_eq!(stats.calls(), 0, "{:?}", format);
        assert_eq!(stats.by_type.get("METHOD_LEAVE"), None);
    }
}

#[test]
fn an_allocation_defines_its_object_with_its_class_or_its_array() {
    for format in Format::ALL {
        let trace = decode(&fib_trace(format));
        let allocs: Vec<(u32, String, Option<ArrayDef>)> = trace
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::Alloc { thread, object } => {
                    assert_eq!(trace.thread_name(*thread), "worker-7");
                    Some((object.object, trace.class_name(object.class), object.array))
                }
                _ => None,
            })
            .collect();
        let int17 = ArrayDef {
            length: 17,
            element: Element::Primitive(b'I'),
        };
        assert_eq!(
            allocs,
            [
                (1, "app/Fib".to_string(), None),
                (2, "[I".to_string(), Some(int17))
            ],
            "{:?}",
            format
        );
    }
    // In JinsightLive: OBJECT_DEFINED and OBJECT_CREATED, ARRAY_DEFINED and ARRAY_CREATED.
    let data = fib_trace(Format::Jinsight);
    let mut d = jinsight::Decoder::new(&data).unwrap();
    let mut by: HashMap<&str, u32> = HashMap::new();
    while let Some((_, e)) = d.next_event().unwrap() {
        *by.entry(e.name()).or_default() += 1;
        if let jinsight::Event::ArrayDefined {
            array_type, size, ..
        } = e
        {
            assert_eq!((array_type, size), (1, 17));
        }
    }
    for name in [
        "OBJECT_DEFINED",
        "OBJECT_CREATED",
        "ARRAY_DEFINED",
        "ARRAY_CREATED",
        "OBJECT_RECLAIMED",
    ] {
        assert_eq!(by[name], 1, "{}", name);
    }
}

/// The position of the first method entry of a trace (a byte offset, or a line).
fn first_entry(data: &[u8]) -> usize {
    decode(data)
        .events
        .iter()
        .find(|(_, e)| matches!(e, Event::MethodEnter(_)))
        .unwrap()
        .0
}

#[test]
fn check_rejects_truncated_flipped_and_empty_files_of_every_format() {
    for format in Format::ALL {
        let data = fib_trace(format);
        let empty = check(&[]).unwrap_err();
        assert_eq!((empty.offset, empty.line), (0, None));
        // Any file cut short lacks its end (XML's last newline is not needed).
        let last = data.len() - if format.is_text() { 2 } else { 1 };
        for len in [1, 5, 11, 12, 30, 45, 46, 100, data.len() / 2, last] {
            assert!(check(&data[..len]).is_err(), "{:?} cut at {}", format, len);
        }
        let at = first_entry(&data);
        match format {
            Format::Orca => unreachable!("ORCA is not among Format::ALL"),
            Format::Jinsight => {
                // An unknown code where the first METHOD_ENTER was.
                let mut bad = data.clone();
                bad[at] = 0xEE;
                assert_eq!(check(&bad).unwrap_err().offset, at);
                // An entry turned into a leave: unbalanced.
                bad[at] = jinsight::METHOD_LEAVE;
                assert!(check(&bad).is_err());
            }
            Format::Tptp => {
                let mut bad = data.clone();
                bad[at..at + 2].copy_from_slice(&[0xFF, 0xFF]);
                let e = check(&bad).unwrap_err();
                assert_eq!(e.offset, at, "{}", e);
                assert!(e.message.contains("unknown message id"), "{}", e);
                // An entry turned into an exit: the message's length no longer fits.
                bad[at..at + 2].copy_from_slice(&tptp::METHOD_EXIT.id.to_le_bytes());
                assert_eq!(check(&bad).unwrap_err().offset, at);
                // A depth off by one.
                let mut bad = data.clone();
                bad[at + 74] += 1;
                let e = check(&bad).unwrap_err();
                assert!(e.message.contains("depth"), "{}", e);
            }
            Format::TptpXml => {
                let text = String::from_utf8(data.clone()).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                // Lines count from 1: the entry's line is lines[at - 1].
                let mut bad = lines.clone();
                let renamed = bad[at - 1].replace("<methodEntry", "<methodEntree");
                bad[at - 1] = &renamed;
                let e = check(bad.join("\n").as_bytes()).unwrap_err();
                assert_eq!(e.line, Some(at), "{}", e);
                assert_eq!(e.position(), format!("line {}", at));
                let mut bad = lines.clone();
                let deeper = bad[at - 1].replace("stackDepth=\"1\"", "stackDepth=\"2\"");
                bad[at - 1] = &deeper;
                assert_eq!(check(bad.join("\n").as_bytes()).unwrap_err().line, Some(at));
                // A burst of an agent no agentCreate defined.
                let start = lines
                    .iter()
                    .position(|l| l.starts_with("<traceStart"))
                    .unwrap();
                let mut bad = lines.clone();
                let stranger = bad[start].replacen("agentIdRef=\"", "agentIdRef=\"0", 1);
                bad[start] = &stranger;
                let e = check(bad.join("\n").as_bytes()).unwrap_err();
                assert_eq!(e.line, Some(start + 1), "{}", e);
                assert!(e.message.contains("agentIdRef"), "{}", e);
                let without_root_end = lines[..lines.len() - 1].join("\n");
                let e = check(without_root_end.as_bytes()).unwrap_err();
                assert!(e.message.contains("</TRACE>"), "{}", e);
            }
        }
    }
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

/// Every event with its position, or the error that ends them.
fn events_of<E>(
    mut next: impl FnMut() -> Result<Option<(usize, E)>, read::DecodeError>,
) -> (Vec<(usize, E)>, Option<read::DecodeError>) {
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
/// inside an event, with a bad event code, and with its header cut short. Every format's
/// reader gives the same events when fed a few bytes per read.
#[test]
fn readers_read_a_few_bytes_at_a_time_what_they_read_whole() {
    let data = fib_trace(Format::Jinsight);
    let last_enter = decode(&data)
        .events
        .iter()
        .rfind(|(_, e)| matches!(e, Event::MethodEnter(_)))
        .unwrap()
        .0;
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
    for format in Format::ALL {
        let data = fib_trace(format);
        let whole = decode(&data).events;
        let mut trickled = read::open(Trickle {
            data: &data,
            step: 1,
        })
        .unwrap();
        let (events, error) = events_of(|| trickled.next_event());
        assert_eq!((events, error), (whole, None), "{:?}", format);
    }
}

/// A file that ends inside an event (a JVM killed while its writer wrote): `check` names that
/// event, and `Trace::decode` gives every event before it.
#[test]
fn a_file_cut_inside_an_event_decodes_up_to_that_event() {
    for format in Format::ALL {
        let data = fib_trace(format);
        let whole = decode(&data);
        assert_eq!(whole.cut_at, None);
        let last_enter = whole
            .events
            .iter()
            .rfind(|(_, e)| matches!(e, Event::MethodEnter(_)))
            .unwrap()
            .0;
        // Its byte offset, and how many bytes it takes at least.
        let offset = match format {
            Format::TptpXml => {
                let text = std::str::from_utf8(&data).unwrap();
                text.split_inclusive('\n')
                    .take(last_enter - 1)
                    .map(str::len)
                    .sum()
            }
            _ => last_enter,
        };
        for len in [offset + 1, offset + 7] {
            let cut = &data[..len];
            let err = check(cut).unwrap_err();
            assert!(err.cut_short, "{:?}: {:?}", format, err);
            assert_eq!(err.line.unwrap_or(err.offset), last_enter, "{:?}", format);
            let trace = decode(cut);
            assert_eq!(trace.cut_at, Some(last_enter), "{:?}", format);
            // jlive stats reads it one event at a time, to the same figures.
            let (streamed, cut_at) = Stats::of_file(cut).unwrap();
            assert_eq!(cut_at, Some(last_enter));
            assert_eq!(streamed.report(50), Stats::of(&trace).report(50));
            let before = whole
                .events
                .iter()
                .filter(|(at, _)| *at < last_enter)
                .count();
            assert_eq!(trace.events.len(), before, "{:?}", format);
        }
        // At an event boundary nothing is cut: only the end is missing.
        let trace = decode(&data[..offset]);
        assert_eq!(trace.cut_at, None, "{:?}", format);
        assert!(!check(&data[..offset]).unwrap_err().cut_short);
    }
}

#[test]
fn readers_and_checkers_never_panic_on_garbage() {
    for format in Format::ALL {
        let data = fib_trace(format);
        let mut seed = 0x1234_5678_u64;
        let mut rejected = 0;
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
            if let Err(e) = check(&bad[..cut]) {
                rejected += 1;
                assert!(
                    e.line.unwrap_or(e.offset) <= bad.len(),
                    "{:?}: {}",
                    format,
                    e
                );
            }
            let _ = Trace::decode(&bad);
        }
        // Nearly every cut file lacks its end.
        assert!(
            rejected > 2900,
            "{:?}: {} of 3000 rejected",
            format,
            rejected
        );
    }
}

/// A registry in which app/Lazy (6) has no methods until it is prepared, which happens when
/// its method run (key 200) is first looked up; [Lapp/Lazy; is 7.
struct Evolving {
    prepared: std::sync::atomic::AtomicBool,
}

impl Symbols for Evolving {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
        self.prepared
            .store(true, std::sync::atomic::Ordering::Relaxed);
        (key == 200).then_some(MethodRef { class: 6, index: 1 })
    }
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
        let prepared = self.prepared.load(std::sync::atomic::Ordering::Relaxed);
        match key {
            6 => Some(Arc::new(ClassInfo {
                name: "app/Lazy".into(),
                superclass: Some(1),
                methods: if prepared {
                    vec![method("<init>", "()V"), method("run", "()V")]
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
    for format in Format::ALL {
        let symbols = Arc::new(Evolving {
            prepared: false.into(),
        });
        // An array of app/Lazy allocated before the class is prepared, then its run() called.
        let batches = [
            batch(1, vec![Record::new(RecordKind::ObjectAlloc, 5, 7, 1, 3)]),
            batch(1, vec![entry(6, 200), exit(7, 200)]),
        ];
        let data = write_with(
            format,
            jinsight::PLATFORM_LINUX_X86,
            symbols,
            ResolverConfig::default(),
            &batches,
        );
        check(&data).unwrap_or_else(|e| {
            panic!(
                "{:?}: the entry refers to a complete definition: {}",
                format, e
            )
        });
        let trace = decode(&data);
        let defined: Vec<(u32, usize)> = trace
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::ClassDefine(c) if c.name == "app/Lazy" => Some((c.id, c.methods.len())),
                _ => None,
            })
            .collect();
        assert_eq!(
            defined.len(),
            2,
            "{:?}: defined without methods, then again with them: {:?}",
            format,
            defined
        );
        assert_eq!(defined[1].1, 2);
        let run = Stats::of(&trace)
            .methods
            .into_iter()
            .find(|m| m.name == "app/Lazy.run");
        assert_eq!(run.map(|m| m.calls), Some(1), "{:?}", format);
    }
}

#[test]
fn an_idle_writer_sleeps() {
    use jlive_writer::writer::{run, WriterStats};
    let sink = JinsightSink::<_, false>::new(Cursor::new(Vec::new()), &info(), None).unwrap();
    let session = Resolver::new(sink, Arc::new(Fixture), ResolverConfig::default());
    let (tx, rx) = crossbeam_channel::bounded(4);
    let (pool, _pool_rx) = crossbeam_channel::bounded(4);
    let writer = std::thread::spawn(move || {
        let stats = WriterStats::default();
        let mut reopen = |_: &str| Err(std::io::Error::other("no roll"));
        let start = thread_cpu_time();
        run(session, rx, pool, &|_| {}, &|| {}, &stats, &mut reopen);
        thread_cpu_time() - start
    });
    tx.send(Message::BurstBegin {
        ticks: 1,
        scope: None,
    })
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    let (done, summary) = crossbeam_channel::bounded(1);
    tx.send(Message::Close {
        ticks_per_microsecond: None,
        done,
    })
    .unwrap();
    summary.recv().unwrap();
    let busy = writer.join().unwrap();
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

/// `clock=stck`: ticks become z/Architecture STORE CLOCK values, at 4096 per microsecond,
/// and the header says so whatever rate was measured.
#[test]
fn store_clock_ticks_count_from_1900_at_4096_per_microsecond() {
    let origin_ns = 1_795_564_800_000_000_000; // 2026-11-25T00:00:00Z
    let stck = jlive_writer::stck::Stck::new(0, origin_ns, 1_000_000_000);
    let info = stck.info(&TraceInfo {
        origin_ns,
        ..info()
    });
    let sink = JinsightSink::<_, false>::new(Cursor::new(Vec::new()), &info, None).unwrap();
    let config = ResolverConfig {
        stck: Some(stck),
        ..Default::default()
    };
    let data = resolve(sink, Arc::new(Fixture), config, &fib_batches())
        .into_inner()
        .into_inner();
    check(&data).unwrap();
    let trace = decode(&data);
    assert_eq!(
        trace.info.ticks_per_microsecond, 4096,
        "not patched with the measured rate"
    );
    // The burst begins at tick 1: one nanosecond after the origin.
    let begin = trace.events[0].1.ticks();
    assert_eq!(begin, jlive_writer::stck::of_unix_ns(origin_ns + 1));
    assert_eq!(
        jlive_writer::stck::unix_ns(begin) / 1_000_000_000,
        origin_ns / 1_000_000_000
    );
}

/// The `jlive dump` lines of the fib trace, as scripts that grep them read them.
#[test]
fn dump_lines_keep_their_format() {
    let trace = decode(&fib_trace(Format::Jinsight));
    let lines: Vec<String> = trace
        .events
        .iter()
        .map(|(_, e)| trace.describe(e))
        .collect();
    let expected = [
        "1 BURST_BEGIN burst=1",
        "1 CLASS_DEFINE class=0 name=java/lang/Object methods=0 fields=0 super=- interfaces=[]",
        "1 CLASS_DEFINE class=2 name=java/lang/Runnable methods=0 fields=0 super=0 interfaces=[]",
        "1 CLASS_DEFINE class=1 name=java/lang/Thread methods=1 fields=0 super=0 interfaces=[2]",
        "2 THREAD_DEFINE thread=1 name=\"worker-7\"",
        "2 THREAD_START thread=1 (worker-7)",
        "11 CLASS_DEFINE class=3 name=app/Fib methods=2 fields=1 super=0 interfaces=[]",
        "11 METHOD_ENTER thread=1 app/Fib.fib depth=1 static",
        "12 METHOD_ENTER thread=1 app/Fib.fib depth=2 static",
    ];
    assert_eq!(lines[..expected.len()], expected);
    assert_eq!(lines.last().unwrap(), "1000000 BURST_END burst=1");
    // Names not (yet) defined are numbered.
    let unknown = Event::MethodEnter(Enter {
        ticks: 5,
        thread: 9,
        method: MethodId {
            class: 77,
            index: 3,
        },
        object: 12,
        depth: 4,
        ticket: 8,
    });
    assert_eq!(
        trace.describe(&unknown),
        "5 METHOD_ENTER thread=9 class#77.method#3 depth=4 object=12"
    );
}

/// The JinsightLive bytes of the fib records are those the writer wrote before the model
/// existed (writer/src/session.rs of aeb5782, run on the same records: 8,327 bytes of this
/// FNV-1a hash). Any change to a byte of JinsightLive output shows here.
#[test]
fn jinsight_bytes_are_those_of_the_writer_before_the_model() {
    let data = fib_trace(Format::Jinsight);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in &data {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    assert_eq!((data.len(), hash), (8327, 0x7dfd_d50f_b8e3_1ebb));
}

/// A file cut short converts up to its cut: the burst it leaves open is ended there, and the
/// result is a trace that checks, in every format from every format.
#[test]
fn a_file_cut_short_converts_to_a_trace_that_checks() {
    for from in Format::ALL {
        let data = fib_trace(from);
        let cut = &data[..data.len() * 2 / 3];
        for to in Format::ALL {
            let converted = convert(cut, to);
            check(&converted).unwrap_or_else(|e| panic!("{:?} to {:?}: {}", from, to, e));
            let stats = Stats::of(&decode(&converted));
            assert_eq!(
                stats.by_type.get("BURST_END"),
                Some(&1),
                "{:?} to {:?}",
                from,
                to
            );
        }
    }
}

/// The writer before the model put a thread's definition between an object's and its
/// creation when the allocation was the thread's first event: such a file still checks, and
/// reads as the thread and then the allocation.
#[test]
fn an_old_files_thread_defined_inside_an_allocation_reads_as_one_allocation() {
    use jinsight::Event as J;
    let header = jinsight::sink::header(&info(), None);
    let mut e = jinsight::Encoder::new(Cursor::new(Vec::new()), &header).unwrap();
    let class = |id: u16, name: &str, superclass: u16| {
        let load = jinsight::ClassLoad {
            ticks: 1,
            class: id,
            name: name.into(),
            superclass,
            ..Default::default()
        };
        [
            J::ClassDefine {
                ticks: 1,
                class: id,
                class_object: 0,
            },
            J::ClassLoad(Box::new(load)),
        ]
    };
    let mut events = vec![J::BeginBurst { ticks: 1 }];
    events.extend(class(0, "java/lang/Object", 0));
    events.extend(class(1, "java/lang/Thread", 0));
    events.extend(class(2, "java/lang/String", 0));
    events.extend([
        J::ObjectDefined {
            ticks: 2,
            object: 1,
            class: 2,
        },
        J::ThreadDefine {
            ticks: 2,
            thread: 1,
            object: 0,
            class: 1,
            name: "main".into(),
        },
        J::ObjectCreated {
            ticks: 2,
            object: 1,
            class: 2,
            thread: 1,
        },
        J::EndBurst { ticks: 3 },
    ]);
    for event in &events {
        e.write(event).unwrap();
    }
    e.finish(1, 3, None).unwrap();
    let data = e.into_inner().into_inner();
    check(&data).unwrap();
    let names: Vec<&str> = decode(&data).events.iter().map(|(_, e)| e.name()).collect();
    assert_eq!(
        names[4..],
        ["THREAD_DEFINE", "ALLOC", "BURST_END"],
        "{:?}",
        names
    );
}

/// What a file's bytes say cannot make a reader allocate what the file does not hold: an
/// offset to data of 4 GiB, a message of 4 GiB, a class ID of 4 billion in a file converted.
#[test]
fn lengths_and_ids_from_a_file_are_bounded() {
    let data = fib_trace(Format::Tptp);
    let mut far = data.clone();
    far[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = check(&far).unwrap_err();
    assert_eq!(e.offset, 8, "{}", e);
    // The first message after the system messages (node), said to be 4 GiB long.
    let first = 12 + 6 + 6 + 6 + 8 + 6 + 16;
    let mut long = data.clone();
    long[first + 2..first + 6].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = check(&long).unwrap_err();
    assert_eq!(e.offset, first, "{}", e);
    // A class of ID 4,000,000,000 in XML: the model's checker takes it, the writers refuse it.
    let xml = String::from_utf8(fib_trace(Format::TptpXml)).unwrap();
    let huge = xml
        .replace("classId=\"3\"", "classId=\"4000000000\"")
        .replace("classIdRef=\"3\"", "classIdRef=\"4000000000\"");
    check(huge.as_bytes()).unwrap();
    for to in Format::ALL {
        let mut events = read::open(huge.as_bytes()).unwrap();
        let info = events.info().clone();
        let out = Cursor::new(Vec::new());
        let result = match to {
            Format::Orca => unreachable!("ORCA is not among Format::ALL"),
            Format::Jinsight => {
                let mut sink = JinsightSink::<_, false>::new(out, &info, None).unwrap();
                read::copy(&mut *events, &mut sink).map(|_| ())
            }
            Format::Tptp => {
                let enc = tptp::binary::Encoder::new(out, &info).unwrap();
                read::copy(&mut *events, &mut TptpSink::new(enc, &info).unwrap()).map(|_| ())
            }
            Format::TptpXml => {
                let enc = tptp::xml::Encoder::new(out, &info).unwrap();
                read::copy(&mut *events, &mut TptpSink::new(enc, &info).unwrap()).map(|_| ())
            }
        };
        let e = result.unwrap_err().to_string();
        assert!(e.contains("4000000000"), "{:?}: {}", to, e);
    }
}

/// A heap dump outside any burst: its objects defined first, those the file defined and the
/// walk did not reach freed (a population), references kept only between defined objects,
/// static references by class, roots, and the generation mark; JinsightLive writes them as
/// OBJECT_REFS, ARRAY_REFS, STATIC_ROOT and root events, which read back to the same parts
/// and pass `jlive check`.
#[test]
fn a_heap_dump_reads_back_part_by_part_and_frees_what_is_gone() {
    let mut s = Resolver::new(
        JinsightSink::<_, false>::new(Cursor::new(Vec::new()), &info(), None).unwrap(),
        Arc::new(Fixture),
        ResolverConfig::default(),
    );
    s.begin_burst(1).unwrap();
    s.batch(&mut batch(
        7,
        vec![Record::new(RecordKind::ObjectAlloc, 2, 4, 9, NOT_ARRAY)],
    ))
    .unwrap();
    s.end_burst(3).unwrap();
    let dump = HeapDump {
        ticks: 10,
        // Object 9 is gone; 1 and 2 are app/Fib objects, 3 an int[4], 4 of an unknown class.
        objects: vec![
            (1, 4, NOT_ARRAY),
            (2, 4, NOT_ARRAY),
            (3, 5, 4),
            (4, 77, NOT_ARRAY),
        ],
        population: true,
        below: 100,
        refs: vec![(2, 1), (1, 3), (2, 3), (1, 4)],
        statics: vec![(4, 2)],
        roots: vec![
            (RootKind::JavaStack, 2, None),
            (RootKind::JniGlobal, 1, None),
        ],
        end: DumpEnd::Generation,
    };
    s.heap(&dump).unwrap();
    let data = s.finish(None).unwrap().0.into_inner().into_inner();
    check(&data[..]).unwrap_or_else(|e| panic!("check: {}", e));
    let trace = decode(&data);
    let parts: Vec<String> = trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Heap { part, .. } => Some(format!("{:?}", part)),
            Event::Free { object, .. } => Some(format!("free {}", object)),
            Event::ObjectDefine(o) => Some(format!("define {}", o.object)),
            _ => None,
        })
        .collect();
    assert_eq!(
        parts,
        [
            "define 1",
            "define 2",
            "define 3",
            "free 9",
            "Refs { object: 1, array: false, to: [3] }",
            "Refs { object: 2, array: false, to: [1, 3] }",
            "Statics { class: 3, to: [2] }",
            // The stack root's thread is not known: an unknown root.
            "Root { kind: Unknown, thread: None, object: 2 }",
            "Root { kind: JniGlobal, thread: None, object: 1 }",
            "Generation",
        ]
    );
}

/// The visualizer takes a USER_EVENT whose text begins with `r` for a burst's end and one
/// with `p` for a burst's beginning: such texts (and an empty one) get a leading space.
#[test]
fn user_texts_the_visualizer_would_misread_get_a_leading_space() {
    let mut s = Resolver::new(
        JinsightSink::<_, false>::new(Cursor::new(Vec::new()), &info(), None).unwrap(),
        Arc::new(Fixture),
        ResolverConfig::default(),
    );
    s.begin_burst(1).unwrap();
    for text in ["ready", "paused", "", "checkout"] {
        s.user_event(2, text).unwrap();
    }
    s.end_burst(3).unwrap();
    let data = s.finish(None).unwrap().0.into_inner().into_inner();
    let texts: Vec<String> = decode(&data)
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::UserEvent { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, [" ready", " paused", " ", "checkout"]);
}

/// A native method's calls are WIDE_NATIVE_METHOD_ENTER and NATIVE_METHOD_LEAVE in
/// JinsightLive (others' stay 91 and 31), and read back as calls like any other.
#[test]
fn native_methods_calls_are_jinsightlives_native_events_and_read_back_as_calls() {
    let records = vec![
        entry(10, 100),
        entry(11, 102),
        exit(12, 102),
        entry(13, 102),
        exit(14, 102),
        exit(15, 100),
    ];
    let data = write(
        Format::Jinsight,
        ResolverConfig::default(),
        &[batch(7, records)],
    );
    let mut d = jinsight::Decoder::new(&data).unwrap();
    let mut by: HashMap<&str, u32> = HashMap::new();
    while let Some((_, e)) = d.next_event().unwrap() {
        *by.entry(e.name()).or_default() += 1;
    }
    assert_eq!(
        (by["NATIVE_METHOD_ENTER"], by["NATIVE_METHOD_LEAVE"]),
        (2, 2)
    );
    assert_eq!((by["METHOD_ENTER"], by["METHOD_LEAVE"]), (1, 1));
    check(&data[..]).unwrap_or_else(|e| panic!("check: {}", e));
    let trace = decode(&data);
    let calls: Vec<String> = trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::MethodEnter(m) => Some(format!("> {} {}", trace.method_name(m.method), m.depth)),
            Event::MethodLeave(l) => Some(format!("< {} {}", trace.method_name(l.method), l.depth)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            "> app/Fib.main 1",
            "> app/Sum.update 2",
            "< app/Sum.update 2",
            "> app/Sum.update 2",
            "< app/Sum.update 2",
            "< app/Fib.main 1"
        ]
    );
}

/// Every kind of values, with every kind of value, reads back from JinsightLive as written:
/// an object the file has not defined is an unknown one; the events pass `jlive check`.
#[test]
fn values_read_back_as_written_and_undefined_objects_are_unknown() {
    let all = vec![
        Value::Byte(-3),
        Value::Char(0x263A),
        Value::Short(-300),
        Value::Int(-70_000),
        Value::Long(1 << 40),
        Value::Float(1.5f32.to_bits()),
        Value::Double((-2.25f64).to_bits()),
        Value::Boolean(true),
        Value::Object(5),
        Value::Object(NO_OBJECT),
        Value::Object(99),
        Value::Unknown,
        Value::Text("héllo ☺".into()),
    ];
    let kinds = [
        ValuesKind::Arguments,
        ValuesKind::FieldsAtEnter,
        ValuesKind::FieldsAtExit,
        ValuesKind::Return,
    ];
    let infos: Vec<ValuesInfo> = kinds
        .iter()
        .map(|&kind| ValuesInfo {
            method: 101,
            object: NO_OBJECT,
            kind,
            values: if kind == ValuesKind::Return {
                vec![Value::Text("r".into())]
            } else {
                all.clone()
            },
        })
        .collect();
    let mut s = Resolver::new(
        JinsightSink::<_, false>::new(Cursor::new(Vec::new()), &info(), None).unwrap(),
        Arc::new(Fixture),
        ResolverConfig::default(),
    );
    let records = vec![
        Record::new(RecordKind::ObjectAlloc, 2, 4, 5, NOT_ARRAY),
        entry(3, 101),
    ];
    let mut b = batch(7, records);
    for info in infos {
        b.push_payload(RecordKind::Values, 4, Payload::Values(Box::new(info)));
    }
    b.push(&exit(5, 101));
    s.begin_burst(1).unwrap();
    s.batch(&mut b).unwrap();
    s.end_burst(6).unwrap();
    let data = s.finish(None).unwrap().0.into_inner().into_inner();
    check(&data[..]).unwrap_or_else(|e| panic!("check: {}", e));
    let trace = decode(&data);
    let read: Vec<(ValuesKind, Vec<Value>)> = trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Values(v) => {
                assert_eq!(trace.method_name(v.method), "app/Fib.fib");
                Some((v.kind, v.values.clone()))
            }
            _ => None,
        })
        .collect();
    let mut expected_all = all.clone();
    expected_all[10] = Value::Unknown; // object 99 was never defined
    assert_eq!(
        read,
        [
            (ValuesKind::Arguments, expected_all.clone()),
            (ValuesKind::FieldsAtEnter, expected_all.clone()),
            (ValuesKind::FieldsAtExit, expected_all),
            (ValuesKind::Return, vec![Value::Text("r".into())]),
        ]
    );
}
