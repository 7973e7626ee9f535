//===- BatchTables.cpp - CSR, vLLM and tt-metal page tables --------------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// The page tables of a batch of pool sequences in the three forms of
// PagePool.h, and checked converters between them (docs/PagePool.md,
// "Batch tables"). The CSR side is validated by validatePageTable()
// (Planner.cpp), the padded forms here; every converter validates its whole
// input before it writes an output.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Runtime/PagePool.h"
#include "PoolInternal.h"

#include <algorithm>
#include <limits>

using namespace pa::rt;
using pa::rt::pool_detail::ceilDiv;

namespace {

/// Pages and lengths of the pool sequences `ids`.
Status gatherSequences(const PagePool &pool, const PagePool::SeqId *ids,
                       int64_t batch,
                       std::vector<const std::vector<int32_t> *> &pages,
                       std::vector<int64_t> &lens) {
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (batch > 0 && !ids)
    return fail("seq_ids is null but batch = ", batch);
  pages.resize(static_cast<size_t>(batch));
  lens.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    if (Status s = pool.sequencePages(ids[b], pages[b], lens[b]); !s)
      return fail("seq_ids[", b, "]: ", s.message);
  return Status::success();
}

/// The row width of a padded table: `width` (>= every page count) or, when
/// 0, the largest page count.
Status pickWidth(const std::vector<int64_t> &pageCounts, int64_t width,
                 int64_t &out) {
  if (width < 0 || width > std::numeric_limits<int32_t>::max())
    return fail("width = ", width, " not in [0, INT32_MAX]");
  int64_t most = 0;
  for (size_t b = 0; b < pageCounts.size(); ++b) {
    most = std::max(most, pageCounts[b]);
    if (width > 0 && pageCounts[b] > width)
      return fail("request ", b, " has ", pageCounts[b],
                  " pages, more than the width ", width);
  }
  out = width > 0 ? width : most;
  return Status::success();
}

Status checkGeometry(int64_t batch, int64_t pageSize, int64_t numPages) {
  if (batch < 0)
    return fail("batch = ", batch, " is negative");
  if (pageSize < 1 || pageSize > std::numeric_limits<int32_t>::max())
    return fail("page_size = ", pageSize, " not in [1, INT32_MAX]");
  if (numPages < 0)
    return fail("num_pages = ", numPages, " is negative");
  return Status::success();
}

/// Validates a padded table [batch, width >= 0] whose row b uses `lens[b]`
/// tokens (already range-checked): its first ceil(len/P) entries must be
/// pages in [0, numPages).
Status checkPadded(I32Span table, const char *name, int64_t batch,
                   int64_t width, int64_t pageSize, int64_t numPages,
                   const std::vector<int64_t> &lens) {
  if (table.size < 0 || (table.size > 0 && !table.data))
    return fail(name, " is null or has a negative length");
  if (width > 0 && batch > std::numeric_limits<int64_t>::max() / width)
    return fail(name, ": batch * width overflows");
  if (table.size != batch * width)
    return fail(name, " has ", table.size, " entries, expected batch * width = ",
                batch, " * ", width, " = ", batch * width);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t used = ceilDiv(lens[b], pageSize);
    for (int64_t j = 0; j < used; ++j) {
      const int32_t p = table[b * width + j];
      if (p < 0 || p >= numPages)
        return fail(name, "[", b, ", ", j, "] = ", p, " not in [0, ",
                    numPages, ") (num_pages)");
    }
  }
  return Status::success();
}

/// vLLM seq_lens -> lengths, checked against the width.
Status vllmLens(I32Span seqLens, int64_t batch, int64_t width,
                int64_t pageSize, std::vector<int64_t> &lens) {
  if (width > std::numeric_limits<int32_t>::max())
    return fail("width = ", width, " exceeds INT32_MAX");
  if (seqLens.size < 0 || (seqLens.size > 0 && !seqLens.data))
    return fail("seq_lens is null or has a negative length");
  if (seqLens.size != batch)
    return fail("seq_lens has ", seqLens.size, " entries, expected batch = ",
                batch);
  lens.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    if (seqLens[b] < 0 || seqLens[b] > width * pageSize)
      return fail("seq_lens[", b, "] = ", seqLens[b], " not in [0, width * ",
                  "page_size = ", width * pageSize, "]");
    lens[b] = seqLens[b];
  }
  return Status::success();
}

/// tt-metal cur_pos -> lengths (cur_pos + 1), checked against the width.
Status ttLens(I32Span curPos, int64_t batch, int64_t width, int64_t pageSize,
              std::vector<int64_t> &lens) {
  if (width > std::numeric_limits<int32_t>::max())
    return fail("width = ", width, " exceeds INT32_MAX");
  if (curPos.size < 0 || (curPos.size > 0 && !curPos.data))
    return fail("cur_pos is null or has a negative length");
  if (curPos.size != batch)
    return fail("cur_pos has ", curPos.size, " entries, expected batch = ",
                batch);
  lens.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    if (curPos[b] < -1 || curPos[b] >= width * pageSize)
      return fail("cur_pos[", b, "] = ", curPos[b], " not in [-1, width * ",
                  "page_size = ", width * pageSize, ")");
    // seq_len = cur_pos + 1 must fit vLLM's int32 seq_lens (csrToVllm's
    // check): cur_pos = INT32_MAX - 1 is the largest.
    if (curPos[b] >= std::numeric_limits<int32_t>::max())
      return fail("cur_pos[", b, "] = ", curPos[b],
                  ": the length cur_pos + 1 exceeds INT32_MAX (seq_lens is "
                  "int32)");
    lens[b] = static_cast<int64_t>(curPos[b]) + 1;
  }
  return Status::success();
}

/// The checks of a converter from a padded table (`tt`: tt-metal's
/// page_table + cur_pos, else vLLM's block_tables + seq_lens): the
/// geometry, the width, the lengths (into `lens`) and the table's used
/// entries; a failure's message is prefixed by `what`.
Status readPadded(const char *what, bool tt, I32Span table, I32Span lengths,
                  int64_t batch, int64_t width, int64_t pageSize,
                  int64_t numPages, std::vector<int64_t> &lens) {
  Status s = checkGeometry(batch, pageSize, numPages);
  if (s && width < 0)
    s = fail("width = ", width, " is negative");
  if (s)
    s = tt ? ttLens(lengths, batch, width, pageSize, lens)
           : vllmLens(lengths, batch, width, pageSize, lens);
  if (s)
    s = checkPadded(table, tt ? "page_table" : "block_tables", batch, width,
                    pageSize, numPages, lens);
  if (!s)
    return fail(what, ": ", s.message);
  return Status::success();
}

/// Validated CSR input: its lengths and, per request, its pages' offset.
Status csrLens(I32Span indptr, I32Span indices, I32Span lastPageLen,
               int64_t batch, int64_t pageSize, int64_t numPages,
               std::vector<int64_t> &lens) {
  // validatePageTable checks batch >= 0, page_size in [1, INT32_MAX] and
  // num_pages >= 0 itself (checkGeometry's checks).
  return validatePageTable(indptr, indices, lastPageLen, batch, pageSize,
                           numPages, lens);
}

/// A padded table from per-request page lists (rows of `width`).
void fillPadded(const std::vector<const int32_t *> &rows,
                const std::vector<int64_t> &counts, int64_t width,
                int32_t pad, std::vector<int32_t> &out) {
  const int64_t batch = static_cast<int64_t>(rows.size());
  out.assign(static_cast<size_t>(batch * width), pad);
  for (int64_t b = 0; b < batch; ++b)
    std::copy(rows[b], rows[b] + counts[b], out.begin() + b * width);
}

/// A CSR table from per-request page lists and lengths.
Status fillCsr(const std::vector<const int32_t *> &rows,
               const std::vector<int64_t> &lens, int64_t pageSize,
               CsrTable &out) {
  const int64_t batch = static_cast<int64_t>(rows.size());
  CsrTable t;
  t.indptr.reserve(static_cast<size_t>(batch + 1));
  t.indptr.push_back(0);
  t.lastPageLen.reserve(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = ceilDiv(lens[b], pageSize);
    if (static_cast<int64_t>(t.indices.size()) + n >
        std::numeric_limits<int32_t>::max())
      return fail("the table has more than INT32_MAX pages (kv_indptr is "
                  "int32)");
    t.indices.insert(t.indices.end(), rows[b], rows[b] + n);
    t.indptr.push_back(static_cast<int32_t>(t.indices.size()));
    t.lastPageLen.push_back(
        n == 0 ? 0 : static_cast<int32_t>(lens[b] - (n - 1) * pageSize));
  }
  out = std::move(t);
  return Status::success();
}

/// Row pointers of a padded table.
std::vector<const int32_t *> paddedRows(I32Span table, int64_t batch,
                                        int64_t width) {
  std::vector<const int32_t *> rows(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    rows[b] = table.data + b * width;
  return rows;
}

std::vector<int64_t> pageCounts(const std::vector<int64_t> &lens,
                                int64_t pageSize) {
  std::vector<int64_t> c(lens.size());
  for (size_t b = 0; b < lens.size(); ++b)
    c[b] = ceilDiv(lens[b], pageSize);
  return c;
}

} // namespace

//===----------------------------------------------------------------------===//
// From the pool
//===----------------------------------------------------------------------===//

Status pa::rt::buildCsrTable(const PagePool &pool, const PagePool::SeqId *ids,
                             int64_t batch, CsrTable &out) {
  std::vector<const std::vector<int32_t> *> pages;
  std::vector<int64_t> lens;
  if (Status s = gatherSequences(pool, ids, batch, pages, lens); !s)
    return fail("csr table: ", s.message);
  std::vector<const int32_t *> rows(pages.size());
  for (size_t b = 0; b < pages.size(); ++b)
    rows[b] = pages[b]->data();
  if (Status s = fillCsr(rows, lens, pool.config().pageSize, out); !s)
    return fail("csr table: ", s.message);
  return Status::success();
}

Status pa::rt::buildVllmTable(const PagePool &pool,
                              const PagePool::SeqId *ids, int64_t batch,
                              int64_t width, int32_t pad, VllmTable &out) {
  std::vector<const std::vector<int32_t> *> pages;
  std::vector<int64_t> lens;
  if (Status s = gatherSequences(pool, ids, batch, pages, lens); !s)
    return fail("vllm table: ", s.message);
  const int64_t P = pool.config().pageSize;
  std::vector<int64_t> counts = pageCounts(lens, P);
  int64_t w = 0;
  if (Status s = pickWidth(counts, width, w); !s)
    return fail("vllm table: ", s.message);
  std::vector<const int32_t *> rows(pages.size());
  for (size_t b = 0; b < pages.size(); ++b)
    rows[b] = pages[b]->data();
  VllmTable t;
  t.batch = batch;
  t.width = w;
  fillPadded(rows, counts, w, pad, t.blockTables);
  for (int64_t len : lens)
    t.seqLens.push_back(static_cast<int32_t>(len));
  out = std::move(t);
  return Status::success();
}

Status pa::rt::buildTtTable(const PagePool &pool, const PagePool::SeqId *ids,
                            int64_t batch, int64_t width, int32_t pad,
                            TtTable &out) {
  VllmTable v;
  if (Status s = buildVllmTable(pool, ids, batch, width, pad, v); !s)
    return fail("tt table: ", s.message.substr(sizeof("vllm table: ") - 1));
  TtTable t;
  t.batch = v.batch;
  t.width = v.width;
  t.pageTable = std::move(v.blockTables);
  for (int32_t len : v.seqLens)
    t.curPos.push_back(len - 1);
  out = std::move(t);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Converters
//===----------------------------------------------------------------------===//

Status pa::rt::csrToVllm(I32Span indptr, I32Span indices, I32Span lastPageLen,
                         int64_t batch, int64_t pageSize, int64_t numPages,
                         int64_t width, int32_t pad, VllmTable &out) {
  std::vector<int64_t> lens;
  if (Status s = csrLens(indptr, indices, lastPageLen, batch, pageSize,
                         numPages, lens);
      !s)
    return fail("csr_to_vllm: ", s.message);
  std::vector<int64_t> counts = pageCounts(lens, pageSize);
  int64_t w = 0;
  if (Status s = pickWidth(counts, width, w); !s)
    return fail("csr_to_vllm: ", s.message);
  for (int64_t b = 0; b < batch; ++b)
    if (lens[b] > std::numeric_limits<int32_t>::max())
      return fail("csr_to_vllm: request ", b, " has ", lens[b],
                  " tokens, more than seq_lens (int32) holds");
  std::vector<const int32_t *> rows(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    rows[b] = indices.data + indptr[b];
  VllmTable t;
  t.batch = batch;
  t.width = w;
  fillPadded(rows, counts, w, pad, t.blockTables);
  for (int64_t len : lens)
    t.seqLens.push_back(static_cast<int32_t>(len));
  out = std::move(t);
  return Status::success();
}

Status pa::rt::vllmToCsr(I32Span blockTables, I32Span seqLens, int64_t batch,
                         int64_t width, int64_t pageSize, int64_t numPages,
                         CsrTable &out) {
  std::vector<int64_t> lens;
  if (Status s = readPadded("vllm_to_csr", /*tt=*/false, blockTables,
                            seqLens, batch, width, pageSize, numPages,
                            lens);
      !s)
    return s;
  if (Status s = fillCsr(paddedRows(blockTables, batch, width), lens,
                         pageSize, out);
      !s)
    return fail("vllm_to_csr: ", s.message);
  return Status::success();
}

Status pa::rt::csrToTt(I32Span indptr, I32Span indices, I32Span lastPageLen,
                       int64_t batch, int64_t pageSize, int64_t numPages,
                       int64_t width, int32_t pad, TtTable &out) {
  VllmTable v;
  if (Status s = csrToVllm(indptr, indices, lastPageLen, batch, pageSize,
                           numPages, width, pad, v);
      !s)
    return fail("csr_to_tt: ", s.message.substr(sizeof("csr_to_vllm: ") - 1));
  TtTable t;
  t.batch = v.batch;
  t.width = v.width;
  t.pageTable = std::move(v.blockTables);
  for (int32_t len : v.seqLens)
    t.curPos.push_back(len - 1);
  out = std::move(t);
  return Status::success();
}

Status pa::rt::ttToCsr(I32Span pageTable, I32Span curPos, int64_t batch,
                       int64_t width, int64_t pageSize, int64_t numPages,
                       CsrTable &out) {
  std::vector<int64_t> lens;
  if (Status s = readPadded("tt_to_csr", /*tt=*/true, pageTable,
                            curPos, batch, width, pageSize, numPages,
                            lens);
      !s)
    return s;
  if (Status s = fillCsr(paddedRows(pageTable, batch, width), lens, pageSize,
                         out);
      !s)
    return fail("tt_to_csr: ", s.message);
  return Status::success();
}

Status pa::rt::vllmToTt(I32Span blockTables, I32Span seqLens, int64_t batch,
                        int64_t width, int64_t pageSize, int64_t numPages,
                        TtTable &out) {
  std::vector<int64_t> lens;
  if (Status s = readPadded("vllm_to_tt", /*tt=*/false, blockTables,
                            seqLens, batch, width, pageSize, numPages,
                            lens);
      !s)
    return s;
  TtTable t;
  t.batch = batch;
  t.width = width;
  t.pageTable.assign(blockTables.data, blockTables.data + batch * width);
  for (int64_t len : lens)
    t.curPos.push_back(static_cast<int32_t>(len - 1));
  out = std::move(t);
  return Status::success();
}

Status pa::rt::ttToVllm(I32Span pageTable, I32Span curPos, int64_t batch,
                        int64_t width, int64_t pageSize, int64_t numPages,
                        VllmTable &out) {
  std::vector<int64_t> lens;
  if (Status s = readPadded("tt_to_vllm", /*tt=*/true, pageTable,
                            curPos, batch, width, pageSize, numPages,
                            lens);
      !s)
    return s;
  VllmTable t;
  t.batch = batch;
  t.width = width;
  t.blockTables.assign(pageTable.data, pageTable.data + batch * width);
  for (int64_t len : lens)
    t.seqLens.push_back(static_cast<int32_t>(len));
  out = std::move(t);
  return Status::success();
}

Status pa::rt::shardPages(I32Span indptr, I32Span indices, I32Span lastPageLen,
                          int64_t batch, int64_t pageSize, int64_t numPages,
                          int64_t devices, int64_t device, bool roundRobin,
                          CsrTable &out) {
  if (devices < 1)
    return fail("shard_pages: devices = ", devices, " must be at least 1");
  if (device < 0 || device >= devices)
    return fail("shard_pages: device = ", device, " not in [0, ", devices,
                ")");
  std::vector<int64_t> lens;
  if (Status s = csrLens(indptr, indices, lastPageLen, batch, pageSize,
                         numPages, lens);
      !s)
    return fail("shard_pages: ", s.message);
  CsrTable t;
  t.indptr.push_back(0);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t lo = indptr[b], n = indptr[b + 1] - lo;
    // Pages j of the request that the device owns: [first, end) by step.
    int64_t first = n * device / devices, end = n * (device + 1) / devices,
            step = 1;
    if (roundRobin) {
      first = device;
      end = n;
      step = devices;
    }
    bool ownsLast = false;
    for (int64_t j = first; j < end; j += step) {
      t.indices.push_back(indices[lo + j]);
      ownsLast = j == n - 1;
    }
    t.indptr.push_back(static_cast<int32_t>(t.indices.size()));
    t.lastPageLen.push_back(ownsLast ? lastPageLen[b]
                                     : static_cast<int32_t>(pageSize));
  }
  out = std::move(t);
  return Status::success();
}
