#!/usr/bin/env bash
# Replays every regression file; kvcheck replay exits 0 only if each case passes. A file whose
# reproduce string now selects another case (a generator changed) fails too: it no longer
# replays the case that found the bug; regenerate it (regressions/BUILD.bazel says how).
set -euo pipefail
kvcheck=$1
shift
log=$(mktemp)
"$kvcheck" replay "$@" | tee "$log"
if grep -q "the case differs" "$log"; then
  echo "a regression file no longer selects its own case" >&2
  exit 1
fi
