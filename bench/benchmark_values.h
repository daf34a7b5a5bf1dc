// File: benchmark_values.h
// The attention benchmark's input values, in a header of their own so that a peer harness
// (bench/peers/ggml_attention_peer.cc, compiled outside Bazel against another library) times
// exactly the same numbers: same (count, seed), same floats, by construction. Header-only and
// free of kvcheck types for that reason.
#ifndef KVCHECK_BENCH_BENCHMARK_VALUES_H_
#define KVCHECK_BENCH_BENCHMARK_VALUES_H_

#include <cstdint>
#include <vector>

namespace kvcheck::bench {

// `count` values in [0, 2), multiples of 0.001, from a linear congruential generator
// (Numerical Recipes' constants) started from `seed`. Row-major: a (B, H, S, D) tensor's
// element (b, h, s, d) is value [((b * H + h) * S + s) * D + d].
inline std::vector<float> BenchmarkValues(int64_t count, uint32_t seed) {
  std::vector<float> values(count);
  uint32_t x = seed * 2654435761u + 1;
  for (float& value : values) {
    x = x * 1664525u + 1013904223u;
    value = static_cast<float>(static_cast<int32_t>(x >> 8) % 2000) / 1000.0f;
  }
  return values;
}

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_BENCHMARK_VALUES_H_
