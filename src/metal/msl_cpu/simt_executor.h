// File: simt_executor.h
// The execution model of a Metal compute dispatch, on a CPU: every GPU thread is a fiber
// (Boost.Context fcontext, not OS threads and not ucontext's syscalls), the threads of a
// simdgroup (32 lanes) meet at every simd function, the threads of a threadgroup meet at
// every barrier. Threadgroups run one after another; inside one, simdgroups run one after
// another up to the next threadgroup barrier, their lanes in lane order up to each simd
// function, so a dispatch is deterministic.
//
// Reductions use a documented butterfly order, so results are bitwise reproducible:
//   simd_sum / simd_max / simd_min: for offset = 16, 8, 4, 2, 1 every lane combines its
//   value with lane (lane ^ offset)'s (both from before that round): v = v + v[lane ^ offset]
//   (max, min). Every lane ends with the same value. A lane that is absent (past the
//   threadgroup's size) or inactive (returned early, allowed only with uniform_simd off)
//   contributes the identity (0, -inf, +inf).
//
// What a real GPU would hide or turn into garbage is an error of the dispatch, naming the
// kernel, the threadgroup, the thread and the call site:
//   - a threadgroup barrier reached by some threads while others returned, or while others
//     wait at another barrier or at a simd function;
//   - a simd function or simdgroup barrier reached by only part of a simdgroup when the
//     dispatch declares uniform control flow (uniform_simd, the default), or by lanes at
//     different call sites;
//   - threadgroup memory over the budget (32 KiB, Apple GPUs' limit);
//   - an exception escaping a thread (a bounds check of a buffer wrapper, say).
// Threadgroup memory is poisoned (every byte 0xFF: a NaN in every float type, -1 in every
// integer) when a threadgroup starts, so a read of an element no thread wrote shows.
#ifndef KVCHECK_SRC_METAL_MSL_CPU_SIMT_EXECUTOR_H_
#define KVCHECK_SRC_METAL_MSL_CPU_SIMT_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace kvcheck::metal {

inline constexpr uint32_t kSimdWidth = 32;
inline constexpr int64_t kThreadgroupMemoryLimit = 32 * 1024;

// Where a kernel called a simd function or barrier (std::source_location is not in clang 14's
// reach with this libstdc++; the builtins are in both compilers).
// `CallSite where = {}` as a default argument records the caller's file and line (in GCC and
// clang alike; an aggregate initialised with the builtins would record the declaration's).
struct CallSite {
  constexpr CallSite(const char* f = __builtin_FILE(), unsigned l = __builtin_LINE())
      : file(f), line(l) {}
  const char* file;
  unsigned line;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
};

// What MSL's thread attributes say about the current thread.
struct ThreadIds {
  Dim3 threadgroup_position_in_grid;
  Dim3 threadgroups_per_grid;
  Dim3 thread_position_in_threadgroup;
  Dim3 threads_per_threadgroup;
  Dim3 thread_position_in_grid;
  uint32_t thread_index_in_threadgroup = 0;
  uint32_t simdgroup_index_in_threadgroup = 0;
  uint32_t thread_index_in_simdgroup = 0;
  uint32_t simdgroups_per_threadgroup = 1;
  uint32_t threads_per_simdgroup = kSimdWidth;
};

struct DispatchOptions {
  std::string kernel = "kernel";  // for errors
  Dim3 threadgroups;
  Dim3 threads_per_threadgroup;
  // Simd functions must be reached by every lane of the simdgroup (Metal's requirement for
  // the results to be defined when lanes may have exited: kernels of this project declare it).
  bool uniform_simd = true;
  int64_t threadgroup_memory_limit = kThreadgroupMemoryLimit;
  size_t stack_bytes = 64 * 1024;  // per thread
};

// Runs `body` once on every thread of the grid. Errors: kInvalidArgument for a threadgroup
// of 0 or more than 1024 threads; kFailedPrecondition for the GPU bugs listed above (the first
// one found; the dispatch stops there), kInternal for an exception escaping `body`.
absl::Status RunDispatch(const DispatchOptions& options, const std::function<void()>& body);

// ---- Inside a dispatch (REQUIRES: called from `body`) -------------------------------------

const ThreadIds& CurrentThread();

void ThreadgroupBarrier(CallSite where = {});
void SimdgroupBarrier(CallSite where = {});

// The simd functions, over the simdgroup's lanes in the butterfly order above.
float SimdSum(float value, CallSite where = {});
float SimdMax(float value, CallSite where = {});
float SimdMin(float value, CallSite where = {});
int32_t SimdSum(int32_t value, CallSite where = {});
uint32_t SimdSum(uint32_t value, CallSite where = {});
// The value of lane (lane ^ mask), and of lane `lane`; any trivially copyable type up to
// 64 bytes.
void SimdShuffleXorBytes(const void* value, void* out, size_t size, uint32_t mask,
                         CallSite where);
void SimdBroadcastBytes(const void* value, void* out, size_t size, uint32_t lane,
                        CallSite where);
// simdgroup_matrix<T, 8, 8>'s lane layout (Apple's, as MLX's steel kernels assume it): lane l
// holds row SimdMatrixRow(l), columns SimdMatrixCol(l) and SimdMatrixCol(l) + 1.
inline int SimdMatrixRow(uint32_t lane) { return int((lane / 4) & 4) + int((lane / 2) % 4); }
inline int SimdMatrixCol(uint32_t lane) { return int((lane / 4) & 2) * 2 + int(lane % 2) * 2; }
// D = A B + C for 8 x 8 matrices spread over the simdgroup in that layout: every lane gives its
// two elements of A, B and C (widened to f32) and gets its two of D, each computed in f32 as
// C(r, c) + A(r, 0) B(0, c) + ... + A(r, 7) B(7, c), in that order, one rounding per step (Apple
// does not document its order: this is the emulator's). The product is formed once per
// simdgroup. An absent lane's elements are NaN.
void SimdMatrixMultiplyAccumulate(const float a[2], const float b[2], const float c[2],
                                  float d[2], CallSite where);
template <typename T>
T SimdShuffleXor(T value, uint32_t mask,
                 CallSite where = {}) {
  T out;
  SimdShuffleXorBytes(&value, &out, sizeof(T), mask, where);
  return out;
}
template <typename T>
T SimdBroadcast(T value, uint32_t lane,
                CallSite where = {}) {
  T out;
  SimdBroadcastBytes(&value, &out, sizeof(T), lane, where);
  return out;
}

// The threadgroup's block for the declaration `site` (one per `threadgroup` variable: every
// thread of the group that asks with the same site gets the same memory), `bytes` long,
// poisoned until written, counted against the budget.
void* ThreadgroupMemory(const void* site, size_t bytes, size_t alignment,
                        CallSite where = {});

}  // namespace kvcheck::metal

#endif  // KVCHECK_SRC_METAL_MSL_CPU_SIMT_EXECUTOR_H_
