// RUN: pa-opt %s -split-input-file -verify-diagnostics

// The verifier of pa.prefill_partial: what it shares with pa.prefill (the
// query segments, masks, options) and its own rules (f32 partial states
// addressed by rows, seven work arrays of one length).

// -----

func.func @partial_f16_states(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %o: tensor<?x32x128xf16>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{o_part and lse_part must be f32}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @partial_rank(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %o: tensor<?x128xf32>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{'o_part' must have rank 3 ([partial rows, Hq, D])}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @partial_rows(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %o: tensor<8x32x128xf32>, %l: tensor<7x32xf32>) {
  // expected-error @+1 {{partial rows mismatch: 'lse_part' dim 0 gives 7 but o_part dim 0 gives 8}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<8x32x128xf32>, tensor<7x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @partial_heads(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %o: tensor<?x16x128xf32>, %l: tensor<?x16xf32>) {
  // expected-error @+1 {{Hq mismatch}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x16x128xf32>, tensor<?x16xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @partial_items(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<4xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<5xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %o: tensor<?x32x128xf32>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{work items mismatch: 'work_kv_end' dim 0 gives 5 but work_request dim 0 gives 4}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<4xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<5xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @partial_work_type(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xf32>, %o: tensor<?x32x128xf32>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{work_partial_stride}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xf32>) outs(%o, %l : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @partial_mask_causal(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %m: tensor<?xi8>, %mi: tensor<3xi32>, %o: tensor<?x32x128xf32>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{a custom mask and 'causal' exclude each other}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) mask(%m, %mi : tensor<?xi8>, tensor<3xi32>) outs(%o, %l : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, causal}
  return
}

// -----

func.func @partial_window(%q: tensor<?x32x128xf16>, %qi: tensor<3xi32>, %kv: tensor<?x2x16x8x128xf16>, %ip: tensor<3xi32>, %ix: tensor<?xi32>, %lp: tensor<2xi32>, %w0: tensor<?xi32>, %w1: tensor<?xi32>, %w2: tensor<?xi32>, %w3: tensor<?xi32>, %w4: tensor<?xi32>, %w5: tensor<?xi32>, %w6: tensor<?xi32>, %o: tensor<?x32x128xf32>, %l: tensor<?x32xf32>) {
  // expected-error @+1 {{window must be > 0, got -3}}
  %p:2 = pa.prefill_partial q(%q, %qi : tensor<?x32x128xf16>, tensor<3xi32>) kv(%kv : tensor<?x2x16x8x128xf16>) pages(%ip, %ix, %lp : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>) work(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) outs(%o, %l : tensor<?x32x128xf32>, tensor<?x32xf32>) {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>, window = -3}
  return
}
