// The model-level generation laws (model_properties.h).
#include "properties/model_properties.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "properties/case_isolation.h"
#include "properties/generators.h"
#include "properties/token_run.h"
#include "rapidcheck.h"
#include "src/engine/engine.h"
#include "src/base/split_mix.h"
#include "src/engine/engine.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::properties {
namespace {

struct TwoRuns {
  TokenRun first, second;
};

void showValue(const TwoRuns& runs, std::ostream& os) {
  os << "before the reset: ";
  showValue(runs.first, os);
  os << "; after it: ";
  showValue(runs.second, os);
}

// A model session of a case; destroyed when the case ends however it ends.
class ModelSession {
 public:
  ModelSession(engine::Engine& engine, int index) : engine_(engine) {
    absl::StatusOr<engine::SessionHandle> made = engine.CreateModel(index);
    if (!made.ok()) RC_FAIL(absl::StrCat("model_create: ", made.status().ToString()));
    handle_ = *made;
  }
  ~ModelSession() { engine_.DestroyModel(handle_); }

  // The logits of `seq` tokens of every row starting at `start` of `run`.
  std::vector<float> Forward(const TokenRun& run, int64_t start, int64_t seq, bool use_cache,
                             int64_t vocab, const std::string& what) {
    std::vector<int64_t> ids;
    for (int64_t b = 0; b < run.batch; ++b) {
      const auto row = run.tokens.begin() + b * run.length + start;
      ids.insert(ids.end(), row, row + seq);
    }
    absl::StatusOr<std::vector<float>> logits =
        engine_.Forward(handle_, ids, run.batch, seq, use_cache);
    if (!logits.ok()) RC_FAIL(absl::StrCat(what, ": forward failed: ", logits.status().ToString()));
    if (static_cast<int64_t>(logits->size()) != run.batch * seq * vocab) {
      RC_FAIL(absl::StrCat(what, ": forward returned ", logits->size(), " logits, expected (B ",
                           run.batch, ", S ", seq, ", V ", vocab, ")"));
    }
    for (size_t e = 0; e < logits->size(); ++e) {
      if (!std::isfinite((*logits)[e])) {
        const int64_t v = static_cast<int64_t>(e) % vocab, r = static_cast<int64_t>(e) / vocab;
        RC_FAIL(absl::StrCat(what, ": logit ", v, " of row ", r / seq, " at position ",
                             start + r % seq, " is ", (*logits)[e]));
      }
    }
    return *std::move(logits);
  }

  engine::Engine& engine() { return engine_; }
  engine::SessionHandle handle() const { return handle_; }

  void Reset() {
    const absl::Status reset = engine_.ResetModel(handle_);
    if (!reset.ok()) RC_FAIL(absl::StrCat("model_reset: ", reset.ToString()));
  }

 private:
  engine::Engine& engine_;
  engine::SessionHandle handle_ = 0;
};

// Compares `got` (B, seq, V) with rows [start, start + seq) of `want` (B, want_len, V).
void ExpectAgree(const std::vector<float>& got, int64_t start, int64_t seq,
                 const std::vector<float>& want, int64_t want_len, int64_t batch, int64_t vocab,
                 double tolerance, const std::string& got_name, const std::string& want_name,
                 const std::string& what) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      const float* g = got.data() + (b * seq + s) * vocab;
      const float* w = want.data() + (b * want_len + start + s) * vocab;
      double scale = 0;
      for (int64_t v = 0; v < vocab; ++v) scale = std::max(scale, std::fabs(double{w[v]}));
      const double allowed = tolerance * (1 + scale);
      for (int64_t v = 0; v < vocab; ++v) {
        const double diff = std::fabs(double{g[v]} - double{w[v]});
        if (diff > allowed) {
          RC_FAIL(absl::StrFormat(
              "%s, batch row %d, position %d: logit %d is %.9g %s but %.9g %s "
              "(|difference| %.3g > %.3g = tolerance %g x (1 + max |logit| %.4g))",
              what, b, start + s, v, g[v], got_name, w[v], want_name, diff, allowed, tolerance,
              scale));
        }
      }
    }
  }
}

// Feeds `run` through `session`'s cache chunk by chunk; the logits of every chunk, in order
// (each (B, chunk, V)), are handed to `each(start, seq, logits, chunk index)`. `between`, if
// given, is called as between(chunks fed so far, position) before every chunk and after the
// last: the laws that make other calls between the cached ones.
void FeedChunks(ModelSession& session, const TokenRun& run, int64_t vocab,
                const std::string& what,
                const std::function<void(int64_t, int64_t, const std::vector<float>&, size_t)>&
                    each,
                const std::function<void(size_t, int64_t)>& between = nullptr) {
  int64_t start = 0;
  for (size_t c = 0; c < run.chunks.size(); ++c) {
    if (between) between(c, start);
    const std::string at = absl::StrCat(what, " chunk ", c + 1, " of ", run.chunks.size(),
                                        " (positions [", start, ", ", start + run.chunks[c], "))");
    NoteStep(at);
    const std::vector<float> logits = session.Forward(run, start, run.chunks[c], true, vocab, at);
    each(start, run.chunks[c], logits, c);
    start += run.chunks[c];
  }
  if (between) between(run.chunks.size(), start);
}

// The logits of `run` fed chunk by chunk through a new session's cache, as (B, T, V).
std::vector<float> LogitsOfAFreshSession(engine::Engine& engine, int index, const TokenRun& run,
                                         int64_t vocab, const std::string& what) {
  std::vector<float> all(run.batch * run.length * vocab);
  ModelSession session(engine, index);
  FeedChunks(session, run, vocab, what,
             [&](int64_t start, int64_t seq, const std::vector<float>& logits, size_t) {
               for (int64_t b = 0; b < run.batch; ++b) {
                 std::copy(logits.begin() + b * seq * vocab,
                           logits.begin() + (b + 1) * seq * vocab,
                           all.begin() + (b * run.length + start) * vocab);
               }
             });
  return all;
}

void CachedEqualsRecomputation(engine::Engine& engine, int index, const TokenRun& run) {
  const engine::ModelInfo& info = engine.info().models[index];
  const int64_t V = info.vocab_size;
  ModelSession session(engine, index);
  NoteStep("the recomputation without the cache");
  const std::vector<float> full =
      session.Forward(run, 0, run.length, false, V, "the recomputation without the cache");
  FeedChunks(session, run, V, "cached",
             [&](int64_t start, int64_t seq, const std::vector<float>& logits, size_t c) {
               ExpectAgree(logits, start, seq, full, run.length, run.batch, V, info.tolerance,
                           "with the cache", "recomputed without it",
                           absl::StrCat("chunk ", c + 1, " of ", run.chunks.size()));
             });
  // The recomputation is causal: a prefix's recomputation is the whole one's first rows.
  const int64_t prefix = run.chunks[0];
  if (prefix < run.length) {
    NoteStep("the recomputation of a prefix");
    const std::vector<float> part =
        session.Forward(run, 0, prefix, false, V, "the recomputation of a prefix");
    ExpectAgree(part, 0, prefix, full, run.length, run.batch, V, info.tolerance,
                absl::StrCat("recomputing the first ", prefix, " tokens"),
                "recomputing all of them", "the recomputation without the cache");
  }
  RC_CLASSIFY(run.chunks.size() > 1, "several chunks");
}

void ChunkedPrefill(engine::Engine& engine, int index, const TokenRun& run, int64_t prompt) {
  const engine::ModelInfo& info = engine.info().models[index];
  const int64_t V = info.vocab_size;
  // One-chunk prompt, then decode, in a second session.
  TokenRun one = run;
  one.chunks = {prompt};
  for (int64_t t = prompt; t < run.length; ++t) one.chunks.push_back(1);
  TokenRun cut = run;  // the generated cut points, only within the prompt; decode after it
  cut.chunks.clear();
  int64_t done = 0;
  for (int64_t chunk : run.chunks) {
    if (done >= prompt) break;
    cut.chunks.push_back(std::min(chunk, prompt - done));
    done += cut.chunks.back();
  }
  for (int64_t t = prompt; t < run.length; ++t) cut.chunks.push_back(1);
  const std::vector<float> whole = LogitsOfAFreshSession(engine, index, one, V, "one-chunk prompt");
  ModelSession session(engine, index);
  FeedChunks(session, cut, V, "chunked prompt",
             [&](int64_t start, int64_t seq, const std::vector<float>& logits, size_t c) {
               ExpectAgree(logits, start, seq, whole, run.length, run.batch, V, info.tolerance,
                           "with the prompt in chunks", "with the prompt in one chunk",
                           absl::StrCat("chunk ", c + 1, " of ", cut.chunks.size()));
             });
  RC_CLASSIFY(cut.chunks.size() > one.chunks.size(), "prompt cut");
}

void ResetEqualsFresh(engine::Engine& engine, int index, const TwoRuns& runs) {
  const engine::ModelInfo& info = engine.info().models[index];
  const int64_t V = info.vocab_size;
  const TokenRun& second = runs.second;
  const std::vector<float> fresh = LogitsOfAFreshSession(engine, index, second, V, "fresh model");
  ModelSession session(engine, index);
  FeedChunks(session, runs.first, V, "before the reset",
             [](int64_t, int64_t, const std::vector<float>&, size_t) {});
  NoteStep("reset");
  session.Reset();
  FeedChunks(session, second, V, "after the reset",
             [&](int64_t start, int64_t seq, const std::vector<float>& logits, size_t c) {
               ExpectAgree(logits, start, seq, fresh, second.length, second.batch, V,
                           info.tolerance, "after a reset", "from a fresh model",
                           absl::StrCat("after the reset, chunk ", c + 1, " of ",
                                        second.chunks.size()));
             });
  RC_CLASSIFY(runs.first.batch != second.batch, "batch size changed");
}

void ChunkingEqualsTokenByToken(engine::Engine& engine, int index, const TokenRun& run) {
  const engine::ModelInfo& info = engine.info().models[index];
  const int64_t V = info.vocab_size;
  TokenRun single = run;
  single.chunks.assign(run.length, 1);
  const std::vector<float> stepped =
      LogitsOfAFreshSession(engine, index, single, V, "token by token");
  ModelSession session(engine, index);
  FeedChunks(session, run, V, "cached",
             [&](int64_t start, int64_t seq, const std::vector<float>& logits, size_t c) {
               ExpectAgree(logits, start, seq, stepped, run.length, run.batch, V, info.tolerance,
                           "fed in chunks", "fed one token at a time",
                           absl::StrCat("chunk ", c + 1, " of ", run.chunks.size()));
             });
  RC_CLASSIFY(std::any_of(run.chunks.begin(), run.chunks.end(), [](int64_t c) { return c > 1; }),
              "a chunk of several tokens");
}

// Uncached forwards made between the cached chunks of a run, labelled in counterexamples:
// before chunk `before` (0-based; past the last chunk: after all of them), `length` tokens per
// row from a seeded stream.
struct UncachedCall {
  int64_t before = 0;
  int64_t length = 1;
  uint64_t seed = 0;
};

void showValue(const std::vector<UncachedCall>& calls, std::ostream& os) {
  os << "uncached forwards:";
  for (const UncachedCall& call : calls) {
    os << " [" << call.length << " tokens before cached chunk " << call.before + 1 << "]";
  }
}

rc::Gen<std::vector<UncachedCall>> GenUncachedCalls(int64_t max_tokens) {
  return rc::gen::exec([max_tokens] {
    return *rc::gen::container<std::vector<UncachedCall>>(
        *Uniform<size_t>(1, 4), rc::gen::exec([max_tokens] {
          UncachedCall call;
          call.before = *Uniform<int64_t>(0, 8);
          call.length = *Uniform<int64_t>(1, std::min<int64_t>(max_tokens, 9) + 1);
          call.seed = *rc::gen::arbitrary<uint64_t>();
          return call;
        }));
  });
}

// The tokens of `call`: run.batch rows of call.length ids below `vocab`, from its seed.
TokenRun UncachedTokens(const UncachedCall& call, int64_t batch, int64_t vocab) {
  TokenRun other;
  other.batch = batch;
  other.length = call.length;
  other.chunks = {call.length};
  uint64_t state = call.seed;
  for (int64_t i = 0; i < batch * call.length; ++i) {
    other.tokens.push_back(static_cast<int64_t>(SplitMix64(state) % vocab));
  }
  return other;
}

void UncachedBetweenCachedChangesNothing(engine::Engine& engine, int index, const TokenRun& run,
                                         const std::vector<UncachedCall>& calls) {
  const engine::ModelInfo& info = engine.info().models[index];
  const int64_t V = info.vocab_size;
  const std::vector<float> plain = LogitsOfAFreshSession(engine, index, run, V, "cached only");
  ModelSession session(engine, index);
  // An uncached forward neither reads nor changes the cache: the chunks after it see the
  // cache as they would have without it.
  const auto uncached = [&](size_t c, int64_t) {
    if (c == run.chunks.size()) return;  // no cached chunk after it to check
    for (const UncachedCall& call : calls) {
      if (std::min<size_t>(call.before, run.chunks.size() - 1) != c) continue;
      const std::string what = absl::StrCat("an uncached forward of ", call.length,
                                            " tokens before cached chunk ", c + 1);
      NoteStep(what);
      session.Forward(UncachedTokens(call, run.batch, V), 0, call.length, false, V, what);
    }
  };
  FeedChunks(session, run, V, "cached",
             [&](int64_t start, int64_t seq, const std::vector<float>& logits, size_t c) {
               ExpectAgree(logits, start, seq, plain, run.length, run.batch, V, info.tolerance,
                           "after the uncached forwards", "without them",
                           absl::StrCat("cached chunk ", c + 1, " of ", run.chunks.size()));
             },
             uncached);
  RC_CLASSIFY(calls.size() > 1, "several uncached forwards");
}

// A call the model must refuse, made between the cached chunks of a run, labelled in
// counterexamples.
struct BadCall {
  int kind = 0;        // 0: a chunk past max_tokens, 1: another batch size, 2: an empty chunk
  int64_t after = 0;   // made after this many cached chunks (at most all of them)
};

const char* const kBadCallNames[] = {"a chunk past max_tokens", "another batch size without a reset",
                                     "an empty chunk"};

void showValue(const BadCall& call, std::ostream& os) {
  os << "bad call: " << kBadCallNames[call.kind] << ", after " << call.after << " cached chunks";
}

// Makes `call` at position `position` of `run` (in `session`, before cached chunk `chunk`):
// it must fail, except that an empty chunk may also return no logits. The cache must be as
// before, which the chunks after it check.
void MakeBadCall(ModelSession& session, const engine::ModelInfo& info, const TokenRun& run,
                 const BadCall& call, int64_t position, size_t chunk) {
  TokenRun bad;
  bad.batch = run.batch;
  int64_t seq = 1;
  if (call.kind == 0) {
    seq = info.max_tokens - position + 1;
  } else if (call.kind == 1) {
    bad.batch = run.batch == 1 ? 2 : run.batch - 1;
  } else {
    seq = 0;
  }
  bad.length = seq;
  bad.tokens.assign(bad.batch * seq, 0);
  const std::string what = absl::StrCat(kBadCallNames[call.kind], " (B ", bad.batch, ", S ", seq,
                                        " at position ", position, ") after ", chunk,
                                        " cached chunks");
  NoteStep(what);
  std::vector<int64_t> ids(bad.tokens.begin(), bad.tokens.end());
  const absl::StatusOr<std::vector<float>> answer =
      session.engine().Forward(session.handle(), ids, bad.batch, seq, true);
  if (answer.ok() && !(seq == 0 && answer->empty())) {
    RC_FAIL(absl::StrCat("the model accepted ", what, ": it must refuse it with an error and "
                         "keep its state"));
  }
}

void BadCallsRefused(engine::Engine& engine, int index, const TokenRun& run, const BadCall& call) {
  const engine::ModelInfo& info = engine.info().models[index];
  const int64_t V = info.vocab_size;
  const std::vector<float> plain = LogitsOfAFreshSession(engine, index, run, V, "without it");
  ModelSession session(engine, index);
  const size_t at = std::min<size_t>(call.after, run.chunks.size());
  FeedChunks(session, run, V, "cached",
             [&](int64_t start, int64_t seq, const std::vector<float>& logits, size_t c) {
               ExpectAgree(logits, start, seq, plain, run.length, run.batch, V, info.tolerance,
                           "after the refused call", "without it",
                           absl::StrCat("cached chunk ", c + 1, " of ", run.chunks.size()));
             },
             [&](size_t c, int64_t start) {
               if (c == at) MakeBadCall(session, info, run, call, start, c);
             });
  RC_TAG(kBadCallNames[call.kind]);
}

// Sequences stay this short: a model behind a pipe answers in milliseconds, and cache bugs
// show within a few windows.
constexpr int64_t kMaxLength = 48;

}  // namespace

std::vector<PropertySpec> ModelProperties(const Subject& subject) {
  std::vector<PropertySpec> specs;
  if (subject.engine == nullptr) return specs;
  engine::Engine* engine = subject.engine.get();
  const std::vector<engine::ModelInfo>& models = engine->info().models;
  for (size_t i = 0; i < models.size(); ++i) {
    const engine::ModelInfo* info = &models[i];
    const int index = static_cast<int>(i);
    const std::string prefix = absl::StrCat("model/", info->name, "/");
    specs.push_back(PropertySpec{
        prefix + "cached_equals_recomputation", 60, [engine, info, index] {
          const TokenRun run = *GenTokenRun(*info, kMaxLength);
          RunIsolated([&] { CachedEqualsRecomputation(*engine, index, run); });
        }});
    specs.push_back(PropertySpec{prefix + "chunked_prefill", 40, [engine, info, index] {
                                   const TokenRun run = *GenTokenRun(*info, kMaxLength);
                                   const int64_t prompt =
                                       (*Label("prompt length", Uniform<int64_t>(1, run.length + 1)))
                                           .value;
                                   RunIsolated([&] { ChunkedPrefill(*engine, index, run, prompt); });
                                 }});
    specs.push_back(PropertySpec{
        prefix + "chunking_equals_token_by_token", 40, [engine, info, index] {
          const TokenRun run = *GenTokenRun(*info, kMaxLength);
          RunIsolated([&] { ChunkingEqualsTokenByToken(*engine, index, run); });
        }});
    specs.push_back(PropertySpec{
        prefix + "uncached_between_cached_changes_nothing", 40, [engine, info, index] {
          const TokenRun run = *GenTokenRun(*info, kMaxLength);
          const std::vector<UncachedCall> calls = *GenUncachedCalls(info->max_tokens);
          RunIsolated([&] { UncachedBetweenCachedChangesNothing(*engine, index, run, calls); });
        }});
    specs.push_back(PropertySpec{prefix + "bad_calls_refused", 40, [engine, info, index] {
      const TokenRun run = *GenTokenRun(*info, kMaxLength);
      const BadCall call = *rc::gen::exec([] {
        const int kind = *Uniform(0, 3);
        const int64_t after = *Uniform<int64_t>(0, 8);
        // A batch size is fixed by the first cached chunk: its change comes after one.
        return BadCall{kind, kind == 1 ? after + 1 : after};
      });
      RunIsolated([&] { BadCallsRefused(*engine, index, run, call); });
    }});
    if (info->flags & KVCHECK_MODEL_RESET) {
      specs.push_back(PropertySpec{prefix + "reset_equals_fresh", 40, [engine, info, index] {
                                     const TwoRuns runs = *rc::gen::exec([info] {
                                       return TwoRuns{*GenTokenRun(*info, kMaxLength),
                                                      *GenTokenRun(*info, kMaxLength)};
                                     });
                                     RunIsolated([&] { ResetEqualsFresh(*engine, index, runs); });
                                   }});
    }
  }
  return specs;
}

}  // namespace kvcheck::properties
