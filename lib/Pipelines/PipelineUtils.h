//===- PipelineUtils.h - the front half every pa pipeline shares -*- C++ -*-===//

#ifndef PAGEDATTN_LIB_PIPELINES_PIPELINEUTILS_H
#define PAGEDATTN_LIB_PIPELINES_PIPELINEUTILS_H

#include "mlir/Pass/PassManager.h"

namespace mlir::pa {

/// Canonicalize, the optional rewrites (cascade decomposition, sharding of
/// decodes over `shardDevices` > 0 devices, split-KV with an in-IR chunk
/// size or a work list from function arguments), One-Shot Bufferize with
/// identity-layout function boundaries and equivalent buffer results
/// dropped.
void addFrontPasses(OpPassManager &pm, bool cascadeDecompose,
                    int64_t splitKVChunk, bool splitKVWorkList,
                    int64_t shardDevices = 0, bool shardRoundRobin = false);

} // namespace mlir::pa

#endif // PAGEDATTN_LIB_PIPELINES_PIPELINEUTILS_H
