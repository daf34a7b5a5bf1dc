// File: reference_attention.h
// Exact attention (DESIGN.md section 3) in Real, with the per-element error bound of
// section 4 (attention_bound.h, derived in ERROR_BOUND.md).
//
// Semantics, in exact arithmetic over the extended reals:
//   - allowed keys: kpos >= 0, qpos >= 0; causal kpos <= qpos; window qpos - kpos < W; a mask
//     value of -inf removes the key;
//   - score s = scale <q, k>; softcap s = c tanh(s / c); ALiBi s += slope_h (kpos - qpos);
//     then + mask;
//   - a row with no allowed key is exactly 0;
//   - a NaN score (NaN in q, k or the mask, inf - inf, 0 * inf), a +inf score, or all scores
//     -inf make the whole row NaN; otherwise o_d = sum_j p_j v_jd where a NaN v_jd, or an
//     infinite v_jd with p_j == 0, makes element d NaN, and infinite v_jd of one sign makes
//     it infinite. A kernel must reproduce every NaN (never hide one).
#ifndef KVCHECK_REFERENCE_REFERENCE_ATTENTION_H_
#define KVCHECK_REFERENCE_REFERENCE_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "reference/attention_bound.h"
#include "reference/attention_problem.h"

namespace kvcheck::reference {

// What a kernel's output element must satisfy.
enum class Expectation : uint8_t {
  kBounded,    // |actual - value| <= bound, actual finite
  kZero,       // no allowed key: actual == 0 exactly
  kNaN,        // actual is NaN
  kNonFinite,  // exact result is +-inf: actual is inf or NaN
  kUnbounded,  // beyond the bound's no-overflow assumption: not checked
  kNotChecked, // a row left out by AttentionProblem::checked_rows
};

const char* ExpectationName(Expectation expectation);

struct ReferenceAttention {
  // All three are (B, H, Sq, D) row-major.
  std::vector<double> value;  // nearest double to the exact output
  std::vector<double> bound;  // per-element bound (meaningful for kBounded)
  std::vector<Expectation> expectation;
};

// Checks shapes, sizes and parameter ranges of `problem`.
// Errors: kInvalidArgument naming the field.
absl::Status ValidateAttentionProblem(const AttentionProblem& problem);

// REQUIRES: ValidateAttentionProblem(problem).ok() (checked).
ReferenceAttention ComputeReferenceAttention(const AttentionProblem& problem,
                                             const BoundModel& model = {});

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_REFERENCE_ATTENTION_H_
