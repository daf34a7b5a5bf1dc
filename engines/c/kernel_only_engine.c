/* The smallest useful plug-in: one attention kernel, f32, causal or not
 * (docs/checking-your-engine.md). kvcheck generates only calls with the declared features
 * (causal, GQA). */
#include <math.h>
#include <stdio.h>

#include "src/engine/kvcheck_engine.h"

static float at(const kvcheck_tensor* t, int64_t b, int64_t h, int64_t s, int64_t d) {
  return ((const float*)t->data)[b * t->strides[0] + h * t->strides[1] + s * t->strides[2] +
                                 d * t->strides[3]];
}

static int32_t attend(int32_t kernel, const kvcheck_tensor* q, const kvcheck_tensor* k,
                      const kvcheck_tensor* v, const kvcheck_attention_params* p,
                      kvcheck_tensor* out, kvcheck_error* err) {
  const int64_t B = q->shape[0], H = q->shape[1], Sq = q->shape[2], D = q->shape[3];
  const int64_t KH = k->shape[1], Skv = k->shape[2];
  const float scale = p->has_scale ? p->scale : 1.0f / sqrtf((float)D);
  float* o = out->data; /* contiguous (B, H, Sq, D) */
  (void)kernel;
  (void)err;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const int64_t qpos = Skv - Sq + i, kh = h / (H / KH); /* bottom-right; GQA */
        const int64_t last = p->causal ? qpos : Skv - 1;    /* keys [0, last] allowed */
        float max = -INFINITY, sum = 0.0f;
        float* row = o + ((b * H + h) * Sq + i) * D;
        for (int64_t d = 0; d < D; ++d) row[d] = 0.0f;
        if (qpos < 0) continue; /* a query before position 0: an empty row, 0 */
        for (int64_t j = 0; j <= last; ++j) { /* online softmax: rescale when max grows */
          float s = 0.0f;
          for (int64_t d = 0; d < D; ++d) s += at(q, b, h, i, d) * at(k, b, kh, j, d);
          s *= scale;
          const float m = s > max || isnan(s) ? s : max;
          /* exp(max - m) and exp(s - m) without -inf - -inf (= NaN) while every score so far
           * is -inf: a -inf score weighs 0 (and 0 * an infinite v is NaN, as the contract has) */
          const float r = max == m ? 1.0f : expf(max - m), w = s == -INFINITY ? 0.0f : expf(s - m);
          for (int64_t d = 0; d < D; ++d) row[d] = row[d] * r + w * at(v, b, kh, j, d);
          sum = sum * r + w;
          max = m;
        }
        for (int64_t d = 0; d < D; ++d) row[d] /= sum;
      }
  return KVCHECK_OK;
}

static const kvcheck_kernel_info kernels[] = {
    {"c_online", "online softmax in f32", KVCHECK_FEATURE_CAUSAL | KVCHECK_FEATURE_GQA,
     1u << KVCHECK_DTYPE_F32}};

/* Designated initializers: fields the engine leaves out are 0 / NULL. */
static const kvcheck_engine engine = {.abi_version = KVCHECK_ENGINE_ABI_VERSION,
                                      .struct_size = sizeof(kvcheck_engine),
                                      .name = "kernel-only-c",
                                      .num_kernels = 1,
                                      .kernels = kernels,
                                      .attend = attend};

const kvcheck_engine* kvcheck_engine_v1(void) { return &engine; }
