// The ggml peer of bench/attention_benchmark.cc's candle 0.11 table: ggml's CPU attention on
// the same shapes (f32, 9 query heads, 3 KV heads, D = 64) and the same values
// (bench/benchmark_values.h, seeds 1, 2, 3 for q, k, v), three ways:
//   flash_f32     ggml_flash_attn_ext with f32 K/V (what our kernel gets)
//   flash_f16kv   ggml_flash_attn_ext with f16 K/V (llama.cpp's default cache type; converted
//                 once, outside the timing, as a cache would hold them)
//   matmul        ggml_mul_mat(k, q) -> ggml_soft_max_ext(scale, mask) -> ggml_mul_mat(v^T, p):
//                 llama.cpp's path without flash attention. GQA by ggml_mul_mat's broadcast
//                 (query head h reads KV head h / 3, no copy); V stored transposed, as
//                 llama.cpp's non-flash V cache is, so the graph has no transpose copy.
// Each is timed like Google Benchmark times ours: a warm-up that also sizes the iteration
// count (about --min_time seconds per repetition), then the median over --repetitions of the
// mean wall time per iteration; the repetitions of the three paths are interleaved. With
// --check each output is compared once with a double-precision attention computed here (the
// f32 paths must agree to 1e-4; the f16 K/V path's difference is printed, not judged).
//
//   ggml_attention_peer --sq=512 --skv=512 --causal=1 --threads=1
//       [--repetitions=5] [--min_time=0.5] [--check] [--info]
//
// Written for kvcheck from ggml's public headers (ggml.h, ggml-cpu.h); nothing of ggml is in
// this tree. bench/peers/run_ggml_race.sh builds it against the user's ggml checkout.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/benchmark_values.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace {

constexpr int64_t kHeads = 9;
constexpr int64_t kKvHeads = 3;
constexpr int64_t kHeadDim = 64;

struct Options {
  int64_t q_len = 0;
  int64_t kv_len = 0;
  bool causal = false;
  int threads = 1;
  int repetitions = 5;
  double min_time = 0.5;
  bool check = false;
  bool info = false;
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "ggml_attention_peer: %s\nusage: ggml_attention_peer --sq=N --skv=N --causal=0|1 "
               "--threads=N [--repetitions=N] [--min_time=SECONDS] [--check] [--info]\n",
               why.c_str());
  std::exit(2);
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "--check") {
      options.check = true;
    } else if (name == "--info") {
      options.info = true;
    } else if (value.empty()) {
      Usage("unknown or empty flag " + arg);
    } else if (name == "--sq") {
      options.q_len = std::atoll(value.c_str());
    } else if (name == "--skv") {
      options.kv_len = std::atoll(value.c_str());
    } else if (name == "--causal") {
      options.causal = value == "1";
    } else if (name == "--threads") {
      options.threads = std::atoi(value.c_str());
    } else if (name == "--repetitions") {
      options.repetitions = std::atoi(value.c_str());
    } else if (name == "--min_time") {
      options.min_time = std::atof(value.c_str());
    } else {
      Usage("unknown flag " + arg);
    }
  }
  if (options.info && options.q_len == 0) return options;
  if (options.q_len < 1 || options.kv_len < options.q_len || options.threads < 1 ||
      options.repetitions < 1 || options.min_time <= 0) {
    Usage("need --sq >= 1, --skv >= --sq, --threads >= 1, --repetitions >= 1, --min_time > 0");
  }
  return options;
}

// Row-major (heads, len, D) like the benchmark's (1, H, S, D) tensors; in ggml's order of
// dimensions that is [D, len, heads], the layout ggml_flash_attn_ext and ggml_mul_mat take.
struct Inputs {
  std::vector<float> q, k, v;
};

Inputs MakeInputs(const Options& o) {
  return {kvcheck::bench::BenchmarkValues(kHeads * o.q_len * kHeadDim, 1),
          kvcheck::bench::BenchmarkValues(kKvHeads * o.kv_len * kHeadDim, 2),
          kvcheck::bench::BenchmarkValues(kKvHeads * o.kv_len * kHeadDim, 3)};
}

// kvcheck's default positions (bottom-right causal): query i sees keys j <= i + Skv - Sq.
bool Allowed(const Options& o, int64_t i, int64_t j) {
  return !o.causal || j <= i + o.kv_len - o.q_len;
}

// out[h][i][d] = sum_j softmax_j(scale * <q_hi, k_gj>) v_gj over allowed j, g = h / (H / KH),
// in double: the yardstick for the --check line, not a second kernel under test.
std::vector<double> ReferenceAttention(const Options& o, const Inputs& in) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  std::vector<double> out(kHeads * o.q_len * kHeadDim, 0.0), scores(o.kv_len);
  for (int64_t h = 0; h < kHeads; ++h) {
    const int64_t g = h / (kHeads / kKvHeads);
    for (int64_t i = 0; i < o.q_len; ++i) {
      const float* q = &in.q[(h * o.q_len + i) * kHeadDim];
      double max_score = -INFINITY, sum = 0;
      for (int64_t j = 0; j < o.kv_len; ++j) {
        if (!Allowed(o, i, j)) continue;
        const float* k = &in.k[(g * o.kv_len + j) * kHeadDim];
        double dot = 0;
        for (int64_t d = 0; d < kHeadDim; ++d) dot += static_cast<double>(q[d]) * k[d];
        scores[j] = scale * dot;
        max_score = std::max(max_score, scores[j]);
      }
      double* row = &out[(h * o.q_len + i) * kHeadDim];
      for (int64_t j = 0; j < o.kv_len; ++j) {
        if (!Allowed(o, i, j)) continue;
        const double p = std::exp(scores[j] - max_score);
        sum += p;
        const float* v = &in.v[(g * o.kv_len + j) * kHeadDim];
        for (int64_t d = 0; d < kHeadDim; ++d) row[d] += p * v[d];
      }
      for (int64_t d = 0; d < kHeadDim; ++d) row[d] /= sum;
    }
  }
  return out;
}

constexpr double kNotJudged = -1;

// One ggml graph, planned once for the thread pool, computed again and again.
struct Path {
  Path(const char* name, ggml_tensor* out, bool flash_layout, double check_tolerance)
      : name(name), out(out), flash_layout(flash_layout), check_tolerance(check_tolerance) {}

  const char* name;
  ggml_tensor* out;
  bool flash_layout;  // out is [D, H, Sq] (flash) rather than [D, Sq, H] (matmul)
  // Max |out - reference| allowed: well below what a wrong layout or mask gives (~0.1 to 1).
  double check_tolerance;
  ggml_cgraph* graph = nullptr;
  ggml_cplan plan{};
  std::vector<uint8_t> work;
  int64_t iterations = 1;
  std::vector<double> ms_per_iteration;
};

ggml_tensor* F32Tensor(ggml_context* ctx, int64_t d0, int64_t d1, int64_t d2,
                       const std::vector<float>& values) {
  ggml_tensor* t = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d0, d1, d2);
  std::memcpy(t->data, values.data(), ggml_nbytes(t));
  return t;
}

ggml_tensor* F16Tensor(ggml_context* ctx, int64_t d0, int64_t d1, int64_t d2,
                       const std::vector<float>& values) {
  ggml_tensor* t = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, d0, d1, d2);
  ggml_fp32_to_fp16_row(values.data(), static_cast<ggml_fp16_t*>(t->data), ggml_nelements(t));
  return t;
}

// (KH, Skv, D) -> (KH, D, Skv): llama.cpp's transposed V cache.
std::vector<float> TransposeRows(const std::vector<float>& v, int64_t kv_len) {
  std::vector<float> vt(v.size());
  for (int64_t g = 0; g < kKvHeads; ++g) {
    for (int64_t j = 0; j < kv_len; ++j) {
      for (int64_t d = 0; d < kHeadDim; ++d) {
        vt[(g * kHeadDim + d) * kv_len + j] = v[(g * kv_len + j) * kHeadDim + d];
      }
    }
  }
  return vt;
}

// The additive mask [Skv, Sq] (0 or -inf), f16 for flash (which requires it), f32 for softmax;
// none without causality (decode's single query sees every key either way).
ggml_tensor* CausalMask(ggml_context* ctx, const Options& o, ggml_type type) {
  if (!o.causal) return nullptr;
  std::vector<float> mask(o.q_len * o.kv_len);
  for (int64_t i = 0; i < o.q_len; ++i) {
    for (int64_t j = 0; j < o.kv_len; ++j) {
      mask[i * o.kv_len + j] = Allowed(o, i, j) ? 0.0f : -INFINITY;
    }
  }
  return type == GGML_TYPE_F16 ? F16Tensor(ctx, o.kv_len, o.q_len, 1, mask)
                               : F32Tensor(ctx, o.kv_len, o.q_len, 1, mask);
}

std::vector<Path> BuildPaths(ggml_context* ctx, const Options& o, const Inputs& in) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  ggml_tensor* q = F32Tensor(ctx, kHeadDim, o.q_len, kHeads, in.q);
  ggml_tensor* k = F32Tensor(ctx, kHeadDim, o.kv_len, kKvHeads, in.k);
  ggml_tensor* v = F32Tensor(ctx, kHeadDim, o.kv_len, kKvHeads, in.v);
  ggml_tensor* k16 = F16Tensor(ctx, kHeadDim, o.kv_len, kKvHeads, in.k);
  ggml_tensor* v16 = F16Tensor(ctx, kHeadDim, o.kv_len, kKvHeads, in.v);
  ggml_tensor* vt = F32Tensor(ctx, o.kv_len, kHeadDim, kKvHeads, TransposeRows(in.v, o.kv_len));
  ggml_tensor* mask16 = CausalMask(ctx, o, GGML_TYPE_F16);
  ggml_tensor* mask32 = CausalMask(ctx, o, GGML_TYPE_F32);

  ggml_tensor* scores = ggml_mul_mat(ctx, k, q);  // [Skv, Sq, H]
  ggml_tensor* probs = ggml_soft_max_ext(ctx, scores, mask32, scale, /*max_bias=*/0.0f);
  return {
      Path("flash_f32", ggml_flash_attn_ext(ctx, q, k, v, mask16, scale, 0.0f, 0.0f),
           /*flash_layout=*/true, /*check_tolerance=*/1e-4),
      // Reported, not judged: K and V rounded to f16, q rounded to f16 for the dot products,
      // and (one query row at a time, as in decode) an f16 output accumulator, whose error
      // grows with the keys per thread. The f32 path checks the same layout and mask.
      Path("flash_f16kv", ggml_flash_attn_ext(ctx, q, k16, v16, mask16, scale, 0.0f, 0.0f),
           /*flash_layout=*/true, /*check_tolerance=*/kNotJudged),
      Path("matmul", ggml_mul_mat(ctx, vt, probs),  // [D, Sq, H]
           /*flash_layout=*/false, /*check_tolerance=*/1e-4),
  };
}

void Compute(Path& path) {
  if (ggml_graph_compute(path.graph, &path.plan) != GGML_STATUS_SUCCESS) {
    std::fprintf(stderr, "ggml_attention_peer: %s: ggml_graph_compute failed\n", path.name);
    std::exit(1);
  }
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Warm-up (about a fifth of min_time, at least 3 runs), which also sets the iteration count.
void WarmUp(Path& path, double min_time) {
  const auto start = std::chrono::steady_clock::now();
  int64_t runs = 0;
  while (runs < 3 || MsSince(start) < 200.0 * min_time) {
    Compute(path);
    ++runs;
  }
  const double ms_per_run = MsSince(start) / runs;
  path.iterations = std::max<int64_t>(1, std::llround(1000.0 * min_time / ms_per_run));
}

void Repetition(Path& path) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < path.iterations; ++i) Compute(path);
  path.ms_per_iteration.push_back(MsSince(start) / path.iterations);
}

// Max |ggml's output - reference|, read in the path's layout; false if above the tolerance.
bool CheckAgainstReference(const Path& path, const Options& o, const std::vector<double>& ref) {
  const float* out = static_cast<const float*>(path.out->data);
  double max_diff = 0, max_ref = 0;
  for (int64_t h = 0; h < kHeads; ++h) {
    for (int64_t i = 0; i < o.q_len; ++i) {
      const int64_t row = path.flash_layout ? i * kHeads + h : h * o.q_len + i;
      for (int64_t d = 0; d < kHeadDim; ++d) {
        const double expected = ref[(h * o.q_len + i) * kHeadDim + d];
        max_diff = std::max(max_diff, std::fabs(out[row * kHeadDim + d] - expected));
        max_ref = std::max(max_ref, std::fabs(expected));
      }
    }
  }
  const bool judged = path.check_tolerance != kNotJudged;
  const bool ok = !judged || (std::isfinite(max_diff) && max_diff <= path.check_tolerance);
  std::printf("check path=%s sq=%lld skv=%lld threads=%d max_abs_diff=%.3g max_abs_ref=%.3g %s\n",
              path.name, static_cast<long long>(o.q_len), static_cast<long long>(o.kv_len),
              o.threads, max_diff, max_ref,
              !judged ? "(reported only)"
              : ok    ? "ok"
                      : "WRONG");
  return ok;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void PrintInfo() {
  std::printf("ggml version=%s commit=%s simd=", ggml_version(), ggml_commit());
  const struct {
    const char* name;
    int (*has)();
  } features[] = {{"SSE3", ggml_cpu_has_sse3},
                  {"AVX", ggml_cpu_has_avx},
                  {"AVX2", ggml_cpu_has_avx2},
                  {"FMA", ggml_cpu_has_fma},
                  {"F16C", ggml_cpu_has_f16c},
                  {"AVX512", ggml_cpu_has_avx512},
                  {"AVX512_BF16", ggml_cpu_has_avx512_bf16},
                  {"NEON", ggml_cpu_has_neon}};
  const char* sep = "";
  for (const auto& feature : features) {
    if (feature.has()) std::printf("%s%s", sep, feature.name), sep = ",";
  }
  std::printf(" llamafile=%d\n", ggml_cpu_has_llamafile());
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseOptions(argc, argv);
  ggml_cpu_init();
  if (o.info) PrintInfo();
  if (o.q_len == 0) return 0;

  const Inputs in = MakeInputs(o);
  // Inputs (q, k, v, k16, v16, v^T, two masks), scores and probabilities, three outputs.
  const size_t floats = 2 * kHeads * o.q_len * kHeadDim + 5 * kKvHeads * o.kv_len * kHeadDim +
                        2 * o.q_len * o.kv_len + 2 * kHeads * o.q_len * o.kv_len +
                        3 * kHeads * o.q_len * kHeadDim;
  ggml_init_params init = {
      floats * sizeof(float) + 64 * ggml_tensor_overhead() + 4 * ggml_graph_overhead() + (1 << 20),
      nullptr, /*no_alloc=*/false};
  ggml_context* ctx = ggml_init(init);
  if (ctx == nullptr) Usage("ggml_init failed");

  // A persistent pool, as llama.cpp keeps one: no thread start-up inside the timing.
  ggml_threadpool_params pool_params = ggml_threadpool_params_default(o.threads);
  ggml_threadpool* pool = ggml_threadpool_new(&pool_params);
  std::vector<Path> paths = BuildPaths(ctx, o, in);
  for (Path& path : paths) {
    path.graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(path.graph, path.out);
    path.plan = ggml_graph_plan(path.graph, o.threads, pool);
    path.work.resize(path.plan.work_size);
    path.plan.work_data = path.work.data();
    WarmUp(path, o.min_time);
  }

  bool all_ok = true;
  if (o.check) {
    const std::vector<double> ref = ReferenceAttention(o, in);
    for (const Path& path : paths) all_ok &= CheckAgainstReference(path, o, ref);
  }
  for (int r = 0; r < o.repetitions; ++r) {
    for (Path& path : paths) Repetition(path);
  }
  for (const Path& path : paths) {
    const auto [lo, hi] =
        std::minmax_element(path.ms_per_iteration.begin(), path.ms_per_iteration.end());
    std::printf(
        "result path=%s sq=%lld skv=%lld causal=%d threads=%d median_ms=%.4f min_ms=%.4f "
        "max_ms=%.4f iterations=%lld repetitions=%d\n",
        path.name, static_cast<long long>(o.q_len), static_cast<long long>(o.kv_len),
        o.causal ? 1 : 0, o.threads, Median(path.ms_per_iteration), *lo, *hi,
        static_cast<long long>(path.iterations), o.repetitions);
  }
  ggml_threadpool_free(pool);
  ggml_free(ctx);
  return all_ok ? 0 : 1;
}
