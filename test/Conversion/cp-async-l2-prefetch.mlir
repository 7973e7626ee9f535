// RUN: pa-opt %s --pa-cp-async-l2-prefetch | FileCheck %s --check-prefix=B128
// RUN: pa-opt %s --pa-cp-async-l2-prefetch=bytes=256 | FileCheck %s --check-prefix=B256
// RUN: pa-opt %s --pa-cp-async-l2-prefetch=bytes=0 | FileCheck %s --check-prefix=NONE
// RUN: not pa-opt %s --pa-cp-async-l2-prefetch=bytes=100 2>&1 | FileCheck %s --check-prefix=BAD

// Every cp.async becomes the same copy as inline PTX with an L2 prefetch
// size: the shared address as a 32-bit offset, the global one as 64 bits,
// the zero-fill source size kept where the copy has one, .ca / .cg and the
// copy size kept. bytes=0 leaves the copies alone.

// B128-LABEL: func.func @copies(
// B128-SAME: %[[D:.*]]: !llvm.ptr<3>, %[[S:.*]]: !llvm.ptr<1>, %[[N:.*]]: i32
// B128: %[[D0:.*]] = llvm.ptrtoint %[[D]] : !llvm.ptr<3> to i32
// B128: %[[S0:.*]] = llvm.ptrtoint %[[S]] : !llvm.ptr<1> to i64
// B128: llvm.inline_asm has_side_effects asm_dialect = att "cp.async.cg.shared.global.L2::128B [$0], [$1], 16, $2;", "r,l,r" %[[D0]], %[[S0]], %[[N]] : (i32, i64, i32) -> ()
// B128: llvm.inline_asm has_side_effects asm_dialect = att "cp.async.cg.shared.global.L2::128B [$0], [$1], 16;", "r,l" %{{.*}}, %{{.*}} : (i32, i64) -> ()
// B128: llvm.inline_asm has_side_effects asm_dialect = att "cp.async.ca.shared.global.L2::128B [$0], [$1], 4;", "r,l"
// B128-NOT: nvvm.cp.async.shared.global

// B256-COUNT-3: .shared.global.L2::256B
// B256-NOT: nvvm.cp.async.shared.global

// NONE-COUNT-3: nvvm.cp.async.shared.global
// NONE-NOT: llvm.inline_asm

// BAD: error: pa-cp-async-l2-prefetch: bytes must be 0, 64, 128 or 256, got 100

func.func @copies(%d: !llvm.ptr<3>, %s: !llvm.ptr<1>, %n: i32) {
  nvvm.cp.async.shared.global %d, %s, 16, cache = cg, %n : !llvm.ptr<3>, !llvm.ptr<1>, i32
  nvvm.cp.async.shared.global %d, %s, 16, cache = cg : !llvm.ptr<3>, !llvm.ptr<1>
  nvvm.cp.async.shared.global %d, %s, 4, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
  return
}
