#!/usr/bin/env bash
# bench/peers/run_generation_race.sh — the generation experiment of the KV-cache chapter of
# "Build a Large Language Model (From Scratch)", ours beside PyTorch, in one run.
#
#   bench/peers/run_generation_race.sh [MODEL] [NEW_TOKENS] [THREADS]
#     MODEL       gpt2-124m (default) or gpt2-tiny
#     NEW_TOKENS  default 200 (prompt: the 4 tokens of "Hello, I am")
#     THREADS     default 1,2
#
# Needs tools/setup.sh --peers (Debian's python3-torch). Builds //bench:generation_benchmark
# with --config=opt, writes the untrained weights once, runs ours (no cache, then every cache
# strategy) and PyTorch (no cache, torch.cat cache, preallocated cache) at each thread count,
# and checks that every run generated the same tokens. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-gpt2-124m}
new_tokens=${2:-200}
threads=${3:-1,2}
python=/usr/bin/python3  # Debian's interpreter: python3-torch is installed for it
"$python" -c "import torch" 2>/dev/null || {
  echo "run_generation_race: PyTorch missing; run tools/setup.sh --peers" >&2
  exit 1
}
bazel build --config=opt //bench:generation_benchmark 2>&1 | tail -1 >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-race.XXXXXX")
cp bazel-bin/bench/generation_benchmark "$work/"
"$work/generation_benchmark" --model="$model" --weights_out="$work/weights.bin" >/dev/null

"$work/generation_benchmark" --weights="$work/weights.bin" --new_tokens="$new_tokens" \
  --threads="$threads" --strategies=none,prealloc,concat,ring,interleaved,scattered \
  --print_tokens | tee "$work/ours.txt" | grep -v '^tokens'
"$python" bench/peers/gpt2_torch.py "$work/weights.bin" --new-tokens "$new_tokens" \
  --threads "$threads" --print-tokens | tee "$work/torch.txt" | grep -v '^tokens'

distinct=$(grep -h '^tokens' "$work/ours.txt" "$work/torch.txt" | sort -u | wc -l)
runs=$(grep -h '^tokens' "$work/ours.txt" "$work/torch.txt" | wc -l)
if [[ $distinct -eq 1 ]]; then
  echo "identical tokens in all $runs runs (ours and PyTorch)"
else
  echo "TOKENS DIFFER: $distinct distinct sequences over $runs runs (see $work)"
  exit 1
fi
