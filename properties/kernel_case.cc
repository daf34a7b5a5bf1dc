#include "properties/kernel_case.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "properties/attention_generators.h"
#include "properties/generators.h"
#include "properties/kernel_case_patterns.h"
#include "src/base/split_mix.h"
#include "src/base/status_macros.h"

namespace kvcheck::properties {
namespace {

using reference::AttentionProblem;

// Kernel work per case (rows x keys x D) above which the prefill rows are cut down.
constexpr int64_t kWorkBudget = 12'000'000;

// A float in [2^exponent, 2^(exponent + 1)) with `mantissa` (< 2^23) as its 23 stored bits:
// most such values need all nine significant digits to be written exactly.
float FullMantissaFloat(int64_t mantissa, int exponent) {
  return std::ldexp(static_cast<float>((int64_t{1} << 23) + mantissa), exponent - 23);
}

TensorSpec SpecFor(DType dtype, std::vector<int64_t> shape, std::vector<float> values,
                   const std::optional<LayoutDraw>& layout) {
  TensorSpec spec = TensorSpec::Contiguous(dtype, std::move(shape), std::move(values));
  return layout.has_value() ? ApplyLayout(std::move(spec), *layout) : spec;
}

}  // namespace

// Values come from a generated seed and a fast generator rather than one RapidCheck
// generator per element: cases hold up to ~10^6 values, and per-element shrink trees would
// dominate the run. Shrinking still reduces the shapes; the values follow the seed.
std::vector<float> SeededValues(uint64_t seed, int64_t count, float amplitude, DType dtype) {
  std::vector<float> values(count);
  uint64_t state = seed;
  for (float& value : values) {
    const uint64_t z = SplitMix64(state);
    const int grid = static_cast<int>(z % 4097) - 2048;  // [-2, 2] on a 1/1024 grid
    value = RoundToDType(amplitude * static_cast<float>(grid) / 1024.0f, dtype);
  }
  return values;
}

void SetRingPositions(AttentionProblem& p, int64_t appended) {
  const int64_t first = appended - p.kv_len;  // the oldest visible position
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t j = 0; j < p.kv_len; ++j) {
      // Position `first + t` lives in slot (first + t) % kv_len.
      p.kv_positions.push_back(first + ((j - first % p.kv_len) % p.kv_len + p.kv_len) % p.kv_len);
    }
    for (int64_t i = 0; i < p.q_len; ++i) p.q_positions.push_back(appended - p.q_len + i);
  }
}

void SetVarlenPositions(AttentionProblem& p, absl::Span<const int64_t> lengths) {
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t length = lengths[b];
    for (int64_t j = 0; j < p.kv_len; ++j) p.kv_positions.push_back(j < length ? j : -1);
    for (int64_t i = 0; i < p.q_len; ++i) {
      const int64_t qpos = length - p.q_len + i;
      p.q_positions.push_back(qpos >= 0 ? qpos : -1);
    }
  }
}

// Every top-level draw below happens in every case, in the same order, whatever the earlier
// draws gave: RapidCheck shrinks a case one draw at a time in drawing order, redraws every
// draw after the one it shrinks, and never returns to an earlier one. So the features and
// patterns come first, each one draw (a nested rc::gen::exec) that does not depend on the
// sizes and shrinks to "off" or its simplest form on its own (kernel_case_patterns.h); the
// sizes come last, and shrink under the patterns the failure still needs.
rc::Gen<KernelCase> GenKernelCase(int64_t max_kv_len, KernelCaseLimits limits) {
  return rc::gen::exec([max_kv_len, limits] {
    KernelCase c;
    AttentionProblem& p = c.problem;
    std::vector<DType> dtypes;
    for (DType d : kAllDTypes) {
      if ((limits.dtypes >> static_cast<int>(d)) & 1) dtypes.push_back(d);
    }
    RC_PRE(!dtypes.empty());
    const auto has = [&](uint32_t feature) { return (limits.features & feature) != 0; };
    const auto optional = [](bool allowed, int percent) {
      return rc::gen::map(Uniform(0, 100), [=](int x) { return allowed && x >= 100 - percent; });
    };

    // Features and patterns.
    const DType dtype = *ChoiceOf(dtypes);  // shrinks to f32
    p.output_dtype = dtype;
    const bool window = *optional(has(kFeatureWindow), 25);
    const int64_t window_size = *Choice<int64_t>(1, 2, 3, 7, 8, 16, 31, 32, 33, 64, 100);
    // Round parameters, and ones no short decimal writes exactly (a transport that prints
    // them with 6 significant digits, or parses them into a narrower type, changes them):
    // 1/sqrt(D) of another D, a full-mantissa value, the ALiBi paper's 2^(-8 (h + 1) / H).
    const bool scale = *optional(has(kFeatureScale), 20);
    const int scale_kind = *Uniform(0, 3);
    const float round_scale = *Choice(1.0f, 0.05f, 0.3f, 4.0f);
    const int64_t scale_mantissa = *Uniform<int64_t>(0, 1 << 23);
    const int scale_exponent = *Uniform(1, 5);
    const bool softcap = *optional(has(kFeatureSoftcap), 20);
    const bool round_softcap = !Sometimes(50);
    const float softcap_value = *Choice(30.0f, 5.0f, 50.0f, 1.0f);
    const int64_t softcap_mantissa = *Uniform<int64_t>(0, 1 << 23);
    const int softcap_exponent = *Uniform(0, 6);
    const bool alibi = *optional(has(kFeatureAlibi), 20);
    const bool geometric_slopes = Sometimes(50);
    const bool negative_slopes = Sometimes(25);
    const bool slopeless_head = Sometimes(25);
    const Fraction slopeless = *Uniform<Fraction>(0, kFractionOne);
    p.causal = *optional(has(kFeatureCausal), 60);
    const PositionsPlan positions = *rc::gen::exec([allowed = has(kFeaturePositions)] {
      return allowed ? *GenPositionsPlan() : PositionsPlan{};
    });
    // Mostly unit-scale values; sometimes large ones (big scores, f16 dot overflow).
    c.amplitude = *Choice(1.0f, 1.0f, 1.0f, 8.0f, 64.0f);
    const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
    // Every score negative (q >= 0, k <= 0), with large values far below -87: exp of each
    // underflows unless the kernel subtracts the row's true maximum (a running maximum
    // started at 0 or at FLT_MIN, the smallest positive float, instead of -inf).
    const bool all_negative = *optional(c.amplitude > 1.0f, 25);
    // Now and then q, k or v is a broadcast (stride 0) along one dim, as expand() makes (KV
    // heads repeated for GQA, one prompt for every batch row, one key for every slot): its
    // values repeat along it. Not together with the special-value patterns, which it would
    // copy or erase.
    const bool broadcast = Sometimes(20);
    const int broadcast_tensor = *Uniform(0, 3), broadcast_dim = *Uniform(0, 4);
    const std::optional<LayoutDraw> q_layout = *GenOptionalLayout(50);
    const std::optional<LayoutDraw> k_layout = *GenOptionalLayout(50);
    const std::optional<LayoutDraw> v_layout = *GenOptionalLayout(50);
    const std::optional<SpecialsPlan> specials = *rc::gen::exec(
        [percent = broadcast ? 0 : limits.specials_percent]() -> std::optional<SpecialsPlan> {
          if (!Sometimes(percent)) return std::nullopt;
          return *GenSpecialsPlan();
        });
    const std::optional<MaskPlan> mask =
        *rc::gen::exec([allowed = has(kFeatureMask)]() -> std::optional<MaskPlan> {
          if (!allowed || !Sometimes(20)) return std::nullopt;
          return *GenMaskPlan();
        });

    // Sizes.
    p.batch = *Uniform<int64_t>(1, 4);
    p.num_kv_heads = *Uniform<int64_t>(1, 4);
    // Query heads per KV head: small ratios (non-powers of two among them), and now and then
    // around the flash kernel's 48-row block.
    int64_t group = *rc::gen::exec([gqa = has(kFeatureGqa)] {
      const bool large = Sometimes(8);
      const int64_t block = *Choice<int64_t>(16, 47, 48, 49);
      const int64_t small = *Uniform<int64_t>(1, 9);
      return !gqa ? int64_t{1} : large ? block : small;
    });
    if (limits.max_rows > 0) {
      p.batch = std::min(p.batch, limits.max_rows);
      p.num_kv_heads = std::min(p.num_kv_heads, std::max<int64_t>(1, limits.max_rows / p.batch));
      group = std::min(group, std::max<int64_t>(1, limits.max_rows / (p.batch * p.num_kv_heads)));
    }
    p.num_heads = p.num_kv_heads * group;
    p.head_dim = *Choice<int64_t>(1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 80,
                                  96, 127, 128, 129, 255, 256);
    // Decode (Sq = 1) unless prefill is drawn; prefill rows around the 16- and 32-row tiles
    // (the Metal tiled kernel's BK and BQ) and the flash kernel's 48-row block.
    p.q_len = *rc::gen::exec([q_lens = limits.q_lens] {
      if (!q_lens.empty()) return *ChoiceOf(q_lens);
      const bool prefill = Sometimes(60);
      const int64_t rows = *GenLengthNear({2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 49}, 2, 70);
      return prefill ? rows : int64_t{1};
    });
    // Keys: tile multiples and +-1, the 512-key split threshold, and W - 1, W, W + 1. The
    // uniform draw stays below 320 keys (the reference's cost); the edges up to max_kv_len are
    // kept, so that 511, 512, 513 and 600 (the key split) are reached.
    std::vector<int64_t> edges = {0,   1,   2,   31,  32,  33,  63,  64,  65,  95,  96,
                                  97,  127, 128, 129, 255, 256, 257, 511, 512, 513, 600};
    if (window) edges.insert(edges.end(), {window_size - 1, window_size, window_size + 1});
    p.kv_len = *rc::gen::exec([edges, max_kv_len, kv_lens = limits.kv_lens] {
      if (!kv_lens.empty()) return *ChoiceOf(kv_lens);
      return *GenLengthNear(edges, 0, std::min<int64_t>(max_kv_len, 320), max_kv_len);
    });
    // Prefill rows cut down so that one case's kernel work stays bounded.
    const int64_t per_row = p.batch * p.num_heads * std::max<int64_t>(1, p.kv_len) * p.head_dim;
    p.q_len = std::max<int64_t>(1, std::min(p.q_len, kWorkBudget / per_row));

    // The case from its draws.
    if (window) p.window = window_size;
    if (scale) {
      p.scale = scale_kind == 0   ? round_scale
                : scale_kind == 1 ? static_cast<float>(
                                        1.0 / std::sqrt(static_cast<double>(p.head_dim + 3)))
                                  : FullMantissaFloat(scale_mantissa, -scale_exponent);
    }
    if (softcap) {
      p.softcap = round_softcap ? softcap_value
                                : FullMantissaFloat(softcap_mantissa, softcap_exponent);
    }
    if (alibi) {
      for (int64_t h = 0; h < p.num_heads; ++h) {
        const float slope =
            geometric_slopes ? static_cast<float>(std::exp2(-8.0 * static_cast<double>(h + 1) /
                                                            static_cast<double>(p.num_heads)))
                             : std::ldexp(1.0f, -static_cast<int>(h % 8 + 1));
        // Slopes of either sign (a bias that grows with distance), and a head without one.
        p.alibi_slopes.push_back(negative_slopes ? -slope : slope);
      }
      if (slopeless_head) p.alibi_slopes[Pick(slopeless, p.num_heads)] = 0.0f;
    }
    ApplyPositionsPlan(positions, p);
    c.positions_kind = p.q_positions.empty() && p.kv_positions.empty() ? "default"
                                                                      : positions.kind;
    if (positions.kind == "ring" && positions.ring_window && has(kFeatureWindow) &&
        p.kv_len > 0) {
      p.window = p.kv_len;  // the ring's own window
    }
    const std::vector<int64_t> q_shape = {p.batch, p.num_heads, p.q_len, p.head_dim};
    const std::vector<int64_t> kv_shape = {p.batch, p.num_kv_heads, p.kv_len, p.head_dim};
    const int64_t q_count = p.batch * p.num_heads * p.q_len * p.head_dim;
    const int64_t kv_count = p.batch * p.num_kv_heads * p.kv_len * p.head_dim;
    p.q = SeededValues(seed, q_count, c.amplitude, dtype);
    p.k = SeededValues(seed + 1, kv_count, c.amplitude, dtype);
    p.v = SeededValues(seed + 2, kv_count, 1.0f, dtype);
    if (all_negative) {
      for (float& x : p.q) x = std::fabs(x);
      for (float& x : p.k) x = -std::fabs(x);
      c.notes.push_back("every score is negative (q >= 0, k <= 0)");
    }
    const auto apply = [&c](const ValuePattern& pattern) {
      ApplyValuePattern(pattern, c.problem);
      c.focus_rows.insert(c.focus_rows.end(), pattern.focus_rows.begin(),
                          pattern.focus_rows.end());
      c.notes.insert(c.notes.end(), pattern.notes.begin(), pattern.notes.end());
    };
    if (specials.has_value()) apply(ApplySpecialsPlan(*specials, p));
    if (mask.has_value()) {
      const MaskPattern m = ApplyMaskPlan(*mask, p);
      p.mask_batch = m.batch;
      p.mask_heads = m.heads;
      p.mask = m.values;
      apply(m.removed_keys);
      c.mask = SpecFor(DType::kF32, {p.mask_batch, p.mask_heads, p.q_len, p.kv_len}, p.mask,
                       mask->layout);
    }
    c.q = SpecFor(dtype, q_shape, p.q, q_layout);
    c.k = SpecFor(dtype, kv_shape, p.k, k_layout);
    c.v = SpecFor(dtype, kv_shape, p.v, v_layout);
    if (broadcast) {
      TensorSpec& spec = broadcast_tensor == 0 ? c.q : broadcast_tensor == 1 ? c.k : c.v;
      RepeatAlong(spec, broadcast_dim);
      (broadcast_tensor == 0 ? p.q : broadcast_tensor == 1 ? p.k : p.v) = spec.values;
      c.notes.push_back(absl::StrCat(broadcast_tensor == 0 ? "q" : broadcast_tensor == 1 ? "k" : "v",
                                     " read with stride 0 along dimension ", broadcast_dim));
    }
    return c;
  });
}

absl::StatusOr<KernelInputs> MakeKernelInputs(const KernelCase& c) {
  KernelInputs in;
  KV_ASSIGN_OR_RETURN(in.q, Materialize(c.q));
  KV_ASSIGN_OR_RETURN(in.k, Materialize(c.k));
  KV_ASSIGN_OR_RETURN(in.v, Materialize(c.v));
  const AttentionProblem& p = c.problem;
  in.params.scale = p.scale;
  in.params.softcap = p.softcap;
  in.params.alibi_slopes = p.alibi_slopes;
  in.params.causal = p.causal;
  in.params.window = p.window;
  in.params.q_positions = p.q_positions;
  in.params.kv_positions = p.kv_positions;
  if (c.mask.has_value()) {
    KV_ASSIGN_OR_RETURN(Tensor mask, Materialize(*c.mask));
    in.params.mask = mask;
  }
  return in;
}

void SampleCheckedRows(KernelCase& c, int64_t budget) {
  AttentionProblem& p = c.problem;
  const int64_t rows = p.batch * p.num_heads * p.q_len;
  const int64_t per_row = std::max<int64_t>(1, p.kv_len * (p.head_dim + 40));
  if (rows * per_row <= budget) return;
  const int64_t keep = std::max<int64_t>(1, budget / per_row);
  std::vector<int64_t> chosen = {rows - 1};  // the last query row of the last head
  chosen.insert(chosen.end(), c.focus_rows.begin(), c.focus_rows.end());
  // One labelled draw, not a bare number per row in the counterexample.
  const int64_t more = std::max<int64_t>(0, keep - static_cast<int64_t>(chosen.size()));
  const std::vector<int64_t> sampled =
      (*Label("rows checked besides the last and the ones the patterns aim at",
              rc::gen::container<std::vector<int64_t>>(more, Uniform<int64_t>(0, rows))))
          .value;
  chosen.insert(chosen.end(), sampled.begin(), sampled.end());
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  p.checked_rows = chosen;
}

std::string DescribeRow(const AttentionProblem& p, int64_t row, std::optional<float> actual) {
  constexpr int64_t kShownDims = 16, kShownKeys = 8;
  const int64_t i = row % p.q_len, h = row / p.q_len % p.num_heads;
  const int64_t b = row / p.q_len / p.num_heads;
  const int64_t kv_head = h / (p.num_heads / p.num_kv_heads);
  auto vector = [&](const std::vector<float>& values, int64_t at) {
    std::string text = "[";
    for (int64_t d = 0; d < std::min(p.head_dim, kShownDims); ++d) {
      absl::StrAppend(&text, d > 0 ? "," : "", values[at + d]);
    }
    return absl::StrCat(text, p.head_dim > kShownDims ? ",...]" : "]");
  };
  const int64_t qpos = p.QPosition(b, i);
  std::string text = absl::StrCat("the diverging row: b=", b, " h=", h, " (KV head ", kv_head,
                                  ") i=", i, " at position ", qpos, "\n    q=",
                                  vector(p.q, p.QIndex(b, h, i, 0)));
  std::vector<int64_t> allowed;
  std::vector<std::string> special;
  for (int64_t d = 0; d < p.head_dim; ++d) {
    const float x = p.q[p.QIndex(b, h, i, d)];
    if (!std::isfinite(x)) special.push_back(absl::StrCat("q[", d, "]=", x));
  }
  const int64_t mask_row = p.mask.empty() ? 0 : p.MaskIndex(b, h, i, 0);
  for (int64_t j = 0; j < p.kv_len; ++j) {
    const int64_t kpos = p.KvPosition(b, j);
    const float mask = p.mask.empty() ? 0.0f : p.mask[mask_row + j];
    const bool ok = qpos >= 0 && kpos >= 0 && (!p.causal || kpos <= qpos) &&
                    (p.window <= 0 || qpos - kpos < p.window) && mask != -INFINITY;
    if (!ok) continue;
    allowed.push_back(j);
    if (!std::isfinite(mask)) special.push_back(absl::StrCat("mask slot ", j, "=", mask));
    for (int64_t d = 0; d < p.head_dim; ++d) {
      const float k = p.k[p.KvIndex(b, kv_head, j, d)], v = p.v[p.KvIndex(b, kv_head, j, d)];
      if (!std::isfinite(k)) special.push_back(absl::StrCat("k slot ", j, "[", d, "]=", k));
      if (!std::isfinite(v)) special.push_back(absl::StrCat("v slot ", j, "[", d, "]=", v));
    }
  }
  absl::StrAppend(&text, "\n    ", allowed.size(), " allowed keys");
  if (special.size() > 8) special.resize(8), special.push_back("...");
  if (!special.empty()) {
    absl::StrAppend(&text, "; non-finite inputs among them: ", absl::StrJoin(special, ", "));
  } else if (actual.has_value() && std::isnan(*actual)) {
    absl::StrAppend(&text, "\n    the output is NaN, but no input this row reads is NaN or "
                           "infinite: the kernel read memory outside an input's view (kvcheck "
                           "puts NaN around every input and in its padding)");
  }
  for (size_t n = 0; n < allowed.size(); ++n) {
    if (n == kShownKeys / 2 && allowed.size() > kShownKeys) {
      absl::StrAppend(&text, "\n    ... ", allowed.size() - kShownKeys, " more keys ...");
      n = allowed.size() - kShownKeys / 2;
    }
    const int64_t j = allowed[n];
    absl::StrAppend(&text, "\n    slot ", j, " (position ", p.KvPosition(b, j), "): k=",
                    vector(p.k, p.KvIndex(b, kv_head, j, 0)), " v=",
                    vector(p.v, p.KvIndex(b, kv_head, j, 0)));
    if (!p.mask.empty()) absl::StrAppend(&text, " mask ", p.mask[mask_row + j]);
  }
  return text;
}

void showValue(const KernelCase& c, std::ostream& os) {
  const AttentionProblem& p = c.problem;
  os << DTypeName(p.output_dtype) << ", batch B=" << p.batch << ", query heads H=" << p.num_heads
     << ", KV heads KH=" << p.num_kv_heads << ", query rows Sq=" << p.q_len
     << ", keys Skv=" << p.kv_len << ", head dim D=" << p.head_dim << ", positions "
     << c.positions_kind;
  if (p.causal) os << ", causal";
  if (p.window > 0) os << ", window W=" << p.window;
  // Nine significant digits: every f32 reads back exactly.
  const auto exact = [](float x) { return absl::StrFormat("%.9g", x); };
  if (p.scale) os << ", scale " << exact(*p.scale);
  if (p.softcap > 0) os << ", softcap " << exact(p.softcap);
  if (!p.alibi_slopes.empty()) {
    os << ", ALiBi slopes ["
       << absl::StrJoin(p.alibi_slopes, ",",
                        [&](std::string* out, float x) { out->append(exact(x)); })
       << "]";
  }
  if (!p.mask.empty()) os << ", mask (" << p.mask_batch << ", " << p.mask_heads << ", Sq, Skv)";
  os << ", value amplitude " << c.amplitude;
  if (!p.q_positions.empty()) os << "\n  query positions [" << absl::StrJoin(p.q_positions, ",") << "]";
  if (!p.kv_positions.empty()) os << "\n  key positions [" << absl::StrJoin(p.kv_positions, ",") << "]";
  for (const std::string& note : c.notes) os << "\n  " << note;
  // Every input's layout: a kernel that mishandles a strided V passes on a strided K.
  std::vector<std::string> strided;
  for (const auto& [name, spec] : {std::pair<const char*, const TensorSpec*>{"q", &c.q},
                                   {"k", &c.k}, {"v", &c.v}}) {
    const std::string layout = DescribeLayout(*spec);
    if (layout != "contiguous") strided.push_back(absl::StrCat(name, " ", layout));
  }
  if (c.mask.has_value() && DescribeLayout(*c.mask) != "contiguous") {
    strided.push_back(absl::StrCat("mask ", DescribeLayout(*c.mask)));
  }
  os << "\n  layouts: " << (strided.empty() ? "all contiguous" : absl::StrJoin(strided, "; "));
  if (p.q.size() + p.k.size() <= 64) {
    os << "\n  q=[" << absl::StrJoin(p.q, ",") << "]\n  k=[" << absl::StrJoin(p.k, ",")
       << "]\n  v=[" << absl::StrJoin(p.v, ",") << "]";
    if (!p.mask.empty()) os << "\n  mask=[" << absl::StrJoin(p.mask, ",") << "]";
  }
}

}  // namespace kvcheck::properties
