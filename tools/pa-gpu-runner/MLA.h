//===- MLA.h - MLA decode checks and benchmark of pa-gpu-runner -*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_MLA_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_MLA_H

#include <cstdint>
#include <string>
#include <vector>

namespace pa::runner {

struct CheckMLAOptions {
  std::vector<std::string> bundles;
  /// The seed of every random case (printed; replays a run).
  uint64_t seed = 0;
  int device = 0;
};

/// `check-mla`: for each MLA bundle (config kpe), random batches (empty
/// requests, lengths around the 64-token tile and the page size, long
/// ones) over a shuffled page pool whose unused pages hold NaN, through
/// pa_mla_decode unchecked and checked, against the float64 oracle
/// (pa::ref::mlaDecode) with poisoned outputs; checked mode must reject an
/// out-of-range page. Returns the exit code.
int runCheckMLA(const CheckMLAOptions &opts);

struct BenchMLAOptions {
  /// L2Eviction's mode (--l2-flush): dirty or clean.
  std::string l2Flush = "dirty";
  std::string bundle;
  std::string out, roofs;
  std::vector<int64_t> batches = {1, 16, 64, 128};
  std::vector<int64_t> lengths = {1024, 4096, 8192};
  int warmup = 5, reps = 30;
  /// Input sets rotated through the timed calls.
  int maxSets = 4;
  /// pa_mla_decode_args.num_splits (0: automatic).
  int64_t splits = 0;
  /// pa_mla_decode_args.split_merge (--split-merge): auto or last.
  std::string splitMerge = "auto";
  uint32_t seed = 1;
  int device = 0;
};

/// `bench-mla`: pa_mla_decode over B requests of L tokens (pages in a
/// random order), median of timed calls with L2 evicted, against the read
/// roof (bytes of the latent cache, q and o) and the tensor FLOPs.
int runBenchMLA(const BenchMLAOptions &opts);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_MLA_H
