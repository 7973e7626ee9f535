//===- KernelABI.cpp - encode / decode the pa.kernel attribute ------------===//

#include "PagedAttn/Conversion/KernelABI.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include <cstdint>

using namespace mlir;
using namespace mlir::pa;

DictionaryAttr mlir::pa::encodeKernelABI(MLIRContext *ctx,
                                         const KernelABI &abi) {
  Builder b(ctx);
  SmallVector<Attribute> args, grid;
  for (const std::string &a : abi.args)
    args.push_back(b.getStringAttr(a));
  for (const GridExtentABI &g : abi.grid)
    grid.push_back(g.symbol.empty()
                       ? Attribute(b.getI64IntegerAttr(g.value))
                       : Attribute(b.getStringAttr(g.symbol)));
  SmallVector<NamedAttribute> entries{
      b.getNamedAttr("kind", b.getStringAttr(abi.kind)),
      b.getNamedAttr("args", b.getArrayAttr(args)),
      b.getNamedAttr("grid", b.getArrayAttr(grid)),
      b.getNamedAttr("block", b.getDenseI64ArrayAttr(abi.block)),
      b.getNamedAttr("smem", b.getI64IntegerAttr(abi.smem))};
  if (abi.laneBytes > 0) {
    entries.push_back(
        b.getNamedAttr("lane_bytes", b.getI64IntegerAttr(abi.laneBytes)));
    entries.push_back(b.getNamedAttr(
        "tokens_in_flight", b.getI64IntegerAttr(abi.tokensInFlight)));
    entries.push_back(b.getNamedAttr("heads_per_cta",
                                     b.getI64IntegerAttr(abi.headsPerCTA)));
  }
  if (abi.tileQ > 0) {
    entries.push_back(b.getNamedAttr("tile_q", b.getI64IntegerAttr(abi.tileQ)));
    entries.push_back(
        b.getNamedAttr("tile_kv", b.getI64IntegerAttr(abi.tileKV)));
  }
  if (abi.kvStages > 0)
    entries.push_back(
        b.getNamedAttr("kv_stages", b.getI64IntegerAttr(abi.kvStages)));
  if (abi.kvWarps > 1)
    entries.push_back(
        b.getNamedAttr("kv_warps", b.getI64IntegerAttr(abi.kvWarps)));
  if (abi.mergeTogether > 0)
    entries.push_back(b.getNamedAttr(
        "merge_together", b.getI64IntegerAttr(abi.mergeTogether)));
  return b.getDictionaryAttr(entries);
}

FailureOr<KernelABI> mlir::pa::decodeKernelABI(Operation *kernel) {
  auto dict = kernel->getAttrOfType<DictionaryAttr>(kKernelABIAttrName);
  if (!dict)
    return kernel->emitError()
           << "kernel has no '" << kKernelABIAttrName << "' dictionary";
  auto bad = [&](StringRef what) {
    return kernel->emitError() << "'" << kKernelABIAttrName << "': " << what;
  };
  KernelABI abi;
  auto kind = dict.getAs<StringAttr>("kind");
  if (!kind)
    return bad("'kind' must be a string");
  abi.kind = kind.str();
  auto args = dict.getAs<ArrayAttr>("args");
  if (!args)
    return bad("'args' must be an array of strings");
  for (Attribute a : args) {
    auto s = dyn_cast<StringAttr>(a);
    if (!s)
      return bad("'args' must be an array of strings");
    abi.args.push_back(s.str());
  }
  auto grid = dict.getAs<ArrayAttr>("grid");
  if (!grid || grid.size() != 3)
    return bad("'grid' must hold 3 extents");
  for (auto [i, g] : llvm::enumerate(grid)) {
    if (auto s = dyn_cast<StringAttr>(g))
      abi.grid[i].symbol = s.str();
    else if (auto v = dyn_cast<IntegerAttr>(g))
      abi.grid[i].value = v.getInt();
    else
      return bad("a grid extent must be a symbol or an integer");
  }
  auto block = dict.getAs<DenseI64ArrayAttr>("block");
  if (!block || block.size() != 3)
    return bad("'block' must be array<i64> of 3 sizes");
  for (int i = 0; i < 3; ++i)
    abi.block[i] = block[i];
  auto smem = dict.getAs<IntegerAttr>("smem");
  if (!smem)
    return bad("'smem' must be an integer");
  abi.smem = smem.getInt();
  auto optInt = [&](StringRef name, int64_t &out) {
    if (auto v = dict.getAs<IntegerAttr>(name))
      out = v.getInt();
  };
  optInt("lane_bytes", abi.laneBytes);
  optInt("tokens_in_flight", abi.tokensInFlight);
  optInt("heads_per_cta", abi.headsPerCTA);
  optInt("tile_q", abi.tileQ);
  optInt("tile_kv", abi.tileKV);
  optInt("kv_warps", abi.kvWarps);
  optInt("kv_stages", abi.kvStages);
  optInt("merge_together", abi.mergeTogether);
  if (abi.mergeTogether < 0 || abi.mergeTogether > INT32_MAX)
    return bad("'merge_together' must be a counter value in [0, 2^31)");
  if (abi.kvStages < 0 || abi.kvStages == 1 || abi.kvStages > 4)
    return bad("'kv_stages' must be 2, 3 or 4");
  if (abi.kvWarps < 1 ||
      (abi.kvWarps > 1 && abi.block[0] % (32 * abi.kvWarps) != 0))
    return bad("'kv_warps' must be >= 1 and divide the block's warps");
  return abi;
}
