// File: cache_machine.h
// The RapidCheck state machine that checks a cache strategy against the exact history model
// (reference/cache_model.h): model, system under test, and the checks run after every command.
// The commands are in cache_machine_commands.cc.
//
// Model: up to three branches (Fork adds one), each a CacheModel. SUT: one KvCache per
// branch, plus the last view each branch returned (with its bits at the time) for the clone
// law, and each branch's kept view: the CacheView that appends through KvCache::AppendInto
// write into (as a decode loop keeps one per cache). It is never reset: it carries a view of
// the branch's old buffers across growth, Reset and wraps, and a Fork starts the new branch
// with a copy of its parent's (a view of another cache). After every command:
//   - every branch's visible K/V, positions and lengths equal its model bit for bit;
//   - every saved view still shows its bits (for window strategies, a branch's own later
//     appends may reuse its slots, so only the other branches' views are checked);
//   - for amortised strategies, bytes copied by growth <= 3x bytes appended;
//   - the counter laws (cache_counter_laws.h) hold between the branch's last check and now.
#ifndef KVCHECK_PROPERTIES_CACHE_MACHINE_H_
#define KVCHECK_PROPERTIES_CACHE_MACHINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "properties/cache_counter_laws.h"
#include "properties/property_runner.h"
#include "rapidcheck.h"
#include "rapidcheck/state.h"
#include "reference/cache_model.h"
#include "src/cache/kv_cache.h"
#include "src/cache/registry.h"

namespace kvcheck::properties {

// One choice of (B, KH, D) for a run; the first append after a reset may switch to another.
struct MachineDims {
  int64_t batch = 1;
  int64_t num_kv_heads = 1;
  int64_t head_dim = 1;
};

struct MachineBranch {
  reference::CacheModel model;
  bool was_reset = false;  // Reset happened and no append yet since the last append before it
  bool reused_after_reset = false;
  // K and V bytes of every append since construction (the active rows' only): what the
  // cache's counters().bytes_appended must say. Reset keeps it; a fork starts from it.
  int64_t bytes_appended = 0;
  // A Fork since this branch's last Reset (in its own history or its parent's): its buffers
  // may be shared, so its next writes may copy them (copy-on-write).
  bool may_share_buffers = false;
};

struct CacheMachineModel {
  const CacheStrategy* strategy = nullptr;
  CacheConfig config;
  DType dtype = DType::kF32;
  std::vector<MachineDims> dims;  // choices for the first append after construction/reset
  int64_t query_group = 1;        // query heads per KV head in Attend
  std::vector<MachineBranch> branches;
  bool forked = false;

  int64_t window() const { return strategy->windowed ? config.window : 0; }
};

// The initial model in a counterexample: strategy, dtype, configuration, shapes, all labelled.
void showValue(const CacheMachineModel& model, std::ostream& os);

struct CacheMachineSut;
using CacheCommands =
    std::vector<std::shared_ptr<const rc::state::Command<CacheMachineModel, CacheMachineSut>>>;

// What the state machine draws: the initial model (strategy configuration, the shapes of
// first appends), then the command sequence run from it. Every draw inside a command happens
// whatever the others give, so that a sequence shrinks to the commands and sizes a failure
// needs.
rc::Gen<CacheMachineModel> GenInitialModel(const CacheStrategy& strategy, DType dtype);
rc::Gen<CacheCommands> GenCacheCommands(const CacheMachineModel& initial);

struct SavedView {
  CacheView view;
  std::vector<uint32_t> k_bits;
  std::vector<uint32_t> v_bits;
};

struct CacheMachineSut {
  std::vector<std::unique_ptr<KvCache>> caches;  // one per model branch
  std::vector<std::optional<SavedView>> last_views;
  std::vector<CacheView> kept_views;  // written by the appends that go through AppendInto
  // Each branch's counters and capacity at its last check (CheckMachine), which the next
  // check compares with; a forked branch starts from its parent's.
  std::vector<CounterObservation> counters_seen;
};

// "" if `after` is the same view as `before` (the same storage, dtype and layout of K and V,
// the same positions), else what differs: a failed AppendInto must leave its view unchanged.
std::string DescribeViewChange(const CacheView& before, const CacheView& after);

// "" if `view` shows exactly the model's visible set (positions, K and V bits), else what
// differs. `what` names the view in the message.
std::string DescribeViewMismatch(const CacheView& view, const reference::CacheModel& model,
                                 DType dtype, bool per_row, const std::string& what);

// The counter laws (cache_counter_laws.h) for branch `index`, between its last check
// (sut.counters_seen) and now, where the strategy reports its storage; `acted` is the branch
// the command acted on (-1: none).
void CheckCounters(const CacheMachineModel& model, const CacheMachineSut& sut, int index,
                   int acted);

// All the checks listed above; `acted` is the branch the command touched (-1: none). Records
// every branch's counters and capacity for the next check.
void CheckMachine(const CacheMachineModel& model, CacheMachineSut& sut, int acted);

// Filled in while a state-machine property runs.
struct CacheMachineStats {
  int64_t commands = 0;  // commands executed in successful sequences
};

// The state machine for one strategy and dtype ("cache/<strategy>/<dtype>"); counts the
// commands it executes into *stats (may be null).
PropertySpec CacheStateMachineProperty(const CacheStrategy& strategy, DType dtype, int cases,
                                       CacheMachineStats* stats);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_CACHE_MACHINE_H_
