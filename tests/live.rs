//! The live connection (`live=PORT`): a client of ours speaks IBM JinsightLive visualizer's
//! protocol (read from its classes: one byte it throws away, the trace header, then events
//! only while it waits for an answer; commands one per line, never answered) and reads the
//! stream with jlive's decoder. Bursts hold exactly the phase they covered, `dp` gives exactly
//! the program's held nodes and `dr` exactly their references; a client that vanishes
//! mid-burst or sends garbage leaves the JVM running and the next client served.

mod common;

use common::*;
use jlive_writer::jinsight::{self, Event, StreamDecoder};
use jlive_writer::model::{Value, ValuesKind};
use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

/// What the visualizer sends before every burst (Live Configuration's defaults).
const SETTINGS: &str = "maxevents 2147483647\nbursttimeout 2147483647\nresetendburstontrigger\n\
prettyprintstrings 1\nprettyprintcolors 1\nprettyprintarraysmax 256\nforcegc 0\nwatchmonitors 0\n\
resettrigger\nresetfilters\nresetargvalues\nresetfieldvalues\nresetreturnvalue\n";

/// A visualizer of ours: the connection, and what the stream has defined so far.
struct Visualizer {
    socket: TcpStream,
    events: StreamDecoder<BufReader<TcpStream>>,
    /// Class ID → (name, method names); object ID → class ID.
    classes: HashMap<u16, (String, Vec<String>)>,
    objects: HashMap<u32, u16>,
    /// Thread name → thread ID.
    threads: HashMap<String, u32>,
}

impl Visualizer {
    fn connect(port: u16) -> Visualizer {
        let mut socket = TcpStream::connect(("127.0.0.1", port)).expect("connect to live=");
        socket
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut filler = [0u8; 1];
        socket
            .read_exact(&mut filler)
            .expect("the byte before the trace");
        // One byte at a time from a buffer: a stream's next event may not have come yet.
        let reader = BufReader::new(socket.try_clone().unwrap());
        let events = StreamDecoder::with_chunk(reader, 1).expect("the trace header");
        assert_eq!(events.header().version, jinsight::VERSION);
        Visualizer {
            socket,
            events,
            classes: HashMap::new(),
            objects: HashMap::new(),
            threads: HashMap::new(),
        }
    }

    fn send(&mut self, text: &str) {
        self.socket.write_all(text.as_bytes()).unwrap();
    }

    /// Events up to and with the first of code `until`, definitions noted.
    fn until(&mut self, until: u8) -> Vec<Event> {
        let mut events = Vec::new();
        loop {
            let (_, e) = self
                .events
                .next_event()
                .expect("a well-formed stream")
                .expect("the stream goes on");
            match &e {
                Event::ClassLoad(c) => {
                    let methods = c.methods.iter().map(|m| m.name.clone()).collect();
                    self.classes.insert(c.class, (c.name.clone(), methods));
                }
                Event::ObjectDefined { object, class, .. } => {
                    self.objects.insert(*object, *class);
                }
                Event::ThreadDefine { thread, name, .. } => {
                    self.threads.insert(name.clone(), *thread);
                }
                _ => {}
            }
            let done = e.code() == until;
            events.push(e);
            if done {
                return events;
            }
        }
    }

    fn class_of(&self, object: u32) -> &str {
        self.objects
            .get(&object)
            .and_then(|c| self.classes.get(c))
            .map_or("?", |c| c.0.as_str())
    }

    /// Entries per `Class.method` among `events`.
    fn calls(&self, events: &[Event]) -> HashMap<String, u64> {
        let mut calls = HashMap::new();
        for e in events {
            if let Event::MethodEnter { class, method, .. } = e {
                let (name, methods) = &self.classes[class];
                let key = format!("{}.{}", name, methods[usize::from(*method)]);
                *calls.entry(key).or_insert(0) += 1;
            }
        }
        calls
    }

    /// A burst as the visualizer takes it: settings, `go 1`, the work once it has begun,
    /// `stop`; its events.
    fn burst(&mut self, socket: &Path, work: impl FnOnce()) -> Vec<Event> {
        self.burst_with("", socket, work)
    }

    /// A burst with `extra` settings after the defaults.
    fn burst_with(&mut self, extra: &str, socket: &Path, work: impl FnOnce()) -> Vec<Event> {
        self.send(&format!("{}{}go 1\n", SETTINGS, extra));
        let mut events = self.until(jinsight::BEGIN_BURST);
        // The visualizer sends no more till the burst ends; a test must know that recording
        // has begun before the work (the burst's beginning is written before it has).
        wait_for(socket, "state=tracing");
        work();
        self.send("stop\n");
        events.extend(self.until(jinsight::END_BURST));
        events
    }
}

fn wait_for(socket: &Path, state: &str) {
    let start = Instant::now();
    while !ok(socket, &["status"]).contains(state) {
        assert!(start.elapsed() < Duration::from_secs(30), "never {}", state);
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_visualizer_drives_bursts_and_dumps_the_heap_exactly() {
    for jdk in jdks() {
        for capture in ["events", "bci"] {
            let dir = scratch("live");
            let (socket, file) = (dir.join("c.sock"), dir.join("t.trc"));
            let _ = &file;
            let port = free_port();
            let options = format!(
                "live={},values=on,capture={},control={},file={}",
                port,
                capture,
                socket.display(),
                file.display()
            );
            let setup = format!("{} {}", jdk.name, capture);
            let mut jvm = Driven::start(&jdk, &options, "Phases");
            assert!(
                ok(&socket, &["status"]).contains("state=paused"),
                "{}",
                setup
            );
            let mut v = Visualizer::connect(port);
            // Nothing but the visualizer begins bursts now.
            let refused = ctl(&socket, &["start"]);
            assert!(refused.1.contains("visualizer"), "{}: {:?}", setup, refused);

            jvm.phase(1);
            let first = v.burst(&socket, || jvm.phase(2));
            let calls = v.calls(&first);
            assert_eq!(calls.get("Phases.p2"), Some(&2000), "{}", setup);
            assert_eq!(calls.get("Phases.p1"), None, "{}", setup);
            jvm.phase(3);
            let second = v.burst(&socket, || jvm.phase(1));
            let calls = v.calls(&second);
            assert_eq!(calls.get("Phases.p1"), Some(&1000), "{}", setup);
            assert_eq!(
                calls.get("Phases.p3"),
                None,
                "{}: phase 3 ran between bursts",
                setup
            );

            // dp: exactly the held nodes; dr: exactly their references.
            writeln!(jvm.input, "hold 500").unwrap();
            assert_eq!(jvm.line(), "held 500");
            v.send("dp\n");
            let population = v.until(jinsight::GENERATION);
            let nodes: Vec<u32> = population
                .iter()
                .filter_map(|e| match e {
                    Event::ObjectDefined { object, .. } => Some(*object),
                    _ => None,
                })
                .filter(|&o| v.class_of(o) == "Phases$Node")
                .collect();
            assert_eq!(nodes.len(), 500, "{}: dp lists the held nodes", setup);
            v.send("dr\n");
            let references = v.until(jinsight::GENERATION);
            let mut node_refs = 0;
            let mut held_by_static = false;
            for e in &references {
                match e {
                    Event::ObjectRefs { object, to } if v.class_of(*object) == "Phases$Node" => {
                        node_refs += to
                            .iter()
                            .filter(|&&o| v.class_of(o) == "Phases$Node")
                            .count()
                    }
                    Event::StaticRoot { class, to } if v.classes[class].0 == "Phases" => {
                        held_by_static = to.iter().any(|&o| v.class_of(o) == "Phases$Node")
                    }
                    _ => {}
                }
            }
            assert_eq!(node_refs, 499, "{}: dr gives the list's references", setup);
            assert!(held_by_static, "{}: Phases.held is a static root", setup);
            // The bursts defined main: its thread object is a root that names it.
            let main = v.threads.get("main").copied();
            let main_root = references.iter().any(|e| {
                matches!(e, Event::Root { code: jinsight::THREAD_ROOT, thread, .. }
                    if Some(*thread) == main)
            });
            assert!(main.is_some() && main_root, "{}: main's thread root", setup);
            v.send("markgeneration\n");
            v.until(jinsight::GENERATION);
            v.send("reportthreadsclasses\nno such command\n");
            let report = v.until(jinsight::END_OF_REPORT);
            assert!(
                matches!(report.last(), Some(Event::EndOfReport { events: 0 })),
                "{}: {:?}",
                setup,
                report.last()
            );

            // "Track monitor contention": exactly the monitors contended in its burst.
            let mut contend = |n: u32| {
                writeln!(jvm.input, "contend {}", n).unwrap();
                assert_eq!(jvm.line(), format!("contended {}", n));
            };
            let watched = v.burst_with("watchmonitors 1\n", &socket, || contend(5));
            let unwatched = v.burst(&socket, || contend(3));
            let contentions = |events: &[Event]| {
                events
                    .iter()
                    .filter(|e| match e {
                        Event::MonitorContention { object, .. } => {
                            v.class_of(*object) == "Phases$Lock"
                        }
                        _ => false,
                    })
                    .count()
            };
            assert_eq!(contentions(&watched), 5, "{}: watchmonitors 1", setup);
            assert_eq!(contentions(&unwatched), 0, "{}: watchmonitors 0", setup);

            // The value filters: arguments right after each entry, the return value right
            // before each leave (capture=events; under bci none, and the log says so).
            let filters = "traceargvalues Phases p1\ntracereturnvalue Phases p1\n\
                           traceargvalues Phases gre*\ntracereturnvalue Phases greet\n\
                           tracefieldvalues Phases greet\n";
            let valued = v.burst_with(filters, &socket, || {
                jvm.phase(1);
                writeln!(jvm.input, "greet world").unwrap();
                assert_eq!(jvm.line(), "hello world");
            });
            // Each call's values in order: p1's (arguments, return), greet's (arguments, fields
            // at entry, fields at exit, return); each kind checked for its place.
            let mut p1 = (0, 0);
            let mut greet = Vec::new();
            let mut previous: Option<&Event> = None;
            for (i, e) in valued.iter().enumerate() {
                let Event::Values {
                    kind,
                    class,
                    method,
                    values,
                    ..
                } = e
                else {
                    previous = Some(e);
                    continue;
                };
                let (c, methods) = &v.classes[class];
                let name = format!("{}.{}", c, methods[usize::from(*method)]);
                // After the entry (or the values after it) / before the leave.
                if kind.at_exit() {
                    let rest = &valued[i + 1..];
                    let next = rest.iter().find(|e| !matches!(e, Event::Values { .. }));
                    assert!(
                        matches!(next, Some(Event::MethodLeave { .. })),
                        "{}: {:?} before {:?}",
                        setup,
                        kind,
                        next
                    );
                } else {
                    assert!(
                        matches!(
                            previous,
                            Some(Event::MethodEnter { .. } | Event::Values { .. })
                        ),
                        "{}: {:?} after {:?}",
                        setup,
                        kind,
                        previous
                    );
                }
                match (name.as_str(), kind) {
                    ("Phases.p1", ValuesKind::Arguments) => {
                        assert!(matches!(values[..], [Value::Int(_)]), "{:?}", values);
                        p1.0 += 1;
                    }
                    ("Phases.p1", ValuesKind::Return) => p1.1 += 1,
                    ("Phases.greet", ValuesKind::FieldsAtEnter | ValuesKind::FieldsAtExit) => {
                        // Phases's statics, in class-file order: MONITOR, then held.
                        let classes: Vec<&str> = values
                            .iter()
                            .map(|v2| match v2 {
                                Value::Object(o) => v.class_of(*o),
                                _ => "not an object",
                            })
                            .collect();
                        assert_eq!(classes, ["java/lang/Object", "Phases$Node"], "{}", setup);
                        greet.push(vec![Value::Text(format!("{:?}", kind))]);
                    }
                    _ => greet.push(values.clone()),
                }
                previous = Some(e);
            }
            if capture == "events" {
                assert_eq!(p1, (1000, 1000), "{}: p1's arguments and returns", setup);
                let expected = vec![
                    vec![
                        Value::Text("world".into()),
                        Value::Long(7),
                        Value::Double(2.5f64.to_bits()),
                        Value::Boolean(true),
                        Value::Object(jlive_writer::model::NO_OBJECT),
                    ],
                    vec![Value::Text("FieldsAtEnter".into())],
                    vec![Value::Text("FieldsAtExit".into())],
                    vec![Value::Text("hello world".into())],
                ];
                assert_eq!(greet, expected, "{}: greet's values", setup);
            } else {
                assert_eq!((p1, greet.len()), ((0, 0), 0), "{}", setup);
            }
            let plain = v.burst(&socket, || jvm.phase(1));
            let values = plain
                .iter()
                .filter(|e| matches!(e, Event::Values { .. }))
                .count();
            assert_eq!(values, 0, "{}: the filters were reset", setup);

            // A second visualizer is turned away; the first goes on.
            let mut second = TcpStream::connect(("127.0.0.1", port)).unwrap();
            second
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            assert_eq!(second.read(&mut [0u8; 1]).unwrap(), 0, "{}", setup);

            // It vanishes mid-burst: the burst ends, the JVM runs on.
            v.send(&format!("{}go 1\n", SETTINGS));
            v.until(jinsight::BEGIN_BURST);
            wait_for(&socket, "state=tracing");
            v.socket.shutdown(Shutdown::Both).unwrap();
            drop(v);
            wait_for(&socket, "state=paused");
            jvm.phase(2);

            // Garbage closes a connection, and the next client is served.
            let mut garbage = Visualizer::connect(port);
            garbage.send("\u{1}\u{2}go go go\n");
            garbage.send(&"x".repeat(10_000));
            garbage
                .socket
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let mut rest = Vec::new();
            let _ = garbage.socket.read_to_end(&mut rest);
            drop(garbage);
            wait_for(&socket, "state=paused");
            let mut v = Visualizer::connect(port);
            let third = v.burst(&socket, || jvm.phase(3));
            assert_eq!(v.calls(&third).get("Phases.p3"), Some(&3000), "{}", setup);
            drop(v);
            wait_for(&socket, "state=paused");
            // Back to the file: `jlive ctl heap` writes the same dump into it.
            ok(&socket, &["start"]);
            ok(&socket, &["heap"]);
            ok(&socket, &["stop"]);
            jvm.quit();

            // Each session streamed with a copy in the next file (t.1, t.3, t.5), and the trace
            // went on in the one after it (t.2, t.4, t.6).
            let trace = read_trace(&dir.join("t.6.trc"));
            let node_class = trace
                .classes
                .iter()
                .find(|(_, c)| c.name == "Phases$Node")
                .map(|(&id, _)| id);
            let mut node_objects = std::collections::HashSet::new();
            let mut refs = 0;
            for (_, e) in &trace.events {
                match e {
                    jlive_writer::model::Event::ObjectDefine(o) if Some(o.class) == node_class => {
                        node_objects.insert(o.object);
                    }
                    jlive_writer::model::Event::Heap { part, .. } => {
                        if let jlive_writer::model::HeapPart::Refs { object, to, .. } = &**part {
                            if node_objects.contains(object) {
                                refs += to.iter().filter(|o| node_objects.contains(o)).count();
                            }
                        }
                    }
                    _ => {}
                }
            }
            assert_eq!(node_objects.len(), 500, "{}: ctl heap into the file", setup);
            assert_eq!(refs, 499, "{}: ctl heap into the file", setup);
            // Each session's copy is a whole trace: the first held both bursts.
            let copy = read_trace(&dir.join("t.1.trc"));
            let entries = |name: &str| {
                copy.events
                    .iter()
                    .filter(|(_, e)| match e {
                        jlive_writer::model::Event::MethodEnter(m) => {
                            copy.method_name(m.method) == name
                        }
                        _ => false,
                    })
                    .count()
            };
            assert_eq!(
                entries("Phases.p2"),
                2000,
                "{}: the first session's copy",
                setup
            );
            // Bursts with phase 1: the second, the one with values and the one after it.
            assert_eq!(
                entries("Phases.p1"),
                3000,
                "{}: the first session's copy",
                setup
            );
        }
    }
}

#[test]
fn triggers_limits_and_depth_shape_the_visualizers_bursts_exactly() {
    for jdk in jdks() {
        for capture in ["events", "bci"] {
            let dir = scratch("live-trigger");
            let socket = dir.join("c.sock");
            let port = free_port();
            let options = format!(
                "live={},capture={},control={},file={}",
                port,
                capture,
                socket.display(),
                dir.join("t.trc").display()
            );
            let setup = format!("{} {}", jdk.name, capture);
            let mut jvm = Driven::start(&jdk, &options, "Phases");
            let mut v = Visualizer::connect(port);
            let nest = |jvm: &mut Driven, n: u32| {
                writeln!(jvm.input, "nest {}", n).unwrap();
                assert_eq!(jvm.line(), format!("nested {}", n));
            };
            let only = |pairs: &[(&str, u64)]| -> HashMap<String, u64> {
                pairs.iter().map(|&(m, n)| (m.to_string(), n)).collect()
            };

            // A trigger after one invocation, locked to its thread, ending at its exit: the
            // burst is the second call of outer and nothing else, and ends by itself.
            v.send(&format!(
                "{}endburstontrigger\ntriggermethod Phases outer 1 1 0\ngo 1\n",
                SETTINGS
            ));
            wait_for(&socket, "state=armed");
            nest(&mut jvm, 3);
            nest(&mut jvm, 5);
            let triggered = v.until(jinsight::END_BURST);
            nest(&mut jvm, 7);
            assert_eq!(
                v.calls(&triggered),
                only(&[("Phases.outer", 1), ("Phases.inner", 5), ("Phases.leaf", 5)]),
                "{}: the triggered burst",
                setup
            );
            let first = triggered.iter().find_map(|e| match e {
                Event::MethodEnter { class, method, .. } => {
                    Some(v.classes[class].1[usize::from(*method)].clone())
                }
                _ => None,
            });
            assert_eq!(first.as_deref(), Some("outer"), "{}: the first call", setup);
            wait_for(&socket, "state=paused");

            // Burst sampling's depth limit, counted from the trigger: outer and inner only.
            v.send(&format!(
                "{}endburstontrigger\ntriggermethod Phases outer 1 0 0\nflashlight_go 1 2\n",
                SETTINGS
            ));
            wait_for(&socket, "state=armed");
            nest(&mut jvm, 4);
            let shallow = v.until(jinsight::END_BURST);
            assert_eq!(
                v.calls(&shallow),
                only(&[("Phases.outer", 1), ("Phases.inner", 4)]),
                "{}: depth 2",
                setup
            );
            wait_for(&socket, "state=paused");

            // The thread lock: the threads the trigger's call starts are left out, or not.
            for (lock, runs) in [(1, None), (0, Some(&2))] {
                v.send(&format!(
                    "{}endburstontrigger\ntriggermethod Phases contend {} 0 0\ngo 1\n",
                    SETTINGS, lock
                ));
                wait_for(&socket, "state=armed");
                writeln!(jvm.input, "contend 2").unwrap();
                assert_eq!(jvm.line(), "contended 2");
                let events = v.until(jinsight::END_BURST);
                let calls = v.calls(&events);
                assert_eq!(calls.get("Phases.contend"), Some(&1), "{}", setup);
                assert_eq!(calls.get("Phases$1.run"), runs, "{}: lock {}", setup, lock);
                wait_for(&socket, "state=paused");
            }

            // "Limit to": only inner's own invocations, none of its callee or callers.
            let limited = v.burst_with("tracemethod Phases inner\n", &socket, || nest(&mut jvm, 6));
            assert_eq!(
                v.calls(&limited),
                only(&[("Phases.inner", 6)]),
                "{}: Limit to",
                setup
            );
            // It held for that burst only.
            let plain = v.burst(&socket, || nest(&mut jvm, 2));
            assert_eq!(v.calls(&plain).get("Phases.leaf"), Some(&2), "{}", setup);

            // A trigger that dumps the population: the held nodes, ended as a dump.
            writeln!(jvm.input, "hold 200").unwrap();
            assert_eq!(jvm.line(), "held 200");
            v.send(&format!(
                "{}triggermethod Phases outer 1 0 1\ngo 1\n",
                SETTINGS
            ));
            wait_for(&socket, "state=armed");
            nest(&mut jvm, 1);
            let dump = v.until(jinsight::GENERATION);
            let nodes = dump
                .iter()
                .filter(|e| match e {
                    Event::ObjectDefined { object, .. } => v.class_of(*object) == "Phases$Node",
                    _ => false,
                })
                .count();
            assert_eq!(nodes, 200, "{}: the trigger's population dump", setup);
            wait_for(&socket, "state=paused");

            // Stopped before it fired: nothing is sent (the visualizer, which has read no
            // BEGIN_BURST, stops reading by itself), and nothing stays armed.
            v.send(&format!(
                "{}triggermethod Phases outer 1 0 0\ngo 1\n",
                SETTINGS
            ));
            wait_for(&socket, "state=armed");
            v.send("stop\n");
            wait_for(&socket, "state=paused");
            nest(&mut jvm, 1);
            // The next burst's events are its own (a stray END_BURST would end it at once).
            let after = v.burst(&socket, || jvm.phase(1));
            assert_eq!(v.calls(&after).get("Phases.outer"), None, "{}", setup);
            assert_eq!(v.calls(&after).get("Phases.p1"), Some(&1000), "{}", setup);
            drop(v);
            wait_for(&socket, "state=paused");
            jvm.quit();
        }
    }
}
