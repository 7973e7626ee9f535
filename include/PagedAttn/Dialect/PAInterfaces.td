//===- PAInterfaces.td - op interfaces of the pa dialect ---*- tablegen -*-===//
//
// The operand groups that several pa ops share, as op interfaces: the inputs
// and options of an attention op, and the CSR page table of an op with one.
// Every method has the name of the accessor ODS generates for the ops, so
// code written against a concrete op compiles unchanged against the
// interface.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_DIALECT_PAINTERFACES_TD
#define PAGEDATTN_DIALECT_PAINTERFACES_TD

include "mlir/IR/OpBase.td"

def PA_AttentionOpInterface : OpInterface<"AttentionOpInterface"> {
  let cppNamespace = "::mlir::pa";
  let description = [{
    An attention op over a paged KV cache: `pa.decode`, `pa.prefill`,
    `pa.cascade` and `pa.decode_partial`. Gives the query `q[tokens, Hq, D]`,
    the cache operands `kv(...)` with their `#pa.paged_kv` attribute, the
    optional ALiBi slopes, the state outs `(o, lse)` and the options
    `sm_scale`, `logits_soft_cap`, `window` and `lse_base2` (raw, as the
    generated accessors return them, and together as an `AttentionOptions`).
    What the op attends to (page tables, work lists, masks) is op-specific.
  }];
  let methods = [
    InterfaceMethod<"The query `[tokens, Hq, D]`.",
      "::mlir::TypedValue<::mlir::Type>", "getQ">,
    InterfaceMethod<"The cache operands: one joint K/V tensor or K and V.",
      "::mlir::Operation::operand_range", "getKvCache">,
    InterfaceMethod<"The static layout of the cache (`#pa.paged_kv`).",
      "::mlir::pa::PagedKVAttr", "getCache">,
    InterfaceMethod<"The static layout of the cache (`#pa.paged_kv`).",
      "::mlir::pa::PagedKVAttr", "getCacheAttr">,
    InterfaceMethod<"The K scales of an fp8 cache (`[1]` or `[Hkv]` f32), "
                    "or null.",
      "::mlir::TypedValue<::mlir::Type>", "getKScale">,
    InterfaceMethod<"The V scales of an fp8 cache (`[1]` or `[Hkv]` f32), "
                    "or null.",
      "::mlir::TypedValue<::mlir::Type>", "getVScale">,
    InterfaceMethod<"The ALiBi slopes `[Hq]` f32, or null.",
      "::mlir::TypedValue<::mlir::Type>", "getAlibiSlopes">,
    InterfaceMethod<"The outs: the state `(o, lse)` (partial states for "
                    "`pa.decode_partial`).",
      "::mlir::Operation::operand_range", "getOuts">,
    InterfaceMethod<"`sm_scale`, if set.",
      "::std::optional<::llvm::APFloat>", "getSmScale">,
    InterfaceMethod<"`sm_scale`, or null.",
      "::mlir::FloatAttr", "getSmScaleAttr">,
    InterfaceMethod<"`logits_soft_cap`, if set.",
      "::std::optional<::llvm::APFloat>", "getLogitsSoftCap">,
    InterfaceMethod<"`logits_soft_cap`, or null.",
      "::mlir::FloatAttr", "getLogitsSoftCapAttr">,
    InterfaceMethod<"`window`, if set.",
      "::std::optional<uint64_t>", "getWindow">,
    InterfaceMethod<"`window`, or null.",
      "::mlir::IntegerAttr", "getWindowAttr">,
    InterfaceMethod<"True if `lse` is reported in base 2.",
      "bool", "getLseBase2">,
    InterfaceMethod<"The `lse_base2` unit attribute, or null.",
      "::mlir::UnitAttr", "getLseBase2Attr">,
  ];
  let extraSharedClassDeclaration = [{
    /// The `o` out (`outs[0]`).
    ::mlir::Value getO() { return $_op.getOuts()[0]; }
    /// The `lse` out (`outs[1]`).
    ::mlir::Value getLse() { return $_op.getOuts()[1]; }
    /// The scale operands `scales(%k_scale, %v_scale)` (null without).
    ::mlir::pa::KVScales getKVScales() {
      return {$_op.getKScale(), $_op.getVScale()};
    }
    /// The options `sm_scale`, `logits_soft_cap`, `window` and `lse_base2`.
    ::mlir::pa::AttentionOptions getAttentionOptions() {
      return ::mlir::pa::AttentionOptions::get(
          $_op.getSmScale(), $_op.getLogitsSoftCap(), $_op.getWindow(),
          $_op.getLseBase2());
    }
  }];
}

def PA_PagedOpInterface : OpInterface<"PagedOpInterface"> {
  let cppNamespace = "::mlir::pa";
  let description = [{
    An op that reads one CSR page table
    `pages(kv_indptr[B+1], kv_indices[nnz], kv_last_page_len[B])`, whose page
    size is that of its cache attribute (`#pa.paged_kv` or `#pa.paged_mla`):
    `pa.decode`, `pa.prefill`, `pa.decode_partial`, `pa.append_kv`,
    `pa.scatter_kv` and `pa.mla_decode`.
  }];
  let methods = [
    InterfaceMethod<"`kv_indptr[B+1]`: request `b` owns pages "
                    "`kv_indices[kv_indptr[b] .. kv_indptr[b+1]-1]`.",
      "::mlir::TypedValue<::mlir::Type>", "getKvIndptr">,
    InterfaceMethod<"`kv_indices[nnz]`: the page indices of all requests.",
      "::mlir::TypedValue<::mlir::Type>", "getKvIndices">,
    InterfaceMethod<"`kv_last_page_len[B]`: tokens in each request's last "
                    "page.",
      "::mlir::TypedValue<::mlir::Type>", "getKvLastPageLen">,
    InterfaceMethod<"The page size `P` of the table: that of the op's "
                    "cache attribute.",
      "int64_t", "getPageSize", (ins), [{}], [{
        return $_op.getCache().getPageSize();
      }]>,
  ];
  let extraSharedClassDeclaration = [{
    /// The three operands of the page table.
    ::mlir::pa::PageTableOperands getPageTable() {
      return {$_op.getKvIndptr(), $_op.getKvIndices(),
              $_op.getKvLastPageLen()};
    }
  }];
}

#endif // PAGEDATTN_DIALECT_PAINTERFACES_TD
