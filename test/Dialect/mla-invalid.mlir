// RUN: pa-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

// One case per invariant the verifiers of #pa.paged_mla and pa.mla_decode
// check (one expected-error per function).

func.func @case0() {
  // expected-error @+1 {{page_size must be > 0, got 0}}
  %x = "test.x"() {a = #pa.paged_mla<page_size = 0, ckv = 512, kpe = 64>} : () -> i32
  return
}

// -----

func.func @case1() {
  // expected-error @+1 {{ckv (D_ckv) must be > 0, got 0}}
  %x = "test.x"() {a = #pa.paged_mla<page_size = 1, ckv = 0, kpe = 64>} : () -> i32
  return
}

// -----

func.func @case2() {
  // expected-error @+1 {{kpe (D_kpe) must be > 0, got -1}}
  %x = "test.x"() {a = #pa.paged_mla<page_size = 1, ckv = 512, kpe = -1>} : () -> i32
  return
}

// -----

func.func @case3() {
  // expected-error @+1 {{ckv + kpe must be < 2^31, got 2147483647 + 1}}
  %x = "test.x"() {a = #pa.paged_mla<page_size = 1, ckv = 2147483647, kpe = 1>} : () -> i32
  return
}

// -----

func.func @case4(%qn: memref<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs}}
  pa.mla_decode q(%qn, %qp : memref<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case5(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x1x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{MLA cache must have rank 3 ([num_pages, P, D_ckv + D_kpe]), got 'tensor<?x1x16x80xf16>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x1x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case6(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x8x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{MLA cache dim 1 is 8 but #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16> needs 16 ([num_pages, P, D_ckv + D_kpe])}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x8x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case7(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x64xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{MLA cache dim 2 is 64 but #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16> needs 80}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x64xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case8(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf8E4M3FN>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{MLA cache element type must be f16, bf16 or f32, got 'f8E4M3FN'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf8E4M3FN>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case9(%qn: tensor<4x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'q_nope' must have rank 3 ([B, H, D_ckv]), got 'tensor<4x64xf16>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case10(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x1x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'q_pe' must have rank 3 ([B, H, D_kpe]), got 'tensor<4x16x1x16xf16>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x1x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case11(%qn: tensor<4x16x64xbf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'q_nope' element type 'bf16' does not match the MLA cache's 'f16'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xbf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case12(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf32>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'q_pe' element type 'f32' does not match the MLA cache's 'f16'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf32>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case13(%qn: tensor<4x16x32xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x32xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'q_nope' dim 2 is 32 but #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16> needs D_ckv = 64}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x32xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x32xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case14(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x8xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'q_pe' dim 2 is 8 but #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16> needs D_kpe = 16}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x8xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case15(%qn: tensor<4x16x64xf16>, %qp: tensor<3x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{batch mismatch: 'q_pe' dim 0 gives 3 but q_nope dim 0 gives 4}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<3x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case16(%qn: tensor<4x16x64xf16>, %qp: tensor<4x8x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{H mismatch: 'q_pe' dim 1 gives 8 but q_nope dim 1 gives 16}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x8x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case17(%qn: tensor<4x0x64xf16>, %qp: tensor<4x0x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x0x64xf16>, %l: tensor<4x0xf32>) {
  // expected-error @+1 {{the number of heads (H) must be > 0, but 'q_nope' dim 1 is 0}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x0x64xf16>, tensor<4x0x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x0x64xf16>, tensor<4x0xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case18(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{expects 2 outs (o, lse), got 1}}
  %r = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o : tensor<4x16x64xf16>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case19(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x80xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{o must have q_nope's shape [B, H, D_ckv] and element type (o: 'tensor<4x16x80xf16>', q_nope: 'tensor<4x16x64xf16>')}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x80xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case20(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf32>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{o must have q_nope's shape [B, H, D_ckv] and element type (o: 'tensor<4x16x64xf32>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf32>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case21(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf16>) {
  // expected-error @+1 {{lse must be a 2-D f32 array [B, H], got 'tensor<4x16xf16>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf16>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case22(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<64xf32>) {
  // expected-error @+1 {{lse must be a 2-D f32 array [B, H], got 'tensor<64xf32>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<64xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case23(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<3x16xf32>) {
  // expected-error @+1 {{batch mismatch: 'lse' dim 0 gives 3 but q_nope dim 0 gives 4}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<3x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case24(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x8xf32>) {
  // expected-error @+1 {{H mismatch: 'lse' dim 1 gives 8 but q_nope dim 1 gives 16}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x8xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case25(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi64>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'kv_indptr' must be a 1-D array of i32, got 'tensor<5xi64>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi64>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case26(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?x2xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'kv_indices' must be a 1-D array of i32, got 'tensor<?x2xi32>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?x2xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case27(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xf32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{'kv_last_page_len' must be a 1-D array of i32, got 'tensor<4xf32>'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xf32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case28(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<6xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{batch mismatch: 'kv_indptr' dim 0 gives 5 but q_nope dim 0 gives 4}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<6xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case29(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<3xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{batch mismatch: 'kv_last_page_len' dim 0 gives 3 but q_nope dim 0 gives 4}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<3xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case30(%qn: tensor<?x16x64xf16>, %qp: tensor<?x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<0xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<?x16x64xf16>, %l: tensor<?x16xf32>) {
  // expected-error @+1 {{'kv_indptr' must have at least one entry}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<?x16x64xf16>, tensor<?x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<0xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x16x64xf16>, tensor<?x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.250000e-01 : f32}
  return
}

// -----

func.func @case31(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{sm_scale must be finite and non-zero}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 0.0 : f32}
  return
}

// -----

func.func @case32(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{sm_scale must be finite and non-zero}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 0x7F800000 : f32}
  return
}

// -----

func.func @case33(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{requires attribute 'sm_scale'}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>}
  return
}

// -----

func.func @case34(%qn: tensor<4x16x64xf16>, %qp: tensor<4x16x16xf16>, %kv: tensor<?x16x80xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x64xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{logits_soft_cap must be > 0}}
  %r:2 = pa.mla_decode q(%qn, %qp : tensor<4x16x64xf16>, tensor<4x16x16xf16>) kv(%kv : tensor<?x16x80xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x64xf16>, tensor<4x16xf32>) {cache = #pa.paged_mla<page_size = 16, ckv = 64, kpe = 16>, sm_scale = 1.0 : f32, logits_soft_cap = -1.0 : f32}
  return
}
