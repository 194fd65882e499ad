//! One run written in every format at once: each file checks, each gives the same figures,
//! the TPTP binary file converted to XML is the XML the agent wrote, and the XML is valid
//! against the DTD written from TPTP's specification. STORE CLOCK ticks on a real JVM.

mod common;

use common::*;
use jlive_writer::check::check;
use jlive_writer::format::Format;
use jlive_writer::model::Event;
use jlive_writer::read::Trace;
use jlive_writer::stats::Stats;
use std::path::Path;
use std::process::Command;

/// What `jlive stats` says of a trace that every format says alike: events by type (thread
/// starts aside: TPTP's threadStart is a thread's definition), threads with their calls, and
/// each method's calls (self times: JinsightLive's header rate is refined at close).
fn figures(trace: &Trace) -> String {
    let stats = Stats::of(trace);
    let mut methods: Vec<(String, u64)> = stats
        .methods
        .iter()
        .map(|m| (m.name.clone(), m.calls))
        .collect();
    methods.sort();
    let mut by_type = stats.by_type.clone();
    by_type.remove("THREAD_START");
    format!("{:?}\n{:?}\n{:?}", by_type, stats.threads, methods)
}

fn jlive(args: &[&str]) -> std::process::Output {
    let out = Command::new(jlive_bin()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "jlive {:?}: {}{}",
        args,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn dtd() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/writer/src/tptp/trace.dtd"
    ))
}

#[test]
fn one_run_in_every_format_gives_the_same_figures_and_converts_to_what_was_written() {
    for jdk in jdks() {
        for capture in ["events", "bci"] {
            let dir = scratch("every-format");
            let options = format!(
                "capture={},alloc=on,gc=on,format=binary;tptp;tptp-xml,file={}",
                capture,
                dir.join("run").display()
            );
            let run = java(&jdk, Some(&options), &["Workers", "3"]);
            assert_eq!(run.code, Some(0), "{}: {}", jdk.name, run.stderr);
            let setup = (jdk.name, capture);
            let mut traces = Vec::new();
            for format in Format::ALL {
                let file = dir.join(format!("run.{}", format.extension()));
                let trace = read_trace(&file);
                assert_eq!(trace.format, format);
                // Workers 3: worker-i calls work() 1000 * (i + 1) times.
                assert_eq!(
                    total(&calls(&trace), "Workers.work"),
                    (6000, 6000),
                    "{:?} {:?}",
                    setup,
                    format
                );
                traces.push(trace);
            }
            for t in &traces[1..] {
                assert_eq!(
                    figures(t),
                    figures(&traces[0]),
                    "{:?} {:?}",
                    setup,
                    t.format
                );
            }
            // Every thread the binary TPTP file defines reads back as started.
            let threads = traces[1].threads.len();
            assert_eq!(count(&traces[1], "THREAD_START"), threads, "{:?}", setup);
            // The binary TPTP file, converted, is the XML file byte for byte.
            let (bin, xml, converted) = (
                dir.join("run.trcbin"),
                dir.join("run.trcxml"),
                dir.join("converted.trcxml"),
            );
            jlive(&["convert", path(&bin), path(&converted)]);
            assert!(
                std::fs::read(&converted).unwrap() == std::fs::read(&xml).unwrap(),
                "{:?}: the converted XML differs from the XML written",
                setup
            );
            assert_valid_tptp_xml(&xml, &format!("{:?}", setup));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// xmllint rejects an element the DTD does not declare, so the validation above can fail.
#[test]
fn the_dtd_rejects_what_it_does_not_declare() {
    let dir = scratch("dtd");
    let file = dir.join("bad.trcxml");
    std::fs::write(
        &file,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<TRACE>\n<methodEntry threadIdRef=\"1\"/>\n</TRACE>\n",
    )
    .unwrap();
    let out = Command::new("xmllint")
        .args(["--noout", "--dtdvalid"])
        .arg(dtd())
        .arg(&file)
        .output()
        .expect("xmllint (apt-get install -y libxml2-utils)");
    assert!(
        !out.status.success(),
        "a methodEntry without its time passed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `platform=linux_390` writes STORE CLOCK ticks: 4096 per microsecond, counted from 1900, in
/// every format; a trace's first tick is the wall-clock time it was taken.
#[test]
fn the_390_platforms_tick_in_store_clock_values() {
    let jdk = &jdks()[0];
    for format in Format::ALL {
        let dir = scratch("stck");
        let file = dir.join(format!("s.{}", format.extension()));
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let options = format!(
            "platform=linux_390,format={},file={}",
            format.name(),
            file.display()
        );
        let run = java(jdk, Some(&options), &["Timing"]);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let data = std::fs::read(&file).unwrap();
        check(&data).unwrap_or_else(|e| panic!("{:?}: {}", format, e));
        let trace = Trace::decode(&data).unwrap();
        let begin = trace
            .events
            .iter()
            .find(|(_, e)| matches!(e, Event::BurstBegin { .. }))
            .map(|(_, e)| e.ticks())
            .unwrap();
        let ns = match format {
            // XML is read back in nanoseconds since 1970.
            Format::TptpXml => begin,
            _ => {
                assert_eq!(trace.info.ticks_per_microsecond, 4096, "{:?}", format);
                jlive_writer::stck::unix_ns(begin)
            }
        };
        assert!(
            ns >= before && ns - before < 60_000_000_000,
            "{:?}: the burst began at {} ns since 1970, the JVM started at {}",
            format,
            ns,
            before
        );
        // Timing measures the time between its marks itself: the ticks say the same.
        let measured_us: f64 = run
            .stderr
            .trim()
            .strip_prefix("elapsed_us=")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("Timing said {:?}", run.stderr));
        let entry = |name: &str| {
            let found = trace.events.iter().find_map(|(_, e)| match e {
                Event::MethodEnter(e) if trace.method_name(e.method) == name => Some(e.ticks),
                _ => None,
            });
            found.unwrap_or_else(|| panic!("no entry of {}", name))
        };
        let ticks = entry("Timing.markB") - entry("Timing.markA");
        let traced_us = ticks as f64 / f64::from(trace.info.ticks_per_microsecond);
        let error = (traced_us - measured_us).abs() / measured_us;
        assert!(
            error < 0.01,
            "{:?}: the trace says {:.0} us, the program measured {:.0} us",
            format,
            traced_us,
            measured_us
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
