//===- RuntimeInternal.h - shared internals of the GPU runtime --*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// What the files of the GPU runtime share (not installed, not part of the C
// API): the driver-call checks, the bundle and plan objects behind the C
// API's opaque handles, and the steps that Runtime.cpp (decode, prefill,
// append) and Cascade.cpp (merge, merge_states, cascade) both use: device
// buffers, launches and the decode / prefill plans and runs.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_LIB_RUNTIME_RUNTIMEINTERNAL_H
#define PAGEDATTN_LIB_RUNTIME_RUNTIMEINTERNAL_H

#include "PagedAttn/Runtime/pa_runtime.h"

#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/Planner.h"

#include <cuda.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace pa::rt::impl {

/// Status of a driver call: "<what> failed: CUDA_ERROR_X (text)".
Status cuCheck(CUresult r, const char *what);

/// Records `s` as the thread's last error (pa_last_error); returns the C
/// API code.
int report(const Status &s);

/// Fails unless a CUDA context is current on this thread.
Status requireContext(CUcontext *out = nullptr);

/// Makes `ctx` current for the lifetime of the guard (used by the frees,
/// which may run on a thread without a current context).
class ContextGuard {
public:
  explicit ContextGuard(CUcontext ctx) {
    pushed = ctx && cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
  }
  ~ContextGuard() {
    if (pushed) {
      CUcontext dummy;
      cuCtxPopCurrent(&dummy);
    }
  }
  ContextGuard(const ContextGuard &) = delete;
  ContextGuard &operator=(const ContextGuard &) = delete;

private:
  bool pushed = false;
};

/// ceil(a / b) for a >= 0, b >= 1.
inline int64_t ceilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

} // namespace pa::rt::impl

/// Evaluates a driver call and returns its failure Status from the caller.
#define PA_CU(call)                                                            \
  do {                                                                         \
    if (::pa::rt::Status paStatus_ = ::pa::rt::impl::cuCheck((call), #call);   \
        !paStatus_)                                                            \
      return paStatus_;                                                        \
  } while (0)

/// Returns a Status from the caller when it is an error.
#define PA_TRY(expr)                                                           \
  do {                                                                         \
    if (::pa::rt::Status paStatus_ = (expr); !paStatus_)                       \
      return paStatus_;                                                        \
  } while (0)

//===----------------------------------------------------------------------===//
// Bundle and plan objects
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Bundle and plan objects
//===----------------------------------------------------------------------===//

struct pa_bundle {
  std::string dir;
  pa::rt::Manifest manifest;
  CUcontext ctx = nullptr;
  /// Loaded binaries, by file name (kernels may share one).
  std::vector<std::pair<std::string, CUmodule>> modules;
  /// By pa::rt::KernelKind; null when the bundle lacks the kernel.
  CUfunction functions[pa::rt::kNumKernelKinds] = {};
  /// mla_decode's and mla_decode_small's CTA slots on the bundle's device
  /// (SMs x CTAs per SM): the automatic split-KV's budget, queried once,
  /// on first use.
  mutable int64_t mlaSlots[2] = {0, 0};

  CUfunction function(pa::rt::KernelKind k) const {
    return functions[static_cast<int>(k)];
  }
  /// decode_split: split-KV decode in one launch.
  bool hasFusedSplit() const { return function(pa::rt::KernelKind::DecodeSplit); }
  bool hasSplit() const {
    return hasFusedSplit() || (function(pa::rt::KernelKind::DecodePartial) &&
                               function(pa::rt::KernelKind::MergeSegments));
  }
  /// The kernel that computes a split plan's partial states.
  pa::rt::KernelKind splitKernel() const {
    return hasFusedSplit() ? pa::rt::KernelKind::DecodeSplit
                           : pa::rt::KernelKind::DecodePartial;
  }
  void unload() {
    pa::rt::impl::ContextGuard guard(ctx);
    for (auto &m : modules)
      cuModuleUnload(m.second);
    modules.clear();
  }
};

struct pa_plan {
  pa::rt::BundleConfig config;
  CUcontext ctx = nullptr;
  int64_t batch = 0, nnz = 0, numSMs = 0, ctasPerSM = 0;
  /// > 0: the decode kernels' dynamic shared memory, which holds them to
  /// ctasPerSM CTAs per SM (decodeCTAsPerSM below the occupancy).
  int64_t launchSmem = 0;
  pa::rt::DecodePlan plan;
  std::vector<int64_t> kvLens;
  /// Device copies of plan.work and the split-KV workspace (split only).
  CUdeviceptr workIndptr = 0, workRequest = 0, workStart = 0, workEnd = 0;
  CUdeviceptr oPart = 0, lsePart = 0;
  /// decode_split's arrival counters [B, Hq] (split plans of a bundle with
  /// decode_split): set at creation to 0, or to the kernel's merge-together
  /// flag when mergeTogether; every launch leaves them so.
  CUdeviceptr mergeCounters = 0;
  /// The split plan's CTAs merge together: decode_split launched
  /// cooperatively, its counters at the manifest's `merge together` value.
  bool mergeTogether = false;
  /// pa_plan_options::split_merge, kept for updates.
  int splitMerge = 0;
  /// Wcap: rows of the work arrays and of o_part / lse_part.
  int64_t workCapacity = 0;
  /// A CUDA-graph plan: the split path always, Wcap fixed at creation,
  /// re-planned in place by pa_decode_plan_update.
  bool graph = false;
  /// force_chunk (0: the planner's), kept for updates.
  int64_t forceChunk = 0;
  /// The bundle the plan was made with (pa_decode_plan_update re-plans
  /// with it; the bundle must outlive the plan).
  const pa_bundle *bundle = nullptr;

  void release() {
    pa::rt::impl::ContextGuard guard(ctx);
    for (CUdeviceptr *p :
         {&workIndptr, &workRequest, &workStart, &workEnd, &oPart, &lsePart,
          &mergeCounters}) {
      if (*p)
        cuMemFree(*p);
      *p = 0;
    }
  }
};

struct pa_prefill_plan {
  pa::rt::BundleConfig config;
  CUcontext ctx = nullptr;
  /// The kernel the plan launches: Prefill, PrefillShort or (split-KV)
  /// PrefillPartial followed by MergeSegments.
  pa::rt::KernelKind kernel = pa::rt::KernelKind::Prefill;
  int64_t batch = 0, nnz = 0, numQueryRows = 0, queriesPerTile = 0,
          qTiles = 0;
  std::vector<int64_t> kvLens;
  std::vector<int32_t> qoIndptr;
  /// Split-KV plans: pa::rt::planPrefill's plan, the device copies of its
  /// work list (request, qo_start, qo_end, kv_start, kv_end, partial_row,
  /// partial_stride), the merge segments and the partial states.
  pa::rt::PrefillPlan split;
  CUdeviceptr work[7] = {}, mergeIndptr = 0, oPart = 0, lsePart = 0;

  bool isSplit() const { return kernel == pa::rt::KernelKind::PrefillPartial; }
  void release() {
    pa::rt::impl::ContextGuard guard(ctx);
    for (CUdeviceptr *p : {&work[0], &work[1], &work[2], &work[3], &work[4],
                           &work[5], &work[6], &mergeIndptr, &oPart,
                           &lsePart}) {
      if (*p)
        cuMemFree(*p);
      *p = 0;
    }
  }
};


namespace pa::rt::impl {

/// Allocates `bytes` (at least 1) and copies `data` to it when non-null.
Status upload(CUdeviceptr &dst, const void *data, size_t bytes);

/// Copies `count` int32 values from the device (ordered on `stream`).
Status download(std::vector<int32_t> &out, CUdeviceptr src, int64_t count,
                CUstream stream, const char *what);

/// Packs and launches kernel `kind` of `b`; in checked mode synchronizes and
/// names the kernel on an asynchronous fault. `sharedBytes` > 0: dynamic
/// shared memory instead of the manifest's (a plan's occupancy limit,
/// limitOccupancy()). `cooperative`: a cooperative launch (every CTA
/// resident at once, or the launch fails with
/// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, returned in `cuResult`).
Status launch(const pa_bundle &b, KernelKind kind, const ArgBindings &args,
              const ProblemDims &dims, CUstream stream, bool checked,
              int64_t sharedBytes = 0, bool cooperative = false,
              CUresult *cuResult = nullptr);

/// The dynamic shared memory that holds kernel `kind` of `b` to at most
/// `ctas` CTAs per SM (the SM's shared memory over ctas + 1, less the
/// per-block reservation and the function's static bytes, plus one;
/// never below the manifest's), its function's dynamic-memory limit raised
/// to it. 0 when the kernel already runs at most `ctas` or the device's
/// per-block limit does not allow the amount.
Status limitOccupancy(const pa_bundle &b, KernelKind kind, int64_t ctas,
                      int64_t &sharedBytes);

/// Binds roles into `args` with the shapes roleShape gives them for the
/// configuration and the problem: `RoleBinder bind{c, dims, args};
/// bind(ArgRole::Q, ptr);`. It holds references; each call reads `dims` as
/// it is then.
struct RoleBinder {
  const BundleConfig &config;
  const ProblemDims &dims;
  ArgBindings &args;
  void operator()(ArgRole r, pa_deviceptr ptr) const {
    args.bind(r, ptr, roleShape(config, r, dims));
  }
};

/// Fails unless bundle `b` has kernel `kind`: "bundle 'DIR' has no 'KIND'
/// kernel (HINT)", the hint saying what compiles it.
Status requireKernel(const pa_bundle &b, KernelKind kind, const char *hint);

/// The cache pointers against the bundle's storage: kv for joint K/V, k
/// and v for split, and scales only for an fp8 cache.
Status checkCacheForm(const BundleConfig &c, pa_deviceptr kv, pa_deviceptr k,
                      pa_deviceptr v, pa_deviceptr kScale,
                      pa_deviceptr vScale);

/// An argument pointer a launch needs when `needed`.
struct RequiredArg {
  const char *name;
  pa_deviceptr ptr;
  bool needed;
};

/// "argument 'NAME' is null" for the first needed argument that is null.
Status checkRequired(std::initializer_list<RequiredArg> args);

/// "argument 'NAME' is null", or "argument 'NAME' = 0x... is not
/// ALIGNMENT-byte aligned (WHY)".
Status checkAlignedArg(const char *name, pa_deviceptr ptr, int64_t alignment,
                       const char *why);

/// Binds the cache (kv, or k and v) and an fp8 cache's scales.
void bindCache(const BundleConfig &c, pa_deviceptr kv, pa_deviceptr k,
               pa_deviceptr v, pa_deviceptr kScale, pa_deviceptr vScale,
               const ProblemDims &dims, ArgBindings &args);

/// Checked mode of an fp8 cache: copies the scales and fails on one that is
/// not finite and > 0 (nothing for other caches).
Status checkScales(const BundleConfig &c, pa_deviceptr kScale,
                   pa_deviceptr vScale, CUstream stream);

/// pa_decode_plan / pa_decode_run without the C wrappers.
Status makePlan(pa_bundle &b, const int32_t *kvIndptr,
                const int32_t *lastPageLen, int64_t batch,
                const pa_plan_options *options, pa_plan &p);
Status runDecode(pa_bundle &b, const pa_plan &p, const pa_decode_args &a,
                 CUstream stream);

/// pa_prefill_plan_ex / pa_prefill_run without the C wrappers.
Status makePrefillPlan(pa_bundle &b, const int32_t *qoIndptr,
                       const int32_t *kvIndptr, const int32_t *lastPageLen,
                       int64_t batch, int64_t numQueryRows,
                       const pa_prefill_plan_options *options,
                       pa_prefill_plan_t &p);
Status runPrefill(pa_bundle &b, const pa_prefill_plan_t &p,
                  const pa_prefill_args &a, CUstream stream);

} // namespace pa::rt::impl

#endif // PAGEDATTN_LIB_RUNTIME_RUNTIMEINTERNAL_H
