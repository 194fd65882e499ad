//! Bursts on demand: the control socket driven with `jlive ctl`, timed bursts, roll, the Java
//! API, and the socket's defences. Every count is compared with what the program knows.

mod common;

use common::*;
use jlive_writer::format::Format;
use jlive_writer::model::Event;
use jlive_writer::read::Trace;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Per burst (numbered from 1): method name → entries, and the user events.
fn by_burst(trace: &Trace) -> Vec<(HashMap<String, u64>, Vec<String>)> {
    let mut bursts = Vec::new();
    let mut outside = 0;
    for (_, e) in &trace.events {
        match e {
            Event::BurstBegin { .. } => bursts.push((HashMap::new(), Vec::new())),
            Event::MethodEnter(e) => match bursts.last_mut() {
                Some((calls, _)) => *calls.entry(trace.method_name(e.method)).or_insert(0) += 1,
                None => outside += 1,
            },
            Event::UserEvent { text, .. } => {
                if let Some((_, marks)) = bursts.last_mut() {
                    marks.push(text.clone());
                }
            }
            _ => {}
        }
    }
    assert_eq!(outside, 0, "entries outside bursts");
    bursts
}

/// A scratch directory (removed when it is dropped), its control socket and its trace file.
fn scratch_socket(name: &str) -> (Scratch, PathBuf, PathBuf) {
    let dir = scratch(name);
    let (socket, file) = (dir.join("c.sock"), dir.join("t.trc"));
    (dir, socket, file)
}

#[test]
fn two_bursts_hold_exactly_their_phases_and_the_middle_is_nowhere() {
    let setups = jdks().into_iter().flat_map(|jdk| {
        let jdk = std::rc::Rc::new(jdk);
        ["events", "bci"].into_iter().flat_map(move |capture| {
            let jdk = jdk.clone();
            Format::ALL.map(move |format| (jdk.clone(), capture, format))
        })
    });
    for (jdk, capture, format) in setups {
        let (_dir, socket, file) = scratch_socket("bursts");
        let file = file.with_extension(format.extension());
        let options = format!(
            "start=paused,capture={},format={},control={},file={}",
            capture,
            format.name(),
            socket.display(),
            file.display()
        );
        let mut jvm = Driven::start(&jdk, &options, "Phases");
        assert!(ok(&socket, &["status"]).contains("state=paused"));
        ok(&socket, &["start", "phase one"]);
        jvm.phase(1);
        ok(&socket, &["mark", "after phase 1"]);
        ok(&socket, &["stop"]);
        jvm.phase(2);
        ok(&socket, &["start"]);
        jvm.phase(3);
        assert!(ok(&socket, &["status"]).contains("bursts=2"));
        ok(&socket, &["stop"]);
        jvm.quit();
        assert!(!socket.exists(), "the socket is removed at exit");
        let trace = read_trace(&file);
        let bursts = by_burst(&trace);
        let setup = (jdk.name, capture, format);
        assert_eq!(bursts.len(), 2, "{:?}", setup);
        let (one, marks) = &bursts[0];
        assert_eq!(
            one.get("Phases.p1"),
            Some(&1000),
            "{:?}: burst 1 holds phase 1",
            setup
        );
        assert_eq!(marks, &["burst: phase one", "after phase 1"], "{:?}", setup);
        let (three, _) = &bursts[1];
        assert_eq!(
            three.get("Phases.p3"),
            Some(&3000),
            "{:?}: burst 2 holds phase 3",
            setup
        );
        for (calls, _) in &bursts {
            assert_eq!(
                calls.get("Phases.p2"),
                None,
                "{:?}: the untraced phase appears nowhere",
                setup
            );
        }
        assert_eq!(one.get("Phases.p3"), None);
        assert_eq!(three.get("Phases.p1"), None);
    }
}

/// `jlive attach`: a JVM started without any agent gets jlive through its attach mechanism;
/// a burst driven by `jlive ctl` holds exactly the phase it covered, and the program's output
/// is what it would have been. capture=events is refused with the reason (a running JVM keeps
/// method events for agents loaded at start-up) and the JVM runs on; a second attach says
/// jlive is loaded already.
#[test]
fn attach_loads_jlive_into_a_running_jvm_whose_bursts_then_hold_exactly_their_phase() {
    for jdk in jdks() {
        let dir = scratch("attach");
        let (socket, file, err) = (dir.join("c.sock"), dir.join("t.trc"), dir.join("err"));
        let mut jvm = Driven::plain(&jdk, "Phases", &err);
        let pid = jvm.child.id().to_string();
        jvm.phase(1);
        let attach = |options: &[&str]| {
            jlive(
                Command::new(jlive_bin())
                    .arg("attach")
                    .arg(&pid)
                    .args(options),
            )
        };
        let (code, said) = attach(&["capture=events"]);
        assert_ne!(code, 0, "{}: {}", jdk.name, said);
        assert!(said.contains("JVM's stderr"), "{}", said);
        let options = format!("file={},control={}", file.display(), socket.display());
        let (code, said) = attach(&[&options]);
        assert_eq!(code, 0, "{}: {}", jdk.name, said);
        assert!(
            said.starts_with(&format!("jlive attached to {}", pid)),
            "{}",
            said
        );
        assert!(ok(&socket, &["status"]).contains("state=paused"));
        let (code, said) = attach(&[]);
        assert_eq!(code, 0, "{}", said);
        assert!(said.contains("already loaded"), "{}", said);
        ok(&socket, &["start"]);
        jvm.phase(2);
        ok(&socket, &["stop"]);
        jvm.phase(3);
        writeln!(jvm.input, "quit").unwrap();
        assert_eq!(jvm.line(), "value 14000", "the program's own output");
        assert!(jvm.child.wait().unwrap().success());
        let stderr = std::fs::read_to_string(&err).unwrap();
        assert!(
            stderr.contains("capture=events needs JVMTI method entry and exit events"),
            "{}: {}",
            jdk.name,
            stderr
        );
        let trace = read_trace(&file);
        let bursts = by_burst(&trace);
        assert_eq!(bursts.len(), 1, "{}", jdk.name);
        let (calls, _) = &bursts[0];
        assert_eq!(
            calls.get("Phases.p2"),
            Some(&2000),
            "{}: {:?}",
            jdk.name,
            calls
        );
        assert_eq!(calls.get("Phases.p1"), None, "{}", jdk.name);
        assert_eq!(calls.get("Phases.p3"), None, "{}", jdk.name);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `jlive attach` across a PID namespace, as into a container: the JVM is process 1 of its
/// own namespace (`unshare --pid --mount-proc`), reached through /proc by its host pid; the
/// burst driven through the socket path attach prints holds exactly its phase.
#[test]
fn attach_reaches_a_jvm_that_is_process_1_of_its_own_pid_namespace() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/unshare").exists() {
        println!("skipped: a PID namespace needs root and unshare (util-linux)");
        return;
    }
    let jdk = &jdks()[0];
    let dir = scratch("attach-ns");
    let file = dir.join("t.trc");
    let mut c = Command::new("/usr/bin/unshare");
    c.args(["--pid", "--fork", "--mount-proc"])
        .arg(jdk.java())
        .arg("-cp")
        .arg(classes())
        .arg("Phases");
    let mut jvm = Driven::spawn(c);
    // unshare's child is the JVM: its host pid, and 1 inside.
    let children = std::fs::read_to_string(format!(
        "/proc/{}/task/{}/children",
        jvm.child.id(),
        jvm.child.id()
    ))
    .unwrap();
    let pid: u32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid)).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("NStgid:") && l.ends_with("\t1")),
        "{}",
        status
    );
    let (code, said) = jlive(
        Command::new(jlive_bin())
            .arg("attach")
            .arg(pid.to_string())
            .arg(format!("file={}", file.display())),
    );
    assert_eq!(code, 0, "{}", said);
    let socket = said
        .split("--socket ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("attach names the socket: {}", said));
    ok(&socket, &["start"]);
    jvm.phase(2);
    ok(&socket, &["stop"]);
    jvm.phase(3);
    jvm.quit();
    let bursts = by_burst(&read_trace(&file));
    assert_eq!(bursts.len(), 1);
    assert_eq!(
        bursts[0].0.get("Phases.p2"),
        Some(&2000),
        "{:?}",
        bursts[0].0
    );
    assert_eq!(bursts[0].0.get("Phases.p3"), None);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Also: symbolic links planted at both files' paths are replaced, not followed (the files
/// they point to are unchanged), and both files are the user's alone (0600).
#[test]
fn roll_finishes_the_file_and_continues_in_the_next() {
    use std::os::unix::fs::PermissionsExt;
    let jdk = &jdks()[0];
    let (_dir, socket, _) = scratch_socket("roll");
    let pattern = socket.with_file_name("part-%n.trc");
    for n in 0..2 {
        let victim = socket.with_file_name(format!("victim-{}", n));
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, socket.with_file_name(format!("part-{}.trc", n)))
            .unwrap();
    }
    let options = format!(
        "capture=bci,start=paused,control={},file={}",
        socket.display(),
        pattern.display()
    );
    let mut jvm = Driven::start(jdk, &options, "Phases");
    let count = |status: &str, name: &str| -> u64 {
        status
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {} in {}", name, status))
            .parse()
            .unwrap()
    };
    // A JVM started paused runs its classes as they are until the first burst
    // (instrument=auto)...
    let status = ok(&socket, &["status"]);
    assert_eq!(count(&status, "instrumented_classes="), 0, "{}", status);
    let begun = ok(&socket, &["start"]);
    assert!(begun.contains("classes instrumented first"), "{}", begun);
    // ...which instruments Phases' classes and the JDK's before it records; interfaces without
    // code (Runnable, Comparable...) are left as they were; none is padded in a JVM started
    // paused (inline=auto).
    let status = ok(&socket, &["status"]);
    assert!(count(&status, "instrumented_classes=") > 0, "{}", status);
    assert!(count(&status, "unchanged_classes=") > 0, "{}", status);
    assert_eq!(count(&status, "padded_methods="), 0, "{}", status);
    jvm.phase(1);
    let answer = ok(&socket, &["roll"]);
    assert!(answer.ends_with("part-1.trc"), "{}", answer);
    jvm.phase(3);
    ok(&socket, &["flush"]);
    ok(&socket, &["stop"]);
    jvm.quit();
    for n in 0..2 {
        let victim = socket.with_file_name(format!("victim-{}", n));
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "victim-{}", n);
        let meta = std::fs::symlink_metadata(socket.with_file_name(format!("part-{}.trc", n)));
        let meta = meta.unwrap();
        assert!(
            meta.file_type().is_file(),
            "part-{}.trc is a file of its own",
            n
        );
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "part-{}.trc", n);
    }
    let first = by_burst(&read_trace(&socket.with_file_name("part-0.trc")));
    let second = by_burst(&read_trace(&socket.with_file_name("part-1.trc")));
    assert_eq!(
        (first.len(), second.len()),
        (1, 1),
        "the open burst continues in the next file"
    );
    assert_eq!(
        (first[0].0.get("Phases.p1"), first[0].0.get("Phases.p3")),
        (Some(&1000), None)
    );
    assert_eq!(
        (second[0].0.get("Phases.p1"), second[0].0.get("Phases.p3")),
        (None, Some(&3000))
    );
}

/// A file that cannot grow past 1 MiB (`ulimit -f` in sh's 512-byte blocks; HotSpot ignores
/// SIGXFSZ, so the write fails with EFBIG as on a full disk): the burst ends at once, status
/// says why, the program runs on untraced, and the file holds every event before the one the
/// limit cut.
#[test]
fn a_file_that_cannot_grow_ends_the_burst_at_once() {
    let jdk = &jdks()[0];
    let (_dir, socket, file) = scratch_socket("efbig");
    let mut c = Command::new("sh");
    c.arg("-c").arg(format!(
        "ulimit -f 2048; exec {} -agentpath:{}=control={},file={} -cp {} Phases",
        jdk.java().display(),
        agent().display(),
        socket.display(),
        file.display(),
        classes().display()
    ));
    let mut jvm = Driven::spawn(c);
    let mut status = String::new();
    for _ in 0..200 {
        jvm.phase(3);
        status = ok(&socket, &["status"]);
        if status.contains("state=paused") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        status.contains("state=paused") && status.contains("error=\"File too large"),
        "{}",
        status
    );
    jvm.phase(1);
    jvm.quit();
    let data = std::fs::read(&file).unwrap();
    assert!(data.len() <= 1024 * 1024, "{} bytes", data.len());
    let err = jlive_writer::check::check(&data).unwrap_err();
    assert!(err.cut_short, "{}", err);
    let trace = Trace::decode(&data).expect("every whole event decodes");
    assert_eq!(trace.cut_at, Some(err.offset));
    assert!(
        total(&calls(&trace), "Phases.p3").0 > 1000,
        "the calls before the cut"
    );
}

#[test]
fn timed_bursts_open_and_close_on_time() {
    for jdk in jdks() {
        let dir = scratch("timed");
        let file = dir.join("t.trc");
        let run = java(
            &jdk,
            Some(&format!(
                "delay=1s,duration=1s,control=off,file={}",
                file.display()
            )),
            &["Timed", "3000"],
        );
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let trace = read_trace(&file);
        let tpu = f64::from(trace.info.ticks_per_microsecond);
        let ms = |ticks: u64| ticks as f64 / tpu / 1000.0;
        let begins: Vec<u64> = trace
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::BurstBegin { ticks, .. } => Some(*ticks),
                _ => None,
            })
            .collect();
        let ends: Vec<u64> = trace
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::BurstEnd { ticks, .. } => Some(*ticks),
                _ => None,
            })
            .collect();
        assert_eq!((begins.len(), ends.len()), (1, 1), "{}", jdk.name);
        let opened = ms(begins[0] - trace.info.start_ticks);
        let lasted = ms(ends[0] - begins[0]);
        assert!(
            (opened - 1000.0).abs() <= 50.0,
            "{}: opened {:.1} ms after start",
            jdk.name,
            opened
        );
        assert!(
            (lasted - 1000.0).abs() <= 50.0,
            "{}: lasted {:.1} ms",
            jdk.name,
            lasted
        );
        let calls = by_burst(&trace)[0]
            .0
            .get("Timed.tick")
            .copied()
            .unwrap_or(0);
        assert!(
            calls > 1000,
            "{}: ticks traced in the burst: {}",
            jdk.name,
            calls
        );
    }
}

#[test]
fn the_java_api_drives_bursts_and_is_harmless_without_jlive() {
    for jdk in jdks() {
        let dir = scratch("api");
        let file = dir.join("t.trc");
        let classpath = format!("{}:{}", classes().display(), api_jar().display());
        let run_with = |agent: Option<String>| {
            let mut c = Command::new(jdk.java());
            if let Some(a) = agent {
                c.arg(a);
            }
            c.arg("-cp").arg(&classpath).arg("ApiDemo");
            run(c)
        };
        let plain = run_with(None);
        assert_eq!(plain.code, Some(0), "{}", plain.stderr);
        assert_eq!(
            plain.stderr.trim(),
            "tracing false false after false",
            "no-ops without jlive"
        );
        // Under capture=bci the Java API's AllocOn needs allocation sites rewritten, which
        // alloc=on asks for, and rewritten before main runs them (instrument=load: a
        // method already running when the first burst instruments keeps its old code);
        // capture=events sees allocations whenever asked.
        for extra in ["", ",alloc=on,instrument=load", ",capture=events"] {
            let traced = run_with(Some(format!(
                "-agentpath:{}=start=paused,control=off,file={}{}",
                agent().display(),
                file.display(),
                extra
            )));
            let label = format!("{}{}", jdk.name, extra);
            assert_eq!(traced.code, Some(0), "{}", traced.stderr);
            assert_eq!(traced.stdout, plain.stdout, "output unchanged");
            let (said, program): (Vec<&str>, Vec<&str>) = traced
                .stderr
                .lines()
                .partition(|l| l.starts_with("jlive: "));
            assert_eq!(program, ["tracing true true after false"], "{}", label);
            // Without alloc=on, bci says that the burst's allocations go unrecorded.
            let warned = said.iter().any(|l| l.contains("InsTrcTypeAllocOn"));
            assert_eq!(warned, extra.is_empty(), "{}: {:?}", label, said);
            let trace = read_trace(&file);
            let bursts = by_burst(&trace);
            assert_eq!(bursts.len(), 2, "{}", label);
            assert_eq!(bursts[0].0.get("ApiDemo.work"), Some(&100), "{}", label);
            assert_eq!(bursts[0].1, ["burst: api", "halfway"], "{}", label);
            assert_eq!(bursts[1].0.get("ApiDemo.work"), Some(&30), "{}", label);
            let items = created_of(&trace, "ApiDemo$Item").len();
            let expected = if extra.is_empty() { 0 } else { 30 };
            assert_eq!(items, expected, "{}: AllocOn records the 30 Items", label);
        }
    }
}

#[test]
fn another_user_cannot_drive_the_profiler() {
    let jdk = &jdks()[0];
    let (_dir, socket, file) = scratch_socket("nobody");
    let options = format!(
        "start=paused,control={},file={}",
        socket.display(),
        file.display()
    );
    let jvm = Driven::start(jdk, &options, "Phases");
    // Open the socket file itself to everyone: the peer-credential check must still refuse.
    let dir = socket.parent().unwrap();
    for p in [dir, socket.as_path()] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    }
    let out = Command::new(jlive_bin())
        .args(["ctl", "--socket"])
        .arg(&socket)
        .arg("start")
        .uid(65534)
        .gid(65534)
        .output()
        .expect("run jlive ctl as nobody");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(0), "nobody was let in: {}", said);
    assert!(
        said.contains("permission denied") || said.contains("Permission denied"),
        "{}",
        said
    );
    assert!(
        ok(&socket, &["status"]).contains("state=paused"),
        "nobody's command did nothing"
    );
    jvm.quit();
}

#[test]
fn garbage_on_the_socket_leaves_the_jvm_running_and_the_next_command_working() {
    let jdk = &jdks()[0];
    let (_dir, socket, file) = scratch_socket("garbage");
    let options = format!(
        "start=paused,control={},file={}",
        socket.display(),
        file.display()
    );
    let mut jvm = Driven::start(jdk, &options, "Phases");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut sent = 0;
    while sent < 3000 {
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(&socket) else {
            continue;
        };
        s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
        for _ in 0..50 {
            let len = match next() % 20 {
                0 => 100_000, // oversized
                _ => (next() % 300) as usize,
            };
            let line: Vec<u8> = (0..len)
                .map(|_| (next() % 256) as u8)
                .chain(std::iter::once(b'\n'))
                .collect();
            sent += 1;
            if s.write_all(&line).is_err() {
                break; // the agent closed this connection: expected for bad input
            }
        }
    }
    // More clients than it serves, all idle.
    let idle: Vec<_> = (0..20)
        .filter_map(|_| std::os::unix::net::UnixStream::connect(&socket).ok())
        .collect();
    drop(idle);
    std::thread::sleep(Duration::from_millis(200));
    // Random lines may begin with the one-byte commands 1, 2, 3 (start, stop, roll) of the
    // published agent's protocol, so a burst may be open and the file rolled by now.
    let _ = ctl(&socket, &["stop"]);
    ok(&socket, &["start"]);
    jvm.phase(1);
    ok(&socket, &["stop"]);
    let status = ok(&socket, &["status"]);
    let current = status
        .split_whitespace()
        .find_map(|w| w.strip_prefix("file="))
        .unwrap()
        .to_string();
    assert!(
        current.starts_with(file.with_extension("").to_str().unwrap()),
        "{}",
        status
    );
    jvm.quit();
    let bursts = by_burst(&read_trace(Path::new(&current)));
    let last = bursts.last().expect("the burst after the garbage");
    assert_eq!(last.0.get("Phases.p1"), Some(&1000));
}

#[test]
fn tcp_control_is_loopback_only_unless_a_token_guards_it() {
    let jdk = &jdks()[0];
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = java(
        jdk,
        Some(&format!("control=tcp:0.0.0.0:{}", port)),
        &["Fib"],
    );
    assert_ne!(refused.code, Some(0));
    assert!(
        refused.stderr.contains("token=SECRET"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stdout.contains("fib"), "main must not run");

    let dir = scratch("tcp");
    let file = dir.join("t.trc");
    let options = format!(
        "start=paused,control=tcp:0.0.0.0:{},token=s3cret,file={}",
        port,
        file.display()
    );
    let mut jvm = Driven::start(jdk, &options, "Phases");
    let tcp = |args: &[&str]| {
        let out = Command::new(jlive_bin())
            .arg("ctl")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )
    };
    let addr = format!("127.0.0.1:{}", port);
    let (code, answer) = tcp(&["--tcp", &addr, "status"]);
    assert_eq!(code, Some(1), "{}", answer);
    assert!(answer.contains("auth required"), "{}", answer);
    let (code, answer) = tcp(&["--tcp", &addr, "--token", "wrong", "status"]);
    assert_eq!(code, Some(1), "{}", answer);
    let (code, answer) = tcp(&["--tcp", &addr, "--token", "s3cret", "start"]);
    assert_eq!(code, Some(0), "{}", answer);
    // capture=bci says what the first burst instrumented: "(N classes instrumented first...)".
    assert!(answer.starts_with("ok burst 1 begun"), "{}", answer);
    jvm.phase(1);
    // The published agent's one-byte commands, after auth: 2 = stop, answered with 9.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"auth s3cret\n").unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ok authenticated");
    s.write_all(&[2]).unwrap();
    let mut byte = [0u8; 1];
    reader.read_exact(&mut byte).unwrap();
    assert_eq!(byte[0], 9);
    drop(s);
    jvm.phase(2);
    jvm.quit();
    let bursts = by_burst(&read_trace(&file));
    assert_eq!(bursts.len(), 1);
    assert_eq!(
        (bursts[0].0.get("Phases.p1"), bursts[0].0.get("Phases.p2")),
        (Some(&1000), None)
    );
}

#[test]
fn the_default_socket_is_private_listed_and_removed_at_exit() {
    let jdk = &jdks()[0];
    let dir = scratch("auto");
    let file = dir.join("t.trc");
    let jvm = Driven::start(
        jdk,
        &format!("start=paused,file={}", file.display()),
        "Phases",
    );
    let pid = jvm.child.id();
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let tmp = std::env::var_os("TMPDIR").unwrap_or_else(|| "/tmp".into());
    let socket = Path::new(&tmp)
        .join(format!("jlive-{}", uid))
        .join(format!("{}.sock", pid));
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(socket.parent().unwrap()), 0o700, "directory 0700");
    assert_eq!(mode(&socket), 0o600, "socket 0600");
    let list = Command::new(jlive_bin()).arg("list").output().unwrap();
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    let row = listed
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&pid.to_string()));
    let row = row.unwrap_or_else(|| panic!("jlive list misses {}: {}", pid, listed));
    assert!(row.contains("paused") && row.contains("Phases"), "{}", row);
    let out = Command::new(jlive_bin())
        .args(["ctl", "--pid", &pid.to_string(), "status"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok state=paused"));
    jvm.quit();
    assert!(!socket.exists(), "removed at exit");
}

/// A JVM killed with SIGKILL leaves its socket file, with nothing listening on it. The next
/// JVM to start removes those whose pid no process has; `jlive ctl` without --pid passes over
/// the others (here pid 1's, which runs but is no JVM) and finds the one JVM that runs, and
/// says what it passed over once none runs.
#[test]
fn stale_sockets_are_removed_or_passed_over() {
    use std::os::unix::fs::DirBuilderExt;
    let jdk = &jdks()[0];
    let tmp = scratch("tmpdir");
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let dir = tmp.join(format!("jlive-{}", uid));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    let gone = {
        let mut child = Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    };
    // Bound and closed without listening: a connection is refused, as at a killed JVM's.
    let socket = |pid: u32| dir.join(format!("{}.sock", pid));
    for pid in [1, gone] {
        drop(std::os::unix::net::UnixListener::bind(socket(pid)).unwrap());
    }
    let file = tmp.join("t.trc");
    let jvm = Driven::spawn({
        let mut c = Driven::command(
            jdk,
            &format!("start=paused,file={}", file.display()),
            "Phases",
        );
        c.env("TMPDIR", &tmp);
        c
    });
    assert!(!socket(gone).exists(), "the socket of pid {} stayed", gone);
    assert!(socket(1).exists(), "pid 1 runs: its socket stays");
    let in_tmp = |args: &[&str]| jlive(Command::new(jlive_bin()).args(args).env("TMPDIR", &tmp));
    let (code, said) = in_tmp(&["ctl", "status"]);
    assert_eq!(code, 0, "{}", said);
    assert!(said.starts_with("ok state=paused"), "{}", said);
    let (_, listed) = in_tmp(&["list"]);
    let pids: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(pids, [jvm.child.id().to_string()], "{}", listed);
    jvm.quit();
    let (code, said) = in_tmp(&["ctl", "status"]);
    assert_eq!(code, 2, "{}", said);
    assert!(
        said.contains("no running JVM") && said.contains("(1 left by JVMs that are gone)"),
        "{}",
        said
    );
    let (code, listed) = in_tmp(&["list"]);
    assert_eq!(code, 0, "{}", listed);
    assert!(
        listed.contains("no running JVM") && listed.contains("(1 left by JVMs that are gone)"),
        "jlive list with none running: {}",
        listed
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The control thread is a JNI-attached daemon: left attached when it ends, HotSpot counts it
/// as a thread in native code and waits 300 ms for it at every exit. Every thread the JVM
/// saw attached must have detached (or exited) by the time the JVM is gone: in a short
/// program with the JNI trampolines, and on JDK 22+ in one that gives the thread making the
/// FFM downcalls the time to finish (in a shorter one the JVM's exit stops it in Java code,
/// as it stops the JDK's own daemon threads, and does not wait for it).
#[test]
fn the_control_thread_detaches_before_the_jvm_exits() {
    for jdk in jdks() {
        let mut runs = vec![("trampolines=jni", "-Dhot.wait=0", "Fib")];
        if jdk.name != "jdk17" {
            runs.push(("trampolines=auto", "-Dhot.wait=2500", "Hot"));
        }
        for (trampolines, wait, program) in runs {
            let what = format!("{} {}", jdk.name, trampolines);
            let dir = scratch("detach");
            let (log, jlive_log) = (dir.join("threads.log"), dir.join("jlive.log"));
            let options = format!(
                "file={},log={},{}",
                dir.join("t.trc").display(),
                jlive_log.display(),
                trampolines
            );
            let run = java(
                &jdk,
                Some(&options),
                &[
                    &format!("-Xlog:os+thread=info:file={}", log.display()),
                    wait,
                    program,
                ],
            );
            assert_eq!(run.code, Some(0), "{}: {}", what, run.stderr);
            let said = std::fs::read_to_string(&jlive_log).unwrap_or_default();
            if program == "Hot" {
                assert!(
                    said.contains("trampolines: FFM critical downcalls ready in"),
                    "{}: {}",
                    what,
                    said
                );
            }
            let text = std::fs::read_to_string(&log).expect("the thread log");
            // "Thread attached (tid: N, ...", "JavaThread detaching ([name: "x", ]tid: N)."
            let tids = |markers: &[&str]| -> std::collections::HashSet<String> {
                text.lines()
                    .filter(|l| markers.iter().any(|m| l.contains(m)))
                    .filter_map(|l| {
                        let rest = &l[l.find("tid: ")? + 5..];
                        Some(rest.chars().take_while(|c| c.is_ascii_digit()).collect())
                    })
                    .collect()
            };
            let attached = tids(&["Thread attached ("]);
            let gone = tids(&["JavaThread detaching (", "JavaThread exiting ("]);
            let least = if program == "Hot" { 3 } else { 2 };
            assert!(
                attached.len() >= least,
                "{}: the launcher and jlive-control attach (and jlive critical): {}",
                what,
                text
            );
            let stuck: Vec<&String> = attached.difference(&gone).collect();
            assert!(
                stuck.is_empty(),
                "{}: threads never detached: {:?}",
                what,
                stuck
            );
        }
    }
}

/// Field 19 of /proc/PID/task/TID/stat: the thread's nice value (the fields after the command
/// name, which may hold spaces, are counted from its closing parenthesis).
fn nice_of(task: &Path) -> i32 {
    let stat = std::fs::read_to_string(task.join("stat")).expect("read a task's stat");
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    after.split(' ').nth(16).unwrap().parse().unwrap()
}

/// The writer yields to the JVM's own threads: its nice value is 5 above the JVM's main
/// thread's (capped at 19), every other thread keeps the JVM's.
#[test]
fn the_writer_thread_runs_at_a_lower_priority_than_the_jvm() {
    let jdk = &jdks()[0];
    let dir = scratch("nice");
    let jvm = Driven::start(
        jdk,
        &format!("start=paused,file={}", dir.join("t.trc").display()),
        "Phases",
    );
    let tasks = PathBuf::from(format!("/proc/{}/task", jvm.child.id()));
    let mut by_name: HashMap<String, Vec<i32>> = HashMap::new();
    for task in std::fs::read_dir(&tasks).unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        by_name
            .entry(comm.trim().to_string())
            .or_default()
            .push(nice_of(&task.path()));
    }
    jvm.quit();
    let jvm_nice = by_name["java"][0];
    assert_eq!(
        by_name.get("jlive-writer").map(|v| v.as_slice()),
        Some(&[(jvm_nice + 5).min(19)][..]),
        "threads and nice values: {:?}",
        by_name
    );
    for (name, nices) in &by_name {
        if name != "jlive-writer" {
            assert!(
                nices.iter().all(|&n| n == jvm_nice),
                "{}: {:?}",
                name,
                nices
            );
        }
    }
}
