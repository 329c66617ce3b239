#!/usr/bin/env bash
# Installs what the demo and the tests need on a fresh Debian 12 machine (as root; a no-op when
# everything is there): a JDK 17 when javac is missing, and the Debian packages each crate's
# tests name in <crate>/ci-packages.txt (one per line, # comments).
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
for f in */ci-packages.txt; do
  [ -f "$f" ] || continue
  while read -r p; do
    p="${p%%#*}"; p="$(echo "$p" | tr -d '[:space:]')"
    [ -n "$p" ] || continue
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done < "$f"
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: not root; run: sudo apt-get install ${need[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
