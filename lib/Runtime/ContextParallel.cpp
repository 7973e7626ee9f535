//===- ContextParallel.cpp - one request's KV over several GPUs -----------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The runtime side of context parallelism (docs/ContextParallel.md): one
// process drives the GPUs of a group; each decodes its shard of the page
// table (pa_shard_pages) into its slot of a gathered-states buffer, one
// grouped NCCL all-gather gives every GPU every slot, and each GPU merges
// the slots in device order with the bundle's merge kernels. NCCL is loaded
// with dlopen when a group of two or more GPUs is made, so that nothing else
// in the runtime (or a single-GPU user) needs libnccl.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

using namespace pa::rt;
using namespace pa::rt::impl;

namespace {

// The few NCCL declarations used here (nccl.h, stable C ABI since 2.0).
using NcclComm = struct ncclComm *;
using NcclResult = int;
constexpr NcclResult kNcclSuccess = 0;
constexpr int kNcclUint8 = 1;

/// NCCL's entry points, resolved once.
struct NcclApi {
  NcclResult (*getVersion)(int *) = nullptr;
  NcclResult (*commInitAll)(NcclComm *, int, const int *) = nullptr;
  NcclResult (*commDestroy)(NcclComm) = nullptr;
  NcclResult (*allGather)(const void *, void *, size_t, int, NcclComm,
                          CUstream) = nullptr;
  NcclResult (*groupStart)() = nullptr;
  NcclResult (*groupEnd)() = nullptr;
  const char *(*getErrorString)(NcclResult) = nullptr;
  int version = 0;
};

std::mutex ncclMutex;
NcclApi ncclApi;
bool ncclLoaded = false;

template <typename F>
Status resolve(void *lib, const char *name, F &out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (!out)
    return fail("NCCL library lacks ", name);
  return Status::success();
}

/// Loads libnccl ($PAGEDATTN_NCCL, else the loader's search for
/// libnccl.so.2) and resolves the entry points.
Status loadNccl(const NcclApi *&out) {
  std::lock_guard<std::mutex> lock(ncclMutex);
  if (!ncclLoaded) {
    const char *env = std::getenv("PAGEDATTN_NCCL");
    const char *path = env && *env ? env : "libnccl.so.2";
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
      return fail("cannot load NCCL from '", path, "': ", dlerror(),
                  " (set PAGEDATTN_NCCL to libnccl.so.2's path; PyTorch's "
                  "wheels ship it as nvidia/nccl/lib/libnccl.so.2)");
    NcclApi api;
    PA_TRY(resolve(lib, "ncclGetVersion", api.getVersion));
    PA_TRY(resolve(lib, "ncclCommInitAll", api.commInitAll));
    PA_TRY(resolve(lib, "ncclCommDestroy", api.commDestroy));
    PA_TRY(resolve(lib, "ncclAllGather", api.allGather));
    PA_TRY(resolve(lib, "ncclGroupStart", api.groupStart));
    PA_TRY(resolve(lib, "ncclGroupEnd", api.groupEnd));
    PA_TRY(resolve(lib, "ncclGetErrorString", api.getErrorString));
    if (api.getVersion(&api.version) != kNcclSuccess)
      return fail("ncclGetVersion failed");
    ncclApi = api;
    ncclLoaded = true;
  }
  out = &ncclApi;
  return Status::success();
}

Status ncclCheck(const NcclApi &api, NcclResult r, const char *what) {
  if (r == kNcclSuccess)
    return Status::success();
  return fail(what, " failed: ", api.getErrorString(r), " (NCCL ", r, ")");
}

/// The workspace of a group of n devices: the o of every device's state
/// ([n] slots of oBytes), then their lse ([n] slots of lseBytes), then a
/// spare state (o, lse) for the merges; each slot 16-byte aligned. With one
/// request and no padding the o and lse slots are merge_states' [1, n, Hq,
/// D] and [1, n, Hq] stacks.
struct StateLayout {
  int64_t oBytes = 0, lseBytes = 0, n = 0;
  int64_t slot() const { return oBytes + lseBytes; }
  int64_t total() const { return n > 1 ? (n + 1) * slot() : 0; }
  CUdeviceptr o(CUdeviceptr ws, int64_t s) const { return ws + s * oBytes; }
  CUdeviceptr lse(CUdeviceptr ws, int64_t s) const {
    return ws + n * oBytes + s * lseBytes;
  }
  CUdeviceptr spareO(CUdeviceptr ws) const { return ws + n * slot(); }
  CUdeviceptr spareLse(CUdeviceptr ws) const {
    return spareO(ws) + oBytes;
  }
};

int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

StateLayout stateLayout(const pa_bundle &b, int64_t batch, int64_t n) {
  const BundleConfig &c = b.manifest.config;
  int64_t rows = batch * c.numQHeads();
  return {align16(rows * c.headDim * elementBytes(c.dtype)),
          align16(rows * int64_t(sizeof(float))), n};
}

/// Restores the calling thread's context when it goes out of scope.
class CurrentContext {
public:
  CurrentContext() { cuCtxGetCurrent(&saved); }
  ~CurrentContext() { cuCtxSetCurrent(saved); }
  CurrentContext(const CurrentContext &) = delete;
  CurrentContext &operator=(const CurrentContext &) = delete;

private:
  CUcontext saved = nullptr;
};

} // namespace

struct pa_cp_group {
  std::vector<int> devices;
  /// Primary context of each device (retained by pa_init).
  std::vector<CUcontext> contexts;
  /// One communicator per device (none for a group of one).
  std::vector<NcclComm> comms;
  const NcclApi *nccl = nullptr;

  void release() {
    if (nccl)
      for (NcclComm comm : comms)
        nccl->commDestroy(comm);
    comms.clear();
  }
};

namespace {

Status createGroup(const int *devices, int n, pa_cp_group &g) {
  if (n < 1)
    return fail("num_devices = ", n, " must be at least 1");
  if (!devices)
    return fail("devices is null");
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j)
      if (devices[i] == devices[j])
        return fail("device ", devices[i], " is listed twice (devices[", j,
                    "] and devices[", i, "])");
  CurrentContext keep;
  for (int i = 0; i < n; ++i) {
    if (pa_init(devices[i]) != PA_SUCCESS)
      return fail("devices[", i, "]: ", pa_last_error());
    CUcontext ctx = nullptr;
    PA_CU(cuCtxGetCurrent(&ctx));
    g.devices.push_back(devices[i]);
    g.contexts.push_back(ctx);
  }
  if (n > 1) {
    PA_TRY(loadNccl(g.nccl));
    g.comms.assign(n, nullptr);
    PA_TRY(ncclCheck(*g.nccl, g.nccl->commInitAll(g.comms.data(), n, devices),
                     "ncclCommInitAll"));
  }
  return Status::success();
}

/// Everything pa_cp_decode_run checks before it launches.
Status checkRun(const pa_cp_group &g, const pa_cp_device_args *d, int n,
                StateLayout &layout) {
  if (!d)
    return fail("devices is null");
  if (n != static_cast<int>(g.devices.size()))
    return fail("num_devices = ", n, " but the group has ",
                g.devices.size());
  const pa_cp_device_args &first = d[0];
  for (int i = 0; i < n; ++i) {
    const pa_cp_device_args &a = d[i];
    if (!a.bundle || !a.plan)
      return fail("device ", i, ": bundle or plan is null");
    if (a.bundle->ctx != g.contexts[i] || a.plan->ctx != g.contexts[i])
      return fail("device ", i, ": its bundle or plan was not made on device ",
                  g.devices[i], " (pa_init(", g.devices[i],
                  ") before pa_bundle_load and pa_decode_plan)");
    const BundleConfig &c = a.bundle->manifest.config,
                       &c0 = first.bundle->manifest.config;
    if (!(c.headDim == c0.headDim && c.kvHeads == c0.kvHeads &&
          c.group == c0.group && c.dtype == c0.dtype))
      return fail("device ", i, ": its bundle's heads, head dim or dtype "
                  "differ from device 0's");
    if (a.args.batch != first.args.batch ||
        a.args.num_q_heads != first.args.num_q_heads ||
        a.args.head_dim != first.args.head_dim)
      return fail("device ", i, ": batch / num_q_heads / head_dim (",
                  a.args.batch, ", ", a.args.num_q_heads, ", ",
                  a.args.head_dim, ") differ from device 0's (",
                  first.args.batch, ", ", first.args.num_q_heads, ", ",
                  first.args.head_dim, ")");
    PA_TRY(checkRequired({{"o", a.args.o, true}, {"lse", a.args.lse, true}}));
    if (n == 1)
      continue;
    PA_TRY(requireKernel(*a.bundle, KernelKind::Merge,
                         "pa-compile --kernels all compiles it beside decode"));
    PA_TRY(checkAlignedArg("workspace", a.workspace, 16,
                           "the gathered states are 16-byte vectors"));
  }
  if (first.args.batch < 0)
    return fail("batch = ", first.args.batch, " is negative");
  layout = stateLayout(*first.bundle, first.args.batch, n);
  const int64_t need = layout.total();
  for (int i = 0; i < n; ++i)
    if (d[i].workspace_bytes < need)
      return fail("device ", i, ": workspace_bytes = ", d[i].workspace_bytes,
                  ", needs ", need, " (pa_cp_workspace_bytes)");
  return Status::success();
}

/// A C API call's failure as a Status with its message (which names the
/// call).
Status api(int rc) {
  if (rc == PA_SUCCESS)
    return Status::success();
  return fail(pa_last_error());
}

/// Device i's merge of the gathered slots s_0 .. s_{n-1} (device order)
/// into its args.o / args.lse: one merge_states launch where the slots are
/// its stacks (one request, unpadded slots, the bundle has the kernel),
/// else merge(s_0, s_1), then the result with s_2, ..., alternating between
/// the spare state and the output so that no merge writes one of its
/// inputs, ending at the output.
Status mergeSlots(const pa_cp_device_args &a, int n,
                  const StateLayout &layout) {
  const CUdeviceptr ws = a.workspace;
  const BundleConfig &c = a.bundle->manifest.config;
  const int64_t rows = a.args.batch * c.numQHeads();
  if (a.args.batch == 1 && a.bundle->function(KernelKind::MergeStates) &&
      layout.oBytes == rows * c.headDim * elementBytes(c.dtype) &&
      layout.lseBytes == rows * int64_t(sizeof(float))) {
    pa_merge_states_args m{};
    m.o_states = layout.o(ws, 0);
    m.lse_states = layout.lse(ws, 0);
    m.o = a.args.o;
    m.lse = a.args.lse;
    m.num_rows = 1;
    m.num_states = n;
    m.checked = a.args.checked;
    return api(pa_merge_states(a.bundle, &m, a.stream));
  }
  CUdeviceptr accO = layout.o(ws, 0), accLse = layout.lse(ws, 0);
  for (int s = 1; s < n; ++s) {
    bool toOutput = (n - 1 - s) % 2 == 0;
    pa_merge_args m{};
    m.o_a = accO;
    m.lse_a = accLse;
    m.o_b = layout.o(ws, s);
    m.lse_b = layout.lse(ws, s);
    m.o = toOutput ? a.args.o : layout.spareO(ws);
    m.lse = toOutput ? a.args.lse : layout.spareLse(ws);
    m.num_rows = a.args.batch;
    m.checked = a.args.checked;
    PA_TRY(api(pa_merge(a.bundle, &m, a.stream)));
    accO = m.o;
    accLse = m.lse;
  }
  return Status::success();
}

Status runCPDecode(pa_cp_group &g, const pa_cp_device_args *d, int n) {
  StateLayout layout;
  PA_TRY(checkRun(g, d, n, layout));
  CurrentContext keep;
  if (n == 1) {
    PA_CU(cuCtxSetCurrent(g.contexts[0]));
    if (Status s = api(pa_decode_run(d[0].bundle, d[0].plan, &d[0].args,
                                     d[0].stream));
        !s)
      return fail("device 0: ", s.message);
    return Status::success();
  }
  // Each device's own state into its slot.
  for (int i = 0; i < n; ++i) {
    PA_CU(cuCtxSetCurrent(g.contexts[i]));
    pa_decode_args a = d[i].args;
    a.o = layout.o(d[i].workspace, i);
    a.lse = layout.lse(d[i].workspace, i);
    if (Status s = api(pa_decode_run(d[i].bundle, d[i].plan, &a, d[i].stream));
        !s)
      return fail("device ", i, ": ", s.message);
  }
  // Every slot to every device, o and lse, in place (device i sends its
  // slots i), in one NCCL group.
  PA_TRY(ncclCheck(*g.nccl, g.nccl->groupStart(), "ncclGroupStart"));
  for (int i = 0; i < n; ++i) {
    const CUdeviceptr ws = d[i].workspace;
    for (auto [slot, bytes] : {std::pair{layout.o(ws, i), layout.oBytes},
                               std::pair{layout.lse(ws, i), layout.lseBytes}}) {
      CUdeviceptr base = slot - i * bytes;
      NcclResult r = g.nccl->allGather(
          reinterpret_cast<const void *>(slot), reinterpret_cast<void *>(base),
          static_cast<size_t>(bytes), kNcclUint8, g.comms[i],
          static_cast<CUstream>(d[i].stream));
      if (r != kNcclSuccess) {
        g.nccl->groupEnd();
        return ncclCheck(*g.nccl, r, "ncclAllGather");
      }
    }
  }
  PA_TRY(ncclCheck(*g.nccl, g.nccl->groupEnd(), "ncclGroupEnd"));
  for (int i = 0; i < n; ++i) {
    PA_CU(cuCtxSetCurrent(g.contexts[i]));
    if (Status s = mergeSlots(d[i], n, layout); !s)
      return fail("device ", i, ": ", s.message);
  }
  if (d[0].args.checked)
    for (int i = 0; i < n; ++i) {
      PA_CU(cuCtxSetCurrent(g.contexts[i]));
      if (Status s = cuCheck(
              cuStreamSynchronize(static_cast<CUstream>(d[i].stream)),
              "cuStreamSynchronize");
          !s)
        return fail("device ", i, ": ", s.message);
    }
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

int pa_cp_group_create(const int *devices, int num_devices,
                       pa_cp_group **out) {
  if (!out)
    return report(fail("pa_cp_group_create: out is null"));
  *out = nullptr;
  auto *g = new pa_cp_group;
  if (Status s = createGroup(devices, num_devices, *g); !s) {
    g->release();
    delete g;
    return report(fail("pa_cp_group_create: ", s.message));
  }
  *out = g;
  return PA_SUCCESS;
}

void pa_cp_group_free(pa_cp_group *group) {
  if (!group)
    return;
  group->release();
  delete group;
}

int pa_cp_nccl_version(const pa_cp_group *group, int *out) {
  if (!group || !out)
    return report(fail("pa_cp_nccl_version: null argument"));
  *out = group->nccl ? group->nccl->version : 0;
  return PA_SUCCESS;
}

int pa_cp_workspace_bytes(const pa_cp_group *group, const pa_bundle *bundle,
                          int64_t batch, int64_t *out) {
  if (!group || !bundle || !out)
    return report(fail("pa_cp_workspace_bytes: null argument"));
  if (batch < 0)
    return report(
        fail("pa_cp_workspace_bytes: batch = ", batch, " is negative"));
  const int64_t n = static_cast<int64_t>(group->devices.size());
  *out = stateLayout(*bundle, batch, n).total();
  return PA_SUCCESS;
}

int pa_cp_decode_run(pa_cp_group *group, const pa_cp_device_args *devices,
                     int num_devices) {
  if (!group)
    return report(fail("pa_cp_decode_run: group is null"));
  if (Status s = runCPDecode(*group, devices, num_devices); !s)
    return report(fail("pa_cp_decode_run: ", s.message));
  return PA_SUCCESS;
}
