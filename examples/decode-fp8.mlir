// One decode step over an fp8 KV cache (f8E4M3FN, NHD, P = 16, Hkv = 8,
// D = 128, GQA 4): the step's new K/V rows (f16) are quantized into the cache
// with per-KV-head K and V scales (saturating at +-448), then the f16 query
// attends to the dequantized cache (k = k_scale[h] * fp8, likewise v). Runs
// on the CPU lowering (pa-lower-to-cpu); the GPU lowering rejects fp8 caches
// for now.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

func.func @decode_step_fp8(%q: tensor<?x32x128xf16>,
                           %k_new: tensor<?x8x128xf16>, %v_new: tensor<?x8x128xf16>,
                           %append_indptr: tensor<?xi32>,
                           %kv: tensor<?x2x16x8x128xf8E4M3FN>,
                           %k_scale: tensor<8xf32>, %v_scale: tensor<8xf32>,
                           %kv_indptr: tensor<?xi32>, %kv_indices: tensor<?xi32>,
                           %kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x2x16x8x128xf8E4M3FN>) {
  // The page table describes the cache after the append.
  %kv1 = pa.append_kv new(%k_new, %v_new, %append_indptr :
        tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<?xi32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      scales(%k_scale, %v_scale : tensor<8xf32>, tensor<8xf32>)
      outs(%kv : tensor<?x2x16x8x128xf8E4M3FN>) {cache = #cache}
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%b) : tensor<?x32x128xf16>
  %lse0 = tensor.empty(%b) : tensor<?x32xf32>
  %o, %lse = pa.decode q(%q : tensor<?x32x128xf16>)
      kv(%kv1 : tensor<?x2x16x8x128xf8E4M3FN>)
      scales(%k_scale, %v_scale : tensor<8xf32>, tensor<8xf32>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %o, %lse, %kv1 : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x2x16x8x128xf8E4M3FN>
}
