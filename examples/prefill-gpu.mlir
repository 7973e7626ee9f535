// Causal ragged prefill over a paged KV cache, the GPU example: GQA 4
// (32 query heads over 8 KV heads), D 128, page size 16, NHD joint cache,
// f16. `pa-opt --pa-lower-to-nvvm` compiles it to the tensor-core kernel
// (docs/GPU.md); pa-compile --kernels prefill --causal writes the same
// configuration as a bundle.
#cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>

func.func @prefill(%q: tensor<?x32x128xf16>, %qo_indptr: tensor<?xi32>,
                   %kv: tensor<?x2x16x8x128xf16>, %kv_indptr: tensor<?xi32>,
                   %kv_indices: tensor<?xi32>, %kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %q, %c0 : tensor<?x32x128xf16>
  %o0 = tensor.empty(%n) : tensor<?x32x128xf16>
  %lse0 = tensor.empty(%n) : tensor<?x32xf32>
  %o, %lse = pa.prefill q(%q, %qo_indptr : tensor<?x32x128xf16>, tensor<?xi32>)
      kv(%kv : tensor<?x2x16x8x128xf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>) {cache = #cache, causal}
  return %o, %lse : tensor<?x32x128xf16>, tensor<?x32xf32>
}
