//! Argument, return and field values of the methods the live visualizer's value filters name
//! (`traceargvalues CLASS METHOD`, `tracereturnvalue ...`, `tracefieldvalues ...`; `*` ends a
//! prefix), under capture=events: MethodEntry reads the arguments from the new frame's locals
//! (JVMTI GetLocal*), MethodExit is handed the return value, and the receiver's fields (a static
//! method's class's static fields) are read through JNI at both. Each call's values wait in the registry
//! and the thread's buffer gets one record that points to them, after the entry's record or
//! before the exit's. Until a burst names a method, a call pays one atomic load.

use super::events::{MethodEvent, Returned};
use crate::runtime::Runtime;
use crate::symbols::internal_name;
use jlive_jvm::jni::{FieldValue, Jni};
use jlive_jvm::jvmti::{Jvmti, ACC_NATIVE, ACC_STATIC};
use jlive_jvm::refs::{Local, MethodId};
use jlive_writer::model::{Value, ValuesKind, NO_OBJECT};
use jlive_writer::record::{MethodKey, Payload, RecordKind, ValuesInfo};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The value filters of the bursts from now on (the live visualizer's).
#[derive(Default)]
pub struct Values {
    /// Whether any method's values are asked for: what a call pays until one is.
    active: AtomicBool,
    filters: RwLock<Option<Filters>>,
}

/// (class, method) patterns, in internal form (`java/util/HashMap`).
pub type Patterns = Vec<(String, String)>;

struct Filters {
    args: Patterns,
    returns: Patterns,
    fields: Patterns,
    /// What to take of each method met so far (None: nothing).
    plans: HashMap<usize, Option<Arc<Plan>>>,
}

/// What to read of a method's calls.
struct Plan {
    args: bool,
    returns: bool,
    fields: bool,
    is_static: bool,
    /// The parameters' kinds: a descriptor's first character, `T` for a String, `L` for any
    /// other object or array.
    params: Vec<u8>,
    /// The return kind, the same way (`V`: none).
    ret: u8,
}

impl Values {
    /// What to read of `method`'s calls (looked up once per method).
    fn plan(&self, jvmti: Jvmti, jni: Jni<'_>, method: MethodId) -> Option<Arc<Plan>> {
        if let Some(known) = self.filters.read().as_ref()?.plans.get(&method.key()) {
            return known.clone();
        }
        let made = self.make_plan(jvmti, jni, method);
        let mut filters = self.filters.write();
        let filters = filters.as_mut()?;
        filters.plans.insert(method.key(), made.clone());
        made
    }

    fn make_plan(&self, jvmti: Jvmti, jni: Jni<'_>, method: MethodId) -> Option<Arc<Plan>> {
        let (name, descriptor) = jvmti.method_name(method).ok()?;
        let class = jvmti.method_declaring_class(jni, method)?;
        let signature = jvmti.class_signature(&class).ok()?;
        jni.delete_local(class);
        let class = internal_name(&signature);
        let modifiers = jvmti.method_modifiers(method).ok()?;
        let filters = self.filters.read();
        let filters = filters.as_ref()?;
        let named = |patterns: &Patterns| {
            patterns
                .iter()
                .any(|(c, m)| matches(c, &class) && matches(m, &name))
        };
        // A native frame's locals cannot be read.
        let args = named(&filters.args) && modifiers & ACC_NATIVE == 0;
        let returns = named(&filters.returns);
        let fields = named(&filters.fields);
        let (params, ret) = kinds(&descriptor)?;
        (args || returns || fields).then(|| {
            Arc::new(Plan {
                args,
                returns: returns && ret != b'V',
                fields,
                is_static: modifiers & ACC_STATIC != 0,
                params,
                ret,
            })
        })
    }

    /// MethodEntry, after the entry's record (which named `object`): the arguments and the fields,
    /// if the filters ask.
    pub fn entered(&self, p: &'static Runtime, e: MethodEvent<'_, '_>, object: u32) {
        let (jvmti, jni, thread, method, ticks) = (p.jvmti(), e.jni, e.thread, e.method, e.ticks);
        let Some(plan) = self.plan(jvmti, jni, method) else {
            return;
        };
        let this = if plan.is_static {
            None
        } else {
            match jvmti.local_instance(jni, thread, 0) {
                Some(this) => Some(this),
                None => return,
            }
        };
        if plan.args {
            arguments(p, e, &plan, object);
        }
        if plan.fields {
            if let Some(values) = field_values(p, e, this.as_ref()) {
                record(p, ticks, method, object, ValuesKind::FieldsAtEnter, values);
            }
        }
    }

    /// MethodExit, before the exit's record: the fields and the return value, if the filters
    /// ask (no return value when the method threw).
    pub fn exiting(&self, p: &'static Runtime, e: MethodEvent<'_, '_>, returned: Returned) {
        let (jvmti, jni, thread, method, ticks) = (p.jvmti(), e.jni, e.thread, e.method, e.ticks);
        let Returned {
            by_exception,
            value,
        } = returned;
        let Some(plan) = self.plan(jvmti, jni, method) else {
            return;
        };
        // A method that threw leaves its exception pending: no JNI call, and no return value.
        if by_exception || !(plan.fields || plan.returns) {
            return;
        }
        // `this`: for the fields, and as the values' object (objects=on).
        let this = (!plan.is_static && (plan.fields || p.options().objects))
            .then(|| jvmti.local_instance(jni, thread, 0))
            .flatten();
        let object = call_object(p, e, this.as_ref());
        if plan.fields && (plan.is_static || this.is_some()) {
            if let Some(values) = field_values(p, e, this.as_ref()) {
                record(p, ticks, method, object, ValuesKind::FieldsAtExit, values);
            }
        }
        if !plan.returns {
            return;
        }
        // SAFETY: JVMTI hands the return value in the union member of the method's return type;
        // an object is a local reference of this MethodExit callback, used only during it.
        let value = unsafe {
            match plan.ret {
                b'J' => Value::Long(value.j),
                b'D' => Value::Double(value.d.to_bits()),
                b'F' => Value::Float(value.f.to_bits()),
                b'L' | b'T' => {
                    object_value(p, jvmti, jni, Local::from_raw(value.l), plan.ret, ticks)
                }
                b'Z' => Value::Boolean(value.z != 0),
                b'B' => Value::Byte(value.b),
                b'C' => Value::Char(value.c),
                b'S' => Value::Short(value.s),
                _ => Value::Int(value.i),
            }
        };
        record(p, ticks, method, object, ValuesKind::Return, vec![value]);
    }

    /// The filters of the bursts from now on (none: values are off).
    pub fn set(&self, args: Patterns, returns: Patterns, fields: Patterns) {
        let on = !args.is_empty() || !returns.is_empty() || !fields.is_empty();
        *self.filters.write() = on.then(|| Filters {
            args,
            returns,
            fields,
            plans: HashMap::new(),
        });
        self.active.store(on, Ordering::SeqCst);
    }

    /// No filter any more.
    pub fn clear(&self) {
        self.set(Vec::new(), Vec::new(), Vec::new());
    }

    /// Whether any method's values are asked for.
    #[inline(always)]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }
}

/// Whether `name` matches `pattern` (`*` alone: anything; a trailing `*`: a prefix).
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// A descriptor's kinds: parameters and return ([`Plan::params`]).
fn kinds(descriptor: &str) -> Option<(Vec<u8>, u8)> {
    let (params, ret) = descriptor.strip_prefix('(')?.split_once(')')?;
    let mut kinds = Vec::new();
    let bytes = params.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while bytes[i] == b'[' {
            i += 1;
            if i == bytes.len() {
                return None;
            }
        }
        if bytes[i] == b'L' {
            i += params[i..].find(';')?;
        }
        kinds.push(kind(params.get(start..=i)?));
        i += 1;
    }
    Some((kinds, kind(ret)))
}

fn kind(descriptor: &str) -> u8 {
    match descriptor {
        "Ljava/lang/String;" => b'T',
        d if d.starts_with('[') || d.starts_with('L') => b'L',
        d => d.as_bytes().first().copied().unwrap_or(b'V'),
    }
}

/// An object argument or return value: its text for a String, else its ID (tagged and
/// recorded as seen on first sight).
fn object_value(
    p: &'static Runtime,
    jvmti: Jvmti,
    jni: Jni<'_>,
    object: Option<Local<'_>>,
    kind: u8,
    ticks: u64,
) -> Value {
    let Some(mut object) = object else {
        return Value::Object(NO_OBJECT);
    };
    if kind == b'T' {
        match jni.as_string(object) {
            Ok(s) => match jni.string(&s) {
                Some(text) => return Value::Text(text),
                None => object = s.into(),
            },
            Err(o) => object = o,
        }
    }
    match p.object_identity(jvmti, jni, &object, ticks).0 {
        NO_OBJECT => Value::Unknown,
        id => Value::Object(id),
    }
}

/// The values of the fields of `this` (its class's first, then each superclass's), or of the
/// static fields of `method`'s class, in class-file order (what the trace's class definitions
/// list).
fn field_values(
    p: &'static Runtime,
    e: MethodEvent,
    this: Option<&Local<'_>>,
) -> Option<Vec<Value>> {
    let (jvmti, jni, method, ticks) = (p.jvmti(), e.jni, e.method, e.ticks);
    let frame = jni.local_frame(16);
    let jni = frame.jni();
    let class = match this {
        Some(this) => jni.object_class(this)?,
        None => jvmti.method_declaring_class(jni, method)?,
    };
    let layout = jni.layout(jvmti, &class)?;
    let (descriptors, read): (Vec<&str>, _) = match this {
        Some(this) => (
            layout.instance().collect(),
            jni.instance_values(this, &layout),
        ),
        None => (layout.statics().collect(), Some(jni.static_values(&layout))),
    };
    let values = read.and_then(|read| {
        (read.len() == descriptors.len()).then(|| {
            read.into_iter()
                .zip(&descriptors)
                .map(|(v, d)| {
                    let k = kind(d);
                    match v {
                        FieldValue::Object(o) => Some(object_value(p, jvmti, jni, o, k, ticks)),
                        FieldValue::Bytes(b) => bytes_value(k, &b),
                    }
                })
                .collect::<Option<Vec<Value>>>()
        })
    });
    jni.forget_layout(layout);
    values.flatten()
}

/// A primitive field's value from its big-endian bytes.
fn bytes_value(kind: u8, b: &[u8]) -> Option<Value> {
    let n = |len: usize| -> Option<u64> {
        (b.len() == len).then(|| b.iter().fold(0u64, |v, &x| v << 8 | u64::from(x)))
    };
    Some(match kind {
        b'Z' => Value::Boolean(n(1)? != 0),
        b'B' => Value::Byte(n(1)? as i8),
        b'C' => Value::Char(n(2)? as u16),
        b'S' => Value::Short(n(2)? as i16),
        b'I' => Value::Int(n(4)? as i32),
        b'J' => Value::Long(n(8)? as i64),
        b'F' => Value::Float(n(4)? as u32),
        b'D' => Value::Double(n(8)?),
        _ => return None,
    })
}

fn arguments(p: &'static Runtime, e: MethodEvent<'_, '_>, plan: &Plan, object: u32) {
    let (jvmti, jni, thread, method, ticks) = (p.jvmti(), e.jni, e.thread, e.method, e.ticks);
    let mut slot = if plan.is_static { 0 } else { 1 };
    let mut values = Vec::with_capacity(plan.params.len());
    for &k in &plan.params {
        let value = match k {
            b'J' => jvmti.local_long(thread, 0, slot).map(Value::Long),
            b'D' => jvmti
                .local_double(thread, 0, slot)
                .map(|d| Value::Double(d.to_bits())),
            b'F' => jvmti
                .local_float(thread, 0, slot)
                .map(|f| Value::Float(f.to_bits())),
            b'L' | b'T' => jvmti
                .local_object(jni, thread, 0, slot)
                .map(|o| object_value(p, jvmti, jni, o, k, ticks)),
            _ => jvmti.local_int(thread, 0, slot).map(|i| int_value(k, i)),
        };
        // A frame whose locals cannot be read: no values rather than wrong ones.
        let Some(value) = value else { return };
        values.push(value);
        slot += if matches!(k, b'J' | b'D') { 2 } else { 1 };
    }
    record(p, ticks, method, object, ValuesKind::Arguments, values);
}

/// The object the values name: the one the call's entry names (its receiver with
/// `objects=on`, else none), so that the visualizer pairs them with the call.
fn call_object(p: &'static Runtime, e: MethodEvent, this: Option<&Local<'_>>) -> u32 {
    match this {
        Some(this) if p.options().objects => p.object_identity(p.jvmti(), e.jni, this, e.ticks).0,
        _ => NO_OBJECT,
    }
}

/// An int-sized value by its kind.
fn int_value(kind: u8, i: i32) -> Value {
    match kind {
        b'B' => Value::Byte(i as i8),
        b'C' => Value::Char(i as u16),
        b'S' => Value::Short(i as i16),
        b'Z' => Value::Boolean(i != 0),
        _ => Value::Int(i),
    }
}

fn record(
    p: &'static Runtime,
    ticks: u64,
    method: MethodId,
    object: u32,
    kind: ValuesKind,
    values: Vec<Value>,
) {
    let Some(buffer) = crate::transport::Hub::current() else {
        return;
    };
    let info = ValuesInfo {
        method: method.key() as MethodKey,
        object,
        kind,
        values,
    };
    buffer.append_payload(
        p.hub(),
        RecordKind::Values,
        ticks,
        Payload::Values(Box::new(info)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_give_each_parameter_its_kind() {
        assert_eq!(
            kinds("(I[JLjava/lang/String;Ljava/lang/Object;[[Ljava/lang/String;DZ)V"),
            Some((b"ILTLLDZ".to_vec(), b'V'))
        );
        assert_eq!(kinds("()Ljava/lang/String;"), Some((vec![], b'T')));
        assert_eq!(kinds("(["), None);
        assert!(matches("*", "anything"));
        assert!(matches("java/util/*", "java/util/HashMap"));
        assert!(!matches("java/util/Map", "java/util/HashMap"));
    }
}
