#!/usr/bin/env python3
"""A deliberately broken engine: a correct cat cache that misbehaves in one way (--mode), so
that tests can check that kvcheck reports each kind of engine failure clearly, with a shrunk,
replayable operation sequence, and carries on (src/engine/PROTOCOL.md, "Failures").

Modes (each strikes at a cache's third append, or at its first fork / view):
  crash_on_append  the process kills itself with SIGSEGV
  exit_on_fork     the process exits with status 3
  hang_on_view     the process sleeps forever
  garbage_reply    the reply header is not JSON
  wrong_shape      the returned k has one token too many
  unknown_code     an error reply with a status code the protocol does not have
"""

import argparse
import os
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kvcheck_engine  # noqa: E402

MODE = None


class CatCache:
    def __init__(self, config):
        self.k = self.v = None
        self.appends = 0

    def append(self, k, v):
        self.appends += 1
        self.k = k.copy() if self.k is None else np.concatenate([self.k, k], axis=2)
        self.v = v.copy() if self.v is None else np.concatenate([self.v, v], axis=2)
        if self.appends == 3:
            if MODE == "crash_on_append":
                sys.stderr.write("broken_engine: about to crash\n")
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGSEGV)
            if MODE == "garbage_reply":
                out = _protocol_out()
                out.write(b"this is not a JSON header\n")
                out.flush()
                time.sleep(3600)  # kvcheck must not wait for more
            if MODE == "wrong_shape":
                return np.concatenate([self.k, self.k[:, :, :1]], axis=2), self.v
            if MODE == "unknown_code":
                raise kvcheck_engine.EngineError("INTERNAL", "placeholder")  # replaced below
        return self.k, self.v

    def view(self):
        if MODE == "hang_on_view":
            time.sleep(3600)
        return self.k, self.v

    def fork(self):
        if MODE == "exit_on_fork":
            sys.stderr.write("broken_engine: exiting in fork\n")
            sys.stderr.flush()
            os._exit(3)
        copy = CatCache(None)
        copy.k, copy.v, copy.appends = self.k, self.v, self.appends
        return copy

    def reset(self):
        self.k = self.v = None


def _protocol_out():
    # serve() keeps the protocol's stdout as the writer of its server; find it through the
    # module (a broken engine may reach into internals).
    return kvcheck_engine._CURRENT_SERVER.writer


def main():
    global MODE
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True,
                        choices=["crash_on_append", "exit_on_fork", "hang_on_view",
                                 "garbage_reply", "wrong_shape", "unknown_code"])
    MODE = parser.parse_args().mode
    if MODE == "unknown_code":
        original = kvcheck_engine._error_reply

        def bad_code(error):
            reply = original(error)
            reply["code"] = "TEAPOT"
            return reply
        kvcheck_engine._error_reply = bad_code
    kvcheck_engine.serve(
        strategies=[kvcheck_engine.Strategy("broken_cat", CatCache, flags=("fork", "reset"),
                                            dtypes=("f32",))],
        name="broken-" + MODE)


if __name__ == "__main__":
    main()
