// File: attention_boundaries.h
// The boundary values of the attention property generators (properties/kernel_case.cc: head
// sizes, key counts around the kernels' tiles and the 512-key split; properties/
// kernel_case_patterns.cc: the finite "minus infinity" of mask pattern 5), in one place: the
// attention fuzzer's decoding draws from them (attention_decoding.cc) and its seed corpus
// must cover every one (attention_classes.h, corpus_seeds_test.cc).
#ifndef KVCHECK_FUZZ_ATTENTION_BOUNDARIES_H_
#define KVCHECK_FUZZ_ATTENTION_BOUNDARIES_H_

#include <cstdint>

namespace kvcheck::fuzz {

// Head sizes: tile and vector widths and +-1, the sizes real models use (64, 80, 96, 128,
// 256).
inline constexpr int64_t kBoundaryHeadDims[] = {1,  2,  3,  4,  5,  7,   8,   9,   15,  16,  17,  31,
                                                32, 33, 63, 64, 65, 80, 96, 127, 128, 129, 255, 256};
// Key counts: 32-key tiles and +-1, the 512-key split of the flash kernel and past it.
inline constexpr int64_t kBoundaryKvLens[] = {0,   1,   2,   31,  32,  33,  63,  64,
                                              65,  95,  96,  97,  127, 128, 129, 255,
                                              256, 257, 511, 512, 513, 600};
// Finite stand-ins for -inf that models put in their masks: -1e9, a huge one (-1e30: the
// generators' stand-in for finfo(float32).min, which is past the reference's overflow guard,
// so rows holding it go unchecked), and finfo(float16).min.
inline constexpr float kMaskSentinels[] = {-1e9f, -1e30f, -65504.0f};

// Sizes the common inputs stay within; a case past either keeps its other sizes small (one
// batch row and KV head, at most two query heads and two query rows).
inline constexpr int64_t kSmallHeadDim = 33;
inline constexpr int64_t kSmallKvLen = 40;
// A head size past the small ones takes at most this many keys (one past a 128-key tile): an
// input's K and V stay within 256 x 129 elements each (the fuzz build's cost per input grows
// with them; the key counts past 129 are reached at small head sizes).
inline constexpr int64_t kLargeHeadDimMaxKvLen = 129;

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_ATTENTION_BOUNDARIES_H_
