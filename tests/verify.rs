//! capture=bci on real programs no one here wrote, and on methods at the class file's code
//! limit, with HotSpot verifying every class (-XX:+BytecodeVerificationLocal
//! -XX:+BytecodeVerificationRemote), on JDK 17 and on JDK 25 when it is installed: no
//! VerifyError, the same output as without jlive, a trace that checks, and the numbers of
//! classes and methods instrumented, and of methods left as they were, reported.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;

const VERIFY: [&str; 3] = [
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+BytecodeVerificationLocal",
    "-XX:+BytecodeVerificationRemote",
];

/// Instrumented classes and methods, and classes left as they were (nothing to trace), as the
/// agent's summary counts them; `early_untouched` of those were loaded before VM init and
/// left out of the retransformation.
#[derive(Clone, Copy)]
struct Counts {
    classes: u64,
    methods: u64,
    untouched: u64,
    early_untouched: u64,
    /// Methods the rewriter left as they were (the code limit, a 16-bit branch).
    left: u64,
}

/// One program's run under capture=bci: the counts of the summary, the trace, and the log.
struct Verified {
    counts: Counts,
    trace: jlive_writer::read::Trace,
    log: String,
}

/// Runs `args` plain and under capture=bci with verification on every JDK installed; returns
/// the smallest counts of them all, so that what a test requires holds on each.
fn verified(name: &str, args: &[&str]) -> Counts {
    jdks()
        .iter()
        .map(|jdk| verified_on(jdk, &format!("{} {}", jdk.name, name), args).counts)
        .reduce(|a, b| Counts {
            classes: a.classes.min(b.classes),
            methods: a.methods.min(b.methods),
            untouched: a.untouched.min(b.untouched),
            early_untouched: a.early_untouched.min(b.early_untouched),
            left: a.left.min(b.left),
        })
        .unwrap()
}

fn verified_on(jdk: &Jdk, name: &str, args: &[&str]) -> Verified {
    let dir = scratch(&name.replace(' ', "-"));
    let file = dir.join("t.trc");
    let log = dir.join("jlive.log");
    let plain = {
        let mut c = Command::new(jdk.java());
        c.args(VERIFY).args(args).current_dir(&dir);
        run(c)
    };
    assert_eq!(
        plain.code,
        Some(0),
        "{} without jlive: {}",
        name,
        plain.stderr
    );
    let traced = {
        let mut c = Command::new(jdk.java());
        c.args(VERIFY)
            .arg(format!(
                "-agentpath:{}=capture=bci,file={},log={}",
                agent().display(),
                file.display(),
                log.display()
            ))
            .args(args)
            .current_dir(&dir);
        run(c)
    };
    for text in [&traced.stdout, &traced.stderr] {
        assert!(
            !text.contains("VerifyError") && !text.contains("Exception"),
            "{}: {}",
            name,
            text
        );
    }
    assert_eq!(traced.code, Some(0), "{}: {}", name, traced.stderr);
    assert_eq!(
        traced.stdout, plain.stdout,
        "{}: output changed under capture=bci",
        name
    );
    assert_eq!(
        traced.stderr, plain.stderr,
        "{}: stderr changed under capture=bci",
        name
    );
    let trace = read_trace(&file);
    // The smallest, Huge, records ~9,900 events on JDK 25 (61,000 on JDK 17).
    assert!(
        trace.events.len() > 5_000,
        "{}: {} events",
        name,
        trace.events.len()
    );
    let summary = std::fs::read_to_string(&log).unwrap();
    // The natives reach the thread's buffer through a TLS descriptor that glibc resolves
    // without a call only there (.cargo/config.toml).
    assert!(
        summary.contains("thread-locals in static TLS"),
        "{}: {}",
        name,
        summary
    );
    let line = bci_summary(&summary);
    println!("{}: {}", name, line);
    let early = summary
        .lines()
        .find(|l| l.contains("loaded before jlive could rewrite them"))
        .expect("retransformation line");
    println!("{}: {}", name, early);
    let _ = std::fs::remove_dir_all(&dir);
    let counts = Counts {
        classes: number_before(line, " classes, "),
        methods: number_before(line, " methods ("),
        untouched: number_before(line, " classes had nothing to trace"),
        early_untouched: number_before(early, " with nothing to trace"),
        left: number_before(line, " methods left as they were"),
    };
    assert!(
        counts.early_untouched <= counts.untouched,
        "{}: the summary counts the classes left out at VM init",
        name
    );
    Verified {
        counts,
        trace,
        log: summary,
    }
}

#[test]
fn javac_compiles_with_every_class_instrumented_and_verified() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/Demo.java");
    let out = scratch("javac-out");
    let Counts {
        classes,
        methods,
        untouched,
        early_untouched,
        ..
    } = verified(
        "javac",
        &[
            "-m",
            "jdk.compiler/com.sun.tools.javac.Main",
            "--release",
            "8",
            "-d",
            out.to_str().unwrap(),
            source.to_str().unwrap(),
        ],
    );
    assert!(out.join("Demo.class").is_file());
    assert!(
        classes > 1000 && methods > 10_000,
        "{} classes, {} methods",
        classes,
        methods
    );
    // javac's interfaces without code (javax.lang.model among them) load unchanged.
    assert!(untouched > 50, "{} classes left as they were", untouched);
    // Interfaces loaded before VM init (Runnable, Comparable, Serializable...) are not
    // retransformed at all: HotSpot would redefine them for nothing.
    assert!(
        early_untouched > 5,
        "{} classes loaded before VM init left out of the retransformation",
        early_untouched
    );
}

#[test]
fn h2_runs_its_script_with_every_class_instrumented_and_verified() {
    let jar = "/usr/share/java/h2.jar";
    assert!(
        Path::new(jar).is_file(),
        "Debian's h2 is missing: apt-get install -y libh2-java"
    );
    let dir = scratch("h2-script");
    let script = h2_script(&dir);
    let Counts {
        classes, methods, ..
    } = verified(
        "h2",
        &[
            "-cp",
            jar,
            "org.h2.tools.RunScript",
            "-url",
            "jdbc:h2:mem:v",
            "-showResults",
            "-script",
            script.to_str().unwrap(),
        ],
    );
    assert!(
        classes > 500 && methods > 5_000,
        "{} classes, {} methods",
        classes,
        methods
    );
}

#[test]
fn xalan_transforms_with_every_class_instrumented_and_verified() {
    let jars = [
        "/usr/share/java/xalan2.jar",
        "/usr/share/java/serializer.jar",
    ];
    for j in jars {
        assert!(
            Path::new(j).is_file(),
            "Debian's xalan is missing: apt-get install -y libxalan2-java"
        );
    }
    let dir = scratch("xalan-in");
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<orders>\n");
    for id in 1..=200 {
        xml.push_str(&format!(
            "  <order id=\"{}\"><item qty=\"{}\" price=\"{}.25\"/><item qty=\"1\" price=\"3.50\"/></order>\n",
            id,
            id % 7 + 1,
            id % 13
        ));
    }
    xml.push_str("</orders>\n");
    std::fs::write(dir.join("in.xml"), xml).unwrap();
    std::fs::write(
        dir.join("t.xsl"),
        r#"<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="text"/>
  <xsl:template match="/">
    <xsl:for-each select="orders/order">
      <xsl:sort select="@id" data-type="number" order="descending"/>
      <xsl:value-of select="@id"/>: <xsl:value-of select="sum(item/@qty)"/> items, <xsl:value-of select="format-number(sum(item/@price), '0.00')"/>
      <xsl:text>&#10;</xsl:text>
    </xsl:for-each>
  </xsl:template>
</xsl:stylesheet>
"#,
    )
    .unwrap();
    let cp = jars.join(":");
    let input = dir.join("in.xml");
    let xsl = dir.join("t.xsl");
    let Counts {
        classes, methods, ..
    } = verified(
        "xalan",
        &[
            "-cp",
            &cp,
            "org.apache.xalan.xslt.Process",
            "-IN",
            input.to_str().unwrap(),
            "-XSL",
            xsl.to_str().unwrap(),
        ],
    );
    assert!(
        classes > 500 && methods > 5_000,
        "{} classes, {} methods",
        classes,
        methods
    );
}

/// A program whose methods sit at the class file's limits (javac cannot go past them, the
/// rewriter must not): `fits` has 63,002 bytes of code and room left for the weave; `near`
/// has 65,529, within the 64 KiB limit until its entry and exit calls are added; `spans`
/// opens with a branch over 31,900 bytes holding 2,900 returns, each of which becomes a jump
/// to the exit block, so the branch would outgrow its 16-bit offset.
fn huge_source() -> String {
    let mut s = String::from("public class Huge {\n    static int fits(int x) {\n");
    for _ in 0..9_000 {
        s.push_str("        x = x * 31 + 1;\n");
    }
    s.push_str("        return x;\n    }\n\n    static int near(int x) {\n");
    // 9,361 statements of 7 bytes (iload_0 bipush imul iconst_1 iadd istore_0), then
    // iload_0 ireturn: 65,529 bytes.
    for _ in 0..9_361 {
        s.push_str("        x = x * 31 + 1;\n");
    }
    s.push_str(
        "        return x;\n    }\n\n    static int spans(int x) {\n        if (x >= 0) {\n",
    );
    // 11 bytes each: iload_0 sipush if_icmpne sipush ireturn.
    for k in 1_000..3_900 {
        s.push_str(&format!("            if (x == {k}) return {k};\n"));
    }
    s.push_str(
        "        }\n        return -x;\n    }\n\n\
         public static void main(String[] args) {\n\
         long s = 0;\n\
         for (int i = 0; i < 3; i++) s += fits(i);\n\
         for (int i = 0; i < 5; i++) s += near(i);\n\
         for (int i = 0; i < 7; i++) s += spans(1000 + i * 400) + spans(-i);\n\
         System.out.println(\"fits, near, spans: \" + s);\n\
         }\n}\n",
    );
    s
}

#[test]
fn methods_at_the_code_limit_run_as_they_were_and_are_counted() {
    let dir = scratch("huge-source");
    std::fs::write(dir.join("Huge.java"), huge_source()).unwrap();
    let javac = jdks()[0].home.join("bin/javac");
    let compiled = run({
        let mut c = Command::new(javac);
        c.arg("-d").arg(&dir).arg(dir.join("Huge.java"));
        c
    });
    assert_eq!(compiled.code, Some(0), "javac: {}", compiled.stderr);
    let cp = dir.to_str().unwrap();
    for jdk in jdks() {
        let name = format!("{} Huge", jdk.name);
        let Verified { counts, trace, log } = verified_on(&jdk, &name, &["-cp", cp, "Huge"]);
        let calls = calls(&trace);
        assert_eq!(total(&calls, "Huge.main"), (1, 1), "{}", name);
        assert_eq!(total(&calls, "Huge.fits"), (3, 3), "{}", name);
        assert_eq!(total(&calls, "Huge.near"), (0, 0), "{}", name);
        assert_eq!(total(&calls, "Huge.spans"), (0, 0), "{}", name);
        let left: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("not instrumented: "))
            .collect();
        let reason = |method: &str| {
            left.iter()
                .find(|l| l.contains(&format!("not instrumented: Huge.{}", method)))
                .unwrap_or_else(|| panic!("{}: no log line for Huge.{}: {}", name, method, log))
                .to_string()
        };
        assert!(reason("near").ends_with("would outgrow the 64 KiB code limit"));
        assert!(reason("spans").ends_with("a branch would outgrow its 16-bit offset"));
        assert!(
            !left.iter().any(|l| l.contains("Huge.fits")),
            "{}: {:?}",
            name,
            left
        );
        // Every method left as it was is counted in the summary and named in the log, and
        // the trace carries the count for `jlive stats`.
        assert_eq!(counts.left, left.len() as u64, "{}: {:?}", name, left);
        let note = bci_note(&trace);
        assert_eq!(
            number_before(&note, " methods left as they were"),
            counts.left,
            "{}: {}",
            name,
            note
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
