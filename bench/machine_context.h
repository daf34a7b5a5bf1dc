// File: machine_context.h
// The machine a benchmark ran on, in its output's context lines (Google Benchmark prints them
// before the table; --benchmark_format=json keeps them): the CPU model, the SIMD target
// Highway dispatches to, the cores, how far apart the first two are (core_latency.h), and the
// two limits the results are read against, both measured by the same binary: one core's f32
// FMA peak (fma_peak.h) and one thread's streaming-read bandwidth over 1 GiB
// (read_bandwidth.h). docs/performance.md's tables come from
// outputs that carry these lines.
#ifndef KVCHECK_BENCH_MACHINE_CONTEXT_H_
#define KVCHECK_BENCH_MACHINE_CONTEXT_H_

#include <string>
#include <utility>
#include <vector>

namespace kvcheck::bench {

// The lines as (name, value): cpu, simd, cores, cpu_hand_over, fma_peak_1_core and, when asked
// (about a second more), read_bandwidth_1_thread. For benchmarks that print their own output.
std::vector<std::pair<std::string, std::string>> MachineContextLines(bool read_bandwidth);

// Measures (about a second) and adds the context lines. Call before RunSpecifiedBenchmarks.
void AddMachineContext();

// A benchmark program's main: Google Benchmark's flags (an unknown one is an error, exit
// status 1), the context lines, then the registered benchmarks. Returns the exit status.
int RunWithMachineContext(int argc, char** argv);

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_MACHINE_CONTEXT_H_
