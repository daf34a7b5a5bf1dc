#!/usr/bin/env bash
# tools/fuzz_defects.sh — how long each fuzzer takes to find each defect of the catalogue.
#
#   tools/fuzz_defects.sh [-t LIMIT_SECONDS] [-e] [DEFECT...]
#
#   -t   give up after this many seconds per defect (default 60)
#   -e   start from an empty corpus instead of the seed corpus fuzz/corpus/<target>/
#
# Cache defects run under cache_ops, attention defects under attention
# (KVCHECK_FUZZ_DEFECT=<defect>), one process on one core, from a private copy of the corpus.
# Prints per defect: the target, seconds until the first crash (libFuzzer start-up and corpus
# loading included), executions, and what the crash was (a kvcheck divergence or a sanitizer
# report). The decoder defects are pending (they need the decoders).
set -euo pipefail

cd "$(dirname "$0")/.."
limit=60
empty=0
while getopts "t:eh" opt; do
  case "$opt" in
    t) limit=$OPTARG ;;
    e) empty=1 ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

bazel build --config=fuzz //fuzz:cache_ops_fuzzer //fuzz:attention_fuzzer 2>&1 |
  grep -v "Cannot export local symbol" | tail -1 >&2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-defects.XXXXXX")
cp bazel-bin/fuzz/cache_ops_fuzzer bazel-bin/fuzz/attention_fuzzer "$scratch/"

# The catalogue, from the replay binary's error message (the one place that lists it).
mapfile -t cache_defects < <(KVCHECK_FUZZ_DEFECT=list "$scratch/cache_ops_fuzzer" -runs=0 2>&1 |
  awk '/choose one of/ {on = 1; next} on {print $1}')
mapfile -t attention_defects < <(KVCHECK_FUZZ_DEFECT=list "$scratch/attention_fuzzer" -runs=0 2>&1 |
  awk '/choose one of/ {on = 1; next} on {print $1}')

run_one() {
  local defect=$1 target=$2
  local corpus="$scratch/corpus-$defect"
  rm -rf "$corpus" && mkdir -p "$corpus"
  [[ $empty -eq 1 ]] || cp fuzz/corpus/"$target"/* "$corpus/" 2>/dev/null || true
  local log="$scratch/$defect.log"
  local start end
  start=$(date +%s.%N)
  set +e
  KVCHECK_FUZZ_DEFECT=$defect OPENBLAS_NUM_THREADS=1 taskset -c 0 "$scratch/${target}_fuzzer" "$corpus" \
    -max_total_time="$limit" -artifact_prefix="$scratch/$defect-" -print_final_stats=1 \
    -rss_limit_mb=4096 >"$log" 2>&1
  local status=$?
  set -e
  end=$(date +%s.%N)
  local execs what
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  if grep -q "ERROR: AddressSanitizer" "$log"; then
    what=$(grep -m1 -oE "AddressSanitizer: [a-z-]+" "$log")
  elif grep -q "KV_CHECK failed" "$log"; then
    what="abort: $(grep -m1 -oE "KV_CHECK failed: .*" "$log" | cut -c18-80)"
  elif grep -qE "kvcheck fuzz: [a-z_]+: " "$log"; then
    what=$(grep -m1 -E "kvcheck fuzz: [a-z_]+: " "$log" | sed -E 's/kvcheck fuzz: [a-z_]+: //' |
      cut -c1-70)
  else
    what="(not found)"
  fi
  if [[ $status -eq 0 ]]; then
    printf "%-40s %-10s %8s %10s  %s\n" "$defect" "$target" "> $limit s" "${execs:-?}" "$what"
  else
    printf "%-40s %-10s %7.1fs %10s  %s\n" "$defect" "$target" "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')" \
      "${execs:-?}" "$what"
  fi
}

printf "%-40s %-10s %8s %10s  %s\n" defect target time execs "what it reported"
for defect in "${cache_defects[@]}"; do
  [[ $# -eq 0 || " $* " == *" $defect "* ]] && run_one "$defect" cache_ops
done
for defect in "${attention_defects[@]}"; do
  [[ $# -eq 0 || " $* " == *" $defect "* ]] && run_one "$defect" attention
done
echo "(logs and crash files in $scratch)" >&2
