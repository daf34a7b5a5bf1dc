#include "properties/generators.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "src/base/split_mix.h"

namespace kvcheck::properties {

rc::Gen<DType> GenDType() { return rc::gen::map(Uniform(0, 3), [](int i) { return kAllDTypes[i]; }); }

rc::Gen<float> GenElement(DType dtype, Values values) {
  rc::Gen<float> small = rc::gen::map(rc::gen::inRange(-8, 9),
                                      [](int v) { return static_cast<float>(v); });
  if (values == Values::kSmallIntegers) return small;
  // Mantissa and exponent chosen separately: covers magnitudes from subnormal to large
  // without drowning in huge values.
  rc::Gen<float> varied = rc::gen::apply(
      [](int mantissa, int exponent, bool negative) {
        const float x = std::ldexp(static_cast<float>(mantissa) / 1024.0f, exponent);
        return negative ? -x : x;
      },
      rc::gen::inRange(1024, 2048), rc::gen::inRange(-20, 12), rc::gen::arbitrary<bool>());
  rc::Gen<float> subnormal = rc::gen::map(rc::gen::inRange(1, 1024), [dtype](int m) {
    // A subnormal of the dtype (f32 subnormals for f32, f16 subnormals for f16, ...).
    const int min_exponent = dtype == DType::kF16 ? -24 : -149;
    return std::ldexp(static_cast<float>(m), min_exponent);
  });
  rc::Gen<float> finite = rc::gen::weightedOneOf<float>(
      {{6, small}, {10, varied}, {1, rc::gen::just(0.0f)}, {1, rc::gen::just(-0.0f)},
       {1, subnormal}});
  rc::Gen<float> chosen = finite;
  if (values == Values::kAny) {
    chosen = rc::gen::weightedOneOf<float>(
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

rc::Gen<std::vector<int64_t>> GenShape(int min_rank, int max_rank, int64_t min_dim,
                                       int64_t max_dim) {
  return rc::gen::mapcat(Uniform(min_rank, max_rank + 1), [=](int rank) {
    rc::Gen<int64_t> dim = Uniform<int64_t>(min_dim, max_dim + 1);
    if (min_dim == 0 && max_dim > 0) {
      dim = rc::gen::weightedOneOf<int64_t>(
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

rc::Gen<LayoutDraw> GenLayoutDraw(int rank) {
  std::vector<int> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  return rc::gen::apply(
      [](std::vector<int> order, std::vector<int64_t> padding, std::vector<int64_t> offset_seed) {
        return LayoutDraw{std::move(order), std::move(padding), std::move(offset_seed)};
      },
      // A permutation from random sort keys; keys shrink to 0, i.e. to the identity order.
      rc::gen::map(rc::gen::container<std::vector<int>>(rank, Uniform(0, 100)),
                   [identity](std::vector<int> keys) {
                     std::vector<int> order = identity;
                     std::stable_sort(order.begin(), order.end(),
                                      [&](int a, int b) { return keys[a] < keys[b]; });
                     return order;
                   }),
      rc::gen::container<std::vector<int64_t>>(rank, Uniform<int64_t>(0, 3)),
      rc::gen::container<std::vector<int64_t>>(rank, Uniform<int64_t>(0, 3)));
}

TensorSpec ApplyLayout(TensorSpec spec, const LayoutDraw& layout) {
  spec.buffer_order = layout.order;
  spec.padding = layout.padding;
  for (size_t d = 0; d < spec.shape.size(); ++d) {
    spec.offset[d] = spec.padding[d] == 0 ? 0 : layout.offset_seed[d] % (spec.padding[d] + 1);
  }
  return spec;
}

rc::Gen<TensorSpec> GenTensorSpec(DType dtype, std::vector<int64_t> shape, Values values,
                                  LayoutKind layout) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  const int rank = static_cast<int>(shape.size());
  rc::Gen<std::vector<float>> gen_values =
      rc::gen::container<std::vector<float>>(count, GenElement(dtype, values));
  if (layout == LayoutKind::kContiguous) {
    return rc::gen::map(gen_values, [dtype, shape](std::vector<float> v) {
      return TensorSpec::Contiguous(dtype, shape, std::move(v));
    });
  }
  return rc::gen::apply(
      [dtype, shape](std::vector<float> v, const LayoutDraw& layout) {
        return ApplyLayout(TensorSpec::Contiguous(dtype, shape, std::move(v)), layout);
      },
      gen_values, GenLayoutDraw(rank));
}

rc::Gen<std::optional<LayoutDraw>> GenOptionalLayout(int rank, int percent) {
  return rc::gen::exec([rank, percent]() -> std::optional<LayoutDraw> {
    if (!Sometimes(percent)) return std::nullopt;
    return *GenLayoutDraw(rank);
  });
}

}  // namespace kvcheck::properties
