// File: engine_wire.h
// The messages of the engine protocol (PROTOCOL.md): a JSON header line, then the raw bytes
// of the tensors it lists. Encoding of requests and decoding of replies, with every check a
// malformed reply needs (each error names the field).
#ifndef KVCHECK_SRC_ENGINE_ENGINE_WIRE_H_
#define KVCHECK_SRC_ENGINE_ENGINE_WIRE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "src/tensor/tensor.h"

namespace kvcheck::engine {

inline constexpr int kProtocolVersion = 1;

// One tensor of a message: its descriptor and its bytes (row-major, little-endian).
struct WireTensor {
  std::string name;
  std::string dtype;  // "f32", "f16", "bf16", "i64"
  std::vector<int64_t> shape;
  // Empty: row-major contiguous. Otherwise the element strides of a view, and `bytes` holds
  // the span from its first element to its last (kvcheck sends inputs with their layout, so
  // an engine sees transposed and padded views as a plug-in would).
  std::vector<int64_t> strides;
  std::string bytes;
};

struct WireMessage {
  nlohmann::json header;  // without "tensors" (filled by Encode, read by Decode)
  std::vector<WireTensor> tensors;
};

// The header line (with "tensors") and the payload, ready to write.
std::string EncodeMessage(const WireMessage& message);

// Bytes per element of a wire dtype; 0 for an unknown one.
int WireDTypeSize(const std::string& dtype);

// Parses a header line. Errors (kInternal): not a JSON object; "tensors" not a list of
// {"name": string, "dtype": known, "shape": list of non-negative integers}; sizes that
// overflow. On success `payload_bytes` is the sum of the tensors' sizes.
absl::StatusOr<WireMessage> DecodeHeader(const std::string& line, int64_t* payload_bytes);
// Splits `payload` into the tensors' bytes. REQUIRES: payload.size() == payload_bytes.
void FillPayload(WireMessage& message, const std::string& payload);

// A kvcheck tensor as a wire tensor and back: its elements in row-major order, or with
// `keep_layout` (and a non-contiguous view) its strides and the memory span they cover.
WireTensor ToWire(const std::string& name, const Tensor& tensor, bool keep_layout = false);
WireTensor ToWire(const std::string& name, const std::vector<int64_t>& values,
                  std::vector<int64_t> shape);
// The tensor called `name`, checked against `dtype` and `expected_shape` (-1: any length).
// Errors (kInternal, naming `what` and the field): missing, another dtype or shape.
absl::StatusOr<Tensor> FromWire(const WireMessage& message, const std::string& name, DType dtype,
                                const std::vector<int64_t>& expected_shape,
                                const std::string& what);
// The i64 tensor called `name` of shape `shape`, or an empty vector when it is absent.
absl::StatusOr<std::vector<int64_t>> IntegersFromWire(const WireMessage& message,
                                                      const std::string& name,
                                                      const std::vector<int64_t>& shape,
                                                      const std::string& what);

const char* WireDTypeName(DType dtype);

// The status of an {"ok": false, "code", "message"} reply, prefixed by `what`; OK for
// {"ok": true}. Errors (kInternal) for a reply without a boolean "ok" or with an unknown code.
absl::Status ReplyStatus(const nlohmann::json& header, const std::string& what);

// The protocol's names for the ABI's bits (PROTOCOL.md): strategy flags ("windowed", ...),
// kernel features ("scale", ...), stepper and model flags, and dtypes ("f32" =
// 1 << KVCHECK_DTYPE_F32, ...). One table each, read by kvcheck (hello replies) and written
// by kvcheck_engine_host.
struct WireBitName {
  const char* name;
  uint32_t bit;
};
absl::Span<const WireBitName> WireStrategyFlagNames();
absl::Span<const WireBitName> WireKernelFeatureNames();
absl::Span<const WireBitName> WireStepperFlagNames();
absl::Span<const WireBitName> WireModelFlagNames();
absl::Span<const WireBitName> WireDTypeNames();
// The names of the bits set in `bits`, as a JSON list.
nlohmann::json BitNames(uint32_t bits, absl::Span<const WireBitName> names);
// The bits a JSON list of names sets. Errors (kInternal, naming `what`): not a list, or an
// unknown entry.
absl::StatusOr<uint32_t> BitsFromNames(const nlohmann::json& list,
                                       absl::Span<const WireBitName> names,
                                       const std::string& what);

// A status code's protocol name ("INVALID_ARGUMENT") and back.
std::string CodeName(absl::StatusCode code);

}  // namespace kvcheck::engine

#endif  // KVCHECK_SRC_ENGINE_ENGINE_WIRE_H_
