#include "properties/attention_generators.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_join.h"
#include "properties/generators.h"

namespace kvcheck::properties {
namespace {

using reference::AttentionProblem;

const char* const kFamilies[] = {"random",        "gap_near_80", "cancellation",
                                 "long_row",      "near_ties",   "huge_scores",
                                 "subnormal",     "half_precision", "extreme_scores",
                                 "tiny_cancellation"};
constexpr int kNumFamilies = sizeof(kFamilies) / sizeof(kFamilies[0]);

std::vector<float> Values(int64_t count, rc::Gen<float> gen) {
  return *rc::gen::container<std::vector<float>>(count, gen);
}

// Sizes, GQA layout, and the optional features (softcap, ALiBi, causal, window, mask,
// explicit positions) on top of which each family fills in its values.
AttentionProblem GenShapeAndFeatures(int64_t max_kv_len, bool features) {
  AttentionProblem p;
  p.batch = *Uniform<int64_t>(1, 3);
  p.num_kv_heads = *Uniform<int64_t>(1, 3);
  p.num_heads = p.num_kv_heads * *Choice<int64_t>(1, 2, 3);
  p.head_dim = *Choice<int64_t>(1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64);
  p.q_len = *Uniform<int64_t>(1, 4);
  p.kv_len = *Uniform<int64_t>(0, max_kv_len + 1);
  if (Sometimes(25)) p.scale = *Choice(1.0f, 0.125f, 0.3f);
  if (!features) return p;
  if (Sometimes(25)) p.softcap = *Choice(1.0f, 5.0f, 30.0f, 50.0f);
  if (Sometimes(25)) {
    for (int64_t h = 0; h < p.num_heads; ++h) {
      p.alibi_slopes.push_back(std::ldexp(1.0f, -static_cast<int>(h + 1)));
    }
  }
  p.causal = Sometimes(50);
  if (Sometimes(25)) p.window = *Uniform<int64_t>(1, 8);
  if (Sometimes(25)) {
    p.mask_batch = *Choice<int64_t>(1, p.batch);
    p.mask_heads = *Choice<int64_t>(1, p.num_heads);
    p.mask = Values(p.mask_batch * p.mask_heads * p.q_len * p.kv_len,
                    WeightedOneOf<float>({{3, rc::gen::just(0.0f)},
                                          {1, rc::gen::just(-INFINITY)},
                                          {2, Choice(-1.0f, 0.5f, -3.25f)}}));
  }
  return p;
}

void FillQkv(AttentionProblem& p, rc::Gen<float> q, rc::Gen<float> k, rc::Gen<float> v) {
  p.q = Values(p.batch * p.num_heads * p.q_len * p.head_dim, q);
  p.k = Values(p.batch * p.num_kv_heads * p.kv_len * p.head_dim, k);
  p.v = Values(p.batch * p.num_kv_heads * p.kv_len * p.head_dim, v);
}

rc::Gen<float> Normalish(float scale) {
  return rc::gen::map(NearZero(-4096, 4096),
                      [scale](int x) { return scale * static_cast<float>(x) / 1024.0f; });
}

AttentionProblem Generate(int family) {
  switch (family) {
    case 1: {  // gap_near_80: score gaps straddle the f32 exp underflow region
      AttentionProblem p = GenShapeAndFeatures(40, false);
      p.head_dim = 1;
      p.scale = 1.0f;
      FillQkv(p, rc::gen::just(1.0f), Normalish(1.0f), Normalish(1.0f));
      for (float& k : p.k) {
        k = *Choice(0.0f, -70.0f, -79.5f, -80.0f, -86.0f, -88.5f, -103.0f, -104.5f) +
            k / 64.0f;
      }
      return p;
    }
    case 2: {  // cancellation: large v of both signs, nearly equal weights
      AttentionProblem p = GenShapeAndFeatures(64, true);
      FillQkv(p, Normalish(0.01f), Normalish(0.01f),
              rc::gen::map(rc::gen::arbitrary<bool>(),
                           [](bool b) { return b ? 16384.0f : -16384.0f; }));
      for (float& v : p.v) v += *Choice(0.0f, 0.5f, 1.0f / 1024.0f);
      return p;
    }
    case 3: {  // long_row: up to 1500 keys, one query
      AttentionProblem p = GenShapeAndFeatures(0, false);
      p.batch = 1;
      p.num_heads = p.num_kv_heads = 1;
      p.q_len = 1;
      p.head_dim = *Choice<int64_t>(1, 2, 4);
      p.kv_len = *Uniform<int64_t>(200, 1501);
      FillQkv(p, Normalish(1.0f), Normalish(1.0f), Normalish(1.0f));
      return p;
    }
    case 4: {  // near_ties: identical keys up to a few ulps
      AttentionProblem p = GenShapeAndFeatures(64, false);
      FillQkv(p, Normalish(1.0f), rc::gen::just(0.0f), Normalish(1.0f));
      const std::vector<float> base = Values(p.head_dim, Normalish(1.0f));
      for (size_t e = 0; e < p.k.size(); ++e) {
        const float b = base[e % p.head_dim];
        p.k[e] = std::nextafter(b, *Choice(b + 1.0f, b - 1.0f, b));
      }
      return p;
    }
    case 5: {  // huge_scores: |s| around 1e4
      AttentionProblem p = GenShapeAndFeatures(48, true);
      p.scale = 1.0f;
      p.head_dim = *Choice<int64_t>(1, 2, 4, 8);
      FillQkv(p, Normalish(32.0f), Normalish(32.0f), Normalish(1.0f));
      return p;
    }
    case 6: {  // subnormal: tiny q, k and v (subnormal products and outputs)
      AttentionProblem p = GenShapeAndFeatures(32, false);
      const rc::Gen<float> tiny = rc::gen::map(NearZero(-1000, 1000), [](int m) {
        return std::ldexp(static_cast<float>(m), -140);
      });
      FillQkv(p, tiny, tiny, tiny);
      return p;
    }
    case 7: {  // half_precision: inputs and output in f16 or bf16
      AttentionProblem p = GenShapeAndFeatures(64, true);
      p.output_dtype = *Choice(DType::kF16, DType::kBF16);
      FillQkv(p, Normalish(1.0f), Normalish(1.0f), Normalish(4.0f));
      for (std::vector<float>* values : {&p.q, &p.k, &p.v}) {
        for (float& x : *values) x = RoundToDType(x, p.output_dtype);
      }
      return p;
    }
    case 8: {  // extreme_scores: |s| up to ~2^40, gaps far past any exp range
      AttentionProblem p = GenShapeAndFeatures(16, false);
      p.scale = 1.0f;
      p.head_dim = *Choice<int64_t>(1, 2, 4);
      const rc::Gen<float> huge = rc::gen::map(
          rc::gen::pair(NearZero(-1024, 1024), Uniform(0, 21)),
          [](std::pair<int, int> me) { return std::ldexp(static_cast<float>(me.first), me.second); });
      FillQkv(p, huge, huge, Normalish(4.0f));
      return p;
    }
    case 9: {  // tiny_cancellation: scores of ~2^-298, v of both signs: tiny exact outputs
      AttentionProblem p = GenShapeAndFeatures(4, false);
      p.head_dim = 1;
      p.scale = 1.0f;
      const rc::Gen<float> tiny = Choice(0.0f, 0x1p-149f, -0x1p-149f, 0x1p-140f, 1.0f);
      FillQkv(p, tiny, tiny, Choice(1.0f, -1.0f, 0.5f));
      return p;
    }
    default: {  // random
      AttentionProblem p = GenShapeAndFeatures(64, true);
      FillQkv(p, GenElement(DType::kF32, Values::kFinite), GenElement(DType::kF32, Values::kFinite),
              GenElement(DType::kF32, Values::kFinite));
      return p;
    }
  }
}

}  // namespace

rc::Gen<LabeledProblem> GenAdversarialProblem() {
  return rc::gen::exec([] {
    const int family = *Uniform(0, kNumFamilies);
    return LabeledProblem{kFamilies[family], Generate(family)};
  });
}

void showValue(const LabeledProblem& labeled, std::ostream& os) {
  os << "family " << labeled.family << ": ";
  reference::showValue(labeled.problem, os);
}

}  // namespace kvcheck::properties

namespace kvcheck::reference {

void showValue(const AttentionProblem& p, std::ostream& os) {
  os << "B=" << p.batch << " H=" << p.num_heads << " KH=" << p.num_kv_heads << " Sq=" << p.q_len
     << " Skv=" << p.kv_len << " D=" << p.head_dim;
  if (p.scale) os << " scale=" << *p.scale;
  if (p.softcap > 0) os << " softcap=" << p.softcap;
  if (!p.alibi_slopes.empty()) os << " alibi=[" << absl::StrJoin(p.alibi_slopes, ",") << "]";
  if (p.causal) os << " causal";
  if (p.window > 0) os << " window=" << p.window;
  if (!p.mask.empty()) os << " mask(" << p.mask_batch << "," << p.mask_heads << ")";
  os << " out=" << DTypeName(p.output_dtype);
  if (!p.q_positions.empty()) os << " qpos=[" << absl::StrJoin(p.q_positions, ",") << "]";
  if (!p.kv_positions.empty()) os << " kpos=[" << absl::StrJoin(p.kv_positions, ",") << "]";
  if (p.q.size() + p.k.size() <= 64) {
    os << "\n  q=[" << absl::StrJoin(p.q, ",") << "]\n  k=[" << absl::StrJoin(p.k, ",")
       << "]\n  v=[" << absl::StrJoin(p.v, ",") << "]";
    if (!p.mask.empty()) os << "\n  mask=[" << absl::StrJoin(p.mask, ",") << "]";
  }
}

}  // namespace kvcheck::reference
