#include "src/engine/process_engine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::engine {
namespace {

using nlohmann::json;

// Limits on what a reply may claim before kvcheck allocates for it.
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;
constexpr int64_t kMaxPayloadBytes = int64_t{1} << 32;

absl::StatusOr<std::string> String(const json& object, const char* field, const std::string& what,
                                   bool required = true) {
  if (!object.contains(field)) {
    if (!required) return std::string();
    return absl::InternalError(absl::StrCat(what, ": no \"", field, "\""));
  }
  if (!object[field].is_string()) {
    return absl::InternalError(absl::StrCat(what, ": \"", field, "\" is not a string"));
  }
  return object[field].get<std::string>();
}

absl::StatusOr<int64_t> Integer(const json& object, const char* field, const std::string& what) {
  if (!object.contains(field) || !object[field].is_number_integer()) {
    return absl::InternalError(absl::StrCat(what, ": \"", field, "\" is missing or not an integer"));
  }
  return object[field].get<int64_t>();
}

absl::StatusOr<EngineInfo> ParseHello(const json& h) {
  EngineInfo info;
  KV_ASSIGN_OR_RETURN(info.name, String(h, "name", "hello"));
  if (!h.contains("strategies") || !h["strategies"].is_array() || !h.contains("kernels") ||
      !h["kernels"].is_array()) {
    return absl::InternalError("hello: \"strategies\" and \"kernels\" must be lists");
  }
  for (size_t i = 0; i < h["strategies"].size(); ++i) {
    const json& s = h["strategies"][i];
    const std::string at = absl::StrCat("hello: strategies[", i, "]");
    if (!s.is_object()) return absl::InternalError(at + " is not an object");
    StrategyInfo strategy;
    KV_ASSIGN_OR_RETURN(strategy.name, String(s, "name", at));
    KV_ASSIGN_OR_RETURN(strategy.summary, String(s, "summary", at, false));
    KV_ASSIGN_OR_RETURN(strategy.flags, BitsFromNames(s.value("flags", json::array()),
                                                      WireStrategyFlagNames(),
                                                      at + ".flags"));
    KV_ASSIGN_OR_RETURN(strategy.dtypes, BitsFromNames(s.value("dtypes", json::array({"f32"})),
                                                       WireDTypeNames(),
                                                       at + ".dtypes"));
    if (s.contains("default_config")) {
      const json& c = s["default_config"];
      if (!c.is_object()) return absl::InternalError(at + ".default_config is not an object");
      strategy.default_config.initial_capacity = c.value("initial_capacity", int64_t{0});
      strategy.default_config.window = c.value("window", int64_t{0});
      strategy.default_config.max_bytes = c.value("max_bytes", int64_t{0});
    }
    if ((strategy.flags & KVCHECK_STRATEGY_WINDOWED) && strategy.default_config.window < 1) {
      return absl::InternalError(at + " is windowed but default_config.window < 1");
    }
    if (strategy.dtypes == 0) return absl::InternalError(at + ".dtypes is empty");
    info.strategies.push_back(std::move(strategy));
  }
  for (size_t i = 0; i < h["kernels"].size(); ++i) {
    const json& k = h["kernels"][i];
    const std::string at = absl::StrCat("hello: kernels[", i, "]");
    if (!k.is_object()) return absl::InternalError(at + " is not an object");
    KernelInfo kernel;
    KV_ASSIGN_OR_RETURN(kernel.name, String(k, "name", at));
    KV_ASSIGN_OR_RETURN(kernel.summary, String(k, "summary", at, false));
    KV_ASSIGN_OR_RETURN(kernel.features,
                        BitsFromNames(k.value("features", json::array()), WireKernelFeatureNames(),
                                      at + ".features"));
    KV_ASSIGN_OR_RETURN(kernel.dtypes,
                        BitsFromNames(k.value("dtypes", json::array({"f32"})), WireDTypeNames(),
                                      at + ".dtypes"));
    if (kernel.dtypes == 0) return absl::InternalError(at + ".dtypes is empty");
    info.kernels.push_back(std::move(kernel));
  }
  // Steppers and models are optional lists (an engine of protocol 1 before them has none).
  for (const char* list : {"steppers", "models"}) {
    if (h.contains(list) && !h[list].is_array()) {
      return absl::InternalError(absl::StrCat("hello: \"", list, "\" must be a list"));
    }
  }
  for (size_t i = 0; h.contains("steppers") && i < h["steppers"].size(); ++i) {
    const json& s = h["steppers"][i];
    const std::string at = absl::StrCat("hello: steppers[", i, "]");
    if (!s.is_object()) return absl::InternalError(at + " is not an object");
    StepperInfo stepper;
    KV_ASSIGN_OR_RETURN(stepper.name, String(s, "name", at));
    KV_ASSIGN_OR_RETURN(stepper.summary, String(s, "summary", at, false));
    KV_ASSIGN_OR_RETURN(stepper.flags, BitsFromNames(s.value("flags", json::array()),
                                                     WireStepperFlagNames(), at + ".flags"));
    KV_ASSIGN_OR_RETURN(stepper.dtypes, BitsFromNames(s.value("dtypes", json::array({"f32"})),
                                                      WireDTypeNames(), at + ".dtypes"));
    if (s.contains("window")) {
      KV_ASSIGN_OR_RETURN(stepper.window, Integer(s, "window", at));
    }
    if ((stepper.flags & KVCHECK_STEPPER_WINDOWED) && stepper.window < 1) {
      return absl::InternalError(at + " is windowed but its window is < 1");
    }
    if (stepper.dtypes == 0) return absl::InternalError(at + ".dtypes is empty");
    info.steppers.push_back(std::move(stepper));
  }
  for (size_t i = 0; h.contains("models") && i < h["models"].size(); ++i) {
    const json& m = h["models"][i];
    const std::string at = absl::StrCat("hello: models[", i, "]");
    if (!m.is_object()) return absl::InternalError(at + " is not an object");
    ModelInfo model;
    KV_ASSIGN_OR_RETURN(model.name, String(m, "name", at));
    KV_ASSIGN_OR_RETURN(model.summary, String(m, "summary", at, false));
    KV_ASSIGN_OR_RETURN(model.flags, BitsFromNames(m.value("flags", json::array()),
                                                   WireModelFlagNames(), at + ".flags"));
    KV_ASSIGN_OR_RETURN(model.vocab_size, Integer(m, "vocab_size", at));
    KV_ASSIGN_OR_RETURN(model.max_tokens, Integer(m, "max_tokens", at));
    if (model.vocab_size < 1 || model.max_tokens < 1) {
      return absl::InternalError(at + ": vocab_size and max_tokens must be >= 1");
    }
    if (m.contains("tolerance")) {
      if (!m["tolerance"].is_number() || !(m["tolerance"].get<double>() >= 0)) {
        return absl::InternalError(at + ".tolerance is not a number >= 0");
      }
      if (m["tolerance"].get<double>() > 0) model.tolerance = m["tolerance"].get<double>();
    }
    info.models.push_back(std::move(model));
  }
  if (info.strategies.empty() && info.kernels.empty() && info.steppers.empty() &&
      info.models.empty()) {
    return absl::InternalError(
        "hello: no strategies, kernels, steppers or models: nothing to check");
  }
  return info;
}

// f32 values as JSON numbers that read back exactly (9 significant digits).
json Float(float x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return json::parse(text);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProcessEngine>> ProcessEngine::Start(const std::string& command,
                                                                    Options options) {
  std::unique_ptr<ProcessEngine> engine(new ProcessEngine(command, options));
  void* page = mmap(nullptr, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
  if (page == MAP_FAILED) return absl::InternalError("mmap of the shared error flag failed");
  engine->shared_broken_ = static_cast<volatile int*>(page);
  *engine->shared_broken_ = 0;
  KV_RETURN_IF_ERROR(engine->Launch());
  return engine;
}

ProcessEngine::~ProcessEngine() {
  if (child_ != nullptr && broken_.ok()) {
    // A polite goodbye; the destructor of child_ kills whatever is left.
    (void)child_->Write(EncodeMessage({{{"op", "bye"}}, {}}), 1.0);
  }
  if (shared_broken_ != nullptr) munmap(const_cast<int*>(shared_broken_), sizeof(int));
}

std::string ProcessEngine::description() const { return absl::StrCat("process '", command_, "'"); }

absl::Status ProcessEngine::Launch() {
  child_.reset();
  broken_ = absl::OkStatus();
  KV_ASSIGN_OR_RETURN(child_, ChildProcess::Start(command_));
  KV_ASSIGN_OR_RETURN(WireMessage reply,
                      Call({{{"op", "hello"}, {"protocol", kProtocolVersion}}, {}}, "hello",
                           std::max(options_.timeout_seconds, kStartupSeconds)));
  if (!reply.header.contains("protocol") || reply.header["protocol"] != kProtocolVersion) {
    broken_ = absl::FailedPreconditionError(
        absl::StrCat(description(), " speaks protocol ",
                     reply.header.value("protocol", json()).dump(), ", kvcheck speaks ",
                     kProtocolVersion, " (src/engine/PROTOCOL.md)"));
    return broken_;
  }
  absl::StatusOr<EngineInfo> info = ParseHello(reply.header);
  if (!info.ok()) {
    broken_ = absl::InternalError(absl::StrCat(description(), ": ", info.status().message()));
    return broken_;
  }
  if (restarts_ > 0 || !info_.name.empty()) {
    // A restarted engine must describe itself as before: the properties hold its indices.
    if (info->name != info_.name || info->strategies.size() != info_.strategies.size() ||
        info->kernels.size() != info_.kernels.size() ||
        info->steppers.size() != info_.steppers.size() ||
        info->models.size() != info_.models.size()) {
      broken_ = absl::InternalError(absl::StrCat(description(),
                                                 ": after a restart, hello described another "
                                                 "engine"));
      return broken_;
    }
    return absl::OkStatus();
  }
  info_ = *std::move(info);
  return absl::OkStatus();
}

absl::Status ProcessEngine::RestartIfNeeded(bool always, bool case_crashed) {
  const bool dead = child_ == nullptr || !child_->Running();
  const bool broken_elsewhere = *shared_broken_ != 0;
  if (!always && !case_crashed && !dead && broken_.ok() && !broken_elsewhere) {
    return absl::OkStatus();
  }
  *shared_broken_ = 0;
  ++restarts_;
  return Launch();
}

absl::Status ProcessEngine::TransportError(const absl::Status& status, const std::string& what,
                                           double timeout_seconds) {
  std::string message = absl::StrCat(info_.name.empty() ? description() : info_.name, " ", what,
                                     ": ", status.message());
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    absl::StrAppend(&message, " (no reply within ",
                    timeout_seconds < 0 ? options_.timeout_seconds : timeout_seconds,
                    " s: the engine hangs; its process group was killed)");
    child_->Kill();
  }
  // The wrapper shell's last stderr line says how the command ended (child_process.h); when
  // the output closed, give it a moment to be written.
  constexpr const char* kExitMarker = "[engine exited with status ";
  std::string stderr_now = child_->StderrTail();
  for (int i = 0; i < 50 && status.code() == absl::StatusCode::kUnavailable &&
                  stderr_now.find(kExitMarker) == std::string::npos;
       ++i) {
    usleep(10000);
    stderr_now = child_->StderrTail();
  }
  const size_t exited = stderr_now.rfind("[engine exited with status ");
  if (exited != std::string::npos) {
    const int code = std::atoi(stderr_now.c_str() + exited + std::strlen(kExitMarker));
    absl::StrAppend(&message, code > 128 ? absl::StrCat(" (killed by signal ", code - 128, ")")
                                         : absl::StrCat(" (exit status ", code, ")"));
  }
  if (!stderr_now.empty()) absl::StrAppend(&message, "\nengine stderr (end):\n", stderr_now);
  broken_ = absl::Status(status.code(), message);
  *shared_broken_ = 1;
  return broken_;
}

absl::StatusOr<WireMessage> ProcessEngine::Call(const WireMessage& request,
                                                const std::string& what, double timeout_seconds) {
  KV_RETURN_IF_ERROR(broken_);
  const double timeout = timeout_seconds < 0 ? options_.timeout_seconds : timeout_seconds;
  if (absl::Status written = child_->Write(EncodeMessage(request), timeout); !written.ok()) {
    return TransportError(written, what, timeout);
  }
  absl::StatusOr<std::string> line = child_->ReadLine(timeout, kMaxHeaderBytes);
  if (!line.ok()) return TransportError(line.status(), what, timeout);
  int64_t payload_bytes = 0;
  absl::StatusOr<WireMessage> reply = DecodeHeader(*line, &payload_bytes);
  if (!reply.ok()) return TransportError(reply.status(), what, timeout);
  if (payload_bytes > kMaxPayloadBytes) {
    return TransportError(absl::InternalError(absl::StrCat("the reply declares ", payload_bytes,
                                                           " payload bytes")),
                          what, timeout);
  }
  std::string payload(static_cast<size_t>(payload_bytes), '\0');
  if (absl::Status read = child_->ReadExactly(payload.data(), payload.size(), timeout);
      !read.ok()) {
    return TransportError(read, what, timeout);
  }
  FillPayload(*reply, payload);
  // An error reply is the engine's answer, not a transport failure: the stream stays in step.
  KV_RETURN_IF_ERROR(ReplyStatus(reply->header, absl::StrCat(info_.name, " ", what)));
  return reply;
}

absl::StatusOr<uint64_t> ProcessEngine::CallForId(const WireMessage& request, const char* field,
                                                  const std::string& what) {
  KV_ASSIGN_OR_RETURN(WireMessage reply, Call(request, what));
  absl::StatusOr<int64_t> id = Integer(reply.header, field, info_.name + " " + what + " reply");
  if (!id.ok()) return TransportError(id.status(), what);
  return static_cast<uint64_t>(*id);
}

absl::StatusOr<CacheHandle> ProcessEngine::CreateCache(int strategy, const CacheConfig& config) {
  return CallForId({{{"op", "create"},
                    {"strategy", info_.strategies[strategy].name},
                    {"config",
                     {{"initial_capacity", config.initial_capacity},
                      {"window", config.window},
                      {"max_bytes", config.max_bytes}}}},
                   {}},
                  "cache", "create");
}

absl::StatusOr<CacheView> ProcessEngine::ViewFrom(const WireMessage& reply, const KvShape& shape,
                                                  const std::string& what) {
  const std::string where = absl::StrCat(info_.name, " ", what, " reply");
  CacheView view;
  absl::StatusOr<Tensor> k =
      FromWire(reply, "k", shape.dtype, {shape.batch, shape.num_kv_heads, -1, shape.head_dim}, where);
  if (!k.ok()) return TransportError(k.status(), what);
  view.k = *std::move(k);
  const int64_t length = view.k.dim(2);
  absl::StatusOr<Tensor> v = FromWire(
      reply, "v", shape.dtype, {shape.batch, shape.num_kv_heads, length, shape.head_dim}, where);
  if (!v.ok()) return TransportError(v.status(), what);
  view.v = *std::move(v);
  absl::StatusOr<std::vector<int64_t>> positions =
      IntegersFromWire(reply, "positions", {shape.batch, length}, where);
  if (!positions.ok()) return TransportError(positions.status(), what);
  view.positions = *std::move(positions);
  return view;
}

absl::StatusOr<CacheView> ProcessEngine::Append(CacheHandle cache, const Tensor& k, const Tensor& v,
                                                absl::Span<const bool> active) {
  WireMessage request{{{"op", "append"}, {"cache", static_cast<int64_t>(cache)}},
                      {ToWire("k", k, true), ToWire("v", v, true)}};
  if (!active.empty()) {
    request.header["active"] = std::vector<bool>(active.begin(), active.end());
  }
  KV_ASSIGN_OR_RETURN(WireMessage reply, Call(request, "append"));
  return ViewFrom(reply, {k.dim(0), k.dim(1), k.dim(3), k.dtype()}, "append");
}

absl::StatusOr<CacheView> ProcessEngine::View(CacheHandle cache, const KvShape& shape) {
  KV_ASSIGN_OR_RETURN(WireMessage reply,
                      Call({{{"op", "view"}, {"cache", static_cast<int64_t>(cache)}}, {}}, "view"));
  return ViewFrom(reply, shape, "view");
}

absl::StatusOr<CacheHandle> ProcessEngine::Fork(CacheHandle cache) {
  return CallForId({{{"op", "fork"}, {"cache", static_cast<int64_t>(cache)}}, {}}, "cache", "fork");
}

absl::Status ProcessEngine::Reset(CacheHandle cache) {
  return Call({{{"op", "reset"}, {"cache", static_cast<int64_t>(cache)}}, {}}, "reset").status();
}

absl::StatusOr<CacheStats> ProcessEngine::Stats(CacheHandle cache) {
  KV_ASSIGN_OR_RETURN(WireMessage reply,
                      Call({{{"op", "stats"}, {"cache", static_cast<int64_t>(cache)}}, {}}, "stats"));
  const std::string where = info_.name + " stats reply";
  CacheStats stats;
  int64_t* fields[] = {&stats.capacity, &stats.counters.bytes_allocated,
                       &stats.counters.bytes_held, &stats.counters.bytes_growth_copied,
                       &stats.counters.bytes_other_copied};
  const char* names[] = {"capacity", "bytes_allocated", "bytes_held", "bytes_growth_copied",
                         "bytes_other_copied"};
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<int64_t> value = Integer(reply.header, names[i], where);
    if (!value.ok()) return TransportError(value.status(), "stats");
    *fields[i] = *value;
  }
  return stats;
}

void ProcessEngine::Destroy(CacheHandle cache) {
  // A failure here has nowhere to go; the next call reports a broken transport.
  (void)Call({{{"op", "destroy"}, {"cache", static_cast<int64_t>(cache)}}, {}}, "destroy");
}

absl::StatusOr<Tensor> ProcessEngine::Attend(int kernel, const Tensor& q, const Tensor& k,
                                             const Tensor& v, const AttentionParams& params) {
  json p = {{"scale", params.scale.has_value() ? Float(*params.scale) : json()},
            {"softcap", Float(params.softcap)},
            {"causal", params.causal},
            {"window", params.window},
            {"alibi_slopes", json::array()}};
  for (float slope : params.alibi_slopes) p["alibi_slopes"].push_back(Float(slope));
  WireMessage request{{{"op", "attend"}, {"kernel", info_.kernels[kernel].name}, {"params", p}},
                      {ToWire("q", q, true), ToWire("k", k, true), ToWire("v", v, true)}};
  if (params.mask.has_value()) request.tensors.push_back(ToWire("mask", *params.mask, true));
  const int64_t B = q.dim(0), Sq = q.dim(2), Skv = k.dim(2);
  if (!params.q_positions.empty()) {
    request.tensors.push_back(ToWire("q_positions", params.q_positions, {B, Sq}));
  }
  if (!params.kv_positions.empty()) {
    request.tensors.push_back(ToWire("kv_positions", params.kv_positions, {B, Skv}));
  }
  KV_ASSIGN_OR_RETURN(WireMessage reply, Call(request, "attend"));
  absl::StatusOr<Tensor> out = FromWire(reply, "out", q.dtype(), {B, q.dim(1), Sq, v.dim(3)},
                                        info_.name + " attend reply");
  if (!out.ok()) return TransportError(out.status(), "attend");
  return out;
}

// ---- Steppers -------------------------------------------------------------------------------

absl::StatusOr<SessionHandle> ProcessEngine::CreateStepper(int stepper, int64_t window) {
  return CallForId({{{"op", "stepper_create"},
                    {"stepper", info_.steppers[stepper].name},
                    {"window", window}},
                   {}},
                  "stepper", "stepper_create");
}

absl::StatusOr<Tensor> ProcessEngine::Step(SessionHandle stepper, const Tensor& q,
                                           const Tensor& k_new, const Tensor& v_new) {
  KV_ASSIGN_OR_RETURN(
      WireMessage reply,
      Call({{{"op", "step"}, {"stepper", static_cast<int64_t>(stepper)}},
            {ToWire("q", q, true), ToWire("k", k_new, true), ToWire("v", v_new, true)}},
           "step"));
  absl::StatusOr<Tensor> out =
      FromWire(reply, "out", q.dtype(), {q.dim(0), q.dim(1), q.dim(2), q.dim(3)},
               info_.name + " step reply");
  if (!out.ok()) return TransportError(out.status(), "step");
  return out;
}

absl::Status ProcessEngine::ResetStepper(SessionHandle stepper) {
  return Call({{{"op", "stepper_reset"}, {"stepper", static_cast<int64_t>(stepper)}}, {}},
              "stepper_reset")
      .status();
}

void ProcessEngine::DestroyStepper(SessionHandle stepper) {
  (void)Call({{{"op", "stepper_destroy"}, {"stepper", static_cast<int64_t>(stepper)}}, {}},
             "stepper_destroy");
}

// ---- Models ---------------------------------------------------------------------------------

absl::StatusOr<SessionHandle> ProcessEngine::CreateModel(int model) {
  return CallForId({{{"op", "model_create"}, {"model", info_.models[model].name}}, {}}, "model",
                   "model_create");
}

absl::StatusOr<std::vector<float>> ProcessEngine::Forward(SessionHandle model,
                                                          absl::Span<const int64_t> tokens,
                                                          int64_t batch, int64_t seq,
                                                          bool use_cache) {
  // Which model the session runs is the engine's business; its vocabulary is in the reply's
  // shape (checked against the declaration by the caller through the size).
  KV_ASSIGN_OR_RETURN(
      WireMessage reply,
      Call({{{"op", "forward"}, {"model", static_cast<int64_t>(model)}, {"use_cache", use_cache}},
            {ToWire("tokens", std::vector<int64_t>(tokens.begin(), tokens.end()), {batch, seq})}},
           "forward"));
  absl::StatusOr<Tensor> logits =
      FromWire(reply, "logits", DType::kF32, {batch, seq, -1}, info_.name + " forward reply");
  if (!logits.ok()) return TransportError(logits.status(), "forward");
  return logits->ToFloats();
}

absl::Status ProcessEngine::ResetModel(SessionHandle model) {
  return Call({{{"op", "model_reset"}, {"model", static_cast<int64_t>(model)}}, {}}, "model_reset")
      .status();
}

void ProcessEngine::DestroyModel(SessionHandle model) {
  (void)Call({{{"op", "model_destroy"}, {"model", static_cast<int64_t>(model)}}, {}},
             "model_destroy");
}

}  // namespace kvcheck::engine
