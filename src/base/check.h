// File: check.h
// KV_CHECK: aborts on a broken internal invariant, with the condition, file and line.
//
// For invariants only (where continuing would do harm), never for input validation: bad
// input gets an absl::Status. Abseil 20220623 has no absl/log, hence this small macro.
// Active in every build mode, including NDEBUG.
#ifndef KVCHECK_SRC_BASE_CHECK_H_
#define KVCHECK_SRC_BASE_CHECK_H_

namespace kvcheck::internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line,
                              const char* message);
}  // namespace kvcheck::internal

#define KV_CHECK(condition)                                                       \
  do {                                                                            \
    if (!(condition)) {                                                           \
      ::kvcheck::internal::CheckFailed(#condition, __FILE__, __LINE__, nullptr);  \
    }                                                                             \
  } while (false)

#define KV_CHECK_MSG(condition, message)                                          \
  do {                                                                            \
    if (!(condition)) {                                                           \
      ::kvcheck::internal::CheckFailed(#condition, __FILE__, __LINE__, (message)); \
    }                                                                             \
  } while (false)

#endif  // KVCHECK_SRC_BASE_CHECK_H_
