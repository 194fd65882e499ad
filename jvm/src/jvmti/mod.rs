//! The JVMTI function table, reached through jvmti-sys's types but called by slot number.
//!
//! jvmti-sys describes JVMTI 1.2: its table stops at function 155 and its error and event
//! enums know nothing newer. Receiving an error code a Rust enum does not list would be
//! undefined behaviour, so every call here goes through [`Jvmti::slot`] with a signature whose
//! error is a plain `u32`, and newer functions (156 SetHeapSamplingInterval) are reachable.
//! Each wrapper turns JVMTI-allocated memory into owned Rust values and deallocates it.
//!
//! References go in typed ([`crate::refs`]): JVMTI checks their kind (a class, a thread) and
//! answers an error for null or deleted ones, but a dangling handle would still be read.
//! References JVMTI makes come out as [`Local`]s of the caller's frame, which is why the
//! functions that make them take the frame's [`Jni`].
//!
//! - `mod.rs`: the environment, capabilities, events.
//! - `classes.rs`: classes, methods, fields; retransformation.
//! - `threads.rs`: threads, stacks, locals, monitors.
//! - `heap.rs`: tags, object sizes, heap walks.

use crate::jni::Jni;
use crate::refs::{Local, MethodId, Ref};
use jni_sys::{jclass, jint, jlong, jmethodID, jobject, JNIEnv};
pub use jvmti_sys::{jthread, jvmtiAddrLocationMap, jvmtiEnv, jvmtiEventCallbacks};
use std::ffi::{c_char, c_uchar, c_void, CStr};
use std::ptr::{self, NonNull};

pub const JVMTI_VERSION_1_2: jint = 0x3001_0200;
/// JVMTI of JDK 11, whose function table (156 entries) is the one jlive calls into.
pub const JVMTI_VERSION_11: jint = 0x300B_0000;

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

pub(crate) fn check(code: u32) -> Result<()> {
    if code == ERROR_NONE {
        Ok(())
    } else {
        Err(JvmtiError(code))
    }
}

/// A JVMTI environment. JVMTI functions may be called from any thread attached to the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jvmti(NonNull<jvmtiEnv>);

// SAFETY: a jvmtiEnv is valid on every thread of the VM until disposed of (unsafe, by whoever
// knows no copy is used after).
unsafe impl Send for Jvmti {}
// SAFETY: as above; JVMTI functions are thread-safe.
unsafe impl Sync for Jvmti {}

/// Calls JVMTI function number `$n` (as numbered in jvmti.h) with the given argument types.
macro_rules! call {
    ($env:expr, $n:expr, ($($t:ty),*), $($arg:expr),*) => {{
        match $env.slot($n) {
            None => Err($crate::jvmti::JvmtiError($crate::jvmti::ERROR_NOT_AVAILABLE)),
            Some(f) => {
                let f: unsafe extern "C" fn(*mut $crate::jvmti::jvmtiEnv $(, $t)*) -> u32 =
                    // SAFETY: slot $n of a jvmtiInterface_1 holds a function of exactly this
                    // signature (jvmti.h).
                    unsafe { std::mem::transmute(f) };
                // SAFETY: the environment is live (Jvmti's promise); every argument is valid
                // for the call: typed references are live, pointers point to owned memory.
                $crate::jvmti::check(unsafe { f($env.raw() $(, $arg)*) })
            }
        }
    }};
}

// After the macro, which the submodules use.
mod classes;
mod heap;
mod threads;

pub use heap::{HeapRef, ObjectVisit, RefVisit, VISIT_ABORT, VISIT_OBJECTS};
pub use threads::{FrameInfo, Monitor};

impl Jvmti {
    /// Types a JVMTI environment the JVM handed over; None for null.
    ///
    /// # Safety
    /// `env` is a jvmtiEnv of this process's JVM, of JDK 11 or later (the table jlive calls
    /// into), that is not disposed of while this value or a copy of it is used.
    pub unsafe fn from_raw(env: *mut jvmtiEnv) -> Option<Jvmti> {
        NonNull::new(env).map(Jvmti)
    }

    /// The raw environment (for comparison and for a shim that hands it on; never
    /// dereferenced by its holder).
    pub fn raw(&self) -> *mut jvmtiEnv {
        self.0.as_ptr()
    }

    /// GetVersionNumber: the JVMTI version of this environment.
    pub(crate) fn version(&self) -> jint {
        let mut v: jint = 0;
        match call!(self, 88, (*mut jint), &mut v) {
            Ok(()) => v,
            Err(_) => 0,
        }
    }

    /// The answer of JVMTI function number `function` of the form `(env, handle, T* out)`
    /// about `of` (a class, thread or object).
    fn query<T: Copy>(&self, function: usize, of: &impl Ref, zero: T) -> Result<T> {
        let mut v = zero;
        call!(self, function, (jobject, *mut T), of.as_raw(), &mut v)?;
        Ok(v)
    }

    /// The same for a function of the form `(env, jmethodID, T* out)`.
    fn query_method<T: Copy>(&self, function: usize, of: MethodId, zero: T) -> Result<T> {
        let mut v = zero;
        call!(self, function, (jmethodID, *mut T), of.as_raw(), &mut v)?;
        Ok(v)
    }

    /// Function number `n` of the table, if the VM fills it.
    fn slot(&self, n: usize) -> Option<*const c_void> {
        // SAFETY: the environment's first word points to its function table, an array of
        // pointers; jvmti.h numbers functions from 1; the table of a JDK 11+ environment
        // (`from_raw`'s contract, which `Vm::jvmti` checks with GetVersionNumber, entry 88 of
        // every table) holds 156 entries.
        let f = unsafe {
            let table = *self.raw() as *const *const c_void;
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

    /// Takes a JVMTI-allocated array of references JVMTI just made in `jni`'s frame.
    fn take_locals<'l>(&self, jni: Jni<'l>, p: *mut jobject, count: jint) -> Vec<Local<'l>> {
        self.take_array(p, count)
            .into_iter()
            .filter_map(|raw| jni.adopt(raw))
            .collect()
    }

    pub fn potential_capabilities(&self) -> Result<Capabilities> {
        let mut caps = Capabilities::default();
        call!(self, 140, (*mut Capabilities), &mut caps)?;
        Ok(caps)
    }

    pub fn add_capabilities(&self, caps: &Capabilities) -> Result<()> {
        call!(self, 142, (*const Capabilities), caps)
    }

    /// Installs the event callbacks.
    ///
    /// # Safety
    /// Each callback can be called as JVMTI calls that event's callback: from any thread, with
    /// the arguments jvmti.h lists for it.
    pub unsafe fn set_event_callbacks(&self, callbacks: &EventCallbacks) -> Result<()> {
        let size = std::mem::size_of::<EventCallbacks>() as jint;
        call!(self, 122, (*const EventCallbacks, jint), callbacks, size)
    }

    /// Enables or disables an event for every thread.
    pub fn set_event(&self, event: u32, enable: bool) -> Result<()> {
        let mode: u32 = if enable { 1 } else { 0 };
        call!(self, 2, (u32, u32, jthread), mode, event, ptr::null_mut())
    }

    /// Enables or disables an event for one thread only.
    pub fn set_thread_event(&self, event: u32, enable: bool, thread: &impl Ref) -> Result<()> {
        let mode: u32 = if enable { 1 } else { 0 };
        call!(self, 2, (u32, u32, jthread), mode, event, thread.as_raw())
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
    ///
    /// # Safety
    /// `index` is an extension event whose callback takes a `VirtualThreadFn`'s arguments
    /// (the virtual thread mount and unmount events), and the callback can be called from any
    /// thread with them.
    pub unsafe fn set_extension_event(
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
        if bytes.is_empty() {
            return Err(JvmtiError(ERROR_NOT_AVAILABLE));
        }
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

    /// DisposeEnvironment: gives back the capabilities and the settings of an environment
    /// that will not be used (an agent that could not start, a walk's own environment).
    ///
    /// # Safety
    /// No copy of this environment is used after this call.
    pub unsafe fn dispose(self) {
        let _ = call!(self, 127, (),);
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
    ///
    /// # Safety
    /// `table` stays valid for the life of the VM and each of its entries implements its JNI
    /// function's contract.
    pub unsafe fn set_jni_functions(
        &self,
        table: *const jni_sys::JNINativeInterface_,
    ) -> Result<()> {
        call!(self, 120, (*const jni_sys::JNINativeInterface_), table)
    }

    /// Asks the JVM to send the events of `event` that happened before it was enabled
    /// (CompiledMethodLoad, DynamicCodeGenerated).
    pub fn generate_events(&self, event: u32) -> Result<()> {
        call!(self, 123, (u32), event)
    }
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
