//! `jvmpi=`: libjlive.so hosts a legacy JVMPI agent (the jvmpi-shim crate) and traces nothing
//! itself. The control socket (`control=`, `token=` as for tracing) then serves `dump` and
//! `reset`, which send the agent JVMPI_EVENT_DATA_DUMP_REQUEST and DATA_RESET_REQUEST.

use crate::control::{Control, Driver};
use crate::log;
use crate::options::Options;
use jlive_jvm::jni::Vm;
use jlive_jvm::jvmti::Jvmti;
use std::sync::{Arc, OnceLock};

/// Options that may come before `jvmpi=`.
const ALLOWED: &[&str] = &["log", "control", "token"];

const HELP: &str =
    "commands: dump (DATA_DUMP_REQUEST) | reset (DATA_RESET_REQUEST) | status | help | quit";

/// The hosted agent, as the control socket drives it.
struct Agent {
    vm: Vm,
    jvmti: Jvmti,
    token: Option<String>,
    library: String,
}

/// The hosting run: the agent and its control socket.
struct Host {
    agent: Arc<Agent>,
    control: Control,
}

/// The run, once hosting. A static because the shim calls back through plain functions
/// ([`vm_init`], [`vm_death`]) with no context of ours.
static HOST: OnceLock<Host> = OnceLock::new();

impl Driver for Agent {
    fn vm(&self) -> Vm {
        self.vm
    }

    fn jvmti(&self) -> Jvmti {
        self.jvmti
    }

    fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    fn help(&self) -> &str {
        HELP
    }

    fn command(&self, _jvmti: Jvmti, word: &str, _rest: &str) -> Option<Result<String, String>> {
        Some(match word {
            "dump" => jvmpi_shim::request_data(true),
            "reset" => jvmpi_shim::request_data(false),
            "status" => Ok(format!("hosting the JVMPI agent {}", self.library)),
            _ => return None,
        })
    }

    fn byte(&self, _jvmti: Jvmti, _byte: u8) -> bool {
        false
    }
}

/// Loads the agent named by `spec` (`PATH[:OPTIONS]`); `before` holds jlive's own options.
pub fn host(vm: Vm, before: &str, spec: &str) -> Result<(), String> {
    let options = Options::parse(before).map_err(|e| e.0)?;
    let keys = before.split(',').filter(|s| !s.is_empty());
    if let Some(other) = keys
        .map(|s| s.split('=').next().unwrap_or(s))
        .find(|k| !ALLOWED.contains(k))
    {
        return Err(format!(
            "jvmpi= hosts a JVMPI agent without jlive's own tracing: '{}' cannot come with it (only log=, control= and token= may)",
            other
        ));
    }
    if let Some(path) = &options.log {
        log::to_file(path).map_err(|e| format!("cannot open log file {}: {}", path, e))?;
    }
    // The JVM's own library directory first, then java.library.path (as -Xrun searched).
    let mut dirs = Vec::new();
    let jvmti = vm
        .jvmti()
        .ok_or("this JVM offers no JVMTI 1.2 environment")?;
    for key in ["sun.boot.library.path", "java.library.path"] {
        if let Some(value) = jvmti.system_property(key) {
            dirs.extend(value.split(':').filter(|d| !d.is_empty()).map(String::from));
        }
    }
    let host = Host {
        agent: Arc::new(Agent {
            vm,
            jvmti,
            token: options.token.clone(),
            library: jvmpi_shim::split_spec(spec).0.to_string(),
        }),
        // Bound now, so that a failure stops the JVM; served from VM init.
        control: Control::bind(&options, false)?,
    };
    let _ = HOST.set(host);
    jvmpi_shim::on_vm(vm_init, vm_death);
    let hosted = jvmpi_shim::host(vm, spec, &dirs);
    if hosted.is_err() {
        unload();
    }
    hosted
}

/// At VM init, after JVM_INIT_DONE: the control thread.
fn vm_init() {
    if let Some(host) = HOST.get() {
        host.control.start(host.agent.clone());
    }
}

/// At VM death, before the last GC events and JVM_SHUT_DOWN: no command reaches the agent
/// after them.
fn vm_death() {
    unload();
}

/// The control thread stopped and its socket removed (VM death, unload, a failed load).
pub fn unload() {
    if let Some(host) = HOST.get() {
        host.control.stop();
    }
}
