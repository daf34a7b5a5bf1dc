#include "src/engine/engine_entries.h"

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/engine/external_cache.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::engine {

// The ABI's feature bits are kvcheck's KernelFeature bits.
constexpr bool SameBit(uint32_t abi, uint32_t kvcheck) { return abi == kvcheck; }
static_assert(SameBit(KVCHECK_FEATURE_SCALE, kFeatureScale) &&
              SameBit(KVCHECK_FEATURE_SOFTCAP, kFeatureSoftcap) &&
              SameBit(KVCHECK_FEATURE_ALIBI, kFeatureAlibi) &&
              SameBit(KVCHECK_FEATURE_CAUSAL, kFeatureCausal) &&
              SameBit(KVCHECK_FEATURE_WINDOW, kFeatureWindow) &&
              SameBit(KVCHECK_FEATURE_MASK, kFeatureMask) &&
              SameBit(KVCHECK_FEATURE_POSITIONS, kFeaturePositions) &&
              SameBit(KVCHECK_FEATURE_GQA, kFeatureGqa));

std::vector<CacheStrategy> EngineStrategies(const std::shared_ptr<Engine>& engine) {
  std::vector<CacheStrategy> strategies;
  const EngineInfo& info = engine->info();
  for (int i = 0; i < static_cast<int>(info.strategies.size()); ++i) {
    const StrategyInfo& s = info.strategies[i];
    const bool stats = (s.flags & KVCHECK_STRATEGY_STATS) != 0;
    CacheStrategy entry{s.name.c_str(),
                        s.summary.c_str(),
                        s.default_config,
                        (s.flags & KVCHECK_STRATEGY_WINDOWED) != 0,
                        stats && (s.flags & KVCHECK_STRATEGY_AMORTIZED_GROWTH) != 0,
                        (s.flags & KVCHECK_STRATEGY_PER_ROW) != 0,
                        [engine, i](const CacheConfig& config) {
                          return ExternalCache::Create(engine, i, config);
                        }};
    entry.forks = (s.flags & KVCHECK_STRATEGY_FORK) != 0;
    entry.resets = true;  // by re-creation where the engine has no Reset
    entry.reports_storage = stats;
    entry.honours_max_bytes = stats && (s.flags & KVCHECK_STRATEGY_MAX_BYTES) != 0;
    entry.dtypes = s.dtypes;
    strategies.push_back(std::move(entry));
  }
  return strategies;
}

uint32_t FeaturesUsed(const Tensor& q, const Tensor& k, const AttentionParams& params) {
  uint32_t used = 0;
  if (params.scale.has_value()) used |= kFeatureScale;
  if (params.softcap > 0) used |= kFeatureSoftcap;
  if (!params.alibi_slopes.empty()) used |= kFeatureAlibi;
  if (params.causal) used |= kFeatureCausal;
  if (params.window > 0) used |= kFeatureWindow;
  if (params.mask.has_value()) used |= kFeatureMask;
  if (!params.q_positions.empty() || !params.kv_positions.empty()) used |= kFeaturePositions;
  if (q.rank() == 4 && k.rank() == 4 && q.dim(1) != k.dim(1)) used |= kFeatureGqa;
  return used;
}

namespace {

const char* FeatureName(uint32_t bit) {
  switch (bit) {
    case kFeatureScale:
      return "a custom scale";
    case kFeatureSoftcap:
      return "softcap";
    case kFeatureAlibi:
      return "ALiBi";
    case kFeatureCausal:
      return "causal";
    case kFeatureWindow:
      return "a sliding window";
    case kFeatureMask:
      return "an additive mask";
    case kFeaturePositions:
      return "explicit positions";
    case kFeatureGqa:
      return "GQA (H != KH)";
  }
  return "an unknown feature";
}

}  // namespace

std::vector<AttentionKernel> EngineKernels(const std::shared_ptr<Engine>& engine) {
  std::vector<AttentionKernel> kernels;
  const EngineInfo& info = engine->info();
  for (int i = 0; i < static_cast<int>(info.kernels.size()); ++i) {
    const KernelInfo& kernel = info.kernels[i];
    AttentionKernel entry{
        kernel.name.c_str(), kernel.summary.c_str(),
        [engine, i](const Tensor& q, const Tensor& k, const Tensor& v,
                    const AttentionParams& params, int) -> absl::StatusOr<Tensor> {
          KV_RETURN_IF_ERROR(ValidateAttention(q, k, v, params).status());
          const KernelInfo& declared = engine->info().kernels[i];
          const uint32_t missing = FeaturesUsed(q, k, params) & ~declared.features;
          if (missing != 0) {
            return absl::UnimplementedError(
                absl::StrCat(engine->info().name, " kernel ", declared.name, " does not declare ",
                             FeatureName(missing & -missing), " (KVCHECK_FEATURE_*)"));
          }
          if (!((declared.dtypes >> static_cast<int>(q.dtype())) & 1)) {
            return absl::UnimplementedError(absl::StrCat(engine->info().name, " kernel ",
                                                         declared.name, " does not take ",
                                                         DTypeName(q.dtype())));
          }
          return engine->Attend(i, q, k, v, params);
        },
        /*threaded=*/false};
    entry.features = kernel.features;
    entry.dtypes = kernel.dtypes;
    kernels.push_back(std::move(entry));
  }
  return kernels;
}

}  // namespace kvcheck::engine
