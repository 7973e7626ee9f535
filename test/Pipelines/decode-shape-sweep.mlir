// REQUIRES: ptxas
// RUN: %python %S/Inputs/shape_sweep.py --pa-opt pa-opt --ptxas %ptxas --groups 1-32 --options "decode-kernel=cuda-core" | FileCheck %s
// RUN: not %python %S/Inputs/shape_sweep.py --pa-opt pa-opt --ptxas %ptxas --groups 8-8 --options "decode-tile-kv=256 heads-per-cta=8 decode-kernel=cuda-core" | FileCheck %s --check-prefix=FORCED

// The default shape of the CUDA-core decode (convert-pa-to-gpu's
// makeSimtDecodeConfig: heads per CTA, lane width, keys per tile, which
// pa-compile uses too) compiles without spills for every GQA group 1..32,
// head dim 64/128/256 and f16/bf16/f32, decode and decode_partial: ptxas -v
// reports 0 bytes of stack frame and spills for each of the 576 kernels.
// The second run proves the check can fail: 8 heads over 256-key tiles
// spill.

// CHECK: shape sweep: 576 kernels of 576 expected (288 configurations: groups 1..32 x D [64, 128, 256] x ['f16', 'bf16', 'f32']), 0 failing
// CHECK-NOT: FAIL
// FORCED: FAIL: {{.*}} spill stores
