#!/usr/bin/env bash
# The main job: build bci, instrument a bundled program offline and verify it (our verifier and
# HotSpot -Xverify:all), profile it with the runtime jar and live with the JVMTI agent
# (cpu=times), measure a bundled program's coverage with exact hit counts (offline and with
# the agent; console, LCOV, HTML, JaCoCo and Cobertura XML reports), and trace a program with a
# rule file.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}"
OUT=target/demo
rm -rf "$OUT"; mkdir -p "$OUT/classes"

cargo build --release -q -p bci-cli -p bci-agent
# CovBasics's record of an LCOV file: a few method entries, line hits and branch outcomes
basics() {
  awk '/^SF:.*CovBasics.java/{on=1} on&&/^end_of_record/{on=0} on' "$1" \
    | grep -E '^(FNDA:[0-9]+,CovBasics\.(loop|racy|never)|DA:1[0-5],|BRDA:12,)'
}
"$JAVA_HOME/bin/javac" -d "$OUT/classes" test-classes/*.java

echo "== bci instrument (cpu-times rules) =="
target/release/bci instrument --map "$OUT/probes.tsv" "$OUT/classes" "$OUT/instrumented"
echo "== bci verify (independent verifier) =="
target/release/bci verify "$OUT/instrumented" --classpath "$OUT/classes"
echo "== the offline-instrumented program run with the runtime jar (no agent), then bci report =="
target/release/bci runtime-jar "$OUT/bci-runtime.jar"
"$JAVA_HOME/bin/java" -Xverify:all -Dbci.file="$OUT/bci.data" -cp "$OUT/instrumented:$OUT/bci-runtime.jar" Fib
target/release/bci report "$OUT/bci.data" | sed -n '/CPU TIME (ms) BEGIN/,/CPU TIME (ms) END/p'
echo "== coverage: bci instrument --coverage, run twice (one data file), bci report (+ LCOV) =="
mkdir -p "$OUT/cov-classes"
"$JAVA_HOME/bin/javac" -g -d "$OUT/cov-classes" test-classes/coverage/*.java
target/release/bci instrument --coverage "$OUT/cov-classes" "$OUT/cov-instrumented"
for run in 1 2; do
  "$JAVA_HOME/bin/java" -Xverify:all -Dbci.covfile="$OUT/bci.cov" -cp "$OUT/cov-instrumented:$OUT/bci-runtime.jar" CovBasics
done
target/release/bci report "$OUT/bci.cov" --classes "$OUT/cov-classes" --sources test-classes/coverage --lcov "$OUT/coverage.info" \
  --html "$OUT/coverage-html" --xml "$OUT/jacoco.xml" --cobertura "$OUT/cobertura.xml" --title "bci demo"
echo "HTML report: file://$PWD/$OUT/coverage-html/index.html (also $OUT/jacoco.xml, $OUT/cobertura.xml)"
echo "LCOV $OUT/coverage.info, exact hit counts of two runs (FNDA: entries, DA: line, BRDA: branch outcome):"
basics "$OUT/coverage.info"
echo "== coverage with the agent (coverage=y, no instrumented copy), one run: half the counts above =="
"$JAVA_HOME/bin/java" -Xverify:all -agentpath:target/release/libbciagent.so=coverage=y,include=CovBasics,covfile="$OUT/agent.cov" -cp "$OUT/cov-classes" CovBasics
target/release/bci report "$OUT/agent.cov" --classes "$OUT/cov-classes" --lcov "$OUT/agent.info"
basics "$OUT/agent.info"
echo "== tracing rules (test-classes/trace/trace-basics.toml) on TraceBasics: events and the per-rule summary =="
mkdir -p "$OUT/trace-classes"
"$JAVA_HOME/bin/javac" -g -d "$OUT/trace-classes" test-classes/trace/TraceBasics.java
"$JAVA_HOME/bin/java" -Xverify:all -agentpath:target/release/libbciagent.so=rules=test-classes/trace/trace-basics.toml,tracefile="$OUT/trace.txt",traceformat=text,file="$OUT/trace-summary.txt" \
  -cp "$OUT/trace-classes" TraceBasics
echo "first events of $OUT/trace.txt:"
head -6 "$OUT/trace.txt"
cat "$OUT/trace-summary.txt"
echo "== HotSpot -Xverify:all on the rewritten JDK java.util (patched into java.base) =="
"$JAVA_HOME/bin/jimage" extract --dir "$OUT/jdk" --include 'regex:/java.base/java/util/[^/]*\.class' "$JAVA_HOME/lib/modules"
mkdir -p "$OUT/probe"
"$JAVA_HOME/bin/javac" --patch-module java.base=cli/tests/probe -d "$OUT/probe" cli/tests/probe/BciProbe.java
target/release/bci instrument --runtime java/lang/BciProbe "$OUT/jdk/java.base" "$OUT/jdk-instrumented"
cp -r "$OUT/probe/java" "$OUT/jdk-instrumented/"
"$JAVA_HOME/bin/java" -Xverify:all --patch-module "java.base=$OUT/jdk-instrumented" -cp "$OUT/classes" Fib >/dev/null \
  && echo "HotSpot ran Fib on a rewritten java.util: ok"

echo "== java -agentpath:libbciagent.so=cpu=times Fib =="
"$JAVA_HOME/bin/java" -agentpath:target/release/libbciagent.so=cpu=times,file="$OUT/java.hprof.txt" -cp "$OUT/classes" Fib
# the first 15 lines of the block (sed -n 1,15p reads to the end: head's early exit made the
# first sed die of SIGPIPE under pipefail when the block was long)
sed -n '/CPU TIME (ms) BEGIN/,/CPU TIME (ms) END/p' "$OUT/java.hprof.txt" | sed -n 1,15p
