// .metal kernels (testdata/executor_kernels.metal) translated, compiled and dispatched.
#include "src/metal/msl_cpu/msl_runtime.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/tensor/dtype.h"

namespace kvcheck::msl {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

template <typename T>
BufferArgument Bind(std::vector<T>& v, size_t offset_elements = 0) {
  return {v.data(), v.size() * sizeof(T), offset_elements * sizeof(T)};
}

TEST(MslRuntimeTest, TranslatedKernelsRegisterUnderTheirHostNames) {
  const std::vector<std::string> names = RegisteredKernels();
  EXPECT_THAT(names, Contains("group_sum_float"));
  EXPECT_THAT(names, Contains("group_sum_half"));
  EXPECT_THAT(names, Contains("divergent_barrier"));
  EXPECT_THAT(names, Contains("unwritten_read"));
}

TEST(MslRuntimeTest, GroupSumWithBuffersConstantsAndThreadgroupMemory) {
  std::vector<float> in(3 * 96), out(3, -1.0f);
  std::vector<float> factor = {0.5f};
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7);
  DispatchDescription d;
  d.kernel = "group_sum_float";
  d.threadgroups = {3, 1, 1};
  d.threads_per_threadgroup = {96, 1, 1};
  d.buffers = {{0, Bind(in)}, {1, Bind(out)}, {2, Bind(factor)}};
  d.constants = {{0, ConstantValue::Bool(true)}};
  const absl::Status status = Dispatch(d);
  ASSERT_TRUE(status.ok()) << status;
  for (int g = 0; g < 3; ++g) {
    float expected = 0;
    for (int i = 0; i < 96; ++i) expected += static_cast<float>((g * 96 + i) % 7);
    EXPECT_EQ(out[g], expected * 0.5f) << "group " << g;
  }
}

TEST(MslRuntimeTest, AnOutOfBoundsDeviceReadIsAnErrorNamingTheBufferAndThread) {
  // Bound at offset 0 and one element in: the binding holds 64 floats either way, and the
  // last thread's read of the 65th is past the allocation, whatever the offset.
  for (const size_t offset : {size_t{0}, size_t{1}}) {
    SCOPED_TRACE(offset);
    std::vector<float> in(64 + offset, 1.0f), out(64);
    uint32_t n = 64;
    DispatchDescription d;
    d.kernel = "off_by_one_read";
    d.threads_per_threadgroup = {64, 1, 1};
    d.buffers = {{0, Bind(in, offset)}, {1, Bind(out)}, {2, {&n, sizeof n, 0}}};
    const absl::Status status = Dispatch(d);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
    EXPECT_THAT(status.message(), HasSubstr("thread (63, 0, 0)"));
    EXPECT_THAT(status.message(), HasSubstr("out-of-bounds device memory access: 4 bytes at byte "
                                            "256 from the start of [[buffer(0)]]"));
    // With one more element the same kernel stays inside.
    std::vector<float> longer(65 + offset, 1.0f);
    d.buffers[0] = Bind(longer, offset);
    EXPECT_TRUE(Dispatch(d).ok());
  }
}

// A threadgroup pointer parameter is checked against the length the dispatch gives it, like
// a device buffer against its allocation: a store past it is an error naming the binding and
// the thread, not a write into the emulator's heap.
TEST(MslRuntimeTest, AThreadgroupArgumentIsCheckedAgainstItsLength) {
  std::vector<float> in(64), out(64, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  DispatchDescription d;
  d.kernel = "staged_reverse";
  d.threads_per_threadgroup = {64, 1, 1};
  d.buffers = {{0, Bind(in)}, {1, Bind(out)}};
  d.threadgroup_arguments[0] = 63 * sizeof(float);
  const absl::Status status = Dispatch(d);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("thread (63, 0, 0)"));
  EXPECT_THAT(status.message(), HasSubstr("out-of-bounds threadgroup memory access: 4 bytes at "
                                          "byte 252 of [[threadgroup(0)]], whose length the "
                                          "dispatch set to 252 bytes"));
  d.threadgroup_arguments[0] = 64 * sizeof(float);
  const absl::Status fits = Dispatch(d);
  ASSERT_TRUE(fits.ok()) << fits;
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], static_cast<float>(63 - i)) << i;
}

TEST(MslRuntimeTest, AReadBeforeABindingIsAllowedOnlyInsideItsAllocation) {
  std::vector<float> in = {7.0f, 8.0f}, out(1, -1.0f);
  DispatchDescription d;
  d.kernel = "read_before_binding";
  d.threads_per_threadgroup = {1, 1, 1};
  d.buffers = {{0, Bind(in, 1)}, {1, Bind(out)}};
  const absl::Status inside = Dispatch(d);
  ASSERT_TRUE(inside.ok()) << inside;
  EXPECT_EQ(out[0], 7.0f);
  d.buffers[0] = Bind(in);
  const absl::Status before = Dispatch(d);
  EXPECT_EQ(before.code(), absl::StatusCode::kFailedPrecondition) << before;
  EXPECT_THAT(before.message(), HasSubstr("4 bytes at byte -4 from the start of [[buffer(0)]]"));
}

TEST(MslRuntimeTest, AMisalignedBindingIsAnErrorNotAMisalignedRead) {
  // A byte offset of 1 into a float buffer: Metal requires offsets aligned to the element.
  std::vector<float> in(66, 1.0f), out(64);
  uint32_t n = 64;
  DispatchDescription d;
  d.kernel = "off_by_one_read";
  d.threads_per_threadgroup = {64, 1, 1};
  d.buffers = {{0, {in.data(), in.size() * sizeof(float), 1}}, {1, Bind(out)}, {2, {&n, sizeof n, 0}}};
  const absl::Status status = Dispatch(d);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("misaligned device memory access: [[buffer(0)]] is "
                                          "bound 1 bytes past a 4-byte boundary"));
}

TEST(MslRuntimeTest, AConstantReferenceMustFitInItsBuffer) {
  std::vector<float> in(65, 1.0f), out(64);
  uint16_t too_small = 64;
  DispatchDescription d;
  d.kernel = "off_by_one_read";
  d.threads_per_threadgroup = {64, 1, 1};
  d.buffers = {{0, Bind(in)}, {1, Bind(out)}, {2, {&too_small, sizeof too_small, 0}}};
  const absl::Status status = Dispatch(d);
  EXPECT_THAT(status.message(), HasSubstr("4 bytes at byte 0 from the start of [[buffer(2)]]"));
}

TEST(MslRuntimeTest, AMisalignedConstantReferenceIsAnError) {
  std::vector<float> in(65, 1.0f), out(64);
  alignas(4) uint8_t bytes[8] = {};
  const uint32_t n = 64;
  std::memcpy(bytes + 2, &n, sizeof n);
  DispatchDescription d;
  d.kernel = "off_by_one_read";
  d.threads_per_threadgroup = {64, 1, 1};
  d.buffers = {{0, Bind(in)}, {1, Bind(out)}, {2, {bytes, sizeof bytes, 2}}};
  const absl::Status status = Dispatch(d);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("[[buffer(2)]] is bound 2 bytes past a 4-byte boundary"));
}

TEST(MslRuntimeTest, HalfInputsAndAByteOffset) {
  // The input binding starts 32 elements into its buffer (setBuffer:offset: in bytes).
  std::vector<uint16_t> in(32 + 64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = F32ToF16Bits(i < 32 ? 1000.0f : 0.25f);
  std::vector<float> out(1), factor = {1.0f};
  DispatchDescription d;
  d.kernel = "group_sum_half";
  d.threads_per_threadgroup = {64, 1, 1};
  d.buffers = {{0, Bind(in, 32)}, {1, Bind(out)}, {2, Bind(factor)}};
  d.constants = {{0, ConstantValue::Bool(false)}};
  const absl::Status status = Dispatch(d);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(out[0], 16.0f);
}

TEST(MslRuntimeTest, MissingBindingsAndConstantsAreNamed) {
  std::vector<float> in(32), out(1);
  DispatchDescription d;
  d.kernel = "group_sum_float";
  d.threads_per_threadgroup = {32, 1, 1};
  d.buffers = {{0, Bind(in)}, {1, Bind(out)}};
  d.constants = {{0, ConstantValue::Bool(true)}};
  EXPECT_THAT(Dispatch(d).message(), HasSubstr("[[buffer(2)]] is not bound"));
  std::vector<float> factor = {1};
  d.buffers[2] = Bind(factor);
  d.constants.clear();
  EXPECT_THAT(Dispatch(d).message(),
              HasSubstr("function constant scale_output (index 0) is read but the dispatch "
                        "does not define it"));
  d.kernel = "no_such_kernel";
  EXPECT_EQ(Dispatch(d).code(), absl::StatusCode::kNotFound);
}

// The report of `kernel` (its barrier reached by some of 32 threads only).
absl::Status RunDivergentBarrier(const char* kernel) {
  std::vector<float> out(32);
  DispatchDescription d;
  d.kernel = kernel;
  d.threads_per_threadgroup = {32, 1, 1};
  d.buffers = {{0, Bind(out)}};
  return Dispatch(d);
}

TEST(MslRuntimeTest, ADivergentBarrierInAMetalSourceIsReportedAtItsLine) {
  const absl::Status status = RunDivergentBarrier("divergent_barrier");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("kernel 'divergent_barrier'"));
  EXPECT_THAT(status.message(), HasSubstr("executor_kernels.metal:41"));
  EXPECT_THAT(status.message(), HasSubstr("[index 16, simdgroup 0 lane 16] returned without "
                                          "reaching it"));
}

TEST(MslRuntimeTest, AnErrorInAnIncludedHeaderIsReportedAtItsLine) {
  const absl::Status status = RunDivergentBarrier("divergent_barrier_in_header");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("executor_helpers.h:6"));
  // divergent_barrier's line (above) comes after the #include: its number is the .metal
  // file's own.
}

TEST(MslRuntimeTest, SimdgroupMatrixProduct) {
  std::vector<float> a(64), bt(64), c(64, -1.0f);
  for (int i = 0; i < 64; ++i) {
    a[i] = static_cast<float>(i % 5) - 2.0f;
    bt[i] = static_cast<float>(i % 3) + 0.5f;
  }
  DispatchDescription d;
  d.kernel = "matrix_product";
  d.threads_per_threadgroup = {32, 1, 1};
  d.buffers = {{0, Bind(a)}, {1, Bind(bt)}, {2, Bind(c)}};
  const absl::Status status = Dispatch(d);
  ASSERT_TRUE(status.ok()) << status;
  for (int r = 0; r < 8; ++r) {
    for (int col = 0; col < 8; ++col) {
      float expected = r == col ? 1.0f : 0.0f;
      for (int k = 0; k < 8; ++k) expected += a[r * 8 + k] * bt[col * 8 + k];
      EXPECT_EQ(c[r * 8 + col], expected) << r << ", " << col;
    }
  }
}

TEST(MslRuntimeTest, UnwrittenThreadgroupMemoryReadsAsNaN) {
  std::vector<float> out(64);
  DispatchDescription d;
  d.kernel = "unwritten_read";
  d.threads_per_threadgroup = {64, 1, 1};
  d.buffers = {{0, Bind(out)}};
  ASSERT_TRUE(Dispatch(d).ok());
  for (float x : out) EXPECT_TRUE(std::isnan(x));
}

}  // namespace
}  // namespace kvcheck::msl
