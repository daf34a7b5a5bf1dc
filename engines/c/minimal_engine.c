/* minimal_engine.c: a complete kvcheck engine plug-in in plain C (src/engine/kvcheck_engine.h).
 *
 * One cache strategy, "c_growable": a contiguous (B, KH, capacity, D) buffer per K and V that
 * doubles when full, with fork and reset; and one kernel, "c_naive": two-pass softmax
 * attention in f32 with causal masking and GQA. Build and check it:
 *
 *     cc -O2 -shared -fPIC -I. -o /tmp/libminimal_engine.so engines/c/minimal_engine.c -lm
 *     kvcheck --engine=/tmp/libminimal_engine.so
 *
 * (Bazel: //engines/c:libminimal_engine.so.) MINIMAL_ENGINE_BUG=<name> switches on a classic
 * mistake, so that kvcheck's verdict can be seen to bite:
 *   fork_shares_buffer   fork copies the pointers, not the buffers (clone aliasing)
 *   grow_drops_tail      growth copies one token too few
 *   causal_top_left      the causal mask compares kpos <= i instead of kpos <= Skv - Sq + i
 *   batch_change_rebuilds  an append of another B, KH, D or dtype without a reset silently
 *                        rebuilds the buffers for it, keeping the length (instead of an error)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/engine/kvcheck_engine.h"

static const char* bug(void) {
  const char* b = getenv("MINIMAL_ENGINE_BUG");
  return b == NULL ? "" : b;
}

static int fail(kvcheck_error* err, int32_t code, const char* message) {
  err->code = code;
  snprintf(err->message, KVCHECK_MESSAGE_SIZE, "%s", message);
  return code;
}

/* ---- The cache --------------------------------------------------------------------------- */

struct kvcheck_cache {
  int64_t batch, heads, dim, capacity, length, initial;
  int32_t dtype, elem; /* dtype code, bytes per element */
  unsigned char *k, *v; /* (B, KH, capacity, D), contiguous */
  int64_t bytes_allocated, bytes_growth_copied;
};

static int32_t cache_create(int32_t strategy, const kvcheck_cache_config* config,
                            kvcheck_cache** out, kvcheck_error* err) {
  kvcheck_cache* c;
  if (strategy != 0) return fail(err, KVCHECK_NOT_FOUND, "no such strategy");
  c = calloc(1, sizeof *c);
  if (c == NULL) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  c->initial = config->initial_capacity > 0 ? config->initial_capacity : 4;
  *out = c;
  return KVCHECK_OK;
}

/* Copies tokens [0, n) of every (b, h) row from a buffer of capacity `from` to one of `to`. */
static void copy_rows(const kvcheck_cache* c, const unsigned char* src, int64_t from,
                      unsigned char* dst, int64_t to, int64_t n) {
  int64_t row;
  for (row = 0; row < c->batch * c->heads; ++row) {
    memcpy(dst + row * to * c->dim * c->elem, src + row * from * c->dim * c->elem,
           (size_t)(n * c->dim * c->elem));
  }
}

static int grow(kvcheck_cache* c, int64_t needed, kvcheck_error* err) {
  int64_t capacity = c->capacity > 0 ? c->capacity : c->initial;
  size_t bytes;
  unsigned char *k, *v;
  int64_t keep = c->length;
  while (capacity < needed) capacity *= 2;
  bytes = (size_t)(c->batch * c->heads * capacity * c->dim * c->elem);
  k = malloc(bytes);
  v = malloc(bytes);
  if (k == NULL || v == NULL) {
    free(k);
    free(v);
    return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory growing the cache");
  }
  if (strcmp(bug(), "grow_drops_tail") == 0 && keep > 0) keep -= 1;
  if (c->k != NULL) {
    copy_rows(c, c->k, c->capacity, k, capacity, keep);
    copy_rows(c, c->v, c->capacity, v, capacity, keep);
    c->bytes_growth_copied += 2 * c->batch * c->heads * keep * c->dim * c->elem;
  }
  free(c->k);
  free(c->v);
  c->k = k;
  c->v = v;
  c->capacity = capacity;
  c->bytes_allocated += 2 * (int64_t)bytes;
  return KVCHECK_OK;
}

static void show(kvcheck_cache* c, kvcheck_view* out) {
  kvcheck_tensor* t[2];
  int i;
  t[0] = &out->k;
  t[1] = &out->v;
  for (i = 0; i < 2; ++i) {
    t[i]->data = i == 0 ? c->k : c->v;
    t[i]->dtype = c->dtype;
    t[i]->rank = 4;
    t[i]->shape[0] = c->batch;
    t[i]->shape[1] = c->heads;
    t[i]->shape[2] = c->length;
    t[i]->shape[3] = c->dim;
    /* A view of the first `length` slots of the buffer: strides of the full capacity. */
    t[i]->strides[0] = c->heads * c->capacity * c->dim;
    t[i]->strides[1] = c->capacity * c->dim;
    t[i]->strides[2] = c->dim;
    t[i]->strides[3] = 1;
  }
  out->positions = NULL; /* slot j holds position j */
}

/* A caller's mistake the cache must refuse, keeping its state: k and v that differ, or another
 * B, KH, D or dtype than the first append since the reset fixed. */
static int refuse(const kvcheck_cache* c, const kvcheck_tensor* k, const kvcheck_tensor* v,
                  kvcheck_error* err) {
  int d;
  for (d = 0; d < 4; ++d) {
    if (k->shape[d] != v->shape[d]) {
      return fail(err, KVCHECK_INVALID_ARGUMENT, "k and v differ in shape");
    }
  }
  if (k->dtype != v->dtype) return fail(err, KVCHECK_INVALID_ARGUMENT, "k and v differ in dtype");
  if (c->k == NULL && c->length == 0) return 0; /* the first append fixes the shape */
  if (strcmp(bug(), "batch_change_rebuilds") == 0) return 0;
  if (k->shape[0] != c->batch || k->shape[1] != c->heads || k->shape[3] != c->dim ||
      k->dtype != c->dtype) {
    return fail(err, KVCHECK_FAILED_PRECONDITION,
                "B, KH, D or dtype differ from the first append since the reset");
  }
  return 0;
}

static int32_t cache_append(kvcheck_cache* c, const kvcheck_tensor* k, const kvcheck_tensor* v,
                            const uint8_t* active, kvcheck_view* out, kvcheck_error* err) {
  int64_t b, h, s, seq = k->shape[2];
  (void)active; /* not a per-row strategy: kvcheck never passes flags */
  if (refuse(c, k, v, err)) return err->code;
  if (strcmp(bug(), "batch_change_rebuilds") == 0 && c->k != NULL &&
      (k->shape[0] != c->batch || k->shape[1] != c->heads || k->shape[3] != c->dim ||
       k->dtype != c->dtype)) {
    free(c->k);
    free(c->v);
    c->k = c->v = NULL;
    c->capacity = 0; /* and the length stays: the next tokens go after it */
    c->batch = k->shape[0];
    c->heads = k->shape[1];
    c->dim = k->shape[3];
    c->dtype = k->dtype;
    c->elem = k->dtype == KVCHECK_DTYPE_F32 ? 4 : 2;
  }
  if (c->k == NULL && c->length == 0) {
    c->batch = k->shape[0];
    c->heads = k->shape[1];
    c->dim = k->shape[3];
    c->dtype = k->dtype;
    c->elem = k->dtype == KVCHECK_DTYPE_F32 ? 4 : 2;
  }
  if (c->length + seq > c->capacity) {
    int status = grow(c, c->length + seq, err);
    if (status != KVCHECK_OK) return status;
  }
  /* The input may be any strided view: copy element by element. */
  for (b = 0; b < c->batch; ++b) {
    for (h = 0; h < c->heads; ++h) {
      for (s = 0; s < seq; ++s) {
        const int64_t at = ((b * c->heads + h) * c->capacity + c->length + s) * c->dim;
        int64_t d;
        for (d = 0; d < c->dim; ++d) {
          const int64_t from_k = b * k->strides[0] + h * k->strides[1] + s * k->strides[2] +
                                 d * k->strides[3];
          const int64_t from_v = b * v->strides[0] + h * v->strides[1] + s * v->strides[2] +
                                 d * v->strides[3];
          memcpy(c->k + (at + d) * c->elem, (const unsigned char*)k->data + from_k * c->elem,
                 (size_t)c->elem);
          memcpy(c->v + (at + d) * c->elem, (const unsigned char*)v->data + from_v * c->elem,
                 (size_t)c->elem);
        }
      }
    }
  }
  c->length += seq;
  show(c, out);
  return KVCHECK_OK;
}

static int32_t cache_view(kvcheck_cache* c, kvcheck_view* out, kvcheck_error* err) {
  (void)err;
  show(c, out);
  return KVCHECK_OK;
}

static int32_t cache_fork(kvcheck_cache* c, kvcheck_cache** out, kvcheck_error* err) {
  kvcheck_cache* copy = malloc(sizeof *copy);
  if (copy == NULL) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  *copy = *c;
  if (c->k != NULL && strcmp(bug(), "fork_shares_buffer") != 0) {
    const size_t bytes = (size_t)(c->batch * c->heads * c->capacity * c->dim * c->elem);
    copy->k = malloc(bytes);
    copy->v = malloc(bytes);
    if (copy->k == NULL || copy->v == NULL) {
      free(copy->k);
      free(copy->v);
      free(copy);
      return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
    }
    memcpy(copy->k, c->k, bytes);
    memcpy(copy->v, c->v, bytes);
  }
  *out = copy;
  return KVCHECK_OK;
}

static void cache_reset(kvcheck_cache* c) {
  free(c->k);
  free(c->v);
  c->k = c->v = NULL;
  c->capacity = c->length = 0;
}

static void cache_stats(kvcheck_cache* c, kvcheck_cache_stats* out) {
  out->capacity = c->capacity;
  out->bytes_allocated = c->bytes_allocated;
  out->bytes_held = c->k == NULL ? 0 : 2 * c->batch * c->heads * c->capacity * c->dim * c->elem;
  out->bytes_growth_copied = c->bytes_growth_copied;
  out->bytes_other_copied = 0;
}

static void cache_destroy(kvcheck_cache* c) {
  /* With the fork bug two caches share buffers: leak rather than free twice. */
  if (strcmp(bug(), "fork_shares_buffer") != 0) cache_reset(c);
  free(c);
}

/* ---- Attention --------------------------------------------------------------------------- */

/* An element of an f32 tensor (the kernel declares f32 only). */
static float load(const kvcheck_tensor* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return ((const float*)t->data)[i0 * t->strides[0] + i1 * t->strides[1] + i2 * t->strides[2] +
                                 i3 * t->strides[3]];
}

static int32_t attend(int32_t kernel, const kvcheck_tensor* q, const kvcheck_tensor* k,
                      const kvcheck_tensor* v, const kvcheck_attention_params* p,
                      kvcheck_tensor* out, kvcheck_error* err) {
  const int64_t B = q->shape[0], H = q->shape[1], Sq = q->shape[2], D = q->shape[3];
  const int64_t KH = k->shape[1], Skv = k->shape[2];
  const float scale = p->has_scale ? p->scale : 1.0f / sqrtf((float)D);
  int64_t b, h, i, j, d;
  float* scores;
  if (kernel != 0) return fail(err, KVCHECK_NOT_FOUND, "no such kernel");
  /* An empty output (B, H, Sq or D of 0) has nothing to compute, whatever Skv is: kvcheck
   * sends such calls with up to 2^40 keys (views of nothing), so no buffer sized by Skv. */
  if (B == 0 || H == 0 || Sq == 0 || D == 0) return KVCHECK_OK;
  scores = malloc(sizeof(float) * (size_t)(Skv > 0 ? Skv : 1));
  if (scores == NULL) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  for (b = 0; b < B; ++b) {
    for (h = 0; h < H; ++h) {
      const int64_t kh = h / (H / KH);
      for (i = 0; i < Sq; ++i) {
        const int64_t qpos = strcmp(bug(), "causal_top_left") == 0 ? i : Skv - Sq + i;
        float max = -INFINITY, sum = 0.0f;
        int any = 0;
        /* A query before position 0 (Sq > Skv) is an empty slot: its row is 0. */
        for (j = 0; j < Skv && qpos >= 0; ++j) {
          float s = 0.0f;
          if (p->causal && j > qpos) {
            scores[j] = -INFINITY;
            continue;
          }
          for (d = 0; d < D; ++d) s += load(q, b, h, i, d) * load(k, b, kh, j, d);
          scores[j] = s * scale;
          any = 1;
          if (scores[j] > max || isnan(scores[j])) max = scores[j];
        }
        for (d = 0; d < D; ++d) {
          float acc = 0.0f;
          if (any) {
            for (j = 0; j < Skv; ++j) {
              if (p->causal && j > qpos) continue; /* never read a masked key's v */
              acc += expf(scores[j] - max) * load(v, b, kh, j, d);
            }
          }
          ((float*)out->data)[((b * H + h) * Sq + i) * D + d] = acc;
        }
        if (any) {
          for (j = 0; j < Skv; ++j) {
            if (!(p->causal && j > qpos)) sum += expf(scores[j] - max);
          }
          for (d = 0; d < D; ++d) ((float*)out->data)[((b * H + h) * Sq + i) * D + d] /= sum;
        }
      }
    }
  }
  free(scores);
  return KVCHECK_OK;
}

/* ---- The table --------------------------------------------------------------------------- */

static const kvcheck_strategy_info kStrategies[] = {
    {"c_growable", "contiguous buffer, doubled when full",
     KVCHECK_STRATEGY_FORK | KVCHECK_STRATEGY_RESET | KVCHECK_STRATEGY_STATS |
         KVCHECK_STRATEGY_AMORTIZED_GROWTH,
     (1u << KVCHECK_DTYPE_F32) | (1u << KVCHECK_DTYPE_F16) | (1u << KVCHECK_DTYPE_BF16),
     {4, 0, 0}},
};

static const kvcheck_kernel_info kKernels[] = {
    {"c_naive", "two-pass softmax in f32, causal, GQA", KVCHECK_FEATURE_CAUSAL | KVCHECK_FEATURE_GQA,
     1u << KVCHECK_DTYPE_F32},
};

static const kvcheck_engine kEngine = {
    .abi_version = KVCHECK_ENGINE_ABI_VERSION,
    .struct_size = sizeof(kvcheck_engine),
    .name = "minimal-c",
    .num_strategies = 1,
    .strategies = kStrategies,
    .num_kernels = 1,
    .kernels = kKernels,
    .cache_create = cache_create,
    .cache_append = cache_append,
    .cache_view = cache_view,
    .cache_fork = cache_fork,
    .cache_reset = cache_reset,
    .cache_stats = cache_stats,
    .cache_destroy = cache_destroy,
    .attend = attend,
};

const kvcheck_engine* kvcheck_engine_v1(void) { return &kEngine; }
