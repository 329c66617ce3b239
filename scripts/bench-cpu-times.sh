#!/usr/bin/env bash
# Overhead of the bciagent cpu=times profile: wall time instrumented / bare, medians of RUNS runs
# (default 3) run side by side (bare, agent, agent with probes off, alternating), on
#   fib:     test-classes/Fib.java (recursive fib(30) x20 + a 100M-call leaf method)
#   threads: test-classes/ParallelLeaf.java (8 threads x 10M calls of a leaf method)
#   javac: javac compiling java.base/java/util/*.java from the JDK's src.zip (openjdk-17-source)
# "probes off" (BCIAGENT_PROBES_OFF=1) rewrites every class but never records: the cost of the
# added bytecode alone. Not a test: prints a table. Usage:
#   scripts/bench-cpu-times.sh [fib|threads|javac|all]     RUNS=5 OPTS=clock=wall scripts/bench-cpu-times.sh
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
runs=${RUNS:-3}
opts=${OPTS:-}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$JAVA_HOME/bin/java
javac=$JAVA_HOME/bin/javac
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}

cargo build -q -p bci-agent --release --manifest-path "$here/Cargo.toml"
lib=$CARGO_TARGET_DIR/release/libbciagent.so
work=$(mktemp -d /tmp/bench-cpu-times.XXXXXX)
trap 'rm -rf "$work"' EXIT

# time_ms CMD... : wall milliseconds of one run (output discarded, failure is fatal)
time_ms() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >"$work/last.out" 2>"$work/last.err" || { cat "$work/last.err" >&2; exit 1; }
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# bench NAME SETUP_FN CMD... : runs bare / agent / probes-off alternately, prints medians
bench() {
    local name=$1 setup=$2
    shift 2
    local bare="" agent="" off=""
    for ((i = 1; i <= runs; i++)); do
        $setup
        bare+=" $(time_ms "$java" "$@")"
        $setup
        agent+=" $(time_ms "$java" "-agentpath:$lib=file=$work/$name.hprof.txt${opts:+,$opts}" "$@")"
        $setup
        off+=" $(time_ms env BCIAGENT_PROBES_OFF=1 "$java" "-agentpath:$lib=file=$work/off.txt" "$@")"
    done
    local mb ma mo
    mb=$(echo "$bare" | median)
    ma=$(echo "$agent" | median)
    mo=$(echo "$off" | median)
    local clock
    clock=$(grep -o 'clock=[a-z]*' "$work/$name.hprof.txt" | head -1)
    printf '%-6s runs=%d  bare %6d ms  agent %6d ms (%s)  ratio %5.2fx  | probes off %6d ms  ratio %5.2fx\n' \
        "$name" "$runs" "$mb" "$ma" "$clock" "$(echo "$ma $mb" | awk '{print $1/$2}')" \
        "$mo" "$(echo "$mo $mb" | awk '{print $1/$2}')"
    echo "        bare:$bare  agent:$agent  off:$off"
}

noop() { :; }

if [[ $what == fib || $what == all ]]; then
    mkdir -p "$work/fib"
    "$javac" -d "$work/fib" "$here/test-classes/Fib.java"
    bench fib noop -cp "$work/fib" Fib
fi

if [[ $what == threads || $what == all ]]; then
    mkdir -p "$work/threads"
    "$javac" -d "$work/threads" "$here/test-classes/ParallelLeaf.java"
    bench threads noop -cp "$work/threads" ParallelLeaf 8
fi

if [[ $what == javac || $what == all ]]; then
    src=$JAVA_HOME/lib/src.zip
    [[ -e $src ]] || { echo "no $src: apt-get install openjdk-17-source" >&2; exit 1; }
    mkdir -p "$work/src"
    (cd "$work/src" && unzip -q "$src" 'java.base/java/util/*.java' -x 'java.base/java/util/*/*')
    files=("$work"/src/java.base/java/util/*.java)
    clean() { rm -rf "$work/out" && mkdir -p "$work/out"; }
    # javac's own launcher is java -m jdk.compiler/com.sun.tools.javac.Main
    bench javac clean -m jdk.compiler/com.sun.tools.javac.Main -nowarn \
        --patch-module "java.base=$work/src/java.base" -d "$work/out" "${files[@]}"
fi
