//===- Cascade.h - merge and cascade checks and benchmarks of pa-gpu-runner ===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_CASCADE_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_CASCADE_H

#include <cstdint>
#include <string>
#include <vector>

namespace pa::runner {

struct CheckCascadeOptions {
  std::vector<std::string> bundles;
  /// The seed of every random case (printed; replays a run).
  uint64_t seed = 0;
  int device = 0;
};

/// `check-cascade`: for each bundle with decode, prefill and merge kernels
/// (pa-compile --kernels all): pa_merge and pa_merge_states on random
/// states (some of weight 0) against pa::ref::merge / mergeN; pa_cascade_run
/// (checked mode) on 2- and 3-level cascades (shared prefixes shorter and
/// longer than the batch, empty prefixes and suffixes, a long prefix that
/// the planner splits) against pa::ref::cascade; and the rejections of bad
/// arguments. Returns the exit code.
int runCheckCascade(const CheckCascadeOptions &opts);

struct BenchCascadeOptions {
  /// L2Eviction's mode (--l2-flush): dirty or clean.
  std::string l2Flush = "dirty";
  std::string bundle;
  std::string out, roofs;
  /// Cascade shapes "S:U:B": shared prefix S tokens (a multiple of the
  /// page size), unique suffix U tokens, B requests.
  std::vector<std::string> cases = {"1024:256:64",  "1024:256:256",
                                    "8192:256:64",  "8192:256:256",
                                    "32768:256:64", "32768:256:256"};
  /// Rows of the merge benchmark (each of Hq x D).
  std::vector<int64_t> mergeRows = {4096, 65536};
  int warmup = 5, reps = 30;
  uint32_t seed = 1;
  int device = 0;
  /// Skip the plain decode (the slow baseline), e.g. to compare bundles.
  bool noPlain = false;
};

/// `bench-cascade`: times pa_cascade_run (2 levels: the shared prefix as a
/// prefill of all B queries, the suffixes as decode, one merge) against
/// pa_decode_run over the full tables (each request's table = the shared
/// pages, then its own) on the same cache and queries, and pa_merge /
/// pa_merge_states against the copy ceiling; L2 evicted before every call.
/// Each cascade row also times its levels alone (the prefix's prefill plan
/// and the suffixes' decode plan, as pa_cascade_plan makes them).
/// Returns the exit code.
int runBenchCascade(const BenchCascadeOptions &opts);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_CASCADE_H
