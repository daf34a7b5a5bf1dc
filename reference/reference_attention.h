// File: reference_attention.h
// Exact attention (the contract of src/attention/attention_params.h) in a high-precision number
// type, with the per-element error bound (attention_bound.h, derived in ERROR_BOUND.md).
//
// Oracles: the same code runs in DoubleDouble (double_double.h, ~106 bits, the fast default)
// or in Real (real.h, 50 decimal digits, ~166 bits; the cross-check). What an oracle
// guarantees, and what the bound adds for it (ERROR_BOUND.md, step 6):
//   |value - exact| <= kOracleUnit * (n + D + 16) * magnitude + 2^-53 |value| + 2^-1000,
// with magnitude = sum_j p_j |v_jd| (the `magnitude` field), n the allowed keys and
// kOracleUnit 2^-100 (DoubleDouble) or 2^-160 (Real). The guarantee is absolute relative to
// the magnitude, not relative to the value: where the exact output cancels to far below the
// magnitude (D = 1, v = {1, -1} with nearly equal weights) the value may be 0 or off in its
// leading digits, always within this term, which is negligible against the f32 bound.
// Weights exp(t_j - M) below an oracle's exponent range (gaps past ~745 in DoubleDouble,
// ~1.49e9 in Real) are flushed to 0; their contribution is below 2^-900 of max |v| and
// inside the guarantee. Whether a weight is exactly 0 (for the NaN rules below) is decided
// from the score (-inf), never from a flushed weight.
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
#include <string_view>
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
  // All four are (B, H, Sq, D) row-major.
  std::vector<double> value;      // the exact output, within the oracle's guarantee
  std::vector<double> bound;      // per-element bound (meaningful for kBounded)
  std::vector<double> magnitude;  // sum_j p_j |v_jd| over the allowed keys (0 for no key)
  // The row's score scale: over its finite scores, the largest |scale| * sum_d |q_d k_d| or
  // |final score| (the magnitude a score's rounding errors are relative to).
  std::vector<double> score_abs;
  std::vector<Expectation> expectation;
  // Bounded elements whose bound is the convex-hull one (score errors too large for the
  // derived bound: ERROR_BOUND.md step 5).
  int64_t hull_bounded = 0;
};

// The number type the reference computes in.
enum class Oracle {
  kDoubleDouble,  // ~106-bit double-double: the default, tens of times faster
  kReal,          // 50 decimal digits (cpp_bin_float_50): the cross-check
  kReal100,       // 100 decimal digits: the ground truth the oracles' guarantee is checked on
};
const char* OracleName(Oracle oracle);
// "dd" / "real" / "real100" (flag and KVCHECK_ORACLE values).
bool ParseOracle(std::string_view text, Oracle* oracle);
// The oracle ComputeReferenceAttention uses when none is given: kDoubleDouble unless
// SetDefaultOracle (kvcheck --oracle, KVCHECK_ORACLE in tests) changed it. Not thread-safe
// with running properties.
Oracle DefaultOracle();
void SetDefaultOracle(Oracle oracle);
// The unit of the guarantee above: 2^-100, 2^-160, 2^-320.
double OracleUnit(Oracle oracle);

// Checks shapes, sizes and parameter ranges of `problem`.
// Errors: kInvalidArgument naming the field.
absl::Status ValidateAttentionProblem(const AttentionProblem& problem);

// REQUIRES: ValidateAttentionProblem(problem).ok() (checked).
ReferenceAttention ComputeReferenceAttention(const AttentionProblem& problem,
                                             const BoundModel& model = {});
ReferenceAttention ComputeReferenceAttention(const AttentionProblem& problem,
                                             const BoundModel& model, Oracle oracle);

}  // namespace kvcheck::reference

#endif  // KVCHECK_REFERENCE_REFERENCE_ATTENTION_H_
