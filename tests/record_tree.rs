//! `record=tree`: each thread's calling-context tree written at each burst's end (TPTP's
//! agMethodEntry/agMethodExit) instead of every entry and exit. Compared with full tracing of
//! the same deterministic program: the same calls in every calling context; the same times
//! when the same events are made into trees (`jlive convert --record tree`); and a file that
//! is a small fraction of the full trace's.

mod common;

use common::*;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// Folded stacks of a trace (`jlive export --to collapsed`), by context: weight.
/// Hidden classes' addresses (`LambdaForm$MH.0x00007f...`) differ from run to run: masked.
fn folded(trace: &Path, weight: &str) -> HashMap<String, u64> {
    let folded = jlive_ok(&[
        &"export",
        &"--to",
        &"collapsed",
        &"--weight",
        &weight,
        &trace,
    ]);
    let mut out = HashMap::new();
    for line in folded.lines() {
        let (context, w) = line.rsplit_once(' ').unwrap();
        let mut masked = String::with_capacity(context.len());
        let mut rest = context;
        while let Some(at) = rest.find("0x") {
            masked.push_str(&rest[..at + 2]);
            rest = rest[at + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        }
        masked.push_str(rest);
        *out.entry(masked).or_insert(0) += w.parse::<u64>().unwrap();
    }
    out
}

fn main_only(f: &HashMap<String, u64>) -> HashMap<String, u64> {
    f.iter()
        .filter(|(k, _)| k.starts_with("main;"))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

#[test]
fn record_tree_keeps_every_calling_context_with_the_calls_and_times_of_full_tracing() {
    let jdk = &jdks()[0];
    let dir = scratch("record-tree");
    let full = dir.join("full.trc");
    let run = java(jdk, Some(&format!("file={}", full.display())), &["Fib"]);
    assert_eq!(run.stdout.trim(), "fib(20) = 6765");
    let by_calls = folded(&full, "calls");
    // The agent's trees, in both TPTP forms (record=tree writes TPTP unless told otherwise).
    for (options, file) in [
        ("record=tree", dir.join("tree.trcbin")),
        ("record=tree,format=tptp-xml", dir.join("tree.trcxml")),
    ] {
        let run = java(
            jdk,
            Some(&format!("{},file={}", options, file.display())),
            &["Fib"],
        );
        assert_eq!(run.stdout.trim(), "fib(20) = 6765", "{}", run.stderr);
        let trace = read_trace(&file);
        assert_eq!(count(&trace, "METHOD_ENTER"), 0, "{}: no entries", options);
        assert!(count(&trace, "CONTEXT_ENTER") > 20, "{}", options);
        let tree = folded(&file, "calls");
        let fib: Vec<u64> = tree
            .iter()
            .filter(|(k, _)| k.starts_with("main;Fib.main;Fib.fib"))
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(fib.len(), 20, "{}: fib's 20 depths", options);
        assert_eq!(fib.iter().sum::<u64>(), 21891, "{}", options);
        // Every calling context of main, with the same calls as in the full trace.
        assert_eq!(main_only(&tree), main_only(&by_calls), "{}", options);
        // Exported, a context is one slice: fib's 20 on main, nested as Perfetto wants.
        let out = dir.join("tree.pftrace");
        jlive_ok(&[&"export", &"--to", &"perfetto", &"-o", &out, &file]);
        let summary = perfetto_summary(&out);
        assert_eq!(summary["broken"], serde_json::json!([]), "{}", options);
        assert_eq!(summary["slices"]["main"]["Fib.fib"], 20, "{}", options);
    }
    // The same events made into trees: the same contexts, calls and self times.
    let converted = dir.join("converted.trcbin");
    jlive_ok(&[&"convert", &"--record", &"tree", &full, &converted]);
    read_trace(&converted);
    assert_eq!(folded(&converted, "calls"), by_calls);
    let (times, tree_times) = (folded(&full, "self"), folded(&converted, "self"));
    for (context, ns) in &times {
        let tree_ns = tree_times.get(context).copied().unwrap_or(0);
        assert!(
            tree_ns.abs_diff(*ns) <= 1 + ns / 50,
            "{}: {} ns in the trace, {} ns in its tree",
            context,
            ns,
            tree_ns
        );
    }
    // JinsightLive has no aggregated form: refused, with the reason.
    let refused = java(
        jdk,
        Some(&format!(
            "record=tree,format=binary,file={}",
            dir.join("x").display()
        )),
        &["Fib"],
    );
    assert_ne!(refused.code, Some(0));
    assert!(refused.stderr.contains("record=tree"), "{}", refused.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Free bytes where `path` is.
fn free_bytes(path: &Path) -> u64 {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: statvfs fills the struct it is given; the path is NUL-terminated.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut s) != 0 {
            return 0;
        }
        s.f_bavail as u64 * s.f_frsize as u64
    }
}

/// h2's script of bench/run.sh (20,000 rows), every method traced by capture=bci: its trees
/// are under 1% of the full TPTP trace, and hold as many calls.
#[test]
fn record_tree_of_h2s_script_is_under_a_hundredth_of_its_full_trace() {
    let jar = Path::new("/usr/share/java/h2.jar");
    assert!(
        jar.is_file(),
        "Debian's h2 is missing: apt-get install -y libh2-java"
    );
    let jdk = &jdks()[0];
    let dir = scratch("record-tree-h2");
    let script = h2_script_of(&dir, 20_000);
    let h2 = |options: String| {
        let mut c = Command::new(jdk.java());
        c.arg(format!("-agentpath:{}={}", agent().display(), options))
            .arg("-cp")
            .arg(jar)
            .args(["org.h2.tools.RunScript", "-url", "jdbc:h2:mem:t", "-script"])
            .arg(&script);
        let r = run(c);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    };
    let tree = dir.join("tree.trcbin");
    h2(format!("capture=bci,record=tree,file={}", tree.display()));
    let tree_trace = read_trace(&tree);
    let tree_size = std::fs::metadata(&tree).unwrap().len();
    // The full trace takes ~5 GB: in memory where there is room for it.
    let shm = Path::new("/dev/shm");
    let place = if free_bytes(shm) > 8 << 30 {
        scratch_in(shm)
    } else {
        dir.to_path_buf()
    };
    if free_bytes(&place) < 8 << 30 {
        println!("skipped the comparison with the full trace: less than 8 GB free for it");
        return;
    }
    let full = place.join("full.trcbin");
    h2(format!("capture=bci,format=tptp,file={}", full.display()));
    let full_size = std::fs::metadata(&full).unwrap().len();
    // Calls, counted in the full trace without keeping it.
    let stats = jlive_ok(&[&"stats", &"--top", &"0", &full]);
    let _ = std::fs::remove_file(&full);
    let full_calls: u64 = stats
        .lines()
        .find(|l| l.trim_start().starts_with("METHOD_ENTER"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .expect("METHOD_ENTER in jlive stats");
    let tree_calls: u64 = tree_trace
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            jlive_writer::model::Event::ContextEnter(c) => Some(c.calls),
            _ => None,
        })
        .sum();
    println!(
        "h2, 20,000 rows: trees {} bytes, full trace {} bytes ({:.2}%); calls {} and {}",
        tree_size,
        full_size,
        100.0 * tree_size as f64 / full_size as f64,
        tree_calls,
        full_calls
    );
    assert!(
        tree_size * 100 < full_size,
        "trees under 1% of the full trace"
    );
    // Two runs of the same script: their calls agree to within a percent (class loading and
    // the JIT's own threads vary a little).
    assert!(
        tree_calls.abs_diff(full_calls) * 100 < full_calls,
        "{} calls in the trees, {} in the full trace",
        tree_calls,
        full_calls
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&place);
}

/// A fresh directory under `parent`.
fn scratch_in(parent: &Path) -> std::path::PathBuf {
    let dir = parent.join(format!("jlive-test-{}-h2-full", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
