// File: metal_attention.h
// The Metal attention kernels (src/metal/kernels/*.metal), run by the SIMT emulator
// (src/metal/msl_cpu/), behind kvcheck's attention-kernel signature: the host side of a Metal
// dispatch (parameter block, buffer bindings with the byte offsets of views, grid), the same
// on an Apple GPU and in the emulator.
//
// MetalVectorAttention: sdpa_vector, one threadgroup of 32 x 32 threads per (query row, head,
// batch row); every Sq (a prefill is Sq rows of the decode kernel), every D in 1..256, f32 /
// f16 / bf16, the whole contract of attention_params.h.
#ifndef KVCHECK_SRC_METAL_METAL_ATTENTION_H_
#define KVCHECK_SRC_METAL_METAL_ATTENTION_H_

#include "absl/status/statusor.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck::metal_attention {

// Errors: those of ValidateAttention; kInvalidArgument for D > 256; an emulator error
// (kFailedPrecondition) if the kernel breaks the GPU's rules.
absl::StatusOr<Tensor> MetalVectorAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const AttentionParams& params);

// MetalTwoPassAttention: sdpa_2pass, the keys in 32 blocks (a threadgroup of 4 simdgroups
// per block and row), the blocks' f32 states merged by a second dispatch. The same contract.
absl::StatusOr<Tensor> MetalTwoPassAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionParams& params);

// MetalTiledAttention: sdpa_tiled, 32 query rows per threadgroup of 4 simdgroups, keys 16
// at a time, simdgroup_matrix products, base-2 online softmax. The same contract.
absl::StatusOr<Tensor> MetalTiledAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const AttentionParams& params);

// The dispatcher, candle's rule (spec section 4.1) with its thresholds named: one query row
// goes to the vector kernel, or to the 2-pass kernel from kTwoPassMinKeys keys on; more rows
// go to the tiled kernel.
inline constexpr int64_t kVectorMaxRows = 1;
inline constexpr int64_t kTwoPassMinKeys = 1024;
enum class MetalKernelChoice { kVector, kTwoPass, kTiled };
MetalKernelChoice ChooseMetalKernel(int64_t q_len, int64_t kv_len);

// Runs the kernel ChooseMetalKernel picks.
absl::StatusOr<Tensor> MetalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params);

}  // namespace kvcheck::metal_attention

#endif  // KVCHECK_SRC_METAL_METAL_ATTENTION_H_
