// File: naive_attention.h
// NaiveAttention: attention the textbook way, as the engines' non-flash path does it:
// widen to f32, repeat each KV head H / KH times (like repeat_kv), scores = q k^T * scale,
// add softcap / ALiBi / masks, softmax per row, out = P v, round to the input dtype.
//
// It materialises the (Sq, Skv) score matrix per head and copies K/V for GQA, so its memory
// grows with Skv. It is the baseline the flash kernel is benchmarked against, and it is held
// to the same contract (attention_params.h): masked keys are skipped, not multiplied by 0,
// so a NaN in a masked slot never reaches the output; a row with no allowed key is 0.
#ifndef KVCHECK_SRC_ATTENTION_NAIVE_ATTENTION_H_
#define KVCHECK_SRC_ATTENTION_NAIVE_ATTENTION_H_

#include "absl/status/statusor.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

// Errors: those of ValidateAttention, and kResourceExhausted if the f32 copies do not fit.
absl::StatusOr<Tensor> NaiveAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params);

}  // namespace kvcheck

#endif  // KVCHECK_SRC_ATTENTION_NAIVE_ATTENTION_H_
