//! The agent's raw edges. The JVMTI, JNI and OS layer is the `jlive-jvm` crate (jvm/), which
//! knows no tracer; what stays here is tracer-specific: the class-file hook and the ABI of
//! user trace libraries. Every `unsafe` block carries a `// SAFETY:` line.

pub use jlive_jvm::{jni, jvmti, os};

pub mod hooks;
pub mod plugin;
