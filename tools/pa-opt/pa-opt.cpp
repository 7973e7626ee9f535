//===- pa-opt.cpp - mlir-opt with the pa dialect and passes ----------------===//
//
// Every upstream dialect, extension and pass is registered, plus the pa
// dialect, its bufferization models and its passes.
//
//===----------------------------------------------------------------------===//

#include "PagedAttn/Conversion/Passes.h"
#include "PagedAttn/Dialect/PA.h"
#include "PagedAttn/Pipelines/Pipelines.h"
#include "PagedAttn/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::pa::registerPATransformsPasses();
  mlir::pa::registerPAConversionPasses();
  mlir::pa::registerPAPipelines();
  mlir::DialectRegistry registry;
  mlir::pa::registerPipelineDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "PagedAttn optimizer driver\n", registry));
}
