// File: kernel_case.h
// KernelCase: a generated attention call covering the attention contract
// (src/attention/attention_params.h), biased towards the boundaries where kernels break:
//   - sizes: batch 1..3; GQA groups 1..8 and across the flash kernel's 48-row blocks (16, 49);
//     head dims 1..256 at and around every vector width (4, 8, 16 floats) and its tails;
//     Sq = 1 (decode) and prefill rows around the 48-row block; Skv at multiples of the
//     32-key tile and +-1, around the 512-key split threshold, and at W - 1, W, W + 1 for a
//     window W;
//   - features: custom scale, softcap, ALiBi, causal, sliding window, additive masks (random,
//     leading tiles removed, whole rows removed, only one tile allowed, +inf / NaN entries,
//     a finite "minus infinity" of -1e9 or -1e30 as models build masks),
//     default / ring-cache (slot order) / varlen (padded) positions, strided inputs;
//   - values: unit scale, large (f16 dot overflow, huge scores), and special-value patterns:
//     a few NaN / +-inf elements, a whole query row, a whole tile of keys or values.
// Every feature is its own draw that shrinks towards "off", and every size towards its
// smallest value, independently: a shrunk counterexample keeps only what the failure needs.
//
// The same data exists twice: as the reference's AttentionProblem (values as floats, exact)
// and as TensorSpecs the kernels get as strided tensors. `notes` says in words what the
// special patterns are, for the counterexample.
#ifndef KVCHECK_PROPERTIES_KERNEL_CASE_H_
#define KVCHECK_PROPERTIES_KERNEL_CASE_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "reference/attention_problem.h"
#include "src/attention/attention_params.h"
#include "src/attention/kernel_registry.h"

namespace kvcheck::properties {

struct KernelCase {
  std::string positions_kind;  // "default", "ring", "varlen", "q only", "kv only", "both"
  reference::AttentionProblem problem;
  TensorSpec q, k, v;          // (B, H, Sq, D), (B, KH, Skv, D) x2, in problem.output_dtype
  std::optional<TensorSpec> mask;
  float amplitude = 1.0f;           // q and k values lie in [-2 amplitude, 2 amplitude]
  std::vector<std::string> notes;   // the special-value and mask patterns, in words
  std::vector<int64_t> focus_rows;  // rows the patterns aim at: always checked
};

struct KernelInputs {
  Tensor q, k, v;
  AttentionParams params;
};

// `count` values on a 1/1024 grid in [-2 amplitude, 2 amplitude], exactly representable in
// `dtype`, from a SplitMix64 stream seeded with `seed` (cases carry a seed, not every value).
std::vector<float> SeededValues(uint64_t seed, int64_t count, float amplitude, DType dtype);

// Positions of a ring cache of p.kv_len slots after `appended` tokens (slot order; the queries
// are the newest p.q_len positions), for every batch row.
void SetRingPositions(reference::AttentionProblem& p, int64_t appended);
// Varlen rows: row b holds lengths[b] keys at slots [0, lengths[b]), the rest empty (-1); the
// queries are the row's last p.q_len positions (-1 where that is before 0).
void SetVarlenPositions(reference::AttentionProblem& p, absl::Span<const int64_t> lengths);

// What a case may use: the kernels under test implement these KernelFeature bits
// (src/attention/kernel_registry.h) and dtypes (bit DType). A feature left out is never drawn.
struct KernelCaseLimits {
  uint32_t features = kAllKernelFeatures;
  uint32_t dtypes = 0x7;
  // When non-empty, Sq (or Skv) is one of these: laws about a kernel's threshold.
  std::vector<int64_t> q_lens, kv_lens;
  // When positive, B * H is at most this: laws over kernels that are slow per row.
  int64_t max_rows = 0;
  // Percent of cases with special values (NaN, +-inf) in q, k or v.
  int specials_percent = 12;
};

// Generated cases; `max_kv_len` bounds Skv.
rc::Gen<KernelCase> GenKernelCase(int64_t max_kv_len = 600, KernelCaseLimits limits = {});

// The tensors and parameters a kernel gets for `c`.
absl::StatusOr<KernelInputs> MakeKernelInputs(const KernelCase& c);

// Limits the reference to a sample of rows when the case is large (the exact reference costs
// about rows x Skv x (D + 40) operations), always keeping the last query row and the rows the
// case's patterns aim at.
void SampleCheckedRows(KernelCase& c, int64_t budget);

// One query row of `p` for a failure message: its position and q, the keys it may see with
// their positions, k, v and mask values (the first and last few when there are many), and
// which of those inputs are NaN or infinite. `row` is the flat (b * H + h) * Sq + i. With the
// kernel's `actual` value of the diverging element: a NaN where no input the row reads is
// NaN or infinite is named as a read outside the inputs' views (tensor_spec.h, red zones).
std::string DescribeRow(const reference::AttentionProblem& p, int64_t row,
                        std::optional<float> actual = std::nullopt);

// Every parameter labelled, the special-value patterns in words, the values when few.
void showValue(const KernelCase& c, std::ostream& os);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_KERNEL_CASE_H_
