// REQUIRES: cuda
// Compiles decode bundles and checks them on the GPU against the float64
// reference (poisoned outputs, edge cases, forced split-KV, checked mode).
// Configure with -DPA_CUDA_DEVICE=ON on a machine with a CUDA device.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pa-compile --head-dim 128 --page-size 16 --kv-heads 8 --group 4 -o %t/gqa4
// RUN: pa-compile --head-dim 64 --page-size 1 --kv-heads 2 --group 8 --layout hnd --kv split --dtype bf16 -o %t/g8
// RUN: pa-gpu-runner check %t/gqa4 %t/g8 | FileCheck %s
// CHECK: all bundles PASS
