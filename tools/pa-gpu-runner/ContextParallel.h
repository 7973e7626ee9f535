//===- ContextParallel.h - check-cp, bench-cp of pa-gpu-runner -*- C++ -*-====//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Context-parallel decode (docs/ContextParallel.md) through the runtime's C
// API: every request's pages sharded over N GPUs of this host
// (pa_shard_pages), each device holding only its pages, and one
// pa_cp_decode_run (per-device decode, NCCL all-gather of the states,
// merge on every device).
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_CONTEXTPARALLEL_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_CONTEXTPARALLEL_H

#include <cstdint>
#include <string>
#include <vector>

namespace pa::runner {

struct CheckCPOptions {
  std::vector<std::string> bundles;
  /// The first seed of the random batches (printed; replays a run).
  uint64_t seed = 0;
  /// Random batches per bundle, seeds seed .. seed + seeds - 1.
  int64_t seeds = 3;
  /// GPUs of the group, devices 0 .. N-1 (0: every visible device).
  int devices = 0;
  /// Round-robin page ownership instead of contiguous ranges.
  bool roundRobin = false;
};

/// `check-cp`: for each bundle and seed, a random decode batch (an empty
/// request, one of fewer pages than devices, partial and full last pages,
/// requests long enough to split) checked against the float64 oracle over
/// the whole table, run as one context-parallel step over N devices: each
/// device holds only its shard's pages (device-local page j = its j-th
/// entry) and every device's o / lse (poisoned first) must hold the merged
/// result. Then arguments pa_cp_decode_run must reject before any launch.
/// Returns the exit code: 0 if every bundle passes, 1 on a failure, 2 if
/// the devices cannot be used.
int runCheckCP(const CheckCPOptions &opts);

struct BenchCPOptions {
  /// L2Eviction's mode (--l2-flush): dirty or clean.
  std::string l2Flush = "dirty";
  std::string bundle;
  /// Markdown report file ("" = stdout only).
  std::string out;
  /// pa-roofs.cubin ("" = $PA_ROOFS_CUBIN, then beside the executable).
  std::string roofs;
  /// Device counts n (devices 0 .. n-1); counts above the visible devices
  /// are skipped.
  std::vector<int64_t> deviceCounts = {1, 2, 4};
  std::vector<int64_t> batches = {1, 8};
  std::vector<int64_t> lengths = {262144, 1048576};
  bool roundRobin = false;
  int warmup = 5;
  /// Timed steps per configuration (median reported).
  int reps = 30;
  /// Skip configurations whose KV shard on one device exceeds this.
  double maxKVGiB = 60;
  /// Bytes of the read roof's buffer (measured on device 0).
  double ceilingGiB = 4;
  uint32_t seed = 1;
};

/// `bench-cp`: pa_cp_decode_run over n devices for B requests of L tokens,
/// beside the decode alone on each device; aggregate KV bandwidth against
/// n x device 0's read roof and the scaling efficiency against n = 1.
/// Returns the exit code.
int runBenchCP(const BenchCPOptions &opts);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_CONTEXTPARALLEL_H
