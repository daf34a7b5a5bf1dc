#include "src/attention/flash_problem.h"

#include <cmath>

namespace kvcheck::flash_internal {

void Operand::ReadRow(int64_t b, int64_t h, int64_t s, int64_t head_dim, float* out) const {
  const std::byte* row = Row(b, h, s);
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* elements = reinterpret_cast<const T*>(row);
    for (int64_t d = 0; d < head_dim; ++d) out[d] = ToFloat(elements[d * stride[3]]);
  });
}

void MergeRowState(RowState& into, const RowState& from, int64_t head_dim) {
  into.allowed += from.allowed;
  into.nan = into.nan || from.nan;
  if (from.allowed == 0) return;
  const float max = std::fmax(into.max, from.max);
  // A side whose max is -inf contributed exp(-inf - m) = 0 weights; keep its acc (which may
  // hold 0 * NaN = NaN from a NaN value) scaled by 0, so a NaN value is never dropped.
  const float scale_into = into.max == max ? 1.0f : std::exp(into.max - max);
  const float scale_from = from.max == max ? 1.0f : std::exp(from.max - max);
  into.sum = into.sum * scale_into + from.sum * scale_from;
  for (int64_t d = 0; d < head_dim; ++d) {
    into.acc[d] = into.acc[d] * scale_into + from.acc[d] * scale_from;
  }
  into.max = max;
}

void FinalizeRow(const RowState& state, int64_t head_dim, float* out) {
  if (state.allowed == 0) {
    for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
    return;
  }
  if (state.nan || !(state.sum > 0.0f)) {
    for (int64_t d = 0; d < head_dim; ++d) out[d] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  const float inverse = 1.0f / state.sum;
  // Eight at a time, loaded before any is stored (so that `out` and `acc` may not alias as
  // far as the compiler knows): the basic-block vectorizer turns each run into vector loads,
  // multiplies and stores. Element by element, this loop's scalar stores to output lines
  // cost 3-5% of a prefill (perf, 512 x 512 causal).
  int64_t d = 0;
  for (; d + 8 <= head_dim; d += 8) {
    float run[8];
    for (int i = 0; i < 8; ++i) run[i] = state.acc[d + i] * inverse;
    for (int i = 0; i < 8; ++i) out[d + i] = run[i];
  }
  for (; d < head_dim; ++d) out[d] = state.acc[d] * inverse;
}

}  // namespace kvcheck::flash_internal
