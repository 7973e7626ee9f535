//===- WgmmaSmemAlign.cpp - 1024-byte dynamic shared memory for wgmma -----===//
//
// pa-wgmma-smem-align: see the pass description.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "PagedAttn/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::pa {
#define GEN_PASS_DEF_PAWGMMASMEMALIGN
#include "PagedAttn/Conversion/Passes.h.inc"
} // namespace mlir::pa

using namespace mlir;

namespace {

/// Shared memory is address space 3 in NVVM.
constexpr unsigned kSharedAddressSpace = 3;
/// The repeat of wgmma's 128-byte swizzle pattern (8 rows of 128 bytes).
constexpr uint64_t kSwizzleRepeat = 1024;

struct PAWgmmaSmemAlign final
    : pa::impl::PAWgmmaSmemAlignBase<PAWgmmaSmemAlign> {
  void runOnOperation() override {
    Operation *module = getOperation();
    bool wgmma = false;
    module->walk([&](Operation *op) {
      if (op->hasAttr(pa::gpukernel::kWgmmaAttr))
        wgmma = true;
    });
    if (!wgmma)
      return;
    module->walk([&](LLVM::GlobalOp g) {
      if (g.getAddrSpace() == kSharedAddressSpace &&
          g.getSymName().starts_with("__dynamic_shmem__") &&
          g.getAlignment().value_or(0) < kSwizzleRepeat)
        g.setAlignment(kSwizzleRepeat);
    });
  }
};

} // namespace
