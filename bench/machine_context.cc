#include "bench/machine_context.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_format.h"
#include "bench/core_latency.h"
#include "bench/cpu_model.h"
#include "bench/fma_peak.h"
#include "bench/read_bandwidth.h"
#include "benchmark/benchmark.h"
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace kvcheck::bench {

std::vector<std::pair<std::string, std::string>> MachineContextLines(bool read_bandwidth) {
  std::vector<std::pair<std::string, std::string>> lines;
  lines.emplace_back("cpu", CpuModel());
  // Highway dispatches to the best target compiled in and supported here: the lowest set bit
  // (targets are ordered best first).
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  lines.emplace_back("simd", hwy::TargetName(targets & -targets));
  lines.emplace_back("cores", std::to_string(sysconf(_SC_NPROCESSORS_ONLN)));
  lines.emplace_back("cpu_hand_over", FirstTwoCpusHandOver());
  lines.emplace_back("fma_peak_1_core", absl::StrFormat("%.1f GFLOP/s (f32)", FmaPeakFlops() / 1e9));
  if (read_bandwidth) {
    lines.emplace_back("read_bandwidth_1_thread",
                       absl::StrFormat("%.1f GB/s (1 GiB, streaming)", ReadBandwidth(1) / 1e9));
  }
  return lines;
}

void AddMachineContext() {
  for (const auto& [name, value] : MachineContextLines(/*read_bandwidth=*/true)) {
    benchmark::AddCustomContext(name, value);
  }
}

int RunWithMachineContext(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  AddMachineContext();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace kvcheck::bench
