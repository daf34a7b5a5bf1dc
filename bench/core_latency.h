// File: core_latency.h
// How far apart two CPUs are, for the benchmarks' context lines: the one-way time of handing
// a cache line from one to the other, measured by two threads pinned to them that take turns
// writing one atomic (a ping-pong).
//
// Why the benchmarks print it: on the 2-core Zen 4 VMs kvcheck is measured on, the two vCPUs
// sometimes share a last-level cache (a hand-over of 25-45 ns) and sometimes do not (160-180
// ns), and the placement changes under a running program. It decides how much two threads
// read together and what every hand-over between them costs (docs/performance.md), so a
// two-thread result without it cannot be compared with another.
#ifndef KVCHECK_BENCH_CORE_LATENCY_H_
#define KVCHECK_BENCH_CORE_LATENCY_H_

#include <optional>
#include <string>
#include <vector>

namespace kvcheck::bench {

// The median over 5 rounds of the one-way hand-over time between CPUs cpu_a and cpu_b, in
// nanoseconds (each round: 20000 round trips, about 1-8 ms). nullopt where it cannot be
// measured: cpu_a == cpu_b (a spinning ping-pong on one CPU would wait for the scheduler),
// either CPU outside [0, CPU_SETSIZE) or not allowed to this process, or a round that took
// more than a second (the other thread was not running).
std::optional<double> CoreToCoreNanoseconds(int cpu_a, int cpu_b);

// The CPUs this process may run on, ascending (empty if the set cannot be read).
std::vector<int> AllowedCpus();

// For output: "CPUs 0 and 1: 33 ns one way" for the first two CPUs this process may use, or
// "not measured (...)" with the reason.
std::string FirstTwoCpusHandOver();

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_CORE_LATENCY_H_
