// Batch decode, GQA 4 (Hq = 32, Hkv = 8), D = 128, P = 16, fp16, NHD, K and V
// in one paged tensor: one decode step of a Llama-3-8B-like layer.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

func.func @decode_step(%q: tensor<?x32x128xf16>, %kv: tensor<?x2x16x8x128xf16>,
                       %kv_indptr: tensor<?xi32>, %kv_indices: tensor<?xi32>,
                       %kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%b) : tensor<?x32x128xf16>
  %lse0 = tensor.empty(%b) : tensor<?x32xf32>
  %o, %lse = pa.decode q(%q : tensor<?x32x128xf16>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache}
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}
