// corpus_seeds: writes the seed inputs of the attention fuzzers (attention_seeds.cc) into
// fuzz/corpus/attention/ and fuzz/corpus/metal_attention/, the attention regressions into
// fuzz/regressions/attention/, and the seeds of the cache_ops fuzzer (cache_ops_seeds.cc)
// into fuzz/corpus/cache_ops/. Each input is the bytes a DrawEncoder records while the
// fuzzers' own decoding runs on its plan (for cache_ops, the whole run: what an operation
// may be depends on the caches before it), decoded back once more to check that it reads as
// planned.
//
//   bazel run //fuzz:corpus_seeds               the checkout's fuzz/ (BUILD_WORKSPACE_DIRECTORY)
//   bazel-bin/fuzz/corpus_seeds FUZZ_DIR        another fuzz/ directory
//
// Files named seed-* in those corpus directories are removed first: the seeds are exactly
// what the plans say. Other corpus files (the ones campaigns merged) are left alone.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/attention_decoding.h"
#include "fuzz/attention_seeds.h"
#include "fuzz/cache_ops_run.h"
#include "fuzz/cache_ops_seeds.h"
#include "fuzz/draw_encoder.h"
#include "fuzz/draws.h"
#include "properties/kernel_case.h"
#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"

namespace kvcheck::fuzz {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "corpus_seeds: %s\n", what.c_str());
  std::exit(1);
}

// The kernels an attention target picks from, in its order (attention_fuzzer.cc).
std::vector<std::string> KernelNames(bool emulated) {
  std::vector<std::string> names;
  for (const AttentionKernel& kernel : AttentionKernels()) {
    if (kernel.emulated() == emulated) names.push_back(kernel.name);
  }
  return names;
}

std::string Describe(const AttentionInput& input) {
  std::ostringstream shown;
  properties::showValue(input.kernel_case, shown);
  return shown.str() + "\nvalues: " + input.values + "\nkernel " + std::to_string(input.kernel);
}

// The bytes that decode to `planned`, checked by decoding them.
std::vector<uint8_t> Encode(const PlannedInput& planned, size_t kernel_count) {
  DrawEncoder encoder(planned.plan);
  const AttentionInput wanted = DecodeAttentionInput(encoder, kernel_count);
  for (const std::string& error : encoder.Errors()) Die(planned.name + ": " + error);
  std::vector<uint8_t> bytes = encoder.Bytes();
  InputDraws decoder(bytes.data(), bytes.size());
  const AttentionInput got = DecodeAttentionInput(decoder, kernel_count);
  if (Describe(got) != Describe(wanted)) {
    Die(planned.name + " decodes to\n" + Describe(got) + "\nnot to\n" + Describe(wanted));
  }
  return bytes;
}

// The bytes that run as `planned` on the registry's strategies, checked by running them.
std::vector<uint8_t> EncodeCacheOps(const PlannedInput& planned,
                                    const std::vector<const CacheStrategy*>& strategies) {
  DrawEncoder encoder(planned.plan);
  const std::vector<std::string> wanted = RunCacheOps(encoder, strategies, nullptr);
  for (const std::string& error : encoder.Errors()) Die(planned.name + ": " + error);
  std::vector<uint8_t> bytes = encoder.Bytes();
  InputDraws decoder(bytes.data(), bytes.size());
  const std::vector<std::string> got = RunCacheOps(decoder, strategies, nullptr);
  if (got != wanted) {
    std::string shown = planned.name + " runs as\n";
    for (const std::string& line : got) shown += "  " + line + "\n";
    shown += "not as\n";
    for (const std::string& line : wanted) shown += "  " + line + "\n";
    Die(shown);
  }
  return bytes;
}

void Write(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!file.good()) Die("cannot write " + path.string());
}

void RemoveSeeds(const fs::path& dir) {
  fs::create_directories(dir);
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("seed-")) fs::remove(entry.path());
  }
}

void WriteAll(const fs::path& dir, const std::vector<PlannedInput>& inputs, size_t kernel_count,
              bool replace_seeds) {
  if (replace_seeds) RemoveSeeds(dir);
  fs::create_directories(dir);
  for (const PlannedInput& input : inputs) Write(dir / input.name, Encode(input, kernel_count));
  std::printf("corpus_seeds: %zu inputs in %s\n", inputs.size(), dir.c_str());
}

int Main(int argc, char** argv) {
  fs::path fuzz_dir;
  if (argc > 1) {
    fuzz_dir = argv[1];
  } else if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    fuzz_dir = fs::path(workspace) / "fuzz";
  } else {
    Die("give the fuzz/ directory to write to (bazel run sets it itself)");
  }
  if (!fs::is_directory(fuzz_dir / "corpus")) Die(fuzz_dir.string() + " has no corpus/");
  for (const bool emulated : {false, true}) {
    const std::vector<std::string> kernels = KernelNames(emulated);
    const char* target = emulated ? "metal_attention" : "attention";
    WriteAll(fuzz_dir / "corpus" / target, AttentionSeeds(kernels), kernels.size(), true);
    if (!emulated) {
      WriteAll(fuzz_dir / "regressions" / target, AttentionRegressions(kernels), kernels.size(),
               false);
    }
  }
  std::vector<const CacheStrategy*> strategies;
  for (const CacheStrategy& strategy : CacheStrategies()) strategies.push_back(&strategy);
  const fs::path cache_ops = fuzz_dir / "corpus" / "cache_ops";
  const std::vector<PlannedInput> seeds = CacheOpsSeeds(strategies);
  RemoveSeeds(cache_ops);
  for (const PlannedInput& input : seeds) {
    Write(cache_ops / input.name, EncodeCacheOps(input, strategies));
  }
  std::printf("corpus_seeds: %zu inputs in %s\n", seeds.size(), cache_ops.c_str());
  return 0;
}

}  // namespace
}  // namespace kvcheck::fuzz

int main(int argc, char** argv) { return kvcheck::fuzz::Main(argc, argv); }
