// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_80 format=isa" | FileCheck %s --check-prefix=SM80
// RUN: pa-opt %s --pa-lower-to-nvvm="chip=sm_90 format=isa" | not grep -E "(ld|st)\.local|__nv_"

// A prefill program (f16 and bf16) compiles through convert-pa-to-gpu,
// pa-mma-sync-bf16-to-nvvm, convert-nvgpu-to-nvvm and convert-gpu-to-nvvm to
// PTX whose kernels hold what the issue asks of them: cp.async copies with
// commit / wait, ldmatrix (plain and transposed), mma.sync m16n8k16 (f16 and
// bf16), butterfly shuffles, ex2 and no local memory (ptxas -v on the
// shipping kernels: test/Tools/pa-compile-prefill.mlir).

// CHECK: gpu.binary @pa_kernels
// CHECK-SAME: .target sm_90
// CHECK-DAG: .entry pa_prefill(
// CHECK-DAG: .entry pa_prefill_0(
// CHECK-DAG: cp.async.cg.shared.global
// CHECK-DAG: cp.async.commit_group
// CHECK-DAG: cp.async.wait_group
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG: shfl.sync.bfly.b32
// CHECK-DAG: ex2.approx.ftz.f32
// CHECK-DAG: bar.sync
// SM80: .target sm_80
// SM80-SAME: .entry pa_prefill(
// SM80-SAME: mma.sync.aligned.m16n8k16

#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @prefill(%q: tensor<?x32x128xf16>, %qi: tensor<?xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = pa.prefill q(%q, %qi : tensor<?x32x128xf16>, tensor<?xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, causal}
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

#cache2 = #pa.paged_kv<hnd, page_size = 64, kv_heads = 2, head_dim = 256>
func.func @prefill_bf16(%q: tensor<?x16x256xbf16>, %qi: tensor<?xi32>, %kv: tensor<?x2x2x64x256xbf16>, %ip: tensor<?xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x16x256xbf16>, %l: tensor<?x16xf32>) -> (tensor<?x16x256xbf16>, tensor<?x16xf32>) {
  %r:2 = pa.prefill q(%q, %qi : tensor<?x16x256xbf16>, tensor<?xi32>) kv(%kv : tensor<?x2x2x64x256xbf16>) pages(%ip, %ix, %lp : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x16x256xbf16>, tensor<?x16xf32>) {cache = #cache2, window = 100 : i64, logits_soft_cap = 30.0 : f32}
  return %r#0, %r#1 : tensor<?x16x256xbf16>, tensor<?x16xf32>
}
