"""fuzz_source_manifest: what a set of C++ targets compiles and links, as text.

One line per translation unit and library, sorted, in the form `.clusterfuzzlite/build.sh
--list` prints, so that a test can hold the hand-written lists of that script (which builds
without Bazel) to the BUILD files:
  cc <source> [-D<macro>...]                     a source file of a cc_* rule, with its -D copts
  msl <file.metal> [<prefix> -D<macro>...]       a msl_kernel_library translation
  link <-lname>                                  a linkopt
Only the rules' own attributes in the current configuration are read: select()ed flags show
their default branch (the fuzz configuration's extra copts do not appear).
"""

_Manifest = provider(fields = ["lines", "metal"])

def _manifest_aspect_impl(target, ctx):
    lines = []
    metal = None
    if ctx.rule.kind == "genrule":
        # msl_kernel.bzl's genrule: the .metal file it translates and its --prefix.
        metals = [f.path for f in ctx.rule.files.srcs if f.extension == "metal"]
        if metals:
            prefix = [w[len("--prefix="):] for w in ctx.rule.attr.cmd.split(" ") if w.startswith("--prefix=")]
            metal = " ".join(metals[:1] + prefix)
    elif ctx.rule.kind.startswith("cc_"):
        macros = [c for c in getattr(ctx.rule.attr, "copts", []) if c.startswith("-D")]
        for src in getattr(ctx.rule.attr, "srcs", []):
            if _Manifest in src and src[_Manifest].metal:
                lines.append(" ".join(["msl", src[_Manifest].metal] + macros))
            for f in src.files.to_list():
                if f.is_source and f.extension in ["cc", "cpp"]:
                    lines.append(" ".join(["cc", f.path] + macros))
        lines += ["link " + o for o in getattr(ctx.rule.attr, "linkopts", []) if o.startswith("-l")]
    deps = []
    for attr in ["deps", "srcs", "tools"]:
        deps += [d[_Manifest].lines for d in getattr(ctx.rule.attr, attr, []) if _Manifest in d]
    return [_Manifest(lines = depset(lines, transitive = deps), metal = metal)]

_manifest_aspect = aspect(
    implementation = _manifest_aspect_impl,
    attr_aspects = ["deps", "srcs", "tools"],
)

def _fuzz_source_manifest_impl(ctx):
    lines = depset(transitive = [t[_Manifest].lines for t in ctx.attr.targets]).to_list()
    out = ctx.actions.declare_file(ctx.label.name + ".txt")
    ctx.actions.write(out, "\n".join(sorted({l: None for l in lines}.keys())) + "\n")
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

fuzz_source_manifest = rule(
    implementation = _fuzz_source_manifest_impl,
    attrs = {"targets": attr.label_list(aspects = [_manifest_aspect])},
)
