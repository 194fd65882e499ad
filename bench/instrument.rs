//! The rewriter's cost per class, without a JVM: instruments every .class file under the
//! given directories (e.g. an unpacked jar) and prints classes, methods, skips and µs per
//! class (the median of 5 passes over all classes: one pass is ~0.1 s, and this machine is
//! noisy). Also a smoke test of the rewriter on code no one here wrote.
//!
//! cargo run --release --example instrument -- DIR...

use jlive_bci::rewrite::{instrument, Weave};
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

/// One pass over every class; seconds.
fn pass(classes: &[Vec<u8>], weave: Weave) -> f64 {
    let start = Instant::now();
    for c in classes {
        let _ = std::hint::black_box(instrument(c, 0, weave));
    }
    start.elapsed().as_secs_f64()
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
            critical: false,
            leaves: true,
        },
    ] {
        let mut passes: Vec<f64> = (0..4).map(|_| pass(&classes, weave)).collect();
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
        passes.push(start.elapsed().as_secs_f64());
        passes.sort_by(f64::total_cmp);
        let secs = passes[passes.len() / 2];
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
