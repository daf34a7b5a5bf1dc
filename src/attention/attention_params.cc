#include "src/attention/attention_params.h"

#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "src/base/checked_math.h"

namespace kvcheck {
namespace {

template <typename... Parts>
absl::Status Invalid(const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat("attention: ", parts...));
}

}  // namespace

absl::StatusOr<AttentionShape> ValidateAttention(const Tensor& q, const Tensor& k,
                                                 const Tensor& v, const AttentionParams& params) {
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4) {
    return Invalid("q, k and v must have rank 4 (B, H, S, D); shapes are q ",
                   DimsToString(q.shape()), ", k ", DimsToString(k.shape()), ", v ",
                   DimsToString(v.shape()));
  }
  if (k.shape() != v.shape()) {
    return Invalid("k shape ", DimsToString(k.shape()), " differs from v shape ",
                   DimsToString(v.shape()));
  }
  if (q.dtype() != k.dtype() || k.dtype() != v.dtype()) {
    return Invalid("dtypes differ: q ", DTypeName(q.dtype()), ", k ", DTypeName(k.dtype()),
                   ", v ", DTypeName(v.dtype()));
  }
  AttentionShape shape{q.dim(0), q.dim(1), k.dim(1), q.dim(2), k.dim(2), q.dim(3)};
  if (k.dim(0) != shape.batch) {
    return Invalid("batch (dimension 0) differs: q ", DimsToString(q.shape()), ", k ",
                   DimsToString(k.shape()));
  }
  if (k.dim(3) != shape.head_dim) {
    return Invalid("head_dim (dimension 3) differs: q ", DimsToString(q.shape()), ", k ",
                   DimsToString(k.shape()));
  }
  if (shape.head_dim == 0) return Invalid("head_dim (dimension 3) is 0");
  if (shape.num_kv_heads == 0 || shape.num_heads % shape.num_kv_heads != 0) {
    return Invalid("num_heads ", shape.num_heads, " (q dimension 1) is not a multiple of ",
                   "num_kv_heads ", shape.num_kv_heads, " (k dimension 1)");
  }
  if (params.scale.has_value() && !std::isfinite(*params.scale)) {
    return Invalid("scale ", *params.scale, " is not finite");
  }
  if (!(params.softcap >= 0) || !std::isfinite(params.softcap)) {
    return Invalid("softcap ", params.softcap, " must be finite and >= 0");
  }
  if (params.window < 0) return Invalid("window ", params.window, " is negative");
  if (!params.alibi_slopes.empty() &&
      static_cast<int64_t>(params.alibi_slopes.size()) != shape.num_heads) {
    return Invalid(params.alibi_slopes.size(), " ALiBi slopes for ", shape.num_heads,
                   " query heads");
  }
  if (params.mask.has_value()) {
    const Tensor& mask = *params.mask;
    if (mask.dtype() != DType::kF32 || mask.rank() != 4 ||
        (mask.dim(0) != 1 && mask.dim(0) != shape.batch) ||
        (mask.dim(1) != 1 && mask.dim(1) != shape.num_heads) || mask.dim(2) != shape.q_len ||
        mask.dim(3) != shape.kv_len) {
      return Invalid("mask must be f32 (1 or B, 1 or H, Sq, Skv) = (1 or ", shape.batch,
                     ", 1 or ", shape.num_heads, ", ", shape.q_len, ", ", shape.kv_len,
                     "); got ", DTypeName(mask.dtype()), " ", DimsToString(mask.shape()));
    }
  }
  // B * Sq overflows only for an empty q (H = 0) whose B and Sq are huge: no positions can
  // have that many entries.
  const std::optional<int64_t> query_rows = CheckedMul(shape.batch, shape.q_len);
  if (!params.q_positions.empty() &&
      (!query_rows || static_cast<int64_t>(params.q_positions.size()) != *query_rows)) {
    return Invalid("q_positions has ", params.q_positions.size(), " entries, expected B * Sq = ",
                   shape.batch, " * ", shape.q_len);
  }
  const std::optional<int64_t> key_rows = CheckedMul(shape.batch, shape.kv_len);
  if (!params.kv_positions.empty() &&
      (!key_rows || static_cast<int64_t>(params.kv_positions.size()) != *key_rows)) {
    return Invalid("kv_positions has ", params.kv_positions.size(),
                   " entries, expected B * Skv = ", shape.batch, " * ", shape.kv_len);
  }
  return shape;
}

}  // namespace kvcheck
