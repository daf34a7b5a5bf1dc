#!/usr/bin/env bash
# The kvcheck command as a user and a CI job see it: usage errors (one line, exit 3), a defect
# run leaving replay files that `kvcheck replay` reproduces, the four report formats, and
# --baseline returning 2 on an injected regression.
set -uo pipefail
kvcheck=$1
work=${TEST_TMPDIR:-$(mktemp -d)}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect_exit CODE LOG COMMAND...: runs COMMAND with its output in LOG, checks its exit code.
expect_exit() {
  local code=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1
  local got=$?
  [[ $got -eq $code ]] || { fail "expected exit $code, got $got: $*"; tail -20 "$log"; }
}

# Usage errors: one line on stderr, exit 3, the nearest valid name suggested.
expect_exit 3 "$work/u1" "$kvcheck" --kernal=flash
grep -q "unknown flag --kernal (did you mean --kernel?)" "$work/u1" || fail "flag suggestion: $(cat "$work/u1")"
expect_exit 3 "$work/u2" "$kvcheck" --kernel=flsh
grep -q "no kernel matches 'flsh' (did you mean flash?)" "$work/u2" || fail "kernel suggestion"
expect_exit 3 "$work/u3" "$kvcheck" lst
grep -q "did you mean list?" "$work/u3" || fail "command suggestion"
expect_exit 3 "$work/u4" "$kvcheck" --cases=many
expect_exit 3 "$work/u5" "$kvcheck" replay "$work/no-such-file.kvfail"
for log in u1 u2 u3 u4 u5; do
  [[ $(wc -l <"$work/$log") -eq 1 ]] || fail "usage error $log is not one line: $(cat "$work/$log")"
done
expect_exit 0 "$work/list" "$kvcheck" list kernels
grep -q "^  flash " "$work/list" || fail "list kernels"

# A defect run: each kill leaves a replay file; replaying it against the defect fails again,
# and the same case run on the correct strategy's or kernel's property passes.
expect_exit 0 "$work/defects.log" "$kvcheck" \
  --defect=prealloc_clone_shares_buffer,metal_element_offsets,attention_softcap_decode_bias \
  --failures_dir="$work/failures" --threads=2
for pair in prealloc_clone_shares_buffer:cache/prealloc/f32 \
            metal_element_offsets:attention/metal_vector_vs_reference; do
  defect=${pair%%:*}
  file=$work/failures/defects/$defect.kvfail
  [[ -s $file ]] || { fail "no replay file for $defect"; continue; }
  expect_exit 1 "$work/replay-$defect" "$kvcheck" replay "$file"
  grep -q "still fails" "$work/replay-$defect" || fail "replay of $defect did not reproduce"
  sed -e '/^defect:/d' -e "s|^property: .*|property: ${pair#*:}|" "$file" >"$work/$defect-fixed.kvfail"
  expect_exit 0 "$work/fixed-$defect" "$kvcheck" replay "$work/$defect-fixed.kvfail"
  grep -q "passes now" "$work/fixed-$defect" || fail "the correct engine does not pass $defect's case"
done
grep -q "element 0: engine K/V" "$work/replay-prealloc_clone_shares_buffer" ||
  fail "the state machine replay does not show the diverging values"
grep -q "^at command [0-9]* of [0-9]*: " "$work/replay-prealloc_clone_shares_buffer" ||
  fail "the state machine replay does not name the step"
expect_exit 1 "$work/replay-softcap" "$kvcheck" replay "$work/failures/defects/attention_softcap_decode_bias.kvfail"
grep -q "error/bound" "$work/replay-softcap" || fail "the kernel replay has no ratio"
# A malformed file: one line naming the line.
printf 'format: kvcheck-failure 1\nproperty: x\nseed: minus one\n' >"$work/bad.kvfail"
expect_exit 3 "$work/bad.log" "$kvcheck" replay "$work/bad.kvfail"
grep -q "bad.kvfail: line 3: 'seed' must be a non-negative integer" "$work/bad.log" || fail "$(cat "$work/bad.log")"

# Reports, and the baseline: the same run against itself passes; against a baseline whose
# kernels erred far less (an injected regression: the ratios now are >2x those) it exits 2.
run=("$kvcheck" --property=attention/kernels_vs_reference --kernel=flash/scalar --cases=25 --threads=2)
expect_exit 0 "$work/report.log" "${run[@]}" --report="$work/first"
for f in report.json report.md report.xml report.html; do
  [[ -s $work/first/$f ]] || fail "no $f"
done
grep -q '"schema": "kvcheck-report"' "$work/first/report.json" || fail "report.json schema"
grep -q '<testcase classname="attention" name="kernels_vs_reference"' "$work/first/report.xml" || fail "junit"
grep -q "<svg" "$work/first/report.html" || fail "html has no chart"
expect_exit 0 "$work/same.log" "${run[@]}" --baseline="$work/first/report.json"
grep -q "0 regressions" "$work/same.log" || fail "the run regressed against itself"
sed -E 's/"max_ratio": [0-9.e+-]+/"max_ratio": 1e-9/' "$work/first/report.json" >"$work/tight.json"
expect_exit 2 "$work/regressed.log" "${run[@]}" --baseline="$work/tight.json" --report="$work/second"
grep -q "kernel.*flash/scalar f32" "$work/regressed.log" || fail "no kernel regression listed"
grep -q '"exit_code": 2' "$work/second/report.json" || fail "report.json exit code"
grep -q "REGRESSED" "$work/second/report.md" || fail "report.md verdict"
grep -q 'classname="baseline.kernel" name="flash/scalar f32"><failure' "$work/second/report.xml" ||
  fail "report.xml does not list the regression"
expect_exit 3 "$work/badbase.log" "${run[@]}" --baseline="$work/first/report.md"

# One worker or two: the same tables (cases, command counts, verdicts; not the seconds).
for threads in 1 2; do
  expect_exit 0 "$work/threads$threads.log" "$kvcheck" --strategy=prealloc,ring --dtype=f32 \
    --cases=15 --threads=$threads --verbose
  # Property rows: name cases seconds result; strategy rows: strategy dtype cases commands result.
  awk '$NF == "PASS" || $NF == "FAIL" {print $1, $2, (NF == 5 ? $3 " " $4 : ""), $NF}' \
    "$work/threads$threads.log" | sort >"$work/threads$threads.table"
done
[[ -s $work/threads1.table ]] || fail "no table in the one-worker run"
cmp -s "$work/threads1.table" "$work/threads2.table" ||
  { fail "one worker and two give different tables"; diff "$work/threads1.table" "$work/threads2.table"; }
grep -q "^prealloc f32 15 [0-9]* PASS" "$work/threads2.table" || fail "no state machine row"

# Time limits: a property stops generating at --property_seconds and says so; --max_seconds
# leaves properties not started as "not run", and the run still passes with what ran.
expect_exit 0 "$work/limit.log" "$kvcheck" --property=cache/prealloc/f32 --cases=1000000 \
  --property_seconds=1 --threads=1
grep -q "(time limit)" "$work/limit.log" || fail "--property_seconds did not stop the property"
expect_exit 0 "$work/max.log" "$kvcheck" --strategy=prealloc --cases=1000000 --max_seconds=1 \
  --threads=1 --report="$work/max"
grep -q "not run (time limit)" "$work/max.log" || fail "--max_seconds left nothing unstarted"
grep -q '"status": "not_run"' "$work/max/report.json" || fail "report.json has no not_run property"
grep -q "<skipped" "$work/max/report.xml" || fail "report.xml has no skipped test case"

echo "$failures failures"
[[ $failures -eq 0 ]]
