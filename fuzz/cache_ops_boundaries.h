// File: cache_ops_boundaries.h
// The boundary values of the cache property generators (properties/cache_machine_property.cc:
// head sizes, batch rows, KV heads, initial capacities and windows of the state machine;
// properties/cache_properties.cc and properties/storage_budget_property.cc: the initial
// capacity 64 of the growth law, the window 40 and the head size 33 of the storage budget;
// the paged cache's 16-token blocks), in one place: the cache_ops fuzzer draws from them
// (cache_ops_run.cc) and its seed corpus must cover every one (cache_ops_seeds.cc,
// corpus_seeds_test.cc).
#ifndef KVCHECK_FUZZ_CACHE_OPS_BOUNDARIES_H_
#define KVCHECK_FUZZ_CACHE_OPS_BOUNDARIES_H_

#include <cstdint>

namespace kvcheck::fuzz {

// The byte value of an ordinary choice's draw that picks a boundary value instead. The
// ordinary choices take the byte modulo their count, as the target did before it drew
// boundary values, so an input keeps its meaning unless such a byte is this value. 0 and 255
// are the bytes campaigns' corpora hold most (libFuzzer inserts runs of them); 185 is one
// the merged cache_ops corpus hardly held.
inline constexpr int64_t kBoundaryByte = 185;

// Head sizes: the generators' (1 to 8, 16, 31, 64, 80, 128, 160), the SIMD widths 8 and 16
// (f32 lanes of AVX2 and AVX-512) and 32, 64 and 128 with one either side.
inline constexpr int64_t kCacheHeadDims[] = {1,  2,  3,  4,  5,  7,  8,  9,   15,  16,  17,
                                             31, 32, 33, 63, 64, 65, 80, 127, 128, 129, 160};
// The head sizes of an ordinary input (the fuzzer's first choices, kept so that the corpus
// keeps its meaning); the others come with a boundary draw.
inline constexpr int64_t kCacheSmallHeadDims[] = {1, 2, 3, 5, 8};
// Batch rows and KV heads of a boundary draw (an ordinary input has 1 or 2 of each).
inline constexpr int64_t kCacheBatches[] = {1, 2, 3, 4};
inline constexpr int64_t kCacheKvHeads[] = {1, 2, 3, 4, 5, 6, 7, 8};
// Initial capacities and windows: an ordinary input's, then those past them that a
// boundary draw adds.
inline constexpr int64_t kCacheSmallCapacities[] = {0, 1, 2, 3, 4, 8, 16};
inline constexpr int64_t kCacheLargeCapacities[] = {64};
inline constexpr int64_t kCacheSmallWindows[] = {1, 2, 3, 4, 5, 8, 13};
inline constexpr int64_t kCacheLargeWindows[] = {40};
// The paged cache's block (src/cache/paged_cache.h, PagedCache::kBlockTokens): rows whose
// length lands one before, on and one past a multiple of it are boundary classes.
inline constexpr int64_t kPagedBlockTokens = 16;

// Cost bounds. A boundary draw's B * KH * D stays within kMaxTokenElements (the generators'
// bound: the head size is halved, while past 8, until it does); a branch holds at most
// kMaxBranchElements elements of K (as many of V), and at most kMaxTokensPerBranch tokens,
// but never fewer than kMinTokensPerBranch (a window of 40 and one past it): an append past
// them resets the branch instead. Ordinary inputs (B * KH * D <= 32) get 256 tokens.
inline constexpr int64_t kMaxTokenElements = 1024;
inline constexpr int64_t kMaxBranchElements = 8192;
inline constexpr int64_t kMaxTokensPerBranch = 256;
inline constexpr int64_t kMinTokensPerBranch = 48;

}  // namespace kvcheck::fuzz

#endif  // KVCHECK_FUZZ_CACHE_OPS_BOUNDARIES_H_
