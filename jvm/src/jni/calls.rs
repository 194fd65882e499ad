//! Calls that JNI would take on trust, made checked: a method or field is looked up once
//! with its class kept ([`Method`], [`Slot`]) and each call checks the target and arguments
//! against it; field values are read through a class's [`Layout`], array elements through an
//! [`Array`] whose element type was asked of the JVM.

use super::Jni;
use crate::jvmti::{Jvmti, ACC_STATIC};
use crate::refs::{ClassRef, FieldId, Global, Local, OwnedGlobal, Ref};
use jni_sys::{jint, jlong, jmethodID, jobject, jvalue};
use std::ffi::CStr;

/// A method looked up by [`Jni::method`], with what its descriptor takes and returns, so
/// that [`Jni::call`] checks each call against it.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    /// Its class, kept loaded (a `java.lang.Class`).
    class: Global,
    id: jmethodID,
    is_static: bool,
    /// Each parameter's descriptor's first character.
    params: [u8; 4],
    count: u8,
    ret: u8,
}

// SAFETY: a method ID is valid on every thread while its class is loaded (a global reference
// keeps it so), and only the JVM dereferences it.
unsafe impl Send for Method {}
// SAFETY: as above; it is only read.
unsafe impl Sync for Method {}

impl Method {
    /// (parameter kinds, their count, the return kind) of a method descriptor; None for more
    /// than four parameters, a parameter that is not an int or a long, a malformed descriptor,
    /// or a return type [`Jni::call`] does not take (byte, char, short, float, double).
    fn parse(sig: &[u8]) -> Option<([u8; 4], u8, u8)> {
        let mut params = [0u8; 4];
        let mut count = 0;
        let mut i = 1;
        if sig.first() != Some(&b'(') {
            return None;
        }
        // One type from `i`: its kind, and where the next begins.
        let one = |mut i: usize| -> Option<(u8, usize)> {
            let kind = *sig.get(i)?;
            while sig.get(i) == Some(&b'[') {
                i += 1;
            }
            match *sig.get(i)? {
                b'L' => i += sig[i..].iter().position(|&c| c == b';')? + 1,
                b'Z' | b'B' | b'C' | b'S' | b'I' | b'J' | b'F' | b'D' => i += 1,
                // void: only as a whole return type.
                b'V' if kind == b'V' => i += 1,
                _ => return None,
            }
            Some((kind, i))
        };
        while *sig.get(i)? != b')' {
            let (kind, next) = one(i)?;
            if kind != b'I' && kind != b'J' {
                return None;
            }
            *params.get_mut(count)? = kind;
            count += 1;
            i = next;
        }
        let (ret, end) = one(i + 1)?;
        let takes = matches!(ret, b'V' | b'Z' | b'I' | b'J' | b'L' | b'[');
        (takes && end == sig.len()).then_some((params, count as u8, ret))
    }
}

/// An argument of [`Jni::call`]: primitives only, whose types the descriptor fixes (an object
/// argument of the wrong class is not something JNI would catch).
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    Int(jint),
    Long(jlong),
}

/// What [`Jni::call`] returns.
#[derive(Debug)]
pub enum Value<'l> {
    Void,
    Boolean(bool),
    Int(jint),
    Long(jlong),
    /// A local reference, or None for null.
    Object(Option<Local<'l>>),
}

impl<'l> Value<'l> {
    pub fn object(self) -> Option<Local<'l>> {
        match self {
            Value::Object(o) => o,
            _ => None,
        }
    }

    pub fn int(self) -> Option<jint> {
        match self {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn long(self) -> Option<jlong> {
        match self {
            Value::Long(j) => Some(j),
            _ => None,
        }
    }
}

/// An instance field looked up by [`Jni::field`], with its type's first character.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Its class, kept loaded (a `java.lang.Class`).
    class: Global,
    id: FieldId,
    kind: u8,
}

/// A field's value as a [`Layout`] reads it.
#[derive(Debug)]
pub enum FieldValue<'l> {
    /// A primitive, big-endian.
    Bytes(Vec<u8>),
    /// A reference (None for null).
    Object(Option<Local<'l>>),
}

/// A class's fields as JNI reads them: an instance's (the class's own, then each
/// superclass's, each in GetClassFields order) and the class's statics, each with its type
/// descriptor. The class is held (a global reference) until [`Jni::forget_layout`].
pub struct Layout {
    class: OwnedGlobal,
    instance: Vec<(FieldId, String)>,
    statics: Vec<(FieldId, String)>,
}

impl Layout {
    /// The type descriptors of an instance's fields, in the order values are read.
    pub fn instance(&self) -> impl Iterator<Item = &str> {
        self.instance.iter().map(|(_, d)| d.as_str())
    }

    /// The type descriptors of the class's static fields, in the order values are read.
    pub fn statics(&self) -> impl Iterator<Item = &str> {
        self.statics.iter().map(|(_, d)| d.as_str())
    }
}

/// An array whose element type was asked of the JVM ([`Jni::array`]).
pub struct Array<'r, R: Ref> {
    array: &'r R,
    length: jint,
    element: u8,
}

impl<R: Ref> Array<'_, R> {
    pub fn length(&self) -> jint {
        self.length
    }

    /// The element descriptor's first character (`L` or `[` for references).
    pub fn element(&self) -> u8 {
        self.element
    }
}

impl<'l> Jni<'l> {
    /// IsInstanceOf on a class held by a [`Method`] or [`Slot`].
    fn instance_of_global(&self, object: jobject, class: Global) -> bool {
        // SAFETY: object is a live reference (the caller's type's promise); class is a global
        // reference to a class that is never deleted (Method and Slot make it from a Class).
        !object.is_null()
            && self
                .fns()
                .IsInstanceOf
                .is_some_and(|f| unsafe { f(self.env(), object, class.as_raw()) } != 0)
    }

    /// A method of `class` by name and descriptor (static or not), for [`Jni::call`]. None if
    /// there is none, or it takes anything but ints and longs, more than four of them, or
    /// returns a type `call` does not. The class is kept (a global reference) for the life of
    /// the VM: the method ID stays valid.
    pub fn method(
        &self,
        class: &impl ClassRef,
        name: &CStr,
        sig: &CStr,
        is_static: bool,
    ) -> Option<Method> {
        let (params, count, ret) = Method::parse(sig.to_bytes())?;
        let id = self.method_id_in(class, name, sig, is_static)?;
        Some(Method {
            class: self.global(class)?,
            id,
            is_static,
            params,
            count,
            ret,
        })
    }

    /// Whether `class` declares or inherits a `name`/`sig` method other than `method` (an
    /// override of it).
    pub fn overrides(
        &self,
        class: &impl ClassRef,
        name: &CStr,
        sig: &CStr,
        method: &Method,
    ) -> bool {
        self.method_id_in(class, name, sig, false)
            .is_some_and(|id| id != method.id)
    }

    /// Calls an instance `method` on `target`, or a static one on its class (`target` then
    /// unused), with `args`. None when the arguments do not match the descriptor, the target
    /// is not an instance of the method's class, an exception was already pending, or the
    /// method throws (its exception is cleared).
    pub fn call(&self, target: &impl Ref, method: &Method, args: &[Arg]) -> Option<Value<'l>> {
        self.here();
        let matches = args.len() == usize::from(method.count)
            && args.iter().zip(method.params).all(|(a, p)| match a {
                Arg::Int(_) => p == b'I',
                Arg::Long(_) => p == b'J',
            });
        let on = if method.is_static {
            method.class.as_raw()
        } else {
            target.as_raw()
        };
        if !matches
            || self.exception_pending()
            || !(method.is_static || self.instance_of_global(on, method.class))
        {
            return None;
        }
        let values: Vec<jvalue> = args
            .iter()
            .map(|a| match *a {
                Arg::Int(i) => jvalue { i },
                Arg::Long(j) => jvalue { j },
            })
            .collect();
        let (env, id, a) = (self.env(), method.id, values.as_ptr());
        let fns = self.fns();
        macro_rules! call {
            ($inst:ident, $stat:ident) => {
                // SAFETY: id is a method of `class`, which the VM keeps loaded (a global
                // reference), called on an instance of it (checked) or, static, on the class
                // itself; its parameters are ints and longs, checked one by one above.
                unsafe {
                    if method.is_static {
                        (fns.$stat?)(env, on, id, a)
                    } else {
                        (fns.$inst?)(env, on, id, a)
                    }
                }
            };
        }
        let value = match method.ret {
            b'V' => {
                call!(CallVoidMethodA, CallStaticVoidMethodA);
                Value::Void
            }
            b'Z' => Value::Boolean(call!(CallBooleanMethodA, CallStaticBooleanMethodA) != 0),
            b'I' => Value::Int(call!(CallIntMethodA, CallStaticIntMethodA)),
            b'J' => Value::Long(call!(CallLongMethodA, CallStaticLongMethodA)),
            _ => Value::Object(self.local(call!(CallObjectMethodA, CallStaticObjectMethodA))),
        };
        (!self.clear_exception()).then_some(value)
    }

    /// An instance field of `class` by name and type descriptor (the class kept, as for
    /// [`Jni::method`]).
    pub fn field(&self, class: &impl ClassRef, name: &CStr, sig: &CStr) -> Option<Slot> {
        let kind = *sig.to_bytes().first()?;
        let id = self.field_id_in(class, name, sig, false)?;
        Some(Slot {
            class: self.global(class)?,
            id,
            kind,
        })
    }

    /// The value of a `long` field of `object`; None for a field of another type, or an
    /// object that is not an instance of the field's class.
    pub fn long_field(&self, object: &impl Ref, field: &Slot) -> Option<jlong> {
        if field.kind != b'J' || !self.instance_of_global(object.as_raw(), field.class) {
            return None;
        }
        // SAFETY: field is a long field of a class the VM keeps loaded, read from an instance
        // of it (checked).
        Some(unsafe { (self.fns().GetLongField?)(self.env(), object.as_raw(), field.id.as_raw()) })
    }

    /// The fields of `class` as [`Jni::instance_values`] and [`Jni::static_values`] read them.
    pub fn layout(&self, jvmti: Jvmti, class: &impl ClassRef) -> Option<Layout> {
        let frame = self.local_frame(16);
        let jni = frame.jni();
        // A class's own fields: (ID, descriptor, static).
        // (A class JVMTI cannot list, or a field it cannot name, reads as without them.)
        fn fields(jvmti: Jvmti, c: &impl Ref) -> Option<Vec<(FieldId, String, bool)>> {
            let mut out = Vec::new();
            for f in jvmti.class_fields(c).unwrap_or_default() {
                let Ok((_, descriptor)) = jvmti.field_name(c, f) else {
                    continue;
                };
                let is_static = jvmti.field_modifiers(c, f).unwrap_or(0) & ACC_STATIC != 0;
                out.push((f, descriptor, is_static));
            }
            Some(out)
        }
        let own = fields(jvmti, class)?;
        let statics = own
            .iter()
            .filter(|f| f.2)
            .map(|(f, d, _)| (*f, d.clone()))
            .collect();
        let mut instance: Vec<(FieldId, String)> = own
            .into_iter()
            .filter(|f| !f.2)
            .map(|(f, d, _)| (f, d))
            .collect();
        let mut next = jni.superclass(class);
        while let Some(c) = next {
            instance.extend(
                fields(jvmti, &c)?
                    .into_iter()
                    .filter(|f| !f.2)
                    .map(|(f, d, _)| (f, d)),
            );
            next = jni.superclass(&c);
        }
        Some(Layout {
            class: self.new_global(class)?,
            instance,
            statics,
        })
    }

    /// Lets go of a layout's class.
    pub fn forget_layout(&self, layout: Layout) {
        self.delete_global(layout.class);
    }

    /// The values of `object`'s fields, in `layout.instance()`'s order; None if `object` is not
    /// an instance of the layout's class.
    pub fn instance_values(
        &self,
        object: &impl Ref,
        layout: &Layout,
    ) -> Option<Vec<FieldValue<'l>>> {
        self.here();
        // SAFETY: layout.class is a class (Layout::class is made from a Class).
        let is = self
            .fns()
            .IsInstanceOf
            .is_some_and(|f| unsafe { f(self.env(), object.as_raw(), layout.class.as_raw()) } != 0);
        is.then(|| {
            layout
                .instance
                .iter()
                // SAFETY: each field is an instance field of the layout's class or a
                // superclass, read from an instance of it, by its own descriptor.
                .filter_map(|(f, d)| unsafe { self.field_value(object.as_raw(), *f, d, false) })
                .collect()
        })
    }

    /// The values of the layout's class's static fields, in `layout.statics()`'s order.
    pub fn static_values(&self, layout: &Layout) -> Vec<FieldValue<'l>> {
        self.here();
        layout
            .statics
            .iter()
            // SAFETY: each field is a static field of the layout's class, read from the class,
            // by its own descriptor.
            .filter_map(|(f, d)| unsafe { self.field_value(layout.class.as_raw(), *f, d, true) })
            .collect()
    }

    /// A field's value, big-endian for a primitive, or a local reference.
    ///
    /// # Safety
    /// `field` is a field of `target` (static: `target` is its class) of type `descriptor`.
    unsafe fn field_value(
        &self,
        target: jobject,
        field: FieldId,
        descriptor: &str,
        is_static: bool,
    ) -> Option<FieldValue<'l>> {
        let (env, fns, field) = (self.env(), self.fns(), field.as_raw());
        macro_rules! get {
            ($inst:ident, $stat:ident) => {{
                // SAFETY: the caller's contract: target holds this field, of this type.
                unsafe {
                    if is_static {
                        (fns.$stat?)(env, target, field)
                    } else {
                        (fns.$inst?)(env, target, field)
                    }
                }
            }};
        }
        macro_rules! primitive {
            ($inst:ident, $stat:ident) => {
                FieldValue::Bytes(get!($inst, $stat).to_be_bytes().to_vec())
            };
        }
        let v = match *descriptor.as_bytes().first()? {
            b'Z' => primitive!(GetBooleanField, GetStaticBooleanField),
            b'B' => primitive!(GetByteField, GetStaticByteField),
            b'C' => primitive!(GetCharField, GetStaticCharField),
            b'S' => primitive!(GetShortField, GetStaticShortField),
            b'I' => primitive!(GetIntField, GetStaticIntField),
            b'J' => primitive!(GetLongField, GetStaticLongField),
            b'F' => primitive!(GetFloatField, GetStaticFloatField),
            b'D' => primitive!(GetDoubleField, GetStaticDoubleField),
            b'L' | b'[' => {
                FieldValue::Object(self.local(get!(GetObjectField, GetStaticObjectField)))
            }
            _ => return None,
        };
        self.clear_exception();
        Some(v)
    }

    /// `object` as an array, its element type asked of the JVM; None for any other object.
    pub fn array<'r, R: Ref>(&self, jvmti: Jvmti, object: &'r R) -> Option<Array<'r, R>> {
        let class = self.object_class(object)?;
        let signature = jvmti.class_signature(&class);
        self.delete_local(class);
        let element = *signature.ok()?.as_bytes().strip_prefix(b"[")?.first()?;
        // SAFETY: object is a live array reference (its class's signature says so).
        let length = unsafe { (self.fns().GetArrayLength?)(self.env(), object.as_raw()) };
        Some(Array {
            array: object,
            length,
            element,
        })
    }

    /// Element `index` of an object array (None for null, a primitive array or an index out
    /// of bounds).
    pub fn array_object<R: Ref>(&self, array: &Array<'_, R>, index: jint) -> Option<Local<'l>> {
        self.here();
        if !matches!(array.element, b'L' | b'[') || !(0..array.length).contains(&index) {
            return None;
        }
        // SAFETY: an object array and an index below its length (both checked).
        let o =
            unsafe { (self.fns().GetObjectArrayElement?)(self.env(), array.array.as_raw(), index) };
        self.clear_exception();
        self.local(o)
    }

    /// The elements of a primitive array, each big-endian (empty for an object array).
    pub fn primitive_array_bytes<R: Ref>(&self, array: &Array<'_, R>) -> Vec<u8> {
        let n = array.length.max(0) as usize;
        let (env, fns, raw) = (self.env(), self.fns(), array.array.as_raw());
        macro_rules! region {
            ($t:ty, $f:ident) => {{
                let mut v: Vec<$t> = vec![Default::default(); n];
                if let Some(f) = fns.$f {
                    // SAFETY: a primitive array of this element type (its class's signature)
                    // and length n; v has room for n elements.
                    unsafe { f(env, raw, 0, n as jint, v.as_mut_ptr()) };
                }
                v.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>()
            }};
        }
        let bytes = match array.element {
            b'Z' => region!(u8, GetBooleanArrayRegion),
            b'B' => region!(i8, GetByteArrayRegion),
            b'C' => region!(u16, GetCharArrayRegion),
            b'S' => region!(i16, GetShortArrayRegion),
            b'I' => region!(i32, GetIntArrayRegion),
            b'J' => region!(i64, GetLongArrayRegion),
            b'F' => region!(f32, GetFloatArrayRegion),
            b'D' => region!(f64, GetDoubleArrayRegion),
            _ => Vec::new(),
        };
        self.clear_exception();
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_taken_only_with_int_and_long_parameters() {
        assert_eq!(Method::parse(b"()J"), Some(([0; 4], 0, b'J')));
        assert_eq!(
            Method::parse(b"(JI)Ljava/lang/Object;"),
            Some(([b'J', b'I', 0, 0], 2, b'L'))
        );
        assert_eq!(Method::parse(b"(Ljava/lang/String;)V"), None);
        assert_eq!(Method::parse(b"()F"), None);
        assert_eq!(Method::parse(b"(IIIII)V"), None);
        assert_eq!(Method::parse(b"(I"), None);
    }
}
