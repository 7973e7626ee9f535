//===- Passes.td - pa conversion passes --------------------*- tablegen -*-===//

#ifndef PAGEDATTN_CONVERSION_PASSES_TD
#define PAGEDATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertPAToLoops : Pass<"convert-pa-to-loops"> {
  let summary = "Lower memref-form pa ops to scf/memref/arith/math loops";
  let description = [{
    The CPU lowering: every pa op in its memref form becomes sequential
    loops that implement DESIGN.md section 1 directly (the executable
    semantics checked against the float64 reference in CI). Attention keeps
    an f32 running state `(m, l, acc)` per (query row, head) in scratch
    buffers and updates it key by key (online softmax), so a cascade simply
    continues the same state across levels; `o = acc / l`,
    `lse = m + ln(l)`, and `l == 0` (no visible key) gives `o = 0`,
    `lse = -inf`. Ops still in tensor form are rejected: run
    `one-shot-bufferize` first (the `pa-lower-to-cpu` pipeline does).

    Run-time invariants that the verifier cannot see are asserted with
    `cf.assert` (page index in range, last_page_len in [1, P], work-list
    capacity), so bad input stops with a message instead of reading out of
    bounds.

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
  let summary = "Tile memref-form decode, decode_partial and merge_segments into GPU kernels";
  let description = [{
    Each `pa.decode`, `pa.decode_partial` and `pa.merge_segments` (memref
    form) becomes a `gpu.func` kernel in the `gpu.module @pa_kernels` (named
    `pa_decode`, `pa_decode_partial`, `pa_merge_segments`; a suffix is added
    when a name repeats) whose arguments are the op's operands in order, and
    a `gpu.launch_func` in its place.

    The attention kernels use a CTA per (work item or request, KV head), so
    the GQA group's `g` query heads share every K/V load. A CTA has
    `threads` threads split into lane groups of `D / V` lanes, `V` elements
    = 16 bytes per lane (one `vector.load` with alignment 16 per lane and
    token: `ld.global.v4`); the groups walk the tokens, `unroll` tokens per
    group at a time with all their page lookups and loads issued before the
    arithmetic. Every group keeps an online-softmax state (in base 2, `ex2`)
    per query head; dot products are reduced across the group's lanes by
    `gpu.subgroup_reduce` (clustered), which `pa-warp-shuffle-reduce` turns
    into butterfly shuffles. At the end the groups' states are merged
    through workgroup (shared) memory with the merge operator, and the
    threads of the CTA write `o` (16-bit stores, coalesced) and `lse`.

    `merge_segments` uses a CTA per segment, threads over (head, dim).

    Requirements (checked, with an error): identity-layout memrefs, static
    head dim and query heads, `D / V` a power of two <= 32.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"128",
           "Threads per CTA">,
    Option<"unroll", "unroll", "int64_t", /*default=*/"4",
           "Tokens per lane group in flight">,
    Option<"laneBytes", "lane-bytes", "int64_t", /*default=*/"16",
           "Bytes of a K/V row per lane and token (16: one 16-byte load; "
           "32: two, half the lanes per token)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect"];
}

#endif // PAGEDATTN_CONVERSION_PASSES_TD
