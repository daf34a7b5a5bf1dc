#include "properties/token_run.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "properties/generators.h"
#include "src/engine/kvcheck_engine.h"

namespace kvcheck::properties {

void showValue(const TokenRun& run, std::ostream& os) {
  os << "B=" << run.batch << ", T=" << run.length << ", chunks [" << absl::StrJoin(run.chunks, ", ")
     << "], tokens";
  for (int64_t b = 0; b < run.batch; ++b) {
    os << " [" << absl::StrJoin(run.tokens.begin() + b * run.length,
                                run.tokens.begin() + (b + 1) * run.length, ",")
       << "]";
  }
}

std::vector<int64_t> ChunksOf(const std::vector<int>& plan, int64_t length) {
  constexpr int64_t kLengths[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33};
  std::vector<int64_t> chunks;
  for (int64_t done = 0; done < length;) {
    const int kind = chunks.size() < plan.size() ? plan[chunks.size()] : 0;
    const int64_t left = length - done;
    const int64_t chunk = std::min(kind == 11 ? left : kLengths[kind], left);
    chunks.push_back(chunk);
    done += chunk;
  }
  return chunks;
}

rc::Gen<TokenRun> GenTokenRun(const engine::ModelInfo& info, int64_t max_length) {
  return rc::gen::exec([&info, max_length] {
    const int64_t longest = std::min<int64_t>(info.max_tokens, max_length);
    const int64_t max_batch = (info.flags & KVCHECK_MODEL_BATCH) ? 3 : 1;
    // A list of any length: shrinking removes kinds, which moves the ones a failure needs to
    // the first chunks.
    const std::vector<int> kinds = *rc::gen::container<std::vector<int>>(
        rc::gen::map(Uniform(0, 36), [](int x) { return x < 24 ? 0 : x - 24; }));
    // Each row's tokens: a list of any length (token 0 after it), so that tokens past the run
    // are dropped by shrinking rather than each shrunk on its own.
    const std::vector<std::vector<int64_t>> rows =
        *rc::gen::container<std::vector<std::vector<int64_t>>>(
            max_batch, rc::gen::container<std::vector<int64_t>>(Uniform<int64_t>(0, info.vocab_size)));
    TokenRun run;
    run.batch = *Uniform<int64_t>(1, max_batch + 1);
    run.length = *Uniform<int64_t>(1, longest + 1);
    for (int64_t b = 0; b < run.batch; ++b) {
      for (int64_t t = 0; t < run.length; ++t) {
        run.tokens.push_back(t < static_cast<int64_t>(rows[b].size()) ? rows[b][t] : 0);
      }
    }
    run.chunks = ChunksOf(kinds, run.length);
    return run;
  });
}

}  // namespace kvcheck::properties
