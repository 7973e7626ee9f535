// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// Bundles for chips before Hopper go through ptxas: LLVM would write the
// chip's least PTX version (7.0 for sm_80), which has no L2 prefetch hint
// on cp.async (PTX 7.4) and, on sm_89, no fp8 conversion (PTX 8.1), so
// below sm_90 the kernels are PTX 8.1. Every kernel of an sm_80 bundle
// (decode, prefill, MLA):
// RUN: pa-compile --chip sm_80 --kernels all -o %t/a100 | FileCheck %s --check-prefix=BUNDLE
// RUN: FileCheck %s --check-prefix=PTX81 < %t/a100/kernels.ptx
// RUN: pa-compile --chip sm_80 --kernels mla --head-dim 512 --kpe 64 --mla-heads 16 --page-size 64 --dtype bf16 --sm-scale 0.1 -o %t/mla80 | FileCheck %s --check-prefix=BUNDLE
// RUN: FileCheck %s --check-prefix=PTX81 < %t/mla80/kernels.ptx
// An fp8 cache on sm_89 (Ada), and on sm_90 at its own PTX version:
// RUN: pa-compile --chip sm_89 --kv-dtype e4m3 -o %t/ada | FileCheck %s --check-prefix=BUNDLE
// RUN: FileCheck %s --check-prefix=PTX81 < %t/ada/kernels.ptx
// RUN: pa-compile --chip sm_90 --kv-dtype e5m2 -o %t/h100 | FileCheck %s --check-prefix=BUNDLE
// RUN: FileCheck %s --check-prefix=PTX78 < %t/h100/kernels.ptx
// Before sm_89 there is no fp8 conversion: an error at the op, not an
// abort in LLVM's instruction selection.
// RUN: not pa-compile --chip sm_86 --kv-dtype e4m3 -o %t/old 2>&1 | FileCheck %s --check-prefix=NOFP8
// BUNDLE: pa-compile: {{.*}} bytes cubin
// PTX81: .version 8.1
// PTX81-NEXT: .target sm_{{80|89}}
// PTX78: .version 7.8
// PTX78-NEXT: .target sm_90
// NOFP8: error: 'arith.extf' op an fp8 conversion on the GPU needs sm_89 or later (cvt.rn.f16x2.e4m3x2 and its kin), got chip sm_86
// NOFP8-NOT: LLVM ERROR
