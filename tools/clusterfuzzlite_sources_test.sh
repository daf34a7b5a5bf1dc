#!/usr/bin/env bash
# Holds .clusterfuzzlite/build.sh's hand-written source lists to the BUILD files: what
# `build.sh --list` says it compiles and links must equal the fuzz targets' manifest
# (tools/fuzz_sources.bzl).
#   clusterfuzzlite_sources_test.sh MANIFEST BUILD_SH
set -euo pipefail
manifest=$1
build_sh=$2
[[ -s "$manifest" ]] || { echo "FAIL: no manifest at $manifest"; exit 1; }
if ! diff -u <(sort -u "$manifest") <(bash "$build_sh" --list | sort -u); then
  echo "FAIL: .clusterfuzzlite/build.sh's lists (+) differ from the fuzz targets' BUILD files (-):"
  echo "      update LIB_SRCS / ORACLE_SRCS / MSL_KERNELS / TARGETS / LIBS there."
  exit 1
fi
echo "PASS: build.sh compiles what the Bazel fuzz targets compile ($(wc -l <"$manifest") lines)"
