#include "src/engine/plugin_engine.h"

#include <dlfcn.h>

#include <cstddef>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/engine/foreign_tensor.h"

namespace kvcheck::engine {
namespace {

// The table size of ABI version 1: every field up to `attend`.
constexpr size_t kMinTableSize = offsetof(kvcheck_engine, attend) + sizeof(void*);

// Revision 2 appended the steppers and models: a table that ends before them has none.
constexpr size_t kRevision2TableSize = offsetof(kvcheck_engine, model_destroy) + sizeof(void*);

constexpr uint32_t kKnownStrategyFlags = (1u << 7) - 1;
constexpr uint32_t kKnownFeatures = (1u << 8) - 1;
constexpr uint32_t kKnownStepperFlags = (1u << 3) - 1;
constexpr uint32_t kKnownModelFlags = (1u << 2) - 1;

// An engine's error as a Status: its code (unknown codes become kInternal, saying so) and
// message, prefixed by the engine and the operation.
absl::Status EngineError(const std::string& engine, const char* operation, int32_t code,
                         kvcheck_error& err) {
  err.message[KVCHECK_MESSAGE_SIZE - 1] = '\0';
  std::string message =
      absl::StrCat(engine, " ", operation, ": ", err.message[0] ? err.message : "(no message)");
  switch (code) {
    case KVCHECK_INVALID_ARGUMENT:
    case KVCHECK_NOT_FOUND:
    case KVCHECK_RESOURCE_EXHAUSTED:
    case KVCHECK_FAILED_PRECONDITION:
    case KVCHECK_OUT_OF_RANGE:
    case KVCHECK_UNIMPLEMENTED:
    case KVCHECK_INTERNAL:
      return absl::Status(static_cast<absl::StatusCode>(code), message);
    default:
      return absl::InternalError(absl::StrCat(message, " (unknown status code ", code, ")"));
  }
}

// The handle of an object a create or fork call made: the engine's error, or kInternal when it
// reported OK without an object.
absl::StatusOr<uint64_t> MadeObject(const std::string& engine, const char* operation,
                                    int32_t code, kvcheck_error& err, const void* made) {
  if (code != KVCHECK_OK) return EngineError(engine, operation, code, err);
  if (made == nullptr) {
    return absl::InternalError(absl::StrCat(engine, " ", operation, " returned OK and NULL"));
  }
  return reinterpret_cast<uint64_t>(made);
}

kvcheck_cache* AsCache(CacheHandle handle) { return reinterpret_cast<kvcheck_cache*>(handle); }
kvcheck_stepper* AsStepper(SessionHandle handle) {
  return reinterpret_cast<kvcheck_stepper*>(handle);
}
kvcheck_model* AsModel(SessionHandle handle) { return reinterpret_cast<kvcheck_model*>(handle); }

}  // namespace

absl::StatusOr<std::unique_ptr<PluginEngine>> PluginEngine::Load(const std::string& path) {
  // RTLD_LOCAL: the engine's symbols stay its own; RTLD_NOW: a missing symbol is an error here,
  // not a crash in the middle of a case.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot load engine library ", path, ": ", dlerror()));
  }
  void* entry = dlsym(library, KVCHECK_ENGINE_ENTRY_NAME);
  if (entry == nullptr) {
    dlclose(library);
    return absl::NotFoundError(absl::StrCat("engine library ", path, " does not export ",
                                            KVCHECK_ENGINE_ENTRY_NAME, " (kvcheck_engine.h)"));
  }
  const kvcheck_engine* table = reinterpret_cast<kvcheck_engine_entry>(entry)();
  // The dlopen handle is never closed (see the destructor).
  std::unique_ptr<PluginEngine> engine(new PluginEngine(table, absl::StrCat("plug-in ", path)));
  KV_RETURN_IF_ERROR(engine->ReadTable());
  return engine;
}

absl::StatusOr<std::unique_ptr<PluginEngine>> PluginEngine::FromTable(const kvcheck_engine* table,
                                                                      std::string description) {
  std::unique_ptr<PluginEngine> engine(new PluginEngine(table, std::move(description)));
  KV_RETURN_IF_ERROR(engine->ReadTable());
  return engine;
}

// The library stays loaded for the rest of the process: an engine may keep static tables
// (its kvcheck_engine table among them) that outlive any one PluginEngine, and unloading
// would turn them into leaks (LeakSanitizer) or dangling pointers for nothing a checker needs.
PluginEngine::~PluginEngine() = default;

absl::Status PluginEngine::ReadTable() {
  const std::string where = description_;
  const auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": malformed engine table: ", what));
  };
  if (table_ == nullptr) return bad("the entry point returned NULL");
  if (table_->abi_version != KVCHECK_ENGINE_ABI_VERSION) {
    return absl::FailedPreconditionError(
        absl::StrCat(where, ": engine ABI version ", table_->abi_version, ", kvcheck speaks ",
                     KVCHECK_ENGINE_ABI_VERSION));
  }
  if (table_->struct_size < kMinTableSize) {
    return bad(absl::StrCat("struct_size ", table_->struct_size, " < ", kMinTableSize));
  }
  if (table_->name == nullptr || table_->name[0] == '\0') return bad("name is empty");
  info_.name = table_->name;
  append_names_ = {info_.name + " cache_append returned k",
                   info_.name + " cache_append returned v"};
  view_names_ = {info_.name + " cache_view returned k", info_.name + " cache_view returned v"};
  if (table_->num_strategies < 0 || (table_->num_strategies > 0 && table_->strategies == nullptr)) {
    return bad(absl::StrCat("num_strategies ", table_->num_strategies, " with strategies ",
                            table_->strategies == nullptr ? "NULL" : "set"));
  }
  if (table_->num_kernels < 0 || (table_->num_kernels > 0 && table_->kernels == nullptr)) {
    return bad(absl::StrCat("num_kernels ", table_->num_kernels, " with kernels ",
                            table_->kernels == nullptr ? "NULL" : "set"));
  }
  const bool revision2 = table_->struct_size >= kRevision2TableSize;
  const int num_steppers = revision2 ? table_->num_steppers : 0;
  const int num_models = revision2 ? table_->num_models : 0;
  if (table_->num_strategies == 0 && table_->num_kernels == 0 && num_steppers == 0 &&
      num_models == 0) {
    return bad("no strategies, kernels, steppers or models: nothing to check");
  }
  for (int i = 0; i < table_->num_strategies; ++i) {
    const kvcheck_strategy_info& s = table_->strategies[i];
    const std::string at = absl::StrCat("strategies[", i, "]");
    if (s.name == nullptr || s.name[0] == '\0') return bad(at + ".name is empty");
    if ((s.flags & ~kKnownStrategyFlags) != 0) {
      return bad(absl::StrCat(at, ".flags has unknown bits ", s.flags & ~kKnownStrategyFlags));
    }
    if ((s.dtypes & 7u) == 0 || (s.dtypes & ~7u) != 0) {
      return bad(absl::StrCat(at, ".dtypes ", s.dtypes, " (bits 1 << KVCHECK_DTYPE_*)"));
    }
    if ((s.flags & KVCHECK_STRATEGY_WINDOWED) && s.default_config.window < 1) {
      return bad(at + " is WINDOWED but default_config.window < 1");
    }
    if ((s.flags & KVCHECK_STRATEGY_FORK) && table_->cache_fork == nullptr) {
      return bad(at + " declares FORK but cache_fork is NULL");
    }
    if ((s.flags & KVCHECK_STRATEGY_RESET) && table_->cache_reset == nullptr) {
      return bad(at + " declares RESET but cache_reset is NULL");
    }
    if ((s.flags & KVCHECK_STRATEGY_STATS) && table_->cache_stats == nullptr) {
      return bad(at + " declares STATS but cache_stats is NULL");
    }
    info_.strategies.push_back(
        {s.name, s.summary != nullptr ? s.summary : "", s.flags, s.dtypes,
         {s.default_config.initial_capacity, s.default_config.window, s.default_config.max_bytes}});
  }
  if (table_->num_strategies > 0 &&
      (table_->cache_create == nullptr || table_->cache_append == nullptr ||
       table_->cache_view == nullptr || table_->cache_destroy == nullptr)) {
    return bad("strategies are declared but cache_create, cache_append, cache_view or "
               "cache_destroy is NULL");
  }
  for (int i = 0; i < table_->num_kernels; ++i) {
    const kvcheck_kernel_info& k = table_->kernels[i];
    const std::string at = absl::StrCat("kernels[", i, "]");
    if (k.name == nullptr || k.name[0] == '\0') return bad(at + ".name is empty");
    if ((k.features & ~kKnownFeatures) != 0) {
      return bad(absl::StrCat(at, ".features has unknown bits ", k.features & ~kKnownFeatures));
    }
    if ((k.dtypes & 7u) == 0 || (k.dtypes & ~7u) != 0) {
      return bad(absl::StrCat(at, ".dtypes ", k.dtypes, " (bits 1 << KVCHECK_DTYPE_*)"));
    }
    info_.kernels.push_back({k.name, k.summary != nullptr ? k.summary : "", k.features, k.dtypes});
  }
  if (table_->num_kernels > 0 && table_->attend == nullptr) {
    return bad("kernels are declared but attend is NULL");
  }
  if (num_steppers < 0 || (num_steppers > 0 && table_->steppers == nullptr)) {
    return bad(absl::StrCat("num_steppers ", num_steppers, " with steppers NULL"));
  }
  for (int i = 0; i < num_steppers; ++i) {
    const kvcheck_stepper_info& s = table_->steppers[i];
    const std::string at = absl::StrCat("steppers[", i, "]");
    if (s.name == nullptr || s.name[0] == '\0') return bad(at + ".name is empty");
    if ((s.flags & ~kKnownStepperFlags) != 0) {
      return bad(absl::StrCat(at, ".flags has unknown bits ", s.flags & ~kKnownStepperFlags));
    }
    if ((s.dtypes & 7u) == 0 || (s.dtypes & ~7u) != 0) {
      return bad(absl::StrCat(at, ".dtypes ", s.dtypes, " (bits 1 << KVCHECK_DTYPE_*)"));
    }
    if ((s.flags & KVCHECK_STEPPER_WINDOWED) && s.window < 1) {
      return bad(at + " is WINDOWED but its window < 1");
    }
    if ((s.flags & KVCHECK_STEPPER_RESET) && table_->stepper_reset == nullptr) {
      return bad(at + " declares RESET but stepper_reset is NULL");
    }
    info_.steppers.push_back(
        {s.name, s.summary != nullptr ? s.summary : "", s.flags, s.dtypes, s.window});
  }
  if (num_steppers > 0 && (table_->stepper_create == nullptr || table_->stepper_step == nullptr ||
                           table_->stepper_destroy == nullptr)) {
    return bad("steppers are declared but stepper_create, stepper_step or stepper_destroy is "
               "NULL");
  }
  if (num_models < 0 || (num_models > 0 && table_->models == nullptr)) {
    return bad(absl::StrCat("num_models ", num_models, " with models NULL"));
  }
  for (int i = 0; i < num_models; ++i) {
    const kvcheck_model_info& m = table_->models[i];
    const std::string at = absl::StrCat("models[", i, "]");
    if (m.name == nullptr || m.name[0] == '\0') return bad(at + ".name is empty");
    if ((m.flags & ~kKnownModelFlags) != 0) {
      return bad(absl::StrCat(at, ".flags has unknown bits ", m.flags & ~kKnownModelFlags));
    }
    if (m.vocab_size < 1 || m.max_tokens < 1) {
      return bad(absl::StrCat(at, ": vocab_size ", m.vocab_size, " and max_tokens ",
                              m.max_tokens, " must be >= 1"));
    }
    if (!(m.tolerance >= 0)) return bad(at + ".tolerance is not a number >= 0");
    if ((m.flags & KVCHECK_MODEL_RESET) && table_->model_reset == nullptr) {
      return bad(at + " declares RESET but model_reset is NULL");
    }
    ModelInfo model;
    model.name = m.name;
    model.summary = m.summary != nullptr ? m.summary : "";
    model.flags = m.flags;
    model.vocab_size = m.vocab_size;
    model.max_tokens = m.max_tokens;
    if (m.tolerance > 0) model.tolerance = m.tolerance;
    info_.models.push_back(std::move(model));
  }
  if (num_models > 0 && (table_->model_create == nullptr || table_->model_forward == nullptr ||
                         table_->model_destroy == nullptr)) {
    return bad("models are declared but model_create, model_forward or model_destroy is NULL");
  }
  return absl::OkStatus();
}

absl::StatusOr<CacheHandle> PluginEngine::CreateCache(int strategy, const CacheConfig& config) {
  const kvcheck_cache_config c{config.initial_capacity, config.window, config.max_bytes};
  kvcheck_cache* cache = nullptr;
  kvcheck_error err{};
  const int32_t code = table_->cache_create(strategy, &c, &cache, &err);
  return MadeObject(info_.name, "cache_create", code, err, cache);
}

absl::StatusOr<CacheView> PluginEngine::LendView(CacheHandle cache, const kvcheck_view& view,
                                                 const KvShape& shape, const ViewNames& names) {
  CacheView out;
  KV_ASSIGN_OR_RETURN(out.k, BorrowReturned(view.k, shape.dtype,
                                            {shape.batch, shape.num_kv_heads, -1, shape.head_dim},
                                            names.k));
  const int64_t length = out.k.dim(2);
  KV_ASSIGN_OR_RETURN(out.v, BorrowReturned(view.v, shape.dtype,
                                            {shape.batch, shape.num_kv_heads, length, shape.head_dim},
                                            names.v));
  if (view.positions != nullptr) {
    out.positions.assign(view.positions, view.positions + shape.batch * length);
  }
  std::vector<std::weak_ptr<Storage>>& lent = lent_[cache];
  lent.push_back(out.k.storage());
  lent.push_back(out.v.storage());
  return out;
}

absl::Status PluginEngine::Reclaim(CacheHandle cache) {
  const auto it = lent_.find(cache);
  if (it == lent_.end()) return absl::OkStatus();
  for (const std::weak_ptr<Storage>& weak : it->second) {
    // Only views someone still holds are copied; the rest were never copied at all.
    if (const std::shared_ptr<Storage> storage = weak.lock()) {
      KV_RETURN_IF_ERROR(storage->Detach());
    }
  }
  it->second.clear();  // keeps its capacity: the next view of this cache allocates nothing
  return absl::OkStatus();
}

absl::StatusOr<CacheView> PluginEngine::Append(CacheHandle cache, const Tensor& k, const Tensor& v,
                                               absl::Span<const bool> active) {
  KV_RETURN_IF_ERROR(Reclaim(cache));
  const kvcheck_tensor kt = Describe(k), vt = Describe(v);
  std::vector<uint8_t> flags(active.begin(), active.end());
  kvcheck_view view{};
  kvcheck_error err{};
  const int32_t code = table_->cache_append(AsCache(cache), &kt, &vt,
                                            active.empty() ? nullptr : flags.data(), &view, &err);
  if (code != KVCHECK_OK) return EngineError(info_.name, "cache_append", code, err);
  return LendView(cache, view, {k.dim(0), k.dim(1), k.dim(3), k.dtype()}, append_names_);
}

absl::StatusOr<CacheView> PluginEngine::View(CacheHandle cache, const KvShape& shape) {
  KV_RETURN_IF_ERROR(Reclaim(cache));
  kvcheck_view view{};
  kvcheck_error err{};
  const int32_t code = table_->cache_view(AsCache(cache), &view, &err);
  if (code != KVCHECK_OK) return EngineError(info_.name, "cache_view", code, err);
  return LendView(cache, view, shape, view_names_);
}

absl::StatusOr<CacheHandle> PluginEngine::Fork(CacheHandle cache) {
  if (table_->cache_fork == nullptr) {
    return absl::UnimplementedError(absl::StrCat(info_.name, " has no cache_fork"));
  }
  KV_RETURN_IF_ERROR(Reclaim(cache));
  kvcheck_cache* fork = nullptr;
  kvcheck_error err{};
  const int32_t code = table_->cache_fork(AsCache(cache), &fork, &err);
  return MadeObject(info_.name, "cache_fork", code, err, fork);
}

absl::Status PluginEngine::Reset(CacheHandle cache) {
  if (table_->cache_reset == nullptr) {
    return absl::UnimplementedError(absl::StrCat(info_.name, " has no cache_reset"));
  }
  KV_RETURN_IF_ERROR(Reclaim(cache));
  table_->cache_reset(AsCache(cache));
  return absl::OkStatus();
}

absl::StatusOr<CacheStats> PluginEngine::Stats(CacheHandle cache) {
  if (table_->cache_stats == nullptr) {
    return absl::UnimplementedError(absl::StrCat(info_.name, " has no cache_stats"));
  }
  KV_RETURN_IF_ERROR(Reclaim(cache));
  kvcheck_cache_stats s{};
  table_->cache_stats(AsCache(cache), &s);
  CacheStats stats;
  stats.capacity = s.capacity;
  stats.counters.bytes_allocated = s.bytes_allocated;
  stats.counters.bytes_held = s.bytes_held;
  stats.counters.bytes_growth_copied = s.bytes_growth_copied;
  stats.counters.bytes_other_copied = s.bytes_other_copied;
  return stats;
}

void PluginEngine::Destroy(CacheHandle cache) {
  // A view still held after its cache is gone keeps its values, or (out of memory for the
  // copy) would dangle: then the cache is leaked rather than freed under it.
  if (!Reclaim(cache).ok()) return;
  lent_.erase(cache);
  table_->cache_destroy(AsCache(cache));
}

absl::StatusOr<Tensor> PluginEngine::Attend(int kernel, const Tensor& q, const Tensor& k,
                                            const Tensor& v, const AttentionParams& params) {
  const kvcheck_tensor qt = Describe(q), kt = Describe(k), vt = Describe(v);
  kvcheck_tensor mask{};
  kvcheck_attention_params p{};
  p.has_scale = params.scale.has_value() ? 1 : 0;
  p.scale = params.scale.value_or(0.0f);
  p.softcap = params.softcap;
  p.causal = params.causal ? 1 : 0;
  p.window = params.window;
  p.alibi_slopes = params.alibi_slopes.empty() ? nullptr : params.alibi_slopes.data();
  if (params.mask.has_value()) {
    mask = Describe(*params.mask);
    p.mask = &mask;
  }
  p.q_positions = params.q_positions.empty() ? nullptr : params.q_positions.data();
  p.kv_positions = params.kv_positions.empty() ? nullptr : params.kv_positions.data();
  // NaN-filled: an element the kernel never writes shows as NaN, not as a plausible 0.
  KV_ASSIGN_OR_RETURN(Tensor out,
                      Tensor::Filled(q.dtype(), {q.dim(0), q.dim(1), q.dim(2), v.dim(3)}, NAN));
  kvcheck_tensor ot = Describe(out);
  kvcheck_error err{};
  const int32_t code = table_->attend(kernel, &qt, &kt, &vt, &p, &ot, &err);
  if (code != KVCHECK_OK) return EngineError(info_.name, "attend", code, err);
  return out;
}

// ---- Steppers -------------------------------------------------------------------------------

absl::StatusOr<SessionHandle> PluginEngine::CreateStepper(int stepper, int64_t window) {
  kvcheck_stepper* out = nullptr;
  kvcheck_error err{};
  const int32_t code = table_->stepper_create(stepper, window, &out, &err);
  return MadeObject(info_.name, "stepper_create", code, err, out);
}

absl::StatusOr<Tensor> PluginEngine::Step(SessionHandle stepper, const Tensor& q,
                                          const Tensor& k_new, const Tensor& v_new) {
  const kvcheck_tensor qt = Describe(q), kt = Describe(k_new), vt = Describe(v_new);
  // NaN-filled, as for attend: an element the step never writes shows.
  KV_ASSIGN_OR_RETURN(Tensor out, Tensor::Filled(q.dtype(), q.shape(), NAN));
  kvcheck_tensor ot = Describe(out);
  kvcheck_error err{};
  const int32_t code = table_->stepper_step(AsStepper(stepper), &qt, &kt, &vt, &ot, &err);
  if (code != KVCHECK_OK) return EngineError(info_.name, "stepper_step", code, err);
  return out;
}

absl::Status PluginEngine::ResetStepper(SessionHandle stepper) {
  if (table_->stepper_reset == nullptr) {
    return absl::UnimplementedError(absl::StrCat(info_.name, " has no stepper_reset"));
  }
  table_->stepper_reset(AsStepper(stepper));
  return absl::OkStatus();
}

void PluginEngine::DestroyStepper(SessionHandle stepper) {
  table_->stepper_destroy(AsStepper(stepper));
}

// ---- Models ---------------------------------------------------------------------------------

absl::StatusOr<SessionHandle> PluginEngine::CreateModel(int model) {
  kvcheck_model* out = nullptr;
  kvcheck_error err{};
  const int32_t code = table_->model_create(model, &out, &err);
  KV_ASSIGN_OR_RETURN(const SessionHandle handle,
                      MadeObject(info_.name, "model_create", code, err, out));
  models_[handle] = model;
  return handle;
}

absl::StatusOr<std::vector<float>> PluginEngine::Forward(SessionHandle model,
                                                         absl::Span<const int64_t> tokens,
                                                         int64_t batch, int64_t seq,
                                                         bool use_cache) {
  const auto it = models_.find(model);
  if (it == models_.end()) return absl::NotFoundError("Forward: no such model session");
  const int64_t vocab = info_.models[it->second].vocab_size;
  std::vector<float> logits(static_cast<size_t>(batch * seq * vocab), NAN);
  kvcheck_error err{};
  const int32_t code = table_->model_forward(AsModel(model), tokens.data(), batch, seq,
                                             use_cache ? 1 : 0, logits.data(), &err);
  if (code != KVCHECK_OK) return EngineError(info_.name, "model_forward", code, err);
  return logits;
}

absl::Status PluginEngine::ResetModel(SessionHandle model) {
  if (table_->model_reset == nullptr) {
    return absl::UnimplementedError(absl::StrCat(info_.name, " has no model_reset"));
  }
  table_->model_reset(AsModel(model));
  return absl::OkStatus();
}

void PluginEngine::DestroyModel(SessionHandle model) {
  models_.erase(model);
  table_->model_destroy(AsModel(model));
}

}  // namespace kvcheck::engine
