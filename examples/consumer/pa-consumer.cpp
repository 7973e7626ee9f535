//===- pa-consumer.cpp - PagedAttn from another project ---------------------===//
//
// Part of the PagedAttn project (an example consumer of the installed
// package: examples/consumer/CMakeLists.txt).
//
// Parses a pa program, runs the kernel half of pa-lower-to-nvvm, reads the
// manifest off the kernels' ABI attributes, runs the binary half to PTX
// (no ptxas needed: the driver JIT-compiles it), and writes a bundle that
// the runtime (pa_bundle_load) loads:
//
//   pa-consumer PROGRAM.mlir OUT_DIR HEAD_DIM PAGE_SIZE KV_HEADS GROUP \
//               LAYOUT(nhd|hnd) DTYPE(f16|bf16|f32) KV(joint|split)
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Bundle/BundleWriter.h"
#include "PagedAttn/Dialect/PA.h"
#include "PagedAttn/Pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
namespace rt = ::pa::rt;

int main(int argc, char **argv) {
  if (argc != 10) {
    llvm::errs() << "usage: pa-consumer PROGRAM.mlir OUT_DIR HEAD_DIM "
                    "PAGE_SIZE KV_HEADS GROUP LAYOUT DTYPE KV\n";
    return 2;
  }
  mlir::pa::BundleOptions options;
  rt::BundleConfig &c = options.config;
  c.headDim = std::atoll(argv[3]);
  c.pageSize = std::atoll(argv[4]);
  c.kvHeads = std::atoll(argv[5]);
  c.group = std::atoll(argv[6]);
  if (!rt::fromString(argv[7], c.layout) || !rt::fromString(argv[8], c.dtype) ||
      !rt::fromString(argv[9], c.kv) || c.headDim <= 0 || c.pageSize <= 0 ||
      c.kvHeads <= 0 || c.group <= 0) {
    llvm::errs() << "pa-consumer: bad configuration\n";
    return 2;
  }
  options.file = "kernels.ptx";

  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  DialectRegistry registry;
  mlir::pa::registerPipelineDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  OwningOpRef<ModuleOp> program = parseSourceFile<ModuleOp>(argv[1], &ctx);
  if (!program)
    return 1;

  mlir::pa::LowerToNVVMOptions opts;
  opts.chip = "sm_90";
  opts.format = "isa";
  PassManager pm(&ctx);
  mlir::pa::buildPAToGPUKernelsPipeline(pm, opts);
  if (failed(pm.run(*program)))
    return 1;
  FailureOr<rt::Manifest> manifest =
      mlir::pa::manifestFromKernels(*program, options);
  if (failed(manifest))
    return 1;
  FailureOr<std::string> ptx = mlir::pa::kernelsToBinary(*program, opts);
  if (failed(ptx))
    return 1;
  if (failed(mlir::pa::writeBundle(argv[2], *manifest,
                                   {{"kernels.ptx", *ptx}})))
    return 1;
  llvm::outs() << "pa-consumer: " << argv[2] << ": "
               << manifest->kernels.size() << " kernel(s), " << ptx->size()
               << " bytes of PTX\n";
  return 0;
}
