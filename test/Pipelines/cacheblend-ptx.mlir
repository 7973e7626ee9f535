// RUN: pa-opt %pa_src_root/examples/cacheblend.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s --check-prefix=HOST
// RUN: pa-opt %pa_src_root/examples/cacheblend.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | %python %S/Inputs/ptx_of.py > %t.ptx
// RUN: awk '/.entry pa_kv_deviation\(/,/^}/' %t.ptx | FileCheck %s --check-prefix=DEV
// RUN: awk '/.entry pa_select_topk\(/,/^}/' %t.ptx | FileCheck %s --check-prefix=TOPK
// RUN: awk '/.entry pa_scatter_kv\(/,/^}/' %t.ptx | FileCheck %s --check-prefix=SCATTER

// examples/cacheblend.mlir (one CacheBlend layer) through the whole GPU
// pipeline: kv_deviation, select_topk, scatter_kv and the partial prefill
// at the selected positions, four launches in the op order.

// HOST-LABEL: func.func @blend_layer(
// HOST: gpu.launch_func @pa_kernels::@pa_kv_deviation
// HOST: gpu.launch_func @pa_kernels::@pa_select_topk
// HOST: gpu.launch_func @pa_kernels::@pa_scatter_kv
// HOST: gpu.launch_func @pa_kernels::@pa_prefill
// HOST: gpu.binary @pa_kernels

// The deviation reads both rows with 16-byte loads and reduces the warp
// with butterfly shuffles.
// DEV: ld.global{{(\.nc)?}}.v4
// DEV: ld.global{{(\.nc)?}}.v4
// DEV-COUNT-5: shfl.sync.bfly.b32
// DEV: sqrt.rn.f32
// DEV-NOT: {{(ld|st)\.local}}

// The selection counts in shared memory and ranks with ballots.
// TOPK: atom.shared.add.u32
// TOPK: bar.sync
// TOPK: vote.sync.ballot.b32
// TOPK: popc.b32
// TOPK-NOT: {{(ld|st)\.local}}

// The scatter copies 16-byte vectors (the example's one request folds the
// search for the row's request away).
// SCATTER: ld.global{{(\.nc)?}}.v4
// SCATTER: st.global.v4
// SCATTER-NOT: {{(ld|st)\.local}}
