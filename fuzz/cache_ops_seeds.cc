#include "fuzz/cache_ops_seeds.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "fuzz/cache_ops_boundaries.h"
#include "src/tensor/dtype.h"

namespace kvcheck::fuzz {
namespace {

template <typename T, size_t N>
int64_t IndexOf(const T (&values)[N], T value) {
  return std::find(std::begin(values), std::end(values), value) - std::begin(values);
}

template <typename T, size_t N>
bool Contains(const T (&values)[N], T value) {
  return IndexOf(values, value) < static_cast<int64_t>(N);
}

// One K or V input's layout: the layout byte (bit 0 transposed, bit 1 padded, bits 2-5 the
// padded dimensions, bit 6 the offset), or a boundary layout: broadcast along dim 0-3, or
// (kind 4) buffer order `order` (the nth permutation) with the dimensions of `padding`'s bits
// padded.
struct LayoutPlan {
  int64_t byte = 0;
  int64_t kind = 0;
  int64_t order = 0;
  int64_t padding = 0;
};
LayoutPlan Broadcast(int dim) { return {kBoundaryByte, dim}; }
LayoutPlan Permuted(int64_t order, int64_t padding) { return {kBoundaryByte, 4, order, padding}; }

// What one append's K and V are: their layouts, NaN or infinities in them, and the active
// rows of a per-row strategy (-1: no flags).
struct Inputs {
  LayoutPlan k, v;
  bool specials = false;
  int64_t active = -1;
};
// Contiguous inputs, the rows of `rows`' bits active.
Inputs Active(int64_t rows) {
  Inputs inputs;
  inputs.active = rows;
  return inputs;
}

// The decisions of one input (cache_ops_run.cc), in the order the run draws them, each
// appended to its decision's list.
class CachePlan {
 public:
  CachePlan(const CacheStrategy& strategy, int64_t strategy_index, int64_t dtype)
      : strategy_(strategy) {
    plan_["strategy"] = {strategy_index};
    plan_["dtype"] = {dtype};
  }

  CachePlan& Capacity(int64_t capacity) {
    return Boundary("initial capacity", kCacheSmallCapacities, "large initial capacity",
                    kCacheLargeCapacities, capacity);
  }
  CachePlan& Window(int64_t window) {
    return Boundary("window", kCacheSmallWindows, "large window", kCacheLargeWindows, window);
  }
  // The first choice of first-append sizes (the second stays B = KH = D = 1).
  CachePlan& Dims(int64_t batch, int64_t kv_heads, int64_t head_dim) {
    if (batch <= 2 && kv_heads <= 2 && Contains(kCacheSmallHeadDims, head_dim)) {
      plan_["batch"] = {batch};
      plan_["kv heads"] = {kv_heads};
      plan_["head_dim"] = {IndexOf(kCacheSmallHeadDims, head_dim)};
    } else {
      plan_["head_dim"] = {kBoundaryByte};
      plan_["boundary head_dim"] = {IndexOf(kCacheHeadDims, head_dim)};
      plan_["boundary batch"] = {IndexOf(kCacheBatches, batch)};
      plan_["boundary kv heads"] = {IndexOf(kCacheKvHeads, kv_heads)};
    }
    return *this;
  }

  // A prefill of `seq` tokens, 2 to 24.
  CachePlan& Prefill(int64_t seq, Inputs inputs = {}, int branch = 0) {
    Operation(0, branch);
    Add("prefill S", seq - 2);
    return Tokens(inputs);
  }
  // A prefill that makes the longest row land one before (-1), on or one past (+1) a
  // landmark: 1 the initial capacity, 2 the window (or the next geometric growth), 3 the next
  // block boundary.
  CachePlan& Land(int64_t landmark, int64_t offset, Inputs inputs = {}, int branch = 0) {
    Operation(0, branch);
    Add("prefill S", kBoundaryByte);
    Add("prefill lands at", landmark);
    Add("prefill offset", offset + 1);
    return Tokens(inputs);
  }
  CachePlan& EmptyPrefill(Inputs inputs = {}, int branch = 0) {
    Operation(0, branch);
    Add("prefill S", kBoundaryByte);
    Add("prefill lands at", 0);
    return Tokens(inputs);
  }
  CachePlan& Decode(Inputs inputs = {}, int branch = 0) {
    Operation(1, branch);
    return Tokens(inputs);
  }
  CachePlan& Grow(int64_t past = 0, Inputs inputs = {}, int branch = 0) {
    Operation(3, branch);
    Add("grow past", past);
    return Tokens(inputs);
  }
  // A prefill past the branch's token budget: the run resets the branch instead.
  CachePlan& PrefillPastBudget(int64_t seq, int branch = 0) {
    Operation(0, branch);
    Add("prefill S", seq - 2);
    return *this;
  }
  CachePlan& Reset(int branch = 0) {
    Operation(4, branch);
    return *this;
  }
  CachePlan& Fork(int branch = 0) {
    Operation(5, branch);
    return *this;
  }
  // Kind 0-6: rank 3, k/v shapes differ, zero-size dimension (B, else D), overflowing S,
  // wrong dtype, wrong head_dim, wrong batch.
  CachePlan& BadAppend(int64_t kind, bool zero_batch = false, int branch = 0) {
    Operation(6, branch);
    Add("bad append", kind);
    if (kind == 2) Add("zero dim is B", zero_batch);
    return *this;
  }

  DrawPlan Take() { return std::move(plan_); }

 private:
  template <size_t N, size_t M>
  CachePlan& Boundary(const char* what, const int64_t (&small)[N], const char* large_what,
                      const int64_t (&large)[M], int64_t value) {
    if (Contains(small, value)) {
      plan_[what] = {IndexOf(small, value)};
    } else {
      plan_[what] = {kBoundaryByte};
      plan_[large_what] = {IndexOf(large, value)};
    }
    return *this;
  }
  void Add(std::string_view what, int64_t value) { plan_[std::string(what)].push_back(value); }
  void Operation(int64_t kind, int branch) {
    Add("operation", kind);
    Add("branch", branch);
  }
  void Layout(const LayoutPlan& layout, bool specials) {
    Add("layout", layout.byte);
    if (layout.byte == kBoundaryByte) {
      Add("layout kind", layout.kind);
      if (layout.kind == 4) {
        Add("buffer order", layout.order);
        Add("padding", layout.padding);
      }
    }
    // A seed's low four bits 0 put NaN or infinities in (two of them: bits 4-5 are 1).
    ++values_;
    Add("values seed", specials ? values_ << 8 | 0x10 : values_ << 8 | 0x01);
  }
  CachePlan& Tokens(const Inputs& inputs) {
    Layout(inputs.k, inputs.specials);
    Layout(inputs.v, false);
    if (strategy_.per_row) {
      Add("active flags", inputs.active >= 0);
      if (inputs.active >= 0) Add("active rows", inputs.active);
    }
    return *this;
  }

  const CacheStrategy& strategy_;
  DrawPlan plan_;
  int64_t values_ = 0;
};

class SeedList {
 public:
  explicit SeedList(const std::vector<const CacheStrategy*>& strategies)
      : strategies_(strategies) {}

  // A plan on the strategy called `name`, in the `dtype`th dtype (-1: the dtypes in turn).
  CachePlan On(std::string_view name, int64_t dtype = -1) {
    const auto found = std::find_if(strategies_.begin(), strategies_.end(),
                                    [&](const CacheStrategy* s) { return s->name == name; });
    index_ = found == strategies_.end() ? 0 : found - strategies_.begin();
    dtype_ = dtype >= 0 ? dtype : turn_++ % static_cast<int64_t>(std::size(kAllDTypes));
    return CachePlan(*strategies_[index_], index_, dtype_);
  }
  // The registry's strategies in turn.
  CachePlan Next(int64_t dtype = -1) { return On(strategies_[next_++ % strategies_.size()]->name, dtype); }

  // Adds the plan last made by On or Next.
  void Add(const std::string& what, CachePlan& plan) {
    std::string name = absl::StrCat("seed-", what, "-", strategies_[index_]->name, "-",
                                    DTypeName(kAllDTypes[dtype_]));
    if (const int seen = names_[name]++; seen > 0) absl::StrAppend(&name, "-", seen + 1);
    seeds_.push_back({std::move(name), plan.Take()});
  }

  std::vector<PlannedInput> Take() { return std::move(seeds_); }

 private:
  std::vector<const CacheStrategy*> strategies_;
  int64_t index_ = 0, dtype_ = 0, turn_ = 0;
  size_t next_ = 0;
  std::vector<PlannedInput> seeds_;
  std::map<std::string, int> names_;
};

}  // namespace

std::vector<PlannedInput> CacheOpsSeeds(const std::vector<const CacheStrategy*>& strategies) {
  SeedList seeds(strategies);
  // Every strategy in every dtype: prefill, decode, fork and diverge, grow, reset, reuse.
  for (const CacheStrategy* strategy : strategies) {
    for (int64_t dtype = 0; dtype < static_cast<int64_t>(std::size(kAllDTypes)); ++dtype) {
      CachePlan plan = seeds.On(strategy->name, dtype);
      plan.Dims(2, 2, 5).Prefill(7).Decode().Fork().Decode({}, 1).Grow(1).Reset().Decode();
      seeds.Add("ops", plan);
    }
  }
  // Every boundary head size, one row and KV head, three tokens and a decode.
  for (int64_t d : kCacheHeadDims) {
    CachePlan plan = seeds.Next();
    plan.Dims(1, 1, d).Prefill(3).Decode();
    seeds.Add(absl::StrCat("d", d), plan);
  }
  // Batch rows and KV heads past two, at head size 8 (B * KH * D up to 256).
  for (const auto& [b, kh] : {std::pair<int64_t, int64_t>{3, 3}, {4, 4}, {3, 5}, {4, 6}, {3, 7},
                              {4, 8}}) {
    CachePlan plan = seeds.Next();
    plan.Dims(b, kh, 8).Prefill(4).Decode();
    seeds.Add(absl::StrCat("b", b, "-kh", kh, "-d8"), plan);
  }
  // Initial capacities: the longest row lands one before the capacity, then on it and one
  // past it by decode steps; a geometric grow after.
  for (int64_t c : {1, 2, 3, 4, 8, 16, 64}) {
    CachePlan plan = seeds.On(c % 2 == 0 ? "prealloc" : "interleaved");
    plan.Capacity(c).Land(1, -1).Decode().Decode().Grow();
    seeds.Add(absl::StrCat("capacity", c), plan);
  }
  // Windows: one token short of the window, a full window, one past (the first wrap); after a
  // reset, a chunk of W + 1 in one prefill.
  for (int64_t w : {1, 2, 3, 4, 5, 8, 13, 40}) {
    CachePlan plan = seeds.On(w % 2 == 0 ? "ring" : "scattered");
    plan.Window(w).Land(2, -1).Decode().Decode().Reset().Land(2, 1);
    seeds.Add(absl::StrCat("window", w), plan);
  }
  // The paged cache's blocks: 15 tokens, 16, 17, then a fork that writes into the shared
  // partial block and a prefill that lands one past the next boundary; two rows, one of
  // them inactive in the last append.
  for (int64_t dtype = 0; dtype < static_cast<int64_t>(std::size(kAllDTypes)); ++dtype) {
    CachePlan plan = seeds.On("paged", dtype);
    plan.Dims(2, 1, 8).Land(3, -1).Decode().Decode().Fork().Decode({}, 1).Land(3, 1, Active(1));
    seeds.Add("blocks-b2-d8", plan);
  }
  // The second geometric growth from the current length.
  {
    CachePlan plan = seeds.On("prealloc");
    plan.Prefill(5).Land(2, 0).Decode().Land(2, 1);
    seeds.Add("growth-landings", plan);
  }
  // Layouts, two rows and KV heads at head size 8 (a broadcast along each dimension repeats
  // something): the ordinary layout byte's classes and the boundary ones.
  const std::pair<const char*, Inputs> layouts[] = {
      {"transposed", {.k = {1}, .v = {1}}},
      {"padded", {.k = {0x3e}, .v = {0x7a}}},
      {"transposed-padded", {.k = {0x7f}, .v = {0x27}}},
      {"permuted", {.k = Permuted(7, 0), .v = Permuted(23, 0xf)}},
      {"broadcast-b", {.k = Broadcast(0), .v = Broadcast(0)}},
      {"broadcast-kh", {.k = Broadcast(1), .v = {1}}},
      {"broadcast-s", {.k = Broadcast(2), .v = Broadcast(2)}},
      {"broadcast-d", {.k = {0}, .v = Broadcast(3)}},
      {"specials", {.k = {}, .v = {}, .specials = true}},
  };
  for (const auto& [what, inputs] : layouts) {
    CachePlan plan = seeds.Next();
    plan.Dims(2, 2, 8).Prefill(5, inputs).Decode(inputs);
    seeds.Add(absl::StrCat("layout-", what), plan);
  }
  // Empty prefills, on an empty cache and on a filled one.
  for (const char* strategy : {"prealloc", "scattered", "paged"}) {
    CachePlan plan = seeds.On(strategy);
    plan.EmptyPrefill().Prefill(3).EmptyPrefill().Decode();
    seeds.Add("empty-prefill", plan);
  }
  // Inactive rows: one of four, then every one (per-row strategies).
  for (const char* strategy : {"scattered", "paged"}) {
    CachePlan plan = seeds.On(strategy);
    plan.Dims(4, 1, 2).Prefill(3).Decode(Active(0b1011)).Prefill(4, Active(0)).Decode();
    seeds.Add("inactive-rows-b4", plan);
  }
  // The token budget: at head size 160 a branch holds 51 tokens; a prefill past them resets.
  {
    CachePlan plan = seeds.On("interleaved");
    plan.Dims(1, 1, 160).Prefill(24).Prefill(24).PrefillPastBudget(4).Decode();
    seeds.Add("token-budget-d160", plan);
  }
  // Each bad append, after a prefill that fixes the shape.
  for (int64_t kind = 0; kind < 7; ++kind) {
    CachePlan plan = seeds.Next();
    plan.Prefill(2).BadAppend(kind, kind == 2);
    seeds.Add(absl::StrCat("bad-append", kind), plan);
  }
  return seeds.Take();
}

}  // namespace kvcheck::fuzz
