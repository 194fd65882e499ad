//! The only code of jlive that talks to the JVM and the OS through raw pointers, with no
//! tracer inside: libjlive.so's agent and the JVMPI shim both stand on it. What it exports
//! is sound to use from safe Rust: a raw pointer becomes a typed value only through an
//! `unsafe fn from_raw` whose `# Safety` says what the JVM promised, and every `unsafe` block
//! carries a `// SAFETY:` line (the lints below keep it so).
//!
//! - `refs`: typed references (`Local<'l>`, `Class<'l>`, `Global`...) and IDs (`MethodId`).
//! - `jni`: a JNIEnv for one frame (`Jni<'l>`), local frames, checked calls, the JavaVM.
//! - `jvmti`: the JVMTI function table, called by slot number, results as owned Rust values.
//! - `os`: the few system calls jlive makes (hostname, poll, peer credentials, membarrier...).

pub mod jni;
pub mod jvmti;
pub mod os;
pub mod refs;
