// File: token_run.h
// TokenRun: the token stream of a model-level law (model_properties.h): B rows of T token ids
// and the chunk lengths they are fed in, generated so that a failure shrinks to the fewest
// rows, tokens and chunks it needs.
#ifndef KVCHECK_PROPERTIES_TOKEN_RUN_H_
#define KVCHECK_PROPERTIES_TOKEN_RUN_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "rapidcheck.h"
#include "src/engine/engine.h"

namespace kvcheck::properties {

struct TokenRun {
  int64_t batch = 1;
  int64_t length = 0;
  std::vector<int64_t> tokens;  // (batch, length) row-major
  std::vector<int64_t> chunks;  // summing to length
};

void showValue(const TokenRun& run, std::ostream& os);

// Chunk lengths summing to `length`, from a plan of chunk kinds (one per chunk; after the
// plan, decode-size steps): 0 a decode-size step, 1 .. 10 the lengths 2, 3, 4, 5, 7, 8, 9, 16, 17, 33
// where windows and tiles break, 11 the whole rest.
std::vector<int64_t> ChunksOf(const std::vector<int>& plan, int64_t length);

// Runs of 1 .. min(info.max_tokens, max_length) tokens below info.vocab_size, in 1 .. 3 rows
// when the model takes batches. The tokens and chunk kinds are drawn first, for the longest
// run, and the batch and length last: RapidCheck shrinks draws in order and redraws what
// follows a shrunk one, so the length shrinks under the chunking and the tokens a failure
// needs (the token at row b, position t is the same draw at every length).
// REQUIRES: `info` outlives the generator.
rc::Gen<TokenRun> GenTokenRun(const engine::ModelInfo& info, int64_t max_length);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_TOKEN_RUN_H_
