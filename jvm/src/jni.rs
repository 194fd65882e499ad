//! The few JNI calls the agent makes, on the JNIEnv a JVMTI callback receives.
//!
//! A [`LocalFrame`] brackets a callback that creates local references (interfaces, thread
//! groups, component types): PushLocalFrame on entry, PopLocalFrame on drop, so references
//! can neither leak nor outlive the callback that made them.
//!
//! JNI references (`jobject`, `jclass`, `jthread`) and JVMTI IDs are opaque handles that only
//! the JVM dereferences; passing one that is not live is the JVM's documented error, not a
//! Rust memory access, hence the lint allowance below.

#![allow(clippy::not_unsafe_ptr_arg_deref)]

use jni_sys::{
    jboolean, jclass, jfieldID, jint, jlong, jmethodID, jobject, jstring, jvalue, JNIEnv,
    JNINativeMethod, JavaVM,
};
use std::ffi::CStr;
use std::marker::PhantomData;
use std::ptr;

/// The JNIEnv of the current thread, valid for the callback that received it.
#[derive(Clone, Copy)]
pub struct Jni<'cb> {
    env: *mut JNIEnv,
    _callback: PhantomData<&'cb ()>,
}

impl<'cb> Jni<'cb> {
    /// Wraps the JNIEnv a JVMTI callback received. None for a null pointer.
    pub fn from_callback(env: *mut JNIEnv) -> Option<Jni<'cb>> {
        (!env.is_null()).then_some(Jni {
            env,
            _callback: PhantomData,
        })
    }

    /// The superclass of a class; None for Object, interfaces and primitives.
    pub fn superclass(&self, class: jclass) -> Option<jclass> {
        // SAFETY: env is the current thread's JNIEnv; class is a live reference.
        let s = unsafe { ((**self.env).GetSuperclass?)(self.env, class) };
        (!s.is_null()).then_some(s)
    }

    pub fn object_class(&self, object: jobject) -> Option<jclass> {
        // SAFETY: as above; object is a live reference.
        let c = unsafe { ((**self.env).GetObjectClass?)(self.env, object) };
        (!c.is_null()).then_some(c)
    }

    pub fn array_length(&self, array: jobject) -> jint {
        // SAFETY: the caller has checked that `array` is an array.
        unsafe {
            (**self.env)
                .GetArrayLength
                .map_or(0, |f| f(self.env, array))
        }
    }

    /// `class.getComponentType()`, for an array class.
    pub fn component_type(&self, class: jclass) -> Option<jclass> {
        let method = self.method_id(class, c"getComponentType", c"()Ljava/lang/Class;")?;
        // SAFETY: method is Class.getComponentType on a live Class object, no arguments.
        let c = unsafe {
            ((**self.env).CallObjectMethodA?)(self.env, class, method, ptr::null::<jvalue>())
        };
        self.clear_exception();
        (!c.is_null()).then_some(c)
    }

    fn method_id(&self, class: jclass, name: &CStr, sig: &CStr) -> Option<jmethodID> {
        // GetMethodID on the Class object's class (java.lang.Class).
        let class_class = self.object_class(class)?;
        self.method_id_in(class_class, name, sig, false)
    }

    /// Clears a pending exception; true if there was one.
    fn clear_exception(&self) -> bool {
        // SAFETY: env is valid; ExceptionCheck/Clear have no preconditions.
        unsafe {
            if let (Some(check), Some(clear)) =
                ((**self.env).ExceptionCheck, (**self.env).ExceptionClear)
            {
                if check(self.env) != 0 {
                    clear(self.env);
                    return true;
                }
            }
        }
        false
    }

    /// Binds native methods: (name, signature, function) each.
    pub fn register_natives(&self, class: jclass, methods: &[NativeMethod]) -> bool {
        let table: Vec<JNINativeMethod> = methods
            .iter()
            .map(|m| JNINativeMethod {
                name: m.name.as_ptr() as *mut _,
                signature: m.signature.as_ptr() as *mut _,
                fnPtr: m.function,
            })
            .collect();
        // SAFETY: the table holds NUL-terminated names and signatures that outlive the call
        // and functions whose C signatures match them (`NativeMethod::new`'s contract).
        let rc = unsafe {
            (**self.env).RegisterNatives.map_or(-1, |f| {
                f(self.env, class, table.as_ptr(), table.len() as jint)
            })
        };
        self.clear_exception();
        rc == 0
    }

    /// Defines a class from bytes in the bootstrap loader.
    pub fn define_boot_class(&self, name: &CStr, bytes: &[u8]) -> Option<jclass> {
        // SAFETY: name is NUL-terminated, bytes outlive the call; a null loader means the
        // bootstrap loader.
        let c = unsafe {
            ((**self.env).DefineClass?)(
                self.env,
                name.as_ptr(),
                std::ptr::null_mut(),
                bytes.as_ptr() as *const jni_sys::jbyte,
                bytes.len() as jint,
            )
        };
        self.clear_exception();
        (!c.is_null()).then_some(c)
    }

    /// Loads a class by its internal name (FindClass, which initializes it), None if it
    /// cannot (the exception is cleared).
    pub fn find_class(&self, name: &CStr) -> Option<jclass> {
        // SAFETY: name is NUL-terminated; FindClass has no other precondition; exceptions are
        // cleared.
        let c = unsafe { ((**self.env).FindClass?)(self.env, name.as_ptr()) };
        self.clear_exception();
        (!c.is_null()).then_some(c)
    }

    /// Finds a class and initializes it (GetStaticMethodID initializes its class).
    pub fn initialize_class(&self, class: &CStr, method: &CStr, sig: &CStr) -> bool {
        self.find_class(class)
            .is_some_and(|c| self.method_id_in(c, method, sig, true).is_some())
    }

    /// Calls a static method of `class` that takes nothing and returns a boolean; None if it
    /// cannot be found or throws (the exception is cleared).
    pub fn call_static_boolean(&self, class: jclass, name: &CStr, sig: &CStr) -> Option<bool> {
        let method = self.method_id_in(class, name, sig, true)?;
        // SAFETY: method is a static method of class, a live reference; it takes no
        // arguments, so a null argument array is never read.
        let r = unsafe {
            ((**self.env).CallStaticBooleanMethodA?)(self.env, class, method, std::ptr::null())
        };
        (!self.clear_exception()).then_some(r != 0)
    }

    /// A static field of a class, by name and type signature.
    fn static_field(&self, class: jclass, name: &CStr, sig: &CStr) -> Option<jfieldID> {
        // SAFETY: names are NUL-terminated; class is a live reference.
        let field = unsafe {
            ((**self.env).GetStaticFieldID?)(self.env, class, name.as_ptr(), sig.as_ptr())
        };
        self.clear_exception();
        (!field.is_null()).then_some(field)
    }

    /// Sets a static boolean field of a class.
    pub fn set_static_boolean(&self, class: jclass, name: &CStr, value: bool) -> bool {
        let Some(field) = self.static_field(class, name, c"Z") else {
            return false;
        };
        // SAFETY: env is the current thread's JNIEnv; field is a boolean field of class.
        unsafe {
            match (**self.env).SetStaticBooleanField {
                Some(set) => set(self.env, class, field, jboolean::from(value)),
                None => return false,
            }
        }
        true
    }

    /// Sets a static int field of a class.
    pub fn set_static_int(&self, class: jclass, name: &CStr, value: jint) -> bool {
        let Some(field) = self.static_field(class, name, c"I") else {
            return false;
        };
        // SAFETY: env is the current thread's JNIEnv; field is an int field of class.
        unsafe {
            match (**self.env).SetStaticIntField {
                Some(set) => set(self.env, class, field, value),
                None => return false,
            }
        }
        true
    }

    /// The text of a Java string (lossy for unpaired surrogates).
    pub fn string(&self, s: jstring) -> Option<String> {
        if s.is_null() {
            return None;
        }
        // SAFETY: s is a live java.lang.String reference; the chars are released below.
        unsafe {
            let get = (**self.env).GetStringUTFChars?;
            let chars = get(self.env, s, std::ptr::null_mut());
            if chars.is_null() {
                self.clear_exception();
                return None;
            }
            let text = CStr::from_ptr(chars).to_string_lossy().into_owned();
            if let Some(release) = (**self.env).ReleaseStringUTFChars {
                release(self.env, s, chars);
            }
            Some(text)
        }
    }

    /// `System.setProperty(key, value)`, or `System.clearProperty(key)` for None; false if
    /// it failed (its exception cleared).
    pub fn set_system_property(&self, key: &CStr, value: Option<&str>) -> bool {
        let value = value.map(|v| std::ffi::CString::new(v.replace('\0', " ")).unwrap_or_default());
        let _frame = self.local_frame(4);
        // SAFETY: env is the calling thread's; names and signatures are NUL-terminated and
        // match java.lang.System's public methods; every result is checked for null and any
        // exception cleared before the next call.
        let done = unsafe {
            (|| {
                let env = self.env;
                let system = ((**env).FindClass?)(env, c"java/lang/System".as_ptr());
                if system.is_null() {
                    return None;
                }
                let new_string = (**env).NewStringUTF?;
                let k = new_string(env, key.as_ptr());
                if k.is_null() {
                    return None;
                }
                let (name, sig) = match value {
                    Some(_) => (
                        c"setProperty",
                        c"(Ljava/lang/String;Ljava/lang/String;)Ljava/lang/String;",
                    ),
                    None => (c"clearProperty", c"(Ljava/lang/String;)Ljava/lang/String;"),
                };
                let method = ((**env).GetStaticMethodID?)(env, system, name.as_ptr(), sig.as_ptr());
                if method.is_null() {
                    return None;
                }
                let call = (**env).CallStaticObjectMethod?;
                match &value {
                    Some(v) => {
                        let v = new_string(env, v.as_ptr());
                        if v.is_null() {
                            return None;
                        }
                        call(env, system, method, k, v);
                    }
                    None => {
                        call(env, system, method, k);
                    }
                }
                let thrown = ((**env).ExceptionCheck?)(env) != 0;
                (!thrown).then_some(())
            })()
        };
        self.clear_exception();
        done.is_some()
    }

    /// Each garbage collector's name and collection count
    /// (`ManagementFactory.getGarbageCollectorMXBeans()`); empty if any call fails.
    pub fn collection_counts(&self) -> Vec<(String, i64)> {
        let _frame = self.local_frame(32);
        let mut out = Vec::new();
        // SAFETY: env is the calling thread's; every name and signature is NUL-terminated
        // and matches the public Java API called; each result is checked for null and any
        // exception cleared before the next call.
        let done = unsafe {
            (|| {
                let env = self.env;
                let find = (**env).FindClass?;
                let static_method = (**env).GetStaticMethodID?;
                let method = (**env).GetMethodID?;
                let factory = find(env, c"java/lang/management/ManagementFactory".as_ptr());
                let list = find(env, c"java/util/List".as_ptr());
                let bean = find(env, c"java/lang/management/GarbageCollectorMXBean".as_ptr());
                if factory.is_null() || list.is_null() || bean.is_null() {
                    return None;
                }
                let beans_of = static_method(
                    env,
                    factory,
                    c"getGarbageCollectorMXBeans".as_ptr(),
                    c"()Ljava/util/List;".as_ptr(),
                );
                let size = method(env, list, c"size".as_ptr(), c"()I".as_ptr());
                let get = method(
                    env,
                    list,
                    c"get".as_ptr(),
                    c"(I)Ljava/lang/Object;".as_ptr(),
                );
                let name = method(
                    env,
                    bean,
                    c"getName".as_ptr(),
                    c"()Ljava/lang/String;".as_ptr(),
                );
                let count = method(env, bean, c"getCollectionCount".as_ptr(), c"()J".as_ptr());
                if beans_of.is_null()
                    || size.is_null()
                    || get.is_null()
                    || name.is_null()
                    || count.is_null()
                {
                    return None;
                }
                let beans = ((**env).CallStaticObjectMethodA?)(env, factory, beans_of, ptr::null());
                if beans.is_null() || ((**env).ExceptionCheck?)(env) != 0 {
                    return None;
                }
                let n = ((**env).CallIntMethodA?)(env, beans, size, ptr::null());
                for i in 0..n.clamp(0, 64) {
                    let arg = jvalue { i };
                    let b = ((**env).CallObjectMethodA?)(env, beans, get, &arg);
                    if b.is_null() || ((**env).ExceptionCheck?)(env) != 0 {
                        return None;
                    }
                    let text = ((**env).CallObjectMethodA?)(env, b, name, ptr::null());
                    let c = ((**env).CallLongMethodA?)(env, b, count, ptr::null());
                    if ((**env).ExceptionCheck?)(env) != 0 {
                        return None;
                    }
                    out.push((self.string(text).unwrap_or_default(), c));
                    if let Some(delete) = (**env).DeleteLocalRef {
                        delete(env, b);
                        delete(env, text);
                    }
                }
                Some(())
            })()
        };
        self.clear_exception();
        if done.is_none() {
            out.clear();
        }
        out
    }

    /// A new Java string (a local reference; null if it cannot be made).
    pub fn new_string(&self, text: &str) -> jstring {
        let text = std::ffi::CString::new(text.replace('\0', " ")).unwrap_or_default();
        // SAFETY: env is the calling thread's; the text is NUL-terminated.
        let s = unsafe {
            (**self.env)
                .NewStringUTF
                .map_or(ptr::null_mut(), |f| f(self.env, text.as_ptr()))
        };
        if s.is_null() {
            self.clear_exception();
        }
        s
    }

    /// Throws `java.lang.IllegalStateException(message)` in the calling Java thread.
    pub fn throw_illegal_state(&self, message: &str) {
        let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: env is valid; FindClass/ThrowNew take NUL-terminated strings.
        unsafe {
            if let (Some(find), Some(throw)) = ((**self.env).FindClass, (**self.env).ThrowNew) {
                let class = find(self.env, c"java/lang/IllegalStateException".as_ptr());
                if !class.is_null() {
                    throw(self.env, class, text.as_ptr());
                }
            }
        }
    }

    /// Tells the JVM that `count` more local references will be live (JVMTI's GetLoadedClasses
    /// makes one per class): -Xcheck:jni warns about every reference past the capacity asked.
    pub fn ensure_local_capacity(&self, count: usize) {
        let count = jint::try_from(count).unwrap_or(jint::MAX);
        // SAFETY: env is the current thread's JNIEnv; the call only reserves capacity.
        let rc = unsafe {
            (**self.env)
                .EnsureLocalCapacity
                .map_or(0, |f| f(self.env, count))
        };
        if rc != 0 {
            self.clear_exception();
        }
    }

    /// Global references to `classes`, for another attached thread to use.
    pub fn global_classes(&self, classes: &[jclass]) -> GlobalClasses {
        let mut refs = Vec::with_capacity(classes.len());
        for &class in classes {
            // SAFETY: env is the current thread's JNIEnv; class is a live reference.
            let g = unsafe {
                (**self.env)
                    .NewGlobalRef
                    .map_or(ptr::null_mut(), |f| f(self.env, class))
            };
            if !g.is_null() {
                refs.push(g);
            }
        }
        GlobalClasses(refs)
    }

    /// Deletes the global references (on any attached thread: this one).
    pub fn release(&self, classes: GlobalClasses) {
        for class in classes.0 {
            // SAFETY: each is a global reference made by `global_classes` and deleted once.
            unsafe {
                if let Some(delete) = (**self.env).DeleteGlobalRef {
                    delete(self.env, class);
                }
            }
        }
    }

    /// The raw JNIEnv (a thread's identity in JVMPI).
    pub fn raw(&self) -> *mut JNIEnv {
        self.env
    }

    /// A global reference to `object` (null if the JVM refuses).
    pub fn new_global(&self, object: jobject) -> jobject {
        // SAFETY: env is the current thread's JNIEnv; object is a live reference.
        unsafe {
            (**self.env)
                .NewGlobalRef
                .map_or(ptr::null_mut(), |f| f(self.env, object))
        }
    }

    /// Deletes a global reference made by [`Jni::new_global`].
    pub fn delete_global(&self, object: jobject) {
        if object.is_null() {
            return;
        }
        // SAFETY: object is a global reference deleted once, here.
        unsafe {
            if let Some(delete) = (**self.env).DeleteGlobalRef {
                delete(self.env, object);
            }
        }
    }

    /// Deletes a local reference early (in a loop over many objects).
    pub fn delete_local(&self, object: jobject) {
        if object.is_null() {
            return;
        }
        // SAFETY: object is a local reference of this thread, deleted once.
        unsafe {
            if let Some(delete) = (**self.env).DeleteLocalRef {
                delete(self.env, object);
            }
        }
    }

    pub fn is_same_object(&self, a: jobject, b: jobject) -> bool {
        // SAFETY: env is the current thread's; both are live references (or null).
        unsafe {
            (**self.env)
                .IsSameObject
                .is_some_and(|f| f(self.env, a, b) != 0)
        }
    }

    /// `Runtime.getRuntime()` and a method of it (a local frame must be open), or None.
    fn runtime_method(&self, name: &CStr, sig: &CStr) -> Option<(jobject, jmethodID)> {
        let env = self.env;
        // SAFETY: env is the calling thread's; names and signatures are NUL-terminated and
        // match java.lang.Runtime's public methods; each result is checked for null.
        let found = unsafe {
            (|| {
                let runtime = ((**env).FindClass?)(env, c"java/lang/Runtime".as_ptr());
                if runtime.is_null() {
                    return None;
                }
                let get = ((**env).GetStaticMethodID?)(
                    env,
                    runtime,
                    c"getRuntime".as_ptr(),
                    c"()Ljava/lang/Runtime;".as_ptr(),
                );
                let method = ((**env).GetMethodID?)(env, runtime, name.as_ptr(), sig.as_ptr());
                if get.is_null() || method.is_null() {
                    return None;
                }
                let r = ((**env).CallStaticObjectMethodA?)(env, runtime, get, ptr::null());
                (!r.is_null()).then_some((r, method))
            })()
        };
        self.clear_exception();
        found
    }

    /// `Runtime.getRuntime()`'s (totalMemory(), freeMemory()), in bytes.
    pub fn heap_memory(&self) -> Option<(i64, i64)> {
        let _frame = self.local_frame(8);
        let (r, total) = self.runtime_method(c"totalMemory", c"()J")?;
        let (_, free) = self.runtime_method(c"freeMemory", c"()J")?;
        let env = self.env;
        // SAFETY: r is the Runtime, total and free its ()J methods.
        let got = unsafe {
            (|| {
                let t = ((**env).CallLongMethodA?)(env, r, total, ptr::null());
                let f = ((**env).CallLongMethodA?)(env, r, free, ptr::null());
                Some((t, f))
            })()
        };
        self.clear_exception();
        got
    }

    /// `Runtime.getRuntime().halt(code)`: the JVM posts VM death and exits at once, without
    /// running shutdown hooks. Returns only if the call could not be made.
    pub fn halt(&self, code: jint) {
        let _frame = self.local_frame(8);
        let Some((r, halt)) = self.runtime_method(c"halt", c"(I)V") else {
            return;
        };
        let args = [jvalue { i: code }];
        // SAFETY: r is the Runtime, halt its (I)V method, args one int.
        unsafe {
            if let Some(call) = (**self.env).CallVoidMethodA {
                call(self.env, r, halt, args.as_ptr());
            }
        }
        self.clear_exception();
    }

    /// A field's value, big-endian for a primitive (1, 2, 4 or 8 bytes by its descriptor's
    /// first character), or the object for a reference (`L` or `[`; a local reference).
    /// `target` is the object, or the class for a static field.
    pub fn field_value(
        &self,
        target: jobject,
        field: jfieldID,
        descriptor: u8,
        is_static: bool,
    ) -> Option<FieldValue> {
        let env = self.env;
        macro_rules! get {
            ($inst:ident, $stat:ident) => {{
                // SAFETY: env is the current thread's; target holds this field (the caller
                // took the field ID from the target's class chain) of this type.
                unsafe {
                    if is_static {
                        ((**env).$stat?)(env, target, field)
                    } else {
                        ((**env).$inst?)(env, target, field)
                    }
                }
            }};
        }
        macro_rules! primitive {
            ($inst:ident, $stat:ident) => {
                FieldValue::Bytes(get!($inst, $stat).to_be_bytes().to_vec())
            };
        }
        let v = match descriptor {
            b'Z' => primitive!(GetBooleanField, GetStaticBooleanField),
            b'B' => primitive!(GetByteField, GetStaticByteField),
            b'C' => primitive!(GetCharField, GetStaticCharField),
            b'S' => primitive!(GetShortField, GetStaticShortField),
            b'I' => primitive!(GetIntField, GetStaticIntField),
            b'J' => primitive!(GetLongField, GetStaticLongField),
            b'F' => primitive!(GetFloatField, GetStaticFloatField),
            b'D' => primitive!(GetDoubleField, GetStaticDoubleField),
            b'L' | b'[' => FieldValue::Object(get!(GetObjectField, GetStaticObjectField)),
            _ => return None,
        };
        self.clear_exception();
        Some(v)
    }

    /// Element `index` of an object array (a local reference, or null).
    pub fn array_object(&self, array: jobject, index: jint) -> jobject {
        // SAFETY: env is the current thread's; array is an object array and index is below
        // its length (checked by the caller); an exception is cleared.
        let o = unsafe {
            (**self.env)
                .GetObjectArrayElement
                .map_or(ptr::null_mut(), |f| f(self.env, array, index))
        };
        self.clear_exception();
        o
    }

    /// The elements of a primitive array of element type `descriptor`, each big-endian.
    pub fn primitive_array_bytes(&self, array: jobject, descriptor: u8, length: jint) -> Vec<u8> {
        let n = length.max(0) as usize;
        let env = self.env;
        macro_rules! region {
            ($t:ty, $f:ident) => {{
                let mut v: Vec<$t> = vec![Default::default(); n];
                // SAFETY: array is a primitive array of this element type and length n; v has
                // room for n elements.
                unsafe {
                    if let Some(f) = (**env).$f {
                        f(env, array, 0, n as jint, v.as_mut_ptr());
                    }
                }
                v.iter().flat_map(|x| x.to_be_bytes()).collect::<Vec<u8>>()
            }};
        }
        let bytes = match descriptor {
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

    /// A method of `class` by name and descriptor (static or not), for [`Jni::call`]. None if
    /// there is none, or it takes anything but ints and longs, more than four of them, or
    /// returns a type `call` does not. The class is kept (a global reference) for the life of
    /// the VM: the method ID stays valid.
    pub fn method(
        &self,
        class: jclass,
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

    /// Whether `object` is an instance of `class` (false for null).
    pub fn is_instance_of(&self, object: jobject, class: jclass) -> bool {
        // SAFETY: both are live references (or object null, which IsInstanceOf takes).
        !object.is_null()
            && unsafe {
                (**self.env)
                    .IsInstanceOf
                    .is_some_and(|f| f(self.env, object, class) != 0)
            }
    }

    /// Whether `class` declares or inherits a `name`/`sig` method other than `method` (an
    /// override of it).
    pub fn overrides(&self, class: jclass, name: &CStr, sig: &CStr, method: &Method) -> bool {
        self.method_id_in(class, name, sig, false)
            .is_some_and(|id| id != method.id)
    }

    /// The ID of a method of `class` (GetMethodID or GetStaticMethodID), None if it has none.
    fn method_id_in(
        &self,
        class: jclass,
        name: &CStr,
        sig: &CStr,
        is_static: bool,
    ) -> Option<jmethodID> {
        // SAFETY: names are NUL-terminated; class is a live reference; exceptions are cleared.
        let id = unsafe {
            if is_static {
                ((**self.env).GetStaticMethodID?)(self.env, class, name.as_ptr(), sig.as_ptr())
            } else {
                ((**self.env).GetMethodID?)(self.env, class, name.as_ptr(), sig.as_ptr())
            }
        };
        self.clear_exception();
        (!id.is_null()).then_some(id)
    }

    /// Whether an exception is pending.
    fn exception_pending(&self) -> bool {
        // SAFETY: env is valid; ExceptionCheck has no preconditions.
        unsafe {
            (**self.env)
                .ExceptionCheck
                .is_some_and(|f| f(self.env) != 0)
        }
    }

    /// Calls an instance `method` on `target`, or a static one on its class (`target` then
    /// unused), with `args`. None when the arguments do not match the descriptor, the target
    /// is not an instance of the method's class, an exception was already pending, or the
    /// method throws (its exception is cleared). An object result is a local reference.
    pub fn call(&self, target: jobject, method: &Method, args: &[Arg]) -> Option<Value> {
        let matches = args.len() == usize::from(method.count)
            && args.iter().zip(method.params).all(|(a, p)| match a {
                Arg::Int(_) => p == b'I',
                Arg::Long(_) => p == b'J',
            });
        let class = method.class.raw();
        let on = if method.is_static { class } else { target };
        if !matches
            || self.exception_pending()
            || !(method.is_static || self.is_instance_of(target, class))
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
        let (env, id, a) = (self.env, method.id, values.as_ptr());
        macro_rules! call {
            ($inst:ident, $stat:ident) => {
                // SAFETY: id is a method of `class`, which the VM keeps loaded (a global
                // reference), called on an instance of it (checked) or, static, on the class
                // itself; its parameters are ints and longs, checked one by one above.
                unsafe {
                    if method.is_static {
                        ((**env).$stat?)(env, on, id, a)
                    } else {
                        ((**env).$inst?)(env, on, id, a)
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
            _ => Value::Object(call!(CallObjectMethodA, CallStaticObjectMethodA)),
        };
        (!self.clear_exception()).then_some(value)
    }

    /// An instance field of `class` by name and type descriptor (the class kept, as for
    /// [`Jni::method`]).
    pub fn field(&self, class: jclass, name: &CStr, sig: &CStr) -> Option<Field> {
        let kind = *sig.to_bytes().first()?;
        // SAFETY: names are NUL-terminated; class is a live reference; exceptions are cleared.
        let id =
            unsafe { ((**self.env).GetFieldID?)(self.env, class, name.as_ptr(), sig.as_ptr()) };
        self.clear_exception();
        if id.is_null() {
            return None;
        }
        Some(Field {
            class: self.global(class)?,
            id,
            kind,
        })
    }

    /// The value of a `long` field of `object`; None for a field of another type, or an
    /// object that is not an instance of the field's class.
    pub fn long_field(&self, object: jobject, field: &Field) -> Option<jlong> {
        if field.kind != b'J' || !self.is_instance_of(object, field.class.raw()) {
            return None;
        }
        // SAFETY: field is a long field of a class the VM keeps loaded, read from an instance
        // of it (checked).
        Some(unsafe { ((**self.env).GetLongField?)(self.env, object, field.id) })
    }

    /// A global reference, for the life of the VM (never deleted).
    pub fn global(&self, object: jobject) -> Option<Global> {
        let g = self.new_global(object);
        (!g.is_null()).then_some(Global(g))
    }

    /// Opens a local reference frame that is popped when the guard drops.
    pub fn local_frame(&self, capacity: jint) -> Option<LocalFrame<'cb>> {
        // SAFETY: env is valid; PushLocalFrame only reserves capacity.
        let rc = unsafe { ((**self.env).PushLocalFrame?)(self.env, capacity) };
        self.clear_exception();
        (rc == 0).then_some(LocalFrame { jni: *self })
    }
}

/// A native method to register ([`Jni::register_natives`]): its name, JVM descriptor and
/// function.
#[derive(Clone, Copy, Debug)]
pub struct NativeMethod {
    name: &'static CStr,
    signature: &'static CStr,
    function: *mut std::ffi::c_void,
}

// SAFETY: a function's address and two static strings, none of them ever written.
unsafe impl Send for NativeMethod {}
// SAFETY: as above.
unsafe impl Sync for NativeMethod {}

impl NativeMethod {
    /// # Safety
    /// `function` is an `extern "system"` function whose parameters are a `*mut JNIEnv`, the
    /// class (a static native) or object, and the arguments `signature` describes, in that
    /// order, and whose result is the one it describes.
    pub const unsafe fn new(
        name: &'static CStr,
        signature: &'static CStr,
        function: *mut std::ffi::c_void,
    ) -> NativeMethod {
        NativeMethod {
            name,
            signature,
            function,
        }
    }
}

/// A method looked up by [`Jni::method`], with what its descriptor takes and returns, so
/// that [`Jni::call`] checks each call against it.
#[derive(Clone, Copy, Debug)]
pub struct Method {
    /// Its class, kept loaded.
    class: Global,
    id: jmethodID,
    is_static: bool,
    /// Each parameter's descriptor's first character (`L` for an object, `[` an array).
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
#[derive(Clone, Copy, Debug)]
pub enum Value {
    Void,
    Boolean(bool),
    Int(jint),
    Long(jlong),
    /// A local reference, or null.
    Object(jobject),
}

impl Value {
    pub fn object(self) -> Option<jobject> {
        match self {
            Value::Object(o) if !o.is_null() => Some(o),
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
pub struct Field {
    /// Its class, kept loaded.
    class: Global,
    id: jfieldID,
    kind: u8,
}

// SAFETY: a field ID is valid on every thread while its class is loaded (a global reference
// keeps it so); only the JVM dereferences it.
unsafe impl Send for Field {}
// SAFETY: as above; it is only read.
unsafe impl Sync for Field {}

/// A global reference made by [`Jni::global`], kept for the life of the VM.
#[derive(Clone, Copy, Debug)]
pub struct Global(jobject);

// SAFETY: a global reference is valid on every thread attached to the JVM, and only the JVM
// dereferences it.
unsafe impl Send for Global {}
// SAFETY: as above; it is only read.
unsafe impl Sync for Global {}

impl Global {
    pub fn raw(&self) -> jobject {
        self.0
    }
}

/// A field's value as [`Jni::field_value`] reads it.
pub enum FieldValue {
    /// A primitive, big-endian.
    Bytes(Vec<u8>),
    /// A reference (a local reference; null for null).
    Object(jobject),
}

/// Global references to classes, made by [`Jni::global_classes`] and deleted by
/// [`Jni::release`] (dropped otherwise, they stay: a leak of a few handles, never a dangling one).
pub struct GlobalClasses(Vec<jclass>);

// SAFETY: global references are valid on every thread attached to the JVM, and only the JVM
// dereferences them.
unsafe impl Send for GlobalClasses {}
// SAFETY: as above; they are only read.
unsafe impl Sync for GlobalClasses {}

impl GlobalClasses {
    pub fn as_slice(&self) -> &[jclass] {
        &self.0
    }
}

/// Frees every local reference made since it was opened.
pub struct LocalFrame<'cb> {
    jni: Jni<'cb>,
}

impl Drop for LocalFrame<'_> {
    fn drop(&mut self) {
        // SAFETY: pairs with the PushLocalFrame that created this guard, on the same thread.
        unsafe {
            if let Some(pop) = (**self.jni.env).PopLocalFrame {
                pop(self.jni.env, ptr::null_mut());
            }
        }
    }
}

/// The JavaVM, to attach jlive's own threads.
#[derive(Clone, Copy)]
pub struct Vm(*mut JavaVM);

// SAFETY: the JavaVM pointer is valid for the life of the process and usable on any thread.
unsafe impl Send for Vm {}
// SAFETY: as above.
unsafe impl Sync for Vm {}

#[repr(C)]
struct AttachArgs {
    version: jint,
    name: *const std::ffi::c_char,
    group: jobject,
}

impl Vm {
    /// The raw JavaVM (for a shim that wraps it).
    pub fn raw(&self) -> *mut JavaVM {
        self.0
    }

    pub fn new(vm: *mut JavaVM) -> Vm {
        Vm(vm)
    }

    /// Attaches the calling thread as a daemon thread named `name`; its JNIEnv stays valid
    /// for the life of the thread.
    pub fn attach_daemon(&self, name: &CStr) -> Option<*mut JNIEnv> {
        let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
        let mut args = AttachArgs {
            version: 0x0001_0008, // JNI_VERSION_1_8
            name: name.as_ptr(),
            group: std::ptr::null_mut(),
        };
        // SAFETY: the JavaVM is live; args outlives the call; env receives the thread's JNIEnv.
        let rc = unsafe {
            ((**self.0).AttachCurrentThreadAsDaemon?)(
                self.0,
                &mut env,
                &mut args as *mut AttachArgs as *mut _,
            )
        };
        (rc == 0 && !env.is_null()).then_some(env as *mut JNIEnv)
    }

    /// The calling thread's JNIEnv, if the thread is attached to the JVM (None: it is not, and
    /// stays so).
    pub fn current_env<'a>(&self) -> Option<Jni<'a>> {
        let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: the JavaVM is live; env receives the thread's JNIEnv or stays null.
        let rc = unsafe { ((**self.0).GetEnv?)(self.0, &mut env, 0x0001_0008) };
        (rc == 0)
            .then(|| Jni::from_callback(env as *mut JNIEnv))
            .flatten()
    }

    /// A JVMTI environment of this VM of its own (its tags and events are its own), holding
    /// `caps`; the caller disposes of it.
    pub fn new_jvmti_env(
        &self,
        caps: &crate::jvmti::Capabilities,
    ) -> crate::jvmti::Result<crate::jvmti::Jvmti> {
        use crate::jvmti::{Jvmti, JvmtiError, ERROR_NOT_AVAILABLE};
        let env = Jvmti::from_vm(self.0).ok_or(JvmtiError(ERROR_NOT_AVAILABLE))?;
        if let Err(e) = env.add_capabilities(caps) {
            env.dispose();
            return Err(e);
        }
        Ok(env)
    }

    /// Runs `f` with the calling thread's JNIEnv: as it is if the thread is attached, else
    /// attached as a daemon for the call and detached after it.
    pub fn with_env<R>(&self, f: impl FnOnce(Jni<'_>) -> R) -> Option<R> {
        let mut env: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: the JavaVM is live; env receives the thread's JNIEnv or stays null.
        let rc = unsafe { ((**self.0).GetEnv?)(self.0, &mut env, 0x0001_0008) };
        if rc == 0 && !env.is_null() {
            return Jni::from_callback(env as *mut JNIEnv).map(f);
        }
        let env = self.attach_daemon(c"jlive")?;
        let result = Jni::from_callback(env).map(f);
        self.detach_current();
        result
    }

    /// Detaches the calling thread, attached by [`Vm::attach_daemon`]; it must hold no
    /// monitors and have no Java frames (a thread the agent started itself).
    pub fn detach_current(&self) {
        // SAFETY: the JavaVM is live; detaching a thread that is not attached is a no-op error.
        if let Some(detach) = unsafe { (**self.0).DetachCurrentThread } {
            // SAFETY: as above; called on the thread being detached.
            let _ = unsafe { detach(self.0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    /// A descriptor gives each parameter's kind and the return kind; more than four
    /// parameters, one that is not an int or a long, a return type `call` does not take, void
    /// anywhere but as the whole return type, or a malformed descriptor give none.
    #[test]
    fn a_method_descriptor_gives_its_parameter_and_return_kinds() {
        let p = |s: &str| Method::parse(s.as_bytes());
        assert_eq!(p("()V"), Some(([0; 4], 0, b'V')));
        assert_eq!(
            p("(J)Ljava/lang/management/ThreadInfo;"),
            Some(([b'J', 0, 0, 0], 1, b'L'))
        );
        assert_eq!(p("(JIJ)[J"), Some(([b'J', b'I', b'J', 0], 3, b'[')));
        assert_eq!(p("(IJJI)Z"), Some(([b'I', b'J', b'J', b'I'], 4, b'Z')));
        assert_eq!(p("([J)V"), None);
        assert_eq!(p("(Ljava/lang/String;)V"), None);
        assert_eq!(p("(V)V"), None);
        assert_eq!(p("()[V"), None);
        assert_eq!(p("(IIIII)V"), None);
        assert_eq!(p("()D"), None);
        assert_eq!(p("(Ljava/lang/String)V"), None);
        assert_eq!(p("(I)VX"), None);
        assert_eq!(p("I)V"), None);
    }
}
