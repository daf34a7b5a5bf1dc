// Case isolation and the bounded driver: crashes, aborts, KV_CHECKs and hangs of the code
// under test are failing cases that shrink and report; RapidCheck's macros work inside the
// child; shrinking stops at its budget and never trades a crash for a hang.
#include "properties/case_isolation.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "properties/property_runner.h"
#include "rapidcheck.h"
#include "src/base/check.h"

namespace kvcheck::properties {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

RunOptions Options(Isolation mode = Isolation::kFork) {
  RunOptions options;
  options.isolation.mode = mode;
  options.isolation.timeout_seconds = 2;
  options.fixed_cases = 200;
  return options;
}

// The value the shrunk counterexample printed for an int drawn in the body.
int ShrunkValue(const PropertyOutcome& outcome) {
  const std::string marker = "int:\n";
  const size_t at = outcome.message.find(marker);
  EXPECT_NE(at, std::string::npos) << outcome.message;
  return at == std::string::npos ? -1 : std::atoi(outcome.message.c_str() + at + marker.size());
}

TEST(CaseIsolation, PassesThePayloadBack) {
  IsolationScope scope({Isolation::kFork, 5, nullptr});
  EXPECT_EQ(RunIsolatedWithPayload([] { return std::string("from the child\0!", 16); }),
            std::string("from the child\0!", 16));
}

// The hook an external engine's transport uses to restart the engine after a case that died.
TEST(CaseIsolation, AfterCaseHookSeesHowEachCaseEnded) {
  std::vector<CaseEnd> ends;
  IsolationScope scope({Isolation::kFork, 5, [&ends](CaseEnd end) { ends.push_back(end); }});
  RunIsolated([] {});
  EXPECT_ANY_THROW(RunIsolated([] { std::abort(); }));
  EXPECT_ANY_THROW(RunIsolated([] { RC_FAIL("an assertion"); }));
  EXPECT_EQ(ends, (std::vector<CaseEnd>{CaseEnd::kNone, CaseEnd::kCrash, CaseEnd::kNone}));
}

TEST(CaseIsolation, InProcessRunsHere) {
  IsolationScope scope({Isolation::kInProcess, 5, nullptr});
  const pid_t parent = getpid();
  pid_t seen = 0;
  RunIsolated([&] { seen = getpid(); });
  EXPECT_EQ(seen, parent);
}

TEST(CaseIsolation, AnAbortShrinksToTheSmallestCrashingCase) {
  const PropertySpec spec{"test/abort_at_10", 200, [] {
                            const int x = *rc::gen::inRange(0, 1000);
                            RunIsolated([x] {
                              NoteStep("about to look at x");
                              if (x >= 10) std::abort();
                            });
                          }};
  const PropertyOutcome outcome = RunProperty(spec, Options());
  ASSERT_FALSE(outcome.passed);
  EXPECT_EQ(outcome.end, CaseEnd::kCrash);
  EXPECT_EQ(ShrunkValue(outcome), 10);
  EXPECT_THAT(outcome.message, HasSubstr("SIGABRT"));
  EXPECT_THAT(outcome.message, HasSubstr("last step: about to look at x"));
  EXPECT_THAT(outcome.replay, HasSubstr("--reproduce="));
}

TEST(CaseIsolation, ASegfaultAndAKvCheckAreReportedWithTheirMessages) {
  const PropertySpec segv{"test/segv", 50, [] {
                            const int x = *rc::gen::inRange(0, 100);
                            RunIsolated([x] {
                              if (x > 3) std::raise(SIGSEGV);
                            });
                          }};
  PropertyOutcome outcome = RunProperty(segv, Options());
  ASSERT_FALSE(outcome.passed);
  // Under AddressSanitizer its own handler reports the signal and exits instead.
  EXPECT_THAT(outcome.message,
              AnyOf(HasSubstr("SIGSEGV"), HasSubstr("AddressSanitizer: SEGV")));
  EXPECT_EQ(ShrunkValue(outcome), 4);

  const PropertySpec check{"test/kv_check", 50, [] {
                             const int x = *rc::gen::inRange(0, 100);
                             RunIsolated([x] { KV_CHECK_MSG(x < 7, "x went past the block"); });
                           }};
  outcome = RunProperty(check, Options());
  ASSERT_FALSE(outcome.passed);
  EXPECT_THAT(outcome.message, HasSubstr("KV_CHECK failed: x < 7: x went past the block"));
  EXPECT_EQ(ShrunkValue(outcome), 7);
}

TEST(CaseIsolation, AssertionsTagsAndDiscardsWorkInsideTheChild) {
  const PropertySpec spec{"test/assert", 300, [] {
                            const int x = *rc::gen::inRange(0, 1000);
                            RC_PRE(x != 1);
                            RunIsolated([x] {
                              RC_PRE(x != 2);  // a discard from the child
                              RC_TAG(x % 2 == 0 ? "even" : "odd");
                              RC_ASSERT(x < 50);
                            });
                          }};
  const PropertyOutcome outcome = RunProperty(spec, Options());
  ASSERT_FALSE(outcome.passed);
  EXPECT_EQ(outcome.end, CaseEnd::kNone);  // an assertion, not a crash
  EXPECT_THAT(outcome.message, HasSubstr("RC_ASSERT(x < 50)"));
  EXPECT_EQ(ShrunkValue(outcome), 50);

  const PropertySpec passing{"test/tags", 100, [] {
                               const int x = *rc::gen::inRange(0, 1000);
                               RunIsolated([x] { RC_TAG(x % 2 == 0 ? "even" : "odd"); });
                             }};
  const PropertyOutcome passed = RunProperty(passing, Options());
  ASSERT_TRUE(passed.passed) << passed.message;
  int tagged = 0;
  for (const auto& [tags, count] : passed.distribution) tagged += count;
  EXPECT_EQ(tagged, passed.cases);
}

TEST(CaseIsolation, DrawingInsideTheChildFailsNamingIt) {
  const PropertySpec spec{"test/draw", 10, [] {
                            RunIsolated([] { (void)*rc::gen::inRange(0, 10); });
                          }};
  const PropertyOutcome outcome = RunProperty(spec, Options());
  ASSERT_FALSE(outcome.passed);
  EXPECT_THAT(outcome.message, HasSubstr("inside an isolated check"));
}

TEST(CaseIsolation, AHangTimesOut) {
  const PropertySpec spec{"test/hang", 20, [] {
                            const int x = *rc::gen::inRange(0, 100);
                            RunIsolated([x] {
                              if (x > 5) pause();
                            });
                          }};
  RunOptions options = Options();
  options.isolation.timeout_seconds = 0.2;
  const PropertyOutcome outcome = RunProperty(spec, options);
  ASSERT_FALSE(outcome.passed);
  EXPECT_EQ(outcome.end, CaseEnd::kTimeout);
  EXPECT_THAT(outcome.message, HasSubstr("case timeout"));
  EXPECT_EQ(ShrunkValue(outcome), 6);
}

// Odd values from 11 crash, even ones from 10 hang: a run whose first failure is a crash must
// shrink to a crash (an odd value; integer shrinking need not reach 11 past the hangs), never
// into a hang; a run that first finds a hang shrinks to 10.
TEST(CaseIsolation, ShrinkingNeverTradesACrashForAHang) {
  const PropertySpec spec{"test/crash_or_hang", 200, [] {
                            const int x = *rc::gen::inRange(0, 1000);
                            RunIsolated([x] {
                              if (x < 10) return;
                              if (x % 2 == 1) std::abort();
                              pause();
                            });
                          }};
  RunOptions options = Options();
  options.isolation.timeout_seconds = 0.05;
  int crashes = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    options.seed = seed;
    const PropertyOutcome outcome = RunProperty(spec, options);
    ASSERT_FALSE(outcome.passed);
    if (outcome.end == CaseEnd::kCrash) {
      ++crashes;
      const int value = ShrunkValue(outcome);
      EXPECT_TRUE(value >= 11 && value % 2 == 1) << "seed " << seed << ": " << value;
    } else {
      EXPECT_EQ(outcome.end, CaseEnd::kTimeout);
      EXPECT_EQ(ShrunkValue(outcome), 10) << "seed " << seed;
    }
  }
  EXPECT_GT(crashes, 0) << "no seed found a crash first";
}

TEST(CaseIsolation, ShrinkingStopsAtItsBudget) {
  const PropertySpec spec{"test/budget", 100, [] {
                            const int x = *rc::gen::inRange(0, 1000000);
                            RunIsolated([x] { RC_ASSERT(x < 3); });
                          }};
  RunOptions options = Options();
  options.shrink_attempts = 2;
  const PropertyOutcome outcome = RunProperty(spec, options);
  ASSERT_FALSE(outcome.passed);
  EXPECT_TRUE(outcome.shrink_budget_exhausted);
  EXPECT_EQ(outcome.shrink_attempts, 2);
  EXPECT_THAT(outcome.message, HasSubstr("stopped at its budget"));

  options.shrink_attempts = 100000;
  const PropertyOutcome unbounded = RunProperty(spec, options);
  EXPECT_FALSE(unbounded.shrink_budget_exhausted);
  EXPECT_EQ(ShrunkValue(unbounded), 3);
  EXPECT_THAT(unbounded.message, Not(HasSubstr("stopped at its budget")));
}

TEST(CaseIsolation, TheReproduceStringReplaysTheShrunkCrash) {
  const PropertySpec spec{"test/replay", 200, [] {
                            const int x = *rc::gen::inRange(0, 1000);
                            RunIsolated([x] {
                              if (x >= 42) std::abort();
                            });
                          }};
  const PropertyOutcome outcome = RunProperty(spec, Options());
  ASSERT_FALSE(outcome.passed);
  const size_t start = outcome.replay.find("KVCHECK_REPRODUCE='") + 19;
  RunOptions replay = Options();
  replay.reproduce = outcome.replay.substr(start, outcome.replay.find('\'', start) - start);
  const PropertyOutcome again = RunProperty(spec, replay);
  ASSERT_FALSE(again.passed);
  EXPECT_EQ(ShrunkValue(again), 42);
  EXPECT_EQ(again.end, CaseEnd::kCrash);
}

}  // namespace
}  // namespace kvcheck::properties
