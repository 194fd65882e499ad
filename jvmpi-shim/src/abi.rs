//! jvmpi.h as JDK 1.2 to 5 shipped it, for LP64 (C agents get it as `include/jvmpi.h`): the numbers
//! and layouts a legacy agent was compiled against.
//!
//! ```text
//! JVMPI_Event (LP64)
//!  0      4        8              16                                      16 + 72
//!  +------+--------+--------------+---------------------------------------+
//!  | type | (pad)  | JNIEnv *env  | union u (largest member: class_load)  |
//!  +------+--------+--------------+---------------------------------------+
//!
//! JVMPI_Interface: jint version, (pad), then 29 function pointers:
//!  NotifyEvent (set by the agent), EnableEvent, DisableEvent, RequestEvent, GetCallTrace,
//!  ProfilerExit, RawMonitorCreate/Enter/Exit/Wait/NotifyAll/Destroy,
//!  GetCurrentThreadCpuTime, SuspendThread, ResumeThread, GetThreadStatus, ThreadHasRun,
//!  CreateSystemThread, Set/GetThreadLocalStorage, DisableGC, EnableGC, RunGC,
//!  GetThreadObject, GetMethodClass, jobjectID2jobject, jobject2jobjectID (1_1),
//!  SuspendThreadList, ResumeThreadList (1_2)
//! ```

#![allow(non_camel_case_types)]

use jni_sys::{jboolean, jint, jlong, jmethodID, jobject, JNIEnv};
use std::ffi::{c_char, c_uint, c_void};

pub const JVMPI_VERSION_1: jint = 0x1000_0001;
pub const JVMPI_VERSION_1_1: jint = 0x1000_0002;
pub const JVMPI_VERSION_1_2: jint = 0x1000_0003;

pub const SUCCESS: jint = 0;
pub const NOT_AVAILABLE: jint = 1;
pub const FAIL: jint = -1;

pub const REQUESTED_EVENT: jint = 0x1000_0000;

pub const THREAD_RUNNABLE: jint = 1;
pub const THREAD_MONITOR_WAIT: jint = 2;
pub const THREAD_CONDVAR_WAIT: jint = 3;
pub const THREAD_SUSPENDED: jint = 0x8000;
pub const THREAD_INTERRUPTED: jint = 0x4000;

pub const NORMAL_OBJECT: jint = 0;
pub const CLASS: jint = 2;
pub const BOOLEAN: jint = 4;
pub const CHAR: jint = 5;
pub const FLOAT: jint = 6;
pub const DOUBLE: jint = 7;
pub const BYTE: jint = 8;
pub const SHORT: jint = 9;
pub const INT: jint = 10;
pub const LONG: jint = 11;

/// Line numbers in call frames where there is no line: unknown, compiled, native.
pub const LINE_UNKNOWN: jint = -1;
pub const LINE_NATIVE: jint = -3;

/// Event types.
pub mod event {
    use jni_sys::jint;
    pub const METHOD_ENTRY: jint = 1;
    pub const METHOD_ENTRY2: jint = 2;
    pub const METHOD_EXIT: jint = 3;
    pub const OBJECT_ALLOC: jint = 4;
    pub const OBJECT_FREE: jint = 5;
    pub const OBJECT_MOVE: jint = 6;
    pub const COMPILED_METHOD_LOAD: jint = 7;
    pub const COMPILED_METHOD_UNLOAD: jint = 8;
    pub const INSTRUCTION_START: jint = 9;
    pub const THREAD_START: jint = 33;
    pub const THREAD_END: jint = 34;
    pub const CLASS_LOAD_HOOK: jint = 35;
    pub const HEAP_DUMP: jint = 37;
    pub const JNI_GLOBALREF_ALLOC: jint = 38;
    pub const JNI_GLOBALREF_FREE: jint = 39;
    pub const JNI_WEAK_GLOBALREF_ALLOC: jint = 40;
    pub const JNI_WEAK_GLOBALREF_FREE: jint = 41;
    pub const CLASS_LOAD: jint = 42;
    pub const CLASS_UNLOAD: jint = 43;
    pub const DATA_DUMP_REQUEST: jint = 44;
    pub const DATA_RESET_REQUEST: jint = 45;
    pub const JVM_INIT_DONE: jint = 46;
    pub const JVM_SHUT_DOWN: jint = 47;
    pub const ARENA_NEW: jint = 48;
    pub const ARENA_DELETE: jint = 49;
    pub const OBJECT_DUMP: jint = 50;
    pub const RAW_MONITOR_CONTENDED_ENTER: jint = 51;
    pub const RAW_MONITOR_CONTENDED_ENTERED: jint = 52;
    pub const RAW_MONITOR_CONTENDED_EXIT: jint = 53;
    pub const MONITOR_CONTENDED_ENTER: jint = 54;
    pub const MONITOR_CONTENDED_ENTERED: jint = 55;
    pub const MONITOR_CONTENDED_EXIT: jint = 56;
    pub const MONITOR_WAIT: jint = 57;
    pub const MONITOR_WAITED: jint = 58;
    pub const MONITOR_DUMP: jint = 59;
    pub const GC_START: jint = 60;
    pub const GC_FINISH: jint = 61;
    pub const MAX: jint = 61;
}

/// Heap, object and monitor dump record types.
pub mod dump {
    pub const ROOT_UNKNOWN: u8 = 0xff;
    pub const ROOT_JNI_GLOBAL: u8 = 1;
    pub const ROOT_JNI_LOCAL: u8 = 2;
    pub const ROOT_JAVA_FRAME: u8 = 3;
    pub const ROOT_NATIVE_STACK: u8 = 4;
    pub const ROOT_STICKY_CLASS: u8 = 5;
    pub const ROOT_THREAD_BLOCK: u8 = 6;
    pub const ROOT_MONITOR_USED: u8 = 7;
    pub const ROOT_THREAD_OBJ: u8 = 8;
    pub const CLASS_DUMP: u8 = 0x20;
    pub const INSTANCE_DUMP: u8 = 0x21;
    pub const OBJ_ARRAY_DUMP: u8 = 0x22;
    pub const PRIM_ARRAY_DUMP: u8 = 0x23;
    pub const MONITOR_JAVA: u8 = 1;
    pub const MONITOR_RAW: u8 = 2;
}

/// jobjectID: an opaque pointer. The shim's are JVMTI tags, never addresses.
pub type JobjectId = *mut c_void;
/// JVMPI_RawMonitor.
pub type RawMonitorId = *mut c_void;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct CallFrame {
    pub lineno: jint,
    pub method_id: jmethodID,
}

#[repr(C)]
pub struct CallTrace {
    pub env_id: *mut JNIEnv,
    pub num_frames: jint,
    pub frames: *mut CallFrame,
}

#[repr(C)]
pub struct Method {
    pub method_name: *const c_char,
    pub method_signature: *const c_char,
    pub start_lineno: jint,
    pub end_lineno: jint,
    pub method_id: jmethodID,
}

#[repr(C)]
pub struct Field {
    pub field_name: *const c_char,
    pub field_signature: *const c_char,
}

#[repr(C)]
pub struct Lineno {
    pub offset: jint,
    pub lineno: jint,
}

#[repr(C)]
pub struct HeapDumpArg {
    pub heap_dump_level: jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClassLoad {
    pub class_name: *const c_char,
    pub source_name: *const c_char,
    pub num_interfaces: jint,
    pub num_methods: jint,
    pub methods: *const Method,
    pub num_static_fields: jint,
    pub statics: *const Field,
    pub num_instance_fields: jint,
    pub instances: *const Field,
    pub class_id: JobjectId,
}

pub type MallocFn = unsafe extern "C" fn(c_uint) -> *mut c_void;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClassLoadHook {
    pub class_data: *const u8,
    pub class_data_len: jint,
    pub new_class_data: *mut u8,
    pub new_class_data_len: jint,
    pub malloc_f: Option<MallocFn>,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjAlloc {
    pub arena_id: jint,
    pub class_id: JobjectId,
    pub is_array: jint,
    pub size: jint,
    pub obj_id: JobjectId,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct NewArena {
    pub arena_id: jint,
    pub arena_name: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ThreadStart {
    pub thread_name: *const c_char,
    pub group_name: *const c_char,
    pub parent_name: *const c_char,
    pub thread_id: JobjectId,
    pub thread_env_id: *mut JNIEnv,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct HeapDump {
    pub dump_level: jint,
    pub begin: *const c_char,
    pub end: *const c_char,
    pub num_traces: jint,
    pub traces: *const CallTrace,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct MonitorDump {
    pub begin: *const c_char,
    pub end: *const c_char,
    pub num_traces: jint,
    pub traces: *const CallTrace,
    pub threads_status: *const jint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct MethodEntry2 {
    pub method_id: jmethodID,
    pub obj_id: JobjectId,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct CompiledMethodLoad {
    pub method_id: jmethodID,
    pub code_addr: *const c_void,
    pub code_size: jint,
    pub lineno_table_size: jint,
    pub lineno_table: *const Lineno,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct MonitorWait {
    pub object: JobjectId,
    pub timeout: jlong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct GcInfo {
    pub used_objects: jlong,
    pub used_object_space: jlong,
    pub total_object_space: jlong,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawMonitorEvent {
    pub name: *const c_char,
    pub id: RawMonitorId,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ObjectDump {
    pub data_len: jint,
    pub data: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct GlobalRefAlloc {
    pub obj_id: JobjectId,
    pub ref_id: jobject,
}

/// The union of JVMPI_Event; members with one pointer-sized field share `id`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union EventData {
    pub class_load: ClassLoad,
    pub class_load_hook: ClassLoadHook,
    pub obj_alloc: ObjAlloc,
    pub new_arena: NewArena,
    pub arena_id: jint,
    pub thread_start: ThreadStart,
    pub heap_dump: HeapDump,
    pub monitor_dump: MonitorDump,
    pub method_entry2: MethodEntry2,
    pub compiled_method_load: CompiledMethodLoad,
    pub monitor_wait: MonitorWait,
    pub gc_info: GcInfo,
    pub raw_monitor: RawMonitorEvent,
    pub object_dump: ObjectDump,
    pub globalref_alloc: GlobalRefAlloc,
    /// class_unload.class_id, obj_free.obj_id, monitor.object, method.method_id,
    /// compiled_method_unload.method_id, jni_globalref_free.ref_id.
    pub id: *mut c_void,
}

#[repr(C)]
pub struct Event {
    pub event_type: jint,
    pub env_id: *mut JNIEnv,
    pub u: EventData,
}

pub type NotifyFn = unsafe extern "C" fn(*mut Event);

/// JVMPI_Interface. The agent writes `notify_event`; the rest is ours.
#[repr(C)]
pub struct Interface {
    pub version: jint,
    pub notify_event: Option<NotifyFn>,
    pub enable_event: unsafe extern "C" fn(jint, *mut c_void) -> jint,
    pub disable_event: unsafe extern "C" fn(jint, *mut c_void) -> jint,
    pub request_event: unsafe extern "C" fn(jint, *mut c_void) -> jint,
    pub get_call_trace: unsafe extern "C" fn(*mut CallTrace, jint),
    pub profiler_exit: unsafe extern "C" fn(jint),
    pub raw_monitor_create: unsafe extern "C" fn(*const c_char) -> RawMonitorId,
    pub raw_monitor_enter: unsafe extern "C" fn(RawMonitorId),
    pub raw_monitor_exit: unsafe extern "C" fn(RawMonitorId),
    pub raw_monitor_wait: unsafe extern "C" fn(RawMonitorId, jlong),
    pub raw_monitor_notify_all: unsafe extern "C" fn(RawMonitorId),
    pub raw_monitor_destroy: unsafe extern "C" fn(RawMonitorId),
    pub get_current_thread_cpu_time: unsafe extern "C" fn() -> jlong,
    pub suspend_thread: unsafe extern "C" fn(*mut JNIEnv),
    pub resume_thread: unsafe extern "C" fn(*mut JNIEnv),
    pub get_thread_status: unsafe extern "C" fn(*mut JNIEnv) -> jint,
    pub thread_has_run: unsafe extern "C" fn(*mut JNIEnv) -> jboolean,
    pub create_system_thread: unsafe extern "C" fn(
        *const c_char,
        jint,
        Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> jint,
    pub set_thread_local_storage: unsafe extern "C" fn(*mut JNIEnv, *mut c_void),
    pub get_thread_local_storage: unsafe extern "C" fn(*mut JNIEnv) -> *mut c_void,
    pub disable_gc: unsafe extern "C" fn(),
    pub enable_gc: unsafe extern "C" fn(),
    pub run_gc: unsafe extern "C" fn(),
    pub get_thread_object: unsafe extern "C" fn(*mut JNIEnv) -> JobjectId,
    pub get_method_class: unsafe extern "C" fn(jmethodID) -> JobjectId,
    pub jobject_id_to_jobject: unsafe extern "C" fn(JobjectId) -> jobject,
    pub jobject_to_jobject_id: unsafe extern "C" fn(jobject) -> JobjectId,
    pub suspend_thread_list: unsafe extern "C" fn(jint, *mut *mut JNIEnv, *mut jint),
    pub resume_thread_list: unsafe extern "C" fn(jint, *mut *mut JNIEnv, *mut jint),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn the_event_union_starts_at_16_and_class_load_is_its_largest_member() {
        assert_eq!(offset_of!(Event, u), 16);
        assert_eq!(size_of::<ClassLoad>(), 72);
        assert_eq!(size_of::<EventData>(), 72);
        assert_eq!(offset_of!(ClassLoad, class_id), 64);
        assert_eq!(offset_of!(ObjAlloc, obj_id), 24);
        assert_eq!(offset_of!(ThreadStart, thread_env_id), 32);
        assert_eq!(offset_of!(ClassLoadHook, malloc_f), 32);
        assert_eq!(offset_of!(MonitorDump, threads_status), 32);
    }

    #[test]
    fn the_interface_holds_version_and_29_functions() {
        assert_eq!(size_of::<Interface>(), 8 + 29 * 8);
        assert_eq!(offset_of!(Interface, notify_event), 8);
        assert_eq!(offset_of!(Interface, jobject_id_to_jobject), 8 + 25 * 8);
        assert_eq!(offset_of!(Interface, resume_thread_list), 8 + 28 * 8);
    }

    #[test]
    fn call_frames_and_methods_are_laid_out_as_in_jvmpi_h() {
        assert_eq!(size_of::<CallFrame>(), 16);
        assert_eq!(size_of::<CallTrace>(), 24);
        assert_eq!(size_of::<Method>(), 32);
        assert_eq!(offset_of!(Method, method_id), 24);
    }
}
