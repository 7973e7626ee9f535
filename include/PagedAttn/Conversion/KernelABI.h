//===- KernelABI.h - the ABI a GPU kernel carries as an attribute -*- C++ -*-===//
//
// convert-pa-to-gpu annotates every kernel it creates (`gpu.func`) with a
// `pa.kernel` dictionary: what the kernel computes, the role of each of its
// arguments and how to launch it. pa-compile prints the bundle manifest from
// these attributes (pa::rt::printManifest), so the argument order and the
// launch grid are written down once, by the code that decides them:
//
//   gpu.func @pa_decode(...) kernel attributes {pa.kernel = {
//       kind = "decode",
//       args = ["q", "kv", "kv_indptr", "kv_indices", "kv_last_page_len",
//               "o", "lse"],
//       grid = ["batch", "kv_heads", 1], block = array<i64: 128, 1, 1>,
//       smem = 66560 : i64, tile_q = 4 : i64, tile_kv = 64 : i64,
//       kv_warps = 4 : i64, lane_bytes = 32 : i64, tokens_in_flight = 4 : i64,
//       heads_per_cta = 4 : i64}, pa.simt}
//
// `args` names the kernel's arguments in order with the runtime's role
// spellings (docs/Runtime.md); a grid extent is a symbol the runtime
// resolves ("batch", "kv_heads", "num_q_heads", "work_capacity") or an
// integer. lane_bytes / tokens_in_flight / heads_per_cta record the shape
// of a CUDA-core decode kernel (bytes of a K/V row per lane, keys of a KV
// tile per lane group, query heads per CTA); tile_q / tile_kv that of a prefill kernel
// (grid symbol "q_tiles": the most query tiles of any request,
// max_b ceil(qo_len_b / (tile_q / group))); kv_warps (when > 1) the warps
// of a tile kernel that split each KV tile's keys rather than its rows;
// merge_together the counter value that asks a split-KV kernel to merge
// with all its CTAs (MLA decode).
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_CONVERSION_KERNELABI_H
#define PAGEDATTN_CONVERSION_KERNELABI_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Operation.h"

#include <array>
#include <string>

namespace mlir::pa {

/// Name of the discardable attribute on a kernel.
constexpr llvm::StringLiteral kKernelABIAttrName = "pa.kernel";

/// One extent of a launch grid: a symbol, or `value` when `symbol` is empty.
struct GridExtentABI {
  std::string symbol;
  int64_t value = 1;
};

/// The decoded `pa.kernel` attribute.
struct KernelABI {
  std::string kind;
  SmallVector<std::string> args;
  std::array<GridExtentABI, 3> grid;
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t smem = 0;
  /// Tiling of a decode kernel; 0 for other kernels.
  int64_t laneBytes = 0, tokensInFlight = 0, headsPerCTA = 0;
  /// Tiling of a prefill kernel (0 for other kernels): rows of a query tile
  /// (tile_q = queries per tile x GQA group, the packed rows) and keys per
  /// KV tile (tile_kv).
  int64_t tileQ = 0, tileKV = 0;
  /// Warps of a tile kernel that split the keys of each KV tile (kv_warps,
  /// written when > 1): each holds a partial softmax state of its keys and
  /// the store merges them. The other warps split the query tile's rows.
  int64_t kvWarps = 1;
  /// K/V tiles of a tile kernel in shared memory at once (kv_stages,
  /// written when set; 0: pa-promote-tiles' default of 2): one is computed
  /// on while the copies of the next stages - 1 are in flight.
  int64_t kvStages = 0;
  /// A split-KV kernel whose splits can merge together (merge_together,
  /// written when > 0): the i32 value of its arrival counters at launch
  /// that asks for it, with every CTA resident (a cooperative launch); each
  /// waits for its request's splits and merges a share. Counters at 0: the
  /// last CTA of a request merges alone.
  int64_t mergeTogether = 0;
};

/// The attribute that encodes `abi`.
DictionaryAttr encodeKernelABI(MLIRContext *ctx, const KernelABI &abi);

/// Decodes the `pa.kernel` attribute of `kernel`; emits an error at the
/// kernel naming the missing or malformed entry on failure.
FailureOr<KernelABI> decodeKernelABI(Operation *kernel);

} // namespace mlir::pa

#endif // PAGEDATTN_CONVERSION_KERNELABI_H
