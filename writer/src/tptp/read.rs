//! TPTP messages → model events, the same for the binary form and the XML form: the inverse
//! of `sink.rs`. A classDef and the methodDefs that follow it become one class definition;
//! a methodExit takes its depth from the thread's open frames; the messages that open a file
//! (node, processCreate, agentCreate, option, filter) describe the run.

use super::*;
use crate::model::{
    self, ArrayDef, ClassDef, Enter, Event, Leave, Line, MethodDef, MethodId, TraceInfo,
};
use crate::read::DecodeError;
use std::collections::{HashMap, VecDeque};

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
}

/// A failure at position `at` (a byte offset, or a line when `line` is set).
pub fn fail<T>(at: usize, line: bool, message: String) -> Result<T, DecodeError> {
    let mut e = DecodeError::at(at, message);
    if line {
        e.line = Some(at);
    }
    Err(e)
}

/// Fails unless attribute `name` of `m` names `defined`, the ID an earlier message defined.
fn refers(
    at: usize,
    line: bool,
    m: &Message,
    name: &str,
    defined: &str,
) -> Result<(), DecodeError> {
    let value = m.text(name);
    if value == defined && !value.is_empty() {
        return Ok(());
    }
    fail(
        at,
        line,
        format!(
            "{}'s {} {:?} is not the ID defined before it ({:?})",
            m.element.name, name, value, defined
        ),
    )
}

impl Translator {
    /// Whether `m`, read at `at`, is one of the messages that open a file, and if so takes
    /// what it says of the run into `info`.
    pub fn describe(
        &mut self,
        at: usize,
        line: bool,
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
            refers(at, line, m, "nodeIdRef", &self.node)?;
            info.pid = m.get("pid") as u32;
            self.process = m.text("processId").to_string();
        } else if e == &AGENT_CREATE {
            refers(at, line, m, "processIdRef", &self.process)?;
            info.options = m.text("agentParameters").to_string();
            self.agent = m.text("agentId").to_string();
        } else {
            return Ok(e == &OPTION || e == &FILTER);
        }
        Ok(true)
    }

    /// Translates one message read at `at` (`line`: a line number), appending what it makes
    /// to `out`.
    pub fn push(
        &mut self,
        at: usize,
        line: bool,
        m: &Message,
        info: &mut TraceInfo,
        out: &mut VecDeque<(usize, Event)>,
    ) -> Result<(), DecodeError> {
        if let Some(destroyed) = self.destroyed {
            return fail(
                at,
                line,
                format!("{} after agentDestroy (at {})", m.element.name, destroyed),
            );
        }
        if self.describe(at, line, m, info)? {
            return Ok(());
        }
        self.started = true;
        let e = m.element;
        if e == &METHOD_DEF {
            return self.method_def(at, line, m, out);
        }
        if let Some((class_at, c, announced)) = self.class.take() {
            return fail(
                class_at,
                line,
                format!(
                    "classDef of class {} announces {} methods, {} follow it",
                    c.id,
                    announced,
                    c.methods.len()
                ),
            );
        }
        let ticks = m.get("time");
        let thread = m.get("threadIdRef") as u32;
        let event = if e == &METHOD_ENTRY {
            let method = self.method(at, line, m)?;
            let depth = m.get("stackDepth") as u32;
            self.depths.insert(thread, depth);
            Event::MethodEnter(Enter {
                ticks,
                thread,
                method,
                object: match m.get("objIdRef") {
                    0 => model::NO_OBJECT,
                    o => o as u32,
                },
                depth,
                ticket: m.get("ticket") as u32,
            })
        } else if e == &METHOD_EXIT {
            let method = self.method(at, line, m)?;
            let depth = self.depths.get(&thread).copied().unwrap_or(0);
            self.depths.insert(thread, depth.saturating_sub(1));
            Event::MethodLeave(Leave {
                ticks,
                thread,
                method,
                depth,
                ticket: m.get("ticket") as u32,
                overhead: 0,
            })
        } else if e == &CLASS_DEF {
            let c = ClassDef {
                ticks,
                id: m.get("classId") as u32,
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
            if announced > 0 {
                self.class = Some((at, c, announced));
                return Ok(());
            }
            Event::ClassDefine(Box::new(c))
        } else if e == &TRACE_START {
            refers(at, line, m, "agentIdRef", &self.agent)?;
            self.trace = m.text("traceId").to_string();
            self.bursts += 1;
            self.depths.clear();
            Event::BurstBegin {
                ticks,
                burst: self.bursts,
            }
        } else if e == &TRACE_END {
            if !m.text("traceIdRef").is_empty() {
                refers(at, line, m, "traceIdRef", &self.trace)?;
            }
            Event::BurstEnd {
                ticks,
                burst: self.bursts,
            }
        } else if e == &THREAD_START {
            // TPTP's threadStart is a thread's definition, and says that it started.
            let id = m.get("threadId") as u32;
            out.push_back((
                at,
                Event::ThreadDefine(Box::new(model::ThreadDef {
                    ticks,
                    id,
                    name: m.text("threadName").to_string(),
                    group: m.text("groupName").to_string(),
                    parent: m.text("parentName").to_string(),
                })),
            ));
            Event::ThreadStart { ticks, thread: id }
        } else if e == &THREAD_END {
            self.depths.remove(&thread);
            Event::ThreadEnd { ticks, thread }
        } else if e == &OBJ_ALLOC {
            Event::Alloc {
                thread,
                object: self.object(m),
            }
        } else if e == &OBJ_DEF {
            Event::ObjectDefine(self.object(m))
        } else if e == &OBJ_FREE {
            Event::Free {
                ticks,
                object: m.get("objIdRef") as u32,
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
        } else if e == &AGENT_DESTROY {
            refers(at, line, m, "agentIdRef", &self.agent)?;
            self.destroyed = Some(at);
            info.end_ticks = Some(ticks);
            return Ok(());
        } else {
            // node, processCreate, agentCreate, option or filter past the opening.
            return fail(
                at,
                line,
                format!("{} after the file's opening messages", e.name),
            );
        };
        out.push_back((at, event));
        Ok(())
    }

    /// After the last message: a file ends with agentDestroy.
    pub fn end(&mut self, at: usize, line: bool) -> Result<(), DecodeError> {
        if let Some((class_at, c, announced)) = self.class.take() {
            return fail(
                class_at,
                line,
                format!(
                    "classDef of class {} announces {} methods, {} follow it",
                    c.id,
                    announced,
                    c.methods.len()
                ),
            );
        }
        match self.destroyed {
            Some(_) => Ok(()),
            None => fail(
                at,
                line,
                "no agentDestroy: the file is truncated or was not closed".into(),
            ),
        }
    }

    /// The method of a methodEntry or methodExit, which must be of its `classIdRef`.
    fn method(&self, at: usize, line: bool, m: &Message) -> Result<MethodId, DecodeError> {
        let id = m.get("methodIdRef");
        match self.methods.get(&id) {
            Some(&method) if u64::from(method.class) == m.get("classIdRef") => Ok(method),
            Some(method) => fail(
                at,
                line,
                format!(
                    "method {} is of class {}, not of classIdRef {}",
                    id,
                    method.class,
                    m.get("classIdRef")
                ),
            ),
            None => fail(at, line, format!("method {} used before it is defined", id)),
        }
    }

    fn class_named(&self, name: &str) -> Option<model::ClassId> {
        self.class_ids.get(name).copied()
    }

    fn method_def(
        &mut self,
        at: usize,
        line: bool,
        m: &Message,
        out: &mut VecDeque<(usize, Event)>,
    ) -> Result<(), DecodeError> {
        let class = m.get("classIdRef") as u32;
        let Some((class_at, mut c, announced)) =
            self.class.take().filter(|(_, c, _)| c.id == class)
        else {
            return fail(
                at,
                line,
                format!("methodDef of class {} outside its classDef", class),
            );
        };
        let flag = |name: &str, bit: u16| if m.get(name) != 0 { bit } else { 0 };
        let access = flag("isStatic", 0x0008)
            | flag("isSynchronized", 0x0020)
            | flag("isNative", 0x0100)
            | flag("isAbstract", 0x0400);
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
        self.methods
            .insert(m.get("methodId"), MethodId { class, index });
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
    fn object(&self, m: &Message) -> model::ObjectDef {
        let class = m.get("classIdRef") as u32;
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
        model::ObjectDef {
            ticks: m.get("time"),
            object: m.get("objId") as u32,
            class,
            array,
        }
    }
}
