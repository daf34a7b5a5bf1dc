#!/usr/bin/env python3
"""A minimal Python engine on numpy, the shortest complete example of kvcheck_engine:

    kvcheck --engine='python3 engines/python/numpy_caches.py'

Two strategies, with fork and reset: "numpy_cat", every append concatenates onto the history
(np.concatenate); "numpy_ring", a sliding window in a ring of W slots that append writes in
place and returns as it is (its buffers change under the arrays it returned before). The
transport benchmark also uses numpy_cat to measure the protocol's speed.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvcheck_engine  # noqa: E402
from kvcheck_engine import Config  # noqa: E402


class CatCache:
    def __init__(self, config):
        self.k = self.v = None

    def append(self, k, v):
        kvcheck_engine.refuse_mismatch(self.k, k, v)
        self.k = k if self.k is None else np.concatenate([self.k, k], axis=2)
        self.v = v if self.v is None else np.concatenate([self.v, v], axis=2)
        return self.k, self.v

    def fork(self):
        copy = CatCache(None)
        copy.k, copy.v = self.k, self.v  # never written in place: sharing is safe
        return copy

    def reset(self):
        self.k = self.v = None


class RingCache:
    """A sliding window of the last W tokens in a ring of W slots, written in place: append
    returns slices of the ring buffers (kvcheck serialises them at once), with each slot's
    position once the ring is full. The next appends overwrite those buffers, as a real
    engine's ring does."""

    def __init__(self, config):
        self.window = config.window
        self.k = self.v = self.positions = None
        self.count = 0

    def append(self, k, v):
        kvcheck_engine.refuse_mismatch(self.k, k, v)
        batch, heads, seq, dim = k.shape
        if self.k is None:
            self.k = np.zeros((batch, heads, self.window, dim), dtype=k.dtype)
            self.v = np.zeros((batch, heads, self.window, dim), dtype=v.dtype)
            self.positions = np.full((batch, self.window), -1, dtype=np.int64)
        for t in range(seq):  # a chunk longer than W keeps its last W tokens
            slot = (self.count + t) % self.window
            self.k[:, :, slot] = k[:, :, t]
            self.v[:, :, slot] = v[:, :, t]
            self.positions[:, slot] = self.count + t
        self.count += seq
        if self.count < self.window:  # not full yet: slots 0 .. count - 1 hold positions 0 ..
            return self.k[:, :, :self.count], self.v[:, :, :self.count]
        return self.k, self.v, self.positions

    def fork(self):
        copy = RingCache(Config(window=self.window))
        if self.k is not None:
            copy.k, copy.v, copy.positions = self.k.copy(), self.v.copy(), self.positions.copy()
        copy.count = self.count
        return copy

    def reset(self):
        self.k = self.v = self.positions = None
        self.count = 0


if __name__ == "__main__":
    kvcheck_engine.serve(
        strategies=[kvcheck_engine.Strategy("numpy_cat", CatCache, flags=("fork", "reset"),
                                            dtypes=("f32", "f16", "bf16"),
                                            summary="np.concatenate on every append"),
                    kvcheck_engine.Strategy("numpy_ring", RingCache,
                                            flags=("windowed", "fork", "reset"), window=4,
                                            dtypes=("f32", "f16", "bf16"),
                                            summary="a ring of W slots written in place")],
        name="numpy-caches")
