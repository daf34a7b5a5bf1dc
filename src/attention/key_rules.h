// File: key_rules.h
// The per-(query, key) rules of the attention contract (attention_params.h) as small inline
// functions, shared by every kernel so that "which keys are allowed" and "what is added to a
// score" are written once.
#ifndef KVCHECK_SRC_ATTENTION_KEY_RULES_H_
#define KVCHECK_SRC_ATTENTION_KEY_RULES_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "src/attention/attention_params.h"

namespace kvcheck::attention_internal {

// Absolute positions of queries and keys for one batch row (defaults filled in).
class RowPositions {
 public:
  RowPositions(const AttentionParams& params, const AttentionShape& shape, int64_t b)
      : q_(params.q_positions.empty() ? nullptr : params.q_positions.data() + b * shape.q_len),
        k_(params.kv_positions.empty() ? nullptr : params.kv_positions.data() + b * shape.kv_len),
        default_q0_(shape.kv_len - shape.q_len) {}
  int64_t query(int64_t i) const { return q_ != nullptr ? q_[i] : default_q0_ + i; }
  int64_t key(int64_t j) const { return k_ != nullptr ? k_[j] : j; }

 private:
  const int64_t* q_;
  const int64_t* k_;
  int64_t default_q0_;
};

// Causal / window / empty-slot rule (the mask's -inf is checked by the caller).
inline bool KeyAllowed(int64_t qpos, int64_t kpos, bool causal, int64_t window) {
  if (qpos < 0 || kpos < 0) return false;
  if (causal && kpos > qpos) return false;
  if (window > 0 && qpos - kpos >= window) return false;
  return true;
}

// Score post-processing after the scaled dot product: softcap, then ALiBi, then the mask.
inline float FinishScore(float scaled_dot, float softcap, float inverse_softcap, float slope,
                         int64_t qpos, int64_t kpos, float mask_value) {
  float s = scaled_dot;
  if (softcap > 0.0f) s = softcap * std::tanh(s * inverse_softcap);
  if (slope != 0.0f) s += slope * static_cast<float>(kpos - qpos);
  return s + mask_value;
}

inline float DefaultScale(int64_t head_dim) {
  return 1.0f / std::sqrt(static_cast<float>(head_dim));
}

inline bool IsMinusInfinity(float x) { return x == -std::numeric_limits<float>::infinity(); }

}  // namespace kvcheck::attention_internal

#endif  // KVCHECK_SRC_ATTENTION_KEY_RULES_H_
