#include "src/engine/engine_wire.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/checked_math.h"
#include "src/base/status_macros.h"
#include "src/engine/kvcheck_engine.h"
#include "src/tensor/layout.h"
#include "src/tensor/storage.h"
#include "src/tensor/strided_loop.h"

namespace kvcheck::engine {
namespace {

using nlohmann::json;

const std::pair<absl::StatusCode, const char*> kCodes[] = {
    {absl::StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
    {absl::StatusCode::kNotFound, "NOT_FOUND"},
    {absl::StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
    {absl::StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
    {absl::StatusCode::kOutOfRange, "OUT_OF_RANGE"},
    {absl::StatusCode::kUnimplemented, "UNIMPLEMENTED"},
    {absl::StatusCode::kInternal, "INTERNAL"},
};

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

int WireDTypeSize(const std::string& dtype) {
  if (dtype == "f32") return 4;
  if (dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "i64") return 8;
  return 0;
}

const char* WireDTypeName(DType dtype) { return DTypeName(dtype); }

std::string EncodeMessage(const WireMessage& message) {
  json header = message.header;
  json tensors = json::array();
  size_t payload = 0;
  for (const WireTensor& t : message.tensors) {
    json descriptor = {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
    if (!t.strides.empty()) descriptor["strides"] = t.strides;
    tensors.push_back(std::move(descriptor));
    payload += t.bytes.size();
  }
  if (!message.tensors.empty()) header["tensors"] = std::move(tensors);
  std::string out = header.dump();
  out.push_back('\n');
  out.reserve(out.size() + payload);
  for (const WireTensor& t : message.tensors) out += t.bytes;
  return out;
}

absl::StatusOr<WireMessage> DecodeHeader(const std::string& line, int64_t* payload_bytes) {
  WireMessage message;
  message.header = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (message.header.is_discarded() || !message.header.is_object()) {
    return absl::InternalError(absl::StrCat(
        "the reply header is not a JSON object: '",
        line.size() > 200 ? line.substr(0, 200) + "..." : line, "'"));
  }
  *payload_bytes = 0;
  if (!message.header.contains("tensors")) return message;
  const json& tensors = message.header["tensors"];
  if (!tensors.is_array()) return absl::InternalError("\"tensors\" is not a list");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const json& t = tensors[i];
    const std::string at = absl::StrCat("tensors[", i, "]");
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) {
      return absl::InternalError(at + " has no string \"name\"");
    }
    WireTensor tensor;
    tensor.name = t["name"].get<std::string>();
    if (!t.contains("dtype") || !t["dtype"].is_string() ||
        WireDTypeSize(t["dtype"].get<std::string>()) == 0) {
      return absl::InternalError(absl::StrCat(at, " (", tensor.name, ") \"dtype\" is not one of "
                                              "f32, f16, bf16, i64"));
    }
    tensor.dtype = t["dtype"].get<std::string>();
    if (!t.contains("shape") || !t["shape"].is_array()) {
      return absl::InternalError(absl::StrCat(at, " (", tensor.name, ") has no \"shape\" list"));
    }
    for (const json& d : t["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        return absl::InternalError(absl::StrCat(at, " (", tensor.name, ") \"shape\" has ",
                                                d.dump(), ", not a non-negative integer"));
      }
      tensor.shape.push_back(d.get<int64_t>());
    }
    if (t.contains("strides")) {
      if (!t["strides"].is_array() || t["strides"].size() != tensor.shape.size()) {
        return absl::InternalError(absl::StrCat(at, " (", tensor.name, ") \"strides\" is not a ",
                                                "list as long as \"shape\""));
      }
      for (const json& d : t["strides"]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) {
          return absl::InternalError(absl::StrCat(at, " (", tensor.name, ") \"strides\" has ",
                                                  d.dump(), ", not a non-negative integer"));
        }
        tensor.strides.push_back(d.get<int64_t>());
      }
    }
    // Elements the payload holds: the count, or with strides the span they cover.
    absl::StatusOr<Layout> layout =
        tensor.strides.empty() ? Layout::Contiguous(tensor.shape)
                               : Layout::Strided(tensor.shape, tensor.strides, 0);
    if (!layout.ok()) {
      return absl::InternalError(absl::StrCat(at, " (", tensor.name, "): ",
                                              layout.status().message()));
    }
    const std::optional<int64_t> product =
        CheckedMul(WireDTypeSize(tensor.dtype), tensor.strides.empty()
                                                    ? layout->num_elements()
                                                    : layout->required_storage());
    if (!product.has_value()) {
      return absl::InternalError(absl::StrCat(at, " (", tensor.name, ") size overflows"));
    }
    const int64_t bytes = *product;
    const std::optional<int64_t> total = CheckedAdd(*payload_bytes, bytes);
    if (!total.has_value()) return absl::InternalError("the payload size overflows");
    *payload_bytes = *total;
    tensor.bytes.resize(static_cast<size_t>(bytes));  // the size FillPayload takes
    message.tensors.push_back(std::move(tensor));
  }
  message.header.erase("tensors");
  return message;
}

void FillPayload(WireMessage& message, const std::string& payload) {
  size_t at = 0;
  for (WireTensor& t : message.tensors) {
    const size_t bytes = t.bytes.size();  // set by DecodeHeader
    t.bytes = payload.substr(at, bytes);
    at += bytes;
  }
}

WireTensor ToWire(const std::string& name, const Tensor& tensor, bool keep_layout) {
  WireTensor t{name, WireDTypeName(tensor.dtype()),
               std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end()), {}, {}};
  const int size = DTypeSize(tensor.dtype());
  if (keep_layout && !tensor.is_contiguous() && tensor.num_elements() > 0) {
    // The span from the view's first element to its last, with the view's strides.
    t.strides.assign(tensor.strides().begin(), tensor.strides().end());
    const int64_t span = tensor.layout().required_storage() - tensor.layout().offset();
    t.bytes.assign(reinterpret_cast<const char*>(tensor.storage()->bytes() +
                                                 tensor.layout().offset() * size),
                   static_cast<size_t>(span * size));
    return t;
  }
  t.bytes.resize(static_cast<size_t>(tensor.num_elements()) * size);
  if (tensor.num_elements() == 0) return t;
  // Row-major element bytes (x86 is little-endian, as the wire is): one memcpy per row.
  const Layout contiguous = *Layout::Contiguous(tensor.shape());
  CopyStridedBytes(tensor.storage()->bytes(), tensor.layout(),
                   reinterpret_cast<std::byte*>(t.bytes.data()), contiguous, size);
  return t;
}

WireTensor ToWire(const std::string& name, const std::vector<int64_t>& values,
                  std::vector<int64_t> shape) {
  WireTensor t{name, "i64", std::move(shape), {}, {}};
  t.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
  return t;
}

namespace {

absl::StatusOr<const WireTensor*> Find(const WireMessage& message, const std::string& name,
                                       const std::string& dtype,
                                       const std::vector<int64_t>& expected_shape,
                                       const std::string& what) {
  for (const WireTensor& t : message.tensors) {
    if (t.name != name) continue;
    if (t.dtype != dtype) {
      return absl::InternalError(
          absl::StrCat(what, ": tensor ", name, " is ", t.dtype, ", expected ", dtype));
    }
    bool same = t.shape.size() == expected_shape.size();
    for (size_t d = 0; same && d < t.shape.size(); ++d) {
      same = expected_shape[d] < 0 || expected_shape[d] == t.shape[d];
    }
    if (!same) {
      return absl::InternalError(absl::StrCat(what, ": tensor ", name, " has shape ",
                                              ShapeString(t.shape), ", expected ",
                                              ShapeString(expected_shape), " (-1: any)"));
    }
    return &t;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<Tensor> FromWire(const WireMessage& message, const std::string& name, DType dtype,
                                const std::vector<int64_t>& expected_shape,
                                const std::string& what) {
  KV_ASSIGN_OR_RETURN(const WireTensor* t,
                      Find(message, name, WireDTypeName(dtype), expected_shape, what));
  if (t == nullptr) return absl::InternalError(absl::StrCat(what, ": no tensor ", name));
  if (!t->strides.empty()) {
    // A view with its layout: storage for the span, the same strides.
    KV_ASSIGN_OR_RETURN(std::shared_ptr<Storage> storage,
                        Storage::Allocate(dtype, static_cast<int64_t>(t->bytes.size()) /
                                                     DTypeSize(dtype)));
    if (!t->bytes.empty()) std::memcpy(storage->bytes(), t->bytes.data(), t->bytes.size());
    KV_ASSIGN_OR_RETURN(Layout layout, Layout::Strided(t->shape, t->strides, 0));
    return Tensor::View(std::move(storage), std::move(layout));
  }
  KV_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Zeros(dtype, t->shape));
  if (!t->bytes.empty()) std::memcpy(tensor.storage()->bytes(), t->bytes.data(), t->bytes.size());
  return tensor;
}

absl::StatusOr<std::vector<int64_t>> IntegersFromWire(const WireMessage& message,
                                                      const std::string& name,
                                                      const std::vector<int64_t>& shape,
                                                      const std::string& what) {
  KV_ASSIGN_OR_RETURN(const WireTensor* t, Find(message, name, "i64", shape, what));
  std::vector<int64_t> values;
  if (t == nullptr) return values;
  values.resize(t->bytes.size() / sizeof(int64_t));
  std::memcpy(values.data(), t->bytes.data(), t->bytes.size());
  return values;
}

absl::Span<const WireBitName> WireStrategyFlagNames() {
  static constexpr WireBitName kNames[] = {
      {"windowed", KVCHECK_STRATEGY_WINDOWED},
      {"per_row", KVCHECK_STRATEGY_PER_ROW},
      {"fork", KVCHECK_STRATEGY_FORK},
      {"reset", KVCHECK_STRATEGY_RESET},
      {"stats", KVCHECK_STRATEGY_STATS},
      {"amortized_growth", KVCHECK_STRATEGY_AMORTIZED_GROWTH},
      {"max_bytes", KVCHECK_STRATEGY_MAX_BYTES},
  };
  return kNames;
}

absl::Span<const WireBitName> WireKernelFeatureNames() {
  static constexpr WireBitName kNames[] = {
      {"scale", KVCHECK_FEATURE_SCALE},   {"softcap", KVCHECK_FEATURE_SOFTCAP},
      {"alibi", KVCHECK_FEATURE_ALIBI},   {"causal", KVCHECK_FEATURE_CAUSAL},
      {"window", KVCHECK_FEATURE_WINDOW}, {"mask", KVCHECK_FEATURE_MASK},
      {"positions", KVCHECK_FEATURE_POSITIONS}, {"gqa", KVCHECK_FEATURE_GQA},
  };
  return kNames;
}

absl::Span<const WireBitName> WireStepperFlagNames() {
  static constexpr WireBitName kNames[] = {
      {"windowed", KVCHECK_STEPPER_WINDOWED},
      {"reset", KVCHECK_STEPPER_RESET},
      {"gqa", KVCHECK_STEPPER_GQA},
  };
  return kNames;
}

absl::Span<const WireBitName> WireModelFlagNames() {
  static constexpr WireBitName kNames[] = {
      {"reset", KVCHECK_MODEL_RESET},
      {"batch", KVCHECK_MODEL_BATCH},
  };
  return kNames;
}

absl::Span<const WireBitName> WireDTypeNames() {
  static constexpr WireBitName kNames[] = {
      {"f32", 1u << KVCHECK_DTYPE_F32},
      {"f16", 1u << KVCHECK_DTYPE_F16},
      {"bf16", 1u << KVCHECK_DTYPE_BF16},
  };
  return kNames;
}

json BitNames(uint32_t bits, absl::Span<const WireBitName> names) {
  json list = json::array();
  for (const WireBitName& n : names) {
    if (bits & n.bit) list.push_back(n.name);
  }
  return list;
}

absl::StatusOr<uint32_t> BitsFromNames(const json& list, absl::Span<const WireBitName> names,
                                       const std::string& what) {
  if (!list.is_array()) return absl::InternalError(absl::StrCat(what, " is not a list"));
  uint32_t bits = 0;
  for (const json& entry : list) {
    bool known = false;
    for (const WireBitName& n : names) {
      if (entry.is_string() && entry.get<std::string>() == n.name) {
        bits |= n.bit;
        known = true;
      }
    }
    if (!known) {
      return absl::InternalError(absl::StrCat(what, " has unknown entry ", entry.dump()));
    }
  }
  return bits;
}

std::string CodeName(absl::StatusCode code) {
  for (const auto& [c, name] : kCodes) {
    if (c == code) return name;
  }
  return "INTERNAL";
}

absl::Status ReplyStatus(const nlohmann::json& header, const std::string& what) {
  if (!header.contains("ok") || !header["ok"].is_boolean()) {
    return absl::InternalError(absl::StrCat(what, ": the reply has no boolean \"ok\": ",
                                            header.dump().substr(0, 200)));
  }
  if (header["ok"].get<bool>()) return absl::OkStatus();
  const std::string message = header.contains("message") && header["message"].is_string()
                                  ? header["message"].get<std::string>()
                                  : "(no message)";
  const std::string code = header.contains("code") && header["code"].is_string()
                               ? header["code"].get<std::string>()
                               : "";
  for (const auto& [c, name] : kCodes) {
    if (code == name) return absl::Status(c, absl::StrCat(what, ": ", message));
  }
  return absl::InternalError(absl::StrCat(what, ": ", message, " (unknown \"code\" '", code,
                                          "'; PROTOCOL.md lists the codes)"));
}

}  // namespace kvcheck::engine
