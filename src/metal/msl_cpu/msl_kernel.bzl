"""msl_kernel_library: .metal sources compiled for the emulator (msl_translate, then C++)."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def msl_kernel_library(name, srcs, hdrs = [], deps = [], defines = [], prefix = "", **kwargs):
    """Translates each .metal file (with the headers it includes) and compiles it.

    The kernels register themselves under their [[host_name]] (or function name), after
    `prefix`: a variant of the same sources built with other `defines` (a defect model, say)
    registers beside the original, and links into the same binary (each translation sits in
    an anonymous namespace).

    Args:
      name: the cc_library.
      srcs: .metal files.
      hdrs: headers the .metal files include with #include "..." (next to them): inlined and
        translated with them.
      deps: further cc dependencies.
      defines: macros for this library's translation units only (-D, not propagated).
      prefix: prepended to every registered kernel name.
      **kwargs: passed to cc_library (visibility, testonly, tags).
    """
    outs = []
    for src in srcs:
        file = src.replace("//", "").replace(":", "/").replace("/", "_").replace(".metal", "")
        out = name + "_" + file + ".msl.cc"
        native.genrule(
            name = out + "_gen",
            srcs = [src] + hdrs,
            outs = [out],
            cmd = "$(location //src/metal/msl_cpu:msl_translate) $(location " + src + ") $@" +
                  (" --prefix=" + prefix if prefix else ""),
            tools = ["//src/metal/msl_cpu:msl_translate"],
            testonly = kwargs.get("testonly", False),
        )
        # The genrule's label, not its output's: aspects (tools/fuzz_sources.bzl) reach a rule
        # only through labels that name it.
        outs.append(":" + out + "_gen")
    cc_library(
        name = name,
        srcs = outs,
        # A kernel's parameters may go unused in a variant, and a shared header's helpers in a
        # kernel that does not call them (internal linkage: the anonymous namespace).
        copts = ["-Wno-unused-parameter", "-Wno-unused-variable", "-Wno-unused-but-set-variable",
                 "-Wno-unused-function"] +
                ["-D" + d for d in defines],
        deps = deps + ["//src/metal/msl_cpu:metal_stdlib"],
        alwayslink = True,  # the kernels register themselves from static initialisers
        **kwargs
    )
