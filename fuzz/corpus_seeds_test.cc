// The seeds of the attention corpora (the seed-* files), read through the targets' own
// decoding (attention_decoding.h), cover every boundary class of attention_classes.h, and the
// seeds of the cache_ops corpus, run as the target runs them (cache_ops_run.h), every class
// of CacheOpsSeedClasses() (the other corpus files, merged by campaigns, are left out: they
// cover what they cover by chance, and would hide seeds that no longer decode to their
// classes); the attention regressions still decode to what they were saved for. A change to
// the decoding that moves the seeds off their classes fails here: regenerate them with
// `bazel run //fuzz:corpus_seeds`.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "fuzz/attention_classes.h"
#include "fuzz/attention_decoding.h"
#include "fuzz/cache_ops_run.h"
#include "fuzz/draws.h"
#include "gtest/gtest.h"
#include "reference/reference_attention.h"
#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"

namespace kvcheck::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file),
                              std::istreambuf_iterator<char>());
}

AttentionInput Decode(const std::vector<uint8_t>& bytes, size_t kernel_count) {
  InputDraws in(bytes.data(), bytes.size());
  return DecodeAttentionInput(in, kernel_count);
}

size_t KernelCount(bool emulated) {
  size_t count = 0;
  for (const AttentionKernel& kernel : AttentionKernels()) count += kernel.emulated() == emulated;
  return count;
}

void ExpectEveryClassCovered(const char* target, bool emulated) {
  std::set<std::string> covered;
  int files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path("fuzz/corpus") / target)) {
    if (!entry.path().filename().string().starts_with("seed-")) continue;
    const AttentionInput input = Decode(ReadFile(entry.path()), KernelCount(emulated));
    covered.merge(AttentionClassesOf(input.kernel_case.problem));
    ++files;
  }
  ASSERT_GT(files, 0) << "no seeds in fuzz/corpus/" << target;
  for (const std::string& wanted : AttentionSeedClasses()) {
    EXPECT_TRUE(covered.contains(wanted))
        << "no seed of fuzz/corpus/" << target << " decodes to " << wanted
        << " (bazel run //fuzz:corpus_seeds writes seeds for every class)";
  }
}

TEST(CorpusSeedsTest, AttentionCorpusCoversEveryBoundaryClass) {
  ExpectEveryClassCovered("attention", false);
}

TEST(CorpusSeedsTest, MetalAttentionCorpusCoversEveryBoundaryClass) {
  ExpectEveryClassCovered("metal_attention", true);
}

TEST(CorpusSeedsTest, CacheOpsCorpusCoversEveryBoundaryClass) {
  std::vector<const CacheStrategy*> strategies;
  for (const CacheStrategy& strategy : CacheStrategies()) strategies.push_back(&strategy);
  std::set<std::string> covered;
  int files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator("fuzz/corpus/cache_ops")) {
    if (!entry.path().filename().string().starts_with("seed-")) continue;
    const std::vector<uint8_t> bytes = ReadFile(entry.path());
    InputDraws in(bytes.data(), bytes.size());
    RunCacheOps(in, strategies, &covered);
    ++files;
  }
  ASSERT_GT(files, 0) << "no seeds in fuzz/corpus/cache_ops";
  for (const std::string& wanted : CacheOpsSeedClasses()) {
    EXPECT_TRUE(covered.contains(wanted))
        << "no seed of fuzz/corpus/cache_ops reaches " << wanted
        << " (bazel run //fuzz:corpus_seeds writes seeds for every class)";
  }
}

// A row whose dot products pass the reference's overflow guard (2^126) before scaling but
// not after: the reference leaves it unchecked, and naive, which forms the products first,
// runs it.
TEST(CorpusSeedsTest, UnscaledDotOverflowRegressionKeepsItsCase) {
  const AttentionInput input =
      Decode(ReadFile("fuzz/regressions/attention/unscaled-dot-overflow"), KernelCount(false));
  const reference::AttentionProblem& p = input.kernel_case.problem;
  ASSERT_EQ(p.checked_rows.size(), 1u);
  ASSERT_EQ(p.batch * p.num_heads, 1);
  const int64_t row = p.checked_rows[0];
  const double scale = p.scale.has_value() ? *p.scale : 1.0 / std::sqrt(p.head_dim);
  bool only_unscaled_overflows = false;
  for (int64_t j = 0; j < p.kv_len; ++j) {
    double dot_abs = 0;
    for (int64_t d = 0; d < p.head_dim; ++d) {
      dot_abs += std::fabs(static_cast<double>(p.q[row * p.head_dim + d]) *
                           p.k[j * p.head_dim + d]);
    }
    if (dot_abs >= 0x1p126 && std::fabs(scale) * dot_abs < 0x1p126) only_unscaled_overflows = true;
  }
  EXPECT_TRUE(only_unscaled_overflows);
  const reference::ReferenceAttention exact = reference::ComputeReferenceAttention(p);
  EXPECT_EQ(exact.expectation[row * p.head_dim], reference::Expectation::kUnbounded);
  EXPECT_EQ(std::string(AttentionKernels()[input.kernel].name), "naive");
}

}  // namespace
}  // namespace kvcheck::fuzz
