//===- AssertToStderr.cpp - cf.assert -> write(2, msg) + abort() ----------===//
//
// The run-time checks of the CPU lowering report on stderr: see the
// pa-assert-to-stderr pass description.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PAASSERTTOSTDERR
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;

namespace {
struct PAAssertToStderr final
    : pa::impl::PAAssertToStderrBase<PAAssertToStderr> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    bool structured = false;
    module.walk([&](cf::AssertOp op) {
      // Splitting a block is only valid in a region that may hold several.
      Operation *parent = op->getParentOp();
      if (!parent->hasTrait<OpTrait::SingleBlock>() ||
          isa<FunctionOpInterface>(parent))
        asserts.push_back(op);
      else {
        op.emitOpError() << "pa-assert-to-stderr needs the assert in a CFG "
                            "region; run convert-scf-to-cf first";
        structured = true;
      }
    });
    if (structured)
      return signalPassFailure();
    // Each assert reports through declarations in its nearest module.
    llvm::MapVector<ModuleOp, SmallVector<cf::AssertOp>> byModule;
    for (cf::AssertOp op : asserts)
      byModule[op->getParentOfType<ModuleOp>()].push_back(op);
    for (auto &[mod, ops] : byModule)
      if (failed(lowerAsserts(mod, ops)))
        return signalPassFailure();
  }

  /// Rewrites `ops`, all in `mod`, into branches to write(2) + abort().
  LogicalResult lowerAsserts(ModuleOp mod, ArrayRef<cf::AssertOp> ops) {
    // The libc functions it calls must not collide with the module's own
    // symbols (a func.func @write, say): say so instead of a redefinition.
    for (StringRef name : {"write", "abort"}) {
      Operation *sym = SymbolTable::lookupSymbolIn(mod, name);
      if (sym && !isa<LLVM::LLVMFuncOp>(sym))
        return sym->emitError()
               << "pa-assert-to-stderr calls libc's '" << name
               << "' to report failed assertions; rename this symbol";
    }
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToStart(mod.getBody());
    Type i32 = b.getI32Type(), i64 = b.getI64Type();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    FailureOr<LLVM::LLVMFuncOp> write =
        LLVM::lookupOrCreateFn(b, mod, "write", {i32, ptr, i64}, i64);
    FailureOr<LLVM::LLVMFuncOp> abortFn = LLVM::lookupOrCreateFn(
        b, mod, "abort", {}, LLVM::LLVMVoidType::get(ctx));
    if (failed(write) || failed(abortFn))
      return mod.emitError() << "pa-assert-to-stderr: 'write' or 'abort' is "
                                "already declared with another signature";

    unsigned n = 0;
    for (cf::AssertOp op : ops) {
      Location loc = op.getLoc();
      Block *before = op->getBlock();
      Block *cont = before->splitBlock(op->getIterator());
      // The failure block, placed after the continuation.
      Block *failed = new Block();
      cont->getParent()->getBlocks().insertAfter(cont->getIterator(), failed);
      b.setInsertionPointToStart(failed);
      std::string text = ("pa: assertion failed: " + op.getMsg() + "\n").str();
      std::string name;
      do
        name = ("pa_assert_msg_" + Twine(n++)).str();
      while (SymbolTable::lookupSymbolIn(mod, name));
      Value msg = LLVM::createGlobalString(loc, b, name, text,
                                           LLVM::Linkage::Internal);
      Value fd = LLVM::ConstantOp::create(b, loc, i32, 2);
      Value len = LLVM::ConstantOp::create(b, loc, i64, text.size());
      LLVM::CallOp::create(b, loc, *write, ValueRange{fd, msg, len});
      LLVM::CallOp::create(b, loc, *abortFn, ValueRange{});
      LLVM::UnreachableOp::create(b, loc);
      b.setInsertionPointToEnd(before);
      cf::CondBranchOp::create(b, loc, op.getArg(), cont, ValueRange{},
                               failed, ValueRange{});
      op.erase();
    }
    return success();
  }
};
} // namespace
