//===- pa-gpu-runner.cpp - run kernel bundles on a GPU --------------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
//   pa-gpu-runner check [options] BUNDLE_DIR...
//   pa-gpu-runner bench [options] BUNDLE_DIR
//   pa-gpu-runner check-prefill [options] BUNDLE_DIR...
//   pa-gpu-runner bench-prefill [options] BUNDLE_DIR
//   pa-gpu-runner check-cp [options] BUNDLE_DIR...
//   pa-gpu-runner bench-cp [options] BUNDLE_DIR
//
// The driver: parses the command line with one option parser (Options.h) and
// dispatches. `check` (Check.cpp) runs each bundle's decode step against the
// float64 oracle and tests checked mode; `bench` (Bench.cpp) times the decode
// step against the read and copy ceilings; `check-prefill` / `bench-prefill`
// (Prefill.cpp) do the same for a bundle's prefill kernel; `check-cp` /
// `bench-cp` (ContextParallel.cpp) do it for a decode step sharded over
// several GPUs (docs/ContextParallel.md). See docs/Runtime.md.
//
//===----------------------------------------------------------------------===//

#include "Append.h"
#include "CacheBlend.h"
#include "MLA.h"
#include "Cascade.h"
#include "Bench.h"
#include "Check.h"
#include "ContextParallel.h"
#include "Options.h"
#include "Prefill.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

using namespace pa::runner;

namespace {

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

/// `--pool-elements N` of the checks (large-pool mode, docs/Runtime.md):
/// at most 2^40 elements (the per-bundle checks bound it by the device's
/// memory and int32 page indices).
void addPoolOption(OptionParser &p, int64_t &out) {
  p.count("--pool-elements", out, 1, int64_t(1) << 40,
          "large-pool mode: a device page pool of at least N elements per "
          "cache tensor (suffix K/M/G/T = 2^10/20/30/40, e.g. 5G) with the "
          "case's pages placed past elements 2^31 and 2^32, the rest "
          "poisoned; the host reference holds only the case's pages");
}

/// --l2-flush of the benchmarks (L2Eviction).
void addL2FlushOption(OptionParser &p, std::string &out) {
  p.choice("--l2-flush", out, {"dirty", "clean"},
           "L2 eviction before every timed call: a 256 MiB memset (dirty "
           "lines the call writes back; the default, as FlashInfer's kit) "
           "or the memset and a read pass over it (clean lines)");
}

/// The flags of `check`, bound to `o`.
void addCheckOptions(OptionParser &p, CheckOptions &o) {
  p.integer("--seed", o.seed, 0, kMaxI64,
            "seed of the random cases (default: from the clock; printed)");
  p.integer("--force-chunk", o.forceChunk, 1, kMaxI64,
            "forced-chunk variants use only this chunk size");
  p.flag("--finite-slack", o.finiteSlack,
         "unused cache slots / pages hold 8.0 instead of NaN");
  p.flag("--quick", o.quick, "skip the long case");
  addPoolOption(p, o.poolElements);
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", o.bundles, 1, SIZE_MAX);
}

/// The flags of `bench`, bound to `o`; the bundle goes to `operands`.
void addBenchOptions(OptionParser &p, BenchOptions &o,
                     std::vector<std::string> &operands) {
  addL2FlushOption(p, o.l2Flush);
  p.text("--out", "FILE", o.out, "also write the markdown report to FILE");
  p.text("--roofs", "CUBIN", o.roofs,
         "pa-roofs.cubin (default: $PA_ROOFS_CUBIN, then beside the "
         "executable)");
  p.integer("--reps", o.reps, 1, std::numeric_limits<int>::max(),
            "timed calls per configuration");
  p.integer("--warmup", o.warmup, 1, std::numeric_limits<int>::max(),
            "untimed calls first");
  p.positiveList("--batches", o.batches, "batch sizes");
  p.positiveList("--lens", o.lengths, "kv lengths");
  p.positiveReal("--max-kv-gib", o.maxKVGiB,
                 "skip configurations with a larger KV cache");
  p.integer("--max-sets", o.maxSets, 1, std::numeric_limits<int>::max(),
            "input sets rotated");
  p.positiveReal("--ceiling-gib", o.ceilingGiB,
                 "bytes of the copy and read ceilings");
  p.integer("--ctas-per-sm", o.ctasPerSM, 1, kMaxI64,
            "planner's CTAs per SM (default: occupancy)");
  p.integer("--force-chunk", o.forceChunk, 1, kMaxI64,
            "chunk size instead of the planner's");
  p.choice("--split-merge", o.splitMerge, {"auto", "last"},
           "how a split plan's decode_split merges: auto (all CTAs "
           "together where the grid fits at once, a cooperative launch) or "
           "last (the last CTA of a request alone)");
  p.integer("--seed", o.seed, 0, std::numeric_limits<uint32_t>::max(),
            "seed of the random fill and page order");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", operands, 1, 1);
}

/// The flags of `check-prefill`, bound to `o`.
void addCheckPrefillOptions(OptionParser &p, CheckPrefillOptions &o) {
  p.integer("--seed", o.seed, 0, kMaxI64,
            "first seed of the random batches (default: from the clock; "
            "printed)");
  p.integer("--seeds", o.seeds, 1, 1000000, "random batches per bundle");
  p.flag("--finite-slack", o.finiteSlack,
         "unused cache slots / pages hold 8.0 instead of NaN");
  p.flag("--quick", o.quick, "smaller random batches, no long case");
  addPoolOption(p, o.poolElements);
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", o.bundles, 1, SIZE_MAX);
}

/// The flags of `bench-prefill`, bound to `o`; the bundle goes to
/// `operands`.
void addBenchPrefillOptions(OptionParser &p, BenchPrefillOptions &o,
                            std::vector<std::string> &operands) {
  addL2FlushOption(p, o.l2Flush);
  p.text("--out", "FILE", o.out, "also write the markdown report to FILE");
  p.text("--roofs", "CUBIN", o.roofs,
         "pa-roofs.cubin (default: $PA_ROOFS_CUBIN, then beside the "
         "executable)");
  p.integer("--reps", o.reps, 1, std::numeric_limits<int>::max(),
            "timed calls per shape");
  p.integer("--warmup", o.warmup, 1, std::numeric_limits<int>::max(),
            "untimed calls first");
  p.integer("--max-sets", o.maxSets, 1, std::numeric_limits<int>::max(),
            "input sets rotated");
  p.integer("--seed", o.seed, 0, std::numeric_limits<uint32_t>::max(),
            "seed of the random fill and page order");
  p.text("--kernel", "K", o.kernel,
         "prefill kernel: auto (the planner's choice per shape), prefill, "
         "short (prefill_short) or partial (split-KV: prefill_partial + "
         "merge_segments)");
  p.integer("--kv-chunk", o.kvChunk, 0, std::numeric_limits<int32_t>::max(),
            "split-KV chunk in tokens (0: the planner's; with --kernel auto "
            "or partial)");
  p.text("--only", "TEXT", o.only,
         "time only the shapes whose name contains TEXT");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", operands, 1, 1);
}

/// The flags of `check-append`, bound to `o`.
void addCheckAppendOptions(OptionParser &p, CheckAppendOptions &o) {
  p.integer("--seed", o.seed, 0, kMaxI64,
            "seed of the random cases (default: from the clock; printed)");
  addPoolOption(p, o.poolElements);
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", o.bundles, 1, SIZE_MAX);
}

/// The flags of `bench-append`, bound to `o`; the bundle goes to
/// `operands`.
void addBenchAppendOptions(OptionParser &p, BenchAppendOptions &o,
                           std::vector<std::string> &operands) {
  addL2FlushOption(p, o.l2Flush);
  p.text("--out", "FILE", o.out, "also write the markdown report to FILE");
  p.text("--roofs", "CUBIN", o.roofs,
         "pa-roofs.cubin (default: $PA_ROOFS_CUBIN, then beside the "
         "executable)");
  p.positiveList("--rows", o.rows, "new rows per call");
  p.integer("--reps", o.reps, 1, std::numeric_limits<int>::max(),
            "timed calls per row count");
  p.integer("--warmup", o.warmup, 1, std::numeric_limits<int>::max(),
            "untimed calls first");
  p.integer("--seed", o.seed, 0, std::numeric_limits<uint32_t>::max(),
            "seed of the slots");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", operands, 1, 1);
}

/// The flags of `check-cascade`, bound to `o`.
void addCheckCascadeOptions(OptionParser &p, CheckCascadeOptions &o) {
  p.integer("--seed", o.seed, 0, kMaxI64,
            "seed of the random cases (default: from the clock; printed)");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", o.bundles, 1, SIZE_MAX);
}

/// The flags of `bench-cascade`, bound to `o`; the bundle goes to
/// `operands`.
void addBenchCascadeOptions(OptionParser &p, BenchCascadeOptions &o,
                            std::vector<std::string> &operands,
                            std::string &cases) {
  addL2FlushOption(p, o.l2Flush);
  p.text("--out", "FILE", o.out, "also write the markdown report to FILE");
  p.text("--roofs", "CUBIN", o.roofs,
         "pa-roofs.cubin (default: $PA_ROOFS_CUBIN, then beside the "
         "executable)");
  p.text("--cases", "S:U:B,..", cases,
         "cascade shapes: shared prefix S, unique suffix U, batch B");
  p.positiveList("--merge-rows", o.mergeRows, "rows of the merge benchmark");
  p.flag("--no-plain", o.noPlain,
         "skip the plain decode over the full tables (the slow baseline)");
  p.integer("--reps", o.reps, 1, std::numeric_limits<int>::max(),
            "timed calls per shape");
  p.integer("--warmup", o.warmup, 1, std::numeric_limits<int>::max(),
            "untimed calls first");
  p.integer("--seed", o.seed, 0, std::numeric_limits<uint32_t>::max(),
            "seed of the page order");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", operands, 1, 1);
}

/// The flags of `check-cacheblend`, bound to `o`.
void addCheckCacheBlendOptions(OptionParser &p, CheckCacheBlendOptions &o) {
  p.integer("--seed", o.seed, 0, kMaxI64,
            "seed of the random cases (default: from the clock; printed)");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", o.bundles, 1, SIZE_MAX);
}

/// The flags of `bench-cacheblend`, bound to `o`; the bundle goes to
/// `operands`.
void addBenchCacheBlendOptions(OptionParser &p, BenchCacheBlendOptions &o,
                               std::vector<std::string> &operands) {
  addL2FlushOption(p, o.l2Flush);
  p.text("--out", "FILE", o.out, "also write the markdown report to FILE");
  p.text("--roofs", "CUBIN", o.roofs,
         "pa-roofs.cubin (default: $PA_ROOFS_CUBIN, then beside the "
         "executable)");
  p.text("--full-bundle", "DIR", o.fullBundle,
         "a --kernels prefill --causal bundle for the full prefill (default: "
         "the layer's bundle with positions 0..L-1)");
  p.integer("--chunks", o.chunks, 1, 1 << 16, "reused chunks of the prompt");
  p.integer("--chunk-tokens", o.chunkTokens, 1, 1 << 20, "tokens per chunk");
  p.integer("--reps", o.reps, 1, std::numeric_limits<int>::max(),
            "timed calls per step");
  p.integer("--warmup", o.warmup, 1, std::numeric_limits<int>::max(),
            "untimed calls first");
  p.integer("--seed", o.seed, 0, std::numeric_limits<uint32_t>::max(),
            "seed of the page order and values");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", operands, 1, 1);
}

/// The flags of `check-mla`, bound to `o`.
void addCheckMLAOptions(OptionParser &p, CheckMLAOptions &o) {
  p.integer("--seed", o.seed, 0, kMaxI64,
            "seed of the random cases (default: from the clock; printed)");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", o.bundles, 1, SIZE_MAX);
}

/// The flags of `bench-mla`, bound to `o`; the bundle goes to `operands`.
void addBenchMLAOptions(OptionParser &p, BenchMLAOptions &o,
                        std::vector<std::string> &operands) {
  addL2FlushOption(p, o.l2Flush);
  p.text("--out", "FILE", o.out, "also write the markdown report to FILE");
  p.text("--roofs", "CUBIN", o.roofs,
         "pa-roofs.cubin (default: $PA_ROOFS_CUBIN, then beside the "
         "executable)");
  p.positiveList("--batches", o.batches, "requests per call");
  p.positiveList("--lengths", o.lengths, "tokens per request");
  p.integer("--reps", o.reps, 1, std::numeric_limits<int>::max(),
            "timed calls per shape");
  p.integer("--warmup", o.warmup, 1, std::numeric_limits<int>::max(),
            "untimed calls first");
  p.integer("--sets", o.maxSets, 1, 64, "input sets rotated");
  p.integer("--splits", o.splits, 0, 1024,
            "key splits per request (0: the runtime's choice)");
  p.choice("--split-merge", o.splitMerge, {"auto", "last"},
           "how the splits merge: auto (all CTAs together where the grid "
           "fits at once, a cooperative launch) or last (the last CTA of "
           "a request alone)");
  p.integer("--seed", o.seed, 0, std::numeric_limits<uint32_t>::max(),
            "seed of the page order and values");
  p.integer("--device", o.device, 0, std::numeric_limits<int>::max(),
            "CUDA device ordinal");
  p.operands("BUNDLE_DIR", operands, 1, 1);
}

/// The flags of `check-cp`, bound to `o`.
void addCheckCPOptions(OptionParser &p, CheckCPOptions &o) {
  p.integer("--devices", o.devices, 1, std::numeric_limits<int>::max(),
            "GPUs of the group, devices 0..N-1 (default: every visible "
            "device)");
  p.flag("--round-robin", o.roundRobin,
         "round-robin page ownership (page j of a request on device j mod "
         "N) instead of contiguous ranges");
  p.integer("--seed", o.seed, 0, kMaxI64,
            "first seed of the random batches (default: from the clock; "
            "printed)");
  p.integer("--seeds", o.seeds, 1, 1000000, "random batches per bundle");
  p.operands("BUNDLE_DIR", o.bundles, 1, SIZE_MAX);
}

/// The flags of `bench-cp`, bound to `o`; the bundle goes to `operands`.
void addBenchCPOptions(OptionParser &p, BenchCPOptions &o,
                       std::vector<std::string> &operands) {
  addL2FlushOption(p, o.l2Flush);
  p.text("--out", "FILE", o.out, "also write the markdown report to FILE");
  p.text("--roofs", "CUBIN", o.roofs,
         "pa-roofs.cubin (default: $PA_ROOFS_CUBIN, then beside the "
         "executable)");
  p.positiveList("--devices-list", o.deviceCounts,
                 "device counts n (devices 0..n-1; counts above the visible "
                 "devices are skipped)");
  p.positiveList("--batches", o.batches, "batch sizes");
  p.positiveList("--lens", o.lengths, "kv lengths");
  p.flag("--round-robin", o.roundRobin,
         "round-robin page ownership instead of contiguous ranges");
  p.integer("--reps", o.reps, 1, std::numeric_limits<int>::max(),
            "timed steps per configuration");
  p.integer("--warmup", o.warmup, 1, std::numeric_limits<int>::max(),
            "untimed steps first");
  p.positiveReal("--max-kv-gib", o.maxKVGiB,
                 "skip configurations whose KV shard on one device is larger");
  p.positiveReal("--ceiling-gib", o.ceilingGiB,
                 "bytes of the read roof's buffer (device 0)");
  p.integer("--seed", o.seed, 0, std::numeric_limits<uint32_t>::max(),
            "seed of the random fill and page order");
  p.operands("BUNDLE_DIR", operands, 1, 1);
}

/// A seed from the clock for a check run without --seed (not
/// std::random_device: it needs glibc 2.36).
uint64_t clockSeed() {
  return static_cast<uint64_t>(
             std::chrono::system_clock::now().time_since_epoch().count()) %
         1000000;
}

void printUsage(std::FILE *f) {
  CheckOptions check;
  BenchOptions bench;
  CheckPrefillOptions checkPrefill;
  BenchPrefillOptions benchPrefill;
  std::vector<std::string> operands;
  OptionParser checkParser("check"), benchParser("bench"),
      checkPrefillParser("check-prefill"), benchPrefillParser("bench-prefill");
  addCheckOptions(checkParser, check);
  addBenchOptions(benchParser, bench, operands);
  addCheckPrefillOptions(checkPrefillParser, checkPrefill);
  addBenchPrefillOptions(benchPrefillParser, benchPrefill, operands);
  CheckAppendOptions checkAppend;
  BenchAppendOptions benchAppend;
  OptionParser checkAppendParser("check-append"),
      benchAppendParser("bench-append");
  addCheckAppendOptions(checkAppendParser, checkAppend);
  addBenchAppendOptions(benchAppendParser, benchAppend, operands);
  CheckCascadeOptions checkCascade;
  BenchCascadeOptions benchCascade;
  std::string cases;
  OptionParser checkCascadeParser("check-cascade"),
      benchCascadeParser("bench-cascade");
  addCheckCascadeOptions(checkCascadeParser, checkCascade);
  addBenchCascadeOptions(benchCascadeParser, benchCascade, operands, cases);
  CheckCacheBlendOptions checkBlend;
  BenchCacheBlendOptions benchBlend;
  OptionParser checkBlendParser("check-cacheblend"),
      benchBlendParser("bench-cacheblend");
  addCheckCacheBlendOptions(checkBlendParser, checkBlend);
  addBenchCacheBlendOptions(benchBlendParser, benchBlend, operands);
  CheckMLAOptions checkMLA;
  BenchMLAOptions benchMLA;
  OptionParser checkMLAParser("check-mla"), benchMLAParser("bench-mla");
  addCheckMLAOptions(checkMLAParser, checkMLA);
  addBenchMLAOptions(benchMLAParser, benchMLA, operands);
  CheckCPOptions checkCP;
  BenchCPOptions benchCP;
  OptionParser checkCPParser("check-cp"), benchCPParser("bench-cp");
  addCheckCPOptions(checkCPParser, checkCP);
  addBenchCPOptions(benchCPParser, benchCP, operands);
  std::fprintf(f, "usage:\n%s%s%s%s%s%s%s%s%s%s%s%s%s%s",
               checkParser.usage().c_str(),
               benchParser.usage().c_str(), checkPrefillParser.usage().c_str(),
               benchPrefillParser.usage().c_str(),
               checkAppendParser.usage().c_str(),
               benchAppendParser.usage().c_str(),
               checkCascadeParser.usage().c_str(),
               benchCascadeParser.usage().c_str(),
               checkBlendParser.usage().c_str(),
               benchBlendParser.usage().c_str(),
               checkMLAParser.usage().c_str(), benchMLAParser.usage().c_str(),
               checkCPParser.usage().c_str(), benchCPParser.usage().c_str());
  std::fprintf(f, "environment: PA_FORCE_CHUNK (as --force-chunk), "
                  "PA_ROOFS_CUBIN\n");
}

/// Parses the flags of `p` from argv[2..]; returns -1 to go on, else the
/// exit code (0 after --help, 2 after an error, reported on stderr).
int parseCommand(OptionParser &p, int argc, char **argv) {
  std::string error;
  if (!p.parse(argc, argv, 2, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    printUsage(stderr);
    return 2;
  }
  if (p.helpRequested()) {
    printUsage(stdout);
    return 0;
  }
  return -1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    printUsage(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help") {
    printUsage(stdout);
    return 0;
  }
  int64_t envChunk = 0;
  if (const char *env = std::getenv("PA_FORCE_CHUNK"))
    if (!parseInt64(env, envChunk) || envChunk < 0) {
      std::fprintf(stderr, "PA_FORCE_CHUNK='%s' is not a chunk size\n", env);
      return 2;
    }

  if (cmd == "check") {
    CheckOptions opts;
    opts.forceChunk = envChunk;
    OptionParser p("check");
    addCheckOptions(p, opts);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!p.seen("--seed"))
      opts.seed = clockSeed();
    return runCheck(opts);
  }
  if (cmd == "bench") {
    BenchOptions opts;
    opts.forceChunk = envChunk;
    std::vector<std::string> operands;
    OptionParser p("bench");
    addBenchOptions(p, opts, operands);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    opts.bundle = operands[0];
    return runBench(opts);
  }
  if (cmd == "check-prefill") {
    CheckPrefillOptions opts;
    OptionParser p("check-prefill");
    addCheckPrefillOptions(p, opts);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!p.seen("--seed"))
      opts.seed = clockSeed();
    return runCheckPrefill(opts);
  }
  if (cmd == "bench-prefill") {
    BenchPrefillOptions opts;
    std::vector<std::string> operands;
    OptionParser p("bench-prefill");
    addBenchPrefillOptions(p, opts, operands);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    opts.bundle = operands[0];
    return runBenchPrefill(opts);
  }
  if (cmd == "check-append") {
    CheckAppendOptions opts;
    OptionParser p("check-append");
    addCheckAppendOptions(p, opts);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!p.seen("--seed"))
      opts.seed = clockSeed();
    return runCheckAppend(opts);
  }
  if (cmd == "bench-append") {
    BenchAppendOptions opts;
    std::vector<std::string> operands;
    OptionParser p("bench-append");
    addBenchAppendOptions(p, opts, operands);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    opts.bundle = operands[0];
    return runBenchAppend(opts);
  }
  if (cmd == "check-cascade") {
    CheckCascadeOptions opts;
    OptionParser p("check-cascade");
    addCheckCascadeOptions(p, opts);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!p.seen("--seed"))
      opts.seed = clockSeed();
    return runCheckCascade(opts);
  }
  if (cmd == "bench-cascade") {
    BenchCascadeOptions opts;
    std::vector<std::string> operands;
    std::string cases;
    OptionParser p("bench-cascade");
    addBenchCascadeOptions(p, opts, operands, cases);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!cases.empty()) {
      opts.cases.clear();
      size_t start = 0;
      while (start <= cases.size()) {
        size_t comma = cases.find(',', start);
        std::string one = cases.substr(
            start, comma == std::string::npos ? std::string::npos
                                              : comma - start);
        if (!one.empty())
          opts.cases.push_back(one);
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    }
    opts.bundle = operands[0];
    return runBenchCascade(opts);
  }
  if (cmd == "check-cacheblend") {
    CheckCacheBlendOptions opts;
    OptionParser p("check-cacheblend");
    addCheckCacheBlendOptions(p, opts);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!p.seen("--seed"))
      opts.seed = clockSeed();
    return runCheckCacheBlend(opts);
  }
  if (cmd == "bench-cacheblend") {
    BenchCacheBlendOptions opts;
    std::vector<std::string> operands;
    OptionParser p("bench-cacheblend");
    addBenchCacheBlendOptions(p, opts, operands);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    opts.bundle = operands[0];
    return runBenchCacheBlend(opts);
  }
  if (cmd == "check-mla") {
    CheckMLAOptions opts;
    OptionParser p("check-mla");
    addCheckMLAOptions(p, opts);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!p.seen("--seed"))
      opts.seed = clockSeed();
    return runCheckMLA(opts);
  }
  if (cmd == "bench-mla") {
    BenchMLAOptions opts;
    std::vector<std::string> operands;
    OptionParser p("bench-mla");
    addBenchMLAOptions(p, opts, operands);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    opts.bundle = operands[0];
    return runBenchMLA(opts);
  }
  if (cmd == "check-cp") {
    CheckCPOptions opts;
    OptionParser p("check-cp");
    addCheckCPOptions(p, opts);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    if (!p.seen("--seed"))
      opts.seed = clockSeed();
    return runCheckCP(opts);
  }
  if (cmd == "bench-cp") {
    BenchCPOptions opts;
    std::vector<std::string> operands;
    OptionParser p("bench-cp");
    addBenchCPOptions(p, opts, operands);
    if (int rc = parseCommand(p, argc, argv); rc >= 0)
      return rc;
    opts.bundle = operands[0];
    return runBenchCP(opts);
  }
  std::fprintf(stderr,
               "pa-gpu-runner: unknown command '%s' (expected check, bench, "
               "check-prefill, bench-prefill, check-append, bench-append, "
               "check-cascade, bench-cascade, check-cacheblend, "
               "bench-cacheblend, check-mla, bench-mla, check-cp or "
               "bench-cp)\n",
               cmd.c_str());
  printUsage(stderr);
  return 2;
}
