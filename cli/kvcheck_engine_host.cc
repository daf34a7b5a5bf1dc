// kvcheck_engine_host: serves a plug-in library (src/engine/kvcheck_engine.h) over the process
// protocol (src/engine/PROTOCOL.md) on stdin/stdout, so that a C, C++ or Rust engine that may
// crash or hang runs in its own process: `kvcheck --engine=libfoo.so --isolate` starts
// `kvcheck_engine_host libfoo.so` as the engine command.
//
//   kvcheck_engine_host path/to/libengine.so
#include <unistd.h>

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "src/base/status_macros.h"
#include "src/engine/engine_wire.h"
#include "src/engine/kvcheck_engine.h"
#include "src/engine/plugin_engine.h"

namespace kvcheck::engine {
namespace {

using nlohmann::json;

// Reads one request from stdin (unbuffered reads of exactly what the header declares).
bool ReadRequest(std::FILE* in, WireMessage* message) {
  std::string line;
  for (int c = std::fgetc(in); c != '\n'; c = std::fgetc(in)) {
    if (c == EOF) return false;
    line.push_back(static_cast<char>(c));
  }
  int64_t payload_bytes = 0;
  absl::StatusOr<WireMessage> decoded = DecodeHeader(line, &payload_bytes);
  if (!decoded.ok()) return false;
  std::string payload(static_cast<size_t>(payload_bytes), '\0');
  if (std::fread(payload.data(), 1, payload.size(), in) != payload.size()) return false;
  *message = *std::move(decoded);
  FillPayload(*message, payload);
  return true;
}

void Reply(std::FILE* out, WireMessage message) {
  message.header["ok"] = true;
  const std::string bytes = EncodeMessage(message);
  std::fwrite(bytes.data(), 1, bytes.size(), out);
  std::fflush(out);
}

void ReplyError(std::FILE* out, const absl::Status& status) {
  const std::string bytes = EncodeMessage(
      {{{"ok", false}, {"code", CodeName(status.code())}, {"message", std::string(status.message())}},
       {}});
  std::fwrite(bytes.data(), 1, bytes.size(), out);
  std::fflush(out);
}

int IndexOf(const std::vector<std::string>& names, const json& name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (name.is_string() && name.get<std::string>() == names[i]) return static_cast<int>(i);
  }
  return -1;
}

json HelloOf(const EngineInfo& info) {
  json strategies = json::array(), kernels = json::array();
  for (const StrategyInfo& s : info.strategies) {
    strategies.push_back({{"name", s.name},
                          {"summary", s.summary},
                          {"flags", BitNames(s.flags, WireStrategyFlagNames())},
                          {"dtypes", BitNames(s.dtypes, WireDTypeNames())},
                          {"default_config",
                           {{"initial_capacity", s.default_config.initial_capacity},
                            {"window", s.default_config.window},
                            {"max_bytes", s.default_config.max_bytes}}}});
  }
  for (const KernelInfo& k : info.kernels) {
    kernels.push_back({{"name", k.name},
                       {"summary", k.summary},
                       {"features", BitNames(k.features, WireKernelFeatureNames())},
                       {"dtypes", BitNames(k.dtypes, WireDTypeNames())}});
  }
  json steppers = json::array(), models = json::array();
  for (const StepperInfo& s : info.steppers) {
    steppers.push_back({{"name", s.name},
                        {"summary", s.summary},
                        {"flags", BitNames(s.flags, WireStepperFlagNames())},
                        {"dtypes", BitNames(s.dtypes, WireDTypeNames())},
                        {"window", s.window}});
  }
  for (const ModelInfo& m : info.models) {
    models.push_back({{"name", m.name},
                      {"summary", m.summary},
                      {"flags", BitNames(m.flags, WireModelFlagNames())},
                      {"vocab_size", m.vocab_size},
                      {"max_tokens", m.max_tokens},
                      {"tolerance", m.tolerance}});
  }
  return {{"protocol", kProtocolVersion}, {"name", info.name},     {"strategies", strategies},
          {"kernels", kernels},           {"steppers", steppers}, {"models", models}};
}

// The tensor called `name` of a request, as kvcheck's tensor.
absl::StatusOr<Tensor> Input(const WireMessage& request, const std::string& name) {
  for (const WireTensor& t : request.tensors) {
    if (t.name != name) continue;
    for (DType dtype : kAllDTypes) {
      if (t.dtype == WireDTypeName(dtype)) return FromWire(request, name, dtype, {-1, -1, -1, -1}, "request");
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("the request has no tensor ", name));
}

// The request's q, k and v.
struct Qkv {
  Tensor q, k, v;
};
absl::StatusOr<Qkv> QkvInput(const WireMessage& request) {
  Qkv in;
  KV_ASSIGN_OR_RETURN(in.q, Input(request, "q"));
  KV_ASSIGN_OR_RETURN(in.k, Input(request, "k"));
  KV_ASSIGN_OR_RETURN(in.v, Input(request, "v"));
  return in;
}

int Serve(const std::string& path) {
  absl::StatusOr<std::unique_ptr<PluginEngine>> loaded = PluginEngine::Load(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "kvcheck_engine_host: %s\n", std::string(loaded.status().message()).c_str());
    return 2;
  }
  PluginEngine& engine = **loaded;
  std::vector<std::string> strategy_names, kernel_names;
  for (const StrategyInfo& s : engine.info().strategies) strategy_names.push_back(s.name);
  for (const KernelInfo& k : engine.info().kernels) kernel_names.push_back(k.name);
  std::vector<std::string> stepper_names, model_names;
  for (const StepperInfo& s : engine.info().steppers) stepper_names.push_back(s.name);
  for (const ModelInfo& m : engine.info().models) model_names.push_back(m.name);

  std::map<int64_t, KvShape> shapes;  // what each cache's first append fixed
  // Stray prints of the library must not corrupt the protocol: stdout becomes stderr.
  std::FILE* out = fdopen(dup(1), "wb");
  dup2(2, 1);
  // The live stepper and model handles: a request naming another one is refused, not passed
  // to the library as a pointer.
  std::set<int64_t> steppers, models;
  // The session a request names in `field`, or a NOT_FOUND reply.
  const auto find_session = [&](const WireMessage& request, const char* field,
                                const std::set<int64_t>& live) -> std::optional<SessionHandle> {
    const int64_t id = request.header.value(field, int64_t{0});
    if (live.count(id) == 0) {
      ReplyError(out, absl::NotFoundError(absl::StrCat("no such ", field)));
      return std::nullopt;
    }
    return static_cast<SessionHandle>(id);
  };
  const auto reply_created = [&](const char* field, std::set<int64_t>& live,
                                 const absl::StatusOr<SessionHandle>& made) {
    if (!made.ok()) return ReplyError(out, made.status());
    live.insert(static_cast<int64_t>(*made));
    Reply(out, {{{field, static_cast<int64_t>(*made)}}, {}});
  };
  std::FILE* in = stdin;
  WireMessage request;
  while (ReadRequest(in, &request)) {
    const std::string op = request.header.value("op", "");
    const int64_t id = request.header.value("cache", int64_t{0});
    const CacheHandle handle = static_cast<CacheHandle>(id);
    if (op == "hello") {
      Reply(out, {HelloOf(engine.info()), {}});
    } else if (op == "bye") {
      Reply(out, {{}, {}});
      return 0;
    } else if (op == "create") {
      const int strategy = IndexOf(strategy_names, request.header.value("strategy", json()));
      if (strategy < 0) {
        ReplyError(out, absl::NotFoundError("no such strategy"));
        continue;
      }
      const json config = request.header.value("config", json::object());
      absl::StatusOr<CacheHandle> cache = engine.CreateCache(
          strategy, {config.value("initial_capacity", int64_t{0}), config.value("window", int64_t{0}),
                     config.value("max_bytes", int64_t{0})});
      if (!cache.ok()) {
        ReplyError(out, cache.status());
      } else {
        Reply(out, {{{"cache", static_cast<int64_t>(*cache)}}, {}});
      }
    } else if (op == "append" || op == "view") {
      absl::StatusOr<CacheView> view;
      if (op == "append") {
        absl::StatusOr<Tensor> k = Input(request, "k"), v = Input(request, "v");
        if (!k.ok() || !v.ok()) {
          ReplyError(out, !k.ok() ? k.status() : v.status());
          continue;
        }
        std::vector<char> flags;
        if (request.header.contains("active")) {
          for (const json& a : request.header["active"]) flags.push_back(a.get<bool>());
        }
        const std::unique_ptr<bool[]> active(new bool[flags.size() + 1]);
        for (size_t b = 0; b < flags.size(); ++b) active[b] = flags[b] != 0;
        view = engine.Append(handle, *k, *v, absl::Span<const bool>(active.get(), flags.size()));
        if (view.ok()) shapes[id] = {k->dim(0), k->dim(1), k->dim(3), k->dtype()};
      } else {
        view = engine.View(handle, shapes[id]);
      }
      if (!view.ok()) {
        ReplyError(out, view.status());
        continue;
      }
      WireMessage reply{{}, {ToWire("k", view->k), ToWire("v", view->v)}};
      if (!view->positions.empty()) {
        reply.tensors.push_back(
            ToWire("positions", view->positions, {view->k.dim(0), view->k.dim(2)}));
      }
      Reply(out, std::move(reply));
    } else if (op == "fork") {
      absl::StatusOr<CacheHandle> fork = engine.Fork(handle);
      if (!fork.ok()) {
        ReplyError(out, fork.status());
        continue;
      }
      shapes[static_cast<int64_t>(*fork)] = shapes[id];
      Reply(out, {{{"cache", static_cast<int64_t>(*fork)}}, {}});
    } else if (op == "reset") {
      const absl::Status reset = engine.Reset(handle);
      shapes.erase(id);
      reset.ok() ? Reply(out, {{}, {}}) : ReplyError(out, reset);
    } else if (op == "stats") {
      absl::StatusOr<CacheStats> stats = engine.Stats(handle);
      if (!stats.ok()) {
        ReplyError(out, stats.status());
        continue;
      }
      Reply(out, {{{"capacity", stats->capacity},
                   {"bytes_allocated", stats->counters.bytes_allocated},
                   {"bytes_held", stats->counters.bytes_held},
                   {"bytes_growth_copied", stats->counters.bytes_growth_copied},
                   {"bytes_other_copied", stats->counters.bytes_other_copied}},
                  {}});
    } else if (op == "destroy") {
      engine.Destroy(handle);
      shapes.erase(id);
      Reply(out, {{}, {}});
    } else if (op == "attend") {
      const int kernel = IndexOf(kernel_names, request.header.value("kernel", json()));
      absl::StatusOr<Qkv> in = QkvInput(request);
      if (kernel < 0 || !in.ok()) {
        ReplyError(out, kernel < 0 ? absl::NotFoundError("no such kernel") : in.status());
        continue;
      }
      const Tensor &q = in->q, &k = in->k, &v = in->v;
      const json p = request.header.value("params", json::object());
      AttentionParams params;
      if (p.contains("scale") && p["scale"].is_number()) params.scale = p["scale"].get<float>();
      params.softcap = p.value("softcap", 0.0f);
      params.causal = p.value("causal", false);
      params.window = p.value("window", int64_t{0});
      params.alibi_slopes = p.value("alibi_slopes", std::vector<float>{});
      for (const WireTensor& t : request.tensors) {
        if (t.name == "mask") {
          absl::StatusOr<Tensor> mask = FromWire(request, "mask", DType::kF32, {-1, -1, -1, -1}, "request");
          if (mask.ok()) params.mask = *mask;
        }
      }
      const int64_t B = q.dim(0), Sq = q.dim(2), Skv = k.dim(2);
      absl::StatusOr<std::vector<int64_t>> qpos = IntegersFromWire(request, "q_positions", {B, Sq}, "request");
      absl::StatusOr<std::vector<int64_t>> kvpos = IntegersFromWire(request, "kv_positions", {B, Skv}, "request");
      if (qpos.ok()) params.q_positions = *qpos;
      if (kvpos.ok()) params.kv_positions = *kvpos;
      absl::StatusOr<Tensor> result = engine.Attend(kernel, q, k, v, params);
      if (!result.ok()) {
        ReplyError(out, result.status());
        continue;
      }
      Reply(out, {{}, {ToWire("out", *result)}});
    } else if (op == "stepper_create") {
      const int stepper = IndexOf(stepper_names, request.header.value("stepper", json()));
      if (stepper < 0) {
        ReplyError(out, absl::NotFoundError("no such stepper"));
        continue;
      }
      reply_created("stepper", steppers,
                    engine.CreateStepper(stepper, request.header.value("window", int64_t{0})));
    } else if (op == "step" || op == "stepper_reset" || op == "stepper_destroy") {
      const std::optional<SessionHandle> session = find_session(request, "stepper", steppers);
      if (!session.has_value()) continue;
      if (op == "stepper_reset") {
        const absl::Status reset = engine.ResetStepper(*session);
        reset.ok() ? Reply(out, {{}, {}}) : ReplyError(out, reset);
      } else if (op == "stepper_destroy") {
        engine.DestroyStepper(*session);
        steppers.erase(static_cast<int64_t>(*session));
        Reply(out, {{}, {}});
      } else {
        absl::StatusOr<Qkv> in = QkvInput(request);
        absl::StatusOr<Tensor> result =
            in.ok() ? engine.Step(*session, in->q, in->k, in->v) : in.status();
        result.ok() ? Reply(out, {{}, {ToWire("out", *result)}}) : ReplyError(out, result.status());
      }
    } else if (op == "model_create") {
      const int model = IndexOf(model_names, request.header.value("model", json()));
      if (model < 0) {
        ReplyError(out, absl::NotFoundError("no such model"));
        continue;
      }
      reply_created("model", models, engine.CreateModel(model));
    } else if (op == "forward" || op == "model_reset" || op == "model_destroy") {
      const std::optional<SessionHandle> session = find_session(request, "model", models);
      if (!session.has_value()) continue;
      if (op == "model_reset") {
        const absl::Status reset = engine.ResetModel(*session);
        reset.ok() ? Reply(out, {{}, {}}) : ReplyError(out, reset);
        continue;
      }
      if (op == "model_destroy") {
        engine.DestroyModel(*session);
        models.erase(static_cast<int64_t>(*session));
        Reply(out, {{}, {}});
        continue;
      }
      const WireTensor* tokens = nullptr;
      for (const WireTensor& t : request.tensors) {
        if (t.name == "tokens" && t.dtype == "i64" && t.shape.size() == 2) tokens = &t;
      }
      if (tokens == nullptr) {
        ReplyError(out, absl::InvalidArgumentError("forward needs an i64 (B, S) tensor tokens"));
        continue;
      }
      absl::StatusOr<std::vector<int64_t>> ids =
          IntegersFromWire(request, "tokens", tokens->shape, "request");
      if (!ids.ok()) {
        ReplyError(out, ids.status());
        continue;
      }
      const int64_t batch = tokens->shape[0], seq = tokens->shape[1];
      absl::StatusOr<std::vector<float>> logits =
          engine.Forward(*session, *ids, batch, seq, request.header.value("use_cache", true));
      if (!logits.ok()) {
        ReplyError(out, logits.status());
        continue;
      }
      const int64_t vocab = batch * seq == 0 ? 0 : static_cast<int64_t>(logits->size()) / (batch * seq);
      absl::StatusOr<Tensor> as_tensor = Tensor::FromFloats(DType::kF32, {batch, seq, vocab}, *logits);
      as_tensor.ok() ? Reply(out, {{}, {ToWire("logits", *as_tensor)}})
                     : ReplyError(out, as_tensor.status());
    } else {
      ReplyError(out, absl::UnimplementedError(absl::StrCat("unknown op '", op, "'")));
    }
  }
  return 0;
}

}  // namespace
}  // namespace kvcheck::engine

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kvcheck_engine_host path/to/libengine.so\n");
    return 2;
  }
  return kvcheck::engine::Serve(argv[1]);
}
