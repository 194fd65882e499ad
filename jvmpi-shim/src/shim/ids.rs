//! IDs: jobjectIDs as JVMTI tags, classes and their CLASS_LOAD payloads, line tables.

use super::*;
use crate::abi::{self, event, EventData, JobjectId};
use jlive_jvm::jni::Jni;
use jlive_jvm::jvmti::{self, ACC_STATIC};
use jlive_jvm::refs::{Class, Local, MethodId, Ref};
use jni_sys::jint;
use std::ffi::CString;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A CLASS_LOAD's payload, owning what the event points to while it is delivered.
pub struct ClassLoadData {
    name: CString,
    source: CString,
    interfaces: jint,
    methods: Vec<abi::Method>,
    statics: Vec<abi::Field>,
    instances: Vec<abi::Field>,
    _strings: Vec<CString>,
    id: u64,
}

impl ClassLoadData {
    pub fn event(&self) -> EventData {
        EventData {
            class_load: abi::ClassLoad {
                class_name: self.name.as_ptr(),
                source_name: self.source.as_ptr(),
                num_interfaces: self.interfaces,
                num_methods: self.methods.len() as jint,
                methods: self.methods.as_ptr(),
                num_static_fields: self.statics.len() as jint,
                statics: self.statics.as_ptr(),
                num_instance_fields: self.instances.len() as jint,
                instances: self.instances.as_ptr(),
                class_id: id_ptr(self.id),
            },
        }
    }
}

/// The tags an object of this ID may carry (its flag bits set or not).
pub fn tag_variants(id: u64) -> [i64; 8] {
    let t = id as i64;
    std::array::from_fn(|flags| t | flags as i64)
}

pub fn id_ptr(id: u64) -> JobjectId {
    id as usize as JobjectId
}

pub fn ptr_id(p: JobjectId) -> u64 {
    p as usize as u64
}

impl Shim {
    pub(crate) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) << 3
    }

    /// The jobjectID of an object, given one now if it has none (0 for null).
    pub fn object_id(&self, object: &impl Ref) -> u64 {
        (self.object_tag(object) & !7) as u64
    }

    /// An object's tag, flags and all; a new ID if it had none (0 if JVMTI fails).
    pub(super) fn object_tag(&self, object: &impl Ref) -> i64 {
        match self.jvmti.tag(object) {
            Ok(0) => {
                let id = self.new_id() as i64;
                let _ = self.jvmti.set_tag(object, id);
                id
            }
            Ok(tag) => tag,
            Err(_) => 0,
        }
    }

    /// The object with this jobjectID (a local reference of the calling thread).
    pub fn object_of<'l>(&self, jni: Jni<'l>, id: u64) -> Option<Local<'l>> {
        if id == 0 {
            return None;
        }
        let tags = tag_variants(id);
        self.jvmti
            .objects_with_tags(jni, &tags)
            .ok()?
            .into_iter()
            .map(|(o, _)| o)
            .next()
    }

    /// The ID of a class object; its CLASS_LOAD goes out first if it never did (when
    /// CLASS_LOAD is on), so the agent knows every class ID before it sees one. A thread that
    /// finds another announcing the class waits (up to a second) until the agent has it; no
    /// lock is held across a JVMTI call or the agent's handler.
    pub fn class_id(&self, jni: Jni<'_>, class: &Class<'_>) -> u64 {
        let me = crate::monitor::thread_token();
        let deadline = Instant::now() + Duration::from_secs(1);
        let id = loop {
            let tag = self.class_tag(class);
            if tag & ANNOUNCED != 0 || tag == 0 {
                return (tag & !7) as u64;
            }
            let id = (tag & !7) as u64;
            // Told only when CLASS_LOAD is on, and never from the shim's own threads: a class
            // seen before stays unannounced until the agent would get its CLASS_LOAD.
            if !self.on(event::CLASS_LOAD) || Self::own_thread() {
                return id;
            }
            // A class loaded but not yet linked (the element class of a new array, say) has
            // no methods to describe yet: its CLASS_LOAD waits for ClassPrepare.
            let ready = jvmti::CLASS_STATUS_PREPARED
                | jvmti::CLASS_STATUS_ARRAY
                | jvmti::CLASS_STATUS_PRIMITIVE;
            if self.jvmti.class_status(class).unwrap_or(0) & ready == 0 {
                return id;
            }
            let mut a = self.announcing.lock();
            match a.get(&id) {
                // This thread announces it already (the agent's handler asks about it).
                Some(&t) if t == me => return id,
                Some(_) if Instant::now() < deadline => {
                    self.announced.wait_until(&mut a, deadline);
                }
                Some(_) => return id,
                None => {
                    a.insert(id, me);
                    break id;
                }
            }
        };
        // The entry goes even if the agent's handler panics through us.
        struct Announcing<'a>(&'a Shim, u64);
        impl Drop for Announcing<'_> {
            fn drop(&mut self) {
                self.0.announcing.lock().remove(&self.1);
                self.0.announced.notify_all();
            }
        }
        let _announcing = Announcing(self, id);
        if let Some(data) = self.class_load_data(jni, class, id) {
            self.send(jni.raw(), event::CLASS_LOAD, data.event());
        }
        let tag = self.jvmti.tag(class).unwrap_or(id as i64 | CLASS_BIT);
        let _ = self.jvmti.set_tag(class, tag | ANNOUNCED);
        id
    }

    /// A Class object's tag, the class bit set; given its ID now if it has none (one thread
    /// at a time, so that a class never gets two IDs). 0 if JVMTI fails.
    pub(super) fn class_tag(&self, class: &impl Ref) -> i64 {
        let tag = self.jvmti.tag(class).unwrap_or(0);
        if tag != 0 && tag & CLASS_BIT != 0 {
            return tag;
        }
        let _one = self.class_tags.lock();
        let tag = self.jvmti.tag(class).unwrap_or(0);
        let tag = if tag == 0 {
            self.new_id() as i64 | CLASS_BIT
        } else {
            tag | CLASS_BIT
        };
        match self.jvmti.set_tag(class, tag) {
            Ok(()) => tag,
            Err(_) => 0,
        }
    }

    pub(super) fn class_load_data(
        &self,
        jni: Jni<'_>,
        class: &Class<'_>,
        id: u64,
    ) -> Option<ClassLoadData> {
        let j = self.jvmti;
        let signature = j.class_signature(class).ok()?;
        let mut strings = Vec::new();
        let mut keep = |s: String| {
            let c = cstring(&s);
            let p = c.as_ptr();
            strings.push(c);
            p
        };
        let mut methods = Vec::new();
        for m in j.class_methods(class).unwrap_or_default() {
            let Ok((name, sig)) = j.method_name(m) else {
                continue;
            };
            let lines = self.line_table(m);
            let start = lines.iter().map(|l| l.1).min().map_or(-1, |l| l as jint);
            let end = lines.iter().map(|l| l.1).max().map_or(-1, |l| l as jint);
            methods.push(abi::Method {
                method_name: keep(name),
                method_signature: keep(sig),
                start_lineno: start,
                end_lineno: end,
                method_id: m.as_raw(),
            });
        }
        let (mut statics, mut instances) = (Vec::new(), Vec::new());
        for f in j.class_fields(class).unwrap_or_default() {
            let Ok((name, sig)) = j.field_name(class, f) else {
                continue;
            };
            let field = abi::Field {
                field_name: keep(name),
                field_signature: keep(sig),
            };
            if j.field_modifiers(class, f).unwrap_or(0) & ACC_STATIC != 0 {
                statics.push(field);
            } else {
                instances.push(field);
            }
        }
        let interfaces = j.implemented_interfaces(jni, class).unwrap_or_default();
        let count = interfaces.len() as jint;
        for i in interfaces {
            jni.delete_local(i);
        }
        Some(ClassLoadData {
            name: cstring(&class_name(&signature)),
            source: cstring(&j.source_file_name(class).unwrap_or_default()),
            interfaces: count,
            methods,
            statics,
            instances,
            _strings: strings,
            id,
        })
    }

    /// A method's line table, kept once read.
    pub fn line_table(&self, method: MethodId) -> Arc<Vec<(u32, u32)>> {
        if let Some(t) = self.lines.lock().get(&method.key()) {
            return t.clone();
        }
        let t = Arc::new(self.jvmti.line_numbers(method));
        self.lines.lock().insert(method.key(), t.clone());
        t
    }
}
