//! Builds libjlive.so (and the jlive command) for the tests, once per test binary: `cargo test`
//! compiles the library only as an rlib, and a stale libjlive.so left by an older build must
//! never be what a test loads. Shared with cli/tests through `#[path]`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;

/// `cargo build -p jlive -p jlive-cli` into `profile_dir`'s target directory and profile;
/// returns the path of libjlive.so there (the jlive command lies beside it).
pub fn built_agent(profile_dir: &Path) -> PathBuf {
    static BUILD: Once = Once::new();
    let lib = profile_dir.join("libjlive.so");
    BUILD.call_once(|| {
        let target_dir = profile_dir.parent().expect("target directory");
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "--quiet", "-p", "jlive", "-p", "jlive-cli"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                cargo.arg("--release");
            }
            Some(other) => {
                cargo.args(["--profile", other]);
            }
            None => {}
        }
        let status = cargo.status().expect("run cargo build for libjlive.so");
        assert!(status.success(), "building libjlive.so failed");
    });
    assert!(lib.is_file(), "{} was not built", lib.display());
    lib
}
