#!/usr/bin/python3
"""The PyTorch peer of the generation experiment of the KV-cache chapter of "Build a Large
Language Model (From Scratch)": the same GPT-2 (weights read from a kvcheck weight file,
src/model/decoder_weights.h), generating greedily without a cache, with a torch.cat cache
and with a preallocated cache, at the given thread counts.

  /usr/bin/python3 bench/peers/gpt2_torch.py WEIGHTS [--prompt 15496,11,314,716]
      [--new-tokens 200] [--threads 1,2] [--modes none,cat,prealloc] [--print-tokens]

Needs Debian's python3-torch (tools/setup.sh --peers). Written from the model's definition
(LayerNorm, tanh GELU, causal softmax attention, tied head), not from kvcheck's C++.
"""
import argparse
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def load_weights(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"KVCKWTS1":
        sys.exit(f"{path}: not a kvcheck weight file")
    at = 8
    (n,) = struct.unpack_from("<I", data, at)
    at += 4
    config = dict(line.split("=", 1) for line in data[at:at + n].decode().split("\n") if line)
    at += n
    if config["kind"] != "gpt2":
        sys.exit("this peer implements gpt2 only")
    (count,) = struct.unpack_from("<I", data, at)
    at += 4
    tensors = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<I", data, at)
        at += 4
        name = data[at:at + name_len].decode()
        at += name_len
        (rank,) = struct.unpack_from("<I", data, at)
        at += 4
        shape = struct.unpack_from(f"<{rank}q", data, at)
        at += 8 * rank
        size = int(np.prod(shape))
        array = np.frombuffer(data, dtype="<f4", count=size, offset=at).reshape(shape)
        at += 4 * size
        tensors[name] = torch.from_numpy(array.copy())
    return {k: int(v) if k not in ("kind", "norm_eps", "rope_theta") else v
            for k, v in config.items()}, tensors


class Gpt2:
    def __init__(self, config, w):
        self.c = config
        self.w = w
        self.heads = config["num_heads"]
        self.eps = float(config["norm_eps"])

    def layer_qkv(self, l, x):
        w, p = self.w, f"layers.{l}."
        h = F.layer_norm(x, (x.shape[-1],), w[p + "attn_norm.weight"], w[p + "attn_norm.bias"],
                         self.eps)
        q = F.linear(h, w[p + "wq"], w[p + "bq"])
        k = F.linear(h, w[p + "wk"], w[p + "bk"])
        v = F.linear(h, w[p + "wv"], w[p + "bv"])
        s = x.shape[0]
        split = lambda t: t.view(s, self.heads, -1).transpose(0, 1)  # (H, S, D)
        return split(q), split(k), split(v)

    def layer_rest(self, l, x, q, keys, values, first):
        """Attention of q (positions first..) over keys/values (positions 0..), then MLP."""
        w, p = self.w, f"layers.{l}."
        s, total = q.shape[1], keys.shape[1]
        scores = q @ keys.transpose(1, 2) / math.sqrt(q.shape[-1])
        if s > 1:
            qpos = torch.arange(first, first + s).unsqueeze(1)
            kpos = torch.arange(total).unsqueeze(0)
            scores = scores.masked_fill(kpos > qpos, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ values  # (H, S, D)
        out = out.transpose(0, 1).reshape(s, -1)
        x = x + F.linear(out, w[p + "wo"], w[p + "bo"])
        h = F.layer_norm(x, (x.shape[-1],), w[p + "mlp_norm.weight"], w[p + "mlp_norm.bias"],
                         self.eps)
        h = F.gelu(F.linear(h, w[p + "w_up"], w[p + "b_up"]), approximate="tanh")
        return x + F.linear(h, w[p + "w_down"], w[p + "b_down"])

    def embed(self, tokens, first):
        ids = torch.tensor(tokens, dtype=torch.long)
        return (self.w["token_embedding"][ids] +
                self.w["position_embedding"][first:first + len(tokens)])

    def head(self, x):
        h = F.layer_norm(x[-1:], (x.shape[-1],), self.w["final_norm.weight"],
                         self.w["final_norm.bias"], self.eps)
        return F.linear(h, self.w["token_embedding"])[0]

    def forward_full(self, tokens):
        x = self.embed(tokens, 0)
        for l in range(self.c["num_layers"]):
            q, k, v = self.layer_qkv(l, x)
            x = self.layer_rest(l, x, q, k, v, 0)
        return self.head(x)


def generate(model, prompt, new_tokens, mode):
    layers = model.c["num_layers"]
    tokens = list(prompt)
    out = []
    if mode == "prealloc":
        max_len = len(prompt) + new_tokens
        d = model.c["width"] // model.heads
        k_cache = [torch.empty(model.heads, max_len, d) for _ in range(layers)]
        v_cache = [torch.empty(model.heads, max_len, d) for _ in range(layers)]
    else:
        k_cache = [None] * layers
        v_cache = [None] * layers
    pos = 0
    feed = list(prompt)
    with torch.inference_mode():
        while len(out) < new_tokens:
            if mode == "none":
                logits = model.forward_full(tokens)
            else:
                x = model.embed(feed, pos)
                for l in range(layers):
                    q, k, v = model.layer_qkv(l, x)
                    if mode == "cat":
                        k_cache[l] = k if k_cache[l] is None else torch.cat([k_cache[l], k], 1)
                        v_cache[l] = v if v_cache[l] is None else torch.cat([v_cache[l], v], 1)
                        keys, values = k_cache[l], v_cache[l]
                    else:
                        k_cache[l][:, pos:pos + len(feed)] = k
                        v_cache[l][:, pos:pos + len(feed)] = v
                        keys = k_cache[l][:, :pos + len(feed)]
                        values = v_cache[l][:, :pos + len(feed)]
                    x = model.layer_rest(l, x, q, keys, values, pos)
                logits = model.head(x)
                pos += len(feed)
            token = int(torch.argmax(logits))
            out.append(token)
            tokens.append(token)
            feed = [token]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("weights")
    parser.add_argument("--prompt", default="15496,11,314,716")
    parser.add_argument("--new-tokens", type=int, default=200)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--modes", default="none,cat,prealloc")
    parser.add_argument("--print-tokens", action="store_true")
    args = parser.parse_args()
    config, weights = load_weights(args.weights)
    model = Gpt2(config, weights)
    prompt = [int(t) for t in args.prompt.split(",")]
    print(f"torch {torch.__version__}, {config['num_layers']} layers, width {config['width']}")
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for mode in args.modes.split(","):
            start = time.perf_counter()
            tokens = generate(model, prompt, args.new_tokens, mode)
            seconds = time.perf_counter() - start
            print(f"torch {mode:<12} threads {threads}  {args.new_tokens / seconds:8.2f} tokens/s"
                  f"  {seconds:7.2f} s", flush=True)
            if args.print_tokens:
                print("tokens " + ",".join(map(str, tokens)), flush=True)


if __name__ == "__main__":
    main()
