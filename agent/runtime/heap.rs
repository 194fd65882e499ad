//! The heap walk: JVMTI FollowReferences over every object reachable from the roots, into
//! the format-neutral [`Graph`] of `jlive_writer::heap`. Two users, one walk:
//! - `jlive ctl heap FILE` walks in a JVMTI environment of its own, disposed afterwards, so
//!   the walk's tags (every object's) leave nothing behind in the JVM ([`to_file`]);
//! - `InstrumentVMSupport.reportObjectReferences()` walks in jlive's environment, so that an
//!   object has the ID its allocation and method events gave it ([`Ids::Agent`]); objects it
//!   names first are defined in the trace file too (when a burst writes one).
//!
//! Classes are tagged before the walk and named from their signatures; the walk itself runs
//! at a safepoint, in a callback that calls nothing in the JVM.

use super::Runtime;
use crate::symbols::{internal_name, CLASS_TAG};
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{cap, Capabilities, HeapRef, Jvmti};
use jlive_writer::heap::{Graph, Object, Ref, Root};
use std::collections::{HashMap, HashSet};

/// IDs above every object ID: a class object's is this plus its key (or index).
pub const CLASS_IDS: u64 = 1 << 32;

/// Whose tags the walk reads and writes.
pub enum Ids<'a> {
    /// jlive's environment: objects keep their IDs, new ones take the agent's next.
    Agent(&'a Runtime),
    /// An environment of the walk's own, numbering objects from 1.
    Own,
}

/// The ID of an object given its tag: a class object's from its key, an object's its tag.
pub fn id_of(tag: i64) -> u64 {
    if tag & CLASS_TAG != 0 {
        CLASS_IDS | (tag as u64 & 0xFFFF_FFFF)
    } else {
        tag as u64
    }
}

/// What a walk found: the graph, and (in jlive's environment) the objects it gave their first
/// ID: (ID, class key, array length or -1), for the trace file to define.
pub struct Walked {
    pub graph: Graph,
    pub fresh: Vec<(u32, u32, i32)>,
    /// In jlive's environment, every object reached (class objects aside): (ID, class key,
    /// array length or -1).
    pub keyed: Vec<(u32, u32, i32)>,
    /// Beside each root of the graph: the ID of the thread object whose stack or JNI locals
    /// hold it, or which it is (a thread root); 0 when none or unknown.
    pub root_threads: Vec<u64>,
}

/// Walks the heap in `jvmti` (jlive's environment for [`Ids::Agent`], the walk's own for
/// [`Ids::Own`]).
pub fn walk(jvmti: Jvmti, jni: Jni<'_>, ids: Ids<'_>) -> Result<Walked, String> {
    let frame = jni.local_frame(16);
    let jni = frame.jni();
    let classes = jvmti
        .loaded_classes(jni)
        .map_err(|e| format!("GetLoadedClasses: {}", e))?;
    jni.ensure_local_capacity(classes.len() + 16);
    let mut graph = Graph::default();
    let mut class_of_tag: HashMap<i64, u32> = HashMap::with_capacity(classes.len());
    for (i, class) in classes.iter().enumerate() {
        let Ok(signature) = jvmti.class_signature(class) else {
            continue;
        };
        let status = jvmti.class_status(class).unwrap_or(0);
        if status & jlive_jvm::jvmti::CLASS_STATUS_PRIMITIVE != 0 {
            continue;
        }
        let tag = match &ids {
            Ids::Agent(p) => {
                let c = p.classes(jvmti, jni);
                match p.hub().quietly(|| c.key(class)) {
                    Some(key) => CLASS_TAG | i64::from(key),
                    None => continue,
                }
            }
            Ids::Own => {
                let tag = CLASS_TAG | i as i64;
                if jvmti.set_tag(class, tag).is_err() {
                    continue;
                }
                tag
            }
        };
        class_of_tag.insert(tag, graph.classes.len() as u32);
        graph.classes.push(internal_name(&signature));
    }
    let unknown = graph.classes.len() as u32;
    graph
        .classes
        .push("(a class loaded during the walk)".into());
    let mut list = Listing {
        agent: match ids {
            Ids::Agent(p) => Some(p),
            Ids::Own => None,
        },
        next_own: 0,
        seen: HashSet::new(),
        fresh: Vec::new(),
        keyed: Vec::new(),
        objects: Vec::new(),
        class_of_tag,
        unknown,
    };
    let (mut refs, mut roots, mut root_threads) = (Vec::new(), Vec::new(), Vec::new());
    let mut visit = |r: &HeapRef| -> Option<i64> {
        let (id, new_tag) = list.object(r.class_tag, r.size, r.tag, r.length)?;
        let kind = r.kind.clamp(0, 255) as u8;
        match r.referrer {
            Some(from) => refs.push(Ref {
                from: id_of(from),
                to: id,
                kind,
            }),
            None => {
                roots.push(Root { kind, to: id });
                root_threads.push(match kind {
                    THREAD_ROOT => id,
                    _ if r.thread_tag != 0 => id_of(r.thread_tag),
                    _ => 0,
                });
            }
        }
        new_tag
    };
    jvmti
        .follow_references(&mut visit)
        .map_err(|e| format!("FollowReferences: {}", e))?;
    if list.agent.is_none() {
        // What the JVM keeps alive that no JVMTI reference leads to (a class's resolved
        // constant-pool entries, held by the class's metadata): listed, with no edge to them.
        let mut unreached = |class_tag: i64, size: i64, tag: i64, length: i32| {
            list.object(class_tag, size, tag, length)?.1
        };
        jvmti
            .iterate_through_heap(&mut unreached)
            .map_err(|e| format!("IterateThroughHeap: {}", e))?;
    }
    graph.objects = list.objects;
    graph.refs = refs;
    graph.roots = roots;
    Ok(Walked {
        graph,
        fresh: list.fresh,
        keyed: list.keyed,
        root_threads,
    })
}

/// JVMTI_HEAP_REFERENCE_THREAD: a thread object is a root.
const THREAD_ROOT: u8 = 26;

/// The threads that have recorded, by the ID of their thread object (tagged by the walk).
fn thread_keys(p: &Runtime) -> HashMap<u64, jlive_writer::record::ThreadKey> {
    let jvmti = p.jvmti();
    let mut keys = HashMap::new();
    let _ = p.vm().with_env(|jni| {
        let frame = jni.local_frame(16);
        let jni = frame.jni();
        for t in jvmti.all_threads(jni).unwrap_or_default() {
            let tag = jvmti.tag(&t).unwrap_or(0);
            let key = jvmti
                .object_hash_code(&t)
                .and_then(|h| p.symbols().thread_by_hash(h));
            if let (true, Some(key)) = (tag != 0, key) {
                keys.insert(id_of(tag), key);
            }
            jni.delete_local(t);
        }
    });
    keys
}

/// The objects a walk has listed, and how new ones get their IDs.
struct Listing<'a> {
    /// jlive's environment ([`Ids::Agent`]), or None for the walk's own.
    agent: Option<&'a Runtime>,
    next_own: u64,
    seen: HashSet<u64>,
    fresh: Vec<(u32, u32, i32)>,
    keyed: Vec<(u32, u32, i32)>,
    objects: Vec<Object>,
    class_of_tag: HashMap<i64, u32>,
    unknown: u32,
}

impl Listing<'_> {
    /// The ID of an object the walk reports (each time a reference leads to it), and the tag
    /// to give it if it had none; listed the first time. None once IDs are used up.
    fn object(
        &mut self,
        class_tag: i64,
        size: i64,
        tag: i64,
        length: i32,
    ) -> Option<(u64, Option<i64>)> {
        let (id, new_tag) = if tag != 0 {
            (id_of(tag), None)
        } else {
            let id = match self.agent {
                Some(p) => u64::from(p.new_object_id()?),
                None => {
                    self.next_own += 1;
                    self.next_own
                }
            };
            if self.agent.is_some() && class_tag & CLASS_TAG != 0 {
                self.fresh
                    .push((id as u32, (class_tag & 0xFFFF_FFFF) as u32, length));
            }
            (id, Some(id as i64))
        };
        if self.seen.insert(id) {
            if self.agent.is_some() && class_tag & CLASS_TAG != 0 && id < CLASS_IDS {
                self.keyed
                    .push((id as u32, (class_tag & 0xFFFF_FFFF) as u32, length));
            }
            self.objects.push(Object {
                id,
                class: self
                    .class_of_tag
                    .get(&class_tag)
                    .copied()
                    .unwrap_or(self.unknown),
                size: size.max(0) as u64,
                length,
            });
        }
        Some((id, new_tag))
    }
}

/// `jlive ctl heap FILE`: the graph of the live heap (a full collection first, as
/// `jmap -dump:live` does), walked in an environment of its own, written to `path`. The answer
/// counts what was written.
pub fn to_file(p: &Runtime, path: &str) -> Result<String, String> {
    let mut caps = Capabilities::default();
    caps.set(cap::TAG_OBJECTS);
    let env = p
        .vm()
        .new_jvmti_env(&caps)
        .map_err(|e| format!("no JVMTI environment for the walk: {}", e))?;
    // As `jmap -dump:live` and `jcmd GC.class_histogram` do: only live objects stay.
    if let Err(e) = env.force_garbage_collection() {
        crate::log::info(&format!("no collection before the heap walk: {}", e));
    }
    let graph = p
        .vm()
        .with_env(|jni| walk(env, jni, Ids::Own).map(|w| w.graph))
        .unwrap_or_else(|| Err("this thread cannot attach to the JVM".into()));
    // Every tag the walk set goes with its environment.
    // SAFETY: the walk, which held the only copies of `env`, is over.
    unsafe { env.dispose() };
    let graph = graph?;
    let write = || -> std::io::Result<()> {
        let file = std::fs::File::create(path)?;
        let mut w = std::io::BufWriter::new(file);
        jlive_writer::heap::write(&graph, &mut w)?;
        std::io::Write::flush(&mut w)
    };
    write().map_err(|e| format!("cannot write {}: {}", path, e))?;
    Ok(format!(
        "heap: {} objects, {} bytes, {} references, {} roots written to {}",
        graph.objects.len(),
        graph.objects.iter().map(|o| o.size).sum::<u64>(),
        graph.refs.len(),
        graph.roots.len(),
        path
    ))
}

/// What a heap dump into the trace holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dump {
    /// The live objects (the visualizer's `dp`): each defined, and those the file defined that
    /// are gone freed.
    Population,
    /// The live objects' references and the roots (the visualizer's `dr`).
    References,
    /// Both (`jlive ctl heap` with no file).
    Both,
}

/// The JVMTI root kind of a reference kind (21..27), as the model names it.
fn root_kind(kind: u8) -> jlive_writer::model::RootKind {
    use jlive_writer::model::RootKind as K;
    match kind {
        21 => K::JniGlobal,
        22 => K::StickyClass,
        23 => K::Monitor,
        24 => K::JavaStack,
        25 => K::JniLocal,
        26 => K::Thread,
        _ => K::Unknown,
    }
}

/// Walks the heap in jlive's environment (a full collection first, as `jmap -dump:live`
/// does) and sends the dump to the trace, after every record made before it; it ends with a
/// generation mark. The answer counts what was sent.
pub fn to_trace(p: &Runtime, what: Dump) -> Result<String, String> {
    if let Err(e) = p.jvmti().force_garbage_collection() {
        crate::log::info(&format!("no collection before the heap walk: {}", e));
    }
    // Objects given IDs from here on are not the walk's to free.
    let below = p.next_object_id();
    let walked = p
        .vm()
        .with_env(|jni| walk(p.jvmti(), jni, Ids::Agent(p)))
        .unwrap_or_else(|| Err("this thread cannot attach to the JVM".into()))?;
    let not_array = |length: i32| u32::try_from(length).unwrap_or(jlive_writer::record::NOT_ARRAY);
    let mut dump = jlive_writer::record::HeapDump {
        ticks: crate::clock::ticks(),
        objects: walked
            .keyed
            .iter()
            .map(|&(id, class, length)| (id, class, not_array(length)))
            .collect(),
        population: what != Dump::References,
        below,
        ..Default::default()
    };
    if what != Dump::Population {
        let graph = &walked.graph;
        // A class object's ID holds its class key; class loaders' IDs lie above all.
        let class_object = |id: u64| id >> 32 == 1;
        for r in graph
            .refs
            .iter()
            .filter(|r| jlive_writer::heap::is_field(r.kind) && r.to < CLASS_IDS)
        {
            if class_object(r.from) {
                // Static fields.
                dump.statics.push((r.from as u32, r.to as u32));
            } else if r.from < CLASS_IDS {
                dump.refs.push((r.from as u32, r.to as u32));
            }
        }
        let threads = thread_keys(p);
        dump.roots = graph
            .roots
            .iter()
            .zip(&walked.root_threads)
            .filter(|(r, _)| r.to < CLASS_IDS)
            .map(|(r, t)| (root_kind(r.kind), r.to as u32, threads.get(t).copied()))
            .collect();
    }
    let answer = format!(
        "heap into the trace: {} objects, {} references, {} static references, {} roots",
        dump.objects.len(),
        dump.refs.len(),
        dump.statics.len(),
        dump.roots.len()
    );
    p.hub().collect();
    p.hub()
        .control(jlive_writer::record::Message::Heap(Box::new(dump)));
    Ok(answer)
}
