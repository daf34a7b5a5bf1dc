#include "src/base/check.h"

#include <cstdio>
#include <cstdlib>

namespace kvcheck::internal {

void CheckFailed(const char* condition, const char* file, int line, const char* message) {
  std::fprintf(stderr, "%s:%d: KV_CHECK failed: %s%s%s\n", file, line, condition,
               message != nullptr ? ": " : "", message != nullptr ? message : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace kvcheck::internal
