use super::*;
use crate::model::Collect;

/// app/A has four methods (keys 0, 1, 2 and one sparse key), app/Skip one (key 3, an
/// excluded class); key 4 is unknown.
struct Registry;

const SPARSE: MethodKey = 1 << 40;
const KEYS: [MethodKey; 6] = [0, 1, 2, 3, 4, SPARSE];

impl Symbols for Registry {
    fn method(&self, key: MethodKey) -> Option<MethodRef> {
        match key {
            0..=2 => Some(MethodRef {
                class: 4,
                index: key as u16,
            }),
            SPARSE => Some(MethodRef { class: 4, index: 3 }),
            3 => Some(MethodRef { class: 5, index: 0 }),
            _ => None,
        }
    }
    fn class(&self, key: ClassKey) -> Option<Arc<ClassInfo>> {
        let method = |name: &str| MethodDef {
            name: name.into(),
            signature: "()V".into(),
            access: 1,
            lines: Vec::new(),
        };
        let (name, methods) = match key {
            1 => ("java/lang/Object", vec![]),
            2 => ("java/lang/Thread", vec![]),
            4 => ("app/A", ["a", "b", "c", "d"].map(method).to_vec()),
            5 => ("app/Skip", vec![method("s")]),
            _ => return None,
        };
        Some(Arc::new(ClassInfo {
            name: name.into(),
            methods,
            superclass: (key != 1).then_some(1),
            ..Default::default()
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
            name: format!("t{}", key),
            ..Default::default()
        })
    }
}

/// Two threads' records in batches: entries of traced, excluded, unknown and sparse
/// methods (some with a receiver no one defined), exits of the top frame, of a frame
/// further down (an exception past a missed exit) and of no open frame, GC records.
fn batches() -> Vec<Batch> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut open: [Vec<MethodKey>; 2] = [Vec::new(), Vec::new()];
    let mut pending = [Batch::new(7, 3), Batch::new(8, 3)];
    let mut out = Vec::new();
    for ticks in 10..40_000u64 {
        let r = next();
        let t = (r & 1) as usize;
        let stack = &mut open[t];
        // Mostly the batch's overhead (one-slot records), sometimes another (wide ones).
        let overhead = if (r >> 56) % 8 == 0 { 4 } else { 3 };
        let record = match (r >> 8) % 16 {
            0..=6 => {
                let key = KEYS[((r >> 16) % 6) as usize];
                let object = if (r >> 24) % 8 == 0 { 5 } else { NO_OBJECT };
                stack.push(key);
                Record::new(RecordKind::MethodEntry, ticks, key, object, overhead)
            }
            7..=12 => match stack.pop() {
                Some(key) => Record::new(RecordKind::MethodExit, ticks, key, 0, overhead),
                None => Record::new(RecordKind::GcStart, ticks, 0, 0, 0),
            },
            13 if !stack.is_empty() => {
                let depth = (r >> 32) as usize % stack.len();
                let key = stack[depth];
                stack.truncate(depth);
                Record::new(RecordKind::MethodExit, ticks, key, 0, 4)
            }
            14 => Record::new(
                RecordKind::MethodExit,
                ticks,
                KEYS[(r >> 40) as usize % 6],
                0,
                4,
            ),
            _ => Record::new(RecordKind::GcFinish, ticks, 0, 0, 0),
        };
        pending[t].push(&record);
        if (r >> 48) % 64 == 0 || pending[t].slots.len() >= 300 {
            let next = Batch::new(pending[t].thread, 3);
            out.push(std::mem::replace(&mut pending[t], next));
        }
    }
    out.extend(pending);
    out
}

/// The events made of `batches`: by `batch` (common runs included), or record by record
/// through `record`, which handles every kind of record.
fn resolve(batches: &[Batch], record_by_record: bool, stck: Option<Stck>) -> Vec<Event> {
    let config = ResolverConfig {
        filter: ClassFilter::new(&[], &["app/Skip".to_string()]),
        entries_only: false,
        stck,
    };
    let mut s = Resolver::new(Collect::default(), Arc::new(Registry), config);
    s.begin_burst(1).unwrap();
    for b in batches {
        if record_by_record {
            let state = s.threads.remove(&b.thread).unwrap_or_default();
            s.current = (b.thread, state);
            for mut r in b.records() {
                r.ticks = s.file_ticks(r.ticks);
                s.record(b.thread, &r).unwrap();
            }
            let (key, state) = std::mem::take(&mut s.current);
            s.threads.insert(key, state);
        } else {
            s.batch(&mut b.clone()).unwrap();
        }
    }
    s.finish(Some(2500)).unwrap().0 .0
}

/// A batch of entries (`Some(key)`) and exits (`None`: of the top frame) from tick 10 on.
fn calls(thread: ThreadKey, from: u64, calls: &[Option<MethodKey>]) -> Batch {
    let mut b = Batch::new(thread, 3);
    let mut open = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let ticks = from + i as u64;
        let r = match *c {
            Some(key) => {
                open.push(key);
                Record::new(RecordKind::MethodEntry, ticks, key, NO_OBJECT, 3)
            }
            None => Record::new(RecordKind::MethodExit, ticks, open.pop().unwrap(), 0, 3),
        };
        b.push(&r);
    }
    b
}

/// Entries as (method index in app/A: a b c d, depth).
type Entries = Vec<(u16, u32)>;

/// The entries of a burst with `scope` and of an unscoped one after it, and the trigger
/// exits counted.
fn entered(scope: BurstScope, batches: &[Batch]) -> (Entries, Entries, u32) {
    let mut s = Resolver::new(
        Collect::default(),
        Arc::new(Registry),
        ResolverConfig::default(),
    );
    let mut bursts = Vec::new();
    for scope in [scope, BurstScope::default()] {
        s.begin_scoped(1, scope).unwrap();
        for b in batches {
            s.batch(&mut b.clone()).unwrap();
        }
        s.end_burst(1000).unwrap();
        let events = std::mem::take(&mut s.sink.0);
        bursts.push(
            events
                .iter()
                .filter_map(|e| match e {
                    Event::MethodEnter(e) => Some((e.method.index, e.depth)),
                    _ => None,
                })
                .collect(),
        );
    }
    let exits = s.counts.trigger_exits;
    (bursts.remove(0), bursts.remove(0), exits)
}

#[test]
fn a_burst_scope_limits_methods_and_depth_for_that_burst_only() {
    let (a, b, c) = (Some(0), Some(1), Some(2));
    let work = [calls(7, 10, &[a, b, c, None, None, b, None, None])];
    let all = vec![(0, 1), (1, 2), (2, 3), (1, 2)];
    let limit = BurstScope {
        limit: vec![("app/A".into(), "b".into())],
        ..BurstScope::default()
    };
    assert_eq!(
        entered(limit, &work),
        (vec![(1, 1), (1, 1)], all.clone(), 0)
    );
    let depth = BurstScope {
        depth: Some(2),
        ..BurstScope::default()
    };
    assert_eq!(
        entered(depth, &work),
        (vec![(0, 1), (1, 2), (1, 2)], all, 0)
    );
}

#[test]
fn a_trigger_scope_keeps_its_thread_until_its_exit() {
    let (a, b, c) = (Some(0), Some(1), Some(2));
    let work = [
        calls(8, 5, &[a, None]),
        calls(7, 10, &[b, c, None, None, a, None]),
        calls(8, 30, &[c, None]),
    ];
    let trigger = |lock| BurstScope {
        trigger: Some(TriggerScope {
            thread: 7,
            method: 1,
            lock,
            end_on_exit: true,
        }),
        ..BurstScope::default()
    };
    let every = vec![(0, 1), (1, 1), (2, 2), (0, 1), (2, 1)];
    // Locked: thread 7 only, up to b's exit at tick 13.
    assert_eq!(
        entered(trigger(true), &work),
        (vec![(1, 1), (2, 2)], every.clone(), 1)
    );
    // Not locked: thread 8's records before the cut too, none after it.
    assert_eq!(
        entered(trigger(false), &work),
        (vec![(0, 1), (1, 1), (2, 2)], every, 1)
    );
}

/// Object IDs rise for the whole run: one near the top of the range costs one entry, not
/// a table up to it (16 GiB), and a freed object is forgotten.
#[test]
fn objects_are_kept_by_id_not_in_a_table_up_to_it() {
    let mut s = Resolver::new(
        Collect::default(),
        Arc::new(Registry),
        ResolverConfig::default(),
    );
    s.begin_burst(1).unwrap();
    let mut b = Batch::new(7, 3);
    for (i, id) in [0xFFFF_FF00u32, 3, 0xFFFF_FF01].into_iter().enumerate() {
        b.push(&Record::new(
            RecordKind::ObjectAlloc,
            10 + i as u64,
            4,
            id,
            NOT_ARRAY,
        ));
    }
    b.push(&Record::new(RecordKind::ObjectFree, 20, 0, 3, 0));
    s.batch(&mut b).unwrap();
    assert_eq!(s.objects.len(), 2);
    let events = s.finish(None).unwrap().0 .0;
    let allocs = events
        .iter()
        .filter(|e| matches!(e, Event::Alloc { .. }))
        .count();
    assert_eq!(allocs, 3);
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Free { object: 3, .. })));
}

/// A carrier's batch: `(kind, key)` records at ticks 1, 2, ...
fn carrier_batch(carrier: ThreadKey, from: u64, records: &[(RecordKind, u64)]) -> Batch {
    let mut b = Batch::new(carrier, 3);
    for (i, &(kind, key)) in records.iter().enumerate() {
        let extra = if kind == RecordKind::MethodEntry || kind == RecordKind::MethodExit {
            3
        } else {
            0
        };
        let arg = if kind == RecordKind::MethodEntry {
            NO_OBJECT
        } else {
            0
        };
        b.push(&Record::new(kind, from + i as u64, key, arg, extra));
    }
    b
}

/// The events as "thread what": thread names, entries and leaves by method key.
fn story(events: &[Event]) -> Vec<String> {
    let mut names = HashMap::new();
    let mut out = Vec::new();
    for e in events {
        let (thread, what) = match e {
            Event::ThreadDefine(t) => {
                names.insert(t.id, t.name.clone());
                continue;
            }
            Event::ThreadStart { thread, .. } => (*thread, "start".to_string()),
            Event::ThreadEnd { thread, .. } => (*thread, "end".to_string()),
            Event::MethodEnter(e) => (e.thread, format!("enter {}", e.method.index)),
            Event::MethodLeave(l) => (l.thread, format!("leave {}", l.method.index)),
            _ => continue,
        };
        out.push(format!("{} {}", names[&thread], what));
    }
    out
}

/// A virtual thread's records lie in the batches of the carriers that ran it, between a
/// Mount and an Unmount: they are its own, its stack carried from one carrier to the
/// next; its carrier's records around them are the carrier's. Its end lets its state go.
#[test]
fn a_virtual_threads_records_are_its_own_on_any_carrier() {
    use RecordKind::{
        MethodEntry as In, MethodExit as Out, Mount, ThreadEnd, ThreadStart, Unmount,
    };
    let config = ResolverConfig {
        filter: ClassFilter::new(&[], &[]),
        entries_only: false,
        stck: None,
    };
    let mut s = Resolver::new(Collect::default(), Arc::new(Registry), config);
    // Mounted before the burst: followed all the same.
    s.batch(&mut carrier_batch(7, 1, &[(Mount, 21)])).unwrap();
    s.begin_burst(5).unwrap();
    let batches = [
        carrier_batch(7, 10, &[(In, 0), (Unmount, 0), (In, 1), (Mount, 20)]),
        carrier_batch(7, 20, &[(ThreadStart, 0), (In, 1), (In, 2), (Unmount, 0)]),
        carrier_batch(7, 30, &[(Out, 1)]),
        carrier_batch(8, 40, &[(Mount, 20), (Out, 2), (Out, 1), (ThreadEnd, 0)]),
        carrier_batch(8, 50, &[(Unmount, 0), (In, 0)]),
        // A virtual thread not followed: its records are nobody's.
        carrier_batch(
            9,
            60,
            &[(Mount, u64::from(UNKNOWN_THREAD)), (In, 0), (Out, 0)],
        ),
        carrier_batch(9, 70, &[(In, 1), (Unmount, 0), (In, 2)]),
    ];
    for b in &batches {
        s.batch(&mut b.clone()).unwrap();
    }
    assert!(
        !s.threads.contains_key(&20),
        "an ended thread's state is let go"
    );
    assert_eq!(s.counts().unknown_thread, 3);
    assert_eq!(s.mounts(), vec![]);
    s.batch(&mut carrier_batch(8, 80, &[(Mount, 22)])).unwrap();
    assert_eq!(s.mounts(), vec![(8, 22)]);
    let events = s.finish(None).unwrap().0 .0;
    assert_eq!(
        story(&events),
        [
            "t21 enter 0",
            "t7 enter 1",
            "t20 start",
            "t20 enter 1",
            "t20 enter 2",
            "t7 leave 1",
            "t20 leave 2",
            "t20 leave 1",
            "t20 end",
            "t8 enter 0",
            "t9 enter 2",
        ]
    );
}

#[test]
fn common_runs_write_what_record_by_record_writes() {
    let batches = batches();
    for stck in [
        None,
        Some(Stck::new(5, 1_795_564_800_000_000_000, 2_600_000_000)),
    ] {
        let by_record = resolve(&batches, true, stck);
        let by_batch = resolve(&batches, false, stck);
        // Depths, tickets and frames as the model's rules have them.
        let mut checker = crate::check::Checker::new(crate::format::Format::Tptp);
        for (at, e) in by_record.iter().enumerate() {
            checker.event(at, e).unwrap_or_else(|e| panic!("{}", e));
        }
        let calls = by_record
            .iter()
            .filter(|e| matches!(e, Event::MethodEnter(_)))
            .count();
        assert!(calls > 5_000, "{} calls", calls);
        assert!(by_batch == by_record, "stck {:?}: the events differ", stck);
    }
}

/// A leaf's exit, stored with its entry by one call, adds no overhead of its own: its
/// leave carries its entry's alone, in a common run as record by record.
#[test]
fn a_bare_exit_adds_no_overhead_of_its_own() {
    let mut b = Batch::new(7, 3);
    b.push(&Record::new(RecordKind::MethodEntry, 10, 0, NO_OBJECT, 3));
    b.push(&Record::new(RecordKind::MethodEntry, 11, 1, NO_OBJECT, 3));
    b.push(&Record::new(RecordKind::MethodExit, 11, 1, 0, 0));
    b.push(&Record::new(RecordKind::MethodExit, 12, 0, 0, 3));
    assert_eq!(b.slots.len(), 4, "one slot each");
    for by_record in [true, false] {
        let leaves: Vec<u64> = resolve(std::slice::from_ref(&b), by_record, None)
            .iter()
            .filter_map(|e| match e {
                Event::MethodLeave(l) => Some(l.overhead),
                _ => None,
            })
            .collect();
        assert_eq!(leaves, [3, 6], "record by record: {}", by_record);
    }
}

/// Whether the common run or the record-by-record path writes it, a leaf's bare exit is
/// counted once; an ordinary exit, or a leaf's exit not written, never.
#[test]
fn leaf_calls_are_counted_on_both_paths() {
    let mut b = Batch::new(7, 3);
    b.push(&Record::new(RecordKind::MethodEntry, 10, 0, NO_OBJECT, 3));
    b.push(&Record::new(RecordKind::MethodEntry, 11, 1, NO_OBJECT, 3));
    b.push(&Record::new(RecordKind::MethodExit, 11, 1, 0, 0));
    // A leaf of a method the registry does not know: no Leave is written, none counted.
    b.push(&Record::new(RecordKind::MethodEntry, 12, 7, NO_OBJECT, 3));
    b.push(&Record::new(RecordKind::MethodExit, 12, 7, 0, 0));
    b.push(&Record::new(RecordKind::MethodExit, 13, 0, 0, 3));
    let mut s = Resolver::new(
        Collect::default(),
        Arc::new(Registry),
        ResolverConfig::default(),
    );
    s.begin_burst(1).unwrap();
    s.batch(&mut b).unwrap();
    assert_eq!(s.counts.leaf_calls, 1, "in a common run");
    s.end_burst(20).unwrap();
    // A scoped burst reads every record by itself.
    let depth = BurstScope {
        depth: Some(9),
        ..BurstScope::default()
    };
    s.begin_scoped(30, depth).unwrap();
    s.batch(&mut b).unwrap();
    assert_eq!(s.counts.leaf_calls, 2, "record by record");
    assert_eq!(s.counts.records, 12);
}

/// The JinsightLive file of these batches, in both byte orders, is the one the writer
/// before the model wrote (writer/src/session.rs of aeb5782 on the same batches:
/// 563,365 bytes of these FNV-1a hashes).
#[test]
fn jinsight_bytes_are_those_of_the_writer_before_the_model() {
    use crate::jinsight::{JinsightSink, PLATFORM_LINUX_390, PLATFORM_LINUX_X86};
    fn write<const BIG: bool>(platform: u32, batches: &[Batch]) -> Vec<u8> {
        let info = TraceInfo {
            ticks_per_microsecond: 1000,
            ..TraceInfo::default()
        };
        let out = std::io::Cursor::new(Vec::new());
        let sink = JinsightSink::<_, BIG>::new(out, &info, Some(platform)).unwrap();
        let config = ResolverConfig {
            filter: ClassFilter::new(&[], &["app/Skip".to_string()]),
            ..ResolverConfig::default()
        };
        let mut s = Resolver::new(sink, Arc::new(Registry), config);
        s.begin_burst(1).unwrap();
        for b in batches {
            s.batch(&mut b.clone()).unwrap();
        }
        s.finish(Some(2500)).unwrap().0.into_inner().into_inner()
    }
    let fnv = |data: &[u8]| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        (data.len(), hash)
    };
    let batches = batches();
    let le = write::<false>(PLATFORM_LINUX_X86, &batches);
    assert_eq!(fnv(&le), (563_365, 0x8220_9e57_8394_29a5));
    let be = write::<true>(PLATFORM_LINUX_390, &batches);
    assert_eq!(fnv(&be), (563_365, 0xb9b5_67ed_bea6_889e));
}

/// A join's end takes the thread of its beginning; an end whose beginning came before the
/// burst is not written; a wait is written once its end shows it waited, and a wait the
/// thread went on from (it threw) is not; a wait still open at the burst's end is.
#[test]
fn spans_are_closed_in_their_burst_and_a_wait_is_written_once_it_waited() {
    use SyncKind::*;
    // Thread 7's records, in order: (kind, object hash, object ID).
    let script = [
        (Waited, 9, 90),        // begun before the burst: dropped
        (Join, 5, 50),          // joins thread object 5
        (Joined, 0, NO_OBJECT), // the agent's end names no thread
        (Wait, 3, 30),          // throws: the next record is a method entry
        (Wait, 4, 40),          // waits
        (Waited, 4, 40),
        (Notify, 4, 40),
        (Wait, 6, 60), // still waiting when the burst ends
    ];
    let mut batch = Batch::new(7, 0);
    for (i, &(kind, hash, id)) in script.iter().enumerate() {
        let key = i as u64;
        let info = SyncInfo {
            kind,
            object_hash: hash,
            object_id: id,
            // Objects of app/A, defined by the first event that names each.
            object_class: (id != NO_OBJECT).then_some(4),
            ..SyncInfo::default()
        };
        batch.push_payload(RecordKind::Sync, 10 + key, Payload::Sync(Box::new(info)));
        if i == 3 {
            batch.push(&Record::new(RecordKind::MethodEntry, 13, 0, NO_OBJECT, 0));
            batch.push(&Record::new(RecordKind::MethodExit, 13, 0, 0, 0));
        }
    }
    let config = ResolverConfig {
        filter: ClassFilter::new(&[], &[]),
        entries_only: false,
        stck: None,
    };
    // Thread 8 throws from its only wait and goes on with calls.
    let info = SyncInfo {
        kind: Wait,
        object_hash: 2,
        object_id: 20,
        object_class: Some(4),
        ..SyncInfo::default()
    };
    let mut other = Batch::new(8, 0);
    other.push_payload(RecordKind::Sync, 20, Payload::Sync(Box::new(info)));
    other.push(&Record::new(RecordKind::MethodEntry, 21, 0, NO_OBJECT, 0));
    other.push(&Record::new(RecordKind::MethodExit, 22, 0, 0, 0));
    let mut s = Resolver::new(Collect::default(), Arc::new(Registry), config);
    s.begin_burst(1).unwrap();
    s.batch(&mut batch).unwrap();
    s.batch(&mut other).unwrap();
    s.end_burst(100).unwrap();
    let events = s.finish(None).unwrap().0 .0;
    let syncs: Vec<(SyncKind, u32, u32)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Sync(s) => Some((s.kind, s.object, s.object_id)),
            _ => None,
        })
        .collect();
    assert_eq!(
        syncs,
        [
            (Join, 5, 50),
            (Joined, 5, 50),
            (Wait, 4, 40),
            (Waited, 4, 40),
            (Notify, 4, 40),
            (Wait, 6, 60),
        ]
    );
    // Each object is defined once, before the first event that names it.
    let defined: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            Event::ObjectDefine(o) => Some(o.object),
            _ => None,
        })
        .collect();
    assert_eq!(defined, [90, 50, 30, 40, 60, 20]);
    // The open wait comes before the burst's end.
    let end = events
        .iter()
        .position(|e| matches!(e, Event::BurstEnd { .. }))
        .unwrap();
    assert!(matches!(&events[end - 1], Event::Sync(s) if s.kind == Wait));
}
