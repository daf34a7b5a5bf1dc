// The Metal defect models (defective_metal.h).
#include "defects/defective_metal.h"

#include <memory>

#include "src/base/status_macros.h"
#include "src/metal/metal_attention.h"

namespace kvcheck::defects {
namespace {

using metal_attention::MetalCall;
using metal_attention::MetalKernelChoice;

// The prefixes the variant libraries register their kernels under (defects/BUILD.bazel).
constexpr char kIgnoresMaskPrefix[] = "defect_vector_ignores_mask_and_causal/";
constexpr char kUnclampedPrefix[] = "defect_unclamped_causal_limit/";
constexpr char kMaskedRowPrefix[] = "defect_masked_row_nan/";
constexpr char kQTilePrefix[] = "defect_q_tile_in_threadgroup/";
constexpr char kFiniteMaxPrefix[] = "defect_finite_initial_max/";

absl::StatusOr<Tensor> Variant(MetalKernelChoice kernel, const char* prefix, const Tensor& q,
                               const Tensor& k, const Tensor& v, const AttentionParams& params) {
  KV_ASSIGN_OR_RETURN(std::unique_ptr<MetalCall> call,
                      metal_attention::PrepareMetalCall(kernel, q, k, v, params, prefix));
  return metal_attention::RunMetalCall(*call);
}

}  // namespace

absl::StatusOr<Tensor> DefectiveMetalAttention(MetalDefect defect, const Tensor& q,
                                               const Tensor& k, const Tensor& v,
                                               const AttentionParams& params) {
  switch (defect) {
    case MetalDefect::kVectorIgnoresMaskAndCausal:
      return Variant(MetalKernelChoice::kVector, kIgnoresMaskPrefix, q, k, v, params);
    case MetalDefect::kUnclampedCausalLimit:
      return Variant(MetalKernelChoice::kTiled, kUnclampedPrefix, q, k, v, params);
    case MetalDefect::kMaskedRowNaN:
      return Variant(MetalKernelChoice::kTiled, kMaskedRowPrefix, q, k, v, params);
    case MetalDefect::kFiniteInitialMax:
      return Variant(MetalKernelChoice::kTwoPass, kFiniteMaxPrefix, q, k, v, params);
    case MetalDefect::kQTileOverBudget: {
      KV_ASSIGN_OR_RETURN(std::unique_ptr<MetalCall> call,
                          metal_attention::PrepareMetalCall(MetalKernelChoice::kTiled, q, k, v,
                                                            params, kQTilePrefix));
      // steel's Q tile: BQ rows of the head dim padded to 8, plus 4 (the variant's stride).
      const int d8 = (call->params.head_dim + 7) / 8 * 8;
      call->dispatch.threadgroup_arguments[0] =
          static_cast<size_t>(kSdpaTiledRows) * (d8 + 4) * DTypeSize(q.dtype());
      return metal_attention::RunMetalCall(*call);
    }
    case MetalDefect::kVectorForShortPrefill: {
      // candle before PR #3479: Sq <= 8 took the vector kernel, whose grid has one row.
      const int64_t q_len = q.rank() == 4 ? q.dim(2) : 0;
      if (q_len < 2 || q_len > 8) return metal_attention::MetalAttention(q, k, v, params);
      KV_ASSIGN_OR_RETURN(std::unique_ptr<MetalCall> call,
                          metal_attention::PrepareMetalCall(MetalKernelChoice::kVector, q, k, v,
                                                            params));
      call->dispatch.threadgroups.x = 1;
      return metal_attention::RunMetalCall(*call);
    }
    case MetalDefect::kElementOffsets: {
      // candle before PR #3599: q, k and v bound at their view's offset in elements.
      const int64_t q_len = q.rank() == 4 ? q.dim(2) : 0, kv_len = k.rank() == 4 ? k.dim(2) : 0;
      KV_ASSIGN_OR_RETURN(
          std::unique_ptr<MetalCall> call,
          metal_attention::PrepareMetalCall(metal_attention::ChooseMetalKernel(q_len, kv_len),
                                            q, k, v, params));
      for (int index : {0, 1, 2}) {
        call->dispatch.buffers[index].offset /= DTypeSize(q.dtype());
      }
      return metal_attention::RunMetalCall(*call);
    }
  }
  return absl::InternalError("unknown Metal defect");
}

}  // namespace kvcheck::defects
