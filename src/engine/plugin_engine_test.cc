#include "src/engine/plugin_engine.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvcheck::engine {
namespace {

using ::testing::HasSubstr;

int32_t Attend(int32_t, const kvcheck_tensor*, const kvcheck_tensor*, const kvcheck_tensor*,
               const kvcheck_attention_params*, kvcheck_tensor*, kvcheck_error* err) {
  err->code = KVCHECK_UNIMPLEMENTED;
  std::snprintf(err->message, KVCHECK_MESSAGE_SIZE, "not today");
  return KVCHECK_UNIMPLEMENTED;
}

const kvcheck_kernel_info kKernel = {"k", "", KVCHECK_FEATURE_CAUSAL, 1u};
const kvcheck_strategy_info kForking = {"s", "", KVCHECK_STRATEGY_FORK, 1u, {0, 0, 0}};

kvcheck_engine KernelOnly() {
  kvcheck_engine e{};
  e.abi_version = KVCHECK_ENGINE_ABI_VERSION;
  e.struct_size = sizeof(kvcheck_engine);
  e.name = "test";
  e.num_kernels = 1;
  e.kernels = &kKernel;
  e.attend = Attend;
  return e;
}

std::string LoadError(const kvcheck_engine& table) {
  absl::StatusOr<std::unique_ptr<PluginEngine>> engine = PluginEngine::FromTable(&table, "t");
  return engine.ok() ? "" : std::string(engine.status().message());
}

TEST(PluginEngineTest, AWellFormedTableLoadsAndErrorsComeBackWithTheirCode) {
  const kvcheck_engine table = KernelOnly();
  absl::StatusOr<std::unique_ptr<PluginEngine>> engine = PluginEngine::FromTable(&table, "t");
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_EQ((*engine)->info().kernels.size(), 1u);
  const Tensor x = *Tensor::Zeros(DType::kF32, {1, 1, 1, 4});
  const absl::StatusOr<Tensor> out = (*engine)->Attend(0, x, x, x, {});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(out.status().message(), HasSubstr("test attend: not today"));
}

TEST(PluginEngineTest, MalformedTablesAreRejectedNamingTheField) {
  EXPECT_THAT(LoadError(*[] {
                static kvcheck_engine t = KernelOnly();
                t.abi_version = 2;
                return &t;
              }()),
              HasSubstr("engine ABI version 2"));
  kvcheck_engine t = KernelOnly();
  t.struct_size = 8;
  EXPECT_THAT(LoadError(t), HasSubstr("struct_size 8"));
  t = KernelOnly();
  t.name = "";
  EXPECT_THAT(LoadError(t), HasSubstr("name is empty"));
  t = KernelOnly();
  t.attend = nullptr;
  EXPECT_THAT(LoadError(t), HasSubstr("attend is NULL"));
  t = KernelOnly();
  t.num_strategies = 1;
  t.strategies = &kForking;
  EXPECT_THAT(LoadError(t), HasSubstr("strategies[0] declares FORK but cache_fork is NULL"));
  t = KernelOnly();
  t.num_kernels = 0;
  EXPECT_THAT(LoadError(t), HasSubstr("nothing to check"));
  EXPECT_THAT(std::string(PluginEngine::FromTable(nullptr, "t").status().message()),
              HasSubstr("returned NULL"));
}

const kvcheck_stepper_info kWindowStepper = {"st", "", KVCHECK_STEPPER_WINDOWED, 1u, 0};
const kvcheck_model_info kModel = {"m", "", KVCHECK_MODEL_RESET, 10, 8, 0};

TEST(PluginEngineTest, StepperAndModelDeclarationsAreChecked) {
  kvcheck_engine t = KernelOnly();
  t.num_steppers = 1;
  t.steppers = &kWindowStepper;
  EXPECT_THAT(LoadError(t), HasSubstr("steppers[0] is WINDOWED but its window < 1"));
  t = KernelOnly();
  t.num_models = 1;
  t.models = &kModel;
  EXPECT_THAT(LoadError(t), HasSubstr("models[0] declares RESET but model_reset is NULL"));
  t = KernelOnly();
  t.num_models = 1;
  t.models = nullptr;
  EXPECT_THAT(LoadError(t), HasSubstr("num_models 1 with models NULL"));
}

TEST(PluginEngineTest, ATableOfTheFirstRevisionHasNoSteppersOrModels) {
  // An engine built before the steppers and models were appended: whatever lies past its
  // struct_size is never read.
  kvcheck_engine t = KernelOnly();
  t.struct_size = offsetof(kvcheck_engine, num_steppers);
  t.num_steppers = 1;  // garbage past the table's end
  t.steppers = nullptr;
  absl::StatusOr<std::unique_ptr<PluginEngine>> engine = PluginEngine::FromTable(&t, "t");
  ASSERT_TRUE(engine.ok()) << engine.status();
  EXPECT_TRUE((*engine)->info().steppers.empty());
  EXPECT_TRUE((*engine)->info().models.empty());
}

// A cache of one slot that every append overwrites in place: the memory of its last view is
// reused at the next call, as the ABI allows.
struct OneSlot {
  float slot_k[2], slot_v[2];
};
OneSlot* Slot(kvcheck_cache* c) { return reinterpret_cast<OneSlot*>(c); }

int32_t OneSlotCreate(int32_t, const kvcheck_cache_config*, kvcheck_cache** out, kvcheck_error*) {
  *out = reinterpret_cast<kvcheck_cache*>(new OneSlot{});
  return KVCHECK_OK;
}

void ShowSlot(OneSlot* c, kvcheck_view* out) {
  for (kvcheck_tensor* t : {&out->k, &out->v}) {
    t->data = t == &out->k ? c->slot_k : c->slot_v;
    t->dtype = KVCHECK_DTYPE_F32;
    t->rank = 4;
    const int64_t shape[4] = {1, 1, 1, 2}, strides[4] = {2, 2, 2, 1};
    std::copy(shape, shape + 4, t->shape);
    std::copy(strides, strides + 4, t->strides);
  }
}

int32_t OneSlotAppend(kvcheck_cache* cache, const kvcheck_tensor* k, const kvcheck_tensor* v,
                      const uint8_t*, kvcheck_view* out, kvcheck_error*) {
  OneSlot* c = Slot(cache);
  for (int d = 0; d < 2; ++d) {
    c->slot_k[d] = static_cast<const float*>(k->data)[d * k->strides[3]];
    c->slot_v[d] = static_cast<const float*>(v->data)[d * v->strides[3]];
  }
  ShowSlot(c, out);
  return KVCHECK_OK;
}

int32_t OneSlotView(kvcheck_cache* c, kvcheck_view* out, kvcheck_error*) {
  ShowSlot(Slot(c), out);
  return KVCHECK_OK;
}

void OneSlotDestroy(kvcheck_cache* c) { delete Slot(c); }

const kvcheck_strategy_info kOneSlot = {"one_slot", "", 0, 1u, {0, 0, 0}};

// The table of an engine with the one strategy `strategy` of OneSlot caches.
kvcheck_engine OneSlotTable(const kvcheck_strategy_info* strategy) {
  kvcheck_engine t{};
  t.abi_version = KVCHECK_ENGINE_ABI_VERSION;
  t.struct_size = sizeof(kvcheck_engine);
  t.name = "one-slot";
  t.num_strategies = 1;
  t.strategies = strategy;
  t.cache_create = OneSlotCreate;
  t.cache_append = OneSlotAppend;
  t.cache_view = OneSlotView;
  t.cache_destroy = OneSlotDestroy;
  return t;
}

TEST(PluginEngineTest, AViewHeldPastTheNextCallKeepsItsValues) {
  kvcheck_engine t = OneSlotTable(&kOneSlot);
  absl::StatusOr<std::unique_ptr<PluginEngine>> engine = PluginEngine::FromTable(&t, "t");
  ASSERT_TRUE(engine.ok()) << engine.status();
  const CacheHandle cache = *(*engine)->CreateCache(0, {});
  const Tensor first = *Tensor::FromFloats(DType::kF32, {1, 1, 1, 2}, {1, 2});
  const Tensor second = *Tensor::FromFloats(DType::kF32, {1, 1, 1, 2}, {3, 4});
  const absl::StatusOr<CacheView> kept = (*engine)->Append(cache, first, first, {});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->k.storage()->borrowed());  // no copy while nothing else happens
  const absl::StatusOr<CacheView> next = (*engine)->Append(cache, second, second, {});
  ASSERT_TRUE(next.ok()) << next.status();
  // The engine overwrote its slot; the view kept from before was detached first.
  EXPECT_FALSE(kept->k.storage()->borrowed());
  EXPECT_EQ(kept->k.ToFloats(), (std::vector<float>{1, 2}));
  EXPECT_EQ(kept->v.ToFloats(), (std::vector<float>{1, 2}));
  EXPECT_EQ(next->k.ToFloats(), (std::vector<float>{3, 4}));
  (*engine)->Destroy(cache);
  EXPECT_EQ(next->k.ToFloats(), (std::vector<float>{3, 4}));  // outlives its cache too
}

// Reset clears the slot (memory a view lent before it may still point at).
void OneSlotReset(kvcheck_cache* c) {
  std::fill_n(Slot(c)->slot_k, 2, 0.0f);
  std::fill_n(Slot(c)->slot_v, 2, 0.0f);
}

TEST(PluginEngineTest, AViewHeldPastAResetKeepsItsValues) {
  const kvcheck_strategy_info strategy = {"one_slot", "", KVCHECK_STRATEGY_RESET, 1u, {0, 0, 0}};
  kvcheck_engine t = OneSlotTable(&strategy);
  t.cache_reset = OneSlotReset;
  absl::StatusOr<std::unique_ptr<PluginEngine>> engine = PluginEngine::FromTable(&t, "t");
  ASSERT_TRUE(engine.ok()) << engine.status();
  const CacheHandle cache = *(*engine)->CreateCache(0, {});
  const Tensor first = *Tensor::FromFloats(DType::kF32, {1, 1, 1, 2}, {1, 2});
  const absl::StatusOr<CacheView> appended = (*engine)->Append(cache, first, first, {});
  ASSERT_TRUE(appended.ok()) << appended.status();
  const absl::StatusOr<CacheView> viewed = (*engine)->View(cache, KvShape{1, 1, 2, DType::kF32});
  ASSERT_TRUE(viewed.ok()) << viewed.status();
  ASSERT_TRUE((*engine)->Reset(cache).ok());
  // The reset cleared the engine's slot; both views lent before it were detached first.
  for (const CacheView* view : {&*appended, &*viewed}) {
    EXPECT_FALSE(view->k.storage()->borrowed());
    EXPECT_EQ(view->k.ToFloats(), (std::vector<float>{1, 2}));
    EXPECT_EQ(view->v.ToFloats(), (std::vector<float>{1, 2}));
  }
  (*engine)->Destroy(cache);
}

// Returns its slot as f16 although the cache holds f32: a malformed view.
int32_t MislabelledAppend(kvcheck_cache* cache, const kvcheck_tensor* k, const kvcheck_tensor* v,
                          const uint8_t* active, kvcheck_view* out, kvcheck_error* err) {
  const int32_t code = OneSlotAppend(cache, k, v, active, out, err);
  out->k.dtype = KVCHECK_DTYPE_F16;
  return code;
}

TEST(PluginEngineTest, AMalformedViewIsNamedByEngineOperationAndTensor) {
  kvcheck_engine t = OneSlotTable(&kOneSlot);
  t.cache_append = MislabelledAppend;
  absl::StatusOr<std::unique_ptr<PluginEngine>> engine = PluginEngine::FromTable(&t, "t");
  ASSERT_TRUE(engine.ok()) << engine.status();
  const CacheHandle cache = *(*engine)->CreateCache(0, {});
  const Tensor x = *Tensor::FromFloats(DType::kF32, {1, 1, 1, 2}, {1, 2});
  const absl::StatusOr<CacheView> view = (*engine)->Append(cache, x, x, {});
  EXPECT_EQ(view.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(view.status().message(), HasSubstr("one-slot cache_append returned k: dtype f16"));
  (*engine)->Destroy(cache);
}

int32_t CreateNothing(int32_t, const kvcheck_cache_config*, kvcheck_cache** out, kvcheck_error*) {
  *out = nullptr;
  return KVCHECK_OK;
}

int32_t CreateNoModel(int32_t, kvcheck_model** out, kvcheck_error* err) {
  *out = nullptr;
  err->code = KVCHECK_RESOURCE_EXHAUSTED;
  std::snprintf(err->message, KVCHECK_MESSAGE_SIZE, "no room");
  return KVCHECK_RESOURCE_EXHAUSTED;
}

TEST(PluginEngineTest, ACreateThatReturnsNoObjectIsAnError) {
  kvcheck_engine t{};
  t.abi_version = KVCHECK_ENGINE_ABI_VERSION;
  t.struct_size = sizeof(kvcheck_engine);
  t.name = "empty-handed";
  t.num_strategies = 1;
  t.strategies = &kOneSlot;
  t.cache_create = CreateNothing;
  t.cache_append = OneSlotAppend;
  t.cache_view = OneSlotView;
  t.cache_destroy = OneSlotDestroy;
  t.num_models = 1;
  t.models = &kModel;
  t.model_create = CreateNoModel;
  t.model_forward = [](kvcheck_model*, const int64_t*, int64_t, int64_t, int32_t, float*,
                       kvcheck_error*) { return int32_t{KVCHECK_OK}; };
  t.model_reset = [](kvcheck_model*) {};
  t.model_destroy = [](kvcheck_model*) {};
  absl::StatusOr<std::unique_ptr<PluginEngine>> engine = PluginEngine::FromTable(&t, "t");
  ASSERT_TRUE(engine.ok()) << engine.status();
  const absl::StatusOr<CacheHandle> cache = (*engine)->CreateCache(0, {});
  EXPECT_EQ(cache.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(cache.status().message(), HasSubstr("empty-handed cache_create returned OK and NULL"));
  const absl::StatusOr<SessionHandle> model = (*engine)->CreateModel(0);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(model.status().message(), HasSubstr("empty-handed model_create: no room"));
}

TEST(PluginEngineTest, LoadNamesAMissingLibraryOrEntryPoint) {
  EXPECT_THAT(std::string(PluginEngine::Load("/nonexistent/libx.so").status().message()),
              HasSubstr("cannot load engine library /nonexistent/libx.so"));
  EXPECT_THAT(std::string(PluginEngine::Load("libm.so.6").status().message()),
              HasSubstr("does not export kvcheck_engine_v1"));
}

}  // namespace
}  // namespace kvcheck::engine
