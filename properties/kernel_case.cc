#include "properties/kernel_case.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "properties/attention_generators.h"
#include "properties/generators.h"
#include "src/base/split_mix.h"
#include "src/base/status_macros.h"

namespace kvcheck::properties {
namespace {

using reference::AttentionProblem;

// The flash kernel's key tile and row block (src/attention/flash_problem.h); other kernels
// have their own, but lengths around these multiples are where tiled code breaks.
constexpr int64_t kTile = 32;
// Kernel work per case (rows x keys x D) above which the prefill rows are cut down.
constexpr int64_t kWorkBudget = 12'000'000;

// A length: one of `edges` (ascending, so it shrinks to the smallest) or, half the time,
// uniform in [lo, hi].
int64_t LengthNear(std::vector<int64_t> edges, int64_t lo, int64_t hi) {
  edges.erase(std::remove_if(edges.begin(), edges.end(),
                             [&](int64_t e) { return e < lo || e > hi; }),
              edges.end());
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  if (edges.empty() || Sometimes(50)) return *Uniform<int64_t>(lo, hi + 1);
  return *rc::gen::elementOf(edges);
}

// A float in [2^exponent, 2^(exponent + 1)) with `mantissa` (< 2^23) as its 23 stored bits:
// most such values need all nine significant digits to be written exactly.
float FullMantissaFloat(int64_t mantissa, int exponent) {
  return std::ldexp(static_cast<float>((int64_t{1} << 23) + mantissa), exponent - 23);
}

TensorSpec SpecFor(DType dtype, std::vector<int64_t> shape, std::vector<float> values,
                   bool strided) {
  TensorSpec spec = TensorSpec::Contiguous(dtype, std::move(shape), std::move(values));
  return strided ? *GenLayoutFor(std::move(spec)) : spec;
}

const char* SpecialName(float x) {
  return std::isnan(x) ? "NaN" : x > 0 ? (std::isinf(x) ? "+inf" : "huge") : "-inf";
}

// The rows that see the keys of (b, kv_head) at their newest query: the last query row of
// every head in the group (at most 8 of them).
void FocusOnKey(KernelCase& c, int64_t b, int64_t kv_head) {
  const AttentionProblem& p = c.problem;
  const int64_t group = p.num_heads / p.num_kv_heads;
  for (int64_t r = 0; r < std::min<int64_t>(group, 8); ++r) {
    c.focus_rows.push_back((b * p.num_heads + kv_head * group + r) * p.q_len + p.q_len - 1);
  }
}

// Special-value patterns: several elements, a whole query row, a whole tile of keys or values,
// or the key or value of one slot that the newest query rows may see and the oldest (with the
// default causal positions) may not: it must poison the first and never the second, even
// when both share a tile of keys (0 x NaN in a matrix product).
void InsertSpecials(KernelCase& c) {
  AttentionProblem& p = c.problem;
  const int pattern = *rc::gen::element(0, 1, 2, 3, 4);
  const float value = RoundToDType(*rc::gen::element(NAN, INFINITY, -INFINITY), p.output_dtype);
  if (pattern == 1 && p.q_len > 0) {  // a whole query row: every score of it is +-inf or NaN
    const int64_t row = *Uniform<int64_t>(0, p.batch * p.num_heads * p.q_len);
    std::fill_n(p.q.begin() + row * p.head_dim, p.head_dim, value);
    c.focus_rows.push_back(row);
    c.notes.push_back(absl::StrCat("q row ", row, " (b=", row / p.q_len / p.num_heads,
                                   " h=", row / p.q_len % p.num_heads, " i=", row % p.q_len,
                                   ") is all ", SpecialName(value)));
    return;
  }
  if ((pattern == 2 || pattern == 3) && p.kv_len > 0) {  // a tile of keys or of values
    const bool keys = pattern == 2;
    const float fill = keys && Sometimes(30) ? RoundToDType(3e38f, p.output_dtype) : value;
    const int64_t b = *Uniform<int64_t>(0, p.batch);
    const int64_t kv_head = *Uniform<int64_t>(0, p.num_kv_heads);
    const int64_t first = *Uniform<int64_t>(0, (p.kv_len - 1) / kTile + 1) * kTile;
    const int64_t last = std::min(p.kv_len, first + kTile);
    std::vector<float>& target = keys ? p.k : p.v;
    for (int64_t j = first; j < last; ++j) {
      std::fill_n(target.begin() + p.KvIndex(b, kv_head, j, 0), p.head_dim, fill);
    }
    FocusOnKey(c, b, kv_head);
    c.notes.push_back(absl::StrCat(keys ? "k" : "v", " slots [", first, ", ", last, ") of b=", b,
                                   " KV head ", kv_head, " are all ", SpecialName(fill)));
    return;
  }
  if (pattern == 4 && p.kv_len > 0) {
    const bool keys = Sometimes(30);
    const int64_t b = *Uniform<int64_t>(0, p.batch);
    const int64_t kv_head = *Uniform<int64_t>(0, p.num_kv_heads);
    const int64_t j = *Uniform<int64_t>(std::max<int64_t>(0, p.kv_len - p.q_len + 1), p.kv_len);
    std::fill_n((keys ? p.k : p.v).begin() + p.KvIndex(b, kv_head, j, 0), p.head_dim, value);
    FocusOnKey(c, b, kv_head);
    const int64_t group = p.num_heads / p.num_kv_heads;
    for (int64_t r = 0; r < std::min<int64_t>(group, 8); ++r) {  // the oldest query rows
      c.focus_rows.push_back((b * p.num_heads + kv_head * group + r) * p.q_len);
    }
    c.notes.push_back(absl::StrCat(keys ? "k" : "v", " slot ", j, " of b=", b, " KV head ",
                                   kv_head, " is all ", SpecialName(value)));
    return;
  }
  // A few elements anywhere.
  for (int n = *Uniform(1, 7); n > 0; --n) {
    const int which = *Uniform(0, 3);
    std::vector<float>& values = which == 0 ? p.q : which == 1 ? p.k : p.v;
    if (values.empty()) continue;
    const int64_t at = *Uniform<int64_t>(0, static_cast<int64_t>(values.size()));
    const float x = RoundToDType(*rc::gen::element(NAN, INFINITY, -INFINITY), p.output_dtype);
    values[at] = x;
    const int64_t row = at / p.head_dim;
    if (which == 0) {
      c.focus_rows.push_back(row);
    } else {
      FocusOnKey(c, row / p.kv_len / p.num_kv_heads, row / p.kv_len % p.num_kv_heads);
    }
    c.notes.push_back(absl::StrCat(which == 0 ? "q" : which == 1 ? "k" : "v", " row ", row,
                                   " element ", at % p.head_dim, " is ", SpecialName(x)));
  }
}

// Removes keys [begin, end) from every one of `rows` mask rows of `kv_len` entries; with
// `padding`, the other keys' -inf entries become 0 (a padded row of a batch: only the run is
// removed).
void RemoveKeyRun(std::vector<float>& mask, int64_t rows, int64_t kv_len, int64_t begin,
                  int64_t end, bool padding) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = mask.data() + r * kv_len;
    for (int64_t j = 0; j < kv_len; ++j) {
      if (j >= begin && j < end) {
        row[j] = -INFINITY;
      } else if (padding && row[j] == -INFINITY) {
        row[j] = 0.0f;
      }
    }
  }
}

// The additive mask and its pattern.
void GenerateMask(KernelCase& c) {
  AttentionProblem& p = c.problem;
  p.mask_batch = *rc::gen::element<int64_t>(1, p.batch);
  p.mask_heads = *rc::gen::element<int64_t>(1, p.num_heads);
  const int64_t rows = p.mask_batch * p.mask_heads * p.q_len;
  // 1 (padding) and 5 (the finite "minus infinity" models use) the commonest.
  const int pattern = *rc::gen::element(0, 1, 1, 2, 3, 4, 5, 5, 6);
  // Random entries from a seeded stream: 0, -inf or a finite bias (and +inf / NaN when the
  // pattern asks for them).
  const std::vector<float> noise =
      SeededValues(*rc::gen::arbitrary<uint64_t>(), rows * p.kv_len, 1.0f, DType::kF32);
  p.mask.resize(rows * p.kv_len);
  for (size_t e = 0; e < noise.size(); ++e) {
    const int pick = static_cast<int>(std::fabs(noise[e]) * 1024.0f) % 9;
    p.mask[e] = pick <= 3 ? 0.0f : pick <= 5 ? -INFINITY : pick == 6 ? -1.5f : pick == 7 ? 0.75f
                                                                                         : -40.0f;
  }
  switch (pattern) {
    case 1: {  // leading keys removed for every row: whole tiles, and one more or less; half
               // the time the rest finite, as a left-padded row of a batch (kernels may take
               // keys with finite mask values on a faster path than removed ones)
      const int64_t leading = LengthNear({kTile - 1, kTile, kTile + 1, 2 * kTile, 2 * kTile + 1,
                                          p.kv_len - 1, p.kv_len},
                                         0, p.kv_len);
      const bool padding = Sometimes(50);
      RemoveKeyRun(p.mask, rows, p.kv_len, 0, leading, padding);
      c.notes.push_back(absl::StrCat("mask removes keys [0, ", leading, ") of every row",
                                     padding ? " and none after" : ""));
      break;
    }
    case 6: {  // trailing keys removed for every row (a right-padded row of a batch): the
               // last key alone, a tile's worth and one more or less; half the time the rest
               // finite. A removed run at the end of a tile's key range is where a scan for
               // removed keys that stops one short lets a removed key's V in.
      const int64_t trailing =
          LengthNear({1, 2, 3, 5, 7, kTile - 1, kTile, kTile + 1, p.kv_len - 1, p.kv_len}, 0,
                     p.kv_len);
      const bool padding = Sometimes(50);
      RemoveKeyRun(p.mask, rows, p.kv_len, p.kv_len - trailing, p.kv_len, padding);
      c.notes.push_back(absl::StrCat("mask removes keys [", p.kv_len - trailing, ", ", p.kv_len,
                                     ") of every row", padding ? " and none before" : ""));
      break;
    }
    case 2: {  // every other mask row removes every key
      for (int64_t r = 0; r < rows; r += 2) {
        std::fill_n(p.mask.begin() + r * p.kv_len, p.kv_len, -INFINITY);
      }
      c.notes.push_back("mask removes every key of every other row (rows with no key)");
      break;
    }
    case 3: {  // only one tile allowed
      const int64_t first = *Uniform<int64_t>(0, std::max<int64_t>(1, (p.kv_len + kTile - 1) / kTile)) * kTile;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < p.kv_len; ++j) {
          if (j < first || j >= first + kTile) p.mask[r * p.kv_len + j] = -INFINITY;
        }
      }
      c.notes.push_back(absl::StrCat("mask allows only keys [", first, ", ", first + kTile, ")"));
      break;
    }
    case 5: {  // a finite "minus infinity", as many models build their masks (-1e9, or a
               // huge one like finfo.min, here -1e30 to stay inside the checked range): whole
               // rows of it, and it where the random mask has -inf
      const float minus_infinity = *rc::gen::element(-1e9f, -1e30f, -1e30f);
      for (int64_t r = 0; r < rows; ++r) {
        const bool whole_row = Sometimes(50);
        for (int64_t j = 0; j < p.kv_len; ++j) {
          float& entry = p.mask[r * p.kv_len + j];
          if (whole_row || entry == -INFINITY) entry = minus_infinity;
        }
      }
      c.notes.push_back(absl::StrCat("mask uses ", minus_infinity,
                                     " for removed keys, and whole rows of it"));
      break;
    }
    case 4: {  // a few +inf or NaN entries, half the time in a mask that removes no key
      if (Sometimes(50)) {
        for (float& entry : p.mask) entry = entry == -INFINITY ? 0.0f : entry;
        c.notes.push_back("mask removes no key");
      }
      for (int n = *Uniform(1, 4); n > 0 && !p.mask.empty(); --n) {
        const int64_t at = *Uniform<int64_t>(0, static_cast<int64_t>(p.mask.size()));
        p.mask[at] = *rc::gen::element(INFINITY, NAN);
        c.notes.push_back(absl::StrCat("mask entry ", at, " is ", SpecialName(p.mask[at])));
      }
      break;
    }
    default:
      break;
  }
  // Sometimes NaN or infinite V (or K) at keys the mask removes: a row must never multiply a
  // removed key's V in, not even by its weight of 0, nor score its K. Either the whole rows
  // of every key that every query row reading them removes (of one batch row and KV head:
  // no row may see them, so any leak shows, wherever a kernel draws its lines), or one V
  // element at a key some mask row removes (half the time at the edge of a removed run; the
  // rows that keep the key are NaN, as the reference says).
  if (!p.mask.empty() && p.head_dim > 0 && Sometimes(60)) {
    const float x = RoundToDType(*rc::gen::element(NAN, INFINITY, -INFINITY), p.output_dtype);
    const int64_t b = *Uniform<int64_t>(0, p.batch);
    const int64_t kv_head = *Uniform<int64_t>(0, p.num_kv_heads);
    const int64_t group = p.num_heads / p.num_kv_heads;
    std::vector<int64_t> removed_everywhere;
    for (int64_t j = 0; j < p.kv_len; ++j) {
      bool everywhere = true;
      for (int64_t h = kv_head * group; h < (kv_head + 1) * group && everywhere; ++h) {
        for (int64_t i = 0; i < p.q_len && everywhere; ++i) {
          everywhere = p.mask[p.MaskIndex(b, h, i, j)] == -INFINITY;
        }
      }
      if (everywhere) removed_everywhere.push_back(j);
    }
    std::vector<int64_t> removed, edges;  // mask entries
    for (int64_t e = 0; e < static_cast<int64_t>(p.mask.size()); ++e) {
      if (p.mask[e] != -INFINITY) continue;
      removed.push_back(e);
      const int64_t j = e % p.kv_len;
      if ((j > 0 && p.mask[e - 1] != -INFINITY) ||
          (j + 1 < p.kv_len && p.mask[e + 1] != -INFINITY)) {
        edges.push_back(e);
      }
    }
    if (!removed_everywhere.empty() && Sometimes(50)) {
      // V, or K (whose NaN, infinite or overflowing dot products must not reach a score
      // either: a removed key's score is -inf whatever q k is).
      const bool keys = Sometimes(40);
      const float fill = keys && Sometimes(30) ? RoundToDType(3e38f, p.output_dtype) : x;
      for (int64_t j : removed_everywhere) {
        std::fill_n((keys ? p.k : p.v).begin() + p.KvIndex(b, kv_head, j, 0), p.head_dim, fill);
      }
      FocusOnKey(c, b, kv_head);
      c.notes.push_back(absl::StrCat(keys ? "k" : "v", " is all ", SpecialName(fill), " at the ",
                                     removed_everywhere.size(), " keys of b=", b, " KV head ",
                                     kv_head, " that the mask removes for every row"));
    } else if (!removed.empty()) {
      const int64_t e = *rc::gen::elementOf(!edges.empty() && Sometimes(50) ? edges : removed);
      const int64_t mask_row = e / p.kv_len, j = e % p.kv_len;
      const int64_t mask_head = mask_row / p.q_len % p.mask_heads;
      const int64_t mask_batch = mask_row / p.q_len / p.mask_heads;
      const int64_t vb = p.mask_batch == 1 ? b : mask_batch;
      const int64_t h = p.mask_heads == 1 ? kv_head * group : mask_head;
      const int64_t d = *Uniform<int64_t>(0, p.head_dim);
      p.v[p.KvIndex(vb, h / group, j, d)] = x;
      FocusOnKey(c, vb, h / group);
      c.notes.push_back(absl::StrCat("v slot ", j, " element ", d, " of b=", vb, " KV head ",
                                     h / group, " is ", SpecialName(x), " where mask row ",
                                     mask_row, " removes it"));
    }
  }
  c.mask = SpecFor(DType::kF32, {p.mask_batch, p.mask_heads, p.q_len, p.kv_len}, p.mask,
                   Sometimes(50));
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

rc::Gen<KernelCase> GenKernelCase(int64_t max_kv_len, KernelCaseLimits limits) {
  return rc::gen::exec([max_kv_len, limits] {
    KernelCase c;
    AttentionProblem& p = c.problem;
    std::vector<DType> dtypes;
    for (DType d : kAllDTypes) {
      if ((limits.dtypes >> static_cast<int>(d)) & 1) dtypes.push_back(d);
    }
    RC_PRE(!dtypes.empty());
    const DType dtype = dtypes[*Uniform<size_t>(0, dtypes.size())];  // shrinks to f32
    p.output_dtype = dtype;
    p.batch = *Uniform<int64_t>(1, 4);
    p.num_kv_heads = *Uniform<int64_t>(1, 4);
    // Query heads per KV head: small ratios (non-powers of two among them), and now and then
    // around the flash kernel's 48-row block.
    const bool gqa = limits.features & kFeatureGqa;
    int64_t group = !gqa        ? 1
                    : Sometimes(8) ? *rc::gen::element<int64_t>(16, 47, 48, 49)
                                   : *Uniform<int64_t>(1, 9);
    if (limits.max_rows > 0) {
      p.batch = std::min(p.batch, limits.max_rows);
      p.num_kv_heads = std::min(p.num_kv_heads, std::max<int64_t>(1, limits.max_rows / p.batch));
      group = std::min(group, std::max<int64_t>(1, limits.max_rows / (p.batch * p.num_kv_heads)));
    }
    p.num_heads = p.num_kv_heads * group;
    p.head_dim = *rc::gen::element<int64_t>(1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63,
                                            64, 65, 80, 96, 127, 128, 129, 255, 256);
    const auto has = [&](uint32_t feature) { return (limits.features & feature) != 0; };
    if (has(kFeatureWindow) && Sometimes(25)) {
      p.window = *rc::gen::element<int64_t>(1, 2, 3, 7, 8, 16, 31, 32, 33, 64, 100);
    }
    // Decode (Sq = 1) unless prefill is drawn; prefill rows around the 16- and 32-row tiles
    // (the Metal tiled kernel's BK and BQ) and the flash kernel's 48-row block.
    if (!limits.q_lens.empty()) {
      p.q_len = *rc::gen::elementOf(limits.q_lens);
    } else if (Sometimes(60)) {
      p.q_len = LengthNear({2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 49}, 2, 70);
    }
    // Keys: tile multiples and +-1, the 512-key split threshold, and W - 1, W, W + 1.
    std::vector<int64_t> edges = {0,   1,   2,   31,  32,  33,  63,  64,  65,  95,  96,
                                  97,  127, 128, 129, 255, 256, 257, 511, 512, 513, 600};
    if (p.window > 0) edges.insert(edges.end(), {p.window - 1, p.window, p.window + 1});
    // The uniform draw stays below 320 keys (the reference's cost); the edges up to
    // max_kv_len are kept, so that 511, 512, 513 and 600 (the key split) are reached.
    edges.erase(std::remove_if(edges.begin(), edges.end(),
                               [&](int64_t e) { return e > max_kv_len; }),
                edges.end());
    p.kv_len = Sometimes(50) && !edges.empty()
                   ? *rc::gen::elementOf(edges)
                   : *Uniform<int64_t>(0, std::min<int64_t>(max_kv_len, 320) + 1);
    if (!limits.kv_lens.empty()) p.kv_len = *rc::gen::elementOf(limits.kv_lens);
    // Round parameters, and ones no short decimal writes exactly (a transport that prints
    // them with 6 significant digits, or parses them into a narrower type, changes them):
    // 1/sqrt(D) of another D, a full-mantissa value, the ALiBi paper's 2^(-8 (h + 1) / H).
    if (has(kFeatureScale) && Sometimes(20)) {
      switch (*Uniform(0, 3)) {
        case 0:
          p.scale = *rc::gen::element(1.0f, 0.05f, 0.3f, 4.0f);
          break;
        case 1:
          p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.head_dim + 3)));
          break;
        default:
          p.scale = FullMantissaFloat(*Uniform<int64_t>(0, 1 << 23), -*Uniform(1, 5));
      }
    }
    if (has(kFeatureSoftcap) && Sometimes(20)) {
      p.softcap = Sometimes(50) ? *rc::gen::element(30.0f, 5.0f, 50.0f, 1.0f)
                                : FullMantissaFloat(*Uniform<int64_t>(0, 1 << 23), *Uniform(0, 6));
    }
    if (has(kFeatureAlibi) && Sometimes(20)) {
      const bool geometric = Sometimes(50);
      for (int64_t h = 0; h < p.num_heads; ++h) {
        p.alibi_slopes.push_back(
            geometric ? static_cast<float>(std::exp2(-8.0 * static_cast<double>(h + 1) /
                                                     static_cast<double>(p.num_heads)))
                      : std::ldexp(1.0f, -static_cast<int>(h % 8 + 1)));
      }
      // Slopes of either sign (a bias that grows with distance), and a head without one.
      if (Sometimes(25)) {
        for (float& slope : p.alibi_slopes) slope = -slope;
      }
      if (Sometimes(25)) p.alibi_slopes[*Uniform<int64_t>(0, p.num_heads)] = 0.0f;
    }
    p.causal = has(kFeatureCausal) && Sometimes(60);
    // Prefill rows cut down so that one case's kernel work stays bounded.
    const int64_t per_row = p.batch * p.num_heads * std::max<int64_t>(1, p.kv_len) * p.head_dim;
    p.q_len = std::max<int64_t>(1, std::min(p.q_len, kWorkBudget / per_row));
    // Positions: default (queries are the newest keys), a ring cache's slot order, varlen
    // rows padded with empty slots (-1), explicit positions on one side only (the other
    // default): queries a few positions back, or keys a few positions on or back; or both
    // tables from a per-row offset.
    c.positions_kind = "default";
    if (has(kFeaturePositions) && Sometimes(50)) {
      c.positions_kind =
          *rc::gen::element<std::string>("ring", "varlen", "q only", "kv only", "both");
    }
    if (c.positions_kind == "ring" && p.kv_len > 0) {
      // Tokens appended so far: a few past the window, or 2^40 more.
      SetRingPositions(p, p.kv_len + *Uniform<int64_t>(0, 50) + (Sometimes(20) ? int64_t{1} << 40 : 0));
      if (has(kFeatureWindow) && Sometimes(50)) p.window = p.kv_len;  // the ring's own window
    } else if (c.positions_kind == "varlen") {
      std::vector<int64_t> lengths;
      for (int64_t b = 0; b < p.batch; ++b) {
        lengths.push_back(LengthNear({0, 1, p.kv_len - 1, p.kv_len}, 0, p.kv_len));
      }
      SetVarlenPositions(p, lengths);
    } else if (c.positions_kind == "q only") {
      // A few back, or up to 40 ahead of the newest key (a query that sees every key).
      const int64_t back = Sometimes(25) ? -*Uniform<int64_t>(1, 41) : *Uniform<int64_t>(0, 4);
      for (int64_t b = 0; b < p.batch; ++b) {
        for (int64_t i = 0; i < p.q_len; ++i) p.q_positions.push_back(p.kv_len - p.q_len + i - back);
      }
    } else if (c.positions_kind == "kv only") {
      // Keys a few positions on, or back: then the first keys sit at negative positions,
      // empty slots, though numbered consecutively with the rest.
      const int64_t on = *Uniform<int64_t>(-3, 4);
      for (int64_t b = 0; b < p.batch; ++b) {
        for (int64_t j = 0; j < p.kv_len; ++j) p.kv_positions.push_back(j + on);
      }
    } else if (c.positions_kind == "both") {
      // Both tables, as a chunked prefill at an offset passes them: each batch row's keys
      // from its own offset, its queries the newest of them, a few back; sometimes a query
      // is an empty slot (-1), or sits just before the row's first key.
      for (int64_t b = 0; b < p.batch; ++b) {
        // 2^40: positions no float holds exactly, whose differences every rule must take
        // in int64 before any conversion.
        const int64_t offset = *rc::gen::element<int64_t>(0, 1, 7, 1000, int64_t{1} << 40);
        const int64_t back = *Uniform<int64_t>(0, 4);
        for (int64_t j = 0; j < p.kv_len; ++j) p.kv_positions.push_back(offset + j);
        for (int64_t i = 0; i < p.q_len; ++i) {
          p.q_positions.push_back(offset + p.kv_len - p.q_len + i - back);
        }
        if (Sometimes(30)) {
          const int64_t i = *Uniform<int64_t>(0, p.q_len);
          p.q_positions[b * p.q_len + i] = Sometimes(50) ? -1 : offset - 1;
        }
      }
    } else {
      c.positions_kind = "default";
    }
    const std::vector<int64_t> q_shape = {p.batch, p.num_heads, p.q_len, p.head_dim};
    const std::vector<int64_t> kv_shape = {p.batch, p.num_kv_heads, p.kv_len, p.head_dim};
    const int64_t q_count = p.batch * p.num_heads * p.q_len * p.head_dim;
    const int64_t kv_count = p.batch * p.num_kv_heads * p.kv_len * p.head_dim;
    // Mostly unit-scale values; sometimes large ones (big scores, f16 dot overflow).
    c.amplitude = *rc::gen::element(1.0f, 1.0f, 1.0f, 8.0f, 64.0f);
    const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
    p.q = SeededValues(seed, q_count, c.amplitude, dtype);
    p.k = SeededValues(seed + 1, kv_count, c.amplitude, dtype);
    p.v = SeededValues(seed + 2, kv_count, 1.0f, dtype);
    if (c.amplitude > 1.0f && Sometimes(25)) {
      // Every score negative (q >= 0, k <= 0), with large values far below -87: exp of each
      // underflows unless the kernel subtracts the row's true maximum (a running maximum
      // started at 0 or at FLT_MIN, the smallest positive float, instead of -inf).
      for (float& x : p.q) x = std::fabs(x);
      for (float& x : p.k) x = -std::fabs(x);
      c.notes.push_back("every score is negative (q >= 0, k <= 0)");
    }
    // Now and then q, k or v is a broadcast (stride 0) along one dim, as expand() makes (KV
    // heads repeated for GQA, one prompt for every batch row, one key for every slot): its
    // values repeat along it. Not together with the special-value patterns, which it would
    // copy or erase.
    const int broadcast = Sometimes(20) ? *Uniform(0, 3) : -1;
    const int broadcast_dim = broadcast >= 0 ? *Uniform(0, 4) : 0;
    if (broadcast < 0 && Sometimes(limits.specials_percent)) InsertSpecials(c);
    if (has(kFeatureMask) && Sometimes(20)) GenerateMask(c);
    c.q = SpecFor(dtype, q_shape, p.q, Sometimes(50));
    c.k = SpecFor(dtype, kv_shape, p.k, Sometimes(50));
    c.v = SpecFor(dtype, kv_shape, p.v, Sometimes(50));
    if (broadcast >= 0) {
      TensorSpec& spec = broadcast == 0 ? c.q : broadcast == 1 ? c.k : c.v;
      RepeatAlong(spec, broadcast_dim);
      (broadcast == 0 ? p.q : broadcast == 1 ? p.k : p.v) = spec.values;
      c.notes.push_back(absl::StrCat(broadcast == 0 ? "q" : broadcast == 1 ? "k" : "v",
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
  for (int64_t n = static_cast<int64_t>(chosen.size()); n < keep; ++n) {
    chosen.push_back(*Uniform<int64_t>(0, rows));
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  p.checked_rows = chosen;
}

std::string DescribeRow(const AttentionProblem& p, int64_t row) {
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
  os << "\n  layouts: q buffer order [" << absl::StrJoin(c.q.buffer_order, ",") << "] k ["
     << absl::StrJoin(c.k.buffer_order, ",") << "] v [" << absl::StrJoin(c.v.buffer_order, ",")
     << "]";
  if (p.q.size() + p.k.size() <= 64) {
    os << "\n  q=[" << absl::StrJoin(p.q, ",") << "]\n  k=[" << absl::StrJoin(p.k, ",")
       << "]\n  v=[" << absl::StrJoin(p.v, ",") << "]";
    if (!p.mask.empty()) os << "\n  mask=[" << absl::StrJoin(p.mask, ",") << "]";
  }
}

}  // namespace kvcheck::properties
