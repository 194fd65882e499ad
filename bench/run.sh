#!/usr/bin/env bash
# jlive's benchmark: one table, measured in one run, side by side with the anchors that
# bench/README.md names. Not a test: it asserts nothing, it reports (medians, as ratios).
#
#   bench/run.sh                  # everything (10 minutes on the Xeon of run 28, ~20 on the EPYC)
#   ROUNDS=3 bench/run.sh         # fewer rounds of the real programs (default 5)
#   RUNS=3 APPS=0 bench/run.sh    # CallBench and the rewriter only
#   TOMCAT=0 bench/run.sh         # without the paused-Tomcat rows
#   TOUCH=0 bench/run.sh          # without touching the memory first (touch_memory.c)
#   EXPORTS=0 bench/run.sh        # without reading javac's trace back (stats, tree, exports)
#   HOLD=0 bench/run.sh           # let the guest hand freed pages back to its host at once
#
# Needs a JDK 17, gcc, bc; JDK 25 (for the JFR row) when installed; Debian's libh2-java and
# libxalan2-java for the application rows (installed when apt-get can).
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
JDK25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
java=$JAVA_HOME/bin/java
runs=${RUNS:-5}
rounds=${ROUNDS:-5} # of the real programs: h2 varies most on a 2-core machine
iterations=${ITERATIONS:-3000000}
# Set for the JDK 25 programs only (bound columns), whatever the environment holds.
downcall_ns="" verify_cost=""
work=$(mktemp -d)
# A guest with free page reporting (virtio-balloon) hands the pages it frees back to its host
# within seconds, and pays again, page by page, when it writes them anew: each run would pay
# for the page cache of the trace the run before it deleted (bci CallBench 190-280 ns/iter
# instead of 143-153, section of 2026-11-23, second). Where the guest's kernel lets us
# (page_reporting's min_free_ms), freed pages stay in the guest for 5 minutes during the
# bench, and the setting is restored at exit; what is reported anyway is printed per part.
reporting=/sys/module/page_reporting/parameters
held=""
if [ "${HOLD:-1}" = 1 ] && [ -w "$reporting/min_free_ms" ] &&
    before=$(cat "$reporting/min_free_ms") && echo 300000 >"$reporting/min_free_ms" 2>/dev/null; then
    held=$before
fi
trap 'rm -rf "$work"; [ -z "$held" ] || echo "$held" >"$reporting/min_free_ms"' EXIT

cargo build --release -q --workspace
# The examples too: the rewriter's (instrument) and the writer's (throughput).
cargo build --release -q --workspace --examples
lib=$PWD/target/release/libjlive.so
"$JAVA_HOME/bin/javac" -d "$work" bench/CallBench.java bench/FloorBench.java
# JDK 22+'s floors (FFM downcalls, and no native code at all): a class only JDK 25 runs.
[ -x "$JDK25/bin/javac" ] && "$JDK25/bin/javac" -d "$work" bench/FloorBench25.java
for c in empty_agent floor_natives; do
    gcc -O2 -shared -fPIC -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" \
        -o "$work/lib$c.so" "bench/$c.c"
done
gcc -O2 -shared -fPIC -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" -Ijvmpi-shim/include \
    -o "$work/libjvmpi_counter.so" bench/jvmpi_counter.c
gcc -O2 -o "$work/touch_memory" bench/touch_memory.c
gcc -O2 -o "$work/tsc_limit" bench/tsc_limit.c

# A fresh VM pays its host for each page on first write (touch_memory.c): paid here, once.
echo "== the machine: $("$work/touch_memory" "${TOUCH:-80}")"
echo

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# On a shared VM the host's other guests take CPU time from ours ("steal", /proc/stat): how
# much of a part's time they took says whether its figures come from a slow phase.
# With them, the KiB of freed memory the guest reported to its host (0 where it does not).
cpu_times() {
    local kib=0
    [ -r "$reporting/reported_kib" ] && kib=$(cat "$reporting/reported_kib")
    awk -v kib="$kib" '/^cpu /{t=0; for (i=2; i<=NF; i++) t+=$i; print $9, t, kib}' /proc/stat
}
stolen_since() { # "steal total kib" as cpu_times printed it -> one line for the table
    awk -v a="$1" -v b="$(cpu_times)" -v held="${held:+held in the guest for 5 min}" 'BEGIN {
        split(a, x, " "); split(b, y, " "); d = y[2] - x[2]
        printf "host: %.1f%% of this part'"'"'s CPU time was stolen by other guests (/proc/stat); %d MB of freed memory reported back to the host (%s)\n", (d > 0 ? 100 * (y[1] - x[1]) / d : 0), (y[3] - x[3]) / 1024, (held != "" ? held : "free page reporting as the kernel has it") }'
}
ratio() { printf '%.1f' "$(echo "$1 / $2" | bc -l)"; }
ratio2() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }

callbench() { # JAVA ITERATIONS agent-args... [-- main class, default CallBench] -> ns/iter of one run
    local j=$1 n=$2 main=CallBench
    shift 2
    if [ $# -ge 2 ] && [ "${*: -2:1}" = "--" ]; then
        main=${*: -1}
        set -- "${@:1:$#-2}"
    fi
    sync
    "$j" "$@" -cp "$work" "$main" "$n" 100000 2>/dev/null | sed -n 's/ns_per_iteration=//p'
    rm -f "$work"/cb.trc "$work"/cb.jfr
}

echo "== CallBench: loop -> mid -> leaf, 3 traced calls per iteration, trace written to a file"
echo "   median of $runs interleaved rounds; $("$java" -version 2>&1 | head -1); $(nproc) cores"
# Round-robin over the setups, so that the host's slow and fast phases (they come and go over
# minutes on a shared VM) fall on every setup alike and the ratios of one run stay honest.
declare -A cb
started=$(cpu_times)
setups=(none limit empty floor events jvmpi bci paused tptp bcinull tptpnull)
[ -x "$JDK25/bin/java" ] && setups+=(jfr bci25 bci25jni ffm25 java25)
for _ in $(seq "$runs"); do
    for s in "${setups[@]}"; do
        case $s in
        none) v=$(callbench "$java" "$iterations") ;;
        limit) v=$("$work/tsc_limit" "$iterations" | sed -n 's/ns_per_iteration=//p') ;;
        empty) v=$(callbench "$java" 1000000 -agentpath:"$work/libempty_agent.so") ;;
        floor) v=$(callbench "$java" "$iterations" -Dfloor.lib="$work/libfloor_natives.so" -- FloorBench) ;;
        events) v=$(callbench "$java" 1000000 -agentpath:"$lib=capture=events,file=$work/cb.trc") ;;
        jvmpi) v=$(callbench "$java" 1000000 -agentpath:"$lib=jvmpi=$work/libjvmpi_counter.so") ;;
        bci) v=$(callbench "$java" "$iterations" -agentpath:"$lib=capture=bci,file=$work/cb.trc") ;;
        paused) v=$(callbench "$java" "$iterations" -agentpath:"$lib=capture=bci,start=paused,control=off,file=$work/cb.trc") ;;
        tptp) v=$(callbench "$java" "$iterations" -agentpath:"$lib=capture=bci,format=tptp,file=$work/cb.trc") ;;
        bcinull) v=$(callbench "$java" "$iterations" -agentpath:"$lib=capture=bci,file=/dev/null") ;;
        tptpnull) v=$(callbench "$java" "$iterations" -agentpath:"$lib=capture=bci,format=tptp,file=/dev/null") ;;
        jfr) v=$(callbench "$JDK25/bin/java" 1000000 -XX:StartFlightRecording:method-trace=CallBench,filename="$work/cb.jfr") ;;
        # Measured once jlive's thread has made the FFM downcalls (JDK 22+: 0.1-0.3 s after
        # VM init, the JNI natives meanwhile), as the floors below are: their steady state.
        bci25) v=$(callbench "$JDK25/bin/java" "$iterations" -Dcallbench.wait=1000 -agentpath:"$lib=capture=bci,file=$work/cb.trc") ;;
        bci25jni) v=$(callbench "$JDK25/bin/java" "$iterations" -Dcallbench.wait=1000 -agentpath:"$lib=capture=bci,trampolines=jni,file=$work/cb.trc") ;;
        ffm25) v=$(callbench "$JDK25/bin/java" "$iterations" --enable-native-access=ALL-UNNAMED -Dfloor.lib="$work/libfloor_natives.so" -- FloorBench25) ;;
        java25) v=$(callbench "$JDK25/bin/java" "$iterations" -- FloorBench25) ;;
        esac
        cb[$s]+="$v"$'\n'
    done
done
for s in "${setups[@]}"; do
    declare "$s=$(printf '%s' "${cb[$s]}" | median)"
done
jfr=${jfr:-} bci25=${bci25:-} bci25jni=${bci25jni:-} ffm25=${ffm25:-} java25=${java25:-}
printf '%-46s %10s %12s %14s\n' setup "ns/iter" "ns/call" "vs bci"
row() { printf '%-46s %10.1f %12.1f %14s\n' "$1" "$2" "$(echo "$2 / 3" | bc -l)" "$(ratio "$2" "$bci")x"; }
row "no agent" "$none"
row "JVMTI empty MethodEntry/Exit callbacks" "$empty"
row "C loop: rdtsc + 16-byte store, no JVM (limit)" "$limit"
row "JNI native + rdtsc + TLS store (the floor)" "$floor"
row "jlive capture=events" "$events"
row "JVMPI agent counting calls, through jvmpi=" "$jvmpi"
row "jlive capture=bci" "$bci"
row "jlive capture=bci, paused (gate shut)" "$paused"
row "jlive capture=bci, format=tptp" "$tptp"
row "jlive capture=bci, to /dev/null" "$bcinull"
row "jlive capture=bci, format=tptp, to /dev/null" "$tptpnull"
[ -n "$jfr" ] && row "JDK 25 JFR method-trace (CallBench)" "$jfr"
[ -n "$bci25" ] && row "JDK 25 jlive capture=bci (FFM critical downcalls)" "$bci25"
[ -n "$bci25jni" ] && row "JDK 25 jlive capture=bci, trampolines=jni" "$bci25jni"
[ -n "$ffm25" ] && row "JDK 25 FFM critical downcall + rdtsc + TLS store" "$ffm25"
[ -n "$java25" ] && row "JDK 25 pure Java: nanoTime + ThreadLocal ring" "$java25"
echo "bci / limit: $(ratio2 "$bci" "$limit")x (target <= 1.3x on JDK 25: $(ratio2 "${bci25:-$bci}" "$limit")x); floor / limit: $(ratio2 "$floor" "$limit")x"
[ -n "$ffm25" ] && echo "on JDK 25: bci / its floor (the FFM downcall): $(ratio2 "$bci25" "$ffm25")x; FFM floor / limit: $(ratio2 "$ffm25" "$limit")x (the least a tracer calling native code reaches here); pure Java / limit: $(ratio2 "$java25" "$limit")x"
echo "bci / floor: $(ratio "$bci" "$floor")x; events / bci: $(ratio "$events" "$bci")x; JVMPI counting agent / events: $(ratio "$jvmpi" "$events")x (target <= 1.0x)"
echo "format=tptp / binary: $(ratio "$tptp" "$bci")x to a file, $(ratio "$tptpnull" "$bcinull")x to /dev/null (a TPTP call is 169 bytes, a JinsightLive one 44)"
# What the floor allows on this machine: a JNI-trampoline tracer records each call with at
# least the floor's two natives, so no capture of that kind gets under it.
floor_call=$(echo "$floor / 3" | bc -l)
printf 'the floor allows: bci >= %.1f ns/call; events / bci <= %.1fx\n' \
    "$floor_call" "$(echo "$events / $floor" | bc -l)"
stolen_since "$started"
echo

echo "== rewriter: cost per class, without a JVM (Debian's h2.jar, unpacked)"
jar=/usr/share/java/h2.jar
if [ "${APPS:-1}" != 0 ] && [ ! -f "$jar" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq libh2-java libxalan2-java >/dev/null 2>&1 || true
fi
if [ -f "$jar" ]; then
    (cd "$work" && mkdir -p h2c && cd h2c && unzip -q -o "$jar")
    target/release/examples/instrument "$work/h2c" 2>/dev/null
fi
echo

writer_rounds=${WRITER_ROUNDS:-5}
echo "== writer throughput (synthetic entries and exits, 4 threads), each format, to a file and to /dev/null"
echo "   the median of $writer_rounds interleaved rounds (a file's dirty pages synced first); the ratios"
echo "   are the median of each round's own (the formats side by side within a round)"
declare -A wr
wrate() { sed -n 's/.*= \([0-9.]*\) M events.*/\1/p'; } # throughput's line -> M events/s
mbs() { sed -n 's/.*, \([0-9.]*\) MB\/s.*/\1/p'; }        # -> MB/s
ratios_file="" ratios_null="" bytes_file=""
for _ in $(seq "$writer_rounds"); do
    declare -A line=()
    for f in binary tptp; do
        sync
        line[$f.file]=$(target/release/examples/throughput 50000000 "$work/throughput.out" "$f")
        line[$f.null]=$(target/release/examples/throughput 50000000 /dev/null "$f")
        wr[$f.file]+="${line[$f.file]}"$'\n'
        wr[$f.null]+="${line[$f.null]}"$'\n'
    done
    ratios_file+="$(ratio2 "$(wrate <<<"${line[binary.file]}")" "$(wrate <<<"${line[tptp.file]}")")"$'\n'
    ratios_null+="$(ratio2 "$(wrate <<<"${line[binary.null]}")" "$(wrate <<<"${line[tptp.null]}")")"$'\n'
    bytes_file+="$(ratio2 "$(mbs <<<"${line[binary.file]}")" "$(mbs <<<"${line[tptp.file]}")")"$'\n'
done
for k in binary.file binary.null tptp.file tptp.null; do
    # The line whose M events/s is the median.
    printf '%s' "${wr[$k]}" | sort -t= -k2 -g | sed -n "$(((writer_rounds + 1) / 2))p"
done
echo "JinsightLive / TPTP binary events/s: $(printf '%s' "$ratios_null" | median)x to /dev/null (the sinks; target <= 1.2x); $(printf '%s' "$ratios_file" | median)x to a file, where a TPTP call is 169 bytes and a JinsightLive one 44, and the file's bytes/s are $(printf '%s' "$bytes_file" | median)x (the disk bounds both)"
sync
target/release/examples/throughput 10000000 "$work/throughput.out" tptp-xml
echo

[ "${APPS:-1}" = 0 ] && exit 0

once() { # command... -> wall seconds of one run (dirty pages of earlier runs synced first)
    sync
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    rm -f "$work"/app.trc
    echo "$e - $s" | bc -l
}
# The programs' columns after "no agent", as agent options. The paused ones: a JVM started
# paused that never opens a burst, its classes as they are until the first burst
# (instrument=auto), and every class rewritten as it loads (instrument=load).
app_setups=(capture=events capture=bci capture=bci,start=paused,control=off
    capture=bci,start=paused,instrument=load,control=off)
bound_call=$floor_call
app() { # name command... (the java command's arguments after the agent slot)
    local name=$1
    shift
    local times=() i plain t row verified lower=1
    # Interleaved, so that a machine that slows down or speeds up over the minutes this takes
    # moves every column alike.
    for _ in $(seq "$rounds"); do
        times[0]+="$(once "$java" "$@")"$'\n'
        for i in "${!app_setups[@]}"; do
            times[i + 1]+="$(once "$java" -agentpath:"$lib=${app_setups[i]},file=$work/app.trc" "$@")"$'\n'
        done
        if [ -n "${verify_cost:-}" ]; then
            # No agent, the boot classes loaded as the JVM loads every class an agent
            # rewrites: parsed from their bytes (no CDS) and, since JDK 24, verified.
            verified+="$(once "$java" -Xshare:off -XX:+UnlockDiagnosticVMOptions -XX:+BytecodeVerificationLocal "$@")"$'\n'
        fi
    done
    plain=$(printf '%s' "${times[0]}" | median)
    row=$(printf '%-34s %8.2f s' "$name" "$plain")
    for i in "${!app_setups[@]}"; do
        t=$(printf '%s' "${times[i + 1]}" | median)
        row+=$(printf ' %8.2f s (%5sx)' "$t" "$(ratio2 "$t" "$plain")")
    done
    # The bound: the program's traced calls (counted in one more bci trace) each at
    # CallBench's floor (JDK 17) or limit (JDK 25), added to its untraced time. No
    # JNI-trampoline tracer gets under the first, no tracer at all under the second;
    # interpreted calls cost more than CallBench's compiled ones, so both are low.
    rm -f "$work/count.log"
    "$java" -agentpath:"$lib=capture=bci,file=$work/count.trc,log=$work/count.log" "$@" >/dev/null 2>&1
    local calls leaves
    calls=$(target/release/jlive stats --top 0 "$work/count.trc" | awk '$1 == "METHOD_ENTER" {print $2}')
    # A leaf's entry and exit take one native call (the log counts them).
    leaves=$(sed -n 's/^jlive: \([0-9]*\) calls of leaves.*/\1/p' "$work/count.log")
    rm -f "$work/count.trc" "$work/count.log"
    t=$(echo "$plain + ${calls:-0} * $bound_call / 1000000000" | bc -l)
    row+=$(printf ' %7.1fM %5.2fx' "$(echo "${calls:-0} / 1000000" | bc -l)" "$(echo "$t / $plain" | bc -l)")
    if [ -n "${downcall_ns:-}" ]; then
        # The native calls the records take at least (jlive's wrapped calls of intrinsic
        # candidates make more), each at the cost of one of JDK 25's own FFM downcalls.
        local downcalls=$((2 * ${calls:-0} - ${leaves:-0}))
        lower=$(echo "1 + $downcalls * $downcall_ns / 1000000000 / $plain" | bc -l)
        row+=$(printf ' %7.1fM %5.2fx' "$(echo "$downcalls / 1000000" | bc -l)" "$lower")
    fi
    if [ -n "${verify_cost:-}" ]; then
        local v
        v=$(echo "($(printf '%s' "$verified" | median) - $plain) / $plain" | bc -l)
        row+=$(printf ' %+14.2fx %5.2fx' "$v" "$(echo "$lower + $v" | bc -l)")
    fi
    echo "$row"
}

mkdir -p "$work/javac-out"
cat > "$work/h2.sql" <<'SQL'
CREATE TABLE item(id INT PRIMARY KEY, name VARCHAR(40), price INT);
INSERT INTO item SELECT X, 'item-' || X, MOD(X * 37, 1000) FROM SYSTEM_RANGE(1, 20000);
CREATE INDEX item_price ON item(price);
SELECT COUNT(*), SUM(price) FROM item WHERE price < 500;
SQL
xalan=/usr/share/java/xalan2.jar:/usr/share/java/serializer.jar
if [ -f /usr/share/java/xalan2.jar ]; then
    {
        echo '<?xml version="1.0"?><orders>'
        for i in $(seq 1 2000); do echo "<order id=\"$i\"><item qty=\"$((i % 7 + 1))\" price=\"$((i % 13)).25\"/></order>"; done
        echo '</orders>'
    } > "$work/in.xml"
    cat > "$work/t.xsl" <<'XSL'
<?xml version="1.0"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="text"/>
  <xsl:template match="/"><xsl:for-each select="orders/order"><xsl:sort select="@id" data-type="number" order="descending"/><xsl:value-of select="@id"/>: <xsl:value-of select="sum(item/@qty)"/><xsl:text>&#10;</xsl:text></xsl:for-each></xsl:template>
</xsl:stylesheet>
XSL
fi
programs() { # one row per program, through app
    app "javac, one small file" -m jdk.compiler/com.sun.tools.javac.Main --release 8 -d "$work/javac-out" examples/Demo.java
    [ -f "$jar" ] && app "h2, 20,000-row script" -cp "$jar" org.h2.tools.RunScript -url jdbc:h2:mem:b -script "$work/h2.sql"
    [ -f /usr/share/java/xalan2.jar ] &&
        app "xalan, 2,000-order transform" -cp "$xalan" org.apache.xalan.xslt.Process -IN "$work/in.xml" -XSL "$work/t.xsl"
    return 0
}
echo "== real programs, every method traced, median of $rounds interleaved runs (wall time)"
printf '%-34s %10s %19s %19s %19s %19s %15s\n' program "no agent" "capture=events" "capture=bci" "bci, paused" "paused, at load" "calls, floor"
started=$(cpu_times)
programs
echo "targets (issue 30, on JDK 25 below): every method traced, javac <= 1.3x, h2 <= 2.0x, xalan <= 1.5x; paused <= 1.10x"
echo "calls, floor: the traced calls of one bci run, and the ratio they would give at CallBench's"
echo "  floor ($(printf '%.1f' "$floor_call") ns/call) with nothing else added: the least any JNI-trampoline tracer reaches here"
echo "bci, paused: no burst, classes as they are until the first (instrument=auto); paused, at"
echo "  load: every class rewritten as it loads (instrument=load)"
stolen_since "$started"
echo

if [ -x "$JDK25/bin/java" ]; then
    # Issue 30 sets its targets on JDK 25: every method traced, and paused.
    echo "== on JDK 25: the same programs, every method traced and paused, median of $rounds interleaved runs"
    printf '%-34s %10s %19s %19s %19s %15s %15s %15s %6s\n' program "no agent" "capture=bci" "bci, paused" "paused, at load" "calls, limit" "downcalls, FFM" "boot rewritten" "bound"
    started=$(cpu_times)
    (
        java=$JDK25/bin/java
        app_setups=(capture=bci capture=bci,start=paused,control=off capture=bci,start=paused,instrument=load,control=off)
        bound_call=$(echo "$limit / 3" | bc -l)
        [ -n "$ffm25" ] && downcall_ns=$(echo "$ffm25 / 6" | bc -l) verify_cost=1
        programs
    )
    echo "targets: every method traced, javac <= 1.3x, h2 <= 2.0x, xalan <= 1.5x; paused <= 1.10x"
    echo "calls, limit: the traced calls at CallBench's limit ($(printf '%.1f' "$(echo "$limit / 3" | bc -l)") ns/call, two TSC reads and stores in C)"
    echo "  with nothing else added: the least any tracer that reads the clock at each entry and exit reaches here"
    if [ -n "$ffm25" ]; then
        echo "downcalls, FFM: the native calls those calls take at least (two each, one for a leaf's entry and exit) at the cost"
        echo "  of JDK 25's own FFM critical downcall ($(printf '%.1f' "$(echo "$ffm25 / 6" | bc -l)") ns: FloorBench25's six per iteration) with nothing else added"
        echo "boot rewritten: what the program pays without an agent when its boot classes load as the JVM loads every class"
        echo "  an agent rewrites: from their bytes, not CDS, and verified as JDK 24+ does (-Xshare:off -XX:+BytecodeVerificationLocal)"
        echo "bound: the two together, the least a tracer that rewrites every method and calls native code reaches here"
    fi
    stolen_since "$started"
    echo
fi

if [ "${EXPORTS:-1}" = 1 ]; then
    # Reading a trace back (issue 28): javac's bci trace through every reader and export.
    "$java" -agentpath:"$lib=capture=bci,file=$work/javac.trc" -m jdk.compiler/com.sun.tools.javac.Main \
        --release 8 -d "$work/javac-out" examples/Demo.java >/dev/null 2>&1
    events=$(target/release/jlive stats --top 0 "$work/javac.trc" | awk '$1 == "events:" {print $2}')
    echo "== reading javac's bci trace back: $(printf '%.1f' "$(echo "$events / 1000000" | bc -l)")M events, $(($(wc -c <"$work/javac.trc") / 1048576)) MB; median of $rounds runs"
    printf '%-34s %10s %14s %12s\n' command wall "M events/s" "output MB"
    export_row() { # label command... (writing $work/out)
        local label=$1 times="" t s e
        shift
        for _ in $(seq "$rounds"); do
            sync
            s=$(date +%s.%N)
            "$@" >"$work/out.stdout" 2>/dev/null
            e=$(date +%s.%N)
            times+="$(echo "$e - $s" | bc -l)"$'\n'
        done
        t=$(printf '%s' "$times" | median)
        printf '%-34s %8.2f s %14.1f %12.1f\n' "$label" "$t" "$(echo "$events / $t / 1000000" | bc -l)" \
            "$(echo "$(cat "$work/out" "$work/out.stdout" 2>/dev/null | wc -c) / 1048576" | bc -l)"
        rm -f "$work/out" "$work/out.stdout"
    }
    export_row "jlive stats" target/release/jlive stats "$work/javac.trc"
    export_row "jlive tree" target/release/jlive tree "$work/javac.trc"
    for to in perfetto chrome speedscope collapsed svg; do
        export_row "jlive export --to $to" target/release/jlive export "$work/javac.trc" --to $to -o "$work/out"
    done
    rm -f "$work/javac.trc"
    echo
fi

if [ -f "$jar" ]; then
    # A long burst against the disk (since run 31): h2's traced run writes its trace faster
    # than a disk takes it; compress=gzip trades the writer's CPU for bytes.
    echo "== compress=gzip: h2's script, every method traced, median of $rounds interleaved runs"
    disk=$(dd if=/dev/zero of="$work/dd" bs=1M count=1024 conv=fdatasync 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
    rm -f "$work/dd"
    echo "this disk takes $disk (dd of 1 GiB, conv=fdatasync)"
    gz_once() { # agent options -> "seconds bytes"
        local s e size
        sync
        s=$(date +%s.%N)
        "$java" -agentpath:"$lib=$1,file=$work/gz.trc" -cp "$jar" org.h2.tools.RunScript \
            -url jdbc:h2:mem:b -script "$work/h2.sql" >/dev/null 2>&1
        e=$(date +%s.%N)
        size=$(cat "$work"/gz.trc* | wc -c)
        rm -f "$work"/gz.trc*
        echo "$(echo "$e - $s" | bc -l) $size"
    }
    gz_setups=(capture=bci capture=bci,compress=gzip capture=events capture=events,compress=gzip)
    declare -A gz_t gz_b
    started=$(cpu_times)
    for _ in $(seq "$rounds"); do
        for i in "${!gz_setups[@]}"; do
            read -r t b <<<"$(gz_once "${gz_setups[i]}")"
            gz_t[$i]+="$t"$'\n'
            gz_b[$i]+="$b"$'\n'
        done
    done
    printf '%-34s %10s %10s %12s %10s\n' setup wall "trace MB" "trace MB/s" "vs plain"
    for i in "${!gz_setups[@]}"; do
        t=$(printf '%s' "${gz_t[$i]}" | median)
        b=$(printf '%s' "${gz_b[$i]}" | median)
        if [ $((i % 2)) = 0 ]; then
            pt=$t pb=$b
            vs="1.00x"
        else
            vs="$(echo "$t / $pt" | bc -l | xargs printf '%.2f')x time, $(echo "$pb / $b" | bc -l | xargs printf '%.1f')x smaller"
        fi
        printf '%-34s %8.2f s %10.1f %12.1f %s\n' "${gz_setups[i]}" "$t" "$(echo "$b / 1048576" | bc -l)" \
            "$(echo "$b / 1048576 / $t" | bc -l)" "$vs"
    done
    stolen_since "$started"
    echo
fi

if [ -f "$jar" ]; then
    # record=tree (issue 28): each thread's calling-context tree per burst instead of every
    # call, against full tracing of the same script in both formats.
    echo "== record=tree: h2's script, every method traced (capture=bci), median of $rounds interleaved runs"
    tree_setups=(format=binary format=tptp record=tree)
    declare -A tr_t tr_b
    started=$(cpu_times)
    for _ in $(seq "$rounds"); do
        for i in "${!tree_setups[@]}"; do
            read -r t b <<<"$(gz_once "capture=bci,${tree_setups[i]}")"
            tr_t[$i]+="$t"$'\n'
            tr_b[$i]+="$b"$'\n'
        done
    done
    printf '%-34s %10s %12s %14s\n' setup wall "trace MB" "vs tptp size"
    full=$(printf '%s' "${tr_b[1]}" | median)
    for i in "${!tree_setups[@]}"; do
        t=$(printf '%s' "${tr_t[$i]}" | median)
        b=$(printf '%s' "${tr_b[$i]}" | median)
        printf '%-34s %8.2f s %12.1f %13.2f%%\n' "capture=bci,${tree_setups[i]}" "$t" \
            "$(echo "$b / 1048576" | bc -l)" "$(echo "100 * $b / $full" | bc -l)"
    done
    stolen_since "$started"
    echo
fi

if [ -f "$jar" ]; then
    # format=orca (issue 29): concurrency events only, recorded from start-up, against no agent.
    echo "== format=orca: h2's script, concurrency events from start-up, median of $rounds interleaved runs"
    orca_setups=("" "format=orca,capture=events" "format=orca,capture=bci")
    declare -A orca_t
    started=$(cpu_times)
    for _ in $(seq "$rounds"); do
        for i in "${!orca_setups[@]}"; do
            if [ -z "${orca_setups[i]}" ]; then
                orca_t[$i]+="$(once "$java" -cp "$jar" org.h2.tools.RunScript -url jdbc:h2:mem:b -script "$work/h2.sql")"$'\n'
            else
                orca_t[$i]+="$(once "$java" -agentpath:"$lib=${orca_setups[i]},file=$work/h2.orca" -cp "$jar" \
                    org.h2.tools.RunScript -url jdbc:h2:mem:b -script "$work/h2.sql")"$'\n'
            fi
        done
    done
    plain=$(printf '%s' "${orca_t[0]}" | median)
    for i in "${!orca_setups[@]}"; do
        t=$(printf '%s' "${orca_t[$i]}" | median)
        printf '%-34s %8.2f s %6.2fx\n' "${orca_setups[i]:-no agent}" "$t" "$(echo "$t / $plain" | bc -l)"
    done
    echo "target: within 1.10x of no agent; the last log: $(target/release/jlive check "$work/h2.orca" | cut -d: -f2-)"
    rm -f "$work/h2.orca" "$work/h2.orca.meta"
    stolen_since "$started"
    echo
fi

[ "${TOMCAT:-1}" = 0 ] && exit 0
catalina=/usr/share/tomcat10/bin/catalina.sh
if [ ! -x "$catalina" ] || ! command -v wrk >/dev/null; then
    echo "(no paused-Tomcat rows: apt-get install -y tomcat10 wrk)"
    exit 0
fi
. bench/tomcat-base.sh
tomcat_up() { # BASE PORT JAVA_HOME JLIVE_OPTIONS: runs Tomcat (its pid in tomcat_pid) until it serves
    CATALINA_HOME=/usr/share/tomcat10 CATALINA_BASE=$1 JAVA_HOME=$3 JLIVE_LIB=$lib \
        JLIVE_OPTIONS="$4" "$catalina" run >"$1/console.txt" 2>&1 &
    tomcat_pid=$!
    for _ in $(seq 300); do
        curl -s -o /dev/null "http://127.0.0.1:$2/index.html" && break
        sleep 0.2
    done
}
tomcat_rps() { # JLIVE_OPTIONS or "" [JAVA_HOME] -> "requests/s CPU-us/request" of wrk over 10 s, after 10 s of warm-up
    local base=$work/tomcat port=18089 pid out rps cpu home=${2:-$JAVA_HOME}
    tomcat_base "$base" "$port" "${1:+setenv}"
    tomcat_up "$base" "$port" "$home" "$1,control=off,file=$base/logs/t.trc"
    pid=$tomcat_pid
    wrk -t2 -c8 -d10s "http://127.0.0.1:$port/index.html" >/dev/null
    # The JVM's CPU time (utime + stime, in clock ticks) over the measured 10 s, per request:
    # what serving one costs, whatever share of the cores wrk left to Tomcat.
    cpu=$(jvm_ticks "$pid")
    out=$(wrk -t2 -c8 -d10s "http://127.0.0.1:$port/index.html")
    cpu=$(($(jvm_ticks "$pid") - cpu))
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    # format=orca records from start-up: its log must check, every pair balanced.
    case "$1" in *format=orca*) target/release/jlive check "$base/logs/t.trc" >"$work/tomcat-orca-check.txt" 2>&1 ;; esac
    awk -v rps="${rps:-0}" -v cpu="$cpu" -v hz="$(getconf CLK_TCK)" -v n="$(awk '/requests in/ {print $1}' <<<"$out")" \
        'BEGIN { printf "%s %.2f\n", rps, (n > 0 ? cpu / hz * 1e6 / n : 0) }'
}
jvm_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
echo "== Tomcat: a static page served to wrk (2 threads, 8 connections); paused (no burst), and"
echo "   format=orca recording its concurrency events from start-up"
tomcat_rounds=${TOMCAT_ROUNDS:-3}
echo "   requests/s over 10 s after 10 s of warm-up, and the JVM's CPU time per request meanwhile;"
echo "   medians of $tomcat_rounds interleaved rounds, the ratios the median of each round's own"
tomcat_setups=("" "start=paused,capture=events" "start=paused,capture=bci" "start=paused,capture=bci,instrument=load" "format=orca")
# format=orca's target on JDK 25 too (JDK 17 answers GetObjectMonitorUsage at a safepoint).
if [ -x "$JDK25/bin/java" ]; then
    tomcat_setups+=("jdk25:" "jdk25:format=orca")
fi
quotient() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > 0 ? a / b : 0) }'; }
first_index() { local i; for i in "${!tomcat_setups[@]}"; do [ "${tomcat_setups[i]}" = "$1" ] && echo "$i" && return; done; echo 0; }
declare -A rps cpr
started=$(cpu_times)
for r in $(seq "$tomcat_rounds"); do
    for i in "${!tomcat_setups[@]}"; do
        case ${tomcat_setups[i]} in
        jdk25:*) read -r "rps[$r,$i]" "cpr[$r,$i]" <<<"$(tomcat_rps "${tomcat_setups[i]#jdk25:}" "$JDK25")" ;;
        *) read -r "rps[$r,$i]" "cpr[$r,$i]" <<<"$(tomcat_rps "${tomcat_setups[i]}")" ;;
        esac
    done
done
# Each round's agent row against the same round's no-agent row (JDK 25's against JDK 25's):
# neighbours in time, so a slow or fast phase of the host moves both. The ratio printed is
# the median of the rounds' own ratios, beside the medians of requests/s themselves.
printf '%-46s %12s %11s %13s %11s\n' setup "req/s" "vs no agent" "CPU us/req" "vs no agent"
for i in "${!tomcat_setups[@]}"; do
    b=0
    case ${tomcat_setups[i]} in jdk25:*) b=$(first_index "jdk25:") ;; esac
    v=$(for r in $(seq "$tomcat_rounds"); do echo "${rps[$r,$i]}"; done | median)
    c=$(for r in $(seq "$tomcat_rounds"); do echo "${cpr[$r,$i]}"; done | median)
    vr=$(for r in $(seq "$tomcat_rounds"); do quotient "${rps[$r,$i]}" "${rps[$r,$b]}"; done | median)
    cr=$(for r in $(seq "$tomcat_rounds"); do quotient "${cpr[$r,$i]}" "${cpr[$r,$b]}"; done | median)
    name=${tomcat_setups[i]:-no agent}
    [ "$name" = "jdk25:" ] && name="JDK 25, no agent"
    printf '%-46s %12.0f %10.2fx %13.1f %10.2fx\n' "$name" "$v" "$vr" "$c" "$cr"
done
echo "targets: paused >= 0.98x; format=orca >= 0.95x; its last log: $(cut -d: -f2- "$work/tomcat-orca-check.txt" 2>/dev/null)"
stolen_since "$started"

# The first burst of a paused Tomcat (instrument=auto) retransforms every class loaded by then.
stopped_by_redefinition() { # -Xlog:safepoint's file -> the RedefineClasses safepoints' count, sum and longest
    [ -r "$1" ] || { printf 'no safepoint log'; return; }
    awk '/Safepoint "RedefineClasses"/ {
            for (i = 1; i <= NF; i++) if ($i == "Total:") { t = $(i + 1) / 1e6; n++; sum += t; if (t > max) max = t }
         }
         END { printf "the application stopped %d times, %.0f ms in all, the longest %.0f ms", n, sum, max }' "$1"
}
# An application in the Tomcat of the first burst (TomcatWork.java: H2 and Xalan from its
# WEB-INF/lib), so that the burst finds 5,000 classes and more loaded, as issue 30 asks.
work_app=""
if [ -f /usr/share/java/h2.jar ] && [ -f /usr/share/java/xalan2.jar ] &&
    "$JAVA_HOME/bin/javac" -d "$work/tomcat-work" \
        -cp /usr/share/tomcat10/lib/servlet-api.jar:/usr/share/java/h2.jar:/usr/share/java/xalan2.jar \
        bench/TomcatWork.java; then
    work_app=$work/tomcat-work
fi
add_work_app() { # CATALINA_BASE: deploys TomcatWork at /work/run
    local app=$1/webapps/work/WEB-INF
    mkdir -p "$app/classes" "$app/lib"
    cp "$work_app/TomcatWork.class" "$app/classes/"
    cp -L /usr/share/java/h2.jar /usr/share/java/xalan2.jar /usr/share/java/serializer.jar "$app/lib/"
    cat >"$app/web.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
  <servlet><servlet-name>work</servlet-name><servlet-class>TomcatWork</servlet-class></servlet>
  <servlet-mapping><servlet-name>work</servlet-name><url-pattern>/run</url-pattern></servlet-mapping>
</web-app>
XML
}
tomcat_first_burst() { # JAVA_HOME idle|loaded -> jlive ctl start's answer and its wall time
    local base=$work/tomcat port=18089 pid sock=$work/tomcat.sock s e answer w="" ran="" loaded
    tomcat_base "$base" "$port" setenv
    [ -z "$work_app" ] || add_work_app "$base"
    # The safepoints' log: how long the application stood still while the burst began.
    JAVA_OPTS="-Xlog:safepoint=info:file=$base/logs/safepoints.txt" \
        tomcat_up "$base" "$port" "$1" "start=paused,capture=bci,control=$sock,file=$base/logs/t.trc"
    pid=$tomcat_pid
    [ -z "$work_app" ] || ran="; the application's request answered $(curl -s "http://127.0.0.1:$port/work/run" | tr -d "\r\n" | head -c 40)"
    wrk -t2 -c8 -d5s --latency "http://127.0.0.1:$port/index.html" >"$work/wrk-before.txt"
    # Every class the JVM holds (the CDS archive's and the others), unloaded ones left out.
    loaded=$("$1/bin/jcmd" "$pid" PerfCounter.print 2>/dev/null | awk -F= '
        /^java\.cls\.(shared)?[lL]oadedClasses=/ { n += $2 } /^java\.cls\.(shared)?[uU]nloadedClasses=/ { n -= $2 }
        END { print n + 0 }')
    if [ "$2" = loaded ]; then
        wrk -t2 -c8 -d6s --latency "http://127.0.0.1:$port/index.html" >"$work/wrk-during.txt" &
        w=$!
        sleep 2
    else
        sleep 1
    fi
    s=$(date +%s.%N)
    answer=$(target/release/jlive ctl --socket "$sock" start 2>&1 || true)
    e=$(date +%s.%N)
    [ -z "$w" ] || wait "$w"
    target/release/jlive ctl --socket "$sock" stop >/dev/null 2>&1 || true
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    printf '%s classes loaded%s; %s; jlive ctl start returned after %.2f s; %s%s\n' "$loaded" "$ran" "$answer" "$(echo "$e - $s" | bc -l)" \
        "$(stopped_by_redefinition "$base/logs/safepoints.txt")" \
        "$([ -z "$w" ] || printf '; the slowest request of the 6 s around it %s, its 99th percentile %s (the 5 s before: %s, %s)' \
            "$(slowest "$work/wrk-during.txt")" "$(p99 "$work/wrk-during.txt")" "$(slowest "$work/wrk-before.txt")" "$(p99 "$work/wrk-before.txt")")"
}
slowest() { awk '$1 == "Latency" && NF >= 4 {print $4; exit}' "$1"; } # wrk --latency's output -> its Max
p99() { awk '$1 == "99%" {print $2}' "$1"; }
echo
echo "== Tomcat's first burst, paused: every class loaded so far instrumented before it records"
[ -n "$work_app" ] && echo "   (with an application, bench/TomcatWork.java, whose one request loaded H2 and Xalan)"
started=$(cpu_times)
for home in "$JAVA_HOME" ${JDK25:+$([ -x "$JDK25/bin/java" ] && echo "$JDK25")}; do
    for load in idle loaded; do
        printf '%-10s %-7s %s\n' "$(basename "$home" | cut -d- -f1-2)" "$load" "$(tomcat_first_burst "$home" "$load")"
    done
done
echo "target: under a second (loaded: wrk keeps both cores busy meanwhile). The application"
echo "  stops only at the RedefineClasses safepoints; the rest of the wait runs beside it, and"
echo "  the slowest request says what a client of the loaded Tomcat waited at most"
stolen_since "$started"
