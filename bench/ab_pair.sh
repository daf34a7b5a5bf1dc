#!/usr/bin/env bash
# bench/ab_pair.sh — two builds of one Google Benchmark program side by side, for a change's
# A/B: pinned, in pairs that alternate which build runs first, and the ratio taken within each
# pair. On the 2-core development VMs the binary run second in a back-to-back pair ran slower
# whichever it was (decode over 4096 keys, 2026-12-03: second slower in 5 of 6 pairs either
# way round), and the VM's speed moves between pairs more than most changes do, so neither
# a fixed order nor a comparison of medians taken minutes apart measures the change.
#
#   bench/ab_pair.sh A_BINARY B_BINARY FILTER [PAIRS]
#     A_BINARY, B_BINARY  e.g. copies of bazel-bin/bench/attention_benchmark built with and
#                         without the change (--config=opt; copy them: bazel-bin is repointed
#                         by the next build)
#     FILTER              a --benchmark_filter regex
#     PAIRS               default 6; A runs first in odd pairs, B in even ones
#   Environment: CORES (taskset's core list, default 1), REPETITIONS (5) and MIN_TIME (0.3 s)
#   per run; each side's time in a pair is the median of its repetitions.
#
# Prints each pair's times, then per benchmark: the median of each side over the pairs, the
# median of the pairs' B / A ratios, and in how many pairs B was faster. Needs python3 (it
# reads each run's JSON).
set -euo pipefail
[[ $# -ge 3 && $# -le 4 ]] || { sed -n '2,20p' "$0" >&2; exit 2; }
a=$1 b=$2 filter=$3 pairs=${4:-6}
cores=${CORES:-1} repetitions=${REPETITIONS:-5} min_time=${MIN_TIME:-0.3}
for bin in "$a" "$b"; do
  [[ -x $bin ]] || { echo "ab_pair: $bin is not an executable" >&2; exit 2; }
done
[[ $pairs =~ ^[1-9][0-9]*$ ]] || { echo "ab_pair: PAIRS must be a positive count" >&2; exit 2; }

# One run: "name real_time unit" for each benchmark's median. Read from Google Benchmark's
# JSON output: its CSV reporter aborts when the filter matches benchmarks with different
# counters ("All counters must be present in each run"), e.g. BM_FlashDecode beside
# BM_DecodeLayers in attention_benchmark.
medians() {
  if ! taskset -c "$cores" "$1" --benchmark_filter="$filter" --benchmark_repetitions="$repetitions" \
      --benchmark_min_time="$min_time" --benchmark_report_aggregates_only=true \
      --benchmark_out="$json" --benchmark_out_format=json >/dev/null 2>"$errors"; then
    echo "ab_pair: $1 failed; the end of what it printed:" >&2
    tail -n 5 "$errors" >&2
    exit 1
  fi
  python3 -c '
import json, sys
text = open(sys.argv[1]).read()  # empty when the filter matched nothing
for run in (json.loads(text)["benchmarks"] if text.strip() else []):
    if run.get("run_type") == "aggregate" and run.get("aggregate_name") == "median":
        print(run["run_name"], "%.6g" % run["real_time"], run["time_unit"])
' "$json"
}

results=$(mktemp) json=$(mktemp) errors=$(mktemp)
trap 'rm -f "$results" "$json" "$errors"' EXIT
for ((pair = 1; pair <= pairs; ++pair)); do
  if ((pair % 2 == 1)); then order=("A" "B"); else order=("B" "A"); fi
  for side in "${order[@]}"; do
    bin=$a
    [[ $side == B ]] && bin=$b
    medians "$bin" | sed "s/^/$pair $side /" >>"$results"
  done
done
[[ -s $results ]] || { echo "ab_pair: no benchmark matched $filter" >&2; exit 1; }

echo "A: $a"
echo "B: $b"
echo "cores $cores, $repetitions repetitions of ${min_time} s per run, $pairs pairs (A first in odd pairs)"
awk '
  { t[$3, $1, $2] = $4; unit[$3] = $5; if (!($3 in seen)) { seen[$3] = 1; names[++n] = $3 }
    if ($1 > pairs) pairs = $1 }
  function median(v, k,   i, j, x) {  # sorts v[1..k] in place
    for (i = 2; i <= k; ++i) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; --j) v[j + 1] = v[j]; v[j + 1] = x }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  END {
    for (i = 1; i <= n; ++i) {
      name = names[i]; printf "\n%s (%s)\n  pair    A          B          B/A\n", name, unit[name]
      k = 0; wins = 0; delete ra; delete ta; delete tb
      for (p = 1; p <= pairs; ++p) {
        if (!(((name, p, "A") in t) && ((name, p, "B") in t))) continue
        ++k; ta[k] = t[name, p, "A"]; tb[k] = t[name, p, "B"]; ra[k] = tb[k] / ta[k]
        if (tb[k] < ta[k]) ++wins
        printf "  %-4d %-10s %-10s %.3f\n", p, ta[k], tb[k], ra[k]
      }
      if (k == 0) continue
      printf "  median A %.4g, median B %.4g, median B/A %.3f; B faster in %d of %d pairs\n",
             median(ta, k), median(tb, k), median(ra, k), wins, k
    }
  }' "$results"
