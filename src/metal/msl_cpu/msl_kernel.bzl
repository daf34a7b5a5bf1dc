"""msl_kernel_library: .metal sources compiled for the emulator (msl_translate, then C++)."""

load("@rules_cc//cc:defs.bzl", "cc_library")

def msl_kernel_library(name, srcs, deps = [], **kwargs):
    """Translates each .metal file and compiles it; the kernels register themselves.

    Args:
      name: the cc_library.
      srcs: .metal files.
      deps: further cc dependencies (headers the kernels include).
      **kwargs: passed to cc_library (visibility, testonly, tags).
    """
    outs = []
    for src in srcs:
        out = name + "_" + src.replace("/", "_").replace(".metal", "") + ".msl.cc"
        native.genrule(
            name = out + "_gen",
            srcs = [src],
            outs = [out],
            cmd = "$(location //src/metal/msl_cpu:msl_translate) $(location " + src + ") $@",
            tools = ["//src/metal/msl_cpu:msl_translate"],
            testonly = kwargs.get("testonly", False),
        )
        outs.append(out)
    cc_library(
        name = name,
        srcs = outs,
        # A kernel's parameters may go unused in a variant; MSL idioms C++ warns about.
        copts = ["-Wno-unused-parameter", "-Wno-unused-variable", "-Wno-unused-but-set-variable"],
        deps = deps + ["//src/metal/msl_cpu:metal_stdlib"],
        alwayslink = True,  # the kernels register themselves from static initialisers
        **kwargs
    )
