// The scalar reference path of the flash kernel: one key at a time, the online-softmax update
// written out as in the papers. The Highway path (flash_block_simd.cc) must agree with it
// within the error bound; tests run both.
#include <cmath>
#include <limits>
#include <vector>

#include "src/attention/flash_problem.h"
#include "src/attention/key_rules.h"

namespace kvcheck::flash_internal {

void ProcessBlockScalar(const FlashProblem& p, const RowBlock& block, RowState* states) {
  const int64_t D = p.shape.head_dim;
  const int64_t b = block.batch;
  // Keys outside, rows inside: each row still sees its keys in order (the same updates as a
  // row-at-a-time loop), and a key's K and V are widened once for the whole block.
  std::vector<float> q(block.num_rows * D), k(D), v(D);
  for (int r = 0; r < block.num_rows; ++r) {
    p.q.ReadRow(b, block.head[r], block.query[r], D, q.data() + r * D);
  }
  for (int64_t j = block.key_begin; j < block.key_end; ++j) {
    const int64_t kpos = p.KeyPosition(b, j);
    bool read = false;
    for (int r = 0; r < block.num_rows; ++r) {
      const int64_t h = block.head[r], i = block.query[r];
      RowState& state = states[r];
      const int64_t qpos = p.QueryPosition(b, i);
      if (!attention_internal::KeyAllowed(qpos, kpos, p.causal, p.window)) continue;
      const float mask = p.MaskValue(b, h, i, j);
      if (attention_internal::IsMinusInfinity(mask)) continue;  // removed: never read
      ++state.allowed;
      if (!read) {
        p.k.ReadRow(b, block.kv_head, j, D, k.data());
        p.v.ReadRow(b, block.kv_head, j, D, v.data());
        read = true;
      }
      const float* qr = q.data() + r * D;
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += qr[d] * k[d];
      const float s = attention_internal::FinishScore(dot * p.scale, p.softcap,
                                                      p.inverse_softcap, p.Slope(h), qpos, kpos,
                                                      mask);
      // A NaN or +inf score makes the row NaN (inf - inf has no softmax); it is recorded and
      // the row is overwritten at the end, so nothing below may hide it.
      if (std::isnan(s) || s == std::numeric_limits<float>::infinity()) state.nan = true;
      if (s > state.max) {
        // New running max: rescale what was accumulated, l = l * exp(m_old - m) + 1.
        const float alpha = std::exp(state.max - s);  // exp(-inf) = 0 for the first key
        for (int64_t d = 0; d < D; ++d) state.acc[d] = state.acc[d] * alpha + v[d];
        state.sum = state.sum * alpha + 1.0f;
        state.max = s;
      } else {
        // l += exp(s - m); a -inf score weighs 0 but still multiplies v (0 * NaN = NaN).
        const float weight = std::isinf(s) ? 0.0f : std::exp(s - state.max);
        for (int64_t d = 0; d < D; ++d) state.acc[d] += weight * v[d];
        state.sum += weight;
      }
    }
  }
}

}  // namespace kvcheck::flash_internal
