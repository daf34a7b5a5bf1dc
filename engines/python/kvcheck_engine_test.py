#!/usr/bin/python3
"""Regression tests of the engine module itself (kvcheck_engine.py), driven through its
protocol with in-memory pipes.

A cache may return slices of buffers it rewrites in place later. The module once kept those
arrays, not what it had sent, as a cache's last view: a fork inherited the parent's arrays, and
after Prefill, Fork, Decode(parent) the fork's view showed the parent's new token, a false
alarm on a correct cache.

FixedShapes serves attention code built for one set of shapes through resets that change
them: a new object after such a reset, the old one (reset) otherwise, a refusal without one.
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


class FixedShapesTest(unittest.TestCase):
    """FixedShapes serves code built for one set of shapes through resets that change them."""

    class OneShape:
        """Built for one (B, H, KH, D): refuses anything else, as a module with buffers of
        fixed size would fail."""

        built = 0

        def __init__(self, batch, heads, kv_heads, head_dim):
            FixedShapesTest.OneShape.built += 1
            self.shape = (batch, heads, kv_heads, head_dim)
            self.steps = 0

        def step(self, q, k, v):
            assert (q.shape[0], q.shape[1], k.shape[1], q.shape[3]) == self.shape
            self.steps += 1
            return q

        def reset(self):
            self.steps = 0

    def test_rebuilds_after_a_reset_that_changes_shapes_only(self):
        FixedShapesTest.OneShape.built = 0
        factory = kvcheck_engine.FixedShapes(
            lambda b, h, kh, d, dtype, w: FixedShapesTest.OneShape(b, h, kh, d))
        stepper = factory(0)
        small = np.zeros((1, 2, 3, 4), np.float32)  # B=1, H=KH=2, S=3, D=4
        stepper.step(small, small, small)
        stepper.step(small, small, small)
        stepper.reset()
        stepper.step(small, small, small)  # same shapes: the same object, reset
        self.assertEqual(FixedShapesTest.OneShape.built, 1)
        self.assertEqual(stepper.inner.steps, 1)
        stepper.reset()
        wide_q, wide_kv = np.zeros((2, 2, 1, 8), np.float32), np.zeros((2, 1, 1, 8), np.float32)
        stepper.step(wide_q, wide_kv, wide_kv)  # other shapes after a reset: rebuilt
        self.assertEqual(FixedShapesTest.OneShape.built, 2)
        with self.assertRaises(kvcheck_engine.EngineError):
            stepper.step(small, small, small)  # other shapes without a reset: refused
        self.assertEqual(stepper.inner.shape, (2, 2, 1, 8))


if __name__ == "__main__":
    unittest.main()
