#include "src/metal/msl_cpu/simt_executor.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvcheck::metal {
namespace {

using ::testing::HasSubstr;

DispatchOptions Options(uint32_t groups, uint32_t threads) {
  DispatchOptions o;
  o.kernel = "test";
  o.threadgroups = {groups, 1, 1};
  o.threads_per_threadgroup = {threads, 1, 1};
  return o;
}

TEST(SimtExecutorTest, EveryThreadRunsOnceWithItsIds) {
  std::vector<int> seen(3 * 70, 0);
  const absl::Status status = RunDispatch(Options(3, 70), [&] {
    const ThreadIds& id = CurrentThread();
    EXPECT_EQ(id.thread_position_in_grid.x,
              id.threadgroup_position_in_grid.x * 70 + id.thread_index_in_threadgroup);
    EXPECT_EQ(id.simdgroup_index_in_threadgroup * 32 + id.thread_index_in_simdgroup,
              id.thread_index_in_threadgroup);
    EXPECT_EQ(id.simdgroups_per_threadgroup, 3u);
    ++seen[id.thread_position_in_grid.x];
  });
  ASSERT_TRUE(status.ok()) << status;
  for (int n : seen) EXPECT_EQ(n, 1);
}

TEST(SimtExecutorTest, ABarrierOrdersThreadgroupMemory) {
  // Each thread writes its slot, meets the others, then reads its neighbour's: without the
  // barrier the early threads would read the poison.
  static const char site = 0;
  std::vector<float> out(64);
  const absl::Status status = RunDispatch(Options(1, 64), [&] {
    float* shared = static_cast<float*>(ThreadgroupMemory(&site, 64 * sizeof(float), 4));
    const uint32_t i = CurrentThread().thread_index_in_threadgroup;
    shared[i] = static_cast<float>(i);
    ThreadgroupBarrier();
    out[i] = shared[(i + 1) % 64];
  });
  ASSERT_TRUE(status.ok()) << status;
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], static_cast<float>((i + 1) % 64));
}

TEST(SimtExecutorTest, UnwrittenThreadgroupMemoryReadsAsPoison) {
  static const char site = 0;
  float read = 0;
  int32_t read_int = 0;
  const absl::Status status = RunDispatch(Options(1, 1), [&] {
    void* memory = ThreadgroupMemory(&site, 8, 4);
    std::memcpy(&read, memory, 4);
    std::memcpy(&read_int, static_cast<char*>(memory) + 4, 4);
  });
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(std::isnan(read));
  EXPECT_EQ(read_int, -1);
}

TEST(SimtExecutorTest, EveryThreadgroupStartsWithPoisonedMemory) {
  // Threadgroup memory lives as long as its threadgroup: what one group wrote is never seen by
  // the next (a kernel that reads before it writes must read poison in every group, not the
  // last group's values). Each group reads its block, then fills it with its own index.
  static const char site = 0;
  constexpr uint32_t kGroups = 3;
  std::vector<float> read(kGroups, 0.0f);
  std::vector<int32_t> read_int(kGroups, 0);
  const absl::Status status = RunDispatch(Options(kGroups, 2), [&] {
    const ThreadIds& ids = CurrentThread();
    void* memory = ThreadgroupMemory(&site, 8, 4);
    if (ids.thread_index_in_threadgroup == 0) {
      const uint32_t group = ids.threadgroup_position_in_grid.x;
      std::memcpy(&read[group], memory, 4);
      std::memcpy(&read_int[group], static_cast<char*>(memory) + 4, 4);
      const float value = static_cast<float>(group);
      const int32_t index = static_cast<int32_t>(group);
      std::memcpy(memory, &value, 4);
      std::memcpy(static_cast<char*>(memory) + 4, &index, 4);
    }
  });
  ASSERT_TRUE(status.ok()) << status;
  for (uint32_t g = 0; g < kGroups; ++g) {
    EXPECT_TRUE(std::isnan(read[g])) << "threadgroup " << g << " read " << read[g];
    EXPECT_EQ(read_int[g], -1) << "threadgroup " << g;
  }
}

TEST(SimtExecutorTest, SimdSumFollowsTheDocumentedButterfly) {
  // Values whose f32 sum depends on the order: the result must be the butterfly's, bit for
  // bit, on every lane.
  std::vector<float> values(32);
  for (int l = 0; l < 32; ++l) values[l] = (l % 3 == 0 ? 1e8f : 1.0f) * (l % 2 ? -1.f : 1.f) + l;
  std::vector<float> v = values;
  for (int offset = 16; offset >= 1; offset /= 2) {
    std::vector<float> next(32);
    for (int l = 0; l < 32; ++l) next[l] = v[l] + v[l ^ offset];
    v = next;
  }
  std::vector<float> got(32);
  const absl::Status status = RunDispatch(Options(1, 32), [&] {
    const uint32_t l = CurrentThread().thread_index_in_simdgroup;
    got[l] = SimdSum(values[l]);
  });
  ASSERT_TRUE(status.ok()) << status;
  for (int l = 0; l < 32; ++l) EXPECT_EQ(got[l], v[0]) << "lane " << l;
}

TEST(SimtExecutorTest, ShuffleBroadcastMaxAndAPartialSimdgroup) {
  // 40 threads: the second simdgroup has 8 lanes; absent lanes are the identity.
  std::vector<float> maxima(40), shuffled(40), broadcast(40);
  std::vector<int32_t> sums(40);
  const absl::Status status = RunDispatch(Options(1, 40), [&] {
    const ThreadIds& id = CurrentThread();
    const uint32_t i = id.thread_index_in_threadgroup;
    maxima[i] = SimdMax(static_cast<float>(i));
    shuffled[i] = SimdShuffleXor(static_cast<float>(i), 1u);
    broadcast[i] = SimdBroadcast(static_cast<float>(i), 3u);
    sums[i] = SimdSum(int32_t{1});
  });
  ASSERT_TRUE(status.ok()) << status;
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(maxima[i], i < 32 ? 31.0f : 39.0f);
    EXPECT_EQ(shuffled[i], static_cast<float>(i ^ 1));
    EXPECT_EQ(broadcast[i], i < 32 ? 3.0f : 35.0f);
    EXPECT_EQ(sums[i], i < 32 ? 32 : 8);
  }
}

TEST(SimtExecutorTest, ABarrierSkippedByOneThreadIsReported) {
  const absl::Status status = RunDispatch(Options(2, 64), [&] {
    if (CurrentThread().thread_index_in_threadgroup == 5) return;
    ThreadgroupBarrier();
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("kernel 'test', threadgroup (0, 0, 0)"));
  EXPECT_THAT(status.message(), HasSubstr("waits at threadgroup_barrier at"));
  EXPECT_THAT(status.message(), HasSubstr("[index 5, simdgroup 0 lane 5] returned without "
                                          "reaching it"));
}

TEST(SimtExecutorTest, ThreadsAtDifferentBarriersAreReported) {
  const absl::Status status = RunDispatch(Options(1, 64), [&] {
    if (CurrentThread().thread_index_in_threadgroup < 32) {
      ThreadgroupBarrier();
    } else {
      ThreadgroupBarrier();
    }
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("[index 32, simdgroup 1 lane 0] waits at "
                                          "threadgroup_barrier"));
}

TEST(SimtExecutorTest, ASimdFunctionReachedByPartOfASimdgroupIsReported) {
  const absl::Status status = RunDispatch(Options(1, 32), [&] {
    if (CurrentThread().thread_index_in_simdgroup >= 20) return;
    (void)SimdSum(1.0f);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("waits at simd_sum at"));
  EXPECT_THAT(status.message(), HasSubstr("uniform control flow"));
  EXPECT_THAT(status.message(), HasSubstr("lane 20] returned before reaching it"));
  // Without the uniform declaration the lanes that remain are summed.
  DispatchOptions relaxed = Options(1, 32);
  relaxed.uniform_simd = false;
  float sum = 0;
  ASSERT_TRUE(RunDispatch(relaxed, [&] {
                if (CurrentThread().thread_index_in_simdgroup >= 20) return;
                sum = SimdSum(1.0f);
              }).ok());
  EXPECT_EQ(sum, 20.0f);
}

TEST(SimtExecutorTest, ASimdFunctionAgainstABarrierIsReported) {
  const absl::Status status = RunDispatch(Options(1, 32), [&] {
    if (CurrentThread().thread_index_in_simdgroup == 0) {
      ThreadgroupBarrier();
    } else {
      (void)SimdMax(1.0f);
    }
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("waits at simd_max"));
  EXPECT_THAT(status.message(), HasSubstr("waits at threadgroup_barrier"));
}

TEST(SimtExecutorTest, ThreadgroupMemoryOverTheBudgetIsReported) {
  static const char a = 0, b = 0;
  const absl::Status status = RunDispatch(Options(1, 4), [&] {
    (void)ThreadgroupMemory(&a, 16 * 1024, 16);
    (void)ThreadgroupMemory(&b, 16 * 1024 + 4, 16);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("over the 32768-byte budget"));
  EXPECT_THAT(status.message(), HasSubstr("simt_executor_test.cc"));
}

TEST(SimtExecutorTest, ASimdExchangeOverSixtyFourBytesIsReported) {
  struct Big {
    char bytes[65];
  };
  const absl::Status status = RunDispatch(Options(1, 32), [&] {
    (void)SimdBroadcast(Big{}, 0u);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("simd_broadcast of more than 64 bytes"));
}

TEST(SimtExecutorTest, AThreadgroupOfNoThreadsIsRefused) {
  EXPECT_EQ(RunDispatch(Options(1, 0), [] {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunDispatch(Options(1, 1025), [] {}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvcheck::metal
