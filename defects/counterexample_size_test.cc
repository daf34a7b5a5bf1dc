#include "defects/counterexample_size.h"

#include "gtest/gtest.h"

namespace kvcheck::defects {
namespace {

TEST(CounterexampleSize, KernelCaseShapes) {
  EXPECT_EQ(CounterexampleSize("f32, batch B=1, query heads H=4, KV heads KH=2, query rows Sq=1, "
                               "keys Skv=2, head dim D=1, positions default\n  q=[1]"),
            "B=1 H=4 KH=2 Sq=1 Skv=2 D=1");
}

TEST(CounterexampleSize, CommandSequenceCountsCommandsAndTheLargestShape) {
  EXPECT_EQ(CounterexampleSize("strategy paged, f32, initial capacity 0, first-append shapes "
                               "{B=1 KH=1 D=1; B=3 KH=1 D=1}\n\n"
                               "  Prefill(branch 0, S=2, f32 B=2 KH=1 D=1, k contiguous)\n"
                               "  Fork(branch 0 -> branch new)\n"
                               "  Grow(branch 0, S=19, f32 B=2 KH=1 D=1, k contiguous)\n"),
            "3 commands, largest B=3 KH=1 D=1 S=19");
}

TEST(CounterexampleSize, GenerationCase) {
  EXPECT_EQ(CounterexampleSize("gpt2 V=2 C=2 W=6 L=1 H=1 KH=1 F=24, weight seed 0, prompt [0], "
                               "2 new tokens, kernel naive"),
            "gpt2 L=1 H=1 KH=1, prompt 1, 2 new tokens");
}

TEST(CounterexampleSize, GrowthCase) {
  EXPECT_EQ(CounterexampleSize("initial capacity: 0\n\n104 appends of 104 tokens: 1 x 104"),
            "104 appends, 104 tokens");
}

TEST(CounterexampleSize, AnythingElseIsEmpty) { EXPECT_EQ(CounterexampleSize("long:\n3"), ""); }

}  // namespace
}  // namespace kvcheck::defects
