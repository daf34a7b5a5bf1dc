// Kernels for msl_cpu's own tests: written as for Apple's compiler.
#include <metal_stdlib>
using namespace metal;

constant bool scale_output [[function_constant(0)]];

// out[group] = sum of in over the group's threads (simd_sum, then one partial per simdgroup
// merged through threadgroup memory).
template <typename T>
[[kernel]] void group_sum(
    const device T* in [[buffer(0)]],
    device float* out [[buffer(1)]],
    constant float& factor [[buffer(2)]],
    uint gid [[thread_position_in_grid]],
    uint group [[threadgroup_position_in_grid]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint simd_groups [[simdgroups_per_threadgroup]]) {
  threadgroup float partials[32];
  const float total = simd_sum(float(in[gid]));
  if (lane == 0) {
    partials[simd_group] = total;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_group == 0) {
    float merged = lane < simd_groups ? partials[lane] : 0.0f;
    merged = simd_sum(merged);
    if (lane == 0) {
      out[group] = scale_output ? merged * factor : merged;
    }
  }
}

template [[host_name("group_sum_float")]] [[kernel]] decltype(group_sum<float>) group_sum<float>;
template [[host_name("group_sum_half")]] [[kernel]] decltype(group_sum<half>) group_sum<half>;

// A bug a GPU hides: the barrier is inside a branch only some threads take.
[[kernel]] void divergent_barrier(device float* out [[buffer(0)]],
                                  uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[tid] = 1.0f;
}

// Reads threadgroup memory no thread wrote: the emulator's poison shows.
kernel void unwritten_read(device float* out [[buffer(0)]],
                           uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float scratch[64];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = scratch[tid];
}
