// Every transport gives the same verdict: the same properties, with the same seed and case
// counts, on kvcheck's own engine in process (the registries), through the plug-in ABI
// (libkvcheck_builtin_engine.so loaded with dlopen) and over the process protocol
// (kvcheck_engine_host serving that library). Correct strategies and kernels pass on all
// three; catalogued defects, exposed by the plug-in under their defect names, fail on all
// three.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "defects/defect_registry.h"
#include "gtest/gtest.h"
#include "properties/kernel_case.h"
#include "properties/property_runner.h"
#include "properties/subject.h"
#include "properties/suite.h"
#include "rapidcheck.h"
#include "src/attention/kernel_registry.h"
#include "src/engine/engine_entries.h"
#include "src/engine/plugin_engine.h"
#include "src/engine/process_engine.h"

namespace kvcheck {
namespace {

using properties::PropertyOutcome;
using properties::PropertySpec;
using properties::Subject;

// The defects the plug-in adds (KVCHECK_BUILTIN_ENGINE_DEFECTS).
// (Defects the default run kills within a few cases: the sanitizer configurations run fewer.
// prealloc_rejects_noncontiguous_prefill also shows that strides survive the transports.)
const char* const kDefects[] = {"prealloc_rejects_noncontiguous_prefill",
                                "ring_chunk_returns_chunk_only",
                                "paged_block_boundary_off_by_one", "attention_causal_top_left"};

std::string Runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  return dir == nullptr ? path : std::string(dir) + "/kvcheck/" + path;
}

// The built-in registries plus the same defects, in process.
std::shared_ptr<Subject> InProcess() {
  auto subject = std::make_shared<Subject>(properties::BuiltinSubject());
  subject->builtin = false;  // the same laws as an engine gets
  for (const char* name : kDefects) {
    const defects::Defect* defect = defects::FindDefect(name);
    if (defect->kind == defects::DefectKind::kCache) {
      subject->strategies.push_back(defect->strategy);
      subject->strategies.back().honours_max_bytes = false;
    } else {
      auto run = defect->kernel;
      AttentionKernel kernel{defect->name, "", [run](const Tensor& q, const Tensor& k,
                                                     const Tensor& v, const AttentionParams& p,
                                                     int) { return run(q, k, v, p); },
                             false};
      subject->kernels.push_back(kernel);
    }
  }
  return subject;
}

// The built-in engine library loaded as a plug-in, and served over the protocol by
// kvcheck_engine_host.
struct Transports {
  std::shared_ptr<engine::Engine> plugin, process;
};
Transports LoadTransports() {
  const std::string library = Runfile("engines/kvcheck_builtin/libkvcheck_builtin_engine.so");
  absl::StatusOr<std::unique_ptr<engine::PluginEngine>> plugin = engine::PluginEngine::Load(library);
  EXPECT_TRUE(plugin.ok()) << plugin.status();
  absl::StatusOr<std::unique_ptr<engine::ProcessEngine>> process = engine::ProcessEngine::Start(
      Runfile("cli/kvcheck_engine_host") + " " + library, {30});
  EXPECT_TRUE(process.ok()) << process.status();
  if (!plugin.ok() || !process.ok()) return {};
  return {*std::move(plugin), *std::move(process)};
}

std::shared_ptr<Subject> FromEngine(std::shared_ptr<engine::Engine> engine) {
  auto subject = std::make_shared<Subject>();
  subject->name = engine->info().name;
  subject->strategies = engine::EngineStrategies(engine);
  subject->kernels = engine::EngineKernels(engine);
  return subject;
}

// The checked laws: every state machine in f32 and the attention laws, by name.
std::map<std::string, bool> Verdicts(const std::shared_ptr<Subject>& subject,
                                     const properties::RunOptions& options) {
  const properties::Suite suite = properties::SuiteFor(subject);
  std::map<std::string, bool> verdicts;
  for (const PropertySpec& spec : suite.properties) {
    const bool wanted = (spec.name.rfind("cache/", 0) == 0 && spec.name.find("/f32") != std::string::npos) ||
                        spec.name == "attention/kernels_vs_reference";
    if (!wanted) continue;
    const PropertyOutcome outcome = properties::RunProperty(spec, options);
    verdicts[spec.name] = outcome.passed;
  }
  return verdicts;
}

TEST(TransportAgreementTest, SameVerdictInProcessThroughThePluginAndOverTheProtocol) {
  std::string defects;
  for (const char* name : kDefects) defects += std::string(defects.empty() ? "" : ",") + name;
  setenv("KVCHECK_BUILTIN_ENGINE_DEFECTS", defects.c_str(), 1);
  const Transports transports = LoadTransports();
  ASSERT_TRUE(transports.plugin != nullptr && transports.process != nullptr);
  const std::shared_ptr<engine::ProcessEngine> shared_process =
      std::static_pointer_cast<engine::ProcessEngine>(transports.process);

  properties::RunOptions options = properties::RunOptionsFromEnvironment();
  // 40 cases per property (fewer under the sanitizers' KVCHECK_CASE_SCALE): enough for every
  // catalogued defect here to fail, and for the correct entries to run every command.
  options.fixed_cases = std::max(20, static_cast<int>(40 * options.case_scale));
  options.shrink_attempts = 50;  // the verdict matters here, not the minimal case
  const std::map<std::string, bool> in_process = Verdicts(InProcess(), options);
  const std::map<std::string, bool> through_plugin = Verdicts(FromEngine(transports.plugin), options);
  options.isolation.after_case = [shared_process](properties::CaseEnd end) {
    (void)shared_process->RestartIfNeeded(false, end != properties::CaseEnd::kNone);
  };
  const std::map<std::string, bool> over_protocol = Verdicts(FromEngine(shared_process), options);

  ASSERT_EQ(in_process.size(), 10u);  // 6 strategies + 3 defects in f32, the attention law
  EXPECT_EQ(in_process, through_plugin);
  EXPECT_EQ(in_process, over_protocol);
  const std::set<std::string> must_fail = {"cache/prealloc_rejects_noncontiguous_prefill/f32",
                                           "cache/ring_chunk_returns_chunk_only/f32",
                                           "cache/paged_block_boundary_off_by_one/f32",
                                           "attention/kernels_vs_reference"};
  for (const auto& [name, passed] : in_process) {
    EXPECT_EQ(passed, must_fail.count(name) == 0) << name;
  }
}

// The transports carry inputs, parameters and results exactly: every built-in kernel the
// engine serves gives the same bits through the plug-in and over the protocol as in process,
// on generated cases (strided inputs, every dtype and feature). A verdict alone would not
// show a parameter that lost its last digits on the way (within the error bound) or a result
// rounded through another dtype.
TEST(TransportAgreementTest, KernelsGiveTheSameBitsWhicheverWayTheyAreCalled) {
  setenv("KVCHECK_BUILTIN_ENGINE_DEFECTS", "", 1);
  const Transports loaded = LoadTransports();
  ASSERT_TRUE(loaded.plugin != nullptr && loaded.process != nullptr);
  const std::vector<AttentionKernel> transports[] = {engine::EngineKernels(loaded.plugin),
                                                     engine::EngineKernels(loaded.process)};
  const char* const transport_names[] = {"plug-in", "protocol"};
  int compared = 0;
  const bool held = rc::check("the same bits through every transport", [&] {
    const properties::KernelCase c = *properties::GenKernelCase(200);
    const absl::StatusOr<properties::KernelInputs> in = properties::MakeKernelInputs(c);
    RC_ASSERT(in.ok());
    for (int t = 0; t < 2; ++t) {
      for (const AttentionKernel& served : transports[t]) {
        const AttentionKernel* own = FindAttentionKernel(served.name);
        if (own == nullptr || own->emulated() || !own->supports(in->q.dtype())) continue;
        const absl::StatusOr<Tensor> want = own->run(in->q, in->k, in->v, in->params, 1);
        const absl::StatusOr<Tensor> got = served.run(in->q, in->k, in->v, in->params, 1);
        RC_ASSERT(want.ok() == got.ok());
        if (!want.ok()) {
          RC_ASSERT(want.status().code() == got.status().code());
          continue;
        }
        if (want->ToBits() != got->ToBits()) {
          RC_FAIL(absl::StrCat(served.name, " ", transport_names[t], ": other bits than in process"));
        }
        ++compared;
      }
    }
  });
  EXPECT_TRUE(held);
  EXPECT_GT(compared, 100);
}

}  // namespace
}  // namespace kvcheck
