// The main() of a fuzz target outside the fuzz config: runs LLVMFuzzerTestOneInput once per
// input file, so that the seed corpus and every saved crash replay as an ordinary test (and a
// crash file can be replayed under gdb or the plain sanitizer configs).
//
//   <target> PATH...    PATH is a file or a directory (every regular file below it, in name
//                       order; names starting with '.' are skipped). Arguments starting with
//                       '-' are libFuzzer flags and are ignored here.
//
// A missing directory is allowed (a target may have no regressions yet), but at least one
// input must be found: a replay that runs nothing would pass without testing anything.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

void CollectInputs(const fs::path& path, std::vector<fs::path>& inputs) {
  std::error_code error;
  if (fs::is_regular_file(path, error)) {
    inputs.push_back(path);
    return;
  }
  if (!fs::is_directory(path, error)) {
    std::fprintf(stderr, "replay: %s does not exist; skipped\n", path.c_str());
    return;
  }
  std::vector<fs::path> found;
  for (const fs::directory_entry& entry :
       fs::recursive_directory_iterator(path, fs::directory_options::follow_directory_symlink)) {
    if (entry.path().filename().string().starts_with(".")) continue;
    if (entry.is_regular_file()) found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  inputs.insert(inputs.end(), found.begin(), found.end());
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    CollectInputs(argv[i], inputs);
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no input files found; give corpus files or directories\n");
    return 1;
  }
  for (const fs::path& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                     std::istreambuf_iterator<char>());
    if (!file.good() && !file.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", input.c_str());
      return 1;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", input.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::fprintf(stderr, "replay: %zu inputs ran without a crash or divergence\n", inputs.size());
  return 0;
}
