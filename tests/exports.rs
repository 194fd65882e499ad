//! `jlive export` into today's viewers: Perfetto's protobuf trace read back by Perfetto's own
//! protobuf classes, and speedscope's JSON checked call by call and opened in speedscope in
//! a headless Chromium.

mod common;

use common::*;
use jlive_writer::model::Event;
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Workers 4: worker-i calls work() 1000 * (i + 1) times.
const WORKERS: [(&str, u64); 4] = [
    ("worker-0", 1000),
    ("worker-1", 2000),
    ("worker-2", 3000),
    ("worker-3", 4000),
];

fn export(trace: &Path, to: &str, out: &Path) {
    jlive_ok(&[&"export", &"--to", &to, &"-o", &out, &trace]);
}

/// A traced run of Workers 4, with the entries each thread made, by its name.
fn workers(dir: &Path) -> (PathBuf, HashMap<String, u64>) {
    let file = dir.join("w.trc");
    let run = java(
        &jdks()[0],
        Some(&format!("file={}", file.display())),
        &["Workers", "4"],
    );
    assert!(run.stdout.starts_with("workers=4 "), "{}", run.stderr);
    let trace = read_trace(&file);
    let mut entries = HashMap::new();
    for (_, e) in &trace.events {
        if let Event::MethodEnter(m) = e {
            *entries.entry(trace.thread_name(m.thread)).or_insert(0) += 1;
        }
    }
    (file, entries)
}

/// Each thread's self time in folded stacks (`--to collapsed`), in ns, and its lines.
fn folded_self_time(trace: &Path) -> HashMap<String, (u64, u64)> {
    let folded = jlive_ok(&[&"export", &"--to", &"collapsed", &trace]);
    let mut per = HashMap::new();
    for line in folded.lines() {
        let (stack, weight) = line.rsplit_once(' ').unwrap();
        let thread = stack.split(';').next().unwrap().to_string();
        let (ns, lines) = per.entry(thread).or_insert((0, 0));
        *ns += weight.parse::<u64>().unwrap();
        *lines += 1;
    }
    per
}

#[test]
fn the_perfetto_export_reads_back_with_a_slice_per_call_on_each_threads_track() {
    let python = Command::new("python3")
        .args([
            "-c",
            "import perfetto.protos.perfetto.trace.perfetto_trace_pb2",
        ])
        .status();
    if !python.map(|s| s.success()).unwrap_or(false) {
        panic!("Perfetto's protobuf classes are missing: pip3 install perfetto (.ci/run does)");
    }
    let dir = scratch("perfetto");
    let (trace, entries) = workers(&dir);
    let out = dir.join("w.pftrace");
    export(&trace, "perfetto", &out);
    let summary = perfetto_summary(&out);
    assert_eq!(summary["broken"], Value::Array(vec![]), "Perfetto's rules");
    for (worker, calls) in WORKERS {
        assert_eq!(
            summary["slices"][worker]["Workers.work"], calls,
            "{}",
            worker
        );
    }
    // Every thread's slices are its entries.
    for (thread, n) in &entries {
        let slices: u64 = summary["slices"][thread]
            .as_object()
            .unwrap_or_else(|| panic!("a track for {}", thread))
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(slices, *n, "{}", thread);
    }
    let instants: Vec<&str> = summary["instants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(instants.contains(&"burst 1 begins") && instants.contains(&"burst 1 ends"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// speedscope's static page from its npm package (.ci/run installs it into target/viewers).
fn speedscope_page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/viewers/node_modules/speedscope/dist/release")
}

/// Serves `dir` on loopback, forever (the test's process ends it); returns the port.
fn serve(dir: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let mut reader = BufReader::new(&stream);
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let path = line.split(' ').nth(1).unwrap_or("/");
                let path = path.split(['?', '#']).next().unwrap_or("/");
                let file = dir.join(path.trim_start_matches('/'));
                let mut stream = &stream;
                let (status, body) = match std::fs::read(&file) {
                    Ok(body) if !path.contains("..") => ("200 OK", body),
                    _ => ("404 Not Found", Vec::new()),
                };
                let kind = match file.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html",
                    Some("js") => "text/javascript",
                    Some("css") => "text/css",
                    Some("json") => "application/json",
                    Some("wasm") => "application/wasm",
                    _ => "application/octet-stream",
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    status,
                    kind,
                    body.len()
                );
                let _ = stream.write_all(&body);
            });
        }
    });
    port
}

#[test]
fn the_speedscope_export_holds_a_profile_per_thread_and_opens_in_speedscope() {
    let dir = scratch("speedscope");
    let (trace, entries) = workers(&dir);
    let out = dir.join("w.speedscope.json");
    export(&trace, "speedscope", &out);
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).expect("valid JSON");
    assert_eq!(
        doc["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    let profiles = doc["profiles"].as_array().unwrap();
    assert_eq!(
        profiles.len(),
        entries.len(),
        "a profile per thread that made calls"
    );
    let folded = folded_self_time(&trace);
    for p in profiles {
        let name = p["name"].as_str().unwrap();
        assert_eq!(p["type"], "evented");
        assert_eq!(p["unit"], "nanoseconds");
        // speedscope's own rules: times never go back, a close ends the innermost open frame.
        let mut stack: Vec<(u64, u64)> = Vec::new();
        let mut opened: HashMap<&str, u64> = HashMap::new();
        let (mut last, mut traced, mut roots) = (p["startValue"].as_u64().unwrap(), 0, 0);
        for e in p["events"].as_array().unwrap() {
            let (frame, at) = (e["frame"].as_u64().unwrap(), e["at"].as_u64().unwrap());
            assert!(at >= last, "{}: time goes back at {}", name, at);
            last = at;
            match e["type"].as_str().unwrap() {
                "O" => {
                    *opened.entry(frames[frame as usize]).or_insert(0) += 1;
                    stack.push((frame, at));
                }
                "C" => {
                    let (open, since) = stack.pop().expect("a frame to close");
                    assert_eq!(open, frame, "{}: closes its innermost frame", name);
                    if stack.is_empty() {
                        traced += at - since;
                        roots += 1;
                    }
                }
                other => panic!("event type {}", other),
            }
        }
        assert!(stack.is_empty(), "{}: every frame closed", name);
        assert!(last <= p["endValue"].as_u64().unwrap());
        assert_eq!(opened.values().sum::<u64>(), entries[name], "{}", name);
        if let Some((_, calls)) = WORKERS.iter().find(|w| w.0 == name) {
            assert_eq!(opened["Workers.work"], *calls, "{}", name);
        }
        // Its traced time is the thread's in the folded stacks, give or take the rounding
        // to whole ns of each outermost slice and of each folded line.
        let (folded_ns, lines) = folded[name];
        assert!(
            traced.abs_diff(folded_ns) <= 2 * roots + lines,
            "{}: {} ns traced, {} ns folded",
            name,
            traced,
            folded_ns
        );
    }
    // speedscope itself, in a headless Chromium, shows every thread.
    let page = speedscope_page();
    assert!(
        page.join("index.html").exists(),
        "speedscope's page is missing: npm install --prefix target/viewers speedscope@1.25.0 \
         (.ci/run does)"
    );
    let site = scratch("speedscope-site");
    for f in std::fs::read_dir(&page).unwrap().flatten() {
        std::fs::copy(f.path(), site.join(f.file_name())).unwrap();
    }
    std::fs::copy(&out, site.join("w.speedscope.json")).unwrap();
    let port = serve(site.to_path_buf());
    let url = format!(
        "http://127.0.0.1:{}/index.html#profileURL=http://127.0.0.1:{}/w.speedscope.json",
        port, port
    );
    let chromium = |extra: &[&str]| {
        let mut c = Command::new("chromium");
        c.args([
            "--headless",
            "--no-sandbox",
            "--enable-unsafe-swiftshader",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=15000",
            "--window-size=1280,800",
        ])
        .arg(format!(
            "--user-data-dir={}",
            site.join("profile").display()
        ))
        .args(extra)
        .arg(&url);
        run(c)
    };
    let dom = chromium(&["--dump-dom"]).stdout;
    assert!(
        dom.contains("<title>w.trc - speedscope</title>"),
        "speedscope loaded the export: {}",
        dom
    );
    assert!(!dom.contains("Something went wrong"), "{}", dom);
    for thread in entries.keys() {
        assert!(
            dom.contains(&format!("title=\"{}\"", thread)),
            "{} in speedscope's list of profiles",
            thread
        );
    }
    assert!(
        dom.contains(&format!("/{})</span>", profiles.len())),
        "{}",
        dom
    );
    // A picture of it, for a person to look at.
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/viewers/speedscope.png");
    let _ = chromium(&[&format!("--screenshot={}", shot.display())]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&site);
}
