// Every buffer a program lowered by pa-lower-to-cpu allocates is freed or
// returned (docs/Fuzzing.md, finding 2): the split-KV work list and partial
// states, the per-level states of a decomposed cascade, and the scratch of
// convert-pa-to-loops. Counted per function in the IR after
// convert-pa-to-loops (Inputs/buffer_balance.py: allocs, deallocs, allocs
// returned, leaked; it fails on a leak, on a dealloc of a buffer no alloc of
// the function made (an argument: the caller's), or of a returned one), and
// in the final LLVM dialect (calls of malloc and free; the table of
// docs/Fuzzing.md).
//
// RUN: pa-opt %pa_src_root/examples/decode.mlir -pa-lower-to-cpu=split-kv-chunk=64 \
// RUN:   -mlir-print-ir-after=convert-pa-to-loops -o /dev/null 2>&1 \
// RUN: | %python %S/Inputs/buffer_balance.py | FileCheck %s --check-prefix=SPLIT
// RUN: pa-opt %pa_src_root/examples/decode.mlir -pa-lower-to-cpu=split-kv-chunk=64 -o %t.split
// RUN: grep -c 'llvm.call @malloc(' %t.split | FileCheck %s --check-prefix=SPLIT-MALLOC
// RUN: grep -c 'llvm.call @free(' %t.split | FileCheck %s --check-prefix=SPLIT-FREE
//
// RUN: pa-opt %pa_src_root/examples/cascade.mlir -pa-lower-to-cpu=cascade-decompose=true \
// RUN:   -mlir-print-ir-after=convert-pa-to-loops -o /dev/null 2>&1 \
// RUN: | %python %S/Inputs/buffer_balance.py | FileCheck %s --check-prefix=CASCADE
// RUN: pa-opt %pa_src_root/examples/cascade.mlir -pa-lower-to-cpu=cascade-decompose=true -o %t.cascade
// RUN: grep -c 'llvm.call @malloc(' %t.cascade | FileCheck %s --check-prefix=CASCADE-MALLOC
// RUN: grep -c 'llvm.call @free(' %t.cascade | FileCheck %s --check-prefix=CASCADE-FREE
//
// Without the deallocation (the pipeline's passes up to convert-pa-to-loops
// minus buffer-deallocation-pipeline) the check fails, naming the leaks:
// RUN: not %python %S/Inputs/buffer_balance.py < /dev/null | FileCheck %s --check-prefix=EMPTY
// RUN: pa-opt %pa_src_root/examples/decode.mlir --pass-pipeline="builtin.module(canonicalize,pa-split-kv{chunk-size=64},one-shot-bufferize{bufferize-function-boundaries=true function-boundary-type-conversion=identity-layout-map},drop-equivalent-buffer-results,convert-pa-to-loops)" \
// RUN: | not %python %S/Inputs/buffer_balance.py | FileCheck %s --check-prefix=LEAKY

// Two results are new buffers the caller owns (the example's outs are
// tensor.empty); the 4 work-list arrays, the 2 partial states and the 3
// scratch buffers of the loops are freed.
// SPLIT: @decode_step: 11 alloc, 9 dealloc, 2 returned, 0 leaked
// SPLIT-NOT: LEAK
// SPLIT-NOT: FREES
// SPLIT-NOT: DOUBLE

// The same after the whole pipeline: 11 calls of malloc, 9 of free.
// SPLIT-MALLOC: {{^}}11{{$}}
// SPLIT-FREE: {{^}}9{{$}}

// Both functions (the decomposed pa.cascade and the hand-written prefills +
// pa.merge) return their outs, which are arguments: nothing allocated is
// returned, the 2 x 2 per-level states and the 6 scratch buffers of each are
// freed, no argument is.
// CASCADE: @cascade: 10 alloc, 10 dealloc, 0 returned, 0 leaked
// CASCADE-NOT: LEAK
// CASCADE: @by_hand: 10 alloc, 10 dealloc, 0 returned, 0 leaked
// CASCADE-NOT: LEAK
// CASCADE-NOT: FREES
// CASCADE-NOT: DOUBLE

// CASCADE-MALLOC: {{^}}20{{$}}
// CASCADE-FREE: {{^}}20{{$}}

// EMPTY: buffer_balance: no func.func in the input

// LEAKY: @decode_step: 11 alloc, 3 dealloc, 2 returned, 6 leaked
// LEAKY-COUNT-6: LEAK:
