#include "report/run_report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/cpu_model.h"
#include "nlohmann/json.hpp"
#include "src/attention/flash_attention.h"

namespace kvcheck::report {
namespace {

using Json = nlohmann::ordered_json;

// Reads a report field by field, so that an error names the field ("properties[3].cases")
// instead of surfacing as nlohmann's exception text alone.
class Reader {
 public:
  explicit Reader(const Json& json, std::string path = "") : json_(json), path_(std::move(path)) {}

  template <typename T>
  void Get(const char* key, T* out) {
    if (!error_.empty()) return;
    if (!json_.is_object() || !json_.contains(key)) {
      error_ = absl::StrCat("missing field ", Path(key));
      return;
    }
    Convert(json_.at(key), Path(key), out);
  }

  // This reader's own value (an array element).
  template <typename T>
  void GetValue(T* out) {
    if (error_.empty()) Convert(json_, path_, out);
  }

  // Calls read(Reader&, T*) for every element of the array `key`.
  template <typename T, typename F>
  void GetArray(const char* key, std::vector<T>* out, F read) {
    if (!error_.empty()) return;
    if (!json_.is_object() || !json_.contains(key) || !json_.at(key).is_array()) {
      error_ = absl::StrCat(Path(key), " must be an array");
      return;
    }
    const Json& array = json_.at(key);
    for (size_t i = 0; i < array.size() && error_.empty(); ++i) {
      Reader element(array[i], absl::StrCat(Path(key), "[", i, "]"));
      T value{};
      read(element, &value);
      error_ = element.error_;
      out->push_back(std::move(value));
    }
  }

  Reader Object(const char* key) {
    if (error_.empty() && (!json_.contains(key) || !json_.at(key).is_object())) {
      error_ = absl::StrCat(Path(key), " must be an object");
    }
    Reader child(error_.empty() ? json_.at(key) : json_, Path(key));
    child.error_ = error_;
    return child;
  }
  void Absorb(const Reader& child) {
    if (error_.empty()) error_ = child.error_;
  }
  const std::string& error() const { return error_; }

 private:
  template <typename T>
  void Convert(const Json& value, const std::string& where, T* out) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (!value.is_string()) error_ = absl::StrCat(where, " must be a string");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!value.is_boolean()) error_ = absl::StrCat(where, " must be true or false");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!value.is_number()) error_ = absl::StrCat(where, " must be a number");
    } else if constexpr (std::is_unsigned_v<T>) {
      if (!value.is_number_unsigned()) error_ = absl::StrCat(where, " must be a count");
    } else {
      if (!value.is_number_integer()) error_ = absl::StrCat(where, " must be an integer");
    }
    if (error_.empty()) *out = value.get<T>();
  }

  std::string Path(const char* key) const {
    return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
  }
  const Json& json_;
  std::string path_;
  std::string error_;
};

Json KernelJson(const KernelResult& k) {
  return {{"kernel", k.kernel},         {"dtype", k.dtype},
          {"cases", k.cases},           {"elements", k.elements},
          {"unchecked", k.unchecked},   {"hull_bounded", k.hull_bounded},
          {"max_ratio", k.max_ratio},   {"median_ratio", k.median_ratio},
          {"histogram", k.histogram}};
}

void ReadKernel(Reader& r, KernelResult* k) {
  r.Get("kernel", &k->kernel);
  r.Get("dtype", &k->dtype);
  r.Get("cases", &k->cases);
  r.Get("elements", &k->elements);
  r.Get("unchecked", &k->unchecked);
  r.Get("hull_bounded", &k->hull_bounded);
  r.Get("max_ratio", &k->max_ratio);
  r.Get("median_ratio", &k->median_ratio);
  r.GetArray("histogram", &k->histogram, [](Reader& e, int64_t* v) { e.GetValue(v); });
}

}  // namespace

std::vector<int64_t> RatioHistogram(absl::Span<const double> ratios) {
  std::vector<int64_t> bins(kRatioHistogramBins, 0);
  for (double ratio : ratios) {
    int bin = 0;
    if (!(ratio < 1)) {
      bin = kRatioHistogramBins - 1;  // >= 1, and NaN (never recorded, but not lost)
    } else if (ratio >= 1e-8) {
      bin = 9 + static_cast<int>(std::floor(std::log10(ratio)));
      bin = std::max(1, std::min(bin, kRatioHistogramBins - 2));
    }
    ++bins[bin];
  }
  return bins;
}

std::string RatioHistogramLabel(int bin) {
  if (bin <= 0) return "< 1e-8";
  if (bin >= kRatioHistogramBins - 1) return ">= 1";
  return absl::StrCat("1e", bin - 9, "..1e", bin - 8);
}

const char* PropertyStatusName(PropertyStatus status) {
  switch (status) {
    case PropertyStatus::kPassed:
      return "passed";
    case PropertyStatus::kFailed:
      return "failed";
    case PropertyStatus::kNotRun:
      return "not_run";
  }
  return "not_run";
}

int64_t RunReport::TotalCases() const {
  int64_t total = 0;
  for (const PropertyResult& p : properties) total += p.cases;
  return total;
}

double RunReport::PropertySeconds() const {
  double total = 0;
  for (const PropertyResult& p : properties) total += p.seconds;
  return total;
}

int RunReport::Failed() const {
  int failed = 0;
  for (const PropertyResult& p : properties) failed += p.status == PropertyStatus::kFailed;
  return failed;
}

int RunReport::DefectsSurvived() const {
  int survived = 0;
  for (const DefectResult& d : defects) survived += !d.killed;
  return survived;
}

namespace {
std::string Count(int64_t n, const char* one, const char* many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}
}  // namespace

std::string SummaryLine(const RunReport& r) {
  std::string line;
  int not_run = 0;
  for (const PropertyResult& p : r.properties) not_run += p.status == PropertyStatus::kNotRun;
  if (!r.properties.empty()) {
    absl::StrAppend(&line, Count(static_cast<int64_t>(r.properties.size()), "property", "properties"),
                    ", ", r.Failed(), " failed",
                    not_run > 0 ? absl::StrCat(", ", not_run, " not run (time limit)") : "", "; ",
                    Count(r.TotalCases(), "case", "cases"),
                    absl::StrFormat(" in %.1f s (%.0f cases/s)", r.PropertySeconds(),
                                    r.PropertySeconds() > 0 ? r.TotalCases() / r.PropertySeconds()
                                                            : 0.0));
  }
  if (!r.defects.empty()) {
    absl::StrAppend(&line, line.empty() ? "" : "; ",
                    static_cast<int>(r.defects.size()) - r.DefectsSurvived(), " of ",
                    Count(static_cast<int64_t>(r.defects.size()), "defect", "defects"), " killed");
  }
  return line + ".";
}

Machine ThisMachine() {
  Machine machine;
  machine.cpu = bench::CpuModel();
  const std::vector<std::string> targets = SupportedSimdTargets();
  machine.simd_target = targets.empty() ? "scalar" : targets.front();
  machine.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return machine;
}

std::string ReportToJson(const RunReport& report) {
  Json json;
  json["schema"] = "kvcheck-report";
  json["schema_version"] = report.schema_version;
  json["started"] = report.started;
  json["command_line"] = report.command_line;
  json["subject"] = report.subject;
  json["seed"] = report.seed;
  json["oracle"] = report.oracle;
  json["threads"] = report.threads;
  json["machine"] = {{"cpu", report.machine.cpu},
                     {"simd_target", report.machine.simd_target},
                     {"cores", report.machine.cores}};
  json["seconds"] = report.seconds;
  json["exit_code"] = report.exit_code;
  json["summary"] = {{"properties", report.properties.size()},
                     {"failed", report.Failed()},
                     {"cases", report.TotalCases()},
                     {"property_seconds", report.PropertySeconds()},
                     {"defects", report.defects.size()},
                     {"defects_survived", report.DefectsSurvived()}};
  Json& properties = json["properties"] = Json::array();
  for (const PropertyResult& p : report.properties) {
    properties.push_back({{"name", p.name},
                          {"status", PropertyStatusName(p.status)},
                          {"cases", p.cases},
                          {"requested_cases", p.requested_cases},
                          {"seconds", p.seconds},
                          {"search_seconds", p.search_seconds},
                          {"stopped_at_time_limit", p.stopped_at_time_limit},
                          {"shrink_attempts", p.shrink_attempts},
                          {"shrinks", p.shrinks},
                          {"shrink_budget_exhausted", p.shrink_budget_exhausted},
                          {"ended", p.ended},
                          {"message", p.message},
                          {"failure_file", p.failure_file}});
  }
  Json& kernels = json["kernels"] = Json::array();
  for (const KernelResult& k : report.kernels) kernels.push_back(KernelJson(k));
  Json& envelope = json["envelope"] = Json::array();
  for (const KernelResult& k : report.envelope) envelope.push_back(KernelJson(k));
  Json& strategies = json["strategies"] = Json::array();
  for (const StrategyResult& s : report.strategies) {
    strategies.push_back({{"strategy", s.strategy},
                          {"dtype", s.dtype},
                          {"cases", s.cases},
                          {"commands", s.commands},
                          {"seconds", s.seconds},
                          {"passed", s.passed}});
  }
  Json& defects = json["defects"] = Json::array();
  for (const DefectResult& d : report.defects) {
    defects.push_back({{"name", d.name},
                       {"property", d.property},
                       {"killed", d.killed},
                       {"ended", d.ended},
                       {"cases", d.cases},
                       {"counterexample_lines", d.counterexample_lines},
                       {"find_seconds", d.find_seconds},
                       {"seconds", d.seconds},
                       {"failure_file", d.failure_file}});
  }
  json["baseline"] = report.baseline;
  Json& regressions = json["regressions"] = Json::array();
  for (const Regression& r : report.regressions) {
    regressions.push_back({{"kind", r.kind}, {"name", r.name}, {"detail", r.detail}});
  }
  return json.dump(1) + "\n";
}

absl::StatusOr<RunReport> ReportFromJson(const std::string& text) {
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError("not JSON");
  if (!json.is_object() || !json.contains("schema") || json["schema"] != "kvcheck-report") {
    return absl::InvalidArgumentError("not a kvcheck report (no \"schema\": \"kvcheck-report\")");
  }
  RunReport report;
  Reader r(json);
  r.Get("schema_version", &report.schema_version);
  if (r.error().empty() && report.schema_version != kReportSchemaVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("report schema version ", report.schema_version, " (this kvcheck reads ",
                     kReportSchemaVersion, ")"));
  }
  r.Get("started", &report.started);
  r.Get("command_line", &report.command_line);
  r.Get("subject", &report.subject);
  r.Get("seed", &report.seed);
  r.Get("oracle", &report.oracle);
  r.Get("threads", &report.threads);
  Reader machine = r.Object("machine");
  machine.Get("cpu", &report.machine.cpu);
  machine.Get("simd_target", &report.machine.simd_target);
  machine.Get("cores", &report.machine.cores);
  r.Absorb(machine);
  r.Get("seconds", &report.seconds);
  r.Get("exit_code", &report.exit_code);
  r.GetArray("properties", &report.properties, [](Reader& e, PropertyResult* p) {
    std::string status;
    e.Get("name", &p->name);
    e.Get("status", &status);
    p->status = status == "passed"   ? PropertyStatus::kPassed
                : status == "failed" ? PropertyStatus::kFailed
                                     : PropertyStatus::kNotRun;
    e.Get("cases", &p->cases);
    e.Get("requested_cases", &p->requested_cases);
    e.Get("seconds", &p->seconds);
    e.Get("search_seconds", &p->search_seconds);
    e.Get("stopped_at_time_limit", &p->stopped_at_time_limit);
    e.Get("shrink_attempts", &p->shrink_attempts);
    e.Get("shrinks", &p->shrinks);
    e.Get("shrink_budget_exhausted", &p->shrink_budget_exhausted);
    e.Get("ended", &p->ended);
    e.Get("message", &p->message);
    e.Get("failure_file", &p->failure_file);
  });
  r.GetArray("kernels", &report.kernels, ReadKernel);
  r.GetArray("envelope", &report.envelope, ReadKernel);
  r.GetArray("strategies", &report.strategies, [](Reader& e, StrategyResult* s) {
    e.Get("strategy", &s->strategy);
    e.Get("dtype", &s->dtype);
    e.Get("cases", &s->cases);
    e.Get("commands", &s->commands);
    e.Get("seconds", &s->seconds);
    e.Get("passed", &s->passed);
  });
  r.GetArray("defects", &report.defects, [](Reader& e, DefectResult* d) {
    e.Get("name", &d->name);
    e.Get("property", &d->property);
    e.Get("killed", &d->killed);
    e.Get("ended", &d->ended);
    e.Get("cases", &d->cases);
    e.Get("counterexample_lines", &d->counterexample_lines);
    e.Get("find_seconds", &d->find_seconds);
    e.Get("seconds", &d->seconds);
    e.Get("failure_file", &d->failure_file);
  });
  r.Get("baseline", &report.baseline);
  r.GetArray("regressions", &report.regressions, [](Reader& e, Regression* g) {
    e.Get("kind", &g->kind);
    e.Get("name", &g->name);
    e.Get("detail", &g->detail);
  });
  if (!r.error().empty()) return absl::InvalidArgumentError(absl::StrCat("report: ", r.error()));
  return report;
}

}  // namespace kvcheck::report
