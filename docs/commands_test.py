#!/usr/bin/python3
"""Keeps the README and the docs true to the tree: their commands run, their names exist.

Usage (from Bazel, docs/BUILD.bazel): commands_test.py KVCHECK README.md

Reads every Markdown file of the repository (README.md, docs/, and the other *.md files
outside third_party/) and checks:

1. Runnable blocks. A fenced block whose info string is `sh runnable` is run with bash from
   the repository root, in order; `bazel run [--config=...] //cli:kvcheck [--]` in it stands
   for the kvcheck binary, and no other Bazel command may appear in it. Every command must exit
   0; with `sh runnable exit=N` the block's last command must exit N instead.
2. kvcheck command lines. In every shell block and every inline code span that runs kvcheck
   (`bazel run ... //cli:kvcheck -- ARGS`, or a line starting with `kvcheck `), each `--flag`
   must be one of the flags `kvcheck help` lists, and the subcommand one kvcheck has.
3. Bazel labels. Every `//package:target` names a package that exists and a target its BUILD
   file declares (a literal name, a file of the package, or a name a macro builds from
   literals); every `//package/...` names a directory that exists.
4. Links and paths. Every relative Markdown link points at a file that exists (and at a heading
   of it, for `file.md#anchor`); every inline code span that is a repository path (it starts
   with a top-level directory of the tree) names a file or directory that exists.

The tree is found through the real path of README.md (Bazel's runfiles link to the sources),
so the test reads the whole checkout; it is tagged `external` and always runs.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile

KVCHECK_CALL = re.compile(r"bazel\s+run\s+(?:--config=\w+\s+)?//cli:kvcheck(?:\s+--(?=\s|$))?")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(.*)$")
LABEL = re.compile(r"(?<![\w:/])//([A-Za-z0-9_./-]*?)(?::([A-Za-z0-9_.+-]+)|/\.\.\.)(?![\w/])")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
MACRO_SUFFIXES = ("_replay_test", "_fuzzer", "_lib", "_test")


class Failures:
    def __init__(self):
        self.messages = []

    def add(self, where, message):
        self.messages.append(f"{where}: {message}")


def markdown_files(root):
    found = []
    for directory, subdirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        subdirs[:] = [
            d for d in subdirs
            if not d.startswith("bazel-") and d not in (".git", "third_party", "node_modules")
            and not (rel == "." and d == "kvcheck-failures")
        ]
        for name in files:
            if name.endswith(".md"):
                found.append(os.path.normpath(os.path.join(rel, name)))
    return sorted(found)


def blocks_and_prose(text):
    """Splits Markdown into fenced blocks (info, first line number, lines) and prose lines."""
    blocks, prose = [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match:
            fence, info, start = match.group(2), match.group(3).strip(), i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            blocks.append((info, start, body))
        else:
            prose.append((i + 1, lines[i]))
        i += 1
    return blocks, prose


def logical_lines(body):
    """Shell lines with their backslash continuations joined, comments and blanks dropped."""
    out, current = [], ""
    for line in body:
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current.strip() and not current.strip().startswith("#"):
            out.append(current.strip())
        current = ""
    if current.strip():
        out.append(current.strip())
    return out


def kvcheck_names(kvcheck):
    """Property, strategy, kernel and defect names: inline code that looks like a path may be
    one of them."""
    listing = subprocess.run([kvcheck, "list"], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in listing.split("\n"):
        words = line.split()
        if line.startswith("  ") and words:
            names.add(words[0])
    return names


def kvcheck_flags(kvcheck):
    help_text = subprocess.run([kvcheck, "help"], capture_output=True, text=True, check=True).stdout
    flags = set(re.findall(r"^  --(\w+) \(default", help_text, re.M))
    if not flags:
        raise SystemExit("kvcheck help lists no flags: the help format changed")
    return flags, {"run", "list", "replay", "help"}


def kvcheck_arguments(command):
    """The arguments of a kvcheck call in a shell line, or None when the line runs no kvcheck."""
    match = KVCHECK_CALL.search(command)
    if match:
        rest = command[match.end():]
    elif re.match(r"^kvcheck(\s|$)", command):
        rest = command[len("kvcheck"):]
    else:
        return None
    rest = re.split(r"\s(?:&&|\|\||\||;|#)\s?", rest)[0]
    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


def check_kvcheck_call(args, flags, subcommands, where, failures):
    """`subcommands` None: inline text that may quote kvcheck's output, only flags checked."""
    positional = [a for a in args if not a.startswith("-")]
    first = positional[0] if positional else None
    if subcommands is not None and first is not None and args.index(first) == 0 and \
            first not in subcommands and \
            not first.startswith(("<", "[", "$", "/", ".")) and "." not in first:
        failures.add(where, f"kvcheck has no command '{first}'")
    for arg in args:
        if arg.startswith("--") and len(arg) > 2:
            name = arg[2:].split("=", 1)[0]
            if name.startswith("<") or name in ("help",):
                continue
            if name not in flags and not (name.startswith("no") and name[2:] in flags):
                failures.add(where, f"kvcheck has no flag --{name} (kvcheck help lists them)")


def build_file(root, package):
    for name in ("BUILD.bazel", "BUILD"):
        path = os.path.join(root, package, name)
        if os.path.isfile(path):
            return path
    return None


def declares(build_text, package_dir, name):
    literals = set(re.findall(r'"([^"\n]*)"', build_text))
    if name in literals or os.path.exists(os.path.join(package_dir, name)):
        return True

    def built_from_literals(rest, depth):
        if rest == "" or rest in literals or rest in MACRO_SUFFIXES:
            return True
        if depth == 0:
            return False
        return any(rest.startswith(lit) and built_from_literals(rest[len(lit):], depth - 1)
                   for lit in literals if lit)

    return built_from_literals(name, 3)


def check_labels(root, text, where, failures):
    for match in LABEL.finditer(text):
        package, target = match.group(1).rstrip("/"), match.group(2)
        if "<" in package or (target and "<" in target):
            continue
        if target in ("all", "*", "all-targets"):  # every target of the package
            target = None
        if target is None:  # //package/...
            if build_file(root, package) is None and not os.path.isdir(os.path.join(root, package)):
                failures.add(where, f"//{package}: no such package or directory")
            continue
        build = build_file(root, package)
        if build is None:
            failures.add(where, f"//{package}:{target}: no package {package or '(root)'}")
            continue
        with open(build, encoding="utf-8") as f:
            if not declares(f.read(), os.path.join(root, package), target):
                failures.add(where, f"//{package}:{target}: {os.path.relpath(build, root)} "
                                    f"declares no target {target}")


def heading_slugs(path):
    slugs = set()
    with open(path, encoding="utf-8") as f:
        blocks, prose = blocks_and_prose(f.read())
    for _, line in prose:
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            # GitHub's anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-'.
            title = re.sub(r"[`*]", "", match.group(1)).strip().lower()
            slugs.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return slugs


def check_links(root, md, text, where_prefix, failures, names):
    top_dirs = {d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                and not d.startswith("bazel-") and d != ".git"}
    for number, line in text:
        where = f"{where_prefix}:{number}"
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(root, os.path.dirname(md), path)) if path \
                else os.path.join(root, md)
            if not os.path.exists(resolved):
                failures.add(where, f"link to {target}: no such file")
            elif anchor and resolved.endswith(".md") and anchor not in heading_slugs(resolved):
                failures.add(where, f"link to {target}: {os.path.relpath(resolved, root)} has "
                                    f"no heading #{anchor}")
        for span in CODE_SPAN.findall(line):
            candidate = span.strip().rstrip("/")
            first = candidate.split("/", 1)[0]
            if "/" not in candidate or first not in top_dirs or re.search(r"[\s<>*{}$]", candidate):
                continue
            if candidate in names or any(candidate.startswith(n + "/") for n in names):
                continue  # a property's name, not a path
            candidate = re.sub(r":\d+(-\d+)?$", "", candidate)
            if not os.path.exists(os.path.join(root, candidate)):
                failures.add(where, f"`{span}`: no such path")


def run_block(root, kvcheck, md, start, info, body, failures):
    where = f"{md}:{start}"
    expect = 0
    match = re.search(r"\bexit=(\d+)", info)
    if match:
        expect = int(match.group(1))
    commands = logical_lines(body)
    script = []
    for command in commands:
        replaced = KVCHECK_CALL.sub('"$KVCHECK"', command)
        if re.search(r"(^|[\s;&|(])bazel\s", replaced):
            failures.add(where, f"a runnable block may run no Bazel command but kvcheck: {command}")
            return
        script.append(replaced)
    if not script:
        failures.add(where, "an empty runnable block")
        return
    text = "set -e\n" + "\n".join(script[:-1]) + "\nset +e\n" + script[-1] + "\n"
    # The system's tools first (python3 with numpy, cc), as on a machine set up by setup.sh.
    env = dict(os.environ, KVCHECK=kvcheck, BUILD_WORKING_DIRECTORY=root,
               PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""))
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(text)
    print(f"--- {where}: {' ; '.join(commands)}", flush=True)
    try:
        result = subprocess.run(["bash", f.name], cwd=root, env=env, capture_output=True,
                                text=True, timeout=240)
    except subprocess.TimeoutExpired:
        failures.add(where, "the block ran past 240 s")
        return
    finally:
        os.unlink(f.name)
    if result.returncode != expect:
        tail = (result.stdout + result.stderr)[-1500:]
        failures.add(where, f"exit {result.returncode}, expected {expect}:\n{tail}")


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: commands_test.py KVCHECK README.md")
    kvcheck = os.path.abspath(sys.argv[1])
    root = os.path.dirname(os.path.realpath(sys.argv[2]))
    if not os.path.isdir(os.path.join(root, "docs")) or not build_file(root, "cli"):
        raise SystemExit(f"cannot find the source tree from {sys.argv[2]} (found {root})")
    flags, subcommands = kvcheck_flags(kvcheck)
    names = kvcheck_names(kvcheck)
    failures = Failures()
    runnable = 0
    for md in markdown_files(root):
        with open(os.path.join(root, md), encoding="utf-8") as f:
            text = f.read()
        blocks, prose = blocks_and_prose(text)
        check_links(root, md, prose, md, failures, names)
        check_labels(root, text, md, failures)
        for info, start, body in blocks:
            words = info.split()
            language = words[0] if words else ""
            if language in ("sh", "bash", "shell", "console"):
                for command in logical_lines(body):
                    args = kvcheck_arguments(command)
                    if args is not None:
                        check_kvcheck_call(args, flags, subcommands, f"{md}:{start}", failures)
            if "runnable" in words:
                if language != "sh":
                    failures.add(f"{md}:{start}", "a runnable block must be `sh runnable`")
                    continue
                runnable += 1
                run_block(root, kvcheck, md, start, info, body, failures)
        for number, line in prose:
            for span in CODE_SPAN.findall(line):
                args = kvcheck_arguments(span)
                if args is not None:
                    check_kvcheck_call(args, flags, None, f"{md}:{number}", failures)
    print(f"{runnable} runnable blocks run")
    if failures.messages:
        print(f"{len(failures.messages)} problems in the docs:")
        for message in failures.messages:
            print("  " + message)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
