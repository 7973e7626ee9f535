// Append a chunk of new tokens to the paged cache (page-table form), then run
// causal ragged prefill over the whole cache: a chunked-prefill step. Split
// K/V tensors, HND layout, bf16, GQA 8.
#cache = #pa.paged_kv<hnd, page_size = 16, kv_heads = 4, head_dim = 128>

func.func @chunked_prefill(%q: tensor<?x32x128xbf16>, %k_new: tensor<?x4x128xbf16>,
                           %v_new: tensor<?x4x128xbf16>, %qo_indptr: tensor<?xi32>,
                           %k: tensor<?x4x16x128xbf16>, %v: tensor<?x4x16x128xbf16>,
                           %kv_indptr: tensor<?xi32>, %kv_indices: tensor<?xi32>,
                           %kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16>) {
  %k2, %v2 = pa.append_kv new(%k_new, %v_new, %qo_indptr : tensor<?x4x128xbf16>, tensor<?x4x128xbf16>, tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%k, %v : tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16>) {cache = #cache}
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xbf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xbf16>
  %lse0 = tensor.empty(%n) : tensor<?x32xf32>
  %o, %lse = pa.prefill q(%q, %qo_indptr : tensor<?x32x128xbf16>, tensor<?xi32>)
      kv(%k2, %v2 : tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xbf16>, tensor<?x32xf32>) {cache = #cache, causal}
  return %o, %lse, %k2, %v2 : tensor<?x32x128xbf16>, tensor<?x32xf32>, tensor<?x4x16x128xbf16>, tensor<?x4x16x128xbf16>
}
