//===- PAOps.td - operations of the pa dialect ------------*- tablegen -*-===//
//
// Every op is destination-passing style over ranked tensors or memrefs; see
// docs/Dialect.md for the conventions and docs/Semantics.md for the binding
// semantics.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_DIALECT_PAOPS_TD
#define PAGEDATTN_DIALECT_PAOPS_TD

include "PagedAttn/Dialect/PADialect.td"
include "PagedAttn/Dialect/PAInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def PA_TensorOrMemRef : AnyTypeOf<[AnyRankedTensor, AnyMemRef],
                                  "ranked tensor or memref">;

/// Base of all pa ops: destination-passing style (`outs` are the inits), result
/// types inferred from the `outs` (tensors only), memory effects on memrefs:
/// inputs are read and inits written. `readsInits`: the op keeps what it does
/// not overwrite in its outs (the cache writes), so its inits are read too.
class PA_Op<string mnemonic, list<Trait> traits = [], bit readsInits = 0>
    : Op<PA_Dialect, mnemonic, !listconcat(traits, [
        DestinationStyleOpInterface,
        DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
        InferTypeOpAdaptor])> {
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let hasVerifier = 1;
  code paExtraDecls = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getOutsMutable(); }
    /// True if the op keeps what it does not overwrite in its outs, so that
    /// the inits are read (memory effects, bufferization).
    static constexpr bool kReadsInits = }] # !if(readsInits, "true", "false")
    # [{;
  }];
  let extraClassDeclaration = paExtraDecls;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *, std::optional<::mlir::Location>,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::mlir::pa::detail::inferFromOuts(adaptor.getOuts(), inferred);
    }
    void $cppClass::getEffects(::llvm::SmallVectorImpl<
        ::mlir::SideEffects::EffectInstance<::mlir::MemoryEffects::Effect>>
            &effects) {
      ::mlir::pa::detail::getDpsEffects(getOperation(), kReadsInits, effects);
    }
  }];
}

/// Builder arguments shared by the attention ops (after the op-specific
/// operand groups): the cache attribute, the options and the ALiBi slopes.
defvar PA_AttnBuilderTail = (ins
  "::mlir::pa::PagedKVAttr":$cache,
  CArg<"const ::mlir::pa::AttentionOptions &", "{}">:$options,
  CArg<"::mlir::Value", "{}">:$alibiSlopes,
  CArg<"const ::mlir::pa::KVScales &", "{}">:$scales);

defvar PA_KVScalesDoc = [{
    FP8 caches: with a cache of element type `f8E4M3FN` or `f8E5M2`, the op
    takes `scales(%k_scale, %v_scale)`, two 1-D `f32` arrays of shape `[1]`
    (per tensor) or `[Hkv]` (per KV head, static); the value of a K element is
    `k_scale[h] * k` (`k_scale[0]` per tensor), likewise V. Ops that read the
    cache dequantize (accumulation stays f32); ops that write it store
    `saturate(round_to_nearest_even(x / scale))`. Other caches take no
    scales.
}];

/// Options shared by every attention op (decode, prefill, cascade).
defvar PA_AttnOptions = (ins
  OptionalAttr<F32Attr>:$sm_scale,
  OptionalAttr<F32Attr>:$logits_soft_cap,
  OptionalAttr<I64Attr>:$window,
  UnitAttr:$lse_base2);

defvar PA_AttnOptionsDoc = [{
    Options (attributes):
    * `sm_scale` (f32, default `1/sqrt(D)`): scores are `sm_scale * <q, k>`,
      accumulated in f32;
    * `logits_soft_cap = c` (> 0): scores become `c * tanh(s / c)`;
    * `alibi(%slopes)` operand (`[Hq]` f32): adds `slope_h * (t - pos)`;
    * `window = w` (> 0): key `t` is visible only if `t > pos - w`;
    * `lse_base2`: `lse` is reported in base 2 (FlashInfer's convention).
    Masked keys contribute nothing; an empty or fully masked key set gives
    `o = 0`, `lse = -inf`.
}];

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def PA_DecodeOp : PA_Op<"decode", [AttrSizedOperandSegments,
    PA_AttentionOpInterface, PA_PagedOpInterface]> {
  let summary = "batch decode attention over a paged KV cache";
  let description = !strconcat([{
    One query token per request: `q[B, Hq, D]`; request `b` attends to its
    `kv_len[b]` tokens through the CSR page table
    `pages(kv_indptr[B+1], kv_indices[nnz], kv_last_page_len[B])`, where
    `kv_len[b] = 0` without pages, else `(npages - 1) * P + last_page_len[b]`.
    Query head `h` reads KV head `h / (Hq / Hkv)`. The query's position is
    `kv_len - 1`. Writes `o[B, Hq, D]` (q's element type) and `lse[B, Hq]`
    (f32).
  }], PA_AttnOptionsDoc, PA_KVScalesDoc, [{

    ```mlir
    %o, %lse = pa.decode q(%q : tensor<4x32x128xf16>)
        kv(%kv : tensor<?x2x16x8x128xf16>)
        pages(%indptr, %indices, %last : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        outs(%o0, %lse0 : tensor<4x32x128xf16>, tensor<4x32xf32>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```

    Over an fp8 cache with a per-tensor K scale and per-head V scales:

    ```mlir
    %o, %lse = pa.decode q(%q : tensor<4x32x128xf16>)
        kv(%kv : tensor<?x2x16x8x128xf8E4M3FN>)
        scales(%ks, %vs : tensor<1xf32>, tensor<8xf32>)
        pages(%indptr, %indices, %last : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        outs(%o0, %lse0 : tensor<4x32x128xf16>, tensor<4x32xf32>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```
  }]);
  let arguments = !con((ins
    PA_TensorOrMemRef:$q,
    Variadic<PA_TensorOrMemRef>:$kv_cache,
    Optional<PA_TensorOrMemRef>:$k_scale,
    Optional<PA_TensorOrMemRef>:$v_scale,
    PA_TensorOrMemRef:$kv_indptr,
    PA_TensorOrMemRef:$kv_indices,
    PA_TensorOrMemRef:$kv_last_page_len,
    Optional<PA_TensorOrMemRef>:$alibi_slopes,
    Variadic<PA_TensorOrMemRef>:$outs,
    PA_PagedKVAttr:$cache), PA_AttnOptions);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `kv` `(` $kv_cache `:` type($kv_cache) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let builders = [
    /// Result types are those of the tensor outs.
    OpBuilder<!con((ins "::mlir::Value":$q, "::mlir::ValueRange":$kvCache,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "::mlir::ValueRange":$outs), PA_AttnBuilderTail), [{
      ::llvm::SmallVector<::mlir::Type> types;
      (void)::mlir::pa::detail::inferFromOuts(outs, types);
      build($_builder, $_state, types, q, kvCache, scales.k, scales.v,
            pages.indptr, pages.indices, pages.lastPageLen, alibiSlopes, outs,
            cache,
            options.getSmScaleAttr($_builder),
            options.getSoftCapAttr($_builder),
            options.getWindowAttr($_builder),
            options.getLseBase2Attr($_builder));
    }]>
  ];
}

def PA_MLADecodeOp : PA_Op<"mla_decode", [PA_PagedOpInterface]> {
  let summary = "batch decode of multi-head latent attention (MLA) over a "
                "paged latent cache";
  let description = [{
    DeepSeek's multi-head latent attention with the weights absorbed
    (FlashInfer's `BatchMLAPagedAttentionWrapper`): one query token per
    request, `H` query heads that all read the same latent cache (there is no
    KV-head dimension). The cache `kv(%ckv_kpe)` is
    `[num_pages, P, D_ckv + D_kpe]` as fixed by `#pa.paged_mla`: the first
    `D_ckv` elements of a token's row are its compressed key/value `ckv[t]`,
    the last `D_kpe` its rotary key `kpe[t]`. The queries come in two parts,
    `q_nope[B, H, D_ckv]` and `q_pe[B, H, D_kpe]`. Request `b` attends to its
    `kv_len[b]` tokens through the CSR page table
    `pages(kv_indptr[B+1], kv_indices[nnz], kv_last_page_len[B])` (page size
    `P`, `kv_len` as for `pa.decode`):

    * `s[t] = sm_scale * (<q_nope[b, h], ckv[t]> + <q_pe[b, h], kpe[t]>)`,
      then `c * tanh(s / c)` with `logits_soft_cap = c`;
    * `o[b, h] = sum_t softmax(s)[t] * ckv[t]` (`D_ckv` wide, q's element
      type), `lse[b, h] = ln sum_t exp(s[t])` (f32; base 2 with
      `lse_base2`); a request without tokens gives `o = 0`, `lse = -inf`.

    `sm_scale` is required: with absorbed weights the right scale is that of
    the model's attention before absorption, `1/sqrt(qk_nope_head_dim +
    qk_rope_head_dim)` (`1/sqrt(192)` for DeepSeek V2/V3), which the op's
    shapes do not tell (FlashInfer's `plan` takes it as a required argument
    too). q_nope, q_pe, the cache and `o` share one element type (f16, bf16
    or f32); scores and the weighted sum accumulate in f32.

    ```mlir
    %o, %lse = pa.mla_decode q(%q_nope, %q_pe : tensor<4x128x512xbf16>, tensor<4x128x64xbf16>)
        kv(%ckv_kpe : tensor<?x64x576xbf16>)
        pages(%indptr, %indices, %last : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        outs(%o0, %lse0 : tensor<4x128x512xbf16>, tensor<4x128xf32>)
        {cache = #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>,
         sm_scale = 0.0721687824 : f32}
    ```
  }];
  let arguments = (ins
    PA_TensorOrMemRef:$q_nope,
    PA_TensorOrMemRef:$q_pe,
    PA_TensorOrMemRef:$kv_cache,
    PA_TensorOrMemRef:$kv_indptr,
    PA_TensorOrMemRef:$kv_indices,
    PA_TensorOrMemRef:$kv_last_page_len,
    Variadic<PA_TensorOrMemRef>:$outs,
    PA_PagedMLAAttr:$cache,
    F32Attr:$sm_scale,
    OptionalAttr<F32Attr>:$logits_soft_cap,
    UnitAttr:$lse_base2);
  let assemblyFormat = [{
    `q` `(` $q_nope `,` $q_pe `:` type($q_nope) `,` type($q_pe) `)`
    `kv` `(` $kv_cache `:` type($kv_cache) `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let builders = [
    /// Result types are those of the tensor outs; `options.smScale` must be
    /// set (MLA has no default scale), `options.window` unset.
    OpBuilder<(ins "::mlir::Value":$qNope, "::mlir::Value":$qPe,
        "::mlir::Value":$kvCache,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "::mlir::ValueRange":$outs, "::mlir::pa::PagedMLAAttr":$cache,
        "const ::mlir::pa::AttentionOptions &":$options), [{
      assert(options.smScale && !options.window &&
             "pa.mla_decode needs sm_scale and takes no window");
      ::llvm::SmallVector<::mlir::Type> types;
      (void)::mlir::pa::detail::inferFromOuts(outs, types);
      build($_builder, $_state, types, qNope, qPe, kvCache, pages.indptr,
            pages.indices, pages.lastPageLen, outs, cache,
            options.getSmScaleAttr($_builder),
            options.getSoftCapAttr($_builder),
            options.getLseBase2Attr($_builder));
    }]>
  ];
  let extraClassDeclaration = paExtraDecls # [{
    /// The `o` out (`outs[0]`).
    ::mlir::Value getO() { return getOuts()[0]; }
    /// The `lse` out (`outs[1]`).
    ::mlir::Value getLse() { return getOuts()[1]; }
    /// The options as plain values (`window` never set).
    ::mlir::pa::AttentionOptions getAttentionOptions() {
      return ::mlir::pa::AttentionOptions::get(getSmScale(),
          getLogitsSoftCap(), std::nullopt, getLseBase2());
    }
  }];
}

def PA_PrefillOp : PA_Op<"prefill", [AttrSizedOperandSegments,
    PA_AttentionOpInterface, PA_PagedOpInterface]> {
  let summary = "ragged prefill / append attention over a paged KV cache";
  let description = !strconcat([{
    Ragged queries `q[qo_indptr[B], Hq, D]` with `qo_indptr[B+1]`. Query `i`
    of request `b` (`0 <= i < qo_len`) sits at position
    `kv_len - qo_len + i` (the queries are the request's last tokens), or at
    `q_positions[row]` when `positions(%q_positions)` is given (CacheBlend's
    partial prefill). Masks:
    * `causal`: key `t` is visible iff `t <= pos`;
    * `window = w`: also `t > pos - w` (with or without `causal`);
    * `mask(%packed, %mask_indptr)`: a custom 2-D ragged boolean mask per
      request, `[qo_len, kv_len]` row-major, bit-packed little-endian (bit `j`
      of byte `k` is element `8k + j`), requests concatenated, request `b`
      starting at byte `mask_indptr[b]` (see `pa.pack_mask`). Excludes
      `causal` and `window`.
    Writes `o[qo_indptr[B], Hq, D]` and `lse[qo_indptr[B], Hq]`.
  }], PA_AttnOptionsDoc, PA_KVScalesDoc, [{

    ```mlir
    %o, %lse = pa.prefill q(%q, %qo_indptr : tensor<?x32x128xf16>, tensor<3xi32>)
        kv(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
        pages(%indptr, %indices, %last : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>)
        outs(%o0, %lse0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>,
         causal}
    ```
  }]);
  let arguments = !con((ins
    PA_TensorOrMemRef:$q,
    PA_TensorOrMemRef:$qo_indptr,
    Variadic<PA_TensorOrMemRef>:$kv_cache,
    Optional<PA_TensorOrMemRef>:$k_scale,
    Optional<PA_TensorOrMemRef>:$v_scale,
    PA_TensorOrMemRef:$kv_indptr,
    PA_TensorOrMemRef:$kv_indices,
    PA_TensorOrMemRef:$kv_last_page_len,
    Optional<PA_TensorOrMemRef>:$q_positions,
    Optional<PA_TensorOrMemRef>:$custom_mask,
    Optional<PA_TensorOrMemRef>:$mask_indptr,
    Optional<PA_TensorOrMemRef>:$alibi_slopes,
    Variadic<PA_TensorOrMemRef>:$outs,
    PA_PagedKVAttr:$cache,
    UnitAttr:$causal), PA_AttnOptions);
  let assemblyFormat = [{
    `q` `(` $q `,` $qo_indptr `:` type($q) `,` type($qo_indptr) `)`
    `kv` `(` $kv_cache `:` type($kv_cache) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`positions` `(` $q_positions^ `:` type($q_positions) `)`)?
    (`mask` `(` $custom_mask^ `,` $mask_indptr `:` type($custom_mask) `,`
        type($mask_indptr) `)`)?
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let builders = [
    /// Result types are those of the tensor outs.
    OpBuilder<(ins "::mlir::Value":$q, "::mlir::Value":$qoIndptr,
        "::mlir::ValueRange":$kvCache,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "::mlir::ValueRange":$outs, "::mlir::pa::PagedKVAttr":$cache,
        CArg<"const ::mlir::pa::PrefillMasking &", "{}">:$masking,
        CArg<"const ::mlir::pa::AttentionOptions &", "{}">:$options,
        CArg<"::mlir::Value", "{}">:$alibiSlopes,
        CArg<"const ::mlir::pa::KVScales &", "{}">:$scales), [{
      ::llvm::SmallVector<::mlir::Type> types;
      (void)::mlir::pa::detail::inferFromOuts(outs, types);
      build($_builder, $_state, types, q, qoIndptr, kvCache, scales.k,
            scales.v, pages.indptr,
            pages.indices, pages.lastPageLen, masking.qPositions,
            masking.customMask, masking.maskIndptr, alibiSlopes, outs, cache,
            masking.causal ? $_builder.getUnitAttr() : ::mlir::UnitAttr(),
            options.getSmScaleAttr($_builder),
            options.getSoftCapAttr($_builder),
            options.getWindowAttr($_builder),
            options.getLseBase2Attr($_builder));
    }]>,
    /// Attention of `like`'s query over `like`'s cache, with its ALiBi slopes
    /// and options, through the page table `pages` and the query segments
    /// `qoIndptr` (e.g. one level of a cascade).
    OpBuilder<(ins "::mlir::pa::AttentionOpInterface":$like,
        "::mlir::Value":$qoIndptr,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "::mlir::ValueRange":$outs,
        CArg<"const ::mlir::pa::PrefillMasking &", "{}">:$masking), [{
      build($_builder, $_state, like.getQ(), qoIndptr, like.getKvCache(),
            pages, outs, like.getCache(), masking,
            like.getAttentionOptions(), like.getAlibiSlopes(),
            like.getKVScales());
    }]>
  ];
}

def PA_PrefillPartialOp : PA_Op<"prefill_partial", [AttrSizedOperandSegments,
    PA_AttentionOpInterface, PA_PagedOpInterface]> {
  let summary = "prefill / append attention over the KV chunks of a work list";
  let description = !strconcat([{
    The split-KV form of `pa.prefill` (FlashInfer's split prefill): the same
    queries, cache, masks and options, and a work list of `W` items given
    as seven `[W]` i32 arrays. Item `w` takes the queries
    `[work_qo_start[w], work_qo_end[w])` of request `r = work_request[w]`
    (request-local indices: row `qo_indptr[r] + i` of q) and lets them
    attend to the keys `[work_kv_start[w], work_kv_end[w])` of the request
    only, with every mask of `pa.prefill` still applied at the query's
    position in the whole request (`kv_len - qo_len + i`, or
    `q_positions`). Query `i` of the item writes its state to row
    `work_partial_row[w] + (i - work_qo_start[w]) * work_partial_stride[w]`
    of `o_part[R, Hq, D]` (f32) and `lse_part[R, Hq]` (f32); a query with no
    visible key in the chunk gets `(0, -inf)`. Each row is written by at
    most one (item, query); rows no item writes are unspecified (the CPU
    lowering gives them the identity, the GPU kernel leaves them). When the
    items of a query cover its keys disjointly,
    `pa.merge_segments` over the rows of each query gives `pa.prefill`'s
    result (`pa::rt::planPrefill` builds such a list and its segments).
    Requires `0 <= qo_start <= qo_end <= qo_len`, `0 <= kv_start <= kv_end
    <= kv_len` and the rows written inside `[0, R)`.
  }], PA_AttnOptionsDoc, PA_KVScalesDoc, [{

    ```mlir
    %op, %lp = pa.prefill_partial q(%q, %qo_indptr : tensor<?x32x128xf16>, tensor<3xi32>)
        kv(%kv : tensor<?x2x16x8x128xf16>)
        pages(%indptr, %indices, %last : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>)
        work(%wr, %wqs, %wqe, %wks, %wke, %wrow, %wstride : tensor<?xi32>,
             tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
             tensor<?xi32>, tensor<?xi32>)
        outs(%o0, %l0 : tensor<?x32x128xf32>, tensor<?x32xf32>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>,
         causal}
    ```
  }]);
  let arguments = !con((ins
    PA_TensorOrMemRef:$q,
    PA_TensorOrMemRef:$qo_indptr,
    Variadic<PA_TensorOrMemRef>:$kv_cache,
    Optional<PA_TensorOrMemRef>:$k_scale,
    Optional<PA_TensorOrMemRef>:$v_scale,
    PA_TensorOrMemRef:$kv_indptr,
    PA_TensorOrMemRef:$kv_indices,
    PA_TensorOrMemRef:$kv_last_page_len,
    PA_TensorOrMemRef:$work_request,
    PA_TensorOrMemRef:$work_qo_start,
    PA_TensorOrMemRef:$work_qo_end,
    PA_TensorOrMemRef:$work_kv_start,
    PA_TensorOrMemRef:$work_kv_end,
    PA_TensorOrMemRef:$work_partial_row,
    PA_TensorOrMemRef:$work_partial_stride,
    Optional<PA_TensorOrMemRef>:$q_positions,
    Optional<PA_TensorOrMemRef>:$custom_mask,
    Optional<PA_TensorOrMemRef>:$mask_indptr,
    Optional<PA_TensorOrMemRef>:$alibi_slopes,
    Variadic<PA_TensorOrMemRef>:$outs,
    PA_PagedKVAttr:$cache,
    UnitAttr:$causal), PA_AttnOptions);
  let assemblyFormat = [{
    `q` `(` $q `,` $qo_indptr `:` type($q) `,` type($qo_indptr) `)`
    `kv` `(` $kv_cache `:` type($kv_cache) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    `work` `(` $work_request `,` $work_qo_start `,` $work_qo_end `,`
        $work_kv_start `,` $work_kv_end `,` $work_partial_row `,`
        $work_partial_stride `:` type($work_request) `,`
        type($work_qo_start) `,` type($work_qo_end) `,`
        type($work_kv_start) `,` type($work_kv_end) `,`
        type($work_partial_row) `,` type($work_partial_stride) `)`
    (`positions` `(` $q_positions^ `:` type($q_positions) `)`)?
    (`mask` `(` $custom_mask^ `,` $mask_indptr `:` type($custom_mask) `,`
        type($mask_indptr) `)`)?
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let extraClassDeclaration = paExtraDecls # [{
    /// The operand names of the seven work-list arrays, in operand order.
    static constexpr const char *kWorkListNames[7] = {
        "work_request",  "work_qo_start",    "work_qo_end",
        "work_kv_start", "work_kv_end",      "work_partial_row",
        "work_partial_stride"};
    /// The seven work-list arrays, in operand order.
    ::llvm::SmallVector<::mlir::Value, 7> getWorkList() {
      return {getWorkRequest(), getWorkQoStart(), getWorkQoEnd(),
              getWorkKvStart(), getWorkKvEnd(), getWorkPartialRow(),
              getWorkPartialStride()};
    }
  }];
}

def PA_CascadeOp : PA_Op<"cascade", [AttrSizedOperandSegments,
    PA_AttentionOpInterface]> {
  let summary = "multi-level cascade attention (shared prefixes, then suffixes)";
  let description = !strconcat([{
    `L >= 1` levels over one paged KV cache. Level `l` has its own
    `qo_indptrs[l]` (grouping the ragged queries `q[Nq, Hq, D]` into that
    level's segments; every level covers all `Nq` rows) and its own CSR page
    table `(kv_indptrs[l], kv_indices[l], kv_last_page_lens[l])`. Each query
    attends, at each level, to the pages of its segment; the result is the
    merge (see `pa.merge`) of the per-level states. Earlier levels are shared
    prefixes that lie wholly before the queries and are fully visible;
    `causal` applies to the last level only, with positions
    `kv_len - qo_len + i` within that level.
  }], PA_AttnOptionsDoc, PA_KVScalesDoc, [{

    ```mlir
    %o, %lse = pa.cascade q(%q : tensor<8x32x128xf16>)
        kv(%kv : tensor<?x2x16x8x128xf16>)
        qo_indptrs(%qo0, %qo1 : tensor<2xi32>, tensor<9xi32>)
        kv_indptrs(%p0, %p1 : tensor<2xi32>, tensor<9xi32>)
        kv_indices(%i0, %i1 : tensor<?xi32>, tensor<?xi32>)
        kv_last_page_lens(%l0, %l1 : tensor<1xi32>, tensor<8xi32>)
        outs(%o0, %lse0 : tensor<8x32x128xf16>, tensor<8x32xf32>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```
  }]);
  let arguments = !con((ins
    PA_TensorOrMemRef:$q,
    Variadic<PA_TensorOrMemRef>:$kv_cache,
    Optional<PA_TensorOrMemRef>:$k_scale,
    Optional<PA_TensorOrMemRef>:$v_scale,
    Variadic<PA_TensorOrMemRef>:$qo_indptrs,
    Variadic<PA_TensorOrMemRef>:$kv_indptrs,
    Variadic<PA_TensorOrMemRef>:$kv_indices,
    Variadic<PA_TensorOrMemRef>:$kv_last_page_lens,
    Optional<PA_TensorOrMemRef>:$alibi_slopes,
    Variadic<PA_TensorOrMemRef>:$outs,
    PA_PagedKVAttr:$cache,
    UnitAttr:$causal), PA_AttnOptions);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `kv` `(` $kv_cache `:` type($kv_cache) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `qo_indptrs` `(` $qo_indptrs `:` type($qo_indptrs) `)`
    `kv_indptrs` `(` $kv_indptrs `:` type($kv_indptrs) `)`
    `kv_indices` `(` $kv_indices `:` type($kv_indices) `)`
    `kv_last_page_lens` `(` $kv_last_page_lens `:` type($kv_last_page_lens) `)`
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let builders = [
    /// One query segmentation and one page table per level; result types are
    /// those of the tensor outs.
    OpBuilder<(ins "::mlir::Value":$q, "::mlir::ValueRange":$kvCache,
        "::mlir::ValueRange":$qoIndptrs,
        "::llvm::ArrayRef<::mlir::pa::PageTableOperands>":$levels,
        "::mlir::ValueRange":$outs, "::mlir::pa::PagedKVAttr":$cache,
        CArg<"bool", "false">:$causal,
        CArg<"const ::mlir::pa::AttentionOptions &", "{}">:$options,
        CArg<"::mlir::Value", "{}">:$alibiSlopes,
        CArg<"const ::mlir::pa::KVScales &", "{}">:$scales), [{
      ::llvm::SmallVector<::mlir::Type> types;
      (void)::mlir::pa::detail::inferFromOuts(outs, types);
      ::llvm::SmallVector<::mlir::Value> indptrs, indices, lastPageLens;
      for (const ::mlir::pa::PageTableOperands &level : levels) {
        indptrs.push_back(level.indptr);
        indices.push_back(level.indices);
        lastPageLens.push_back(level.lastPageLen);
      }
      build($_builder, $_state, types, q, kvCache, scales.k, scales.v,
            qoIndptrs, indptrs,
            indices, lastPageLens, alibiSlopes, outs, cache,
            causal ? $_builder.getUnitAttr() : ::mlir::UnitAttr(),
            options.getSmScaleAttr($_builder),
            options.getSoftCapAttr($_builder),
            options.getWindowAttr($_builder),
            options.getLseBase2Attr($_builder));
    }]>
  ];
  let hasCanonicalizer = 1;
  let extraClassDeclaration = paExtraDecls # [{
    int64_t getNumLevels() { return getQoIndptrs().size(); }
    /// The page table of level `level`.
    ::mlir::pa::PageTableOperands getPageTable(int64_t level) {
      return {getKvIndptrs()[level], getKvIndices()[level],
              getKvLastPageLens()[level]};
    }
  }];
}

//===----------------------------------------------------------------------===//
// Split-KV
//===----------------------------------------------------------------------===//

def PA_PlanSplitKVOp : PA_Op<"plan_split_kv"> {
  let summary = "split every request's KV into fixed-size chunks: a work list";
  let description = [{
    Computes, from the page table `pages(kv_indptr[B+1], kv_last_page_len[B])`
    (page size `page_size`), the CSR work list of split-KV: the items of
    request `b` are `work_indptr[b] .. work_indptr[b+1]-1`, item `w` covers
    tokens `[work_start[w], work_end[w])` of request `work_request[w]`;
    chunk `c` of request `b` covers `[c * C, min((c + 1) * C, kv_len))` with
    `C = chunk_size`. Requests without tokens get no item. This is exactly
    the host planner's `pa::rt::planFixedChunks`; the work-list outs must hold
    `sum_b ceil(kv_len[b] / C)` items (`B + ceil(kv_indptr[B] * P / C)` always
    suffices), which the CPU lowering asserts.

    ```mlir
    %wi, %wr, %ws, %we = pa.plan_split_kv pages(%indptr, %last : tensor<5xi32>, tensor<4xi32>)
        outs(%wi0, %wr0, %ws0, %we0 : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        {chunk_size = 512 : i64, page_size = 16 : i64}
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$kv_indptr,
                       PA_TensorOrMemRef:$kv_last_page_len,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       I64Attr:$page_size,
                       I64Attr:$chunk_size);
  let assemblyFormat = [{
    `pages` `(` $kv_indptr `,` $kv_last_page_len `:` type($kv_indptr) `,`
        type($kv_last_page_len) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

def PA_ShardPagesOp : PA_Op<"shard_pages"> {
  let summary = "the page table of one device's share of every request's pages";
  let description = [{
    Context parallelism (docs/ContextParallel.md): the pages of every request
    are split over `devices` devices and device `device` attends to its
    share only; the merge of the devices' states is the whole attention
    (the merge operator is commutative and associative). From the page table
    `pages(kv_indptr[B+1], kv_indices[nnz], kv_last_page_len[B])` (page size
    `page_size`) this op writes device `device`'s page table
    `(indptr[B+1], indices[nnz], last_page_len[B])`: request `b` with `n`
    pages keeps its pages `j` that device `d` owns, in their order. With
    contiguous ownership (the default) device `d` owns
    `[floor(n d / N), floor((n (d + 1)) / N))`, a range within one page of
    `n / N`; with `round_robin` the pages `j` with `j mod N = d`. Its
    `last_page_len[b]` is the request's when it owns the request's last page,
    else `page_size` (every other page is full; a request with no page on
    the device has no tokens there, whatever its `last_page_len`).
    `indices` holds `indptr[B]` entries; the rest of it (the other devices'
    share of `nnz`) is written 0. Every key keeps its content but not its
    position (a shard renumbers its keys from 0), so only position-free
    attention (no sliding window, no ALiBi) may run on a shard.

    ```mlir
    %ip1, %ix1, %lp1 = pa.shard_pages pages(%indptr, %indices, %last : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        outs(%ip0, %ix0, %lp0 : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        {device = 1 : i64, devices = 4 : i64, page_size = 16 : i64}
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$kv_indptr,
                       PA_TensorOrMemRef:$kv_indices,
                       PA_TensorOrMemRef:$kv_last_page_len,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       I64Attr:$page_size,
                       I64Attr:$devices,
                       I64Attr:$device,
                       UnitAttr:$round_robin);
  let assemblyFormat = [{
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

def PA_ShardWorkOp : PA_Op<"shard_work", [AttrSizedOperandSegments]> {
  let summary = "one device's share of every request's keys as a work list in the request's own positions";
  let description = [{
    Context parallelism that keeps key positions (docs/ContextParallel.md):
    where `pa.shard_pages` renumbers a device's keys from 0, this op writes
    device `device`'s share of every request as a `pa.prefill_partial`
    work list over the whole page table, one item per request `b` (so
    the seven outs are `[B]` `i32`): all of its queries
    (`work_qo_start = 0`, `work_qo_end = qo_len[b]`, rows from
    `work_partial_row = qo_indptr[b]` with `work_partial_stride = 1`) over
    the keys of the pages the device owns with contiguous ownership
    (`pa.shard_pages`: pages `[floor(n d / N), floor(n (d + 1) / N))` of
    the request's `n`), i.e. `work_kv_start = min(floor(n d / N) P,
    kv_len[b])` and `work_kv_end = min(floor(n (d + 1) / N) P,
    kv_len[b])`. The keys keep their positions, so causal, window,
    custom-mask and ALiBi attention may run on the share; device `d` reads
    only its own pages. The devices' items cover every request's keys
    disjointly, so the merge of the devices' partial states is the whole
    prefill.

    Without `queries` it writes the same key ranges as a
    `pa.decode_partial` work list of four outs, `work_indptr[B + 1] = b`
    (item `b` is request `b`) and `work_request`, `work_start`, `work_end`
    (`[B]`): the positional sharding of a decode with a window or ALiBi.

    ```mlir
    %r, %qs, %qe, %ks, %ke, %row, %st = pa.shard_work
        pages(%indptr, %indices, %last : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        queries(%qo_indptr : tensor<5xi32>)
        outs(%w0, %w1, %w2, %w3, %w4, %w5, %w6 : tensor<4xi32>, ...)
        {device = 1 : i64, devices = 4 : i64, page_size = 16 : i64}
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$kv_indptr,
                       PA_TensorOrMemRef:$kv_indices,
                       PA_TensorOrMemRef:$kv_last_page_len,
                       Optional<PA_TensorOrMemRef>:$qo_indptr,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       I64Attr:$page_size,
                       I64Attr:$devices,
                       I64Attr:$device);
  let assemblyFormat = [{
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`queries` `(` $qo_indptr^ `:` type($qo_indptr) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

def PA_DecodePartialOp : PA_Op<"decode_partial", [AttrSizedOperandSegments,
    PA_AttentionOpInterface, PA_PagedOpInterface]> {
  let summary = "decode attention over the KV chunks of a work list";
  let description = !strconcat([{
    The split-KV form of `pa.decode`: for every work item
    `w < work_indptr[B]` (see `pa.plan_split_kv`), the query of request
    `work_request[w]` attends to that request's tokens
    `[work_start[w], work_end[w])` only, and the state is written to row `w`
    of `o_part[W, Hq, D]` (f32) and `lse_part[W, Hq]` (f32). The query's
    position is still `kv_len - 1` of the whole request (for `window` and
    ALiBi). Rows `>= work_indptr[B]` are unspecified. `pa.merge_segments`
    over `work_indptr` then gives `pa.decode`'s result: attention over a union
    of disjoint key sets is the merge of the parts.
  }], PA_AttnOptionsDoc, PA_KVScalesDoc, [{

    ```mlir
    %op, %lp = pa.decode_partial q(%q : tensor<4x32x128xf16>)
        kv(%kv : tensor<?x2x16x8x128xf16>)
        pages(%indptr, %indices, %last : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        work(%wi, %wr, %ws, %we : tensor<5xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        outs(%o0, %l0 : tensor<?x32x128xf32>, tensor<?x32xf32>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```
  }]);
  let arguments = !con((ins
    PA_TensorOrMemRef:$q,
    Variadic<PA_TensorOrMemRef>:$kv_cache,
    Optional<PA_TensorOrMemRef>:$k_scale,
    Optional<PA_TensorOrMemRef>:$v_scale,
    PA_TensorOrMemRef:$kv_indptr,
    PA_TensorOrMemRef:$kv_indices,
    PA_TensorOrMemRef:$kv_last_page_len,
    PA_TensorOrMemRef:$work_indptr,
    PA_TensorOrMemRef:$work_request,
    PA_TensorOrMemRef:$work_start,
    PA_TensorOrMemRef:$work_end,
    Optional<PA_TensorOrMemRef>:$alibi_slopes,
    Variadic<PA_TensorOrMemRef>:$outs,
    PA_PagedKVAttr:$cache), PA_AttnOptions);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)`
    `kv` `(` $kv_cache `:` type($kv_cache) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    `work` `(` $work_indptr `,` $work_request `,` $work_start `,` $work_end `:`
        type($work_indptr) `,` type($work_request) `,` type($work_start) `,`
        type($work_end) `)`
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let builders = [
    /// Result types are those of the tensor outs.
    OpBuilder<!con((ins "::mlir::Value":$q, "::mlir::ValueRange":$kvCache,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "const ::mlir::pa::WorkListOperands &":$work,
        "::mlir::ValueRange":$outs), PA_AttnBuilderTail), [{
      ::llvm::SmallVector<::mlir::Type> types;
      (void)::mlir::pa::detail::inferFromOuts(outs, types);
      build($_builder, $_state, types, q, kvCache, scales.k, scales.v,
            pages.indptr, pages.indices, pages.lastPageLen, work.indptr,
            work.request,
            work.start, work.end, alibiSlopes, outs, cache,
            options.getSmScaleAttr($_builder),
            options.getSoftCapAttr($_builder),
            options.getWindowAttr($_builder),
            options.getLseBase2Attr($_builder));
    }]>,
    /// `like`'s query, cache, ALiBi slopes and options over the chunks of
    /// the work list `work` (e.g. a pa.decode split over its KV).
    OpBuilder<(ins "::mlir::pa::AttentionOpInterface":$like,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "const ::mlir::pa::WorkListOperands &":$work,
        "::mlir::ValueRange":$outs), [{
      build($_builder, $_state, like.getQ(), like.getKvCache(), pages, work,
            outs, like.getCache(), like.getAttentionOptions(),
            like.getAlibiSlopes(), like.getKVScales());
    }]>
  ];
}

def PA_MergeSegmentsOp : PA_Op<"merge_segments"> {
  let summary = "merge the consecutive partial states of every segment";
  let description = [{
    Row `s` of the result `o[S, H, D]`, `lse[S, H]` is the merge (see
    `pa.merge`) of the partial states `o_part[w]`, `lse_part[w]` for
    `segments[s] <= w < segments[s+1]` (`segments[S+1]`, e.g. a split-KV work
    list's `work_indptr`). An empty segment gives the identity
    `(0, -inf)`. `o` may have a narrower element type than `o_part`.

    ```mlir
    %o, %lse = pa.merge_segments states(%op, %lp : tensor<?x32x128xf32>, tensor<?x32xf32>)
        segments(%wi : tensor<5xi32>)
        outs(%o0, %l0 : tensor<4x32x128xf16>, tensor<4x32xf32>)
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$o_part,
                       PA_TensorOrMemRef:$lse_part,
                       PA_TensorOrMemRef:$segments,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       UnitAttr:$lse_base2);
  let assemblyFormat = [{
    `states` `(` $o_part `,` $lse_part `:` type($o_part) `,` type($lse_part) `)`
    `segments` `(` $segments `:` type($segments) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// Attention states
//===----------------------------------------------------------------------===//

def PA_MergeOp : PA_Op<"merge", [AttrSizedOperandSegments]> {
  let summary = "merge of N >= 1 attention states";
  let description = [{
    `states(%o_0, %lse_0, %o_1, %lse_1, ...)` lists the states as (o, lse)
    pairs of identical shapes: `o[..., D]` (any float type, e.g. f32
    partial states merged into an f16 out) and `lse[...]` (f32). The result is
    the left fold of the binary merge
    `(o_a, lse_a) (+) (o_b, lse_b)`: `m = max(lse_a, lse_b)`; `m == -inf`
    gives `(0, -inf)`; else `w = exp(lse - m)`,
    `o = (w_a o_a + w_b o_b) / (w_a + w_b)`, `lse = m + ln(w_a + w_b)`. The
    operator is commutative and associative with identity `(0, -inf)`, so the
    order of the states does not matter. With `lse_base2`, every lse (inputs
    and result) is in base 2.

    ```mlir
    %o, %lse = pa.merge states(%oa, %la, %ob, %lb : tensor<4x32x128xf16>,
        tensor<4x32xf32>, tensor<4x32x128xf16>, tensor<4x32xf32>)
        outs(%o0, %l0 : tensor<4x32x128xf16>, tensor<4x32xf32>)
    ```
  }];
  let arguments = (ins Variadic<PA_TensorOrMemRef>:$states,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       UnitAttr:$lse_base2);
  let assemblyFormat = [{
    `states` `(` $states `:` type($states) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let hasCanonicalizer = 1;
  let extraClassDeclaration = paExtraDecls # [{
    int64_t getNumStates() { return getStates().size() / 2; }
    ::mlir::Value getStateO(int64_t i) { return getStates()[2 * i]; }
    ::mlir::Value getStateLse(int64_t i) { return getStates()[2 * i + 1]; }
  }];
}

def PA_MergeStatesOp : PA_Op<"merge_states"> {
  let summary = "merge of the N stacked states of every row";
  let description = [{
    FlashInfer's `merge_states` layout: `o[S, N, H, D]` and `lse[S, N, H]`
    hold `N` states for each of `S` rows; the result `o[S, H, D]`,
    `lse[S, H]` is their merge (see `pa.merge`). `N = 0` gives the identity
    `(0, -inf)`. This is what the split-KV reduction kernel computes.

    ```mlir
    %o, %lse = pa.merge_states states(%v, %s : tensor<?x4x32x128xf32>, tensor<?x4x32xf32>)
        outs(%o0, %l0 : tensor<?x32x128xf16>, tensor<?x32xf32>)
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$o_states,
                       PA_TensorOrMemRef:$lse_states,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       UnitAttr:$lse_base2);
  let assemblyFormat = [{
    `states` `(` $o_states `,` $lse_states `:` type($o_states) `,` type($lse_states) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// KV cache writes
//===----------------------------------------------------------------------===//

def PA_AppendKVOp : PA_Op<"append_kv",
                          [AttrSizedOperandSegments, PA_PagedOpInterface],
                          /*readsInits=*/1> {
  let summary = "append ragged K/V rows through a CSR page table";
  let description = !strconcat([{
    New rows `k_new[N, Hkv, D]`, `v_new[N, Hkv, D]`, ragged by
    `append_indptr[B+1]`, are written into the paged cache (the `outs`). As in
    FlashInfer's `append_paged_kv_cache`, the page table describes the cache
    *after* the append (pages are allocated beforehand): row `j` of request
    `b` goes to token position `kv_len[b] - append_len[b] + j`, i.e. page
    `kv_indices[kv_indptr[b] + t / P]`, slot `t % P`. Everything else in the
    cache is left as it was. Requires `append_len[b] <= kv_len[b]`.

    ```mlir
    %k2, %v2 = pa.append_kv new(%kn, %vn, %append_indptr :
          tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<5xi32>)
        pages(%indptr, %indices, %last : tensor<5xi32>, tensor<?xi32>, tensor<4xi32>)
        outs(%k, %v : tensor<?x16x8x128xf16>, tensor<?x16x8x128xf16>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```
  }], PA_KVScalesDoc);
  let arguments = (ins PA_TensorOrMemRef:$k_new,
                       PA_TensorOrMemRef:$v_new,
                       PA_TensorOrMemRef:$append_indptr,
                       PA_TensorOrMemRef:$kv_indptr,
                       PA_TensorOrMemRef:$kv_indices,
                       PA_TensorOrMemRef:$kv_last_page_len,
                       Optional<PA_TensorOrMemRef>:$k_scale,
                       Optional<PA_TensorOrMemRef>:$v_scale,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       PA_PagedKVAttr:$cache);
  let assemblyFormat = [{
    `new` `(` $k_new `,` $v_new `,` $append_indptr `:` type($k_new) `,`
        type($v_new) `,` type($append_indptr) `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let builders = [
    /// Result types are those of the tensor outs (the cache).
    OpBuilder<(ins "::mlir::Value":$kNew, "::mlir::Value":$vNew,
        "::mlir::Value":$appendIndptr,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "::mlir::ValueRange":$outs, "::mlir::pa::PagedKVAttr":$cache,
        CArg<"const ::mlir::pa::KVScales &", "{}">:$scales), [{
      ::llvm::SmallVector<::mlir::Type> types;
      (void)::mlir::pa::detail::inferFromOuts(outs, types);
      build($_builder, $_state, types, kNew, vNew, appendIndptr, pages.indptr,
            pages.indices, pages.lastPageLen, scales.k, scales.v, outs,
            cache);
    }]>
  ];
}

def PA_AppendKVSlotsOp : PA_Op<"append_kv_slots", [AttrSizedOperandSegments],
                               /*readsInits=*/1> {
  let summary = "write K/V rows to the cache slots of a slot mapping (vLLM form)";
  let description = !strconcat([{
    Row `r` of `k_new[N, Hkv, D]` / `v_new[N, Hkv, D]` goes to page
    `slot_mapping[r] / P`, slot `slot_mapping[r] % P`; rows whose slot is
    negative are skipped (vLLM's `reshape_and_cache` padding convention).

    ```mlir
    %kv2 = pa.append_kv_slots new(%kn, %vn : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
        slots(%slots : tensor<?xi32>)
        outs(%kv : tensor<?x2x16x8x128xf16>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```
  }], PA_KVScalesDoc);
  let arguments = (ins PA_TensorOrMemRef:$k_new,
                       PA_TensorOrMemRef:$v_new,
                       PA_TensorOrMemRef:$slot_mapping,
                       Optional<PA_TensorOrMemRef>:$k_scale,
                       Optional<PA_TensorOrMemRef>:$v_scale,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       PA_PagedKVAttr:$cache);
  let assemblyFormat = [{
    `new` `(` $k_new `,` $v_new `:` type($k_new) `,` type($v_new) `)`
    `slots` `(` $slot_mapping `:` type($slot_mapping) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

def PA_ScatterKVOp : PA_Op<"scatter_kv",
                           [AttrSizedOperandSegments, PA_PagedOpInterface],
                           /*readsInits=*/1> {
  let summary = "scatter recomputed K/V rows into the paged cache (CacheBlend)";
  let description = !strconcat([{
    Rows `k_rows[M, Hkv, D]`, `v_rows[M, Hkv, D]`, ragged by
    `rows_indptr[B+1]`, are written to request-local token positions
    `positions[M]` (each `< kv_len[b]`) through the page table. This is how
    CacheBlend fuses the recomputed tokens (selected by `pa.select_topk`)
    into the reused cache.

    ```mlir
    %kv2 = pa.scatter_kv new(%kr, %vr, %rows_indptr :
          tensor<?x8x128xf16>, tensor<?x8x128xf16>, tensor<3xi32>)
        positions(%pos : tensor<?xi32>)
        pages(%indptr, %indices, %last : tensor<3xi32>, tensor<?xi32>, tensor<2xi32>)
        outs(%kv : tensor<?x2x16x8x128xf16>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```
  }], PA_KVScalesDoc);
  let arguments = (ins PA_TensorOrMemRef:$k_rows,
                       PA_TensorOrMemRef:$v_rows,
                       PA_TensorOrMemRef:$rows_indptr,
                       PA_TensorOrMemRef:$positions,
                       PA_TensorOrMemRef:$kv_indptr,
                       PA_TensorOrMemRef:$kv_indices,
                       PA_TensorOrMemRef:$kv_last_page_len,
                       Optional<PA_TensorOrMemRef>:$k_scale,
                       Optional<PA_TensorOrMemRef>:$v_scale,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       PA_PagedKVAttr:$cache);
  let assemblyFormat = [{
    `new` `(` $k_rows `,` $v_rows `,` $rows_indptr `:` type($k_rows) `,`
        type($v_rows) `,` type($rows_indptr) `)`
    `positions` `(` $positions `:` type($positions) `)`
    `pages` `(` $kv_indptr `,` $kv_indices `,` $kv_last_page_len `:`
        type($kv_indptr) `,` type($kv_indices) `,` type($kv_last_page_len) `)`
    (`scales` `(` $k_scale^ `,` $v_scale `:` type($k_scale) `,`
        type($v_scale) `)`)?
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
  let builders = [
    /// Result types are those of the tensor outs (the cache).
    OpBuilder<(ins "::mlir::Value":$kRows, "::mlir::Value":$vRows,
        "::mlir::Value":$rowsIndptr, "::mlir::Value":$positions,
        "const ::mlir::pa::PageTableOperands &":$pages,
        "::mlir::ValueRange":$outs, "::mlir::pa::PagedKVAttr":$cache,
        CArg<"const ::mlir::pa::KVScales &", "{}">:$scales), [{
      ::llvm::SmallVector<::mlir::Type> types;
      (void)::mlir::pa::detail::inferFromOuts(outs, types);
      build($_builder, $_state, types, kRows, vRows, rowsIndptr, positions,
            pages.indptr, pages.indices, pages.lastPageLen, scales.k,
            scales.v, outs, cache);
    }]>
  ];
}

//===----------------------------------------------------------------------===//
// Masks and CacheBlend
//===----------------------------------------------------------------------===//

def PA_PackMaskOp : PA_Op<"pack_mask"> {
  let summary = "segmented bit packing of a ragged boolean mask";
  let description = [{
    `mask[indptr[B]]` (i1, or i8 where nonzero is true) holds one flattened
    boolean segment per request, `indptr[B+1]` in elements. Each segment is
    packed little-endian, 8 per byte (bit `j` of byte `k` is element
    `8k + j`), padded with zero bits to a whole byte, segments concatenated:
    segment `b` has `ceil(n_b / 8)` bytes starting at `packed_indptr[b]`. The
    outs are the packed bytes (i8, sized `sum ceil(n_b / 8)`) and
    `packed_indptr[B+1]` (FlashInfer's `segment_packbits`).

    ```mlir
    %p, %pi = pa.pack_mask mask(%m, %indptr : tensor<?xi1>, tensor<3xi32>)
        outs(%p0, %pi0 : tensor<?xi8>, tensor<3xi32>)
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$mask,
                       PA_TensorOrMemRef:$indptr,
                       Variadic<PA_TensorOrMemRef>:$outs);
  let assemblyFormat = [{
    `mask` `(` $mask `,` $indptr `:` type($mask) `,` type($indptr) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

def PA_KVDeviationOp : PA_Op<"kv_deviation"> {
  let summary = "per-token L2 deviation between recomputed and cached K (or V)";
  let description = [{
    CacheBlend's KV deviation: `dev[t] = || new[t] - cached[t] ||_2` over the
    `[H, D]` slice of token `t`, for `new[N, H, D]` and `cached[N, H, D]`
    (one layer). `dev` is `[N]` f32.

    ```mlir
    %dev = pa.kv_deviation ins(%new, %old : tensor<?x8x128xf16>, tensor<?x8x128xf16>)
        outs(%d0 : tensor<?xf32>)
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$new_rows,
                       PA_TensorOrMemRef:$cached_rows,
                       Variadic<PA_TensorOrMemRef>:$outs);
  let assemblyFormat = [{
    `ins` `(` $new_rows `,` $cached_rows `:` type($new_rows) `,` type($cached_rows) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

def PA_SelectTopKOp : PA_Op<"select_topk"> {
  let summary = "per-request top-k tokens by deviation (CacheBlend HKVD)";
  let description = [{
    For every request `b` of `deviation[indptr[B]]` (f32, ragged by
    `indptr[B+1]`), picks `k_b = ceil(ratio * n_b)` tokens with the largest
    deviation, ties broken by lower index first, and writes their
    request-local positions in increasing order (ready to be `q_positions` of
    a partial prefill) to `positions`, ragged by `out_indptr[B+1]`
    (`out_indptr[b+1] - out_indptr[b] = k_b`). `ratio` is in `(0, 1]`. The
    `positions` out must hold at least `sum_b k_b` entries.

    ```mlir
    %pos, %pi = pa.select_topk ins(%dev, %indptr : tensor<?xf32>, tensor<3xi32>)
        outs(%p0, %pi0 : tensor<?xi32>, tensor<3xi32>) {ratio = 1.500000e-01 : f64}
    ```
  }];
  let arguments = (ins PA_TensorOrMemRef:$deviation,
                       PA_TensorOrMemRef:$indptr,
                       Variadic<PA_TensorOrMemRef>:$outs,
                       F64Attr:$ratio);
  let assemblyFormat = [{
    `ins` `(` $deviation `,` $indptr `:` type($deviation) `,` type($indptr) `)`
    `outs` `(` $outs `:` type($outs) `)`
    attr-dict
  }];
}

#endif // PAGEDATTN_DIALECT_PAOPS_TD
