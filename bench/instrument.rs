//! The rewriter's cost per class, without a JVM: instruments every .class file under the
//! given directories (e.g. an unpacked jar) and prints classes, methods, skips and µs per
//! class. Also a smoke test of the rewriter on code no one here wrote.
//!
//! cargo run --release --example instrument -- DIR...

use jlive::bci::rewrite::{instrument, Weave};
use std::path::Path;
use std::time::Instant;

fn walk(dir: &Path, out: &mut Vec<Vec<u8>>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "class") {
            out.push(std::fs::read(&p).unwrap());
        }
    }
}

fn main() {
    let mut classes = Vec::new();
    for d in std::env::args().skip(1) {
        walk(Path::new(&d), &mut classes);
    }
    for weave in [
        Weave::default(),
        Weave {
            objects: true,
            alloc: true,
            wrap_natives: true,
            inlinable: false,
        },
    ] {
        let (mut methods, mut skipped, mut failed, mut bytes) = (0u64, 0u64, 0u64, 0usize);
        let start = Instant::now();
        for c in &classes {
            match instrument(c, 0, weave) {
                Ok(o) => {
                    methods += u64::from(o.instrumented);
                    skipped += o.skipped.len() as u64;
                    bytes += o.bytes.len();
                    for (m, why) in o.skipped.iter().take(2) {
                        eprintln!("skipped {}.{}: {}", o.name, m, why);
                    }
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("failed: {}", e);
                }
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{:?}: {} classes, {} methods instrumented, {} skipped, {} failed, {:.1} us per class, {:.1} MB out",
            weave,
            classes.len(),
            methods,
            skipped,
            failed,
            secs * 1e6 / classes.len().max(1) as f64,
            bytes as f64 / 1e6
        );
    }
}
