//===- Runtime.cpp - C API of the GPU runtime (CUDA driver API) -----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Implements pa_runtime.h on top of the CUDA driver API (libcuda only, no
// CUDA runtime): bundle loading, decode planning (pa::rt::planDecode),
// prefill planning (lengths, the kernel choice between prefill and
// prefill_short (pa::rt::choosePrefillShort), and the q_tiles grid),
// argument checks, checked
// mode (pa::rt::validatePageTable, validateQueries, validateMask on host
// copies of the device arrays) and the launches. Decode and prefill share
// one home for the cache-argument checks, the page-table check, the role
// bindings of the cache and the launch (packing, grid, checked-mode sync). Builds with -fno-exceptions: failures
// travel as pa::rt::Status and end in the per-thread pa_last_error().
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

using namespace pa::rt;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

namespace pa::rt::impl {

thread_local std::string lastError;

Status cuCheck(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return Status::success();
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUresult";
  if (cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
    text = "no description";
  return fail(what, " failed: ", name, " (", static_cast<int>(r), "): ", text);
}

int report(const Status &s) {
  if (s) {
    return PA_SUCCESS;
  }
  lastError = s.message;
  return PA_ERROR;
}

Status requireContext(CUcontext *out) {
  CUcontext ctx = nullptr;
  CUresult r = cuCtxGetCurrent(&ctx);
  if (r == CUDA_ERROR_NOT_INITIALIZED)
    return fail("the CUDA driver is not initialized: call pa_init first");
  PA_CU(r);
  if (!ctx)
    return fail("no CUDA context is current on this thread: call pa_init "
                "first");
  if (out)
    *out = ctx;
  return Status::success();
}

std::mutex initMutex;
/// Primary contexts retained by pa_init, by device ordinal.
std::map<int, std::pair<CUdevice, CUcontext>> retained;

} // namespace pa::rt::impl

namespace pa::rt::impl {

/// Loads every kernel binary of `b` and looks its functions up.
Status loadBundle(pa_bundle &b) {
  PA_TRY(requireContext(&b.ctx));
  PA_TRY(readManifest(b.dir, b.manifest));
  for (const KernelSpec &k : b.manifest.kernels) {
    CUmodule module = nullptr;
    for (auto &m : b.modules)
      if (m.first == k.file)
        module = m.second;
    std::string path = b.dir + "/" + k.file;
    if (!module) {
      std::string image;
      PA_TRY(readFile(path, image));
      image.push_back('\0'); // PTX text must be NUL-terminated
      char errorLog[8192] = {0};
      CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
      void *values[] = {errorLog,
                        reinterpret_cast<void *>(uintptr_t(sizeof(errorLog)))};
      CUresult r =
          cuModuleLoadDataEx(&module, image.data(), 2, options, values);
      if (r != CUDA_SUCCESS) {
        std::string what = "cuModuleLoadDataEx('" + path + "')";
        Status s = cuCheck(r, what.c_str());
        if (errorLog[0])
          s.message += "; JIT log: " + std::string(errorLog);
        return s;
      }
      b.modules.emplace_back(k.file, module);
    }
    CUfunction fn = nullptr;
    CUresult r = cuModuleGetFunction(&fn, module, k.symbol.c_str());
    if (r != CUDA_SUCCESS) {
      std::string what = "cuModuleGetFunction('" + k.symbol + "') for kernel '" +
                         toString(k.kind) + "' in '" + path + "'";
      return cuCheck(r, what.c_str());
    }
    // ABI check: the kernel must take exactly numParams() 8-byte scalars
    // (skipped on drivers without cuFuncGetParamInfo).
    size_t offset = 0, size = 0;
    CUresult pr = cuFuncGetParamInfo(fn, 0, &offset, &size);
    if (pr == CUDA_SUCCESS) {
      int64_t n = k.numParams();
      for (int64_t i = 0; i < n; ++i) {
        pr = cuFuncGetParamInfo(fn, static_cast<size_t>(i), &offset, &size);
        if (pr != CUDA_SUCCESS)
          return fail("kernel '", toString(k.kind), "' (", k.symbol, " in '",
                      path, "') takes ", i,
                      " parameters, the manifest's memref arguments need ", n);
        if (offset != static_cast<size_t>(8 * i) || size != 8)
          return fail("kernel '", toString(k.kind), "' (", k.symbol,
                      "): parameter ", i, " is ", size, " bytes at offset ",
                      offset, ", the memref ABI needs 8 bytes at offset ",
                      8 * i);
      }
      if (cuFuncGetParamInfo(fn, static_cast<size_t>(n), &offset, &size) ==
          CUDA_SUCCESS)
        return fail("kernel '", toString(k.kind), "' (", k.symbol,
                    ") takes more than the ", n,
                    " parameters the manifest's memref arguments need");
    }
    // The function's static shared memory counts against the same limit
    // (a wgmma kernel's 1024-byte aligned dynamic-memory symbol is one
    // static byte: 48 KiB of dynamic memory beside it exceed the default).
    int staticBytes = 0;
    PA_CU(cuFuncGetAttribute(&staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                             fn));
    if (k.launch.sharedBytes + staticBytes > 48 * 1024) {
      // Shared memory above 48 KiB needs the opt-in limit of the device and
      // the function's dynamic-memory attribute raised.
      CUdevice dev;
      PA_CU(cuCtxGetDevice(&dev));
      int optin = 0;
      PA_CU(cuDeviceGetAttribute(
          &optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
      if (k.launch.sharedBytes + staticBytes > optin)
        return fail("kernel '", toString(k.kind), "' (", k.symbol,
                    ") needs ", k.launch.sharedBytes,
                    " bytes of dynamic shared memory beside ", staticBytes,
                    " static, the device allows at most ", optin,
                    " per block (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
      std::string what = "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = " +
                         std::to_string(k.launch.sharedBytes) + ") for '" +
                         k.symbol + "'";
      PA_TRY(cuCheck(cuFuncSetAttribute(
                         fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                         static_cast<int>(k.launch.sharedBytes)),
                     what.c_str()));
    }
    b.functions[static_cast<int>(k.kind)] = fn;
  }
  return Status::success();
}

/// CTAs of kernel `kind` of `b` (loaded: manifest entry and function) that
/// fit on one SM at its launch block and `sharedBytes` of dynamic shared
/// memory (< 0: the manifest's).
Status kernelOccupancy(const pa_bundle &b, KernelKind kind,
                       int64_t sharedBytes, int &blocks) {
  const KernelSpec *k = b.manifest.find(kind);
  int threads = static_cast<int>(k->launch.block[0] * k->launch.block[1] *
                                 k->launch.block[2]);
  PA_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, b.function(kind), threads,
      static_cast<size_t>(sharedBytes < 0 ? k->launch.sharedBytes
                                          : sharedBytes)));
  return Status::success();
}

Status limitOccupancy(const pa_bundle &b, KernelKind kind, int64_t ctas,
                      int64_t &sharedBytes) {
  sharedBytes = 0;
  const KernelSpec *k = b.manifest.find(kind);
  CUfunction fn = b.function(kind);
  if (!k || !fn || ctas < 1)
    return Status::success();
  CUdevice dev;
  PA_CU(cuCtxGetDevice(&dev));
  int perSM = 0, reserved = 0, optin = 0, staticBytes = 0;
  PA_CU(cuDeviceGetAttribute(
      &perSM, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev));
  PA_CU(cuDeviceGetAttribute(
      &reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, dev));
  PA_CU(cuDeviceGetAttribute(
      &optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  PA_CU(cuFuncGetAttribute(&staticBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                           fn));
  int now = 0;
  PA_TRY(kernelOccupancy(b, kind, -1, now));
  if (now <= ctas)
    return Status::success();
  int64_t bytes = std::max<int64_t>(
      perSM / (ctas + 1) - reserved - staticBytes + 1, k->launch.sharedBytes);
  if (bytes + staticBytes > optin)
    return Status::success();
  std::string what = "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = " +
                     std::to_string(bytes) + ") for '" + k->symbol + "'";
  PA_TRY(cuCheck(cuFuncSetAttribute(
                     fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     static_cast<int>(bytes)),
                 what.c_str()));
  int limited = 0;
  PA_TRY(kernelOccupancy(b, kind, bytes, limited));
  if (limited >= 1 && limited <= ctas)
    sharedBytes = bytes;
  return Status::success();
}

/// Allocates `bytes` (at least 1) and copies `data` to it when non-null.
Status upload(CUdeviceptr &dst, const void *data, size_t bytes) {
  PA_CU(cuMemAlloc(&dst, std::max<size_t>(bytes, 1)));
  if (data && bytes)
    PA_CU(cuMemcpyHtoD(dst, data, bytes));
  return Status::success();
}

/// Allocates room for `capacity` int32 entries and copies `v` (at most
/// that many) to its start.
Status upload(CUdeviceptr &dst, const std::vector<int32_t> &v,
              int64_t capacity) {
  PA_TRY(upload(dst, nullptr, static_cast<size_t>(capacity) * 4));
  if (!v.empty())
    PA_CU(cuMemcpyHtoD(dst, v.data(), v.size() * 4));
  return Status::success();
}

Status choosePlan(const pa_bundle &b, pa_plan &p, I32Span indptr,
                  I32Span lastLen);

/// The CTA slots of the device for plan `p`'s decode_split launches (at
/// its block and shared memory) where its splits can merge together; 0
/// where they cannot (no decode_split, no `merge together` line in its
/// manifest, or the plan asks for PA_SPLIT_MERGE_LAST).
Status mergeTogetherSlots(const pa_bundle &b, const pa_plan &p,
                          int64_t &slots) {
  slots = 0;
  const KernelSpec *k = b.manifest.find(KernelKind::DecodeSplit);
  CUfunction fn = b.function(KernelKind::DecodeSplit);
  if (!k || !fn || !k->mergeTogether || p.splitMerge != PA_SPLIT_MERGE_AUTO)
    return Status::success();
  int blocks = 0;
  PA_TRY(kernelOccupancy(b, KernelKind::DecodeSplit,
                         p.launchSmem > 0 ? p.launchSmem : -1, blocks));
  slots = p.numSMs * blocks;
  return Status::success();
}

/// The CTAs of a decode_split launch over `items` work items for plan `p`.
Status decodeSplitCTAs(const pa_bundle &b, const pa_plan &p, int64_t items,
                       int64_t &ctas) {
  const KernelSpec *k = b.manifest.find(KernelKind::DecodeSplit);
  if (!k)
    return fail("bundle '", b.dir, "' has no 'decode_split' kernel");
  ProblemDims dims;
  dims.batch = p.batch;
  dims.workCapacity = items;
  std::array<uint32_t, 3> grid;
  PA_TRY(resolveGrid(k->launch, b.manifest.config, dims, grid));
  ctas = int64_t(grid[0]) * grid[1] * grid[2];
  return Status::success();
}

/// The most work items of one request in `w`.
int64_t maxItemsOf(const WorkList &w) {
  int64_t most = 0;
  for (size_t r = 0; r + 1 < w.indptr.size(); ++r)
    most = std::max<int64_t>(most, w.indptr[r + 1] - w.indptr[r]);
  return most;
}

/// Output slots a thread of decode_split's last-CTA merge takes: the CTA's
/// heads (the group, over the grid's z chunks) x D / 4 over its threads.
int64_t mergeSlotsPerThread(const pa_bundle &b) {
  const KernelSpec *k = b.manifest.find(KernelKind::DecodeSplit);
  const BundleConfig &c = b.manifest.config;
  if (!k)
    return 1;
  int64_t chunks = k->launch.grid[2].symbol == GridSymbol::Literal
                       ? std::max<int64_t>(k->launch.grid[2].value, 1)
                       : 1;
  int64_t heads = std::max<int64_t>(c.group / chunks, 1);
  int64_t threads = std::max<int64_t>(
      k->launch.block[0] * k->launch.block[1] * k->launch.block[2], 1);
  int64_t width = c.headDim % 4 == 0 ? 4 : 1;
  return ceilDiv(heads * c.headDim / width, threads);
}

/// decode_split's arrival counters between launches of plan `p`: its
/// `merge together` value when the plan merges together, else 0.
unsigned mergeCounterValue(const pa_bundle &b, const pa_plan &p) {
  const KernelSpec *k = b.manifest.find(KernelKind::DecodeSplit);
  return p.mergeTogether && k && k->mergeTogether
             ? static_cast<unsigned>(*k->mergeTogether)
             : 0u;
}

Status makePlan(pa_bundle &b, const int32_t *kvIndptr,
                const int32_t *lastPageLen, int64_t batch,
                const pa_plan_options *options, pa_plan &p) {
  PA_TRY(requireContext(&p.ctx));
  p.bundle = &b;
  const BundleConfig &c = b.manifest.config;
  p.config = c;
  p.batch = batch;
  // The C API's contract: kv_indptr has batch + 1 entries and
  // kv_last_page_len batch entries.
  I32Span indptr(kvIndptr, batch + 1), lastLen(lastPageLen, batch);
  PA_TRY(kvLengths(indptr, lastLen, batch, c.pageSize, p.kvLens));
  p.nnz = kvIndptr[batch];

  CUdevice dev;
  PA_CU(cuCtxGetDevice(&dev));
  int sms = 0;
  PA_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             dev));
  p.numSMs = sms;
  int64_t forceChunk = options ? options->force_chunk : 0;
  p.ctasPerSM = options ? options->ctas_per_sm : 0;
  if (p.ctasPerSM < 0)
    return fail("ctas_per_sm = ", p.ctasPerSM, " is negative");
  if (forceChunk < 0)
    return fail("force_chunk = ", forceChunk, " is negative");
  if (p.ctasPerSM == 0) {
    p.ctasPerSM = 1;
    KernelKind split = b.splitKernel();
    if (b.manifest.find(split) && b.function(split)) {
      int blocks = 0;
      PA_TRY(kernelOccupancy(b, split, -1, blocks));
      p.ctasPerSM = std::max(blocks, 1);
    }
  }

  p.forceChunk = forceChunk;
  int64_t capacity = options ? options->graph_work_capacity : 0;
  if (capacity < 0)
    return fail("graph_work_capacity = ", capacity, " is negative");
  // The planner's occupancy (not for a forced ctas_per_sm or chunk, nor a
  // graph plan, which keeps the kernels' occupancy as updates re-plan it):
  // decodeCTAsPerSM. A split plan assumes it; a one-pass grid whose last
  // wave idles runs at it, held there by the decode kernels' shared memory.
  if ((!options || options->ctas_per_sm == 0) && forceChunk == 0 &&
      capacity == 0) {
    int64_t want = decodeCTAsPerSM(batch * c.kvHeads, sms, p.ctasPerSM,
                                   c.fp8() && batch > 1, maxLength(p.kvLens));
    if (batch * c.kvHeads < sms * p.ctasPerSM) {
      p.ctasPerSM = want;
    } else if (want < p.ctasPerSM) {
      int64_t smem = 0;
      for (KernelKind kind : {KernelKind::Decode, KernelKind::DecodeSplit,
                              KernelKind::DecodePartial}) {
        if (!b.function(kind))
          continue;
        int64_t bytes = 0;
        PA_TRY(limitOccupancy(b, kind, want, bytes));
        if (bytes == 0) {
          smem = -1;
          break;
        }
        smem = std::max(smem, bytes);
      }
      if (smem > 0) {
        p.launchSmem = smem;
        p.ctasPerSM = want;
      }
    }
  }
  p.splitMerge = options ? options->split_merge : PA_SPLIT_MERGE_AUTO;
  if (p.splitMerge != PA_SPLIT_MERGE_AUTO &&
      p.splitMerge != PA_SPLIT_MERGE_LAST)
    return fail("split_merge = ", p.splitMerge,
                " must be PA_SPLIT_MERGE_AUTO (0) or PA_SPLIT_MERGE_LAST (1)");
  if (capacity > 0) {
    if (!b.hasSplit())
      return fail("a CUDA-graph plan (graph_work_capacity) runs "
                  "split-KV decode (decode_split, or decode_partial + "
                  "merge_segments), and bundle '",
                  b.dir, "' has no such kernels");
    p.graph = true;
    p.workCapacity = capacity;
    // A graph plan's grid is its capacity's: it merges together (every
    // update too) where that grid fits at once.
    int64_t slots = 0, ctas = 0;
    PA_TRY(mergeTogetherSlots(b, p, slots));
    if (slots > 0) {
      PA_TRY(decodeSplitCTAs(b, p, capacity, ctas));
      p.mergeTogether = ctas <= slots;
    }
  }
  PA_TRY(choosePlan(b, p, indptr, lastLen));
  if (!p.plan.split)
    return Status::success();

  // Wcap: the list's items, or a graph plan's fixed capacity.
  const WorkList &w = p.plan.work;
  if (!p.graph)
    p.workCapacity = w.size();
  PA_TRY(upload(p.workIndptr, w.indptr, w.indptr.size()));
  PA_TRY(upload(p.workRequest, w.request, p.workCapacity));
  PA_TRY(upload(p.workStart, w.start, p.workCapacity));
  PA_TRY(upload(p.workEnd, w.end, p.workCapacity));
  size_t rows = static_cast<size_t>(p.workCapacity * c.numQHeads());
  PA_TRY(upload(p.oPart, nullptr, rows * c.headDim * sizeof(float)));
  PA_TRY(upload(p.lsePart, nullptr, rows * sizeof(float)));
  if (b.hasFusedSplit()) {
    // The counters' value at launch picks the merge; the kernel leaves them
    // at it.
    size_t counters = static_cast<size_t>(batch * c.numQHeads());
    PA_TRY(upload(p.mergeCounters, nullptr, counters * 4));
    PA_CU(cuMemsetD32(p.mergeCounters, mergeCounterValue(b, p),
                      std::max<size_t>(counters, 1)));
  }
  return Status::success();
}

/// The work list of plan `p` (its kvLens, forceChunk, SMs and CTAs per SM
/// set) for bundle `b`: the planner's chunk or force_chunk; one item a
/// request without split kernels; for a graph plan the split path always,
/// the chunk enlarged until the items fit p.workCapacity.
Status choosePlan(const pa_bundle &b, pa_plan &p, I32Span indptr,
                  I32Span lastLen) {
  const BundleConfig &c = b.manifest.config;
  int64_t batch = p.batch, forceChunk = p.forceChunk;
  int64_t maxLen = maxLength(p.kvLens);
  // The merge together (a graph plan decided it for its capacity): the
  // planner's split then ignores the merge's cost; a grid that does not
  // fit at once gets the last CTA's merge and the planner's usual split.
  int64_t slots = 0;
  if (!p.graph)
    PA_TRY(mergeTogetherSlots(b, p, slots));
  bool together = p.graph ? p.mergeTogether : slots > 0;
  if (maxLen > std::numeric_limits<int32_t>::max())
    return fail("kv_len = ", maxLen,
                " exceeds INT32_MAX (work items hold int32 token offsets)");
  if (!b.hasSplit() && forceChunk == 0) {
    // No split kernels: one work item per request.
    forceChunk = std::max<int64_t>(ceilDiv(std::max<int64_t>(maxLen, 1),
                                           c.pageSize) *
                                       c.pageSize,
                                   1);
  }
  if (forceChunk > 0) {
    p.plan.chunkSize = forceChunk;
    p.plan.work = planFixedChunks(p.kvLens, forceChunk);
    p.plan.split = false;
    int64_t total = 0;
    for (int64_t i = 0; i < batch; ++i) {
      total += p.kvLens[i];
      if (p.plan.work.indptr[i + 1] - p.plan.work.indptr[i] > 1)
        p.plan.split = true;
    }
    p.plan.maxItemsBound = batch + ceilDiv(total, forceChunk);
  } else {
    PA_TRY(planDecode(indptr, lastLen, batch, c.pageSize, c.kvHeads, p.numSMs,
                      p.ctasPerSM, p.plan, kDefaultMinChunk, together));
  }
  if (p.plan.split && !b.hasSplit())
    return fail("the plan splits KV (chunk ", p.plan.chunkSize,
                " tokens) but bundle '", b.dir,
                "' has no split-KV kernels (decode_split, or decode_partial "
                "+ merge_segments)");
  if (!p.graph) {
    p.mergeTogether = false;
    if (together && p.plan.split) {
      int64_t ctas = 0;
      PA_TRY(decodeSplitCTAs(b, p, p.plan.work.size(), ctas));
      p.mergeTogether = ctas <= slots;
      // The planner's own split merges together where that pays
      // (preferMergeTogether); a forced chunk wherever the grid fits.
      if (p.mergeTogether && forceChunk == 0)
        p.mergeTogether =
            preferMergeTogether(batch, maxItemsOf(p.plan.work),
                                p.plan.chunkSize, mergeSlotsPerThread(b));
      if (!p.mergeTogether && forceChunk == 0)
        PA_TRY(planDecode(indptr, lastLen, batch, c.pageSize, c.kvHeads,
                          p.numSMs, p.ctasPerSM, p.plan));
    }
    return Status::success();
  }
  // A graph plan: at most Wcap items (the smallest larger chunk, a
  // multiple of the page size, that fits), and the split path whatever
  // the chunk.
  if (p.plan.work.size() > p.workCapacity) {
    p.plan.chunkSize = smallestFittingChunk(
        p.kvLens, 1, p.workCapacity, c.pageSize, p.plan.chunkSize + 1);
    p.plan.work = planFixedChunks(p.kvLens, p.plan.chunkSize);
    if (p.plan.work.size() > p.workCapacity)
      return fail("graph_work_capacity = ", p.workCapacity,
                  " is below the batch's non-empty requests (",
                  p.plan.work.size(), ")");
  }
  p.plan.split = true;
  return Status::success();
}

/// pa_decode_plan_update: re-plans graph plan `p` for a new page table of
/// its batch and copies the list into its buffers on `stream`; `p` is
/// unchanged on failure.
Status updatePlan(const pa_bundle &b, pa_plan &p, const int32_t *kvIndptr,
                  const int32_t *lastPageLen, int64_t batch,
                  CUstream stream) {
  if (!p.graph)
    return fail("the plan is not a CUDA-graph plan (make it with "
                "pa_plan_options.graph_work_capacity > 0)");
  if (batch != p.batch)
    return fail("batch = ", batch, " but the graph plan was made for batch ",
                p.batch);
  if (!kvIndptr || !lastPageLen)
    return fail("null page table");
  PA_TRY(requireContext());
  pa_plan next = p;
  // `next` shares p's device buffers: it must not release them.
  I32Span indptr(kvIndptr, batch + 1), lastLen(lastPageLen, batch);
  PA_TRY(kvLengths(indptr, lastLen, batch, b.manifest.config.pageSize,
                   next.kvLens));
  next.nnz = kvIndptr[batch];
  PA_TRY(choosePlan(b, next, indptr, lastLen));
  const WorkList &w = next.plan.work;
  auto copy = [&](CUdeviceptr dst, const std::vector<int32_t> &v,
                  const char *what) -> Status {
    if (v.empty())
      return Status::success();
    std::string call = std::string("cuMemcpyHtoDAsync(") + what + ")";
    return cuCheck(cuMemcpyHtoDAsync(dst, v.data(), v.size() * 4, stream),
                   call.c_str());
  };
  PA_TRY(copy(p.workIndptr, w.indptr, "work_indptr"));
  PA_TRY(copy(p.workRequest, w.request, "work_request"));
  PA_TRY(copy(p.workStart, w.start, "work_start"));
  PA_TRY(copy(p.workEnd, w.end, "work_end"));
  p.kvLens = std::move(next.kvLens);
  p.nnz = next.nnz;
  p.plan = std::move(next.plan);
  return Status::success();
}

/// Copies `count` int32 values from the device (ordered on `stream`).
Status download(std::vector<int32_t> &out, CUdeviceptr src, int64_t count,
                CUstream stream, const char *what) {
  out.assign(static_cast<size_t>(std::max<int64_t>(count, 0)), 0);
  if (count <= 0)
    return Status::success();
  if (!src)
    return fail(what, " is null (it needs ", count, " entries)");
  std::string call = std::string("cuMemcpyDtoHAsync(") + what + ")";
  PA_TRY(cuCheck(cuMemcpyDtoHAsync(out.data(), src, out.size() * 4, stream),
                 call.c_str()));
  PA_CU(cuStreamSynchronize(stream));
  return Status::success();
}

/// The arguments decode and prefill share: the query / output tensors, the
/// paged cache with its page table, and the sizes.
struct CacheArgs {
  pa_deviceptr q = 0, kv = 0, k = 0, v = 0, kvIndptr = 0, kvIndices = 0,
               kvLastPageLen = 0, o = 0, lse = 0;
  int64_t batch = 0, numQHeads = 0, headDim = 0, numPages = 0, nnz = 0;
  /// An fp8 cache's scales (0 otherwise).
  pa_deviceptr kScale = 0, vScale = 0;
};

CacheArgs cacheArgs(const pa_decode_args &a) {
  return {a.q,         a.kv,          a.k,        a.v,
          a.kv_indptr, a.kv_indices,  a.kv_last_page_len,
          a.o,         a.lse,         a.batch,    a.num_q_heads,
          a.head_dim,  a.num_pages,   a.nnz,      a.k_scale,
          a.v_scale};
}

CacheArgs cacheArgs(const pa_prefill_args &a) {
  return {a.q,         a.kv,          a.k,        a.v,
          a.kv_indptr, a.kv_indices,  a.kv_last_page_len,
          a.o,         a.lse,         a.batch,    a.num_q_heads,
          a.head_dim,  a.num_pages,   a.nnz,      a.k_scale,
          a.v_scale};
}

/// The cache pointers against the bundle's storage: kv for joint K/V, k
/// and v for split, and scales only for an fp8 cache.
Status checkCacheForm(const BundleConfig &c, pa_deviceptr kv, pa_deviceptr k,
                      pa_deviceptr v, pa_deviceptr kScale,
                      pa_deviceptr vScale) {
  bool joint = c.kv == KVStorage::Joint;
  if (joint && (k || v))
    return fail("the bundle stores K and V jointly (kv joint): pass kv, not "
                "k / v");
  if (!joint && kv)
    return fail("the bundle stores K and V apart (kv split): pass k and v, "
                "not kv");
  if (!c.fp8() && (kScale || vScale))
    return fail("k_scale / v_scale are given but the bundle's cache is not "
                "fp8 (its elements are ",
                toString(c.dtype), "): pass 0");
  return Status::success();
}

Status requireKernel(const pa_bundle &b, KernelKind kind, const char *hint) {
  if (!b.function(kind))
    return fail("bundle '", b.dir, "' has no '", toString(kind), "' kernel (",
                hint, ")");
  return Status::success();
}

/// "argument 'NAME' is null" for the first needed argument that is null.
Status checkRequired(std::initializer_list<RequiredArg> args) {
  for (const RequiredArg &r : args)
    if (r.needed && !r.ptr)
      return fail("argument '", r.name, "' is null");
  return Status::success();
}

Status checkAlignedArg(const char *name, pa_deviceptr ptr, int64_t alignment,
                       const char *why) {
  if (!ptr)
    return fail("argument '", name, "' is null");
  if (ptr % static_cast<pa_deviceptr>(alignment) != 0)
    return fail("argument '", name, "' = 0x", std::hex, ptr, std::dec,
                " is not ", alignment, "-byte aligned (", why, ")");
  return Status::success();
}

/// The checks every run makes before anything else: the plan's bundle
/// config, batch and nnz against the plan, heads and head_dim against the
/// bundle, joint vs split cache, and (when `batch > 0`) non-null pointers
/// for what the sizes say is read or written.
Status checkCacheArgs(const BundleConfig &c, const BundleConfig &planConfig,
                      int64_t planBatch, int64_t planNnz, const CacheArgs &a) {
  if (planConfig != c)
    return fail("the plan was made for a bundle with config '",
                planConfig.str(), "', this bundle's is '", c.str(), "'");
  if (a.batch != planBatch)
    return fail("batch = ", a.batch, " but the plan was made for batch ",
                planBatch);
  if (a.numQHeads != c.numQHeads())
    return fail("num_q_heads = ", a.numQHeads, " but the bundle has kv_heads ",
                c.kvHeads, " * group ", c.group, " = ", c.numQHeads());
  if (a.headDim != c.headDim)
    return fail("head_dim = ", a.headDim, " but the bundle's is ", c.headDim);
  if (a.numPages < 0)
    return fail("num_pages = ", a.numPages, " is negative");
  if (a.nnz != planNnz)
    return fail("size mismatch: nnz = ", a.nnz,
                " but the plan was made with kv_indptr[", planBatch,
                "] = ", planNnz);
  PA_TRY(checkCacheForm(c, a.kv, a.k, a.v, a.kScale, a.vScale));
  bool joint = c.kv == KVStorage::Joint;
  if (a.batch == 0)
    return Status::success();
  return checkRequired({{"q", a.q, true},
                        {"o", a.o, true},
                        {"lse", a.lse, true},
                        {"kv_indptr", a.kvIndptr, true},
                        {"kv_last_page_len", a.kvLastPageLen, true},
                        {"kv_indices", a.kvIndices, a.nnz > 0},
                        {"kv", a.kv, joint && a.numPages > 0},
                        {"k", a.k, !joint && a.numPages > 0},
                        {"v", a.v, !joint && a.numPages > 0},
                        {"k_scale", a.kScale, c.fp8()},
                        {"v_scale", a.vScale, c.fp8()}});
}

/// Binds the cache roles (q, kv or k / v, the page table, o, lse).
/// Binds the cache of the bundle's storage (kv, or k and v) and an fp8
/// cache's scales.
void bindCache(const BundleConfig &c, pa_deviceptr kv, pa_deviceptr k,
               pa_deviceptr v, pa_deviceptr kScale, pa_deviceptr vScale,
               const ProblemDims &dims, ArgBindings &args) {
  RoleBinder bind{c, dims, args};
  if (c.kv == KVStorage::Joint) {
    bind(ArgRole::KV, kv);
  } else {
    bind(ArgRole::K, k);
    bind(ArgRole::V, v);
  }
  if (c.fp8()) {
    bind(ArgRole::KScale, kScale);
    bind(ArgRole::VScale, vScale);
  }
}

void bindCacheArgs(const BundleConfig &c, const CacheArgs &a,
                   const ProblemDims &dims, ArgBindings &args) {
  RoleBinder bind{c, dims, args};
  bind(ArgRole::Q, a.q);
  bindCache(c, a.kv, a.k, a.v, a.kScale, a.vScale, dims, args);
  bind(ArgRole::KVIndptr, a.kvIndptr);
  bind(ArgRole::KVIndices, a.kvIndices);
  bind(ArgRole::KVLastPageLen, a.kvLastPageLen);
  bind(ArgRole::O, a.o);
  bind(ArgRole::LSE, a.lse);
}

/// Checked mode, fp8 caches: every K and V scale finite and > 0 (what the
/// CPU lowering asserts; the kernels assume it).
Status checkScales(const BundleConfig &c, pa_deviceptr kScale,
                   pa_deviceptr vScale, CUstream stream) {
  if (!c.fp8())
    return Status::success();
  int64_t n = c.kvScale == KVScale::Head ? c.kvHeads : 1;
  for (auto [ptr, name] : {std::pair{kScale, "k_scale"},
                           std::pair{vScale, "v_scale"}}) {
    std::vector<int32_t> bits;
    PA_TRY(download(bits, ptr, n, stream, name));
    for (int64_t i = 0; i < n; ++i) {
      float x;
      std::memcpy(&x, &bits[i], sizeof(x));
      if (!(x > 0) || !std::isfinite(x))
        return fail(name, "[", i, "] = ", x,
                    ": fp8 cache scales must be finite and > 0");
    }
  }
  return Status::success();
}

/// Checked mode: validates the device page table on the host against the
/// cache, the nnz argument and the plan's kv lengths `planLens`. The host
/// copies have the lengths the arguments give (batch + 1, batch, nnz), and
/// the validators check the table against exactly those lengths.
Status checkPageTable(const BundleConfig &c,
                      const std::vector<int64_t> &planLens, const CacheArgs &a,
                      CUstream stream) {
  std::vector<int32_t> indptr, lastLen, indices;
  PA_TRY(download(indptr, a.kvIndptr, a.batch + 1, stream, "kv_indptr"));
  PA_TRY(download(lastLen, a.kvLastPageLen, a.batch, stream,
                  "kv_last_page_len"));
  std::vector<int64_t> lens;
  PA_TRY(kvLengths(indptr, lastLen, a.batch, c.pageSize, lens));
  if (indptr[a.batch] != a.nnz)
    return fail("size mismatch: kv_indptr[", a.batch, "] = ", indptr[a.batch],
                " on the device, but nnz (entries of kv_indices) = ", a.nnz);
  PA_TRY(download(indices, a.kvIndices, a.nnz, stream, "kv_indices"));
  PA_TRY(validatePageTable(indptr, indices, lastLen, a.batch, c.pageSize,
                           a.numPages));
  for (int64_t b = 0; b < a.batch; ++b)
    if (lens[b] != planLens[b])
      return fail("the page table does not match the plan: kv_len[", b,
                  "] = ", lens[b], " on the device, the plan was made for ",
                  planLens[b]);
  return Status::success();
}

/// Packs and launches kernel `kind` of `b`; in checked mode synchronizes and
/// names the kernel on an asynchronous fault.
Status launch(const pa_bundle &b, KernelKind kind, const ArgBindings &args,
              const ProblemDims &dims, CUstream stream, bool checked,
              int64_t sharedBytes, bool cooperative, CUresult *cuResult) {
  const KernelSpec *k = b.manifest.find(kind);
  CUfunction fn = b.function(kind);
  if (!k || !fn)
    return fail("bundle '", b.dir, "' has no '", toString(kind), "' kernel");
  PackedParams params;
  PA_TRY(packParams(*k, args, params));
  std::array<uint32_t, 3> grid;
  if (Status s = resolveGrid(k->launch, b.manifest.config, dims, grid); !s)
    return fail("kernel '", toString(kind), "': ", s.message);
  std::string what = std::string(cooperative ? "cuLaunchKernelEx("
                                              : "cuLaunchKernel(") +
                     k->symbol + (cooperative ? ", cooperative)" : ")");
  CUlaunchConfig config{};
  config.gridDimX = grid[0];
  config.gridDimY = grid[1];
  config.gridDimZ = grid[2];
  config.blockDimX = static_cast<unsigned>(k->launch.block[0]);
  config.blockDimY = static_cast<unsigned>(k->launch.block[1]);
  config.blockDimZ = static_cast<unsigned>(k->launch.block[2]);
  config.sharedMemBytes = static_cast<unsigned>(
      sharedBytes > 0 ? sharedBytes : k->launch.sharedBytes);
  config.hStream = stream;
  CUlaunchAttribute coop{};
  coop.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  coop.value.cooperative = 1;
  if (cooperative) {
    config.attrs = &coop;
    config.numAttrs = 1;
  }
  CUresult r =
      cooperative
          ? cuLaunchKernelEx(&config, fn, params.kernelParams(), nullptr)
          : cuLaunchKernel(fn, config.gridDimX, config.gridDimY,
                           config.gridDimZ, config.blockDimX,
                           config.blockDimY, config.blockDimZ,
                           config.sharedMemBytes, stream,
                           params.kernelParams(), nullptr);
  if (cuResult)
    *cuResult = r;
  PA_TRY(cuCheck(r, what.c_str()));
  if (checked) {
    std::string sync = std::string("cuStreamSynchronize after kernel '") +
                       toString(kind) + "' (" + k->symbol + ")";
    PA_TRY(cuCheck(cuStreamSynchronize(stream), sync.c_str()));
  }
  return Status::success();
}

/// Sets the `count` split-KV merge counters at `counters` to `value` on
/// `stream`.
Status setMergeCounters(CUdeviceptr counters, int64_t count, unsigned value,
                        CUstream stream) {
  return cuCheck(cuMemsetD32Async(counters, value,
                                  static_cast<size_t>(count), stream),
                 "cuMemsetD32Async (split-KV merge counters)");
}

/// Launches split-KV kernel `kind`, its `count` merge counters at
/// `counters` holding its `merge together` value `flag`, cooperatively: its
/// splits merge together. Where the driver refuses the grid as too large
/// (fewer CTAs fit than the occupancy query said: the device shared with
/// other work) the last CTA of each request merges instead: the counters
/// go to 0 for that launch and back to `flag` after it.
Status launchMergingTogether(const pa_bundle &b, KernelKind kind,
                             const ArgBindings &args, const ProblemDims &dims,
                             CUstream stream, bool checked,
                             int64_t sharedBytes, CUdeviceptr counters,
                             int64_t count, unsigned flag) {
  CUresult r = CUDA_SUCCESS;
  Status s = launch(b, kind, args, dims, stream, checked, sharedBytes,
                    /*cooperative=*/true, &r);
  if (s || r != CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)
    return s;
  PA_TRY(setMergeCounters(counters, count, 0, stream));
  PA_TRY(launch(b, kind, args, dims, stream, checked, sharedBytes));
  return setMergeCounters(counters, count, flag, stream);
}

Status runDecode(pa_bundle &b, const pa_plan &p, const pa_decode_args &a,
                 CUstream stream) {
  PA_TRY(requireContext());
  const BundleConfig &c = b.manifest.config;
  CacheArgs ca = cacheArgs(a);
  PA_TRY(checkCacheArgs(c, p.config, p.batch, p.nnz, ca));
  if (p.batch == 0)
    return Status::success();
  if (a.checked) {
    PA_TRY(checkPageTable(c, p.kvLens, ca, stream));
    PA_TRY(checkScales(c, ca.kScale, ca.vScale, stream));
  }

  ProblemDims dims;
  dims.batch = p.batch;
  dims.numPages = a.num_pages;
  dims.nnz = a.nnz;
  dims.workCapacity = p.workCapacity;
  ArgBindings args;
  bindCacheArgs(c, ca, dims, args);
  bool checked = a.checked != 0;
  if (!p.plan.split)
    return launch(b, KernelKind::Decode, args, dims, stream, checked,
                  p.launchSmem);

  RoleBinder bind{c, dims, args};
  bind(ArgRole::WorkIndptr, p.workIndptr);
  bind(ArgRole::WorkRequest, p.workRequest);
  bind(ArgRole::WorkStart, p.workStart);
  bind(ArgRole::WorkEnd, p.workEnd);
  bind(ArgRole::OPart, p.oPart);
  bind(ArgRole::LSEPart, p.lsePart);
  if (p.mergeCounters) {
    // One launch: the last CTA of each request merges its states, or all
    // of them together (a cooperative launch).
    bind(ArgRole::MergeCounters, p.mergeCounters);
    if (!p.mergeTogether)
      return launch(b, KernelKind::DecodeSplit, args, dims, stream, checked,
                    p.launchSmem);
    return launchMergingTogether(b, KernelKind::DecodeSplit, args, dims,
                                 stream, checked, p.launchSmem,
                                 p.mergeCounters, p.batch * c.numQHeads(),
                                 mergeCounterValue(b, p));
  }
  PA_TRY(launch(b, KernelKind::DecodePartial, args, dims, stream, checked,
                p.launchSmem));
  return launch(b, KernelKind::MergeSegments, args, dims, stream, checked);
}

/// pa_append_kv_slots: checks the arguments, in checked mode the slots
/// and scales on the host, and launches append_kv_slots (a CTA per row).
Status runAppend(pa_bundle &b, const pa_append_args &a, CUstream stream) {
  PA_TRY(requireContext());
  const BundleConfig &c = b.manifest.config;
  PA_TRY(requireKernel(b, KernelKind::AppendKVSlots,
                       "pa-compile adds it to decode bundles"));
  if (a.num_rows < 0)
    return fail("num_rows = ", a.num_rows, " is negative");
  if (a.num_pages < 0)
    return fail("num_pages = ", a.num_pages, " is negative");
  PA_TRY(checkCacheForm(c, a.kv, a.k, a.v, a.k_scale, a.v_scale));
  if (a.num_rows == 0)
    return Status::success();
  bool joint = c.kv == KVStorage::Joint;
  PA_TRY(checkRequired({{"k_new", a.k_new, true},
                        {"v_new", a.v_new, true},
                        {"slot_mapping", a.slot_mapping, true},
                        {"kv", a.kv, joint},
                        {"k", a.k, !joint},
                        {"v", a.v, !joint},
                        {"k_scale", a.k_scale, c.fp8()},
                        {"v_scale", a.v_scale, c.fp8()}}));
  if (a.checked) {
    std::vector<int32_t> slots;
    PA_TRY(download(slots, a.slot_mapping, a.num_rows, stream,
                    "slot_mapping"));
    int64_t capacity = a.num_pages * c.pageSize;
    std::unordered_map<int32_t, int64_t> seen;
    for (int64_t r = 0; r < a.num_rows; ++r) {
      int32_t slot = slots[r];
      if (slot < 0)
        continue;
      if (slot >= capacity)
        return fail("slot_mapping[", r, "] = ", slot,
                    " out of range [0, num_pages * P = ", capacity, ")");
      auto [it, fresh] = seen.emplace(slot, r);
      if (!fresh)
        return fail("slot_mapping[", r, "] = ", slot,
                    " repeats slot_mapping[", it->second,
                    "] (rows must go to distinct slots)");
    }
    PA_TRY(checkScales(c, a.k_scale, a.v_scale, stream));
  }
  ProblemDims dims;
  dims.batch = a.num_rows;
  dims.numPages = a.num_pages;
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  bind(ArgRole::KNew, a.k_new);
  bind(ArgRole::VNew, a.v_new);
  bind(ArgRole::SlotMapping, a.slot_mapping);
  bindCache(c, a.kv, a.k, a.v, a.k_scale, a.v_scale, dims, args);
  return launch(b, KernelKind::AppendKVSlots, args, dims, stream,
                a.checked != 0);
}

/// The prefill kernel `kind` (Prefill or PrefillShort) of `b`, or an
/// error naming the bundle.
Status prefillKernel(const pa_bundle &b, const KernelSpec *&out,
                     KernelKind kind = KernelKind::Prefill) {
  out = b.manifest.find(kind);
  if (!out || !out->prefill || !b.function(kind)) {
    if (kind == KernelKind::PrefillShort)
      return fail("bundle '", b.dir,
                  "' has no 'prefill_short' kernel (pa-compile adds it with "
                  "the default prefill shape up to head dim 128)");
    return fail("bundle '", b.dir,
                "' has no 'prefill' kernel (compile it with pa-compile "
                "--kernels prefill or all)");
  }
  return Status::success();
}

/// Whether a request may have more queries than keys under prefill kernel
/// `k`: its queries have explicit positions, or positions do not matter
/// (no causal mask, window or ALiBi; docs/Semantics.md, sections 10 and 12:
/// a cascade's shared prefix under many queries).
bool queriesUnbounded(const KernelSpec &k) {
  if (k.hasRole(ArgRole::QPositions))
    return true;
  return !k.prefill->causal && k.prefill->window == 0 &&
         !k.hasRole(ArgRole::AlibiSlopes);
}

/// Split-KV for prefill: when the bundle has prefill_partial and its query
/// tiles x KV heads would leave the SMs' CTA slots idle (or
/// options->kv_chunk forces it), plans the work list with
/// pa::rt::planPrefill and, if some tile is split, switches the plan to
/// prefill_partial + merge_segments and uploads the work list, the merge
/// segments and room for the partial states.
Status planPrefillSplit(pa_bundle &b, I32Span qo, I32Span indptr,
                        I32Span lastLen,
                        const pa_prefill_plan_options *options,
                        pa_prefill_plan_t &p) {
  int force = options ? options->kernel : PA_PREFILL_KERNEL_AUTO;
  int64_t forceChunk = options ? options->kv_chunk : 0;
  if (forceChunk < 0)
    return fail("options->kv_chunk = ", forceChunk, " is negative");
  bool forcePartial = force == PA_PREFILL_KERNEL_PARTIAL;
  if (forceChunk > 0 && !forcePartial && force != PA_PREFILL_KERNEL_AUTO)
    return fail("options->kv_chunk = ", forceChunk,
                " needs kernel AUTO or PARTIAL (a split-KV plan)");
  if (!forcePartial && force != PA_PREFILL_KERNEL_AUTO)
    return Status::success(); // prefill or prefill_short, forced
  const KernelSpec *k = b.manifest.find(KernelKind::PrefillPartial);
  if (!k || !b.function(KernelKind::PrefillPartial)) {
    if (forcePartial || forceChunk > 0)
      return fail("split-KV was asked for (kernel PARTIAL or kv_chunk) but "
                  "bundle '",
                  b.dir,
                  "' has no 'prefill_partial' kernel (pa-compile adds it "
                  "unless --prefill-split=false)");
    return Status::success();
  }
  if (p.batch == 0 || p.numQueryRows == 0)
    return Status::success(); // nothing to launch
  const BundleConfig &c = b.manifest.config;
  CUdevice dev;
  PA_CU(cuCtxGetDevice(&dev));
  int sms = 0, blocks = 0;
  PA_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             dev));
  PA_TRY(kernelOccupancy(b, KernelKind::PrefillPartial, -1, blocks));
  int64_t slots = static_cast<int64_t>(sms) * std::max(blocks, 1);
  // The partial kernel's query tile may be smaller than the unsplit
  // kernel's: where the unsplit grid leaves CTA slots idle, its smaller
  // tiles alone (no key split, n = 1 below) already fill more of them.
  if (!forcePartial && force == PA_PREFILL_KERNEL_AUTO)
    PA_TRY(preferSmallerSplitTiles(
        qo, p.batch, b.manifest.find(p.kernel)->prefill->queriesPerTile,
        k->prefill->queriesPerTile, c.kvHeads, slots, forcePartial));
  PrefillPlan plan;
  PA_TRY(planPrefill(qo, indptr, lastLen, p.batch, p.numQueryRows,
                     c.pageSize, c.kvHeads, k->prefill->queriesPerTile,
                     k->prefill->causal, queriesUnbounded(*k), sms,
                     std::max(blocks, 1), plan, kPrefillMinChunk,
                     forceChunk, forcePartial));
  if (!plan.split)
    return Status::success();
  p.kernel = KernelKind::PrefillPartial;
  p.split = std::move(plan);
  const PrefillWorkList &w = p.split.work;
  const std::vector<int32_t> *arrays[7] = {
      &w.request, &w.qoStart,    &w.qoEnd,        &w.kvStart,
      &w.kvEnd,   &w.partialRow, &w.partialStride};
  for (int i = 0; i < 7; ++i)
    PA_TRY(upload(p.work[i], arrays[i]->data(), arrays[i]->size() * 4));
  PA_TRY(upload(p.mergeIndptr, w.mergeIndptr.data(),
                w.mergeIndptr.size() * 4));
  size_t rows = static_cast<size_t>(p.split.numPartialRows * c.numQHeads());
  PA_TRY(upload(p.oPart, nullptr, rows * c.headDim * sizeof(float)));
  PA_TRY(upload(p.lsePart, nullptr, rows * sizeof(float)));
  return Status::success();
}

Status makePrefillPlan(pa_bundle &b, const int32_t *qoIndptr,
                       const int32_t *kvIndptr, const int32_t *lastPageLen,
                       int64_t batch, int64_t numQueryRows,
                       const pa_prefill_plan_options *options,
                       pa_prefill_plan_t &p) {
  const KernelSpec *k = nullptr;
  PA_TRY(prefillKernel(b, k));
  int force = options ? options->kernel : PA_PREFILL_KERNEL_AUTO;
  if (force != PA_PREFILL_KERNEL_AUTO && force != PA_PREFILL_KERNEL_PREFILL &&
      force != PA_PREFILL_KERNEL_SHORT && force != PA_PREFILL_KERNEL_PARTIAL)
    return fail("options->kernel = ", force,
                " is not PA_PREFILL_KERNEL_AUTO (0), _PREFILL (1), _SHORT "
                "(2) or _PARTIAL (3)");
  const BundleConfig &c = b.manifest.config;
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (numQueryRows < 0)
    return fail("num_query_rows = ", numQueryRows, " is negative");
  if (!qoIndptr || !kvIndptr || (batch > 0 && !lastPageLen))
    return fail("qo_indptr, kv_indptr and kv_last_page_len must not be "
                "null");
  PA_TRY(requireContext(&p.ctx));
  p.config = c;
  p.batch = batch;
  p.numQueryRows = numQueryRows;
  // The C API's contract: qo_indptr and kv_indptr have batch + 1 entries,
  // kv_last_page_len batch entries.
  I32Span qo(qoIndptr, batch + 1), indptr(kvIndptr, batch + 1),
      lastLen(lastPageLen, batch);
  PA_TRY(kvLengths(indptr, lastLen, batch, c.pageSize, p.kvLens));
  // Both prefill kernels take the same arguments (the manifest checks it).
  PA_TRY(validateQueries(qo, batch, numQueryRows, p.kvLens,
                         queriesUnbounded(*k)));
  // The kernel: forced, or prefill_short for a short batch when the bundle
  // has it (docs/Runtime.md, "Prefill kernel choice"); then split-KV where
  // it pays (planPrefillSplit).
  bool useShort = force == PA_PREFILL_KERNEL_SHORT;
  if (force == PA_PREFILL_KERNEL_AUTO &&
      b.manifest.find(KernelKind::PrefillShort))
    PA_TRY(choosePrefillShort(qo, p.kvLens, batch, useShort));
  p.kernel = useShort ? KernelKind::PrefillShort : KernelKind::Prefill;
  p.nnz = kvIndptr[batch];
  p.qoIndptr.assign(qoIndptr, qoIndptr + batch + 1);
  PA_TRY(planPrefillSplit(b, qo, indptr, lastLen, options, p));
  PA_TRY(prefillKernel(b, k, p.kernel));
  p.queriesPerTile = k->prefill->queriesPerTile;
  ProblemDims dims;
  dims.batch = batch;
  dims.numQueryRows = numQueryRows;
  if (p.isSplit()) {
    // The query tiles of the largest work item (1 with the planner's
    // tiles).
    const PrefillWorkList &w = p.split.work;
    p.qTiles = 0;
    for (int64_t i = 0; i < w.size(); ++i)
      p.qTiles = std::max(p.qTiles, ceilDiv(w.qoEnd[i] - w.qoStart[i],
                                            p.queriesPerTile));
    dims.workCapacity = w.size();
  } else {
    PA_TRY(prefillQueryTiles(qo, batch, p.queriesPerTile, p.qTiles));
  }
  if (p.qTiles > 0) {
    // The grid must fit the launch (z = batch <= 65535).
    dims.qTiles = p.qTiles;
    std::array<uint32_t, 3> grid;
    if (Status s = resolveGrid(k->launch, c, dims, grid); !s)
      return fail("kernel '", toString(p.kernel), "': ", s.message);
  }
  return Status::success();
}

/// Copies the query positions to the host and checks that none is
/// negative (the kernel's and the oracle's precondition).
Status checkPositions(pa_deviceptr ptr, int64_t rows, CUstream stream) {
  std::vector<int32_t> pos;
  PA_TRY(download(pos, ptr, rows, stream, "q_positions"));
  for (int64_t i = 0; i < rows; ++i)
    if (pos[i] < 0)
      return fail("q_positions[", i, "] = ", pos[i], " is negative");
  return Status::success();
}

Status runPrefill(pa_bundle &b, const pa_prefill_plan_t &p,
                  const pa_prefill_args &a, CUstream stream) {
  PA_TRY(requireContext());
  const KernelSpec *k = nullptr;
  PA_TRY(prefillKernel(b, k, p.kernel));
  const BundleConfig &c = b.manifest.config;
  CacheArgs ca = cacheArgs(a);
  PA_TRY(checkCacheArgs(c, p.config, p.batch, p.nnz, ca));
  if (a.num_query_rows != p.numQueryRows)
    return fail("num_query_rows = ", a.num_query_rows,
                " but the plan was made with qo_indptr[", p.batch,
                "] = ", p.numQueryRows);
  if (a.mask_bytes < 0)
    return fail("mask_bytes = ", a.mask_bytes, " is negative");
  bool positions = k->hasRole(ArgRole::QPositions);
  bool mask = k->hasRole(ArgRole::CustomMask);
  bool alibi = k->hasRole(ArgRole::AlibiSlopes);
  // Optional roles: given exactly when the kernel takes them.
  struct {
    const char *name, *flag;
    bool given, taken, needed;
  } optional[] = {
      {"q_positions", "--positions", a.q_positions != 0, positions,
       a.num_query_rows > 0},
      {"custom_mask", "--custom-mask", a.custom_mask != 0, mask,
       a.mask_bytes > 0},
      {"mask_indptr", "--custom-mask", a.mask_indptr != 0, mask, p.batch > 0},
      {"alibi_slopes", "--alibi", a.alibi_slopes != 0, alibi, true}};
  for (const auto &o : optional) {
    if (o.given && !o.taken)
      return fail("argument '", o.name,
                  "' is given but the bundle's prefill kernel takes none "
                  "(compiled without ",
                  o.flag, "): pass 0");
    if (o.taken && o.needed && !o.given)
      return fail("argument '", o.name,
                  "' is null but the bundle's prefill kernel reads it "
                  "(compiled with ",
                  o.flag, ")");
  }
  if (!mask && a.mask_bytes != 0)
    return fail("mask_bytes = ", a.mask_bytes,
                " but the bundle's prefill kernel takes no custom mask");
  if (p.batch > 0 && !a.qo_indptr)
    return fail("argument 'qo_indptr' is null");
  // The kernels copy q and write o in 16-byte chunks (cp.async, and o
  // through shared memory, docs/GPU.md).
  if (a.num_query_rows > 0)
    for (const auto &[name, ptr] : {std::pair{"q", a.q}, std::pair{"o", a.o}})
      PA_TRY(checkAlignedArg(name, ptr, 16,
                             "the prefill kernels read q and write o in "
                             "16-byte chunks"));

  if (a.checked && p.batch > 0) {
    PA_TRY(checkPageTable(c, p.kvLens, ca, stream));
    PA_TRY(checkScales(c, ca.kScale, ca.vScale, stream));
    std::vector<int32_t> qo;
    PA_TRY(download(qo, a.qo_indptr, p.batch + 1, stream, "qo_indptr"));
    PA_TRY(validateQueries(qo, p.batch, a.num_query_rows, p.kvLens,
                           queriesUnbounded(*k)));
    for (int64_t i = 0; i <= p.batch; ++i)
      if (qo[i] != p.qoIndptr[i])
        return fail("the query segments do not match the plan: qo_indptr[",
                    i, "] = ", qo[i], " on the device, the plan was made for ",
                    p.qoIndptr[i]);
    if (positions)
      PA_TRY(checkPositions(a.q_positions, a.num_query_rows, stream));
    if (mask) {
      std::vector<int32_t> maskIndptr;
      PA_TRY(download(maskIndptr, a.mask_indptr, p.batch + 1, stream,
                      "mask_indptr"));
      PA_TRY(validateMask(maskIndptr, qo, p.batch, p.kvLens, a.mask_bytes));
    }
  }
  if (p.qTiles == 0)
    return Status::success(); // no query rows: nothing to launch

  ProblemDims dims;
  dims.batch = p.batch;
  dims.numPages = a.num_pages;
  dims.nnz = a.nnz;
  dims.numQueryRows = p.numQueryRows;
  dims.maskBytes = a.mask_bytes;
  dims.qTiles = p.qTiles;
  ArgBindings args;
  bindCacheArgs(c, ca, dims, args);
  RoleBinder bind{c, dims, args};
  bind(ArgRole::QOIndptr, a.qo_indptr);
  if (positions)
    bind(ArgRole::QPositions, a.q_positions);
  if (mask) {
    bind(ArgRole::CustomMask, a.custom_mask);
    bind(ArgRole::MaskIndptr, a.mask_indptr);
  }
  if (alibi)
    bind(ArgRole::AlibiSlopes, a.alibi_slopes);
  bool checked = a.checked != 0;
  if (!p.isSplit())
    return launch(b, p.kernel, args, dims, stream, checked);

  // Split-KV: the partial states of every (query, chunk), then their merge
  // per query row (merge_segments over the plan's segments).
  dims.workCapacity = p.split.work.size();
  dims.partialRows = p.split.numPartialRows;
  ArgRole workRoles[7] = {ArgRole::WorkRequest,   ArgRole::WorkQOStart,
                          ArgRole::WorkQOEnd,     ArgRole::WorkKVStart,
                          ArgRole::WorkKVEnd,     ArgRole::WorkPartialRow,
                          ArgRole::WorkPartialStride};
  for (int i = 0; i < 7; ++i)
    bind(workRoles[i], p.work[i]);
  bind(ArgRole::OPart, p.oPart);
  bind(ArgRole::LSEPart, p.lsePart);
  PA_TRY(launch(b, KernelKind::PrefillPartial, args, dims, stream, checked));
  ProblemDims merge;
  merge.batch = p.numQueryRows; // one segment per query row
  merge.numQueryRows = p.numQueryRows;
  merge.workCapacity = p.split.numPartialRows;
  ArgBindings mergeArgs;
  RoleBinder bindMerge{c, merge, mergeArgs};
  bindMerge(ArgRole::OPart, p.oPart);
  bindMerge(ArgRole::LSEPart, p.lsePart);
  bindMerge(ArgRole::WorkIndptr, p.mergeIndptr);
  bindMerge(ArgRole::O, a.o);
  bindMerge(ArgRole::LSE, a.lse);
  return launch(b, KernelKind::MergeSegments, mergeArgs, merge, stream,
                checked);
}

Status initDevice(int device) {
  PA_CU(cuInit(0));
  int count = 0;
  PA_CU(cuDeviceGetCount(&count));
  if (device < 0 || device >= count)
    return fail("device ", device, " does not exist (", count,
                " CUDA devices)");
  std::lock_guard<std::mutex> lock(initMutex);
  auto it = retained.find(device);
  if (it == retained.end()) {
    CUdevice dev;
    PA_CU(cuDeviceGet(&dev, device));
    CUcontext ctx = nullptr;
    PA_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    it = retained.emplace(device, std::make_pair(dev, ctx)).first;
  }
  PA_CU(cuCtxSetCurrent(it->second.second));
  return Status::success();
}

} // namespace pa::rt::impl

using namespace pa::rt::impl;

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

namespace {

/// pa_plan_split_kv: the work list of a page table on the device.
Status runPlanSplitKV(pa_bundle &b, const pa_plan_split_kv_args &a,
                      CUstream stream) {
  PA_TRY(requireContext());
  PA_TRY(requireKernel(b, KernelKind::PlanSplitKV,
                       "pa-compile adds plan_split_kv to bundles of "
                       "--kernels all (--plan-chunk)"));
  const BundleConfig &c = b.manifest.config;
  const KernelSpec *k = b.manifest.find(KernelKind::PlanSplitKV);
  int64_t chunk = k && k->planChunk ? *k->planChunk : 0;
  if (a.batch < 0 || a.work_capacity < 0 || a.nnz < 0)
    return fail("batch (", a.batch, "), work_capacity (", a.work_capacity,
                ") and nnz (", a.nnz, ") must not be negative");
  PA_TRY(checkRequired({{"work_indptr", a.work_indptr, true},
                        {"kv_indptr", a.kv_indptr, true},
                        {"kv_last_page_len", a.kv_last_page_len, a.batch > 0},
                        {"work_request", a.work_request, a.nnz > 0},
                        {"work_start", a.work_start, a.nnz > 0},
                        {"work_end", a.work_end, a.nnz > 0}}));
  int64_t bound = workListBound(a.batch, a.nnz, c.pageSize, chunk);
  if (a.work_capacity < bound)
    return fail("work_capacity = ", a.work_capacity, " is below ", bound,
                " = batch + ceil(nnz * page_size / chunk), the items a table "
                "of nnz = ",
                a.nnz, " pages can need (chunk ", chunk, ")");
  if (a.batch == 0) {
    PA_CU(cuMemsetD32Async(a.work_indptr, 0, 1, stream));
    return Status::success();
  }
  if (a.checked) {
    std::vector<int32_t> indptr, last;
    PA_TRY(download(indptr, a.kv_indptr, a.batch + 1, stream, "kv_indptr"));
    PA_TRY(download(last, a.kv_last_page_len, a.batch, stream,
                    "kv_last_page_len"));
    std::vector<int64_t> lens;
    PA_TRY(kvLengths(I32Span(indptr.data(), a.batch + 1),
                     I32Span(last.data(), a.batch), a.batch, c.pageSize,
                     lens));
    if (indptr[a.batch] != a.nnz)
      return fail("kv_indptr[", a.batch, "] = ", indptr[a.batch],
                  " but nnz = ", a.nnz);
  }
  ProblemDims dims;
  dims.batch = a.batch;
  dims.nnz = a.nnz;
  dims.workCapacity = a.work_capacity;
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  bind(ArgRole::KVIndptr, a.kv_indptr);
  bind(ArgRole::KVLastPageLen, a.kv_last_page_len);
  bind(ArgRole::WorkIndptr, a.work_indptr);
  bind(ArgRole::WorkRequest, a.work_request);
  bind(ArgRole::WorkStart, a.work_start);
  bind(ArgRole::WorkEnd, a.work_end);
  return launch(b, KernelKind::PlanSplitKV, args, dims, stream,
                a.checked != 0);
}

/// The most splits pa_mla_decode takes when the caller names them.
constexpr int64_t kMaxExplicitMLASplits = 1024;

/// The CTAs of MLA kernel `kind` the device holds at once (queried once per
/// bundle rather than on every decode step), and its CTAs per request (grid
/// y).
Status mlaSlotsOnDevice(const pa_bundle &b, KernelKind kind, int64_t &out,
                        int64_t &headBlocks) {
  const KernelSpec *k = b.manifest.find(kind);
  int64_t &slots = b.mlaSlots[kind == KernelKind::MLADecodeSmall ? 1 : 0];
  if (slots == 0) {
    CUdevice dev;
    PA_CU(cuCtxGetDevice(&dev));
    int sms = 0, blocks = 0;
    PA_CU(cuDeviceGetAttribute(&sms,
                               CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    PA_TRY(kernelOccupancy(b, kind, -1, blocks));
    slots = static_cast<int64_t>(sms) * std::max(blocks, 1);
  }
  out = slots;
  headBlocks = k->launch.grid[1].symbol == GridSymbol::Literal
                   ? k->launch.grid[1].value
                   : 1;
  return Status::success();
}

/// Whether the splits of MLA kernel `kind` merge together when the grid
/// fits (the kernel can, and the caller did not ask for the last CTA).
bool mlaMergesTogether(const pa_bundle &b, KernelKind kind, int splitMerge) {
  const KernelSpec *k = b.manifest.find(kind);
  return k && k->mergeTogether && splitMerge == PA_MLA_MERGE_AUTO;
}

/// The automatic splits of an MLA decode of `batch` requests on kernel
/// `kind` (mla_decode or mla_decode_small): mlaSplits over the device's CTA
/// slots for it.
Status mlaSplitsOnDevice(const pa_bundle &b, KernelKind kind, int64_t batch,
                         int64_t maxKVLen, bool together, int64_t &splits) {
  int64_t slots = 0, headBlocks = 1;
  PA_TRY(mlaSlotsOnDevice(b, kind, slots, headBlocks));
  splits = mlaSplits(batch, headBlocks, slots, maxKVLen, together);
  return Status::success();
}

/// The MLA kernel of `b` for a decode of `batch` requests of at most
/// `maxKVLen` keys (chooseMLASmall where the bundle has mla_decode_small).
KernelKind mlaKernel(const pa_bundle &b, int64_t batch, int64_t maxKVLen) {
  return b.function(KernelKind::MLADecodeSmall) &&
                 chooseMLASmall(batch, maxKVLen)
             ? KernelKind::MLADecodeSmall
             : KernelKind::MLADecode;
}

/// pa_mla_decode: MLA decode over the latent cache of an MLA bundle.
Status runMLADecode(pa_bundle &b, const pa_mla_decode_args &a,
                    CUstream stream) {
  PA_TRY(requireContext());
  PA_TRY(requireKernel(b, KernelKind::MLADecode,
                       "pa-compile --kernels mla compiles it"));
  const BundleConfig &c = b.manifest.config;
  if (a.batch < 0 || a.num_pages < 0 || a.nnz < 0)
    return fail("batch (", a.batch, "), num_pages (", a.num_pages,
                ") and nnz (", a.nnz, ") must not be negative");
  if (a.batch == 0)
    return Status::success();
  PA_TRY(checkRequired({{"q_nope", a.q_nope, true},
                        {"q_pe", a.q_pe, true},
                        {"ckv_kpe", a.ckv_kpe, a.nnz > 0},
                        {"kv_indptr", a.kv_indptr, true},
                        {"kv_indices", a.kv_indices, a.nnz > 0},
                        {"kv_last_page_len", a.kv_last_page_len, true},
                        {"o", a.o, true},
                        {"lse", a.lse, true}}));
  if (a.checked) {
    std::vector<int32_t> indptr, lastLen, indices;
    PA_TRY(download(indptr, a.kv_indptr, a.batch + 1, stream, "kv_indptr"));
    PA_TRY(download(lastLen, a.kv_last_page_len, a.batch, stream,
                    "kv_last_page_len"));
    if (indptr[a.batch] != a.nnz)
      return fail("size mismatch: kv_indptr[", a.batch, "] = ",
                  indptr[a.batch],
                  " on the device, but nnz (entries of kv_indices) = ",
                  a.nnz);
    PA_TRY(download(indices, a.kv_indices, a.nnz, stream, "kv_indices"));
    PA_TRY(validatePageTable(indptr, indices, lastLen, a.batch, c.pageSize,
                             a.num_pages));
  }
  if (a.num_splits < 0 || a.num_splits > kMaxExplicitMLASplits)
    return fail("num_splits = ", a.num_splits, " must be in [0, ",
                kMaxExplicitMLASplits, "] (0: automatic)");
  if (a.max_kv_len < 0 || a.workspace_bytes < 0)
    return fail("max_kv_len (", a.max_kv_len, ") and workspace_bytes (",
                a.workspace_bytes, ") must not be negative");
  if (a.split_merge != PA_MLA_MERGE_AUTO && a.split_merge != PA_MLA_MERGE_LAST)
    return fail("split_merge = ", a.split_merge,
                " must be PA_MLA_MERGE_AUTO (0) or PA_MLA_MERGE_LAST (1)");
  KernelKind kernel = mlaKernel(b, a.batch, a.max_kv_len);
  bool canMergeTogether = mlaMergesTogether(b, kernel, a.split_merge);
  int64_t slots = 0, headBlocks = 1;
  PA_TRY(mlaSlotsOnDevice(b, kernel, slots, headBlocks));
  int64_t splits = a.num_splits;
  if (splits == 0) {
    splits = mlaSplits(a.batch, headBlocks, slots, a.max_kv_len,
                       canMergeTogether);
    // Below kMLATogetherMinSplits the last CTA's merge (and its split
    // count); at 2 that leaves only a plan of one split, which has no merge.
    if (canMergeTogether && !mlaPrefersTogether(splits)) {
      canMergeTogether = false;
      splits = mlaSplits(a.batch, headBlocks, slots, a.max_kv_len, false);
    }
    // Within the workspace the caller gave.
    while (splits > 1 &&
           mlaWorkspace(a.batch, c.numQHeads(), c.headDim, splits).bytes >
               (a.workspace ? a.workspace_bytes : 0))
      --splits;
  }
  MLAWorkspace ws = mlaWorkspace(a.batch, c.numQHeads(), c.headDim, splits);
  if (splits > 1 && (!a.workspace || a.workspace_bytes < ws.bytes))
    return fail("num_splits = ", splits, " needs a workspace of ", ws.bytes,
                " bytes (pa_mla_workspace_bytes), got ",
                a.workspace ? a.workspace_bytes : 0);
  ProblemDims dims;
  dims.batch = a.batch;
  dims.numPages = a.num_pages;
  dims.nnz = a.nnz;
  dims.kvSplits = splits;
  dims.partialRows = a.batch * splits;
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  // The splits merge together where the kernel can and every CTA fits on
  // the device at once (a cooperative launch); else the last CTA of a
  // request merges alone.
  const KernelSpec *spec = b.manifest.find(kernel);
  bool together =
      splits > 1 && canMergeTogether && a.batch * headBlocks * splits <= slots;
  // The counters at launch pick the merge (and any workspace contents are
  // safe).
  int64_t counters = a.batch * c.numQHeads();
  unsigned flag = together ? static_cast<unsigned>(*spec->mergeTogether) : 0u;
  if (splits > 1) {
    PA_TRY(setMergeCounters(a.workspace + ws.counters, counters, flag,
                            stream));
    bind(ArgRole::OPart, a.workspace + ws.oPart);
    bind(ArgRole::LSEPart, a.workspace + ws.lsePart);
    bind(ArgRole::MergeCounters, a.workspace + ws.counters);
  } else {
    // One split: the kernel writes o and lse directly and never touches
    // these.
    bind(ArgRole::OPart, a.o);
    bind(ArgRole::LSEPart, a.lse);
    bind(ArgRole::MergeCounters, a.lse);
  }
  bind(ArgRole::QNope, a.q_nope);
  bind(ArgRole::QPe, a.q_pe);
  bind(ArgRole::CkvKpe, a.ckv_kpe);
  bind(ArgRole::KVIndptr, a.kv_indptr);
  bind(ArgRole::KVIndices, a.kv_indices);
  bind(ArgRole::KVLastPageLen, a.kv_last_page_len);
  bind(ArgRole::O, a.o);
  bind(ArgRole::LSE, a.lse);
  if (together)
    return launchMergingTogether(b, kernel, args, dims, stream,
                                 a.checked != 0, /*sharedBytes=*/0,
                                 a.workspace + ws.counters, counters, flag);
  return launch(b, kernel, args, dims, stream, a.checked != 0);
}

} // namespace

extern "C" {

int pa_mla_workspace_bytes(const pa_bundle *bundle, int64_t batch,
                           int64_t num_splits, int64_t *out) {
  if (!bundle || !out)
    return report(fail("pa_mla_workspace_bytes: null argument"));
  *out = 0;
  const BundleConfig &c = bundle->manifest.config;
  if (!bundle->function(KernelKind::MLADecode))
    return report(fail("pa_mla_workspace_bytes: bundle '", bundle->dir,
                       "' has no 'mla_decode' kernel"));
  if (batch < 0 || num_splits < 0 || num_splits > kMaxExplicitMLASplits)
    return report(fail("pa_mla_workspace_bytes: batch (", batch,
                       ") must not be negative and num_splits (", num_splits,
                       ") in [0, ", kMaxExplicitMLASplits, "]"));
  // The most either MLA kernel's automatic choice can take.
  int64_t splits = num_splits;
  if (splits == 0)
    for (KernelKind k : {KernelKind::MLADecode, KernelKind::MLADecodeSmall}) {
      int64_t s = 0;
      if (!bundle->function(k))
        continue;
      if (Status st = mlaSplitsOnDevice(
              *bundle, k, batch, 0,
              mlaMergesTogether(*bundle, k, PA_MLA_MERGE_AUTO), s);
          !st)
        return report(fail("pa_mla_workspace_bytes: ", st.message));
      splits = std::max(splits, s);
    }
  *out = mlaWorkspace(batch, c.numQHeads(), c.headDim, splits).bytes;
  return PA_SUCCESS;
}

int pa_mla_decode(pa_bundle *bundle, const pa_mla_decode_args *args,
                  pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_mla_decode: null argument"));
  if (Status s = runMLADecode(*bundle, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_mla_decode: ", s.message));
  return PA_SUCCESS;
}

int pa_init(int device) { return report(initDevice(device)); }

void pa_shutdown(void) {
  std::lock_guard<std::mutex> lock(initMutex);
  for (auto &entry : retained)
    cuDevicePrimaryCtxRelease(entry.second.first);
  retained.clear();
}

const char *pa_last_error(void) { return lastError.c_str(); }

int pa_bundle_load(const char *dir, pa_bundle **out) {
  if (!dir || !out)
    return report(fail("pa_bundle_load: null argument"));
  *out = nullptr;
  pa_bundle *b = new pa_bundle;
  b->dir = dir;
  while (b->dir.size() > 1 && b->dir.back() == '/')
    b->dir.pop_back();
  if (Status s = loadBundle(*b); !s) {
    b->unload();
    delete b;
    return report(fail("loading bundle '", dir, "': ", s.message));
  }
  *out = b;
  return PA_SUCCESS;
}

void pa_bundle_free(pa_bundle *bundle) {
  if (!bundle)
    return;
  bundle->unload();
  delete bundle;
}

int pa_plan_split_kv(pa_bundle *bundle, const pa_plan_split_kv_args *args,
                     pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_plan_split_kv: null argument"));
  if (Status s =
          runPlanSplitKV(*bundle, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_plan_split_kv: ", s.message));
  return PA_SUCCESS;
}

int pa_bundle_get_config(const pa_bundle *bundle, pa_bundle_config *out) {
  if (!bundle || !out)
    return report(fail("pa_bundle_get_config: null argument"));
  const BundleConfig &c = bundle->manifest.config;
  out->head_dim = c.headDim;
  out->page_size = c.pageSize;
  out->kv_heads = c.kvHeads;
  out->group = c.group;
  out->num_q_heads = c.numQHeads();
  out->dtype = c.dtype == DType::F16    ? PA_DTYPE_F16
               : c.dtype == DType::BF16 ? PA_DTYPE_BF16
                                        : PA_DTYPE_F32;
  out->layout = c.layout == CacheLayout::NHD ? PA_LAYOUT_NHD : PA_LAYOUT_HND;
  out->kv_storage = c.kv == KVStorage::Joint ? PA_KV_JOINT : PA_KV_SPLIT;
  out->has_split_kernels = bundle->hasSplit() ? 1 : 0;
  out->has_decode = bundle->function(KernelKind::Decode) ? 1 : 0;
  out->has_prefill = bundle->function(KernelKind::Prefill) ? 1 : 0;
  out->has_append = bundle->function(KernelKind::AppendKVSlots) ? 1 : 0;
  out->has_merge = bundle->function(KernelKind::Merge) ? 1 : 0;
  out->has_merge_states = bundle->function(KernelKind::MergeStates) ? 1 : 0;
  out->has_page_writes = bundle->function(KernelKind::AppendKV) &&
                                 bundle->function(KernelKind::ScatterKV)
                             ? 1
                             : 0;
  out->has_cacheblend = bundle->function(KernelKind::KVDeviation) &&
                                bundle->function(KernelKind::SelectTopK)
                            ? 1
                            : 0;
  const KernelSpec *topk = bundle->manifest.find(KernelKind::SelectTopK);
  out->topk_ratio = topk && topk->topkRatio ? *topk->topkRatio : 0;
  out->has_pack_mask = bundle->function(KernelKind::PackMask) ? 1 : 0;
  const KernelSpec *plan = bundle->manifest.find(KernelKind::PlanSplitKV);
  out->plan_chunk = plan && plan->planChunk ? *plan->planChunk : 0;
  out->mla_kpe = c.kpeDim;
  out->kv_dtype = c.kvDtype == KVDType::E4M3   ? PA_KV_DTYPE_E4M3
                  : c.kvDtype == KVDType::E5M2 ? PA_KV_DTYPE_E5M2
                                               : PA_KV_DTYPE_DATA;
  out->kv_scale =
      c.kvScale == KVScale::Head ? PA_KV_SCALE_HEAD : PA_KV_SCALE_TENSOR;
  return PA_SUCCESS;
}

int pa_decode_plan(pa_bundle *bundle, const int32_t *kv_indptr,
                   const int32_t *kv_last_page_len, int64_t batch,
                   const pa_plan_options *options, pa_plan **out) {
  if (!bundle || !out)
    return report(fail("pa_decode_plan: null argument"));
  *out = nullptr;
  pa_plan *p = new pa_plan;
  if (Status s = makePlan(*bundle, kv_indptr, kv_last_page_len, batch,
                          options, *p);
      !s) {
    p->release();
    delete p;
    return report(fail("pa_decode_plan: ", s.message));
  }
  *out = p;
  return PA_SUCCESS;
}

int pa_decode_plan_update(pa_plan *plan, const int32_t *kv_indptr,
                          const int32_t *kv_last_page_len, int64_t batch,
                          pa_stream stream) {
  if (!plan)
    return report(fail("pa_decode_plan_update: null plan"));
  const pa_bundle *b = plan->bundle;
  if (Status s = updatePlan(*b, *plan, kv_indptr, kv_last_page_len, batch,
                            static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_decode_plan_update: ", s.message));
  return PA_SUCCESS;
}

int pa_plan_get_info(const pa_plan *plan, pa_plan_info *out) {
  if (!plan || !out)
    return report(fail("pa_plan_get_info: null argument"));
  out->batch = plan->batch;
  out->chunk_size = plan->plan.chunkSize;
  out->split = plan->plan.split ? 1 : 0;
  out->num_work_items = plan->plan.work.size();
  out->nnz = plan->nnz;
  out->num_sms = plan->numSMs;
  out->ctas_per_sm = plan->ctasPerSM;
  out->graph = plan->graph ? 1 : 0;
  out->fused_merge = plan->mergeCounters ? 1 : 0;
  out->merge_together = plan->mergeTogether ? 1 : 0;
  return PA_SUCCESS;
}

void pa_plan_free(pa_plan *plan) {
  if (!plan)
    return;
  plan->release();
  delete plan;
}

int pa_decode_run(pa_bundle *bundle, const pa_plan *plan,
                  const pa_decode_args *args, pa_stream stream) {
  if (!bundle || !plan || !args)
    return report(fail("pa_decode_run: null argument"));
  if (Status s =
          runDecode(*bundle, *plan, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_decode_run: ", s.message));
  return PA_SUCCESS;
}

int pa_prefill_plan_ex(pa_bundle *bundle, const int32_t *qo_indptr,
                       const int32_t *kv_indptr,
                       const int32_t *kv_last_page_len, int64_t batch,
                       int64_t num_query_rows,
                       const pa_prefill_plan_options *options,
                       pa_prefill_plan_t **out) {
  if (!bundle || !out)
    return report(fail("pa_prefill_plan: null argument"));
  *out = nullptr;
  pa_prefill_plan_t *p = new pa_prefill_plan_t;
  if (Status s = makePrefillPlan(*bundle, qo_indptr, kv_indptr,
                                 kv_last_page_len, batch, num_query_rows,
                                 options, *p);
      !s) {
    p->release();
    delete p;
    return report(fail("pa_prefill_plan: ", s.message));
  }
  *out = p;
  return PA_SUCCESS;
}

int pa_prefill_plan(pa_bundle *bundle, const int32_t *qo_indptr,
                    const int32_t *kv_indptr, const int32_t *kv_last_page_len,
                    int64_t batch, int64_t num_query_rows,
                    pa_prefill_plan_t **out) {
  return pa_prefill_plan_ex(bundle, qo_indptr, kv_indptr, kv_last_page_len,
                            batch, num_query_rows, nullptr, out);
}

int pa_prefill_plan_get_info(const pa_prefill_plan_t *plan,
                             pa_prefill_plan_info *out) {
  if (!plan || !out)
    return report(fail("pa_prefill_plan_get_info: null argument"));
  out->batch = plan->batch;
  out->nnz = plan->nnz;
  out->num_query_rows = plan->numQueryRows;
  out->queries_per_tile = plan->queriesPerTile;
  out->q_tiles = plan->qTiles;
  out->kernel = plan->kernel == KernelKind::PrefillShort
                    ? PA_PREFILL_KERNEL_SHORT
                : plan->kernel == KernelKind::PrefillPartial
                    ? PA_PREFILL_KERNEL_PARTIAL
                    : PA_PREFILL_KERNEL_PREFILL;
  out->split = plan->isSplit() ? 1 : 0;
  out->kv_chunk = plan->isSplit() ? plan->split.kvChunk : 0;
  out->num_work_items = plan->isSplit() ? plan->split.work.size() : 0;
  out->num_partial_rows = plan->isSplit() ? plan->split.numPartialRows : 0;
  return PA_SUCCESS;
}

void pa_prefill_plan_free(pa_prefill_plan_t *plan) {
  if (!plan)
    return;
  plan->release();
  delete plan;
}

int pa_append_kv_slots(pa_bundle *bundle, const pa_append_args *args,
                       pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_append_kv_slots: null argument"));
  if (Status s = runAppend(*bundle, *args, static_cast<CUstream>(stream)); !s)
    return report(fail("pa_append_kv_slots: ", s.message));
  return PA_SUCCESS;
}

int pa_prefill_run(pa_bundle *bundle, const pa_prefill_plan_t *plan,
                   const pa_prefill_args *args, pa_stream stream) {
  if (!bundle || !plan || !args)
    return report(fail("pa_prefill_run: null argument"));
  if (Status s =
          runPrefill(*bundle, *plan, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_prefill_run: ", s.message));
  return PA_SUCCESS;
}

} // extern "C"
