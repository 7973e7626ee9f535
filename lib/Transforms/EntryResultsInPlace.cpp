//===- EntryResultsInPlace.cpp - entry functions return their outs --------===//
//
// Part of the PagedAttn project.
//
//===----------------------------------------------------------------------===//
//
// Undoes, for entry functions only, the clones of returned arguments that
// upstream's ownership-based buffer deallocation inserts (see the pass
// description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PAENTRYRESULTSINPLACE
#include "PagedAttn/Transforms/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;
using namespace mlir::pa;

namespace {
/// The argument of `func`'s entry block that `v` is, through memref.casts
/// (which change the type, not the buffer); null if none.
BlockArgument entryArgument(func::FuncOp func, Value v) {
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return {};
  return arg;
}

struct EntryResultsInPlace final
    : pa::impl::PAEntryResultsInPlaceBase<EntryResultsInPlace> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>()) {
      // Only entry points: a caller in the module frees what it gets back.
      if (func.isExternal() || !func.isPublic() ||
          !SymbolTable::symbolKnownUseEmpty(func, module))
        continue;
      SmallVector<bufferization::CloneOp> clones;
      func.walk([&](func::ReturnOp ret) {
        for (Value v : ret.getOperands()) {
          auto clone = v.getDefiningOp<bufferization::CloneOp>();
          if (!clone || !entryArgument(func, clone.getInput()) ||
              !llvm::all_of(clone->getUsers(),
                            llvm::IsaPred<func::ReturnOp>) ||
              (clone.getInput().getType() != clone.getType() &&
               !memref::CastOp::areCastCompatible(clone.getInput().getType(),
                                                  clone.getType())))
            continue;
          if (!llvm::is_contained(clones, clone))
            clones.push_back(clone);
        }
      });
      for (bufferization::CloneOp clone : clones) {
        OpBuilder b(clone);
        Value source = clone.getInput();
        if (source.getType() != clone.getType())
          source = memref::CastOp::create(b, clone.getLoc(), clone.getType(),
                                          source);
        clone.replaceAllUsesWith(source);
        clone.erase();
      }
    }
  }
};
} // namespace
