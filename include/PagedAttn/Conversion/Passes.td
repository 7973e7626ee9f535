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

#endif // PAGEDATTN_CONVERSION_PASSES_TD
