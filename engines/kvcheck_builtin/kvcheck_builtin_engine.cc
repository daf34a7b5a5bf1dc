// kvcheck's own engine as a plug-in (kvcheck_engine.h): every strategy of the cache registry
// and every kernel of the attention registry behind the C ABI. It exists to prove the
// transports: every property must give the same verdict on the built-in engine in process,
// through this plug-in, and through the process protocol (engine_transport_test). It is also
// a complete C++ example of a plug-in.
//
// KVCHECK_BUILTIN_ENGINE_DEFECTS=<name>[,<name>...] adds those defects of the catalogue
// (defects/defect_registry.h) as further strategies or kernels, under their defect names, so
// that the verdict comparison covers failures too.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "defects/defect_registry.h"
#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"
#include "src/engine/foreign_tensor.h"
#include "src/engine/kvcheck_engine.h"

struct kvcheck_cache {
  std::unique_ptr<kvcheck::KvCache> cache;
  kvcheck::CacheView shown;  // the last view handed out: valid until the next call
};

namespace kvcheck::engine {
namespace {

using KernelCall = std::function<absl::StatusOr<Tensor>(const Tensor&, const Tensor&,
                                                        const Tensor&, const AttentionParams&)>;

struct Tables {
  std::vector<CacheStrategy> strategies;
  std::vector<kvcheck_strategy_info> strategy_infos;
  std::vector<KernelCall> kernels;
  std::vector<std::string> kernel_names;
  std::vector<kvcheck_kernel_info> kernel_infos;
  kvcheck_engine engine{};
};

uint32_t FlagsOf(const CacheStrategy& s) {
  uint32_t flags = KVCHECK_STRATEGY_FORK | KVCHECK_STRATEGY_RESET | KVCHECK_STRATEGY_STATS;
  if (s.honours_max_bytes) flags |= KVCHECK_STRATEGY_MAX_BYTES;
  if (s.windowed) flags |= KVCHECK_STRATEGY_WINDOWED;
  if (s.per_row) flags |= KVCHECK_STRATEGY_PER_ROW;
  if (s.amortized_growth) flags |= KVCHECK_STRATEGY_AMORTIZED_GROWTH;
  return flags;
}

int32_t Fail(const absl::Status& status, kvcheck_error* err) {
  err->code = static_cast<int32_t>(status.code());
  std::snprintf(err->message, KVCHECK_MESSAGE_SIZE, "%s", std::string(status.message()).c_str());
  return err->code;
}

void Show(kvcheck_cache* c, const CacheView& view, kvcheck_view* out) {
  c->shown = view;
  out->k = Describe(c->shown.k);
  out->v = Describe(c->shown.v);
  out->positions = c->shown.positions.empty() ? nullptr : c->shown.positions.data();
}

Tables& TheTables();

int32_t CacheCreate(int32_t strategy, const kvcheck_cache_config* config, kvcheck_cache** out,
                    kvcheck_error* err) {
  Tables& t = TheTables();
  if (strategy < 0 || strategy >= static_cast<int32_t>(t.strategies.size())) {
    return Fail(absl::NotFoundError("no strategy of that index"), err);
  }
  absl::StatusOr<std::unique_ptr<KvCache>> cache = t.strategies[strategy].create(
      {config->initial_capacity, config->window, config->max_bytes});
  if (!cache.ok()) return Fail(cache.status(), err);
  *out = new kvcheck_cache{*std::move(cache), {}};
  return KVCHECK_OK;
}

int32_t CacheAppend(kvcheck_cache* c, const kvcheck_tensor* k, const kvcheck_tensor* v,
                    const uint8_t* active, kvcheck_view* out, kvcheck_error* err) {
  // Views of the caller's memory with its layout (a strategy that mishandles transposed
  // input must fail here as it does in process), valid for this call only.
  absl::StatusOr<Tensor> kt = BorrowForeign(*k, "k");
  if (!kt.ok()) return Fail(kt.status(), err);
  absl::StatusOr<Tensor> vt = BorrowForeign(*v, "v");
  if (!vt.ok()) return Fail(vt.status(), err);
  std::unique_ptr<bool[]> flags;
  absl::Span<const bool> rows;
  if (active != nullptr) {
    flags.reset(new bool[kt->dim(0)]);
    for (int64_t b = 0; b < kt->dim(0); ++b) flags[b] = active[b] != 0;
    rows = absl::Span<const bool>(flags.get(), kt->dim(0));
  }
  absl::StatusOr<CacheView> view = c->cache->AppendActive(*kt, *vt, rows);
  // A strategy that keeps its input (a concatenation holding the chunk, or a view that is the
  // chunk itself) holds another reference to the borrowed storage: that one is copied now,
  // before the caller's memory goes away; the others never are.
  for (const Tensor* input : {&*kt, &*vt}) {
    if (input->storage().use_count() > 1) {
      if (absl::Status detached = input->storage()->Detach(); !detached.ok()) {
        return Fail(detached, err);
      }
    }
  }
  if (!view.ok()) return Fail(view.status(), err);
  Show(c, *view, out);
  return KVCHECK_OK;
}

int32_t CacheView(kvcheck_cache* c, kvcheck_view* out, kvcheck_error* err) {
  absl::StatusOr<kvcheck::CacheView> view = c->cache->View();
  if (!view.ok()) return Fail(view.status(), err);
  Show(c, *view, out);
  return KVCHECK_OK;
}

int32_t CacheFork(kvcheck_cache* c, kvcheck_cache** out, kvcheck_error*) {
  *out = new kvcheck_cache{c->cache->Fork(), {}};
  return KVCHECK_OK;
}

void CacheReset(kvcheck_cache* c) {
  c->shown = {};
  c->cache->Reset();
}

void CacheStats(kvcheck_cache* c, kvcheck_cache_stats* out) {
  const CacheCounters& counters = c->cache->counters();
  out->capacity = c->cache->capacity();
  out->bytes_allocated = counters.bytes_allocated;
  out->bytes_held = counters.bytes_held;
  out->bytes_growth_copied = counters.bytes_growth_copied;
  out->bytes_other_copied = counters.bytes_other_copied;
}

void CacheDestroy(kvcheck_cache* c) { delete c; }

int32_t Attend(int32_t kernel, const kvcheck_tensor* q, const kvcheck_tensor* k,
               const kvcheck_tensor* v, const kvcheck_attention_params* p, kvcheck_tensor* out,
               kvcheck_error* err) {
  Tables& t = TheTables();
  if (kernel < 0 || kernel >= static_cast<int32_t>(t.kernels.size())) {
    return Fail(absl::NotFoundError("no kernel of that index"), err);
  }
  // Kernels never keep their inputs: the caller's memory is used in place.
  absl::StatusOr<Tensor> qt = BorrowForeign(*q, "q");
  absl::StatusOr<Tensor> kt = BorrowForeign(*k, "k");
  absl::StatusOr<Tensor> vt = BorrowForeign(*v, "v");
  for (const absl::StatusOr<Tensor>* in : {&qt, &kt, &vt}) {
    if (!in->ok()) return Fail(in->status(), err);
  }
  AttentionParams params;
  if (p->has_scale) params.scale = p->scale;
  params.softcap = p->softcap;
  params.causal = p->causal != 0;
  params.window = p->window;
  const int64_t B = qt->dim(0), H = qt->dim(1), Sq = qt->dim(2), Skv = kt->dim(2);
  if (p->alibi_slopes != nullptr) params.alibi_slopes.assign(p->alibi_slopes, p->alibi_slopes + H);
  if (p->mask != nullptr) {
    absl::StatusOr<Tensor> mask = BorrowForeign(*p->mask, "mask");
    if (!mask.ok()) return Fail(mask.status(), err);
    params.mask = *mask;
  }
  if (p->q_positions != nullptr) params.q_positions.assign(p->q_positions, p->q_positions + B * Sq);
  if (p->kv_positions != nullptr) {
    params.kv_positions.assign(p->kv_positions, p->kv_positions + B * Skv);
  }
  absl::StatusOr<Tensor> result = t.kernels[kernel](*qt, *kt, *vt, params);
  if (!result.ok()) return Fail(result.status(), err);
  if (absl::Status written = WriteForeign(*result, *out, "out"); !written.ok()) {
    return Fail(written, err);
  }
  return KVCHECK_OK;
}

Tables& TheTables() {
  static Tables* const tables = [] {
    auto* t = new Tables;
    for (const CacheStrategy& s : CacheStrategies()) t->strategies.push_back(s);
    for (const AttentionKernel& kernel : AttentionKernels()) {
      // The emulated (Metal) kernels stay out: their call budget (within_budget) has no place
      // in the engine ABI, and through it every law would run them at full size.
      if (kernel.emulated()) continue;
      t->kernel_names.push_back(kernel.name);
      t->kernels.push_back([&kernel](const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionParams& params) {
        return kernel.run(q, k, v, params, 1);
      });
    }
    if (const char* names = std::getenv("KVCHECK_BUILTIN_ENGINE_DEFECTS")) {
      for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipEmpty())) {
        const defects::Defect* defect = defects::FindDefect(std::string(name));
        if (defect == nullptr) continue;  // an unknown name adds nothing
        if (defect->kind == defects::DefectKind::kCache) {
          t->strategies.push_back(defect->strategy);
          t->strategies.back().honours_max_bytes = false;  // models of engines without a budget
        }
        if (defect->kind == defects::DefectKind::kAttention) {
          t->kernel_names.push_back(defect->name);
          t->kernels.push_back(defect->kernel);
        }
      }
    }
    for (const CacheStrategy& s : t->strategies) {
      t->strategy_infos.push_back({s.name, s.summary, FlagsOf(s), 0x7u,
                                   {s.default_config.initial_capacity, s.default_config.window,
                                    s.default_config.max_bytes}});
    }
    for (const std::string& name : t->kernel_names) {
      t->kernel_infos.push_back({name.c_str(), "kvcheck's kernel of that name",
                                 (1u << 8) - 1, 0x7u});
    }
    kvcheck_engine& e = t->engine;
    e.abi_version = KVCHECK_ENGINE_ABI_VERSION;
    e.struct_size = sizeof(kvcheck_engine);
    e.name = "kvcheck-builtin";
    e.num_strategies = static_cast<int32_t>(t->strategy_infos.size());
    e.strategies = t->strategy_infos.data();
    e.num_kernels = static_cast<int32_t>(t->kernel_infos.size());
    e.kernels = t->kernel_infos.data();
    e.cache_create = CacheCreate;
    e.cache_append = CacheAppend;
    e.cache_view = CacheView;
    e.cache_fork = CacheFork;
    e.cache_reset = CacheReset;
    e.cache_stats = CacheStats;
    e.cache_destroy = CacheDestroy;
    e.attend = Attend;
    return t;
  }();
  return *tables;
}

}  // namespace
}  // namespace kvcheck::engine

extern "C" const kvcheck_engine* kvcheck_engine_v1(void) {
  return &kvcheck::engine::TheTables().engine;
}
