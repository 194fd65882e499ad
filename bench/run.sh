#!/usr/bin/env bash
# jlive's benchmark: one table, measured in one run, side by side with the anchors of
# DESIGN.md. Not a test: it asserts nothing, it reports.
#
#   bench/run.sh            # CallBench (5 runs each, median), writer throughput, h2
#
# Needs: a JDK 17, gcc, and for the h2 row Debian's libh2-java (installed if apt-get can).
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$JAVA_HOME/bin/java
runs=${RUNS:-5}
iterations=${ITERATIONS:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q --workspace
lib=$PWD/target/release/libjlive.so
"$JAVA_HOME/bin/javac" -d "$work" bench/CallBench.java
gcc -O2 -shared -fPIC -I"$JAVA_HOME/include" -I"$JAVA_HOME/include/linux" \
    -o "$work/libempty.so" bench/empty_agent.c

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

callbench() { # agent-args...
    for _ in $(seq "$runs"); do
        "$java" "$@" -cp "$work" CallBench "$iterations" 50000 | sed 's/ns_per_iteration=//'
    done | median
}

echo "CallBench: loop -> mid -> leaf, 3 traced calls per iteration; median of $runs runs"
echo "JDK: $("$java" -version 2>&1 | head -1); $(nproc) cores"
printf '%-44s %12s %12s %10s\n' setup "ns/iter" "ns/call" "vs empty"
none=$(callbench)
empty=$(callbench -agentpath:"$work/libempty.so")
events=$(callbench -agentpath:"$lib=capture=events,file=$work/cb.trc")
row() { printf '%-44s %12.1f %12.1f %10s\n' "$1" "$2" "$(echo "$2 / 3" | bc -l)" "$3"; }
row "no agent" "$none" "-"
row "JVMTI empty callbacks (measured here)" "$empty" "1.00"
row "jlive capture=events, trace to file" "$events" "$(printf '%.2f' "$(echo "$events / $empty" | bc -l)")"
echo "anchors (DESIGN.md, same kind of machine): empty callbacks 1012 ns/iter,"
echo "  published C JinsightLive agent 1380 ns/iter (1.36x empty), JFR method-trace 1611"
echo "jlive / C agent, scaled by the empty-callback floor: $(printf '%.2f' "$(echo "($events / $empty) / (1380 / 1012)" | bc -l)")"
echo

cargo run --release -q -p jlive-writer --example throughput -- 50000000 "$work/throughput.trc"
echo

jar=/usr/share/java/h2.jar
if [ ! -f "$jar" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq libh2-java >/dev/null 2>&1 || true
fi
if [ -f "$jar" ]; then
    cat > "$work/h2.sql" <<'SQL'
CREATE TABLE item(id INT PRIMARY KEY, name VARCHAR(40), price INT);
INSERT INTO item SELECT X, 'item-' || X, MOD(X * 37, 1000) FROM SYSTEM_RANGE(1, 20000);
CREATE INDEX item_price ON item(price);
SELECT COUNT(*), SUM(price) FROM item WHERE price < 500;
SQL
    h2() { # agent-args...
        for _ in 1 2 3; do
            s=$(date +%s.%N)
            "$java" "$@" -cp "$jar" org.h2.tools.RunScript -url jdbc:h2:mem:b -script "$work/h2.sql" >/dev/null
            echo "$(date +%s.%N) - $s" | bc -l
            rm -f "$work/h2.trc"
        done | median
    }
    plain=$(h2)
    traced=$(h2 -agentpath:"$lib=capture=events,file=$work/h2.trc")
    printf 'h2 SQL script (20,000-row insert, index, query), median of 3:\n'
    printf '  no agent %.2f s, jlive capture=events %.2f s = %.1fx (anchor: empty callbacks 0.91 s -> 14.4 s = 15.8x)\n' \
        "$plain" "$traced" "$(echo "$traced / $plain" | bc -l)"
else
    echo "h2: skipped (no /usr/share/java/h2.jar; apt-get install libh2-java)"
fi
