#!/usr/bin/env bash
# Overhead of the bciagent cpu=times profile (issue 13): wall time, CPU time (user+sys) and max RSS
# of each workload bare and under the agent, RUNS runs (default 3) interleaved (bare, agent, ...
# alternating within each round, the order rotated by one each round), medians and ratios to
# bare. Workloads:
#   fib:     test-classes/Fib.java (recursive fib(30) x20 + a 100M-call leaf method)
#   threads: test-classes/ParallelLeaf.java (8 threads x 10 M calls of a leaf method; not in "all")
#   javac:   javac compiling java.base/java/util/*.java from the JDK's src.zip (openjdk-17-source)
#   scalac:  Debian's scalac 2.11 compiling the 23 sources of src/scalap of Debian's scala source
#            package
#   jython:  Debian's jython 2.7 compileall of its own Lib/ (lib2to3's test data excluded: one file
#            there has a method too large for Jython's compiler, bare too)
#   rhino:   Debian's rhino running acorn.js (node-acorn) parsing coffee-script.js
#            (libjs-coffeescript, 540 kB) three times
# Debian's packages are fetched with `apt-get download` and unpacked with dpkg-deb -x into
# $CARGO_TARGET_DIR/bench-cache (nothing installed); scala's sources with `apt-get source
# --download-only` through a private sources list and lists dir there (the system's apt
# configuration is not touched). Not a test: prints a table.
#   scripts/bench-cpu-times.sh [all|fib|threads|javac|scalac|jython|rhino]...
#   RUNS=5 OPTS=clock=wall scripts/bench-cpu-times.sh javac rhino
#   AGENTS="old=/path/libbciagent.so" adds agent columns (side by side, same rounds);
#   AGENTS="x=/path/lib.so@BCIAGENT_NO_LEAF_PROBES=1" runs column x with that environment;
#   LIB=/path/libbciagent.so is the "agent" column's library (default: this tree's, built first)
#   OFF=1 adds the agent with BCIAGENT_PROBES_OFF=1 (classes rewritten, nothing recorded)
#   JIT=1 runs every variant (bare too) with -XX:+CITime and adds the medians of C1's and C2's
#   compile times (s, as HotSpot prints them at exit: time of the compiler threads): where
#   the probes' cost goes besides the program's own threads
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
opts=${OPTS:-}
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
java=$JAVA_HOME/bin/java
javac=$JAVA_HOME/bin/javac
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
[[ -x /usr/bin/time ]] || { echo "no /usr/bin/time: apt-get install time" >&2; exit 1; }
whats=("$@")
[[ ${#whats[@]} -gt 0 ]] || whats=(all)
[[ ${whats[*]} == all ]] && whats=(fib javac scalac jython rhino)

# LIB=path: the agent column's library (default: this tree's, built first)
lib=${LIB:-}
if [[ -z $lib ]]; then
    cargo build -q -p bci-agent --release --manifest-path "$here/Cargo.toml"
    lib=$CARGO_TARGET_DIR/release/libbciagent.so
fi
cache=$CARGO_TARGET_DIR/bench-cache
mkdir -p "$cache"
work=$(mktemp -d /tmp/bench-cpu-times.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Variants: name and command prefix (an env assignment list, then java options).
names=(bare agent)
declare -A lib_of=([agent]=$lib)
declare -A env_of=()
for a in ${AGENTS:-}; do
    n=${a%%=*}
    names+=("$n")
    l=${a#*=}
    lib_of[$n]=${l%%@*}
    # name=lib.so@VAR=value,VAR=value: that column runs with these environment variables
    [[ $l == *@* ]] && env_of[$n]=${l#*@}
done
[[ -n ${OFF:-} ]] && names+=(off) && lib_of[off]=$lib

# deb PKG... : unpacks each Debian package (downloaded once) into $cache/root
deb() {
    mkdir -p "$cache/debs" "$cache/root"
    local p
    for p in "$@"; do
        if ! compgen -G "$cache/debs/${p}_*.deb" >/dev/null; then
            (cd "$cache/debs" && apt-get download -qq "$p" 2>/dev/null) || {
                echo "apt-get download $p failed" >&2
                exit 1
            }
            dpkg-deb -x "$cache/debs/${p}"_*.deb "$cache/root"
        fi
    done
}

# scala_sources : $cache/scala-src/src/scalap from Debian's scala source package
scala_sources() {
    local d=$cache/apt-src
    [[ -d $cache/scala-src/src/scalap ]] && return
    mkdir -p "$d/etc" "$d/lists/partial" "$cache/scala-src"
    printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm' \
        'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' \
        >"$d/etc/src.sources"
    local o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$d/etc"
        -o "Dir::State::Lists=$d/lists")
    apt-get -qq "${o[@]}" update >/dev/null
    (cd "$d" && apt-get -qq "${o[@]}" source --download-only scala >/dev/null 2>&1)
    tar xJf "$d"/scala_*.orig.tar.xz -C "$cache/scala-src" --strip-components=1 --wildcards \
        '*/src/scalap/*'
}

# run_one VARIANT NAME CMD... : one run, appends "wall_ms cpu_ms rss_kb" to $work/NAME.VARIANT
run_one() {
    local v=$1 name=$2
    shift 2
    local pre=()
    case $v in
    bare) ;;
    off) pre=(env BCIAGENT_PROBES_OFF=1) ;;
    *) [[ -n ${env_of[$v]:-} ]] && pre=(env ${env_of[$v]//,/ }) ;;
    esac
    local agent=()
    [[ $v != bare ]] && agent=("-agentpath:${lib_of[$v]}=file=$work/$name.$v.hprof.txt${opts:+,$opts}")
    local jit=()
    [[ -n ${JIT:-} ]] && jit=(-XX:+CITime)
    /usr/bin/time -f '%e %U %S %M' -o "$work/time" "${pre[@]}" "$java" "${jit[@]}" "${agent[@]}" "$@" \
        >"$work/last.out" 2>"$work/last.err" || {
        echo "$name ($v) failed:" >&2
        tail -20 "$work/last.err" >&2
        exit 1
    }
    # -XX:+CITime prints "C1 Compile Time: 2.867 s" (and C2's) on stdout at exit
    local c1=0 c2=0
    if [[ -n ${JIT:-} ]]; then
        c1=$(awk '/C1 Compile Time/ {print $4 * 1000; exit}' "$work/last.out")
        c2=$(awk '/C2 Compile Time/ {print $4 * 1000; exit}' "$work/last.out")
    fi
    tail -1 "$work/time" | awk -v c1="${c1:-0}" -v c2="${c2:-0}" \
        '{printf "%d %d %d %d %d\n", $1 * 1000, ($2 + $3) * 1000, $4, c1, c2}' >>"$work/$name.$v"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# bench NAME SETUP_FN CMD... : RUNS rounds of every variant, then the table rows
bench() {
    local name=$1 setup=$2
    shift 2
    local i j v n=${#names[@]}
    for ((i = 1; i <= runs; i++)); do
        # round i starts at variant i-1: every variant takes every place in the order in turn
        # (measured: the variant right after bare ran ~9 % lower on rhino and scalac)
        for ((j = 0; j < n; j++)); do
            v=${names[$(((i - 1 + j) % n))]}
            $setup
            run_one "$v" "$name" "$@"
        done
    done
    local bw bc br
    bw=$(cut -d' ' -f1 "$work/$name.bare" | median)
    bc=$(cut -d' ' -f2 "$work/$name.bare" | median)
    br=$(cut -d' ' -f3 "$work/$name.bare" | median)
    for v in "${names[@]}"; do
        local w c r
        w=$(cut -d' ' -f1 "$work/$name.$v" | median)
        c=$(cut -d' ' -f2 "$work/$name.$v" | median)
        r=$(cut -d' ' -f3 "$work/$name.$v" | median)
        local jit=""
        if [[ -n ${JIT:-} ]]; then
            jit=$(printf ' %6.2f %6.2f' "$(cut -d' ' -f4 "$work/$name.$v" | median | awk '{print $1 / 1000}')" \
                "$(cut -d' ' -f5 "$work/$name.$v" | median | awk '{print $1 / 1000}')")
        fi
        printf '%-7s %-7s %8d %6.2fx %8d %6.2fx %5.2f %6d %6.2fx%s   wall: %s\n' "$name" "$v" \
            "$w" "$(awk "BEGIN{print $w/$bw}")" "$c" "$(awk "BEGIN{print $c/$bc}")" \
            "$(awk "BEGIN{print $c/$w}")" $((r / 1024)) "$(awk "BEGIN{print $r/$br}")" "$jit" \
            "$(cut -d' ' -f1 "$work/$name.$v" | tr '\n' ' ')"
    done
}

noop() { :; }

printf '%s runs=%d (medians; ratios to bare; default options%s)\n' "$(date -u +%FT%TZ)" "$runs" \
    "${opts:+ + $opts}"
printf '%-7s %-7s %8s %7s %8s %7s %5s %6s %7s%s\n' workld variant wall_ms ratio cpu_ms ratio \
    cpu/w rss_MB ratio "${JIT:+   c1_s   c2_s}"

for what in "${whats[@]}"; do
    case $what in
    fib)
        mkdir -p "$work/fib"
        "$javac" -d "$work/fib" "$here/test-classes/Fib.java"
        bench fib noop -cp "$work/fib" Fib
        ;;
    threads)
        mkdir -p "$work/threads"
        "$javac" -d "$work/threads" "$here/test-classes/ParallelLeaf.java"
        bench threads noop -cp "$work/threads" ParallelLeaf 8
        ;;
    javac)
        src=$JAVA_HOME/lib/src.zip
        [[ -e $src ]] || { echo "no $src: apt-get install openjdk-17-source" >&2; exit 1; }
        mkdir -p "$work/src"
        (cd "$work/src" && unzip -q -o "$src" 'java.base/java/util/*.java' -x 'java.base/java/util/*/*')
        files=("$work"/src/java.base/java/util/*.java)
        clean_javac() { rm -rf "$work/out" && mkdir -p "$work/out"; }
        # javac's own launcher is java -m jdk.compiler/com.sun.tools.javac.Main
        bench javac clean_javac -m jdk.compiler/com.sun.tools.javac.Main -nowarn \
            --patch-module "java.base=$work/src/java.base" -d "$work/out" "${files[@]}"
        ;;
    scalac)
        deb scala scala-library scala-xml scala-parser-combinators
        scala_sources
        j=$cache/root/usr/share/java
        mapfile -t sfiles < <(find "$cache/scala-src/src/scalap" -name '*.scala' | sort)
        clean_scalac() { rm -rf "$work/sout" && mkdir -p "$work/sout"; }
        bench scalac clean_scalac -Xss8m -Dscala.usejavacp=true \
            -cp "$j/scala-compiler.jar:$j/scala-library.jar:$j/scala-reflect.jar:$j/scala-xml_2.11.jar:$j/scala-parser-combinators_2.11.jar" \
            scala.tools.nsc.Main -nowarn -d "$work/sout" "${sfiles[@]}"
        ;;
    jython)
        jar=/usr/share/java/jython.jar
        [[ -e $jar ]] || { echo "no $jar: apt-get install jython" >&2; exit 1; }
        rm -rf "$work/jy" && mkdir -p "$work/jy"
        (cd "$work/jy" && unzip -q -o "$jar" 'Lib/*')
        clean_jython() { find "$work/jy/Lib" -name '*$py.class' -delete; }
        bench jython clean_jython -Dpython.home=/usr/share/jython -Dpython.cachedir.skip=true \
            -jar "$jar" -m compileall -q -x 'lib2to3/tests' "$work/jy/Lib"
        ;;
    rhino)
        deb node-acorn libjs-coffeescript
        jar=/usr/share/java/rhino.jar
        [[ -e $jar ]] || { echo "no $jar: apt-get install rhino" >&2; exit 1; }
        acorn=$cache/root/usr/share/nodejs/acorn/dist/acorn.js
        coffee=$cache/root/usr/share/javascript/coffeescript/coffee-script.js
        cat >"$work/driver.js" <<JS
load("$acorn");
var src = readFile("$coffee");
var n = 0;
for (var i = 0; i < 3; i++) { n += acorn.parse(src, {ecmaVersion: 2020, sourceType: "module"}).body.length; }
print(n);
JS
        bench rhino noop -cp "$jar" org.mozilla.javascript.tools.shell.Main "$work/driver.js"
        ;;
    *) echo "unknown workload $what" >&2; exit 2 ;;
    esac
done
