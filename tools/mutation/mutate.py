#!/usr/bin/env python3
"""Mutation check of the suite: puts one defect at a time into the engine (src/), runs the
tests, and says whether they noticed.

    tools/mutation/mutate.py list              the mutants (tools/mutation/mutants.py)
    tools/mutation/mutate.py check             which mutants no longer apply to the source
    tools/mutation/mutate.py run [NAME...]     all mutants, or the named ones

`run` needs a clean work tree for the mutated files: each mutant is written into its file,
`bazel test` runs over TARGETS (--keep_going), and the file is put back from git whatever
happens (also on Ctrl-C). A mutant is KILLED when a test fails, SURVIVED when all pass, and
NOBUILD when it does not compile (a useless mutant: rewrite it). The tests run in two stages,
the engine's own tests and the properties first: a mutant they kill is not run through the
slower second stage (the command, the defect catalogue, the engines, the fuzz replays), so
a killed mutant costs a fraction of a survivor. Each run's Bazel log is kept
in $MUTATION_LOGS (default /tmp/kvcheck-mutation). The last line reads "N killed, N survived,
N nobuild, N expected survivors" (mutants marked equivalent or unreachable in mutants.py are
counted apart). Exit status 1 when a mutant not so marked survived.

A mutant costs an incremental build and the affected tests: 40-160 s on a 2-core machine.
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from mutants import MUTANTS  # noqa: E402

# Every test that runs the engine, the engine transports' included (engines/: the C and Python
# example engines drive src/engine), in two stages (see above). Not bench/, report/ or tools/:
# they test themselves.
STAGES = [["//src/...", "//properties/..."],
          ["//reference/...", "//defects/...", "//cli/...", "//fuzz/...", "//engines/...",
           "//regressions/..."]]
RESULT = re.compile(r"^(//\S+)\s+(?:\(cached\) )?(FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE)", re.M)


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def write(path, text):
    with open(os.path.join(ROOT, path), "w") as f:
        f.write(text)


def stale():
    """Names of the mutants whose text does not occur exactly once in its file."""
    return [m[0] for m in MUTANTS if read(m[1]).count(m[2]) != 1]


def run_one(mutant, logs):
    name, path, text, replacement = mutant[:4]
    if subprocess.run(["git", "diff", "--quiet", "--", path], cwd=ROOT).returncode != 0:
        sys.exit(f"mutate: {path} has uncommitted changes; commit or stash them first")
    original = read(path)
    if original.count(text) != 1:
        return "STALE", 0.0, []
    log = os.path.join(logs, f"{name}.log")
    start = time.time()
    output = ""
    try:
        write(path, original.replace(text, replacement))
        for targets in STAGES:
            with open(log, "a" if output else "w") as out:
                subprocess.run(["bazel", "test", "--keep_going"] + targets, cwd=ROOT, stdout=out,
                               stderr=subprocess.STDOUT)
            output = open(log).read()
            if RESULT.search(output) or "Build did NOT complete" in output:
                break
    finally:
        subprocess.run(["git", "checkout", "--", path], cwd=ROOT, check=True)
    seconds = time.time() - start
    failed = [m.group(1) for m in map(RESULT.match, output.splitlines()) if m]
    if "FAILED TO BUILD" in output or "Build did NOT complete" in output:
        return "NOBUILD", seconds, failed
    return ("KILLED" if failed else "SURVIVED"), seconds, failed


def main(argv):
    if len(argv) < 2 or argv[1] not in ("list", "check", "run"):
        sys.exit(__doc__)
    if argv[1] == "list":
        for m in MUTANTS:
            note = f"  [{m[5]}]" if len(m) > 5 else ""
            print(f"{m[0]:28} {m[1]:45} {m[4]}{note}")
        return 0
    if argv[1] == "check":
        names = stale()
        for name in names:
            print(f"stale: {name}")
        print(f"{len(MUTANTS) - len(names)} of {len(MUTANTS)} mutants apply")
        return 1 if names else 0
    wanted = set(argv[2:])
    unknown = wanted - {m[0] for m in MUTANTS}
    if unknown:
        sys.exit(f"mutate: no mutant named {', '.join(sorted(unknown))} (see `mutate.py list`)")
    logs = os.environ.get("MUTATION_LOGS", "/tmp/kvcheck-mutation")
    os.makedirs(logs, exist_ok=True)
    counts = {"KILLED": 0, "SURVIVED": 0, "NOBUILD": 0, "STALE": 0, "expected": 0}
    unexpected = False
    for mutant in MUTANTS:
        if wanted and mutant[0] not in wanted:
            continue
        verdict, seconds, failed = run_one(mutant, logs)
        expected = len(mutant) > 5 and verdict == "SURVIVED"
        counts["expected" if expected else verdict] += 1
        unexpected = unexpected or (verdict == "SURVIVED" and not expected)
        detail = " ".join(failed) if failed else (mutant[5] if expected else mutant[4])
        print(f"{mutant[0]:28} {verdict:8} {seconds:5.0f} s  {detail}", flush=True)
    print(f"{counts['KILLED']} killed, {counts['SURVIVED']} survived, {counts['NOBUILD']} nobuild, "
          f"{counts['expected']} expected survivors" +
          (f", {counts['STALE']} stale" if counts["STALE"] else ""))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
