// File: poison_unused.h
// Whether memory nobody has written yet starts as NaN: the default build sets
// KVCHECK_POISON_UNUSED=1 (.bazelrc), so that the tests see a read of an unwritten cache slot
// or output element as NaN instead of a plausible 0; --config=opt undefines it (0: no
// poisoning pass on the benchmarks' hot paths).
#ifndef KVCHECK_SRC_BASE_POISON_UNUSED_H_
#define KVCHECK_SRC_BASE_POISON_UNUSED_H_

#ifndef KVCHECK_POISON_UNUSED
#define KVCHECK_POISON_UNUSED 0
#endif

namespace kvcheck {

inline constexpr bool kPoisonUnused = KVCHECK_POISON_UNUSED != 0;

}  // namespace kvcheck

#endif  // KVCHECK_SRC_BASE_POISON_UNUSED_H_
