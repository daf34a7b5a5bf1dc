#include "src/engine/open_engine.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "src/engine/plugin_engine.h"
#include "src/engine/process_engine.h"

namespace kvcheck::engine {

bool IsPluginPath(const std::string& spec) {
  const std::string base = spec.substr(spec.rfind('/') + 1);
  return spec.find(' ') == std::string::npos &&
         (absl::EndsWith(base, ".so") || base.find(".so.") != std::string::npos);
}

absl::StatusOr<std::shared_ptr<Engine>> OpenEngine(const std::string& spec,
                                                   const OpenOptions& options) {
  if (IsPluginPath(spec) && !options.isolate) {
    absl::StatusOr<std::unique_ptr<PluginEngine>> plugin = PluginEngine::Load(spec);
    if (!plugin.ok()) return plugin.status();
    return std::shared_ptr<Engine>(*std::move(plugin));
  }
  const std::string command = IsPluginPath(spec) ? absl::StrCat(options.host, " ", spec) : spec;
  absl::StatusOr<std::unique_ptr<ProcessEngine>> process =
      ProcessEngine::Start(command, {options.timeout_seconds});
  if (!process.ok()) {
    return absl::Status(process.status().code(),
                        absl::StrCat("cannot start engine '", command, "': ",
                                     process.status().message()));
  }
  return std::shared_ptr<Engine>(*std::move(process));
}

}  // namespace kvcheck::engine
