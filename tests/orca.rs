//! format=orca: the concurrency events of a program that counts its own (examples/Concurrency)
//! come out exactly, with the right threads, owners and names, on every JDK and capture; the
//! meta log's line tables are javap's.

mod common;

use common::*;
use jlive_writer::model::{Event, SyncKind};
use std::collections::{BTreeMap, BTreeSet};

/// What Concurrency printed: its counts, its threads (hash, name), its contended monitors
/// (monitor hash, holder hash).
struct Printed {
    counts: BTreeMap<String, u64>,
    threads: Vec<(u32, String)>,
    monitors: Vec<(u32, u32)>,
}

fn printed(stdout: &str) -> Printed {
    let hex = |s: &str| u32::from_str_radix(s, 16).expect("hash");
    let mut p = Printed {
        counts: BTreeMap::new(),
        threads: Vec::new(),
        monitors: Vec::new(),
    };
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("thread ") {
            let (hash, name) = rest.split_once(' ').expect("thread line");
            p.threads.push((hex(hash), name.to_string()));
        } else if let Some(rest) = line.strip_prefix("monitor ") {
            let (monitor, holder) = rest.split_once(' ').expect("monitor line");
            p.monitors.push((hex(monitor), hex(holder)));
        } else if let Some(rest) = line.strip_prefix("counts ") {
            for kv in rest.split_whitespace() {
                let (k, v) = kv.split_once('=').expect("count");
                p.counts.insert(k.to_string(), v.parse().expect("number"));
            }
        }
    }
    p
}

/// The agent's log line "contended monitors: N owners read from the contender's ThreadInfo,
/// M asked at a safepoint": (N, M), (0, 0) without one.
fn owners_found(log: &str) -> (u64, u64) {
    let Some(line) = log.lines().find(|l| l.contains("contended monitors: ")) else {
        return (0, 0);
    };
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    (
        numbers.first().copied().unwrap_or(0),
        numbers.get(1).copied().unwrap_or(0),
    )
}

/// What the program counted of each kind of event.
fn expected(p: &Printed) -> BTreeMap<SyncKind, u64> {
    let n = |k: &str| p.counts[k];
    BTreeMap::from([
        (SyncKind::Wait, n("waits")),
        (SyncKind::Waited, n("waits")),
        (SyncKind::Notify, n("notifies")),
        (SyncKind::NotifyAll, n("notifyAlls")),
        (SyncKind::Start, n("starts")),
        (SyncKind::Join, n("joins")),
        (SyncKind::Joined, n("joins")),
        (SyncKind::Sleep, n("sleeps")),
        (SyncKind::Slept, n("sleeps")),
        (SyncKind::ContendedEnter, n("contended")),
        (SyncKind::ContendedEntered, n("contended")),
    ])
}

/// The events of each kind whose stack holds a frame of the program (and, for contention,
/// whose monitor `contended` accepts: the producer and consumer may contend for their lock
/// too, which the program cannot count).
fn program_events(
    trace: &jlive_writer::read::Trace,
    contended: impl Fn(&jlive_writer::model::Sync) -> bool,
) -> BTreeMap<SyncKind, u64> {
    let mut counts = BTreeMap::new();
    for (_, e) in &trace.events {
        if let Event::Sync(s) = e {
            let ours = s
                .stack
                .iter()
                .any(|f| trace.class_name(f.method.class).starts_with("Concurrency"));
            let counted = !matches!(
                s.kind,
                SyncKind::ContendedEnter | SyncKind::ContendedEntered
            ) || contended(s);
            if ours && counted {
                *counts.entry(s.kind).or_default() += 1;
            }
        }
    }
    counts
}

#[test]
fn an_orca_log_holds_exactly_the_waits_notifies_starts_joins_sleeps_and_contentions_the_program_made(
) {
    for jdk in jdks() {
        for capture in ["events", "bci"] {
            let dir = scratch("orca");
            let file = dir.join("t");
            let log = dir.join("log");
            let options = format!(
                "format=orca,capture={},file={},log={}",
                capture,
                file.display(),
                log.display()
            );
            let run = java(&jdk, Some(&options), &["Concurrency", "300", "5"]);
            let what = format!("{} capture={}", jdk.name, capture);
            assert_eq!(run.code, Some(0), "{}: {}", what, run.stderr);
            assert!(!run.stderr.contains("jlive:"), "{}: {}", what, run.stderr);
            assert!(dir.join("t.meta").is_file(), "{}: no meta log", what);
            let p = printed(&run.stdout);
            let trace = read_trace(&file);
            // The program's own events: those with one of its frames in their stack.
            let mut counts: BTreeMap<SyncKind, u64> = BTreeMap::new();
            let mut objects: BTreeMap<SyncKind, BTreeSet<u32>> = BTreeMap::new();
            let mut contended = Vec::new();
            let mut names = BTreeMap::new();
            // The producer and consumer may contend for their lock too, which the program
            // cannot count: contentions are those of its contended monitors.
            let monitors: BTreeSet<u32> = p.monitors.iter().map(|m| m.0).collect();
            let counted = |kind: SyncKind, object: u32| {
                !matches!(kind, SyncKind::ContendedEnter | SyncKind::ContendedEntered)
                    || monitors.contains(&object)
            };
            for (_, e) in &trace.events {
                match e {
                    Event::Sync(s)
                        if counted(s.kind, s.object)
                            && s.stack.iter().any(|f| {
                                trace.class_name(f.method.class).starts_with("Concurrency")
                            }) =>
                    {
                        *counts.entry(s.kind).or_default() += 1;
                        objects.entry(s.kind).or_default().insert(s.object);
                        if s.kind == SyncKind::ContendedEnter {
                            contended.push((s.object, s.owner));
                        }
                    }
                    Event::ThreadDefine(t) => {
                        names.insert(t.hash, t.name.clone());
                    }
                    _ => {}
                }
            }
            assert_eq!(counts, expected(&p), "{}", what);
            assert_eq!(
                program_events(&trace, |s| monitors.contains(&s.object)),
                counts,
                "{}",
                what
            );
            let n = |k: &str| p.counts[k];
            assert!(n("waits") > 0 && n("contended") == 5 && n("starts") == 13);
            // Started and joined: the program's threads, each named as it named it.
            let threads: BTreeSet<u32> = p.threads.iter().map(|t| t.0).collect();
            assert_eq!(objects[&SyncKind::Start], threads, "{}: started", what);
            assert_eq!(objects[&SyncKind::Join], threads, "{}: joined", what);
            for (hash, name) in &p.threads {
                assert_eq!(names.get(hash), Some(name), "{}: thread {:08X}", what, hash);
            }
            // No wait inside a join (its object would be a thread).
            let waited = &objects[&SyncKind::Wait];
            assert!(waited.is_disjoint(&threads), "{}: a join's wait", what);
            // Each contention names its monitor and the thread that held it.
            contended.sort();
            let mut want = p.monitors.clone();
            want.sort();
            assert_eq!(contended, want, "{}: contended monitors and owners", what);
            // Their owners were read without stopping the world (a monitor taken back after
            // a wait may still be asked at a safepoint).
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(!log.contains("warning:"), "{}: {}", what, log);
            let (read, _) = owners_found(&log);
            assert!(
                read >= n("contended"),
                "{}: owners read from ThreadInfo: {}\n{}",
                what,
                read,
                log
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// javap -l -s: (name, descriptor) → line table, for each method of a class.
fn javap_lines(class: &str) -> BTreeMap<(String, String), Vec<(u32, u32)>> {
    let jdk = &jdks()[0];
    let out = std::process::Command::new(jdk.home.join("bin/javap"))
        .args(["-p", "-l", "-s", "-cp"])
        .arg(classes())
        .arg(class)
        .output()
        .expect("javap");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut methods = BTreeMap::new();
    let mut name = String::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let t = line.trim();
        if t.ends_with(';') && t.contains('(') {
            current = None;
            let head = &t[..t.find('(').unwrap()];
            name = head.rsplit(' ').next().unwrap_or("").to_string();
            if name == class {
                name = "<init>".into();
            }
        } else if t == "static {};" {
            current = None;
            name = "<clinit>".into();
        } else if let Some(d) = t.strip_prefix("descriptor: ") {
            if d.starts_with('(') {
                current = Some((name.clone(), d.to_string()));
                methods.insert(current.clone().unwrap(), Vec::new());
            }
        } else if let Some(rest) = t.strip_prefix("line ") {
            let (line, start) = rest.split_once(": ").expect("line entry");
            if let Some(m) = &current {
                let v: &mut Vec<(u32, u32)> = methods.get_mut(m).unwrap();
                v.push((start.parse().unwrap(), line.parse().unwrap()));
            }
        }
    }
    methods
}

/// A holder whose class overrides getId() (claiming main's ID) is still named as the owner of
/// each monitor it makes a thread block on. On JDK 17, where ThreadInfo takes IDs from
/// getId(), jlive says it asks at a safepoint instead; on JDK 25 (the final threadId()) it
/// reads every owner from the contender's ThreadInfo.
#[test]
fn an_owner_whose_class_overrides_get_id_is_still_the_owner() {
    for jdk in jdks() {
        let dir = scratch("ownid");
        let (file, log) = (dir.join("t"), dir.join("log"));
        let options = format!("format=orca,file={},log={}", file.display(), log.display());
        let run = java(&jdk, Some(&options), &["OwnId", "3"]);
        assert_eq!(run.code, Some(0), "{}: {}", jdk.name, run.stderr);
        let mut want = printed(&run.stdout).monitors;
        assert_eq!(want.len(), 3, "{}: {}", jdk.name, run.stdout);
        let monitors: BTreeSet<u32> = want.iter().map(|m| m.0).collect();
        let trace = read_trace(&file);
        let contended: Vec<(u32, u32)> = trace
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::Sync(s) if s.kind == SyncKind::ContendedEnter => Some((s.object, s.owner)),
                _ => None,
            })
            .collect();
        let mut got: Vec<(u32, u32)> = contended
            .iter()
            .filter(|(m, _)| monitors.contains(m))
            .copied()
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "{}: contended monitors and owners", jdk.name);
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(!log.contains("warning:"), "{}: {}", jdk.name, log);
        let said = log.contains("OwnId$Liar; overrides Thread.getId()");
        let jdk17 = jdk.name == "jdk17";
        assert_eq!(said, jdk17, "{}: {}", jdk.name, log);
        // JDK 17: the three asked at a safepoint; JDK 25: the three read from ThreadInfo. The
        // JDK's own code may contend once more (a thread ending while main joins it, whose
        // ThreadInfo is gone): only those may have been found the other way.
        let (read, asked) = owners_found(&log);
        let (expected, other) = if jdk17 { (asked, read) } else { (read, asked) };
        let more = contended.len() as u64 - 3;
        assert!(
            expected >= 3 && other <= more && read + asked == contended.len() as u64,
            "{}: {} contentions: {}",
            jdk.name,
            contended.len(),
            log
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn the_meta_log_gives_the_line_tables_that_javap_prints() {
    let jdk = &jdks()[0];
    let dir = scratch("orca-meta");
    let file = dir.join("t");
    let run = java(
        jdk,
        Some(&format!("format=orca,file={}", file.display())),
        &["Concurrency", "50", "1"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let meta = std::fs::read_to_string(dir.join("t.meta")).expect("meta log");
    let javap = javap_lines("Concurrency");
    let mut compared = 0;
    for line in meta.lines() {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 5 || f[3] != "LConcurrency;" {
            continue;
        }
        let count: i64 = f[4].parse().expect("count");
        let table: Vec<(u32, u32)> = f[5..]
            .chunks(2)
            .map(|p| {
                (
                    u32::from_str_radix(p[0], 16).unwrap(),
                    p[1].parse().unwrap(),
                )
            })
            .collect();
        assert_eq!(count as usize, table.len(), "{}", line);
        let want = &javap[&(f[1].to_string(), f[2].to_string())];
        assert_eq!(&table, want, "{}.{}{}", f[3], f[1], f[2]);
        compared += 1;
    }
    assert!(
        compared >= 4,
        "only {} methods of Concurrency compared:\n{}",
        compared,
        meta
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bursts driven over the control socket: each holds exactly the notifies and sleeps of the
/// phase it covered, the phase between them is nowhere, and the log passes `jlive check`.
#[test]
fn orca_bursts_hold_exactly_the_phases_they_cover() {
    for jdk in jdks() {
        let dir = scratch("orca-bursts");
        let (socket, file) = (dir.join("c.sock"), dir.join("t"));
        let options = format!(
            "start=paused,format=orca,control={},file={}",
            socket.display(),
            file.display()
        );
        let mut jvm = Driven::start(&jdk, &options, "Phases");
        ok(&socket, &["start"]);
        jvm.phase(1);
        ok(&socket, &["stop"]);
        jvm.phase(2);
        ok(&socket, &["start"]);
        jvm.phase(3);
        ok(&socket, &["stop"]);
        jvm.quit();
        let trace = read_trace(&file);
        let mut counts: BTreeMap<SyncKind, u64> = BTreeMap::new();
        for (_, e) in &trace.events {
            if let Event::Sync(s) = e {
                if s.stack
                    .iter()
                    .any(|f| trace.class_name(f.method.class) == "Phases")
                {
                    *counts.entry(s.kind).or_default() += 1;
                }
            }
        }
        // Phases 1 and 3: 10 and 30 notifies, 1 and 3 sleeps; phase 2's 20 and 2 nowhere.
        let want = BTreeMap::from([
            (SyncKind::Notify, 40),
            (SyncKind::Sleep, 4),
            (SyncKind::Slept, 4),
        ]);
        assert_eq!(counts, want, "{}", jdk.name);
        let check = jlive_ok(&[&"check", &file]);
        assert!(check.contains("ok:"), "{}", check);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// monitors=on beside method tracing: TPTP (binary and XML) carries every concurrency event of
/// the program with its stack, objects named by ID (each contention on one of the program's
/// Concurrency$Monitor objects, its owner a holder thread), and the XML is valid against
/// trace.dtd; JinsightLive carries the contentions, as MONITOR_CONTENTION, exactly the
/// program's on its Monitor objects.
#[test]
fn monitors_on_writes_the_programs_events_into_tptp_and_its_contentions_into_jinsightlive() {
    let setups = [
        ("tptp", "bci"),
        ("tptp-xml", "events"),
        ("binary", "bci"),
        ("binary", "events"),
    ];
    for jdk in jdks() {
        for (format, capture) in setups {
            let dir = scratch("monitors");
            let file = dir.join("t");
            let options = format!(
                "format={},monitors=on,capture={},file={}",
                format,
                capture,
                file.display()
            );
            let run = java(&jdk, Some(&options), &["Concurrency", "200", "5"]);
            let what = format!("{} format={} capture={}", jdk.name, format, capture);
            assert_eq!(run.code, Some(0), "{}: {}", what, run.stderr);
            assert!(!run.stderr.contains("jlive:"), "{}: {}", what, run.stderr);
            let p = printed(&run.stdout);
            let trace = read_trace(&file);
            let mut class_of = BTreeMap::new();
            for (_, e) in &trace.events {
                if let Event::ObjectDefine(o) | Event::Alloc { object: o, .. } = e {
                    class_of.insert(o.object, trace.class_name(o.class));
                }
            }
            let on_monitor = |s: &jlive_writer::model::Sync| {
                class_of.get(&s.object_id).map(String::as_str) == Some("Concurrency$Monitor")
            };
            let contentions: Vec<&jlive_writer::model::Sync> = trace
                .events
                .iter()
                .filter_map(|(_, e)| match e {
                    Event::Sync(s) if s.kind == SyncKind::ContendedEnter && on_monitor(s) => {
                        Some(&**s)
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(contentions.len(), 5, "{}: contentions", what);
            if format == "binary" {
                continue;
            }
            assert_eq!(program_events(&trace, on_monitor), expected(&p), "{}", what);
            for s in contentions {
                let owner = s.owner_thread.map(|t| trace.thread_name(t));
                assert!(
                    owner.as_deref().is_some_and(|o| o.starts_with("holder-")),
                    "{}: owner {:?}",
                    what,
                    owner
                );
            }
            if format == "tptp-xml" {
                assert_valid_tptp_xml(&file, &what);
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
