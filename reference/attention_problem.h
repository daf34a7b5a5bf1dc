// File: attention_problem.h
// AttentionProblem: one attention call written out in plain vectors, exactly as a kernel sees
// its inputs (values already rounded to the input dtype, then widened to float exactly).
//
// This is the reference engine's own description of the attention contract
// (src/attention/attention_params.h); it does not depend on the engine's tensors or parameter
// structs. Tests build one from the same data they give a kernel.
#ifndef KVCHECK_REFERENCE_ATTENTION_PROBLEM_H_
#define KVCHECK_REFERENCE_ATTENTION_PROBLEM_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "src/tensor/dtype.h"

namespace kvcheck::reference {

struct AttentionProblem {
  int64_t batch = 1;
  int64_t num_heads = 1;     // H, query heads
  int64_t num_kv_heads = 1;  // KH; H % KH == 0, query head h reads KV head h / (H / KH)
  int64_t q_len = 1;         // Sq
  int64_t kv_len = 0;        // Skv
  int64_t head_dim = 1;      // D

  // Row-major values: q is (B, H, Sq, D); k and v are (B, KH, Skv, D).
  std::vector<float> q, k, v;

  // Score scale; nullopt means exactly 1/sqrt(D) (a kernel rounds it; the bound allows that).
  std::optional<float> scale;
  // Softcap c > 0: s = c * tanh(s / c). 0 disables.
  float softcap = 0.0f;
  // ALiBi: empty, or one slope per query head; s += slope[h] * (kpos - qpos).
  std::vector<float> alibi_slopes;
  // Causal: key allowed only if kpos <= qpos.
  bool causal = false;
  // Sliding window W > 0: key allowed only if qpos - kpos < W. 0 disables.
  int64_t window = 0;
  // Additive mask: empty, or (mask_batch, mask_heads, Sq, Skv) with mask_batch in {1, B} and
  // mask_heads in {1, H} (broadcast). -inf removes the key; NaN poisons the row.
  std::vector<float> mask;
  int64_t mask_batch = 0;
  int64_t mask_heads = 0;
  // Absolute positions: empty means the defaults (kpos[j] = j, qpos[i] = Skv - Sq + i), else
  // (B, Sq) and (B, Skv). A negative position marks an empty slot (a padding query row gets
  // no keys and outputs 0; a padding key is never allowed).
  std::vector<int64_t> q_positions;
  std::vector<int64_t> kv_positions;

  // The dtype the kernel writes its output in (rounded once at the end).
  DType output_dtype = DType::kF32;

  // Rows to compute, as flat indices (b * H + h) * Sq + i; empty means all. The exact
  // reference is slow, so large cases check a sample of rows; the others are reported as
  // Expectation::kNotChecked.
  std::vector<int64_t> checked_rows;

  int64_t QIndex(int64_t b, int64_t h, int64_t i, int64_t d) const {
    return ((b * num_heads + h) * q_len + i) * head_dim + d;
  }
  int64_t KvIndex(int64_t b, int64_t kh, int64_t j, int64_t d) const {
    return ((b * num_kv_heads + kh) * kv_len + j) * head_dim + d;
  }
  // Element (b, h, i, j) of the mask seen as (B, H, Sq, Skv): a broadcast dimension reads its
  // one entry. REQUIRES: !mask.empty().
  int64_t MaskIndex(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t mb = mask_batch == 1 ? 0 : b, mh = mask_heads == 1 ? 0 : h;
    return ((mb * mask_heads + mh) * q_len + i) * kv_len + j;
  }
  int64_t QPosition(int64_t b, int64_t i) const {
    return q_positions.empty() ? kv_len - q_len + i : q_positions[b * q_len + i];
  }
  int64_t KvPosition(int64_t b, int64_t j) const {
    return kv_positions.empty() ? j : kv_positions[b * kv_len + j];
  }
};

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_ATTENTION_PROBLEM_H_
