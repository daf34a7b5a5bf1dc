#include "cli/job_result.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "properties/ratio_wire.h"

namespace kvcheck::cli {
namespace {

using Json = nlohmann::json;
using properties::RecordCounts;

// Kernel statistics keyed (kernel, dtype) as ratio-wire records labelled "kernel\tdtype".
std::string KernelWire(const properties::KernelStatsMap& map) {
  std::string wire;
  for (const auto& [key, stats] : map) {
    if (stats.cases == 0 && stats.ratios.count() == 0) continue;  // an entry another job filled
    properties::AppendRatioRecord(wire, absl::StrCat(key.first, "\t", key.second),
                                  {stats.cases, stats.unchecked, stats.hull_bounded},
                                  stats.ratios);
  }
  return wire;
}

void ReadKernelWire(std::string_view wire, properties::KernelStatsMap* map) {
  properties::ForEachRatioRecord(wire, [&](std::string_view label, const RecordCounts& counts,
                                           const reference::RatioStats& ratios) {
    const size_t tab = label.find('\t');
    properties::KernelStats& stats =
        (*map)[{std::string(label.substr(0, tab)),
                tab == std::string_view::npos ? "" : std::string(label.substr(tab + 1))}];
    stats.cases += counts[0];
    stats.unchecked += counts[1];
    stats.hull_bounded += counts[2];
    stats.ratios.Merge(ratios);
  });
}

// The soundness statistics: one record per family, then the whole ("\x01all") with the counts.
constexpr std::string_view kAllLabel = "\x01" "all";

std::string SoundnessWire(const properties::SoundnessStats& s) {
  std::string wire;
  for (const auto& [family, ratios] : s.by_family) {
    properties::AppendRatioRecord(wire, family, {0, 0, 0}, ratios);
  }
  properties::AppendRatioRecord(wire, kAllLabel,
                                {s.problems, s.unbounded_elements, s.hull_bounded_elements}, s.all);
  return wire;
}

void ReadSoundnessWire(std::string_view wire, properties::SoundnessStats* s) {
  properties::ForEachRatioRecord(wire, [&](std::string_view label, const RecordCounts& counts,
                                           const reference::RatioStats& ratios) {
    if (label == kAllLabel) {
      s->problems += counts[0];
      s->unbounded_elements += counts[1];
      s->hull_bounded_elements += counts[2];
      s->all.Merge(ratios);
    } else {
      s->by_family[std::string(label)].Merge(ratios);
    }
  });
}

void AppendPart(std::string& out, std::string_view part) {
  const uint64_t size = part.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out.append(part);
}

bool TakePart(std::string_view& in, std::string_view* part) {
  uint64_t size;
  if (in.size() < sizeof size) return false;
  std::memcpy(&size, in.data(), sizeof size);
  in.remove_prefix(sizeof size);
  if (in.size() < size) return false;
  *part = in.substr(0, size);
  in.remove_prefix(size);
  return true;
}

Json OutcomeJson(const properties::PropertyOutcome& o) {
  Json distribution = Json::array();
  for (const auto& [tags, count] : o.distribution) distribution.push_back({tags, count});
  return {{"name", o.name},
          {"passed", o.passed},
          {"cases", o.cases},
          {"seconds", o.seconds},
          {"search_seconds", o.search_seconds},
          {"message", o.message},
          {"replay", o.replay},
          {"counterexample_lines", o.counterexample_lines},
          {"end", static_cast<int>(o.end)},
          {"shrink_attempts", o.shrink_attempts},
          {"shrinks_accepted", o.shrinks_accepted},
          {"shrink_budget_exhausted", o.shrink_budget_exhausted},
          {"stopped_at_deadline", o.stopped_at_deadline},
          {"seed", o.seed},
          {"reproduce", o.reproduce},
          {"counterexample", o.counterexample},
          {"description", o.description},
          {"distribution", distribution}};
}

properties::PropertyOutcome OutcomeFromJson(const Json& j) {
  properties::PropertyOutcome o;
  o.name = j.at("name").get<std::string>();
  o.passed = j.at("passed").get<bool>();
  o.cases = j.at("cases").get<int>();
  o.seconds = j.at("seconds").get<double>();
  o.search_seconds = j.at("search_seconds").get<double>();
  o.message = j.at("message").get<std::string>();
  o.replay = j.at("replay").get<std::string>();
  o.counterexample_lines = j.at("counterexample_lines").get<int>();
  o.end = static_cast<properties::CaseEnd>(j.at("end").get<int>());
  o.shrink_attempts = j.at("shrink_attempts").get<int>();
  o.shrinks_accepted = j.at("shrinks_accepted").get<int>();
  o.shrink_budget_exhausted = j.at("shrink_budget_exhausted").get<bool>();
  o.stopped_at_deadline = j.at("stopped_at_deadline").get<bool>();
  o.seed = j.at("seed").get<uint64_t>();
  o.reproduce = j.at("reproduce").get<std::string>();
  o.counterexample = j.at("counterexample").get<std::string>();
  o.description = j.at("description").get<std::string>();
  for (const Json& entry : j.at("distribution")) {
    o.distribution[entry.at(0).get<std::vector<std::string>>()] = entry.at(1).get<int>();
  }
  return o;
}

}  // namespace

void RecordedStats::Clear() {
  kernels.clear();
  envelope.clear();
  cache.clear();
  soundness = properties::SoundnessStats();
  margins.clear();
}

void RecordedStats::MergeFrom(const RecordedStats& other) {
  const auto merge = [](properties::KernelStatsMap& into, const properties::KernelStatsMap& from) {
    for (const auto& [key, stats] : from) {
      properties::KernelStats& row = into[key];
      row.cases += stats.cases;
      row.unchecked += stats.unchecked;
      row.hull_bounded += stats.hull_bounded;
      row.ratios.Merge(stats.ratios);
    }
  };
  merge(kernels, other.kernels);
  merge(envelope, other.envelope);
  for (const auto& [name, stats] : other.cache) cache[name].commands += stats.commands;
  for (const auto& [family, ratios] : other.soundness.by_family) {
    soundness.by_family[family].Merge(ratios);
  }
  soundness.all.Merge(other.soundness.all);
  soundness.problems += other.soundness.problems;
  soundness.unbounded_elements += other.soundness.unbounded_elements;
  soundness.hull_bounded_elements += other.soundness.hull_bounded_elements;
  for (const auto& [law, ratios] : other.margins) margins[law].Merge(ratios);
}

std::string EncodeJobResult(const JobResult& result) {
  Json header;
  header["outcome"] = OutcomeJson(result.outcome);
  if (result.kill.has_value()) {
    const defects::KillResult& k = *result.kill;
    header["kill"] = {{"defect", k.defect},
                      {"property", k.property},
                      {"killed", k.killed},
                      {"cases_until_failure", k.cases_until_failure},
                      {"counterexample_lines", k.counterexample_lines},
                      {"find_seconds", k.find_seconds},
                      {"seconds", k.seconds},
                      {"shrink_budget_exhausted", k.shrink_budget_exhausted},
                      {"end", static_cast<int>(k.end)},
                      {"message", k.message}};
  }
  Json cache = Json::object();
  for (const auto& [name, stats] : result.stats.cache) {
    if (stats.commands != 0) cache[name] = stats.commands;
  }
  header["cache"] = cache;
  std::string out;
  // Invalid UTF-8 in a message (a counterexample's bytes) is replaced, not a throw.
  AppendPart(out, header.dump(-1, ' ', false, Json::error_handler_t::replace));
  AppendPart(out, KernelWire(result.stats.kernels));
  AppendPart(out, KernelWire(result.stats.envelope));
  AppendPart(out, SoundnessWire(result.stats.soundness));
  AppendPart(out, properties::EncodeLawMargins(result.stats.margins));
  return out;
}

absl::StatusOr<JobResult> DecodeJobResult(std::string_view bytes) {
  std::string_view header_text, kernels, envelope, soundness, margins;
  if (!TakePart(bytes, &header_text) || !TakePart(bytes, &kernels) ||
      !TakePart(bytes, &envelope) || !TakePart(bytes, &soundness) ||
      !TakePart(bytes, &margins)) {
    return absl::InternalError("a job result was cut short");
  }
  JobResult result;
  const Json header = Json::parse(header_text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return absl::InternalError("a job result's header is not JSON");
  try {
    result.outcome = OutcomeFromJson(header.at("outcome"));
    if (header.contains("kill")) {
      const Json& j = header.at("kill");
      defects::KillResult k;
      k.defect = j.at("defect").get<std::string>();
      k.property = j.at("property").get<std::string>();
      k.killed = j.at("killed").get<bool>();
      k.cases_until_failure = j.at("cases_until_failure").get<int>();
      k.counterexample_lines = j.at("counterexample_lines").get<int>();
      k.find_seconds = j.at("find_seconds").get<double>();
      k.seconds = j.at("seconds").get<double>();
      k.shrink_budget_exhausted = j.at("shrink_budget_exhausted").get<bool>();
      k.end = static_cast<properties::CaseEnd>(j.at("end").get<int>());
      k.message = j.at("message").get<std::string>();
      k.outcome = result.outcome;  // sent once, as the job's outcome
      result.kill = std::move(k);
    }
    for (const auto& [name, commands] : header.at("cache").items()) {
      result.stats.cache[name].commands = commands.get<int64_t>();
    }
  } catch (const Json::exception& e) {
    return absl::InternalError(absl::StrCat("a job result's header: ", e.what()));
  }
  ReadKernelWire(kernels, &result.stats.kernels);
  ReadKernelWire(envelope, &result.stats.envelope);
  ReadSoundnessWire(soundness, &result.stats.soundness);
  properties::MergeLawMargins(margins, &result.stats.margins);
  return result;
}

}  // namespace kvcheck::cli
