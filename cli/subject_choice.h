// File: subject_choice.h
// The subject of a kvcheck command: kvcheck's own engine or the external one --engine names
// (opened here), narrowed to the strategies, kernels and dtypes the run selects.
#ifndef KVCHECK_CLI_SUBJECT_CHOICE_H_
#define KVCHECK_CLI_SUBJECT_CHOICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/selection.h"
#include "cli/settings.h"
#include "properties/property_runner.h"
#include "properties/subject.h"
#include "src/engine/process_engine.h"

namespace kvcheck::cli {

struct ChosenSubject {
  std::shared_ptr<const properties::Subject> subject;
  std::shared_ptr<engine::ProcessEngine> process;  // set for a process engine
  std::string description;  // what was opened: strategies, kernels, steppers, models
};

// Opens the engine of `settings` (errors say why it could not be loaded or started).
absl::StatusOr<ChosenSubject> OpenSubject(const EngineSettings& settings);

// `subject` with only the selected strategies and kernels, each taking only the selected
// dtypes; a pattern that matches none is an error with the nearest names.
absl::StatusOr<std::shared_ptr<const properties::Subject>> NarrowSubject(
    std::shared_ptr<const properties::Subject> subject, const NameSelection& strategies,
    const NameSelection& kernels, const NameSelection& dtypes);

// Whether the run's selection keeps `spec` (PropertySpec's scope fields): its name matches
// --property, and it exercises a selected strategy, kernel and dtype where those are given.
bool Selected(const properties::PropertySpec& spec, const Settings& settings);

// The replay flags of a failure found against this engine ("--engine='...' --isolate").
std::string EngineFlags(const EngineSettings& settings);

}  // namespace kvcheck::cli

#endif  // KVCHECK_CLI_SUBJECT_CHOICE_H_
