// TransposeKeys (vector squares and element-by-element rest) on every SIMD target Highway
// compiled and this CPU runs, and TransposeKeysScalar: for every run length 0..kMaxRunKeys,
// head dims around every lane count and square size, rows at unaligned, unordered and
// repeated addresses, and several output strides, every element lands at
// out[d * stride + t] bit for bit and nothing else in the output changes.
#include "src/attention/transpose_keys.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/base/simd_targets_for_test.h"
#include "src/base/split_mix.h"

namespace kvcheck::flash_internal {
namespace {

constexpr uint32_t kUntouched = 0x7fc0beefu;  // a NaN payload no input element has

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

using TransposeFn = void (*)(const float* const*, int64_t, int64_t, float*, int64_t);

// Runs `transpose` on `count` rows of `head_dim` (drawn from `state`) into an output of
// stride `stride`, and checks every element of the output (the first three wrong ones are
// reported).
void CheckTranspose(TransposeFn transpose, const std::string& what, int64_t count,
                    int64_t head_dim, int64_t stride, bool repeat_rows, uint64_t& state) {
  // One pool of values; rows start at odd offsets into it (no alignment), in a shuffled
  // order, and with repeat_rows some rows are the same row.
  std::vector<float> pool((kMaxRunKeys + 1) * (head_dim + 3));
  for (float& v : pool) {
    const uint32_t u = static_cast<uint32_t>(SplitMix64(state) >> 40);  // 24 bits
    v = static_cast<float>(u) - 8388608.0f;  // distinct-enough integers, both signs
  }
  std::vector<const float*> rows(kMaxRunKeys);
  for (int64_t t = 0; t < count; ++t) {
    const int64_t slot = repeat_rows ? static_cast<int64_t>(SplitMix64(state) % 3)
                                     : (t * 7 + 3) % (kMaxRunKeys + 1);
    rows[t] = pool.data() + slot * (head_dim + 3) + 1 + (t % 3);
  }
  const int64_t padded_rows = head_dim + 2;
  std::vector<uint32_t> out(padded_rows * stride + 8, kUntouched);
  float* out_first = reinterpret_cast<float*>(out.data()) + stride + 1;  // row -1 stays free
  transpose(rows.data(), count, head_dim, out_first, stride);
  int failures = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    const int64_t rel = i - (stride + 1);
    const int64_t d = rel >= 0 ? rel / stride : -1;
    const int64_t t = rel >= 0 ? rel % stride : -1;
    const bool written = rel >= 0 && d < head_dim && t < count;
    const uint32_t want = written ? Bits(rows[t][d]) : kUntouched;
    if (out[i] != want && ++failures <= 3) {
      ADD_FAILURE() << what << ": count " << count << ", head_dim " << head_dim << ", stride "
                    << stride << (repeat_rows ? ", repeated rows" : "") << ": output element "
                    << i << " (d " << d << ", t " << t << ") is 0x" << std::hex << out[i]
                    << ", expected 0x" << want;
    }
  }
}

void CheckAllShapes(TransposeFn transpose, const std::string& what) {
  uint64_t state = 20261203;
  for (int64_t count = 0; count <= kMaxRunKeys; ++count) {
    for (int64_t head_dim : std::initializer_list<int64_t>{1, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 20, 31, 32, 33, 48, 64, 65,
                             80, 96, 128, 130}) {
      for (int64_t stride : {kMaxRunKeys, kMaxRunKeys + 5, int64_t{64 + 16}}) {
        CheckTranspose(transpose, what, count, head_dim, stride, false, state);
      }
      CheckTranspose(transpose, what, count, head_dim, kMaxRunKeys + 1, true, state);
    }
  }
}

TEST(TransposeKeysTest, EveryElementInPlaceOnEverySimdTarget) {
  ForEachSimdTarget([](const char* target) {
    CheckAllShapes(&TransposeKeys, std::string("TransposeKeys on ") + target);
  });
}

TEST(TransposeKeysTest, ScalarReferenceEveryElementInPlace) {
  CheckAllShapes(&TransposeKeysScalar, "TransposeKeysScalar");
}

}  // namespace
}  // namespace kvcheck::flash_internal
