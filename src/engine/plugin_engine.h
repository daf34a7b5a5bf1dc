// File: plugin_engine.h
// PluginEngine: an engine loaded in process from a shared library implementing the C ABI of
// kvcheck_engine.h (dlopen, then the one entry point kvcheck_engine_v1).
//
// Load checks the table before anything is called: ABI version, table size, names, indices,
// and that every function a declared flag needs is present. Every call then converts
// kvcheck's tensors to descriptors without copying, and checks the descriptors the engine
// returns (foreign_tensor.h); cache views stay in the engine's memory until its next call
// on that cache (LendView below), attention and step outputs are written into kvcheck's. A
// crash inside the library is a crash of this process: kvcheck's default fork isolation turns
// it into a failing case.
#ifndef KVCHECK_SRC_ENGINE_PLUGIN_ENGINE_H_
#define KVCHECK_SRC_ENGINE_PLUGIN_ENGINE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/engine/engine.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::engine {

class PluginEngine : public Engine {
 public:
  // Errors: kNotFound when the library cannot be loaded or lacks the entry point (dlerror's
  // message); kFailedPrecondition for another ABI version; kInvalidArgument for a malformed
  // table (naming the field).
  static absl::StatusOr<std::unique_ptr<PluginEngine>> Load(const std::string& path);
  // The same from a table already in this process (an engine linked into a test).
  static absl::StatusOr<std::unique_ptr<PluginEngine>> FromTable(const kvcheck_engine* table,
                                                                 std::string description);
  ~PluginEngine() override;

  const EngineInfo& info() const override { return info_; }
  std::string description() const override { return description_; }

  absl::StatusOr<CacheHandle> CreateCache(int strategy, const CacheConfig& config) override;
  absl::StatusOr<CacheView> Append(CacheHandle cache, const Tensor& k, const Tensor& v,
                                   absl::Span<const bool> active) override;
  absl::StatusOr<CacheView> View(CacheHandle cache, const KvShape& shape) override;
  absl::StatusOr<CacheHandle> Fork(CacheHandle cache) override;
  absl::Status Reset(CacheHandle cache) override;
  absl::StatusOr<CacheStats> Stats(CacheHandle cache) override;
  void Destroy(CacheHandle cache) override;
  absl::StatusOr<SessionHandle> CreateStepper(int stepper, int64_t window) override;
  absl::StatusOr<Tensor> Step(SessionHandle stepper, const Tensor& q, const Tensor& k_new,
                              const Tensor& v_new) override;
  absl::Status ResetStepper(SessionHandle stepper) override;
  void DestroyStepper(SessionHandle stepper) override;
  absl::StatusOr<SessionHandle> CreateModel(int model) override;
  absl::StatusOr<std::vector<float>> Forward(SessionHandle model, absl::Span<const int64_t> tokens,
                                             int64_t batch, int64_t seq, bool use_cache) override;
  absl::Status ResetModel(SessionHandle model) override;
  void DestroyModel(SessionHandle model) override;
  absl::StatusOr<Tensor> Attend(int kernel, const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionParams& params) override;

 private:
  PluginEngine(const kvcheck_engine* table, std::string description)
      : table_(table), description_(std::move(description)) {}
  absl::Status ReadTable();
  // The view an engine returned for a cache of (B, KH, D, dtype) = `shape`, checked, over the
  // engine's memory: no copy. The ABI lets the engine reuse that memory at its next call on
  // the cache, so every call on `cache` first Reclaims: the views of it someone still holds
  // are detached (copied, Storage::Detach), the others forgotten. A caller that drops a view
  // before the next call (most do) never pays for a copy.
  // `names`: the returned k and v in errors ("<engine> cache_append returned k").
  struct ViewNames {
    std::string k, v;
  };
  absl::StatusOr<CacheView> LendView(CacheHandle cache, const kvcheck_view& view,
                                     const KvShape& shape, const ViewNames& names);
  absl::Status Reclaim(CacheHandle cache);

  const kvcheck_engine* table_;
  // The model each live model session runs (its vocabulary sizes the logits buffer).
  std::map<SessionHandle, int> models_;
  // The storages of the views lent per cache since its last call.
  std::map<CacheHandle, std::vector<std::weak_ptr<Storage>>> lent_;
  // Made once by ReadTable (LendView runs on every append).
  ViewNames append_names_, view_names_;
  std::string description_;
  EngineInfo info_;
};

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_PLUGIN_ENGINE_H_
