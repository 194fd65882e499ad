//! Eclipse TPTP traces: the binary format (TBF, `format=tptp`, `.trcbin`) and the XML trace it
//! mirrors message for message (`format=tptp-xml`, `.trcxml`); `trace.dtd` declares the XML and
//! docs/formats.md tells what TPTP reads of them. One table of messages ([`ELEMENTS`]) drives
//! both: `sink.rs` turns model events into messages, `binary.rs` and `xml.rs` turn messages
//! into bytes and back, `read.rs` turns messages into model events.
//!
//! ```text
//! binary file := header system-message* data-message*
//! header      := 12 bytes
//!   +0 4   magic "0TBF" (readers also accept "\0TBF")
//!   +4 u8  major version 1     +5 u8 minor version 0
//!   +6 u8  platform 1 (64-bit) +7 u8 endianness 1 (little)
//!   +8 u32 offset to data = 12
//! message     := u16 id, u32 length of the attributes that follow, attributes
//!   attributes in the table's order, each written even when unused (at its default):
//!   Long u64 (default 0), Integer u32 (0), Byte u8 (0), String UTF-8 + NUL ("");
//!   every time is a Long of ticks
//! system messages, first:
//!   1  encoding   String "UTF-8"
//!   2  frequency  Long ticks per second
//!   3  origin     Long ticks, Long ns since 1970-01-01 UTC at those ticks (jlive's: how
//!                 a reader turns ticks into time)
//!
//! XML file := <?xml version="1.0" encoding="UTF-8"?> \n <TRACE> \n (element \n)* </TRACE> \n
//!   element := <name attr="value" .../>, one per line, attributes in the XML order below;
//!   an attribute marked ? is written only when it is not its default, one marked - never
//!   (binary only); time="seconds.nanoseconds" since 1970-01-01 UTC; IDs as decimals
//! ```
//!
//! The data messages, with their binary IDs (those the specification's tables give; 2001 and
//! up are jlive's own, for what the tables lack), attributes in binary order (L Long, I
//! Integer, B Byte, S String, T time), and the XML order:
//!
//! ```text
//! 1001 node             nodeId S, hostname S, ipaddress S, timezone I, time T
//! 1002 processCreate    processId S, name S?, pid I, nodeIdRef S, time T, executable S?
//! 1003 agentCreate      agentId S, processIdRef S, agentName S, agentType S, time T,
//!                       agentParameters S, version S
//!                       XML: agentId version processIdRef agentName agentType agentParameters time
//! 1004 agentDestroy     agentIdRef S, time T
//! 1005 traceStart       traceId S, agentIdRef S, time T, collationValue S?
//! 1006 traceEnd         traceIdRef S?, time T, collationValue S?
//! 1007 filter           traceIdRef S?, pattern S, genericPattern S, mode S, methodPattern S,
//!                       methodGenericPattern S, methodMode S
//!                       XML: pattern mode genericPattern methodPattern methodMode methodGenericPattern
//! 1008 option           traceIdRef S?, key S, value S
//! 1009 threadStart      transientThreadId L-, threadId L, time T, groupName S, parentName S,
//!                       transientObjIdRef L-, objIdRef L?, threadName S, collationValue S?,
//!                       traceIdRef S?
//!                       XML: threadId time objIdRef threadName groupName parentName ...
//! 1010 threadEnd        transientThreadIdRef L-, threadIdRef L, time T, collationValue S?,
//!                       traceIdRef S?
//! 1011 classDef         transientThreadIdRef L-, threadIdRef L?, time T, numInterfaces I?,
//!                       interfaceNames S?, transientClassId L-, classId L, sourceName S?,
//!                       classLoader S?, superclass S?, transientObjIdRef L-, objIdRef L?,
//!                       name S, access S?, numStaticFields I?, numMethods I?,
//!                       numInstanceFields I?, collationValue S?, traceIdRef S?
//!                       XML: name sourceName classId time, then the rest in binary order
//! 1012 methodDef        name S, signature S, isNative B?, isAbstract B?, isStatic B?,
//!                       isSynchronized B?, exceptions S?, startLineNumber L?,
//!                       endLineNumber L?, signatureNotation S?, transientClassIdRef L-,
//!                       classIdRef L, methodId L, collationValue S?, traceIdRef S?
//!                       XML: name signature startLineNumber endLineNumber methodId classIdRef,
//!                       then the rest in binary order
//! 1014 objAlloc         transientThreadIdRef L-, threadIdRef L, time T, isArray B?,
//!                       transientObjId L-, objId L, size L?, lineNo L?, methodIdRef L?,
//!                       transientClassIdRef L-, classIdRef L, contextData S?,
//!                       collationValue S?, traceIdRef S?
//! 1015 methodEntry      transientThreadIdRef L-, threadIdRef L, time T, methodIdRef L,
//!                       ticket I, objIdRef L? (the table's "transient object ID" slot),
//!                       classIdRef L, threadCpuTime L?, sequenceCounter L?, stackDepth L,
//!                       collationValue S?, traceIdRef S?
//!                       XML: threadIdRef time methodIdRef objIdRef classIdRef ticket stackDepth ...
//! 1016 methodExit       transientThreadIdRef L-, threadIdRef L, time T, ticket I,
//!                       threadCpuTime L?, methodIdRef L, transientObjIdRef L-, objIdRef L?,
//!                       transientClassIdRef L-, classIdRef L, sequenceCounter S?,
//!                       collationValue S?, traceIdRef S?
//!                       XML: threadIdRef methodIdRef classIdRef ticket time ...
//! 1023 gcStart          transientThreadIdRef L-, threadIdRef L?, time T, collationValue S?,
//!                       traceIdRef S?
//! 1024 objFree          transientThreadIdRef L-, threadIdRef L?, time T, transientObjIdRef L-,
//!                       objIdRef L, objAge L?, sequenceCounter L?, stackDepth L?,
//!                       collationValue S?, traceIdRef S?
//! 1027 gcFinish         transientThreadIdRef L-, threadIdRef L?, time T, totalObjSpace L?,
//!                       usedObjSpace L?, usedObjects L?, collationValue S?, traceIdRef S?
//! 1030 runtimeInitDone  transientThreadIdRef L-, threadIdRef L?, time T, collationValue S?,
//!                       traceIdRef S?
//! 1031 runtimeShutdown  (as runtimeInitDone)
//! 1036 agMethodEntry    threadIdRef L, methodIdRef L, baseTime D, minTime D, maxTime D,
//!                       baseCPUTime D?, numCalls L (record=tree: a calling context of a
//!                       burst; D a Long of ticks, in XML seconds; base = its own time)
//! 1037 agMethodExit     threadIdRef L, methodIdRef L (after the context's callees)
//! 2001 objDef           objId L, time T, classIdRef L, isArray B?, size L?
//!                       (an object first seen, not allocated while traced)
//! 2002 userEvent        time T, text S
//!
//! monitors=on, each with the thread's stack (innermost frame first):
//!   stack := stackDepth I, stackMethods S[] (methodIds), stackLines L[] (source lines, 0 where
//!            unknown); S[] and L[] hold stackDepth items back to back; in XML each is one
//!            attribute of space-separated items, written when not empty
//! 1032 monWait          threadIdRef L, time T, objIdRef L, timeout L?, stack
//! 1033 monWaited        (as monWait)
//! 1034 monContendedEnter threadIdRef L, time T, objIdRef L, threadOwnerIdRef L?, stack
//! 1035 monContendedEntered threadIdRef L, time T, objIdRef L, stack
//! 2003 monNotify, 2004 monNotifyAll, 2005 threadStartCall (objIdRef: the Thread started),
//! 2006 threadJoin, 2007 threadJoined (objIdRef: the Thread joined)
//!                       threadIdRef L, time T, objIdRef L, stack
//! 2008 threadSleep, 2009 threadSlept
//!                       threadIdRef L, time T, stack
//! ```
//!
//! jlive's readings where the documents are silent: class names are the JVM's internal form
//! (`java/lang/String`, `[I`); methods are numbered from 1 across the file in the order their
//! classes are defined; `ticket` counts a thread's entries in the file from 1, `stackDepth` its
//! frames open in the burst (1 for the outermost); an allocation's `isArray` is JVMPI's
//! `is_array` (0 an object, 2 an object array, 4-11 primitive arrays) and `size` an array's
//! length (jlive records no byte sizes); each burst is a `traceStart`/`traceEnd` pair with a
//! fresh `traceId`; node, process, agent and trace IDs are UUIDs made from the host, the pid
//! and the start time, so that a TPTP file converted to the other form gives the same ones.
//! The monitor elements' XML attribute names were not found in public copies: the names above
//! are jlive's, after the table's fields (`threadOwnerIdRef` for its "Thread owner ID"); an
//! object is its objIdRef (its objDef or objAlloc before), a contended monitor's owner its
//! threadIdRef when the file has defined that thread (else the attribute is left out).

pub mod binary;
pub mod read;
pub mod sink;
pub mod xml;

pub use sink::TptpSink;

use std::borrow::Cow;

/// An attribute's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Long,
    Int,
    Byte,
    Str,
    /// A Long of ticks; in XML, seconds since 1970.
    Time,
    /// A Long of ticks that is a length of time; in XML, seconds.
    Duration,
    /// String[] / Long[]: as many as the message's `stackDepth` (the Int before them), back to
    /// back; held (and written in XML) as one string of space-separated items.
    Strs,
    Longs,
}

/// Whether an attribute is written in XML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Xml {
    Always,
    /// Only when it is not its default.
    IfSet,
    /// Never: a binary slot with no XML attribute.
    No,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    /// The XML name (for an [`Xml::No`] slot, a name for messages).
    pub name: &'static str,
    pub ty: Ty,
    pub xml: Xml,
}

/// A message of the table: its binary ID, XML element name and attributes.
#[derive(Debug, PartialEq, Eq)]
pub struct Element {
    pub id: u16,
    pub name: &'static str,
    /// In binary order.
    pub attrs: &'static [Attr],
    /// Indices into `attrs` in XML order.
    pub xml_order: &'static [usize],
}

impl Element {
    /// The index of an attribute.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.attrs.iter().position(|a| a.name == name)
    }

    /// The attributes' indices in XML order.
    pub fn xml_indices(&self) -> impl Iterator<Item = usize> + '_ {
        self.xml_order.iter().copied()
    }
}

const fn a(name: &'static str, ty: Ty, xml: Xml) -> Attr {
    Attr { name, ty, xml }
}

use Ty::*;
use Xml::{Always, IfSet, No};

const COLLATION: Attr = a("collationValue", Str, IfSet);
const TRACE_REF: Attr = a("traceIdRef", Str, IfSet);
const TRANSIENT_THREAD_REF: Attr = a("transientThreadIdRef", Long, No);

pub const NODE: Element = Element {
    id: 1001,
    name: "node",
    attrs: &[
        a("nodeId", Str, Always),
        a("hostname", Str, Always),
        a("ipaddress", Str, Always),
        a("timezone", Int, Always),
        a("time", Time, Always),
    ],
    xml_order: &[0, 1, 2, 3, 4],
};

pub const PROCESS_CREATE: Element = Element {
    id: 1002,
    name: "processCreate",
    attrs: &[
        a("processId", Str, Always),
        a("name", Str, IfSet),
        a("pid", Int, Always),
        a("nodeIdRef", Str, Always),
        a("time", Time, Always),
        a("executable", Str, IfSet),
    ],
    xml_order: &[0, 1, 2, 3, 4, 5],
};

pub const AGENT_CREATE: Element = Element {
    id: 1003,
    name: "agentCreate",
    attrs: &[
        a("agentId", Str, Always),
        a("processIdRef", Str, Always),
        a("agentName", Str, Always),
        a("agentType", Str, Always),
        a("time", Time, Always),
        a("agentParameters", Str, Always),
        a("version", Str, Always),
    ],
    xml_order: &[0, 6, 1, 2, 3, 5, 4],
};

pub const AGENT_DESTROY: Element = Element {
    id: 1004,
    name: "agentDestroy",
    attrs: &[a("agentIdRef", Str, Always), a("time", Time, Always)],
    xml_order: &[0, 1],
};

pub const TRACE_START: Element = Element {
    id: 1005,
    name: "traceStart",
    attrs: &[
        a("traceId", Str, Always),
        a("agentIdRef", Str, Always),
        a("time", Time, Always),
        COLLATION,
    ],
    xml_order: &[0, 1, 2, 3],
};

pub const TRACE_END: Element = Element {
    id: 1006,
    name: "traceEnd",
    attrs: &[TRACE_REF, a("time", Time, Always), COLLATION],
    xml_order: &[0, 1, 2],
};

pub const FILTER: Element = Element {
    id: 1007,
    name: "filter",
    attrs: &[
        TRACE_REF,
        a("pattern", Str, Always),
        a("genericPattern", Str, Always),
        a("mode", Str, Always),
        a("methodPattern", Str, Always),
        a("methodGenericPattern", Str, Always),
        a("methodMode", Str, Always),
    ],
    xml_order: &[0, 1, 3, 2, 4, 6, 5],
};

pub const OPTION: Element = Element {
    id: 1008,
    name: "option",
    attrs: &[TRACE_REF, a("key", Str, Always), a("value", Str, Always)],
    xml_order: &[0, 1, 2],
};

pub const THREAD_START: Element = Element {
    id: 1009,
    name: "threadStart",
    attrs: &[
        a("transientThreadId", Long, No),
        a("threadId", Long, Always),
        a("time", Time, Always),
        a("groupName", Str, Always),
        a("parentName", Str, Always),
        a("transientObjIdRef", Long, No),
        a("objIdRef", Long, IfSet),
        a("threadName", Str, Always),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[1, 2, 6, 7, 3, 4, 8, 9],
};

pub const THREAD_END: Element = Element {
    id: 1010,
    name: "threadEnd",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, Always),
        a("time", Time, Always),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[0, 1, 2, 3, 4],
};

pub const CLASS_DEF: Element = Element {
    id: 1011,
    name: "classDef",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, IfSet),
        a("time", Time, Always),
        a("numInterfaces", Int, IfSet),
        a("interfaceNames", Str, IfSet),
        a("transientClassId", Long, No),
        a("classId", Long, Always),
        a("sourceName", Str, IfSet),
        a("classLoader", Str, IfSet),
        a("superclass", Str, IfSet),
        a("transientObjIdRef", Long, No),
        a("objIdRef", Long, IfSet),
        a("name", Str, Always),
        a("access", Str, IfSet),
        a("numStaticFields", Int, IfSet),
        a("numMethods", Int, IfSet),
        a("numInstanceFields", Int, IfSet),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[12, 7, 6, 2, 1, 3, 4, 8, 9, 11, 13, 14, 15, 16, 17, 18],
};

pub const METHOD_DEF: Element = Element {
    id: 1012,
    name: "methodDef",
    attrs: &[
        a("name", Str, Always),
        a("signature", Str, Always),
        a("isNative", Byte, IfSet),
        a("isAbstract", Byte, IfSet),
        a("isStatic", Byte, IfSet),
        a("isSynchronized", Byte, IfSet),
        a("exceptions", Str, IfSet),
        a("startLineNumber", Long, IfSet),
        a("endLineNumber", Long, IfSet),
        a("signatureNotation", Str, IfSet),
        a("transientClassIdRef", Long, No),
        a("classIdRef", Long, Always),
        a("methodId", Long, Always),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[0, 1, 7, 8, 12, 11, 2, 3, 4, 5, 6, 9, 13, 14],
};

pub const OBJ_ALLOC: Element = Element {
    id: 1014,
    name: "objAlloc",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, Always),
        a("time", Time, Always),
        a("isArray", Byte, IfSet),
        a("transientObjId", Long, No),
        a("objId", Long, Always),
        a("size", Long, IfSet),
        a("lineNo", Long, IfSet),
        a("methodIdRef", Long, IfSet),
        a("transientClassIdRef", Long, No),
        a("classIdRef", Long, Always),
        a("contextData", Str, IfSet),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
};

pub const METHOD_ENTRY: Element = Element {
    id: 1015,
    name: "methodEntry",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, Always),
        a("time", Time, Always),
        a("methodIdRef", Long, Always),
        a("ticket", Int, Always),
        a("objIdRef", Long, IfSet),
        a("classIdRef", Long, Always),
        a("threadCpuTime", Long, IfSet),
        a("sequenceCounter", Long, IfSet),
        a("stackDepth", Long, Always),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[1, 2, 3, 5, 6, 4, 9, 7, 8, 10, 11],
};

pub const METHOD_EXIT: Element = Element {
    id: 1016,
    name: "methodExit",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, Always),
        a("time", Time, Always),
        a("ticket", Int, Always),
        a("threadCpuTime", Long, IfSet),
        a("methodIdRef", Long, Always),
        a("transientObjIdRef", Long, No),
        a("objIdRef", Long, IfSet),
        a("transientClassIdRef", Long, No),
        a("classIdRef", Long, Always),
        a("sequenceCounter", Str, IfSet),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[1, 5, 9, 3, 2, 4, 7, 10, 11, 12],
};

pub const GC_START: Element = Element {
    id: 1023,
    name: "gcStart",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, IfSet),
        a("time", Time, Always),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[0, 1, 2, 3, 4],
};

pub const OBJ_FREE: Element = Element {
    id: 1024,
    name: "objFree",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, IfSet),
        a("time", Time, Always),
        a("transientObjIdRef", Long, No),
        a("objIdRef", Long, Always),
        a("objAge", Long, IfSet),
        a("sequenceCounter", Long, IfSet),
        a("stackDepth", Long, IfSet),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
};

pub const GC_FINISH: Element = Element {
    id: 1027,
    name: "gcFinish",
    attrs: &[
        TRANSIENT_THREAD_REF,
        a("threadIdRef", Long, IfSet),
        a("time", Time, Always),
        a("totalObjSpace", Long, IfSet),
        a("usedObjSpace", Long, IfSet),
        a("usedObjects", Long, IfSet),
        COLLATION,
        TRACE_REF,
    ],
    xml_order: &[0, 1, 2, 3, 4, 5, 6, 7],
};

const RUNTIME_ATTRS: &[Attr] = &[
    TRANSIENT_THREAD_REF,
    a("threadIdRef", Long, IfSet),
    a("time", Time, Always),
    COLLATION,
    TRACE_REF,
];

pub const RUNTIME_INIT_DONE: Element = Element {
    id: 1030,
    name: "runtimeInitDone",
    attrs: RUNTIME_ATTRS,
    xml_order: &[0, 1, 2, 3, 4],
};

pub const RUNTIME_SHUTDOWN: Element = Element {
    id: 1031,
    name: "runtimeShutdown",
    attrs: RUNTIME_ATTRS,
    xml_order: &[0, 1, 2, 3, 4],
};

pub const OBJ_DEF: Element = Element {
    id: 2001,
    name: "objDef",
    attrs: &[
        a("objId", Long, Always),
        a("time", Time, Always),
        a("classIdRef", Long, Always),
        a("isArray", Byte, IfSet),
        a("size", Long, IfSet),
    ],
    xml_order: &[0, 1, 2, 3, 4],
};

pub const USER_EVENT: Element = Element {
    id: 2002,
    name: "userEvent",
    attrs: &[a("time", Time, Always), a("text", Str, Always)],
    xml_order: &[0, 1],
};

/// `record=tree`: a calling context's totals; its callees' follow, then its agMethodExit.
pub const AG_METHOD_ENTRY: Element = Element {
    id: 1036,
    name: "agMethodEntry",
    attrs: &[
        a("threadIdRef", Long, Always),
        a("methodIdRef", Long, Always),
        a("baseTime", Duration, Always),
        a("minTime", Duration, Always),
        a("maxTime", Duration, Always),
        a("baseCPUTime", Duration, IfSet),
        a("numCalls", Long, Always),
    ],
    xml_order: &[0, 1, 2, 3, 4, 5, 6],
};

pub const AG_METHOD_EXIT: Element = Element {
    id: 1037,
    name: "agMethodExit",
    attrs: &[
        a("threadIdRef", Long, Always),
        a("methodIdRef", Long, Always),
    ],
    xml_order: &[0, 1],
};

/// The stack of a concurrency event (`monitors=on`): binary-only fields of the table that
/// replace XML annotations; jlive writes them in XML too, as space-separated lists.
const STACK: [Attr; 3] = [
    a("stackDepth", Int, Always),
    a("stackMethods", Strs, IfSet),
    a("stackLines", Longs, IfSet),
];

const fn with_stack<const N: usize, const M: usize>(head: [Attr; N]) -> [Attr; M] {
    let mut out = [STACK[0]; M];
    let mut i = 0;
    while i < N {
        out[i] = head[i];
        i += 1;
    }
    out[N] = STACK[0];
    out[N + 1] = STACK[1];
    out[N + 2] = STACK[2];
    out
}

const MON_WAIT_ATTRS: [Attr; 7] = with_stack([
    a("threadIdRef", Long, Always),
    a("time", Time, Always),
    a("objIdRef", Long, Always),
    a("timeout", Long, IfSet),
]);

pub const MON_WAIT: Element = Element {
    id: 1032,
    name: "monWait",
    attrs: &MON_WAIT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5, 6],
};

pub const MON_WAITED: Element = Element {
    id: 1033,
    name: "monWaited",
    attrs: &MON_WAIT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5, 6],
};

pub const MON_CONTENDED_ENTER: Element = Element {
    id: 1034,
    name: "monContendedEnter",
    attrs: &with_stack::<4, 7>([
        a("threadIdRef", Long, Always),
        a("time", Time, Always),
        a("objIdRef", Long, Always),
        a("threadOwnerIdRef", Long, IfSet),
    ]),
    xml_order: &[0, 1, 2, 3, 4, 5, 6],
};

/// threadIdRef, time, objIdRef and the stack: monContendedEntered and jlive's own.
const ON_OBJECT_ATTRS: [Attr; 6] = with_stack([
    a("threadIdRef", Long, Always),
    a("time", Time, Always),
    a("objIdRef", Long, Always),
]);

pub const MON_CONTENDED_ENTERED: Element = Element {
    id: 1035,
    name: "monContendedEntered",
    attrs: &ON_OBJECT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5],
};

pub const MON_NOTIFY: Element = Element {
    id: 2003,
    name: "monNotify",
    attrs: &ON_OBJECT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5],
};

pub const MON_NOTIFY_ALL: Element = Element {
    id: 2004,
    name: "monNotifyAll",
    attrs: &ON_OBJECT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5],
};

pub const THREAD_START_CALL: Element = Element {
    id: 2005,
    name: "threadStartCall",
    attrs: &ON_OBJECT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5],
};

pub const THREAD_JOIN: Element = Element {
    id: 2006,
    name: "threadJoin",
    attrs: &ON_OBJECT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5],
};

pub const THREAD_JOINED: Element = Element {
    id: 2007,
    name: "threadJoined",
    attrs: &ON_OBJECT_ATTRS,
    xml_order: &[0, 1, 2, 3, 4, 5],
};

const ON_THREAD_ATTRS: [Attr; 5] =
    with_stack([a("threadIdRef", Long, Always), a("time", Time, Always)]);

pub const THREAD_SLEEP: Element = Element {
    id: 2008,
    name: "threadSleep",
    attrs: &ON_THREAD_ATTRS,
    xml_order: &[0, 1, 2, 3, 4],
};

pub const THREAD_SLEPT: Element = Element {
    id: 2009,
    name: "threadSlept",
    attrs: &ON_THREAD_ATTRS,
    xml_order: &[0, 1, 2, 3, 4],
};

/// The element of each concurrency event.
pub fn sync_element(kind: crate::model::SyncKind) -> &'static Element {
    use crate::model::SyncKind as K;
    match kind {
        K::Wait => &MON_WAIT,
        K::Waited => &MON_WAITED,
        K::ContendedEnter => &MON_CONTENDED_ENTER,
        K::ContendedEntered => &MON_CONTENDED_ENTERED,
        K::Notify => &MON_NOTIFY,
        K::NotifyAll => &MON_NOTIFY_ALL,
        K::Start => &THREAD_START_CALL,
        K::Join => &THREAD_JOIN,
        K::Joined => &THREAD_JOINED,
        K::Sleep => &THREAD_SLEEP,
        K::Slept => &THREAD_SLEPT,
    }
}

/// Every data message jlive writes and reads.
pub const ELEMENTS: &[&Element] = &[
    &NODE,
    &PROCESS_CREATE,
    &AGENT_CREATE,
    &AGENT_DESTROY,
    &TRACE_START,
    &TRACE_END,
    &FILTER,
    &OPTION,
    &THREAD_START,
    &THREAD_END,
    &CLASS_DEF,
    &METHOD_DEF,
    &OBJ_ALLOC,
    &METHOD_ENTRY,
    &METHOD_EXIT,
    &GC_START,
    &OBJ_FREE,
    &GC_FINISH,
    &RUNTIME_INIT_DONE,
    &RUNTIME_SHUTDOWN,
    &AG_METHOD_ENTRY,
    &AG_METHOD_EXIT,
    &OBJ_DEF,
    &USER_EVENT,
    &MON_WAIT,
    &MON_WAITED,
    &MON_CONTENDED_ENTER,
    &MON_CONTENDED_ENTERED,
    &MON_NOTIFY,
    &MON_NOTIFY_ALL,
    &THREAD_START_CALL,
    &THREAD_JOIN,
    &THREAD_JOINED,
    &THREAD_SLEEP,
    &THREAD_SLEPT,
];

/// The element of a binary ID.
pub fn by_id(id: u16) -> Option<&'static Element> {
    ELEMENTS.iter().copied().find(|e| e.id == id)
}

/// The element of an XML name.
pub fn by_name(name: &str) -> Option<&'static Element> {
    ELEMENTS.iter().copied().find(|e| e.name == name)
}

/// System messages.
pub const SYSTEM_ENCODING: u16 = 1;
pub const SYSTEM_FREQUENCY: u16 = 2;
pub const SYSTEM_ORIGIN: u16 = 3;
/// IDs from here on are data messages.
pub const FIRST_DATA_ID: u16 = 1001;

/// An attribute's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Long, Time (ticks).
    Long(u64),
    Int(u32),
    Byte(u8),
    Str(Cow<'a, str>),
}

impl Value<'_> {
    /// The default of a type: what an unused attribute holds.
    pub fn default_of(ty: Ty) -> Value<'static> {
        match ty {
            Long | Time | Duration => Value::Long(0),
            Int => Value::Int(0),
            Byte => Value::Byte(0),
            Str | Strs | Longs => Value::Str(Cow::Borrowed("")),
        }
    }

    pub fn is_default(&self) -> bool {
        match self {
            Value::Long(v) => *v == 0,
            Value::Int(v) => *v == 0,
            Value::Byte(v) => *v == 0,
            Value::Str(s) => s.is_empty(),
        }
    }

    /// Whether the value has the type's form.
    pub fn fits(&self, ty: Ty) -> bool {
        matches!(
            (self, ty),
            (Value::Long(_), Long | Time | Duration)
                | (Value::Int(_), Int)
                | (Value::Byte(_), Byte)
                | (Value::Str(_), Str | Strs | Longs)
        )
    }
}

/// One message: an element and a value for each of its attributes, in binary order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub element: &'static Element,
    pub values: Vec<Value<'a>>,
}

impl<'a> Message<'a> {
    /// A message with every attribute at its default.
    pub fn new(element: &'static Element) -> Message<'a> {
        Message {
            element,
            values: element
                .attrs
                .iter()
                .map(|a| Value::default_of(a.ty))
                .collect(),
        }
    }

    /// Sets an attribute by name (a name the element lacks, or a value of another type, is
    /// a mistake of the caller and sets nothing).
    pub fn set(mut self, name: &str, value: Value<'a>) -> Self {
        let at = self.element.index(name);
        debug_assert!(
            at.is_some(),
            "{} has no attribute {}",
            self.element.name,
            name
        );
        if let Some(i) = at {
            debug_assert!(
                value.fits(self.element.attrs[i].ty),
                "{}.{}",
                self.element.name,
                name
            );
            if value.fits(self.element.attrs[i].ty) {
                self.values[i] = value;
            }
        }
        self
    }

    pub fn long(self, name: &str, v: u64) -> Self {
        self.set(name, Value::Long(v))
    }

    pub fn str(self, name: &str, v: impl Into<Cow<'a, str>>) -> Self {
        self.set(name, Value::Str(v.into()))
    }

    /// The value of an attribute, as a number (0 for a string or a name the element lacks).
    pub fn get(&self, name: &str) -> u64 {
        match self.element.index(name).map(|i| &self.values[i]) {
            Some(Value::Long(v)) => *v,
            Some(Value::Int(v)) => u64::from(*v),
            Some(Value::Byte(v)) => u64::from(*v),
            _ => 0,
        }
    }

    /// The value of a string attribute ("" for a number or a name the element lacks).
    pub fn text(&self, name: &str) -> &str {
        match self.element.index(name).map(|i| &self.values[i]) {
            Some(Value::Str(s)) => s,
            _ => "",
        }
    }
}

/// A UUID (version 4 form) made from `parts`: the same parts, the same UUID.
pub fn uuid(parts: &[&[u8]]) -> String {
    let mut h = [0xcbf2_9ce4_8422_2325u64, 0x6c62_272e_07bb_0142u64];
    for (i, part) in parts.iter().enumerate() {
        for &b in part.iter().chain(&[0xff, i as u8]) {
            for (k, x) in h.iter_mut().enumerate() {
                *x = (*x ^ u64::from(b) ^ (k as u64) << 8).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    let (hi, lo) = (h[0], h[1]);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0x0fff,
        ((lo >> 48) & 0x3fff) | 0x8000,
        lo & 0xffff_ffff_ffff
    )
}

/// The bytes of a UTF-8 string as TPTP strings hold them: a NUL would end the string, so
/// it is not written.
pub fn without_nul(s: &str) -> Cow<'_, str> {
    if s.contains('\0') {
        Cow::Owned(s.replace('\0', ""))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_consistent() {
        for e in ELEMENTS {
            assert_eq!(by_id(e.id), Some(*e));
            assert_eq!(by_name(e.name), Some(*e));
            let mut seen: Vec<usize> = e.xml_indices().collect();
            // The XML order names each attribute written in XML exactly once.
            seen.sort();
            let written: Vec<usize> = (0..e.attrs.len())
                .filter(|&i| e.attrs[i].xml != No)
                .collect();
            let named: Vec<usize> = seen
                .iter()
                .copied()
                .filter(|&i| e.attrs[i].xml != No)
                .collect();
            assert_eq!(named, written, "{}", e.name);
            seen.dedup();
            assert_eq!(seen.len(), e.xml_indices().count(), "{}", e.name);
            // XML names are unique within an element.
            for (i, x) in e.attrs.iter().enumerate() {
                if x.xml != No {
                    assert_eq!(e.index(x.name), Some(i), "{}.{}", e.name, x.name);
                }
            }
        }
        // trace.dtd declares each element with the attributes written in XML, in XML order.
        let dtd = include_str!("trace.dtd");
        let names: Vec<&str> = ELEMENTS.iter().map(|e| e.name).collect();
        assert!(dtd.contains(&format!("<!ELEMENT TRACE ({})*>", names.join(" | "))));
        for e in ELEMENTS {
            let mut decl = format!("<!ELEMENT {} EMPTY>\n<!ATTLIST {}\n", e.name, e.name);
            for i in e.xml_indices().filter(|&i| e.attrs[i].xml != No) {
                let required = if e.attrs[i].xml == Always {
                    "#REQUIRED"
                } else {
                    "#IMPLIED"
                };
                decl.push_str(&format!("    {} CDATA {}\n", e.attrs[i].name, required));
            }
            decl.push('>');
            assert!(dtd.contains(&decl), "trace.dtd lacks:\n{}", decl);
        }
        let a = uuid(&[b"node", b"host"]);
        assert_eq!(a, uuid(&[b"node", b"host"]));
        assert_ne!(a, uuid(&[b"node", b"hosts"]));
        assert_eq!(a.len(), 36);
    }
}
