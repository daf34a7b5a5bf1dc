// File: fma_peak.h
// The f32 fused multiply-add peak of one core, measured: the widest vectors Highway
// dispatches to on this CPU, 12 independent accumulators (enough to cover the FMA latency
// times the FMA ports of current x86 and Arm cores), no memory traffic. Best of 3 runs of about
// 0.1 s, in FLOP/s (2 per multiply-add per lane). The prefill benchmarks state their GFLOP/s
// as a fraction of it.
#ifndef KVCHECK_BENCH_FMA_PEAK_H_
#define KVCHECK_BENCH_FMA_PEAK_H_

namespace kvcheck::bench {

double FmaPeakFlops();

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_FMA_PEAK_H_
