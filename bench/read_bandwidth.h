// File: read_bandwidth.h
// The machine's read bandwidth, for the memory-bandwidth limit of the generation benchmark:
// `threads` threads sum a 1 GiB buffer with the widest vectors this CPU has (Highway dynamic
// dispatch; the buffer on transparent huge pages where Linux grants them, like the decoder's
// weights), each thread reading its share either as 8 segments side by side (skewed off
// power-of-two spacing, which halved the figure by DRAM bank conflicts) or front to back.
// The best of 3 passes of each, in bytes per second: a limit must be the fastest read the
// machine allows, or a kernel "beats" it.
#ifndef KVCHECK_BENCH_READ_BANDWIDTH_H_
#define KVCHECK_BENCH_READ_BANDWIDTH_H_

namespace kvcheck::bench {

double ReadBandwidth(int threads);

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_READ_BANDWIDTH_H_
