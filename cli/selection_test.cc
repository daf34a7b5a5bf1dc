#include "cli/selection.h"

#include "gtest/gtest.h"

namespace kvcheck::cli {
namespace {

TEST(NameSelection, GlobsListsAndHierarchy) {
  const NameSelection s("cache/ring, attention/*_vs_reference,flash*");
  EXPECT_TRUE(s.Matches("cache/ring/f16"));
  EXPECT_TRUE(s.Matches("cache/ring"));
  EXPECT_FALSE(s.Matches("cache/ringx/f16"));
  EXPECT_TRUE(s.Matches("attention/metal_vector_vs_reference"));
  EXPECT_TRUE(s.Matches("flash/scalar"));
  EXPECT_FALSE(s.Matches("naive"));
  EXPECT_TRUE(NameSelection("").Matches("anything"));
  EXPECT_TRUE(NameSelection("").empty());
}

TEST(NameSelection, UnmatchedPatternSuggestsTheNearest) {
  const std::vector<std::string> kernels = {"naive", "flash", "flash/scalar", "metal"};
  EXPECT_TRUE(NameSelection("flash,naive").CheckAgainst("--kernel", "kernel", kernels).ok());
  const absl::Status status = NameSelection("flsh").CheckAgainst("--kernel", "kernel", kernels);
  EXPECT_EQ(status.message(), "--kernel: no kernel matches 'flsh' (did you mean flash?)");
  EXPECT_EQ(NameSelection("zzzzzzzz").CheckAgainst("--kernel", "kernel", kernels).message(),
            "--kernel: no kernel matches 'zzzzzzzz' (kvcheck list shows them)");
}

TEST(NearestNames, TyposInTheLastPartAndPrefixes) {
  const std::vector<std::string> names = {"cache/ring/f16", "cache/prealloc/f16", "generation/ring"};
  EXPECT_EQ(NearestNames("cache/rign/f16", names, 1), std::vector<std::string>{"cache/ring/f16"});
  EXPECT_EQ(NearestNames("gener", names, 1), std::vector<std::string>{"generation/ring"});
}

}  // namespace
}  // namespace kvcheck::cli
