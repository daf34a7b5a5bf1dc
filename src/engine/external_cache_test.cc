// ExternalCache against an in-process fake engine whose Fork shares the cache (the defect a
// test of an engine must be able to see): every View() is the engine's answer now, never the
// copy an earlier append returned, and Reset forgets what the engine showed before.
#include "src/engine/external_cache.h"

#include <map>
#include <memory>

#include "gtest/gtest.h"
#include "src/cache/registry.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::engine {
namespace {

// Built-in prealloc caches behind handles; Fork hands out a second handle to the same cache.
// Views are copies, as over the process protocol. Counts the View requests.
class SharingForkEngine : public Engine {
 public:
  SharingForkEngine() {
    StrategyInfo strategy;
    strategy.name = "shared_fork";
    strategy.flags = KVCHECK_STRATEGY_FORK | KVCHECK_STRATEGY_RESET;
    strategy.dtypes = 1u << KVCHECK_DTYPE_F32;
    info_.name = "sharing-fork";
    info_.strategies.push_back(strategy);
  }
  const EngineInfo& info() const override { return info_; }
  std::string description() const override { return "in-process test engine"; }

  absl::StatusOr<CacheHandle> CreateCache(int, const CacheConfig& config) override {
    absl::StatusOr<std::unique_ptr<KvCache>> cache = FindCacheStrategy("prealloc")->create(config);
    if (!cache.ok()) return cache.status();
    caches_[next_] = std::shared_ptr<KvCache>(*std::move(cache));
    return next_++;
  }
  absl::StatusOr<CacheView> Append(CacheHandle cache, const Tensor& k, const Tensor& v,
                                   absl::Span<const bool> active) override {
    absl::StatusOr<CacheView> view = caches_.at(cache)->AppendActive(k, v, active);
    if (!view.ok()) return view.status();
    return Copy(*view);
  }
  absl::StatusOr<CacheView> View(CacheHandle cache, const KvShape&) override {
    ++view_requests_;
    absl::StatusOr<CacheView> view = caches_.at(cache)->View();
    if (!view.ok()) return view.status();
    return Copy(*view);
  }
  absl::StatusOr<CacheHandle> Fork(CacheHandle cache) override {
    caches_[next_] = caches_.at(cache);  // the defect: both handles write one cache
    return next_++;
  }
  absl::Status Reset(CacheHandle cache) override {
    caches_.at(cache)->Reset();
    return absl::OkStatus();
  }
  absl::StatusOr<CacheStats> Stats(CacheHandle) override { return CacheStats{}; }
  void Destroy(CacheHandle cache) override { caches_.erase(cache); }
  absl::StatusOr<Tensor> Attend(int, const Tensor&, const Tensor&, const Tensor&,
                                const AttentionParams&) override {
    return absl::UnimplementedError("no kernels");
  }

  int view_requests() const { return view_requests_; }

 private:
  static CacheView Copy(const CacheView& view) {
    return CacheView{view.k.DeepCopy(), view.v.DeepCopy(), view.positions};
  }

  EngineInfo info_;
  std::map<CacheHandle, std::shared_ptr<KvCache>> caches_;
  CacheHandle next_ = 1;
  int view_requests_ = 0;
};

Tensor Token(float value) { return *Tensor::FromFloats(DType::kF32, {1, 1, 1, 2}, {value, -value}); }

TEST(ExternalCacheTest, EveryViewIsTheEnginesAnswerNotTheAppendsCopy) {
  auto engine = std::make_shared<SharingForkEngine>();
  std::unique_ptr<KvCache> parent = *ExternalCache::Create(engine, 0, CacheConfig{});
  ASSERT_TRUE(parent->Append(Token(1), Token(1)).ok());
  std::unique_ptr<KvCache> child = parent->Fork();
  // The child's append lands in the cache the parent shares: the parent must show it (so that
  // the properties see the engine's fork defect), not the one token its own append returned.
  ASSERT_TRUE(child->Append(Token(2), Token(2)).ok());
  const int requests = engine->view_requests();
  absl::StatusOr<CacheView> view = parent->View();
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(engine->view_requests(), requests + 1);
  ASSERT_EQ(view->k.dim(2), 2);
  EXPECT_EQ(view->k.ToFloats(), (std::vector<float>{1, -1, 2, -2}));
  // And again: a second View() asks again.
  ASSERT_TRUE(parent->View().ok());
  EXPECT_EQ(engine->view_requests(), requests + 2);
}

TEST(ExternalCacheTest, AfterResetTheViewIsTheNewAppendsOnly) {
  auto engine = std::make_shared<SharingForkEngine>();
  std::unique_ptr<KvCache> cache = *ExternalCache::Create(engine, 0, CacheConfig{});
  ASSERT_TRUE(cache->Append(Token(1), Token(1)).ok());
  ASSERT_TRUE(cache->Append(Token(2), Token(2)).ok());
  cache->Reset();
  absl::StatusOr<CacheView> appended = cache->Append(Token(3), Token(3));
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->k.ToFloats(), (std::vector<float>{3, -3}));
  absl::StatusOr<CacheView> view = cache->View();
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->v.ToFloats(), (std::vector<float>{3, -3}));
}

}  // namespace
}  // namespace kvcheck::engine
