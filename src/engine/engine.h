// File: engine.h
// Engine: an engine kvcheck did not write, as kvcheck talks to it, whatever the transport (a
// plug-in library in this process, plugin_engine.h; later a child process speaking the
// protocol). The operations and their contract are those of the C ABI (kvcheck_engine.h) in
// C++ terms: kvcheck's Tensor in, a CacheView or Tensor out that kvcheck owns (copied from the
// engine's memory), absl::Status for every error.
//
// An engine is not thread-safe: one caller at a time.
#ifndef KVCHECK_SRC_ENGINE_ENGINE_H_
#define KVCHECK_SRC_ENGINE_ENGINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/attention/attention_params.h"
#include "src/cache/cache_config.h"
#include "src/cache/kv_cache.h"
#include "src/tensor/tensor.h"

namespace kvcheck::engine {

// What the engine declared (kvcheck_strategy_info, kvcheck_kernel_info).
struct StrategyInfo {
  std::string name;
  std::string summary;
  uint32_t flags = 0;   // KVCHECK_STRATEGY_*
  uint32_t dtypes = 0;  // bit DType
  CacheConfig default_config;
};

struct KernelInfo {
  std::string name;
  std::string summary;
  uint32_t features = 0;  // KVCHECK_FEATURE_* (the same bits as KernelFeature)
  uint32_t dtypes = 0;
};

// kvcheck_stepper_info, kvcheck_model_info.
struct StepperInfo {
  std::string name;
  std::string summary;
  uint32_t flags = 0;   // KVCHECK_STEPPER_*
  uint32_t dtypes = 0;  // bit DType
  int64_t window = 0;   // the default W of a windowed stepper
};

struct ModelInfo {
  std::string name;
  std::string summary;
  uint32_t flags = 0;  // KVCHECK_MODEL_*
  int64_t vocab_size = 0;
  int64_t max_tokens = 0;
  double tolerance = 1e-3;  // 0 in the declaration means this default
};

struct EngineInfo {
  std::string name;
  std::vector<StrategyInfo> strategies;
  std::vector<KernelInfo> kernels;
  std::vector<StepperInfo> steppers;
  std::vector<ModelInfo> models;
};

// capacity() and the counters of kv_cache.h, as the engine reports them.
struct CacheStats {
  int64_t capacity = 0;
  CacheCounters counters;  // bytes_appended is kvcheck's own count
};

// The engine's cache, stepper or model object, as the transport names it.
using CacheHandle = uint64_t;
using SessionHandle = uint64_t;

class Engine {
 public:
  virtual ~Engine() = default;

  virtual const EngineInfo& info() const = 0;
  // Where the engine came from ("plug-in /path/libfoo.so").
  virtual std::string description() const = 0;

  // The cache operations. REQUIRES: `strategy` indexes info().strategies; inputs satisfy
  // the contract of kv_cache.h (kvcheck's KvCache wrapper validates them first). Errors: the
  // engine's own, with its message, prefixed by the operation; kInternal for a malformed
  // reply (naming the field).
  virtual absl::StatusOr<CacheHandle> CreateCache(int strategy, const CacheConfig& config) = 0;
  virtual absl::StatusOr<CacheView> Append(CacheHandle cache, const Tensor& k, const Tensor& v,
                                           absl::Span<const bool> active) = 0;
  // `shape`: what the cache's first append fixed (the view's expected B, KH, D and dtype).
  virtual absl::StatusOr<CacheView> View(CacheHandle cache, const KvShape& shape) = 0;
  virtual absl::StatusOr<CacheHandle> Fork(CacheHandle cache) = 0;
  virtual absl::Status Reset(CacheHandle cache) = 0;
  virtual absl::StatusOr<CacheStats> Stats(CacheHandle cache) = 0;
  virtual void Destroy(CacheHandle cache) = 0;

  // Attention with kernel `kernel`. REQUIRES: the inputs pass ValidateAttention.
  virtual absl::StatusOr<Tensor> Attend(int kernel, const Tensor& q, const Tensor& k,
                                        const Tensor& v, const AttentionParams& params) = 0;

  // Steppers (kvcheck_engine.h): `stepper` indexes info().steppers. Step: q (B, H, S, D),
  // k_new and v_new (B, KH, S, D) of one dtype; the output (B, H, S, D) in that dtype.
  virtual absl::StatusOr<SessionHandle> CreateStepper(int stepper, int64_t window);
  virtual absl::StatusOr<Tensor> Step(SessionHandle stepper, const Tensor& q, const Tensor& k_new,
                                      const Tensor& v_new);
  virtual absl::Status ResetStepper(SessionHandle stepper);
  virtual void DestroyStepper(SessionHandle stepper);

  // Models: `model` indexes info().models. Forward: `tokens` (batch, seq) row-major; the
  // logits (batch, seq, V) row-major.
  virtual absl::StatusOr<SessionHandle> CreateModel(int model);
  virtual absl::StatusOr<std::vector<float>> Forward(SessionHandle model,
                                                     absl::Span<const int64_t> tokens,
                                                     int64_t batch, int64_t seq, bool use_cache);
  virtual absl::Status ResetModel(SessionHandle model);
  virtual void DestroyModel(SessionHandle model);
};

// The defaults of an engine without steppers or models (the info lists none, so kvcheck never
// calls them).
inline absl::StatusOr<SessionHandle> Engine::CreateStepper(int, int64_t) {
  return absl::UnimplementedError("this engine has no steppers");
}
inline absl::StatusOr<Tensor> Engine::Step(SessionHandle, const Tensor&, const Tensor&,
                                           const Tensor&) {
  return absl::UnimplementedError("this engine has no steppers");
}
inline absl::Status Engine::ResetStepper(SessionHandle) {
  return absl::UnimplementedError("this engine has no steppers");
}
inline void Engine::DestroyStepper(SessionHandle) {}
inline absl::StatusOr<SessionHandle> Engine::CreateModel(int) {
  return absl::UnimplementedError("this engine has no models");
}
inline absl::StatusOr<std::vector<float>> Engine::Forward(SessionHandle, absl::Span<const int64_t>,
                                                          int64_t, int64_t, bool) {
  return absl::UnimplementedError("this engine has no models");
}
inline absl::Status Engine::ResetModel(SessionHandle) {
  return absl::UnimplementedError("this engine has no models");
}
inline void Engine::DestroyModel(SessionHandle) {}

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_ENGINE_H_
