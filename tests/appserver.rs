//! Debian's tomcat10 started with the examples/appserver/tomcat/setenv.sh drop-in, the agent
//! paused, loaded by wrk for 10 s; a burst of at least 2 s taken with `jlive ctl` must hold
//! Catalina's request processing on several threads, pass `jlive check`, and cost wrk no errors.

mod common;

use common::*;
use jlive_writer::model::Event;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CATALINA_HOME: &str = "/usr/share/tomcat10";

/// A CATALINA_BASE with Debian's configuration, the HTTP connector on `port`, a static page,
/// and jlive's setenv.sh.
fn tomcat_base(dir: &Path, port: u16) -> PathBuf {
    let base = dir.join("base");
    for d in ["conf", "logs", "temp", "webapps/ROOT", "work", "bin"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    for f in [
        "catalina.properties",
        "context.xml",
        "jaspic-providers.xml",
        "logging.properties",
        "tomcat-users.xml",
        "web.xml",
    ] {
        std::fs::copy(
            Path::new("/etc/tomcat10").join(f),
            base.join("conf").join(f),
        )
        .unwrap();
    }
    let server = std::fs::read_to_string("/etc/tomcat10/server.xml").unwrap();
    std::fs::write(
        base.join("conf/server.xml"),
        server.replace("port=\"8080\"", &format!("port=\"{}\"", port)),
    )
    .unwrap();
    std::fs::write(
        base.join("webapps/ROOT/index.html"),
        "<html><body>hello from tomcat</body></html>\n",
    )
    .unwrap();
    let setenv = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/appserver/tomcat/setenv.sh");
    std::fs::copy(setenv, base.join("bin/setenv.sh")).unwrap();
    base
}

fn wait_for_port(port: u16, tomcat: &mut std::process::Child) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = tomcat.try_wait() {
            panic!("tomcat exited before it listened: {}", status);
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "tomcat did not listen on {}",
            port
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One GET of the static page on a new connection: whether Tomcat answered 200.
fn served(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let request = "GET /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

/// Keeps the burst open for at least `least`, and until Tomcat has served `requests` of the
/// test's own requests beside wrk's: a JVM starved of CPU (two test binaries on two cores) can
/// spend a fixed 2 s without finishing one request, and the burst would hold none.
fn serve_during_burst(port: u16, least: Duration, requests: u32) {
    let start = Instant::now();
    let mut done = 0;
    while done < requests || start.elapsed() < least {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "Tomcat served {} of {} requests in 120 s of burst",
            done,
            requests
        );
        if done < requests {
            done += served(port) as u32;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGTERM: Tomcat shuts down, the JVM dies normally, the agent closes the trace. The trace
/// the drop-in wrote into $CATALINA_BASE/logs, if any.
fn stop_and_find_trace(tomcat: &mut std::process::Child, base: &Path) -> Option<PathBuf> {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(tomcat.id() as i32, libc::SIGTERM) };
    let start = Instant::now();
    while tomcat.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "tomcat did not stop"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::read_dir(base.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with("jlive-") && !n.ends_with(".meta")
            })
        })
}

fn ctl(socket: &Path, command: &str) -> String {
    let out = Command::new(jlive_bin())
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .arg(command)
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success() && answer.starts_with("ok"),
        "jlive ctl {}: {} {}",
        command,
        answer,
        String::from_utf8_lossy(&out.stderr)
    );
    answer
}

#[test]
fn tomcat_serves_wrk_while_a_burst_is_taken() {
    tomcat_burst("capture=events", "");
}

/// The same under capture=bci, every class verified by HotSpot as it loads.
#[test]
fn tomcat_serves_with_every_class_instrumented_and_verified() {
    let output = tomcat_burst(
        "capture=bci",
        "-XX:+UnlockDiagnosticVMOptions -XX:+BytecodeVerificationLocal -XX:+BytecodeVerificationRemote",
    );
    assert!(!output.contains("VerifyError"), "{}", output);
}

/// Tomcat with the drop-in (`capture` added to its options, `java_opts` in JAVA_OPTS), wrk for
/// 10 s, a burst of 2 s or more (until 20 requests of the test's own were served); returns what
/// Tomcat printed.
/// A port no one listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `catalina.sh run` on `base` with the drop-in's options (`JLIVE_OPTIONS`) and `JAVA_OPTS`,
/// its console in `dir`; returns once Tomcat listens on `port`.
fn start_tomcat(
    jdk: &Jdk,
    dir: &Path,
    base: &Path,
    port: u16,
    options: &str,
    java_opts: &str,
) -> std::process::Child {
    let mut tomcat = Command::new(Path::new(CATALINA_HOME).join("bin/catalina.sh"))
        .arg("run")
        .env("CATALINA_HOME", CATALINA_HOME)
        .env("CATALINA_BASE", base)
        .env("JAVA_HOME", &jdk.home)
        .env("JLIVE_LIB", agent())
        .env("JLIVE_OPTIONS", options)
        .env("JAVA_OPTS", java_opts)
        .stdout(std::fs::File::create(dir.join("console.txt")).unwrap())
        .stderr(std::fs::File::create(dir.join("console-err.txt")).unwrap())
        .spawn()
        .expect("start catalina.sh run");
    wait_for_port(port, &mut tomcat);
    tomcat
}

/// One Tomcat and one wrk at a time: two of each would share the machine's two cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Debian's Tomcat and wrk, which the Tomcat tests need.
fn tomcat_and_wrk() -> &'static str {
    assert!(
        Path::new(CATALINA_HOME).join("bin/catalina.sh").is_file(),
        "Debian's tomcat10 is missing: apt-get install -y tomcat10"
    );
    let wrk = ["/usr/bin/wrk", "/usr/local/bin/wrk"]
        .into_iter()
        .find(|p| Path::new(p).is_file());
    wrk.expect("wrk is missing: apt-get install -y wrk")
}

/// Tomcat with format=orca from start-up under wrk for 5 s: its concurrency log passes `jlive
/// check` (every wait, join, sleep and contended enter closed by its end on the same thread
/// and object, every stack described in the meta log), wrk sees no error, and the log holds
/// the waits and thread starts of Tomcat's own pools.
#[test]
fn tomcat_under_wrk_writes_an_orca_log_that_checks() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let wrk = tomcat_and_wrk();
    let jdk = &jdks()[0];
    let dir = scratch("tomcat-orca");
    let port = free_port();
    let base = tomcat_base(&dir, port);
    let options = format!(
        "format=orca,control=off,file={}/logs/jlive-%p.orca",
        base.display()
    );
    let mut tomcat = start_tomcat(jdk, &dir, &base, port, &options, "");
    assert!(served(port), "Tomcat did not serve the first request");
    let report = Command::new(wrk)
        .args(["-t2", "-c8", "-d5s", "--timeout", "10s"])
        .arg(format!("http://127.0.0.1:{}/index.html", port))
        .output()
        .expect("run wrk");
    let report = String::from_utf8_lossy(&report.stdout).to_string();
    assert!(report.contains("Requests/sec"), "{}", report);
    assert!(
        !report.contains("Non-2xx") && !report.contains("Socket errors"),
        "wrk saw errors:\n{}",
        report
    );
    let log = stop_and_find_trace(&mut tomcat, &base).expect("the ORCA log");
    let trace = read_trace(&log);
    let check = jlive_ok(&[&"check", &log]);
    assert!(check.contains(": ok:"), "{}", check);
    let count = |kind: jlive_writer::model::SyncKind| {
        trace
            .events
            .iter()
            .filter(|(_, e)| matches!(e, Event::Sync(s) if s.kind == kind))
            .count()
    };
    use jlive_writer::model::SyncKind;
    assert!(count(SyncKind::Start) >= 10, "Tomcat's threads started");
    assert!(count(SyncKind::Wait) > 0 && count(SyncKind::Waited) > 0);
    println!("wrk:\n{}\n{}", report, check);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `jlive ctl heap` on Tomcat under wrk: the server keeps serving (wrk sees no error) and the
/// graph reads back. Once the load is over, a second graph's objects by class agree with
/// `jcmd GC.class_histogram` taken right after it: 5% (or 300 objects) for each class of
/// 2,000 objects or more, and for the total. (Compared under load, the requests in flight at
/// either moment made Object[] differ by 11% in one CI run.)
#[test]
fn a_heap_graph_of_tomcat_under_wrk_agrees_with_jcmds_histogram() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let wrk = tomcat_and_wrk();
    let jdk = &jdks()[0];
    let dir = scratch("tomcat-heap");
    let port = free_port();
    let base = tomcat_base(&dir, port);
    let socket = dir.join("ctl.sock");
    let options = format!(
        "start=paused,control={},file={}",
        socket.display(),
        dir.join("t.trc").display()
    );
    let mut tomcat = start_tomcat(jdk, &dir, &base, port, &options, "");
    assert!(served(port), "Tomcat did not serve the first request");
    let url = format!("http://127.0.0.1:{}/index.html", port);
    let load = std::thread::spawn(move || {
        let out = Command::new(wrk)
            .args(["-t2", "-c8", "-d8s", "--timeout", "10s"])
            .arg(url)
            .output()
            .expect("run wrk");
        String::from_utf8_lossy(&out.stdout).to_string()
    });
    std::thread::sleep(Duration::from_secs(3));
    let under_load = dir.join("loaded.jlh");
    let answer = ctl(&socket, &format!("heap {}", under_load.display()));
    assert!(answer.starts_with("ok heap:"), "{}", answer);
    let report = load.join().unwrap();
    let loaded = jlive_writer::heap::read(&std::fs::read(&under_load).unwrap()).unwrap();
    assert!(
        jlive_writer::heap::summarize(&loaded, 1).objects > 10_000,
        "{}",
        answer
    );
    let file = dir.join("tomcat.jlh");
    let answer = ctl(&socket, &format!("heap {}", file.display()));
    let histogram = Command::new(jdk.home.join("bin/jcmd"))
        .arg(tomcat.id().to_string())
        .arg("GC.class_histogram")
        .output()
        .expect("jcmd");
    let histogram = String::from_utf8_lossy(&histogram.stdout).to_string();
    assert!(report.contains("Requests/sec"), "{}", report);
    assert!(
        !report.contains("Non-2xx") && !report.contains("Socket errors"),
        "wrk saw errors:\n{}",
        report
    );
    assert!(served(port), "Tomcat serves after the walk");
    let _ = stop_and_find_trace(&mut tomcat, &base);
    // jcmd's lines: "   1:  12345  678901  java.lang.String (java.base@17)".
    let mut theirs: std::collections::HashMap<String, u64> = Default::default();
    let mut their_total = 0;
    for line in histogram.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 4 && f[0].ends_with(':') && f[0] != "Total" {
            if let Ok(n) = f[1].parse::<u64>() {
                *theirs.entry(f[3].to_string()).or_default() += n;
                their_total += n;
            }
        }
    }
    assert!(their_total > 10_000, "{}", histogram);
    let graph = jlive_writer::heap::read(&std::fs::read(&file).unwrap()).unwrap();
    let summary = jlive_writer::heap::summarize(&graph, 10);
    let ours: std::collections::HashMap<&str, u64> = summary
        .classes
        .iter()
        .map(|c| (c.name.as_str(), c.objects))
        .collect();
    let near = |a: u64, b: u64| a.abs_diff(b) <= (b / 20).max(300);
    let mut compared = 0;
    let mut table = String::new();
    for (class, &n) in theirs.iter().filter(|(_, &n)| n >= 2000) {
        let mine = ours.get(class.as_str()).copied().unwrap_or(0);
        assert!(
            near(mine, n),
            "{}: {} in the graph, {} in jcmd's histogram ({})",
            class,
            mine,
            n,
            answer
        );
        table.push_str(&format!("{:>9} {:>9}  {}\n", mine, n, class));
        compared += 1;
    }
    assert!(compared >= 5, "{}", histogram);
    assert!(
        near(summary.objects, their_total),
        "{} objects in the graph, {} in jcmd's histogram",
        summary.objects,
        their_total
    );
    println!(
        "{}\n{} classes compared (graph, jcmd):\n{}{:>9} {:>9}  in all\nwrk:\n{}",
        answer, compared, table, summary.objects, their_total, report
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn tomcat_burst(capture: &str, java_opts: &str) -> String {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let wrk = tomcat_and_wrk();
    let jdk = &jdks()[0];
    let dir = scratch("tomcat");
    let port = free_port();
    let base = tomcat_base(&dir, port);
    let socket = dir.join("tomcat.sock");
    let log = dir.join("jlive.log");
    let options = format!(
        "{},start=paused,control={},file={}/logs/jlive-%p-%n.trc,log={}",
        capture,
        socket.display(),
        base.display(),
        log.display()
    );
    let console = dir.join("console.txt");
    let mut tomcat = start_tomcat(jdk, &dir, &base, port, &options, java_opts);
    assert!(ctl(&socket, "status").contains("state=paused"));
    // The first request loads (and under capture=bci instruments) the servlet classes: served
    // before the load, so that the burst sees requests, not class loading.
    assert!(served(port), "Tomcat did not serve the first request");

    let load = Command::new(wrk)
        .args(["-t2", "-c8", "-d10s", "--timeout", "10s"])
        .arg(format!("http://127.0.0.1:{}/index.html", port))
        .stdout(Stdio::piped())
        .spawn()
        .expect("start wrk");
    std::thread::sleep(Duration::from_secs(3));
    ctl(&socket, "start");
    serve_during_burst(port, Duration::from_secs(2), 20);
    ctl(&socket, "stop");
    let report = load.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&report.stdout).to_string();
    assert!(report.contains("Requests/sec"), "{}", report);
    assert!(
        !report.contains("Non-2xx") && !report.contains("Socket errors"),
        "wrk saw errors:\n{}",
        report
    );

    let trace_file = stop_and_find_trace(&mut tomcat, &base).expect("the trace file");
    let trace = read_trace(&trace_file);
    let bursts = trace
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::BurstBegin { .. }))
        .count();
    assert_eq!(bursts, 1);
    let threads: Vec<String> = threads_of(
        &calls(&trace),
        "org/apache/catalina/core/StandardWrapperValve.invoke",
    )
    .into_iter()
    .map(|t| trace.thread_name(t))
    .collect();
    assert!(
        threads.len() >= 2,
        "request processing on several threads: {:?}",
        threads
    );
    let summary = std::fs::read_to_string(&log).unwrap_or_default();
    let instrumented = summary
        .lines()
        .find(|l| l.contains("capture=bci"))
        .unwrap_or("");
    println!(
        "{}: wrk:\n{}\nrequest threads in the burst: {:?}\n{}",
        capture, report, threads, instrumented
    );
    let output = std::fs::read_to_string(&console).unwrap_or_default()
        + &std::fs::read_to_string(dir.join("console-err.txt")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    output
}

/// Removes the package however the test ends.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = Command::new("apt-get")
            .args(["remove", "-y", "-qq", "jlive"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
    }
}

fn root_command(program: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .unwrap_or_else(|e| panic!("{}: {}", program, e));
    assert!(
        out.status.success(),
        "{} {:?}: {}{}",
        program,
        args,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The Debian package (packaging/build-deb.sh): `apt-get install ./jlive_*.deb` puts jlive
/// where the drop-ins look, so Tomcat with the unedited drop-in from /opt/jlive/appserver
/// takes a burst driven by /usr/bin/jlive; the man page is there; `apt-get remove` leaves none
/// of its files behind.
#[test]
fn the_debian_package_serves_the_tomcat_drop_in_unedited_and_leaves_nothing_when_removed() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: installing a Debian package needs root");
        return;
    }
    let installed = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "jlive"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("installed"))
        .unwrap_or(false);
    if installed || Path::new("/opt/jlive").exists() {
        println!("skipped: jlive is installed on this machine already (/opt/jlive); not replaced");
        return;
    }
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("deb");
    let built = Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/packaging/build-deb.sh"
        ))
        .arg("--no-build")
        .arg(&dir)
        .env("JLIVE_LIB", agent())
        .env("JLIVE_BIN", jlive_bin())
        .env("JLIVE_API_JAR", api_jar())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "build-deb.sh: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let deb = String::from_utf8_lossy(&built.stdout).trim().to_string();
    assert!(
        deb.ends_with(".deb") && Path::new(&deb).is_file(),
        "{}",
        deb
    );
    let _installed = Installed;
    root_command(
        "apt-get",
        &["install", "-y", "-qq", "--no-install-recommends", &deb],
    );
    let files = String::from_utf8(root_command("dpkg", &["-L", "jlive"]).stdout).unwrap();
    for f in [
        "/opt/jlive/libjlive.so",
        "/opt/jlive/jlive-api.jar",
        "/opt/jlive/appserver/tomcat/setenv.sh",
        "/usr/bin/jlive",
        "/usr/share/man/man1/jlive.1.gz",
    ] {
        assert!(Path::new(f).exists(), "{} installed", f);
        assert!(files.lines().any(|l| l == f), "{} listed by dpkg -L", f);
    }
    let help = root_command("/usr/bin/jlive", &["attach", "--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("jlive attach PID"));
    let man = root_command("sh", &["-c", "zcat /usr/share/man/man1/jlive.1.gz"]);
    let man = String::from_utf8_lossy(&man.stdout).to_string();
    assert!(man.starts_with(".TH JLIVE 1"), "{}", man);
    for said in ["jlive attach PID", "capture   bci | events"] {
        assert!(man.contains(said), "the man page says {:?}", said);
    }

    // Tomcat with the drop-in as installed: no path given anywhere.
    let jdk = &jdks()[0];
    let port = free_port();
    let base = tomcat_base(&dir, port);
    std::fs::copy(
        "/opt/jlive/appserver/tomcat/setenv.sh",
        base.join("bin/setenv.sh"),
    )
    .unwrap();
    let mut tomcat = Command::new(Path::new(CATALINA_HOME).join("bin/catalina.sh"))
        .arg("run")
        .env("CATALINA_HOME", CATALINA_HOME)
        .env("CATALINA_BASE", &base)
        .env("JAVA_HOME", &jdk.home)
        .env_remove("JLIVE_LIB")
        .env_remove("JLIVE_OPTIONS")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("console-err.txt")).unwrap())
        .spawn()
        .expect("start catalina.sh run");
    wait_for_port(port, &mut tomcat);
    assert!(served(port), "Tomcat did not serve the first request");
    let pid = tomcat.id().to_string();
    let jlive = |command: &str| {
        let out = root_command("/usr/bin/jlive", &["ctl", "--pid", &pid, command]);
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(jlive("status").contains("state=paused"));
    jlive("start");
    serve_during_burst(port, Duration::from_millis(500), 10);
    jlive("stop");
    let trace_file = stop_and_find_trace(&mut tomcat, &base)
        .expect("the drop-in's trace file in $CATALINA_BASE/logs");
    let trace = read_trace(&trace_file);
    let served_calls = total(
        &calls(&trace),
        "org/apache/catalina/core/StandardWrapperValve.invoke",
    );
    assert!(
        served_calls.0 >= 10,
        "the burst holds the requests: {:?}",
        served_calls
    );

    root_command("apt-get", &["remove", "-y", "-qq", "jlive"]);
    for f in files.lines().filter(|l| l.starts_with('/')) {
        let kept = [
            "/opt",
            "/usr",
            "/usr/bin",
            "/usr/share",
            "/usr/share/man",
            "/usr/share/man/man1",
            "/usr/share/doc",
            "/.",
        ];
        if kept.contains(&f) {
            continue;
        }
        assert!(
            std::fs::symlink_metadata(f).is_err(),
            "{} is left behind after apt-get remove",
            f
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
