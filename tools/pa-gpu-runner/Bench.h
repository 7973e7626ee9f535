//===- Bench.h - the decode benchmark of pa-gpu-runner ----------*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_TOOLS_PA_GPU_RUNNER_BENCH_H
#define PAGEDATTN_TOOLS_PA_GPU_RUNNER_BENCH_H

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pa::runner {

/// Timing statistics of one measured call, in microseconds.
struct Timing {
  double medianUs = 0, minUs = 0, maxUs = 0;
};

/// Warm-up of every measurement: at least this long (GPU time, the
/// evictions included), in more calls than asked for if need be (at most
/// kMaxWarmupCalls). Five calls were not enough on an H100 (2026-11-25):
/// GQA-4 f16 64 x 2048 timed 237 µs after 5 or 20 warm-up calls on a fresh
/// KV arena and 203 µs after 40 or 80 (or after earlier rows).
constexpr float kMinWarmupMs = 50;
constexpr int kMaxWarmupCalls = 4096;

class L2Eviction;

/// Times `call(i)` (i counts all calls, warm-up included): at least
/// `warmup` untimed calls, more until kMinWarmupMs have run, then `reps`
/// timed ones, each after an untimed L2 eviction (`flush.evict`) and
/// between CUDA events on `stream`; the median, min and max of the timed
/// calls.
Timing timeCalls(CUstream stream, const L2Eviction &flush, int warmup,
                 int reps, const std::function<void(int)> &call);

/// printf into a std::string (at most 1023 characters).
std::string fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));

/// Writes a benchmark's markdown `report` to `path` (nothing when `path` is
/// empty); on failure prints "cannot write PATH" and returns false.
bool writeReport(const std::string &path, const std::string &report);

/// The line sink of a benchmark's markdown report: each line is printed
/// (and flushed, so a run cut short still shows what it measured) and
/// appended to `report`, which writeReport then writes. `report` must
/// outlive the sink.
std::function<void(const std::string &)> reportSink(std::string &report);

struct BenchOptions {
  std::string bundle;
  /// Markdown report file ("" = stdout only).
  std::string out;
  /// pa-roofs.cubin ("" = $PA_ROOFS_CUBIN, then beside the executable).
  std::string roofs;
  std::vector<int64_t> batches = {1, 16, 64, 256};
  std::vector<int64_t> lengths = {512, 2048, 8192, 32768};
  int warmup = 5;
  /// Timed calls per configuration (median reported).
  int reps = 30;
  /// Skip configurations whose KV cache (one input set) exceeds this.
  double maxKVGiB = 60;
  /// At most this many input sets (KV caches) rotated.
  int maxSets = 4;
  /// Bytes of each ceiling's buffer (copy: read + write of this size).
  double ceilingGiB = 4;
  /// Planner options (0 = defaults).
  int64_t ctasPerSM = 0, forceChunk = 0;
  /// pa_plan_options.split_merge (--split-merge): auto or last.
  std::string splitMerge = "auto";
  /// L2Eviction's mode (--l2-flush): dirty or clean.
  std::string l2Flush = "dirty";
  uint32_t seed = 1;
  int device = 0;
};

/// Runs the benchmark; returns the process exit code.
int runBench(const BenchOptions &opts);

struct DeviceInfo;
struct Roofs;

/// The ceilings every benchmark reports (GB/s): copy (cuMemcpyDtoDAsync of
/// o.ceilingGiB, bytes read + written) and the read roofs (16-byte loads
/// of the read-only and the streaming path; readGBs the larger).
struct Ceilings {
  double copyGBs = 0, readGBs = 0, readNcGBs = 0, readCsGBs = 0;
  double bytes = 0;
};
Ceilings measureCeilings(const BenchOptions &o, const Roofs &roofs,
                         CUstream stream, const L2Eviction &flush);

} // namespace pa::runner

#endif // PAGEDATTN_TOOLS_PA_GPU_RUNNER_BENCH_H
