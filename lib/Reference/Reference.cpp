//===- Reference.cpp - float64 reference semantics of every pa op ---------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Straightforward, validated float64 implementations of the semantics in
// docs/Semantics.md. Clarity over speed: every attention row walks its keys
// through the page table one token at a time.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>

using namespace pa::ref;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Throws an Error whose message is the concatenation of `parts`.
template <typename... Ts> [[noreturn]] void fail(const Ts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  throw Error(os.str());
}

/// Checks a ragged indptr: `expectedSize` entries (if >= 0), indptr[0] == 0,
/// non-decreasing, and a last entry equal to `expectedBack` (if >= 0).
void checkIndptr(const std::string &ctx, const char *name,
                 const std::vector<int32_t> &indptr, int64_t expectedSize,
                 int64_t expectedBack, const char *backWhat) {
  if (indptr.empty())
    fail(ctx, name, " is empty (needs B+1 >= 1 entries)");
  if (expectedSize >= 0 && static_cast<int64_t>(indptr.size()) != expectedSize)
    fail(ctx, name, " has ", indptr.size(),
         " entries, expected B+1 = ", expectedSize);
  if (indptr[0] != 0)
    fail(ctx, name, "[0] = ", indptr[0], ", expected 0");
  for (size_t i = 1; i < indptr.size(); ++i)
    if (indptr[i] < indptr[i - 1])
      fail(ctx, name, " not non-decreasing at ", i, " (", indptr[i], " < ",
           indptr[i - 1], ")");
  if (expectedBack >= 0 && indptr.back() != expectedBack)
    fail(ctx, name, "[", indptr.size() - 1, "] = ", indptr.back(),
         ", expected ", backWhat, " = ", expectedBack);
}

/// Checks that `v` has `expected` elements.
template <typename T>
void checkSize(const std::string &ctx, const char *name,
               const std::vector<T> &v, int64_t expected, const char *shape) {
  if (static_cast<int64_t>(v.size()) != expected)
    fail(ctx, name, " has ", v.size(), " elements, expected ", shape, " = ",
         expected);
}

void validateTable(const PageTable &pt, int64_t numPages,
                   const std::string &ctx) {
  if (pt.pageSize < 1)
    fail(ctx, "page size ", pt.pageSize, " must be >= 1");
  checkIndptr(ctx, "kv_indptr", pt.indptr, -1, -1, "");
  int64_t batch = pt.batch();
  if (static_cast<int64_t>(pt.indices.size()) != pt.indptr.back())
    fail(ctx, "kv_indices has ", pt.indices.size(), " entries, kv_indptr[",
         batch, "] = ", pt.indptr.back());
  if (static_cast<int64_t>(pt.lastPageLen.size()) != batch)
    fail(ctx, "kv_last_page_len has ", pt.lastPageLen.size(),
         " entries, expected B = ", batch);
  for (int64_t b = 0; b < batch; ++b) {
    if (pt.indptr[b + 1] == pt.indptr[b])
      continue; // No pages: lastPageLen is ignored.
    int32_t len = pt.lastPageLen[b];
    if (len < 1 || len > pt.pageSize)
      fail(ctx, "kv_last_page_len[", b, "] = ", len, " not in [1, ",
           pt.pageSize, "]");
  }
  for (size_t i = 0; i < pt.indices.size(); ++i)
    if (pt.indices[i] < 0 || pt.indices[i] >= numPages)
      fail(ctx, "kv_indices[", i, "] = ", pt.indices[i], " out of range [0, ",
           numPages, ")");
}

/// Checks the page table against the cache it indexes.
void validateTableFor(const PageTable &pt, const PagedKV &kv,
                      const std::string &ctx) {
  if (pt.pageSize != kv.pageSize)
    fail(ctx, "page table page size ", pt.pageSize, " != cache page size ",
         kv.pageSize);
  validateTable(pt, kv.numPages, ctx);
}

/// Checks q/option invariants shared by decode, prefill and cascade, for
/// `numRows` query rows.
void validateAttn(const std::vector<double> &q, int64_t numRows,
                  const char *rowsName, int64_t numQHeads, const PagedKV &kv,
                  const AttnOptions &opts) {
  validate(kv);
  if (numQHeads < 1)
    fail("Hq = ", numQHeads, " must be >= 1");
  if (numQHeads % kv.numHeads != 0)
    fail("Hq % Hkv != 0 (Hq = ", numQHeads, ", Hkv = ", kv.numHeads, ")");
  if (static_cast<int64_t>(q.size()) != numRows * numQHeads * kv.headDim)
    fail("q has ", q.size(), " elements, expected ", rowsName,
         "*Hq*D = ", numRows * numQHeads * kv.headDim);
  if (opts.smScale && !std::isfinite(*opts.smScale))
    fail("sm_scale = ", *opts.smScale, " is not finite");
  if (opts.logitsSoftCap &&
      !(*opts.logitsSoftCap > 0 && std::isfinite(*opts.logitsSoftCap)))
    fail("logits soft-cap = ", *opts.logitsSoftCap, " must be finite and > 0");
  if (opts.window && *opts.window < 1)
    fail("window = ", *opts.window, " must be >= 1");
  if (!opts.alibiSlopes.empty() &&
      static_cast<int64_t>(opts.alibiSlopes.size()) != numQHeads)
    fail("alibi_slopes has ", opts.alibiSlopes.size(),
         " entries, expected Hq = ", numQHeads);
}

/// The shared core: the attention state (o, lse) of one query row `qRow`
/// (query head `qHead`, at position `pos`) over the keys t in [0, kv_len(b))
/// of request b for which `visible(t)` holds. lse is natural log.
template <typename Visible>
void attendRow(const double *qRow, int64_t qHead, int64_t pos,
               const PagedKV &kv, const PageTable &pt, int64_t b,
               int64_t kvHead, const AttnOptions &opts, Visible &&visible,
               double *oOut, double &lseOut, std::vector<double> &scores,
               std::vector<int64_t> &keys) {
  const int64_t d = kv.headDim;
  const double scale =
      opts.smScale ? *opts.smScale : 1.0 / std::sqrt(static_cast<double>(d));
  const int64_t kvLen = pt.kvLen(b);
  // An fp8 cache's elements are dequantized: value = scale * element.
  const double kScale = kv.fp8 ? kv.fp8->scaleOf(false, kvHead) : 1.0;
  const double vScale = kv.fp8 ? kv.fp8->scaleOf(true, kvHead) : 1.0;
  scores.clear();
  keys.clear();
  double maxScore = kNegInf;
  for (int64_t t = 0; t < kvLen; ++t) {
    if (!visible(t))
      continue;
    auto [page, slot] = pt.locate(b, t);
    const double *kRow = &kv.k[kv.offset(page, slot, kvHead, 0)];
    double s = 0;
    for (int64_t i = 0; i < d; ++i)
      s += qRow[i] * (kScale * kRow[i]);
    s *= scale;
    if (opts.logitsSoftCap)
      s = *opts.logitsSoftCap * std::tanh(s / *opts.logitsSoftCap);
    if (!opts.alibiSlopes.empty())
      s += opts.alibiSlopes[qHead] * static_cast<double>(t - pos);
    scores.push_back(s);
    keys.push_back(t);
    maxScore = std::max(maxScore, s);
  }
  std::fill(oOut, oOut + d, 0.0);
  if (keys.empty() || maxScore == kNegInf) {
    lseOut = kNegInf;
    return;
  }
  double sum = 0;
  for (size_t j = 0; j < keys.size(); ++j) {
    double w = std::exp(scores[j] - maxScore);
    sum += w;
    auto [page, slot] = pt.locate(b, keys[j]);
    const double *vRow = &kv.v[kv.offset(page, slot, kvHead, 0)];
    for (int64_t i = 0; i < d; ++i)
      oOut[i] += w * (vScale * vRow[i]);
  }
  for (int64_t i = 0; i < d; ++i)
    oOut[i] /= sum;
  lseOut = maxScore + std::log(sum);
}

/// Custom mask operands of one ragged attention call.
struct CustomMask {
  const std::vector<uint8_t> *bytes = nullptr;
  const std::vector<int32_t> *indptr = nullptr;
};

/// Query i of request b (row qoIndptr[b] + i of q) over the request's keys
/// in [keyLo, keyHi) that its masks let through, into state row `outRow`
/// of `out` (every head). Everything is already validated.
void attendQuery(const std::vector<double> &q, int64_t numQHeads,
                 const std::vector<int32_t> &qoIndptr, const PagedKV &kv,
                 const PageTable &pt, const AttnOptions &opts, bool causal,
                 const std::vector<int32_t> *qPositions, CustomMask mask,
                 int64_t b, int64_t i, int64_t keyLo, int64_t keyHi,
                 States &out, int64_t outRow, std::vector<double> &scores,
                 std::vector<int64_t> &keys) {
  const int64_t d = kv.headDim;
  const int64_t group = numQHeads / kv.numHeads;
  const int64_t kvLen = pt.kvLen(b);
  const int64_t qoLen = qoIndptr[b + 1] - qoIndptr[b];
  const int64_t row = qoIndptr[b] + i;
  const int64_t pos = qPositions ? (*qPositions)[row] : kvLen - qoLen + i;
  auto visible = [&](int64_t t) {
    if (t < keyLo || t >= keyHi)
      return false;
    if (causal && t > pos)
      return false;
    if (opts.window && t <= pos - *opts.window)
      return false;
    if (mask.bytes) {
      int64_t bit = i * kvLen + t;
      uint8_t byte = (*mask.bytes)[(*mask.indptr)[b] + bit / 8];
      if (!((byte >> (bit % 8)) & 1))
        return false;
    }
    return true;
  };
  for (int64_t h = 0; h < numQHeads; ++h)
    attendRow(&q[(row * numQHeads + h) * d], h, pos, kv, pt, b, h / group,
              opts, visible, &out.o[(outRow * numQHeads + h) * d],
              out.lse[outRow * numQHeads + h], scores, keys);
}

/// Ragged attention of all rows of q over `pt` (already validated, as are q
/// and `qoIndptr`). `causal` enables the causal mask; `mask.bytes` (if set)
/// the custom mask. `checkQoLen` makes qo_len > kv_len (without qPositions)
/// an error. Returns natural-log states.
States attendRagged(const std::vector<double> &q, int64_t numQHeads,
                    const std::vector<int32_t> &qoIndptr, const PagedKV &kv,
                    const PageTable &pt, const AttnOptions &opts, bool causal,
                    const std::vector<int32_t> *qPositions, CustomMask mask,
                    bool checkQoLen, const std::string &ctx) {
  const int64_t numRows = qoIndptr.back();
  States out = States::identity(numRows, numQHeads, kv.headDim);
  std::vector<double> scores;
  std::vector<int64_t> keys;
  for (int64_t b = 0; b < pt.batch(); ++b) {
    const int64_t kvLen = pt.kvLen(b);
    const int64_t qoLen = qoIndptr[b + 1] - qoIndptr[b];
    if (checkQoLen && !qPositions && qoLen > kvLen)
      fail(ctx, "qo_len > kv_len for request ", b, " (", qoLen, " > ", kvLen,
           ")");
    for (int64_t i = 0; i < qoLen; ++i)
      attendQuery(q, numQHeads, qoIndptr, kv, pt, opts, causal, qPositions,
                  mask, b, i, 0, kvLen, out, qoIndptr[b] + i, scores, keys);
  }
  return out;
}

/// Converts lse to base 2 in place when requested.
void finishLse(States &s, const AttnOptions &opts) {
  if (!opts.lseBase2)
    return;
  for (double &l : s.lse)
    l /= std::log(2.0); // -inf stays -inf.
}

void checkStates(const char *name, const States &s) {
  if (s.n < 0 || s.numHeads < 0 || s.headDim < 0)
    fail(name, ": negative shape [", s.n, ", ", s.numHeads, ", ", s.headDim,
         "]");
  checkSize("", (std::string(name) + ".o").c_str(), s.o,
            s.n * s.numHeads * s.headDim, "n*H*D");
  checkSize("", (std::string(name) + ".lse").c_str(), s.lse, s.n * s.numHeads,
            "n*H");
}

/// Checks K/V row buffers of `rows` rows against the cache's head shape.
void checkRows(const PagedKV &kv, const char *kName, const char *vName,
               const std::vector<double> &kRows,
               const std::vector<double> &vRows, int64_t rows,
               const char *rowsName) {
  std::string shape = std::string(rowsName) + "*Hkv*D";
  checkSize("", kName, kRows, rows * kv.numHeads * kv.headDim, shape.c_str());
  checkSize("", vName, vRows, rows * kv.numHeads * kv.headDim, shape.c_str());
}

/// Copies row `row` of kRows/vRows into (page, slot), quantized with the
/// head's scales into an fp8 cache.
void writeRow(PagedKV &kv, int64_t page, int64_t slot,
              const std::vector<double> &kRows,
              const std::vector<double> &vRows, int64_t row) {
  for (int64_t h = 0; h < kv.numHeads; ++h) {
    const int64_t src = (row * kv.numHeads + h) * kv.headDim;
    const int64_t dst = kv.offset(page, slot, h, 0);
    if (!kv.fp8) {
      std::copy_n(&kRows[src], kv.headDim, &kv.k[dst]);
      std::copy_n(&vRows[src], kv.headDim, &kv.v[dst]);
      continue;
    }
    const double ks = kv.fp8->scaleOf(false, h), vs = kv.fp8->scaleOf(true, h);
    for (int64_t i = 0; i < kv.headDim; ++i) {
      kv.k[dst + i] = quantizeFP8(kRows[src + i] / ks, kv.fp8->format);
      kv.v[dst + i] = quantizeFP8(vRows[src + i] / vs, kv.fp8->format);
    }
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// PagedKV / PageTable / States
//===----------------------------------------------------------------------===//

PagedKV::PagedKV(KVLayout layout, int64_t numPages, int64_t pageSize,
                 int64_t numHeads, int64_t headDim)
    : layout(layout), numPages(numPages), pageSize(pageSize),
      numHeads(numHeads), headDim(headDim) {
  if (numPages < 0 || pageSize < 1 || numHeads < 1 || headDim < 1)
    fail("bad paged KV shape [num_pages = ", numPages, ", P = ", pageSize,
         ", H = ", numHeads, ", D = ", headDim, "]");
  k.assign(numElements(), 0.0);
  v.assign(numElements(), 0.0);
}

int64_t PagedKV::numElements() const {
  return numPages * pageSize * numHeads * headDim;
}

int64_t PagedKV::offset(int64_t page, int64_t slot, int64_t head,
                        int64_t d) const {
  if (layout == KVLayout::NHD)
    return ((page * pageSize + slot) * numHeads + head) * headDim + d;
  return ((page * numHeads + head) * pageSize + slot) * headDim + d;
}

int64_t PageTable::batch() const {
  return indptr.empty() ? 0 : static_cast<int64_t>(indptr.size()) - 1;
}

int64_t PageTable::numPagesOf(int64_t b) const {
  return static_cast<int64_t>(indptr[b + 1]) - indptr[b];
}

int64_t PageTable::kvLen(int64_t b) const {
  int64_t pages = numPagesOf(b);
  return pages == 0 ? 0 : (pages - 1) * pageSize + lastPageLen[b];
}

std::pair<int64_t, int64_t> PageTable::locate(int64_t b, int64_t t) const {
  return {indices[indptr[b] + t / pageSize], t % pageSize};
}

States States::identity(int64_t n, int64_t numHeads, int64_t headDim) {
  States s;
  s.n = n;
  s.numHeads = numHeads;
  s.headDim = headDim;
  s.o.assign(n * numHeads * headDim, 0.0);
  s.lse.assign(n * numHeads, kNegInf);
  return s;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

void pa::ref::validate(const PagedKV &kv) {
  if (kv.numPages < 0 || kv.pageSize < 1 || kv.numHeads < 1 || kv.headDim < 1)
    fail("bad paged KV shape [num_pages = ", kv.numPages, ", P = ", kv.pageSize,
         ", H = ", kv.numHeads, ", D = ", kv.headDim, "]");
  checkSize("", "paged K", kv.k, kv.numElements(), "num_pages*P*H*D");
  checkSize("", "paged V", kv.v, kv.numElements(), "num_pages*P*H*D");
  if (!kv.fp8)
    return;
  const FP8Scales &q = *kv.fp8;
  for (const auto &[scales, name] :
       {std::pair{&q.kScale, "k_scale"}, std::pair{&q.vScale, "v_scale"}}) {
    if (scales->size() != 1 &&
        static_cast<int64_t>(scales->size()) != kv.numHeads)
      fail(name, " has ", scales->size(), " entries, expected 1 (per tensor) "
           "or H = ", kv.numHeads, " (per KV head)");
    for (size_t i = 0; i < scales->size(); ++i)
      if (!((*scales)[i] > 0 && std::isfinite((*scales)[i])))
        fail(name, "[", i, "] = ", (*scales)[i], " must be finite and > 0");
  }
  const char *fmt = q.format == FP8Format::E4M3FN ? "e4m3fn" : "e5m2";
  for (const auto &[vals, name] :
       {std::pair{&kv.k, "paged K"}, std::pair{&kv.v, "paged V"}})
    for (size_t i = 0; i < vals->size(); ++i)
      if (!isFP8Value((*vals)[i], q.format))
        fail(name, "[", i, "] = ", (*vals)[i], " is not an ", fmt, " value");
}

//===----------------------------------------------------------------------===//
// FP8
//===----------------------------------------------------------------------===//

namespace {
/// Mantissa bits and the smallest normal exponent of a format.
struct FP8Layout {
  int manBits, minExp;
};
FP8Layout layoutOf(FP8Format f) {
  return f == FP8Format::E4M3FN ? FP8Layout{3, -6} : FP8Layout{2, -14};
}
} // namespace

double pa::ref::fp8Max(FP8Format f) {
  return f == FP8Format::E4M3FN ? 448.0 : 57344.0;
}

double pa::ref::quantizeFP8(double x, FP8Format f) {
  if (std::isnan(x))
    return x;
  const double max = fp8Max(f);
  x = std::clamp(x, -max, max);
  if (x == 0)
    return x;
  FP8Layout l = layoutOf(f);
  // The spacing of the format's values around |x|: 2^(e - M) for
  // |x| in [2^e, 2^(e+1)), the subnormal spacing below the smallest normal.
  int e;
  std::frexp(x, &e); // |x| in [2^(e-1), 2^e)
  const int exp = std::max(e - 1, l.minExp);
  const double ulp = std::ldexp(1.0, exp - l.manBits);
  // x / ulp is exact (a power of two); nearbyint rounds ties to even in the
  // default rounding mode. Clamping first keeps the result <= max.
  const double r = std::nearbyint(x / ulp) * ulp;
  return r == 0 ? std::copysign(0.0, x) : r;
}

bool pa::ref::isFP8Value(double x, FP8Format f) {
  if (std::isnan(x))
    return true;
  if (std::isinf(x))
    return f == FP8Format::E5M2;
  return std::fabs(x) <= fp8Max(f) && quantizeFP8(x, f) == x;
}

void pa::ref::validate(const PageTable &pt, int64_t numPages) {
  validateTable(pt, numPages, "");
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

States pa::ref::decode(const std::vector<double> &q, int64_t numQHeads,
                       const PagedKV &kv, const PageTable &pt,
                       const AttnOptions &opts) {
  if (opts.mask != MaskMode::None)
    fail("decode requires mask mode None");
  validateTableFor(pt, kv, "");
  const int64_t batch = pt.batch();
  validateAttn(q, batch, "B", numQHeads, kv, opts);
  std::vector<int32_t> qoIndptr(batch + 1);
  std::iota(qoIndptr.begin(), qoIndptr.end(), 0);
  States out = attendRagged(q, numQHeads, qoIndptr, kv, pt, opts,
                            /*causal=*/false, nullptr, {},
                            /*checkQoLen=*/false, "");
  finishLse(out, opts);
  return out;
}

//===----------------------------------------------------------------------===//
// MLA
//===----------------------------------------------------------------------===//

PagedMLA::PagedMLA(int64_t numPages, int64_t pageSize, int64_t ckvDim,
                   int64_t kpeDim)
    : numPages(numPages), pageSize(pageSize), ckvDim(ckvDim), kpeDim(kpeDim) {
  if (numPages < 0 || pageSize < 1 || ckvDim < 1 || kpeDim < 1)
    fail("bad paged MLA shape [num_pages = ", numPages, ", P = ", pageSize,
         ", D_ckv = ", ckvDim, ", D_kpe = ", kpeDim, "]");
  data.assign(numElements(), 0.0);
}

int64_t PagedMLA::numElements() const { return numPages * pageSize * rowDim(); }

void pa::ref::validate(const PagedMLA &kv) {
  if (kv.numPages < 0 || kv.pageSize < 1 || kv.ckvDim < 1 || kv.kpeDim < 1)
    fail("bad paged MLA shape [num_pages = ", kv.numPages,
         ", P = ", kv.pageSize, ", D_ckv = ", kv.ckvDim,
         ", D_kpe = ", kv.kpeDim, "]");
  checkSize("", "paged MLA cache", kv.data, kv.numElements(),
            "num_pages*P*(D_ckv+D_kpe)");
}

States pa::ref::mlaDecode(const std::vector<double> &qNope,
                          const std::vector<double> &qPe, int64_t numHeads,
                          const PagedMLA &kv, const PageTable &pt,
                          const MLAOptions &opts) {
  validate(kv);
  if (pt.pageSize != kv.pageSize)
    fail("page table page size ", pt.pageSize, " != MLA cache page size ",
         kv.pageSize);
  validateTable(pt, kv.numPages, "");
  const int64_t batch = pt.batch();
  if (numHeads < 1)
    fail("H = ", numHeads, " must be >= 1");
  const int64_t ckv = kv.ckvDim, kpe = kv.kpeDim;
  checkSize("", "q_nope", qNope, batch * numHeads * ckv, "B*H*D_ckv");
  checkSize("", "q_pe", qPe, batch * numHeads * kpe, "B*H*D_kpe");
  if (!(std::isfinite(opts.smScale) && opts.smScale != 0))
    fail("sm_scale = ", opts.smScale, " must be finite and non-zero");
  if (opts.logitsSoftCap &&
      !(*opts.logitsSoftCap > 0 && std::isfinite(*opts.logitsSoftCap)))
    fail("logits soft-cap = ", *opts.logitsSoftCap, " must be finite and > 0");

  States out = States::identity(batch, numHeads, ckv);
  std::vector<double> scores;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t kvLen = pt.kvLen(b);
    for (int64_t h = 0; h < numHeads; ++h) {
      const double *qn = &qNope[(b * numHeads + h) * ckv];
      const double *qp = &qPe[(b * numHeads + h) * kpe];
      scores.assign(kvLen, 0.0);
      double maxScore = kNegInf;
      for (int64_t t = 0; t < kvLen; ++t) {
        auto [page, slot] = pt.locate(b, t);
        const double *row = &kv.data[kv.offset(page, slot, 0)];
        double s = 0;
        for (int64_t i = 0; i < ckv; ++i)
          s += qn[i] * row[i];
        for (int64_t i = 0; i < kpe; ++i)
          s += qp[i] * row[ckv + i];
        s *= opts.smScale;
        if (opts.logitsSoftCap)
          s = *opts.logitsSoftCap * std::tanh(s / *opts.logitsSoftCap);
        scores[t] = s;
        maxScore = std::max(maxScore, s);
      }
      if (kvLen == 0 || maxScore == kNegInf)
        continue; // The identity: o = 0, lse = -inf.
      double *o = &out.o[(b * numHeads + h) * ckv];
      double sum = 0;
      for (int64_t t = 0; t < kvLen; ++t) {
        const double w = std::exp(scores[t] - maxScore);
        sum += w;
        auto [page, slot] = pt.locate(b, t);
        const double *row = &kv.data[kv.offset(page, slot, 0)];
        for (int64_t i = 0; i < ckv; ++i)
          o[i] += w * row[i];
      }
      for (int64_t i = 0; i < ckv; ++i)
        o[i] /= sum;
      out.lse[b * numHeads + h] = maxScore + std::log(sum);
    }
  }
  AttnOptions lseOpts;
  lseOpts.lseBase2 = opts.lseBase2;
  finishLse(out, lseOpts);
  return out;
}

namespace {
/// The checks of pa::ref::prefill and prefillPartial; returns the custom
/// mask operands.
CustomMask validatePrefill(const std::vector<double> &q, int64_t numQHeads,
                           const std::vector<int32_t> &qoIndptr,
                           const PagedKV &kv, const PageTable &pt,
                           const AttnOptions &opts,
                           const std::vector<int32_t> *qPositions,
                           const std::vector<uint8_t> *packedMask,
                           const std::vector<int32_t> *maskIndptr) {
  validateTableFor(pt, kv, "");
  const int64_t batch = pt.batch();
  checkIndptr("", "qo_indptr", qoIndptr, batch + 1, -1, "");
  const int64_t numRows = qoIndptr.back();
  validateAttn(q, numRows, "Nq", numQHeads, kv, opts);
  if (qPositions) {
    checkSize("", "q_positions", *qPositions, numRows, "Nq");
    for (size_t i = 0; i < qPositions->size(); ++i)
      if ((*qPositions)[i] < 0)
        fail("q_positions[", i, "] = ", (*qPositions)[i], " is negative");
  }
  CustomMask mask;
  if (opts.mask == MaskMode::Custom) {
    if (!packedMask || !maskIndptr)
      fail("custom mask requires packed_mask and mask_indptr");
    checkIndptr("", "mask_indptr", *maskIndptr, batch + 1, packedMask->size(),
                "packed_mask size");
    for (int64_t b = 0; b < batch; ++b) {
      int64_t bits =
          (static_cast<int64_t>(qoIndptr[b + 1]) - qoIndptr[b]) * pt.kvLen(b);
      int64_t bytes = (*maskIndptr)[b + 1] - (*maskIndptr)[b];
      if (bytes != (bits + 7) / 8)
        fail("mask segment ", b, " has ", bytes,
             " bytes, expected ceil(qo_len*kv_len/8) = ", (bits + 7) / 8);
    }
    mask = {packedMask, maskIndptr};
  } else if (packedMask || maskIndptr) {
    fail("packed_mask / mask_indptr given but mask mode is not Custom");
  }
  if (!qPositions)
    for (int64_t b = 0; b < batch; ++b)
      if (qoIndptr[b + 1] - qoIndptr[b] > pt.kvLen(b))
        fail("qo_len > kv_len for request ", b, " (",
             qoIndptr[b + 1] - qoIndptr[b], " > ", pt.kvLen(b), ")");
  return mask;
}
} // namespace

States pa::ref::prefill(const std::vector<double> &q, int64_t numQHeads,
                        const std::vector<int32_t> &qoIndptr, const PagedKV &kv,
                        const PageTable &pt, const AttnOptions &opts,
                        const std::vector<int32_t> *qPositions,
                        const std::vector<uint8_t> *packedMask,
                        const std::vector<int32_t> *maskIndptr) {
  CustomMask mask = validatePrefill(q, numQHeads, qoIndptr, kv, pt, opts,
                                    qPositions, packedMask, maskIndptr);
  // (validatePrefill checked qo_len <= kv_len.)
  States out = attendRagged(q, numQHeads, qoIndptr, kv, pt, opts,
                            opts.mask == MaskMode::Causal, qPositions, mask,
                            /*checkQoLen=*/false, "");
  finishLse(out, opts);
  return out;
}

States pa::ref::prefillPartial(const std::vector<double> &q, int64_t numQHeads,
                               const std::vector<int32_t> &qoIndptr,
                               const PagedKV &kv, const PageTable &pt,
                               const AttnOptions &opts,
                               const std::vector<PrefillWorkItem> &work,
                               int64_t numPartialRows,
                               const std::vector<int32_t> *qPositions,
                               const std::vector<uint8_t> *packedMask,
                               const std::vector<int32_t> *maskIndptr) {
  CustomMask mask = validatePrefill(q, numQHeads, qoIndptr, kv, pt, opts,
                                    qPositions, packedMask, maskIndptr);
  if (numPartialRows < 0)
    fail("numPartialRows = ", numPartialRows, " is negative");
  States out = States::identity(numPartialRows, numQHeads, kv.headDim);
  std::vector<double> scores;
  std::vector<int64_t> keys;
  for (size_t w = 0; w < work.size(); ++w) {
    const PrefillWorkItem &it = work[w];
    if (it.request < 0 || it.request >= pt.batch())
      fail("work item ", w, ": request ", it.request, " is not in [0, ",
           pt.batch(), ")");
    const int64_t qoLen = qoIndptr[it.request + 1] - qoIndptr[it.request];
    const int64_t kvLen = pt.kvLen(it.request);
    if (it.qoStart < 0 || it.qoStart > it.qoEnd || it.qoEnd > qoLen)
      fail("work item ", w, ": queries [", it.qoStart, ", ", it.qoEnd,
           ") not within [0, qo_len = ", qoLen, "]");
    if (it.kvStart < 0 || it.kvStart > it.kvEnd || it.kvEnd > kvLen)
      fail("work item ", w, ": keys [", it.kvStart, ", ", it.kvEnd,
           ") not within [0, kv_len = ", kvLen, "]");
    for (int64_t i = it.qoStart; i < it.qoEnd; ++i) {
      int64_t row = it.partialRow +
                    (i - it.qoStart) * static_cast<int64_t>(it.partialStride);
      if (row < 0 || row >= numPartialRows)
        fail("work item ", w, ": query ", i, " writes partial row ", row,
             ", not in [0, ", numPartialRows, ")");
      attendQuery(q, numQHeads, qoIndptr, kv, pt, opts,
                  opts.mask == MaskMode::Causal, qPositions, mask, it.request,
                  i, it.kvStart, it.kvEnd, out, row, scores, keys);
    }
  }
  finishLse(out, opts);
  return out;
}

States pa::ref::cascade(const std::vector<double> &q, int64_t numQHeads,
                        const std::vector<std::vector<int32_t>> &qoIndptrs,
                        const std::vector<PageTable> &levels, const PagedKV &kv,
                        const AttnOptions &opts) {
  if (opts.mask == MaskMode::Custom)
    fail("cascade does not support custom masks");
  if (levels.empty())
    fail("cascade needs at least one level");
  if (qoIndptrs.size() != levels.size())
    fail("cascade has ", qoIndptrs.size(), " qo_indptr arrays for ",
         levels.size(), " levels");
  validate(kv);
  if (numQHeads < 1)
    fail("Hq = ", numQHeads, " must be >= 1");
  const int64_t rowElems = numQHeads * kv.headDim;
  if (q.size() % rowElems != 0)
    fail("q has ", q.size(), " elements, not a multiple of Hq*D = ", rowElems);
  const int64_t numRows = static_cast<int64_t>(q.size()) / rowElems;
  validateAttn(q, numRows, "Nq", numQHeads, kv, opts);
  const bool usesPositions = opts.window || !opts.alibiSlopes.empty();
  States acc = States::identity(numRows, numQHeads, kv.headDim);
  for (size_t l = 0; l < levels.size(); ++l) {
    std::string ctx = "level " + std::to_string(l) + ": ";
    validateTableFor(levels[l], kv, ctx);
    checkIndptr(ctx, "qo_indptr", qoIndptrs[l], levels[l].batch() + 1, numRows,
                "Nq");
    const bool last = l + 1 == levels.size();
    const bool causal = last && opts.mask == MaskMode::Causal;
    States level =
        attendRagged(q, numQHeads, qoIndptrs[l], kv, levels[l], opts, causal,
                     nullptr, {}, /*checkQoLen=*/causal || usesPositions, ctx);
    acc = merge(acc, level);
  }
  finishLse(acc, opts);
  return acc;
}

//===----------------------------------------------------------------------===//
// Attention states
//===----------------------------------------------------------------------===//

States pa::ref::merge(const States &a, const States &b) {
  checkStates("merge lhs", a);
  checkStates("merge rhs", b);
  if (a.n != b.n || a.numHeads != b.numHeads || a.headDim != b.headDim)
    fail("merge shape mismatch: [", a.n, ", ", a.numHeads, ", ", a.headDim,
         "] vs [", b.n, ", ", b.numHeads, ", ", b.headDim, "]");
  States out = States::identity(a.n, a.numHeads, a.headDim);
  const int64_t d = a.headDim;
  for (int64_t r = 0; r < a.n * a.numHeads; ++r) {
    const double la = a.lse[r], lb = b.lse[r];
    const double m = std::max(la, lb);
    if (m == kNegInf)
      continue; // Identity: (0, -inf).
    const double wa = std::exp(la - m), wb = std::exp(lb - m);
    const double sum = wa + wb;
    for (int64_t i = 0; i < d; ++i) {
      double acc = 0;
      if (wa > 0)
        acc += wa * a.o[r * d + i];
      if (wb > 0)
        acc += wb * b.o[r * d + i];
      out.o[r * d + i] = acc / sum;
    }
    out.lse[r] = m + std::log(sum);
  }
  return out;
}

States pa::ref::mergeN(const std::vector<double> &o,
                       const std::vector<double> &lse, int64_t numSeqs,
                       int64_t numStates, int64_t numHeads, int64_t headDim) {
  if (numSeqs < 0 || numStates < 0 || numHeads < 0 || headDim < 0)
    fail("merge_states: negative shape [S = ", numSeqs, ", N = ", numStates,
         ", H = ", numHeads, ", D = ", headDim, "]");
  checkSize("", "merge_states o", o, numSeqs * numStates * numHeads * headDim,
            "S*N*H*D");
  checkSize("", "merge_states lse", lse, numSeqs * numStates * numHeads,
            "S*N*H");
  States out = States::identity(numSeqs, numHeads, headDim);
  for (int64_t s = 0; s < numSeqs; ++s) {
    for (int64_t h = 0; h < numHeads; ++h) {
      auto lseAt = [&](int64_t j) {
        return lse[(s * numStates + j) * numHeads + h];
      };
      double m = kNegInf;
      for (int64_t j = 0; j < numStates; ++j)
        m = std::max(m, lseAt(j));
      if (m == kNegInf)
        continue;
      double sum = 0;
      double *dst = &out.o[(s * numHeads + h) * headDim];
      for (int64_t j = 0; j < numStates; ++j) {
        double w = std::exp(lseAt(j) - m);
        if (w == 0)
          continue;
        sum += w;
        const double *src = &o[((s * numStates + j) * numHeads + h) * headDim];
        for (int64_t i = 0; i < headDim; ++i)
          dst[i] += w * src[i];
      }
      for (int64_t i = 0; i < headDim; ++i)
        dst[i] /= sum;
      out.lse[s * numHeads + h] = m + std::log(sum);
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// KV writes
//===----------------------------------------------------------------------===//

void pa::ref::appendKV(PagedKV &kv, const PageTable &pt,
                       const std::vector<int32_t> &appendIndptr,
                       const std::vector<double> &kNew,
                       const std::vector<double> &vNew) {
  validate(kv);
  validateTableFor(pt, kv, "");
  const int64_t batch = pt.batch();
  checkIndptr("", "append_indptr", appendIndptr, batch + 1, -1, "");
  const int64_t rows = appendIndptr.back();
  checkRows(kv, "k_new", "v_new", kNew, vNew, rows, "N");
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t appendLen = appendIndptr[b + 1] - appendIndptr[b];
    const int64_t kvLen = pt.kvLen(b);
    if (appendLen > kvLen)
      fail("append_len > kv_len for request ", b, " (", appendLen, " > ", kvLen,
           "); the page table must describe the cache after the "
           "append");
  }
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t appendLen = appendIndptr[b + 1] - appendIndptr[b];
    const int64_t start = pt.kvLen(b) - appendLen;
    for (int64_t j = 0; j < appendLen; ++j) {
      auto [page, slot] = pt.locate(b, start + j);
      writeRow(kv, page, slot, kNew, vNew, appendIndptr[b] + j);
    }
  }
}

void pa::ref::appendKVSlots(PagedKV &kv,
                            const std::vector<int32_t> &slotMapping,
                            const std::vector<double> &kNew,
                            const std::vector<double> &vNew) {
  validate(kv);
  const int64_t rows = static_cast<int64_t>(slotMapping.size());
  checkRows(kv, "k_new", "v_new", kNew, vNew, rows, "N");
  const int64_t numSlots = kv.numPages * kv.pageSize;
  for (size_t r = 0; r < slotMapping.size(); ++r)
    if (slotMapping[r] >= numSlots)
      fail("slot_mapping[", r, "] = ", slotMapping[r], " out of range [0, ",
           numSlots, ") (negative = skip)");
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t slot = slotMapping[r];
    if (slot < 0)
      continue;
    writeRow(kv, slot / kv.pageSize, slot % kv.pageSize, kNew, vNew, r);
  }
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

std::pair<std::vector<uint8_t>, std::vector<int32_t>>
pa::ref::packMask(const std::vector<uint8_t> &bits,
                  const std::vector<int32_t> &indptr) {
  checkIndptr("", "mask bit indptr", indptr, -1, bits.size(), "number of bits");
  for (size_t i = 0; i < bits.size(); ++i)
    if (bits[i] > 1)
      fail("mask bits[", i, "] = ", static_cast<int>(bits[i]),
           " is not 0 or 1");
  const int64_t batch = static_cast<int64_t>(indptr.size()) - 1;
  std::vector<int32_t> byteIndptr(batch + 1, 0);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t n = indptr[b + 1] - indptr[b];
    int64_t next = byteIndptr[b] + (n + 7) / 8;
    if (next > std::numeric_limits<int32_t>::max())
      fail("packed mask byte offset overflows int32 at request ", b);
    byteIndptr[b + 1] = static_cast<int32_t>(next);
  }
  std::vector<uint8_t> bytes(byteIndptr.back(), 0);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t j = 0; j < indptr[b + 1] - indptr[b]; ++j)
      if (bits[indptr[b] + j])
        bytes[byteIndptr[b] + j / 8] |= static_cast<uint8_t>(1u << (j % 8));
  }
  return {std::move(bytes), std::move(byteIndptr)};
}

//===----------------------------------------------------------------------===//
// CacheBlend
//===----------------------------------------------------------------------===//

std::vector<double> pa::ref::kvDeviation(const std::vector<double> &kNew,
                                         const std::vector<double> &kCached,
                                         int64_t n, int64_t numHeads,
                                         int64_t headDim) {
  if (n < 0 || numHeads < 0 || headDim < 0)
    fail("kv_deviation: negative shape [n = ", n, ", H = ", numHeads,
         ", D = ", headDim, "]");
  const int64_t rowElems = numHeads * headDim;
  checkSize("", "kv_deviation new", kNew, n * rowElems, "n*H*D");
  checkSize("", "kv_deviation cached", kCached, n * rowElems, "n*H*D");
  std::vector<double> dev(n);
  for (int64_t t = 0; t < n; ++t) {
    double sum = 0;
    for (int64_t i = 0; i < rowElems; ++i) {
      double diff = kNew[t * rowElems + i] - kCached[t * rowElems + i];
      sum += diff * diff;
    }
    dev[t] = std::sqrt(sum);
  }
  return dev;
}

std::pair<std::vector<int32_t>, std::vector<int32_t>>
pa::ref::selectTopK(const std::vector<double> &deviation,
                    const std::vector<int32_t> &indptr, double ratio) {
  if (!(ratio > 0 && ratio <= 1))
    fail("select_topk ratio = ", ratio, " not in (0, 1]");
  checkIndptr("", "select_topk indptr", indptr, -1, deviation.size(),
              "number of tokens");
  for (size_t i = 0; i < deviation.size(); ++i)
    if (std::isnan(deviation[i]))
      fail("deviation[", i, "] is NaN");
  const int64_t batch = static_cast<int64_t>(indptr.size()) - 1;
  std::vector<int32_t> positions, outIndptr(1, 0);
  std::vector<int32_t> order;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t n = indptr[b + 1] - indptr[b];
    const double *dev = deviation.data() + indptr[b];
    int64_t k = static_cast<int64_t>(std::ceil(ratio * static_cast<double>(n)));
    k = std::min<int64_t>(k, n);
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
      return dev[x] > dev[y] || (dev[x] == dev[y] && x < y);
    });
    order.resize(k);
    std::sort(order.begin(), order.end());
    positions.insert(positions.end(), order.begin(), order.end());
    outIndptr.push_back(static_cast<int32_t>(positions.size()));
  }
  return {std::move(positions), std::move(outIndptr)};
}

void pa::ref::scatterKV(PagedKV &kv, const PageTable &pt,
                        const std::vector<int32_t> &selIndptr,
                        const std::vector<int32_t> &positions,
                        const std::vector<double> &kRows,
                        const std::vector<double> &vRows) {
  validate(kv);
  validateTableFor(pt, kv, "");
  const int64_t batch = pt.batch();
  checkIndptr("", "sel_indptr", selIndptr, batch + 1, positions.size(),
              "number of positions");
  const int64_t rows = static_cast<int64_t>(positions.size());
  checkRows(kv, "k_rows", "v_rows", kRows, vRows, rows, "M");
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t kvLen = pt.kvLen(b);
    for (int64_t r = selIndptr[b]; r < selIndptr[b + 1]; ++r)
      if (positions[r] < 0 || positions[r] >= kvLen)
        fail("positions[", r, "] = ", positions[r], " out of range [0, ", kvLen,
             ") of request ", b);
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = selIndptr[b]; r < selIndptr[b + 1]; ++r) {
      auto [page, slot] = pt.locate(b, positions[r]);
      writeRow(kv, page, slot, kRows, vRows, r);
    }
  }
}
