// The cache state-machine property: initial model generation and the command mix.
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "properties/cache_machine.h"
#include "properties/cache_machine_commands.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "rapidcheck.h"
#include "rapidcheck/state.h"

namespace kvcheck::properties {
namespace {

using cache_machine::Model;
using cache_machine::Sut;

MachineDims GenDims() {
  MachineDims dims;
  dims.batch = *Uniform<int64_t>(1, 5);
  dims.num_kv_heads = *Uniform<int64_t>(1, 9);
  dims.head_dim = *Choice<int64_t>(1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 80, 128, 160);
  // Keep one token (B * KH * D elements) modest so that long sequences stay fast.
  while (dims.batch * dims.num_kv_heads * dims.head_dim > 1024 && dims.head_dim > 8) {
    dims.head_dim /= 2;
  }
  return dims;
}

}  // namespace

// One generated value (printed with its labels by showValue below), not a list of bare
// numbers in the counterexample.
rc::Gen<Model> GenInitialModel(const CacheStrategy& strategy, DType dtype) {
  return rc::gen::exec([&strategy, dtype] {
    Model m;
    m.strategy = &strategy;
    m.dtype = dtype;
    m.config = strategy.default_config;
    m.config.initial_capacity = *Choice<int64_t>(0, 1, 2, 3, 4, 8, 16);
    if (strategy.windowed) m.config.window = *Choice<int64_t>(1, 2, 3, 4, 5, 8, 13);
    m.dims = {GenDims(), GenDims()};
    m.query_group = *Choice<int64_t>(1, 2, 3);
    m.branches.emplace_back();
    m.branches[0].model = reference::CacheModel(m.window());
    return m;
  });
}

rc::Gen<CacheCommands> GenCacheCommands(const CacheMachineModel& initial) {
  using namespace cache_machine;
  return rc::state::gen::commands(
      initial,
      rc::state::gen::execOneOfWithArgs<Prefill, Prefill, Decode, Decode, Decode, Grow, Attend,
                                        Attend, ResetBranch, ForkBranch, BadAppend>());
}

void showValue(const CacheMachineModel& m, std::ostream& os) {
  os << "strategy " << m.strategy->name << ", " << DTypeName(m.dtype) << ", initial capacity "
     << m.config.initial_capacity;
  if (m.strategy->windowed) os << ", window W=" << m.config.window;
  os << ", first-append shapes {";
  for (size_t i = 0; i < m.dims.size(); ++i) {
    os << (i > 0 ? "; " : "") << "B=" << m.dims[i].batch << " KH=" << m.dims[i].num_kv_heads
       << " D=" << m.dims[i].head_dim;
  }
  os << "}, Attend query heads per KV head " << m.query_group;
}

PropertySpec CacheStateMachineProperty(const CacheStrategy& strategy, DType dtype, int cases,
                                       CacheMachineStats* stats) {
  PropertySpec spec;
  spec.name = absl::StrCat("cache/", strategy.name, "/", DTypeName(dtype));
  spec.default_cases = cases;
  spec.max_size = 40;  // sequences of up to ~40 commands
  spec.body = [&strategy, dtype, stats] {
    using namespace cache_machine;
    // Generation (the initial model and the commands' arguments) in this process; the cache
    // and the checks in an isolated child (case_isolation.h).
    const Model initial = *GenInitialModel(strategy, dtype);
    const CacheCommands commands = *GenCacheCommands(initial);
    RunIsolated([&] {
      Sut sut;
      absl::StatusOr<std::unique_ptr<KvCache>> cache = strategy.create(initial.config);
      if (!cache.ok()) RC_FAIL(absl::StrCat("create: ", cache.status().ToString()));
      sut.caches.push_back(*std::move(cache));
      sut.last_views.emplace_back();
      sut.kept_views.emplace_back();
      sut.counters_seen.push_back(ObserveCounters(*sut.caches[0]));
      std::set<std::string> events;
      EventScope scope(&events);
      Model state = initial;
      for (size_t i = 0; i < commands.size(); ++i) {
        const Command& command = *commands[i];
        command.checkPreconditions(state);
        std::ostringstream shown;
        command.show(shown);
        const std::string step =
            absl::StrCat("command ", i + 1, " of ", commands.size(), ": ", shown.str());
        NoteStep(step);
        try {
          command.run(state, sut);
        } catch (const rc::detail::CaseResult& result) {
          // The first step at which engine and model differ, named in the failure itself.
          if (result.type != rc::detail::CaseResult::Type::Failure) throw;
          throw rc::detail::CaseResult(result.type,
                                       absl::StrCat("at ", step, "\n", result.description));
        }
        command.apply(state);
      }
      for (const std::string& event : events) RC_TAG(event);
    });
    if (stats != nullptr) stats->commands += static_cast<int64_t>(commands.size());
  };
  return spec;
}

}  // namespace kvcheck::properties
