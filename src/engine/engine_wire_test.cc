#include "src/engine/engine_wire.h"

#include <cstring>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvcheck::engine {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<WireMessage> Decode(const std::string& bytes) {
  const size_t newline = bytes.find('\n');
  int64_t payload_bytes = 0;
  absl::StatusOr<WireMessage> message = DecodeHeader(bytes.substr(0, newline), &payload_bytes);
  if (!message.ok()) return message;
  EXPECT_EQ(static_cast<size_t>(payload_bytes), bytes.size() - newline - 1);
  FillPayload(*message, bytes.substr(newline + 1));
  return message;
}

TEST(EngineWireTest, TensorsRoundTripThroughAMessage) {
  const Tensor k = *Tensor::FromFloats(DType::kBF16, {1, 2, 3, 1}, {1, -2, 3.5, 0, 65504, -0.25});
  const std::vector<int64_t> positions = {5, -1, 7};
  const std::string bytes = EncodeMessage(
      {{{"op", "append"}, {"cache", 3}}, {ToWire("k", k), ToWire("positions", positions, {1, 3})}});
  EXPECT_EQ(bytes.find('\n'), bytes.find("}\n") + 1);  // one header line, then raw bytes
  absl::StatusOr<WireMessage> decoded = Decode(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->header["op"], "append");
  EXPECT_FALSE(decoded->header.contains("tensors"));
  absl::StatusOr<Tensor> back = FromWire(*decoded, "k", DType::kBF16, {1, 2, -1, 1}, "test");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToBits(), k.ToBits());
  absl::StatusOr<std::vector<int64_t>> ints = IntegersFromWire(*decoded, "positions", {1, 3}, "test");
  ASSERT_TRUE(ints.ok());
  EXPECT_EQ(*ints, positions);
}

TEST(EngineWireTest, StridedTensorsAreSentInRowMajorOrder) {
  const Tensor t = *Tensor::FromFloats(DType::kF32, {2, 3}, {0, 1, 2, 3, 4, 5});
  absl::StatusOr<Layout> transposed = Layout::Strided({3, 2}, {1, 3}, 0);
  const Tensor view = *Tensor::View(t.storage(), *transposed);
  const WireTensor wire = ToWire("x", view);
  std::vector<float> values(6);
  std::memcpy(values.data(), wire.bytes.data(), 24);
  EXPECT_EQ(values, (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(EngineWireTest, MalformedHeadersNameTheField) {
  int64_t bytes = 0;
  EXPECT_THAT(DecodeHeader("not json", &bytes).status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(DecodeHeader("[1, 2]", &bytes).status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(DecodeHeader(R"({"tensors": 3})", &bytes).status().message(),
              HasSubstr("\"tensors\" is not a list"));
  EXPECT_THAT(DecodeHeader(R"({"tensors": [{"name": "k", "dtype": "f64", "shape": [1]}]})", &bytes)
                  .status()
                  .message(),
              HasSubstr("tensors[0] (k) \"dtype\""));
  EXPECT_THAT(DecodeHeader(R"({"tensors": [{"name": "k", "dtype": "f32", "shape": [2, -1]}]})",
                           &bytes)
                  .status()
                  .message(),
              HasSubstr("not a non-negative integer"));
  EXPECT_THAT(
      DecodeHeader(R"({"tensors": [{"name": "k", "dtype": "f32", "shape": [4611686018427387904, 8]}]})",
                   &bytes)
          .status()
          .message(),
      HasSubstr("tensors[0] (k)"));  // the element count overflows
  EXPECT_THAT(
      DecodeHeader(R"({"tensors": [{"name": "k", "dtype": "f32", "shape": [2, 2], "strides": [1]}]})",
                   &bytes)
          .status()
          .message(),
      HasSubstr("\"strides\" is not a list as long as \"shape\""));
}

TEST(EngineWireTest, InputsKeepTheirLayoutOnTheWire) {
  // A (2, 3) view transposed from a (3, 2) buffer, and padded: strides (1, 4) over 12 floats.
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(i);
  const Tensor buffer = *Tensor::FromFloats(DType::kF32, {12}, values);
  const Tensor view = *Tensor::View(buffer.storage(), *Layout::Strided({2, 3}, {1, 4}, 1));
  const WireTensor wire = ToWire("k", view, /*keep_layout=*/true);
  EXPECT_EQ(wire.strides, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(wire.bytes.size(), 10u * 4);  // elements 1 .. 10 of the buffer
  absl::StatusOr<WireMessage> decoded = Decode(EncodeMessage({{{"op", "append"}}, {wire}}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  absl::StatusOr<Tensor> back = FromWire(*decoded, "k", DType::kF32, {2, 3}, "test");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->is_contiguous());
  EXPECT_EQ(back->strides(), view.strides());
  EXPECT_EQ(back->ToFloats(), view.ToFloats());
  EXPECT_TRUE(ToWire("k", view).strides.empty());  // without keep_layout: row-major
}

TEST(EngineWireTest, ReplyStatusReadsCodesAndRejectsUnknownOnes) {
  EXPECT_TRUE(ReplyStatus({{"ok", true}}, "op").ok());
  const absl::Status error =
      ReplyStatus({{"ok", false}, {"code", "OUT_OF_RANGE"}, {"message", "too long"}}, "append");
  EXPECT_EQ(error.code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(error.message(), HasSubstr("append: too long"));
  EXPECT_THAT(ReplyStatus({{"ok", false}, {"code", "TEAPOT"}}, "op").message(),
              HasSubstr("unknown \"code\" 'TEAPOT'"));
  EXPECT_THAT(ReplyStatus({{"fine", 1}}, "op").message(), HasSubstr("no boolean \"ok\""));
}

TEST(EngineWireTest, FromWireChecksDtypeShapeAndPresence) {
  const WireMessage m{{}, {ToWire("k", *Tensor::Zeros(DType::kF16, {1, 1, 2, 4}))}};
  EXPECT_THAT(FromWire(m, "k", DType::kF32, {1, 1, -1, 4}, "r").status().message(),
              HasSubstr("tensor k is f16, expected f32"));
  EXPECT_THAT(FromWire(m, "k", DType::kF16, {1, 1, 3, 4}, "r").status().message(),
              HasSubstr("has shape [1, 1, 2, 4], expected [1, 1, 3, 4]"));
  EXPECT_THAT(FromWire(m, "v", DType::kF16, {1, 1, 2, 4}, "r").status().message(),
              HasSubstr("no tensor v"));
  // A wrong size in any one dimension, the last included, and a wrong rank.
  const std::vector<int64_t> shape = {1, 1, 2, 4};
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t> expected = shape;
    ++expected[d];
    EXPECT_THAT(FromWire(m, "k", DType::kF16, expected, "r").status().message(),
                HasSubstr("has shape [1, 1, 2, 4]"))
        << "dimension " << d;
    expected[d] = -1;
    EXPECT_TRUE(FromWire(m, "k", DType::kF16, expected, "r").ok()) << "dimension " << d;
  }
  EXPECT_THAT(FromWire(m, "k", DType::kF16, {1, 1, 2}, "r").status().message(),
              HasSubstr("has shape [1, 1, 2, 4], expected [1, 1, 2]"));
  EXPECT_THAT(FromWire(m, "k", DType::kF16, {1, 1, 2, 4, 1}, "r").status().message(),
              HasSubstr("has shape [1, 1, 2, 4], expected [1, 1, 2, 4, 1]"));
  const WireMessage ints{{}, {ToWire("positions", std::vector<int64_t>{3, 4, 5, 6}, {2, 2})}};
  EXPECT_THAT(IntegersFromWire(ints, "positions", {2, 3}, "r").status().message(),
              HasSubstr("has shape [2, 2], expected [2, 3]"));
}

}  // namespace
}  // namespace kvcheck::engine
