#!/usr/bin/env bash
# Builds pa-gpu-runner and pa-roofs.cubin without CMake/MLIR: one g++ and one
# nvcc invocation. run_gpu.sh uses it on the device machine when the carried
# binary cannot start there (e.g. an older glibc); it also works here.
#
#   bench/build_runner.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: build_runner.sh OUT_DIR}"
cuda="${CUDA_HOME:-/usr/local/cuda}"
cxx="${CXX:-g++}"
nvcc="$cuda/bin/nvcc"
command -v "$nvcc" >/dev/null || nvcc=nvcc
mkdir -p "$out"
libdir="$cuda/lib64/stubs"
[[ -e "$libdir/libcuda.so" ]] || libdir="$cuda/lib/stubs"
"$cxx" -std=c++17 -O2 -fexceptions -I"$root/include" -I"$cuda/include" \
  "$root"/tools/pa-gpu-runner/{pa-gpu-runner,Options,Check,Bench,Prefill,Append,GpuUtil}.cpp \
  "$root"/lib/Runtime/{Bundle,Runtime,Planner}.cpp \
  "$root"/lib/TestSupport/{Numbers,Cache,Random}.cpp \
  "$root"/lib/Reference/Reference.cpp \
  -L"$libdir" -lcuda -o "$out/pa-gpu-runner"
"$nvcc" -cubin -arch=sm_90 -O3 -o "$out/pa-roofs.cubin" "$root/bench/roofs.cu"
echo "built $out/pa-gpu-runner and $out/pa-roofs.cubin"
