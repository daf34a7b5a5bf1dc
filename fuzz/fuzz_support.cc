#include "fuzz/fuzz_support.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kvcheck::fuzz {

void Fail(const char* target, const Trace& trace, const std::string& what) {
  std::fprintf(stderr, "\nkvcheck fuzz: %s: %s\n", target, what.c_str());
  const defects::Defect* defect = nullptr;
  if (const char* name = std::getenv("KVCHECK_FUZZ_DEFECT"); name != nullptr && *name != 0) {
    defect = defects::FindDefect(name);
  }
  if (defect != nullptr) std::fprintf(stderr, "  (fuzzing defect %s)\n", defect->name);
  std::fprintf(stderr, "operations decoded from this input:\n");
  for (const std::string& line : trace.lines()) std::fprintf(stderr, "  %s\n", line.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {

const defects::Defect* LookUpDefect(defects::DefectKind kind) {
  const char* name = std::getenv("KVCHECK_FUZZ_DEFECT");
  if (name == nullptr || *name == 0) return nullptr;
  const defects::Defect* defect = defects::FindDefect(name);
  if (defect != nullptr && defect->kind == kind) {
    std::fprintf(stderr, "kvcheck fuzz: fuzzing the defect %s\n", defect->name);
    return defect;
  }
  std::fprintf(stderr,
               "kvcheck fuzz: KVCHECK_FUZZ_DEFECT=%s is not a defect this target runs; "
               "choose one of:\n",
               name);
  for (const defects::Defect& d : defects::Defects()) {
    if (d.kind == kind) std::fprintf(stderr, "  %s\n", d.name);
  }
  std::exit(2);
}

}  // namespace

const defects::Defect* DefectUnderFuzz(defects::DefectKind kind) {
  static const defects::Defect* const defect = LookUpDefect(kind);
  return defect;
}

}  // namespace kvcheck::fuzz
