//! The only code of jlive that talks to the JVM and the OS through raw pointers, with no
//! tracer inside: libjlive.so's agent and the JVMPI shim both stand on it. Everything above
//! it is safe Rust; every `unsafe` block here carries a `// SAFETY:` line.
//!
//! - `jvmti`: the JVMTI function table, called by slot number, results as owned Rust values.
//! - `jni`: a JNIEnv borrowed for one callback (`Jni`), and the JavaVM (`Vm`).
//! - `os`: the few system calls jlive makes (hostname, poll, peer credentials, membarrier...).

pub mod jni;
pub mod jvmti;
pub mod os;
