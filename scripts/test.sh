#!/usr/bin/env bash
# The test command (README.md, "Run the tests"): installs what the tests need, then runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
java -version 2>&1 | head -1
cargo test --release --workspace
