#!/bin/bash
# Soak: Debian's tomcat10 with the setenv.sh drop-in (start=paused) under wrk for MINUTES
# (default 10), a burst of 1 s every 5 s, a roll every minute. Every 30 s it prints the JVM's
# resident memory and what jlive holds that could grow (status: the threads' buffers, the
# threads described, the objects and thread states the writer keeps). Every file must pass
# `jlive check`: a rolled file is checked and deleted at once (events bursts write ~100 MB/s),
# the last at the end. Not a CI test: it takes its minutes.
#
# bash bench/soak.sh [MINUTES]          CAPTURE=bci for capture=bci, OPTIONS=... to add options
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
catalina=/usr/share/tomcat10/bin/catalina.sh
if [ ! -x "$catalina" ] || ! command -v wrk >/dev/null; then
    echo "needs Debian's tomcat10 and wrk: apt-get install -y tomcat10 wrk" >&2
    exit 2
fi
cargo build --release -q -p jlive -p jlive-cli
jlive=target/release/jlive
work=$(mktemp -d /tmp/jlive-soak.XXXXXX)
base=$work/tomcat port=18090
. bench/tomcat-base.sh
tomcat_base "$base" "$port" setenv
socket=$work/c.sock
options="start=paused,capture=${CAPTURE:-events},control=$socket,file=$work/t-%n.trc${OPTIONS:+,$OPTIONS}"
CATALINA_HOME=/usr/share/tomcat10 CATALINA_BASE=$base JAVA_HOME=$JAVA_HOME \
    JLIVE_LIB=$PWD/target/release/libjlive.so JLIVE_OPTIONS="$options" \
    "$catalina" run >"$base/console.txt" 2>&1 &
shell=$!
jvm=
cleanup() {
    kill "${wrk:-}" 2>/dev/null || true
    if [ -n "$jvm" ]; then
        # SIGTERM: Tomcat shuts down, the agent finishes the file at VM death.
        kill "$jvm" 2>/dev/null || true
        for _ in $(seq 300); do [ -d "/proc/$jvm" ] || break; sleep 0.1; done
    fi
    kill "$shell" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 300); do
    curl -s -o /dev/null "http://127.0.0.1:$port/index.html" && break
    sleep 0.2
done
jvm=$(pgrep -f "catalina.base=$base" | head -1)
echo "tomcat pid $jvm, options $options, $minutes minutes"
wrk -t2 -c8 -d"$((minutes * 60))s" "http://127.0.0.1:$port/index.html" >"$work/wrk.txt" 2>&1 &
wrk=$!
rss() { awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$jvm/status"; }
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
checked=0 bad=0 total=0
# Checks and deletes every file but the newest (the one being written), or all of them.
check_files() {
    local files
    mapfile -t files < <(ls -v "$work"/t-*.trc 2>/dev/null)
    [ "${1:-}" = all ] || files=("${files[@]:0:${#files[@]}-1}")
    for f in "${files[@]}"; do
        total=$((total + $(stat -c %s "$f")))
        if ! out=$("$jlive" check "$f" 2>&1); then
            echo "FAILS: $out"
            bad=1
        fi
        checked=$((checked + 1))
        rm -f "$f"
    done
}
printf "%6s %8s %6s %10s %12s %10s %10s %9s %9s\n" s rss_MB files events bytes buffers described objects wthreads
start=$SECONDS
while [ $((SECONDS - start)) -lt $((minutes * 60)) ]; do
    t=$((SECONDS - start))
    "$jlive" ctl --socket "$socket" start >/dev/null
    sleep 1
    "$jlive" ctl --socket "$socket" stop >/dev/null
    if [ $((t % 60)) -ge 55 ]; then
        "$jlive" ctl --socket "$socket" roll >/dev/null
        check_files
    fi
    if [ $((t % 30)) -lt 5 ]; then
        s=$("$jlive" ctl --socket "$socket" status)
        printf "%6d %8d %6d %10s %12s %10s %10s %9s %9s\n" "$t" "$(rss)" "$((checked + $(ls "$work"/t-*.trc | wc -l)))" \
            "$(field "$s" events)" "$(field "$s" bytes)" "$(field "$s" buffered_bytes)" \
            "$(field "$s" described_threads)" "$(field "$s" writer_objects)" "$(field "$s" writer_threads)"
    fi
    sleep 4
done
wait "$wrk" || true
grep -E "Requests/sec|requests in" "$work/wrk.txt"
echo "final RSS $(rss) MB"
cleanup
trap - EXIT
check_files all
echo "$checked files, $((total >> 20)) MB in all; every file checks: $([ $bad = 0 ] && echo yes || echo NO)"
rm -rf "$work"
exit $bad
