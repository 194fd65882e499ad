//! jvmpi-shim: JVMPI agents written for JDK 1.2 to 5 run unmodified on JDK 17 and 25.
//!
//! `-agentpath:libjlive.so=jvmpi=/path/libagent.so:AGENT,OPTIONS` makes libjlive.so call
//! [`host`]: the shim takes a JVMTI environment of its own, opens the legacy library and calls
//! its `JVM_OnLoad` with a wrapped JavaVM whose GetEnv answers JVMPI_VERSION_1, 1_1 and 1_2.
//!
//! Where a JVMPI call or event is served:
//! - `abi.rs`: jvmpi.h's numbers and layouts (LP64), checked by tests;
//! - `ffi/`: the wrapped JavaVM, the JVMPI functions and the JVMTI callbacks (the raw edge);
//! - `shim/`: the semantics: IDs, threads, event enabling, every event built;
//! - `monitor.rs`: JVMPI raw monitors; `dump.rs`: heap, object and monitor dumps.

pub mod abi;
mod dump;
mod ffi;
mod monitor;
pub mod shim;

use jlive_jvm::jni::Vm;

/// Splits `PATH[:OPTIONS]`: the path ends at the first `.so:` (so a directory may hold a
/// colon), or for a bare name at the first `:`; the agent's options are the rest, commas and
/// colons included.
pub fn split_spec(spec: &str) -> (&str, &str) {
    let end = match spec.find(".so:") {
        Some(i) => Some(i + 3),
        None => spec.find(':'),
    };
    match end {
        Some(i) => (&spec[..i], &spec[i + 1..]),
        None => (spec, ""),
    }
}

/// Functions the host runs at VM init (after JVM_INIT_DONE) and VM death (before the last GC
/// events and JVM_SHUT_DOWN): libjlive.so's control socket.
static ON_VM: std::sync::OnceLock<VmHooks> = std::sync::OnceLock::new();

/// (at VM init, at VM death).
type VmHooks = (fn(), fn());

pub fn on_vm(init: fn(), death: fn()) {
    let _ = ON_VM.set((init, death));
}

pub(crate) fn vm_hooks() -> Option<VmHooks> {
    ON_VM.get().copied()
}

/// `jlive ctl dump` / `reset`: JVMPI_EVENT_DATA_DUMP_REQUEST (or DATA_RESET_REQUEST) to the
/// agent, on the calling thread (attached to the JVM), if the agent enabled it.
pub fn request_data(dump: bool) -> Result<String, String> {
    let s = shim::get().ok_or("no JVMPI agent is hosted")?;
    s.data_request(dump)
}

/// Hosts the JVMPI agent `spec` (`PATH[:OPTIONS]`; a bare name is looked for as
/// `libNAME.so` in `library_path`, then as dlopen searches). Called from Agent_OnLoad with
/// the JavaVM it received.
pub fn host(vm: Vm, spec: &str, library_path: &[String]) -> Result<(), String> {
    let (path, options) = split_spec(spec);
    if path.is_empty() {
        return Err("jvmpi= needs the agent library: jvmpi=/path/libagent.so[:OPTIONS]".into());
    }
    let path = jlive_jvm::os::locate_library(path, library_path);
    shim::Shim::install(vm)?;
    ffi::load_agent(vm.raw(), &path, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_options_are_everything_after_the_library() {
        assert_eq!(split_spec("/x/libhprof.so"), ("/x/libhprof.so", ""));
        assert_eq!(
            split_spec("/x/libhprof.so:heap=sites,cpu=times,file=a:b"),
            ("/x/libhprof.so", "heap=sites,cpu=times,file=a:b")
        );
        assert_eq!(split_spec("hprof:cpu=samples"), ("hprof", "cpu=samples"));
        assert_eq!(split_spec("/opt/a:b/libp.so:x"), ("/opt/a:b/libp.so", "x"));
        assert_eq!(
            split_spec("/x/libp.so:out=/tmp/a.so:b,src=/y"),
            ("/x/libp.so", "out=/tmp/a.so:b,src=/y")
        );
    }
}
