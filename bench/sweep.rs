//! The rewriter on every class it is given, under every combination of its options, for an
//! independent verifier (bench/sweep/Verify.java, with ASM's data-flow analysis) to judge.
//! Walks the directories given (unpacked jars, an extracted runtime image) for .class files,
//! instruments each one under each combination of `Weave`'s four switches, and writes every
//! result to stdout as a record:
//!
//! ```text
//! u8 combination (bit 0 objects, 1 alloc, 2 wrap_natives, 3 inlinable)
//! u16 length, origin: the directory under the one given that holds the class (its jar or
//!     module), whose own classes the verifier consults first
//! u16 name length, name (UTF-8, internal form)     u32 length, the instrumented class
//! ```
//!
//! A class the rewriter declines (its error) or leaves whole is counted on stderr, not sent.
//! `--every N` takes one class in N (the CI sample); `--combinations 0,9` only those.
//!
//! cargo run --release --example sweep -- [--every N] [--combinations LIST] DIR... | java ...

use jlive_bci::rewrite::{instrument, Weave};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first component of `path` under `root` (the class's jar or module directory).
fn origin(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .ok()
        .and_then(|p| p.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "class") {
            out.push(p);
        }
    }
}

fn weave(combination: u8) -> Weave {
    Weave {
        objects: combination & 1 != 0,
        alloc: combination & 2 != 0,
        wrap_natives: combination & 4 != 0,
        inlinable: combination & 8 != 0,
        critical: false,
        // As the agent always weaves them.
        leaves: true,
    }
}

#[derive(Default)]
struct Tally {
    classes: u64,
    sent: u64,
    methods: u64,
    skipped: u64,
    declined: u64,
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let mut every = 1usize;
    let mut combinations: Vec<u8> = (0..16).collect();
    let mut dirs = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--every" => every = args.next().and_then(|n| n.parse().ok()).unwrap_or(1),
            "--combinations" => {
                combinations = args
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|c| c.parse().ok())
                    .collect()
            }
            _ => dirs.push(PathBuf::from(a)),
        }
    }
    let mut files = Vec::new();
    for d in &dirs {
        let mut found = Vec::new();
        walk(d, &mut found);
        files.extend(found.into_iter().map(|f| (origin(d, &f), f)));
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut tallies: BTreeMap<u8, Tally> = BTreeMap::new();
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    for (from, path) in files.iter().step_by(every.max(1)) {
        let Ok(class) = std::fs::read(path) else {
            continue;
        };
        for &c in &combinations {
            let t = tallies.entry(c).or_default();
            t.classes += 1;
            match instrument(&class, 0, weave(c)) {
                Ok(o) => {
                    t.methods += u64::from(o.instrumented);
                    t.skipped += o.skipped.len() as u64;
                    for (_, why) in &o.skipped {
                        *reasons.entry(format!("method left: {}", why)).or_default() += 1;
                    }
                    if o.bytes.is_empty() || o.bytes == class {
                        continue;
                    }
                    t.sent += 1;
                    let name = o.name.as_bytes();
                    let written = out
                        .write_all(&[c])
                        .and_then(|()| out.write_all(&(from.len() as u16).to_be_bytes()))
                        .and_then(|()| out.write_all(from.as_bytes()))
                        .and_then(|()| out.write_all(&(name.len() as u16).to_be_bytes()))
                        .and_then(|()| out.write_all(name))
                        .and_then(|()| out.write_all(&(o.bytes.len() as u32).to_be_bytes()))
                        .and_then(|()| out.write_all(&o.bytes));
                    if written.is_err() {
                        eprintln!("sweep: the verifier stopped reading");
                        std::process::exit(1);
                    }
                }
                Err(e) => {
                    t.declined += 1;
                    *reasons.entry(format!("class declined: {}", e)).or_default() += 1;
                }
            }
        }
    }
    let _ = out.flush();
    eprintln!(
        "sweep: {} class files from {} directories",
        files.len().div_ceil(every.max(1)),
        dirs.len()
    );
    for (c, t) in &tallies {
        eprintln!(
            "sweep: {:?}: {} classes, {} sent, {} methods instrumented, {} left as they were, {} classes declined",
            weave(*c),
            t.classes,
            t.sent,
            t.methods,
            t.skipped,
            t.declined
        );
    }
    for (why, n) in &reasons {
        eprintln!("sweep: {:>8}  {}", n, why);
    }
}
