#!/usr/bin/python3
"""Regression tests of the engine module itself (kvcheck_engine.py), driven through its
protocol with in-memory pipes.

A cache may return slices of buffers it rewrites in place later. The module once kept those
arrays, not what it had sent, as a cache's last view: a fork inherited the parent's arrays, and
after Prefill, Fork, Decode(parent) the fork's view showed the parent's new token, a false
alarm on a correct cache.
"""

import io
import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvcheck_engine  # noqa: E402
import numpy_caches  # noqa: E402


def message(op, tensors=(), **fields):
    header = dict(fields, op=op)
    if tensors:
        header["tensors"] = [{"name": n, "dtype": "f32", "shape": list(a.shape)}
                             for n, a in tensors]
    data = json.dumps(header).encode() + b"\n"
    for _, array in tensors:
        data += np.ascontiguousarray(array, dtype="<f4").tobytes()
    return data


def replies(data):
    """The replies in `data`: (header, {name: float32 array or int64 positions})."""
    stream = io.BytesIO(data)
    out = []
    while True:
        line = stream.readline()
        if not line:
            return out
        header = json.loads(line)
        tensors = {}
        for t in header.get("tensors", []):
            dtype = "<i8" if t["dtype"] == "i64" else "<f4"
            count = int(np.prod(t["shape"])) if t["shape"] else 1
            raw = stream.read(count * np.dtype(dtype).itemsize)
            tensors[t["name"]] = np.frombuffer(raw, dtype=dtype).reshape(t["shape"])
        out.append((header, tensors))


def run(requests):
    writer = io.BytesIO()
    server = kvcheck_engine._Server(
        "test", [kvcheck_engine.Strategy("numpy_ring", numpy_caches.RingCache,
                                         flags=("windowed", "fork", "reset"), window=1)],
        [], "numpy", io.BytesIO(b"".join(requests)), writer)
    server.run()
    return replies(writer.getvalue())


def token(value):
    return np.full((1, 1, 1, 1), value, dtype=np.float32)


class ForkedViewTest(unittest.TestCase):
    def test_a_fork_keeps_the_view_it_had_when_the_parent_writes_in_place(self):
        prefill = np.array([1.0, 2.0], dtype=np.float32).reshape(1, 1, 2, 1)
        out = run([
            message("create", strategy="numpy_ring", config={"window": 1}),
            message("append", [("k", prefill), ("v", prefill)], cache=1),
            message("fork", cache=1),
            message("append", [("k", token(3.0)), ("v", token(3.0))], cache=1),
            message("view", cache=2),
            message("view", cache=1),
        ])
        for header, _ in out:
            self.assertTrue(header.get("ok"), header)
        fork_view, parent_view = out[4][1], out[5][1]
        # The fork still shows position 1 (value 2); the parent position 2 (value 3).
        self.assertEqual(fork_view["k"].ravel().tolist(), [2.0])
        self.assertEqual(fork_view["positions"].ravel().tolist(), [1])
        self.assertEqual(parent_view["k"].ravel().tolist(), [3.0])
        self.assertEqual(parent_view["positions"].ravel().tolist(), [2])


if __name__ == "__main__":
    unittest.main()
