// File: naive_attention.h
// NaiveAttention: attention the textbook way, as the engines' non-flash path does it: widen
// to f32, scores = q k^T * scale as a matrix product (OpenBLAS sgemm), add softcap / ALiBi /
// masks, softmax per row, out = P v as a second matrix product, round to the input dtype.
//
// It materialises the (rows, Skv) score matrix, so its memory grows with Skv. With
// repeat_kv it first copies each KV head H / KH times (like repeat_kv in model code); without,
// the query heads of a group are stacked into one matrix product against their shared KV head.
// It is the baseline the flash kernel is benchmarked against, and it is held to the same
// contract (attention_params.h): a key a row may not see never reaches its output (when V
// holds a non-finite value the product P v is done key by key over allowed keys, since
// 0 * NaN = NaN), and a row with no allowed key is 0.
#ifndef KVCHECK_SRC_ATTENTION_NAIVE_ATTENTION_H_
#define KVCHECK_SRC_ATTENTION_NAIVE_ATTENTION_H_

#include "absl/status/statusor.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck {

struct NaiveOptions {
  bool repeat_kv = true;  // copy KV heads per query head (repeat_kv) before the products
};

// Errors: those of ValidateAttention, and kResourceExhausted if the f32 copies do not fit.
absl::StatusOr<Tensor> NaiveAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionParams& params,
                                      const NaiveOptions& options = {});

}  // namespace kvcheck

#endif  // KVCHECK_SRC_ATTENTION_NAIVE_ATTENTION_H_
