#!/usr/bin/env bash
# The PyTorch token check (tag `peers`, also `manual`: not part of `bazel test //...`):
#   tools/setup.sh --peers && bazel test //bench/peers:torch_tokens_test
# Writes untrained weights with our benchmark binary, generates greedily with ours (prealloc
# cache) and with PyTorch (cat cache and recomputation), and requires identical tokens:
# a small GPT-2 for 60 tokens, then the 124M shape for 20 tokens.
set -euo pipefail
bench=$1
script=$2
python=/usr/bin/python3
"$python" -c "import torch" || { echo "python3-torch missing: tools/setup.sh --peers"; exit 1; }
dir=${TEST_TMPDIR:-$(mktemp -d)}
check() {
  local model=$1 n=$2
  "$bench" --model="$model" --weights_out="$dir/$model.bin" >/dev/null
  ours=$("$bench" --weights="$dir/$model.bin" --new_tokens="$n" --threads=1 \
    --strategies=prealloc --print_tokens | awk '/^tokens/ {print $2}')
  theirs=$("$python" "$script" "$dir/$model.bin" --new-tokens "$n" --threads 1 \
    --modes cat,none --print-tokens | awk '/^tokens/ {print $2}' | sort -u)
  echo "$model ours:  $ours"
  echo "$model torch: $theirs"
  if [[ -z "$ours" || "$ours" != "$theirs" ]]; then
    echo "FAIL: $model tokens differ"
    exit 1
  fi
}
check gpt2-tiny 60
check gpt2-124m 20
echo "PASS: identical tokens"
