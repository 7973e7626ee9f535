// RUN: pa-opt %pa_src_root/examples/cascade.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | FileCheck %s --check-prefix=HOST
// RUN: pa-opt %pa_src_root/examples/cascade.mlir --pa-lower-to-nvvm="chip=sm_90 format=isa" | %python %S/Inputs/ptx_of.py > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: awk '/.entry pa_merge\(/,/^}/' %t.ptx | FileCheck %s --check-prefix=MERGE

// examples/cascade.mlir through the whole GPU pipeline: pa-lower-to-nvvm
// decomposes the two-level pa.cascade (pa-cascade-decompose) into a prefill
// per level and a pa.merge, each a kernel launch on the host side; the
// hand-written form launches prefill, decode and merge. The merge kernel
// reads both states with 16-byte loads, writes 16-byte stores and keeps
// nothing in local memory.

// HOST-LABEL: func.func @cascade(
// HOST: gpu.launch_func @pa_kernels::@pa_prefill blocks
// HOST: gpu.launch_func @pa_kernels::@[[L1:pa_prefill_[0-9]+]] blocks
// HOST: gpu.launch_func @pa_kernels::@pa_merge blocks
// HOST-LABEL: func.func @by_hand(
// HOST: gpu.launch_func @pa_kernels::@pa_prefill_{{[0-9]+}} blocks
// HOST: gpu.launch_func @pa_kernels::@pa_decode blocks
// HOST: gpu.launch_func @pa_kernels::@pa_merge_0 blocks
// HOST: gpu.binary @pa_kernels

// PTX-DAG: .entry pa_prefill(
// PTX-DAG: .entry pa_decode(
// PTX-DAG: .entry pa_merge(
// PTX-DAG: .entry pa_merge_0(

// MERGE: ld.global{{(\.nc)?}}.v4
// MERGE: ld.global{{(\.nc)?}}.v4
// MERGE: st.global.v4
// MERGE-NOT: {{(ld|st)\.local}}
