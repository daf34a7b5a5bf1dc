#!/usr/bin/env bash
# bench/peers/run_ggml_race.sh — our attention beside ggml's CPU attention, interleaved, in one run.
#
#   bench/peers/run_ggml_race.sh GGML_SOURCE_DIR [ROUNDS]
#     GGML_SOURCE_DIR  a checkout of github.com/ggml-org/ggml (nothing of it enters this tree)
#     ROUNDS           default 3; each round runs ours and ggml once per case, taking turns at
#                      going first; the table gives the median over the rounds
#   Environment: GGML_BUILD_DIR (default ${TMPDIR:-/tmp}/ggml-build), REPETITIONS (5) and
#   MIN_TIME (0.5 s) per run on both sides, KVCHECK_CPU_LOCK (/tmp/kvcheck-cpu.lock),
#   MAX_FOREIGN (10: each run waits for the cores to be at most 10% busy, and one during which
#   other processes took more than 10% of its cores runs again, up to ATTEMPTS (4) times).
#
# The cases are bench/attention_benchmark.cc's candle 0.11 table (f32, 9 query heads, 3 KV heads,
# D = 64; prefill 512 x 512 causal, decode 1 x 1024 and 1 x 4096), one thread pinned to core 0
# and two threads on cores 0-1. Ours: the flash kernel (f32; for decode also f16 q, K, V), and
# the grouped matmul + softmax path. ggml: ggml_flash_attn_ext with f32 K/V and with f16 K/V,
# and its matmul + softmax graph (bench/peers/ggml_attention_peer.cc, which also checks ggml's
# outputs against a double-precision attention in the first round). Builds ggml once (CPU
# backend, Release, GGML_NATIVE, and GGML_LLAMAFILE on as llama.cpp builds it). Every timed
# run and the ggml build hold KVCHECK_CPU_LOCK, so other benchmarks taking it do not run
# alongside; work that ignores the lock is measured (the share of our cores that others
# took) and the run repeated.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 && $# -le 2 ]] || { sed -n '4,12p' "$0" >&2; exit 2; }
src=$(cd "$1" && pwd)
rounds=${2:-3}
build=${GGML_BUILD_DIR:-${TMPDIR:-/tmp}/ggml-build}
repetitions=${REPETITIONS:-5}
min_time=${MIN_TIME:-0.5}
lock=${KVCHECK_CPU_LOCK:-/tmp/kvcheck-cpu.lock}
max_foreign=${MAX_FOREIGN:-10}
attempts=${ATTEMPTS:-4}
[[ -f "$src/include/ggml.h" ]] || { echo "run_ggml_race: $src/include/ggml.h missing" >&2; exit 2; }
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)")
described=$(git -C "$src" describe --tags 2>/dev/null || echo "")

if ! find "$build" -name 'libggml-base.so' 2>/dev/null | grep -q .; then
  echo "building ggml into $build (waits for $lock) ..." >&2
  flock -o "$lock" cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_LLAMAFILE=ON -DGGML_BLAS=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=ON >/dev/null
  flock -o "$lock" cmake --build "$build" --target ggml -j "$(nproc)" >/dev/null
fi
libdir=$(dirname "$(find "$build" -name 'libggml-base.so' | head -1)")

work=$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-ggml-race.XXXXXX")
"${CXX:-g++}" -std=c++20 -O2 -Wall -Wextra -I. -I"$src/include" \
  bench/peers/ggml_attention_peer.cc -L"$libdir" -lggml -lggml-cpu -lggml-base \
  -Wl,-rpath,"$libdir" -o "$work/ggml_attention_peer"
ggml_info=$("$work/ggml_attention_peer" --info)
built=$(sed -n 's/.* commit=\([0-9a-f]*\).*/\1/p' <<<"$ggml_info")
[[ -n $built && $commit == "$built"* ]] ||
  echo "run_ggml_race: WARNING: $build was built from ggml ${built:-unknown}, not $commit" >&2
bazel build --config=opt //bench:attention_benchmark 2>&1 | tail -1 >&2
# Copied at once: a later bazel command with another config repoints bazel-bin.
cp bazel-bin/bench/attention_benchmark "$work/"
ours_commit=$(git rev-parse --short HEAD)
[[ -z $(git status --porcelain --untracked-files=no -- bench src third_party) ]] ||
  ours_commit+=" with uncommitted changes in bench/, src/ or third_party/"

cases=("512 512 1" "1 1024 0" "1 4096 0")  # Sq Skv causal
results="$work/results.txt"  # round sq skv threads path ms others%
: >"$results"
: >"$work/repeats"

# Busy and total ticks (1/100 s) of cores 0 .. $1 - 1 from /proc/stat; steal time (the
# hypervisor running someone else) counts as busy.
core_ticks() {
  awk -v n="$1" '$1 ~ /^cpu[0-9]+$/ && substr($1, 4) + 0 < n {
    busy += $2 + $3 + $4 + $7 + $8 + $9; for (i = 2; i <= 9; ++i) total += $i }
    END { print busy, total }' /proc/stat
}

# Runs a command holding the CPU lock, pinned to cores 0 .. threads - 1, its output to
# $work/run.out and run.err, and writes to $work/foreign the percentage of those cores' time
# that other processes took meanwhile (work that ignores the lock, a compile say, shows
# there). The lock's descriptor is closed for the command, so a daemon it starts cannot keep
# the lock.
pinned() {
  local threads=$1
  shift
  (
    flock 9
    read -r busy0 total0 < <(core_ticks "$threads")
    taskset -c "0-$((threads - 1))" "$@" >"$work/run.out" 2>"$work/run.err" 9>&-
    read -r busy1 total1 < <(core_ticks "$threads")
    times >"$work/times"  # line 2: the user and system time of this subshell's children
    awk -v busy=$((busy1 - busy0)) -v total=$((total1 - total0)) 'NR == 2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/); ours = 100 * (u[1] * 60 + u[2] + s[1] * 60 + s[2])
      f = total > 0 ? 100 * (busy - ours) / total : 0; printf "%d\n", f < 0 ? 0 : f + 0.5 }' \
      "$work/times" >"$work/foreign"
  ) 9>"$lock"
}

# Waits (up to 10 minutes) for a 2-second spell in which all cores together are at most
# max_foreign percent busy: a compile in progress is better waited out than measured against.
wait_quiet() {
  local waited busy0 total0 busy1 total1
  for ((waited = 0; waited < 600; waited += 2)); do
    read -r busy0 total0 < <(core_ticks "$(nproc)")
    sleep 2
    read -r busy1 total1 < <(core_ticks "$(nproc)")
    ((100 * (busy1 - busy0) <= max_foreign * (total1 - total0))) && return
  done
}

# pinned after a quiet spell, and again while others took more than max_foreign percent of
# its cores, at most `attempts` times; the last attempt is kept either way, with its share.
measured() {
  local _
  for _ in $(seq 1 "$attempts"); do
    wait_quiet
    pinned "$@" || return
    (($(cat "$work/foreign") <= max_foreign)) && return
    echo "  others took $(cat "$work/foreign")% of cores 0-$(($1 - 1)); again" >&2
    echo >>"$work/repeats"
  done
}

# Ours: flash and the grouped matmul + softmax path (labels "flash", "naive_grouped"), and for
# decode flash with f16 q, K, V too (BM_FlashDecode, label "f16"), beside ggml's f16 K/V.
run_ours() {  # round sq skv causal threads
  local filter="BM_SeedTable/kernel:(0|2)/Sq:$2/Skv:$3/causal:$4/threads:$5" expected=2
  if [[ $2 == 1 ]]; then
    filter="($filter|BM_FlashDecode/dtype:1/Sq:1/Skv:$3/threads:$5)"
    expected=3
  fi
  measured "$5" "$work/attention_benchmark" "--benchmark_filter=^$filter/" \
    --benchmark_repetitions="$repetitions" --benchmark_min_time="$min_time" \
    --benchmark_report_aggregates_only=true --benchmark_format=csv ||
    { cat "$work/run.err" >&2; echo "run_ggml_race: our benchmark failed" >&2; exit 1; }
  cp "$work/run.err" "$work/ours_context.txt"
  awk -F, -v r="$1" -v sq="$2" -v skv="$3" -v t="$5" -v f="$(cat "$work/foreign")" -v want=$expected '
    /real_time(_median)?",/ { gsub(/"/, "", $8); print r, sq, skv, t, "ours_" $8, $3, f; n++ }
    END { if (n != want) exit 1 }' "$work/run.out" >>"$results" ||
    { echo "run_ggml_race: our benchmark lacks a case of $2 x $3 (filter $filter)" >&2; exit 1; }
}

run_ggml() {  # round sq skv causal threads
  local check=()
  [[ $1 == 1 ]] && check=(--check)
  measured "$5" "$work/ggml_attention_peer" --sq="$2" --skv="$3" --causal="$4" --threads="$5" \
    --repetitions="$repetitions" --min_time="$min_time" "${check[@]}" || {
    cat "$work/run.out" "$work/run.err" >&2
    echo "run_ggml_race: the ggml peer failed (see the check lines above)" >&2
    exit 1
  }
  grep '^check' "$work/run.out" | sed 's/^/  /' >&2 || true
  awk -v r="$1" -v sq="$2" -v skv="$3" -v t="$5" -v f="$(cat "$work/foreign")" '/^result/ {
    split($2, p, "="); split($7, m, "="); print r, sq, skv, t, "ggml_" p[2], m[2], f }' \
    "$work/run.out" >>"$results"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$rounds"); do
  for c in "${cases[@]}"; do
    for threads in 1 2; do
      read -r sq skv causal <<<"$c"
      echo "round $round: $sq x $skv, $threads thread(s)" >&2
      if ((round % 2)); then
        run_ours "$round" "$sq" "$skv" "$causal" "$threads"
        run_ggml "$round" "$sq" "$skv" "$causal" "$threads"
      else
        run_ggml "$round" "$sq" "$skv" "$causal" "$threads"
        run_ours "$round" "$sq" "$skv" "$causal" "$threads"
      fi
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# The machine lines our benchmark prints when it has them (bench/machine_context.h).
simd=$(grep -E '^(simd|fma_peak_1_core|read_bandwidth_1_thread):' "$work/ours_context.txt" |
  paste -sd ';' - | sed 's/;/; /g' || true)
echo "machine: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;" \
  "CPU flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
    grep -xE 'avx2|fma|f16c|avx512f|avx512_bf16|avx512_fp16' | tr '\n' ' ')"
echo "ours: kvcheck $ours_commit (when built)," \
  "--config=opt, ${simd:-Highway dynamic dispatch (the benchmark does not print its target)}"
echo "ggml: commit $commit${described:+ ($described)}; $ggml_info"
echo "ggml build: $(grep -hE '^(CMAKE_BUILD_TYPE|GGML_NATIVE|GGML_LLAMAFILE|GGML_OPENMP|GGML_BLAS):' \
  "$build/CMakeCache.txt" | sed 's/:[A-Z]*=/=/' | tr '\n' ' ')"
echo "$rounds rounds x $repetitions repetitions of ${min_time}s; medians over the rounds;" \
  "f32 unless marked; ratio = ggml time / ours (above 1: ours is faster)"
echo "load average (1, 5, 15 min): $load_before before the runs, $load_after after; $(date -u +%FT%TZ)"
echo "other processes took $(awk '{ print $7 }' "$results" | sort -n | awk '{ a[NR] = $1 }
  END { printf "median %d%%, max %d%%", a[int((NR + 1) / 2)], a[NR] }') of the kept runs' cores;" \
  "$(wc -l <"$work/repeats") runs were repeated (others above ${max_foreign}%)"
echo
# The table: medians over the rounds. Columns in pairs, ratios ggml / ours; the f16 pair
# compares like with like (ggml's f16 K/V against our f16 q, K, V), decode only.
sort -k2,2n -k3,3n -k4,4n -k5,5 -k6,6g "$results" | awk '
  { key = $2 " " $3 " " $4 " " $5; v[key, ++n[key]] = $6 }
  function median(key,   c) {
    c = n[key]; return c == 0 ? 0 : c % 2 ? v[key, (c + 1) / 2] : (v[key, c / 2] + v[key, c / 2 + 1]) / 2 }
  function ms(x) { return x == 0 ? "-" : x < 1 ? sprintf("%.3f ms", x) : sprintf("%.2f ms", x) }
  function ratio(theirs, ours) { return ours == 0 ? "-" : sprintf("%.2fx", theirs / ours) }
  END {
    print "| shape (Sq, Skv) | threads | ours flash | ggml flash | ratio | ggml matmul + softmax | ratio | ours matmul + softmax (grouped) | ours flash, f16 | ggml flash, f16 K/V | ratio |"
    print "|---|---|---|---|---|---|---|---|---|---|---|"
    split("512 512|1 1024|1 4096", shapes, "|")
    for (s = 1; s <= 3; ++s) for (t = 1; t <= 2; ++t) {
      k = shapes[s] " " t
      ours = median(k " ours_flash"); ours16 = median(k " ours_f16")
      f32 = median(k " ggml_flash_f32"); f16 = median(k " ggml_flash_f16kv"); mm = median(k " ggml_matmul")
      split(shapes[s], d, " ")
      printf "| %s, %s%s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
        d[1], d[2], d[1] == 512 ? ", causal" : "", t, ms(ours), ms(f32), ratio(f32, ours),
        ms(mm), ratio(mm, ours), ms(median(k " ours_naive_grouped")), ms(ours16), ms(f16),
        ratio(f16, ours16)
    }
  }'
echo
echo "every round: round Sq Skv threads path ms others%"
sort -k2,2n -k3,3n -k4,4n -k5,5 -k1,1n "$results" | sed 's/^/  /'
