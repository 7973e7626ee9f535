//===- PATileOps.td - tile-level ops of the pa dialect -----*- tablegen -*-===//
//
// The tile-level IR between the attention ops and a target: what
// `pa-tile-attention` produces from a memref-form `pa.prefill`. Tiles are
// small static memrefs (f32 for scores and states; Q / K / V f32 as tiled, or
// f16 / bf16 views of workgroup memory after pa-promote-tiles); the ops
// are target-independent, so the tiled program lowers to loops on the CPU
// (convert-pa-to-loops) and is checked against the reference in CI.
//
// A query tile packs the g query heads of one KV head into its rows, as
// FlashInfer does: tile row r is query `row0 + r / g`, head `hk * g + r % g`,
// so each K/V tile is read once for the whole GQA group. A tile of BM rows
// holds at most BM / g queries (`rows <= BM / g`); when g does not divide BM
// the rows past the last whole group are never valid.
//
//===----------------------------------------------------------------------===//

#ifndef PAGEDATTN_DIALECT_PATILEOPS_TD
#define PAGEDATTN_DIALECT_PATILEOPS_TD

include "PagedAttn/Dialect/PADialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class PA_TileOp<string mnemonic, list<Trait> traits = []>
    : Op<PA_Dialect, "tile." # mnemonic, traits> {
  let hasVerifier = 1;
}

def PA_F32Tile2D : MemRefRankOf<[F32], [2]>;
def PA_F32Tile1D : MemRefRankOf<[F32], [1]>;
// An operand tile of a matmul (Q, K, V): f32 as the tiling emits it, or the
// cache's f16 / bf16 / fp8 once pa-promote-tiles has placed it in workgroup
// memory (any layout: a strided view of the kernel's shared memory).
def PA_OperandTile2D : MemRefRankOf<[F32, F16, BF16, F8E4M3FN, F8E5M2], [2]>;

def PA_TileLoadQOp : PA_TileOp<"load_q"> {
  let summary = "load a GQA-packed query tile, scaled";
  let description = [{
    Fills `tile[BM, D]` (f32) with the queries of rows
    `[row0, row0 + rows)` of `q[N, Hq, D]` for the `g = group` query heads
    of KV head `kv_head`, multiplied by `scale`: tile row `r` holds
    `scale * q[row0 + r / g, kv_head * g + r % g, :]` when `r / g < rows`,
    and 0 otherwise.

    ```mlir
    pa.tile.load_q q(%q : memref<?x32x128xf16>) rows(%r0, %n) kv_head(%hk)
        outs(%qt : memref<64x128xf32>) {group = 4 : i64, scale = 0.088 : f32}
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "queries", [MemRead]>:$q,
                       Index:$row0, Index:$rows, Index:$kv_head,
                       Arg<PA_F32Tile2D, "query tile", [MemWrite]>:$tile,
                       I64Attr:$group, F32Attr:$scale);
  let assemblyFormat = [{
    `q` `(` $q `:` type($q) `)` `rows` `(` $row0 `,` $rows `)`
    `kv_head` `(` $kv_head `)` `outs` `(` $tile `:` type($tile) `)` attr-dict
  }];
}

def PA_TileGatherKVOp : PA_TileOp<"gather_kv"> {
  let summary = "gather a K/V tile of BN tokens through the page table";
  let description = [{
    Fills `k[BN, D]` and `v[BN, D]` (f32) with tokens `t0 .. t0 + BN - 1`
    of request `request` and KV head `kv_head` of the paged cache (joint or
    split, NHD or HND, `cache`), found through
    `pages(kv_indptr, kv_indices)`: token `t` is in page
    `kv_indices[kv_indptr[request] + t / P]` at slot `t % P`. Tokens at or
    beyond `end` are not read; their rows are 0. The tiles hold the stored
    elements: over an fp8 cache (`f8E4M3FN`, `f8E5M2`) the fp8 values
    without their scales, which `pa.tile.qk`'s `k_scale` and
    `pa.tile.store`'s `v_scale` apply.

    ```mlir
    pa.tile.gather_kv kv(%kv : memref<?x2x16x8x128xf16>)
        pages(%ip, %ix : memref<?xi32>, memref<?xi32>) request(%b)
        tokens(%t0, %len) kv_head(%hk)
        outs(%kt, %vt : memref<64x128xf32>, memref<64x128xf32>)
        {cache = #pa.paged_kv<nhd, page_size = 16, kv_heads = 8, head_dim = 128>}
    ```
  }];
  let arguments = (ins Arg<Variadic<AnyMemRef>, "cache", [MemRead]>:$kv_cache,
                       Arg<AnyMemRef, "kv_indptr", [MemRead]>:$kv_indptr,
                       Arg<AnyMemRef, "kv_indices", [MemRead]>:$kv_indices,
                       Index:$request, Index:$t0, Index:$end, Index:$kv_head,
                       Arg<PA_F32Tile2D, "K tile", [MemWrite]>:$k_tile,
                       Arg<PA_F32Tile2D, "V tile", [MemWrite]>:$v_tile,
                       PA_PagedKVAttr:$cache);
  let assemblyFormat = [{
    `kv` `(` $kv_cache `:` type($kv_cache) `)`
    `pages` `(` $kv_indptr `,` $kv_indices `:` type($kv_indptr) `,`
        type($kv_indices) `)`
    `request` `(` $request `)` `tokens` `(` $t0 `,` $end `)`
    `kv_head` `(` $kv_head `)`
    `outs` `(` $k_tile `,` $v_tile `:` type($k_tile) `,` type($v_tile) `)`
    attr-dict
  }];
}

def PA_TileQKOp : PA_TileOp<"qk"> {
  let summary = "scores of a tile: S = Q K^T";
  let description = [{
    `s[BM, BN] = scale * k_scale * q[BM, D] * k[BN, D]^T`, accumulated in
    f32 (`scale` defaults to 1; `k_scale`, an f32 value, is the K scale of
    an fp8 cache's KV head, 1 without it). Q and K are f32 tiles, or f16 /
    bf16 tiles in workgroup memory after `pa-promote-tiles` (which moves
    the query scale of `pa.tile.load_q` here and, over an fp8 cache, gives
    K as the cache's fp8 bytes or widened to Q's type); `pa-tile-to-mma`
    maps the op onto `nvgpu.ldmatrix` + `nvgpu.mma.sync` (widening fp8
    fragments in registers).

    ```mlir
    pa.tile.qk ins(%qt, %kt : memref<64x128xf32>, memref<64x128xf32>)
        outs(%s : memref<64x64xf32>)
    pa.tile.qk ins(%qt, %kt : memref<64x128xf32>, memref<64x128xf32>)
        k_scale(%ks) outs(%s : memref<64x64xf32>)
    ```
  }];
  let arguments = (ins Arg<PA_OperandTile2D, "Q tile", [MemRead]>:$q,
                       Arg<PA_OperandTile2D, "K tile", [MemRead]>:$k,
                       Optional<F32>:$k_scale,
                       Arg<PA_F32Tile2D, "scores", [MemWrite]>:$s,
                       OptionalAttr<F32Attr>:$scale);
  let assemblyFormat = [{
    `ins` `(` $q `,` $k `:` type($q) `,` type($k) `)`
    (`k_scale` `(` $k_scale^ `)`)?
    `outs` `(` $s `:` type($s) `)` attr-dict
  }];
}

def PA_TileMaskOp : PA_TileOp<"mask", [AttrSizedOperandSegments]> {
  let summary = "score modifiers and visibility of a score tile";
  let description = [{
    Rewrites `s[BM, BN]` in place. Tile row `r` is query `i = r / group`
    of the tile (valid iff `i < rows`) and query head `kv_head * group +
    r % group`; column `n` is key `t = t0 + n` (valid iff `t < end`). The
    query's position is `q_positions[row0 + i]` with `positions(...)`, else
    `pos0 + i`. In order: `logits_soft_cap = c` makes `s = c * tanh(s / c)`;
    `alibi(%slopes)` adds `slopes[head] * (t - pos)`; then `s = -inf` where
    the row or key is invalid, where `causal` and `t > pos`, where a
    `window = w` holds and `pos - t >= w` (evaluated overflow-free), or, with
    `mask(%packed, %byte0, %qrow0, %kv_len)`, where bit
    `(qrow0 + i) * kv_len + t` of the request's packed mask segment starting
    at byte `byte0` is 0 (the layout of `pa.prefill`'s custom mask; `qrow0`
    is the tile's first query within its request). `end` bounds the keys of
    this tile's work (a split-KV chunk may end before kv_len); `kv_len` is
    the mask's row length.

    With `masked_if(%c)` and `%c` false the producer asserts that every
    score of the tile is visible (every row and key valid, none above the
    causal diagonal or left of the window, no custom mask), so only the
    score modifiers apply: the tiling tests this per KV tile so that the
    masks cost nothing on the tiles inside the visible range.

    ```mlir
    pa.tile.mask scores(%s : memref<64x64xf32>) rows(%r0, %n, %pos0)
        keys(%t0, %len) kv_head(%hk) masked_if(%edge) {group = 4 : i64, causal}
    ```
  }];
  let arguments = (ins Arg<PA_F32Tile2D, "scores", [MemRead, MemWrite]>:$s,
                       Index:$row0, Index:$rows, Index:$pos0, Index:$t0,
                       Index:$end, Index:$kv_head,
                       Arg<Optional<AnyMemRef>, "q_positions", [MemRead]>:$q_positions,
                       Arg<Optional<AnyMemRef>, "alibi slopes", [MemRead]>:$alibi_slopes,
                       Arg<Optional<AnyMemRef>, "packed mask", [MemRead]>:$custom_mask,
                       Optional<Index>:$mask_byte0, Optional<Index>:$mask_qrow0,
                       Optional<Index>:$mask_kv_len,
                       Optional<I1>:$masked_if,
                       I64Attr:$group, UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F32Attr>:$logits_soft_cap);
  let assemblyFormat = [{
    `scores` `(` $s `:` type($s) `)` `rows` `(` $row0 `,` $rows `,` $pos0 `)`
    `keys` `(` $t0 `,` $end `)` `kv_head` `(` $kv_head `)`
    (`positions` `(` $q_positions^ `:` type($q_positions) `)`)?
    (`alibi` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`mask` `(` $custom_mask^ `:` type($custom_mask) `,` $mask_byte0 `,`
        $mask_qrow0 `,` $mask_kv_len `)`)?
    (`masked_if` `(` $masked_if^ `)`)?
    attr-dict
  }];
}

def PA_TileInitStateOp : PA_TileOp<"init_state"> {
  let summary = "the empty online-softmax state of a query tile";
  let description = [{
    `m = -inf`, `l = 0`, `acc = 0`: the state before any KV tile.

    ```mlir
    pa.tile.init_state state(%m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>)
    ```
  }];
  let arguments = (ins Arg<PA_F32Tile1D, "running max", [MemWrite]>:$m,
                       Arg<PA_F32Tile1D, "running sum", [MemWrite]>:$l,
                       Arg<PA_F32Tile2D, "accumulator", [MemWrite]>:$acc);
  let assemblyFormat = [{
    `state` `(` $m `,` $l `,` $acc `:` type($m) `,` type($l) `,` type($acc) `)`
    attr-dict
  }];
}

def PA_TileSoftmaxUpdateOp : PA_TileOp<"softmax_update"> {
  let summary = "online-softmax update of a tile state by a score tile";
  let description = [{
    For every row `r` of the running state `(m[BM], l[BM], acc[BM, D])`
    and the scores `s[BM, BN]` (natural-log scale): `m' = max(m, max_n s)`,
    `a = exp(m - m')` (1 when `m' = -inf`), `s[r, n] := exp(s - m')` (0 for
    masked scores: the P tile), `l = l * a + sum_n s`, `acc = acc * a`,
    `m = m'`. `pa.tile.pv` then adds `P V` to `acc`.

    ```mlir
    pa.tile.softmax_update scores(%s : memref<64x64xf32>)
        state(%m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>)
    ```
  }];
  let arguments = (ins Arg<PA_F32Tile2D, "scores -> P", [MemRead, MemWrite]>:$s,
                       Arg<PA_F32Tile1D, "running max", [MemRead, MemWrite]>:$m,
                       Arg<PA_F32Tile1D, "running sum", [MemRead, MemWrite]>:$l,
                       Arg<PA_F32Tile2D, "accumulator", [MemRead, MemWrite]>:$acc);
  let assemblyFormat = [{
    `scores` `(` $s `:` type($s) `)`
    `state` `(` $m `,` $l `,` $acc `:` type($m) `,` type($l) `,` type($acc) `)`
    attr-dict
  }];
}

def PA_TilePVOp : PA_TileOp<"pv"> {
  let summary = "accumulate P V into a tile state";
  let description = [{
    `acc[BM, D] += p[BM, BN] * v[BN, D]` in f32 (V an f32 tile, or f16 /
    bf16 / fp8 in workgroup memory after `pa-promote-tiles`; a tensor-core
    target converts P to Q's type in registers).

    ```mlir
    pa.tile.pv ins(%p, %vt : memref<64x64xf32>, memref<64x128xf32>)
        outs(%acc : memref<64x128xf32>)
    ```
  }];
  let arguments = (ins Arg<PA_F32Tile2D, "P tile", [MemRead]>:$p,
                       Arg<PA_OperandTile2D, "V tile", [MemRead]>:$v,
                       Arg<PA_F32Tile2D, "accumulator", [MemRead, MemWrite]>:$acc);
  let assemblyFormat = [{
    `ins` `(` $p `,` $v `:` type($p) `,` type($v) `)`
    `outs` `(` $acc `:` type($acc) `)` attr-dict
  }];
}

def PA_TileStoreOp : PA_TileOp<"store", [AttrSizedOperandSegments]> {
  let summary = "final normalization of a tile state into o and lse";
  let description = [{
    For the valid rows of the tile (`r / group < rows`), writes
    `o[row0 + (r / g) * stride, kv_head * g + r % g, :] = v_scale * acc / l`
    (o's element type; `v_scale`, an f32 value, is the V scale of an fp8
    cache's KV head, 1 without it) and `lse = m + ln(l)` (base 2 with
    `lse_base2`); a row
    that saw no visible key (`l = 0`) gets `o = 0`, `lse = -inf`. The row
    stride is 1 unless `stride(%s)` gives it (the interleaved partial rows
    of `pa.prefill_partial`).

    ```mlir
    pa.tile.store state(%m, %l, %acc : memref<64xf32>, memref<64xf32>, memref<64x128xf32>)
        rows(%r0, %n) kv_head(%hk)
        outs(%o, %lse : memref<?x32x128xf16>, memref<?x32xf32>) {group = 4 : i64}
    ```
  }];
  let arguments = (ins Arg<PA_F32Tile1D, "running max", [MemRead]>:$m,
                       Arg<PA_F32Tile1D, "running sum", [MemRead]>:$l,
                       Arg<PA_F32Tile2D, "accumulator", [MemRead]>:$acc,
                       Index:$row0, Index:$rows, Optional<Index>:$row_stride,
                       Index:$kv_head,
                       Arg<AnyMemRef, "o", [MemWrite]>:$o,
                       Arg<AnyMemRef, "lse", [MemWrite]>:$lse,
                       Optional<F32>:$v_scale,
                       I64Attr:$group, UnitAttr:$lse_base2);
  let assemblyFormat = [{
    `state` `(` $m `,` $l `,` $acc `:` type($m) `,` type($l) `,` type($acc) `)`
    `rows` `(` $row0 `,` $rows `)` (`stride` `(` $row_stride^ `)`)?
    `kv_head` `(` $kv_head `)` (`v_scale` `(` $v_scale^ `)`)?
    `outs` `(` $o `,` $lse `:` type($o) `,` type($lse) `)` attr-dict
  }];
}

#endif // PAGEDATTN_DIALECT_PATILEOPS_TD
