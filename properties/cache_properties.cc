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
        config.initial_capacity = *Choice<int64_t>(0, 1, 2, 4, 16, 64);
        const int64_t heads = *Uniform<int64_t>(1, 4);
        const int64_t head_dim = *Uniform<int64_t>(1, 9);
        const int64_t target = *Uniform<int64_t>(100, 3000);
        // The appends: mostly decode steps, some prefill chunks, until `target` tokens.
        std::vector<int64_t> chunks;
        for (int64_t total = 0; total < target; total += chunks.back()) {
          chunks.push_back(Sometimes(25) ? *Uniform<int64_t>(1, 65) : 1);
        }
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
          LawMarginMap margin;
          margin["cache/growth copies / 3x appended"].Add(worst);
          return EncodeLawMargins(margin);
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
