#include "properties/generators.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>

#include "src/base/split_mix.h"

namespace kvcheck::properties {

rc::Gen<DType> GenDType() { return rc::gen::map(Uniform(0, 3), [](int i) { return kAllDTypes[i]; }); }

rc::Gen<float> GenElement(DType dtype, Values values) {
  rc::Gen<float> small =
      rc::gen::map(NearZero(-8, 8), [](int v) { return static_cast<float>(v); });
  if (values == Values::kSmallIntegers) return small;
  // Mantissa and exponent chosen separately: covers magnitudes from subnormal to large
  // without drowning in huge values.
  rc::Gen<float> varied = rc::gen::apply(
      [](int mantissa, int exponent, bool negative) {
        const float x = std::ldexp(static_cast<float>(mantissa) / 1024.0f, exponent);
        return negative ? -x : x;
      },
      Uniform(1024, 2048), NearZero(-20, 11), rc::gen::arbitrary<bool>());
  rc::Gen<float> subnormal = rc::gen::map(Uniform(1, 1024), [dtype](int m) {
    // A subnormal of the dtype (f32 subnormals for f32, f16 subnormals for f16, ...).
    const int min_exponent = dtype == DType::kF16 ? -24 : -149;
    return std::ldexp(static_cast<float>(m), min_exponent);
  });
  // Simplest first: a counterexample's values shrink to small integers, then to 0.
  rc::Gen<float> finite = WeightedOneOf<float>({{6, small},
                                                {1, rc::gen::just(0.0f)},
                                                {1, rc::gen::just(-0.0f)},
                                                {1, subnormal},
                                                {10, varied}});
  rc::Gen<float> chosen = finite;
  if (values == Values::kAny) {
    chosen = WeightedOneOf<float>(
        {{19, finite},
         {1, rc::gen::just(std::numeric_limits<float>::quiet_NaN())},
         {1, Choice(INFINITY, -INFINITY)}});
  }
  return rc::gen::map(chosen,
                      [dtype](float x) { return RoundToDType(x, dtype); });
}

std::vector<float> SeededElements(uint64_t seed, int64_t count, DType dtype) {
  std::vector<float> values(count);
  uint64_t state = seed;
  for (float& value : values) {
    const uint64_t z = SplitMix64(state);
    const int kind = static_cast<int>(z % 20);
    const bool negative = (z >> 8) & 1;
    float x;
    if (kind == 0) {
      x = 0.0f;
    } else if (kind == 1) {  // a subnormal of the dtype
      x = std::ldexp(static_cast<float>((z >> 9) % 1023 + 1), dtype == DType::kF16 ? -24 : -149);
    } else if (kind < 11) {  // varied magnitudes, 2^-20 .. 2^12
      x = std::ldexp(static_cast<float>((z >> 9) % 1024 + 1024) / 1024.0f,
                     static_cast<int>((z >> 20) % 32) - 20);
    } else {  // small integers
      x = static_cast<float>((z >> 9) % 9);
    }
    value = RoundToDType(negative ? -x : x, dtype);
  }
  return values;
}

rc::Gen<int> NearZero(int lo, int hi) {
  std::vector<int> order;
  for (int v = lo; v <= hi; ++v) order.push_back(v);
  // By magnitude, the positive value first: 0, 1, -1, 2, -2, ...
  std::stable_sort(order.begin(), order.end(), [](int a, int b) {
    return std::abs(a) != std::abs(b) ? std::abs(a) < std::abs(b) : a > b;
  });
  return ChoiceOf(std::move(order));
}

rc::Gen<std::vector<int64_t>> GenShape(int min_rank, int max_rank, int64_t min_dim,
                                       int64_t max_dim) {
  return rc::gen::mapcat(Uniform(min_rank, max_rank + 1), [=](int rank) {
    rc::Gen<int64_t> dim = Uniform<int64_t>(min_dim, max_dim + 1);
    if (min_dim == 0 && max_dim > 0) {
      // 0 first: a dimension the failure does not need shrinks to empty.
      dim = WeightedOneOf<int64_t>(
          {{1, rc::gen::just<int64_t>(0)}, {9, Uniform<int64_t>(1, max_dim + 1)}});
    }
    return rc::gen::container<std::vector<int64_t>>(rank, dim);
  });
}

rc::Gen<int64_t> GenLengthNear(std::vector<int64_t> edges, int64_t lo, int64_t hi,
                               int64_t edge_hi) {
  if (edge_hi < 0) edge_hi = hi;
  edges.erase(std::remove_if(edges.begin(), edges.end(),
                             [&](int64_t e) { return e < lo || e > edge_hi; }),
              edges.end());
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return rc::gen::exec([edges, lo, hi] {
    // The edge first: shrinking goes to the smallest edge, then to the uniform draw's lo.
    const bool uniform = edges.empty() || Sometimes(50);
    return uniform ? *Uniform<int64_t>(lo, hi + 1) : *ChoiceOf(edges);
  });
}

rc::Gen<LayoutDraw> GenLayoutDraw() {
  return rc::gen::exec([] {
    LayoutDraw layout;
    layout.swaps = *rc::gen::container<std::vector<std::pair<int, int>>>(
        *Uniform<size_t>(0, 5), rc::gen::pair(Uniform(0, 3), Uniform(0, 3)));
    layout.pads = *rc::gen::container<std::vector<LayoutPad>>(
        *Uniform<size_t>(0, 4), rc::gen::exec([] {
          return LayoutPad{*Uniform(0, 4), *Uniform<int64_t>(1, 3), *Uniform<int64_t>(0, 3)};
        }));
    return layout;
  });
}

std::vector<int> LayoutOrder(const LayoutDraw& layout, int rank) {
  std::vector<int> order(rank);
  std::iota(order.begin(), order.end(), 0);
  for (const auto& [a, gap] : layout.swaps) {
    if (a + 1 + gap < rank) std::swap(order[a], order[a + 1 + gap]);
  }
  return order;
}

TensorSpec ApplyLayout(TensorSpec spec, const LayoutDraw& layout) {
  const int rank = static_cast<int>(spec.shape.size());
  spec.buffer_order = LayoutOrder(layout, rank);
  for (const LayoutPad& pad : layout.pads) {
    if (pad.dim >= rank) continue;
    spec.padding[pad.dim] = pad.amount;
    spec.offset[pad.dim] = pad.offset_seed % (pad.amount + 1);
  }
  return spec;
}

rc::Gen<std::optional<LayoutDraw>> GenOptionalLayout(int percent) {
  return rc::gen::exec([percent]() -> std::optional<LayoutDraw> {
    if (!Sometimes(percent)) return std::nullopt;
    return *GenLayoutDraw();
  });
}

namespace {

// One value of GenElement's classes, with their weights, from `state`.
float SeededElement(uint64_t& state, DType dtype, Values values) {
  const uint64_t z = SplitMix64(state);
  const uint64_t r = z >> 16;
  float x;
  const int small = static_cast<int>(r % 17) - 8;
  if (values == Values::kSmallIntegers) return static_cast<float>(small);
  if (values == Values::kAny && z % 21 == 0) {
    x = r % 3 == 0 ? NAN : r % 3 == 1 ? INFINITY : -INFINITY;
  } else {
    const int kind = static_cast<int>((z >> 8) % 19);
    const bool negative = r & 1;
    if (kind < 6) {
      x = static_cast<float>(small);
    } else if (kind == 6) {
      x = 0.0f;
    } else if (kind == 7) {
      x = -0.0f;
    } else if (kind == 8) {  // a subnormal of the dtype
      x = std::ldexp(static_cast<float>((r >> 1) % 1023 + 1), dtype == DType::kF16 ? -24 : -149);
    } else {  // varied magnitudes, 2^-20 .. 2^11
      x = std::ldexp(static_cast<float>((r >> 1) % 1024 + 1024) / 1024.0f,
                     static_cast<int>((r >> 11) % 32) - 20);
      if (negative) x = -x;
    }
  }
  return RoundToDType(x, dtype);
}

// Simpler values than `x`, simplest first: 0, then 1 for NaN and +-inf; the integer part; half
// of it; |x|.
rc::Seq<float> SimplerElements(float x, DType dtype) {
  std::vector<float> simpler;
  const auto add = [&](float candidate) {
    candidate = RoundToDType(candidate, dtype);
    const bool same = candidate == x && std::signbit(candidate) == std::signbit(x);
    if (!same && std::find(simpler.begin(), simpler.end(), candidate) == simpler.end()) {
      simpler.push_back(candidate);
    }
  };
  if (std::isnan(x) || std::isinf(x)) {
    add(0.0f);
    add(1.0f);
  } else if (x != 0 || std::signbit(x)) {
    add(0.0f);
    add(std::trunc(x));
    add(std::trunc(x / 2));
    if (x == std::trunc(x)) add(x > 0 ? x - 1 : x + 1);
    add(std::fabs(x));
  }
  return rc::seq::fromContainer(std::move(simpler));
}

}  // namespace

rc::Gen<std::vector<float>> GenElements(DType dtype, Values values, int64_t count) {
  return rc::Gen<std::vector<float>>([dtype, values, count](const rc::Random& random, int) {
    uint64_t state = rc::Random(random).next();
    std::vector<float> drawn(count);
    for (float& x : drawn) x = SeededElement(state, dtype, values);
    return rc::shrinkable::shrinkRecur(std::move(drawn), [dtype](const std::vector<float>& v) {
      return rc::seq::concat(
          rc::shrink::removeChunks(v),
          rc::shrink::eachElement(v, [dtype](float x) { return SimplerElements(x, dtype); }));
    });
  });
}

rc::Gen<TensorPlan> GenTensorPlan(DType dtype, Values values, LayoutKind layout,
                                  int64_t max_count) {
  return rc::gen::exec([dtype, values, layout, max_count] {
    TensorPlan plan;
    plan.dtype = dtype;
    if (layout == LayoutKind::kAny) plan.layout = *GenLayoutDraw();
    plan.values = *GenElements(dtype, values, max_count);
    return plan;
  });
}

TensorSpec SpecFromPlan(const TensorPlan& plan, std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> values(count, 0.0f);
  std::copy_n(plan.values.begin(), std::min<int64_t>(count, plan.values.size()), values.begin());
  TensorSpec spec = TensorSpec::Contiguous(plan.dtype, std::move(shape), std::move(values));
  return plan.layout.has_value() ? ApplyLayout(std::move(spec), *plan.layout) : spec;
}

rc::Gen<TensorSpec> GenTensorSpec(DType dtype, std::vector<int64_t> shape, Values values,
                                  LayoutKind layout) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return rc::gen::map(GenTensorPlan(dtype, values, layout, count),
                      [shape = std::move(shape)](const TensorPlan& plan) {
                        return SpecFromPlan(plan, shape);
                      });
}

}  // namespace kvcheck::properties
