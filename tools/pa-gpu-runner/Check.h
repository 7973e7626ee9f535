//===- Check.h - the correctness check of pa-gpu-runner ---------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H

#include <cstdint>
#include <string>
#include <vector>

namespace pa::runner {

struct CheckOptions {
  std::vector<std::string> bundles;
  /// The seed of every random case (printed; replays a run).
  uint64_t seed = 0;
  /// > 0: the forced-chunk variants use this chunk only.
  int64_t forceChunk = 0;
  /// Fill unused cache slots / pages with a large finite value instead of
  /// NaN.
  bool finiteSlack = false;
  /// Skip the long cases (quick smoke runs).
  bool quick = false;
  int device = 0;
};

/// Checks every bundle of `opts` (docs/Runtime.md, "check"); prints a line
/// per run and a summary table. Returns the process exit code: 0 if every
/// bundle passes, 1 on a failure, 2 if the device cannot be used.
int runCheck(const CheckOptions &opts);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_CHECK_H
