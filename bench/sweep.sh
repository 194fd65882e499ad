#!/bin/bash
# The rewriter, proven wide: every class of the JDK 17 and 25 runtime images and of every jar
# in /usr/share/java goes through the bci rewriter under each of its 16 option combinations,
# and every result through an independent verifier (bench/sweep/Verify.java: ASM's structural
# checks, data-flow analysis and a check of every stack map frame). Prints the counts and the
# failures of each corpus; exit 1 if any class failed.
#
# bash bench/sweep.sh [EVERY]   (EVERY=N: one class in N; the default 1 takes them all, about
# 40 minutes on 2 cores). Needs Debian's libasm-java (installed when missing and root).
set -euo pipefail
cd "$(dirname "$0")/.."
every=${1:-1}
jdk17=/usr/lib/jvm/java-17-openjdk-amd64
jdk25=/usr/lib/jvm/temurin-25-jdk-amd64
asm=/usr/share/java/asm.jar:/usr/share/java/asm-tree.jar:/usr/share/java/asm-analysis.jar:/usr/share/java/asm-util.jar
if [ ! -f /usr/share/java/asm-analysis.jar ] && [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq libasm-java >/dev/null
fi
work=$(mktemp -d /tmp/jlive-sweep.XXXXXX)
trap 'rm -rf "$work"' EXIT
cargo build --release --example sweep -q
"$jdk17/bin/javac" -cp "$asm" -d "$work/verify" bench/sweep/Verify.java

extract_image() { # JDK DIR
    "$1/bin/jimage" extract --dir "$2" "$1/lib/modules"
}
extract_image "$jdk17" "$work/jdk17"
[ -x "$jdk25/bin/java" ] && extract_image "$jdk25" "$work/jdk25"
# Every jar once (Debian links versioned names to the same file), each unpacked in its own
# directory; module-info and multi-release copies are classes like the others.
mkdir -p "$work/jars"
jars=0
for jar in $(readlink -f /usr/share/java/*.jar | sort -u); do
    d="$work/jars/$(basename "$jar" .jar)"
    mkdir -p "$d"
    (cd "$d" && "$jdk17/bin/jar" xf "$jar" 2>/dev/null) || true
    jars=$((jars + 1))
done
echo "corpora: JDK 17 image, $([ -d "$work/jdk25" ] && echo "JDK 25 image, ")$jars jars in /usr/share/java"

failed=0
judge() { # NAME JAVA HIERARCHY-DIRS... -- CLASS-DIRS...
    local name=$1 java=$2; shift 2
    local hierarchy=()
    while [ "$1" != "--" ]; do hierarchy+=("$1"); shift; done
    shift
    echo "== $name"
    local start=$SECONDS
    if ! target/release/examples/sweep --every "$every" "$@" 2>"$work/sweep.err" \
        | "$java" -Xmx2g -cp "$asm:$work/verify" Verify "${hierarchy[@]}"; then
        failed=1
    fi
    grep -E "class files|combination|declined|left:" "$work/sweep.err" | head -40 || true
    echo "($((SECONDS - start)) s)"
}
judge "JDK 17 runtime image" "$jdk17/bin/java" "$work/jdk17" -- "$work/jdk17"
if [ -d "$work/jdk25" ]; then
    judge "JDK 25 runtime image" "$jdk25/bin/java" "$work/jdk25" -- "$work/jdk25"
fi
judge "/usr/share/java" "$jdk17/bin/java" "$work/jdk17" "$work/jars" -- "$work/jars"
exit $failed
