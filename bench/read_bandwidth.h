// File: read_bandwidth.h
// The machine's read bandwidth, for the memory-bandwidth limit of the generation benchmark:
// `threads` threads sum a 1 GiB buffer with the widest vectors this CPU has (Highway dynamic
// dispatch), each thread reading 8 segments of its share side by side (one sequential stream
// per core leaves bandwidth unused). Best of 3 passes, in bytes per second.
#ifndef KVCHECK_BENCH_READ_BANDWIDTH_H_
#define KVCHECK_BENCH_READ_BANDWIDTH_H_

namespace kvcheck::bench {

double ReadBandwidth(int threads);

}  // namespace kvcheck::bench

#endif  // KVCHECK_BENCH_READ_BANDWIDTH_H_
