#include "src/attention/kernel_registry.h"

#include "src/attention/flash_attention.h"
#include "src/attention/naive_attention.h"
#include "src/metal/metal_attention.h"

namespace kvcheck {
namespace {

absl::StatusOr<Tensor> RunNaive(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int) {
  return NaiveAttention(q, k, v, params);
}

absl::StatusOr<Tensor> RunNaiveGrouped(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const AttentionParams& params, int) {
  return NaiveAttention(q, k, v, params, {.repeat_kv = false});
}

absl::StatusOr<Tensor> RunFlash(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int num_threads) {
  return FlashAttention(q, k, v, params, {.num_threads = num_threads});
}

absl::StatusOr<Tensor> RunFlashScalar(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params, int num_threads) {
  return FlashAttention(q, k, v, params,
                        {.num_threads = num_threads, .path = FlashPath::kScalar});
}

// Three key-range splits whatever the shape: the partial-state merge on every call, not only
// on long decode rows; and dense decode tiles of 33 keys, so that the laws' rows (most of
// them shorter than one automatic tile) cross tiles, each ending inside a vector.
absl::StatusOr<Tensor> RunFlashSplit3(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params, int num_threads) {
  return FlashAttention(q, k, v, params,
                        {.num_threads = num_threads, .kv_splits = 3, .decode_tile_keys = 33});
}

// The Metal kernels on the SIMT emulator (one thread: the emulator runs a dispatch on the
// calling thread).
template <absl::StatusOr<Tensor> (*kKernel)(const Tensor&, const Tensor&, const Tensor&,
                                            const AttentionParams&)>
absl::StatusOr<Tensor> RunMetal(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params, int) {
  return kKernel(q, k, v, params);
}

// The emulator's budget per call in the shared laws: about 10 ms here (EmulatorMicroseconds).
constexpr int64_t kMetalCallMicroseconds = 10000;

// REQUIRES: q and k of rank 4.
bool MetalCallFits(metal_attention::MetalKernelChoice kernel, const Tensor& q, const Tensor& k) {
  return metal_attention::EmulatorMicroseconds(kernel, q.dim(0) * q.dim(1), q.dim(2),
                                               k.dim(2)) <= kMetalCallMicroseconds;
}

template <metal_attention::MetalKernelChoice kKernel>
bool MetalWithinBudget(const Tensor& q, const Tensor& k) {
  if (q.rank() != 4 || k.rank() != 4) return true;  // the kernel's own error
  return MetalCallFits(kKernel, q, k);
}

bool DispatcherWithinBudget(const Tensor& q, const Tensor& k) {
  if (q.rank() != 4 || k.rank() != 4) return true;
  return MetalCallFits(metal_attention::ChooseMetalKernel(q.dim(2), k.dim(2)), q, k);
}

using metal_attention::MetalKernelChoice;

// name, summary, run, threaded (, features, dtypes, within_budget, behind_dispatcher).
const AttentionKernel kKernels[] = {
    {"naive", "matmul + softmax (OpenBLAS), KV heads repeated per query head", RunNaive, false},
    {"naive/grouped", "matmul + softmax, query heads of a KV head stacked in one product",
     RunNaiveGrouped, false},
    {"flash", "CPU flash attention, Highway SIMD path, automatic key splits", RunFlash, true},
    {"flash/scalar", "CPU flash attention, scalar path", RunFlashScalar, true},
    {"flash/split3", "CPU flash attention, three key-range splits merged", RunFlashSplit3,
     true},
    {"metal_vector", "Metal sdpa_vector (one row per threadgroup) on the SIMT emulator",
     RunMetal<metal_attention::MetalVectorAttention>, false, kAllKernelFeatures, 0x7,
     MetalWithinBudget<MetalKernelChoice::kVector>, true},
    {"metal_2pass", "Metal sdpa_2pass (32 key blocks, then a merge) on the SIMT emulator",
     RunMetal<metal_attention::MetalTwoPassAttention>, false, kAllKernelFeatures, 0x7,
     MetalWithinBudget<MetalKernelChoice::kTwoPass>, true},
    {"metal_tiled", "Metal sdpa_tiled (32 x 16 tiles, simdgroup_matrix) on the SIMT emulator",
     RunMetal<metal_attention::MetalTiledAttention>, false, kAllKernelFeatures, 0x7,
     MetalWithinBudget<MetalKernelChoice::kTiled>, true},
    {"metal", "Metal dispatcher (vector, 2-pass from 1024 keys, tiled for Sq > 1), emulated",
     RunMetal<metal_attention::MetalAttention>, false, kAllKernelFeatures, 0x7,
     DispatcherWithinBudget},
};

}  // namespace

bool AttentionKernel::admits(const Tensor& q, const Tensor& k) const {
  return within_budget == nullptr || within_budget(q, k);
}

absl::Span<const AttentionKernel> AttentionKernels() { return kKernels; }

const AttentionKernel* FindAttentionKernel(const std::string& name) {
  for (const AttentionKernel& kernel : kKernels) {
    if (name == kernel.name) return &kernel;
  }
  return nullptr;
}

}  // namespace kvcheck
