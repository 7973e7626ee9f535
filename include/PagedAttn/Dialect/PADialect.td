//===- PADialect.td - the pa dialect, its enums and attributes -*- tablegen -*-===//
//
// The `pa` dialect: paged attention as composable, verified IR.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_DIALECT_PADIALECT_TD
#define PAGEDATTN_DIALECT_PADIALECT_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def PA_Dialect : Dialect {
  let name = "pa";
  let cppNamespace = "::mlir::pa";
  let summary = "Paged attention: decode, prefill, KV append, state merge, "
                "cascade and CacheBlend over paged KV caches";
  let description = [{
    The `pa` dialect expresses paged-attention programs as value-semantic IR.
    Every op is in destination-passing style: it works on ranked tensors (and
    then returns its updated `outs` as results) or on memrefs (and then writes
    its `outs` in place and returns nothing). One-Shot Bufferize moves a tensor
    program to the memref form; the lowerings start from the memref form.

    Static configuration lives in attributes so that kernels specialize on it:
    the `#pa.paged_kv` attribute fixes the cache layout (NHD or HND), the page
    size, the number of KV heads and the head dim. Runtime sizes (batch,
    number of pages, ragged lengths) are SSA values carried by the operands:

    * a *ragged tensor* is a data operand `[indptr[B], ...]` plus its int32
      `indptr[B+1]`;
    * a *CSR page table* is the operand triple `pages(kv_indptr, kv_indices,
      kv_last_page_len)` interpreted with the page size of `#pa.paged_kv`;
    * a *paged KV cache* is `kv(%kv)` (K and V in one tensor
      `[num_pages, 2, ...]`) or `kv(%k, %v)` (two tensors of the same layout);
    * an *attention state* is the pair `(o, lse)`; `lse` is f32, natural log
      unless `lse_base2` is set.

    The binding semantics of every op are in docs/Semantics.md; the
    reference library (`lib/Reference`) implements them in float64.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 0;
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

class PA_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<PA_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def PA_KVLayout : I32EnumAttr<"KVLayout", "layout of a page of a paged KV cache", [
    I32EnumAttrCase<"NHD", 0, "nhd">,
    I32EnumAttrCase<"HND", 1, "hnd">]> {
  let cppNamespace = "::mlir::pa";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def PA_PagedKVAttr : PA_Attr<"PagedKV", "paged_kv"> {
  let summary = "static configuration of a paged KV cache";
  let description = [{
    Fixes what a kernel specializes on: the page layout, the page size `P`,
    the number of KV heads `Hkv` and the head dim `D`. The element type is the
    cache operand's. A cache operand is either one tensor holding K and V

    * NHD: `[num_pages, 2, P, Hkv, D]`, HND: `[num_pages, 2, Hkv, P, D]`

    or two tensors (K, then V) of the same layout without the `2` dimension.
    `num_pages` may be dynamic; every other dimension must match the attribute.

    ```mlir
    #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>
    ```
  }];
  let parameters = (ins EnumParameter<PA_KVLayout>:$layout,
                        "int64_t":$pageSize,
                        "int64_t":$numKVHeads,
                        "int64_t":$headDim);
  let assemblyFormat = [{
    `<` $layout `,` `page_size` `=` $pageSize `,` `kv_heads` `=` $numKVHeads
    `,` `head_dim` `=` $headDim `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The shape of one K (or V) cache tensor with `numPages` pages.
    ::llvm::SmallVector<int64_t> getSplitShape(int64_t numPages) const;
    /// The shape of a joint K/V cache tensor with `numPages` pages.
    ::llvm::SmallVector<int64_t> getJointShape(int64_t numPages) const;
  }];
}

def PA_PagedMLAAttr : PA_Attr<"PagedMLA", "paged_mla"> {
  let summary = "static configuration of a paged MLA (latent) KV cache";
  let description = [{
    Multi-head latent attention (DeepSeek V2/V3, FlashInfer's MLA page
    layout) keeps one latent row per token instead of K and V per KV head:
    the compressed key/value `ckv` (`D_ckv`, 512 in DeepSeek) followed by
    the rotary key `kpe` (`D_kpe`, 64), with no KV-head dimension. The cache
    operand is one tensor

    * `[num_pages, P, D_ckv + D_kpe]`, element `[p, s, 0 .. D_ckv)` the ckv
      row of (page `p`, slot `s`) and `[p, s, D_ckv .. D_ckv + D_kpe)` its
      kpe row.

    The attribute fixes the page size `P` and the two widths; the element
    type is the cache operand's; `num_pages` may be dynamic.

    ```mlir
    #pa.paged_mla<page_size = 64, ckv = 512, kpe = 64>
    ```
  }];
  let parameters = (ins "int64_t":$pageSize,
                        "int64_t":$ckvDim,
                        "int64_t":$kpeDim);
  let assemblyFormat = [{
    `<` `page_size` `=` $pageSize `,` `ckv` `=` $ckvDim `,` `kpe` `=` $kpeDim
    `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The width of a cache row, D_ckv + D_kpe.
    int64_t getRowDim() const { return getCkvDim() + getKpeDim(); }
    /// The shape of the cache tensor with `numPages` pages.
    ::llvm::SmallVector<int64_t> getShape(int64_t numPages) const {
      return {numPages, getPageSize(), getRowDim()};
    }
  }];
}

#endif // PAGEDATTN_DIALECT_PADIALECT_TD
