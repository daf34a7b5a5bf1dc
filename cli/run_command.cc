// kvcheck run: selects properties and defects, runs them on worker processes, prints the
// tables, writes a failure file per failure, the reports, and compares with a baseline.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/area_summary.h"
#include "cli/commands.h"
#include "cli/job_result.h"
#include "cli/progress_display.h"
#include "cli/report_builder.h"
#include "cli/subject_choice.h"
#include "cli/worker_pool.h"
#include "defects/defect_kill.h"
#include "defects/defect_registry.h"
#include "properties/suite.h"
#include "report/baseline.h"
#include "report/failure_file.h"
#include "report/report_writers.h"
#include "report/run_report.h"

namespace kvcheck::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Job {
  std::string label;
  const properties::PropertySpec* property = nullptr;  // a property, or
  const defects::Defect* defect = nullptr;             // a defect's kill
  int requested_cases = 0;
};

struct Finished {
  std::optional<JobResult> result;
  std::string failure_file;
};

std::string UtcNow() {
  char text[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc;
  gmtime_r(&now, &utc);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// Writes the failure file of a failed property (or a defect's kill); returns its path, or ""
// with a warning when the directory cannot be written.
std::string WriteFailureFile(const Settings& settings, const properties::PropertyOutcome& o,
                             const std::string& defect, ProgressDisplay& display) {
  report::FailureFile file;
  file.property = o.name;
  file.defect = defect;
  file.engine = settings.engine.spec;
  file.isolate = settings.engine.isolate;
  file.seed = o.seed;
  file.oracle = settings.oracle;
  file.reproduce = o.reproduce;
  file.ended = CaseEndName(o.end);
  file.cases = o.cases + 1;
  file.counterexample = o.counterexample;
  file.failure = o.description;
  const std::string dir =
      defect.empty() ? settings.failures_dir : absl::StrCat(settings.failures_dir, "/defects");
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::string path = absl::StrCat(dir, "/", report::FailureFileName(file));
  std::ofstream out(path, std::ios::trunc);
  out << report::FormatFailureFile(file);
  out.close();
  if (error || !out) {
    display.Print(absl::StrCat("kvcheck: cannot write the failure file ", path));
    return "";
  }
  return path;
}

properties::RunOptions BaseOptions(const Settings& settings,
                                   const std::shared_ptr<engine::ProcessEngine>& process) {
  properties::RunOptions options;
  options.seed = settings.seed;
  options.fixed_cases = settings.cases;
  options.case_scale = settings.case_scale;
  options.reproduce = settings.reproduce;
  options.isolation.mode = settings.isolation;
  options.isolation.timeout_seconds = settings.case_timeout;
  options.shrink_seconds = settings.shrink_seconds;
  options.shrink_attempts = settings.shrink_attempts;
  options.replay_flags = EngineFlags(settings.engine);
  if (process != nullptr) {
    // Between cases: a fresh engine after a case that died mid-request (or before every case).
    options.isolation.after_case = [process, always = settings.engine.restart_every_case](
                                       properties::CaseEnd end) {
      const absl::Status restarted =
          process->RestartIfNeeded(always, end != properties::CaseEnd::kNone);
      if (!restarted.ok()) {
        std::fprintf(stderr, "kvcheck: restarting the engine failed: %s\n",
                     std::string(restarted.message()).c_str());
      }
    };
  }
  return options;
}

// The tables behind the area summary (--verbose).
void PrintTables(const RecordedStats& stats,
                 const std::vector<report::PropertyResult>& results) {
  std::printf("\n%-50s %8s %9s  %s\n", "property", "cases", "seconds", "result");
  for (const report::PropertyResult& p : results) {
    std::printf("%-50s %8d %9.2f  %s\n", p.name.c_str(), p.cases, p.seconds,
                p.status == report::PropertyStatus::kPassed   ? "PASS"
                : p.status == report::PropertyStatus::kFailed ? "FAIL"
                                                              : "NOT RUN (time limit)");
  }
  const std::vector<report::StrategyResult> strategies = StrategyResultsOf(results, stats.cache);
  if (!strategies.empty()) {
    int width = 12;
    for (const report::StrategyResult& s : strategies) {
      width = std::max(width, static_cast<int>(s.strategy.size()));
    }
    std::printf("\n%-*s %-6s %8s %10s  %s\n", width, "strategy", "dtype", "cases", "commands",
                "result");
    for (const report::StrategyResult& s : strategies) {
      std::printf("%-*s %-6s %8d %10lld  %s\n", width, s.strategy.c_str(), s.dtype.c_str(), s.cases,
                  static_cast<long long>(s.commands), s.passed ? "PASS" : "FAIL");
    }
  }
  if (!stats.kernels.empty()) {
    std::printf("\nAttention kernels against the reference (observed error / bound):\n%s",
                properties::FormatKernelStats(stats.kernels).c_str());
  }
  if (!stats.envelope.empty()) {
    std::printf("\nPrecision envelope against the straightforward f32 baseline (error / allowed; "
                "above 1 is a precision regression):\n%s",
                properties::FormatEnvelopeStats(stats.envelope).c_str());
  }
  if (stats.soundness.problems > 0) {
    std::printf("\nError-bound tightness (observed error / bound, straightforward f32 "
                "attention):\n%s",
                stats.soundness.Report().c_str());
  }
}

// The failed properties and surviving defects again, after the summary, one line each with
// the file that replays them: the counterexamples were printed when they were found.
void PrintFailures(const report::RunReport& report) {
  std::vector<std::string> lines;
  for (const report::PropertyResult& p : report.properties) {
    if (p.status != report::PropertyStatus::kFailed) continue;
    lines.push_back(absl::StrCat("  FAILED ", p.name, p.ended.empty() ? "" : " (", p.ended,
                                 p.ended.empty() ? "" : ")",
                                 p.failure_file.empty() ? ""
                                                        : absl::StrCat(": kvcheck replay ",
                                                                       p.failure_file)));
  }
  for (const report::DefectResult& d : report.defects) {
    if (!d.killed) lines.push_back(absl::StrCat("  SURVIVED ", d.name, " (", d.property, ")"));
  }
  if (lines.empty()) return;
  std::printf("\nFailures (each counterexample is printed above, where it was found):\n%s\n",
              absl::StrJoin(lines, "\n").c_str());
}

}  // namespace

int RunCommand(const Settings& settings) {
  const Clock::time_point start = Clock::now();
  const std::string started = UtcNow();
  absl::StatusOr<ChosenSubject> chosen = OpenSubject(settings.engine);
  if (!chosen.ok()) {
    std::fprintf(stderr, "kvcheck: %s\n", std::string(chosen.status().message()).c_str());
    return kExitUsage;
  }
  if (!chosen->description.empty()) std::printf("%s", chosen->description.c_str());
  absl::StatusOr<std::shared_ptr<const properties::Subject>> subject =
      NarrowSubject(chosen->subject, settings.strategies, settings.kernels, settings.dtypes);
  if (!subject.ok()) {
    std::fprintf(stderr, "kvcheck: %s\n", std::string(subject.status().message()).c_str());
    return kExitUsage;
  }
  properties::Suite suite = properties::SuiteFor(*subject);

  // What runs: the selected properties, then the selected defects (all of them on a run
  // without selection flags, for kvcheck's own engine).
  std::vector<std::string> property_names, defect_names;
  for (const properties::PropertySpec& spec : suite.properties) property_names.push_back(spec.name);
  for (const defects::Defect& d : defects::Defects()) defect_names.push_back(d.name);
  if (absl::Status s = settings.properties.CheckAgainst("--property", "property", property_names);
      !s.ok()) {
    std::fprintf(stderr, "kvcheck: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  if (absl::Status s = settings.defects.CheckAgainst("--defect", "defect", defect_names); !s.ok()) {
    std::fprintf(stderr, "kvcheck: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  const bool selects_properties = !settings.properties.empty() || !settings.strategies.empty() ||
                                  !settings.kernels.empty() || !settings.dtypes.empty();
  const bool defect_run = !settings.defects.empty();
  std::vector<Job> jobs;
  const properties::RunOptions base = BaseOptions(settings, chosen->process);
  if (!defect_run || selects_properties) {
    for (const properties::PropertySpec& spec : suite.properties) {
      if (!Selected(spec, settings)) continue;
      jobs.push_back({spec.name, &spec, nullptr, properties::CasesFor(spec, base)});
    }
  }
  const bool whole_catalogue = !selects_properties && !defect_run && settings.run_defects &&
                               (*subject)->builtin && settings.reproduce.empty();
  if (defect_run || whole_catalogue) {
    if (!(*subject)->builtin) {
      std::fprintf(stderr, "kvcheck: --defect: the defect catalogue is kvcheck's own engine's, "
                           "not %s's\n", (*subject)->name.c_str());
      return kExitUsage;
    }
    for (const defects::Defect& d : defects::Defects()) {
      if (d.killer == defects::Killer::kPending || !settings.defects.Matches(d.name)) continue;
      jobs.push_back({absl::StrCat("defect ", d.name), nullptr, &d, 0});
    }
  }
  if (jobs.empty()) {
    std::fprintf(stderr, "kvcheck: the selection leaves nothing to run (kvcheck list shows what "
                         "there is)\n");
    return kExitUsage;
  }

  std::optional<report::RunReport> baseline;
  if (!settings.baseline.empty()) {
    std::ifstream in(settings.baseline);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "kvcheck: --baseline: cannot read %s\n", settings.baseline.c_str());
      return kExitUsage;
    }
    absl::StatusOr<report::RunReport> parsed = report::ReportFromJson(text.str());
    if (!parsed.ok()) {
      std::fprintf(stderr, "kvcheck: --baseline %s: %s\n", settings.baseline.c_str(),
                   std::string(parsed.status().message()).c_str());
      return kExitUsage;
    }
    baseline = *std::move(parsed);
  }

  int threads = std::max(1, settings.threads);
  if (chosen->process != nullptr && threads > 1) {
    // One engine process serves the run: its requests cannot interleave from two workers.
    std::printf("kvcheck: one worker (a process engine serves one run at a time)\n");
    threads = 1;
  }
  size_t property_jobs = 0;
  for (const Job& job : jobs) property_jobs += job.property != nullptr;
  std::printf("kvcheck: %zu properties, %zu defects, seed %llu, isolation %s, oracle %s, %d "
              "worker%s\n",
              property_jobs, jobs.size() - property_jobs,
              static_cast<unsigned long long>(settings.seed),
              properties::IsolationName(settings.isolation),
              reference::OracleName(reference::DefaultOracle()), threads, threads == 1 ? "" : "s");
  std::fflush(stdout);

  const std::optional<Clock::time_point> run_deadline =
      settings.max_seconds > 0
          ? std::optional<Clock::time_point>(
                start + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(settings.max_seconds)))
          : std::nullopt;
  ProgressDisplay display(stderr, isatty(fileno(stderr)) != 0, static_cast<int>(jobs.size()),
                          settings.verbose);
  std::vector<Finished> finished(jobs.size());

  WorkerPoolCallbacks callbacks;
  callbacks.may_start = [&] { return !run_deadline.has_value() || Clock::now() < *run_deadline; };
  callbacks.run = [&](size_t index, const std::function<void(const std::string&)>& progress) {
    const Job& job = jobs[index];
    properties::RunOptions options = base;
    options.progress = [&progress](const properties::DriverProgress& p) {
      progress(EncodeProgress(p));
    };
    std::optional<Clock::time_point> deadline = run_deadline;
    if (settings.property_seconds > 0) {
      const Clock::time_point own =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(settings.property_seconds));
      deadline = deadline.has_value() ? std::min(*deadline, own) : own;
    }
    options.deadline = deadline;
    // The suite's statistics are this job's scratch space: what it records is sent back and
    // merged in the parent (the same with one worker or many). Emptied in place: the state
    // machines hold pointers to their own entries of the cache map.
    for (auto& [key, entry] : *suite.kernel_stats) entry = {};
    for (auto& [key, entry] : *suite.envelope_stats) entry = {};
    for (auto& [name, entry] : *suite.cache_stats) entry = {};
    *suite.soundness = {};
    suite.law_margins->clear();
    JobResult result;
    if (job.property != nullptr) {
      result.outcome = properties::RunProperty(*job.property, options);
    } else {
      result.kill = defects::RunKill(*job.defect, options);
      result.outcome = result.kill->outcome;
    }
    result.stats.kernels = *suite.kernel_stats;
    result.stats.envelope = *suite.envelope_stats;
    result.stats.cache = *suite.cache_stats;
    result.stats.soundness = *suite.soundness;
    result.stats.margins = *suite.law_margins;
    return EncodeJobResult(result);
  };
  std::vector<bool> started_jobs(jobs.size(), false);
  callbacks.on_progress = [&](size_t index, const std::string& text) {
    if (!started_jobs[index]) {
      started_jobs[index] = true;
      display.Start(static_cast<int>(index), jobs[index].label, jobs[index].requested_cases,
                    /*failure_expected=*/jobs[index].defect != nullptr);
    }
    properties::DriverProgress progress;
    if (DecodeProgress(text, &progress)) display.Update(static_cast<int>(index), progress);
  };
  callbacks.on_done = [&](size_t index, absl::StatusOr<std::string> bytes) {
    const Job& job = jobs[index];
    absl::StatusOr<JobResult> decoded =
        bytes.ok() ? DecodeJobResult(*bytes) : absl::StatusOr<JobResult>(bytes.status());
    if (!decoded.ok()) {
      // kvcheck's own failure (the code under test runs in per-case children): say so.
      JobResult broken;
      broken.outcome.name = job.property != nullptr ? job.property->name : job.label;
      broken.outcome.message = absl::StrCat("kvcheck could not run it: ", decoded.status().message());
      decoded = std::move(broken);
    }
    Finished& done = finished[index];
    const properties::PropertyOutcome& o = decoded->outcome;
    if (job.property != nullptr) {
      std::string line = absl::StrFormat("%-60s %6d/%d cases, %.1f s%s%s", job.label, o.cases,
                                         job.requested_cases, o.seconds,
                                         o.stopped_at_deadline ? " (time limit)" : "",
                                         o.passed ? "" : "  FAILED");
      display.Finish(static_cast<int>(index), line,
                     /*notable=*/!o.passed || o.stopped_at_deadline);
      if (!o.passed) {
        if (!o.reproduce.empty()) done.failure_file = WriteFailureFile(settings, o, "", display);
        display.Print(absl::StrCat("FAILED ", o.name, "\n", o.message, "\n", o.replay,
                                   done.failure_file.empty()
                                       ? ""
                                       : absl::StrCat("\nfailure file: ", done.failure_file,
                                                      " (kvcheck replay ", done.failure_file, ")")));
      }
    } else {
      if (decoded->kill.has_value() && decoded->kill->killed && defect_run &&
          !o.reproduce.empty()) {
        done.failure_file = WriteFailureFile(settings, o, job.defect->name, display);
      }
      const bool killed = decoded->kill.has_value() && decoded->kill->killed;
      display.Finish(static_cast<int>(index),
                     absl::StrFormat("%-60s %s", job.label, killed ? "killed" : "SURVIVED"),
                     /*notable=*/!killed);
    }
    done.result = *std::move(decoded);
  };
  RunInWorkers(jobs.size(), threads, callbacks);

  // Merge in the jobs' order: the totals do not depend on which worker finished first.
  RecordedStats stats;
  report::RunReport report;
  std::vector<defects::KillResult> kills;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Finished& done = finished[i];
    if (jobs[i].property != nullptr) {
      if (!done.result.has_value()) {
        report::PropertyResult skipped;
        skipped.name = jobs[i].property->name;
        skipped.requested_cases = jobs[i].requested_cases;
        report.properties.push_back(skipped);
        continue;
      }
      stats.MergeFrom(done.result->stats);
      report.properties.push_back(PropertyResultOf(done.result->outcome, jobs[i].requested_cases,
                                                   done.failure_file));
    } else if (done.result.has_value()) {
      defects::KillResult kill;
      if (done.result->kill.has_value()) {
        kill = *done.result->kill;
      } else {
        kill.defect = jobs[i].defect->name;
        kill.message = done.result->outcome.message;
      }
      kills.push_back(kill);
      report.defects.push_back(DefectResultOf(kill, done.failure_file));
    }
  }
  if (settings.verbose && !report.properties.empty()) PrintTables(stats, report.properties);
  std::printf("\n%s", FormatAreaSummary(report.properties, stats, kills).c_str());
  PrintFailures(report);
  if (!kills.empty()) {
    std::printf("\nDefect catalogue (each must be killed):\n%s",
                defects::KillTableHeader().c_str());
    for (const defects::KillResult& kill : kills) {
      std::printf("%s", defects::FormatKillRow(kill).c_str());
    }
  }
  const int failed = report.Failed();
  int not_run = 0;
  for (const report::PropertyResult& p : report.properties) {
    not_run += p.status == report::PropertyStatus::kNotRun;
  }
  std::string verdict;
  if (!report.properties.empty()) {
    verdict = absl::StrCat(static_cast<int>(report.properties.size()) - failed - not_run,
                           " passed, ", failed, " failed",
                           not_run > 0 ? absl::StrCat(", ", not_run, " not run (time limit)") : "");
  }
  if (!kills.empty()) {
    absl::StrAppend(&verdict, verdict.empty() ? "" : "; ", report.DefectsSurvived(),
                    " defects survived");
  }
  std::printf("\n%s\n", verdict.c_str());

  report.started = started;
  report.command_line = settings.command_line;
  report.subject = (*subject)->builtin ? "kvcheck" : (*subject)->name;
  report.seed = settings.seed;
  report.oracle = reference::OracleName(reference::DefaultOracle());
  report.threads = threads;
  report.machine = report::ThisMachine();
  report.kernels = KernelResultsOf(stats.kernels);
  report.envelope = KernelResultsOf(stats.envelope);
  report.strategies = StrategyResultsOf(report.properties, stats.cache);
  report.exit_code = failed > 0 || report.DefectsSurvived() > 0 ? kExitFailed : kExitPassed;
  if (baseline.has_value()) {
    report.baseline = settings.baseline;
    report.regressions = report::CompareWithBaseline(*baseline, report);
    std::printf("\nAgainst the baseline %s: %zu regression%s\n", settings.baseline.c_str(),
                report.regressions.size(), report.regressions.size() == 1 ? "" : "s");
    for (const report::Regression& g : report.regressions) {
      std::printf("  %-8s %-40s %s\n", g.kind.c_str(), g.name.c_str(), g.detail.c_str());
    }
    if (report.exit_code == kExitPassed && !report.regressions.empty()) {
      report.exit_code = kExitRegressed;
    }
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("\nkvcheck: %.1f s\n", report.seconds);
  if (!settings.report_dir.empty()) {
    if (absl::Status written = report::WriteReportFiles(report, settings.report_dir);
        !written.ok()) {
      std::fprintf(stderr, "kvcheck: --report: %s\n", std::string(written.message()).c_str());
      return kExitUsage;
    }
    std::printf("kvcheck: reports in %s (report.json, report.md, report.xml, report.html)\n",
                settings.report_dir.c_str());
  }
  return report.exit_code;
}

}  // namespace kvcheck::cli
