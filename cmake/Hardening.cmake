# Sanitizer, fuzzing and coverage builds (docs/Fuzzing.md). Off by default;
# scripts/sanitize.sh configures build-san/ with clang-22 and
#   -DPA_SANITIZE=address,undefined -DPA_ENABLE_FUZZ=ON -DPA_COVERAGE=ON
# Included after HandleLLVMOptions, so that these flags come last.
set(PA_SANITIZE "" CACHE STRING
  "Sanitizers for every PagedAttn target, e.g. address,undefined (clang)")
option(PA_ENABLE_FUZZ "Build the libFuzzer targets in fuzz/ (clang)" OFF)
option(PA_COVERAGE
  "Source-based coverage (-fprofile-instr-generate -fcoverage-mapping)" OFF)

if((PA_SANITIZE OR PA_ENABLE_FUZZ OR PA_COVERAGE) AND
   NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "PA_SANITIZE / PA_ENABLE_FUZZ / PA_COVERAGE need clang "
    "(scripts/sanitize.sh configures with clang++-22)")
endif()

if(PA_SANITIZE)
  # Every finding stops the program (a test fails, the fuzzer saves the
  # input); frame pointers for usable stacks.
  add_compile_options(-fsanitize=${PA_SANITIZE} -fno-sanitize-recover=all
    -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${PA_SANITIZE})
  if(PA_SANITIZE MATCHES "address")
    # LLVM's headers as the uninstrumented libLLVM.so saw them (the header
    # says why).
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${CMAKE_CURRENT_LIST_DIR}/asan-uninstrumented-llvm.h>")
  endif()
  # HandleLLVMOptions links shared libraries with -z defs; the sanitizer
  # runtimes are linked into the executables, so libpa_pool.so's references
  # to them stay undefined until then.
  string(REPLACE "-Wl,-z,defs" "" CMAKE_SHARED_LINKER_FLAGS
    "${CMAKE_SHARED_LINKER_FLAGS}")
endif()

if(PA_ENABLE_FUZZ)
  # Coverage feedback from every library the targets link; the fuzzer's
  # main() is linked into the fuzz targets only (fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(PA_COVERAGE)
  add_compile_options(-fprofile-instr-generate -fcoverage-mapping)
  add_link_options(-fprofile-instr-generate)
endif()
