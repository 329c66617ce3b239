#!/usr/bin/env bash
# Memory of the bciagent cpu=times profile with many threads: peak RSS, the largest heap after
# a GC and the heap used at exit (from -Xlog:gc,gc+heap+exit; JDK 24+ logs it as gc+exit), with
# wall and CPU time (user + system, all threads), bare vs agent, medians of RUNS runs (default
# 3) run side by side (bare and agent alternating, the order rotated by one each round), all
# under -Xmx256m, on
#   platform: test-classes/ManyThreads.java, 10,000 platform threads (JDK 17)
#   virtual:  test-classes/jdk21/VirtualThreads.java, 100,000 virtual threads (JDK 25, skipped
#             when /usr/lib/jvm/temurin-25-jdk-amd64 is absent)
# Not a test: prints a table. Usage: scripts/bench-threads.sh [platform|virtual|all]
#   RUNS=5 OPTS=clock=wall scripts/bench-threads.sh platform
#   OLD=/path/libbciagent.so adds that build as a third column (same rounds, side by side)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-all}
runs=${RUNS:-3}
opts=${OPTS:-}
old=${OLD:-}
jdk17=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
jdk25=/usr/lib/jvm/temurin-25-jdk-amd64
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}

# LIB=/path/libbciagent.so: that build instead of building this tree's
if [[ -n ${LIB:-} ]]; then
    lib=$LIB
else
    cargo build -q -p bci-agent --release --manifest-path "$here/Cargo.toml"
    lib=$CARGO_TARGET_DIR/release/libbciagent.so
fi
work=$(mktemp -d /tmp/bench-threads.XXXXXX)
trap 'rm -rf "$work"' EXIT

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# one JAVA ARGS... : prints "wall_ms rss_kb heap_after_gc_mb heap_at_exit_mb cpu_ms" of one
# run (failure is fatal; 0 = no GC ran)
one() {
    local java=$1
    shift
    rm -f "$work/gc.log"
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f '%M %U %S' -o "$work/rss" "$java" -Xmx256m "-Xlog:gc,gc+heap+exit,gc+exit:file=$work/gc.log" "$@" \
        >"$work/last.out" 2>"$work/last.err" || { cat "$work/last.err" >&2; exit 1; }
    t1=$(date +%s%N)
    local heap used
    heap=$( (grep -o '[0-9]*M->[0-9]*M' "$work/gc.log" || true) | sed 's/.*->//; s/M//' | sort -n | tail -1)
    used=$( (grep -o 'heap *total.*used [0-9]*K' "$work/gc.log" || true) | head -1 | sed 's/.*used //; s/K//')
    local rss u s
    read -r rss u s < <(tail -1 "$work/rss")
    echo "$(((t1 - t0) / 1000000)) $rss ${heap:-0} $(((${used:-0} + 512) / 1024)) $(echo "($u + $s) * 1000 / 1" | bc)"
}

# bench NAME JAVA ARGS... : bare and agent alternately, medians side by side
bench() {
    local name=$1 java=$2
    shift 2
    local bw="" br="" bh="" bu="" bc="" aw="" ar="" ah="" au="" ac="" ow="" or="" oh="" ou="" oc=""
    local w r h u c i j
    local vs=(bare agent)
    [[ -n $old ]] && vs+=(old)
    for ((i = 1; i <= runs; i++)); do
        # round i starts at variant i-1: every variant takes every place in the order in turn
        for ((j = 0; j < ${#vs[@]}; j++)); do
            case ${vs[$(((i - 1 + j) % ${#vs[@]}))]} in
            bare)
                read -r w r h u c < <(one "$java" "$@")
                bw+=" $w" br+=" $r" bh+=" $h" bu+=" $u" bc+=" $c"
                ;;
            agent)
                read -r w r h u c < <(one "$java" "-agentpath:$lib=file=$work/$name.txt${opts:+,$opts}" "$@")
                aw+=" $w" ar+=" $r" ah+=" $h" au+=" $u" ac+=" $c"
                stopped "$name.txt" "agent run $i"
                ;;
            old)
                read -r w r h u c < <(one "$java" "-agentpath:$old=file=$work/$name-old.txt${opts:+,$opts}" "$@")
                ow+=" $w" or+=" $r" oh+=" $h" ou+=" $u" oc+=" $c"
                stopped "$name-old.txt" "old agent run $i"
                ;;
            esac
        done
    done
    printf '%-8s runs=%d  bare: %6d ms (CPU %6d ms), RSS %4d MB, heap after GC %4d MB, at exit %4d MB  |  agent: %6d ms (CPU %6d ms), RSS %4d MB, heap after GC %4d MB, at exit %4d MB\n' \
        "$name" "$runs" "$(echo "$bw" | median)" "$(echo "$bc" | median)" "$(($(echo "$br" | median) / 1024))" "$(echo "$bh" | median)" "$(echo "$bu" | median)" \
        "$(echo "$aw" | median)" "$(echo "$ac" | median)" "$(($(echo "$ar" | median) / 1024))" "$(echo "$ah" | median)" "$(echo "$au" | median)"
    echo "         bare ms:$bw CPU ms:$bc RSS KB:$br heap after GC MB:$bh at exit MB:$bu"
    echo "         agent ms:$aw CPU ms:$ac RSS KB:$ar heap after GC MB:$ah at exit MB:$au"
    if [[ -n $old ]]; then
        printf '%-8s old agent: %6d ms (CPU %6d ms), RSS %4d MB, heap after GC %4d MB, at exit %4d MB\n' \
            "$name" "$(echo "$ow" | median)" "$(echo "$oc" | median)" "$(($(echo "$or" | median) / 1024))" "$(echo "$oh" | median)" "$(echo "$ou" | median)"
        echo "         old ms:$ow CPU ms:$oc RSS KB:$or heap after GC MB:$oh at exit MB:$ou"
    fi
}

# stopped FILE WHAT: says so if the report FILE says recording stopped
stopped() {
    if grep -q "RECORDING STOPPED" "$work/$1"; then
        echo "$name: $2: $(grep -m1 'RECORDING STOPPED' "$work/$1")"
    fi
}

if [[ $what == platform || $what == all ]]; then
    mkdir -p "$work/p"
    "$jdk17/bin/javac" -d "$work/p" "$here/test-classes/ManyThreads.java"
    bench platform "$jdk17/bin/java" -cp "$work/p" ManyThreads 10000
fi

if [[ $what == virtual || $what == all ]]; then
    if [[ -x $jdk25/bin/java ]]; then
        mkdir -p "$work/v"
        "$jdk25/bin/javac" -d "$work/v" "$here/test-classes/jdk21/VirtualThreads.java"
        bench virtual "$jdk25/bin/java" -cp "$work/v" VirtualThreads 100000
    else
        echo "virtual: skipped (no JDK 25 at $jdk25)"
    fi
fi
