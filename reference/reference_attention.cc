#include "reference/reference_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "reference/double_double.h"
#include "reference/real.h"
#include "src/base/check.h"

namespace kvcheck::reference {
namespace {

// Beyond this magnitude an f32 kernel may overflow where the exact value does not.
constexpr double kOverflowGuard = 0x1p126;

template <typename Number>
struct KeyScore {
  int64_t slot;
  Number score;
  ScoreParts parts;
};

// Allowed keys of query row (b, h, i) with their exact scores.
template <typename Number>
std::vector<KeyScore<Number>> ScoreRow(const AttentionProblem& p, int64_t b, int64_t h,
                                       int64_t i, const Number& scale) {
  std::vector<KeyScore<Number>> keys;
  const int64_t qpos = p.QPosition(b, i);
  if (qpos < 0) return keys;
  const int64_t kv_head = h / (p.num_heads / p.num_kv_heads);
  const bool has_mask = !p.mask.empty();
  const int64_t mask_base = has_mask ? p.MaskIndex(b, h, i, 0) : 0;
  for (int64_t j = 0; j < p.kv_len; ++j) {
    const int64_t kpos = p.KvPosition(b, j);
    if (kpos < 0) continue;
    if (p.causal && kpos > qpos) continue;
    if (p.window > 0 && qpos - kpos >= p.window) continue;
    const float mask_value = has_mask ? p.mask[mask_base + j] : 0.0f;
    if (std::isinf(mask_value) && mask_value < 0) continue;
    KeyScore<Number> key{j, Number(0), {}};
    Number dot = 0;
    double dot_abs = 0, q_abs_max = 0;
    for (int64_t d = 0; d < p.head_dim; ++d) {
      const float qd = p.q[p.QIndex(b, h, i, d)];
      const float kd = p.k[p.KvIndex(b, kv_head, j, d)];
      // The product of two f32 values is exact in double (48 significant bits, exponents
      // far inside double's range), so only the sum is rounded, in Number.
      dot += static_cast<double>(qd) * static_cast<double>(kd);
      dot_abs += std::fabs(static_cast<double>(qd) * static_cast<double>(kd));
      q_abs_max = std::max(q_abs_max, std::fabs(static_cast<double>(qd)));
    }
    Number s = scale * dot;
    const double scale_abs = ToDouble(abs(scale));
    key.parts.dot_abs_scaled = scale_abs * dot_abs;
    key.parts.dot_intermediate_abs =
        std::max({dot_abs, scale_abs * q_abs_max, key.parts.dot_abs_scaled});
    key.parts.raw_abs = std::fabs(ToDouble(s));
    if (p.softcap > 0) {
      const Number cap(p.softcap);
      s = cap * tanh(s / cap);
      key.parts.has_softcap = true;
    }
    key.parts.capped_abs = std::fabs(ToDouble(s));
    if (!p.alibi_slopes.empty()) {
      const Number bias = Number(p.alibi_slopes[h]) * Number(kpos - qpos);
      s += bias;
      key.parts.bias_abs = std::fabs(ToDouble(bias));
      key.parts.has_alibi = true;
    }
    if (has_mask) {
      s += Number(mask_value);
      key.parts.has_mask = true;
    }
    key.parts.final_abs = std::fabs(ToDouble(s));
    key.score = s;
    keys.push_back(std::move(key));
  }
  return keys;
}

void FillRow(ReferenceAttention& out, int64_t base, int64_t head_dim, Expectation expectation,
             double value) {
  for (int64_t d = 0; d < head_dim; ++d) {
    out.expectation[base + d] = expectation;
    out.value[base + d] = value;
    out.bound[base + d] = 0;
    out.magnitude[base + d] = 0;
    out.score_abs[base + d] = 0;
  }
}

template <typename Number>
void ComputeRow(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, const Number& scale,
                const BoundModel& model, double oracle_unit, ReferenceAttention& out) {
  const int64_t base = p.QIndex(b, h, i, 0);
  const int64_t D = p.head_dim;
  std::vector<KeyScore<Number>> keys = ScoreRow(p, b, h, i, scale);
  if (keys.empty()) return FillRow(out, base, D, Expectation::kZero, 0.0);
  bool row_nan = false, all_minus_inf = true, overflow = false;
  Number max_score = -std::numeric_limits<Number>::infinity();
  double max_abs = 0, score_scale = 0;
  for (const KeyScore<Number>& key : keys) {
    if (IsNaN(key.score) || (IsInf(key.score) && key.score > 0)) row_nan = true;
    if (!(IsInf(key.score) && key.score < 0)) all_minus_inf = false;
    if (key.score > max_score) max_score = key.score;
    if (!(key.parts.dot_intermediate_abs < kOverflowGuard) ||
        !(key.parts.final_abs < kOverflowGuard)) {
      overflow = true;
    }
    if (IsFinite(key.score)) {
      max_abs = std::max(max_abs, key.parts.final_abs);
      score_scale = std::max({score_scale, key.parts.final_abs, key.parts.dot_abs_scaled});
    }
  }
  if (row_nan || all_minus_inf) return FillRow(out, base, D, Expectation::kNaN, NAN);

  // Softmax: w_j = exp(t_j - M) (exactly 0 for t_j = -inf; flushed to 0 below the number
  // type's range, see reference_attention.h), p_j = w_j / sum w.
  const size_t n = keys.size();
  std::vector<Number> weight(n);
  std::vector<bool> zero_weight(n);  // exactly zero: decided from the score, not from w_j
  Number weight_sum = 0;
  for (size_t j = 0; j < n; ++j) {
    zero_weight[j] = IsInf(keys[j].score);  // -inf (a +inf score made the row NaN above)
    weight[j] = zero_weight[j] ? Number(0) : exp(keys[j].score - max_score);
    weight_sum += weight[j];
  }
  RowSoftmax softmax;
  softmax.probability.resize(n);
  softmax.score_error.resize(n);
  softmax.gap.resize(n);
  std::vector<Number> probability(n);
  for (size_t j = 0; j < n; ++j) {
    probability[j] = weight[j] / weight_sum;
    softmax.probability[j] = ToDouble(probability[j]);
    // The oracle's own score error (step 6 of ERROR_BOUND.md) joins the kernel's.
    softmax.score_error[j] =
        ScoreErrorBound(keys[j].parts, D, max_abs, model) +
        oracle_unit * static_cast<double>(D + 16) *
            (keys[j].parts.dot_abs_scaled + keys[j].parts.final_abs + keys[j].parts.bias_abs);
    softmax.gap[j] = IsInf(keys[j].score) ? -std::numeric_limits<double>::infinity()
                                          : ToDouble(keys[j].score - max_score);
  }
  const RowBoundTerms terms = ComputeRowBoundTerms(softmax, model);

  const int64_t kv_head = h / (p.num_heads / p.num_kv_heads);
  std::vector<double> column(n);
  for (int64_t d = 0; d < D; ++d) {
    bool nan = false, plus_inf = false, minus_inf = false;
    Number output = 0;
    double unnormalised_abs = 0;  // sum_j w_j |v_j|: the f32 accumulator's magnitude
    double magnitude = 0;         // sum_j p_j |v_j|
    for (size_t j = 0; j < n; ++j) {
      const float vd = p.v[p.KvIndex(b, kv_head, keys[j].slot, d)];
      column[j] = vd;
      if (std::isnan(vd) || (std::isinf(vd) && zero_weight[j])) {
        nan = true;
      } else if (std::isinf(vd)) {
        (vd > 0 ? plus_inf : minus_inf) = true;
      } else {
        output += probability[j] * static_cast<double>(vd);
        unnormalised_abs += ToDouble(weight[j]) * std::fabs(static_cast<double>(vd));
        magnitude += softmax.probability[j] * std::fabs(static_cast<double>(vd));
      }
    }
    const int64_t at = base + d;
    out.magnitude[at] = magnitude;
    out.score_abs[at] = score_scale;
    if (nan || (plus_inf && minus_inf)) {
      out.expectation[at] = Expectation::kNaN;
      out.value[at] = NAN;
    } else if (plus_inf || minus_inf) {
      out.expectation[at] = Expectation::kNonFinite;
      out.value[at] = plus_inf ? INFINITY : -INFINITY;
    } else if (overflow || !(unnormalised_abs < kOverflowGuard)) {
      out.expectation[at] = Expectation::kUnbounded;
      out.value[at] = ToDouble(output);
    } else {
      out.expectation[at] = Expectation::kBounded;
      out.value[at] = ToDouble(output);
      bool from_hull = false;
      out.bound[at] = OutputElementBound(softmax, terms, column, out.value[at], p.output_dtype,
                                         &from_hull);
      // The oracle's own output error and the rounding of its value to double (step 6).
      out.bound[at] += oracle_unit * static_cast<double>(static_cast<int64_t>(n) + D + 16) *
                           magnitude * 1.01 +
                       0x1p-53 * std::fabs(out.value[at]) + 0x1p-1000;
      if (from_hull) ++out.hull_bounded;
    }
    out.bound[at] = out.expectation[at] == Expectation::kBounded ? out.bound[at] : 0.0;
  }
}

template <typename Number>
ReferenceAttention Compute(const AttentionProblem& problem, const BoundModel& model,
                           double oracle_unit) {
  ReferenceAttention out;
  const size_t size = problem.q.size();
  out.value.assign(size, 0.0);
  out.bound.assign(size, 0.0);
  out.magnitude.assign(size, 0.0);
  out.score_abs.assign(size, 0.0);
  out.expectation.assign(size, Expectation::kZero);
  const Number scale = problem.scale.has_value()
                           ? Number(*problem.scale)
                           : Number(1) / sqrt(Number(static_cast<double>(problem.head_dim)));
  if (!problem.checked_rows.empty()) {
    std::fill(out.expectation.begin(), out.expectation.end(), Expectation::kNotChecked);
    for (int64_t row : problem.checked_rows) {
      const int64_t i = row % problem.q_len;
      const int64_t h = row / problem.q_len % problem.num_heads;
      const int64_t b = row / problem.q_len / problem.num_heads;
      ComputeRow(problem, b, h, i, scale, model, oracle_unit, out);
    }
    return out;
  }
  for (int64_t b = 0; b < problem.batch; ++b) {
    for (int64_t h = 0; h < problem.num_heads; ++h) {
      for (int64_t i = 0; i < problem.q_len; ++i) {
        ComputeRow(problem, b, h, i, scale, model, oracle_unit, out);
      }
    }
  }
  return out;
}

}  // namespace

const char* ExpectationName(Expectation expectation) {
  switch (expectation) {
    case Expectation::kBounded:
      return "bounded";
    case Expectation::kZero:
      return "zero";
    case Expectation::kNaN:
      return "nan";
    case Expectation::kNonFinite:
      return "non-finite";
    case Expectation::kUnbounded:
      return "unbounded";
    case Expectation::kNotChecked:
      return "not checked";
  }
  return "unknown";
}

absl::Status ValidateAttentionProblem(const AttentionProblem& p) {
  auto invalid = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("reference attention: ", parts...));
  };
  if (p.batch < 0 || p.num_heads <= 0 || p.num_kv_heads <= 0 || p.q_len < 0 || p.kv_len < 0 ||
      p.head_dim <= 0) {
    return invalid("bad sizes B=", p.batch, " H=", p.num_heads, " KH=", p.num_kv_heads,
                   " Sq=", p.q_len, " Skv=", p.kv_len, " D=", p.head_dim);
  }
  if (p.num_heads % p.num_kv_heads != 0) {
    return invalid("num_heads ", p.num_heads, " is not a multiple of num_kv_heads ",
                   p.num_kv_heads);
  }
  const auto q_size = static_cast<size_t>(p.batch * p.num_heads * p.q_len * p.head_dim);
  const auto kv_size = static_cast<size_t>(p.batch * p.num_kv_heads * p.kv_len * p.head_dim);
  if (p.q.size() != q_size || p.k.size() != kv_size || p.v.size() != kv_size) {
    return invalid("q/k/v sizes ", p.q.size(), "/", p.k.size(), "/", p.v.size(),
                   " do not match the shapes (", q_size, "/", kv_size, "/", kv_size, ")");
  }
  if (!p.alibi_slopes.empty() && static_cast<int64_t>(p.alibi_slopes.size()) != p.num_heads) {
    return invalid(p.alibi_slopes.size(), " ALiBi slopes for ", p.num_heads, " heads");
  }
  if (!(p.softcap >= 0) || p.window < 0) {
    return invalid("softcap ", p.softcap, " or window ", p.window, " is negative");
  }
  if (!p.mask.empty()) {
    const bool batch_ok = p.mask_batch == 1 || p.mask_batch == p.batch;
    const bool heads_ok = p.mask_heads == 1 || p.mask_heads == p.num_heads;
    if (!batch_ok || !heads_ok ||
        p.mask.size() != static_cast<size_t>(p.mask_batch * p.mask_heads * p.q_len * p.kv_len)) {
      return invalid("mask of ", p.mask.size(), " values with batch ", p.mask_batch, " heads ",
                     p.mask_heads, " does not broadcast to (", p.batch, ", ", p.num_heads, ", ",
                     p.q_len, ", ", p.kv_len, ")");
    }
  }
  for (int64_t row : p.checked_rows) {
    if (row < 0 || row >= p.batch * p.num_heads * p.q_len) {
      return invalid("checked row ", row, " is outside [0, B * H * Sq)");
    }
  }
  if ((!p.q_positions.empty() && p.q_positions.size() != static_cast<size_t>(p.batch * p.q_len)) ||
      (!p.kv_positions.empty() &&
       p.kv_positions.size() != static_cast<size_t>(p.batch * p.kv_len))) {
    return invalid("positions must be (B, Sq) and (B, Skv)");
  }
  return absl::OkStatus();
}

namespace {
Oracle default_oracle = Oracle::kDoubleDouble;
}  // namespace

Oracle DefaultOracle() { return default_oracle; }
void SetDefaultOracle(Oracle oracle) { default_oracle = oracle; }

bool ParseOracle(std::string_view text, Oracle* oracle) {
  if (text == "dd" || text == "double-double") {
    *oracle = Oracle::kDoubleDouble;
  } else if (text == "real" || text == "real50") {
    *oracle = Oracle::kReal;
  } else if (text == "real100") {
    *oracle = Oracle::kReal100;
  } else {
    return false;
  }
  return true;
}

const char* OracleName(Oracle oracle) {
  switch (oracle) {
    case Oracle::kDoubleDouble:
      return "double-double";
    case Oracle::kReal:
      return "50-digit Real";
    case Oracle::kReal100:
      return "100-digit Real";
  }
  return "?";
}

double OracleUnit(Oracle oracle) {
  switch (oracle) {
    case Oracle::kDoubleDouble:
      return 0x1p-100;
    case Oracle::kReal:
      return 0x1p-160;
    case Oracle::kReal100:
      return 0x1p-320;
  }
  return 1.0;
}

ReferenceAttention ComputeReferenceAttention(const AttentionProblem& problem,
                                             const BoundModel& model) {
  return ComputeReferenceAttention(problem, model, default_oracle);
}

ReferenceAttention ComputeReferenceAttention(const AttentionProblem& problem,
                                             const BoundModel& model, Oracle oracle) {
  const absl::Status valid = ValidateAttentionProblem(problem);
  KV_CHECK_MSG(valid.ok(), std::string(valid.message()).c_str());
  switch (oracle) {
    case Oracle::kReal:
      return Compute<Real>(problem, model, OracleUnit(oracle));
    case Oracle::kReal100:
      return Compute<boost::multiprecision::cpp_bin_float_100>(problem, model,
                                                               OracleUnit(oracle));
    case Oracle::kDoubleDouble:
      break;
  }
  return Compute<DoubleDouble>(problem, model, OracleUnit(oracle));
}

}  // namespace kvcheck::reference
