"""kvcheck_fuzz_target: one libFuzzer target, built two ways.

  //fuzz:<name>               under --config=fuzz (--define=kvcheck_fuzz=1): a libFuzzer binary
                              (clang, -fsanitize=fuzzer plus ASan and UBSan from the config);
                              otherwise the same code linked with fuzz/replay_main.cc, which runs
                              the files and directories given on its command line.
  //fuzz:<name>_replay_test   a plain cc_test that replays fuzz/corpus/<corpus>/ and
                              fuzz/regressions/<corpus>/ through the target in every
                              configuration (default `bazel test //...` included).
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

# Copts for the fuzzers' oracles (the reference, the models, the property helpers): under
# --config=fuzz they are built without coverage instrumentation and at -O2, so that libFuzzer
# spends its time in the code under test rather than in the comparison callbacks of the
# oracle's loops. ASan and UBSan stay on. Elsewhere they change nothing.
FUZZ_ORACLE_COPTS = select({
    "//fuzz:fuzzing": ["-fno-sanitize=fuzzer-no-link", "-O2"],
    "//conditions:default": [],
})

def kvcheck_fuzz_target(name, corpus, srcs, deps = [], dictionary = None, replay_size = "small",
                        defines = []):
    """Declares <name> (fuzzer or replay binary) and <name>_replay_test.

    Args:
      name: the binary's name.
      corpus: the directory name under fuzz/corpus/ and fuzz/regressions/.
      srcs: sources defining LLVMFuzzerTestOneInput (and optionally LLVMFuzzerInitialize).
      deps: their dependencies.
      dictionary: an optional libFuzzer dictionary file, shipped as data for tools/fuzz.sh.
      replay_size: the replay test's size.
      defines: macros for the target's sources (one source, two targets).
    """
    lib = name + "_lib"
    cc_library(
        name = lib,
        testonly = True,
        srcs = srcs,
        deps = deps,
        copts = ["-D" + d for d in defines],
        alwayslink = True,
    )
    cc_binary(
        name = name,
        testonly = True,
        deps = [":" + lib] + select({
            "//fuzz:fuzzing": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
        linkopts = select({
            "//fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        data = [dictionary] if dictionary else [],
    )
    inputs = native.glob(["corpus/%s/**" % corpus, "regressions/%s/**" % corpus])
    cc_test(
        name = name + "_replay_test",
        size = replay_size,
        deps = [":" + lib, "//fuzz:replay_main"],
        data = inputs,
        args = ["fuzz/corpus/" + corpus, "fuzz/regressions/" + corpus],
    )
