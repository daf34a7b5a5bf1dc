// A helper of executor_kernels.metal, pulled in with #include "..." so that msl_translate's
// inlining and its #line markers are under test: an error inside it names this file and
// line, and one after the #include names the .metal file's own line.
inline void barrier_if(bool taken) {
  if (taken) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
}
