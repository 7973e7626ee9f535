// RUN: pa-opt %s --split-input-file --pa-fp8-to-nvvm --verify-diagnostics | FileCheck %s
// RUN: pa-opt %s --split-input-file --pa-fp8-to-nvvm="chip=sm_89" --verify-diagnostics | FileCheck %s
// Before sm_89 no chip converts fp8: an error at the first conversion of
// each input; a chip that is not an SM name is an error too.
// RUN: not pa-opt %s --split-input-file --pa-fp8-to-nvvm="chip=sm_86" 2>&1 | FileCheck %s --check-prefix=OLD
// RUN: not pa-opt %s --split-input-file --pa-fp8-to-nvvm="chip=gfx90a" 2>&1 | FileCheck %s --check-prefix=NOTSM
// OLD: error: 'arith.extf' op an fp8 conversion on the GPU needs sm_89 or later (cvt.rn.f16x2.e4m3x2 and its kin), got chip sm_86
// OLD: error: 'arith.truncf' op an fp8 conversion on the GPU needs sm_89 or later (cvt.rn.f16x2.e4m3x2 and its kin), got chip sm_86
// NOTSM: error: pa-fp8-to-nvvm: chip must name an SM (sm_89, sm_90a, ...), got 'gfx90a'

// pa-fp8-to-nvvm: arith.extf from fp8 becomes one cvt (nvvm.convert.f8x2.
// to.f16x2) per two elements on the source bits, the pairs joined by
// vector.shuffle; f32 and bf16 results widen / narrow the exact f16 values.

// CHECK-LABEL: func.func @vec4_f16
// CHECK:         %[[B:.*]] = arith.bitcast %arg0 : vector<4xf8E4M3FN> to vector<4xi8>
// CHECK:         %[[P0:.*]] = vector.shuffle %[[B]], %[[B]] [0, 1] : vector<4xi8>, vector<4xi8>
// CHECK:         %[[H0:.*]] = nvvm.convert.f8x2.to.f16x2 %[[P0]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK:         %[[P1:.*]] = vector.shuffle %[[B]], %[[B]] [2, 3] : vector<4xi8>, vector<4xi8>
// CHECK:         %[[H1:.*]] = nvvm.convert.f8x2.to.f16x2 %[[P1]] : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK:         %[[W:.*]] = vector.shuffle %[[H0]], %[[H1]] [0, 1, 2, 3] : vector<2xf16>, vector<2xf16>
// CHECK:         return %[[W]]
// CHECK-NOT:     arith.extf
func.func @vec4_f16(%v: vector<4xf8E4M3FN>) -> vector<4xf16> {
  %w = arith.extf %v : vector<4xf8E4M3FN> to vector<4xf16>
  return %w : vector<4xf16>
}

// -----

// CHECK-LABEL: func.func @vec2_bf16
// CHECK:         nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E5M2) -> vector<2xf16>
// CHECK:         %[[F:.*]] = arith.extf %{{.*}} : vector<2xf16> to vector<2xf32>
// CHECK:         %[[R:.*]] = arith.truncf %[[F]] : vector<2xf32> to vector<2xbf16>
// CHECK:         return %[[R]]
func.func @vec2_bf16(%v: vector<2xf8E5M2>) -> vector<2xbf16> {
  %w = arith.extf %v : vector<2xf8E5M2> to vector<2xbf16>
  return %w : vector<2xbf16>
}

// -----

// A scalar goes through a pair (both lanes the same byte).
// CHECK-LABEL: func.func @scalar_f32
// CHECK:         %[[B:.*]] = arith.bitcast %arg0 : f8E4M3FN to i8
// CHECK:         %[[P:.*]] = vector.broadcast %[[B]] : i8 to vector<2xi8>
// CHECK:         %[[H:.*]] = nvvm.convert.f8x2.to.f16x2 %[[P]]
// CHECK:         %[[E:.*]] = vector.extract %[[H]][0] : f16 from vector<2xf16>
// CHECK:         arith.extf %[[E]] : f16 to f32
func.func @scalar_f32(%v: f8E4M3FN) -> f32 {
  %w = arith.extf %v : f8E4M3FN to f32
  return %w : f32
}

// -----

// Other widths are left to the LLVM lowering: f16 -> f32 is untouched.
// CHECK-LABEL: func.func @not_fp8
// CHECK:         arith.extf %arg0 : f16 to f32
// CHECK-NOT:     nvvm.convert
func.func @not_fp8(%v: f16) -> f32 {
  %w = arith.extf %v : f16 to f32
  return %w : f32
}

// -----

func.func @odd(%v: vector<3xf8E4M3FN>) -> vector<3xf16> {
  // expected-error @+1 {{pa-fp8-to-nvvm converts fp8 scalars and 1-D vectors of 2, 4, 8, ... elements, got 'vector<3xf8E4M3FN>'}}
  %w = arith.extf %v : vector<3xf8E4M3FN> to vector<3xf16>
  return %w : vector<3xf16>
}

// -----

// arith.truncf f32 -> fp8 (the quantize-on-write of append_kv_slots):
// one cvt.rn.satfinite per pair (nvvm.convert.f32x2.to.f8x2, the pair's
// second element as the high byte), the byte pairs joined by
// vector.shuffle and bitcast to the fp8 vector.
// CHECK-LABEL: func.func @trunc_vec4
// CHECK-DAG: %[[A:.*]] = vector.extract %{{.*}}[0] : f32 from vector<4xf32>
// CHECK-DAG: %[[B:.*]] = vector.extract %{{.*}}[1] : f32 from vector<4xf32>
// CHECK: %[[P0:.*]] = nvvm.convert.f32x2.to.f8x2 %[[B]], %[[A]] {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : vector<2xi8>(f8E5M2)
// CHECK: %[[P1:.*]] = nvvm.convert.f32x2.to.f8x2 {{.*}} : vector<2xi8>(f8E5M2)
// CHECK: %[[J:.*]] = vector.shuffle %[[P0]], %[[P1]] [0, 1, 2, 3] : vector<2xi8>, vector<2xi8>
// CHECK: arith.bitcast %[[J]] : vector<4xi8> to vector<4xf8E5M2>
// CHECK-NOT: arith.truncf
func.func @trunc_vec4(%v: vector<4xf32>) -> vector<4xf8E5M2> {
  %r = arith.truncf %v : vector<4xf32> to vector<4xf8E5M2>
  return %r : vector<4xf8E5M2>
}

// -----

// CHECK-LABEL: func.func @trunc_scalar
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P:.*]] = nvvm.convert.f32x2.to.f8x2 %[[Z]], %{{.*}} {{.*}} : vector<2xi8>(f8E4M3FN)
// CHECK: %[[BYTE:.*]] = vector.extract %[[P]][0] : i8 from vector<2xi8>
// CHECK: arith.bitcast %[[BYTE]] : i8 to f8E4M3FN
func.func @trunc_scalar(%v: f32) -> f8E4M3FN {
  %r = arith.truncf %v : f32 to f8E4M3FN
  return %r : f8E4M3FN
}

// -----

// Only from f32: the pass does not round twice.
func.func @trunc_f16(%v: f16) -> f8E4M3FN {
  // expected-error @+1 {{pa-fp8-to-nvvm narrows f32 to fp8, got 'f16'}}
  %r = arith.truncf %v : f16 to f8E4M3FN
  return %r : f8E4M3FN
}
