// File: sdpa_params.h
// The parameter block of the Metal attention kernels (buffer 4), shared by the .metal sources
// and the host (src/metal/metal_attention.cc): plain integers and floats only, so that it has
// the same layout in MSL and C++. Strides are in elements; a view's offset travels as the
// byte offset of its buffer binding. Sizes fit int, but the kernels form element indices in
// long: B x H x Sq x D outputs, or B x Skv positions, can pass 2^31 in a long-context call.
#ifndef KVCHECK_SRC_METAL_KERNELS_SDPA_PARAMS_H_
#define KVCHECK_SRC_METAL_KERNELS_SDPA_PARAMS_H_

struct SdpaParams {
  int batch, heads, kv_heads, q_len, kv_len, head_dim;
  long q_strides[4], k_strides[4], v_strides[4], mask_strides[4];
  int mask_batch, mask_heads;  // 1 or B, 1 or H (broadcast)
  float scale, softcap;        // softcap 0: off
  int causal;
  long window;                 // 0: off
  int has_alibi, has_mask;
  int has_q_positions, has_kv_positions;  // each may come without the other
};

// The tiled prefill kernel's shape (sdpa_tiled.metal), which the host's grid follows: a
// threadgroup of kSdpaTiledSimdgroups simdgroups takes kSdpaTiledRows query rows (8 per
// simdgroup, one 8 x 8 fragment row) and walks the keys kSdpaTiledKeys at a time.
enum SdpaTiling {
  kSdpaTiledRows = 32,
  kSdpaTiledKeys = 16,
  kSdpaTiledSimdgroups = 4,
  kSdpaMaxHeadDim = 256,
};

#endif  // KVCHECK_SRC_METAL_KERNELS_SDPA_PARAMS_H_
