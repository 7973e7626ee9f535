// RUN: pa-opt %s --split-input-file --pa-mma-sync-bf16-to-nvvm --verify-diagnostics | FileCheck %s --enable-var-scope

// bf16 mma.sync (which upstream's convert-nvgpu-to-nvvm rejects) becomes
// nvvm.mma.sync with i32 registers and the PTX types spelled out; f16 is
// left to upstream.

// CHECK-LABEL: func.func @bf16(
// CHECK-COUNT-6: vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
// CHECK: %[[D:.*]] = nvvm.mma.sync A[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] B[%{{.*}}, %{{.*}}] C[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
// CHECK-SAME: layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>
// CHECK-SAME: multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
// CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK: llvm.extractvalue %[[D]][3]
// CHECK: return %{{.*}} : vector<2x2xf32>
// CHECK-LABEL: func.func @f16(
// CHECK: nvgpu.mma.sync
func.func @bf16(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}
func.func @f16(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

func.func @bf16_k8(%a: vector<2x2xbf16>, %b: vector<1x2xbf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  // expected-error @+1 {{pa-mma-sync-bf16-to-nvvm handles m16n8k16 with vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32> only}}
  %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 8]} : (vector<2x2xbf16>, vector<1x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}
