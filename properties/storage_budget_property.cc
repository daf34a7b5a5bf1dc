// The storage budget law for one strategy (storage_budget_property.h).
#include "properties/storage_budget_property.h"

#include <algorithm>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "rapidcheck.h"

namespace kvcheck::properties {
namespace {

// The allocation granularity the law allows, in tokens of a row: a budget that holds every
// row's tokens rounded up to it must admit the append (PagedCache::kBlockTokens).
constexpr int64_t kBudgetBlockTokens = 16;

// One step of the sequence: an append of `seq` tokens (rows with active[b] false skip it,
// per-row strategies only), or a Reset.
struct BudgetStep {
  bool reset = false;
  int64_t seq = 1;
  absl::InlinedVector<bool, 4> active;  // empty: every row
};

struct BudgetCase {
  DType dtype = DType::kF32;
  int64_t batch = 1, num_kv_heads = 1, head_dim = 1;
  CacheConfig config;
  std::vector<BudgetStep> steps;
};

void showValue(const BudgetCase& c, std::ostream& os) {
  os << DTypeName(c.dtype) << " B=" << c.batch << " KH=" << c.num_kv_heads
     << " D=" << c.head_dim << ", storage budget " << c.config.max_bytes << " bytes";
  if (c.config.window > 0) os << ", window W=" << c.config.window;
  os << ", initial capacity " << c.config.initial_capacity << "; steps:";
  for (const BudgetStep& step : c.steps) {
    if (step.reset) {
      os << " Reset";
    } else {
      os << " Append(S=" << step.seq;
      if (!step.active.empty()) os << ", active [" << absl::StrJoin(step.active, ",") << "]";
      os << ")";
    }
  }
}

rc::Gen<BudgetCase> GenBudgetCase(const CacheStrategy& strategy) {
  return rc::gen::exec([&strategy] {
    BudgetCase c;
    c.dtype = *GenDType();
    c.batch = *Uniform<int64_t>(1, 4);
    c.num_kv_heads = *Uniform<int64_t>(1, 4);
    c.head_dim = *Choice<int64_t>(1, 2, 8, 16, 33);
    c.config = strategy.default_config;
    c.config.initial_capacity = *Choice<int64_t>(0, 1, 4, 16);
    if (strategy.windowed) c.config.window = *Choice<int64_t>(1, 3, 8, 40);
    // From a budget that fits a few tokens to one that fits a few hundred.
    c.config.max_bytes = int64_t{1} << *Uniform(8, 18);
    const int count = *Uniform(1, 40);
    for (int i = 0; i < count; ++i) {
      BudgetStep step;
      // Every choice shrinks towards the plain case: an append of one token to every row.
      step.reset = *Uniform(0, 12) == 11;
      step.seq = *Uniform(0, 4) == 3 ? *Uniform<int64_t>(1, 48) : 1;
      if (strategy.per_row && *Uniform(0, 3) == 2) {
        for (int64_t b = 0; b < c.batch; ++b) step.active.push_back(*Uniform(0, 3) != 2);
      }
      c.steps.push_back(std::move(step));
    }
    return c;
  });
}

// Everything an append that fails must leave as it was.
struct Observed {
  std::vector<uint32_t> k_bits, v_bits;
  std::vector<int64_t> positions, lengths;
  int64_t capacity = 0;
  CacheCounters counters;

  bool operator==(const Observed& o) const {
    return k_bits == o.k_bits && v_bits == o.v_bits && positions == o.positions &&
           lengths == o.lengths && capacity == o.capacity &&
           counters.bytes_allocated == o.counters.bytes_allocated &&
           counters.bytes_held == o.counters.bytes_held &&
           counters.bytes_appended == o.counters.bytes_appended &&
           counters.bytes_growth_copied == o.counters.bytes_growth_copied &&
           counters.bytes_other_copied == o.counters.bytes_other_copied;
  }
};

Observed Observe(const KvCache& cache, int64_t batch) {
  Observed o;
  const absl::StatusOr<CacheView> view = cache.View();
  RC_ASSERT(view.ok());
  o.k_bits = view->k.ToBits();
  o.v_bits = view->v.ToBits();
  o.positions = view->positions;
  for (int64_t b = 0; b < batch; ++b) o.lengths.push_back(cache.row_seq_len(b));
  o.capacity = cache.capacity();
  o.counters = cache.counters();
  return o;
}

// The cache of `strategy` with `config`; fails the case if the strategy refuses it.
std::unique_ptr<KvCache> CreateOrFail(const CacheStrategy& strategy, const CacheConfig& config) {
  absl::StatusOr<std::unique_ptr<KvCache>> created = strategy.create(config);
  if (!created.ok()) RC_FAIL(absl::StrCat("create: ", created.status().ToString()));
  return *std::move(created);
}

// The append of a step (not a Reset): `step.seq` tokens of 0.5 to its active rows.
absl::StatusOr<CacheView> AppendStep(KvCache& cache, const BudgetCase& c, const BudgetStep& step) {
  const absl::StatusOr<Tensor> k =
      Tensor::Filled(c.dtype, {c.batch, c.num_kv_heads, step.seq, c.head_dim}, 0.5f);
  RC_ASSERT(k.ok());
  return cache.AppendActive(*k, *k, absl::Span<const bool>(step.active.data(), step.active.size()));
}

void RunBudgetCase(const CacheStrategy& strategy, const BudgetCase& c) {
  const std::unique_ptr<KvCache> created = CreateOrFail(strategy, c.config);
  KvCache& cache = *created;
  const int64_t slot_bytes = 2 * c.batch * c.num_kv_heads * c.head_dim * DTypeSize(c.dtype);
  bool budget_reached = false;
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const BudgetStep& step = c.steps[i];
    NoteStep(absl::StrCat("step ", i + 1, " of ", c.steps.size()));
    if (step.reset) {
      cache.Reset();
      continue;
    }
    const Observed before = Observe(cache, c.batch);
    int64_t longest_after = 0;
    for (int64_t b = 0; b < c.batch; ++b) {
      const bool writes = step.active.empty() || step.active[b];
      longest_after = std::max(longest_after, cache.row_seq_len(b) + (writes ? step.seq : 0));
    }
    const absl::StatusOr<CacheView> view = AppendStep(cache, c, step);
    if (!view.ok()) {
      if (view.status().code() != absl::StatusCode::kResourceExhausted) {
        RC_FAIL(absl::StrCat("step ", i + 1, ": an append within the shapes failed with ",
                             view.status().ToString(), "; only kResourceExhausted may come "
                             "from the storage budget"));
      }
      if (!(Observe(cache, c.batch) == before)) {
        RC_FAIL(absl::StrCat("step ", i + 1, ": the append failed (", view.status().ToString(),
                             ") but changed the cache (view, lengths, capacity or counters)"));
      }
      // An append whose tokens fit the budget must not fail: a strategy that grows clamps its
      // growth to the budget rather than refuse. What fits: W slots in every row for a window
      // strategy, else the longest row rounded up to whole blocks of kBudgetBlockTokens
      // (a paged strategy's granularity; the others need no rounding).
      const int64_t slots = strategy.windowed ? c.config.window
                                              : (longest_after + kBudgetBlockTokens - 1) /
                                                    kBudgetBlockTokens * kBudgetBlockTokens;
      if (slots * slot_bytes <= c.config.max_bytes) {
        RC_FAIL(absl::StrCat("step ", i + 1, ": the append failed (", view.status().ToString(),
                             ") though ", slots, " slots of ", slot_bytes, " bytes (",
                             strategy.windowed
                                 ? "the window"
                                 : absl::StrCat("the longest row after it, rounded up to ",
                                                kBudgetBlockTokens, "-token blocks"),
                             ") take ", slots * slot_bytes, " bytes of a budget of ",
                             c.config.max_bytes));
      }
      budget_reached = true;
      continue;
    }
    if (cache.counters().bytes_held > c.config.max_bytes) {
      RC_FAIL(absl::StrCat("step ", i + 1, ": the cache holds ", cache.counters().bytes_held,
                           " bytes, over its budget of ", c.config.max_bytes));
    }
  }
  RC_CLASSIFY(budget_reached, "budget reached");
}

// The same steps twice: without a budget, noting the most bytes the cache held after any
// step (M), then with a budget of exactly M. A strategy checks what it would hold after each
// append against the budget, so a budget the cache never exceeded refuses nothing: an
// append that fits the budget to the byte must pass (a check off by one refuses it).
void RunExactBudgetReplay(const CacheStrategy& strategy, const BudgetCase& c) {
  int64_t most = 0;
  for (const bool replay : {false, true}) {
    CacheConfig config = c.config;
    config.max_bytes = replay ? most : 0;  // 0: the storage limit
    const std::unique_ptr<KvCache> created = CreateOrFail(strategy, config);
    KvCache& cache = *created;
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const BudgetStep& step = c.steps[i];
      if (step.reset) {
        cache.Reset();
        continue;
      }
      const absl::StatusOr<CacheView> view = AppendStep(cache, c, step);
      if (!view.ok()) {
        const std::string budget =
            replay ? absl::StrCat("a budget of ", most, " bytes (the most it held without one)")
                   : "no budget";
        RC_FAIL(absl::StrCat("step ", i + 1, " with ", budget, ": the append failed with ",
                             view.status().ToString()));
      }
      if (replay && cache.counters().bytes_held > most) {
        RC_FAIL(absl::StrCat("step ", i + 1, ": with a budget of ", most,
                             " bytes (the most it held without one) the cache holds ",
                             cache.counters().bytes_held));
      }
      most = replay ? most : std::max(most, cache.counters().bytes_held);
    }
    if (most == 0) return;  // nothing held (only empty appends): no budget to try
  }
}

}  // namespace

PropertySpec StorageBudgetProperty(const CacheStrategy& strategy) {
  return PropertySpec{absl::StrCat("cache/", strategy.name, "/storage_budget"), 60, [&strategy] {
                        const BudgetCase c = *GenBudgetCase(strategy);
                        RunIsolated([&] {
                          RunBudgetCase(strategy, c);
                          RunExactBudgetReplay(strategy, c);
                        });
                      }};
}

}  // namespace kvcheck::properties
