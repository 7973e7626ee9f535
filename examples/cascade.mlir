// Shared-prefix decoding: every request shares a system prompt (level 0, one
// segment holding all queries) and has its own suffix (level 1). Written once
// as a two-level cascade and once by hand as two attentions plus a merge; both
// mean the same thing.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

func.func @cascade(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
                   %qo0: tensor<2xi32>, %ip0: tensor<2xi32>, %ix0: tensor<?xi32>, %lp0: tensor<1xi32>,
                   %qo1: tensor<?xi32>, %ip1: tensor<?xi32>, %ix1: tensor<?xi32>, %lp1: tensor<?xi32>,
                   %o0: tensor<?x32x128xf16>, %lse0: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %o, %lse = pa.cascade q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<?xi32>)
      kv_indptrs(%ip0, %ip1 : tensor<2xi32>, tensor<?xi32>)
      kv_indices(%ix0, %ix1 : tensor<?xi32>, tensor<?xi32>)
      kv_last_page_lens(%lp0, %lp1 : tensor<1xi32>, tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}

func.func @by_hand(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
                   %qo0: tensor<2xi32>, %ip0: tensor<2xi32>, %ix0: tensor<?xi32>, %lp0: tensor<1xi32>,
                   %ip1: tensor<?xi32>, %ix1: tensor<?xi32>, %lp1: tensor<?xi32>,
                   %o0: tensor<?x32x128xf16>, %lse0: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %op, %lp = pa.prefill q(%q, %qo0 : tensor<?x32x128xf16>, tensor<2xi32>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip0, %ix0, %lp0 : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  %os, %ls = pa.decode q(%q : tensor<?x32x128xf16>) kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%ip1, %ix1, %lp1 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  %o, %lse = pa.merge states(%op, %lp, %os, %ls : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}
