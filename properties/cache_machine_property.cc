// The cache state-machine property: initial model generation and the command mix.
#include <set>

#include "absl/strings/str_cat.h"
#include "properties/cache_machine.h"
#include "properties/cache_machine_commands.h"
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
  dims.head_dim = *rc::gen::element<int64_t>(1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 80, 128, 160);
  // Keep one token (B * KH * D elements) modest so that long sequences stay fast.
  while (dims.batch * dims.num_kv_heads * dims.head_dim > 1024 && dims.head_dim > 8) {
    dims.head_dim /= 2;
  }
  return dims;
}

Model GenInitialModel(const CacheStrategy& strategy, DType dtype) {
  Model m;
  m.strategy = &strategy;
  m.dtype = dtype;
  m.config = strategy.default_config;
  m.config.initial_capacity = *rc::gen::element<int64_t>(0, 1, 2, 3, 4, 8, 16);
  if (strategy.windowed) m.config.window = *rc::gen::element<int64_t>(1, 2, 3, 4, 5, 8, 13);
  m.dims = {GenDims(), GenDims()};
  m.query_group = *rc::gen::element<int64_t>(1, 2, 3);
  m.branches.emplace_back();
  m.branches[0].model = reference::CacheModel(m.window());
  return m;
}

}  // namespace

PropertySpec CacheStateMachineProperty(const CacheStrategy& strategy, DType dtype, int cases,
                                       CacheMachineStats* stats) {
  PropertySpec spec;
  spec.name = absl::StrCat("cache/", strategy.name, "/", DTypeName(dtype));
  spec.default_cases = cases;
  spec.max_size = 40;  // sequences of up to ~40 commands
  spec.body = [&strategy, dtype, stats] {
    using namespace cache_machine;
    const Model initial = GenInitialModel(strategy, dtype);
    Sut sut;
    absl::StatusOr<std::unique_ptr<KvCache>> cache = strategy.create(initial.config);
    RC_ASSERT(cache.ok());
    sut.caches.push_back(*std::move(cache));
    sut.last_views.emplace_back();
    std::set<std::string> events;
    {
      EventScope scope(&events);
      const auto commands = *rc::state::gen::commands(
          initial, rc::state::gen::execOneOfWithArgs<Prefill, Prefill, Decode, Decode, Decode,
                                                     Grow, Attend, Attend, ResetBranch, ForkBranch,
                                                     BadAppend>());
      rc::state::runAll(commands, initial, sut);
      if (stats != nullptr) stats->commands += static_cast<int64_t>(commands.size());
    }
    for (const std::string& event : events) RC_TAG(event);
  };
  return spec;
}

}  // namespace kvcheck::properties
