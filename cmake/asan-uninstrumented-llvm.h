//===- asan-uninstrumented-llvm.h - LLVM headers as libLLVM saw them ------===//
//
// Force-included (-include) into every C++ source of a PA_SANITIZE=address
// build (cmake/Hardening.cmake). Debian's libLLVM.so / libMLIR.so are not
// instrumented, but LLVM's headers detect AddressSanitizer per translation
// unit: under it, BumpPtrAllocator (MLIR's attribute / type storage), the
// Recyclers and json::Value poison and unpoison memory and add red zones.
// One allocator is then used by both sides: a slab that our inline code
// poisoned is handed out by libMLIR.so's code, which never unpoisons it,
// and its next write is a false "use-after-poison" (docs/Fuzzing.md,
// "Sanitizers over an uninstrumented LLVM"). Here LLVM's headers see the
// configuration libLLVM.so was built with: no poisoning, no red zones.
// Heap, stack and global accesses of our code stay fully checked.
//
//===----------------------------------------------------------------------===//

#ifndef PA_ASAN_UNINSTRUMENTED_LLVM_H
#define PA_ASAN_UNINSTRUMENTED_LLVM_H

#include <sanitizer/asan_interface.h> // declared once, before the macros
#include "llvm/Support/Compiler.h"

#undef LLVM_ADDRESS_SANITIZER_BUILD
#define LLVM_ADDRESS_SANITIZER_BUILD 0
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))

#endif // PA_ASAN_UNINSTRUMENTED_LLVM_H
