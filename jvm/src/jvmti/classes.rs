//! Classes, methods and fields: names, signatures, modifiers, line tables; the classes
//! loaded; retransformation.

use super::{Jvmti, Result, ACC_NATIVE};
use crate::jni::Jni;
use crate::refs::{Class, FieldId, Local, MethodId, Ref};
use jni_sys::{jclass, jfieldID, jint, jlong, jmethodID, jobject};
use std::ffi::c_char;
use std::ptr;

impl Jvmti {
    pub fn is_modifiable_class(&self, class: &impl Ref) -> bool {
        let mut b: u8 = 0;
        call!(self, 45, (jclass, *mut u8), class.as_raw(), &mut b).is_ok() && b != 0
    }

    pub fn retransform_classes<R: Ref>(&self, classes: &[R]) -> Result<()> {
        let raw: Vec<jclass> = classes.iter().map(|c| c.as_raw()).collect();
        call!(
            self,
            152,
            (jint, *const jclass),
            raw.len() as jint,
            raw.as_ptr()
        )
    }

    /// The prefix with which renamed native methods are still bound.
    pub fn set_native_method_prefix(&self, prefix: &std::ffi::CStr) -> Result<()> {
        call!(self, 73, (*const c_char), prefix.as_ptr())
    }

    /// The defining loader of a class (None = the bootstrap loader).
    pub fn class_loader<'l>(&self, jni: Jni<'l>, class: &impl Ref) -> Option<Local<'l>> {
        let l = self.query(57, class, ptr::null_mut()).ok()?;
        jni.adopt(l)
    }

    pub fn class_signature(&self, class: &impl Ref) -> Result<String> {
        let mut sig: *mut c_char = ptr::null_mut();
        call!(
            self,
            48,
            (jclass, *mut *mut c_char, *mut *mut c_char),
            class.as_raw(),
            &mut sig,
            ptr::null_mut()
        )?;
        Ok(self.take_string(sig))
    }

    pub fn class_status(&self, class: &impl Ref) -> Result<jint> {
        self.query(49, class, 0)
    }

    pub fn source_file_name(&self, class: &impl Ref) -> Option<String> {
        let name = self.query(50, class, ptr::null_mut::<c_char>()).ok()?;
        Some(self.take_string(name))
    }

    /// A class's modifiers (ACC_* bits).
    pub fn class_modifiers(&self, class: &impl Ref) -> Result<jint> {
        self.query(51, class, 0)
    }

    /// One of the functions that list what a class holds (52 methods, 53 fields, 54
    /// interfaces): `(jclass, jint* count, T** array)`, each item typed by `typed`.
    fn class_list<T: Copy, U>(
        &self,
        function: usize,
        class: &impl Ref,
        typed: impl FnMut(T) -> Option<U>,
    ) -> Result<Vec<U>> {
        let (mut n, mut p): (jint, *mut T) = (0, ptr::null_mut());
        let class = class.as_raw();
        call!(
            self,
            function,
            (jclass, *mut jint, *mut *mut T),
            class,
            &mut n,
            &mut p
        )?;
        Ok(self
            .take_array(p, n)
            .into_iter()
            .filter_map(typed)
            .collect())
    }

    /// Methods in class-file order (with can_maintain_original_method_order).
    pub fn class_methods(&self, class: &impl Ref) -> Result<Vec<MethodId>> {
        // SAFETY: GetClassMethods answered them.
        self.class_list(52, class, |m: jmethodID| unsafe { MethodId::from_raw(m) })
    }

    pub fn class_fields(&self, class: &impl Ref) -> Result<Vec<FieldId>> {
        // SAFETY: GetClassFields answered them, for this class.
        self.class_list(53, class, |f: jfieldID| unsafe { FieldId::from_raw(f) })
    }

    /// Direct superinterfaces, as local references of `jni`'s frame.
    pub fn implemented_interfaces<'l>(
        &self,
        jni: Jni<'l>,
        class: &impl Ref,
    ) -> Result<Vec<Class<'l>>> {
        self.class_list(54, class, |c: jobject| jni.adopt_class(c))
    }

    /// Every loaded class, as local references of `jni`'s frame.
    pub fn loaded_classes<'l>(&self, jni: Jni<'l>) -> Result<Vec<Class<'l>>> {
        let (mut n, mut p): (jint, *mut jclass) = (0, ptr::null_mut());
        call!(self, 78, (*mut jint, *mut *mut jclass), &mut n, &mut p)?;
        Ok(self
            .take_array(p, n)
            .into_iter()
            .filter_map(|c| jni.adopt_class(c))
            .collect())
    }

    /// (name, signature) of a field of `class`.
    pub fn field_name(&self, class: &impl Ref, field: FieldId) -> Result<(String, String)> {
        let (mut name, mut sig): (*mut c_char, *mut c_char) = (ptr::null_mut(), ptr::null_mut());
        call!(
            self,
            60,
            (
                jclass,
                jfieldID,
                *mut *mut c_char,
                *mut *mut c_char,
                *mut *mut c_char
            ),
            class.as_raw(),
            field.as_raw(),
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok((self.take_string(name), self.take_string(sig)))
    }

    pub fn field_modifiers(&self, class: &impl Ref, field: FieldId) -> Result<jint> {
        let mut m: jint = 0;
        call!(
            self,
            62,
            (jclass, jfieldID, *mut jint),
            class.as_raw(),
            field.as_raw(),
            &mut m
        )?;
        Ok(m)
    }

    /// (name, signature) of a method.
    pub fn method_name(&self, method: MethodId) -> Result<(String, String)> {
        let (mut name, mut sig): (*mut c_char, *mut c_char) = (ptr::null_mut(), ptr::null_mut());
        call!(
            self,
            64,
            (
                jmethodID,
                *mut *mut c_char,
                *mut *mut c_char,
                *mut *mut c_char
            ),
            method.as_raw(),
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok((self.take_string(name), self.take_string(sig)))
    }

    pub fn method_modifiers(&self, method: MethodId) -> Result<jint> {
        self.query_method(66, method, 0)
    }

    /// Whether a method is native.
    pub fn is_native(&self, method: MethodId) -> bool {
        self.method_modifiers(method)
            .is_ok_and(|m| m & ACC_NATIVE != 0)
    }

    /// The class that declares a method, as a local reference of `jni`'s frame.
    pub fn method_declaring_class<'l>(&self, jni: Jni<'l>, method: MethodId) -> Option<Class<'l>> {
        let class = self.query_method(65, method, ptr::null_mut()).ok()?;
        jni.adopt_class(class)
    }

    /// A method's line number table: (bytecode index, line) pairs; empty for a native or
    /// abstract method, or a class compiled without line numbers.
    pub fn line_numbers(&self, method: MethodId) -> Vec<(u32, u32)> {
        let mut count: jint = 0;
        let mut table: *mut LineNumberEntry = ptr::null_mut();
        let got = call!(
            self,
            70,
            (jmethodID, *mut jint, *mut *mut LineNumberEntry),
            method.as_raw(),
            &mut count,
            &mut table
        );
        if got.is_err() {
            return Vec::new();
        }
        self.take_array(table, count)
            .into_iter()
            .map(|e| {
                (
                    e.start_location.clamp(0, i64::from(u32::MAX)) as u32,
                    e.line_number.max(0) as u32,
                )
            })
            .collect()
    }
}

/// jvmtiLineNumberEntry.
#[repr(C)]
#[derive(Clone, Copy)]
struct LineNumberEntry {
    start_location: jlong,
    line_number: jint,
}
