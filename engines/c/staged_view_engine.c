/* staged_view_engine.c: a cache plug-in that reuses one buffer per cache for every view it
 * returns (src/engine/kvcheck_engine.h allows it: a view need only stay valid and unchanged
 * until the next call on the same cache).
 *
 * Strategy "c_staged" keeps K and V in a growable (B, KH, capacity, D) store, and every append
 * or view first overwrites its staging buffer with NaN (all bits set, NaN in f32, f16 and bf16)
 * and then copies the visible tokens into it, in place, into the half the last view did not
 * use; a fork (of its parent) and a reset poison it too; a fork gets a staging buffer of its
 * own. Engines that gather a ring, dequantize or linearize a
 * block table into a scratch buffer return views like these. The tests around it check that
 * every path between kvcheck and an engine (the plug-in in process, and --isolate through the
 * host process) copies what it keeps from a view before its next call on that cache: a
 * transport or adapter that held a view across calls would show NaN or another call's tokens
 * and report a correct engine broken.
 *
 *     cc -O2 -shared -fPIC -I. -o /tmp/libstaged_view_engine.so engines/c/staged_view_engine.c
 *     kvcheck --engine=/tmp/libstaged_view_engine.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/engine/kvcheck_engine.h"

static int fail(kvcheck_error* err, int32_t code, const char* message) {
  err->code = code;
  snprintf(err->message, KVCHECK_MESSAGE_SIZE, "%s", message);
  return code;
}

struct kvcheck_cache {
  int64_t batch, heads, dim, capacity, length;
  int32_t dtype, elem;
  unsigned char *k, *v;              /* the store, (B, KH, capacity, D) */
  unsigned char *stage_k, *stage_v;  /* the views, (B, KH, length, D), rewritten every call */
  size_t stage_bytes;                /* what each staging buffer holds (kept over a reset,
                                        whose next shape may differ) */
  int64_t calls;                     /* views staged: the view alternates between two halves */
};

static size_t row_bytes(const kvcheck_cache* c, int64_t tokens) {
  return (size_t)(tokens * c->dim * c->elem);
}

static int32_t cache_create(int32_t strategy, const kvcheck_cache_config* config,
                            kvcheck_cache** out, kvcheck_error* err) {
  kvcheck_cache* c;
  (void)config;
  if (strategy != 0) return fail(err, KVCHECK_NOT_FOUND, "no such strategy");
  c = calloc(1, sizeof *c);
  if (c == NULL) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  *out = c;
  return KVCHECK_OK;
}

/* Buffers of `tokens` per row for `rows` (B * KH) rows, the first `keep` of each copied from
 * `old` (of `old_tokens` per row). */
static unsigned char* regrow(const kvcheck_cache* c, unsigned char* old, int64_t old_tokens,
                             int64_t tokens, int64_t keep) {
  const int64_t rows = c->batch * c->heads;
  unsigned char* fresh = malloc(rows * row_bytes(c, tokens) + 1);
  int64_t r;
  if (fresh == NULL) return NULL;
  for (r = 0; r < rows && old != NULL; ++r) {
    memcpy(fresh + r * row_bytes(c, tokens), old + r * row_bytes(c, old_tokens),
           row_bytes(c, keep));
  }
  return fresh;
}

static int ensure(kvcheck_cache* c, int64_t needed, kvcheck_error* err) {
  int64_t capacity = c->capacity > 0 ? c->capacity : 4;
  unsigned char *k, *v;
  if (needed <= c->capacity) return KVCHECK_OK;
  while (capacity < needed) capacity *= 2;
  k = regrow(c, c->k, c->capacity, capacity, c->length);
  v = regrow(c, c->v, c->capacity, capacity, c->length);
  if (k == NULL || v == NULL) {
    free(k);
    free(v);
    return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory growing the cache");
  }
  free(c->k);
  free(c->v);
  c->k = k;
  c->v = v;
  c->capacity = capacity;
  return KVCHECK_OK;
}

/* Every call on a cache ends the life of its last view: poison it. */
static void poison(kvcheck_cache* c) {
  if (c->stage_k != NULL) {
    memset(c->stage_k, 0xff, c->stage_bytes);
    memset(c->stage_v, 0xff, c->stage_bytes);
  }
}

/* Rewrites the staging buffers in place (NaN first, then the visible tokens) and points the
 * view at them. */
static int stage(kvcheck_cache* c, kvcheck_view* out, kvcheck_error* err) {
  const int64_t rows = c->batch * c->heads;
  kvcheck_tensor* t[2];
  int64_t r;
  int i;
  /* Two halves, the view in one and NaN in the other, alternating from one call to the next:
   * a view kept past the next call reads NaN, whatever its shape. */
  const size_t half = rows * row_bytes(c, c->length);
  const size_t offset = (size_t)(c->calls++ % 2) * half;
  if (2 * half + 1 > c->stage_bytes) {
    unsigned char* k = malloc(2 * half + 1);
    unsigned char* v = malloc(2 * half + 1);
    if (k == NULL || v == NULL) {
      free(k);
      free(v);
      return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory staging the view");
    }
    free(c->stage_k);
    free(c->stage_v);
    c->stage_k = k;
    c->stage_v = v;
    c->stage_bytes = 2 * half + 1;
  }
  poison(c);
  for (r = 0; r < rows; ++r) {
    memcpy(c->stage_k + offset + r * row_bytes(c, c->length),
           c->k + r * row_bytes(c, c->capacity), row_bytes(c, c->length));
    memcpy(c->stage_v + offset + r * row_bytes(c, c->length),
           c->v + r * row_bytes(c, c->capacity), row_bytes(c, c->length));
  }
  t[0] = &out->k;
  t[1] = &out->v;
  for (i = 0; i < 2; ++i) {
    t[i]->data = (i == 0 ? c->stage_k : c->stage_v) + offset;
    t[i]->dtype = c->dtype;
    t[i]->rank = 4;
    t[i]->shape[0] = c->batch;
    t[i]->shape[1] = c->heads;
    t[i]->shape[2] = c->length;
    t[i]->shape[3] = c->dim;
    t[i]->strides[0] = c->heads * c->length * c->dim;
    t[i]->strides[1] = c->length * c->dim;
    t[i]->strides[2] = c->dim;
    t[i]->strides[3] = 1;
  }
  out->positions = NULL;
  return KVCHECK_OK;
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
  if (k->shape[0] != c->batch || k->shape[1] != c->heads || k->shape[3] != c->dim ||
      k->dtype != c->dtype) {
    return fail(err, KVCHECK_FAILED_PRECONDITION,
                "B, KH, D or dtype differ from the first append since the reset");
  }
  return 0;
}

static int32_t cache_append(kvcheck_cache* c, const kvcheck_tensor* k, const kvcheck_tensor* v,
                            const uint8_t* active, kvcheck_view* out, kvcheck_error* err) {
  const int64_t seq = k->shape[2];
  int64_t b, h, s, d;
  int status;
  (void)active;
  if (refuse(c, k, v, err)) return err->code;
  if (c->length == 0 && c->k == NULL) {
    c->batch = k->shape[0];
    c->heads = k->shape[1];
    c->dim = k->shape[3];
    c->dtype = k->dtype;
    c->elem = k->dtype == KVCHECK_DTYPE_F32 ? 4 : 2;
  }
  status = ensure(c, c->length + seq, err);
  if (status != KVCHECK_OK) return status;
  for (b = 0; b < c->batch; ++b) {
    for (h = 0; h < c->heads; ++h) {
      for (s = 0; s < seq; ++s) {
        const int64_t at = ((b * c->heads + h) * c->capacity + c->length + s) * c->dim;
        for (d = 0; d < c->dim; ++d) {
          const int64_t from_k =
              b * k->strides[0] + h * k->strides[1] + s * k->strides[2] + d * k->strides[3];
          const int64_t from_v =
              b * v->strides[0] + h * v->strides[1] + s * v->strides[2] + d * v->strides[3];
          memcpy(c->k + (at + d) * c->elem, (const unsigned char*)k->data + from_k * c->elem,
                 (size_t)c->elem);
          memcpy(c->v + (at + d) * c->elem, (const unsigned char*)v->data + from_v * c->elem,
                 (size_t)c->elem);
        }
      }
    }
  }
  c->length += seq;
  return stage(c, out, err);
}

static int32_t cache_view(kvcheck_cache* c, kvcheck_view* out, kvcheck_error* err) {
  return stage(c, out, err);
}

static int32_t cache_fork(kvcheck_cache* c, kvcheck_cache** out, kvcheck_error* err) {
  kvcheck_cache* copy = calloc(1, sizeof *copy);
  poison(c);
  if (copy == NULL) return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
  *copy = *c;
  copy->stage_k = copy->stage_v = NULL;  /* its own staging, made by its first view */
  copy->stage_bytes = 0;
  if (c->k != NULL) {
    copy->k = regrow(c, c->k, c->capacity, c->capacity, c->length);
    copy->v = regrow(c, c->v, c->capacity, c->capacity, c->length);
    if (copy->k == NULL || copy->v == NULL) {
      free(copy->k);
      free(copy->v);
      free(copy);
      return fail(err, KVCHECK_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  *out = copy;
  return KVCHECK_OK;
}

static void cache_reset(kvcheck_cache* c) {
  poison(c);
  free(c->k);
  free(c->v);
  c->k = c->v = NULL;
  c->capacity = c->length = 0;
}

static void cache_destroy(kvcheck_cache* c) {
  cache_reset(c);
  free(c->stage_k);
  free(c->stage_v);
  free(c);
}

static const kvcheck_strategy_info kStrategies[] = {
    {"c_staged", "growable store; every view rewritten in place into one staging buffer",
     KVCHECK_STRATEGY_FORK | KVCHECK_STRATEGY_RESET,
     (1u << KVCHECK_DTYPE_F32) | (1u << KVCHECK_DTYPE_F16) | (1u << KVCHECK_DTYPE_BF16),
     {4, 0, 0}},
};

static const kvcheck_engine kEngine = {
    .abi_version = KVCHECK_ENGINE_ABI_VERSION,
    .struct_size = sizeof(kvcheck_engine),
    .name = "staged-view-c",
    .num_strategies = 1,
    .strategies = kStrategies,
    .num_kernels = 0,
    .kernels = NULL,
    .cache_create = cache_create,
    .cache_append = cache_append,
    .cache_view = cache_view,
    .cache_fork = cache_fork,
    .cache_reset = cache_reset,
    .cache_stats = NULL,
    .cache_destroy = cache_destroy,
    .attend = NULL,
};

const kvcheck_engine* kvcheck_engine_v1(void) { return &kEngine; }
