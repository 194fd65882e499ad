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

use crate::classes::{Classes, CLASS_TAG};
use crate::ffi::jni::Jni;
use crate::ffi::jvmti::{cap, Capabilities, HeapRef, Jvmti};
use crate::profiler::Profiler;
use jlive_writer::heap::{Graph, Object, Ref, Root};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

/// IDs above every object ID: a class object's is this plus its key (or index).
pub const CLASS_IDS: u64 = 1 << 32;

/// Whose tags the walk reads and writes.
pub enum Ids<'a> {
    /// jlive's environment: objects keep their IDs, new ones take the agent's next.
    Agent(&'a Profiler),
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

/// The internal name of a class from its JVM signature (`Ljava/lang/String;` →
/// `java/lang/String`; arrays and primitives as they are).
fn internal_name(signature: &str) -> String {
    signature
        .strip_prefix('L')
        .and_then(|s| s.strip_suffix(';'))
        .unwrap_or(signature)
        .to_string()
}

/// What a walk found: the graph, and (in jlive's environment) the objects it gave their first
/// ID: (ID, class key, array length or -1), for the trace file to define.
pub struct Walked {
    pub graph: Graph,
    pub fresh: Vec<(u32, u32, i32)>,
}

/// Walks the heap in `jvmti` (jlive's environment for [`Ids::Agent`], the walk's own for
/// [`Ids::Own`]).
pub fn walk(jvmti: Jvmti, jni: Jni<'_>, ids: Ids<'_>) -> Result<Walked, String> {
    let _frame = jni.local_frame(16);
    let classes = jvmti
        .loaded_classes()
        .map_err(|e| format!("GetLoadedClasses: {}", e))?;
    jni.ensure_local_capacity(classes.len() + 16);
    let mut graph = Graph::default();
    let mut class_of_tag: HashMap<i64, u32> = HashMap::with_capacity(classes.len());
    for (i, &class) in classes.iter().enumerate() {
        let Ok(signature) = jvmti.class_signature(class) else {
            continue;
        };
        let status = jvmti.class_status(class).unwrap_or(0);
        if status & crate::ffi::jvmti::CLASS_STATUS_PRIMITIVE != 0 {
            continue;
        }
        let tag = match &ids {
            Ids::Agent(p) => {
                let c = Classes {
                    jvmti,
                    jni,
                    registry: &p.registry,
                };
                match p.hub.quietly(|| c.key(class)) {
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
    let mut next_own = 0u64;
    let mut next_id = || -> Option<u64> {
        match &ids {
            Ids::Agent(p) => {
                let id = p.next_object.fetch_add(1, Ordering::Relaxed);
                (id != 0 && id < jlive_writer::record::PENDING_OBJECT).then_some(u64::from(id))
            }
            Ids::Own => {
                next_own += 1;
                Some(next_own)
            }
        }
    };
    let mut seen: HashSet<u64> = HashSet::new();
    let mut fresh = Vec::new();
    let agent = matches!(ids, Ids::Agent(_));
    let Graph {
        objects,
        refs,
        roots,
        ..
    } = &mut graph;
    let mut visit = |r: &HeapRef| -> Option<i64> {
        let (id, new_tag) = if r.tag == 0 {
            let id = next_id()?;
            (id, Some(id as i64))
        } else {
            (id_of(r.tag), None)
        };
        if agent && new_tag.is_some() && r.class_tag & CLASS_TAG != 0 {
            fresh.push((id as u32, (r.class_tag & 0xFFFF_FFFF) as u32, r.length));
        }
        // Reported once per reference to it: listed at the first.
        if seen.insert(id) {
            objects.push(Object {
                id,
                class: class_of_tag.get(&r.class_tag).copied().unwrap_or(unknown),
                size: r.size.max(0) as u64,
                length: r.length,
            });
        }
        let kind = r.kind.clamp(0, 255) as u8;
        match r.referrer {
            Some(from) => refs.push(Ref {
                from: id_of(from),
                to: id,
                kind,
            }),
            None => roots.push(Root { kind, to: id }),
        }
        new_tag
    };
    jvmti
        .follow_references(&mut visit)
        .map_err(|e| format!("FollowReferences: {}", e))?;
    if matches!(ids, Ids::Own) {
        // What the JVM keeps alive that no JVMTI reference leads to (a class's resolved
        // constant-pool entries, held by the class's metadata): listed, with no edge to them.
        let mut unreached = |class_tag: i64, size: i64, tag: i64, length: i32| -> Option<i64> {
            let (id, new_tag) = if tag == 0 {
                let id = next_id()?;
                (id, Some(id as i64))
            } else {
                (id_of(tag), None)
            };
            if seen.insert(id) {
                objects.push(Object {
                    id,
                    class: class_of_tag.get(&class_tag).copied().unwrap_or(unknown),
                    size: size.max(0) as u64,
                    length,
                });
            }
            new_tag
        };
        jvmti
            .iterate_through_heap(&mut unreached)
            .map_err(|e| format!("IterateThroughHeap: {}", e))?;
    }
    Ok(Walked { graph, fresh })
}

/// `jlive ctl heap FILE`: the graph of the live heap (a full collection first, as
/// `jmap -dump:live` does), walked in an environment of its own, written to `path`. The answer
/// counts what was written.
pub fn to_file(p: &Profiler, path: &str) -> Result<String, String> {
    let mut caps = Capabilities::default();
    caps.set(cap::TAG_OBJECTS);
    let env =
        p.vm.new_jvmti_env(&caps)
            .map_err(|e| format!("no JVMTI environment for the walk: {}", e))?;
    // As `jmap -dump:live` and `jcmd GC.class_histogram` do: only live objects stay.
    if let Err(e) = env.force_garbage_collection() {
        crate::log::info(&format!("no collection before the heap walk: {}", e));
    }
    let graph =
        p.vm.with_env(|jni| walk(env, jni, Ids::Own).map(|w| w.graph))
            .unwrap_or_else(|| Err("this thread cannot attach to the JVM".into()));
    // Every tag the walk set goes with its environment.
    env.dispose();
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
