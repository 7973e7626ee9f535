// One decode step of DeepSeek-V3 multi-head latent attention (weights
// absorbed) over FlashInfer's MLA page layout: one latent cache
// [num_pages, P = 64, D_ckv + D_kpe = 512 + 64] in bf16, no KV-head
// dimension, 128 query heads whose queries come as q_nope [B, 128, 512] and
// q_pe [B, 128, 64]. o is [B, 128, 512] (the weighted sum of the ckv rows),
// lse [B, 128]. sm_scale is the scale of the model before absorption,
// 1/sqrt(128 + 64). Runs on the CPU lowering (pa-lower-to-cpu) and on the
// GPU (pa-lower-to-nvvm: the tensor-core kernel of docs/GPU.md, "MLA
// decode").
#mla = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>

func.func @mla_decode_step(%q_nope: tensor<?x128x512xbf16>,
                           %q_pe: tensor<?x128x64xbf16>,
                           %ckv_kpe: tensor<?x64x576xbf16>,
                           %kv_indptr: tensor<?xi32>, %kv_indices: tensor<?xi32>,
                           %kv_last_page_len: tensor<?xi32>)
    -> (tensor<?x128x512xbf16>, tensor<?x128xf32>) {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %q_nope, %c0 : tensor<?x128x512xbf16>
  %o0 = tensor.empty(%b) : tensor<?x128x512xbf16>
  %lse0 = tensor.empty(%b) : tensor<?x128xf32>
  %o, %lse = pa.mla_decode q(%q_nope, %q_pe : tensor<?x128x512xbf16>, tensor<?x128x64xbf16>)
      kv(%ckv_kpe : tensor<?x64x576xbf16>)
      pages(%kv_indptr, %kv_indices, %kv_last_page_len : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      outs(%o0, %lse0 : tensor<?x128x512xbf16>, tensor<?x128xf32>)
      {cache = #mla, sm_scale = 0.0721687824 : f32}
  return %o, %lse : tensor<?x128x512xbf16>, tensor<?x128xf32>
}
