//===- Cascade.cpp - merges and multi-level cascades (C API) --------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// pa_merge and pa_merge_states launch the bundle's `merge` / `merge_states`
// kernels (pa.merge, pa.merge_states). pa_cascade_plan / pa_cascade_run
// run pa.cascade as the runtime's plan of its levels (docs/Runtime.md,
// "Cascade"): a level whose segments all hold one query is a decode step
// over that level's page table (a request's unique suffix), any other a
// prefill (the shared prefix: one segment holding every query, which the
// prefill planner splits over the keys so that each shared page is loaded
// once per query tile and KV chunk rather than once per request); each
// level writes its state, and the merge kernel folds them into o / lse.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <cmath>
#include <memory>

using namespace pa::rt;
using namespace pa::rt::impl;

/// One level of a cascade plan: a decode or a prefill plan.
struct CascadeLevel {
  int kind = PA_CASCADE_LEVEL_DECODE;
  int64_t batch = 0, nnz = 0;
  std::unique_ptr<pa_plan, void (*)(pa_plan *)> decode{nullptr,
                                                       pa_plan_free};
  std::unique_ptr<pa_prefill_plan_t, void (*)(pa_prefill_plan_t *)> prefill{
      nullptr, pa_prefill_plan_free};
};

struct pa_cascade_plan {
  BundleConfig config;
  CUcontext ctx = nullptr;
  int64_t numQueryRows = 0;
  std::vector<CascadeLevel> levels;
  /// L > 1: each level's state (o [Nq, Hq, D] dtype, lse [Nq, Hq] f32),
  /// and for L > 2 two more for the partial merges.
  std::vector<CUdeviceptr> stateO, stateLse;
  /// L > 1: levels 1 .. L-1 run on streams of their own (level 0 on the
  /// caller's), so that a compute-bound shared prefix and memory-bound
  /// suffixes overlap; decode levels get the highest stream priority, so
  /// their CTAs are dispatched as soon as a prefill CTA leaves room. `start`
  /// orders them after the caller's stream, `done[l]` the merges after them.
  std::vector<CUstream> streams; // [L]; streams[0] unused
  std::vector<CUevent> done;     // [L]; done[0] unused
  CUevent start = nullptr;

  void release() {
    ContextGuard guard(ctx);
    for (auto *v : {&stateO, &stateLse})
      for (CUdeviceptr &p : *v)
        if (p)
          cuMemFree(p);
    for (CUstream s : streams)
      if (s)
        cuStreamDestroy(s);
    for (CUevent e : done)
      if (e)
        cuEventDestroy(e);
    if (start)
      cuEventDestroy(start);
    stateO.clear();
    stateLse.clear();
    streams.clear();
    done.clear();
    start = nullptr;
    levels.clear();
  }
};

namespace {

/// What compiles the kernels of this file.
constexpr const char *kMergeHint =
    "pa-compile adds merge and merge_states to bundles of --kernels all";

/// Copies `count` floats of an lse array to the host and checks that each is
/// finite or -inf (the merge's domain).
Status checkLse(CUdeviceptr src, int64_t count, CUstream stream,
                const char *what) {
  std::vector<float> host(static_cast<size_t>(count));
  std::string call = std::string("cuMemcpyDtoHAsync(") + what + ")";
  PA_TRY(cuCheck(cuMemcpyDtoHAsync(host.data(), src, host.size() * 4, stream),
                 call.c_str()));
  PA_CU(cuStreamSynchronize(stream));
  for (int64_t i = 0; i < count; ++i) {
    float x = host[static_cast<size_t>(i)];
    if (std::isnan(x) || x == INFINITY)
      return fail(what, "[", i, "] = ", x,
                  ": an lse must be finite or -inf (a state of weight 0)");
  }
  return Status::success();
}

/// The merge kernels' pointers: o arrays are read and written in 16-byte
/// vectors, lse arrays as floats.
Status checkAligned(
    std::initializer_list<std::pair<const char *, pa_deviceptr>> os,
    std::initializer_list<std::pair<const char *, pa_deviceptr>> lses) {
  for (const auto &[name, p] : os)
    PA_TRY(checkAlignedArg(name, p, 16, "the merge kernels use 16-byte vectors"));
  for (const auto &[name, p] : lses)
    PA_TRY(checkAlignedArg(name, p, 4, "float"));
  return Status::success();
}

/// A device array for checkDisjoint: its argument name, address and bytes.
struct Extent {
  const char *name;
  pa_deviceptr ptr;
  int64_t bytes;
};

/// Checked mode of the merges: no output overlaps an input or the other
/// output (the kernels read the inputs while they write the outputs). Host
/// arithmetic only, no copies.
Status checkDisjoint(std::initializer_list<Extent> outs,
                     std::initializer_list<Extent> ins) {
  auto overlap = [](const Extent &x, const Extent &y) {
    return x.bytes > 0 && y.bytes > 0 && x.ptr < y.ptr + y.bytes &&
           y.ptr < x.ptr + x.bytes;
  };
  auto message = [](const Extent &x, const Extent &y) {
    return fail("argument '", x.name, "' [0x", std::hex, x.ptr, ", 0x",
                x.ptr + x.bytes, ") overlaps '", y.name, "' [0x", y.ptr,
                ", 0x", y.ptr + y.bytes,
                ") (the outputs must not overlap the inputs or each other)");
  };
  for (const Extent *o = outs.begin(); o != outs.end(); ++o) {
    for (const Extent &in : ins)
      if (overlap(*o, in))
        return message(*o, in);
    for (const Extent *p = o + 1; p != outs.end(); ++p)
      if (overlap(*o, *p))
        return message(*o, *p);
  }
  return Status::success();
}

Status runMerge(pa_bundle &b, const pa_merge_args &a, CUstream stream) {
  PA_TRY(requireContext());
  PA_TRY(requireKernel(b, KernelKind::Merge, kMergeHint));
  if (a.num_rows < 0)
    return fail("num_rows = ", a.num_rows, " is negative");
  if (a.num_rows == 0)
    return Status::success();
  PA_TRY(checkAligned({{"o_a", a.o_a}, {"o_b", a.o_b}, {"o", a.o}},
                      {{"lse_a", a.lse_a}, {"lse_b", a.lse_b}, {"lse", a.lse}}));
  const BundleConfig &c = b.manifest.config;
  ProblemDims dims;
  dims.batch = a.num_rows;
  dims.numQueryRows = a.num_rows;
  if (a.checked) {
    int64_t n = a.num_rows * c.numQHeads();
    int64_t oBytes = n * c.headDim * elementBytes(c.dtype), lseBytes = n * 4;
    PA_TRY(checkDisjoint({{"o", a.o, oBytes}, {"lse", a.lse, lseBytes}},
                         {{"o_a", a.o_a, oBytes},
                          {"lse_a", a.lse_a, lseBytes},
                          {"o_b", a.o_b, oBytes},
                          {"lse_b", a.lse_b, lseBytes}}));
    PA_TRY(checkLse(a.lse_a, n, stream, "lse_a"));
    PA_TRY(checkLse(a.lse_b, n, stream, "lse_b"));
  }
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  bind(ArgRole::StateO0, a.o_a);
  bind(ArgRole::StateLSE0, a.lse_a);
  bind(ArgRole::StateO1, a.o_b);
  bind(ArgRole::StateLSE1, a.lse_b);
  bind(ArgRole::O, a.o);
  bind(ArgRole::LSE, a.lse);
  return launch(b, KernelKind::Merge, args, dims, stream, a.checked != 0);
}

Status runMergeStates(pa_bundle &b, const pa_merge_states_args &a,
                      CUstream stream) {
  PA_TRY(requireContext());
  PA_TRY(requireKernel(b, KernelKind::MergeStates, kMergeHint));
  if (a.num_rows < 0 || a.num_states < 0)
    return fail("num_rows = ", a.num_rows, " and num_states = ", a.num_states,
                " must not be negative");
  if (a.num_rows == 0)
    return Status::success();
  const BundleConfig &c = b.manifest.config;
  // With no states the kernel reads nothing (any pointer, 0 included).
  if (a.num_states > 0)
    PA_TRY(checkAligned({{"o_states", a.o_states}},
                        {{"lse_states", a.lse_states}}));
  PA_TRY(checkAligned({{"o", a.o}}, {{"lse", a.lse}}));
  ProblemDims dims;
  dims.batch = a.num_rows;
  dims.numQueryRows = a.num_rows;
  dims.numStates = a.num_states;
  if (a.checked) {
    int64_t n = a.num_rows * c.numQHeads(), ns = n * a.num_states;
    int64_t eb = elementBytes(c.dtype);
    PA_TRY(checkDisjoint(
        {{"o", a.o, n * c.headDim * eb}, {"lse", a.lse, n * 4}},
        {{"o_states", a.o_states, ns * c.headDim * eb},
         {"lse_states", a.lse_states, ns * 4}}));
    if (a.num_states > 0)
      PA_TRY(checkLse(a.lse_states, ns, stream, "lse_states"));
  }
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  // A null pointer of an empty array is still a valid descriptor.
  bind(ArgRole::OStates, a.o_states ? a.o_states : a.o);
  bind(ArgRole::LSEStates, a.lse_states ? a.lse_states : a.lse);
  bind(ArgRole::O, a.o);
  bind(ArgRole::LSE, a.lse);
  return launch(b, KernelKind::MergeStates, args, dims, stream,
                a.checked != 0);
}

/// Whether the bundle's decode computes a one-query level exactly as its
/// prefill would (pa.cascade applies the prefill line's options at every
/// level; the decode kernel has the defaults).
bool decodeMatchesPrefill(const pa_bundle &b) {
  if (!b.function(KernelKind::Decode))
    return false;
  const KernelSpec *p = b.manifest.find(KernelKind::Prefill);
  if (!p || !p->prefill)
    return true; // no prefill: nothing to disagree with
  return p->prefill->window == 0 && p->prefill->softCap == 0 &&
         p->prefill->smScale == 0 && !p->prefill->lseBase2 &&
         !p->hasRole(ArgRole::AlibiSlopes);
}

Status makeCascadePlan(pa_bundle &b, const pa_cascade_level *levels,
                       int64_t numLevels, int64_t numQueryRows,
                       pa_cascade_plan_t &p) {
  PA_TRY(requireContext(&p.ctx));
  const BundleConfig &c = b.manifest.config;
  p.config = c;
  p.numQueryRows = numQueryRows;
  if (numLevels < 1)
    return fail("num_levels = ", numLevels, ": a cascade has at least one "
                "level");
  if (!levels)
    return fail("levels is null");
  if (numQueryRows < 0)
    return fail("num_query_rows = ", numQueryRows, " is negative");
  if (numLevels > 1)
    PA_TRY(requireKernel(b, KernelKind::Merge, kMergeHint));
  const KernelSpec *prefill = b.manifest.find(KernelKind::Prefill);
  if (prefill && prefill->prefill && prefill->prefill->lseBase2)
    return fail("the bundle's prefill reports lse in base 2 (lse_base2 1): "
                "the cascade's merges take natural-log states (compile it "
                "without --lse-base2)");
  bool decodeOK = decodeMatchesPrefill(b);
  for (int64_t l = 0; l < numLevels; ++l) {
    const pa_cascade_level &in = levels[l];
    auto at = [&](Status s) {
      return fail("level ", l, ": ", s.message);
    };
    if (in.batch < 0)
      return at(fail("batch = ", in.batch, " is negative"));
    if (!in.qo_indptr || !in.kv_indptr || (in.batch > 0 && !in.kv_last_page_len))
      return at(fail("qo_indptr, kv_indptr and kv_last_page_len must not be "
                     "null"));
    if (in.qo_indptr[0] != 0 || in.qo_indptr[in.batch] != numQueryRows)
      return at(fail("qo_indptr runs from ", in.qo_indptr[0], " to ",
                     in.qo_indptr[in.batch],
                     ", expected 0 to num_query_rows = ", numQueryRows,
                     " (every level covers all query rows)"));
    bool oneQueryEach = in.batch == numQueryRows;
    for (int64_t s = 0; oneQueryEach && s <= in.batch; ++s)
      oneQueryEach = in.qo_indptr[s] == s;
    CascadeLevel level;
    level.batch = in.batch;
    level.nnz = in.kv_indptr[in.batch];
    if (oneQueryEach && decodeOK) {
      level.kind = PA_CASCADE_LEVEL_DECODE;
      level.decode.reset(new pa_plan);
      if (Status s = makePlan(b, in.kv_indptr, in.kv_last_page_len, in.batch,
                              nullptr, *level.decode);
          !s)
        return at(s); // the plan's deleter frees what it holds
    } else {
      level.kind = PA_CASCADE_LEVEL_PREFILL;
      if (!prefill)
        return at(fail("the level has segments of other than one query, "
                       "which run as prefill, and bundle '",
                       b.dir,
                       "' has no 'prefill' kernel (pa-compile --kernels "
                       "all)"));
      if (prefill->prefill->causal && l + 1 < numLevels)
        return at(fail("the level runs as prefill and the bundle's prefill "
                       "is causal, but causal applies to the last level "
                       "only (a shared prefix is fully visible): compile "
                       "the bundle without --causal"));
      level.prefill.reset(new pa_prefill_plan_t);
      if (Status s = makePrefillPlan(b, in.qo_indptr, in.kv_indptr,
                                     in.kv_last_page_len, in.batch,
                                     numQueryRows, nullptr, *level.prefill);
          !s)
        return at(s);
    }
    p.levels.push_back(std::move(level));
  }
  if (numLevels == 1)
    return Status::success();
  int64_t states = numLevels + (numLevels > 2 ? 2 : 0);
  size_t rows = static_cast<size_t>(numQueryRows * c.numQHeads());
  for (int64_t i = 0; i < states; ++i) {
    p.stateO.push_back(0);
    p.stateLse.push_back(0);
    PA_TRY(upload(p.stateO.back(), nullptr,
                  rows * c.headDim * elementBytes(c.dtype)));
    PA_TRY(upload(p.stateLse.back(), nullptr, rows * sizeof(float)));
  }
  int least = 0, greatest = 0;
  PA_CU(cuCtxGetStreamPriorityRange(&least, &greatest));
  PA_CU(cuEventCreate(&p.start, CU_EVENT_DISABLE_TIMING));
  p.streams.assign(static_cast<size_t>(numLevels), nullptr);
  p.done.assign(static_cast<size_t>(numLevels), nullptr);
  for (size_t l = 1; l < p.levels.size(); ++l) {
    int priority =
        p.levels[l].kind == PA_CASCADE_LEVEL_DECODE ? greatest : least;
    PA_CU(cuStreamCreateWithPriority(&p.streams[l], CU_STREAM_NON_BLOCKING,
                                     priority));
    PA_CU(cuEventCreate(&p.done[l], CU_EVENT_DISABLE_TIMING));
  }
  return Status::success();
}

Status runCascade(pa_bundle &b, const pa_cascade_plan_t &p,
                  const pa_cascade_args &a, CUstream stream) {
  PA_TRY(requireContext());
  const BundleConfig &c = b.manifest.config;
  if (p.config != c)
    return fail("the plan was made for a bundle with config '",
                p.config.str(), "', this bundle's is '", c.str(), "'");
  int64_t numLevels = static_cast<int64_t>(p.levels.size());
  if (a.num_levels != numLevels)
    return fail("num_levels = ", a.num_levels, " but the plan has ",
                numLevels);
  if (!a.levels)
    return fail("levels is null");
  if (a.num_query_rows != p.numQueryRows)
    return fail("num_query_rows = ", a.num_query_rows,
                " but the plan was made for ", p.numQueryRows);
  bool checked = a.checked != 0;
  bool concurrent = numLevels > 1 && !a.serial;
  if (concurrent)
    PA_CU(cuEventRecord(p.start, stream));
  for (int64_t l = 0; l < numLevels; ++l) {
    const CascadeLevel &level = p.levels[static_cast<size_t>(l)];
    const pa_cascade_level_args &la = a.levels[l];
    CUstream levelStream =
        concurrent && l > 0 ? p.streams[static_cast<size_t>(l)] : stream;
    if (levelStream != stream)
      PA_CU(cuStreamWaitEvent(levelStream, p.start, 0));
    // One level alone writes o / lse; otherwise its state.
    pa_deviceptr o = numLevels == 1 ? a.o : p.stateO[l];
    pa_deviceptr lse = numLevels == 1 ? a.lse : p.stateLse[l];
    Status s;
    if (level.kind == PA_CASCADE_LEVEL_DECODE) {
      pa_decode_args d = {};
      d.q = a.q;
      d.kv = a.kv;
      d.k = a.k;
      d.v = a.v;
      d.k_scale = a.k_scale;
      d.v_scale = a.v_scale;
      d.kv_indptr = la.kv_indptr;
      d.kv_indices = la.kv_indices;
      d.kv_last_page_len = la.kv_last_page_len;
      d.o = o;
      d.lse = lse;
      d.batch = level.batch;
      d.num_q_heads = a.num_q_heads;
      d.head_dim = a.head_dim;
      d.num_pages = a.num_pages;
      d.nnz = la.nnz;
      d.checked = a.checked;
      s = runDecode(b, *level.decode, d, levelStream);
    } else {
      pa_prefill_args pr = {};
      pr.q = a.q;
      pr.qo_indptr = la.qo_indptr;
      pr.kv = a.kv;
      pr.k = a.k;
      pr.v = a.v;
      pr.k_scale = a.k_scale;
      pr.v_scale = a.v_scale;
      pr.kv_indptr = la.kv_indptr;
      pr.kv_indices = la.kv_indices;
      pr.kv_last_page_len = la.kv_last_page_len;
      pr.o = o;
      pr.lse = lse;
      pr.batch = level.batch;
      pr.num_query_rows = a.num_query_rows;
      pr.num_q_heads = a.num_q_heads;
      pr.head_dim = a.head_dim;
      pr.num_pages = a.num_pages;
      pr.nnz = la.nnz;
      pr.checked = a.checked;
      s = runPrefill(b, *level.prefill, pr, levelStream);
    }
    if (!s)
      return fail("level ", l, " (",
                  level.kind == PA_CASCADE_LEVEL_DECODE ? "decode" : "prefill",
                  "): ", s.message);
    if (levelStream != stream) {
      CUevent e = p.done[static_cast<size_t>(l)];
      PA_CU(cuEventRecord(e, levelStream));
      PA_CU(cuStreamWaitEvent(stream, e, 0));
    }
  }
  // The left fold of the merge: level 0 (+) level 1 into o / lse, or for
  // L > 2 through the two spare states.
  pa_deviceptr curO = numLevels > 1 ? p.stateO[0] : 0;
  pa_deviceptr curLse = numLevels > 1 ? p.stateLse[0] : 0;
  for (int64_t l = 1; l < numLevels; ++l) {
    bool last = l + 1 == numLevels;
    size_t spare = static_cast<size_t>(numLevels + (l % 2));
    pa_merge_args m = {};
    m.o_a = curO;
    m.lse_a = curLse;
    m.o_b = p.stateO[l];
    m.lse_b = p.stateLse[l];
    m.o = last ? a.o : p.stateO[spare];
    m.lse = last ? a.lse : p.stateLse[spare];
    m.num_rows = a.num_query_rows;
    m.checked = checked;
    if (Status s = runMerge(b, m, stream); !s)
      return fail("merge of level ", l, ": ", s.message);
    curO = m.o;
    curLse = m.lse;
  }
  return Status::success();
}

} // namespace

extern "C" {

int pa_merge(pa_bundle *bundle, const pa_merge_args *args, pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_merge: null argument"));
  if (Status s = runMerge(*bundle, *args, static_cast<CUstream>(stream)); !s)
    return report(fail("pa_merge: ", s.message));
  return PA_SUCCESS;
}

int pa_merge_states(pa_bundle *bundle, const pa_merge_states_args *args,
                    pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_merge_states: null argument"));
  if (Status s =
          runMergeStates(*bundle, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_merge_states: ", s.message));
  return PA_SUCCESS;
}

int pa_cascade_plan(pa_bundle *bundle, const pa_cascade_level *levels,
                    int64_t num_levels, int64_t num_query_rows,
                    pa_cascade_plan_t **out) {
  if (!bundle || !out)
    return report(fail("pa_cascade_plan: null argument"));
  *out = nullptr;
  auto *p = new pa_cascade_plan_t;
  if (Status s = makeCascadePlan(*bundle, levels, num_levels, num_query_rows,
                                 *p);
      !s) {
    p->release();
    delete p;
    return report(fail("pa_cascade_plan: ", s.message));
  }
  *out = p;
  return PA_SUCCESS;
}

int pa_cascade_plan_get_level(const pa_cascade_plan_t *plan, int64_t level,
                              pa_cascade_level_info *out) {
  if (!plan || !out)
    return report(fail("pa_cascade_plan_get_level: null argument"));
  if (level < 0 || level >= static_cast<int64_t>(plan->levels.size()))
    return report(fail("pa_cascade_plan_get_level: level ", level,
                       " out of range [0, ", plan->levels.size(), ")"));
  const CascadeLevel &l = plan->levels[static_cast<size_t>(level)];
  *out = {};
  out->kind = l.kind;
  out->batch = l.batch;
  out->nnz = l.nnz;
  if (l.decode) {
    pa_plan_info info;
    (void)pa_plan_get_info(l.decode.get(), &info);
    out->split = info.split;
    out->chunk = info.split ? info.chunk_size : 0;
    out->num_work_items = info.num_work_items;
  } else {
    pa_prefill_plan_info info;
    (void)pa_prefill_plan_get_info(l.prefill.get(), &info);
    out->split = info.split;
    out->chunk = info.kv_chunk;
    out->num_work_items = info.num_work_items;
  }
  return PA_SUCCESS;
}

void pa_cascade_plan_free(pa_cascade_plan_t *plan) {
  if (!plan)
    return;
  plan->release();
  delete plan;
}

int pa_cascade_run(pa_bundle *bundle, const pa_cascade_plan_t *plan,
                   const pa_cascade_args *args, pa_stream stream) {
  if (!bundle || !plan || !args)
    return report(fail("pa_cascade_run: null argument"));
  if (Status s =
          runCascade(*bundle, *plan, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_cascade_run: ", s.message));
  return PA_SUCCESS;
}

} // extern "C"
