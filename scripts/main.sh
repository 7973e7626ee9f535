#!/usr/bin/env bash
# The main job (README): set up and build, then
#   1. every example program in examples/ through pa-opt: verify,
#      canonicalize, bufferize and lower to CPU code (pa-lower-to-cpu);
#   2. compile the decode, prefill, cascade and MLA examples to PTX and,
#      when ptxas is there, the decode, prefill and `--kernels all` (cascade)
#      configurations (GQA 4, D 128, P 16, fp16) and DeepSeek's MLA decode
#      (128 heads, ckv 512 + kpe 64, bf16, P 64) to cubin bundles
#      (pa-compile);
#   3. with a CUDA device: run the bundles against the float64 reference
#      (pa-gpu-runner check, check-prefill, check-cascade, the cache
#      writes and CacheBlend ops of examples/cacheblend.mlir: check-append,
#      check-cacheblend, and check-mla);
#      without one: run the CPU lowering of every op
#      on generated inputs against the reference and print the largest error
#      per op.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PA_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
paopt="$build/bin/pa-opt"

echo "=== 1. examples through pa-opt"
for f in "$root"/examples/*.mlir; do
  "$paopt" "$f" --canonicalize >/dev/null
  "$paopt" "$f" --pa-lower-to-cpu="cascade-decompose=true" >/dev/null
  "$paopt" "$f" --pa-lower-to-cpu="cascade-decompose=true tile-attention=true" >/dev/null
  echo "  $(basename "$f"): verified, canonicalized, lowered to CPU code (also through the tile IR)"
done
echo "  decode step after canonicalize + bufferize:"
"$paopt" "$root/examples/decode.mlir" --canonicalize \
  --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
  | sed 's/^/    /'

echo "=== 2. decode and prefill example configurations to PTX / cubin"
out="$build/main-job"
rm -rf "$out"
mkdir -p "$out"
"$paopt" "$root/examples/decode.mlir" --pa-lower-to-nvvm="chip=sm_90 format=isa" \
  -o "$out/decode-sm90.mlir"
echo "  PTX for sm_90 in $out/decode-sm90.mlir"
"$paopt" "$root/examples/prefill-gpu.mlir" --pa-lower-to-nvvm="chip=sm_90 format=isa" \
  -o "$out/prefill-sm90.mlir"
echo "  PTX for sm_90 in $out/prefill-sm90.mlir (tensor-core prefill, mma.sync)"
"$paopt" "$root/examples/prefill-gpu.mlir" --pa-lower-to-nvvm="chip=sm_90a format=isa" \
  -o "$out/prefill-sm90a.mlir"
echo "  PTX for sm_90a in $out/prefill-sm90a.mlir (tensor-core prefill, wgmma)"
"$paopt" "$root/examples/cascade.mlir" --pa-lower-to-nvvm="chip=sm_90 format=isa" \
  -o "$out/cascade-sm90.mlir"
echo "  PTX for sm_90 in $out/cascade-sm90.mlir (a prefill per level and the merge)"
"$paopt" "$root/examples/mla-decode.mlir" --pa-lower-to-nvvm="chip=sm_90 format=isa" \
  -o "$out/mla-decode-sm90.mlir"
echo "  PTX for sm_90 in $out/mla-decode-sm90.mlir (MLA decode, tensor cores)"
if command -v ptxas >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/ptxas ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
  "$build/bin/pa-compile" --head-dim 128 --page-size 16 --kv-heads 8 --group 4 \
    --layout nhd --dtype f16 --kv joint --chip sm_90a -o "$out/bundle-gqa4"
  # ptxas's resource report of the kernels that ship: registers, spills,
  # shared memory (test/Pipelines/decode-shape-sweep.mlir checks every
  # configuration for spills).
  ptxas -v --gpu-name=sm_90a "$out/bundle-gqa4/kernels.ptx" -o /dev/null 2>&1 \
    | grep -E "Compiling entry|spill|Used" | sed 's/^ptxas info *: */    /'
  cat "$out/bundle-gqa4/bundle.manifest" | sed 's/^/    /'
  "$build/bin/pa-compile" --kernels prefill --causal --head-dim 128 \
    --page-size 16 --kv-heads 8 --group 4 --layout nhd --dtype f16 --kv joint \
    --chip sm_90a -o "$out/bundle-prefill-gqa4"
  ptxas -v --gpu-name=sm_90a "$out/bundle-prefill-gqa4/kernels.ptx" -o /dev/null 2>&1 \
    | grep -E "Compiling entry|spill|Used" | sed 's/^ptxas info *: */    /'
  # The cascade's bundle: decode, non-causal prefill (split-KV), merges.
  "$build/bin/pa-compile" --kernels all --head-dim 128 --page-size 16 \
    --kv-heads 8 --group 4 --layout nhd --dtype f16 --kv joint --chip sm_90a \
    -o "$out/bundle-all-gqa4"
  grep '^kernel' "$out/bundle-all-gqa4/bundle.manifest" | sed 's/^/    /'
  # examples/mla-decode.mlir's configuration (DeepSeek-V3, weights absorbed).
  "$build/bin/pa-compile" --kernels mla --head-dim 512 --kpe 64 \
    --mla-heads 128 --page-size 64 --dtype bf16 --sm-scale 0.0721687824 \
    --chip sm_90a -o "$out/bundle-mla"
else
  echo "  (no ptxas: PTX only, no cubin)"
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 \
   && [ -x "$build/bin/pa-gpu-runner" ] && [ -d "$out/bundle-gqa4" ]; then
  echo "=== 3. GPU: the bundles against the float64 reference"
  "$build/bin/pa-gpu-runner" check "$out/bundle-gqa4"
  "$build/bin/pa-gpu-runner" check-prefill "$out/bundle-prefill-gqa4"
  # examples/cascade.mlir's computation (shared prefix + suffixes) and the
  # merges, through the runtime's cascade plan.
  "$build/bin/pa-gpu-runner" check-cascade "$out/bundle-all-gqa4"
  # examples/cacheblend.mlir's ops: the page-table writes (append_kv,
  # scatter_kv, append_kv_slots) and kv_deviation / select_topk.
  "$build/bin/pa-gpu-runner" check-append "$out/bundle-all-gqa4"
  "$build/bin/pa-gpu-runner" check-cacheblend "$out/bundle-all-gqa4"
  "$build/bin/pa-gpu-runner" check-mla "$out/bundle-mla"
else
  echo "=== 3. no CUDA device: CPU lowering of every op vs the float64 reference"
  "$build/unittests/CPU/PACPUDifferentialTests" --gtest_brief=1 2>&1 \
    | grep -E "^\[pa-cpu-diff\] pa\.|FAILED|PASSED" \
    | sed 's/^\[pa-cpu-diff\] /  /'
fi
