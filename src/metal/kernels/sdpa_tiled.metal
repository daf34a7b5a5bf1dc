// sdpa_tiled: prefill attention in tiles, the decomposition of MLX's and candle's steel
// attention, with the whole attention contract (src/attention/attention_params.h):
//   - a threadgroup of 4 simdgroups takes 32 query rows (8 per simdgroup: one row of 8 x 8
//     fragments) of one head and batch row, and walks the keys 16 at a time: the block's keys,
//     then its values, in threadgroup memory (head dims padded with zeros to a multiple of 8);
//   - scores S = Q K^T and the update O += P V are simdgroup_matrix products in f32 (inputs
//     widened from T exactly); every score then takes the contract's scale, softcap, ALiBi and
//     mask (sdpa_common.h), and positions, causality and the window decide which keys count;
//   - the online softmax is base 2 (scores times log2 e, exp2), as steel's; the running max and
//     sum live in every lane of a fragment row (lanes l, l ^ 1, l ^ 8, l ^ 9);
//   - unlike candle's: Q is not rounded to T after scaling (the scale applies to the f32 dot
//     product), masks, causality (bottom-right, by positions), window and softcap apply in this
//     path, the causal key-block limit is clamped to the key blocks there are, a row with no
//     allowed key is 0 (not 0 / 0), every head dim 1..256 keeps its tail, and views are read
//     through their strides;
//   - a key that is not allowed never touches the output, even when its value is NaN or
//     infinite: a block whose values are all finite goes through the matrix product (its
//     disallowed keys weigh exactly 0); any other block is accumulated key by key, skipping
//     them (0 x NaN would poison the row).
// Inputs in T (float, half, bfloat), every statistic and accumulator in f32, output rounded to T
// once.
// Defect hooks (never defined in the kernels' own build; each makes a variant that models a
// defect of defects/defective_metal.h): KVCHECK_DEFECT_UNCLAMPED_CAUSAL_LIMIT,
// KVCHECK_DEFECT_MASKED_ROW_NAN, KVCHECK_DEFECT_Q_TILE_IN_THREADGROUP.
#include <metal_stdlib>

using namespace metal;

#include "sdpa_common.h"

constant constexpr int kFragment = 8;
constant constexpr int kMaxDimBlocks = kSdpaMaxHeadDim / kFragment;
constant constexpr int kKeyBlocks = kSdpaTiledKeys / kFragment;
constant constexpr float kLog2e = 1.4426950408889634f;

// An 8 x 8 fragment whose element (r, c) is src[r * row_stride + c * col_stride], as f32: each
// lane reads its own two elements (Apple's lane layout, MLX's BaseMMAFrag: lane l holds row fm,
// columns fn and fn + 1).
template <typename U>
simdgroup_matrix<float, 8, 8> LoadFragment(const threadgroup U* src, int row_stride,
                                           int col_stride, short fm, short fn) {
  simdgroup_matrix<float, 8, 8> m;
  m.thread_elements()[0] = float(src[fm * row_stride + fn * col_stride]);
  m.thread_elements()[1] = float(src[fm * row_stride + (fn + 1) * col_stride]);
  return m;
}

// Copies keys [first, first + kSdpaTiledKeys) of `x` (K or V of head kh) into `tile`, rows of
// D8 elements, zeros past the head dim. Only the block that holds the remainder keys (Skv not
// a multiple of the block) checks j < Skv, as steel's load_safe: the caller never asks for a
// block past the keys. Returns whether every element copied is finite.
template <typename T>
bool LoadBlock(const device T* x, constant long* strides, int b, int kh, int first, int kv_len,
               int D, int D8, threadgroup T* tile, uint tid) {
  const bool partial = first / kSdpaTiledKeys == kv_len / kSdpaTiledKeys;
  bool finite = true;
  for (int e = int(tid); e < kSdpaTiledKeys * D8; e += kSdpaTiledSimdgroups * 32) {
    const int key = e / D8, d = e % D8, j = first + key;
    T value = T(0.0f);
    if (d < D && (!partial || j < kv_len)) {
      value = x[b * strides[0] + kh * strides[1] + j * strides[2] + d * strides[3]];
    }
    finite = finite && isfinite(float(value));
    tile[e] = value;
  }
  return finite;
}

template <typename T>
[[kernel]] void sdpa_tiled(
    const device T* q [[buffer(0)]],
    const device T* k [[buffer(1)]],
    const device T* v [[buffer(2)]],
    device T* out [[buffer(3)]],
    constant SdpaParams& p [[buffer(4)]],
    const device float* mask [[buffer(5)]],
    const device float* alibi [[buffer(6)]],
    const device long* q_positions [[buffer(7)]],
    const device long* kv_positions [[buffer(8)]],
    uint3 group [[threadgroup_position_in_grid]],
    uint simd_group [[simdgroup_index_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]],
    uint tid [[thread_index_in_threadgroup]]
#ifdef KVCHECK_DEFECT_Q_TILE_IN_THREADGROUP  // steel's Q tile, BQ x (D + pad), host-sized
    , threadgroup T* q_stage [[threadgroup(0)]]
#endif
    ) {
  threadgroup T tile[kSdpaTiledKeys * kSdpaMaxHeadDim];  // a block's keys, then its values
  // The fallback's weights, per simdgroup: 8 rows x kSdpaTiledKeys, -1 for a disallowed key.
  threadgroup float weights[kSdpaTiledSimdgroups * kFragment * kSdpaTiledKeys];
  threadgroup float block_finite[kSdpaTiledSimdgroups];

  const int h = int(group.y), b = int(group.z);
  const int kh = h / (p.heads / p.kv_heads);
  const int D = p.head_dim, D8 = (D + kFragment - 1) / kFragment * kFragment;
  const int dim_blocks = D8 / kFragment;
  // This lane's place in a fragment (Apple's layout).
  const short fm = short((lane / 4) & 4) + short((lane / 2) % 4);
  const short fn = short((lane / 4) & 2) * 2 + short(lane % 2) * 2;
  const int first_row = int(group.x) * kSdpaTiledRows + int(simd_group) * kFragment;
  const int i = first_row + fm;  // this lane's query row
  const bool row_valid = i < p.q_len;
  const long qpos = row_valid ? QueryPosition(p, q_positions, b, i) : -1;

  // Q: this simdgroup's 8 rows, every 8-wide head-dim block, f32, zeros past the row and dim.
  simdgroup_matrix<float, 8, 8> qf[kMaxDimBlocks];
#ifdef KVCHECK_DEFECT_Q_TILE_IN_THREADGROUP
  // Staged through threadgroup memory first, as steel's kernel does: with the K/V tile, f32
  // and a large head dim exceed the 32 KiB budget (candle does not check it).
  const int q_stride = D8 + 4;
  for (int e = int(tid); e < kSdpaTiledRows * q_stride; e += kSdpaTiledSimdgroups * 32) {
    const int row = int(group.x) * kSdpaTiledRows + e / q_stride, d = e % q_stride;
    q_stage[e] = row < p.q_len && d < D ? q[b * p.q_strides[0] + h * p.q_strides[1] +
                                            row * p.q_strides[2] + d * p.q_strides[3]]
                                        : T(0.0f);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (int db = 0; db < dim_blocks; ++db) {
    for (int t = 0; t < 2; ++t) {
      qf[db].thread_elements()[t] =
          float(q_stage[(int(simd_group) * kFragment + fm) * q_stride + db * kFragment + fn + t]);
    }
  }
#else
  for (int db = 0; db < dim_blocks; ++db) {
    for (int t = 0; t < 2; ++t) {
      const int d = db * kFragment + fn + t;
      qf[db].thread_elements()[t] =
          row_valid && d < D ? float(q[b * p.q_strides[0] + h * p.q_strides[1] +
                                       i * p.q_strides[2] + d * p.q_strides[3]])
                             : 0.0f;
    }
  }
#endif
  simdgroup_matrix<float, 8, 8> of[kMaxDimBlocks];
  for (int db = 0; db < dim_blocks; ++db) of[db] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  float row_max = -numeric_limits<float>::infinity();  // base 2
  float row_sum = 0.0f;

  // The key blocks to visit: all of them, or with the default causal positions only those up
  // to the threadgroup's last row (clamped: the last row may lie past Sq).
  const int key_blocks = (p.kv_len + kSdpaTiledKeys - 1) / kSdpaTiledKeys;
  int block_limit = key_blocks;
  if (p.causal && !p.has_q_positions && !p.has_kv_positions) {
    const long last_qpos = long(p.kv_len - p.q_len) + (int(group.x) + 1) * kSdpaTiledRows - 1;
#ifdef KVCHECK_DEFECT_UNCLAMPED_CAUSAL_LIMIT  // candle's steel kb_lim (MLX #1999)
    block_limit = max(0, int((last_qpos + kSdpaTiledKeys) / kSdpaTiledKeys));
#else
    block_limit = min(key_blocks, max(0, int((last_qpos + kSdpaTiledKeys) / kSdpaTiledKeys)));
#endif
  }

  for (int kb = 0; kb < block_limit; ++kb) {
    const int first = kb * kSdpaTiledKeys;
    LoadBlock(k, p.k_strides, b, kh, first, p.kv_len, D, D8, tile, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // S = Q K^T, fragment by fragment of 8 keys; then the contract's score, times log2 e.
    float s[kKeyBlocks][2];
    bool allowed[kKeyBlocks][2];
    for (int kbk = 0; kbk < kKeyBlocks; ++kbk) {
      simdgroup_matrix<float, 8, 8> sf = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
      for (int db = 0; db < dim_blocks; ++db) {
        // (K^T)(r, c) = K[key kbk * 8 + c][d db * 8 + r].
        simdgroup_matrix<float, 8, 8> kt =
            LoadFragment(tile + kbk * kFragment * D8 + db * kFragment, 1, D8, fm, fn);
        simdgroup_multiply_accumulate(sf, qf[db], kt, sf);
      }
      for (int t = 0; t < 2; ++t) {
        const int j = first + kbk * kFragment + fn + t;
        long kpos = 0;
        float bias = 0.0f;
        allowed[kbk][t] = j < p.kv_len && row_valid &&
                          KeyAllowed(p, mask, kv_positions, qpos, i, j, h, b, kpos, bias);
        s[kbk][t] = allowed[kbk][t]
                        ? FinalScore(p, alibi, sf.thread_elements()[t], h, kpos, qpos, bias) *
                              kLog2e
                        : -numeric_limits<float>::infinity();
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // every simdgroup is done with the keys
    const bool finite = LoadBlock(v, p.v_strides, b, kh, first, p.kv_len, D, D8, tile, tid);
    const float any_bad = simd_max(finite ? 0.0f : 1.0f);
    if (lane == 0) block_finite[simd_group] = any_bad;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Online softmax over the row (its 4 lanes): new max, rescale, weights exp2(s - max) as
    // the contract writes them (a NaN score, or an infinite one via inf - inf, gives NaN).
    float block_max = -numeric_limits<float>::infinity();
    for (int kbk = 0; kbk < kKeyBlocks; ++kbk) {
      for (int t = 0; t < 2; ++t) block_max = s[kbk][t] > block_max ? s[kbk][t] : block_max;
    }
    block_max = max(block_max, simd_shuffle_xor(block_max, ushort(1)));
    block_max = max(block_max, simd_shuffle_xor(block_max, ushort(8)));
    const float new_max = max(row_max, block_max);
    const float factor =
        row_max == -numeric_limits<float>::infinity() ? 0.0f : exp2(row_max - new_max);
    float p_local[kKeyBlocks][2];
    float block_sum = 0.0f;
    for (int kbk = 0; kbk < kKeyBlocks; ++kbk) {
      for (int t = 0; t < 2; ++t) {
        p_local[kbk][t] = allowed[kbk][t] ? exp2(s[kbk][t] - new_max) : 0.0f;
        block_sum += p_local[kbk][t];
      }
    }
    block_sum += simd_shuffle_xor(block_sum, ushort(1));
    block_sum += simd_shuffle_xor(block_sum, ushort(8));
    row_sum = row_sum * factor + block_sum;
    row_max = new_max;
    for (int db = 0; db < dim_blocks; ++db) {
      of[db].thread_elements()[0] *= factor;
      of[db].thread_elements()[1] *= factor;
    }

    bool values_finite = true;
    for (int g = 0; g < kSdpaTiledSimdgroups; ++g) values_finite = values_finite && block_finite[g] == 0.0f;
    if (values_finite) {
      // O += P V: P(r, c) is row r's weight of key kbk * 8 + c; V(r, c) = V[key][d].
      for (int kbk = 0; kbk < kKeyBlocks; ++kbk) {
        simdgroup_matrix<float, 8, 8> pf;
        pf.thread_elements()[0] = p_local[kbk][0];
        pf.thread_elements()[1] = p_local[kbk][1];
        for (int db = 0; db < dim_blocks; ++db) {
          simdgroup_matrix<float, 8, 8> vf =
              LoadFragment(tile + kbk * kFragment * D8 + db * kFragment, D8, 1, fm, fn);
          simdgroup_multiply_accumulate(of[db], pf, vf, of[db]);
        }
      }
    } else {
      // Key by key, skipping the disallowed ones (their weight is written as -1).
      threadgroup float* w = weights + simd_group * kFragment * kSdpaTiledKeys;
      for (int kbk = 0; kbk < kKeyBlocks; ++kbk) {
        for (int t = 0; t < 2; ++t) {
          w[fm * kSdpaTiledKeys + kbk * kFragment + fn + t] =
              allowed[kbk][t] ? p_local[kbk][t] : -1.0f;
        }
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
      for (int db = 0; db < dim_blocks; ++db) {
        for (int t = 0; t < 2; ++t) {
          const int d = db * kFragment + fn + t;
          float acc = of[db].thread_elements()[t];
          for (int key = 0; key < kSdpaTiledKeys; ++key) {
            const float weight = w[fm * kSdpaTiledKeys + key];
            if (weight >= 0.0f) acc += weight * float(tile[key * D8 + d]);
          }
          of[db].thread_elements()[t] = acc;
        }
      }
      simdgroup_barrier(mem_flags::mem_threadgroup);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);  // every simdgroup is done with the values
  }

  // O / sum, rounded to T once; 0 for a row with no allowed key, NaN when the sum is.
  if (!row_valid) return;
  for (int db = 0; db < dim_blocks; ++db) {
    for (int t = 0; t < 2; ++t) {
      const int d = db * kFragment + fn + t;
      if (d < D) {
#ifdef KVCHECK_DEFECT_MASKED_ROW_NAN  // candle's steel kernel: O / sum, no guard (#3388)
        out[((long(b) * p.heads + h) * p.q_len + i) * D + d] = T(of[db].thread_elements()[t] / row_sum);
#else
        out[((long(b) * p.heads + h) * p.q_len + i) * D + d] =
            T(MergedResult(of[db].thread_elements()[t], row_sum, isnan(row_sum)));
#endif
      }
    }
  }
}

template [[host_name("sdpa_tiled_float")]] [[kernel]] decltype(sdpa_tiled<float>) sdpa_tiled<float>;
template [[host_name("sdpa_tiled_half")]] [[kernel]] decltype(sdpa_tiled<half>) sdpa_tiled<half>;
template [[host_name("sdpa_tiled_bfloat")]] [[kernel]] decltype(sdpa_tiled<bfloat>) sdpa_tiled<bfloat>;
