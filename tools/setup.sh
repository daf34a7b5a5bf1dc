#!/usr/bin/env bash
# tools/setup.sh — installs exactly the Debian 12 packages kvcheck builds and tests with.
#
# Idempotent: when every package is already installed it only runs one dpkg-query
# and exits 0 (about a second). Otherwise it runs `apt-get update` once and installs
# the missing packages. Must run as root (or through sudo) when anything is missing.
#
#   tools/setup.sh             packages for building, testing and fuzzing
#   tools/setup.sh --peers     also python3-torch (the PyTorch peer) and cmake (to build the
#                              ggml peer from a checkout you name), for the peer benchmarks only
#   tools/setup.sh --browser   also chromium (~440 MB), for the manual test of report.html in
#                              a browser only (bazel test //report:html_in_chromium_test)
# The two flags combine.
set -euo pipefail

packages=(
  bazel-bootstrap      # Bazel 4.2.3
  g++                  # default toolchain
  clang-14             # fuzz config (libFuzzer) and -Werror under clang
  libclang-rt-14-dev   # libFuzzer and sanitizer runtimes for clang
  librapidcheck-dev    # property-based testing (static library + gtest integration)
  libabsl-dev          # Status, StatusOr, flags, strings
  libboost-dev         # Boost.Multiprecision (header-only) for the reference engine
  libboost-context-dev # Boost.Context fibers: the Metal SIMT emulator's threads (src/metal)
  libgtest-dev         # GoogleTest
  libgmock-dev         # GoogleMock (StatusIs matcher)
  libbenchmark-dev     # Google Benchmark
  libhwy-dev           # Highway SIMD with dynamic dispatch
  libopenblas-dev      # matrix products for the decoders
  nlohmann-json3-dev   # JSON headers of the engine protocol (src/engine/PROTOCOL.md)
  python3-numpy        # the Python engine module (engines/python) and its tests
)
for flag in "$@"; do
  case "$flag" in
    --peers) packages+=(python3-torch python3-numpy cmake) ;;
    --browser) packages+=(chromium) ;;  # headless Chromium renders report.html
    *)
      echo "setup: unknown flag $flag (flags: --peers, --browser)" >&2
      exit 1
      ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ "$status" == "ii "* ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    sudo_cmd=(sudo)
  else
    echo "setup: must run as root (or have sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo_cmd[@]}" apt-get update -qq; then
  echo "setup: 'apt-get update' failed; check the network access to Debian's mirrors" >&2
  exit 1
fi
if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; then
  echo "setup: 'apt-get install ${missing[*]}' failed (see the messages above)" >&2
  exit 1
fi
echo "setup: done" >&2
