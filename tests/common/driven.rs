//! A JVM running Phases driven line by line, and `jlive ctl` on its control socket.

use super::{agent, classes, jlive_bin, Jdk};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A JVM running Phases, driven line by line.
pub struct Driven {
    pub child: Child,
    pub input: ChildStdin,
    pub output: BufReader<ChildStdout>,
}

impl Driven {
    pub fn start(jdk: &Jdk, options: &str, class: &str) -> Driven {
        Driven::spawn(Driven::command(jdk, options, class))
    }

    /// Without the agent, stderr kept for the test to read.
    pub fn plain(jdk: &Jdk, class: &str, stderr: &Path) -> Driven {
        let mut c = Command::new(jdk.java());
        c.arg("-cp")
            .arg(classes())
            .arg(class)
            .stderr(std::fs::File::create(stderr).unwrap());
        Driven::spawn(c)
    }

    pub fn command(jdk: &Jdk, options: &str, class: &str) -> Command {
        let mut c = Command::new(jdk.java());
        c.arg(format!("-agentpath:{}={}", agent().display(), options))
            .arg("-cp")
            .arg(classes())
            .arg(class);
        c
    }

    pub fn spawn(mut command: Command) -> Driven {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start java");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut d = Driven {
            child,
            input,
            output,
        };
        assert_eq!(d.line(), "ready");
        d
    }

    pub fn line(&mut self) -> String {
        let mut s = String::new();
        self.output
            .read_line(&mut s)
            .expect("read the program's output");
        s.trim().to_string()
    }

    /// Runs phase N and waits until the program has done it.
    pub fn phase(&mut self, n: u32) {
        writeln!(self.input, "{}", n).unwrap();
        assert_eq!(self.line(), format!("done {}", n));
    }

    pub fn quit(mut self) {
        writeln!(self.input, "quit").unwrap();
        let line = self.line();
        assert!(line.starts_with("value "), "{}", line);
        let status = self.child.wait().unwrap();
        assert!(status.success());
    }
}

/// Runs `jlive` → (exit code, what it printed on stdout and stderr, trimmed).
pub fn jlive(command: &mut Command) -> (i32, String) {
    let out = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text.trim().to_string())
}

/// `jlive ctl --socket PATH ARGS...` → (exit code, answer).
pub fn ctl(socket: &Path, args: &[&str]) -> (i32, String) {
    jlive(
        Command::new(jlive_bin())
            .arg("ctl")
            .arg("--socket")
            .arg(socket)
            .args(args),
    )
}

pub fn ok(socket: &Path, args: &[&str]) -> String {
    let (code, answer) = ctl(socket, args);
    assert_eq!(code, 0, "jlive ctl {:?}: {}", args, answer);
    assert!(answer.starts_with("ok"), "{}", answer);
    answer
}
