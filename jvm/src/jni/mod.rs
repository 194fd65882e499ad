//! JNI, on the JNIEnv of one callback or native (`Jni<'l>`) or of a thread jlive attached
//! ([`Vm`]).
//!
//! `Jni<'l>` and the [`Local<'l>`] references it makes carry the lifetime of the frame they
//! belong to: [`Jni::with_raw`] hands a callback's env to a closure that works for any `'l`,
//! so neither can leave it. A [`LocalFrame`] opens a nested frame whose own `Jni` makes
//! references that cannot outlive it. `Jni` is `Copy`, so a copy of the outer one could still
//! make a reference inside the nested frame that the frame's pop would free: every function
//! that makes a reference first checks that its `Jni` is the innermost one of the thread
//! (one thread-local level, in the manner of jni-rs 0.22's `Env`), and panics otherwise (a
//! bug of jlive's; the panic stops at the callback's guard).
//!
//! - `mod.rs`: `Jni`, frames, references, classes, strings.
//! - `calls.rs`: methods and fields looked up once and called checked; field values; arrays.
//! - `java.rs`: the few Java APIs jlive calls (System properties, GC counts, Runtime).
//! - `vm.rs`: the JavaVM: attaching threads, GetEnv.

mod calls;
mod java;
mod vm;

pub use calls::{Arg, Array, FieldValue, Layout, Method, Slot, Value};
pub use vm::{Attached, Vm};

use crate::refs::{
    Class, ClassRef, FieldId, Global, GlobalClass, JString, Local, OwnedGlobal, Ref,
};
use jni_sys::{jint, jmethodID, jobject, JNIEnv, JNINativeInterface_, JNINativeMethod};
use std::cell::Cell;
use std::ffi::CStr;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

thread_local! {
    /// The level of the innermost `Jni` of this thread: raised by each callback's
    /// [`Jni::with_raw`] and each [`LocalFrame`], lowered when they end.
    static TOP: Cell<u32> = const { Cell::new(0) };
}

/// Raises the thread's level for as long as it lives (unwinding included).
struct Level {
    saved: u32,
}

impl Level {
    fn enter() -> (Level, u32) {
        let saved = TOP.with(|t| t.get());
        TOP.with(|t| t.set(saved + 1));
        (Level { saved }, saved + 1)
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        TOP.with(|t| t.set(self.saved));
    }
}

/// The JNIEnv of the current thread, for the frame `'l` names.
#[derive(Clone, Copy)]
pub struct Jni<'l> {
    env: NonNull<JNIEnv>,
    level: u32,
    /// Tied to one frame of one thread: neither `Send` nor `Sync`.
    _frame: PhantomData<*const &'l ()>,
}

impl Jni<'_> {
    /// Runs `f` with the JNIEnv a JNI native or JVMTI callback received; None for null.
    ///
    /// # Safety
    /// `env` is the JNIEnv the JVM passed to the native method or JVMTI callback now running
    /// on this thread (or one GetEnv or AttachCurrentThread gave this thread, which stays
    /// attached while `f` runs).
    pub unsafe fn with_raw<R>(env: *mut JNIEnv, f: impl for<'x> FnOnce(Jni<'x>) -> R) -> Option<R> {
        let env = NonNull::new(env)?;
        let (_level, level) = Level::enter();
        Some(f(Jni {
            env,
            level,
            _frame: PhantomData,
        }))
    }
}

impl<'l> Jni<'l> {
    /// The function table.
    fn fns(&self) -> &JNINativeInterface_ {
        // SAFETY: env is this thread's live JNIEnv (with_raw's contract), whose first word
        // points to the JVM's function table, valid for the life of the VM.
        unsafe { &**self.env.as_ptr() }
    }

    fn env(&self) -> *mut JNIEnv {
        self.env.as_ptr()
    }

    /// Panics unless this is the innermost `Jni` of the thread: a reference it made inside a
    /// nested frame would be freed with that frame while typed to outlive it.
    fn here(&self) {
        let top = TOP.with(|t| t.get());
        assert!(
            top == self.level,
            "jlive bug: a JNI reference made through an outer frame's Jni (level {} of {})",
            self.level,
            top
        );
    }

    /// Types a reference this env's function just returned (checking that this `Jni` is the
    /// innermost one, whose frame the reference is in).
    fn local(&self, raw: jobject) -> Option<Local<'l>> {
        self.here();
        // SAFETY: a JNI function of this thread's env returned `raw` (or null), a new local
        // reference of the innermost frame, which `here` checked is `'l`'s.
        unsafe { Local::from_raw(raw) }
    }

    /// Types a reference a JVMTI function of this thread just made in the current frame,
    /// which must be this `Jni`'s.
    pub(crate) fn adopt(&self, raw: jobject) -> Option<Local<'l>> {
        self.here();
        self.local(raw)
    }

    /// As [`Jni::adopt`], for a class.
    pub(crate) fn adopt_class(&self, raw: jobject) -> Option<Class<'l>> {
        self.here();
        self.class(raw)
    }

    /// As [`Jni::local`], for a result that is a class.
    fn class(&self, raw: jobject) -> Option<Class<'l>> {
        self.here();
        // SAFETY: as `local`; the callers pass results that are classes.
        unsafe { Class::from_raw(raw) }
    }

    /// The raw JNIEnv: a thread's identity in JVMPI, never dereferenced by its holder.
    pub fn raw(&self) -> *mut JNIEnv {
        self.env()
    }

    /// Clears a pending exception; true if there was one.
    fn clear_exception(&self) -> bool {
        let (Some(check), Some(clear)) = (self.fns().ExceptionCheck, self.fns().ExceptionClear)
        else {
            return false;
        };
        // SAFETY: env is this thread's; ExceptionCheck and ExceptionClear have no
        // preconditions.
        unsafe {
            if check(self.env()) != 0 {
                clear(self.env());
                return true;
            }
        }
        false
    }

    /// Whether an exception is pending.
    fn exception_pending(&self) -> bool {
        // SAFETY: env is this thread's; ExceptionCheck has no preconditions.
        self.fns()
            .ExceptionCheck
            .is_some_and(|f| unsafe { f(self.env()) } != 0)
    }

    /// Opens a local reference frame, popped when the guard drops; references made through
    /// its [`LocalFrame::jni`] live as long as it. If the JVM cannot push one, the guard
    /// still works (references then go to the enclosing frame, freed with it).
    pub fn local_frame(&self, capacity: jint) -> LocalFrame<'_> {
        self.here();
        // SAFETY: env is this thread's; PushLocalFrame only reserves capacity.
        let pushed = self
            .fns()
            .PushLocalFrame
            .is_some_and(|f| unsafe { f(self.env(), capacity) } == 0);
        self.clear_exception();
        let (level, depth) = Level::enter();
        LocalFrame {
            env: self.env,
            depth,
            pushed,
            level: std::mem::ManuallyDrop::new(level),
            _outer: PhantomData,
        }
    }

    /// Tells the JVM that `count` more local references will be live (JVMTI's GetLoadedClasses
    /// makes one per class): -Xcheck:jni warns about every reference past the capacity asked.
    pub fn ensure_local_capacity(&self, count: usize) {
        let count = jint::try_from(count).unwrap_or(jint::MAX);
        // SAFETY: env is this thread's; the call only reserves capacity.
        let rc = self
            .fns()
            .EnsureLocalCapacity
            .map_or(0, |f| unsafe { f(self.env(), count) });
        if rc != 0 {
            self.clear_exception();
        }
    }

    /// Deletes a local reference early (in a loop over many objects).
    pub fn delete_local(&self, local: impl Into<Local<'l>>) {
        let raw = local.into().into_raw();
        if let Some(delete) = self.fns().DeleteLocalRef {
            // SAFETY: raw is a live local reference of this thread, consumed here, so that
            // nothing uses it again.
            unsafe { delete(self.env(), raw) };
        }
    }

    /// A global reference kept for the life of the VM (never deleted).
    pub fn global(&self, object: &impl Ref) -> Option<Global> {
        // SAFETY: env is this thread's; object is a live reference (its type's promise).
        let g = unsafe { (self.fns().NewGlobalRef?)(self.env(), object.as_raw()) };
        // SAFETY: NewGlobalRef made it, and a Global is never deleted.
        unsafe { Global::from_raw(g) }
    }

    /// A global reference that its owner deletes ([`Jni::delete_global`]).
    pub fn new_global(&self, object: &impl Ref) -> Option<OwnedGlobal> {
        // SAFETY: as for `global`.
        let g = unsafe { (self.fns().NewGlobalRef?)(self.env(), object.as_raw()) };
        // SAFETY: NewGlobalRef made it; the OwnedGlobal is its only deleter.
        unsafe { OwnedGlobal::from_raw(g) }
    }

    /// Deletes a global reference (on any attached thread).
    pub fn delete_global(&self, global: OwnedGlobal) {
        if let Some(delete) = self.fns().DeleteGlobalRef {
            // SAFETY: a live global reference, consumed here, so deleted once.
            unsafe { delete(self.env(), global.as_raw()) };
        }
    }

    /// Whether two references name the same object.
    pub fn is_same_object(&self, a: &impl Ref, b: &impl Ref) -> bool {
        // SAFETY: env is this thread's; both are live references.
        self.fns()
            .IsSameObject
            .is_some_and(|f| unsafe { f(self.env(), a.as_raw(), b.as_raw()) } != 0)
    }

    /// Whether `object` is an instance of `class`.
    pub fn is_instance_of(&self, object: &impl Ref, class: &impl ClassRef) -> bool {
        // SAFETY: both are live references, the second a class.
        self.fns()
            .IsInstanceOf
            .is_some_and(|f| unsafe { f(self.env(), object.as_raw(), class.as_raw()) } != 0)
    }

    /// The class of an object.
    pub fn object_class(&self, object: &impl Ref) -> Option<Class<'l>> {
        self.here();
        // SAFETY: env is this thread's; object is a live reference.
        let c = unsafe { (self.fns().GetObjectClass?)(self.env(), object.as_raw()) };
        self.class(c)
    }

    /// The superclass of a class; None for Object, interfaces and primitives.
    pub fn superclass(&self, class: &impl ClassRef) -> Option<Class<'l>> {
        self.here();
        // SAFETY: env is this thread's; class is a live reference to a class.
        let s = unsafe { (self.fns().GetSuperclass?)(self.env(), class.as_raw()) };
        self.class(s)
    }

    /// `class.getComponentType()`: the element class of an array class, else None.
    pub fn component_type(&self, class: &impl ClassRef) -> Option<Class<'l>> {
        if self.exception_pending() {
            return None;
        }
        let class_class = self.object_class(class)?;
        let (name, sig) = (c"getComponentType", c"()Ljava/lang/Class;");
        let method = self.method_id_in(&class_class, name, sig, false);
        self.delete_local(class_class);
        let method = method?;
        // SAFETY: method is Class.getComponentType, called on a live Class object, with no
        // arguments (so the null argument array is never read); its result is a Class.
        let c = unsafe {
            (self.fns().CallObjectMethodA?)(self.env(), class.as_raw(), method, ptr::null())
        };
        self.clear_exception();
        self.class(c)
    }

    /// A member's ID through `lookup` (GetMethodID, GetStaticMethodID, GetFieldID or
    /// GetStaticFieldID), None if `class` has none.
    fn id_in<T>(
        &self,
        lookup: Option<Lookup<T>>,
        class: &impl ClassRef,
        name: &CStr,
        sig: &CStr,
    ) -> Option<NonNull<T>> {
        // SAFETY: one of the four lookups, with NUL-terminated names and a live class
        // reference; a failure leaves an exception, cleared.
        let id = unsafe { lookup?(self.env(), class.as_raw(), name.as_ptr(), sig.as_ptr()) };
        self.clear_exception();
        NonNull::new(id)
    }

    /// The ID of a method of `class` (GetMethodID or GetStaticMethodID), None if it has none.
    fn method_id_in(
        &self,
        class: &impl ClassRef,
        name: &CStr,
        sig: &CStr,
        is_static: bool,
    ) -> Option<jmethodID> {
        let fns = self.fns();
        let lookup = if is_static {
            fns.GetStaticMethodID
        } else {
            fns.GetMethodID
        };
        self.id_in(lookup, class, name, sig).map(NonNull::as_ptr)
    }

    /// The ID of a static or instance field of `class`, None if it has none.
    fn field_id_in(
        &self,
        class: &impl ClassRef,
        name: &CStr,
        sig: &CStr,
        is_static: bool,
    ) -> Option<FieldId> {
        let fns = self.fns();
        let lookup = if is_static {
            fns.GetStaticFieldID
        } else {
            fns.GetFieldID
        };
        let id = self.id_in(lookup, class, name, sig)?;
        // SAFETY: GetFieldID answered it, for `class`.
        unsafe { FieldId::from_raw(id.as_ptr()) }
    }

    /// Loads a class by its internal name (FindClass, which initializes it), None if it
    /// cannot (the exception is cleared).
    pub fn find_class(&self, name: &CStr) -> Option<Class<'l>> {
        self.here();
        // SAFETY: name is NUL-terminated; exceptions are cleared.
        let c = unsafe { (self.fns().FindClass?)(self.env(), name.as_ptr()) };
        self.clear_exception();
        self.class(c)
    }

    /// Finds a class and initializes it (GetStaticMethodID initializes its class).
    pub fn initialize_class(&self, class: &CStr, method: &CStr, sig: &CStr) -> bool {
        let Some(c) = self.find_class(class) else {
            return false;
        };
        let found = self.method_id_in(&c, method, sig, true).is_some();
        self.delete_local(c);
        found
    }

    /// Defines a class from bytes in the bootstrap loader.
    ///
    /// # Safety
    /// `bytes` are a class file that passes verification: the bootstrap loader's classes are
    /// not verified by default, and malformed code crashes the VM.
    pub unsafe fn define_boot_class(&self, name: &CStr, bytes: &[u8]) -> Option<Class<'l>> {
        self.here();
        // SAFETY: name is NUL-terminated, bytes outlive the call; a null loader means the
        // bootstrap loader; the bytes verify (the caller's contract).
        let c = unsafe {
            (self.fns().DefineClass?)(
                self.env(),
                name.as_ptr(),
                ptr::null_mut(),
                bytes.as_ptr() as *const jni_sys::jbyte,
                bytes.len() as jint,
            )
        };
        self.clear_exception();
        self.class(c)
    }

    /// Binds native methods of `class`.
    pub fn register_natives(&self, class: &impl ClassRef, methods: &[NativeMethod]) -> bool {
        let table: Vec<JNINativeMethod> = methods
            .iter()
            .map(|m| JNINativeMethod {
                name: m.name.as_ptr() as *mut _,
                signature: m.signature.as_ptr() as *mut _,
                fnPtr: m.function,
            })
            .collect();
        // SAFETY: the table holds NUL-terminated names and signatures that outlive the call
        // and functions whose C signatures match them (`NativeMethod::new`'s contract); class
        // is a live class reference.
        let rc = self.fns().RegisterNatives.map_or(-1, |f| unsafe {
            f(
                self.env(),
                class.as_raw(),
                table.as_ptr(),
                table.len() as jint,
            )
        });
        self.clear_exception();
        rc == 0
    }

    /// Calls a static `()Z` method of `class`; None if it cannot be found or throws (the
    /// exception is cleared).
    pub fn call_static_boolean(&self, class: &impl ClassRef, name: &CStr) -> Option<bool> {
        if self.exception_pending() {
            return None;
        }
        let method = self.method_id_in(class, name, c"()Z", true)?;
        // SAFETY: method is a static ()Z method of class, a live class reference; it takes
        // no arguments, so the null argument array is never read.
        let r = unsafe {
            (self.fns().CallStaticBooleanMethodA?)(self.env(), class.as_raw(), method, ptr::null())
        };
        (!self.clear_exception()).then_some(r != 0)
    }

    /// Sets a static boolean field of a class.
    pub fn set_static_boolean(&self, class: &impl ClassRef, name: &CStr, value: bool) -> bool {
        let (Some(field), Some(set)) = (
            self.field_id_in(class, name, c"Z", true),
            self.fns().SetStaticBooleanField,
        ) else {
            return false;
        };
        // SAFETY: field is a static boolean field of class (GetStaticFieldID checked the
        // name and type).
        unsafe { set(self.env(), class.as_raw(), field.as_raw(), u8::from(value)) };
        true
    }

    /// Sets a static int field of a class.
    pub fn set_static_int(&self, class: &impl ClassRef, name: &CStr, value: jint) -> bool {
        let (Some(field), Some(set)) = (
            self.field_id_in(class, name, c"I", true),
            self.fns().SetStaticIntField,
        ) else {
            return false;
        };
        // SAFETY: field is a static int field of class (GetStaticFieldID checked).
        unsafe { set(self.env(), class.as_raw(), field.as_raw(), value) };
        true
    }

    /// Whether `object` is an instance of the class named `class` (a boot class).
    fn is_a(&self, object: &Local<'_>, class: &CStr) -> bool {
        let Some(c) = self.find_class(class) else {
            return false;
        };
        let is = self.is_instance_of(object, &c);
        self.delete_local(c);
        is
    }

    /// A local reference known to be a String, if it is one (else the reference back).
    pub fn as_string(&self, object: Local<'l>) -> Result<JString<'l>, Local<'l>> {
        if self.is_a(&object, c"java/lang/String") {
            // SAFETY: IsInstanceOf said so.
            Ok(unsafe { JString::from_local(object) })
        } else {
            Err(object)
        }
    }

    /// A local reference known to be a Class, if it is one (else the reference back).
    pub fn as_class(&self, object: Local<'l>) -> Result<Class<'l>, Local<'l>> {
        if self.is_a(&object, c"java/lang/Class") {
            // SAFETY: IsInstanceOf said so.
            Ok(unsafe { Class::from_local(object) })
        } else {
            Err(object)
        }
    }

    /// The length of an array (None for any other object), asking the JVM first whether its
    /// class is an array class.
    pub fn array_length(&self, jvmti: crate::jvmti::Jvmti, object: &impl Ref) -> Option<jint> {
        let class = self.object_class(object)?;
        let status = jvmti.class_status(&class);
        self.delete_local(class);
        if status.ok()? & crate::jvmti::CLASS_STATUS_ARRAY == 0 {
            return None;
        }
        // SAFETY: object is a live array reference (its class is an array class).
        Some(unsafe { (self.fns().GetArrayLength?)(self.env(), object.as_raw()) })
    }

    /// Throws `java.lang.IllegalStateException(message)` in the calling Java thread.
    pub fn throw_illegal_state(&self, message: &str) {
        let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
        let Some(class) = self.find_class(c"java/lang/IllegalStateException") else {
            return;
        };
        if let Some(throw) = self.fns().ThrowNew {
            // SAFETY: class is a live Throwable class; the message is NUL-terminated.
            unsafe { throw(self.env(), class.as_raw(), text.as_ptr()) };
        }
    }

    /// Global references to `classes`, for another attached thread to use.
    pub fn global_classes(&self, classes: &[Class<'_>]) -> GlobalClasses {
        GlobalClasses(
            classes
                .iter()
                .filter_map(|c| self.new_global(c).map(GlobalClass))
                .collect(),
        )
    }

    /// Deletes the global references (on any attached thread: this one).
    pub fn release(&self, classes: GlobalClasses) {
        for class in classes.0 {
            self.delete_global(class.0);
        }
    }
}

/// GetMethodID and its kin: (env, class, name, signature) to an ID.
type Lookup<T> = unsafe extern "system" fn(
    *mut JNIEnv,
    jni_sys::jclass,
    *const std::ffi::c_char,
    *const std::ffi::c_char,
) -> *mut T;

/// A local frame opened by [`Jni::local_frame`], popped (with every reference made in it)
/// when dropped.
pub struct LocalFrame<'f> {
    env: NonNull<JNIEnv>,
    depth: u32,
    pushed: bool,
    /// Lowered when the frame pops (only then: see `drop`).
    level: std::mem::ManuallyDrop<Level>,
    _outer: PhantomData<&'f ()>,
}

impl LocalFrame<'_> {
    /// The env for this frame: references made through it live as long as the frame.
    pub fn jni(&self) -> Jni<'_> {
        Jni {
            env: self.env,
            level: self.depth,
            _frame: PhantomData,
        }
    }
}

impl Drop for LocalFrame<'_> {
    fn drop(&mut self) {
        // Dropped where it is not the innermost (moved into a callback's closure, say): the
        // references made since may still be in use, so the frame stays pushed (the JVM pops
        // it when the native or callback that holds it returns) and the level stays.
        if TOP.with(|t| t.get()) != self.depth {
            return;
        }
        if self.pushed {
            let jni = self.jni();
            if let Some(pop) = jni.fns().PopLocalFrame {
                // SAFETY: pairs with the PushLocalFrame of this guard on this thread, which
                // is the innermost frame (the level says so): what it frees is typed to live
                // no longer than this guard.
                unsafe { pop(jni.env(), ptr::null_mut()) };
            }
        }
        // SAFETY: taken once, here.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.level) };
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

/// Global references to classes, made by [`Jni::global_classes`] and deleted by
/// [`Jni::release`] (dropped otherwise, they stay: a leak of a few handles, never a dangling one).
pub struct GlobalClasses(Vec<GlobalClass>);

impl GlobalClasses {
    pub fn as_slice(&self) -> &[GlobalClass] {
        &self.0
    }
}
