#!/bin/sh
# Checks that the rewrite output is byte-identical between a base revision and the working
# tree: builds cli/benches/throughput_outputs.rs for both (the base from `git archive`, with
# this tree's copy of the bench) and diffs the per-class output hashes over the JDK 17 corpus
# and a few Debian jars, for cpu=times (plain, agent options, offline, forced wide jumps),
# coverage (constant and registered class ids) and a tracing rule.
#
#   scripts/compare-rewrite.sh BASE_REV [WORKDIR]
#
# Exits 1 if any class differs (the differing lines are printed), 0 if all are identical.
set -eu
base=${1:?usage: compare-rewrite.sh BASE_REV [WORKDIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${2:-${TMPDIR:-/tmp}/bci-compare-rewrite}
mkdir -p "$work"
target=${CARGO_TARGET_DIR:-$root/target}

# cargo bench --no-run, printing the bench executable's path
build() {
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo bench -q -p bci-cli --bench throughput_outputs \
        --no-run --message-format=json 2>/dev/null) |
        grep '"name":"throughput_outputs"' |
        sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1
}

# the base tree is kept between runs for the same revision (no rebuild)
rev=$(git -C "$root" rev-parse "$base")
if [ "$(cat "$work/base.rev" 2>/dev/null)" != "$rev" ]; then
    rm -rf "$work/base"
    mkdir -p "$work/base"
    git -C "$root" archive "$rev" | tar -x -C "$work/base"
    echo "$rev" >"$work/base.rev"
fi
cmp -s "$root/cli/benches/throughput_outputs.rs" "$work/base/cli/benches/throughput_outputs.rs" ||
    cp "$root/cli/benches/throughput_outputs.rs" "$work/base/cli/benches/"
if ! grep -q throughput_outputs "$work/base/cli/Cargo.toml"; then
    printf '\n[[bench]]\nname = "throughput_outputs"\nharness = false\n' >>"$work/base/cli/Cargo.toml"
fi
# the base shares the corpus extraction of this tree
mkdir -p "$work/base/target"
[ -e "$work/base/target/corpus" ] || ln -s "$target/corpus" "$work/base/target/corpus" 2>/dev/null || true

echo "building $base ..."
old=$(build "$work/base" "$work/target")
echo "building the working tree ..."
new=$(build "$root" "$target")
[ -x "$old" ] && [ -x "$new" ] || { echo "build failed" >&2; exit 2; }

(cd "$work/base/cli" && "$old" "$work/old.txt")
(cd "$root/cli" && "$new" "$work/new.txt")
if cmp -s "$work/old.txt" "$work/new.txt"; then
    echo "identical: $(wc -l <"$work/old.txt") class outputs ($(cut -d' ' -f1 "$work/old.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ','))"
    exit 0
fi
echo "DIFFERENT outputs:"
diff "$work/old.txt" "$work/new.txt" | head -40
exit 1
