#!/usr/bin/env bash
# tools/fuzz.sh — continuous fuzzing of the libFuzzer targets in fuzz/.
#
#   tools/fuzz.sh [-t SECONDS] [-r ROUNDS] [-c CORE] [-o REPORT_DIR] [TARGET...]
#
#   TARGET     cache_ops, attention, metal_attention, tensor_ops, failure_file (default: all)
#   -t         seconds per target per round (default 60)
#   -r         rounds of the rotation; 0 runs until interrupted (Ctrl-C ends the round and
#              still writes the summary) (default 1)
#   -c         the CPU core the fuzzers are pinned to (default 0)
#   -o         where the campaign summary goes (default fuzz-report/): fuzz-report.json, .md,
#              .xml (JUnit, a test case per target) and .html, per target: executions,
#              executions per second, coverage growth, new corpus files, crashes with their
#              regression files
#
# Builds the targets under --config=fuzz (clang, libFuzzer, ASan, UBSan), then runs each in
# turn for the given time on one core, starting from fuzz/corpus/<target>/. After each run it
#   - merges the inputs that added coverage into fuzz/corpus/<target>/ (libFuzzer -merge=1),
#   - minimises each crash into fuzz/regressions/<target>/ (replayed by
#     //fuzz:<target>_fuzzer_replay_test from then on) and prints how to replay it,
#   - prints executions per second, coverage (libFuzzer's cov: edges) and corpus size.
# With KVCHECK_FUZZ_DEFECT=<defect> set, the targets fuzz that defect instead; the corpus is
# left alone and crashes stay in the scratch directory (a defect's crash is not a regression).
# tools/fuzz_defects.sh measures how long each defect takes to be found.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds=60
rounds=1
core=0
report_dir=fuzz-report
while getopts "t:r:c:o:h" opt; do
  case "$opt" in
    t) seconds=$OPTARG ;;
    r) rounds=$OPTARG ;;
    c) core=$OPTARG ;;
    o) report_dir=$OPTARG ;;
    *) sed -n '2,26p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(cache_ops attention metal_attention tensor_ops failure_file)

labels=()
for t in "${targets[@]}"; do
  [[ -d fuzz/corpus/$t ]] || { echo "fuzz.sh: unknown target $t" >&2; exit 2; }
  labels+=("//fuzz:${t}_fuzzer")
done
# The summary writer first, in the default configuration (the fuzz build replaces bazel-bin).
bazel build //report:fuzz_campaign_report 2>&1 | tail -1 >&2
echo "fuzz.sh: building ${labels[*]} with --config=fuzz" >&2

# Bazel's output tree is shared between configurations: keep private copies of the binaries.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-fuzz.XXXXXX")
cp bazel-bin/report/fuzz_campaign_report "$scratch/" 2>/dev/null || true
bazel build --config=fuzz "${labels[@]}" 2>&1 | grep -v "Cannot export local symbol" | tail -2 >&2
for t in "${targets[@]}"; do cp "bazel-bin/fuzz/${t}_fuzzer" "$scratch/"; done
defect=${KVCHECK_FUZZ_DEFECT:-}
echo "fuzz.sh: scratch directory $scratch${defect:+ (fuzzing defect $defect)}" >&2

summary=()
# One line per target and round for the campaign summary (report/fuzz_campaign.h): target,
# round, seconds, execs, coverage at start and end, corpus files before and after, crashes,
# regression files (comma-separated).
rounds_file="$scratch/rounds.tsv"
: >"$rounds_file"
write_summary() {
  echo
  printf '%s\n' "${summary[@]}"
  if [[ -x "$scratch/fuzz_campaign_report" && -s "$rounds_file" ]]; then
    "$scratch/fuzz_campaign_report" "$rounds_file" "$report_dir" $defect >/dev/null &&
      echo "fuzz.sh: campaign summary in $report_dir/ (fuzz-report.json, .md, .xml, .html)" >&2
  fi
}
trap 'write_summary; exit 130' INT
round=0
while [[ $rounds -eq 0 || $round -lt $rounds ]]; do
  round=$((round + 1))
  for t in "${targets[@]}"; do
    bin="$scratch/${t}_fuzzer"
    new="$scratch/new/$t"
    crashes="$scratch/crashes/$t"
    mkdir -p "$new" "$crashes" "fuzz/regressions/$t"
    dict=()
    [[ -f fuzz/dict/$t.dict ]] && dict=("-dict=fuzz/dict/$t.dict")
    log="$scratch/$t.round$round.log"
    corpus_before=$(find "fuzz/corpus/$t" -type f | wc -l)
    # New inputs are written to the first directory; the seed corpus is only read.
    set +e
    # One core, one BLAS thread: the execs/s are per core.
    OPENBLAS_NUM_THREADS=1 taskset -c "$core" "$bin" "$new" "fuzz/corpus/$t" "${dict[@]}" \
      -max_total_time="$seconds" \
      -artifact_prefix="$crashes/" -print_final_stats=1 -rss_limit_mb=4096 >"$log" 2>&1
    status=$?
    set -e
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
    rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    # Coverage once the corpus is loaded (libFuzzer's INITED line), to measure the growth.
    cov_start=$(grep -m1 -E '(INITED|DONE) ' "$log" | grep -oE 'cov: [0-9]+' | awk '{print $2}')
    saved=()
    if [[ -z "$defect" ]]; then
      "$bin" -merge=1 "fuzz/corpus/$t" "$new" >"$scratch/$t.merge.log" 2>&1 || true
      rm -rf "$new"
    fi
    found=0
    for crash in "$crashes"/crash-* "$crashes"/leak-* "$crashes"/timeout-* "$crashes"/oom-*; do
      [[ -f "$crash" ]] || continue
      found=$((found + 1))
      if [[ -z "$defect" ]]; then
        name="fuzz/regressions/$t/$(basename "$crash")"
        "$bin" -minimize_crash=1 -runs=20000 -exact_artifact_path="$name" "$crash" \
          >"$scratch/$t.minimize.log" 2>&1 || true
        [[ -f "$name" ]] || cp "$crash" "$name"
        saved+=("$name")
        echo "fuzz.sh: $t crashed; minimised input saved as $name" >&2
        echo "  replay: bazel run //fuzz:${t}_fuzzer -- \$PWD/$name" >&2
        mv "$crash" "$crash.saved"
      else
        echo "fuzz.sh: $t found the defect $defect: $crash (log $log)" >&2
      fi
    done
    if [[ $status -ne 0 && $found -eq 0 ]]; then
      echo "fuzz.sh: $t exited with status $status without a crash file; see $log" >&2
    fi
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    line=$(printf "%-11s round %-3d %6ss %10s execs %7s exec/s  cov %-6s corpus %-5s crashes %s" \
      "$t" "$round" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$corpus" "$found")
    echo "$line"
    summary+=("$line")
    regressions=$(IFS=,; echo "${saved[*]}")
    printf '%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n' "$t" "$round" "$seconds" "${execs:-0}" \
      "${cov_start:-0}" "${cov:-0}" "$corpus_before" "$corpus" "$found" "$regressions" \
      >>"$rounds_file"
  done
done
write_summary
