//! The only modules that talk to the JVM through raw pointers. Everything above them is safe
//! Rust; every `unsafe` block here carries a `// SAFETY:` line.

pub mod hooks;
pub mod jni;
pub mod jvmti;
pub mod os;
pub mod plugin;
