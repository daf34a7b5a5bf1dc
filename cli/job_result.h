// File: job_result.h
// What one job of a run (a property, or a defect's kill) hands back from its worker process
// (worker_pool.h): the outcome, and the statistics the properties recorded while it ran (the
// kernels' error / bound ratios, the state machines' command counts, the bound soundness
// ratios), which the parent merges into the run's totals. The same encoding carries a job run
// in the parent process, so one worker and many give the same totals.
#ifndef KVCHECK_CLI_JOB_RESULT_H_
#define KVCHECK_CLI_JOB_RESULT_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "defects/defect_kill.h"
#include "properties/attention_properties.h"
#include "properties/bound_soundness.h"
#include "properties/cache_properties.h"
#include "properties/law_margins.h"
#include "properties/property_runner.h"

namespace kvcheck::cli {

// The statistics a suite's properties record into (properties/suite.h).
struct RecordedStats {
  properties::KernelStatsMap kernels;
  properties::KernelStatsMap envelope;
  properties::CacheMachineStatsMap cache;
  properties::SoundnessStats soundness;
  properties::LawMarginMap margins;

  void Clear();
  void MergeFrom(const RecordedStats& other);
};

struct JobResult {
  properties::PropertyOutcome outcome;         // a property job
  std::optional<defects::KillResult> kill;     // a defect job
  RecordedStats stats;
};

std::string EncodeJobResult(const JobResult& result);
absl::StatusOr<JobResult> DecodeJobResult(std::string_view bytes);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_JOB_RESULT_H_
