//===- Bundle.h - kernel bundle manifest and kernel parameters --*- C++ -*-===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// A kernel bundle is what `pa-compile` writes for one configuration: a
// directory with a line-based `bundle.manifest` and the cubin (or PTX) files
// it names. This header holds the pure-C++ half of the runtime, usable and
// testable without a GPU:
//
//   * the manifest parser (strict: an unknown key, role, kernel or symbol is
//     an error naming the line) and its inverse, the printer;
//   * the manifest spellings of every enumeration (toString / fromString);
//   * the shapes of every argument role for given problem sizes;
//   * launch-grid resolution (symbols batch, kv_heads, num_q_heads,
//     work_capacity, q_tiles);
//   * parameter packing: MLIR's memref calling convention for GPU kernels,
//     where a rank-R memref is 3 + 2R scalar parameters (allocated pointer,
//     aligned pointer, offset, sizes[R], strides[R]).
//
// The format and the ABI are documented in docs/Runtime.md.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_RUNTIME_BUNDLE_H
#define PAGEDATTN_RUNTIME_BUNDLE_H

#include "PagedAttn/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pa::rt {

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

/// Element type of q, the KV cache and o.
enum class DType { F16, BF16, F32 };
/// Paged KV cache layout: [.., P, Hkv, D] (NHD) or [.., Hkv, P, D] (HND).
enum class CacheLayout { NHD, HND };
/// One cache tensor holding K and V (`kv joint`) or two (`kv split`).
enum class KVStorage { Joint, Split };
/// Element type of the KV cache: the data type (`dtype`), or an fp8 format
/// whose values are scale * element (the manifest's optional `kv_dtype`).
enum class KVDType { Data, E4M3, E5M2 };
/// The K / V scales of an fp8 cache: one per tensor ([1]) or per KV head
/// ([Hkv]) (the manifest's `kv_scale`).
enum class KVScale { Tensor, Head };
/// Element type of a kernel argument (I8: the packed bytes of a custom
/// mask; F8E4M3FN / F8E5M2: an fp8 cache).
enum class ElemType { F16, BF16, F32, I32, I8, F8E4M3FN, F8E5M2 };

/// Size in bytes of one element of `t`.
int64_t elementBytes(DType t);
/// Manifest spelling: "f16", "bf16", "f32", "nhd", "joint", ...
const char *toString(DType t);
const char *toString(CacheLayout l);
const char *toString(KVStorage s);
const char *toString(ElemType t);
/// "e4m3", "e5m2" ("data" for KVDType::Data, which a manifest never
/// spells); "tensor", "head".
const char *toString(KVDType t);
const char *toString(KVScale s);
/// The value spelled `s` in a manifest (exactly toString's spelling, case
/// sensitive); false, `out` untouched, for any other text. The same tables
/// serve the parser, the printer and a compiler that builds a Manifest.
bool fromString(std::string_view s, DType &out);
bool fromString(std::string_view s, CacheLayout &out);
bool fromString(std::string_view s, KVStorage &out);
bool fromString(std::string_view s, ElemType &out);
/// "e4m3" / "e5m2" (not "data"); "tensor" / "head".
bool fromString(std::string_view s, KVDType &out);
bool fromString(std::string_view s, KVScale &out);
/// The argument element type that holds values of `t`.
ElemType toElemType(DType t);

/// The largest head_dim / page_size / kv_heads / group a manifest accepts
/// (the parser's bound; pa-compile checks its flags against it).
constexpr int64_t kMaxConfigValue = int64_t(1) << 20;

/// The `config` line: what every kernel of the bundle is specialized for.
struct BundleConfig {
  int64_t headDim = 0, pageSize = 0, kvHeads = 0, group = 0;
  CacheLayout layout = CacheLayout::NHD;
  DType dtype = DType::F16;
  KVStorage kv = KVStorage::Joint;
  /// The cache's element type (Data: `dtype`); an fp8 cache's kernels take
  /// the k_scale and v_scale roles, of kvScale's shape.
  KVDType kvDtype = KVDType::Data;
  KVScale kvScale = KVScale::Tensor;
  /// An MLA bundle (config key `kpe`, > 0): the latent cache
  /// [N, P, head_dim + kpe] of pa.mla_decode, head_dim = D_ckv, group = the
  /// query heads, kv_heads 1, NHD joint; 0 for every other bundle.
  int64_t kpeDim = 0;

  /// True for an MLA bundle.
  bool mla() const { return kpeDim > 0; }
  /// Hq = kv_heads * group.
  int64_t numQHeads() const { return kvHeads * group; }
  /// True for an fp8 cache.
  bool fp8() const { return kvDtype != KVDType::Data; }
  /// The element type of the cache arguments (kv, k, v).
  ElemType cacheElemType() const;
  /// A one-line summary, e.g. "D128 P16 Hkv8 g4 nhd f16 joint" (fp8:
  /// "... joint e4m3 scale per head").
  std::string str() const;

  bool operator==(const BundleConfig &o) const {
    return headDim == o.headDim && pageSize == o.pageSize &&
           kvHeads == o.kvHeads && group == o.group && layout == o.layout &&
           dtype == o.dtype && kv == o.kv && kvDtype == o.kvDtype &&
           (!fp8() || kvScale == o.kvScale) && kpeDim == o.kpeDim;
  }
  bool operator!=(const BundleConfig &o) const { return !(*this == o); }
};

//===----------------------------------------------------------------------===//
// Kernels and their arguments
//===----------------------------------------------------------------------===//

/// The kernels a bundle may hold (manifest names in parentheses).
enum class KernelKind {
  Decode,        ///< (decode) one pass over every request's KV
  DecodePartial, ///< (decode_partial) split-KV: one state per work item
  MergeSegments, ///< (merge_segments) split-KV: merges a request's items
  Prefill,       ///< (prefill) ragged prefill / append, one pass per tile
  /// (prefill_short) optional: the same prefill compiled with a smaller
  /// query tile (pa-compile's second prefill shape, 4 warps), which the
  /// prefill planner picks for short batches (choosePrefillKernel). Only
  /// beside `prefill`, with the same arguments and the same prefill line
  /// but queries_per_tile.
  PrefillShort,
  /// (prefill_partial) optional: split-KV prefill over the planner's work
  /// list (pa.prefill_partial), one f32 partial state per (query, chunk),
  /// which `merge_segments` merges per query row. The same arguments as
  /// `prefill` but o / lse, plus the work list and o_part / lse_part.
  PrefillPartial,
  /// (decode_split) optional: split-KV decode in one launch (decode_partial
  /// with merge_segments fused: the last CTA of a request merges its
  /// states). decode_partial's arguments, then o, lse and merge_counters.
  /// The runtime prefers it to decode_partial + merge_segments.
  DecodeSplit,
  /// (append_kv_slots) optional: writes new K/V rows into the cache at the
  /// slots of a slot mapping (vLLM's reshape_and_cache; pa.append_kv_slots),
  /// quantizing for an fp8 cache. Beside `decode` or `prefill`.
  AppendKVSlots,
  /// (merge) optional: the merge of two attention states (pa.merge with
  /// states o_0, lse_0, o_1, lse_1), a CTA per row; the cascade's level
  /// merge (pa_merge, pa_cascade_run).
  Merge,
  /// (merge_states) optional: the merge of the N stacked states of every
  /// row (pa.merge_states, FlashInfer's merge_states layout).
  MergeStates,
  /// (append_kv) optional: new K/V rows ragged by append_indptr written
  /// through the page table after each request's old tokens (pa.append_kv).
  AppendKV,
  /// (scatter_kv) optional: rows ragged by rows_indptr written to their
  /// requests' tokens `positions` (pa.scatter_kv, CacheBlend's write).
  ScatterKV,
  /// (kv_deviation) optional: the L2 norm of new - cached rows per token
  /// (pa.kv_deviation); its grid's `batch` is ceil(rows / 4).
  KVDeviation,
  /// (select_topk) optional: each request's top ceil(r * n) deviations
  /// (pa.select_topk); the `topk ratio R` line gives r.
  SelectTopK,
  /// (pack_mask) optional: boolean masks ragged by segments packed into
  /// bytes (pa.pack_mask: the custom_mask / mask_indptr of prefill).
  PackMask,
  /// (plan_split_kv) optional: the fixed-chunk split-KV work list of a page
  /// table, computed on the device (pa.plan_split_kv); the `plan chunk C`
  /// line gives the chunk.
  PlanSplitKV,
  /// (mla_decode) MLA decode over a latent cache (pa.mla_decode; an MLA
  /// bundle's one attention kernel): q_nope, q_pe, ckv_kpe, the page table,
  /// o, lse; grid (batch, head blocks).
  MLADecode,
  /// (mla_decode_small) optional: the same MLA decode compiled as the
  /// mma.sync kernel (16 x mla-row-blocks heads a CTA) beside an
  /// `mla_decode` on wgmma (pa-compile --mla-mma auto for sm_90a), which the
  /// runtime picks for few keys in all (chooseMLASmall). Only beside
  /// `mla_decode`, with the same arguments and the same prefill line.
  MLADecodeSmall,
};
constexpr int kNumKernelKinds = 18;
const char *toString(KernelKind k);
bool fromString(std::string_view s, KernelKind &out);
/// True for the prefill kernels (prefill, prefill_short, prefill_partial):
/// they take the prefill roles and carry a `prefill` line.
inline bool isPrefillKind(KernelKind k) {
  return k == KernelKind::Prefill || k == KernelKind::PrefillShort ||
         k == KernelKind::PrefillPartial;
}

/// Argument roles; the manifest spelling is toString(role).
enum class ArgRole {
  Q,
  KV,
  K,
  V,
  KVIndptr,
  KVIndices,
  KVLastPageLen,
  O,
  LSE,
  WorkIndptr,
  WorkRequest,
  WorkStart,
  WorkEnd,
  OPart,
  LSEPart,
  QOIndptr,    ///< prefill: [B+1] i32, the query rows of each request
  QPositions,  ///< prefill (optional): [Nq] i32, explicit query positions
  CustomMask,  ///< prefill (optional): [mask_bytes] i8, packed custom mask
  MaskIndptr,  ///< prefill (with custom_mask): [B+1] i32, byte offsets
  AlibiSlopes, ///< prefill (optional): [Hq] f32
  /// prefill_partial: the rest of the work list ([W] i32 each, beside
  /// work_request): queries [qo_start, qo_end) and keys [kv_start, kv_end)
  /// of the item's request, the partial row of its first query and the
  /// row stride.
  WorkQOStart,
  WorkQOEnd,
  WorkKVStart,
  WorkKVEnd,
  WorkPartialRow,
  WorkPartialStride,
  /// fp8 caches: [1] or [Hkv] f32, the K and V scales (kv_scale).
  KScale,
  VScale,
  /// decode_split: [B, Hq] i32 arrival counters, zero between launches (the
  /// last CTA of a request puts its counter back to 0).
  MergeCounters,
  /// append_kv_slots: [N, Hkv, D] new K and V rows (the config dtype) and
  /// their [N] i32 slots (page * P + slot; negative: skipped). N is the
  /// append's `batch` in ProblemDims.
  KNew,
  VNew,
  SlotMapping,
  /// merge: the two input states, o_0 / o_1 [R, Hq, D] (dtype) and lse_0 /
  /// lse_1 [R, Hq] f32 (R = rows, the merge's `batch`).
  StateO0,
  StateLSE0,
  StateO1,
  StateLSE1,
  /// merge_states: o_states [R, S, Hq, D] (dtype) and lse_states
  /// [R, S, Hq] f32, S = ProblemDims::numStates.
  OStates,
  LSEStates,
  /// append_kv: [B+1] i32, the new rows of each request.
  AppendIndptr,
  /// scatter_kv: [B+1] i32 rows of each request, and the [R] i32
  /// request-local token of each row (select_topk: the [R] selected
  /// indices it writes).
  RowsIndptr,
  Positions,
  /// kv_deviation: [R, Hkv, D] (the config dtype) recomputed and cached
  /// rows; [R] f32 deviations (also select_topk's input).
  NewRows,
  CachedRows,
  Deviation,
  /// select_topk: [B+1] i32 segments of the deviations, and the [B+1] i32
  /// segments of the selected positions it writes.
  DevIndptr,
  OutIndptr,
  /// pack_mask: the [R] i8 mask (non-zero = true) and its [B+1] i32
  /// segments; it writes custom_mask and mask_indptr.
  Mask,
  MaskSegments,
  /// mla_decode: q_nope [B, H, D_ckv] and q_pe [B, H, kpe] (dtype), and the
  /// latent cache ckv_kpe [N, P, D_ckv + kpe] (dtype); o [B, H, D_ckv],
  /// lse [B, H] as for decode.
  QNope,
  QPe,
  CkvKpe,
};
constexpr int kNumArgRoles = 51;
const char *toString(ArgRole r);
bool fromString(std::string_view s, ArgRole &out);

/// One `arg ROLE memref RANK TYPE` line.
struct ArgSpec {
  ArgRole role = ArgRole::Q;
  int64_t rank = 0;
  ElemType type = ElemType::F32;
  /// 1-based manifest line (for messages).
  int line = 0;

  /// Role, rank and type equal (the lines may differ).
  bool operator==(const ArgSpec &o) const {
    return role == o.role && rank == o.rank && type == o.type;
  }
  bool operator!=(const ArgSpec &o) const { return !(*this == o); }
};

/// A grid extent: an integer or a symbol resolved at launch.
/// QTiles: the query tiles of the longest request of a prefill,
/// max_b ceil(qo_len_b / queries_per_tile).
enum class GridSymbol {
  Literal,
  Batch,
  KVHeads,
  NumQHeads,
  WorkCapacity,
  QTiles,
  KVSplits
};
constexpr int kNumGridSymbols = 7;
/// "batch", "kv_heads", "num_q_heads", "work_capacity", "q_tiles",
/// "kv_splits" (mla_decode: the CTAs that split each request's keys);
/// "literal" for Literal, which a manifest spells as the number itself.
const char *toString(GridSymbol s);
/// The inverse of toString, "literal" included (the parser takes a grid
/// extent that names Literal for a malformed number).
bool fromString(std::string_view s, GridSymbol &out);

struct GridExtent {
  GridSymbol symbol = GridSymbol::Literal;
  /// The value when symbol == Literal (ignored otherwise).
  int64_t value = 1;

  /// Same symbol, and the same value for literals.
  bool operator==(const GridExtent &o) const {
    return symbol == o.symbol &&
           (symbol != GridSymbol::Literal || value == o.value);
  }
  bool operator!=(const GridExtent &o) const { return !(*this == o); }
};

/// `launch grid X Y Z block X Y Z smem BYTES`; smem is the dynamic shared
/// memory passed to cuLaunchKernel.
struct LaunchSpec {
  std::array<GridExtent, 3> grid;
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t sharedBytes = 0;

  bool operator==(const LaunchSpec &o) const {
    return grid == o.grid && block == o.block && sharedBytes == o.sharedBytes;
  }
  bool operator!=(const LaunchSpec &o) const { return !(*this == o); }
};

/// The `prefill queries_per_tile N causal 0|1 window W soft_cap C sm_scale S
/// lse_base2 0|1` line of a prefill kernel: what the kernel was compiled
/// for. The floats are the f32 values of the op's attributes (printed with
/// %.9g, so they round-trip exactly).
struct PrefillSpec {
  /// Queries of one request per CTA tile (tile_q / group).
  int64_t queriesPerTile = 1;
  bool causal = false;
  /// Sliding window in tokens; 0 = none.
  int64_t window = 0;
  /// Logits soft-cap; 0 = none.
  float softCap = 0;
  /// Score scale; 0 = the default 1/sqrt(head_dim).
  float smScale = 0;
  /// lse is reported in base 2.
  bool lseBase2 = false;
  /// 1-based manifest line (for messages).
  int line = 0;

  /// Every field but the line equal (floats bitwise by value).
  bool operator==(const PrefillSpec &o) const {
    return queriesPerTile == o.queriesPerTile && causal == o.causal &&
           window == o.window && softCap == o.softCap &&
           smScale == o.smScale && lseBase2 == o.lseBase2;
  }
  bool operator!=(const PrefillSpec &o) const { return !(*this == o); }
};

/// `kernel NAME FILE SYMBOL` with its `arg` lines, its `launch` line and,
/// for a prefill kernel, its `prefill` line.
struct KernelSpec {
  KernelKind kind = KernelKind::Decode;
  /// Binary file name, relative to the bundle directory.
  std::string file;
  /// The kernel's symbol in that binary.
  std::string symbol;
  /// In parameter order.
  std::vector<ArgSpec> args;
  LaunchSpec launch;
  /// The `prefill` line; set exactly for prefill kernels (isPrefillKind).
  std::optional<PrefillSpec> prefill;
  /// The `topk ratio R` line (R in (0, 1]); set exactly for select_topk.
  std::optional<double> topkRatio;
  /// The `plan chunk C` line (C >= 1 tokens per work item); set exactly
  /// for plan_split_kv.
  std::optional<int64_t> planChunk;
  /// The `merge together V` line of a split-KV kernel that merges its
  /// splits itself (mla_decode, mla_decode_small, decode_split): with its merge
  /// counters at V at launch and every CTA resident (a cooperative launch),
  /// the splits of a request merge together, each CTA a share (at 0 the
  /// last CTA of a request merges alone). Absent: only the latter.
  std::optional<int64_t> mergeTogether;
  int line = 0;

  /// Number of scalar kernel parameters: sum over args of 3 + 2 * rank.
  int64_t numParams() const;
  /// True if one of the arguments has role `r`.
  bool hasRole(ArgRole r) const;

  /// Kind, file, symbol, arguments (in order), launch and prefill line
  /// equal; the lines may differ.
  bool operator==(const KernelSpec &o) const {
    return kind == o.kind && file == o.file && symbol == o.symbol &&
           args == o.args && launch == o.launch && prefill == o.prefill &&
           topkRatio == o.topkRatio && planChunk == o.planChunk &&
           mergeTogether == o.mergeTogether;
  }
  bool operator!=(const KernelSpec &o) const { return !(*this == o); }
};

/// The manifest version this runtime reads and writes.
constexpr int64_t kManifestVersion = 1;

/// A parsed bundle.manifest.
struct Manifest {
  int64_t version = kManifestVersion;
  BundleConfig config;
  /// In manifest order; at most one per KernelKind.
  std::vector<KernelSpec> kernels;

  /// Version, config and kernels (in order) equal; line numbers ignored.
  bool operator==(const Manifest &o) const {
    return version == o.version && config == o.config && kernels == o.kernels;
  }
  bool operator!=(const Manifest &o) const { return !(*this == o); }

  /// The kernel of kind `k`, or null.
  const KernelSpec *find(KernelKind k) const;
  /// True iff split-KV decode can run: decode_split, or both
  /// decode_partial and merge_segments.
  bool hasSplitKernels() const {
    return find(KernelKind::DecodeSplit) ||
           (find(KernelKind::DecodePartial) &&
            find(KernelKind::MergeSegments));
  }
};

/// Parses and validates manifest text. Errors read
/// "<source>:<line>: <what> (in '<line text>')". Besides syntax it checks:
/// the `pa-bundle 1` header, exactly one complete `config` line before any
/// kernel, known kernel names (each at most once), exactly one `launch` per
/// kernel, each kernel's argument roles (the required set for its kind and
/// the bundle's `kv` storage, each once, plus the optional roles of a
/// prefill kernel: q_positions, custom_mask with mask_indptr, alibi_slopes)
/// with the rank and element type the ABI fixes, positive literals and block
/// sizes (at most 1024 threads), exactly one complete `prefill` line in a
/// prefill kernel and none elsewhere, a custom mask only without causal and
/// window, a `decode` or a `prefill` kernel (or both), decode_partial and
/// merge_segments together or not at all and only beside `decode`,
/// decode_split only beside `decode`, a
/// `prefill_short` only beside `prefill` and agreeing with it (the same
/// argument roles, ranks and types in the same order, the same prefill line
/// but queries_per_tile), `mla_decode_small` only in an MLA bundle beside
/// `mla_decode` with its arguments and prefill line, relative file names
/// without "..", and a final `end`.
/// `out` is only written on success.
Status parseManifest(std::string_view text, Manifest &out,
                     std::string_view source = "bundle.manifest");

/// The manifest text of `m` in the canonical form that parseManifest reads
/// (docs/Runtime.md): `pa-bundle VERSION`, one `config` line with the keys in
/// the order head_dim page_size kv_heads group layout dtype kv, then per
/// kernel (in m.kernels order) its `kernel` line, its `prefill` line (keys
/// in the order queries_per_tile causal window soft_cap sm_scale lse_base2)
/// if it has one, its `arg` (in order) and `launch` lines, and `end`; single blanks, no comments, '\n' after every line.
/// For every manifest that parseManifest accepts,
/// parseManifest(printManifest(m)) == m; printManifest(parsed) reproduces
/// canonical text byte for byte. It does not validate: a manifest that breaks
/// the rules prints as text that parseManifest rejects.
std::string printManifest(const Manifest &m);

/// Reads `<dir>/bundle.manifest` and parses it.
Status readManifest(const std::string &dir, Manifest &out);

/// Reads a whole file into `out` (binary).
Status readFile(const std::string &path, std::string &out);

//===----------------------------------------------------------------------===//
// Shapes, grids and parameter packing
//===----------------------------------------------------------------------===//

/// Run-time sizes of one launch.
struct ProblemDims {
  /// B: number of requests.
  int64_t batch = 0;
  /// N: pages in the cache.
  int64_t numPages = 0;
  /// kv_indptr[B]: entries of kv_indices.
  int64_t nnz = 0;
  /// Wcap: rows of the work list and of o_part / lse_part.
  int64_t workCapacity = 0;
  /// Nq: rows of q, o and lse of a prefill (qo_indptr[B]); unset (decode):
  /// one row per request, B.
  std::optional<int64_t> numQueryRows;
  /// Bytes of a prefill's packed custom mask.
  int64_t maskBytes = 0;
  /// The prefill grid symbol q_tiles (max_b ceil(qo_len_b /
  /// queries_per_tile); prefill_partial: the query tiles of the largest
  /// work item).
  int64_t qTiles = 0;
  /// Rows of o_part / lse_part when they differ from workCapacity (a split
  /// prefill: one row per (query, chunk)); unset: workCapacity.
  std::optional<int64_t> partialRows;
  /// merge_states: the states per row (S of o_states[R, S, Hq, D]).
  int64_t numStates = 0;
  /// mla_decode: the splits of each request's keys (grid symbol kv_splits).
  int64_t kvSplits = 1;

  /// Rows of q, o and lse: numQueryRows if set, else batch.
  int64_t queryRows() const { return numQueryRows ? *numQueryRows : batch; }
};

/// The row-major shape of role `r` (docs/Runtime.md, "Shapes"), with
/// R = dims.queryRows() (B for decode, Nq for prefill):
/// q, o [R, Hq, D]; kv [N, 2, P, Hkv, D] (NHD) / [N, 2, Hkv, P, D] (HND);
/// k, v [N, P, Hkv, D] / [N, Hkv, P, D]; kv_indptr, work_indptr, qo_indptr,
/// mask_indptr [B+1]; kv_indices [nnz]; kv_last_page_len [B]; lse [R, Hq];
/// work_request, work_start, work_end [Wcap]; o_part [Wcap, Hq, D];
/// lse_part [Wcap, Hq]; q_positions [Nq]; custom_mask [mask_bytes];
/// alibi_slopes [Hq]; k_scale, v_scale [1] (kv_scale tensor) or [Hkv]
/// (head); merge_counters [B, Hq]; k_new, v_new [N, Hkv, D] and
/// slot_mapping [N] with N = dims.batch (an append's rows).
std::vector<int64_t> roleShape(const BundleConfig &c, ArgRole r,
                               const ProblemDims &dims);

/// Row-major contiguous strides of `shape` (the last one is 1).
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

/// Resolves a launch grid. Fails if an extent is not positive or does not
/// fit the 32-bit grid dimension (x < 2^31, y and z < 65536).
Status resolveGrid(const LaunchSpec &l, const BundleConfig &c,
                   const ProblemDims &dims, std::array<uint32_t, 3> &grid);

/// A device buffer bound to a role: its address and its row-major shape.
struct TensorArg {
  uint64_t ptr = 0;
  std::vector<int64_t> shape;
  bool bound = false;
};

/// Role -> tensor bindings of one launch.
class ArgBindings {
public:
  /// Binds role `r` (replacing an earlier binding).
  void bind(ArgRole r, uint64_t ptr, std::vector<int64_t> shape);
  /// The binding of `r`, or null.
  const TensorArg *get(ArgRole r) const;

private:
  std::array<TensorArg, kNumArgRoles> args;
};

/// The flat scalar parameter list of one launch: one 8-byte word per
/// parameter (pointers and int64 alike), and the void*[] that cuLaunchKernel
/// takes as kernelParams.
class PackedParams {
public:
  /// The words, in parameter order.
  const std::vector<uint64_t> &words() const { return values; }
  /// One pointer per word, valid until this object is modified or destroyed.
  void **kernelParams();
  size_t size() const { return values.size(); }

  void clear() { values.clear(); }
  void push(uint64_t word) { values.push_back(word); }

private:
  std::vector<uint64_t> values;
  std::vector<void *> pointers;
};

/// Packs the parameters of kernel `k` from `b`: for every argument in order,
/// ptr, ptr, 0, shape..., contiguousStrides(shape).... Fails if a role is not
/// bound, if a binding's rank differs from the manifest's, or if a size is
/// negative. `out` is cleared first.
Status packParams(const KernelSpec &k, const ArgBindings &b, PackedParams &out);

} // namespace pa::rt

#endif // PAGEDATTN_RUNTIME_BUNDLE_H
