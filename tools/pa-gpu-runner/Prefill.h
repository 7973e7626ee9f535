//===- Prefill.h - check-prefill and bench-prefill of pa-gpu-runner -*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_PREFILL_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_PREFILL_H

#include <cstdint>
#include <string>
#include <vector>

namespace pa::runner {

struct CheckPrefillOptions {
  std::vector<std::string> bundles;
  /// The first seed of the random batches (printed; replays a run).
  uint64_t seed = 0;
  /// Random batches per bundle, seeds seed .. seed + seeds - 1.
  int64_t seeds = 4;
  /// Fill unused cache slots / pages with 8.0 instead of NaN.
  bool finiteSlack = false;
  /// Smaller random batches and no long case.
  bool quick = false;
  int device = 0;
  /// > 0: large-pool mode (--pool-elements; Check.h, PagePlacement).
  int64_t poolElements = 0;
};

/// Checks the prefill kernels (prefill, and prefill_short when present: each
/// runs every case) of every bundle of `opts` against
/// pa::ref::prefill (docs/Runtime.md, "check-prefill"); prints a line per
/// case and a summary table. Returns the process exit code: 0 if every
/// bundle passes, 1 on a failure, 2 if the device cannot be used.
int runCheckPrefill(const CheckPrefillOptions &opts);

struct BenchPrefillOptions {
  /// L2Eviction's mode (--l2-flush): dirty or clean.
  std::string l2Flush = "dirty";
  std::string bundle;
  /// Markdown report file ("" = stdout only).
  std::string out;
  /// pa-roofs.cubin ("" = $PA_ROOFS_CUBIN, then beside the executable).
  std::string roofs;
  int warmup = 5;
  /// Timed calls per shape (median reported).
  int reps = 30;
  /// At most this many input sets rotated.
  int maxSets = 4;
  uint32_t seed = 1;
  int device = 0;
  /// The prefill kernel: "auto" (the planner's choice per shape),
  /// "prefill", "short" or "partial" (forced).
  std::string kernel = "auto";
  /// > 0: the KV chunk of split-KV plans (pa_prefill_plan_options.kv_chunk;
  /// with "auto" or "partial").
  int64_t kvChunk = 0;
  /// Only the shapes whose name contains this ("" = all).
  std::string only;
};

/// Times the bundle's prefill kernels on the benchmark shapes (the
/// plan's choice per shape, or the one `kernel` forces; each row names it)
/// (docs/Runtime.md, "bench-prefill"); returns the process exit code.
int runBenchPrefill(const BenchPrefillOptions &opts);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_PREFILL_H
