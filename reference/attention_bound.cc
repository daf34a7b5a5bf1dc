#include "reference/attention_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvcheck::reference {
namespace {

constexpr double kU = 0x1p-24;  // f32 unit roundoff
// Largest absolute error of one f32 operation whose result is subnormal: half the spacing.
constexpr double kSubnormalHalfSpacing = 0x1p-150;
// Below this gap exp(gap) may be subnormal in f32 (normal range ends near e^-87.3): such
// weights are assumed to lose everything (relative error 1).
constexpr double kUnderflowGap = -80.0;
// Covers the rounding of the bound's own double arithmetic.
constexpr double kSafety = 1.0 + 1e-9;

// Absolute error of rounding |x| to the output dtype: relative half-ulp plus half the
// subnormal spacing.
double OutputRounding(double magnitude, DType dtype) {
  double subnormal_half_spacing = kSubnormalHalfSpacing;
  if (dtype == DType::kF16) subnormal_half_spacing = 0x1p-25;
  if (dtype == DType::kBF16) subnormal_half_spacing = 0x1p-134;
  return DTypeUnitRoundoff(dtype) * magnitude + subnormal_half_spacing;
}

}  // namespace

double GammaF32(int64_t n) {
  const double nu = static_cast<double>(n) * kU;
  return nu >= 1.0 ? std::numeric_limits<double>::infinity() : nu / (1.0 - nu);
}

double ScoreErrorBound(const ScoreParts& parts, int64_t head_dim, double max_final_abs,
                       const BoundModel& model) {
  // Dot product (D terms, any order): gamma_D; the default scale 1/sqrt(D) rounded (sqrt and
  // divide) and the multiply by it: three more roundings. Subnormal products/sums add at most
  // half a subnormal spacing each.
  double error = GammaF32(head_dim + 3) * parts.dot_abs_scaled +
                 static_cast<double>(2 * head_dim + 3) * kSubnormalHalfSpacing;
  if (parts.has_softcap) {
    // c * tanh(s / c): tanh' <= 1 carries the incoming error through unchanged; s / c (or
    // s * (1/c)) adds up to 2u |s|; tanh's own error and the multiply by c are relative to
    // the capped value.
    const double shifted = error + 2.0 * kU * (parts.raw_abs + error);
    error = shifted + (2.0 * model.tanh_ulps + 1.0) * kU * (parts.capped_abs + shifted) * 1.01;
  }
  if (parts.has_alibi) {
    // slope * (kpos - qpos): the distance is an exact integer, the product rounds once, then
    // the addition to the score rounds once.
    error += kU * parts.bias_abs;
    error += kU * (parts.final_abs + error + parts.bias_abs);
  }
  if (parts.has_mask) error += kU * (parts.final_abs + error);
  // A kernel may rescale scores (e.g. by log2 e) before subtracting the running max: one
  // rounding on the score and one on the max.
  error += kU * (parts.final_abs + max_final_abs + 2.0 * error);
  return error * kSafety;
}

RowBoundTerms ComputeRowBoundTerms(const RowSoftmax& row, const BoundModel& model) {
  RowBoundTerms terms;
  const size_t n = row.probability.size();
  for (double e : row.score_error) terms.max_score_error = std::max(terms.max_score_error, e);
  const double big_e = terms.max_score_error;
  // Rescales any one term can go through: at most one per later key inside its KV split
  // (running max) plus one per later merge of splits, n + 1 in all.
  const double rescales = static_cast<double>(n) + 1.0;
  // Each rescale: exp of a rounded difference (exp_ulps) and the multiply into acc/sum.
  const double per_rescale = (2.0 * model.exp_ulps + 1.0) * kU;
  const double sum_gamma = GammaF32(static_cast<int64_t>(n) + 2);
  terms.perturbed_weight.resize(n);
  terms.arithmetic_error.resize(n);
  for (size_t j = 0; j < n; ++j) {
    // Computed softmax weights of the perturbed scores are within exp(+-(e_j + E)) of p_j.
    terms.perturbed_weight[j] = row.probability[j] * std::exp(row.score_error[j] + big_e);
    const double gap = std::fabs(row.gap[j]) + 2.0 * big_e;
    double rho;
    if (row.gap[j] - 2.0 * big_e < kUnderflowGap) {
      rho = 1.0;  // the weight may underflow to zero: all of it may be lost
    } else {
      // The differences fed to exp (this term's own and those of the rescales after it)
      // telescope to at most |gap|, each rounded once: exp(2u |gap|); plus the exp and
      // multiply roundings of every rescale.
      rho = std::exp(2.0 * kU * gap) * std::pow(1.0 + per_rescale, rescales + 1.0) - 1.0;
    }
    // The term's product with v and its passage through n + 2 additions.
    terms.arithmetic_error[j] = (1.0 + rho) * (1.0 + sum_gamma) - 1.0;
    terms.sum_error += terms.perturbed_weight[j] * terms.arithmetic_error[j];
  }
  terms.vacuous = !(terms.sum_error < 1.0);
  return terms;
}

double HullBound(absl::Span<const double> values, DType output_dtype) {
  double lowest = values[0], highest = values[0], largest = 0;
  for (double v : values) {
    lowest = std::min(lowest, v);
    highest = std::max(highest, v);
    largest = std::max(largest, std::fabs(v));
  }
  const double n = static_cast<double>(values.size());
  // The computed weights w_j >= 0 reach the accumulator and the running sum multiplied by the
  // same rescale factors, so acc / l is a convex combination of the v_j up to the roundings
  // of the products with v, the rescales (<= n + 1 per term) and the sums (<= n + 2), each
  // relative to the weighted magnitudes: at most 4n + 12 of them, relative to max |v| once
  // divided by l (>= 1: the largest weight is exp(0) = 1). Subnormal results add an absolute
  // 2^-150 each.
  const double accumulation = GammaF32(4 * static_cast<int64_t>(n) + 12) * largest +
                              (4.0 * n + 8.0) * kSubnormalHalfSpacing;
  const double before_division = largest + accumulation;
  const double division = 2.0 * kU * before_division * (1.0 + 2.0 * kU);
  return ((highest - lowest) + accumulation + division +
          OutputRounding(before_division + division, output_dtype)) *
         kSafety;
}

double OutputElementBound(const RowSoftmax& row, const RowBoundTerms& terms,
                          absl::Span<const double> values, double exact_output,
                          DType output_dtype, bool* from_hull) {
  const double hull = HullBound(values, output_dtype);
  if (from_hull != nullptr) *from_hull = true;
  if (terms.vacuous) return hull;
  const size_t n = row.probability.size();
  const double big_e = terms.max_score_error;
  // (1) Score errors move the exact softmax: sum_j |p^_j - p_j| |v_j - o|, with
  //     |p^_j - p_j| <= p_j (exp(e_j + E) - 1) (centred on o, since sum (p^ - p) = 0).
  double score_term = 0;
  // (2) The f32 softmax and accumulation of the perturbed problem.
  double weighted_abs = 0;
  for (size_t j = 0; j < n; ++j) {
    score_term += row.probability[j] * std::expm1(row.score_error[j] + big_e) *
                  std::fabs(values[j] - exact_output);
    weighted_abs += terms.perturbed_weight[j] * std::fabs(values[j]) * terms.arithmetic_error[j];
  }
  const double perturbed_output = std::fabs(exact_output) + score_term;
  const double rescales = static_cast<double>(n) + 1.0;
  // Subnormal absolute errors in the accumulator (products, sums, rescales), over L >= 1.
  const double subnormal = (3.0 * static_cast<double>(n) + 2.0 * rescales + 4.0) *
                           kSubnormalHalfSpacing;
  const double arithmetic_term =
      (weighted_abs + perturbed_output * terms.sum_error + subnormal) / (1.0 - terms.sum_error);
  // (3) Final normalisation: a division, or a reciprocal and a multiply.
  const double before_division = perturbed_output + arithmetic_term;
  const double division_term = 2.0 * kU * before_division * (1.0 + 2.0 * kU);
  // (4) One rounding to the output dtype.
  const double before_output = before_division + division_term;
  const double total = (score_term + arithmetic_term + division_term +
                        OutputRounding(before_output, output_dtype)) *
                       kSafety;
  if (from_hull != nullptr) *from_hull = hull < total;
  return std::min(total, hull);
}

}  // namespace kvcheck::reference
