// Token runs shrink to the fewest rows, tokens and chunks a failure needs
// (shrink_to_minimum.h).
#include <algorithm>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "properties/shrink_to_minimum.h"
#include "properties/token_run.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::properties {
namespace {

using ::testing::ElementsAre;

engine::ModelInfo Model(bool batches) {
  engine::ModelInfo info;
  info.name = "test";
  info.vocab_size = 48;
  info.max_tokens = 64;
  info.flags = batches ? KVCHECK_MODEL_BATCH : 0;
  return info;
}

TokenRun Shrink(const engine::ModelInfo& info, const std::function<bool(const TokenRun&)>& fails) {
  Shrunk shrunk;
  const std::optional<TokenRun> run = ShrinkToMinimum<TokenRun>(GenTokenRun(info, 48), fails, &shrunk);
  EXPECT_TRUE(shrunk.failed);
  EXPECT_FALSE(shrunk.budget_exhausted);
  return run.value_or(TokenRun{});
}

TEST(TokenRunShrinking, ALongChunkKeepsItsTokensInOneChunk) {
  const engine::ModelInfo info = Model(true);
  const TokenRun run = Shrink(info, [](const TokenRun& r) {
    return std::any_of(r.chunks.begin(), r.chunks.end(), [](int64_t c) { return c >= 5; });
  });
  EXPECT_EQ(run.batch, 1);
  EXPECT_EQ(run.length, 5);
  EXPECT_THAT(run.chunks, ElementsAre(5));
  EXPECT_THAT(run.tokens, ElementsAre(0, 0, 0, 0, 0));
}

TEST(TokenRunShrinking, ATokenAtAPositionKeepsOnlyThatToken) {
  const engine::ModelInfo info = Model(true);
  const TokenRun run = Shrink(info, [](const TokenRun& r) {
    return r.length > 3 && r.tokens[3] == 7;
  });
  EXPECT_EQ(run.batch, 1);
  EXPECT_THAT(run.tokens, ElementsAre(0, 0, 0, 7));
  EXPECT_THAT(run.chunks, ElementsAre(1, 1, 1, 1));
}

TEST(TokenRunShrinking, ASecondRowKeepsTwoRowsOfOneToken) {
  const engine::ModelInfo info = Model(true);
  const TokenRun run = Shrink(info, [](const TokenRun& r) { return r.batch > 1; });
  EXPECT_EQ(run.batch, 2);
  EXPECT_EQ(run.length, 1);
  EXPECT_THAT(run.tokens, ElementsAre(0, 0));
}

TEST(TokenRunShrinking, AChunkAfterTheFirstKeepsTheFewestChunks) {
  const engine::ModelInfo info = Model(false);
  const TokenRun run = Shrink(info, [](const TokenRun& r) {
    return r.chunks.size() >= 2 && r.chunks[1] >= 2;
  });
  EXPECT_EQ(run.length, 3);
  EXPECT_THAT(run.chunks, ElementsAre(1, 2));
}

}  // namespace
}  // namespace kvcheck::properties
