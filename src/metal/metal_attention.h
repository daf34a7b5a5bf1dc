// File: metal_attention.h
// The Metal attention kernels (src/metal/kernels/*.metal), run by the SIMT emulator
// (src/metal/msl_cpu/), behind kvcheck's attention-kernel signature: the host side of a Metal
// dispatch (parameter block, buffer bindings with the byte offsets of views, grid), the same
// on an Apple GPU (src/metal/apple/) and in the emulator.
//
// Every kernel: every Sq and Skv, every D in 1..256, f32 / f16 / bf16, any strides, the whole
// contract of attention_params.h. Errors: those of ValidateAttention; kInvalidArgument for
// D > 256; an emulator error (kFailedPrecondition) if the kernel breaks the GPU's rules
// (divergent barriers, threadgroup memory over budget, a buffer read out of bounds, ...).
#ifndef KVCHECK_SRC_METAL_METAL_ATTENTION_H_
#define KVCHECK_SRC_METAL_METAL_ATTENTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/attention/attention_params.h"
#include "src/metal/kernels/sdpa_params.h"
#include "src/metal/msl_cpu/msl_runtime.h"
#include "src/tensor/tensor.h"

namespace kvcheck::metal_attention {

enum class MetalKernelChoice {
  kVector,   // sdpa_vector: a threadgroup of 32 x 32 threads per (query row, head, batch row)
  kTwoPass,  // sdpa_2pass: 32 key blocks of 4 simdgroups each, then a merge dispatch
  kTiled,    // sdpa_tiled: 32 query rows x 16 keys per step, simdgroup_matrix products
};

absl::StatusOr<Tensor> MetalVectorAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const AttentionParams& params);
absl::StatusOr<Tensor> MetalTwoPassAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const AttentionParams& params);
absl::StatusOr<Tensor> MetalTiledAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const AttentionParams& params);

// The dispatcher, candle's rule (candle_nn::ops::sdpa) with its thresholds named: one query row
// goes to the vector kernel, or to the 2-pass kernel from kTwoPassMinKeys keys on; more rows
// go to the tiled kernel.
inline constexpr int64_t kVectorMaxRows = 1;
inline constexpr int64_t kTwoPassMinKeys = 1024;
MetalKernelChoice ChooseMetalKernel(int64_t q_len, int64_t kv_len);
absl::StatusOr<Tensor> MetalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params);

// About how many microseconds a call takes on the emulator here (fitted to
// bench/metal_emulator_benchmark on the 2-core EPYC, D 64: ~4.5 us per query row and key on the
// vector and 2-pass kernels plus a fixed cost per row of threadgroups, ~1 us per row and key
// on the tiled kernel with rows rounded up to its 32-row tile). For budgets, not a promise.
int64_t EmulatorMicroseconds(MetalKernelChoice kernel, int64_t batch_heads, int64_t q_len,
                             int64_t kv_len);

// ---- One kernel call, prepared and then run ----------------------------------------------
// For hosts that change a dispatch before it runs (the defect models of defects/) and for
// kernels of the same interface built under another name: a user's variant of these .metal
// files, compiled with msl_kernel_library(prefix = "mine/"), runs through this host with
// kernel_prefix "mine/" and gets every law (docs/metal.md).
struct MetalCall {
  MetalKernelChoice kernel = MetalKernelChoice::kVector;
  std::string kernel_prefix;
  SdpaParams params{};
  Tensor out;  // zeros until the call runs
  // Buffers 0..8: q, k, v, out, params, mask, ALiBi slopes, q positions, kv positions (unused
  // ones bound to a one-element dummy, as a Metal host binds one). The grid is the kernel's.
  msl::DispatchDescription dispatch;
  // What the bindings point into (the call is neither copied nor moved: see Prepare).
  std::vector<float> alibi, dummy = {0.0f};
  std::vector<long> q_positions, kv_positions, no_positions = {0};
  MetalCall() = default;
  MetalCall(const MetalCall&) = delete;
  MetalCall& operator=(const MetalCall&) = delete;
};

// Validates the call and fills a MetalCall for `kernel` (its dispatch description complete).
absl::StatusOr<std::unique_ptr<MetalCall>> PrepareMetalCall(MetalKernelChoice kernel,
                                                            const Tensor& q, const Tensor& k,
                                                            const Tensor& v,
                                                            const AttentionParams& params,
                                                            const std::string& kernel_prefix = "");

// Runs the prepared dispatch (for the 2-pass kernel: its blocks, then the merge) and returns
// the output.
absl::StatusOr<Tensor> RunMetalCall(MetalCall& call);

}  // namespace kvcheck::metal_attention

#endif  // KVCHECK_SRC_METAL_METAL_ATTENTION_H_
