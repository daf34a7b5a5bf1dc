#!/usr/bin/env python3
"""A minimal Python engine on numpy, the shortest complete example of kvcheck_engine:

    kvcheck --engine='python3 engines/python/numpy_caches.py'

One strategy, "numpy_cat": every append concatenates onto the history (np.concatenate), with
fork and reset. (The transport benchmark also uses it to measure the protocol's speed.)
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvcheck_engine  # noqa: E402


class CatCache:
    def __init__(self, config):
        self.k = self.v = None

    def append(self, k, v):
        self.k = k if self.k is None else np.concatenate([self.k, k], axis=2)
        self.v = v if self.v is None else np.concatenate([self.v, v], axis=2)
        return self.k, self.v

    def fork(self):
        copy = CatCache(None)
        copy.k, copy.v = self.k, self.v  # never written in place: sharing is safe
        return copy

    def reset(self):
        self.k = self.v = None


if __name__ == "__main__":
    kvcheck_engine.serve(
        strategies=[kvcheck_engine.Strategy("numpy_cat", CatCache, flags=("fork", "reset"),
                                            dtypes=("f32", "f16", "bf16"),
                                            summary="np.concatenate on every append")],
        name="numpy-caches")
