// No ptxas needed: flags are checked before anything is compiled.
// RUN: rm -rf %t && mkdir -p %t
// Bad flags are rejected with a message, and no bundle is written.
// RUN: not pa-compile --group 0 -o %t/bad 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not pa-compile --page-size 2147483648 -o %t/bad 2>&1 | FileCheck %s --check-prefix=PAGE
// RUN: not pa-compile --tokens-in-flight -1 -o %t/bad 2>&1 | FileCheck %s --check-prefix=TOKENS
// RUN: not pa-compile --lane-bytes 8 --dtype f64 -o %t/bad 2>&1 | FileCheck %s --check-prefix=MULTI
// RUN: not ls %t/bad
// --help shows pa-compile's options, not LLVM's.
// RUN: pa-compile --help | FileCheck %s --check-prefix=HELP

// GROUP: pa-compile: --group 0 is out of [1, 1048576]
// PAGE: pa-compile: --page-size 2147483648 is out of [1, 1048576]
// TOKENS: pa-compile: --tokens-in-flight -1 is out of [0, 64]
// MULTI: --lane-bytes must be 16 or 32
// MULTI: --dtype must be f16, bf16 or f32, got 'f64'
// HELP: pa-compile options:
// HELP: --group
// HELP-NOT: --mlir-
// HELP-NOT: --pass-pipeline
