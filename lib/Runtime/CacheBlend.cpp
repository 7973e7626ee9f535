//===- CacheBlend.cpp - page-table writes and CacheBlend ops (C API) ------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// pa_append_kv and pa_scatter_kv launch the bundle's `append_kv` /
// `scatter_kv` kernels (pa.append_kv, pa.scatter_kv: a CTA per row through
// the page table); pa_kv_deviation and pa_select_topk the CacheBlend
// kernels (pa.kv_deviation, pa.select_topk); pa_pack_mask the mask packing
// (pa.pack_mask) that makes prefill's custom_mask. Checked mode validates on the
// host what the kernels would otherwise skip.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"

#include <cmath>
#include <unordered_set>

using namespace pa::rt;
using namespace pa::rt::impl;

namespace {

/// What compiles the kernels of this file.
constexpr const char *kBlendHint =
    "pa-compile adds append_kv, scatter_kv, kv_deviation, select_topk and "
    "pack_mask to bundles of --kernels all";

/// The rows of a ragged array: indptr from 0, non-decreasing, ending at
/// `rows`.
Status checkRowsIndptr(const std::vector<int32_t> &indptr, int64_t batch,
                       int64_t rows, const char *name) {
  if (indptr[0] != 0)
    return fail(name, "[0] = ", indptr[0], ", expected 0");
  for (int64_t b = 0; b < batch; ++b)
    if (indptr[b + 1] < indptr[b])
      return fail(name, " not non-decreasing at ", b, ": ", indptr[b],
                  " then ", indptr[b + 1]);
  if (indptr[batch] != rows)
    return fail(name, "[", batch, "] = ", indptr[batch], ", expected num_rows = ",
                rows);
  return Status::success();
}

/// pa_append_kv (`scatter` false) and pa_scatter_kv.
Status runPageWrite(pa_bundle &b, const pa_page_write_args &a, bool scatter,
                    CUstream stream) {
  PA_TRY(requireContext());
  KernelKind kind = scatter ? KernelKind::ScatterKV : KernelKind::AppendKV;
  PA_TRY(requireKernel(b, kind, kBlendHint));
  const BundleConfig &c = b.manifest.config;
  if (a.num_rows < 0 || a.batch < 0 || a.num_pages < 0 || a.nnz < 0)
    return fail("num_rows (", a.num_rows, "), batch (", a.batch,
                "), num_pages (", a.num_pages, ") and nnz (", a.nnz,
                ") must not be negative");
  PA_TRY(checkCacheForm(c, a.kv, a.k, a.v, a.k_scale, a.v_scale));
  if (!scatter && a.positions)
    return fail("argument 'positions' is given but pa_append_kv takes none "
                "(the rows go after each request's old tokens): pass 0");
  if (a.num_rows == 0)
    return Status::success();
  bool joint = c.kv == KVStorage::Joint;
  PA_TRY(checkRequired({{"k_new", a.k_new, true},
                        {"v_new", a.v_new, true},
                        {"rows_indptr", a.rows_indptr, true},
                        {"positions", a.positions, scatter},
                        {"kv_indptr", a.kv_indptr, true},
                        {"kv_indices", a.kv_indices, a.nnz > 0},
                        {"kv_last_page_len", a.kv_last_page_len, a.batch > 0},
                        {"kv", a.kv, joint},
                        {"k", a.k, !joint},
                        {"v", a.v, !joint},
                        {"k_scale", a.k_scale, c.fp8()},
                        {"v_scale", a.v_scale, c.fp8()}}));
  if (a.checked) {
    std::vector<int32_t> indptr, last, indices, rows, positions;
    PA_TRY(download(indptr, a.kv_indptr, a.batch + 1, stream, "kv_indptr"));
    PA_TRY(download(last, a.kv_last_page_len, a.batch, stream,
                    "kv_last_page_len"));
    std::vector<int64_t> lens;
    PA_TRY(kvLengths(indptr, last, a.batch, c.pageSize, lens));
    // As pa_decode_run's checked mode: nnz is kv_indptr[batch], the
    // entries of kv_indices (a table shorter than nnz says the two
    // disagree, whichever is wrong).
    if (indptr[a.batch] != a.nnz)
      return fail("size mismatch: kv_indptr[", a.batch, "] = ",
                  indptr[a.batch],
                  " on the device, but nnz (entries of kv_indices) = ",
                  a.nnz);
    PA_TRY(download(indices, a.kv_indices, a.nnz, stream, "kv_indices"));
    PA_TRY(validatePageTable(indptr, indices, last, a.batch, c.pageSize,
                             a.num_pages));
    PA_TRY(download(rows, a.rows_indptr, a.batch + 1, stream, "rows_indptr"));
    PA_TRY(checkRowsIndptr(rows, a.batch, a.num_rows, "rows_indptr"));
    if (scatter) {
      PA_TRY(download(positions, a.positions, a.num_rows, stream,
                      "positions"));
      for (int64_t r = 0, req = 0; r < a.num_rows; ++r) {
        while (rows[req + 1] <= r)
          ++req;
        if (positions[r] < 0 || positions[r] >= lens[req])
          return fail("positions[", r, "] = ", positions[r],
                      " out of [0, kv_len = ", lens[req], ") of request ",
                      req);
      }
      for (int64_t req = 0; req < a.batch; ++req) {
        std::unordered_set<int32_t> seen;
        for (int32_t r = rows[req]; r < rows[req + 1]; ++r)
          if (!seen.insert(positions[r]).second)
            return fail("positions[", r, "] = ", positions[r],
                        " repeats a token of request ", req,
                        " (rows must go to distinct tokens)");
      }
    } else {
      for (int64_t req = 0; req < a.batch; ++req)
        if (rows[req + 1] - rows[req] > lens[req])
          return fail("request ", req, ": append_len = ",
                      rows[req + 1] - rows[req], " > kv_len = ", lens[req],
                      " (the page table describes the cache after the "
                      "append)");
    }
    PA_TRY(checkScales(c, a.k_scale, a.v_scale, stream));
  }
  ProblemDims dims;
  dims.batch = a.batch;
  dims.numQueryRows = a.num_rows;
  dims.numPages = a.num_pages;
  dims.nnz = a.nnz;
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  bind(ArgRole::KNew, a.k_new);
  bind(ArgRole::VNew, a.v_new);
  bind(scatter ? ArgRole::RowsIndptr : ArgRole::AppendIndptr, a.rows_indptr);
  if (scatter)
    bind(ArgRole::Positions, a.positions);
  bind(ArgRole::KVIndptr, a.kv_indptr);
  bind(ArgRole::KVIndices, a.kv_indices);
  bind(ArgRole::KVLastPageLen, a.kv_last_page_len);
  bindCache(c, a.kv, a.k, a.v, a.k_scale, a.v_scale, dims, args);
  // The grid is a CTA per row: the launch's `batch` is N (the arguments
  // are bound with B already).
  ProblemDims grid = dims;
  grid.batch = a.num_rows;
  return launch(b, kind, args, grid, stream, a.checked != 0);
}

Status runKVDeviation(pa_bundle &b, const pa_kv_deviation_args &a,
                      CUstream stream) {
  PA_TRY(requireContext());
  PA_TRY(requireKernel(b, KernelKind::KVDeviation, kBlendHint));
  if (a.num_rows < 0)
    return fail("num_rows = ", a.num_rows, " is negative");
  if (a.num_rows == 0)
    return Status::success();
  PA_TRY(checkRequired({{"new_rows", a.new_rows, true},
                        {"cached_rows", a.cached_rows, true},
                        {"deviation", a.deviation, true}}));
  const BundleConfig &c = b.manifest.config;
  ProblemDims dims;
  dims.numQueryRows = a.num_rows;
  // A warp per token, 4 a CTA: the grid's `batch` is ceil(N / 4).
  dims.batch = (a.num_rows + 3) / 4;
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  bind(ArgRole::NewRows, a.new_rows);
  bind(ArgRole::CachedRows, a.cached_rows);
  bind(ArgRole::Deviation, a.deviation);
  return launch(b, KernelKind::KVDeviation, args, dims, stream, false);
}

Status runSelectTopK(pa_bundle &b, const pa_select_topk_args &a,
                     CUstream stream) {
  PA_TRY(requireContext());
  PA_TRY(requireKernel(b, KernelKind::SelectTopK, kBlendHint));
  if (a.batch < 0 || a.num_rows < 0)
    return fail("batch (", a.batch, ") and num_rows (", a.num_rows,
                ") must not be negative");
  if (a.batch == 0) {
    // No request: out_indptr = {0}, no launch.
    PA_TRY(checkRequired({{"out_indptr", a.out_indptr, true}}));
    PA_CU(cuMemsetD32Async(a.out_indptr, 0, 1, stream));
    return Status::success();
  }
  PA_TRY(checkRequired({{"deviation", a.deviation, a.num_rows > 0},
                        {"indptr", a.indptr, true},
                        {"positions", a.positions, a.num_rows > 0},
                        {"out_indptr", a.out_indptr, true}}));
  if (a.checked) {
    std::vector<int32_t> indptr;
    PA_TRY(download(indptr, a.indptr, a.batch + 1, stream, "indptr"));
    PA_TRY(checkRowsIndptr(indptr, a.batch, a.num_rows, "indptr"));
    std::vector<float> dev(static_cast<size_t>(a.num_rows));
    if (a.num_rows > 0) {
      PA_CU(cuMemcpyDtoHAsync(dev.data(), a.deviation, dev.size() * 4,
                              stream));
      PA_CU(cuStreamSynchronize(stream));
    }
    for (int64_t i = 0; i < a.num_rows; ++i)
      if (std::isnan(dev[static_cast<size_t>(i)]))
        return fail("deviation[", i,
                    "] is NaN (outside select_topk's domain)");
  }
  const BundleConfig &c = b.manifest.config;
  ProblemDims dims;
  dims.batch = a.batch;
  dims.numQueryRows = a.num_rows;
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  bind(ArgRole::Deviation, a.deviation);
  bind(ArgRole::DevIndptr, a.indptr);
  bind(ArgRole::Positions, a.positions);
  bind(ArgRole::OutIndptr, a.out_indptr);
  return launch(b, KernelKind::SelectTopK, args, dims, stream,
                a.checked != 0);
}

Status runPackMask(pa_bundle &b, const pa_pack_mask_args &a,
                   CUstream stream) {
  PA_TRY(requireContext());
  PA_TRY(requireKernel(b, KernelKind::PackMask, kBlendHint));
  if (a.batch < 0 || a.num_elements < 0 || a.packed_bytes < 0)
    return fail("batch (", a.batch, "), num_elements (", a.num_elements,
                ") and packed_bytes (", a.packed_bytes,
                ") must not be negative");
  PA_TRY(checkRequired({{"packed_indptr", a.packed_indptr, true},
                        {"indptr", a.indptr, a.batch > 0},
                        {"mask", a.mask, a.num_elements > 0},
                        {"packed", a.packed, a.num_elements > 0}}));
  if (a.batch == 0) {
    PA_CU(cuMemsetD32Async(a.packed_indptr, 0, 1, stream));
    return Status::success();
  }
  if (a.checked) {
    std::vector<int32_t> indptr;
    PA_TRY(download(indptr, a.indptr, a.batch + 1, stream, "indptr"));
    PA_TRY(checkRowsIndptr(indptr, a.batch, a.num_elements, "indptr"));
    int64_t bytes = 0;
    for (int64_t s = 0; s < a.batch; ++s)
      bytes += (indptr[s + 1] - indptr[s] + 7) / 8;
    if (bytes > a.packed_bytes)
      return fail("the packed mask needs ", bytes, " bytes, packed_bytes = ",
                  a.packed_bytes);
  }
  const BundleConfig &c = b.manifest.config;
  ProblemDims dims;
  dims.batch = a.batch;
  dims.numQueryRows = a.num_elements;
  dims.maskBytes = a.packed_bytes;
  ArgBindings args;
  RoleBinder bind{c, dims, args};
  bind(ArgRole::Mask, a.mask);
  bind(ArgRole::MaskSegments, a.indptr);
  bind(ArgRole::CustomMask, a.packed);
  bind(ArgRole::MaskIndptr, a.packed_indptr);
  return launch(b, KernelKind::PackMask, args, dims, stream, a.checked != 0);
}

} // namespace

extern "C" {

int pa_pack_mask(pa_bundle *bundle, const pa_pack_mask_args *args,
                 pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_pack_mask: null argument"));
  if (Status s = runPackMask(*bundle, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_pack_mask: ", s.message));
  return PA_SUCCESS;
}

int pa_append_kv(pa_bundle *bundle, const pa_page_write_args *args,
                 pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_append_kv: null argument"));
  if (Status s = runPageWrite(*bundle, *args, /*scatter=*/false,
                              static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_append_kv: ", s.message));
  return PA_SUCCESS;
}

int pa_scatter_kv(pa_bundle *bundle, const pa_page_write_args *args,
                  pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_scatter_kv: null argument"));
  if (Status s = runPageWrite(*bundle, *args, /*scatter=*/true,
                              static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_scatter_kv: ", s.message));
  return PA_SUCCESS;
}

int pa_kv_deviation(pa_bundle *bundle, const pa_kv_deviation_args *args,
                    pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_kv_deviation: null argument"));
  if (Status s = runKVDeviation(*bundle, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_kv_deviation: ", s.message));
  return PA_SUCCESS;
}

int pa_select_topk(pa_bundle *bundle, const pa_select_topk_args *args,
                   pa_stream stream) {
  if (!bundle || !args)
    return report(fail("pa_select_topk: null argument"));
  if (Status s = runSelectTopK(*bundle, *args, static_cast<CUstream>(stream));
      !s)
    return report(fail("pa_select_topk: ", s.message));
  return PA_SUCCESS;
}

} // extern "C"
