// File: sdpa_common.h
// The attention of one query row over a range of keys by one threadgroup of simdgroups,
// shared by sdpa_vector (the whole key range) and sdpa_2pass (one block of keys per
// threadgroup). MSL, included after <metal_stdlib>:
//   - simdgroup s takes keys begin + s, begin + s + S, ...; lane l holds the head-dim
//     elements d = l, l + 32, ... (every D from 1 to 256); a key's score is simd_sum of the
//     lanes' partial dot products;
//   - causal (bottom-right, by positions), sliding window, additive mask, ALiBi, softcap and
//     explicit positions (-1: an empty slot) decide and shape every score;
//   - each simdgroup keeps an online softmax (running max, sum, f32 accumulators) with every
//     weight exp(score - max) as the contract writes it (a NaN or +inf score poisons the row);
//   - the S states merge through threadgroup memory in chunks of 64 head-dim elements, so
//     D = 256 in f32 stays within the 32 KiB budget.
// The first 64 threads then write: the normalised row into `out` (partial_out null; a row
// with no allowed key is 0), or the unnormalised state (partial_out[d], partial_max,
// partial_sum: f32, no rounding to T) for a second pass to merge.
// Defect hooks (never defined in the kernels' own build; each makes a variant of these sources
// that models a defect of defects/defective_metal.h): KVCHECK_DEFECT_IGNORES_MASK_AND_CAUSAL,
// KVCHECK_DEFECT_FINITE_INITIAL_MAX.
#ifndef KVCHECK_SRC_METAL_KERNELS_SDPA_COMMON_H_
#define KVCHECK_SRC_METAL_KERNELS_SDPA_COMMON_H_

#include "sdpa_params.h"

constant constexpr int kLanes = 32;
constant constexpr int kMaxPerLane = 8;   // 256 / 32 head-dim elements per lane
constant constexpr int kMergeChunk = 64;  // head-dim elements merged per round

// The merge of n online-softmax states (max_s, sum_s), shared by the threadgroup merge below
// and the second pass of sdpa_2pass: the global max M, the total weight
// sum_s sum_s exp(max_s - M), and whether a state is NaN (it saw a NaN or +inf score: the row
// is NaN). A state with no key (max -inf) weighs nothing.
template <typename P>
void MergeStates(P maxima, P sums, int n, thread float& global_max, thread float& total,
                 thread bool& poisoned) {
  global_max = -numeric_limits<float>::infinity();
  total = 0.0f;
  poisoned = false;
  for (int s = 0; s < n; ++s) {
    poisoned = poisoned || isnan(maxima[s]) || isnan(sums[s]);
    global_max = max(global_max, maxima[s]);
  }
  for (int s = 0; s < n; ++s) {
    if (maxima[s] != -numeric_limits<float>::infinity()) {
      total += sums[s] * exp(maxima[s] - global_max);
    }
  }
}

// A state's weight in the merge: exp(max_s - M), 0 for a state with no key (its accumulators
// are exactly 0).
inline float StateWeight(float state_max, float global_max) {
  return state_max == -numeric_limits<float>::infinity() ? 0.0f : exp(state_max - global_max);
}

// The merged row element: value / total, 0 for a row with no allowed key, NaN when poisoned.
inline float MergedResult(float value, float total, bool poisoned) {
  if (poisoned) return numeric_limits<float>::quiet_NaN();
  return total > 0.0f ? value / total : 0.0f;
}

// The position of query row i (the contract's default: bottom-right, Skv - Sq + i).
inline long QueryPosition(constant SdpaParams& p, const device long* q_positions, int b, int i) {
  return p.has_q_positions ? q_positions[long(b) * p.q_len + i] : long(p.kv_len - p.q_len + i);
}

// Whether query row i (at qpos) may see key j: explicit positions (-1: an empty slot on either
// side), causality, the sliding window, and the mask (-inf removes the key: its k and v are
// never used). `kpos` and the mask's value `bias` are set for an allowed key.
inline bool KeyAllowed(constant SdpaParams& p, const device float* mask,
                       const device long* kv_positions, long qpos, int i, int j, int h, int b,
                       thread long& kpos, thread float& bias) {
  kpos = p.has_kv_positions ? kv_positions[long(b) * p.kv_len + j] : long(j);
  bias = 0.0f;
  if (qpos < 0 || kpos < 0) return false;
#ifndef KVCHECK_DEFECT_IGNORES_MASK_AND_CAUSAL  // candle's vector path
  if (p.causal && kpos > qpos) return false;
#endif
  if (p.window > 0 && qpos - kpos >= p.window) return false;
#ifndef KVCHECK_DEFECT_IGNORES_MASK_AND_CAUSAL
  if (p.has_mask) {
    const int mb = p.mask_batch == 1 ? 0 : b, mh = p.mask_heads == 1 ? 0 : h;
    bias = mask[mb * p.mask_strides[0] + mh * p.mask_strides[1] + i * p.mask_strides[2] +
                j * p.mask_strides[3]];
    if (bias == -numeric_limits<float>::infinity()) return false;
  }
#endif
  return true;
}

// An allowed key's score from its f32 dot product, in the contract's order: scale, softcap,
// ALiBi, mask, one rounding each.
inline float FinalScore(constant SdpaParams& p, const device float* alibi, float dot, int h,
                        long kpos, long qpos, float bias) {
  float score = dot * p.scale;
  if (p.softcap > 0.0f) score = p.softcap * precise::tanh(score / p.softcap);
  if (p.has_alibi) score += alibi[h] * float(kpos - qpos);
  return score + bias;
}

// Simdgroups: the threadgroup's simdgroup count (32 for sdpa_vector, fewer for a block of
// the 2-pass kernel); maxima and sums hold Simdgroups floats, partials Simdgroups x 64.
template <typename T, int Simdgroups>
void AttendKeys(const device T* q, const device T* k, const device T* v, device T* out,
                constant SdpaParams& p, const device float* mask, const device float* alibi,
                const device long* q_positions, const device long* kv_positions, int i, int h,
                int b, int begin, int end, uint simd_group, uint lane, uint tid,
                threadgroup float* maxima, threadgroup float* sums, threadgroup float* partials,
                device float* partial_out, device float* partial_max, device float* partial_sum) {
  const int kh = h / (p.heads / p.kv_heads);
  const int D = p.head_dim;
  const long qpos = QueryPosition(p, q_positions, b, i);

  // This lane's query elements, in f32 (the scale applies to the dot product).
  float q_local[kMaxPerLane];
  for (int r = 0; r < kMaxPerLane; ++r) {
    const int d = lane + r * kLanes;
    q_local[r] = d < D ? float(q[b * p.q_strides[0] + h * p.q_strides[1] + i * p.q_strides[2] +
                                 d * p.q_strides[3]])
                       : 0.0f;
  }

#ifdef KVCHECK_DEFECT_FINITE_INITIAL_MAX  // candle's sdpa_vector_2pass
  float running_max = -1e9f;
#else
  float running_max = -numeric_limits<float>::infinity();
#endif
  float running_sum = 0.0f;
  float acc[kMaxPerLane];
  for (int r = 0; r < kMaxPerLane; ++r) acc[r] = 0.0f;

  // An empty query slot (qpos < 0) sees no key: its row is 0.
  for (int j = begin + simd_group; j < end && qpos >= 0; j += Simdgroups) {
    long kpos;
    float bias;
    if (!KeyAllowed(p, mask, kv_positions, qpos, i, j, h, b, kpos, bias)) continue;
    float partial = 0.0f;
    for (int r = 0; r < kMaxPerLane; ++r) {
      const int d = lane + r * kLanes;
      if (d < D) {
        partial += q_local[r] * float(k[b * p.k_strides[0] + kh * p.k_strides[1] +
                                        j * p.k_strides[2] + d * p.k_strides[3]]);
      }
    }
    const float score = FinalScore(p, alibi, simd_sum(partial), h, kpos, qpos, bias);
    // Online softmax, each weight exp(score - max) as the contract writes it: a NaN score
    // makes the weights NaN (never hidden by a max), and so does an infinite one
    // (exp(inf - inf)).
    if (score > running_max) {
      const float factor = exp(running_max - score);
      const float weight = exp(score - score);
      running_sum = running_sum * factor + weight;
      for (int r = 0; r < kMaxPerLane; ++r) {
        const int d = lane + r * kLanes;
        if (d < D) {
          acc[r] = acc[r] * factor + weight * float(v[b * p.v_strides[0] + kh * p.v_strides[1] +
                                                      j * p.v_strides[2] + d * p.v_strides[3]]);
        }
      }
      running_max = score;
    } else {
      const float weight = exp(score - running_max);
      running_sum += weight;
      for (int r = 0; r < kMaxPerLane; ++r) {
        const int d = lane + r * kLanes;
        if (d < D) {
          acc[r] += weight * float(v[b * p.v_strides[0] + kh * p.v_strides[1] +
                                     j * p.v_strides[2] + d * p.v_strides[3]]);
        }
      }
    }
  }

  // Merge the simdgroups' states: the global max, each state's weight, the sum.
  if (lane == 0) {
    maxima[simd_group] = running_max;
    sums[simd_group] = running_sum;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  // Only the threads that write the output (the first kMergeChunk) need the merged state.
  float global_max = -numeric_limits<float>::infinity();
  bool poisoned = false;
  float total = 0.0f;
  if (tid < uint(kMergeChunk)) MergeStates(maxima, sums, Simdgroups, global_max, total, poisoned);
  for (int chunk = 0; chunk * kMergeChunk < D; ++chunk) {
    // This simdgroup's accumulators of the chunk: lane l holds d = l + 32 r.
    for (int r = 0; r < kMaxPerLane; ++r) {
      const int d = lane + r * kLanes;
      if (d >= chunk * kMergeChunk && d < (chunk + 1) * kMergeChunk) {
        partials[simd_group * kMergeChunk + (d - chunk * kMergeChunk)] = acc[r];
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const int d = chunk * kMergeChunk + int(tid);
    if (tid < uint(kMergeChunk) && d < D) {
      float value = 0.0f;
      for (int s = 0; s < Simdgroups; ++s) {
        value += partials[s * kMergeChunk + int(tid)] * StateWeight(maxima[s], global_max);
      }
      if (partial_out == nullptr) {
        out[((long(b) * p.heads + h) * p.q_len + i) * D + d] = T(MergedResult(value, total, poisoned));
      } else {
        // A block's state for the second pass: unnormalised, relative to the block's max.
        partial_out[d] = poisoned ? numeric_limits<float>::quiet_NaN() : value;
        if (d == 0) {
          partial_max[0] = global_max;
          partial_sum[0] = poisoned ? numeric_limits<float>::quiet_NaN() : total;
        }
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}

#endif  // KVCHECK_SRC_METAL_KERNELS_SDPA_COMMON_H_
