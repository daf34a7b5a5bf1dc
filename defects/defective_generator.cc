#include "defects/defective_generator.h"

#include "src/base/status_macros.h"

namespace kvcheck::defects {
namespace {

class DefectiveGenerator : public model::Generator {
 public:
  DefectiveGenerator(DecoderDefect defect, const model::Decoder* decoder,
                     model::GenerationOptions options)
      : Generator(decoder, std::move(options)), defect_(defect) {}

  absl::Status Initialize() { return Init(); }

  model::ForwardPositions ChunkPositions() const override {
    model::ForwardPositions positions = Generator::ChunkPositions();
    if (defect_ == DecoderDefect::kMaskFromZero) positions.query_first = 0;
    if (defect_ == DecoderDefect::kPositionsRestartAtZero) positions.first = 0;
    return positions;
  }

  absl::StatusOr<model::Generation> Generate(absl::Span<const int32_t> prompt, int64_t new_tokens,
                                             bool keep_logits) override {
    if (defect_ != DecoderDefect::kNoResetBetweenGenerations) {
      return Generator::Generate(prompt, new_tokens, keep_logits);
    }
    // reset_cache() is never called: caches and the position pointer carry over.
    return RunLoop(prompt, new_tokens, keep_logits);
  }

 private:
  DecoderDefect defect_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<model::Generator>> CreateDefectiveGenerator(
    DecoderDefect defect, const model::Decoder* decoder, model::GenerationOptions options) {
  auto g = std::make_unique<DefectiveGenerator>(defect, decoder, std::move(options));
  KV_RETURN_IF_ERROR(g->Initialize());
  return std::unique_ptr<model::Generator>(std::move(g));
}

}  // namespace kvcheck::defects
