#!/usr/bin/env python3
"""PyTorch KV caches and attention, as the KV-cache chapter of "Build a Large Language Model
(From Scratch)" writes them, served to kvcheck over its process protocol:

    kvcheck --engine='python3 engines/python/torch_caches.py'            # every check passes
    kvcheck --engine='python3 engines/python/torch_caches.py --bug=NAME' # NAME must be killed

Strategies:
  torch_cat      cache_k = torch.cat([cache_k, k], dim=2) on every step
  torch_prealloc torch.zeros((B, KH, capacity, D)) filled through a pointer (ptr_current_pos),
                 doubled when full
  torch_window   cat, then keep the last W tokens: cache_k[:, :, -W:, :]
Kernel:
  torch_sdpa     scores = q @ k^T * scale, causal / window / additive masks by position,
                 softmax, @ v (GQA by repeat_interleave), in f32
Steppers (the chapter's MultiHeadAttention.forward(x, use_cache=True): the keys of a step are
the cache's tokens and the new chunk; attention by torch_sdpa; then the chunk is appended):
  torch_cat_step, torch_prealloc_step, torch_window_step (W = 8)
Models (the chapter's GPTModel with its KV cache, untrained: token and learned position
embeddings, two pre-norm blocks of GQA attention (one stepper per layer) and a GELU MLP, a
final norm and the output head; positions from the cache's pointer):
  gpt_cat, gpt_prealloc, gpt_window (W = 6)

Bugs (--bug=NAME, each one a mistake the chapter's text or exercises describe; each switch
acts on the caches and on the steppers and models built on them):
  window_overflow       the window is cut before the new chunk is added, so a chunk longer
                        than one token leaves more than W tokens in the cache; a step keeps
                        only the last W keys, new chunk included, before attending (exercise 5's
                        cache_k[:, :, -window_size:, :] on every fetch), so a chunk longer
                        than W loses keys its first queries need
  reset_forgets_pointer reset clears the buffers but not ptr_current_pos (exercise 2's cousin)
  positions_restart     the window cache numbers its slots from 0 again once it slides, and
                        the model takes its position ids from those numbers
  mask_from_zero        the causal mask is sliced from 0 instead of from the query's position
                        (exercise 3: "change the mask slice to start at 0")
  batch_change          reset keeps the buffer allocated for the first batch size, so a
                        generation with another batch size after a reset reuses it
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvcheck_engine  # noqa: E402

BUG = None


class CatCache:
    """torch.cat growth: every append concatenates onto the whole history."""

    def __init__(self, config):
        self.k = self.v = None

    def append(self, k, v):
        kvcheck_engine.refuse_mismatch(self.k, k, v)
        self.k = k.clone() if self.k is None else torch.cat([self.k, k], dim=2)
        self.v = v.clone() if self.v is None else torch.cat([self.v, v], dim=2)
        return self.k, self.v

    def view(self):
        return self.k, self.v

    def fork(self):
        copy = CatCache(None)
        copy.k, copy.v = self.k, self.v  # cat never writes in place: sharing is safe
        return copy

    def reset(self):
        self.k = self.v = None


class PreallocCache:
    """A preallocated buffer and a pointer; the buffer doubles when full."""

    def __init__(self, config):
        self.initial = max(1, config.initial_capacity)
        self.cache_k = self.cache_v = None
        self.ptr_current_pos = 0
        self.allocated = self.copied = 0

    def _grow(self, k, needed):
        batch, heads, _, dim = k.shape
        capacity = self.initial if self.cache_k is None else self.cache_k.shape[2]
        while capacity < needed:
            capacity *= 2
        new_k = torch.zeros((batch, heads, capacity, dim), dtype=k.dtype)
        new_v = torch.zeros((batch, heads, capacity, dim), dtype=k.dtype)
        self.allocated += 2 * new_k.numel() * new_k.element_size()
        if self.cache_k is not None and self.ptr_current_pos > 0:
            new_k[:, :, :self.ptr_current_pos] = self.cache_k[:, :, :self.ptr_current_pos]
            new_v[:, :, :self.ptr_current_pos] = self.cache_v[:, :, :self.ptr_current_pos]
            self.copied += 2 * new_k[:, :, :self.ptr_current_pos].numel() * new_k.element_size()
        self.cache_k, self.cache_v = new_k, new_v

    def append(self, k, v):
        kvcheck_engine.refuse_mismatch(self.cache_k, k, v)
        seq = k.shape[2]
        end = self.ptr_current_pos + seq
        if self.cache_k is None or end > self.cache_k.shape[2]:
            self._grow(k, end)
        self.cache_k[:, :, self.ptr_current_pos:end] = k
        self.cache_v[:, :, self.ptr_current_pos:end] = v
        self.ptr_current_pos = end
        return self.view()

    def view(self):
        return (self.cache_k[:, :, :self.ptr_current_pos],
                self.cache_v[:, :, :self.ptr_current_pos])

    def fork(self):
        copy = PreallocCache(kvcheck_engine.Config(self.initial))
        if self.cache_k is not None:
            copy.cache_k, copy.cache_v = self.cache_k.clone(), self.cache_v.clone()
        copy.ptr_current_pos = self.ptr_current_pos
        copy.allocated, copy.copied = self.allocated, self.copied
        return copy

    def reset(self):
        if BUG == "batch_change":
            if self.cache_k is not None:
                self.cache_k.zero_()
                self.cache_v.zero_()
        else:
            self.cache_k = self.cache_v = None
        if BUG != "reset_forgets_pointer":
            self.ptr_current_pos = 0

    def stats(self):
        held = 0 if self.cache_k is None else 2 * self.cache_k.numel() * self.cache_k.element_size()
        return {"capacity": 0 if self.cache_k is None else self.cache_k.shape[2],
                "bytes_allocated": self.allocated, "bytes_held": held,
                "bytes_growth_copied": self.copied}


class WindowCache:
    """Keeps the last W tokens: cache_k = cache_k[:, :, -W:, :] after every append."""

    def __init__(self, config):
        self.window = config.window
        self.k = self.v = None
        self.seen = 0  # tokens appended since the reset: the position of the next one

    def append(self, k, v):
        kvcheck_engine.refuse_mismatch(self.k, k, v)
        if BUG == "window_overflow":
            # The cut comes first, so the new chunk is never cut.
            old_k = None if self.k is None else self.k[:, :, -self.window:]
            old_v = None if self.v is None else self.v[:, :, -self.window:]
            self.k = k.clone() if old_k is None else torch.cat([old_k, k], dim=2)
            self.v = v.clone() if old_v is None else torch.cat([old_v, v], dim=2)
        else:
            self.k = k.clone() if self.k is None else torch.cat([self.k, k], dim=2)
            self.v = v.clone() if self.v is None else torch.cat([self.v, v], dim=2)
            self.k = self.k[:, :, -self.window:].contiguous()
            self.v = self.v[:, :, -self.window:].contiguous()
        self.seen += k.shape[2]
        return self.view()

    def view(self):
        length = self.k.shape[2]
        start = 0 if BUG == "positions_restart" else self.seen - length
        positions = torch.arange(start, start + length).repeat(self.k.shape[0], 1)
        return self.k, self.v, positions

    def fork(self):
        copy = WindowCache(kvcheck_engine.Config(window=self.window))
        copy.k, copy.v, copy.seen = self.k, self.v, self.seen
        return copy

    def reset(self):
        self.k = self.v = None
        self.seen = 0


def sdpa(q, k, v, params):
    """Attention by matmul and softmax over the allowed keys, in f32."""
    batch, heads, q_len, dim = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    if q.numel() == 0:
        # No output element (B, H, Sq or D is 0): nothing to compute. The masks below are
        # built per (query, key) before the batch broadcasts, and an empty batch of a
        # thousand queries over four million keys would still ask for gigabytes.
        return torch.empty(q.shape, dtype=q.dtype)
    qf, kf, vf = q.float(), k.float(), v.float()
    if heads != kv_heads:
        kf = kf.repeat_interleave(heads // kv_heads, dim=1)
        vf = vf.repeat_interleave(heads // kv_heads, dim=1)
    scale = params["scale"] if params["scale"] is not None else 1.0 / math.sqrt(dim)
    scores = (qf @ kf.transpose(-1, -2)) * scale
    # Positions: by default the queries are the newest tokens (bottom-right).
    if params["q_positions"] is not None:
        q_pos = params["q_positions"].view(batch, 1, q_len, 1)
    elif BUG == "mask_from_zero":
        q_pos = torch.arange(q_len).view(1, 1, q_len, 1)
    else:
        q_pos = torch.arange(kv_len - q_len, kv_len).view(1, 1, q_len, 1)
    if params["kv_positions"] is not None:
        k_pos = params["kv_positions"].view(batch, 1, 1, kv_len)
    else:
        k_pos = torch.arange(kv_len).view(1, 1, 1, kv_len)
    allowed = (k_pos >= 0) & (q_pos >= 0)
    if params["causal"]:
        allowed = allowed & (k_pos <= q_pos)
    if params["window"] > 0:
        allowed = allowed & (q_pos - k_pos < params["window"])
    if params["mask"] is not None:
        scores = scores + params["mask"].float()
        allowed = allowed & (params["mask"].float() != -math.inf)
    allowed = allowed.expand(scores.shape)
    scores = scores.masked_fill(~allowed, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    # A row with no allowed key is 0 (softmax over nothing gives NaN).
    weights = torch.where(allowed.any(dim=-1, keepdim=True), weights, torch.zeros_like(weights))
    # weights @ v would give 0 * inf = NaN for a key the mask removed whose v is infinite
    # (found by kvcheck: a removed key's v must never reach the result). So the product takes
    # the finite part of v, and the infinite or NaN entries of allowed keys are added by
    # indicator products (0/1 matrices: no 0 * inf anywhere).
    finite = torch.isfinite(vf)
    out = weights @ torch.where(finite, vf, torch.zeros_like(vf))
    if not bool(finite.all()):
        row_nan = torch.isnan(out)  # a NaN or +inf score already made the row NaN: keep it
        reach = allowed.float()
        has_nan = (reach @ torch.isnan(vf).float()) > 0
        has_pos = (reach @ (vf == math.inf).float()) > 0
        has_neg = (reach @ (vf == -math.inf).float()) > 0
        out = torch.where(has_pos, torch.full_like(out, math.inf), out)
        out = torch.where(has_neg, torch.full_like(out, -math.inf), out)
        out = torch.where(has_nan | (has_pos & has_neg) | row_nan,
                          torch.full_like(out, math.nan), out)
    return out.to(q.dtype)


def _params(**overrides):
    params = {"scale": None, "softcap": 0.0, "causal": True, "window": 0, "alibi_slopes": None,
              "mask": None, "q_positions": None, "kv_positions": None}
    params.update(overrides)
    return params


class CacheStep:
    """MultiHeadAttention.forward(use_cache=True) over one of the caches above."""

    def __init__(self, cache_class, window):
        self.cache = cache_class(kvcheck_engine.Config(initial_capacity=4, window=window))
        self.window = window
        self.seen = 0        # tokens since the reset: ptr_current_pos
        self.empty = True

    def reset(self):
        self.cache.reset()
        self.seen = 0
        self.empty = True

    def positions(self):
        """The position of every token in the cache, as the cache numbers them."""
        shown = self.cache.view()
        if len(shown) == 3:
            return shown[0], shown[1], shown[2][0]
        return shown[0], shown[1], torch.arange(shown[0].shape[2])

    def step(self, q, k_new, v_new):
        batch, seq = q.shape[0], q.shape[2]
        new_positions = self.seen + torch.arange(seq)
        if self.empty:
            keys, values, positions = k_new, v_new, new_positions
        else:
            k_old, v_old, old_positions = self.positions()
            keys = torch.cat([k_old, k_new], dim=2)
            values = torch.cat([v_old, v_new], dim=2)
            positions = torch.cat([old_positions, new_positions])
        if self.window > 0:
            if BUG == "window_overflow":  # cache_k[:, :, -window_size:, :] on every fetch
                keys, values = keys[:, :, -self.window:], values[:, :, -self.window:]
                positions = positions[-self.window:]
            params = _params(window=self.window,
                             q_positions=new_positions.repeat(batch, 1),
                             kv_positions=positions.repeat(batch, 1))
        else:
            params = _params()  # the newest tokens are the queries: bottom-right positions
        out = sdpa(q, keys, values, params)
        self.cache.append(k_new, v_new)
        self.seen += seq
        self.empty = False
        return out


class GPTModel:
    """The chapter's GPTModel with a KV cache (untrained, seeded weights)."""

    VOCAB, MAX_TOKENS, DIM, HEADS, KV_HEADS, LAYERS = 50, 64, 32, 4, 2, 2

    def __init__(self, cache_class, window):
        generator = torch.Generator().manual_seed(4)
        d, hd = self.DIM, self.DIM // self.HEADS

        def weight(*shape, scale=1.0):
            return torch.randn(*shape, generator=generator) * scale

        self.window, self.cache_class = window, cache_class
        self.tok_emb = weight(self.VOCAB, d)
        self.pos_emb = weight(self.MAX_TOKENS, d)
        self.layers = [{
            "wq": weight(d, self.HEADS * hd, scale=d ** -0.5),
            "wk": weight(d, self.KV_HEADS * hd, scale=d ** -0.5),
            "wv": weight(d, self.KV_HEADS * hd, scale=d ** -0.5),
            "wo": weight(self.HEADS * hd, d, scale=d ** -0.5),
            "w1": weight(d, 4 * d, scale=d ** -0.5),
            "w2": weight(4 * d, d, scale=(4 * d) ** -0.5),
            "cache": CacheStep(cache_class, window),
        } for _ in range(self.LAYERS)]
        self.out_head = weight(d, self.VOCAB, scale=d ** -0.5)
        self.current_pos = 0

    def reset(self):
        for layer in self.layers:
            layer["cache"].reset()
        self.current_pos = 0

    def forward(self, tokens, use_cache):
        batch, seq = tokens.shape
        start = self.current_pos if use_cache else 0
        if use_cache and BUG == "positions_restart" and not self.layers[0]["cache"].empty:
            # The next position read off the cache's own numbering.
            start = int(self.layers[0]["cache"].positions()[2][-1]) + 1
        x = self.tok_emb[tokens] + self.pos_emb[start:start + seq]
        hd = self.DIM // self.HEADS
        for layer in self.layers:
            h = torch.nn.functional.layer_norm(x, (self.DIM,))
            q = (h @ layer["wq"]).view(batch, seq, self.HEADS, hd).transpose(1, 2)
            k = (h @ layer["wk"]).view(batch, seq, self.KV_HEADS, hd).transpose(1, 2)
            v = (h @ layer["wv"]).view(batch, seq, self.KV_HEADS, hd).transpose(1, 2)
            if use_cache:
                attended = layer["cache"].step(q, k, v)
            else:  # the recomputation: causal (windowed) attention over the whole sequence
                attended = sdpa(q, k, v, _params(window=self.window))
            x = x + attended.transpose(1, 2).reshape(batch, seq, -1) @ layer["wo"]
            h = torch.nn.functional.layer_norm(x, (self.DIM,))
            x = x + torch.nn.functional.gelu(h @ layer["w1"]) @ layer["w2"]
        if use_cache:
            self.current_pos += seq
        return torch.nn.functional.layer_norm(x, (self.DIM,)) @ self.out_head


def main():
    global BUG
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bug", choices=["window_overflow", "reset_forgets_pointer",
                                          "positions_restart", "mask_from_zero", "batch_change"])
    BUG = parser.parse_args().bug
    torch.set_num_threads(1)
    everything = ("f32", "f16", "bf16")
    kvcheck_engine.serve(
        strategies=[
            kvcheck_engine.Strategy("torch_cat", CatCache, flags=("fork", "reset"),
                                    dtypes=everything, summary="torch.cat on every append"),
            kvcheck_engine.Strategy("torch_prealloc", PreallocCache,
                                    flags=("fork", "reset", "stats", "amortized_growth"),
                                    dtypes=everything, initial_capacity=4,
                                    summary="preallocated buffer and a pointer, doubled"),
            kvcheck_engine.Strategy("torch_window", WindowCache,
                                    flags=("windowed", "fork", "reset"), dtypes=everything,
                                    window=8, summary="the last W tokens"),
        ],
        kernels=[
            kvcheck_engine.Kernel("torch_sdpa", sdpa,
                                  features=("scale", "causal", "window", "mask", "positions",
                                            "gqa"),
                                  dtypes=everything, summary="matmul + softmax in f32"),
        ],
        steppers=[
            kvcheck_engine.Stepper("torch_cat_step", lambda w: CacheStep(CatCache, 0),
                                   flags=("reset", "gqa"), dtypes=everything,
                                   summary="attention over torch.cat's cache"),
            kvcheck_engine.Stepper("torch_prealloc_step", lambda w: CacheStep(PreallocCache, 0),
                                   flags=("reset", "gqa"), dtypes=everything,
                                   summary="attention over the preallocated cache"),
            kvcheck_engine.Stepper("torch_window_step", lambda w: CacheStep(WindowCache, w),
                                   flags=("windowed", "reset", "gqa"), dtypes=everything,
                                   window=8, summary="windowed attention over the last W"),
        ],
        models=[
            kvcheck_engine.Model(name, factory, GPTModel.VOCAB, GPTModel.MAX_TOKENS,
                                 flags=("reset", "batch"), summary=summary)
            for name, factory, summary in [
                ("gpt_cat", lambda: GPTModel(CatCache, 0), "GPT, torch.cat cache"),
                ("gpt_prealloc", lambda: GPTModel(PreallocCache, 0),
                 "GPT, preallocated cache"),
                ("gpt_window", lambda: GPTModel(WindowCache, 6), "GPT, sliding window W = 6"),
            ]
        ],
        name="torch-caches" + ("" if BUG is None else "[bug=%s]" % BUG),
        backend="torch")


if __name__ == "__main__":
    main()
