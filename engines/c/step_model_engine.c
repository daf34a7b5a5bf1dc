/* step_model_engine.c: a kvcheck plug-in in plain C at the stepper and model levels
 * (src/engine/kvcheck_engine.h, revision 2 fields).
 *
 * Steppers (a fused append-then-attend over the stepper's own history, f32, GQA, reset):
 *   c_step          causal attention over every token since the reset
 *   c_window_step   the same over each query's last W tokens
 * Models (token ids to logits; one attention layer over a c_window_step / c_step, seeded
 * weights, learned positions up to 64 tokens):
 *   c_lm, c_lm_window (W = 5)
 *
 *     cc -O2 -shared -fPIC -I. -o /tmp/libstep_model_engine.so engines/c/step_model_engine.c -lm
 *     kvcheck --engine=/tmp/libstep_model_engine.so
 *
 * STEP_MODEL_ENGINE_BUG=<name> switches on a mistake:
 *   window_cut_first     a step keeps only the last W keys, new chunk included, before it
 *                        attends: a chunk longer than W loses keys its first queries need
 *   positions_per_chunk  the model numbers every cached chunk's tokens from 0
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/engine/kvcheck_engine.h"

static int has_bug(const char* name) {
  const char* b = getenv("STEP_MODEL_ENGINE_BUG");
  return b != NULL && strcmp(b, name) == 0;
}

static int fail(kvcheck_error* err, int32_t code, const char* message) {
  err->code = code;
  snprintf(err->message, KVCHECK_MESSAGE_SIZE, "%s", message);
  return code;
}

/* ---- Attention of one query over a key range ------------------------------------------- */

/* out[d] = softmax over keys j in [first, last] of (q . k_j) / sqrt(D), times v_j; k and v
 * are token-major (T, D) rows of one KV head. Two passes, f32 sums. */
static void attend_row(const float* q, const float* k, const float* v, int64_t first,
                       int64_t last, int64_t D, float* out) {
  const float scale = 1.0f / sqrtf((float)D);
  float max = -INFINITY, sum = 0.0f;
  int64_t j, d;
  for (d = 0; d < D; ++d) out[d] = 0.0f;
  if (first > last) return; /* no key: 0 */
  for (j = first; j <= last; ++j) {
    float s = 0.0f;
    for (d = 0; d < D; ++d) s += q[d] * k[j * D + d];
    s *= scale;
    if (s > max) max = s;
  }
  for (j = first; j <= last; ++j) {
    float s = 0.0f, w;
    for (d = 0; d < D; ++d) s += q[d] * k[j * D + d];
    w = expf(s * scale - max);
    sum += w;
    for (d = 0; d < D; ++d) out[d] += w * v[j * D + d];
  }
  for (d = 0; d < D; ++d) out[d] /= sum;
}

/* ---- Steppers ---------------------------------------------------------------------------- */

struct kvcheck_stepper {
  int64_t window;                 /* 0: full */
  int64_t batch, heads, kv_heads, dim;  /* fixed by the first step after a reset; 0: unset */
  int64_t length, capacity;       /* tokens held (every token since the reset) */
  float *k, *v;                   /* (B * KH) rows of (capacity, D) */
};

static void stepper_reset(kvcheck_stepper* s) {
  free(s->k);
  free(s->v);
  s->k = s->v = NULL;
  s->batch = s->heads = s->kv_heads = s->dim = s->length = s->capacity = 0;
}

static int32_t stepper_create(int32_t index, int64_t window, kvcheck_stepper** out,
                              kvcheck_error* err) {
  kvcheck_stepper* s;
  if (index < 0 || index > 1) return fail(err, KVCHECK_NOT_FOUND, "no such stepper");
  s = calloc(1, sizeof *s);
  if (s == NULL) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  s->window = index == 1 ? window : 0;
  *out = s;
  return KVCHECK_OK;
}

static void stepper_destroy(kvcheck_stepper* s) {
  stepper_reset(s);
  free(s);
}

/* Makes room for `needed` tokens per row (doubling), keeping what is held. */
static int reserve(kvcheck_stepper* s, int64_t needed) {
  int64_t capacity = s->capacity > 0 ? s->capacity : 8, row;
  float *k, *v;
  if (needed <= s->capacity) return 1;
  while (capacity < needed) capacity *= 2;
  k = malloc(sizeof(float) * (size_t)(s->batch * s->kv_heads * capacity * s->dim));
  v = malloc(sizeof(float) * (size_t)(s->batch * s->kv_heads * capacity * s->dim));
  if (k == NULL || v == NULL) {
    free(k);
    free(v);
    return 0;
  }
  for (row = 0; row < s->batch * s->kv_heads && s->length > 0; ++row) {
    memcpy(k + row * capacity * s->dim, s->k + row * s->capacity * s->dim,
           sizeof(float) * (size_t)(s->length * s->dim));
    memcpy(v + row * capacity * s->dim, s->v + row * s->capacity * s->dim,
           sizeof(float) * (size_t)(s->length * s->dim));
  }
  free(s->k);
  free(s->v);
  s->k = k;
  s->v = v;
  s->capacity = capacity;
  return 1;
}

static float at(const kvcheck_tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return ((const float*)t->data)[i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2] +
                                 i3 * t->strides[3]];
}

/* The step on plain arrays: q (B, H, S, D), k_new and v_new (B, KH, S, D), out (B, H, S, D),
 * all contiguous. */
static void step_rows(kvcheck_stepper* s, const float* q, const float* k_new, const float* v_new,
                      int64_t seq, float* out) {
  const int64_t B = s->batch, H = s->heads, KH = s->kv_heads, D = s->dim, P = s->length;
  int64_t b, h, i, row;
  for (row = 0; row < B * KH; ++row) {
    memcpy(s->k + (row * s->capacity + P) * D, k_new + row * seq * D,
           sizeof(float) * (size_t)(seq * D));
    memcpy(s->v + (row * s->capacity + P) * D, v_new + row * seq * D,
           sizeof(float) * (size_t)(seq * D));
  }
  s->length = P + seq;
  for (b = 0; b < B; ++b) {
    for (h = 0; h < H; ++h) {
      const int64_t kv_row = b * KH + h / (H / KH);
      for (i = 0; i < seq; ++i) {
        const int64_t pos = P + i;
        int64_t first = s->window > 0 && pos - s->window + 1 > 0 ? pos - s->window + 1 : 0;
        if (s->window > 0 && has_bug("window_cut_first") && s->length - s->window > first) {
          first = s->length - s->window; /* only the last W held, chunk included */
        }
        attend_row(q + ((b * H + h) * seq + i) * D, s->k + kv_row * s->capacity * D,
                   s->v + kv_row * s->capacity * D, first, pos, D,
                   out + ((b * H + h) * seq + i) * D);
      }
    }
  }
}

static int32_t stepper_step(kvcheck_stepper* s, const kvcheck_tensor* q,
                            const kvcheck_tensor* k_new, const kvcheck_tensor* v_new,
                            kvcheck_tensor* out, kvcheck_error* err) {
  const int64_t B = q->shape[0], H = q->shape[1], S = q->shape[2], D = q->shape[3];
  const int64_t KH = k_new->shape[1];
  int64_t b, h, i, d;
  float *qc, *kc, *vc;
  if (s->batch == 0) {
    s->batch = B;
    s->heads = H;
    s->kv_heads = KH;
    s->dim = D;
  } else if (B != s->batch || H != s->heads || KH != s->kv_heads || D != s->dim) {
    return fail(err, KVCHECK_FAILED_PRECONDITION, "shape differs from the first step's");
  }
  if (!reserve(s, s->length + S)) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  /* Contiguous copies of the (possibly transposed) inputs. */
  qc = malloc(sizeof(float) * (size_t)(B * H * S * D));
  kc = malloc(sizeof(float) * (size_t)(B * KH * S * D));
  vc = malloc(sizeof(float) * (size_t)(B * KH * S * D));
  if (qc == NULL || kc == NULL || vc == NULL) {
    free(qc);
    free(kc);
    free(vc);
    return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (b = 0; b < B; ++b) {
    for (h = 0; h < H; ++h) {
      for (i = 0; i < S; ++i) {
        for (d = 0; d < D; ++d) {
          qc[((b * H + h) * S + i) * D + d] = at(q, b, h, i, d);
          if (h < KH) {
            kc[((b * KH + h) * S + i) * D + d] = at(k_new, b, h, i, d);
            vc[((b * KH + h) * S + i) * D + d] = at(v_new, b, h, i, d);
          }
        }
      }
    }
  }
  step_rows(s, qc, kc, vc, S, (float*)out->data);
  free(qc);
  free(kc);
  free(vc);
  return KVCHECK_OK;
}

/* ---- Models ------------------------------------------------------------------------------ */

enum { kVocab = 32, kMaxTokens = 64, kDim = 16, kHeads = 2, kKvHeads = 1, kHeadDim = 8 };

/* Seeded weights, the same in every model object. */
static float weights_embed[kVocab][kDim], weights_pos[kMaxTokens][kDim];
static float weights_q[kDim][kHeads * kHeadDim], weights_k[kDim][kKvHeads * kHeadDim];
static float weights_v[kDim][kKvHeads * kHeadDim], weights_o[kHeads * kHeadDim][kDim];
static float weights_out[kDim][kVocab];

static void fill(float* w, size_t n, unsigned* state, float scale) {
  size_t i;
  for (i = 0; i < n; ++i) {
    *state = *state * 1664525u + 1013904223u;
    w[i] = scale * ((float)(*state >> 8) / 16777216.0f - 0.5f);
  }
}

static void init_weights(void) {
  static int done = 0;
  unsigned state = 4;
  if (done) return;
  fill(&weights_embed[0][0], sizeof weights_embed / sizeof(float), &state, 2.0f);
  fill(&weights_pos[0][0], sizeof weights_pos / sizeof(float), &state, 2.0f);
  fill(&weights_q[0][0], sizeof weights_q / sizeof(float), &state, 1.0f);
  fill(&weights_k[0][0], sizeof weights_k / sizeof(float), &state, 1.0f);
  fill(&weights_v[0][0], sizeof weights_v / sizeof(float), &state, 1.0f);
  fill(&weights_o[0][0], sizeof weights_o / sizeof(float), &state, 1.0f);
  fill(&weights_out[0][0], sizeof weights_out / sizeof(float), &state, 1.0f);
  done = 1;
}

struct kvcheck_model {
  kvcheck_stepper attention; /* the layer's cache */
  int64_t seen;              /* tokens given with the cache since the reset */
};

static int32_t model_create(int32_t index, kvcheck_model** out, kvcheck_error* err) {
  kvcheck_model* m;
  if (index < 0 || index > 1) return fail(err, KVCHECK_NOT_FOUND, "no such model");
  init_weights();
  m = calloc(1, sizeof *m);
  if (m == NULL) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  m->attention.window = index == 1 ? 5 : 0;
  *out = m;
  return KVCHECK_OK;
}

static void model_reset(kvcheck_model* m) {
  stepper_reset(&m->attention);
  m->seen = 0;
}

static void model_destroy(kvcheck_model* m) {
  stepper_reset(&m->attention);
  free(m);
}

static int32_t model_forward(kvcheck_model* m, const int64_t* tokens, int64_t batch, int64_t seq,
                             int32_t use_cache, float* logits, kvcheck_error* err) {
  const int64_t start = !use_cache || has_bug("positions_per_chunk") ? 0 : m->seen;
  kvcheck_stepper fresh;
  kvcheck_stepper* layer = use_cache ? &m->attention : &fresh;
  float *x = NULL, *q = NULL, *k = NULL, *v = NULL, *attended = NULL;
  int64_t i, d, e, n;
  int32_t status = KVCHECK_OK;
  if (batch != 1) return fail(err, KVCHECK_INVALID_ARGUMENT, "one row per forward");
  if (use_cache ? m->seen + seq > kMaxTokens : seq > kMaxTokens) {
    return fail(err, KVCHECK_OUT_OF_RANGE, "past the model's 64 positions");
  }
  for (i = 0; i < seq; ++i) {
    if (tokens[i] < 0 || tokens[i] >= kVocab) {
      return fail(err, KVCHECK_INVALID_ARGUMENT, "token id out of range");
    }
  }
  memset(&fresh, 0, sizeof fresh);
  fresh.window = m->attention.window; /* the recomputation: a new history of the same window */
  x = malloc(sizeof(float) * (size_t)(seq * kDim));
  q = malloc(sizeof(float) * (size_t)(seq * kHeads * kHeadDim));
  k = malloc(sizeof(float) * (size_t)(seq * kKvHeads * kHeadDim));
  v = malloc(sizeof(float) * (size_t)(seq * kKvHeads * kHeadDim));
  attended = malloc(sizeof(float) * (size_t)(seq * kHeads * kHeadDim));
  if (x == NULL || q == NULL || k == NULL || v == NULL || attended == NULL) {
    status = fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (i = 0; i < seq; ++i) {
    for (d = 0; d < kDim; ++d) x[i * kDim + d] = weights_embed[tokens[i]][d] + weights_pos[start + i][d];
  }
  /* Projections straight into the stepper's (heads, S, head_dim) layout. */
  for (i = 0; i < seq; ++i) {
    for (e = 0; e < kHeads * kHeadDim; ++e) {
      float sq = 0.0f;
      for (d = 0; d < kDim; ++d) sq += x[i * kDim + d] * weights_q[d][e];
      q[((e / kHeadDim) * seq + i) * kHeadDim + e % kHeadDim] = sq;
    }
    for (e = 0; e < kKvHeads * kHeadDim; ++e) {
      float sk = 0.0f, sv = 0.0f;
      for (d = 0; d < kDim; ++d) {
        sk += x[i * kDim + d] * weights_k[d][e];
        sv += x[i * kDim + d] * weights_v[d][e];
      }
      k[((e / kHeadDim) * seq + i) * kHeadDim + e % kHeadDim] = sk;
      v[((e / kHeadDim) * seq + i) * kHeadDim + e % kHeadDim] = sv;
    }
  }
  if (layer->batch == 0) {
    layer->batch = 1;
    layer->heads = kHeads;
    layer->kv_heads = kKvHeads;
    layer->dim = kHeadDim;
  }
  if (!reserve(layer, layer->length + seq)) {
    status = fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  step_rows(layer, q, k, v, seq, attended);
  for (i = 0; i < seq; ++i) {
    for (n = 0; n < kVocab; ++n) {
      float logit = 0.0f;
      for (d = 0; d < kDim; ++d) {
        float h = x[i * kDim + d];
        for (e = 0; e < kHeads * kHeadDim; ++e) {
          h += attended[((e / kHeadDim) * seq + i) * kHeadDim + e % kHeadDim] * weights_o[e][d];
        }
        logit += h * weights_out[d][n];
      }
      logits[i * kVocab + n] = logit;
    }
  }
  if (use_cache) m->seen += seq;
done:
  stepper_reset(&fresh);
  free(x);
  free(q);
  free(k);
  free(v);
  free(attended);
  return status;
}

/* ---- The table --------------------------------------------------------------------------- */

static const kvcheck_stepper_info kSteppers[] = {
    {"c_step", "causal attention over every token since the reset",
     KVCHECK_STEPPER_RESET | KVCHECK_STEPPER_GQA, 1u << KVCHECK_DTYPE_F32, 0},
    {"c_window_step", "each query's last W tokens",
     KVCHECK_STEPPER_WINDOWED | KVCHECK_STEPPER_RESET | KVCHECK_STEPPER_GQA,
     1u << KVCHECK_DTYPE_F32, 4},
};

static const kvcheck_model_info kModels[] = {
    {"c_lm", "one attention layer, full attention", KVCHECK_MODEL_RESET, kVocab, kMaxTokens, 0},
    {"c_lm_window", "one attention layer, window W = 5", KVCHECK_MODEL_RESET, kVocab, kMaxTokens,
     0},
};

static const kvcheck_engine kEngine = {
    .abi_version = KVCHECK_ENGINE_ABI_VERSION,
    .struct_size = sizeof(kvcheck_engine),
    .name = "step-model-c",
    .num_steppers = 2,
    .steppers = kSteppers,
    .stepper_create = stepper_create,
    .stepper_step = stepper_step,
    .stepper_reset = stepper_reset,
    .stepper_destroy = stepper_destroy,
    .num_models = 2,
    .models = kModels,
    .model_create = model_create,
    .model_forward = model_forward,
    .model_reset = model_reset,
    .model_destroy = model_destroy,
};

const kvcheck_engine* kvcheck_engine_v1(void) { return &kEngine; }
