// RUN: pa-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

// One case per invariant the pa verifiers check (keep one
// expected-error per function).

func.func @case0() {
  // expected-error @+1 {{page_size must be > 0, got 0}}
  %x = "test.x"() {a = #pa.paged_kv<nhd, page_size = 0, kv_heads = 8, head_dim = 128>} : () -> i32
  return
}

// -----

func.func @case1() {
  // expected-error @+1 {{kv_heads must be > 0, got 0}}
  %x = "test.x"() {a = #pa.paged_kv<nhd, page_size = 16, kv_heads = 0, head_dim = 128>} : () -> i32
  return
}

// -----

func.func @case2() {
  // expected-error @+1 {{head_dim must be > 0, got -1}}
  %x = "test.x"() {a = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = -1>} : () -> i32
  return
}

// -----

func.func @case3(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kv1: tensor<?x2x16x8x128xf16>, %kv2: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{expects 1 (joint K/V) or 2 (split K and V) cache operands, got 3}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1, %kv2 : tensor<?x2x16x8x128xf16>, tensor<?x2x16x8x128xf16>, tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case4(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{kv cache must have rank 5 ([num_pages, 2, P, Hkv, D] for nhd)}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case5(%q: tensor<4x32x128xf16>, %kv0: tensor<?x3x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{kv cache dim 1 is 3 but the nhd layout}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x3x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case6(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x8x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{kv cache dim 2 is 8 but the nhd layout}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x8x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case7(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x4x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{kv cache dim 3 is 4 but the nhd layout}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x4x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case8(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x64xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{kv cache dim 4 is 64 but the nhd layout}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x64xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case9(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{kv cache dim 2 is 16 but the hnd layout}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<hnd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case10(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<?x16x8x128xbf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{k cache and v cache must have the same type}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xbf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case11(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %kv1: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{k cache must have rank 4 ([num_pages, P, Hkv, D] for nhd)}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x2x16x8x128xf16>, tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case12(%q: tensor<4x32x128xf16>, %kv0: tensor<?x16x8x128xf16>, %kv1: tensor<4x16x8x128xbf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{k cache and v cache must have the same type}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0, %kv1 : tensor<?x16x8x128xf16>, tensor<4x16x8x128xbf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case13(%q: tensor<4x32x128xi32>, %kv0: tensor<?x2x16x8x128xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xi32>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{cache element type must be f16, bf16, f32, f8E4M3FN or f8E5M2, got 'i32'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xi32>) kv(%kv0 : tensor<?x2x16x8x128xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xi32>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case14(%q: tensor<4x32x128xbf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xbf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{q element type 'bf16' does not match the cache's 'f16'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xbf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xbf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case15(%q: tensor<4x32x128xf64>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf64>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{q element type must be f16, bf16 or f32, got 'f64'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf64>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf64>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case16(%q: tensor<4x32xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'q' must have rank 3 ([tokens, Hq, D])}}
  %r:2 = pa.decode q(%q : tensor<4x32xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case17(%q: tensor<4x32x64xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x64xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{q head dim 64 does not match the cache's head_dim = 128}}
  %r:2 = pa.decode q(%q : tensor<4x32x64xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x64xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case18(%q: tensor<4x12x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x12x128xf16>, %l: tensor<4x12xf32>) {
  // expected-error @+1 {{number of query heads (12) must be a multiple of kv_heads (8)}}
  %r:2 = pa.decode q(%q : tensor<4x12x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x12x128xf16>, tensor<4x12xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case19(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf32>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{o must have q's shape and element type}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf32>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case20(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x16x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{o must have q's shape and element type}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x16x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case21(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf16>) {
  // expected-error @+1 {{lse must be a 2-D f32 array [tokens, Hq]}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case22(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{Hq mismatch: 'lse' dim 1 gives 16 but q dim 1 gives 32}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x16xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case23(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<3x32xf32>) {
  // expected-error @+1 {{tokens mismatch: 'lse' dim 0 gives 3 but q dim 0 gives 4}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<3x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case24(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi64>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'kv_indptr' must be a 1-D array of i32}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi64>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case25(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<2x3xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'kv_indices' must be a 1-D array of i32}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<2x3xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case26(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xf32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'kv_last_page_len' must be a 1-D array of i32}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xf32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case27(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<6xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{batch mismatch: 'kv_last_page_len' dim 0 gives 4 but kv_indptr dim 0 gives 5}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<6xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case28(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<0xi32>, %ix: tensor<?xi32>, %lp: tensor<?xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'kv_indptr' must have at least one entry}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<0xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case29(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<4xi32>, %ix: tensor<?xi32>, %lp: tensor<3xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{decode has one query per request: q has 4 rows but the page table has 3 requests}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<4xi32>, tensor<?xi32>, tensor<3xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case30(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>, %al: tensor<16xf32>) {
  // expected-error @+1 {{Hq mismatch: 'alibi_slopes' dim 0 gives 16}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) alibi(%al : tensor<16xf32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case31(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>, %al: tensor<32xf16>) {
  // expected-error @+1 {{'alibi_slopes' must be a 1-D f32 array [Hq]}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) alibi(%al : tensor<32xf16>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case32(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{sm_scale must be finite and non-zero}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, sm_scale = 0.0 : f32}
  return
}

// -----

func.func @case33(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{logits_soft_cap must be > 0}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, logits_soft_cap = -1.0 : f32}
  return
}

// -----

func.func @case34(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{logits_soft_cap must be > 0}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, logits_soft_cap = 0.0 : f32}
  return
}

// -----

func.func @case35(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{window must be > 0, got 0}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, window = 0}
  return
}

// -----

func.func @case36(%q: tensor<4x32x128xf16>, %kv0: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: memref<4x32x128xf16>, %l: memref<4x32xf32>) {
  // expected-error @+1 {{operands must be all tensors or all memrefs}}
  pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv0 : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : memref<4x32x128xf16>, memref<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case37(%q: tensor<?x32x128xf16>, %qo: tensor<3xi64>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{'qo_indptr' must be a 1-D array of i32}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi64>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case38(%q: tensor<?x32x128xf16>, %qo: tensor<4xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{batch mismatch: 'kv_indptr' dim 0 gives 2 but qo_indptr dim 0 gives 3}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<4xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case39(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>, %pos: tensor<?xi64>) {
  // expected-error @+1 {{'q_positions' must be a 1-D array of i32}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) positions(%pos : tensor<?xi64>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case40(%q: tensor<7x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<8x32x128xf16>, %l: tensor<?x32xf32>, %pos: tensor<6xi32>) {
  // expected-error @+1 {{o must have q's shape}}
  %r:2 = pa.prefill q(%q, %qo : tensor<7x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) positions(%pos : tensor<6xi32>) outs(%o, %l : tensor<8x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case41(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>, %m: tensor<?xi32>, %mi: tensor<3xi32>) {
  // expected-error @+1 {{'custom_mask' must be a 1-D array of packed bytes (i8 or ui8)}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) mask(%m, %mi : tensor<?xi32>, tensor<3xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case42(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>, %m: tensor<?xi8>, %mi: tensor<4xi32>) {
  // expected-error @+1 {{batch mismatch: 'mask_indptr' dim 0 gives 3}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) mask(%m, %mi : tensor<?xi8>, tensor<4xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case43(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>, %m: tensor<?xi8>, %mi: tensor<3xi32>) {
  // expected-error @+1 {{a custom mask and 'causal' exclude each other}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) mask(%m, %mi : tensor<?xi8>, tensor<3xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @case44(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>, %m: tensor<?xi8>, %mi: tensor<3xi32>) {
  // expected-error @+1 {{a custom mask and 'window' exclude each other}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) mask(%m, %mi : tensor<?xi8>, tensor<3xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, window = 4}
  return
}

// -----

func.func @case45(%q: tensor<7x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %pos: tensor<6xi32>, %o: tensor<7x32x128xf16>, %l: tensor<7x32xf32>) {
  // expected-error @+1 {{tokens mismatch: 'q_positions' dim 0 gives 6 but q dim 0 gives 7}}
  %r:2 = pa.prefill q(%q, %qo : tensor<7x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) positions(%pos : tensor<6xi32>) outs(%o, %l : tensor<7x32x128xf16>, tensor<7x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case46(%q: tensor<?x32x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %m: tensor<?xi8>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{a custom mask needs both the packed mask and mask_indptr}}
  %r:2 = "pa.prefill"(%q, %qo, %kv, %ip, %ix, %lp, %m, %o, %l) <{cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 2>}> : (tensor<?x32x128xf16>, tensor<3xi32>, tensor<?x2x16x8x128xf16>, tensor<3xi32>, tensor<?xi32>, tensor<2xi32>, tensor<?xi8>, tensor<?x32x128xf16>, tensor<?x32xf32>) -> (tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}

// -----

func.func @case47(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) {
  // expected-error @+1 {{cascade needs at least one level}}
  %r:2 = "pa.cascade"(%q, %kv, %o, %l) <{cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 2>}> : (tensor<8x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<8x32x128xf16>, tensor<8x32xf32>) -> (tensor<8x32x128xf16>, tensor<8x32xf32>)
  return
}

// -----

func.func @case48(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<9xi32>, %p0: tensor<2xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %lp0: tensor<1xi32>, %lp1: tensor<8xi32>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) {
  // expected-error @+1 {{every level needs a qo_indptr and a page table: got 2 qo_indptrs, 1 kv_indptrs, 2 kv_indices, 2 kv_last_page_lens}}
  %r:2 = "pa.cascade"(%q, %kv, %qo0, %qo1, %p0, %i0, %i1, %lp0, %lp1, %o, %l) <{cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 2, 1, 2, 2, 0, 2>}> : (tensor<8x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<2xi32>, tensor<9xi32>, tensor<2xi32>, tensor<?xi32>, tensor<?xi32>, tensor<1xi32>, tensor<8xi32>, tensor<8x32x128xf16>, tensor<8x32xf32>) -> (tensor<8x32x128xf16>, tensor<8x32xf32>)
  return
}

// -----

func.func @case49(%q: tensor<8x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %qo0: tensor<2xi32>, %qo1: tensor<8xi32>, %p0: tensor<2xi32>, %p1: tensor<9xi32>, %i0: tensor<?xi32>, %i1: tensor<?xi32>, %lp0: tensor<1xi32>, %lp1: tensor<8xi32>, %o: tensor<8x32x128xf16>, %l: tensor<8x32xf32>) {
  // expected-error @+1 {{batch of level 1 mismatch: 'kv_indptr[1]' dim 0 gives 8 but qo_indptrs[1] dim 0 gives 7}}
  %r:2 = "pa.cascade"(%q, %kv, %qo0, %qo1, %p0, %p1, %i0, %i1, %lp0, %lp1, %o, %l) <{cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 2, 2, 2, 2, 0, 2>}> : (tensor<8x32x128xf16>, tensor<?x2x16x8x128xf16>, tensor<2xi32>, tensor<8xi32>, tensor<2xi32>, tensor<9xi32>, tensor<?xi32>, tensor<?xi32>, tensor<1xi32>, tensor<8xi32>, tensor<8x32x128xf16>, tensor<8x32xf32>) -> (tensor<8x32x128xf16>, tensor<8x32xf32>)
  return
}

// -----

func.func @case50(%s0: tensor<4x32x128xf16>, %s1: tensor<4x32xf32>, %s2: tensor<4x32x128xf16>, %o0: tensor<4x32x128xf16>, %o1: tensor<4x32xf32>) {
  // expected-error @+1 {{states must be a non-empty list of (o, lse) pairs, got 3 values}}
  %r:2 = pa.merge states(%s0, %s1, %s2 : tensor<4x32x128xf16>, tensor<4x32xf32>, tensor<4x32x128xf16>) outs(%o0, %o1 : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @case51(%s0: tensor<4x32x128xf16>, %s1: tensor<4x32xf32>, %o0: tensor<4x32x128xf16>) {
  // expected-error @+1 {{expects 2 outs (o, lse), got 1}}
  %r = pa.merge states(%s0, %s1 : tensor<4x32x128xf16>, tensor<4x32xf32>) outs(%o0 : tensor<4x32x128xf16>)
  return
}

// -----

func.func @case52(%s0: tensor<4x32x128xi32>, %s1: tensor<4x32xf32>, %o0: tensor<4x32x128xi32>, %o1: tensor<4x32xf32>) {
  // expected-error @+1 {{o must have a float element type}}
  %r:2 = pa.merge states(%s0, %s1 : tensor<4x32x128xi32>, tensor<4x32xf32>) outs(%o0, %o1 : tensor<4x32x128xi32>, tensor<4x32xf32>)
  return
}

// -----

func.func @case53(%s0: tensor<4x32x128xf16>, %s1: tensor<4x32xf16>, %o0: tensor<4x32x128xf16>, %o1: tensor<4x32xf16>) {
  // expected-error @+1 {{lse must be f32, got 'f16'}}
  %r:2 = pa.merge states(%s0, %s1 : tensor<4x32x128xf16>, tensor<4x32xf16>) outs(%o0, %o1 : tensor<4x32x128xf16>, tensor<4x32xf16>)
  return
}

// -----

func.func @case54(%s0: tensor<4x32x128xf16>, %s1: tensor<4x16xf32>, %o0: tensor<4x32x128xf16>, %o1: tensor<4x16xf32>) {
  // expected-error @+1 {{o must be lse's shape plus a head dim}}
  %r:2 = pa.merge states(%s0, %s1 : tensor<4x32x128xf16>, tensor<4x16xf32>) outs(%o0, %o1 : tensor<4x32x128xf16>, tensor<4x16xf32>)
  return
}

// -----

// A state's o may have another float type (f32 partial states merged into
// an f16 out), not another shape or a non-float type.
func.func @case55(%s0: tensor<4x32x128xf16>, %s1: tensor<4x32xf32>, %s2: tensor<4x32x128xi16>, %s3: tensor<4x32xf32>, %o0: tensor<4x32x128xf16>, %o1: tensor<4x32xf32>) {
  // expected-error @+1 {{state 1: o must have the shape of the o out and a float element type}}
  %r:2 = pa.merge states(%s0, %s1, %s2, %s3 : tensor<4x32x128xf16>, tensor<4x32xf32>, tensor<4x32x128xi16>, tensor<4x32xf32>) outs(%o0, %o1 : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @case56(%s0: tensor<4x32x128xf16>, %s1: tensor<4x32xf32>, %s2: tensor<4x32x128xf16>, %s3: tensor<4x31xf32>, %o0: tensor<4x32x128xf16>, %o1: tensor<4x32xf32>) {
  // expected-error @+1 {{state 1: lse must have the shape of the lse out and be f32}}
  %r:2 = pa.merge states(%s0, %s1, %s2, %s3 : tensor<4x32x128xf16>, tensor<4x32xf32>, tensor<4x32x128xf16>, tensor<4x31xf32>) outs(%o0, %o1 : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @case57(%v: tensor<?x32x128xf32>, %s: tensor<?x4x32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{'o_states' must have rank 4 ([rows, states, H, D])}}
  %r:2 = pa.merge_states states(%v, %s : tensor<?x32x128xf32>, tensor<?x4x32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}

// -----

func.func @case58(%v: tensor<?x4x32x128xf32>, %s: tensor<?x4x32xf16>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{lse_states and lse must be f32}}
  %r:2 = pa.merge_states states(%v, %s : tensor<?x4x32x128xf32>, tensor<?x4x32xf16>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}

// -----

func.func @case59(%v: tensor<?x4x32x128xi8>, %s: tensor<?x4x32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{o_states and o must have float element types}}
  %r:2 = pa.merge_states states(%v, %s : tensor<?x4x32x128xi8>, tensor<?x4x32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}

// -----

func.func @case60(%v: tensor<?x4x32x128xf32>, %s: tensor<?x3x32xf32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{states mismatch: 'lse_states' dim 1 gives 3 but o_states dim 1 gives 4}}
  %r:2 = pa.merge_states states(%v, %s : tensor<?x4x32x128xf32>, tensor<?x3x32xf32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>)
  return
}

// -----

func.func @case61(%v: tensor<?x4x32x128xf32>, %s: tensor<?x4x32xf32>, %o: tensor<?x32x64xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{D mismatch: 'o' dim 2 gives 64 but o_states dim 3 gives 128}}
  %r:2 = pa.merge_states states(%v, %s : tensor<?x4x32x128xf32>, tensor<?x4x32xf32>) outs(%o, %l : tensor<?x32x64xf16>, tensor<?x32xf32>)
  return
}

// -----

func.func @case62(%v: tensor<5x4x32x128xf32>, %s: tensor<5x4x32xf32>, %o: tensor<6x32x128xf16>, %l: tensor<6x32xf32>) {
  // expected-error @+1 {{rows mismatch: 'o' dim 0 gives 6 but o_states dim 0 gives 5}}
  %r:2 = pa.merge_states states(%v, %s : tensor<5x4x32x128xf32>, tensor<5x4x32xf32>) outs(%o, %l : tensor<6x32x128xf16>, tensor<6x32xf32>)
  return
}

// -----

func.func @case63(%kn: tensor<?x128xf16>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %c0: tensor<?x16x8x128xf16>, %c1: tensor<?x16x8x128xf16>) {
  // expected-error @+1 {{'k_new' must have rank 3 ([tokens, Hkv, D])}}
  %r:2 = pa.append_kv new(%kn, %vn, %ai : tensor<?x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%c0, %c1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case64(%kn: tensor<?x8x128xf16>, %vn: tensor<?x4x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %c0: tensor<?x16x8x128xf16>, %c1: tensor<?x16x8x128xf16>) {
  // expected-error @+1 {{'v_new' has 4 heads but the cache has kv_heads = 8}}
  %r:2 = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf16>, tensor<?x4x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%c0, %c1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case65(%kn: tensor<?x8x64xf16>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %c0: tensor<?x16x8x128xf16>, %c1: tensor<?x16x8x128xf16>) {
  // expected-error @+1 {{'k_new' head dim 64 does not match the cache's head_dim = 128}}
  %r:2 = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x64xf16>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%c0, %c1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case66(%kn: tensor<?x8x128xf32>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %c0: tensor<?x16x8x128xf16>, %c1: tensor<?x16x8x128xf16>) {
  // expected-error @+1 {{'k_new' element type 'f32' does not match the cache's 'f16'}}
  %r:2 = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf32>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%c0, %c1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case67(%kn: tensor<3x8x128xf16>, %vn: tensor<4x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %c0: tensor<?x16x8x128xf16>, %c1: tensor<?x16x8x128xf16>) {
  // expected-error @+1 {{rows mismatch: 'v_new' dim 0 gives 4 but k_new dim 0 gives 3}}
  %r:2 = pa.append_kv new(%kn, %vn, %ai : tensor<3x8x128xf16>, tensor<4x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%c0, %c1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case68(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ai: tensor<6xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %c0: tensor<?x16x8x128xf16>, %c1: tensor<?x16x8x128xf16>) {
  // expected-error @+1 {{batch mismatch: 'kv_indptr' dim 0 gives 4 but append_indptr dim 0 gives 5}}
  %r:2 = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<6xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%c0, %c1 : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case69(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %c0: tensor<?x16x8x128xf16>) {
  // expected-error @+1 {{kv cache must have rank 5}}
  %r = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%c0 : tensor<?x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case70(%kn: tensor<3x8x128xf16>, %vn: tensor<3x8x128xf16>, %s: tensor<4xi32>, %kv: tensor<?x2x16x8x128xf16>) {
  // expected-error @+1 {{rows mismatch: 'slot_mapping' dim 0 gives 4 but k_new dim 0 gives 3}}
  %r = pa.append_kv_slots new(%kn, %vn : tensor<3x8x128xf16>, tensor<3x8x128xf16>) slots(%s : tensor<4xi32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case71(%kn: tensor<3x8x128xf16>, %vn: tensor<3x8x128xf16>, %s: tensor<3xi64>, %kv: tensor<?x2x16x8x128xf16>) {
  // expected-error @+1 {{'slot_mapping' must be a 1-D array of i32}}
  %r = pa.append_kv_slots new(%kn, %vn : tensor<3x8x128xf16>, tensor<3x8x128xf16>) slots(%s : tensor<3xi64>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case72(%kr: tensor<5x8x128xf16>, %vr: tensor<5x8x128xf16>, %ri: tensor<3xi32>, %pos: tensor<4xi32>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %kv: tensor<?x2x16x8x128xf16>) {
  // expected-error @+1 {{rows mismatch: 'positions' dim 0 gives 4 but k_rows dim 0 gives 5}}
  %r = pa.scatter_kv new(%kr, %vr, %ri : tensor<5x8x128xf16>, tensor<5x8x128xf16>, tensor<3xi32>) positions(%pos : tensor<4xi32>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case73(%kr: tensor<5x8x128xf16>, %vr: tensor<5x8x128xf16>, %ri: tensor<4xi32>, %pos: tensor<?xi32>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %kv: tensor<?x2x16x8x128xf16>) {
  // expected-error @+1 {{batch mismatch: 'kv_indptr' dim 0 gives 2 but rows_indptr dim 0 gives 3}}
  %r = pa.scatter_kv new(%kr, %vr, %ri : tensor<5x8x128xf16>, tensor<5x8x128xf16>, tensor<4xi32>) positions(%pos : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @case74(%m: tensor<?xf32>, %i: tensor<3xi32>, %p0: tensor<?xi8>, %p1: tensor<3xi32>) {
  // expected-error @+1 {{'mask' must be a 1-D array of i1 or i8}}
  %r:2 = pa.pack_mask mask(%m, %i : tensor<?xf32>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi8>, tensor<3xi32>)
  return
}

// -----

func.func @case75(%m: tensor<?xi1>, %i: tensor<3xi32>, %p0: tensor<?xi8>) {
  // expected-error @+1 {{expects 2 outs (packed, packed_indptr), got 1}}
  %r = pa.pack_mask mask(%m, %i : tensor<?xi1>, tensor<3xi32>) outs(%p0 : tensor<?xi8>)
  return
}

// -----

func.func @case76(%m: tensor<?xi1>, %i: tensor<3xi32>, %p0: tensor<?xi32>, %p1: tensor<3xi32>) {
  // expected-error @+1 {{'packed' must be a 1-D array of i8}}
  %r:2 = pa.pack_mask mask(%m, %i : tensor<?xi1>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi32>, tensor<3xi32>)
  return
}

// -----

func.func @case77(%m: tensor<?xi1>, %i: tensor<3xi32>, %p0: tensor<?xi8>, %p1: tensor<4xi32>) {
  // expected-error @+1 {{batch mismatch: 'packed_indptr' dim 0 gives 3 but indptr dim 0 gives 2}}
  %r:2 = pa.pack_mask mask(%m, %i : tensor<?xi1>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi8>, tensor<4xi32>)
  return
}

// -----

func.func @case78(%n: tensor<?x128xf16>, %c: tensor<?x8x128xf16>, %d: tensor<?xf32>) {
  // expected-error @+1 {{'new_rows' must have rank 3 ([tokens, H, D])}}
  %r = pa.kv_deviation ins(%n, %c : tensor<?x128xf16>, tensor<?x8x128xf16>) outs(%d : tensor<?xf32>)
  return
}

// -----

func.func @case79(%n: tensor<?x8x128xf16>, %c: tensor<?x8x128xbf16>, %d: tensor<?xf32>) {
  // expected-error @+1 {{new_rows and cached_rows must have the same float element type}}
  %r = pa.kv_deviation ins(%n, %c : tensor<?x8x128xf16>, tensor<?x8x128xbf16>) outs(%d : tensor<?xf32>)
  return
}

// -----

func.func @case80(%n: tensor<?x8x128xf16>, %c: tensor<?x4x128xf16>, %d: tensor<?xf32>) {
  // expected-error @+1 {{H mismatch: 'cached_rows' dim 1 gives 4 but new_rows dim 1 gives 8}}
  %r = pa.kv_deviation ins(%n, %c : tensor<?x8x128xf16>, tensor<?x4x128xf16>) outs(%d : tensor<?xf32>)
  return
}

// -----

func.func @case81(%n: tensor<?x8x128xf16>, %c: tensor<?x8x128xf16>, %d: tensor<?xf16>) {
  // expected-error @+1 {{'deviation' must be a 1-D f32 array [tokens]}}
  %r = pa.kv_deviation ins(%n, %c : tensor<?x8x128xf16>, tensor<?x8x128xf16>) outs(%d : tensor<?xf16>)
  return
}

// -----

func.func @case82(%n: tensor<6x8x128xf16>, %c: tensor<?x8x128xf16>, %d: tensor<5xf32>) {
  // expected-error @+1 {{tokens mismatch: 'deviation' dim 0 gives 5 but new_rows dim 0 gives 6}}
  %r = pa.kv_deviation ins(%n, %c : tensor<6x8x128xf16>, tensor<?x8x128xf16>) outs(%d : tensor<5xf32>)
  return
}

// -----

func.func @case83(%d: tensor<?xf32>, %i: tensor<3xi32>, %p0: tensor<?xi32>, %p1: tensor<3xi32>) {
  // expected-error @+1 {{ratio must be in (0, 1], got 0}}
  %r:2 = pa.select_topk ins(%d, %i : tensor<?xf32>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi32>, tensor<3xi32>) {ratio = 0.0 : f64}
  return
}

// -----

func.func @case84(%d: tensor<?xf32>, %i: tensor<3xi32>, %p0: tensor<?xi32>, %p1: tensor<3xi32>) {
  // expected-error @+1 {{ratio must be in (0, 1], got 1.5}}
  %r:2 = pa.select_topk ins(%d, %i : tensor<?xf32>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi32>, tensor<3xi32>) {ratio = 1.5 : f64}
  return
}

// -----

func.func @case85(%d: tensor<?xf16>, %i: tensor<3xi32>, %p0: tensor<?xi32>, %p1: tensor<3xi32>) {
  // expected-error @+1 {{'deviation' must be a 1-D f32 array}}
  %r:2 = pa.select_topk ins(%d, %i : tensor<?xf16>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi32>, tensor<3xi32>) {ratio = 0.5 : f64}
  return
}

// -----

func.func @case86(%d: tensor<?xf32>, %i: tensor<3xi32>, %p0: tensor<?xi32>) {
  // expected-error @+1 {{expects 2 outs (positions, out_indptr), got 1}}
  %r = pa.select_topk ins(%d, %i : tensor<?xf32>, tensor<3xi32>) outs(%p0 : tensor<?xi32>) {ratio = 0.5 : f64}
  return
}

// -----

func.func @case87(%d: tensor<?xf32>, %i: tensor<3xi32>, %p0: tensor<?xi64>, %p1: tensor<3xi32>) {
  // expected-error @+1 {{'positions' must be a 1-D array of i32}}
  %r:2 = pa.select_topk ins(%d, %i : tensor<?xf32>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi64>, tensor<3xi32>) {ratio = 0.5 : f64}
  return
}

// -----

func.func @case88(%d: tensor<?xf32>, %i: tensor<3xi32>, %p0: tensor<?xi32>, %p1: tensor<4xi32>) {
  // expected-error @+1 {{batch mismatch: 'out_indptr' dim 0 gives 3 but indptr dim 0 gives 2}}
  %r:2 = pa.select_topk ins(%d, %i : tensor<?xf32>, tensor<3xi32>) outs(%p0, %p1 : tensor<?xi32>, tensor<4xi32>) {ratio = 0.5 : f64}
  return
}

// -----

func.func @plan_chunk(%ip: tensor<5xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<?xi32>, %d: tensor<?xi32>) {
  // expected-error @+1 {{chunk_size must be > 0, got 0}}
  %w:4 = pa.plan_split_kv pages(%ip, %lp : tensor<5xi32>, tensor<4xi32>) outs(%a, %b, %c, %d : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {chunk_size = 0 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @plan_page(%ip: tensor<5xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<?xi32>, %d: tensor<?xi32>) {
  // expected-error @+1 {{page_size must be > 0, got 0}}
  %w:4 = pa.plan_split_kv pages(%ip, %lp : tensor<5xi32>, tensor<4xi32>) outs(%a, %b, %c, %d : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {chunk_size = 64 : i64, page_size = 0 : i64}
  return
}

// -----

func.func @plan_outs(%ip: tensor<5xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<?xi32>) {
  // expected-error @+1 {{expects 4 outs (work_indptr, work_request, work_start, work_end), got 3}}
  %w:3 = pa.plan_split_kv pages(%ip, %lp : tensor<5xi32>, tensor<4xi32>) outs(%a, %b, %c : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>) {chunk_size = 64 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @plan_batch(%ip: tensor<5xi32>, %lp: tensor<4xi32>, %a: tensor<6xi32>, %b: tensor<?xi32>, %c: tensor<?xi32>, %d: tensor<?xi32>) {
  // expected-error @+1 {{batch mismatch: 'work_indptr' dim 0 gives 5 but kv_indptr dim 0 gives 4}}
  %w:4 = pa.plan_split_kv pages(%ip, %lp : tensor<5xi32>, tensor<4xi32>) outs(%a, %b, %c, %d : tensor<6xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {chunk_size = 64 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @plan_items(%ip: tensor<5xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<7xi32>, %c: tensor<8xi32>, %d: tensor<?xi32>) {
  // expected-error @+1 {{work items mismatch: 'work_start' dim 0 gives 8 but work_request dim 0 gives 7}}
  %w:4 = pa.plan_split_kv pages(%ip, %lp : tensor<5xi32>, tensor<4xi32>) outs(%a, %b, %c, %d : tensor<5xi32>, tensor<7xi32>, tensor<8xi32>, tensor<?xi32>) {chunk_size = 64 : i64, page_size = 16 : i64}
  return
}

// -----

#nhd2 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @partial_f16(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<5xi32>, %wr: tensor<?xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %po: tensor<?x32x128xf16>, %pl: tensor<?x32xf32>) {
  // expected-error @+1 {{o_part and lse_part must be f32}}
  %p:2 = pa.decode_partial q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%po, %pl : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #nhd2}
  return
}

// -----

#nhd3 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @partial_items(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<5xi32>, %wr: tensor<9xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %po: tensor<8x32x128xf32>, %pl: tensor<8x32xf32>) {
  // expected-error @+1 {{work items mismatch: 'work_request' dim 0 gives 9 but o_part dim 0 gives 8}}
  %p:2 = pa.decode_partial q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<9xi32>, tensor<?xi32>, tensor<?xi32>) outs(%po, %pl : tensor<8x32x128xf32>, tensor<8x32xf32>) {cache = #nhd3}
  return
}

// -----

#nhd4 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @partial_heads(%q: tensor<4x12x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<5xi32>, %wr: tensor<?xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %po: tensor<?x12x128xf32>, %pl: tensor<?x12xf32>) {
  // expected-error @+1 {{number of query heads (12) must be a multiple of kv_heads (8)}}
  %p:2 = pa.decode_partial q(%q : tensor<4x12x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%po, %pl : tensor<?x12x128xf32>, tensor<?x12xf32>) {cache = #nhd4}
  return
}

// -----

#nhd5 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @partial_batch(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<6xi32>, %wr: tensor<?xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %po: tensor<?x32x128xf32>, %pl: tensor<?x32xf32>) {
  // expected-error @+1 {{batch mismatch: 'work_indptr' dim 0 gives 5 but q dim 0 gives 4}}
  %p:2 = pa.decode_partial q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<6xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%po, %pl : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #nhd5}
  return
}

// -----

#nhd6 = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
func.func @partial_window(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<5xi32>, %wr: tensor<?xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %po: tensor<?x32x128xf32>, %pl: tensor<?x32xf32>) {
  // expected-error @+1 {{window must be > 0, got -2}}
  %p:2 = pa.decode_partial q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%po, %pl : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #nhd6, window = -2}
  return
}

// -----

func.func @segments_rank(%po: tensor<?x32xf32>, %pl: tensor<?x32xf32>, %s: tensor<5xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'o_part' must have rank 3 ([items, H, D])}}
  %r:2 = pa.merge_segments states(%po, %pl : tensor<?x32xf32>, tensor<?x32xf32>) segments(%s : tensor<5xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @segments_lse(%po: tensor<?x32x128xf32>, %pl: tensor<?x32xf16>, %s: tensor<5xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{lse_part and lse must be f32}}
  %r:2 = pa.merge_segments states(%po, %pl : tensor<?x32x128xf32>, tensor<?x32xf16>) segments(%s : tensor<5xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @segments_count(%po: tensor<?x32x128xf32>, %pl: tensor<?x32xf32>, %s: tensor<6xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{segments mismatch: 'o' dim 0 gives 4 but segments dim 0 gives 5}}
  %r:2 = pa.merge_segments states(%po, %pl : tensor<?x32x128xf32>, tensor<?x32xf32>) segments(%s : tensor<6xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @segments_dim(%po: tensor<?x32x64xf32>, %pl: tensor<?x32xf32>, %s: tensor<5xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{D mismatch: 'o' dim 2 gives 128 but o_part dim 2 gives 64}}
  %r:2 = pa.merge_segments states(%po, %pl : tensor<?x32x64xf32>, tensor<?x32xf32>) segments(%s : tensor<5xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

// Zero-sized dims: a batch of 0 requests or 0 tokens is legal (see
// roundtrip.mlir), 0 heads or an empty head dim is not.

func.func @zero_query_heads(%q: tensor<4x0x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x0x128xf16>, %l: tensor<4x0xf32>) {
  // expected-error @+1 {{the number of query heads (Hq) must be > 0, but 'q' dim 1 is 0}}
  %r:2 = pa.decode q(%q : tensor<4x0x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x0x128xf16>, tensor<4x0xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @zero_query_heads_lse(%q: tensor<?x?x128xf16>, %qo: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %o: tensor<?x?x128xf16>, %l: tensor<?x0xf32>) {
  // expected-error @+1 {{the number of query heads (Hq) must be > 0, but 'lse' dim 1 is 0}}
  %r:2 = pa.prefill q(%q, %qo : tensor<?x?x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) outs(%o, %l : tensor<?x?x128xf16>, tensor<?x0xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @zero_query_heads_partial(%q: tensor<4x?x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<5xi32>, %wr: tensor<?xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %o: tensor<?x0x128xf32>, %l: tensor<?x0xf32>) {
  // expected-error @+1 {{the number of query heads (Hq) must be > 0, but 'o_part' dim 1 is 0}}
  %r:2 = pa.decode_partial q(%q : tensor<4x?x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x0x128xf32>, tensor<?x0xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @zero_head_dim_partial(%q: tensor<4x32x?xf16>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %wi: tensor<5xi32>, %wr: tensor<?xi32>, %ws: tensor<?xi32>, %we: tensor<?xi32>, %o: tensor<?x32x0xf32>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{the head dim (D) must be > 0, but 'o_part' dim 2 is 0}}
  %r:2 = pa.decode_partial q(%q : tensor<4x32x?xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x0xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @zero_heads_merge_states(%v: tensor<?x4x0x128xf32>, %s: tensor<?x4x0xf32>, %o: tensor<?x0x128xf16>, %l: tensor<?x0xf32>) {
  // expected-error @+1 {{the number of heads (H) must be > 0, but 'o_states' dim 2 is 0}}
  %r:2 = pa.merge_states states(%v, %s : tensor<?x4x0x128xf32>, tensor<?x4x0xf32>) outs(%o, %l : tensor<?x0x128xf16>, tensor<?x0xf32>)
  return
}

// -----

func.func @zero_head_dim_merge_segments(%po: tensor<?x32x0xf32>, %pl: tensor<?x32xf32>, %s: tensor<5xi32>, %o: tensor<4x32x0xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{the head dim (D) must be > 0, but 'o_part' dim 2 is 0}}
  %r:2 = pa.merge_segments states(%po, %pl : tensor<?x32x0xf32>, tensor<?x32xf32>) segments(%s : tensor<5xi32>) outs(%o, %l : tensor<4x32x0xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @zero_head_dim_merge(%s0: tensor<4x32x0xf16>, %s1: tensor<4x32xf32>, %o0: tensor<4x32x0xf16>, %o1: tensor<4x32xf32>) {
  // expected-error @+1 {{the head dim (D) must be > 0, but 'o' dim 2 is 0}}
  %r:2 = pa.merge states(%s0, %s1 : tensor<4x32x0xf16>, tensor<4x32xf32>) outs(%o0, %o1 : tensor<4x32x0xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @zero_heads_kv_deviation(%n: tensor<?x0x128xf16>, %c: tensor<?x0x128xf16>, %d: tensor<?xf32>) {
  // expected-error @+1 {{the number of heads (H) must be > 0, but 'new_rows' dim 1 is 0}}
  %r = pa.kv_deviation ins(%n, %c : tensor<?x0x128xf16>, tensor<?x0x128xf16>) outs(%d : tensor<?xf32>)
  return
}

// -----

// FP8 KV caches: element types, the scales(%k_scale, %v_scale) operands and
// the rows written into the cache.

func.func @fp8_cache_type(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FNUZ>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{cache element type must be f16, bf16, f32, f8E4M3FN or f8E5M2, got 'f8E4M3FNUZ'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FNUZ>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @fp8_needs_scales(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{an fp8 cache ('f8E4M3FN') needs scales(%k_scale, %v_scale): 1-D f32 arrays of shape [1] (per tensor) or [kv_heads] (per KV head)}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @scales_not_fp8(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{scales(%k_scale, %v_scale) apply only to fp8 caches (f8E4M3FN or f8E5M2), but the cache element type is 'f16'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @k_scale_size(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<4xf32>, %vs: tensor<1xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'k_scale' must be a 1-D f32 array of static shape [1] (per tensor) or [8] (per KV head, kv_heads = 8), got 'tensor<4xf32>'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<4xf32>, tensor<1xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @v_scale_dynamic(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<1xf32>, %vs: tensor<?xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'v_scale' must be a 1-D f32 array of static shape [1] (per tensor) or [8] (per KV head, kv_heads = 8), got 'tensor<?xf32>'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<1xf32>, tensor<?xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @k_scale_f16(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<8xf16>, %vs: tensor<8xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'k_scale' must be a 1-D f32 array of static shape [1] (per tensor) or [8] (per KV head, kv_heads = 8), got 'tensor<8xf16>'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<8xf16>, tensor<8xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @k_scale_rank(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<1x1xf32>, %vs: tensor<1xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{'k_scale' must be a 1-D f32 array of static shape [1] (per tensor) or [8] (per KV head, kv_heads = 8), got 'tensor<1x1xf32>'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<1x1xf32>, tensor<1xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf16>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @fp8_q(%q: tensor<4x32x128xf8E4M3FN>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf8E4M3FN>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{q element type must be f16, bf16 or f32, got 'f8E4M3FN'}}
  %r:2 = pa.decode q(%q : tensor<4x32x128xf8E4M3FN>) kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%o, %l : tensor<4x32x128xf8E4M3FN>, tensor<4x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @one_scale(%q: tensor<4x32x128xf16>, %kv: tensor<?x2x16x8x128xf8E4M3FN>, %ks: tensor<1xf32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %o: tensor<4x32x128xf16>, %l: tensor<4x32xf32>) {
  // expected-error @+1 {{scales need both k_scale and v_scale}}
  %r:2 = "pa.decode"(%q, %kv, %ks, %ip, %ix, %lp, %o, %l) <{cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 0, 2>}> : (tensor<4x32x128xf16>, tensor<?x2x16x8x128xf8E4M3FN>, tensor<1xf32>, tensor<5xi32>, tensor<?xi32>, tensor<4xi32>, tensor<4x32x128xf16>, tensor<4x32xf32>) -> (tensor<4x32x128xf16>, tensor<4x32xf32>)
  return
}

// -----

func.func @append_fp8_rows(%kn: tensor<?x8x128xf8E4M3FN>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %kv: tensor<?x2x16x8x128xf8E4M3FN>) {
  // expected-error @+1 {{'k_new' element type must be f16, bf16 or f32 (rows are quantized into the 'f8E4M3FN' cache), got 'f8E4M3FN'}}
  %r = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf8E4M3FN>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) outs(%kv : tensor<?x2x16x8x128xf8E4M3FN>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @append_fp8_no_scales(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %ai: tensor<5xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %kv: tensor<?x2x16x8x128xf8E5M2>) {
  // expected-error @+1 {{an fp8 cache ('f8E5M2') needs scales(%k_scale, %v_scale)}}
  %r = pa.append_kv new(%kn, %vn, %ai : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%kv : tensor<?x2x16x8x128xf8E5M2>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @slots_scale_size(%kn: tensor<?x8x128xf16>, %vn: tensor<?x8x128xf16>, %sm: tensor<?xi32>, %ks: tensor<1xf32>, %vs: tensor<2xf32>, %kv: tensor<?x2x16x8x128xf8E4M3FN>) {
  // expected-error @+1 {{'v_scale' must be a 1-D f32 array of static shape [1] (per tensor) or [8] (per KV head, kv_heads = 8), got 'tensor<2xf32>'}}
  %r = pa.append_kv_slots new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>) slots(%sm : tensor<?xi32>) scales(%ks, %vs : tensor<1xf32>, tensor<2xf32>) outs(%kv : tensor<?x2x16x8x128xf8E4M3FN>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @scatter_scales_not_fp8(%kr: tensor<?x8x128xf16>, %vr: tensor<?x8x128xf16>, %ri: tensor<5xi32>, %pos: tensor<?xi32>, %ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %ks: tensor<1xf32>, %vs: tensor<1xf32>, %kv: tensor<?x2x16x8x128xf16>) {
  // expected-error @+1 {{scales(%k_scale, %v_scale) apply only to fp8 caches (f8E4M3FN or f8E5M2), but the cache element type is 'f16'}}
  %r = pa.scatter_kv new(%kr, %vr, %ri : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>) positions(%pos : tensor<?xi32>) pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) scales(%ks, %vs : tensor<1xf32>, tensor<1xf32>) outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
  return
}

// -----

func.func @shard_devices(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<4xi32>) {
  // expected-error @+1 {{devices must be >= 1, got 0}}
  %s:3 = pa.shard_pages pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %b, %c : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) {device = 0 : i64, devices = 0 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_device(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<4xi32>) {
  // expected-error @+1 {{device must lie in [0, devices = 2), got 2}}
  %s:3 = pa.shard_pages pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %b, %c : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) {device = 2 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_page(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<4xi32>) {
  // expected-error @+1 {{page_size must be > 0, got 0}}
  %s:3 = pa.shard_pages pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %b, %c : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 0 : i64}
  return
}

// -----

func.func @shard_outs(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>) {
  // expected-error @+1 {{expects 3 outs (the device's kv_indptr, kv_indices, kv_last_page_len), got 2}}
  %s:2 = pa.shard_pages pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %b : tensor<5xi32>, tensor<?xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_batch(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<?xi32>, %c: tensor<3xi32>) {
  // expected-error @+1 {{batch mismatch: 'outs[2] (kv_last_page_len)' dim 0 gives 3 but kv_indptr dim 0 gives 4}}
  %s:3 = pa.shard_pages pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %b, %c : tensor<5xi32>, tensor<?xi32>, tensor<3xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_nnz(%ip: tensor<5xi32>, %ix: tensor<9xi32>, %lp: tensor<4xi32>, %a: tensor<5xi32>, %b: tensor<8xi32>, %c: tensor<4xi32>) {
  // expected-error @+1 {{nnz mismatch: 'outs[1] (kv_indices)' dim 0 gives 8 but kv_indices dim 0 gives 9}}
  %s:3 = pa.shard_pages pages(%ip, %ix, %lp : tensor<5xi32>, tensor<9xi32>, tensor<4xi32>) outs(%a, %b, %c : tensor<5xi32>, tensor<8xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_work_outs(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %qo: tensor<5xi32>, %a: tensor<4xi32>) {
  // expected-error @+1 {{expects 7 outs (the work list of pa.prefill_partial), got 2}}
  %s:2 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) queries(%qo : tensor<5xi32>) outs(%a, %a : tensor<4xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_work_device(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %qo: tensor<5xi32>, %a: tensor<4xi32>) {
  // expected-error @+1 {{device must lie in [0, devices = 2), got 2}}
  %s:7 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) queries(%qo : tensor<5xi32>) outs(%a, %a, %a, %a, %a, %a, %a : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {device = 2 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_work_batch(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %qo: tensor<4xi32>, %a: tensor<4xi32>) {
  // expected-error @+1 {{batch mismatch: 'qo_indptr' dim 0 gives 3 but kv_indptr dim 0 gives 4}}
  %s:7 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) queries(%qo : tensor<4xi32>) outs(%a, %a, %a, %a, %a, %a, %a : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_work_out_type(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %qo: tensor<5xi32>, %a: tensor<4xi32>, %f: tensor<4xf32>) {
  // expected-error @+1 {{'outs[4] (work_kv_end)' must be a 1-D array of i32}}
  %s:7 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) queries(%qo : tensor<5xi32>) outs(%a, %a, %a, %a, %f, %a, %a : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_work_decode_outs(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<4xi32>) {
  // expected-error @+1 {{expects 4 outs (the work list of pa.decode_partial), got 7}}
  %s:7 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %a, %a, %a, %a, %a, %a : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

// -----

func.func @shard_work_decode_indptr(%ip: tensor<5xi32>, %ix: tensor<?xi32>, %lp: tensor<4xi32>, %a: tensor<4xi32>) {
  // expected-error @+1 {{batch mismatch: 'outs[0] (work_indptr)' dim 0 gives 3 but kv_indptr dim 0 gives 4}}
  %s:4 = pa.shard_work pages(%ip, %ix, %lp : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>) outs(%a, %a, %a, %a : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
  return
}

