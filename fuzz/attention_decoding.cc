#include "fuzz/attention_decoding.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/attention_boundaries.h"
#include "properties/tensor_spec.h"

namespace kvcheck::fuzz {
namespace {

using properties::KernelCase;
using properties::TensorSpec;
using reference::AttentionProblem;

// A strided layout for `values` of `shape`: one of the 24 buffer orders, padded or not.
TensorSpec Strided(Draws& in, std::string_view what, DType dtype, std::vector<int64_t> shape,
                   std::vector<float> values) {
  TensorSpec spec = TensorSpec::Contiguous(dtype, std::move(shape), std::move(values));
  const int64_t layout = in.Int(what, 0, 255);
  if (layout & 1) {
    std::vector<int>& order = spec.buffer_order;
    for (int n = (layout >> 1) % 24; n > 0; --n) std::next_permutation(order.begin(), order.end());
  }
  if (layout & 0x40) {
    for (int d = 0; d < 4; ++d) {
      spec.padding[d] = static_cast<int>(1 + (layout >> 7));
      spec.offset[d] = static_cast<int>((d + layout) % 2);
    }
  }
  return spec;
}

// Special values put into q, k or v: each exactly representable in `dtype` once rounded.
void InsertSpecials(Draws& in, AttentionProblem& p, std::string& described) {
  const float specials[] = {
      NAN,    INFINITY, -INFINITY, 1e-40f /* f32 subnormal */, 6e-8f /* f16 subnormal */, 65504.0f,
      -3e38f, 0.0f,     -0.0f};
  const int64_t count = in.Int("specials", 0, 3);
  for (int64_t n = 0; n < count; ++n) {
    const int64_t which = in.Int("special tensor", 0, 2);
    std::vector<float>& values = which == 0 ? p.q : which == 1 ? p.k : p.v;
    if (values.empty()) continue;
    const int64_t at = in.Int("special at", 0, static_cast<int64_t>(values.size()) - 1);
    values[at] = RoundToDType(in.Pick("special value", specials), p.output_dtype);
    absl::StrAppend(&described, " ", std::string(1, "qkv"[which]), "[", at, "]=", values[at]);
  }
}

// An additive mask: each element from a seeded stream (0, a removed key, or a finite bias),
// removed keys holding -inf or one of the finite stand-ins models use, and whole rows of one
// of them (a padded query row, a row of a batch with no key; rows r with bit r % 8 set).
std::vector<float> DecodeMask(Draws& in, const AttentionProblem& p) {
  std::vector<float> removed_values = {-INFINITY};
  removed_values.insert(removed_values.end(), std::begin(kMaskSentinels), std::end(kMaskSentinels));
  const auto removed_value = [&](std::string_view what) {
    return removed_values[in.Int(what, 0, static_cast<int64_t>(removed_values.size()) - 1)];
  };
  const int64_t rows = p.mask_batch * p.mask_heads * p.q_len;
  // Two bits of each seeded value pick one of five entries.
  const std::vector<float> noise = properties::SeededValues(
      static_cast<uint32_t>(in.Int("mask seed", 0, std::numeric_limits<uint32_t>::max())),
      rows * p.kv_len, 1.0f, DType::kF32);
  const float removed = removed_value("mask removed key value");
  std::vector<float> mask;
  for (float x : noise) {
    const int pick = static_cast<int>(std::fabs(x) * 1024.0f) % 5;
    mask.push_back(pick <= 1 ? 0.0f : pick == 2 ? removed : pick == 3 ? -1.5f : 0.75f);
  }
  const int64_t whole_rows = in.Int("mask whole rows", 0, 255);
  if (whole_rows != 0) {
    const float fill = removed_value("mask whole row value");
    for (int64_t r = 0; r < rows; ++r) {
      if (whole_rows >> (r % 8) & 1) {
        std::fill_n(mask.begin() + r * p.kv_len, p.kv_len, fill);
      }
    }
  }
  return mask;
}

KernelCase DecodeCase(Draws& in, std::string& described) {
  KernelCase c;
  AttentionProblem& p = c.problem;
  p.output_dtype = in.Pick("dtype", kAllDTypes);
  // Sizes: small ones, or one time in 16 a boundary value of the property generators. A case
  // past the small sizes (ten times the kernel work of a typical small one, or more) keeps its
  // other sizes small, and is rare, so that the target keeps its rate on the small ones.
  p.head_dim = in.Int("head_dim kind", 0, 15) == 15
                   ? in.Pick("head_dim", kBoundaryHeadDims)
                   : in.Pick<int64_t>("small head_dim", {1, 2, 3, 4, 5, 8, 16, 33});
  const int64_t kv_len_kind = in.Int("kv_len kind", 0, 15);
  if (kv_len_kind < 8) {
    p.kv_len = in.Pick<int64_t>("small kv_len", {0, 1, 2, 15, 16, 17, 31, 32, 33, 40});
  } else if (kv_len_kind < 15) {
    p.kv_len = in.Int("uniform kv_len", 0, kSmallKvLen);
  } else {
    p.kv_len = in.Pick("kv_len", kBoundaryKvLens);
  }
  if (p.head_dim > kSmallHeadDim) p.kv_len = std::min(p.kv_len, kLargeHeadDimMaxKvLen);
  const bool large = p.head_dim > kSmallHeadDim || p.kv_len > kSmallKvLen;
  p.batch = in.Int("batch", 1, large ? 1 : 2);
  p.num_kv_heads = in.Int("kv heads", 1, large ? 1 : 2);
  p.num_heads = p.num_kv_heads * in.Int("query heads per kv head", 1, large ? 2 : 4);
  p.q_len = in.Bool("prefill") ? in.Int("prefill q_len", 2, large ? 2 : 6) : 1;
  if (in.Bool("scale")) p.scale = in.Pick("scale value", {1.0f, 0.05f, 0.3f, 4.0f});
  if (in.Bool("softcap")) p.softcap = in.Pick("softcap value", {5.0f, 30.0f});
  if (in.Bool("alibi")) {
    for (int64_t h = 0; h < p.num_heads; ++h) {
      p.alibi_slopes.push_back(std::ldexp(1.0f, -static_cast<int>(h % 8 + 1)));
    }
  }
  p.causal = in.Bool("causal");
  if (in.Bool("window")) p.window = in.Int("window size", 1, std::max<int64_t>(16, p.kv_len + 1));
  const bool has_mask = in.Bool("mask");
  const int64_t positions = in.Int("positions", 0, 2);
  c.positions_kind = positions == 0 ? "default" : positions == 1 ? "ring" : "varlen";
  if (positions == 1 && p.kv_len > 0) {
    properties::SetRingPositions(p, p.kv_len + in.Int("ring tokens past kv_len", 0, 50));
  } else if (positions == 2) {
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < p.batch; ++b) lengths.push_back(in.Int("varlen length", 0, p.kv_len));
    properties::SetVarlenPositions(p, lengths);
  }
  const float amplitude = in.Pick("amplitude", {1.0f, 1.0f, 8.0f, 64.0f, 4096.0f});
  const auto seed =
      static_cast<uint32_t>(in.Int("values seed", 0, std::numeric_limits<uint32_t>::max()));
  p.q = properties::SeededValues(seed, p.batch * p.num_heads * p.q_len * p.head_dim, amplitude,
                                 p.output_dtype);
  p.k = properties::SeededValues(seed + 1, p.batch * p.num_kv_heads * p.kv_len * p.head_dim,
                                 amplitude, p.output_dtype);
  p.v = properties::SeededValues(seed + 2, p.batch * p.num_kv_heads * p.kv_len * p.head_dim, 1.0f,
                                 p.output_dtype);
  described = absl::StrCat("amplitude ", amplitude, " seed ", seed);
  InsertSpecials(in, p, described);
  if (has_mask) {
    p.mask_batch = in.Bool("mask per batch row") ? p.batch : 1;
    p.mask_heads = in.Bool("mask per head") ? p.num_heads : 1;
    p.mask = DecodeMask(in, p);
    c.mask = Strided(in, "mask layout", DType::kF32,
                     {p.mask_batch, p.mask_heads, p.q_len, p.kv_len}, p.mask);
  }
  c.q = Strided(in, "q layout", p.output_dtype, {p.batch, p.num_heads, p.q_len, p.head_dim}, p.q);
  c.k = Strided(in, "k layout", p.output_dtype, {p.batch, p.num_kv_heads, p.kv_len, p.head_dim},
                p.k);
  c.v = Strided(in, "v layout", p.output_dtype, {p.batch, p.num_kv_heads, p.kv_len, p.head_dim},
                p.v);
  // One row for the reference, chosen by the input (the exact reference dominates the cost).
  const int64_t rows = p.batch * p.num_heads * p.q_len;
  p.checked_rows = {in.Int("checked row", 0, rows - 1)};
  return c;
}

}  // namespace

AttentionInput DecodeAttentionInput(Draws& in, size_t kernel_count) {
  AttentionInput input;
  input.kernel_case = DecodeCase(in, input.values);
  input.kernel = static_cast<size_t>(in.Int("kernel", 0, static_cast<int64_t>(kernel_count) - 1));
  return input;
}

}  // namespace kvcheck::fuzz
