// File: cpu_model.h
// The CPU a benchmark ran on, for its output's context lines (docs/performance.md's tables name the
// machine each comes from).
#ifndef KVCHECK_BENCH_CPU_MODEL_H_
#define KVCHECK_BENCH_CPU_MODEL_H_

#include <string>

namespace kvcheck::bench {

// /proc/cpuinfo's first "model name", or "unknown".
std::string CpuModel();

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_CPU_MODEL_H_
