// File: model_properties.h
// The generation laws for an external engine's models (token ids in, logits out; src/engine/
// kvcheck_engine.h), with the model as the oracle of itself (for any engine, the hardest check
// of the KV-cache chapter of "Build a Large Language Model (From Scratch)"):
//   - model/<model>/cached_equals_recomputation: a sequence fed through the model's cache in
//     chunks (decode-size steps mostly, chunks of every length up to the whole sequence) gives
//     the logits of one recomputation without the cache, row by row; and the recomputation is
//     causal (a prefix's recomputation agrees with the whole one's first rows);
//   - model/<model>/chunked_prefill: a prompt cut at any points, then decoded token by token,
//     gives the logits of the same prompt in one chunk, then the same decode;
//   - model/<model>/chunking_equals_token_by_token: any chunking of a token stream gives the
//     logits of the same stream fed one token at a time through the model's own cache. It
//     needs no uncached path: a windowed model whose recomputation attends to everything is
//     held to its own finest chunking (a chunk into a full window that loses keys inside its
//     own window shows here);
//   - model/<model>/uncached_between_cached_changes_nothing: uncached forwards (other tokens,
//     other lengths) made between the cached chunks leave every later cached chunk's logits
//     as they were without them (an engine that resets its write pointer or positions on an
//     uncached call fails);
//   - model/<model>/bad_calls_refused: between cached chunks, a cached chunk past max_tokens,
//     one of another batch size without a reset, or an empty one; the model must refuse the
//     first two with an error (an empty chunk may also return no logits) and keep its state:
//     the chunks after it give the logits of a session without it;
//   - model/<model>/reset_equals_fresh (models that declare reset): a generation after a reset
//     (with another batch size when the model takes batches) gives the logits of a fresh
//     model.
// Logits agree when |a - b| <= tolerance * (1 + max_v |b_v|) in every row, the tolerance the
// model declares (default 1e-3: chunking changes the order of f32 sums, a cache bug changes
// logits by their own size); they must be finite. A failure names the chunk, the batch row,
// the position and the vocabulary entry, with both values.
#ifndef KVCHECK_PROPERTIES_MODEL_PROPERTIES_H_
#define KVCHECK_PROPERTIES_MODEL_PROPERTIES_H_

#include <vector>

#include "properties/property_runner.h"
#include "properties/subject.h"

namespace kvcheck::properties {

// The laws above for every model of subject.engine (none for the built-in engine, whose
// decoders have the generation properties). REQUIRES: `subject` outlives the properties.
std::vector<PropertySpec> ModelProperties(const Subject& subject);

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_MODEL_PROPERTIES_H_
