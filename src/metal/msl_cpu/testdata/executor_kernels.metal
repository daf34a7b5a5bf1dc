// Kernels for msl_cpu's own tests: written as for Apple's compiler.
#include <metal_stdlib>
using namespace metal;
#include "executor_helpers.h"
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

// C = A x B + I for 8 x 8 matrices through simdgroup_matrix (one simdgroup); B is read
// transposed from its buffer.
kernel void matrix_product(const device float* a [[buffer(0)]],
                           const device float* b_transposed [[buffer(1)]],
                           device float* c [[buffer(2)]]) {
  simdgroup_float8x8 ma, mb;
  simdgroup_load(ma, a);
  simdgroup_load(mb, b_transposed, 8, ulong2(0, 0), true);
  simdgroup_float8x8 identity = simdgroup_float8x8(1.0f);
  simdgroup_float8x8 mc;
  simdgroup_multiply_accumulate(mc, ma, mb, identity);
  simdgroup_store(mc, c);
}

// Reads one element past the end of its input (the last thread's in[tid + 1]).
kernel void off_by_one_read(const device float* in [[buffer(0)]],
                            device float* out [[buffer(1)]],
                            constant uint& n [[buffer(2)]],
                            uint tid [[thread_index_in_threadgroup]]) {
  const device float* shifted = in + 1;
  out[tid] = tid + 1 < n ? shifted[tid] : shifted[tid] + in[0];
}

// Reads the element before its binding's start: inside the allocation when the binding starts
// at a byte offset (allowed, as on a GPU), before the allocation otherwise.
kernel void read_before_binding(const device float* in [[buffer(0)]],
                                device float* out [[buffer(1)]]) {
  out[0] = in[-1];
}

// The barrier in the included helper, taken by some threads only.
kernel void divergent_barrier_in_header(device float* out [[buffer(0)]],
                                        uint tid [[thread_index_in_threadgroup]]) {
  barrier_if(tid < 8);
  out[tid] = 2.0f;
}

// Stages its input in threadgroup memory of the length the host sets ([[threadgroup(0)]]) and
// writes it out reversed: with room for fewer floats than threads, the last thread's store is
// past the stage.
kernel void staged_reverse(const device float* in [[buffer(0)]],
                           device float* out [[buffer(1)]],
                           threadgroup float* stage [[threadgroup(0)]],
                           uint tid [[thread_index_in_threadgroup]]) {
  stage[tid] = in[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = stage[63 - tid];
}
