// The fiber scheduler behind RunDispatch (simt_executor.h).
#include "src/metal/msl_cpu/simt_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "boost/context/fiber.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define KVCHECK_MSL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVCHECK_MSL_ASAN 1
#endif
#endif
#ifdef KVCHECK_MSL_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace kvcheck::metal {
namespace {

namespace ctx = boost::context;

enum class Wait { kRunnable, kBarrier, kSimd, kExited, kFailed };

// What a lane asks of its simdgroup at a simd function.
enum class SimdOp {
  kSumF, kMaxF, kMinF, kSumI, kSumU, kShuffleXor, kBroadcast, kMatrixMultiply, kBarrier
};

const char* SimdOpName(SimdOp op) {
  switch (op) {
    case SimdOp::kSumF:
    case SimdOp::kSumI:
    case SimdOp::kSumU:
      return "simd_sum";
    case SimdOp::kMaxF:
      return "simd_max";
    case SimdOp::kMinF:
      return "simd_min";
    case SimdOp::kShuffleXor:
      return "simd_shuffle_xor";
    case SimdOp::kBroadcast:
      return "simd_broadcast";
    case SimdOp::kMatrixMultiply:
      return "simdgroup_multiply_accumulate";
    case SimdOp::kBarrier:
      return "simdgroup_barrier";
  }
  return "simd function";
}

constexpr size_t kMaxSimdBytes = 64;

struct Thread {
  ThreadIds ids;
  ctx::fiber fiber;  // the thread, as the scheduler resumes it
  ctx::fiber sink;   // the scheduler, as the thread returns to it
  Wait wait = Wait::kRunnable;
  CallSite site;
  SimdOp op = SimdOp::kBarrier;
  unsigned char in[kMaxSimdBytes];
  unsigned char out[kMaxSimdBytes];
  size_t size = 0;
  uint32_t arg = 0;
  std::string error;
  std::byte* stack = nullptr;
  size_t stack_size = 0;
#ifdef KVCHECK_MSL_ASAN
  void* fake_stack = nullptr;
#endif
};

struct Block {
  std::unique_ptr<std::byte[]> bytes;
  size_t size = 0;
};

// The threadgroup running now on this OS thread.
struct Group {
  const DispatchOptions* options = nullptr;
  std::vector<Thread> threads;
  std::map<const void*, Block> memory;
  int64_t memory_used = 0;
  bool ending = false;  // the dispatch is over: a resumed thread unwinds and its fiber ends
#ifdef KVCHECK_MSL_ASAN
  const void* scheduler_stack = nullptr;
  size_t scheduler_stack_size = 0;
#endif
};

thread_local Group* current_group = nullptr;
thread_local Thread* current_thread = nullptr;

// Thrown at a suspended thread's meeting point when the dispatch ends (normally or at an
// error), so that its stack unwinds and its fiber returns: a fiber that ends tells ASan its
// fake stack may go (a fiber destroyed suspended would leak it: gigabytes over a fuzz corpus
// with detect_stack_use_after_return). Not a std::exception: a kernel error never hides it.
struct DispatchEnd {};

// Stacks carved from buffers the dispatch owns (no allocation per threadgroup).
struct PooledStack {
  std::byte* base;
  size_t size;
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    sc.size = size;
    sc.sp = base + size;
    return sc;
  }
  void deallocate(ctx::stack_context&) noexcept {}
};

std::string Where(const CallSite& at) {
  return absl::StrCat(at.file, ":", at.line);
}

std::string Who(const DispatchOptions& options, const Thread& t) {
  const ThreadIds& i = t.ids;
  return absl::StrCat("kernel '", options.kernel, "', threadgroup (",
                      i.threadgroup_position_in_grid.x, ", ", i.threadgroup_position_in_grid.y,
                      ", ", i.threadgroup_position_in_grid.z, "), thread (",
                      i.thread_position_in_threadgroup.x, ", ", i.thread_position_in_threadgroup.y,
                      ", ", i.thread_position_in_threadgroup.z, ") [index ",
                      i.thread_index_in_threadgroup, ", simdgroup ",
                      i.simdgroup_index_in_threadgroup, " lane ", i.thread_index_in_simdgroup,
                      "]");
}

// The running thread gives control back to the scheduler until its meeting point is met.
void Park() {
  Thread* t = current_thread;
#ifdef KVCHECK_MSL_ASAN
  __sanitizer_start_switch_fiber(&t->fake_stack, current_group->scheduler_stack,
                                 current_group->scheduler_stack_size);
#endif
  t->sink = std::move(t->sink).resume();
#ifdef KVCHECK_MSL_ASAN
  __sanitizer_finish_switch_fiber(t->fake_stack, &current_group->scheduler_stack,
                                  &current_group->scheduler_stack_size);
#endif
  current_thread = t;
  if (current_group->ending) throw DispatchEnd{};
}

void Resume(Thread& t) {
  current_thread = &t;
#ifdef KVCHECK_MSL_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, t.stack, t.stack_size);
#endif
  t.fiber = std::move(t.fiber).resume();
#ifdef KVCHECK_MSL_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  current_thread = nullptr;
}

Thread& Self(const char* what) {
  if (current_thread == nullptr) {
    // A simd function or barrier outside a dispatch is a programming error of the host code.
    std::fprintf(stderr, "kvcheck msl_cpu: %s called outside RunDispatch\n", what);
    std::abort();
  }
  return *current_thread;
}

// `size` bytes in from every lane; `out_size` bytes back (the same unless given).
void SimdCall(SimdOp op, const void* value, void* out, size_t size, uint32_t arg,
              const CallSite& where, size_t out_size = SIZE_MAX) {
  if (out_size == SIZE_MAX) out_size = size;
  if (size > kMaxSimdBytes) {
    throw std::length_error(absl::StrCat(SimdOpName(op), " of more than ", kMaxSimdBytes,
                                         " bytes"));
  }
  Thread& t = Self(SimdOpName(op));
  t.wait = Wait::kSimd;
  t.op = op;
  t.site = where;
  t.size = size;
  t.arg = arg;
  if (size > 0) std::memcpy(t.in, value, size);
  Park();
  if (out_size > 0 && out != nullptr) std::memcpy(out, t.out, out_size);
}

// A reduction of one scalar over the simdgroup.
template <typename T>
T Reduce(SimdOp op, T value, const CallSite& where) {
  T out;
  SimdCall(op, &value, &out, sizeof value, 0, where);
  return out;
}

// The butterfly over 32 lane values of type T; `present[l]` false: the identity.
using LaneThreads = std::array<int, kSimdWidth>;  // thread index of each lane, -1: absent
using LaneFlags = std::array<bool, kSimdWidth>;

template <typename T, typename Combine>
void Butterfly(std::vector<Thread>& threads, const LaneThreads& lanes, const LaneFlags& present,
               T identity, Combine combine) {
  T v[kSimdWidth];
  for (uint32_t l = 0; l < kSimdWidth; ++l) {
    v[l] = identity;
    if (present[l]) std::memcpy(&v[l], threads[lanes[l]].in, sizeof(T));
  }
  for (uint32_t offset = kSimdWidth / 2; offset >= 1; offset /= 2) {
    T next[kSimdWidth];
    for (uint32_t l = 0; l < kSimdWidth; ++l) next[l] = combine(v[l], v[l ^ offset]);
    std::copy(next, next + kSimdWidth, v);
  }
  for (uint32_t l = 0; l < kSimdWidth; ++l) {
    if (present[l]) std::memcpy(threads[lanes[l]].out, &v[l], sizeof(T));
  }
}

// kMatrixMultiply: each lane's `in` holds its elements a0 a1 b0 b1 c0 c1 (floats); `out` gets
// its two of A B + C, formed once for the simdgroup.
void MultiplyAccumulate(std::vector<Thread>& threads, const LaneThreads& lanes,
                        const LaneFlags& present) {
  float a[8][8], b[8][8], c[8][8];
  for (uint32_t l = 0; l < kSimdWidth; ++l) {
    float e[6];
    if (present[l]) {
      std::memcpy(e, threads[lanes[l]].in, sizeof e);
    } else {
      std::fill(e, e + 6, std::numeric_limits<float>::quiet_NaN());
    }
    const int r = SimdMatrixRow(l), col = SimdMatrixCol(l);
    for (int t = 0; t < 2; ++t) {
      a[r][col + t] = e[t];
      b[r][col + t] = e[2 + t];
      c[r][col + t] = e[4 + t];
    }
  }
  for (uint32_t l = 0; l < kSimdWidth; ++l) {
    if (!present[l]) continue;
    const int r = SimdMatrixRow(l), col = SimdMatrixCol(l);
    float d[2];
    for (int t = 0; t < 2; ++t) {
      float sum = c[r][col + t];
      for (int k = 0; k < 8; ++k) sum += a[r][k] * b[k][col + t];
      d[t] = sum;
    }
    std::memcpy(threads[lanes[l]].out, d, sizeof d);
  }
}

// Completes the simd function every waiting lane of a simdgroup reached. `lanes[l]` is the
// thread index of lane l (-1: absent).
void CompleteSimd(std::vector<Thread>& threads, const LaneThreads& lanes) {
  LaneFlags present;
  present.fill(false);
  SimdOp op = SimdOp::kBarrier;
  for (uint32_t l = 0; l < kSimdWidth; ++l) {
    if (lanes[l] >= 0 && threads[lanes[l]].wait == Wait::kSimd) {
      present[l] = true;
      op = threads[lanes[l]].op;
    }
  }
  switch (op) {
    case SimdOp::kSumF:
      Butterfly<float>(threads, lanes, present, 0.0f, [](float a, float b) { return a + b; });
      break;
    case SimdOp::kMaxF:
      Butterfly<float>(threads, lanes, present, -INFINITY,
                       [](float a, float b) { return std::isnan(a) || a > b ? a : b; });
      break;
    case SimdOp::kMinF:
      Butterfly<float>(threads, lanes, present, INFINITY,
                       [](float a, float b) { return std::isnan(a) || a < b ? a : b; });
      break;
    case SimdOp::kSumI:
      // Two's-complement wrap, as the GPU's integer adders.
      Butterfly<int32_t>(threads, lanes, present, 0, [](int32_t a, int32_t b) {
        return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
      });
      break;
    case SimdOp::kSumU:
      Butterfly<uint32_t>(threads, lanes, present, 0u,
                          [](uint32_t a, uint32_t b) { return a + b; });
      break;
    case SimdOp::kShuffleXor:
    case SimdOp::kBroadcast:
      for (uint32_t l = 0; l < kSimdWidth; ++l) {
        if (!present[l]) continue;
        Thread& t = threads[lanes[l]];
        const uint32_t from = op == SimdOp::kShuffleXor ? (l ^ t.arg) % kSimdWidth
                                                        : t.arg % kSimdWidth;
        if (present[from]) {
          std::memcpy(t.out, threads[lanes[from]].in, t.size);
        } else {
          std::memset(t.out, 0xFF, t.size);  // an inactive lane's value: poison
        }
      }
      break;
    case SimdOp::kMatrixMultiply:
      MultiplyAccumulate(threads, lanes, present);
      break;
    case SimdOp::kBarrier:
      break;
  }
  for (uint32_t l = 0; l < kSimdWidth; ++l) {
    if (present[l]) threads[lanes[l]].wait = Wait::kRunnable;
  }
}

absl::Status Divergence(const DispatchOptions& options, const Thread& a, const std::string& what_a,
                        const Thread& b, const std::string& what_b) {
  return absl::FailedPreconditionError(absl::StrCat(Who(options, a), " ", what_a, ", but ",
                                                    Who(options, b), " ", what_b));
}

std::string Waiting(const Thread& t) {
  switch (t.wait) {
    case Wait::kBarrier:
      return absl::StrCat("waits at threadgroup_barrier at ", Where(t.site));
    case Wait::kSimd:
      return absl::StrCat("waits at ", SimdOpName(t.op), " at ", Where(t.site));
    case Wait::kExited:
      return "returned";
    default:
      return "runs";
  }
}

// Completes the simd function that the lanes of simdgroup `s` wait at, when every lane that
// must take part reached it (`*released` true), or says nothing is pending (false). An error
// when the lanes diverged: different simd functions or call sites, a lane at a threadgroup
// barrier, or (uniform control flow) a lane that returned.
absl::Status ReleaseSimd(Group& g, uint32_t s, bool* released) {
  const DispatchOptions& options = *g.options;
  std::vector<Thread>& threads = g.threads;
  *released = false;
  LaneThreads lanes;
  lanes.fill(-1);
  const Thread* first = nullptr;
  for (uint32_t l = 0; l < kSimdWidth; ++l) {
    const size_t index = size_t{s} * kSimdWidth + l;
    if (index >= threads.size()) break;
    lanes[l] = static_cast<int>(index);
    const Thread& t = threads[index];
    if (t.wait == Wait::kSimd && first == nullptr) first = &t;
  }
  if (first == nullptr) return absl::OkStatus();
  for (int index : lanes) {
    if (index < 0) continue;
    const Thread& t = threads[index];
    if (t.wait == Wait::kSimd &&
        (t.op != first->op || t.site.line != first->site.line ||
         std::strcmp(t.site.file, first->site.file) != 0)) {
      return Divergence(options, *first, Waiting(*first), t, Waiting(t));
    }
    if (t.wait == Wait::kBarrier) return Divergence(options, *first, Waiting(*first), t, Waiting(t));
    if (t.wait == Wait::kExited && options.uniform_simd) {
      return Divergence(options, *first,
                        absl::StrCat(Waiting(*first),
                                     " (the dispatch declares uniform control flow)"),
                        t, "returned before reaching it");
    }
  }
  CompleteSimd(threads, lanes);
  *released = true;
  return absl::OkStatus();
}

// When no simd function is pending anywhere: releases the threadgroup barrier that every
// thread left waits at (`*released` true), or says every thread returned (false). An error
// when some threads returned while others wait, or the waiting ones are at different barriers.
absl::Status ReleaseBarrier(Group& g, bool* released) {
  const DispatchOptions& options = *g.options;
  std::vector<Thread>& threads = g.threads;
  *released = false;
  const Thread* first = nullptr;
  for (const Thread& t : threads) {
    if (t.wait == Wait::kBarrier) {
      first = &t;
      break;
    }
  }
  if (first == nullptr) return absl::OkStatus();  // everyone returned
  for (const Thread& t : threads) {
    if (t.wait == Wait::kExited) {
      return Divergence(options, *first, Waiting(*first), t,
                        "returned without reaching it (a barrier must be reached by every "
                        "thread of the threadgroup)");
    }
    if (t.site.line != first->site.line ||
        std::strcmp(t.site.file, first->site.file) != 0) {
      return Divergence(options, *first, Waiting(*first), t, Waiting(t));
    }
  }
  for (Thread& t : threads) t.wait = Wait::kRunnable;
  *released = true;
  return absl::OkStatus();
}

// Runs the lanes of simdgroup `s`, completing each simd function they meet at, until every
// lane waits at a threadgroup barrier or returned. One simdgroup at a time keeps 32 fiber
// stacks hot in the cache instead of the threadgroup's 1,024 (what made the emulator slow).
absl::Status RunSimdgroup(Group& g, uint32_t s) {
  const size_t begin = size_t{s} * kSimdWidth;
  const size_t end = std::min(begin + kSimdWidth, g.threads.size());
  for (;;) {
    for (size_t i = begin; i < end; ++i) {
      Thread& t = g.threads[i];
      if (t.wait != Wait::kRunnable) continue;
      Resume(t);
      if (t.wait == Wait::kFailed) {
        return absl::FailedPreconditionError(absl::StrCat(Who(*g.options, t), ": ", t.error));
      }
    }
    bool released = false;
    if (absl::Status status = ReleaseSimd(g, s, &released); !status.ok()) return status;
    if (!released) return absl::OkStatus();
  }
}

absl::Status RunThreadgroup(Group& g, const Dim3& position, const std::function<void()>& body,
                            std::vector<std::unique_ptr<std::byte[]>>& stacks) {
  const DispatchOptions& options = *g.options;
  const Dim3 size = options.threads_per_threadgroup;
  const uint32_t count = static_cast<uint32_t>(size.count());
  // The fibers are made for the first threadgroup and reused by the next ones: a thread that
  // returned waits (parked) for the scheduler to start it on the next group.
  const bool first_group = g.threads.empty();
  if (first_group) g.threads.resize(count);
  g.memory.clear();
  g.memory_used = 0;
  for (uint32_t i = 0; i < count; ++i) {
    Thread& t = g.threads[i];
    ThreadIds& ids = t.ids;
    ids.threadgroup_position_in_grid = position;
    ids.threadgroups_per_grid = options.threadgroups;
    ids.threads_per_threadgroup = size;
    ids.thread_position_in_threadgroup = {i % size.x, (i / size.x) % size.y, i / (size.x * size.y)};
    ids.thread_position_in_grid = {position.x * size.x + ids.thread_position_in_threadgroup.x,
                                   position.y * size.y + ids.thread_position_in_threadgroup.y,
                                   position.z * size.z + ids.thread_position_in_threadgroup.z};
    ids.thread_index_in_threadgroup = i;
    ids.simdgroup_index_in_threadgroup = i / kSimdWidth;
    ids.thread_index_in_simdgroup = i % kSimdWidth;
    ids.simdgroups_per_threadgroup = (count + kSimdWidth - 1) / kSimdWidth;
    t.wait = Wait::kRunnable;
    if (!first_group) continue;
    t.stack = stacks[i].get();
    t.stack_size = options.stack_bytes;
    Thread* self = &t;
    t.fiber = ctx::fiber(std::allocator_arg, PooledStack{t.stack, t.stack_size},
                         [self, &body](ctx::fiber&& sink) {
                           self->sink = std::move(sink);
#ifdef KVCHECK_MSL_ASAN
                           __sanitizer_finish_switch_fiber(nullptr,
                                                           &current_group->scheduler_stack,
                                                           &current_group->scheduler_stack_size);
#endif
                           try {
                             while (!current_group->ending) {
                               try {
                                 body();
                                 self->wait = Wait::kExited;
                               } catch (const DispatchEnd&) {
                                 throw;
                               } catch (const ctx::detail::forced_unwind&) {
                                 throw;
                               } catch (const std::exception& e) {
                                 self->wait = Wait::kFailed;
                                 self->error = e.what();
                               } catch (...) {
                                 self->wait = Wait::kFailed;
                                 self->error = "an exception that is not a std::exception";
                               }
                               Park();  // until the next threadgroup, or the dispatch's end
                             }
                           } catch (const DispatchEnd&) {
                           }
#ifdef KVCHECK_MSL_ASAN
                           // This fiber ends: no fake stack to keep (nullptr).
                           __sanitizer_start_switch_fiber(nullptr,
                                                          current_group->scheduler_stack,
                                                          current_group->scheduler_stack_size);
#endif
                           return std::move(self->sink);
                         });
  }
  const uint32_t simdgroups = (count + kSimdWidth - 1) / kSimdWidth;
  for (;;) {
    for (uint32_t s = 0; s < simdgroups; ++s) {
      if (absl::Status status = RunSimdgroup(g, s); !status.ok()) return status;
    }
    bool released = false;
    if (absl::Status status = ReleaseBarrier(g, &released); !status.ok()) return status;
    if (!released) return absl::OkStatus();  // every thread returned
  }
}

}  // namespace

absl::Status RunDispatch(const DispatchOptions& options, const std::function<void()>& body) {
  const uint64_t count = options.threads_per_threadgroup.count();
  if (count == 0 || count > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", options.kernel, "': ", count,
                                                   " threads per threadgroup (1..1024)"));
  }
  if (current_group != nullptr) {
    return absl::FailedPreconditionError("RunDispatch inside a dispatch");
  }
  std::vector<std::unique_ptr<std::byte[]>> stacks(count);
  for (auto& stack : stacks) stack.reset(new std::byte[options.stack_bytes]);
  Group group;
  group.options = &options;
  current_group = &group;
  absl::Status status;
  const Dim3& grid = options.threadgroups;
  for (uint32_t z = 0; z < grid.z && status.ok(); ++z) {
    for (uint32_t y = 0; y < grid.y && status.ok(); ++y) {
      for (uint32_t x = 0; x < grid.x && status.ok(); ++x) {
        status = RunThreadgroup(group, {x, y, z}, body, stacks);
      }
    }
  }
  // Every fiber ends before its stack goes away: threads parked between threadgroups, or
  // suspended where the dispatch stopped at an error, unwind from their meeting point.
  group.ending = true;
  for (Thread& t : group.threads) {
    if (t.fiber) Resume(t);
  }
  group.threads.clear();
  current_group = nullptr;
  return status;
}

const ThreadIds& CurrentThread() { return Self("a thread attribute").ids; }

void ThreadgroupBarrier(CallSite where) {
  Thread& t = Self("threadgroup_barrier");
  t.wait = Wait::kBarrier;
  t.site = where;
  Park();
}

void SimdgroupBarrier(CallSite where) {
  SimdCall(SimdOp::kBarrier, nullptr, nullptr, 0, 0, where);
}

float SimdSum(float value, CallSite where) { return Reduce(SimdOp::kSumF, value, where); }
float SimdMax(float value, CallSite where) { return Reduce(SimdOp::kMaxF, value, where); }
float SimdMin(float value, CallSite where) { return Reduce(SimdOp::kMinF, value, where); }
int32_t SimdSum(int32_t value, CallSite where) { return Reduce(SimdOp::kSumI, value, where); }
uint32_t SimdSum(uint32_t value, CallSite where) { return Reduce(SimdOp::kSumU, value, where); }

void SimdShuffleXorBytes(const void* value, void* out, size_t size, uint32_t mask,
                         CallSite where) {
  SimdCall(SimdOp::kShuffleXor, value, out, size, mask, where);
}

void SimdMatrixMultiplyAccumulate(const float a[2], const float b[2], const float c[2],
                                  float d[2], CallSite where) {
  const float in[6] = {a[0], a[1], b[0], b[1], c[0], c[1]};
  SimdCall(SimdOp::kMatrixMultiply, in, d, sizeof in, 0, where, 2 * sizeof(float));
}

void SimdBroadcastBytes(const void* value, void* out, size_t size, uint32_t lane,
                        CallSite where) {
  SimdCall(SimdOp::kBroadcast, value, out, size, lane, where);
}

void* ThreadgroupMemory(const void* site, size_t bytes, size_t alignment,
                        CallSite where) {
  Self("threadgroup memory");
  Group& g = *current_group;
  auto it = g.memory.find(site);
  if (it != g.memory.end()) return it->second.bytes.get();
  const size_t rounded = (bytes + alignment - 1) / std::max<size_t>(alignment, 1) *
                         std::max<size_t>(alignment, 1);
  if (g.memory_used + static_cast<int64_t>(rounded) > g.options->threadgroup_memory_limit) {
    throw std::length_error(absl::StrCat(
        "threadgroup memory declared at ", Where(where), " (", bytes, " bytes) brings the ",
        "threadgroup to ", g.memory_used + static_cast<int64_t>(rounded), " bytes, over the ",
        g.options->threadgroup_memory_limit, "-byte budget"));
  }
  Block block;
  block.size = std::max<size_t>(rounded, 1);
  // operator new[] aligns to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (16), enough for float4.
  block.bytes.reset(new std::byte[block.size]);
  std::memset(block.bytes.get(), 0xFF, block.size);
  g.memory_used += static_cast<int64_t>(rounded);
  void* memory = block.bytes.get();
  g.memory.emplace(site, std::move(block));
  return memory;
}

}  // namespace kvcheck::metal
