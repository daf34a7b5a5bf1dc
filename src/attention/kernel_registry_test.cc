// The kernel table: names, and which calls an emulated kernel admits (its time budget scales
// with every query row it runs: batch x heads x query rows, and with the keys).
#include "src/attention/kernel_registry.h"

#include <cstdint>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "src/tensor/tensor.h"

namespace kvcheck {
namespace {

Tensor Shape(int64_t b, int64_t h, int64_t s) { return *Tensor::Zeros(DType::kF32, {b, h, s, 1}); }

TEST(KernelRegistry, NamesAreUniqueAndFound) {
  std::set<std::string> names;
  for (const AttentionKernel& kernel : AttentionKernels()) {
    EXPECT_TRUE(names.insert(kernel.name).second) << kernel.name;
    EXPECT_EQ(FindAttentionKernel(kernel.name), &kernel);
  }
  EXPECT_EQ(FindAttentionKernel("no such kernel"), nullptr);
  EXPECT_NE(FindAttentionKernel("flash"), nullptr);
  EXPECT_NE(FindAttentionKernel("metal"), nullptr);
}

TEST(KernelRegistry, CpuKernelsAdmitAnySize) {
  for (const AttentionKernel& kernel : AttentionKernels()) {
    if (kernel.emulated()) continue;
    EXPECT_TRUE(kernel.admits(Shape(64, 64, 64), Shape(64, 64, 4096))) << kernel.name;
  }
}

// For each emulated kernel: a small call fits; the budget is reached by batch rows, heads or
// query rows alike (the product is what the emulator runs), and by keys; and a call that fits
// still fits with fewer of any of them.
TEST(KernelRegistry, EmulatedKernelsBudgetEveryQueryRow) {
  for (const AttentionKernel& kernel : AttentionKernels()) {
    if (!kernel.emulated()) continue;
    SCOPED_TRACE(kernel.name);
    const int64_t kv_len = 64;
    ASSERT_TRUE(kernel.admits(Shape(1, 1, 1), Shape(1, 1, kv_len)));
    // The fewest heads that do not fit (one query row each).
    int64_t refused = 1;
    while (refused < 4096 && kernel.admits(Shape(1, refused, 1), Shape(1, 1, kv_len))) {
      refused *= 2;
    }
    ASSERT_LT(refused, 4096) << "no head count up to 4096 is refused";
    EXPECT_FALSE(kernel.admits(Shape(refused, 1, 1), Shape(refused, 1, kv_len)))
        << refused << " batch rows of one head fit where as many heads do not";
    EXPECT_FALSE(kernel.admits(Shape(2, refused / 2, 1), Shape(2, 1, kv_len)));
    EXPECT_TRUE(kernel.admits(Shape(1, refused / 2, 1), Shape(1, 1, kv_len)));
    EXPECT_TRUE(kernel.admits(Shape(refused / 2, 1, 1), Shape(refused / 2, 1, kv_len)));
    // Keys: enough of them refuse one row (64 fit, above).
    EXPECT_FALSE(kernel.admits(Shape(1, 1, 1), Shape(1, 1, int64_t{1} << 16)));
  }
}

}  // namespace
}  // namespace kvcheck
