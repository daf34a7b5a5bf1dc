// Every catalogued defect is killed by its property within the budget (defect_kill.h);
// prints the kill table. oob_defect_asan_test also shows the out-of-bounds defect's crash
// under AddressSanitizer.
#include <iostream>

#include "defects/defect_kill.h"
#include "defects/defect_registry.h"
#include "gtest/gtest.h"

namespace kvcheck::defects {
namespace {

class DefectKilledTest : public ::testing::TestWithParam<const Defect*> {};

std::string& Table() {
  static std::string* table = new std::string(KillTableHeader());
  return *table;
}

TEST_P(DefectKilledTest, IsKilledWithinTheBudget) {
  const Defect& defect = *GetParam();
  const KillResult result = RunKill(defect, properties::RunOptionsFromEnvironment());
  Table() += FormatKillRow(result);
  std::cout << FormatKillRow(result);
  EXPECT_TRUE(result.killed) << defect.name << " survived " << result.property;
  if (result.killed) std::cout << "  counterexample:\n" << result.message << "\n";
}

std::vector<const Defect*> Killable() {
  std::vector<const Defect*> defects;
  for (const Defect& defect : Defects()) {
    if (defect.killer != Killer::kPending) {
      defects.push_back(&defect);
    }
  }
  return defects;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, DefectKilledTest, ::testing::ValuesIn(Killable()),
                         [](const ::testing::TestParamInfo<const Defect*>& info) {
                           return std::string(info.param->name);
                         });

class PrintTable : public ::testing::Environment {
 public:
  void TearDown() override { std::cout << "\n" << Table(); }
};
const auto* const print_table = ::testing::AddGlobalTestEnvironment(new PrintTable);

}  // namespace
}  // namespace kvcheck::defects
