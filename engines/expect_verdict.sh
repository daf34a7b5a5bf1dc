#!/usr/bin/env bash
# engines/expect_verdict.sh — runs kvcheck on an engine and checks its verdict.
#
#   expect_verdict.sh KVCHECK EXPECT ENGINE [NAME=VALUE ...] [-- KVCHECK_FLAGS...]
#
# EXPECT is `pass` (every property passes, exit 0) or `fail:PROPERTY[,PROPERTY...]` (kvcheck
# exits 1 and, for each PROPERTY, a property whose name starts with it is among the failures,
# with a replay line).
# NAME=VALUE pairs are set in kvcheck's environment (a plug-in reads its bug switch there),
# except EXPECT_MESSAGE=TEXT: the failure report must contain TEXT.
set -euo pipefail
kvcheck=$1
expect=$2
engine=$3
shift 3
envs=()
message=""
while [[ $# -gt 0 && "$1" != "--" ]]; do
  case "$1" in
    EXPECT_MESSAGE=*) message=${1#EXPECT_MESSAGE=} ;;
    *) envs+=("$1") ;;
  esac
  shift
done
[[ $# -gt 0 ]] && shift
log=${TEST_TMPDIR:-$(mktemp -d)}/kvcheck.log
status=0
env "${envs[@]}" "$kvcheck" --engine="$engine" "$@" >"$log" 2>&1 || status=$?
grep -E "^kvcheck: checking|PASS$|FAIL$|passed, " "$log" || true
case "$expect" in
  pass)
    if [[ $status -ne 0 ]]; then
      echo "expected every property to pass; kvcheck exited $status:"; tail -60 "$log"; exit 1
    fi ;;
  fail:*)
    if [[ $status -ne 1 ]]; then
      echo "expected kvcheck to exit 1 (a failure), it exited $status:"; tail -60 "$log"; exit 1
    fi
    IFS=, read -r -a properties <<<"${expect#fail:}"
    for property in "${properties[@]}"; do
      if ! grep -qF "FAILED $property" "$log" || ! grep -q "^replay: kvcheck --engine=" "$log"; then
        echo "expected $property to fail with a replay line:"; tail -60 "$log"; exit 1
      fi
      # The failure report of $property, from FAILED to its replay line (into a file: a pipe
      # into `grep -q` or `head` would end awk with SIGPIPE, which pipefail makes a failure).
      report=$log.report
      awk -v p="FAILED $property" 'index($0, p) == 1 {on = 1} on {print} /^replay/ {on = 0}' \
        "$log" >"$report"
      if [[ -n "$message" ]] && ! grep -qF -- "$message" "$report"; then
        echo "expected the report of $property to contain '$message':"; tail -60 "$log"; exit 1
      fi
      head -40 "$report"
    done ;;
  *) echo "EXPECT must be pass or fail:PROPERTY, not $expect"; exit 2 ;;
esac
echo "verdict as expected: $expect"
