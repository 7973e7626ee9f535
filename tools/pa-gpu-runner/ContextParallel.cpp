//===- ContextParallel.cpp - check-cp and bench-cp of pa-gpu-runner -------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// `pa-gpu-runner check-cp` and `bench-cp`: context-parallel decode
// (docs/ContextParallel.md) over devices 0 .. N-1 of this host, driven by
// one thread. Each device holds only the pages of its shard of the page
// table (pa::rt::shardPages, as pa_shard_pages; its j-th entry is its local page j), its own copy
// of the bundle, plan, stream and workspace; pa_cp_decode_run decodes every
// shard, all-gathers the states through NCCL and merges them on every
// device. Every per-device call runs with that device's primary context
// current (pa_init), and everything a device owns is freed under its
// context.
//
//===----------------------------------------------------------------------===//

#include "ContextParallel.h"

#include "Bench.h"
#include "Check.h"
#include "GpuUtil.h"

#include "PagedAttn/Reference/Reference.h"
#include "PagedAttn/Runtime/Bundle.h"
#include "PagedAttn/Runtime/PagePool.h"
#include "PagedAttn/Runtime/Planner.h"
#include "PagedAttn/Runtime/pa_runtime.h"
#include "PagedAttn/TestSupport/Cache.h"
#include "PagedAttn/TestSupport/Numbers.h"
#include "PagedAttn/TestSupport/Random.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

using namespace pa::runner;
namespace rt = pa::rt;
namespace ref = pa::ref;
namespace test = pa::test;

namespace {

//===----------------------------------------------------------------------===//
// Devices, groups, shards
//===----------------------------------------------------------------------===//

/// Makes device `ordinal`'s primary context current: the runtime and the
/// driver calls that follow (allocations, loads, plans, copies) act on it.
void useDevice(int ordinal) { PA_RT(pa_init(ordinal)); }

/// The CUDA devices this process sees.
int visibleDevices() {
  PA_CU(cuInit(0));
  int n = 0;
  PA_CU(cuDeviceGetCount(&n));
  return n;
}

std::vector<int> firstDevices(int64_t n) {
  std::vector<int> d(static_cast<size_t>(n));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

/// One device of a group: its copy of the bundle (modules are per context)
/// and its stream, destroyed under its own context.
struct GroupDevice {
  int ordinal = 0;
  pa_bundle *bundle = nullptr;
  CUstream stream = nullptr;

  explicit GroupDevice(int ordinal) : ordinal(ordinal) {}
  GroupDevice(const GroupDevice &) = delete;
  GroupDevice &operator=(const GroupDevice &) = delete;
  ~GroupDevice() {
    if (pa_init(ordinal) != PA_SUCCESS)
      return;
    if (stream) {
      cuStreamSynchronize(stream);
      cuStreamDestroy(stream);
    }
    pa_bundle_free(bundle);
  }

  void load(const std::string &dir) {
    useDevice(ordinal);
    PA_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    PA_RT(pa_bundle_load(dir.c_str(), &bundle));
  }
  void synchronize() const {
    useDevice(ordinal);
    PA_CU(cuStreamSynchronize(stream));
    PA_CU(cuCtxSynchronize());
  }
};
using GroupDevices = std::vector<std::unique_ptr<GroupDevice>>;

/// Loads `dir` on devices 0 .. n-1.
GroupDevices loadDevices(const std::string &dir, int64_t n) {
  GroupDevices devs;
  for (int d : firstDevices(n)) {
    devs.push_back(std::make_unique<GroupDevice>(d));
    devs.back()->load(dir);
  }
  return devs;
}

void synchronizeAll(const GroupDevices &devs) {
  for (const auto &d : devs)
    d->synchronize();
}

/// An owned pa_cp_group. Its devices are synchronized before the
/// communicators go (pa_cp_group_free requires it).
class CPGroup {
public:
  explicit CPGroup(std::vector<int> ordinals) : ordinals(std::move(ordinals)) {
    PA_RT(pa_cp_group_create(this->ordinals.data(),
                             static_cast<int>(this->ordinals.size()), &group));
  }
  CPGroup(const CPGroup &) = delete;
  CPGroup &operator=(const CPGroup &) = delete;
  ~CPGroup() {
    for (int d : ordinals)
      if (pa_init(d) == PA_SUCCESS)
        cuCtxSynchronize();
    pa_cp_group_free(group);
  }
  pa_cp_group *get() const { return group; }
  /// "NCCL 2.27.3" (a group of one device loads no NCCL).
  std::string ncclVersion() const {
    int v = 0;
    if (pa_cp_nccl_version(group, &v) != PA_SUCCESS)
      return std::string("NCCL version unknown: ") + pa_last_error();
    if (v == 0)
      return "no NCCL (one device)";
    return fmt("NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  }

private:
  std::vector<int> ordinals;
  pa_cp_group *group = nullptr;
};

/// Device `device`'s share of a CSR page table (pa::rt::shardPages): its
/// entries are the input's page ids, in request and page order.
rt::CsrTable shardTable(const ref::PageTable &pt, int64_t numPages,
                        int64_t devices, int64_t device, bool roundRobin) {
  rt::CsrTable csr;
  if (rt::Status s = rt::shardPages(pt.indptr, pt.indices, pt.lastPageLen,
                                    pt.batch(), pt.pageSize, numPages, devices,
                                    device, roundRobin, csr);
      !s)
    throw Failure(fmt("shard_pages (device %" PRId64 " of %" PRId64 "): %s",
                      device, devices, s.message.c_str()));
  return csr;
}

/// Pages of a shard.
int64_t nnzOf(const rt::CsrTable &t) { return t.indptr.back(); }

/// One device's inputs of a step: q, its cache (`Cache`: an owned
/// DeviceBuffer or a DeviceSpan of an arena), the shard's table with
/// device-local page ids, o / lse, its plan and workspace. The plan is
/// freed under the device's context; the buffers after it.
template <typename Cache> struct DeviceShard {
  int ordinal = 0;
  int64_t nnz = 0, numPages = 0, workspaceBytes = 0;
  Cache cache[2];
  DeviceBuffer scales[2], q, indptr, indices, last, o, lse, workspace;
  pa_plan *plan = nullptr;

  explicit DeviceShard(int ordinal) : ordinal(ordinal) {}
  DeviceShard(const DeviceShard &) = delete;
  DeviceShard &operator=(const DeviceShard &) = delete;
  ~DeviceShard() {
    if (pa_init(ordinal) == PA_SUCCESS)
      pa_plan_free(plan);
  }
};

/// Uploads the shard's table with local page ids `local`, allocates o /
/// lse, plans the decode on the device (current) and sizes the workspace.
template <typename Cache>
void prepareShard(DeviceShard<Cache> &s, const GroupDevice &dev,
                  const CPGroup &group, const rt::BundleConfig &c,
                  const rt::CsrTable &t, const std::vector<int32_t> &local) {
  const int64_t B = static_cast<int64_t>(t.lastPageLen.size());
  const int64_t rowElems = B * c.numQHeads();
  s.nnz = nnzOf(t);
  s.indptr = uploadVector(t.indptr);
  s.indices = uploadVector(local);
  s.last = uploadVector(t.lastPageLen);
  s.o.allocate(
      static_cast<size_t>(rowElems * c.headDim * rt::elementBytes(c.dtype)));
  s.lse.allocate(static_cast<size_t>(rowElems * 4));
  PA_RT(pa_decode_plan(dev.bundle, t.indptr.data(), t.lastPageLen.data(), B, nullptr,
                       &s.plan));
  PA_RT(pa_cp_workspace_bytes(group.get(), dev.bundle, B, &s.workspaceBytes));
  s.workspace.allocate(static_cast<size_t>(s.workspaceBytes));
}

/// The arguments of device `dev`'s part of a step over shard `s`.
template <typename Cache>
pa_cp_device_args
deviceArgs(const GroupDevice &dev, const DeviceShard<Cache> &s,
           const rt::BundleConfig &c, int64_t B, bool checked) {
  pa_cp_device_args a;
  std::memset(&a, 0, sizeof(a));
  a.bundle = dev.bundle;
  a.plan = s.plan;
  a.stream = dev.stream;
  a.workspace = s.workspace.get();
  a.workspace_bytes = s.workspaceBytes;
  pa_decode_args &d = a.args;
  d.q = s.q.get();
  bindPagedCache(d, s, c);
  d.o = s.o.get();
  d.lse = s.lse.get();
  d.batch = B;
  d.num_q_heads = c.numQHeads();
  d.head_dim = c.headDim;
  d.num_pages = s.numPages;
  d.nnz = s.nnz;
  d.checked = checked ? 1 : 0;
  return a;
}

template <typename Shards>
std::vector<pa_cp_device_args>
stepArgs(const GroupDevices &devs, const Shards &shards,
         const rt::BundleConfig &c, int64_t B, bool checked) {
  std::vector<pa_cp_device_args> args;
  for (size_t d = 0; d < shards.size(); ++d)
    args.push_back(deviceArgs(*devs[d], *shards[d], c, B, checked));
  return args;
}

//===----------------------------------------------------------------------===//
// check-cp
//===----------------------------------------------------------------------===//

using CheckShard = DeviceShard<DeviceBuffer>;
using CheckShards = std::vector<std::unique_ptr<CheckShard>>;

/// A random decode batch and its float64 reference over the whole table.
struct CPCase {
  uint64_t seed = 0;
  std::vector<int64_t> lens;
  HostCache hc;
  std::vector<uint8_t> q;
  ref::States expected;
  int64_t batch() const { return static_cast<int64_t>(lens.size()); }
};

/// Lengths for N devices: an empty request, one of fewer pages than devices
/// (some devices own none of its pages), one of exactly full pages, and
/// random lengths up to a few thousand tokens with a partial last page (only
/// the device owning it sees a last_page_len other than P), among them one
/// long enough to split on every device; in a random order.
std::vector<int64_t> cpLens(test::Rng &rng, int64_t N, int64_t P) {
  auto partial = [P](int64_t len) {
    return P > 1 && len % P == 0 ? len + 1 : len;
  };
  std::vector<int64_t> lens = {0, rng.uniformInt(1, N > 1 ? (N - 1) * P : P),
                               P * rng.uniformInt(1, 200),
                               partial(rng.uniformInt(6000, 12000))};
  for (int64_t i = rng.uniformInt(3, 6); i > 0; --i)
    lens.push_back(partial(rng.uniformInt(1, 4000)));
  rng.shuffle(lens);
  return lens;
}

/// A random case; `single`: one request of 6000-20000 tokens (the
/// runtime's one-launch merge_states path) instead of cpLens's batch.
CPCase makeCPCase(uint64_t seed, int64_t N, const rt::BundleConfig &c,
                  bool single) {
  CPCase cs;
  cs.seed = seed;
  test::Rng rng(test::mixSeed(seed, 0x6370)); // "cp"
  cs.lens = single ? std::vector<int64_t>{rng.uniformInt(6000, 20000) | 1}
                   : cpLens(rng, N, c.pageSize);
  cs.hc = makeHostCache(cs.lens, c, rng, /*finiteSlack=*/false);
  const int64_t Hq = c.numQHeads();
  std::vector<double> q =
      test::randomValues(rng, cs.batch() * Hq * c.headDim, c.dtype, -3, 3);
  cs.q = test::toBytes(c.dtype, q);
  cs.expected = ref::decode(q, Hq, cs.hc.kv, cs.hc.pt, ref::AttnOptions{});
  return cs;
}

/// A host page that no request owns (its slots hold the slack, NaN).
int32_t spareHostPage(const HostCache &hc) {
  std::set<int32_t> used(hc.pt.indices.begin(), hc.pt.indices.end());
  for (int32_t p = 0; p < hc.numPages; ++p)
    if (!used.count(p))
      return p;
  throw Failure("the host cache has no spare page");
}

/// The device-local cache of a shard: host page entries[j] becomes local
/// page j, then a spare page (NaN), so that the pool is never empty and a
/// read past the shard's pages reaches o as NaN.
std::vector<std::vector<uint8_t>>
localCache(const rt::BundleConfig &c, const HostCache &hc,
           const std::vector<int32_t> &entries) {
  const size_t pageBytes = static_cast<size_t>(
      test::CacheGeometry::of(c).bufferElements(1) * cacheElementBytes(c));
  std::vector<int32_t> pages = entries;
  pages.push_back(spareHostPage(hc));
  std::vector<std::vector<uint8_t>> out;
  for (const std::vector<uint8_t> &host : hc.buffers) {
    if (host.size() != pageBytes * static_cast<size_t>(hc.numPages))
      throw Failure("localCache: a host buffer does not hold its pages");
    std::vector<uint8_t> buf(pages.size() * pageBytes);
    for (size_t j = 0; j < pages.size(); ++j)
      std::memcpy(buf.data() + j * pageBytes,
                  host.data() + static_cast<size_t>(pages[j]) * pageBytes,
                  pageBytes);
    out.push_back(std::move(buf));
  }
  return out;
}

/// Device `dev`'s shard of `cs` (device d of N), uploaded and planned.
std::unique_ptr<CheckShard> uploadCheckShard(const GroupDevice &dev,
                                             const CPGroup &group,
                                             const rt::BundleConfig &c,
                                             const CPCase &cs,
                                             const rt::CsrTable &t) {
  useDevice(dev.ordinal);
  auto s = std::make_unique<CheckShard>(dev.ordinal);
  std::vector<std::vector<uint8_t>> cache = localCache(c, cs.hc, t.indices);
  for (size_t i = 0; i < cache.size(); ++i)
    s->cache[i] = uploadVector(cache[i]);
  s->numPages = nnzOf(t) + 1;
  if (c.fp8()) {
    s->scales[0] = uploadVector(cs.hc.kScale);
    s->scales[1] = uploadVector(cs.hc.vScale);
  }
  s->q = uploadVector(cs.q);
  std::vector<int32_t> local(static_cast<size_t>(nnzOf(t)));
  std::iota(local.begin(), local.end(), 0);
  prepareShard(*s, dev, group, c, t, local);
  PA_CU(cuCtxSynchronize());
  return s;
}

/// The shards of every device; throws if their kv lengths do not add up to
/// the request's (pa_shard_pages lost or repeated a page).
CheckShards uploadCheckShards(const GroupDevices &devs, const CPGroup &group,
                              const rt::BundleConfig &c, const CPCase &cs,
                              bool roundRobin, std::string &summary) {
  const int64_t N = static_cast<int64_t>(devs.size()), P = c.pageSize;
  std::vector<int64_t> sums(cs.lens.size(), 0);
  CheckShards shards;
  for (int64_t d = 0; d < N; ++d) {
    rt::CsrTable t = shardTable(cs.hc.pt, cs.hc.numPages, N, d, roundRobin);
    std::vector<int64_t> lens;
    if (rt::Status s = rt::kvLengths(t.indptr, t.lastPageLen, t.batch(), P,
                                     lens);
        !s)
      throw Failure("shard of device " + std::to_string(d) + ": " +
                    s.message);
    for (int64_t b = 0; b < cs.batch(); ++b)
      sums[b] += lens[b];
    shards.push_back(uploadCheckShard(*devs[d], group, c, cs, t));
    pa_plan_info info{};
    PA_RT(pa_plan_get_info(shards.back()->plan, &info));
    summary += fmt("%s%" PRId64 " pages (chunk %" PRId64 ", split %d)",
                   d ? ", " : "", nnzOf(t), info.chunk_size, info.split);
  }
  for (int64_t b = 0; b < cs.batch(); ++b)
    if (sums[b] != cs.lens[b])
      throw Failure(fmt("pa_shard_pages: the shards of request %" PRId64
                        " hold %" PRId64 " tokens, the request %" PRId64,
                        b, sums[b], cs.lens[b]));
  return shards;
}

void poisonShard(const CheckShard &s, const rt::BundleConfig &c, int64_t B) {
  useDevice(s.ordinal);
  poison(s.o.get(), B * c.numQHeads() * c.headDim, c.dtype);
  poison(s.lse.get(), B * c.numQHeads(), rt::DType::F32);
  // The memsets are on the legacy stream, the step on the device's own
  // non-blocking one: finish them first.
  PA_CU(cuCtxSynchronize());
}

/// o and lse of a shard (its stream synchronized before).
Outputs readShard(const CheckShard &s, const rt::BundleConfig &c, int64_t B) {
  useDevice(s.ordinal);
  Outputs out;
  out.o.resize(s.o.size());
  out.lse.resize(static_cast<size_t>(B * c.numQHeads()));
  s.o.download(out.o.data(), out.o.size());
  s.lse.download(out.lse.data(), out.lse.size() * 4);
  return out;
}

/// "" if o and lse still hold the poison everywhere, else what was written.
std::string writtenProblem(const Outputs &out, rt::DType t) {
  const size_t eb = static_cast<size_t>(rt::elementBytes(t));
  const uint32_t bits = poisonBits(t);
  for (size_t i = 0; i < out.o.size(); i += eb)
    if (std::memcmp(out.o.data() + i, &bits, eb))
      return "o was written";
  for (float f : out.lse) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (u != kLsePoison)
      return "lse was written";
  }
  return "";
}

struct CPSummary {
  std::string dir, config;
  int runs = 0, failedRuns = 0;
  double maxRelO = 0, maxLseErr = 0;
  int rejectPassed = 0, rejectTotal = 0;
  std::string fatal;
  bool pass() const {
    return fatal.empty() && failedRuns == 0 && rejectPassed == rejectTotal;
  }
};

/// One step of case `cs` (poisoned outputs, pa_cp_decode_run, every
/// device's o / lse against the reference; the devices should also agree
/// bitwise, since each merges the same states in the same order).
void runCPStep(const GroupDevices &devs, const CPGroup &group,
               const CheckShards &shards, const rt::BundleConfig &c,
               const CPCase &cs, bool checked, CPSummary &sum) {
  const int64_t B = cs.batch();
  Comparison worst;
  bool agree = true;
  try {
    for (const auto &s : shards)
      poisonShard(*s, c, B);
    std::vector<pa_cp_device_args> args = stepArgs(devs, shards, c, B, checked);
    PA_RT(pa_cp_decode_run(group.get(), args.data(),
                           static_cast<int>(args.size())));
    synchronizeAll(devs);
    Outputs first;
    for (size_t d = 0; d < shards.size(); ++d) {
      Outputs out = readShard(*shards[d], c, B);
      Comparison cmp = compareStates(
          cs.expected, out, c.dtype,
          [&](int64_t b) {
            return fmt("device %zu request %" PRId64 " (kv_len %" PRId64 ")", d,
                       b, cs.lens[b]);
          },
          /*finiteSlack=*/false);
      worst.relO = std::max(worst.relO, cmp.relO);
      worst.maxLseErr = std::max(worst.maxLseErr, cmp.maxLseErr);
      for (const std::string &p : cmp.problems)
        worst.problem(p);
      if (d == 0)
        first = std::move(out);
      else
        agree &=
            out.o == first.o && std::memcmp(out.lse.data(), first.lse.data(),
                                            out.lse.size() * 4) == 0;
    }
  } catch (const Failure &f) {
    worst.problem(f.what());
  }
  ++sum.runs;
  sum.failedRuns += worst.pass ? 0 : 1;
  sum.maxRelO = std::max(sum.maxRelO, worst.relO);
  sum.maxLseErr = std::max(sum.maxLseErr, worst.maxLseErr);
  std::printf("  seed %-8" PRIu64 " %-9s %zu devices: rel_o %.2e lse_err "
              "%.2e %s%s\n",
              cs.seed, checked ? "checked" : "unchecked", shards.size(),
              worst.relO, worst.maxLseErr, worst.pass ? "PASS" : "FAIL",
              agree ? "" : " (WARN: devices differ bitwise)");
  for (const std::string &p : worst.problems)
    std::printf("      %s\n", p.c_str());
  std::fflush(stdout);
}

/// Arguments pa_cp_decode_run must refuse before any launch: it fails with
/// a message and every device's o / lse still hold the poison. `edit`
/// changes the valid arguments (and the device count passed).
void expectRejected(
    const GroupDevices &devs, const CPGroup &group, const CheckShards &shards,
    const rt::BundleConfig &c, int64_t B, const std::string &name,
    const std::function<void(std::vector<pa_cp_device_args> &, int &)> &edit,
    CPSummary &sum) {
  ++sum.rejectTotal;
  std::string problem, msg;
  try {
    for (const auto &s : shards)
      poisonShard(*s, c, B);
    std::vector<pa_cp_device_args> args = stepArgs(devs, shards, c, B, false);
    int n = static_cast<int>(args.size());
    edit(args, n);
    int rc = pa_cp_decode_run(group.get(), args.data(), n);
    msg = pa_last_error();
    synchronizeAll(devs);
    if (rc == PA_SUCCESS)
      problem = "accepted";
    for (size_t d = 0; d < shards.size() && problem.empty(); ++d)
      if (std::string w = writtenProblem(readShard(*shards[d], c, B), c.dtype);
          !w.empty())
        problem = fmt("device %zu: %s: a launch ran before the check failed", d,
                      w.c_str());
  } catch (const Failure &f) {
    problem = f.what();
  }
  if (problem.empty()) {
    ++sum.rejectPassed;
    std::printf("  reject: %-34s rejected: %s\n", name.c_str(), msg.c_str());
  } else {
    std::printf("  reject: %-34s FAIL: %s\n", name.c_str(), problem.c_str());
  }
  std::fflush(stdout);
}

void testRejections(const GroupDevices &devs, const CPGroup &group,
                    const CheckShards &shards, const rt::BundleConfig &c,
                    const CPCase &cs, CPSummary &sum) {
  using Args = std::vector<pa_cp_device_args>;
  const int64_t B = cs.batch();
  const size_t last = shards.size() - 1;
  auto reject = [&](const std::string &name,
                    const std::function<void(Args &, int &)> &edit) {
    expectRejected(devs, group, shards, c, B, name, edit, sum);
  };
  // One device needs no workspace (its step is a plain decode).
  if (shards[0]->workspaceBytes > 0) {
    reject("workspace one byte short",
           [&](Args &a, int &) { a[last].workspace_bytes -= 1; });
    reject("workspace null", [](Args &a, int &) { a[0].workspace = 0; });
    reject("workspace not 16-byte aligned",
           [&](Args &a, int &) { a[last].workspace += 8; });
  }
  reject("no devices", [](Args &, int &n) { n = 0; });
  reject("more devices than the group", [](Args &a, int &n) {
    a.push_back(a.back());
    n = static_cast<int>(a.size());
  });
  if (shards.size() < 2)
    return;
  reject("fewer devices than the group", [](Args &, int &n) { --n; });
  reject("batch differs on the last device",
         [&](Args &a, int &) { a[last].args.batch = B - 1; });
  reject("head_dim differs on the last device",
         [&](Args &a, int &) { a[last].args.head_dim = c.headDim * 2; });
  reject("bundle of another device",
         [](Args &a, int &) { a[1].bundle = a[0].bundle; });
}

CPSummary checkCPBundle(const std::string &dir, int64_t N,
                        const CheckCPOptions &opts) {
  CPSummary sum;
  sum.dir = dir;
  try {
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(dir, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    sum.config = c.str();
    GroupDevices devs = loadDevices(dir, N);
    CPGroup group(firstDevices(N));
    std::printf("bundle %s: %s (Hq %" PRId64 "), %" PRId64
                " devices, %s pages, %s\n",
                dir.c_str(), c.str().c_str(), c.numQHeads(), N,
                opts.roundRobin ? "round-robin" : "contiguous",
                group.ncclVersion().c_str());
    // The seeds' batches, then one request alone (seed + seeds).
    for (int64_t i = 0; i <= opts.seeds; ++i) {
      CPCase cs = makeCPCase(opts.seed + static_cast<uint64_t>(i), N, c,
                             /*single=*/i == opts.seeds);
      std::string shardInfo;
      CheckShards shards =
          uploadCheckShards(devs, group, c, cs, opts.roundRobin, shardInfo);
      std::string lens;
      for (int64_t l : cs.lens)
        lens += (lens.empty() ? "" : " ") + std::to_string(l);
      std::printf("  seed %-8" PRIu64 " B=%" PRId64 " kv_len [%s]; per device: "
                  "%s\n",
                  cs.seed, cs.batch(), lens.c_str(), shardInfo.c_str());
      runCPStep(devs, group, shards, c, cs, /*checked=*/false, sum);
      runCPStep(devs, group, shards, c, cs, /*checked=*/true, sum);
      if (i == 0)
        testRejections(devs, group, shards, c, cs, sum);
    }
  } catch (const Failure &f) {
    sum.fatal = f.what();
  } catch (const ref::Error &e) {
    sum.fatal = std::string("reference rejected the case: ") + e.what();
  }
  if (!sum.fatal.empty())
    std::printf("  FATAL: %s\n", sum.fatal.c_str());
  std::fflush(stdout);
  return sum;
}

/// --devices resolved against the visible devices (0: all of them); prints
/// why and returns 0 when it cannot be used.
int64_t groupSize(int requested) {
  int visible = 0;
  try {
    visible = visibleDevices();
  } catch (const Failure &f) {
    std::printf("FATAL: %s\n", f.what());
    return 0;
  }
  if (visible < 1) {
    std::printf("FATAL: no CUDA device is visible\n");
    return 0;
  }
  if (requested > visible) {
    std::printf("FATAL: --devices %d but only %d CUDA device%s visible\n",
                requested, visible, visible == 1 ? " is" : "s are");
    return 0;
  }
  return requested > 0 ? requested : visible;
}

/// One line per device of the group.
void printDevices(int64_t n) {
  for (int d : firstDevices(n)) {
    useDevice(d);
    DeviceInfo dev = queryDevice();
    std::printf("device %d: %s (sm_%d%d, %d SMs, %.1f GiB)\n", d,
                dev.name.c_str(), dev.ccMajor, dev.ccMinor, dev.smCount,
                static_cast<double>(dev.totalBytes) / kGiB);
  }
}

//===----------------------------------------------------------------------===//
// bench-cp
//===----------------------------------------------------------------------===//

using BenchShard = DeviceShard<DeviceSpan>;
using BenchShards = std::vector<std::unique_ptr<BenchShard>>;

/// A device of the benchmark: the group device plus its fill kernels, L2
/// eviction buffer and KV arena (allocated once for every row: see
/// allocKVArena), all freed under its context.
struct BenchDevice {
  GroupDevice dev;
  std::unique_ptr<Roofs> roofs;
  std::unique_ptr<L2Eviction> flush;
  DeviceBuffer arena;

  explicit BenchDevice(int ordinal) : dev(ordinal) {}
  ~BenchDevice() {
    if (pa_init(dev.ordinal) != PA_SUCCESS)
      return;
    cuCtxSynchronize();
    flush.reset();
    roofs.reset();
    arena.reset();
  }
};
using BenchDevices = std::vector<std::unique_ptr<BenchDevice>>;

/// Owned CUDA events of one device, `n` start / stop pairs.
struct DeviceEvents {
  int ordinal = 0;
  std::vector<CUevent> start, stop;

  DeviceEvents(int ordinal, int n) : ordinal(ordinal) {
    useDevice(ordinal);
    start.assign(static_cast<size_t>(n), nullptr);
    stop.assign(static_cast<size_t>(n), nullptr);
    for (int i = 0; i < n; ++i) {
      PA_CU(cuEventCreate(&start[i], CU_EVENT_DEFAULT));
      PA_CU(cuEventCreate(&stop[i], CU_EVENT_DEFAULT));
    }
  }
  DeviceEvents(const DeviceEvents &) = delete;
  DeviceEvents &operator=(const DeviceEvents &) = delete;
  ~DeviceEvents() {
    if (pa_init(ordinal) != PA_SUCCESS)
      return;
    for (CUevent e : start)
      if (e)
        cuEventDestroy(e);
    for (CUevent e : stop)
      if (e)
        cuEventDestroy(e);
  }
};

/// Evicts L2 on the first `n` devices (on their streams) and waits until
/// every one is idle, so that a step starts on idle GPUs with cold L2.
void evictAndIdle(const BenchDevices &devs, int64_t n, int call) {
  for (int64_t d = 0; d < n; ++d) {
    useDevice(devs[d]->dev.ordinal);
    devs[d]->flush->evict(devs[d]->dev.stream, static_cast<unsigned>(call));
  }
  for (int64_t d = 0; d < n; ++d)
    devs[d]->dev.synchronize();
}

/// Times `step()` on the first `n` devices. Every call (warm-up: at least
/// `warmup` and kMinWarmupMs of host time) starts with evictAndIdle; a
/// timed call then records a start event on every device's stream, runs
/// the step and records a stop event on every stream. A device's interval
/// covers its own part of the step, including waiting in the all-gather
/// for the others, so the call's time is the largest interval over the
/// devices (events of different devices cannot be compared directly).
/// Median, min and max over the timed calls.
Timing timeAcrossDevices(const BenchDevices &devs, int64_t n, int warmup,
                         int reps, const std::function<void()> &step) {
  auto t0 = std::chrono::steady_clock::now();
  for (int calls = 0;; ++calls) {
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
    if ((calls >= warmup && ms >= kMinWarmupMs) || calls >= kMaxWarmupCalls)
      break;
    evictAndIdle(devs, n, calls);
    step();
  }
  std::vector<std::unique_ptr<DeviceEvents>> ev;
  for (int64_t d = 0; d < n; ++d)
    ev.push_back(std::make_unique<DeviceEvents>(devs[d]->dev.ordinal, reps));
  for (int i = 0; i < reps; ++i) {
    evictAndIdle(devs, n, i + 7);
    for (int64_t d = 0; d < n; ++d) {
      useDevice(devs[d]->dev.ordinal);
      PA_CU(cuEventRecord(ev[d]->start[i], devs[d]->dev.stream));
    }
    step();
    for (int64_t d = 0; d < n; ++d) {
      useDevice(devs[d]->dev.ordinal);
      PA_CU(cuEventRecord(ev[d]->stop[i], devs[d]->dev.stream));
    }
  }
  std::vector<double> us(static_cast<size_t>(reps), 0.0);
  for (int64_t d = 0; d < n; ++d) {
    devs[d]->dev.synchronize();
    for (int i = 0; i < reps; ++i) {
      float ms = 0;
      PA_CU(cuEventElapsedTime(&ms, ev[d]->start[i], ev[d]->stop[i]));
      us[i] = std::max(us[i], 1000.0 * ms);
    }
  }
  Timing t;
  t.medianUs = median(us);
  t.minUs = *std::min_element(us.begin(), us.end());
  t.maxUs = *std::max_element(us.begin(), us.end());
  return t;
}

/// Bytes of the K and V pages of one shard page.
double pageKVBytes(const rt::BundleConfig &c) {
  return 2.0 * c.pageSize * c.kvHeads * c.headDim * cacheElementBytes(c);
}

/// The most pages one device of n holds of B requests of L tokens: each
/// request gives a device at most ceil(pages / n) under either ownership.
int64_t maxShardPages(const rt::BundleConfig &c, int64_t n, int64_t B,
                      int64_t L) {
  int64_t pages = (L + c.pageSize - 1) / c.pageSize;
  return B * ((pages + n - 1) / n);
}

/// The KV arena of device d: the largest shard it holds in any row within
/// --max-kv-gib, at most its free memory less 4 GiB (NCCL, workspaces,
/// plans).
double arenaNeed(const BenchCPOptions &o, const rt::BundleConfig &c,
                 const std::vector<int64_t> &counts, int64_t d) {
  double need = 0;
  for (int64_t n : counts)
    for (int64_t B : o.batches)
      for (int64_t L : o.lengths)
        if (double bytes = maxShardPages(c, n, B, L) * pageKVBytes(c);
            d < n && bytes <= o.maxKVGiB * kGiB)
          need = std::max(need, bytes);
  return need;
}

/// One row of the benchmark.
struct CPRow {
  int64_t n = 0, batch = 0, len = 0, maxPages = 0;
  std::string skipped;
  pa_plan_info info{}; ///< device 0's plan
  Timing step, decode;
  bool sane = true;
};

/// Device d's shard of a row: its pages in the device's arena (random
/// values, device-local page ids in a random order, as `bench` reads its
/// pages), q (the same values on every device: one fill seed), the plan.
std::unique_ptr<BenchShard> makeBenchShard(const BenchCPOptions &o,
                                           const BenchDevice &bd,
                                           const CPGroup &group,
                                           const rt::BundleConfig &c,
                                           const rt::CsrTable &t) {
  const GroupDevice &dev = bd.dev;
  useDevice(dev.ordinal);
  auto s = std::make_unique<BenchShard>(dev.ordinal);
  const int64_t nnz = nnzOf(t), kvEb = cacheElementBytes(c);
  const int64_t B = static_cast<int64_t>(t.lastPageLen.size());
  const bool joint = c.kv == rt::KVStorage::Joint;
  const size_t poolBytes =
      static_cast<size_t>(pageKVBytes(c) * static_cast<double>(nnz));
  s->numPages = std::max<int64_t>(nnz, 1);
  s->cache[0] = {bd.arena.get(), joint ? poolBytes : poolBytes / 2};
  if (!joint)
    s->cache[1] = {bd.arena.get() + poolBytes / 2, poolBytes / 2};
  const int dtype = fillDtype(c.dtype), kvDtype = cacheFillDtype(c, dtype);
  for (int i = 0; i < (joint ? 1 : 2); ++i)
    bd.roofs->fillUniform(s->cache[i].get(), s->cache[i].size() / kvEb, kvDtype,
                          o.seed + 1 + dev.ordinal * 2 + i, -1.f, 1.f,
                          dev.stream);
  s->scales[0] = benchScales(c);
  s->scales[1] = benchScales(c);
  const size_t qElems = static_cast<size_t>(B * c.numQHeads() * c.headDim);
  s->q.allocate(qElems * rt::elementBytes(c.dtype));
  bd.roofs->fillUniform(s->q.get(), qElems, dtype, o.seed + 10, -1.f, 1.f,
                        dev.stream);
  std::vector<int32_t> local(static_cast<size_t>(nnz));
  std::iota(local.begin(), local.end(), 0);
  test::Rng rng(test::mixSeed(o.seed, static_cast<uint64_t>(dev.ordinal),
                              static_cast<uint64_t>(nnz)));
  rng.shuffle(local);
  prepareShard(*s, dev, group, c, t, local);
  dev.synchronize();
  return s;
}

/// The shards of a row, or a reason to skip it.
BenchShards makeBenchShards(const BenchCPOptions &o, const BenchDevices &devs,
                            const CPGroup &group, const rt::BundleConfig &c,
                            CPRow &row) {
  const int64_t P = c.pageSize, n = row.n, B = row.batch;
  const int64_t pages = B * ((row.len + P - 1) / P);
  if (pages > std::numeric_limits<int32_t>::max()) {
    row.skipped = "more than INT32_MAX pages";
    return {};
  }
  test::Rng rng(test::mixSeed(o.seed, static_cast<uint64_t>(B),
                              static_cast<uint64_t>(row.len)));
  test::PagePool pool(rng, pages);
  ref::PageTable pt = test::makePageTable(
      rng, P, std::vector<int64_t>(static_cast<size_t>(B), row.len), pool);
  std::vector<rt::CsrTable> tables;
  for (int64_t d = 0; d < n; ++d) {
    tables.push_back(shardTable(pt, pages, n, d, o.roundRobin));
    row.maxPages = std::max(row.maxPages, nnzOf(tables.back()));
  }
  double bytes = static_cast<double>(row.maxPages) * pageKVBytes(c);
  if (bytes > o.maxKVGiB * kGiB) {
    row.skipped =
        fmt("KV %.3g GiB per device > %.3g GiB", bytes / kGiB, o.maxKVGiB);
    return {};
  }
  for (int64_t d = 0; d < n; ++d)
    if (bytes > static_cast<double>(devs[d]->arena.size())) {
      row.skipped = fmt("KV %.3g GiB per device does not fit (device %" PRId64
                        "'s KV arena %.3g GiB)",
                        bytes / kGiB, d,
                        static_cast<double>(devs[d]->arena.size()) / kGiB);
      return {};
    }
  BenchShards shards;
  for (int64_t d = 0; d < n; ++d)
    shards.push_back(makeBenchShard(o, *devs[d], group, c, tables[d]));
  return shards;
}

/// Every device's merged lse is finite (a broken step that returns early
/// would otherwise look fast).
bool finiteLse(const BenchShards &shards, const rt::BundleConfig &c,
               int64_t B) {
  std::vector<float> lse(static_cast<size_t>(B * c.numQHeads()));
  for (const auto &s : shards) {
    useDevice(s->ordinal);
    s->lse.download(lse.data(), lse.size() * 4);
    for (float v : lse)
      if (!std::isfinite(v))
        return false;
  }
  return true;
}

CPRow benchRow(const BenchCPOptions &o, const BenchDevices &devs,
               const CPGroup &group, const rt::BundleConfig &c, int64_t n,
               int64_t B, int64_t L) {
  CPRow row;
  row.n = n;
  row.batch = B;
  row.len = L;
  BenchShards shards = makeBenchShards(o, devs, group, c, row);
  if (!row.skipped.empty())
    return row;
  PA_RT(pa_plan_get_info(shards[0]->plan, &row.info));
  std::vector<pa_cp_device_args> args;
  for (int64_t d = 0; d < n; ++d)
    args.push_back(deviceArgs(devs[d]->dev, *shards[d], c, B, false));
  row.decode = timeAcrossDevices(devs, n, o.warmup, o.reps, [&] {
    for (int64_t d = 0; d < n; ++d) {
      useDevice(devs[d]->dev.ordinal);
      PA_RT(pa_decode_run(args[d].bundle, args[d].plan, &args[d].args,
                          args[d].stream));
    }
  });
  row.step = timeAcrossDevices(devs, n, o.warmup, o.reps, [&] {
    PA_RT(pa_cp_decode_run(group.get(), args.data(), static_cast<int>(n)));
  });
  row.sane = finiteLse(shards, c, B);
  return row;
}

/// The report's header: devices, date, bundle, NCCL, method.
void reportHeader(const BenchCPOptions &o, const BenchDevices &devs,
                  const rt::BundleConfig &c, const std::string &nccl,
                  const std::function<void(const std::string &)> &out) {
  out("## PagedAttn context-parallel decode benchmark");
  out("");
  for (const auto &bd : devs) {
    useDevice(bd->dev.ordinal);
    DeviceInfo dev = queryDevice();
    out(fmt("- device %d: %s (sm_%d%d, %d SMs, L2 %.0f MiB, %.1f GiB, "
            "driver %d)",
            bd->dev.ordinal, dev.name.c_str(), dev.ccMajor, dev.ccMinor,
            dev.smCount, static_cast<double>(dev.l2Bytes) / (1 << 20),
            static_cast<double>(dev.totalBytes) / kGiB, dev.driverVersion));
  }
  out("- date: " + utcNow());
  out(fmt("- bundle: `%s` (%s, Hq %" PRId64 "); %s page ownership; %s",
          o.bundle.c_str(), c.str().c_str(), c.numQHeads(),
          o.roundRobin ? "round-robin" : "contiguous", nccl.c_str()));
  // (Several lines: fmt holds at most 1023 characters.)
  out("- setup: B requests of L tokens, pages in a random order, sharded "
      "over devices 0..n-1 (pa_shard_pages); each device holds only its "
      "pages (random values, local page ids in a random order) and the same "
      "q");
  out(fmt("- timing: every call starts with L2 evicted on every device "
          "(256 MiB memset%s) and all devices synchronized (not timed), "
          "then CUDA events on every device's stream around the call; a "
          "call's time is the largest start-to-stop interval over the "
          "devices (host launch skew included); median of %d timed calls "
          "after >= %d warm-up calls",
          o.l2Flush == "clean" ? " and a read pass over it, --l2-flush clean"
                               : ", --l2-flush dirty",
          o.reps, o.warmup));
  out("- step = pa_cp_decode_run (decode, NCCL all-gather, merge); decode = "
      "pa_decode_run alone on every device, timed the same way; "
      "gather+merge = step - decode; GB/s = K+V bytes of the whole batch / "
      "step time (1 GB = 1e9 B); efficiency = t(n=1) / (n x t(n))");
}

/// One markdown row; `t1` is the step time of n = 1 for the same shape (0:
/// not measured).
std::string rowLine(const CPRow &r, const rt::BundleConfig &c, double roofGBs,
                    double t1) {
  std::string line =
      fmt("| %" PRId64 " | %" PRId64 " | %" PRId64 " |", r.n, r.batch, r.len);
  if (!r.skipped.empty())
    return line + " skipped: " + r.skipped + " | | | | | | | | | | |";
  const double kvBytes = 2.0 * static_cast<double>(r.batch) *
                         static_cast<double>(r.len) * c.kvHeads * c.headDim *
                         cacheElementBytes(c);
  const double stepUs = r.step.medianUs, decodeUs = r.decode.medianUs;
  const double gbs = kvBytes / stepUs / 1e3, roof = r.n * roofGBs;
  std::string plan = r.info.split
                         ? fmt("split %" PRId64 ", %" PRId64, r.info.chunk_size,
                               r.info.num_work_items)
                         : fmt("one pass, %" PRId64, r.info.num_work_items);
  std::string eff = t1 > 0 ? fmt("%.2f", t1 / (r.n * stepUs)) : "-";
  line += fmt(" %" PRId64 " | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | "
              "%.1f | %.1f | %s |",
              r.maxPages, plan.c_str(), stepUs, r.step.minUs, decodeUs,
              stepUs - decodeUs, 100.0 * (stepUs - decodeUs) / stepUs, gbs,
              100.0 * gbs / roof, 100.0 * kvBytes / decodeUs / 1e3 / roof,
              eff.c_str());
  return line + (r.sane ? "" : " INVALID: non-finite lse");
}

/// Loads the bundle, the fill kernels and an L2 eviction buffer on devices
/// 0 .. n-1.
BenchDevices loadBenchDevices(const BenchCPOptions &o, int64_t n) {
  BenchDevices devs;
  for (int d : firstDevices(n)) {
    devs.push_back(std::make_unique<BenchDevice>(d));
    BenchDevice &bd = *devs.back();
    bd.dev.load(o.bundle);
    bd.roofs = std::make_unique<Roofs>();
    bd.roofs->load(o.roofs);
    bd.flush = std::make_unique<L2Eviction>(o.l2Flush, *bd.roofs);
  }
  return devs;
}

/// The read roof of device 0 (Bench.cpp's measureCeilings), reported.
double readRoof(const BenchCPOptions &o, const BenchDevice &bd,
                const std::function<void(const std::string &)> &out) {
  useDevice(bd.dev.ordinal);
  BenchOptions bo;
  bo.ceilingGiB = o.ceilingGiB;
  bo.reps = o.reps;
  bo.seed = o.seed;
  Ceilings ceil = measureCeilings(bo, *bd.roofs, bd.dev.stream, *bd.flush);
  out(fmt("- read roof of device 0: **%.0f GB/s** (16-byte loads over %.3g "
          "GiB: read-only path %.0f, streaming %.0f); %% n x roof compares "
          "with n times it",
          ceil.readGBs, ceil.bytes / kGiB, ceil.readNcGBs, ceil.readCsGBs));
  return ceil.readGBs;
}

/// The device counts of --devices-list that this host has, ascending (n = 1
/// first: the rows of larger n compare with it); the others are reported.
std::vector<int64_t> usableCounts(const BenchCPOptions &o, int visible,
                                  std::vector<std::string> &skipped) {
  std::vector<int64_t> counts = o.deviceCounts;
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::vector<int64_t> used;
  for (int64_t n : counts) {
    if (n <= visible)
      used.push_back(n);
    else
      skipped.push_back(fmt("- n = %" PRId64 ": skipped (%d CUDA device%s "
                            "visible)",
                            n, visible, visible == 1 ? "" : "s"));
  }
  return used;
}

void benchRows(const BenchCPOptions &o, const BenchDevices &devs,
               const std::vector<std::unique_ptr<CPGroup>> &groups,
               const std::vector<int64_t> &counts, const rt::BundleConfig &c,
               double roofGBs,
               const std::function<void(const std::string &)> &out, int &rc) {
  out("| n | B | kv_len | pages/device | plan of device 0 | step us | min us "
      "| decode us | gather+merge us | gather+merge % | GB/s | % n x roof | "
      "decode % n x roof | efficiency |");
  out("|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (int64_t B : o.batches)
    for (int64_t L : o.lengths) {
      double t1 = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        CPRow r;
        try {
          r = benchRow(o, devs, *groups[i], c, counts[i], B, L);
        } catch (const Failure &f) {
          r.n = counts[i];
          r.batch = B;
          r.len = L;
          r.skipped = std::string("FAILED: ") + f.what();
          rc = 1;
        }
        if (r.skipped.empty() && r.n == 1)
          t1 = r.step.medianUs;
        rc |= r.sane ? 0 : 1;
        out(rowLine(r, c, roofGBs, t1));
      }
    }
}

} // namespace

int pa::runner::runBenchCP(const BenchCPOptions &o) {
  std::string report;
  auto out = reportSink(report);
  int rc = 0;
  try {
    int visible = visibleDevices();
    std::vector<std::string> skipped;
    std::vector<int64_t> counts = usableCounts(o, visible, skipped);
    if (counts.empty())
      throw Failure(fmt("no device count of --devices-list fits the %d "
                        "visible CUDA devices",
                        visible));
    rt::Manifest m;
    if (rt::Status s = rt::readManifest(o.bundle, m); !s)
      throw Failure(s.message);
    const rt::BundleConfig &c = m.config;
    BenchDevices devs = loadBenchDevices(o, counts.back());
    // The communicators before the KV arenas, which take the free memory.
    std::vector<std::unique_ptr<CPGroup>> groups;
    for (int64_t n : counts)
      groups.push_back(std::make_unique<CPGroup>(firstDevices(n)));
    reportHeader(o, devs, c, groups.back()->ncclVersion(), out);
    for (const std::string &s : skipped)
      out(s);
    double roof = readRoof(o, *devs[0], out);
    for (size_t d = 0; d < devs.size(); ++d) {
      useDevice(devs[d]->dev.ordinal);
      devs[d]->arena = allocKVArena(
          arenaNeed(o, c, counts, static_cast<int64_t>(d)), 4.0 * kGiB);
    }
    out("");
    benchRows(o, devs, groups, counts, c, roof, out, rc);
  } catch (const Failure &f) {
    out(std::string("FATAL: ") + f.what());
    rc = 1;
  }
  if (!writeReport(o.out, report))
    rc = 1;
  return rc;
}

int pa::runner::runCheckCP(const CheckCPOptions &opts) {
  std::printf("pa-gpu-runner check-cp: seeds %" PRIu64 "..%" PRIu64
              " (replay one with --seed S --seeds 1), %s pages\n",
              opts.seed, opts.seed + static_cast<uint64_t>(opts.seeds) - 1,
              opts.roundRobin ? "round-robin" : "contiguous");
  int64_t N = groupSize(opts.devices);
  if (N < 1)
    return 2;
  try {
    printDevices(N);
  } catch (const Failure &f) {
    std::printf("FATAL: %s\n", f.what());
    return 2;
  }
  std::printf("tolerances: rel L2(o) <= 2e-3 f16, 1e-2 bf16, 1e-4 f32; "
              "|lse err| <= %.0e; -inf exactly for empty requests; no NaN; "
              "on every device\n",
              kLseTolerance);
  std::fflush(stdout);
  std::vector<CPSummary> sums;
  for (const std::string &dir : opts.bundles)
    sums.push_back(checkCPBundle(dir, N, opts));
  std::printf("\n| bundle | config | devices | runs | max rel err o | max "
              "abs err lse | rejections | result |\n");
  std::printf("|---|---|---:|---|---|---|---|---|\n");
  bool ok = true;
  for (const CPSummary &s : sums) {
    ok &= s.pass();
    std::printf("| %s | %s | %" PRId64 " | %d (%d failed) | %.2e | %.2e | "
                "%d/%d | %s%s |\n",
                s.dir.c_str(), s.config.c_str(), N, s.runs, s.failedRuns,
                s.maxRelO, s.maxLseErr, s.rejectPassed, s.rejectTotal,
                s.pass() ? "PASS" : "FAIL",
                s.fatal.empty() ? "" : " (fatal error above)");
  }
  std::printf("seed %" PRIu64 ": %s\n", opts.seed,
              ok ? "all bundles PASS" : "FAILURES");
  pa_shutdown();
  return ok ? 0 : 1;
}
