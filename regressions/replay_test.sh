#!/usr/bin/env bash
# Replays every regression file; kvcheck replay exits 0 only if each case passes.
set -euo pipefail
kvcheck=$1
shift
"$kvcheck" replay "$@"
