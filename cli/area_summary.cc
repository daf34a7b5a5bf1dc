#include "cli/area_summary.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace kvcheck::cli {
namespace {

constexpr const char* kAreas[] = {"cache", "attention", "metal", "generation", "engine", "other"};

struct AreaTotals {
  int properties = 0, failed = 0, not_run = 0;
  int64_t cases = 0;
  std::vector<std::string> margins;  // "0.0031 error/bound flash/split3 bf16", ...
};

bool IsMetalKernel(const std::string& kernel) { return absl::StartsWith(kernel, "metal"); }

// The largest ratio of the kernels on one side (Metal or not), as "<ratio> <what> <kernel>
// <dtype>"; empty when no such kernel recorded a ratio.
std::string WorstKernel(const properties::KernelStatsMap& stats, bool metal, const char* what) {
  double worst = -1;
  std::string where;
  for (const auto& [key, entry] : stats) {
    if (IsMetalKernel(key.first) != metal || entry.ratios.count() == 0) continue;
    if (entry.ratios.Max() > worst) {
      worst = entry.ratios.Max();
      where = absl::StrCat(key.first, " ", key.second);
    }
  }
  if (worst < 0) return "";
  return absl::StrFormat("%.2g %s (%s)", worst, what, where);
}

// The largest margin among the laws of `area` ("<area>/<what>" keys of law_margins.h).
std::string WorstLaw(const properties::LawMarginMap& margins, const std::string& area) {
  double worst = -1;
  std::string what;
  for (const auto& [law, ratios] : margins) {
    if (!absl::StartsWith(law, area + "/") || ratios.count() == 0) continue;
    if (ratios.Max() > worst) {
      worst = ratios.Max();
      what = law.substr(area.size() + 1);
    }
  }
  if (worst < 0) return "";
  return absl::StrFormat("%.2g %s", worst, what);
}

std::string Grouped(int64_t n) {
  std::string digits = absl::StrCat(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string AreaOf(const std::string& property) {
  if (absl::StartsWith(property, "attention/metal")) return "metal";
  for (const char* area : {"cache", "attention", "generation"}) {
    if (absl::StartsWith(property, absl::StrCat(area, "/"))) return area;
  }
  if (absl::StartsWith(property, "step/") || absl::StartsWith(property, "model/")) return "engine";
  return "other";
}

std::string FormatAreaSummary(const std::vector<report::PropertyResult>& properties,
                              const RecordedStats& stats,
                              const std::vector<defects::KillResult>& kills) {
  std::map<std::string, AreaTotals> areas;
  for (const report::PropertyResult& p : properties) {
    AreaTotals& a = areas[AreaOf(p.name)];
    ++a.properties;
    a.failed += p.status == report::PropertyStatus::kFailed;
    a.not_run += p.status == report::PropertyStatus::kNotRun;
    a.cases += p.cases;
  }
  const auto add = [](AreaTotals& a, std::string margin) {
    if (!margin.empty()) a.margins.push_back(std::move(margin));
  };
  if (areas.count("cache")) {
    AreaTotals& cache = areas["cache"];
    add(cache, WorstLaw(stats.margins, "cache"));
    int64_t commands = 0;
    for (const auto& [name, entry] : stats.cache) commands += entry.commands;
    if (commands > 0) add(cache, absl::StrCat(Grouped(commands), " commands, views bit-exact"));
  }
  for (const auto& [area, metal] : {std::pair<const char*, bool>{"attention", false},
                                   std::pair<const char*, bool>{"metal", true}}) {
    // The kernel laws over every kernel record Metal kernels too: their ratios are Metal's.
    const std::string bound = WorstKernel(stats.kernels, metal, "error/bound");
    const std::string envelope = WorstKernel(stats.envelope, metal, "envelope");
    if (bound.empty() && envelope.empty()) continue;
    AreaTotals& a = areas[area];
    add(a, bound);
    add(a, envelope);
  }
  if (areas.count("generation")) add(areas["generation"], WorstLaw(stats.margins, "generation"));
  if (areas.count("other") && stats.soundness.all.count() > 0) {
    add(areas["other"], absl::StrFormat("%.2g bound tightness (straightforward f32 / bound)",
                                        stats.soundness.all.Max()));
  }

  std::string out = absl::StrFormat("%-11s %10s %7s %10s  %s\n", "area", "properties", "failed",
                                    "cases", "worst margin (observed / allowed; 1 fails)");
  for (const char* name : kAreas) {
    auto found = areas.find(name);
    if (found == areas.end() || found->second.properties == 0) continue;
    const AreaTotals& a = found->second;
    std::string margin = a.margins.empty() ? "-" : absl::StrJoin(a.margins, "; ");
    if (a.not_run > 0) margin = absl::StrCat(a.not_run, " not run (time limit); ", margin);
    absl::StrAppendFormat(&out, "%-11s %10d %7d %10s  %s\n", name, a.properties, a.failed,
                          Grouped(a.cases), margin);
  }
  if (!kills.empty()) {
    int survived = 0;
    const defects::KillResult* slowest = nullptr;
    for (const defects::KillResult& k : kills) {
      survived += !k.killed;
      if (k.killed && (slowest == nullptr || k.seconds > slowest->seconds)) slowest = &k;
    }
    absl::StrAppendFormat(
        &out, "%-11s %10d %7d %10s  %d killed%s\n", "defects", static_cast<int>(kills.size()),
        survived, "", static_cast<int>(kills.size()) - survived,
        slowest == nullptr
            ? ""
            : absl::StrFormat(", the slowest in %.2f s (%s)", slowest->seconds, slowest->defect));
  }
  return out;
}

}  // namespace kvcheck::cli
