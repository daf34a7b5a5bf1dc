// File: attention_bound.h
// The per-element error bound for an f32-accumulating attention kernel. The derivation, with every
// assumption, is in reference/ERROR_BOUND.md; the comments here only name the terms.
//
// Model of the kernel being bounded ("any reasonable f32 kernel"):
//   - inputs are exact f32 values (f16/bf16 inputs widen exactly);
//   - each score is a D-term f32 dot product in any order (FMA allowed), times the scale
//     (the default scale 1/sqrt(D) may itself be rounded), then softcap, ALiBi and mask with
//     one rounding each; the score may be multiplied by log2(e) for an exp2-based softmax;
//   - exp within `exp_ulps`, tanh within `tanh_ulps`;
//   - softmax statistics and the accumulator in f32, summed in any order, with any number of
//     running-max rescales (online softmax) and partial merges (split-KV), n + 1 at most
//     for any one term;
//   - one final division (or reciprocal and multiply), then one rounding to the output dtype;
//   - no f32 overflow (the caller marks rows beyond that as unbounded).
#ifndef KVCHECK_REFERENCE_ATTENTION_BOUND_H_
#define KVCHECK_REFERENCE_ATTENTION_BOUND_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "src/tensor/dtype.h"

namespace kvcheck::reference {

struct BoundModel {
  int exp_ulps = 2;   // accuracy the kernel's exp/exp2 must have
  int tanh_ulps = 4;  // accuracy the kernel's tanh must have
};

// Magnitudes of one key's score pipeline, from exact arithmetic.
struct ScoreParts {
  double dot_abs_scaled = 0;  // |scale| * sum_d |q_d * k_d|
  // The largest f32 intermediate of the dot product in any order a kernel may use: the
  // unscaled sum_d |q_d k_d| (product first, scale after), |scale| * max_d |q_d| (query scaled
  // first) and dot_abs_scaled. Only for the no-overflow guard, not for the bound itself.
  double dot_intermediate_abs = 0;
  double raw_abs = 0;         // |scale * <q, k>|, before softcap
  double capped_abs = 0;      // |c * tanh(raw / c)| (== raw_abs without softcap)
  double bias_abs = 0;        // |ALiBi bias|
  double final_abs = 0;       // |final score|, after ALiBi and mask
  bool has_softcap = false;
  bool has_alibi = false;
  bool has_mask = false;
};

// Upper bound on |computed score - exact score| for one key.
// `max_final_abs` is the largest |final score| of the row (for exp2 rescaling of the max).
double ScoreErrorBound(const ScoreParts& parts, int64_t head_dim, double max_final_abs,
                       const BoundModel& model);

// One query row's softmax, in exact arithmetic, for the output bound.
struct RowSoftmax {
  std::vector<double> probability;  // p_j, exact softmax weights of the allowed keys
  std::vector<double> score_error;  // e_j from ScoreErrorBound
  std::vector<double> gap;          // t_j - max_l t_l (<= 0)
};

// Per-row quantities shared by the row's D output elements.
struct RowBoundTerms {
  std::vector<double> perturbed_weight;  // P_j = p_j exp(e_j + E): bounds the computed p_j
  std::vector<double> arithmetic_error;  // theta_j: relative error of term j's arithmetic
  double sum_error = 0;                  // theta_L = sum_j P_j theta_j (< 1 unless vacuous)
  double max_score_error = 0;            // E
  bool vacuous = false;                  // theta_L >= 1: no finite bound
};

RowBoundTerms ComputeRowBoundTerms(const RowSoftmax& row, const BoundModel& model);

// Bound on |computed - exact| for one output element with exact value `exact_output`, given
// the row's values v_j[d] for the allowed keys, in the same order as `row`: the smaller of the
// derived bound (steps 1 to 4 of ERROR_BOUND.md) and the convex-hull bound (step 5), which
// stays finite when score errors make the derived one vacuous. *from_hull (may be null) says
// which one it was.
double OutputElementBound(const RowSoftmax& row, const RowBoundTerms& terms,
                          absl::Span<const double> values, double exact_output,
                          DType output_dtype, bool* from_hull = nullptr);

// The convex-hull bound alone (ERROR_BOUND.md step 5): a kernel's output before rounding is a
// convex combination of the allowed v_j[d] up to its accumulation roundings, whatever its
// score errors, so |computed - exact| <= (max v - min v) + roundings. REQUIRES: values
// non-empty and finite.
double HullBound(absl::Span<const double> values, DType output_dtype);

// gamma_n = n u / (1 - n u) with u = 2^-24 (Higham's constant).
double GammaF32(int64_t n);

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_ATTENTION_BOUND_H_
