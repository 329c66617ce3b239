#!/usr/bin/env bash
# Coverage overhead, side by side. Usage: scripts/bench-coverage.sh [rhino|startup|javac|all]
# rhino: wall time of Debian's rhino running acorn.js (Debian node-acorn) to parse its own
# source three times, bare vs rhino instrumented offline by `bci instrument --coverage` (run
# with the runtime jar) vs the bci agent (coverage=y,include=org.mozilla.*) vs JaCoCo 0.8.6's
# agent (Debian libjacoco-java) on the same classes (includes=org.mozilla.*).
# startup: rhino evaluating print(1) (a short JVM), 5 x RUNS runs, the agent as it runs (no
# early class hook: class-data sharing stays on) and with the early hook (BCIAGENT_EARLY_HOOK=1).
# javac: JDK 17's javac compiling the top-level java/util sources of src.zip (Debian
# openjdk-17-source), bare vs the bci agent vs JaCoCo's agent, both instrumenting javac's own
# classes, com.sun.tools.javac.* (module jdk.compiler, loaded by the application class loader,
# so JaCoCo takes them without inclbootstrapclasses).
# Medians of RUNS (default 3) interleaved runs (the order rotated by one each round) of wall
# time and of CPU time (user + sys); prints the ratios. Not a test.
# To compare builds in one run: AGENTS="old=/path/libbciagent.so new=..." replaces the agent
# row by one row per library; BCIS="old=/path/bci new=..." does the same for the offline row
# (each bci instruments rhino and writes its own runtime jar). Fetches the two
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
# label=path pairs: the agent libraries and bci binaries to compare (default: this build's)
read -r -a agents <<<"${AGENTS:-this=$agent}"
read -r -a bcis <<<"${BCIS:-this=$bci}"
for b in "${bcis[@]}"; do
    "${b#*=}" instrument --coverage "$rhino" "rhino-cov-${b%%=*}.jar" >/dev/null
    "${b#*=}" runtime-jar "bci-runtime-${b%%=*}.jar" >/dev/null
done
unzip -q -o "$JAVA_HOME/lib/src.zip" 'java.base/java/util/*' -d "$work/src"

# Runs a command; prints "wall_ms cpu_ms" (cpu: user + sys of the JVM, all its threads, from
# /proc/self/stat of the subshell's children: steadier than wall time on a loaded machine).
time_ms() {
    local t0 t1
    t0=$(date +%s%N)
    (
        "$@" >"$work/last.out" 2>"$work/last.err" || { cat "$work/last.err" >&2; exit 1; }
        # cutime + cstime (fields 16, 17) of this subshell: the command's CPU time, in ticks
        read -r -a st </proc/self/stat
        echo $(((st[15] + st[16]) * 1000 / $(getconf CLK_TCK))) >"$work/last.cpu"
    ) || exit 1
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000000)) $(cat "$work/last.cpu")"
}
wall() { for x in "$@"; do echo "${x% *}"; done; }
cpu() { for x in "$@"; do echo "${x#* }"; done; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
# paired BARE_CPUS VARIANT_CPUS: the median of the rounds' CPU ratios (variant / bare of the
# same round), steadier than the ratio of the medians when the machine's load drifts
paired() {
    local -a b v
    read -r -a b <<<"$1"
    read -r -a v <<<"$2"
    local i out=""
    for ((i = 0; i < ${#b[@]} && i < ${#v[@]}; i++)); do
        out+="$(awk -v a="${v[$i]}" -v c="${b[$i]}" 'BEGIN { printf "%.4f ", a / c }')"
    done
    echo "$out" | median | awk '{ printf "%.2fx", $1 }'
}
# table TITLE BARE_ARRAY [LABEL ARRAY]...: medians of wall and CPU ms, ratios to bare (of the
# medians, and paired: the median of the rounds' own CPU ratios)
table() {
    local title=$1 base=$2; shift 2
    local -n b_=$base
    local bw bc
    bw=$(wall "${b_[@]}" | median); bc=$(cpu "${b_[@]}" | median)
    echo "$title, $runs interleaved runs (wall ms cpu ms per run: bare ${b_[*]}); load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-28s %9s %7s %9s %7s %7s\n' run wall ratio cpu ratio paired
    printf '%-28s %9d %7s %9d %7s %7s\n' bare "$bw" 1.00x "$bc" 1.00x 1.00x
    local bcs
    bcs=$(cpu "${b_[@]}" | tr '\n' ' ')
    while [ $# -gt 0 ]; do
        local -n v_=$2
        local w c
        w=$(wall "${v_[@]}" | median); c=$(cpu "${v_[@]}" | median)
        printf '%-28s %9d %7s %9d %7s %7s\n' "$1" "$w" "$(ratio "$w" "$bw")" "$c" "$(ratio "$c" "$bc")" \
            "$(paired "$bcs" "$(cpu "${v_[@]}" | tr '\n' ' ')")"
        echo "    ($1 per run: ${v_[*]})"
        unset -n v_
        shift 2
    done
}

# rounds VARIANT... : runs the variants RUNS times, each round in an order rotated by one
# (round r starts at variant r-1), so that every variant takes every place in the round
# (the run right after bare ran ~9 % lower in bench-cpu-times.sh); run_one VARIANT prints the
# "wall_ms cpu_ms" of one run, appended to the array named VARIANT
rounds() {
    local n=$# r i
    local vs=("$@")
    for r in $(seq "$runs"); do
        for ((i = 0; i < n; i++)); do
            local v=${vs[$(((i + r - 1) % n))]}
            local -n a_=$v
            a_+=("$(run_one "$v")")
            unset -n a_
        done
    done
}

if [ "$what" = rhino ] || [ "$what" = all ]; then
main=org.mozilla.javascript.tools.shell.Main
bare=(); jac=(); rows=(); variants=(bare)
for b in "${bcis[@]}"; do declare -a "off_${b%%=*}=()"; rows+=("bci coverage (offline, ${b%%=*})" "off_${b%%=*}"); variants+=("off_${b%%=*}"); done
for a in "${agents[@]}"; do declare -a "ag_${a%%=*}=()"; rows+=("bci coverage (agent, ${a%%=*})" "ag_${a%%=*}"); variants+=("ag_${a%%=*}"); done
variants+=(jac)
run_one() {
    local x
    case $1 in
    bare) time_ms "$java" -cp "$rhino" $main driver.js ;;
    off_*)
        l=${1#off_}
        rm -f bci.cov
        time_ms "$java" -Dbci.covfile="$work/bci.cov" -cp "rhino-cov-$l.jar:bci-runtime-$l.jar" $main driver.js
        ;;
    ag_*)
        for x in "${agents[@]}"; do
            if [ "${x%%=*}" = "${1#ag_}" ]; then
                rm -f agent.cov
                time_ms "$java" -agentpath:"${x#*=}"=coverage=y,include='org.mozilla.*',covfile="$work/agent.cov" -cp "$rhino" $main driver.js
            fi
        done
        ;;
    jac)
        rm -f jacoco.exec
        time_ms "$java" -javaagent:"$work/jacocoagent.jar"=destfile="$work/jacoco.exec",includes='org.mozilla.*' -cp "$rhino" $main driver.js
        ;;
    esac
}
rounds "${variants[@]}"
table "rhino + acorn.js" bare "${rows[@]}" "JaCoCo 0.8.6 agent" jac
fi

if [ "$what" = startup ] || [ "$what" = all ]; then
# a short JVM (what a test runner forking one per test class pays): rhino evaluating
# print(1), 5x RUNS runs; the agent without the early class hook (include= matches no
# java.*/jdk.*/sun.* class: class-data sharing stays on) and with it (BCIAGENT_EARLY_HOOK=1)
main=org.mozilla.javascript.tools.shell.Main
bare=(); jac=(); rows=(); variants=(bare)
for a in "${agents[@]}"; do
    l=${a%%=*}
    declare -a "st_$l=()" "ste_$l=()"
    rows+=("bci coverage (agent, $l)" "st_$l" "  with the early hook ($l)" "ste_$l")
    variants+=("st_$l" "ste_$l")
done
variants+=(jac)
run_one() {
    local x
    case $1 in
    bare) time_ms "$java" -cp "$rhino" $main -e 'print(1)' ;;
    st_* | ste_*)
        for x in "${agents[@]}"; do
            if [ "${x%%=*}" = "${1#*_}" ]; then
                rm -f agent.cov
                if [ "${1%%_*}" = ste ]; then
                    BCIAGENT_EARLY_HOOK=1 time_ms "$java" -agentpath:"${x#*=}"=coverage=y,include='org.mozilla.*',covfile="$work/agent.cov" -cp "$rhino" $main -e 'print(1)'
                else
                    time_ms "$java" -agentpath:"${x#*=}"=coverage=y,include='org.mozilla.*',covfile="$work/agent.cov" -cp "$rhino" $main -e 'print(1)'
                fi
            fi
        done
        ;;
    jac)
        rm -f jacoco.exec
        time_ms "$java" -javaagent:"$work/jacocoagent.jar"=destfile="$work/jacoco.exec",includes='org.mozilla.*' -cp "$rhino" $main -e 'print(1)'
        ;;
    esac
}
runs0=$runs
runs=$((5 * runs0))
rounds "${variants[@]}"
table "rhino -e 'print(1)' (startup)" bare "${rows[@]}" "JaCoCo 0.8.6 agent" jac
runs=$runs0
fi

if [ "$what" = javac ] || [ "$what" = all ]; then
javac=$JAVA_HOME/bin/javac
srcs=("$work"/src/java.base/java/util/*.java)
jc() { rm -rf "$work/out"; mkdir -p "$work/out"; time_ms "$javac" "$@" -nowarn -XDignore.symbol.file --patch-module java.base="$work/src/java.base" -d "$work/out" "${srcs[@]}"; }
bare=(); jac=(); rows=(); variants=(bare)
for a in "${agents[@]}"; do declare -a "jag_${a%%=*}=()"; rows+=("bci coverage (agent, ${a%%=*})" "jag_${a%%=*}"); variants+=("jag_${a%%=*}"); done
variants+=(jac)
run_one() {
    local x
    case $1 in
    bare) jc ;;
    jag_*)
        for x in "${agents[@]}"; do
            if [ "${x%%=*}" = "${1#jag_}" ]; then
                rm -f agent.cov
                jc -J-agentpath:"${x#*=}"=coverage=y,include='com.sun.tools.javac.*',covfile="$work/agent.cov"
            fi
        done
        ;;
    jac)
        rm -f jacoco.exec
        jc -J-javaagent:"$work/jacocoagent.jar"=destfile="$work/jacoco.exec",includes='com.sun.tools.javac.*'
        # JaCoCo 0.8.6 (ASM 8) refuses classes with PermittedSubclasses and leaves them original
        grep -c 'IllegalClassFormatException: Error while instrumenting' "$work/last.err" >"$work/jac_left" || true
        ;;
    esac
}
rounds "${variants[@]}"
table "javac, ${#srcs[@]} java/util sources" bare "${rows[@]}" "JaCoCo 0.8.6 agent" jac
echo "(JaCoCo left $(cat "$work/jac_left") of javac's classes original: IllegalClassFormatException on its stderr)"
fi
