#include "properties/bound_soundness.h"

#include "absl/strings/str_format.h"
#include "properties/attention_generators.h"
#include "properties/case_isolation.h"
#include "properties/ratio_wire.h"
#include "properties/straightforward_attention.h"
#include "rapidcheck.h"
#include "reference/reference_attention.h"

namespace kvcheck::properties {

std::string SoundnessStats::Report() const {
  std::string text = absl::StrFormat("%-16s %10s %12s %12s\n", "family", "elements",
                                     "max ratio", "median ratio");
  for (const auto& [family, stats] : by_family) {
    absl::StrAppendFormat(&text, "%-16s %10d %12.3g %12.3g\n", family, stats.count(), stats.Max(),
                          stats.Median());
  }
  absl::StrAppendFormat(&text, "%-16s %10d %12.3g %12.3g\n", "all", all.count(), all.Max(),
                        all.Median());
  absl::StrAppendFormat(&text,
                        "%d problems, %d elements outside the no-overflow regime (not checked), "
                        "%d bounded by the convex hull (score errors past the derived bound)\n",
                        problems, unbounded_elements, hull_bounded_elements);
  return text;
}

PropertySpec BoundSoundnessProperty(SoundnessStats* stats, int default_cases) {
  return PropertySpec{
      "reference/bound_is_sound", default_cases, [stats] {
        const LabeledProblem labeled = *GenAdversarialProblem();
        RC_TAG(labeled.family);
        const std::string wire = RunIsolatedWithPayload([&] {
          const reference::AttentionProblem& p = labeled.problem;
          const reference::ReferenceAttention exact = reference::ComputeReferenceAttention(p);
          const std::vector<float> actual = StraightforwardAttention(p);
          const reference::AttentionComparison comparison = reference::CompareAttention(
              actual, exact, {p.batch, p.num_heads, p.q_len, p.head_dim});
          if (!comparison.ok()) RC_FAIL(comparison.first_violation);
          std::string record;
          AppendRatioRecord(record, labeled.family, {comparison.unbounded, exact.hull_bounded, 0},
                            comparison.ratios);
          return record;
        });
        // Only successful cases count: shrinking replays failing ones many times.
        ForEachRatioRecord(wire, [stats](std::string_view family, const RecordCounts& counts,
                                         const reference::RatioStats& ratios) {
          stats->by_family[std::string(family)].Merge(ratios);
          stats->all.Merge(ratios);
          stats->unbounded_elements += counts[0];
          stats->hull_bounded_elements += counts[1];
          ++stats->problems;
        });
      }};
}

}  // namespace kvcheck::properties
