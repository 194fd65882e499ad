//! HEAP_DUMP, OBJECT_DUMP and MONITOR_DUMP, in the byte formats of the specification's
//! section 4, as the VMs of the era wrote them (`include/jvmpi.h` has the numbers): u1 as is,
//! u2/u4/u8 big-endian, IDs (jobjectID, JNIEnv*, raw monitor, name pointer) native pointers in
//! native byte order.
//!
//! ```text
//! heap dump, level 0:  ( ty:u1  object:id )*
//! level 1 and 2:       ( record-type:u1  record )*   roots, then one dump per object:
//!   ROOT_UNKNOWN       object
//!   ROOT_JNI_GLOBAL    object, jobject (0: not known)
//!   ROOT_JAVA_FRAME    object, thread env (0: not known), frame:u4 (-1)
//!   ROOT_STICKY_CLASS  class
//!   ROOT_THREAD_BLOCK  thread object, thread env
//!   ROOT_MONITOR_USED  object
//!   CLASS_DUMP         class, super, loader, signers (0), domain (0), 0, 0, instance size:u4,
//!                      interfaces:id*, constant pool count:u2 (0), static values*
//!   INSTANCE_DUMP      object, class, n:u4, n bytes of instance field values (the class's
//!                      fields, then its superclass's, ...)
//!   OBJ_ARRAY_DUMP     array, length:u4, element class, elements:id*
//!   PRIM_ARRAY_DUMP    array, length:u4, ty:u1, elements (none at level 1)
//! Level 1 leaves out primitive instance fields, primitive statics and primitive elements.
//! monitor dump:
//!   MONITOR_JAVA  object, owner env, entries:u4, n:u4, entering env*, m:u4, waiting env*
//!   MONITOR_RAW   name pointer, monitor id, owner env, entries:u4, n:u4, env*, m:u4, env*
//! ```
//! Values are as many bytes as their type: boolean, byte 1; char, short 2; int, float 4;
//! long, double 8; references an ID.

use crate::abi::{self, dump, event, CallFrame, CallTrace, EventData};
use crate::shim::Shim;
use jlive_jvm::jni::{FieldValue, Jni, Layout};
use jlive_jvm::jvmti::{cap, CLASS_STATUS_ARRAY, CLASS_STATUS_PREPARED, CLASS_STATUS_PRIMITIVE};
use jlive_jvm::refs::{Class, Local};
use jni_sys::{jint, JNIEnv};
use std::collections::HashMap;
use std::ffi::c_char;
use std::rc::Rc;

/// The deepest stack a dump's traces carry.
const TRACE_DEPTH: usize = 64;

#[derive(Default)]
struct Out(Vec<u8>);

impl Out {
    fn u1(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u2(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn u4(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn id(&mut self, v: u64) {
        self.0.extend_from_slice(&(v as usize).to_ne_bytes());
    }
}

/// Bytes of a value of this descriptor.
fn value_size(descriptor: u8) -> u32 {
    match descriptor {
        b'Z' | b'B' => 1,
        b'C' | b'S' => 2,
        b'I' | b'F' => 4,
        b'J' | b'D' => 8,
        _ => std::mem::size_of::<usize>() as u32,
    }
}

/// A class's fields as JNI reads them, and an instance's field bytes as INSTANCE_DUMP counts
/// them.
struct Entry {
    layout: Layout,
    instance_size: u32,
}

/// The layouts of the classes one dump has met, each asked of JVMTI once.
#[derive(Default)]
struct Layouts(HashMap<u64, Rc<Entry>>);

impl Layouts {
    fn of(&mut self, s: &Shim, jni: Jni<'_>, class: &Class<'_>) -> Option<Rc<Entry>> {
        let id = s.class_id(jni, class);
        if let Some(l) = self.0.get(&id) {
            return Some(l.clone());
        }
        let layout = jni.layout(s.jvmti, class)?;
        let instance_size = layout
            .instance()
            .map(|d| value_size(*d.as_bytes().first().unwrap_or(&b'L')))
            .sum();
        let entry = Rc::new(Entry {
            layout,
            instance_size,
        });
        self.0.insert(id, entry.clone());
        Some(entry)
    }

    /// Lets go of the classes the layouts hold.
    fn release(self, jni: Jni<'_>) {
        for (_, entry) in self.0 {
            if let Ok(entry) = Rc::try_unwrap(entry) {
                jni.forget_layout(entry.layout);
            }
        }
    }
}

/// Writes one value (a primitive only at level 2).
fn value(s: &Shim, jni: Jni<'_>, out: &mut Out, v: FieldValue<'_>, level: jint) {
    match v {
        FieldValue::Object(None) => out.id(0),
        FieldValue::Object(Some(o)) => {
            out.id(s.object_id(&o));
            jni.delete_local(o);
        }
        FieldValue::Bytes(b) => {
            if level >= 2 {
                out.0.extend_from_slice(&b);
            }
        }
    }
}

/// The dump record of one object (class, instance or array).
fn record(
    s: &Shim,
    jni: Jni<'_>,
    layouts: &mut Layouts,
    object: Local<'_>,
    id: u64,
    level: jint,
    out: &mut Out,
) -> bool {
    let frame = jni.local_frame(32);
    let jni = frame.jni();
    let Some(class) = jni.object_class(&object) else {
        return false;
    };
    let signature = s.jvmti.class_signature(&class).unwrap_or_default();
    if signature == "Ljava/lang/Class;" {
        // Only a class that is linked gets a record: int.class and its kind are no classes
        // to JVMPI, and the mirrors of classes that the CDS archive holds but this run never
        // loaded have no loader yet (HotSpot's GetClassLoader crashes on them).
        let linked = s.jvmti.class_status(&object).is_ok_and(|st| {
            st & CLASS_STATUS_PRIMITIVE == 0
                && st & (CLASS_STATUS_PREPARED | CLASS_STATUS_ARRAY) != 0
        });
        return match jni.as_class(object) {
            Ok(object) if linked => class_dump(s, jni, layouts, &object, level, out),
            _ => false,
        };
    }
    if let Some(array) = jni.array(s.jvmti, &object) {
        let length = array.length();
        if matches!(array.element(), b'L' | b'[') {
            out.u1(dump::OBJ_ARRAY_DUMP);
            out.id(id);
            out.u4(length as u32);
            let element_class = jni
                .component_type(&class)
                .map_or(0, |c| s.class_id(jni, &c));
            out.id(element_class);
            for i in 0..length {
                match jni.array_object(&array, i) {
                    Some(o) => {
                        out.id(s.object_id(&o));
                        jni.delete_local(o);
                    }
                    None => out.id(0),
                }
            }
        } else {
            out.u1(dump::PRIM_ARRAY_DUMP);
            out.id(id);
            out.u4(length as u32);
            out.u1(crate::shim::array_kind(&signature) as u8);
            if level >= 2 {
                out.0.extend_from_slice(&jni.primitive_array_bytes(&array));
            }
        }
        return true;
    }
    // The layout first: a record is written whole or not at all.
    let Some(entry) = layouts.of(s, jni, &class) else {
        return false;
    };
    out.u1(dump::INSTANCE_DUMP);
    out.id(id);
    out.id(s.class_id(jni, &class));
    let mut values = Out::default();
    for v in jni
        .instance_values(&object, &entry.layout)
        .unwrap_or_default()
    {
        value(s, jni, &mut values, v, level);
    }
    out.u4(values.0.len() as u32);
    out.0.extend_from_slice(&values.0);
    true
}

fn class_dump(
    s: &Shim,
    jni: Jni<'_>,
    layouts: &mut Layouts,
    class: &Class<'_>,
    level: jint,
    out: &mut Out,
) -> bool {
    let j = s.jvmti;
    let Some(entry) = layouts.of(s, jni, class) else {
        return false;
    };
    out.u1(dump::CLASS_DUMP);
    out.id(s.class_id(jni, class));
    out.id(jni.superclass(class).map_or(0, |c| s.class_id(jni, &c)));
    // An array class's loader is its element class's; HotSpot's GetClassLoader crashes on
    // some array classes (an archived one this run has not loaded): 0 for arrays.
    let array = j
        .class_status(class)
        .is_ok_and(|st| st & CLASS_STATUS_ARRAY != 0);
    let loader = if array {
        None
    } else {
        j.class_loader(jni, class)
    };
    out.id(loader.map_or(0, |l| s.object_id(&l)));
    out.id(0); // signers
    out.id(0); // protection domain
    out.id(0); // reserved
    out.id(0); // reserved
    out.u4(entry.instance_size);
    for i in j.implemented_interfaces(jni, class).unwrap_or_default() {
        out.id(s.class_id(jni, &i));
        jni.delete_local(i);
    }
    out.u2(0); // constant pool entries: none given
    for v in jni.static_values(&entry.layout) {
        value(s, jni, out, v, level);
    }
    true
}

/// Every known thread's stack (status too, for the monitor dump).
struct Traces {
    _frames: Vec<Vec<CallFrame>>,
    traces: Vec<CallTrace>,
    status: Vec<jint>,
}

fn traces(s: &Shim) -> Traces {
    let mut frames = Vec::new();
    let mut traces = Vec::new();
    let mut status = Vec::new();
    for slot in s.all_slots() {
        let env = slot.env as *mut JNIEnv;
        let mut f = vec![
            CallFrame {
                lineno: 0,
                method_id: std::ptr::null_mut(),
            };
            TRACE_DEPTH
        ];
        let n = s.call_trace(env, &mut f);
        f.truncate(n);
        traces.push(CallTrace {
            env_id: env,
            num_frames: n as jint,
            frames: f.as_mut_ptr(),
        });
        frames.push(f);
        status.push(s.status(env));
    }
    Traces {
        _frames: frames,
        traces,
        status,
    }
}

fn send_dump(s: &Shim, jni: Jni<'_>, ev: jint, u: EventData) {
    s.send(jni.raw(), ev | abi::REQUESTED_EVENT, u);
}

pub fn object_dump(s: &Shim, jni: Jni<'_>, id: u64) -> jint {
    let frame = jni.local_frame(16);
    let jni = frame.jni();
    let Some(object) = s.object_of(jni, id) else {
        return abi::FAIL;
    };
    let mut out = Out::default();
    let mut layouts = Layouts::default();
    let recorded = record(s, jni, &mut layouts, object, id, 2, &mut out);
    layouts.release(jni);
    if !recorded {
        return abi::FAIL;
    }
    send_dump(
        s,
        jni,
        event::OBJECT_DUMP,
        EventData {
            object_dump: abi::ObjectDump {
                data_len: out.0.len() as jint,
                data: out.0.as_ptr() as *const c_char,
            },
        },
    );
    abi::SUCCESS
}

/// The JVMTI root kinds (jvmtiHeapReferenceKind 21..27) as JVMPI root records.
fn root(out: &mut Out, kind: jint, id: u64, thread_env: &HashMap<u64, u64>) {
    match kind {
        21 => {
            out.u1(dump::ROOT_JNI_GLOBAL);
            out.id(id);
            out.id(0);
        }
        22 => {
            out.u1(dump::ROOT_STICKY_CLASS);
            out.id(id);
        }
        23 => {
            out.u1(dump::ROOT_MONITOR_USED);
            out.id(id);
        }
        24 | 25 => {
            out.u1(if kind == 24 {
                dump::ROOT_JAVA_FRAME
            } else {
                dump::ROOT_JNI_LOCAL
            });
            out.id(id);
            out.id(0);
            out.u4(u32::MAX);
        }
        26 => {
            out.u1(dump::ROOT_THREAD_BLOCK);
            out.id(id);
            out.id(thread_env.get(&id).copied().unwrap_or(0));
        }
        _ => {
            out.u1(dump::ROOT_UNKNOWN);
            out.id(id);
        }
    }
}

pub fn heap_dump(s: &Shim, jni: Jni<'_>, level: jint) -> jint {
    if !(0..=2).contains(&level) {
        return abi::FAIL;
    }
    let frame = jni.local_frame(64);
    let jni = frame.jni();
    let j = s.jvmti;
    // Every loaded class has an ID and a kind first (CLASS_LOAD goes out for any new one).
    let mut kinds: HashMap<u64, jint> = HashMap::new();
    for class in j.loaded_classes(jni).unwrap_or_default() {
        let primitive = j
            .class_status(&class)
            .is_ok_and(|st| st & CLASS_STATUS_PRIMITIVE != 0);
        if !primitive {
            let id = s.class_id(jni, &class);
            let (kind, _) = s.kind_of(jni, &class);
            kinds.insert(id, kind);
        }
        jni.delete_local(class);
    }
    let mut out = Out::default();
    let new_tag = |tag: i64| -> (u64, Option<i64>) {
        if tag == 0 {
            let id = s.new_id();
            (id, Some(id as i64))
        } else {
            ((tag & !7) as u64, None)
        }
    };
    if level > 0 {
        let thread_env: HashMap<u64, u64> =
            s.all_slots().iter().map(|t| (t.id, t.env as u64)).collect();
        let mut roots = Vec::new();
        let walked = j.follow_references(&mut |r| {
            let (id, set) = new_tag(r.tag);
            if r.referrer.is_none() {
                roots.push((r.kind, id));
            }
            set
        });
        if walked.is_err() {
            return abi::FAIL;
        }
        for (kind, id) in roots {
            root(&mut out, kind, id, &thread_env);
        }
    }
    let mut objects: Vec<(u64, u64, jint)> = Vec::new();
    let listed = j.iterate_through_heap(&mut |class_tag, _size, tag, length| {
        let (id, set) = new_tag(tag);
        objects.push((id, (class_tag & !7) as u64, length));
        set
    });
    if listed.is_err() {
        return abi::FAIL;
    }
    if level == 0 {
        for &(id, class, length) in &objects {
            let ty = if length < 0 {
                abi::NORMAL_OBJECT
            } else {
                kinds.get(&class).copied().unwrap_or(abi::CLASS)
            };
            out.u1(ty as u8);
            out.id(id);
        }
    } else {
        let mut layouts = Layouts::default();
        for chunk in objects.chunks(256) {
            let chunk_frame = jni.local_frame(1100);
            let jni = chunk_frame.jni();
            let tags: Vec<i64> = chunk
                .iter()
                .flat_map(|&(id, _, _)| crate::shim::tag_variants(id))
                .collect();
            for (object, tag) in j.objects_with_tags(jni, &tags).unwrap_or_default() {
                record(
                    s,
                    jni,
                    &mut layouts,
                    object,
                    (tag & !7) as u64,
                    level,
                    &mut out,
                );
            }
        }
        layouts.release(jni);
    }
    let t = if level > 0 { Some(traces(s)) } else { None };
    let (num, ptr) = t.as_ref().map_or((0, std::ptr::null()), |t| {
        (t.traces.len() as jint, t.traces.as_ptr())
    });
    let range = out.0.as_ptr_range();
    send_dump(
        s,
        jni,
        event::HEAP_DUMP,
        EventData {
            heap_dump: abi::HeapDump {
                dump_level: level,
                begin: range.start as *const c_char,
                end: range.end as *const c_char,
                num_traces: num,
                traces: ptr,
            },
        },
    );
    abi::SUCCESS
}

pub fn monitor_dump(s: &Shim, jni: Jni<'_>) -> jint {
    let j = s.jvmti;
    if !s.add_capabilities(&[
        cap::GET_OWNED_MONITOR_INFO,
        cap::GET_CURRENT_CONTENDED_MONITOR,
        cap::GET_MONITOR_INFO,
    ]) {
        return abi::NOT_AVAILABLE;
    }
    let frame = jni.local_frame(64);
    let jni = frame.jni();
    let slots = s.all_slots();
    // The env of a thread, by its Thread object's ID.
    let env_of = |thread: &Local<'_>| -> u64 {
        let id = s.object_id(thread);
        slots
            .iter()
            .find(|t| t.id == id)
            .map_or(0, |t| t.env as u64)
    };
    // Monitors in use: owned by a thread, or waited for.
    let mut monitors: Vec<(u64, Local<'_>)> = Vec::new();
    for slot in &slots {
        let Some(thread) = slot.thread() else {
            continue;
        };
        let mut objects = j.owned_monitors(jni, thread).unwrap_or_default();
        objects.extend(j.contended_monitor(jni, thread));
        for o in objects {
            let id = s.object_id(&o);
            if id != 0 && !monitors.iter().any(|m| m.0 == id) {
                monitors.push((id, o));
            } else {
                jni.delete_local(o);
            }
        }
    }
    for id in s.waited_objects() {
        if !monitors.iter().any(|m| m.0 == id) {
            if let Some(o) = s.object_of(jni, id) {
                monitors.push((id, o));
            }
        }
    }
    let mut out = Out::default();
    for (id, object) in monitors {
        let Ok(usage) = j.monitor_usage(jni, &object) else {
            continue;
        };
        out.u1(dump::MONITOR_JAVA);
        out.id(id);
        out.id(usage.owner.as_ref().map_or(0, env_of));
        out.u4(usage.entry_count.max(0) as u32);
        out.u4(usage.waiters.len() as u32);
        for t in &usage.waiters {
            out.id(env_of(t));
        }
        out.u4(usage.notify_waiters.len() as u32);
        for t in &usage.notify_waiters {
            out.id(env_of(t));
        }
    }
    let raw = s.raw_monitors();
    for m in &raw {
        let u = m.usage();
        out.u1(dump::MONITOR_RAW);
        out.id(m.name.as_ptr() as u64);
        out.id(std::sync::Arc::as_ptr(m) as u64);
        out.id(u.owner_env as u64);
        out.u4(u.count);
        out.u4(u.entering.len() as u32);
        for e in &u.entering {
            out.id(*e as u64);
        }
        out.u4(u.waiting.len() as u32);
        for e in &u.waiting {
            out.id(*e as u64);
        }
    }
    let t = traces(s);
    let range = out.0.as_ptr_range();
    send_dump(
        s,
        jni,
        event::MONITOR_DUMP,
        EventData {
            monitor_dump: abi::MonitorDump {
                begin: range.start as *const c_char,
                end: range.end as *const c_char,
                num_traces: t.traces.len() as jint,
                traces: t.traces.as_ptr(),
                threads_status: t.status.as_ptr(),
            },
        },
    );
    abi::SUCCESS
}
