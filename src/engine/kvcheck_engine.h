/* File: kvcheck_engine.h
 * The kvcheck engine plug-in ABI, version 1: what a shared library implements so that kvcheck
 * can check its KV caches and attention kernels in process (`kvcheck --engine=libfoo.so`),
 * or, through kvcheck_engine_host (cli/), in a child process over the protocol of
 * src/engine/PROTOCOL.md. Plain C (C89 types plus <stdint.h>): implementable from C, C++,
 * Rust (`#[repr(C)]`), Zig or anything else with a C FFI.
 *
 * The library exports one function:
 *
 *     const kvcheck_engine* kvcheck_engine_v1(void);
 *
 * returning a table that lives as long as the library is loaded. kvcheck checks
 * `abi_version == KVCHECK_ENGINE_ABI_VERSION` and reads only the first `struct_size` bytes
 * (fields are only ever appended, so an engine built against an older header stays loadable).
 *
 * What kvcheck checks is its cache and attention contract (docs/contract.md), the same as
 * for its own strategies and kernels:
 *   - caches: positions count tokens since the last reset; a full cache shows every token
 *     since the reset, a window-W cache the last W; an append returns the visible K and V
 *     (B, KH, L, D) with the position of every slot; a fork is independent of its parent; a
 *     reset forgets everything; an error changes nothing. Contents are compared bit for bit.
 *   - attention: q (B, H, Sq, D), k and v (B, KH, Skv, D); GQA h -> h / (H / KH); default
 *     positions bottom-right (query i at Skv - Sq + i); score scale * <q, k> (default
 *     1/sqrt(D)), softcap c * tanh(s / c), ALiBi slope * (kpos - qpos), additive mask; causal
 *     kpos <= qpos; window qpos - kpos < W; softmax over the allowed keys; a row with no
 *     allowed key is 0; NaN never hidden. Compared with a high-precision reference within a
 *     derived per-element bound (f32 accumulation).
   - steppers (a fused append-then-attend, the seam of most model code): the attention of
 *     each step over the history kvcheck keeps, within the reference's bound;
 *   - models (token ids to logits): the generation laws, with the model as its own oracle.
 * An engine declares what it implements at each level (strategies, kernels, steppers,
 * models, with their flags and dtypes); kvcheck then generates only operations inside that.
 *
 * Tensors are passed as strided descriptors, never copied on the way in: `data` points at
 * element (0, 0, 0, 0), strides are in elements and non-negative. Inputs kvcheck passes
 * (k, v, q, mask) may be non-contiguous views (transposed, narrowed); an engine that needs
 * contiguous input copies it itself. Tensors an engine returns from a cache (a view) may point
 * into the engine's own buffers with any strides; they must stay valid and unchanged until
 * the next call on the same cache object (kvcheck copies what it keeps). Attention output is
 * written into a contiguous tensor kvcheck allocates.
 *
 * Errors: every fallible function returns KVCHECK_OK (0) or one of the codes below and then
 * fills `err->message` (NUL-terminated, at most KVCHECK_MESSAGE_SIZE bytes including the
 * NUL). After an error the object must be exactly as before the call. Calls with malformed
 * tensors (rank other than 4, a zero size) are never made. A cache append whose B, KH, D or
 * dtype differ from those the first append since the creation or the last reset fixed, or
 * whose k and v differ in shape or dtype, is made: as a real caller's bug would be. The
 * engine must refuse it with an error (any code; FAILED_PRECONDITION and INVALID_ARGUMENT are
 * the usual) and keep its state: a cache that silently rebuilds itself for the new shape, or
 * converts the dtype, fails the cache laws.
 *
 * Threads: kvcheck calls an engine from one thread at a time. Crashes: run the engine
 * isolated (kvcheck's default forks every case) and a crash, abort or hang becomes a failing
 * case with the operation sequence that led to it.
 */
#ifndef KVCHECK_SRC_ENGINE_KVCHECK_ENGINE_H_
#define KVCHECK_SRC_ENGINE_KVCHECK_ENGINE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVCHECK_ENGINE_ABI_VERSION 1
#define KVCHECK_MESSAGE_SIZE 1024

/* Element types (the values of kvcheck_tensor.dtype). */
enum {
  KVCHECK_DTYPE_F32 = 0,  /* IEEE binary32 */
  KVCHECK_DTYPE_F16 = 1,  /* IEEE binary16 */
  KVCHECK_DTYPE_BF16 = 2  /* bfloat16: the high 16 bits of a binary32 */
};

/* Status codes (the numbering of absl::StatusCode / google.rpc.Code). */
enum {
  KVCHECK_OK = 0,
  KVCHECK_INVALID_ARGUMENT = 3,     /* the input violates the contract */
  KVCHECK_NOT_FOUND = 5,            /* no strategy or kernel of that index */
  KVCHECK_RESOURCE_EXHAUSTED = 8,   /* over a storage budget, or an allocation failed */
  KVCHECK_FAILED_PRECONDITION = 9,  /* B, KH, D or dtype differ from the first append's */
  KVCHECK_OUT_OF_RANGE = 11,        /* a row would pass the engine's sequence limit */
  KVCHECK_UNIMPLEMENTED = 12,       /* an operation the engine does not offer */
  KVCHECK_INTERNAL = 13             /* anything else */
};

typedef struct kvcheck_error {
  int32_t code;
  char message[KVCHECK_MESSAGE_SIZE];
} kvcheck_error;

typedef struct kvcheck_tensor {
  void* data;          /* element (0, 0, 0, 0); may be NULL when a dimension is 0 */
  int32_t dtype;       /* KVCHECK_DTYPE_* */
  int32_t rank;        /* 4 for every tensor of this ABI */
  int64_t shape[4];
  int64_t strides[4];  /* in elements, >= 0 */
} kvcheck_tensor;

/* ---- Caches ------------------------------------------------------------------------------ */

/* Strategy flags (kvcheck_strategy_info.flags). */
enum {
  /* The visible set is the last `window` tokens (else every token since the reset). */
  KVCHECK_STRATEGY_WINDOWED = 1u << 0,
  /* append takes `active` flags: inactive batch rows neither write nor advance. */
  KVCHECK_STRATEGY_PER_ROW = 1u << 1,
  KVCHECK_STRATEGY_FORK = 1u << 2,   /* cache_fork is implemented */
  KVCHECK_STRATEGY_RESET = 1u << 3,  /* cache_reset is implemented */
  /* cache_stats reports capacity and byte counters as described at kvcheck_cache_stats. */
  KVCHECK_STRATEGY_STATS = 1u << 4,
  /* With STATS: growth copies amortised O(1) bytes per appended byte (<= 3x). */
  KVCHECK_STRATEGY_AMORTIZED_GROWTH = 1u << 5,
  /* With STATS: kvcheck_cache_config.max_bytes is enforced (RESOURCE_EXHAUSTED past it),
   * and an append refused only when its tokens do not fit: W slots per row for a window
   * strategy, else the longest row rounded up to 16 tokens, in every row (growth clamped to
   * the budget). */
  KVCHECK_STRATEGY_MAX_BYTES = 1u << 6
};

typedef struct kvcheck_cache_config {
  int64_t initial_capacity;  /* slots the first append allocates (preallocating strategies) */
  int64_t window;            /* W >= 1 for windowed strategies, else 0 */
  int64_t max_bytes;         /* storage budget in bytes; 0: the engine's own limit */
} kvcheck_cache_config;

typedef struct kvcheck_strategy_info {
  const char* name;     /* [a-z0-9_./-]+, unique within the engine */
  const char* summary;  /* one line */
  uint32_t flags;       /* KVCHECK_STRATEGY_* */
  uint32_t dtypes;      /* bit (1 << KVCHECK_DTYPE_*) for every dtype the strategy takes */
  kvcheck_cache_config default_config;
} kvcheck_strategy_info;

/* What a cache shows: the visible K and V, (B, KH, L, D), and the position of every slot. */
typedef struct kvcheck_view {
  kvcheck_tensor k;
  kvcheck_tensor v;
  /* (B, L) row-major absolute positions, -1 for an empty slot; NULL when slot j holds
   * position j in every row (no wrap, no per-row lengths). */
  const int64_t* positions;
} kvcheck_view;

/* Totals since the cache was made (a fork starts from its parent's; reset keeps them but
 * bytes_held), checked by the cache state machine with the laws of CacheCounters in
 * src/cache/kv_cache.h: they never go down; append (or fork, in the new cache) copies only
 * into buffers allocated then; view, a failed append and fork (in the
 * cache forked) change none; with
 * AMORTIZED_GROWTH and no fork since reset, only growth (a larger capacity) copies or
 * replaces buffers. */
typedef struct kvcheck_cache_stats {
  int64_t capacity;             /* slots per row held now: 0 when empty, W for a window */
  int64_t bytes_allocated;      /* every buffer ever allocated, K and V */
  int64_t bytes_held;           /* buffers held now (0 when empty) */
  int64_t bytes_growth_copied;  /* old contents copied into grown buffers */
  int64_t bytes_other_copied;   /* any other copy (concatenation, copy-on-write) */
} kvcheck_cache_stats;

typedef struct kvcheck_cache kvcheck_cache; /* the engine's own cache object */

/* ---- Attention --------------------------------------------------------------------------- */

/* Kernel flags (kvcheck_kernel_info.features): the parts of the contract it implements. */
enum {
  KVCHECK_FEATURE_SCALE = 1u << 0,      /* a custom scale */
  KVCHECK_FEATURE_SOFTCAP = 1u << 1,    /* softcap > 0 */
  KVCHECK_FEATURE_ALIBI = 1u << 2,      /* ALiBi slopes */
  KVCHECK_FEATURE_CAUSAL = 1u << 3,     /* causal masking by positions */
  KVCHECK_FEATURE_WINDOW = 1u << 4,     /* sliding window */
  KVCHECK_FEATURE_MASK = 1u << 5,       /* an additive f32 mask */
  KVCHECK_FEATURE_POSITIONS = 1u << 6,  /* explicit q / kv positions, -1 = empty slot */
  KVCHECK_FEATURE_GQA = 1u << 7         /* H a multiple of KH */
};

typedef struct kvcheck_kernel_info {
  const char* name;
  const char* summary;
  uint32_t features;  /* KVCHECK_FEATURE_* */
  uint32_t dtypes;    /* bit (1 << KVCHECK_DTYPE_*) */
} kvcheck_kernel_info;

typedef struct kvcheck_attention_params {
  int32_t has_scale;            /* 0: scale = 1/sqrt(D) */
  float scale;
  float softcap;                /* 0: off */
  int32_t causal;               /* 0 or 1 */
  int64_t window;               /* 0: off */
  const float* alibi_slopes;    /* NULL, or H slopes */
  const kvcheck_tensor* mask;   /* NULL, or f32 (Bm, Hm, Sq, Skv), Bm in {1, B}, Hm in {1, H} */
  const int64_t* q_positions;   /* NULL, or (B, Sq) row-major */
  const int64_t* kv_positions;  /* NULL, or (B, Skv) row-major */
} kvcheck_attention_params;

/* ---- Fused attention steps --------------------------------------------------------------- */

/* The seam most model code has (a MultiHeadAttention.forward(x, use_cache=True)): a stepper
 * owns its cache; step(q, k_new, v_new) appends k_new and v_new, then returns the causal
 * attention of q over every token since the creation or the last reset:
 *   q (B, H, S, D), k_new and v_new (B, KH, S, D), S >= 1, one dtype; with P the tokens
 *   stepped before, query i has position P + i and sees the keys of positions <= P + i
 *   (WINDOWED: also > P + i - W, so a chunk longer than the window still gives every query
 *   its last W keys), score scale 1/sqrt(D), GQA h -> h / (H / KH) (GQA only; else H == KH),
 *   f32 accumulation; the output is (B, H, S, D) in q's dtype.
 * B, H, KH, D and the dtype are fixed by the first step after the creation or a reset. */
enum {
  KVCHECK_STEPPER_WINDOWED = 1u << 0,  /* keys within the last W positions only */
  KVCHECK_STEPPER_RESET = 1u << 1,     /* stepper_reset is implemented */
  KVCHECK_STEPPER_GQA = 1u << 2        /* H may be a multiple of KH */
};

typedef struct kvcheck_stepper_info {
  const char* name;
  const char* summary;
  uint32_t flags;   /* KVCHECK_STEPPER_* */
  uint32_t dtypes;  /* bit (1 << KVCHECK_DTYPE_*) */
  int64_t window;   /* the default W (>= 1) of a WINDOWED stepper, else 0 */
} kvcheck_stepper_info;

typedef struct kvcheck_stepper kvcheck_stepper; /* the engine's own object */

/* ---- Models ------------------------------------------------------------------------------ */

/* Token ids in, logits out, with and without the model's own cache. kvcheck checks the
 * generation laws with the model as the oracle of itself: cached logits == the logits of a
 * recomputation without the cache, any chunking of a prompt == one chunk, reset == fresh. */
enum {
  KVCHECK_MODEL_RESET = 1u << 0,  /* model_reset is implemented */
  KVCHECK_MODEL_BATCH = 1u << 1   /* B > 1 rows per forward (else B == 1) */
};

typedef struct kvcheck_model_info {
  const char* name;
  const char* summary;
  uint32_t flags;       /* KVCHECK_MODEL_* */
  int32_t vocab_size;   /* V >= 1: token ids in [0, V), logits (B, S, V) */
  int64_t max_tokens;   /* tokens per row since a reset the model takes (its context); >= 1 */
  /* Logits agree when |a - b| <= tolerance * (1 + max_v |b_v|) per row; 0: 1e-3. */
  double tolerance;
} kvcheck_model_info;

typedef struct kvcheck_model kvcheck_model; /* the engine's own object */

/* ---- The engine -------------------------------------------------------------------------- */

typedef struct kvcheck_engine {
  uint32_t abi_version;  /* KVCHECK_ENGINE_ABI_VERSION */
  uint32_t struct_size;  /* sizeof(kvcheck_engine) as the engine was built */
  const char* name;      /* the engine's name in reports */

  int32_t num_strategies;
  const kvcheck_strategy_info* strategies;
  int32_t num_kernels;
  const kvcheck_kernel_info* kernels;

  /* A new empty cache of strategy `strategy` (an index into `strategies`). */
  int32_t (*cache_create)(int32_t strategy, const kvcheck_cache_config* config,
                          kvcheck_cache** out, kvcheck_error* err);
  /* Appends S = k->shape[2] tokens ((B, KH, S, D), same shape and dtype for k and v) to every
   * batch row, or to the rows with active[b] != 0 when `active` is not NULL (PER_ROW only),
   * and returns the visible set in *out. S >= 1. */
  int32_t (*cache_append)(kvcheck_cache* cache, const kvcheck_tensor* k,
                          const kvcheck_tensor* v, const uint8_t* active, kvcheck_view* out,
                          kvcheck_error* err);
  /* The visible set without appending. Only called after a successful append since the
   * creation or the last reset. */
  int32_t (*cache_view)(kvcheck_cache* cache, kvcheck_view* out, kvcheck_error* err);
  /* An independent copy (FORK only; NULL otherwise). */
  int32_t (*cache_fork)(kvcheck_cache* cache, kvcheck_cache** out, kvcheck_error* err);
  /* Forget everything (RESET only; NULL otherwise). */
  void (*cache_reset)(kvcheck_cache* cache);
  /* Storage counters (STATS only; NULL otherwise). */
  void (*cache_stats)(kvcheck_cache* cache, kvcheck_cache_stats* out);
  void (*cache_destroy)(kvcheck_cache* cache);

  /* Attention with kernel `kernel` (an index into `kernels`) into `out`, a contiguous
   * (B, H, Sq, D) tensor in the dtype of q. NULL when num_kernels is 0. */
  int32_t (*attend)(int32_t kernel, const kvcheck_tensor* q, const kvcheck_tensor* k,
                    const kvcheck_tensor* v, const kvcheck_attention_params* params,
                    kvcheck_tensor* out, kvcheck_error* err);

  /* ---- Appended in revision 2 of ABI 1: read only when struct_size covers them. ---- */

  /* Steppers (all NULL when num_steppers is 0). */
  int32_t num_steppers;
  const kvcheck_stepper_info* steppers;
  /* A new stepper with window `window` (>= 1 for WINDOWED, else 0). */
  int32_t (*stepper_create)(int32_t stepper, int64_t window, kvcheck_stepper** out,
                            kvcheck_error* err);
  /* One step (see above) into `out`, a contiguous (B, H, S, D) tensor in q's dtype. */
  int32_t (*stepper_step)(kvcheck_stepper* stepper, const kvcheck_tensor* q,
                          const kvcheck_tensor* k_new, const kvcheck_tensor* v_new,
                          kvcheck_tensor* out, kvcheck_error* err);
  void (*stepper_reset)(kvcheck_stepper* stepper);  /* RESET only; NULL otherwise */
  void (*stepper_destroy)(kvcheck_stepper* stepper);

  /* Models (all NULL when num_models is 0). */
  int32_t num_models;
  const kvcheck_model_info* models;
  int32_t (*model_create)(int32_t model, kvcheck_model** out, kvcheck_error* err);
  /* tokens: (batch, seq) row-major ids in [0, V); logits: (batch, seq, V) row-major f32 that
   * kvcheck allocates. use_cache != 0: the tokens continue each row after every token given
   * with the cache since the creation or the last reset (B fixed by the first such call);
   * use_cache == 0: the tokens are a whole sequence from position 0, and the model's cache is
   * neither read nor changed. kvcheck also makes cached calls a caller must not: past
   * max_tokens, another B without a reset, seq == 0. The model refuses the first two with an
   * error (an empty call may also succeed with no logits) and keeps its state. */
  int32_t (*model_forward)(kvcheck_model* model, const int64_t* tokens, int64_t batch,
                           int64_t seq, int32_t use_cache, float* logits, kvcheck_error* err);
  void (*model_reset)(kvcheck_model* model);  /* RESET only; NULL otherwise */
  void (*model_destroy)(kvcheck_model* model);
} kvcheck_engine;

/* The one symbol an engine library exports. */
typedef const kvcheck_engine* (*kvcheck_engine_entry)(void);
#define KVCHECK_ENGINE_ENTRY_NAME "kvcheck_engine_v1"

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* KVCHECK_SRC_ENGINE_KVCHECK_ENGINE_H_ */
