//===- Passes.td - pa transformations ----------------------*- tablegen -*-===//

#ifndef PAGEDATTN_TRANSFORMS_PASSES_TD
#define PAGEDATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PACascadeDecompose : Pass<"pa-cascade-decompose", "::mlir::func::FuncOp"> {
  let summary = "Rewrite a multi-level cascade into attention per level plus a merge";
  let description = [{
    `pa.cascade` with L levels becomes L `pa.prefill` ops, one per level
    (its `qo_indptr` and page table; `causal` on the last level only; the
    other options on every level), whose states are combined by one
    `pa.merge`. This is exact: attention over the union of the levels' key
    sets is the merge of the per-level states. Works on the tensor form (run
    it before bufferization).

    ```mlir
    %o, %l = pa.cascade q(%q) kv(%kv) qo_indptrs(%qo0, %qo1) ...
    // becomes
    %o0, %l0 = pa.prefill q(%q, %qo0) kv(%kv) pages(%ip0, %ix0, %lp0) ...
    %o1, %l1 = pa.prefill q(%q, %qo1) kv(%kv) pages(%ip1, %ix1, %lp1) ... {causal}
    %o, %l = pa.merge states(%o0, %l0, %o1, %l1) outs(...)
    ```
  }];
  let dependentDialects = ["::mlir::pa::PADialect",
                           "::mlir::tensor::TensorDialect"];
}

def PASplitKV : Pass<"pa-split-kv", "::mlir::ModuleOp"> {
  let summary = "Split decode attention over KV chunks and merge the parts";
  let description = [{
    `pa.decode` becomes `pa.decode_partial` over a split-KV work list (every
    request's tokens in chunks) followed by `pa.merge_segments`; exact, since
    attention over a union of disjoint key sets is the merge of the parts.

    * Default (`chunk-size = C`): the work list is computed in the IR by
      `pa.plan_split_kv` (chunks of C tokens), sized by the static bound
      `B + ceil(num_pages_in_table * P / C)`.
    * `work-list = true`: the work list comes in as four new arguments of the
      enclosing function (`work_indptr[B+1]`, `work_request[W]`,
      `work_start[W]`, `work_end[W]`, tagged `pa.work_list`), filled at run
      time by the host planner (`pa::rt::planDecode`), so the chunking can
      follow batch, lengths and SM count. This changes the function's
      signature, and the pass does not rewrite its callers: a function
      that has a symbol use in its module (a `func.call`, or any other
      reference) is rejected with an error that names the functions using
      it and a note at every use. Split the entry point that the runtime
      calls, not a helper it calls in turn. Functions without a
      tensor-form `pa.decode` are left alone either way.

    Works on the tensor form (run it before bufferization); it runs on the
    module, so that it may read a function's callers.

    ```mlir
    %o, %l = pa.decode q(%q) kv(%kv) pages(%ip, %ix, %lp) outs(%o0, %l0)
    // becomes (chunk-size = 256)
    %wi, %wr, %ws, %we = pa.plan_split_kv pages(%ip, %lp) outs(...) {chunk_size = 256, page_size = 16}
    %po, %pl = pa.decode_partial q(%q) kv(%kv) pages(%ip, %ix, %lp) work(%wi, %wr, %ws, %we) outs(...)
    %o, %l = pa.merge_segments states(%po, %pl) segments(%wi) outs(%o0, %l0)
    ```
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"512",
           "Tokens per KV chunk (the in-IR planner's chunk size)">,
    Option<"workList", "work-list", "bool", /*default=*/"false",
           "Take the work list from new function arguments (run-time planner)">,
  ];
  let dependentDialects = ["::mlir::pa::PADialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def PAShardKV : Pass<"pa-shard-kv", "::mlir::func::FuncOp"> {
  let summary = "Context parallelism: shard every pa.decode's and pa.prefill's pages over devices, merge the states";
  let description = [{
    Every tensor-form `pa.decode` becomes `devices` decodes, device `d`'s over
    its share of every request's pages (`pa.shard_pages`: contiguous ranges,
    or `round-robin=true`), tagged `pa.device = d`, and a `pa.merge` of their
    `(o, lse)` states into the decode's outs (docs/ContextParallel.md). The
    merge is commutative and associative and a request with no page on a
    device contributes its identity `(0, -inf)`, so the result is the
    decode's; the partial states are in the decode's output type (what a
    device sends to the others). The CPU pipeline runs the devices one
    after the other in one process. Error at the op: the memref form. A
    decode with a sliding window or ALiBi (whose scores depend on the key
    positions a shard's table renumbers) becomes a `pa.decode_partial`
    per device over `pa.shard_work`'s decode-form list instead, like
    prefill below (contiguous ownership only).

    Every tensor-form `pa.prefill` becomes `devices` `pa.prefill_partial`
    (tagged `pa.device = d`) over `pa.shard_work`'s work list of device
    `d`: all of a request's queries over the keys of its contiguous page
    range, read through the whole table so that the keys keep their
    positions (causal, window, custom mask and ALiBi shard too), into f32
    partial states with a row per query, and a `pa.merge` of the devices'
    states into the prefill's outs. Errors at the op: `round-robin=true`
    (an item per page would be needed); a `pa.cascade` (shard its levels:
    run `pa-cascade-decompose` first, as `pa-lower-to-cpu{shard-devices}`
    does).

    ```mlir
    %t:3 = pa.shard_pages pages(%ip, %ix, %lp : ...) outs(...)
        {device = 0 : i64, devices = 2 : i64, page_size = 16 : i64}
    %d0:2 = pa.decode q(%q : ...) kv(%kv : ...) pages(%t#0, %t#1, %t#2 : ...)
        outs(...) {cache = ..., pa.device = 0 : i64}
    ... device 1 ...
    %r:2 = pa.merge states(%d0#0, %d0#1, %d1#0, %d1#1 : ...) outs(%o, %l : ...)
    ```
  }];
  let options = [
    Option<"devices", "devices", "int64_t", "2",
           "Devices the pages are sharded over (>= 1)">,
    Option<"roundRobin", "round-robin", "bool", "false",
           "Page j of a request on device j mod devices (default: "
           "contiguous ranges of pages)">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def PATileAttention : Pass<"pa-tile-attention", "::mlir::func::FuncOp"> {
  let summary = "Tile memref-form pa.prefill, pa.prefill_partial, pa.decode and pa.decode_partial into tile-level pa.tile ops";
  let description = [{
    The first stage of the prefill pipeline: each memref-form `pa.prefill`
    becomes loops over (request, KV head, query tile) with a loop over KV
    tiles, written with the tile-level ops (docs/GPU.md, "Prefill: the tile
    IR"). A query tile packs the `g` query heads of a KV head into its
    `tile-q` rows (`tile-q / g` queries), so each K/V tile of `tile-kv`
    tokens is gathered once for the whole group:

    ```mlir
    scf.for %b ... {                    // requests
      scf.for %hk ... {                 // KV heads
        scf.for %i0 ... step (tile-q / g) {   // query tiles
          pa.tile.load_q ...            // Q tile, scaled by sm_scale
          (m, l, acc) = (-inf, 0, 0)
          scf.for %t0 = %first to %last step tile-kv {   // KV tiles
            pa.tile.gather_kv ...       // K, V tiles through the page table
            pa.tile.qk ...              // S = Q K^T
            pa.tile.mask ...            // soft-cap, ALiBi, causal, window
            pa.tile.softmax_update ...  // online softmax, S -> P
            pa.tile.pv ...              // acc += P V
          }
          pa.tile.store ...             // o = acc / l, lse
    }}}
    ```

    Without explicit positions, the KV tile range skips the tiles above the
    causal diagonal of the query tile and those left of its sliding window.
    The tiled program lowers to loops (`convert-pa-to-loops`) and runs in the
    CPU differential suite (`pa-lower-to-cpu{tile-attention=true}`).
    Every option of `pa.prefill` is kept (custom masks, q_positions, ALiBi,
    soft-cap, window, causal, lse_base2). `pa.prefill_partial` tiles the
    same way inside a loop over its work items: each item's queries in
    query tiles, its keys only (the KV loop and the masks stop at its
    `kv_end`), each query's state stored to its partial row (`pa.tile.store`
    with a row stride); every item is checked at run time (request,
    query and key ranges, partial rows). `pa.decode` is the prefill of one
    query per request (row b of q, at position kv_len - 1): loops over
    (request, KV head), one query tile each (the tensor-core decode's
    tiling, docs/GPU.md), after the decode's page-table checks;
    `pa.decode_partial` the same per work item in use (its keys only, row
    `w` of the partial states), after the loops lowering's work-list
    checks (one `DecodeWorkItem` home for both). Rejected at
    the op: dynamic query heads or head dim, `tile-q` not a multiple of the
    group.
  }];
  let options = [
    Option<"tileQ", "tile-q", "int64_t", /*default=*/"64",
           "Rows of a query tile (packed query x head rows)">,
    Option<"tileKV", "tile-kv", "int64_t", /*default=*/"64",
           "Tokens of a K/V tile">,
  ];
  let dependentDialects = ["::mlir::pa::PADialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def PAEntryResultsInPlace : Pass<"pa-entry-results-in-place",
                                 "::mlir::ModuleOp"> {
  let summary = "Return the outs of entry functions in place, not as clones";
  let description = [{
    Runs after upstream's ownership-based buffer deallocation
    (`buffer-deallocation-pipeline`), whose convention is that a function
    hands its callers ownership of every memref it returns: a returned
    buffer the function does not own (an argument) is returned as a
    `bufferization.clone` the caller must free. The hosts of the lowered
    CPU programs (the CPU differential tests' JIT, the CPU bundles of
    `pa-compile` that `pagedattn` loads) pass the outs as arguments, expect
    them back in place and free no result. So in a public function with a body and no caller in the
    module (an entry point), a returned `bufferization.clone` of a function
    argument (or a `memref.cast` of one) whose only users are `func.return`
    is replaced by the argument itself (cast to the clone's type where it
    differs) and erased. Functions called inside the module keep upstream's
    convention, which their callers' deallocations rely on; a clone that is
    not of an argument (ownership only known at run time) is kept and lowers
    to a new buffer.

    ```mlir
    func.func @decode(..., %o: memref<?x32x128xf16>) -> memref<?x32x128xf16> {
      pa.decode ... outs(%o, ...)
      %0 = bufferization.clone %o : memref<?x32x128xf16> to memref<?x32x128xf16>
      return %0 : memref<?x32x128xf16>
    }
    // becomes
    func.func @decode(..., %o: memref<?x32x128xf16>) -> memref<?x32x128xf16> {
      pa.decode ... outs(%o, ...)
      return %o : memref<?x32x128xf16>
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def PAWarpShuffleReduce : Pass<"pa-warp-shuffle-reduce"> {
  let summary = "Lower clustered gpu.subgroup_reduce to butterfly shuffles";
  let description = [{
    The kernels' cross-lane reductions to warp shuffles, with upstream's
    patterns (`populateGpuLowerClusteredSubgroupReduceToShufflePatterns` and
    `populateGpuLowerSubgroupReduceToShufflePatterns`, 32-lane subgroups,
    32-bit shuffles): `gpu.subgroup_reduce <op> %x cluster(size = N)` becomes
    log2(N) steps of `gpu.shuffle xor` and the combining op, so every lane
    of the cluster ends with the cluster's result; these are the
    `shfl.sync.bfly` trees of the decode kernels. This pass only names that
    step of the pa GPU pipeline (upstream registers the patterns in test
    passes only); it adds nothing to them.

    ```mlir
    %r = gpu.subgroup_reduce add %x cluster(size = 4) : (f32) -> f32
    // becomes
    %s1, %v1 = gpu.shuffle xor %x, %c1, %c32 : f32
    %a1 = arith.addf %x, %s1 : f32
    %s2, %v2 = gpu.shuffle xor %a1, %c2, %c32 : f32
    %r = arith.addf %a1, %s2 : f32
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // PAGEDATTN_TRANSFORMS_PASSES_TD
