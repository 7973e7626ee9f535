// RUN: pa-opt %s --split-input-file --pass-pipeline="builtin.module(gpu.module(pa-wgmma-smem-align))" | FileCheck %s

// A gpu.module with a pa.wgmma kernel: its dynamic shared memory is
// aligned to wgmma's 1024-byte swizzle repeat.
// CHECK-LABEL: gpu.module @wg
// CHECK: llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
module attributes {gpu.container_module} {
  gpu.module @wg {
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.func @k() attributes {nvvm.kernel, pa.wgmma} {
      llvm.return
    }
  }
}

// -----

// Without one, the 16-byte alignment stays.
// CHECK-LABEL: gpu.module @sync
// CHECK: llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
module attributes {gpu.container_module} {
  gpu.module @sync {
    llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    llvm.func @k() attributes {nvvm.kernel} {
      llvm.return
    }
  }
}
