#!/usr/bin/env python3
"""A small language model on numpy, served to kvcheck at the stepper and model levels:

    kvcheck --engine='python3 engines/python/numpy_model.py'            # every check passes
    kvcheck --engine='python3 engines/python/numpy_model.py --bug=NAME' # NAME must be killed

Steppers (the fused append-then-attend of model code, kvcheck_engine.Stepper):
  numpy_step         causal attention over every token since the reset
  numpy_window_step  the same over each query's last W tokens; the cache keeps W tokens
Models (token ids -> logits, kvcheck_engine.Model): a two-layer pre-norm transformer with
learned absolute positions and untrained (seeded) weights, whose layers use the steppers:
  numpy_lm           full attention
  numpy_lm_window    sliding-window attention, W = 6

Bugs (--bug=NAME):
  window_cut_first      the window step cuts the cache to the last W tokens, new chunk
                        included, before attending: a chunk longer than W loses keys its first
                        queries need
  positions_from_cache  the window model numbers new tokens from the length of its cache,
                        which stops growing at W
  reset_one_layer       the model's reset forgets the first layer's cache only
  batch_change_rebuilds  a cached forward of another batch size without a reset rebuilds the
                        caches for it silently and keeps the position pointer
  uncached_resets_pointer  an uncached forward (a recomputation between generation steps)
                        sets the position pointer back to 0: the next cached chunk is
                        numbered from 0 over a cache that still holds the earlier tokens
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvcheck_engine  # noqa: E402

BUG = None


def masked_attention(q, k, v, q_pos, k_pos, window):
    """Causal (and windowed) softmax attention by positions, in float64; q (B, H, S, D), k and
    v (B, KH, T, D) with H a multiple of KH; q_pos (S,), k_pos (T,)."""
    heads, kv_heads = q.shape[1], k.shape[1]
    k = np.repeat(k.astype(np.float64), heads // kv_heads, axis=1)
    v = np.repeat(v.astype(np.float64), heads // kv_heads, axis=1)
    scores = q.astype(np.float64) @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    allowed = k_pos[None, :] <= q_pos[:, None]
    if window > 0:
        allowed &= q_pos[:, None] - k_pos[None, :] < window
    scores = np.where(allowed, scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)  # every query sees at least itself
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v


class Step:
    """Keeps K and V since the reset (the last W of them when windowed)."""

    def __init__(self, window):
        self.window = window
        self.reset()

    def reset(self):
        self.k = self.v = None
        self.seen = 0  # tokens stepped since the reset: the position of the next one

    def step(self, q, k_new, v_new):
        seq = q.shape[2]
        k = k_new if self.k is None else np.concatenate([self.k, k_new], axis=2)
        v = v_new if self.v is None else np.concatenate([self.v, v_new], axis=2)
        if self.window > 0 and BUG == "window_cut_first":
            k, v = k[:, :, -self.window:], v[:, :, -self.window:]
        first = self.seen + seq - k.shape[2]  # the position of k's first slot
        out = masked_attention(q, k, v, self.seen + np.arange(seq), first + np.arange(k.shape[2]),
                               self.window)
        self.seen += seq
        if self.window > 0:
            k, v = k[:, :, -self.window:], v[:, :, -self.window:]
        self.k, self.v = k, v
        return out.astype(q.dtype)


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


class LanguageModel:
    """Embedding + positions, two pre-norm attention/MLP blocks, an output projection."""

    VOCAB, MAX_TOKENS, DIM, HEADS, KV_HEADS, LAYERS = 48, 64, 32, 4, 2, 2

    def __init__(self, window):
        rng = np.random.default_rng(4)  # untrained weights, the same in every model object
        d, hd = self.DIM, self.DIM // self.HEADS
        scale = 1 / np.sqrt(d)
        self.window = window
        self.embedding = rng.standard_normal((self.VOCAB, d)).astype(np.float32)
        self.positions = rng.standard_normal((self.MAX_TOKENS, d)).astype(np.float32)
        self.layers = []
        for _ in range(self.LAYERS):
            self.layers.append({
                "wq": (rng.standard_normal((d, self.HEADS * hd)) * scale).astype(np.float32),
                "wk": (rng.standard_normal((d, self.KV_HEADS * hd)) * scale).astype(np.float32),
                "wv": (rng.standard_normal((d, self.KV_HEADS * hd)) * scale).astype(np.float32),
                "wo": (rng.standard_normal((self.HEADS * hd, d)) * scale).astype(np.float32),
                "w1": (rng.standard_normal((d, 2 * d)) * scale).astype(np.float32),
                "w2": (rng.standard_normal((2 * d, d)) * scale).astype(np.float32),
                "cache": Step(window),
            })
        self.out = (rng.standard_normal((d, self.VOCAB)) * scale).astype(np.float32)
        self.seen = 0

    def reset(self):
        for i, layer in enumerate(self.layers):
            if BUG != "reset_one_layer" or i == 0:
                layer["cache"].reset()
        self.seen = 0

    def forward(self, tokens, use_cache):
        batch, seq = tokens.shape
        first_k = self.layers[0]["cache"].k
        if (use_cache and BUG == "batch_change_rebuilds" and first_k is not None
                and first_k.shape[0] != batch):
            for layer in self.layers:
                layer["cache"].reset()
                layer["cache"].seen = self.seen
        if use_cache:
            start = self.seen
            if BUG == "positions_from_cache" and self.layers[0]["cache"].k is not None:
                start = self.layers[0]["cache"].k.shape[2]
        else:
            start = 0
            if BUG == "uncached_resets_pointer":
                self.seen = 0
        x = self.embedding[tokens] + self.positions[start:start + seq]
        hd = self.DIM // self.HEADS
        for layer in self.layers:
            h = layer_norm(x)
            # (B, S, heads, hd) -> (B, heads, S, hd): transposed views, as model code has them.
            q = (h @ layer["wq"]).reshape(batch, seq, self.HEADS, hd).transpose(0, 2, 1, 3)
            k = (h @ layer["wk"]).reshape(batch, seq, self.KV_HEADS, hd).transpose(0, 2, 1, 3)
            v = (h @ layer["wv"]).reshape(batch, seq, self.KV_HEADS, hd).transpose(0, 2, 1, 3)
            if use_cache:
                attended = layer["cache"].step(q, k, v)
            else:  # the recomputation: plain masked attention over the whole sequence
                positions = np.arange(seq)
                attended = masked_attention(q, k, v, positions, positions, self.window)
            attended = attended.astype(np.float32).transpose(0, 2, 1, 3).reshape(batch, seq, -1)
            x = x + attended @ layer["wo"]
            x = x + np.maximum(layer_norm(x) @ layer["w1"], 0) @ layer["w2"]
        if use_cache:
            self.seen += seq
        return layer_norm(x) @ self.out


def main():
    global BUG
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bug", choices=["window_cut_first", "positions_from_cache",
                                          "reset_one_layer", "uncached_resets_pointer",
                                          "batch_change_rebuilds"])
    BUG = parser.parse_args().bug
    lm = LanguageModel
    kvcheck_engine.serve(
        steppers=[
            kvcheck_engine.Stepper("numpy_step", lambda window: Step(0),
                                   flags=("reset", "gqa"), dtypes=("f32", "f16"),
                                   summary="causal attention over every token"),
            kvcheck_engine.Stepper("numpy_window_step", Step, flags=("windowed", "reset", "gqa"),
                                   dtypes=("f32", "f16"), window=6,
                                   summary="each query's last W tokens"),
        ],
        models=[
            kvcheck_engine.Model("numpy_lm", lambda: LanguageModel(0), lm.VOCAB, lm.MAX_TOKENS,
                                 flags=("reset", "batch"), summary="2 layers, full attention"),
            kvcheck_engine.Model("numpy_lm_window", lambda: LanguageModel(6), lm.VOCAB,
                                 lm.MAX_TOKENS, flags=("reset", "batch"),
                                 summary="2 layers, sliding window W = 6"),
        ],
        name="numpy-model" + ("" if BUG is None else "[bug=%s]" % BUG))


if __name__ == "__main__":
    main()
