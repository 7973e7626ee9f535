// Every program in examples/ parses, verifies, round-trips, canonicalizes and
// bufferizes.
// RUN: for f in %pa_src_root/examples/*.mlir; do \
// RUN:   pa-opt $f > %t.1.mlir && pa-opt %t.1.mlir > %t.2.mlir && diff %t.1.mlir %t.2.mlir && \
// RUN:   pa-opt $f --canonicalize --one-shot-bufferize="bufferize-function-boundaries" > /dev/null || exit 1; \
// RUN: done
// RUN: pa-opt %pa_src_root/examples/decode.mlir | FileCheck %s
// CHECK: pa.decode
