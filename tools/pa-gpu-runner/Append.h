//===- Append.h - the cache-write check and benchmark of pa-gpu-runner -----===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_APPEND_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_APPEND_H

#include <cstdint>
#include <string>
#include <vector>

namespace pa::runner {

struct CheckAppendOptions {
  std::vector<std::string> bundles;
  /// The seed of every random case (printed; replays a run).
  uint64_t seed = 0;
  int device = 0;
  /// > 0: large-pool mode (--pool-elements; Check.h, PagePlacement): the
  /// written pages are read back from a device pool of at least this many
  /// elements per cache tensor.
  int64_t poolElements = 0;
};

/// `check-append`: for each bundle with an append_kv_slots kernel, random
/// caches and rows (16-bit or f32 values; an fp8 cache quantizes them with
/// per-tensor or per-head scales) written through pa_append_kv_slots at
/// random distinct slots, some rows skipped (negative slots); the whole
/// cache is compared byte for byte with the expected one (the untouched
/// slots unchanged). Also checks that checked mode rejects an
/// out-of-range and a repeated slot. Returns the exit code.
int runCheckAppend(const CheckAppendOptions &opts);

struct BenchAppendOptions {
  /// L2Eviction's mode (--l2-flush): dirty or clean.
  std::string l2Flush = "dirty";
  std::string bundle;
  std::string out, roofs;
  /// New rows per call.
  std::vector<int64_t> rows = {4096, 16384, 65536};
  int warmup = 5, reps = 30;
  uint32_t seed = 1;
  int device = 0;
};

/// `bench-append`: times pa_append_kv_slots for each row count (random
/// distinct slots in a cache twice that size, L2 evicted before every
/// call) against the copy ceiling, in bytes read + written. Returns the
/// exit code.
int runBenchAppend(const BenchAppendOptions &opts);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_APPEND_H
