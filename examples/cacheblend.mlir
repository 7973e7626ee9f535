// CacheBlend for one layer: compare the recomputed K of the blended request
// with the reused cache, pick the 15% most deviating tokens, scatter their
// recomputed K/V into the cache and run partial prefill for those tokens only
// (queries at their positions) over the fused cache.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

func.func @blend_layer(%k_recomputed: tensor<?x8x128xf16>, %k_reused: tensor<?x8x128xf16>,
                       %tok_indptr: tensor<2xi32>,
                       %k_sel: tensor<?x8x128xf16>, %v_sel: tensor<?x8x128xf16>,
                       %q_sel: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
                       %kv_indptr: tensor<2xi32>, %kv_indices: tensor<?xi32>, %kv_last: tensor<1xi32>,
                       %dev0: tensor<?xf32>, %pos0: tensor<?xi32>, %sel_indptr0: tensor<2xi32>,
                       %o0: tensor<?x32x128xf16>, %lse0: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>) {
  %dev = pa.kv_deviation ins(%k_recomputed, %k_reused : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
      outs(%dev0 : tensor<?xf32>)
  %pos, %sel_indptr = pa.select_topk ins(%dev, %tok_indptr : tensor<?xf32>, tensor<2xi32>)
      outs(%pos0, %sel_indptr0 : tensor<?xi32>, tensor<2xi32>) {ratio = 0.15 : f64}
  %kv2 = pa.scatter_kv new(%k_sel, %v_sel, %sel_indptr : tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<2xi32>)
      positions(%pos : tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      outs(%kv : tensor<?x2x16x8x128xf16>) {cache = #cache}
  %o, %lse = pa.prefill q(%q_sel, %sel_indptr : tensor<?x32x128xf16>, tensor<2xi32>)
      kv(%kv2 : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last : tensor<2xi32>, tensor<?xi32>, tensor<1xi32>)
      positions(%pos : tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, causal}
  return %o, %kv2 : tensor<?x32x128xf16>, tensor<?x2x16x8x128xf16>
}
