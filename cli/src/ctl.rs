//! `jlive ctl` and `jlive list`: talk to running JVMs through their control sockets.

use crate::args::CtlArgs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long an answer may take (a flush waits for the disk).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(40);

/// The directory of the default sockets: `$TMPDIR/jlive-$UID`.
pub fn socket_dir() -> PathBuf {
    let tmp = std::env::var_os("TMPDIR").unwrap_or_else(|| "/tmp".into());
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    Path::new(&tmp).join(format!("jlive-{}", uid))
}

/// The sockets in the default directory, with the pid each names.
fn sockets() -> Vec<(u32, PathBuf)> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(socket_dir())
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let path = e.path();
                    let pid = path
                        .file_name()?
                        .to_str()?
                        .strip_suffix(".sock")?
                        .parse()
                        .ok()?;
                    Some((pid, path))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

enum Target {
    Unix(PathBuf),
    Tcp(String, Option<String>),
}

fn exchange(target: &Target, line: &str) -> Result<String, String> {
    let (mut writer, reader): (Box<dyn Write>, Box<dyn std::io::Read>) = match target {
        Target::Unix(path) => {
            let s = UnixStream::connect(path)
                .map_err(|e| format!("cannot connect to {}: {}", path.display(), e))?;
            s.set_read_timeout(Some(ANSWER_TIMEOUT)).ok();
            (
                Box::new(s.try_clone().map_err(|e| e.to_string())?),
                Box::new(s),
            )
        }
        Target::Tcp(addr, _) => {
            let s = TcpStream::connect(addr)
                .map_err(|e| format!("cannot connect to tcp:{}: {}", addr, e))?;
            s.set_read_timeout(Some(ANSWER_TIMEOUT)).ok();
            (
                Box::new(s.try_clone().map_err(|e| e.to_string())?),
                Box::new(s),
            )
        }
    };
    let mut reader = BufReader::new(reader);
    let mut answer = String::new();
    if let Target::Tcp(_, Some(token)) = target {
        writeln!(writer, "auth {}", token).map_err(|e| e.to_string())?;
        reader.read_line(&mut answer).map_err(|e| e.to_string())?;
        if !answer.starts_with("ok") {
            return Ok(answer.trim_end().to_string());
        }
        answer.clear();
    }
    // A refused connection may be closed before the line is written: read its answer anyway.
    let written = writeln!(writer, "{}", line);
    let read = reader.read_line(&mut answer);
    if answer.is_empty() {
        if let Err(e) = written {
            return Err(format!("the JVM closed the connection: {}", e));
        }
        read.map_err(|e| format!("no answer: {}", e))?;
    }
    if answer.is_empty() {
        return Err("the JVM closed the connection without an answer".into());
    }
    Ok(answer.trim_end().to_string())
}

/// `jlive ctl [--pid PID | --socket PATH | --tcp HOST:PORT [--token T]] COMMAND [ARGS...]`
/// (clap lets one of --pid, --socket and --tcp through, --token with --tcp only).
pub fn ctl(args: &CtlArgs) -> Result<u8, String> {
    let target = if let Some(pid) = args.pid {
        Target::Unix(socket_dir().join(format!("{}.sock", pid)))
    } else if let Some(path) = &args.socket {
        Target::Unix(PathBuf::from(path))
    } else if let Some(addr) = &args.tcp {
        Target::Tcp(addr.clone(), args.token.clone())
    } else {
        the_only_jvm()?
    };
    let mut words = args.command.clone();
    if let [command, path] = words.as_mut_slice() {
        // The JVM writes the file: a relative path is this command's, not the JVM's.
        if command == "heap" && Path::new(path.as_str()).is_relative() {
            if let Ok(dir) = std::env::current_dir() {
                *path = dir.join(&*path).display().to_string();
            }
        }
    }
    let answer = exchange(&target, &words.join(" "))?;
    println!("{}", answer);
    Ok(if answer.starts_with("ok") { 0 } else { 1 })
}

/// The socket of the one running JVM in the default directory. A JVM that was killed leaves
/// its socket file behind with nothing listening on it: those are passed over (not removed:
/// a JVM starting up has bound its socket a moment before it listens).
fn the_only_jvm() -> Result<Target, String> {
    let all = sockets();
    let live: Vec<&(u32, PathBuf)> = all
        .iter()
        .filter(|(_, path)| UnixStream::connect(path).is_ok())
        .collect();
    match live.as_slice() {
        [(_, path)] => Ok(Target::Unix(path.clone())),
        [] => Err(no_running_jvm(all.len())),
        many => {
            let pids: Vec<String> = many.iter().map(|(p, _)| p.to_string()).collect();
            Err(format!(
                "several JVMs ({}): choose one with --pid",
                pids.join(", ")
            ))
        }
    }
}

/// The value of `key=` in a status line.
fn field<'a>(status: &'a str, key: &str) -> &'a str {
    status
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or("?")
}

/// `jlive list`: JVMs on this machine with a live jlive socket.
pub fn list() -> Result<u8, String> {
    println!("{:>8}  {:<8}  {:<40}  file", "pid", "state", "main class");
    let all = sockets();
    let mut listed = 0;
    for (pid, path) in &all {
        match exchange(&Target::Unix(path.clone()), "status") {
            Ok(status) if status.starts_with("ok") => {
                listed += 1;
                println!(
                    "{:>8}  {:<8}  {:<40}  {}",
                    pid,
                    field(&status, "state"),
                    field(&status, "main"),
                    field(&status, "file")
                )
            }
            _ => {} // a socket left by a JVM that is gone
        }
    }
    if listed == 0 {
        // On stderr, so that the table on stdout stays a table for scripts.
        eprintln!("jlive: {}", no_running_jvm(all.len()));
    }
    Ok(0)
}

/// What `ctl` and `list` say when no JVM answers, with the number of `stale` socket files.
fn no_running_jvm(stale: usize) -> String {
    let gone = match stale {
        0 => String::new(),
        n => format!(" ({} left by JVMs that are gone)", n),
    };
    format!(
        "no running JVM with a jlive control socket in {}{}",
        socket_dir().display(),
        gone
    )
}
