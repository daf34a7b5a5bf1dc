// File: defective_metal.h
// The Metal defects of candle 0.11's SDPA (candle_nn::ops::sdpa and candle-metal-kernels'
// scaled_dot_product_attention.metal), each on the real .metal kernels of
// src/metal/kernels/ run by the SIMT emulator: kernel defects as variants of those sources
// built with one defect hook defined (defects/BUILD.bazel: msl_kernel_library with `defines`
// and a kernel-name prefix), host defects as a change to the prepared dispatch
// (metal_attention.h's MetalCall). Each is a registered kernel of the defect catalogue.
#ifndef KVCHECK_DEFECTS_DEFECTIVE_METAL_H_
#define KVCHECK_DEFECTS_DEFECTIVE_METAL_H_

#include "absl/status/statusor.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck::defects {

enum class MetalDefect {
  kVectorIgnoresMaskAndCausal,  // the vector kernel drops the mask and causality (candle 0.11)
  kUnclampedCausalLimit,        // tiled: kb_lim not clamped to the key blocks (MLX #1999)
  kMaskedRowNaN,                // tiled: O / sum with no guard, 0 / 0 (candle #3388)
  kQTileOverBudget,             // tiled: Q staged in threadgroup memory, unchecked budget
  kVectorForShortPrefill,       // Sq <= 8 to the vector kernel, one row's grid (before #3479)
  kElementOffsets,              // view offsets bound in elements, not bytes (before #3599)
  kFiniteInitialMax,            // 2-pass: running max starts at -1e9 (candle 0.11)
};

absl::StatusOr<Tensor> DefectiveMetalAttention(MetalDefect defect, const Tensor& q,
                                               const Tensor& k, const Tensor& v,
                                               const AttentionParams& params);

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_DEFECTIVE_METAL_H_
