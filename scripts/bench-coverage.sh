#!/usr/bin/env bash
# Coverage overhead, side by side. Usage: scripts/bench-coverage.sh [rhino|javac|all]
# rhino: wall time of Debian's rhino running acorn.js (Debian node-acorn) to parse its own
# source three times, bare vs rhino instrumented offline by `bci instrument --coverage` (run
# with the runtime jar) vs the bci agent (coverage=y,include=org.mozilla.*) vs JaCoCo 0.8.6's
# agent (Debian libjacoco-java) on the same classes (includes=org.mozilla.*).
# javac: JDK 17's javac compiling the top-level java/util sources of src.zip (Debian
# openjdk-17-source), bare vs the bci agent vs JaCoCo's agent, both instrumenting javac's own
# classes, com.sun.tools.javac.* (module jdk.compiler, loaded by the application class loader,
# so JaCoCo takes them without inclbootstrapclasses).
# Medians of RUNS (default 3) interleaved runs; prints the ratios. Not a test. Fetches the two
# .deb files with `apt-get download` (no install) into a temp dir.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$JAVA_HOME/bin/java
"$here/scripts/setup.sh"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
cargo build -q -p bci-cli -p bci-agent --release --manifest-path "$here/Cargo.toml"
bci=$CARGO_TARGET_DIR/release/bci
agent=$CARGO_TARGET_DIR/release/libbciagent.so
what=${1:-all}
work=$(mktemp -d /tmp/bench-coverage.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download -qq node-acorn libjacoco-java >/dev/null
dpkg-deb -x node-acorn_*.deb acorn
dpkg-deb -x libjacoco-java_*.deb jacoco
acorn=$(find "$work/acorn" -path '*acorn/dist/acorn.js' | head -1)
agentjar=$(find "$work/jacoco" -name 'org.jacoco.agent-0*.jar' | head -1)
unzip -q -o "$agentjar" jacocoagent.jar -d "$work"
rhino=/usr/share/java/rhino.jar
cat > driver.js <<JS
load("$acorn");
var src = readFile("$acorn");
var n = 0;
for (var i = 0; i < 3; i++) { n += acorn.parse(src, {ecmaVersion: 2020}).body.length; }
print(n);
JS
"$bci" instrument --coverage "$rhino" rhino-cov.jar >/dev/null
"$bci" runtime-jar bci-runtime.jar >/dev/null
unzip -q -o "$JAVA_HOME/lib/src.zip" 'java.base/java/util/*' -d "$work/src"

time_ms() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >"$work/last.out" 2>"$work/last.err" || { cat "$work/last.err" >&2; exit 1; }
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

if [ "$what" = rhino ] || [ "$what" = all ]; then
main=org.mozilla.javascript.tools.shell.Main
bare=(); bci_t=(); bci_a=(); jac=()
for r in $(seq "$runs"); do
    bare+=("$(time_ms "$java" -cp "$rhino" $main driver.js)")
    rm -f bci.cov
    bci_t+=("$(time_ms "$java" -Dbci.covfile="$work/bci.cov" -cp rhino-cov.jar:bci-runtime.jar $main driver.js)")
    rm -f agent.cov
    bci_a+=("$(time_ms "$java" -agentpath:"$agent"=coverage=y,include='org.mozilla.*',covfile="$work/agent.cov" -cp "$rhino" $main driver.js)")
    rm -f jacoco.exec
    jac+=("$(time_ms "$java" -javaagent:"$work/jacocoagent.jar"=destfile="$work/jacoco.exec",includes='org.mozilla.*' -cp "$rhino" $main driver.js)")
done
b=$(echo "${bare[*]}" | median); c=$(echo "${bci_t[*]}" | median); a=$(echo "${bci_a[*]}" | median); j=$(echo "${jac[*]}" | median)
echo "rhino + acorn.js, $runs interleaved runs, wall ms (all: ${bare[*]} | ${bci_t[*]} | ${bci_a[*]} | ${jac[*]})"
printf '%-28s %8s %8s\n' run median ratio
printf '%-28s %8d %8s\n' bare "$b" 1.00x
printf '%-28s %8d %8s\n' "bci coverage (offline)" "$c" "$(ratio "$c" "$b")"
printf '%-28s %8d %8s\n' "bci coverage (agent)" "$a" "$(ratio "$a" "$b")"
printf '%-28s %8d %8s\n' "JaCoCo 0.8.6 agent" "$j" "$(ratio "$j" "$b")"
fi

if [ "$what" = javac ] || [ "$what" = all ]; then
javac=$JAVA_HOME/bin/javac
srcs=("$work"/src/java.base/java/util/*.java)
jc() { rm -rf "$work/out"; mkdir -p "$work/out"; time_ms "$javac" "$@" -nowarn -XDignore.symbol.file --patch-module java.base="$work/src/java.base" -d "$work/out" "${srcs[@]}"; }
bare=(); bci_a=(); jac=()
for r in $(seq "$runs"); do
    bare+=("$(jc)")
    rm -f agent.cov
    bci_a+=("$(jc -J-agentpath:"$agent"=coverage=y,include='com.sun.tools.javac.*',covfile="$work/agent.cov")")
    rm -f jacoco.exec
    jac+=("$(jc -J-javaagent:"$work/jacocoagent.jar"=destfile="$work/jacoco.exec",includes='com.sun.tools.javac.*')")
done
b=$(echo "${bare[*]}" | median); a=$(echo "${bci_a[*]}" | median); j=$(echo "${jac[*]}" | median)
echo "javac, ${#srcs[@]} java/util sources, $runs interleaved runs, wall ms (all: ${bare[*]} | ${bci_a[*]} | ${jac[*]})"
printf '%-28s %8s %8s\n' run median ratio
printf '%-28s %8d %8s\n' bare "$b" 1.00x
printf '%-28s %8d %8s\n' "bci coverage (agent)" "$a" "$(ratio "$a" "$b")"
printf '%-28s %8d %8s\n' "JaCoCo 0.8.6 agent" "$j" "$(ratio "$j" "$b")"
fi
