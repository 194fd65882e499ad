#!/usr/bin/env bash
# Builds jlive_VERSION_ARCH.deb with dpkg-deb: what the app-server drop-ins expect under
# /opt/jlive, the jlive command on the PATH, and its man page.
#
#   packaging/build-deb.sh [--no-build] [OUTDIR]     (default OUTDIR: target/deb)
#
# --no-build packages what target/release already holds, or the files $JLIVE_LIB, $JLIVE_BIN
# and $JLIVE_API_JAR name (the tests give theirs).
#
#   /opt/jlive/libjlive.so            the agent (-agentpath:/opt/jlive/libjlive.so=...)
#   /opt/jlive/jlive                  the command; /usr/bin/jlive links to it, and it finds
#                                     libjlive.so next to itself
#   /opt/jlive/jlive-api.jar          jlive.Jlive and VA/Java's InstrumentVMSupport
#   /opt/jlive/appserver/...          the drop-ins for Tomcat, Jetty, systemd, any JVM
#   /usr/share/man/man1/jlive.1.gz    man jlive
#   /usr/share/doc/jlive/copyright
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
if [ "${1:-}" = --no-build ]; then
    build=0
    shift
fi
out=$(realpath -m "${1:-target/deb}")
[ "$build" = 1 ] && cargo build --release --workspace

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
lib=${JLIVE_LIB:-target/release/libjlive.so}
bin=${JLIVE_BIN:-target/release/jlive}
jar=${JLIVE_API_JAR:-target/release/jlive-api.jar}
for f in "$lib" "$bin" "$jar"; do
    [ -f "$f" ] || { echo "build-deb: $f is missing (cargo build --release --workspace)" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/jlive_${version}_$arch"
mkdir -p "$root"/{DEBIAN,opt/jlive,usr/bin,usr/share/man/man1,usr/share/doc/jlive}
install -m 0755 "$lib" "$root/opt/jlive/libjlive.so"
install -m 0755 "$bin" "$root/opt/jlive/jlive"
install -m 0644 "$jar" "$root/opt/jlive/jlive-api.jar"
strip --strip-debug "$root/opt/jlive/libjlive.so" "$root/opt/jlive/jlive"
cp -r examples/appserver "$root/opt/jlive/appserver"
chmod -R u=rwX,go=rX "$root/opt/jlive/appserver"
ln -s ../../opt/jlive/jlive "$root/usr/bin/jlive"
# The man page holds `jlive help` and the agent's own option list, so that it says what
# this build does.
roff() { sed -e 's/\\/\\e/g' -e 's/—/\\(em/g' -e "s/^\([.']\)/\\\\\&\1/"; }
java=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}/bin/java
"$bin" help | roff >"$stage/usage"
"$java" -agentpath:"$(realpath "$lib")=help" -version 2>/dev/null |
    sed -n '/options (values/,$ s/^jlive:   //p' | roff >"$stage/options"
[ -s "$stage/options" ] || { echo "build-deb: no agent options from $java" >&2; exit 1; }
date=$(date -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)" +%Y-%m-%d)
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$date/" packaging/jlive.1.in |
    sed -e "/@USAGE@/{r $stage/usage" -e 'd}' -e "/@AGENT_OPTIONS@/{r $stage/options" -e 'd}' |
    gzip -9n >"$root/usr/share/man/man1/jlive.1.gz"
cat >"$root/usr/share/doc/jlive/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: jlive

Files: *
License: MIT or Apache-2.0
COPYRIGHT

# The newest glibc symbol version the two binaries need.
glibc=$(objdump -T "$root/opt/jlive/libjlive.so" "$root/opt/jlive/jlive" |
    grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
size=$(du -sk "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: jlive
Version: $version
Architecture: $arch
Maintainer: jlive developers <jlive@localhost>
Installed-Size: $size
Depends: libc6 (>= $glibc)
Recommends: default-jre-headless | java-runtime-headless
Section: devel
Priority: optional
Description: tracing profiler that lives inside the JVM
 libjlive.so records every method entry and exit of a Java program (JVMTI
 events or bytecode instrumentation) into JinsightLive or Eclipse TPTP traces,
 in bursts taken while the program runs. The jlive command runs, attaches to
 and drives JVMs, and reads, checks, summarises and exports traces (Perfetto,
 Chrome, speedscope, flame graphs). Drop-ins for Tomcat, Jetty and systemd
 services are in /opt/jlive/appserver.
CONTROL

mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out/jlive_${version}_$arch.deb" >/dev/null
echo "$out/jlive_${version}_$arch.deb"
