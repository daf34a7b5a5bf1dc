#include "properties/kernel_case.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_join.h"
#include "properties/attention_generators.h"
#include "properties/generators.h"
#include "src/base/split_mix.h"
#include "src/base/status_macros.h"

namespace kvcheck::properties {
namespace {

using reference::AttentionProblem;

TensorSpec SpecFor(DType dtype, std::vector<int64_t> shape, std::vector<float> values,
                   bool strided) {
  if (!strided) return TensorSpec::Contiguous(dtype, std::move(shape), std::move(values));
  TensorSpec spec = *GenTensorSpec(dtype, shape, Values::kFinite, LayoutKind::kAny);
  spec.values = std::move(values);
  return spec;
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

rc::Gen<KernelCase> GenKernelCase(int64_t max_kv_len) {
  return rc::gen::exec([max_kv_len] {
    KernelCase c;
    AttentionProblem& p = c.problem;
    const DType dtype = *GenDType();
    p.output_dtype = dtype;
    p.batch = *Uniform<int64_t>(1, 4);
    p.num_kv_heads = *Uniform<int64_t>(1, 4);
    p.num_heads = p.num_kv_heads * *Uniform<int64_t>(1, 9);
    p.head_dim = *rc::gen::element<int64_t>(1, 2, 3, 4, 5, 6, 7, 8, 16, 31, 32, 33, 64, 80, 96,
                                            128, 256);
    p.q_len = *Uniform(0, 5) < 2 ? 1 : *Uniform<int64_t>(2, 71);
    const std::vector<int64_t> edges = {0,  1,  7,   8,   9,   15,  16,  17,  31,  32, 33,
                                        63, 64, 65,  127, 128, 129, 255, 256, 257, 300};
    p.kv_len = std::min(max_kv_len, *Uniform(0, 2) == 0 ? *rc::gen::elementOf(edges)
                                                        : *Uniform<int64_t>(0, max_kv_len + 1));
    if (*Uniform(0, 5) == 0) p.scale = *rc::gen::element(1.0f, 0.05f, 0.3f);
    if (*Uniform(0, 5) == 0) p.softcap = *rc::gen::element(5.0f, 30.0f, 50.0f);
    if (*Uniform(0, 5) == 0) {
      for (int64_t h = 0; h < p.num_heads; ++h) {
        p.alibi_slopes.push_back(std::ldexp(1.0f, -static_cast<int>(h % 8 + 1)));
      }
    }
    p.causal = *Uniform(0, 5) < 3;
    if (*Uniform(0, 5) == 0) p.window = *Uniform<int64_t>(1, 65);
    // Positions: default (queries are the newest keys), a ring cache's slot order, or varlen
    // rows padded with empty slots (-1).
    const int kind = *Uniform(0, 10);
    c.positions_kind = kind < 5 ? "default" : kind < 7 ? "ring" : "varlen";
    if (c.positions_kind == "ring" && p.kv_len > 0) {
      SetRingPositions(p, p.kv_len + *Uniform<int64_t>(0, 50));  // tokens appended so far
      if (*Uniform(0, 2) == 0) p.window = p.kv_len;
    } else if (c.positions_kind == "varlen") {
      std::vector<int64_t> lengths;
      for (int64_t b = 0; b < p.batch; ++b) lengths.push_back(*Uniform<int64_t>(0, p.kv_len + 1));
      SetVarlenPositions(p, lengths);
    }
    const std::vector<int64_t> q_shape = {p.batch, p.num_heads, p.q_len, p.head_dim};
    const std::vector<int64_t> kv_shape = {p.batch, p.num_kv_heads, p.kv_len, p.head_dim};
    const int64_t q_count = p.batch * p.num_heads * p.q_len * p.head_dim;
    const int64_t kv_count = p.batch * p.num_kv_heads * p.kv_len * p.head_dim;
    // Mostly unit-scale values; sometimes large ones (big scores, f16 dot overflow).
    const float amplitude = *rc::gen::element(1.0f, 1.0f, 1.0f, 8.0f, 64.0f);
    const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
    p.q = SeededValues(seed, q_count, amplitude, dtype);
    p.k = SeededValues(seed + 1, kv_count, amplitude, dtype);
    p.v = SeededValues(seed + 2, kv_count, 1.0f, dtype);
    if (*Uniform(0, 20) == 0) {  // special values somewhere
      for (std::vector<float>* values : {&p.q, &p.k, &p.v}) {
        if (values->empty() || *Uniform(0, 2) == 0) continue;
        (*values)[*Uniform<size_t>(0, values->size())] =
            *rc::gen::element(NAN, INFINITY, -INFINITY);
      }
    }
    if (*Uniform(0, 5) == 0) {
      p.mask_batch = *rc::gen::element<int64_t>(1, p.batch);
      p.mask_heads = *rc::gen::element<int64_t>(1, p.num_heads);
      p.mask = *rc::gen::container<std::vector<float>>(
          p.mask_batch * p.mask_heads * p.q_len * p.kv_len,
          rc::gen::weightedOneOf<float>({{4, rc::gen::just(0.0f)},
                                         {2, rc::gen::just(-INFINITY)},
                                         {1, rc::gen::element(-1.5f, 0.75f, -40.0f)}}));
      c.mask = SpecFor(DType::kF32, {p.mask_batch, p.mask_heads, p.q_len, p.kv_len}, p.mask,
                       *Uniform(0, 2) == 0);
    }
    c.q = SpecFor(dtype, q_shape, p.q, *Uniform(0, 2) == 0);
    c.k = SpecFor(dtype, kv_shape, p.k, *Uniform(0, 2) == 0);
    c.v = SpecFor(dtype, kv_shape, p.v, *Uniform(0, 2) == 0);
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
  for (int64_t n = 1; n < keep; ++n) chosen.push_back(*rc::gen::inRange<int64_t>(0, rows));
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  p.checked_rows = chosen;
}

void showValue(const KernelCase& c, std::ostream& os) {
  os << "positions " << c.positions_kind << ", " << DTypeName(c.problem.output_dtype) << ": ";
  reference::showValue(c.problem, os);
  os << "\n  layouts: q order [" << absl::StrJoin(c.q.buffer_order, ",") << "] k order ["
     << absl::StrJoin(c.k.buffer_order, ",") << "] v order ["
     << absl::StrJoin(c.v.buffer_order, ",") << "]";
}

}  // namespace kvcheck::properties
