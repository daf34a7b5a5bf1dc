// File: defective_generator.h
// The generation-loop defects of the exercises of the KV-cache chapter of "Build a Large
// Language Model (From Scratch)", as variants of model::Generator:
//   kMaskFromZero            the causal mask is sliced from row 0 instead of the position
//                            pointer: the chunk's queries sit at positions 0.. while its keys
//                            sit at the pointer (a decoded token sees only the first key);
//   kNoResetBetweenGenerations  Generate does not reset the caches and the pointer, so a second
//                            generation attends to the first one's tokens;
//   kPositionsRestartAtZero  the cached path gives each chunk position ids 0.. (embeddings,
//                            RoPE) while the mask uses the pointer.
#ifndef KVCHECK_DEFECTS_DEFECTIVE_GENERATOR_H_
#define KVCHECK_DEFECTS_DEFECTIVE_GENERATOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "src/model/generator.h"

namespace kvcheck::defects {

enum class DecoderDefect {
  kMaskFromZero,
  kNoResetBetweenGenerations,
  kPositionsRestartAtZero,
};

absl::StatusOr<std::unique_ptr<model::Generator>> CreateDefectiveGenerator(
    DecoderDefect defect, const model::Decoder* decoder, model::GenerationOptions options);

}  // namespace kvcheck::defects

#endif  // KVCHECK_DEFECTS_DEFECTIVE_GENERATOR_H_
