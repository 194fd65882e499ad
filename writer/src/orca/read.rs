//! ORCA logs → model events. The meta log (when the caller put it in front, see
//! [`super::open_with_meta`]) becomes one class definition per declaring class, its methods
//! in the meta log's order; the event log becomes one burst. A thread is defined the first
//! time a line names it as the thread it happens on, with the name of its ThreadStarted; a
//! thread ID is its number in that order. Times are read as nanoseconds (1000 ticks per µs).
//! Positions are line numbers of what the reader was given.

use super::{EVENTS_BEGIN, META_BEGIN};
use crate::codec::{fail, DecodeError, EventReader};
use crate::format::Format;
use crate::model::*;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read};

pub struct Reader<R: Read> {
    lines: std::io::Lines<BufReader<R>>,
    line: usize,
    info: TraceInfo,
    pending: VecDeque<(usize, Event)>,
    /// ORCA method number → method, and its line table.
    methods: HashMap<u64, (MethodId, MethodDef)>,
    described: bool,
    threads: HashMap<u32, ThreadId>,
    started: bool,
    ended: bool,
    last_ticks: u64,
}

pub fn reader<R: Read>(r: R) -> Result<Reader<R>, DecodeError> {
    let mut reader = Reader {
        lines: BufReader::new(r).lines(),
        line: 0,
        info: TraceInfo {
            ticks_per_microsecond: 1000,
            ..TraceInfo::default()
        },
        pending: VecDeque::new(),
        methods: HashMap::new(),
        described: false,
        threads: HashMap::new(),
        started: false,
        ended: false,
        last_ticks: 0,
    };
    reader.read_meta()?;
    Ok(reader)
}

/// A hash code field: 8 hex digits.
fn hash(at: usize, field: Option<&str>, what: &str) -> Result<u32, DecodeError> {
    match field {
        Some(f) if f.len() == 8 => u32::from_str_radix(f, 16)
            .or_else(|_| fail(at, true, format!("{} {:?} is not 8 hex digits", what, f))),
        Some(f) => fail(at, true, format!("{} {:?} is not 8 hex digits", what, f)),
        None => fail(at, true, format!("no {}", what)),
    }
}

fn hex(at: usize, field: Option<&str>, what: &str) -> Result<u64, DecodeError> {
    let Some(f) = field else {
        return fail(at, true, format!("no {}", what));
    };
    u64::from_str_radix(f, 16).or_else(|_| fail(at, true, format!("{} {:?} is not hex", what, f)))
}

fn decimal<T: std::str::FromStr>(
    at: usize,
    field: Option<&str>,
    what: &str,
) -> Result<T, DecodeError> {
    match field.map(str::parse) {
        Some(Ok(v)) => Ok(v),
        _ => fail(
            at,
            true,
            format!("{} {:?} is not a number", what, field.unwrap_or("")),
        ),
    }
}

/// `Lpkg/Name;` → `pkg/Name` (array signatures stay).
fn class_name(signature: &str) -> String {
    match signature
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
    {
        Some(name) => name.to_string(),
        None => signature.to_string(),
    }
}

/// Seconds with their decimals → nanoseconds.
fn seconds(at: usize, field: &str) -> Result<u64, DecodeError> {
    let (whole, fraction) = field.split_once('.').unwrap_or((field, ""));
    let bad = || fail(at, true, format!("time {:?} is not seconds", field));
    if whole.is_empty() || fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return bad();
    }
    let Ok(s) = whole.parse::<u64>() else {
        return bad();
    };
    let digits = format!("{:0<9}", fraction);
    let ns: u64 = digits.parse().unwrap_or(0);
    Ok(s.saturating_mul(1_000_000_000).saturating_add(ns))
}

impl<R: Read> Reader<R> {
    fn next_line(&mut self) -> Result<Option<String>, DecodeError> {
        match self.lines.next() {
            None => Ok(None),
            Some(Ok(l)) => {
                self.line += 1;
                Ok(Some(l))
            }
            Some(Err(e)) => fail(self.line + 1, true, format!("cannot read: {}", e)),
        }
    }

    /// The meta log in front, if there is one: classes, then methods.
    fn read_meta(&mut self) -> Result<(), DecodeError> {
        let first = match self.next_line()? {
            Some(l) if l == META_BEGIN => l,
            Some(l) => {
                // No meta log: the line is the first event.
                let at = self.line;
                self.event_line(at, &l)?;
                return Ok(());
            }
            None => return Ok(()),
        };
        let _ = first;
        self.described = true;
        let mut classes: Vec<ClassDef> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        let class_of =
            |classes: &mut Vec<ClassDef>, by_name: &mut HashMap<String, usize>, name: String| {
                *by_name.entry(name.clone()).or_insert_with(|| {
                    classes.push(ClassDef {
                        id: classes.len() as ClassId,
                        name,
                        ..ClassDef::default()
                    });
                    classes.len() - 1
                })
            };
        while let Some(l) = self.next_line()? {
            let at = self.line;
            if l == EVENTS_BEGIN {
                break;
            }
            if l.is_empty() {
                continue;
            }
            let f: Vec<&str> = l.split(',').collect();
            if f.len() == 2 {
                let c = class_of(&mut classes, &mut by_name, class_name(f[0]));
                classes[c].source_file = f[1].to_string();
                continue;
            }
            if f.len() < 5 {
                return fail(
                    at,
                    true,
                    format!("meta log line {:?} is neither a class nor a method", l),
                );
            }
            let number = hex(at, Some(f[0]), "method ID")?;
            let count: i64 = decimal(at, Some(f[4]), "line table size")?;
            let mut lines = Vec::new();
            if count >= 0 {
                if f.len() != 5 + 2 * count as usize {
                    return fail(
                        at,
                        true,
                        format!(
                            "method {} has {} line table fields for {} entries",
                            f[0],
                            f.len() - 5,
                            count
                        ),
                    );
                }
                for pair in f[5..].chunks(2) {
                    lines.push(Line {
                        start: hex(at, Some(pair[0]), "start location")? as u32,
                        line: decimal(at, Some(pair[1]), "line number")?,
                    });
                }
            } else if count != -1 || f.len() != 5 {
                return fail(
                    at,
                    true,
                    format!("method {} has a line table of {} entries", f[0], count),
                );
            }
            let c = class_of(&mut classes, &mut by_name, class_name(f[3]));
            let index = classes[c].methods.len();
            if index > usize::from(u16::MAX) {
                return fail(at, true, "more than 65535 methods in one class");
            }
            let def = MethodDef {
                name: f[1].to_string(),
                signature: f[2].to_string(),
                access: 0,
                lines,
            };
            classes[c].methods.push(def.clone());
            let method = MethodId {
                class: c as ClassId,
                index: index as u16,
            };
            if self.methods.insert(number, (method, def)).is_some() {
                return fail(at, true, format!("method ID {} described twice", f[0]));
            }
        }
        self.started = true;
        self.pending
            .push_back((1, Event::BurstBegin { ticks: 0, burst: 1 }));
        for c in classes {
            self.pending.push_back((1, Event::ClassDefine(Box::new(c))));
        }
        Ok(())
    }

    fn thread(&mut self, at: usize, ticks: u64, hash: u32, name: &str) -> ThreadId {
        if let Some(&id) = self.threads.get(&hash) {
            return id;
        }
        let id = self.threads.len() as ThreadId + 1;
        self.threads.insert(hash, id);
        let def = ThreadDef {
            ticks,
            id,
            name: name.to_string(),
            hash,
            ..ThreadDef::default()
        };
        self.pending
            .push_back((at, Event::ThreadDefine(Box::new(def))));
        id
    }

    fn event_line(&mut self, at: usize, l: &str) -> Result<(), DecodeError> {
        if l.is_empty() {
            return Ok(());
        }
        if !self.started {
            self.started = true;
            self.pending
                .push_back((at, Event::BurstBegin { ticks: 0, burst: 1 }));
        }
        let mut f = l.splitn(3, ',');
        let ticks = seconds(at, f.next().unwrap_or(""))?;
        self.last_ticks = self.last_ticks.max(ticks);
        let name = f.next().unwrap_or("");
        let rest = f.next().unwrap_or("");
        match name {
            "ThreadStarted" => {
                let (h, thread_name) = rest.split_once(',').unwrap_or((rest, ""));
                let h = hash(at, Some(h), "thread")?;
                let thread = self.thread(at, ticks, h, thread_name);
                self.pending
                    .push_back((at, Event::ThreadStart { ticks, thread }));
            }
            "ThreadEnded" => {
                let h = hash(at, Some(rest), "thread")?;
                let thread = self.thread(at, ticks, h, "");
                self.pending
                    .push_back((at, Event::ThreadEnd { ticks, thread }));
            }
            _ => {
                let Some(kind) = SyncKind::from_name(name) else {
                    return fail(at, true, format!("unknown event {:?}", name));
                };
                let mut f = rest.split(',');
                let thread_hash = hash(at, f.next(), "thread")?;
                let object = if kind.has_object() {
                    hash(at, f.next(), "object")?
                } else {
                    0
                };
                let owner = if kind == SyncKind::ContendedEnter {
                    hash(at, f.next(), "owner thread")?
                } else {
                    0
                };
                let depth: usize = decimal(at, f.next(), "stack depth")?;
                let mut stack = Vec::with_capacity(depth);
                for _ in 0..depth {
                    let number = hex(at, f.next(), "method ID")?;
                    let location = hex(at, f.next(), "location")? as i64;
                    let Some((method, def)) = self.methods.get(&number) else {
                        let why = if self.described {
                            "not described in the meta log"
                        } else {
                            "not described: no meta log (FILE.meta) was found"
                        };
                        return fail(at, true, format!("method ID {:016X} {}", number, why));
                    };
                    stack.push(Frame {
                        method: *method,
                        location,
                        line: def.line_at(location),
                    });
                }
                if f.next().is_some() {
                    return fail(
                        at,
                        true,
                        format!("{} has fields past its stack of {}", name, depth),
                    );
                }
                let thread = self.thread(at, ticks, thread_hash, "");
                let owner_thread = self.threads.get(&owner).copied().filter(|_| owner != 0);
                let sync = Sync {
                    ticks,
                    thread,
                    kind,
                    thread_hash,
                    object,
                    owner,
                    object_id: NO_OBJECT,
                    owner_thread,
                    stack,
                };
                self.pending.push_back((at, Event::Sync(Box::new(sync))));
            }
        }
        Ok(())
    }
}

impl<R: Read> EventReader for Reader<R> {
    fn format(&self) -> Format {
        Format::Orca
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn next_event(&mut self) -> Result<Option<(usize, Event)>, DecodeError> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Ok(Some(e));
            }
            if self.ended {
                return Ok(None);
            }
            match self.next_line()? {
                Some(l) => {
                    let at = self.line;
                    self.event_line(at, &l)?;
                }
                None => {
                    self.ended = true;
                    if self.started {
                        let ticks = self.last_ticks;
                        self.pending
                            .push_back((self.line, Event::BurstEnd { ticks, burst: 1 }));
                    }
                }
            }
        }
    }
}
