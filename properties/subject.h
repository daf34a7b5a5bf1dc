// File: subject.h
// Subject: what one kvcheck run checks. The built-in engine (the registries of
// src/cache/registry.h and src/attention/kernel_registry.h), or an external engine whose
// strategies and kernels src/engine/ presents with the same types: the properties iterate a
// subject, never the registries directly, so an engine kvcheck did not write gets the same
// state machines, kernel laws and generation laws as the built-in one.
#ifndef KVCHECK_PROPERTIES_SUBJECT_H_
#define KVCHECK_PROPERTIES_SUBJECT_H_

#include <memory>
#include <string>
#include <vector>

#include "src/attention/kernel_registry.h"
#include "src/cache/registry.h"
#include "src/engine/engine.h"

namespace kvcheck::properties {

struct Subject {
  std::string name;  // "kvcheck" for the built-in engine, else the engine's own name
  std::vector<CacheStrategy> strategies;
  std::vector<AttentionKernel> kernels;
  // The built-in engine: the laws about its internals (tensor ops, the flash kernel's SIMD
  // targets, thread and split counts, the fused interleaved decode, the decoders against the
  // reference) run too.
  bool builtin = false;
  // An external engine: its steppers and models (step_properties.h, model_properties.h) are
  // read from here; its strategies and kernels are the entries above. Null for the built-in
  // engine.
  std::shared_ptr<engine::Engine> engine;

  // The kernel laws' generation limits: the features and dtypes every kernel implements.
  uint32_t common_kernel_features() const;
  uint32_t common_kernel_dtypes() const;
};

// Every built-in strategy and kernel.
const Subject& BuiltinSubject();

}  // namespace kvcheck::properties

#endif  // KVCHECK_PROPERTIES_SUBJECT_H_
