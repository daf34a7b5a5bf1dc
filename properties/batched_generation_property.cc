// generation/batched_rows: several sequences decoded together through one set of layer caches,
// each sequence a batch row of every cache (generation_properties.h). Strategies whose rows
// advance independently get rows that start at different calls, prompts of different lengths
// and rows that stop early (inactive rows of KvCache::AppendActive); the others run their rows
// in lockstep. A fork of every layer's caches, now and then, continues as a second batch with
// other tokens while the first goes on. After every call, each row's logits are compared with
// a recomputation of that row alone, without a cache, over the tokens it has been fed: a slot
// of one row written into another's block, a block table shared after a fork, or a row that
// advanced while inactive, shows in that row's logits.
#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/decoder_case.h"
#include "properties/generation_properties.h"
#include "properties/generators.h"
#include "rapidcheck.h"

namespace kvcheck::properties {
namespace {

using model::Decoder;

// One sequence of the batch.
struct BatchRow {
  int64_t start = 0;  // the first call that feeds it
  std::vector<int32_t> prompt;
  int64_t new_tokens = 1;  // the tokens chosen from its logits (all but the last are fed back)
  int64_t total() const { return static_cast<int64_t>(prompt.size()) + new_tokens - 1; }
};

struct BatchPlan {
  std::vector<BatchRow> rows;
  int64_t prefill_chunk = 1;     // tokens the first call feeds each row that starts there
  std::optional<int64_t> fork;   // fork every cache after this call
  bool lockstep = true;          // every row active at every call until all stop
};

void showValue(const BatchPlan& p, std::ostream& os) {
  os << p.rows.size() << " rows" << (p.lockstep ? " in lockstep" : "") << ", first call feeds "
     << p.prefill_chunk << " prompt tokens a row";
  if (p.fork.has_value()) os << ", caches forked after call " << *p.fork;
  for (size_t b = 0; b < p.rows.size(); ++b) {
    const BatchRow& r = p.rows[b];
    os << "\n  row " << b << ": starts at call " << r.start << ", prompt ["
       << absl::StrJoin(r.prompt, ",") << "], " << r.new_tokens << " new tokens";
  }
}

// Row 0 is the case's prompt and length; the other rows are drawn. Lockstep rows share row
// 0's prompt length and generation length (their calls must feed every row). Every draw is
// made whatever the others give (the fork and the first chunk before the rows, each row's
// start, prompt and length drawn even where lockstep overrides them), so that removing a row
// or the fork while shrinking leaves the rest of the plan as it was.
rc::Gen<BatchPlan> GenBatchPlan(const DecoderCase& c, bool per_row, bool forks) {
  return rc::gen::exec([c, per_row, forks] {
    BatchPlan plan;
    plan.lockstep = !per_row;
    const auto vocab = static_cast<int32_t>(c.config.vocab_size);
    const bool fork = Sometimes(40);
    const int64_t fork_after = *Uniform<int64_t>(0, 6);
    if (forks && fork) plan.fork = fork_after;
    const int64_t chunk_fraction = *Uniform<int64_t>(0, 1 << 16);
    const std::vector<BatchRow> drawn = *rc::gen::container<std::vector<BatchRow>>(
        *Uniform<size_t>(0, 3), rc::gen::exec([vocab] {
          BatchRow row;
          row.start = *Uniform<int64_t>(0, 5);
          row.prompt = *rc::gen::container<std::vector<int32_t>>(*Uniform<size_t>(1, 7),
                                                                 Uniform<int32_t>(0, vocab));
          row.new_tokens = *Uniform<int64_t>(1, 9);
          return row;
        }));
    plan.rows.push_back({0, c.prompt, c.new_tokens});
    for (BatchRow row : drawn) {
      if (!per_row) {
        row.start = 0;
        row.prompt.resize(c.prompt.size(), 0);
        row.new_tokens = c.new_tokens;
      }
      plan.rows.push_back(std::move(row));
    }
    int64_t shortest = static_cast<int64_t>(c.prompt.size());
    for (const BatchRow& row : plan.rows) {
      if (row.start == 0) shortest = std::min<int64_t>(shortest, row.prompt.size());
    }
    plan.prefill_chunk = 1 + (chunk_fraction * shortest >> 16);
    return plan;
  });
}

// One batch of sequences: its layer caches and what each row has been fed.
struct Batch {
  std::string name;
  std::vector<std::unique_ptr<KvCache>> caches;
  std::vector<std::vector<int32_t>> fed;
  std::vector<std::vector<float>> last_logits;
  std::vector<bool> diverge;  // the next chosen token is the runner-up (a fork's first step)
};

// The largest logit's token, or the runner-up's.
int32_t Choose(const std::vector<float>& logits, bool runner_up) {
  uint64_t unused = 0;
  const int32_t best = model::ChooseToken(logits, 0.0f, unused);
  if (!runner_up || logits.size() < 2) return best;
  std::vector<float> rest = logits;
  rest[best] = -INFINITY;
  return model::ChooseToken(rest, 0.0f, unused);
}

// Runs call `call` of `batch`; false when no row had anything left to feed. Each fed row's
// logits are checked against the recomputation; returns the largest error / tolerance in *worst.
bool RunCall(const Decoder& decoder, const BatchPlan& plan, int64_t call,
             const model::ForwardOptions& options, Batch& batch, double* worst) {
  const int64_t B = static_cast<int64_t>(plan.rows.size());
  const int64_t S = call == 0 ? plan.prefill_chunk : 1;
  model::BatchChunk chunk;
  chunk.tokens.assign(B, std::vector<int32_t>(S, 0));
  chunk.first.assign(B, 0);
  chunk.active.assign(B, false);
  bool any = false;
  for (int64_t b = 0; b < B; ++b) {
    const BatchRow& row = plan.rows[b];
    const int64_t fed = static_cast<int64_t>(batch.fed[b].size());
    if (call < row.start || fed >= row.total()) continue;
    chunk.active[b] = any = true;
    chunk.first[b] = fed;
    for (int64_t i = 0; i < S; ++i) {
      const int64_t at = fed + i;
      chunk.tokens[b][i] = at < static_cast<int64_t>(row.prompt.size())
                               ? row.prompt[at]
                               : Choose(batch.last_logits[b], batch.diverge[b]);
    }
  }
  if (!any) return false;
  if (plan.lockstep) {
    for (int64_t b = 0; b < B; ++b) RC_ASSERT(chunk.active[b] == chunk.active[0]);
    chunk.active.clear();  // every row: Append, not AppendActive
  }
  std::vector<KvCache*> caches;
  for (const auto& cache : batch.caches) caches.push_back(cache.get());
  std::vector<std::string> rows_fed;
  for (int64_t b = 0; b < B; ++b) {
    if (plan.lockstep || chunk.active[b]) {
      rows_fed.push_back(absl::StrCat("row ", b, " [", absl::StrJoin(chunk.tokens[b], ","),
                                      "] at ", chunk.first[b]));
    }
  }
  NoteStep(absl::StrCat(batch.name, " call ", call, ": ", absl::StrJoin(rows_fed, "; ")));
  const absl::StatusOr<std::vector<float>> logits = decoder.ForwardBatch(chunk, caches, options);
  if (!logits.ok()) {
    RC_FAIL(absl::StrCat(batch.name, " call ", call, " failed: ", logits.status().ToString()));
  }
  const int64_t V = decoder.config().vocab_size;
  for (int64_t b = 0; b < B; ++b) {
    if (!plan.lockstep && !chunk.active[b]) continue;
    batch.fed[b].insert(batch.fed[b].end(), chunk.tokens[b].begin(), chunk.tokens[b].end());
    batch.last_logits[b].assign(logits->begin() + b * V, logits->begin() + (b + 1) * V);
    batch.diverge[b] = false;
    // This row alone, recomputed over every token it has been fed.
    const absl::StatusOr<std::vector<float>> want =
        decoder.Forward(batch.fed[b], {0, 0}, {}, options);
    RC_ASSERT(want.ok());
    const double tolerance = Tolerance(*want);
    for (int64_t v = 0; v < V; ++v) {
      const double error = std::fabs(double{batch.last_logits[b][v]} - (*want)[v]);
      *worst = std::max(*worst, error / tolerance);
      if (!(error <= tolerance)) {
        RC_FAIL(absl::StrCat(batch.name, " call ", call, ", row ", b, ": logit ", v, " is ",
                             batch.last_logits[b][v], ", the row recomputed alone ", (*want)[v],
                             " (tolerance ", tolerance, "); the row's tokens [",
                             absl::StrJoin(batch.fed[b], ","), "]"));
      }
    }
  }
  return true;
}

}  // namespace

PropertySpec BatchedRowsProperty(int cases, const Subject& subject, LawMarginMap* margins) {
  return {"generation/batched_rows", cases,
          [strategies = DecoderStrategies(subject), kernels = DecoderKernels(subject), margins] {
            const CacheStrategy& strategy = *(*GenStrategy(strategies)).strategy;
            // The rows choose greedily (the law compares logits, not sampled tokens).
            DecoderCase c = *GenDecoderCase(strategy.windowed, kernels, /*sampling=*/false);
            const model::GenerationOptions options = Options(c, &strategy);
            const std::vector<int64_t> windows = model::EffectiveLayerWindows(c.config, options);
            // Inactive rows need every layer's cache to take them: a windowed layer under a
            // full strategy runs on a ring cache, whose rows advance together.
            const bool ring_layers =
                !strategy.windowed &&
                std::any_of(windows.begin(), windows.end(), [](int64_t w) { return w > 0; });
            const BatchPlan plan = *GenBatchPlan(c, strategy.per_row && !ring_layers,
                                                 strategy.forks);
            for (const BatchRow& row : plan.rows) {
              c.config.context_length = std::max(c.config.context_length, row.total());
            }
            MergeLawMargins(
                RunIsolatedWithPayload([&] {
                  const std::unique_ptr<Decoder> decoder = MakeDecoder(c);
                  model::ForwardOptions forward;
                  forward.kernel = c.kernel_ptr;
                  forward.layer_windows = windows;
                  const int64_t B = static_cast<int64_t>(plan.rows.size());
                  std::vector<Batch> batches(1);
                  batches[0].name = "batch";
                  auto made = model::MakeLayerCaches(c.config, options);
                  if (!made.ok()) RC_FAIL(absl::StrCat("caches: ", made.status().ToString()));
                  batches[0].caches = *std::move(made);
                  batches[0].fed.resize(B);
                  batches[0].last_logits.resize(B);
                  batches[0].diverge.assign(B, false);
                  double worst = 0;
                  for (int64_t call = 0;; ++call) {
                    bool any = false;
                    for (Batch& batch : batches) {
                      any |= RunCall(*decoder, plan, call, forward, batch, &worst);
                    }
                    if (!any) break;
                    if (plan.fork == call) {
                      Batch fork;
                      fork.name = "fork";
                      NoteStep(absl::StrCat("forking every layer's cache after call ", call));
                      for (const auto& cache : batches[0].caches) {
                        fork.caches.push_back(cache->Fork());
                      }
                      fork.fed = batches[0].fed;
                      fork.last_logits = batches[0].last_logits;
                      fork.diverge.assign(B, true);  // the fork goes its own way
                      batches.push_back(std::move(fork));
                    }
                  }
                  return EncodeLawMargin("generation/batched rows vs each row alone / tolerance",
                                         worst);
                }),
                margins);
            RC_TAG(strategy.name, absl::StrCat(plan.rows.size(), " rows"));
            RC_CLASSIFY(!plan.lockstep && plan.rows.size() > 1, "rows of their own");
            RC_CLASSIFY(plan.fork.has_value(), "forked");
          }};
}

}  // namespace kvcheck::properties
