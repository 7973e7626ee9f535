//===- Passes.td - pa conversion passes --------------------*- tablegen -*-===//

#ifndef PAGEDATTN_CONVERSION_PASSES_TD
#define PAGEDATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertPAToLoops : Pass<"convert-pa-to-loops"> {
  let summary = "Lower memref-form pa ops to scf/memref/arith/math loops";
  let description = [{
    The CPU lowering: every pa op in its memref form becomes sequential
    loops that implement docs/Semantics.md directly (the executable
    semantics checked against the float64 reference in CI). Attention keeps
    an f32 running state `(m, l, acc)` per (query row, head) in scratch
    buffers and updates it key by key (online softmax), so a cascade simply
    continues the same state across levels; `o = acc / l`,
    `lse = m + ln(l)`, and `l == 0` (no visible key) gives `o = 0`,
    `lse = -inf`. Ops still in tensor form are rejected: run
    `one-shot-bufferize` first (the `pa-lower-to-cpu` pipeline does).

    Run-time invariants that the verifier cannot see are asserted with
    `cf.assert`, so bad input stops with a message instead of reading out of
    bounds or giving a wrong answer: every indptr it reads (`kv_indptr`,
    `qo_indptr`, `append_indptr`, `rows_indptr`, `mask_indptr`,
    `work_indptr`, `segments`, per cascade level too) has B + 1 entries,
    starts at 0, is non-decreasing and ends within the array it indexes;
    page indices are in [0, num_pages), last_page_len in [1, P], slots in
    range, the work list fits its outs. `pa-assert-to-stderr` (in
    `pa-lower-to-cpu`) prints the messages on stderr.

    ```mlir
    // Before: pa.decode q(%q : memref<?x?x64xf32>) kv(...) pages(...) outs(...)
    // After:  scf.for %b ... { scf.for %h ... { scf.for %t ... { ... } } }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

def ConvertPAToGPU : Pass<"convert-pa-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower memref-form pa ops to GPU kernels";
  let description = [{
    Each `pa.decode`, `pa.decode_partial`, `pa.merge_segments`,
    `pa.prefill`, `pa.prefill_partial`, `pa.append_kv_slots`,
    `pa.append_kv`, `pa.scatter_kv`, `pa.merge`, `pa.merge_states`,
    `pa.kv_deviation`, `pa.select_topk`, `pa.pack_mask`,
    `pa.plan_split_kv` and `pa.mla_decode` (memref form)
    becomes a `gpu.func` kernel in the `gpu.module @pa_kernels` (named
    `pa_` and the op's name; a suffix is added
    when a name repeats) whose arguments are the op's operands in order, and
    a `gpu.launch_func` in its place. Any other pa op is an error at the op
    ("is not supported on the GPU yet"), checked before the IR changes.

    Every kernel carries its ABI as a `pa.kernel` attribute: its kind, the
    runtime role of each argument, its launch grid (symbols such as `batch`,
    `kv_heads`, `work_capacity`, or integers), block size and shared memory,
    and the tile shape it was built with (see
    include/PagedAttn/Conversion/KernelABI.h). pa-compile prints the bundle
    manifest from it.

    `pa.decode` and `pa.decode_partial` become kernels over tile IR
    (lib/Conversion/PAToGPU/PrefillToGPU.cpp), the prefill of one query per
    request: a CTA per (request or work item, KV head, head chunk) whose
    query tile holds the request's query for some of the group's heads
    (`pa.tile.load_q`, `init_state`, a loop over the KV tiles with
    `gather_kv`, `qk`, `mask`, `softmax_update`, `pv`, then `store`), the
    K / V tiles split between the warps (`kv_warps` in the ABI). Two
    kernels (`decode-kernel`):

    - CUDA-core (`pa.simt` on the kernel; for `auto`: MHA, groups of 2 and
      3, f32 data and groups above 32): a tile of h heads (the whole group
      up to 8, else its largest divisor <= 8, or `heads-per-cta`; `g / h`
      CTAs a KV head, grid z), `cta-threads` threads (128) in lane groups
      of `D * bytes / lane-bytes` lanes (a power of two <= 32; 32-byte
      lanes for 2..4 heads of 16-bit data), 64-key tiles (32 above 4 heads,
      for f32 or above D = 128; `decode-tile-kv`); `pa-promote-tiles` and
      `pa-tile-to-simt` finish it (shuffle-reduced dot products, the lane
      groups' states merged through shared memory). Proven free of spills
      for groups 1..32, head dims 64/128/256 and f16/bf16/f32
      (test/Pipelines/decode-shape-sweep.mlir).
    - tensor-core (for `auto`: f16 / bf16 with GQA groups 4..32, a head dim
      the CUDA-core kernel cannot split into a power of two of lanes (80,
      96, 112, 192) or an fp8 cache): the group's heads as the 16 or 32
      rows of the query tile, `decode-tile-kv` keys per KV tile (64), 4
      warps that split each KV tile's keys; `pa-promote-tiles` and
      `pa-tile-to-mma` finish it (docs/GPU.md, "Tensor-core decode").

    Both have the ABI kinds `decode` / `decode_partial` / `decode_split`
    and the grid (`batch` or `work_capacity`, `kv_heads`, head chunks).

    `merge_segments` uses a CTA per (segment, head), threads over the head
    dim. `pa.merge` (N states, a CTA per row of lse[R, H]; other ranks are
    reshaped to it on the host) and `pa.merge_states` (a CTA per row s of
    o_states[S, N, H, D]) use 128 threads over the row's (head, 16-byte
    slot) pairs, each merging its states with the shared merge operator
    (lib/Conversion/PAToGPU/MergeToGPU.cpp). The cache writes use a CTA
    per row (CacheToGPU.cpp), the CacheBlend ops a warp per token and a CTA
    per request (CacheBlendToGPU.cpp), pack_mask a CTA per segment
    (MaskToGPU.cpp); docs/GPU.md describes each.

    With `split-kv-merge=fused` (the default) a `pa.decode_partial` and the
    `pa.merge_segments` right after it that merges its states over its own
    `work_indptr` become one kernel, `pa_decode_split` (kind
    `decode_split`): the decode_partial kernel's arguments, then the
    merge's `o`, `lse` and `merge_counters` (`[B, Hq]` i32, zero between
    launches; the host allocates it with `gpu.alloc` and `gpu.memset`).
    Each CTA writes its partial rows, fences, counts its arrival with an
    atomic on its (request, first head) counter, and the last CTA of a
    request merges the request's rows into `o` / `lse` and puts the counter
    back to 0; the CTA next to a request without work items writes its
    `o = 0`, `lse = -inf` (lib/Conversion/PAToGPU/SplitKVMerge.cpp).

    `pa.prefill` (f16 / bf16, head dim a multiple of 16 up to 256, GQA group
    up to the tile's rows) becomes the first stage of the prefill GPU
    pipeline (lib/Conversion/PAToGPU/PrefillToGPU.cpp): a kernel with a CTA
    of `prefill-warps` warps (default 8 up to D = 128, else 4) per (query
    tile, KV head, request), `prefill-warp-rows` rows per warp (default 32
    up to D = 128: two m16 blocks that share every K/V fragment, else 16), a
    tile of R rows holding R / g queries times the g query heads of the KV
    head, whose body is the tile IR of its query tile (`pa.tile.load_q`,
    `init_state`, a loop over the visible KV tiles of `prefill-tile-kv`
    keys (default 32) with `gather_kv`, `qk`, `mask` (marked `masked_if`
    the tile needs its masks), `softmax_update`, `pv`, then `store`), the
    same tiling `pa-tile-attention` runs on the CPU. `pa-promote-tiles` and
    `pa-tile-to-mma` turn it into the tensor-core kernel (docs/GPU.md). Grid
    (`q_tiles`, `kv_heads`, `batch`). `pa.prefill_partial` tiles the same
    way per work item (grid `work_capacity`, `kv_heads`, `q_tiles`).

    `pa.mla_decode` (f16 / bf16) becomes a tensor-core kernel of its own
    (lib/Conversion/PAToGPU/MLAToGPU.cpp): a CTA per (request, 16 x
    `mla-row-blocks` query heads), 64-token tiles of the latent cache in
    shared memory (cp.async, two stages), S over D_ckv + D_kpe and O over
    D_ckv split between the 4 warps of each 16-head row block, the softmax
    exchanged through shared memory (docs/GPU.md, "MLA decode"). With
    `mla-mma=wgmma` (or `auto` from 64 heads) it is the Hopper kernel of
    lib/Conversion/PAToGPU/MLAWgmma.cpp instead: a CTA per (request, 64
    heads), two warpgroups, Q and two 64-token stages in wgmma's swizzle
    layout, S = Q K^T and O += P V as wgmma.mma_async (docs/GPU.md, "MLA
    decode on wgmma").

    Requirements (checked, with an error): identity-layout memrefs, static
    head dim and query heads; for the CUDA-core decode a row of `D * bytes`
    split into a power of two <= 32 of 16- or 32-byte lanes, heads per CTA
    dividing the group and no fp8 cache; for the tensor-core kernels f16 /
    bf16 data, a head dim that is a multiple of 16 up to 256 and the GQA
    group within the query tile.
  }];
  let options = [
    Option<"ctaThreads", "cta-threads", "int64_t", /*default=*/"128",
           "Threads per CTA">,
    Option<"laneBytes", "lane-bytes", "int64_t", /*default=*/"0",
           "CUDA-core decode: bytes of a K/V row per lane (16: one 16-byte "
           "shared load; 32: two, half the lanes per key; 0: tuned)">,
    Option<"headsPerCTA", "heads-per-cta", "int64_t", /*default=*/"0",
           "CUDA-core decode: query heads of a GQA group per CTA, a divisor "
           "of the group (0: tuned)">,
    Option<"prefillWarps", "prefill-warps", "int64_t", /*default=*/"0",
           "Warps per CTA of the prefill kernel, 16 query-tile rows each: 4 "
           "or 8 (0: 8 up to head dim 128, else 4)">,
    Option<"prefillTileKV", "prefill-tile-kv", "int64_t", /*default=*/"0",
           "Keys per K/V tile of the prefill kernel: 16, 32, 64 or 128 (0: 32)">,
    Option<"prefillWarpRows", "prefill-warp-rows", "int64_t",
           /*default=*/"0",
           "Query-tile rows per warp of the prefill kernel: 16 or 32 (two "
           "m16 blocks sharing each K/V fragment; 0: 32 up to head dim 128, "
           "else 16)">,
    Option<"prefillKVWarps", "prefill-kv-warps", "int64_t",
           /*default=*/"0",
           "Warps of the prefill kernel that split each KV tile's keys (a "
           "softmax state each, merged at the store) rather than its rows: "
           "1 or prefill-warps (0: 1)">,
    Option<"prefillMma", "prefill-mma", "std::string",
           /*default=*/"\"mma.sync\"",
           "Tensor-core instructions of the prefill kernels: mma.sync "
           "(ldmatrix + mma.sync m16n8k16, sm_80 and later), wgmma (Hopper "
           "warpgroup MMAs reading Q / K / V from shared memory through "
           "matrix descriptors, P from registers; compile for sm_90a; a head "
           "dim that is a multiple of 64, no fp8 cache, 16 rows a warp, no "
           "key split) or auto (wgmma where the op fits it, else mma.sync)">,
    Option<"decodeKernel", "decode-kernel", "std::string",
           /*default=*/"\"auto\"",
           "pa.decode / pa.decode_partial kernel: cuda-core (lane groups "
           "with shuffle-reduced dot products, pa-tile-to-simt), tensor-core "
           "(the group's heads as mma rows, 4 warps splitting each KV tile; "
           "f16 / bf16, head dim a multiple of 16 up to 256, group <= 32; "
           "pa-tile-to-mma) or auto (tensor-core for 16-bit data with groups "
           "4..32, a head dim the CUDA-core kernel cannot split or an fp8 "
           "cache; else cuda-core)">,
    Option<"decodeTileKV", "decode-tile-kv", "int64_t", /*default=*/"0",
           "Keys per K/V tile of the decode: tensor-core 64 or 128 (0: 64); "
           "CUDA-core a multiple of warps x lane groups up to 256 (0: 64 up "
           "to 4 heads of 16-bit data up to D = 128, else 32)">,
    Option<"mlaRowBlocks", "mla-row-blocks", "int64_t", /*default=*/"0",
           "m16 row blocks (16 query heads each, 4 warps) per CTA of the "
           "pa.mla_decode kernel: 1 or 2 (0: 2 above 16 heads, else 1)">,
    Option<"mlaWarpBlocks", "mla-warp-blocks", "int64_t", /*default=*/"0",
           "m16 row blocks per warp of the pa.mla_decode kernel: 1 (4 warps "
           "per row block) or mla-row-blocks (4 warps, each K / V fragment "
           "serving every block; 0: 1)">,
    Option<"mlaMma", "mla-mma", "std::string", /*default=*/"\"mma.sync\"",
           "Tensor-core instructions of the pa.mla_decode kernel: mma.sync "
           "(16 x mla-row-blocks heads a CTA, sm_80 and later), wgmma (64 "
           "heads a CTA in two warpgroups reading Q, K, V and P from shared "
           "memory through matrix descriptors; compile for sm_90a; D_ckv a "
           "multiple of 128 up to 512, D_ckv + D_kpe a multiple of 64) or "
           "auto (wgmma from 64 query heads where the shape fits)">,
    Option<"mlaConsumerSync", "mla-consumer-sync", "bool",
           /*default=*/"false",
           "wgmma MLA decode: the consumer warpgroup waits at the named "
           "barriers it only arrives at otherwise (bar.sync for bar.arrive): "
           "slower, for compute-sanitizer's racecheck, which reports "
           "hazards after bar.arrive hand-offs">,
    Option<"decodeKVStages", "decode-kv-stages", "int64_t", /*default=*/"0",
           "K/V tiles of the tensor-core decode in shared memory at once "
           "(the kernel's kv_stages): 2, 3 or 4 (0: 2; 3 for a one-pass GQA "
           "decode over an fp8 cache whose head dim is a multiple of 128, "
           "3 for the MHA CUDA-core decode)">,
    Option<"splitKVMerge", "split-kv-merge", "std::string",
           /*default=*/"\"fused\"",
           "A pa.decode_partial and the pa.merge_segments of its states right "
           "after it: fused (one kernel, pa_decode_split: the last CTA of a "
           "request merges, counted in merge_counters) or separate (two "
           "kernels)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::ub::UBDialect"];
}

def PAPromoteTiles : Pass<"pa-promote-tiles", "::mlir::ModuleOp"> {
  let summary = "Put a tiled kernel's Q / K / V tiles in shared memory behind cp.async copies";
  let description = [{
    The second stage of the prefill GPU pipeline (docs/GPU.md). In every
    `gpu.func` whose body is tile IR (what `convert-pa-to-gpu` makes of a
    `pa.prefill`: `pa.tile.load_q`, and an `scf.for %t0 = lo to hi step BN`
    whose body starts from `pa.tile.gather_kv`), the Q, K and V tiles move to
    dynamic shared memory in the cache's element type: `[BM + 4 BN][D]`
    (Q, then K and V of two stages). Rows of a head dim that is a multiple
    of 64 are XOR-swizzled (option `smem-layout`, default `swizzle`;
    `pad` pads every row as before): 16-byte chunk c
    of shared row r lies at chunk c ^ (r % 8), so that `ldmatrix` has no
    bank conflicts while every row starts on a 128-byte line and each copy
    asks L2 for each sector once; the kernel gets the unit attribute
    `pa.smem_swizzle`, which `pa-tile-to-mma` follows. Other rows are
    padded (`[D + pad]`): by 16 bytes in prefill kernels (conflict-free
    `ldmatrix`), by 32 bytes in the memory-bound decode kernels
    (sector-aligned rows; option `row-pad-bytes`). `load_q` becomes 16-byte
    `nvgpu.device_async_copy` (cp.async) copies, zero-filled past the
    tile's queries, and its scale moves onto `pa.tile.qk`. The KV loop
    becomes a two-stage pipeline over pairs of tiles (so that every stage
    index is a constant):

    ```mlir
    // K/V tile at lo -> stage 0; pages of tile lo + BN looked up
    scf.for %t = %lo to %hi step 2 BN iter_args(%pages...) {
      // step(t, 0): cp.async.wait_group 0, gpu.barrier (tile t visible,
      // stage 1 free), cp.async of tile t + BN into stage 1 (through the
      // page table, zero-filled past hi), page lookups of tile t + 2 BN,
      // the loop body on stage 0's views
      scf.if %t + BN < %hi { step(t + BN, 1) }
    }
    ```

    With the ABI's `kv_stages` = S the pipeline holds S stages (S - 1 tiles
    in flight, `cp.async.wait_group S - 2`). When every warp owns a block of
    each tile's keys (`kv_warps` = the CTA's warps: the tensor-core decode)
    the K / V tiles are warp-local: warp w copies only the rows of its keys
    and the per-tile barrier is `nvvm.bar.warp.sync`. Over an fp8 cache
    (`f8E4M3FN`, `f8E5M2`) the stages hold the cache's bytes (16 elements a
    copy). With `fp8-widen=registers` (the default) and rows of whole
    128-byte lines (D a multiple of 128, swizzled layout) they are
    XOR-swizzled like the 16-bit rows and `pa.tile.qk` / `pa.tile.pv` read
    fp8 views of the stage, which `pa-tile-to-mma` widens in registers.
    Otherwise (`fp8-widen=shared`, other head dims) they follow one pair of
    K / V tiles of Q's type, and each step widens its stage into that pair
    (`vector.load`, `arith.extf`, `vector.store`; `pa-fp8-to-nvvm` lowers
    the extf) behind a barrier before the math.

    A kernel with the unit attribute `pa.wgmma` (convert-pa-to-gpu's
    `prefill-mma=wgmma`) gets wgmma's layout whatever `smem-layout` says:
    each [rows][D] tile as D / 64 column blocks of [rows][64], one 128-byte
    line a row with 16-byte chunk c at c ^ (row % 8), every tile on a
    1024-byte boundary; after each `cp.async` wait a
    `nvvm.fence.proxy` (async.shared, cta) before the barrier makes the
    copies visible to the async proxy wgmma reads through
    (test/Conversion/tile-to-wgmma.mlir).

    The ABI's shared memory and the launches' dynamic shared memory are set
    to the layout's size. Errors at the op: more than one load_q / gather per
    kernel, a gather outside such a loop, a loop step other than the K
    tile's rows, a tile read by other ops than qk / pv, queries other than
    f16 / bf16, a cache other than the queries' type or fp8, a query tile
    whose 16-byte chunks the threads do not split evenly.

    Page lists (`page-list-rounds=R`, default 8): each thread copies a few
    chunk rounds of every K / V tile, each through the page-table entry of
    its row, looked up one step ahead so that the global load's latency
    hides behind a tile's math. Carried in registers that is one i32 per
    round; when a thread of CTA-wide tiles copies R rounds or more (4 warps
    over 64 keys at D = 128: 8), thread j instead looks up the tile's j-th
    page (at most `(P + BN - 2) / P + 1` of them), carries that one entry,
    and stores it before the next step's barrier into a page list of the
    stage (`[S][entries]` i32 after the tiles); the copies read their
    entries from it. Warp-local tiles (the tensor-core decode) whose
    threads copy R rounds or more (where fp8 is widened in registers
    counted S - 1 times for S stages: there an entry a round costs more
    with more stages; 4 fp8 rounds at 3 stages count 8) shuffle instead:
    lane j looks up the j-th
    of the at most `(P + K/W - 2) / P + 1` pages its warp's `K/W` keys
    touch (at most 32), carries that one entry, and each round's copy takes
    its page's entry from that lane (`gpu.shuffle idx`). R = 0 keeps every
    entry in registers. Where the KV loop starts at key 0 (a one-pass
    kernel) and the keys a thread's rounds span (its warp's K/W, or the
    tile's BN) divide P, every round of a thread lies in one page: it
    carries that one entry, whatever R (no list, no shuffle).

    The copies read the cache as a 1-D memref (`memref.reinterpret_cast`):
    a round's source is page * (elements a page) plus its offset within the
    page, which does not change from step to step (with the one entry, a
    step's rounds are one address plus constants). A step whose tile lies
    inside the keys (start + BN <= end: all but the last) copies without
    the per-round key compares and zero-fill (`scf.if`; the last tile keeps
    them), and looks up its pages without them.
  }];
  let options = [
    Option<"pageListRounds", "page-list-rounds", "int64_t", "8",
           "Chunk rounds per thread and K / V tile from which the tile's "
           "page-table entries go through a page list in shared memory "
           "(warp-local tiles: warp shuffles) rather than registers (0: "
           "never)">,
    Option<"rowPadBytes", "row-pad-bytes", "int64_t", "0",
           "Padding of a padded shared-memory row: 16 (conflict-free "
           "ldmatrix) or 32 bytes (sector-aligned rows: each copy asks L2 "
           "for each sector once) (0: 32 in decode kernels, else 16)">,
    Option<"smemLayout", "smem-layout", "std::string", "\"swizzle\"",
           "Shared-memory rows: swizzle (16-byte chunk c of row r at c ^ r "
           "% 8, unpadded, for head dims that are a multiple of 64; other "
           "head dims padded) or pad (padded rows everywhere)">,
    Option<"fp8Widen", "fp8-widen", "std::string", "\"registers\"",
           "fp8 caches: registers (the math reads the swizzled fp8 stages "
           "and pa-tile-to-mma widens its fragments after ldmatrix; head "
           "dims that are a multiple of 128 in the swizzled layout, others "
           "as shared) or shared (each step widens its stage into K / V "
           "tiles of the queries' type in shared memory)">
  ];
  let dependentDialects = ["::mlir::nvgpu::NVGPUDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def PATileToMma : Pass<"pa-tile-to-mma", "::mlir::ModuleOp"> {
  let summary = "Map a kernel's tile math onto ldmatrix / mma.sync register fragments";
  let description = [{
    The third stage of the prefill GPU pipeline (docs/GPU.md), after
    `pa-promote-tiles`: the query tile's rows are split over the warps of
    the CTA (16 or 32 rows a warp, read off the tile shape and the kernel's
    block size), and the scores and the online-softmax state become
    `mma.sync` m16n8k16 fragments in registers (f32 accumulate):
    `pa.tile.qk` -> `nvgpu.ldmatrix` of Q and K + `nvgpu.mma.sync`;
    `pa.tile.mask` -> score modifiers and, under `scf.if` on its
    `masked_if`, the masks, in base 2; `pa.tile.softmax_update` -> row
    maxima over the 4 lanes of a quad (`gpu.subgroup_reduce` with cluster
    size 4, which `pa-warp-shuffle-reduce` turns into shuffles), `ex2`,
    rescaling; `pa.tile.pv` -> P converted to f16 / bf16 A fragments in
    registers, `nvgpu.ldmatrix` (transposed) of V + `nvgpu.mma.sync`;
    `pa.tile.store` -> the quad's row sums, `o = acc / l` and `lse`. In a
    kernel with the unit attribute `pa.smem_swizzle` (pa-promote-tiles'
    XOR-swizzled rows) every shared-memory access of Q, K and V (the
    ldmatrix addresses, the staged o store through Q's rows) takes element
    (r, c) at column c ^ (r % 8) * 8. The
    state buffers' values are carried through `scf.for` / `scf.if` as
    iter_args / results. Errors at the op: Q / K / V not in workgroup
    memory, f32 tiles, a tile shape that does not give 16 or 32 rows per
    warp, load_q / gather_kv left (run pa-promote-tiles first), other
    control flow around the state.

    In a kernel with the unit attribute `pa.wgmma` (warpgroups of 4 warps
    of 16 rows, no key split, tiles in wgmma's 128-byte swizzle layout from
    pa-promote-tiles) `qk` and `pv` become Hopper warpgroup MMAs as inline
    PTX: S = Q K^T as D / 16 `wgmma.mma_async` m64nNk16 (N = the tile's
    keys) with A and B from shared-memory matrix descriptors, O += P V as
    keys / 16 m64nDk16 with P's registers as A and V transposed (MN-major),
    each group between `nvvm.wgmma.fence.aligned` and
    `nvvm.wgmma.commit.group.sync.aligned` + `wait.group.sync.aligned 0`,
    its registers passed through empty side-effecting asm on both sides;
    the accumulator registers are mma.sync's C fragments, so masks,
    softmax and store are shared. Needs sm_90a.

    fp8 K / V tiles (views of pa-promote-tiles' swizzled fp8 stages,
    `fp8-widen=registers`) are read through a 16-bit view of the same
    shared memory with `ldmatrix` and widened in registers (`arith.extf` of
    each 16-bit half, which `pa-fp8-to-nvvm` makes one
    `cvt.rn.f16x2.e4m3x2` / `e5m2x2`): a K matrix of words is a whole B
    fragment whose k index 2t + i stands for dim 4t + i (Q's 16-element
    groups are permuted to match in shared memory once, behind a barrier);
    V comes from `ldmatrix.trans` plus one byte permute, giving rows 2g /
    2g + 1 of each 16 dims, and the stores write o from that layout. Both
    K and V must be of one fp8 type, with mma.sync and a head dim that is a
    multiple of 32 (an error at the qk otherwise).

    Lazy rescaling (`rescale-threshold=T`, base-2 units, default 8): the
    maximum a row's exponents are taken against moves only when the tile's
    maximum exceeds it by more than T, so that most KV tiles skip
    rescaling the accumulators (P then lies in [0, 2^T], exact in f16 /
    bf16; o = acc / l and lse = m + log2 l are unchanged). T = 0 rescales
    whenever the maximum grows (every tile's ex2 / multiplies, the
    classic online softmax).

    Narrow rows (`narrow-pv`, default true): in an mma.sync kernel with one
    m16 block split over key warps (the tensor-core decode) whose store
    has a constant row count that, times the group, fits row half 0 (at
    most 8 valid rows: groups up to 8), O += P V becomes O^T += V^T P^T:
    head dims as the m16 rows, the tile's rows as the n8 columns, D / 4
    accumulators a thread instead of D / 2. P^T's B fragments are row half
    0 of S's C fragments, V^T's A fragments one `ldmatrix.x4.trans` each;
    row half 1 keeps no softmax state; the alphas of a thread's columns
    come by `gpu.shuffle idx` from the lanes holding those rows, and the
    store shuffles O^T back into the C layout.
  }];
  let options = [
    Option<"rescaleThreshold", "rescale-threshold", "double", "8.0",
           "Base-2 growth of a row's maximum before the accumulators are "
           "rescaled (0: whenever it grows; at most 15)">,
    Option<"narrowPv", "narrow-pv", "bool", "true",
           "Kernels whose tiles hold at most 8 valid rows in one m block "
           "(the decode of groups up to 8) compute O^T += V^T P^T: half "
           "the accumulator registers">
  ];
  let dependentDialects = ["::mlir::nvgpu::NVGPUDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::ub::UBDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def PATileToSimt : Pass<"pa-tile-to-simt", "::mlir::ModuleOp"> {
  let summary = "Map a CUDA-core decode kernel's tile math onto lane groups with shuffle-reduced dot products";
  let description = [{
    The last tile stage of the CUDA-core decode (docs/GPU.md, "CUDA-core
    decode"), after `pa-promote-tiles`, for the kernels with the unit
    attribute `pa.simt` (convert-pa-to-gpu's `decode-kernel=cuda-core`, and
    `auto`'s choice for MHA, groups of 2 and 3, f32 data and groups above
    32; pa-tile-to-mma leaves them alone). The CTA's warps split each KV
    tile's keys (warp-local K / V rows in shared memory); a warp is split
    into lane groups of `L = D * bytes / lane_bytes` lanes (the ABI's
    `lane_bytes`, 16 or 32), lane i of a group holding 16-byte chunks i,
    i + L, ... of each row, and the groups take the warp's keys in turn.
    The tile's rows are query heads (a decode packs h heads of the GQA group
    into them), their q chunks held in registers (f32, scaled once):

    - `pa.tile.qk`: per key, its K chunks (16-byte shared loads, widened to
      f32), a dot product per head, reduced over the group's lanes by
      `gpu.subgroup_reduce` (cluster L; `pa-warp-shuffle-reduce` turns it
      into butterfly shuffles), so every lane of a group holds the scores;
    - `pa.tile.mask`: soft-cap, ALiBi and the masks (key bound, causal,
      window; positions) under `scf.if` on `masked_if`, in base 2;
    - `pa.tile.softmax_update`: each group's running maximum per head,
      `ex2`, rescaling of l and the accumulators;
    - `pa.tile.pv`: per key, its V chunks, acc += p v (FMA);
    - `pa.tile.store`: after the last copies land, every group's (m, l,
      acc) goes to shared memory over the tiles (the ABI's shared memory
      grows to fit), and the CTA merges each (head, dim) over the groups
      with the merge operator and writes `o` (coalesced) and `lse`.

    Errors at the op: tiles not in workgroup memory (run pa-promote-tiles
    first), load_q / gather_kv left, element types other than f16 / bf16 /
    f32, a lane width or warp split the tile does not divide, fp8 scales
    (fp8 caches run on the tensor-core decode), a custom mask.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def PACpAsyncL2Prefetch : Pass<"pa-cp-async-l2-prefetch"> {
  let summary = "Give cp.async copies an L2 prefetch size (.L2::128B)";
  let description = [{
    The K / V tiles reach shared memory through `cp.async` (pa-promote-tiles'
    `nvgpu.device_async_copy`, `nvvm.cp.async.shared.global` after
    `convert-nvgpu-to-nvvm`). PTX lets each copy name an L2 prefetch size
    (`.L2::64B`, `.L2::128B`, `.L2::256B`: on a miss, L2 fetches that many
    bytes around the sector from memory); LLVM's cp.async intrinsics cannot
    say it. This pass rewrites every `nvvm.cp.async.shared.global` into the
    same copy as inline PTX with the qualifier: the shared address as its
    32-bit window offset, the global one as 64 bits, the zero-fill source
    size kept when the copy has one. `bytes=0` leaves the copies alone.
    Measured on an H200 (docs/PERFORMANCE.md): the tensor-core decode
    streams 1-2.5% faster at large batches and contexts with 128 bytes;
    prefill does not change.

    ```mlir
    nvvm.cp.async.shared.global %dst, %src, 16, cache = cg, %n
        : !llvm.ptr<3>, !llvm.ptr<1>, i32
    // becomes (bytes=128)
    %d = llvm.ptrtoint %dst : !llvm.ptr<3> to i32
    %s = llvm.ptrtoint %src : !llvm.ptr<1> to i64
    llvm.inline_asm has_side_effects
        "cp.async.cg.shared.global.L2::128B [$0], [$1], 16, $2;", "r,l,r"
        %d, %s, %n : (i32, i64, i32) -> ()
    ```
    Run it on gpu.module bodies after `convert-nvgpu-to-nvvm`.
  }];
  let options = [
    Option<"bytes", "bytes", "int64_t", "128",
           "L2 prefetch size of each copy: 64, 128 or 256 (0: none, the "
           "copies stay as they are)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def PAWgmmaSmemAlign : Pass<"pa-wgmma-smem-align"> {
  let summary = "Align dynamic shared memory to 1024 bytes for wgmma kernels";
  let description = [{
    A kernel with the `pa.wgmma` attribute (convert-pa-to-gpu's
    `prefill-mma=wgmma`) reads its shared tiles through wgmma matrix
    descriptors in the 128-byte swizzle layout, whose pattern repeats every
    1024 bytes and is taken from the address bits: each tile must start on
    a 1024-byte boundary of the shared window (pa-promote-tiles places the
    tiles at multiples of 1024 bytes from the start of dynamic shared
    memory). `convert-gpu-to-nvvm` declares dynamic shared memory
    (`__dynamic_shmem__N`) 16-byte aligned; in a gpu.module holding such a
    kernel this pass raises the alignment of those globals to 1024. Other
    modules are left alone (the CUDA-core kernels' static shared memory
    would otherwise pay up to 1008 bytes of padding).

    ```mlir
    llvm.mlir.global internal @__dynamic_shmem__0()
        {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
    // becomes, beside an llvm.func with `pa.wgmma`,
    llvm.mlir.global internal @__dynamic_shmem__0()
        {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
    ```
    Run it on gpu.module bodies after `convert-gpu-to-nvvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def PAMmaSyncBF16ToNVVM : Pass<"pa-mma-sync-bf16-to-nvvm"> {
  let summary = "Lower bf16 nvgpu.mma.sync to nvvm.mma.sync";
  let description = [{
    Upstream's `convert-nvgpu-to-nvvm` lowers `nvgpu.mma.sync` on f16 but
    rejects bf16 operands ("failed to deduce operand PTX types"). This pass
    rewrites every m16n8k16 `nvgpu.mma.sync` with bf16 A/B and f32 C into
    `nvvm.mma.sync` with the PTX types spelled out: each row of the A and B
    fragments (two bf16) is bitcast to an i32 register, C is passed as four
    f32, and the result struct is repacked into the `vector<2x2xf32>` that
    the nvgpu op returned. Run it before `convert-nvgpu-to-nvvm`.

    ```mlir
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]}
        : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    // becomes
    %r = nvvm.mma.sync A[%a0, %a1, %a2, %a3] B[%b0, %b1] C[%c0, %c1, %c2, %c3]
        {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
         multiplicandAPtxType = #nvvm.mma_type<bf16>,
         multiplicandBPtxType = #nvvm.mma_type<bf16>,
         shape = #nvvm.shape<m = 16, n = 8, k = 16>}
        : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
    ```
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::ub::UBDialect"];
}

def PAFP8ToNVVM : Pass<"pa-fp8-to-nvvm"> {
  let summary = "Lower arith.extf from and arith.truncf to f8E4M3FN / "
                "f8E5M2 to the hardware conversions (cvt.rn.f16x2.e4m3x2, "
                "cvt.rn.satfinite.e4m3x2.f32, ...; sm_89+)";
  let description = [{
    The GPU kernels read an fp8 KV cache into shared memory as bytes and
    widen it there (pa-promote-tiles); LLVM has no fp8 types, and
    `pa-expand-fp8`'s integer expansion costs about ten instructions an
    element. This pass rewrites every `arith.extf` whose source is an fp8
    scalar or a 1-D vector of 2, 4, 8, ... fp8 elements into
    `nvvm.convert.f8x2.to.f16x2` (one `cvt` for two elements) on the source
    bits, the pairs joined again by `vector.shuffle`, then `arith.extf` /
    `arith.truncf` from f16 where the result is f32 or bf16 (exact: every
    fp8 value is an f16 value, and a bf16 one). Every `arith.truncf` from
    f32 to fp8 (scalar or the same vector shapes: the quantize-on-write of
    `pa.append_kv_slots`, after `emitQuantize`'s clamp) becomes
    `nvvm.convert.f32x2.to.f8x2` with `rn` / `satfinite` (one
    `cvt.rn.satfinite.e4m3x2.f32` per pair, the pair's second element in the
    high byte), the byte pairs joined and bitcast back: round to nearest
    even like `arith.truncf`, and saturation changes nothing after the clamp.
    truncf from other types is rejected (it would round twice). Other vector
    shapes are rejected at the op. Run it on gpu.module bodies before the
    LLVM lowering; the conversions need sm_89 or later, so with `chip` set
    (pa-lower-to-nvvm passes its own) a conversion for an older chip is an
    error at the op rather than a failure of LLVM's instruction selection.

    ```mlir
    %w = arith.extf %v : vector<4xf8E4M3FN> to vector<4xf16>
    // becomes
    %b = arith.bitcast %v : vector<4xf8E4M3FN> to vector<4xi8>
    %p0 = vector.shuffle %b, %b [0, 1] : vector<4xi8>, vector<4xi8>
    %h0 = nvvm.convert.f8x2.to.f16x2 %p0 : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
    %p1 = vector.shuffle %b, %b [2, 3] : vector<4xi8>, vector<4xi8>
    %h1 = nvvm.convert.f8x2.to.f16x2 %p1 : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
    %w = vector.shuffle %h0, %h1 [0, 1, 2, 3] : vector<2xf16>, vector<2xf16>
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "Target SM (sm_80, sm_89, ...): below sm_89 an fp8 conversion is "
           "an error at the op (empty: not checked)">
  ];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::ub::UBDialect"];
}

def PAExpandFP8 : Pass<"pa-expand-fp8"> {
  let summary = "Expand f8E4M3FN / f8E5M2 arith.extf and arith.truncf into "
                "integer arithmetic";
  let description = [{
    LLVM has no fp8 types: the LLVM lowering stores `f8E4M3FN` and `f8E5M2`
    as `i8` but leaves `arith.extf` / `arith.truncf` to or from them
    unconverted (upstream's `arith-expand` only expands bf16, f4E2M1 and
    f8E8M0). This pass rewrites every scalar conversion between those two fp8
    types and `f16`, `bf16` or `f32` into bit manipulation on `i32`, with the
    semantics of `APFloat` (what the constant folder does):

    * `extf` is exact: normal and subnormal values, `+-0`, NaN (and `+-inf`
      for f8E5M2) map to the same value in f32 (then to the target type,
      exactly);
    * `truncf` (from f32; f16 and bf16 are first extended to f32, exactly)
      rounds to nearest, ties to even, and gives subnormals, zero and the
      sign like IEEE 754; NaN gives NaN; a value that rounds past the
      largest finite magnitude gives `+-inf` for f8E5M2 and NaN for
      f8E4M3FN (which has no infinity). Callers that want saturation clamp
      before `truncf` (the CPU lowering's quantization does).

    A `truncf` with a rounding mode other than to-nearest-even, a conversion
    from f64 (which would round twice) or of a vector is an error.
    `pa-lower-to-cpu` runs this pass after `convert-pa-to-loops`.

    ```mlir
    %k = arith.extf %x : f8E4M3FN to f32
    // becomes
    %b = arith.bitcast %x : f8E4M3FN to i8
    %w = arith.extui %b : i8 to i32
    ... exponent / mantissa fields, subnormal and NaN selects ...
    %k = arith.bitcast %bits : i32 to f32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def PAAssertToStderr : Pass<"pa-assert-to-stderr", "::mlir::ModuleOp"> {
  let summary = "Lower cf.assert to a message on stderr and abort()";
  let description = [{
    Upstream's `convert-cf-to-llvm` prints a failed `cf.assert`'s message
    with `puts`, on stdout, where it is lost when the output is piped or
    buffered. This pass rewrites every `cf.assert` (in blocks of a CFG
    region: run it after `convert-scf-to-cf`) into a branch to a block that
    writes `"pa: assertion failed: <msg>\n"` to file descriptor 2 with
    `write` and calls `abort`:

    ```mlir
    cf.assert %ok, "kv_indptr[0] must be 0"
    // becomes
      cf.cond_br %ok, ^continue, ^failed
    ^failed:
      %msg = llvm.mlir.addressof @pa_assert_msg_0 : !llvm.ptr
      llvm.call @write(%c2, %msg, %len) : (i32, !llvm.ptr, i64) -> i64
      llvm.call @abort() : () -> ()
      llvm.unreachable
    ^continue:
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // PAGEDATTN_CONVERSION_PASSES_TD
