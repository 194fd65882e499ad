//! TPTP messages → model events, the same for the binary form and the XML form: the inverse
//! of `sink.rs`. A classDef and the methodDefs that follow it become one class definition;
//! a methodExit takes its depth from the thread's open frames; the messages that open a file
//! (node, processCreate, agentCreate, option, filter) describe the run. [`Reader`] reads a
//! file of either form, from the messages its [`Messages`] gives.

use super::*;
use crate::codec::{fail, DecodeError, EventReader};
use crate::format::Format;
use crate::model::SyncKind;
use crate::model::{
    self, access, ArrayDef, ClassDef, Enter, Event, Leave, Line, MethodDef, MethodId, TraceInfo,
};
use std::collections::{HashMap, VecDeque};

/// Where a TPTP reader takes its messages from: the binary form or the XML form.
pub trait Messages {
    const FORMAT: Format;
    /// The next message and its position (a byte offset, or a line in XML); None at the end.
    fn next_message(&mut self) -> Result<Option<(usize, Message<'static>)>, DecodeError>;
    /// The position after the last message.
    fn position(&self) -> usize;
    /// After the last message: whether the form's own end was read (XML's root end tag).
    fn end(&self) -> Result<(), DecodeError> {
        Ok(())
    }
    /// Completes what the opening messages said of the run.
    fn complete(&self, _info: &mut TraceInfo) {}
}

/// A TPTP file read as model events.
pub struct Reader<M> {
    messages: M,
    info: TraceInfo,
    translator: Translator,
    ready: VecDeque<(usize, Event)>,
    /// The first message after the file's opening, read while taking it.
    pending: Option<(usize, Message<'static>)>,
    ended: bool,
}

impl<M: Messages> Reader<M> {
    /// Reads the messages that open the file; `info` is what the form said before them.
    pub fn new(mut messages: M, mut info: TraceInfo) -> Result<Self, DecodeError> {
        let mut translator = Translator::default();
        let mut pending = None;
        while let Some((at, m)) = messages.next_message()? {
            if !translator.describe(at, M::FORMAT.is_text(), &m, &mut info)? {
                pending = Some((at, m));
                break;
            }
        }
        messages.complete(&mut info);
        Ok(Reader {
            messages,
            info,
            translator,
            ready: VecDeque::new(),
            pending,
            ended: false,
        })
    }
}

impl<M: Messages> EventReader for Reader<M> {
    fn format(&self) -> Format {
        M::FORMAT
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn next_event(&mut self) -> Result<Option<(usize, Event)>, DecodeError> {
        loop {
            if let Some(e) = self.ready.pop_front() {
                return Ok(Some(e));
            }
            if self.ended {
                return Ok(None);
            }
            let Some((at, m)) = self
                .pending
                .take()
                .map_or_else(|| self.messages.next_message(), |p| Ok(Some(p)))?
            else {
                self.ended = true;
                continue;
            };
            let text = M::FORMAT.is_text();
            self.translator
                .push(at, text, &m, &mut self.info, &mut self.ready)?;
        }
    }

    fn end(&mut self) -> Result<(), DecodeError> {
        let text = M::FORMAT.is_text();
        self.translator.end(self.messages.position(), text)?;
        self.messages.end()
    }
}

/// Turns a file's messages, in order, into model events.
#[derive(Default)]
pub struct Translator {
    /// TPTP method IDs.
    methods: HashMap<u64, MethodId>,
    class_ids: HashMap<String, model::ClassId>,
    names: HashMap<model::ClassId, String>,
    /// A classDef waiting for its methodDefs, and how many it announced.
    class: Option<(usize, ClassDef, usize)>,
    /// Each thread's open frames in this burst.
    depths: HashMap<model::ThreadId, u32>,
    bursts: u32,
    /// Where agentDestroy was read.
    destroyed: Option<usize>,
    /// Whether a message other than those that open a file has been read.
    started: bool,
    /// The IDs of the node, the process, the agent and the open burst, which later messages
    /// refer to.
    node: String,
    process: String,
    agent: String,
    trace: String,
    /// The latest time read, which aggregates (they have none) take.
    last_ticks: u64,
}

/// Fails unless attribute `name` of `m` names `defined`, the ID an earlier message defined.
fn refers(
    at: usize,
    text: bool,
    m: &Message,
    name: &str,
    defined: &str,
) -> Result<(), DecodeError> {
    let value = m.text(name);
    if value == defined && !value.is_empty() {
        return Ok(());
    }
    let message = format!(
        "{}'s {} {:?} is not the ID defined before it ({:?})",
        m.element.name, name, value, defined
    );
    fail(at, text, message)
}

/// Attribute `name` of `m` as a model ID, which is 32 bits.
fn id(at: usize, text: bool, m: &Message, name: &str) -> Result<u32, DecodeError> {
    let value = m.get(name);
    u32::try_from(value).or_else(|_| {
        let message = format!("{} {} of {} is past 32 bits", name, value, m.element.name);
        fail(at, text, message)
    })
}

/// A classDef whose methodDefs did not all follow it.
fn unfinished<T>(at: usize, text: bool, c: &ClassDef, announced: usize) -> Result<T, DecodeError> {
    let message = format!(
        "classDef of class {} announces {} methods, {} follow it",
        c.id,
        announced,
        c.methods.len()
    );
    fail(at, text, message)
}

impl Translator {
    /// Whether `m`, read at `at`, is one of the messages that open a file, and if so takes
    /// what it says of the run into `info`.
    pub fn describe(
        &mut self,
        at: usize,
        text: bool,
        m: &Message,
        info: &mut TraceInfo,
    ) -> Result<bool, DecodeError> {
        if self.started {
            return Ok(false);
        }
        let e = m.element;
        if e == &NODE {
            info.host = m.text("hostname").to_string();
            info.start_ticks = m.get("time");
            self.node = m.text("nodeId").to_string();
        } else if e == &PROCESS_CREATE {
            refers(at, text, m, "nodeIdRef", &self.node)?;
            info.pid = m.get("pid") as u32;
            self.process = m.text("processId").to_string();
        } else if e == &AGENT_CREATE {
            refers(at, text, m, "processIdRef", &self.process)?;
            info.options = m.text("agentParameters").to_string();
            self.agent = m.text("agentId").to_string();
        } else {
            return Ok(e == &OPTION || e == &FILTER);
        }
        Ok(true)
    }

    /// Translates one message read at `at` (`text`: a line number), appending what it makes
    /// to `out`.
    pub fn push(
        &mut self,
        at: usize,
        text: bool,
        m: &Message,
        info: &mut TraceInfo,
        out: &mut VecDeque<(usize, Event)>,
    ) -> Result<(), DecodeError> {
        if let Some(destroyed) = self.destroyed {
            let message = format!("{} after agentDestroy (at {})", m.element.name, destroyed);
            return fail(at, text, message);
        }
        if self.describe(at, text, m, info)? {
            return Ok(());
        }
        self.started = true;
        let e = m.element;
        if e == &METHOD_DEF {
            return self.method_def(at, text, m, out);
        }
        if let Some((class_at, c, announced)) = self.class.take() {
            return unfinished(class_at, text, &c, announced);
        }
        // Aggregates carry no time: they were written at their burst's end, as far as the
        // file has got.
        let ticks = if e == &AG_METHOD_ENTRY || e == &AG_METHOD_EXIT {
            self.last_ticks
        } else {
            m.get("time")
        };
        self.last_ticks = self.last_ticks.max(ticks);
        let thread = id(at, text, m, "threadIdRef")?;
        let event = if e == &AG_METHOD_ENTRY {
            Event::ContextEnter(model::Context {
                ticks,
                thread,
                method: self.defined_method(at, text, m)?,
                calls: m.get("numCalls"),
                base_ticks: m.get("baseTime"),
                min_ticks: m.get("minTime"),
                max_ticks: m.get("maxTime"),
            })
        } else if e == &AG_METHOD_EXIT {
            Event::ContextLeave {
                ticks,
                thread,
                method: self.defined_method(at, text, m)?,
            }
        } else if e == &METHOD_ENTRY {
            self.entry(at, text, m, ticks, thread)?
        } else if e == &METHOD_EXIT {
            self.exit(at, text, m, ticks, thread)?
        } else if e == &CLASS_DEF {
            match self.class_def(at, text, m, ticks)? {
                Some(event) => event,
                None => return Ok(()), // its methods follow
            }
        } else if e == &TRACE_START {
            refers(at, text, m, "agentIdRef", &self.agent)?;
            self.trace = m.text("traceId").to_string();
            self.bursts += 1;
            self.depths.clear();
            Event::BurstBegin {
                ticks,
                burst: self.bursts,
            }
        } else if e == &TRACE_END {
            if !m.text("traceIdRef").is_empty() {
                refers(at, text, m, "traceIdRef", &self.trace)?;
            }
            Event::BurstEnd {
                ticks,
                burst: self.bursts,
            }
        } else if e == &THREAD_START {
            // TPTP's threadStart is a thread's definition, and says that it started.
            let thread = id(at, text, m, "threadId")?;
            let def = model::ThreadDef {
                ticks,
                id: thread,
                name: m.text("threadName").to_string(),
                hash: 0,
                group: m.text("groupName").to_string(),
                parent: m.text("parentName").to_string(),
            };
            out.push_back((at, Event::ThreadDefine(Box::new(def))));
            Event::ThreadStart { ticks, thread }
        } else if e == &THREAD_END {
            self.depths.remove(&thread);
            Event::ThreadEnd { ticks, thread }
        } else if e == &OBJ_ALLOC {
            Event::Alloc {
                thread,
                object: self.object(at, text, m)?,
            }
        } else if e == &OBJ_DEF {
            Event::ObjectDefine(self.object(at, text, m)?)
        } else if e == &OBJ_FREE {
            Event::Free {
                ticks,
                object: id(at, text, m, "objIdRef")?,
            }
        } else if e == &GC_START {
            Event::GcStart { ticks }
        } else if e == &GC_FINISH {
            Event::GcFinish { ticks }
        } else if e == &RUNTIME_INIT_DONE {
            Event::VmInit { ticks }
        } else if e == &RUNTIME_SHUTDOWN {
            Event::VmDeath { ticks }
        } else if e == &USER_EVENT {
            Event::UserEvent {
                ticks,
                text: m.text("text").to_string(),
            }
        } else if let Some(kind) = SyncKind::ALL.into_iter().find(|&k| sync_element(k) == e) {
            Event::Sync(Box::new(self.sync(at, text, m, kind, ticks)?))
        } else if e == &AGENT_DESTROY {
            refers(at, text, m, "agentIdRef", &self.agent)?;
            self.destroyed = Some(at);
            info.end_ticks = Some(ticks);
            return Ok(());
        } else {
            // node, processCreate, agentCreate, option or filter past the opening.
            let message = format!("{} after the file's opening messages", e.name);
            return fail(at, text, message);
        };
        out.push_back((at, event));
        Ok(())
    }

    /// methodEntry: a frame of `thread` at its depth.
    fn entry(
        &mut self,
        at: usize,
        text: bool,
        m: &Message,
        ticks: u64,
        thread: u32,
    ) -> Result<Event, DecodeError> {
        let method = self.method(at, text, m)?;
        let depth = id(at, text, m, "stackDepth")?;
        self.depths.insert(thread, depth);
        Ok(Event::MethodEnter(Enter {
            ticks,
            thread,
            method,
            object: match id(at, text, m, "objIdRef")? {
                0 => model::NO_OBJECT,
                o => o,
            },
            depth,
            ticket: m.get("ticket") as u32,
        }))
    }

    /// methodExit: the depth is that of the thread's top frame.
    fn exit(
        &mut self,
        at: usize,
        text: bool,
        m: &Message,
        ticks: u64,
        thread: u32,
    ) -> Result<Event, DecodeError> {
        let method = self.method(at, text, m)?;
        let depth = self.depths.get(&thread).copied().unwrap_or(0);
        self.depths.insert(thread, depth.saturating_sub(1));
        Ok(Event::MethodLeave(Leave {
            ticks,
            thread,
            method,
            depth,
            ticket: m.get("ticket") as u32,
            overhead: 0,
        }))
    }

    /// classDef: the class, or None when methodDefs announced by it follow (it is held until
    /// the last).
    fn class_def(
        &mut self,
        at: usize,
        text: bool,
        m: &Message,
        ticks: u64,
    ) -> Result<Option<Event>, DecodeError> {
        let c = ClassDef {
            ticks,
            id: id(at, text, m, "classId")?,
            name: m.text("name").to_string(),
            source_file: m.text("sourceName").to_string(),
            superclass: self.class_named(m.text("superclass")),
            interfaces: m
                .text("interfaceNames")
                .split(',')
                .filter_map(|n| self.class_named(n))
                .collect(),
            methods: Vec::new(),
            fields: Vec::new(),
        };
        self.names.insert(c.id, c.name.clone());
        self.class_ids.insert(c.name.clone(), c.id);
        let announced = m.get("numMethods") as usize;
        if announced > usize::from(u16::MAX) + 1 {
            let message = format!("classDef announces {} methods", announced);
            return fail(at, text, message);
        }
        if announced > 0 {
            self.class = Some((at, c, announced));
            return Ok(None);
        }
        Ok(Some(Event::ClassDefine(Box::new(c))))
    }

    /// After the last message: a file ends with agentDestroy.
    pub fn end(&mut self, at: usize, text: bool) -> Result<(), DecodeError> {
        if let Some((class_at, c, announced)) = self.class.take() {
            return unfinished(class_at, text, &c, announced);
        }
        match self.destroyed {
            Some(_) => Ok(()),
            None => fail(
                at,
                text,
                "no agentDestroy: the file is truncated or was not closed",
            ),
        }
    }

    /// A concurrency event: its stack's methods must be defined; TPTP keeps no hash codes and
    /// no bytecode indices (locations read as -1).
    fn sync(
        &self,
        at: usize,
        text: bool,
        m: &Message,
        kind: SyncKind,
        ticks: u64,
    ) -> Result<model::Sync, DecodeError> {
        let depth = m.get("stackDepth") as usize;
        let methods: Vec<&str> = m
            .text("stackMethods")
            .split(' ')
            .filter(|s| !s.is_empty())
            .collect();
        let lines: Vec<&str> = m
            .text("stackLines")
            .split(' ')
            .filter(|s| !s.is_empty())
            .collect();
        if methods.len() != depth || lines.len() != depth {
            let message = format!(
                "{} has stackDepth {} but {} stack methods and {} stack lines",
                m.element.name,
                depth,
                methods.len(),
                lines.len()
            );
            return fail(at, text, message);
        }
        let mut stack = Vec::with_capacity(depth);
        for (method, line) in methods.iter().zip(&lines) {
            let (Ok(id), Ok(line)) = (method.parse::<u64>(), line.parse::<u32>()) else {
                return fail(
                    at,
                    text,
                    format!("stack frame {} line {} is not numbers", method, line),
                );
            };
            let Some(&method) = self.methods.get(&id) else {
                return fail(
                    at,
                    text,
                    format!("stack method {} used before it is defined", id),
                );
            };
            stack.push(model::Frame {
                method,
                location: -1,
                line,
            });
        }
        let object = m.get("objIdRef");
        let owner = m.get("threadOwnerIdRef");
        Ok(model::Sync {
            ticks,
            thread: id(at, text, m, "threadIdRef")?,
            kind,
            thread_hash: 0,
            object: 0,
            owner: 0,
            object_id: if kind.has_object() && object != 0 {
                u32::try_from(object).unwrap_or(model::NO_OBJECT)
            } else {
                model::NO_OBJECT
            },
            owner_thread: u32::try_from(owner).ok().filter(|&o| o != 0),
            stack,
        })
    }

    /// The method of a methodEntry or methodExit, which must be of its `classIdRef`.
    /// The method `m` refers to, which has no class to agree with.
    fn defined_method(&self, at: usize, text: bool, m: &Message) -> Result<MethodId, DecodeError> {
        let method_id = m.get("methodIdRef");
        match self.methods.get(&method_id) {
            Some(&method) => Ok(method),
            None => {
                let message = format!("method {} used before it is defined", method_id);
                fail(at, text, message)
            }
        }
    }

    fn method(&self, at: usize, text: bool, m: &Message) -> Result<MethodId, DecodeError> {
        let method_id = m.get("methodIdRef");
        match self.methods.get(&method_id) {
            Some(&method) if u64::from(method.class) == m.get("classIdRef") => Ok(method),
            Some(method) => {
                let message = format!(
                    "method {} is of class {}, not of classIdRef {}",
                    method_id,
                    method.class,
                    m.get("classIdRef")
                );
                fail(at, text, message)
            }
            None => {
                let message = format!("method {} used before it is defined", method_id);
                fail(at, text, message)
            }
        }
    }

    fn class_named(&self, name: &str) -> Option<model::ClassId> {
        self.class_ids.get(name).copied()
    }

    fn method_def(
        &mut self,
        at: usize,
        text: bool,
        m: &Message,
        out: &mut VecDeque<(usize, Event)>,
    ) -> Result<(), DecodeError> {
        let class = id(at, text, m, "classIdRef")?;
        let Some((class_at, mut c, announced)) =
            self.class.take().filter(|(_, c, _)| c.id == class)
        else {
            let message = format!("methodDef of class {} outside its classDef", class);
            return fail(at, text, message);
        };
        let method_id = m.get("methodId");
        if self.methods.contains_key(&method_id) {
            return fail(at, text, format!("method {} defined twice", method_id));
        }
        let flag = |name: &str, bit: u16| if m.get(name) != 0 { bit } else { 0 };
        let access = flag("isStatic", access::STATIC)
            | flag("isSynchronized", access::SYNCHRONIZED)
            | flag("isNative", access::NATIVE)
            | flag("isAbstract", access::ABSTRACT);
        // TPTP keeps a method's first and last lines, not its table: they come back as two
        // entries of unknown location.
        let (first, last) = (
            m.get("startLineNumber") as u32,
            m.get("endLineNumber") as u32,
        );
        let mut lines = Vec::new();
        if first != 0 || last != 0 {
            lines.push(Line {
                start: 0,
                line: first,
            });
            if last != first {
                lines.push(Line {
                    start: 0,
                    line: last,
                });
            }
        }
        let index = c.methods.len() as u16;
        self.methods.insert(method_id, MethodId { class, index });
        c.methods.push(MethodDef {
            name: m.text("name").to_string(),
            signature: m.text("signature").to_string(),
            access,
            lines,
        });
        if c.methods.len() < announced {
            self.class = Some((class_at, c, announced));
        } else {
            out.push_back((class_at, Event::ClassDefine(Box::new(c))));
        }
        Ok(())
    }

    /// The object of an objAlloc or objDef; an array's element comes from its class's name.
    fn object(&self, at: usize, text: bool, m: &Message) -> Result<model::ObjectDef, DecodeError> {
        let class = id(at, text, m, "classIdRef")?;
        let name = self.names.get(&class).map_or("", String::as_str);
        let array = name.strip_prefix('[').map(|element| ArrayDef {
            length: m.get("size") as u32,
            element: match element.as_bytes() {
                [d] => model::Element::Primitive(*d),
                _ => {
                    let e = element
                        .strip_prefix('L')
                        .and_then(|e| e.strip_suffix(';'))
                        .unwrap_or(element);
                    model::Element::Class(self.class_named(e).unwrap_or(0))
                }
            },
        });
        Ok(model::ObjectDef {
            ticks: m.get("time"),
            object: id(at, text, m, "objId")?,
            class,
            array,
        })
    }
}
