#include "bench/machine_context.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_format.h"
#include "bench/cpu_model.h"
#include "bench/fma_peak.h"
#include "bench/read_bandwidth.h"
#include "benchmark/benchmark.h"
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace kvcheck::bench {

void AddMachineContext() {
  benchmark::AddCustomContext("cpu", CpuModel());
  // Highway dispatches to the best target compiled in and supported here: the lowest set bit
  // (targets are ordered best first).
  const int64_t targets = hwy::SupportedTargets() & HWY_TARGETS;
  benchmark::AddCustomContext("simd", hwy::TargetName(targets & -targets));
  benchmark::AddCustomContext("cores", std::to_string(sysconf(_SC_NPROCESSORS_ONLN)));
  benchmark::AddCustomContext("fma_peak_1_core",
                              absl::StrFormat("%.1f GFLOP/s (f32)", FmaPeakFlops() / 1e9));
  benchmark::AddCustomContext("read_bandwidth_1_thread",
                              absl::StrFormat("%.1f GB/s (1 GiB, streaming)", ReadBandwidth(1) / 1e9));
}

}  // namespace kvcheck::bench
