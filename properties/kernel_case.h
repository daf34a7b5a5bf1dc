// File: kernel_case.h
// KernelCase: a generated attention call covering DESIGN.md section 3: batch 1..3, GQA ratios
// 1..8 (non-powers of two included), head dims 1..256 on both sides of vector widths, decode
// (Sq = 1) and prefill up to 70 rows, 0..300 keys around tile sizes, f32/f16/bf16, strided
// inputs, causal / window / additive masks with broadcasting, ALiBi, softcap, custom scales,
// default, ring-cache (slot order) and varlen (padded) positions, and now and then NaN/inf.
//
// The same data exists twice: as the reference's AttentionProblem (values as floats, exact)
// and as TensorSpecs the kernels get as strided tensors.
#ifndef KVCHECK_PROPERTIES_KERNEL_CASE_H_
#define KVCHECK_PROPERTIES_KERNEL_CASE_H_

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "properties/tensor_spec.h"
#include "rapidcheck.h"
#include "reference/attention_problem.h"
#include "src/attention/attention_params.h"

namespace kvcheck::properties {

struct KernelCase {
  std::string positions_kind;  // "default", "ring", "varlen"
  reference::AttentionProblem problem;
  TensorSpec q, k, v;          // (B, H, Sq, D), (B, KH, Skv, D) x2, in problem.output_dtype
  std::optional<TensorSpec> mask;
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

// Generated cases; `max_kv_len` bounds Skv.
rc::Gen<KernelCase> GenKernelCase(int64_t max_kv_len = 300);

// The tensors and parameters a kernel gets for `c`.
absl::StatusOr<KernelInputs> MakeKernelInputs(const KernelCase& c);

// Limits the reference to a sample of rows when the case is large (the exact reference costs
// about rows x Skv x (D + 40) multiprecision operations), always keeping the last query row.
void SampleCheckedRows(KernelCase& c, int64_t budget);

void showValue(const KernelCase& c, std::ostream& os);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_KERNEL_CASE_H_
