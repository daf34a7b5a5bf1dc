"""kvcheck_engine: make a Python KV cache or attention function checkable by kvcheck.

kvcheck drives an engine in a child process over stdin/stdout (src/engine/PROTOCOL.md). This
module is the engine side: declare your strategies and kernels, call serve(), and run

    kvcheck --engine='python3 my_engine.py'

A strategy is a class (or any callable) that takes a Config and returns a cache object with

    append(k, v, active=None) -> (k_visible, v_visible) or (k_visible, v_visible, positions)
    view()                    -> the same, without appending (optional: else the last append's)
    fork()                    -> an independent copy          (declare "fork")
    reset()                   -> forget everything             (declare "reset"; else re-created)
    stats()                   -> dict of capacity, bytes_*     (declare "stats")

k and v arrive as (B, KH, S, D) arrays: numpy arrays (float32, float16; bfloat16 as uint16
bit patterns, numpy has no bfloat16) or torch tensors (backend="torch", every dtype). Return
arrays or tensors of the same dtype, any strides (views are fine: they are serialised at
once). `positions` is a (B, L) integer array: the absolute position of each returned slot,
-1 for an empty one; omit it when slot j holds position j.

A stepper is the fused seam of model code (the book's MultiHeadAttention.forward with
use_cache=True): a class (or callable) that takes the window W (0 unless declared "windowed")
and returns an object with

    step(q, k_new, v_new) -> out  append k_new, v_new to its own cache, then the causal
                                  attention of q over every token since the reset
    reset()                       forget everything (declare "reset")

q (B, H, S, D), k_new and v_new (B, KH, S, D), out (B, H, S, D); query i of a step has
position P + i where P counts the tokens stepped before; a windowed stepper lets it see the
keys of positions > P + i - W (every query its last W keys, also in a chunk longer than W).
kvcheck's resets may change B, H, KH, D and the dtype, as a new generation with another
batch does. Code built for one set of shapes (a module whose cache buffers are allocated for
one batch and head size) is served through FixedShapes(build): build(batch, heads, kv_heads,
head_dim, dtype, window) makes the object, and the first step after a reset builds a new one
when the shapes differ:

    Stepper("my_attention", FixedShapes(lambda b, h, kh, d, dtype, w: MyAttention(b, h, d)),
            flags=("reset",))

A model maps token ids to logits: a class (or callable) with no arguments returning an object
with

    forward(tokens, use_cache) -> logits   tokens (B, S) int64, logits (B, S, V) float32;
                                           use_cache: continue the cached sequence; else the
                                           tokens are a whole sequence from position 0 and the
                                           cache is untouched
    reset()                                forget the cached sequence (declare "reset")

kvcheck checks that cached logits equal a recomputation without the cache, that any chunking
equals one chunk, and that reset equals a fresh model.

A kernel is a function (q, k, v, params) -> out with q (B, H, Sq, D), k and v (B, KH, Skv,
D), out (B, H, Sq, D) in q's dtype; params is a dict with scale (None: 1/sqrt(D)), softcap,
causal, window, alibi_slopes, mask (or None), q_positions, kv_positions (or None).

A cache must refuse an append of another shape or dtype than its first since the reset
(kvcheck sends such calls); refuse_mismatch(cached_k, k, v) does that for numpy and torch.

Errors: raise EngineError(code, message) for a specific status code; ValueError and TypeError
become INVALID_ARGUMENT, NotImplementedError UNIMPLEMENTED, MemoryError RESOURCE_EXHAUSTED,
anything else INTERNAL with the traceback (also printed to stderr). print() is safe: stdout is
the protocol's, so this module moves sys.stdout to stderr while it serves.
"""

import json
import os
import sys
import traceback

import numpy as np

PROTOCOL_VERSION = 1

STRATEGY_FLAGS = ("windowed", "per_row", "fork", "reset", "stats", "amortized_growth",
                  "max_bytes")
KERNEL_FEATURES = ("scale", "softcap", "alibi", "causal", "window", "mask", "positions", "gqa")
STEPPER_FLAGS = ("windowed", "reset", "gqa")
MODEL_FLAGS = ("reset", "batch")
DTYPES = ("f32", "f16", "bf16")
CODES = ("INVALID_ARGUMENT", "NOT_FOUND", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
         "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL")

_CURRENT_SERVER = None  # the server serve() runs (for tests that break the protocol on purpose)

_ITEM_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8}
_NUMPY_DTYPE = {"f32": np.dtype("<f4"), "f16": np.dtype("<f2"), "bf16": np.dtype("<u2"),
                "i64": np.dtype("<i8")}


class EngineError(Exception):
    """An error with one of the protocol's status codes (CODES)."""

    def __init__(self, code, message):
        if code not in CODES:
            raise ValueError("unknown status code %r (one of %s)" % (code, ", ".join(CODES)))
        super().__init__(message)
        self.code = code


def refuse_mismatch(cached, k, v):
    """For a cache's append: raises EngineError (the call refused, the cache unchanged) when k
    and v differ in shape or dtype, or when k's B, KH, D or dtype differ from `cached` (the
    cache's K, None while empty). kvcheck sends such appends, as a caller's bug would, and
    numpy or torch would otherwise accept some silently (concatenation promotes another
    dtype; a slice assignment broadcasts a batch of 1). Works on numpy and torch arrays."""
    if tuple(k.shape) != tuple(v.shape) or k.dtype != v.dtype:
        raise EngineError("INVALID_ARGUMENT", "k and v differ")
    if cached is not None and (tuple(k.shape[:2]) != tuple(cached.shape[:2])
                               or k.shape[3] != cached.shape[3] or k.dtype != cached.dtype):
        raise EngineError("FAILED_PRECONDITION", "k is %s %s; the cache holds %s %s" %
                          (k.dtype, tuple(k.shape), cached.dtype, tuple(cached.shape)))


class Config:
    """A cache's configuration: initial_capacity, window (W >= 1 for windowed), max_bytes."""

    def __init__(self, initial_capacity=0, window=0, max_bytes=0):
        self.initial_capacity = initial_capacity
        self.window = window
        self.max_bytes = max_bytes

    def __repr__(self):
        return "Config(initial_capacity=%d, window=%d, max_bytes=%d)" % (
            self.initial_capacity, self.window, self.max_bytes)


class Strategy:
    """A cache strategy: name, factory(Config) -> cache, what it supports."""

    def __init__(self, name, factory, flags=(), dtypes=DTYPES, summary="", window=0,
                 initial_capacity=0):
        for flag in flags:
            if flag not in STRATEGY_FLAGS:
                raise ValueError("unknown strategy flag %r (one of %s)" % (flag, STRATEGY_FLAGS))
        if "windowed" in flags and window < 1:
            raise ValueError("a windowed strategy needs a default window >= 1")
        self.name, self.factory, self.flags = name, factory, tuple(flags)
        self.dtypes, self.summary = tuple(dtypes), summary
        self.default_config = Config(initial_capacity, window, 0)


class Kernel:
    """An attention kernel: name, fn(q, k, v, params) -> out, the features it implements."""

    def __init__(self, name, fn, features=(), dtypes=("f32",), summary=""):
        for feature in features:
            if feature not in KERNEL_FEATURES:
                raise ValueError("unknown kernel feature %r (one of %s)" % (feature,
                                                                           KERNEL_FEATURES))
        self.name, self.fn, self.features = name, fn, tuple(features)
        self.dtypes, self.summary = tuple(dtypes), summary


class Stepper:
    """A fused append-then-attend: name, factory(window) -> object with step (and reset)."""

    def __init__(self, name, factory, flags=(), dtypes=("f32",), summary="", window=0):
        for flag in flags:
            if flag not in STEPPER_FLAGS:
                raise ValueError("unknown stepper flag %r (one of %s)" % (flag, STEPPER_FLAGS))
        if "windowed" in flags and window < 1:
            raise ValueError("a windowed stepper needs a default window >= 1")
        self.name, self.factory, self.flags = name, factory, tuple(flags)
        self.dtypes, self.summary, self.window = tuple(dtypes), summary, window


class FixedShapes:
    """A stepper factory for code built for one set of shapes (see the module's docstring):
    build(batch, heads, kv_heads, head_dim, dtype, window) makes the object (with step, and
    reset if it has one). The first step after a reset builds a new object when the shapes or
    the dtype differ from the last one's, and reuses (and resets) the old one when they do
    not; a step with other shapes and no reset before it is refused, as a real caller's
    mistake."""

    def __init__(self, build):
        self.build = build

    def __call__(self, window):
        return _Rebuilding(self.build, window)


class _Rebuilding:
    def __init__(self, build, window):
        self.build, self.window = build, window
        self.inner = self.shapes = None
        self.stepped = False  # a step since the last reset (or since the creation)

    def step(self, q, k_new, v_new):
        shapes = (q.shape[0], q.shape[1], k_new.shape[1], q.shape[3], str(q.dtype))
        if self.inner is None or shapes != self.shapes:
            if self.stepped:
                raise EngineError("FAILED_PRECONDITION",
                                  "shapes %s after %s without a reset" % (shapes, self.shapes))
            self.inner = self.build(*shapes[:4], q.dtype, self.window)
            self.shapes = shapes
        self.stepped = True
        return self.inner.step(q, k_new, v_new)

    def reset(self):
        self.stepped = False
        if self.inner is not None and hasattr(self.inner, "reset"):
            self.inner.reset()


class Model:
    """Token ids to logits: name, factory() -> object with forward (and reset)."""

    def __init__(self, name, factory, vocab_size, max_tokens, flags=(), summary="",
                 tolerance=0.0):
        for flag in flags:
            if flag not in MODEL_FLAGS:
                raise ValueError("unknown model flag %r (one of %s)" % (flag, MODEL_FLAGS))
        if vocab_size < 1 or max_tokens < 1:
            raise ValueError("vocab_size and max_tokens must be >= 1")
        self.name, self.factory, self.flags = name, factory, tuple(flags)
        self.vocab_size, self.max_tokens = vocab_size, max_tokens
        self.summary, self.tolerance = summary, tolerance


class _Backend:
    """Bytes <-> arrays: numpy, or torch tensors."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            import torch  # only when asked for
            self.torch = torch
            self.torch_dtype = {"f32": torch.float32, "f16": torch.float16,
                                "bf16": torch.bfloat16, "i64": torch.int64}
        elif name != "numpy":
            raise ValueError("backend must be 'numpy' or 'torch', not %r" % name)

    def from_bytes(self, dtype, shape, data, strides=None):
        """An array of `shape`; with `strides` (in elements) a view with that layout over a
        copy of the span, as kvcheck's input was (transposed, padded)."""
        flat = np.frombuffer(data, dtype=_NUMPY_DTYPE[dtype]).copy()
        if strides is None:
            array = flat.reshape(shape)
        else:
            array = np.lib.stride_tricks.as_strided(
                flat, shape=shape, strides=[s * flat.itemsize for s in strides])
        if self.name == "numpy":
            return array
        torch = self.torch
        if dtype == "bf16":  # reinterpret the 16-bit patterns
            base = torch.from_numpy(flat.view(np.int16)).view(torch.bfloat16)
        else:
            base = torch.from_numpy(flat)
        if strides is None:
            return base.reshape(shape)
        return torch.as_strided(base, shape, strides)

    def to_bytes(self, value, dtype, what):
        """value's elements in row-major order as `dtype` bytes; checks the dtype."""
        if self.name == "torch" and isinstance(value, self.torch.Tensor):
            torch = self.torch
            if value.dtype != self.torch_dtype[dtype]:
                raise EngineError("INTERNAL", "%s is %s, expected %s" % (what, value.dtype,
                                                                        dtype))
            value = value.detach().cpu().contiguous()
            if dtype == "bf16":
                value = value.view(torch.int16)
            return value.numpy().tobytes(), tuple(value.shape)
        array = np.asarray(value)
        expected = _NUMPY_DTYPE[dtype]
        if dtype == "i64" and array.dtype.kind in "iu":
            array = array.astype(np.int64)
        if array.dtype.newbyteorder("<") != expected and not (dtype == "bf16" and
                                                            array.dtype.itemsize == 2):
            raise EngineError("INTERNAL", "%s is %s, expected %s" % (what, array.dtype, dtype))
        return np.ascontiguousarray(array, dtype=expected).tobytes(), tuple(array.shape)


class _Server:
    def __init__(self, name, strategies, kernels, backend, reader, writer, steppers=(),
                 models=()):
        self.name = name
        self.strategies = {s.name: s for s in strategies}
        self.kernels = {k.name: k for k in kernels}
        self.steppers = {s.name: s for s in steppers}
        self.models = {m.name: m for m in models}
        self.order = (list(strategies), list(kernels), list(steppers), list(models))
        self.sessions = {}  # stepper and model objects by id (one numbering with the caches)
        self.backend = _Backend(backend)
        self.reader, self.writer = reader, writer
        self.caches = {}
        self.next_id = 1
        self.last_view = {}
        self.cache_dtype = {}  # the dtype of each cache's first append

    # ---- framing -----------------------------------------------------------------------
    def read_message(self):
        line = self.reader.readline()
        if not line:
            return None
        header = json.loads(line)
        tensors = {}
        for t in header.pop("tensors", []):
            shape, strides = tuple(t["shape"]), t.get("strides")
            if strides is None:
                count = 1
                for d in shape:
                    count *= d
            else:  # a view: the payload is the span from its first element to its last
                count = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
            size = count * _ITEM_SIZE[t["dtype"]]
            data = self.reader.read(size)
            if len(data) != size:
                return None
            tensors[t["name"]] = (t["dtype"], shape, data, strides)
        return header, tensors

    def serialise(self, tensors):
        """(name, value, dtype) triples as (name, dtype, shape, bytes): a copy of the values."""
        out = []
        for name, value, dtype in tensors:
            data, shape = self.backend.to_bytes(value, dtype, name)
            out.append((name, dtype, list(shape), bytes(data)))
        return out

    def write_message(self, header, tensors=()):
        """`tensors`: (name, value, dtype) triples, or serialise()'s quadruples."""
        payload = []
        described = []
        for entry in tensors:
            name, dtype, shape, data = entry if len(entry) == 4 else self.serialise([entry])[0]
            described.append({"name": name, "dtype": dtype, "shape": shape})
            payload.append(data)
        if described:
            header["tensors"] = described
        self.writer.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        for data in payload:
            self.writer.write(data)
        self.writer.flush()

    def array(self, tensors, name):
        dtype, shape, data, strides = tensors[name]
        return self.backend.from_bytes(dtype, shape, data, strides)

    # ---- operations ----------------------------------------------------------------------
    def hello(self, header, tensors):
        strategies, kernels, steppers, models = self.order
        return {"protocol": PROTOCOL_VERSION, "name": self.name,
                "steppers": [{"name": s.name, "summary": s.summary, "flags": list(s.flags),
                              "dtypes": list(s.dtypes), "window": s.window} for s in steppers],
                "models": [{"name": m.name, "summary": m.summary, "flags": list(m.flags),
                            "vocab_size": m.vocab_size, "max_tokens": m.max_tokens,
                            "tolerance": m.tolerance} for m in models],
                "strategies": [{"name": s.name, "summary": s.summary, "flags": list(s.flags),
                                "dtypes": list(s.dtypes),
                                "default_config": vars(s.default_config)} for s in strategies],
                "kernels": [{"name": k.name, "summary": k.summary, "features": list(k.features),
                             "dtypes": list(k.dtypes)} for k in kernels]}, ()

    def cache(self, header):
        cache_id = header.get("cache")
        if cache_id not in self.caches:
            raise EngineError("NOT_FOUND", "no cache %r" % (cache_id,))
        return cache_id, self.caches[cache_id]

    def new_id(self, cache):
        cache_id = self.next_id
        self.next_id += 1
        self.caches[cache_id] = cache
        return cache_id

    def create(self, header, tensors):
        strategy = self.strategies.get(header.get("strategy"))
        if strategy is None:
            raise EngineError("NOT_FOUND", "no strategy %r" % (header.get("strategy"),))
        config = Config(**header.get("config", {}))
        return {"cache": self.new_id(strategy.factory(config))}, ()

    def view_reply(self, cache_id, shown, dtype):
        if not isinstance(shown, (tuple, list)) or len(shown) not in (2, 3):
            raise EngineError("INTERNAL", "append/view must return (k, v) or (k, v, positions)")
        out = [("k", shown[0], dtype), ("v", shown[1], dtype)]
        if len(shown) == 3 and shown[2] is not None:
            out.append(("positions", shown[2], "i64"))
        # Kept as the bytes sent, not the arrays: a cache may return slices of buffers it
        # rewrites in place later (a ring after it wraps, a reused buffer after a reset), and a
        # view served later (for a cache without view(), or for its fork) must show what was
        # visible then.
        self.last_view[cache_id] = self.serialise(out)
        return {}, self.last_view[cache_id]

    def append(self, header, tensors):
        cache_id, cache = self.cache(header)
        k, v = self.array(tensors, "k"), self.array(tensors, "v")
        active = header.get("active")
        shown = cache.append(k, v) if active is None else cache.append(k, v, active=active)
        self.cache_dtype[cache_id] = tensors["k"][0]  # (dtype, shape, bytes, strides)
        return self.view_reply(cache_id, shown, tensors["k"][0])

    def view(self, header, tensors):
        cache_id, cache = self.cache(header)
        if cache_id not in self.cache_dtype:
            raise EngineError("FAILED_PRECONDITION", "view before any append")
        if hasattr(cache, "view"):
            return self.view_reply(cache_id, cache.view(), self.cache_dtype[cache_id])
        if cache_id not in self.last_view:
            raise EngineError("FAILED_PRECONDITION", "view before any append")
        return {}, self.last_view[cache_id]

    def fork(self, header, tensors):
        cache_id, cache = self.cache(header)
        copy = cache.fork()
        new_id = self.new_id(copy)
        if cache_id in self.last_view:
            self.last_view[new_id] = self.last_view[cache_id]
        if cache_id in self.cache_dtype:
            self.cache_dtype[new_id] = self.cache_dtype[cache_id]
        return {"cache": new_id}, ()

    def reset(self, header, tensors):
        cache_id, cache = self.cache(header)
        cache.reset()
        self.last_view.pop(cache_id, None)
        self.cache_dtype.pop(cache_id, None)
        return {}, ()

    def stats(self, header, tensors):
        _, cache = self.cache(header)
        s = cache.stats()
        fields = ("capacity", "bytes_allocated", "bytes_held", "bytes_growth_copied",
                  "bytes_other_copied")
        return {f: int(s.get(f, 0)) for f in fields}, ()

    def destroy(self, header, tensors):
        cache_id, _ = self.cache(header)
        del self.caches[cache_id]
        self.last_view.pop(cache_id, None)
        self.cache_dtype.pop(cache_id, None)
        return {}, ()

    def attend(self, header, tensors):
        kernel = self.kernels.get(header.get("kernel"))
        if kernel is None:
            raise EngineError("NOT_FOUND", "no kernel %r" % (header.get("kernel"),))
        params = dict(header.get("params", {}))
        params["mask"] = self.array(tensors, "mask") if "mask" in tensors else None
        for name in ("q_positions", "kv_positions"):
            params[name] = self.array(tensors, name) if name in tensors else None
        q = self.array(tensors, "q")
        out = kernel.fn(q, self.array(tensors, "k"), self.array(tensors, "v"), params)
        return {}, [("out", out, tensors["q"][0])]

    # ---- steppers and models ---------------------------------------------------------------
    def session(self, header, kind):
        session_id = header.get(kind)
        found = self.sessions.get(session_id)
        if found is None or found[0] != kind:
            raise EngineError("NOT_FOUND", "no %s %r" % (kind, session_id))
        return session_id, found[1]

    def new_session(self, kind, obj):
        session_id = self.next_id
        self.next_id += 1
        self.sessions[session_id] = (kind, obj)
        return {kind: session_id}, ()

    def stepper_create(self, header, tensors):
        stepper = self.steppers.get(header.get("stepper"))
        if stepper is None:
            raise EngineError("NOT_FOUND", "no stepper %r" % (header.get("stepper"),))
        return self.new_session("stepper", stepper.factory(int(header.get("window", 0))))

    def step(self, header, tensors):
        _, stepper = self.session(header, "stepper")
        out = stepper.step(self.array(tensors, "q"), self.array(tensors, "k"),
                           self.array(tensors, "v"))
        return {}, [("out", out, tensors["q"][0])]

    def stepper_reset(self, header, tensors):
        self.session(header, "stepper")[1].reset()
        return {}, ()

    def model_create(self, header, tensors):
        model = self.models.get(header.get("model"))
        if model is None:
            raise EngineError("NOT_FOUND", "no model %r" % (header.get("model"),))
        return self.new_session("model", model.factory())

    def forward(self, header, tensors):
        _, model = self.session(header, "model")
        logits = model.forward(self.array(tensors, "tokens"), bool(header.get("use_cache", True)))
        # Logits of any float dtype are compared as f32.
        if self.backend.name == "torch" and isinstance(logits, self.backend.torch.Tensor):
            logits = logits.float()
        else:
            logits = np.asarray(logits, dtype=np.float32)
        return {}, [("logits", logits, "f32")]

    def model_reset(self, header, tensors):
        self.session(header, "model")[1].reset()
        return {}, ()

    def session_destroy(self, kind):
        def destroy(header, tensors):
            session_id, _ = self.session(header, kind)
            del self.sessions[session_id]
            return {}, ()
        return destroy

    # ---- the loop ------------------------------------------------------------------------
    def run(self):
        operations = {"hello": self.hello, "create": self.create, "append": self.append,
                      "view": self.view, "fork": self.fork, "reset": self.reset,
                      "stats": self.stats, "destroy": self.destroy, "attend": self.attend,
                      "stepper_create": self.stepper_create, "step": self.step,
                      "stepper_reset": self.stepper_reset,
                      "stepper_destroy": self.session_destroy("stepper"),
                      "model_create": self.model_create, "forward": self.forward,
                      "model_reset": self.model_reset,
                      "model_destroy": self.session_destroy("model")}
        while True:
            message = self.read_message()
            if message is None:
                return
            header, tensors = message
            op = header.get("op")
            if op == "bye":
                self.write_message({"ok": True})
                return
            try:
                if op not in operations:
                    raise EngineError("UNIMPLEMENTED", "unknown op %r" % (op,))
                reply, out = operations[op](header, tensors)
                reply["ok"] = True
                self.write_message(reply, out)
            except Exception as error:  # the engine's error is the reply, never a crash here
                self.write_message(_error_reply(error))


def _error_reply(error):
    if isinstance(error, EngineError):
        code = error.code
    elif isinstance(error, (ValueError, TypeError, IndexError)):
        code = "INVALID_ARGUMENT"
    elif isinstance(error, NotImplementedError):
        code = "UNIMPLEMENTED"
    elif isinstance(error, MemoryError):
        code = "RESOURCE_EXHAUSTED"
    else:
        code = "INTERNAL"
    message = "%s: %s" % (type(error).__name__, error)
    if code == "INTERNAL":
        trace = traceback.format_exc()
        sys.stderr.write(trace)
        message += "\n" + trace
    return {"ok": False, "code": code, "message": message}


def serve(strategies=(), kernels=(), name="python-engine", backend="numpy", steppers=(),
          models=()):
    """Serves kvcheck's requests on stdin/stdout until kvcheck says bye or closes the pipe."""
    if not strategies and not kernels and not steppers and not models:
        raise ValueError("serve() needs at least one strategy, kernel, stepper or model")
    # The protocol owns the real stdout; print() goes to stderr from here on.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    global _CURRENT_SERVER
    server = _Server(name, list(strategies), list(kernels), backend, sys.stdin.buffer,
                     protocol_out, list(steppers), list(models))
    _CURRENT_SERVER = server
    server.run()
    protocol_out.flush()
