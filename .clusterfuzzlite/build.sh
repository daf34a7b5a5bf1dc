#!/bin/bash -eu
# .clusterfuzzlite/build.sh — builds fuzz/'s libFuzzer targets the OSS-Fuzz way: no
# Bazel (the builder image has none of our Bazel setup), only $CC $CXX $CFLAGS $CXXFLAGS
# $LIB_FUZZING_ENGINE $OUT $SRC $WORK as the builder sets them. Writes to $OUT:
#   <target>_fuzzer, <target>_fuzzer_seed_corpus.zip, <target>_fuzzer.options,
#   <target>_fuzzer.dict (where fuzz/dict/<target>.dict exists), lib/ (shared libraries).
#
#   .clusterfuzzlite/build.sh          build (from $SRC/kvcheck, else this checkout)
#   .clusterfuzzlite/build.sh --list   print what it compiles, in the form of
#                                      //tools:clusterfuzzlite_sources_test's manifest
#
# The source lists below are written out by hand, one group per Bazel library, because the
# image has no `bazel query`; //tools:clusterfuzzlite_sources_test compares them (sources,
# -D macros, Metal translations, -l libraries) with what the Bazel targets really use.
# JOBS (default: all cores) bounds parallel compiles.

# The engine and everything else the targets link (archived: a target takes what it uses).
LIB_SRCS=(
  src/base/check.cc src/base/large_buffer.cc src/base/thread_pool.cc       # //src/base
  src/tensor/dtype.cc src/tensor/layout.cc src/tensor/storage.cc           # //src/tensor
  src/tensor/tensor.cc src/tensor/copy_ops.cc src/tensor/view_ops.cc
  src/cache/kv_cache.cc src/cache/cache_buffers.cc src/cache/registry.cc   # //src/cache
  src/cache/copy_tokens.cc src/cache/slot_buffers.cc
  src/cache/prealloc_cache.cc src/cache/concat_cache.cc src/cache/ring_cache.cc
  src/cache/interleaved_cache.cc src/cache/scattered_cache.cc src/cache/paged_cache.cc
  src/attention/attention_params.cc src/attention/naive_attention.cc       # //src/attention
  src/attention/flash_problem.cc src/attention/flash_attention.cc
  src/attention/flash_block_scalar.cc src/attention/flash_block_simd.cc
  src/attention/flash_decode_simd.cc src/attention/transpose_keys.cc
  src/attention/kernel_registry.cc
  src/metal/metal_attention.cc                                             # //src/metal
  src/metal/msl_cpu/simt_executor.cc src/metal/msl_cpu/msl_runtime.cc
  src/engine/foreign_tensor.cc src/engine/external_cache.cc                # //src/engine
  src/engine/engine_entries.cc src/engine/engine_wire.cc src/engine/child_process.cc
  src/engine/process_engine.cc src/engine/plugin_engine.cc src/engine/open_engine.cc
  src/model/decoder_config.cc src/model/decoder_weights.cc src/model/gemv.cc   # //src/model
  src/model/layer_ops.cc src/model/decoder.cc src/model/generator.cc
  properties/generators.cc properties/attention_generators.cc              # //properties
  properties/case_isolation.cc properties/property_runner.cc properties/property_driver.cc
  properties/cache_counter_laws.cc
  reference/attention_comparison.cc                                        # //reference
  defects/defect_registry.cc defects/raw_interleaved_cache.cc              # //defects
  defects/defective_paged_cache.cc defects/defective_metal.cc
  defects/defective_generator.cc defects/defective_attention.cc
  defects/candle_scattered_cache.cc defects/candle_ring_cache.cc
  defects/candle_prealloc_cache.cc
  fuzz/fuzz_support.cc fuzz/engine_under_fuzz.cc fuzz/attention_decoding.cc # //fuzz
  fuzz/cache_ops_run.cc
  report/failure_file.cc                                                   # //report
)
# The fuzzers' oracles: FUZZ_ORACLE_COPTS in tools/fuzz.bzl (no coverage instrumentation,
# -O2, so that libFuzzer spends its time in the code under test).
ORACLE_SRCS=(
  properties/size_oracle.cc properties/dense_model.cc properties/kernel_case.cc
  properties/kernel_case_patterns.cc properties/kernel_case_positions.cc
  properties/tensor_spec.cc properties/cache_machine_property.cc
  properties/cache_machine_commands.cc properties/cache_machine_checks.cc
  properties/cache_machine_bad_append.cc properties/cache_machine_attend.cc
  reference/cache_model.cc reference/reference_attention.cc reference/double_double.cc
  reference/attention_bound.cc
)
ORACLE_FLAGS="-fno-sanitize=fuzzer-no-link -O2"
# The Metal kernels, translated by msl_translate (src/metal/msl_cpu/msl_kernel.bzl): "source
# prefix macro" (- for none). Linked as objects, not archived: they register themselves from
# static initialisers (alwayslink in Bazel). The defect variants: defects/BUILD.bazel.
MSL_KERNELS=(
  "src/metal/kernels/sdpa_vector.metal - -"                              # //src/metal/kernels
  "src/metal/kernels/sdpa_2pass.metal - -"
  "src/metal/kernels/sdpa_tiled.metal - -"
  "src/metal/kernels/sdpa_vector.metal defect_vector_ignores_mask_and_causal/ KVCHECK_DEFECT_IGNORES_MASK_AND_CAUSAL"
  "src/metal/kernels/sdpa_tiled.metal defect_unclamped_causal_limit/ KVCHECK_DEFECT_UNCLAMPED_CAUSAL_LIMIT"
  "src/metal/kernels/sdpa_tiled.metal defect_masked_row_nan/ KVCHECK_DEFECT_MASKED_ROW_NAN"
  "src/metal/kernels/sdpa_tiled.metal defect_q_tile_in_threadgroup/ KVCHECK_DEFECT_Q_TILE_IN_THREADGROUP"
  "src/metal/kernels/sdpa_2pass.metal defect_finite_initial_max/ KVCHECK_DEFECT_FINITE_INITIAL_MAX"
)
MSL_FLAGS="-Wno-unused-parameter -Wno-unused-variable -Wno-unused-but-set-variable -Wno-unused-function"
TRANSLATOR_SRC=src/metal/msl_cpu/msl_translate.cc
# The targets (fuzz/BUILD.bazel): "name source macro" (- for none).
TARGETS=(
  "cache_ops fuzz/cache_ops_fuzzer.cc -"
  "attention fuzz/attention_fuzzer.cc -"
  "metal_attention fuzz/attention_fuzzer.cc KVCHECK_FUZZ_METAL"
  "tensor_ops fuzz/tensor_ops_fuzzer.cc -"
  "failure_file fuzz/failure_file_fuzzer.cc -"
)
# The Debian/Ubuntu libraries (third_party/BUILD.bazel; packages: tools/setup.sh).
LIBS=(
  -lrapidcheck -lboost_context -lhwy -lopenblas
  -labsl_statusor -labsl_status -labsl_cord -labsl_cordz_info -labsl_cord_internal
  -labsl_cordz_functions -labsl_cordz_handle -labsl_str_format_internal -labsl_strings
  -labsl_strings_internal -labsl_int128 -labsl_throw_delegate -labsl_raw_logging_internal
  -labsl_base -labsl_spinlock_wait -labsl_synchronization -labsl_time -labsl_time_zone
  -labsl_stacktrace -labsl_symbolize -labsl_debugging_internal -labsl_demangle_internal
  -labsl_malloc_internal -labsl_graphcycles_internal -labsl_bad_optional_access
  -labsl_bad_variant_access -ldl -lpthread
)

if [[ "${1:-}" == "--list" ]]; then
  for s in "${LIB_SRCS[@]}" "${ORACLE_SRCS[@]}" "$TRANSLATOR_SRC"; do echo "cc $s"; done
  for k in "${MSL_KERNELS[@]}"; do
    read -r src prefix macro <<<"$k"
    [[ $prefix == - ]] && echo "msl $src" || echo "msl $src $prefix -D$macro"
  done
  for t in "${TARGETS[@]}"; do
    read -r name src macro <<<"$t"
    [[ $macro == - ]] && echo "cc $src" || echo "cc $src -D$macro"
  done
  for l in "${LIBS[@]}"; do echo "link $l"; done
  exit 0
fi

cd "$SRC/kvcheck" 2>/dev/null || cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
# Debian's and Ubuntu's C++ libraries (Abseil, RapidCheck, Highway) are built against
# libstdc++, so OSS-Fuzz's -stdlib=libc++ cannot link with them: the compiler's default stays.
CXXFLAGS=${CXXFLAGS//-stdlib=libc++/}
# .bazelrc's language level and default macros; the include paths of fuzz/ and
# src/metal/kernels (fuzzer/FuzzedDataProvider.h comes with clang itself).
COMMON="-std=c++20 -I. -Isrc/metal/kernels -DKVCHECK_POISON_UNUSED=1"
obj=$WORK/kvcheck
mkdir -p "$obj/gen" "$OUT/lib"

# One compile per entry of the job list: "object source flags...".
compile_one() {
  local o=$1 s=$2
  shift 2
  mkdir -p "$(dirname "$o")"
  echo "build.sh: $s $*" >&2
  # shellcheck disable=SC2086  # the flag strings are meant to split
  $CXX $CXXFLAGS $COMMON "$@" -c "$s" -o "$o"
}
export -f compile_one
export CXX CXXFLAGS COMMON

# The translator is a build tool: compiled without the fuzzing flags, like Bazel's exec tools.
$CXX -std=c++20 -O1 "$TRANSLATOR_SRC" -o "$obj/msl_translate"

jobs=()
kernel_objs=()
for s in "${LIB_SRCS[@]}"; do jobs+=("$obj/${s%.cc}.o $s"); done
for s in "${ORACLE_SRCS[@]}"; do jobs+=("$obj/${s%.cc}.o $s $ORACLE_FLAGS"); done
for k in "${MSL_KERNELS[@]}"; do
  read -r src prefix macro <<<"$k"
  base=$(basename "$src" .metal)
  gen=$obj/gen/$base.msl.cc
  args=()
  [[ $prefix == - ]] || { gen=$obj/gen/${prefix%/}_$base.msl.cc; args=("--prefix=$prefix"); }
  "$obj/msl_translate" "$src" "$gen" "${args[@]}"
  jobs+=("${gen%.cc}.o $gen $MSL_FLAGS $([[ $macro == - ]] || echo "-D$macro")")
  kernel_objs+=("${gen%.cc}.o")
done
for t in "${TARGETS[@]}"; do
  read -r name src macro <<<"$t"
  jobs+=("$obj/targets/$name.o $src $([[ $macro == - ]] || echo "-D$macro")")
done
# shellcheck disable=SC2016  # $1 is the child shell's; unquoted, it splits into the arguments
printf '%s\n' "${jobs[@]}" | xargs -d '\n' -n 1 -P "$JOBS" bash -c 'compile_one $1' _

lib_objs=()
for s in "${LIB_SRCS[@]}" "${ORACLE_SRCS[@]}"; do lib_objs+=("$obj/${s%.cc}.o"); done
rm -f "$obj/libkvcheck.a"
ar rcs "$obj/libkvcheck.a" "${lib_objs[@]}"

for t in "${TARGETS[@]}"; do
  read -r name src macro <<<"$t"
  fuzzer=$OUT/${name}_fuzzer
  # shellcheck disable=SC2086,SC2016  # $ORIGIN is the dynamic linker's, not the shell's
  $CXX $CXXFLAGS "$obj/targets/$name.o" "${kernel_objs[@]}" "$obj/libkvcheck.a" \
    $LIB_FUZZING_ENGINE "${LIBS[@]}" -Wl,-rpath,'$ORIGIN/lib' -Wl,--disable-new-dtags \
    -o "$fuzzer"
  # The runner image lacks the builder's packages: ship the shared libraries that are not
  # part of the C and C++ runtimes in $OUT/lib (an RPATH, not a RUNPATH, so that it also
  # serves their own dependencies: OpenBLAS's libgfortran).
  ldd "$fuzzer" | awk '$3 ~ /^\// {print $3}' | grep -v "^$OUT/lib/" |
    grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' |
    xargs -r cp -L -t "$OUT/lib/"

  rm -f "${fuzzer}_seed_corpus.zip"
  inputs=("fuzz/corpus/$name")
  [[ -d fuzz/regressions/$name ]] && inputs+=("fuzz/regressions/$name")
  find "${inputs[@]}" -type f -print | zip -q -j -@ "${fuzzer}_seed_corpus.zip"
  # max_len: libFuzzer's own choice for these corpora (4096: none is longer), which
  # tools/fuzz.sh leaves it to; rss_limit_mb: tools/fuzz.sh's.
  options="[libfuzzer]\nmax_len = 4096\nrss_limit_mb = 4096\n"
  if [[ -f fuzz/dict/$name.dict ]]; then
    cp "fuzz/dict/$name.dict" "${fuzzer}.dict"
    options+="dict = ${name}_fuzzer.dict\n"
  fi
  printf "%b" "$options" >"${fuzzer}.options"
done
