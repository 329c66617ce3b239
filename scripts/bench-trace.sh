#!/usr/bin/env bash
# Per-call cost of tracing rules on a hot leaf method (test-classes/trace/TraceBench.java:
# 5M calls of `static int leaf(int)` per round (200k under JFR method-trace, which records
# every call), the median of 7 rounds after 5 warm-up rounds), next to
# the cost of one System.nanoTime() read measured in the same JVM. Configurations run
# interleaved, RUNS times each (default 3); the table shows medians over runs:
#   bare                      no agent
#   time                      rules: time = true on leaf
#   trace+min_duration        rules: trace = true, min_duration = "1s" (filters every call;
#                             arguments and return value captured)
#   trace+min_duration,noargs the same with args = false, return = false
#   JFR method-timing / method-trace (JDK 25, when /usr/lib/jvm/temurin-25-jdk-amd64 exists):
#                             -XX:StartFlightRecording:method-timing=TraceBench::leaf (JEP 520)
# cpu=times is kept off the benchmark class (include=NoSuchClass) so only the rule is measured.
# Not a test: prints a table. Usage: RUNS=5 scripts/bench-trace.sh
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
jdk17=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=/usr/lib/jvm/temurin-25-jdk-amd64
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}

cargo build -q -p bci-agent --release --manifest-path "$here/Cargo.toml"
lib=$CARGO_TARGET_DIR/release/libbciagent.so
work=$(mktemp -d /tmp/bench-trace.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$jdk17/bin/javac" -d "$work" "$here/test-classes/trace/TraceBench.java"

rule() { # NAME BODY
    printf '[[rule]]\nname = "leaf"\nclass = "TraceBench"\nmethod = "leaf"\n%b' "$2" >"$work/$1.toml"
}
rule time 'time = true\n'
rule trace 'trace = true\nmin_duration = "1s"\n'
rule noargs 'trace = true\nargs = false\nreturn = false\nmin_duration = "1s"\n'

# (trace rules need a trace file; min_duration keeps every event out of it)
agent() {
    local t=
    [[ $1 == time ]] || t=",tracefile=$work/events-$1.jsonl"
    echo "-agentpath:$lib=rules=$work/$1.toml,include=NoSuchClass,file=$work/prof-$1.txt$t"
}

n=5000000
names=("jdk17 bare" "jdk17 time" "jdk17 trace+min_duration" "jdk17 trace+min_duration,noargs")
cmds=("$jdk17/bin/java -cp $work TraceBench $n"
    "$jdk17/bin/java $(agent time) -cp $work TraceBench $n"
    "$jdk17/bin/java $(agent trace) -cp $work TraceBench $n"
    "$jdk17/bin/java $(agent noargs) -cp $work TraceBench $n")
if [[ -x $jdk25/bin/java ]]; then
    names+=("jdk25 bare" "jdk25 time" "jdk25 trace+min_duration" "jdk25 JFR method-timing" "jdk25 JFR method-trace")
    cmds+=("$jdk25/bin/java -cp $work TraceBench $n"
        "$jdk25/bin/java $(agent time) -cp $work TraceBench $n"
        "$jdk25/bin/java $(agent trace) -cp $work TraceBench $n"
        "$jdk25/bin/java -XX:StartFlightRecording:method-timing=TraceBench::leaf,filename=$work/t.jfr -cp $work TraceBench $n"
        "$jdk25/bin/java -XX:StartFlightRecording:method-trace=TraceBench::leaf,filename=$work/t2.jfr -cp $work TraceBench 200000")
else
    echo "JDK 25: skipped (no $jdk25)"
fi

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -a leaf clock
for ((r = 1; r <= runs; r++)); do
    for k in "${!cmds[@]}"; do
        # shellcheck disable=SC2086
        out=$(${cmds[$k]} 2>"$work/err") || { cat "$work/err" >&2; exit 1; }
        line=$(echo "$out" | grep '^leaf ')
        leaf[$k]+=" $(echo "$line" | awk '{print $2}')"
        clock[$k]+=" $(echo "$line" | awk '{print $4}')"
    done
done

# "in clocks": per run, (ns/call - the bare median of that JDK) / that run's clock read; the
# median of those ratios (the machine's speed drifts between runs; the ratio much less)
printf '%-34s %12s %12s %14s %12s\n' "configuration (runs=$runs)" "ns/call" "clock ns" "over bare ns" "in clocks"
for k in "${!cmds[@]}"; do
    l=$(echo "${leaf[$k]}" | median)
    c=$(echo "${clock[$k]}" | median)
    case ${names[$k]} in
    jdk17*) b=$(echo "${leaf[0]}" | median) ;;
    *) b=$(echo "${leaf[4]}" | median) ;;
    esac
    ratios=$(paste -d' ' <(echo "${leaf[$k]}" | tr ' ' '\n' | grep .) <(echo "${clock[$k]}" | tr ' ' '\n' | grep .) |
        awk -v b="$b" '{ printf " %.3f", ($1 - b) / $2 }')
    r=$(echo "$ratios" | median)
    awk -v n="${names[$k]}" -v l="$l" -v c="$c" -v b="$b" -v r="$r" \
        'BEGIN { printf "%-34s %12.2f %12.2f %14.2f %12.2f\n", n, l, c, l - b, r }'
done
echo "per-run ns/call:"
for k in "${!cmds[@]}"; do echo "  ${names[$k]}:${leaf[$k]}  (clock:${clock[$k]})"; done
echo "goal (issue 12): time and filtered trace <= 2 clock reads + 10 ns per call"
