// Cache command sequences shrink to the commands and sizes a failure needs: for a synthetic
// failure about one command's input, one command of the smallest shape is left, with every
// other input plain (shrink_to_minimum.h).
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "properties/cache_machine.h"
#include "properties/shrink_to_minimum.h"
#include "src/cache/registry.h"

namespace kvcheck::properties {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

struct MachineRun {
  CacheMachineModel initial;
  CacheCommands commands;
};

std::vector<std::string> Shown(const CacheCommands& commands) {
  std::vector<std::string> shown;
  for (const auto& command : commands) {
    std::ostringstream out;
    command->show(out);
    shown.push_back(out.str());
  }
  return shown;
}

// The first shrunk run whose commands' texts satisfy `fails`, for `strategy` in f32.
MachineRun Shrink(const char* strategy, const std::function<bool(const std::vector<std::string>&)>& fails) {
  const CacheStrategy* found = FindCacheStrategy(strategy);
  EXPECT_NE(found, nullptr);
  const rc::Gen<MachineRun> gen = rc::gen::exec([found] {
    MachineRun run;
    run.initial = *GenInitialModel(*found, DType::kF32);
    run.commands = *GenCacheCommands(run.initial);
    return run;
  });
  Shrunk shrunk;
  const std::optional<MachineRun> run = ShrinkToMinimum<MachineRun>(
      gen, [&](const MachineRun& r) { return fails(Shown(r.commands)); }, &shrunk, 500);
  EXPECT_TRUE(shrunk.failed);
  EXPECT_FALSE(shrunk.budget_exhausted);
  return run.value_or(MachineRun{});
}

bool Any(const std::vector<std::string>& shown, const std::function<bool(const std::string&)>& p) {
  return std::any_of(shown.begin(), shown.end(), p);
}

void ExpectMinimalInitialModel(const CacheMachineModel& m) {
  EXPECT_EQ(m.config.initial_capacity, 0);
  EXPECT_EQ(m.query_group, 1);
}

TEST(CacheMachineShrinking, AStridedVKeepsOnePrefillOfTheSmallestShape) {
  const MachineRun run = Shrink("prealloc", [](const std::vector<std::string>& shown) {
    return Any(shown, [](const std::string& s) {
      return s.rfind("Prefill", 0) == 0 && s.find(", v contiguous") == std::string::npos;
    });
  });
  ExpectMinimalInitialModel(run.initial);
  const std::vector<std::string> shown = Shown(run.commands);
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_THAT(shown[0], HasSubstr("Prefill(branch 0, S=2, f32 B=1 KH=1 D=1, k contiguous, v "));
  EXPECT_THAT(shown[0], Not(HasSubstr("NaN")));
}

TEST(CacheMachineShrinking, ADecodeOnAForkedBranchKeepsTheForkAndTheDecode) {
  const MachineRun run = Shrink("prealloc", [](const std::vector<std::string>& shown) {
    return Any(shown, [](const std::string& s) { return s.rfind("Decode(branch 1", 0) == 0; });
  });
  ExpectMinimalInitialModel(run.initial);
  EXPECT_THAT(Shown(run.commands),
              ElementsAre("Fork(branch 0 -> branch new)",
                          "Decode(branch 1, S=1, f32 B=1 KH=1 D=1, k contiguous, v contiguous)"));
}

TEST(CacheMachineShrinking, ANanInAnAppendKeepsOneAppendWithOneSpecialValue) {
  const MachineRun run = Shrink("ring", [](const std::vector<std::string>& shown) {
    return Any(shown, [](const std::string& s) { return s.find("NaN/inf in") != std::string::npos; });
  });
  ExpectMinimalInitialModel(run.initial);
  // One append of the smallest shape (a prefill keeps its 2 tokens: the command's kind does
  // not shrink) with one special value.
  EXPECT_THAT(Shown(run.commands),
              ElementsAre(::testing::MatchesRegex(
                  "(Decode\\(branch 0, S=1|Prefill\\(branch 0, S=2), f32 B=1 KH=1 D=1, k "
                  "contiguous, v contiguous, 1 NaN/inf in [kv]\\)")));
}

TEST(CacheMachineShrinking, AnInactiveRowKeepsOneAppendOfOneRow) {
  const std::regex inactive(R"(active \[[^\]]*0)");
  const MachineRun run = Shrink("scattered", [&](const std::vector<std::string>& shown) {
    return Any(shown, [&](const std::string& s) { return std::regex_search(s, inactive); });
  });
  ExpectMinimalInitialModel(run.initial);
  EXPECT_THAT(Shown(run.commands),
              ElementsAre(::testing::MatchesRegex(
                  "(Decode\\(branch 0, S=1|Prefill\\(branch 0, S=2), f32 B=1 KH=1 D=1, k "
                  "contiguous, v contiguous, active \\[0\\]\\)")));
}

}  // namespace
}  // namespace kvcheck::properties
