//! Model events → TPTP messages, the same for the binary form and the XML form: the file
//! opens with node, processCreate, agentCreate and the agent's options and filters; a burst
//! is traceStart .. traceEnd; a class is classDef and a methodDef per method; the file ends
//! with agentDestroy.

use super::*;
use crate::model::{self, access, Ending, Enter, Event, Leave, ObjectDef, Sink, TraceInfo};
use std::io;

/// What turns messages into a form's bytes.
pub trait Encode {
    fn message(&mut self, m: &Message) -> io::Result<()>;
    /// methodEntry, the hottest message (IDs as TPTP numbers them).
    fn method_entry(&mut self, m: &EntryMessage) -> io::Result<()> {
        self.message(&m.message())
    }
    fn method_exit(&mut self, m: &ExitMessage) -> io::Result<()> {
        self.message(&m.message())
    }
    fn flush(&mut self) -> io::Result<()>;
    /// Ends the file after its last message.
    fn finish(&mut self) -> io::Result<()>;
    fn bytes(&self) -> u64;
}

/// The attributes of a methodEntry that jlive fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryMessage {
    pub thread: u64,
    pub ticks: u64,
    pub method: u64,
    pub ticket: u32,
    /// 0 for a static call.
    pub object: u64,
    pub class: u64,
    pub depth: u64,
}

impl EntryMessage {
    pub fn message(&self) -> Message<'static> {
        Message::new(&METHOD_ENTRY)
            .long("threadIdRef", self.thread)
            .long("time", self.ticks)
            .long("methodIdRef", self.method)
            .set("ticket", Value::Int(self.ticket))
            .long("objIdRef", self.object)
            .long("classIdRef", self.class)
            .long("stackDepth", self.depth)
    }
}

/// The attributes of a methodExit that jlive fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitMessage {
    pub thread: u64,
    pub ticks: u64,
    pub ticket: u32,
    pub method: u64,
    pub class: u64,
}

impl ExitMessage {
    pub fn message(&self) -> Message<'static> {
        Message::new(&METHOD_EXIT)
            .long("threadIdRef", self.thread)
            .long("time", self.ticks)
            .set("ticket", Value::Int(self.ticket))
            .long("methodIdRef", self.method)
            .long("classIdRef", self.class)
    }
}

/// The IDs of a run's node, process and agent.
pub struct RunIds {
    pub node: String,
    pub process: String,
    pub agent: String,
}

impl RunIds {
    /// Made from what a file keeps of the run, so that a file converted gives the same ones.
    pub fn of(info: &TraceInfo) -> RunIds {
        let start = info.wall_ns(info.start_ticks).to_le_bytes();
        let pid = info.pid.to_le_bytes();
        let node = uuid(&[b"node", info.host.as_bytes()]);
        let process = uuid(&[b"process", node.as_bytes(), &pid, &start]);
        let agent = uuid(&[b"agent", process.as_bytes()]);
        RunIds {
            node,
            process,
            agent,
        }
    }

    /// The ID of burst `n`.
    pub fn trace(&self, burst: u32) -> String {
        uuid(&[b"trace", self.agent.as_bytes(), &burst.to_le_bytes()])
    }
}

/// A key and its value, or a glob and its mode.
type Pairs<'a> = Vec<(&'a str, &'a str)>;

/// The agent's options as TPTP option messages (key, value), and its include and exclude
/// globs as filters (pattern, mode).
pub fn options_of(options: &str) -> (Pairs<'_>, Pairs<'_>) {
    let mut pairs = Vec::new();
    let mut filters = Vec::new();
    for item in options.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = item.split_once('=').unwrap_or((item, ""));
        pairs.push((key, value));
        let mode = match key {
            "include" => "INCLUDE",
            "exclude" => "EXCLUDE",
            _ => continue,
        };
        for glob in value.split(';').map(str::trim).filter(|g| !g.is_empty()) {
            filters.push((glob, mode));
        }
    }
    (pairs, filters)
}

/// Writes a TPTP trace in the form `E` gives it.
pub struct TptpSink<E: Encode> {
    enc: E,
    ids: RunIds,
    /// The ID of the open burst.
    trace: String,
    /// By class ID: the TPTP ID of its method 0.
    methods: Vec<u64>,
    next_method: u64,
    /// By class ID: its name, for the superclass and interfaces of later classes.
    names: Vec<String>,
    events: u64,
    finished: bool,
}

/// The most class IDs the sink keeps tables for (a file converted from another format could
/// name any).
pub const MAX_CLASSES: u32 = 1 << 24;

impl<E: Encode> TptpSink<E> {
    /// Starts the trace of the run `info` describes: node, processCreate, agentCreate, the
    /// agent's options and filters.
    pub fn new(enc: E, info: &TraceInfo) -> io::Result<Self> {
        let mut sink = TptpSink {
            enc,
            ids: RunIds::of(info),
            trace: String::new(),
            methods: Vec::new(),
            next_method: 1,
            names: Vec::new(),
            events: 0,
            finished: false,
        };
        let t = info.start_ticks;
        let pid = info.pid;
        let node = Message::new(&NODE)
            .str("nodeId", sink.ids.node.clone())
            .str("hostname", without_nul(&info.host).into_owned())
            .long("time", t);
        let process = Message::new(&PROCESS_CREATE)
            .str("processId", sink.ids.process.clone())
            .set("pid", Value::Int(pid))
            .str("nodeIdRef", sink.ids.node.clone())
            .long("time", t);
        let agent = Message::new(&AGENT_CREATE)
            .str("agentId", sink.ids.agent.clone())
            .str("processIdRef", sink.ids.process.clone())
            .str("agentName", "jlive")
            .str("agentType", "Profiler")
            .long("time", t)
            .str("agentParameters", without_nul(&info.options).into_owned())
            .str("version", env!("CARGO_PKG_VERSION"));
        for m in [node, process, agent] {
            sink.write(&m)?;
        }
        let (pairs, filters) = options_of(&info.options);
        for (key, value) in pairs {
            let m = Message::new(&OPTION)
                .str("key", without_nul(key))
                .str("value", without_nul(value));
            sink.write(&m)?;
        }
        for (pattern, mode) in filters {
            let m = Message::new(&FILTER)
                .str("pattern", without_nul(pattern))
                .str("genericPattern", "NONE")
                .str("mode", mode)
                .str("methodPattern", "*")
                .str("methodGenericPattern", "NONE")
                .str("methodMode", mode);
            sink.write(&m)?;
        }
        Ok(sink)
    }

    /// The underlying form, once the file is finished.
    pub fn into_inner(self) -> E {
        self.enc
    }

    fn write(&mut self, m: &Message) -> io::Result<()> {
        self.events += 1;
        self.enc.message(m)
    }

    /// The TPTP ID of a method.
    /// A concurrency event, with its stack as method IDs and source lines.
    fn sync(&self, s: &model::Sync) -> Message<'static> {
        let mut m = Message::new(sync_element(s.kind))
            .long("threadIdRef", u64::from(s.thread))
            .long("time", s.ticks);
        if s.kind.has_object() && s.object_id != model::NO_OBJECT {
            m = m.long("objIdRef", u64::from(s.object_id));
        }
        if let Some(owner) = s.owner_thread {
            m = m.long("threadOwnerIdRef", u64::from(owner));
        }
        let methods: Vec<String> = s
            .stack
            .iter()
            .map(|f| self.method_id(f.method).to_string())
            .collect();
        let lines: Vec<String> = s.stack.iter().map(|f| f.line.to_string()).collect();
        m.set("stackDepth", Value::Int(s.stack.len() as u32))
            .str("stackMethods", methods.join(" "))
            .str("stackLines", lines.join(" "))
    }

    fn method_id(&self, m: model::MethodId) -> u64 {
        self.methods
            .get(m.class as usize)
            .map_or(0, |base| base + u64::from(m.index))
    }

    fn name_of(&self, class: model::ClassId) -> &str {
        self.names.get(class as usize).map_or("", String::as_str)
    }

    fn class(&mut self, c: &model::ClassDef) -> io::Result<()> {
        if c.id >= MAX_CLASSES {
            let message = format!(
                "class {}: the TPTP writer names at most {} classes",
                c.id, MAX_CLASSES
            );
            return Err(io::Error::new(io::ErrorKind::InvalidData, message));
        }
        let at = c.id as usize;
        if self.names.len() <= at {
            self.names.resize(at + 1, String::new());
            self.methods.resize(at + 1, 0);
        }
        self.names[at] = c.name.clone();
        self.methods[at] = self.next_method;
        let interfaces: Vec<&str> = c.interfaces.iter().map(|&i| self.name_of(i)).collect();
        let interfaces = without_nul(&interfaces.join(",")).into_owned();
        // Every attribute written is read back into the model, so that a file converted is
        // written again the same: fields have no message, and their counts are not written.
        let m = Message::new(&CLASS_DEF)
            .long("time", c.ticks)
            .set("numInterfaces", Value::Int(c.interfaces.len() as u32))
            .str("interfaceNames", interfaces)
            .long("classId", u64::from(c.id))
            .str("sourceName", without_nul(&c.source_file).into_owned())
            .str(
                "superclass",
                c.superclass.map_or("", |s| self.name_of(s)).to_string(),
            )
            .str("name", without_nul(&c.name).into_owned())
            .set("numMethods", Value::Int(c.methods.len() as u32));
        self.write(&m)?;
        for method in &c.methods {
            let (first, last) = method.line_range();
            let flag = |bit: u16| Value::Byte(u8::from(method.access & bit != 0));
            let m = Message::new(&METHOD_DEF)
                .str("name", without_nul(&method.name))
                .str("signature", without_nul(&method.signature))
                .set("isNative", flag(access::NATIVE))
                .set("isAbstract", flag(access::ABSTRACT))
                .set("isStatic", flag(access::STATIC))
                .set("isSynchronized", flag(access::SYNCHRONIZED))
                .long("startLineNumber", u64::from(first))
                .long("endLineNumber", u64::from(last))
                .long("classIdRef", u64::from(c.id))
                .long("methodId", self.next_method);
            self.next_method += 1;
            self.write(&m)?;
        }
        Ok(())
    }

    fn object(
        &mut self,
        element: &'static Element,
        thread: Option<u32>,
        o: &ObjectDef,
    ) -> io::Result<()> {
        let size = o.array.map_or(0, |a| u64::from(a.length));
        let is_array = o.array.map_or(0, |a| a.element.jvmpi_is_array());
        let mut m = Message::new(element)
            .long("time", o.ticks)
            .set("isArray", Value::Byte(is_array))
            .long("objId", u64::from(o.object))
            .long("size", size)
            .long("classIdRef", u64::from(o.class));
        if let Some(thread) = thread {
            m = m.long("threadIdRef", u64::from(thread));
        }
        self.write(&m)
    }
}

impl<E: Encode> Sink for TptpSink<E> {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        let m = match event {
            // TPTP's heap dumps are not written: the live connection and `jlive ctl heap`
            // into the trace are JinsightLive's.
            Event::Heap { .. } | Event::Values(_) => return Ok(()),
            Event::Sync(s) => self.sync(s),
            Event::VmInit { ticks } => Message::new(&RUNTIME_INIT_DONE).long("time", *ticks),
            Event::VmDeath { ticks } => Message::new(&RUNTIME_SHUTDOWN).long("time", *ticks),
            Event::BurstBegin { ticks, burst } => {
                self.trace = self.ids.trace(*burst);
                Message::new(&TRACE_START)
                    .str("traceId", self.trace.clone())
                    .str("agentIdRef", self.ids.agent.clone())
                    .long("time", *ticks)
            }
            Event::BurstEnd { ticks, .. } => Message::new(&TRACE_END)
                .str("traceIdRef", self.trace.clone())
                .long("time", *ticks),
            Event::ThreadDefine(t) => Message::new(&THREAD_START)
                .long("threadId", u64::from(t.id))
                .long("time", t.ticks)
                .str("groupName", without_nul(&t.group).into_owned())
                .str("parentName", without_nul(&t.parent).into_owned())
                .str("threadName", without_nul(&t.name).into_owned()),
            // A threadStart is the thread's definition: it was written then.
            Event::ThreadStart { .. } => return Ok(()),
            Event::ThreadEnd { ticks, thread } => Message::new(&THREAD_END)
                .long("threadIdRef", u64::from(*thread))
                .long("time", *ticks),
            Event::ClassDefine(c) => return self.class(c),
            Event::ObjectDefine(o) => return self.object(&OBJ_DEF, None, o),
            Event::Alloc { thread, object } => {
                return self.object(&OBJ_ALLOC, Some(*thread), object)
            }
            Event::MethodEnter(e) => return self.enter(*e),
            Event::MethodLeave(l) => return self.leave(*l),
            Event::ContextEnter(c) => Message::new(&AG_METHOD_ENTRY)
                .long("threadIdRef", u64::from(c.thread))
                .long("methodIdRef", self.method_id(c.method))
                .long("baseTime", c.base_ticks)
                .long("minTime", c.min_ticks)
                .long("maxTime", c.max_ticks)
                .long("numCalls", c.calls),
            Event::ContextLeave { thread, method, .. } => Message::new(&AG_METHOD_EXIT)
                .long("threadIdRef", u64::from(*thread))
                .long("methodIdRef", self.method_id(*method)),
            Event::Free { ticks, object } => Message::new(&OBJ_FREE)
                .long("time", *ticks)
                .long("objIdRef", u64::from(*object)),
            Event::GcStart { ticks } => Message::new(&GC_START).long("time", *ticks),
            Event::GcFinish { ticks } => Message::new(&GC_FINISH).long("time", *ticks),
            Event::UserEvent { ticks, text } => Message::new(&USER_EVENT)
                .long("time", *ticks)
                .str("text", without_nul(text).into_owned()),
        };
        self.write(&m)
    }

    #[inline(always)]
    fn enter(&mut self, e: Enter) -> io::Result<()> {
        self.events += 1;
        let m = EntryMessage {
            thread: u64::from(e.thread),
            ticks: e.ticks,
            method: self.method_id(e.method),
            ticket: e.ticket,
            object: if e.object == model::NO_OBJECT {
                0
            } else {
                u64::from(e.object)
            },
            class: u64::from(e.method.class),
            depth: u64::from(e.depth),
        };
        self.enc.method_entry(&m)
    }

    #[inline(always)]
    fn leave(&mut self, l: Leave) -> io::Result<()> {
        self.events += 1;
        let m = ExitMessage {
            thread: u64::from(l.thread),
            ticks: l.ticks,
            ticket: l.ticket,
            method: self.method_id(l.method),
            class: u64::from(l.method.class),
        };
        self.enc.method_exit(&m)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.enc.flush()
    }

    /// agentDestroy, then what ends the form (XML: the root's end tag).
    fn finish(&mut self, ending: &Ending) -> io::Result<()> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        let m = Message::new(&AGENT_DESTROY)
            .str("agentIdRef", self.ids.agent.clone())
            .long("time", ending.ticks);
        self.write(&m)?;
        self.enc.finish()
    }

    fn events(&self) -> u64 {
        self.events
    }

    fn bytes(&self) -> u64 {
        self.enc.bytes()
    }

    fn max_classes(&self) -> u32 {
        MAX_CLASSES
    }
}
