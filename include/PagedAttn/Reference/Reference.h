//===- Reference.h - float64 reference semantics of every pa op -*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// A plain C++17 float64 oracle for the paged-attention ops of the `pa`
// dialect (docs/Semantics.md). It has no MLIR dependency; the CPU lowering
// and the GPU kernels are tested against it.
//
// Conventions:
//   * All tensors are row-major std::vector<double>; index arrays are
//     std::vector<int32_t>; every offset is computed in int64_t.
//   * Every entry point validates its inputs and throws pa::ref::Error with a
//     message naming the broken invariant (and the offending index).
//   * Attention states carry lse in natural log unless AttnOptions::lseBase2
//     is set; merge/mergeN always take and produce natural-log lse.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_REFERENCE_REFERENCE_H
#define PAGEDATTN_REFERENCE_REFERENCE_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace pa::ref {

/// Thrown for every violated input invariant.
class Error : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

//===----------------------------------------------------------------------===//
// Paged KV cache and page table
//===----------------------------------------------------------------------===//

enum class KVLayout { NHD, HND };

/// The fp8 formats of an fp8 KV cache: E4M3FN (4 exponent bits, bias 7, 3
/// mantissa bits, no infinity, largest finite 448) and E5M2 (5, 15, 2, IEEE
/// infinities, largest finite 57344).
enum class FP8Format { E4M3FN, E5M2 };

/// The largest finite magnitude of `f` (448 or 57344).
double fp8Max(FP8Format f);
/// The fp8 value that stores `x`: NaN stays NaN; otherwise x is clamped to
/// [-fp8Max, fp8Max] (so +-inf saturate) and rounded to the nearest value
/// of the format, ties to even (subnormals included; -0 stays -0).
double quantizeFP8(double x, FP8Format f);
/// True if `x` is a value of format `f` (NaN included; +-inf only for E5M2).
bool isFP8Value(double x, FP8Format f);

/// The quantization of an fp8 KV cache: the format of its elements and the
/// scales of K and V, each of 1 (per tensor) or numHeads (per KV head)
/// entries. The value of a K element of head h is kScale[h] * element (or
/// kScale[0] * element), likewise V.
struct FP8Scales {
  FP8Format format = FP8Format::E4M3FN;
  std::vector<double> kScale, vScale;

  /// The K (isV = false) or V scale of KV head `head`.
  double scaleOf(bool isV, int64_t head) const {
    const std::vector<double> &s = isV ? vScale : kScale;
    return s.size() == 1 ? s[0] : s[head];
  }
};

/// A paged KV cache held in float64. K and V are each [numPages, P, H, D]
/// (NHD) or [numPages, H, P, D] (HND). Joint vs split storage is a lowering
/// concern; the reference keeps K and V apart. With `fp8`, k and v hold the
/// stored fp8 values (each a value of the format) and the cache's values are
/// those times the scales: attention dequantizes, writes quantize.
struct PagedKV {
  KVLayout layout = KVLayout::NHD;
  int64_t numPages = 0, pageSize = 0, numHeads = 0, headDim = 0;
  std::vector<double> k, v;
  std::optional<FP8Scales> fp8;

  PagedKV() = default;
  /// Zero-filled cache of the given shape.
  PagedKV(KVLayout layout, int64_t numPages, int64_t pageSize, int64_t numHeads,
          int64_t headDim);

  /// Number of elements of K (and of V).
  int64_t numElements() const;
  /// Element offset of (page, slot, head, d) in `k` / `v` for this layout.
  int64_t offset(int64_t page, int64_t slot, int64_t head, int64_t d) const;

  double &kAt(int64_t page, int64_t slot, int64_t head, int64_t d) {
    return k[offset(page, slot, head, d)];
  }
  double kAt(int64_t page, int64_t slot, int64_t head, int64_t d) const {
    return k[offset(page, slot, head, d)];
  }
  double &vAt(int64_t page, int64_t slot, int64_t head, int64_t d) {
    return v[offset(page, slot, head, d)];
  }
  double vAt(int64_t page, int64_t slot, int64_t head, int64_t d) const {
    return v[offset(page, slot, head, d)];
  }
};

/// CSR page table: request b owns pages indices[indptr[b] .. indptr[b+1]-1];
/// its last page holds lastPageLen[b] tokens.
struct PageTable {
  std::vector<int32_t> indptr, indices, lastPageLen;
  int64_t pageSize = 0;

  /// Number of requests (indptr.size() - 1, or 0 for an empty indptr).
  int64_t batch() const;
  /// Number of pages of request b.
  int64_t numPagesOf(int64_t b) const;
  /// 0 if request b has no pages, else (npages-1)*P + lastPageLen[b].
  int64_t kvLen(int64_t b) const;
  /// (page, slot) of token t of request b.
  std::pair<int64_t, int64_t> locate(int64_t b, int64_t t) const;
};

/// Checks the shape invariants of a cache: positive P, H, D, non-negative
/// page count, and k/v sizes equal to numPages*P*H*D; for an fp8 cache also
/// scales of 1 or H entries, each finite and > 0, and elements that are
/// values of the format.
void validate(const PagedKV &kv);

/// Checks a page table against a cache of `numPages` pages: pageSize >= 1,
/// indptr[0] == 0 and non-decreasing, indices.size() == indptr.back(),
/// lastPageLen.size() == batch, lastPageLen in [1, P] for requests that own
/// pages (ignored for requests without pages), indices in [0, numPages).
void validate(const PageTable &pt, int64_t numPages);

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

enum class MaskMode { None, Causal, Custom };

struct AttnOptions {
  /// Score scale; defaults to 1/sqrt(D).
  std::optional<double> smScale;
  /// c > 0: s -> c*tanh(s/c), applied after smScale.
  std::optional<double> logitsSoftCap;
  /// w >= 1: key t is visible only if t > pos - w (combined with the mask).
  std::optional<int64_t> window;
  MaskMode mask = MaskMode::None;
  /// Empty = off; else [Hq]: bias slope_h*(t - pos) added after the soft-cap.
  std::vector<double> alibiSlopes;
  /// Report lse in base 2 (lse / ln 2).
  bool lseBase2 = false;
};

/// Attention states: o [n, numHeads, headDim], lse [n, numHeads].
struct States {
  int64_t n = 0, numHeads = 0, headDim = 0;
  std::vector<double> o, lse;

  /// n x numHeads identity states: o = 0, lse = -inf.
  static States identity(int64_t n, int64_t numHeads, int64_t headDim);

  double &oAt(int64_t i, int64_t h, int64_t d) {
    return o[(i * numHeads + h) * headDim + d];
  }
  double oAt(int64_t i, int64_t h, int64_t d) const {
    return o[(i * numHeads + h) * headDim + d];
  }
  double &lseAt(int64_t i, int64_t h) { return lse[i * numHeads + h]; }
  double lseAt(int64_t i, int64_t h) const { return lse[i * numHeads + h]; }
};

/// Batch decode: q [B, Hq, D], one query per request at position kv_len-1,
/// attending to all kv_len tokens of the request (restricted by the window).
/// opts.mask must be MaskMode::None.
States decode(const std::vector<double> &q, int64_t numQHeads,
              const PagedKV &kv, const PageTable &pt, const AttnOptions &opts);

/// Ragged prefill / append attention: q [Nq, Hq, D] ragged by qoIndptr [B+1].
/// Query i of request b sits at kv_len - qo_len + i (qo_len <= kv_len
/// required), or at qPositions[row] (>= 0) when given. Causal: key t visible
/// iff t <= pos. Window w: also t > pos - w (with any mask mode). Custom: bit
/// i*kv_len + t of request b's byte-aligned segment of packedMask, starting
/// at byte maskIndptr[b], little-endian within a byte; the segment has
/// exactly ceil(qo_len*kv_len/8) bytes.
States prefill(const std::vector<double> &q, int64_t numQHeads,
               const std::vector<int32_t> &qoIndptr, const PagedKV &kv,
               const PageTable &pt, const AttnOptions &opts,
               const std::vector<int32_t> *qPositions = nullptr,
               const std::vector<uint8_t> *packedMask = nullptr,
               const std::vector<int32_t> *maskIndptr = nullptr);

/// One work item of a split-KV prefill (pa.prefill_partial): queries
/// [qoStart, qoEnd) of `request` (request-local) over its keys [kvStart,
/// kvEnd); query i's state goes to row partialRow + (i - qoStart) *
/// partialStride.
struct PrefillWorkItem {
  int32_t request = 0, qoStart = 0, qoEnd = 0, kvStart = 0, kvEnd = 0,
          partialRow = 0, partialStride = 1;
};

/// pa.prefill_partial: prefill's attention (same arguments and checks),
/// each work item's queries restricted to its keys, into numPartialRows
/// state rows (rows no item writes: the identity). Fails on an item out of
/// range (request, queries, keys, rows).
States prefillPartial(const std::vector<double> &q, int64_t numQHeads,
                      const std::vector<int32_t> &qoIndptr, const PagedKV &kv,
                      const PageTable &pt, const AttnOptions &opts,
                      const std::vector<PrefillWorkItem> &work,
                      int64_t numPartialRows,
                      const std::vector<int32_t> *qPositions = nullptr,
                      const std::vector<uint8_t> *packedMask = nullptr,
                      const std::vector<int32_t> *maskIndptr = nullptr);

/// Multi-level cascade attention. Level l: queries qoIndptrs[l][b] ..
/// qoIndptrs[l][b+1]-1 attend to levels[l]'s pages of segment b, with
/// positions relative to that level (pos = kv_len - qo_len + i). A Causal
/// mask applies to the last level only; other options apply to every level.
/// Custom masks are not supported. Each qoIndptrs[l] must end at Nq. The
/// result per query row is the merge over levels (lseBase2 applied last).
States cascade(const std::vector<double> &q, int64_t numQHeads,
               const std::vector<std::vector<int32_t>> &qoIndptrs,
               const std::vector<PageTable> &levels, const PagedKV &kv,
               const AttnOptions &opts);

//===----------------------------------------------------------------------===//
// MLA (multi-head latent attention)
//===----------------------------------------------------------------------===//

/// A paged MLA cache held in float64: [numPages, P, ckvDim + kpeDim]; the
/// first ckvDim elements of a token's row are its compressed key/value
/// (ckv), the last kpeDim its rotary key (kpe). There is no KV-head
/// dimension: every query head reads the same rows.
struct PagedMLA {
  int64_t numPages = 0, pageSize = 0, ckvDim = 0, kpeDim = 0;
  std::vector<double> data;

  PagedMLA() = default;
  /// Zero-filled cache of the given shape.
  PagedMLA(int64_t numPages, int64_t pageSize, int64_t ckvDim, int64_t kpeDim);

  /// The width of a row, ckvDim + kpeDim.
  int64_t rowDim() const { return ckvDim + kpeDim; }
  /// numPages * P * rowDim.
  int64_t numElements() const;
  /// Element offset of (page, slot, d), d in [0, rowDim).
  int64_t offset(int64_t page, int64_t slot, int64_t d) const {
    return (page * pageSize + slot) * rowDim() + d;
  }
  double &at(int64_t page, int64_t slot, int64_t d) {
    return data[offset(page, slot, d)];
  }
  double at(int64_t page, int64_t slot, int64_t d) const {
    return data[offset(page, slot, d)];
  }
};

/// Checks the shape of an MLA cache: numPages >= 0, P, ckvDim, kpeDim >= 1,
/// and data.size() == numPages * P * (ckvDim + kpeDim).
void validate(const PagedMLA &kv);

struct MLAOptions {
  /// Score scale, required (finite, non-zero): with absorbed weights it is
  /// the scale of the model before absorption, 1/sqrt(qk_nope + qk_rope)
  /// (1/sqrt(192) for DeepSeek V2/V3), which the shapes do not tell.
  double smScale = 0;
  /// c > 0: s -> c*tanh(s/c), applied after smScale.
  std::optional<double> logitsSoftCap;
  /// Report lse in base 2 (lse / ln 2).
  bool lseBase2 = false;
};

/// Batch MLA decode (pa.mla_decode): qNope [B, H, ckvDim] and qPe
/// [B, H, kpeDim]; request b's query attends to all kv_len(b) tokens:
/// s[t] = smScale * (<qNope, ckv[t]> + <qPe, kpe[t]>) (then the soft-cap),
/// o = sum_t softmax(s)[t] ckv[t]. Returns states with headDim = ckvDim; a
/// request without tokens gives o = 0, lse = -inf.
States mlaDecode(const std::vector<double> &qNope,
                 const std::vector<double> &qPe, int64_t numHeads,
                 const PagedMLA &kv, const PageTable &pt,
                 const MLAOptions &opts);

//===----------------------------------------------------------------------===//
// Attention states
//===----------------------------------------------------------------------===//

/// Elementwise merge of two states of equal shape (natural-log lse):
/// m = max(lse_a, lse_b); m == -inf -> (0, -inf); else weighted average.
States merge(const States &a, const States &b);

/// Merges the numStates states of each row: o [S, N, H, D], lse [S, N, H]
/// (FlashInfer merge_states layout). N = 0 gives the identity (0, -inf).
States mergeN(const std::vector<double> &o, const std::vector<double> &lse,
              int64_t numSeqs, int64_t numStates, int64_t numHeads,
              int64_t headDim);

//===----------------------------------------------------------------------===//
// KV writes
//===----------------------------------------------------------------------===//

/// The cache writes store a row value x as is, or into an fp8 cache as
/// quantizeFP8(x / scale) with the K (V) scale of the element's KV head.

/// Appends ragged rows kNew/vNew [N, Hkv, D] (appendIndptr [B+1]) through a
/// page table that describes the cache AFTER the append: row j of request b
/// goes to token kv_len[b] - append_len[b] + j.
void appendKV(PagedKV &kv, const PageTable &pt,
              const std::vector<int32_t> &appendIndptr,
              const std::vector<double> &kNew, const std::vector<double> &vNew);

/// Writes row r of kNew/vNew [N, Hkv, D] to slot slotMapping[r] (page =
/// slot / P, offset = slot % P); negative slots are skipped.
void appendKVSlots(PagedKV &kv, const std::vector<int32_t> &slotMapping,
                   const std::vector<double> &kNew,
                   const std::vector<double> &vNew);

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// Segmented little-endian packbits: bits (0/1, requests concatenated,
/// ragged by the bit offsets `indptr` [B+1]) -> (bytes, byteIndptr [B+1]).
/// Segment b has ceil(n_b/8) bytes, padding bits are 0.
std::pair<std::vector<uint8_t>, std::vector<int32_t>>
packMask(const std::vector<uint8_t> &bits, const std::vector<int32_t> &indptr);

//===----------------------------------------------------------------------===//
// CacheBlend
//===----------------------------------------------------------------------===//

/// Per-token L2 norm over (H, D) of kNew - kCached, both [n, H, D].
std::vector<double> kvDeviation(const std::vector<double> &kNew,
                                const std::vector<double> &kCached, int64_t n,
                                int64_t numHeads, int64_t headDim);

/// Per request (ragged by indptr), picks k = ceil(ratio * n_b) tokens with
/// the largest deviation (ties: lower index first); ratio in (0, 1]. Returns
/// the request-local positions sorted ascending and their indptr [B+1].
std::pair<std::vector<int32_t>, std::vector<int32_t>>
selectTopK(const std::vector<double> &deviation,
           const std::vector<int32_t> &indptr, double ratio);

/// Writes row r (of request b per selIndptr [B+1]) of kRows/vRows [M, Hkv, D]
/// to token positions[r] of request b (request-local, < kv_len[b]).
void scatterKV(PagedKV &kv, const PageTable &pt,
               const std::vector<int32_t> &selIndptr,
               const std::vector<int32_t> &positions,
               const std::vector<double> &kRows,
               const std::vector<double> &vRows);

} // namespace pa::ref

#endif // PAGEDATTN_REFERENCE_REFERENCE_H
