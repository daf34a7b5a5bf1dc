#include "properties/kernel_case_patterns.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "properties/kernel_case.h"
#include "src/base/check.h"
#include "src/base/split_mix.h"

namespace kvcheck::properties {
namespace {

using reference::AttentionProblem;
using Tensor = ValueFill::Tensor;

// The flash kernel's key tile (src/attention/flash_problem.h): runs of keys at its edges are
// where tiled code breaks.
constexpr int64_t kTile = 32;

rc::Gen<Fraction> GenFraction() { return Uniform<Fraction>(0, kFractionOne); }

float SpecialValue(int which, DType dtype) {
  return RoundToDType(which == 0 ? NAN : which == 1 ? INFINITY : -INFINITY, dtype);
}

const char* SpecialName(float x) {
  return std::isnan(x) ? "NaN" : x > 0 ? (std::isinf(x) ? "+inf" : "huge") : "-inf";
}

// The rows that see the keys of (b, kv_head) at their newest query: the last query row of
// every head in the group (at most 8 of them).
void FocusOnKey(const AttentionProblem& p, int64_t b, int64_t kv_head, ValuePattern& pattern) {
  const int64_t group = p.num_heads / p.num_kv_heads;
  for (int64_t r = 0; r < std::min<int64_t>(group, 8); ++r) {
    pattern.focus_rows.push_back((b * p.num_heads + kv_head * group + r) * p.q_len + p.q_len - 1);
  }
}

// Keys [begin, end) removed from every one of `rows` mask rows of `kv_len` entries; with
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

// The length of a leading or trailing run of removed keys: one of `edges` (clamped to Skv),
// or a fraction of Skv.
int64_t RunLength(const MaskPlan& plan, const std::vector<int64_t>& edges, int64_t kv_len) {
  if (!plan.run_at_edge) return Pick(plan.run, kv_len + 1);
  return std::min<int64_t>(edges[plan.run_edge % edges.size()], kv_len);
}

// NaN or infinite K or V at a key the mask removes: a row must never multiply a removed key's
// V in, not even by its weight of 0, nor score its K (whose NaN, infinite or overflowing dot
// products must not reach a score either: a removed key's score is -inf whatever q k is).
void ValuesAtARemovedKey(const MaskPlan& plan, const AttentionProblem& p, MaskPattern& mask) {
  if (plan.removed_values == 0 || p.kv_len == 0 || p.head_dim == 0) return;
  ValuePattern& out = mask.removed_keys;
  const float x = SpecialValue(plan.value, p.output_dtype);
  const int64_t group = p.num_heads / p.num_kv_heads;
  const int64_t j = Pick(plan.key, p.kv_len);
  if (plan.removed_values == 1) {
    // Key j of (b, kv_head), removed for every query row of the group that reads it: no row
    // may see it, so any leak shows, wherever a kernel draws its lines.
    const int64_t b = Pick(plan.batch, p.batch), kv_head = Pick(plan.kv_head, p.num_kv_heads);
    for (int64_t h = kv_head * group; h < (kv_head + 1) * group; ++h) {
      for (int64_t i = 0; i < p.q_len; ++i) {
        const int64_t row = ((mask.batch == 1 ? 0 : b) * mask.heads + (mask.heads == 1 ? 0 : h)) *
                            p.q_len + i;
        mask.values[row * p.kv_len + j] = -INFINITY;
      }
    }
    const float fill = plan.keys && plan.huge ? RoundToDType(3e38f, p.output_dtype) : x;
    out.fills.push_back({plan.keys ? Tensor::kK : Tensor::kV, p.KvIndex(b, kv_head, j, 0),
                         p.head_dim, fill});
    FocusOnKey(p, b, kv_head, out);
    out.notes.push_back(absl::StrCat(plan.keys ? "k" : "v", " slot ", j, " of b=", b,
                                     " KV head ", kv_head, " is all ", SpecialName(fill),
                                     ", and the mask removes it for every row"));
    return;
  }
  // One V element at a key that one mask row removes: the rows that keep the key (other heads
  // of a per-head mask) are NaN, as the reference says; the masked row must not be.
  const int64_t rows = mask.batch * mask.heads * p.q_len;
  const int64_t mask_row = Pick(plan.mask_row, rows);
  mask.values[mask_row * p.kv_len + j] = -INFINITY;
  const int64_t mask_head = mask_row / p.q_len % mask.heads;
  const int64_t row_batch = mask_row / p.q_len / mask.heads;
  const int64_t vb = mask.batch == 1 ? Pick(plan.batch, p.batch) : row_batch;
  const int64_t h = mask.heads == 1 ? Pick(plan.kv_head, p.num_kv_heads) * group : mask_head;
  const int64_t d = Pick(plan.element, p.head_dim);
  out.fills.push_back({Tensor::kV, p.KvIndex(vb, h / group, j, d), 1, x});
  FocusOnKey(p, vb, h / group, out);
  out.notes.push_back(absl::StrCat("v slot ", j, " element ", d, " of b=", vb, " KV head ",
                                   h / group, " is ", SpecialName(x), "; mask row ", mask_row,
                                   " removes that key"));
}

}  // namespace

rc::Gen<SpecialsPlan> GenSpecialsPlan() {
  return rc::gen::exec([] {
    SpecialsPlan plan;
    plan.pattern = *Uniform(0, 5);  // the simplest first: a few elements
    plan.value = *Uniform(0, 3);
    plan.huge = Sometimes(30);
    plan.keys = Sometimes(30);
    plan.row = *GenFraction();
    plan.batch = *GenFraction();
    plan.kv_head = *GenFraction();
    plan.tile = *GenFraction();
    plan.slot = *GenFraction();
    if (plan.pattern == 0) {
      plan.elements = *rc::gen::container<std::vector<SpecialsPlan::Element>>(
          *Uniform<size_t>(1, 7), rc::gen::exec([] {
            SpecialsPlan::Element e;
            e.tensor = *Uniform(0, 3);
            e.at = *GenFraction();
            e.value = *Uniform(0, 3);
            return e;
          }));
    }
    return plan;
  });
}

ValuePattern ApplySpecialsPlan(const SpecialsPlan& plan, const AttentionProblem& p) {
  ValuePattern out;
  const float value = SpecialValue(plan.value, p.output_dtype);
  const int64_t b = Pick(plan.batch, p.batch), kv_head = Pick(plan.kv_head, p.num_kv_heads);
  if (plan.pattern == 1 && p.q_len > 0 && p.head_dim > 0) {
    // A whole query row: every score of it is +-inf or NaN.
    const int64_t row = Pick(plan.row, p.batch * p.num_heads * p.q_len);
    out.fills.push_back({Tensor::kQ, row * p.head_dim, p.head_dim, value});
    out.focus_rows.push_back(row);
    out.notes.push_back(absl::StrCat("q row ", row, " (b=", row / p.q_len / p.num_heads,
                                     " h=", row / p.q_len % p.num_heads, " i=", row % p.q_len,
                                     ") is all ", SpecialName(value)));
  } else if ((plan.pattern == 2 || plan.pattern == 3) && p.kv_len > 0 && p.head_dim > 0) {
    // A tile of keys or of values.
    const bool keys = plan.pattern == 2;
    const float fill = keys && plan.huge ? RoundToDType(3e38f, p.output_dtype) : value;
    const int64_t first = Pick(plan.tile, (p.kv_len - 1) / kTile + 1) * kTile;
    const int64_t last = std::min(p.kv_len, first + kTile);
    out.fills.push_back({keys ? Tensor::kK : Tensor::kV, p.KvIndex(b, kv_head, first, 0),
                         (last - first) * p.head_dim, fill});
    FocusOnKey(p, b, kv_head, out);
    out.notes.push_back(absl::StrCat(keys ? "k" : "v", " slots [", first, ", ", last, ") of b=", b,
                                     " KV head ", kv_head, " are all ", SpecialName(fill)));
  } else if (plan.pattern == 4 && p.kv_len > 0 && p.head_dim > 0) {
    // The key or value of one slot that the newest query rows may see and the oldest (with the
    // default causal positions) may not: it must poison the first and never the second, even
    // when both share a tile of keys (0 x NaN in a matrix product).
    // (With one query row no slot is seen by some rows only: then one of the last slot.)
    const int64_t first = std::min(p.kv_len - 1, std::max<int64_t>(0, p.kv_len - p.q_len + 1));
    const int64_t j = first + Pick(plan.slot, p.kv_len - first);
    out.fills.push_back({plan.keys ? Tensor::kK : Tensor::kV, p.KvIndex(b, kv_head, j, 0),
                         p.head_dim, value});
    FocusOnKey(p, b, kv_head, out);
    const int64_t group = p.num_heads / p.num_kv_heads;
    for (int64_t r = 0; r < std::min<int64_t>(group, 8); ++r) {  // the oldest query rows
      out.focus_rows.push_back((b * p.num_heads + kv_head * group + r) * p.q_len);
    }
    out.notes.push_back(absl::StrCat(plan.keys ? "k" : "v", " slot ", j, " of b=", b,
                                     " KV head ", kv_head, " is all ", SpecialName(value)));
  } else {
    // A few elements anywhere.
    const int64_t q_count = p.batch * p.num_heads * p.q_len * p.head_dim;
    const int64_t kv_count = p.batch * p.num_kv_heads * p.kv_len * p.head_dim;
    for (const SpecialsPlan::Element& e : plan.elements) {
      const int64_t count = e.tensor == 0 ? q_count : kv_count;
      if (count == 0) continue;
      const int64_t at = Pick(e.at, count);
      const float x = SpecialValue(e.value, p.output_dtype);
      out.fills.push_back({e.tensor == 0 ? Tensor::kQ : e.tensor == 1 ? Tensor::kK : Tensor::kV,
                           at, 1, x});
      const int64_t row = at / p.head_dim;
      if (e.tensor == 0) {
        out.focus_rows.push_back(row);
      } else {
        FocusOnKey(p, row / p.kv_len / p.num_kv_heads, row / p.kv_len % p.num_kv_heads, out);
      }
      out.notes.push_back(absl::StrCat(e.tensor == 0 ? "q" : e.tensor == 1 ? "k" : "v", " row ",
                                       row, " element ", at % p.head_dim, " is ", SpecialName(x)));
    }
  }
  return out;
}

rc::Gen<MaskPlan> GenMaskPlan() {
  return rc::gen::exec([] {
    MaskPlan plan;
    plan.per_batch = Sometimes(50);
    plan.per_head = Sometimes(50);
    // 0 (random entries) the simplest; 1 (padding) and 5 (the finite "minus infinity" models
    // use) the commonest.
    plan.pattern = *Choice(0, 1, 1, 2, 3, 4, 5, 5, 6);
    plan.noise_seed = *rc::gen::arbitrary<uint64_t>();
    plan.run_at_edge = !Sometimes(50);
    plan.run_edge = *Uniform(0, 10);
    plan.run = *GenFraction();
    plan.padding = Sometimes(50);
    plan.tile = *GenFraction();
    plan.minus_infinity = *Choice(-1e9f, -1e30f, -1e30f);
    plan.row_seed = *rc::gen::arbitrary<uint64_t>();
    plan.removes_nothing = Sometimes(50);
    plan.infinite_entries = *rc::gen::container<std::vector<std::pair<Fraction, bool>>>(
        *Uniform<size_t>(1, 4), rc::gen::pair(GenFraction(), rc::gen::arbitrary<bool>()));
    const bool removed_values = Sometimes(60);
    const int removed_kind = *Choice(2, 1);
    plan.removed_values = removed_values ? removed_kind : 0;
    plan.keys = Sometimes(40);
    plan.huge = Sometimes(30);
    plan.value = *Uniform(0, 3);
    plan.batch = *GenFraction();
    plan.kv_head = *GenFraction();
    plan.key = *GenFraction();
    plan.mask_row = *GenFraction();
    plan.element = *GenFraction();
    plan.layout = *GenOptionalLayout(50);
    return plan;
  });
}

MaskPattern ApplyMaskPlan(const MaskPlan& plan, const AttentionProblem& p) {
  MaskPattern m;
  m.batch = plan.per_batch ? p.batch : 1;
  m.heads = plan.per_head ? p.num_heads : 1;
  const int64_t rows = m.batch * m.heads * p.q_len;
  // Random entries from a seeded stream: 0, -inf or a finite bias.
  const std::vector<float> noise =
      SeededValues(plan.noise_seed, rows * p.kv_len, 1.0f, DType::kF32);
  m.values.resize(rows * p.kv_len);
  for (size_t e = 0; e < noise.size(); ++e) {
    const int pick = static_cast<int>(std::fabs(noise[e]) * 1024.0f) % 9;
    m.values[e] = pick <= 3 ? 0.0f : pick <= 5 ? -INFINITY : pick == 6 ? -1.5f
                                                 : pick == 7 ? 0.75f : -40.0f;
  }
  std::vector<std::string>& notes = m.removed_keys.notes;
  switch (plan.pattern) {
    case 1: {  // leading keys removed for every row: whole tiles, and one more or less; with
               // padding the rest finite, as a left-padded row of a batch (kernels may take
               // keys with finite mask values on a faster path than removed ones)
      const int64_t leading = RunLength(plan, {kTile - 1, kTile, kTile + 1, 2 * kTile,
                                               2 * kTile + 1, p.kv_len - 1, p.kv_len, 1, 2, 3},
                                        p.kv_len);
      RemoveKeyRun(m.values, rows, p.kv_len, 0, leading, plan.padding);
      notes.push_back(absl::StrCat("mask removes keys [0, ", leading, ") of every row",
                                   plan.padding ? " and none after" : ""));
      break;
    }
    case 6: {  // trailing keys removed for every row (a right-padded row of a batch): the last
               // key alone, a tile's worth and one more or less. A removed run at the end of a
               // tile's key range is where a scan for removed keys that stops one short lets a
               // removed key's V in.
      const int64_t trailing = RunLength(
          plan, {1, 2, 3, 5, 7, kTile - 1, kTile, kTile + 1, p.kv_len - 1, p.kv_len}, p.kv_len);
      RemoveKeyRun(m.values, rows, p.kv_len, p.kv_len - trailing, p.kv_len, plan.padding);
      notes.push_back(absl::StrCat("mask removes keys [", p.kv_len - trailing, ", ", p.kv_len,
                                   ") of every row", plan.padding ? " and none before" : ""));
      break;
    }
    case 2: {  // every other mask row removes every key
      for (int64_t r = 0; r < rows; r += 2) {
        std::fill_n(m.values.begin() + r * p.kv_len, p.kv_len, -INFINITY);
      }
      notes.push_back("mask removes every key of every other row (rows with no key)");
      break;
    }
    case 3: {  // only one tile allowed
      const int64_t first = Pick(plan.tile, std::max<int64_t>(1, (p.kv_len + kTile - 1) / kTile)) *
                            kTile;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < p.kv_len; ++j) {
          if (j < first || j >= first + kTile) m.values[r * p.kv_len + j] = -INFINITY;
        }
      }
      notes.push_back(absl::StrCat("mask allows only keys [", first, ", ", first + kTile, ")"));
      break;
    }
    case 5: {  // a finite "minus infinity", as many models build their masks (-1e9, or a huge
               // one like finfo.min, here -1e30 to stay inside the checked range): whole rows
               // of it (a seeded choice per row), and it where the random mask has -inf
      uint64_t state = plan.row_seed;
      for (int64_t r = 0; r < rows; ++r) {
        const bool whole_row = (SplitMix64(state) & 1) != 0;
        for (int64_t j = 0; j < p.kv_len; ++j) {
          float& entry = m.values[r * p.kv_len + j];
          if (whole_row || entry == -INFINITY) entry = plan.minus_infinity;
        }
      }
      notes.push_back(absl::StrCat("mask uses ", plan.minus_infinity,
                                   " for removed keys, and whole rows of it"));
      break;
    }
    case 4: {  // a few +inf or NaN entries, sometimes in a mask that removes no key
      if (plan.removes_nothing) {
        for (float& entry : m.values) entry = entry == -INFINITY ? 0.0f : entry;
        notes.push_back("mask removes no key");
      }
      for (const auto& [fraction, nan] : plan.infinite_entries) {
        if (m.values.empty()) break;
        const int64_t at = Pick(fraction, static_cast<int64_t>(m.values.size()));
        m.values[at] = nan ? NAN : INFINITY;
        notes.push_back(absl::StrCat("mask entry ", at, " is ", SpecialName(m.values[at])));
      }
      break;
    }
    default:
      break;
  }
  ValuesAtARemovedKey(plan, p, m);
  return m;
}

void ApplyValuePattern(const ValuePattern& pattern, AttentionProblem& p) {
  for (const ValueFill& fill : pattern.fills) {
    std::vector<float>& values =
        fill.tensor == Tensor::kQ ? p.q : fill.tensor == Tensor::kK ? p.k : p.v;
    KV_CHECK_MSG(fill.at >= 0 && fill.count >= 0 &&
                     fill.at + fill.count <= static_cast<int64_t>(values.size()),
                 "a special-value fill past the end of its tensor");
    std::fill_n(values.begin() + fill.at, fill.count, fill.value);
  }
}

}  // namespace kvcheck::properties
