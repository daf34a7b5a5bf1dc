#include "properties/cache_properties.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "properties/law_margins.h"
#include "properties/storage_budget_property.h"
#include "rapidcheck.h"
#include "src/cache/registry.h"

namespace kvcheck::properties {
namespace {

// The appends of a growth-law case: mostly decode steps, some prefill chunks, 100 to 3,000
// tokens. One draw, printed in a line ("N appends of T tokens: ...").
struct AppendSizes {
  std::vector<int64_t> chunks;
};

void showValue(const AppendSizes& sizes, std::ostream& os) {
  int64_t tokens = 0;
  for (int64_t c : sizes.chunks) tokens += c;
  os << sizes.chunks.size() << " appends of " << tokens << " tokens:";
  // Runs of decode steps as "1 x n".
  for (size_t i = 0; i < sizes.chunks.size();) {
    size_t j = i;
    while (j < sizes.chunks.size() && sizes.chunks[j] == sizes.chunks[i]) ++j;
    os << (i > 0 ? "," : "") << " " << sizes.chunks[i];
    if (j - i > 1) os << " x " << j - i;
    i = j;
  }
}

rc::Gen<AppendSizes> GenAppendSizes() {
  return rc::gen::exec([] {
    const int64_t target = *Uniform<int64_t>(100, 3000);

    // The first appends' sizes (a decode step, or a chunk of up to 64), a list of any length
    // that shrinks by dropping sizes; the appends after it are decode steps. Drawn apart from
    // the target, so that shrinking the target never redraws them.
    const std::vector<int64_t> sizes = *rc::gen::container<std::vector<int64_t>>(
        rc::gen::map(Uniform<int64_t>(0, 256), [](int64_t x) { return x < 192 ? 1 : x - 191; }));
    AppendSizes out;
    for (int64_t total = 0; total < target; total += out.chunks.back()) {
      out.chunks.push_back(out.chunks.size() < sizes.size() ? sizes[out.chunks.size()] : 1);
    }
    return out;
  });
}

}  // namespace

// Geometric growth keeps the law; linear growth by a fixed step breaks it.
PropertySpec GrowthLawProperty(const CacheStrategy& strategy, LawMarginMap* margins) {
  return PropertySpec{
      absl::StrCat("cache/", strategy.name, "/growth_law"), 60, [&strategy, margins] {
        // The narrowest dtype the strategy takes (bf16 for the built-in ones).
        DType dtype = DType::kF32;
        for (DType d : {DType::kF16, DType::kBF16}) {
          if (strategy.supports(d)) dtype = d;
        }
        CacheConfig config = strategy.default_config;
        config.initial_capacity =
            (*Label("initial capacity", Choice<int64_t>(0, 1, 2, 4, 16, 64))).value;
        const int64_t heads = (*Label("KV heads", Uniform<int64_t>(1, 4))).value;
        const int64_t head_dim = (*Label("head dim D", Uniform<int64_t>(1, 9))).value;
        const std::vector<int64_t> chunks = (*GenAppendSizes()).chunks;
        const std::string wire = RunIsolatedWithPayload([&] {
          absl::StatusOr<std::unique_ptr<KvCache>> cache = strategy.create(config);
          if (!cache.ok()) RC_FAIL(absl::StrCat("create: ", cache.status().ToString()));
          int64_t total = 0;
          double worst = 0;  // the largest copied / (3 x appended) after any append
          for (const int64_t seq : chunks) {
            absl::StatusOr<Tensor> k =
                Tensor::Filled(dtype, {1, heads, seq, head_dim}, 1.0f);
            RC_ASSERT(k.ok());
            NoteStep(absl::StrCat("append of ", seq, " tokens after ", total));
            const absl::StatusOr<CacheView> appended = (*cache)->Append(*k, *k);
            if (!appended.ok()) RC_FAIL(absl::StrCat("append: ", appended.status().ToString()));
            total += seq;
            const CacheCounters& c = (*cache)->counters();
            if (c.bytes_growth_copied > 3 * c.bytes_appended) {
              RC_FAIL(absl::StrCat("after ", total, " tokens growth copied ",
                                   c.bytes_growth_copied, " bytes for ", c.bytes_appended,
                                   " appended (capacity ", (*cache)->capacity(), ")"));
            }
            worst = std::max(worst, static_cast<double>(c.bytes_growth_copied) /
                                        (3.0 * static_cast<double>(c.bytes_appended)));
          }
          return EncodeLawMargin("cache/growth copies / 3x appended", worst);
        });
        MergeLawMargins(wire, margins);
      }};
}

std::vector<PropertySpec> CacheProperties(CacheMachineStatsMap* stats, const Subject& subject,
                                          LawMarginMap* margins) {
  std::vector<PropertySpec> properties;
  for (const CacheStrategy& strategy : subject.strategies) {
    for (DType dtype : kAllDTypes) {
      if (!strategy.supports(dtype)) continue;
      const std::string name = absl::StrCat("cache/", strategy.name, "/", DTypeName(dtype));
      properties.push_back(CacheStateMachineProperty(strategy, dtype, 100, &(*stats)[name]));
    }
  }
  for (const CacheStrategy& strategy : subject.strategies) {
    // Window strategies never grow (a fixed ring); the law is about growing buffers.
    if (strategy.amortized_growth && !strategy.windowed && strategy.reports_storage) {
      properties.push_back(GrowthLawProperty(strategy, margins));
    }
  }
  for (const CacheStrategy& strategy : subject.strategies) {
    if (strategy.reports_storage && strategy.honours_max_bytes) {
      properties.push_back(StorageBudgetProperty(strategy));
    }
  }
  return properties;
}

}  // namespace kvcheck::properties
