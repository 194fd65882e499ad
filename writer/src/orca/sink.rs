//! Model events → ORCA's two logs (layout in `mod.rs`). Only threads and concurrency events
//! are written; method, object and GC events have no ORCA form and are passed over.

use crate::gzip::Out;
use crate::model::{ClassDef, ClassId, Ending, Event, MethodId, Sink, SyncKind, TraceInfo};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

pub struct OrcaSink {
    out: io::BufWriter<Out>,
    meta_path: String,
    mode: Option<u32>,
    start_ticks: u64,
    ticks_per_microsecond: u64,
    /// Thread ID → (hash, name).
    threads: HashMap<u32, (u32, String)>,
    classes: HashMap<ClassId, Box<ClassDef>>,
    /// Method → its ORCA number; the methods in number order.
    numbers: HashMap<MethodId, u32>,
    methods: Vec<MethodId>,
    /// Declaring classes of the numbered methods, in order of first use.
    used_classes: Vec<ClassId>,
    meta_written: usize,
    line: String,
    events: u64,
    bytes: u64,
}

impl OrcaSink {
    pub fn new(out: Out, path: &str, info: &TraceInfo, mode: Option<u32>) -> io::Result<Self> {
        let sink = OrcaSink {
            out: io::BufWriter::with_capacity(1 << 16, out),
            meta_path: super::meta_path(path),
            mode,
            start_ticks: info.start_ticks,
            ticks_per_microsecond: u64::from(info.ticks_per_microsecond.max(1)),
            threads: HashMap::new(),
            classes: HashMap::new(),
            numbers: HashMap::new(),
            methods: Vec::new(),
            used_classes: Vec::new(),
            meta_written: usize::MAX,
            line: String::with_capacity(256),
            events: 0,
            bytes: 0,
        };
        // An empty meta log from the start: a run with no event still has both files.
        sink.write_meta()?;
        Ok(sink)
    }

    fn seconds(&mut self, ticks: u64) {
        let delta = u128::from(ticks.saturating_sub(self.start_ticks));
        let ns = delta * 1000 / u128::from(self.ticks_per_microsecond);
        let _ = write!(
            self.line,
            "{}.{:09}",
            ns / 1_000_000_000,
            ns % 1_000_000_000
        );
    }

    fn number(&mut self, method: MethodId) -> u32 {
        if let Some(&n) = self.numbers.get(&method) {
            return n;
        }
        self.methods.push(method);
        let n = self.methods.len() as u32;
        self.numbers.insert(method, n);
        if !self.used_classes.contains(&method.class) {
            self.used_classes.push(method.class);
        }
        n
    }

    fn end_line(&mut self) -> io::Result<()> {
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())?;
        self.bytes += self.line.len() as u64;
        self.events += 1;
        self.line.clear();
        Ok(())
    }

    fn thread_hash(&self, thread: u32) -> u32 {
        self.threads.get(&thread).map_or(0, |t| t.0)
    }

    /// The meta log as it stands, written anew (through a temporary file, so that a reader
    /// never sees half of it).
    fn write_meta(&self) -> io::Result<()> {
        let mut text = String::new();
        for class in &self.used_classes {
            if let Some(c) = self.classes.get(class) {
                let _ = writeln!(text, "{},{}", signature(&c.name), c.source_file);
            }
        }
        for (i, m) in self.methods.iter().enumerate() {
            let Some(c) = self.classes.get(&m.class) else {
                continue;
            };
            let Some(def) = c.methods.get(usize::from(m.index)) else {
                continue;
            };
            let _ = write!(
                text,
                "{:08X},{},{},{},",
                i + 1,
                def.name,
                def.signature,
                signature(&c.name)
            );
            if def.lines.is_empty() {
                text.push_str("-1");
            } else {
                let _ = write!(text, "{}", def.lines.len());
                for l in &def.lines {
                    let _ = write!(text, ",{:08X},{}", l.start, l.line);
                }
            }
            text.push('\n');
        }
        let temporary = format!("{}.part", self.meta_path);
        {
            let mut f = crate::file::create(&temporary, self.mode)?;
            f.write_all(text.as_bytes())?;
        }
        std::fs::rename(&temporary, &self.meta_path)
    }

    fn meta_size(&self) -> usize {
        self.methods.len() + self.used_classes.len()
    }
}

/// `java/lang/Object` → `Ljava/lang/Object;` (array classes are signatures already).
fn signature(name: &str) -> String {
    if name.starts_with('[') {
        name.to_string()
    } else {
        format!("L{};", name)
    }
}

/// A name on one line of its own kind: no line breaks.
fn one_line(name: &str) -> String {
    name.replace(['\n', '\r'], " ")
}

impl Sink for OrcaSink {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        match event {
            Event::ThreadDefine(t) => {
                self.threads.insert(t.id, (t.hash, one_line(&t.name)));
            }
            Event::ClassDefine(c) => {
                self.classes.insert(c.id, c.clone());
            }
            Event::ThreadStart { ticks, thread } => {
                self.seconds(*ticks);
                let (hash, name) = self.threads.get(thread).cloned().unwrap_or_default();
                let _ = write!(self.line, ",ThreadStarted,{:08X},{}", hash, name);
                self.end_line()?;
            }
            Event::ThreadEnd { ticks, thread } => {
                self.seconds(*ticks);
                let hash = self.thread_hash(*thread);
                let _ = write!(self.line, ",ThreadEnded,{:08X}", hash);
                self.end_line()?;
            }
            Event::Sync(s) => {
                self.seconds(s.ticks);
                let _ = write!(self.line, ",{},{:08X}", s.kind.name(), s.thread_hash);
                if s.kind.has_object() {
                    let _ = write!(self.line, ",{:08X}", s.object);
                }
                if s.kind == SyncKind::ContendedEnter {
                    let _ = write!(self.line, ",{:08X}", s.owner);
                }
                let _ = write!(self.line, ",{}", s.stack.len());
                for f in &s.stack {
                    let n = self.number(f.method);
                    let _ = write!(self.line, ",{:016X},{:016X}", n, f.location as u64);
                }
                self.end_line()?;
            }
            // ORCA logs threads and concurrency events only.
            Event::VmInit { .. }
            | Event::VmDeath { .. }
            | Event::BurstBegin { .. }
            | Event::BurstEnd { .. }
            | Event::ObjectDefine(_)
            | Event::MethodEnter(_)
            | Event::MethodLeave(_)
            | Event::Alloc { .. }
            | Event::ContextEnter(_)
            | Event::ContextLeave { .. }
            | Event::Free { .. }
            | Event::GcStart { .. }
            | Event::GcFinish { .. }
            | Event::UserEvent { .. }
            | Event::Values(_)
            | Event::Heap { .. } => {}
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        if self.meta_size() != self.meta_written {
            self.write_meta()?;
            self.meta_written = self.meta_size();
        }
        Ok(())
    }

    fn finish(&mut self, _ending: &Ending) -> io::Result<()> {
        self.out.flush()?;
        self.write_meta()?;
        self.meta_written = self.meta_size();
        Ok(())
    }

    fn events(&self) -> u64 {
        self.events
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }
}
