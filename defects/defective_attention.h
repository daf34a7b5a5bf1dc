// File: defective_attention.h
// DefectiveAttention: a plain online-softmax attention (one key at a time, f32; three key
// ranges merged flash-decoding style for the split defect) with one classic attention defect
// switched on; each is a registered kernel variant of the catalogue.
#ifndef KVCHECK_DEFECTS_DEFECTIVE_ATTENTION_H_
#define KVCHECK_DEFECTS_DEFECTIVE_ATTENTION_H_

#include "absl/status/statusor.h"
#include "src/attention/attention_params.h"
#include "src/tensor/tensor.h"

namespace kvcheck::defects {

enum class AttentionDefect {
  kNoRescaleOnNewMax,     // the accumulator is not scaled by exp(m_old - m) when m grows
  kHalfPrecisionDot,      // the dot product is rounded to the input dtype before scaling
  kGqaModulo,             // query head h reads KV head h % KH instead of h / (H / KH)
  kCausalTopLeft,         // default query positions 0..Sq-1 (kv_offset 0), not the newest
  kSoftcapDecodeBias,     // softcap decode adds (kpos - qpos) to every score (slope 1)
  kMaskedRowNaN,          // a row with no allowed key is 0 / 0 = NaN instead of 0
  kCoarseAccumulator,     // the softmax sum and output accumulator keep 20 significant bits
  kFiniteInitialMax,      // the running max starts at -1e9, not -inf (candle's 2-pass)
  kEmptySplitPoisonsMerge,  // a key range with no allowed key is 0/0 = NaN in the merge
};

absl::StatusOr<Tensor> DefectiveAttention(AttentionDefect defect, const Tensor& q,
                                          const Tensor& k, const Tensor& v,
                                          const AttentionParams& params);

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_DEFECTIVE_ATTENTION_H_
