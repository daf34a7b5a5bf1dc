// File: append_steps.h
// candle 0.11's KV-cache append experiment, shared by the two append benchmarks
// (cache_append_benchmark.cc: each way of appending in its own runs; cache_append_paired_
// benchmark.cc: all of them in turn within each step): a SmolLM2-like stack of 30 layers,
// 3 KV heads, head dim 64, f32, prefilled with 128 positions, then 200 decode steps of one
// token into every layer; and the floor copies, the same bytes copied into the same slots of
// the same strategy's buffers with no bookkeeping.
#ifndef KVCHECK_BENCH_APPEND_STEPS_H_
#define KVCHECK_BENCH_APPEND_STEPS_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "src/cache/registry.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kvcheck::bench {

inline constexpr int64_t kAppendLayers = 30;
inline constexpr int64_t kAppendKvHeads = 3;
inline constexpr int64_t kAppendHeadDim = 64;
inline constexpr int64_t kAppendPrefill = 128;
inline constexpr int64_t kAppendSteps = 200;
// Bytes one decode step writes: K and V, one token, every layer.
inline constexpr int64_t kAppendBytesPerStep =
    kAppendLayers * 2 * kAppendKvHeads * kAppendHeadDim * sizeof(float);

// A (1, KH, seq, D) f32 tensor of one value.
Tensor AppendInput(int64_t seq, float value);

// Reads 64 MiB (twice the last-level cache of the development machine) so that every
// iteration starts from the same, cold cache state, as a decode step does in a model whose
// weights stream through the caches between two appends to a layer.
void EvictCaches();

// A strategy's 30 caches, each prefilled with 128 positions (initial capacity 512; windowed
// strategies with a 4096-token window, so that nothing wraps), and the views the prefill
// returned, appended to `views`.
std::vector<std::unique_ptr<KvCache>> PrefilledLayers(const CacheStrategy& strategy,
                                                      std::vector<CacheView>* views);

// The strategies that append into buffers a view points into; concat's and paged's views
// are new copies (of the whole history), so no copy of one row into "the same slots" exists.
bool WritesInPlace(const CacheStrategy& strategy);

// The two append benchmarks' main: Google Benchmark's flags, the machine's context lines
// (machine_context.h), the setup of one iteration run twice untimed (the first benchmark of
// a process otherwise pays for the process's first use of this much memory, fresh pages from
// the kernel), then the registered benchmarks. Returns the process's exit status.
int RunAppendBenchmarks(int argc, char** argv);

// When a floor copy prefetches the rows the next step writes: not at all, after the step's
// rows are copied, or before.
enum class Prefetch { kNone, kAfterCopy, kBeforeCopy };
// How: for writing into the first-level cache (prefetchw on x86), or for reading into the
// second-level cache (prefetcht1), which is what the caches do (SlotBuffers::PrefetchSlot).
enum class PrefetchTo { kL1ForWriting, kL2 };

// How the rows are stored: through the caches (memcpy), or with non-temporal stores, which
// write whole lines without reading them first (nothing to prefetch) and leave them out of
// the caches.
enum class Store { kCached, kNonTemporal };

struct FloorCopy {
  const char* name;
  Prefetch when;
  PrefetchTo to;
  Store store = Store::kCached;
};

// The six floor copies. A strategy's floor is the fastest of them: a plain memcpy, four that
// also prefetch the next step's rows, after the copy or before it, for writing into the
// first-level cache or for reading into the second, and one with non-temporal stores. A cold
// row's stores otherwise stall the next instructions, so a copy that does not prefetch is not
// a floor for one that does; and which is fastest depends on the layout and the machine. On a
// Zen 4 VM the second-level prefetch halved the copy (2.4-3.5 against 5.0-5.2 us per step
// with prefetchw). Non-temporal stores were the fastest copy for ring and scattered (their
// 4096-slot buffers) in one of two paired runs (6.31 against 6.80 us, and 6.27 against 6.51),
// and 8-27% slower than the fastest in the other; for prealloc 27-41% slower.
inline constexpr FloorCopy kFloorCopies[] = {
    {"memcpy", Prefetch::kNone, PrefetchTo::kL2},
    {"copy_then_prefetchw", Prefetch::kAfterCopy, PrefetchTo::kL1ForWriting},
    {"prefetchw_then_copy", Prefetch::kBeforeCopy, PrefetchTo::kL1ForWriting},
    {"copy_then_prefetch_l2", Prefetch::kAfterCopy, PrefetchTo::kL2},
    {"prefetch_l2_then_copy", Prefetch::kBeforeCopy, PrefetchTo::kL2},
    {"stream", Prefetch::kNone, PrefetchTo::kL2, Store::kNonTemporal}};

// Row (h, slot) of a (1, KH, slots, D) f32 view (strided for interleaved's halves).
inline float* ViewRow(const Tensor& view, int64_t h, int64_t slot) {
  return view.data<float>() + h * view.strides()[1] + slot * view.strides()[2];
}

// Asks for the lines of slot `slot` of a layer's K and V rows, the way `to` says.
inline void PrefetchFloorSlot(const CacheView& view, int64_t slot, PrefetchTo to) {
  const size_t row_bytes = static_cast<size_t>(view.k.dim(3)) * sizeof(float);
  for (int64_t h = 0; h < kAppendKvHeads; ++h) {
    const char* k_row = reinterpret_cast<const char*>(ViewRow(view.k, h, slot));
    const char* v_row = reinterpret_cast<const char*>(ViewRow(view.v, h, slot));
    for (size_t line = 0; line < row_bytes; line += 64) {
      if (to == PrefetchTo::kL2) {
        __builtin_prefetch(k_row + line, /*rw=*/0, /*locality=*/2);
        __builtin_prefetch(v_row + line, /*rw=*/0, /*locality=*/2);
      } else {
        __builtin_prefetch(k_row + line, /*rw=*/1, /*locality=*/3);
        __builtin_prefetch(v_row + line, /*rw=*/1, /*locality=*/3);
      }
    }
  }
}

// Copies `bytes` from `from` to `to` with non-temporal stores where the CPU has them (SSE2 on
// x86-64) and `to` and `bytes` are multiples of 16 (every row here), else with memcpy.
inline void StreamRow(float* to, const float* from, size_t bytes) {
#if defined(__SSE2__)
  if (reinterpret_cast<uintptr_t>(to) % 16 != 0 || bytes % 16 != 0) {
    std::memcpy(to, from, bytes);
    return;
  }
  for (size_t i = 0; i < bytes / sizeof(float); i += 4) {
    _mm_stream_ps(to + i, _mm_loadu_ps(from + i));
  }
#else
  std::memcpy(to, from, bytes);
#endif
}

// One layer's floor step: the KH rows of K (`k_rows`, KH x D floats) and of V into slot
// `position` of the layer's buffers (`view`, a view of them from the prefill), one memcpy per
// row, with the prefetch of slot position + 1 that `floor` asks for. `between()` runs after
// the copies and before a prefetch that follows them.
template <typename Between>
inline void FloorLayerStep(const CacheView& view, int64_t position, const float* k_rows,
                           const float* v_rows, FloorCopy floor, Between between) {
  const size_t row_bytes = static_cast<size_t>(view.k.dim(3)) * sizeof(float);  // run-time
  if (floor.when == Prefetch::kBeforeCopy) PrefetchFloorSlot(view, position + 1, floor.to);
  if (floor.store == Store::kNonTemporal) {
    for (int64_t h = 0; h < kAppendKvHeads; ++h) {
      StreamRow(ViewRow(view.k, h, position), k_rows + h * kAppendHeadDim, row_bytes);
    }
    for (int64_t h = 0; h < kAppendKvHeads; ++h) {
      StreamRow(ViewRow(view.v, h, position), v_rows + h * kAppendHeadDim, row_bytes);
    }
    between();
    return;
  }
  for (int64_t h = 0; h < kAppendKvHeads; ++h) {
    std::memcpy(ViewRow(view.k, h, position), k_rows + h * kAppendHeadDim, row_bytes);
  }
  for (int64_t h = 0; h < kAppendKvHeads; ++h) {
    std::memcpy(ViewRow(view.v, h, position), v_rows + h * kAppendHeadDim, row_bytes);
  }
  between();
  if (floor.when == Prefetch::kAfterCopy) PrefetchFloorSlot(view, position + 1, floor.to);
}

// Ends a step of all layers: a non-temporal copy's stores are made globally visible (sfence)
// before the step counts as done, as the next reader of the rows needs.
inline void FinishFloorStep(FloorCopy floor) {
#if defined(__SSE2__)
  if (floor.store == Store::kNonTemporal) _mm_sfence();
#endif
  (void)floor;
}

// A floor step of all layers (`views`, one per layer, from the prefill): FloorLayerStep for
// each, `between(view)` after each layer's copies, then FinishFloorStep.
template <typename Between>
inline void FloorStep(const std::vector<CacheView>& views, int64_t position, const Tensor& k,
                      const Tensor& v, FloorCopy floor, Between between) {
  for (const CacheView& view : views) {
    FloorLayerStep(view, position, k.data<float>(), v.data<float>(), floor,
                   [&] { between(view); });
  }
  FinishFloorStep(floor);
}

// A decode step of all layers through the caches: AppendInto into each layer's kept view
// (`views[l]`) when `kept_views`, else Append, whose new view is dropped.
inline void AppendStep(const std::vector<std::unique_ptr<KvCache>>& layers,
                       std::vector<CacheView>& views, const Tensor& k, const Tensor& v,
                       bool kept_views) {
  for (size_t l = 0; l < layers.size(); ++l) {
    if (kept_views) {
      absl::Status status = layers[l]->AppendInto(k, v, views[l]);
      benchmark::DoNotOptimize(status);
    } else {
      absl::StatusOr<CacheView> view = layers[l]->Append(k, v);
      benchmark::DoNotOptimize(view);
    }
  }
}

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_APPEND_STEPS_H_
