//! The JVMTI function table, reached through jvmti-sys's types but called by slot number.
//!
//! jvmti-sys describes JVMTI 1.2: its table stops at function 155 and its error and event
//! enums know nothing newer. Receiving an error code a Rust enum does not list would be
//! undefined behaviour, so every call here goes through [`Jvmti::slot`] with a signature whose
//! error is a plain `u32`, and newer functions (156 SetHeapSamplingInterval) are reachable.
//! Each wrapper turns JVMTI-allocated memory into owned Rust values and deallocates it.
//!
//! JNI references (`jobject`, `jclass`, `jthread`) and JVMTI IDs are opaque handles that only
//! the JVM dereferences; passing one that is not live is the JVM's documented error, not a
//! Rust memory access, hence the lint allowance below.

#![allow(clippy::not_unsafe_ptr_arg_deref)]

use jni_sys::{jclass, jfieldID, jint, jlong, jmethodID, jobject, JNIEnv, JavaVM};
pub use jvmti_sys::{jthread, jvmtiAddrLocationMap, jvmtiEnv, jvmtiEventCallbacks};
use std::ffi::{c_char, c_uchar, c_void, CStr};
use std::ptr;

pub const JVMTI_VERSION_1_2: jint = 0x3001_0200;

/// Bits of what GetMethodModifiers and GetFieldModifiers answer: the class file's access
/// flags (JVMS 4.5, 4.6).
pub const ACC_STATIC: jint = 0x0008;
pub const ACC_NATIVE: jint = 0x0100;
pub const ACC_ABSTRACT: jint = 0x0400;

pub const ERROR_NONE: u32 = 0;
pub const ERROR_INVALID_SLOT: u32 = 35;
pub const ERROR_OPAQUE_FRAME: u32 = 32;
pub const ERROR_NOT_AVAILABLE: u32 = 98;
pub const ERROR_INTERNAL: u32 = 113;

pub const EVENT_VM_INIT: u32 = 50;
pub const EVENT_VM_DEATH: u32 = 51;
pub const EVENT_THREAD_START: u32 = 52;
pub const EVENT_THREAD_END: u32 = 53;
pub const EVENT_CLASS_FILE_LOAD_HOOK: u32 = 54;
pub const EVENT_CLASS_PREPARE: u32 = 56;
pub const EVENT_VM_START: u32 = 57;
pub const EVENT_METHOD_ENTRY: u32 = 65;
pub const EVENT_METHOD_EXIT: u32 = 66;
pub const EVENT_GARBAGE_COLLECTION_START: u32 = 81;
pub const EVENT_GARBAGE_COLLECTION_FINISH: u32 = 82;
pub const EVENT_OBJECT_FREE: u32 = 83;
pub const EVENT_VM_OBJECT_ALLOC: u32 = 84;
pub const EVENT_COMPILED_METHOD_LOAD: u32 = 68;
pub const EVENT_COMPILED_METHOD_UNLOAD: u32 = 69;
pub const EVENT_DATA_DUMP_REQUEST: u32 = 71;
pub const EVENT_SAMPLED_OBJECT_ALLOC: u32 = 86;
pub const EVENT_MONITOR_WAIT: u32 = 73;
pub const EVENT_MONITOR_WAITED: u32 = 74;
pub const EVENT_MONITOR_CONTENDED_ENTER: u32 = 75;
pub const EVENT_MONITOR_CONTENDED_ENTERED: u32 = 76;
pub const EVENT_VIRTUAL_THREAD_START: u32 = 87;
pub const EVENT_VIRTUAL_THREAD_END: u32 = 88;

/// HotSpot's extension events (JDK 21+) sent when a virtual thread is mounted on a carrier
/// thread (also right after VirtualThreadStart) and unmounted from it (also right before
/// VirtualThreadEnd), on the carrier.
pub const EXTENSION_VIRTUAL_THREAD_MOUNT: &str = "com.sun.hotspot.events.VirtualThreadMount";
pub const EXTENSION_VIRTUAL_THREAD_UNMOUNT: &str = "com.sun.hotspot.events.VirtualThreadUnmount";

pub const CLASS_STATUS_PREPARED: jint = 2;
pub const CLASS_STATUS_ARRAY: jint = 16;
pub const CLASS_STATUS_PRIMITIVE: jint = 32;

/// Capability bit numbers, in the order of jvmtiCapabilities' bit fields.
pub mod cap {
    pub const TAG_OBJECTS: u32 = 0;
    pub const GET_MONITOR_INFO: u32 = 7;
    pub const GET_SOURCE_FILE_NAME: u32 = 11;
    pub const GET_LINE_NUMBERS: u32 = 12;
    pub const ACCESS_LOCAL_VARIABLES: u32 = 14;
    pub const MAINTAIN_ORIGINAL_METHOD_ORDER: u32 = 15;
    pub const GET_OWNED_MONITOR_INFO: u32 = 5;
    pub const GET_CURRENT_CONTENDED_MONITOR: u32 = 6;
    pub const SUSPEND: u32 = 20;
    pub const GET_THREAD_CPU_TIME: u32 = 23;
    pub const GENERATE_METHOD_ENTRY_EVENTS: u32 = 24;
    pub const GENERATE_METHOD_EXIT_EVENTS: u32 = 25;
    pub const GENERATE_ALL_CLASS_HOOK_EVENTS: u32 = 26;
    pub const GENERATE_COMPILED_METHOD_LOAD_EVENTS: u32 = 27;
    pub const GENERATE_MONITOR_EVENTS: u32 = 28;
    pub const GENERATE_VM_OBJECT_ALLOC_EVENTS: u32 = 29;
    pub const GENERATE_GARBAGE_COLLECTION_EVENTS: u32 = 31;
    pub const GENERATE_OBJECT_FREE_EVENTS: u32 = 32;
    pub const SET_NATIVE_METHOD_PREFIX: u32 = 36;
    pub const RETRANSFORM_CLASSES: u32 = 37;
    pub const RETRANSFORM_ANY_CLASS: u32 = 38;
    pub const GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS: u32 = 43;
    pub const SUPPORT_VIRTUAL_THREADS: u32 = 44;
}

/// jvmtiCapabilities: 128 one-bit fields, least significant bit first.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Capabilities([u32; 4]);

impl Capabilities {
    pub fn set(&mut self, bit: u32) {
        self.0[(bit / 32) as usize] |= 1 << (bit % 32);
    }
    pub fn has(&self, bit: u32) -> bool {
        self.0[(bit / 32) as usize] & (1 << (bit % 32)) != 0
    }
    pub fn without(mut self, bit: u32) -> Capabilities {
        self.0[(bit / 32) as usize] &= !(1 << (bit % 32));
        self
    }
}

pub type SampledObjectAllocFn =
    unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread, jobject, jclass, jlong);

/// VirtualThreadStart, VirtualThreadEnd and the mount and unmount extension events: the
/// virtual thread.
pub type VirtualThreadFn = unsafe extern "C" fn(*mut jvmtiEnv, *mut JNIEnv, jthread);

/// jvmtiEventCallbacks as JVMTI 21+ lays it out: jvmti-sys's struct (events 50..84), then
/// event 85 (reserved), 86 (SampledObjectAlloc), 87 and 88 (VirtualThreadStart and End). An
/// older JVM copies the part it knows.
#[repr(C)]
#[derive(Default)]
pub struct EventCallbacks {
    pub base: jvmtiEventCallbacks,
    pub reserved85: Option<unsafe extern "C" fn()>,
    pub sampled_object_alloc: Option<SampledObjectAllocFn>,
    pub virtual_thread_start: Option<VirtualThreadFn>,
    pub virtual_thread_end: Option<VirtualThreadFn>,
}

/// A JVMTI error code with its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JvmtiError(pub u32);

impl std::fmt::Display for JvmtiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.0 {
            10 => "INVALID_THREAD",
            15 => "THREAD_NOT_ALIVE",
            21 => "INVALID_CLASS",
            22 => "CLASS_NOT_PREPARED",
            23 => "INVALID_METHODID",
            32 => "OPAQUE_FRAME",
            35 => "INVALID_SLOT",
            98 => "NOT_AVAILABLE",
            99 => "MUST_POSSESS_CAPABILITY",
            100 => "NULL_POINTER",
            110 => "OUT_OF_MEMORY",
            112 => "WRONG_PHASE",
            113 => "INTERNAL",
            115 => "UNATTACHED_THREAD",
            116 => "INVALID_ENVIRONMENT",
            _ => "",
        };
        write!(f, "JVMTI error {} {}", self.0, name)
    }
}

pub type Result<T> = std::result::Result<T, JvmtiError>;

fn check(code: u32) -> Result<()> {
    if code == ERROR_NONE {
        Ok(())
    } else {
        Err(JvmtiError(code))
    }
}

/// A JVMTI environment. JVMTI functions may be called from any thread attached to the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jvmti(*mut jvmtiEnv);

// SAFETY: a jvmtiEnv is valid on every thread of the VM; the pointer is never freed by us.
unsafe impl Send for Jvmti {}
// SAFETY: as above; JVMTI functions are thread-safe.
unsafe impl Sync for Jvmti {}

/// Calls JVMTI function number `$n` (as numbered in jvmti.h) with the given argument types.
macro_rules! call {
    ($env:expr, $n:expr, ($($t:ty),*), $($arg:expr),*) => {{
        match $env.slot($n) {
            None => Err(JvmtiError(ERROR_NOT_AVAILABLE)),
            Some(f) => {
                // SAFETY: slot $n of a jvmtiInterface_1 holds a function of exactly this
                // signature (jvmti.h); arguments are valid for the duration of the call.
                let f: unsafe extern "C" fn(*mut jvmtiEnv $(, $t)*) -> u32 = unsafe { std::mem::transmute(f) };
                check(unsafe { f($env.0 $(, $arg)*) })
            }
        }
    }};
}

impl Jvmti {
    /// The JVMTI environment of a VM, from `GetEnv`.
    pub fn from_vm(vm: *mut JavaVM) -> Option<Jvmti> {
        let mut env: *mut c_void = ptr::null_mut();
        // SAFETY: vm is the JavaVM the JVM passed to Agent_OnLoad; its invoke table is valid.
        let rc = unsafe { ((**vm).GetEnv?)(vm, &mut env, JVMTI_VERSION_1_2) };
        (rc == 0 && !env.is_null()).then_some(Jvmti(env as *mut jvmtiEnv))
    }

    pub fn raw(&self) -> *mut jvmtiEnv {
        self.0
    }

    /// Wraps the environment pointer a JVMTI callback receives.
    pub fn from_raw(env: *mut jvmtiEnv) -> Jvmti {
        Jvmti(env)
    }

    /// Function number `n` of the table, if the VM fills it.
    fn slot(&self, n: usize) -> Option<*const c_void> {
        // SAFETY: *self.0 is the function table, an array of pointers; jvmti.h numbers
        // functions from 1, and tables of JDK 11+ hold at least 156 entries.
        let f = unsafe {
            let table = *self.0 as *const *const c_void;
            *table.add(n - 1)
        };
        (!f.is_null()).then_some(f)
    }

    fn deallocate<T>(&self, p: *mut T) {
        if !p.is_null() {
            let _ = call!(self, 47, (*mut c_uchar), p as *mut c_uchar);
        }
    }

    /// Takes a JVMTI-allocated C string as an owned String (lossy for modified UTF-8).
    fn take_string(&self, p: *mut c_char) -> String {
        if p.is_null() {
            return String::new();
        }
        // SAFETY: JVMTI returns NUL-terminated strings it allocated; freed right after.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        self.deallocate(p);
        s
    }

    /// Takes a JVMTI-allocated array of `count` items.
    fn take_array<T: Copy>(&self, p: *mut T, count: jint) -> Vec<T> {
        if p.is_null() || count <= 0 {
            self.deallocate(p);
            return Vec::new();
        }
        // SAFETY: JVMTI filled `count` elements at p; copied out before deallocation.
        let v = unsafe { std::slice::from_raw_parts(p, count as usize) }.to_vec();
        self.deallocate(p);
        v
    }

    pub fn potential_capabilities(&self) -> Result<Capabilities> {
        let mut caps = Capabilities::default();
        call!(self, 140, (*mut Capabilities), &mut caps)?;
        Ok(caps)
    }

    pub fn add_capabilities(&self, caps: &Capabilities) -> Result<()> {
        call!(self, 142, (*const Capabilities), caps)
    }

    pub fn set_event_callbacks(&self, callbacks: &EventCallbacks) -> Result<()> {
        let size = std::mem::size_of::<EventCallbacks>() as jint;
        call!(self, 122, (*const EventCallbacks, jint), callbacks, size)
    }

    /// Enables or disables an event for every thread.
    pub fn set_event(&self, event: u32, enable: bool) -> Result<()> {
        let mode: u32 = if enable { 1 } else { 0 };
        call!(self, 2, (u32, u32, jthread), mode, event, ptr::null_mut())
    }

    /// The index (its event type) of the extension event named `id`; None when the JVM has no
    /// such event.
    pub fn extension_event(&self, id: &str) -> Result<Option<jint>> {
        let mut count: jint = 0;
        let mut infos: *mut ExtensionEventInfo = ptr::null_mut();
        call!(
            self,
            125,
            (*mut jint, *mut *mut ExtensionEventInfo),
            &mut count,
            &mut infos
        )?;
        let mut index = None;
        for info in self.take_array(infos, count) {
            // Each entry's strings and parameter array are the JVM's, freed here.
            let name = self.take_string(info.id);
            self.deallocate(info.short_description);
            for param in self.take_array(info.params, info.param_count) {
                self.deallocate(param.name);
            }
            if name == id {
                index = Some(info.extension_event_index);
            }
        }
        Ok(index)
    }

    /// Sets (and enables) or, with None, clears (and disables) the callback of the extension
    /// event `index`.
    pub fn set_extension_event(
        &self,
        index: jint,
        callback: Option<VirtualThreadFn>,
    ) -> Result<()> {
        call!(self, 126, (jint, Option<VirtualThreadFn>), index, callback)?;
        self.set_event(index as u32, callback.is_some())
    }

    pub fn set_heap_sampling_interval(&self, interval: jint) -> Result<()> {
        call!(self, 156, (jint), interval)
    }

    /// Copies bytes into JVMTI-allocated memory (for ClassFileLoadHook's new class data).
    pub fn allocate_copy(&self, bytes: &[u8]) -> Result<*mut c_uchar> {
        let mut p: *mut c_uchar = ptr::null_mut();
        call!(
            self,
            46,
            (jlong, *mut *mut c_uchar),
            bytes.len() as jlong,
            &mut p
        )?;
        // SAFETY: Allocate returned a block of bytes.len() bytes that nothing else uses yet.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
        Ok(p)
    }

    /// The prefix with which renamed native methods are still bound.
    pub fn set_native_method_prefix(&self, prefix: &std::ffi::CStr) -> Result<()> {
        call!(self, 73, (*const c_char), prefix.as_ptr())
    }

    /// DisposeEnvironment: gives back the capabilities and the settings of an environment
    /// that will not be used (an agent that could not start).
    pub fn dispose(&self) {
        if let Some(f) = self.slot(127) {
            // SAFETY: slot 127 of a jvmtiInterface_1 is DisposeEnvironment(jvmtiEnv*).
            let f: unsafe extern "C" fn(*mut jvmtiEnv) -> u32 = unsafe { std::mem::transmute(f) };
            // SAFETY: the environment is valid and not used after this.
            let _ = unsafe { f(self.0) };
        }
    }

    pub fn is_modifiable_class(&self, class: jclass) -> bool {
        let mut b: u8 = 0;
        call!(self, 45, (jclass, *mut u8), class, &mut b).is_ok() && b != 0
    }

    pub fn retransform_classes(&self, classes: &[jclass]) -> Result<()> {
        call!(
            self,
            152,
            (jint, *const jclass),
            classes.len() as jint,
            classes.as_ptr()
        )
    }

    /// The defining loader of a class (None = the bootstrap loader).
    pub fn class_loader(&self, class: jclass) -> Option<jobject> {
        let mut l: jobject = ptr::null_mut();
        call!(self, 57, (jclass, *mut jobject), class, &mut l).ok()?;
        (!l.is_null()).then_some(l)
    }

    /// A system property (VM init or later).
    pub fn system_property(&self, name: &str) -> Option<String> {
        let name = std::ffi::CString::new(name).ok()?;
        let mut value: *mut c_char = ptr::null_mut();
        call!(
            self,
            131,
            (*const c_char, *mut *mut c_char),
            name.as_ptr(),
            &mut value
        )
        .ok()?;
        Some(self.take_string(value))
    }

    pub fn force_garbage_collection(&self) -> Result<()> {
        call!(self, 108, (),)
    }

    pub fn class_signature(&self, class: jclass) -> Result<String> {
        let mut sig: *mut c_char = ptr::null_mut();
        call!(
            self,
            48,
            (jclass, *mut *mut c_char, *mut *mut c_char),
            class,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok(self.take_string(sig))
    }

    pub fn class_status(&self, class: jclass) -> Result<jint> {
        let mut status: jint = 0;
        call!(self, 49, (jclass, *mut jint), class, &mut status)?;
        Ok(status)
    }

    pub fn source_file_name(&self, class: jclass) -> Option<String> {
        let mut name: *mut c_char = ptr::null_mut();
        call!(self, 50, (jclass, *mut *mut c_char), class, &mut name).ok()?;
        Some(self.take_string(name))
    }

    /// One of the functions that list what a class holds (52 methods, 53 fields, 54
    /// interfaces): `(jclass, jint* count, T** array)`.
    fn class_list<T: Copy>(&self, function: usize, class: jclass) -> Result<Vec<T>> {
        let (mut n, mut p): (jint, *mut T) = (0, ptr::null_mut());
        call!(
            self,
            function,
            (jclass, *mut jint, *mut *mut T),
            class,
            &mut n,
            &mut p
        )?;
        Ok(self.take_array(p, n))
    }

    /// Methods in class-file order (with can_maintain_original_method_order).
    pub fn class_methods(&self, class: jclass) -> Result<Vec<jmethodID>> {
        self.class_list(52, class)
    }

    pub fn class_fields(&self, class: jclass) -> Result<Vec<jfieldID>> {
        self.class_list(53, class)
    }

    /// Direct superinterfaces, as local references.
    pub fn implemented_interfaces(&self, class: jclass) -> Result<Vec<jclass>> {
        self.class_list(54, class)
    }

    /// (name, signature) of a field.
    pub fn field_name(&self, class: jclass, field: jfieldID) -> Result<(String, String)> {
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
            class,
            field,
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok((self.take_string(name), self.take_string(sig)))
    }

    pub fn field_modifiers(&self, class: jclass, field: jfieldID) -> Result<jint> {
        let mut m: jint = 0;
        call!(
            self,
            62,
            (jclass, jfieldID, *mut jint),
            class,
            field,
            &mut m
        )?;
        Ok(m)
    }

    /// (name, signature) of a method.
    pub fn method_name(&self, method: jmethodID) -> Result<(String, String)> {
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
            method,
            &mut name,
            &mut sig,
            ptr::null_mut()
        )?;
        Ok((self.take_string(name), self.take_string(sig)))
    }

    pub fn method_modifiers(&self, method: jmethodID) -> Result<jint> {
        let mut m: jint = 0;
        call!(self, 66, (jmethodID, *mut jint), method, &mut m)?;
        Ok(m)
    }

    /// Every loaded class, as local references.
    pub fn loaded_classes(&self) -> Result<Vec<jclass>> {
        let (mut n, mut p): (jint, *mut jclass) = (0, ptr::null_mut());
        call!(self, 78, (*mut jint, *mut *mut jclass), &mut n, &mut p)?;
        Ok(self.take_array(p, n))
    }

    pub fn tag(&self, object: jobject) -> Result<jlong> {
        let mut tag: jlong = 0;
        call!(self, 106, (jobject, *mut jlong), object, &mut tag)?;
        Ok(tag)
    }

    pub fn set_tag(&self, object: jobject, tag: jlong) -> Result<()> {
        call!(self, 107, (jobject, jlong), object, tag)
    }

    /// The word this environment keeps for a thread (0: none yet).
    pub fn thread_word(&self, thread: jthread) -> Result<usize> {
        let mut data: *mut c_void = ptr::null_mut();
        call!(self, 102, (jthread, *mut *mut c_void), thread, &mut data)?;
        Ok(data as usize)
    }

    /// Keeps a word for a thread (JVMTI thread-local storage; a number, never dereferenced).
    pub fn set_thread_word(&self, thread: jthread, word: usize) -> Result<()> {
        call!(
            self,
            103,
            (jthread, *const c_void),
            thread,
            word as *const c_void
        )
    }

    /// The name of a thread (NULL = the current thread). The thread group and context
    /// class loader references it returns are local references the caller's frame frees.
    pub fn thread_name(&self, thread: jthread) -> Result<String> {
        Ok(self.thread_info(thread)?.0)
    }

    /// A thread's name and its thread group (a local reference; None for a thread that has
    /// ended).
    pub fn thread_info(&self, thread: jthread) -> Result<(String, Option<jobject>)> {
        let mut info = ThreadInfo::default();
        call!(self, 9, (jthread, *mut ThreadInfo), thread, &mut info)?;
        let group = (!info.thread_group.is_null()).then_some(info.thread_group);
        Ok((self.take_string(info.name), group))
    }

    /// A thread group's name and its parent group (a local reference; None for the top
    /// group).
    pub fn thread_group_info(&self, group: jobject) -> Result<(String, Option<jobject>)> {
        let mut info = ThreadGroupInfo {
            parent: ptr::null_mut(),
            name: ptr::null_mut(),
            max_priority: 0,
            is_daemon: 0,
        };
        call!(self, 14, (jobject, *mut ThreadGroupInfo), group, &mut info)?;
        let parent = (!info.parent.is_null()).then_some(info.parent);
        Ok((self.take_string(info.name), parent))
    }

    /// A method's line number table: (bytecode index, line) pairs; empty for a native or
    /// abstract method, or a class compiled without line numbers.
    pub fn line_numbers(&self, method: jmethodID) -> Vec<(u32, u32)> {
        let mut count: jint = 0;
        let mut table: *mut LineNumberEntry = ptr::null_mut();
        let got = call!(
            self,
            70,
            (jmethodID, *mut jint, *mut *mut LineNumberEntry),
            method,
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

    /// A thread's name, priority and thread group's name (NULL = the current thread).
    pub fn thread_details(&self, thread: jthread) -> Result<(String, jint, String)> {
        let mut info = ThreadInfo::default();
        call!(self, 9, (jthread, *mut ThreadInfo), thread, &mut info)?;
        let name = self.take_string(info.name);
        let group = match info.thread_group {
            g if g.is_null() => String::new(),
            g => self
                .thread_group_info(g)
                .map(|(n, _)| n)
                .unwrap_or_default(),
        };
        Ok((name, info.priority, group))
    }

    /// How many frames the current thread's stack holds.
    pub fn frame_count(&self) -> Option<jint> {
        let mut count: jint = 0;
        call!(self, 16, (jthread, *mut jint), ptr::null_mut(), &mut count).ok()?;
        Some(count)
    }

    /// An object's size in bytes, as this JVM lays it out.
    pub fn object_size(&self, object: jobject) -> Option<jlong> {
        let mut size: jlong = 0;
        call!(self, 154, (jobject, *mut jlong), object, &mut size).ok()?;
        Some(size)
    }

    /// FollowReferences from the heap roots over every reachable object, at a safepoint:
    /// `visit` gets each reference and may return a tag for an untagged referee. It runs where
    /// no JNI or JVMTI function may be called; a panic in it aborts the walk.
    pub fn follow_references(
        &self,
        visit: &mut dyn FnMut(&HeapRef) -> Option<jlong>,
    ) -> Result<()> {
        let callbacks = HeapCallbacks {
            heap_reference_callback: Some(heap_reference),
            ..HeapCallbacks::default()
        };
        let mut walk = RefWalk {
            visit,
            aborted: false,
        };
        call!(
            self,
            115,
            (jint, jclass, jobject, *const HeapCallbacks, *const c_void),
            0,
            ptr::null_mut(),
            ptr::null_mut(),
            &callbacks,
            &mut walk as *mut RefWalk as *const c_void
        )?;
        if walk.aborted {
            return Err(JvmtiError(ERROR_INTERNAL));
        }
        Ok(())
    }

    /// IterateThroughHeap over every object in the heap, reachable or not, at a safepoint:
    /// `visit` gets each one's class tag, size, tag and array length (-1: none) and may return
    /// a tag for it. The same rules as [`Jvmti::follow_references`].
    pub fn iterate_through_heap(
        &self,
        visit: &mut dyn FnMut(jlong, jlong, jlong, jint) -> Option<jlong>,
    ) -> Result<()> {
        let callbacks = HeapCallbacks {
            heap_iteration_callback: Some(heap_iteration),
            ..HeapCallbacks::default()
        };
        let mut walk = ObjectWalk {
            visit,
            aborted: false,
        };
        call!(
            self,
            116,
            (jint, jclass, *const HeapCallbacks, *const c_void),
            0,
            ptr::null_mut(),
            &callbacks,
            &mut walk as *mut ObjectWalk as *const c_void
        )?;
        if walk.aborted {
            return Err(JvmtiError(ERROR_INTERNAL));
        }
        Ok(())
    }

    /// The current thread (a local reference).
    pub fn current_thread(&self) -> Option<jthread> {
        let mut thread: jthread = ptr::null_mut();
        call!(self, 18, (*mut jthread), &mut thread).ok()?;
        (!thread.is_null()).then_some(thread)
    }

    /// An object's identity hash code (System.identityHashCode).
    pub fn object_hash_code(&self, object: jobject) -> Option<u32> {
        let mut hash: jint = 0;
        call!(self, 58, (jobject, *mut jint), object, &mut hash).ok()?;
        Some(hash as u32)
    }

    /// The thread that owns an object's monitor, if one does (a local reference).
    pub fn monitor_owner(&self, object: jobject) -> Option<jthread> {
        let mut usage = MonitorUsage {
            owner: ptr::null_mut(),
            entry_count: 0,
            waiter_count: 0,
            waiters: ptr::null_mut(),
            notify_waiter_count: 0,
            notify_waiters: ptr::null_mut(),
        };
        call!(self, 59, (jobject, *mut MonitorUsage), object, &mut usage).ok()?;
        self.deallocate(usage.waiters);
        self.deallocate(usage.notify_waiters);
        (!usage.owner.is_null()).then_some(usage.owner)
    }

    pub fn method_declaring_class(&self, method: jmethodID) -> Option<jclass> {
        let mut class: jclass = ptr::null_mut();
        call!(self, 65, (jmethodID, *mut jclass), method, &mut class).ok()?;
        (!class.is_null()).then_some(class)
    }

    /// The current thread's frames from `start` on, innermost first, at most `frames.len()`:
    /// (method, bytecode index or -1). Returns how many were filled.
    pub fn stack_trace(&self, start: jint, frames: &mut [FrameInfo]) -> usize {
        let mut count: jint = 0;
        let filled = call!(
            self,
            104,
            (jthread, jint, jint, *mut FrameInfo, *mut jint),
            ptr::null_mut(),
            start,
            frames.len() as jint,
            frames.as_mut_ptr(),
            &mut count
        );
        match filled {
            Ok(()) => (count.max(0) as usize).min(frames.len()),
            Err(_) => 0,
        }
    }

    /// A thread's frames from `start` on, innermost first (NULL = the current thread; another
    /// thread's stack is read in a handshake). Returns how many were filled.
    pub fn stack_trace_of(&self, thread: jthread, start: jint, frames: &mut [FrameInfo]) -> usize {
        let mut count: jint = 0;
        let filled = call!(
            self,
            104,
            (jthread, jint, jint, *mut FrameInfo, *mut jint),
            thread,
            start,
            frames.len() as jint,
            frames.as_mut_ptr(),
            &mut count
        );
        match filled {
            Ok(()) => (count.max(0) as usize).min(frames.len()),
            Err(_) => 0,
        }
    }

    /// Every live platform thread, as local references.
    pub fn all_threads(&self) -> Result<Vec<jthread>> {
        let (mut n, mut p): (jint, *mut jthread) = (0, ptr::null_mut());
        call!(self, 4, (*mut jint, *mut *mut jthread), &mut n, &mut p)?;
        Ok(self.take_array(p, n))
    }

    pub fn suspend_thread(&self, thread: jthread) -> Result<()> {
        call!(self, 5, (jthread), thread)
    }

    pub fn resume_thread(&self, thread: jthread) -> Result<()> {
        call!(self, 6, (jthread), thread)
    }

    /// JVMTI_THREAD_STATE_* bits of a thread.
    pub fn thread_state(&self, thread: jthread) -> Result<jint> {
        let mut state: jint = 0;
        call!(self, 17, (jthread, *mut jint), thread, &mut state)?;
        Ok(state)
    }

    /// CPU time a thread has used, in nanoseconds (needs can_get_thread_cpu_time).
    pub fn thread_cpu_time(&self, thread: jthread) -> Result<jlong> {
        let mut nanos: jlong = 0;
        call!(self, 137, (jthread, *mut jlong), thread, &mut nanos)?;
        Ok(nanos)
    }

    /// The objects carrying any of `tags`, with their tags (local references).
    pub fn objects_with_tags(&self, tags: &[jlong]) -> Result<Vec<(jobject, jlong)>> {
        let mut count: jint = 0;
        let mut objects: *mut jobject = ptr::null_mut();
        let mut found: *mut jlong = ptr::null_mut();
        call!(
            self,
            114,
            (
                jint,
                *const jlong,
                *mut jint,
                *mut *mut jobject,
                *mut *mut jlong
            ),
            tags.len() as jint,
            tags.as_ptr(),
            &mut count,
            &mut objects,
            &mut found
        )?;
        let objects = self.take_array(objects, count);
        let found = self.take_array(found, count);
        Ok(objects.into_iter().zip(found).collect())
    }

    /// Asks the JVM to send the events of `event` that happened before it was enabled
    /// (CompiledMethodLoad, DynamicCodeGenerated).
    pub fn generate_events(&self, event: u32) -> Result<()> {
        call!(self, 123, (u32), event)
    }

    /// The objects whose monitors a thread holds (local references; handshake).
    pub fn owned_monitors(&self, thread: jthread) -> Result<Vec<jobject>> {
        let (mut n, mut p): (jint, *mut jobject) = (0, ptr::null_mut());
        call!(
            self,
            10,
            (jthread, *mut jint, *mut *mut jobject),
            thread,
            &mut n,
            &mut p
        )?;
        Ok(self.take_array(p, n))
    }

    /// The object whose monitor a thread waits to enter or waits on, if any.
    pub fn contended_monitor(&self, thread: jthread) -> Option<jobject> {
        let mut object: jobject = ptr::null_mut();
        call!(self, 11, (jthread, *mut jobject), thread, &mut object).ok()?;
        (!object.is_null()).then_some(object)
    }

    /// An object's monitor: owner, entry count, threads waiting to enter, threads waiting to
    /// be notified (local references).
    pub fn monitor_usage(&self, object: jobject) -> Result<Monitor> {
        let mut usage = MonitorUsage {
            owner: ptr::null_mut(),
            entry_count: 0,
            waiter_count: 0,
            waiters: ptr::null_mut(),
            notify_waiter_count: 0,
            notify_waiters: ptr::null_mut(),
        };
        call!(self, 59, (jobject, *mut MonitorUsage), object, &mut usage)?;
        Ok(Monitor {
            owner: (!usage.owner.is_null()).then_some(usage.owner),
            entry_count: usage.entry_count,
            waiters: self.take_array(usage.waiters, usage.waiter_count),
            notify_waiters: self.take_array(usage.notify_waiters, usage.notify_waiter_count),
        })
    }

    /// Whether a method is native.
    pub fn is_native(&self, method: jmethodID) -> bool {
        self.method_modifiers(method)
            .is_ok_and(|m| m & ACC_NATIVE != 0)
    }

    /// A class's modifiers (ACC_* bits).
    pub fn class_modifiers(&self, class: jclass) -> Result<jint> {
        let mut m: jint = 0;
        call!(self, 51, (jclass, *mut jint), class, &mut m)?;
        Ok(m)
    }

    /// A copy of the JNI function table the JVM hands out (JVMTI-allocated; never freed: the
    /// JVM may keep using what [`Jvmti::set_jni_functions`] installs from it).
    pub fn jni_functions(&self) -> Result<*mut jni_sys::JNINativeInterface_> {
        let mut table: *mut jni_sys::JNINativeInterface_ = ptr::null_mut();
        call!(
            self,
            121,
            (*mut *mut jni_sys::JNINativeInterface_),
            &mut table
        )?;
        if table.is_null() {
            return Err(JvmtiError(ERROR_INTERNAL));
        }
        Ok(table)
    }

    /// Installs a JNI function table for every thread, present and future.
    pub fn set_jni_functions(&self, table: *const jni_sys::JNINativeInterface_) -> Result<()> {
        call!(self, 120, (*const jni_sys::JNINativeInterface_), table)
    }

    /// Enables or disables an event for one thread only.
    pub fn set_thread_event(&self, event: u32, enable: bool, thread: jthread) -> Result<()> {
        let mode: u32 = if enable { 1 } else { 0 };
        call!(self, 2, (u32, u32, jthread), mode, event, thread)
    }

    /// Local variable `slot` of the frame at `depth`, through JVMTI function `function`
    /// (GetLocalObject 21, GetLocalInt 22, GetLocalLong 23, GetLocalFloat 24, GetLocalDouble
    /// 25, whose value type is `T`): None where the frame has no such variable or cannot be
    /// read (a native frame).
    fn local<T: Copy>(
        &self,
        function: usize,
        thread: jthread,
        depth: jint,
        slot: jint,
        zero: T,
    ) -> Option<T> {
        let mut v = zero;
        call!(
            self,
            function,
            (jthread, jint, jint, *mut T),
            thread,
            depth,
            slot,
            &mut v
        )
        .ok()?;
        Some(v)
    }

    pub fn local_object(&self, thread: jthread, depth: jint, slot: jint) -> Option<jobject> {
        self.local(21, thread, depth, slot, ptr::null_mut())
    }

    pub fn local_int(&self, thread: jthread, depth: jint, slot: jint) -> Option<jint> {
        self.local(22, thread, depth, slot, 0)
    }

    pub fn local_long(&self, thread: jthread, depth: jint, slot: jint) -> Option<jlong> {
        self.local(23, thread, depth, slot, 0)
    }

    pub fn local_float(&self, thread: jthread, depth: jint, slot: jint) -> Option<f32> {
        self.local(24, thread, depth, slot, 0.0)
    }

    pub fn local_double(&self, thread: jthread, depth: jint, slot: jint) -> Option<f64> {
        self.local(25, thread, depth, slot, 0.0)
    }

    /// `this` of the frame at `depth`, or None for static and native frames.
    pub fn local_instance(&self, thread: jthread, depth: jint) -> Option<jobject> {
        let mut object: jobject = ptr::null_mut();
        call!(
            self,
            155,
            (jthread, jint, *mut jobject),
            thread,
            depth,
            &mut object
        )
        .ok()?;
        (!object.is_null()).then_some(object)
    }
}

/// jvmtiHeapReferenceCallback.
type HeapReferenceCallback = unsafe extern "C" fn(
    jint,
    *const c_void,
    jlong,
    jlong,
    jlong,
    *mut jlong,
    *mut jlong,
    jint,
    *mut c_void,
) -> jint;

/// What the heap callbacks get as user data: the caller's closure, and whether it panicked
/// (the walk is then aborted and answers an error).
struct RefWalk<'a> {
    visit: &'a mut dyn FnMut(&HeapRef) -> Option<jlong>,
    aborted: bool,
}

struct ObjectWalk<'a> {
    visit: &'a mut dyn FnMut(jlong, jlong, jlong, jint) -> Option<jlong>,
    aborted: bool,
}

/// One reference FollowReferences reports: its kind (jvmtiHeapReferenceKind: 1..10 from an
/// object or class, 21..27 from a root), the referee's class tag, size, tag and array length
/// (-1: not an array), the referrer's tag (None for a root), and for a stack local or JNI
/// local root the tag of its thread's object (0 when untagged or another kind).
pub struct HeapRef {
    pub kind: jint,
    pub thread_tag: jlong,
    pub class_tag: jlong,
    pub size: jlong,
    pub tag: jlong,
    pub length: jint,
    pub referrer: Option<jlong>,
}

unsafe extern "C" fn heap_iteration(
    class_tag: jlong,
    size: jlong,
    tag: *mut jlong,
    length: jint,
    data: *mut c_void,
) -> jint {
    if tag.is_null() || data.is_null() {
        return VISIT_OBJECTS;
    }
    // SAFETY: `data` is the ObjectWalk that iterate_through_heap passed, alive for the
    // iteration and touched by no one else meanwhile; `tag` is JVMTI's for this callback.
    let (walk, current) = unsafe { (&mut *(data as *mut ObjectWalk), *tag) };
    let visited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (walk.visit)(class_tag, size, current, length)
    }));
    // SAFETY: as above.
    unsafe { answer(visited, tag, &mut walk.aborted) }
}

/// A heap callback's answer: the tag `visit` gave, written, or an aborted walk after a panic.
///
/// # Safety
/// `tag` is the tag pointer JVMTI passed to the callback.
unsafe fn answer(
    visited: std::thread::Result<Option<jlong>>,
    tag: *mut jlong,
    aborted: &mut bool,
) -> jint {
    match visited {
        Ok(Some(new)) => {
            // SAFETY: the caller's.
            unsafe { *tag = new };
            VISIT_OBJECTS
        }
        Ok(None) => VISIT_OBJECTS,
        Err(_) => {
            *aborted = true;
            VISIT_ABORT
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn heap_reference(
    kind: jint,
    info: *const c_void,
    class_tag: jlong,
    _referrer_class_tag: jlong,
    size: jlong,
    tag: *mut jlong,
    referrer_tag: *mut jlong,
    length: jint,
    data: *mut c_void,
) -> jint {
    if tag.is_null() || data.is_null() {
        return VISIT_OBJECTS;
    }
    // SAFETY: `data` is the RefWalk that follow_references passed, alive for the walk and
    // touched by no one else meanwhile; the tag pointers are JVMTI's for this callback (equal
    // for a self-reference, hence read before the one write).
    let (walk, current, referrer) = unsafe {
        let walk = &mut *(data as *mut RefWalk);
        let referrer = (!referrer_tag.is_null()).then(|| *referrer_tag);
        (walk, *tag, referrer)
    };
    // JVMTI_HEAP_REFERENCE_STACK_LOCAL (24) and JNI_LOCAL (25) come with a
    // jvmtiHeapReferenceInfoStackLocal / JniLocal, whose first field is the thread's tag.
    let thread_tag = if (kind == 24 || kind == 25) && !info.is_null() {
        // SAFETY: for these kinds JVMTI passes that struct, alive for this callback; its
        // first member is a jlong.
        unsafe { *(info as *const jlong) }
    } else {
        0
    };
    let r = HeapRef {
        kind,
        thread_tag,
        class_tag,
        size,
        tag: current,
        length,
        referrer,
    };
    let visited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (walk.visit)(&r)));
    // SAFETY: as above.
    unsafe { answer(visited, tag, &mut walk.aborted) }
}

/// jvmtiHeapIterationCallback.
type HeapIterationCallback =
    unsafe extern "C" fn(jlong, jlong, *mut jlong, jint, *mut c_void) -> jint;

/// jvmtiHeapCallbacks: the iteration and reference callbacks, then 14 slots jlive leaves empty.
#[repr(C)]
#[derive(Default)]
struct HeapCallbacks {
    heap_iteration_callback: Option<HeapIterationCallback>,
    heap_reference_callback: Option<HeapReferenceCallback>,
    others: [Option<unsafe extern "C" fn()>; 14],
}

/// JVMTI_VISIT_OBJECTS and JVMTI_VISIT_ABORT.
pub const VISIT_OBJECTS: jint = 0x100;
pub const VISIT_ABORT: jint = 0x8000;

/// jvmtiFrameInfo.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FrameInfo {
    pub method: jmethodID,
    pub location: jlong,
}

impl Default for FrameInfo {
    fn default() -> Self {
        FrameInfo {
            method: ptr::null_mut(),
            location: -1,
        }
    }
}

/// An object's monitor as [`Jvmti::monitor_usage`] reads it.
#[derive(Debug)]
pub struct Monitor {
    pub owner: Option<jthread>,
    pub entry_count: jint,
    pub waiters: Vec<jthread>,
    pub notify_waiters: Vec<jthread>,
}

/// jvmtiMonitorUsage.
#[repr(C)]
struct MonitorUsage {
    owner: jthread,
    entry_count: jint,
    waiter_count: jint,
    waiters: *mut jthread,
    notify_waiter_count: jint,
    notify_waiters: *mut jthread,
}

/// jvmtiThreadInfo.
#[repr(C)]
struct ThreadInfo {
    name: *mut c_char,
    priority: jint,
    is_daemon: u8,
    thread_group: jobject,
    context_class_loader: jobject,
}

/// jvmtiExtensionEventInfo.
#[repr(C)]
#[derive(Clone, Copy)]
struct ExtensionEventInfo {
    extension_event_index: jint,
    id: *mut c_char,
    short_description: *mut c_char,
    param_count: jint,
    params: *mut ParamInfo,
}

/// jvmtiParamInfo.
#[repr(C)]
#[derive(Clone, Copy)]
struct ParamInfo {
    name: *mut c_char,
    kind: u32,
    base_type: u32,
    null_ok: u8,
}

/// jvmtiThreadGroupInfo.
#[repr(C)]
struct ThreadGroupInfo {
    parent: jobject,
    name: *mut c_char,
    max_priority: jint,
    is_daemon: u8,
}

/// jvmtiLineNumberEntry.
#[repr(C)]
#[derive(Clone, Copy)]
struct LineNumberEntry {
    start_location: jlong,
    line_number: jint,
}

impl Default for ThreadInfo {
    fn default() -> Self {
        ThreadInfo {
            name: ptr::null_mut(),
            priority: 0,
            is_daemon: 0,
            thread_group: ptr::null_mut(),
            context_class_loader: ptr::null_mut(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_bits_land_in_the_right_words() {
        let mut c = Capabilities::default();
        c.set(cap::TAG_OBJECTS);
        c.set(cap::GENERATE_OBJECT_FREE_EVENTS);
        c.set(cap::GENERATE_SAMPLED_OBJECT_ALLOC_EVENTS);
        assert_eq!(c.0, [1, 1 | (1 << 11), 0, 0]);
        assert!(c.has(43) && !c.has(42));
    }

    #[test]
    fn callbacks_struct_reaches_event_88() {
        // 35 slots for events 50..84, then 85 to 88.
        assert_eq!(
            std::mem::size_of::<EventCallbacks>(),
            39 * std::mem::size_of::<usize>()
        );
    }
}
