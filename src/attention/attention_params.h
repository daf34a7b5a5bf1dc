// File: attention_params.h
// AttentionParams: everything an attention kernel takes besides q, k and v, and the one
// boundary check every kernel runs before computing (ValidateAttention).
//
// The numeric contract every kernel in src/attention implements:
//   q (B, H, Sq, D), k and v (B, KH, Skv, D), any strides, one dtype (f32, f16 or bf16);
//   output (B, H, Sq, D), contiguous, in the input dtype.
//   - GQA: H % KH == 0; query head h reads KV head h / (H / KH).
//   - Positions: query i of batch row b is at q_positions[b * Sq + i], key slot j at
//     kv_positions[b * Skv + j]; defaults kpos[j] = j, qpos[i] = Skv - Sq + i (bottom-right:
//     the queries are the newest tokens). A negative position is an empty slot: a key there
//     is never allowed; a query there outputs 0. Cache positions are passed straight through.
//   - Score s = scale * <q_i, k_j> (scale defaults to 1/sqrt(D)); softcap c > 0:
//     s = c * tanh(s / c); ALiBi: s += slope[h] * (kpos - qpos); mask: s += mask value.
//   - Allowed keys: causal kpos <= qpos; window W > 0: qpos - kpos < W; a mask value of -inf
//     removes the key (and its k and v are never read into the result). A mask value of +inf
//     or NaN on an allowed key makes that score +inf or NaN, and so the whole row NaN (a
//     softmax with an infinite weight has no value; a kernel must not pick a key for it).
//   - Softmax over allowed keys, weighted sum of v. A row with no allowed key is exactly 0.
//     NaN in an allowed input is never hidden (a NaN score makes the row NaN; a NaN v[j][d]
//     makes element d NaN).
//   - Every dot product, softmax statistic and accumulator in f32; the output rounded once.
//   - Error: within the per-element bound of reference/ERROR_BOUND.md.
#ifndef KVCHECK_SRC_ATTENTION_ATTENTION_PARAMS_H_
#define KVCHECK_SRC_ATTENTION_ATTENTION_PARAMS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

struct AttentionParams {
  std::optional<float> scale;       // nullopt: 1/sqrt(D)
  float softcap = 0.0f;             // > 0 enables
  std::vector<float> alibi_slopes;  // empty, or one per query head
  bool causal = false;
  int64_t window = 0;               // > 0: sliding window
  // Additive f32 mask (Bm, Hm, Sq, Skv) with Bm in {1, B}, Hm in {1, H}; any strides.
  std::optional<Tensor> mask;
  std::vector<int64_t> q_positions;   // empty, or (B, Sq) row-major
  std::vector<int64_t> kv_positions;  // empty, or (B, Skv) row-major
};

// Sizes read off validated inputs.
struct AttentionShape {
  int64_t batch = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t q_len = 0;
  int64_t kv_len = 0;
  int64_t head_dim = 0;
  int64_t group_size() const { return num_heads / num_kv_heads; }
  // No output rows: nothing to compute. The other sizes of such a call may be huge (an empty
  // tensor bounds none of its dimensions), so a kernel returns before it loops over them.
  bool no_output_rows() const { return batch == 0 || num_heads == 0 || q_len == 0; }
};

// Checks q, k, v and params against the contract above and returns the sizes.
// Errors (kInvalidArgument, naming the tensor and dimension): rank not 4; k and v shapes
// differ; B or D differ between q and k; KH == 0 or H % KH != 0; dtypes differ; D == 0;
// ALiBi slope count, mask shape/dtype or position vector sizes wrong; negative window or
// softcap, or a non-finite scale/softcap.
absl::StatusOr<AttentionShape> ValidateAttention(const Tensor& q, const Tensor& k,
                                                 const Tensor& v, const AttentionParams& params);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_ATTENTION_ATTENTION_PARAMS_H_
