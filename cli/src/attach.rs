//! `jlive attach PID [AGENT OPTIONS]`: loads libjlive.so into a running HotSpot JVM through
//! the JVM's own attach mechanism, the one `jcmd` uses, spoken here so that no JDK tool is
//! needed on the machine.
//!
//! ```text
//! 1. /proc/PID/maps names libjvm.so (never SIGQUIT anything else: it would end it)
//! 2. as root, become the JVM's user (setegid, seteuid): the JVM answers its own user only;
//!    in a container (another /proc/PID/root), libjlive.so is copied to its /tmp/jlive-lib-UID
//! 3. /proc/PID/root/tmp/.java_pid<NSPID> (NSPID: the pid inside the JVM's namespace)
//!    missing: only if the process catches SIGQUIT (SigCgt), create the trigger
//!    /proc/PID/cwd/.attach_pid<NSPID> (or in .../tmp) anew, send SIGQUIT, wait up to 10 s
//!    for the socket, remove the trigger
//! 4. connect; send "1\0load\0<libjlive.so>\0true\0<options>\0"
//! 5. read to the end: "<status>\n" then, JDK 9+, "return code: <Agent_OnAttach's answer>\n"
//!    (JDK 8: the bare number; JDK 21+: a message instead when the JVM refuses);
//!    75 is jlive's "loaded already" (a second attach changes nothing)
//! ```

use crate::launch::{agent_library, agent_options};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Agent_OnAttach's answer when jlive was loaded already (agent/entry.rs).
const ALREADY_LOADED: i32 = 75;
/// How long the JVM may take to open its attach socket after SIGQUIT.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the load may take: under capture=bci it retransforms every loaded class.
const LOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// What /proc says of the target.
struct Target {
    pid: u32,
    /// Its pid in its own namespace (a container's), as it names its files.
    nspid: u32,
    uid: u32,
    gid: u32,
    /// /proc/PID/root: its file system as it sees it.
    root: PathBuf,
}

fn status_field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
}

impl Target {
    fn of(pid: u32) -> Result<Target, String> {
        let proc = PathBuf::from(format!("/proc/{}", pid));
        let status = std::fs::read_to_string(proc.join("status"))
            .map_err(|_| format!("no process {}", pid))?;
        // Uid: real effective saved fs; the JVM checks its effective one.
        let second = |key: &str| -> Result<u32, String> {
            status_field(&status, key)
                .and_then(|v| v.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("/proc/{}/status has no {}", pid, key))
        };
        let nspid = status_field(&status, "NStgid:")
            .or_else(|| status_field(&status, "NSpid:"))
            .and_then(|v| v.split_whitespace().last())
            .and_then(|v| v.parse().ok())
            .unwrap_or(pid);
        Ok(Target {
            pid,
            nspid,
            uid: second("Uid:")?,
            gid: second("Gid:")?,
            root: proc.join("root"),
        })
    }

    /// The libraries mapped into the process.
    fn maps(&self) -> Result<String, String> {
        std::fs::read_to_string(format!("/proc/{}/maps", self.pid)).map_err(|e| {
            format!(
                "cannot read /proc/{}/maps ({}): attach as the JVM's user or as root",
                self.pid, e
            )
        })
    }

    fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }

    fn socket(&self) -> PathBuf {
        self.tmp().join(format!(".java_pid{}", self.nspid))
    }

    /// Whether the process catches SIGQUIT (bit 3 of SigCgt): HotSpot does, unless it runs
    /// with -Xrs or has not set its handlers up yet; for any other process SIGQUIT's default
    /// ends it.
    fn catches_sigquit(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .ok()
            .and_then(|s| status_field(&s, "SigCgt:").and_then(|v| u64::from_str_radix(v, 16).ok()))
            .is_some_and(|mask| mask & (1 << (libc::SIGQUIT - 1)) != 0)
    }

    /// Whether the JVM sees another file system than ours (a container): then it cannot
    /// open our path of libjlive.so.
    fn other_root(&self) -> bool {
        let id = |p: &Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
        id(&self.root) != id(Path::new("/"))
    }

    fn alive(&self) -> bool {
        Path::new(&format!("/proc/{}", self.pid)).exists()
    }

    /// jlive's control socket in the JVM ($TMPDIR/jlive-UID/NSPID.sock, as it sees them).
    fn control_socket(&self) -> PathBuf {
        let environ = std::fs::read(format!("/proc/{}/environ", self.pid)).unwrap_or_default();
        let tmpdir = environ
            .split(|&b| b == 0)
            .find_map(|v| v.strip_prefix(b"TMPDIR="))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_else(|| "/tmp".into());
        // Through /proc/PID/root only where the JVM sees another file system.
        let root = if self.other_root() {
            self.root.clone()
        } else {
            PathBuf::from("/")
        };
        root.join(tmpdir.trim_start_matches('/'))
            .join(format!("jlive-{}", self.uid))
            .join(format!("{}.sock", self.nspid))
    }
}

/// Becomes the target's user (effective ids only), when run as root for another user's JVM:
/// the JVM answers only its own user or root, and the trigger file must be its user's.
fn become_user(t: &Target) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || t.uid == 0 {
        return Ok(());
    }
    // SAFETY: setegid and seteuid change this process's effective ids; no memory involved.
    let (g, u) = unsafe { (libc::setegid(t.gid), libc::seteuid(t.uid)) };
    if g != 0 || u != 0 {
        return Err(format!(
            "cannot become uid {} gid {}: {}",
            t.uid,
            t.gid,
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Makes the JVM open its attach socket: a trigger file and SIGQUIT, as jcmd does.
fn open_socket(t: &Target) -> Result<(), String> {
    let socket = t.socket();
    if is_socket(&socket) {
        return Ok(());
    }
    if !t.catches_sigquit() {
        return Err(format!(
            "process {} does not catch SIGQUIT (a JVM started with -Xrs, or still starting up): \
             not signalled, since SIGQUIT would end it",
            t.pid
        ));
    }
    let name = format!(".attach_pid{}", t.nspid);
    let cwd = PathBuf::from(format!("/proc/{}/cwd", t.pid)).join(&name);
    // A file of that name already there (another attacher's) serves as well; one jlive
    // creates is new (never through a symbolic link) and removed afterwards.
    let mut trigger = None;
    for place in [cwd, t.tmp().join(&name)] {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&place)
        {
            Ok(_) => {
                trigger = Some(Some(place));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                trigger = Some(None);
                break;
            }
            Err(_) => continue,
        }
    }
    let trigger = trigger.ok_or_else(|| {
        format!(
            "cannot create {} in the JVM's working directory or /tmp",
            name
        )
    })?;
    let remove = |trigger: &Option<PathBuf>| {
        if let Some(path) = trigger {
            let _ = std::fs::remove_file(path);
        }
    };
    // SAFETY: kill has no memory preconditions; the target was checked to be a JVM, whose
    // SIGQUIT handler looks for the trigger file.
    if unsafe { libc::kill(t.pid as i32, libc::SIGQUIT) } != 0 {
        remove(&trigger);
        return Err(format!(
            "cannot signal {}: {}",
            t.pid,
            std::io::Error::last_os_error()
        ));
    }
    let started = Instant::now();
    let mut pause = Duration::from_millis(20);
    let opened = loop {
        if is_socket(&socket) {
            break true;
        }
        if !t.alive() || started.elapsed() > SOCKET_TIMEOUT {
            break false;
        }
        std::thread::sleep(pause);
        pause = (pause + Duration::from_millis(20)).min(Duration::from_millis(200));
    };
    remove(&trigger);
    if opened {
        Ok(())
    } else if !t.alive() {
        Err(format!("process {} ended while attaching", t.pid))
    } else {
        Err(format!(
            "the JVM {} did not open its attach socket {} within {} s (started with \
             -XX:+DisableAttachMechanism, or -Xrs? its stdout may show a thread dump instead)",
            t.pid,
            socket.display(),
            SOCKET_TIMEOUT.as_secs()
        ))
    }
}

fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

/// The path the JVM can open libjlive.so at: ours, or in a container a copy in its /tmp.
fn reachable_library(t: &Target, library: &Path) -> Result<PathBuf, String> {
    if !t.other_root() {
        return Ok(library.to_path_buf());
    }
    let dir = format!("jlive-lib-{}", t.uid);
    let inside = Path::new("/tmp").join(&dir).join("libjlive.so");
    let there = t.tmp().join(&dir);
    let _ = std::fs::create_dir(&there);
    let copy = there.join("libjlive.so");
    let copied = std::fs::metadata(&there)
        .ok()
        .filter(|m| m.uid() == t.uid && !m.file_type().is_symlink())
        .ok_or_else(|| format!("{} is not the JVM user's directory", there.display()))
        .and_then(|_| {
            std::fs::copy(library, &copy)
                .map_err(|e| format!("cannot copy libjlive.so to {}: {}", copy.display(), e))
        });
    copied.map(|_| inside)
}

/// The `load` operation; the JVM's whole answer.
fn load(t: &Target, library: &Path, options: &str) -> Result<String, String> {
    let socket = t.socket();
    let owner = std::fs::metadata(&socket)
        .map(|m| m.uid())
        .unwrap_or(u32::MAX);
    if owner != t.uid {
        return Err(format!(
            "{} belongs to uid {}, not to the JVM's user {}: not used",
            socket.display(),
            owner,
            t.uid
        ));
    }
    let mut s = UnixStream::connect(&socket)
        .map_err(|e| format!("cannot connect to {}: {}", socket.display(), e))?;
    s.set_read_timeout(Some(LOAD_TIMEOUT)).ok();
    let library = library.to_string_lossy();
    for (what, arg) in [("the library's path", &*library), ("the options", options)] {
        // HotSpot's protocol 1 takes arguments of up to 1024 bytes and silently drops a
        // request with a longer one.
        if arg.len() > 1024 || arg.contains('\0') {
            return Err(format!(
                "{} is too long for the attach protocol (1024 bytes)",
                what
            ));
        }
    }
    let mut request = Vec::new();
    for part in ["1", "load", &library, "true", options] {
        request.extend_from_slice(part.as_bytes());
        request.push(0);
    }
    s.write_all(&request)
        .map_err(|e| format!("cannot send the load request: {}", e))?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)
        .map_err(|e| format!("no answer from the JVM: {}", e))?;
    Ok(answer)
}

/// The JVM's answer to `load`: Ok(Agent_OnAttach's return code) or the JVM's refusal.
fn parse_answer(answer: &str) -> Result<i32, String> {
    let mut lines = answer.lines();
    let status: i32 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| format!("an answer jlive does not understand: {:?}", answer))?;
    let rest: Vec<&str> = lines.collect();
    let first = rest.first().map_or("", |l| l.trim());
    if status == 0 {
        if let Some(code) = first.strip_prefix("return code:") {
            return code
                .trim()
                .parse()
                .map_err(|_| format!("an answer jlive does not understand: {:?}", answer));
        }
        if let Ok(code) = first.parse() {
            return Ok(code); // JDK 8
        }
    }
    let said = rest.join(" ");
    Err(if said.is_empty() {
        format!("the JVM refused the load (status {})", status)
    } else {
        format!("the JVM refused the load: {}", said.trim())
    })
}

/// `jlive attach PID [AGENT OPTIONS]` (its help is in args.rs).
pub fn attach(pid: u32, words: &[String]) -> Result<u8, String> {
    let options = agent_options(words)?;
    let library = agent_library()?;
    let t = Target::of(pid)?;
    let maps = t.maps()?;
    if !maps.contains("/libjvm.so") {
        return Err(format!(
            "process {} is not a HotSpot JVM (no libjvm.so in its memory map)",
            pid
        ));
    }
    // jlive already there answers so itself (Agent_OnAttach's ALREADY_LOADED).
    let library = library
        .canonicalize()
        .map_err(|e| format!("{}: {}", library.display(), e))?;
    // Where `jlive ctl --pid` will look, for the caller (before becoming the JVM's user).
    let our_sockets = crate::ctl::socket_dir();
    become_user(&t)?;
    let library = reachable_library(&t, &library)?;
    open_socket(&t)?;
    let started = Instant::now();
    let answer = load(&t, &library, &options)?;
    match parse_answer(&answer)? {
        0 => {}
        ALREADY_LOADED => {
            println!("jlive is already loaded in {}: nothing done; drive it with jlive ctl", pid);
            return Ok(0);
        }
        code => {
            return Err(format!(
                "libjlive.so did not start in {} (Agent_OnAttach answered {}): its reason is on the JVM's stderr",
                pid, code
            ))
        }
    }
    println!(
        "jlive attached to {} in {:.1} s ({})",
        pid,
        started.elapsed().as_secs_f64(),
        library.display()
    );
    let control = t.control_socket();
    if is_socket(&control) {
        let ours = our_sockets.join(format!("{}.sock", pid));
        let inode = |p: &Path| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
        if inode(&ours).is_some() && inode(&ours) == inode(&control) {
            println!("bursts: jlive ctl --pid {} start | stop | status", pid);
        } else {
            println!(
                "bursts: jlive ctl --socket {} start | stop | status",
                control.display()
            );
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::parse_answer;

    #[test]
    fn the_jvms_answers_to_load_are_understood_for_every_jdk() {
        assert_eq!(parse_answer("0\nreturn code: 0\n"), Ok(0));
        assert_eq!(parse_answer("0\nreturn code: 75\n"), Ok(75));
        assert_eq!(parse_answer("0\n-1\n"), Ok(-1));
        let refused = parse_answer(
            "0\nDynamic agent loading is not enabled. Use -XX:+EnableDynamicAgentLoading to launch target VM.\n",
        )
        .unwrap_err();
        assert!(refused.contains("EnableDynamicAgentLoading"), "{}", refused);
        let missing =
            parse_answer("-1\n/x/libjlive.so was not loaded.\nno such file\n").unwrap_err();
        assert!(missing.contains("was not loaded"), "{}", missing);
        assert!(parse_answer("").is_err());
    }
}
