#include "fuzz/attention_seeds.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "fuzz/attention_boundaries.h"
#include "src/tensor/dtype.h"

namespace kvcheck::fuzz {
namespace {

template <typename T, size_t N>
int64_t IndexOf(const T (&values)[N], T value) {
  return std::find(std::begin(values), std::end(values), value) - std::begin(values);
}

// How the decoding's mask draws name -inf (0) and the stand-ins (1 + their index).
int64_t RemovingIndex(float x) { return std::isinf(x) ? 0 : 1 + IndexOf(kMaskSentinels, x); }

class SeedList {
 public:
  explicit SeedList(const std::vector<std::string>& kernel_names) : kernels_(kernel_names) {}

  // A case of `head_dim` and `kv_len` (boundary values) in the `dtype_index`th dtype; the
  // kernels taken in turn, each seed its own values.
  DrawPlan Sizes(int64_t dtype_index, int64_t head_dim, int64_t kv_len) {
    DrawPlan plan;
    plan["dtype"] = {dtype_index};
    plan["head_dim kind"] = {15};
    plan["head_dim"] = {IndexOf(kBoundaryHeadDims, head_dim)};
    plan["kv_len kind"] = {15};
    plan["kv_len"] = {IndexOf(kBoundaryKvLens, kv_len)};
    plan["values seed"] = {static_cast<int64_t>(seeds_.size()) + 1};
    return plan;
  }

  void Add(std::string what, DrawPlan plan) {
    if (!plan.contains("kernel")) plan["kernel"] = {next_kernel_++ % Count()};
    const std::string kernel = kernels_[plan["kernel"][0]];
    const DType dtype = kAllDTypes[plan["dtype"][0]];
    std::string name = absl::StrCat("seed-", what, "-", DTypeName(dtype), "-",
                                    absl::StrReplaceAll(kernel, {{"/", "_"}}));
    // The same sizes, dtype and kernel a second time (the sweeps cross): another name.
    if (const int seen = names_[name]++; seen > 0) absl::StrAppend(&name, "-", seen + 1);
    seeds_.push_back({std::move(name), std::move(plan)});
  }

  int64_t Count() const { return static_cast<int64_t>(kernels_.size()); }
  std::vector<PlannedInput> Take() { return std::move(seeds_); }

 private:
  std::vector<std::string> kernels_;
  int64_t next_kernel_ = 0;
  std::vector<PlannedInput> seeds_;
  std::map<std::string, int> names_;
};

std::string Sized(int64_t head_dim, int64_t kv_len) {
  return absl::StrCat("d", head_dim, "-kv", kv_len);
}

}  // namespace

std::vector<PlannedInput> AttentionSeeds(const std::vector<std::string>& kernel_names) {
  SeedList seeds(kernel_names);
  const int64_t dtypes = std::size(kAllDTypes);
  int64_t turn = 0;  // dtypes in turn
  // A seed's cost grows with its K and V elements (Skv x D: the tensor conversions dominate
  // in the fuzz build), and the seeds' mutants keep their sizes: each class is reached at a
  // small size in the other dimension, the 128 x 128 tile boundary once per side and kernel.
  // Every boundary head size with 33 keys (one past a 32-key tile), every boundary key count
  // at head size 8.
  for (int64_t d : kBoundaryHeadDims) {
    seeds.Add(Sized(d, 33), seeds.Sizes(turn++ % dtypes, d, 33));
  }
  for (int64_t n : kBoundaryKvLens) {
    seeds.Add(Sized(8, n), seeds.Sizes(turn++ % dtypes, 8, n));
  }
  // Both sides of the 128 tile in both sizes; 128 x 128 through every kernel.
  for (int64_t d : {127, 128, 129}) {
    for (int64_t n : {127, 128, 129}) {
      const int64_t kernels = d == 128 && n == 128 ? seeds.Count() : 1;
      for (int64_t k = 0; k < kernels; ++k) {
        DrawPlan plan = seeds.Sizes(turn++ % dtypes, d, n);
        if (kernels > 1) plan["kernel"] = {k};
        seeds.Add(Sized(d, n), std::move(plan));
      }
    }
  }
  // Prefill and grouped queries past the small sizes: two query rows of two heads, the last
  // row checked.
  for (const auto& [d, n] : {std::pair<int64_t, int64_t>{128, 129}, {16, 513}}) {
    DrawPlan plan = seeds.Sizes(turn++ % dtypes, d, n);
    plan["query heads per kv head"] = {2};
    plan["prefill"] = {1};
    plan["prefill q_len"] = {2};
    plan["checked row"] = {3};
    seeds.Add(absl::StrCat("prefill-", Sized(d, n)), std::move(plan));
  }
  // The mask classes, each in every dtype: two query rows of two heads at head size 16, 65
  // keys (two 32-key tiles and one more), the mask per head (four mask rows).
  const auto masked = [&](int64_t dtype) {
    DrawPlan plan = seeds.Sizes(dtype, 16, 65);
    plan["query heads per kv head"] = {2};
    plan["prefill"] = {1};
    plan["prefill q_len"] = {2};
    plan["checked row"] = {2};
    return plan;
  };
  for (int64_t dtype = 0; dtype < dtypes; ++dtype) {
    seeds.Add("plain-d16-kv65", masked(dtype));
    DrawPlan causal = masked(dtype);
    causal["causal"] = {1};
    seeds.Add("causal-d16-kv65", std::move(causal));
    DrawPlan window = masked(dtype);
    window["window"] = {1};
    window["window size"] = {32};
    seeds.Add("window32-d16-kv65", std::move(window));
    const auto mask = [&](float removed, int64_t whole_rows, float row_value) {
      DrawPlan plan = masked(dtype);
      plan["mask"] = {1};
      plan["mask per head"] = {1};
      plan["mask seed"] = {dtype + 7};
      plan["mask removed key value"] = {RemovingIndex(removed)};
      plan["mask whole rows"] = {whole_rows};
      if (whole_rows != 0) plan["mask whole row value"] = {RemovingIndex(row_value)};
      return plan;
    };
    std::vector<float> removing = {-INFINITY};
    removing.insert(removing.end(), std::begin(kMaskSentinels), std::end(kMaskSentinels));
    for (float x : removing) {
      // Removed keys hold x; then also every other row whole of it (rows 0 and 2: the checked
      // row among them).
      seeds.Add(absl::StrCat("mask", x, "-d16-kv65"), mask(x, 0, x));
      seeds.Add(absl::StrCat("mask", x, "-rows-d16-kv65"), mask(x, 0x55, x));
      if (!std::isinf(x)) {
        // -inf for removed keys, whole rows of the stand-in: both in one mask.
        seeds.Add(absl::StrCat("mask-inf-rows", x, "-d16-kv65"), mask(-INFINITY, 0x55, x));
      }
    }
  }
  return seeds.Take();
}

std::vector<PlannedInput> AttentionRegressions(const std::vector<std::string>& kernel_names) {
  const auto naive = std::find(kernel_names.begin(), kernel_names.end(), "naive");
  if (naive == kernel_names.end()) return {};
  // The reference once checked a row whose dot products overflow f32 only before scaling:
  // q[0] = -3e38 against unit-scale keys, scale 0.05. The scaled scores stay finite, but a
  // kernel that forms the dot product first (naive's matrix product) gets infinities. The
  // reference leaves such rows unchecked (reference/ERROR_BOUND.md, item 6); this input runs
  // one through naive.
  DrawPlan plan;
  plan["dtype"] = {0};
  plan["small head_dim"] = {7};  // 33
  plan["kv_len kind"] = {0};
  plan["small kv_len"] = {3};  // 15
  plan["scale"] = {1};
  plan["scale value"] = {1};  // 0.05
  plan["values seed"] = {1};
  plan["specials"] = {1};
  plan["special tensor"] = {0};
  plan["special at"] = {0};
  plan["special value"] = {6};  // -3e38
  plan["kernel"] = {naive - kernel_names.begin()};
  return {{"unscaled-dot-overflow", std::move(plan)}};
}

}  // namespace kvcheck::fuzz
